// safetensors: the weights file of a module (variables.safetensors), in the
// published layout (https://github.com/huggingface/safetensors), so Python,
// Rust and JS tools can read our weights and we can read theirs:
//
//   [8 bytes]  N, little-endian u64: length of the header
//   [N bytes]  UTF-8 JSON object, may be padded with trailing spaces:
//              {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]},
//               ...,
//               "__metadata__": {"key": "value", ...}}            (optional)
//   [rest]     the byte buffer; offsets are relative to its start
//
// Rules the reader enforces (each violation is a hub::Error naming the file
// and, where there is one, the tensor): the header fits in the file; it is
// valid UTF-8 and a JSON object; names are unique; each entry has exactly
// dtype (F32, I32, I64, U8 or BOOL), shape (non-negative integers) and
// data_offsets [begin, end] with begin <= end <= buffer size and
// end - begin == product(shape) * dtype size (computed without overflow);
// the entries cover the buffer contiguously (no gap, no overlap, nothing
// after the last one); BOOL bytes are 0 or 1; __metadata__ maps strings to
// strings. Malformed data is Code::kCorruption; a dtype this hub does not
// support (e.g. F16) is Code::kUnimplemented.
//
// The writer sorts tensors by name, lays them out contiguously in that order
// and pads the header with spaces to a multiple of 8 bytes.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "hub/tensor/tensor.h"

namespace hub {

struct SafetensorsContents {
  std::map<std::string, Tensor> tensors;        // CPU tensors, own their bytes
  std::map<std::string, std::string> metadata;  // the __metadata__ object
};

// "F32" for kFloat32, "I32", "I64", "U8", "BOOL".
std::string_view safetensors_dtype_name(DType dtype);

// The file's bytes. Throws InvalidArgument for a tensor not on the CPU or
// for the reserved name "__metadata__".
std::string encode_safetensors(const std::map<std::string, Tensor>& tensors,
                               const std::map<std::string, std::string>& metadata = {});
// Parses bytes; `source` names them in errors (usually the file path).
SafetensorsContents decode_safetensors(std::string_view bytes, const std::string& source);

// Writes `path` (through a temporary sibling renamed into place, so a failed
// write leaves nothing behind). Throws IOError naming the path.
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});
// Reads and validates `path`. Throws NotFound/IOError for an unreadable file.
SafetensorsContents read_safetensors(const std::string& path);

}  // namespace hub

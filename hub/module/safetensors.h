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
// strings. Malformed data is Code::kCorruption; a published dtype this hub
// does not support (e.g. F16) is Code::kInvalidArgument.
//
// The writer pads the header with spaces to a multiple of 8 bytes and lays
// the tensors out contiguously by element size, widest first (I64, then
// F32/I32, then U8/BOOL), and by name within one size, as the reference
// implementation does: every tensor is then aligned to its element size in
// the file, which lets map_safetensors use it in place.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "hub/tensor/tensor.h"

namespace hub {

struct SafetensorsContents {
  std::map<std::string, Tensor> tensors;        // CPU tensors (see map_safetensors for their storage)
  std::map<std::string, std::string> metadata;  // the __metadata__ object
};

// "F32" for kFloat32, "I32", "I64", "U8", "I8", "BOOL".
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
// Maps `path` into memory and validates it (the same rules and errors as
// decode_safetensors, naming `path`); the tensor data is not read or copied.
// Throws NotFound for a missing file, InvalidArgument for something that is
// not a regular file, IOError when it cannot be opened or mapped.
//
// The returned tensors are views of one private mapping of the whole file
// (MAP_PRIVATE, readable and writable): the mapping lives until the last
// tensor that shares it is destroyed, and a write through a tensor copies the
// touched page in memory and never reaches the file. A tensor whose bytes are
// not aligned to its element size in the file (possible only when an odd-sized
// U8/BOOL tensor precedes it) is copied instead. Mapped tensors are aligned to
// their element size, not to kTensorAlignment (only an 8-byte-aligned
// header is guaranteed by the format).
//
// Contract, as for any mmap-based loader: the file must not be truncated or
// rewritten in place while tensors of it are alive (replacing it by rename,
// as write_safetensors does, is fine). Pages that a truncation removes raise
// SIGBUS when touched. Files in the module cache are immutable once
// installed, so cached modules satisfy this.
SafetensorsContents map_safetensors(const std::string& path);

}  // namespace hub

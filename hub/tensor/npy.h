// NumPy .npy files (format versions 1.0 and 2.0), for feeding tensors to
// `hub run` and reading its outputs from Python with numpy.load.
//
// Layout: "\x93NUMPY", major, minor, header length (u16 LE for 1.0, u32 LE
// for 2.0), then a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and ended by '\n' so that the data starts at a multiple
// of 64 bytes, then the raw elements in C order.
//
// Supported descr: '<f4' (float32), '<i4' (int32), '<i8' (int64), '|u1'
// (uint8), '|b1' (bool). Reading a Fortran-order array, another dtype, a
// truncated file or a malformed header throws hub::Error naming the source
// (InvalidArgument for a well-formed file we do not support, Corruption for
// a malformed one). Writing uses version 1.0 (2.0 if the header needs it).
#pragma once

#include <string>
#include <string_view>

#include "hub/tensor/tensor.h"

namespace hub {

std::string encode_npy(const Tensor& t);
// `source` names the bytes in errors (usually the file path).
Tensor decode_npy(std::string_view bytes, const std::string& source);

void write_npy(const std::string& path, const Tensor& t);  // atomic (temp + rename)
Tensor read_npy(const std::string& path);

}  // namespace hub

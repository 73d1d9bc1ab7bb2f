// The batches of CIFAR-10's python version (cifar-10-python.tar.gz, what
// TF-Slim's download_and_convert_cifar10.py downloads): each of
// cifar-10-batches-py/data_batch_1..5 and test_batch is a Python pickle of a
// dict with (among others) "data", a numpy uint8 array [N, 3072] (per image
// 1024 R, 1024 G, 1024 B bytes of a 32x32 image, row-major planes), and
// "labels", a list of N ints in 0..9.
//
// These files come from the network, so they are read by a strict, bounded
// interpreter of exactly the pickle subset such files use, never by anything
// that can call arbitrary code:
//   - protocol 2 only (the stream starts with PROTO 2);
//   - values: None, bools, ints (BININT, BININT1, BININT2, LONG1 up to 8
//     bytes), byte strings (SHORT_BINSTRING, BINSTRING: Python 2's str),
//     text (BINUNICODE, UTF-8), tuples, lists, dicts, the memo (PUT/GET);
//   - globals, only these: numpy.core.multiarray._reconstruct (also
//     numpy._core.multiarray, numpy 2's name), numpy.ndarray, numpy.dtype
//     and _codecs.encode (how Python 3 writes bytes at protocol 2); REDUCE only
//     as _reconstruct(numpy.ndarray, (0,), b"b"), dtype("u1", 0|False,
//     1|True) and _codecs.encode(text, "latin1"); BUILD only on such a dtype
//     (its state is not interpreted) and on such an array with the state
//     (1, shape, dtype u1, False, raw bytes of exactly prod(shape) bytes).
// Anything else (another opcode, global or dtype, object arrays, Fortran
// order) is refused with kInvalidArgument naming it and its offset;
// malformed or truncated streams and inconsistent contents (sizes, label
// values, missing keys) with kCorruption. Limits: at most kMaxPickleBytes of
// input and kMaxPickleObjects values; no recursion, so nesting depth costs
// nothing but those values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "modules/datasets/sources.h"

namespace hub::data {

inline constexpr size_t kMaxPickleBytes = size_t{64} << 20;  // a batch of 10000 images is 31 MB
inline constexpr size_t kMaxPickleObjects = size_t{1} << 20;

// One CIFAR-10 python batch -> images [N,32,32,3] (HWC), labels in 0..9.
// `where` (the archive and entry) starts every error message.
LabeledImages parse_cifar_pickle(std::string_view bytes, const std::string& where);

}  // namespace hub::data

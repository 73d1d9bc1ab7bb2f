// TensorFlow window geometry ("SAME" / "VALID" padding) along one spatial
// dimension, shared by every windowed op (convolution, depthwise convolution,
// pooling) so they all agree with TF to the pixel.
//
// For input size `in`, window (kernel) size `k`, stride `s` >= 1 and dilation
// `d` >= 1 (effective window (k-1)*d + 1):
//   VALID: out = ceil((in - (k-1)*d) / s), no padding; out <= 0 means the
//          window does not fit (callers reject it).
//   SAME:  out = ceil(in / s),
//          pad_total  = max((out-1)*s + (k-1)*d + 1 - in, 0),
//          pad_before = pad_total / 2, pad_after = pad_total - pad_before
//          (the odd pixel goes after, as in TF; oneDNN's padding_l/padding_r).
// An unknown input size (kUnknownDim) gives out = kUnknownDim and zero pads.
// Output position o reads input positions o*s - pad_before + j*d, j in [0, k).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>

#include "hub/tensor/shape.h"

namespace hub::ops {

enum class Padding { kSame, kValid };

// "SAME" | "VALID" (exact spelling, as TF); nullopt for anything else.
inline std::optional<Padding> parse_padding(std::string_view text) {
  if (text == "SAME") return Padding::kSame;
  if (text == "VALID") return Padding::kValid;
  return std::nullopt;
}

struct WindowDim {
  int64_t out = 0;         // output size (may be <= 0 for VALID: window does not fit)
  int64_t pad_before = 0;  // implicit zeros before the first input element
  int64_t pad_after = 0;   // implicit zeros after the last one
};

// Preconditions: k >= 1, s >= 1, d >= 1; in >= 0 or kUnknownDim.
inline WindowDim window_dim(int64_t in, int64_t k, int64_t s, int64_t d, Padding padding) {
  WindowDim w;
  if (in < 0) {
    w.out = kUnknownDim;
    return w;
  }
  const int64_t span = (k - 1) * d + 1;  // effective window
  if (padding == Padding::kValid) {
    const int64_t room = in - span + 1;  // = in - (k-1)*d
    w.out = room <= 0 ? room : (room + s - 1) / s;
    return w;
  }
  w.out = (in + s - 1) / s;
  const int64_t total = std::max<int64_t>((w.out - 1) * s + span - in, 0);
  w.pad_before = total / 2;
  w.pad_after = total - w.pad_before;
  return w;
}

}  // namespace hub::ops

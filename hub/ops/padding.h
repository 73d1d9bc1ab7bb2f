// Window geometry along one spatial dimension, shared by every windowed op
// (convolution, depthwise and transposed convolution, pooling) so they all
// agree with TF and ONNX to the pixel.
//
// For input size `in`, window (kernel) size `k`, stride `s` >= 1 and dilation
// `d` >= 1 (effective window span = (k-1)*d + 1):
//   VALID:    out = ceil((in - (k-1)*d) / s), no padding; out <= 0 means the
//             window does not fit (callers reject it).
//   SAME:     out = ceil(in / s),
//             pad_total  = max((out-1)*s + span - in, 0),
//             pad_before = pad_total / 2, pad_after = pad_total - pad_before
//             (the odd pixel goes after, as in TF and ONNX's SAME_UPPER).
//   EXPLICIT: the caller's pad_before / pad_after (>= 0), and
//             out = floor((in + pad_before + pad_after - span) / s) + 1,
//             or with ceil_mode (pooling only, ONNX / PyTorch):
//             out = ceil((in + pad_before + pad_after - span) / s) + 1, less one
//             when that last window would start at or after in + pad_before
//             (in the right padding or beyond: PyTorch's rule, which ONNX's
//             reference and ONNX Runtime follow). The windows may then reach
//             past pad_after (the "ceil overhang"); those positions are
//             padding too. out <= 0 means the window does not fit.
// ONNX's auto_pad SAME_UPPER is SAME; SAME_LOWER (odd pixel before) is
// EXPLICIT with pad_before = pad_total - pad_total / 2.
// An unknown input size (kUnknownDim) gives out = kUnknownDim.
// Output position o reads input positions o*s - pad_before + j*d, j in [0, k);
// positions outside [0, in) are padding (zeros for convolutions; ignored by
// pooling, see hub/ops/pool.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hub/ops/attr.h"
#include "hub/tensor/shape.h"

namespace hub::ops {

enum class Padding { kSame, kValid, kExplicit };

// "SAME" | "VALID" | "EXPLICIT" (exact spelling, as TF); nullopt for anything else.
inline std::optional<Padding> parse_padding(std::string_view text) {
  if (text == "SAME") return Padding::kSame;
  if (text == "VALID") return Padding::kValid;
  if (text == "EXPLICIT") return Padding::kExplicit;
  return std::nullopt;
}

struct WindowDim {
  int64_t out = 0;         // output size (<= 0: the window does not fit)
  int64_t pad_before = 0;  // implicit padding before the first input element
  int64_t pad_after = 0;   // implicit padding after the last one (EXPLICIT: as given,
                           // not counting a ceil_mode overhang)
};

// Preconditions: k >= 1, s >= 1, d >= 1; in >= 0 or kUnknownDim; for
// EXPLICIT, before >= 0 and after >= 0 (ignored otherwise); ceil_mode only
// with EXPLICIT.
inline WindowDim window_dim(int64_t in, int64_t k, int64_t s, int64_t d, Padding padding, int64_t before = 0,
                            int64_t after = 0, bool ceil_mode = false) {
  WindowDim w;
  const int64_t span = (k - 1) * d + 1;  // effective window
  if (padding == Padding::kExplicit) {
    w.pad_before = before;
    w.pad_after = after;
  }
  if (in < 0) {
    w.out = kUnknownDim;
    return w;
  }
  if (padding == Padding::kValid) {
    const int64_t room = in - span + 1;  // = in - (k-1)*d
    w.out = room <= 0 ? room : (room + s - 1) / s;
    return w;
  }
  if (padding == Padding::kExplicit) {
    const int64_t room = in + before + after - span;
    if (room < 0) return w;  // out = 0: does not fit
    w.out = (ceil_mode ? (room + s - 1) / s : room / s) + 1;
    if (ceil_mode && (w.out - 1) * s >= in + before) --w.out;
    return w;
  }
  w.out = (in + s - 1) / s;
  const int64_t total = std::max<int64_t>((w.out - 1) * s + span - in, 0);
  w.pad_before = total / 2;
  w.pad_after = total - w.pad_before;
  return w;
}

// [a, b], or TF's NHWC form [1, a, b, 1]; nullopt for anything else.
inline std::optional<std::pair<int64_t, int64_t>> spatial_pair(const std::vector<int64_t>& v) {
  if (v.size() == 2) return std::make_pair(v[0], v[1]);
  if (v.size() == 4 && v[0] == 1 && v[3] == 1) return std::make_pair(v[1], v[2]);
  return std::nullopt;
}

struct Pads2D {
  int64_t top = 0, bottom = 0, left = 0, right = 0;
};

// `explicit_paddings` as [top, bottom, left, right], or TF's NHWC form
// [0, 0, top, bottom, left, right, 0, 0]; every entry >= 0. nullopt otherwise.
inline std::optional<Pads2D> parse_explicit_paddings(const std::vector<int64_t>& v) {
  Pads2D p;
  if (v.size() == 4) {
    p = {v[0], v[1], v[2], v[3]};
  } else if (v.size() == 8 && v[0] == 0 && v[1] == 0 && v[6] == 0 && v[7] == 0) {
    p = {v[2], v[3], v[4], v[5]};
  } else {
    return std::nullopt;
  }
  if (p.top < 0 || p.bottom < 0 || p.left < 0 || p.right < 0) return std::nullopt;
  return p;
}

// The padding of a windowed op from its attributes `padding` (SAME | VALID |
// EXPLICIT) and `explicit_paddings` (non-empty exactly when padding is
// EXPLICIT, as in TF). Returns "" and sets *mode, *pads on success, else what
// is wrong, naming the attribute and its value.
inline std::string padding_attrs(const Attrs& attrs, Padding* mode, Pads2D* pads) {
  const std::string& text = attrs.get_string("padding");
  std::optional<Padding> padding = parse_padding(text);
  if (!padding) return "padding must be \"SAME\", \"VALID\" or \"EXPLICIT\", got \"" + text + "\"";
  const std::vector<int64_t>& raw = attrs.get_ints("explicit_paddings");
  *mode = *padding;
  *pads = Pads2D{};
  if (*padding != Padding::kExplicit) {
    if (!raw.empty())
      return "explicit_paddings must be empty unless padding is \"EXPLICIT\", got " + attr_to_string(raw) +
             " with padding \"" + text + "\"";
    return "";
  }
  std::optional<Pads2D> parsed = parse_explicit_paddings(raw);
  if (!parsed)
    return "explicit_paddings must be [top,bottom,left,right] (or [0,0,top,bottom,left,right,0,0]) "
           "with "
           "entries >= 0 when padding is \"EXPLICIT\", got " +
           attr_to_string(raw);
  *pads = *parsed;
  return "";
}

}  // namespace hub::ops

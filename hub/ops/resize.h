// Image resizing of NHWC float32 tensors with ONNX Resize's semantics
// (opsets 11-17, modes nearest, linear and cubic), which also express
// TensorFlow's ResizeBilinear, ResizeNearestNeighbor and ResizeBicubic.
//
// Resize(x [N,H,W,C]) -> y [N,OH,OW,C]
// Attributes (defaults are ONNX's):
//   size                           ints [OH, OW], each >= 1, or 0: known at run time,
//                                  from `from` or else `scales` (required)
//   mode                           "nearest" (default) | "linear" | "cubic"
//   coordinate_transformation_mode "half_pixel" (default) | "pytorch_half_pixel" |
//                                  "align_corners" | "asymmetric" | "tf_half_pixel_for_nn"
//   nearest_mode                   "round_prefer_floor" (default) | "round_prefer_ceil" |
//                                  "floor" | "ceil"    (mode "nearest" only)
//   cubic_coeff_a                  float A of mode "cubic" (default -0.75)
//   exclude_outside                bool (default false; mode "cubic": taps outside
//                                  the image get weight 0, the rest renormalised)
//   scales                         floats [sh, sw] (default []: OH/H, OW/W): the scale
//                                  the coordinate transform divides by, as ONNX's
//                                  `scales` input (with which ONNX's output size is
//                                  floor(H*sh) x floor(W*sw); the importer passes
//                                  that size and the scales; a size entry of
//                                  0 is floor(H*sh) or floor(W*sw) of each run's x)
//   from                           ints: triples (position, input, dim) as
//                                  DynamicReshape's: size entry `position` (0 or 1,
//                                  itself 0) is dim `dim` of reference input `input`
//                                  (inputs 1 on, read for their shapes only): a
//                                  resize to another tensor's run-time size, as
//                                  F.interpolate(x, size=y.shape[2:]) exports
// Per axis, with input length L, output length O, scale s and O' = s * L
// (= O up to rounding when scales is empty; ONNX's reference implementation
// uses this O', so the scales input changes align_corners too), for output
// index x the source coordinate is (ONNX's formulas, evaluated in double
// precision in this order, as ONNX's reference implementation does):
//   half_pixel            (x + 0.5) / s - 0.5
//   pytorch_half_pixel    O' == 1 ? 0 : (x + 0.5) / s - 0.5
//   align_corners         O' == 1 ? 0 : x * (L - 1) / (O' - 1)
//   asymmetric            x / s
//   tf_half_pixel_for_nn  (x + 0.5) / s
// nearest: with f = floor(src), r = src - f, the index is
//   round_prefer_floor  r <= 0.5 ? f : f + 1     round_prefer_ceil  r < 0.5 ? f : f + 1
//   floor               f                        ceil               ceil(src)
// clamped to [0, L-1]. linear: src clamped to [0, L-1], lo = floor(src),
// hi = min(lo + 1, L-1), w = src - lo; y = (1-w)*x[lo] + w*x[hi], separably
// along W then H (bilinear). (Clamping the coordinate is ONNX's edge padding
// for these modes.) cubic: Keys' kernel over four taps per axis, separably
// (weights and edge handling in hub/core/resample.h). The sampling is
// hub::resample_nhwc (hub/core/resample.h), shared with
// hub::image::resize_bilinear.
//
// Gradient: dx = ResizeGrad(x, g). ResizeGrad(x_like [N,H,W,C], grad [N,OH,OW,C])
// -> dx [N,H,W,C] (same attributes; only x_like's shape is used) is the
// adjoint: each grad element is added to the input pixels it was read from,
// times their weights. It is linear in grad: d ResizeGrad / d grad = Resize(gg).
//
// Mapping at import:
//   ONNX Resize / Upsample: attributes as they are (Upsample = asymmetric, its
//     scales input folded into `scales` and `size`); roi and tf_crop_and_resize
//     are not expressible.
//   TF ResizeBilinear(align_corners, half_pixel_centers): mode linear and
//     asymmetric (false, false), align_corners (true, false), half_pixel (false, true).
//   TF ResizeBicubic(align_corners, half_pixel_centers): mode cubic with A =
//     -0.75 and asymmetric (false, false) or align_corners (true, false); A =
//     -0.5, half_pixel and exclude_outside (false, true).
//   TF ResizeNearestNeighbor(align_corners, half_pixel_centers): mode nearest and
//     asymmetric + floor (false, false), align_corners + round_prefer_ceil
//     (true, false), tf_half_pixel_for_nn + floor (false, true).
//   TF evaluates its coordinates in float rather than double; results can
//   differ only where a float rounding error crosses a nearest-mode boundary.
//
// The shape function rejects (InvalidArgument naming the node, the attribute
// and its value): rank != 4, a non-float32 input, a bad size, an unknown mode
// string, scales that are not two positive numbers.
//
// RoiAlign(x [N,H,W,C], rois [R,4], batch_indices [R]) -> [R,OH,OW,C]
// (ONNX RoiAlign, Mask R-CNN): region r = (x1, y1, x2, y2) of image
// batch_indices[r] (int32/int64, checked at run time), times spatial_scale,
// minus 0.5 with half_pixel (else at least 1 x 1), in OH x OW bins; each bin
// sampled at sampling_ratio^2 points (0: ceil(bin size) per axis), each
// point bilinear (more than one pixel outside: 0; else clamped); mode avg
// averages the points, max takes the largest weighted tap of any point
// (ONNX Runtime's). Attributes mode, output_height, output_width,
// sampling_ratio, spatial_scale, half_pixel. No gradient.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/core/resample.h"
#include "hub/ops/scope.h"

namespace hub::ops {

struct ResizeOptions {
  std::vector<int64_t> size;  // [OH, OW]
  std::string mode = "nearest";
  std::string coordinate_transformation_mode = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  std::vector<double> scales{};  // [sh, sw], or empty for OH/H, OW/W
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  Attrs to_attrs() const;
};

Output resize(const Scope& s, Output x, const ResizeOptions& o, const std::string& name = "Resize");

// The sampling (hub/core/resample.h) of a Resize or ResizeGrad node with
// attributes `attrs` from an input of spatial size in_h x in_w to out_h x
// out_w (the node's output, or ResizeGrad's grad). The attributes passed the
// shape function.
ResamplePlan resize_plan(const Attrs& attrs, int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w);

}  // namespace hub::ops

// oneDNN convolution passes on a resolved geometry (hub/ops/conv2d.h), shared
// by the Conv2D family's kernels and Conv2DTranspose's (the backward-data
// pass of the geometry hub::ops::conv_transpose_geometry gives).
#pragma once

#include <vector>

#include "hub/ops/conv2d.h"
#include "hub/ops/registry.h"

namespace hub::onednn {

// Writes output 0 of `c` ([N,H,W,C] of g, NHWC) = the backward-data pass of
// the convolution g with filter `w` ([KH,KW,C/G,O]) applied to `dy`
// ([N,OH,OW,O]). Throws dnnl::error (callers run inside guarded<>).
void conv2d_backward_data(KernelContext& c, const ops::ConvGeometry& g, const Tensor& w, const Tensor& dy);

// Whether the backward-data primitive is worth running: float32, no empty
// tensor, and at least 8 input channels per group in the filter (dim 2 of
// inputs[filter]). oneDNN 2.6 pads those channels to its block (8 on AVX2, 16
// on AVX-512): with fewer (e.g. the first layer of a CNN, C = 1) it does up to
// 8-16x the work and the im2col reference is faster (measured in
// bench/engine_bench.cc).
bool backward_data_worthwhile(const std::vector<TensorSpec>& inputs, int filter);

}  // namespace hub::onednn

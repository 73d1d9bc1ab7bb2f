// Reference convolution routines on a resolved geometry (hub/ops/conv2d.h),
// shared by the Conv2D family's kernels and Conv2DTranspose's (a transposed
// convolution is the backprop-input of the convolution whose geometry
// hub::ops::conv_transpose_geometry gives).
//
// All tensors are float32, NHWC activations and [KH,KW,C/G,O] filters in the
// geometry's orientation: x [N,H,W,C], y/dy [N,OH,OW,O]. Scratch buffers come
// from c.temp(); the work is split across hub::parallel_for threads.
#pragma once

#include "hub/ops/conv2d.h"
#include "hub/ops/registry.h"

namespace hub::cpu {

// y = conv(x, w)  (grouped when g.groups > 1)
void conv2d_forward(KernelContext& c, const ops::ConvGeometry& g, const float* x, const float* w, float* y);
// dx = adjoint of conv(., w) applied to dy (every element of dx is written)
void conv2d_backprop_input(KernelContext& c, const ops::ConvGeometry& g, const float* w, const float* dy, float* dx);
// dw = d/dw <conv(x, w), dy> (every element of dw is written)
void conv2d_backprop_filter(KernelContext& c, const ops::ConvGeometry& g, const float* x, const float* dy, float* dw);

}  // namespace hub::cpu

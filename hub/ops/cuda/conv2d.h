// Convolution passes on cuDNN's graph (backend) API, shared by the Conv2D
// family's kernels (conv2d.cc) and the fused inference op (fused.cu).
//
// Layouts: activations NHWC as everywhere in hub; filters in cuDNN's
// channels-last form KRSC, [O][KH][KW][C/G] (hub's HWIO filter, and a
// depthwise HWCM one with O = C*M, is that form transposed: filter_krsc()).
// One pass = an operation graph of one convolution node. Its execution plan
// is chosen once per problem (shapes, geometry, pointer alignment, TF32
// switch) and cached per thread: the engine configurations cuDNN's
// heuristics propose (mode A, then the fallback list), without tensor-core
// engines for float32 unless TF32 is allowed (hub::cuda::tf32_allowed()) and
// without those that round inputs, reduce in lower precision or use FFTs,
// and among the first kAutotuneCandidates that build, the fastest on the
// actual buffers whose result agrees with the first one's (timed with
// events; $HUB_CUDNN_AUTOTUNE=0 takes the first).
#pragma once

#include "hub/ops/conv2d.h"
#include "hub/ops/registry.h"

namespace hub::cuda {

enum class ConvPass { kForward, kBackwardData, kBackwardFilter };

// Runs `pass` of the convolution with geometry g on device buffers:
//   kForward         y  = conv(x, w)
//   kBackwardData    x  = conv's adjoint applied to y (dy)
//   kBackwardFilter  w  = d<conv(x, w), y>/dw (y holds dy)
// x [N,H,W,C], w KRSC, y [N,OH,OW,O]; the written buffer is overwritten
// (beta 0). The workspace comes from c.temp(). With unequal pre- and
// post-paddings the pass runs unpadded on a zero-padded copy of x (a pass
// over x more), or, for the forward pass, on cuDNN's engines for them where
// one takes the problem and timed faster.
void convolution(KernelContext& c, ConvPass pass, const ops::ConvGeometry& g, float* x, float* w, float* y);

// The filter input `w` (HWIO, or HWCM for depthwise) in KRSC: a transposed
// copy, kept in the node's kernel state while w's storage and generation stay
// the same (inference weights are transposed once).
const float* filter_krsc(KernelContext& c, const Tensor& w, int64_t out_channels);

}  // namespace hub::cuda

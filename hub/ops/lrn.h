// Local response normalization across channels (TensorFlow's tf.nn.lrn), NHWC float32.
//
// Attributes (TF defaults): depth_radius r = 5 (>= 0), bias = 1.0, alpha = 1.0, beta = 0.5.
//
//   LRN(x [N,H,W,D]) -> y [N,H,W,D]
//     sqr_sum[n,h,w,d] = sum_{k = max(0, d-r)}^{min(D-1, d+r)} x[n,h,w,k]^2
//     norm[..,d]       = bias + alpha * sqr_sum[..,d]
//     y[..,d]          = x[..,d] * norm[..,d]^(-beta)
//   (alpha is NOT divided by the window size, unlike Caffe/oneDNN.)
//
//   LRNGrad(grads [N,H,W,D], input x, output y) -> dx [N,H,W,D]   (TF's formula)
//     dx[..,k] = grads[..,k] * norm[..,k]^(-beta)
//              - 2 * alpha * beta * x[..,k] * sum_{d: |d-k| <= r} grads[..,d] * y[..,d] /
//              norm[..,d]
//
// Gradient of LRN with respect to x: LRNGrad(g, x, y). LRNGrad has no gradient.
//
// ONNX LRN(size, alpha, beta, bias) sums over channels [c - floor((size-1)/2),
// c + ceil((size-1)/2)] and divides alpha by size: for an odd size it is
// LRN with depth_radius = (size-1)/2, alpha = alpha/size, bias and beta as
// they are. An even size (an asymmetric window) is not expressible.
#pragma once

#include <string>

#include "hub/ops/scope.h"

namespace hub::ops {

struct LrnOptions {
  int64_t depth_radius = 5;
  float bias = 1.0f;
  float alpha = 1.0f;
  float beta = 0.5f;
};

Output lrn(const Scope& s, Output x, const LrnOptions& options = {}, const std::string& name = "LRN");

}  // namespace hub::ops

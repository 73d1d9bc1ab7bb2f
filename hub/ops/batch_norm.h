// Batch normalization (TensorFlow's FusedBatchNorm), NHWC or [N,C], float32,
// and TF-Slim's batch_norm layer built on it.
//
// C is the last dimension of x; statistics are over the M = N*H*W (or N) rows.
//
//   FusedBatchNorm(x [N,H,W,C] | [N,C], scale [C], offset [C], mean [C], variance [C])
//       -> (y like x, batch_mean [C], batch_variance [C], unbiased_variance [C])
//   attrs: epsilon = 0.001, is_training = true
//     training:  mu = mean over rows of x, var = mean over rows of (x - mu)^2  (biased)
//                y = scale * (x - mu) / sqrt(var + epsilon) + offset
//                batch_mean = mu, batch_variance = var (the variance used for y),
//                unbiased_variance = var * M / max(M - 1, 1) (Bessel-corrected).
//                The mean/variance inputs are ignored.
//     inference: y = scale * (x - mean) / sqrt(variance + epsilon) + offset;
//                batch_mean = mean, batch_variance = unbiased_variance = variance.
//   Which variance feeds the moving average: as in TF's fused kernel, the
//   Bessel-corrected one (output 3) — batch_norm() below wires it so. (TF's
//   FusedBatchNorm returns only that one as batch_variance; hub also returns
//   the biased one actually used, so the op's outputs are self-consistent.)
//
//   Gradient: d x, d scale, d offset from FusedBatchNormGrad; the mean and
//   variance inputs get none (as in TF), and gradients arriving at outputs 1..3
//   are ignored (as in TF).
//
//   FusedBatchNormGrad(dy like x, x, scale [C], mean [C], variance [C])
//       -> (dx like x, dscale [C], doffset [C]); attrs epsilon, is_training.
//     mean/variance are those used in the forward pass (batch statistics when
//     training, the given ones for inference); rstd = 1/sqrt(variance + epsilon),
//     xhat = (x - mean) * rstd:
//       doffset = sum_rows dy,  dscale = sum_rows dy * xhat
//       training:  dx = scale * rstd * (dy - doffset/M - xhat * dscale/M)
//       inference: dx = scale * rstd * dy
//     FusedBatchNormGrad has no gradient.
//
// Batch norm followed by an activation, fused (made only by a Session from
// a FusedBatchNorm whose y feeds nothing but a Relu / Relu6 and that
// activation's gradient, and from the FusedBatchNormGrad of the activation's
// gradient; hub/graph/session.h). They compute exactly what the ops they
// replace compute, in one pass over the activation instead of two.
//
//   _FusedBatchNormActivation(x, scale, offset, mean, variance)
//       -> (z like x, batch_mean, batch_variance, unbiased_variance)
//   attrs: epsilon, is_training as FusedBatchNorm; activation ("Relu" or "Relu6").
//     z = act(y), y = FusedBatchNorm(...) output 0, act(v) = max(v, 0) (Relu)
//     or min(max(v, 0), 6) (Relu6); outputs 1..3 as FusedBatchNorm's.
//   _FusedBatchNormActivationGrad(dz like x, features like x, x, scale [C], mean [C], variance [C])
//       -> (dx like x, dscale [C], doffset [C]); attrs as above.
//     = FusedBatchNormGrad(g, x, scale, mean, variance) with
//       g = ReluGrad(dz, features) = dz * [features > 0]           (Relu)
//       g = Relu6Grad(dz, features) = dz * [0 < features < 6]      (Relu6).
//     features may be the activation's input y or its output z: the mask
//     is the same for both (z = act(y) lies strictly inside the open
//     interval exactly when y does), so the activation's input need not
//     be kept for the backward pass.
//   Neither has a gradient.
#pragma once

#include <string>

#include "hub/ops/scope.h"

namespace hub::ops {

// Builds FusedBatchNorm; returns all four outputs.
std::vector<Output> fused_batch_norm(const Scope& s, Output x, Output scale, Output offset, Output mean,
                                     Output variance, float epsilon, bool is_training,
                                     const std::string& name = "FusedBatchNorm");

struct BatchNormOptions {
  float decay = 0.999f;  // moving average decay
  float epsilon = 0.001f;
  bool center = true;       // add the trainable offset `beta`
  bool scale = false;       // multiply by the trainable `gamma`
  bool is_training = true;  // batch statistics + moving-average updates
};

// TF-Slim's batch_norm. Under s.sub("BatchNorm") it creates the variables
//   beta [C] (zeros, trainable; only if center), gamma [C] (ones, trainable;
//   only if scale), moving_mean [C] (zeros) and moving_variance [C] (ones),
//   both non-trainable,
// and a FusedBatchNorm node. Training mode normalizes with the batch
// statistics and adds AssignMovingAverage nodes (listed in kUpdateOps) for
//   moving_mean     <- moving_mean * decay + batch_mean * (1 - decay)
//   moving_variance <- moving_variance * decay + unbiased_variance * (1 - decay);
// inference mode normalizes with moving_mean / moving_variance and adds no
// update. Returns y. x's last dimension must be known; x must be rank 2 or 4.
// Throws InvalidArgument otherwise, AlreadyExists if the scope already holds a
// BatchNorm (give each layer its own scope, as slim does).
Output batch_norm(const Scope& s, Output x, const BatchNormOptions& options = {});

}  // namespace hub::ops

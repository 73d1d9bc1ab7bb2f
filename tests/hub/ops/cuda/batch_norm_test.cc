// CUDA batch norm (hub/ops/cuda/batch_norm.cc, on cuDNN) against the
// reference: training and inference forms, all four forward outputs (the
// biased and Bessel-corrected variances, M = 1 included), rank 2 and 4, one
// and odd channel counts, many rows; the gradient with the forward's
// statistics and with unrelated ones; a channel whose variance is tiny next
// to its mean; finite differences through the GPU kernels.
#include <doctest/doctest.h>

#include <vector>

#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

Attrs bn(bool training, float eps = 0.001f) { return Attrs().set("epsilon", eps).set("is_training", training); }

}  // namespace

TEST_CASE("cuda FusedBatchNorm, FusedBatchNormGrad: match reference, training and inference") {
  HUB_SKIP_UNLESS_CUDA();
  const std::vector<Shape> shapes = {{2, 3, 4, 5}, {1, 1, 1, 1},  {1, 1, 1, 7},  {7, 3},          {2, 1},
                                     {5, 1},       {3, 5, 1, 17}, {1, 9, 7, 64}, {16, 16, 16, 33}};
  uint64_t seed = 30;
  for (const Shape& shape : shapes) {
    const int64_t C = shape.dim(-1);
    const Tensor x = random_tensor(shape, ++seed, -2, 3);
    const Tensor scale = random_tensor({C}, ++seed, 0.5f, 1.5f), offset = random_tensor({C}, ++seed);
    const Tensor mean = random_tensor({C}, ++seed), var = random_tensor({C}, ++seed, 0.5f, 2);
    const Tensor dy = random_tensor(shape, ++seed);
    for (bool training : {true, false}) {
      INFO("shape " << shape.to_string() << " is_training " << training);
      // Outputs: y, batch_mean, batch_variance, unbiased_variance (0 for M = 1).
      compare_backends("FusedBatchNorm", {x, scale, offset, mean, var}, bn(training), "cuda");
      // The gradient as autodiff wires it (the forward's statistics when
      // training), and with statistics unrelated to x.
      const auto fwd = run_op("FusedBatchNorm", {x, scale, offset, mean, var}, bn(training));
      compare_backends("FusedBatchNormGrad", {dy, x, scale, fwd[1], fwd[2]}, bn(training), "cuda", 2e-4, 2e-4);
      compare_backends("FusedBatchNormGrad", {dy, x, scale, mean, var}, bn(training), "cuda", 2e-4, 2e-4);
    }
  }
}

TEST_CASE("cuda FusedBatchNorm: variance tiny next to the mean (no catastrophic cancellation)") {
  HUB_SKIP_UNLESS_CUDA();
  // Channel c holds base[c] + k/128 for integers k in [-spread[c], spread[c]]:
  // mean/std from 220 to 9000, so E[x^2] - E[x]^2 in float would lose most or
  // all of the variance's digits. The values are chosen so that the
  // reference's float sums are exact (every partial sum is a multiple of
  // 1/128 below 2^16 over 512 rows): its statistics are right to rounding.
  const int64_t C = 5, M = 512;
  const float base[C] = {64, 48, 40, 56, 60};
  const int spread[C] = {64, 4, 16, 64, 1};
  std::vector<float> values(M * C);
  uint32_t state = 12345;
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < C; ++c) {
      state = state * 1664525u + 1013904223u;
      const int k = static_cast<int>(state >> 8) % (2 * spread[c] + 1) - spread[c];
      values[r * C + c] = base[c] + static_cast<float>(k) / 128.0f;
    }
  const Tensor x = make({2, 16, 16, C}, values);
  const Tensor scale = random_tensor({C}, 1, 0.5f, 1.5f), offset = random_tensor({C}, 2);
  const Tensor mean = random_tensor({C}, 3), var = random_tensor({C}, 4, 0.5f, 2);
  const Attrs a = bn(true, 1e-5f);
  CHECK(backend_used("FusedBatchNorm", {x, scale, offset, mean, var}, a, "cuda") == "cuda");
  const auto want = run_op("FusedBatchNorm", {x, scale, offset, mean, var}, a);
  const auto got = run_op("FusedBatchNorm", {x, scale, offset, mean, var}, a, "cuda");
  // y is only as exact as float allows here: the reference forms it as x*a +
  // b with |x*a| up to 1.3e4 (a = scale * rstd is about 200 for the
  // narrowest channel), so both sides carry errors near 1e-3. The statistics
  // are what this case checks.
  expect_close(got[0], want[0], 5e-3, 1e-4);
  for (int i = 1; i < 4; ++i) {
    INFO("output " << i);
    expect_close(got[i], want[i], 0, 1e-4);
  }
}

TEST_CASE("cuda FusedBatchNorm: gradients match finite differences") {
  HUB_SKIP_UNLESS_CUDA();
  GradCheckOptions o;
  o.inputs = {0, 1, 2};  // mean/variance get no gradient (as in TF)
  o.step = 1e-3;
  o.backend = "cuda";
  const Tensor scale = random_tensor({3}, 2, 0.5f, 1.5f), offset = random_tensor({3}, 3);
  const Tensor mean = random_tensor({3}, 4), var = random_tensor({3}, 5, 0.5f, 2.0f);
  for (bool training : {true, false}) {
    INFO("is_training " << training);
    check_gradients("FusedBatchNorm", {random_tensor({2, 3, 2, 3}, 1), scale, offset, mean, var}, bn(training), o);
    check_gradients("FusedBatchNorm", {random_tensor({5, 3}, 6), scale, offset, mean, var}, bn(training), o);
  }
}

// CUDA LRN kernels (hub/ops/cuda/lrn.cu) against the reference: windows
// clipped at both channel edges, a radius reaching past every channel, one
// channel, the square-root and pow forms of beta, many blocks; a
// hand-computed vector; finite differences through LRNGrad on the GPU.
#include <doctest/doctest.h>

#include <vector>

#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

Attrs lrn(int r, float bias, float alpha, float beta) {
  return Attrs().set("depth_radius", r).set("bias", bias).set("alpha", alpha).set("beta", beta);
}

}  // namespace

TEST_CASE("cuda LRN, LRNGrad: match reference") {
  HUB_SKIP_UNLESS_CUDA();
  struct Case {
    Shape shape;
    Attrs attrs;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4, 7}, lrn(2, 1, 1, 0.5f)},
      {{1, 1, 1, 1}, Attrs()},                        // one channel, TF defaults
      {{1, 5, 3, 16}, Attrs()},                       // r 5: clipped on both sides
      {{3, 2, 2, 3}, lrn(1, 2, 1e-4f, 0.75f)},        // AlexNet's beta
      {{2, 3, 3, 9}, lrn(0, 1, 0.5f, 1.0f)},          // r 0, beta through pow
      {{1, 2, 5, 96}, lrn(5, 1, 0.001f / 9, 0.75f)},  // ONNX size 11
      {{1, 2, 2, 7}, lrn(20, 1, 0.01f, 0.75f)},       // radius past every channel
      {{1, 3, 3, 16}, lrn(2, 2, 0.3f, 0.6f)},
      {{4, 16, 16, 64}, lrn(2, 1, 1e-3f, 0.75f)},  // 65536 elements: many blocks
  };
  uint64_t seed = 20;
  for (const Case& k : cases) {
    INFO("shape " << k.shape.to_string() << " depth_radius "
                  << (k.attrs.has("depth_radius") ? k.attrs.get_int("depth_radius") : 5));
    const Tensor x = random_tensor(k.shape, ++seed, -2, 2);
    compare_backends("LRN", {x}, k.attrs, "cuda");
    const Tensor y = run_op("LRN", {x}, k.attrs)[0];
    const Tensor g = random_tensor(k.shape, ++seed);
    compare_backends("LRNGrad", {g, x, y}, k.attrs, "cuda", 2e-4, 2e-4);
  }
}

TEST_CASE("cuda LRN, LRNGrad: hand-computed values") {
  HUB_SKIP_UNLESS_CUDA();
  // r=1: sqr_sum = [1+4, 1+4+9, 4+9] = [5, 14, 13]; norm = 1 + sqr_sum; y = x / sqrt(norm).
  const Tensor x = make({1, 1, 1, 3}, {1, 2, 3});
  const Attrs a = lrn(1, 1, 1, 0.5f);
  const Tensor y = run_op("LRN", {x}, a, "cuda")[0];
  expect_close(y, make({1, 1, 1, 3}, {0.40824829f, 0.51639778f, 0.80178373f}));
  // grads [1,0,0]: only d=0 contributes; t0 = y0/norm0 = (1/sqrt6)/6.
  // dx0 = 1/sqrt6 - 2*alpha*beta*x0*t0; dx1 = -x1*t0; dx2 = 0 (outside d=0's window).
  expect_close(run_op("LRNGrad", {make({1, 1, 1, 3}, {1, 0, 0}), x, y}, a, "cuda")[0],
               make({1, 1, 1, 3}, {0.34020691f, -0.13608276f, 0}));
}

TEST_CASE("cuda LRN: gradients match finite differences") {
  HUB_SKIP_UNLESS_CUDA();
  check_gradients("LRN", {random_tensor({2, 2, 3, 7}, 1)}, lrn(2, 1, 1, 0.5f), on_cuda({.step = 1e-3}));
  check_gradients("LRN", {random_tensor({1, 2, 2, 4}, 2)}, Attrs(), on_cuda({.step = 1e-3}));  // TF defaults, r > D
  check_gradients("LRN", {random_tensor({1, 3, 1, 6}, 3, -2, 2)}, lrn(1, 2, 0.3f, 0.75f), on_cuda({.step = 1e-3}));
  check_gradients("LRN", {random_tensor({1, 1, 2, 5}, 4)}, lrn(0, 1, 1, 1), on_cuda({.step = 1e-3}));
}

#include "hub/ops/lrn.h"

#include <doctest/doctest.h>

#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {
Attrs lrn(int r, float bias, float alpha, float beta) {
  return Attrs().set("depth_radius", r).set("bias", bias).set("alpha", alpha).set("beta", beta);
}

}  // namespace

TEST_CASE("LRN: hand-computed values") {
  Tensor x = make({1, 1, 1, 3}, {1, 2, 3});
  // r=1: sqr_sum = [1+4, 1+4+9, 4+9] = [5, 14, 13]; norm = 1 + sqr_sum; y = x / sqrt(norm).
  expect_close(run_op("LRN", {x}, lrn(1, 1, 1, 0.5f))[0], make({1, 1, 1, 3}, {0.40824829f, 0.51639778f, 0.80178373f}));
  // TF defaults (r=5 covers all 3 channels): norm = 15 everywhere.
  expect_close(run_op("LRN", {x})[0], make({1, 1, 1, 3}, {0.25819889f, 0.51639778f, 0.77459667f}));
  // r=0, bias 2, alpha 0.5, beta 0.75: norm = 2 + 0.5 x^2 = [4, 2.5]; alpha is not divided by n.
  expect_close(run_op("LRN", {make({1, 1, 1, 2}, {2, -1})}, lrn(0, 2, 0.5f, 0.75f))[0],
               make({1, 1, 1, 2}, {0.70710678f, -0.50297337f}));
  // Positions are independent: a second pixel with the same channels gives the same row.
  Tensor x2 = make({1, 1, 2, 3}, {1, 2, 3, 1, 2, 3});
  Tensor y2 = run_op("LRN", {x2}, lrn(1, 1, 1, 0.5f))[0];
  expect_close(y2, make({1, 1, 2, 3}, {0.40824829f, 0.51639778f, 0.80178373f, 0.40824829f, 0.51639778f, 0.80178373f}));
}

TEST_CASE("LRN: ONNX's LRN maps onto it (odd size)") {
  // ONNX LRN(size 3, alpha 0.3, beta 0.75, bias 2) on channels [1,2,3,4]:
  // square_sum over [c-1, c+1] = [5, 14, 29, 25];
  // y = x / (bias + alpha/size * square_sum)^beta = x / [2.5, 3.4, 4.9, 4.5]^0.75.
  // hub: depth_radius = (size-1)/2 = 1, alpha = 0.3/3 = 0.1, bias and beta as they are.
  // (An even ONNX size has an asymmetric window [c - (size-2)/2, c + size/2]
  // that LRN's symmetric depth_radius cannot express.)
  Tensor x = make({1, 1, 1, 4}, {1, 2, 3, 4});
  const Attrs onnx_size3 = lrn(1, 2, 0.3f / 3, 0.75f);
  const Tensor want = make({1, 1, 1, 4}, {0.50297337f, 0.79876828f, 0.91090733f, 1.29464472f});
  expect_close(run_op("LRN", {x}, onnx_size3)[0], want);
  expect_close(run_op("LRN", {x}, onnx_size3, "onednn")[0], want);
  CHECK(backend_used("LRN", {x}, onnx_size3) == "onednn");
}

TEST_CASE("LRNGrad: hand-computed values") {
  // x=[1,2,3], r=1, grads=[1,0,0]: only d=0 contributes; t0 = y0/norm0 = (1/sqrt6)/6.
  // dx0 = 1/sqrt6 - 2*alpha*beta*x0*t0 = 0.40824829 - 0.06804138; dx1 = -x1*t0; dx2 = 0.
  Tensor x = make({1, 1, 1, 3}, {1, 2, 3});
  Attrs a = lrn(1, 1, 1, 0.5f);
  Tensor y = run_op("LRN", {x}, a)[0];
  expect_close(run_op("LRNGrad", {make({1, 1, 1, 3}, {1, 0, 0}), x, y}, a)[0],
               make({1, 1, 1, 3}, {0.34020691f, -0.13608276f, 0}));
}

TEST_CASE("LRN: gradients match finite differences") {
  hub::testing::GradCheckOptions o;
  o.step = 1e-3;
  check_gradients("LRN", {random_tensor({2, 2, 3, 7}, 1)}, lrn(2, 1, 1, 0.5f), o);
  check_gradients("LRN", {random_tensor({1, 2, 2, 4}, 2)}, Attrs(), o);  // TF defaults, r > D
  check_gradients("LRN", {random_tensor({1, 3, 1, 6}, 3, -2, 2)}, lrn(1, 2, 0.3f, 0.75f), o);
  check_gradients("LRN", {random_tensor({1, 1, 2, 5}, 4)}, lrn(0, 1, 1, 1), o);
}

TEST_CASE("LRN: oneDNN matches reference, forward and backward") {
  // grad_on_onednn: oneDNN 2.6 has a JIT LRN backward only for local_size 5
  // (r = 2), bias 1 and beta 0.75 (blocked layout); elsewhere LRNGrad falls
  // back to reference.
  struct Case {
    Shape shape;
    Attrs attrs;
    bool grad_on_onednn;
  };
  std::vector<Case> cases = {
      {{2, 3, 4, 7}, lrn(2, 1, 1, 0.5f), false},
      {{1, 1, 1, 1}, Attrs(), false},
      {{1, 5, 3, 16}, Attrs(), false},
      {{3, 2, 2, 3}, lrn(1, 2, 1e-4f, 0.75f), false},
      {{1, 4, 4, 64}, lrn(2, 1, 1e-3f, 0.75f), true},
      {{2, 3, 3, 9}, lrn(0, 1, 0.5f, 1.0f), false},
      {{1, 2, 5, 96}, lrn(5, 1, 0.001f / 9, 0.75f), false},
      {{1, 2, 2, 7}, lrn(20, 1, 0.01f, 0.75f), false},
      {{2, 3, 5, 16}, lrn(2, 1, 0.3f, 0.75f), true},
      {{1, 3, 3, 16}, lrn(2, 2, 0.3f, 0.5f), false},
  };
  uint64_t seed = 20;
  for (const Case& k : cases) {
    INFO("shape " << k.shape.to_string());
    Tensor x = random_tensor(k.shape, ++seed, -2, 2);
    compare_backends("LRN", {x}, k.attrs, "onednn");
    Tensor y = run_op("LRN", {x}, k.attrs)[0];
    Tensor g = random_tensor(k.shape, ++seed);
    if (k.grad_on_onednn)
      compare_backends("LRNGrad", {g, x, y}, k.attrs, "onednn");
    else
      CHECK(backend_used("LRNGrad", {g, x, y}, k.attrs) == "reference");
  }
}

TEST_CASE("LRN: bad input names the node") {
  Graph graph;
  Scope s(graph);
  auto x3 = s.op("Placeholder", {}, Attrs().set("dtype", DType::kFloat32).set("shape", Shape{2, 3, 4}), "x3");
  auto expect_error = [](auto fn, const std::string& needle) {
    try {
      fn();
      FAIL("expected an error mentioning " << needle);
    } catch (const Error& e) {
      CHECK(e.code() == Code::kInvalidArgument);
      CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, e.what());
    }
  };
  expect_error([&] { s.op("LRN", {x3}, {}, "norm1"); }, "'norm1'");
  auto x = s.op("Placeholder", {}, Attrs().set("dtype", DType::kFloat32).set("shape", Shape{1, 2, 2, 3}), "x");
  expect_error([&] { s.op("LRN", {x}, lrn(-1, 1, 1, 0.5f), "norm2"); }, "depth_radius");
  CHECK(graph.spec(ops::lrn(s, x)).shape == Shape{1, 2, 2, 3});
}

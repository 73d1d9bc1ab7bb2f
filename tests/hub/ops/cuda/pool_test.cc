// CUDA pooling kernels (hub/ops/cuda/pool.cu) against the reference:
// forward and backward on every padding form (SAME with odd total padding,
// VALID, EXPLICIT, ceil_mode overhang, dilation, count_include_pad), odd and
// size-1 dims, windows larger than the stride and than the input, 8-bit
// forms, TF's tie rule, a session re-planned for a new input shape, and
// finite differences through the CUDA gradient kernels.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "../op_attrs.h"
#include "hub/backend/backend.h"
#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

// MaxPool and AvgPool, and their gradients at random grads, on cuda and on
// reference. max_attrs and avg_attrs differ only in the kind's attributes.
void compare_all(const Tensor& x, const Attrs& max_attrs, const Attrs& avg_attrs, uint64_t seed) {
  compare_backends("MaxPool", {x}, max_attrs, "cuda");
  compare_backends("AvgPool", {x}, avg_attrs, "cuda");
  const Tensor y = run_op("MaxPool", {x}, max_attrs)[0];
  compare_backends("MaxPoolGrad", {x, y, random_tensor(y.shape(), seed)}, max_attrs, "cuda");
  const Shape avg_shape = run_op("AvgPool", {x}, avg_attrs)[0].shape();
  compare_backends("AvgPoolGrad", {x, random_tensor(avg_shape, seed + 1)}, avg_attrs, "cuda");
}

}  // namespace

TEST_CASE("cuda MaxPool, AvgPool and gradients: SAME and VALID match reference") {
  HUB_SKIP_UNLESS_CUDA();
  struct Case {
    Shape shape;
    std::vector<int64_t> k, s;
    const char* padding;
  };
  const std::vector<Case> cases = {
      {{2, 8, 9, 3}, {3, 3}, {2, 2}, "SAME"},    // odd total padding in H (0 before, 1 after)
      {{1, 5, 5, 17}, {2, 2}, {3, 3}, "VALID"},  // stride larger than the window
      {{3, 1, 6, 1}, {1, 4}, {1, 2}, "SAME"},    // one row, one channel
      {{1, 4, 4, 8}, {4, 4}, {1, 1}, "SAME"},    // pads 1 before, 2 after
      {{1, 3, 3, 2}, {5, 5}, {2, 2}, "SAME"},    // window larger than the input
      {{2, 3, 4, 3}, {1, 1}, {1, 1}, "VALID"},   // identity windows
      {{1, 7, 7, 5}, {7, 7}, {1, 1}, "VALID"},   // one output pixel
      {{1, 9, 9, 4}, {5, 5}, {1, 1}, "SAME"},    // each input in up to 25 windows
      {{4, 6, 5, 33}, {3, 2}, {2, 1}, "VALID"}, {{8, 64, 64, 32}, {3, 3}, {2, 2}, "SAME"},  // 1M inputs: many blocks
  };
  uint64_t seed = 100;
  for (const Case& k : cases) {
    INFO("shape " << k.shape.to_string() << " k " << k.k[0] << "x" << k.k[1] << " s " << k.s[0] << "x" << k.s[1] << " "
                  << k.padding);
    const Attrs a = pool(k.k, k.s, k.padding);
    const Tensor x = random_tensor(k.shape, ++seed);
    compare_all(x, a, a, seed * 7);
  }
}

TEST_CASE("cuda MaxPool, AvgPool and gradients: EXPLICIT, ceil_mode, dilation, count_include_pad match reference") {
  HUB_SKIP_UNLESS_CUDA();
  struct Case {
    Shape shape;
    std::vector<int64_t> k, s;
    Explicit e;
  };
  const std::vector<Case> cases = {
      {{2, 7, 9, 3}, {3, 3}, {2, 2}, {{1, 1, 1, 1}, true}},
      {{1, 6, 5, 4}, {3, 2}, {2, 2}, {{2, 0, 1, 1}, true, {1, 2}, true}},  // ceil overhang with count_include_pad
      {{1, 8, 7, 2}, {2, 3}, {3, 2}, {{1, 1, 0, 2}, false, {2, 1}, true}},
      {{3, 5, 5, 5}, {3, 3}, {2, 2}, {{0, 2, 2, 0}, true, {2, 2}}},
      {{1, 4, 9, 17}, {4, 3}, {3, 4}, {{1, 2, 1, 2}, true, {1, 1}, true}},
      {{1, 2, 4, 3}, {1, 2}, {1, 3}, {{0, 0, 0, 2}}},                      // a right pad as large as the window
      {{1, 1, 4, 1}, {1, 3}, {1, 2}, {{0, 0, 1, 1}, true, {1, 1}, true}},  // pool.h's worked example
      {{2, 11, 10, 7}, {3, 3}, {1, 1}, {{2, 2, 2, 2}, false, {3, 2}}},     // dilated windows overlapping
  };
  uint64_t seed = 200;
  for (const Case& k : cases) {
    INFO("shape " << k.shape.to_string() << " k " << k.k[0] << "x" << k.k[1] << " s " << k.s[0] << "x" << k.s[1]
                  << " ceil_mode " << k.e.ceil_mode);
    const Tensor x = random_tensor(k.shape, ++seed);
    compare_all(x, explicit_pool(k.k, k.s, k.e, true), explicit_pool(k.k, k.s, k.e, false), seed * 7);
  }
}

TEST_CASE("cuda MaxPool, AvgPool: uint8 and int8 match reference exactly") {
  HUB_SKIP_UNLESS_CUDA();
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> u(0, 255), s(-128, 127);
  std::vector<int> vu(2 * 7 * 6 * 3), vs(vu.size());
  for (size_t i = 0; i < vu.size(); ++i) {
    vu[i] = u(rng);
    vs[i] = s(rng);
  }
  // 2x2 windows: averages of four integers often end in .5 (rounded half to even).
  for (const Attrs& a : {pool({2, 2}, {1, 1}, "VALID"), pool({3, 3}, {2, 2}, "SAME"),
                         explicit_pool({2, 3}, {2, 2}, Explicit{{1, 0, 1, 1}, true, {1, 1}, true}, false)}) {
    for (const Tensor& x : {u8({2, 7, 6, 3}, vu), s8({2, 7, 6, 3}, vs)}) {
      INFO(x.spec_string() << " padding " << a.get_string("padding"));
      compare_backends("AvgPool", {x}, a, "cuda", 0, 0);
      if (!a.has("count_include_pad")) compare_backends("MaxPool", {x}, a, "cuda", 0, 0);
    }
  }
}

TEST_CASE("cuda MaxPool, AvgPool: hand-computed vectors, ties to the first maximum") {
  HUB_SKIP_UNLESS_CUDA();
  // 3x3, k 2, s 2, SAME: pads 0 before, 1 after; windows {1,2,4,5}, {3,6}, {7,8}, {9}.
  const Tensor x = make({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Attrs a = pool({2, 2}, {2, 2}, "SAME");
  expect_close(run_op("MaxPool", {x}, a, "cuda")[0], make({1, 2, 2, 1}, {5, 6, 8, 9}));
  expect_close(run_op("AvgPool", {x}, a, "cuda")[0], make({1, 2, 2, 1}, {3, 4.5, 7.5, 9}));
  const Tensor g = make({1, 2, 2, 1}, {1, 2, 3, 4});
  expect_close(run_op("AvgPoolGrad", {x, g}, a, "cuda")[0],
               make({1, 3, 3, 1}, {0.25, 0.25, 1, 0.25, 0.25, 1, 1.5, 1.5, 4}));
  // Ties: the whole window equal, and a later row equal to the first row's maximum.
  const Attrs v = pool({2, 2}, {2, 2}, "VALID");
  for (const auto& [values, want] : std::vector<std::pair<std::vector<float>, std::vector<float>>>{
           {{7, 7, 7, 7}, {5, 0, 0, 0}}, {{1, 9, 9, 2}, {0, 5, 0, 0}}}) {
    const Tensor t = make({1, 2, 2, 1}, values);
    const Tensor y = run_op("MaxPool", {t}, v, "cuda")[0];
    expect_close(run_op("MaxPoolGrad", {t, y, make({1, 1, 1, 1}, {5})}, v, "cuda")[0], make({1, 2, 2, 1}, want));
  }
  // Overlapping windows sharing one maximum add their grads: W 5, k 4, s 2,
  // SAME pads 1 + 2, windows {1,2,3}, {2,3,4,5}, {4,5}.
  const Tensor row = make({1, 1, 5, 1}, {1, 2, 3, 4, 5});
  const Attrs w = pool({1, 4}, {1, 2}, "SAME");
  const Tensor yr = run_op("MaxPool", {row}, w, "cuda")[0];
  expect_close(yr, make({1, 1, 3, 1}, {3, 5, 5}));
  expect_close(run_op("MaxPoolGrad", {row, yr, make({1, 1, 3, 1}, {1, 10, 100})}, w, "cuda")[0],
               make({1, 1, 5, 1}, {0, 0, 1, 0, 110}));
}

TEST_CASE("cuda MaxPool, AvgPoolGrad: one session, input shapes changing between runs") {
  HUB_SKIP_UNLESS_CUDA();
  // The window tables live in the node's kernel state, made for one input
  // shape: each shape must get its own.
  Graph graph;
  Scope s(graph);
  Output x = ops::placeholder(s, DType::kFloat32, Shape{kUnknownDim, kUnknownDim, kUnknownDim, 3}, "x");
  const Attrs a = pool({3, 3}, {2, 2}, "SAME");
  Output y = s.op("MaxPool", {x}, a, "max");
  Output dx = s.op("AvgPoolGrad", {x, y}, a, "avg_grad");
  SessionOptions options;
  options.backend = &find_backend("cuda");
  Session session(graph, nullptr, options);
  uint64_t seed = 300;
  for (const Shape& shape : {Shape{1, 9, 7, 3}, Shape{2, 4, 12, 3}, Shape{1, 9, 7, 3}, Shape{3, 1, 1, 3}}) {
    INFO("shape " << shape.to_string());
    const Tensor xt = random_tensor(shape, ++seed);
    std::vector<Tensor> got = session.run({{x, xt}}, {y, dx});
    CHECK(session.last_kernels().at("max") == "cuda");
    CHECK(session.last_kernels().at("avg_grad") == "cuda");
    const Tensor want_y = run_op("MaxPool", {xt}, a)[0];
    expect_close(got[0], want_y);
    expect_close(got[1], run_op("AvgPoolGrad", {xt, want_y}, a)[0]);
  }
}

TEST_CASE("cuda MaxPool, AvgPool: gradients match finite differences") {
  HUB_SKIP_UNLESS_CUDA();
  const GradCheckOptions o = on_cuda({.step = 1e-3});
  for (const char* padding : {"SAME", "VALID"}) {
    INFO(padding);
    const Attrs a = pool({3, 2}, {2, 2}, padding);
    check_gradients("MaxPool", {distinct({2, 5, 4, 3}, 1)}, a, o);
    check_gradients("AvgPool", {random_tensor({2, 5, 4, 3}, 2)}, a, on_cuda());
  }
  const Explicit e{{1, 0, 2, 1}, true, {2, 1}, true};
  check_gradients("MaxPool", {distinct({2, 6, 7, 2}, 8)}, explicit_pool({2, 3}, {2, 2}, e, true), o);
  check_gradients("AvgPool", {random_tensor({2, 6, 7, 2}, 9)}, explicit_pool({2, 3}, {2, 2}, e, false), on_cuda());
  // AvgPoolGrad is linear in its grad input; its gradient is AvgPool.
  const Tensor like = random_tensor({1, 5, 6, 3}, 10);
  const Attrs ea = explicit_pool({3, 2}, {2, 3}, Explicit{{1, 0, 1, 1}, true, {1, 1}, true}, false);
  GradCheckOptions og = on_cuda();
  og.inputs = {1};
  check_gradients("AvgPoolGrad", {like, random_tensor(run_op("AvgPool", {like}, ea)[0].shape(), 11)}, ea, og);
}

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "hub/ops/pool.h"
#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

Attrs pool(std::vector<int64_t> k, std::vector<int64_t> s, const char* padding) {
  return Attrs().set("ksize", std::move(k)).set("strides", std::move(s)).set("padding", padding);
}

// Distinct values 0.05 apart in shuffled order: no ties, and a finite-difference
// step of 1e-3 never changes which element is a window's maximum.
Tensor distinct(const Shape& shape, uint32_t seed) {
  Tensor t(DType::kFloat32, shape);
  std::vector<int> order(t.num_elements());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = 0.05f * order[i] - 1.0f;
  return t;
}

// Naive pooling written from TF's definition, independent of the kernels:
// explicit padded coordinates, skipping out-of-range ones.
Tensor naive_pool(const Tensor& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, bool same, bool max) {
  int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  auto out_size = [&](int64_t in, int64_t k, int64_t s) {
    return same ? static_cast<int64_t>(std::ceil(double(in) / s))
                : static_cast<int64_t>(std::ceil(double(in - k + 1) / s));
  };
  int64_t OH = out_size(H, kh, sh), OW = out_size(W, kw, sw);
  int64_t pt = same ? std::max<int64_t>((OH - 1) * sh + kh - H, 0) / 2 : 0;
  int64_t pl = same ? std::max<int64_t>((OW - 1) * sw + kw - W, 0) / 2 : 0;
  Tensor y(DType::kFloat32, Shape{N, OH, OW, C});
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j)
        for (int64_t c = 0; c < C; ++c) {
          double acc = max ? -1e30 : 0.0;
          int count = 0;
          for (int64_t a = 0; a < kh; ++a)
            for (int64_t b = 0; b < kw; ++b) {
              int64_t h = i * sh - pt + a, w = j * sw - pl + b;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              double v = px[((n * H + h) * W + w) * C + c];
              acc = max ? std::max(acc, v) : acc + v;
              ++count;
            }
          py[((n * OH + i) * OW + j) * C + c] = static_cast<float>(max ? acc : acc / count);
        }
  return y;
}

}  // namespace

TEST_CASE("pooling: SAME with an odd size pads at the end") {
  // 3x3, k=2, s=2, SAME: out 2x2, pad_total 1 -> 0 before, 1 after.
  Tensor x = make({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Attrs a = pool({2, 2}, {2, 2}, "SAME");
  expect_close(run_op("MaxPool", {x}, a)[0], make({1, 2, 2, 1}, {5, 6, 8, 9}));
  // Averages divide by in-bounds counts 4, 2, 2, 1.
  expect_close(run_op("AvgPool", {x}, a)[0], make({1, 2, 2, 1}, {3, 4.5, 7.5, 9}));
  // Gradient goes to each window's maximum: 5, 6, 8, 9.
  Tensor y = run_op("MaxPool", {x}, a)[0];
  Tensor g = make({1, 2, 2, 1}, {1, 2, 3, 4});
  expect_close(run_op("MaxPoolGrad", {x, y, g}, a)[0], make({1, 3, 3, 1}, {0, 0, 0, 0, 1, 2, 0, 3, 4}));
  // AvgPoolGrad: 1/4 to each of 1,2,4,5; 2/2 to 3,6; 3/2 to 7,8; 4 to 9.
  expect_close(run_op("AvgPoolGrad", {x, g}, a)[0],
               make({1, 3, 3, 1}, {0.25, 0.25, 1, 0.25, 0.25, 1, 1.5, 1.5, 4}));
}

TEST_CASE("pooling: SAME padding before and after, window counts 3, 4, 2") {
  // W=5, k=4, s=2: out 3, pad_total 3 -> 1 before, 2 after.
  // Windows: [-1,3) -> {1,2,3}; [1,5) -> {2,3,4,5}; [3,7) -> {4,5}.
  Tensor x = make({1, 1, 5, 1}, {1, 2, 3, 4, 5});
  Attrs a = pool({1, 4}, {1, 2}, "SAME");
  expect_close(run_op("MaxPool", {x}, a)[0], make({1, 1, 3, 1}, {3, 5, 5}));
  expect_close(run_op("AvgPool", {x}, a)[0], make({1, 1, 3, 1}, {2, 3.5, 4.5}));
  // grads 3,4,4 -> shares 1, 1, 2: dx = [1, 1+1, 1+1, 1+2, 1+2].
  expect_close(run_op("AvgPoolGrad", {x, make({1, 1, 3, 1}, {3, 4, 4})}, a)[0],
               make({1, 1, 5, 1}, {1, 2, 2, 3, 3}));
  // Max of windows 1 and 2 is the same element (5): gradients add up.
  Tensor y = run_op("MaxPool", {x}, a)[0];
  expect_close(run_op("MaxPoolGrad", {x, y, make({1, 1, 3, 1}, {1, 10, 100})}, a)[0],
               make({1, 1, 5, 1}, {0, 0, 1, 0, 110}));
}

TEST_CASE("pooling: VALID with stride > kernel skips elements; channels and batch stay apart") {
  // W=7, k=2, s=3, VALID: out ceil(6/3) = 2, windows [0,2) and [3,5).
  Tensor x = make({1, 1, 7, 1}, {3, 1, 4, 1, 5, 9, 2});
  Attrs a = pool({1, 2}, {1, 3}, "VALID");
  expect_close(run_op("MaxPool", {x}, a)[0], make({1, 1, 2, 1}, {3, 5}));
  expect_close(run_op("AvgPool", {x}, a)[0], make({1, 1, 2, 1}, {2, 3}));
  // Two images, two channels, 2x2 -> 1x1 (TF-style [1,k,k,1] attributes).
  Tensor x2 = make({2, 2, 2, 2}, {1, -1, 2, -2, 3, -3, 4, -4,   // image 0: c0 1..4, c1 -1..-4
                                  8, 0, 7, 1, 6, 2, 5, 3});      // image 1: c0 8..5, c1 0..3
  Attrs a2 = pool({1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
  expect_close(run_op("MaxPool", {x2}, a2)[0], make({2, 1, 1, 2}, {4, -1, 8, 3}));
  expect_close(run_op("AvgPool", {x2}, a2)[0], make({2, 1, 1, 2}, {2.5, -2.5, 6.5, 1.5}));
}

TEST_CASE("MaxPoolGrad: ties go to the first maximum in scan order") {
  Tensor x = make({1, 2, 2, 1}, {7, 7, 7, 7});
  Attrs a = pool({2, 2}, {2, 2}, "VALID");
  Tensor y = run_op("MaxPool", {x}, a)[0];
  expect_close(run_op("MaxPoolGrad", {x, y, make({1, 1, 1, 1}, {5})}, a)[0], make({1, 2, 2, 1}, {5, 0, 0, 0}));
  // Second row ties with the first's maximum: still the earlier one.
  Tensor x2 = make({1, 2, 2, 1}, {1, 9, 9, 2});
  expect_close(run_op("MaxPoolGrad", {x2, run_op("MaxPool", {x2}, a)[0], make({1, 1, 1, 1}, {5})}, a)[0],
               make({1, 2, 2, 1}, {0, 5, 0, 0}));
}

TEST_CASE("pooling: random shapes match a naive implementation") {
  struct Case { Shape shape; int64_t kh, kw, sh, sw; bool same; };
  std::vector<Case> cases = {
      {{2, 7, 9, 3}, 3, 3, 2, 2, true},  {{1, 5, 5, 17}, 2, 2, 3, 3, false},
      {{3, 1, 6, 1}, 1, 4, 1, 2, true},  {{1, 4, 4, 8}, 4, 4, 1, 1, true},
      {{2, 6, 5, 70}, 3, 2, 2, 1, false}, {{1, 3, 3, 2}, 5, 5, 2, 2, true},
  };
  for (const Case& k : cases) {
    INFO("shape " << k.shape.to_string() << " k " << k.kh << "x" << k.kw << " s " << k.sh << "x" << k.sw
                  << (k.same ? " SAME" : " VALID"));
    Tensor x = random_tensor(k.shape, 7);
    Attrs a = pool({k.kh, k.kw}, {k.sh, k.sw}, k.same ? "SAME" : "VALID");
    expect_close(run_op("MaxPool", {x}, a)[0], naive_pool(x, k.kh, k.kw, k.sh, k.sw, k.same, true));
    expect_close(run_op("AvgPool", {x}, a)[0], naive_pool(x, k.kh, k.kw, k.sh, k.sw, k.same, false));
  }
}

TEST_CASE("pooling: gradients match finite differences") {
  GradCheckOptions o;
  o.step = 1e-3;
  for (const char* padding : {"SAME", "VALID"}) {
    INFO(padding);
    Attrs a = pool({3, 2}, {2, 2}, padding);
    check_gradients("MaxPool", {distinct({2, 5, 4, 3}, 1)}, a, o);
    check_gradients("AvgPool", {random_tensor({2, 5, 4, 3}, 2)}, a);
    // AvgPoolGrad is linear in its grad input; its gradient is AvgPool.
    Tensor like = random_tensor({2, 5, 4, 3}, 3);
    Tensor gy = random_tensor(run_op("AvgPool", {like}, a)[0].shape(), 4);
    GradCheckOptions og;
    og.inputs = {1};
    check_gradients("AvgPoolGrad", {like, gy}, a, og);
  }
  // Stride larger than the window, and windows overlapping (stride 1).
  check_gradients("MaxPool", {distinct({1, 7, 7, 2}, 5)}, pool({2, 2}, {3, 3}, "VALID"), o);
  check_gradients("MaxPool", {distinct({1, 4, 5, 2}, 6)}, pool({3, 3}, {1, 1}, "SAME"), o);
  check_gradients("AvgPool", {random_tensor({1, 4, 5, 2}, 7)}, pool({3, 3}, {1, 1}, "SAME"));
}

TEST_CASE("pooling: oneDNN matches reference, forward and backward") {
  struct Case { Shape shape; std::vector<int64_t> k, s; const char* padding; };
  std::vector<Case> cases = {
      {{2, 7, 9, 3}, {3, 3}, {2, 2}, "SAME"},   {{1, 5, 5, 17}, {2, 2}, {3, 3}, "VALID"},
      {{3, 1, 6, 1}, {1, 4}, {1, 2}, "SAME"},   {{1, 4, 4, 8}, {4, 4}, {1, 1}, "SAME"},
      {{2, 6, 5, 33}, {3, 2}, {2, 1}, "VALID"}, {{1, 8, 7, 16}, {2, 3}, {2, 2}, "SAME"},
      {{4, 3, 3, 5}, {3, 3}, {1, 1}, "VALID"},  {{1, 2, 9, 3}, {2, 3}, {2, 4}, "VALID"},
      {{1, 3, 3, 2}, {5, 5}, {2, 2}, "SAME"},   {{2, 3, 4, 3}, {1, 1}, {1, 1}, "VALID"},
  };
  uint64_t seed = 10;
  for (const Case& k : cases) {
    Attrs a = pool(k.k, k.s, k.padding);
    INFO("shape " << k.shape.to_string() << " " << k.padding);
    Tensor x = random_tensor(k.shape, ++seed);
    compare_backends("MaxPool", {x}, a, "onednn");
    compare_backends("AvgPool", {x}, a, "onednn");
    Tensor y = run_op("MaxPool", {x}, a)[0];
    Tensor g = random_tensor(y.shape(), ++seed);
    compare_backends("MaxPoolGrad", {x, y, g}, a, "onednn");
    compare_backends("AvgPoolGrad", {x, g}, a, "onednn");
    CHECK(backend_used("MaxPool", {x}, a) == "onednn");
    CHECK(backend_used("AvgPool", {x}, a) == "onednn");
    CHECK(backend_used("MaxPoolGrad", {x, y, g}, a) == "onednn");
    CHECK(backend_used("AvgPoolGrad", {x, g}, a) == "onednn");
  }
}

TEST_CASE("pooling: bad attributes and shapes name the node") {
  Graph graph;
  Scope s(graph);
  auto x = s.op("Placeholder", {}, Attrs().set("dtype", DType::kFloat32).set("shape", Shape{1, 3, 3, 2}), "x");
  auto expect_error = [&](const Attrs& a, const std::string& needle) {
    try {
      s.op("MaxPool", {x}, a, "pool");
      FAIL("expected an error for " << needle);
    } catch (const Error& e) {
      CHECK(e.code() == Code::kInvalidArgument);
      std::string m = e.what();
      CHECK_MESSAGE(m.find("'pool") != std::string::npos, m);
      CHECK_MESSAGE(m.find(needle) != std::string::npos, m);
    }
  };
  expect_error(pool({4, 4}, {1, 1}, "VALID"), "3 < 4");
  expect_error(pool({2, 2}, {1, 1}, "FULL"), "FULL");
  expect_error(pool({2, 2, 2}, {1, 1}, "SAME"), "[2,2,2]");
  expect_error(pool({2, 2}, {0, 1}, "SAME"), "strides");
  // Unknown batch and height pass through shape inference.
  auto p = s.op("Placeholder", {}, Attrs().set("dtype", DType::kFloat32).set("shape", Shape{kUnknownDim, kUnknownDim, 6, 2}), "p");
  Output y = ops::max_pool(s, p, {2, 2}, {2, 2}, "SAME");
  CHECK(graph.spec(y).shape == Shape{kUnknownDim, kUnknownDim, 3, 2});
}

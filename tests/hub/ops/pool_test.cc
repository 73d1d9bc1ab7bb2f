#include "hub/ops/pool.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "hub/graph/session.h"
#include "hub/ops/padding.h"
#include "hub/ops/state.h"
#include "op_attrs.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

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

// Pooling written from PyTorch's definitions (aten's pooling_output_shape and
// avg_pool2d's divisor), independent of hub's geometry code.
Tensor torch_pool(const Tensor& x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, const Explicit& e, bool max) {
  int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  const int64_t pt = e.pads[0], pb = e.pads[1], pl = e.pads[2], pr = e.pads[3];
  const int64_t dh = max ? e.dilations[0] : 1, dw = max ? e.dilations[1] : 1;
  auto out_size = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t before, int64_t after) {
    int64_t out = (in + before + after - d * (k - 1) - 1 + (e.ceil_mode ? s - 1 : 0)) / s + 1;
    if (e.ceil_mode && (out - 1) * s >= in + before) --out;
    return out;
  };
  int64_t OH = out_size(H, kh, sh, dh, pt, pb), OW = out_size(W, kw, sw, dw, pl, pr);
  Tensor y(DType::kFloat32, Shape{N, OH, OW, C});
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j)
        for (int64_t c = 0; c < C; ++c) {
          double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
          int count = 0;
          for (int64_t a = 0; a < kh; ++a)
            for (int64_t b = 0; b < kw; ++b) {
              int64_t h = i * sh - pt + a * dh, w = j * sw - pl + b * dw;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;
              double v = px[((n * H + h) * W + w) * C + c];
              acc = max ? std::max(acc, v) : acc + v;
              ++count;
            }
          const int64_t hs = i * sh - pt, ws = j * sw - pl;
          const int64_t pool_size = (std::min(hs + kh, H + pb) - hs) * (std::min(ws + kw, W + pr) - ws);
          py[((n * OH + i) * OW + j) * C + c] =
              static_cast<float>(max ? acc : acc / (e.count_include_pad ? pool_size : count));
        }
  return y;
}

}  // namespace

TEST_CASE("pooling: EXPLICIT padding, hand-computed vectors") {
  for (const char* b : {"reference", "onednn"}) {
    INFO(b);
    // 3x3, k 2x2, s 1, pads top 1 and left 1 (ONNX's SAME_LOWER): window
    // (i, j) covers rows i-1..i, columns j-1..j.
    Tensor x = make({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    Tensor neg = make({1, 3, 3, 1}, {-1, -2, -3, -4, -5, -6, -7, -8, -9});
    Explicit e{{1, 0, 1, 0}};
    // A max pad is -inf: negative inputs keep their own maximum (a zero pad
    // would give 0 in the first row and column).
    expect_close(run_op("MaxPool", {neg}, explicit_pool({2, 2}, {1, 1}, e, true), b)[0],
                 make({1, 3, 3, 1}, {-1, -1, -2, -1, -1, -2, -4, -4, -5}));
    // Averages over the in-bounds part: counts 1, 2, 2 / 2, 4, 4 / 2, 4, 4.
    expect_close(run_op("AvgPool", {x}, explicit_pool({2, 2}, {1, 1}, e, false), b)[0],
                 make({1, 3, 3, 1}, {1, 1.5, 2.5, 2.5, 3, 4, 5.5, 6, 7}));
    // count_include_pad: every window lies within the padding, divide by 4.
    e.count_include_pad = true;
    expect_close(run_op("AvgPool", {x}, explicit_pool({2, 2}, {1, 1}, e, false), b)[0],
                 make({1, 3, 3, 1}, {0.25, 0.75, 1.25, 1.25, 3, 4, 2.75, 6, 7}));
    // ONNX's averagepool_2d_precomputed_pads_count_include_pad: 5x5 1..25,
    // k 5, pads 2: every window is 25 positions, e.g. y[0,0] = (1+2+3 + 6+7+8
    // + 11+12+13) / 25 = 2.52.
    Tensor x5 =
        make({1, 5, 5, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25});
    expect_close(
        run_op("AvgPool", {x5}, explicit_pool({5, 5}, {1, 1}, Explicit{{2, 2, 2, 2}, false, {1, 1}, true}, false),
               b)[0],
        make({1, 5, 5, 1}, {2.52f, 3.6f, 4.8f,  4.08f, 3.24f, 4.56f,  6.4f,  8.4f,  7.04f, 5.52f, 7.2f,  10,   13,
                            10.8f, 8.4f, 6.96f, 9.6f,  12.4f, 10.24f, 7.92f, 6.12f, 8.4f,  10.8f, 8.88f, 6.84f}));
    // TF's 8-int NHWC form of the same pads.
    expect_close(
        run_op("MaxPool", {neg}, explicit_pool({2, 2}, {1, 1}, Explicit{{0, 0, 1, 0, 1, 0, 0, 0}}, true), b)[0],
        make({1, 3, 3, 1}, {-1, -1, -2, -1, -1, -2, -4, -4, -5}));
  }
}

TEST_CASE("pooling: ceil_mode, count_include_pad and dilations (ONNX / PyTorch rules)") {
  for (const char* b : {"reference", "onednn"}) {
    INFO(b);
    // ONNX's averagepool_2d_ceil / maxpool_2d_ceil: 4x4 1..16, k 3, s 2,
    // no pads: ceil((4-3)/2) + 1 = 2 windows per dim, the second reaching
    // one row/column past the input.
    Tensor x = make({1, 4, 4, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
    Explicit ceil{{0, 0, 0, 0}, true};
    expect_close(run_op("MaxPool", {x}, explicit_pool({3, 3}, {2, 2}, ceil, true), b)[0],
                 make({1, 2, 2, 1}, {11, 12, 15, 16}));
    expect_close(run_op("AvgPool", {x}, explicit_pool({3, 3}, {2, 2}, ceil, false), b)[0],
                 make({1, 2, 2, 1}, {6, 7.5, 12, 13.5}));
    // The overhang is not padding: count_include_pad changes nothing here.
    ceil.count_include_pad = true;
    expect_close(run_op("AvgPool", {x}, explicit_pool({3, 3}, {2, 2}, ceil, false), b)[0],
                 make({1, 2, 2, 1}, {6, 7.5, 12, 13.5}));
    // ONNX's maxpool_2d_dilations: k 2, dilation 2: window (i,j) reads
    // (i,j), (i,j+2), (i+2,j), (i+2,j+2).
    Explicit dilated{{0, 0, 0, 0}, false, {2, 2}};
    expect_close(run_op("MaxPool", {x}, explicit_pool({2, 2}, {1, 1}, dilated, true), b)[0],
                 make({1, 2, 2, 1}, {11, 12, 15, 16}));
  }
  // One row [1, 2, 3, 4], k 3, s 2, pads 1 + 1, ceil_mode: ceil(3/2) + 1 = 3
  // windows starting at -1, 1, 3 (the last starts inside the input: kept).
  // Window 2 covers 3 (x), 4 (explicit pad) and 5 (ceil overhang).
  Tensor row = make({1, 1, 4, 1}, {1, 2, 3, 4});
  Explicit e{{0, 0, 1, 1}, true};
  expect_close(run_op("MaxPool", {row}, explicit_pool({1, 3}, {1, 2}, e, true))[0], make({1, 1, 3, 1}, {2, 4, 4}));
  // Exclude padding: 3/2, 9/3, 4/1.
  expect_close(run_op("AvgPool", {row}, explicit_pool({1, 3}, {1, 2}, e, false))[0], make({1, 1, 3, 1}, {1.5, 3, 4}));
  // Include padding: divisors 3, 3 and 2 (the explicit pad counts, the overhang not).
  e.count_include_pad = true;
  Attrs include = explicit_pool({1, 3}, {1, 2}, e, false);
  expect_close(run_op("AvgPool", {row}, include)[0], make({1, 1, 3, 1}, {1, 3, 2}));
  // oneDNN divides by the whole window there, so this runs on reference.
  CHECK(backend_used("AvgPool", {row}, include) == "reference");
  // Gradients of the same windows: AvgPoolGrad spreads g / divisor over the
  // in-bounds taps: [1/3, 1/3 + 10/3, 10/3, 10/3 + 100/2].
  Tensor g = make({1, 1, 3, 1}, {1, 10, 100});
  expect_close(run_op("AvgPoolGrad", {row, g}, include)[0],
               make({1, 1, 4, 1}, {1.0f / 3, 11.0f / 3, 10.0f / 3, 10.0f / 3 + 50}));
  // MaxPoolGrad: maxima at x[1], x[3], x[3].
  Attrs max_attrs = explicit_pool({1, 3}, {1, 2}, e, true);
  Tensor y = run_op("MaxPool", {row}, max_attrs)[0];
  expect_close(run_op("MaxPoolGrad", {row, y, g}, max_attrs)[0], make({1, 1, 4, 1}, {0, 1, 0, 110}));
  // A last window that would start in the right padding is dropped: W 4, k 2,
  // s 2, right pad 1, ceil: ceil(3/2) + 1 = 3, but window 2 would start at 4.
  Explicit drop{{0, 0, 0, 1}, true};
  expect_close(run_op("MaxPool", {row}, explicit_pool({1, 2}, {1, 2}, drop, true))[0], make({1, 1, 2, 1}, {2, 4}));
  expect_close(run_op("AvgPool", {row}, explicit_pool({1, 2}, {1, 2}, drop, false))[0], make({1, 1, 2, 1}, {1.5, 3.5}));
}

TEST_CASE("pooling: EXPLICIT, ceil_mode, dilations, count_include_pad match PyTorch's definitions") {
  struct Case {
    Shape shape;
    int64_t kh, kw, sh, sw;
    Explicit e;
  };
  std::vector<Case> cases = {
      {{2, 7, 9, 3}, 3, 3, 2, 2, {{1, 1, 1, 1}, true}},
      {{1, 6, 5, 4}, 3, 2, 2, 2, {{2, 0, 1, 1}, true, {1, 2}, true}},
      {{1, 8, 7, 2}, 2, 3, 3, 2, {{1, 1, 0, 2}, false, {2, 1}, true}},
      {{3, 5, 5, 5}, 3, 3, 2, 2, {{0, 2, 2, 0}, true, {2, 2}, false}},
      {{1, 4, 9, 17}, 4, 3, 3, 4, {{1, 2, 1, 2}, true, {1, 1}, true}},
  };
  for (const Case& k : cases) {
    INFO("shape " << k.shape.to_string() << " k " << k.kh << "x" << k.kw << " s " << k.sh << "x" << k.sw);
    Tensor x = random_tensor(k.shape, 9);
    expect_close(run_op("MaxPool", {x}, explicit_pool({k.kh, k.kw}, {k.sh, k.sw}, k.e, true))[0],
                 torch_pool(x, k.kh, k.kw, k.sh, k.sw, k.e, true));
    expect_close(run_op("AvgPool", {x}, explicit_pool({k.kh, k.kw}, {k.sh, k.sw}, k.e, false))[0],
                 torch_pool(x, k.kh, k.kw, k.sh, k.sw, k.e, false));
  }
}

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
  expect_close(run_op("AvgPoolGrad", {x, g}, a)[0], make({1, 3, 3, 1}, {0.25, 0.25, 1, 0.25, 0.25, 1, 1.5, 1.5, 4}));
}

TEST_CASE("pooling: SAME padding before and after, window counts 3, 4, 2") {
  // W=5, k=4, s=2: out 3, pad_total 3 -> 1 before, 2 after.
  // Windows: [-1,3) -> {1,2,3}; [1,5) -> {2,3,4,5}; [3,7) -> {4,5}.
  Tensor x = make({1, 1, 5, 1}, {1, 2, 3, 4, 5});
  Attrs a = pool({1, 4}, {1, 2}, "SAME");
  expect_close(run_op("MaxPool", {x}, a)[0], make({1, 1, 3, 1}, {3, 5, 5}));
  expect_close(run_op("AvgPool", {x}, a)[0], make({1, 1, 3, 1}, {2, 3.5, 4.5}));
  // grads 3,4,4 -> shares 1, 1, 2: dx = [1, 1+1, 1+1, 1+2, 1+2].
  expect_close(run_op("AvgPoolGrad", {x, make({1, 1, 3, 1}, {3, 4, 4})}, a)[0], make({1, 1, 5, 1}, {1, 2, 2, 3, 3}));
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
  Tensor x2 = make({2, 2, 2, 2}, {1, -1, 2, -2, 3, -3, 4, -4,  // image 0: c0 1..4, c1 -1..-4
                                  8, 0, 7, 1, 6, 2, 5, 3});    // image 1: c0 8..5, c1 0..3
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
  struct Case {
    Shape shape;
    int64_t kh, kw, sh, sw;
    bool same;
  };
  std::vector<Case> cases = {
      {{2, 7, 9, 3}, 3, 3, 2, 2, true}, {{1, 5, 5, 17}, 2, 2, 3, 3, false}, {{3, 1, 6, 1}, 1, 4, 1, 2, true},
      {{1, 4, 4, 8}, 4, 4, 1, 1, true}, {{2, 6, 5, 70}, 3, 2, 2, 1, false}, {{1, 3, 3, 2}, 5, 5, 2, 2, true},
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
  // EXPLICIT with ceil_mode, dilation and count_include_pad.
  Explicit e{{1, 0, 2, 1}, true, {2, 1}, true};
  check_gradients("MaxPool", {distinct({2, 6, 7, 2}, 8)}, explicit_pool({2, 3}, {2, 2}, e, true), o);
  check_gradients("AvgPool", {random_tensor({2, 6, 7, 2}, 9)}, explicit_pool({2, 3}, {2, 2}, e, false));
  Tensor like = random_tensor({1, 5, 6, 3}, 10);
  Attrs ea = explicit_pool({3, 2}, {2, 3}, Explicit{{1, 0, 1, 1}, true, {1, 1}, true}, false);
  GradCheckOptions og;
  og.inputs = {1};
  check_gradients("AvgPoolGrad", {like, random_tensor(run_op("AvgPool", {like}, ea)[0].shape(), 11)}, ea, og);
}

TEST_CASE("pooling: oneDNN matches reference, forward and backward") {
  struct Case {
    Shape shape;
    std::vector<int64_t> k, s;
    const char* padding;
  };
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
  // EXPLICIT pads, ceil_mode, dilations, count_include_pad without a ceil overhang.
  struct ECase {
    Shape shape;
    std::vector<int64_t> k, s;
    Explicit e;
  };
  std::vector<ECase> explicit_cases = {
      {{2, 7, 9, 3}, {3, 3}, {2, 2}, {{1, 1, 1, 1}, true}},
      {{1, 6, 5, 17}, {3, 2}, {2, 2}, {{2, 0, 1, 1}, true, {1, 2}}},
      {{1, 8, 7, 2}, {2, 3}, {3, 2}, {{1, 1, 0, 2}, false, {2, 1}, true}},
      {{3, 5, 5, 5}, {3, 3}, {2, 2}, {{0, 2, 2, 0}, true, {2, 2}}},
      {{1, 7, 7, 8}, {3, 3}, {2, 2}, {{1, 1, 1, 1}, true, {1, 1}, true}},  // ceil adds nothing: include on oneDNN
  };
  for (const ECase& k : explicit_cases) {
    INFO("shape " << k.shape.to_string() << " explicit");
    Tensor x = random_tensor(k.shape, ++seed);
    Attrs max_a = explicit_pool(k.k, k.s, k.e, true), avg_a = explicit_pool(k.k, k.s, k.e, false);
    compare_backends("MaxPool", {x}, max_a, "onednn");
    compare_backends("AvgPool", {x}, avg_a, "onednn");
    Tensor y = run_op("MaxPool", {x}, max_a)[0];
    compare_backends("MaxPoolGrad", {x, y, random_tensor(y.shape(), ++seed)}, max_a, "onednn");
    Tensor ya = run_op("AvgPool", {x}, avg_a)[0];
    compare_backends("AvgPoolGrad", {x, random_tensor(ya.shape(), ++seed)}, avg_a, "onednn");
  }
  // A right pad as large as the window (oneDNN wants it smaller): reference.
  // W 4, k 2, s 3, right pad 2: windows at 0 and 3, the second half padding.
  Tensor x = random_tensor({1, 2, 4, 3}, ++seed);
  Attrs wide = explicit_pool({1, 2}, {1, 3}, Explicit{{0, 0, 0, 2}}, true);
  CHECK(run_op("MaxPool", {x}, wide)[0].shape() == Shape{1, 2, 2, 3});
  CHECK(backend_used("MaxPool", {x}, wide) == "reference");
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
  expect_error(pool({4, 4}, {1, 1}, "VALID"), "input height 3 plus padding 0 is smaller than the (dilated) window 4");
  expect_error(pool({2, 2}, {1, 1}, "FULL"), "FULL");
  expect_error(pool({2, 2, 2}, {1, 1}, "SAME"), "[2,2,2]");
  expect_error(pool({2, 2}, {0, 1}, "SAME"), "strides");
  expect_error(pool({2, 2}, {1, 1}, "SAME").set("explicit_paddings", std::vector<int64_t>{1, 1, 1, 1}),
               "explicit_paddings must be empty unless padding is \"EXPLICIT\"");
  expect_error(pool({2, 2}, {1, 1}, "EXPLICIT"), "explicit_paddings must be [top,bottom,left,right]");
  expect_error(pool({2, 2}, {1, 1}, "EXPLICIT").set("explicit_paddings", std::vector<int64_t>{1, 1, -1, 1}),
               "[1,1,-1,1]");
  expect_error(pool({2, 2}, {1, 1}, "VALID").set("ceil_mode", true), "ceil_mode needs padding \"EXPLICIT\"");
  expect_error(pool({2, 2}, {1, 1}, "SAME").set("dilations", std::vector<int64_t>{0, 1}), "dilations");
  // A window made only of padding (left pad 2 = the window): its max is undefined.
  expect_error(explicit_pool({2, 2}, {1, 1}, Explicit{{0, 0, 2, 0}}, true),
               "output width position 0 pools only padding");
  // The all-padding check against a scan of every output position, over small
  // widths, windows, strides, dilations, pads and both rounding modes.
  int checked = 0, refused = 0;
  for (int64_t w = 1; w <= 6; ++w)
    for (int64_t k = 1; k <= 3; ++k)
      for (int64_t st = 1; st <= 3; ++st)
        for (int64_t d = 1; d <= 4; ++d)
          for (int64_t left = 0; left <= 5; ++left)
            for (int64_t right = 0; right <= 5; ++right)
              for (bool ceil : {false, true}) {
                const ops::WindowDim r = ops::window_dim(w, k, st, d, ops::Padding::kExplicit, left, right, ceil);
                if (r.out < 1) continue;
                int64_t first_empty = -1;
                for (int64_t o = 0; o < r.out && first_empty < 0; ++o)
                  if (ops::pool_taps(o, w, k, st, d, left, right).count == 0) first_empty = o;
                auto in =
                    s.op("Placeholder", {}, Attrs().set("dtype", DType::kFloat32).set("shape", Shape{1, 1, w, 1}));
                INFO("w " << w << " k " << k << " s " << st << " d " << d << " pads " << left << "+" << right
                          << " ceil " << ceil);
                bool accepted = true;
                try {
                  s.op("MaxPool", {in},
                       explicit_pool({1, k}, {1, st}, Explicit{{0, 0, left, right}, ceil, {1, d}}, true));
                } catch (const Error& e) {
                  accepted = false;
                  CHECK_MESSAGE(std::string(e.what()).find("pools only padding") != std::string::npos, e.what());
                }
                CHECK(accepted == (first_empty < 0));
                ++checked, refused += !accepted;
              }
  CHECK(refused > 100);
  CHECK(checked - refused > 1000);
  // A declared width of 2^30 (a few bytes of ONNX model): checked without
  // visiting a billion output positions.
  auto wide = s.op("Placeholder", {}, Attrs().set("dtype", DType::kFloat32).set("shape", Shape{1, 1, 1 << 30, 1}));
  CHECK(graph.spec(ops::max_pool(s, wide, {1, 3}, {1, 1}, "SAME")).shape == Shape{1, 1, 1 << 30, 1});
  CHECK_THROWS_WITH_AS(s.op("MaxPool", {wide}, explicit_pool({1, 2}, {1, 1}, Explicit{{0, 0, 0, 2}}, true)),
                       doctest::Contains("output width position 1073741824 pools only padding"), Error);
  // Unknown batch and height pass through shape inference.
  auto p = s.op("Placeholder", {},
                Attrs().set("dtype", DType::kFloat32).set("shape", Shape{kUnknownDim, kUnknownDim, 6, 2}), "p");
  Output y = ops::max_pool(s, p, {2, 2}, {2, 2}, "SAME");
  CHECK(graph.spec(y).shape == Shape{kUnknownDim, kUnknownDim, 3, 2});
}

TEST_CASE("pooling on uint8 / int8: hand-computed, averages rounded half to even, oneDNN against the reference") {
  // [1,2,4,1]: 2x2 windows, stride 2: {1,2,3,5} -> avg 2.75 -> 3, max 5; {250,251,253,254} -> 252, 254.
  const Tensor x = u8({1, 2, 4, 1}, {1, 2, 250, 251, 3, 5, 253, 254});
  const Attrs a = Attrs()
                      .set("ksize", std::vector<int64_t>{2, 2})
                      .set("strides", std::vector<int64_t>{2, 2})
                      .set("padding", std::string("VALID"));
  // int8, with a tie: {-1, -2, -3, -4} averages -2.5 -> -2; {1, 2, 3, 5} -> 3.
  const Tensor s = s8({1, 2, 4, 1}, {-1, -2, 1, 2, -3, -4, 3, 5});
  for (const char* backend : {"reference", "onednn"}) {
    INFO(backend);
    const Tensor avg = run_op("AvgPool", {x}, a, backend)[0];
    CHECK(avg.dtype() == DType::kUInt8);
    CHECK(ints_of(avg) == std::vector<int>{3, 252});
    CHECK(ints_of(run_op("MaxPool", {x}, a, backend)[0]) == std::vector<int>{5, 254});
    CHECK(ints_of(run_op("MaxPool", {s}, a, backend)[0]) == std::vector<int>{-1, 5});
    CHECK(ints_of(run_op("AvgPool", {s}, a, backend)[0])[1] == 3);
  }
  CHECK(ints_of(run_op("AvgPool", {s}, a)[0])[0] == -2);
  CHECK(backend_used("AvgPool", {x}, a, "onednn") == "onednn");
  // Awkward shapes, SAME padding: oneDNN agrees with the reference (averages within one step
  // where a sum's float rounding lands on the other side of a half).
  Tensor r(DType::kUInt8, Shape{2, 9, 7, 13});
  std::mt19937 rng(5);
  for (int64_t i = 0; i < r.num_elements(); ++i) r.data<uint8_t>()[i] = static_cast<uint8_t>(rng() % 256);
  const Attrs same = Attrs()
                         .set("ksize", std::vector<int64_t>{3, 3})
                         .set("strides", std::vector<int64_t>{2, 2})
                         .set("padding", std::string("SAME"));
  for (const char* op : {"MaxPool", "AvgPool"}) {
    INFO(op);
    const std::vector<int> want = ints_of(run_op(op, {r}, same)[0]), got = ints_of(run_op(op, {r}, same, "onednn")[0]);
    REQUIRE(want.size() == got.size());
    for (size_t i = 0; i < want.size(); ++i)
      CHECK(std::abs(want[i] - got[i]) <= (std::string(op) == "MaxPool" ? 0 : 1));
  }
}

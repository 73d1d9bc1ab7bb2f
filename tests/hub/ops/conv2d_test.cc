#include "hub/ops/conv2d.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "conv_cases.h"
#include "hub/graph/session.h"
#include "hub/ops/padding.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

// Channels [c0, c0 + count) of the last dim of t.
Tensor channels(const Tensor& t, int64_t c0, int64_t count) {
  const int64_t inner = t.shape()[t.shape().rank() - 1], rows = t.num_elements() / inner;
  Shape shape = t.shape();
  shape.set_dim(shape.rank() - 1, count);
  Tensor out(DType::kFloat32, shape);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < count; ++k) out.data<float>()[r * count + k] = t.data<float>()[r * inner + c0 + k];
  return out;
}

// Writes `part` into channels [c0, c0 + part's last dim) of t.
void set_channels(Tensor& t, int64_t c0, const Tensor& part) {
  const int64_t inner = t.shape()[t.shape().rank() - 1];
  const int64_t count = part.shape()[part.shape().rank() - 1], rows = part.num_elements() / count;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < count; ++k) t.data<float>()[r * inner + c0 + k] = part.data<float>()[r * count + k];
}

// A grouped Conv2D computed as G separate plain convolutions on channel
// slices (reference backend), concatenated: independent of the grouped kernels.
Tensor grouped_by_slices(const Tensor& x, const Tensor& w, const Attrs& attrs) {
  const int64_t cg = w.dim(2), groups = x.dim(3) / cg, og = w.dim(3) / groups;
  Tensor y;
  for (int64_t g = 0; g < groups; ++g) {
    Tensor part = run_op("Conv2D", {channels(x, g * cg, cg), channels(w, g * og, og)}, attrs)[0];
    if (g == 0) {
      Shape shape = part.shape();
      shape.set_dim(3, w.dim(3));
      y = Tensor(DType::kFloat32, shape);
    }
    set_channels(y, g * og, part);
  }
  return y;
}

// 0, 1, 2, ... in the given shape.
std::string error_of(const std::string& op, const Shape& x, const Shape& w, const Attrs& attrs,
                     const Shape* dy = nullptr) {
  Graph g;
  Scope s(g);
  std::vector<Output> in{ops::placeholder(s, DType::kFloat32, x, "x"), ops::placeholder(s, DType::kFloat32, w, "w")};
  if (dy) in.push_back(ops::placeholder(s, DType::kFloat32, *dy, "dy"));
  try {
    s.op(op, in, attrs, "conv");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    return e.what();
  }
  FAIL("expected an error from " << op);
  return "";
}

}  // namespace

TEST_CASE("window_dim: TF SAME and VALID geometry") {
  using ops::Padding;
  using ops::window_dim;
  // VALID: ceil((in - (k-1)*d) / s)
  CHECK(window_dim(5, 3, 1, 1, Padding::kValid).out == 3);
  CHECK(window_dim(5, 3, 2, 1, Padding::kValid).out == 2);
  CHECK(window_dim(6, 3, 2, 1, Padding::kValid).out == 2);
  CHECK(window_dim(5, 3, 1, 2, Padding::kValid).out == 1);
  CHECK(window_dim(4, 3, 1, 2, Padding::kValid).out <= 0);
  // SAME: ceil(in/s), padding split with the odd pixel after.
  ops::WindowDim w = window_dim(4, 3, 2, 1, Padding::kSame);  // total = 1*2 + 3 - 4 = 1
  CHECK(w.out == 2);
  CHECK(w.pad_before == 0);
  CHECK(w.pad_after == 1);
  w = window_dim(7, 5, 1, 1, Padding::kSame);  // total 4
  CHECK(w.out == 7);
  CHECK(w.pad_before == 2);
  CHECK(w.pad_after == 2);
  w = window_dim(5, 3, 1, 3, Padding::kSame);  // dilated window 7: total 6
  CHECK(w.pad_before == 3);
  CHECK(w.pad_after == 3);
  w = window_dim(5, 1, 3, 1, Padding::kSame);  // stride > kernel: no padding
  CHECK(w.out == 2);
  CHECK(w.pad_before + w.pad_after == 0);
  CHECK(window_dim(kUnknownDim, 3, 1, 1, Padding::kSame).out == kUnknownDim);
  CHECK(ops::parse_padding("SAME") == Padding::kSame);
  CHECK(ops::parse_padding("VALID") == Padding::kValid);
  CHECK(!ops::parse_padding("same").has_value());
}

TEST_CASE("window_dim: EXPLICIT padding and ceil_mode") {
  using ops::Padding;
  using ops::window_dim;
  // floor((in + before + after - span) / s) + 1
  CHECK(window_dim(5, 3, 2, 1, Padding::kExplicit, 1, 0).out == 2);  // (5+1-3)/2 + 1
  CHECK(window_dim(5, 3, 1, 2, Padding::kExplicit, 2, 2).out == 5);  // dilated span 5: (5+4-5)/1 + 1
  CHECK(window_dim(2, 3, 1, 1, Padding::kExplicit, 0, 0).out <= 0);  // does not fit
  ops::WindowDim w = window_dim(7, 3, 2, 1, Padding::kExplicit, 1, 1);
  CHECK(w.out == 4);
  CHECK(w.pad_before == 1);
  CHECK(w.pad_after == 1);
  // ceil_mode: ceil instead of floor ...
  CHECK(window_dim(6, 3, 2, 1, Padding::kExplicit, 0, 0).out == 2);        // floor(3/2) + 1
  CHECK(window_dim(6, 3, 2, 1, Padding::kExplicit, 0, 0, true).out == 3);  // ceil(3/2) + 1
  // ... but a last window starting at or after in + pad_before is dropped:
  // in 4, k 2, s 2, pads 0+1: ceil(3/2) + 1 = 3, window 2 would start at 4 = in.
  CHECK(window_dim(4, 2, 2, 1, Padding::kExplicit, 0, 1, true).out == 2);
  // in 5, k 2, s 2, pads 1+1: ceil(5/2) + 1 = 4; window 3 starts at 6 - 1 = 5 = in -> 3.
  CHECK(window_dim(5, 2, 2, 1, Padding::kExplicit, 1, 1, true).out == 3);
  // in 5, k 3, s 2, pad 0+1: ceil(3/2) + 1 = 3, window 2 starts at 4 < 5: kept.
  CHECK(window_dim(5, 3, 2, 1, Padding::kExplicit, 0, 1, true).out == 3);
  CHECK(window_dim(kUnknownDim, 3, 2, 1, Padding::kExplicit, 1, 1).out == kUnknownDim);
  CHECK(ops::parse_padding("EXPLICIT") == Padding::kExplicit);

  auto pads = ops::parse_explicit_paddings({1, 2, 3, 4});
  REQUIRE(pads.has_value());
  CHECK((pads->top == 1 && pads->bottom == 2 && pads->left == 3 && pads->right == 4));
  pads = ops::parse_explicit_paddings({0, 0, 1, 2, 3, 4, 0, 0});  // TF's NHWC form
  REQUIRE(pads.has_value());
  CHECK((pads->top == 1 && pads->bottom == 2 && pads->left == 3 && pads->right == 4));
  CHECK(!ops::parse_explicit_paddings({1, 0, 1, 2, 3, 4, 0, 0}).has_value());  // batch padding
  CHECK(!ops::parse_explicit_paddings({1, 2, 3}).has_value());
  CHECK(!ops::parse_explicit_paddings({1, -2, 3, 4}).has_value());
}

TEST_CASE("Conv2D: hand-computed vectors") {
  for (const char* b : {"reference", "onednn"}) {
    INFO(b);
    // 3x3 input 1..9, 2x2 filter [[1,2],[3,4]], SAME: pad 0 before, 1 after.
    // y[i,j] = x[i,j] + 2x[i,j+1] + 3x[i+1,j] + 4x[i+1,j+1]
    Tensor x = iota({1, 3, 3, 1}, 1);
    Tensor w = make({2, 2, 1, 1}, {1, 2, 3, 4});
    expect_close(run_op("Conv2D", {x, w}, conv_attrs("SAME"), b)[0],
                 make({1, 3, 3, 1}, {37, 47, 21, 67, 77, 33, 23, 26, 9}));
    // Same with stride 2: windows at 0 and 2.
    expect_close(run_op("Conv2D", {x, w}, conv_attrs("SAME", {2, 2}), b)[0], make({1, 2, 2, 1}, {37, 21, 23, 9}));
    // VALID
    expect_close(run_op("Conv2D", {x, w}, conv_attrs("VALID"), b)[0], make({1, 2, 2, 1}, {37, 47, 67, 77}));

    // Stride > kernel: 5x5 input (5i+j), 2x2 ones, stride 3; rows/cols 2 are skipped.
    Tensor x5 = iota({1, 5, 5, 1});
    Tensor ones = make({2, 2, 1, 1}, {1, 1, 1, 1});
    expect_close(run_op("Conv2D", {x5, ones}, conv_attrs("SAME", {3, 3}), b)[0], make({1, 2, 2, 1}, {12, 24, 72, 84}));
    // 3x3 ones, stride 2, 4x4 input (1..16): SAME pads 1 after only.
    Tensor x4 = iota({1, 4, 4, 1}, 1);
    Tensor ones3 = make({3, 3, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
    expect_close(run_op("Conv2D", {x4, ones3}, conv_attrs("SAME", {2, 2}), b)[0], make({1, 2, 2, 1}, {54, 45, 72, 54}));

    // Dilation 2, VALID: y[i,j] = x[i,j] + 2x[i,j+2] + 3x[i+2,j] + 4x[i+2,j+2] = 50i + 10j + 82
    expect_close(run_op("Conv2D", {x5, w}, conv_attrs("VALID", {1, 1}, {2, 2}), b)[0],
                 make({1, 3, 3, 1}, {82, 92, 102, 132, 142, 152, 182, 192, 202}));
    // Dilation 2, SAME on 3x3: dilated window 3, pad 1 each side; only the
    // centre output sees all four taps: y[1,1] = x00 + 2x02 + 3x20 + 4x22.
    Tensor yd = run_op("Conv2D", {x, w}, conv_attrs("SAME", {1, 1}, {2, 2}), b)[0];
    expect_close(yd, make({1, 3, 3, 1}, {4 * 5, 3 * 4 + 4 * 6, 3 * 5, 2 * 2 + 4 * 8, 1 + 2 * 3 + 3 * 7 + 4 * 9,
                                         1 * 2 + 3 * 8, 2 * 5, 1 * 4 + 2 * 6, 1 * 5}));

    // Channels: batch 2, C=2 -> O=3 through a 1x1 filter.
    Tensor xc = make({2, 1, 1, 2}, {1, 2, -1, 0.5f});
    Tensor wc = make({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
    expect_close(run_op("Conv2D", {xc, wc}, conv_attrs("VALID"), b)[0], make({2, 1, 1, 3}, {9, 12, 15, 1, 0.5f, 0}));
  }
}

TEST_CASE("Conv2D: EXPLICIT padding, hand-computed vectors") {
  for (const char* b : {"reference", "onednn"}) {
    INFO(b);
    // 3x3 input 1..9, 2x2 filter [[1,2],[3,4]], pads top 1, right 1 (ONNX's
    // SAME_LOWER: the odd pad before in height). Row -1 and column 3 are zero:
    // y[i,j] = x[i-1,j] + 2x[i-1,j+1] + 3x[i,j] + 4x[i,j+1]
    Tensor x = iota({1, 3, 3, 1}, 1);
    Tensor w = make({2, 2, 1, 1}, {1, 2, 3, 4});
    Tensor want = make({1, 3, 3, 1}, {11, 18, 9, 37, 47, 21, 67, 77, 33});
    expect_close(run_op("Conv2D", {x, w}, explicit_attrs({1, 0, 0, 1}), b)[0], want);
    // TF's 8-int NHWC form of the same pads.
    expect_close(run_op("Conv2D", {x, w}, explicit_attrs({0, 0, 1, 0, 0, 1, 0, 0}), b)[0], want);
    // ONNX's conv_with_strides_and_asymmetric_padding: 7x5 input 0..34, 3x3
    // ones, strides 2, ONNX pads [1,0,1,0] = top 1, bottom 1. Row 0 of y:
    // rows -1..1, columns 0..2: (0+1+2) + (5+6+7) = 21.
    expect_close(run_op("Conv2D", {iota({1, 7, 5, 1}), make({3, 3, 1, 1}, std::vector<float>(9, 1))},
                        explicit_attrs({1, 1, 0, 0}, {2, 2}), b)[0],
                 make({1, 4, 2, 1}, {21, 33, 99, 117, 189, 207, 171, 183}));
    // Pads larger than the window: windows entirely in the padding give 0.
    // x = [1, 2], w = [1, 1], left pad 3: y[j] = x[j-3] + x[j-2] = 0, 0, 1, 3.
    expect_close(
        run_op("Conv2D", {make({1, 1, 2, 1}, {1, 2}), make({1, 2, 1, 1}, {1, 1})}, explicit_attrs({0, 0, 3, 0}), b)[0],
        make({1, 1, 4, 1}, {0, 0, 1, 3}));
  }
}

TEST_CASE("Conv2D: grouped, hand-computed vectors and as separate convolutions") {
  for (const char* b : {"reference", "onednn"}) {
    INFO(b);
    // C = 4, filter [1,1,2,4]: G = 4/2 = 2. Channels 0,1 feed outputs 0,1;
    // channels 2,3 feed outputs 2,3. w[i,o] = rows [1,2,3,4], [5,6,7,8]:
    // y0 = 1*1 + 2*5, y1 = 1*2 + 2*6, y2 = 3*3 + 4*7, y3 = 3*4 + 4*8.
    Tensor x = make({1, 1, 1, 4}, {1, 2, 3, 4});
    Tensor w = make({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
    expect_close(run_op("Conv2D", {x, w}, conv_attrs("VALID"), b)[0], make({1, 1, 1, 4}, {11, 14, 37, 44}));
    // dx: each input channel gathers its own group's outputs: dy = ones ->
    // dx[i] = sum of its group's row of w: [1+2, 5+6, 3+4, 7+8].
    Tensor dy = make({1, 1, 1, 4}, {1, 1, 1, 1});
    expect_close(run_op("Conv2DBackpropInput", {x, w, dy}, conv_attrs("VALID"), b)[0],
                 make({1, 1, 1, 4}, {3, 11, 7, 15}));
    // dw[i, o] = x[group(o)*2 + i] * dy[o]
    expect_close(run_op("Conv2DBackpropFilter", {x, w, dy}, conv_attrs("VALID"), b)[0],
                 make({1, 1, 2, 4}, {1, 1, 3, 3, 2, 2, 4, 4}));
  }
  // Spatial windows, strides and padding: G = 2, G = C/2 and odd shapes match
  // the same convolution run group by group.
  struct Case {
    Shape x, w;
    Attrs attrs;
  };
  std::vector<Case> cases{
      {{2, 5, 6, 4}, {3, 3, 2, 6}, conv_attrs("SAME", {2, 1})},            // G = 2
      {{1, 7, 5, 6}, {2, 3, 2, 9}, explicit_attrs({1, 0, 2, 1}, {1, 2})},  // G = 3 = C/2, odd O
      {{1, 4, 6, 10}, {3, 3, 2, 5}, conv_attrs("VALID", {1, 1}, {1, 2})},  // G = 5 = C/2, O/G = 1
      {{2, 3, 3, 3}, {1, 1, 1, 3}, conv_attrs("SAME")},                    // G = C: pointwise per channel
  };
  int seed = 50;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " w " << k.w.to_string());
    Tensor x = random_tensor(k.x, ++seed), w = random_tensor(k.w, ++seed);
    expect_close(run_op("Conv2D", {x, w}, k.attrs)[0], grouped_by_slices(x, w, k.attrs), 1e-5, 1e-4);
  }
  // G = C with multiplier M is DepthwiseConv2dNative: filter [3,3,1,C*M] is
  // the depthwise [3,3,C,M] filter reshaped (output channel c*M + m).
  Tensor x = random_tensor({1, 6, 5, 3}, 70), dw = random_tensor({3, 3, 3, 2}, 71);
  Tensor as_conv(DType::kFloat32, Shape{3, 3, 1, 6});
  std::copy_n(dw.data<float>(), dw.num_elements(), as_conv.data<float>());
  expect_close(run_op("Conv2D", {x, as_conv}, explicit_attrs({1, 2, 0, 1}, {2, 1}))[0],
               run_op("DepthwiseConv2dNative", {x, dw}, explicit_attrs({1, 2, 0, 1}, {2, 1}))[0], 1e-5, 1e-5);
}

TEST_CASE("Conv2D backprops: hand-computed vectors") {
  for (const char* b : {"reference", "onednn"}) {
    INFO(b);
    // 3x3 input, 2x2 filter [[1,2],[3,4]], VALID, dy = [[1,0],[0,1]]:
    // dx = w placed at (0,0) plus w placed at (1,1).
    Tensor x = iota({1, 3, 3, 1}, 1);
    Tensor w = make({2, 2, 1, 1}, {1, 2, 3, 4});
    Tensor dy = make({1, 2, 2, 1}, {1, 0, 0, 1});
    expect_close(run_op("Conv2DBackpropInput", {x, w, dy}, conv_attrs("VALID"), b)[0],
                 make({1, 3, 3, 1}, {1, 2, 0, 3, 4 + 1, 2, 0, 3, 4}));
    // dw[kh,kw] = x[kh,kw] + x[kh+1,kw+1]
    expect_close(run_op("Conv2DBackpropFilter", {x, w, dy}, conv_attrs("VALID"), b)[0],
                 make({2, 2, 1, 1}, {1 + 5, 2 + 6, 4 + 8, 5 + 9}));
  }
}

TEST_CASE("DepthwiseConv2dNative: hand-computed vectors") {
  for (const char* b : {"reference", "onednn"}) {
    INFO(b);
    // 2x2 input, channels c0 = 1,2,3,4 and c1 = 10,20,30,40; M = 2, VALID.
    Tensor x = make({1, 2, 2, 2}, {1, 10, 2, 20, 3, 30, 4, 40});
    // HWCM, per tap [c0m0, c0m1, c1m0, c1m1]
    Tensor w = make({2, 2, 2, 2}, {1, 1, 0, 1, /**/ 1, 0, 0, -1, /**/ 1, 0, 0, 1, /**/ 1, 0, 1, -1});
    expect_close(run_op("DepthwiseConv2dNative", {x, w}, conv_attrs("VALID"), b)[0],
                 make({1, 1, 1, 4}, {10, 1, 40, 10 - 20 + 30 - 40}));
    // M = 1, SAME stride 2 on 3x3: same taps as Conv2D's case above.
    Tensor x3 = iota({1, 3, 3, 1}, 1);
    Tensor w1 = make({2, 2, 1, 1}, {1, 2, 3, 4});
    expect_close(run_op("DepthwiseConv2dNative", {x3, w1}, conv_attrs("SAME", {2, 2}), b)[0],
                 make({1, 2, 2, 1}, {37, 21, 23, 9}));
    // Channels do not mix: c1 = -c0 gives -y.
    Tensor x2 = make({1, 2, 2, 2}, {1, -1, 2, -2, 3, -3, 4, -4});
    Tensor w2 = make({1, 1, 2, 1}, {2, 2});
    expect_close(run_op("DepthwiseConv2dNative", {x2, w2}, conv_attrs("SAME"), b)[0],
                 make({1, 2, 2, 2}, {2, -2, 4, -4, 6, -6, 8, -8}));
    // Backprops, M = 1, VALID 2x2 on 3x3 with dy = [[1,0],[0,1]] (as Conv2D with C = 1).
    Tensor dy = make({1, 2, 2, 1}, {1, 0, 0, 1});
    expect_close(run_op("DepthwiseConv2dNativeBackpropInput", {x3, w1, dy}, conv_attrs("VALID"), b)[0],
                 make({1, 3, 3, 1}, {1, 2, 0, 3, 5, 2, 0, 3, 4}));
    expect_close(run_op("DepthwiseConv2dNativeBackpropFilter", {x3, w1, dy}, conv_attrs("VALID"), b)[0],
                 make({2, 2, 1, 1}, {6, 8, 12, 14}));
  }
}

TEST_CASE("Conv2D: gradients match finite differences") {
  struct Case {
    Shape x, w;
    Attrs attrs;
  };
  std::vector<Case> cases{
      {{2, 5, 4, 3}, {3, 2, 3, 2}, conv_attrs("SAME", {2, 1})},
      {{1, 6, 7, 2}, {2, 3, 2, 3}, conv_attrs("VALID", {1, 2}, {2, 1})},
      {{2, 3, 3, 2}, {1, 1, 2, 3}, conv_attrs("SAME")},
      {{1, 5, 4, 2}, {3, 2, 2, 2}, explicit_attrs({2, 0, 1, 3}, {2, 1})},          // asymmetric pads
      {{1, 5, 5, 4}, {3, 3, 2, 4}, explicit_attrs({1, 1, 0, 2}, {1, 2}, {2, 1})},  // G = 2, dilated
      {{2, 4, 3, 6}, {2, 2, 2, 3}, conv_attrs("SAME", {1, 1})},                    // G = 3, O/G = 1
  };
  int seed = 0;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " w " << k.w.to_string());
    check_gradients("Conv2D", {random_tensor(k.x, ++seed), random_tensor(k.w, ++seed)}, k.attrs);
  }
  // The backprops are linear in (w, dy) and (x, dy); their gradients too.
  Tensor x = random_tensor({1, 5, 5, 2}, 11), w = random_tensor({3, 3, 2, 2}, 12);
  Tensor dy = random_tensor({1, 3, 3, 2}, 13);
  hub::testing::GradCheckOptions o;
  o.inputs = {1, 2};
  check_gradients("Conv2DBackpropInput", {x, w, dy}, conv_attrs("SAME", {2, 2}), o);
  o.inputs = {0, 2};
  check_gradients("Conv2DBackpropFilter", {x, w, dy}, conv_attrs("SAME", {2, 2}), o);
  // Grouped (G = 2) with explicit pads.
  Tensor gx = random_tensor({1, 5, 4, 4}, 14), gw = random_tensor({2, 3, 2, 4}, 15);
  Tensor gdy = random_tensor({1, 3, 2, 4}, 16);
  const Attrs ga = explicit_attrs({1, 0, 1, 0}, {2, 2});
  o.inputs = {1, 2};
  check_gradients("Conv2DBackpropInput", {gx, gw, gdy}, ga, o);
  o.inputs = {0, 2};
  check_gradients("Conv2DBackpropFilter", {gx, gw, gdy}, ga, o);
}

TEST_CASE("DepthwiseConv2dNative: gradients match finite differences") {
  struct Case {
    Shape x, w;
    Attrs attrs;
  };
  std::vector<Case> cases{
      {{1, 4, 5, 3}, {3, 3, 3, 2}, conv_attrs("SAME", {2, 2})},
      {{2, 5, 4, 2}, {2, 2, 2, 1}, conv_attrs("VALID", {1, 1}, {2, 2})},
      {{1, 5, 5, 3}, {3, 2, 3, 1}, conv_attrs("SAME", {3, 1}, {1, 2})},
  };
  int seed = 100;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " w " << k.w.to_string());
    check_gradients("DepthwiseConv2dNative", {random_tensor(k.x, ++seed), random_tensor(k.w, ++seed)}, k.attrs);
  }
  Tensor x = random_tensor({1, 4, 4, 2}, 21), w = random_tensor({3, 3, 2, 2}, 22);
  Tensor dy = random_tensor({1, 2, 2, 4}, 23);
  hub::testing::GradCheckOptions o;
  o.inputs = {1, 2};
  check_gradients("DepthwiseConv2dNativeBackpropInput", {x, w, dy}, conv_attrs("SAME", {2, 2}), o);
  o.inputs = {0, 2};
  check_gradients("DepthwiseConv2dNativeBackpropFilter", {x, w, dy}, conv_attrs("SAME", {2, 2}), o);
}

TEST_CASE("Conv2D and depthwise: oneDNN matches reference on awkward shapes") {
  const std::vector<ConvCase> cases = awkward_conv_cases();
  int seed = 200;
  for (const ConvCase& k : cases) {
    INFO((k.depthwise ? "depthwise" : "conv") << " x " << k.x.to_string() << " w " << k.w.to_string());
    const std::vector<Tensor> in = k.inputs(seed);  // x, w, dy
    compare_backends(k.forward(), {in[0], in[1]}, k.attrs, "onednn", 2e-4, 2e-4);
    // Conv2D's backward data with fewer than 8 input channels per group is
    // left to the reference kernel by design (hub/ops/onednn/conv2d.h).
    if (k.depthwise || k.w[2] >= 8)
      compare_backends(k.forward() + "BackpropInput", in, k.attrs, "onednn", 2e-4, 2e-4);
    else
      CHECK(backend_used(k.forward() + "BackpropInput", in, k.attrs) == "reference");
    compare_backends(k.forward() + "BackpropFilter", in, k.attrs, "onednn", 2e-4, 2e-4);
  }
}

TEST_CASE("Conv2D: the onednn backend really runs oneDNN, and falls back for empty batches") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 6, 6, 3}, "x");
  Output w = ops::placeholder(s, DType::kFloat32, {3, 3, 3, 4}, "w");
  Output y = ops::conv2d(s, x, w, {{1, 1}, "SAME"}, "conv");
  Output dww = ops::placeholder(s, DType::kFloat32, {3, 3, 3, 1}, "dww");
  Output dw = ops::depthwise_conv2d(s, x, dww, {}, "dw");
  Session session(g, nullptr, {&find_backend("onednn")});
  Tensor wt = random_tensor({3, 3, 3, 4}, 1), dwt = random_tensor({3, 3, 3, 1}, 2);
  session.run({{x, random_tensor({2, 6, 6, 3}, 3)}, {w, wt}, {dww, dwt}}, {y, dw});
  CHECK(session.last_kernels().at("conv") == "onednn");
  CHECK(session.last_kernels().at("dw") == "onednn");
  // Backward data with few input channels is routed to reference (see onednn/conv2d.cc).
  Output dy = ops::placeholder(s, DType::kFloat32, {2, 6, 6, 4}, "dy");
  Output dx = ops::conv2d_backprop_input(s, x, w, dy, {{1, 1}, "SAME"}, "dx");
  session.run({{x, random_tensor({2, 6, 6, 3}, 3)}, {w, wt}, {dy, random_tensor({2, 6, 6, 4}, 4)}}, {dx});
  CHECK(session.last_kernels().at("dx") == "reference");
  auto out = session.run({{x, Tensor(DType::kFloat32, {0, 6, 6, 3})}, {w, wt}, {dww, dwt}}, {y, dw});
  CHECK(out[0].shape() == Shape{0, 6, 6, 4});
  CHECK(session.last_kernels().at("conv") == "reference");
}

TEST_CASE("Conv2D: shape inference and errors name the node and both shapes") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 28, 28, 1}, "x");
  Output w = ops::placeholder(s, DType::kFloat32, {5, 5, 1, 32}, "w");
  CHECK(g.spec(ops::conv2d(s, x, w, {{2, 2}, "SAME"})).shape == Shape{kUnknownDim, 14, 14, 32});
  CHECK(g.spec(ops::conv2d(s, x, w, {{1, 1}, "VALID"})).shape == Shape{kUnknownDim, 24, 24, 32});
  Output dww = ops::placeholder(s, DType::kFloat32, {3, 3, 1, 2}, "dww");
  CHECK(g.spec(ops::depthwise_conv2d(s, x, dww, {{2, 2}, "VALID"})).shape == Shape{kUnknownDim, 13, 13, 2});

  std::string m = error_of("Conv2D", {1, 8, 8, 3}, {3, 3, 4, 8}, conv_attrs("SAME"));
  CHECK(contains(m, "'conv'"));
  CHECK(contains(m, "[1,8,8,3]"));
  CHECK(contains(m, "[3,3,4,8]"));
  m = error_of("Conv2D", {8, 8, 3}, {3, 3, 3, 8}, conv_attrs("SAME"));
  CHECK(contains(m, "rank 4"));
  CHECK(contains(m, "[8,8,3]"));
  m = error_of("Conv2D", {1, 8, 8, 3}, {3, 3, 3, 8}, conv_attrs("same"));
  CHECK(contains(m, "\"same\""));
  CHECK(contains(m, "[3,3,3,8]"));
  m = error_of("Conv2D", {1, 8, 8, 3}, {3, 3, 3, 8}, conv_attrs("SAME", {0, 1}));
  CHECK(contains(m, "strides"));
  CHECK(contains(m, "[0,1]"));
  m = error_of("Conv2D", {1, 8, 8, 3}, {3, 3, 3, 8}, conv_attrs("SAME", {1, 1}, {1, -2}));
  CHECK(contains(m, "dilations"));
  m = error_of("DepthwiseConv2dNative", {1, 4, 4, 3}, {3, 3, 3, 1}, conv_attrs("VALID", {1, 1}, {2, 2}));
  CHECK(contains(m, "exceeds input height 4"));
  CHECK(contains(m, "[1,4,4,3]"));
  CHECK(contains(m, "[3,3,3,1]"));
  // EXPLICIT: explicit_paddings only with it, four (or TF's eight) entries >= 0.
  m = error_of("Conv2D", {1, 8, 8, 3}, {3, 3, 3, 8},
               conv_attrs("SAME").set("explicit_paddings", std::vector<int64_t>{1, 1, 1, 1}));
  CHECK(contains(m, "explicit_paddings must be empty unless padding is \"EXPLICIT\""));
  CHECK(contains(m, "[1,1,1,1]"));
  m = error_of("Conv2D", {1, 8, 8, 3}, {3, 3, 3, 8}, explicit_attrs({1, 1, 1}));
  CHECK(contains(m, "explicit_paddings"));
  CHECK(contains(m, "[1,1,1]"));
  m = error_of("Conv2D", {1, 8, 8, 3}, {3, 3, 3, 8}, explicit_attrs({1, -1, 1, 1}));
  CHECK(contains(m, "[1,-1,1,1]"));
  m = error_of("Conv2D", {1, 2, 8, 3}, {5, 3, 3, 8}, explicit_attrs({1, 1, 1, 1}));
  CHECK(contains(m, "window 5 (dilated) exceeds input height 2 plus padding 2"));
  // Groups: C must be a multiple of the filter's input channels, O of G.
  m = error_of("Conv2D", {1, 8, 8, 6}, {3, 3, 4, 8}, conv_attrs("SAME"));
  CHECK(contains(m, "input channels 6 are not a multiple of the filter's input channels 4"));
  m = error_of("Conv2D", {1, 8, 8, 6}, {3, 3, 2, 8}, conv_attrs("SAME"));
  CHECK(contains(m, "output channels 8 are not a multiple of the 3 groups"));
  CHECK(contains(m, "[3,3,2,8]"));
  Shape bad_dy{1, 8, 8, 7};
  m = error_of("Conv2DBackpropInput", {1, 8, 8, 3}, {3, 3, 3, 8}, conv_attrs("SAME"), &bad_dy);
  CHECK(contains(m, "[1,8,8,7]"));
  CHECK(contains(m, "[1,8,8,8]"));
}

TEST_CASE("Conv2D on oneDNN: cached reordered filters never go stale") {
  // A new filter tensor of the same shape (possibly at the freed buffer's
  // address) and a filter changed in place must both be seen by the next run.
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {1, 6, 6, 8}, "x");
  Output w = ops::placeholder(s, DType::kFloat32, {3, 3, 8, 16}, "w");
  Output y = ops::conv2d(s, x, w, {{1, 1}, "SAME"}, "conv");
  Session fast(g, nullptr, {&find_backend("onednn")});
  Session ref(g, nullptr, {&find_backend("reference")});
  Tensor xt = random_tensor({1, 6, 6, 8}, 1);
  for (uint64_t seed = 10; seed < 13; ++seed) {
    Tensor wt = random_tensor({3, 3, 8, 16}, seed);
    expect_close(fast.run({{x, xt}, {w, wt}}, {y})[0], ref.run({{x, xt}, {w, wt}}, {y})[0], 1e-4, 1e-4);
  }
  Tensor wt = random_tensor({3, 3, 8, 16}, 20);
  fast.run({{x, xt}, {w, wt}}, {y});
  wt.data<float>()[5] += 1.0f;
  expect_close(fast.run({{x, xt}, {w, wt}}, {y})[0], ref.run({{x, xt}, {w, wt}}, {y})[0], 1e-4, 1e-4);
}

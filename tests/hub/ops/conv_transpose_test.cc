#include "hub/ops/conv_transpose.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

Attrs transpose_attrs(std::vector<int64_t> strides = {1, 1}, std::vector<int64_t> pads = {0, 0, 0, 0},
                      std::vector<int64_t> output_padding = {0, 0}, std::vector<int64_t> dilations = {1, 1},
                      int64_t groups = 1) {
  return ops::ConvTransposeOptions{strides, pads, output_padding, dilations, groups}.to_attrs();
}

// Each value twice: a [.., 1] pattern seen through two identical output channels.
std::vector<float> twice(const std::vector<float>& v) {
  std::vector<float> out;
  for (float f : v) out.insert(out.end(), {f, f});
  return out;
}

std::string error_of(const Shape& x, const Shape& w, const Attrs& attrs) {
  Graph g;
  Scope s(g);
  try {
    s.op("Conv2DTranspose",
         {ops::placeholder(s, DType::kFloat32, x, "x"), ops::placeholder(s, DType::kFloat32, w, "w")}, attrs, "deconv");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    return e.what();
  }
  FAIL("expected an error");
  return "";
}

}  // namespace

TEST_CASE("Conv2DTranspose: hand-computed vectors") {
  for (const char* b : {"reference", "onednn"}) {
    INFO(b);
    // ONNX's convtranspose case: 3x3 input 0..8, 3x3 ones, two output channels
    // (w [3,3,2,1]): y[oh,ow] = sum of x over the 3x3 block ending at (oh,ow).
    const std::vector<float> full{0,  1,  3, 3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                                  27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8};
    Tensor x = iota({1, 3, 3, 1});
    Tensor ones = make({3, 3, 2, 1}, std::vector<float>(18, 1));
    expect_close(run_op("Conv2DTranspose", {x, ones}, transpose_attrs(), b)[0], make({1, 5, 5, 2}, twice(full)));
    // ONNX's convtranspose_pads: strides [3,2], ONNX pads [1,2,1,2] (top 1,
    // left 2, bottom 1, right 2): OH = 2*3 - 2 + 3 = 7, OW = 2*2 - 4 + 3 = 3.
    expect_close(run_op("Conv2DTranspose", {x, ones}, transpose_attrs({3, 2}, {1, 1, 2, 2}), b)[0],
                 make({1, 7, 3, 2}, twice({1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15})));
    // One row: x = [1, 2], w = [1, 10, 100], stride 2: ow = 2w + t:
    // [1, 10, 100 + 2, 20, 200].
    Tensor x2 = make({1, 1, 2, 1}, {1, 2});
    Tensor w3 = make({1, 3, 1, 1}, {1, 10, 100});
    expect_close(run_op("Conv2DTranspose", {x2, w3}, transpose_attrs({1, 2}), b)[0],
                 make({1, 1, 5, 1}, {1, 10, 102, 20, 200}));
    // Left pad 1 crops the first column, output_padding 1 adds a (zero) last one.
    expect_close(run_op("Conv2DTranspose", {x2, w3}, transpose_attrs({1, 2}, {0, 0, 1, 0}, {0, 1}), b)[0],
                 make({1, 1, 5, 1}, {10, 102, 20, 200, 0}));
    // ONNX's convtranspose_dilations: 2x2 filter [[7,2],[1,9]] dilated by 2.
    expect_close(
        run_op("Conv2DTranspose", {make({1, 3, 3, 1}, {3, 8, 1, 9, 5, 7, 3, 2, 6}), make({2, 2, 1, 1}, {7, 2, 1, 9})},
               transpose_attrs({1, 1}, {0, 0, 0, 0}, {0, 0}, {2, 2}), b)[0],
        make({1, 5, 5, 1},
             {21, 56, 13, 16, 2, 63, 35, 67, 10, 14, 24, 22, 76, 76, 21, 9, 5, 88, 45, 63, 3, 2, 33, 18, 54}));
    // Groups: C = 4, G = 2, w [1,1,2,4] (O/G = 2): channels 0,1 -> outputs
    // 0,1; 2,3 -> 2,3. w rows (i) [1,2,3,4], [5,6,7,8]:
    // y0 = 1*1 + 2*2, y1 = 1*5 + 2*6, y2 = 3*3 + 4*4, y3 = 3*7 + 4*8.
    expect_close(
        run_op("Conv2DTranspose", {make({1, 1, 1, 4}, {1, 2, 3, 4}), make({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})},
               transpose_attrs({1, 1}, {0, 0, 0, 0}, {0, 0}, {1, 1}, 2), b)[0],
        make({1, 1, 1, 4}, {5, 17, 25, 53}));
  }
}

TEST_CASE("Conv2DTranspose equals Conv2DBackpropInput of its convolution") {
  struct Case {
    Shape x, w;
    Attrs attrs;
  };
  std::vector<Case> cases{
      {{2, 4, 5, 3}, {3, 3, 2, 3}, transpose_attrs({2, 2}, {1, 1, 1, 1}, {1, 1})},             // PyTorch k3 s2 p1 op1
      {{1, 3, 4, 2}, {2, 3, 5, 2}, transpose_attrs({3, 2}, {0, 2, 1, 0}, {2, 1})},             // op > bottom pad
      {{1, 5, 3, 4}, {3, 2, 3, 4}, transpose_attrs({1, 2}, {2, 0, 0, 1}, {0, 1}, {2, 1}, 2)},  // G = 2, dilated
      {{2, 3, 3, 6}, {2, 2, 1, 6}, transpose_attrs({2, 1}, {0, 0, 0, 0}, {1, 0}, {1, 1}, 6)},  // G = C
  };
  int seed = 0;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " w " << k.w.to_string());
    Tensor x = random_tensor(k.x, ++seed), w = random_tensor(k.w, ++seed);
    Tensor y = run_op("Conv2DTranspose", {x, w}, k.attrs)[0];
    Tensor y_like(DType::kFloat32, y.shape());
    y_like.fill(0.0);
    expect_close(y, run_op("Conv2DBackpropInput", {y_like, w, x}, ops::conv_transpose_conv_attrs(k.attrs))[0], 1e-6,
                 1e-6);
  }
}

TEST_CASE("Conv2DTranspose: gradients match finite differences") {
  struct Case {
    Shape x, w;
    Attrs attrs;
  };
  std::vector<Case> cases{
      {{1, 3, 3, 2}, {3, 3, 2, 2}, transpose_attrs({2, 2}, {1, 1, 1, 1}, {1, 1})},
      {{2, 2, 3, 4}, {2, 3, 3, 4}, transpose_attrs({3, 1}, {0, 1, 2, 0}, {2, 0}, {1, 2}, 2)},
      {{1, 4, 2, 3}, {2, 2, 1, 3}, transpose_attrs({1, 2}, {0, 0, 0, 0}, {0, 1}, {2, 1}, 3)},
  };
  int seed = 20;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " w " << k.w.to_string());
    check_gradients("Conv2DTranspose", {random_tensor(k.x, ++seed), random_tensor(k.w, ++seed)}, k.attrs);
  }
}

TEST_CASE("Conv2DTranspose: oneDNN matches reference on awkward shapes") {
  struct Case {
    Shape x, w;
    Attrs attrs;
  };
  // oneDNN runs when the output has >= 8 channels per group (w's dim 2),
  // as for Conv2DBackpropInput (hub/ops/onednn/conv2d.h).
  std::vector<Case> cases{
      {{2, 5, 4, 3}, {3, 3, 8, 3}, transpose_attrs({2, 2}, {1, 1, 1, 1}, {1, 1})},
      {{1, 3, 5, 6}, {2, 3, 9, 6}, transpose_attrs({3, 2}, {0, 2, 1, 0}, {2, 1}, {1, 2}, 2)},
      {{1, 4, 4, 16}, {1, 1, 8, 16}, transpose_attrs({1, 1}, {0, 0, 0, 0}, {0, 0}, {1, 1}, 2)},
      {{2, 3, 3, 5}, {4, 4, 10, 5}, transpose_attrs({2, 3}, {3, 0, 2, 4}, {1, 2})},
      {{1, 6, 5, 4}, {3, 3, 3, 4}, transpose_attrs({2, 2}, {1, 1, 1, 1})},  // 3 channels: reference
  };
  int seed = 40;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " w " << k.w.to_string());
    Tensor x = random_tensor(k.x, ++seed), w = random_tensor(k.w, ++seed);
    if (k.w[2] >= 8)
      compare_backends("Conv2DTranspose", {x, w}, k.attrs, "onednn", 2e-4, 2e-4);
    else
      CHECK(backend_used("Conv2DTranspose", {x, w}, k.attrs) == "reference");
  }
}

TEST_CASE("Conv2DTranspose: shape inference and errors name the node, shapes and attribute") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 7, 7, 16}, "x");
  Output w = ops::placeholder(s, DType::kFloat32, {3, 3, 4, 16}, "w");
  // (7-1)*2 - 1 - 1 + 3 + 1 = 14; O = G * 4.
  CHECK(g.spec(ops::conv2d_transpose(s, x, w, {{2, 2}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 2})).shape ==
        Shape{kUnknownDim, 14, 14, 8});
  Output xh = ops::placeholder(s, DType::kFloat32, {1, kUnknownDim, 7, 16}, "xh");
  CHECK(g.spec(ops::conv2d_transpose(s, xh, w)).shape == Shape{1, kUnknownDim, 9, 4});

  std::string m = error_of({1, 4, 4, 3}, {3, 3, 2, 4}, transpose_attrs());
  CHECK(contains(m, "'deconv'"));
  CHECK(contains(m, "input channels 3 != filter's last dim 4"));
  CHECK(contains(m, "[3,3,2,4]"));
  m = error_of({1, 4, 4, 6}, {3, 3, 2, 6}, transpose_attrs({1, 1}, {0, 0, 0, 0}, {0, 0}, {1, 1}, 4));
  CHECK(contains(m, "input channels 6 are not a multiple of groups 4"));
  m = error_of({1, 4, 4, 2}, {3, 3, 2, 2}, transpose_attrs({2, 2}, {0, 0, 0, 0}, {2, 0}));
  CHECK(contains(m, "output_padding must be [oph,opw] with 0 <= op < stride"));
  CHECK(contains(m, "[2,0]"));
  m = error_of({1, 1, 1, 2}, {2, 2, 2, 2}, transpose_attrs({1, 1}, {1, 1, 0, 0}));
  CHECK(contains(m, "output size 0x2 is empty"));
  m = error_of({1, 4, 4, 2}, {3, 3, 2, 2}, transpose_attrs({1, 1}, {0, -1, 0, 0}));
  CHECK(contains(m, "explicit_paddings"));
  CHECK(contains(m, "[0,-1,0,0]"));
  m = error_of({1, 4, 4, 2}, {3, 3, 2, 2}, transpose_attrs({0, 1}));
  CHECK(contains(m, "strides"));
  m = error_of({1, 4, 4, 2}, {3, 3, 2, 2}, transpose_attrs().set("groups", int64_t{0}));
  CHECK(contains(m, "groups must be >= 1, got 0"));
}

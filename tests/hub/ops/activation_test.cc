#include "hub/ops/activation.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "activation_cases.h"
#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {
const char* const kBackends[] = {"reference", "onednn"};

// Expects building `op` on float32 inputs of these shapes to fail with
// InvalidArgument naming the node and containing `needle`.
void expect_build_error(const std::string& op, const std::vector<Shape>& shapes, const Attrs& attrs,
                        const std::string& needle) {
  Graph g;
  Scope s(g);
  std::vector<Output> in;
  for (size_t i = 0; i < shapes.size(); ++i)
    in.push_back(ops::placeholder(s, DType::kFloat32, shapes[i], "in" + std::to_string(i)));
  expect_error(
      Code::kInvalidArgument, [&] { s.op(op, in, attrs, "bad"); }, needle);
  expect_error(
      Code::kInvalidArgument, [&] { s.op(op, in, attrs, "bad"); }, "'bad'");
}
}  // namespace

TEST_CASE("activations: hand-computed values on both backends") {
  Tensor x = make({6}, {-2, -0.5f, 0, 0.5f, 3, 7});
  for (const char* b : kBackends) {
    INFO(b);
    expect_close(run_op("Relu", {x}, {}, b)[0], make({6}, {0, 0, 0, 0.5f, 3, 7}));
    expect_close(run_op("Relu6", {x}, {}, b)[0], make({6}, {0, 0, 0, 0.5f, 3, 6}));
    expect_close(run_op("Elu", {x}, {}, b)[0], make({6}, {std::exp(-2.0f) - 1, std::exp(-0.5f) - 1, 0, 0.5f, 3, 7}));
    expect_close(run_op("Sigmoid", {x}, {}, b)[0],
                 make({6}, {0.11920292f, 0.37754067f, 0.5f, 0.62245933f, 0.95257413f, 0.99908895f}));
    expect_close(run_op("Tanh", {x}, {}, b)[0],
                 make({6}, {-0.96402758f, -0.46211716f, 0, 0.46211716f, 0.99505475f, 0.99999834f}));
  }
  // Saturation without NaN.
  Tensor big = make({2}, {-100, 100});
  expect_close(run_op("Sigmoid", {big})[0], make({2}, {0, 1}));
  expect_close(run_op("Tanh", {big})[0], make({2}, {-1, 1}));
}

TEST_CASE("LeakyRelu, Elu(alpha), HardSigmoid, HardSwish, ClipByValue: hand-computed values on both backends") {
  Tensor x = make({6}, {-2, -0.5f, 0, 0.5f, 3, 7});
  for (const char* b : kBackends) {
    INFO(b);
    expect_close(run_op("LeakyRelu", {x}, alpha(0.1f), b)[0], make({6}, {-0.2f, -0.05f, 0, 0.5f, 3, 7}));
    // TF's default alpha is 0.2; alpha may exceed 1 or be negative.
    expect_close(run_op("LeakyRelu", {x}, {}, b)[0], make({6}, {-0.4f, -0.1f, 0, 0.5f, 3, 7}));
    expect_close(run_op("LeakyRelu", {x}, alpha(-1.5f), b)[0], make({6}, {3, 0.75f, 0, 0.5f, 3, 7}));
    // Elu: alpha * (e^x - 1) for x <= 0; alpha = 0 is Relu.
    expect_close(run_op("Elu", {x}, alpha(0.5f), b)[0],
                 make({6}, {0.5f * (std::exp(-2.0f) - 1), 0.5f * (std::exp(-0.5f) - 1), 0, 0.5f, 3, 7}));
    expect_close(run_op("Elu", {x}, alpha(0.0f), b)[0], make({6}, {0, 0, 0, 0.5f, 3, 7}));
    // HardSwish: x * min(max(x + 3, 0), 6) / 6: -2 * 1/6, -0.5 * 2.5/6, 0, 0.5 * 3.5/6, 3, 7.
    expect_close(run_op("HardSwish", {x}, {}, b)[0], make({6}, {-1.0f / 3, -0.20833333f, 0, 0.29166667f, 3, 7}));
    expect_close(run_op("HardSwish", {make({3}, {-3, -4, -100})}, {}, b)[0], make({3}, {0, 0, 0}));
    // ClipByValue: both bounds, one bound (the other at its infinite default).
    expect_close(run_op("ClipByValue", {x}, clip(-1, 2), b)[0], make({6}, {-1, -0.5f, 0, 0.5f, 2, 2}));
    expect_close(run_op("ClipByValue", {x}, Attrs().set("min", 0.0f), b)[0], make({6}, {0, 0, 0, 0.5f, 3, 7}));
    expect_close(run_op("ClipByValue", {x}, Attrs().set("max", 1.0f), b)[0], make({6}, {-2, -0.5f, 0, 0.5f, 1, 1}));
    expect_close(run_op("ClipByValue", {make({2}, {-kInf, kInf})}, {}, b)[0], make({2}, {-kInf, kInf}));
  }
  // HardSigmoid (reference only): ONNX defaults alpha 0.2, beta 0.5: 0.2x + 0.5 clipped to [0, 1].
  expect_close(run_op("HardSigmoid", {x})[0], make({6}, {0.1f, 0.4f, 0.5f, 0.6f, 1, 1}));
  // PyTorch's hardsigmoid is alpha 1/6, beta 0.5.
  expect_close(run_op("HardSigmoid", {x}, Attrs().set("alpha", 1.0f / 6).set("beta", 0.5f))[0],
               make({6}, {1.0f / 6, 5.0f / 12, 0.5f, 7.0f / 12, 1, 1}));
  CHECK(backend_used("HardSigmoid", {x}, {}) == "reference");
  // min > max: max everywhere (ONNX Clip, NumPy); oneDNN's clip differs there, so reference runs.
  expect_close(run_op("ClipByValue", {x}, clip(3, 1))[0], make({6}, {1, 1, 1, 1, 1, 1}));
  CHECK(backend_used("ClipByValue", {x}, clip(3, 1)) == "reference");
}

TEST_CASE("PRelu: slope broadcast as ONNX's unidirectional broadcasting, both backends") {
  Tensor x = make({2, 3}, {-1, 2, -3, 4, -5, 6});
  for (const char* b : kBackends) {
    INFO(b);
    // Per last-dim slope (NHWC channels).
    expect_close(run_op("PRelu", {x, make({3}, {0.1f, 0.2f, 0.3f})}, {}, b)[0],
                 make({2, 3}, {-0.1f, 2, -0.9f, 4, -1, 6}));
    // Per row, negative slope.
    expect_close(run_op("PRelu", {x, make({2, 1}, {0.5f, -1})}, {}, b)[0], make({2, 3}, {-0.5f, 2, -1.5f, 4, 5, 6}));
    // Scalar (rank 0 and [1]).
    expect_close(run_op("PRelu", {x, make({}, {0.25f})}, {}, b)[0], make({2, 3}, {-0.25f, 2, -0.75f, 4, -1.25f, 6}));
    expect_close(run_op("PRelu", {x, make({1}, {0.25f})}, {}, b)[0], make({2, 3}, {-0.25f, 2, -0.75f, 4, -1.25f, 6}));
    // Whole tensor.
    expect_close(run_op("PRelu", {x, make({2, 3}, {1, 1, 1, 2, 2, 2})}, {}, b)[0],
                 make({2, 3}, {-1, 2, -3, 4, -10, 6}));
  }
}

TEST_CASE("activation grad ops: TF conventions at the boundaries") {
  Tensor g = make({6}, {1, 2, 3, 4, 5, 6});
  Tensor features = make({6}, {-1, 0, 0.5f, 5.9f, 6, 7});
  for (const char* b : kBackends) {
    INFO(b);
    // ReluGrad(gradients, features): features > 0.
    expect_close(run_op("ReluGrad", {g, features}, {}, b)[0], make({6}, {0, 0, 3, 4, 5, 6}));
    // Relu6Grad: 0 < features < 6 (open at both ends).
    expect_close(run_op("Relu6Grad", {g, features}, {}, b)[0], make({6}, {0, 0, 3, 4, 0, 0}));
    // EluGrad(gradients, outputs): outputs > 0 ? g : g * (outputs + 1).
    Tensor outputs = make({6}, {-0.5f, 0, 0.25f, -0.9f, 2, -1});
    expect_close(run_op("EluGrad", {g, outputs}, {}, b)[0], make({6}, {0.5f, 2, 3, 0.4f, 5, 0}));
    // SigmoidGrad(y, dy) = dy * y * (1 - y); TanhGrad(y, dy) = dy * (1 - y^2).
    Tensor y = make({6}, {0.5f, 0.1f, 0.9f, 0, 1, 0.25f});
    expect_close(run_op("SigmoidGrad", {y, g}, {}, b)[0], make({6}, {0.25f, 0.18f, 0.27f, 0, 0, 1.125f}), 1e-5, 1e-4);
    expect_close(run_op("TanhGrad", {y, g}, {}, b)[0], make({6}, {0.75f, 1.98f, 0.57f, 4, 0, 5.625f}), 1e-5, 1e-4);
    // LeakyReluGrad(gradients, features; alpha): features > 0 ? g : alpha g.
    expect_close(run_op("LeakyReluGrad", {g, features}, alpha(0.1f), b)[0], make({6}, {0.1f, 0.2f, 3, 4, 5, 6}));
    // EluGrad with alpha 0.5: outputs > 0 ? g : g * (outputs + 0.5).
    Tensor outputs_half = make({6}, {-0.25f, 0, 0.25f, -0.4f, 2, -0.5f});
    expect_close(run_op("EluGrad", {g, outputs_half}, alpha(0.5f), b)[0], make({6}, {0.25f, 1, 3, 0.4f, 5, 0}));
    // HardSwishGrad: 0 for x <= -3, g for x >= 3, else g (2x + 3) / 6.
    Tensor hs = make({6}, {-4, -3, -1, 0, 3, 2});
    expect_close(run_op("HardSwishGrad", {g, hs}, {}, b)[0], make({6}, {0, 0, 0.5f, 2, 5, 7}));
  }
  // ClipByValueGrad: the gradient passes on the closed interval [min, max] (TF, PyTorch).
  Tensor cf = make({6}, {-2, -1, 0, 2, 2.5f, 1});
  expect_close(run_op("ClipByValueGrad", {g, cf}, clip(-1, 2))[0], make({6}, {0, 2, 3, 4, 0, 6}));
  // HardSigmoidGrad (alpha 0.5, beta 0.5: kinks at x = -1 and 1): g * alpha on the open interval.
  Tensor hf = make({6}, {-2, -1, 0, 0.5f, 1, 3});
  expect_close(run_op("HardSigmoidGrad", {g, hf}, Attrs().set("alpha", 0.5f).set("beta", 0.5f))[0],
               make({6}, {0, 0, 1.5f, 2, 0, 0}));
  // PReluGrad(g, x, slope [3]): dx = x > 0 ? g : g * slope (x = 0 takes the slope);
  // dslope = column sums of g * min(x, 0): {1*-1, 5*-5, 0}.
  Tensor pg = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor px = make({2, 3}, {-1, 2, 0, 4, -5, 6});
  for (const char* b : kBackends) {
    INFO(b);
    auto d = run_op("PReluGrad", {pg, px, make({3}, {0.1f, 0.2f, 0.3f})}, {}, b);
    expect_close(d[0], make({2, 3}, {0.1f, 2, 0.9f, 4, 1, 6}));
    expect_close(d[1], make({3}, {-1, -25, 0}));
  }
}

TEST_CASE("activations: gradients match finite differences and use the grad ops") {
  for (const char* b : kBackends) check_activation_gradients(b);
  // The forward op's gradient is its TF grad op, fed as TF feeds it.
  Graph g;
  Scope s(g);
  Output in = ops::placeholder(s, DType::kFloat32, {3}, "x");
  Output y = ops::sigmoid(s, in);
  Output dx = gradients(s, y, {in})[0];
  const Node& n = g.node(dx);
  CHECK(n.op == "SigmoidGrad");
  CHECK(n.inputs[0] == y);
  Output r = ops::relu(s, in);
  Output dr = gradients(s, r, {in})[0];
  CHECK(g.node(dr).op == "ReluGrad");
  CHECK(g.node(dr).inputs[1] == in);
  // Attributes travel to the grad op; Elu's gradient reads y.
  Output dl = gradients(s, ops::leaky_relu(s, in, 0.3f), {in})[0];
  CHECK(g.node(dl).op == "LeakyReluGrad");
  CHECK(g.node(dl).attrs.get_float("alpha") == doctest::Approx(0.3));
  Output e = ops::elu(s, in, 0.5f);
  Output de = gradients(s, e, {in})[0];
  CHECK(g.node(de).op == "EluGrad");
  CHECK(g.node(de).inputs[1] == e);
  CHECK(g.node(de).attrs.get_float("alpha") == doctest::Approx(0.5));
}

TEST_CASE("activations: oneDNN matches reference on awkward shapes") {
  std::vector<Shape> shapes = {{1}, {7}, {1, 1}, {3, 1, 5}, {2, 3, 1, 7}, {4, 17, 9}, {1, 33, 1, 3}, {5000}};
  uint64_t seed = 100;
  for (const Shape& shape : shapes) {
    INFO("shape " << shape.to_string());
    Tensor x = random_tensor(shape, ++seed, -8.0f, 8.0f);
    Tensor g = random_tensor(shape, ++seed, -1.0f, 1.0f);
    Tensor y01 = random_tensor(shape, ++seed, 0.0f, 1.0f);
    Tensor ym = random_tensor(shape, ++seed, -1.0f, 1.0f);
    for (std::string op : {"Relu", "Relu6", "Elu", "Sigmoid", "Tanh"})
      compare_backends(op, {x}, {}, "onednn", 1e-5, 1e-5);
    compare_backends("ReluGrad", {g, x}, {}, "onednn", 1e-6, 1e-6);
    compare_backends("Relu6Grad", {g, x}, {}, "onednn", 1e-6, 1e-6);
    compare_backends("EluGrad", {g, ym}, {}, "onednn", 1e-6, 1e-5);
    compare_backends("SigmoidGrad", {y01, g}, {}, "onednn", 1e-6, 1e-5);
    compare_backends("TanhGrad", {ym, g}, {}, "onednn", 1e-6, 1e-5);
    for (float a : {0.1f, -0.3f, 1.7f}) {
      compare_backends("LeakyRelu", {x}, alpha(a), "onednn", 1e-6, 1e-6);
      compare_backends("LeakyReluGrad", {g, x}, alpha(a), "onednn", 1e-6, 1e-6);
    }
    for (float a : {0.0f, 0.5f, 2.0f}) {
      compare_backends("Elu", {x}, alpha(a), "onednn", 1e-5, 1e-5);
      compare_backends("EluGrad", {g, ym}, alpha(a), "onednn", 1e-6, 1e-5);
    }
    compare_backends("HardSwish", {x}, {}, "onednn", 1e-5, 1e-5);
    compare_backends("HardSwishGrad", {g, x}, {}, "onednn", 1e-6, 1e-5);
    compare_backends("ClipByValue", {x}, clip(-1.5f, 2.25f), "onednn", 0, 0);
    compare_backends("ClipByValue", {x}, Attrs().set("min", 0.5f), "onednn", 0, 0);
    compare_backends("ClipByValue", {x}, Attrs().set("max", -0.5f), "onednn", 0, 0);
    compare_backends("ClipByValue", {x}, clip(1, 1), "onednn", 0, 0);
  }
}

TEST_CASE("PRelu: oneDNN matches reference for every slope pattern it maps; others fall back") {
  struct Case {
    Shape x, slope;
  };
  // Slope varying along one run of adjacent dims of x (channel-wise over an
  // [A, C, B] view), a scalar, or the whole tensor.
  std::vector<Case> cases = {{{2, 5, 5, 7}, {7}},       {{2, 5, 5, 7}, {1, 1, 7}}, {{3, 4, 5}, {4, 1}},
                             {{3, 4, 5}, {4, 5}},       {{3, 4, 5}, {3, 4, 5}},    {{3, 4, 5}, {}},
                             {{3, 4, 5}, {1, 1, 1}},    {{1, 9, 1, 3}, {9, 1, 3}}, {{6}, {6}},
                             {{2, 1, 3, 1}, {1, 3, 1}}, {{2, 3, 4, 5}, {3, 4, 1}}};
  uint64_t seed = 500;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " slope " << k.slope.to_string());
    Tensor x = random_tensor(k.x, ++seed, -2, 2);
    Tensor slope = random_tensor(k.slope, ++seed, -1, 1);
    Tensor g = random_tensor(k.x, ++seed);
    compare_backends("PRelu", {x, slope}, {}, "onednn", 1e-6, 1e-6);
    compare_backends("PReluGrad", {g, x, slope}, {}, "onednn", 1e-5, 1e-5);
  }
  // Slope varying along dims 0 and 2 of x, broadcast along dim 1: no [A, C, B] view.
  Tensor x = random_tensor({2, 3, 4}, 1);
  Tensor slope = random_tensor({2, 1, 4}, 2);
  CHECK(backend_used("PRelu", {x, slope}, {}) == "reference");
  CHECK(backend_used("PReluGrad", {x, x, slope}, {}) == "reference");
  expect_close(run_op("PRelu", {x, slope}, {}, "onednn")[0], run_op("PRelu", {x, slope})[0]);
}

TEST_CASE("activations: oneDNN kernel is the one selected for float32") {
  Graph g;
  Scope s(g);
  Output in = ops::placeholder(s, DType::kFloat32, {2, 3}, "x");
  ops::relu(s, in, "r");
  Output t = ops::tanh(s, in, "t");
  Session session(g, nullptr, {&find_backend("onednn")});
  session.run({{in, random_tensor({2, 3}, 1)}}, {t, g.tensor("r")});
  auto used = session.last_kernels();
  CHECK(used.at("r") == "onednn");
  CHECK(used.at("t") == "onednn");
  // Zero elements fall back to reference.
  Graph g2;
  Scope s2(g2);
  Output e = ops::placeholder(s2, DType::kFloat32, {0, 3}, "e");
  Output re = ops::relu(s2, e, "r");
  Session s2sess(g2, nullptr, {&find_backend("onednn")});
  CHECK(s2sess.run({{e, Tensor::zeros(DType::kFloat32, {0, 3})}}, {re})[0].shape() == Shape{0, 3});
  CHECK(s2sess.last_kernels().at("r") == "reference");
}

TEST_CASE("activations reject non-float inputs") {
  Graph g;
  Scope s(g);
  Output i = ops::placeholder(s, DType::kInt32, {2}, "i");
  CHECK_THROWS_AS(ops::relu(s, i), Error);
  Output a = ops::placeholder(s, DType::kFloat32, {2}, "a");
  Output b = ops::placeholder(s, DType::kFloat32, {3}, "b");
  CHECK_THROWS_AS(ops::relu_grad(s, a, b), Error);
  CHECK_THROWS_AS(ops::prelu(s, i, a), Error);
}

TEST_CASE("activations: bad attributes and slopes name the node and the value") {
  expect_build_error("Elu", {{3}}, alpha(-0.5f), "alpha = -0.5");
  expect_build_error("EluGrad", {{3}, {3}}, alpha(-1), "must be >= 0");
  expect_build_error("ClipByValue", {{3}}, Attrs().set("min", std::nan("")), "min is NaN");
  expect_build_error("PRelu", {{2, 3}, {2}}, {}, "does not broadcast");
  expect_build_error("PRelu", {{3}, {1, 3}}, {}, "does not broadcast");
  expect_build_error("PReluGrad", {{2, 3}, {2, 3}, {3, 3}}, {}, "slope float32[3,3]");
  expect_build_error("LeakyRelu", {{3}}, Attrs().set("alpha", "x"), "alpha");
}

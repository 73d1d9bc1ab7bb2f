#include <doctest/doctest.h>

#include <cmath>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/activation.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {
const char* const kBackends[] = {"reference", "onednn"};
}

TEST_CASE("activations: hand-computed values on both backends") {
  Tensor x = make({6}, {-2, -0.5f, 0, 0.5f, 3, 7});
  for (const char* b : kBackends) {
    INFO(b);
    expect_close(run_op("Relu", {x}, {}, b)[0], make({6}, {0, 0, 0, 0.5f, 3, 7}));
    expect_close(run_op("Relu6", {x}, {}, b)[0], make({6}, {0, 0, 0, 0.5f, 3, 6}));
    expect_close(run_op("Elu", {x}, {}, b)[0],
                 make({6}, {std::exp(-2.0f) - 1, std::exp(-0.5f) - 1, 0, 0.5f, 3, 7}));
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
    expect_close(run_op("SigmoidGrad", {y, g}, {}, b)[0], make({6}, {0.25f, 0.18f, 0.27f, 0, 0, 1.125f}), 1e-5,
                 1e-4);
    expect_close(run_op("TanhGrad", {y, g}, {}, b)[0], make({6}, {0.75f, 1.98f, 0.57f, 4, 0, 5.625f}), 1e-5, 1e-4);
  }
}

TEST_CASE("activations: gradients match finite differences and use the grad ops") {
  // Keep clear of the kinks at 0 and 6 by more than the finite-difference step.
  Tensor x = make({2, 4}, {-2.5f, -0.7f, -0.1f, 0.2f, 0.9f, 3.3f, 6.5f, 8.0f});
  for (const char* b : kBackends) {
    for (std::string op : {"Relu", "Relu6", "Elu", "Sigmoid", "Tanh"}) {
      INFO(op << " on " << b);
      hub::testing::GradCheckOptions o;
      o.backend = b;
      o.step = 1e-3;
      check_gradients(op, {x}, {}, o);
    }
  }
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
  }
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
}

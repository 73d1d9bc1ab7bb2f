#include "hub/ops/batch_norm.h"

#include <doctest/doctest.h>

#include <cmath>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "hub/ops/variables.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {
Attrs bn(bool training, float eps = 0.001f) { return Attrs().set("epsilon", eps).set("is_training", training); }

// Channel 0: 1,2,3,4 (mean 2.5, biased var 1.25, unbiased 5/3);
// channel 1: 0,0,4,4 (mean 2, biased var 4, unbiased 16/3).
Tensor x42() { return make({4, 2}, {1, 0, 2, 0, 3, 4, 4, 4}); }
Tensor scale2() { return make({2}, {2, 1}); }
Tensor offset2() { return make({2}, {0.5f, -1}); }

}  // namespace

TEST_CASE("FusedBatchNorm: training uses batch statistics") {
  auto out = run_op("FusedBatchNorm", {x42(), scale2(), offset2(), make({2}, {100, 100}), make({2}, {7, 7})}, bn(true));
  // y = scale * (x - mu) / sqrt(var_biased + 0.001) + offset
  expect_close(out[0], make({4, 2}, {-2.18220890f, -1.99987502f, -0.39406963f, -1.99987502f, 1.39406963f, -0.00012498f,
                                     3.18220890f, -0.00012498f}));
  expect_close(out[1], make({2}, {2.5f, 2}));
  expect_close(out[2], make({2}, {1.25f, 4}));             // the variance used (biased)
  expect_close(out[3], make({2}, {5.0f / 3, 16.0f / 3}));  // Bessel-corrected
  // Same data as [N,H,W,C] = [1,2,2,2]: identical statistics over N*H*W.
  auto out4 =
      run_op("FusedBatchNorm",
             {x42().reshaped({1, 2, 2, 2}), scale2(), offset2(), make({2}, {0, 0}), make({2}, {1, 1})}, bn(true));
  expect_close(out4[0], out[0].reshaped({1, 2, 2, 2}));
  expect_close(out4[3], out[3]);
}

TEST_CASE("FusedBatchNorm: inference uses the given mean and variance") {
  Tensor mean = make({2}, {1, 0}), var = make({2}, {4, 1});
  auto out = run_op("FusedBatchNorm", {x42(), scale2(), offset2(), mean, var}, bn(false));
  expect_close(out[0], make({4, 2}, {0.5f, -1, 1.49987502f, -1, 2.49975005f, 2.99800150f, 3.49962507f, 2.99800150f}));
  expect_close(out[1], mean);
  expect_close(out[2], var);
  expect_close(out[3], var);
}

TEST_CASE("FusedBatchNormGrad: hand-computed values") {
  Tensor ones = make({4, 2}, {1, 1, 1, 1, 1, 1, 1, 1});
  // Inference: dx = dy * scale / sqrt(var + eps); dscale = sum dy * (x - mean) / sqrt(var + eps).
  auto gi = run_op("FusedBatchNormGrad", {ones, x42(), scale2(), make({2}, {1, 0}), make({2}, {4, 1})}, bn(false));
  expect_close(gi[0], make({4, 2}, {0.99987502f, 0.99950037f, 0.99987502f, 0.99950037f, 0.99987502f, 0.99950037f,
                                    0.99987502f, 0.99950037f}));
  expect_close(gi[1], make({2}, {2.99962502f, 7.99600300f}));
  expect_close(gi[2], make({2}, {4, 4}));
  // Training: a constant dy is absorbed by the mean; sum of xhat is zero.
  auto gt =
      run_op("FusedBatchNormGrad", {ones, x42(), scale2(), make({2}, {2.5f, 2}), make({2}, {1.25f, 4})}, bn(true));
  expect_close(gt[0], Tensor::zeros(DType::kFloat32, {4, 2}), 1e-5);
  expect_close(gt[1], make({2}, {0, 0}), 1e-5);
  expect_close(gt[2], make({2}, {4, 4}));
}

TEST_CASE("FusedBatchNorm: gradients match finite differences") {
  GradCheckOptions o;
  o.inputs = {0, 1, 2};  // mean/variance get no gradient (as in TF)
  o.step = 1e-3;
  Tensor scale = random_tensor({3}, 2, 0.5f, 1.5f), offset = random_tensor({3}, 3);
  Tensor mean = random_tensor({3}, 4), var = random_tensor({3}, 5, 0.5f, 2.0f);
  for (bool training : {true, false}) {
    INFO("is_training " << training);
    check_gradients("FusedBatchNorm", {random_tensor({2, 3, 2, 3}, 1), scale, offset, mean, var}, bn(training), o);
    check_gradients("FusedBatchNorm", {random_tensor({5, 3}, 6), scale, offset, mean, var}, bn(training), o);
  }
}

TEST_CASE("FusedBatchNorm: oneDNN matches reference, forward and backward") {
  std::vector<Shape> shapes = {{2, 3, 4, 5}, {1, 1, 1, 1}, {7, 3}, {3, 5, 1, 17}, {1, 9, 7, 64}, {2, 1}};
  uint64_t seed = 30;
  for (const Shape& shape : shapes) {
    int64_t C = shape.dim(-1);
    Tensor x = random_tensor(shape, ++seed, -2, 3);
    Tensor scale = random_tensor({C}, ++seed, 0.5f, 1.5f), offset = random_tensor({C}, ++seed);
    Tensor mean = random_tensor({C}, ++seed), var = random_tensor({C}, ++seed, 0.5f, 2);
    Tensor dy = random_tensor(shape, ++seed);
    for (bool training : {true, false}) {
      INFO("shape " << shape.to_string() << " is_training " << training);
      compare_backends("FusedBatchNorm", {x, scale, offset, mean, var}, bn(training), "onednn");
      auto fwd = run_op("FusedBatchNorm", {x, scale, offset, mean, var}, bn(training));
      compare_backends("FusedBatchNormGrad", {dy, x, scale, fwd[1], fwd[2]}, bn(training), "onednn", 2e-4, 2e-4);
      CHECK(backend_used("FusedBatchNorm", {x, scale, offset, mean, var}, bn(training)) == "onednn");
      CHECK(backend_used("FusedBatchNormGrad", {dy, x, scale, fwd[1], fwd[2]}, bn(training)) == "onednn");
    }
  }
}

TEST_CASE("batch_norm: slim variables, and moving averages updated through kUpdateOps") {
  Graph graph;
  Scope s(graph);
  Output x = ops::placeholder(s, DType::kFloat32, Shape{kUnknownDim, 2}, "x");
  ops::BatchNormOptions o;
  o.decay = 0.9f;
  o.scale = true;
  Output y = ops::batch_norm(s.sub("fc"), x, o);
  for (const char* name :
       {"fc/BatchNorm/beta", "fc/BatchNorm/gamma", "fc/BatchNorm/moving_mean", "fc/BatchNorm/moving_variance"})
    CHECK_MESSAGE(graph.find(name).has_value(), name);
  std::vector<std::string> trainable;
  for (int id : graph.variables(true)) trainable.push_back(graph.node(id).name);
  CHECK(trainable == std::vector<std::string>{"fc/BatchNorm/beta", "fc/BatchNorm/gamma"});
  const auto& updates = graph.collection(kUpdateOps);
  REQUIRE(updates.size() == 2);
  std::vector<Output> targets;
  for (const std::string& n : updates) targets.push_back(graph.tensor(n));

  VariableStore vars;
  vars.initialize(graph);
  expect_close(vars.at("fc/BatchNorm/moving_mean"), make({2}, {0, 0}));
  expect_close(vars.at("fc/BatchNorm/moving_variance"), make({2}, {1, 1}));
  Session session(graph, &vars, {&find_backend("reference")});
  Tensor out = session.run({{x, x42()}}, {y}, targets)[0];
  // gamma = 1, beta = 0: y = (x - mu) / sqrt(var_biased + 0.001).
  CHECK(out.data<float>()[0] == doctest::Approx(-1.5 / std::sqrt(1.251)).epsilon(1e-5));
  // mean <- 0*0.9 + [2.5, 2]*0.1; variance <- 1*0.9 + [5/3, 16/3]*0.1 (unbiased).
  expect_close(vars.at("fc/BatchNorm/moving_mean"), make({2}, {0.25f, 0.2f}));
  expect_close(vars.at("fc/BatchNorm/moving_variance"), make({2}, {1.06666667f, 1.43333333f}));
  session.run({{x, x42()}}, {y}, targets);
  // Second step: 0.25*0.9 + 0.25 = 0.475; 0.2*0.9 + 0.2 = 0.38;
  // 1.0666667*0.9 + 0.1666667 = 1.1266667; 1.4333333*0.9 + 0.5333333 = 1.8233333.
  expect_close(vars.at("fc/BatchNorm/moving_mean"), make({2}, {0.475f, 0.38f}));
  expect_close(vars.at("fc/BatchNorm/moving_variance"), make({2}, {1.12666667f, 1.82333333f}));

  // Without the update targets nothing moves.
  session.run({{x, x42()}}, {y});
  expect_close(vars.at("fc/BatchNorm/moving_mean"), make({2}, {0.475f, 0.38f}));
}

TEST_CASE("batch_norm: inference normalizes with the moving statistics and adds no update") {
  Graph graph;
  Scope s(graph);
  Output x = ops::placeholder(s, DType::kFloat32, Shape{kUnknownDim, 1, 2, 2}, "x");
  ops::BatchNormOptions o;
  o.is_training = false;  // center only (slim default): beta, no gamma
  Output y = ops::batch_norm(s, x, o);
  CHECK(graph.collection(kUpdateOps).empty());
  CHECK_FALSE(graph.find("BatchNorm/gamma").has_value());
  VariableStore vars;
  vars.initialize(graph);
  vars.assign("BatchNorm/moving_mean", make({2}, {1, 0}));
  vars.assign("BatchNorm/moving_variance", make({2}, {4, 1}));
  vars.assign("BatchNorm/beta", make({2}, {0.5f, -1}));
  Session session(graph, &vars, {&find_backend("reference")});
  Tensor out = session.run_one({{x, make({1, 1, 2, 2}, {3, 4, 5, 0})}}, y);
  // (3-1)/sqrt(4.001)+0.5, (4-0)/sqrt(1.001)-1, (5-1)/sqrt(4.001)+0.5, -1
  expect_close(out, make({1, 1, 2, 2}, {1.49987502f, 2.99800150f, 2.49975005f, -1}));

  // The training graph's gradient reaches beta and gamma (not the moving stats).
  Graph g2;
  Scope s2(g2);
  Output x2 = ops::placeholder(s2, DType::kFloat32, Shape{4, 2}, "x");
  ops::BatchNormOptions t;
  t.scale = true;
  Output y2 = ops::batch_norm(s2, x2, t);
  auto grads = gradients(s2, y2, {g2.tensor("BatchNorm/beta"), g2.tensor("BatchNorm/gamma")},
                         ops::constant(s2, make({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), "dy"));
  VariableStore v2;
  v2.initialize(g2);
  Session s2run(g2, &v2, {&find_backend("reference")});
  auto gv = s2run.run({{x2, x42()}}, grads);
  expect_close(gv[0], make({2}, {16, 20}));  // doffset = column sums of dy
  // dscale = sum dy * xhat; channel 0: xhat = (x-2.5)/sqrt(1.251), dy = 1,3,5,7.
  float d0 = static_cast<float>((1 * -1.5 + 3 * -0.5 + 5 * 0.5 + 7 * 1.5) / std::sqrt(1.251));
  float d1 = static_cast<float>((2 * -2 + 4 * -2 + 6 * 2 + 8 * 2) / std::sqrt(4.001));
  expect_close(gv[1], make({2}, {d0, d1}), 1e-4);
}

TEST_CASE("batch_norm: bad input") {
  Graph graph;
  Scope s(graph);
  Output x3 = ops::placeholder(s, DType::kFloat32, Shape{2, 3, 4}, "x3");
  CHECK_THROWS_AS(ops::batch_norm(s, x3), Error);
  Output xu = ops::placeholder(s, DType::kFloat32, Shape{2, kUnknownDim}, "xu");
  CHECK_THROWS_AS(ops::batch_norm(s, xu), Error);
  Output x = ops::placeholder(s, DType::kFloat32, Shape{2, 3}, "x");
  Output c2 = ops::constant(s, make({2}, {1, 1}), "c2");
  Output c3 = ops::constant(s, make({3}, {1, 1, 1}), "c3");
  try {
    ops::fused_batch_norm(s, x, c3, c2, c3, c3, 0.001f, true, "bn");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    std::string m = e.what();
    CHECK_MESSAGE(m.find("'bn'") != std::string::npos, m);
    CHECK_MESSAGE(m.find("offset") != std::string::npos, m);
  }
  ops::batch_norm(s.sub("a"), x);
  CHECK_THROWS_AS(ops::batch_norm(s.sub("a"), x), Error);  // AlreadyExists: one BatchNorm per scope
}

// The fused ops against the ops they replace (hub/ops/batch_norm.h), the
// composition run both on reference and on oneDNN (an independent batch
// norm and activation): awkward shapes, both modes, Relu and Relu6, and x
// spread so that y falls below 0, inside (0, 6) and above 6.
TEST_CASE("_FusedBatchNormActivation and its gradient equal batch norm then the activation") {
  const std::vector<Shape> shapes = {{2, 3, 4, 5},  {1, 1, 1, 1}, {7, 3},       {3, 5, 1, 17},
                                     {1, 9, 7, 64}, {2, 1},       {4, 2, 3, 33}};
  uint64_t seed = 70;
  for (const Shape& shape : shapes) {
    const int64_t C = shape.dim(-1);
    Tensor x = random_tensor(shape, ++seed, -2, 3);
    Tensor scale = random_tensor({C}, ++seed, 1.0f, 5.0f), offset = random_tensor({C}, ++seed, -1.0f, 4.0f);
    Tensor mean = random_tensor({C}, ++seed), var = random_tensor({C}, ++seed, 0.1f, 1);
    Tensor dz = random_tensor(shape, ++seed);
    for (const char* act : {"Relu6", "Relu"}) {
      for (bool training : {true, false}) {
        for (const char* backend : {"reference", "onednn"}) {
          INFO("shape " << shape.to_string() << " " << act << " is_training " << training << " composition on "
                        << backend);
          Attrs fused = bn(training).set("activation", act);
          auto bn_out = run_op("FusedBatchNorm", {x, scale, offset, mean, var}, bn(training), backend);
          Tensor z = run_op(act, {bn_out[0]}, {}, backend)[0];
          auto f = run_op("_FusedBatchNormActivation", {x, scale, offset, mean, var}, fused);
          expect_close(f[0], z, 1e-4, 1e-4);
          for (int i = 1; i < 4; ++i) expect_close(f[i], bn_out[i], 1e-5, 1e-5);
          // Gradient: the activation's gradient at y, then batch norm's.
          Tensor g = run_op(std::string(act) + "Grad", {dz, bn_out[0]}, {}, backend)[0];
          auto want = run_op("FusedBatchNormGrad", {g, x, scale, bn_out[1], bn_out[2]}, bn(training), backend);
          // features = y (the activation's input) or z (its output): the same mask.
          for (const Tensor& features : {bn_out[0], z}) {
            auto got = run_op("_FusedBatchNormActivationGrad", {dz, features, x, scale, bn_out[1], bn_out[2]}, fused);
            for (int i = 0; i < 3; ++i) expect_close(got[i], want[i], 2e-4, 2e-4);
          }
        }
      }
    }
  }
}

TEST_CASE("_FusedBatchNormActivation: bad attributes and shapes") {
  Tensor x = random_tensor({4, 3}, 1), c3 = random_tensor({3}, 2, 0.5f, 1), c2 = random_tensor({2}, 3, 0.5f, 1);
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedBatchNormActivation", {x, c3, c3, c3, c3}, bn(true).set("activation", "Tanh"));
      },
      "activation must be Relu or Relu6, got 'Tanh'");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedBatchNormActivationGrad", {x, random_tensor({4, 2}, 4), x, c3, c3, c3},
               bn(true).set("activation", "Relu"));
      },
      "features");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedBatchNormActivationGrad", {x, x, x, c2, c3, c3}, bn(true).set("activation", "Relu"));
      },
      "scale");
}

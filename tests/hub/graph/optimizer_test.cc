#include "hub/graph/optimizer.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "hub/graph/session.h"
#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/matmul.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using hub::testing::expect_close;
using hub::testing::make;

namespace {

const std::vector<float> kW0 = {1.0f, 2.0f, -0.5f};
const std::vector<float> kG1 = {0.5f, -1.0f, 0.2f};
const std::vector<float> kG2 = {1.0f, 1.0f, -0.3f};

// Runs two steps of `name` on a variable "w" = kW0 with gradients kG1, kG2.
std::vector<float> two_steps(const std::string& name, const LearningRateSchedule& lr, const OptimizerOptions& o = {}) {
  VariableStore vars;
  vars.set("w", make({3}, kW0));
  auto opt = make_optimizer(name, lr, o);
  opt->apply_gradients(vars, {{"w", make({3}, kG1)}});
  opt->apply_gradients(vars, {{"w", make({3}, kG2)}});
  CHECK(opt->global_step() == 2);
  return vars.at("w").to_vector<float>();
}

// Independent scalar reference: applies `step(w, g, step_number)` per element
// in double precision for both steps.
std::vector<float> by_hand(const std::function<double(int elem, double w, double g, int t)>& step) {
  std::vector<float> out;
  for (int i = 0; i < 3; ++i) {
    double w = kW0[i];
    w = step(i, w, kG1[i], 1);
    w = step(i, w, kG2[i], 2);
    out.push_back(static_cast<float>(w));
  }
  return out;
}

void expect_vec(const std::vector<float>& got, const std::vector<float>& want, double tol = 2e-6) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK_MESSAGE(std::fabs(got[i] - want[i]) <= tol, "element " << i << ": got " << got[i] << ", want " << want[i]);
}

const auto kLr = LearningRateSchedule::fixed(0.1);

}  // namespace

TEST_CASE("sgd and momentum: hand-computed two steps") {
  // w - 0.1*g1 - 0.1*g2
  expect_vec(two_steps("sgd", kLr), {0.85f, 2.0f, -0.49f});
  // a1 = g1, w1 = w0 - 0.1*a1; a2 = 0.9*a1 + g2, w2 = w1 - 0.1*a2
  //   elem 0: a2 = 1.45, w2 = 0.95 - 0.145 = 0.805
  //   elem 1: a2 = 0.1,  w2 = 2.1 - 0.01 = 2.09
  //   elem 2: a2 = -0.12, w2 = -0.52 + 0.012 = -0.508
  expect_vec(two_steps("momentum", kLr), {0.805f, 2.09f, -0.508f});
  // Nesterov: w -= lr*g + lr*momentum*a
  //   elem 0: w1 = 1 - (0.05 + 0.045) = 0.905; w2 = 0.905 - (0.1 + 0.1305) = 0.6745
  //   elem 1: w1 = 2 + 0.1 + 0.09 = 2.19;      w2 = 2.19 - (0.1 + 0.009) = 2.081
  //   elem 2: w1 = -0.5 - 0.02 - 0.018 = -0.538; w2 = -0.538 + 0.03 + 0.0108 = -0.4972
  OptimizerOptions nesterov;
  nesterov.use_nesterov = true;
  expect_vec(two_steps("momentum", kLr, nesterov), {0.6745f, 2.081f, -0.4972f});
  // Another momentum value.
  OptimizerOptions m5;
  m5.momentum = 0.5;
  double a = 0;
  std::vector<float> want = by_hand([&](int, double w, double g, int t) {
    if (t == 1) a = 0;
    a = 0.5 * a + g;
    return w - 0.1 * a;
  });
  expect_vec(two_steps("momentum", kLr, m5), want);
}

TEST_CASE("rmsprop (slim defaults: decay 0.9, momentum 0.9, epsilon 1)") {
  // ms starts at 1. elem 0: ms1 = 0.925, mom1 = 0.05/sqrt(1.925) = 0.0360375, w1 = 0.9639625;
  // ms2 = 0.9325, mom2 = 0.0324338 + 0.1/sqrt(1.9325) = 0.1043688, w2 = 0.8595937.
  // elem 1: ms stays 1, mom1 = -0.1/sqrt(2), w1 = 2.0707107; mom2 = 0.1*(1 - 0.9)/sqrt(2), w2 = 2.0636396.
  std::vector<float> got = two_steps("rmsprop", kLr);
  expect_vec({got[0], got[1]}, {0.8595937f, 2.0636396f}, 1e-6);
  double ms = 1, mom = 0;
  std::vector<float> want = by_hand([&](int, double w, double g, int t) {
    if (t == 1) ms = 1, mom = 0;
    ms += (g * g - ms) * (1 - 0.9);
    mom = 0.9 * mom + 0.1 * g / std::sqrt(ms + 1.0);
    return w - mom;
  });
  expect_vec(got, want);
}

TEST_CASE("adam (slim defaults: beta1 0.9, beta2 0.999, epsilon 1)") {
  auto adam_ref = [](double b1, double b2, double eps) {
    double m = 0, v = 0;
    return by_hand([=](int, double w, double g, int t) mutable {
      if (t == 1) m = 0, v = 0;
      double lr_t = 0.1 * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
      m = b1 * m + (1 - b1) * g;
      v = b2 * v + (1 - b2) * g * g;
      return w - lr_t * m / (std::sqrt(v) + eps);
    });
  };
  // Step 1, elem 0 by hand: lr_t = 0.1*sqrt(0.001)/0.1 = 0.0316228, m = 0.05,
  // v = 0.00025, w1 = 1 - 0.0316228*0.05/(1 + 0.0158114) = 0.9984435.
  VariableStore vars;
  vars.set("w", make({3}, kW0));
  auto opt = make_optimizer("adam", kLr);
  opt->apply_gradients(vars, {{"w", make({3}, kG1)}});
  CHECK(vars.at("w").to_vector<float>()[0] == doctest::Approx(0.9984435).epsilon(1e-6));
  expect_vec(two_steps("adam", kLr), adam_ref(0.9, 0.999, 1.0));
  OptimizerOptions small_eps;
  small_eps.opt_epsilon = 1e-8;
  small_eps.adam_beta1 = 0.8;
  expect_vec(two_steps("adam", kLr, small_eps), adam_ref(0.8, 0.999, 1e-8), 1e-5);
}

TEST_CASE("adagrad (initial accumulator 0.1)") {
  // elem 0: acc1 = 0.35, w1 = 1 - 0.05/sqrt(0.35) = 0.9154846; acc2 = 1.35, w2 = 0.9154846 - 0.1/sqrt(1.35) = 0.8294183
  // elem 1: acc1 = 1.1, w1 = 2 + 0.1/sqrt(1.1) = 2.0953463; acc2 = 2.1, w2 = 2.0953463 - 0.1/sqrt(2.1) = 2.0263397
  std::vector<float> got = two_steps("adagrad", kLr);
  expect_vec({got[0], got[1]}, {0.8294183f, 2.0263397f}, 1e-6);
  double acc = 0;
  expect_vec(got, by_hand([&](int, double w, double g, int t) {
               if (t == 1) acc = 0.1;
               acc += g * g;
               return w - 0.1 * g / std::sqrt(acc);
             }));
}

TEST_CASE("adadelta (rho 0.95, epsilon 1)") {
  double acc = 0, acc_u = 0;
  std::vector<float> want = by_hand([&](int, double w, double g, int t) {
    if (t == 1) acc = 0, acc_u = 0;
    acc = 0.95 * acc + 0.05 * g * g;
    double u = std::sqrt(acc_u + 1.0) / std::sqrt(acc + 1.0) * g;
    acc_u = 0.95 * acc_u + 0.05 * u * u;
    return w - 0.1 * u;
  });
  expect_vec(two_steps("adadelta", kLr), want);
}

TEST_CASE("ftrl (learning_rate_power -0.5, initial accumulator 0.1, l1 = l2 = 0; and with l1, l2, other power)") {
  auto ftrl_ref = [](double p, double l1, double l2) {
    double n = 0, z = 0;
    return by_hand([=](int, double w, double g, int t) mutable {
      if (t == 1) n = 0.1, z = 0;
      double n2 = n + g * g;
      z += g - (std::pow(n2, -p) - std::pow(n, -p)) / 0.1 * w;
      n = n2;
      if (std::fabs(z) <= l1) return 0.0;
      double sign = z > 0 ? 1.0 : -1.0;
      return (l1 * sign - z) / (std::pow(n, -p) / 0.1 + 2 * l2);
    });
  };
  expect_vec(two_steps("ftrl", kLr), ftrl_ref(-0.5, 0, 0), 1e-5);
  // elem 0 step 1 by hand: n' = 0.35, z = 0.5 - (sqrt(0.35) - sqrt(0.1))/0.1*1 = 0.5 - 2.75380 = -2.25380,
  // w1 = 2.25380/(sqrt(0.35)/0.1) = 0.380962.
  VariableStore vars;
  vars.set("w", make({3}, kW0));
  auto opt = make_optimizer("ftrl", kLr);
  opt->apply_gradients(vars, {{"w", make({3}, kG1)}});
  CHECK(vars.at("w").to_vector<float>()[0] == doctest::Approx(0.380962).epsilon(1e-5));
  OptimizerOptions o;
  o.ftrl_l1 = 0.3;
  o.ftrl_l2 = 0.2;
  o.ftrl_learning_rate_power = -0.7;
  std::vector<float> got = two_steps("ftrl", kLr, o);
  expect_vec(got, ftrl_ref(-0.7, 0.3, 0.2), 1e-5);
}

TEST_CASE("optimizers use the schedule's rate at the current global step") {
  // lr 0.1 at step 0, 0.05 at step 1: w = 1 - 0.1*0.5 - 0.05*1 = 0.9
  auto lr = LearningRateSchedule::exponential(0.1, 1, 0.5, true);
  expect_vec({two_steps("sgd", lr)[0]}, {0.9f});
}

TEST_CASE("optimizer factory, validation, and nothing changes on error") {
  CHECK_THROWS_WITH_AS(make_optimizer("adamw", kLr), doctest::Contains("unknown optimizer 'adamw'"), Error);
  CHECK_THROWS_WITH_AS(make_optimizer("adamw", kLr), doctest::Contains("rmsprop"), Error);
  OptimizerOptions bad;
  bad.adagrad_initial_accumulator_value = 0;
  CHECK_THROWS_AS(make_optimizer("adagrad", kLr, bad), Error);
  CHECK(make_optimizer("sgd", kLr)->name() == "GradientDescent");
  CHECK(make_optimizer("rmsprop", kLr)->name() == "RMSProp");

  VariableStore vars;
  vars.set("a", make({2}, {1, 2}));
  vars.set("b", make({3}, {1, 2, 3}));
  auto opt = make_optimizer("momentum", kLr);
  try {
    opt->apply_gradients(vars, {{"a", make({2}, {1, 1})}, {"b", make({2}, {1, 1})}});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK(std::string(e.what()).find("'b'") != std::string::npos);
  }
  CHECK(vars.at("a").to_vector<float>() == std::vector<float>{1, 2});  // untouched
  CHECK(opt->global_step() == 0);
  CHECK_THROWS_AS(opt->apply_gradients(vars, {{"c", make({2}, {1, 1})}}), Error);
}

TEST_CASE("optimizer state: slot names, save and restore") {
  VariableStore vars;
  vars.set("net/w", make({3}, kW0));
  auto opt = make_optimizer("adam", kLr);
  opt->apply_gradients(vars, {{"net/w", make({3}, kG1)}});
  opt->apply_gradients(vars, {{"net/w", make({3}, kG2)}});
  auto st = opt->state();
  CHECK(st.count("net/w/Adam") == 1);
  CHECK(st.count("net/w/Adam_1") == 1);
  CHECK(st.at("global_step").item<int64_t>() == 2);
  // As TF: the powers start at beta and are multiplied after each step.
  CHECK(st.at("beta1_power").item<float>() == doctest::Approx(0.729));
  CHECK(st.at("beta2_power").item<float>() == doctest::Approx(0.997003));
  // m after two steps = 0.1*0.9*g1 + 0.1*g2
  CHECK(st.at("net/w/Adam").to_vector<float>()[0] == doctest::Approx(0.1 * 0.9 * 0.5 + 0.1 * 1.0));

  // A fresh optimizer loaded with the state continues identically.
  VariableStore vars2;
  vars2.set("net/w", vars.at("net/w").clone());
  auto opt2 = make_optimizer("adam", kLr);
  opt2->load_state(st);
  CHECK(opt2->global_step() == 2);
  Tensor g3 = make({3}, {-0.4f, 0.3f, 0.9f});
  opt->apply_gradients(vars, {{"net/w", g3}});
  opt2->apply_gradients(vars2, {{"net/w", g3}});
  CHECK(identical(vars.at("net/w"), vars2.at("net/w")));

  auto mom = make_optimizer("momentum", kLr);
  CHECK_THROWS_WITH_AS(mom->load_state(st), doctest::Contains("Momentum optimizer state"), Error);
  auto slots_only = st;
  slots_only.erase("beta1_power");
  slots_only.erase("beta2_power");
  CHECK_THROWS_WITH_AS(mom->load_state(slots_only), doctest::Contains("net/w/Adam"), Error);
  mom->apply_gradients(vars, {{"net/w", g3}});
  CHECK(mom->slot("net/w", "Momentum").to_vector<float>() == g3.to_vector<float>());
  CHECK(make_optimizer("rmsprop", kLr)->state().size() == 1);  // global_step only before any step
}

TEST_CASE("learning rate schedules: hand values") {
  CHECK(LearningRateSchedule::fixed(0.01).at(12345) == doctest::Approx(0.01));
  auto stair = LearningRateSchedule::exponential(0.1, 10, 0.5, true);
  CHECK(stair.at(0) == doctest::Approx(0.1));
  CHECK(stair.at(9) == doctest::Approx(0.1));
  CHECK(stair.at(10) == doctest::Approx(0.05));
  CHECK(stair.at(25) == doctest::Approx(0.025));
  auto smooth = LearningRateSchedule::exponential(0.1, 10, 0.5, false);
  CHECK(smooth.at(5) == doctest::Approx(0.0707107));
  CHECK(smooth.at(15) == doctest::Approx(0.0353553));
  auto poly = LearningRateSchedule::polynomial(0.1, 10, 0.01);
  CHECK(poly.at(0) == doctest::Approx(0.1));
  CHECK(poly.at(5) == doctest::Approx(0.055));
  CHECK(poly.at(10) == doctest::Approx(0.01));
  CHECK(poly.at(20) == doctest::Approx(0.01));
  CHECK(LearningRateSchedule::polynomial(0.1, 10, 0.01, 2.0).at(5) == doctest::Approx(0.0325));
  auto cyc = LearningRateSchedule::polynomial(0.1, 10, 0.01, 1.0, true);
  CHECK(cyc.at(0) == doctest::Approx(0.1));
  CHECK(cyc.at(15) == doctest::Approx(0.0325));  // decay_steps becomes 20
  CHECK(cyc.at(20) == doctest::Approx(0.01));
  // slim defaults: exponential, factor 0.94, 2 epochs per decay, staircase.
  LearningRateSchedule slim;
  slim.type = "exponential";
  slim.decay_steps = slim_decay_steps(1000, 32, 2.0);
  CHECK(slim.decay_steps == 62);
  CHECK(slim.at(124) == doctest::Approx(0.01 * 0.94 * 0.94));
  CHECK(slim_decay_steps(50000, 32) == 3125);
  LearningRateSchedule bad;
  bad.type = "cosine";
  CHECK_THROWS_WITH_AS(bad.at(0), doctest::Contains("'cosine'"), Error);
  CHECK_THROWS_AS(LearningRateSchedule::exponential(0.1, 0, 0.5).at(1), Error);
}

TEST_CASE("ExponentialMovingAverage: hand values, num_updates, swap") {
  VariableStore vars;
  vars.set("w", make({2}, {1, 2}));
  ExponentialMovingAverage ema(0.9);
  ema.track(vars, {"w"});
  vars.assign("w", make({2}, {2, 0}));
  ema.apply(vars, {"w"});
  // 1 - 0.1*(1 - 2) = 1.1; 2 - 0.1*(2 - 0) = 1.8
  expect_close(ema.average("w"), make({2}, {1.1f, 1.8f}));
  vars.assign("w", make({2}, {3, 1}));
  ema.apply(vars, {"w"}, 0);  // decay min(0.9, 1/10) = 0.1
  // 1.1 - 0.9*(1.1 - 3) = 2.81; 1.8 - 0.9*(1.8 - 1) = 1.08
  expect_close(ema.average("w"), make({2}, {2.81f, 1.08f}));
  ema.apply(vars, {"w"}, 90);  // min(0.9, 91/100) = 0.9: 2.81 - 0.1*(2.81-3) = 2.829
  expect_close(ema.average("w"), make({2}, {2.829f, 1.08f - 0.1f * 0.08f}));
  {
    ExponentialMovingAverage::Swapped swapped(ema, vars);
    expect_close(vars.at("w"), ema.average("w"));
    CHECK_THROWS_AS(ema.swap_in(vars), Error);
  }
  expect_close(vars.at("w"), make({2}, {3, 1}));
  auto st = ema.state();
  REQUIRE(st.count("w/ExponentialMovingAverage") == 1);
  ExponentialMovingAverage other(0.9);
  other.load_state(st);
  expect_close(other.average("w"), ema.average("w"));
  CHECK_THROWS_AS(other.load_state({{"w/Adam", make({2}, {0, 0})}}), Error);
  CHECK_THROWS_AS(ema.average("v"), Error);
}

TEST_CASE("l2_regularizer, total_loss and train_step on a graph") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {1, 2}, "x");
  Output w = ops::variable(s, "w", {2});
  Output loss = ops::reshape(s, ops::matmul(s, x, ops::reshape(s, w, {2, 1})), {}, "loss");
  Output reg = ops::l2_regularizer(s.sub("w"), w, 0.1f);
  CHECK(g.collection(kRegularizationLosses).size() == 1);
  CHECK_FALSE(ops::l2_regularizer(s, w, 0.0f).valid());
  CHECK_THROWS_AS(ops::l2_regularizer(s, w, -1.0f), Error);
  Output total = ops::total_loss(s, loss);
  VariableStore vars;
  vars.initialize(g);
  vars.assign("w", make({2}, {1, 2}));
  Session sess(g, &vars);
  Tensor xv = make({1, 2}, {3, 4});
  // reg = 0.1 * (1 + 4) / 2 = 0.25; loss = 3 + 8 = 11
  CHECK(sess.run_one({}, reg).item<float>() == doctest::Approx(0.25));
  CHECK(sess.run_one({}, ops::regularization_loss(s)).item<float>() == doctest::Approx(0.25));
  GradientOps grads = build_gradients(s, total);
  REQUIRE(grads.variables == std::vector<std::string>{"w"});
  auto opt = make_optimizer("sgd", kLr);
  float value = train_step(sess, *opt, vars, grads, total, {{x, xv}});
  CHECK(value == doctest::Approx(11.25));
  // d total / d w = x + 0.1*w = [3.1, 4.2]; w = [1 - 0.31, 2 - 0.42]
  expect_close(vars.at("w"), make({2}, {0.69f, 1.58f}));
}

TEST_CASE("optimizers on a large variable (parallel chunks) match a per-element loop") {
  const int64_t n = 50001;
  Tensor w0 = hub::testing::random_tensor({n}, 7);
  Tensor g1 = hub::testing::random_tensor({n}, 8);
  Tensor g2 = hub::testing::random_tensor({n}, 9);
  VariableStore vars;
  vars.set("w", w0.clone());
  auto opt = make_optimizer("rmsprop", kLr);
  opt->apply_gradients(vars, {{"w", g1}});
  opt->apply_gradients(vars, {{"w", g2}});
  const float* pw = w0.data<float>();
  const float* pg1 = g1.data<float>();
  const float* pg2 = g2.data<float>();
  const float* got = vars.at("w").data<float>();
  int64_t bad = -1;
  for (int64_t i = 0; i < n && bad < 0; ++i) {
    double w = pw[i], ms = 1, mom = 0;
    for (double g : {static_cast<double>(pg1[i]), static_cast<double>(pg2[i])}) {
      ms += (g * g - ms) * 0.1;
      mom = 0.9 * mom + 0.1 * g / std::sqrt(ms + 1.0);
      w -= mom;
    }
    if (std::fabs(w - got[i]) > 1e-5) bad = i;
  }
  CHECK_MESSAGE(bad == -1, "first mismatch at element " << bad);
}

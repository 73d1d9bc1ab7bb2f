#include "hub/graph/session.h"

#include <doctest/doctest.h>

#include <cmath>

#include "hub/graph/autodiff.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using hub::testing::expect_close;
using hub::testing::make;

TEST_CASE("session runs only the needed subgraph and frees intermediates") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 2}, "x");
  Output y = ops::mul(s, x, ops::scalar(s, 2.0f), "double");
  Output z = ops::add(s, y, ops::scalar(s, 1.0f), "plus_one");
  // Unfed placeholder on a branch that is not fetched must not matter.
  Output unused = ops::placeholder(s, DType::kFloat32, {1}, "unused");
  ops::add(s, unused, unused, "unused_sum");
  Session session(g, nullptr);
  auto out = session.run({{x, make({1, 2}, {3, 4})}}, {z});
  expect_close(out[0], make({1, 2}, {7, 9}));
  // Different batch size, same plan.
  out = session.run({{x, make({3, 2}, {1, 1, 1, 1, 1, 1})}}, {z, y});
  expect_close(out[0], make({3, 2}, {3, 3, 3, 3, 3, 3}));
  expect_close(out[1], make({3, 2}, {2, 2, 2, 2, 2, 2}));
}

TEST_CASE("run reports each fetch as soon as it is computed, in node order") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {2}, "x");
  Output a = ops::mul(s, x, ops::scalar(s, 2.0f), "a");
  Output b = ops::add(s, a, ops::scalar(s, 1.0f), "b");
  Output c = ops::mul(s, b, b, "c");
  Session session(g, nullptr);
  std::vector<std::pair<size_t, Tensor>> seen;
  auto out = session.run({{x, make({2}, {1, 2})}}, {c, x, a, c}, {}, [&](size_t i, const Tensor& v) {
    seen.push_back({i, v});
  });
  // x is fed (reported first), then a, then c (both of its fetch slots).
  REQUIRE(seen.size() == 4);
  CHECK(seen[0].first == 1);
  CHECK(seen[1].first == 2);
  CHECK(seen[2].first == 0);
  CHECK(seen[3].first == 3);
  for (const auto& [i, v] : seen) expect_close(v, out[i]);
  expect_close(out[0], make({2}, {9, 25}));
  // An exception from the callback ends the run; the session stays usable.
  CHECK_THROWS_AS(session.run({{x, make({2}, {1, 2})}}, {c, a}, {},
                              [&](size_t i, const Tensor&) {
                                if (i == 1) throw_error(Code::kUnavailable, "peer gone");
                              }),
                  Error);
  expect_close(session.run({{x, make({2}, {0, 1})}}, {c})[0], make({2}, {1, 9}));
}

TEST_CASE("a profiled session times each node it ran, in the order they ran") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {2}, "x");
  Output a = ops::mul(s, x, ops::scalar(s, 2.0f), "a");
  Output b = ops::add(s, a, ops::scalar(s, 1.0f), "b");
  ops::add(s, b, b, "not_fetched");
  SessionOptions o;
  o.profile = true;
  Session profiled(g, nullptr, o);
  expect_close(profiled.run({{x, make({2}, {1, 2})}}, {b})[0], make({2}, {3, 5}));
  const std::vector<NodeTime>& p = profiled.last_profile();
  REQUIRE(p.size() == 4);  // the two scalar constants, a, b; not the placeholder nor not_fetched
  CHECK(p[1].node == "a");
  CHECK(p[1].op == g.node(a).op);
  CHECK(p[3].node == "b");
  CHECK(p[3].op == g.node(b).op);
  for (const NodeTime& t : p) {
    CHECK(t.backend == profiled.last_kernels().at(t.node));
    CHECK(t.seconds >= 0);
    CHECK(t.seconds < 60);
  }
  // A run that fails leaves no profile; a session without the option keeps none.
  CHECK_THROWS_AS(profiled.run({{x, make({3}, {1, 2, 3})}}, {b}), Error);
  CHECK(profiled.last_profile().empty());
  Session plain(g, nullptr);
  plain.run({{x, make({2}, {1, 2})}}, {b});
  CHECK(plain.last_profile().empty());
}

TEST_CASE("feeding a wrong shape or dtype names the placeholder") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 2}, "images");
  Output y = ops::add(s, x, x);
  Session session(g, nullptr);
  auto expect_msg = [&](const FeedList& feeds, const std::string& want) {
    try {
      session.run(feeds, {y});
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.code() == Code::kInvalidArgument);
      CHECK_MESSAGE(std::string(e.what()).find(want) != std::string::npos, e.what());
    }
  };
  expect_msg({{x, make({2, 3}, {1, 2, 3, 4, 5, 6})}}, "placeholder 'images': expected float32[?,2], got float32[2,3]");
  expect_msg({{x, Tensor::from_vector<int32_t>({1, 2}, {1, 2})}}, "got int32[1,2]");
  expect_msg({}, "placeholder 'images'");
}

TEST_CASE("steady-state runs allocate nothing new") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {64, 64}, "x");
  Output y = ops::add(s, ops::mul(s, x, x), x);
  Output z = ops::mul(s, y, y);
  Session session(g, nullptr);
  Tensor in = hub::testing::random_tensor({64, 64}, 3);
  session.run({{x, in}}, {z});
  session.run({{x, in}}, {z});
  int64_t before = session.allocator().system_allocations();
  for (int i = 0; i < 5; ++i) session.run({{x, in}}, {z});
  CHECK(session.allocator().system_allocations() == before);
}

TEST_CASE("variables, autodiff through a small expression") {
  Graph g;
  Scope s(g);
  ops::VariableOptions init;
  init.initializer = "constant";
  init.init_params = {3.0};
  Output w = ops::variable(s, "w", {2}, init);
  Output x = ops::placeholder(s, DType::kFloat32, {2}, "x");
  // loss = sum-free: y = w*w*x  => dy/dw = 2*w*x (with grad_y = 1)
  Output y = ops::mul(s, ops::mul(s, w, w), x);
  auto grads = gradients(s, y, {w, x}, ops::constant(s, make({2}, {1, 1})));
  VariableStore vars;
  vars.initialize(g);
  Session session(g, &vars);
  auto out = session.run({{x, make({2}, {1, -2})}}, {grads[0], grads[1]});
  expect_close(out[0], make({2}, {6, -12}));
  expect_close(out[1], make({2}, {9, 9}));
  CHECK(g.node(grads[0]).name.rfind("gradients/", 0) == 0);
}

TEST_CASE("duplicate node names and unknown ops are rejected") {
  Graph g;
  Scope s(g);
  ops::placeholder(s, DType::kFloat32, {1}, "x");
  CHECK_THROWS_AS(g.add_node("Placeholder", "x", {}, Attrs().set("dtype", DType::kFloat32).set("shape", Shape{1})),
                  Error);
  try {
    g.add_node("NoSuchOp", "y", {});
  } catch (const Error& e) {
    CHECK(e.code() == Code::kNotFound);
    CHECK(std::string(e.what()).find("NoSuchOp") != std::string::npos);
  }
  CHECK(Scope(g).sub("a").sub("b").name("w") == "a/b/w");
}

TEST_CASE("initializers are deterministic and have the right statistics") {
  Graph g;
  Scope s(g);
  ops::VariableOptions o;
  o.initializer = "truncated_normal";
  o.init_params = {0.0, 0.5};
  ops::variable(s, "t", {100, 100}, o);
  o.initializer = "glorot_uniform";
  ops::variable(s, "u", {30, 70}, o);
  VariableStore a, b;
  a.initialize(g);
  b.initialize(g);
  CHECK(identical(a.at("t"), b.at("t")));
  auto t = a.at("t").to_vector<float>();
  double mean = 0, var = 0, maxabs = 0;
  for (float v : t) {
    mean += v;
    maxabs = std::max(maxabs, (double)std::fabs(v));
  }
  mean /= t.size();
  for (float v : t) var += (v - mean) * (v - mean);
  var /= t.size();
  CHECK(std::fabs(mean) < 0.02);
  CHECK(maxabs <= 1.0 + 1e-6);  // truncated at 2 stddev
  CHECK(std::sqrt(var) == doctest::Approx(0.5 * 0.8796).epsilon(0.05));
  double limit = std::sqrt(6.0 / 100.0);
  for (float v : a.at("u").to_vector<float>()) CHECK(std::fabs(v) <= limit);
}

TEST_CASE("a memory plan puts intermediates with disjoint lifetimes in the same arena bytes") {
  // x -> 4 intermediates of 1000 floats in a chain -> fetched output: each
  // intermediate is dead once the next exists, so two buffers' worth of
  // arena hold all four (the fetched output is not in the arena).
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 1000}, "x");
  Output t = x;
  for (int i = 0; i < 5; ++i) t = ops::add(s, ops::mul(s, t, ops::scalar(s, 0.5f)), ops::scalar(s, 1.0f));
  // 10 ops: 9 intermediates, then t.
  Session plain(g, nullptr);
  SessionOptions o;
  o.plan_memory = true;
  Session planned(g, nullptr, o);
  for (int64_t batch : {1, 1, 1, 3, 3}) {  // record, use, use; a new shape records again
    INFO("batch " << batch);
    Tensor in = hub::testing::random_tensor({batch, 1000}, 5 + batch);
    Tensor want = plain.run({{x, in}}, {t})[0];
    expect_close(planned.run({{x, in}}, {t})[0], want, 0, 0);
    const int64_t one = batch * 1000 * 4;
    CHECK(planned.last_arena_bytes() >= 2 * one);
    CHECK(planned.last_arena_bytes() < 3 * one);
  }
}

TEST_CASE("a memory-planned session keeps one plan per batch size, the most recent four") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 100}, "x");
  Output y = ops::mul(s, ops::add(s, x, ops::scalar(s, 1.0f)), ops::scalar(s, 3.0f));
  SessionOptions o;
  o.plan_memory = true;
  Session planned(g, nullptr, o);
  auto check = [&](int64_t batch) {
    INFO("batch " << batch);
    Tensor in = hub::testing::random_tensor({batch, 100}, 9 + batch);
    std::vector<float> want = in.to_vector<float>();
    for (float& v : want) v = (v + 1.0f) * 3.0f;
    expect_close(planned.run({{x, in}}, {y})[0], Tensor::from_vector<float>(Shape{batch, 100}, want));
  };
  for (int64_t batch : {1, 32, 1, 32, 1}) check(batch);
  CHECK(planned.num_plans() == 2);
  for (int64_t batch : {2, 3, 4, 5, 1, 2}) check(batch);
  CHECK(planned.num_plans() == Session::kShapePlans);
  // Without the option one plan serves every shape.
  Session plain(g, nullptr);
  for (int64_t batch : {1, 32}) plain.run({{x, hub::testing::random_tensor({batch, 100}, 1)}}, {y});
  CHECK(plain.num_plans() == 1);
}

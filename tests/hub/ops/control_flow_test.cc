#include "hub/ops/control_flow.h"

#include <doctest/doctest.h>

#include <limits>
#include <set>

#include "hub/graph/autodiff.h"
#include "hub/graph/optimize/optimize.h"
#include "hub/graph/session.h"
#include "hub/ops/activation.h"
#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"
#include "hub/ops/matmul.h"
#include "hub/ops/reduction.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

std::vector<float> floats(const Tensor& t) { return t.to_vector<float>(); }

// x -> x * factor + offset, for one float argument of `shape`.
SubgraphPtr affine(float factor, float offset, const Shape& shape = {-1}) {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, shape, "x");
  Output y = ops::add(s, ops::mul(s, x, ops::scalar(s, factor)), ops::scalar(s, offset));
  return make_subgraph(g, {x}, {y});
}

// A loop body under construction, its iteration and condition arguments made.
struct LoopBody {
  Graph graph;
  Scope scope{graph};
  Output i = ops::placeholder(scope, DType::kInt64, {}, "i");
  Output cond = ops::placeholder(scope, DType::kBool, {}, "cond");
};

// Loop body: (i, cond, acc [2]) -> (acc' < limit, acc' = acc * 2 + i, scan acc').
SubgraphPtr doubling_body(float limit) {
  LoopBody body;
  const Scope& s = body.scope;
  Output i = body.i, cond = body.cond;
  Output acc = ops::placeholder(s, DType::kFloat32, {2}, "acc");
  Output next = ops::add(s, ops::mul(s, acc, ops::scalar(s, 2)), ops::cast(s, i, DType::kFloat32));
  Output go = ops::reshape(s, ops::less(s, ops::max(s, next, {0}), ops::scalar(s, limit)), {});
  return make_subgraph(body.graph, {i, cond, acc}, {go, next, ops::identity(s, next, "scan")});
}

struct LoopGraph {
  Graph g;
  Output trips, acc;
  std::vector<Output> out;
  explicit LoopGraph(float limit) {
    Scope s(g);
    trips = ops::placeholder(s, DType::kInt64, {}, "trips");
    acc = ops::placeholder(s, DType::kFloat32, {2}, "acc");
    out = ops::loop(s, trips, ops::constant(s, Tensor::scalar<bool>(true), "go"), {acc}, {}, doubling_body(limit));
  }
  std::vector<Tensor> run(int64_t trips_value) {
    Session session(g, nullptr);
    return session.run({{trips, Tensor::scalar<int64_t>(trips_value)}, {acc, make({2}, {1, 1})}}, out);
  }
};

}  // namespace

TEST_CASE("If runs the branch its condition picks, on the same arguments") {
  Graph g;
  Scope s(g);
  Output cond = ops::placeholder(s, DType::kBool, {1}, "cond");
  Output x = ops::placeholder(s, DType::kFloat32, {3}, "x");
  std::vector<Output> y = ops::if_(s, cond, {x}, affine(2, 0, {3}), affine(1, 10, {3}));
  REQUIRE(y.size() == 1);
  CHECK(g.spec(y[0]).shape == Shape{3});
  Session session(g, nullptr);
  const Tensor xs = make({3}, {1, 2, 3});
  CHECK(floats(session.run_one({{cond, Tensor::from_vector<bool>({1}, {true})}, {x, xs}}, y[0])) ==
        std::vector<float>{2, 4, 6});
  CHECK(floats(session.run_one({{cond, Tensor::from_vector<bool>({1}, {false})}, {x, xs}}, y[0])) ==
        std::vector<float>{11, 12, 13});
}

TEST_CASE("If: branches returning different sizes give a dim known at run time") {
  Graph g;
  Scope s(g);
  Output cond = ops::placeholder(s, DType::kBool, {}, "cond");
  Output x = ops::placeholder(s, DType::kFloat32, {2}, "x");
  Graph twice;
  Scope t(twice);
  Output a = ops::placeholder(t, DType::kFloat32, {2}, "a");
  SubgraphPtr doubled = make_subgraph(twice, {a}, {ops::concat(t, {a, a}, 0)});
  std::vector<Output> y = ops::if_(s, cond, {x}, doubled, affine(1, 0, {2}));
  CHECK(g.spec(y[0]).shape == Shape{-1});
  Session session(g, nullptr);
  CHECK(floats(session.run_one({{cond, Tensor::scalar<bool>(true)}, {x, make({2}, {5, 6})}}, y[0])) ==
        std::vector<float>{5, 6, 5, 6});
  CHECK(floats(session.run_one({{cond, Tensor::scalar<bool>(false)}, {x, make({2}, {5, 6})}}, y[0])) ==
        std::vector<float>{5, 6});
}

TEST_CASE("If: mismatched branches and arguments are refused when the node is built") {
  Graph g;
  Scope s(g);
  Output cond = ops::placeholder(s, DType::kBool, {}, "cond");
  Output x = ops::placeholder(s, DType::kFloat32, {2}, "x");
  Output n = ops::placeholder(s, DType::kInt64, {2}, "n");
  CHECK_THROWS_WITH(ops::if_(s, cond, {x, x}, affine(1, 0), affine(1, 0)),
                    doctest::Contains("then_branch takes 1 arguments, given 2"));
  CHECK_THROWS_WITH(ops::if_(s, cond, {n}, affine(1, 0), affine(1, 0)), doctest::Contains("does not fit argument 0"));
  Graph rank2;
  Scope r(rank2);
  Output a = ops::placeholder(r, DType::kFloat32, {2}, "a");
  SubgraphPtr matrix = make_subgraph(rank2, {a}, {ops::reshape(r, a, {1, 2})});
  CHECK_THROWS_WITH(ops::if_(s, cond, {x}, matrix, affine(1, 0)),
                    doctest::Contains("result 0 is float32[1,2] in then_branch but float32[?] in else_branch"));
  CHECK_THROWS_WITH(ops::if_(s, x, {x}, affine(1, 0), affine(1, 0)), doctest::Contains("must be bool"));
}

TEST_CASE("Loop: carried values and stacked scans, hand-computed") {
  // acc: [1,1] -> [2,2] (i=0) -> [5,5] (i=1) -> [12,12] (i=2).
  LoopGraph l(1e9f);
  REQUIRE(l.out.size() == 2);
  CHECK(l.g.spec(l.out[0]).shape == Shape{2});
  CHECK(l.g.spec(l.out[1]).shape == Shape{-1, 2});
  std::vector<Tensor> r = l.run(3);
  CHECK(floats(r[0]) == std::vector<float>{12, 12});
  CHECK(r[1].shape() == Shape{3, 2});
  CHECK(floats(r[1]) == std::vector<float>{2, 2, 5, 5, 12, 12});
}

TEST_CASE("Loop: the body's condition ends it; no trips returns the inputs and an empty scan") {
  LoopGraph l(4);  // [2,2] keeps going (2 < 4), [5,5] stops
  std::vector<Tensor> r = l.run(std::numeric_limits<int64_t>::max());
  CHECK(floats(r[0]) == std::vector<float>{5, 5});
  CHECK(floats(r[1]) == std::vector<float>{2, 2, 5, 5});
  r = l.run(0);
  CHECK(floats(r[0]) == std::vector<float>{1, 1});
  CHECK(r[1].shape() == Shape{0, 2});
  r = l.run(-5);  // a negative trip count runs nothing
  CHECK(r[1].shape() == Shape{0, 2});
}

TEST_CASE("Loop: a carried value that grows, and an invariant input") {
  // seq: [] -> [b] -> [b, b+1] -> [b, b+1, b+2], with b the invariant base.
  LoopBody body;
  const Scope& t = body.scope;
  Output i = body.i, cond = body.cond;
  Output seq = ops::placeholder(t, DType::kFloat32, {-1}, "seq");
  Output base = ops::placeholder(t, DType::kFloat32, {1}, "base");
  Output element = ops::add(t, base, ops::reshape(t, ops::cast(t, i, DType::kFloat32), {1}));
  SubgraphPtr b = make_subgraph(body.graph, {i, cond, seq, base}, {cond, ops::concat(t, {seq, element}, 0)});

  Graph g;
  Scope s(g);
  Output base_in = ops::placeholder(s, DType::kFloat32, {1}, "base");
  std::vector<Output> out = ops::loop(s, ops::constant(s, Tensor::scalar<int64_t>(3), "trips"),
                                      ops::constant(s, Tensor::scalar<bool>(true), "go"),
                                      {ops::constant(s, make({0}, {}), "empty")}, {base_in}, b);
  REQUIRE(out.size() == 1);
  Session session(g, nullptr);
  CHECK(floats(session.run_one({{base_in, make({1}, {10})}}, out[0])) == std::vector<float>{10, 11, 12});
  CHECK(floats(session.run_one({{base_in, make({1}, {-1})}}, out[0])) == std::vector<float>{-1, 0, 1});
}

TEST_CASE("Loop: a scan output changing shape between iterations is a clear error") {
  LoopBody body;
  const Scope& t = body.scope;
  Output i = body.i, cond = body.cond;
  Output seq = ops::placeholder(t, DType::kFloat32, {-1}, "seq");
  Output grown = ops::concat(t, {seq, ops::constant(t, make({1}, {0}), "zero")}, 0);
  SubgraphPtr b = make_subgraph(body.graph, {i, cond, seq}, {cond, grown, grown});
  Graph g;
  Scope s(g);
  std::vector<Output> out =
      ops::loop(s, ops::constant(s, Tensor::scalar<int64_t>(3), "trips"),
                ops::constant(s, Tensor::scalar<bool>(true), "go"), {ops::constant(s, make({0}, {}), "empty")}, {}, b);
  Session session(g, nullptr);
  CHECK_THROWS_WITH(session.run({}, {out[1]}), doctest::Contains("scan output 0 is float32[2] at iteration 1"));
}

TEST_CASE("Loop: a body that does not fit its inputs is refused when the node is built") {
  Graph g;
  Scope s(g);
  Output trips = ops::constant(s, Tensor::scalar<int64_t>(1), "trips");
  Output go = ops::constant(s, Tensor::scalar<bool>(true), "go");
  Output three = ops::constant(s, make({3}, {1, 2, 3}), "three");
  CHECK_THROWS_WITH(ops::loop(s, trips, go, {three}, {}, doubling_body(1)),
                    doctest::Contains("input 2 float32[3] does not fit argument 2 float32[2] of body"));
  CHECK_THROWS_WITH(ops::loop(s, trips, go, {}, {three}, affine(1, 0)), doctest::Contains("body takes 1 arguments"));
  CHECK_THROWS_WITH(ops::loop(s, go, go, {three}, {}, doubling_body(1)), doctest::Contains("must be int64"));
}

TEST_CASE("Control flow is left to run time by the inference optimiser, on constant inputs too") {
  Graph g;
  Scope s(g);
  std::vector<Output> y = ops::if_(s, ops::constant(s, Tensor::scalar<bool>(false), "cond"),
                                   {ops::constant(s, make({2}, {1, 2}), "x")}, affine(2, 0), affine(1, 10));
  VariableStore variables;
  OptimizedGraph opt = optimize_for_inference(g, variables, y);
  CHECK(opt.stats().constants_folded == 0);
  Session session(opt.graph(), nullptr);
  CHECK(floats(session.run_one({}, opt.tensor(y[0]))) == std::vector<float>{11, 12});
}

TEST_CASE("The inference optimiser optimises a loop body on its own: fused there, variables frozen and tracked") {
  // acc -> relu(acc w + b) three times; w a variable read inside the body, b a constant.
  LoopBody body;
  const Scope& t = body.scope;
  Output i = body.i, cond = body.cond;
  Output acc = ops::placeholder(t, DType::kFloat32, {1, 4}, "acc");
  Output w = ops::variable(t, "w", {4, 4});
  Output next =
      ops::relu(t, ops::bias_add(t, ops::matmul(t, acc, w), ops::constant(t, make({4}, {0.1f, -0.2f, 0.3f, 0}), "b")));
  SubgraphPtr b = make_subgraph(body.graph, {i, cond, acc}, {cond, next});
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {1, 4}, "x");
  std::vector<Output> y = ops::loop(s, ops::constant(s, Tensor::scalar<int64_t>(3), "trips"),
                                    ops::constant(s, Tensor::scalar<bool>(true), "go"), {x}, {}, b);
  VariableStore variables;
  variables.set("w", random_tensor({4, 4}, 5, -0.5f, 0.5f));
  const Tensor xs = make({1, 4}, {1, -1, 0.5f, 2});
  Session plain(g, &variables);
  const Tensor want = plain.run_one({{x, xs}}, y[0]);

  OptimizedGraph opt = optimize_for_inference(g, variables, {x, y[0]});
  CHECK(opt.stats().fused == 1);
  const Node* loop = nullptr;
  for (const Node& n : opt.graph().nodes())
    if (n.op == "Loop") loop = &n;
  REQUIRE(loop != nullptr);
  std::set<std::string> ops_in_body;
  for (const Node& n : loop->attrs.get_graph("body").nodes) ops_in_body.insert(n.op);
  CHECK(ops_in_body.count("_FusedMatMul") == 1);
  CHECK(ops_in_body.count("MatMul") == 0);
  CHECK(ops_in_body.count("Variable") == 0);  // frozen into the body
  Session fast(opt.graph(), nullptr);
  expect_close(fast.run_one({{opt.tensor(x), xs}}, opt.tensor(y[0])), want, 1e-5, 1e-5);
  // The frozen weights came from w: writing it makes the optimised graph stale.
  CHECK_FALSE(opt.stale(variables));
  variables.set("w", random_tensor({4, 4}, 6));
  CHECK(opt.stale(variables));
}

TEST_CASE("If's gradient: each branch differentiated, against finite differences, on both conditions") {
  // then: (x * w, tanh(x)); else: (x + x * x, w * 3) — the second result of each branch leaves one argument
  // out, so its gradient there is zeros.
  auto branch = [](bool then) {
    Graph g;
    Scope s(g);
    Output x = ops::placeholder(s, DType::kFloat32, {-1}, "x"), w = ops::placeholder(s, DType::kFloat32, {-1}, "w");
    std::vector<Output> results =
        then ? std::vector<Output>{ops::mul(s, x, w), ops::tanh(s, x)}
             : std::vector<Output>{ops::add(s, x, ops::mul(s, x, x)), ops::mul(s, w, ops::scalar(s, 3))};
    return make_subgraph(g, {x, w}, results);
  };
  const Attrs attrs = Attrs().set("then_branch", branch(true)).set("else_branch", branch(false));
  const Tensor x = make({3}, {0.5f, -1.2f, 2}), w = make({3}, {1.5f, 0.3f, -0.7f});
  for (const bool cond : {true, false})
    for (const int output : {0, 1}) {
      INFO("cond " << cond << ", output " << output);
      check_gradients("If", {Tensor::scalar<bool>(cond), x, w}, attrs, {.output = output});
    }
  // By hand: d(sum(x * w)) / dx = w where the condition holds.
  Graph g;
  Scope s(g);
  Output c = ops::placeholder(s, DType::kBool, {}, "c"), xp = ops::placeholder(s, DType::kFloat32, {3}, "x"),
         wp = ops::placeholder(s, DType::kFloat32, {3}, "w");
  const std::vector<Output> y = s.op_n("If", {c, xp, wp}, attrs, "if");
  const std::vector<Output> d = gradients(s, ops::sum(s, y[0], {0}), {xp, wp});
  Session session(g, nullptr);
  const std::vector<Tensor> got = session.run({{c, Tensor::scalar<bool>(true)}, {xp, x}, {wp, w}}, d);
  expect_close(got[0], w);
  expect_close(got[1], x);
  // Else: d(sum(x + x^2)) / dx = 1 + 2x, and nothing flows to w.
  const std::vector<Tensor> other = session.run({{c, Tensor::scalar<bool>(false)}, {xp, x}, {wp, w}}, d);
  expect_close(other[0], make({3}, {2, -1.4f, 5}));
  expect_close(other[1], Tensor::zeros(DType::kFloat32, {3}));
}

TEST_CASE("If's gradient refuses a trainable variable read inside a branch (it would stay untrained)") {
  Graph branch_graph;
  Scope b(branch_graph);
  Output x = ops::placeholder(b, DType::kFloat32, {2}, "x");
  Output v = ops::variable(b, "v", {2});
  SubgraphPtr scaled = make_subgraph(branch_graph, {x}, {ops::mul(b, x, v)});
  Graph g;
  Scope s(g);
  Output c = ops::placeholder(s, DType::kBool, {}, "c"), xp = ops::placeholder(s, DType::kFloat32, {2}, "x");
  const Output y = s.op_n("If", {c, xp}, Attrs().set("then_branch", scaled).set("else_branch", scaled), "if")[0];
  expect_error(
      Code::kInvalidArgument, [&] { gradients(s, ops::sum(s, y, {0}), {xp}); },
      "trainable variable 'v' is read inside a subgraph");
}

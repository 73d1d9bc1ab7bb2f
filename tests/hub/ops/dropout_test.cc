#include "hub/ops/dropout.h"

#include <doctest/doctest.h>

#include <cmath>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {
struct DropoutGraph {
  Graph g;
  Output x;
  ops::DropoutResult d;
  explicit DropoutGraph(float rate, uint64_t graph_seed = 7, int64_t op_seed = 0) {
    g.set_seed(graph_seed);
    Scope s(g);
    x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 50}, "x");
    d = ops::dropout_with_mask(s, x, rate, op_seed);
  }
};
}  // namespace

TEST_CASE("Dropout: y = x * mask / (1 - rate), mask is 0/1 with the right rate") {
  DropoutGraph dg(0.3f);
  Session session(dg.g, nullptr);
  Tensor x = random_tensor({40, 50}, 1, 0.5f, 1.5f);
  auto out = session.run({{dg.x, x}}, {dg.d.y, dg.d.mask});
  const float* px = x.data<float>();
  const float* py = out[0].data<float>();
  const float* pm = out[1].data<float>();
  int64_t kept = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    REQUIRE((pm[i] == 0.0f || pm[i] == 1.0f));
    kept += pm[i] == 1.0f;
    CHECK(py[i] == doctest::Approx(px[i] * pm[i] / 0.7f).epsilon(1e-6));
  }
  // 2000 Bernoulli(0.7) draws: mean 1400, sd ~20.5; allow 5 sd.
  CHECK(kept > 1400 - 103);
  CHECK(kept < 1400 + 103);
}

TEST_CASE("Dropout: deterministic for a fixed graph seed, varying across runs and seeds") {
  Tensor x = Tensor::zeros(DType::kFloat32, {4, 50});
  x.fill(1.0);
  DropoutGraph a(0.5f), b(0.5f), c(0.5f, 8), d(0.5f, 7, 3);
  Session sa(a.g, nullptr), sb(b.g, nullptr), sc(c.g, nullptr), sd(d.g, nullptr);
  Tensor a1 = sa.run({{a.x, x}}, {a.d.mask})[0], a2 = sa.run({{a.x, x}}, {a.d.mask})[0];
  Tensor b1 = sb.run({{b.x, x}}, {b.d.mask})[0], b2 = sb.run({{b.x, x}}, {b.d.mask})[0];
  CHECK(identical(a1, b1));  // same graph seed, same run number
  CHECK(identical(a2, b2));
  CHECK_FALSE(identical(a1, a2));                                 // a new mask each run
  CHECK_FALSE(identical(a1, sc.run({{c.x, x}}, {c.d.mask})[0]));  // graph seed matters
  CHECK_FALSE(identical(a1, sd.run({{d.x, x}}, {d.d.mask})[0]));  // op seed matters
  sa.reset_run_counter();
  CHECK(identical(a1, sa.run({{a.x, x}}, {a.d.mask})[0]));
}

TEST_CASE("Dropout: gradient dy * mask / (1 - rate) matches finite differences with the mask held fixed") {
  Tensor x = random_tensor({3, 50}, 2);
  GradCheckOptions o;
  o.fixed_randomness = true;
  check_gradients("Dropout", {x}, Attrs().set("rate", 0.4f), o);
  // The mask of that run drops some elements, so the check covered both kinds.
  Tensor mask = run_op("Dropout", {x}, Attrs().set("rate", 0.4f))[1];
  int64_t dropped = 0;
  for (float m : mask.to_vector<float>()) dropped += m == 0.0f;
  CHECK(dropped > 0);
}

TEST_CASE("dropout builder: identity when not training; rate validated") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {2}, "x");
  CHECK(ops::dropout(s, x, 0.5f, false) == x);
  Output y = ops::dropout(s, x, 0.5f, true);
  CHECK(g.node(y).op == "Dropout");
  CHECK_THROWS_AS(ops::dropout(s, x, 1.0f, true), Error);
  CHECK_THROWS_AS(ops::dropout(s, x, -0.1f, false), Error);
  try {
    ops::dropout_with_mask(s, x, 1.5f, 0, "drop");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK(std::string(e.what()).find("'drop'") != std::string::npos);
  }
  // rate 0 keeps everything.
  Graph g0;
  Scope s0(g0);
  Output x0 = ops::placeholder(s0, DType::kFloat32, {3}, "x");
  Output y0 = ops::dropout(s0, x0, 0.0f, true);
  Session session(g0, nullptr);
  expect_close(session.run({{x0, make({3}, {1, 2, 3})}}, {y0})[0], make({3}, {1, 2, 3}));
}

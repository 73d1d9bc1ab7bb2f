// Issue #15: oneDNN keeps reordered copies of convolution weights, and every
// writer of variables had to remember to invalidate them by hand
// (VariableStore::assign did not). Now the cache is keyed on the storage's
// generation, which every mutable access bumps: each way of changing a
// variable below must be seen by the next oneDNN run.
#include <doctest/doctest.h>

#include "hub/backend/backend.h"
#include "hub/graph/optimizer.h"
#include "hub/graph/session.h"
#include "hub/module/module.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

ops::VariableOptions glorot() {
  ops::VariableOptions o;
  o.initializer = "glorot_uniform";
  return o;
}

struct ConvGraph {
  Graph g;
  Output x, y;
  VariableStore vars;
  ConvGraph() {
    Scope s(g);
    x = ops::placeholder(s, DType::kFloat32, {2, 6, 6, 8}, "x");
    Output w = ops::variable(s, "w", {3, 3, 8, 16}, glorot());
    y = ops::conv2d(s, x, w, {{1, 1}, "SAME"}, "conv");
    vars.initialize(g);
  }
};

}  // namespace

TEST_CASE("issue 15: every way of writing a variable reaches cached oneDNN weights") {
  ConvGraph c;
  Session fast(c.g, &c.vars, {&find_backend("onednn")});
  Session ref(c.g, &c.vars, {&find_backend("reference")});
  const Tensor x = random_tensor({2, 6, 6, 8}, 7);
  auto same_as_reference = [&](const char* after) {
    INFO("after " << after);
    Tensor got = fast.run({{c.x, x}}, {c.y})[0];
    REQUIRE(fast.last_kernels().at("conv") == "onednn");
    expect_close(got, ref.run({{c.x, x}}, {c.y})[0], 1e-4, 1e-4);
  };
  same_as_reference("initialisation");  // fills the cache

  c.vars.assign("w", random_tensor({3, 3, 8, 16}, 11));
  same_as_reference("VariableStore::assign");

  c.vars.at("w").data<float>()[17] += 2.0f;
  same_as_reference("a write through the tensor's own pointer");

  std::unique_ptr<Optimizer> sgd = make_optimizer("sgd", LearningRateSchedule::fixed(0.5));
  sgd->apply_gradients(c.vars, {{"w", random_tensor({3, 3, 8, 16}, 12)}});
  same_as_reference("an optimizer update");

  Tensor saved = c.vars.at("w").clone();
  c.vars.assign("w", random_tensor({3, 3, 8, 16}, 13));
  same_as_reference("another assign");
  c.vars.assign("w", saved);  // as a checkpoint restore does
  same_as_reference("restoring a saved value");
}

TEST_CASE("issue 15: Module variable writes reach cached oneDNN weights") {
  ModuleSpec spec = create_module_spec([](ModuleBuilder& b) {
    Scope s = b.scope();
    Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 5, 5, 4}, "x");
    Output w = ops::variable(s, "w", {3, 3, 4, 4}, glorot());
    b.add_signature("default", x, ops::conv2d(s, x, w, {{1, 1}, "SAME"}, "conv"));
  });
  Module m(spec);
  const Tensor x = random_tensor({1, 5, 5, 4}, 3);
  Tensor before = m(x);
  Tensor w = random_tensor({3, 3, 4, 4}, 4);
  m.variable_map().at("w").assign(w);
  Tensor after = m(x);
  // The expected output with the new weights, from the reference kernel.
  expect_close(after, run_op("Conv2D", {x, w}, ops::ConvOptions{{1, 1}, "SAME"}.to_attrs())[0], 1e-4, 1e-4);
  CHECK_FALSE(identical(before, after));
}

// hub::gradients held a reference to the node whose gradient it was
// building while it summed that node's incoming gradients with an AddN,
// and adding the AddN may reallocate the graph's node list: the reference
// then read freed memory (found by AddressSanitizer when training lenet).
// Here a variable read twice gets two gradients to sum, once for each size
// of the graph up to 130 nodes, so the AddN lands on every capacity
// boundary of the node list; the sanitizer build sees any stale read, and
// every build checks the gradient: d/dw sum(w * w) = 2w.
#include <doctest/doctest.h>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/reduction.h"
#include "hub/ops/state.h"
#include "hub/ops/variables.h"
#include "testutil.h"

using namespace hub;

TEST_CASE("gradients: summing a node's gradients may reallocate the node list") {
  for (int padding = 0; padding < 128; ++padding) {
    CAPTURE(padding);
    Graph g;
    Scope s(g);
    for (int i = 0; i < padding; ++i) ops::scalar(s, 0.0f);
    Output w = ops::constant(s, Tensor::from_vector<float>({2}, {1.5f, -2.0f}), "w");
    Output y = ops::sum(s, ops::mul(s, w, w));
    std::vector<Output> grads = gradients(s, y, {w});
    REQUIRE(grads.size() == 1);
    VariableStore vars;
    Session session(g, &vars);
    CHECK(session.run_one({}, grads[0]).to_vector<float>() == std::vector<float>{3.0f, -4.0f});
  }
}

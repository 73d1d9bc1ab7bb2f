// The session's exact fusions (hub/graph/step_fusion.h): batch norm with the
// Relu / Relu6 after it, and their gradients. A fused run must give what the
// unfused run gives, its gradients must match finite differences, and the
// fusion must step aside whenever a tensor it would drop is wanted.
#include "hub/graph/step_fusion.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/activation.h"
#include "hub/ops/batch_norm.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/reduction.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

// x [2,5,3,7] -> Conv2D 3x3 (7 -> 9) -> slim batch_norm (with gamma; training
// unless told) -> activation -> L = sum(w * a), and dL / d(x, filter, beta,
// gamma).
struct Net {
  Graph graph;
  VariableStore variables;
  Output x, y, act, loss;
  std::vector<Output> grads;  // d loss / d x, filter, beta, gamma
  Tensor x_value;

  explicit Net(const std::string& activation, bool training = true) {
    Scope s(graph);
    x = ops::placeholder(s, DType::kFloat32, {2, 5, 3, 7}, "x");
    Output filter = ops::constant(s, random_tensor({3, 3, 7, 9}, 11, -0.5f, 0.5f), "filter");
    Output h = ops::conv2d(s, x, filter);
    ops::BatchNormOptions bn;
    bn.scale = true;
    bn.is_training = training;
    y = ops::batch_norm(s.sub("bn"), h, bn);
    act = activation == "Relu6" ? ops::relu6(s, y) : ops::relu(s, y);
    loss = ops::sum(s, ops::mul(s, act, ops::constant(s, random_tensor({2, 5, 3, 9}, 12), "w")));
    variables.initialize(graph);
    // Spread beta and gamma so that y lands below 0, inside (0, 6) and above 6.
    variables.assign("bn/BatchNorm/beta", random_tensor({9}, 13, 0.0f, 4.0f));
    variables.assign("bn/BatchNorm/gamma", random_tensor({9}, 14, 1.0f, 5.0f));
    grads = gradients(s, loss, {x, filter, node_output("bn/BatchNorm/beta"), node_output("bn/BatchNorm/gamma")});
    x_value = random_tensor({2, 5, 3, 7}, 15, -2.0f, 2.0f);
  }
  Output node_output(const std::string& name) const { return {*graph.find(name), 0}; }
};

std::vector<std::string> ops_run(const Session& session) {
  std::vector<std::string> ops;
  for (const NodeTime& n : session.last_profile()) ops.push_back(n.op);
  return ops;
}
bool ran(const std::vector<std::string>& ops, const std::string& op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

SessionOptions profiled(bool fuse) {
  SessionOptions o;
  o.profile = true;
  o.fuse = fuse;
  return o;
}

}  // namespace

TEST_CASE("a training step with fused batch norm + activation equals the unfused step") {
  for (const char* activation : {"Relu6", "Relu"}) {
    INFO(activation);
    Net net(activation);
    std::vector<Output> fetches{net.loss, net.act};
    fetches.insert(fetches.end(), net.grads.begin(), net.grads.end());
    Session fused(net.graph, &net.variables, profiled(true)), plain(net.graph, &net.variables, profiled(false));
    const auto got = fused.run({{net.x, net.x_value}}, fetches);
    const auto want = plain.run({{net.x, net.x_value}}, fetches);
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("fetch " << i);
      expect_close(got[i], want[i], 1e-4, 1e-4);
    }
    const auto f = ops_run(fused), p = ops_run(plain);
    CHECK(ran(f, "_FusedBatchNormActivation"));
    CHECK(ran(f, "_FusedBatchNormActivationGrad"));
    CHECK_FALSE(ran(f, activation));
    CHECK_FALSE(ran(f, std::string(activation) + "Grad"));
    CHECK_FALSE(ran(f, "FusedBatchNorm"));
    CHECK(ran(p, "FusedBatchNorm"));
    CHECK(ran(p, std::string(activation) + "Grad"));
    CHECK_FALSE(ran(p, "_FusedBatchNormActivation"));
  }
}

// Finite differences are only valid where no element of y crosses the
// activation's kinks (0, and 6 for Relu6) within the step; such samples are
// skipped (and counted, so the check cannot pass by skipping everything).
TEST_CASE("fused gradients match finite differences") {
  for (const std::string activation : {"Relu6", "Relu"}) {
    INFO(activation);
    Net net(activation);
    Session session(net.graph, &net.variables, profiled(true));
    Session probe(net.graph, &net.variables, profiled(false));  // y at the perturbed points
    const FeedList feeds{{net.x, net.x_value}};
    const std::vector<Tensor> g = session.run(feeds, net.grads);
    REQUIRE(ran(ops_run(session), "_FusedBatchNormActivationGrad"));
    const float hi = activation == "Relu6" ? 6.0f : 1e30f;
    // Loss and the activation mask of y at feeds f.
    auto at = [&](const FeedList& f, std::vector<char>* mask) {
      const Tensor y = probe.run(f, {net.y})[0];
      mask->clear();
      for (int64_t i = 0; i < y.num_elements(); ++i) mask->push_back(y.data<float>()[i] > 0 && y.data<float>()[i] < hi);
      return static_cast<double>(session.run(f, {net.loss})[0].item<float>());
    };
    const double step = 1e-2;
    int checked = 0, skipped = 0;
    // perturbed(delta) sets up the point and returns its feeds.
    auto check = [&](float analytic, const std::function<FeedList(double)>& perturbed, const std::string& what) {
      std::vector<char> mask_plus, mask_minus;
      const double up = at(perturbed(step), &mask_plus), down = at(perturbed(-step), &mask_minus);
      if (mask_plus != mask_minus) {
        ++skipped;
        return;
      }
      ++checked;
      INFO(what);
      CHECK(analytic == doctest::Approx((up - down) / (2 * step)).epsilon(1e-2).scale(1.0));
    };
    // d loss / d x at a spread of elements.
    for (int64_t i = 0; i < net.x_value.num_elements(); i += 7)
      check(
          g[0].data<float>()[i],
          [&](double delta) {
            Tensor x = net.x_value.clone();
            x.data<float>()[i] += static_cast<float>(delta);
            return FeedList{{net.x, x}};
          },
          "x element " + std::to_string(i));
    // d loss / d beta and gamma, through the variables.
    for (int which : {2, 3}) {
      const std::string name = which == 2 ? "bn/BatchNorm/beta" : "bn/BatchNorm/gamma";
      const Tensor saved = net.variables.at(name).clone();
      for (int64_t c = 0; c < 9; ++c)
        check(
            g[which].data<float>()[c],
            [&](double delta) {
              Tensor v = saved.clone();
              v.data<float>()[c] += static_cast<float>(delta);
              net.variables.assign(name, v);
              return feeds;
            },
            name + " channel " + std::to_string(c));
      net.variables.assign(name, saved);
    }
    INFO("checked " << checked << ", skipped " << skipped);
    CHECK(checked >= 3 * skipped);
  }
}

TEST_CASE("the fusion steps aside when a tensor it would drop is wanted") {
  Net net("Relu6");
  const FeedList feeds{{net.x, net.x_value}};
  SUBCASE("batch norm's y fetched: nothing fuses forward") {
    Session session(net.graph, &net.variables, profiled(true)), plain(net.graph, &net.variables, profiled(false));
    const std::vector<Output> fetches{net.y, net.act, net.grads[0]};
    const auto got = session.run(feeds, fetches), want = plain.run(feeds, fetches);
    for (size_t i = 0; i < want.size(); ++i) expect_close(got[i], want[i], 1e-4, 1e-4);
    const auto ops = ops_run(session);
    CHECK(ran(ops, "FusedBatchNorm"));
    CHECK(ran(ops, "Relu6"));
    CHECK_FALSE(ran(ops, "_FusedBatchNormActivation"));
    CHECK(ran(ops, "_FusedBatchNormActivationGrad"));  // the backward pair still fuses
  }
  SUBCASE("the activation's gradient fetched: backward not fused, forward still is") {
    const Graph& g = net.graph;
    Output relu6_grad;
    for (int id = 0; id < g.num_nodes(); ++id)
      if (g.node(id).op == "Relu6Grad") relu6_grad = {id, 0};
    REQUIRE(relu6_grad.valid());
    Session session(net.graph, &net.variables, profiled(true)), plain(net.graph, &net.variables, profiled(false));
    const std::vector<Output> fetches{relu6_grad, net.grads[0], net.grads[3]};
    const auto got = session.run(feeds, fetches), want = plain.run(feeds, fetches);
    for (size_t i = 0; i < want.size(); ++i) expect_close(got[i], want[i], 1e-4, 1e-4);
    const auto ops = ops_run(session);
    CHECK(ran(ops, "_FusedBatchNormActivation"));
    CHECK(ran(ops, "Relu6Grad"));  // on the activation's output, the same mask
    CHECK(ran(ops, "FusedBatchNormGrad"));
    CHECK_FALSE(ran(ops, "_FusedBatchNormActivationGrad"));
  }
  SUBCASE("y feeding another op: nothing fuses forward") {
    Scope s(net.graph);
    Output extra = ops::add(s, ops::sum(s, net.y), net.loss, "extra");
    Session session(net.graph, &net.variables, profiled(true));
    session.run(feeds, {extra});
    CHECK(ran(ops_run(session), "FusedBatchNorm"));
    CHECK_FALSE(ran(ops_run(session), "_FusedBatchNormActivation"));
  }
  SUBCASE("inference-mode batch norm: left to the inference optimiser") {
    Net inference("Relu6", false);
    Session session(inference.graph, &inference.variables, profiled(true));
    session.run({{inference.x, inference.x_value}}, inference.grads);
    CHECK(ran(ops_run(session), "FusedBatchNorm"));
    CHECK(ran(ops_run(session), "FusedBatchNormGrad"));
    CHECK_FALSE(ran(ops_run(session), "_FusedBatchNormActivation"));
    CHECK_FALSE(ran(ops_run(session), "_FusedBatchNormActivationGrad"));
  }
  SUBCASE("SessionOptions::fuse off") {
    Session session(net.graph, &net.variables, profiled(false));
    session.run(feeds, net.grads);
    CHECK_FALSE(ran(ops_run(session), "_FusedBatchNormActivation"));
    CHECK_FALSE(ran(ops_run(session), "_FusedBatchNormActivationGrad"));
  }
}

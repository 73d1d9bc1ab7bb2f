// Training on the GPU: every optimizer's update op on the device against the
// host kernel (variables, slots, several steps), and a small CNN trained on
// the cuda backend end to end against the same network trained on the host:
// every node of the training step runs on the GPU, the variables never
// leave it, and both reach the same loss and accuracy. Skips without CUDA.
#include "hub/graph/optimizer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "hub/backend/backend.h"
#include "hub/graph/session.h"
#include "hub/ops/activation.h"
#include "hub/ops/array.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/matmul.h"
#include "hub/ops/pool.h"
#include "hub/ops/reduction.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

TEST_CASE("cuda optimizer updates: all seven rules on the device equal the host's, slots included") {
  HUB_SKIP_UNLESS_CUDA();
  OptimizerOptions options;
  options.ftrl_l1 = 0.01;
  options.ftrl_l2 = 0.02;
  for (const std::string& name : optimizer_names()) {
    for (bool nesterov : {false, true}) {
      if (nesterov && name != "momentum") continue;
      INFO(name << (nesterov ? " (nesterov)" : ""));
      options.use_nesterov = nesterov;
      const auto schedule = LearningRateSchedule::exponential(0.05, 2, 0.5);
      VariableStore host, device;
      for (const auto& [var, shape] : std::map<std::string, Shape>{{"w", {70001}}, {"b", {7}}}) {
        host.set(var, random_tensor(shape, var == "w" ? 1 : 2));
        device.set(var, host.at(var).clone());
      }
      move_variables(device, Device::kCUDA);
      auto on_host = make_optimizer(name, schedule, options), on_device = make_optimizer(name, schedule, options);
      for (int step = 0; step < 3; ++step) {
        GradientList grads{{"w", random_tensor({70001}, 10 + step)}, {"b", random_tensor({7}, 20 + step)}};
        on_host->apply_gradients(host, grads);
        GradientList device_grads;  // one gradient already on the device, one copied there
        device_grads.push_back({"w", to_device(grads[0].second, Device::kCUDA)});
        device_grads.push_back(grads[1]);
        on_device->apply_gradients(device, device_grads);
      }
      for (const char* var : {"w", "b"}) {
        CHECK(device.at(var).device() == Device::kCUDA);
        expect_close(to_host(device.at(var)), host.at(var), 1e-5, 1e-4);
      }
      const std::map<std::string, Tensor> want = on_host->state(), got = on_device->state();
      REQUIRE(want.size() == got.size());
      for (const auto& [key, value] : want) {
        INFO("state " << key);
        REQUIRE(got.count(key));
        CHECK(got.at(key).device() == Device::kCPU);
        expect_close(got.at(key), value, 1e-5, 1e-4);
      }
    }
  }
}

TEST_CASE("cuda ExponentialMovingAverage: shadows on the device, equal to the host's") {
  HUB_SKIP_UNLESS_CUDA();
  VariableStore host, device;
  host.set("w", random_tensor({1000}, 1));
  device.set("w", host.at("w").clone());
  move_variables(device, Device::kCUDA);
  ExponentialMovingAverage a(0.9), b(0.9);
  for (int step = 0; step < 3; ++step) {
    Tensor delta = random_tensor({1000}, 5 + step);
    for (int64_t i = 0; i < 1000; ++i) host.at("w").data<float>()[i] += delta.data<float>()[i];
    copy_into(host.at("w"), device.at("w"));
    a.apply(host, {"w"}, step);
    b.apply(device, {"w"}, step);
  }
  CHECK(b.average("w").device() == Device::kCUDA);
  expect_close(to_host(b.average("w")), a.average("w"), 1e-6, 1e-5);
  {
    ExponentialMovingAverage::Swapped swapped(b, device);
    expect_close(to_host(device.at("w")), a.average("w"), 1e-6, 1e-5);
  }
  expect_close(to_host(device.at("w")), host.at("w"));
}

namespace {

// A small CNN on 12x12 images whose class is where the bright stripe is.
struct SmallCnn {
  Graph graph;
  Output images, labels, logits, loss;
  GradientOps grads;
};

void build_cnn(SmallCnn& m) {
  Scope s(m.graph);
  m.images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 12, 12, 1}, "images");
  m.labels = ops::placeholder(s, DType::kInt64, {kUnknownDim}, "labels");
  ops::VariableOptions he;
  he.initializer = "variance_scaling";
  he.init_params = {2.0};
  Output w1 = ops::variable(s, "conv/weights", {3, 3, 1, 8}, he);
  Output b1 = ops::variable(s, "conv/biases", {8});
  Output h = ops::relu(s, ops::bias_add(s, ops::conv2d(s, m.images, w1, {{1, 1}, "SAME"}), b1));
  h = ops::max_pool(s, h, {2, 2}, {2, 2}, "SAME");
  h = ops::reshape(s, h, {-1, 6 * 6 * 8});
  Output w2 = ops::variable(s, "fc/weights", {6 * 6 * 8, 3}, he);
  Output b2 = ops::variable(s, "fc/biases", {3});
  m.logits = ops::bias_add(s, ops::matmul(s, h, w2), b2);
  m.loss = ops::sparse_softmax_cross_entropy(s, m.logits, m.labels);
  m.grads = build_gradients(s, m.loss);
}

// n images: class k has a bright horizontal stripe in rows [4k, 4k + 4), plus noise.
void make_data(int64_t n, uint64_t seed, Tensor* images, Tensor* labels) {
  *images = random_tensor({n, 12, 12, 1}, seed, 0.0f, 0.5f);
  *labels = Tensor(DType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = i % 3;
    labels->data<int64_t>()[i] = k;
    for (int64_t r = 4 * k; r < 4 * k + 4; ++r)
      for (int64_t c = 0; c < 12; ++c) images->data<float>()[(i * 12 + r) * 12 + c] += 1.0f;
  }
}

struct Trained {
  std::vector<float> losses;
  double accuracy = 0;
  std::set<std::string> host_ops;  // ops of the step that did not run on the preferred backend
};

Trained train_on(const std::string& backend) {
  SmallCnn m;
  build_cnn(m);
  VariableStore vars;
  vars.initialize(m.graph);
  SessionOptions o;
  o.backend = &find_backend(backend);
  o.fetch_to_host = false;
  Session session(m.graph, &vars, o);
  if (o.backend->device() != Device::kCPU) move_variables(vars, o.backend->device());
  auto opt = make_optimizer("momentum", LearningRateSchedule::fixed(0.05));
  Tensor images, labels;
  make_data(60, 7, &images, &labels);
  Trained t;
  for (int step = 0; step < 40; ++step) {
    t.losses.push_back(train_step(session, *opt, vars, m.grads, m.loss, {{m.images, images}, {m.labels, labels}}));
    if (step == 0)
      for (const auto& [name, ran_on] : session.last_kernels()) {
        const Node& node = m.graph.node(*m.graph.find(name));
        // Integer constants (shapes, axes) stay on the host by design (hub/ops/cuda/state.cu).
        const bool host_constant = node.op == "Const" && node.outputs[0].dtype != DType::kFloat32;
        if (ran_on != backend && !host_constant) t.host_ops.insert(node.op);
      }
  }
  for (const auto& [name, value] : vars.items()) CHECK(value.device() == o.backend->device());
  Tensor test_images, test_labels;
  make_data(30, 99, &test_images, &test_labels);
  Tensor logits = to_host(session.run_one({{m.images, test_images}}, m.logits));
  int64_t correct = 0;
  for (int64_t i = 0; i < 30; ++i) {
    const float* row = logits.data<float>() + i * 3;
    const int64_t best = std::max_element(row, row + 3) - row;
    correct += best == test_labels.data<int64_t>()[i];
  }
  t.accuracy = static_cast<double>(correct) / 30.0;
  return t;
}

// What the 40 steps must reach on either backend.
void check_learned(const Trained& t) {
  CHECK(t.losses.back() < 0.25 * t.losses.front());
  CHECK(t.accuracy >= 0.9);
}

}  // namespace

TEST_CASE("cuda training: the small CNN reaches its loss and accuracy on the host (runs without a GPU)") {
  check_learned(train_on("onednn"));
}

TEST_CASE("cuda training: a small CNN trains on the GPU to the loss and accuracy it reaches on the host") {
  HUB_SKIP_UNLESS_CUDA();
  const Trained gpu = train_on("cuda");
  const Trained cpu = train_on("onednn");
  std::string off_gpu;
  for (const std::string& op : gpu.host_ops) off_gpu += op + " ";
  CHECK_MESSAGE(gpu.host_ops.empty(), "ran on the host in the cuda session: " << off_gpu);
  REQUIRE(gpu.losses.size() == cpu.losses.size());
  CHECK(gpu.losses.front() == doctest::Approx(cpu.losses.front()).epsilon(1e-4));
  check_learned(gpu);
  CHECK(gpu.losses.back() == doctest::Approx(cpu.losses.back()).epsilon(0.05));
  // Trained apart, the two may disagree on one borderline test image.
  CHECK(std::fabs(gpu.accuracy - cpu.accuracy) <= 1.0 / 30 + 1e-9);
}

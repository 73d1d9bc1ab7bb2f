// The engine end to end: a small CNN (slim layers, conv + pool + fc) trains
// with Adam on generated, learnable images (modules/datasets/synthetic.h) to
// > 98% accuracy on held-out images in seconds, on both backends.
#include <doctest/doctest.h>

#include <cstring>

#include "hub/graph/optimizer.h"
#include "hub/graph/session.h"
#include "hub/ops/reduction.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"
#include "modules/datasets/synthetic.h"
#include "modules/slim/layers.h"

using namespace hub;

namespace {
Tensor rows(const Tensor& t, int64_t begin, int64_t n) {
  int64_t per = t.num_elements() / t.dim(0);
  Shape s = t.shape();
  s.set_dim(0, n);
  Tensor out(t.dtype(), s);
  std::memcpy(out.raw_data(), static_cast<const char*>(t.raw_data()) + begin * per * dtype_size(t.dtype()),
              out.nbytes());
  return out;
}

// 60 Adam steps of 32 over 960 training images (1920 examples seen), then
// the accuracy on 500 held-out images.
double train_and_test(const std::string& backend) {
  const int64_t size = 16, batch = 32, num_train = 960, num_test = 500, steps = 60;
  datasets::SyntheticSet train = datasets::make_bars(num_train, size, 1);
  datasets::SyntheticSet test = datasets::make_bars(num_test, size, 2);
  Graph g;
  g.set_seed(7);
  Scope s(g);
  Output images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, size, size, 1}, "images");
  Output labels = ops::placeholder(s, DType::kInt32, {kUnknownDim}, "labels");
  slim::LayerOptions lo;
  Output x = slim::conv2d(s, images, 16, {5, 5}, "conv1", lo);
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "VALID", "pool1");
  x = slim::conv2d(s, x, 32, {3, 3}, "conv2", lo);
  x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "VALID", "pool2");
  x = slim::fully_connected(s, slim::flatten(s, x), 64, "fc3", lo);
  slim::LayerOptions linear = lo;
  linear.activation = nullptr;
  Output logits = slim::fully_connected(s, x, datasets::SyntheticSet::kNumClasses, "logits", linear);
  Output loss = ops::sparse_softmax_cross_entropy(s, logits, labels);
  Output predictions = ops::arg_max(s, logits, 1);
  GradientOps grads = build_gradients(s, loss);
  auto adam = make_optimizer("adam", LearningRateSchedule::fixed(0.003), [] {
    OptimizerOptions o;
    o.opt_epsilon = 1e-8;  // Keras/PyTorch's epsilon; slim's 1.0 suits long ImageNet runs
    return o;
  }());
  VariableStore vars;
  vars.initialize(g);
  Session session(g, &vars, {&find_backend(backend)});
  for (int64_t step = 0; step < steps; ++step) {
    int64_t begin = (step * batch) % num_train;  // num_train is a multiple of batch
    train_step(session, *adam, vars, grads, loss,
               {{images, rows(train.images, begin, batch)}, {labels, rows(train.labels, begin, batch)}});
  }
  Tensor pred = session.run_one({{images, test.images}}, predictions);
  int64_t correct = 0;
  for (int64_t i = 0; i < num_test; ++i) correct += pred.data<int64_t>()[i] == test.labels.data<int32_t>()[i];
  return static_cast<double>(correct) / static_cast<double>(num_test);
}
}  // namespace

TEST_CASE("a small CNN learns the bars data set to > 98% test accuracy") {
  for (const char* b : {"onednn", "reference"}) {
    INFO("backend " << b);
    double acc = train_and_test(b);
    MESSAGE("test accuracy on " << b << ": " << acc);
    CHECK(acc > 0.98);
  }
}

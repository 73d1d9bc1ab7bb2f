// Side-by-side training and inference throughput: hub vs LibTorch, same
// architecture, same batch, same threads, in one process and one run.
//
//   mnist    training images/s, batch 100, Adam (TF official MNIST CNN)
//   cifar10  training images/s, batch 128, 24x24x3, SGD (CIFAR-10 tutorial model)
//   mobilenet_v1 1.0/224 training images/s, batch 32, SGD, 1001 classes, batch
//            norm in training mode (batch statistics, moving averages updated);
//            hub also without the session's batch-norm + ReLU6 fusion
//            (SessionOptions::fuse, shown in the note, not in the ratio);
//            LibTorch both in NCHW and channels-last, the ratio against the faster
//   mobilenet_v1 1.0/224 inference images/s at batch 1 and batch 32 (hub: a
//            hub::Module, so the optimised inference graph)
//
//   ./build/bench/model_bench [--profile] [repeats [seconds [case]]]   (3 3;
//       case: a substring of the case names below, e.g. "mobilenet_v1 train")
//
// --profile adds, after each training case, where hub's step goes: `repeats`
// steps with SessionOptions::profile, the node times summed per op.
//
// Each case is timed `repeats` times alternating hub and LibTorch; the line
// printed per case gives both medians and ends with ratio=hub/LibTorch.
// Run it through bench/run_model_bench.sh, which sets LibTorch's best
// configuration on this machine (OMP_NUM_THREADS = cores,
// OPENBLAS_CORETYPE=SkylakeX, tcmalloc preloaded).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "hub/core/parallel.h"
#include "hub/graph/optimizer.h"
#include "hub/graph/session.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"
#include "modules/nets/nets.h"
#include "net_module.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs fn (which processes `images` images) for about `seconds` after a warm
// up; returns images per second.
double throughput(const std::function<void()>& fn, int64_t images, double seconds) {
  fn();
  fn();
  int iters = 0;
  auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < seconds || iters < 3) {
    fn();
    ++iters;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return static_cast<double>(images) * iters / elapsed;
}

// ---- hub side -------------------------------------------------------------------
struct HubTrain {
  hub::Graph graph;
  hub::VariableStore vars;
  hub::Output images, labels, loss;
  hub::GradientOps grads;
  std::unique_ptr<hub::Optimizer> opt;
  std::unique_ptr<hub::Session> session;
  hub::Tensor x, y;

  HubTrain(const std::string& net, int64_t batch, int64_t size, int64_t channels, int64_t classes,
           const std::string& optimizer, double lr, bool profile, bool fuse = true) {
    hub::Scope s(graph);
    images = hub::ops::placeholder(s, hub::DType::kFloat32, {batch, size, size, channels}, "images");
    labels = hub::ops::placeholder(s, hub::DType::kInt64, {batch}, "labels");
    hub::nets::NetOptions o;
    o.num_classes = classes;
    o.is_training = true;
    hub::nets::Net n = hub::nets::build_net(net, s, images, o);
    loss = hub::ops::sparse_softmax_cross_entropy(s, n.logits, labels);
    grads = hub::build_gradients(s, loss);
    opt = hub::make_optimizer(optimizer, hub::LearningRateSchedule::fixed(lr));
    vars.initialize(graph);
    hub::SessionOptions options;
    options.profile = profile;
    options.fuse = fuse;
    session = std::make_unique<hub::Session>(graph, &vars, options);
    x = hub::Tensor(hub::DType::kFloat32, {batch, size, size, channels});
    hub::fill_uniform(x.data<float>(), x.num_elements(), 7, 0, 1);
    y = hub::Tensor::zeros(hub::DType::kInt64, {batch});
    for (int64_t i = 0; i < batch; ++i) y.data<int64_t>()[i] = i % 10;
  }
  void step() { hub::train_step(*session, *opt, vars, grads, loss, {{images, x}, {labels, y}}); }
  // Made with `profile`: where `steps` steps' time goes (bench::print_profile).
  void print_profile(int steps) {
    bench::print_profile(
        *session, [&] { step(); }, steps, false);
  }
};

// Inference as a module runs it (the optimised graph, hub/module/module.h).
struct HubInfer {
  int64_t macs = 0;
  hub::Module module;
  hub::Tensor x;
  HubInfer(const std::string& net, int64_t batch)
      : module(bench::net_module(net, &macs)), x(bench::uniform({batch, 224, 224, 3}, 7, 0, 1)) {}
  void run() { module(x); }
};

// ---- LibTorch side: the same architectures (NCHW, LibTorch's native layout) ------
struct MnistNet : torch::nn::Module {
  torch::nn::Conv2d c1{torch::nn::Conv2dOptions(1, 32, 5).padding(2)};
  torch::nn::Conv2d c2{torch::nn::Conv2dOptions(32, 64, 5).padding(2)};
  torch::nn::Linear f1{7 * 7 * 64, 1024}, f2{1024, 10};
  torch::nn::Dropout drop{0.4};
  MnistNet() {
    register_module("c1", c1);
    register_module("c2", c2);
    register_module("f1", f1);
    register_module("f2", f2);
    register_module("drop", drop);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(c1(x)), 2);
    x = torch::max_pool2d(torch::relu(c2(x)), 2);
    x = drop(torch::relu(f1(x.flatten(1))));
    return f2(x);
  }
};

struct Cifar10Net : torch::nn::Module {
  torch::nn::Conv2d c1{torch::nn::Conv2dOptions(3, 64, 5).padding(2)};
  torch::nn::Conv2d c2{torch::nn::Conv2dOptions(64, 64, 5).padding(2)};
  // TF LRN(depth_radius 4, alpha a) == torch LocalResponseNorm(size 9, alpha a*9).
  torch::nn::LocalResponseNorm lrn{torch::nn::LocalResponseNormOptions(9).alpha(0.001).beta(0.75).k(1.0)};
  torch::nn::Linear l3{6 * 6 * 64, 384}, l4{384, 192}, l5{192, 10};
  Cifar10Net() {
    register_module("c1", c1);
    register_module("c2", c2);
    register_module("lrn", lrn);
    register_module("l3", l3);
    register_module("l4", l4);
    register_module("l5", l5);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = lrn(torch::max_pool2d(torch::relu(c1(x)), 3, 2, 1));
    x = torch::max_pool2d(lrn(torch::relu(c2(x))), 3, 2, 1);
    x = torch::relu(l3(x.flatten(1)));
    return l5(torch::relu(l4(x)));
  }
};

struct MobileNet : torch::nn::Module {
  torch::nn::Sequential body;
  torch::nn::Linear fc{1024, 1001};
  // conv (no bias) + batch norm + ReLU6, appended to body.
  void conv_bn(int64_t in, int64_t out, int64_t stride, int64_t groups, int64_t k) {
    body->push_back(torch::nn::Conv2d(
        torch::nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).groups(groups).bias(false)));
    body->push_back(torch::nn::BatchNorm2d(out));
    body->push_back(torch::nn::Hardtanh(torch::nn::HardtanhOptions().min_val(0).max_val(6)));
  }
  MobileNet() {
    const int64_t cfg[][2] = {{64, 1},  {128, 2}, {128, 1}, {256, 2}, {256, 1},  {512, 2}, {512, 1},
                              {512, 1}, {512, 1}, {512, 1}, {512, 1}, {1024, 2}, {1024, 1}};
    conv_bn(3, 32, 2, 1, 3);
    int64_t in = 32;
    for (auto& c : cfg) {
      conv_bn(in, in, c[1], in, 3);
      conv_bn(in, c[0], 1, 1, 1);
      in = c[0];
    }
    register_module("body", body);
    register_module("fc", fc);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::adaptive_avg_pool2d(body->forward(x), {1, 1});
    return fc(torch::dropout(x.flatten(1), 0.001, is_training()));  // slim's keep_prob 0.999
  }
};

// `note` says which LibTorch configuration `theirs` is, where there are several.
void report(const char* name, const std::vector<double>& ours, const std::vector<double>& theirs,
            const std::string& note = "") {
  double a = median(ours), b = median(theirs);
  std::printf("%-28s hub %9.1f img/s   libtorch %9.1f img/s %s  ratio=%.2f\n", name, a, b, note.c_str(), a / b);
  std::fflush(stdout);
}

// LibTorch's MobileNet training step (SGD), activations and filters in NCHW
// or channels-last (NHWC in memory): LibTorch's oneDNN convolutions and its
// batch norm run either way, and which is faster depends on the machine.
struct TorchMobilenetTrain {
  std::shared_ptr<MobileNet> net = std::make_shared<MobileNet>();
  torch::optim::SGD sgd{net->parameters(), torch::optim::SGDOptions(0.01)};
  torch::Tensor x = torch::rand({32, 3, 224, 224}), y = torch::arange(32) % 10;
  explicit TorchMobilenetTrain(bool channels_last) {
    if (!channels_last) return;
    x = x.contiguous(torch::MemoryFormat::ChannelsLast);
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : net->parameters())
      if (p.dim() == 4) p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
  }
  void step() {
    sgd.zero_grad();
    torch::nn::functional::cross_entropy(net->forward(x), y).backward();
    sgd.step();
  }
};

}  // namespace

int main(int argc, char** argv) {
  const bool profile = argc > 1 && std::string(argv[1]) == "--profile";
  if (profile) {
    --argc;
    ++argv;
  }
  int repeats = argc > 1 ? std::atoi(argv[1]) : 3;
  double seconds = argc > 2 ? std::atof(argv[2]) : 3.0;
  int threads = hub::num_threads();
  torch::set_num_threads(threads);
  const std::string only = argc > 3 ? argv[3] : "";
  auto wanted = [&](const std::string& name) { return name.find(only) != std::string::npos; };
  std::printf("threads=%d repeats=%d seconds/measure=%.1f\n", threads, repeats, seconds);
  if (wanted("mnist train (batch 100)")) {
    HubTrain hub_mnist("mnist", 100, 28, 1, 10, "adam", 1e-3, profile);
    auto net = std::make_shared<MnistNet>();
    torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-3));
    torch::Tensor x = torch::full({100, 1, 28, 28}, 0.5f), y = torch::arange(100) % 10;
    std::vector<double> a, b;
    for (int r = 0; r < repeats; ++r) {
      a.push_back(throughput([&] { hub_mnist.step(); }, 100, seconds));
      b.push_back(throughput(
          [&] {
            adam.zero_grad();
            torch::nn::functional::cross_entropy(net->forward(x), y).backward();
            adam.step();
          },
          100, seconds));
    }
    report("mnist train (batch 100)", a, b);
    if (profile) hub_mnist.print_profile(repeats);
  }
  if (wanted("cifar10 train (batch 128)")) {
    HubTrain hub_cifar("cifar10", 128, 24, 3, 10, "sgd", 0.1, profile);
    auto net = std::make_shared<Cifar10Net>();
    torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.1));
    torch::Tensor x = torch::full({128, 3, 24, 24}, 0.5f), y = torch::arange(128) % 10;
    std::vector<double> a, b;
    for (int r = 0; r < repeats; ++r) {
      a.push_back(throughput([&] { hub_cifar.step(); }, 128, seconds));
      b.push_back(throughput(
          [&] {
            sgd.zero_grad();
            torch::nn::functional::cross_entropy(net->forward(x), y).backward();
            sgd.step();
          },
          128, seconds));
    }
    report("cifar10 train (batch 128)", a, b);
    if (profile) hub_cifar.print_profile(repeats);
  }
  if (wanted("mobilenet_v1 train (batch 32)")) {
    HubTrain hub_mobilenet("mobilenet_v1", 32, 224, 3, 1001, "sgd", 0.01, profile);
    // The same step without the session's batch-norm + ReLU6 fusion, for
    // its gain measured under the same load (SessionOptions::fuse).
    HubTrain unfused("mobilenet_v1", 32, 224, 3, 1001, "sgd", 0.01, false, false);
    TorchMobilenetTrain nchw(false), channels_last(true);
    std::vector<double> a, b, c, d;
    for (int r = 0; r < repeats; ++r) {
      a.push_back(throughput([&] { hub_mobilenet.step(); }, 32, seconds));
      b.push_back(throughput([&] { nchw.step(); }, 32, seconds));
      c.push_back(throughput([&] { channels_last.step(); }, 32, seconds));
      d.push_back(throughput([&] { unfused.step(); }, 32, seconds));
    }
    // Against LibTorch's faster layout.
    const bool cl = median(c) > median(b);
    char note[128];
    std::snprintf(note, sizeof note, "(%s; %s %.1f img/s; hub unfused %.1f img/s)", cl ? "channels_last" : "NCHW",
                  cl ? "NCHW" : "channels_last", median(cl ? b : c), median(d));
    report("mobilenet_v1 train (batch 32)", a, cl ? c : b, note);
    if (profile) hub_mobilenet.print_profile(repeats);
  }
  for (int64_t batch : {1, 32}) {
    const std::string name = "mobilenet_v1 infer (batch " + std::to_string(batch) + ")";
    if (!wanted(name)) continue;
    HubInfer hub_mobilenet("mobilenet_v1", batch);
    auto net = std::make_shared<MobileNet>();
    net->eval();
    torch::NoGradGuard no_grad;
    torch::Tensor x = torch::rand({batch, 3, 224, 224});
    std::vector<double> a, b;
    for (int r = 0; r < repeats; ++r) {
      a.push_back(throughput([&] { hub_mobilenet.run(); }, batch, seconds));
      b.push_back(throughput([&] { net->forward(x); }, batch, seconds));
    }
    report(name.c_str(), a, b);
  }
  return 0;
}

// distributed_bench: data parallelism (modules/train/distributed.h,
// docs/distributed.md).
//
//   distributed_bench step NET BATCH STEPS [BUCKET_MB]
//       The training step of `hub train` (DataParallelStep, momentum) on random
//       images, alone or under `mpirun -np N`: BATCH images per rank, the median
//       of STEPS steps after two warm-up steps; rank 0 prints seconds per step
//       and the job's images/s.
//   distributed_bench allreduce MIB REPEATS
//       Under mpirun: the median time of one all-reduce of MIB MiB of floats, and
//       the bus bandwidth 2 (N-1)/N * bytes / time.
//   distributed_bench nets [SMALL_BATCH LARGE_BATCH STEPS]
//       For every built-in family: the floats all-reduced per step (trainable
//       parameters, batch-norm moving statistics, the loss) and the ring
//       all-reduce model's seconds per step on 10, 25 and 100 Gb/s; then,
//       unless STEPS is 0, the measured step time on one process (SMALL_BATCH
//       images for the 28-32 px nets, LARGE_BATCH for the ImageNet ones;
//       default 100, 16, 2 steps) and the model's scaling efficiency at 2-64
//       nodes (see docs/distributed.md for the formula and assumptions).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "hub/core/parallel.h"
#include "hub/graph/session.h"
#include "hub/ops/array.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"
#include "modules/nets/nets.h"
#include "modules/train/distributed.h"

using namespace hub;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A net's training graph as `hub train` builds it: net, cross entropy plus
// weight decay, gradients of every trainable variable.
struct TrainGraph {
  Graph graph;
  Output images, labels, loss;
  GradientOps grads;
  int64_t size = 0, classes = 0;
  TrainGraph(const std::string& name) {
    const nets::NetInfo& info = nets::find_net(name);
    size = info.image_size;
    classes = info.default_classes;
    graph.set_seed(1);
    Scope s(graph);
    images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, size, size, info.channels}, "images");
    labels = ops::placeholder(s, DType::kInt64, {kUnknownDim}, "labels");
    nets::NetOptions o;
    o.num_classes = classes;
    o.is_training = true;
    nets::Net net = nets::build_net(name, s, images, o);
    loss = ops::total_loss(s, ops::sparse_softmax_cross_entropy(s, net.logits, labels));
    grads = build_gradients(s, loss);
  }
};

// Median seconds per training step of `name` with `batch` images per rank.
double step_seconds(const std::string& name, int64_t batch, int steps, int64_t bucket_bytes) {
  train::Job& job = train::job();
  TrainGraph t(name);
  VariableStore vars;
  vars.initialize(t.graph);
  auto optimizer = make_optimizer("momentum", LearningRateSchedule::fixed(0.001));
  train::broadcast_training_state(job, vars, *optimizer, nullptr);
  Session session(t.graph, &vars);
  train::DataParallelStep step(job, t.graph, t.grads, t.loss, bucket_bytes);
  const nets::NetInfo& info = nets::find_net(name);
  Tensor images(DType::kFloat32, {batch, t.size, t.size, info.channels});
  float* p = images.data<float>();
  for (int64_t i = 0; i < images.num_elements(); ++i)
    p[i] = static_cast<float>((i * 7919 + job.rank() * 104729) % 1000) / 1000.0f;
  Tensor labels(DType::kInt64, {batch});
  for (int64_t i = 0; i < batch; ++i) labels.data<int64_t>()[i] = (i * 31 + job.rank()) % t.classes;
  std::vector<double> times;
  for (int i = 0; i < steps + 2; ++i) {
    double seconds[1] = {0};
    auto start = Clock::now();
    step.run(session, *optimizer, vars, {{t.images, images}, {t.labels, labels}});
    seconds[0] = std::chrono::duration<double>(Clock::now() - start).count();
    job.sum(seconds, 1, "step time");  // the job's mean: every rank waits for the slowest anyway
    if (i >= 2) times.push_back(seconds[0] / job.size());
  }
  return median(times);
}

// Seconds of one ring all-reduce of `bytes` on `nodes` nodes: reduce-scatter
// and all-gather, N - 1 steps each, every step moving bytes / N per node,
// each of the `buckets` messages paying the latency alpha per step.
double ring_seconds(int nodes, double bytes, double link_bits_per_s, int buckets) {
  const double kEfficiency = 0.9, kAlpha = 20e-6;  // usable share of the line rate; per-message latency
  const double bandwidth = kEfficiency * link_bits_per_s / 8;
  return 2.0 * (nodes - 1) / nodes * bytes / bandwidth + 2.0 * (nodes - 1) * buckets * kAlpha;
}

int usage() {
  std::fprintf(stderr,
               "usage: distributed_bench step NET BATCH STEPS [BUCKET_MB]\n"
               "       distributed_bench allreduce MIB REPEATS\n"
               "       distributed_bench nets [SMALL_BATCH LARGE_BATCH STEPS]\n");
  return 2;
}

int run(int argc, char** argv, train::Job& job) {
  const std::string mode = argv[1];
  {
    if (mode == "step" && (argc == 5 || argc == 6)) {
      const int64_t batch = std::atoll(argv[3]);
      const int64_t bucket = static_cast<int64_t>((argc == 6 ? std::atof(argv[5]) : 4.0) * (1 << 20));
      const double t = step_seconds(argv[2], batch, std::atoi(argv[4]), bucket);
      if (job.chief())
        std::printf("%s: %d rank(s) x %d thread(s), batch %lld per rank: %.4f s/step, %.1f images/s\n", argv[2],
                    job.size(), num_threads(), static_cast<long long>(batch), t,
                    static_cast<double>(batch * job.size()) / t);
      return 0;
    }
    if (mode == "allreduce" && argc == 4) {
      const int64_t n = static_cast<int64_t>(std::atof(argv[2]) * (1 << 20) / 4);
      std::vector<float> data(static_cast<size_t>(n), 1.0f);
      std::vector<double> times;
      for (int i = 0; i < std::atoi(argv[3]) + 1; ++i) {
        auto start = Clock::now();
        job.sum(data.data(), n, "benchmark all-reduce");
        if (i > 0) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      }
      const double t = median(times), bytes = 4.0 * static_cast<double>(n);
      if (job.chief())
        std::printf("all-reduce of %.1f MiB on %d ranks: %.3f ms, bus bandwidth %.2f GB/s\n", bytes / (1 << 20),
                    job.size(), t * 1e3, 2.0 * (job.size() - 1) / job.size() * bytes / t / 1e9);
      return 0;
    }
    if (mode == "nets" && (argc == 2 || argc == 5)) {
      const int64_t small = argc == 5 ? std::atoll(argv[2]) : 100, large = argc == 5 ? std::atoll(argv[3]) : 16;
      const int steps = argc == 5 ? std::atoi(argv[4]) : 2;
      const std::vector<std::string> names = {"lenet",         "cifarnet",     "mnist",        "cifar10",
                                              "alexnet_v2",    "vgg_a",        "vgg_16",       "vgg_19",
                                              "inception_v1",  "inception_v3", "resnet_v1_50", "resnet_v1_101",
                                              "resnet_v1_152", "resnet_v2_50", "mobilenet_v1", "mobilenet_v1_025"};
      struct Row {
        std::string name;
        int64_t floats, batch;
        int buckets;
        double seconds;
      };
      std::vector<Row> rows;
      const double links[] = {10e9, 25e9, 100e9};
      std::printf(
          "| net | floats all-reduced per step | MB per step | buckets of 4 MiB |"
          " all-reduce s at 64 nodes, 10 / 25 / 100 Gb/s |\n|---|---:|---:|---:|---:|\n");
      for (const std::string& name : names) {
        TrainGraph t(name);
        Row r{name, 0, nets::find_net(name).image_size <= 32 ? small : large, 0, 0};
        train::DataParallelStep step(job, t.graph, t.grads, t.loss, int64_t{4} << 20);
        r.floats = step.floats_per_step();
        r.buckets = step.num_buckets();
        std::printf("| %s | %lld | %.2f | %d |", name.c_str(), static_cast<long long>(r.floats),
                    4e-6 * static_cast<double>(r.floats), r.buckets);
        for (double link : links)
          std::printf(" %.3f%s", ring_seconds(64, 4.0 * static_cast<double>(r.floats), link, r.buckets),
                      link == links[2] ? " |\n" : " /");
        rows.push_back(r);
      }
      if (steps == 0) return 0;
      std::printf("\n| net | batch per node | step s (measured) |\n|---|---:|---:|\n");
      for (Row& r : rows) {
        r.seconds = step_seconds(r.name, r.batch, steps, int64_t{4} << 20);
        std::printf("| %s | %lld | %.3f |\n", r.name.c_str(), static_cast<long long>(r.batch), r.seconds);
        std::fflush(stdout);
      }
      const int nodes[] = {2, 4, 8, 16, 32, 64};
      for (double link : links) {
        std::printf("\nEfficiency at %.0f Gb/s (all-reduce after the step, no overlap):\n\n| net |", link / 1e9);
        for (int n : nodes) std::printf(" %d |", n);
        std::printf("\n|---|");
        for (size_t i = 0; i < std::size(nodes); ++i) std::printf("---:|");
        std::printf("\n");
        for (const Row& r : rows) {
          std::printf("| %s |", r.name.c_str());
          for (int n : nodes)
            std::printf(" %.2f |", r.seconds / (r.seconds +
                                                ring_seconds(n, 4.0 * static_cast<double>(r.floats), link, r.buckets)));
          std::printf("\n");
        }
      }
      return 0;
    }
    return usage();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  try {
    train::Job& job = train::job();
    return train::run_on_job(job, [&] { return run(argc, argv, job); });
  } catch (const Error& e) {
    std::fprintf(stderr, "distributed_bench: %s\n", e.what());
    return 1;
  }
}

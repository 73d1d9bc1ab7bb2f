#include "modules/train/distributed.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>

#include "hub/core/crc32c.h"
#include "hub/core/logging.h"
#include "hub/core/parallel.h"
#include "hub/module/safetensors.h"

namespace hub::train {

#if HUB_WITH_MPI
// distributed_mpi.cc: starts MPI (on its own thread) and returns the job and
// the number of its ranks on this node.
std::unique_ptr<Job> start_mpi_job(int* local_size);
#endif

namespace {

// This process alone.
class LocalJob final : public Job {
 public:
  LocalJob() : Job(0, 1) {}
  std::future<void> start_sum(float*, int64_t, std::string) override {
    std::promise<void> done;
    done.set_value();
    return done.get_future();
  }
  void sum(double*, int64_t, const std::string&) override {}
  void broadcast(std::string*, const std::string&) override {}
  void gather(const std::string& bytes, std::vector<std::string>* all, const std::string&) override { *all = {bytes}; }
};

// What the launcher told this process in its environment: Open MPI's mpirun
// (OMPI_COMM_WORLD_*), PMIx (PMIX_RANK: Open MPI 5, srun --mpi=pmix), PMI
// (PMI_RANK/PMI_SIZE: MPICH's hydra, srun --mpi=pmi2).
struct Launch {
  bool by_launcher = false;
  int rank = 0;
  int size = 1;
  std::string variable;  // the variable that told us, for messages
};

Launch launch_environment() {
  Launch l;
  auto number = [](const char* name, int* out) {
    const char* v = std::getenv(name);
    if (!v) return false;
    *out = std::atoi(v);
    return true;
  };
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (number(name, &l.rank)) {
      l.by_launcher = true;
      l.variable = name;
      break;
    }
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (number(name, &l.size)) {
      l.by_launcher = true;
      if (l.variable.empty()) l.variable = name;
      break;
    }
  return l;
}

#if HUB_WITH_MPI
// Threads per rank without $HUB_NUM_THREADS: the CPUs this process is bound
// to, or, when it is not bound (its mask is every CPU), its share of them.
int threads_per_rank(int local_ranks) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return std::max(1, all / local_ranks);
  const int bound = CPU_COUNT(&set);
  return bound < all ? std::max(1, bound) : std::max(1, all / local_ranks);
}
#endif

std::unique_ptr<Job> make_job() {
  const Launch launch = launch_environment();
#if HUB_WITH_MPI
  if (launch.by_launcher) {
    int local = 1;
    std::unique_ptr<Job> job = start_mpi_job(&local);
    if (job->size() > 1) {
      if (!std::getenv("HUB_NUM_THREADS")) set_num_threads(threads_per_rank(local));
      if (!job->chief() && !std::getenv("HUB_LOG_LEVEL")) set_log_level(LogLevel::kWarning);
      HUB_LOG(Info) << "MPI job of " << job->size() << " ranks (" << local << " on this node), " << num_threads()
                    << " threads per rank";
    }
    return job;
  }
#else
  if (launch.size > 1 || launch.rank > 0)
    throw_error(Code::kFailedPrecondition,
                "this process was started as rank " + std::to_string(launch.rank) + " of " +
                    std::to_string(launch.size) + " (" + launch.variable +
                    " is set) but hub was built without MPI, so the ranks would train "
                    "separately and overwrite each other's checkpoints; build hub with libopenmpi-dev installed "
                    "(meson setup -Dmpi=enabled) or run it without mpirun");
#endif
  return std::make_unique<LocalJob>();
}

}  // namespace

Job& job() {
  static std::unique_ptr<Job> instance = make_job();
  return *instance;
}

bool built_with_mpi() { return HUB_WITH_MPI != 0; }

Error Job::in_context(const Error& e) const {
  if (size_ == 1) return e;
  return e.with_context("rank " + std::to_string(rank_) + " of " + std::to_string(size_));
}

void check_replica_flags(const ReplicaFlags& f, const Job& job) {
  const std::string n = std::to_string(job.size());
  auto bad = [](const std::string& message) {
    throw_error(Code::kInvalidArgument, message + " (docs/distributed.md)");
  };
  if (f.num_clones == 0 || f.num_clones < -1) bad("--num_clones " + std::to_string(f.num_clones) + " must be >= 1");
  if (f.num_clones > 1)
    bad("--num_clones " + std::to_string(f.num_clones) + ": hub runs one clone per process; start " +
        std::to_string(f.num_clones) + " processes instead, `mpirun -np " + std::to_string(f.num_clones) +
        " hub train ...`, each a clone with --batch_size examples");
  if (f.worker_replicas >= 0 && f.worker_replicas != job.size())
    bad("--worker_replicas " + std::to_string(f.worker_replicas) + " does not match the " + n +
        " process(es) of this job: the replicas are the processes that mpirun starts, `mpirun -np " +
        std::to_string(std::max(1, f.worker_replicas)) + " hub train ...`");
  if (f.sync_replicas == 0)
    bad("--sync_replicas=false (asynchronous updates through parameter servers) is not supported: hub trains "
        "synchronously, averaging the gradients of the processes of `mpirun -np N hub train ...` every step");
  if (f.replicas_to_aggregate >= 0 && f.replicas_to_aggregate != job.size())
    bad("--replicas_to_aggregate " + std::to_string(f.replicas_to_aggregate) +
        ": every step averages the gradients of all " + n +
        " process(es) of the job (no backup workers); start `mpirun -np " +
        std::to_string(std::max(1, f.replicas_to_aggregate)) + " hub train ...` to aggregate that many");
  if (f.num_ps_tasks > 0)
    bad("--num_ps_tasks " + std::to_string(f.num_ps_tasks) +
        ": hub has no parameter servers; gradients are "
        "all-reduced among the processes of `mpirun -np N hub train ...`");
}

void broadcast_tensors(Job& job, std::map<std::string, Tensor>* tensors, const std::string& what) {
  if (job.size() == 1) return;
  std::string bytes;
  if (job.chief()) bytes = encode_safetensors(*tensors);
  job.broadcast(&bytes, what);
  if (!job.chief()) *tensors = decode_safetensors(bytes, what).tensors;
}

void broadcast_training_state(Job& job, VariableStore& variables, Optimizer& optimizer,
                              ExponentialMovingAverage* moving_averages) {
  if (job.size() == 1) return;
  const std::string kVariables = "variables/", kOptimizer = "optimizer/", kAverages = "averages/";
  std::map<std::string, Tensor> all;
  if (job.chief()) {
    for (const auto& [name, value] : variables.items()) all[kVariables + name] = value;
    for (const auto& [name, value] : optimizer.state()) all[kOptimizer + name] = value;
    if (moving_averages)
      for (const auto& [name, value] : moving_averages->state()) all[kAverages + name] = value;
  }
  broadcast_tensors(job, &all, "broadcast of rank 0's variables");
  if (job.chief()) return;
  std::map<std::string, Tensor> optimizer_state, averages;
  for (auto& [key, value] : all) {
    if (key.rfind(kVariables, 0) == 0)
      variables.assign(key.substr(kVariables.size()), value);
    else if (key.rfind(kOptimizer, 0) == 0)
      optimizer_state[key.substr(kOptimizer.size())] = value;
    else if (key.rfind(kAverages, 0) == 0)
      averages[key.substr(kAverages.size())] = value;
  }
  optimizer.load_state(optimizer_state);
  if (moving_averages) moving_averages->load_state(averages);
}

void check_replicas_agree(Job& job, const std::map<std::string, Tensor>& state, int64_t step) {
  if (job.size() == 1) return;
  uint32_t crc = 0;
  for (const auto& [name, value] : state) {
    crc = crc32c::extend(crc, name.data(), name.size());
    crc = crc32c::extend(crc, value.raw_data(), value.nbytes());
  }
  std::string chief(reinterpret_cast<const char*>(&crc), sizeof crc);
  job.broadcast(&chief, "comparison of the ranks' variables");
  uint32_t want = 0;
  std::memcpy(&want, chief.data(), sizeof want);
  if (want != crc) {
    char text[64];
    std::snprintf(text, sizeof text, "CRC-32C %08x, rank 0's %08x", crc, want);
    throw_error(Code::kInternal, "the variables of rank " + std::to_string(job.rank()) +
                                     " differ from rank 0's after step " + std::to_string(step) + " (" + text +
                                     "): the replicas diverged");
  }
}

// ---- DataParallelStep ----------------------------------------------------------------

DataParallelStep::DataParallelStep(Job& job, const Graph& graph, const GradientOps& gradients, Output loss,
                                   int64_t bucket_bytes)
    : job_(job) {
  if (bucket_bytes <= 0)
    throw_error(Code::kInvalidArgument,
                "the gradient bucket size must be positive, got " + std::to_string(bucket_bytes) + " bytes");
  fetches_.push_back(loss);
  for (Output update : gradients.update_ops) {
    fetches_.push_back(update);
    moving_.push_back(graph.node(graph.node(update).inputs.at(0)).name);
  }
  for (size_t i = 0; i < gradients.gradients.size(); ++i) {
    fetches_.push_back(gradients.gradients[i]);
    variables_.push_back(gradients.variables[i]);
  }
  // The executor runs nodes in id order, so this is the order in which the
  // backward pass produces the tensors (the last layer's gradients first).
  std::vector<size_t> order(fetches_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return fetches_[a].node < fetches_[b].node; });
  const int64_t capacity = std::max<int64_t>(1, bucket_bytes / static_cast<int64_t>(sizeof(float)));
  std::vector<int64_t> fill;  // floats per bucket
  entries_.resize(fetches_.size());
  for (size_t i : order) {
    const TensorSpec& spec = graph.spec(fetches_[i]);
    HUB_CHECK(spec.dtype == DType::kFloat32 && spec.shape.is_fully_defined(),
              "reduced tensor '" + graph.tensor_name(fetches_[i]) + "' is " + spec.to_string() + ", expected float32");
    const int64_t n = spec.shape.num_elements();
    if (fill.empty() || (fill.back() > 0 && fill.back() + n > capacity)) fill.push_back(0);
    entries_[i] = {static_cast<int>(fill.size()) - 1, fill.back(), n, spec.shape, {}};
    fill.back() += n;
    total_floats_ += n;
  }
  buckets_.resize(fill.size());
  if (job_.size() == 1) return;  // nothing is reduced: no buffers
  for (size_t b = 0; b < fill.size(); ++b)
    buckets_[b].storage = allocate_cpu_storage(static_cast<size_t>(fill[b]) * sizeof(float));
  for (Entry& e : entries_) {
    ++buckets_[e.bucket].count;
    buckets_[e.bucket].floats = fill[e.bucket];
    e.averaged =
        Tensor(DType::kFloat32, e.shape, buckets_[e.bucket].storage, static_cast<size_t>(e.offset) * sizeof(float));
  }
}

void DataParallelStep::start_ready_buckets() {
  while (next_bucket_ < static_cast<int>(buckets_.size()) && buckets_[next_bucket_].pending == 0) {
    Bucket& b = buckets_[next_bucket_];
    b.reduced = job_.start_sum(static_cast<float*>(b.storage->data), b.floats,
                               "all-reduce of gradient bucket " + std::to_string(next_bucket_ + 1) + " of " +
                                   std::to_string(buckets_.size()) + " (" + std::to_string(b.floats * 4) + " bytes)");
    ++next_bucket_;
  }
}

Tensor DataParallelStep::run(Session& session, Optimizer& optimizer, VariableStore& variables, const FeedList& feeds,
                             Extras* extras) {
  std::vector<Output> fetches = fetches_;
  if (extras) fetches.insert(fetches.end(), extras->fetches.begin(), extras->fetches.end());
  std::vector<Tensor> values;
  if (job_.size() == 1) {
    values = session.run(feeds, fetches);
  } else {
    for (Bucket& b : buckets_) b.pending = b.count;
    next_bucket_ = 0;
    // Each rank's share of the mean, 1/N of its value, goes into the bucket
    // (exact for N a power of two), so the sum is the mean.
    const float share = 1.0f / static_cast<float>(job_.size());
    auto ready = [&](size_t i, const Tensor& value) {
      if (i >= entries_.size()) return;  // an extra fetch
      Entry& e = entries_[i];
      const float* from = value.data<float>();
      float* to = e.averaged.data<float>();
      for (int64_t k = 0; k < e.size; ++k) to[k] = from[k] * share;
      --buckets_[e.bucket].pending;
      start_ready_buckets();
    };
    std::vector<Tensor> produced;
    try {
      produced = session.run(feeds, fetches, {}, ready);
    } catch (...) {
      // The reductions already started use the buckets until they end.
      for (int b = 0; b < next_bucket_; ++b) try {
          buckets_[b].reduced.get();
        } catch (const Error&) {
        }
      throw;
    }
    HUB_CHECK(next_bucket_ == static_cast<int>(buckets_.size()), "a reduced tensor was not reported by the session");
    for (Bucket& b : buckets_) b.reduced.get();
    for (const Entry& e : entries_) values.push_back(e.averaged);
    values.insert(values.end(), produced.begin() + static_cast<std::ptrdiff_t>(fetches_.size()), produced.end());
    // (On one process the update ops changed the variables in place.)
    for (size_t k = 0; k < moving_.size(); ++k) copy_into(values[1 + k], variables.at(moving_[k]));
  }
  GradientList list;
  for (size_t j = 0; j < variables_.size(); ++j) list.push_back({variables_[j], values[1 + moving_.size() + j]});
  optimizer.apply_gradients(variables, list);
  if (extras) {
    extras->values.assign(values.begin() + static_cast<std::ptrdiff_t>(fetches_.size()), values.end());
    extras->gradients = std::move(list);
  }
  return values[0];
}

}  // namespace hub::train

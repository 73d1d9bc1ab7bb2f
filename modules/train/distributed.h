// Data parallelism across processes (docs/distributed.md): the job a process
// belongs to, the collectives training needs, and the step of the training
// loop that averages gradients over the job.
//
// A job is either this process alone, or the ranks of an MPI job started by
// `mpirun -np N hub train ...` (or `srun`): every rank builds the same graph,
// starts from rank 0's variables (broadcast_training_state), reads its own
// shard of the data (modules/datasets/reader.h), computes gradients on its
// batch, and DataParallelStep averages them over the ranks, so every rank
// applies the same update and holds the same variables. Rank 0, the chief,
// alone writes checkpoints, summaries and logs.
//
// On one process every collective does nothing, and DataParallelStep is the
// plain training step: the reduction is a no-op. MPI lives behind Job and is
// compiled only when meson finds it (-Dmpi=auto|enabled|disabled,
// distributed_mpi.cc).
//
// Failure: a collective that the other ranks do not join within
// $HUB_COLLECTIVE_TIMEOUT seconds (default 600) throws kDeadlineExceeded, and
// an error MPI reports throws kUnavailable, each naming the operation; the job
// is then broken and every later collective throws at once. A rank that ends
// with an error never calls MPI_Finalize (which would wait for ranks that
// wait for it): its non-zero exit makes mpirun end the whole job, naming the
// rank. The entry points (train, evaluate, retrain) mark the job failed and
// add "rank r of N" to the error.
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hub/core/error.h"
#include "hub/graph/optimizer.h"
#include "hub/graph/session.h"

namespace hub::train {

class Job {
 public:
  virtual ~Job() = default;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank 0: the one rank that writes checkpoints, summaries, logs and outputs.
  bool chief() const { return rank_ == 0; }

  // Collectives: every rank makes the same calls in the same order with the
  // same sizes; each returns (or its future becomes ready) once every rank
  // made it. `what` names the operation in errors. Errors as in the file
  // comment. On one process they leave the data as it is.
  //
  // Starts summing data[0, n) over the ranks, in place. Reductions complete
  // in the order they were started; `data` must stay valid and untouched
  // until the future is ready. The result is the same on every rank.
  virtual std::future<void> start_sum(float* data, int64_t n, std::string what) = 0;
  void sum(float* data, int64_t n, std::string what) { start_sum(data, n, std::move(what)).get(); }
  virtual void sum(double* data, int64_t n, const std::string& what) = 0;
  // Rank 0's bytes to every rank (*bytes is replaced on the others).
  virtual void broadcast(std::string* bytes, const std::string& what) = 0;
  // Every rank's bytes to rank 0: *all gets them in rank order on rank 0 and
  // is left empty on the others.
  virtual void gather(const std::string& bytes, std::vector<std::string>* all, const std::string& what) = 0;

  // Records that this rank is ending with an error, so that it leaves the
  // job without MPI_Finalize (see the file comment).
  void mark_failed() { failed_ = true; }
  // `e` with "rank r of N" added (unchanged on one process).
  Error in_context(const Error& e) const;

 protected:
  Job(int rank, int size) : rank_(rank), size_(size) {}
  bool failed() const { return failed_; }

 private:
  int rank_;
  int size_;
  bool failed_ = false;
};

// The job of this process, created on the first call: an MPI job when the
// process was started by an MPI launcher (Open MPI's mpirun, or srun with
// PMIx/PMI) and hub was built with MPI, else this process alone. On an MPI
// job, ranks other than 0 log warnings and errors only (unless
// $HUB_LOG_LEVEL is set), and without $HUB_NUM_THREADS each rank uses the
// cores it is bound to, or its share of the node's cores when unbound.
// Throws kFailedPrecondition when a launcher started several processes but
// hub was built without MPI (they would train separately and overwrite each
// other's checkpoints), and kUnavailable when MPI fails to start.
Job& job();
// Whether this build has MPI (meson found it).
bool built_with_mpi();

// Runs `fn` (an entry point's body) and, when it throws hub::Error, marks the
// job failed and rethrows the error in the job's context.
template <class Fn>
auto run_on_job(Job& job, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    job.mark_failed();
    throw job.in_context(e);
  }
}

// slim's deployment flags (train_image_classifier.py), mapped onto the job.
// Unset (< 0, or sync_replicas unset) flags are not checked.
struct ReplicaFlags {
  int num_clones = -1;             // clones in one process: only 1 (a clone is a rank here)
  int worker_replicas = -1;        // must equal the number of ranks
  int sync_replicas = -1;          // 1: synchronous, as hub always is; 0 refused
  int replicas_to_aggregate = -1;  // must equal the number of ranks
  int num_ps_tasks = -1;           // 0 only: there are no parameter servers
};
// Throws kInvalidArgument naming the flag and pointing to mpirun.
void check_replica_flags(const ReplicaFlags& flags, const Job& job);

// Rank 0's tensors replace those in *tensors on the other ranks.
void broadcast_tensors(Job& job, std::map<std::string, Tensor>* tensors, const std::string& what);

// The variables, optimizer state (slots, global step) and moving averages of
// rank 0 replace those of the other ranks. The variable store, optimizer and
// moving averages must have been built the same way on every rank.
void broadcast_training_state(Job& job, VariableStore& variables, Optimizer& optimizer,
                              ExponentialMovingAverage* moving_averages);

// Throws kInternal on every rank whose `state` (e.g. a checkpoint's tensors)
// differs from rank 0's, with both CRC-32Cs and the step: the replicas must
// stay bit-identical. Costs one pass over the tensors and one broadcast.
void check_replicas_agree(Job& job, const std::map<std::string, Tensor>& state, int64_t step);

// One synchronous data-parallel training step:
//   1. run the loss, the gradients and the graph's update ops (batch-norm
//      moving statistics) on this rank's batch;
//   2. average all of them over the ranks: they are packed, in the order the
//      executor produces them, into buckets of about bucket_bytes, and each
//      bucket's reduction starts as soon as the backward pass has produced
//      its last gradient, overlapping the rest of the backward pass;
//   3. write the averaged moving statistics into the variables and apply the
//      averaged gradients with the optimizer.
// On one process step 2 does nothing: this is train_step() of
// hub/graph/optimizer.h. With gradients averaged, N ranks with batch b apply
// the update of one process with batch N*b (the loss is a mean over the
// batch). Batch normalization and dropout are the exceptions: each rank
// normalizes with its own batch's statistics and draws its own masks; the
// moving statistics are the average of the ranks' updates.
class DataParallelStep {
 public:
  // `gradients` from build_gradients on `graph`; bucket_bytes > 0 (a tensor
  // larger than it is a bucket of its own). Throws kInvalidArgument for a
  // bucket size <= 0, kInternal for a gradient that is not float32.
  DataParallelStep(Job& job, const Graph& graph, const GradientOps& gradients, Output loss, int64_t bucket_bytes);

  // What a step also gives when asked (the summaries of a training step):
  // `fetches` computed in the same run (this rank's values, into `values`)
  // and the gradients applied (averaged over the ranks), by variable.
  struct Extras {
    std::vector<Output> fetches;
    std::vector<Tensor> values;
    GradientList gradients;
  };

  // Returns the loss averaged over the ranks (before the update), a scalar
  // where the step computed it: with the session on a device, the step and
  // its updates are only queued when this returns, and reading the loss
  // (hub::to_host) waits for them.
  Tensor run(Session& session, Optimizer& optimizer, VariableStore& variables, const FeedList& feeds,
             Extras* extras = nullptr);

  // Floats summed per step (gradients, moving statistics, the loss) and the
  // number of buckets they travel in.
  int64_t floats_per_step() const { return total_floats_; }
  int num_buckets() const { return static_cast<int>(buckets_.size()); }

 private:
  struct Entry {
    int bucket;
    int64_t offset;  // in the bucket, in floats
    int64_t size;    // floats
    Shape shape;
    Tensor averaged;  // view of the bucket (several ranks only)
  };
  struct Bucket {
    std::shared_ptr<Storage> storage;
    int64_t floats = 0;
    int count = 0;    // entries
    int pending = 0;  // entries not yet produced in this step
    std::future<void> reduced;
  };
  // Starts the reductions of the complete buckets, in bucket order.
  void start_ready_buckets();

  Job& job_;
  std::vector<Output> fetches_;         // loss, moving statistics, gradients
  std::vector<std::string> moving_;     // variable of each moving statistic
  std::vector<std::string> variables_;  // variable of each gradient
  std::vector<Entry> entries_;          // by fetch index
  std::vector<Bucket> buckets_;
  int next_bucket_ = 0;  // first bucket not yet started
  int64_t total_floats_ = 0;
};

}  // namespace hub::train

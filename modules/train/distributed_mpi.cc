// The MPI job (built only when meson finds MPI): every MPI call of the
// process runs on one thread of its own, which also initialized MPI, so the
// MPI_THREAD_FUNNELED level suffices and the training thread never blocks in
// MPI while the backward pass still has work. Collectives are queued to that
// thread and run in the order they were started, on every rank the same.
//
// Each collective is nonblocking (MPI_Iallreduce, MPI_Ibcast, ...) and
// polled with MPI_Test until it completes, the deadline passes
// ($HUB_COLLECTIVE_TIMEOUT, default 600 s: kDeadlineExceeded) or MPI reports
// an error (MPI_ERRORS_RETURN: kUnavailable). Between polls the thread
// yields for the first 100 microseconds and then sleeps 20 microseconds at a
// time, so a rank waiting for a slow peer leaves its cores to computation.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "modules/train/distributed.h"

namespace hub::train {
namespace {

using Clock = std::chrono::steady_clock;

// Counts passed to MPI are ints: large buffers go in pieces of this many
// elements.
constexpr int64_t kPiece = int64_t{1} << 30;

// The thread that owns MPI.
class MpiThread {
 public:
  MpiThread() {
    const char* t = std::getenv("HUB_COLLECTIVE_TIMEOUT");
    if (t) {
      char* end = nullptr;
      timeout_s_ = std::strtod(t, &end);
      if (end == t || *end || !(timeout_s_ > 0))
        throw_error(Code::kInvalidArgument,
                    "$HUB_COLLECTIVE_TIMEOUT '" + std::string(t) + "' is not a positive number of seconds");
    }
    std::promise<void> started;
    std::future<void> ready = started.get_future();
    thread_ = std::thread([this, &started] { loop(started); });
    try {
      ready.get();
    } catch (...) {
      thread_.join();
      throw;
    }
  }

  // Ends MPI (MPI_Finalize) unless the job failed or broke, then stops the thread.
  void stop(bool finalize) {
    if (finalize && !broken_) {
      try {
        run([] { MPI_Finalize(); }).get();
      } catch (const Error&) {
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    abandon_ = true;
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // Queues `fn` for the MPI thread; the future gets its exception.
  std::future<void> run(std::function<void()> fn) {
    std::packaged_task<void()> task(std::move(fn));
    std::future<void> done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_all();
    return done;
  }

  // On the MPI thread: completes `request`, or throws (the job is then broken).
  void wait(MPI_Request* request, const std::string& what) {
    const auto start = Clock::now();
    const auto deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
    while (true) {
      int done = 0;
      check(MPI_Test(request, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      const auto now = Clock::now();
      if (now > deadline)
        fail(Code::kDeadlineExceeded,
             what + " did not complete within " + std::to_string(static_cast<long long>(timeout_s_)) +
                 " s ($HUB_COLLECTIVE_TIMEOUT): another rank has failed, hangs or is far behind");
      if (abandon_) fail(Code::kUnavailable, what + " abandoned: the process is ending");
      if (broken_) check_not_broken();  // an earlier collective failed: peers will not complete this one
      if (now - start < std::chrono::microseconds(100))
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  void check(int rc, const std::string& what) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, text, &n);
    fail(Code::kUnavailable, what + " failed: " + std::string(text, static_cast<size_t>(n)));
  }

  // Refuses a new collective once one failed, repeating why.
  void check_not_broken() {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) throw_error(Code::kUnavailable, "the MPI job is broken: " + reason_);
  }
  bool broken() const { return broken_; }
  int rank = 0, size = 1, local_size = 1;

 private:
  void loop(std::promise<void>& started) {
    try {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        throw_error(Code::kUnavailable, "MPI_Init_thread failed");
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      MPI_Comm_size(MPI_COMM_WORLD, &size);
      MPI_Comm node;
      check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
      MPI_Comm_size(node, &local_size);
      MPI_Comm_free(&node);
    } catch (...) {
      started.set_exception(std::current_exception());
      return;
    }
    started.set_value();
    while (true) {
      std::packaged_task<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();  // stores its exception in its future
    }
  }

  double timeout_s_ = 600;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stop_ = false;
  std::atomic<bool> abandon_{false};
  std::atomic<bool> broken_{false};
  std::string reason_;  // the first failure (guarded by mu_)

  [[noreturn]] void fail(Code code, const std::string& message) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!broken_) reason_ = message;
      broken_ = true;
    }
    throw_error(code, message);
  }
};

class MpiJob final : public Job {
 public:
  explicit MpiJob(std::unique_ptr<MpiThread> mpi) : Job(mpi->rank, mpi->size), mpi_(std::move(mpi)) {}
  ~MpiJob() override { mpi_->stop(!failed()); }

  std::future<void> start_sum(float* data, int64_t n, std::string what) override {
    return collective([this, data, n, what] { sum_in_place(data, n, MPI_FLOAT, sizeof(float), what); });
  }
  void sum(double* data, int64_t n, const std::string& what) override {
    collective([&] { sum_in_place(data, n, MPI_DOUBLE, sizeof(double), what); }).get();
  }
  void broadcast(std::string* bytes, const std::string& what) override {
    collective([&] {
      int64_t n = static_cast<int64_t>(bytes->size());
      MPI_Request r;
      mpi_->check(MPI_Ibcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &r), what);
      mpi_->wait(&r, what);
      bytes->resize(static_cast<size_t>(n));
      for (int64_t at = 0; at < n; at += kPiece) {
        mpi_->check(
            MPI_Ibcast(bytes->data() + at, static_cast<int>(std::min(kPiece, n - at)), MPI_BYTE, 0, MPI_COMM_WORLD, &r),
            what);
        mpi_->wait(&r, what);
      }
    }).get();
  }
  void gather(const std::string& bytes, std::vector<std::string>* all, const std::string& what) override {
    if (bytes.size() > static_cast<size_t>(INT_MAX))
      throw_error(Code::kResourceExhausted, what + ": " + std::to_string(bytes.size()) +
                                                " bytes from one rank exceed MPI's limit of 2 GiB per message");
    collective([&] {
      const int n = static_cast<int>(bytes.size());
      std::vector<int> counts(chief() ? static_cast<size_t>(size()) : 0), offsets(counts.size());
      MPI_Request r;
      mpi_->check(MPI_Igather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &r), what);
      mpi_->wait(&r, what);
      std::string joined;
      if (chief()) {
        int64_t total = 0;
        for (size_t i = 0; i < counts.size(); ++i) {
          if (total > INT_MAX)
            throw_error(Code::kResourceExhausted,
                        what + ": more than 2 GiB in all reach rank 0 (MPI's limit per message)");
          offsets[i] = static_cast<int>(total);
          total += counts[i];
        }
        joined.resize(static_cast<size_t>(total));
      }
      mpi_->check(MPI_Igatherv(bytes.data(), n, MPI_BYTE, joined.data(), counts.data(), offsets.data(), MPI_BYTE, 0,
                               MPI_COMM_WORLD, &r),
                  what);
      mpi_->wait(&r, what);
      all->clear();
      for (size_t i = 0; i < counts.size(); ++i)
        all->push_back(joined.substr(static_cast<size_t>(offsets[i]), static_cast<size_t>(counts[i])));
    }).get();
  }

 private:
  // Queues a collective; refused at once when the job is broken.
  std::future<void> collective(std::function<void()> fn) {
    mpi_->check_not_broken();
    return mpi_->run(std::move(fn));
  }

  void sum_in_place(void* data, int64_t n, MPI_Datatype type, size_t element, const std::string& what) {
    for (int64_t at = 0; at < n; at += kPiece) {
      MPI_Request r;
      mpi_->check(MPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(data) + at * static_cast<int64_t>(element),
                                 static_cast<int>(std::min(kPiece, n - at)), type, MPI_SUM, MPI_COMM_WORLD, &r),
                  what);
      mpi_->wait(&r, what);
    }
  }

  std::unique_ptr<MpiThread> mpi_;
};

}  // namespace

std::unique_ptr<Job> start_mpi_job(int* local_size) {
  auto mpi = std::make_unique<MpiThread>();
  *local_size = mpi->local_size;
  return std::make_unique<MpiJob>(std::move(mpi));
}

}  // namespace hub::train

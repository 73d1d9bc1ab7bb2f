// modules/train/distributed: data parallelism on MPI through the hub binary
// (path in HUB_EXE, set by tests/meson.build) under `mpirun --oversubscribe
// -np 2`, on generated data, against the same commands on one process:
//   - 2 ranks x batch 50 end with the variables of 1 rank x batch 100;
//   - hub eval on 2 ranks counts every example once (the counts of 1 rank);
//   - retrain's bottlenecks computed on 2 ranks equal those of 1 rank;
//   - a killed rank ends the job naming it, and a restart resumes from the
//     last checkpoint; a stopped rank makes the others time out naming the
//     collective.
// In process: the training step on one process is train_step, how gradients
// are packed into buckets, and slim's replica flags. The MPI cases skip (exit
// 77) where mpirun is missing or hub was built without MPI; every mpirun runs
// as a child with a timeout, so a hang fails the case instead of the suite.
#include "modules/train/distributed.h"

#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/graph/session.h"
#include "hub/image/image.h"
#include "hub/module/safetensors.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/matmul.h"
#include "hub/ops/reduction.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"
#include "modules/datasets/convert.h"
#include "modules/datasets/example.h"
#include "modules/datasets/tfrecord.h"
#include "modules/slim/layers.h"
#include "modules/train/checkpoint.h"
#include "modules/train/event_reader.h"
#include "retrain_testutil.h"
#include "subprocess.h"
#include "testutil.h"

namespace fs = std::filesystem;
namespace ev = hub::event_test;
using namespace hub;
using hub::testing::Child;
using hub::testing::ChildOptions;
using hub::testing::contains;
using hub::testing::hub_exe;
using hub::testing::TempDir;

namespace {

bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t at = 0; at <= dirs.size();) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    std::error_code ec;
    if (fs::exists(fs::path(dirs.substr(at, end - at)) / name, ec)) return true;
    at = end + 1;
  }
  return false;
}

#define SKIP_UNLESS_MPI()                                                              \
  HUB_SKIP_UNLESS(on_path("mpirun"), "mpirun is not installed (Debian: openmpi-bin)"); \
  HUB_SKIP_UNLESS(train::built_with_mpi(), "hub was built without MPI (Debian: libopenmpi-dev; -Dmpi=enabled)")

struct Run {
  bool exited = false;
  int code = -1;
  std::string text;  // stdout and stderr
  bool ok() const { return exited && code == 0; }
};

// Runs argv with stderr joined to stdout. Open MPI refuses to run as root
// (CI's user) without the two variables; its shared-memory transport copies
// between ranks with process_vm_readv, which containers without ptrace
// rights refuse, so it copies through the shared segment instead; one thread
// per process keeps the oversubscribed ranks from fighting over the two cores.
Child start(const std::vector<std::string>& argv, std::vector<std::pair<std::string, std::string>> env = {}) {
  std::vector<std::string> sh = {"sh", "-c", "exec \"$@\" 2>&1", "sh"};
  sh.insert(sh.end(), argv.begin(), argv.end());
  ChildOptions o;
  o.env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
           {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
           {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"},
           {"HUB_NUM_THREADS", "1"}};
  o.env.insert(o.env.end(), env.begin(), env.end());
  return Child::spawn(sh, o);
}
Run finish(Child& child, double timeout_s, const std::string& what) {
  auto r = child.wait(timeout_s, what);
  return {r.exited, r.code, r.output};
}
Run one_process(const std::vector<std::string>& args, double timeout_s = 60) {
  std::vector<std::string> argv = {hub_exe()};
  argv.insert(argv.end(), args.begin(), args.end());
  Child c = start(argv);
  return finish(c, timeout_s, "hub " + args[0]);
}
// mpirun -np N hub ARGS (the environment variables named in `pass` are passed on).
std::vector<std::string> mpirun_argv(int ranks, const std::vector<std::string>& args,
                                     const std::vector<std::string>& pass = {}) {
  std::vector<std::string> argv = {"mpirun", "--oversubscribe", "-np", std::to_string(ranks),
                                   "-x",     "HUB_NUM_THREADS", "-x",  "OMP_WAIT_POLICY"};
  for (const std::string& p : pass) argv.insert(argv.end(), {"-x", p});
  argv.push_back(hub_exe());
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}
// The environment of an mpirun child. In the sanitizer build the ranks keep
// AddressSanitizer and UBSan but not LeakSanitizer: Open MPI does not free
// what MPI_Init allocates (in libmpi and in its components), and it unloads
// the components at MPI_Finalize, before the leak check, so those reports
// cannot be suppressed by module name. The same commands on one process
// (one_process) keep the leak check on hub's own code.
std::vector<std::pair<std::string, std::string>> mpi_env(std::vector<std::pair<std::string, std::string>> env = {}) {
  const char* asan = std::getenv("ASAN_OPTIONS");
  env.push_back({"ASAN_OPTIONS", std::string(asan ? asan : "") + (asan && *asan ? ":" : "") + "detect_leaks=0"});
  return env;
}
Run mpi_hub(int ranks, const std::vector<std::string>& args, double timeout_s = 90) {
  Child c = start(mpirun_argv(ranks, args), mpi_env());
  return finish(c, timeout_s, "mpirun -np " + std::to_string(ranks) + " hub " + args[0]);
}

// A 14x14 RGB image of class c: stripes whose orientation and period depend
// on c, brightest in channel c % 3, with a little deterministic noise.
std::string image_record(int c, int i) {
  Tensor img(DType::kUInt8, {14, 14, 3});
  uint8_t* p = img.data<uint8_t>();
  for (int y = 0; y < 14; ++y)
    for (int x = 0; x < 14; ++x)
      for (int ch = 0; ch < 3; ++ch) {
        const int coord = c < 5 ? y : x;
        const int stripe = (coord / (2 + c % 5)) % 2;
        const int noise = (i * 131 + y * 17 + x * 31 + ch * 7) % 23;
        p[(y * 14 + x) * 3 + ch] = static_cast<uint8_t>(20 + stripe * (ch == c % 3 ? 200 : 80) + noise);
      }
  std::vector<uint8_t> png = image::encode_png(img);
  return data::make_image_example({std::string(png.begin(), png.end()), "png", c, 14, 14});
}

// <dir>: tiny_train (240 records, two files), tiny_test (53 records), labels.txt.
void write_dataset(const fs::path& dir) {
  fs::create_directories(dir);
  for (int shard = 0; shard < 2; ++shard) {
    data::TFRecordWriter w((dir / data::shard_file_name("tiny", "train", shard, 2)).string());
    for (int i = shard * 12; i < (shard + 1) * 12; ++i)
      for (int c = 0; c < 10; ++c) w.write(image_record(c, i));
    w.commit();
  }
  data::TFRecordWriter w((dir / data::shard_file_name("tiny", "test", 0, 1)).string());
  for (int i = 0; i < 53; ++i) w.write(image_record(i % 10, 1000 + i));
  w.commit();
  std::vector<std::string> names;
  for (int c = 0; c < 10; ++c) names.push_back("class" + std::to_string(c));
  data::write_labels_file((dir / "labels.txt").string(), names);
}

std::vector<std::string> train_args(const fs::path& data, const fs::path& train_dir, int batch, int steps,
                                    const std::vector<std::string>& more = {"--log_every_n_steps", "1"}) {
  std::vector<std::string> args = {"train",
                                   "--model_name",
                                   "cifar10",
                                   "--dataset_name",
                                   "tiny",
                                   "--dataset_dir",
                                   data.string(),
                                   "--train_dir",
                                   train_dir.string(),
                                   "--train_image_size",
                                   "12",
                                   "--batch_size",
                                   std::to_string(batch),
                                   "--max_number_of_steps",
                                   std::to_string(steps),
                                   "--optimizer",
                                   "momentum",
                                   "--learning_rate",
                                   "0.02",
                                   "--learning_rate_decay_type",
                                   "exponential",
                                   "--num_epochs_per_decay",
                                   "1",
                                   "--num_preprocessing_threads",
                                   "1",
                                   "--seed",
                                   "5"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::map<std::string, Tensor> checkpoint(const fs::path& train_dir, int step) {
  return map_safetensors((train_dir / ("model.ckpt-" + std::to_string(step) + ".safetensors")).string()).tensors;
}

// Largest |a - b| over every float tensor of two checkpoints (same names required).
double max_difference(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (const auto& [name, x] : a) {
    REQUIRE_MESSAGE(b.count(name), name);
    const Tensor& y = b.at(name);
    REQUIRE(x.shape() == y.shape());
    if (x.dtype() != DType::kFloat32) {
      CHECK_MESSAGE(std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0, name);
      continue;
    }
    for (int64_t i = 0; i < x.num_elements(); ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(x.data<float>()[i] - y.data<float>()[i])));
  }
  return worst;
}

// The first line of `text` that contains `part` ("" when none). (Tests parse
// by hand: GCC 12 warns inside <regex> under the sanitizer build's -Werror.)
std::string line_with(const std::string& text, const std::string& part) {
  const size_t at = text.find(part);
  if (at == std::string::npos) return "";
  const size_t begin = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

// "step N: loss = X" values of a log.
std::vector<double> losses(const std::string& log) {
  std::vector<double> out;
  const std::string mark = ": loss = ";
  for (size_t at = log.find(mark); at != std::string::npos; at = log.find(mark, at + 1)) {
    const size_t line = log.rfind('\n', at) == std::string::npos ? 0 : log.rfind('\n', at) + 1;
    const size_t step = log.rfind("step ", at);
    if (step != std::string::npos && step >= line) out.push_back(std::stod(log.substr(at + mark.size())));
  }
  return out;
}

}  // namespace

TEST_CASE("2 ranks x batch 50 end with the variables of 1 rank x batch 100; hub eval counts every example once") {
  SKIP_UNLESS_MPI();
  TempDir t("dp");
  write_dataset(t.path / "data");
  const std::vector<std::string> more = {"--log_every_n_steps", "1", "--summarize_gradients"};
  Run one = one_process(train_args(t.path / "data", t.path / "one", 100, 20, more));
  REQUIRE_MESSAGE(one.ok(), one.text);
  Run two = mpi_hub(2, train_args(t.path / "data", t.path / "two", 50, 20, more));
  REQUIRE_MESSAGE(two.ok(), two.text);
  CHECK(contains(two.text, "MPI job of 2 ranks"));
  CHECK(contains(two.text, "batch 50 per rank on 2 ranks"));
  // Rank 0 alone writes: one events file, one line per step, one result line.
  int events = 0;
  for (const auto& e : fs::directory_iterator(t.path / "two"))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) ++events;
  CHECK(events == 1);
  // Its summaries show the gradients averaged over the ranks: those of the
  // one process (step 1's summary, after the graph).
  const std::vector<ev::Event> s1 = ev::read_events_dir(t.path / "one"), s2 = ev::read_events_dir(t.path / "two");
  REQUIRE(s1.size() >= 3);
  REQUIRE(s2.size() >= 3);
  REQUIRE(s1[2].step == 1);
  REQUIRE(s2[2].step == 1);
  int gradients = 0;
  for (const ev::Value& g1 : s1[2].values) {
    if (g1.tag.size() < 9 || g1.tag.compare(g1.tag.size() - 9, 9, "_gradient") != 0) continue;
    ++gradients;
    const ev::Value* g2 = s2[2].find(g1.tag);
    REQUIRE_MESSAGE(g2, g1.tag);
    CHECK(g2->histo.num == g1.histo.num);
    CHECK(g2->histo.sum_squares == doctest::Approx(g1.histo.sum_squares).epsilon(1e-3));
  }
  CHECK(gradients > 0);
  CHECK(losses(two.text).size() == 20);
  CHECK(std::count(two.text.begin(), two.text.end(), '\n') == std::count(one.text.begin(), one.text.end(), '\n') + 1);

  // The same losses (the mean over both ranks' batches) and variables.
  std::vector<double> l1 = losses(one.text), l2 = losses(two.text);
  REQUIRE(l1.size() == 20);
  for (size_t i = 0; i < l1.size(); ++i) CHECK(l2[i] == doctest::Approx(l1[i]).epsilon(1e-3));
  const auto a = checkpoint(t.path / "one", 20), b = checkpoint(t.path / "two", 20);
  const double diff = max_difference(a, b);
  MESSAGE("largest difference of 1 x 100 and 2 x 50 after 20 steps: " << diff);
  // The same sums, in another order where a kernel splits batch 50 and
  // batch 100 differently: exact on AVX-512 machines, about 2e-4 after 20
  // steps with oneDNN's AVX2 kernels. The control below is far from both.
  CHECK(diff < 1e-3);
  // Control: one rank with batch 50 (half of the data per step) ends elsewhere.
  Run half = one_process(train_args(t.path / "data", t.path / "half", 50, 20));
  REQUIRE_MESSAGE(half.ok(), half.text);
  const double control = max_difference(a, checkpoint(t.path / "half", 20));
  MESSAGE("1 x 100 vs 1 x 50: " << control);
  CHECK(control > 100 * diff);
  CHECK(control > 1e-3);

  // hub eval: 53 test examples in batches of 10, split over 2 ranks.
  const std::vector<std::string> eval = {
      "eval", "--checkpoint_path", (t.path / "one").string(),  "--model_name",      "cifar10", "--dataset_name",
      "tiny", "--dataset_dir",     (t.path / "data").string(), "--eval_image_size", "12",      "--batch_size",
      "10"};
  Run e1 = one_process(eval);
  REQUIRE_MESSAGE(e1.ok(), e1.text);
  Run e2 = mpi_hub(2, eval);
  REQUIRE_MESSAGE(e2.ok(), e2.text);
  CHECK(contains(e1.text, "examples=53\n"));
  const std::string result = e1.text.substr(e1.text.find("examples="));
  CHECK(contains(e2.text, result));
  CHECK(std::count(e2.text.begin(), e2.text.end(), '=') == std::count(e1.text.begin(), e1.text.end(), '='));
}

TEST_CASE("--quantize_delay on 2 ranks: the activation ranges are averaged like the other moving statistics") {
  SKIP_UNLESS_MPI();
  TempDir t("dp_qat");
  write_dataset(t.path / "data");
  // The job ends by comparing every rank's variables with rank 0's (ranges
  // included): a rank that kept its own ranges fails it.
  Run two = mpi_hub(2, train_args(t.path / "data", t.path / "two", 25, 4, {"--quantize_delay", "2"}));
  REQUIRE_MESSAGE(two.ok(), two.text);
  CHECK(contains(two.text, "step 3: fake quantization on (--quantize_delay)"));
  const auto ckpt = checkpoint(t.path / "two", 4);
  for (const char* layer : {"conv1", "conv2", "local3", "local4", "softmax_linear"}) {
    CAPTURE(layer);
    REQUIRE(ckpt.count(std::string(layer) + "/act_quant/max"));
    CHECK(ckpt.at(std::string(layer) + "/act_quant/max").data<float>()[0] > 0);
  }
  // hub export keeps the fake quantization with --quantize; without, it says
  // the checkpoint had it.
  const std::vector<std::string> exp = {
      "export", "--model_name",  "cifar10", "--checkpoint_path", (t.path / "two").string(), "--image_size",
      "12",     "--num_classes", "10"};
  auto with = [&](std::vector<std::string> args, const std::string& out) {
    args.push_back("--output_dir");
    args.push_back((t.path / out).string());
    return args;
  };
  Run plain = one_process(with(exp, "plain"));
  REQUIRE_MESSAGE(plain.ok(), plain.text);
  CHECK(contains(plain.text, "was trained with fake quantization (--quantize_delay); without --quantize"));
  std::vector<std::string> quantized = with(exp, "quantized");
  quantized.push_back("--quantize");
  Run q = one_process(quantized);
  REQUIRE_MESSAGE(q.ok(), q.text);
  CHECK_FALSE(contains(q.text, "without --quantize"));
  CHECK(fs::exists(t.path / "quantized" / "module.pb"));
}

TEST_CASE("retrain on 2 ranks: each computes half of the bottlenecks, equal to one rank's; rank 0 trains") {
  SKIP_UNLESS_MPI();
  retrain_test::TempDir t;
  retrain_test::write_class_images(t.path / "images", 12);
  retrain_test::export_feature_module(t.path / "module");
  auto args = [&](const std::string& run) {
    return std::vector<std::string>{"retrain",
                                    "--image_dir",
                                    (t.path / "images").string(),
                                    "--module",
                                    (t.path / "module").string(),
                                    "--bottleneck_dir",
                                    (t.path / run / "bottlenecks").string(),
                                    "--summaries_dir",
                                    (t.path / run / "logs").string(),
                                    "--output_graph",
                                    (t.path / run / "model").string(),
                                    "--output_labels",
                                    (t.path / run / "labels.txt").string(),
                                    "--how_many_training_steps",
                                    "60",
                                    "--learning_rate",
                                    "0.5",
                                    "--testing_percentage",
                                    "20",
                                    "--random_seed",
                                    "3"};
  };
  Run one = one_process(args("one"));
  REQUIRE_MESSAGE(one.ok(), one.text);
  Run two = mpi_hub(2, args("two"));
  REQUIRE_MESSAGE(two.ok(), two.text);
  CHECK(contains(one.text, "bottlenecks: 36 computed, 0 cached, 0 images skipped"));
  CHECK(contains(two.text, "bottlenecks: 36 computed, 0 cached, 0 images skipped"));
  CHECK(contains(two.text, "Creating 36 bottlenecks (0 cached) with batches of 32 on 2 ranks"));
  CHECK(contains(two.text, "18/18 bottlenecks of rank 0"));
  // Every cache file on both runs, with the same vector.
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(t.path / "one" / "bottlenecks"))
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), t.path / "one" / "bottlenecks"));
  CHECK(files.size() == 36);
  for (const fs::path& f : files) {
    CAPTURE(f);
    const std::string x = retrain_test::read_text(t.path / "one" / "bottlenecks" / f);
    const std::string y = retrain_test::read_text(t.path / "two" / "bottlenecks" / f);
    REQUIRE(x.size() == y.size());
    REQUIRE(x.size() == 20 + 4 * 4);
    CHECK(x.substr(0, 12) == y.substr(0, 12));  // magic, module fingerprint
    for (size_t k = 0; k < 4; ++k) {
      float u, v;
      std::memcpy(&u, x.data() + 20 + 4 * k, 4);
      std::memcpy(&v, y.data() + 20 + 4 * k, 4);
      CHECK(v == doctest::Approx(u).epsilon(1e-6));
    }
  }
  // The same head training and result; only rank 0 wrote outputs.
  auto final_line = [](const std::string& text) {
    const size_t at = text.find("Final test accuracy");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  CHECK(!final_line(one.text).empty());
  CHECK(final_line(two.text) == final_line(one.text));
  CHECK(retrain_test::read_text(t.path / "two" / "labels.txt") == "blue\ngreen\nred\n");
  CHECK(fs::exists(t.path / "two" / "model" / "module.pb"));
}

namespace {
// The pid of rank `rank` of a job whose command line mentions `marker`
// (Open MPI gives each rank OMPI_COMM_WORLD_RANK), or 0.
pid_t find_rank(int rank, const std::string& marker) {
  const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline(e.path() / "cmdline", std::ios::binary), environ(e.path() / "environ", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(cmdline)), {}), env((std::istreambuf_iterator<char>(environ)), {});
    if (!contains(cmd, marker) || contains(cmd, "mpirun")) continue;
    for (size_t at = 0; at < env.size(); at = env.find('\0', at) + 1) {
      if (env.compare(at, want.size() + 1, want + '\0') == 0) return static_cast<pid_t>(std::stol(name));
      if (env.find('\0', at) == std::string::npos) break;
    }
  }
  return 0;
}

// Steps of the checkpoints in a train_dir.
std::vector<int> checkpoint_steps(const fs::path& dir) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.rfind("model.ckpt-", 0) == 0 && f.size() > 12 && f.compare(f.size() - 12, 12, ".safetensors") == 0)
      out.push_back(static_cast<int>(train::checkpoint_step(f)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Starts a long 2-rank training that checkpoints every step and returns once
// a checkpoint exists and rank 1 is found.
struct LongJob {
  Child mpirun;
  pid_t rank1 = 0;
  LongJob(const fs::path& data, const fs::path& train_dir, std::vector<std::pair<std::string, std::string>> env = {}) {
    std::vector<std::string> args =
        train_args(data, train_dir, 10, 100000, {"--save_interval_secs", "0", "--log_every_n_steps", "1000"});
    std::vector<std::string> pass;
    for (const auto& [k, v] : env) pass.push_back(k);
    mpirun = start(mpirun_argv(2, args, pass), mpi_env(env));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((rank1 == 0 || checkpoint_steps(train_dir).empty()) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (rank1 == 0) rank1 = find_rank(1, train_dir.string());
    }
    if (rank1 == 0 || checkpoint_steps(train_dir).empty()) {
      mpirun.kill(SIGKILL);
      FAIL("no checkpoint from rank 0 or no rank 1 within 60 s: " << finish(mpirun, 10, "mpirun").text);
    }
  }
};
}  // namespace

TEST_CASE("a killed rank ends the job naming it; the restart resumes from the last checkpoint") {
  SKIP_UNLESS_MPI();
  TempDir t("kill");
  write_dataset(t.path / "data");
  LongJob job(t.path / "data", t.path / "train");
  REQUIRE(::kill(job.rank1, SIGKILL) == 0);
  const auto killed = std::chrono::steady_clock::now();
  Run out = finish(job.mpirun, 60, "mpirun with a killed rank");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  MESSAGE("the job ended " << secs << " s after rank 1 was killed");
  CHECK_FALSE(out.ok());
  CHECK_MESSAGE(contains(out.text, "process rank 1 with PID"), out.text);
  CHECK_MESSAGE(contains(out.text, "signal 9"), out.text);
  CHECK(secs < 20);
  // The checkpoint named in `checkpoint` is complete; training resumes from it.
  const int last = checkpoint_steps(t.path / "train").back();
  Run again = mpi_hub(2, train_args(t.path / "data", t.path / "train", 10, last + 3));
  REQUIRE_MESSAGE(again.ok(), again.text);
  const std::string resumed = line_with(again.text, "resuming from ");
  CHECK_MESSAGE(contains(resumed, (t.path / "train" / "model.ckpt-").string()), again.text);
  CHECK_MESSAGE(contains(resumed, ".safetensors at step "), again.text);
  CHECK(contains(again.text, "trained " + std::to_string(last + 3) + " steps"));
  CHECK(losses(again.text).size() <= 3 + 1);
}

TEST_CASE("a rank that stops answering makes the others time out, naming the collective") {
  SKIP_UNLESS_MPI();
  TempDir t("stop");
  write_dataset(t.path / "data");
  LongJob job(t.path / "data", t.path / "train", {{"HUB_COLLECTIVE_TIMEOUT", "2"}});
  REQUIRE(::kill(job.rank1, SIGSTOP) == 0);
  Run out = finish(job.mpirun, 60, "mpirun with a stopped rank");
  ::kill(job.rank1, SIGKILL);  // if mpirun left it behind
  CHECK_FALSE(out.ok());
  const std::string error = line_with(out.text, "hub train: rank 0 of 2: all-reduce of gradient bucket ");
  CHECK_MESSAGE(contains(error, " bytes) did not complete within 2 s ($HUB_COLLECTIVE_TIMEOUT)"), out.text);
}

TEST_CASE("a hub built without MPI refuses to run as one of several ranks") {
  HUB_SKIP_UNLESS(!train::built_with_mpi(), "hub was built with MPI (the -Dmpi=disabled build runs this case)");
  TempDir t("nompi");
  write_dataset(t.path / "data");
  // What mpirun would set for rank 1 of 2 (no mpirun needed to see the refusal).
  std::vector<std::string> argv = {hub_exe()};
  const std::vector<std::string> args = train_args(t.path / "data", t.path / "train", 10, 1);
  argv.insert(argv.end(), args.begin(), args.end());
  Child c = start(argv, {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  Run out = finish(c, 60, "hub train as rank 1 of 2");
  CHECK(out.exited);
  CHECK(out.code == exit_code(Code::kFailedPrecondition));
  CHECK_MESSAGE(
      contains(out.text, "started as rank 1 of 2 (OMPI_COMM_WORLD_RANK is set) but hub was built without MPI"),
      out.text);
  CHECK(!fs::exists(t.path / "train"));
}

// ---- in process: the seam on one process ----------------------------------------

namespace {
// softmax(x W + b) with a batch-normalized input: gradients for W, b and the
// BatchNorm beta, moving statistics as update ops.
struct SmallModel {
  Graph graph;
  Output x, labels, loss;
  GradientOps grads;
  SmallModel() {
    graph.set_seed(11);
    Scope s(graph);
    x = ops::placeholder(s, DType::kFloat32, {8, 6}, "x");
    labels = ops::placeholder(s, DType::kInt64, {8}, "labels");
    slim::LayerOptions o;
    o.use_batch_norm = true;
    o.is_training = true;
    Output h = slim::fully_connected(s, x, 5, "fc", o);
    loss = ops::sparse_softmax_cross_entropy(s, h, labels);
    grads = build_gradients(s, loss);
  }
};
}  // namespace

TEST_CASE("on one process the data-parallel step is train_step: same losses, bit-identical variables") {
  train::Job& job = train::job();
  REQUIRE(job.size() == 1);
  REQUIRE(job.chief());
  SmallModel a, b;
  REQUIRE(!a.grads.update_ops.empty());
  VariableStore va, vb;
  va.initialize(a.graph);
  vb.initialize(b.graph);
  Session sa(a.graph, &va), sb(b.graph, &vb);
  auto oa = make_optimizer("momentum", LearningRateSchedule::fixed(0.1));
  auto ob = make_optimizer("momentum", LearningRateSchedule::fixed(0.1));
  train::DataParallelStep step(job, b.graph, b.grads, b.loss, 64);
  for (int i = 0; i < 4; ++i) {
    Tensor x = hub::testing::random_tensor({8, 6}, 100 + i);
    Tensor y = Tensor::from_vector<int64_t>({8}, {0, 1, 2, 3, 4, 0, 1, 2});
    float la = train_step(sa, *oa, va, a.grads, a.loss, {{a.x, x}, {a.labels, y}});
    float lb = step.run(sb, *ob, vb, {{b.x, x}, {b.labels, y}}).item<float>();
    CHECK(la == lb);
  }
  for (const auto& [name, value] : va.items()) {
    CAPTURE(name);
    CHECK(std::memcmp(value.raw_data(), vb.at(name).raw_data(), value.nbytes()) == 0);
  }
  CHECK(ob->global_step() == 4);
}

TEST_CASE("gradients travel in buckets of the configured size, in the order the backward pass makes them") {
  SmallModel m;
  train::Job& job = train::job();
  // The loss, every gradient and every moving statistic.
  int64_t want = 1;
  for (const std::string& v : m.grads.variables) want += m.graph.spec(m.graph.tensor(v)).shape.num_elements();
  for (Output u : m.grads.update_ops) want += m.graph.spec(u).shape.num_elements();
  train::DataParallelStep all(job, m.graph, m.grads, m.loss, int64_t{1} << 30);
  CHECK(all.floats_per_step() == want);
  CHECK(all.num_buckets() == 1);
  // 4 bytes: one tensor per bucket.
  train::DataParallelStep each(job, m.graph, m.grads, m.loss, 4);
  CHECK(each.num_buckets() == static_cast<int>(1 + m.grads.variables.size() + m.grads.update_ops.size()));
  // 32 bytes = 8 floats: the weights [6, 5] are a bucket of their own, the small ones share.
  train::DataParallelStep some(job, m.graph, m.grads, m.loss, 32);
  CHECK(some.num_buckets() > 1);
  CHECK(some.num_buckets() < each.num_buckets());
  hub::testing::expect_error(
      Code::kInvalidArgument, [&] { train::DataParallelStep bad(job, m.graph, m.grads, m.loss, 0); },
      "bucket size must be positive");
}

TEST_CASE("slim's deployment flags map onto the job or point to mpirun") {
  const train::Job& job = train::job();
  train::ReplicaFlags ok;
  ok.num_clones = 1;
  ok.worker_replicas = 1;
  ok.sync_replicas = 1;
  ok.replicas_to_aggregate = 1;
  ok.num_ps_tasks = 0;
  train::check_replica_flags(ok, job);
  train::check_replica_flags(train::ReplicaFlags{}, job);  // unset
  auto refused = [&](train::ReplicaFlags f, const std::string& needle) {
    hub::testing::expect_error(
        Code::kInvalidArgument, [&] { train::check_replica_flags(f, job); }, needle);
  };
  train::ReplicaFlags f;
  f.num_clones = 4;
  refused(f, "--num_clones 4: hub runs one clone per process; start 4 processes instead, `mpirun -np 4 hub train");
  f = {};
  f.worker_replicas = 3;
  refused(f, "--worker_replicas 3 does not match the 1 process(es) of this job");
  refused(f, "`mpirun -np 3 hub train ...`");
  f = {};
  f.sync_replicas = 0;
  refused(f, "--sync_replicas=false (asynchronous updates through parameter servers) is not supported");
  f = {};
  f.replicas_to_aggregate = 2;
  refused(f, "`mpirun -np 2 hub train ...`");
  f = {};
  f.num_ps_tasks = 2;
  refused(f, "--num_ps_tasks 2: hub has no parameter servers");
  // Through the command line.
  TempDir t("flags");
  write_dataset(t.path / "data");
  std::vector<std::string> args = train_args(t.path / "data", t.path / "train", 10, 1);
  args.insert(args.end(), {"--num_clones", "2"});
  Run out = one_process(args);
  CHECK(out.exited);
  CHECK(out.code == exit_code(Code::kInvalidArgument));
  CHECK_MESSAGE(contains(out.text, "hub train: --num_clones 2: hub runs one clone per process"), out.text);
  CHECK(!fs::exists(t.path / "train"));
  for (const char* mb : {"0", "-1", "nan", "2e6"}) {
    CAPTURE(mb);
    args = train_args(t.path / "data", t.path / "train", 10, 1, {"--gradient_bucket_mb", mb});
    out = one_process(args);
    CHECK(out.exited);
    CHECK(out.code == exit_code(Code::kInvalidArgument));
    CHECK_MESSAGE(contains(out.text, "hub train: --gradient_bucket_mb must be in (0, 1048576] MiB, got "), out.text);
    CHECK(!fs::exists(t.path / "train"));
  }
}

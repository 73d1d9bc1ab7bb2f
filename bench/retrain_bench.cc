// retrain_bench: the two phases of `hub retrain` (retrain/retrain.h), timed
// through retrain() itself.
//
//   ./build/bench/retrain_bench [images [steps]]      (default 1000 images, 2000 steps)
//
// Setup: mobilenet_v1 (1.0, 224) exported with hub::train::export_module and
// its initial weights (no checkpoint) as the feature module (1024-dim
// features); `images` generated JPEGs of 300x400 (quality 90) in 5 classes.
// Three retrain() runs, each with its own output module:
//   A  1 training step, empty bottleneck dir: decode + resize + forward of every image
//   B  1 training step, every bottleneck cached
//   C  1 + steps training steps (batch 100, eval only at the first and last), cached
// Bottleneck creation = images / (A - B): B pays everything else A does
// (loading the module, building the head, the final evaluation, exporting
// ~17 MB of weights). Head training = steps / (C - B). Forward only = the
// module alone on batches of 32 already-decoded images (as many images), the
// rate bottleneck creation would reach if decoding cost nothing; decode only
// = the same JPEGs decoded and resized on the whole pool, the rate it would
// reach if the module cost nothing; the last line is creation / forward only
// (retrain decodes the next batch while the module runs: on one core when the
// module runs on the host's pool, on all of them when it runs on a device).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "hub/core/fileio.h"
#include "hub/core/parallel.h"
#include "hub/image/image.h"
#include "hub/image/resize.h"
#include "hub/module/module.h"
#include "modules/train/train.h"
#include "retrain/retrain.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// A smooth colour gradient per class plus noise: a plausible JPEG to decode.
void write_images(const fs::path& dir, int64_t n, int classes) {
  for (int k = 0; k < classes; ++k) fs::create_directories(dir / ("class_" + std::to_string(k)));
  hub::parallel_for(n, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      std::mt19937 rng(static_cast<uint32_t>(i));
      std::uniform_int_distribution<int> noise(-20, 20);
      const int64_t h = 300, w = 400;
      int k = static_cast<int>(i % classes);
      hub::Tensor img(hub::DType::kUInt8, {h, w, 3});
      uint8_t* p = img.data<uint8_t>();
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          for (int c = 0; c < 3; ++c) {
            int v = static_cast<int>((x * (c + 1) + y * (k + 1)) % 256) / 2 + (c == k % 3 ? 100 : 0) + noise(rng);
            p[(y * w + x) * 3 + c] = static_cast<uint8_t>(std::clamp(v, 0, 255));
          }
      fs::path file = dir / ("class_" + std::to_string(k)) / ("img_" + std::to_string(i) + ".jpg");
      std::vector<uint8_t> jpeg = hub::image::encode_jpeg(img, 90);
      hub::write_file_atomic(file.string(), std::string_view(reinterpret_cast<const char*>(jpeg.data()), jpeg.size()));
    }
  });
}

double timed_retrain(hub::retrain::RetrainConfig c, const fs::path& root, const std::string& name, int64_t steps,
                     hub::retrain::RetrainResult* result) {
  c.output_graph = (root / ("out_" + name)).string();
  c.output_labels = (root / ("labels_" + name + ".txt")).string();
  c.how_many_training_steps = steps;
  c.eval_step_interval = steps + 1;  // evaluate at step 0 and the last step only
  auto start = Clock::now();
  *result = hub::retrain::retrain(c, hub::resolver::Resolver());
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Images per second of decoding and resizing `dir`'s JPEGs to 224x224 (as
// retrain does for mobilenet_v1) on the whole pool, without the module.
double decode_only(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(e.path());
  auto start = Clock::now();
  hub::parallel_for(static_cast<int64_t>(files.size()), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) hub::image::read_resized(files[static_cast<size_t>(i)].string(), 224, 224, 3);
  });
  return static_cast<double>(files.size()) / std::chrono::duration<double>(Clock::now() - start).count();
}

// Images per second of the module's feature signature alone, on `images`
// images in batches of 32 (after one warm-up batch).
double forward_only(const std::string& dir, int64_t images) {
  hub::Module m(hub::load_module_spec(dir));
  const std::vector<std::string> names = m.spec().signature_names();
  const std::string sig =
      std::find(names.begin(), names.end(), "image_feature_vector") != names.end() ? "image_feature_vector" : "default";
  const auto& [input, info] = *m.spec().signature(sig).inputs.begin();
  hub::Tensor batch = hub::Tensor::zeros(hub::DType::kFloat32, {32, info.shape[1], info.shape[2], info.shape[3]});
  m(sig, {{input, batch}});
  auto start = Clock::now();
  for (int64_t done = 0; done < images; done += 32) m(sig, {{input, batch}});
  return static_cast<double>((images + 31) / 32 * 32) / std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t images = argc > 1 ? std::atoll(argv[1]) : 1000;
  const int64_t steps = argc > 2 ? std::atoll(argv[2]) : 2000;
  const int classes = 5;
  fs::path root = fs::temp_directory_path() / ("hub_retrain_bench_" + std::to_string(::getpid()));
  fs::create_directories(root);
  try {
    auto t0 = Clock::now();
    hub::train::ExportConfig e;
    e.model_name = "mobilenet_v1";
    e.output_dir = (root / "mobilenet_v1").string();
    hub::train::export_module(e);
    write_images(root / "images", images, classes);
    std::printf("setup (export mobilenet_v1, write %lld JPEGs 300x400): %.1f s\n", static_cast<long long>(images),
                std::chrono::duration<double>(Clock::now() - t0).count());

    hub::retrain::RetrainConfig c;
    c.image_dir = (root / "images").string();
    c.module = e.output_dir;
    c.bottleneck_dir = (root / "bottlenecks").string();
    c.summaries_dir = (root / "logs").string();
    c.intermediate_output_graphs_dir = (root / "intermediate").string();
    c.train_batch_size = 100;
    c.learning_rate = 0.01;
    c.seed = 1;
    hub::retrain::RetrainResult ra, rb, rc;
    double a = timed_retrain(c, root, "a", 1, &ra);
    double b = timed_retrain(c, root, "b", 1, &rb);
    double cc = timed_retrain(c, root, "c", 1 + steps, &rc);
    std::printf("\nretrain_bench: %d threads, mobilenet_v1 1.0/224 (1024-dim features), %d classes\n",
                hub::num_threads(), classes);
    std::printf("A (1 step, %lld bottlenecks computed):   %8.2f s\n", static_cast<long long>(ra.bottlenecks_computed),
                a);
    std::printf("B (1 step, %lld bottlenecks cached):     %8.2f s\n", static_cast<long long>(rb.bottlenecks_cached), b);
    std::printf("C (%lld steps, cached):                 %8.2f s\n", static_cast<long long>(1 + steps), cc);
    const double creation = static_cast<double>(ra.bottlenecks_computed) / (a - b);
    const double forward = forward_only(e.output_dir, images);
    std::printf("bottleneck creation (decode+resize+forward): %.1f images/s\n", creation);
    std::printf("forward only (batches of 32):                %.1f images/s\n", forward);
    std::printf("decode+resize only (%d threads):             %.1f images/s\n", hub::num_threads(),
                decode_only(root / "images"));
    std::printf("head training (batch 100, 1024 -> %d):       %.0f steps/s\n", classes,
                static_cast<double>(steps) / (cc - b));
    std::printf("ratio=creation/forward_only %.2f\n", creation / forward);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "retrain_bench: %s\n", ex.what());
    fs::remove_all(root);
    return 1;
  }
  fs::remove_all(root);
  return 0;
}

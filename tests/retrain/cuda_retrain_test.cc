// retrain's bottleneck stage on the GPU (in the cuda suite: it skips where
// there is no CUDA device): the vectors it caches equal the host's, for a
// short last batch and a batch shortened by an unreadable image too (on a
// device such batches are filled up to the full size).
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "hub/tensor/tensor.h"
#include "retrain/retrain.h"
#include "retrain/retrain_run.h"
#include "testutil.h"

namespace {

// The float32 values of a bottleneck file (after its 20-byte header).
std::vector<float> cached_values(const std::filesystem::path& p) {
  const std::string bytes = hub::retrain_test::read_text(p);
  REQUIRE(bytes.size() > 20);
  REQUIRE((bytes.size() - 20) % 4 == 0);
  std::vector<float> v((bytes.size() - 20) / 4);
  std::memcpy(v.data(), bytes.data() + 20, bytes.size() - 20);
  return v;
}

// $HUB_BACKEND set for the scope, then unset again.
struct BackendEnv {
  explicit BackendEnv(const char* name) { ::setenv("HUB_BACKEND", name, 1); }
  ~BackendEnv() { ::unsetenv("HUB_BACKEND"); }
};

}  // namespace

TEST_CASE("cuda retrain: bottlenecks computed on the GPU in filled-up batches equal the host's") {
  HUB_SKIP_UNLESS_CUDA();
  namespace fs = std::filesystem;
  using namespace hub;
  // 75 images and an unreadable file: batches of 32, 32 and 12 files, one
  // of them short of a readable image.
  retrain_test::Workspace w(25);
  retrain_test::write_text(w.images / "red" / "broken.jpg", "not a jpeg");
  retrain::RetrainConfig host = w.config("host");
  host.how_many_training_steps = 1;
  host.bottleneck_dir = (w.tmp.path / "bottlenecks_host").string();
  const retrain::RetrainResult on_host = retrain::retrain(host, retrain_test::local_modules());
  retrain::RetrainConfig gpu = w.config("gpu");
  gpu.how_many_training_steps = 1;
  gpu.bottleneck_dir = (w.tmp.path / "bottlenecks_gpu").string();
  retrain::RetrainResult on_gpu;
  {
    BackendEnv cuda("cuda");
    on_gpu = retrain::retrain(gpu, retrain_test::local_modules());
  }
  CHECK(on_host.bottlenecks_computed == 75);
  CHECK(on_gpu.bottlenecks_computed == 75);
  CHECK(on_gpu.images_skipped == 1);
  int compared = 0;
  for (const auto& e : fs::recursive_directory_iterator(host.bottleneck_dir)) {
    if (!e.is_regular_file()) continue;
    const fs::path other = fs::path(gpu.bottleneck_dir) / fs::relative(e.path(), host.bottleneck_dir);
    REQUIRE(fs::exists(other));
    const std::vector<float> a = cached_values(e.path()), b = cached_values(other);
    testing::expect_close(Tensor::from_vector<float>({static_cast<int64_t>(b.size())}, b),
                          Tensor::from_vector<float>({static_cast<int64_t>(a.size())}, a), 1e-5, 1e-5);
    ++compared;
  }
  CHECK(compared == 75);
}

// hub::cuda::agreement(), with which autotuning checks one cuDNN engine's
// result against another's (hub/ops/cuda/conv2d.cc). In the suite only in a
// build with CUDA (it calls the backend's own functions); skips without a
// device.
#include "hub/ops/cuda/common.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "hub/backend/backend.h"
#include "testutil.h"

using namespace hub;

TEST_CASE("cuda agreement(): the largest difference, the mean magnitude, NaN and infinity") {
  HUB_SKIP_UNLESS_CUDA();
  std::unique_ptr<Allocator> alloc = find_backend("cuda").make_allocator();
  Node node;
  node.name = "agreement_test";
  const std::vector<TensorSpec> no_outputs;
  KernelContext c(node, {}, no_outputs, *alloc, nullptr, 0);
  const int64_t n = 5000;  // several blocks, the last warp partly used
  std::vector<float> ref(n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    ref[i] = (i % 2 ? -1.0f : 1.0f) * static_cast<float>(i % 7);
    sum += static_cast<double>(i % 7);
  }
  auto check = [&](const std::vector<float>& out, float max_diff, double mean_abs_ref) {
    Tensor o = to_device(Tensor::from_vector<float>(Shape{n}, out), Device::kCUDA);
    Tensor r = to_device(Tensor::from_vector<float>(Shape{n}, ref), Device::kCUDA);
    const cuda::Agreement a = cuda::agreement(c, o.device_data<float>(), r.device_data<float>(), n);
    CHECK(a.max_diff == max_diff);
    CHECK(a.mean_abs_ref == doctest::Approx(mean_abs_ref).epsilon(1e-6));
  };
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  check(ref, 0.0f, sum / n);

  std::vector<float> out = ref;
  out[4321] += 0.5f;  // -2 -> -1.5
  out[17] -= 0.25f;   // -3 -> -3.25
  check(out, 0.5f, sum / n);

  out = ref;
  out[999] = nan;  // NaN where the reference has a number: no agreement
  check(out, inf, sum / n);

  ref[999] = nan;  // NaN against NaN agrees; the reference's NaN counts as 0
  check(out, 0.0f, (sum - 999 % 7) / n);

  ref[3] = out[3] = inf;  // equal infinities agree
  check(out, 0.0f, (sum - 999 % 7 - 3) / n);
  out[3] = -inf;
  check(out, inf, (sum - 999 % 7 - 3) / n);
}

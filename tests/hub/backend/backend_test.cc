// The backend seam: named backends with a device, placement with fallback,
// copies at device boundaries, and clear errors for unknown or unavailable
// backends. A test backend whose "device" is host memory labelled kCUDA
// stands in for a GPU, so the boundary logic runs without one.
#include "hub/backend/backend.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "hub/graph/session.h"
#include "hub/ops/activation.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

std::atomic<int> g_copies{0};

// Storage labelled as device memory (it is host memory, so kernels can read it).
class DeviceLabelAllocator final : public Allocator {
 public:
  std::shared_ptr<Storage> allocate(size_t bytes) override {
    std::shared_ptr<Storage> s = pool_.allocate(bytes);
    s->device = Device::kCUDA;
    return s;
  }
  int64_t system_allocations() const override { return pool_.system_allocations(); }
  int64_t bytes_held() const override { return pool_.bytes_held(); }
  void trim() override { pool_.trim(); }

 private:
  PoolAllocator pool_;
};

class FakeDeviceBackend final : public Backend {
 public:
  FakeDeviceBackend() : Backend("test_device", Device::kCUDA, "reference") {}
  std::unique_ptr<Allocator> make_allocator() const override { return std::make_unique<DeviceLabelAllocator>(); }
  void copy(const Tensor& src, Tensor& dst) const override {
    ++g_copies;
    std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
  }
};

class UnavailableBackend final : public Backend {
 public:
  UnavailableBackend() : Backend("test_unavailable", Device::kCPU, "reference") {}
  std::string unavailable_reason() const override { return "no such device on this machine"; }
  std::unique_ptr<Allocator> make_allocator() const override { return std::make_unique<PoolAllocator>(); }
  void copy(const Tensor&, Tensor&) const override {}
};

// Relu on the test device: checks it really got device tensors.
void device_relu(KernelContext& c) {
  const Tensor& x = c.input(0);
  REQUIRE(x.device() == Device::kCUDA);
  Tensor& y = c.output(0);
  REQUIRE(y.device() == Device::kCUDA);
  const float* px = x.device_data<float>();
  float* py = y.device_data<float>();
  for (int64_t i = 0; i < x.num_elements(); ++i) py[i] = px[i] > 0 ? px[i] : 0;
}

const bool kRegistered = [] {
  register_backend(std::make_unique<FakeDeviceBackend>());
  register_backend(std::make_unique<UnavailableBackend>());
  OpRegistry::global().add_kernel("Relu", "test_device", {device_relu, nullptr});
  return true;
}();

}  // namespace

TEST_CASE("nodes run on the preferred backend or its fallback, with copies at device boundaries") {
  REQUIRE(kRegistered);
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {2, 3}, "x");
  Output r1 = ops::relu(s, x, "r1");        // test_device
  Output sq = ops::square(s, r1, "sq");     // no test_device kernel: reference, on the host
  Output r2 = ops::relu(s, sq, "r2");       // test_device again
  Output sum = ops::add(s, r2, r1, "sum");  // reference: needs r1 and r2 back on the host
  Session session(g, nullptr, {&find_backend("test_device")});
  Tensor xt = make({2, 3}, {-1, 2, -3, 4, 0.5f, -0.5f});
  g_copies = 0;
  std::vector<Tensor> out = session.run({{x, xt}}, {sum, r1});
  // Hand values: relu(x)^2 + relu(x).
  expect_close(out[0], make({2, 3}, {0, 6, 0, 20, 0.75f, 0}));
  expect_close(out[1], make({2, 3}, {0, 2, 0, 4, 0.5f, 0}));
  CHECK(out[0].device() == Device::kCPU);
  CHECK(out[1].device() == Device::kCPU);  // fetches come back to the host
  std::map<std::string, std::string> ran = session.last_kernels();
  CHECK(ran.at("r1") == "test_device");
  CHECK(ran.at("sq") == "reference");
  CHECK(ran.at("r2") == "test_device");
  CHECK(ran.at("sum") == "reference");
  // x -> device; r1 -> host (for sq, shared by sum); sq -> device; r2 -> host;
  // the fetched r1 reuses nothing across the fetch (one more copy to the host).
  CHECK(session.last_copies() == 5);
  CHECK(g_copies == session.last_copies());
}

TEST_CASE("unknown and unavailable backends are errors that name the available ones") {
  REQUIRE(kRegistered);
  expect_error(
      Code::kInvalidArgument, [] { find_backend("tpu"); }, "unknown backend 'tpu'");
  expect_error(
      Code::kInvalidArgument, [] { find_backend("tpu"); }, "available: reference, onednn");
  expect_error(
      Code::kUnavailable, [] { find_backend("test_unavailable"); }, "no such device on this machine");
  const std::vector<const Backend*> all = registered_backends();
  if (std::none_of(all.begin(), all.end(), [](const Backend* b) { return b->name() == "cuda"; }))
    expect_error(
        Code::kInvalidArgument, [] { find_backend("cuda"); }, "no CUDA support");
  ::setenv("HUB_BACKEND", "tpu", 1);
  expect_error(
      Code::kInvalidArgument, [] { default_backend(); }, "$HUB_BACKEND: unknown backend 'tpu'");
  ::unsetenv("HUB_BACKEND");
  CHECK(default_backend().name() == "onednn");
  CHECK(find_backend("onednn").fallback() == &reference_backend());
  CHECK(reference_backend().fallback() == nullptr);
}

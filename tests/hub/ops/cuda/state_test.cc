// Tensors on the GPU and the state ops there: copies between devices, the
// device pool, Const / Variable kept resident, variables moved to the device
// and updated in place (AssignMovingAverage), and the errors that keep host
// code from reading device memory. Every case skips without a CUDA device.
#include "hub/ops/state.h"

#include <doctest/doctest.h>

#include "hub/backend/backend.h"
#include "hub/graph/session.h"
#include "hub/ops/activation.h"
#include "hub/ops/elementwise.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

TEST_CASE("cuda tensors: copies both ways, copy_of, copy_into, and no host access to device memory") {
  HUB_SKIP_UNLESS_CUDA();
  Tensor host = random_tensor({3, 1000}, 1);
  Tensor device = to_device(host, Device::kCUDA);
  CHECK(device.device() == Device::kCUDA);
  CHECK(to_device(device, Device::kCUDA).shares_storage_with(device));
  expect_error(
      Code::kFailedPrecondition, [&] { (void)device.data<float>(); }, "copy it to the host first");
  expect_error(
      Code::kFailedPrecondition, [&] { (void)device.clone(); }, "hub::to_device");
  Tensor again = copy_of(device);
  CHECK(again.device() == Device::kCUDA);
  CHECK_FALSE(again.shares_storage_with(device));
  Tensor back = to_host(again);
  CHECK(back.device() == Device::kCPU);
  CHECK(identical(back, host));
  Tensor target = to_device(Tensor::zeros(DType::kFloat32, {3, 1000}), Device::kCUDA);
  copy_into(host, target);
  CHECK(identical(to_host(target), host));
  expect_error(
      Code::kInvalidArgument, [&] { copy_into(random_tensor({2}, 2), target); }, "cannot copy");
  // int64 and uint8 round trips too
  Tensor ints = Tensor::from_vector<int64_t>({4}, {1, -2, 3, 1LL << 40});
  CHECK(identical(to_host(to_device(ints, Device::kCUDA)), ints));
}

TEST_CASE("cuda device pool: a steady-state run asks CUDA for no memory") {
  HUB_SKIP_UNLESS_CUDA();
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {64, 1000}, "x");
  Output y = ops::relu(s, ops::mul(s, x, x));
  Session session(g, nullptr, {&find_backend("cuda")});
  Tensor input = random_tensor({64, 1000}, 3);
  session.run({{x, input}}, {y});
  const int64_t before = find_backend("cuda").make_allocator()->system_allocations();
  for (int i = 0; i < 3; ++i) session.run({{x, input}}, {y});
  CHECK(find_backend("cuda").make_allocator()->system_allocations() == before);
  CHECK(session.last_kernels().at(g.node(y).name) == "cuda");
}

TEST_CASE("cuda Const and Variable: values resident on the device, host variables mirrored until they change") {
  HUB_SKIP_UNLESS_CUDA();
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {2, 3}, "x");
  Output c = ops::constant(s, make({2, 3}, {1, 2, 3, 4, 5, 6}), "c");
  Output v = ops::variable(s, "v", {2, 3});
  Output y = ops::add(s, ops::mul(s, x, c), v);
  VariableStore vars;
  vars.set("v", make({2, 3}, {10, 20, 30, 40, 50, 60}));
  Session session(g, &vars, {&find_backend("cuda")});
  Tensor input = make({2, 3}, {1, 1, 1, 2, 2, 2});
  expect_close(session.run_one({{x, input}}, y), make({2, 3}, {11, 22, 33, 48, 60, 72}));
  CHECK(session.last_kernels().at("c") == "cuda");
  CHECK(session.last_kernels().at("v") == "cuda");
  // A host write (new generation) reaches the next run.
  vars.assign("v", make({2, 3}, {0, 0, 0, 1, 1, 1}));
  expect_close(session.run_one({{x, input}}, y), make({2, 3}, {1, 2, 3, 9, 11, 13}));
  // Moved to the device, the variable is used where it is.
  move_variables(vars, Device::kCUDA);
  CHECK(vars.at("v").device() == Device::kCUDA);
  expect_close(session.run_one({{x, input}}, y), make({2, 3}, {1, 2, 3, 9, 11, 13}));
  expect_error(
      Code::kFailedPrecondition,
      [&] {
        vars.assign("v", make({2, 3}, {0, 0, 0, 0, 0, 0}));
      },
      "hub::copy_into");
}

TEST_CASE("cuda AssignMovingAverage updates a device variable in place and refuses a host one") {
  HUB_SKIP_UNLESS_CUDA();
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {4}, "x");
  Output m = ops::variable(s, "m", {4});
  Output update = ops::assign_moving_average(s, m, x, 0.75f);
  VariableStore vars;
  vars.set("m", make({4}, {4, 8, -4, 0}));
  Tensor input = make({4}, {8, 0, 4, 2});
  {
    Session host_vars(g, &vars, {&find_backend("cuda")});
    expect_error(
        Code::kFailedPrecondition,
        [&] {
          host_vars.run({{x, input}}, {}, {update});
        },
        "move the variables to the device");
  }
  move_variables(vars, Device::kCUDA);
  Session session(g, &vars, {&find_backend("cuda")});
  session.run({{x, input}}, {}, {update});
  CHECK(session.last_kernels().at(g.node(update).name) == "cuda");
  // m - (m - x)*0.25
  expect_close(to_host(vars.at("m")), make({4}, {5, 6, -2, 0.5f}));
}

TEST_CASE("cuda SessionOptions::fetch_to_host = false keeps fetched tensors on the device") {
  HUB_SKIP_UNLESS_CUDA();
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {3}, "x");
  Output y = ops::relu(s, x);
  SessionOptions o;
  o.backend = &find_backend("cuda");
  o.fetch_to_host = false;
  Session session(g, nullptr, o);
  Tensor out = session.run_one({{x, make({3}, {-1, 2, -3})}}, y);
  CHECK(out.device() == Device::kCUDA);
  expect_close(to_host(out), make({3}, {0, 2, 0}));
}

TEST_CASE("the cuda backend: listed, and its errors name what is missing") {
  const std::string why = cuda_unavailable_reason();
  if (why.find("no CUDA backend") != std::string::npos) {
    expect_error(
        Code::kInvalidArgument, [] { find_backend("cuda"); }, "-Dcuda=enabled");
    return;
  }
  if (!why.empty()) {
    // Built with CUDA on a machine without a GPU: unavailable, saying why.
    expect_error(
        Code::kUnavailable, [] { find_backend("cuda"); }, "no CUDA device");
    return;
  }
  CHECK(find_backend("cuda").device() == Device::kCUDA);
  CHECK(find_backend("cuda").fallback()->name() == "onednn");
}

TEST_CASE("cuda host allocator: page-locked batches copy to the device, a block is reused only after its copy") {
  HUB_SKIP_UNLESS_CUDA();
  const Backend& cuda = find_backend("cuda");
  std::unique_ptr<Allocator> host = cuda.make_host_allocator();
  const Shape shape{257, 1021};  // a size no other case allocates
  Tensor first = host->allocate_tensor(DType::kFloat32, shape);
  CHECK(first.device() == Device::kCPU);
  const Tensor want = random_tensor(shape, 5);
  copy_into(want, first);
  Tensor on_device = to_device(first, Device::kCUDA);  // queued from page-locked memory
  const void* block = first.raw_data();
  first = Tensor();
  // The same size again: the same block, handed out only once the copy above
  // has read it, so overwriting it now cannot change the device's copy.
  Tensor second = host->allocate_tensor(DType::kFloat32, shape);
  CHECK(second.raw_data() == block);
  second.fill(-1.0);
  expect_close(to_host(on_device), want, 0, 0);
  const int64_t made = host->system_allocations();
  second = Tensor();
  host->allocate_tensor(DType::kFloat32, shape);
  CHECK(host->system_allocations() == made);
}

// Shape and Tensor (hub/tensor): element counts, compatibility, views,
// copies, the checks on construction, and the storage generation and
// contents stamp that key derived caches.
#include "hub/tensor/tensor.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <new>

#include "testutil.h"

using namespace hub;
using hub::testing::expect_error;

TEST_CASE("Shape: element counts, unknown dims, overflow") {
  CHECK(Shape{}.num_elements() == 1);
  CHECK(Shape{2, 3, 4}.num_elements() == 24);
  CHECK(Shape{2, 0, 4}.num_elements() == 0);
  CHECK(Shape{2, 3}.to_string() == "[2,3]");
  CHECK(Shape{2, kUnknownDim, 3}.to_string() == "[2,?,3]");
  CHECK_FALSE(Shape{2, kUnknownDim}.is_fully_defined());
  expect_error(
      Code::kInvalidArgument,
      [] {
        (void)Shape{2, kUnknownDim}.num_elements();
      },
      "[2,?]");
  const int64_t big = int64_t{1} << 32;
  expect_error(
      Code::kInvalidArgument,
      [&] {
        (void)Shape{big, big}.num_elements();
      },
      "too many elements");
  CHECK(Shape{3, -2}.dim(-1) == -2);
}

TEST_CASE("Shape: compatibility treats unknown dims as wildcards, ranks must agree") {
  CHECK(Shape{2, 3}.compatible_with(Shape{2, 3}));
  CHECK(Shape{kUnknownDim, 3}.compatible_with(Shape{7, 3}));
  CHECK(Shape{7, 3}.compatible_with(Shape{kUnknownDim, 3}));
  CHECK_FALSE(Shape{2, 3}.compatible_with(Shape{3, 2}));
  CHECK_FALSE(Shape{2, 3}.compatible_with(Shape{2, 3, 1}));
}

TEST_CASE("Tensor: from_vector checks the count; values round-trip; typed access is checked") {
  Tensor t = Tensor::from_vector<float>(Shape{2, 2}, {1, 2, 3, 4});
  CHECK(t.spec_string() == "float32[2,2]");
  CHECK(t.nbytes() == 16);
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  expect_error(
      Code::kInvalidArgument,
      [] {
        (void)Tensor::from_vector<float>(Shape{3}, {1, 2});
      },
      "2");
  expect_error(
      Code::kInvalidArgument, [&] { (void)t.to_vector<int32_t>(); }, "float32");
  CHECK(Tensor::scalar<int64_t>(7).item<int64_t>() == 7);
  CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment == 0);
}

TEST_CASE("Tensor: to_int64_vector widens int32 and int64 and refuses other dtypes") {
  CHECK(*Tensor::from_vector<int32_t>(Shape{3}, {-2147483647 - 1, 0, 2147483647}).to_int64_vector() ==
        std::vector<int64_t>{-2147483648LL, 0, 2147483647LL});
  CHECK(*Tensor::from_vector<int64_t>(Shape{2}, {-(int64_t{1} << 40), 5}).to_int64_vector() ==
        std::vector<int64_t>{-(int64_t{1} << 40), 5});
  CHECK(!Tensor::from_vector<float>(Shape{1}, {1}).to_int64_vector());
  CHECK(!Tensor::from_vector<uint8_t>(Shape{1}, {1}).to_int64_vector());
}

TEST_CASE("Tensor: reshaped views share storage, clones do not") {
  Tensor t = Tensor::from_vector<float>(Shape{2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor v = t.reshaped(Shape{3, -1});
  CHECK(v.shape() == Shape{3, 2});
  CHECK(v.shares_storage_with(t));
  v.data<float>()[5] = 50;
  CHECK(t.to_vector<float>()[5] == 50);
  Tensor c = t.clone();
  CHECK_FALSE(c.shares_storage_with(t));
  c.data<float>()[0] = -1;
  CHECK(t.to_vector<float>()[0] == 0);
  expect_error(
      Code::kInvalidArgument,
      [&] {
        (void)t.reshaped(Shape{4, 2});
      },
      "[4,2]");
}

TEST_CASE("Tensor: a view must fit its storage") {
  auto storage = allocate_cpu_storage(16);
  CHECK_NOTHROW(Tensor(DType::kFloat32, Shape{4}, storage));
  CHECK_NOTHROW(Tensor(DType::kFloat32, Shape{2}, storage, 8));
  expect_error(
      Code::kInvalidArgument, [&] { Tensor(DType::kFloat32, Shape{4}, storage, 4); }, "");
  expect_error(
      Code::kInvalidArgument, [&] { Tensor(DType::kFloat32, Shape{5}, storage); }, "");
}

TEST_CASE("Storage generation: every mutable access bumps it, reads do not") {
  Tensor t = Tensor::from_vector<float>(Shape{4}, {1, 2, 3, 4});
  const Tensor& ct = t;
  const uint64_t g0 = t.storage()->generation.load();
  (void)ct.data<float>();
  (void)ct.raw_data();
  (void)t.to_vector<float>();
  CHECK(t.storage()->generation.load() == g0);
  (void)t.data<float>();
  const uint64_t g1 = t.storage()->generation.load();
  CHECK(g1 > g0);
  t.fill(0.5);
  CHECK(t.storage()->generation.load() > g1);
  // A view shares the counter: writing through it invalidates caches of the whole.
  Tensor v = t.reshaped(Shape{2, 2});
  const uint64_t g2 = t.storage()->generation.load();
  (void)v.data<float>();
  CHECK(t.storage()->generation.load() > g2);
}

TEST_CASE("ContentsStamp: the same storage, offset and generation; a storage made at a freed one's address is not it") {
  Tensor t = Tensor::from_vector<float>(Shape{4}, {1, 2, 3, 4});
  CHECK_FALSE(ContentsStamp().matches(t));
  const ContentsStamp stamp(t);
  CHECK(stamp.matches(t));
  CHECK(stamp.matches(t.reshaped(Shape{2, 2})));
  CHECK_FALSE(stamp.matches(Tensor(DType::kFloat32, Shape{2}, t.storage(), 8)));
  CHECK_FALSE(stamp.matches(t.clone()));
  (void)t.data<float>();
  CHECK_FALSE(stamp.matches(t));

  // Two storages in turn at one address, as an allocator may place a new
  // tensor where a freed one was: same address, offset and generation.
  alignas(Storage) static unsigned char place[sizeof(Storage)];
  static float values[4];
  auto make = [] {
    std::shared_ptr<Storage> s(new (place) Storage, [](Storage* p) { p->~Storage(); });
    s->data = values;
    s->bytes = sizeof values;
    return Tensor(DType::kFloat32, Shape{4}, std::move(s));
  };
  ContentsStamp first;
  {
    const Tensor a = make();
    first = ContentsStamp(a);
    CHECK(first.matches(a));
  }
  CHECK(first.expired());
  const Tensor b = make();
  REQUIRE(static_cast<void*>(b.storage().get()) == static_cast<void*>(place));
  REQUIRE(b.storage()->generation.load() == 0);
  CHECK_FALSE(first.matches(b));
}

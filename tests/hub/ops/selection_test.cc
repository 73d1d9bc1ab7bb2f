#include "hub/ops/selection.h"

#include <doctest/doctest.h>

#include "hub/graph/session.h"
#include "hub/ops/array.h"
#include "hub/ops/math.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

std::vector<int64_t> longs(const Tensor& t) { return t.to_vector<int64_t>(); }

Attrs nms(int64_t max_per_class, double iou, double score = -kInf, bool center = false) {
  return Attrs()
      .set("max_per_class", max_per_class)
      .set("iou_threshold", iou)
      .set("score_threshold", score)
      .set("center_point_box", center);
}

}  // namespace

TEST_CASE("NonZero: coordinates of the nonzero elements in row-major order, every dtype") {
  Tensor f = make({2, 3}, {0, 1.5f, 0, -2, 0, kNaN});  // NaN is nonzero
  Tensor y = run_op("NonZero", {f})[0];
  CHECK(y.shape() == Shape{2, 3});
  CHECK(longs(y) == std::vector<int64_t>{0, 1, 1, 1, 0, 2});
  Tensor b = Tensor::from_vector<bool>({4}, {false, true, true, false});
  CHECK(longs(run_op("NonZero", {b})[0]) == std::vector<int64_t>{1, 2});
  Tensor i = Tensor::from_vector<int64_t>({2, 1, 2}, {0, 0, 7, 0});
  y = run_op("NonZero", {i})[0];
  CHECK(y.shape() == Shape{3, 1});
  CHECK(longs(y) == std::vector<int64_t>{1, 0, 0});
  CHECK(run_op("NonZero", {u8({3}, {0, 0, 0})})[0].shape() == Shape{1, 0});
  CHECK(run_op("NonZero", {make({0, 4}, {})})[0].shape() == Shape{2, 0});
}

TEST_CASE("NonZero: chunks counted and filled in parallel agree with a serial scan") {
  // 3 * 70000 elements: several chunks, one nonzero in every 7 (and a chunk boundary mid-row).
  Tensor x(DType::kInt32, Shape{3, 70000});
  std::vector<int64_t> rows, cols;
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 70000; ++c) {
      const bool on = (r * 70000 + c) % 7 == 3;
      x.data<int32_t>()[r * 70000 + c] = on ? static_cast<int32_t>(c + 1) : 0;
      if (on) rows.push_back(r), cols.push_back(c);
    }
  Tensor y = run_op("NonZero", {x})[0];
  REQUIRE(y.shape() == Shape{2, static_cast<int64_t>(rows.size())});
  std::vector<int64_t> want = rows;
  want.insert(want.end(), cols.begin(), cols.end());
  CHECK(longs(y) == want);
}

TEST_CASE("NonMaxSuppression: hand-worked greedy selection") {
  // Five boxes in one batch, corners in either order. IoU(0, 1) = 81 / 119
  // (0.68); IoU(0, 2) = 0; box 3 has no area; box 4 flips box 0's corners.
  Tensor boxes = make({1, 5, 4}, {0,  0,  10, 10,   // 10 x 10
                                  1,  1,  11, 10,   // 10 x 9, meeting box 0 in 9 x 9
                                  20, 20, 30, 30,   // apart
                                  5,  5,  5,  9,    // no area
                                  10, 10, 0,  0});  // box 0, corners swapped
  // IoU(0, 1) = IoU(4, 1) = 81 / (100 + 90 - 81) = 0.743; IoU(0, 4) = 1.
  Tensor scores = make({1, 2, 5}, {0.9f, 0.95f, 0.5f, 0.99f, 0.1f,  //
                                   0.2f, 0.3f, 0.4f, kNaN, 0.8f});
  // Class 0 by score: 3, 1, 0 (overlaps 1), 2, 4 (overlaps 1). Class 1: 4, 2, 1 (overlaps 4), 0 (= 4).
  Tensor y = run_op("NonMaxSuppression", {boxes, scores}, nms(10, 0.5))[0];
  CHECK(y.shape() == Shape{5, 3});
  CHECK(longs(y) == std::vector<int64_t>{0, 0, 3, 0, 0, 1, 0, 0, 2, 0, 1, 4, 0, 1, 2});
  // A threshold of 0.75 keeps box 0 beside box 1 (0.743), but box 4 (= box 0, IoU 1) goes.
  y = run_op("NonMaxSuppression", {boxes, scores}, nms(10, 0.75))[0];
  CHECK(longs(y) == std::vector<int64_t>{0, 0, 3, 0, 0, 1, 0, 0, 0, 0, 0, 2,  //
                                         0, 1, 4, 0, 1, 2, 0, 1, 1});
  // At most two per class; scores above 0.35 only (NaN never).
  y = run_op("NonMaxSuppression", {boxes, scores}, nms(2, 0.5, 0.35))[0];
  CHECK(longs(y) == std::vector<int64_t>{0, 0, 3, 0, 0, 1, 0, 1, 4, 0, 1, 2});
  // max_per_class 0 keeps nothing (ONNX's default).
  CHECK(run_op("NonMaxSuppression", {boxes, scores}, nms(0, 0.5))[0].shape() == Shape{0, 3});
}

TEST_CASE("NonMaxSuppression: center-point boxes, batches, ties by index") {
  // [x_center, y_center, width, height]: boxes 0 and 1 are 2 x 2 squares
  // shifted by 1 in x: IoU = 2 / 6 = 1/3.
  Tensor boxes = make({2, 3, 4}, {1, 1, 2, 2, 2, 1, 2, 2, 5, 5, 1, 1,  //
                                  0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 2, 2});
  Tensor scores = make({2, 1, 3}, {0.5f, 0.5f, 0.1f,  // a tie: box 0 first
                                   0.3f, 0.3f, 0.9f});
  Tensor y = run_op("NonMaxSuppression", {boxes, scores}, nms(5, 0.3, -kInf, true))[0];
  // Batch 0: 0, then 1 overlaps 1/3 > 0.3, then 2. Batch 1: 2 (IoU with 0 is 4 / 16 = 0.25), 0, then 1 = 0.
  CHECK(longs(y) == std::vector<int64_t>{0, 0, 0, 0, 0, 2, 1, 0, 2, 1, 0, 0});
  y = run_op("NonMaxSuppression", {boxes, scores}, nms(5, 0.34, -kInf, true))[0];
  CHECK(longs(y) == std::vector<int64_t>{0, 0, 0, 0, 0, 1, 0, 0, 2, 1, 0, 2, 1, 0, 0});
}

TEST_CASE("NonMaxSuppression: bad shapes and attributes are refused") {
  Tensor boxes = make({1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 1});
  CHECK_THROWS_WITH_AS(run_op("NonMaxSuppression", {boxes, make({1, 1, 3}, {1, 2, 3})}, nms(1, 0.5)),
                       doctest::Contains("must be [batch, classes, boxes]"), Error);
  CHECK_THROWS_WITH_AS(run_op("NonMaxSuppression", {boxes, make({1, 1, 2}, {1, 2})}, nms(1, 1.5)),
                       doctest::Contains("iou_threshold"), Error);
  CHECK_THROWS_WITH_AS(run_op("NonMaxSuppression", {boxes, make({1, 1, 2}, {1, 2})}, nms(-1, 0.5)),
                       doctest::Contains("max_per_class is negative"), Error);
}

TEST_CASE("a value-dependent shape flows on through a memory-planned session") {
  // y = Gather(x, NonZero(x > 0)[0]) * 2: its length follows from the values.
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim}, "x");
  Output idx = ops::squeeze(s, ops::non_zero(s, ops::greater(s, x, ops::scalar(s, 0.0f))), {0});
  CHECK(g.spec(idx).shape == Shape{kUnknownDim});
  Output y = ops::mul(s, ops::gather(s, x, idx), ops::scalar(s, 2.0f));
  SessionOptions o;
  o.plan_memory = true;
  Session planned(g, nullptr, o);
  for (int repeat = 0; repeat < 2; ++repeat) {
    CHECK(planned.run({{x, make({4}, {1, -1, 3, 0})}}, {y})[0].to_vector<float>() == std::vector<float>{2, 6});
    CHECK(planned.run({{x, make({4}, {5, 6, 7, -8})}}, {y})[0].to_vector<float>() == std::vector<float>{10, 12, 14});
    CHECK(planned.run({{x, make({4}, {-1, -1, -1, -1})}}, {y})[0].num_elements() == 0);
    CHECK(planned.last_arena_bytes() == 0);
  }
}

TEST_CASE("Unique: sorted or in first-occurrence order, of elements and of slices along an axis") {
  Tensor x = make({7}, {2, 1, 1, 3, -0.0f, 2, 0});
  Attrs sorted = Attrs().set("axis", int64_t{0}).set("sorted", true);
  std::vector<Tensor> u = run_op("Unique", {x}, sorted);
  CHECK(u[0].to_vector<float>() == std::vector<float>{-0.0f, 1, 2, 3});  // -0 and 0 are one value
  CHECK(longs(u[1]) == std::vector<int64_t>{4, 1, 0, 3});
  CHECK(longs(u[2]) == std::vector<int64_t>{2, 1, 1, 3, 0, 2, 0});
  CHECK(longs(u[3]) == std::vector<int64_t>{2, 2, 2, 1});
  u = run_op("Unique", {x}, Attrs().set("axis", int64_t{0}).set("sorted", false));
  CHECK(u[0].to_vector<float>() == std::vector<float>{2, 1, 3, -0.0f});
  CHECK(longs(u[1]) == std::vector<int64_t>{0, 1, 3, 4});
  CHECK(longs(u[2]) == std::vector<int64_t>{0, 1, 1, 2, 3, 0, 3});
  CHECK(longs(u[3]) == std::vector<int64_t>{2, 2, 1, 2});
  // Columns of [2, 4]: (1, 5), (0, 5), (1, 5), (0, 4) -> sorted (0, 4), (0, 5), (1, 5).
  Tensor m = Tensor::from_vector<int32_t>({2, 4}, {1, 0, 1, 0, 5, 5, 5, 4});
  u = run_op("Unique", {m}, Attrs().set("axis", int64_t{-1}).set("sorted", true));
  CHECK(u[0].shape() == Shape{2, 3});
  CHECK(u[0].to_vector<int32_t>() == std::vector<int32_t>{0, 0, 1, 4, 5, 5});
  CHECK(longs(u[1]) == std::vector<int64_t>{3, 1, 0});
  CHECK(longs(u[2]) == std::vector<int64_t>{2, 1, 2, 0});
  CHECK(longs(u[3]) == std::vector<int64_t>{1, 1, 2});
  u = run_op("Unique", {Tensor::from_vector<bool>({4}, {true, false, true, true})}, sorted);
  CHECK(longs(u[3]) == std::vector<int64_t>{1, 3});
  u = run_op("Unique", {make({0}, {})}, sorted);
  CHECK(u[0].shape() == Shape{0});
  CHECK(u[2].shape() == Shape{0});
}

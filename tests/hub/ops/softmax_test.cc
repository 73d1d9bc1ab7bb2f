#include "hub/ops/softmax.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

TEST_CASE("Softmax and LogSoftmax: hand-computed, stable for large logits") {
  Tensor sm = make({3}, {0.09003057f, 0.24472847f, 0.66524096f});
  Tensor lsm = make({3}, {-2.40760596f, -1.40760596f, -0.40760596f});
  expect_close(run_op("Softmax", {make({3}, {1, 2, 3})})[0], sm);
  expect_close(run_op("LogSoftmax", {make({3}, {1, 2, 3})})[0], lsm);
  expect_close(run_op("Softmax", {make({3}, {1000, 1001, 1002})})[0], sm);
  expect_close(run_op("LogSoftmax", {make({3}, {-1000, -999, -998})})[0], lsm, 1e-4, 1e-5);
  // Rank 3: rows along the last axis.
  Tensor x = make({2, 1, 2}, {0, 0, 0, std::log(3.0f)});
  expect_close(run_op("Softmax", {x})[0], make({2, 1, 2}, {0.5f, 0.5f, 0.25f, 0.75f}));
}

TEST_CASE("Softmax and LogSoftmax: gradients") {
  check_gradients("Softmax", {random_tensor({3, 4}, 1, -2, 2)});
  check_gradients("LogSoftmax", {random_tensor({3, 4}, 2, -2, 2)});
  check_gradients("Softmax", {random_tensor({2, 2, 3}, 3, -2, 2)});
  check_gradients("LogSoftmax", {random_tensor({5}, 4, -2, 2)});
}

namespace {

const char* const kBackends[] = {"reference", "onednn"};

Attrs axis_attr(int64_t axis) { return Attrs().set("axis", axis); }

// Independent reference: (log) softmax along `axis` by index arithmetic, in double.
Tensor naive_softmax(const Tensor& x, int axis, bool log) {
  const Shape& sh = x.shape();
  if (axis < 0) axis += sh.rank();
  int64_t outer = 1, n = sh[axis], inner = 1;
  for (int d = 0; d < axis; ++d) outer *= sh[d];
  for (int d = axis + 1; d < sh.rank(); ++d) inner *= sh[d];
  std::vector<float> in = x.to_vector<float>(), out(in.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * n + k) * inner + i; };
      double m = in[at(0)];
      for (int64_t k = 1; k < n; ++k) m = std::max(m, static_cast<double>(in[at(k)]));
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += std::exp(in[at(k)] - m);
      for (int64_t k = 0; k < n; ++k) {
        double v = in[at(k)] - m;
        out[at(k)] = static_cast<float>(log ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
  return make(sh, out);
}

}  // namespace

TEST_CASE("Softmax and LogSoftmax on any axis: hand-computed, both backends") {
  // [[0, 0], [ln 3, 0]]: along axis 0 the columns are (0, ln 3) -> (1/4, 3/4)
  // and (0, 0) -> (1/2, 1/2); along axis 1 (= -1) the rows.
  Tensor x = make({2, 2}, {0, 0, std::log(3.0f), 0});
  for (const char* b : kBackends) {
    INFO(b);
    expect_close(run_op("Softmax", {x}, axis_attr(0), b)[0], make({2, 2}, {0.25f, 0.5f, 0.75f, 0.5f}));
    expect_close(run_op("Softmax", {x}, axis_attr(-2), b)[0], make({2, 2}, {0.25f, 0.5f, 0.75f, 0.5f}));
    expect_close(run_op("Softmax", {x}, axis_attr(1), b)[0], make({2, 2}, {0.5f, 0.5f, 0.75f, 0.25f}));
    expect_close(run_op("LogSoftmax", {x}, axis_attr(0), b)[0],
                 make({2, 2}, {-1.38629436f, -0.69314718f, -0.28768207f, -0.69314718f}));
    // Stable for large logits along a strided axis.
    expect_close(run_op("Softmax", {make({2, 1}, {1000, 1000 + std::log(3.0f)})}, axis_attr(0), b)[0],
                 make({2, 1}, {0.25f, 0.75f}), 1e-4, 1e-4);
  }
}

TEST_CASE("Softmax and LogSoftmax on axes 0, 1, 2, -1 of a rank-4 tensor") {
  Tensor x = random_tensor({3, 4, 5, 6}, 11, -3, 3);
  for (int64_t axis : {0, 1, 2, -1}) {
    INFO("axis " << axis);
    for (const char* b : kBackends) {
      INFO(b);
      expect_close(run_op("Softmax", {x}, axis_attr(axis), b)[0], naive_softmax(x, static_cast<int>(axis), false), 1e-6,
                   1e-5);
      expect_close(run_op("LogSoftmax", {x}, axis_attr(axis), b)[0], naive_softmax(x, static_cast<int>(axis), true),
                   1e-5, 1e-5);
    }
  }
}

TEST_CASE("Softmax and LogSoftmax: gradients on axes 0, 1, -1 of a rank-4 tensor") {
  Tensor x = random_tensor({2, 3, 2, 3}, 12, -2, 2);
  for (int64_t axis : {0, 1, -1}) {
    for (const char* b : kBackends) {
      INFO("axis " << axis << " on " << b);
      GradCheckOptions o;
      o.backend = b;
      check_gradients("Softmax", {x}, axis_attr(axis), o);
      check_gradients("LogSoftmax", {x}, axis_attr(axis), o);
    }
  }
}

TEST_CASE("Softmax and LogSoftmax: oneDNN matches reference on awkward shapes") {
  struct Case {
    Shape shape;
    int64_t axis;
  };
  std::vector<Case> cases = {{{1}, 0},          {{7}, -1},           {{3, 1}, 1},       {{1, 9}, 0},
                             {{2, 3, 5, 7}, 0}, {{2, 3, 5, 7}, 1},   {{2, 3, 5, 7}, 2}, {{2, 3, 5, 7}, -1},
                             {{5, 1, 300}, 0},  {{4, 17, 1, 33}, 2}, {{1, 1000}, -1},   {{6, 2, 1, 1, 5}, -4}};
  uint64_t seed = 40;
  for (const Case& k : cases) {
    INFO("shape " << k.shape.to_string() << " axis " << k.axis);
    Tensor x = random_tensor(k.shape, ++seed, -10, 10);
    compare_backends("Softmax", {x}, axis_attr(k.axis), "onednn", 1e-6, 1e-5);
    compare_backends("LogSoftmax", {x}, axis_attr(k.axis), "onednn", 1e-5, 1e-5);
  }
  // Empty tensors run on reference.
  Tensor empty = Tensor::zeros(DType::kFloat32, {0, 3});
  CHECK(backend_used("Softmax", {empty}, {}) == "reference");
  CHECK(run_op("Softmax", {empty}, {}, "onednn")[0].shape() == Shape{0, 3});
}

TEST_CASE("Softmax: an axis outside [-rank, rank) names the node, the axis and the shape") {
  for (int64_t axis : {2, -3}) {
    Graph g;
    Scope s(g);
    Output x = ops::placeholder(s, DType::kFloat32, {2, 3}, "x");
    expect_error(
        Code::kInvalidArgument, [&] { ops::softmax(s, x, axis, "sm"); },
        "node 'sm' (Softmax): axis " + std::to_string(axis) + " is outside [-2, 2) for logits float32[2,3]");
    expect_error(
        Code::kInvalidArgument, [&] { ops::log_softmax(s, x, axis, "lsm"); }, "axis");
  }
}

TEST_CASE("SoftmaxCrossEntropyWithLogits: hand-computed loss and backprop") {
  Tensor logits = make({2, 3}, {1, 2, 3, 0, 0, 0});
  Tensor labels = make({2, 3}, {0, 0, 1, 0.5f, 0.5f, 0});
  auto out = run_op("SoftmaxCrossEntropyWithLogits", {logits, labels});
  expect_close(out[0], make({2}, {0.40760596f, 1.09861229f}));
  expect_close(out[1], make({2, 3}, {0.09003057f, 0.24472847f, -0.33475904f, -1 / 6.0f, -1 / 6.0f, 1 / 3.0f}));
  // Stable for huge logits.
  auto big = run_op("SoftmaxCrossEntropyWithLogits", {make({1, 3}, {1001, 1002, 1003}), make({1, 3}, {0, 0, 1})});
  expect_close(big[0], make({1}, {0.40760596f}), 1e-4, 1e-4);
}

TEST_CASE("SparseSoftmaxCrossEntropyWithLogits: int32 and int64 labels") {
  Tensor logits = make({2, 3}, {1, 2, 3, 0, 0, 0});
  Tensor want_loss = make({2}, {0.40760596f, 1.09861229f});
  Tensor want_back = make({2, 3}, {0.09003057f, 0.24472847f, -0.33475904f, 1 / 3.0f - 1, 1 / 3.0f, 1 / 3.0f});
  for (Tensor labels : {Tensor::from_vector<int32_t>({2}, {2, 0}), Tensor::from_vector<int64_t>({2}, {2, 0})}) {
    auto out = run_op("SparseSoftmaxCrossEntropyWithLogits", {logits, labels});
    expect_close(out[0], want_loss);
    expect_close(out[1], want_back);
  }
}

TEST_CASE("SparseSoftmaxCrossEntropyWithLogits: out-of-range label names node, value and C") {
  Graph g;
  Scope s(g);
  Output logits = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 3}, "logits");
  Output labels = ops::placeholder(s, DType::kInt64, {kUnknownDim}, "labels");
  auto xent = ops::sparse_softmax_cross_entropy_with_logits(s, logits, labels, "xent");
  Session session(g, nullptr);
  for (int64_t bad : {int64_t{3}, int64_t{-1}}) {
    try {
      session.run({{logits, random_tensor({2, 3}, 1)}, {labels, Tensor::from_vector<int64_t>({2}, {0, bad})}},
                  {xent.loss});
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.code() == Code::kInvalidArgument);
      std::string m = e.what();
      CHECK(m.find("'xent'") != std::string::npos);
      CHECK(m.find("label " + std::to_string(bad)) != std::string::npos);
      CHECK(m.find("C = 3") != std::string::npos);
    }
  }
  // Mismatched batch sizes and float labels are rejected when building.
  Output l2 = ops::placeholder(s, DType::kFloat32, {4, 3}, "l2");
  CHECK_THROWS_AS(ops::sparse_softmax_cross_entropy_with_logits(s, l2, ops::placeholder(s, DType::kInt32, {5}, "b")),
                  Error);
  CHECK_THROWS_AS(ops::sparse_softmax_cross_entropy_with_logits(s, l2, ops::placeholder(s, DType::kFloat32, {4}, "f")),
                  Error);
  CHECK_THROWS_AS(ops::softmax_cross_entropy_with_logits(s, l2, ops::placeholder(s, DType::kFloat32, {4, 2}, "d")),
                  Error);
}

TEST_CASE("cross entropy ops: gradients") {
  Tensor logits = random_tensor({3, 4}, 7, -2, 2);
  // Rows of labels are distributions (sum 1), the op's contract: backprop =
  // softmax - labels is then d loss / d logits.
  Tensor labels = make({3, 4}, {0.1f, 0.2f, 0.3f, 0.4f, 0, 1, 0, 0, 0.25f, 0.25f, 0.5f, 0});
  check_gradients("SoftmaxCrossEntropyWithLogits", {logits, labels});  // loss w.r.t. logits and labels
  GradCheckOptions back;
  back.output = 1;
  check_gradients("SoftmaxCrossEntropyWithLogits", {logits, labels}, {}, back);
  Tensor cls = Tensor::from_vector<int32_t>({3}, {3, 0, 1});
  check_gradients("SparseSoftmaxCrossEntropyWithLogits", {logits, cls});
  check_gradients("SparseSoftmaxCrossEntropyWithLogits", {logits, cls}, {}, back);
}

TEST_CASE("OneHot") {
  Tensor idx = Tensor::from_vector<int32_t>({4}, {0, 2, -1, 3});
  expect_close(run_op("OneHot", {idx}, Attrs().set("depth", 3))[0], make({4, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}));
  Tensor idx2 = Tensor::from_vector<int64_t>({2, 1}, {1, 0});
  expect_close(run_op("OneHot", {idx2}, Attrs().set("depth", 2).set("on_value", 5.0f).set("off_value", -1.0f))[0],
               make({2, 1, 2}, {-1, 5, 5, -1}));
}

TEST_CASE("softmax_cross_entropy and sparse_softmax_cross_entropy: batch mean, label smoothing") {
  Graph g;
  Scope s(g);
  Output logits = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 3}, "logits");
  Output dense = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 3}, "dense");
  Output sparse = ops::placeholder(s, DType::kInt32, {kUnknownDim}, "sparse");
  Output l0 = ops::softmax_cross_entropy(s, logits, dense);
  Output l1 = ops::softmax_cross_entropy(s, logits, dense, 0.3f);
  Output l2 = ops::sparse_softmax_cross_entropy(s, logits, sparse);
  Output l3 = ops::sparse_softmax_cross_entropy(s, logits, sparse, 0.3f);
  CHECK(g.spec(l0).shape == Shape{});
  Tensor lv = make({2, 3}, {1, 2, 3, 0, 0, 0});
  Tensor dv = make({2, 3}, {0, 0, 1, 1, 0, 0});
  Tensor sv = Tensor::from_vector<int32_t>({2}, {2, 0});
  Session session(g, nullptr);
  auto out = session.run({{logits, lv}, {dense, dv}, {sparse, sv}}, {l0, l1, l2, l3});
  // Unsmoothed: row losses 0.40760596 and ln 3 = 1.09861229.
  float plain = (0.40760596f + 1.09861229f) / 2;
  // Smoothed labels: row 0 [0.1, 0.1, 0.8]; row 1 [0.8, 0.1, 0.1] (uniform logits: ln 3).
  float smooth = (0.1f * 2.40760596f + 0.1f * 1.40760596f + 0.8f * 0.40760596f + 1.09861229f) / 2;
  expect_close(out[0], Tensor::scalar<float>(plain));
  expect_close(out[1], Tensor::scalar<float>(smooth));
  expect_close(out[2], Tensor::scalar<float>(plain));
  expect_close(out[3], Tensor::scalar<float>(smooth));
  // d mean / d logits = backprop / N, with N known only at run time.
  Output d = gradients(s, l2, {logits})[0];
  Tensor dl = session.run({{logits, lv}, {sparse, sv}}, {d})[0];
  expect_close(
      dl, make({2, 3}, {0.09003057f / 2, 0.24472847f / 2, -0.33475904f / 2, (1 / 3.0f - 1) / 2, 1 / 6.0f, 1 / 6.0f}));
  // Smoothing needs C known; a bad smoothing value is rejected.
  Output unknown_c = ops::placeholder(s, DType::kFloat32, {2, kUnknownDim}, "u");
  CHECK_THROWS_AS(ops::softmax_cross_entropy(s, unknown_c, unknown_c, 0.1f), Error);
  CHECK_THROWS_AS(ops::softmax_cross_entropy(s, logits, dense, 1.5f), Error);
}

#include "hub/ops/reduction.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {
Attrs red(std::vector<int64_t> axes, bool keep = false) { return Attrs().set("axes", axes).set("keep_dims", keep); }

// Independent reference: loops over every input element and accumulates into
// its output position (reduced coordinates dropped).
Tensor naive_reduce(const Tensor& x, const std::vector<int>& axes, bool max, bool mean) {
  std::vector<int64_t> out_dims;
  std::vector<char> is_red(x.rank(), 0);
  for (int a : axes) is_red[a] = 1;
  for (int d = 0; d < x.rank(); ++d)
    if (!is_red[d]) out_dims.push_back(x.dim(d));
  Tensor out(DType::kFloat32, Shape(out_dims));
  int64_t n_out = out.num_elements();
  std::vector<double> acc(n_out, max ? -1e300 : 0.0);
  const float* px = x.data<float>();
  std::vector<int64_t> idx(x.rank(), 0);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    int64_t o = 0;
    for (int d = 0; d < x.rank(); ++d)
      if (!is_red[d]) o = o * x.dim(d) + idx[d];
    acc[o] = max ? std::max(acc[o], double(px[i])) : acc[o] + px[i];
    for (int d = x.rank() - 1; d >= 0; --d) {
      if (++idx[d] < x.dim(d)) break;
      idx[d] = 0;
    }
  }
  int64_t count = n_out == 0 ? 0 : x.num_elements() / n_out;
  for (int64_t o = 0; o < n_out; ++o) out.data<float>()[o] = static_cast<float>(mean ? acc[o] / count : acc[o]);
  return out;
}
}  // namespace

TEST_CASE("Sum, Mean, Max: hand-computed values") {
  Tensor x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_close(run_op("Sum", {x}, red({}))[0], Tensor::scalar<float>(21));
  expect_close(run_op("Sum", {x}, red({0}))[0], make({3}, {5, 7, 9}));
  expect_close(run_op("Sum", {x}, red({1}))[0], make({2}, {6, 15}));
  expect_close(run_op("Sum", {x}, red({-1}, true))[0], make({2, 1}, {6, 15}));
  expect_close(run_op("Sum", {x}, red({}, true))[0], make({1, 1}, {21}));
  expect_close(run_op("Sum", {x}, red({1, -1, 1}))[0], make({2}, {6, 15}));  // duplicates allowed
  expect_close(run_op("Mean", {x}, red({0}))[0], make({3}, {2.5f, 3.5f, 4.5f}));
  expect_close(run_op("Mean", {x}, red({}))[0], Tensor::scalar<float>(3.5f));
  expect_close(run_op("Max", {x}, red({1}))[0], make({2}, {3, 6}));
  expect_close(run_op("Max", {x}, red({}))[0], Tensor::scalar<float>(6));

  Tensor y = make({2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  expect_close(run_op("Sum", {y}, red({0, 2}))[0], make({3}, {14, 22, 30}));
  expect_close(run_op("Sum", {y}, red({1}))[0], make({2, 2}, {6, 9, 24, 27}));
  expect_close(run_op("Max", {y}, red({0, 2}))[0], make({3}, {7, 9, 11}));
  expect_close(run_op("Mean", {y}, red({0, 2}, true))[0], make({1, 3, 1}, {3.5f, 5.5f, 7.5f}));
  // Size-1 axes only: a copy.
  expect_close(run_op("Sum", {make({2, 1, 2}, {1, 2, 3, 4})}, red({1}))[0], make({2, 2}, {1, 2, 3, 4}));
  // Rank 0 input.
  expect_close(run_op("Sum", {Tensor::scalar<float>(4)}, red({}))[0], Tensor::scalar<float>(4));
}

TEST_CASE("Sum, Mean, Max: integers and empty reductions") {
  Tensor i = Tensor::from_vector<int32_t>({2, 2}, {1, 2, -7, 4});
  CHECK(run_op("Sum", {i}, red({1}))[0].to_vector<int32_t>() == std::vector<int32_t>{3, -3});
  CHECK(run_op("Mean", {i}, red({1}))[0].to_vector<int32_t>() == std::vector<int32_t>{1, -1});  // truncation
  CHECK(run_op("Max", {i}, red({0}))[0].to_vector<int32_t>() == std::vector<int32_t>{1, 4});
  Tensor l = Tensor::from_vector<int64_t>({3}, {int64_t{1} << 40, 1, 2});
  CHECK(run_op("Sum", {l}, red({}))[0].item<int64_t>() == (int64_t{1} << 40) + 3);
  Tensor empty = Tensor::zeros(DType::kFloat32, {0, 3});
  expect_close(run_op("Sum", {empty}, red({0}))[0], make({3}, {0, 0, 0}));
  float lowest = std::numeric_limits<float>::lowest();
  expect_close(run_op("Max", {empty}, red({0}))[0], make({3}, {lowest, lowest, lowest}));
  CHECK(std::isnan(run_op("Mean", {empty}, red({0}))[0].to_vector<float>()[0]));
  CHECK(run_op("Sum", {empty}, red({1}))[0].shape() == Shape{0});
  // A kept dim of size 0 after the reduced one: an empty output (this divided
  // by zero once, SIGFPE).
  CHECK(run_op("Sum", {Tensor::zeros(DType::kFloat32, {3, 0})}, red({0}))[0].shape() == Shape{0});
  CHECK(run_op("Max", {Tensor::zeros(DType::kFloat32, {2, 3, 0})}, red({1}))[0].shape() == Shape{2, 0});
}

TEST_CASE("Sum, Mean, Max agree with a naive reference on awkward shapes") {
  Tensor x = random_tensor({3, 5, 4, 7}, 21);
  std::vector<std::vector<int>> cases = {{0},    {1},    {2},    {3},       {0, 1},      {1, 2},
                                         {0, 2}, {1, 3}, {0, 3}, {0, 1, 3}, {0, 1, 2, 3}};
  for (const auto& axes : cases) {
    std::vector<int64_t> a(axes.begin(), axes.end());
    std::string what;
    for (int v : axes) what += std::to_string(v) + " ";
    INFO("axes " << what);
    expect_close(run_op("Sum", {x}, red(a))[0], naive_reduce(x, axes, false, false), 1e-4, 1e-4);
    expect_close(run_op("Mean", {x}, red(a))[0], naive_reduce(x, axes, false, true), 1e-5, 1e-4);
    expect_close(run_op("Max", {x}, red(a))[0], naive_reduce(x, axes, true, false), 0, 0);
  }
  // Large inner dimension (chunked, parallel path).
  Tensor wide = random_tensor({3, 9000}, 22);
  expect_close(run_op("Sum", {wide}, red({0}))[0], naive_reduce(wide, {0}, false, false), 1e-4, 1e-4);
  expect_close(run_op("Max", {wide}, red({1}))[0], naive_reduce(wide, {1}, true, false), 0, 0);
}

TEST_CASE("Sum, Mean, Max: gradients match finite differences") {
  Tensor x = random_tensor({2, 3, 4}, 31);
  for (std::string op : {"Sum", "Mean", "Max"}) {
    INFO(op);
    check_gradients(op, {x}, red({}));
    check_gradients(op, {x}, red({1}));
    check_gradients(op, {x}, red({0, 2}, true));
    check_gradients(op, {x}, red({-1}));
  }
  check_gradients("L2Loss", {x});
}

TEST_CASE("Max gradient is split evenly among ties, as TF") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {2, 3}, "x");
  Output y = ops::max(s, x, {1});
  Output dx = gradients(s, y, {x})[0];
  Session session(g, nullptr);
  expect_close(session.run({{x, make({2, 3}, {1, 3, 3, 2, 2, 2})}}, {dx})[0],
               make({2, 3}, {0, 0.5f, 0.5f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f}));
}

TEST_CASE("Mean gradient with a batch size known only at run time") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 2}, "x");
  Output m = ops::mean(s, x, {0});
  Output total = ops::sum(s, m);
  Output dx = gradients(s, total, {x})[0];
  Session session(g, nullptr);
  expect_close(session.run({{x, random_tensor({4, 2}, 1)}}, {dx})[0],
               make({4, 2}, {0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f}));
  expect_close(session.run({{x, random_tensor({5, 2}, 2)}}, {dx})[0], make({5, 2}, std::vector<float>(10, 0.2f)));
}

TEST_CASE("reductions: bad axes name the node and the axis") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {2, 3}, "x");
  try {
    ops::sum(s, x, {2}, false, "total");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    std::string m = e.what();
    CHECK(m.find("'total'") != std::string::npos);
    CHECK(m.find("axis 2") != std::string::npos);
  }
  CHECK_THROWS_AS(ops::arg_max(s, x, -3), Error);
  CHECK_THROWS_AS(ops::mean(s, ops::placeholder(s, DType::kBool, {2}, "b")), Error);
  CHECK_THROWS_AS(ops::top_k(s, x, 4), Error);
  CHECK_THROWS_AS(ops::l2_loss(s, ops::placeholder(s, DType::kInt32, {2}, "i")), Error);
}

TEST_CASE("CumSum: hand-computed along each axis, exclusive and reverse; gradients") {
  auto cum = [](int64_t axis, bool exclusive = false, bool reverse = false) {
    return Attrs().set("axis", axis).set("exclusive", exclusive).set("reverse", reverse);
  };
  const Tensor x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_close(run_op("CumSum", {x}, cum(1))[0], make({2, 3}, {1, 3, 6, 4, 9, 15}));
  expect_close(run_op("CumSum", {x}, cum(-1, true))[0], make({2, 3}, {0, 1, 3, 0, 4, 9}));
  expect_close(run_op("CumSum", {x}, cum(1, false, true))[0], make({2, 3}, {6, 5, 3, 15, 11, 6}));
  expect_close(run_op("CumSum", {x}, cum(1, true, true))[0], make({2, 3}, {5, 3, 0, 11, 6, 0}));
  expect_close(run_op("CumSum", {x}, cum(0))[0], make({2, 3}, {1, 2, 3, 5, 7, 9}));
  expect_close(run_op("CumSum", {x}, cum(0, true, true))[0], make({2, 3}, {4, 5, 6, 0, 0, 0}));
  // Middle axis of [2, 2, 2], int64.
  const Tensor i = Tensor::from_vector<int64_t>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(run_op("CumSum", {i}, cum(1))[0].to_vector<int64_t>() == std::vector<int64_t>{1, 2, 4, 6, 5, 6, 12, 14});
  // An empty axis gives an empty result.
  CHECK(run_op("CumSum", {Tensor::zeros(DType::kFloat32, {2, 0})}, cum(1))[0].shape() == Shape{2, 0});
  const Tensor r = random_tensor({3, 4, 2}, 7);
  for (int64_t axis : {0, 1, 2})
    for (bool exclusive : {false, true})
      for (bool reverse : {false, true}) {
        CAPTURE(axis);
        CAPTURE(exclusive);
        CAPTURE(reverse);
        check_gradients("CumSum", {r}, cum(axis, exclusive, reverse));
      }
  expect_error(
      Code::kInvalidArgument, [&] { run_op("CumSum", {x}, cum(2)); }, "axis 2 is outside the dims of");
}

TEST_CASE("ArgMax: first index on ties (the last with select_last), int64 output") {
  Tensor x = make({2, 3}, {1, 3, 3, 7, 2, 7});
  Tensor a1 = run_op("ArgMax", {x}, Attrs().set("axis", 1))[0];
  CHECK(a1.dtype() == DType::kInt64);
  CHECK(a1.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  CHECK(run_op("ArgMax", {x}, Attrs().set("axis", 0))[0].to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1});
  CHECK(run_op("ArgMax", {x}, Attrs().set("axis", -1))[0].to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  Tensor y = make({2, 2, 2}, {0, 5, 1, 4, 9, 2, 3, 8});
  CHECK(run_op("ArgMax", {y}, Attrs().set("axis", 1))[0].to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0, 1});
  Tensor i = Tensor::from_vector<int32_t>({4}, {-5, -2, -9, -2});
  CHECK(run_op("ArgMax", {i}, Attrs().set("axis", 0))[0].item<int64_t>() == 1);
  // select_last: the last of the tied maxima.
  const Attrs last = Attrs().set("axis", 1).set("select_last", true);
  CHECK(run_op("ArgMax", {x}, last)[0].to_vector<int64_t>() == std::vector<int64_t>{2, 2});
  CHECK(run_op("ArgMax", {i}, Attrs().set("axis", 0).set("select_last", true))[0].item<int64_t>() == 3);
}

TEST_CASE("ArgMin: first index on ties (the last with select_last), int64 output") {
  Tensor x = make({2, 3}, {1, 3, 1, 7, 2, 2});
  Tensor a1 = run_op("ArgMin", {x}, Attrs().set("axis", 1))[0];
  CHECK(a1.dtype() == DType::kInt64);
  CHECK(a1.to_vector<int64_t>() == std::vector<int64_t>{0, 1});
  CHECK(run_op("ArgMin", {x}, Attrs().set("axis", 0))[0].to_vector<int64_t>() == std::vector<int64_t>{0, 1, 0});
  Tensor y = make({2, 2, 2}, {0, 5, 1, 4, 9, 2, 3, 8});
  CHECK(run_op("ArgMin", {y}, Attrs().set("axis", -2))[0].to_vector<int64_t>() == std::vector<int64_t>{0, 1, 1, 0});
  Tensor i = Tensor::from_vector<int64_t>({4}, {5, -2, 9, -2});
  CHECK(run_op("ArgMin", {i}, Attrs().set("axis", 0))[0].item<int64_t>() == 1);
  CHECK(run_op("ArgMin", {i}, Attrs().set("axis", 0).set("select_last", true))[0].item<int64_t>() == 3);
  CHECK(run_op("ArgMin", {x}, Attrs().set("axis", 1).set("select_last", true))[0].to_vector<int64_t>() ==
        std::vector<int64_t>{2, 2});
  Graph g;
  Scope s(g);
  CHECK_THROWS_AS(ops::arg_min(s, ops::placeholder(s, DType::kFloat32, {2}, "x"), 1), Error);
}

TEST_CASE("TopK: sorted values, int32 indices, ties to the lower index") {
  Tensor x = make({2, 5}, {1, 4, 2, 4, 3, 5, 5, 5, 1, 0});
  auto out = run_op("TopK", {x}, Attrs().set("k", 3));
  expect_close(out[0], make({2, 3}, {4, 4, 3, 5, 5, 5}));
  REQUIRE(out[1].dtype() == DType::kInt32);
  CHECK(out[1].to_vector<int32_t>() == std::vector<int32_t>{1, 3, 4, 0, 1, 2});
  auto one = run_op("TopK", {make({4}, {0.5f, -1, 2, 2})}, Attrs().set("k", 1));
  expect_close(one[0], make({1}, {2}));
  CHECK(one[1].to_vector<int32_t>() == std::vector<int32_t>{2});
  auto all = run_op("TopK", {make({1, 3}, {3, 1, 2})}, Attrs().set("k", 3));
  CHECK(all[1].to_vector<int32_t>() == std::vector<int32_t>{0, 2, 1});
  auto none = run_op("TopK", {make({2, 2}, {1, 2, 3, 4})}, Attrs().set("k", 0));
  CHECK(none[0].shape() == Shape{2, 0});
}

TEST_CASE("TopK: NaN ranks above every number, NaNs in index order") {
  const float inf = std::numeric_limits<float>::infinity();
  auto out = run_op("TopK", {make({2, 5}, {1, kNaN, inf, kNaN, 2, -inf, 0, kNaN, -inf, -1})}, Attrs().set("k", 4));
  CHECK(out[1].to_vector<int32_t>() == std::vector<int32_t>{1, 3, 2, 4, 2, 1, 4, 0});
  const std::vector<float> v = out[0].to_vector<float>();
  CHECK(std::isnan(v[0]));
  CHECK(std::isnan(v[1]));
  CHECK(v[2] == inf);
  CHECK(v[3] == 2);
  CHECK(std::isnan(v[4]));
  CHECK(v[5] == 0);
  CHECK(v[6] == -1);
  CHECK(v[7] == -inf);
}

TEST_CASE("TopK: gradient scatters to the chosen entries") {
  Tensor x = make({2, 4}, {0.1f, 0.9f, -0.4f, 0.5f, 2.0f, -1.0f, 1.2f, 0.3f});
  check_gradients("TopK", {x}, Attrs().set("k", 2));
  Tensor g = make({2, 2}, {10, 20, 30, 40});
  Tensor idx = Tensor::from_vector<int32_t>({2, 2}, {1, 3, 0, 2});
  expect_close(run_op("TopKGrad", {g, idx, x})[0], make({2, 4}, {0, 10, 0, 20, 30, 0, 40, 0}));
}

TEST_CASE("L2Loss") {
  expect_close(run_op("L2Loss", {make({3}, {1, 2, 3})})[0], Tensor::scalar<float>(7));
  expect_close(run_op("L2Loss", {make({2, 2}, {-1, 0.5f, 0, 2})})[0], Tensor::scalar<float>(2.625f));
}

namespace {
// Independent reference for Min and Prod: per output position, the elements
// of its group collected by index arithmetic, then min / product in double.
Tensor naive_group_reduce(const Tensor& x, const std::vector<int>& axes, bool prod) {
  std::vector<char> is_red(x.rank(), 0);
  for (int a : axes) is_red[a] = 1;
  std::vector<int64_t> out_dims;
  for (int d = 0; d < x.rank(); ++d)
    if (!is_red[d]) out_dims.push_back(x.dim(d));
  Tensor out(DType::kFloat32, Shape(out_dims));
  std::vector<double> acc(out.num_elements(), prod ? 1.0 : 1e300);
  std::vector<int64_t> idx(x.rank(), 0);
  const float* px = x.data<float>();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    int64_t o = 0;
    for (int d = 0; d < x.rank(); ++d)
      if (!is_red[d]) o = o * x.dim(d) + idx[d];
    acc[o] = prod ? acc[o] * px[i] : std::min(acc[o], double(px[i]));
    for (int d = x.rank() - 1; d >= 0; --d) {
      if (++idx[d] < x.dim(d)) break;
      idx[d] = 0;
    }
  }
  for (int64_t o = 0; o < out.num_elements(); ++o) out.data<float>()[o] = static_cast<float>(acc[o]);
  return out;
}
}  // namespace

TEST_CASE("Min and Prod: hand-computed values, integers, empty reductions") {
  Tensor x = make({2, 3}, {1, -2, 3, 4, 5, 0.5f});
  expect_close(run_op("Min", {x}, red({1}))[0], make({2}, {-2, 0.5f}));
  expect_close(run_op("Min", {x}, red({0}, true))[0], make({1, 3}, {1, -2, 0.5f}));
  expect_close(run_op("Min", {x}, red({}))[0], Tensor::scalar<float>(-2));
  expect_close(run_op("Prod", {x}, red({1}))[0], make({2}, {-6, 10}));
  expect_close(run_op("Prod", {x}, red({0}))[0], make({3}, {4, -10, 1.5f}));
  expect_close(run_op("Prod", {x}, red({}, true))[0], make({1, 1}, {-60}));
  Tensor i = Tensor::from_vector<int64_t>({2, 2}, {3, -2, 5, 7});
  CHECK(run_op("Min", {i}, red({1}))[0].to_vector<int64_t>() == std::vector<int64_t>{-2, 5});
  CHECK(run_op("Prod", {i}, red({0}))[0].to_vector<int64_t>() == std::vector<int64_t>{15, -14});
  Tensor empty = Tensor::zeros(DType::kFloat32, {0, 2});
  float highest = std::numeric_limits<float>::max();
  expect_close(run_op("Min", {empty}, red({0}))[0], make({2}, {highest, highest}));
  expect_close(run_op("Prod", {empty}, red({0}))[0], make({2}, {1, 1}));
}

TEST_CASE("Min and Prod agree with a naive reference on awkward shapes") {
  Tensor x = random_tensor({3, 5, 4, 7}, 23, 0.8f, 1.25f);  // products stay near 1
  std::vector<std::vector<int>> cases = {{0}, {1}, {3}, {0, 2}, {1, 3}, {0, 1, 3}, {0, 1, 2, 3}};
  for (const auto& axes : cases) {
    std::vector<int64_t> a(axes.begin(), axes.end());
    expect_close(run_op("Min", {x}, red(a))[0], naive_group_reduce(x, axes, false), 0, 0);
    expect_close(run_op("Prod", {x}, red(a))[0], naive_group_reduce(x, axes, true), 1e-5, 1e-4);
  }
  Tensor wide = random_tensor({3, 9000}, 24);
  expect_close(run_op("Min", {wide}, red({0}))[0], naive_group_reduce(wide, {0}, false), 0, 0);
}

TEST_CASE("Min and Prod: gradients; ProdGrad is exact with zeros") {
  Tensor x = random_tensor({2, 3, 4}, 32, 0.5f, 1.5f);
  for (std::string op : {"Min", "Prod"}) {
    INFO(op);
    check_gradients(op, {x}, red({}), GradCheckOptions{.step = 1e-3});
    check_gradients(op, {x}, red({1}), GradCheckOptions{.step = 1e-3});
    check_gradients(op, {x}, red({0, 2}, true), GradCheckOptions{.step = 1e-3});
  }
  // Rows with one zero and with two: d/dx_i is the product of the others.
  Tensor z = make({3, 3}, {2, 0, 3, 0, 0, 5, 1, 2, 4});
  Tensor g = make({3}, {1, 1, 2});
  expect_close(run_op("ProdGrad", {g, z}, red({1}))[0], make({3, 3}, {0, 6, 0, 0, 0, 0, 16, 8, 4}));
  // Min's gradient splits among ties like Max's.
  Graph gr;
  Scope s(gr);
  Output in = ops::placeholder(s, DType::kFloat32, {1, 3}, "x");
  Output dx = gradients(s, ops::min(s, in, {1}), {in})[0];
  Session sess(gr, nullptr);
  expect_close(sess.run_one({{in, make({1, 3}, {2, 1, 1})}}, dx), make({1, 3}, {0, 0.5f, 0.5f}));
  expect_error(
      Code::kInvalidArgument,
      [&] {
        s.op("ProdGrad", {in, in}, red({1}), "pg");
      },
      "is not x");
}

TEST_CASE("DynamicTopK: k read from its input at each run, as TopK's; gradient; k checked") {
  const Tensor x = make({2, 4}, {1, 5, 3, 2, 7, 0, 7, 4});
  const Attrs sorted = Attrs().set("sorted", true);
  std::vector<Tensor> top = run_op("DynamicTopK", {x, Tensor::scalar<int64_t>(2)}, sorted);
  CHECK(top[0].to_vector<float>() == std::vector<float>{5, 3, 7, 7});
  CHECK(top[1].to_vector<int32_t>() == std::vector<int32_t>{1, 2, 0, 2});  // ties: the lower index first
  top = run_op("DynamicTopK", {x, Tensor::from_vector<int32_t>({1}, {0})}, sorted);
  CHECK(top[0].shape() == Shape{2, 0});
  GradCheckOptions x_only;
  x_only.inputs = {0};
  check_gradients("DynamicTopK", {random_tensor({3, 5}, 41), Tensor::scalar<int64_t>(3)}, sorted, x_only);
  CHECK_THROWS_WITH_AS(run_op("DynamicTopK", {x, Tensor::scalar<int64_t>(5)}, sorted),
                       doctest::Contains("k = 5 is negative or exceeds the last dim"), Error);
}

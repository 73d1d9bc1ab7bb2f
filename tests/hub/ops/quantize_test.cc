// QuantizeLinear / DequantizeLinear: hand-computed vectors (ties to even,
// saturation, NaN, per channel on a middle axis), round trips, int8 through
// .npy and safetensors, and bad input. Fake quantization: hand-computed grids
// and gradients, values on the nudged grid, the onednn fallback, bad input.
#include "hub/ops/quantize.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/module/safetensors.h"
#include "hub/ops/state.h"
#include "hub/tensor/npy.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {
template <class T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.num_elements());
}
}  // namespace

TEST_CASE("QuantizeLinear per tensor: ties to even, saturation, NaN, uint8 and int8") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // scale 0.5: x / 0.5 = 2x; zero point 10 (uint8).
  //   0.25 -> 0.5 -> 0 (tie to even) + 10 = 10;  0.75 -> 1.5 -> 2 -> 12
  //   1.25 -> 2.5 -> 2 -> 12;  -0.75 -> -1.5 -> -2 -> 8;  -10 -> -20 -> -10 -> 0 (saturated)
  //   200 -> 400 -> 410 -> 255 (saturated);  NaN -> zero point 10
  Tensor x = make({7}, {0.25f, 0.75f, 1.25f, -0.75f, -10, 200, nan});
  Tensor y = run_op("QuantizeLinear", {x, Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(10)})[0];
  CHECK(y.dtype() == DType::kUInt8);
  CHECK(values<uint8_t>(y) == std::vector<uint8_t>{10, 12, 12, 8, 0, 255, 10});
  // int8, zero point -3: -10 -> -20 - 3 = -23;  200 -> 397 -> 127;  -100 -> -203 -> -128
  Tensor x8 = make({4}, {-10, 200, -100, 1.25f});
  Tensor y8 = run_op("QuantizeLinear", {x8, Tensor::scalar<float>(0.5f), Tensor::scalar<int8_t>(-3)})[0];
  CHECK(y8.dtype() == DType::kInt8);
  CHECK(values<int8_t>(y8) == std::vector<int8_t>{-23, 127, -128, -1});
}

TEST_CASE("QuantizeLinear / DequantizeLinear over a tensor of several chunks, per tensor and per channel") {
  // Long rows are cut into chunks run in parallel: every element, the ones at chunk edges
  // included, gets its channel's parameters. x_i = (i mod 1000) / 4 - 100 has ties (x / 0.5 = .5
  // steps) and saturates both ways; a NaN sits at the very end.
  const int64_t n = 3 * 16384 + 77;
  std::vector<float> xs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) xs[i] = static_cast<float>(i % 1000) / 4 - 100;
  xs.back() = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::from_vector<float>({n}, xs);
  const Tensor q = run_op("QuantizeLinear", {x, Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(100)})[0];
  const Tensor back = run_op("DequantizeLinear", {q, Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(100)})[0];
  for (int64_t i = 0; i < n; ++i) {
    // 2 x_i = (i mod 1000) / 2 - 200: an integer or a tie, which rounds to the even neighbour.
    const int64_t twice = i % 1000;  // 2 x_i + 200 = twice / 2
    int64_t want = twice / 2 + (twice % 2 == 1 && (twice / 2) % 2 == 1 ? 1 : 0) - 200 + 100;
    if (i == n - 1) want = 100;
    want = std::clamp<int64_t>(want, 0, 255);
    REQUIRE_MESSAGE(q.data<uint8_t>()[i] == want, "element " << i);
    REQUIRE(back.data<float>()[i] == static_cast<float>(want - 100) * 0.5f);
  }
  // Per channel along axis 0 of [2, 24614]: rows of two chunks each.
  const int64_t inner = 24614;
  const Tensor x2 = Tensor::from_vector<float>({2, inner}, std::vector<float>(xs.begin(), xs.begin() + 2 * inner));
  const Tensor q2 = run_op("QuantizeLinear", {x2, make({2}, {0.5f, 0.25f}), Tensor::from_vector<int8_t>({2}, {0, -20})},
                           Attrs().set("axis", int64_t{0}))[0];
  for (int64_t i = 0; i < 2 * inner; ++i) {
    const float v = xs[static_cast<size_t>(i)] / (i < inner ? 0.5f : 0.25f);
    const int64_t want = std::clamp<int64_t>(std::lrint(v) + (i < inner ? 0 : -20), -128, 127);
    REQUIRE_MESSAGE(q2.data<int8_t>()[i] == want, "element " << i);
  }
}

TEST_CASE("QuantizeLinear / DequantizeLinear per channel along a middle axis") {
  // x [2, 3, 2], axis 1: channel c has scale (c + 1) and zero point (c - 1).
  Tensor x = make({2, 3, 2}, {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
  Tensor scale = make({3}, {1, 2, 3});
  Tensor zp = Tensor::from_vector<int8_t>({3}, {-1, 0, 1});
  Tensor q = run_op("QuantizeLinear", {x, scale, zp}, Attrs().set("axis", int64_t{1}))[0];
  // c0: x/1 - 1: 1->0, 2->1, -1->-2, -2->-3
  // c1: x/2 + 0: 3->1.5->2, 4->2, -3->-1.5->-2, -4->-2
  // c2: x/3 + 1: 5->1.667->2->3, 6->2->3, -5->-2->-1, -6->-2->-1
  CHECK(values<int8_t>(q) == std::vector<int8_t>{0, 1, 2, 2, 3, 3, -2, -3, -2, -2, -1, -1});
  Tensor back = run_op("DequantizeLinear", {q, scale, zp}, Attrs().set("axis", int64_t{-2}))[0];
  // (q - zp) * scale
  expect_close(back, make({2, 3, 2}, {1, 2, 4, 4, 6, 6, -1, -2, -4, -4, -6, -6}), 0, 0);
}

TEST_CASE("DequantizeLinear of uint8 and int32; a round trip is within half a step") {
  Tensor u = Tensor::from_vector<uint8_t>({3}, {0, 128, 255});
  expect_close(run_op("DequantizeLinear", {u, Tensor::scalar<float>(0.1f), Tensor::scalar<uint8_t>(128)})[0],
               make({3}, {-12.8f, 0, 12.7f}), 1e-6, 0);
  Tensor i32 = Tensor::from_vector<int32_t>({2}, {-2000000000, 2000000000});
  expect_close(run_op("DequantizeLinear", {i32, Tensor::scalar<float>(0.5f), Tensor::scalar<int32_t>(0)})[0],
               make({2}, {-1e9f, 1e9f}), 0, 1e-7);
  Tensor x = random_tensor({4, 5, 6}, 3, -2, 2);
  Tensor q = run_op("QuantizeLinear", {x, Tensor::scalar<float>(0.02f), Tensor::scalar<int8_t>(0)})[0];
  Tensor back = run_op("DequantizeLinear", {q, Tensor::scalar<float>(0.02f), Tensor::scalar<int8_t>(0)})[0];
  for (int64_t i = 0; i < x.num_elements(); ++i)
    CHECK(std::fabs(back.data<float>()[i] - x.data<float>()[i]) <= 0.01f + 1e-6f);
}

TEST_CASE("int8 tensors through .npy and safetensors") {
  Tensor t = Tensor::from_vector<int8_t>({2, 2}, {-128, -1, 0, 127});
  TempDir dir("int8");
  write_npy(dir / "t.npy", t);
  Tensor n = read_npy(dir / "t.npy");
  CHECK(n.dtype() == DType::kInt8);
  CHECK(values<int8_t>(n) == values<int8_t>(t));
  // The header says |i1, as NumPy writes int8.
  CHECK(read_file(dir.path / "t.npy").find("'descr': '|i1'") != std::string::npos);
  const std::string st = encode_safetensors({{"w", t}}, {});
  CHECK(st.find("\"dtype\":\"I8\"") != std::string::npos);
  auto back = decode_safetensors(st, "mem");
  CHECK(back.tensors.at("w").dtype() == DType::kInt8);
  CHECK(values<int8_t>(back.tensors.at("w")) == values<int8_t>(t));
  CHECK(parse_dtype("int8") == DType::kInt8);
}

TEST_CASE("quantization ops refuse bad scales, zero points and axes, naming the node") {
  Tensor x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("QuantizeLinear", {x, Tensor::scalar<float>(0), Tensor::scalar<uint8_t>(0)});
      },
      "scale 0 is 0.000000, must be > 0");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("QuantizeLinear", {x, Tensor::scalar<float>(1), Tensor::scalar<int32_t>(0)});
      },
      "zero_point has dtype int32, which is not allowed here");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("QuantizeLinear", {x, make({2}, {1, 1}), Tensor::from_vector<uint8_t>({2}, {0, 0})});
      },
      "does not match input [2,3] along axis 1");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("QuantizeLinear", {x, make({3}, {1, 1, 1}), Tensor::from_vector<uint8_t>({3}, {0, 0, 0})},
               Attrs().set("axis", int64_t{2}));
      },
      "axis 2 is out of range");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("DequantizeLinear",
               {Tensor::from_vector<int8_t>({1}, {1}), Tensor::scalar<float>(1), Tensor::scalar<uint8_t>(0)});
      },
      "x is int8 but zero_point is uint8");
}

TEST_CASE("nudged_quant_params: TensorFlow's fake-quant grid, hand-computed") {
  // [-1, 3]: scale 4/255, zero point round(63.75) = 64, grid [-64, 191] * scale.
  ops::QuantParams p = ops::nudged_quant_params(-1.0f, 3.0f);
  CHECK(p.scale == doctest::Approx(4.0 / 255).epsilon(1e-6));
  CHECK(p.zero_point == 64);
  CHECK(p.nudged_min == doctest::Approx(-64 * 4.0 / 255).epsilon(1e-6));
  CHECK(p.nudged_max == doctest::Approx(191 * 4.0 / 255).epsilon(1e-6));
  // Narrow symmetric range: the int8 grid [-127, 127] * 0.02 around zero point 128.
  p = ops::nudged_quant_params(-2.54f, 2.54f, 8, true);
  CHECK(p.scale == doctest::Approx(0.02).epsilon(1e-6));
  CHECK(p.zero_point == 128);
  CHECK(p.nudged_min == doctest::Approx(-2.54).epsilon(1e-6));
  // A positive range is widened to contain 0: [0, 2], zero point 0.
  p = ops::nudged_quant_params(0.5f, 2.0f);
  CHECK(p.zero_point == 0);
  CHECK(p.scale == doctest::Approx(2.0 / 255).epsilon(1e-6));
  // 4 bits over [-3, 12]: scale 1, zero point 3.
  p = ops::nudged_quant_params(-3.0f, 12.0f, 4);
  CHECK(p.scale == doctest::Approx(1.0));
  CHECK(p.zero_point == 3);
  p = ops::nudged_quant_params(0.0f, 0.0f);
  CHECK(p.scale > 0);
  CHECK_THROWS_WITH_AS(ops::nudged_quant_params(0.0f, INFINITY), doctest::Contains("not finite"), Error);
  CHECK_THROWS_WITH_AS(ops::nudged_quant_params(0.0f, 1.0f, 9), doctest::Contains("num_bits 9"), Error);
}

namespace {
Attrs bits(int64_t num_bits, bool narrow_range = false) {
  return Attrs().set("num_bits", num_bits).set("narrow_range", narrow_range);
}
Tensor fake_quant(const Tensor& x, float min, float max, const Attrs& attrs = {}) {
  return run_op("FakeQuantWithMinMaxVars", {x, Tensor::scalar<float>(min), Tensor::scalar<float>(max)}, attrs)[0];
}
}  // namespace

TEST_CASE("FakeQuantWithMinMaxVars: hand-computed grids") {
  // 2 bits over [-1, 2]: scale 3/3 = 1, zero point 1, grid {-1, 0, 1, 2}.
  // y = floor(clamp(x) + 1 + 0.5) - 1: -3 -> -1; -0.6 -> floor(0.9) - 1 = -1;
  // -0.5 -> floor(1.0) - 1 = 0 (halves round up); 0.4 -> 0; 0.5 -> 1; 1.49 -> 1; 2.5 -> 2.
  Tensor x = make({8}, {-3, -1, -0.6f, -0.5f, 0.4f, 0.5f, 1.49f, 2.5f});
  expect_close(fake_quant(x, -1, 2, bits(2)), make({8}, {-1, -1, -1, 0, 0, 1, 1, 2}), 0, 0);
  // [-0.3, 2.7] is nudged: scale 1, zero point round(0.3) = 0, grid {0, 1, 2, 3}.
  expect_close(fake_quant(make({4}, {-0.2f, 1.4f, 2.6f, 2.9f}), -0.3f, 2.7f, bits(2)), make({4}, {0, 1, 3, 3}), 1e-6,
               0);
  // narrow_range, 2 bits over [-1, 1]: levels 1..3, zero point 2, grid {-1, 0, 1}.
  expect_close(fake_quant(make({4}, {-5, -0.4f, 0.6f, 7}), -1, 1, bits(2, true)), make({4}, {-1, 0, 1, 1}), 0, 0);
  // min = max = 0: zeros, as TensorFlow.
  expect_close(fake_quant(make({3}, {-2, 0, 3}), 0, 0), make({3}, {0, 0, 0}), 0, 0);
}

TEST_CASE("FakeQuantWithMinMaxVars: 8-bit outputs lie on the nudged grid, nearest level") {
  // [-1, 1], 8 bits: scale 2/255; every y is nudged_min + k * scale with k in
  // [0, 255], within half a step of clamped x.
  Tensor x = random_tensor({3, 5, 7}, 11, -1.5f, 1.5f);
  Tensor y = fake_quant(x, -1, 1);
  const ops::QuantParams p = ops::nudged_quant_params(-1, 1);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const float v = y.data<float>()[i];
    const float clamped = std::min(std::max(x.data<float>()[i], p.nudged_min), p.nudged_max);
    const double k = (v - p.nudged_min) / p.scale;
    CHECK(std::fabs(k - std::round(k)) < 1e-3);
    CHECK(std::round(k) >= 0);
    CHECK(std::round(k) <= 255);
    CHECK(std::fabs(v - clamped) <= p.scale / 2 + 1e-6);
  }
}

TEST_CASE("FakeQuantWithMinMaxVarsPerChannel: one grid per channel of the last dim") {
  // 2 bits. Channel 0 [-1, 2]: grid {-1..2}; channel 1 [0, 0]: zeros;
  // channel 2 [-2, 1]: scale 1, zero point 2, grid {-2..1}.
  // Row 0: -3 -> -1; 5 -> 0; 0.6 -> floor(2.6 + 0.5) - 2 = 1.
  // Row 1: 1.5 -> floor(2.5 + 0.5) - 1 = 2; -1 -> 0; -2.6 -> -2.
  Tensor x = make({2, 3}, {-3, 5, 0.6f, 1.5f, -1, -2.6f});
  Tensor y = run_op("FakeQuantWithMinMaxVarsPerChannel", {x, make({3}, {-1, 0, -2}), make({3}, {2, 0, 1})}, bits(2))[0];
  expect_close(y, make({2, 3}, {-1, 0, 1, 2, 0, -2}), 1e-6, 0);
  // One channel per tensor element agrees with the per-tensor op.
  Tensor x1 = random_tensor({4, 1}, 5, -3, 3);
  expect_close(run_op("FakeQuantWithMinMaxVarsPerChannel", {x1, make({1}, {-2}), make({1}, {1.5f})})[0],
               fake_quant(x1, -2, 1.5f), 0, 0);
}

TEST_CASE("fake quantization gradients: straight through inside the range, hand-computed") {
  // Per tensor, 2 bits over [-1, 2]: x = {-3, -1, 0.5, 2, 2.5}, g = {1, 2, 3, 4, 5}:
  // dx = g inside [-1, 2] = {0, 2, 3, 4, 0}; dmin = g where x < -1 = 1; dmax = g where x > 2 = 5.
  std::vector<Tensor> out = run_op("FakeQuantWithMinMaxVarsGradient",
                                   {make({5}, {1, 2, 3, 4, 5}), make({5}, {-3, -1, 0.5f, 2, 2.5f}),
                                    Tensor::scalar<float>(-1), Tensor::scalar<float>(2)},
                                   bits(2));
  expect_close(out[0], make({5}, {0, 2, 3, 4, 0}), 0, 0);
  expect_close(out[1], Tensor::scalar<float>(1), 0, 0);
  expect_close(out[2], Tensor::scalar<float>(5), 0, 0);
  // Per channel (grids as in the forward case), x = [[-3, 5, 1.7], [1.5, -1, -2.6]],
  // g = [[1, 2, 3], [4, 5, 6]]: channel 0 [-1, 2]: -3 below (dmin 1), 1.5 inside;
  // channel 1 [0, 0] passes everything; channel 2 [-2, 1]: 1.7 above (dmax 3), -2.6 below (dmin 6).
  out = run_op("FakeQuantWithMinMaxVarsPerChannelGradient",
               {make({2, 3}, {1, 2, 3, 4, 5, 6}), make({2, 3}, {-3, 5, 1.7f, 1.5f, -1, -2.6f}), make({3}, {-1, 0, -2}),
                make({3}, {2, 0, 1})},
               bits(2));
  expect_close(out[0], make({2, 3}, {0, 2, 0, 4, 5, 0}), 0, 0);
  expect_close(out[1], make({3}, {1, 0, 6}), 0, 0);
  expect_close(out[2], make({3}, {0, 0, 3}), 0, 0);

  // Through autodiff: L = sum(w * FakeQuant(x, min, max)) gives the same
  // gradient op's values for x, min and max.
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {5}, "x");
  Output lo = ops::placeholder(s, DType::kFloat32, {}, "min");
  Output hi = ops::placeholder(s, DType::kFloat32, {}, "max");
  Output y = ops::fake_quant_with_min_max_vars(s, x, lo, hi, 2);
  Output w = ops::constant(s, make({5}, {1, 2, 3, 4, 5}), "w");
  std::vector<Output> grads = gradients(s, y, {x, lo, hi}, w);
  Session session(g, nullptr);
  std::vector<Tensor> got = session.run(
      {{x, make({5}, {-3, -1, 0.5f, 2, 2.5f})}, {lo, Tensor::scalar<float>(-1)}, {hi, Tensor::scalar<float>(2)}},
      grads);
  expect_close(got[0], make({5}, {0, 2, 3, 4, 0}), 0, 0);
  expect_close(got[1], Tensor::scalar<float>(1), 0, 0);
  expect_close(got[2], Tensor::scalar<float>(5), 0, 0);
}

TEST_CASE("fake quantization over a tensor of several chunks: forward and gradient sums by hand") {
  // Per tensor over [-1, 2] (8 bits: the grid's ends are exactly -1 and 2, zero point 85), on
  // three and a bit chunks of 16,384. x_i = (i mod 100) / 10 - 3.05 stays off the range's ends:
  // 21 of each 100 lie below -1, 49 above 2; g_i = 1 + (i mod 7).
  const int64_t n = 3 * 16384 + 5;
  std::vector<float> xs(static_cast<size_t>(n)), gs(static_cast<size_t>(n));
  double below = 0, above = 0;
  for (int64_t i = 0; i < n; ++i) {
    xs[i] = static_cast<float>(i % 100) / 10 - 3.05f;
    gs[i] = static_cast<float>(1 + i % 7);
    below += xs[i] < -1 ? gs[i] : 0;
    above += xs[i] > 2 ? gs[i] : 0;
  }
  const Tensor x = Tensor::from_vector<float>({n}, xs), g = Tensor::from_vector<float>({n}, gs);
  const std::vector<Tensor> out =
      run_op("FakeQuantWithMinMaxVarsGradient", {g, x, Tensor::scalar<float>(-1), Tensor::scalar<float>(2)});
  CHECK(out[1].data<float>()[0] == static_cast<float>(below));
  CHECK(out[2].data<float>()[0] == static_cast<float>(above));
  const Tensor y = run_op("FakeQuantWithMinMaxVars", {x, Tensor::scalar<float>(-1), Tensor::scalar<float>(2)})[0];
  for (int64_t i = 0; i < n; ++i) {
    const bool inside = xs[i] > -1 && xs[i] < 2;
    REQUIRE_MESSAGE(out[0].data<float>()[i] == (inside ? gs[i] : 0.0f), "element " << i);
    // Clamped to [-1, 2], then on the grid of step 3/255 from -1.
    const double clamped = std::clamp<double>(xs[i], -1, 2);
    const double level = std::floor((clamped + 1) / (3.0 / 255) + 0.5);
    REQUIRE_MESSAGE(std::fabs(y.data<float>()[i] - (level * 3.0 / 255 - 1)) < 1e-5, "element " << i);
  }
}

TEST_CASE("fake quantization: finite differences where the gradient is the derivative") {
  // Outside the range the output is constant in x and the gradient is 0 (the
  // straight-through part inside is checked by hand above; no finite
  // difference can show it, the forward function being a staircase).
  check_gradients("FakeQuantWithMinMaxVars",
                  {make({4}, {-3, -2.5f, 4, 5}), Tensor::scalar<float>(-1), Tensor::scalar<float>(2)}, bits(2),
                  {.inputs = {0}});
  check_gradients("FakeQuantWithMinMaxVarsPerChannel",
                  {make({2, 2}, {-3, 4, 5, -6}), make({2}, {-1, -2}), make({2}, {2, 1})}, bits(2), {.inputs = {0}});
}

TEST_CASE("fake quantization runs on the reference kernel under onednn") {
  Tensor x = random_tensor({2, 3, 3, 5}, 2);
  CHECK(backend_used("FakeQuantWithMinMaxVars", {x, Tensor::scalar<float>(-0.5f), Tensor::scalar<float>(0.5f)}, {}) ==
        "reference");
  CHECK(backend_used("FakeQuantWithMinMaxVarsPerChannel",
                     {x, random_tensor({5}, 3, -1, 0), random_tensor({5}, 4, 0, 1)}, {}) == "reference");
}

TEST_CASE("fake quantization refuses bad ranges, shapes and num_bits, naming the node") {
  Tensor x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_error(
      Code::kInvalidArgument, [&] { fake_quant(x, 1, -1); }, "min 1.000000 > max -1.000000");
  expect_error(
      Code::kInvalidArgument, [&] { fake_quant(x, -1, INFINITY); }, "not finite");
  expect_error(
      Code::kInvalidArgument, [&] { fake_quant(x, -1, 1, bits(9)); }, "num_bits = 9 is outside [2, 8]");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("FakeQuantWithMinMaxVars", {x, make({1}, {-1}), Tensor::scalar<float>(1)});
      },
      "min must be a scalar, got [1]");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("FakeQuantWithMinMaxVarsPerChannel", {x, make({2}, {-1, -1}), make({3}, {1, 1, 1})});
      },
      "min [2] must be [C] with C the last dim of x [2,3]");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("FakeQuantWithMinMaxVarsPerChannel", {make({3}, {1, 2, 3}), make({3}, {0, 0, 1}), make({3}, {1, 0, 0})});
      },
      "min 1.000000 > max 0.000000 in channel 2");
}

// The fused inference ops (hub/ops/fused.h): hand-computed values, the same
// results as the unfused ops they replace (built as an ordinary graph), oneDNN
// against the reference on awkward shapes and every post-op and layout, and
// bad attributes.
#include "hub/ops/fused.h"

#include <doctest/doctest.h>

#include <cmath>

#include "conv_cases.h"
#include "hub/graph/session.h"
#include "hub/ops/activation.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/matmul.h"
#include "hub/ops/onednn/common.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

// Compares `op` on onednn with the reference. oneDNN on a CPU without
// AVX-512 has no JIT kernel for some post-op chains (only its own reference
// implementation), and the onednn backend then declines the node: there the
// node may fall back, with AVX-512 it must run on oneDNN.
void compare_with_onednn(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  const bool avx512 = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core &&
                      dnnl::get_effective_cpu_isa() != dnnl::cpu_isa::avx2_vnni;
  if (!avx512 && backend_used(op, inputs, attrs, "onednn") != "onednn") {
    MESSAGE(op << " fell back to the reference on this CPU (no AVX-512)");
    return;
  }
  compare_backends(op, inputs, attrs, "onednn");
}

const char* const kBackends[] = {"reference", "onednn"};

// The blocked form of an NHWC tensor, through _Relayout's reference kernel.
Tensor blocked(const Tensor& nhwc, int64_t block) {
  return run_op("_Relayout", {nhwc},
                Attrs().set("from_block", int64_t{0}).set("to_block", block).set("channels", nhwc.dim(3)))[0];
}
Tensor unblocked(const Tensor& t, int64_t channels) {
  return run_op("_Relayout", {t},
                Attrs().set("from_block", t.dim(4)).set("to_block", int64_t{0}).set("channels", channels))[0];
}

// The unfused graph the optimiser replaces: conv, BiasAdd, then the post-ops
// as their own ops (Add with `side`), run on the reference backend.
Tensor unfused_conv(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& side,
                    const std::vector<ops::PostOp>& post_ops, bool depthwise, int64_t stride,
                    const std::string& padding) {
  Graph g;
  Scope s(g);
  Output px = ops::placeholder(s, DType::kFloat32, x.shape(), "x");
  Output y = depthwise ? ops::depthwise_conv2d(s, px, ops::constant(s, w, "w"), {{stride, stride}, padding})
                       : ops::conv2d(s, px, ops::constant(s, w, "w"), {{stride, stride}, padding});
  y = ops::bias_add(s, y, ops::constant(s, bias, "b"));
  for (const ops::PostOp& p : post_ops) {
    if (p.op == "Add")
      y = ops::add(s, y, ops::constant(s, side, "side"));
    else if (p.op == "Relu")
      y = ops::relu(s, y);
    else if (p.op == "Relu6")
      y = ops::relu6(s, y);
    else if (p.op == "Sigmoid")
      y = ops::sigmoid(s, y);
    else if (p.op == "Tanh")
      y = ops::tanh(s, y);
    else if (p.op == "Elu")
      y = ops::elu(s, y);  // alpha 1
    else if (p.op == "LeakyRelu")
      y = ops::leaky_relu(s, y, p.alpha);
    else if (p.op == "Clip")
      y = ops::clip_by_value(s, y, p.alpha, p.beta);
    else if (p.op == "HardSwish")
      y = ops::hard_swish(s, y);
    else
      FAIL("no unfused form for " << p.op);
  }
  Session session(g, nullptr, {&find_backend("reference")});
  return session.run_one({{px, x}}, y);
}

}  // namespace

TEST_CASE("_FusedConv2D: hand-computed 1x1 convolution with bias, residual Add and Relu6") {
  // x [1,2,1,2] (two pixels of two channels), w [1,1,2,2], bias [2], side [1,2,1,2].
  Tensor x = make({1, 2, 1, 2}, {1, 2, 3, -4});
  Tensor w = make({1, 1, 2, 2}, {1, 2,        // w[c=0] -> (o0, o1)
                                 0.5f, -1});  // w[c=1]
  Tensor bias = make({2}, {0.5f, -1});
  Tensor side = make({1, 2, 1, 2}, {1, 1, 10, -10});
  // pixel 0: conv = (1*1 + 2*0.5, 1*2 + 2*-1) = (2, 0); + bias = (2.5, -1); + side = (3.5, 0)
  // pixel 1: conv = (3*1 - 4*0.5, 3*2 + 4) = (1, 10); + bias = (1.5, 9); + side = (11.5, -1)
  // Relu6: (3.5, 0), (6, 0)
  for (const char* b : kBackends) {
    INFO(b);
    expect_close(run_op("_FusedConv2D", {x, w, bias, side}, fused_conv_attrs({{"Add"}, {"Relu6"}}), b)[0],
                 make({1, 2, 1, 2}, {3.5f, 0, 6, 0}));
    // The order of post-ops matters: Relu6 first, then Add.
    expect_close(run_op("_FusedConv2D", {x, w, bias, side}, fused_conv_attrs({{"Relu6"}, {"Add"}}), b)[0],
                 make({1, 2, 1, 2}, {3.5f, 1, 11.5f, -4}));
    // Clip(-0.5, 2) and LeakyRelu(0.1), HardSwish: z = (2.5, -1), (1.5, 9).
    expect_close(run_op("_FusedConv2D", {x, w, bias}, fused_conv_attrs({{"Clip", -0.5f, 2}}), b)[0],
                 make({1, 2, 1, 2}, {2, -0.5f, 1.5f, 2}));
    expect_close(run_op("_FusedConv2D", {x, w, bias}, fused_conv_attrs({{"LeakyRelu", 0.1f}}), b)[0],
                 make({1, 2, 1, 2}, {2.5f, -0.1f, 1.5f, 9}));
    // HardSwish z * min(max(z + 3, 0), 6) / 6: 2.5 * 5.5/6, -1 * 2/6, 1.5 * 4.5/6, 9.
    expect_close(run_op("_FusedConv2D", {x, w, bias}, fused_conv_attrs({{"HardSwish"}}), b)[0],
                 make({1, 2, 1, 2}, {2.5f * 5.5f / 6, -1.0f / 3, 1.5f * 4.5f / 6, 9}), 1e-5, 1e-4);
  }
}

TEST_CASE("_FusedConv2D equals the unfused ops it replaces") {
  uint64_t seed = 1;
  for (const FusedConvCase& k : fused_conv_cases()) {
    const std::vector<Tensor> inputs = k.inputs(seed);
    INFO("x " << k.x.to_string() << " depthwise " << k.depthwise << " stride " << k.stride << " " << k.padding);
    const Tensor side = inputs.size() > 3 ? inputs[3] : Tensor();
    Tensor want = unfused_conv(inputs[0], inputs[1], inputs[2], side, k.post_ops, k.depthwise, k.stride, k.padding);
    expect_close(run_op("_FusedConv2D", inputs, k.attrs())[0], want, 1e-5, 1e-5);
    expect_close(run_op("_FusedConv2D", inputs, k.attrs(), "onednn")[0], want, 1e-4, 1e-4);
    compare_with_onednn("_FusedConv2D", inputs, k.attrs());
  }
}

TEST_CASE("_FusedConv2D: every post-op and blocked layouts, oneDNN against the reference") {
  const std::vector<std::vector<ops::PostOp>> chains = {{},
                                                        {{"Relu"}},
                                                        {{"LeakyRelu", 0.2f}},
                                                        {{"Relu6"}},
                                                        {{"Clip", -0.3f, 0.4f}},
                                                        {{"Elu", 0.7f}},
                                                        {{"Sigmoid"}},
                                                        {{"Tanh"}},
                                                        {{"HardSwish"}},
                                                        {{"Add"}, {"Relu"}}};
  uint64_t seed = 100;
  for (const auto& chain : chains) {
    const bool add = !chain.empty() && chain[0].op == "Add";
    INFO("post-ops " << (chain.empty() ? "none" : chain.back().op));
    // Odd channel counts and a size-1 batch.
    Tensor x = random_tensor({1, 5, 7, 11}, seed++, -2, 2);
    Tensor w = random_tensor({3, 3, 11, 13}, seed++);
    Tensor bias = random_tensor({13}, seed++);
    Tensor side = random_tensor({1, 5, 7, 13}, seed++);
    std::vector<Tensor> in{x, w, bias};
    if (add) in.push_back(side);
    compare_with_onednn("_FusedConv2D", in, fused_conv_attrs(chain));
  }
  // Blocked input and output (8 and 16) with a residual Add in the output's
  // layout. Block 8 with 11 -> 13 channels leaves partly filled last blocks;
  // oneDNN's nChw16c convolutions want whole blocks of input channels.
  for (int64_t block : {8, 16}) {
    const int64_t c = block == 8 ? 11 : 16, o = block == 8 ? 13 : 24;
    Tensor x = random_tensor({2, 6, 6, c}, seed++);
    Tensor w = random_tensor({3, 3, c, o}, seed++);
    Tensor dw = random_tensor({3, 3, c, 1}, seed++);
    Tensor bias = random_tensor({o}, seed++), dbias = random_tensor({c}, seed++);
    Tensor side = random_tensor({2, 6, 6, o}, seed++);
    Tensor want = run_op("_FusedConv2D", {x, w, bias, side}, fused_conv_attrs({{"Add"}, {"Relu"}}))[0];
    Attrs a = fused_conv_attrs({{"Add"}, {"Relu"}});
    a.set("src_block", block).set("dst_block", block);
    Attrs d = fused_conv_attrs({{"Relu6"}}, true);
    d.set("src_block", block).set("dst_block", block);
    for (const char* b : kBackends) {
      INFO("block " << block << " on " << b);
      Tensor y = run_op("_FusedConv2D", {blocked(x, block), w, bias, blocked(side, block)}, a, b)[0];
      CHECK(y.shape() == Shape{2, (o + block - 1) / block, 6, 6, block});
      expect_close(unblocked(y, o), want, 1e-4, 1e-4);
      // The padding channels of a blocked output stay zero.
      expect_close(y, blocked(want, block), 1e-4, 1e-4);
      expect_close(unblocked(run_op("_FusedConv2D", {blocked(x, block), dw, dbias}, d, b)[0], c),
                   run_op("_FusedConv2D", {x, dw, dbias}, fused_conv_attrs({{"Relu6"}}, true))[0], 1e-4, 1e-4);
      // Mixed layouts (NHWC in, blocked out and back): correct on every
      // backend (oneDNN 2.6 may decline them; they then run on the reference).
      Attrs to_b = fused_conv_attrs({{"Add"}, {"Relu"}});
      to_b.set("dst_block", block);
      expect_close(unblocked(run_op("_FusedConv2D", {x, w, bias, blocked(side, block)}, to_b, b)[0], o), want, 1e-4,
                   1e-4);
      Attrs from_b = fused_conv_attrs({{"Add"}, {"Relu"}});
      from_b.set("src_block", block);
      expect_close(run_op("_FusedConv2D", {blocked(x, block), w, bias, side}, from_b, b)[0], want, 1e-4, 1e-4);
    }
    compare_with_onednn("_FusedConv2D", {blocked(x, block), w, bias, blocked(side, block)}, a);
    compare_with_onednn("_FusedConv2D", {blocked(x, block), dw, dbias}, d);
  }
}

TEST_CASE("_FusedMatMul: hand-computed, unfused equivalence, backends") {
  // a [2,3], b [3,2]: a*b = [[1*1+2*0+3*1, 1*2+2*1+3*0], [0+0+(-1), 0+1*1+0]] = [[4, 4], [-1, 1]]
  Tensor a = make({2, 3}, {1, 2, 3, 0, 1, -1});
  Tensor b = make({3, 2}, {1, 2, 0, 1, 1, 0});
  Tensor bias = make({2}, {1, -2});
  Tensor side = make({2, 2}, {0.5f, 0.5f, 0.5f, 0.5f});
  Attrs attrs;
  ops::set_post_ops(attrs, {{"Add"}, {"Relu"}});
  // + bias = [[5, 2], [0, -1]]; + side = [[5.5, 2.5], [0.5, -0.5]]; Relu.
  for (const char* be : kBackends) {
    INFO(be);
    expect_close(run_op("_FusedMatMul", {a, b, bias, side}, attrs, be)[0], make({2, 2}, {5.5f, 2.5f, 0.5f, 0}));
  }
  // Transposed operands, odd sizes, each against the reference.
  Tensor at = random_tensor({7, 5}, 3), bt = random_tensor({9, 7}, 4), bias9 = random_tensor({9}, 5);
  Attrs t;
  t.set("transpose_a", true).set("transpose_b", true);
  ops::set_post_ops(t, {{"Sigmoid"}});
  Tensor want = run_op(
      "Sigmoid",
      {run_op("BiasAdd", {run_op("MatMul", {at, bt}, Attrs().set("transpose_a", true).set("transpose_b", true))[0],
                          bias9})[0]})[0];
  expect_close(run_op("_FusedMatMul", {at, bt, bias9}, t)[0], want, 1e-6, 1e-5);
  compare_backends("_FusedMatMul", {at, bt, bias9}, t, "onednn");
}

TEST_CASE("_Relayout: element positions and zero padding") {
  // x [1,1,2,3]: pixels (0,0) = (1,2,3), (0,1) = (4,5,6); block 8 ->
  // [1, 1, 1, 2, 8] = [1,2,3,0,0,0,0,0, 4,5,6,0,0,0,0,0].
  Tensor x = make({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  for (const char* b : kBackends) {
    INFO(b);
    Tensor y = run_op("_Relayout", {x}, Attrs().set("from_block", 0).set("to_block", 8).set("channels", 3), b)[0];
    expect_close(y, make({1, 1, 1, 2, 8}, {1, 2, 3, 0, 0, 0, 0, 0, 4, 5, 6, 0, 0, 0, 0, 0}));
    expect_close(run_op("_Relayout", {y}, Attrs().set("from_block", 8).set("to_block", 0).set("channels", 3), b)[0], x);
  }
  // 17 channels in blocks of 16: two blocks, element (n,c,h,w) at [n][c/16][h][w][c%16].
  Tensor big = random_tensor({2, 3, 4, 17}, 9);
  Tensor y = blocked(big, 16);
  REQUIRE(y.shape() == Shape{2, 2, 3, 4, 16});
  CHECK(y.data<float>()[((((1 * 2 + 1) * 3 + 2) * 4 + 3) * 16) + 0] ==
        big.data<float>()[((1 * 3 + 2) * 4 + 3) * 17 + 16]);
  compare_backends("_Relayout", {big}, Attrs().set("from_block", 0).set("to_block", 16).set("channels", 17), "onednn");
  compare_backends("_Relayout", {y}, Attrs().set("from_block", 16).set("to_block", 0).set("channels", 17), "onednn");
}

TEST_CASE("fused ops: bad attributes and inputs are rejected naming the node") {
  Tensor x = random_tensor({1, 4, 4, 3}, 1), w = random_tensor({3, 3, 3, 2}, 2), bias = random_tensor({2}, 3);
  Tensor side = random_tensor({1, 4, 4, 2}, 4);
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedConv2D", {x, w, bias}, fused_conv_attrs({{"Swish"}}));
      },
      "unknown post-op 'Swish'");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedConv2D", {x, w, bias}, fused_conv_attrs({{"Add"}}));
      },
      "needs a side input");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedConv2D", {x, w, bias, side}, fused_conv_attrs({}));
      },
      "needs an \"Add\" post-op");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedConv2D", {x, w, bias, random_tensor({1, 4, 4, 3}, 5)}, fused_conv_attrs({{"Add"}}));
      },
      "differs from the output");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedConv2D", {x, w, random_tensor({3}, 6)}, fused_conv_attrs({}));
      },
      "must have 2 entries");
  Attrs args = fused_conv_attrs({{"Relu"}});
  args.set("post_op_args", std::vector<double>{1});
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedConv2D", {x, w, bias}, args);
      },
      "2 per post-op");
  Attrs block = fused_conv_attrs({});
  block.set("dst_block", int64_t{4});
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedConv2D", {x, w, bias}, block);
      },
      "must be 0, 8 or 16");
  expect_error(
      Code::kInvalidArgument,
      [&] { run_op("_Relayout", {x}, Attrs().set("from_block", 0).set("to_block", 8).set("channels", 5)); },
      "does not have 5 channels");
}

namespace {

// Where the onednn backend runs quantized matmuls: oneDNN where its int8
// sums are exact (VNNI), else the reference kernel. Quantized convolutions
// run on oneDNN everywhere (on split weights without VNNI;
// hub/ops/onednn/fused.cc).
const std::string kInt8MatMulBackend = onednn::int8_exact() ? "onednn" : "reference";

// Uniformly random 8-bit values of `dtype`, deterministic for the seed.
Tensor random_q(DType dtype, const Shape& shape, uint64_t seed) {
  Tensor r =
      random_tensor(shape, seed, dtype == DType::kUInt8 ? 0.0f : -127.0f, dtype == DType::kUInt8 ? 255.0f : 127.0f);
  std::vector<int> v;
  for (int64_t i = 0; i < r.num_elements(); ++i) v.push_back(static_cast<int>(std::floor(r.data<float>()[i])));
  return dtype == DType::kUInt8 ? u8(shape, v) : s8(shape, v);
}

// Quantized outputs of two backends: at most one step apart (the reference
// rounds float sums of the dequantized operands, oneDNN scales exact int32
// sums), and equal almost everywhere.
void expect_quantized_close(const Tensor& got, const Tensor& want) {
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  const std::vector<int> g = ints_of(got), w = ints_of(want);
  size_t differ = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i);
    CHECK(std::abs(g[i] - w[i]) <= 1);
    differ += g[i] != w[i];
  }
  CHECK(differ * 100 <= g.size());
}

Attrs quantized(Attrs a, float src_scale, int src_zp, std::vector<float> filter_scales, float dst_scale = 0,
                int dst_zp = 0, DType dst_type = DType::kFloat32) {
  ops::FusedQuantization q;
  q.src_scale = src_scale;
  q.src_zero_point = src_zp;
  q.filter_scales = std::move(filter_scales);
  q.dst_scale = dst_scale;
  q.dst_zero_point = dst_zp;
  q.dst_type = dst_type;
  ops::set_quantization(a, q);
  return a;
}

}  // namespace

TEST_CASE("_FusedConv2D quantized: hand-computed 1x1 convolution, per-channel scales, Relu, uint8 out") {
  // x: two pixels of two channels, scale 0.5, zero point 10: real (1, -1) and (0, 2).
  Tensor x = u8({1, 1, 2, 2}, {12, 8, 10, 14});
  // w [1,1,2,2] with per-output-channel scales (0.25, 1): real w[c0] = (0.5, -1), w[c1] = (1, 3).
  Tensor w = s8({1, 1, 2, 2}, {2, -1, 4, 3});
  Tensor bias = make({2}, {0.25f, 1.0f});
  // z = pixel0: (1*0.5 - 1*1, 1*-1 - 1*3) + bias = (-0.25, -3); pixel1: (2*1, 2*3) + bias = (2.25, 7).
  // Relu: (0, 0), (2.25, 7); uint8 with scale 0.25, zero point 3: (3, 3), (12, 31).
  const Attrs relu = fused_conv_attrs({{"Relu"}});
  for (const char* be : kBackends) {
    INFO(be);
    Tensor y =
        run_op("_FusedConv2D", {x, w, bias}, quantized(relu, 0.5f, 10, {0.25f, 1.0f}, 0.25f, 3, DType::kUInt8), be)[0];
    CHECK(y.dtype() == DType::kUInt8);
    CHECK(ints_of(y) == std::vector<int>{3, 3, 12, 31});
    // Float output: z itself.
    expect_close(run_op("_FusedConv2D", {x, w, bias}, quantized(relu, 0.5f, 10, {0.25f, 1.0f}), be)[0],
                 make({1, 1, 2, 2}, {0, 0, 2.25f, 7}));
    // int8 output with a negative zero point, no activation: round(z / 0.25) - 5 = (-6, -17), (4, 23).
    Tensor s = run_op("_FusedConv2D", {x, w, bias},
                      quantized(fused_conv_attrs({}), 0.5f, 10, {0.25f, 1.0f}, 0.25f, -5, DType::kInt8), be)[0];
    CHECK(ints_of(s) == std::vector<int>{-6, -17, 4, 23});
  }
  CHECK(backend_used("_FusedConv2D", {x, w, bias}, quantized(relu, 0.5f, 10, {0.25f, 1.0f}, 0.25f, 3, DType::kUInt8),
                     "onednn") == "onednn");
}

TEST_CASE("_FusedConv2D quantized: sums past int16 are exact (split weights without VNNI)") {
  // 1x1 convolution over 8 channels of 255 with weights of 127 and -128: the
  // sums 8 * 255 * 127 = 259080 and -8 * 255 * 128 = -261120 are far past
  // int16, and every pair of products (64770, -65280) is past it too: a
  // kernel that adds pairs into int16 with saturation gets them wrong.
  const int64_t c = 8;
  Tensor x = u8({1, 1, 1, c}, std::vector<int>(c, 255));
  std::vector<int> wv;
  for (int64_t i = 0; i < c; ++i) wv.insert(wv.end(), {127, -128, i % 2 ? 127 : -128});
  Tensor w = s8({1, 1, c, 3}, wv);
  // Channel 2: four of 127 and four of -128: 255 * 4 * (127 - 128) = -1020.
  Tensor bias = make({3}, {0, 0, 0});
  for (const char* be : kBackends) {
    INFO(be);
    expect_close(run_op("_FusedConv2D", {x, w, bias}, quantized(fused_conv_attrs({}), 1.0f, 0, {1.0f}), be)[0],
                 make({1, 1, 1, 3}, {259080, -261120, -1020}));
    // With a zero point of 255 on the input the same sums are all zero; a
    // zero point of 0 on an s8 input of 127s: 8 * 127 * 127 = 129032.
    expect_close(run_op("_FusedConv2D", {x, w, bias}, quantized(fused_conv_attrs({}), 1.0f, 255, {1.0f}), be)[0],
                 make({1, 1, 1, 3}, {0, 0, 0}));
    Tensor xs = s8({1, 1, 1, c}, std::vector<int>(c, 127));
    expect_close(run_op("_FusedConv2D", {xs, w, bias}, quantized(fused_conv_attrs({}), 1.0f, 0, {1.0f}), be)[0],
                 make({1, 1, 1, 3}, {129032, -130048, -508}));
  }
  CHECK(backend_used("_FusedConv2D", {x, w, bias}, quantized(fused_conv_attrs({}), 1.0f, 0, {1.0f}), "onednn") ==
        "onednn");
  // Depthwise 3x3 over 255s (VALID, one output pixel) with 127s and -128s:
  // 9 * 255 * 127 = 291465, 9 * 255 * -128 = -293760.
  Tensor xd = u8({1, 3, 3, 2}, std::vector<int>(18, 255));
  std::vector<int> wd;
  for (int tap = 0; tap < 9; ++tap) wd.insert(wd.end(), {127, -128});
  const Attrs dw = quantized(fused_conv_attrs({}, true, 1, "VALID"), 1.0f, 0, {1.0f});
  for (const char* be : kBackends) {
    INFO(be);
    expect_close(run_op("_FusedConv2D", {xd, s8({3, 3, 2, 1}, wd), make({2}, {0, 0})}, dw, be)[0],
                 make({1, 1, 1, 2}, {291465, -293760}));
  }
  CHECK(backend_used("_FusedConv2D", {xd, s8({3, 3, 2, 1}, wd), make({2}, {0, 0})}, dw, "onednn") == "onednn");
}

TEST_CASE("_FusedConv2D quantized: oneDNN's int8 primitives against the reference") {
  uint64_t seed = 700;
  struct Case {
    DType src;
    int src_zp;
    bool per_channel, depthwise;
    int64_t stride;
    std::vector<ops::PostOp> post_ops;
    DType dst;
    int dst_zp;
  };
  const std::vector<Case> cases = {
      {DType::kUInt8, 0, true, false, 1, {{"Relu6"}}, DType::kUInt8, 0},
      {DType::kUInt8, 128, false, false, 2, {}, DType::kInt8, -3},
      {DType::kInt8, 0, true, false, 1, {{"Relu"}}, DType::kUInt8, 7},
      {DType::kUInt8, 0, true, true, 1, {{"Relu6"}}, DType::kUInt8, 0},
      {DType::kUInt8, 5, false, true, 2, {{"Clip", -1.0f, 2.0f}}, DType::kUInt8, 100},
      {DType::kUInt8, 0, true, false, 1, {{"Sigmoid"}}, DType::kFloat32, 0},
  };
  for (const Case& k : cases) {
    INFO("case " << (&k - cases.data()));
    const int64_t c = 11, o = k.depthwise ? 11 : 13;
    Tensor x = random_q(k.src, {2, 7, 5, c}, seed++);
    Tensor w = random_q(DType::kInt8, {3, 3, c, k.depthwise ? 1 : o}, seed++);
    Tensor bias = random_tensor({o}, seed++);
    std::vector<float> scales;
    for (int64_t i = 0; i < (k.per_channel ? o : 1); ++i) scales.push_back(0.001f * static_cast<float>(1 + i % 5));
    Attrs a = quantized(fused_conv_attrs(k.post_ops, k.depthwise, k.stride), 0.02f, k.src_zp, scales,
                        k.dst == DType::kFloat32 ? 0.0f : 0.03f, k.dst_zp, k.dst);
    REQUIRE(backend_used("_FusedConv2D", {x, w, bias}, a, "onednn") == "onednn");
    Tensor want = run_op("_FusedConv2D", {x, w, bias}, a)[0],
           got = run_op("_FusedConv2D", {x, w, bias}, a, "onednn")[0];
    if (k.dst == DType::kFloat32)
      expect_close(got, want, 1e-5, 1e-4);
    else
      expect_quantized_close(got, want);
  }
}

TEST_CASE("_FusedMatMul quantized: hand-computed, transpose_b, oneDNN against the reference") {
  // a [1,2] uint8 scale 0.5 zero point 0: real (1, 2). b [2,2] int8 per-tensor scale 0.5: real [[1, -1], [0.5, 2]].
  // a*b = (1 + 1, -1 + 4) = (2, 3); + bias (0, -1) = (2, 2); float out.
  Tensor a = u8({1, 2}, {2, 4}), b = s8({2, 2}, {2, -2, 1, 4});
  for (const char* be : kBackends)
    expect_close(run_op("_FusedMatMul", {a, b, make({2}, {0, -1})}, quantized(Attrs(), 0.5f, 0, {0.5f}), be)[0],
                 make({1, 2}, {2, 2}));
  Tensor x = random_q(DType::kUInt8, {9, 37}, 900), wt = random_q(DType::kInt8, {21, 37}, 901);
  Tensor bias = random_tensor({21}, 902);
  std::vector<float> scales;
  for (int i = 0; i < 21; ++i) scales.push_back(0.0005f * static_cast<float>(1 + i % 3));
  Attrs t;
  t.set("transpose_b", true);
  ops::set_post_ops(t, {{"Relu"}});
  Attrs q = quantized(t, 0.01f, 3, scales, 0.02f, 0, DType::kUInt8);
  REQUIRE(backend_used("_FusedMatMul", {x, wt, bias}, q, "onednn") == kInt8MatMulBackend);
  expect_quantized_close(run_op("_FusedMatMul", {x, wt, bias}, q, "onednn")[0],
                         run_op("_FusedMatMul", {x, wt, bias}, q)[0]);
}

TEST_CASE("fused ops quantized: inconsistent dtypes, scales and zero points are rejected") {
  Tensor x = u8({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), w = s8({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor bias = make({2}, {0, 0});
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedConv2D", {x, w, bias}, fused_conv_attrs({}));
      },
      "float32");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedConv2D", {x, w, bias}, quantized(fused_conv_attrs({}), 0.1f, 0, {1, 2, 3}));
      },
      "filter_scales has 3 entries");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedConv2D", {x, w, bias}, quantized(fused_conv_attrs({}), 0.1f, 300, {1.0f}));
      },
      "src_zero_point 300 is outside uint8");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedConv2D", {x, w, bias}, quantized(fused_conv_attrs({}), 0.1f, 0, {1.0f}, 0.5f, 0, DType::kInt32));
      },
      "dst_type must be uint8 or int8");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("_FusedConv2D", {x, make({1, 1, 2, 2}, {1, 1, 1, 1}), bias},
               quantized(fused_conv_attrs({}), 0.1f, 0, {1.0f}));
      },
      "int8");
}

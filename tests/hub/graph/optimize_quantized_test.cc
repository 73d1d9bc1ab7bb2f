// The inference optimiser on quantized (QDQ) graphs: QuantizeLinear /
// DequantizeLinear around convolutions and a dense layer become the fused
// ops' quantized form running on 8-bit tensors (oneDNN's int8 primitives),
// and the result stays within a quantization step of the graph it came from.
#include <doctest/doctest.h>

#include <cmath>

#include "hub/graph/optimize/optimize.h"
#include "hub/graph/session.h"
#include "hub/ops/activation.h"
#include "hub/ops/array.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/fused.h"
#include "hub/ops/matmul.h"
#include "hub/ops/onednn/common.h"
#include "hub/ops/quantize.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

// Symmetric int8 weights of w per output channel (the last dim, or dim 2 of
// a depthwise filter with multiplier 1), as DequantizeLinear(int8, scales, 0).
Output quantized_weights(const Scope& s, const Tensor& w, int axis, const std::string& name) {
  const int64_t channels = w.dim(axis);
  std::vector<float> scale(static_cast<size_t>(channels), 0.0f);
  for (int64_t i = 0; i < w.num_elements(); ++i) {
    float& m = scale[static_cast<size_t>(i % channels)];
    m = std::max(m, std::fabs(w.data<float>()[i]) / 127.0f);
  }
  Tensor q(DType::kInt8, w.shape());
  for (int64_t i = 0; i < w.num_elements(); ++i)
    q.data<int8_t>()[i] = static_cast<int8_t>(std::rint(w.data<float>()[i] / scale[static_cast<size_t>(i % channels)]));
  Tensor scales(DType::kFloat32, Shape{channels});
  std::copy(scale.begin(), scale.end(), scales.data<float>());
  return ops::dequantize_linear(s, ops::constant(s, q, name + "/q"), ops::constant(s, scales, name + "/scale"),
                                ops::constant(s, Tensor::zeros(DType::kInt8, Shape{channels}), name + "/zp"), axis,
                                name + "/dq");
}

// QuantizeLinear then DequantizeLinear of x (uint8, per tensor).
Output qdq(const Scope& s, Output x, float scale, int zero_point, const std::string& name) {
  Output sc = ops::constant(s, Tensor::scalar<float>(scale), name + "/scale");
  Output zp = ops::constant(s, Tensor::scalar<uint8_t>(static_cast<uint8_t>(zero_point)), name + "/zp");
  return ops::dequantize_linear(s, ops::quantize_linear(s, x, sc, zp, 1, name + "/q"), sc, zp, 1, name + "/dq");
}

int count_quantized(const Graph& g, bool quantized_output) {
  int n = 0;
  for (const Node& node : g.nodes())
    if ((node.op == "_FusedConv2D" || node.op == "_FusedMatMul")) {
      const ops::FusedQuantization q = ops::quantization_of(node.attrs);
      n += q.quantized() && q.quantized_output() == quantized_output;
    }
  return n;
}

}  // namespace

TEST_CASE("QDQ graphs optimise to int8 fused ops that agree with the graph within a quantization step") {
  // x [2,8,8,3] in [-1, 1) -> Q/DQ -> conv 3x3 (8) + bias + Relu6 -> Q/DQ -> depthwise 3x3 + bias + Relu
  // -> Q/DQ -> 1x1 conv (6) + bias -> reshape -> Q/DQ -> dense (5), float logits.
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, Shape{2, 8, 8, 3}, "x");
  Output h = qdq(s, x, 2.0f / 255, 128, "in");
  h = ops::conv2d(s, h, quantized_weights(s, random_tensor({3, 3, 3, 8}, 1, -0.5f, 0.5f), 3, "c1"), {{1, 1}, "SAME"});
  h = ops::relu6(s, ops::bias_add(s, h, ops::constant(s, random_tensor({8}, 2, -0.2f, 0.2f), "b1")));
  h = qdq(s, h, 6.0f / 255, 0, "a1");
  h = ops::depthwise_conv2d(s, h, quantized_weights(s, random_tensor({3, 3, 8, 1}, 3, -0.5f, 0.5f), 2, "c2"),
                            {{2, 2}, "SAME"});
  h = ops::relu(s, ops::bias_add(s, h, ops::constant(s, random_tensor({8}, 4, -0.2f, 0.2f), "b2")));
  h = qdq(s, h, 4.0f / 255, 0, "a2");
  h = ops::conv2d(s, h, quantized_weights(s, random_tensor({1, 1, 8, 6}, 5, -0.5f, 0.5f), 3, "c3"));
  h = ops::bias_add(s, h, ops::constant(s, random_tensor({6}, 6, -0.2f, 0.2f), "b3"));
  h = qdq(s, ops::reshape(s, h, {2, 4 * 4 * 6}), 8.0f / 255, 128, "a3");
  Output logits = ops::matmul(s, h, quantized_weights(s, random_tensor({96, 5}, 7, -0.3f, 0.3f), 1, "fc"));

  OptimizedGraph opt = optimize_for_inference(g, VariableStore(), {x, logits});
  // Two convolutions requantize into the next one's 8-bit input; the third (a Reshape sits
  // before its QuantizeLinear, which runs on its own) and the dense layer end in float.
  CHECK(count_quantized(opt.graph(), true) == 2);
  CHECK(count_quantized(opt.graph(), false) == 2);
  int dequantize = 0;
  for (const Node& n : opt.graph().nodes()) dequantize += n.op == "DequantizeLinear";
  CHECK(dequantize == 0);  // 8-bit tensors flow straight between the int8 primitives

  const Tensor input = random_tensor({2, 8, 8, 3}, 9);
  Session plain(g, nullptr, {&find_backend("reference")});
  const Tensor want = plain.run_one({{x, input}}, logits);
  for (const char* backend : {"reference", "onednn"}) {
    INFO(backend);
    Session session(opt.graph(), nullptr, {&find_backend(backend)});
    const Tensor got = session.run_one({{opt.tensor(x), input}}, opt.tensor(logits));
    // Rounding differences flip an 8-bit value by one step now and then; the
    // logits then move by about one step of a3 times a dense weight.
    expect_close(got, want, 0.05, 0.0);
    if (std::string(backend) == "onednn") {
      // oneDNN's int8 primitives: convolutions everywhere (on split weights
      // without VNNI), matmuls where their sums are exact (VNNI), else the
      // reference kernel (hub/ops/onednn/fused.cc).
      const auto kernels = session.last_kernels();
      for (const Node& n : opt.graph().nodes()) {
        const bool onednn_here = n.op == "_FusedConv2D" || onednn::int8_exact();
        if (n.op == "_FusedConv2D" || n.op == "_FusedMatMul")
          CHECK_MESSAGE(kernels.at(n.name) == (onednn_here ? "onednn" : "reference"),
                        n.name << " ran on " << kernels.at(n.name));
      }
    }
  }
}

TEST_CASE("QDQ patterns the int8 ops do not take stay float and exact") {
  // A per-channel zero point on the filter, and an activation dequantized per channel: both stay
  // float ops (the int8 weights folded once into a float filter).
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, Shape{1, 4, 4, 2}, "x");
  Tensor wq(DType::kInt8, Shape{1, 1, 2, 3});
  for (int i = 0; i < 6; ++i) wq.data<int8_t>()[i] = static_cast<int8_t>(i * 7 - 20);
  Tensor zp(DType::kInt8, Shape{3});
  zp.data<int8_t>()[0] = 1;
  zp.data<int8_t>()[1] = zp.data<int8_t>()[2] = 0;
  Output w =
      ops::dequantize_linear(s, ops::constant(s, wq, "wq"), ops::constant(s, make({3}, {0.1f, 0.2f, 0.3f}), "ws"),
                             ops::constant(s, zp, "wzp"), 3);
  Output y = ops::conv2d(s, qdq(s, x, 0.01f, 100, "in"), w);
  OptimizedGraph opt = optimize_for_inference(g, VariableStore(), {x, y});
  CHECK(count_quantized(opt.graph(), true) + count_quantized(opt.graph(), false) == 0);
  const Tensor input = random_tensor({1, 4, 4, 2}, 3);
  Session plain(g, nullptr, {&find_backend("reference")});
  Session fast(opt.graph(), nullptr, {&find_backend("onednn")});
  expect_close(fast.run_one({{opt.tensor(x), input}}, opt.tensor(y)), plain.run_one({{x, input}}, y), 1e-5, 1e-5);
}

TEST_CASE("a dequantized activation into float weights, behind a layout change, stays a float convolution") {
  // x (NCHW) -> Q/DQ -> Transpose to NHWC -> conv with float weights: the DequantizeLinear moves
  // below the Transpose (8-bit data moves), and the convolution, whose weights are not int8, stays
  // float (it took the 8-bit input with float weights before, which the fused op refuses).
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, Shape{2, 3, 5, 5}, "x");
  Output h = ops::transpose(s, qdq(s, x, 2.0f / 255, 128, "in"), {0, 2, 3, 1}, "to_nhwc");
  Output y = ops::conv2d(s, h, ops::constant(s, random_tensor({3, 3, 3, 4}, 11, -0.5f, 0.5f), "w"), {{1, 1}, "SAME"});
  Output z = ops::conv2d(s, ops::transpose(s, qdq(s, x, 2.0f / 255, 128, "in2"), {0, 2, 3, 1}, "to_nhwc2"),
                         quantized_weights(s, random_tensor({3, 3, 3, 4}, 12, -0.5f, 0.5f), 3, "q"), {{1, 1}, "SAME"});
  OptimizedGraph opt = optimize_for_inference(g, VariableStore(), {x, y, z});
  CHECK(count_quantized(opt.graph(), false) == 1);  // z's, now that its DequantizeLinear is next to it
  const Tensor input = random_tensor({2, 3, 5, 5}, 13);
  Session plain(g, nullptr, {&find_backend("reference")});
  const std::vector<Tensor> want = plain.run({{x, input}}, {y, z});
  for (const char* backend : {"reference", "onednn"}) {
    INFO(backend);
    Session session(opt.graph(), nullptr, {&find_backend(backend)});
    const std::vector<Tensor> got = session.run({{opt.tensor(x), input}}, {opt.tensor(y), opt.tensor(z)});
    expect_close(got[0], want[0], 1e-4, 1e-4);
    expect_close(got[1], want[1], 2e-2, 0);  // int8 sums, float rescale: within rounding of a step
  }
}

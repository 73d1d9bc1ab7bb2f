// Convolution cases shared by the backend comparisons of the Conv2D family
// (oneDNN in conv2d_test.cc and fused_test.cc, CUDA in cuda/conv2d_test.cc):
// attribute helpers and the awkward shapes every fast kernel must match the
// reference on.
#pragma once

#include <string>
#include <vector>

#include "hub/ops/conv2d.h"
#include "hub/ops/fused.h"
#include "testutil.h"

namespace hub::testing {

inline Attrs conv_attrs(const std::string& padding, std::vector<int64_t> strides = {1, 1},
                        std::vector<int64_t> dilations = {1, 1}) {
  return ops::ConvOptions{strides, padding, dilations}.to_attrs();
}

// padding "EXPLICIT" with pads [top, bottom, left, right].
inline Attrs explicit_attrs(std::vector<int64_t> pads, std::vector<int64_t> strides = {1, 1},
                            std::vector<int64_t> dilations = {1, 1}) {
  return ops::ConvOptions{strides, "EXPLICIT", dilations, pads}.to_attrs();
}

struct ConvCase {
  bool depthwise;
  Shape x, w;
  Attrs attrs;

  std::string forward() const { return depthwise ? "DepthwiseConv2dNative" : "Conv2D"; }
  // x, w and an output gradient dy (of the reference forward's shape),
  // seeded from `seed` on.
  std::vector<Tensor> inputs(int& seed) const {
    Tensor xt = random_tensor(x, ++seed), wt = random_tensor(w, ++seed);
    const Tensor y = run_op(forward(), {xt, wt}, attrs)[0];
    return {xt, wt, random_tensor(y.shape(), ++seed)};
  }
};

// Batch 1 and 2, strides above and below the window, asymmetric SAME
// padding, dilation, one input channel, 1x1 windows, EXPLICIT pads larger
// than the window, grouped convolutions (G = 2, G = C/2 odd, G = C) and
// depthwise multipliers 1 and 2.
inline std::vector<ConvCase> awkward_conv_cases() {
  return {
      {false, {1, 7, 7, 3}, {3, 3, 3, 5}, conv_attrs("SAME", {2, 2})},            // batch 1, stride 2, odd input
      {false, {2, 9, 8, 5}, {5, 5, 5, 4}, conv_attrs("SAME")},                    // 5x5, odd channels
      {false, {3, 6, 6, 7}, {1, 1, 7, 3}, conv_attrs("SAME")},                    // 1x1
      {false, {2, 7, 5, 3}, {1, 1, 3, 6}, conv_attrs("VALID", {2, 2})},           // 1x1 stride 2, odd input
      {false, {1, 10, 9, 3}, {3, 3, 3, 4}, conv_attrs("VALID", {1, 1}, {2, 2})},  // dilation
      {false, {2, 11, 11, 1}, {5, 5, 1, 32}, conv_attrs("SAME", {2, 2})},         // one input channel
      {false, {1, 5, 6, 2}, {2, 4, 2, 3}, conv_attrs("SAME", {3, 2}, {2, 1})},    // stride > kernel, asym.
      // >= 8 input channels: oneDNN's backward-data path (fewer go to reference)
      {false, {1, 7, 7, 9}, {3, 3, 9, 5}, conv_attrs("SAME", {2, 2})},
      {false, {2, 5, 6, 16}, {1, 1, 16, 3}, conv_attrs("SAME")},
      {false, {1, 9, 8, 8}, {3, 2, 8, 4}, conv_attrs("VALID", {2, 1}, {2, 2})},
      {false, {1, 5, 5, 8}, {5, 5, 8, 2}, conv_attrs("SAME", {3, 3})},
      {true, {1, 7, 7, 3}, {3, 3, 3, 2}, conv_attrs("SAME", {2, 2})},  // multiplier 2
      {true, {2, 8, 9, 5}, {3, 3, 5, 1}, conv_attrs("SAME")},
      {true, {1, 9, 9, 4}, {5, 5, 4, 1}, conv_attrs("VALID", {2, 2})},
      {true, {2, 6, 7, 3}, {3, 3, 3, 2}, conv_attrs("SAME", {1, 1}, {2, 2})},
      {true, {1, 4, 4, 3}, {1, 1, 3, 3}, conv_attrs("SAME")},
      // EXPLICIT: asymmetric, larger than the window, with strides and dilation
      {false, {1, 7, 6, 3}, {3, 3, 3, 4}, explicit_attrs({2, 0, 1, 3}, {2, 1})},
      {false, {2, 5, 5, 8}, {2, 2, 8, 3}, explicit_attrs({3, 1, 0, 4}, {1, 2})},
      {false, {1, 9, 8, 9}, {3, 2, 9, 2}, explicit_attrs({1, 2, 2, 1}, {2, 2}, {2, 2})},
      {true, {1, 6, 7, 3}, {3, 3, 3, 2}, explicit_attrs({0, 2, 1, 1}, {2, 2})},
      // grouped: G = 2, G = C/2 (odd), G = C, and 8 channels per group (oneDNN backward data)
      {false, {2, 6, 5, 4}, {3, 3, 2, 6}, conv_attrs("SAME", {2, 1})},
      {false, {1, 7, 7, 6}, {3, 2, 2, 9}, explicit_attrs({1, 1, 0, 2})},
      {false, {1, 5, 6, 5}, {3, 3, 1, 10}, conv_attrs("VALID", {1, 1}, {1, 2})},
      {false, {1, 6, 6, 16}, {3, 3, 8, 6}, conv_attrs("SAME", {2, 2})},
      {false, {2, 5, 4, 24}, {1, 1, 8, 9}, conv_attrs("SAME")},
  };
}

// A _FusedConv2D's attributes: its post-ops, depthwise or not, square
// strides and padding.
inline Attrs fused_conv_attrs(const std::vector<ops::PostOp>& post_ops, bool depthwise = false, int64_t stride = 1,
                              const std::string& padding = "SAME") {
  Attrs a;
  a.set("depthwise", depthwise).set("strides", std::vector<int64_t>{stride, stride}).set("padding", padding);
  ops::set_post_ops(a, post_ops);
  return a;
}

// The _FusedConv2D cases the reference, oneDNN and CUDA kernels are
// compared on: post-op chains with and without a residual Add (first, last
// or between activations), depthwise, strides and both paddings.
struct FusedConvCase {
  Shape x;
  int64_t kernel, out;  // out: output channels (depthwise: multiplier)
  bool depthwise;
  int64_t stride;
  const char* padding;
  std::vector<ops::PostOp> post_ops;

  Attrs attrs() const { return fused_conv_attrs(post_ops, depthwise, stride, padding); }
  // x, w, bias and, with an Add post-op, the side input; seeds from `seed`.
  std::vector<Tensor> inputs(uint64_t& seed) const {
    const int64_t c = x[3], o = depthwise ? c * out : out;
    std::vector<Tensor> in{random_tensor(x, seed), random_tensor({kernel, kernel, c, out}, seed + 1),
                           random_tensor({o}, seed + 2)};
    seed += 3;
    for (const ops::PostOp& p : post_ops)
      if (p.op == "Add") {
        const Tensor probe = run_op(depthwise ? "DepthwiseConv2dNative" : "Conv2D", {in[0], in[1]},
                                    ops::ConvOptions{{stride, stride}, padding}.to_attrs())[0];
        in.push_back(random_tensor(probe.shape(), seed++));
      }
    return in;
  }
};

inline std::vector<FusedConvCase> fused_conv_cases() {
  return {
      {{2, 7, 5, 3}, 3, 5, false, 1, "SAME", {{"Relu"}}},
      {{1, 8, 8, 6}, 3, 4, false, 2, "SAME", {{"Add"}, {"Relu6"}}},
      {{3, 6, 7, 5}, 1, 9, false, 1, "VALID", {{"Add"}}},
      {{2, 9, 9, 7}, 3, 1, true, 2, "SAME", {{"Relu6"}}},
      {{1, 5, 6, 4}, 3, 2, true, 1, "VALID", {{"Add"}, {"Tanh"}}},
      {{2, 5, 6, 4}, 3, 6, false, 1, "VALID", {{"Sigmoid"}, {"Add"}, {"Tanh"}}},
      {{2, 4, 4, 3}, 2, 3, false, 1, "SAME", {{"Elu", 1.0f}}},
      {{1, 6, 6, 3}, 3, 4, false, 1, "SAME", {{"LeakyRelu", 0.1f}, {"Clip", -0.5f, 2}, {"HardSwish"}}},
      {{8, 28, 28, 32}, 1, 64, false, 1, "SAME", {{"Relu6"}}},
  };
}

}  // namespace hub::testing

// A small MobileNet-like image module and calibration images for the
// quantization tests (tests/hub/module/quantize_test.cc, the ONNX Runtime
// check in tests/hub/interop/onnx_ort_test.cc).
#pragma once

#include <algorithm>
#include <functional>

#include "hub/module/quantize.h"
#include "hub/ops/activation.h"
#include "hub/ops/array.h"
#include "hub/ops/batch_norm.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/matmul.h"
#include "hub/ops/pool.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"
#include "testutil.h"

namespace hub::quantize_test {

inline Output weights(const Scope& s, const std::string& name, const Shape& shape, uint64_t seed, float scale) {
  return ops::constant(s, testing::random_tensor(shape, seed, -scale, scale), name);
}

// Batch norm with non-trivial statistics (folded into the filter first).
inline Output batch_norm(const Scope& s, Output x, int64_t c, uint64_t seed) {
  return ops::fused_batch_norm(
      s, x, weights(s, "gamma" + std::to_string(seed), {c}, seed, 1.0f),
      weights(s, "beta" + std::to_string(seed), {c}, seed + 1, 0.2f),
      weights(s, "mean" + std::to_string(seed), {c}, seed + 2, 0.1f),
      ops::constant(s, testing::random_tensor({c}, seed + 3, 0.5f, 1.5f), "var" + std::to_string(seed)), 0.001f,
      false)[0];
}

inline ModuleSpec small_net() {
  return create_module_spec([](ModuleBuilder& b) {
    Scope s = b.scope();
    Output x = ops::placeholder(s, DType::kFloat32, Shape{kUnknownDim, 16, 16, 3}, "images");
    // Variables, so the module has weights to write: the first filter and the dense layer.
    ops::VariableOptions glorot;
    glorot.initializer = "glorot_uniform";
    glorot.seed = 1;
    Output w1 = ops::variable(s, "conv1/weights", {3, 3, 3, 8}, glorot);
    Output h = ops::relu6(s, batch_norm(s, ops::conv2d(s, x, w1, {{2, 2}, "SAME"}), 8, 10));
    h = ops::relu(s, batch_norm(s, ops::depthwise_conv2d(s, h, weights(s, "dw", {3, 3, 8, 1}, 2, 0.6f)), 8, 20));
    h = ops::relu6(s, ops::conv2d(s, h, weights(s, "pw", {1, 1, 8, 16}, 3, 0.5f)));
    h = ops::reshape(s, ops::avg_pool(s, h, {1, 8, 8, 1}, {1, 1, 1, 1}, "VALID"), {-1, 16});
    glorot.seed = 4;
    Output fc = ops::variable(s, "logits/weights", {16, 5}, glorot);
    Output logits = ops::matmul(s, h, fc);
    b.add_signature("default", {{"images", x}}, {{"default", ops::softmax(s, logits)}, {"logits", logits}});
    b.set_image_info(16, 16, 3);
  });
}

// `count` deterministic images in [0, 1), batches of 8.
inline CalibrationData images(int count, uint64_t seed) {
  return [=](const std::function<void(const Tensor&)>& feed) {
    for (int i = 0; i < count; i += 8)
      feed(testing::random_tensor({std::min(8, count - i), 16, 16, 3}, seed + i, 0.0f, 1.0f));
  };
}

}  // namespace hub::quantize_test

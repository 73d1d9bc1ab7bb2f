// ONNX models -> hub modules (docs/import.md).
//
// The model is loaded by load_onnx_model() (hub/interop/onnx/model.h:
// checked, converted to opset 17, shapes inferred) and translated node by
// node into a hub graph:
//
//   - Contract: signature `default` has the ONNX graph's inputs and outputs
//     under their ONNX names, with their shapes and layout: an NCHW input
//     stays NCHW at the boundary, so running the module on the arrays ONNX
//     Runtime is given returns what it returns.
//   - Inside, the graph is hub's, NHWC: every 4-D tensor a spatial op
//     (convolution, pooling, batch norm, resize, LRN) touches is kept NHWC;
//     weights are transposed once at import; a layout change is inserted only
//     where an op needs the other order (at most one at an input edge, none
//     between consecutive spatial or element-wise ops), and is a free reshape
//     when it moves only size-1 dimensions.
//   - Constants are folded at import (Constant nodes, initializer arithmetic,
//     Shape/Gather/Unsqueeze/Concat chains), with hub's own reference
//     kernels; a Reshape whose shape is computed at run time takes its
//     output shape from ONNX's shape inference.
//   - Float initializers that feed weights (convolution, Gemm/MatMul,
//     batch-norm, PRelu) become module variables named after the ONNX
//     initializer (':' replaced by '_'), so they can be fine-tuned and are
//     written to variables.safetensors; batch-norm statistics are not
//     trainable. Other initializers become graph constants.
//
// Every unsupported operator, attribute value, dtype or dynamic shape is one
// hub::Error naming the model file, the node, its op type and the attribute.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hub/module/module.h"

namespace hub::onnx_interop {

struct OnnxImportOptions {
  // Image-module conventions (all optional; any of them adds the TF-Hub-style
  // signatures `image_feature_vector` and, when the model ends in a
  // classifier, `image_classification`): float32 NHWC images [N, H, W, 3] in
  // [0, 1] are scaled to `input_range` (default [0, 1]), normalised as
  // (x - mean) / std per channel, laid out as the ONNX input wants and fed to
  // the model's single image input.
  std::vector<int64_t> image_size;  // H, W (default: the input's static size)
  std::vector<double> mean;         // per channel (default 0)
  std::vector<double> std;          // per channel (default 1)
  std::vector<double> input_range;  // lo, hi (default 0, 1)
  bool image_signatures = false;    // add them with the defaults above
  // The tensor the feature vector is read from (an ONNX value name); default:
  // the input of the final classifier (the last Gemm/MatMul, or 1x1
  // convolution followed by a flatten).
  std::string feature_output;
  // Class names, one per line: written as assets/labels.txt.
  std::string labels;
};

// Imports the ONNX file at `path`. The returned spec's weights are the
// model's; Module(spec).export_to(dir) writes it.
ModuleSpec import_onnx(const std::string& path, const OnnxImportOptions& options = {});

}  // namespace hub::onnx_interop

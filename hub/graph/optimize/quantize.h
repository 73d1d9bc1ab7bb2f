// Post-training static quantization of an inference graph (what `hub
// quantize` does to a module, hub/module/quantize.h):
//
//   QuantizationPlan plan(graph, variables, keep);
//   // run plan.calibration_graph() on calibration inputs, measuring the
//   // range of every tensor in plan.observed()
//   QuantizedGraph q = plan.quantize(ranges, per_channel);
//
// The plan optimises the graph like optimize_for_inference up to fusing
// (variables frozen, constants folded, batch norm folded into the filters,
// bias and activations fused; no layouts), so calibration measures the
// tensors the int8 network will actually carry. Every fused convolution
// (not grouped) and MatMul (not transpose_a) is quantizable; observed() are
// their inputs, their outputs where another quantizable layer reads them,
// and the input of a MaxPool / AvgPool whose output a layer reads (the pool's
// output then takes its input's parameters, so it runs on 8-bit values).
//
// quantize() writes the graph back in standard ops (QDQ form, as ONNX's
// quantized models): each quantizable layer becomes
//   DequantizeLinear(QuantizeLinear(x)) -> Conv2D / DepthwiseConv2dNative /
//   MatMul with filter DequantizeLinear(int8 weights, scales, 0) -> BiasAdd
//   -> its activations [-> QuantizeLinear -> DequantizeLinear]
// Activations are uint8 with nudged_quant_params(min, max) of their measured
// range (hub/ops/quantize.h); weights are symmetric int8 in [-127, 127] with
// scale max|w| / 127, per output channel (per_channel; a depthwise filter
// with channel multiplier > 1 stays per tensor) or per tensor. Everything
// else stays as it was, in float: layers that are not quantizable and ops
// between int8 layers other than pooling (concatenation, a residual Add) run
// on the dequantized tensors, and QuantizedGraph::notes says which. The inference
// optimiser turns the QDQ form into int8 oneDNN primitives (optimize.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hub/graph/graph.h"
#include "hub/ops/variables.h"

namespace hub {

struct TensorRange {
  float min = 0, max = 0;
};

// One quantized activation: the float tensor (by name in the quantized
// graph) and its uint8 parameters.
struct QuantizedActivation {
  std::string tensor;
  float scale = 0;
  int32_t zero_point = 0;
  TensorRange range;  // as measured
};

// One quantized weight tensor: its int8 variable and its scales.
struct QuantizedWeights {
  std::string variable;
  int64_t scales = 0;  // 1: per tensor
  float min_scale = 0, max_scale = 0;
};

struct QuantizedGraph {
  Graph graph;
  std::map<Output, Output> tensors;         // each kept source tensor -> graph's tensor
  std::map<std::string, Tensor> variables;  // the values of graph's Variable nodes (weights, int8 weights, biases)
  std::vector<QuantizedActivation> activations;
  std::vector<QuantizedWeights> weights;
  std::vector<std::string> notes;  // what stays float, and why
};

class QuantizationPlan {
 public:
  // Throws like optimize_for_inference.
  QuantizationPlan(const Graph& graph, const VariableStore& variables, const std::vector<Output>& keep);
  ~QuantizationPlan();
  QuantizationPlan(const QuantizationPlan&) = delete;
  QuantizationPlan& operator=(const QuantizationPlan&) = delete;

  // The float graph calibration runs (no variables: they are constants).
  const Graph& calibration_graph() const;
  // calibration_graph()'s tensor for a kept source tensor.
  Output calibration_tensor(Output source) const;
  // The tensors of calibration_graph() whose ranges quantize() needs, in order.
  const std::vector<Output>& observed() const;
  // The number of quantizable layers.
  int quantizable() const;

  // `ranges` has one entry per observed() tensor. Throws InvalidArgument
  // for a wrong count or a non-finite range.
  QuantizedGraph quantize(const std::vector<TensorRange>& ranges, bool per_channel) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hub

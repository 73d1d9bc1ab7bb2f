#include "hub/module/quantize.h"

#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "hub/core/parallel.h"
#include "hub/graph/session.h"

namespace hub {

namespace {

constexpr int kBins = 2048;

using CMap = Eigen::Map<const Eigen::ArrayXf>;

// The value below which `fraction` of a histogram's mass lies (bins over
// [lo, hi]), at the upper edge of the bin where that happens.
float quantile(const std::vector<int64_t>& bins, float lo, float hi, double fraction) {
  int64_t total = 0;
  for (int64_t b : bins) total += b;
  const double want = fraction * static_cast<double>(total);
  int64_t seen = 0;
  for (int i = 0; i < kBins; ++i) {
    seen += bins[i];
    if (static_cast<double>(seen) >= want) return lo + (hi - lo) * static_cast<float>(i + 1) / kBins;
  }
  return hi;
}

}  // namespace

ModuleSpec quantize_module(const ModuleSpec& spec, const CalibrationData& data, const QuantizeOptions& options,
                           QuantizeReport* report) {
  const std::string where = "quantizing module " + spec.source();
  if (options.method != "minmax" && options.method != "percentile")
    throw_error(Code::kInvalidArgument,
                where + ": calibration method '" + options.method + "' is not minmax or percentile");
  const bool percentile = options.method == "percentile";
  if (percentile && !(options.percentile > 50 && options.percentile <= 100))
    throw_error(Code::kInvalidArgument,
                where + ": percentile " + std::to_string(options.percentile) + " is outside (50, 100]");
  const TagSet tags;
  const Graph& graph = spec.graph(tags);
  const SignatureInfo& sig = spec.signature(options.signature, tags);
  if (sig.inputs.size() != 1)
    throw_error(Code::kInvalidArgument, where + ": signature '" + options.signature + "' has " +
                                            std::to_string(sig.inputs.size()) + " inputs; calibration feeds one");
  const TensorInfo& input_info = sig.inputs.begin()->second;

  std::vector<Output> keep;
  for (const std::string& name : spec.signature_names(tags)) {
    const SignatureInfo& si = spec.signature(name, tags);
    for (const auto& [k, info] : si.inputs) keep.push_back(graph.tensor(info.tensor_name));
    for (const auto& [k, info] : si.outputs) keep.push_back(graph.tensor(info.tensor_name));
  }
  Module module(spec);  // the variables' values (stored weights or initializers)
  QuantizationPlan plan(graph, module.variables(), keep);
  if (plan.quantizable() == 0)
    throw_error(Code::kInvalidArgument, where + ": it has no convolution or matmul to quantize");

  const Output input = plan.calibration_tensor(graph.tensor(input_info.tensor_name));
  const std::vector<Output>& observed = plan.observed();
  size_t trained = 0;
  for (size_t i = 0; i < observed.size(); ++i) trained += plan.trained_range(i).has_value();
  const bool calibrate = trained < observed.size();
  if (calibrate && !data)
    throw_error(Code::kInvalidArgument,
                where + ": " + std::to_string(observed.size() - trained) + " of " + std::to_string(observed.size()) +
                    " activations have no range from quantization-aware training; "
                    "calibration data is needed" +
                    (options.no_calibration_hint.empty() ? "" : ": " + options.no_calibration_hint));
  Session session(plan.calibration_graph(), nullptr);
  std::vector<TensorRange> ranges(observed.size(),
                                  {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()});
  int64_t examples = 0;
  auto run = [&](const Tensor& batch) {
    if (batch.dtype() != input_info.dtype || !batch.shape().compatible_with(input_info.shape))
      throw_error(Code::kInvalidArgument, where + ": calibration batch " + batch.spec_string() +
                                              " does not fit input " + input_info.tensor_name);
    examples += batch.rank() > 0 ? batch.dim(0) : 1;
    return session.run({{input, batch}}, observed);
  };
  if (calibrate)
    data([&](const Tensor& batch) {
      const std::vector<Tensor> values = run(batch);
      for (size_t i = 0; i < values.size(); ++i) {
        if (values[i].num_elements() == 0) continue;
        CMap v(values[i].data<float>(), values[i].num_elements());
        ranges[i].min = std::min(ranges[i].min, v.minCoeff());
        ranges[i].max = std::max(ranges[i].max, v.maxCoeff());
      }
    });
  if (calibrate && examples == 0) throw_error(Code::kInvalidArgument, where + ": calibration fed no examples");
  for (TensorRange& r : ranges)
    if (r.min > r.max) r = TensorRange{0, 0};  // only empty tensors: any range will do
  if (calibrate && percentile) {
    std::vector<std::vector<int64_t>> bins(observed.size(), std::vector<int64_t>(kBins, 0));
    data([&](const Tensor& batch) {
      const std::vector<Tensor> values = run(batch);
      parallel_for(static_cast<int64_t>(values.size()), 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const float lo = ranges[i].min, width = std::max(ranges[i].max - lo, 1e-30f);
          CMap v(values[i].data<float>(), values[i].num_elements());
          const Eigen::ArrayXi index = ((v - lo) * (kBins / width)).floor().cast<int>().max(0).min(kBins - 1);
          for (Eigen::Index k = 0; k < index.size(); ++k) ++bins[i][index[k]];
        }
      });
    });
    const double p = options.percentile / 100.0;
    for (size_t i = 0; i < ranges.size(); ++i) {
      const TensorRange full = ranges[i];
      ranges[i] = {quantile(bins[i], full.min, full.max, 1.0 - p), quantile(bins[i], full.min, full.max, p)};
      if (full.min >= 0) ranges[i].min = full.min;  // keep a one-sided range one-sided
    }
  }
  examples /= calibrate && percentile ? 2 : 1;

  // Weights that quantization-aware training fake-quantized per channel
  // (modules/slim/quantize.h) are quantized per channel, as trained: the
  // same int8 weights after batch-norm folding.
  bool trained_per_channel = false;
  for (const Node& n : graph.nodes())
    trained_per_channel |= n.op == "FakeQuantWithMinMaxVarsPerChannel" && n.attrs.get_bool("narrow_range");
  const bool per_channel = options.per_channel || trained_per_channel;
  QuantizedGraph q = plan.quantize(ranges, per_channel);
  if (trained_per_channel && !options.per_channel)
    q.notes.push_back("weights quantized per output channel, as quantization-aware training quantized them");
  std::map<std::string, SignatureInfo> signatures;
  for (const std::string& name : spec.signature_names(tags)) {
    SignatureInfo si = spec.signature(name, tags);
    for (auto* side : {&si.inputs, &si.outputs})
      for (auto& [k, info] : *side)
        info.tensor_name = q.graph.tensor_name(q.tensors.at(graph.tensor(info.tensor_name)));
    signatures[name] = si;
  }
  if (report) {
    report->layers = plan.quantizable();
    report->activations = static_cast<int>(q.activations.size());
    report->examples = examples;
    report->notes = q.notes;
  }
  std::string method = percentile ? "percentile(" + std::to_string(options.percentile) + ")" : "minmax";
  if (trained > 0) method = calibrate ? method + " + trained fake-quant ranges" : "trained fake-quant ranges";
  QuantizationInfo info{method, examples, per_channel, q.activations, q.weights};
  std::vector<ModuleSpec::TagSetParts> parts;
  parts.push_back({tags, std::move(q.graph), std::move(signatures)});
  TensorMap weights(q.variables.begin(), q.variables.end());
  return ModuleSpec::from_parts(std::move(parts), std::move(weights), spec.attached(), spec.metadata(), spec.source(),
                                spec.assets_dir(), spec.asset_files())
      .with_quantization(std::move(info));
}

}  // namespace hub

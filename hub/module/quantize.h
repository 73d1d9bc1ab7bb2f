// Post-training static quantization of a module (`hub quantize`): the
// inference tag set {} is calibrated on representative inputs and rewritten
// so its convolutions and matmuls run in int8 (hub/graph/optimize/quantize.h
// says how), with float at the edges: the signatures' inputs and outputs
// keep their dtypes and shapes.
//
//   hub::ModuleSpec q = hub::quantize_module(spec, [&](const auto& feed) {
//     for (const hub::Tensor& batch : calibration_batches) feed(batch);
//   }, {});
//   hub::Module(q).export_to("/tmp/quantized");
//
// Calibration feeds batches of the default signature's single input and
// records, for every activation a quantized layer reads or writes, its
// range: min and max over all batches ("minmax"), or the (100 - P) and P
// percentiles of its values ("percentile", P = 99.99 by default; a second
// pass over the data, the values binned in 2048 bins between the min and max
// of the first). The result carries a quantization record (format version 2 and later)
// (ModuleSpec::quantization(), shown by `hub info`); the other tag sets
// (training graphs) are dropped: a quantized module is for inference.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hub/module/module.h"

namespace hub {

struct QuantizeOptions {
  bool per_channel = false;                   // weights: per output channel instead of per tensor (always for a
                                              // module whose weights quantization-aware training quantized per channel)
  std::string method = "minmax";              // or "percentile"
  double percentile = 99.99;                  // for "percentile", in (50, 100]
  std::string signature = kDefaultSignature;  // whose single input calibration feeds
  // Appended to the error when calibration data is needed and none was given
  // (a command names its flag here).
  std::string no_calibration_hint;
};

// Called with `feed`; calls feed(batch) once per calibration batch (the same
// batches each time: percentile calibration calls it twice). May be empty
// when quantization-aware training gave every activation its range
// (QuantizationPlan::trained_range): a module exported from `hub train
// --quantize_delay` or `hub retrain --quantize` needs no calibration.
using CalibrationData = std::function<void(const std::function<void(const Tensor&)>& feed)>;

struct QuantizeReport {
  int layers = 0;                  // convolutions and matmuls running in int8
  int activations = 0;             // quantized activation tensors
  int64_t examples = 0;            // calibration examples seen (per pass)
  std::vector<std::string> notes;  // what stays float and why, and weights quantized per channel as trained
};

// Throws InvalidArgument for bad options, a signature without exactly one
// input, calibration that feeds nothing (or no calibration where a range is
// not trained), or a module with nothing to quantize; errors from running
// the module propagate. The quantization record's method is "minmax" /
// "percentile(P)", with " + trained fake-quant ranges" when some came from
// training, or just "trained fake-quant ranges".
ModuleSpec quantize_module(const ModuleSpec& spec, const CalibrationData& data, const QuantizeOptions& options,
                           QuantizeReport* report = nullptr);

}  // namespace hub

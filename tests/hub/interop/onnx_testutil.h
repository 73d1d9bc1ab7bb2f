// Helpers for the ONNX tests: the independent references (ONNX Runtime for
// Node in tests/js, Debian's python3-onnx for writing models), raw float32
// files, and running a module's signature on a chosen backend.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hub/module/module.h"

namespace hub::testing {

// Whether node + onnxruntime-node (tests/js/node_modules) and /usr/bin/python3
// with the onnx module are present; the reason when not.
bool onnx_references_available();
std::string onnx_references_missing();

// Runs tests/hub/interop/make_onnx_models.py into `dir` (models, inputs,
// manifest.json).
void write_pytorch_style_models(const std::filesystem::path& dir);

// Runs bench/ort_qdq_model.py: ONNX Runtime's int8 QDQ form of `float_model`
// with the activation parameters of `quantization_json` (`hub info --json`'s
// layout) written to `out`; returns the script's summary line.
std::string write_ort_qdq_model(const std::filesystem::path& float_model,
                                const std::filesystem::path& quantization_json, const std::filesystem::path& out);

// Float32 little-endian raw file <-> tensor.
Tensor read_float_bin(const std::filesystem::path& path, const Shape& shape);
void write_float_bin(const std::filesystem::path& path, const Tensor& t);

// ONNX Runtime's outputs for `inputs` (float32), in the model's output order;
// `scratch` is a path prefix for the exchanged files.
std::vector<Tensor> run_onnx_runtime(const std::string& model,
                                     const std::vector<std::pair<std::string, Tensor>>& inputs,
                                     const std::filesystem::path& scratch);

// The spec's signature run in a Session on `backend` (variables from the
// spec's weights).
TensorMap run_signature(const ModuleSpec& spec, const std::string& signature, const TensorMap& inputs,
                        const std::string& backend);

}  // namespace hub::testing

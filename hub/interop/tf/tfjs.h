// TensorFlow.js graph models -> hub modules (docs/import.md).
//
// model.json (format "graph-model", as tensorflowjs_converter writes it):
//   modelTopology    the GraphDef in protobuf's JSON form
//   weightsManifest  groups of {paths: [.bin shards, relative to model.json],
//                    weights: [{name, shape, dtype, quantization?}]}: each
//                    group's bytes are its shards concatenated, holding its
//                    weights in order; a weight is the value of the Const
//                    node of its name
//   signature        (optional) a SignatureDef: inputs and outputs by key
// Quantized weights are dequantized as TensorFlow.js does
// (tfjs-core io_utils decodeWeight): uint8/uint16 q of a float32 weight is
// q * scale + min, rounded once to float32; of an int32 weight
// round(q * scale + min) (halves up); float16 is IEEE half precision
// (subnormals included).
//
// The module has the tag set {} and the signature `default`: the
// signature's inputs and outputs under their keys (a trailing ":0" removed),
// else every Placeholder as an input and every node no other node reads as
// an output, under their node names. The graph imports through the shared
// TensorFlow op mapping (graph_import.h); float Consts used as weights
// become trainable variables. Attached: source_format "tfjs_graph_model",
// source_sha256 (of model.json), source_producer (convertedBy or
// generatedBy), imported_at.
//
// Errors name model.json (Corruption unless said): malformed or too deeply
// nested JSON, another format, a shard path that is absolute, leaves the
// model's folder or is not a regular file (InvalidArgument), a group whose
// shards hold more or fewer bytes than its weights need, an unknown weight or
// quantization dtype (Unimplemented), a bad shape, a Const without a value,
// and every graph error of import_graph. Nothing is written.
#pragma once

#include <string>

#include "hub/module/module.h"

namespace hub::tf {

// Limits: model.json and all shards together.
inline constexpr int64_t kMaxModelJsonBytes = int64_t{256} << 20;
inline constexpr int64_t kMaxWeightBytes = int64_t{4} << 30;

// Whether `path` is a regular file holding a TF.js graph model's JSON: an
// object with "format": "graph-model", or (older converters) no format and a
// modelTopology with a "node" list. Never throws.
bool is_tfjs_graph_model(const std::string& path);

ModuleSpec import_tfjs(const std::string& model_json);

}  // namespace hub::tf

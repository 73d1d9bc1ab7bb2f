// Conversions between the in-memory module types and signatures/module.proto.
// Used by export/load and by tools that inspect module.pb directly.
#pragma once

#include <string>

#include "hub/graph/graph.h"
#include "hub/module/module.h"
#include "signatures/module.pb.h"

namespace hub {

void shape_to_proto(const Shape& shape, ShapeProto* out);
void tensor_to_proto(const Tensor& t, TensorProto* out);
void graph_to_proto(const Graph& graph, GraphDef* out);
void tensor_info_to_proto(const TensorInfo& info, TensorInfoDef* out);

// `where` names the source in errors. Malformed data throws Corruption; an
// unknown op NotFound naming the op and the node; a node failing its op's
// checks InvalidArgument naming the node. Every node goes through
// Graph::add_node, so the result is validated by the op registry.
DType dtype_from_proto(int value, const std::string& where);
Shape shape_from_proto(const ShapeProto& shape, const std::string& where);
Tensor tensor_from_proto(const TensorProto& t, const std::string& where);
Graph graph_from_proto(const GraphDef& def, const std::string& where);
TensorInfo tensor_info_from_proto(const TensorInfoDef& p, const std::string& where);

// The module.pb contents for a spec (format_version = kModuleFormatVersion).
ModuleDef spec_to_proto(const ModuleSpec& spec);
// Deterministic binary encoding (maps in key order), so equal specs give equal bytes.
std::string serialize_deterministic(const ModuleDef& def);

}  // namespace hub

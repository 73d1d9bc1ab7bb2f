// Conversions between the in-memory module types and signatures/module.proto
// (hub/module/module_proto.h).
#include "hub/module/module_proto.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <cstring>

#include "hub/module/module_internal.h"
#include "hub/ops/registry.h"
#include "signatures/upgrade.h"

namespace hub {

using module_internal::corrupt;

void shape_to_proto(const Shape& shape, ShapeProto* out) {
  out->Clear();
  for (int64_t d : shape.dims()) out->add_dims(d);
}

DType dtype_from_proto(int value, const std::string& where) {
  if (value < static_cast<int>(DType::kFloat32) || value > static_cast<int>(DType::kInt8))
    corrupt(where, "invalid dtype value " + std::to_string(value));
  return static_cast<DType>(value);
}

Shape shape_from_proto(const ShapeProto& shape, const std::string& where) {
  std::vector<int64_t> dims;
  for (int64_t d : shape.dims()) {
    if (d < kUnknownDim) corrupt(where, "invalid dimension " + std::to_string(d));
    dims.push_back(d);
  }
  return Shape(std::move(dims));
}

void tensor_to_proto(const Tensor& t, TensorProto* out) {
  HUB_CHECK(t.defined() && t.device() == Device::kCPU);
  out->set_dtype(static_cast<DataType>(t.dtype()));
  shape_to_proto(t.shape(), out->mutable_shape());
  out->set_raw_data(static_cast<const char*>(t.raw_data()), t.nbytes());
}

Tensor tensor_from_proto(const TensorProto& p, const std::string& where) {
  DType dtype = dtype_from_proto(p.dtype(), where);
  Shape shape = shape_from_proto(p.shape(), where);
  if (!shape.is_fully_defined()) corrupt(where, "tensor shape " + shape.to_string() + " is not fully defined");
  // num_elements() throws InvalidArgument on overflow; report it as corruption.
  int64_t n;
  try {
    n = shape.num_elements();
  } catch (const Error&) {
    corrupt(where, "tensor shape " + shape.to_string() + " overflows");
  }
  if (n < 0 || static_cast<uint64_t>(n) > p.raw_data().size() / dtype_size(dtype) ||
      static_cast<uint64_t>(n) * dtype_size(dtype) != p.raw_data().size())
    corrupt(where, "tensor " + std::string(dtype_name(dtype)) + shape.to_string() + " has " +
                       std::to_string(p.raw_data().size()) + " bytes of data");
  Tensor t(dtype, shape);
  if (t.nbytes()) std::memcpy(t.raw_data(), p.raw_data().data(), t.nbytes());
  if (dtype == DType::kBool) {
    const uint8_t* b = static_cast<const uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i)
      if (b[i] > 1) corrupt(where, "bool tensor element " + std::to_string(i) + " is " + std::to_string(b[i]));
  }
  return t;
}

namespace {

void subgraph_to_proto(const Subgraph& sub, SubgraphDef* out) {
  const Graph g = subgraph_graph(sub);
  graph_to_proto(g, out->mutable_graph());
  for (Output a : sub.arguments) out->add_arguments(g.tensor_name(a));
  for (Output r : sub.results) out->add_results(g.tensor_name(r));
}

SubgraphPtr subgraph_from_proto(const SubgraphDef& p, const std::string& where) {
  const Graph g = graph_from_proto(p.graph(), where + ": subgraph");
  auto tensor = [&](const std::string& name, const char* what) {
    try {
      return g.tensor(name);
    } catch (const Error& e) {
      corrupt(where, std::string(what) + " '" + name + "' is not a tensor of the subgraph");
    }
  };
  std::vector<Output> arguments, results;
  for (const std::string& a : p.arguments()) arguments.push_back(tensor(a, "argument"));
  for (const std::string& r : p.results()) results.push_back(tensor(r, "result"));
  try {
    return make_subgraph(g, arguments, results);
  } catch (const Error& e) {
    corrupt(where, e.message());
  }
}

void attr_to_proto(const AttrValue& value, AttrValueDef* out) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>)
          out->set_i(v);
        else if constexpr (std::is_same_v<T, double>)
          out->set_f(v);
        else if constexpr (std::is_same_v<T, bool>)
          out->set_b(v);
        else if constexpr (std::is_same_v<T, std::string>)
          out->set_s(v);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          auto* l = out->mutable_ints();
          for (auto x : v) l->add_values(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          auto* l = out->mutable_floats();
          for (auto x : v) l->add_values(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          auto* l = out->mutable_strings();
          for (const auto& x : v) l->add_values(x);
        } else if constexpr (std::is_same_v<T, DType>)
          out->set_dtype(static_cast<DataType>(v));
        else if constexpr (std::is_same_v<T, Shape>)
          shape_to_proto(v, out->mutable_shape());
        else if constexpr (std::is_same_v<T, Tensor>)
          tensor_to_proto(v, out->mutable_tensor());
        else if constexpr (std::is_same_v<T, SubgraphPtr>)
          subgraph_to_proto(*v, out->mutable_graph());
      },
      value);
}

AttrValue attr_from_proto(const AttrValueDef& p, const std::string& where) {
  switch (p.value_case()) {
    case AttrValueDef::kI:
      return p.i();
    case AttrValueDef::kF:
      return p.f();
    case AttrValueDef::kB:
      return p.b();
    case AttrValueDef::kS:
      return p.s();
    case AttrValueDef::kInts:
      return std::vector<int64_t>(p.ints().values().begin(), p.ints().values().end());
    case AttrValueDef::kFloats:
      return std::vector<double>(p.floats().values().begin(), p.floats().values().end());
    case AttrValueDef::kStrings:
      return std::vector<std::string>(p.strings().values().begin(), p.strings().values().end());
    case AttrValueDef::kDtype:
      return dtype_from_proto(p.dtype(), where);
    case AttrValueDef::kShape:
      return shape_from_proto(p.shape(), where);
    case AttrValueDef::kTensor:
      return tensor_from_proto(p.tensor(), where);
    case AttrValueDef::kGraph:
      return subgraph_from_proto(p.graph(), where);
    case AttrValueDef::VALUE_NOT_SET:
      break;
  }
  corrupt(where, "attribute has no value");
}

std::string output_name(const Graph& g, Output o) { return g.tensor_name(o); }

}  // namespace

void graph_to_proto(const Graph& graph, GraphDef* out) {
  out->Clear();
  out->set_seed(graph.seed());
  for (const Node& n : graph.nodes()) {
    NodeDef* nd = out->add_nodes();
    nd->set_name(n.name);
    nd->set_op(n.op);
    for (const Output& in : n.inputs) nd->add_inputs(output_name(graph, in));
    for (const auto& [name, value] : n.attrs.items()) attr_to_proto(value, &(*nd->mutable_attrs())[name]);
  }
  for (const auto& [key, names] : graph.collections()) {
    auto& list = (*out->mutable_collections())[key];
    for (const auto& name : names) list.add_values(name);
  }
}

Graph graph_from_proto(const GraphDef& def, const std::string& where) {
  // Loading a module runs this for every node of every tag set, so nothing is
  // formatted unless there is an error to report.
  Graph g;
  g.set_seed(def.seed());
  std::vector<std::pair<const std::string*, const AttrValueDef*>> sorted;
  for (const NodeDef& nd : def.nodes()) {
    auto node_where = [&] { return where + ": node '" + nd.name() + "' (" + nd.op() + ")"; };
    std::vector<Output> inputs;
    inputs.reserve(nd.inputs_size());
    for (const std::string& in : nd.inputs()) {
      try {
        inputs.push_back(g.tensor(in));
      } catch (const Error& e) {
        corrupt(node_where(), "input '" + in + "' is not an earlier node's output (" + e.message() + ")");
      }
    }
    // Sorted for deterministic errors.
    sorted.clear();
    for (const auto& [k, v] : nd.attrs()) sorted.emplace_back(&k, &v);
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return *a.first < *b.first; });
    Attrs attrs;
    for (const auto& [k, v] : sorted) {
      try {
        attrs.set(*k, attr_from_proto(*v, "attribute '" + *k + "'"));
      } catch (const Error& e) {
        throw Error(e.code(), node_where() + ": " + e.message());
      }
    }
    if (!OpRegistry::global().contains(nd.op()))
      throw_error(Code::kNotFound, node_where() + ": unknown op '" + nd.op() + "'");
    try {
      g.add_node(nd.op(), nd.name(), std::move(inputs), attrs);
    } catch (const Error& e) {
      throw e.with_context(where);
    }
  }
  for (const auto& [key, list] : def.collections()) {
    for (const std::string& name : list.values()) {
      if (!g.find(name)) corrupt(where, "collection '" + key + "' names unknown node '" + name + "'");
      g.add_to_collection(key, name);
    }
  }
  return g;
}

std::string graph_to_text(const Graph& graph) {
  GraphDef def;
  graph_to_proto(graph, &def);
  std::string out;
  google::protobuf::TextFormat::PrintToString(def, &out);
  return out;
}

void tensor_info_to_proto(const TensorInfo& info, TensorInfoDef* out) {
  out->set_tensor_name(info.tensor_name);
  out->set_dtype(static_cast<DataType>(info.dtype));
  shape_to_proto(info.shape, out->mutable_shape());
}
TensorInfo tensor_info_from_proto(const TensorInfoDef& p, const std::string& where) {
  return TensorInfo{p.tensor_name(), dtype_from_proto(p.dtype(), where), shape_from_proto(p.shape(), where)};
}

ModuleDef spec_to_proto(const ModuleSpec& spec) {
  ModuleDef def;
  def.set_format_version(kModuleFormatVersion);
  if (const std::optional<QuantizationInfo>& q = spec.quantization()) {
    QuantizationDef* qd = def.mutable_quantization();
    qd->set_method(q->method);
    qd->set_calibration_images(q->calibration_images);
    qd->set_per_channel(q->per_channel);
    for (const QuantizedActivation& a : q->activations) {
      QuantizationDef::Activation* p = qd->add_activations();
      p->set_tensor(a.tensor);
      p->set_scale(a.scale);
      p->set_zero_point(a.zero_point);
      p->set_min(a.range.min);
      p->set_max(a.range.max);
    }
    for (const QuantizedWeights& w : q->weights) {
      QuantizationDef::Weights* p = qd->add_weights();
      p->set_variable(w.variable);
      p->set_scales(w.scales);
      p->set_min_scale(w.min_scale);
      p->set_max_scale(w.max_scale);
    }
  }
  for (const VariableInfo& v : spec.variables()) {
    VariableDef* vd = def.add_variables();
    vd->set_name(v.name);
    vd->set_dtype(static_cast<DataType>(v.dtype));
    shape_to_proto(v.shape, vd->mutable_shape());
    vd->set_trainable(v.trainable);
  }
  for (const TagSet& tags : spec.tag_sets()) {
    TagSetDef* td = def.add_tag_sets();
    for (const auto& t : tags) td->add_tags(t);
    graph_to_proto(spec.graph(tags), td->mutable_graph());
    for (const std::string& name : spec.signature_names(tags)) {
      const SignatureInfo& si = spec.signature(name, tags);
      SignatureDef& sd = (*td->mutable_signatures())[name];
      for (const auto& [k, info] : si.inputs) tensor_info_to_proto(info, &(*sd.mutable_inputs())[k]);
      for (const auto& [k, info] : si.outputs) tensor_info_to_proto(info, &(*sd.mutable_outputs())[k]);
    }
  }
  for (const auto& [key, value] : spec.attached()) {
    AttachedValueDef& a = (*def.mutable_attached())[key];
    if (auto* i = std::get_if<int64_t>(&value))
      a.set_int_value(*i);
    else if (auto* f = std::get_if<double>(&value))
      a.set_float_value(*f);
    else
      a.set_string_value(std::get<std::string>(value));
  }
  const ModuleMetadata& m = spec.metadata();
  MetadataDef* md = def.mutable_metadata();
  md->set_name(m.name);
  md->set_description(m.description);
  md->set_version(m.version);
  md->set_license(m.license);
  md->set_author(m.author);
  return def;
}

std::string serialize_deterministic(const ModuleDef& def) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    def.SerializeToCodedStream(&coded);
  }
  return out;
}

}  // namespace hub

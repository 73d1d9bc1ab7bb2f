#include "hub/module/module.h"

#include <fcntl.h>
#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "hub/core/fileio.h"
#include "hub/graph/session.h"
#include "hub/module/module_proto.h"
#include "hub/module/safetensors.h"
#include "signatures/upgrade.h"

namespace fs = std::filesystem;

namespace hub {

struct ModuleTagSet {
  TagSet tags;
  Graph graph;
  std::map<std::string, SignatureInfo> signatures;
};

struct ModuleSpec::Impl {
  std::vector<ModuleTagSet> tag_sets;
  std::vector<VariableInfo> variables;
  TensorMap weights;
  std::map<std::string, AttachedValue> attached;
  ModuleMetadata metadata;
  std::string source;
  std::string assets_dir;
  std::map<std::string, std::string> asset_files;
};

namespace {

constexpr const char* kModuleFile = "module.pb";
constexpr const char* kVariablesFile = "variables.safetensors";
constexpr const char* kAssetsDir = "assets";

[[noreturn]] void corrupt(const std::string& where, const std::string& what) {
  throw_error(Code::kCorruption, where + ": " + what);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

template <class M> std::vector<std::string> keys(const M& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

}  // namespace

std::string tag_set_string(const TagSet& tags) {
  std::string out = "{";
  for (const auto& t : tags) out += (out.size() > 1 ? "," : "") + t;
  return out + "}";
}

// ---- proto conversion ----------------------------------------------------------

void shape_to_proto(const Shape& shape, ShapeProto* out) {
  out->Clear();
  for (int64_t d : shape.dims()) out->add_dims(d);
}

DType dtype_from_proto(int value, const std::string& where) {
  if (value < 1 || value > 5) corrupt(where, "invalid dtype value " + std::to_string(value));
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

void attr_to_proto(const AttrValue& value, AttrValueDef* out) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) out->set_i(v);
        else if constexpr (std::is_same_v<T, double>) out->set_f(v);
        else if constexpr (std::is_same_v<T, bool>) out->set_b(v);
        else if constexpr (std::is_same_v<T, std::string>) out->set_s(v);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          auto* l = out->mutable_ints();
          for (auto x : v) l->add_values(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          auto* l = out->mutable_floats();
          for (auto x : v) l->add_values(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          auto* l = out->mutable_strings();
          for (const auto& x : v) l->add_values(x);
        } else if constexpr (std::is_same_v<T, DType>) out->set_dtype(static_cast<DataType>(v));
        else if constexpr (std::is_same_v<T, Shape>) shape_to_proto(v, out->mutable_shape());
        else if constexpr (std::is_same_v<T, Tensor>) tensor_to_proto(v, out->mutable_tensor());
      },
      value);
}

AttrValue attr_from_proto(const AttrValueDef& p, const std::string& where) {
  switch (p.value_case()) {
    case AttrValueDef::kI: return p.i();
    case AttrValueDef::kF: return p.f();
    case AttrValueDef::kB: return p.b();
    case AttrValueDef::kS: return p.s();
    case AttrValueDef::kInts: return std::vector<int64_t>(p.ints().values().begin(), p.ints().values().end());
    case AttrValueDef::kFloats: return std::vector<double>(p.floats().values().begin(), p.floats().values().end());
    case AttrValueDef::kStrings:
      return std::vector<std::string>(p.strings().values().begin(), p.strings().values().end());
    case AttrValueDef::kDtype: return dtype_from_proto(p.dtype(), where);
    case AttrValueDef::kShape: return shape_from_proto(p.shape(), where);
    case AttrValueDef::kTensor: return tensor_from_proto(p.tensor(), where);
    case AttrValueDef::VALUE_NOT_SET: break;
  }
  corrupt(where, "attribute has no value");
}

std::string output_name(const Graph& g, Output o) { return g.tensor_name(o); }

// Copies src into a new graph, letting `edit` change each node's attributes.
Graph rebuild_graph(const Graph& src, const std::function<void(const Node&, Attrs&)>& edit) {
  Graph out;
  out.set_seed(src.seed());
  for (const Node& n : src.nodes()) {
    Attrs attrs = n.attrs;
    edit(n, attrs);
    out.add_node(n.op, n.name, n.inputs, attrs);
  }
  for (const auto& [key, names] : src.collections())
    for (const auto& name : names) out.add_to_collection(key, name);
  return out;
}

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

namespace {
void tensor_info_to_proto(const TensorInfo& info, TensorInfoDef* out) {
  out->set_tensor_name(info.tensor_name);
  out->set_dtype(static_cast<DataType>(info.dtype));
  shape_to_proto(info.shape, out->mutable_shape());
}
TensorInfo tensor_info_from_proto(const TensorInfoDef& p, const std::string& where) {
  return TensorInfo{p.tensor_name(), dtype_from_proto(p.dtype(), where), shape_from_proto(p.shape(), where)};
}
}  // namespace

ModuleDef spec_to_proto(const ModuleSpec& spec) {
  ModuleDef def;
  def.set_format_version(kModuleFormatVersion);
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
    if (auto* i = std::get_if<int64_t>(&value)) a.set_int_value(*i);
    else if (auto* f = std::get_if<double>(&value)) a.set_float_value(*f);
    else a.set_string_value(std::get<std::string>(value));
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

// ---- ModuleBuilder ----------------------------------------------------------------

ModuleBuilder::ModuleBuilder() = default;

namespace {
void check_signature_tensor(const Graph& g, Output o, const std::string& where, bool input) {
  if (!o.valid() || o.node >= g.num_nodes() || o.index >= static_cast<int>(g.node(o).outputs.size()))
    throw_error(Code::kInvalidArgument, where + ": not a tensor of this graph");
  if (input && g.node(o).op != "Placeholder")
    throw_error(Code::kInvalidArgument, where + ": '" + g.node(o).name + "' is a " + g.node(o).op +
                                            ", signature inputs must be Placeholders");
}
}  // namespace

void ModuleBuilder::add_signature(const std::string& name, const OutputMap& inputs, const OutputMap& outputs) {
  if (name.empty()) throw_error(Code::kInvalidArgument, "add_signature: empty signature name");
  if (signatures_.count(name))
    throw_error(Code::kAlreadyExists, "add_signature: signature '" + name + "' already exists in tag set " +
                                          tag_set_string(tags_));
  if (outputs.empty()) throw_error(Code::kInvalidArgument, "add_signature '" + name + "': no outputs");
  SignatureInfo si;
  for (const auto& [k, o] : inputs) {
    check_signature_tensor(graph_, o, "signature '" + name + "' input '" + k + "'", true);
    const TensorSpec& s = graph_.spec(o);
    si.inputs[k] = TensorInfo{graph_.tensor_name(o), s.dtype, s.shape};
  }
  for (const auto& [k, o] : outputs) {
    check_signature_tensor(graph_, o, "signature '" + name + "' output '" + k + "'", false);
    const TensorSpec& s = graph_.spec(o);
    si.outputs[k] = TensorInfo{graph_.tensor_name(o), s.dtype, s.shape};
  }
  signatures_[name] = std::move(si);
}

void ModuleBuilder::add_signature(const std::string& name, Output input, Output output,
                                  const std::string& input_name, const std::string& output_name) {
  add_signature(name, OutputMap{{input_name, input}}, OutputMap{{output_name, output}});
}

void ModuleBuilder::attach(const std::string& key, AttachedValue value) { attached_[key] = std::move(value); }

void ModuleBuilder::set_image_info(int64_t height, int64_t width, int64_t channels) {
  if (height <= 0 || width <= 0 || channels <= 0)
    throw_error(Code::kInvalidArgument, "set_image_info: sizes must be positive, got " + std::to_string(height) +
                                            "x" + std::to_string(width) + "x" + std::to_string(channels));
  attach(kImageHeightKey, height);
  attach(kImageWidthKey, width);
  attach(kImageChannelsKey, channels);
}

void ModuleBuilder::set_metadata(ModuleMetadata metadata) { metadata_ = std::move(metadata); }

void ModuleBuilder::add_asset(const std::string& filename, std::string contents) {
  if (filename.empty() || filename == "." || filename == ".." || filename.find('/') != std::string::npos ||
      filename.find('\0') != std::string::npos)
    throw_error(Code::kInvalidArgument, "add_asset: '" + filename + "' is not a plain file name");
  assets_[filename] = std::move(contents);
}

// ---- ModuleSpec -------------------------------------------------------------------

const ModuleSpec::Impl& ModuleSpec::impl() const {
  if (!impl_) throw_error(Code::kFailedPrecondition, "empty ModuleSpec (not created or loaded)");
  return *impl_;
}

const ModuleTagSet& ModuleSpec::tag_set(const TagSet& tags) const {
  for (const ModuleTagSet& t : impl().tag_sets)
    if (t.tags == tags) return t;
  std::vector<std::string> have;
  for (const ModuleTagSet& t : impl().tag_sets) have.push_back(tag_set_string(t.tags));
  throw_error(Code::kNotFound, "module " + impl().source + " has no tag set " + tag_set_string(tags) +
                                   " (has " + join(have) + ")");
}

std::vector<TagSet> ModuleSpec::tag_sets() const {
  std::vector<TagSet> out;
  for (const ModuleTagSet& t : impl().tag_sets) out.push_back(t.tags);
  return out;
}

bool ModuleSpec::has_tag_set(const TagSet& tags) const {
  for (const ModuleTagSet& t : impl().tag_sets)
    if (t.tags == tags) return true;
  return false;
}

std::vector<std::string> ModuleSpec::signature_names(const TagSet& tags) const {
  return keys(tag_set(tags).signatures);
}

const SignatureInfo& ModuleSpec::signature(const std::string& name, const TagSet& tags) const {
  const ModuleTagSet& t = tag_set(tags);
  auto it = t.signatures.find(name);
  if (it == t.signatures.end())
    throw_error(Code::kNotFound, "module " + impl().source + " has no signature '" + name + "' in tag set " +
                                     tag_set_string(tags) + " (signatures: " + join(keys(t.signatures)) + ")");
  return it->second;
}

const std::map<std::string, TensorInfo>& ModuleSpec::input_info(const std::string& sig, const TagSet& tags) const {
  return signature(sig, tags).inputs;
}

const std::map<std::string, TensorInfo>& ModuleSpec::output_info(const std::string& sig, const TagSet& tags) const {
  return signature(sig, tags).outputs;
}

const Graph& ModuleSpec::graph(const TagSet& tags) const { return tag_set(tags).graph; }
const std::vector<VariableInfo>& ModuleSpec::variables() const { return impl().variables; }
const TensorMap& ModuleSpec::weights() const { return impl().weights; }
const ModuleMetadata& ModuleSpec::metadata() const { return impl().metadata; }
const std::map<std::string, AttachedValue>& ModuleSpec::attached() const { return impl().attached; }
const std::string& ModuleSpec::assets_dir() const { return impl().assets_dir; }
const std::map<std::string, std::string>& ModuleSpec::asset_files() const { return impl().asset_files; }
const std::string& ModuleSpec::source() const { return impl().source; }

ModuleSpec ModuleSpec::from_parts(std::vector<TagSetParts> tag_sets, TensorMap weights,
                                  std::map<std::string, AttachedValue> attached, ModuleMetadata metadata,
                                  std::string source, std::string assets_dir, std::map<std::string, std::string> asset_files) {
  const std::string where = "module " + source;
  if (tag_sets.empty()) throw_error(Code::kInvalidArgument, where + ": no tag sets");
  auto impl = std::make_shared<Impl>();
  std::map<std::string, VariableInfo> vars;
  for (TagSetParts& parts : tag_sets) {
    const std::string tw = where + ", tag set " + tag_set_string(parts.tags);
    for (const ModuleTagSet& seen : impl->tag_sets)
      if (seen.tags == parts.tags) throw_error(Code::kInvalidArgument, tw + ": repeated tag set");
    const Graph& g = parts.graph;
    for (const auto& [name, si] : parts.signatures) {
      auto check = [&](const std::string& key, const TensorInfo& info, bool input) {
        const std::string sw = tw + ", signature '" + name + "' " + (input ? "input" : "output") + " '" + key + "'";
        Output o;
        try {
          o = g.tensor(info.tensor_name);
        } catch (const Error& e) {
          throw e.with_context(sw);
        }
        if (input && g.node(o).op != "Placeholder")
          throw_error(Code::kInvalidArgument, sw + ": '" + info.tensor_name + "' is not a Placeholder");
        const TensorSpec& s = g.spec(o);
        if (s.dtype != info.dtype || !s.shape.compatible_with(info.shape) || s.shape.rank() != info.shape.rank())
          throw_error(Code::kInvalidArgument, sw + " is declared " + std::string(dtype_name(info.dtype)) +
                                                  info.shape.to_string() + " but tensor '" + info.tensor_name +
                                                  "' is " + s.to_string());
      };
      if (si.outputs.empty()) throw_error(Code::kInvalidArgument, tw + ", signature '" + name + "': no outputs");
      for (const auto& [k, info] : si.inputs) check(k, info, true);
      for (const auto& [k, info] : si.outputs) check(k, info, false);
    }
    for (int id : g.variables()) {
      const Node& n = g.node(id);
      VariableInfo v{n.name, n.attrs.get_dtype("dtype"), n.attrs.get_shape("shape"), n.attrs.get_bool("trainable")};
      auto it = vars.find(n.name);
      if (it == vars.end()) {
        vars.emplace(n.name, v);
      } else if (it->second.dtype != v.dtype || it->second.shape != v.shape) {
        throw_error(Code::kInvalidArgument,
                    tw + ": variable '" + n.name + "' is " + std::string(dtype_name(v.dtype)) + v.shape.to_string() +
                        " here but " + std::string(dtype_name(it->second.dtype)) + it->second.shape.to_string() +
                        " in another tag set");
      } else {
        it->second.trainable = it->second.trainable || v.trainable;
      }
    }
    impl->tag_sets.push_back(ModuleTagSet{std::move(parts.tags), std::move(parts.graph), std::move(parts.signatures)});
  }
  for (const auto& [name, t] : weights) {
    auto it = vars.find(name);
    if (it == vars.end())
      throw_error(Code::kInvalidArgument, where + ": weight '" + name + "' is not a variable of the module");
    if (t.dtype() != it->second.dtype || t.shape() != it->second.shape)
      throw_error(Code::kInvalidArgument, where + ": weight '" + name + "' is " + t.spec_string() +
                                              " but the variable is " + std::string(dtype_name(it->second.dtype)) +
                                              it->second.shape.to_string());
  }
  for (auto& [name, v] : vars) impl->variables.push_back(v);
  impl->weights = std::move(weights);
  impl->attached = std::move(attached);
  impl->metadata = std::move(metadata);
  impl->source = std::move(source);
  impl->assets_dir = std::move(assets_dir);
  impl->asset_files = std::move(asset_files);
  ModuleSpec spec;
  spec.impl_ = std::move(impl);
  return spec;
}

ModuleSpec create_module_spec(const ModuleFn& fn, const std::vector<std::pair<TagSet, Attrs>>& tags_and_args) {
  if (tags_and_args.empty()) throw_error(Code::kInvalidArgument, "create_module_spec: empty tags_and_args");
  std::vector<ModuleSpec::TagSetParts> parts;
  TensorMap weights;
  std::map<std::string, AttachedValue> attached;
  ModuleMetadata metadata;
  std::map<std::string, std::string> assets;
  for (const auto& [tags, args] : tags_and_args) {
    ModuleBuilder b;
    b.tags_ = tags;
    try {
      fn(b, args);
    } catch (const Error& e) {
      throw e.with_context("create_module_spec: building tag set " + tag_set_string(tags));
    }
    for (const auto& [k, v] : b.attached_) attached[k] = v;
    if (b.metadata_) metadata = *b.metadata_;
    for (auto& [k, v] : b.assets_) assets[k] = v;
    for (const auto& [name, t] : b.initial_values_.items()) weights[name] = t.clone();
    parts.push_back({tags, std::move(b.graph_), std::move(b.signatures_)});
  }
  return ModuleSpec::from_parts(std::move(parts), std::move(weights), std::move(attached), std::move(metadata),
                                "<module fn>", "", std::move(assets));
}

ModuleSpec create_module_spec(const std::function<void(ModuleBuilder&)>& fn) {
  return create_module_spec([&](ModuleBuilder& b, const Attrs&) { fn(b); });
}

// ---- loading --------------------------------------------------------------------

namespace {
// One tag set of module.pb: its graph (every node re-added) and signatures.
ModuleSpec::TagSetParts tag_set_from_proto(const TagSetDef& td, const std::string& pb_path) {
  ModuleSpec::TagSetParts p;
  p.tags = TagSet(td.tags().begin(), td.tags().end());
  const std::string tw = pb_path + ", tag set " + tag_set_string(p.tags);
  p.graph = graph_from_proto(td.graph(), tw);
  std::map<std::string, const SignatureDef*> sorted;
  for (const auto& [name, sd] : td.signatures()) sorted[name] = &sd;
  for (const auto& [name, sd] : sorted) {
    SignatureInfo si;
    const std::string sw = tw + ", signature '" + name + "'";
    for (const auto& [k, info] : sd->inputs()) si.inputs[k] = tensor_info_from_proto(info, sw);
    for (const auto& [k, info] : sd->outputs()) si.outputs[k] = tensor_info_from_proto(info, sw);
    p.signatures[name] = std::move(si);
  }
  return p;
}
}  // namespace

ModuleSpec load_module_spec(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw_error(Code::kNotFound, "module '" + dir +
                                     "' not found: not a directory (load_module_spec reads local module "
                                     "directories; a URL, archive or registry name needs "
                                     "hub::resolver::Resolver::load)");
  const std::string where = "module " + dir;
  const std::string pb_path = (fs::path(dir) / kModuleFile).string();
  const std::string st_path = (fs::path(dir) / kVariablesFile).string();

  // module.pb is parsed on an arena: it allocates from a few blocks and is
  // freed in one step (freeing it message by message was a quarter of the
  // protobuf cost for a MobileNet).
  // (Parsing it, building each tag set's graph and mapping the weights are
  // independent, but running them on an OpenMP team made loading slower on a
  // busy 2-core machine, so they run in turn.)
  std::string bytes;
  try {
    bytes = read_file_bytes(pb_path);
  } catch (const Error& e) {
    throw e.with_context("loading " + where);
  }
  google::protobuf::ArenaOptions arena_options;
  arena_options.start_block_size = std::max<size_t>(4096, 2 * bytes.size());
  arena_options.max_block_size = std::max<size_t>(arena_options.start_block_size, 1 << 20);
  google::protobuf::Arena arena(arena_options);
  ModuleDef& def = *google::protobuf::Arena::CreateMessage<ModuleDef>(&arena);
  bool parsed;
  {
    google::protobuf::LogSilencer quiet;  // our error below says it better than libprotobuf's log line
    parsed = def.ParseFromString(bytes);
  }
  if (!parsed)
    throw_error(Code::kCorruption, pb_path + ": cannot parse ModuleDef (truncated or corrupted, " +
                                       std::to_string(bytes.size()) + " bytes)");
  upgrade_module_def(def, dir);

  std::vector<ModuleSpec::TagSetParts> parts;
  for (const TagSetDef& td : def.tag_sets()) parts.push_back(tag_set_from_proto(td, pb_path));

  // Variables declared in module.pb must be exactly the graphs' variables.
  std::map<std::string, VariableInfo> declared;
  for (const VariableDef& vd : def.variables()) {
    const std::string vw = pb_path + ", variable '" + vd.name() + "'";
    VariableInfo v{vd.name(), dtype_from_proto(vd.dtype(), vw), shape_from_proto(vd.shape(), vw), vd.trainable()};
    if (!declared.emplace(v.name, v).second) corrupt(vw, "declared twice");
  }
  std::map<std::string, bool> in_graphs;
  for (const auto& p : parts) {
    for (int id : p.graph.variables()) {
      const Node& n = p.graph.node(id);
      in_graphs[n.name] = true;
      auto it = declared.find(n.name);
      if (it == declared.end())
        corrupt(pb_path, "graph of tag set " + tag_set_string(p.tags) + " has variable '" + n.name +
                             "' that module.pb does not declare");
      if (it->second.dtype != n.attrs.get_dtype("dtype") || it->second.shape != n.attrs.get_shape("shape"))
        corrupt(pb_path, "variable '" + n.name + "' is declared " + std::string(dtype_name(it->second.dtype)) +
                             it->second.shape.to_string() + " but its graph node is " + p.graph.node(id).outputs[0].to_string());
    }
  }
  for (const auto& [name, v] : declared)
    if (!in_graphs.count(name)) corrupt(pb_path, "variable '" + name + "' is in no graph");

  TensorMap weights;
  if (!declared.empty() || fs::exists(st_path, ec)) {
    SafetensorsContents st;
    try {
      st = map_safetensors(st_path);
    } catch (const Error& e) {
      throw e.with_context("loading " + where);
    }
    for (const auto& [name, v] : declared) {
      auto it = st.tensors.find(name);
      if (it == st.tensors.end())
        throw_error(Code::kNotFound, st_path + ": missing variable '" + name + "' (" +
                                         std::string(dtype_name(v.dtype)) + v.shape.to_string() + ")");
      if (it->second.dtype() != v.dtype || it->second.shape() != v.shape)
        throw_error(Code::kInvalidArgument, st_path + ": variable '" + name + "' is " + it->second.spec_string() +
                                                " but module.pb declares " + std::string(dtype_name(v.dtype)) +
                                                v.shape.to_string());
    }
    for (auto& [name, t] : st.tensors) {
      if (!declared.count(name))
        corrupt(st_path, "tensor '" + name + "' is not a variable declared in module.pb");
      weights.emplace(name, std::move(t));
    }
  }

  std::map<std::string, AttachedValue> attached;
  for (const auto& [k, a] : def.attached()) {
    switch (a.value_case()) {
      case AttachedValueDef::kIntValue: attached[k] = a.int_value(); break;
      case AttachedValueDef::kFloatValue: attached[k] = a.float_value(); break;
      case AttachedValueDef::kStringValue: attached[k] = a.string_value(); break;
      default: corrupt(pb_path, "attached value '" + k + "' has no value");
    }
  }
  ModuleMetadata md{def.metadata().name(), def.metadata().description(), def.metadata().version(),
                    def.metadata().license(), def.metadata().author()};
  const std::string assets = (fs::path(dir) / kAssetsDir).string();
  ModuleSpec spec;
  try {
    spec = ModuleSpec::from_parts(std::move(parts), std::move(weights), std::move(attached), std::move(md), dir,
                                  fs::is_directory(assets, ec) ? assets : "");
  } catch (const Error& e) {
    throw Error(e.code() == Code::kInvalidArgument ? Code::kCorruption : e.code(), e.message());
  }
  // Trainability is declared in module.pb; keep it as written.
  return spec;
}

std::pair<int64_t, int64_t> get_expected_image_size(const ModuleSpec& spec) {
  const auto& a = spec.attached();
  auto h = a.find(kImageHeightKey), w = a.find(kImageWidthKey);
  if (h == a.end() || w == a.end() || !std::holds_alternative<int64_t>(h->second) ||
      !std::holds_alternative<int64_t>(w->second))
    throw_error(Code::kNotFound, "module " + spec.source() + " has no integer image_height/image_width attached");
  return {std::get<int64_t>(h->second), std::get<int64_t>(w->second)};
}

int64_t get_num_image_channels(const ModuleSpec& spec) {
  const auto& a = spec.attached();
  auto c = a.find(kImageChannelsKey);
  if (c == a.end() || !std::holds_alternative<int64_t>(c->second))
    throw_error(Code::kNotFound, "module " + spec.source() + " has no integer image_channels attached");
  return std::get<int64_t>(c->second);
}

// ---- variables ---------------------------------------------------------------------

const Tensor& VariableRef::value() const { return store_->at(name_); }

void VariableRef::assign(const Tensor& value) {
  store_->assign(name_, value);
}

void VariableRef::assign(float value) {
  const Tensor& cur = store_->at(name_);
  if (cur.dtype() != DType::kFloat32 || cur.num_elements() != 1)
    throw_error(Code::kInvalidArgument, "cannot assign a float scalar to variable '" + name_ + "' of " +
                                            cur.spec_string() + "; assign a tensor");
  assign(Tensor::from_vector<float>(cur.shape(), {value}));
}

VariableRef VariableMap::at(const std::string& name) const {
  if (!store_->contains(name)) {
    throw_error(Code::kNotFound, "no variable named '" + name + "' (variables: " + join(store_->names()) + ")");
  }
  return VariableRef(store_, name);
}

// ---- Module -----------------------------------------------------------------------

struct Module::State {
  Graph graph;
  VariableStore variables;
  std::unique_ptr<Session> session;
};

Module::Module(ModuleSpec spec, TagSet tags, bool trainable)
    : spec_(std::move(spec)), tags_(std::move(tags)), trainable_(trainable), state_(std::make_unique<State>()) {
  const Graph& src = spec_.graph(tags_);
  state_->graph = trainable_ ? src : rebuild_graph(src, [](const Node& n, Attrs& a) {
    if (n.op == "Variable") a.set("trainable", false);
  });
  const TensorMap& weights = spec_.weights();
  for (int id : state_->graph.variables()) {
    const Node& n = state_->graph.node(id);
    auto it = weights.find(n.name);
    state_->variables.set(n.name, it != weights.end() ? it->second.clone() : initial_value(n, state_->graph.seed()));
  }
  state_->session = std::make_unique<Session>(state_->graph, &state_->variables);
}

Module::~Module() = default;
Module::Module(Module&&) noexcept = default;

Graph& Module::graph() { return state_->graph; }
VariableStore& Module::variables() { return state_->variables; }

TensorMap Module::operator()(const std::string& signature, const TensorMap& inputs) {
  const SignatureInfo& si = spec_.signature(signature, tags_);
  const std::string where = "module " + spec_.source() + ", signature '" + signature + "'";
  for (const auto& [k, t] : inputs)
    if (!si.inputs.count(k))
      throw_error(Code::kInvalidArgument, where + " has no input '" + k + "' (inputs: " + join(keys(si.inputs)) + ")");
  FeedList feeds;
  for (const auto& [k, info] : si.inputs) {
    auto it = inputs.find(k);
    if (it == inputs.end())
      throw_error(Code::kInvalidArgument, where + ": missing input '" + k + "' (" +
                                              std::string(dtype_name(info.dtype)) + info.shape.to_string() + ")");
    const Tensor& t = it->second;
    if (!t.defined() || t.dtype() != info.dtype || t.rank() != info.shape.rank() ||
        !t.shape().compatible_with(info.shape))
      throw_error(Code::kInvalidArgument, where + ": input '" + k + "' expects " +
                                              std::string(dtype_name(info.dtype)) + info.shape.to_string() +
                                              ", got " + (t.defined() ? t.spec_string() : "an undefined tensor"));
    feeds.emplace_back(state_->graph.tensor(info.tensor_name), t);
  }
  std::vector<Output> fetches;
  for (const auto& [k, info] : si.outputs) fetches.push_back(state_->graph.tensor(info.tensor_name));
  std::vector<Tensor> values;
  try {
    values = state_->session->run(feeds, fetches);
  } catch (const Error& e) {
    throw e.with_context(where);
  }
  TensorMap out;
  size_t i = 0;
  for (const auto& [k, info] : si.outputs) out[k] = values[i++];
  return out;
}

Tensor Module::call_single(const std::string& signature, const Tensor& input) {
  const SignatureInfo& si = spec_.signature(signature, tags_);
  if (si.inputs.size() != 1)
    throw_error(Code::kInvalidArgument, "module " + spec_.source() + ", signature '" + signature + "' has " +
                                            std::to_string(si.inputs.size()) + " inputs (" + join(keys(si.inputs)) +
                                            "); pass a name->tensor map");
  TensorMap out = (*this)(signature, TensorMap{{si.inputs.begin()->first, input}});
  if (out.size() == 1) return out.begin()->second;
  auto it = out.find("default");
  if (it == out.end())
    throw_error(Code::kInvalidArgument, "module " + spec_.source() + ", signature '" + signature + "' has " +
                                            std::to_string(out.size()) + " outputs and none named 'default'");
  return it->second;
}

Tensor Module::operator()(const Tensor& input) { return call_single(kDefaultSignature, input); }

void Module::export_to(const std::string& dir) const {
  if (dir.empty()) throw_error(Code::kInvalidArgument, "export_to: empty path");
  struct stat st;
  if (::lstat(dir.c_str(), &st) == 0)
    throw_error(Code::kAlreadyExists, "export_to: '" + dir + "' already exists; refusing to overwrite it");
  fs::path target = fs::path(dir).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw_error(Code::kIOError, "export_to: cannot create '" + parent.string() + "': " + ec.message());
  static std::atomic<unsigned> counter{0};
  fs::path tmp = parent / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                           std::to_string(counter++));
  if (!fs::create_directory(tmp, ec) || ec)
    throw_error(Code::kIOError, "export_to: cannot create '" + tmp.string() + "': " + ec.message());
  try {
    // Weights: this instance's current values; variables only in other tag
    // sets keep the spec's weights or their initial values.
    TensorMap weights;
    for (const VariableInfo& v : spec_.variables()) {
      if (state_->variables.contains(v.name)) {
        weights[v.name] = state_->variables.at(v.name);
      } else if (spec_.weights().count(v.name)) {
        weights[v.name] = spec_.weights().at(v.name);
      } else {
        for (const TagSet& tags : spec_.tag_sets()) {
          const Graph& g = spec_.graph(tags);
          if (auto id = g.find(v.name)) {
            weights[v.name] = initial_value(g.node(*id), g.seed());
            break;
          }
        }
      }
    }
    write_file_atomic((tmp / kModuleFile).string(), serialize_deterministic(spec_to_proto(spec_)));
    write_safetensors((tmp / kVariablesFile).string(), weights, {{"format", "hub"}});
    fs::create_directory(tmp / kAssetsDir);
    if (!spec_.assets_dir().empty())
      fs::copy(spec_.assets_dir(), tmp / kAssetsDir, fs::copy_options::recursive);
    for (const auto& [name, contents] : spec_.asset_files())
      write_file_atomic((tmp / kAssetsDir / name).string(), contents);
    // RENAME_NOREPLACE: never replace something that appeared meanwhile.
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) != 0) {
      int err = errno;
      if (err == EEXIST || err == ENOTEMPTY)
        throw_error(Code::kAlreadyExists, "export_to: '" + dir + "' already exists; refusing to overwrite it");
      throw_error(Code::kIOError, "export_to: cannot rename '" + tmp.string() + "' to '" + dir + "': " +
                                      std::strerror(err));
    }
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw_error(Code::kIOError, std::string("export_to '") + dir + "': " + e.what());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

namespace {
// A scope prefix no node of `g` uses yet: base, base_1, base_2, ...
std::string unused_prefix(const GraphBuilder& g, const std::string& base) {
  auto used = [&](const std::string& p) {
    for (int id = 0; id < g.num_nodes(); ++id) {
      const std::string& name = g.node(id).name;
      if (name == p || name.rfind(p + "/", 0) == 0) return true;
    }
    return false;
  };
  if (!used(base)) return base;
  for (int i = 1;; ++i)
    if (!used(base + "_" + std::to_string(i))) return base + "_" + std::to_string(i);
}
}  // namespace

OutputMap Module::apply(const Scope& scope, const OutputMap& inputs, const std::string& signature,
                        VariableStore* initial_values, const std::string& name) const {
  const Graph& src = spec_.graph(tags_);
  const SignatureInfo& si = spec_.signature(signature, tags_);
  GraphBuilder& dst = scope.graph();
  const std::string where = "applying module " + spec_.source() + ", signature '" + signature + "'";
  std::map<int, Output> remap;  // src node id of a signature input -> dst tensor
  for (const auto& [k, o] : inputs)
    if (!si.inputs.count(k))
      throw_error(Code::kInvalidArgument, where + ": no input '" + k + "' (inputs: " + join(keys(si.inputs)) + ")");
  for (const auto& [k, info] : si.inputs) {
    auto it = inputs.find(k);
    if (it == inputs.end()) throw_error(Code::kInvalidArgument, where + ": missing input '" + k + "'");
    if (!it->second.valid() || it->second.node >= dst.num_nodes())
      throw_error(Code::kInvalidArgument, where + ": input '" + k + "' is not a tensor of the target graph");
    const TensorSpec& s = dst.spec(it->second);
    if (s.dtype != info.dtype || s.shape.rank() != info.shape.rank() || !s.shape.compatible_with(info.shape))
      throw_error(Code::kInvalidArgument, where + ": input '" + k + "' expects " + std::string(dtype_name(info.dtype)) +
                                              info.shape.to_string() + ", got " + s.to_string());
    remap[src.tensor(info.tensor_name).node] = it->second;
  }
  const std::string prefix = unused_prefix(dst, scope.prefix().empty() ? name : scope.prefix() + "/" + name);
  std::map<int, int> node_map;  // src node id -> dst node id (copied nodes)
  auto map_output = [&](Output o) -> Output {
    auto r = remap.find(o.node);
    if (r != remap.end()) return r->second;  // placeholders have one output
    return Output{node_map.at(o.node), o.index};
  };
  try {
    for (const Node& n : src.nodes()) {
      if (remap.count(n.id)) continue;
      std::vector<Output> ins;
      for (const Output& in : n.inputs) ins.push_back(map_output(in));
      Attrs attrs = n.attrs;
      const std::string new_name = prefix + "/" + n.name;
      if (n.op == "Variable") {
        attrs.set("trainable", trainable_ && n.attrs.get_bool("trainable"));
        if (initial_values) initial_values->set(new_name, state_->variables.at(n.name).clone());
      }
      node_map[n.id] = dst.add_node(n.op, new_name, std::move(ins), attrs).node;
    }
  } catch (const Error& e) {
    throw e.with_context(where);
  }
  // Update ops and regularization losses only matter when the module trains.
  if (trainable_)
    for (const auto& [key, names] : src.collections())
      for (const auto& n : names) dst.add_to_collection(key, prefix + "/" + n);
  OutputMap out;
  for (const auto& [k, info] : si.outputs) out[k] = map_output(src.tensor(info.tensor_name));
  return out;
}

}  // namespace hub

// ModuleBuilder, ModuleSpec and create_module_spec (hub/module/module.h).
#include <utility>

#include "hub/module/module.h"
#include "hub/module/module_internal.h"

namespace hub {

using module_internal::join;
using module_internal::keys;

std::string tag_set_string(const TagSet& tags) {
  std::string out = "{";
  for (const auto& t : tags) out += (out.size() > 1 ? "," : "") + t;
  return out + "}";
}

// ---- ModuleBuilder ----------------------------------------------------------------

ModuleBuilder::ModuleBuilder() = default;
Graph& ModuleBuilder::graph() { return graph_; }

namespace {
void check_signature_tensor(const Graph& g, Output o, const std::string& where, bool input) {
  if (!o.valid() || o.node >= g.num_nodes() || o.index >= static_cast<int>(g.node(o).outputs.size()))
    throw_error(Code::kInvalidArgument, where + ": not a tensor of this graph");
  if (input && g.node(o).op != "Placeholder")
    throw_error(Code::kInvalidArgument,
                where + ": '" + g.node(o).name + "' is a " + g.node(o).op + ", signature inputs must be Placeholders");
}
}  // namespace

void ModuleBuilder::add_signature(const std::string& name, const OutputMap& inputs, const OutputMap& outputs) {
  if (name.empty()) throw_error(Code::kInvalidArgument, "add_signature: empty signature name");
  if (signatures_.count(name))
    throw_error(Code::kAlreadyExists,
                "add_signature: signature '" + name + "' already exists in tag set " + tag_set_string(tags_));
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

void ModuleBuilder::add_signature(const std::string& name, Output input, Output output, const std::string& input_name,
                                  const std::string& output_name) {
  add_signature(name, OutputMap{{input_name, input}}, OutputMap{{output_name, output}});
}

void ModuleBuilder::attach(const std::string& key, AttachedValue value) { attached_[key] = std::move(value); }

void ModuleBuilder::set_image_info(int64_t height, int64_t width, int64_t channels) {
  if (height <= 0 || width <= 0 || channels <= 0)
    throw_error(Code::kInvalidArgument, "set_image_info: sizes must be positive, got " + std::to_string(height) + "x" +
                                            std::to_string(width) + "x" + std::to_string(channels));
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
  throw_error(Code::kNotFound,
              "module " + impl().source + " has no tag set " + tag_set_string(tags) + " (has " + join(have) + ")");
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
const std::optional<QuantizationInfo>& ModuleSpec::quantization() const { return impl().quantization; }

ModuleSpec ModuleSpec::with_quantization(QuantizationInfo info) const {
  auto impl = std::make_shared<Impl>(this->impl());
  impl->quantization = std::move(info);
  ModuleSpec spec;
  spec.impl_ = std::move(impl);
  return spec;
}
const std::string& ModuleSpec::assets_dir() const { return impl().assets_dir; }
const std::map<std::string, std::string>& ModuleSpec::asset_files() const { return impl().asset_files; }
const std::string& ModuleSpec::source() const { return impl().source; }

ModuleSpec ModuleSpec::from_parts(std::vector<TagSetParts> tag_sets, TensorMap weights,
                                  std::map<std::string, AttachedValue> attached, ModuleMetadata metadata,
                                  std::string source, std::string assets_dir,
                                  std::map<std::string, std::string> asset_files) {
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
      auto check = [&, &name = name](const std::string& key, const TensorInfo& info, bool input) {
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
        throw_error(Code::kInvalidArgument, tw + ": variable '" + n.name + "' is " + std::string(dtype_name(v.dtype)) +
                                                v.shape.to_string() + " here but " +
                                                std::string(dtype_name(it->second.dtype)) +
                                                it->second.shape.to_string() + " in another tag set");
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

}  // namespace hub

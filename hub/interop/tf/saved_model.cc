#include "hub/interop/tf/saved_model.h"

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <optional>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/graph_import.h"
#include "hub/interop/tf/proto/saved_model.pb.h"
#include "hub/interop/tf/proto/tfhub_module.pb.h"
#include "hub/interop/tf/proto/variable.pb.h"
#include "hub/interop/tf/tensor_proto.h"

namespace fs = std::filesystem;

namespace hub::tf {

namespace {

constexpr const char* kSavedModelFile = "saved_model.pb";
constexpr const char* kTfHubModuleFile = "tfhub_module.pb";
// saved_model.pb may hold large constants (frozen graphs): up to 2 GiB, the
// protobuf limit.
constexpr int64_t kMaxSavedModelBytes = (int64_t{2} << 30) - 1;
// TensorFlow's key for the init op's pseudo-signature (TensorFlow 2).
constexpr const char* kInitOpSignature = "__saved_model_init_op";
constexpr const char* kAttachmentCollection = "hub_module_attachments";
constexpr const char* kImageModuleInfoKey = "image_module_info";

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// Which checkpoint key the graph's restore ops read into each variable node:
// Assign / AssignVariableOp whose value comes (through Identity) from output
// k of RestoreV2 read the k-th of its tensor_names.
std::map<std::string, std::string> restore_keys(const FlatGraph& g) {
  auto source = [&](std::string t) -> std::pair<const proto::NodeDef*, int> {
    for (int steps = 0; steps < 64; ++steps) {
      auto [name, k] = split_tensor(t, g.file);
      const proto::NodeDef* n = g.find(name);
      if (!n) return {nullptr, 0};
      if (n->op() == "Identity" && n->input_size() > 0 && n->input(0)[0] != '^') {
        t = n->input(0);
      } else if (n->op() == "IdentityN" && k < n->input_size() && n->input(k)[0] != '^') {
        t = n->input(k);
      } else {
        return {n, k};
      }
    }
    return {nullptr, 0};
  };
  std::map<std::string, std::string> keys;
  for (const auto& n : g.nodes) {
    if ((n.op() != "Assign" && n.op() != "AssignVariableOp") || n.input_size() < 2) continue;
    const proto::NodeDef* var = source(n.input(0)).first;
    if (!var || (var->op() != "VariableV2" && var->op() != "VarHandleOp")) continue;
    auto [restore, k] = source(n.input(1));
    if (!restore || restore->input_size() < 2) continue;
    if (restore->op() != "RestoreV2" && restore->op() != "Restore" && restore->op() != "RestoreSlice") continue;
    const proto::NodeDef* names = source(restore->input(1)).first;
    if (!names || names->op() != "Const" || !names->attr().count("value")) continue;
    std::vector<std::string> keys_here =
        strings_from_proto(names->attr().at("value").tensor(), g.file + ": node " + in_quotes(names->name()));
    const size_t index = restore->op() == "RestoreV2" ? static_cast<size_t>(k) : 0;
    if (index < keys_here.size()) keys.emplace(var->name(), keys_here[index]);
  }
  return keys;
}

// The variables collection's names ("v:0" -> "v") when the graph has it.
std::optional<std::set<std::string>> trainable_set(const proto::MetaGraphDef& mg, const std::string& where) {
  auto it = mg.collection_def().find("trainable_variables");
  if (it == mg.collection_def().end()) return std::nullopt;
  std::set<std::string> out;
  for (const std::string& bytes : it->second.bytes_list().value()) {
    proto::VariableDef v;
    if (!v.ParseFromString(bytes))
      throw_error(Code::kCorruption, where + ": the trainable_variables collection holds an unparsable VariableDef");
    out.insert(split_tensor(v.variable_name(), where).first);
  }
  return out;
}

TagSet tags_of(const proto::MetaGraphDef& mg) {
  return TagSet(mg.meta_info_def().tags().begin(), mg.meta_info_def().tags().end());
}

struct Signature {
  std::string name;
  std::vector<std::pair<std::string, std::string>> inputs, outputs;  // key -> tensor
};

// One MetaGraphDef as one tag set.
ModuleSpec::TagSetParts import_meta_graph(const proto::MetaGraphDef& mg, const TagSet& tags, const std::string& file,
                                          const BundleReader* bundle, const std::string& bundle_prefix,
                                          TensorMap& weights) {
  const std::string where = file + ", tag set " + tag_set_string(tags);
  FlatGraph g = flatten_graph(mg.graph_def(), where);
  GraphImportOptions o;
  std::map<std::string, size_t> feed_index, fetch_index;
  std::vector<Signature> signatures;
  auto tensor_of = [&](const proto::TensorInfo& info, const std::string& what) {
    if (info.encoding_case() != proto::TensorInfo::kName)
      throw_error(Code::kUnimplemented,
                  where + ": " + what + " is a sparse or composite tensor, which is not supported");
    return canonical_tensor(info.name());
  };
  for (const auto& [name, sig] : mg.signature_def()) {
    if (name == kInitOpSignature) continue;
    Signature s{name, {}, {}};
    const std::string sw = "signature " + in_quotes(name);
    if (sig.outputs().empty()) throw_error(Code::kInvalidArgument, where + ": " + sw + " has no outputs");
    for (const auto& [key, info] : sig.inputs()) {
      const std::string t = tensor_of(info, sw + " input " + in_quotes(key));
      if (!feed_index.count(t)) {
        Feed f;
        f.tensor = t;
        if (info.dtype() != proto::DT_INVALID) {
          f.dtype = dtype_from_tf(info.dtype());
          if (!f.dtype)
            throw_error(Code::kInvalidArgument, where + ": " + sw + " input " + in_quotes(key) + " has dtype " +
                                                    tf_dtype_name(info.dtype()) + ", which hub lacks");
        }
        if (info.has_tensor_shape() && !info.tensor_shape().unknown_rank())
          f.shape = shape_from_proto(info.tensor_shape(), where + ": " + sw + " input " + in_quotes(key));
        feed_index[t] = o.feeds.size();
        o.feeds.push_back(f);
      }
      s.inputs.push_back({key, t});
    }
    for (const auto& [key, info] : sig.outputs()) {
      const std::string t = tensor_of(info, sw + " output " + in_quotes(key));
      if (!fetch_index.count(t)) {
        fetch_index[t] = o.fetches.size();
        o.fetches.push_back(t);
      }
      s.outputs.push_back({key, t});
    }
    signatures.push_back(std::move(s));
  }
  if (signatures.empty())
    throw_error(Code::kInvalidArgument,
                where + ": the graph has no signatures (hub calls a module through its signatures)");
  const std::map<std::string, std::string> keys = restore_keys(g);
  if (bundle) {
    o.variable_value = [&](const std::string& var) {
      std::string key = var;
      if (auto k = keys.find(var); k != keys.end()) {
        key = k->second;
      } else if (const proto::NodeDef* n = g.find(var);
                 n && n->attr().count("shared_name") && !n->attr().at("shared_name").s().empty()) {
        key = n->attr().at("shared_name").s();
      }
      if (!bundle->contains(key))
        throw_error(Code::kNotFound, "variable " + in_quotes(var) + ": checkpoint key " + in_quotes(key) +
                                         " is not in " + in_quotes(bundle_index_path(bundle_prefix)));
      return bundle->read(key);
    };
  }
  o.trainable = trainable_set(mg, where);
  o.weights_as_variables = bundle == nullptr;  // no variables: a frozen graph
  ImportedGraph imported = import_graph(g, o);
  for (auto& [name, value] : imported.weights) weights[name] = value;
  ModuleSpec::TagSetParts parts{tags, std::move(imported.graph), {}};
  const Graph& graph = parts.graph;
  auto info_of = [&](Output out) {
    const TensorSpec& spec = graph.spec(out);
    return TensorInfo{graph.tensor_name(out), spec.dtype, spec.shape};
  };
  for (const Signature& s : signatures) {
    SignatureInfo si;
    for (const auto& [key, t] : s.inputs) si.inputs[key] = info_of(imported.feeds[feed_index.at(t)]);
    for (const auto& [key, t] : s.outputs) si.outputs[key] = info_of(imported.fetches[fetch_index.at(t)]);
    parts.signatures[s.name] = std::move(si);
  }
  if (!parts.signatures.count(kDefaultSignature) && parts.signatures.count("serving_default"))
    parts.signatures[kDefaultSignature] = parts.signatures.at("serving_default");
  return parts;
}

struct Loaded {
  proto::SavedModel model;
  std::string file;
  std::string sha256;
};

Loaded load_saved_model(const std::string& dir) {
  Loaded l;
  l.file = (fs::path(dir) / kSavedModelFile).string();
  if (!is_file(l.file)) throw_error(Code::kNotFound, "SavedModel " + in_quotes(dir) + ": no " + kSavedModelFile);
  const std::string bytes = read_file_bytes(l.file, kMaxSavedModelBytes);
  if (!l.model.ParseFromString(bytes))
    throw_error(Code::kCorruption,
                in_quotes(l.file) + " is not a SavedModel (it does not parse; truncated or damaged?)");
  if (l.model.meta_graphs().empty()) throw_error(Code::kCorruption, in_quotes(l.file) + " holds no graphs");
  l.sha256 = sha256_hex(bytes);
  return l;
}

// The module of a loaded SavedModel; `format` names it in the attached info.
ModuleSpec to_module(const std::string& dir, const Loaded& l, const SavedModelImportOptions& options,
                     const std::string& format, std::map<std::string, AttachedValue> attached) {
  const std::string prefix = (fs::path(dir) / "variables" / "variables").string();
  std::optional<BundleReader> bundle;
  if (is_bundle_prefix(prefix)) bundle.emplace(prefix);
  // Tag sets, with {"serve"} as {} when no graph is tagged {}.
  std::vector<TagSet> tags;
  bool has_empty = false;
  for (const auto& mg : l.model.meta_graphs()) has_empty = has_empty || mg.meta_info_def().tags().empty();
  for (const auto& mg : l.model.meta_graphs()) {
    TagSet t = tags_of(mg);
    if (!has_empty && t == TagSet{"serve"}) t = {};
    for (const TagSet& seen : tags)
      if (seen == t)
        throw_error(Code::kCorruption, in_quotes(l.file) + ": two graphs have the tag set " + tag_set_string(t));
    tags.push_back(t);
  }
  for (const TagSet& want : options.tag_sets)
    if (std::find(tags.begin(), tags.end(), want) == tags.end())
      throw_error(Code::kNotFound, in_quotes(l.file) + " has no graph with the tag set " + tag_set_string(want));
  std::vector<ModuleSpec::TagSetParts> parts;
  TensorMap weights;
  for (int i = 0; i < l.model.meta_graphs_size(); ++i) {
    if (!options.tag_sets.empty() &&
        std::find(options.tag_sets.begin(), options.tag_sets.end(), tags[i]) == options.tag_sets.end())
      continue;
    parts.push_back(
        import_meta_graph(l.model.meta_graphs(i), tags[i], l.file, bundle ? &*bundle : nullptr, prefix, weights));
  }
  const std::string& version = l.model.meta_graphs(0).meta_info_def().tensorflow_version();
  attached.merge(provenance(format, l.sha256, version.empty() ? "" : "TensorFlow " + version));
  ModuleMetadata md;
  md.name = fs::path(dir).lexically_normal().filename().string();
  if (md.name.empty()) md.name = fs::path(dir).lexically_normal().parent_path().filename().string();
  const std::string assets = (fs::path(dir) / "assets").string();
  std::error_code ec;
  return ModuleSpec::from_parts(std::move(parts), std::move(weights), std::move(attached), md, dir,
                                fs::is_directory(assets, ec) ? assets : "");
}

}  // namespace

bool is_saved_model_dir(const std::string& dir) { return is_file((fs::path(dir) / kSavedModelFile).string()); }

bool is_tfhub_module_dir(const std::string& dir) { return is_file((fs::path(dir) / kTfHubModuleFile).string()); }

ModuleSpec import_saved_model(const std::string& dir, const SavedModelImportOptions& options) {
  return to_module(dir, load_saved_model(dir), options, "tf_saved_model", {});
}

ModuleSpec import_tfhub_module(const std::string& dir, const SavedModelImportOptions& options) {
  const std::string def_file = (fs::path(dir) / kTfHubModuleFile).string();
  if (!is_file(def_file)) throw_error(Code::kNotFound, "TF Hub module " + in_quotes(dir) + ": no " + kTfHubModuleFile);
  proto::ModuleDef def;
  if (!def.ParseFromString(read_file_bytes(def_file, 1 << 20)))
    throw_error(Code::kCorruption, in_quotes(def_file) + " does not parse as a TF Hub ModuleDef");
  if (def.format() != proto::ModuleDef::FORMAT_V3)
    throw_error(Code::kUnimplemented, in_quotes(def_file) + ": module format " + std::to_string(def.format()) +
                                          " is not supported (only format 3, TensorFlow 1's hub.Module)");
  if (!def.required_features().empty())
    throw_error(Code::kUnimplemented, in_quotes(def_file) + ": required feature " +
                                          in_quotes(def.required_features(0)) + " is not supported");
  Loaded l = load_saved_model(dir);
  // The image size: the inference graph's image_module_info attachment.
  std::map<std::string, AttachedValue> attached;
  const proto::MetaGraphDef* inference = &l.model.meta_graphs(0);
  for (const auto& mg : l.model.meta_graphs())
    if (mg.meta_info_def().tags().empty()) inference = &mg;
  if (auto c = inference->collection_def().find(kAttachmentCollection); c != inference->collection_def().end()) {
    for (const std::string& bytes : c->second.bytes_list().value()) {
      proto::ModuleAttachment a;
      if (!a.ParseFromString(bytes))
        throw_error(Code::kCorruption, in_quotes(l.file) + ": the " + kAttachmentCollection +
                                           " collection holds an unparsable ModuleAttachment");
      if (a.key() != kImageModuleInfoKey) continue;
      proto::ImageModuleInfo info;
      if (!info.ParseFromString(a.value()))
        throw_error(Code::kCorruption,
                    in_quotes(l.file) + ": attachment " + kImageModuleInfoKey + " does not parse as ImageModuleInfo");
      if (info.has_default_image_size() && info.default_image_size().height() > 0 &&
          info.default_image_size().width() > 0) {
        attached[kImageHeightKey] = int64_t{info.default_image_size().height()};
        attached[kImageWidthKey] = int64_t{info.default_image_size().width()};
        attached[kImageChannelsKey] = int64_t{3};
      }
    }
  }
  if (!attached.count(kImageHeightKey)) {
    auto sig = inference->signature_def().find(kDefaultSignature);
    if (sig != inference->signature_def().end()) {
      auto images = sig->second.inputs().find("images");
      if (images != sig->second.inputs().end() && images->second.tensor_shape().dim_size() == 4) {
        const auto& d = images->second.tensor_shape().dim();
        if (d[1].size() > 0 && d[2].size() > 0) {
          attached[kImageHeightKey] = d[1].size();
          attached[kImageWidthKey] = d[2].size();
          attached[kImageChannelsKey] = d[3].size() > 0 ? d[3].size() : int64_t{3};
        }
      }
    }
  }
  return to_module(dir, l, options, "tf_hub_module", std::move(attached));
}

}  // namespace hub::tf

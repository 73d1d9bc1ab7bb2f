// load_module_spec and the image-info accessors (hub/module/module.h).
#include <google/protobuf/arena.h>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <filesystem>

#include "hub/core/fileio.h"
#include "hub/module/module.h"
#include "hub/module/module_internal.h"
#include "hub/module/module_proto.h"
#include "hub/module/safetensors.h"
#include "signatures/upgrade.h"

namespace fs = std::filesystem;

namespace hub {

using module_internal::corrupt;
using module_internal::kAssetsDir;
using module_internal::kModuleFile;
using module_internal::kVariablesFile;

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
  // Block sizes are multiples of 8: the arena places cleanup records (of a
  // parsed message's unknown fields) back from a block's end, and a block of
  // another size misaligned them (undefined behaviour; found by
  // tests/fuzz/module_pb.cc).
  arena_options.start_block_size = (std::max<size_t>(4096, 2 * bytes.size()) + 7) & ~size_t{7};
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
                             it->second.shape.to_string() + " but its graph node is " +
                             p.graph.node(id).outputs[0].to_string());
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
      if (!declared.count(name)) corrupt(st_path, "tensor '" + name + "' is not a variable declared in module.pb");
      weights.emplace(name, std::move(t));
    }
  }

  std::map<std::string, AttachedValue> attached;
  for (const auto& [k, a] : def.attached()) {
    switch (a.value_case()) {
      case AttachedValueDef::kIntValue:
        attached[k] = a.int_value();
        break;
      case AttachedValueDef::kFloatValue:
        attached[k] = a.float_value();
        break;
      case AttachedValueDef::kStringValue:
        attached[k] = a.string_value();
        break;
      default:
        corrupt(pb_path, "attached value '" + k + "' has no value");
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
  if (def.has_quantization()) {
    const QuantizationDef& qd = def.quantization();
    QuantizationInfo q{qd.method(), qd.calibration_images(), qd.per_channel(), {}, {}};
    for (const auto& a : qd.activations())
      q.activations.push_back({a.tensor(), a.scale(), a.zero_point(), TensorRange{a.min(), a.max()}});
    for (const auto& w : qd.weights()) q.weights.push_back({w.variable(), w.scales(), w.min_scale(), w.max_scale()});
    spec = spec.with_quantization(std::move(q));
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

}  // namespace hub

#include "hub/interop/tf/tfjs.h"

#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/core/json.h"
#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/graph_import.h"
#include "hub/interop/tf/proto/meta_graph.pb.h"
#include "hub/interop/tf/tensor_proto.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hub::tf {

namespace {

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// A field of an untrusted JSON object, with its type checked.
const json& field(const json& obj, const char* key, json::value_t type, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) throw_error(Code::kCorruption, where + ": no \"" + key + "\"");
  const bool ok = type == json::value_t::number_float ? it->is_number() : it->type() == type;
  if (!ok) throw_error(Code::kCorruption, where + ": \"" + key + "\" has the wrong type");
  return *it;
}

// The shard at `rel` inside `dir`: relative, without "..", a regular file
// that stays inside `dir` after resolving links.
std::string shard_path(const fs::path& dir, const std::string& rel, const std::string& where) {
  const fs::path p(rel);
  bool bad = rel.empty() || p.is_absolute();
  for (const auto& part : p) bad = bad || part == "..";
  if (bad)
    throw_error(Code::kInvalidArgument,
                where + ": shard path " + in_quotes(rel) + " must be relative and stay in the model's folder");
  std::error_code ec;
  const fs::path full = fs::weakly_canonical(dir / p, ec);
  const fs::path root = fs::weakly_canonical(dir, ec);
  const std::string f = full.string(), r = root.string() + "/";
  if (ec || f.compare(0, r.size(), r) != 0)
    throw_error(Code::kInvalidArgument, where + ": shard " + in_quotes(rel) + " leaves the model's folder");
  struct stat st;
  if (::stat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw_error(Code::kNotFound, where + ": shard " + in_quotes(rel) + " is not a regular file");
  return f;
}

// Decodes one weight from `bytes` at `offset`; advances `offset`.
Tensor decode_weight(const json& w, const std::string& bytes, size_t& offset, const std::string& where) {
  const std::string name = field(w, "name", json::value_t::string, where).get<std::string>();
  const std::string wwhere = where + ", weight " + in_quotes(name);
  const json& shape = field(w, "shape", json::value_t::array, wwhere);
  std::vector<int64_t> dims;
  int64_t n = 1;
  for (const json& d : shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) throw_error(Code::kCorruption, wwhere + ": a bad shape");
    const int64_t v = d.get<int64_t>();
    if (v > 0 && n > kMaxProtoElements / v) throw_error(Code::kCorruption, wwhere + ": the shape is too large");
    n *= v;
    dims.push_back(v);
  }
  const std::string dtype = field(w, "dtype", json::value_t::string, wwhere).get<std::string>();
  DType hub_dtype;
  if (dtype == "float32")
    hub_dtype = DType::kFloat32;
  else if (dtype == "int32")
    hub_dtype = DType::kInt32;
  else if (dtype == "bool")
    hub_dtype = DType::kBool;
  else
    throw_error(Code::kUnimplemented,
                wwhere + ": dtype " + in_quotes(dtype) + " is not supported (float32, int32, bool)");
  std::string qdtype;
  double scale = 1, min = 0;
  if (auto q = w.find("quantization"); q != w.end()) {
    if (!q->is_object()) throw_error(Code::kCorruption, wwhere + ": \"quantization\" must be an object");
    qdtype = field(*q, "dtype", json::value_t::string, wwhere + " quantization").get<std::string>();
    if (qdtype == "uint8" || qdtype == "uint16") {
      if (hub_dtype == DType::kBool)
        throw_error(Code::kUnimplemented, wwhere + ": quantized bool weights are not supported");
      scale = field(*q, "scale", json::value_t::number_float, wwhere + " quantization").get<double>();
      min = field(*q, "min", json::value_t::number_float, wwhere + " quantization").get<double>();
    } else if (qdtype == "float16") {
      if (hub_dtype != DType::kFloat32)
        throw_error(Code::kUnimplemented, wwhere + ": float16 quantization of " + dtype + " is not supported");
    } else {
      throw_error(Code::kUnimplemented,
                  wwhere + ": quantization dtype " + in_quotes(qdtype) + " is not supported (uint8, uint16, float16)");
    }
  }
  const size_t per = qdtype.empty() ? dtype_size(hub_dtype) : (qdtype == "uint8" ? 1 : 2);
  const size_t need = static_cast<size_t>(n) * per;
  if (offset > bytes.size() || bytes.size() - offset < need)
    throw_error(Code::kCorruption, wwhere + ": the group's shards hold " + std::to_string(bytes.size()) +
                                       " bytes, this weight needs bytes " + std::to_string(offset) + " to " +
                                       std::to_string(offset + need));
  Tensor t(hub_dtype, Shape(dims));
  const auto* src = reinterpret_cast<const unsigned char*>(bytes.data() + offset);
  offset += need;
  auto q_at = [&](int64_t i) -> uint32_t {
    if (qdtype == "uint8") return src[i];
    uint16_t v;
    std::memcpy(&v, src + 2 * i, 2);
    return v;
  };
  if (qdtype.empty()) {
    std::memcpy(t.raw_data(), src, need);
    if (hub_dtype == DType::kBool)
      for (int64_t i = 0; i < n; ++i)
        if (src[i] > 1) throw_error(Code::kCorruption, wwhere + ": bool value " + std::to_string(src[i]));
  } else if (qdtype == "float16") {
    for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = half_to_float(static_cast<uint16_t>(q_at(i)));
  } else if (hub_dtype == DType::kFloat32) {
    for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(q_at(i) * scale + min);
  } else {
    for (int64_t i = 0; i < n; ++i)
      t.data<int32_t>()[i] = static_cast<int32_t>(std::floor(q_at(i) * scale + min + 0.5));
  }
  return t;
}

template <class Message>
void from_json(const json& value, Message* out, const std::string& where) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(value.dump(), out, options);
  if (!status.ok()) throw_error(Code::kCorruption, where + ": " + std::string(status.message()));
}

bool has_values(const proto::TensorProto& t) {
  return !t.tensor_content().empty() || t.float_val_size() || t.int_val_size() || t.int64_val_size() ||
         t.bool_val_size() || t.half_val_size() || t.double_val_size() || t.string_val_size();
}

std::string strip_index(const std::string& key) {
  return key.size() > 2 && key.compare(key.size() - 2, 2, ":0") == 0 ? key.substr(0, key.size() - 2) : key;
}

}  // namespace

bool is_tfjs_graph_model(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxModelJsonBytes) return false;
  try {
    json j = parse_json(read_file_bytes(path, kMaxModelJsonBytes), path);
    if (!j.is_object()) return false;
    auto f = j.find("format");
    if (f != j.end()) return f->is_string() && f->get<std::string>() == "graph-model";
    auto t = j.find("modelTopology");
    return t != j.end() && t->is_object() && t->contains("node") && (*t)["node"].is_array();
  } catch (const Error&) {
    return false;
  }
}

ModuleSpec import_tfjs(const std::string& model_json) {
  const std::string where = "TF.js model " + in_quotes(model_json);
  const std::string text = read_file_bytes(model_json, kMaxModelJsonBytes);
  const json j = parse_json(text, where);
  if (!j.is_object()) throw_error(Code::kCorruption, where + ": not a JSON object");
  if (auto f = j.find("format"); f != j.end() && !(f->is_string() && f->get<std::string>() == "graph-model"))
    throw_error(Code::kCorruption,
                where + ": format is " +
                    (f->is_string() ? in_quotes(f->get<std::string>()) : std::string("not a string")) +
                    ", not 'graph-model' (a TF.js layers model is not a graph model)");
  proto::GraphDef graph;
  from_json(field(j, "modelTopology", json::value_t::object, where), &graph, where + ": modelTopology");

  // Weights: the values of Const nodes, by name.
  std::map<std::string, Tensor> weights;
  const fs::path dir = fs::path(model_json).parent_path().empty() ? fs::path(".") : fs::path(model_json).parent_path();
  int64_t total = 0;
  if (auto m = j.find("weightsManifest"); m != j.end()) {
    if (!m->is_array()) throw_error(Code::kCorruption, where + ": \"weightsManifest\" must be a list");
    for (size_t g = 0; g < m->size(); ++g) {
      const json& group = (*m)[g];
      const std::string gwhere = where + ", weight group " + std::to_string(g);
      if (!group.is_object()) throw_error(Code::kCorruption, gwhere + ": not an object");
      std::string bytes;
      for (const json& p : field(group, "paths", json::value_t::array, gwhere)) {
        if (!p.is_string()) throw_error(Code::kCorruption, gwhere + ": a path is not a string");
        const std::string file = shard_path(dir, p.get<std::string>(), gwhere);
        std::string shard = read_file_bytes(file, kMaxWeightBytes - total);
        total += static_cast<int64_t>(shard.size());
        bytes += shard;
      }
      size_t offset = 0;
      for (const json& w : field(group, "weights", json::value_t::array, gwhere)) {
        if (!w.is_object()) throw_error(Code::kCorruption, gwhere + ": a weight is not an object");
        Tensor t = decode_weight(w, bytes, offset, gwhere);
        const std::string name = w["name"].get<std::string>();
        if (!weights.emplace(name, t).second)
          throw_error(Code::kCorruption, gwhere + ": weight " + in_quotes(name) + " appears twice");
      }
      if (offset != bytes.size())
        throw_error(Code::kCorruption, gwhere + ": its shards hold " + std::to_string(bytes.size()) +
                                           " bytes, its weights need " + std::to_string(offset));
    }
  }
  for (const auto& n : graph.node()) {
    if (n.op() != "Const" || weights.count(n.name())) continue;
    auto v = n.attr().find("value");
    if (v == n.attr().end() || (!has_values(v->second.tensor()) && v->second.tensor().tensor_shape().dim_size() > 0 &&
                                shape_from_proto(v->second.tensor().tensor_shape(), where).num_elements() != 0))
      throw_error(Code::kCorruption,
                  where + ": Const node " + in_quotes(n.name()) + " has no weight in weightsManifest");
  }

  // Inputs and outputs: the signature's, else placeholders and sinks.
  FlatGraph flat = flatten_graph(graph, where);
  GraphImportOptions o;
  o.const_values = &weights;
  std::vector<std::string> in_keys, out_keys;
  if (auto s = j.find("signature"); s != j.end() && s->is_object() && !s->empty()) {
    proto::SignatureDef sig;
    from_json(*s, &sig, where + ": signature");
    for (const auto& [key, info] : sig.inputs()) {
      Feed f;
      f.tensor = canonical_tensor(info.name());
      if (info.dtype() != proto::DT_INVALID) f.dtype = dtype_from_tf(info.dtype());
      if (info.has_tensor_shape() && !info.tensor_shape().unknown_rank())
        f.shape = shape_from_proto(info.tensor_shape(), where + ": signature input " + in_quotes(key));
      o.feeds.push_back(f);
      in_keys.push_back(strip_index(key));
    }
    for (const auto& [key, info] : sig.outputs()) {
      o.fetches.push_back(canonical_tensor(info.name()));
      out_keys.push_back(strip_index(key));
    }
  } else {
    std::set<std::string> read;
    for (const auto& n : flat.nodes)
      for (const auto& in : n.input()) read.insert(split_tensor(in[0] == '^' ? in.substr(1) : in, where).first);
    for (const auto& n : flat.nodes) {
      if (n.op() == "Placeholder") {
        o.feeds.push_back({n.name() + ":0", std::nullopt, std::nullopt});
        in_keys.push_back(n.name());
      } else if (!read.count(n.name()) && n.op() != "Const" && n.op() != "NoOp") {
        o.fetches.push_back(n.name() + ":0");
        out_keys.push_back(n.name());
      }
    }
  }
  if (o.fetches.empty()) throw_error(Code::kCorruption, where + ": the model has no outputs");
  ImportedGraph imported = import_graph(flat, o);
  SignatureInfo si;
  auto info_of = [&](Output out) {
    const TensorSpec& spec = imported.graph.spec(out);
    return TensorInfo{imported.graph.tensor_name(out), spec.dtype, spec.shape};
  };
  for (size_t k = 0; k < in_keys.size(); ++k)
    if (!si.inputs.emplace(in_keys[k], info_of(imported.feeds[k])).second)
      throw_error(Code::kCorruption, where + ": two inputs are named " + in_quotes(in_keys[k]));
  for (size_t k = 0; k < out_keys.size(); ++k)
    if (!si.outputs.emplace(out_keys[k], info_of(imported.fetches[k])).second)
      throw_error(Code::kCorruption, where + ": two outputs are named " + in_quotes(out_keys[k]));

  std::string producer;
  for (const char* key : {"convertedBy", "generatedBy"}) {
    auto p = j.find(key);
    if (producer.empty() && p != j.end() && p->is_string()) producer = p->get<std::string>();
  }
  std::map<std::string, AttachedValue> attached = provenance("tfjs_graph_model", sha256_hex(text), producer);
  ModuleMetadata md;
  md.name = fs::path(model_json).parent_path().filename().string();
  std::vector<ModuleSpec::TagSetParts> parts;
  parts.push_back({TagSet{}, std::move(imported.graph), {{kDefaultSignature, std::move(si)}}});
  return ModuleSpec::from_parts(std::move(parts), std::move(imported.weights), std::move(attached), md, model_json);
}

}  // namespace hub::tf

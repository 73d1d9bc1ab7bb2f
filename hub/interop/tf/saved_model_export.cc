#include "hub/interop/tf/saved_model_export.h"

#include <filesystem>
#include <set>

#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/ops.h"
#include "hub/interop/tf/proto/saved_model.pb.h"
#include "hub/interop/tf/proto/variable.pb.h"
#include "hub/interop/tf/tensor_proto.h"
#include "hub/ops/variables.h"

namespace fs = std::filesystem;

namespace hub::tf {

namespace {

// The GraphDef version written: TensorFlow 1.13's, which every later
// TensorFlow reads and which all the ops written here have.
constexpr int kGraphDefProducer = 27;

class Exporter;

class Context final : public ExportContext {
 public:
  Context(Exporter& e, const Node& node) : e_(e), node_(node) {}
  const Node& node() const override { return node_; }
  const TensorSpec& input_spec(int i) const override;
  std::string input(int i) const override;
  proto::NodeDef& add(const std::string& name, const std::string& op, std::vector<std::string> inputs) override;
  std::string constant(const std::string& name, const Tensor& value) override;
  void set_output(int k, const std::string& tensor) override;

 private:
  Exporter& e_;
  const Node& node_;
};

class Exporter {
 public:
  Exporter(const ModuleSpec& spec, const SavedModelExportOptions& options)
      : spec_(spec), options_(options), g_(spec.graph(options.tags)) {}

  proto::SavedModel run();
  const std::map<std::string, Tensor>& variables() const { return variable_values_; }

  // Context's services.
  const Graph& graph() const { return g_; }
  std::string tensor(Output o) const {
    auto it = tensors_.find(o);
    HUB_CHECK(it != tensors_.end(), "export: no TensorFlow tensor for an input of " + g_.node(o).name);
    return it->second;
  }
  void set_tensor(Output o, const std::string& t) { tensors_[o] = t; }
  const std::string& name_of(const Node& n) const { return names_.at(n.id); }
  std::string unique(const std::string& base) {
    std::string name = base;
    for (int k = 1; used_.count(name); ++k) name = base + "_" + std::to_string(k);
    used_.insert(name);
    return name;
  }
  proto::NodeDef& add_node(const std::string& name, const std::string& op, std::vector<std::string> inputs) {
    proto::NodeDef* n = out_->add_node();  // RepeatedPtrField: stable addresses
    n->set_name(name);
    n->set_op(op);
    for (auto& in : inputs) n->add_input(std::move(in));
    return *n;
  }
  std::string add_const(const std::string& name, const Tensor& value) {
    proto::NodeDef& n = add_node(name, "Const", {});
    set_type(n, "dtype", value.dtype());
    tensor_to_proto(value, (*n.mutable_attr())["value"].mutable_tensor());
    return name;
  }

 private:
  std::vector<int> needed() const;
  void export_variable(const Node& n);
  void saver(proto::MetaGraphDef& mg);

  const ModuleSpec& spec_;
  const SavedModelExportOptions& options_;
  const Graph& g_;
  proto::GraphDef* out_ = nullptr;
  std::map<int, std::string> names_;  // hub node id -> its TensorFlow name
  std::set<std::string> used_;
  std::map<Output, std::string> tensors_;
  // Variables in the order written: TF name, hub node.
  std::vector<std::pair<std::string, const Node*>> variables_;
  std::map<std::string, Tensor> variable_values_;
};

const TensorSpec& Context::input_spec(int i) const { return e_.graph().spec(node_.inputs.at(i)); }

std::string Context::input(int i) const { return e_.tensor(node_.inputs.at(i)); }

proto::NodeDef& Context::add(const std::string& name, const std::string& op, std::vector<std::string> inputs) {
  const std::string full = name.empty() ? e_.name_of(node_) : e_.unique(e_.name_of(node_) + "/" + name);
  return e_.add_node(full, op, std::move(inputs));
}

std::string Context::constant(const std::string& name, const Tensor& value) {
  return e_.add_const(e_.unique(e_.name_of(node_) + "/" + name), value);
}

void Context::set_output(int k, const std::string& tensor) {
  const std::string t = tensor.size() > 2 && tensor.compare(tensor.size() - 2, 2, ":0") == 0
                            ? tensor.substr(0, tensor.size() - 2)
                            : tensor;
  e_.set_tensor({node_.id, k}, t);
}

std::vector<int> Exporter::needed() const {
  std::vector<bool> need(g_.num_nodes(), false);
  std::vector<int> stack;
  for (const std::string& sig : spec_.signature_names(options_.tags)) {
    const SignatureInfo& si = spec_.signature(sig, options_.tags);
    for (const auto* side : {&si.inputs, &si.outputs})
      for (const auto& [key, info] : *side) stack.push_back(g_.tensor(info.tensor_name).node);
  }
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (need[id]) continue;
    need[id] = true;
    for (Output in : g_.node(id).inputs) stack.push_back(in.node);
  }
  std::vector<int> out;
  for (int id = 0; id < g_.num_nodes(); ++id)
    if (need[id]) out.push_back(id);
  return out;
}

// VariableV2 `v` read through `v/read`, with a zero initializer v/Assign.
void Exporter::export_variable(const Node& n) {
  const std::string& name = names_.at(n.id);
  const DType dtype = n.attrs.get_dtype("dtype");
  const Shape& shape = n.attrs.get_shape("shape");
  proto::NodeDef& v = add_node(name, "VariableV2", {});
  set_type(v, "dtype", dtype);
  shape_to_proto(shape, (*v.mutable_attr())["shape"].mutable_shape());
  (*v.mutable_attr())["container"].set_s("");
  (*v.mutable_attr())["shared_name"].set_s("");
  std::vector<int32_t> dims(shape.dims().begin(), shape.dims().end());
  const std::string dims_const = add_const(unique(name + "/Initializer/zeros/shape_as_tensor"),
                                           Tensor::from_vector<int32_t>({static_cast<int64_t>(dims.size())}, dims));
  const std::string zero = add_const(unique(name + "/Initializer/zeros/Const"), Tensor::zeros(dtype, {}));
  proto::NodeDef& fill = add_node(unique(name + "/Initializer/zeros"), "Fill", {dims_const, zero});
  set_type(fill, "T", dtype);
  set_type(fill, "index_type", DType::kInt32);
  proto::NodeDef& assign = add_node(unique(name + "/Assign"), "Assign", {name, fill.name()});
  set_type(assign, "T", dtype);
  (*assign.mutable_attr())["validate_shape"].set_b(true);
  (*assign.mutable_attr())["use_locking"].set_b(true);
  (*assign.mutable_attr())["_class"].mutable_list()->add_s("loc:@" + name);
  proto::NodeDef& read = add_node(unique(name + "/read"), "Identity", {name});
  set_type(read, "T", dtype);
  (*read.mutable_attr())["_class"].mutable_list()->add_s("loc:@" + name);
  set_tensor({n.id, 0}, read.name());
  variables_.push_back({name, &n});
  const std::string& hub_name = n.name;
  variable_values_[name] = spec_.weights().count(hub_name) ? spec_.weights().at(hub_name) : initial_value(n, g_.seed());
}

// The TF1 saver (tf.compat.v1.train.Saver, format V2, not sharded): save/Const
// is the checkpoint prefix, save/SaveV2 writes every variable, save/RestoreV2
// reads them back through save/Assign_k, run together by save/restore_all.
void Exporter::saver(proto::MetaGraphDef& mg) {
  if (variables_.empty()) return;
  std::vector<std::string> names;
  std::vector<std::string> slices;
  for (const auto& [name, node] : variables_) {
    names.push_back(name);
    slices.push_back("");
  }
  // A DT_STRING Const: a vector, or the scalar values[0].
  auto strings = [&](const std::string& name, const std::vector<std::string>& values, bool vector) {
    proto::NodeDef& n = add_node(unique(name), "Const", {});
    (*n.mutable_attr())["dtype"].set_type(proto::DT_STRING);
    proto::TensorProto* t = (*n.mutable_attr())["value"].mutable_tensor();
    t->set_dtype(proto::DT_STRING);
    if (vector) t->mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(values.size()));
    for (const auto& v : values) t->add_string_val(v);
    return n.name();
  };
  auto placeholder_with_default = [&](const std::string& name, const std::string& input) -> proto::NodeDef& {
    proto::NodeDef& n = add_node(unique(name), "PlaceholderWithDefault", {input});
    (*n.mutable_attr())["dtype"].set_type(proto::DT_STRING);
    (*n.mutable_attr())["shape"].mutable_shape();
    return n;
  };
  proto::NodeDef& filename = placeholder_with_default(
      "save/Const", placeholder_with_default("save/filename", strings("save/filename/input", {"model"}, false)).name());
  std::vector<std::string> save_in = {filename.name(), strings("save/SaveV2/tensor_names", names, true),
                                      strings("save/SaveV2/shape_and_slices", slices, true)};
  for (const auto& [name, node] : variables_) save_in.push_back(name);
  proto::NodeDef& save = add_node(unique("save/SaveV2"), "SaveV2", save_in);
  proto::NodeDef& dep = add_node(unique("save/control_dependency"), "Identity", {filename.name(), "^" + save.name()});
  (*dep.mutable_attr())["T"].set_type(proto::DT_STRING);
  (*dep.mutable_attr())["_class"].mutable_list()->add_s("loc:@" + filename.name());
  proto::NodeDef& restore = add_node(unique("save/RestoreV2"), "RestoreV2",
                                     {filename.name(), strings("save/RestoreV2/tensor_names", names, true),
                                      strings("save/RestoreV2/shape_and_slices", slices, true)});
  std::vector<std::string> assigns;
  for (size_t k = 0; k < variables_.size(); ++k) {
    const auto& [name, node] = variables_[k];
    const DType dtype = node->attrs.get_dtype("dtype");
    (*save.mutable_attr())["dtypes"].mutable_list()->add_type(static_cast<proto::DataType>(dtype_to_tf(dtype)));
    (*restore.mutable_attr())["dtypes"].mutable_list()->add_type(static_cast<proto::DataType>(dtype_to_tf(dtype)));
    std::string value = restore.name(), assign = "save/Assign";
    if (k > 0) {
      value += ':';
      value += std::to_string(k);
      assign += '_';
      assign += std::to_string(k);
    }
    proto::NodeDef& a = add_node(unique(assign), "Assign", {name, value});
    set_type(a, "T", dtype);
    (*a.mutable_attr())["validate_shape"].set_b(true);
    (*a.mutable_attr())["use_locking"].set_b(true);
    (*a.mutable_attr())["_class"].mutable_list()->add_s("loc:@" + name);
    assigns.push_back("^" + a.name());
  }
  proto::NodeDef& all = add_node(unique("save/restore_all"), "NoOp", assigns);
  proto::SaverDef& s = *mg.mutable_saver_def();
  s.set_filename_tensor_name(filename.name() + ":0");
  s.set_save_tensor_name(dep.name() + ":0");
  s.set_restore_op_name(all.name());
  s.set_max_to_keep(5);
  s.set_sharded(false);
  s.set_keep_checkpoint_every_n_hours(10000.0f);
  s.set_version(proto::SaverDef::V2);
  // The variables collections TensorFlow 1 rebuilds its Variable objects from.
  for (const auto& [name, node] : variables_) {
    proto::VariableDef vd;
    vd.set_variable_name(name + ":0");
    vd.set_initial_value_name(name + "/Initializer/zeros:0");
    vd.set_initializer_name(name + "/Assign");
    vd.set_snapshot_name(name + "/read:0");
    const bool trainable = node->attrs.get_bool("trainable");
    vd.set_trainable(trainable);
    (*mg.mutable_collection_def())["variables"].mutable_bytes_list()->add_value(vd.SerializeAsString());
    if (trainable)
      (*mg.mutable_collection_def())["trainable_variables"].mutable_bytes_list()->add_value(vd.SerializeAsString());
  }
}

proto::SavedModel Exporter::run() {
  proto::SavedModel sm;
  sm.set_saved_model_schema_version(1);
  proto::MetaGraphDef& mg = *sm.add_meta_graphs();
  for (const std::string& t : options_.saved_model_tags) mg.mutable_meta_info_def()->add_tags(t);
  out_ = mg.mutable_graph_def();
  out_->mutable_versions()->set_producer(kGraphDefProducer);
  const std::vector<int> ids = needed();
  for (int id : ids) names_[id] = unique(tf_node_name(g_.node(id).name));
  const auto& exporters = op_exporters();
  std::vector<std::string> unsupported;
  std::set<int> downstream;  // skipped: an input could not be exported (that node is reported)
  for (int id : ids) {
    const Node& n = g_.node(id);
    bool inputs_ok = true;
    for (Output in : n.inputs) inputs_ok = inputs_ok && tensors_.count(in);
    if (!inputs_ok) {
      downstream.insert(id);
      continue;
    }
    if (n.op == "Variable") {
      export_variable(n);
    } else if (n.op == "Placeholder") {
      proto::NodeDef& p = add_node(names_.at(id), "Placeholder", {});
      set_type(p, "dtype", n.attrs.get_dtype("dtype"));
      shape_to_proto(n.attrs.get_shape("shape"), (*p.mutable_attr())["shape"].mutable_shape());
      set_tensor({id, 0}, p.name());
    } else if (n.op == "Const") {
      set_tensor({id, 0}, add_const(names_.at(id), n.attrs.get_tensor("value")));
    } else if (auto it = exporters.find(n.op); it != exporters.end()) {
      Context c(*this, n);
      try {
        it->second(c);
      } catch (const Error& e) {
        unsupported.push_back(e.message());
      }
    } else {
      unsupported.push_back("hub node '" + n.name + "' (" + n.op + "): op " + n.op + " has no TensorFlow equivalent");
    }
  }
  // Every hub tensor a needed node or a signature reads must have a TensorFlow tensor.
  auto check = [&](Output o, const std::string& reader) {
    if (tensors_.count(o) || downstream.count(o.node)) return;
    const Node& n = g_.node(o);
    bool reported = false;
    for (const std::string& u : unsupported) reported = reported || u.find("'" + n.name + "'") != std::string::npos;
    if (!reported)
      unsupported.push_back("hub node '" + n.name + "' (" + n.op + "): output " + std::to_string(o.index) +
                            ", read by " + reader + ", has no TensorFlow equivalent");
  };
  for (int id : ids)
    for (Output in : g_.node(id).inputs) check(in, "'" + g_.node(id).name + "'");
  std::map<std::string, proto::SignatureDef> sigs;
  const std::vector<std::string> names = spec_.signature_names(options_.tags);
  const bool has_serving = std::find(names.begin(), names.end(), "serving_default") != names.end();
  for (const std::string& name : names) {
    const SignatureInfo& si = spec_.signature(name, options_.tags);
    proto::SignatureDef sd;
    sd.set_method_name("tensorflow/serving/predict");
    auto fill = [&](const std::map<std::string, TensorInfo>& from,
                    google::protobuf::Map<std::string, proto::TensorInfo>* to) {
      for (const auto& [key, info] : from) {
        Output o = g_.tensor(info.tensor_name);
        check(o, "signature '" + name + "'");
        if (!tensors_.count(o)) continue;
        proto::TensorInfo& ti = (*to)[key];
        const std::string& t = tensors_.at(o);
        ti.set_name(t.find(':') == std::string::npos ? t + ":0" : t);
        ti.set_dtype(static_cast<proto::DataType>(dtype_to_tf(info.dtype)));
        shape_to_proto(info.shape, ti.mutable_tensor_shape());
      }
    };
    fill(si.inputs, sd.mutable_inputs());
    fill(si.outputs, sd.mutable_outputs());
    (*mg.mutable_signature_def())[name == kDefaultSignature && !has_serving ? "serving_default" : name] = sd;
  }
  if (!unsupported.empty()) {
    std::string msg =
        "cannot export tag set " + tag_set_string(options_.tags) + " of " + spec_.source() + " to TensorFlow:";
    for (const std::string& u : unsupported) msg += "\n  " + u;
    throw_error(Code::kUnimplemented, msg);
  }
  saver(mg);
  return sm;
}

}  // namespace

void export_saved_model(const ModuleSpec& spec, const std::string& dir, const SavedModelExportOptions& options) {
  if (!spec.has_tag_set(options.tags))
    throw_error(Code::kNotFound, "module " + spec.source() + " has no tag set " + tag_set_string(options.tags));
  Exporter e(spec, options);
  const proto::SavedModel sm = e.run();
  StagingDir staging(dir, options.existing);
  const fs::path tmp(staging.path());
  try {
    std::string bytes;
    if (!sm.SerializeToString(&bytes)) throw_error(Code::kInternal, "cannot serialize the SavedModel");
    write_file_atomic((tmp / "saved_model.pb").string(), bytes);
    fs::create_directory(tmp / "variables");
    if (!e.variables().empty()) write_bundle((tmp / "variables" / "variables").string(), e.variables());
    fs::create_directory(tmp / "assets");
    if (!spec.assets_dir().empty()) fs::copy(spec.assets_dir(), tmp / "assets", fs::copy_options::recursive);
    for (const auto& [name, contents] : spec.asset_files())
      write_file_atomic((tmp / "assets" / name).string(), contents);
  } catch (const fs::filesystem_error& err) {
    throw_error(Code::kIOError, "writing the SavedModel '" + dir + "': " + err.what());
  }
  staging.commit();
}

}  // namespace hub::tf

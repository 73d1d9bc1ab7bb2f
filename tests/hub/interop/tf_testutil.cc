#include "tf_testutil.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/proto/tfhub_module.pb.h"

namespace fs = std::filesystem;

namespace hub::testing {

namespace {

int tf_dtype(DType d) {
  switch (d) {
    case DType::kFloat32:
      return kTfFloat;
    case DType::kInt32:
      return kTfInt32;
    case DType::kInt64:
      return kTfInt64;
    case DType::kUInt8:
      return 4;
    case DType::kBool:
      return 10;
    case DType::kInt8:
      return 6;  // DT_INT8 (tensorflow/core/framework/types.proto)
  }
  return 0;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

}  // namespace

void attr_type(tfp::NodeDef& n, const std::string& key, int tf_dtype) {
  (*n.mutable_attr())[key].set_type(static_cast<tfp::DataType>(tf_dtype));
}
void attr_int(tfp::NodeDef& n, const std::string& key, int64_t v) { (*n.mutable_attr())[key].set_i(v); }
void attr_float(tfp::NodeDef& n, const std::string& key, float v) { (*n.mutable_attr())[key].set_f(v); }
void attr_bool(tfp::NodeDef& n, const std::string& key, bool v) { (*n.mutable_attr())[key].set_b(v); }
void attr_string(tfp::NodeDef& n, const std::string& key, const std::string& v) { (*n.mutable_attr())[key].set_s(v); }
void attr_ints(tfp::NodeDef& n, const std::string& key, const std::vector<int64_t>& v) {
  auto* l = (*n.mutable_attr())[key].mutable_list();
  for (int64_t x : v) l->add_i(x);
}
void attr_strings(tfp::NodeDef& n, const std::string& key, const std::vector<std::string>& v) {
  auto* l = (*n.mutable_attr())[key].mutable_list();
  for (const auto& x : v) l->add_s(x);
}
void attr_shape(tfp::NodeDef& n, const std::string& key, const std::vector<int64_t>& dims) {
  auto* s = (*n.mutable_attr())[key].mutable_shape();
  for (int64_t d : dims) s->add_dim()->set_size(d);
}

tfp::NodeDef& TfGraph::add(const std::string& name, const std::string& op, std::vector<std::string> inputs) {
  tfp::NodeDef* n = g_->add_node();
  n->set_name(name);
  n->set_op(op);
  for (auto& in : inputs) n->add_input(in);
  return *n;
}

std::string TfGraph::constant(const std::string& name, const Tensor& value) {
  tfp::NodeDef& n = add(name, "Const");
  attr_type(n, "dtype", tf_dtype(value.dtype()));
  tfp::TensorProto* t = (*n.mutable_attr())["value"].mutable_tensor();
  t->set_dtype(static_cast<tfp::DataType>(tf_dtype(value.dtype())));
  for (int64_t d : value.shape().dims()) t->mutable_tensor_shape()->add_dim()->set_size(d);
  t->set_tensor_content(static_cast<const char*>(value.raw_data()), value.nbytes());
  return name;
}

std::string TfGraph::strings(const std::string& name, const std::vector<std::string>& values) {
  tfp::NodeDef& n = add(name, "Const");
  attr_type(n, "dtype", kTfString);
  tfp::TensorProto* t = (*n.mutable_attr())["value"].mutable_tensor();
  t->set_dtype(tfp::DT_STRING);
  t->mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(values.size()));
  for (const auto& v : values) t->add_string_val(v);
  return name;
}

std::string TfGraph::placeholder(const std::string& name, const std::vector<int64_t>& shape, int tf_dtype) {
  tfp::NodeDef& n = add(name, "Placeholder");
  attr_type(n, "dtype", tf_dtype);
  attr_shape(n, "shape", shape);
  return name;
}

std::string TfGraph::variable_v2(const std::string& name, const std::vector<int64_t>& shape) {
  tfp::NodeDef& v = add(name, "VariableV2");
  attr_type(v, "dtype", kTfFloat);
  attr_shape(v, "shape", shape);
  attr_string(v, "container", "");
  attr_string(v, "shared_name", "");
  tfp::NodeDef& r = add(name + "/read", "Identity", {name});
  attr_type(r, "T", kTfFloat);
  attr_strings(r, "_class", {"loc:@" + name});
  return name + "/read";
}

std::string TfGraph::resource_variable(const std::string& name, const std::vector<int64_t>& shape) {
  tfp::NodeDef& v = add(name, "VarHandleOp");
  attr_type(v, "dtype", kTfFloat);
  attr_shape(v, "shape", shape);
  attr_string(v, "shared_name", name);
  attr_string(v, "container", "");
  tfp::NodeDef& r = add(name + "/Read/ReadVariableOp", "ReadVariableOp", {name});
  attr_type(r, "dtype", kTfFloat);
  return r.name();
}

tfp::NodeDef& TfGraph::op(const std::string& name, const std::string& op, std::vector<std::string> inputs) {
  tfp::NodeDef& n = add(name, op, std::move(inputs));
  attr_type(n, "T", kTfFloat);
  return n;
}

tfp::SaverDef TfGraph::saver(const std::vector<std::pair<std::string, std::string>>& keys) {
  std::vector<std::string> names, slices;
  for (const auto& [var, key] : keys) {
    names.push_back(key);
    slices.push_back("");
  }
  tfp::NodeDef& file = add("save/Const", "Const");
  attr_type(file, "dtype", kTfString);
  auto* ft = (*file.mutable_attr())["value"].mutable_tensor();
  ft->set_dtype(tfp::DT_STRING);
  ft->add_string_val("model");
  strings("save/RestoreV2/tensor_names", names);
  strings("save/RestoreV2/shape_and_slices", slices);
  tfp::NodeDef& restore = add("save/RestoreV2", "RestoreV2",
                              {"save/Const", "save/RestoreV2/tensor_names", "save/RestoreV2/shape_and_slices"});
  auto* dtypes = (*restore.mutable_attr())["dtypes"].mutable_list();
  tfp::NodeDef& all = add("save/restore_all", "NoOp");
  for (size_t k = 0; k < keys.size(); ++k) {
    const std::string& var = keys[k].first;
    dtypes->add_type(tfp::DT_FLOAT);
    const std::string out = "save/RestoreV2" + (k ? ":" + std::to_string(k) : std::string());
    const bool resource = [&] {
      for (const auto& n : g_->node())
        if (n.name() == var) return n.op() == "VarHandleOp";
      return false;
    }();
    const std::string assign = "save/Assign" + (k ? "_" + std::to_string(k) : std::string());
    if (resource) {
      tfp::NodeDef& id = add("save/Identity" + (k ? "_" + std::to_string(k) : std::string()), "Identity", {out});
      attr_type(id, "T", kTfFloat);
      tfp::NodeDef& a = add(assign, "AssignVariableOp", {var, id.name()});
      attr_type(a, "dtype", kTfFloat);
    } else {
      tfp::NodeDef& a = add(assign, "Assign", {var, out});
      attr_type(a, "T", kTfFloat);
      attr_bool(a, "validate_shape", true);
      attr_bool(a, "use_locking", true);
    }
    all.add_input("^" + assign);
  }
  tfp::SaverDef s;
  s.set_filename_tensor_name("save/Const:0");
  s.set_save_tensor_name("save/control_dependency:0");
  s.set_restore_op_name("save/restore_all");
  s.set_max_to_keep(5);
  s.set_keep_checkpoint_every_n_hours(10000);
  s.set_version(tfp::SaverDef::V2);
  return s;
}

tfp::SignatureDef tf_signature(const std::map<std::string, TfTensor>& inputs,
                               const std::map<std::string, TfTensor>& outputs) {
  tfp::SignatureDef s;
  auto fill = [](tfp::TensorInfo& info, const TfTensor& t) {
    info.set_name(t.name);
    info.set_dtype(static_cast<tfp::DataType>(tf_dtype(t.dtype)));
    for (int64_t d : t.shape) info.mutable_tensor_shape()->add_dim()->set_size(d);
  };
  for (const auto& [k, t] : inputs) fill((*s.mutable_inputs())[k], t);
  for (const auto& [k, t] : outputs) fill((*s.mutable_outputs())[k], t);
  s.set_method_name("tensorflow/serving/predict");
  return s;
}

void write_saved_model(const std::string& dir, const tfp::SavedModel& model,
                       const std::map<std::string, Tensor>& variables) {
  fs::create_directories(dir);
  write_bytes(fs::path(dir) / "saved_model.pb", model.SerializeAsString());
  if (!variables.empty()) {
    fs::create_directories(fs::path(dir) / "variables");
    tf::write_bundle((fs::path(dir) / "variables" / "variables").string(), variables);
  }
}

void write_tfhub_module_def(const std::string& dir) {
  tf::proto::ModuleDef def;
  def.set_format(tf::proto::ModuleDef::FORMAT_V3);
  write_bytes(fs::path(dir) / "tfhub_module.pb", def.SerializeAsString());
}

std::string image_module_info_attachment(int height, int width) {
  tf::proto::ImageModuleInfo info;
  info.mutable_default_image_size()->set_height(height);
  info.mutable_default_image_size()->set_width(width);
  tf::proto::ModuleAttachment a;
  a.set_key("image_module_info");
  a.set_value(info.SerializeAsString());
  return a.SerializeAsString();
}

}  // namespace hub::testing

#include "hub/interop/tf/ops.h"

#include "hub/core/error.h"
#include "hub/interop/tf/bundle.h"

namespace hub::tf {

std::string tf_node_name(const std::string& name) {
  std::string out = name.empty() ? "_" : name;
  for (char& ch : out) {
    const bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                    ch == '.' || ch == '/' || ch == '-';
    if (!ok) ch = '_';
  }
  if (out[0] == '_' || out[0] == '/' || out[0] == '-') out = "n" + out;
  return out;
}

// ---- OpContext ------------------------------------------------------------------

std::string OpContext::where() const { return file_ + ": node '" + node_.name() + "' (" + node_.op() + ")"; }

void OpContext::fail(const std::string& message) const {
  throw_error(Code::kInvalidArgument, where() + ": " + message);
}

void OpContext::unsupported(const std::string& message) const {
  throw_error(Code::kUnimplemented, where() + ": " + message);
}

const proto::AttrValue& OpContext::attr(const std::string& name) const {
  auto it = node_.attr().find(name);
  if (it != node_.attr().end()) return it->second;
  auto d = defaults_.find(name);
  HUB_CHECK(d != defaults_.end(), "importer of " + node_.op() + " reads undeclared attribute " + name);
  if (d->second.value_case() == proto::AttrValue::VALUE_NOT_SET) fail("attribute '" + name + "' is missing");
  return d->second;
}

namespace {

std::string quoted(const std::string& s) {
  std::string out(1, '"');
  out += s;
  out += '"';
  return out;
}

std::string attr_text(const proto::AttrValue& v) {
  switch (v.value_case()) {
    case proto::AttrValue::kS:
      return quoted(v.s());
    case proto::AttrValue::kI:
      return std::to_string(v.i());
    case proto::AttrValue::kF:
      return std::to_string(v.f());
    case proto::AttrValue::kB:
      return v.b() ? "true" : "false";
    case proto::AttrValue::kType:
      return tf_dtype_name(v.type());
    case proto::AttrValue::kList: {
      std::string out = "[";
      for (int k = 0; k < v.list().i_size(); ++k) out += (k ? "," : "") + std::to_string(v.list().i(k));
      for (int k = 0; k < v.list().s_size(); ++k) out += (k ? "," : "") + quoted(v.list().s(k));
      return out + "]";
    }
    default:
      return "(a value of another kind)";
  }
}

}  // namespace

void OpContext::fail_attr(const std::string& name, const std::string& why) const {
  auto it = node_.attr().find(name);
  const std::string value = it != node_.attr().end() ? attr_text(it->second) : attr_text(attr(name));
  unsupported("attribute " + name + " = " + value + ": " + why);
}

int64_t OpContext::attr_int(const std::string& name) const {
  const auto& v = attr(name);
  if (v.value_case() != proto::AttrValue::kI) fail("attribute '" + name + "' must be an int");
  return v.i();
}

float OpContext::attr_float(const std::string& name) const {
  const auto& v = attr(name);
  if (v.value_case() != proto::AttrValue::kF) fail("attribute '" + name + "' must be a float");
  return v.f();
}

bool OpContext::attr_bool(const std::string& name) const {
  const auto& v = attr(name);
  if (v.value_case() != proto::AttrValue::kB) fail("attribute '" + name + "' must be a bool");
  return v.b();
}

std::string OpContext::attr_string(const std::string& name) const {
  const auto& v = attr(name);
  if (v.value_case() != proto::AttrValue::kS) fail("attribute '" + name + "' must be a string");
  return v.s();
}

std::vector<int64_t> OpContext::attr_ints(const std::string& name) const {
  const auto& v = attr(name);
  if (v.value_case() != proto::AttrValue::kList) fail("attribute '" + name + "' must be a list of ints");
  return std::vector<int64_t>(v.list().i().begin(), v.list().i().end());
}

std::vector<std::string> OpContext::attr_strings(const std::string& name) const {
  const auto& v = attr(name);
  if (v.value_case() != proto::AttrValue::kList) fail("attribute '" + name + "' must be a list of strings");
  return std::vector<std::string>(v.list().s().begin(), v.list().s().end());
}

DType OpContext::attr_dtype(const std::string& name) const {
  const auto& v = attr(name);
  if (v.value_case() != proto::AttrValue::kType) fail("attribute '" + name + "' must be a type");
  std::optional<DType> d = dtype_from_tf(v.type());
  if (!d) fail_attr(name, "hub has no such dtype (it has float32, int32, int64, uint8, bool)");
  return *d;
}

std::string OpContext::attr_choice(const std::string& name, const std::vector<std::string>& allowed) const {
  std::string v = attr_string(name);
  for (const auto& a : allowed)
    if (v == a) return v;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  fail_attr(name, "supported: " + list);
}

std::vector<int64_t> OpContext::constant_ints(int i, const std::string& what) const {
  std::optional<Tensor> t = constant(i);
  if (!t) unsupported(what + " (input " + std::to_string(i) + ") must be a constant");
  std::optional<std::vector<int64_t>> values = t->to_int64_vector();
  if (!values) fail(what + " must be int32 or int64, got " + t->spec_string());
  return *values;
}

// ---- Attribute defaults ------------------------------------------------------------

proto::AttrValue attr_s(const std::string& v) {
  proto::AttrValue a;
  a.set_s(v);
  return a;
}
proto::AttrValue attr_i(int64_t v) {
  proto::AttrValue a;
  a.set_i(v);
  return a;
}
proto::AttrValue attr_f(float v) {
  proto::AttrValue a;
  a.set_f(v);
  return a;
}
proto::AttrValue attr_b(bool v) {
  proto::AttrValue a;
  a.set_b(v);
  return a;
}
proto::AttrValue attr_ints(const std::vector<int64_t>& v) {
  proto::AttrValue a;
  for (int64_t x : v) a.mutable_list()->add_i(x);
  a.mutable_list();
  return a;
}
proto::AttrValue attr_type(int tf_dtype) {
  proto::AttrValue a;
  a.set_type(static_cast<proto::DataType>(tf_dtype));
  return a;
}
proto::AttrValue attr_list() {
  proto::AttrValue a;
  a.mutable_list();
  return a;
}
proto::AttrValue attr_required() { return proto::AttrValue(); }

void map_forward(OpContext& c) { c.forward(0, 0); }

const std::map<std::string, OpImporter>& op_importers() {
  static const auto* m = [] {
    auto* out = new std::map<std::string, OpImporter>;
    add_array_importers(*out);
    add_math_importers(*out);
    add_nn_importers(*out);
    add_select_importers(*out);
    add_control_flow_importers(*out);
    return out;
  }();
  return *m;
}

// ---- Export ----------------------------------------------------------------------

void ExportContext::fail(const std::string& message) const {
  throw_error(Code::kInvalidArgument, "hub node '" + node().name + "' (" + node().op + "): " + message);
}

void set_type(proto::NodeDef& n, const std::string& attr, DType dtype) {
  (*n.mutable_attr())[attr].set_type(static_cast<proto::DataType>(dtype_to_tf(dtype)));
}

void set_ints(proto::NodeDef& n, const std::string& attr, const std::vector<int64_t>& v) {
  auto* list = (*n.mutable_attr())[attr].mutable_list();
  list->clear_i();
  for (int64_t x : v) list->add_i(x);
}

const std::map<std::string, OpExporter>& op_exporters() {
  static const auto* m = [] {
    auto* out = new std::map<std::string, OpExporter>;
    add_array_exporters(*out);
    add_math_exporters(*out);
    add_nn_exporters(*out);
    add_select_exporters(*out);
    return out;
  }();
  return *m;
}

}  // namespace hub::tf

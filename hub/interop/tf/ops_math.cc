// TensorFlow <-> hub: element-wise arithmetic (broadcasting as NumPy, as
// both TensorFlow and hub do), reductions over constant axes, matrix
// products.
#include <algorithm>
#include <set>

#include "hub/core/error.h"
#include "hub/interop/einsum.h"
#include "hub/interop/tf/ops.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"

namespace hub::tf {

namespace {

constexpr int kDtInt32 = 3, kDtInt64 = 9;

// TensorFlow op -> hub op for the element-wise ops that map one to one.
const std::map<std::string, std::string>& elementwise() {
  static const std::map<std::string, std::string> m = {
      {"Add", "Add"},
      {"AddV2", "Add"},
      {"Sub", "Sub"},
      {"Mul", "Mul"},
      {"RealDiv", "Div"},
      {"Div", "Div"},
      {"Maximum", "Maximum"},
      {"Minimum", "Minimum"},
      {"Pow", "Pow"},
      {"Rsqrt", "Rsqrt"},
      {"Square", "Square"},
      {"Sqrt", "Sqrt"},
      {"Neg", "Neg"},
      {"Exp", "Exp"},
      {"Log", "Log"},
      {"Abs", "Abs"},
      {"Reciprocal", "Reciprocal"},
      {"Erf", "Erf"},
      {"Floor", "Floor"},
      {"Ceil", "Ceil"},
      {"Round", "Round"},
      {"Sin", "Sin"},
      {"Cos", "Cos"},
      {"Tan", "Tan"},
      {"Asin", "Asin"},
      {"Acos", "Acos"},
      {"Atan", "Atan"},
      {"Sinh", "Sinh"},
      {"Cosh", "Cosh"},
      {"Asinh", "Asinh"},
      {"Acosh", "Acosh"},
      {"Atanh", "Atanh"},
      {"Equal", "Equal"},
      {"NotEqual", "NotEqual"},
      {"Greater", "Greater"},
      {"GreaterEqual", "GreaterEqual"},
      {"Less", "Less"},
      {"LessEqual", "LessEqual"},
      {"SelectV2", "Select"},
      {"LogicalNot", "LogicalNot"},
      {"LogicalAnd", "LogicalAnd"},
      {"LogicalOr", "LogicalOr"},
  };
  return m;
}

// Element-wise TensorFlow ops of one input (their output is named y).
bool is_unary(const std::string& tf_op) {
  static const std::set<std::string> unary = {
      "Rsqrt", "Square", "Sqrt", "Neg",  "Exp",  "Log",  "Abs",  "Reciprocal", "Erf",   "Floor", "Ceil",  "Round",
      "Sin",   "Cos",    "Tan",  "Asin", "Acos", "Atan", "Sinh", "Cosh",       "Asinh", "Acosh", "Atanh", "LogicalNot"};
  return unary.count(tf_op) > 0;
}

// The logical ops have no T attribute (bool only).
bool is_logical(const std::string& tf_op) { return tf_op.rfind("Logical", 0) == 0; }

void map_elementwise(OpContext& c) {
  if (map_dim_arithmetic(c)) return;
  const std::string& hub_op = elementwise().at(c.op());
  // TensorFlow's Div of integers rounds toward zero and hub's Div is for
  // floats: only the float form is the same.
  if (c.op() == "Div" && c.dtype(0) != DType::kFloat32) c.unsupported("integer division is not supported");
  std::vector<Output> in;
  for (int i = 0; i < c.num_inputs(); ++i) in.push_back(c.input(i));
  c.set_output(0, c.add(hub_op, in));
}

// FloorMod: the remainder with the divisor's sign; TruncateMod: the dividend's.
void map_mod(OpContext& c) {
  c.set_output(0, c.add("Mod", {c.input(0), c.input(1)}, Attrs().set("truncate", c.op() == "TruncateMod")));
}

// Cumsum(x, axis): a constant axis.
void map_cumsum(OpContext& c) {
  const std::vector<int64_t> axis = c.constant_ints(1, "axis");
  if (axis.size() != 1) c.fail("axis must hold one value, got " + std::to_string(axis.size()));
  const int rank = c.shape(0).rank();
  if (axis[0] < -rank || axis[0] >= rank)
    c.fail("axis " + std::to_string(axis[0]) + " is out of range for rank " + std::to_string(rank));
  c.set_output(0, c.add("CumSum", {c.input(0)},
                        Attrs()
                            .set("axis", axis[0] < 0 ? axis[0] + rank : axis[0])
                            .set("exclusive", c.attr_bool("exclusive"))
                            .set("reverse", c.attr_bool("reverse"))));
}

void map_add_n(OpContext& c) {
  std::vector<Output> in;
  for (int i = 0; i < c.num_inputs(); ++i) in.push_back(c.input(i));
  c.set_output(0, in.size() == 1 ? in[0] : c.add("AddN", in));
}

// Mean / Sum / Max over constant reduction indices. TensorFlow reduces
// nothing for an empty list, hub's empty `axes` means all: an empty list is
// the input itself.
void map_reduction(OpContext& c) {
  std::vector<int64_t> axes = c.constant_ints(1, "reduction_indices");
  const int rank = c.shape(0).rank();
  for (int64_t& a : axes) {
    const int64_t orig = a;
    if (a < 0) a += rank;
    if (a < 0 || a >= rank)
      c.fail("reduction index " + std::to_string(orig) + " is out of range for rank " + std::to_string(rank));
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (axes.empty()) {
    c.forward(0, 0);
    return;
  }
  c.set_output(0, c.add(c.op(), {c.input(0)}, Attrs().set("axes", axes).set("keep_dims", c.attr_bool("keep_dims"))));
}

void map_matmul(OpContext& c) {
  if (c.dtype(0) != DType::kFloat32)
    c.unsupported("MatMul of " + std::string(dtype_name(c.dtype(0))) + " is not supported");
  Attrs a;
  a.set("transpose_a", c.attr_bool("transpose_a")).set("transpose_b", c.attr_bool("transpose_b"));
  c.set_output(0, c.add("MatMul", {c.input(0), c.weight(1)}, a));
}

// BatchMatMul, V2 (broadcasting batch dims, as hub's) and V3 (its own dtypes).
void map_batch_matmul(OpContext& c) {
  if (c.dtype(0) != DType::kFloat32 || c.dtype(1) != DType::kFloat32)
    c.unsupported(c.op() + " of " + std::string(dtype_name(c.dtype(0))) + " is not supported (float32 only)");
  c.set_output(0, c.add("BatchMatMul", {c.input(0), c.input(1)},
                        Attrs().set("adj_x", c.attr_bool("adj_x")).set("adj_y", c.attr_bool("adj_y"))));
}

// SquaredDifference: (x - y)^2.
void map_squared_difference(OpContext& c) {
  c.set_output(0, c.add("Square", {ops::sub(c.scope(), c.input(0), c.input(1), "Difference")}));
}

// Einsum (hub/interop/einsum.h), its errors naming this node.
void map_einsum(OpContext& c) {
  std::vector<Output> inputs;
  for (int i = 0; i < c.num_inputs(); ++i) inputs.push_back(c.input(i));
  try {
    c.set_output(0, interop::einsum(c.scope(), c.attr_string("equation"), inputs));
  } catch (const Error& e) {
    if (e.code() == Code::kUnimplemented) c.unsupported(e.message());
    c.fail(e.message());
  }
}

// ArgMax(input, dimension): hub's int64 index, cast where int32 is asked.
void map_arg_max(OpContext& c) {
  const std::vector<int64_t> axis = c.constant_ints(1, "dimension");
  if (axis.size() != 1) c.fail("dimension must hold one value, got " + std::to_string(axis.size()));
  Output y = c.add("ArgMax", {c.input(0)}, Attrs().set("axis", axis[0]));
  const DType out = c.attr_dtype("output_type");
  c.set_output(0, out == DType::kInt64 ? y : ops::cast(c.scope(), y, out, "OutputType"));
}

// ---- Exporters ---------------------------------------------------------------------

// hub op -> TensorFlow op, with attribute T (but for the logical ops): the
// inverse of elementwise() (Div as RealDiv, Add as Add).
const std::map<std::string, std::string>& elementwise_export() {
  static const std::map<std::string, std::string> m = [] {
    std::map<std::string, std::string> out;
    for (const auto& [tf_op, hub_op] : elementwise())
      if (tf_op != "AddV2" && tf_op != "Div") out[hub_op] = tf_op;
    return out;
  }();
  return m;
}

void export_elementwise(ExportContext& c) {
  if (c.node().op == "Div" && c.input_spec(0).dtype != DType::kFloat32)
    c.fail("only float division maps to TensorFlow");
  std::vector<std::string> in;
  for (size_t i = 0; i < c.node().inputs.size(); ++i) in.push_back(c.input(static_cast<int>(i)));
  const std::string& tf_op = elementwise_export().at(c.node().op);
  auto& n = c.add("", tf_op, in);
  if (!is_logical(tf_op)) set_type(n, "T", c.input_spec(c.node().op == "Select" ? 1 : 0).dtype);
  c.set_output(0, n.name());
}

void export_mod(ExportContext& c) {
  auto& n = c.add("", c.node().attrs.get_bool("truncate") ? "TruncateMod" : "FloorMod", {c.input(0), c.input(1)});
  set_type(n, "T", c.input_spec(0).dtype);
  c.set_output(0, n.name());
}

void export_cumsum(ExportContext& c) {
  const auto axis = static_cast<int32_t>(c.node().attrs.get_int("axis"));
  std::string idx = c.constant("axis", Tensor::scalar<int32_t>(axis));
  auto& n = c.add("", "Cumsum", {c.input(0), idx});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tidx", DType::kInt32);
  (*n.mutable_attr())["exclusive"].set_b(c.node().attrs.get_bool("exclusive"));
  (*n.mutable_attr())["reverse"].set_b(c.node().attrs.get_bool("reverse"));
  c.set_output(0, n.name());
}

void export_arg_max(ExportContext& c) {
  if (c.node().attrs.get_bool("select_last")) c.fail("ArgMax of the last tied maximum has no TensorFlow op");
  std::string dim =
      c.constant("dimension", Tensor::scalar<int32_t>(static_cast<int32_t>(c.node().attrs.get_int("axis"))));
  auto& n = c.add("", "ArgMax", {c.input(0), dim});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tidx", DType::kInt32);
  set_type(n, "output_type", DType::kInt64);
  c.set_output(0, n.name());
}

void export_add_n(ExportContext& c) {
  std::vector<std::string> in;
  for (size_t i = 0; i < c.node().inputs.size(); ++i) in.push_back(c.input(static_cast<int>(i)));
  auto& n = c.add("", "AddN", in);
  set_type(n, "T", c.input_spec(0).dtype);
  (*n.mutable_attr())["N"].set_i(static_cast<int64_t>(in.size()));
  c.set_output(0, n.name());
}

void export_reduction(ExportContext& c) {
  std::vector<int64_t> axes = c.node().attrs.get_ints("axes");
  if (axes.empty())  // hub: all axes
    for (int d = 0; d < c.input_spec(0).shape.rank(); ++d) axes.push_back(d);
  std::vector<int32_t> v(axes.begin(), axes.end());
  std::string idx = c.constant("reduction_indices", Tensor::from_vector<int32_t>({static_cast<int64_t>(v.size())}, v));
  auto& n = c.add("", c.node().op, {c.input(0), idx});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tidx", DType::kInt32);
  (*n.mutable_attr())["keep_dims"].set_b(c.node().attrs.get_bool("keep_dims"));
  c.set_output(0, n.name());
}

// MatMul (transpose_a, transpose_b) and BatchMatMul (adj_x, adj_y): TF's
// MatMul and BatchMatMulV2, with the same two flags.
void export_matmul(ExportContext& c) {
  const bool batch = c.node().op == "BatchMatMul";
  auto& n = c.add("", batch ? "BatchMatMulV2" : "MatMul", {c.input(0), c.input(1)});
  set_type(n, "T", DType::kFloat32);
  static constexpr const char* kFlags[2][2] = {{"transpose_a", "transpose_b"}, {"adj_x", "adj_y"}};
  for (const char* flag : kFlags[batch]) (*n.mutable_attr())[flag].set_b(c.node().attrs.get_bool(flag));
  c.set_output(0, n.name());
}

}  // namespace

void add_math_importers(std::map<std::string, OpImporter>& m) {
  const auto T = attr_required();
  // Unary ops name their output y, binary ones z.
  for (const auto& [tf_op, hub_op] : elementwise()) {
    std::map<std::string, proto::AttrValue> attrs;
    if (!is_logical(tf_op)) attrs["T"] = T;
    if (tf_op == "Equal" || tf_op == "NotEqual") attrs["incompatible_shape_error"] = attr_b(true);
    m[tf_op] = {map_elementwise, attrs, {is_unary(tf_op) ? "y" : tf_op == "SelectV2" ? "output" : "z"}};
  }
  for (const char* op : {"FloorMod", "TruncateMod"}) m[op] = {map_mod, {{"T", T}}, {"z"}};
  m["Cumsum"] = {
      map_cumsum, {{"T", T}, {"Tidx", T}, {"exclusive", attr_b(false)}, {"reverse", attr_b(false)}}, {"out"}};
  m["AddN"] = {map_add_n, {{"N", T}, {"T", T}}, {"sum"}};
  for (const char* op : {"Mean", "Sum", "Max", "Min", "Prod"})
    m[op] = {map_reduction, {{"T", T}, {"Tidx", attr_type(kDtInt32)}, {"keep_dims", attr_b(false)}}};
  for (const char* op : {"BatchMatMul", "BatchMatMulV2"})
    m[op] = {map_batch_matmul, {{"T", T}, {"adj_x", attr_b(false)}, {"adj_y", attr_b(false)}}};
  m["BatchMatMulV3"] = {map_batch_matmul,
                        {{"Ta", T}, {"Tb", T}, {"Tout", T}, {"adj_x", attr_b(false)}, {"adj_y", attr_b(false)}}};
  m["SquaredDifference"] = {map_squared_difference, {{"T", T}}, {"z"}};
  m["Einsum"] = {map_einsum, {{"N", T}, {"T", T}, {"equation", T}}};
  m["ArgMax"] = {map_arg_max, {{"T", T}, {"Tidx", attr_type(kDtInt32)}, {"output_type", attr_type(kDtInt64)}}};
  m["MatMul"] = {map_matmul,
                 {{"T", T},
                  {"transpose_a", attr_b(false)},
                  {"transpose_b", attr_b(false)},
                  {"grad_a", attr_b(false)},
                  {"grad_b", attr_b(false)}},
                 {"product"}};
}

void add_math_exporters(std::map<std::string, OpExporter>& m) {
  for (const auto& [hub_op, tf_op] : elementwise_export()) m[hub_op] = export_elementwise;
  m["Mod"] = export_mod;
  m["CumSum"] = export_cumsum;
  m["BatchMatMul"] = export_matmul;
  m["ArgMax"] = export_arg_max;
  m["AddN"] = export_add_n;
  for (const char* op : {"Mean", "Sum", "Max", "Min", "Prod"}) m[op] = export_reduction;
  m["MatMul"] = export_matmul;
}

}  // namespace hub::tf

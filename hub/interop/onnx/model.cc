#include "hub/interop/onnx/model.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/core/text.h"
#include "hub/interop/onnx/rewrite.h"

namespace fs = std::filesystem;

namespace hub::onnx_interop {

namespace {

using ::onnx::TensorProto;

struct TypeInfo {
  int onnx;
  const char* name;
};
constexpr TypeInfo kTypeNames[] = {
    {TensorProto::FLOAT, "FLOAT"},       {TensorProto::UINT8, "UINT8"},         {TensorProto::INT8, "INT8"},
    {TensorProto::UINT16, "UINT16"},     {TensorProto::INT16, "INT16"},         {TensorProto::INT32, "INT32"},
    {TensorProto::INT64, "INT64"},       {TensorProto::STRING, "STRING"},       {TensorProto::BOOL, "BOOL"},
    {TensorProto::FLOAT16, "FLOAT16"},   {TensorProto::DOUBLE, "DOUBLE"},       {TensorProto::UINT32, "UINT32"},
    {TensorProto::UINT64, "UINT64"},     {TensorProto::COMPLEX64, "COMPLEX64"}, {TensorProto::COMPLEX128, "COMPLEX128"},
    {TensorProto::BFLOAT16, "BFLOAT16"},
};

// Bytes [offset, offset + length) of an external-data file that must lie
// inside the model's folder.
std::string read_external(const std::string& model_path, const TensorProto& t, const std::string& where) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = std::stoll(kv.value());
      else if (kv.key() == "length")
        length = std::stoll(kv.value());
    } catch (const std::exception&) {
      throw_error(Code::kCorruption, where + ": external_data '" + kv.key() + "' is not a number");
    }
  }
  if (location.empty()) throw_error(Code::kCorruption, where + ": external data without a location");
  fs::path rel(location);
  if (rel.is_absolute())
    throw_error(Code::kPermissionDenied, where + ": external data location '" + location + "' is absolute");
  for (const auto& part : rel)
    if (part == "..")
      throw_error(Code::kPermissionDenied,
                  where + ": external data location '" + location + "' leaves the model's folder");
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::absolute(fs::path(model_path)).parent_path(), ec);
  const fs::path file = fs::weakly_canonical(dir / rel, ec);
  const std::string d = dir.string() + "/", f = file.string();
  if (ec || f.compare(0, d.size(), d) != 0)
    throw_error(Code::kPermissionDenied,
                where + ": external data location '" + location + "' resolves outside the model's folder");
  std::string bytes = read_file_bytes(f, kMaxModelBytes);
  if (offset < 0 || offset > static_cast<int64_t>(bytes.size()) ||
      (length >= 0 && length > static_cast<int64_t>(bytes.size()) - offset))
    throw_error(Code::kCorruption, where + ": external data [" + std::to_string(offset) + ", +" +
                                       std::to_string(length) + ") lies outside '" + location + "' (" +
                                       std::to_string(bytes.size()) + " bytes)");
  return bytes.substr(static_cast<size_t>(offset), length < 0 ? std::string::npos : static_cast<size_t>(length));
}

void load_external_data(const std::string& path, TensorProto* t, const std::string& where) {
  if (t->data_location() != TensorProto::EXTERNAL) return;
  t->set_raw_data(read_external(path, *t, where));
  t->clear_external_data();
  t->set_data_location(TensorProto::DEFAULT);
}

void load_graph_external_data(const std::string& path, ::onnx::GraphProto* g) {
  for (auto& t : *g->mutable_initializer()) load_external_data(path, &t, "initializer '" + t.name() + "'");
  for (auto& n : *g->mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) load_external_data(path, a.mutable_t(), "node '" + n.name() + "' attribute " + a.name());
      if (a.has_g()) load_graph_external_data(path, a.mutable_g());
    }
}

// ONNX's convolution shape inference (libonnx 1.12) takes a missing
// kernel_shape from the weights' dims without checking their rank against
// the input's, and reads past its vectors where they differ (a crash); with
// weights of rank < 3 it crashed even where kernel_shape was given. The
// weights' dims are known before inference when they come from an
// initializer, a Constant or a graph input's declared shape, directly or
// through (de)quantization, Identity or Cast. check_conv_weights (before the
// converter and inference) refuses such weights of rank < 3 and a
// kernel_shape of another length than theirs; guard_inference then gives
// each convolution without one the kernel_shape of its weights (what ONNX
// defines it to be; weights other nodes compute are measured by a first
// inference without the convolutions), so a mismatch with the input fails
// inference cleanly.
const std::map<std::string, int>& conv_weights_input() {
  static const std::map<std::string, int> m{{"Conv", 1}, {"ConvTranspose", 1}, {"ConvInteger", 1}, {"QLinearConv", 3}};
  return m;
}

// A value type's dims (kUnknownDim where unknown), or nullopt without a tensor shape.
std::optional<std::vector<int64_t>> declared_dims(const ::onnx::TypeProto& type) {
  std::optional<Shape> shape = shape_of(type);
  if (!shape) return std::nullopt;
  return shape->dims();
}

// Where each value of a graph comes from, indexed once per pass.
struct ValueSources {
  explicit ValueSources(const ::onnx::GraphProto& g) {
    for (const auto& t : g.initializer()) initializer[t.name()] = &t;
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto& out : g.node(i).output()) producer[out] = i;
    for (const auto& v : g.input()) input[v.name()] = &v;
  }
  std::map<std::string, const ::onnx::TensorProto*> initializer;
  std::map<std::string, int> producer;
  std::map<std::string, const ::onnx::ValueInfoProto*> input;
};

// The dims of node i's convolution weights where the graph fixes them, else nullopt.
std::optional<std::vector<int64_t>> conv_weight_dims(const ::onnx::GraphProto& g, const ValueSources& sources, int i) {
  const ::onnx::NodeProto& n = g.node(i);
  auto w = conv_weights_input().find(n.op_type());
  if (w == conv_weights_input().end() || n.input_size() <= w->second) return std::nullopt;
  auto dims_of = [](const ::onnx::TensorProto& t) { return std::vector<int64_t>(t.dims().begin(), t.dims().end()); };
  std::string name = n.input(w->second);
  for (int hops = 0; hops < 8; ++hops) {
    if (auto t = sources.initializer.find(name); t != sources.initializer.end()) return dims_of(*t->second);
    auto from = sources.producer.find(name);
    if (from == sources.producer.end() || from->second >= i) {
      auto v = sources.input.find(name);
      if (v == sources.input.end()) return std::nullopt;
      return declared_dims(v->second->type());
    }
    const ::onnx::NodeProto& p = g.node(from->second);
    if (p.op_type() == "Constant") {
      for (const auto& a : p.attribute())
        if (a.name() == "value" && a.has_t()) return dims_of(a.t());
      return std::nullopt;
    }
    static const std::set<std::string> same_shape{"DequantizeLinear", "QuantizeLinear", "Identity", "Cast"};
    if (!same_shape.count(p.op_type()) || p.input_size() == 0) return std::nullopt;
    name = p.input(0);
  }
  return std::nullopt;
}

void check_conv_weights(const ::onnx::GraphProto& g, const std::string& where) {
  const ValueSources sources(g);
  for (int i = 0; i < g.node_size(); ++i) {
    const std::optional<std::vector<int64_t>> dims = conv_weight_dims(g, sources, i);
    if (!dims) continue;
    const ::onnx::NodeProto& n = g.node(i);
    const std::string nw = where + ": node " + std::to_string(i) + " '" + printable(n.name()) + "' (" +
                           printable(n.op_type()) + "): weights '" +
                           printable(n.input(conv_weights_input().at(n.op_type()))) + "'";
    if (dims->size() < 3)
      throw_error(Code::kInvalidArgument,
                  nw + " have rank " + std::to_string(dims->size()) + "; a convolution's weights have rank 3 or more");
    for (const auto& a : n.attribute())
      if (a.name() == "kernel_shape" && static_cast<size_t>(a.ints_size()) != dims->size() - 2)
        throw_error(Code::kInvalidArgument, nw + " have rank " + std::to_string(dims->size()) + " but kernel_shape " +
                                                std::to_string(a.ints_size()) + " entries");
  }
}

// Window attributes: strides, dilations and kernel_shape with an entry below
// 1 (ONNX's shape inference and version converter divide by them: a zero
// stride stopped the process with SIGFPE), and any of them or of pads above
// 2^20, whose products and sums with a dim could overflow, are refused first.
void check_window_attributes(const ::onnx::GraphProto& g, const std::string& where) {
  constexpr int64_t kMaxWindowAttribute = int64_t{1} << 20;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& a : g.node(i).attribute()) {
      const bool positive = a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape";
      if (!positive && a.name() != "pads") continue;
      for (int64_t v : a.ints())
        if ((positive && v < 1) || v > kMaxWindowAttribute || v < -kMaxWindowAttribute)
          throw_error(Code::kInvalidArgument,
                      where + ": node " + std::to_string(i) + " '" + printable(g.node(i).name()) + "' (" +
                          printable(g.node(i).op_type()) + "): attribute " + a.name() + " has " + std::to_string(v) +
                          (positive ? "; every entry must be in [1, 2^20]" : "; every entry must be in [-2^20, 2^20]"));
    }
}

// The graph's wiring, checked before ONNX's own checker and converter (which
// trust it and crash on some broken graphs): every value is defined once (a
// graph input, an initializer, or one node's output); nodes come in
// topological order, each input defined by an earlier node or the graph; every
// graph output is defined; inputs, outputs and value infos are tensors.
// A subgraph (the branches of If, the body of Loop or Scan) is checked the same way,
// its nodes also reading the values defined before its node in the graphs
// around it (`outer`); other ops' subgraphs, and lists of them, are refused.
void check_wiring(const ::onnx::GraphProto& g, const std::string& where, const std::set<std::string>& outer = {}) {
  // Sequences, maps and optionals: hub maps tensors only, and ONNX's version
  // converter crashed on a map-typed graph input.
  auto expect_tensor = [&](const ::onnx::ValueInfoProto& v, const char* what) {
    if (v.has_type() && !v.type().has_tensor_type())
      throw_error(Code::kInvalidArgument,
                  where + ": " + what + " '" + printable(v.name()) +
                      "' is not a tensor (a sequence, map or optional); hub imports tensors only");
  };
  for (const auto& v : g.input()) expect_tensor(v, "graph input");
  for (const auto& v : g.output()) expect_tensor(v, "graph output");
  for (const auto& v : g.value_info()) expect_tensor(v, "value");
  std::set<std::string> defined, declared;
  for (const auto& v : g.input()) {
    if (v.name().empty()) throw_error(Code::kInvalidArgument, where + ": a graph input has no name");
    defined.insert(v.name());
    if (!declared.insert(v.name()).second)
      throw_error(Code::kInvalidArgument, where + ": graph input '" + printable(v.name()) + "' is declared twice");
  }
  std::set<std::string> initializers;
  for (const auto& t : g.initializer()) {
    if (!initializers.insert(t.name()).second)
      throw_error(Code::kInvalidArgument, where + ": initializer '" + printable(t.name()) + "' is declared twice");
    defined.insert(t.name());  // may also be a graph input (IR version < 4)
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    const std::string nw =
        where + ": node " + std::to_string(i) + " '" + printable(n.name()) + "' (" + printable(n.op_type()) + ")";
    auto visible = [&](const std::string& v) { return defined.count(v) || outer.count(v); };
    for (const auto& a : n.attribute()) {
      const bool control_flow = n.op_type() == "If" || n.op_type() == "Loop" || n.op_type() == "Scan";
      if (a.graphs_size() > 0 || (a.has_g() && !control_flow))
        throw_error(Code::kUnimplemented, nw + " has a subgraph (attribute " + printable(a.name()) +
                                              "); hub imports the subgraphs of If, Loop and Scan only");
      if (a.has_g()) {
        std::set<std::string> around = outer;
        around.insert(defined.begin(), defined.end());
        check_wiring(a.g(), nw + " attribute " + printable(a.name()), around);
      }
    }
    for (const auto& in : n.input())
      if (!in.empty() && !visible(in))
        throw_error(Code::kInvalidArgument,
                    nw + ": input '" + printable(in) + "' is defined by no earlier node, graph input or initializer");
    for (const auto& out : n.output())
      if (!out.empty() && (visible(out) || !defined.insert(out).second))
        throw_error(Code::kInvalidArgument, nw + ": output '" + printable(out) + "' is already defined");
  }
  for (const auto& v : g.output())
    if (!defined.count(v.name()) && !outer.count(v.name()))
      throw_error(Code::kInvalidArgument,
                  where + ": graph output '" + printable(v.name()) + "' is produced by no node");
}

// Calls fn on g and on each subgraph nested in it (check_wiring admitted
// only If's, Loop's and Scan's), each with where it is and whether it is one.
void for_each_graph(::onnx::GraphProto* g, const std::string& where,
                    const std::function<void(::onnx::GraphProto*, const std::string&, bool nested)>& fn,
                    bool nested = false) {
  fn(g, where, nested);
  for (int i = 0; i < g->node_size(); ++i)
    for (auto& a : *g->mutable_node(i)->mutable_attribute())
      if (a.has_g())
        for_each_graph(a.mutable_g(),
                       where + ": node " + std::to_string(i) + " '" + printable(g->node(i).name()) + "' (" +
                           printable(g->node(i).op_type()) + ") attribute " + printable(a.name()),
                       fn, true);
}

// Every tensor of the graph (initializers, node attributes) holds the bytes
// its shape needs: ONNX's checker does not check that, and its shape
// inference copied a Resize's 14-byte scales into 12 (found by
// tests/fuzz/onnx_model.cc).
void check_graph_tensors(const ::onnx::GraphProto& g, const std::string& where) {
  for (const auto& t : g.initializer()) check_tensor_data(t, where + ": initializer '" + printable(t.name()) + "'");
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& a : g.node(i).attribute()) {
      const std::string aw = where + ": node " + std::to_string(i) + " '" + printable(g.node(i).name()) + "' (" +
                             printable(g.node(i).op_type()) + ") attribute " + printable(a.name());
      if (a.has_t()) check_tensor_data(a.t(), aw);
      for (const auto& t : a.tensors()) check_tensor_data(t, aw);
    }
}

// ONNX's version converter carries dimensions through 32-bit ints: one of
// 2^32 + 5 came out as 5 (tensors keep theirs). A model that needs
// converting may declare no value type with a dimension above 2^31 - 1.
void check_dims_convertible(const ::onnx::GraphProto& g, int opset, const std::string& where) {
  auto check = [&](int64_t d, const std::string& what) {
    if (d > std::numeric_limits<int32_t>::max())
      throw_error(Code::kInvalidArgument, where + ": " + what + " has dimension " + std::to_string(d) +
                                              ", above 2^31 - 1, which ONNX's version converter cannot carry from "
                                              "opset " +
                                              std::to_string(opset) + " to " + std::to_string(kTargetOpset));
  };
  auto check_type = [&](const ::onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type())
      for (const auto& d : v.type().tensor_type().shape().dim())
        check(d.dim_value(), "value '" + printable(v.name()) + "'");
  };
  for (const auto& v : g.input()) check_type(v);
  for (const auto& v : g.output()) check_type(v);
  for (const auto& v : g.value_info()) check_type(v);
}

// The value types ONNX's shape inference finds, written into `model`'s
// value_info before the version converter runs: some of its adapters need
// an input's shape (Softmax 12 -> 13 asserted on a computed input) and read
// only what the model declares. Errors are left to the inference after
// conversion, which reports them.
void annotate_shapes(::onnx::ModelProto& model, const std::string& where);
// guard_inference's checks for a subgraph, which reads weights from the
// graphs around it: a convolution without kernel_shape gets its weights'
// where the subgraph fixes them, and is refused otherwise; a
// LayerNormalization whose Mean or InvStdDev is read is refused.
void guard_subgraph_inference(::onnx::GraphProto* g, const std::string& where);

template <class T, class Field>
void copy_typed(const Field& field, Tensor& out) {
  T* p = out.data<T>();
  for (int i = 0; i < field.size(); ++i) p[i] = static_cast<T>(field.Get(i));
}

}  // namespace

std::optional<Shape> shape_of(const ::onnx::TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : type.tensor_type().shape().dim())
    dims.push_back(d.has_dim_value() ? d.dim_value() : kUnknownDim);
  return Shape(std::move(dims));
}

std::string onnx_type_name(int onnx_type) {
  for (const TypeInfo& t : kTypeNames)
    if (t.onnx == onnx_type) return t.name;
  return "type " + std::to_string(onnx_type);
}

DType dtype_from_onnx(int onnx_type, const std::string& what) {
  switch (onnx_type) {
    case TensorProto::FLOAT:
    case TensorProto::FLOAT16:  // computed in float32 (docs/import.md)
    case TensorProto::BFLOAT16:
    case TensorProto::DOUBLE:
      return DType::kFloat32;
    case TensorProto::INT32:
      return DType::kInt32;
    case TensorProto::INT64:
      return DType::kInt64;
    case TensorProto::UINT8:
      return DType::kUInt8;
    case TensorProto::BOOL:
      return DType::kBool;
    case TensorProto::INT8:
      return DType::kInt8;
    default:
      throw_error(Code::kInvalidArgument,
                  what + " has ONNX type " + onnx_type_name(onnx_type) +
                      ", which hub does not support (float32; float16, bfloat16 and double as float32; int32, int64, "
                      "uint8, int8, bool)");
  }
}

int dtype_to_onnx(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return TensorProto::FLOAT;
    case DType::kInt32:
      return TensorProto::INT32;
    case DType::kInt64:
      return TensorProto::INT64;
    case DType::kUInt8:
      return TensorProto::UINT8;
    case DType::kBool:
      return TensorProto::BOOL;
    case DType::kInt8:
      return TensorProto::INT8;
  }
  return TensorProto::UNDEFINED;
}

namespace {

// How a fixed-size ONNX type is stored: bytes per element, and outside
// raw_data the typed field and the bytes each of its entries counts for.
struct Storage {
  uint64_t element_bytes;
  const char* field;
  uint64_t entry_bytes;
  int (TensorProto::*entries)() const;  // the field's size
};

std::optional<Storage> storage_of(int type) {
  switch (type) {
    case TensorProto::FLOAT:
      return Storage{4, "float_data", 4, &TensorProto::float_data_size};
    case TensorProto::COMPLEX64:  // two float_data entries an element
      return Storage{8, "float_data", 4, &TensorProto::float_data_size};
    case TensorProto::DOUBLE:
      return Storage{8, "double_data", 8, &TensorProto::double_data_size};
    case TensorProto::COMPLEX128:
      return Storage{16, "double_data", 8, &TensorProto::double_data_size};
    case TensorProto::INT64:
      return Storage{8, "int64_data", 8, &TensorProto::int64_data_size};
    case TensorProto::UINT32:
      return Storage{4, "uint64_data", 4, &TensorProto::uint64_data_size};
    case TensorProto::UINT64:
      return Storage{8, "uint64_data", 8, &TensorProto::uint64_data_size};
    case TensorProto::INT32:
      return Storage{4, "int32_data", 4, &TensorProto::int32_data_size};
    case TensorProto::INT16:
    case TensorProto::UINT16:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      return Storage{2, "int32_data", 2, &TensorProto::int32_data_size};
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      return Storage{1, "int32_data", 1, &TensorProto::int32_data_size};
    default:  // strings, undefined
      return std::nullopt;
  }
}

}  // namespace

Shape check_tensor_data(const TensorProto& t, const std::string& where) {
  std::vector<int64_t> dims;
  for (int64_t d : t.dims()) {
    if (d < 0) throw_error(Code::kCorruption, where + ": negative dimension " + std::to_string(d));
    dims.push_back(d);
  }
  Shape shape(std::move(dims));
  int64_t n;
  try {
    n = shape.num_elements();
  } catch (const Error&) {
    throw_error(Code::kCorruption, where + ": shape " + shape.to_string() + " overflows");
  }
  if (t.data_location() == TensorProto::EXTERNAL)
    throw_error(Code::kInternal, where + ": external data was not loaded");
  const std::optional<Storage> storage = storage_of(t.data_type());
  if (!storage) return shape;
  if (static_cast<uint64_t>(n) > std::numeric_limits<uint64_t>::max() / storage->element_bytes)
    throw_error(Code::kCorruption, where + ": shape " + shape.to_string() + " overflows");
  const uint64_t want = static_cast<uint64_t>(n) * storage->element_bytes;
  const bool raw = t.has_raw_data();
  const uint64_t got =
      raw ? t.raw_data().size() : static_cast<uint64_t>((t.*storage->entries)()) * storage->entry_bytes;
  if (got != want)
    throw_error(Code::kCorruption, where + ": " + onnx_type_name(t.data_type()) + shape.to_string() + " needs " +
                                       std::to_string(want) + " bytes, " + (raw ? "raw_data" : storage->field) +
                                       " holds " + std::to_string(got));
  return shape;
}

Tensor tensor_from_onnx(const TensorProto& t, const std::string& where) {
  const DType dtype = dtype_from_onnx(t.data_type(), where);
  // The data's size is checked before anything is allocated: a few bytes of
  // model may declare a shape of terabytes.
  const Shape shape = check_tensor_data(t, where);
  const int64_t n = shape.num_elements();
  const int type = t.data_type();
  const bool half = type == TensorProto::FLOAT16 || type == TensorProto::BFLOAT16;
  const bool raw = t.has_raw_data();
  const uint64_t want = static_cast<uint64_t>(n) * storage_of(type)->element_bytes;
  Tensor out(dtype, shape);
  if (type == TensorProto::DOUBLE || half) {
    float* p = out.data<float>();
    const char* bytes = t.raw_data().data();
    for (int64_t i = 0; i < n; ++i) {
      if (type == TensorProto::DOUBLE) {
        double d;
        if (raw)
          std::memcpy(&d, bytes + 8 * i, 8);
        else
          d = t.double_data(static_cast<int>(i));
        // Beyond float's range is infinite (a plain conversion is undefined there).
        p[i] = std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()
                   ? std::copysign(std::numeric_limits<float>::infinity(), d)
                   : static_cast<float>(d);
      } else {
        uint16_t bits;
        if (raw)
          std::memcpy(&bits, bytes + 2 * i, 2);
        else
          bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
        p[i] = type == TensorProto::FLOAT16 ? half_to_float(bits) : bfloat16_to_float(bits);
      }
    }
  } else if (raw) {
    if (want) std::memcpy(out.raw_data(), t.raw_data().data(), want);
  } else {
    switch (type) {
      case TensorProto::FLOAT:
        copy_typed<float>(t.float_data(), out);
        break;
      case TensorProto::INT64:
        copy_typed<int64_t>(t.int64_data(), out);
        break;
      case TensorProto::INT32:
        copy_typed<int32_t>(t.int32_data(), out);
        break;
      case TensorProto::UINT8:
      case TensorProto::BOOL:
        copy_typed<uint8_t>(t.int32_data(), out);
        break;
      case TensorProto::INT8:
        copy_typed<int8_t>(t.int32_data(), out);
        break;
    }
  }
  if (dtype == DType::kBool) {
    const uint8_t* b = static_cast<const uint8_t*>(out.raw_data());
    for (int64_t i = 0; i < n; ++i)
      if (b[i] > 1)
        throw_error(Code::kCorruption, where + ": bool element " + std::to_string(i) + " is " + std::to_string(b[i]));
  }
  return out;
}

void tensor_to_onnx(const Tensor& t, TensorProto* out) {
  out->set_data_type(dtype_to_onnx(t.dtype()));
  out->clear_dims();
  for (int64_t d : t.shape().dims()) out->add_dims(d);
  out->set_raw_data(static_cast<const char*>(t.raw_data()), t.nbytes());
}

OnnxModel load_onnx_model(const std::string& path) {
  OnnxModel m;
  m.path = path;
  const std::string where = "ONNX model '" + path + "'";
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) throw_error(Code::kNotFound, where + ": " + ec.message());
  if (static_cast<int64_t>(size) > kMaxModelBytes)
    throw_error(Code::kResourceExhausted, where + " is " + std::to_string(size) + " bytes; the limit is " +
                                              std::to_string(kMaxModelBytes) +
                                              " (larger models keep weights as external data)");
  {
    const std::string bytes = read_file_bytes(path, kMaxModelBytes);
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                              static_cast<int>(bytes.size()));
    in.SetTotalBytesLimit(static_cast<int>(std::min<int64_t>(kMaxModelBytes - 1, std::numeric_limits<int>::max())));
    if (!m.proto.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
      throw_error(Code::kCorruption, where + " is not a valid ONNX ModelProto (truncated or not ONNX)");
  }
  if (!m.proto.has_graph() || m.proto.ir_version() <= 0)
    throw_error(Code::kCorruption, where + " has no graph or no ir_version: not an ONNX model");
  for (const auto& op : m.proto.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") m.source_opset = static_cast<int>(op.version());
  }
  if (m.source_opset < kMinOpset || m.source_opset > kMaxOpset)
    throw_error(Code::kInvalidArgument, where + " uses opset " + std::to_string(m.source_opset) +
                                            "; hub imports opsets " + std::to_string(kMinOpset) + " to " +
                                            std::to_string(kMaxOpset));
  check_wiring(m.proto.graph(), where);
  for_each_graph(m.proto.mutable_graph(), where, [&](::onnx::GraphProto* g, const std::string& w, bool nested) {
    for (const auto& n : g->node()) {
      if (!n.domain().empty() && n.domain() != "ai.onnx")
        throw_error(Code::kInvalidArgument, w + ": node '" + printable(n.name()) + "' (" + printable(n.op_type()) +
                                                ") is in domain '" + printable(n.domain()) +
                                                "'; hub imports the default ONNX domain only");
      // Opset 8's Scan (a batch axis, sequence_lens) is not what ONNX's converter makes of it.
      if (n.op_type() == "Scan" && m.source_opset < 9)
        throw_error(Code::kUnimplemented, w + ": node '" + printable(n.name()) +
                                              "' (Scan): opset 8's Scan (with a batch axis) is not supported; "
                                              "hub imports Scan from opset 9 on");
    }
    check_window_attributes(*g, w);
    check_conv_weights(*g, w);
    if (nested) guard_subgraph_inference(g, w);
  });
  load_graph_external_data(path, m.proto.mutable_graph());
  for_each_graph(m.proto.mutable_graph(), where,
                 [](::onnx::GraphProto* g, const std::string& w, bool) { check_graph_tensors(*g, w); });
  auto check = [&](const std::string& when) {
    try {
      ::onnx::checker::check_model(m.proto);
    } catch (const std::exception& e) {
      throw_error(Code::kInvalidArgument, where + " fails ONNX's checker" + when + ": " + e.what());
    }
  };
  expand_experimental_operators(m.proto, m.source_opset, where);
  check("");
  if (m.source_opset < 7) {
    upgrade_to_opset7(m.proto, m.source_opset, where);
    check(" after hub's upgrade from opset " + std::to_string(m.source_opset) + " to 7");
  }
  if (m.source_opset != kTargetOpset) {
    annotate_shapes(m.proto, where);
    for_each_graph(m.proto.mutable_graph(), where, [&](::onnx::GraphProto* g, const std::string& w, bool) {
      check_dims_convertible(*g, m.source_opset, w);
    });
    try {
      m.proto = ::onnx::version_conversion::ConvertVersion(m.proto, kTargetOpset);
    } catch (const std::exception& e) {
      throw_error(Code::kInvalidArgument, where + ": ONNX's version converter cannot bring opset " +
                                              std::to_string(m.source_opset) + " to " + std::to_string(kTargetOpset) +
                                              ": " + e.what());
    }
  }
  decompose_quantized_operators(m.proto, m.source_opset, where);
  infer_shapes(m.proto, where);
  return m;
}

namespace {

// Runs ONNX's shape inference over `model` (value types replaced); its errors
// throw InvalidArgument naming `where`.
void run_inference(::onnx::ModelProto& model, bool data_propagation, const std::string& where) {
  auto* g = model.mutable_graph();
  g->clear_value_info();
  for (auto& out : *g->mutable_output())
    if (out.type().has_tensor_type()) out.mutable_type()->mutable_tensor_type()->clear_shape();
  try {
    ::onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, data_propagation);
    ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    throw_error(Code::kInvalidArgument, where + ": ONNX shape inference failed: " + e.what());
  }
}

// The value types inference left in `g`, by name (initializers included).
std::map<std::string, const ::onnx::TypeProto*> value_types(const ::onnx::GraphProto& g) {
  std::map<std::string, const ::onnx::TypeProto*> types;
  auto add = [&](const ::onnx::ValueInfoProto& v) {
    if (v.has_type() && v.type().value_case() != ::onnx::TypeProto::VALUE_NOT_SET) types[v.name()] = &v.type();
  };
  for (const auto& v : g.input()) add(v);
  for (const auto& v : g.value_info()) add(v);
  for (const auto& v : g.output()) add(v);
  static const ::onnx::TypeProto kInitializer;
  for (const auto& t : g.initializer()) types.emplace(t.name(), &kInitializer);
  return types;
}

// The first node input (node index, name) that inference gave no type.
std::optional<std::pair<int, std::string>> first_untyped_input(const ::onnx::GraphProto& g) {
  const std::map<std::string, const ::onnx::TypeProto*> types = value_types(g);
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& in : g.node(i).input())
      if (!in.empty() && !types.count(in)) return std::pair{i, in};
  return std::nullopt;
}

// LayerNormalization outputs nothing reads (Mean, InvStdDev) are dropped:
// libonnx's inference of them indexes dims from `axis` without checking it.
void trim_layer_norm_outputs(::onnx::GraphProto* g) {
  std::set<std::string> read;
  for (const auto& n : g->node()) read.insert(n.input().begin(), n.input().end());
  for (const auto& v : g->output()) read.insert(v.name());
  for (auto& n : *g->mutable_node()) {
    if (n.op_type() != "LayerNormalization") continue;
    while (n.output_size() > 1 && !read.count(n.output(n.output_size() - 1))) n.mutable_output()->RemoveLast();
  }
}

// libonnx's inference of some nodes trusts inputs it does not check and
// reads past its vectors otherwise: a convolution without kernel_shape whose
// weights' rank differs from the input's, a LayerNormalization (with Mean or
// InvStdDev) whose axis is outside its input's rank. Such nodes are guarded:
// where the types they depend on are not known before inference, inference
// runs first over a copy of the graph without the guarded nodes and what
// follows them, and each guarded node whose inputs it typed is checked (and
// a convolution given the kernel_shape of its weights, which is what ONNX
// defines it to be); rounds repeat for the guarded nodes that follow others.
void guard_inference(::onnx::ModelProto& model, const std::string& where) {
  ::onnx::GraphProto* g = model.mutable_graph();
  trim_layer_norm_outputs(g);
  const ValueSources sources(*g);  // adding attributes below leaves values and their sources in place
  auto node_where = [&](int i) {
    return where + ": node " + std::to_string(i) + " '" + printable(g->node(i).name()) + "' (" +
           printable(g->node(i).op_type()) + ")";
  };
  auto set_kernel_shape = [&](int i, const std::vector<int64_t>& dims) {
    auto* a = g->mutable_node(i)->add_attribute();
    a->set_name("kernel_shape");
    a->set_type(::onnx::AttributeProto::INTS);
    for (size_t d = 2; d < dims.size(); ++d) a->add_ints(dims[d]);
  };
  auto spatial_known = [](const std::vector<int64_t>& dims) {
    return std::all_of(dims.begin() + 2, dims.end(), [](int64_t d) { return d >= 0; });
  };
  // Checks node i against its inputs' types as far as they are known;
  // false where what decides is not known yet.
  auto check = [&](int i, const std::map<std::string, const ::onnx::TypeProto*>& types) {
    const ::onnx::NodeProto& n = g->node(i);
    auto dims_of = [&](const std::string& value) -> std::optional<std::vector<int64_t>> {
      auto t = types.find(value);
      return t == types.end() ? std::nullopt : declared_dims(*t->second);
    };
    if (n.op_type() == "LayerNormalization") {
      const std::optional<std::vector<int64_t>> x = dims_of(n.input(0));
      if (!x) return false;
      const auto rank = static_cast<int64_t>(x->size());
      int64_t axis = -1;
      for (const auto& a : n.attribute())
        if (a.name() == "axis") axis = a.i();
      if (axis < -rank || axis >= rank)
        throw_error(Code::kInvalidArgument, node_where(i) + ": axis " + std::to_string(axis) +
                                                " is outside the dims of its input, of rank " + std::to_string(rank));
      return true;
    }
    const std::string& w = n.input(conv_weights_input().at(n.op_type()));
    const std::optional<std::vector<int64_t>> dims = dims_of(w);
    if (!dims) return false;
    if (dims->size() < 3)
      throw_error(Code::kInvalidArgument, node_where(i) + ": weights '" + printable(w) + "' have rank " +
                                              std::to_string(dims->size()) +
                                              "; a convolution's weights have rank 3 or more");
    if (spatial_known(*dims)) set_kernel_shape(i, *dims);
    return true;
  };
  std::vector<int> guarded;
  for (int i = 0; i < g->node_size(); ++i) {
    const ::onnx::NodeProto& n = g->node(i);
    if (n.op_type() == "LayerNormalization" && n.output_size() > 1 && n.input_size() > 0) {
      guarded.push_back(i);
      continue;
    }
    auto w = conv_weights_input().find(n.op_type());
    if (w == conv_weights_input().end() || n.input_size() <= w->second) continue;
    bool has_kernel_shape = false;
    for (const auto& a : n.attribute()) has_kernel_shape = has_kernel_shape || a.name() == "kernel_shape";
    if (has_kernel_shape) continue;
    const std::optional<std::vector<int64_t>> dims = conv_weight_dims(*g, sources, i);
    if (!dims)
      guarded.push_back(i);
    else if (dims->size() >= 3 && spatial_known(*dims))  // rank < 3 was refused before conversion
      set_kernel_shape(i, *dims);
  }
  while (!guarded.empty()) {
    // The copy: every node neither guarded nor downstream of one.
    std::set<std::string> tainted;
    std::vector<bool> dropped(g->node_size(), false);
    for (int i : guarded) dropped[i] = true;
    for (int i = 0; i < g->node_size(); ++i) {
      const ::onnx::NodeProto& n = g->node(i);
      dropped[i] = dropped[i] || std::any_of(n.input().begin(), n.input().end(),
                                             [&](const std::string& in) { return tainted.count(in) > 0; });
      if (dropped[i]) tainted.insert(n.output().begin(), n.output().end());
    }
    ::onnx::ModelProto copy = model;
    ::onnx::GraphProto* cg = copy.mutable_graph();
    cg->clear_node();
    cg->clear_output();
    for (int i = 0; i < g->node_size(); ++i)
      if (!dropped[i]) *cg->add_node() = g->node(i);
    // Errors here are the original's too, and its own inference reports them.
    try {
      run_inference(copy, false, where);
      if (!first_untyped_input(*cg)) run_inference(copy, true, where);
    } catch (const Error&) {
    }
    const std::map<std::string, const ::onnx::TypeProto*> types = value_types(*cg);
    // A guarded node none of whose inputs follows another one is settled:
    // checked, or (its types unknown to inference as well) safe as it is.
    // The first guarded node always is, so each round settles one at least.
    std::vector<int> left;
    for (int i : guarded) {
      const auto& in = g->node(i).input();
      const bool follows =
          std::any_of(in.begin(), in.end(), [&](const std::string& v) { return tainted.count(v) > 0; });
      if (follows)
        left.push_back(i);
      else
        check(i, types);
    }
    guarded = std::move(left);
  }
}

void guard_subgraph_inference(::onnx::GraphProto* g, const std::string& where) {
  trim_layer_norm_outputs(g);
  const ValueSources sources(*g);
  for (int i = 0; i < g->node_size(); ++i) {
    ::onnx::NodeProto* n = g->mutable_node(i);
    const std::string nw =
        where + ": node " + std::to_string(i) + " '" + printable(n->name()) + "' (" + printable(n->op_type()) + ")";
    if (n->op_type() == "LayerNormalization" && n->output_size() > 1)
      throw_error(Code::kUnimplemented, nw + ": inside a subgraph, hub imports a LayerNormalization's Y only");
    auto w = conv_weights_input().find(n->op_type());
    if (w == conv_weights_input().end() || n->input_size() <= w->second) continue;
    if (std::any_of(n->attribute().begin(), n->attribute().end(),
                    [](const auto& a) { return a.name() == "kernel_shape"; }))
      continue;
    const std::optional<std::vector<int64_t>> dims = conv_weight_dims(*g, sources, i);
    if (!dims || dims->size() < 3 || !std::all_of(dims->begin() + 2, dims->end(), [](int64_t d) { return d >= 0; }))
      throw_error(Code::kUnimplemented, nw + ": inside a subgraph, a convolution needs kernel_shape unless its "
                                             "weights are the subgraph's own constants");
    auto* a = n->add_attribute();
    a->set_name("kernel_shape");
    a->set_type(::onnx::AttributeProto::INTS);
    for (size_t d = 2; d < dims->size(); ++d) a->add_ints((*dims)[d]);
  }
}

void annotate_shapes(::onnx::ModelProto& model, const std::string& where) {
  guard_inference(model, where);
  try {
    run_inference(model, false, where);
  } catch (const Error&) {
  }
}

}  // namespace

void infer_shapes(::onnx::ModelProto& model, const std::string& where) {
  guard_inference(model, where);
  // ONNX's data propagation (Shape and the ops that pass shape values on)
  // reads an input's type without checking that it was inferred, and
  // dereferences null where an earlier node's inference failed (found by
  // tests/fuzz/onnx_model.cc: a Conv on a rank-2 input, then Shape). So a
  // first pass without it must give every node input a type.
  run_inference(model, false, where);
  const ::onnx::GraphProto& g = model.graph();
  if (auto untyped = first_untyped_input(g)) {
    const auto& [i, in] = *untyped;
    std::string producer;
    for (int j = 0; j < i && producer.empty(); ++j)
      for (const auto& out : g.node(j).output())
        if (out == in)
          producer = ", output of node " + std::to_string(j) + " '" + printable(g.node(j).name()) + "' (" +
                     printable(g.node(j).op_type()) + "), whose inference failed on its inputs";
    throw_error(Code::kInvalidArgument, where + ": node " + std::to_string(i) + " '" + printable(g.node(i).name()) +
                                            "' (" + printable(g.node(i).op_type()) +
                                            "): ONNX shape inference found no type for its input '" + printable(in) +
                                            "'" + producer);
  }
  run_inference(model, true, where);
}

}  // namespace hub::onnx_interop

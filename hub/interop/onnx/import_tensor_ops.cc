// ONNX -> hub: constants, element-wise math and activations, shape and
// data-movement ops, reductions (opset 17 semantics).
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "hub/interop/linear.h"
#include "hub/interop/onnx/convert.h"
#include "hub/interop/onnx/model.h"
#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"
#include "hub/ops/reduction.h"
#include "hub/ops/selection.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"

namespace hub::onnx_interop {

namespace {

// ---- constants -------------------------------------------------------------------

void map_constant(NodeContext& c) {
  if (const auto* t = c.attr_tensor("value")) {
    c.set_constant(0, tensor_from_onnx(*t, "node '" + c.node().name() + "' attribute value"));
  } else if (c.has_attr("value_float")) {
    c.set_constant(0, Tensor::scalar<float>(c.attr_float("value_float", 0)));
  } else if (c.has_attr("value_floats")) {
    std::vector<float> v = c.attr_floats("value_floats");
    c.set_constant(0, Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v));
  } else if (c.has_attr("value_int")) {
    c.set_constant(0, Tensor::scalar<int64_t>(c.attr_int("value_int", 0)));
  } else if (c.has_attr("value_ints")) {
    std::vector<int64_t> v = c.attr_ints("value_ints");
    c.set_constant(0, Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
  } else {
    c.fail("needs one of value, value_float(s), value_int(s) (sparse and string constants are not supported)");
  }
}

// A run-time shape that is the whole (logical) shape of one tensor the graph
// has, stored in ONNX's layout (Shape(x) of a transformer's ids): that tensor.
std::optional<Output> whole_shape_of(NodeContext& c, const SymShape& shape) {
  std::optional<Output> tensor;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i].known()) continue;
    if (shape[i].derived) return std::nullopt;
    const auto [out, dim] = c.dim_source(shape[i]);
    if ((tensor && !(out == *tensor)) || dim != static_cast<int>(i) || shape[i].dim != static_cast<int>(i))
      return std::nullopt;
    tensor = out;
  }
  if (!tensor) return std::nullopt;
  const Shape& s = c.scope().graph().spec(*tensor).shape;
  if (s.rank() != static_cast<int>(shape.size())) return std::nullopt;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i].known() && shape[i].value != s[static_cast<int>(i)]) return std::nullopt;
  return tensor;
}

void map_constant_of_shape(NodeContext& c) {
  Tensor value = Tensor::scalar<float>(0.0f);
  if (const auto* t = c.attr_tensor("value"))
    value = tensor_from_onnx(*t, "node '" + c.node().name() + "' attribute value");
  if (value.num_elements() != 1) c.fail("attribute value must hold one element");
  if (!c.constant(0))
    if (std::optional<SymShape> sym = c.symbolic(0)) {
      // ones / zeros in a run-time shape: the value broadcast like the tensor whose shape it is.
      const std::optional<Output> like = whole_shape_of(c, *sym);
      if (!like) c.fail("the shape is computed at run time and is not the whole shape of one tensor");
      c.set_output(0, c.scope().op("BroadcastLike", {c.constant_output(value.reshaped(Shape{}), "value"), *like}, {},
                                   "ConstantOfShape"));
      return;
    }
  std::vector<int64_t> dims = c.constant_ints(0, "shape");
  c.check_folded_size(Shape(dims), "the output");
  Tensor out(value.dtype(), Shape(dims));
  dispatch_dtype(value.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T v = value.data<T>()[0];
    T* p = out.data<T>();
    for (int64_t i = 0; i < out.num_elements(); ++i) p[i] = v;
  });
  c.set_constant(0, out);
}

// Shape and Size need only the input's static shape, not its value. A
// dimension known only at run time makes the result symbolic (SymDim).
void map_shape(NodeContext& c) {
  Shape s = c.shape(0);
  int64_t r = s.rank();
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", r);
  start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
  end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  SymShape dims;
  bool known = true;
  for (int64_t i = start; i < end; ++i) {
    int64_t d = s[static_cast<int>(i)];
    dims.push_back(d >= 0 ? SymDim::constant(d) : SymDim::dim_of(c.node().input(0), static_cast<int>(i)));
    known = known && d >= 0;
  }
  if (!known) {
    c.set_symbolic(0, dims);
    return;
  }
  std::vector<int64_t> v;
  for (const SymDim& d : dims) v.push_back(d.value);
  c.set_constant(0, Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

using Linear = interop::Linear<DimKey>;

// The SymDim of a linear value: known without terms, a dim when it is one.
SymDim from_linear(const Linear& l) {
  if (l.terms.empty()) return SymDim::constant(l.value);
  if (l.is_dim()) return SymDim::dim_of(l.terms[0].first.first, l.terms[0].first.second);
  return SymDim::computed(l.value, l.terms);
}

// Shape arithmetic on symbolic values (Gather, Unsqueeze, Squeeze, Concat,
// Slice, Cast, Identity of 1-D shapes with run-time elements). Returns false
// when the node's data input is not symbolic (the normal mapping applies).
bool map_symbolic(NodeContext& c) {
  const std::string& op = c.op();
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    // Arithmetic on shape elements: known where both operands are; sums,
    // differences and constant multiples of run-time dims stay linear in
    // them; anything else is derived (a run-time value that is no tensor's dim).
    const std::optional<SymShape> a = c.symbolic(0), b = c.symbolic(1);
    if (!a || !b || (c.constant(0) && c.constant(1)) || c.rank(0) > 1 || c.rank(1) > 1) return false;
    if (a->size() != b->size() && a->size() != 1 && b->size() != 1) c.fail("shape operands differ in length");
    SymShape out;
    for (size_t i = 0; i < std::max(a->size(), b->size()); ++i) {
      const SymDim& x = (*a)[a->size() == 1 ? 0 : i];
      const SymDim& y = (*b)[b->size() == 1 ? 0 : i];
      if (!x.known() || !y.known() || (op == "Div" && y.value == 0)) {
        const std::optional<Linear> lx = x.linear(), ly = y.linear();
        std::optional<Linear> r;
        if (lx && ly && (op == "Add" || op == "Sub"))
          r = interop::linear_sum(*lx, *ly, op == "Add" ? 1 : -1);
        else if (lx && ly && op == "Mul" && (x.known() || y.known()))
          r = interop::linear_sum(Linear{}, x.known() ? *ly : *lx, x.known() ? x.value : y.value);
        out.push_back(r ? from_linear(*r) : SymDim::computed());
        continue;
      }
      const int64_t v = op == "Add"   ? x.value + y.value
                        : op == "Sub" ? x.value - y.value
                        : op == "Mul" ? x.value * y.value
                                      : x.value / y.value;
      out.push_back(SymDim::constant(v));
    }
    c.set_symbolic(0, out);
    return true;
  }
  if (op == "Concat") {
    bool all = true, any_runtime = false;
    for (int i = 0; i < c.num_inputs(); ++i) {
      all = all && c.symbolic(i).has_value();
      any_runtime = any_runtime || !c.constant(i);
    }
    if (!all || !any_runtime) return false;
  } else if (c.constant(0) || !c.symbolic(0)) {
    return false;
  }
  SymShape in = *c.symbolic(0), out;
  if (op == "Gather") {
    for (int64_t k : c.constant_ints(1, "indices")) {
      int64_t j = k < 0 ? k + static_cast<int64_t>(in.size()) : k;
      if (j < 0 || j >= static_cast<int64_t>(in.size())) c.fail("index " + std::to_string(k) + " out of range");
      out.push_back(in[static_cast<size_t>(j)]);
    }
  } else if (op == "Concat") {
    for (int i = 0; i < c.num_inputs(); ++i) {
      std::optional<SymShape> part = c.symbolic(i);
      if (!part) c.fail("input " + std::to_string(i) + " of a shape computation is neither constant nor a shape");
      out.insert(out.end(), part->begin(), part->end());
    }
  } else if (op == "Slice") {
    std::vector<int64_t> st = c.constant_ints(1, "starts"), en = c.constant_ints(2, "ends");
    const int64_t n = static_cast<int64_t>(in.size());
    int64_t b = std::clamp<int64_t>(st.at(0) < 0 ? st[0] + n : st[0], 0, n);
    int64_t e = std::clamp<int64_t>(en.at(0) < 0 ? en[0] + n : en[0], 0, n);
    if (c.has_input(4) && c.constant_ints(4, "steps") != std::vector<int64_t>{1})
      c.fail("strided shape slices are not supported");
    for (int64_t i = b; i < e; ++i) out.push_back(in[static_cast<size_t>(i)]);
  } else {  // Unsqueeze, Squeeze, Cast, Identity: the elements pass through
    out = in;
  }
  c.set_symbolic(0, out);
  return true;
}

template <void (*kMap)(NodeContext&)>
void symbolic_or(NodeContext& c) {
  if (!map_symbolic(c)) kMap(c);
}

void map_size(NodeContext& c) {
  Shape s = c.shape(0);
  if (!s.is_fully_defined())
    throw Deferred{"ONNX model: node '" + c.node().name() + "' (Size): the size of '" + c.node().input(0) +
                   "' is only known at run time"};
  c.set_constant(0, Tensor::scalar<int64_t>(s.num_elements()));
}

void map_range(NodeContext& c) {
  std::optional<Tensor> start = c.constant(0), limit = c.constant(1), delta = c.constant(2);
  if (delta && (!start || !limit)) {
    // A start and limit linear in run-time dims (positions 0 .. sequence - 1, or past .. past +
    // sequence - 1 with a key cache): DynamicRange reads them at each run.
    auto linear = [&](int i) -> std::optional<Linear> {
      const std::optional<SymShape> sym = c.symbolic(i);
      if (!sym || sym->size() != 1) return std::nullopt;
      return (*sym)[0].linear();
    };
    const std::optional<Linear> s = linear(0), l = linear(1);
    const std::vector<int64_t> d = c.constant_ints(2, "delta");
    if (d.size() != 1 || d[0] == 0) c.fail("delta must be a nonzero scalar");
    if (!s || !l) c.fail("start and limit must be constants or sums of run-time dims");
    std::vector<Output> inputs;
    std::vector<int64_t> terms;
    for (const auto& [slot, value] : {std::pair<int64_t, const Linear*>{0, &*s}, {1, &*l}})
      for (const auto& [key, coefficient] : value->terms) {
        const auto [tensor, dim] = c.dim_source(SymDim::dim_of(key.first, key.second));
        auto at = std::find(inputs.begin(), inputs.end(), tensor);
        if (at == inputs.end()) at = inputs.insert(inputs.end(), tensor);
        terms.insert(terms.end(), {slot, at - inputs.begin(), dim, coefficient});
      }
    c.set_output(0, c.scope().op("DynamicRange", inputs,
                                 Attrs()
                                     .set("start", s->value)
                                     .set("limit", l->value)
                                     .set("delta", d[0])
                                     .set("dtype", c.dtype(0))
                                     .set("from", std::vector<int64_t>{})
                                     .set("terms", terms),
                                 "Range"));
    return;
  }
  if (!start || !limit || !delta) c.fail("start, limit and delta must be constants");
  if (start->num_elements() != 1 || limit->num_elements() != 1 || delta->num_elements() != 1)
    c.fail("start, limit and delta must be scalars");
  auto as_double = [&](const Tensor& t) {
    double v = 0;
    dispatch_dtype(t.dtype(), [&](auto tag) { v = static_cast<double>(t.data<decltype(tag)>()[0]); });
    return v;
  };
  double s = as_double(*start), l = as_double(*limit), d = as_double(*delta);
  if (d == 0) c.fail("delta is 0");
  // Folded at import: the count is checked in double before converting it.
  const double count = std::ceil((l - s) / d);
  if (!std::isfinite(count) || count > static_cast<double>(kMaxFoldedElements))
    c.fail("the range has more than 2^24 elements (or is not finite)");
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  Tensor out(start->dtype(), Shape{n});
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < n; ++i) out.data<T>()[i] = static_cast<T>(s + static_cast<double>(i) * d);
  });
  c.set_constant(0, out);
}

// ---- element-wise ------------------------------------------------------------------

// Inputs of an element-wise op in one layout: NHWC when the result is 4-D and
// some input already is NHWC (no layout change then), else ONNX's order.
struct Operands {
  std::vector<Output> values;
  bool nhwc = false;
};

Operands operands(NodeContext& c, int first = 0, int count = -1) {
  Operands ops;
  int end = count < 0 ? c.num_inputs() : first + count;
  int out_rank = 0;
  for (int i = first; i < end; ++i)
    if (c.has_input(i)) out_rank = std::max(out_rank, c.rank(i));
  for (int i = first; i < end; ++i) ops.nhwc = ops.nhwc || (c.has_input(i) && out_rank == 4 && c.is_nhwc(i));
  for (int i = first; i < end; ++i) {
    if (!c.has_input(i)) continue;
    if (!ops.nhwc) {
      ops.values.push_back(c.native(i));
    } else if (c.rank(i) == 4) {
      ops.values.push_back(c.nhwc(i));
    } else if (std::optional<Tensor> k = c.constant(i)) {
      ops.values.push_back(c.constant_output(to_nhwc_operand(*k), "operand" + std::to_string(i)));
    } else {
      // A lower-rank run-time operand: aligned to rank 4, then NHWC.
      Shape s = c.shape(i);
      std::vector<int64_t> dims(4 - s.rank(), 1);
      for (int64_t d : s.dims()) dims.push_back(d);
      Output x = ops::reshape(c.scope(), c.native(i), dims, "align" + std::to_string(i));
      ops.values.push_back(ops::transpose(c.scope(), x, {0, 2, 3, 1}, "to_nhwc" + std::to_string(i)));
    }
  }
  return ops;
}

template <const char* kOp>
void map_binary(NodeContext& c) {
  Operands in = operands(c, 0, 2);
  c.set_output(0, c.scope().op(kOp, in.values, {}, kOp), in.nhwc);
}

// Operands of element-wise arithmetic: 8-bit integers are widened to int32
// (hub's arithmetic is float32, int32 and int64), and narrow() casts a result
// back to their type, wrapping as ONNX's (NumPy's) 8-bit arithmetic does.
struct Arithmetic : Operands {
  std::optional<DType> narrow_to;
  Output narrow(NodeContext& c, Output y) const {
    return narrow_to ? ops::cast(c.scope(), y, *narrow_to, "Narrow") : y;
  }
};

Arithmetic arithmetic_operands(NodeContext& c, int first = 0, int count = -1) {
  Arithmetic a{operands(c, first, count), std::nullopt};
  if (is_8bit(c.dtype(first))) {
    a.narrow_to = c.dtype(first);
    for (Output& v : a.values) v = ops::cast(c.scope(), v, DType::kInt32, "Widen");
  }
  return a;
}

template <const char* kOp>
void map_arithmetic(NodeContext& c) {
  Arithmetic in = arithmetic_operands(c, 0, 2);
  c.set_output(0, in.narrow(c, c.scope().op(kOp, in.values, {}, kOp)), in.nhwc);
}

constexpr char kAdd[] = "Add", kSub[] = "Sub", kMul[] = "Mul", kDiv[] = "Div", kMaximum[] = "Maximum",
               kMinimum[] = "Minimum", kEqual[] = "Equal", kGreater[] = "Greater", kLess[] = "Less",
               kGreaterEqual[] = "GreaterEqual", kLessEqual[] = "LessEqual", kPow[] = "Pow",
               kLogicalAnd[] = "LogicalAnd", kLogicalOr[] = "LogicalOr", kNotEqual[] = "NotEqual";

// Mod: fmod 1 keeps the dividend's sign (C's fmod), fmod 0 the divisor's.
void map_mod(NodeContext& c) {
  Arithmetic in = arithmetic_operands(c, 0, 2);
  const bool truncate = c.attr_int("fmod", 0) != 0;
  c.set_output(0, in.narrow(c, c.scope().op("Mod", in.values, Attrs().set("truncate", truncate), "Mod")), in.nhwc);
}

// Where(condition, X, Y): hub's Select, the three broadcast together.
void map_where(NodeContext& c) {
  Operands in = operands(c, 0, 3);
  c.set_output(0, c.scope().op("Select", in.values, {}, "Select"), in.nhwc);
}

// Sum, Mean, Max, Min: a chain of the binary op (Mean divides at the end).
template <const char* kOp, bool kMean>
void map_variadic(NodeContext& c) {
  Arithmetic in = arithmetic_operands(c);
  Output acc = in.values[0];
  for (size_t i = 1; i < in.values.size(); ++i) acc = c.scope().op(kOp, {acc, in.values[i]}, {}, kOp);
  if (kMean && in.values.size() > 1)
    acc = c.scope().op("Mul", {acc, ops::scalar(c.scope(), 1.0f / static_cast<float>(in.values.size()), "inv_n")}, {},
                       "mean");
  if (in.values.size() == 1) acc = c.scope().op("Identity", {acc}, {}, "Identity");
  c.set_output(0, in.narrow(c, acc), in.nhwc);
}

// x keeps its layout through a unary op.
Output unary_input(NodeContext& c, bool* nhwc) {
  *nhwc = c.is_nhwc(0);
  return *nhwc ? c.nhwc(0) : c.native(0);
}

template <const char* kOp>
void map_unary(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  c.set_output(0, c.scope().op(kOp, {x}, {}, kOp), nhwc);
}

constexpr char kRelu[] = "Relu", kSigmoid[] = "Sigmoid", kTanh[] = "Tanh", kAbs[] = "Abs", kNeg[] = "Neg",
               kSqrt[] = "Sqrt", kExp[] = "Exp", kLog[] = "Log", kReciprocal[] = "Reciprocal",
               kHardSwish[] = "HardSwish", kSign[] = "Sign", kErf[] = "Erf", kFloor[] = "Floor", kCeil[] = "Ceil",
               kRound[] = "Round", kSin[] = "Sin", kCos[] = "Cos", kTan[] = "Tan", kAsin[] = "Asin", kAcos[] = "Acos",
               kAtan[] = "Atan", kSinh[] = "Sinh", kCosh[] = "Cosh", kAsinh[] = "Asinh", kAcosh[] = "Acosh",
               kAtanh[] = "Atanh", kLogicalNot[] = "LogicalNot", kSquare[] = "Square";

void map_elu(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  c.set_output(
      0, c.scope().op("Elu", {x}, Attrs().set("alpha", static_cast<double>(c.attr_float("alpha", 1.0f))), "Elu"), nhwc);
}

void map_leaky_relu(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  c.set_output(0,
               c.scope().op("LeakyRelu", {x}, Attrs().set("alpha", static_cast<double>(c.attr_float("alpha", 0.01f))),
                            "LeakyRelu"),
               nhwc);
}

void map_hard_sigmoid(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  Attrs a;
  a.set("alpha", static_cast<double>(c.attr_float("alpha", 0.2f)));
  a.set("beta", static_cast<double>(c.attr_float("beta", 0.5f)));
  c.set_output(0, c.scope().op("HardSigmoid", {x}, a, "HardSigmoid"), nhwc);
}

// Clip with its optional min/max inputs: Relu / Relu6 when they are exactly
// those constants, ClipByValue for other constants, Maximum/Minimum when a
// bound is only known at run time.
void map_clip(NodeContext& c) {
  auto bound = [&](int i) -> std::optional<double> {
    if (!c.has_input(i)) return std::nullopt;
    std::optional<Tensor> t = c.constant(i);
    if (!t) return std::nullopt;
    if (t->num_elements() != 1 || t->dtype() != DType::kFloat32)
      c.fail(std::string(i == 1 ? "min" : "max") + " must be a float scalar");
    return static_cast<double>(t->data<float>()[0]);
  };
  const bool runtime_bound = (c.has_input(1) && !c.constant(1)) || (c.has_input(2) && !c.constant(2));
  if (runtime_bound) {
    Arithmetic in = arithmetic_operands(c, 0, 3);
    Output y = in.values[0];
    size_t k = 1;
    if (c.has_input(1)) y = c.scope().op("Maximum", {y, in.values[k++]}, {}, "min");
    if (c.has_input(2)) y = c.scope().op("Minimum", {y, in.values[k]}, {}, "max");
    c.set_output(0, in.narrow(c, y), in.nhwc);
    return;
  }
  std::optional<double> lo = bound(1), hi = bound(2);
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  Output y;
  if (lo == 0.0 && !hi) {
    y = c.scope().op("Relu", {x}, {}, "Relu");
  } else if (lo == 0.0 && hi == 6.0) {
    y = c.scope().op("Relu6", {x}, {}, "Relu6");
  } else if (!lo && !hi) {
    y = c.scope().op("Identity", {x}, {}, "Identity");
  } else {
    Attrs a;
    if (lo) a.set("min", *lo);
    if (hi) a.set("max", *hi);
    y = c.scope().op("ClipByValue", {x}, a, "ClipByValue");
  }
  c.set_output(0, y, nhwc);
}

void map_prelu(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  const int rank = c.rank(0);
  Output slope = c.weight(1, [&](const Tensor& s) {
    // ONNX broadcasts the slope unidirectionally against x (right-aligned).
    if (nhwc) return to_nhwc_operand(s);
    std::vector<int64_t> dims(static_cast<size_t>(std::max(0, rank - s.rank())), 1);
    for (int64_t d : s.shape().dims()) dims.push_back(d);
    return s.reshaped(Shape(dims)).clone();
  });
  c.set_output(0, c.scope().op("PRelu", {x, slope}, {}, "PRelu"), nhwc);
}

void map_pow(NodeContext& c) {
  std::optional<Tensor> e = c.constant(1);
  if (e && e->num_elements() == 1 && e->dtype() == DType::kFloat32 && c.dtype(0) == DType::kFloat32) {
    float v = e->data<float>()[0];
    if (v == 2.0f || v == 0.5f || v == 1.0f) {
      bool nhwc;
      Output x = unary_input(c, &nhwc);
      const char* op = v == 2.0f ? "Square" : v == 0.5f ? "Sqrt" : "Identity";
      c.set_output(0, c.scope().op(op, {x}, {}, op), nhwc);
      return;
    }
  }
  if (c.dtype(0) == DType::kFloat32 && c.dtype(1) == DType::kFloat32) {
    map_binary<kPow>(c);
    return;
  }
  // Integer operands: in float32, an integer result rounded back to its
  // type (exact while it stays below 2^24).
  Operands in = operands(c, 0, 2);
  const Scope& s = c.scope();
  for (size_t i = 0; i < 2; ++i)
    if (c.dtype(static_cast<int>(i)) != DType::kFloat32)
      in.values[i] = ops::cast(s, in.values[i], DType::kFloat32, "AsFloat" + std::to_string(i));
  Output y = s.op("Pow", in.values, {}, "Pow");
  if (c.dtype(0) != DType::kFloat32) y = ops::cast(s, s.op("Round", {y}, {}, "Round"), c.dtype(0), "Cast");
  c.set_output(0, y, in.nhwc);
}

void map_cast(NodeContext& c) {
  DType to = dtype_from_onnx(static_cast<int>(c.attr_int("to", 0)), "node '" + c.node().name() + "' attribute to");
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  c.set_output(0, c.scope().op("Cast", {x}, Attrs().set("dtype", to), "Cast"), nhwc);
}

// CastLike(x, like): a Cast to like's type.
void map_cast_like(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  c.set_output(0, c.scope().op("Cast", {x}, Attrs().set("dtype", c.dtype(1)), "Cast"), nhwc);
}

// Dropout and Identity at inference: the input passes through (Dropout's
// mask, where asked, is all true). Dropout in training mode is that too
// with a ratio of 0; otherwise it is random, which hub does not import.
void map_passthrough(NodeContext& c) {
  if (c.op() == "Dropout" && c.has_input(2)) {
    std::optional<Tensor> training = c.constant(2);
    if (!training || training->dtype() != DType::kBool || training->num_elements() != 1)
      c.fail("training_mode must be a constant bool");
    if (training->data<bool>()[0]) {
      std::optional<Tensor> ratio = c.has_input(1) ? c.constant(1) : std::nullopt;
      const bool zero = ratio && ratio->num_elements() == 1 &&
                        evaluate("Cast", {*ratio}, Attrs().set("dtype", DType::kFloat32)).data<float>()[0] == 0;
      if (!zero)
        c.fail(
            "training_mode true with a ratio that is not a constant 0 drops at random (hub imports models for "
            "inference)");
    }
  }
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  c.set_output(0, c.scope().op("Identity", {x}, {}, "Identity"), nhwc);
  if (c.op() == "Dropout" && c.node().output_size() > 1 && !c.node().output(1).empty())
    c.set_output(1, ops::cast(c.scope(), ops::ones_like(c.scope(), x), DType::kBool, "Mask"), nhwc);
}

// ---- shapes ---------------------------------------------------------------------------

// The dims of a reshape's result with at most one unknown (as -1), from the
// constant target (0 copies the input's dim, -1 is inferred) or, when the
// target is computed at run time, from shape inference.
std::vector<int64_t> reshape_dims(NodeContext& c, const Shape& in, const std::optional<std::vector<int64_t>>& target) {
  std::vector<int64_t> dims;
  if (std::optional<Shape> out = c.output_shape(0); out && out->rank() > 0) {
    dims = out->dims();
  } else if (target) {
    dims = *target;
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i] == 0 && c.attr_int("allowzero", 0) == 0) {
        if (static_cast<int>(i) >= in.rank())
          c.fail("shape element 0 at " + std::to_string(i) + " has no input dim to copy");
        dims[i] = in[static_cast<int>(i)];
      }
  } else {
    c.fail("the target shape is computed at run time and shape inference could not determine it");
  }
  int unknown = 0;
  for (int64_t& d : dims)
    if (d < 0) {
      d = -1;
      ++unknown;
    }
  if (unknown > 1)
    c.fail("the result shape " + Shape(dims).to_string() + " has more than one dimension known only at run time");
  return dims;
}

// A run-time target like [N, -1] (PyTorch's x.view(x.size(0), -1)): each
// run-time element is a dim of x itself, so the -1 is computable from x's
// static dims and the run-time dim becomes hub's -1.
std::optional<std::vector<int64_t>> resolve_symbolic_target(NodeContext& c, const SymShape& target) {
  const Shape x = c.shape(0);
  int64_t known_product = 1;
  std::set<int> referenced;
  int minus_one = -1, symbolic = -1;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < target.size(); ++i) {
    const SymDim& d = target[i];
    if (d.known()) {
      if (d.value == -1)
        minus_one = static_cast<int>(i);
      else if (d.value <= 0)
        return std::nullopt;
      else if (__builtin_mul_overflow(known_product, d.value, &known_product))
        c.fail("the target shape's known elements overflow an int64 count");
      dims.push_back(d.value);
    } else {
      if (d.tensor != c.node().input(0) || symbolic >= 0) return std::nullopt;
      symbolic = static_cast<int>(i);
      referenced.insert(d.dim);
      dims.push_back(-1);
    }
  }
  // Every run-time dim of x must be the referenced one.
  int64_t x_known = 1;
  for (int d = 0; d < x.rank(); ++d) {
    if (x[d] >= 0) {
      if (__builtin_mul_overflow(x_known, x[d], &x_known)) c.fail("the input's dims overflow an int64 count");
    } else if (!referenced.count(d)) {
      return std::nullopt;
    }
  }
  if (minus_one >= 0) {
    if (x_known % known_product != 0) c.fail("the target shape does not divide the input's " + x.to_string());
    dims[static_cast<size_t>(minus_one)] = x_known / known_product;
  }
  return dims;
}

// Records run-time dim `d` as target entry `position` of a DynamicReshape or DynamicSlice.
void add_reference(NodeContext& c, ops::DimReferences& refs, size_t position, const SymDim& d) {
  const auto [tensor, dim] = c.dim_source(d);
  refs.add(static_cast<int64_t>(position), tensor, dim);
}

// A reshape whose target holds several run-time dims (a transformer's
// [batch, sequence, heads, depth] from Shape, Gather and Concat): each is a
// dim of a tensor the graph has, so DynamicReshape reads it from there.
Output dynamic_reshape(NodeContext& c, const SymShape& target) {
  const Shape x = c.shape(0);
  std::vector<int64_t> shape;
  ops::DimReferences refs;
  // One element computed by arithmetic (batch x heads) is the -1 where there is none.
  const int64_t derived = std::count_if(target.begin(), target.end(), [](const SymDim& d) { return d.derived; });
  const bool minus_one =
      std::any_of(target.begin(), target.end(), [](const SymDim& d) { return d.known() && d.value == -1; });
  if (derived > 1 || (derived == 1 && minus_one))
    c.fail("the target shape has " + std::to_string(derived) +
           " elements computed by arithmetic on run-time dims; one (with no -1) can be inferred");
  for (size_t i = 0; i < target.size(); ++i) {
    SymDim d = target[i];
    if (d.derived) {
      shape.push_back(-1);
      continue;
    }
    if (d.known() && d.value == 0 && c.attr_int("allowzero", 0) == 0) {  // 0 copies the input's dim
      if (static_cast<int>(i) >= x.rank()) c.fail("shape element 0 at " + std::to_string(i) + " has no input dim");
      d = x[static_cast<int>(i)] >= 0 ? SymDim::constant(x[static_cast<int>(i)])
                                      : SymDim::dim_of(c.node().input(0), static_cast<int>(i));
    }
    if (d.known()) {
      if (d.value < -1) c.fail("shape element " + std::to_string(d.value) + " at " + std::to_string(i));
      shape.push_back(d.value);
    } else {
      shape.push_back(0);
      add_reference(c, refs, i, d);
    }
  }
  return c.scope().op("DynamicReshape", refs.inputs(c.native(0)), Attrs().set("shape", shape).set("from", refs.from),
                      "Reshape");
}

void map_reshape(NodeContext& c) {
  std::optional<std::vector<int64_t>> target;
  if (c.constant(1)) {
    target = c.constant_ints(1, "shape");
  } else if (std::optional<SymShape> sym = c.symbolic(1)) {
    if (std::optional<std::vector<int64_t>> dims = resolve_symbolic_target(c, *sym)) {
      c.set_output(0, ops::reshape(c.scope(), c.native(0), *dims, "Reshape"));
      return;
    }
    c.set_output(0, dynamic_reshape(c, *sym));
    return;
  }
  std::vector<int64_t> dims = reshape_dims(c, c.shape(0), target);
  c.set_output(0, ops::reshape(c.scope(), c.native(0), dims, "Reshape"));
}

void map_flatten(NodeContext& c) {
  Shape s = c.shape(0);
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += s.rank();
  if (axis < 0 || axis > s.rank()) c.fail_attr("axis", std::to_string(c.attr_int("axis", 1)), "out of range");
  int64_t outer = 1, inner = 1;
  bool outer_known = true, inner_known = true;
  for (int i = 0; i < s.rank(); ++i) {
    (i < axis ? outer : inner) *= std::max<int64_t>(s[i], 1);
    if (s[i] < 0) (i < axis ? outer_known : inner_known) = false;
  }
  if (!outer_known && !inner_known) c.fail("both sides of the flatten have dimensions known only at run time");
  c.set_output(0,
               ops::reshape(c.scope(), c.native(0), {outer_known ? outer : -1, inner_known ? inner : -1}, "Flatten"));
}

void map_transpose(NodeContext& c) {
  const int rank = c.rank(0);
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty())
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int>(perm.size()) != rank)
    c.fail_attr("perm", std::to_string(perm.size()) + " entries", "rank is " + std::to_string(rank));
  if (c.is_nhwc(0)) {
    // Output dim k is logical dim perm[k], which lives at NHWC position nhwc_axis(perm[k]).
    std::vector<int64_t> physical;
    for (int64_t p : perm) physical.push_back(nhwc_axis(p));
    c.set_output(0, ops::transpose(c.scope(), c.nhwc(0), physical, "Transpose"));
  } else {
    c.set_output(0, ops::transpose(c.scope(), c.native(0), perm, "Transpose"));
  }
}

std::vector<int64_t> axes_input(NodeContext& c, int i, int rank, const std::string& what) {
  std::vector<int64_t> axes = c.constant_ints(i, what);
  for (int64_t& a : axes) a = normalize_axis(c, a, rank, what);
  return axes;
}

void map_squeeze(NodeContext& c) {
  const int rank = c.rank(0);
  std::vector<int64_t> axes;
  if (c.has_input(1)) axes = axes_input(c, 1, rank, "axes");
  c.set_output(0, ops::squeeze(c.scope(), c.native(0), axes, "Squeeze"));
}

void map_unsqueeze(NodeContext& c) {
  std::vector<int64_t> axes = c.constant_ints(1, "axes");
  const int out_rank = c.rank(0) + static_cast<int>(axes.size());
  for (int64_t& a : axes) a = normalize_axis(c, a, out_rank, "axes");
  std::sort(axes.begin(), axes.end());
  Output x = c.native(0);
  for (int64_t a : axes) x = ops::expand_dims(c.scope(), x, a, "ExpandDims");
  c.set_output(0, x);
}

void map_concat(NodeContext& c) {
  const int rank = c.rank(0);
  int64_t axis = normalize_axis(c, c.attr_int("axis", 0), rank, "axis");
  Operands in = operands(c);
  c.set_output(0, ops::concat(c.scope(), in.values, in.nhwc ? nhwc_axis(axis) : axis, "Concat"), in.nhwc);
}

void map_split(NodeContext& c) {
  const int rank = c.rank(0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), rank, "axis");
  const bool nhwc = rank == 4 && c.is_nhwc(0);
  Attrs a;
  a.set("axis", nhwc ? nhwc_axis(axis) : axis);
  if (c.has_input(1))
    a.set("sizes", c.constant_ints(1, "split"));
  else
    a.set("num_split", static_cast<int64_t>(c.node().output_size()));
  std::vector<Output> outs = c.scope().op_n("Split", {nhwc ? c.nhwc(0) : c.native(0)}, a, "Split");
  for (size_t i = 0; i < outs.size() && static_cast<int>(i) < c.node().output_size(); ++i)
    c.set_output(static_cast<int>(i), outs[i], nhwc);
}

// Slice: constant starts/ends/axes/steps, on a static shape where needed.
// A Slice whose starts or ends are run-time dims of tensors the graph has (an
// imported transformer's position_ids[:, :sequence]), or whose starts are
// sums of such dims (GPT-2's causal mask bias[key - query : key]):
// DynamicSlice, steps 1. False (nothing built) for bounds it cannot take:
// they are read at run time instead (map_run_time_slice).
bool map_dynamic_slice(NodeContext& c, const SymShape& starts, const SymShape& ends) {
  const Shape s = c.shape(0);
  const int rank = s.rank();
  std::vector<int64_t> axes;
  if (c.has_input(3))
    axes = c.constant_ints(3, "axes");
  else
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (c.has_input(4))
    for (int64_t step : c.constant_ints(4, "steps"))
      if (step != 1) return false;
  if (ends.size() != starts.size() || axes.size() != starts.size()) c.fail("starts, ends and axes differ in length");
  std::vector<int64_t> begin(rank, 0), size(rank, -1), begin_from;
  ops::DimReferences refs;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = normalize_axis(c, axes[k], rank, "axes");
    const int64_t dim = s[static_cast<int>(a)];
    const bool runtime_start = !starts[k].known();
    int64_t st = 0;
    if (runtime_start) {
      // value + sum of coefficient x dim, resolved (and made non-negative) at each run.
      const std::optional<Linear> linear = starts[k].linear();
      if (!linear) return false;  // arithmetic other than sums of run-time dims
      begin[a] = linear->value;
      for (const auto& [key, coefficient] : linear->terms) {
        const auto [tensor, d] = c.dim_source(SymDim::dim_of(key.first, key.second));
        begin_from.insert(begin_from.end(), {a, refs.input(tensor), d, coefficient});
      }
    } else {
      st = starts[k].value;
      if (st < 0 && dim < 0) return false;  // counted from an end known only at run time
      if (st < 0) st += dim;
      st = std::max<int64_t>(st, 0);
      if (dim >= 0) st = std::min(st, dim);
      begin[a] = st;
    }
    if (!ends[k].known()) {
      if (ends[k].derived) return false;  // arithmetic on run-time dims
      add_reference(c, refs, static_cast<size_t>(a), ends[k]);
      continue;
    }
    int64_t en = ends[k].value;
    if (en >= std::numeric_limits<int32_t>::max() || (runtime_start && dim >= 0 && en >= dim)) continue;  // the rest
    if (dim < 0 || runtime_start) return false;  // a constant end with a start or size known only at run time
    if (en < 0) en += dim;
    size[a] = std::max<int64_t>(0, std::clamp<int64_t>(en, 0, dim) - st);
  }
  c.set_output(
      0,
      c.scope().op("DynamicSlice", refs.inputs(c.native(0)),
                   Attrs().set("begin", begin).set("size", size).set("from", refs.from).set("begin_from", begin_from),
                   "Slice"));
  return true;
}

// Starts and ends read at run time (a loop body's x[i : i + 1]), or bounds
// on a dim known only at run time: DynamicStridedSlice, in ONNX's order.
void map_run_time_slice(NodeContext& c) {
  const int rank = c.rank(0);
  std::vector<int64_t> axes, steps;
  if (c.has_input(3)) {
    for (int64_t a : c.constant_ints(3, "axes")) axes.push_back(normalize_axis(c, a, rank, "axes"));
  } else {
    const Shape b = c.shape(1);
    if (b.rank() != 1 || b[0] < 0) c.fail("without axes, starts must be 1-D of a known length, got " + b.to_string());
    for (int64_t i = 0; i < b[0]; ++i) axes.push_back(i);
  }
  steps = c.has_input(4) ? c.constant_ints(4, "steps") : std::vector<int64_t>(axes.size(), 1);
  if (steps.size() != axes.size()) c.fail("axes and steps differ in length");
  for (size_t k = 0; k < steps.size(); ++k)
    if (steps[k] == 0) c.fail("step 0 on axis " + std::to_string(axes[k]));
  c.set_output(0, ops::dynamic_strided_slice(c.scope(), c.native(0), c.native(1), c.native(2), axes, steps));
}

void map_slice(NodeContext& c) {
  if (!c.constant(1) || !c.constant(2)) {
    const std::optional<SymShape> starts = c.symbolic(1), ends = c.symbolic(2);
    if (!(starts && ends && map_dynamic_slice(c, *starts, *ends))) map_run_time_slice(c);
    return;
  }
  const Shape s = c.shape(0);
  const int rank = s.rank();
  std::vector<int64_t> starts = c.constant_ints(1, "starts"), ends = c.constant_ints(2, "ends");
  std::vector<int64_t> axes, steps;
  if (c.has_input(3))
    axes = c.constant_ints(3, "axes");
  else
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (c.has_input(4))
    steps = c.constant_ints(4, "steps");
  else
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  for (size_t k = 0; k < axes.size(); ++k) {
    const bool full = starts[k] == 0 && steps[k] == 1 && ends[k] >= std::numeric_limits<int32_t>::max();
    if (s[static_cast<int>(normalize_axis(c, axes[k], rank, "axes"))] < 0 && !full)
      return map_run_time_slice(c);  // bounds on a dim known only at run time
  }
  // Per dim: begin/end/stride in TF StridedSlice terms, with ONNX's clamping.
  std::vector<int64_t> begin(rank, 0), end(rank, 0), stride(rank, 1);
  int64_t begin_mask = 0, end_mask = 0;
  for (int d = 0; d < rank; ++d) begin_mask |= int64_t{1} << d, end_mask |= int64_t{1} << d;
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = normalize_axis(c, axes[k], rank, "axes");
    if (steps[k] == 0) c.fail("step 0 on axis " + std::to_string(a));
    int64_t dim = s[static_cast<int>(a)];
    if (dim < 0) continue;  // the full range (above)
    const auto [st, en] = ops::onnx_slice_bounds(dim, starts[k], ends[k], steps[k]);
    begin[a] = st;
    end[a] = en;
    stride[a] = steps[k];
    begin_mask &= ~(int64_t{1} << a);
    end_mask &= ~(int64_t{1} << a);
    if (steps[k] < 0 && en == -1) end_mask |= int64_t{1} << a;  // down to and including 0
  }
  const bool nhwc = rank == 4 && c.is_nhwc(0);
  auto place = [&](std::vector<int64_t> v) {
    if (!nhwc) return v;
    std::vector<int64_t> p(4);
    for (int d = 0; d < 4; ++d) p[nhwc_axis(d)] = v[d];
    return p;
  };
  auto place_mask = [&](int64_t m) {
    if (!nhwc) return m;
    int64_t p = 0;
    for (int d = 0; d < 4; ++d)
      if (m & (int64_t{1} << d)) p |= int64_t{1} << nhwc_axis(d);
    return p;
  };
  Output x = nhwc ? c.nhwc(0) : c.native(0);
  bool unit = true;
  for (int64_t st : stride) unit = unit && st == 1;
  if (unit && begin_mask == 0 && end_mask == 0) {
    std::vector<int64_t> size(rank);
    for (int d = 0; d < rank; ++d) size[d] = end[d] - begin[d];
    c.set_output(0, ops::slice(c.scope(), x, place(begin), place(size), "Slice"), nhwc);
    return;
  }
  Attrs a;
  a.set("begin", place(begin)).set("end", place(end)).set("strides", place(stride));
  a.set("begin_mask", place_mask(begin_mask)).set("end_mask", place_mask(end_mask));
  c.set_output(0, c.scope().op("StridedSlice", {x}, a, "StridedSlice"), nhwc);
}

void map_gather(NodeContext& c) {
  const Shape s = c.shape(0);
  int64_t axis = normalize_axis(c, c.attr_int("axis", 0), s.rank(), "axis");
  std::optional<Tensor> idx = c.constant(1);
  Output indices;
  if (idx) {
    // Negative indices count from the end of the axis (ONNX); hub's Gather
    // takes them in range.
    Tensor fixed(DType::kInt64, idx->shape());
    std::vector<int64_t> v = c.constant_ints(1, "indices");
    int64_t dim = s[static_cast<int>(axis)];
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t k = v[i] < 0 && dim >= 0 ? v[i] + dim : v[i];
      if (dim >= 0 && (k < 0 || k >= dim))
        c.fail("index " + std::to_string(v[i]) + " is out of range for axis " + std::to_string(axis) + " of size " +
               std::to_string(dim));
      fixed.data<int64_t>()[i] = k;
    }
    indices = c.constant_output(fixed, "indices");
  } else {
    indices = c.native(1);
  }
  c.set_output(0, c.scope().op("Gather", {c.native(0), indices}, Attrs().set("axis", axis), "Gather"));
}

void map_gather_elements(NodeContext& c) {
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), c.rank(0), "axis");
  c.set_output(0,
               c.scope().op("GatherElements", {c.native(0), c.native(1)}, Attrs().set("axis", axis), "GatherElements"));
}

void map_gather_nd(NodeContext& c) {
  c.set_output(0, c.scope().op("GatherND", {c.native(0), c.native(1)},
                               Attrs().set("batch_dims", c.attr_int("batch_dims", 0)), "GatherND"));
}

// ScatterND and ScatterElements (Scatter, before opset 11, is converted to
// ScatterElements by ONNX's version converter).
void map_scatter(NodeContext& c) {
  Attrs a;
  a.set("reduction", c.attr_string("reduction", "none"));
  if (c.op() == "ScatterElements") a.set("axis", normalize_axis(c, c.attr_int("axis", 0), c.rank(0), "axis"));
  c.set_output(0, c.scope().op(c.op(), {c.native(0), c.native(1), c.native(2)}, a, c.op()));
}

// An int32 or int64 scalar constant.
Output index_scalar(NodeContext& c, int64_t value, DType dtype, const std::string& name) {
  return c.constant_output(
      dtype == DType::kInt32 ? Tensor::scalar<int32_t>(static_cast<int32_t>(value)) : Tensor::scalar<int64_t>(value),
      name);
}

// OneHot(indices, depth, values [off, on]): hub's OneHot puts the new dim
// last and counts no index from the end, so negative indices are wrapped
// first and the dim is moved to `axis` after.
void map_one_hot(NodeContext& c) {
  // depth: any numeric type (a float is truncated), one value in [1, 2^24].
  std::optional<Tensor> depth_t = c.constant(1);
  if (!depth_t || depth_t->num_elements() != 1) c.fail("depth (input 1) must be one constant value");
  const double depth_v = evaluate("Cast", {*depth_t}, Attrs().set("dtype", DType::kFloat32)).data<float>()[0];
  if (!(depth_v >= 1 && depth_v <= double{1 << 24}))
    c.fail("depth (input 1) must be in [1, 2^24], got " + std::to_string(depth_v));
  const std::vector<int64_t> depth{static_cast<int64_t>(depth_v)};
  std::optional<Tensor> values = c.constant(2);
  if (!values || values->num_elements() != 2) c.fail("values (input 2) must be a constant [off, on]");
  const Tensor v = evaluate("Cast", {*values}, Attrs().set("dtype", DType::kFloat32));
  const int rank = c.rank(0) + 1;
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), rank, "axis");
  const Scope& s = c.scope();
  Output idx = c.native(0);
  if (c.dtype(0) != DType::kInt32 && c.dtype(0) != DType::kInt64) idx = ops::cast(s, idx, DType::kInt64, "AsIndex");
  const DType it = c.dtype(0) == DType::kInt32 ? DType::kInt32 : DType::kInt64;
  Output zero = index_scalar(c, 0, it, "zero_index");
  Output d = index_scalar(c, depth[0], it, "depth_index");
  idx = ops::select(s, ops::less(s, idx, zero, "Negative"), ops::add(s, idx, d, "FromEnd"), idx, "Wrapped");
  Output y = s.op("OneHot", {idx},
                  Attrs()
                      .set("depth", depth[0])
                      .set("off_value", static_cast<double>(v.data<float>()[0]))
                      .set("on_value", static_cast<double>(v.data<float>()[1])),
                  "OneHot");
  if (axis != rank - 1) {
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < rank - 1; ++i) {
      if (i == axis) perm.push_back(rank - 1);
      perm.push_back(i);
    }
    y = ops::transpose(s, y, perm, "ToAxis");
  }
  if (values->dtype() != DType::kFloat32) y = ops::cast(s, y, values->dtype(), "Cast");
  c.set_output(0, y);
}

void map_pad(NodeContext& c) {
  const int rank = c.rank(0);
  std::vector<int64_t> pads = c.constant_ints(1, "pads");
  if (static_cast<int>(pads.size()) != 2 * rank)
    c.fail("pads has " + std::to_string(pads.size()) + " entries for rank " + std::to_string(rank));
  if (c.has_input(3)) c.fail("the axes input is not supported");
  double value = 0;
  if (c.has_input(2)) {
    std::optional<Tensor> v = c.constant(2);
    if (!v || v->num_elements() != 1) c.fail("constant_value must be a constant scalar");
    dispatch_dtype(v->dtype(), [&](auto tag) { value = static_cast<double>(v->data<decltype(tag)>()[0]); });
  }
  std::string mode = c.attr_string("mode", "constant");
  const char* hub_mode = mode == "constant"  ? "CONSTANT"
                         : mode == "reflect" ? "REFLECT"
                         : mode == "edge"    ? "EDGE"
                                             : nullptr;
  if (!hub_mode) c.fail_attr("mode", mode, "expected constant, reflect or edge");
  for (int64_t p : pads)
    if (p < 0) c.fail("negative pads (cropping) are not supported");
  const bool nhwc = rank == 4 && c.is_nhwc(0);
  // ONNX: [b_0, ..., b_{r-1}, e_0, ..., e_{r-1}]; hub: [b_0, e_0, b_1, e_1, ...].
  std::vector<int64_t> paddings(2 * rank);
  for (int d = 0; d < rank; ++d) {
    int64_t p = nhwc ? nhwc_axis(d) : d;
    paddings[2 * p] = pads[d];
    paddings[2 * p + 1] = pads[d + rank];
  }
  Attrs a;
  a.set("paddings", paddings).set("mode", hub_mode).set("constant_value", value);
  c.set_output(0, c.scope().op("Pad", {nhwc ? c.nhwc(0) : c.native(0)}, a, "Pad"), nhwc);
}

void map_tile(NodeContext& c) {
  std::vector<int64_t> repeats = c.constant_ints(1, "repeats");
  c.set_output(0, c.scope().op("Tile", {c.native(0)}, Attrs().set("multiples", repeats), "Tile"));
}

void map_expand(NodeContext& c) {
  if (!c.constant(1))
    if (std::optional<SymShape> sym = c.symbolic(1)) {
      // Expanded to the run-time shape of one tensor (and no larger: x's dims are 1 or those).
      const std::optional<Output> like = whole_shape_of(c, *sym);
      const Shape x = c.shape(0);
      bool fits = like && x.rank() <= static_cast<int>(sym->size());
      for (int d = 0; fits && d < x.rank(); ++d) {
        const SymDim& t = (*sym)[sym->size() - static_cast<size_t>(x.rank()) + static_cast<size_t>(d)];
        fits = x[d] == 1 || (t.known() ? x[d] == t.value : x[d] < 0);  // run-time dims checked at run time
      }
      if (fits) {
        c.set_output(0, c.scope().op("BroadcastLike", {c.native(0), *like}, {}, "Expand"));
        return;
      }
      // Dims of several tensors (an attention mask expanded to [batch, 1, target, source]):
      // BroadcastTo reads them at each run.
      std::vector<int64_t> shape;
      ops::DimReferences refs;
      for (size_t i = 0; i < sym->size(); ++i) {
        const SymDim& d = (*sym)[i];
        if (d.derived) c.fail("shape entry " + std::to_string(i) + " is computed by arithmetic on run-time dims");
        if (d.known() && d.value < 0) c.fail("shape entry " + std::to_string(i) + " is negative");
        shape.push_back(d.known() ? d.value : 1);
        if (!d.known()) add_reference(c, refs, i, d);
      }
      c.set_output(0, c.scope().op("BroadcastTo", refs.inputs(c.native(0)),
                                   Attrs().set("shape", shape).set("from", refs.from), "BroadcastTo"));
      return;
    }
  std::vector<int64_t> shape = c.constant_ints(1, "shape");
  c.set_output(0, c.scope().op("BroadcastTo", {c.native(0)}, Attrs().set("shape", shape), "BroadcastTo"));
}

// ---- reductions -----------------------------------------------------------------------

// A reduction's axes (ONNX's attribute, or ReduceSum's input; none: every
// axis), keepdims, and its input in the layout it runs in (NHWC where it
// keeps dims of an NHWC value).
struct Reduction {
  std::vector<int64_t> axes;
  bool keep = true, nhwc = false;
  Output x;
};

Reduction reduction(NodeContext& c, std::vector<int64_t> axes) {
  const int rank = c.rank(0);
  if (axes.empty())
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  Reduction r;
  r.keep = c.attr_int("keepdims", 1) != 0;
  r.nhwc = r.keep && rank == 4 && c.is_nhwc(0);
  if (r.nhwc)
    for (int64_t& a : axes) a = nhwc_axis(a);
  r.axes = std::move(axes);
  r.x = r.nhwc ? c.nhwc(0) : c.native(0);
  return r;
}

std::vector<int64_t> axes_attr(NodeContext& c) {
  std::vector<int64_t> axes;
  for (int64_t a : c.attr_ints("axes")) axes.push_back(normalize_axis(c, a, c.rank(0), "axes"));
  return axes;
}

// kOp over the axes, of kBefore(x) when given, then kAfter of the result
// when given (ReduceL1 = Sum of Abs, ReduceL2 = Sqrt of Sum of Square, ...).
constexpr char kNone[] = "";
template <const char* kOp, const char* kBefore = kNone, const char* kAfter = kNone>
void map_reduce(NodeContext& c) {
  std::vector<int64_t> axes;
  if (c.op() == "ReduceSum") {
    if (c.has_input(1)) axes = axes_input(c, 1, c.rank(0), "axes");
    if (axes.empty() && c.attr_int("noop_with_empty_axes", 0)) {
      bool nhwc;
      Output x = unary_input(c, &nhwc);
      c.set_output(0, c.scope().op("Identity", {x}, {}, "Identity"), nhwc);
      return;
    }
  } else {
    axes = axes_attr(c);
  }
  Reduction r = reduction(c, std::move(axes));
  Attrs attrs;
  attrs.set("axes", r.axes).set("keep_dims", r.keep);
  Output x = r.x;
  if (kBefore[0]) x = c.scope().op(kBefore, {x}, {}, kBefore);
  Output y = c.scope().op(kOp, {x}, attrs, kOp);
  if (kAfter[0]) y = c.scope().op(kAfter, {y}, {}, kAfter);
  c.set_output(0, y, r.nhwc);
}

// ReduceLogSumExp: m + log(sum(exp(x - m))) with m the maximum, so no exp overflows.
void map_reduce_log_sum_exp(NodeContext& c) {
  Reduction r = reduction(c, axes_attr(c));
  const Scope& s = c.scope();
  Output m = ops::max(s, r.x, r.axes, true, "Max");
  Output sum = ops::sum(s, ops::exp(s, ops::sub(s, r.x, m, "Shifted"), "Exp"), r.axes, r.keep, "Sum");
  Output m_out = r.keep ? m : ops::max(s, r.x, r.axes, false, "MaxOut");
  c.set_output(0, ops::add(s, ops::log(s, sum, "Log"), m_out, "LogSumExp"), r.nhwc);
}

constexpr char kSum[] = "Sum", kMean[] = "Mean", kMax[] = "Max", kMin[] = "Min", kProd[] = "Prod";

// NegativeLogLikelihoodLoss(input [N, C, d..], target [N, d..], weight [C]):
// -input[n, target, d..] * weight[target], 0 where target is ignore_index;
// reduced by none, sum or mean (a mean weighted by the targets' weights).
Output nll_loss(NodeContext& c, Output input, int rank) {
  const Scope& s = c.scope();
  const std::string reduction = c.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    c.fail_attr("reduction", reduction, "expected none, sum or mean");
  if (rank < 2) c.fail("the input needs rank >= 2 (N, C, ...), got " + c.shape(0).to_string());
  Output target = c.native(1);
  if (c.dtype(1) != DType::kInt64 && c.dtype(1) != DType::kInt32)
    c.fail("the target must be int32 or int64, got " + std::string(dtype_name(c.dtype(1))));
  std::optional<Output> weight;  // each element's weight, where the loss is weighted
  if (c.has_attr("ignore_index")) {
    Output ignore = index_scalar(c, c.attr_int("ignore_index", 0), c.dtype(1), "ignore_index");
    Output valid = ops::not_equal(s, target, ignore, "Counted");
    target = ops::select(s, valid, target, ops::zeros_like(s, target), "SafeTarget");
    weight = ops::cast(s, valid, DType::kFloat32, "CountedWeight");
  }
  Output picked = s.op("GatherElements", {input, ops::expand_dims(s, target, 1, "TargetColumn")},
                       Attrs().set("axis", int64_t{1}), "Picked");
  picked = ops::squeeze(s, picked, {1}, "PickedRow");
  if (c.has_input(2)) {
    Output w = ops::gather(s, c.native(2), target, 0, 0, "ClassWeight");
    weight = weight ? ops::mul(s, *weight, w, "Weight") : w;
  }
  Output loss = ops::neg(s, weight ? ops::mul(s, picked, *weight, "Weighted") : picked, "Loss");
  if (reduction == "none") return loss;
  Output total = ops::sum(s, loss, {}, false, "Total");
  if (reduction == "sum") return total;
  return weight ? ops::div(s, total, ops::sum(s, *weight, {}, false, "TotalWeight"), "Mean")
                : ops::mean(s, loss, {}, false, "Mean");
}

void map_nll_loss(NodeContext& c) { c.set_output(0, nll_loss(c, c.native(0), c.rank(0))); }

// SoftmaxCrossEntropyLoss: the NLL loss of LogSoftmax over the classes (dim
// 1), which is the optional second output.
void map_softmax_cross_entropy_loss(NodeContext& c) {
  if (c.dtype(0) != DType::kFloat32) c.fail("the scores must be float32");
  Output log_prob = ops::log_softmax(c.scope(), c.native(0), 1, "LogProb");
  c.set_output(0, nll_loss(c, log_prob, c.rank(0)));
  if (c.node().output_size() > 1 && !c.node().output(1).empty()) c.set_output(1, log_prob);
}

template <const char* kOp>
void map_softmax(NodeContext& c) {
  const int rank = c.rank(0);
  int64_t axis = normalize_axis(c, c.attr_int("axis", -1), rank, "axis");
  const bool nhwc = rank == 4 && c.is_nhwc(0);
  c.set_output(
      0, c.scope().op(kOp, {nhwc ? c.nhwc(0) : c.native(0)}, Attrs().set("axis", nhwc ? nhwc_axis(axis) : axis), kOp),
      nhwc);
}

constexpr char kSoftmax[] = "Softmax", kLogSoftmax[] = "LogSoftmax", kArgMax[] = "ArgMax", kArgMin[] = "ArgMin";

// ArgMax, ArgMin.
template <const char* kOp>
void map_arg_extreme(NodeContext& c) {
  const int rank = c.rank(0);
  int64_t axis = normalize_axis(c, c.attr_int("axis", 0), rank, "axis");
  Output y = c.scope().op(kOp, {c.native(0)},
                          Attrs().set("axis", axis).set("select_last", c.attr_int("select_last_index", 0) != 0), kOp);
  if (c.attr_int("keepdims", 1)) y = ops::expand_dims(c.scope(), y, axis, "keepdims");
  c.set_output(0, y);
}

// CumSum(x, axis): the axis a constant scalar (or one-element) tensor.
void map_cum_sum(NodeContext& c) {
  const std::vector<int64_t> axis = c.constant_ints(1, "axis");
  if (axis.size() != 1) c.fail("axis (input 1) must hold one value, got " + std::to_string(axis.size()));
  Attrs a;
  a.set("axis", normalize_axis(c, axis[0], c.rank(0), "axis"))
      .set("exclusive", c.attr_int("exclusive", 0) != 0)
      .set("reverse", c.attr_int("reverse", 0) != 0);
  c.set_output(0, c.scope().op("CumSum", {c.native(0)}, a, "CumSum"));
}

// Selu: gamma * Elu(x; alpha).
void map_selu(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  const Scope& s = c.scope();
  Output elu = s.op(
      "Elu", {x}, Attrs().set("alpha", static_cast<double>(c.attr_float("alpha", 1.67326319217681884765625f))), "Elu");
  c.set_output(0, ops::mul(s, elu, ops::scalar(s, c.attr_float("gamma", 1.05070102214813232421875f), "gamma"), "Selu"),
               nhwc);
}

// Celu: max(0, x) + min(0, alpha * (e^(x / alpha) - 1)) = alpha * Elu(x / alpha).
void map_celu(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  const Scope& s = c.scope();
  const float alpha = c.attr_float("alpha", 1.0f);
  if (!(alpha != 0.0f) || !std::isfinite(alpha))
    c.fail_attr("alpha", std::to_string(alpha), "must be finite and nonzero");
  Output elu =
      s.op("Elu", {ops::div(s, x, ops::scalar(s, alpha, "alpha"), "scaled")}, Attrs().set("alpha", 1.0), "Elu");
  c.set_output(0, ops::mul(s, elu, ops::scalar(s, alpha, "alpha_again"), "Celu"), nhwc);
}

// IsNaN: x != x.
void map_is_nan(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  c.set_output(0, ops::not_equal(c.scope(), x, x, "IsNaN"), nhwc);
}

// MeanVarianceNormalization over `axes` (default [0, 2, 3]): (x - mean) /
// (sqrt(variance) + 1e-9), as ONNX's function defines it (the variance
// computed about the mean).
void map_mean_variance_normalization(NodeContext& c) {
  const int rank = c.rank(0);
  std::vector<int64_t> axes;
  for (int64_t a : c.attr_ints("axes", {0, 2, 3})) axes.push_back(normalize_axis(c, a, rank, "axes"));
  const Scope& s = c.scope();
  Output x = c.native(0);
  Output centred = ops::sub(s, x, ops::mean(s, x, axes, true, "mean"), "centred");
  Output std_dev = ops::sqrt(s, ops::mean(s, ops::square(s, centred, "squared"), axes, true, "variance"), "std_dev");
  Output denominator = ops::add(s, std_dev, ops::scalar(s, 1e-9f, "epsilon"), "denominator");
  c.set_output(0, ops::div(s, centred, denominator, "MeanVarianceNormalization"));
}

// Softplus: log(1 + e^x), as max(x, 0) + log(1 + e^-|x|) (no overflow).
void map_softplus(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  const Scope& s = c.scope();
  Output tail = ops::exp(s, ops::neg(s, ops::abs(s, x, "abs"), "minus_abs"), "tail");
  Output log1p = ops::log(s, ops::add(s, tail, ops::scalar(s, 1.0f, "one"), "one_plus"), "log1p");
  c.set_output(0, ops::add(s, s.op("Relu", {x}, {}, "Relu"), log1p, "Softplus"), nhwc);
}

// Softsign: x / (1 + |x|).
void map_softsign(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  const Scope& s = c.scope();
  Output denominator = ops::add(s, ops::abs(s, x, "abs"), ops::scalar(s, 1.0f, "one"), "one_plus_abs");
  c.set_output(0, ops::div(s, x, denominator, "Softsign"), nhwc);
}

// ThresholdedRelu: x where x > alpha, else 0.
void map_thresholded_relu(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  const Scope& s = c.scope();
  Output above = ops::greater(s, x, ops::scalar(s, c.attr_float("alpha", 1.0f), "alpha"), "above");
  c.set_output(0, ops::select(s, above, x, ops::scalar(s, 0.0f, "zero"), "ThresholdedRelu"), nhwc);
}

// Shrink: x + bias below -lambd, x - bias above lambd, else 0 (float32).
void map_shrink(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  const Scope& s = c.scope();
  const float lambd = c.attr_float("lambd", 0.5f), bias = c.attr_float("bias", 0.0f);
  Output low = ops::less(s, x, ops::scalar(s, -lambd, "minus_lambd"), "low");
  Output high = ops::greater(s, x, ops::scalar(s, lambd, "lambd"), "high");
  Output raised = ops::add(s, x, ops::scalar(s, bias, "bias"), "raised");
  Output lowered = ops::sub(s, x, ops::scalar(s, bias, "bias_again"), "lowered");
  Output inner = ops::select(s, high, lowered, ops::scalar(s, 0.0f, "zero"), "upper");
  c.set_output(0, ops::select(s, low, raised, inner, "Shrink"), nhwc);
}

// IsInf: x == +inf and/or x == -inf (detect_positive, detect_negative).
void map_is_inf(NodeContext& c) {
  bool nhwc;
  Output x = unary_input(c, &nhwc);
  const Scope& s = c.scope();
  const float inf = std::numeric_limits<float>::infinity();
  Output pos = ops::equal(s, x, ops::scalar(s, inf, "inf"), "positive");
  Output neg = ops::equal(s, x, ops::scalar(s, -inf, "minus_inf"), "negative");
  const bool want_pos = c.attr_int("detect_positive", 1) != 0, want_neg = c.attr_int("detect_negative", 1) != 0;
  Output y = want_pos && want_neg ? ops::logical_or(s, pos, neg, "IsInf")
             : want_pos           ? pos
             : want_neg           ? neg
                                  : ops::logical_and(s, pos, neg, "none");  // never both: all false
  c.set_output(0, y, nhwc);
}

// The permutation that swaps `axis` with the last dim (its own inverse), or
// empty when axis is the last.
std::vector<int64_t> swap_with_last(int64_t axis, int rank) {
  if (axis == rank - 1) return {};
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<size_t>(axis)], perm.back());
  return perm;
}

// Hardmax: 1 at the first maximum along `axis`, 0 elsewhere (OneHot of ArgMax).
void map_hardmax(NodeContext& c) {
  const Shape x = c.shape(0);
  const int rank = x.rank();
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), rank, "axis");
  if (x[static_cast<int>(axis)] < 0) c.fail("the size of axis " + std::to_string(axis) + " must be known at import");
  const Scope& s = c.scope();
  const std::vector<int64_t> perm = swap_with_last(axis, rank);
  Output v = perm.empty() ? c.native(0) : ops::transpose(s, c.native(0), perm, "to_last");
  Output y = ops::one_hot(s, ops::arg_max(s, v, -1, "argmax"), x[static_cast<int>(axis)], 1.0f, 0.0f, "one_hot");
  c.set_output(0, perm.empty() ? y : ops::transpose(s, y, perm, "from_last"));
}

// TopK with a constant K along any axis; smallest first as TopK of -x.
// Indices are int64 (hub's TopK gives int32).
void map_top_k(NodeContext& c) {
  const int rank = c.rank(0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), rank, "axis");
  const bool largest = c.attr_int("largest", 1) != 0;
  const Scope& s = c.scope();
  const std::vector<int64_t> perm = swap_with_last(axis, rank);
  Output v = perm.empty() ? c.native(0) : ops::transpose(s, c.native(0), perm, "to_last");
  if (!largest) v = ops::neg(s, v, "negated");
  ops::TopKResult top;
  if (c.constant(1)) {
    const std::vector<int64_t> k = c.constant_ints(1, "K");
    if (k.size() != 1 || k[0] < 0) c.fail("K must hold one non-negative value");
    top = ops::top_k(s, v, k[0], true, "TopK");
  } else {
    // K computed at run time (min(k, the boxes left)): read at each run.
    const std::vector<Output> outs = s.op_n("DynamicTopK", {v, c.native(1)}, Attrs().set("sorted", true), "TopK");
    top = {outs[0], outs[1]};
  }
  Output values = largest ? top.values : ops::neg(s, top.values, "values");
  Output indices = ops::cast(s, top.indices, DType::kInt64, "indices");
  if (!perm.empty()) {
    values = ops::transpose(s, values, perm, "values_back");
    indices = ops::transpose(s, indices, perm, "indices_back");
  }
  c.set_output(0, values);
  c.set_output(1, indices);
}

void map_reverse_sequence(NodeContext& c) {
  c.set_output(
      0,
      c.scope().op("ReverseSequence", {c.native(0), c.native(1)},
                   Attrs().set("batch_axis", c.attr_int("batch_axis", 1)).set("time_axis", c.attr_int("time_axis", 0)),
                   "ReverseSequence"));
}

// Unique: along `axis`, or over the flattened input without one.
void map_unique(NodeContext& c) {
  Output x = c.native(0);
  int64_t axis = 0;
  if (c.has_attr("axis"))
    axis = normalize_axis(c, c.attr_int("axis", 0), c.rank(0), "axis");
  else
    x = ops::reshape(c.scope(), x, {-1}, "flatten");
  std::vector<Output> outs =
      c.scope().op_n("Unique", {x}, Attrs().set("axis", axis).set("sorted", c.attr_int("sorted", 1) != 0), "Unique");
  for (int i = 0; i < c.node().output_size(); ++i)
    if (!c.node().output(i).empty()) c.set_output(i, outs[static_cast<size_t>(i)]);
}

void map_non_zero(NodeContext& c) { c.set_output(0, ops::non_zero(c.scope(), c.native(0), "NonZero")); }

// Compress: the slices of x along `axis` (x flattened without one) whose
// condition entry is true; entries past the axis' length are ignored.
void map_compress(NodeContext& c) {
  Output x = c.native(0);
  const Shape cond = c.shape(1);
  if (cond.rank() != 1) c.fail("condition must be 1-D, got " + cond.to_string());
  int64_t axis = 0;
  if (c.has_attr("axis")) {
    axis = normalize_axis(c, c.attr_int("axis", 0), c.rank(0), "axis");
  } else {
    x = ops::reshape(c.scope(), x, {-1}, "flatten");
  }
  const int64_t dim = c.scope().graph().spec(x).shape[static_cast<int>(axis)];
  Output condition = c.native(1);
  if (cond[0] < 0 || dim < 0) {
    if (cond[0] != dim) c.fail("condition " + cond.to_string() + " and the axis' length must be known at import");
  } else if (cond[0] > dim) {
    condition = ops::slice(c.scope(), condition, {0}, {dim}, "within");
  }
  Output positions = ops::squeeze(c.scope(), ops::non_zero(c.scope(), condition, "NonZero"), {0}, "positions");
  c.set_output(0, ops::gather(c.scope(), x, positions, axis, 0, "Compress"));
}

// NonMaxSuppression with constant limits (absent ones as ONNX's defaults).
void map_non_max_suppression(NodeContext& c) {
  auto scalar = [&](int i, DType dtype, const std::string& what) -> std::optional<Tensor> {
    if (!c.has_input(i)) return std::nullopt;
    std::optional<Tensor> t = c.constant(i);
    if (!t) c.fail(what + " must be a constant");
    if (t->dtype() != dtype || t->num_elements() != 1)
      c.fail(what + " must hold one " + std::string(dtype_name(dtype)) + ", got " + t->spec_string());
    return t;
  };
  ops::NmsOptions o;
  const int64_t center = c.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) c.fail_attr("center_point_box", std::to_string(center), "must be 0 or 1");
  o.center_point_box = center == 1;
  if (auto t = scalar(2, DType::kInt64, "max_output_boxes_per_class"))
    o.max_per_class = std::max<int64_t>(0, t->data<int64_t>()[0]);  // a negative one keeps none, as 0
  if (auto t = scalar(3, DType::kFloat32, "iou_threshold")) o.iou_threshold = t->data<float>()[0];
  if (!(o.iou_threshold >= 0 && o.iou_threshold <= 1))
    c.fail("iou_threshold " + std::to_string(o.iou_threshold) + " is outside [0, 1]");
  if (auto t = scalar(4, DType::kFloat32, "score_threshold")) {
    o.score_threshold = t->data<float>()[0];
    if (std::isnan(o.score_threshold)) c.fail("score_threshold is NaN");
  }
  c.set_output(0, ops::non_max_suppression(c.scope(), c.native(0), c.native(1), o, "NonMaxSuppression"));
}

// Trilu: x where (upper) j - i >= k or (lower) j - i <= k over the last two
// dims, else 0; k constant.
void map_trilu(NodeContext& c) {
  const Shape x = c.shape(0);
  const int rank = x.rank();
  if (rank < 2) c.fail("needs rank >= 2, got " + x.to_string());
  const int64_t rows = x[rank - 2], cols = x[rank - 1];
  if (rows < 0 || cols < 0) c.fail("the last two dims of " + x.to_string() + " must be known at import");
  int64_t k = 0;
  if (c.has_input(1)) {
    const std::vector<int64_t> v = c.constant_ints(1, "k");
    if (v.size() != 1) c.fail("k must hold one value");
    k = v[0];
  }
  const bool upper = c.attr_int("upper", 1) != 0;
  c.check_folded_size(Shape{rows, cols}, "the mask");
  Tensor mask(DType::kBool, Shape{rows, cols});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mask.data<bool>()[i * cols + j] = upper ? j - i >= k : j - i <= k;
  Output zero = c.constant_output(Tensor::zeros(c.dtype(0), Shape{}), "zero");
  c.set_output(0, ops::select(c.scope(), c.constant_output(mask, "mask"), c.native(0), zero, "Trilu"));
}

// EyeLike: folded (the input's 2-D shape must be static).
void map_eye_like(NodeContext& c) {
  const Shape x = c.shape(0);
  if (x.rank() != 2 || !x.is_fully_defined()) c.fail("needs a 2-D input of known shape, got " + x.to_string());
  const DType dtype = c.has_attr("dtype") ? dtype_from_onnx(static_cast<int>(c.attr_int("dtype", 0)),
                                                            "node '" + c.node().name() + "' attribute dtype")
                                          : c.dtype(0);
  const int64_t k = c.attr_int("k", 0);
  c.check_folded_size(x, "the output");
  Tensor out = Tensor::zeros(dtype, x);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < x[0]; ++i)
      if (i + k >= 0 && i + k < x[1]) out.data<T>()[i * x[1] + i + k] = T(1);
  });
  c.set_constant(0, out);
}

// HannWindow, HammingWindow, BlackmanWindow(size): the window of a constant
// size, folded: a0 - a1 cos(2 pi n / M) + a2 cos(4 pi n / M) with M = size
// (periodic) or size - 1 (symmetric), computed in double.
void map_window(NodeContext& c) {
  const std::vector<int64_t> size = c.constant_ints(0, "size");
  if (size.size() != 1 || size[0] < 0) c.fail("size (input 0) must be one constant >= 0");
  const int64_t n = size[0];
  c.check_folded_size(Shape{n}, "the window");
  const double m = static_cast<double>(c.attr_int("periodic", 1) ? n : n - 1);
  const double a0 = c.op() == "HannWindow" ? 0.5 : c.op() == "HammingWindow" ? 25.0 / 46 : 0.42;
  const double a1 = c.op() == "HammingWindow" ? 21.0 / 46 : 0.5, a2 = c.op() == "BlackmanWindow" ? 0.08 : 0;
  const double pi = 3.14159265358979323846;
  Tensor w(DType::kFloat32, Shape{n});
  for (int64_t i = 0; i < n; ++i) {
    const double x = m > 0 ? 2 * pi * static_cast<double>(i) / m : 0;
    w.data<float>()[i] = static_cast<float>(a0 - a1 * std::cos(x) + a2 * std::cos(2 * x));
  }
  const DType dtype = dtype_from_onnx(static_cast<int>(c.attr_int("output_datatype", 1)),
                                      "node '" + c.node().name() + "' output_datatype");
  c.set_constant(0, dtype == DType::kFloat32 ? w : evaluate("Cast", {w}, Attrs().set("dtype", dtype)));
}

// QuantizeLinear / DequantizeLinear (hub/ops/quantize.h): `axis` matters
// only for a per-channel (1-D) scale; an absent zero point is 0 of the
// quantized type (uint8 for QuantizeLinear, as ONNX says), in the scale's
// shape.
template <const char* kOp>
void map_quantize(NodeContext& c) {
  const int rank = c.rank(0);
  const bool nhwc = rank == 4 && c.is_nhwc(0);
  int64_t axis = 1;
  if (c.rank(1) == 1) {
    axis = normalize_axis(c, c.attr_int("axis", 1), rank, "axis");
    if (nhwc) axis = nhwc_axis(axis);
  }
  const bool quantize = std::string_view(kOp) == "QuantizeLinear";
  const Shape scale = c.rank(1) == 1 ? c.shape(1) : Shape{};
  if (!c.has_input(2) && !scale.is_fully_defined())
    c.fail("a per-axis scale without a zero point needs a known length");
  Output zero_point =
      c.has_input(2) ? c.native(2)
                     : c.constant_output(Tensor::zeros(quantize ? DType::kUInt8 : c.dtype(0), scale), "zero_point");
  c.set_output(
      0, c.scope().op(kOp, {nhwc ? c.nhwc(0) : c.native(0), c.native(1), zero_point}, Attrs().set("axis", axis), kOp),
      nhwc);
}

constexpr char kQuantizeLinear[] = "QuantizeLinear", kDequantizeLinear[] = "DequantizeLinear";

}  // namespace

void add_tensor_mappers(std::map<std::string, OpMapper>& m) {
  m["Constant"] = {map_constant, {"value", "value_float", "value_floats", "value_int", "value_ints"}};
  m["ConstantOfShape"] = {map_constant_of_shape, {"value"}};
  m["Shape"] = {map_shape, {"start", "end"}};
  m["Size"] = {map_size, {}};
  m["Range"] = {map_range, {}};
  m["Add"] = {symbolic_or<map_arithmetic<kAdd>>, {}};
  m["Sub"] = {symbolic_or<map_arithmetic<kSub>>, {}};
  m["Mul"] = {symbolic_or<map_arithmetic<kMul>>, {}};
  m["Div"] = {symbolic_or<map_arithmetic<kDiv>>, {}};
  m["Mod"] = {map_mod, {"fmod"}};
  m["Pow"] = {map_pow, {}};
  m["Equal"] = {map_binary<kEqual>, {}};
  m["Greater"] = {map_binary<kGreater>, {}};
  m["GreaterOrEqual"] = {map_binary<kGreaterEqual>, {}};
  m["Less"] = {map_binary<kLess>, {}};
  m["LessOrEqual"] = {map_binary<kLessEqual>, {}};
  m["Sum"] = {map_variadic<kAdd, false>, {}};
  m["Mean"] = {map_variadic<kAdd, true>, {}};
  m["Max"] = {map_variadic<kMaximum, false>, {}};
  m["Min"] = {map_variadic<kMinimum, false>, {}};
  m["Relu"] = {map_unary<kRelu>, {}};
  m["Sigmoid"] = {map_unary<kSigmoid>, {}};
  m["Tanh"] = {map_unary<kTanh>, {}};
  m["Abs"] = {map_unary<kAbs>, {}};
  m["Neg"] = {map_unary<kNeg>, {}};
  m["Sqrt"] = {map_unary<kSqrt>, {}};
  m["Exp"] = {map_unary<kExp>, {}};
  m["Log"] = {map_unary<kLog>, {}};
  m["Reciprocal"] = {map_unary<kReciprocal>, {}};
  m["Sign"] = {map_unary<kSign>, {}};
  m["Erf"] = {map_unary<kErf>, {}};
  m["Floor"] = {map_unary<kFloor>, {}};
  m["Ceil"] = {map_unary<kCeil>, {}};
  m["Round"] = {map_unary<kRound>, {}};
  m["Sin"] = {map_unary<kSin>, {}};
  m["Cos"] = {map_unary<kCos>, {}};
  m["Tan"] = {map_unary<kTan>, {}};
  m["Asin"] = {map_unary<kAsin>, {}};
  m["Acos"] = {map_unary<kAcos>, {}};
  m["Atan"] = {map_unary<kAtan>, {}};
  m["Sinh"] = {map_unary<kSinh>, {}};
  m["Cosh"] = {map_unary<kCosh>, {}};
  m["Asinh"] = {map_unary<kAsinh>, {}};
  m["Acosh"] = {map_unary<kAcosh>, {}};
  m["Atanh"] = {map_unary<kAtanh>, {}};
  m["Not"] = {map_unary<kLogicalNot>, {}};
  m["And"] = {map_binary<kLogicalAnd>, {}};
  m["Or"] = {map_binary<kLogicalOr>, {}};
  m["Xor"] = {map_binary<kNotEqual>, {}};
  m["Where"] = {map_where, {}};
  m["HardSwish"] = {map_unary<kHardSwish>, {}};
  m["Elu"] = {map_elu, {"alpha"}};
  m["LeakyRelu"] = {map_leaky_relu, {"alpha"}};
  m["HardSigmoid"] = {map_hard_sigmoid, {"alpha", "beta"}};
  m["Clip"] = {map_clip, {}};
  m["PRelu"] = {map_prelu, {}};
  m["Cast"] = {symbolic_or<map_cast>, {"to"}};
  m["CastLike"] = {map_cast_like, {}};
  m["QuantizeLinear"] = {map_quantize<kQuantizeLinear>, {"axis"}};
  m["DequantizeLinear"] = {map_quantize<kDequantizeLinear>, {"axis"}};
  m["Identity"] = {symbolic_or<map_passthrough>, {}};
  m["Dropout"] = {map_passthrough, {"seed"}};
  m["Reshape"] = {map_reshape, {"allowzero"}};
  m["Flatten"] = {map_flatten, {"axis"}};
  m["Transpose"] = {map_transpose, {"perm"}};
  m["Squeeze"] = {symbolic_or<map_squeeze>, {}};
  m["Unsqueeze"] = {symbolic_or<map_unsqueeze>, {}};
  m["Concat"] = {symbolic_or<map_concat>, {"axis"}};
  m["Split"] = {map_split, {"axis"}};
  m["Slice"] = {symbolic_or<map_slice>, {}};
  m["Gather"] = {symbolic_or<map_gather>, {"axis"}};
  m["GatherElements"] = {map_gather_elements, {"axis"}};
  m["GatherND"] = {map_gather_nd, {"batch_dims"}};
  m["ScatterND"] = {map_scatter, {"reduction"}};
  m["ScatterElements"] = {map_scatter, {"axis", "reduction"}};
  m["OneHot"] = {map_one_hot, {"axis"}};
  m["Pad"] = {map_pad, {"mode"}};
  m["Tile"] = {map_tile, {}};
  m["Expand"] = {map_expand, {}};
  m["ReduceSum"] = {map_reduce<kSum>, {"keepdims", "noop_with_empty_axes"}};
  m["ReduceMean"] = {map_reduce<kMean>, {"axes", "keepdims"}};
  m["ReduceMax"] = {map_reduce<kMax>, {"axes", "keepdims"}};
  m["ReduceMin"] = {map_reduce<kMin>, {"axes", "keepdims"}};
  m["ReduceProd"] = {map_reduce<kProd>, {"axes", "keepdims"}};
  m["ReduceSumSquare"] = {map_reduce<kSum, kSquare>, {"axes", "keepdims"}};
  m["ReduceL1"] = {map_reduce<kSum, kAbs>, {"axes", "keepdims"}};
  m["ReduceL2"] = {map_reduce<kSum, kSquare, kSqrt>, {"axes", "keepdims"}};
  m["ReduceLogSum"] = {map_reduce<kSum, kNone, kLog>, {"axes", "keepdims"}};
  m["ReduceLogSumExp"] = {map_reduce_log_sum_exp, {"axes", "keepdims"}};
  m["Softmax"] = {map_softmax<kSoftmax>, {"axis"}};
  m["NegativeLogLikelihoodLoss"] = {map_nll_loss, {"ignore_index", "reduction"}};
  m["SoftmaxCrossEntropyLoss"] = {map_softmax_cross_entropy_loss, {"ignore_index", "reduction"}};
  m["LogSoftmax"] = {map_softmax<kLogSoftmax>, {"axis"}};
  m["CumSum"] = {map_cum_sum, {"exclusive", "reverse"}};
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    m[op] = {map_window, {"output_datatype", "periodic"}};
  m["ArgMax"] = {map_arg_extreme<kArgMax>, {"axis", "keepdims", "select_last_index"}};
  m["ArgMin"] = {map_arg_extreme<kArgMin>, {"axis", "keepdims", "select_last_index"}};
  m["ThresholdedRelu"] = {map_thresholded_relu, {"alpha"}};
  m["Selu"] = {map_selu, {"alpha", "gamma"}};
  m["Softplus"] = {map_softplus, {}};
  m["Softsign"] = {map_softsign, {}};
  m["Shrink"] = {map_shrink, {"bias", "lambd"}};
  m["IsInf"] = {map_is_inf, {"detect_negative", "detect_positive"}};
  m["IsNaN"] = {map_is_nan, {}};
  m["Celu"] = {map_celu, {"alpha"}};
  m["MeanVarianceNormalization"] = {map_mean_variance_normalization, {"axes"}};
  m["Hardmax"] = {map_hardmax, {"axis"}};
  m["TopK"] = {map_top_k, {"axis", "largest", "sorted"}};
  m["Trilu"] = {map_trilu, {"upper"}};
  m["NonZero"] = {map_non_zero, {}};
  m["Unique"] = {map_unique, {"axis", "sorted"}};
  m["ReverseSequence"] = {map_reverse_sequence, {"batch_axis", "time_axis"}};
  m["Compress"] = {map_compress, {"axis"}};
  m["NonMaxSuppression"] = {map_non_max_suppression, {"center_point_box"}};
  m["EyeLike"] = {map_eye_like, {"dtype", "k"}};
}

}  // namespace hub::onnx_interop

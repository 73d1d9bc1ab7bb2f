// TensorFlow <-> hub: sources (Placeholder, Const, variables), identities,
// shapes and their arithmetic (Shape, Pack, ConcatV2, Slice, StridedSlice on
// partially known shapes), and the ops that move data without computing:
// Reshape, ExpandDims, Squeeze, Transpose, Pad, ConcatV2, Split, Slice,
// StridedSlice, Cast.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "hub/core/error.h"
#include "hub/interop/fold.h"
#include "hub/interop/linear.h"
#include "hub/interop/tf/ops.h"
#include "hub/interop/tf/tensor_proto.h"
#include "hub/ops/array.h"
#include "hub/ops/math.h"

namespace hub::tf {

namespace {

constexpr int kDtInt32 = 3;
constexpr int kDtInt64 = 9;

// ---- Helpers ---------------------------------------------------------------------

int64_t normalize_axis(const OpContext& c, int64_t axis, int rank, const std::string& what) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    c.fail(what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return a;
}

// The elements of a constant or partially known 1-D/0-D int input.
std::optional<std::vector<DimValue>> dim_values(const OpContext& c, int i) {
  const TfValue& v = c.value(i);
  if (v.dims) return v.dims;
  if (v.constant && (v.constant->dtype() == DType::kInt32 || v.constant->dtype() == DType::kInt64) &&
      v.constant->rank() <= 1) {
    std::vector<DimValue> out;
    for (int64_t x : c.constant_ints(i, "value")) out.push_back(DimValue::constant(x));
    return out;
  }
  return std::nullopt;
}

bool all_known(const std::vector<DimValue>& dims) {
  return std::all_of(dims.begin(), dims.end(), [](const DimValue& d) { return d.known(); });
}

Tensor int_tensor(const std::vector<DimValue>& dims, DType dtype, bool scalar) {
  Shape shape = scalar ? Shape{} : Shape{static_cast<int64_t>(dims.size())};
  Tensor t(dtype, shape);
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dtype == DType::kInt64)
      t.data<int64_t>()[k] = dims[k].value;
    else
      t.data<int32_t>()[k] = static_cast<int32_t>(dims[k].value);
  }
  return t;
}

// Sets output i to a constant when every element is known, else to the
// partially known value.
void set_int_value(OpContext& c, int i, std::vector<DimValue> dims, DType dtype, bool scalar) {
  if (all_known(dims))
    c.set_constant(i, int_tensor(dims, dtype, scalar));
  else
    c.set_dims(i, std::move(dims), dtype, scalar);
}

using Linear = interop::Linear<DimKey>;

// The DimValue of a linear value: known without terms, a dim when it is one.
DimValue from_linear(const Linear& l) {
  if (l.is_dim()) return DimValue::dim_of(l.terms[0].first.first, l.terms[0].first.second);
  return {l.value, {}, -1, l.terms};
}

// ---- Sources and identities -------------------------------------------------------

void map_placeholder(OpContext& c) {
  c.fail("the placeholder is needed by the outputs but is not an input of the signature");
}

void map_const(OpContext& c) {
  const auto& v = c.attr("value");
  if (v.value_case() != proto::AttrValue::kTensor) c.fail("attribute 'value' must be a tensor");
  Tensor t = tensor_from_proto(v.tensor(), c.where() + ": attribute value");
  if (t.dtype() != c.attr_dtype("dtype"))
    c.fail("attribute dtype says " + std::string(dtype_name(c.attr_dtype("dtype"))) + ", the value is " +
           t.spec_string());
  c.set_constant(0, t);
}

void map_stop_gradient(OpContext& c) {
  if (c.constant(0) || c.value(0).dims)
    c.forward(0, 0);
  else
    c.set_output(0, c.add("StopGradient", {c.input(0)}));
}

void map_variable(OpContext& c) { c.set_output(0, c.variable(c.name())); }

void map_var_handle(OpContext& c) { c.set_variable(0, c.name()); }

void map_read_variable(OpContext& c) {
  const TfValue& h = c.value(0);
  if (h.variable.empty()) c.fail("input 0 ('" + c.node().input(0) + "') is not a variable handle (VarHandleOp)");
  c.set_output(0, c.variable(h.variable));
}

// ---- Shapes --------------------------------------------------------------------------

void map_shape(OpContext& c) {
  const DType out = c.attr_dtype("out_type");
  if (out != DType::kInt32 && out != DType::kInt64) c.fail_attr("out_type", "must be int32 or int64");
  const TfValue& v = c.value(0);
  Shape s = c.shape(0);
  std::vector<DimValue> dims;
  for (int d = 0; d < s.rank(); ++d) {
    if (s[d] >= 0)
      dims.push_back(DimValue::constant(s[d]));
    else
      dims.push_back(DimValue::dim_of(v.out, d));
  }
  set_int_value(c, 0, std::move(dims), out, false);
}

// Pack of scalars along axis 0 computes a shape; other packs are ExpandDims
// of each input and a Concat.
void map_pack(OpContext& c) {
  const int64_t n = c.attr_int("N");
  if (n != c.num_inputs())
    c.fail("attribute N = " + std::to_string(n) + " but the node has " + std::to_string(c.num_inputs()) + " inputs");
  const int rank = c.shape(0).rank() + 1;
  const int64_t axis = normalize_axis(c, c.attr_int("axis"), rank, "axis");
  if (rank == 1) {
    std::vector<DimValue> dims;
    bool ok = true;
    for (int i = 0; i < c.num_inputs() && ok; ++i) {
      auto d = dim_values(c, i);
      ok = d && d->size() == 1;
      if (ok) dims.push_back((*d)[0]);
    }
    if (ok && !all_known(dims)) {
      c.set_dims(0, std::move(dims), c.dtype(0));
      return;
    }
  }
  std::vector<Output> parts;
  Scope s = c.scope();
  for (int i = 0; i < c.num_inputs(); ++i)
    parts.push_back(s.op("ExpandDims", {c.input(i)}, Attrs().set("axis", axis), "expand" + std::to_string(i)));
  c.set_output(0, c.add("Concat", parts, Attrs().set("axis", axis)));
}

// Reshape's target from a constant or partially known shape input. One
// unknown element becomes -1. An element equal to an unknown dimension of the
// input itself (the batch size, from Shape(x)) stays that dimension: with a
// -1 elsewhere, the -1 is computed from x's known dimensions.
std::vector<int64_t> reshape_target(const OpContext& c) {
  auto dims = dim_values(c, 1);
  if (!dims) c.unsupported("the shape (input 1) must be known at import, or computed from Shape of the input");
  const Shape in = c.shape(0);
  int unknown = 0, minus = 0;
  for (const DimValue& d : *dims) {
    unknown += !d.known();
    minus += d.known() && d.value == -1;
  }
  std::vector<int64_t> out;
  for (const DimValue& d : *dims) out.push_back(d.known() ? d.value : -1);
  if (unknown == 0 || unknown + minus == 1) return out;
  // Symbolic elements must be the input's own unknown dims at the same place.
  const Output x = c.value(0).out;
  int64_t known_in = 1;
  for (int d = 0; d < in.rank(); ++d) {
    if (in[d] >= 0) {
      if (__builtin_mul_overflow(known_in, in[d], &known_in)) c.fail("the input's dims overflow an int64 count");
      continue;
    }
    bool matched = false;
    for (size_t k = 0; k < dims->size(); ++k) {
      const DimValue& dv = (*dims)[k];
      matched = matched || (!dv.known() && dv.of == x && dv.dim == d && static_cast<int>(k) == d);
    }
    if (!matched) c.unsupported("the shape " + in.to_string() + " is reshaped to a shape computed at run time");
  }
  for (size_t k = 0; k < dims->size(); ++k) {
    const DimValue& dv = (*dims)[k];
    if (!dv.known() && !(dv.of == x && dv.dim == static_cast<int>(k)))
      c.unsupported("the target shape has an element computed at run time");
  }
  if (minus == 0) {
    if (unknown == 1) return out;
    c.unsupported("the target shape has several elements computed at run time");
  }
  // The -1 = known input elements / known target elements.
  int64_t known_out = 1;
  for (const DimValue& d : *dims)
    if (d.known() && d.value != -1 && (d.value < 0 || __builtin_mul_overflow(known_out, d.value, &known_out)))
      c.fail("the target shape " + std::to_string(d.value) + " is negative or overflows an int64 count");
  if (known_out == 0 || known_in % known_out != 0)
    c.fail("the target shape does not divide the input " + in.to_string());
  for (size_t k = 0; k < dims->size(); ++k) {
    if ((*dims)[k].known() && (*dims)[k].value == -1) out[k] = known_in / known_out;
  }
  if (unknown != 1) c.unsupported("the target shape has several elements computed at run time");
  return out;
}

// A target with several run-time elements (a transformer's [batch, sequence,
// heads, depth] from tf.shape): DynamicReshape reads each from the tensor it
// is a dim of, at each run.
void map_reshape(OpContext& c) {
  const std::optional<std::vector<DimValue>> dims = dim_values(c, 1);
  if (dims && std::count_if(dims->begin(), dims->end(), [](const DimValue& d) { return !d.known(); }) > 1) {
    std::vector<int64_t> shape;
    ops::DimReferences refs;
    for (size_t i = 0; i < dims->size(); ++i) {
      const DimValue& d = (*dims)[i];
      if (d.known() && d.value < -1) c.fail("shape element " + std::to_string(d.value));
      if (!d.known() && !d.is_dim()) c.unsupported("a target shape element computed by arithmetic on run-time dims");
      shape.push_back(d.known() ? d.value : 0);
      if (!d.known()) refs.add(static_cast<int64_t>(i), d.of, d.dim);
    }
    c.set_output(0,
                 c.add("DynamicReshape", refs.inputs(c.input(0)), Attrs().set("shape", shape).set("from", refs.from)));
    return;
  }
  c.set_output(0, c.add("Reshape", {c.input(0)}, Attrs().set("shape", reshape_target(c))));
}

void map_expand_dims(OpContext& c) {
  std::vector<int64_t> dim = c.constant_ints(1, "dim");
  if (dim.size() != 1) c.fail("dim (input 1) must hold one value");
  const int64_t axis = normalize_axis(c, dim[0], c.shape(0).rank() + 1, "dim");
  c.set_output(0, c.add("ExpandDims", {c.input(0)}, Attrs().set("axis", axis)));
}

void map_squeeze(OpContext& c) {
  std::vector<int64_t> axes;
  const int rank = c.shape(0).rank();
  for (int64_t a : c.attr_ints("squeeze_dims")) axes.push_back(normalize_axis(c, a, rank, "squeeze_dims"));
  std::sort(axes.begin(), axes.end());
  c.set_output(0, c.add("Squeeze", {c.input(0)}, Attrs().set("axes", axes)));
}

void map_transpose(OpContext& c) {
  std::vector<int64_t> perm = c.constant_ints(1, "perm");
  c.set_output(0, c.add("Transpose", {c.input(0)}, Attrs().set("perm", perm)));
}

// Pad (zeros), PadV2 (a constant scalar value), MirrorPad (REFLECT or
// SYMMETRIC).
void map_pad(OpContext& c) {
  std::vector<int64_t> p = c.constant_ints(1, "paddings");
  const int rank = c.shape(0).rank();
  if (static_cast<int>(p.size()) != 2 * rank)
    c.fail("paddings has " + std::to_string(p.size()) + " values for rank " + std::to_string(rank) +
           " (needs [rank, 2])");
  for (int64_t v : p)
    if (v < 0) c.fail("paddings must not be negative");
  Attrs a;
  a.set("paddings", p);
  if (c.op() == "PadV2") {
    std::optional<Tensor> v = c.constant(2);
    if (!v || v->num_elements() != 1) c.unsupported("constant_values (input 2) must be a constant scalar");
    a.set("constant_value", v->dtype() == DType::kFloat32
                                ? static_cast<double>(v->item<float>())
                                : static_cast<double>(c.constant_ints(2, "constant_values")[0]));
  } else if (c.op() == "MirrorPad") {
    a.set("mode", c.attr_choice("mode", {"REFLECT", "SYMMETRIC"}));
  }
  c.set_output(0, c.add("Pad", {c.input(0)}, a));
}

// ConcatV2 (axis last) and Concat (axis first).
void map_concat(OpContext& c) {
  const bool v2 = c.op() == "ConcatV2";
  const int n = static_cast<int>(c.attr_int("N"));
  if (n + 1 != c.num_inputs())
    c.fail("attribute N = " + std::to_string(n) + " but the node has " + std::to_string(c.num_inputs()) + " inputs");
  const int axis_input = v2 ? n : 0, first = v2 ? 0 : 1;
  std::vector<int64_t> axis = c.constant_ints(axis_input, "axis");
  if (axis.size() != 1) c.fail("axis must hold one value");
  const int rank = c.shape(first).rank();
  const int64_t a = normalize_axis(c, axis[0], rank, "axis");
  if (rank == 1) {
    std::vector<DimValue> dims;
    bool ok = true;
    for (int i = first; i < first + n && ok; ++i) {
      auto d = dim_values(c, i);
      ok = d.has_value();
      if (ok) dims.insert(dims.end(), d->begin(), d->end());
    }
    if (ok && !all_known(dims)) {
      c.set_dims(0, std::move(dims), c.dtype(first));
      return;
    }
  }
  std::vector<Output> parts;
  for (int i = first; i < first + n; ++i) parts.push_back(c.input(i));
  c.set_output(0, parts.size() == 1 ? parts[0] : c.add("Concat", parts, Attrs().set("axis", a)));
}

// Split (split_dim, value) into num_split equal parts, SplitV (value,
// size_splits, split_dim) into the given sizes (one may be -1): Slices.
void map_split(OpContext& c) {
  const bool v = c.op() == "SplitV";
  const int value = v ? 0 : 1;
  std::vector<int64_t> dim = c.constant_ints(v ? 2 : 0, "split_dim");
  if (dim.size() != 1) c.fail("split_dim must hold one value");
  const Shape s = c.shape(value);
  const int64_t axis = normalize_axis(c, dim[0], s.rank(), "split_dim");
  if (s[axis] < 0)
    c.unsupported("the split dimension " + std::to_string(axis) + " of " + s.to_string() + " is unknown");
  const int64_t n = c.attr_int("num_split");
  std::vector<int64_t> sizes;
  if (v) {
    sizes = c.constant_ints(1, "size_splits");
    if (static_cast<int64_t>(sizes.size()) != n)
      c.fail("size_splits has " + std::to_string(sizes.size()) + " sizes for num_split " + std::to_string(n));
    int64_t known = 0;
    int unknown = -1;
    for (size_t k = 0; k < sizes.size(); ++k) {
      if (sizes[k] == -1 && unknown < 0)
        unknown = static_cast<int>(k);
      else if (sizes[k] < 0)
        c.fail("size_splits has a negative size");
      else
        known += sizes[k];
    }
    if (unknown >= 0) sizes[unknown] = s[axis] - known;
    if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != s[axis] || (unknown >= 0 && sizes[unknown] < 0))
      c.fail("size_splits do not add up to " + std::to_string(s[axis]));
  } else {
    if (n <= 0 || s[axis] % n != 0)
      c.fail("dimension " + std::to_string(s[axis]) + " does not split into " + std::to_string(n));
    sizes.assign(static_cast<size_t>(n), s[axis] / n);
  }
  Output x = c.input(value);
  int64_t offset = 0;
  Scope sc = c.scope();
  for (int64_t k = 0; k < n; ++k) {
    std::vector<int64_t> begin(s.rank(), 0), size(s.rank(), -1);
    begin[axis] = offset;
    size[axis] = sizes[k];
    offset += sizes[k];
    Output part = n == 1
                      ? c.add("Identity", {x})
                      : sc.op("Slice", {x}, Attrs().set("begin", begin).set("size", size), "part" + std::to_string(k));
    c.set_output(static_cast<int>(k), part);
  }
}

void map_slice(OpContext& c) {
  std::vector<int64_t> begin = c.constant_ints(1, "begin"), size = c.constant_ints(2, "size");
  if (auto d = c.value(0).dims) {
    if (begin.size() != 1 || size.size() != 1) c.fail("begin and size must hold one value for a 1-D input");
    const int64_t n = static_cast<int64_t>(d->size());
    const int64_t end = size[0] == -1 ? n : begin[0] + size[0];
    if (begin[0] < 0 || end > n || end < begin[0]) c.fail("the slice is out of range");
    set_int_value(c, 0, std::vector<DimValue>(d->begin() + begin[0], d->begin() + end), c.dtype(0), false);
    return;
  }
  c.set_output(0, c.add("Slice", {c.input(0)}, Attrs().set("begin", begin).set("size", size)));
}

// StridedSlice with constant begin/end/strides. On a 1-D constant or
// partially known value (shape arithmetic) any stride is computed at import;
// on other tensors, strides of 1 become Slice (+ Reshape for shrink and new
// axes), others hub's StridedSlice (TensorFlow's semantics, masks and all).
// StridedSlice with an end computed at run time (x[:, :tf.shape(y)[1]]):
// DynamicSlice, for a plain spec (no ellipsis or new axes, strides 1,
// non-negative begins), then a Squeeze of the shrunk dims.
void map_dynamic_strided_slice(OpContext& c, const std::vector<DimValue>& begin, const std::vector<DimValue>& end) {
  const std::vector<int64_t> strides = c.constant_ints(3, "strides");
  const Shape in = c.shape(0);
  const size_t n = begin.size();
  if (end.size() != n || strides.size() != n || static_cast<int>(n) > in.rank())
    c.fail("begin, end and strides differ in length or exceed the input's rank");
  const int64_t begin_mask = c.attr_int("begin_mask"), end_mask = c.attr_int("end_mask"),
                shrink_mask = c.attr_int("shrink_axis_mask");
  if (c.attr_int("ellipsis_mask") != 0 || c.attr_int("new_axis_mask") != 0)
    c.unsupported("a begin or end computed at run time needs a slice without ellipsis or new axes");
  std::vector<int64_t> b(in.rank(), 0), size(in.rank(), -1), squeezed, begin_from;
  ops::DimReferences refs;
  for (size_t k = 0; k < n; ++k) {
    const int d = static_cast<int>(k);
    const bool shrink = (shrink_mask >> k) & 1;
    if (strides[k] != 1) c.unsupported("a begin or end computed at run time needs strides of 1");
    const bool runtime_begin = (!((begin_mask >> k) & 1) || shrink) && !begin[k].known();
    if (runtime_begin) {
      // value + sum of coefficient x dim at each run (negative: from the end, as TensorFlow's).
      const Linear linear = begin[k].linear();
      b[d] = linear.value;
      for (const auto& [key, coefficient] : linear.terms)
        begin_from.insert(begin_from.end(), {d, refs.input(key.first), key.second, coefficient});
    } else if (!((begin_mask >> k) & 1) || shrink) {
      if (begin[k].value < 0) c.unsupported("a begin or end computed at run time needs constant begins of 0 or more");
      b[d] = begin[k].value;
    }
    if (shrink) {
      size[d] = 1;
      squeezed.push_back(d);
    } else if ((end_mask >> k) & 1) {
      size[d] = -1;
    } else if (!end[k].known()) {
      if (!end[k].is_dim()) c.unsupported("an end computed by arithmetic on run-time dims");
      refs.add(static_cast<int64_t>(k), end[k].of, end[k].dim);
    } else {
      if (end[k].value < 0 || in[d] < 0) c.unsupported("a begin or end computed at run time needs ends of 0 or more");
      if (runtime_begin && end[k].value < in[d])
        c.unsupported("a constant end short of the dim after a begin computed at run time");
      size[d] = runtime_begin ? -1 : std::max<int64_t>(0, std::min(end[k].value, in[d]) - b[d]);
    }
  }
  Output y = c.add("DynamicSlice", refs.inputs(c.input(0)),
                   Attrs().set("begin", b).set("size", size).set("from", refs.from).set("begin_from", begin_from));
  if (!squeezed.empty()) y = c.add("Squeeze", {y}, Attrs().set("axes", squeezed));
  c.set_output(0, y);
}

void map_strided_slice(OpContext& c) {
  if (!c.constant(1) || !c.constant(2)) {
    const std::optional<std::vector<DimValue>> begin = dim_values(c, 1), end = dim_values(c, 2);
    if (begin && end) return map_dynamic_strided_slice(c, *begin, *end);
  }
  std::vector<int64_t> begin = c.constant_ints(1, "begin"), end = c.constant_ints(2, "end"),
                       strides = c.constant_ints(3, "strides");
  const size_t n = begin.size();
  if (end.size() != n || strides.size() != n) c.fail("begin, end and strides differ in length");
  const int64_t begin_mask = c.attr_int("begin_mask"), end_mask = c.attr_int("end_mask"),
                ellipsis_mask = c.attr_int("ellipsis_mask"), new_axis_mask = c.attr_int("new_axis_mask"),
                shrink_mask = c.attr_int("shrink_axis_mask");
  const Shape in = c.shape(0);
  const int rank = in.rank();
  // Dense spec: per input dim (begin, end or -1 for "to the end", stride,
  // shrink), and the output dims (input dim index, or -1 for a new axis).
  struct Dim {
    int64_t begin = 0, end = 0, stride = 1;
    bool full_begin = true, full_end = true, shrink = false;
  };
  std::vector<Dim> dense(rank);
  std::vector<int> out_dims;  // input dim, -1 new axis
  int covered = 0;
  for (size_t k = 0; k < n; ++k)
    if (!((ellipsis_mask >> k) & 1) && !((new_axis_mask >> k) & 1)) ++covered;
  int d = 0;
  bool ellipsis_seen = false;
  for (size_t k = 0; k < n; ++k) {
    if ((ellipsis_mask >> k) & 1) {
      if (ellipsis_seen) c.fail("more than one ellipsis");
      ellipsis_seen = true;
      for (int e = 0; e < rank - covered; ++e) out_dims.push_back(d++);
      continue;
    }
    if ((new_axis_mask >> k) & 1) {
      out_dims.push_back(-1);
      continue;
    }
    if (d >= rank) c.fail("the slice has more dimensions than the input's " + std::to_string(rank));
    Dim& dd = dense[d];
    dd.stride = strides[k];
    if (dd.stride == 0) c.fail("a stride is 0");
    dd.shrink = (shrink_mask >> k) & 1;
    dd.full_begin = (begin_mask >> k) & 1;
    dd.full_end = (end_mask >> k) & 1;
    dd.begin = begin[k];
    dd.end = end[k];
    if (dd.shrink) {
      dd.full_begin = dd.full_end = false;
      dd.stride = 1;
    } else {
      out_dims.push_back(d);
    }
    ++d;
  }
  while (d < rank) out_dims.push_back(d++);
  // Resolve each dim to [b, e) with stride, given its size (when known).
  auto resolve = [&](const Dim& dd, int64_t size, int64_t& b, int64_t& e) {
    if (dd.shrink) {
      b = dd.begin < 0 ? dd.begin + size : dd.begin;
      if (b < 0 || b >= size)
        c.fail("index " + std::to_string(dd.begin) + " is out of range for size " + std::to_string(size));
      e = b + 1;
      return;
    }
    auto clamp = [&](int64_t x, bool is_begin) {
      if (x < 0) x += size;
      if (dd.stride > 0) return std::clamp<int64_t>(x, 0, size);
      (void)is_begin;
      return std::clamp<int64_t>(x, -1, size - 1);
    };
    b = dd.full_begin ? (dd.stride > 0 ? 0 : size - 1) : clamp(dd.begin, true);
    e = dd.full_end ? (dd.stride > 0 ? size : -1) : clamp(dd.end, false);
  };
  if (auto values = dim_values(c, 0); rank == 1 && values) {
    std::vector<DimValue> picked;
    int64_t b = 0, e = 0;
    resolve(dense[0], static_cast<int64_t>(values->size()), b, e);
    for (int64_t i = b; dense[0].stride > 0 ? i < e : i > e; i += dense[0].stride) picked.push_back((*values)[i]);
    const bool scalar = dense[0].shrink && out_dims.empty();
    if (!out_dims.empty() && std::count(out_dims.begin(), out_dims.end(), -1) > 0)
      c.unsupported("new axes on a shape value are not supported");
    set_int_value(c, 0, std::move(picked), c.dtype(0), scalar);
    return;
  }
  if (std::any_of(dense.begin(), dense.end(), [](const Dim& dd) { return dd.stride != 1; })) {
    c.set_output(0, c.add("StridedSlice", {c.input(0)},
                          Attrs()
                              .set("begin", begin)
                              .set("end", end)
                              .set("strides", strides)
                              .set("begin_mask", begin_mask)
                              .set("end_mask", end_mask)
                              .set("ellipsis_mask", ellipsis_mask)
                              .set("new_axis_mask", new_axis_mask)
                              .set("shrink_axis_mask", shrink_mask)));
    return;
  }
  std::vector<int64_t> sb(rank), ss(rank);
  for (int k = 0; k < rank; ++k) {
    const Dim& dd = dense[k];
    if (in[k] < 0) {
      // Unknown size: only a whole dimension, or from a non-negative begin to the end.
      if (dd.shrink || (!dd.full_end) || (!dd.full_begin && dd.begin < 0))
        c.unsupported("slicing dimension " + std::to_string(k) + " of unknown size needs its whole range");
      sb[k] = dd.full_begin ? 0 : dd.begin;
      ss[k] = -1;
      continue;
    }
    int64_t b = 0, e = 0;
    resolve(dd, in[k], b, e);
    sb[k] = b;
    ss[k] = std::max<int64_t>(e - b, 0);
  }
  Output y = c.add("Slice", {c.input(0)}, Attrs().set("begin", sb).set("size", ss));
  const bool reshape = std::any_of(dense.begin(), dense.end(), [](const Dim& dd) { return dd.shrink; }) ||
                       std::count(out_dims.begin(), out_dims.end(), -1) > 0;
  if (reshape) {
    std::vector<int64_t> shape;
    int unknown = 0;
    for (int od : out_dims) {
      const int64_t v = od < 0 ? 1 : (ss[od] >= 0 ? ss[od] : -1);
      unknown += v < 0;
      shape.push_back(v);
    }
    if (unknown > 1) c.unsupported("the result would have several dimensions of unknown size");
    y = c.scope().op("Reshape", {y}, Attrs().set("shape", shape), "reshape");
  }
  c.set_output(0, y);
}

void map_cast(OpContext& c) {
  const DType to = c.attr_dtype("DstT");
  if (auto d = c.value(0).dims; d && (to == DType::kInt32 || to == DType::kInt64)) {
    c.set_dims(0, *d, to, c.value(0).dims_scalar);
    return;
  }
  c.set_output(0, c.add("Cast", {c.input(0)}, Attrs().set("dtype", to)));
}

// GatherV2(params, indices, axis): a constant axis.
void map_gather(OpContext& c) {
  const std::vector<int64_t> axis = c.constant_ints(2, "axis");
  if (axis.size() != 1) c.fail("axis must hold one value, got " + std::to_string(axis.size()));
  c.set_output(0, c.add("Gather", {c.input(0), c.input(1)},
                        Attrs().set("axis", axis[0]).set("batch_dims", c.attr_int("batch_dims"))));
}

void map_gather_nd(OpContext& c) { c.set_output(0, c.add("GatherND", {c.input(0), c.input(1)})); }

// TensorScatterUpdate / Add / Max / Min: ScatterND with that reduction.
void map_tensor_scatter(OpContext& c) {
  static const std::map<std::string, std::string> reduction = {{"TensorScatterUpdate", "none"},
                                                               {"TensorScatterAdd", "add"},
                                                               {"TensorScatterMax", "max"},
                                                               {"TensorScatterMin", "min"}};
  c.set_output(
      0, c.add("ScatterND", {c.input(0), c.input(1), c.input(2)}, Attrs().set("reduction", reduction.at(c.op()))));
}

// Range(start, limit, delta) of constants, folded (at most 2^24 values).
void map_range(OpContext& c) {
  std::optional<Tensor> args[3] = {c.constant(0), c.constant(1), c.constant(2)};
  if (args[2] && (!args[0] || !args[1])) {
    // A start and limit linear in tf.shape elements (tf.range(tf.shape(x)[1]), or
    // tf.range(past, past + length)): DynamicRange reads them at each run.
    const std::optional<std::vector<DimValue>> start = dim_values(c, 0), limit = dim_values(c, 1);
    const std::vector<int64_t> delta = c.constant_ints(2, "delta");
    if (delta.size() != 1 || delta[0] == 0) c.fail("delta must be a nonzero scalar");
    if (!start || !limit || start->size() != 1 || limit->size() != 1)
      c.unsupported("start and limit must be scalars: constants or computed from tf.shape");
    std::vector<Output> inputs;
    std::vector<int64_t> terms;
    const Linear bounds[2] = {(*start)[0].linear(), (*limit)[0].linear()};
    for (int64_t slot : {0, 1})
      for (const auto& [key, coefficient] : bounds[slot].terms) {
        auto at = std::find(inputs.begin(), inputs.end(), key.first);
        if (at == inputs.end()) at = inputs.insert(inputs.end(), key.first);
        terms.insert(terms.end(), {slot, at - inputs.begin(), key.second, coefficient});
      }
    c.set_output(0, c.add("DynamicRange", inputs,
                          Attrs()
                              .set("start", bounds[0].value)
                              .set("limit", bounds[1].value)
                              .set("delta", delta[0])
                              .set("dtype", c.attr_dtype("Tidx"))
                              .set("from", std::vector<int64_t>{})
                              .set("terms", terms)));
    return;
  }
  double v[3];
  for (int i = 0; i < 3; ++i) {
    if (!args[i] || args[i]->num_elements() != 1) c.unsupported("Range needs constant scalar start, limit and delta");
    dispatch_dtype(args[i]->dtype(), [&](auto tag) { v[i] = static_cast<double>(args[i]->data<decltype(tag)>()[0]); });
  }
  const double count = std::ceil((v[1] - v[0]) / v[2]);
  if (!std::isfinite(count) || v[2] == 0 || count > static_cast<double>(interop::kMaxFoldedElements))
    c.fail("Range(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) +
           ") must have a nonzero delta and at most 2^24 values");
  const auto n = static_cast<int64_t>(std::max(0.0, count));
  const DType dtype = c.attr_dtype("Tidx");
  Tensor out(dtype, Shape{n});
  dispatch_arith(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < n; ++i) out.data<T>()[i] = static_cast<T>(v[0] + static_cast<double>(i) * v[2]);
  });
  c.set_constant(0, out);
}

// BroadcastTo(x, shape) and Fill(dims, value): x (the value) broadcast to a
// constant shape, or one with elements of tf.shape (read at each run).
void map_broadcast(OpContext& c) {
  const int x = c.op() == "Fill" ? 1 : 0, target = 1 - x;
  std::vector<int64_t> shape;
  ops::DimReferences refs;
  const std::optional<std::vector<DimValue>> dims = dim_values(c, target);
  if (!dims) c.fail("the shape (input " + std::to_string(target) + ") must be constant or computed from tf.shape");
  for (size_t i = 0; i < dims->size(); ++i) {
    const DimValue& d = (*dims)[i];
    if (!d.known() && !d.is_dim()) c.unsupported("a shape element computed by arithmetic on run-time dims");
    if (d.known() && d.value < 0) c.fail("shape element " + std::to_string(i) + " is negative");
    shape.push_back(d.known() ? d.value : 1);
    if (!d.known()) refs.add(static_cast<int64_t>(i), d.of, d.dim);
  }
  c.set_output(0, c.add("BroadcastTo", refs.inputs(c.input(x)), Attrs().set("shape", shape).set("from", refs.from)));
}

// Rank and Size: constants of the static shape.
void map_rank(OpContext& c) { c.set_constant(0, Tensor::scalar<int32_t>(c.shape(0).rank())); }

void map_size(OpContext& c) {
  const Shape shape = c.shape(0);
  if (!shape.is_fully_defined()) c.unsupported("Size of " + shape.to_string() + ", known only at run time");
  const DType out = c.attr_dtype("out_type");
  if (out == DType::kInt32 && shape.num_elements() > std::numeric_limits<int32_t>::max())
    c.fail("Size " + std::to_string(shape.num_elements()) + " of " + shape.to_string() + " does not fit int32");
  c.set_constant(0, out == DType::kInt64 ? Tensor::scalar<int64_t>(shape.num_elements())
                                         : Tensor::scalar<int32_t>(static_cast<int32_t>(shape.num_elements())));
}

void map_tile(OpContext& c) {
  c.set_output(0, c.add("Tile", {c.input(0)}, Attrs().set("multiples", c.constant_ints(1, "multiples"))));
}

// ZerosLike, OnesLike.
void map_fill_like(OpContext& c) { c.set_output(0, c.add(c.op(), {c.input(0)})); }

// TopKV2(input, k): the k largest along the last dim, sorted or not, and their int32 indices.
void map_top_k(OpContext& c) {
  std::vector<Output> out;
  if (c.constant(1)) {
    const std::vector<int64_t> k = c.constant_ints(1, "k");
    if (k.size() != 1) c.fail("k must hold one value, got " + std::to_string(k.size()));
    out = c.add_n("TopK", {c.input(0)}, Attrs().set("k", k[0]).set("sorted", c.attr_bool("sorted")));
  } else {
    // k computed at run time (tf.minimum(k, tf.shape(scores)[0])): read at each run.
    out = c.add_n("DynamicTopK", {c.input(0), c.input(1)}, Attrs().set("sorted", c.attr_bool("sorted")));
  }
  c.set_output(0, out[0]);
  const DType index = c.attr_dtype("index_type");
  c.set_output(1, index == DType::kInt32 ? out[1] : ops::cast(c.scope(), out[1], index, "IndexType"));
}

void map_reverse_sequence(OpContext& c) {
  c.set_output(0, c.add("ReverseSequence", {c.input(0), c.input(1)},
                        Attrs().set("batch_axis", c.attr_int("batch_dim")).set("time_axis", c.attr_int("seq_dim"))));
}

// ---- Exporters --------------------------------------------------------------------------

std::string ints_const(ExportContext& c, const std::string& name, const std::vector<int64_t>& values, Shape shape) {
  std::vector<int32_t> v(values.begin(), values.end());
  return c.constant(name, Tensor::from_vector<int32_t>(std::move(shape), v));
}

void export_identity(ExportContext& c) {
  auto& n = c.add("", c.node().op == "StopGradient" ? "StopGradient" : "Identity", {c.input(0)});
  set_type(n, "T", c.input_spec(0).dtype);
  c.set_output(0, n.name());
}

void export_reshape(ExportContext& c) {
  const auto& shape = c.node().attrs.get_ints("shape");
  std::string s = ints_const(c, "shape", shape, Shape{static_cast<int64_t>(shape.size())});
  auto& n = c.add("", "Reshape", {c.input(0), s});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tshape", DType::kInt32);
  c.set_output(0, n.name());
}

void export_reshape_like(ExportContext& c) {
  auto& shape = c.add("shape", "Shape", {c.input(1)});
  set_type(shape, "T", c.input_spec(1).dtype);
  set_type(shape, "out_type", DType::kInt32);
  auto& n = c.add("", "Reshape", {c.input(0), shape.name()});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tshape", DType::kInt32);
  c.set_output(0, n.name());
}

// Dim `dim` of node input `input`'s run-time shape (Shape, then a
// one-element StridedSlice): an int32 scalar (shrunk), or a one-element vector.
std::string reference_dim(ExportContext& c, int64_t input, int64_t dim, bool scalar) {
  auto& shape = c.add("reference_shape", "Shape", {c.input(static_cast<int>(input))});
  set_type(shape, "T", c.input_spec(static_cast<int>(input)).dtype);
  set_type(shape, "out_type", DType::kInt32);
  auto& d = c.add("reference_dim", "StridedSlice",
                  {shape.name(), ints_const(c, "at", {dim}, Shape{1}), ints_const(c, "to", {dim + 1}, Shape{1}),
                   ints_const(c, "step", {1}, Shape{1})});
  set_type(d, "T", DType::kInt32);
  set_type(d, "Index", DType::kInt32);
  for (const char* mask : {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask"})
    (*d.mutable_attr())[mask].set_i(0);
  (*d.mutable_attr())["shrink_axis_mask"].set_i(scalar ? 1 : 0);
  return d.name();
}

void export_dynamic_reshape(ExportContext& c) {
  auto& n = c.add("", "Reshape", {c.input(0), dims_with_references(c, c.node().attrs.get_ints("shape"))});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tshape", DType::kInt32);
  c.set_output(0, n.name());
}

// DynamicSlice: StridedSlice from `begin` to begin + size (the rest: the end
// mask) or, at the `from` positions, the reference dims (clamped as hub does).
// base + the sum of coefficient x dim over (input, dim, coefficient) terms
// of the node's reference inputs, as an int32 scalar or one-element vector
// built at run time (Shape, StridedSlice, Mul, Add); a constant without terms.
std::string run_time_sum(ExportContext& c, int64_t base, const std::vector<std::array<int64_t, 3>>& terms,
                         bool scalar) {
  const Shape shape = scalar ? Shape{} : Shape{1};
  std::string sum;
  for (const auto& [input, dim, coefficient] : terms) {
    std::string term = reference_dim(c, input, dim, scalar);
    if (coefficient != 1) {
      auto& scaled = c.add("term", "Mul", {term, ints_const(c, "coefficient", {coefficient}, shape)});
      set_type(scaled, "T", DType::kInt32);
      term = scaled.name();
    }
    if (!sum.empty()) {
      auto& next = c.add("sum", "Add", {sum, term});
      set_type(next, "T", DType::kInt32);
      term = next.name();
    }
    sum = term;
  }
  if (sum.empty()) return ints_const(c, "value", {base}, shape);
  if (base == 0) return sum;
  auto& with_base = c.add("sum", "Add", {sum, ints_const(c, "base", {base}, shape)});
  set_type(with_base, "T", DType::kInt32);
  return with_base.name();
}

void export_dynamic_slice(ExportContext& c) {
  const std::vector<int64_t> begin = c.node().attrs.get_ints("begin"), size = c.node().attrs.get_ints("size");
  std::vector<int64_t> ends;
  int64_t end_mask = 0;
  std::set<int64_t> named;
  const std::vector<int64_t> from = c.node().attrs.get_ints("from");
  for (size_t k = 0; k + 2 < from.size(); k += 3) named.insert(from[k]);
  for (size_t d = 0; d < begin.size(); ++d) {
    const bool rest = size[d] < 0 && !named.count(static_cast<int64_t>(d));
    if (rest) end_mask |= int64_t{1} << d;
    ends.push_back(rest ? 0 : begin[d] + size[d]);
  }
  const auto rank = static_cast<int64_t>(begin.size());
  // Begins with `begin_from` terms: coefficient x reference dim added at run time.
  std::string starts = ints_const(c, "begin", begin, Shape{rank});
  const std::vector<int64_t> terms = c.node().attrs.get_ints("begin_from");
  if (!terms.empty()) {
    std::vector<std::string> parts;
    for (size_t d = 0; d < begin.size(); ++d) {
      std::vector<std::array<int64_t, 3>> at;
      for (size_t k = 0; k + 3 < terms.size(); k += 4)
        if (terms[k] == static_cast<int64_t>(d)) at.push_back({terms[k + 1], terms[k + 2], terms[k + 3]});
      if (!at.empty() && size[d] >= 0)
        c.fail("a fixed size after a begin computed at run time has no StridedSlice form");
      parts.push_back(run_time_sum(c, begin[d], at, false));
    }
    parts.push_back(ints_const(c, "axis", {0}, Shape{}));
    auto& joined = c.add("begin", "ConcatV2", parts);
    set_type(joined, "T", DType::kInt32);
    set_type(joined, "Tidx", DType::kInt32);
    (*joined.mutable_attr())["N"].set_i(rank);
    starts = joined.name();
  }
  auto& n = c.add("", "StridedSlice",
                  {c.input(0), starts, dims_with_references(c, ends),
                   ints_const(c, "strides", std::vector<int64_t>(begin.size(), 1), Shape{rank})});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Index", DType::kInt32);
  for (const char* mask : {"begin_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"})
    (*n.mutable_attr())[mask].set_i(0);
  (*n.mutable_attr())["end_mask"].set_i(end_mask);
  c.set_output(0, n.name());
}

// DynamicRange: Range of its start and limit built at run time, in int32
// (the dims' type), cast to its dtype.
void export_dynamic_range(ExportContext& c) {
  const Attrs& a = c.node().attrs;
  const DType dtype = a.get_dtype("dtype");
  const auto bound = ops::dynamic_range_terms(a);
  auto& range =
      c.add(dtype == DType::kInt32 ? "" : "int32", "Range",
            {run_time_sum(c, a.get_int("start"), bound[0], true), run_time_sum(c, a.get_int("limit"), bound[1], true),
             ints_const(c, "delta", {a.get_int("delta")}, Shape{})});
  set_type(range, "Tidx", DType::kInt32);
  if (dtype == DType::kInt32) {
    c.set_output(0, range.name());
    return;
  }
  auto& cast = c.add("", "Cast", {range.name()});
  set_type(cast, "SrcT", DType::kInt32);
  set_type(cast, "DstT", dtype);
  (*cast.mutable_attr())["Truncate"].set_b(false);
  c.set_output(0, cast.name());
}

void export_squeeze(ExportContext& c) {
  auto& n = c.add("", "Squeeze", {c.input(0)});
  set_type(n, "T", c.input_spec(0).dtype);
  set_ints(n, "squeeze_dims", c.node().attrs.get_ints("axes"));
  c.set_output(0, n.name());
}

void export_expand_dims(ExportContext& c) {
  std::string dim = ints_const(c, "dim", {c.node().attrs.get_int("axis")}, Shape{});
  auto& n = c.add("", "ExpandDims", {c.input(0), dim});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tdim", DType::kInt32);
  c.set_output(0, n.name());
}

void export_transpose(ExportContext& c) {
  const auto& perm = c.node().attrs.get_ints("perm");
  std::string p = ints_const(c, "perm", perm, Shape{static_cast<int64_t>(perm.size())});
  auto& n = c.add("", "Transpose", {c.input(0), p});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tperm", DType::kInt32);
  c.set_output(0, n.name());
}

// CONSTANT as Pad (zeros) or PadV2 (another value), REFLECT and SYMMETRIC
// as MirrorPad; EDGE has no TensorFlow op.
void export_pad(ExportContext& c) {
  const Attrs& a = c.node().attrs;
  const auto& p = a.get_ints("paddings");
  const std::string& mode = a.get_string("mode");
  const double value = a.get_float("constant_value");
  const DType dtype = c.input_spec(0).dtype;
  if (mode == "EDGE") c.fail("EDGE padding has no TensorFlow equivalent");
  std::string pads = ints_const(c, "paddings", p, Shape{static_cast<int64_t>(p.size() / 2), 2});
  std::vector<std::string> inputs = {c.input(0), pads};
  std::string op = "Pad";
  if (mode != "CONSTANT") {
    op = "MirrorPad";
  } else if (value != 0) {
    op = "PadV2";
    if (dtype != DType::kFloat32) c.fail("PadV2 of a non-float32 tensor is not exported");
    inputs.push_back(c.constant("constant_values", Tensor::scalar<float>(static_cast<float>(value))));
  }
  auto& n = c.add("", op, inputs);
  set_type(n, "T", dtype);
  set_type(n, "Tpaddings", DType::kInt32);
  if (op == "MirrorPad") (*n.mutable_attr())["mode"].set_s(mode);
  c.set_output(0, n.name());
}

void export_strided_slice(ExportContext& c) {
  const Attrs& a = c.node().attrs;
  std::vector<std::string> inputs = {c.input(0)};
  for (const char* name : {"begin", "end", "strides"}) {
    const auto& v = a.get_ints(name);
    inputs.push_back(ints_const(c, name, v, Shape{static_cast<int64_t>(v.size())}));
  }
  auto& n = c.add("", "StridedSlice", inputs);
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Index", DType::kInt32);
  for (const char* mask : {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"})
    (*n.mutable_attr())[mask].set_i(a.get_int(mask));
  c.set_output(0, n.name());
}

void export_slice(ExportContext& c) {
  const auto& b = c.node().attrs.get_ints("begin");
  const auto& s = c.node().attrs.get_ints("size");
  std::string begin = ints_const(c, "begin", b, Shape{static_cast<int64_t>(b.size())});
  std::string size = ints_const(c, "size", s, Shape{static_cast<int64_t>(s.size())});
  auto& n = c.add("", "Slice", {c.input(0), begin, size});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Index", DType::kInt32);
  c.set_output(0, n.name());
}

void export_concat(ExportContext& c) {
  const int n_in = static_cast<int>(c.node().inputs.size());
  std::vector<std::string> inputs;
  for (int i = 0; i < n_in; ++i) inputs.push_back(c.input(i));
  int64_t axis = c.node().attrs.get_int("axis");
  if (axis < 0) axis += c.input_spec(0).shape.rank();
  inputs.push_back(ints_const(c, "axis", {axis}, Shape{}));
  auto& n = c.add("", "ConcatV2", inputs);
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tidx", DType::kInt32);
  (*n.mutable_attr())["N"].set_i(n_in);
  c.set_output(0, n.name());
}

void export_cast(ExportContext& c) {
  auto& n = c.add("", "Cast", {c.input(0)});
  set_type(n, "SrcT", c.input_spec(0).dtype);
  set_type(n, "DstT", c.node().attrs.get_dtype("dtype"));
  (*n.mutable_attr())["Truncate"].set_b(false);
  c.set_output(0, n.name());
}

void export_tile(ExportContext& c) {
  const std::vector<int64_t>& m = c.node().attrs.get_ints("multiples");
  auto& n = c.add("", "Tile", {c.input(0), ints_const(c, "multiples", m, Shape{static_cast<int64_t>(m.size())})});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tmultiples", DType::kInt32);
  c.set_output(0, n.name());
}

// ZerosLike, OnesLike.
void export_fill_like(ExportContext& c) {
  auto& n = c.add("", c.node().op, {c.input(0)});
  set_type(n, "T", c.input_spec(0).dtype);
  c.set_output(0, n.name());
}

// TopK, and DynamicTopK with its k cast to an int32 scalar.
void export_top_k(ExportContext& c) {
  std::string k;
  if (c.node().op == "TopK") {
    k = c.constant("k", Tensor::scalar<int32_t>(static_cast<int32_t>(c.node().attrs.get_int("k"))));
  } else {
    auto& narrow = c.add("k_int32", "Cast", {c.input(1)});
    set_type(narrow, "SrcT", c.input_spec(1).dtype);
    set_type(narrow, "DstT", DType::kInt32);
    (*narrow.mutable_attr())["Truncate"].set_b(false);
    auto& scalar = c.add("k", "Reshape", {narrow.name(), ints_const(c, "scalar", {}, Shape{0})});
    set_type(scalar, "T", DType::kInt32);
    set_type(scalar, "Tshape", DType::kInt32);
    k = scalar.name();
  }
  auto& n = c.add("", "TopKV2", {c.input(0), k});
  set_type(n, "T", c.input_spec(0).dtype);
  (*n.mutable_attr())["sorted"].set_b(c.node().attrs.get_bool("sorted"));
  c.set_output(0, n.name());
  c.set_output(1, n.name() + ":1");
}

void export_shape(ExportContext& c) {
  auto& n = c.add("", "Shape", {c.input(0)});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "out_type", DType::kInt64);
  c.set_output(0, n.name());
}

void export_gather(ExportContext& c) {
  std::string axis = c.constant("axis", Tensor::scalar<int32_t>(static_cast<int32_t>(c.node().attrs.get_int("axis"))));
  auto& n = c.add("", "GatherV2", {c.input(0), c.input(1), axis});
  set_type(n, "Tparams", c.input_spec(0).dtype);
  set_type(n, "Tindices", c.input_spec(1).dtype);
  set_type(n, "Taxis", DType::kInt32);
  (*n.mutable_attr())["batch_dims"].set_i(c.node().attrs.get_int("batch_dims"));
  c.set_output(0, n.name());
}

void export_gather_nd(ExportContext& c) {
  if (c.node().attrs.get_int("batch_dims") != 0) c.fail("GatherND with batch_dims has no TensorFlow op");
  auto& n = c.add("", "GatherNd", {c.input(0), c.input(1)});
  set_type(n, "Tparams", c.input_spec(0).dtype);
  set_type(n, "Tindices", c.input_spec(1).dtype);
  c.set_output(0, n.name());
}

void export_scatter_nd(ExportContext& c) {
  static const std::map<std::string, std::string> op = {{"none", "TensorScatterUpdate"},
                                                        {"add", "TensorScatterAdd"},
                                                        {"max", "TensorScatterMax"},
                                                        {"min", "TensorScatterMin"}};
  const std::string& r = c.node().attrs.get_string("reduction");
  if (!op.count(r)) c.fail("ScatterND with reduction '" + r + "' has no TensorFlow op");
  auto& n = c.add("", op.at(r), {c.input(0), c.input(1), c.input(2)});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tindices", c.input_spec(1).dtype);
  c.set_output(0, n.name());
}

void export_reverse_sequence(ExportContext& c) {
  auto& n = c.add("", "ReverseSequence", {c.input(0), c.input(1)});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tlen", c.input_spec(1).dtype);
  (*n.mutable_attr())["seq_dim"].set_i(c.node().attrs.get_int("time_axis"));
  (*n.mutable_attr())["batch_dim"].set_i(c.node().attrs.get_int("batch_axis"));
  c.set_output(0, n.name());
}

// BroadcastTo of a constant shape, or of one with `from` entries read from the references' shapes.
void export_broadcast_to(ExportContext& c) {
  const std::vector<int64_t>& shape = c.node().attrs.get_ints("shape");
  const bool runtime = !c.node().attrs.get_ints("from").empty();
  auto& n = c.add("", "BroadcastTo",
                  {c.input(0), runtime ? dims_with_references(c, shape)
                                       : ints_const(c, "shape", shape, Shape{static_cast<int64_t>(shape.size())})});
  set_type(n, "T", c.input_spec(0).dtype);
  set_type(n, "Tidx", DType::kInt32);
  c.set_output(0, n.name());
}

}  // namespace

bool map_dim_arithmetic(OpContext& c) {
  const std::string& op = c.op();
  if ((op != "Add" && op != "AddV2" && op != "Sub" && op != "Mul") || c.num_inputs() != 2) return false;
  if (!c.value(0).dims && !c.value(1).dims) return false;
  const std::optional<std::vector<DimValue>> a = dim_values(c, 0), b = dim_values(c, 1);
  if (!a || !b || (a->size() != b->size() && a->size() != 1 && b->size() != 1)) return false;
  std::vector<DimValue> out;
  for (size_t i = 0; i < std::max(a->size(), b->size()); ++i) {
    const DimValue& x = (*a)[a->size() == 1 ? 0 : i];
    const DimValue& y = (*b)[b->size() == 1 ? 0 : i];
    std::optional<Linear> r;
    if (op == "Mul") {
      if (!x.known() && !y.known()) return false;  // a product of run-time dims: not linear
      r = interop::linear_sum(Linear{}, x.known() ? y.linear() : x.linear(), x.known() ? x.value : y.value);
    } else {
      r = interop::linear_sum(x.linear(), y.linear(), op == "Sub" ? -1 : 1);
    }
    if (!r) c.fail("shape arithmetic overflows int64");
    out.push_back(from_linear(*r));
  }
  const bool scalar = c.shape(0).rank() == 0 && c.shape(1).rank() == 0;
  set_int_value(c, 0, std::move(out), c.dtype(0), scalar);
  return true;
}

std::string dims_with_references(ExportContext& c, const std::vector<int64_t>& target) {
  const std::vector<int64_t> from = c.node().attrs.get_ints("from");
  std::map<int64_t, std::string> named;
  for (size_t k = 0; k + 2 < from.size(); k += 3) named[from[k]] = reference_dim(c, from[k + 1], from[k + 2], false);
  std::vector<std::string> parts;
  for (size_t i = 0; i < target.size(); ++i)
    parts.push_back(named.count(static_cast<int64_t>(i)) ? named.at(static_cast<int64_t>(i))
                                                         : ints_const(c, "dim", {target[i]}, Shape{1}));
  parts.push_back(ints_const(c, "axis", {0}, Shape{}));
  auto& dims = c.add("dims", "ConcatV2", parts);
  set_type(dims, "T", DType::kInt32);
  set_type(dims, "Tidx", DType::kInt32);
  (*dims.mutable_attr())["N"].set_i(static_cast<int64_t>(target.size()));
  return dims.name();
}

void add_array_importers(std::map<std::string, OpImporter>& m) {
  const auto T = attr_required();
  m["Placeholder"] = {map_placeholder, {{"dtype", T}, {"shape", attr_required()}}};
  m["PlaceholderWithDefault"] = {map_forward, {{"dtype", T}, {"shape", T}}, {"output"}, false};
  m["Const"] = {map_const, {{"dtype", T}, {"value", T}}};
  m["Identity"] = {map_forward, {{"T", T}}, {"output"}, false};
  m["Snapshot"] = {map_forward, {{"T", T}}, {"output"}, false};
  m["StopGradient"] = {map_stop_gradient, {{"T", T}}, {"output"}, false};
  m["VariableV2"] = {map_variable,
                     {{"shape", T}, {"dtype", T}, {"container", attr_s("")}, {"shared_name", attr_s("")}},
                     {"ref"},
                     false};
  m["VarHandleOp"] = {map_var_handle,
                      {{"container", attr_s("")},
                       {"shared_name", attr_s("")},
                       {"debug_name", attr_s("")},
                       {"dtype", T},
                       {"shape", T},
                       {"allowed_devices", attr_list()}},
                      {"resource"},
                      false};
  m["ReadVariableOp"] = {map_read_variable, {{"dtype", T}}, {"value"}, false};
  m["Shape"] = {map_shape, {{"T", T}, {"out_type", attr_type(kDtInt32)}}};
  m["Pack"] = {map_pack, {{"N", T}, {"T", T}, {"axis", attr_i(0)}}};
  m["Reshape"] = {map_reshape, {{"T", T}, {"Tshape", attr_type(kDtInt32)}}};
  m["ExpandDims"] = {map_expand_dims, {{"T", T}, {"Tdim", attr_type(kDtInt32)}}};
  m["Squeeze"] = {map_squeeze, {{"T", T}, {"squeeze_dims", attr_list()}}};
  m["Transpose"] = {map_transpose, {{"T", T}, {"Tperm", attr_type(kDtInt32)}}, {"y"}};
  m["Pad"] = {map_pad, {{"T", T}, {"Tpaddings", attr_type(kDtInt32)}}};
  m["PadV2"] = {map_pad, {{"T", T}, {"Tpaddings", attr_type(kDtInt32)}}};
  m["MirrorPad"] = {map_pad, {{"T", T}, {"Tpaddings", attr_type(kDtInt32)}, {"mode", T}}};
  m["ConcatV2"] = {map_concat, {{"N", T}, {"T", T}, {"Tidx", attr_type(kDtInt32)}}};
  m["Concat"] = {map_concat, {{"N", T}, {"T", T}}};
  m["Split"] = {map_split, {{"num_split", T}, {"T", T}}};
  m["SplitV"] = {map_split, {{"num_split", T}, {"T", T}, {"Tlen", attr_type(kDtInt32)}}};
  m["Slice"] = {map_slice, {{"T", T}, {"Index", T}}};
  m["StridedSlice"] = {map_strided_slice,
                       {{"T", T},
                        {"Index", T},
                        {"begin_mask", attr_i(0)},
                        {"end_mask", attr_i(0)},
                        {"ellipsis_mask", attr_i(0)},
                        {"new_axis_mask", attr_i(0)},
                        {"shrink_axis_mask", attr_i(0)}}};
  m["Cast"] = {map_cast, {{"SrcT", T}, {"DstT", T}, {"Truncate", attr_b(false)}}, {"y"}};
  m["Range"] = {map_range, {{"Tidx", attr_type(kDtInt32)}}};
  m["Fill"] = {map_broadcast, {{"T", T}, {"index_type", attr_type(kDtInt32)}}};
  m["BroadcastTo"] = {map_broadcast, {{"T", T}, {"Tidx", attr_type(kDtInt32)}}};
  m["Rank"] = {map_rank, {{"T", T}}};
  m["Size"] = {map_size, {{"T", T}, {"out_type", attr_type(kDtInt32)}}};
  m["Tile"] = {map_tile, {{"T", T}, {"Tmultiples", attr_type(kDtInt32)}}};
  for (const char* op : {"ZerosLike", "OnesLike"}) m[op] = {map_fill_like, {{"T", T}}, {"y"}};
  m["TopKV2"] = {map_top_k,
                 {{"T", T}, {"sorted", attr_b(true)}, {"Tk", attr_type(kDtInt32)}, {"index_type", attr_type(kDtInt32)}},
                 {"values", "indices"}};
  m["GatherV2"] = {map_gather, {{"Tparams", T}, {"Tindices", T}, {"Taxis", T}, {"batch_dims", attr_i(0)}}};
  m["GatherNd"] = {map_gather_nd, {{"Tparams", T}, {"Tindices", T}}};
  m["ReverseSequence"] = {map_reverse_sequence,
                          {{"T", T}, {"Tlen", attr_type(kDtInt64)}, {"seq_dim", T}, {"batch_dim", attr_i(0)}}};
  for (const char* op : {"TensorScatterUpdate", "TensorScatterAdd", "TensorScatterMax", "TensorScatterMin"})
    m[op] = {map_tensor_scatter, {{"T", T}, {"Tindices", T}}};
}

void add_array_exporters(std::map<std::string, OpExporter>& m) {
  m["Identity"] = export_identity;
  m["StopGradient"] = export_identity;
  m["Reshape"] = export_reshape;
  m["ReshapeLike"] = export_reshape_like;
  m["DynamicReshape"] = export_dynamic_reshape;
  m["DynamicSlice"] = export_dynamic_slice;
  m["DynamicRange"] = export_dynamic_range;
  m["Squeeze"] = export_squeeze;
  m["ExpandDims"] = export_expand_dims;
  m["Transpose"] = export_transpose;
  m["Pad"] = export_pad;
  m["StridedSlice"] = export_strided_slice;
  m["Slice"] = export_slice;
  m["Concat"] = export_concat;
  m["Cast"] = export_cast;
  m["Gather"] = export_gather;
  m["Tile"] = export_tile;
  m["ZerosLike"] = export_fill_like;
  m["OnesLike"] = export_fill_like;
  m["TopK"] = export_top_k;
  m["DynamicTopK"] = export_top_k;
  m["Shape"] = export_shape;
  m["GatherND"] = export_gather_nd;
  m["ReverseSequence"] = export_reverse_sequence;
  m["BroadcastTo"] = export_broadcast_to;
  m["ScatterND"] = export_scatter_nd;
}

}  // namespace hub::tf

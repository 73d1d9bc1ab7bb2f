#include "hub/ops/array.h"

#include <algorithm>
#include <limits>

#include "hub/ops/elementwise.h"
#include "hub/ops/registry.h"

namespace hub {
namespace {

// Output dims of Reshape for input shape `in` (possibly partial).
Shape reshape_shape(const InferContext& c, const Shape& in, const std::vector<int64_t>& target) {
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer >= 0) c.fail("shape " + attr_to_string(target) + " has more than one -1");
      infer = static_cast<int>(i);
    } else if (target[i] < 0) {
      c.fail("shape " + attr_to_string(target) + " has negative dim " + std::to_string(target[i]));
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      c.fail("shape " + attr_to_string(target) + " has more elements than an int64 counts");
    }
  }
  Shape out(target);
  if (!in.is_fully_defined()) return out;  // the -1 (if any) stays unknown until run time
  int64_t n = in.num_elements();
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      c.fail("cannot reshape " + c.input(0).to_string() + " (" + std::to_string(n) + " elements) to " +
             attr_to_string(target));
    out.set_dim(infer, n / known);
  } else if (known != n) {
    c.fail("cannot reshape " + c.input(0).to_string() + " (" + std::to_string(n) + " elements) to " +
           attr_to_string(target) + " (" + std::to_string(known) + " elements)");
  }
  return out;
}

int64_t normalize_axis(const InferContext& c, int64_t axis, int rank, const char* what) {
  if (axis < -rank || axis >= rank)
    c.fail(std::string(what) + " " + std::to_string(axis) + " out of range for " + c.input(0).to_string());
  return axis < 0 ? axis + rank : axis;
}

Output reshape_back(const GradContext& c) { return ops::reshape_like(c.scope, c.grads[0], c.inputs[0]); }

std::vector<int64_t> inverse_perm(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return inv;
}

void check_perm(const InferContext& c, const std::vector<int64_t>& perm) {
  int r = c.shape(0).rank();
  if (static_cast<int>(perm.size()) != r)
    c.fail("perm " + attr_to_string(perm) + " has " + std::to_string(perm.size()) + " entries for " +
           c.input(0).to_string());
  std::vector<char> seen(r, 0);
  for (int64_t p : perm) {
    if (p < 0 || p >= r || seen[p])
      c.fail("perm " + attr_to_string(perm) + " is not a permutation of 0.." + std::to_string(r - 1));
    seen[p] = 1;
  }
}

// Slice sizes with -1 resolved where the input dim is known.
void check_slice(const InferContext& c, const std::vector<int64_t>& begin, const std::vector<int64_t>& size) {
  const Shape& in = c.shape(0);
  if (static_cast<int>(begin.size()) != in.rank() || static_cast<int>(size.size()) != in.rank())
    c.fail("begin " + attr_to_string(begin) + " and size " + attr_to_string(size) + " need " +
           std::to_string(in.rank()) + " entries for " + c.input(0).to_string());
  for (int i = 0; i < in.rank(); ++i) {
    bool bad = begin[i] < 0 || size[i] < -1;
    if (!bad && in[i] >= 0) bad = begin[i] > in[i] || (size[i] >= 0 && begin[i] + size[i] > in[i]);
    if (bad)
      c.fail("begin " + attr_to_string(begin) + ", size " + attr_to_string(size) + " out of range for " +
             c.input(0).to_string() + " at dim " + std::to_string(i));
  }
}

bool is_index_dtype(DType d) { return d == DType::kInt32 || d == DType::kInt64; }

// GatherGrad, GatherElementsGrad: (g, indices, x) -> x's spec.
std::vector<TensorSpec> gather_grad_shape_fn(const InferContext& c) {
  c.expect_dtype(0, DType::kFloat32);
  c.expect_dtype(2, DType::kFloat32);
  if (!is_index_dtype(c.dtype(1))) c.fail("indices must be int32 or int64, got " + c.input(1).to_string());
  return {c.input(2)};
}

// Split: the size of each part along the axis (kUnknownDim where the dim is unknown).
std::vector<int64_t> split_sizes(const InferContext& c, int64_t dim) {
  int64_t num = c.attrs().get_int("num_split");
  std::vector<int64_t> sizes = c.attrs().get_ints("sizes");
  if ((num > 0) == !sizes.empty())
    c.fail("exactly one of num_split > 0 and sizes must be given, got num_split = " + std::to_string(num) +
           " and sizes = " + attr_to_string(sizes));
  if (num > 0) {
    if (dim >= 0 && dim % num != 0)
      c.fail("dim " + std::to_string(dim) + " of " + c.input(0).to_string() +
             " does not divide into num_split = " + std::to_string(num) + " equal parts");
    return std::vector<int64_t>(num, dim < 0 ? kUnknownDim : dim / num);
  }
  int rest = -1;
  int64_t sum = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && rest < 0) {
      rest = static_cast<int>(i);
    } else if (sizes[i] < 0) {
      c.fail("sizes " + attr_to_string(sizes) + " may hold one -1 and otherwise sizes >= 0");
    } else {
      sum += sizes[i];
    }
  }
  if (dim >= 0 && (rest >= 0 ? sum > dim : sum != dim))
    c.fail("sizes " + attr_to_string(sizes) + " do not add up to dim " + std::to_string(dim) + " of " +
           c.input(0).to_string());
  if (rest >= 0) sizes[rest] = dim < 0 ? kUnknownDim : dim - sum;
  return sizes;
}

constexpr const char* kGradOp = "a gradient op; second-order gradients are not supported";

// Pad's output shape from x's (forward), or PadGrad's x shape from g's; checks
// paddings and mode (PadGrad: a mirror mode), and how far each mode may pad.
Shape padded_shape(const InferContext& c, const Shape& in, bool forward) {
  const auto& p = c.attrs().get_ints("paddings");
  const std::string& mode = c.attrs().get_string("mode");
  if (mode != "REFLECT" && mode != "SYMMETRIC" && mode != "EDGE" && !(forward && mode == "CONSTANT"))
    c.fail("mode '" + mode + "' is not one of " + (forward ? "CONSTANT, " : "") + "REFLECT, SYMMETRIC, EDGE");
  if (static_cast<int>(p.size()) != 2 * in.rank())
    c.fail("paddings " + attr_to_string(p) + " need " + std::to_string(2 * in.rank()) + " entries for " +
           c.input(0).to_string());
  Shape out;
  for (int i = 0; i < in.rank(); ++i) {
    int64_t before = p[2 * i], after = p[2 * i + 1];
    if (before < 0 || after < 0) c.fail("negative paddings " + attr_to_string(p));
    int64_t total = 0, padded = 0;
    if (__builtin_add_overflow(before, after, &total) || (in[i] >= 0 && __builtin_add_overflow(in[i], total, &padded)))
      c.fail("paddings " + attr_to_string(p) + " of " + c.input(0).to_string() + " overflow an int64 dim");
    int64_t n = in[i] < 0 ? kUnknownDim : forward ? in[i] : in[i] - total;  // x's dim
    if (!forward && in[i] >= 0 && n < 0)
      c.fail("gradient " + c.input(0).to_string() + " is smaller than paddings " + attr_to_string(p));
    int64_t limit = mode == "REFLECT" ? n - 1 : mode == "SYMMETRIC" ? n : std::numeric_limits<int64_t>::max();
    if (mode != "CONSTANT" && n >= 0 && total > 0 && (n == 0 || std::max(before, after) > limit))
      c.fail(mode + " padding of dim " + std::to_string(i) + " (size " + std::to_string(n) + ") by " +
             std::to_string(before) + " before and " + std::to_string(after) + " after exceeds what it allows (" +
             (mode == "REFLECT"     ? "size - 1"
              : mode == "SYMMETRIC" ? "size"
                                    : "a non-empty dim") +
             ")");
    out.push_back(!forward || n < 0 ? n : padded);
  }
  return out;
}

}  // namespace

ops::StridedSliceSpec ops::strided_slice_spec(const Shape& in, const Attrs& a) {
  const auto& begin = a.get_ints("begin");
  const auto& end = a.get_ints("end");
  const auto& strides = a.get_ints("strides");
  auto fail = [](const std::string& m) { throw_error(Code::kInvalidArgument, m); };
  auto bit = [](int64_t mask, size_t i) { return i < 63 && ((mask >> i) & 1) != 0; };
  const int64_t begin_mask = a.get_int("begin_mask"), end_mask = a.get_int("end_mask");
  const int64_t ellipsis_mask = a.get_int("ellipsis_mask"), new_axis_mask = a.get_int("new_axis_mask");
  const int64_t shrink_mask = a.get_int("shrink_axis_mask");
  const size_t n = begin.size();
  if (end.size() != n || strides.size() != n)
    fail("begin " + attr_to_string(begin) + ", end " + attr_to_string(end) + " and strides " + attr_to_string(strides) +
         " differ in length");
  // The sparse spec: entries 0..n-1, plus an implicit ellipsis at the end when there is none.
  size_t ellipsis = n;
  for (size_t i = 0; i < n; ++i)
    if (bit(ellipsis_mask, i)) {
      if (ellipsis != n) fail("ellipsis_mask " + std::to_string(ellipsis_mask) + " has more than one bit set");
      ellipsis = i;
    }
  const size_t sparse = ellipsis == n ? n + 1 : n;
  int new_after = 0;  // new axes after the ellipsis take no input dims
  for (size_t i = ellipsis + 1; i < n; ++i) new_after += bit(new_axis_mask, i);
  // The dense spec: one entry per input dim; `gather` lists the output dims
  // (a dense dim, or kNew for an inserted one; shrunk dims are skipped).
  const int r = in.rank();
  constexpr int kNew = -1;
  std::vector<int64_t> db(r, 0), de(r, 0), ds(r, 1);
  std::vector<char> dbm(r, 0), dem(r, 0), dshrink(r, 0);
  std::vector<int> gather;
  int full = 0;
  for (size_t i = 0; i < sparse; ++i) {
    if (i == ellipsis) {
      int next = std::min(r - static_cast<int>(sparse - i) + 1 + new_after, r);
      for (; full < next; ++full) {
        dbm[full] = dem[full] = 1;
        gather.push_back(full);
      }
    } else if (bit(new_axis_mask, i)) {
      gather.push_back(kNew);
    } else {
      if (full == r)
        fail("entry " + std::to_string(i) + " of begin " + attr_to_string(begin) + " indexes past the " +
             std::to_string(r) + " dims of the input " + in.to_string());
      db[full] = begin[i];
      de[full] = end[i];
      ds[full] = strides[i];
      dbm[full] = bit(begin_mask, i);
      dem[full] = bit(end_mask, i);
      dshrink[full] = bit(shrink_mask, i);
      if (!dshrink[full]) gather.push_back(full);
      ++full;
    }
  }
  StridedSliceSpec spec;
  spec.begin.resize(r);
  spec.stride = ds;
  spec.size.resize(r);
  for (int d = 0; d < r; ++d) {
    const int64_t s = ds[d], dim = in[d];
    if (s == 0) fail("stride 0 for dim " + std::to_string(d) + " (strides " + attr_to_string(strides) + ")");
    if (dshrink[d] && s < 0)
      fail("dim " + std::to_string(d) + " shrinks to one index, which needs a positive stride, got " +
           std::to_string(s));
    if (dim < 0) {
      spec.size[d] = dshrink[d] ? 1 : kUnknownDim;
      continue;
    }
    if (dshrink[d]) {
      int64_t x = db[d] < 0 ? dim + db[d] : db[d];
      if (x < 0 || x >= dim)
        fail("index " + std::to_string(db[d]) + " (shrink_axis) is out of range for dim " + std::to_string(d) +
             " of size " + std::to_string(dim) + " of the input " + in.to_string());
      spec.begin[d] = x;
      spec.size[d] = 1;
      continue;
    }
    // Python slicing: negative indices count from the end, then clamp to the
    // valid range for the stride's direction; a mask bit takes the full range.
    const int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? dim : dim - 1;
    auto canonical = [&](int64_t x, bool masked, bool is_begin) {
      if (masked) return (s > 0) == is_begin ? lo : hi;
      int64_t fwd = x < 0 ? dim + x : x;
      return std::clamp(fwd, lo, hi);
    };
    int64_t b = canonical(db[d], dbm[d], true), e = canonical(de[d], dem[d], false);
    int64_t len = e - b;
    spec.begin[d] = b;
    spec.size[d] = len == 0 || (len < 0) != (s < 0) ? 0 : len / s + (len % s != 0 ? 1 : 0);
  }
  for (int g : gather) spec.out.push_back(g == kNew ? 1 : spec.size[g]);
  return spec;
}

HUB_REGISTER_OP(Reshape)
    .inputs(1)
    .attr("shape", AttrType::kInts)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      return {{c.dtype(0), reshape_shape(c, c.shape(0), c.attrs().get_ints("shape"))}};
    })
    .grad([](const GradContext& c) { return std::vector<Output>{reshape_back(c)}; })
    .doc("x viewed with another shape (one dim may be -1); no copy.");

HUB_REGISTER_OP(ReshapeLike)
    .inputs(2)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& in = c.shape(0);
      const Shape& like = c.shape(1);
      if (in.is_fully_defined() && like.is_fully_defined() && in.num_elements() != like.num_elements())
        c.fail("cannot reshape " + c.input(0).to_string() + " like " + c.input(1).to_string());
      return {{c.dtype(0), like}};
    })
    .grad([](const GradContext& c) {
      return std::vector<Output>{reshape_back(c), Output{}};
    })
    .doc("x viewed with the (run-time) shape of `like`; no copy.");

HUB_REGISTER_OP(DynamicReshape)
    .inputs(1, -1)
    .attr("shape", AttrType::kInts)
    .attr("from", AttrType::kInts)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      std::vector<int64_t> target = c.attrs().get_ints("shape");
      std::vector<char> named;
      const std::vector<std::optional<int64_t>> refs = ops::reference_dims(c, target.size(), &named);
      bool pending = false;
      for (size_t i = 0; i < target.size(); ++i) {
        if (!named[i]) continue;
        pending = pending || !refs[i];
        target[i] = refs[i] ? *refs[i] : 1;
      }
      // A reference dim not known yet (and then the -1 too) is known at run time.
      Shape out = reshape_shape(c, pending ? Shape{kUnknownDim} : c.shape(0), target);
      for (size_t i = 0; i < target.size(); ++i)
        if (named[i] && !refs[i]) out.set_dim(static_cast<int>(i), kUnknownDim);
      return {{c.dtype(0), out}};
    })
    .grad([](const GradContext& c) {
      std::vector<Output> grads(c.inputs.size());
      grads[0] = reshape_back(c);
      return grads;
    })
    .doc(
        "x reshaped to `shape`, whose entries at the `from` positions (position, input, dim) are dims of the "
        "reference inputs (read for their shape only); -1 as Reshape's. For shapes known only at run time "
        "(an imported transformer's [batch, sequence, heads, depth]).");

HUB_REGISTER_OP(DynamicSlice)
    .inputs(1, -1)
    .attr("begin", AttrType::kInts)
    .attr("size", AttrType::kInts)
    .attr("from", AttrType::kInts)
    .attr("begin_from", AttrType::kInts, std::vector<int64_t>{})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& in = c.shape(0);
      std::vector<int64_t> size = c.attrs().get_ints("size");
      std::vector<char> named;
      const std::vector<std::optional<int64_t>> ends = ops::reference_dims(c, size.size(), &named);
      for (size_t i = 0; i < size.size(); ++i)
        if (named[i]) size[i] = 0;
      const std::vector<int64_t>& begin_attr = c.attrs().get_ints("begin");
      if (static_cast<int>(begin_attr.size()) != in.rank() || static_cast<int>(size.size()) != in.rank())
        c.fail("begin " + attr_to_string(begin_attr) + " and size " + attr_to_string(size) + " need " +
               std::to_string(in.rank()) + " entries for " + c.input(0).to_string());
      // Begins with run-time terms: validated here, resolved where the dims are known.
      const auto& terms = c.attrs().get_ints("begin_from");
      if (terms.size() % 4 != 0)
        c.fail("begin_from " + attr_to_string(terms) + " is not a list of (position, input, dim, coefficient)");
      for (size_t k = 0; k < terms.size(); k += 4) {
        const int64_t position = terms[k], input = terms[k + 1], dim = terms[k + 2];
        if (position < 0 || position >= in.rank() || input < 1 || input >= c.num_inputs() || dim < 0 ||
            dim >= c.shape(static_cast<int>(input)).rank())
          c.fail("begin_from " + attr_to_string(terms) + ": no position " + std::to_string(position) + " or no dim " +
                 std::to_string(dim) + " of input " + std::to_string(input));
      }
      std::vector<Shape> shapes;
      for (int i = 0; i < c.num_inputs(); ++i) shapes.push_back(c.shape(i));
      const std::vector<std::optional<int64_t>> begins = ops::dynamic_slice_begin(c.attrs(), shapes);
      std::vector<int64_t> begin;
      for (const std::optional<int64_t>& b : begins) begin.push_back(b.value_or(0));
      check_slice(c, begin, size);
      Shape out;
      for (int i = 0; i < in.rank(); ++i) {
        if (!begins[static_cast<size_t>(i)]) {
          out.push_back(kUnknownDim);
          continue;
        }
        if (named[static_cast<size_t>(i)]) {
          // The slice ends at the reference's dim, clamped to x's (as ONNX's Slice clamps).
          const std::optional<int64_t>& end = ends[static_cast<size_t>(i)];
          out.push_back(!end        ? kUnknownDim
                        : in[i] < 0 ? std::max<int64_t>(0, *end - begin[i])
                                    : std::max<int64_t>(0, std::min(*end, in[i]) - begin[i]));
        } else {
          out.push_back(size[i] >= 0 ? size[i] : (in[i] < 0 ? kUnknownDim : in[i] - begin[i]));
        }
      }
      return {{c.dtype(0), out}};
    })
    .no_gradient("its size is known only at run time (used on index tensors: position ids)")
    .doc(
        "x[begin : end] per dim: end = begin + size (-1: the rest), or at the `from` positions (position, "
        "input, dim) the dim of a reference input (read for its shape only), clamped to x's; begin plus "
        "coefficient x dim per `begin_from` (position, input, dim, coefficient) term, a negative sum counting "
        "from the end.");

HUB_REGISTER_OP(ListSetItem)
    .inputs(3)
    .value_dependent_shape()
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape &list = c.shape(0), &item = c.shape(2);
      if (c.dtype(2) != c.dtype(0))
        c.fail("item " + c.input(2).to_string() + " differs in dtype from the list " + c.input(0).to_string());
      if (list.rank() != item.rank() + 1)
        c.fail("item " + c.input(2).to_string() + " is not a row of the list " + c.input(0).to_string());
      if ((c.dtype(1) != DType::kInt32 && c.dtype(1) != DType::kInt64) || c.shape(1).rank() != 0)
        c.fail("index must be an int32 or int64 scalar, got " + c.input(1).to_string());
      // The rows take the item's shape (an empty list's recorded one may differ).
      std::vector<int64_t> dims{kUnknownDim};
      dims.insert(dims.end(), item.dims().begin(), item.dims().end());
      return {{c.dtype(0), Shape(std::move(dims))}};
    })
    .no_gradient("its index is read at run time (an imported loop's output list)")
    .doc(
        "A list kept as one tensor [n, ...] with row `index` replaced (index < n) or item appended (index = n); "
        "an empty list takes item's shape (TensorFlow's TensorListSetItem as a loop fills a list).");

HUB_REGISTER_OP(DynamicStridedSlice)
    .inputs(3)
    .attr("axes", AttrType::kInts)
    .attr("steps", AttrType::kInts)
    .value_dependent_shape()
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& in = c.shape(0);
      const std::vector<int64_t>& axes = c.attrs().get_ints("axes");
      const std::vector<int64_t>& steps = c.attrs().get_ints("steps");
      if (axes.size() != steps.size())
        c.fail("axes " + attr_to_string(axes) + " and steps " + attr_to_string(steps) + " differ in length");
      Shape out = in;
      for (size_t k = 0; k < axes.size(); ++k) {
        if (axes[k] < 0 || axes[k] >= in.rank() || std::count(axes.begin(), axes.end(), axes[k]) > 1)
          c.fail("axes " + attr_to_string(axes) + " are not distinct dims of " + c.input(0).to_string());
        if (steps[k] == 0) c.fail("step 0 on axis " + std::to_string(axes[k]));
        if (in[static_cast<int>(axes[k])] != 0) out.set_dim(static_cast<int>(axes[k]), kUnknownDim);
      }
      for (int i : {1, 2}) {
        if (c.dtype(i) != DType::kInt32 && c.dtype(i) != DType::kInt64)
          c.fail("input " + std::to_string(i) + " must be int32 or int64, got " + c.input(i).to_string());
        const Shape& b = c.shape(i);
        if (b.rank() != 1 || (b[0] >= 0 && b[0] != static_cast<int64_t>(axes.size())))
          c.fail("input " + std::to_string(i) + " must be 1-D with " + std::to_string(axes.size()) +
                 " entries (one per axis), got " + c.input(i).to_string());
      }
      return {{c.dtype(0), out}};
    })
    .no_gradient("its bounds are read at run time")
    .doc(
        "ONNX Slice with starts and ends read at run time (one per axis in `axes`), constant `steps`: "
        "negative bounds count from the end, then are clamped.");

HUB_REGISTER_OP(DynamicRange)
    .inputs(1, -1)
    .attr("start", AttrType::kInt, int64_t{0})
    .attr("delta", AttrType::kInt, int64_t{1})
    .attr("dtype", AttrType::kDType, DType::kInt64)
    .attr("from", AttrType::kInts)
    .attr("limit", AttrType::kInt, int64_t{0})
    .attr("terms", AttrType::kInts, std::vector<int64_t>{})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const DType dtype = c.attrs().get_dtype("dtype");
      if (dtype != DType::kInt64 && dtype != DType::kInt32 && dtype != DType::kFloat32)
        c.fail("dtype must be int64, int32 or float32, got " + std::string(dtype_name(dtype)));
      const int64_t delta = c.attrs().get_int("delta");
      if (delta == 0) c.fail("delta is 0");
      std::vector<char> named;
      ops::reference_dims(c, 1, &named, 0);  // validates `from`
      const auto& terms = c.attrs().get_ints("terms");
      if (terms.size() % 4 != 0)
        c.fail("terms " + attr_to_string(terms) + " is not a list of (0 start | 1 limit, input, dim, coefficient)");
      for (size_t k = 0; k < terms.size(); k += 4)
        if ((terms[k] != 0 && terms[k] != 1) || terms[k + 1] < 0 || terms[k + 1] >= c.num_inputs() ||
            terms[k + 2] < 0 || terms[k + 2] >= c.shape(static_cast<int>(terms[k + 1])).rank())
          c.fail("terms " + attr_to_string(terms) + ": no slot " + std::to_string(terms[k]) + " or no dim " +
                 std::to_string(terms[k + 2]) + " of input " + std::to_string(terms[k + 1]));
      if (!named[0] && terms.empty()) c.fail("neither from nor terms gives a value read at run time");
      std::vector<Shape> shapes;
      for (int i = 0; i < c.num_inputs(); ++i) shapes.push_back(c.shape(i));
      const std::optional<std::pair<int64_t, int64_t>> bounds = ops::dynamic_range_bounds(c.attrs(), shapes);
      if (!bounds) return {{dtype, Shape{kUnknownDim}}};
      const int64_t span = bounds->second - bounds->first;
      const int64_t n = delta > 0 ? (span + delta - 1) / delta : (span + delta + 1) / delta;
      return {{dtype, Shape{std::max<int64_t>(0, n)}}};
    })
    .no_gradient("its values are integers (positions)")
    .doc(
        "start, start + delta, ... below the limit (above it for a negative delta), read at each run from the "
        "reference inputs' dims: the limit is `limit` plus the dim `from` = (0, input, dim) names, and each "
        "`terms` entry (0 start | 1 limit, input, dim, coefficient) adds coefficient x dim: a transformer's "
        "positions 0 .. sequence - 1, or past .. past + sequence - 1 with a key cache.");

HUB_REGISTER_OP(Shape)
    .inputs(1)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      return {{DType::kInt64, Shape{static_cast<int64_t>(c.shape(0).rank())}}};
    })
    .no_gradient("its values are dims")
    .doc("int64 [rank]: x's dims at run time (read for its shape only).");

HUB_REGISTER_OP(Squeeze)
    .inputs(1)
    .attr("axes", AttrType::kInts, std::vector<int64_t>{})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& in = c.shape(0);
      const auto& axes = c.attrs().get_ints("axes");
      std::vector<char> drop(in.rank(), 0);
      if (axes.empty()) {
        for (int i = 0; i < in.rank(); ++i) {
          if (in[i] < 0) c.fail("squeeze without axes needs known dims, got " + c.input(0).to_string() + "; pass axes");
          drop[i] = in[i] == 1;
        }
      } else {
        for (int64_t a : axes) {
          int64_t i = normalize_axis(c, a, in.rank(), "axis");
          if (in[i] >= 0 && in[i] != 1)
            c.fail("cannot squeeze dim " + std::to_string(a) + " of " + c.input(0).to_string() + " (not 1)");
          drop[i] = 1;
        }
      }
      Shape out;
      for (int i = 0; i < in.rank(); ++i)
        if (!drop[i]) out.push_back(in[i]);
      return {{c.dtype(0), out}};
    })
    .grad([](const GradContext& c) { return std::vector<Output>{reshape_back(c)}; })
    .doc("Removes size-1 dims (the listed axes, or all); no copy.");

HUB_REGISTER_OP(ExpandDims)
    .inputs(1)
    .attr("axis", AttrType::kInt)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& in = c.shape(0);
      int64_t axis = c.attrs().get_int("axis");
      int r = in.rank();
      if (axis < -r - 1 || axis > r)
        c.fail("axis " + std::to_string(axis) + " out of range [" + std::to_string(-r - 1) + ", " + std::to_string(r) +
               "] for " + c.input(0).to_string());
      if (axis < 0) axis += r + 1;
      std::vector<int64_t> dims = in.dims();
      dims.insert(dims.begin() + axis, 1);
      return {{c.dtype(0), Shape(dims)}};
    })
    .grad([](const GradContext& c) { return std::vector<Output>{reshape_back(c)}; })
    .doc("Inserts a size-1 dim at axis; no copy.");

HUB_REGISTER_OP(Transpose)
    .inputs(1)
    .attr("perm", AttrType::kInts)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const auto& perm = c.attrs().get_ints("perm");
      check_perm(c, perm);
      Shape out;
      for (int64_t p : perm) out.push_back(c.shape(0)[static_cast<int>(p)]);
      return {{c.dtype(0), out}};
    })
    .grad([](const GradContext& c) {
      return std::vector<Output>{ops::transpose(c.scope, c.grads[0], inverse_perm(c.node.attrs.get_ints("perm")))};
    })
    .doc("Permutes dims: y.shape[i] = x.shape[perm[i]].");

HUB_REGISTER_OP(Pad)
    .inputs(1)
    .attr("paddings", AttrType::kInts)
    .attr("mode", AttrType::kString, std::string("CONSTANT"))
    .attr("constant_value", AttrType::kFloat, 0.0)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      return {{c.dtype(0), padded_shape(c, c.shape(0), true)}};
    })
    .grad([](const GradContext& c) {
      const std::string& mode = c.node.attrs.get_string("mode");
      const auto& p = c.node.attrs.get_ints("paddings");
      if (mode != "CONSTANT")
        return std::vector<Output>{c.scope.op("PadGrad", {c.grads[0]}, Attrs().set("paddings", p).set("mode", mode))};
      const Shape& in = c.scope.graph().spec(c.inputs[0]).shape;
      std::vector<int64_t> begin, size;
      for (int i = 0; i < in.rank(); ++i) {
        begin.push_back(p[2 * i]);
        if (in[i] < 0 && p[2 * i + 1] != 0)
          throw_error(Code::kInvalidArgument, "gradient of Pad '" + c.node.name + "': dim " + std::to_string(i) +
                                                  " of input " + c.scope.graph().spec(c.inputs[0]).to_string() +
                                                  " is unknown but padded after");
        size.push_back(in[i] < 0 ? -1 : in[i]);
      }
      return std::vector<Output>{ops::slice(c.scope, c.grads[0], begin, size)};
    })
    .doc("Pads x: paddings = [before_0, after_0, ...]; mode CONSTANT (constant_value), REFLECT, SYMMETRIC or EDGE.");

HUB_REGISTER_OP(PadGrad)
    .inputs(1)
    .attr("paddings", AttrType::kInts)
    .attr("mode", AttrType::kString)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(0, DType::kFloat32);
      return {{DType::kFloat32, padded_shape(c, c.shape(0), false)}};
    })
    .no_gradient(kGradOp)
    .doc("Pad's gradient for REFLECT, SYMMETRIC and EDGE: border gradients added onto the elements they copy.");

HUB_REGISTER_OP(Slice)
    .inputs(1)
    .attr("begin", AttrType::kInts)
    .attr("size", AttrType::kInts)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& in = c.shape(0);
      const auto& begin = c.attrs().get_ints("begin");
      const auto& size = c.attrs().get_ints("size");
      check_slice(c, begin, size);
      Shape out;
      for (int i = 0; i < in.rank(); ++i)
        out.push_back(size[i] >= 0 ? size[i] : (in[i] < 0 ? kUnknownDim : in[i] - begin[i]));
      return {{c.dtype(0), out}};
    })
    .grad([](const GradContext& c) {
      const auto& begin = c.node.attrs.get_ints("begin");
      const auto& size = c.node.attrs.get_ints("size");
      const TensorSpec& spec = c.scope.graph().spec(c.inputs[0]);
      std::vector<int64_t> p;
      for (int i = 0; i < spec.shape.rank(); ++i) {
        int64_t d = spec.shape[i];
        if (d < 0 && !(begin[i] == 0 && size[i] == -1))
          throw_error(Code::kInvalidArgument, "gradient of Slice '" + c.node.name + "': dim " + std::to_string(i) +
                                                  " of input " + spec.to_string() +
                                                  " is unknown and only partly sliced");
        p.push_back(begin[i]);
        p.push_back(d < 0 ? 0 : d - begin[i] - (size[i] < 0 ? d - begin[i] : size[i]));
      }
      return std::vector<Output>{ops::pad(c.scope, c.grads[0], p)};
    })
    .doc("x[begin : begin + size] per dim; size -1 takes the rest of the dim.");

HUB_REGISTER_OP(Concat)
    .inputs(1, -1)
    .attr("axis", AttrType::kInt)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_same_dtypes();
      const Shape& s0 = c.shape(0);
      if (s0.rank() == 0) c.fail("cannot concatenate scalars");
      int64_t axis = normalize_axis(c, c.attrs().get_int("axis"), s0.rank(), "axis");
      Shape out = s0;
      for (int k = 1; k < c.num_inputs(); ++k) {
        const Shape& sk = c.shape(k);
        if (sk.rank() != s0.rank())
          c.fail("input " + std::to_string(k) + " " + c.input(k).to_string() + " has another rank than input 0 " +
                 c.input(0).to_string());
        for (int i = 0; i < s0.rank(); ++i) {
          if (i == axis) {
            out.set_dim(i, out[i] < 0 || sk[i] < 0 ? kUnknownDim : out[i] + sk[i]);
          } else if (sk[i] >= 0 && out[i] >= 0 && sk[i] != out[i]) {
            c.fail("input " + std::to_string(k) + " " + c.input(k).to_string() + " differs from input 0 " +
                   c.input(0).to_string() + " at dim " + std::to_string(i));
          } else if (out[i] < 0) {
            out.set_dim(i, sk[i]);
          }
        }
      }
      return {{c.dtype(0), out}};
    })
    .grad([](const GradContext& c) {
      const GraphBuilder& g = c.scope.graph();
      int rank = g.spec(c.inputs[0]).shape.rank();
      int64_t axis = c.node.attrs.get_int("axis");
      if (axis < 0) axis += rank;
      std::vector<Output> out;
      int64_t offset = 0;
      for (size_t k = 0; k < c.inputs.size(); ++k) {
        const TensorSpec& spec = g.spec(c.inputs[k]);
        int64_t d = spec.shape[static_cast<int>(axis)];
        bool last = k + 1 == c.inputs.size();
        if (d < 0 && !last)
          throw_error(Code::kInvalidArgument, "gradient of Concat '" + c.node.name + "': input " + std::to_string(k) +
                                                  " " + spec.to_string() + " has an unknown size along axis " +
                                                  std::to_string(axis));
        std::vector<int64_t> begin(rank, 0), size(rank, -1);
        begin[axis] = offset;
        size[axis] = d;  // -1 (rest) for an unknown last part
        out.push_back(ops::slice(c.scope, c.grads[0], begin, size, "Slice" + std::to_string(k)));
        offset += d;
      }
      return out;
    })
    .doc("Joins inputs along axis; other dims must agree.");

HUB_REGISTER_OP(Split)
    .inputs(1)
    .variadic_outputs()
    .attr("axis", AttrType::kInt, int64_t{0})
    .attr("num_split", AttrType::kInt, int64_t{0})
    .attr("sizes", AttrType::kInts, std::vector<int64_t>{})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& in = c.shape(0);
      if (in.rank() == 0) c.fail("cannot split a scalar");
      int axis = static_cast<int>(normalize_axis(c, c.attrs().get_int("axis"), in.rank(), "axis"));
      std::vector<TensorSpec> out;
      for (int64_t size : split_sizes(c, in[axis])) {
        Shape part = in;
        part.set_dim(axis, size);
        out.push_back({c.dtype(0), part});
      }
      return out;
    })
    .grad([](const GradContext& c) {
      std::vector<Output> parts;
      for (size_t i = 0; i < c.outputs.size(); ++i)
        parts.push_back(c.grads[i].valid() ? c.grads[i]
                                           : ops::zeros_like(c.scope, c.outputs[i], "Zeros" + std::to_string(i)));
      return std::vector<Output>{ops::concat(c.scope, parts, c.node.attrs.get_int("axis"))};
    })
    .doc("Cuts x along axis into num_split equal parts or parts of the given sizes (one may be -1).");

HUB_REGISTER_OP(Gather)
    .inputs(2)
    .attr("axis", AttrType::kInt, int64_t{0})
    .attr("batch_dims", AttrType::kInt, int64_t{0})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& p = c.shape(0);
      const Shape& idx = c.shape(1);
      if (!is_index_dtype(c.dtype(1))) c.fail("indices must be int32 or int64, got " + c.input(1).to_string());
      if (p.rank() == 0) c.fail("params must have rank >= 1, got " + c.input(0).to_string());
      int axis = static_cast<int>(normalize_axis(c, c.attrs().get_int("axis"), p.rank(), "axis"));
      int64_t bd = c.attrs().get_int("batch_dims");
      if (bd < 0) bd += idx.rank();
      if (bd < 0 || bd > idx.rank() || bd > axis)
        c.fail("batch_dims " + std::to_string(c.attrs().get_int("batch_dims")) + " must lie in [-" +
               std::to_string(idx.rank()) + ", " + std::to_string(idx.rank()) + "] (indices " + c.input(1).to_string() +
               ") and not exceed axis " + std::to_string(axis));
      Shape out;
      for (int d = 0; d < axis; ++d) {
        if (d < bd && p[d] >= 0 && idx[d] >= 0 && p[d] != idx[d])
          c.fail("batch dim " + std::to_string(d) + " differs between params " + c.input(0).to_string() +
                 " and indices " + c.input(1).to_string());
        out.push_back(d < bd && p[d] < 0 ? idx[d] : p[d]);
      }
      for (int d = static_cast<int>(bd); d < idx.rank(); ++d) out.push_back(idx[d]);
      for (int d = axis + 1; d < p.rank(); ++d) out.push_back(p[d]);
      return {{c.dtype(0), out}};
    })
    .grad([](const GradContext& c) {
      return std::vector<Output>{c.scope.op("GatherGrad", {c.grads[0], c.inputs[1], c.inputs[0]}, c.node.attrs),
                                 Output{}};
    })
    .doc(
        "params[.., indices, ..] along axis (TF GatherV2); negative indices count from the end; one outside "
        "[-dim, dim) is a run-time error.");

HUB_REGISTER_OP(GatherGrad)
    .inputs(3)
    .attr("axis", AttrType::kInt, int64_t{0})
    .attr("batch_dims", AttrType::kInt, int64_t{0})
    .shape_fn(gather_grad_shape_fn)
    .no_gradient(kGradOp)
    .doc("(g, indices, params) -> zeros of params' shape with g's slices added at their indices.");

HUB_REGISTER_OP(GatherElements)
    .inputs(2)
    .attr("axis", AttrType::kInt, int64_t{0})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape &x = c.shape(0), &idx = c.shape(1);
      if (!is_index_dtype(c.dtype(1))) c.fail("indices must be int32 or int64, got " + c.input(1).to_string());
      if (x.rank() == 0 || idx.rank() != x.rank())
        c.fail("indices " + c.input(1).to_string() + " must have the rank (>= 1) of x " + c.input(0).to_string());
      const int axis = static_cast<int>(normalize_axis(c, c.attrs().get_int("axis"), x.rank(), "axis"));
      for (int d = 0; d < x.rank(); ++d)
        if (d != axis && x[d] >= 0 && idx[d] > x[d])
          c.fail("dim " + std::to_string(d) + " of indices " + c.input(1).to_string() + " exceeds x's " +
                 c.input(0).to_string());
      return {{c.dtype(0), idx}};
    })
    .grad([](const GradContext& c) {
      return std::vector<Output>{c.scope.op("GatherElementsGrad", {c.grads[0], c.inputs[1], c.inputs[0]}, c.node.attrs),
                                 Output{}};
    })
    .doc("x at indices along axis, element by element (ONNX GatherElements); y has indices' shape.");

HUB_REGISTER_OP(GatherElementsGrad)
    .inputs(3)
    .attr("axis", AttrType::kInt, int64_t{0})
    .shape_fn(gather_grad_shape_fn)
    .no_gradient(kGradOp)
    .doc("(g, indices, x) -> zeros of x's shape with each element of g added where GatherElements read it.");

// GatherND's output shape: indices' dims but the last, then data's after the
// batch dims and the k it indexes.
std::vector<TensorSpec> gather_nd_shape_fn(const InferContext& c) {
  const Shape &x = c.shape(0), &idx = c.shape(1);
  if (!is_index_dtype(c.dtype(1))) c.fail("indices must be int32 or int64, got " + c.input(1).to_string());
  const int64_t b = c.attrs().get_int("batch_dims");
  if (idx.rank() < 1 || b < 0 || b >= idx.rank() || b >= x.rank())
    c.fail("batch_dims " + std::to_string(b) + " must be below the ranks of x " + c.input(0).to_string() +
           " and indices " + c.input(1).to_string() + " (indices of rank >= 1)");
  const int64_t k = idx[idx.rank() - 1];
  if (k < 0) c.fail("the last dim of indices " + c.input(1).to_string() + " must be known");
  if (k < 1 || b + k > x.rank())
    c.fail("indices " + c.input(1).to_string() + " index " + std::to_string(k) + " dims of x " +
           c.input(0).to_string() + " after " + std::to_string(b) + " batch dims");
  for (int d = 0; d < b; ++d)
    if (x[d] >= 0 && idx[d] >= 0 && x[d] != idx[d])
      c.fail("batch dim " + std::to_string(d) + " of x " + c.input(0).to_string() + " and indices " +
             c.input(1).to_string() + " differ");
  std::vector<int64_t> dims(idx.dims().begin(), idx.dims().end() - 1);
  dims.insert(dims.end(), x.dims().begin() + b + k, x.dims().end());
  return {{c.dtype(0), Shape(dims)}};
}

const char* const kReductions[] = {"none", "add", "mul", "max", "min"};

void check_reduction(const InferContext& c) {
  const std::string& r = c.attrs().get_string("reduction");
  if (std::find(std::begin(kReductions), std::end(kReductions), r) == std::end(kReductions))
    c.fail("reduction '" + r + "' is not one of none, add, mul, max, min");
  if (r != "none" && !is_arith(c.dtype(0)))
    c.fail("reduction '" + r + "' needs float32, int32 or int64, got " + c.input(0).to_string());
  if (c.dtype(2) != c.dtype(0))
    c.fail("updates " + c.input(2).to_string() + " must have the dtype of data " + c.input(0).to_string());
  if (!is_index_dtype(c.dtype(1))) c.fail("indices must be int32 or int64, got " + c.input(1).to_string());
}

// The gradients of ScatterND and ScatterElements: data's flows where no
// update replaced it (reduction none) or everywhere (add); each update's is
// the gradient where it landed. Other reductions have none.
std::vector<Output> scatter_grad(const GradContext& c, const char* scatter, const char* gather) {
  const std::string& r = c.node.attrs.get_string("reduction");
  if (r != "none" && r != "add")
    throw_error(Code::kUnimplemented,
                "node '" + c.node.name + "' (" + c.node.op + "): no gradient for reduction '" + r + "'");
  Attrs a = c.node.attrs;
  Attrs gather_attrs;
  if (c.node.attrs.has("axis")) gather_attrs.set("axis", c.node.attrs.get_int("axis"));
  Output g_updates = c.scope.op(gather, {c.grads[0], c.inputs[1]}, gather_attrs, "UpdatesGrad");
  Output g_data = c.grads[0];
  if (r == "none")
    g_data = c.scope.op(scatter, {c.grads[0], c.inputs[1], ops::zeros_like(c.scope, c.inputs[2])}, a, "DataGrad");
  return {g_data, Output{}, g_updates};
}

HUB_REGISTER_OP(GatherND)
    .inputs(2)
    .attr("batch_dims", AttrType::kInt, int64_t{0})
    .shape_fn(gather_nd_shape_fn)
    .grad([](const GradContext& c) {
      if (c.node.attrs.get_int("batch_dims") != 0)
        throw_error(Code::kUnimplemented,
                    "node '" + c.node.name + "' (GatherND): no gradient with batch_dims (only 0 is differentiable)");
      Output zeros = ops::zeros_like(c.scope, c.inputs[0]);
      return std::vector<Output>{
          c.scope.op("ScatterND", {zeros, c.inputs[1], c.grads[0]}, Attrs().set("reduction", "add"), "GatherNDGrad"),
          Output{}};
    })
    .doc(
        "Slices of x at index tuples (ONNX GatherND, TF GatherNd): y[i..] = x[b.., indices[b.., i..]] with the last "
        "dim of indices indexing that many dims of x after batch_dims; negative indices count from the end.");

HUB_REGISTER_OP(ScatterND)
    .inputs(3)
    .attr("reduction", AttrType::kString, std::string("none"))
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      check_reduction(c);
      const Shape &x = c.shape(0), &idx = c.shape(1), &up = c.shape(2);
      if (idx.rank() < 1) c.fail("indices " + c.input(1).to_string() + " need rank >= 1");
      const int64_t k = idx[idx.rank() - 1];
      if (k < 1 || k > x.rank())
        c.fail("indices " + c.input(1).to_string() + " must index 1 to " + std::to_string(x.rank()) + " dims of data " +
               c.input(0).to_string());
      std::vector<int64_t> want(idx.dims().begin(), idx.dims().end() - 1);
      want.insert(want.end(), x.dims().begin() + k, x.dims().end());
      if (!up.compatible_with(Shape(want)))
        c.fail("updates " + c.input(2).to_string() + " must be " + Shape(want).to_string() + " for data " +
               c.input(0).to_string() + " and indices " + c.input(1).to_string());
      return {c.input(0)};
    })
    .grad([](const GradContext& c) { return scatter_grad(c, "ScatterND", "GatherND"); })
    .doc(
        "data with the slices at index tuples replaced by updates (ONNX ScatterND), or combined with them "
        "(reduction add, mul, max, min), in index order.");

HUB_REGISTER_OP(ScatterElements)
    .inputs(3)
    .attr("axis", AttrType::kInt, int64_t{0})
    .attr("reduction", AttrType::kString, std::string("none"))
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      check_reduction(c);
      const Shape &x = c.shape(0), &idx = c.shape(1), &up = c.shape(2);
      if (x.rank() == 0 || idx.rank() != x.rank())
        c.fail("indices " + c.input(1).to_string() + " must have the rank (>= 1) of data " + c.input(0).to_string());
      if (!up.compatible_with(idx))
        c.fail("updates " + c.input(2).to_string() + " must have the shape of indices " + c.input(1).to_string());
      const int axis = static_cast<int>(normalize_axis(c, c.attrs().get_int("axis"), x.rank(), "axis"));
      for (int d = 0; d < x.rank(); ++d)
        if (d != axis && x[d] >= 0 && idx[d] > x[d])
          c.fail("dim " + std::to_string(d) + " of indices " + c.input(1).to_string() + " exceeds data's " +
                 c.input(0).to_string());
      return {c.input(0)};
    })
    .grad([](const GradContext& c) { return scatter_grad(c, "ScatterElements", "GatherElements"); })
    .doc(
        "data with the element each index names along axis replaced by updates (ONNX ScatterElements), or "
        "combined with it (reduction add, mul, max, min), in index order.");

HUB_REGISTER_OP(StridedSlice)
    .inputs(1)
    .attr("begin", AttrType::kInts)
    .attr("end", AttrType::kInts)
    .attr("strides", AttrType::kInts)
    .attr("begin_mask", AttrType::kInt, int64_t{0})
    .attr("end_mask", AttrType::kInt, int64_t{0})
    .attr("ellipsis_mask", AttrType::kInt, int64_t{0})
    .attr("new_axis_mask", AttrType::kInt, int64_t{0})
    .attr("shrink_axis_mask", AttrType::kInt, int64_t{0})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      try {
        return {{c.dtype(0), ops::strided_slice_spec(c.shape(0), c.attrs()).out}};
      } catch (const Error& e) {
        c.fail(e.message());
      }
    })
    .grad([](const GradContext& c) {
      return std::vector<Output>{c.scope.op("StridedSliceGrad", {c.inputs[0], c.grads[0]}, c.node.attrs)};
    })
    .doc("TF StridedSlice: x[begin:end:strides] per dim with begin/end/ellipsis/new_axis/shrink_axis masks.");

HUB_REGISTER_OP(StridedSliceGrad)
    .inputs(2)
    .attr("begin", AttrType::kInts)
    .attr("end", AttrType::kInts)
    .attr("strides", AttrType::kInts)
    .attr("begin_mask", AttrType::kInt, int64_t{0})
    .attr("end_mask", AttrType::kInt, int64_t{0})
    .attr("ellipsis_mask", AttrType::kInt, int64_t{0})
    .attr("new_axis_mask", AttrType::kInt, int64_t{0})
    .attr("shrink_axis_mask", AttrType::kInt, int64_t{0})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(1, DType::kFloat32);
      Shape out;
      try {
        out = ops::strided_slice_spec(c.shape(0), c.attrs()).out;
      } catch (const Error& e) {
        c.fail(e.message());
      }
      if (!out.compatible_with(c.shape(1)) || out.rank() != c.shape(1).rank())
        c.fail("dy " + c.input(1).to_string() + " is not the shape " + out.to_string() + " sliced from x " +
               c.input(0).to_string());
      return {{DType::kFloat32, c.shape(0)}};
    })
    .no_gradient(kGradOp)
    .doc("(x, dy) -> zeros of x's shape with dy placed where StridedSlice(x) read.");

HUB_REGISTER_OP(Tile)
    .inputs(1)
    .attr("multiples", AttrType::kInts)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& in = c.shape(0);
      const auto& m = c.attrs().get_ints("multiples");
      if (static_cast<int>(m.size()) != in.rank())
        c.fail("multiples " + attr_to_string(m) + " need " + std::to_string(in.rank()) + " entries for " +
               c.input(0).to_string());
      Shape out;
      for (int i = 0; i < in.rank(); ++i) {
        if (m[i] < 0) c.fail("multiples " + attr_to_string(m) + " has a negative entry");
        int64_t dim = kUnknownDim;
        if (in[i] >= 0 && __builtin_mul_overflow(in[i], m[i], &dim))
          c.fail("multiples " + attr_to_string(m) + " of " + c.input(0).to_string() + " overflow an int64 dim");
        out.push_back(dim);
      }
      return {{c.dtype(0), out}};
    })
    .grad([](const GradContext& c) {
      return std::vector<Output>{c.scope.op("TileGrad", {c.grads[0], c.inputs[0]}, c.node.attrs)};
    })
    .doc("x repeated multiples[i] times along each dim i.");

HUB_REGISTER_OP(ReverseSequence)
    .inputs(2)
    .attr("batch_axis", AttrType::kInt, int64_t{1})
    .attr("time_axis", AttrType::kInt, int64_t{0})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& x = c.shape(0);
      if (!is_index_dtype(c.dtype(1))) c.fail("lengths must be int32 or int64, got " + c.input(1).to_string());
      c.expect_rank(1, 1);
      const int64_t batch = normalize_axis(c, c.attrs().get_int("batch_axis"), x.rank(), "batch_axis");
      const int64_t time = normalize_axis(c, c.attrs().get_int("time_axis"), x.rank(), "time_axis");
      if (batch == time) c.fail("batch_axis and time_axis are both " + std::to_string(batch));
      const int64_t b = x[static_cast<int>(batch)], n = c.shape(1)[0];
      if (b >= 0 && n >= 0 && b != n)
        c.fail("lengths " + c.input(1).to_string() + " must have one entry per batch element of " +
               c.input(0).to_string());
      return {{c.dtype(0), x}};
    })
    .grad([](const GradContext& c) {
      // A permutation that is its own inverse.
      return std::vector<Output>{c.scope.op("ReverseSequence", {c.grads[0], c.inputs[1]}, c.node.attrs), Output{}};
    })
    .doc("Per batch element b, the first lengths[b] entries along time_axis reversed, the rest kept.");

HUB_REGISTER_OP(TileGrad)
    .inputs(2)
    .attr("multiples", AttrType::kInts)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(0, DType::kFloat32);
      const Shape& g = c.shape(0);
      const Shape& x = c.shape(1);
      const auto& m = c.attrs().get_ints("multiples");
      bool ok = g.rank() == x.rank() && static_cast<int>(m.size()) == x.rank();
      for (int i = 0; ok && i < x.rank(); ++i) {
        int64_t tiled = 0;
        ok = g[i] < 0 || x[i] < 0 || (!__builtin_mul_overflow(x[i], m[i], &tiled) && g[i] == tiled);
      }
      if (!ok)
        c.fail("gradient " + c.input(0).to_string() + " is not x " + c.input(1).to_string() + " tiled by " +
               attr_to_string(m));
      return {{DType::kFloat32, x}};
    })
    .no_gradient(kGradOp)
    .doc("(g, x) -> g summed over the tiles, at x's shape.");

namespace ops {

std::array<std::vector<std::array<int64_t, 3>>, 2> dynamic_range_terms(const Attrs& attrs) {
  std::array<std::vector<std::array<int64_t, 3>>, 2> out;
  const std::vector<int64_t>& from = attrs.get_ints("from");
  if (from.size() == 3) out[1].push_back({from[1], from[2], 1});
  const std::vector<int64_t>& terms = attrs.get_ints("terms");
  for (size_t k = 0; k + 3 < terms.size(); k += 4)
    out[static_cast<size_t>(terms[k])].push_back({terms[k + 1], terms[k + 2], terms[k + 3]});
  return out;
}

std::optional<std::pair<int64_t, int64_t>> dynamic_range_bounds(const Attrs& attrs, const std::vector<Shape>& shapes) {
  int64_t bound[2] = {attrs.get_int("start"), attrs.get_int("limit")};
  const auto terms = dynamic_range_terms(attrs);
  for (size_t slot = 0; slot < 2; ++slot)
    for (const auto& [input, dim, coefficient] : terms[slot]) {
      const int64_t d = shapes[static_cast<size_t>(input)][static_cast<int>(dim)];
      if (d < 0) return std::nullopt;
      int64_t term = 0;
      if (__builtin_mul_overflow(coefficient, d, &term) || __builtin_add_overflow(bound[slot], term, &bound[slot]))
        throw_error(Code::kInvalidArgument, "DynamicRange: a bound overflows int64");
    }
  return std::make_pair(bound[0], bound[1]);
}

std::vector<std::optional<int64_t>> dynamic_slice_begin(const Attrs& attrs, const std::vector<Shape>& shapes) {
  const std::vector<int64_t>& terms = attrs.get_ints("begin_from");
  const std::vector<int64_t>& constant = attrs.get_ints("begin");
  std::vector<std::optional<int64_t>> begin(constant.begin(), constant.end());
  std::vector<char> computed(begin.size(), 0);
  for (size_t k = 0; k + 3 < terms.size(); k += 4) {
    const auto position = static_cast<size_t>(terms[k]);
    computed[position] = 1;
    const int64_t d = shapes[static_cast<size_t>(terms[k + 1])][static_cast<int>(terms[k + 2])];
    if (!begin[position] || d < 0) {
      begin[position].reset();
      continue;
    }
    // (Coefficients come from model files: overflow is refused, not wrapped.)
    int64_t term = 0, sum = 0;
    if (__builtin_mul_overflow(terms[k + 3], d, &term) || __builtin_add_overflow(*begin[position], term, &sum))
      throw_error(Code::kInvalidArgument, "DynamicSlice: a begin term overflows int64");
    begin[position] = sum;
  }
  const Shape& x = shapes[0];
  for (size_t i = 0; i < begin.size(); ++i) {
    if (!computed[i] || !begin[i]) continue;
    const int64_t n = x[static_cast<int>(i)];
    if (n < 0) {
      if (*begin[i] < 0) begin[i].reset();  // counts from an end not known yet
      continue;
    }
    begin[i] = std::clamp<int64_t>(*begin[i] < 0 ? *begin[i] + n : *begin[i], 0, n);
  }
  return begin;
}

std::vector<std::optional<int64_t>> reference_dims(const InferContext& c, size_t rank, std::vector<char>* named,
                                                   int first_reference) {
  const auto& from = c.attrs().get_ints("from");
  if (from.size() % 3 != 0) c.fail("from " + attr_to_string(from) + " is not a list of (position, input, dim)");
  std::vector<std::optional<int64_t>> dims(rank);
  named->assign(rank, 0);
  for (size_t k = 0; k < from.size(); k += 3) {
    const int64_t position = from[k], input = from[k + 1], dim = from[k + 2];
    if (position < 0 || position >= static_cast<int64_t>(rank) || (*named)[static_cast<size_t>(position)])
      c.fail("from " + attr_to_string(from) + ": position " + std::to_string(position) +
             " is outside the target or given twice");
    if (input < first_reference || input >= c.num_inputs() || dim < 0 || dim >= c.shape(static_cast<int>(input)).rank())
      c.fail("from " + attr_to_string(from) + ": input " + std::to_string(input) + " has no dim " +
             std::to_string(dim));
    (*named)[static_cast<size_t>(position)] = 1;
    const int64_t d = c.shape(static_cast<int>(input))[static_cast<int>(dim)];
    if (d >= 0) dims[static_cast<size_t>(position)] = d;
  }
  return dims;
}

Output reshape(const Scope& s, Output x, const std::vector<int64_t>& shape, const std::string& name) {
  return s.op("Reshape", {x}, Attrs().set("shape", shape), name);
}
Output reshape_like(const Scope& s, Output x, Output like, const std::string& name) {
  const GraphBuilder& g = s.graph();
  if (g.spec(x).shape == g.spec(like).shape && g.spec(x).shape.is_fully_defined()) return x;
  return s.op("ReshapeLike", {x, like}, {}, name);
}
Output squeeze(const Scope& s, Output x, const std::vector<int64_t>& axes, const std::string& name) {
  return s.op("Squeeze", {x}, Attrs().set("axes", axes), name);
}
Output expand_dims(const Scope& s, Output x, int64_t axis, const std::string& name) {
  return s.op("ExpandDims", {x}, Attrs().set("axis", axis), name);
}
Output transpose(const Scope& s, Output x, const std::vector<int64_t>& perm, const std::string& name) {
  return s.op("Transpose", {x}, Attrs().set("perm", perm), name);
}
Output pad(const Scope& s, Output x, const std::vector<int64_t>& paddings, const std::string& name) {
  return pad(s, x, paddings, PadMode::kConstant, 0, name);
}
Output pad(const Scope& s, Output x, const std::vector<int64_t>& paddings, PadMode mode, double constant_value,
           const std::string& name) {
  static const char* const kNames[] = {"CONSTANT", "REFLECT", "SYMMETRIC", "EDGE"};
  return s.op("Pad", {x},
              Attrs()
                  .set("paddings", paddings)
                  .set("mode", kNames[static_cast<int>(mode)])
                  .set("constant_value", constant_value),
              name);
}
Output slice(const Scope& s, Output x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size,
             const std::string& name) {
  return s.op("Slice", {x}, Attrs().set("begin", begin).set("size", size), name);
}
Output concat(const Scope& s, const std::vector<Output>& xs, int64_t axis, const std::string& name) {
  if (xs.empty()) throw_error(Code::kInvalidArgument, "concat '" + s.name(name) + "': no inputs");
  return s.op("Concat", xs, Attrs().set("axis", axis), name);
}

Output tile(const Scope& s, Output x, const std::vector<int64_t>& multiples, const std::string& name) {
  return s.op("Tile", {x}, Attrs().set("multiples", multiples), name);
}
std::pair<int64_t, int64_t> onnx_slice_bounds(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (dim == 0) return {0, 0};  // empty either way (and [0, dim - 1] has no range)
  if (step > 0) return {std::clamp<int64_t>(start, 0, dim), std::clamp<int64_t>(end, 0, dim)};
  return {std::clamp<int64_t>(start, 0, dim - 1), std::clamp<int64_t>(end, -1, dim - 1)};
}

Output dynamic_strided_slice(const Scope& s, Output x, Output starts, Output ends, const std::vector<int64_t>& axes,
                             const std::vector<int64_t>& steps, const std::string& name) {
  return s.op("DynamicStridedSlice", {x, starts, ends}, Attrs().set("axes", axes).set("steps", steps), name);
}

std::vector<Output> split(const Scope& s, Output x, int64_t axis, int64_t num_split, const std::vector<int64_t>& sizes,
                          const std::string& name) {
  return s.op_n("Split", {x}, Attrs().set("axis", axis).set("num_split", num_split).set("sizes", sizes), name);
}
Output gather(const Scope& s, Output params, Output indices, int64_t axis, int64_t batch_dims,
              const std::string& name) {
  return s.op("Gather", {params, indices}, Attrs().set("axis", axis).set("batch_dims", batch_dims), name);
}
Output strided_slice(const Scope& s, Output x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                     const std::vector<int64_t>& strides, const StridedSliceMasks& m, const std::string& name) {
  Attrs a;
  a.set("begin", begin).set("end", end).set("strides", strides);
  a.set("begin_mask", m.begin).set("end_mask", m.end).set("ellipsis_mask", m.ellipsis);
  a.set("new_axis_mask", m.new_axis).set("shrink_axis_mask", m.shrink_axis);
  return s.op("StridedSlice", {x}, a, name);
}

GatherView gather_view(const Shape& params, const Shape& indices, const Attrs& attrs) {
  int axis = static_cast<int>(attrs.get_int("axis"));
  if (axis < 0) axis += params.rank();
  int bd = static_cast<int>(attrs.get_int("batch_dims"));
  if (bd < 0) bd += indices.rank();
  GatherView v;
  for (int d = 0; d < params.rank(); ++d)
    (d < bd ? v.batch : d < axis ? v.outer : d == axis ? v.axis : v.inner) *= params[d];
  for (int d = bd; d < indices.rank(); ++d) v.n *= indices[d];
  return v;
}

}  // namespace ops
}  // namespace hub

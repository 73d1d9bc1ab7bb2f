#include "hub/ops/array.h"
#include "hub/ops/registry.h"

#include <algorithm>

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
    } else {
      known *= target[i];
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
    if (p < 0 || p >= r || seen[p]) c.fail("perm " + attr_to_string(perm) + " is not a permutation of 0.." + std::to_string(r - 1));
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

}  // namespace

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
    .grad([](const GradContext& c) { return std::vector<Output>{reshape_back(c), Output{}}; })
    .doc("x viewed with the (run-time) shape of `like`; no copy.");

HUB_REGISTER_OP(Squeeze)
    .inputs(1)
    .attr("axes", AttrType::kInts, std::vector<int64_t>{})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& in = c.shape(0);
      const auto& axes = c.attrs().get_ints("axes");
      std::vector<char> drop(in.rank(), 0);
      if (axes.empty()) {
        for (int i = 0; i < in.rank(); ++i) {
          if (in[i] < 0)
            c.fail("squeeze without axes needs known dims, got " + c.input(0).to_string() + "; pass axes");
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
        c.fail("axis " + std::to_string(axis) + " out of range [" + std::to_string(-r - 1) + ", " +
               std::to_string(r) + "] for " + c.input(0).to_string());
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
      return std::vector<Output>{
          ops::transpose(c.scope, c.grads[0], inverse_perm(c.node.attrs.get_ints("perm")))};
    })
    .doc("Permutes dims: y.shape[i] = x.shape[perm[i]].");

HUB_REGISTER_OP(Pad)
    .inputs(1)
    .attr("paddings", AttrType::kInts)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& in = c.shape(0);
      const auto& p = c.attrs().get_ints("paddings");
      if (static_cast<int>(p.size()) != 2 * in.rank())
        c.fail("paddings " + attr_to_string(p) + " need " + std::to_string(2 * in.rank()) + " entries for " +
               c.input(0).to_string());
      Shape out;
      for (int i = 0; i < in.rank(); ++i) {
        if (p[2 * i] < 0 || p[2 * i + 1] < 0) c.fail("negative paddings " + attr_to_string(p));
        out.push_back(in[i] < 0 ? kUnknownDim : in[i] + p[2 * i] + p[2 * i + 1]);
      }
      return {{c.dtype(0), out}};
    })
    .grad([](const GradContext& c) {
      const auto& p = c.node.attrs.get_ints("paddings");
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
    .doc("Pads with zeros: paddings = [before_0, after_0, before_1, after_1, ...].");

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
          throw_error(Code::kInvalidArgument, "gradient of Slice '" + c.node.name + "': dim " +
                                                  std::to_string(i) + " of input " + spec.to_string() +
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
          throw_error(Code::kInvalidArgument, "gradient of Concat '" + c.node.name + "': input " +
                                                  std::to_string(k) + " " + spec.to_string() +
                                                  " has an unknown size along axis " + std::to_string(axis));
        std::vector<int64_t> begin(rank, 0), size(rank, -1);
        begin[axis] = offset;
        size[axis] = d;  // -1 (rest) for an unknown last part
        out.push_back(ops::slice(c.scope, c.grads[0], begin, size, "Slice" + std::to_string(k)));
        offset += d;
      }
      return out;
    })
    .doc("Joins inputs along axis; other dims must agree.");

namespace ops {

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
  return s.op("Pad", {x}, Attrs().set("paddings", paddings), name);
}
Output slice(const Scope& s, Output x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size,
             const std::string& name) {
  return s.op("Slice", {x}, Attrs().set("begin", begin).set("size", size), name);
}
Output concat(const Scope& s, const std::vector<Output>& xs, int64_t axis, const std::string& name) {
  if (xs.empty()) throw_error(Code::kInvalidArgument, "concat '" + s.name(name) + "': no inputs");
  return s.op("Concat", xs, Attrs().set("axis", axis), name);
}

}  // namespace ops
}  // namespace hub

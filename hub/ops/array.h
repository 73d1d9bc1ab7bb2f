// Shape manipulation: Reshape, ReshapeLike, Squeeze, ExpandDims, Transpose,
// Pad, Slice, Concat, Split, Gather, StridedSlice, Tile (TensorFlow semantics). All
// work on every dtype; only float32 inputs receive gradients.
//
//   Reshape(x; shape)          y = x viewed as `shape` (one -1 is inferred);
//                              no copy.                  dx = ReshapeLike(g, x)
//   ReshapeLike(x, like)       y = x viewed with like's run-time shape; no copy.
//                                                        dx = ReshapeLike(g, x)
//   Squeeze(x; axes)           drops the listed size-1 dims (all size-1 dims
//                              when axes is empty); no copy.  dx = ReshapeLike(g, x)
//   ExpandDims(x; axis)        inserts a size-1 dim at axis (in [-r-1, r]);
//                              no copy.                  dx = ReshapeLike(g, x)
//   Transpose(x; perm)         y.shape[i] = x.shape[perm[i]],
//                              y[i_0..i_n] = x[j] with j[perm[k]] = i_k.
//                                                        dx = Transpose(g, inverse(perm))
//   Pad(x; paddings, mode = "CONSTANT", constant_value = 0)
//                              paddings = [before_0, after_0, before_1, ...] (>= 0),
//                              y.shape[i] = before_i + x.shape[i] + after_i, x in
//                              the middle; the border, per dim, for an index i of
//                              x's dim n outside [0, n):
//                                CONSTANT   constant_value (cast to x's dtype)
//                                REFLECT    x[-i], x[2(n-1) - i]    (TF MirrorPad
//                                           REFLECT, ONNX reflect: the edge is not
//                                           repeated; paddings <= n - 1)
//                                SYMMETRIC  x[-i-1], x[2n-1 - i]    (TF MirrorPad
//                                           SYMMETRIC: the edge repeated; paddings <= n)
//                                EDGE       x[0], x[n-1]            (ONNX edge; n >= 1
//                                           where padded)
//                              applied dim after dim (corners mirror both ways).
//                              CONSTANT: dx = Slice(g, before, x.shape)
//                              others:   dx = PadGrad(g): each border element's
//                              gradient added back onto the element it copies
//   PadGrad(g; paddings, mode) mode REFLECT, SYMMETRIC or EDGE: the inverse fold
//                              of Pad, shape g.shape minus the paddings.
//   Slice(x; begin, size)      y = x[begin_i : begin_i + size_i] per dim, size_i
//                              = -1 meaning "to the end". dx = Pad(g, begin, rest)
//   Concat(x_0..x_k; axis)     joins along axis (negative counts from the end);
//                              other dims must agree.     dx_i = Slice(g) of x_i's part
//
//   Split(x; axis = 0, num_split = 0, sizes = [])  -> y_0 .. y_{k-1}
//                              x cut along axis (negative counts from the end)
//                              into num_split equal parts (the dim must divide;
//                              TF Split, ONNX Split without `split`) or into
//                              parts of the listed sizes (TF SplitV, ONNX
//                              `split`; one size may be -1: the rest; sizes
//                              must add up to the dim). Exactly one of
//                              num_split > 0 and sizes non-empty; k outputs.
//                                                        dx = Concat(g_0 .. g_{k-1}; axis),
//                                                        a missing g_i as zeros
//   Gather(params, indices; axis = 0, batch_dims = 0)   (TF GatherV2)
//                              indices int32 or int64 of any rank; axis in
//                              [-rank(params), rank(params)), batch_dims in
//                              [-rank(indices), rank(indices)] (negative counts
//                              from indices' rank) and <= axis; the first
//                              batch_dims dims of params and indices agree.
//                              y.shape = params.shape[:axis] +
//                              indices.shape[batch_dims:] + params.shape[axis+1:]
//                              y[b.., p.., n.., i..] = params[b.., p.., indices[b.., n..], i..]
//                              A negative index counts from the end of the axis
//                              (ONNX; TF's CPU kernel rejects it, so valid TF
//                              graphs mean the same). An index outside
//                              [-params.shape[axis], params.shape[axis]) fails at
//                              run time with InvalidArgument naming the node,
//                              the index and its position.
//                                                        dparams = GatherGrad(g, indices, params)
//                                                        (float32 params; indices get none)
//   GatherGrad(g, indices, params; axis, batch_dims): zeros of params' shape
//                              with each slice of g added at its index
//                              (repeated indices accumulate; negative ones as
//                              in Gather).
//   GatherElements(x, indices; axis = 0)   (ONNX GatherElements, torch.gather)
//                              indices int32 or int64 of x's rank, each dim but
//                              axis at most x's; y.shape = indices.shape,
//                              y[i..] = x[i.. with the axis coordinate replaced
//                              by indices[i..]]. Negative indices and range
//                              errors as in Gather.
//                                                        dx = GatherElementsGrad(g, indices, x)
//   GatherElementsGrad(g, indices, x; axis): zeros of x's shape with each
//                              element of g added where GatherElements read it.
//   StridedSlice(x; begin, end, strides, begin_mask = 0, end_mask = 0,
//                ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0)
//                              TF's StridedSlice with constant begin/end/strides
//                              (equal lengths; bit i of a mask refers to entry i):
//                              per dim, Python slicing x[begin:end:stride]
//                              (negative begin/end count from the end, then
//                              clamp to [0, dim] for stride > 0 and [-1, dim-1]
//                              for stride < 0; a begin_mask/end_mask bit takes
//                              the full range in the stride's direction); an
//                              ellipsis bit stands for as many full dims as
//                              needed (an implicit one at the end when none);
//                              new_axis inserts a size-1 dim; shrink_axis takes
//                              the single index begin (in range, stride > 0)
//                              and drops the dim. stride 0 is an error.
//                                                        dx = StridedSliceGrad(x, g)
//   StridedSliceGrad(x, dy; same attributes): zeros of x's shape with dy
//                              placed where StridedSlice(x) read from.
//   Tile(x; multiples)         y.shape[i] = x.shape[i] * multiples[i] (multiples >= 0,
//                              one per dim), y[j] = x[j mod x.shape] (TF Tile, ONNX Tile).
//                                                        dx = TileGrad(g, x): the
//                                                        sum of g over the copies
//   ReverseSequence(x, lengths; batch_axis = 1, time_axis = 0)
//                              per batch element b (along batch_axis), the
//                              first lengths[b] entries along time_axis in
//                              reverse order, the rest as they are (ONNX and
//                              TF ReverseSequence); lengths int32 or int64, one
//                              per batch element, each in [0, time steps]
//                              (InvalidArgument at run time otherwise).
//                                                        dx = ReverseSequence(g, lengths)
//
// ONNX Slice(starts, ends, axes, steps) on static dims maps to StridedSlice
// with begin/end/strides set on the listed axes, begin_mask and end_mask bits
// on the others (stride 1). ONNX clamps start to [0, dim - 1] for a negative
// step where StridedSlice's rule above gives [-1, dim - 1]; the two differ only
// for start < -dim with a negative step (ONNX: element 0; TF: nothing), so the
// importer clamps starts itself; ends equal to INT_MAX / INT_MIN (and beyond)
// clamp identically; an end clamped to -1 with a negative step ("down to and
// including 0") must be an end_mask bit, as -1 would count from the end.
//
// Gradient limits (graph-time shapes): Pad's gradient needs x's dim known where
// something is padded after it; Slice's needs x's dim known unless the slice
// takes the whole dim; Concat's needs the inputs' sizes along axis known (except
// the last input's). Building such a gradient otherwise throws InvalidArgument.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hub/ops/scope.h"

namespace hub {
class InferContext;
}

namespace hub::ops {

Output reshape(const Scope& s, Output x, const std::vector<int64_t>& shape, const std::string& name = "Reshape");
Output reshape_like(const Scope& s, Output x, Output like, const std::string& name = "ReshapeLike");
Output squeeze(const Scope& s, Output x, const std::vector<int64_t>& axes = {}, const std::string& name = "Squeeze");
Output expand_dims(const Scope& s, Output x, int64_t axis, const std::string& name = "ExpandDims");
Output transpose(const Scope& s, Output x, const std::vector<int64_t>& perm, const std::string& name = "Transpose");
// Zeros around x.
Output pad(const Scope& s, Output x, const std::vector<int64_t>& paddings, const std::string& name = "Pad");
enum class PadMode { kConstant, kReflect, kSymmetric, kEdge };
Output pad(const Scope& s, Output x, const std::vector<int64_t>& paddings, PadMode mode, double constant_value = 0,
           const std::string& name = "Pad");
Output slice(const Scope& s, Output x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size,
             const std::string& name = "Slice");
Output concat(const Scope& s, const std::vector<Output>& xs, int64_t axis, const std::string& name = "Concat");
Output tile(const Scope& s, Output x, const std::vector<int64_t>& multiples, const std::string& name = "Tile");
// num_split parts when sizes is empty, else parts of the given sizes.
std::vector<Output> split(const Scope& s, Output x, int64_t axis, int64_t num_split,
                          const std::vector<int64_t>& sizes = {}, const std::string& name = "Split");
Output gather(const Scope& s, Output params, Output indices, int64_t axis = 0, int64_t batch_dims = 0,
              const std::string& name = "Gather");
struct StridedSliceMasks {
  int64_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink_axis = 0;
};
Output strided_slice(const Scope& s, Output x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                     const std::vector<int64_t>& strides, const StridedSliceMasks& masks = {},
                     const std::string& name = "StridedSlice");

// StridedSlice's attributes resolved against an input shape: for each input
// dim the first index read, the step, and the count (kUnknownDim when the
// dim is unknown); `out` is the output shape (new axes inserted, shrunk dims
// dropped). Throws InvalidArgument, without the node's name, for a spec the
// shape does not allow. Shared by the shape function and the kernels.
struct StridedSliceSpec {
  std::vector<int64_t> begin, stride, size;
  Shape out;
};
StridedSliceSpec strided_slice_spec(const Shape& in, const Attrs& attrs);

// ONNX Slice's start and end on a dim of size `dim` for step `step` (not 0):
// counted from the end when negative, then clamped (to [0, dim] stepping
// forward; to [0, dim - 1] and [-1, dim - 1] stepping back; 0 and 0 on an
// empty dim). Shared by the ONNX importer and DynamicStridedSlice.
std::pair<int64_t, int64_t> onnx_slice_bounds(int64_t dim, int64_t start, int64_t end, int64_t step);

// DynamicStridedSlice(x, starts, ends; axes, steps): ONNX Slice with starts
// and ends read at run time (int32 or int64, one per axis; a loop body's
// x[i : i + 1]); axes distinct and in range, steps constant and not 0.
Output dynamic_strided_slice(const Scope& s, Output x, Output starts, Output ends, const std::vector<int64_t>& axes,
                             const std::vector<int64_t>& steps, const std::string& name = "DynamicStridedSlice");

// The reference inputs and `from` triples (position, input, dim) of a
// DynamicReshape or DynamicSlice (hub/ops/array.cc): target entry `position`
// is dim `dim` of a tensor, read at run time. Each distinct tensor becomes
// one input after x.
struct DimReferences {
  std::vector<Output> tensors;
  std::vector<int64_t> from;
  void add(int64_t position, Output tensor, int64_t dim) { from.insert(from.end(), {position, input(tensor), dim}); }
  // The op input carrying `tensor` (1 on), added on first use.
  int64_t input(Output tensor) {
    size_t index = 0;
    while (index < tensors.size() && !(tensors[index] == tensor)) ++index;
    if (index == tensors.size()) tensors.push_back(tensor);
    return static_cast<int64_t>(index) + 1;
  }
  // The op's inputs: x, then the tensors.
  std::vector<Output> inputs(Output x) const {
    std::vector<Output> all{x};
    all.insert(all.end(), tensors.begin(), tensors.end());
    return all;
  }
};

// The `from` attribute of DynamicReshape, DynamicSlice, DynamicRange and
// Resize: triples (position, input, dim), entry `position` of the op's
// target taking dim `dim` of input `input` (>= first_reference: a reference
// tensor read for its shape only). Returns, per target entry, that dim
// (nullopt where the reference's dim is not known yet), or nullopt for an
// entry `from` does not name (`named` tells them apart). Fails through `c`
// on a malformed list.
std::vector<std::optional<int64_t>> reference_dims(const InferContext& c, size_t rank, std::vector<char>* named,
                                                   int first_reference = 1);

// DynamicSlice's begin per dim for its inputs' shapes: the `begin`
// attribute plus, at positions `begin_from` names, the sum of coefficient x
// dim over its (position, input, dim, coefficient) terms, which counts from
// the end of x's dim when negative and is clamped to [0, dim] (ONNX's
// Slice); nullopt where a dim it needs is unknown. Shared by the shape
// function and the kernel; the attributes passed the shape function.
std::vector<std::optional<int64_t>> dynamic_slice_begin(const Attrs& attrs, const std::vector<Shape>& shapes);

// DynamicRange's run-time terms (input, dim, coefficient) of its start [0]
// and its limit [1] (the dim `from` names, with coefficient 1, and the
// `terms` entries): what the exporters rebuild as graph arithmetic.
std::array<std::vector<std::array<int64_t, 3>>, 2> dynamic_range_terms(const Attrs& attrs);

// DynamicRange's (start, limit) for its inputs' shapes: its start and limit
// attributes plus coefficient x dim over dynamic_range_terms; nullopt where
// a dim it needs is unknown. Shared by the shape function and the kernel; the
// attributes passed the shape function.
std::optional<std::pair<int64_t, int64_t>> dynamic_range_bounds(const Attrs& attrs, const std::vector<Shape>& shapes);

// Gather's geometry, shared by its kernels: params viewed as [B, P, S, I]
// (batch dims, dims before the axis, the axis, dims after it), indices as
// [B, N], the result as [B, P, N, I]. Its fields are plain data, so device
// kernels take it by value.
struct GatherView {
  int64_t batch = 1, outer = 1, axis = 1, inner = 1, n = 1;
};
GatherView gather_view(const Shape& params, const Shape& indices, const Attrs& attrs);

}  // namespace hub::ops

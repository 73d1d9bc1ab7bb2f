// CUDA kernels for the reductions of hub/ops/reduction.h (Sum, Mean, Max,
// Min, Prod, ProdGrad, ArgMax, TopK, TopKGrad, L2Loss) and for ReduceToLike
// (hub/ops/elementwise.h: a broadcast operand's gradient summed back to the
// operand's shape), whose kernel lives here because it is a Sum over the
// broadcast dims.
//
// Plan. x's dims of size 1 are dropped and adjacent dims that are all reduced
// or all kept are merged, leaving alternating runs. Each reduced run is one
// pass over its input viewed as [outer, reduced, inner], the last run first
// (as the reference kernel), later passes reading the earlier ones' partial
// results. With nothing to reduce there is one pass [1, 1, n], so per-element
// work (Mean's scale, L2Loss's square) still applies.
//
// A pass is one kernel for rows (inner == 1) and columns alike: a block of
// kThreads threads is `width` consecutive outputs by `height` threads that
// share each output's reduced range and are then combined as a tree. Height
// is as large as the reduced dim needs (up to a whole block per output for
// long rows), but leaves width >= min(inner, 32), so that for inner > 1 the
// threads of a warp read consecutive addresses. When the outputs are too few
// to keep the GPU busy, the reduced dim is also split into segments whose
// partial results a second launch combines. There are no atomics: results
// depend on the shape only, never on timing.
#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "hub/core/error.h"
#include "hub/ops/cuda/common.h"
#include "hub/ops/cuda/reduction.h"
#include "hub/ops/math.h"

namespace hub::cuda {
namespace {

// Tiles beyond this many blocks are covered by the blocks' grid-stride loop.
constexpr int64_t kMaxGridX = int64_t{1} << 20;
// Blocks that keep any current GPU busy (132 SMs x 8 resident blocks).
constexpr int64_t kFillBlocks = 1024;
// Reduced elements per thread below which splitting a row further does not pay.
constexpr int64_t kMinPerThread = 16;

// The identity of max: -inf for floats, so that a row of -inf stays -inf.
template <class T>
T max_identity() {
  using L = std::numeric_limits<T>;
  return L::has_infinity ? -L::infinity() : L::lowest();
}
template <class T>
T min_identity() {
  using L = std::numeric_limits<T>;
  return L::has_infinity ? L::infinity() : L::max();
}

// ---- reducers -----------------------------------------------------------------

struct Multiply {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a * b;
  }
};
// Load and finish of passes that neither start nor end a reduction: the value as it is.
struct Keep {
  template <class A>
  __device__ A operator()(A a, int64_t) const {
    return a;
  }
  template <class A>
  __device__ A operator()(A a) const {
    return a;
  }
};
struct Square {
  __device__ float operator()(float v, int64_t) const { return v * v; }
};
struct Scale {
  float factor;
  __device__ float operator()(float a) const { return a * factor; }
};
template <class T>
struct Divide {  // integer Mean: truncates, as TF
  T divisor;
  __device__ T operator()(T a) const { return a / divisor; }
};

// ArgMax and TopK order values larger first, then lower index first.
template <class T>
struct Candidate {
  T value;
  int64_t index;
};
template <class T>
__device__ bool precedes(const Candidate<T>& a, const Candidate<T>& b) {
  return a.value > b.value || (a.value == b.value && a.index < b.index);
}
template <class T>
struct First {
  __device__ Candidate<T> operator()(Candidate<T> a, Candidate<T> b) const { return precedes(b, a) ? b : a; }
};
// Precedes no element (of any value but NaN): ArgMax's identity, TopK's "none yet".
template <class T>
Candidate<T> no_candidate() {
  return {max_identity<T>(), std::numeric_limits<int64_t>::max()};
}
// The reference scans with `x[r] > best`, starting from x[0]: a NaN first
// element wins, and a later NaN never does. A NaN is loaded as +inf at index
// 0 and as -inf elsewhere, which gives the same answer.
template <class T>
struct AsCandidate {
  __device__ Candidate<T> operator()(T v, int64_t r) const {
    if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
      if (v != v) return {r == 0 ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity(), r};
    }
    return {v, r};
  }
};
struct IndexOf {
  template <class T>
  __device__ int64_t operator()(Candidate<T> c) const {
    return c.index;
  }
};

// What a reduction computes for each output: finish(combine over the reduced
// elements x_r of load(x_r, r)), combined from `identity`; `empty` is the
// result over no elements (the reference's, which for Max/Min is the dtype's
// lowest/highest value rather than the identity's infinity).
template <class Acc, class Out, class Combine, class Load, class Finish>
struct Reducer {
  Acc identity;
  Combine combine;
  Load load;
  Finish finish;
  Out empty;
};
template <class Acc, class Out, class Combine, class Load, class Finish>
Reducer<Acc, Out, Combine, Load, Finish> reducer(Acc identity, Combine combine, Load load, Finish finish, Out empty) {
  return {identity, combine, load, finish, empty};
}

// ---- the reduction kernel -------------------------------------------------------

// out[s * outputs + o] = finish(combine over r in segment s of load(in[a][r][b], r))
// for in viewed as [outer, reduced, inner], o = a * inner + b, and segment s
// the reduced indices [s * segment, (s + 1) * segment) (s = blockIdx.y).
// Block: blockDim.x outputs by blockDim.y threads per output (a power of two),
// blockDim.x * blockDim.y == kThreads.
template <class In, class Out, class Acc, class Combine, class Load, class Finish>
__global__ void reduce_kernel(const In* __restrict__ in, Out* __restrict__ out, int64_t outer, int64_t reduced,
                              int64_t inner, int64_t segment, Acc identity, Combine combine, Load load, Finish finish) {
  __shared__ Acc part[kThreads];
  const int64_t outputs = outer * inner;
  const int64_t r_begin = blockIdx.y * segment;
  const int64_t r_end = reduced < r_begin + segment ? reduced : r_begin + segment;
  const int tid = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  for (int64_t tile = static_cast<int64_t>(blockIdx.x) * blockDim.x; tile < outputs;
       tile += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = tile + threadIdx.x;
    Acc acc = identity;
    if (o < outputs) {
      const int64_t a = o / inner, b = o - a * inner;
      const In* p = in + a * reduced * inner + b;
      for (int64_t r = r_begin + threadIdx.y; r < r_end; r += blockDim.y) acc = combine(acc, load(p[r * inner], r));
    }
    part[tid] = acc;
    combine_down(part, tid, static_cast<int>(blockDim.x), static_cast<int>(blockDim.y), combine);
    if (threadIdx.y == 0 && o < outputs) out[blockIdx.y * outputs + o] = finish(part[threadIdx.x]);
    __syncthreads();  // part is rewritten for the next tile
  }
}

template <class T>
__global__ void fill_kernel(T* out, int64_t n, T value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    out[i] = value;
}

// x viewed as [outer, reduced, inner], reduced over the middle dim.
struct Pass {
  int64_t outer, reduced, inner;
  int64_t outputs() const { return outer * inner; }
};

// A dim run of x after dropping size-1 dims and merging alike neighbours.
struct Run {
  int64_t size;
  bool reduced;
};

std::vector<Run> runs_of(const Shape& x, const std::vector<bool>& reduced) {
  std::vector<Run> runs;
  for (int d = 0; d < x.rank(); ++d) {
    if (x[d] == 1) continue;
    if (!runs.empty() && runs.back().reduced == reduced[d])
      runs.back().size *= x[d];
    else
      runs.push_back({x[d], reduced[d]});
  }
  return runs;
}

std::vector<bool> reduced_dims(int rank, const std::vector<int>& axes) {
  std::vector<bool> reduced(rank, false);
  for (int a : axes) reduced[a] = true;
  return reduced;
}

// The passes that reduce the reduced runs, last first; at least one.
std::vector<Pass> plan(std::vector<Run> runs) {
  std::vector<Pass> passes;
  for (;;) {
    int last = static_cast<int>(runs.size()) - 1;
    while (last >= 0 && !runs[last].reduced) --last;
    if (last < 0) break;
    Pass p{1, runs[last].size, 1};
    for (int i = 0; i < last; ++i) p.outer *= runs[i].size;
    for (size_t i = last + 1; i < runs.size(); ++i) p.inner *= runs[i].size;
    passes.push_back(p);
    // The run is gone; its neighbours (both kept) become one run.
    if (last > 0 && last + 1 < static_cast<int>(runs.size())) {
      runs[last - 1].size *= runs[last + 1].size;
      runs.erase(runs.begin() + last, runs.begin() + last + 2);
    } else {
      runs.erase(runs.begin() + last);
    }
  }
  if (passes.empty()) {
    int64_t n = 1;
    for (const Run& r : runs) n *= r.size;
    passes.push_back({1, 1, n});
  }
  return passes;
}

// Device scratch for n values of Acc, alive while `holder` is.
template <class Acc>
Acc* scratch(KernelContext& c, int64_t n, Tensor* holder) {
  static_assert(alignof(Acc) <= alignof(int64_t));
  *holder = c.temp(DType::kInt64, Shape{(n * static_cast<int64_t>(sizeof(Acc)) + 7) / 8});
  return reinterpret_cast<Acc*>(holder->device_data<int64_t>());
}

// Threads of a block over outputs (width) and over the reduced dim (height).
struct BlockShape {
  int width, height;
};
BlockShape block_shape(const Pass& p) {
  const int height = pow2_at_least(p.reduced, kThreads / pow2_at_least(p.inner, 32));
  return {kThreads / height, height};
}

template <class In, class Out, class Acc, class Combine, class Load, class Finish>
void launch(const In* in, Out* out, const Pass& p, BlockShape shape, int64_t segment, int64_t segments, Acc identity,
            Combine combine, Load load, Finish finish) {
  const int64_t tiles = (p.outputs() + shape.width - 1) / shape.width;
  const dim3 grid(static_cast<unsigned>(std::min(tiles, kMaxGridX)), static_cast<unsigned>(segments));
  reduce_kernel<<<grid, dim3(shape.width, shape.height), 0, stream()>>>(in, out, p.outer, p.reduced, p.inner, segment,
                                                                        identity, combine, load, finish);
  HUB_CUDA_CHECK(cudaGetLastError());
}

// One pass, split into segments (and a second launch that combines them)
// when its outputs alone would leave most of the GPU idle.
template <class In, class Out, class Red, class Load, class Finish>
void reduce_pass(KernelContext& c, const In* in, Out* out, const Pass& p, const Red& red, Load load, Finish finish) {
  using Acc = decltype(red.identity);
  const BlockShape shape = block_shape(p);
  const int64_t tiles = (p.outputs() + shape.width - 1) / shape.width;
  int64_t segments = 1;
  if (tiles < kFillBlocks)
    segments = std::clamp<int64_t>(
        std::min((kFillBlocks + tiles - 1) / tiles, p.reduced / (shape.height * kMinPerThread)), 1, kFillBlocks);
  if (segments == 1) {
    launch(in, out, p, shape, p.reduced, 1, red.identity, red.combine, load, finish);
    return;
  }
  const int64_t segment = (p.reduced + segments - 1) / segments;
  segments = (p.reduced + segment - 1) / segment;
  Tensor holder;
  Acc* partial = scratch<Acc>(c, segments * p.outputs(), &holder);
  launch(in, partial, p, shape, segment, segments, red.identity, red.combine, load, Keep{});
  const Pass rest{1, segments, p.outputs()};
  launch(partial, out, rest, block_shape(rest), segments, 1, red.identity, red.combine, Keep{}, finish);
}

// out (out_n values) = x (x_n values) reduced by `red` through `passes`.
template <class In, class Out, class Red>
void reduce(KernelContext& c, const In* x, int64_t x_n, Out* out, int64_t out_n, const std::vector<Pass>& passes,
            const Red& red) {
  using Acc = decltype(red.identity);
  if (out_n == 0) return;
  if (x_n == 0) {
    fill_kernel<<<blocks_for(out_n), kThreads, 0, stream()>>>(out, out_n, red.empty);
    HUB_CUDA_CHECK(cudaGetLastError());
    return;
  }
  if (passes.size() == 1) {
    reduce_pass(c, x, out, passes[0], red, red.load, red.finish);
    return;
  }
  Tensor cur_holder, next_holder;
  Acc* cur = scratch<Acc>(c, passes[0].outputs(), &cur_holder);
  reduce_pass(c, x, cur, passes[0], red, red.load, Keep{});
  for (size_t i = 1; i + 1 < passes.size(); ++i) {
    Acc* next = scratch<Acc>(c, passes[i].outputs(), &next_holder);
    reduce_pass(c, cur, next, passes[i], red, Keep{}, Keep{});
    std::swap(cur_holder, next_holder);
    cur = next;
  }
  reduce_pass(c, cur, out, passes.back(), red, Keep{}, red.finish);
}

// ---- Sum, Mean, Max, Min, Prod, L2Loss, ReduceToLike ----------------------------

enum class Kind { kSum, kMean, kMax, kMin, kProd };

// x reduced by `kind` over the dims flagged in `reduced`, into out.
template <Kind kKind>
void reduce_dims(KernelContext& c, const Tensor& x, const std::vector<bool>& reduced, Tensor& out) {
  const std::vector<Pass> passes = plan(runs_of(x.shape(), reduced));
  dispatch_arith(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using L = std::numeric_limits<T>;
    auto run = [&](const auto& red) {
      reduce(c, x.device_data<T>(), x.num_elements(), out.device_data<T>(), out.num_elements(), passes, red);
    };
    if constexpr (kKind == Kind::kSum) {
      run(reducer(T(0), Add{}, Keep{}, Keep{}, T(0)));
    } else if constexpr (kKind == Kind::kMean) {
      int64_t n = 1;
      for (int d = 0; d < x.rank(); ++d)
        if (reduced[d]) n *= x.dim(d);
      if constexpr (std::is_floating_point_v<T>) {
        // As the reference: the sum times 1/n; NaN over no elements.
        run(reducer(T(0), Add{}, Keep{}, Scale{T(1) / static_cast<T>(n)}, L::quiet_NaN()));
      } else {
        if (n == 0) throw_error(Code::kInvalidArgument, "integer Mean over an empty axis of " + x.spec_string());
        run(reducer(T(0), Add{}, Keep{}, Divide<T>{static_cast<T>(n)}, T(0)));
      }
    } else if constexpr (kKind == Kind::kMax) {
      run(reducer(max_identity<T>(), Maximum{}, Keep{}, Keep{}, L::lowest()));
    } else if constexpr (kKind == Kind::kMin) {
      run(reducer(min_identity<T>(), Minimum{}, Keep{}, Keep{}, L::max()));
    } else {
      run(reducer(T(1), Multiply{}, Keep{}, Keep{}, T(1)));
    }
  });
}

template <Kind kKind>
void reduce_op(KernelContext& c) {
  const Tensor& x = c.input(0);
  const std::vector<int> axes = ops::normalize_axes(c.attrs().get_ints("axes"), x.rank(), "axes");
  reduce_dims<kKind>(c, x, reduced_dims(x.rank(), axes), c.output(0));
}

void l2_loss(KernelContext& c) {
  const Tensor& x = c.input(0);
  const std::vector<Pass> passes = plan(runs_of(x.shape(), std::vector<bool>(x.rank(), true)));
  reduce(c, x.device_data<float>(), x.num_elements(), c.output(0).device_data<float>(), 1, passes,
         reducer(0.0f, Add{}, Square{}, Scale{0.5f}, 0.0f));
}

// The dims of x along which `like` (right-aligned against x) was broadcast.
std::vector<bool> broadcast_dims(const Shape& x, const Shape& like) {
  const int lead = x.rank() - like.rank();
  std::vector<bool> reduced(x.rank());
  for (int d = 0; d < x.rank(); ++d) reduced[d] = d < lead || like[d - lead] == 1;
  return reduced;
}

// The reference rejects what does not broadcast; it runs those nodes.
bool supports_reduce_to_like(const Node&, const std::vector<TensorSpec>& inputs) {
  const Shape &x = inputs[0].shape, &like = inputs[1].shape;
  if (!is_arith(inputs[0].dtype) || like.rank() > x.rank()) return false;
  const int lead = x.rank() - like.rank();
  for (int d = lead; d < x.rank(); ++d)
    if (like[d - lead] != 1 && like[d - lead] != x[d]) return false;
  return true;
}

void reduce_to_like(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Shape& like = c.input(1).shape();
  if (x.shape() == like) {
    c.set_output(0, x);
    return;
  }
  reduce_dims<Kind::kSum>(c, x, broadcast_dims(x.shape(), like), c.output(0));
}

// ---- ArgMax ---------------------------------------------------------------------

void arg_max(KernelContext& c) {
  const Tensor& x = c.input(0);
  int axis = static_cast<int>(c.attrs().get_int("axis"));
  if (axis < 0) axis += x.rank();
  const std::vector<Pass> passes = plan(runs_of(x.shape(), reduced_dims(x.rank(), {axis})));
  Tensor& out = c.output(0);
  dispatch_arith(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // Shape inference rejects an empty axis, so x is empty only with out.
    reduce(c, x.device_data<T>(), x.num_elements(), out.device_data<int64_t>(), out.num_elements(), passes,
           reducer(no_candidate<T>(), First<T>{}, AsCandidate<T>{}, IndexOf{}, int64_t{0}));
  });
}

// The last index on ties (select_last) runs on the host.
bool first_on_ties(const Node& n, const std::vector<TensorSpec>&) { return !n.attrs.get_bool("select_last"); }

// ---- ProdGrad -------------------------------------------------------------------

// At most this many kept and this many reduced runs (rank 8 has at most 4 of each).
constexpr int kMaxRuns = 4;
// Each group is walked by one thread. With fewer groups than kMinGroups,
// each longer than kMaxSerial, most of the GPU would idle while a few threads
// walk long groups: the CPU runs those.
constexpr int64_t kMinGroups = 1024;
constexpr int64_t kMaxSerial = 1024;

// Dim runs of x (sizes and element strides, outermost first) of one kind.
struct Runs {
  int count = 0;
  int64_t size[kMaxRuns];
  int64_t stride[kMaxRuns];
};

struct ProdGradPlan {
  Runs kept, reduced;
  int64_t groups = 1, members = 1;
};

// False when x has more runs of a kind than kMaxRuns.
bool plan_prod_grad(const Shape& x, const Attrs& attrs, ProdGradPlan* plan) {
  const std::vector<Run> runs =
      runs_of(x, reduced_dims(x.rank(), ops::normalize_axes(attrs.get_ints("axes"), x.rank(), "axes")));
  int64_t stride = 1;
  for (int i = static_cast<int>(runs.size()) - 1; i >= 0; --i) {
    Runs& kind = runs[i].reduced ? plan->reduced : plan->kept;
    if (kind.count == kMaxRuns) return false;
    (runs[i].reduced ? plan->members : plan->groups) *= runs[i].size;
    // Filled innermost first; reversed below.
    kind.size[kind.count] = runs[i].size;
    kind.stride[kind.count] = stride;
    ++kind.count;
    stride *= runs[i].size;
  }
  for (Runs* r : {&plan->kept, &plan->reduced}) {
    std::reverse(r->size, r->size + r->count);
    std::reverse(r->stride, r->stride + r->count);
  }
  return true;
}

bool supports_prod_grad(const Node& node, const std::vector<TensorSpec>& inputs) {
  ProdGradPlan p;
  return plan_prod_grad(inputs[1].shape, node.attrs, &p) && (p.groups >= kMinGroups || p.members <= kMaxSerial);
}

// Moves an odometer over `runs` (digits, and the element offset it names) one
// member forward or back, in the order of increasing offset.
__device__ void step_forward(const Runs& runs, int64_t* digit, int64_t* offset) {
  for (int i = runs.count - 1; i >= 0; --i) {
    *offset += runs.stride[i];
    if (++digit[i] < runs.size[i]) return;
    *offset -= runs.size[i] * runs.stride[i];
    digit[i] = 0;
  }
}
__device__ void step_back(const Runs& runs, int64_t* digit, int64_t* offset) {
  for (int i = runs.count - 1; i >= 0; --i) {
    *offset -= runs.stride[i];
    if (--digit[i] >= 0) return;
    *offset += runs.size[i] * runs.stride[i];
    digit[i] = runs.size[i] - 1;
  }
}

// dx_i = g * (product of the members before i) * (product of those after i),
// as the reference: the same products in the same order, so the result is
// the reference's bit for bit, and exact with zeros. The first walk leaves
// the products before each member in dx.
__global__ void prod_grad_kernel(const float* g, const float* x, float* dx, int64_t groups, int64_t members, Runs kept,
                                 Runs reduced) {
  for (int64_t group = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; group < groups;
       group += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t offset = 0, rem = group;
    for (int i = kept.count - 1; i >= 0; --i) {
      offset += (rem % kept.size[i]) * kept.stride[i];
      rem /= kept.size[i];
    }
    int64_t digit[kMaxRuns] = {};
    float acc = 1.0f;
    for (int64_t m = 0; m < members; ++m) {
      dx[offset] = acc;
      acc *= x[offset];
      if (m + 1 < members) step_forward(reduced, digit, &offset);
    }
    const float gv = g[group];
    acc = 1.0f;
    for (int64_t m = members - 1; m >= 0; --m) {
      dx[offset] = gv * dx[offset] * acc;
      acc *= x[offset];
      if (m > 0) step_back(reduced, digit, &offset);
    }
  }
}

void prod_grad(KernelContext& c) {
  const Tensor &g = c.input(0), &x = c.input(1);
  Tensor& dx = c.output(0);
  if (x.num_elements() == 0) return;
  ProdGradPlan p;
  HUB_CHECK(plan_prod_grad(x.shape(), c.attrs(), &p), "ProdGrad: too many dim runs in " + x.spec_string());
  prod_grad_kernel<<<blocks_for(p.groups), kThreads, 0, stream()>>>(
      g.device_data<float>(), x.device_data<float>(), dx.device_data<float>(), p.groups, p.members, p.kept, p.reduced);
  HUB_CUDA_CHECK(cudaGetLastError());
}

// ---- TopK, TopKGrad ---------------------------------------------------------------

// TopK makes k passes over each row, each selecting the entry that follows
// the previous one in the order (larger first, then lower index), so no
// state beyond the last pick is kept and ties resolve as in the reference.
// That costs k reads of the row: fine for the usual small k (the top 5
// classes), not for large k, which the CPU's partial sort handles better.
// TopKGrad gathers for each entry the gradients of the picks naming it.
constexpr int64_t kMaxTopK = 64;

// TopK's order: larger first, NaN above every number, ties (NaN with NaN
// too) to the lower index.
template <class T>
__device__ bool ranks_before(const Candidate<T>& a, const Candidate<T>& b) {
  if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
    const bool nan_a = a.value != a.value, nan_b = b.value != b.value;
    if (nan_a || nan_b) return nan_a && (!nan_b || a.index < b.index);
  }
  return precedes(a, b);
}
template <class T>
struct Higher {
  __device__ Candidate<T> operator()(Candidate<T> a, Candidate<T> b) const { return ranks_before(b, a) ? b : a; }
};

// One block per row (grid-stride), blockDim.x a power of two.
template <class T>
__global__ void top_k_kernel(const T* x, T* values, int32_t* indices, int64_t rows, int64_t n, int64_t k,
                             Candidate<T> none) {
  __shared__ Candidate<T> part[kThreads];
  const Higher<T> higher;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* p = x + row * n;
    Candidate<T> prev = none;
    for (int64_t j = 0; j < k; ++j) {
      Candidate<T> best = none;
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const Candidate<T> e{p[i], i};
        if (j == 0 || ranks_before(prev, e)) best = higher(best, e);
      }
      prev = block_reduce(best, part, higher);
      if (threadIdx.x == 0) {
        values[row * k + j] = prev.value;
        indices[row * k + j] = static_cast<int32_t>(prev.index);
      }
    }
  }
}

// out[row][i] = sum of g[row][j] over the j with indices[row][j] == i, in
// increasing j from 0 as the reference adds them; an index outside [0, n)
// (which the reference reports, but the device cannot without waiting)
// names no entry and is ignored.
template <class T>
__global__ void top_k_grad_kernel(const T* g, const int32_t* indices, T* out, int64_t elements, int64_t n, int64_t k) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < elements;
       e += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t row = e / n, i = e - row * n;
    T sum = T(0);
    for (int64_t j = 0; j < k; ++j)
      if (indices[row * k + j] == i) sum += g[row * k + j];
    out[e] = sum;
  }
}

bool supports_top_k(const Node& node, const std::vector<TensorSpec>&) { return node.attrs.get_int("k") <= kMaxTopK; }

bool supports_top_k_grad(const Node&, const std::vector<TensorSpec>& inputs) {
  const Shape& g = inputs[0].shape;
  return is_arith(inputs[0].dtype) && g.rank() >= 1 && g[g.rank() - 1] <= kMaxTopK;
}

void top_k(KernelContext& c) {
  const Tensor& x = c.input(0);
  const int64_t k = c.attrs().get_int("k"), n = x.dim(x.rank() - 1);
  Tensor &values = c.output(0), &indices = c.output(1);
  if (values.num_elements() == 0) return;
  const int64_t rows = x.num_elements() / n;
  const int threads = std::max(32, pow2_at_least(n, kThreads));
  dispatch_arith(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    top_k_kernel<<<static_cast<unsigned>(std::min(rows, kMaxGridX)), threads, 0, stream()>>>(
        x.device_data<T>(), values.device_data<T>(), indices.device_data<int32_t>(), rows, n, k, no_candidate<T>());
    HUB_CUDA_CHECK(cudaGetLastError());
  });
}

void top_k_grad(KernelContext& c) {
  const Tensor &g = c.input(0), &indices = c.input(1);
  Tensor& out = c.output(0);
  const int64_t elements = out.num_elements();
  if (elements == 0) return;
  const int64_t k = g.dim(g.rank() - 1), n = out.dim(out.rank() - 1);
  dispatch_arith(g.dtype(), [&](auto tag) {
    using T = decltype(tag);
    top_k_grad_kernel<<<blocks_for(elements), kThreads, 0, stream()>>>(
        g.device_data<T>(), indices.device_data<int32_t>(), out.device_data<T>(), elements, n, k);
    HUB_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

HUB_REGISTER_KERNEL(Sum, cuda, reduce_op<Kind::kSum>);
HUB_REGISTER_KERNEL(Mean, cuda, reduce_op<Kind::kMean>);
HUB_REGISTER_KERNEL(Max, cuda, reduce_op<Kind::kMax>);
HUB_REGISTER_KERNEL(Min, cuda, reduce_op<Kind::kMin>);
HUB_REGISTER_KERNEL(Prod, cuda, reduce_op<Kind::kProd>);
HUB_REGISTER_KERNEL(ProdGrad, cuda, prod_grad, supports_prod_grad);
HUB_REGISTER_KERNEL(ArgMax, cuda, arg_max, first_on_ties);
HUB_REGISTER_KERNEL(TopK, cuda, top_k, supports_top_k);
HUB_REGISTER_KERNEL(TopKGrad, cuda, top_k_grad, supports_top_k_grad);
HUB_REGISTER_KERNEL(L2Loss, cuda, l2_loss);
HUB_REGISTER_KERNEL(ReduceToLike, cuda, reduce_to_like, supports_reduce_to_like);

}  // namespace hub::cuda

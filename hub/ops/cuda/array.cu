// CUDA kernels of the shape ops (hub/ops/array.h): Reshape, ReshapeLike,
// Squeeze and ExpandDims (views of their input, as on the host), Transpose,
// Pad, PadGrad, Slice, Concat, Split, Gather, GatherGrad, StridedSlice,
// StridedSliceGrad, Tile and TileGrad. Every dtype; the gradient ops float32.
//
// The ops that only move elements dispatch on the element's size (1, 4 or 8
// bytes), not its type. Transpose, Slice, StridedSlice(Grad), Concat, Split
// and Tile are one mechanism, a box copy: a box of dims is walked in
// row-major order and each element goes from a source offset to a
// destination offset, each the dot product of the element's coordinates with
// a stride per dim (negative for StridedSlice's negative steps, 0 for Tile's
// copies). Before a launch, dims of extent 1 are dropped and neighbours
// adjacent in both source and destination merged, so a box contiguous on
// both sides is one cudaMemcpyAsync and most boxes have two or three dims.
// The walk follows a dense output's order, so writes are coalesced; the
// gradient that scatters (StridedSliceGrad) follows the dense gradient
// instead, so reads are. Pad is one pass in y's order, each element mapping
// its coordinates back into x (or taking the constant).
//
// A Transpose that moves the innermost dim reads rows of one dim and writes
// rows of another: through 32x32 tiles in shared memory (both sides
// coalesced) when both dims are long enough to fill a tile, else as a box.
//
// Sums never race: PadGrad and TileGrad gather (each output element adds up
// its sources, in a fixed order), so results do not depend on scheduling.
// GatherGrad's sources depend on index values, so it adds with atomicAdd
// (float sums in any order).
//
// Gather's indices stay on the device, where a bad one cannot become the
// reference kernel's InvalidArgument: an index outside [-dim, dim) yields
// zeros in Gather and adds nothing in GatherGrad (TensorFlow's GPU kernels
// do the same). Valid indices, negative ones included, give the reference's
// results.
//
// Offsets are int64. Coordinates are split with 32-bit divisions when the
// walk has fewer than 2^32 elements: divisions dominate these kernels'
// instructions, and a 64-bit one costs several 32-bit ones.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "hub/core/error.h"
#include "hub/ops/array.h"
#include "hub/ops/cuda/common.h"

namespace hub::cuda {
namespace {

// Dims a kernel walks after simplification; a node needing more stays on the
// CPU (supports() says no). Tile's view has two dims per input dim.
constexpr int kMaxDims = 12;

// A box as the device walks it: dims innermost first, with the source and
// destination element strides of each.
struct Walk {
  int rank = 0;
  int64_t dim[kMaxDims];
  int64_t src[kMaxDims];
  int64_t dst[kMaxDims];
};

// A box on the host, outermost dim first.
struct Box {
  std::vector<int64_t> dim, src, dst;

  void add(int64_t extent, int64_t src_stride, int64_t dst_stride) {
    dim.push_back(extent);
    src.push_back(src_stride);
    dst.push_back(dst_stride);
  }
  int rank() const { return static_cast<int>(dim.size()); }
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : dim) n *= d;
    return n;
  }
  // Drops extent-1 dims (their coordinate is always 0) and merges a dim into
  // the one outside it where the pair is contiguous on both sides; the same
  // elements in the same order.
  void simplify() {
    Box out;
    for (int i = 0; i < rank(); ++i) {
      if (dim[i] == 1) continue;
      if (out.rank() > 0 && out.src.back() == src[i] * dim[i] && out.dst.back() == dst[i] * dim[i]) {
        out.dim.back() *= dim[i];
        out.src.back() = src[i];
        out.dst.back() = dst[i];
      } else {
        out.add(dim[i], src[i], dst[i]);
      }
    }
    *this = std::move(out);
  }
  bool fits() const { return rank() <= kMaxDims; }
  Walk walk() const {
    HUB_CHECK(fits(), "a box of " + std::to_string(rank()) + " dims");  // supports() declined those
    Walk w;
    w.rank = rank();
    for (int k = 0; k < w.rank; ++k) {
      w.dim[k] = dim[rank() - 1 - k];
      w.src[k] = src[rank() - 1 - k];
      w.dst[k] = dst[rank() - 1 - k];
    }
    return w;
  }
};

// Row-major element strides of a shape.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.rank(), 1);
  for (int i = s.rank() - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// Calls f(T{}) with T an unsigned type of `bytes` bytes.
template <class F>
void with_element(size_t bytes, F&& f) {
  switch (bytes) {
    case 1:
      return f(uint8_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      throw_error(Code::kInternal, "no CUDA kernel moves " + std::to_string(bytes) + "-byte elements");
  }
}

// Calls f(Index{}) with the narrowest type that splits indices below n.
template <class F>
void with_index(int64_t n, F&& f) {
  if (n <= std::numeric_limits<uint32_t>::max())
    f(uint32_t{});
  else
    f(int64_t{});
}

// ---- Box copy --------------------------------------------------------------------

template <class T, class Index>
__global__ void copy_kernel(const T* src, T* dst, int64_t n, Walk w) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    Index rem = static_cast<Index>(i);
    int64_t s = 0, d = 0;
#pragma unroll
    for (int k = 0; k < kMaxDims; ++k) {
      if (k == w.rank) break;
      const Index extent = static_cast<Index>(w.dim[k]);
      const Index q = rem / extent;
      const int64_t c = static_cast<int64_t>(rem - q * extent);
      s += c * w.src[k];
      d += c * w.dst[k];
      rem = q;
    }
    dst[d] = src[s];
  }
}

// Copies the box's elements of `elem` bytes from src to dst (the element of
// coordinates 0 at each pointer).
void copy_box(const void* src, void* dst, Box box, size_t elem) {
  const int64_t n = box.count();
  if (n == 0) return;
  box.simplify();
  if (box.rank() == 0 || (box.rank() == 1 && box.src[0] == 1 && box.dst[0] == 1)) {
    HUB_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * elem, cudaMemcpyDeviceToDevice, stream()));
    return;
  }
  const Walk w = box.walk();
  with_element(elem, [&](auto element) {
    using T = decltype(element);
    with_index(n, [&](auto index) {
      copy_kernel<T, decltype(index)>
          <<<blocks_for(n), kThreads, 0, stream()>>>(static_cast<const T*>(src), static_cast<T*>(dst), n, w);
    });
  });
  HUB_CUDA_CHECK(cudaGetLastError());
}

size_t elem_size(const Tensor& t) { return dtype_size(t.dtype()); }
const char* bytes_of(const Tensor& t) { return static_cast<const char*>(t.raw_data()); }
char* bytes_of(Tensor& t) { return static_cast<char*>(t.raw_data()); }

// supports() sees the run-time specs; one with an unknown dim (never passed
// at run time) is declined rather than walked.
bool known(const std::vector<TensorSpec>& inputs) {
  for (const TensorSpec& s : inputs)
    if (!s.shape.is_fully_defined()) return false;
  return true;
}

// ---- Views --------------------------------------------------------------------------

void alias(KernelContext& c) { c.set_output(0, c.input(0).reshaped(c.output_spec(0).shape)); }

// ---- Transpose ------------------------------------------------------------------------

constexpr int kTile = 32;
constexpr int kTileRows = 8;  // threads per tile column: each moves kTile / kTileRows elements
// The shorter of the two dims a tile spans must be this long for the tiles to
// beat the box walk, whose strided reads mostly hit cache lines a neighbouring
// warp brought in (on an H200, NHWC <-> NCHW of [8, 3136, C]: even at C = 16,
// tiles ahead from 24, twice as fast at 256).
constexpr int64_t kTileMinDim = 16;

// y's box in output order; source strides are x's, permuted.
Box transpose_box(const Shape& x, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> xs = strides_of(x);
  Shape y;
  for (int64_t p : perm) y.push_back(x[static_cast<int>(p)]);
  const std::vector<int64_t> ys = strides_of(y);
  Box b;
  for (int i = 0; i < y.rank(); ++i) b.add(y[i], xs[perm[i]], ys[i]);
  b.simplify();
  return b;
}

// A batch of 2-D transposes: dim a is contiguous in the source, dim b in the
// destination; `batch` walks the other dims.
struct TileWalk {
  Walk batch;
  int64_t na, nb;
  int64_t src_b, dst_a;  // the strides that are not 1
  int64_t tiles_a, tiles_b, tiles;
};

template <class T>
__global__ void transpose_tiles_kernel(const T* src, T* dst, TileWalk w) {
  __shared__ T tile[kTile][kTile + 1];  // +1: the column reads hit distinct banks
  for (int64_t t = blockIdx.x; t < w.tiles; t += gridDim.x) {
    int64_t rem = t;
    const int64_t a0 = rem % w.tiles_a * kTile;
    rem /= w.tiles_a;
    const int64_t b0 = rem % w.tiles_b * kTile;
    rem /= w.tiles_b;
    int64_t s = 0, d = 0;
#pragma unroll
    for (int k = 0; k < kMaxDims; ++k) {
      if (k == w.batch.rank) break;
      const int64_t c = rem % w.batch.dim[k];
      rem /= w.batch.dim[k];
      s += c * w.batch.src[k];
      d += c * w.batch.dst[k];
    }
    for (int i = threadIdx.y; i < kTile; i += kTileRows) {
      const int64_t b = b0 + i, a = a0 + threadIdx.x;
      if (b < w.nb && a < w.na) tile[i][threadIdx.x] = src[s + b * w.src_b + a];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < kTile; i += kTileRows) {
      const int64_t a = a0 + i, b = b0 + threadIdx.x;
      if (a < w.na && b < w.nb) dst[d + a * w.dst_a + b] = tile[threadIdx.x][i];
    }
    __syncthreads();  // the tile is refilled next
  }
}

// Whether the box (simplified, output order, dense output) is best moved by
// tiles, and which dim is the source-contiguous one.
bool tiled(const Box& b, int* a) {
  if (b.rank() < 2 || b.src.back() == 1) return false;  // the innermost dim stays innermost: rows copy
  *a = -1;
  for (int k = 0; k < b.rank() - 1; ++k)
    if (b.src[k] == 1) *a = k;
  return *a >= 0 && std::min(b.dim[*a], b.dim.back()) >= kTileMinDim;
}

void transpose_tiles(const void* src, void* dst, const Box& b, int a, size_t elem) {
  const int last = b.rank() - 1;
  Box others;
  for (int k = 0; k < last; ++k)
    if (k != a) others.add(b.dim[k], b.src[k], b.dst[k]);
  TileWalk w;
  w.batch = others.walk();
  w.na = b.dim[a];
  w.nb = b.dim[last];
  w.src_b = b.src[last];
  w.dst_a = b.dst[a];
  w.tiles_a = (w.na + kTile - 1) / kTile;
  w.tiles_b = (w.nb + kTile - 1) / kTile;
  w.tiles = w.tiles_a * w.tiles_b * others.count();
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(w.tiles, int64_t{1} << 20));
  with_element(elem, [&](auto element) {
    using T = decltype(element);
    transpose_tiles_kernel<T>
        <<<blocks, dim3(kTile, kTileRows), 0, stream()>>>(static_cast<const T*>(src), static_cast<T*>(dst), w);
  });
  HUB_CUDA_CHECK(cudaGetLastError());
}

void transpose(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  if (y.num_elements() == 0) return;
  const Box b = transpose_box(x.shape(), c.attrs().get_ints("perm"));
  int a;
  if (tiled(b, &a))
    transpose_tiles(x.raw_data(), y.raw_data(), b, a, elem_size(x));
  else
    copy_box(x.raw_data(), y.raw_data(), b, elem_size(x));
}

bool supports_transpose(const Node& node, const std::vector<TensorSpec>& inputs) {
  return known(inputs) && transpose_box(inputs[0].shape, node.attrs.get_ints("perm")).fits();
}

// ---- Slice, StridedSlice, Concat, Split --------------------------------------------------

// x[begin : begin + y.shape] as a box from x (offset `at`) into a dense y.
Box slice_box(const Shape& x, const std::vector<int64_t>& begin, const Shape& y, int64_t* at) {
  const std::vector<int64_t> xs = strides_of(x), ys = strides_of(y);
  Box b;
  *at = 0;
  for (int d = 0; d < x.rank(); ++d) {
    b.add(y[d], xs[d], ys[d]);
    *at += begin[d] * xs[d];
  }
  b.simplify();
  return b;
}

// The shape Slice reads: size -1 is the rest of the dim.
Shape slice_shape(const Shape& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size) {
  Shape y;
  for (int d = 0; d < x.rank(); ++d) y.push_back(size[d] < 0 ? x[d] - begin[d] : size[d]);
  return y;
}

void slice(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  int64_t at = 0;
  const Box b = slice_box(x.shape(), c.attrs().get_ints("begin"), y.shape(), &at);
  copy_box(bytes_of(x) + at * elem_size(x), y.raw_data(), b, elem_size(x));
}

bool supports_slice(const Node& node, const std::vector<TensorSpec>& inputs) {
  if (!known(inputs)) return false;
  const Shape& x = inputs[0].shape;
  const auto& begin = node.attrs.get_ints("begin");
  int64_t at = 0;
  return slice_box(x, begin, slice_shape(x, begin, node.attrs.get_ints("size")), &at).fits();
}

// StridedSlice reads spec.size elements per dim of x, spec.stride apart, from
// spec.begin: the output holds them densely in that order (new axes and
// shrunk dims have one element). `dense_to_x` makes the box go from the dense
// slice into x (the gradient's direction).
Box strided_box(const Shape& x, const ops::StridedSliceSpec& spec, bool dense_to_x, int64_t* at) {
  const std::vector<int64_t> xs = strides_of(x), ds = strides_of(Shape(spec.size));
  Box b;
  *at = 0;
  for (int d = 0; d < x.rank(); ++d) {
    const int64_t step = xs[d] * spec.stride[d];
    if (dense_to_x)
      b.add(spec.size[d], ds[d], step);
    else
      b.add(spec.size[d], step, ds[d]);
    *at += spec.begin[d] * xs[d];
  }
  b.simplify();
  return b;
}

void strided_slice(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  int64_t at = 0;
  const Box b = strided_box(x.shape(), ops::strided_slice_spec(x.shape(), c.attrs()), false, &at);
  copy_box(bytes_of(x) + at * elem_size(x), y.raw_data(), b, elem_size(x));
}

// dx: zeros, then dy scattered where StridedSlice read (distinct places: no
// stride is 0).
void strided_slice_grad(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& dy = c.input(1);
  Tensor& dx = c.output(0);
  if (dx.num_elements() == 0) return;
  HUB_CUDA_CHECK(cudaMemsetAsync(dx.raw_data(), 0, dx.nbytes(), stream()));
  int64_t at = 0;
  const Box b = strided_box(x.shape(), ops::strided_slice_spec(x.shape(), c.attrs()), true, &at);
  copy_box(dy.raw_data(), bytes_of(dx) + at * sizeof(float), b, sizeof(float));
}

bool supports_strided_slice(const Node& node, const std::vector<TensorSpec>& inputs) {
  if (!known(inputs)) return false;
  const Shape& x = inputs[0].shape;
  int64_t at = 0;
  return strided_box(x, ops::strided_slice_spec(x, node.attrs), false, &at).fits();
}

// Concat and Split move each part as rows: [outer, part * inner] inside the
// whole's [outer, whole * inner], the part starting `offset` into the axis.
struct PartRows {
  int64_t outer = 1, inner = 1, whole = 0;
};

PartRows part_rows(const Shape& whole, int axis) {
  PartRows r;
  for (int d = 0; d < whole.rank(); ++d) {
    if (d < axis) r.outer *= whole[d];
    if (d > axis) r.inner *= whole[d];
  }
  r.whole = whole[axis];
  return r;
}

int axis_of(const KernelContext& c, int rank) {
  const int axis = static_cast<int>(c.attrs().get_int("axis"));
  return axis < 0 ? axis + rank : axis;
}

// One part's box; `into_whole` copies the part into the whole (Concat).
Box part_box(const PartRows& r, int64_t part, bool into_whole) {
  Box b;
  const int64_t part_row = part * r.inner, whole_row = r.whole * r.inner;
  b.add(r.outer, into_whole ? part_row : whole_row, into_whole ? whole_row : part_row);
  b.add(part_row, 1, 1);
  return b;
}

void concat(KernelContext& c) {
  Tensor& y = c.output(0);
  const int axis = axis_of(c, y.rank());
  const PartRows r = part_rows(y.shape(), axis);
  const size_t elem = elem_size(y);
  char* out = bytes_of(y);
  int64_t offset = 0;
  for (int k = 0; k < c.num_inputs(); ++k) {
    const Tensor& x = c.input(k);
    copy_box(x.raw_data(), out + offset * r.inner * elem, part_box(r, x.dim(axis), true), elem);
    offset += x.dim(axis);
  }
}

void split(KernelContext& c) {
  const Tensor& x = c.input(0);
  const int axis = axis_of(c, x.rank());
  const PartRows r = part_rows(x.shape(), axis);
  const size_t elem = elem_size(x);
  int64_t offset = 0;
  for (int k = 0; k < c.num_outputs(); ++k) {
    Tensor& y = c.output(k);
    copy_box(bytes_of(x) + offset * r.inner * elem, y.raw_data(), part_box(r, y.dim(axis), false), elem);
    offset += y.dim(axis);
  }
}

// ---- Tile ---------------------------------------------------------------------------------
//
// y viewed as [m_0, n_0, m_1, n_1, ...] (m the multiples, n x's dims): x's
// element at the n coordinates, whatever the m ones.

// The box of y in that view: source strides x's (0 for the m dims).
Box tile_box(const Shape& x, const std::vector<int64_t>& m) {
  const std::vector<int64_t> xs = strides_of(x);
  Shape y;
  for (int d = 0; d < x.rank(); ++d) y.push_back(x[d] * m[d]);
  const std::vector<int64_t> ys = strides_of(y);
  Box b;
  for (int d = 0; d < x.rank(); ++d) {
    b.add(m[d], 0, x[d] * ys[d]);
    b.add(x[d], xs[d], ys[d]);
  }
  b.simplify();
  return b;
}

void tile(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  copy_box(x.raw_data(), y.raw_data(), tile_box(x.shape(), c.attrs().get_ints("multiples")), elem_size(x));
}

bool supports_tile(const Node& node, const std::vector<TensorSpec>& inputs) {
  return known(inputs) && tile_box(inputs[0].shape, node.attrs.get_ints("multiples")).fits();
}

// TileGrad: dx[j] = the sum over the m coordinates of g at (m, j). `keep`
// walks x's dims (dense in dx; source strides g's), `sum` the m dims.
struct TileSum {
  Box keep, sum;
};

TileSum tile_sum(const Shape& x, const std::vector<int64_t>& m) {
  const std::vector<int64_t> xs = strides_of(x);
  Shape g;
  for (int d = 0; d < x.rank(); ++d) g.push_back(x[d] * m[d]);
  const std::vector<int64_t> gs = strides_of(g);
  TileSum t;
  for (int d = 0; d < x.rank(); ++d) {
    t.keep.add(x[d], gs[d], xs[d]);
    t.sum.add(m[d], x[d] * gs[d], 0);
  }
  t.keep.simplify();
  t.sum.simplify();
  return t;
}

// out[chunk][i] = sum of src[keep(i) + sum(r)] over the summed elements r of
// this chunk (blockIdx.y), r in order. Chunks split long sums so that a small
// output still spreads over the device.
__global__ void sum_kernel(const float* src, float* out, int64_t n, Walk keep, Walk sum, int64_t sum_count,
                           int64_t chunk) {
  const int64_t r0 = blockIdx.y * chunk, r1 = min(r0 + chunk, sum_count);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t rem = i, s = 0;
#pragma unroll
    for (int k = 0; k < kMaxDims; ++k) {
      if (k == keep.rank) break;
      s += rem % keep.dim[k] * keep.src[k];
      rem /= keep.dim[k];
    }
    int64_t at[kMaxDims];  // coordinates of r in the summed dims
    rem = r0;
#pragma unroll
    for (int k = 0; k < kMaxDims; ++k) {
      if (k == sum.rank) break;
      at[k] = rem % sum.dim[k];
      rem /= sum.dim[k];
      s += at[k] * sum.src[k];
    }
    float acc = 0.0f;
    for (int64_t r = r0; r < r1; ++r) {
      acc += src[s];
#pragma unroll
      for (int k = 0; k < kMaxDims; ++k) {  // next r: the innermost coordinate first
        if (k == sum.rank) break;
        s += sum.src[k];
        if (++at[k] < sum.dim[k]) break;
        s -= at[k] * sum.src[k];
        at[k] = 0;
      }
    }
    out[blockIdx.y * n + i] = acc;
  }
}

void launch_sum(const float* src, float* out, int64_t n, const Walk& keep, const Walk& sum, int64_t sum_count,
                int64_t chunk) {
  const int64_t chunks = (sum_count + chunk - 1) / chunk;
  sum_kernel<<<dim3(blocks_for(n), static_cast<unsigned>(chunks)), kThreads, 0, stream()>>>(src, out, n, keep, sum,
                                                                                            sum_count, chunk);
  HUB_CUDA_CHECK(cudaGetLastError());
}

void tile_grad(KernelContext& c) {
  const Tensor& g = c.input(0);
  const Tensor& x = c.input(1);
  Tensor& dx = c.output(0);
  const int64_t n = dx.num_elements();
  if (n == 0) return;
  const TileSum t = tile_sum(x.shape(), c.attrs().get_ints("multiples"));
  const int64_t sum_count = t.sum.count();
  if (sum_count == 0) {  // no copies: nothing flows back
    HUB_CUDA_CHECK(cudaMemsetAsync(dx.raw_data(), 0, dx.nbytes(), stream()));
    return;
  }
  // Enough chunks for about kSpread threads, each summing at least kMinChunk elements.
  constexpr int64_t kSpread = int64_t{1} << 18, kMinChunk = 32;
  const int64_t chunks =
      std::clamp<int64_t>(std::min((kSpread + n - 1) / n, (sum_count + kMinChunk - 1) / kMinChunk), 1, 65535);
  const int64_t chunk = (sum_count + chunks - 1) / chunks;
  const float* pg = g.device_data<float>();
  float* out = dx.device_data<float>();
  if (chunk == sum_count) {
    launch_sum(pg, out, n, t.keep.walk(), t.sum.walk(), sum_count, chunk);
    return;
  }
  // Partial sums per chunk, then their sum (a second pass over [parts, n]).
  const int64_t parts = (sum_count + chunk - 1) / chunk;
  Tensor partial = c.temp(DType::kFloat32, Shape{parts, n});
  launch_sum(pg, partial.device_data<float>(), n, t.keep.walk(), t.sum.walk(), sum_count, chunk);
  Box keep, sum;
  keep.add(n, 1, 1);
  sum.add(parts, n, 0);
  launch_sum(partial.device_data<float>(), out, n, keep.walk(), sum.walk(), parts, parts);
}

bool supports_tile_grad(const Node& node, const std::vector<TensorSpec>& inputs) {
  if (!known(inputs)) return false;
  const TileSum t = tile_sum(inputs[1].shape, node.attrs.get_ints("multiples"));
  return t.keep.fits() && t.sum.fits();
}

// ---- Pad --------------------------------------------------------------------------------
//
// Each y element reads the x element its coordinates map to, per dim (the
// mappings of hub/ops/array.h, so corners mirror both ways), or is the
// constant: one pass, writes in y's order.

enum PadMode : int { kConstant, kReflect, kSymmetric, kEdge };

PadMode pad_mode(const std::string& m) {
  return m == "REFLECT" ? kReflect : m == "SYMMETRIC" ? kSymmetric : m == "EDGE" ? kEdge : kConstant;
}

// Dims innermost first.
struct PadWalk {
  int rank = 0;
  int mode = kConstant;
  int64_t out[kMaxDims];     // y's extents
  int64_t in[kMaxDims];      // x's extents
  int64_t before[kMaxDims];  // padding before x
  int64_t stride[kMaxDims];  // x's strides
};

// The walk, outermost first while built: extent-1 dims of x not padded are
// dropped, and neighbouring dims not padded merged.
struct PadBox {
  std::vector<int64_t> out, in, before;
  int rank() const { return static_cast<int>(out.size()); }
};

PadBox pad_box(const Shape& x, const std::vector<int64_t>& p) {
  PadBox b;
  bool last_plain = false;  // whether b's innermost dim so far is unpadded
  for (int d = 0; d < x.rank(); ++d) {
    const int64_t y = x[d] + p[2 * d] + p[2 * d + 1];
    const bool plain = y == x[d];
    if (plain && x[d] == 1) continue;
    if (plain && last_plain) {
      b.out.back() *= y;
      b.in.back() *= y;
    } else {
      b.out.push_back(y);
      b.in.push_back(x[d]);
      b.before.push_back(p[2 * d]);
    }
    last_plain = plain;
  }
  return b;
}

template <class T, class Index>
__global__ void pad_kernel(const T* x, T* y, int64_t n, PadWalk w, T fill) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    Index rem = static_cast<Index>(i);
    int64_t s = 0;
    bool inside = true;
#pragma unroll
    for (int k = 0; k < kMaxDims; ++k) {
      if (k == w.rank) break;
      const Index extent = static_cast<Index>(w.out[k]);
      const Index q = rem / extent;
      int64_t j = static_cast<int64_t>(rem - q * extent) - w.before[k];
      rem = q;
      const int64_t len = w.in[k];
      if (j < 0 || j >= len) {
        switch (w.mode) {
          case kConstant:
            inside = false;
            break;
          case kReflect:
            j = j < 0 ? -j : 2 * (len - 1) - j;
            break;
          case kSymmetric:
            j = j < 0 ? -j - 1 : 2 * len - 1 - j;
            break;
          default:
            j = j < 0 ? 0 : len - 1;
            break;
        }
      }
      s += j * w.stride[k];
    }
    y[i] = inside ? x[s] : fill;
  }
}

// constant_value converted to x's dtype as the reference does, as raw bits.
uint64_t fill_bits(DType dtype, double value) {
  uint64_t bits = 0;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v = static_cast<T>(value);
    std::memcpy(&bits, &v, sizeof(T));
  });
  return bits;
}

void pad(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  const int64_t n = y.num_elements();
  if (n == 0) return;
  const PadBox b = pad_box(x.shape(), c.attrs().get_ints("paddings"));
  HUB_CHECK(b.rank() <= kMaxDims, "Pad over " + std::to_string(b.rank()) + " dims");  // supports() declined those
  PadWalk w;
  w.rank = b.rank();
  w.mode = pad_mode(c.attrs().get_string("mode"));
  int64_t stride = 1;
  for (int k = 0; k < w.rank; ++k) {
    const int d = b.rank() - 1 - k;
    w.out[k] = b.out[d];
    w.in[k] = b.in[d];
    w.before[k] = b.before[d];
    w.stride[k] = stride;
    stride *= b.in[d];
  }
  const uint64_t bits = fill_bits(x.dtype(), c.attrs().get_float("constant_value"));
  with_element(elem_size(x), [&](auto element) {
    using T = decltype(element);
    T fill;
    std::memcpy(&fill, &bits, sizeof(T));
    with_index(n, [&](auto index) {
      pad_kernel<T, decltype(index)><<<blocks_for(n), kThreads, 0, stream()>>>(
          static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), n, w, fill);
    });
  });
  HUB_CUDA_CHECK(cudaGetLastError());
}

bool supports_pad(const Node& node, const std::vector<TensorSpec>& inputs) {
  return known(inputs) && pad_box(inputs[0].shape, node.attrs.get_ints("paddings")).rank() <= kMaxDims;
}

// PadGrad folds one padded dim per pass: g viewed as [outer, before + len +
// after, inner] becomes [outer, len, inner], each element the sum of its own
// position and the border positions that copied it (at most one on each side
// for REFLECT and SYMMETRIC; for EDGE the whole side at the end elements).
struct Fold {
  int64_t outer, inner, len, before, after;
  int mode;
};

__global__ void pad_fold_kernel(const float* g, float* dx, int64_t n, Fold f) {
  const int64_t padded = f.before + f.len + f.after;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t k = i % f.inner, r = i / f.inner, j = r % f.len, o = r / f.len;
    const float* at = g + o * padded * f.inner + k;  // position p of this column: at[p * inner]
    float acc = at[(f.before + j) * f.inner];
    switch (f.mode) {
      case kReflect:  // border index -j, and 2(len-1) - j
        if (j >= 1 && j <= f.before) acc += at[(f.before - j) * f.inner];
        if (j <= f.len - 2 && j >= f.len - 1 - f.after) acc += at[(f.before + 2 * (f.len - 1) - j) * f.inner];
        break;
      case kSymmetric:  // border index -j-1, and 2 len - 1 - j
        if (j < f.before) acc += at[(f.before - j - 1) * f.inner];
        if (j >= f.len - f.after) acc += at[(f.before + 2 * f.len - 1 - j) * f.inner];
        break;
      default:  // EDGE: every border position copies an end element
        if (j == 0)
          for (int64_t p = 0; p < f.before; ++p) acc += at[p * f.inner];
        if (j == f.len - 1)
          for (int64_t p = f.before + f.len; p < padded; ++p) acc += at[p * f.inner];
    }
    dx[i] = acc;
  }
}

void pad_grad(KernelContext& c) {
  const Tensor& g = c.input(0);
  Tensor& dx = c.output(0);
  if (dx.num_elements() == 0) return;
  const auto& p = c.attrs().get_ints("paddings");
  const int mode = pad_mode(c.attrs().get_string("mode"));
  std::vector<int> padded;
  for (int d = 0; d < dx.rank(); ++d)
    if (p[2 * d] + p[2 * d + 1] > 0) padded.push_back(d);
  if (padded.empty()) {
    HUB_CUDA_CHECK(cudaMemcpyAsync(dx.raw_data(), g.raw_data(), dx.nbytes(), cudaMemcpyDeviceToDevice, stream()));
    return;
  }
  Tensor from = g;
  Shape shape = g.shape();
  for (int d : padded) {
    shape.set_dim(d, dx.dim(d));
    Tensor to = d == padded.back() ? dx : c.temp(DType::kFloat32, shape);
    Fold f{1, 1, dx.dim(d), p[2 * d], p[2 * d + 1], mode};
    for (int e = 0; e < shape.rank(); ++e) {
      if (e < d) f.outer *= shape[e];
      if (e > d) f.inner *= shape[e];
    }
    const int64_t n = to.num_elements();
    // `from` holds the previous pass's buffer until this pass is queued; read
    // through a const view, so g's generation is not bumped.
    pad_fold_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(std::as_const(from).device_data<float>(),
                                                              to.device_data<float>(), n, f);
    HUB_CUDA_CHECK(cudaGetLastError());
    from = to;
  }
}

// ---- Gather ---------------------------------------------------------------------------------
//
// Gather's geometry: ops::GatherView (hub/ops/array.h).

// For element i of [B, P, N, I]: its offset in params' [B, P, S, I], or -1
// when its index lies outside [-S, S).
template <class I, class Index>
__device__ int64_t gather_source(const I* indices, int64_t i, const ops::GatherView& v) {
  Index rem = static_cast<Index>(i);
  const Index k = rem % static_cast<Index>(v.inner);
  rem /= static_cast<Index>(v.inner);
  const Index at = rem % static_cast<Index>(v.n), bp = rem / static_cast<Index>(v.n);
  int64_t j = static_cast<int64_t>(indices[static_cast<int64_t>(bp / static_cast<Index>(v.outer)) * v.n + at]);
  if (j < 0) j += v.axis;
  if (j < 0 || j >= v.axis) return -1;
  return (static_cast<int64_t>(bp) * v.axis + j) * v.inner + static_cast<int64_t>(k);
}

template <class T, class I, class Index>
__global__ void gather_kernel(const T* params, const I* indices, T* out, int64_t n, ops::GatherView v) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t s = gather_source<I, Index>(indices, i, v);
    out[i] = s >= 0 ? params[s] : T{0};
  }
}

template <class I, class Index>
__global__ void gather_grad_kernel(const float* g, const I* indices, float* out, int64_t n, ops::GatherView v) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t s = gather_source<I, Index>(indices, i, v);
    if (s >= 0) atomicAdd(out + s, g[i]);
  }
}

// Calls f(I{}) with the indices' element type.
template <class F>
void with_indices(const Tensor& indices, F&& f) {
  if (indices.dtype() == DType::kInt32)
    f(int32_t{});
  else
    f(int64_t{});
}

void gather(KernelContext& c) {
  const Tensor& params = c.input(0);
  const Tensor& indices = c.input(1);
  Tensor& y = c.output(0);
  const int64_t n = y.num_elements();
  if (n == 0) return;
  const ops::GatherView v = ops::gather_view(params.shape(), indices.shape(), c.attrs());
  with_element(elem_size(params), [&](auto element) {
    using T = decltype(element);
    with_indices(indices, [&](auto index_type) {
      using I = decltype(index_type);
      with_index(n, [&](auto index) {
        gather_kernel<T, I, decltype(index)><<<blocks_for(n), kThreads, 0, stream()>>>(
            static_cast<const T*>(params.raw_data()), indices.device_data<I>(), static_cast<T*>(y.raw_data()), n, v);
      });
    });
  });
  HUB_CUDA_CHECK(cudaGetLastError());
}

void gather_grad(KernelContext& c) {
  const Tensor& g = c.input(0);
  const Tensor& indices = c.input(1);
  Tensor& out = c.output(0);
  if (out.num_elements() == 0) return;
  HUB_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, out.nbytes(), stream()));
  const int64_t n = g.num_elements();
  if (n == 0) return;
  const ops::GatherView v = ops::gather_view(c.input(2).shape(), indices.shape(), c.attrs());
  with_indices(indices, [&](auto index_type) {
    using I = decltype(index_type);
    with_index(n, [&](auto index) {
      gather_grad_kernel<I, decltype(index)><<<blocks_for(n), kThreads, 0, stream()>>>(
          g.device_data<float>(), indices.device_data<I>(), out.device_data<float>(), n, v);
    });
  });
  HUB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

HUB_REGISTER_KERNEL(Reshape, cuda, alias);
HUB_REGISTER_KERNEL(ReshapeLike, cuda, alias);
HUB_REGISTER_KERNEL(DynamicReshape, cuda, alias);
HUB_REGISTER_KERNEL(Squeeze, cuda, alias);
HUB_REGISTER_KERNEL(ExpandDims, cuda, alias);
HUB_REGISTER_KERNEL(Transpose, cuda, transpose, supports_transpose);
HUB_REGISTER_KERNEL(Pad, cuda, pad, supports_pad);
HUB_REGISTER_KERNEL(PadGrad, cuda, pad_grad);
HUB_REGISTER_KERNEL(Slice, cuda, slice, supports_slice);
HUB_REGISTER_KERNEL(StridedSlice, cuda, strided_slice, supports_strided_slice);
HUB_REGISTER_KERNEL(StridedSliceGrad, cuda, strided_slice_grad, supports_strided_slice);
HUB_REGISTER_KERNEL(Concat, cuda, concat);
HUB_REGISTER_KERNEL(Split, cuda, split);
HUB_REGISTER_KERNEL(Tile, cuda, tile, supports_tile);
HUB_REGISTER_KERNEL(TileGrad, cuda, tile_grad, supports_tile_grad);
HUB_REGISTER_KERNEL(Gather, cuda, gather);
HUB_REGISTER_KERNEL(GatherGrad, cuda, gather_grad);

}  // namespace hub::cuda

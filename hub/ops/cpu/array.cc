// Reference kernels of the shape ops. Reshape-like ops alias their input;
// Pad/Slice/Concat/Split are box copies (memcpy of contiguous rows, parallel over
// rows); Transpose merges dims that stay adjacent, then copies contiguous rows
// or does tiled 2-D transposes, in parallel. All are
// dtype-agnostic: they move elements of dtype_size bytes.
#include "hub/ops/array.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>

#include "hub/core/parallel.h"
#include "hub/ops/cpu/broadcast.h"
#include "hub/ops/node.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

// Calls row(dst_row, src_row, bytes) for each row of the box of extents
// `ext` at offset `so` in src (dims sd) and `dof` in dst (dims dd); all
// row-major, elements of `elem` bytes; rows in parallel (they are disjoint).
template <class RowFn>
void box_rows(const char* src, std::vector<int64_t> sd, std::vector<int64_t> so, char* dst, std::vector<int64_t> dd,
              std::vector<int64_t> dof, std::vector<int64_t> ext, size_t elem, RowFn row_fn) {
  for (int64_t e : ext)
    if (e == 0) return;
  if (ext.empty()) {
    row_fn(dst, src, elem);
    return;
  }
  // Merge the last two dims while the box spans the whole last dim in both.
  while (ext.size() >= 2 && ext.back() == sd.back() && ext.back() == dd.back()) {
    size_t r = ext.size();
    int64_t inner = ext.back();
    ext[r - 2] *= inner;
    so[r - 2] *= inner;
    dof[r - 2] *= inner;
    sd[r - 2] *= inner;
    dd[r - 2] *= inner;
    ext.pop_back();
    so.pop_back();
    dof.pop_back();
    sd.pop_back();
    dd.pop_back();
  }
  int r = static_cast<int>(ext.size());
  std::vector<int64_t> ss(r, 1), ds(r, 1);
  for (int i = r - 2; i >= 0; --i) {
    ss[i] = ss[i + 1] * sd[i + 1];
    ds[i] = ds[i + 1] * dd[i + 1];
  }
  int64_t s_base = 0, d_base = 0, rows = 1;
  for (int i = 0; i < r; ++i) {
    s_base += so[i] * ss[i];
    d_base += dof[i] * ds[i];
    if (i < r - 1) rows *= ext[i];
  }
  size_t row_bytes = static_cast<size_t>(ext[r - 1]) * elem;
  int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(65536 / std::max<size_t>(1, row_bytes)));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      int64_t rem = row, s_off = s_base, d_off = d_base;
      for (int i = r - 2; i >= 0; --i) {
        int64_t idx = rem % ext[i];
        rem /= ext[i];
        s_off += idx * ss[i];
        d_off += idx * ds[i];
      }
      row_fn(dst + d_off * elem, src + s_off * elem, row_bytes);
    }
  });
}

// Copies the box (see box_rows).
void copy_box(const char* src, std::vector<int64_t> sd, std::vector<int64_t> so, char* dst, std::vector<int64_t> dd,
              std::vector<int64_t> dof, std::vector<int64_t> ext, size_t elem) {
  box_rows(src, std::move(sd), std::move(so), dst, std::move(dd), std::move(dof), std::move(ext), elem,
           [](char* d, const char* s, size_t n) { std::memcpy(d, s, n); });
}

size_t elem_size(const Tensor& t) { return dtype_size(t.dtype()); }

void alias_kernel(KernelContext& c) { c.set_output(0, c.input(0).reshaped(c.output_spec(0).shape)); }

// DynamicRange: start + i * delta.
void range_kernel(KernelContext& c) {
  Tensor& y = c.output(0);
  std::vector<Shape> shapes;
  for (int i = 0; i < c.num_inputs(); ++i) shapes.push_back(c.input(i).shape());
  const int64_t start = ops::dynamic_range_bounds(c.attrs(), shapes).value().first;
  const int64_t delta = c.attrs().get_int("delta");
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = y.data<T>();
    for (int64_t i = 0; i < y.num_elements(); ++i) p[i] = static_cast<T>(start + i * delta);
  });
}

void shape_kernel(KernelContext& c) {
  const std::vector<int64_t>& dims = c.input(0).shape().dims();
  std::copy(dims.begin(), dims.end(), c.output(0).data<int64_t>());
}

// ---- Pad ------------------------------------------------------------------------
//
// Mirror and edge modes fill the border dim after dim: for dim d, each border
// position copies the slab at the position it mirrors, the slab spanning the
// full (already padded) extent of the dims before d and x's extent of those
// after. PadGrad undoes this in reverse order, adding instead of copying.

enum class Mode { kConstant, kReflect, kSymmetric, kEdge };
Mode pad_mode(const std::string& m) {
  return m == "REFLECT"     ? Mode::kReflect
         : m == "SYMMETRIC" ? Mode::kSymmetric
         : m == "EDGE"      ? Mode::kEdge
                            : Mode::kConstant;
}

// The index inside x's dim of size n that border index i (< 0 or >= n) copies.
int64_t mirror(Mode mode, int64_t i, int64_t n) {
  switch (mode) {
    case Mode::kReflect:
      return i < 0 ? -i : 2 * (n - 1) - i;
    case Mode::kSymmetric:
      return i < 0 ? -i - 1 : 2 * n - 1 - i;
    default:
      return i < 0 ? 0 : n - 1;
  }
}

// Calls slab(d, border, source) for every border position of every dim, in
// dim order, with the box (offset, extent) shared by both slabs.
template <class SlabFn>
void for_each_border(const Shape& x, const std::vector<int64_t>& p, Mode mode, bool reverse, SlabFn slab) {
  const int r = x.rank();
  for (int k = 0; k < r; ++k) {
    int d = reverse ? r - 1 - k : k;
    int64_t n = x[d], before = p[2 * d], after = p[2 * d + 1];
    std::vector<int64_t> at(r), ext(r);
    for (int j = 0; j < r; ++j) {
      at[j] = j < d ? 0 : p[2 * j];
      ext[j] = j < d ? x[j] + p[2 * j] + p[2 * j + 1] : x[j];
    }
    ext[d] = 1;
    for (int64_t i = -before; i < n + after; ++i) {
      if (i == 0) i = n;  // skip x's own positions
      if (i >= n + after) break;
      std::vector<int64_t> to = at, from = at;
      to[d] = before + i;
      from[d] = before + mirror(mode, i, n);
      slab(to, from, ext);
    }
  }
}

void pad_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  const auto& p = c.attrs().get_ints("paddings");
  Mode mode = pad_mode(c.attrs().get_string("mode"));
  if (mode == Mode::kConstant) y.fill(c.attrs().get_float("constant_value"));
  std::vector<int64_t> at(x.rank()), zero(x.rank(), 0);
  for (int i = 0; i < x.rank(); ++i) at[i] = p[2 * i];
  char* py = static_cast<char*>(y.raw_data());
  const std::vector<int64_t>& yd = y.shape().dims();
  copy_box(static_cast<const char*>(x.raw_data()), x.shape().dims(), zero, py, yd, at, x.shape().dims(), elem_size(x));
  if (mode == Mode::kConstant || x.num_elements() == 0) return;
  for_each_border(x.shape(), p, mode, false,
                  [&](const std::vector<int64_t>& to, const std::vector<int64_t>& from,
                      const std::vector<int64_t>& ext) { copy_box(py, yd, from, py, yd, to, ext, elem_size(x)); });
}

// g (padded shape) folded: border gradients added onto their sources, in the
// reverse order of Pad's filling, then the middle cut out.
void pad_grad_kernel(KernelContext& c) {
  const Tensor& g = c.input(0);
  Tensor& dx = c.output(0);
  const auto& p = c.attrs().get_ints("paddings");
  Mode mode = pad_mode(c.attrs().get_string("mode"));
  Tensor acc = c.temp(DType::kFloat32, g.shape());
  std::memcpy(acc.raw_data(), g.raw_data(), g.nbytes());
  char* pa = static_cast<char*>(acc.raw_data());
  const std::vector<int64_t>& gd = g.shape().dims();
  if (dx.num_elements() > 0)
    for_each_border(
        dx.shape(), p, mode, true,
        [&](const std::vector<int64_t>& to, const std::vector<int64_t>& from, const std::vector<int64_t>& ext) {
          box_rows(pa, gd, to, pa, gd, from, ext, sizeof(float), [](char* d, const char* s, size_t n) {
            size_t k = n / sizeof(float);
            Eigen::Map<Eigen::ArrayXf>(reinterpret_cast<float*>(d), k) +=
                Eigen::Map<const Eigen::ArrayXf>(reinterpret_cast<const float*>(s), k);
          });
        });
  std::vector<int64_t> at(dx.rank()), zero(dx.rank(), 0);
  for (int i = 0; i < dx.rank(); ++i) at[i] = p[2 * i];
  copy_box(pa, gd, at, static_cast<char*>(dx.raw_data()), dx.shape().dims(), zero, dx.shape().dims(), sizeof(float));
}

void slice_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  std::vector<int64_t> zero(x.rank(), 0);
  copy_box(static_cast<const char*>(x.raw_data()), x.shape().dims(), c.attrs().get_ints("begin"),
           static_cast<char*>(y.raw_data()), y.shape().dims(), zero, y.shape().dims(), elem_size(x));
}

// DynamicSlice: its begin resolved for this run's shapes (the size is the output's).
void dynamic_slice_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  std::vector<Shape> shapes;
  for (int i = 0; i < c.num_inputs(); ++i) shapes.push_back(c.input(i).shape());
  std::vector<int64_t> begin;
  for (const std::optional<int64_t>& b : ops::dynamic_slice_begin(c.attrs(), shapes)) begin.push_back(b.value());
  std::vector<int64_t> zero(x.rank(), 0);
  copy_box(static_cast<const char*>(x.raw_data()), x.shape().dims(), begin, static_cast<char*>(y.raw_data()),
           y.shape().dims(), zero, y.shape().dims(), elem_size(x));
}

void concat_kernel(KernelContext& c) {
  Tensor& y = c.output(0);
  int rank = y.rank();
  int64_t axis = c.attrs().get_int("axis");
  if (axis < 0) axis += rank;
  int64_t offset = 0;
  for (int k = 0; k < c.num_inputs(); ++k) {
    const Tensor& x = c.input(k);
    std::vector<int64_t> zero(rank, 0), at(rank, 0);
    at[axis] = offset;
    copy_box(static_cast<const char*>(x.raw_data()), x.shape().dims(), zero, static_cast<char*>(y.raw_data()),
             y.shape().dims(), at, x.shape().dims(), elem_size(x));
    offset += x.dim(static_cast<int>(axis));
  }
}

// ---- Transpose ----------------------------------------------------------------
//
// After merging, dims are d (input order) and output dim i is input dim
// perm[i]. If the innermost input dim stays innermost, each output row is one
// contiguous copy. Otherwise every combination of the other dims holds a 2-D
// transpose between input dim b = perm[last] (output-contiguous) and the input's
// innermost dim a (input-contiguous), done in cache-sized tiles.

template <class T>
void transpose_blocked(const T* in, T* out, const std::vector<int64_t>& d, const std::vector<int64_t>& perm) {
  int r = static_cast<int>(d.size());
  std::vector<int64_t> is(r, 1), os_out(r, 1), os(r);  // input strides; output strides by output dim / input dim
  for (int k = r - 2; k >= 0; --k) is[k] = is[k + 1] * d[k + 1];
  for (int i = r - 2; i >= 0; --i) os_out[i] = os_out[i + 1] * d[perm[i + 1]];
  for (int i = 0; i < r; ++i) os[perm[i]] = os_out[i];
  const int a = r - 1;
  const int b = static_cast<int>(perm[r - 1]);
  if (b == a) {
    // Rows of d[a] contiguous elements: iterate output rows.
    int64_t inner = d[a], rows = 1;
    for (int i = 0; i < r - 1; ++i) rows *= d[perm[i]];
    int64_t grain = std::max<int64_t>(1, 16384 / inner);
    parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        int64_t rem = row, src = 0;
        for (int i = r - 2; i >= 0; --i) {
          int64_t dim = d[perm[i]];
          src += (rem % dim) * is[perm[i]];
          rem /= dim;
        }
        std::memcpy(out + row * inner, in + src, static_cast<size_t>(inner) * sizeof(T));
      }
    });
    return;
  }
  std::vector<int> others;  // input dims other than a and b
  for (int k = 0; k < r; ++k)
    if (k != a && k != b) others.push_back(k);
  int64_t outer = 1;
  for (int k : others) outer *= d[k];
  constexpr int64_t kTile = 32;
  const int64_t nb = d[b], na = d[a], sb = is[b], oa = os[a];
  const int64_t tiles_b = (nb + kTile - 1) / kTile;
  int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, kTile * na));
  parallel_for(outer * tiles_b, grain, [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      int64_t o = unit / tiles_b, tb = unit % tiles_b;
      int64_t src = 0, dst = 0, rem = o;
      for (int j = static_cast<int>(others.size()) - 1; j >= 0; --j) {
        int k = others[j];
        int64_t idx = rem % d[k];
        rem /= d[k];
        src += idx * is[k];
        dst += idx * os[k];
      }
      int64_t b0 = tb * kTile, b1 = std::min(nb, b0 + kTile);
      for (int64_t a0 = 0; a0 < na; a0 += kTile) {
        int64_t a1 = std::min(na, a0 + kTile);
        for (int64_t ib = b0; ib < b1; ++ib) {
          const T* s_row = in + src + ib * sb;
          T* d_col = out + dst + ib;
          for (int64_t ia = a0; ia < a1; ++ia) d_col[ia * oa] = s_row[ia];
        }
      }
    }
  });
}

void transpose_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  if (x.num_elements() == 0) return;
  const auto& perm = c.attrs().get_ints("perm");
  // Drop size-1 dims, then merge input dims that stay adjacent and in order.
  std::vector<int64_t> keep_index(x.rank(), -1);
  std::vector<int64_t> dims1;
  for (int i = 0; i < x.rank(); ++i)
    if (x.dim(i) != 1) {
      keep_index[i] = static_cast<int64_t>(dims1.size());
      dims1.push_back(x.dim(i));
    }
  std::vector<int64_t> perm1;
  for (int64_t p : perm)
    if (keep_index[p] >= 0) perm1.push_back(keep_index[p]);
  // Groups of consecutive output positions whose input dims are consecutive.
  std::vector<std::vector<int64_t>> groups;  // each: input dims in order
  for (size_t i = 0; i < perm1.size(); ++i) {
    if (i > 0 && perm1[i] == perm1[i - 1] + 1)
      groups.back().push_back(perm1[i]);
    else
      groups.push_back({perm1[i]});
  }
  // Order groups by their first input dim to get the merged input dims.
  std::vector<size_t> by_input(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) by_input[g] = g;
  std::sort(by_input.begin(), by_input.end(), [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
  std::vector<int64_t> merged_dims(groups.size()), merged_perm(groups.size()), group_pos(groups.size());
  for (size_t k = 0; k < by_input.size(); ++k) {
    int64_t d = 1;
    for (int64_t i : groups[by_input[k]]) d *= dims1[i];
    merged_dims[k] = d;
    group_pos[by_input[k]] = static_cast<int64_t>(k);
  }
  for (size_t g = 0; g < groups.size(); ++g) merged_perm[g] = group_pos[g];
  if (merged_dims.size() <= 1) {
    std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
    return;
  }
  switch (dtype_size(x.dtype())) {
    case 1:
      return transpose_blocked(static_cast<const uint8_t*>(x.raw_data()), static_cast<uint8_t*>(y.raw_data()),
                               merged_dims, merged_perm);
    case 4:
      return transpose_blocked(static_cast<const uint32_t*>(x.raw_data()), static_cast<uint32_t*>(y.raw_data()),
                               merged_dims, merged_perm);
    case 8:
      return transpose_blocked(static_cast<const uint64_t*>(x.raw_data()), static_cast<uint64_t*>(y.raw_data()),
                               merged_dims, merged_perm);
    default:
      throw_error(Code::kUnimplemented, "Transpose of " + x.spec_string());
  }
}

void split_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  int axis = static_cast<int>(c.attrs().get_int("axis"));
  if (axis < 0) axis += x.rank();
  int64_t offset = 0;
  for (int k = 0; k < c.num_outputs(); ++k) {
    Tensor& y = c.output(k);
    std::vector<int64_t> at(x.rank(), 0), zero(x.rank(), 0);
    at[axis] = offset;
    copy_box(static_cast<const char*>(x.raw_data()), x.shape().dims(), at, static_cast<char*>(y.raw_data()),
             y.shape().dims(), zero, y.shape().dims(), elem_size(x));
    offset += y.dim(axis);
  }
}

// ---- Gather ---------------------------------------------------------------------
//
// Gather's geometry: ops::GatherView (hub/ops/array.h).

// The indices as int64, each checked to lie in [-v.axis, v.axis); negative
// ones count from the end.
// The indices as int64, negative ones counted from the end of an axis of
// `dim` elements; one outside [-dim, dim) fails naming the node.
std::vector<int64_t> checked_indices(const KernelContext& c, const Tensor& idx, int64_t dim, const Shape& params) {
  std::vector<int64_t> out(idx.num_elements());
  auto read = [&](const auto* p) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(p[i]);
  };
  if (idx.dtype() == DType::kInt32)
    read(idx.data<int32_t>());
  else
    read(idx.data<int64_t>());
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] < -dim || out[i] >= dim)
      throw_error(Code::kInvalidArgument,
                  "node '" + c.node().name + "' (" + c.node().op + "): index " + std::to_string(out[i]) +
                      " at flat position " + std::to_string(i) + " of indices " + idx.spec_string() + " is outside [" +
                      std::to_string(-dim) + ", " + std::to_string(dim) + ") for axis " +
                      std::to_string(c.attrs().get_int("axis")) + " of params " + params.to_string());
    if (out[i] < 0) out[i] += dim;
  }
  return out;
}

void gather_kernel(KernelContext& c) {
  const Tensor& params = c.input(0);
  const Tensor& idx = c.input(1);
  Tensor& y = c.output(0);
  ops::GatherView v = ops::gather_view(params.shape(), idx.shape(), c.attrs());
  std::vector<int64_t> at = checked_indices(c, idx, v.axis, params.shape());
  if (y.num_elements() == 0) return;
  const size_t row = static_cast<size_t>(v.inner) * elem_size(params);
  const char* src = static_cast<const char*>(params.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  // One row of `inner` elements per (b, p, n).
  int64_t rows = v.batch * v.outer * v.n;
  parallel_for(rows, std::max<int64_t>(1, static_cast<int64_t>(65536 / std::max<size_t>(1, row))),
               [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r) {
                   int64_t n = r % v.n, bp = r / v.n, b = bp / v.outer;
                   int64_t k = at[b * v.n + n];
                   std::memcpy(dst + r * row, src + ((bp * v.axis) + k) * row, row);
                 }
               });
}

// Scatter-add of g [B, P, N, I] into [B, P, S, I]. Work items are (b, p, a
// chunk of I), so no two threads add into the same element.
void gather_grad_kernel(KernelContext& c) {
  const Tensor& g = c.input(0);
  const Tensor& idx = c.input(1);
  const Tensor& params = c.input(2);
  Tensor& out = c.output(0);
  ops::GatherView v = ops::gather_view(params.shape(), idx.shape(), c.attrs());
  std::vector<int64_t> at = checked_indices(c, idx, v.axis, params.shape());
  float* po = out.data<float>();
  std::fill(po, po + out.num_elements(), 0.0f);
  if (g.num_elements() == 0) return;
  const float* pg = g.data<float>();
  const int64_t chunk = std::min<int64_t>(v.inner, 4096), chunks = (v.inner + chunk - 1) / chunk;
  using Vec = Eigen::Map<Eigen::ArrayXf>;
  using CVec = Eigen::Map<const Eigen::ArrayXf>;
  parallel_for(v.batch * v.outer * chunks, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, chunk * v.n)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t w = begin; w < end; ++w) {
                   int64_t bp = w / chunks, i0 = (w % chunks) * chunk, len = std::min(chunk, v.inner - i0);
                   int64_t b = bp / v.outer;
                   for (int64_t n = 0; n < v.n; ++n)
                     Vec(po + (bp * v.axis + at[b * v.n + n]) * v.inner + i0, len) +=
                         CVec(pg + (bp * v.n + n) * v.inner + i0, len);
                 }
               });
}

// ---- GatherElements --------------------------------------------------------------

// For each element of indices (flat, row-major), the flat offset in x it
// reads: its own coordinates in x's strides, the axis coordinate replaced by
// the (checked) index.
std::vector<int64_t> element_offsets(const KernelContext& c, const Tensor& idx, const Shape& x) {
  int axis = static_cast<int>(c.attrs().get_int("axis"));
  if (axis < 0) axis += x.rank();
  std::vector<int64_t> at = checked_indices(c, idx, x[axis], x);
  const Shape& ishape = idx.shape();
  const int rank = x.rank();
  std::vector<int64_t> stride(static_cast<size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * x[d + 1];
  parallel_for(static_cast<int64_t>(at.size()), 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      int64_t rest = i, offset = 0;
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t coord = rest % ishape[d];
        rest /= ishape[d];
        offset += (d == axis ? at[i] : coord) * stride[d];
      }
      at[i] = offset;
    }
  });
  return at;
}

void gather_elements_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  const std::vector<int64_t> at = element_offsets(c, c.input(1), x.shape());
  const size_t size = elem_size(x);
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  parallel_for(static_cast<int64_t>(at.size()), 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) std::memcpy(dst + i * size, src + at[i] * size, size);
  });
}

// Repeated indices add up, in order (one thread: any two elements may collide).
void gather_elements_grad_kernel(KernelContext& c) {
  const Tensor& g = c.input(0);
  Tensor& out = c.output(0);
  const std::vector<int64_t> at = element_offsets(c, c.input(1), c.input(2).shape());
  float* po = out.data<float>();
  std::fill(po, po + out.num_elements(), 0.0f);
  const float* pg = g.data<float>();
  for (size_t i = 0; i < at.size(); ++i) po[at[i]] += pg[i];
}

// ---- GatherND, ScatterND, ScatterElements ---------------------------------------

// For each index tuple (the last dim of indices) the flat offset in x of the
// slice it names: after `b` batch dims, tuple entry j indexes dim b + j
// (negative entries count from the end; each checked).
std::vector<int64_t> tuple_offsets(const KernelContext& c, const Tensor& idx, const Shape& x, int b) {
  const int k = static_cast<int>(idx.shape()[idx.rank() - 1]);
  const int64_t tuples = k ? idx.num_elements() / k : 0;
  std::vector<int64_t> stride(static_cast<size_t>(x.rank()), 1);
  for (int d = x.rank() - 2; d >= 0; --d) stride[d] = stride[d + 1] * x[d + 1];
  int64_t per_batch_tuples = 1;  // tuples in each batch
  for (int d = b; d < idx.rank() - 1; ++d) per_batch_tuples *= idx.shape()[d];
  std::vector<int64_t> out(static_cast<size_t>(tuples));
  auto read = [&](const auto* p) {
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t offset = b ? (t / per_batch_tuples) * stride[b - 1] : 0;
      for (int j = 0; j < k; ++j) {
        const int64_t dim = x[b + j];
        int64_t v = static_cast<int64_t>(p[t * k + j]);
        if (v < -dim || v >= dim)
          throw_error(Code::kInvalidArgument, "node '" + c.node().name + "' (" + c.node().op + "): index " +
                                                  std::to_string(v) + " (entry " + std::to_string(j) + " of tuple " +
                                                  std::to_string(t) + " of indices " + idx.spec_string() +
                                                  ") is outside [" + std::to_string(-dim) + ", " + std::to_string(dim) +
                                                  ") for dim " + std::to_string(b + j) + " of " + x.to_string());
        if (v < 0) v += dim;
        offset += v * stride[b + j];
      }
      out[t] = offset;
    }
  };
  if (idx.dtype() == DType::kInt32)
    read(idx.data<int32_t>());
  else
    read(idx.data<int64_t>());
  return out;
}

void gather_nd_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& idx = c.input(1);
  const int b = static_cast<int>(c.attrs().get_int("batch_dims"));
  const std::vector<int64_t> at = tuple_offsets(c, idx, x.shape(), b);
  Tensor& y = c.output(0);
  if (at.empty()) return;
  const size_t slice = static_cast<size_t>(y.num_elements() / static_cast<int64_t>(at.size())) * elem_size(x);
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  parallel_for(static_cast<int64_t>(at.size()),
               std::max<int64_t>(1, static_cast<int64_t>(65536 / std::max<size_t>(1, slice))),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t t = lo; t < hi; ++t) std::memcpy(dst + t * slice, src + at[t] * elem_size(x), slice);
               });
}

// out = data with `n` elements at each offset combined with the next `n`
// of updates, in order (so a repeated index sees every update).
void scatter(KernelContext& c, const std::vector<int64_t>& at, int64_t n) {
  const Tensor& data = c.input(0);
  const Tensor& updates = c.input(2);
  Tensor& out = c.output(0);
  std::memcpy(out.raw_data(), data.raw_data(), data.nbytes());
  const std::string& r = c.attrs().get_string("reduction");
  if (r == "none") {
    const size_t es = elem_size(data);
    char* po = static_cast<char*>(out.raw_data());
    const char* pu = static_cast<const char*>(updates.raw_data());
    for (size_t i = 0; i < at.size(); ++i) std::memcpy(po + at[i] * es, pu + i * n * es, n * es);
    return;
  }
  dispatch_arith(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Vec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
    using ConstVec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
    T* po = out.data<T>();
    const T* pu = updates.data<T>();
    for (size_t i = 0; i < at.size(); ++i) {
      Vec o(po + at[i], n);
      ConstVec u(pu + i * n, n);
      if (r == "add")
        o += u;
      else if (r == "mul")
        o *= u;
      else if (r == "max")
        o = o.max(u);
      else
        o = o.min(u);
    }
  });
}

void scatter_nd_kernel(KernelContext& c) {
  const std::vector<int64_t> at = tuple_offsets(c, c.input(1), c.input(0).shape(), 0);
  scatter(c, at, at.empty() ? 0 : c.input(2).num_elements() / static_cast<int64_t>(at.size()));
}

void scatter_elements_kernel(KernelContext& c) { scatter(c, element_offsets(c, c.input(1), c.input(0).shape()), 1); }

// ---- StridedSlice ---------------------------------------------------------------
//
// Walks the slice (x's dims, `spec` counts) row by row over the last dim and
// copies between x (strided) and a dense buffer of the slice: x -> dense for
// the forward op, dense -> x for the gradient.

template <class T, bool kToX>
void strided_walk(T* x, T* dense, const Shape& xs, const ops::StridedSliceSpec& spec) {
  const int r = xs.rank();
  if (r == 0) {
    if constexpr (kToX)
      *x = *dense;
    else
      *dense = *x;
    return;
  }
  std::vector<int64_t> xstride(r, 1);
  for (int d = r - 2; d >= 0; --d) xstride[d] = xstride[d + 1] * xs[d + 1];
  int64_t rows = 1;
  for (int d = 0; d < r - 1; ++d) rows *= spec.size[d];
  const int64_t inner = spec.size[r - 1], step = spec.stride[r - 1];
  if (rows == 0 || inner == 0) return;
  parallel_for(rows, std::max<int64_t>(1, 16384 / inner), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t rem = row, off = spec.begin[r - 1];
      for (int d = r - 2; d >= 0; --d) {
        off += (spec.begin[d] + (rem % spec.size[d]) * spec.stride[d]) * xstride[d];
        rem /= spec.size[d];
      }
      T* xr = x + off;
      T* dr = dense + row * inner;
      if (step == 1) {
        if constexpr (kToX)
          std::memcpy(xr, dr, inner * sizeof(T));
        else
          std::memcpy(dr, xr, inner * sizeof(T));
      } else {
        for (int64_t i = 0; i < inner; ++i) {
          if constexpr (kToX)
            xr[i * step] = dr[i];
          else
            dr[i] = xr[i * step];
        }
      }
    }
  });
}

template <bool kToX>
void strided_walk_bytes(void* x, void* dense, size_t elem, const Shape& xs, const ops::StridedSliceSpec& spec) {
  switch (elem) {
    case 1:
      return strided_walk<uint8_t, kToX>(static_cast<uint8_t*>(x), static_cast<uint8_t*>(dense), xs, spec);
    case 2:
      return strided_walk<uint16_t, kToX>(static_cast<uint16_t*>(x), static_cast<uint16_t*>(dense), xs, spec);
    case 4:
      return strided_walk<uint32_t, kToX>(static_cast<uint32_t*>(x), static_cast<uint32_t*>(dense), xs, spec);
    case 8:
      return strided_walk<uint64_t, kToX>(static_cast<uint64_t*>(x), static_cast<uint64_t*>(dense), xs, spec);
    default:
      throw_error(Code::kUnimplemented, "StridedSlice of " + std::to_string(elem) + "-byte elements");
  }
}

void strided_slice_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  ops::StridedSliceSpec spec = ops::strided_slice_spec(x.shape(), c.attrs());
  strided_walk_bytes<false>(const_cast<void*>(x.raw_data()), y.raw_data(), elem_size(x), x.shape(), spec);
}

void list_set_item_kernel(KernelContext& c) {
  const Tensor &list = c.input(0), &item = c.input(2);
  const int64_t n = list.shape()[0], index = c.input(1).to_int64_vector()->at(0);
  bool rows_fit = list.rank() == item.rank() + 1;
  for (int d = 0; rows_fit && d < item.rank(); ++d) rows_fit = list.shape()[d + 1] == item.shape()[d];
  if (n > 0 && !rows_fit)
    throw_error(Code::kInvalidArgument, "node '" + c.node().name + "': item " + item.spec_string() +
                                            " is not a row of the list " + list.spec_string());
  if (index < 0 || index > n)
    throw_error(Code::kInvalidArgument, "node '" + c.node().name + "': index " + std::to_string(index) +
                                            " is outside a list of " + std::to_string(n) +
                                            " (a row is set or appended)");
  std::vector<int64_t> dims{index == n ? n + 1 : n};
  dims.insert(dims.end(), item.shape().dims().begin(), item.shape().dims().end());
  Tensor& y = c.output(0, Shape(dims));
  char* out = static_cast<char*>(y.raw_data());
  if (n > 0) std::memcpy(out, list.raw_data(), list.nbytes());
  std::memcpy(out + static_cast<size_t>(index) * item.nbytes(), item.raw_data(), item.nbytes());
}

// ONNX Slice's bounds of this run (ops::onnx_slice_bounds) as a walk over x.
void dynamic_strided_slice_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const std::vector<int64_t>& axes = c.attrs().get_ints("axes");
  const std::vector<int64_t>& steps = c.attrs().get_ints("steps");
  const std::vector<int64_t> starts = *c.input(1).to_int64_vector(), ends = *c.input(2).to_int64_vector();
  if (starts.size() != axes.size() || ends.size() != axes.size())
    throw_error(Code::kInvalidArgument, "node '" + c.node().name + "': starts and ends must hold one entry per axis (" +
                                            std::to_string(axes.size()) + "), got " + c.input(1).spec_string() +
                                            " and " + c.input(2).spec_string());
  ops::StridedSliceSpec spec;
  for (int d = 0; d < x.rank(); ++d) {
    spec.begin.push_back(0);
    spec.stride.push_back(1);
    spec.size.push_back(x.shape()[d]);
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    const auto a = static_cast<size_t>(axes[k]);
    const int64_t step = steps[k];
    const auto [first, end] = ops::onnx_slice_bounds(x.shape()[static_cast<int>(a)], starts[k], ends[k], step);
    const int64_t span = step > 0 ? end - first : first - end, stride = step > 0 ? step : -step;
    spec.begin[a] = first;
    spec.stride[a] = step;
    spec.size[a] = span > 0 ? (span + stride - 1) / stride : 0;
  }
  spec.out = Shape(spec.size);
  Tensor& y = c.output(0, spec.out);
  if (y.num_elements() == 0) return;
  strided_walk_bytes<false>(const_cast<void*>(x.raw_data()), y.raw_data(), elem_size(x), x.shape(), spec);
}

void strided_slice_grad_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& dy = c.input(1);
  Tensor& dx = c.output(0);
  std::memset(dx.raw_data(), 0, dx.nbytes());
  ops::StridedSliceSpec spec = ops::strided_slice_spec(x.shape(), c.attrs());
  strided_walk_bytes<true>(dx.raw_data(), const_cast<void*>(dy.raw_data()), sizeof(float), x.shape(), spec);
}

// ---- Tile -------------------------------------------------------------------------
//
// With y viewed as [m_0, n_0, m_1, n_1, ...] and x as [1, n_0, 1, n_1, ...],
// Tile is a broadcast and TileGrad a sum over the m dims.

std::pair<Shape, Shape> tile_views(const Shape& x, const std::vector<int64_t>& m) {
  Shape tiled, single;
  for (int i = 0; i < x.rank(); ++i) {
    tiled.push_back(m[i]);
    tiled.push_back(x[i]);
    single.push_back(1);
    single.push_back(x[i]);
  }
  return {tiled, single};
}

void tile_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  if (y.num_elements() == 0) return;
  auto [tiled, single] = tile_views(x.shape(), c.attrs().get_ints("multiples"));
  Tensor yv = y.reshaped(tiled);
  broadcast_copy(x.reshaped(single), yv);
}

void tile_grad_kernel(KernelContext& c) {
  const Tensor& g = c.input(0);
  const Tensor& x = c.input(1);
  Tensor& dx = c.output(0);
  auto [tiled, single] = tile_views(x.shape(), c.attrs().get_ints("multiples"));
  Tensor dv = dx.reshaped(single);
  sum_to_shape<float>(g.reshaped(tiled), dv);
}

// y = x with, per batch element b, the first lengths[b] steps along the time
// axis reversed: contiguous blocks (the dims after both axes) copied from
// their mirrored time step, in parallel.
void reverse_sequence_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Shape& s = x.shape();
  // (Checked in range by the shape function.)
  auto axis = [&](const char* name) {
    const int64_t a = c.attrs().get_int(name);
    return a < 0 ? a + s.rank() : a;
  };
  const int64_t batch_axis = axis("batch_axis"), time_axis = axis("time_axis");
  const int64_t steps = s[static_cast<int>(time_axis)];
  const std::vector<int64_t> lengths = c.input(1).to_int64_vector().value();  // int32 or int64
  if (static_cast<int64_t>(lengths.size()) != s[static_cast<int>(batch_axis)])
    throw_error(Code::kInvalidArgument, "ReverseSequence: " + std::to_string(lengths.size()) + " lengths for " +
                                            x.spec_string() + " (batch axis " + std::to_string(batch_axis) + ")");
  for (size_t b = 0; b < lengths.size(); ++b)
    if (lengths[b] < 0 || lengths[b] > steps)
      throw_error(Code::kInvalidArgument, "ReverseSequence: length " + std::to_string(lengths[b]) +
                                              " of batch element " + std::to_string(b) + " is outside [0, " +
                                              std::to_string(steps) + "]");
  const int64_t last = std::max(batch_axis, time_axis);
  int64_t block = static_cast<int64_t>(dtype_size(x.dtype()));  // bytes after both axes
  for (int d = static_cast<int>(last) + 1; d < s.rank(); ++d) block *= s[d];
  int64_t blocks = 1, time_stride = 1, batch_stride = 1;  // in blocks
  for (int d = 0; d <= last; ++d) blocks *= s[d];
  for (int d = static_cast<int>(last); d > time_axis; --d) time_stride *= s[d];
  for (int d = static_cast<int>(last); d > batch_axis; --d) batch_stride *= s[d];
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(c.output(0).raw_data());
  parallel_for(blocks, std::max<int64_t>(1, 4096 / std::max<int64_t>(block, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t t = (k / time_stride) % steps, b = (k / batch_stride) % s[static_cast<int>(batch_axis)];
      const int64_t len = lengths[static_cast<size_t>(b)];
      const int64_t from = t < len ? k + (len - 1 - 2 * t) * time_stride : k;
      std::memcpy(dst + k * block, src + from * block, static_cast<size_t>(block));
    }
  });
}

}  // namespace

HUB_REGISTER_KERNEL(Tile, reference, tile_kernel);
HUB_REGISTER_KERNEL(ReverseSequence, reference, reverse_sequence_kernel);
HUB_REGISTER_KERNEL(TileGrad, reference, tile_grad_kernel);
HUB_REGISTER_KERNEL(Split, reference, split_kernel);
HUB_REGISTER_KERNEL(Gather, reference, gather_kernel);
HUB_REGISTER_KERNEL(GatherGrad, reference, gather_grad_kernel);
HUB_REGISTER_KERNEL(GatherElements, reference, gather_elements_kernel);
HUB_REGISTER_KERNEL(GatherElementsGrad, reference, gather_elements_grad_kernel);
HUB_REGISTER_KERNEL(GatherND, reference, gather_nd_kernel);
HUB_REGISTER_KERNEL(ScatterND, reference, scatter_nd_kernel);
HUB_REGISTER_KERNEL(ScatterElements, reference, scatter_elements_kernel);
HUB_REGISTER_KERNEL(StridedSlice, reference, strided_slice_kernel);
HUB_REGISTER_KERNEL(StridedSliceGrad, reference, strided_slice_grad_kernel);
HUB_REGISTER_KERNEL(DynamicStridedSlice, reference, dynamic_strided_slice_kernel);
HUB_REGISTER_KERNEL(ListSetItem, reference, list_set_item_kernel);
HUB_REGISTER_KERNEL(Reshape, reference, alias_kernel);
HUB_REGISTER_KERNEL(ReshapeLike, reference, alias_kernel);
HUB_REGISTER_KERNEL(DynamicReshape, reference, alias_kernel);
HUB_REGISTER_KERNEL(Squeeze, reference, alias_kernel);
HUB_REGISTER_KERNEL(ExpandDims, reference, alias_kernel);
HUB_REGISTER_KERNEL(Transpose, reference, transpose_kernel);
HUB_REGISTER_KERNEL(Pad, reference, pad_kernel);
HUB_REGISTER_KERNEL(PadGrad, reference, pad_grad_kernel);
HUB_REGISTER_KERNEL(Slice, reference, slice_kernel);
HUB_REGISTER_KERNEL(DynamicSlice, reference, dynamic_slice_kernel);
HUB_REGISTER_KERNEL(DynamicRange, reference, range_kernel);
HUB_REGISTER_KERNEL(Shape, reference, shape_kernel);
HUB_REGISTER_KERNEL(Concat, reference, concat_kernel);

}  // namespace hub::cpu

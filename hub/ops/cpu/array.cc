// Reference kernels of the shape ops. Reshape-like ops alias their input;
// Pad/Slice/Concat are box copies (memcpy of contiguous rows, parallel over
// rows); Transpose merges dims that stay adjacent, then copies contiguous rows
// or does tiled 2-D transposes, in parallel. All are
// dtype-agnostic: they move elements of dtype_size bytes.
#include <algorithm>
#include <cstring>

#include "hub/core/parallel.h"
#include "hub/ops/node.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

// Copies the box of extents `ext` from src (dims sd) at offset so to dst (dims
// dd) at offset dof; all row-major, elements of `elem` bytes.
void copy_box(const char* src, std::vector<int64_t> sd, std::vector<int64_t> so, char* dst,
              std::vector<int64_t> dd, std::vector<int64_t> dof, std::vector<int64_t> ext, size_t elem) {
  for (int64_t e : ext)
    if (e == 0) return;
  if (ext.empty()) {
    std::memcpy(dst, src, elem);
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
      std::memcpy(dst + d_off * elem, src + s_off * elem, row_bytes);
    }
  });
}

size_t elem_size(const Tensor& t) { return dtype_size(t.dtype()); }

void alias_kernel(KernelContext& c) { c.set_output(0, c.input(0).reshaped(c.output_spec(0).shape)); }

void pad_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  std::memset(y.raw_data(), 0, y.nbytes());
  const auto& p = c.attrs().get_ints("paddings");
  std::vector<int64_t> at(x.rank()), zero(x.rank(), 0);
  for (int i = 0; i < x.rank(); ++i) at[i] = p[2 * i];
  copy_box(static_cast<const char*>(x.raw_data()), x.shape().dims(), zero, static_cast<char*>(y.raw_data()),
           y.shape().dims(), at, x.shape().dims(), elem_size(x));
}

void slice_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  std::vector<int64_t> zero(x.rank(), 0);
  copy_box(static_cast<const char*>(x.raw_data()), x.shape().dims(), c.attrs().get_ints("begin"),
           static_cast<char*>(y.raw_data()), y.shape().dims(), zero, y.shape().dims(), elem_size(x));
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
    if (i > 0 && perm1[i] == perm1[i - 1] + 1) groups.back().push_back(perm1[i]);
    else groups.push_back({perm1[i]});
  }
  // Order groups by their first input dim to get the merged input dims.
  std::vector<size_t> by_input(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) by_input[g] = g;
  std::sort(by_input.begin(), by_input.end(),
            [&](size_t a, size_t b) { return groups[a][0] < groups[b][0]; });
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

}  // namespace

HUB_REGISTER_KERNEL(Reshape, reference, alias_kernel);
HUB_REGISTER_KERNEL(ReshapeLike, reference, alias_kernel);
HUB_REGISTER_KERNEL(Squeeze, reference, alias_kernel);
HUB_REGISTER_KERNEL(ExpandDims, reference, alias_kernel);
HUB_REGISTER_KERNEL(Transpose, reference, transpose_kernel);
HUB_REGISTER_KERNEL(Pad, reference, pad_kernel);
HUB_REGISTER_KERNEL(Slice, reference, slice_kernel);
HUB_REGISTER_KERNEL(Concat, reference, concat_kernel);

}  // namespace hub::cpu

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

#include "hub/ops/cpu/broadcast.h"
#include "hub/ops/math.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

enum class Reduce { kSum, kMax, kMin, kProd };

template <class T>
T init_value(Reduce r) {
  switch (r) {
    case Reduce::kSum:
      return T(0);
    case Reduce::kMax:
      return std::numeric_limits<T>::lowest();
    case Reduce::kMin:
      return std::numeric_limits<T>::max();
    default:
      return T(1);
  }
}

// One row's reduction, and accumulating a row into a running result.
template <class V>
auto reduce_row(const V& row, Reduce op) {
  switch (op) {
    case Reduce::kSum:
      return row.sum();
    case Reduce::kMax:
      return row.maxCoeff();
    case Reduce::kMin:
      return row.minCoeff();
    default:
      return row.prod();
  }
}
template <class O, class V>
void accumulate(O& o, const V& row, Reduce op) {
  switch (op) {
    case Reduce::kSum:
      o += row;
      break;
    case Reduce::kMax:
      o = o.max(row);
      break;
    case Reduce::kMin:
      o = o.min(row);
      break;
    default:
      o *= row;
      break;
  }
}

// out[a, b] = reduce_r in[a, r, b] for in of shape [A, R, B] (row-major).
template <class T>
void reduce3(const T* in, T* out, int64_t A, int64_t R, int64_t B, Reduce op) {
  using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;
  if (A * B == 0) return;  // no output (a kept dim of size 0)
  if (R == 0) {
    std::fill(out, out + A * B, init_value<T>(op));
    return;
  }
  if (B == 1) {
    parallel_for(A, std::max<int64_t>(1, 16384 / R), [&](int64_t b, int64_t e) {
      for (int64_t a = b; a < e; ++a) {
        Eigen::Map<const Vec> row(in + a * R, R);
        out[a] = reduce_row(row, op);
      }
    });
    return;
  }
  // Rows of B contiguous values are accumulated column by column (vectorized);
  // work items are (a, chunk of B).
  const int64_t chunk = std::min<int64_t>(B, 4096);
  const int64_t chunks = (B + chunk - 1) / chunk;
  parallel_for(A * chunks, std::max<int64_t>(1, 16384 / (R * chunk)), [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      int64_t a = w / chunks, b0 = (w % chunks) * chunk, len = std::min(chunk, B - b0);
      const T* base = in + a * R * B + b0;
      Eigen::Map<Vec> o(out + a * B + b0, len);
      o = Eigen::Map<const Vec>(base, len);
      for (int64_t r = 1; r < R; ++r) {
        Eigen::Map<const Vec> row(base + r * B, len);
        accumulate(o, row, op);
      }
    }
  });
}

// Reduces x over `axes` (sorted, unique) into out (x's kept dims, in order).
// Dims of size 1 are dropped and adjacent dims of the same kind merged; each
// remaining reduced group is reduced in turn, last first.
template <class T>
void reduce_axes(KernelContext& c, const Tensor& x, const std::vector<int>& axes, Tensor& out, Reduce op) {
  std::vector<int64_t> size;
  std::vector<char> red;
  size_t k = 0;
  for (int d = 0; d < x.rank(); ++d) {
    bool r = k < axes.size() && axes[k] == d;
    if (r) ++k;
    int64_t n = x.dim(d);
    if (n == 1) continue;
    if (!size.empty() && red.back() == r)
      size.back() *= n;
    else {
      size.push_back(n);
      red.push_back(r);
    }
  }
  const T* src = x.data<T>();
  Tensor cur;  // intermediate result
  for (;;) {
    int last = -1;
    for (int i = static_cast<int>(size.size()) - 1; i >= 0; --i)
      if (red[i]) {
        last = i;
        break;
      }
    if (last < 0) break;
    int64_t A = 1, B = 1;
    for (int i = 0; i < last; ++i) A *= size[i];
    for (size_t i = last + 1; i < size.size(); ++i) B *= size[i];
    int64_t R = size[last];
    bool final_step = true;
    for (int i = 0; i < last; ++i)
      if (red[i]) final_step = false;
    Tensor dst = final_step ? out : c.temp(x.dtype(), Shape{A * B});
    reduce3<T>(src, dst.data<T>(), A, R, B, op);
    cur = dst;
    src = cur.data<T>();
    // Remove the group; its neighbours are both kept, so they merge.
    if (last > 0 && last + 1 < static_cast<int>(size.size())) {
      size[last - 1] *= size[last + 1];
      size.erase(size.begin() + last, size.begin() + last + 2);
      red.erase(red.begin() + last, red.begin() + last + 2);
    } else {
      size.erase(size.begin() + last);
      red.erase(red.begin() + last);
    }
  }
  if (!cur.defined()) {  // nothing reduced (only size-1 or no axes): a copy
    std::copy(src, src + x.num_elements(), out.data<T>());
  }
}

template <Reduce kOp, bool kMean>
void reduce_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  std::vector<int> axes = ops::normalize_axes(c.attrs().get_ints("axes"), x.rank(), "axes");
  Tensor& out = c.output(0);
  dispatch_arith(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    reduce_axes<T>(c, x, axes, out, kOp);
    if constexpr (kMean) {
      int64_t n = 1;
      for (int a : axes) n *= x.dim(a);
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> o(out.data<T>(), out.num_elements());
      if constexpr (std::is_floating_point_v<T>) {
        o *= T(1) / static_cast<T>(n);  // n == 0: 0 * inf = NaN, as TF
      } else {
        if (n == 0) throw_error(Code::kInvalidArgument, "integer Mean over an empty axis of " + x.spec_string());
        o /= static_cast<T>(n);
      }
    }
  });
}

// dx_i = g * (product of the other elements of i's group): per group the
// products before and after each element, so zeros need no division.
void prod_grad_kernel(KernelContext& c) {
  const Tensor& g = c.input(0);
  const Tensor& x = c.input(1);
  Tensor& dx = c.output(0);
  if (x.num_elements() == 0) return;
  std::vector<int> axes = ops::normalize_axes(c.attrs().get_ints("axes"), x.rank(), "axes");
  // Element strides of x; the offsets of a group's members from its first
  // element; the kept dims (in order) and their strides.
  std::vector<int64_t> stride(x.rank(), 1);
  for (int d = x.rank() - 2; d >= 0; --d) stride[d] = stride[d + 1] * x.dim(d + 1);
  std::vector<int64_t> members{0}, kept_dims, kept_strides;
  size_t k = 0;
  for (int d = 0; d < x.rank(); ++d) {
    if (k < axes.size() && axes[k] == d) {
      ++k;
      std::vector<int64_t> next;
      for (int64_t i = 0; i < x.dim(d); ++i)
        for (int64_t m : members) next.push_back(m + i * stride[d]);
      members = std::move(next);
    } else {
      kept_dims.push_back(x.dim(d));
      kept_strides.push_back(stride[d]);
    }
  }
  std::sort(members.begin(), members.end());
  const int64_t groups = g.num_elements(), n = static_cast<int64_t>(members.size());
  const float* px = x.data<float>();
  const float* pg = g.data<float>();
  float* pd = dx.data<float>();
  parallel_for(groups, std::max<int64_t>(1, 4096 / n), [&](int64_t begin, int64_t end) {
    std::vector<float> before(n);
    for (int64_t grp = begin; grp < end; ++grp) {
      int64_t base = 0, rem = grp;
      for (int i = static_cast<int>(kept_dims.size()) - 1; i >= 0; --i) {
        base += (rem % kept_dims[i]) * kept_strides[i];
        rem /= kept_dims[i];
      }
      float acc = 1.0f;
      for (int64_t j = 0; j < n; ++j) {
        before[j] = acc;
        acc *= px[base + members[j]];
      }
      acc = 1.0f;
      for (int64_t j = n - 1; j >= 0; --j) {
        pd[base + members[j]] = pg[grp] * before[j] * acc;
        acc *= px[base + members[j]];
      }
    }
  });
}

// in viewed as [A, R, B] for a single axis.
void split_at_axis(const Shape& s, int axis, int64_t* A, int64_t* R, int64_t* B) {
  *A = *B = 1;
  for (int d = 0; d < axis; ++d) *A *= s[d];
  *R = s[axis];
  for (int d = axis + 1; d < s.rank(); ++d) *B *= s[d];
}

template <bool kMax>
void arg_extreme_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  int axis = static_cast<int>(c.attrs().get_int("axis"));
  if (axis < 0) axis += x.rank();
  int64_t A, R, B;
  split_at_axis(x.shape(), axis, &A, &R, &B);
  if (R == 0)
    throw_error(Code::kInvalidArgument, std::string(kMax ? "ArgMax" : "ArgMin") + " over empty axis " +
                                            std::to_string(axis) + " of " + x.spec_string());
  int64_t* out = c.output(0).data<int64_t>();
  const bool last = c.attrs().get_bool("select_last");
  dispatch_arith(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    parallel_for(A * B, std::max<int64_t>(1, 16384 / R), [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        int64_t a = w / B, bb = w % B;
        const T* p = px + a * R * B + bb;
        int64_t best = 0;
        T v = p[0];
        for (int64_t r = 1; r < R; ++r)
          if (kMax ? (p[r * B] > v || (last && p[r * B] == v)) : (p[r * B] < v || (last && p[r * B] == v))) {
            v = p[r * B];
            best = r;
          }
        out[w] = best;
      }
    });
  });
}

// Rows of `inner` elements along the axis, summed in order: whole rows at a
// time, outer blocks in parallel.
void cum_sum_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  int axis = static_cast<int>(c.attrs().get_int("axis"));
  if (axis < 0) axis += x.rank();
  const bool exclusive = c.attrs().get_bool("exclusive"), reverse = c.attrs().get_bool("reverse");
  int64_t A, R, B;
  split_at_axis(x.shape(), axis, &A, &R, &B);
  Tensor& y = c.output(0);
  dispatch_arith(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
    using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(A, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, R * B)), [&](int64_t lo, int64_t hi) {
      Eigen::Array<T, Eigen::Dynamic, 1> acc(B);
      for (int64_t a = lo; a < hi; ++a) {
        acc.setZero();
        for (int64_t step = 0; step < R; ++step) {
          const int64_t r = reverse ? R - 1 - step : step;
          const int64_t at = (a * R + r) * B;
          if (exclusive) {
            Row(py + at, B) = acc;
            acc += ConstRow(px + at, B);
          } else {
            acc += ConstRow(px + at, B);
            Row(py + at, B) = acc;
          }
        }
      }
    });
  });
}

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  return false;
}

// The k largest along the last axis (TopK's k attribute, DynamicTopK's input 1).
void top_k(KernelContext& c, int64_t k) {
  const Tensor& x = c.input(0);
  int64_t n = x.dim(x.rank() - 1);
  if (k < 0 || k > n)
    throw_error(Code::kInvalidArgument,
                "TopK: k = " + std::to_string(k) + " is negative or exceeds the last dim of " + x.spec_string());
  int64_t rows = n == 0 ? 0 : x.num_elements() / n;
  Shape out = x.shape();
  out.set_dim(x.rank() - 1, k);
  Tensor& values = c.output(0, out);
  int32_t* idx = c.output(1, out).data<int32_t>();
  dispatch_arith(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* pv = values.data<T>();
    parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n)), [&](int64_t b, int64_t e) {
      std::vector<int32_t> order(n);
      for (int64_t r = b; r < e; ++r) {
        const T* row = px + r * n;
        std::iota(order.begin(), order.end(), 0);
        // NaN ranks above every number (a strict weak order with it).
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](int32_t i, int32_t j) {
          const bool nan_i = is_nan(row[i]), nan_j = is_nan(row[j]);
          if (nan_i || nan_j) return nan_i && (!nan_j || i < j);
          return row[i] > row[j] || (row[i] == row[j] && i < j);
        });
        for (int64_t j = 0; j < k; ++j) {
          idx[r * k + j] = order[j];
          pv[r * k + j] = row[order[j]];
        }
      }
    });
  });
}

void top_k_kernel(KernelContext& c) { top_k(c, c.attrs().get_int("k")); }

void dynamic_top_k_kernel(KernelContext& c) {
  const Tensor& k = c.input(1);
  if (k.num_elements() != 1) throw_error(Code::kInvalidArgument, "TopK: k must hold one value, got " + k.spec_string());
  top_k(c, k.to_int64_vector().value()[0]);
}

void top_k_grad_kernel(KernelContext& c) {
  const Tensor& g = c.input(0);
  const int32_t* idx = c.input(1).data<int32_t>();
  Tensor& out = c.output(0);
  int64_t k = g.dim(g.rank() - 1), n = out.dim(out.rank() - 1);
  int64_t rows = k == 0 ? 0 : g.num_elements() / k;
  dispatch_arith(g.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pg = g.data<T>();
    T* po = out.data<T>();
    std::fill(po, po + out.num_elements(), T(0));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j) {
        int32_t i = idx[r * k + j];
        if (i < 0 || i >= n)
          throw_error(Code::kInvalidArgument,
                      "TopKGrad: index " + std::to_string(i) + " outside [0, " + std::to_string(n) + ")");
        po[r * n + i] += pg[r * k + j];
      }
  });
}

void l2_loss_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Eigen::Map<const Eigen::ArrayXf> v(x.data<float>(), x.num_elements());
  c.output(0).data<float>()[0] = x.num_elements() == 0 ? 0.0f : 0.5f * v.square().sum();
}

}  // namespace

HUB_REGISTER_KERNEL(Sum, reference, reduce_kernel<Reduce::kSum, false>);
HUB_REGISTER_KERNEL(Mean, reference, reduce_kernel<Reduce::kSum, true>);
HUB_REGISTER_KERNEL(Max, reference, reduce_kernel<Reduce::kMax, false>);
HUB_REGISTER_KERNEL(Min, reference, reduce_kernel<Reduce::kMin, false>);
HUB_REGISTER_KERNEL(Prod, reference, reduce_kernel<Reduce::kProd, false>);
HUB_REGISTER_KERNEL(ProdGrad, reference, prod_grad_kernel);
HUB_REGISTER_KERNEL(ArgMax, reference, arg_extreme_kernel<true>);
HUB_REGISTER_KERNEL(ArgMin, reference, arg_extreme_kernel<false>);
HUB_REGISTER_KERNEL(CumSum, reference, cum_sum_kernel);
HUB_REGISTER_KERNEL(TopK, reference, top_k_kernel);
HUB_REGISTER_KERNEL(DynamicTopK, reference, dynamic_top_k_kernel);
HUB_REGISTER_KERNEL(TopKGrad, reference, top_k_grad_kernel);
HUB_REGISTER_KERNEL(L2Loss, reference, l2_loss_kernel);

}  // namespace hub::cpu

// Broadcasting iteration for element-wise CPU kernels.
//
// The operand shapes are right-aligned against the output shape and adjacent
// dimensions with the same broadcast pattern are merged, so the work becomes
// `outer` rows of `inner` contiguous output elements; each operand either
// provides a contiguous row (stride 1) or one value repeated (stride 0) along
// the row. Kernels apply an Eigen expression per row, in parallel over rows.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "hub/core/parallel.h"
#include "hub/tensor/tensor.h"

namespace hub::cpu {

struct BroadcastPlan {
  int64_t outer = 1, inner = 1;
  bool a_inner = true, b_inner = true;        // operand varies along the row
  std::vector<int64_t> out_dims;              // merged outer dims
  std::vector<int64_t> a_strides, b_strides;  // per merged outer dim, in elements
  // Element offsets of row r in a and b.
  void offsets(int64_t row, int64_t* a_off, int64_t* b_off) const;
};

BroadcastPlan plan_broadcast(const Shape& a, const Shape& b, const Shape& out);

// out = f(a_row, b_row) per row, with a_row/b_row Eigen array expressions of
// length `inner` (a Map or a Constant). T: element type of a and b; U of out.
template <class T, class U, class F>
void broadcast_apply(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  BroadcastPlan p = plan_broadcast(a.shape(), b.shape(), out.shape());
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  U* po = out.data<U>();
  using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
  using CMap = Eigen::Map<const Arr>;
  using OMap = Eigen::Map<Eigen::Array<U, Eigen::Dynamic, 1>>;
  int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, p.inner));
  parallel_for(p.outer, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t ao, bo;
      p.offsets(r, &ao, &bo);
      OMap o(po + r * p.inner, p.inner);
      if (p.a_inner && p.b_inner)
        o = f(CMap(pa + ao, p.inner), CMap(pb + bo, p.inner));
      else if (p.a_inner)
        o = f(CMap(pa + ao, p.inner), Arr::Constant(p.inner, pb[bo]));
      else if (p.b_inner)
        o = f(Arr::Constant(p.inner, pa[ao]), CMap(pb + bo, p.inner));
      else
        o = f(Arr::Constant(p.inner, pa[ao]), Arr::Constant(p.inner, pb[bo]));
    }
  });
}

// out = x summed over the dims along which out's shape broadcasts to x's
// (right-aligned; out's size-1 or absent dims). Rows accumulate in order, so
// the result does not depend on the thread count.
template <class T>
void sum_to_shape(const Tensor& x, Tensor& out) {
  using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
  T* po = out.data<T>();
  std::fill(po, po + out.num_elements(), T(0));
  BroadcastPlan p = plan_broadcast(x.shape(), out.shape(), x.shape());
  const T* px = x.data<T>();
  for (int64_t r = 0; r < p.outer; ++r) {
    int64_t xo, to;
    p.offsets(r, &xo, &to);
    Eigen::Map<const Arr> row(px + xo, p.inner);
    if (p.b_inner)
      Eigen::Map<Arr>(po + to, p.inner) += row;
    else
      po[to] += row.sum();
  }
}

// out = x broadcast to out's shape (right-aligned; x's dims 1 or equal), any
// dtype: elements are moved as integers of their size.
void broadcast_copy(const Tensor& x, Tensor& out);

}  // namespace hub::cpu

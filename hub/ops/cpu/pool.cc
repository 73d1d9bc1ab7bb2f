// Reference pooling kernels (NHWC; forward float32, uint8 or int8, backward
// float32): Eigen arrays over the channel
// dimension, parallel over output rows (forward) or (batch, channel block)
// pairs (backward, whose windows overlap in the input). Windows visit only
// their in-bounds taps (hub/ops/pool.h: PoolGeometry::row_taps / col_taps),
// so padding never enters a max or a sum.
#include "hub/ops/pool.h"

#include <Eigen/Core>
#include <algorithm>
#include <limits>
#include <type_traits>

#include "hub/core/parallel.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using Vec = Eigen::Map<Eigen::ArrayXf>;
using CVec = Eigen::Map<const Eigen::ArrayXf>;
constexpr int64_t kChannelBlock = 32;

ops::PoolGeometry geometry_of(const KernelContext& c) {
  return ops::pool_geometry(c.attrs(), c.input(0).shape(), c.node().name);
}

// Runs tap(pos) for the in-bounds taps of window (i, j), rows first, where
// pos = h * W + w is the tap's input pixel.
template <class Tap>
void for_each_tap(const ops::PoolGeometry& g, const ops::PoolTaps& rows, const ops::PoolTaps& cols, Tap tap) {
  for (int64_t a = 0; a < rows.count; ++a) {
    const int64_t row = (rows.first + a * g.dh) * g.w;
    for (int64_t b = 0; b < cols.count; ++b) tap(row + cols.first + b * g.dw);
  }
}

// One window's result (float, over C channels) into the output of type T:
// 8-bit averages rounded half to even (exact for maxima).
template <class T>
void store(const Eigen::ArrayXf& acc, T* out) {
  if constexpr (std::is_same_v<T, float>)
    Vec(out, acc.size()) = acc;
  else
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(out, acc.size()) = acc.rint().template cast<T>();
}

template <bool kMax, class T>
void pool(KernelContext& c) {
  ops::PoolGeometry g = geometry_of(c);
  const T* x = c.input(0).data<T>();
  T* y = c.output(0).data<T>();
  const int64_t C = g.c;
  parallel_for(g.n * g.oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.ow * C)), [&](int64_t b, int64_t e) {
    Eigen::ArrayXf acc(C);
    for (int64_t r = b; r < e; ++r) {
      int64_t n = r / g.oh, i = r % g.oh;
      const T* xn = x + n * g.h * g.w * C;
      const ops::PoolTaps rows = g.row_taps(i);
      for (int64_t j = 0; j < g.ow; ++j) {
        const ops::PoolTaps cols = g.col_taps(j);
        if (kMax)
          acc.setConstant(-std::numeric_limits<float>::infinity());
        else
          acc.setZero();
        for_each_tap(g, rows, cols, [&](int64_t pos) {
          auto in = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(xn + pos * C, C).template cast<float>();
          if (kMax)
            acc = acc.max(in);
          else
            acc += in;
        });
        if (!kMax) acc *= 1.0f / static_cast<float>(g.divisor(rows, cols));
        store<T>(acc, y + ((r * g.ow) + j) * C);
      }
    }
  });
}

template <bool kMax>
void pool_kernel(KernelContext& c) {
  switch (c.input(0).dtype()) {
    case DType::kUInt8:
      return pool<kMax, uint8_t>(c);
    case DType::kInt8:
      return pool<kMax, int8_t>(c);
    default:
      return pool<kMax, float>(c);
  }
}

// The backward kernels' shared driver: zeroes dx (output 0) and runs
// fn(g, len, xn, dxn, gyn) for every (batch n, channel block [c0, c0 + len)) in
// parallel, where xn, dxn point at x[n,0,0,c0], dx[n,0,0,c0] and gyn at
// grad[n,0,0,c0] (grad is input `grad_input`, x is input 0).
template <class F>
void pool_grad_kernel(KernelContext& c, int grad_input, F fn) {
  ops::PoolGeometry g = geometry_of(c);
  const float* x = c.input(0).data<float>();
  const float* gy = c.input(grad_input).data<float>();
  Tensor& out = c.output(0);
  out.fill(0.0);
  float* dx = out.data<float>();
  int64_t blocks = (g.c + kChannelBlock - 1) / kChannelBlock;
  parallel_for(g.n * blocks, 1, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      int64_t n = u / blocks, c0 = (u % blocks) * kChannelBlock;
      int64_t in_off = n * g.h * g.w * g.c + c0;
      fn(g, std::min(kChannelBlock, g.c - c0), x + in_off, dx + in_off, gy + n * g.oh * g.ow * g.c + c0);
    }
  });
}

void max_pool_grad_kernel(KernelContext& c) {
  pool_grad_kernel(c, 2, [](const ops::PoolGeometry& g, int64_t len, const float* xn, float* dxn, const float* gyn) {
    const int64_t C = g.c;
    Eigen::ArrayXf best(len);
    Eigen::Array<int64_t, Eigen::Dynamic, 1> arg(len);
    for (int64_t i = 0; i < g.oh; ++i) {
      const ops::PoolTaps rows = g.row_taps(i);
      for (int64_t j = 0; j < g.ow; ++j) {
        const ops::PoolTaps cols = g.col_taps(j);
        const int64_t first = rows.first * g.w + cols.first;  // the geometry has no empty window
        best = CVec(xn + first * C, len);
        arg.setConstant(first);
        for_each_tap(g, rows, cols, [&](int64_t pos) {
          CVec in(xn + pos * C, len);
          // Strictly greater: the first maximum in scan order keeps the gradient.
          auto better = in > best;
          arg = better.select(Eigen::Array<int64_t, Eigen::Dynamic, 1>::Constant(len, pos), arg);
          best = better.select(in, best);
        });
        const float* gv = gyn + (i * g.ow + j) * C;
        for (int64_t k = 0; k < len; ++k) dxn[arg[k] * C + k] += gv[k];
      }
    }
  });
}

void avg_pool_grad_kernel(KernelContext& c) {
  pool_grad_kernel(c, 1, [](const ops::PoolGeometry& g, int64_t len, const float*, float* dxn, const float* gyn) {
    const int64_t C = g.c;
    Eigen::ArrayXf share(len);
    for (int64_t i = 0; i < g.oh; ++i) {
      const ops::PoolTaps rows = g.row_taps(i);
      for (int64_t j = 0; j < g.ow; ++j) {
        const ops::PoolTaps cols = g.col_taps(j);
        share = CVec(gyn + (i * g.ow + j) * C, len) / static_cast<float>(g.divisor(rows, cols));
        for_each_tap(g, rows, cols, [&](int64_t pos) { Vec(dxn + pos * C, len) += share; });
      }
    }
  });
}

}  // namespace

HUB_REGISTER_KERNEL(MaxPool, reference, pool_kernel<true>);
HUB_REGISTER_KERNEL(AvgPool, reference, pool_kernel<false>);
HUB_REGISTER_KERNEL(MaxPoolGrad, reference, max_pool_grad_kernel);
HUB_REGISTER_KERNEL(AvgPoolGrad, reference, avg_pool_grad_kernel);

}  // namespace hub::cpu

// Reference pooling kernels (NHWC float32): Eigen arrays over the channel
// dimension, parallel over output rows (forward) or (batch, channel block)
// pairs (backward, whose windows overlap in the input).
#include <Eigen/Core>

#include <algorithm>
#include <limits>

#include "hub/core/parallel.h"
#include "hub/ops/pool.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using Vec = Eigen::Map<Eigen::ArrayXf>;
using CVec = Eigen::Map<const Eigen::ArrayXf>;
constexpr int64_t kChannelBlock = 32;

struct Window {
  int64_t h0, h1, w0, w1;  // in-bounds [h0,h1) x [w0,w1)
  int64_t count() const { return (h1 - h0) * (w1 - w0); }
};

Window window(const ops::PoolGeometry& g, int64_t i, int64_t j) {
  int64_t h0 = i * g.sh - g.pad_top, w0 = j * g.sw - g.pad_left;
  return {std::max<int64_t>(h0, 0), std::min(h0 + g.kh, g.h), std::max<int64_t>(w0, 0),
          std::min(w0 + g.kw, g.w)};
}

ops::PoolGeometry geometry_of(const KernelContext& c) {
  return ops::pool_geometry(c.attrs(), c.input(0).shape(), c.node().name);
}

template <bool kMax> void pool_kernel(KernelContext& c) {
  ops::PoolGeometry g = geometry_of(c);
  const float* x = c.input(0).data<float>();
  float* y = c.output(0).data<float>();
  const int64_t C = g.c;
  parallel_for(g.n * g.oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.ow * C)),
               [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t n = r / g.oh, i = r % g.oh;
      const float* xn = x + n * g.h * g.w * C;
      for (int64_t j = 0; j < g.ow; ++j) {
        Window win = window(g, i, j);
        Vec out(y + ((r * g.ow) + j) * C, C);
        if (kMax)
          out.setConstant(-std::numeric_limits<float>::infinity());
        else
          out.setZero();
        for (int64_t hh = win.h0; hh < win.h1; ++hh)
          for (int64_t ww = win.w0; ww < win.w1; ++ww) {
            CVec in(xn + (hh * g.w + ww) * C, C);
            if (kMax)
              out = out.max(in);
            else
              out += in;
          }
        if (!kMax) out *= 1.0f / static_cast<float>(win.count());
      }
    }
  });
}

// The backward kernels' shared driver: zeroes dx (output 0) and runs
// fn(g, len, xn, dxn, gyn) for every (batch n, channel block [c0, c0 + len)) in
// parallel, where xn, dxn point at x[n,0,0,c0], dx[n,0,0,c0] and gyn at
// grad[n,0,0,c0] (grad is input `grad_input`, x is input 0).
template <class F> void pool_grad_kernel(KernelContext& c, int grad_input, F fn) {
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
  pool_grad_kernel(c, 2, [](const ops::PoolGeometry& g, int64_t len, const float* xn, float* dxn,
                            const float* gyn) {
    const int64_t C = g.c;
    Eigen::ArrayXf best(len);
    Eigen::Array<int64_t, Eigen::Dynamic, 1> arg(len);
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j) {
        Window win = window(g, i, j);
        best = CVec(xn + (win.h0 * g.w + win.w0) * C, len);
        arg.setConstant(win.h0 * g.w + win.w0);
        for (int64_t hh = win.h0; hh < win.h1; ++hh)
          for (int64_t ww = win.w0; ww < win.w1; ++ww) {
            int64_t pos = hh * g.w + ww;
            CVec in(xn + pos * C, len);
            // Strictly greater: the first maximum in scan order keeps the gradient.
            auto better = in > best;
            arg = better.select(Eigen::Array<int64_t, Eigen::Dynamic, 1>::Constant(len, pos), arg);
            best = better.select(in, best);
          }
        const float* gv = gyn + (i * g.ow + j) * C;
        for (int64_t k = 0; k < len; ++k) dxn[arg[k] * C + k] += gv[k];
      }
  });
}

void avg_pool_grad_kernel(KernelContext& c) {
  pool_grad_kernel(c, 1, [](const ops::PoolGeometry& g, int64_t len, const float*, float* dxn,
                            const float* gyn) {
    const int64_t C = g.c;
    Eigen::ArrayXf share(len);
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j) {
        Window win = window(g, i, j);
        share = CVec(gyn + (i * g.ow + j) * C, len) / static_cast<float>(win.count());
        for (int64_t hh = win.h0; hh < win.h1; ++hh)
          for (int64_t ww = win.w0; ww < win.w1; ++ww) Vec(dxn + (hh * g.w + ww) * C, len) += share;
      }
  });
}

}  // namespace

HUB_REGISTER_KERNEL(MaxPool, reference, pool_kernel<true>);
HUB_REGISTER_KERNEL(AvgPool, reference, pool_kernel<false>);
HUB_REGISTER_KERNEL(MaxPoolGrad, reference, max_pool_grad_kernel);
HUB_REGISTER_KERNEL(AvgPoolGrad, reference, avg_pool_grad_kernel);

}  // namespace hub::cpu

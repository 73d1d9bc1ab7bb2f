// Reference kernels for Resize and ResizeGrad, as planned by
// hub::ops::resize_plan. Linear: per output row, the four neighbours of every
// element are gathered and lerped as whole-row Eigen array expressions;
// nearest: the chosen pixels are copied. The gradient scatters channel
// vectors, one image per thread.
#include "hub/ops/cpu/resize.h"

#include <Eigen/Core>
#include <algorithm>

#include "hub/core/parallel.h"
#include "hub/ops/registry.h"

namespace hub::cpu {

namespace {
using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;
using MapArr = Eigen::Map<Arr>;
}  // namespace

template <class T>
void resize_nhwc(const T* x, int64_t n, int64_t h, int64_t w, int64_t c,
                 const ops::ResizePlan& plan, float* y) {
  const ops::ResizeAxis& ys = plan.rows;
  const ops::ResizeAxis& xs = plan.cols;
  const int64_t oh = static_cast<int64_t>(ys.lo.size()), ow = static_cast<int64_t>(xs.lo.size());
  const int64_t row = ow * c;
  // Horizontal weights expanded per channel, so that a row's lerp is one array expression.
  Arr fx(row);
  for (int64_t j = 0; j < ow; ++j) fx.segment(j * c, c).setConstant(xs.frac[j]);
  parallel_for(n * oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, row)),
               [&](int64_t begin, int64_t end) {
                 Arr tl(row), tr(row), bl(row), br(row);
                 for (int64_t r = begin; r < end; ++r) {
                   const int64_t b = r / oh, i = r % oh;
                   const T* top = x + (b * h + ys.lo[i]) * w * c;
                   const T* bottom = x + (b * h + ys.hi[i]) * w * c;
                   float* out = y + r * row;
                   if (ys.nearest) {  // copy the chosen pixel of each output position
                     for (int64_t j = 0; j < ow; ++j)
                       std::copy_n(top + xs.lo[j] * c, c, out + j * c);
                     continue;
                   }
                   // Gather the four neighbours of every output element of this row.
                   for (int64_t j = 0; j < ow; ++j) {
                     const int64_t o = j * c, l = xs.lo[j] * c, hi = xs.hi[j] * c;
                     for (int64_t k = 0; k < c; ++k) {
                       tl[o + k] = static_cast<float>(top[l + k]);
                       tr[o + k] = static_cast<float>(top[hi + k]);
                       bl[o + k] = static_cast<float>(bottom[l + k]);
                       br[o + k] = static_cast<float>(bottom[hi + k]);
                     }
                   }
                   const Arr t = tl + (tr - tl) * fx;
                   const Arr bt = bl + (br - bl) * fx;
                   MapArr(out, row) = t + (bt - t) * ys.frac[i];
                 }
               });
}

template void resize_nhwc<float>(const float*, int64_t, int64_t, int64_t, int64_t,
                                 const ops::ResizePlan&, float*);
template void resize_nhwc<uint8_t>(const uint8_t*, int64_t, int64_t, int64_t, int64_t,
                                   const ops::ResizePlan&, float*);

void resize_grad_nhwc(const float* dy, int64_t n, int64_t h, int64_t w, int64_t c,
                      const ops::ResizePlan& plan, float* dx) {
  const ops::ResizeAxis& ys = plan.rows;
  const ops::ResizeAxis& xs = plan.cols;
  const int64_t oh = static_cast<int64_t>(ys.lo.size()), ow = static_cast<int64_t>(xs.lo.size());
  std::fill_n(dx, n * h * w * c, 0.0f);
  parallel_for(n, 1, [&](int64_t begin, int64_t end) {  // images never share a dx pixel
    for (int64_t b = begin; b < end; ++b) {
      float* dxb = dx + b * h * w * c;
      auto pixel = [&](int64_t row, int64_t col) { return MapArr(dxb + (row * w + col) * c, c); };
      for (int64_t i = 0; i < oh; ++i) {
        const float fy = ys.frac[i];
        for (int64_t j = 0; j < ow; ++j) {
          Eigen::Map<const Arr> g(dy + ((b * oh + i) * ow + j) * c, c);
          if (ys.nearest) {
            pixel(ys.lo[i], xs.lo[j]) += g;
            continue;
          }
          const float fx = xs.frac[j];
          pixel(ys.lo[i], xs.lo[j]) += g * ((1 - fy) * (1 - fx));
          pixel(ys.lo[i], xs.hi[j]) += g * ((1 - fy) * fx);
          pixel(ys.hi[i], xs.lo[j]) += g * (fy * (1 - fx));
          pixel(ys.hi[i], xs.hi[j]) += g * (fy * fx);
        }
      }
    }
  });
}

namespace {

void resize_kernel(KernelContext& c) {
  const Shape& s = c.input(0).shape();
  resize_nhwc(c.input(0).data<float>(), s[0], s[1], s[2], s[3],
              ops::resize_plan(c.attrs(), s[1], s[2]), c.output(0).data<float>());
}

void resize_grad_kernel(KernelContext& c) {
  const Shape& s = c.input(0).shape();
  resize_grad_nhwc(c.input(1).data<float>(), s[0], s[1], s[2], s[3],
                   ops::resize_plan(c.attrs(), s[1], s[2]), c.output(0).data<float>());
}

}  // namespace

HUB_REGISTER_KERNEL(Resize, reference, resize_kernel);
HUB_REGISTER_KERNEL(ResizeGrad, reference, resize_grad_kernel);

}  // namespace hub::cpu

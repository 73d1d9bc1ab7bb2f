// Reference resampling routines on a resolved plan (hub/ops/resize.h), shared
// by the Resize kernels and hub::image::resize_bilinear (which is Resize with
// mode linear and asymmetric coordinates, on float or uint8 images).
#pragma once

#include <cstdint>

#include "hub/ops/resize.h"

namespace hub::cpu {

// y [n, rows.lo.size(), cols.lo.size(), c] = x [n, h, w, c] resampled by the
// plan (nearest: a copy of the chosen pixel; linear: lerp along W, then H).
// Parallel over output rows. T is float or uint8_t.
template <class T>
void resize_nhwc(const T* x, int64_t n, int64_t h, int64_t w, int64_t c,
                 const ops::ResizePlan& plan, float* y);

// dx [n, h, w, c] = the adjoint of resize_nhwc applied to dy (every element of
// dx is written). Parallel over images.
void resize_grad_nhwc(const float* dy, int64_t n, int64_t h, int64_t w, int64_t c,
                      const ops::ResizePlan& plan, float* dx);

}  // namespace hub::cpu

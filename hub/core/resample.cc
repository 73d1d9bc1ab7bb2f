// Resampling plans and NHWC resampling (contracts in hub/core/resample.h).
#include "hub/core/resample.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "hub/core/parallel.h"

namespace hub {

namespace {

using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;
using MapArr = Eigen::Map<Arr>;

// The source coordinate of output index x (see resample.h).
double source_coordinate(int64_t x, int64_t in, double scale, CoordinateMode mode) {
  const double xd = static_cast<double>(x);
  const double length = scale * static_cast<double>(in);  // O'
  switch (mode) {
    case CoordinateMode::kHalfPixel:
      return (xd + 0.5) / scale - 0.5;
    case CoordinateMode::kPytorchHalfPixel:
      return length == 1.0 ? 0.0 : (xd + 0.5) / scale - 0.5;
    case CoordinateMode::kAlignCorners:
      return length == 1.0 ? 0.0 : xd * static_cast<double>(in - 1) / (length - 1.0);
    case CoordinateMode::kAsymmetric:
      return xd / scale;
    case CoordinateMode::kTfHalfPixelForNn:
      return (xd + 0.5) / scale;
  }
  return 0.0;
}

int64_t nearest_index(double src, NearestMode mode) {
  const double f = std::floor(src), r = src - f;
  const int64_t fi = static_cast<int64_t>(f);
  switch (mode) {
    case NearestMode::kRoundPreferFloor:
      return r <= 0.5 ? fi : fi + 1;
    case NearestMode::kRoundPreferCeil:
      return r < 0.5 ? fi : fi + 1;
    case NearestMode::kFloor:
      return fi;
    case NearestMode::kCeil:
      return static_cast<int64_t>(std::ceil(src));
  }
  return fi;
}

// Keys' cubic kernel at distance t >= 0.
double cubic_weight(double t, double a) {
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

ResampleAxis cubic_axis(int64_t in, int64_t out, double scale, CoordinateMode coordinates, const CubicOptions& cubic) {
  ResampleAxis a;
  a.taps.resize(4 * out);
  a.weights.resize(4 * out);
  for (int64_t x = 0; x < out; ++x) {
    const double src = source_coordinate(x, in, scale, coordinates);
    const double f = std::floor(src), r = src - f;
    double w[4] = {cubic_weight(r + 1, cubic.a), cubic_weight(r, cubic.a), cubic_weight(1 - r, cubic.a),
                   cubic_weight(2 - r, cubic.a)};
    double sum = 0;
    for (int k = 0; k < 4; ++k) {
      // Far outside coordinates (huge scales) stay finite: every tap then reads an edge.
      const double tap = std::clamp(f - 1 + k, -2.0, static_cast<double>(in) + 1);
      const bool inside = tap >= 0 && tap <= static_cast<double>(in - 1);
      if (cubic.exclude_outside && !inside) w[k] = 0;
      sum += w[k];
      a.taps[4 * x + k] = std::clamp<int64_t>(static_cast<int64_t>(tap), 0, in - 1);
    }
    for (int k = 0; k < 4; ++k)
      a.weights[4 * x + k] = static_cast<float>(cubic.exclude_outside && sum != 0 ? w[k] / sum : w[k]);
  }
  return a;
}

}  // namespace

ResampleAxis resample_axis(int64_t in, int64_t out, double scale, ResampleMode mode, CoordinateMode coordinates,
                           NearestMode nearest, const CubicOptions& cubic) {
  if (mode == ResampleMode::kCubic) return cubic_axis(in, out, scale, coordinates, cubic);
  ResampleAxis a;
  a.nearest = mode == ResampleMode::kNearest;
  a.lo.resize(out);
  a.hi.resize(out);
  a.frac.assign(out, 0.0f);
  for (int64_t x = 0; x < out; ++x) {
    const double src = source_coordinate(x, in, scale, coordinates);
    if (a.nearest) {
      a.lo[x] = a.hi[x] = std::clamp<int64_t>(nearest_index(src, nearest), 0, in - 1);
      continue;
    }
    const double clamped = std::clamp(src, 0.0, static_cast<double>(in - 1));
    const double lo = std::floor(clamped);
    a.lo[x] = static_cast<int64_t>(lo);
    a.hi[x] = std::min(a.lo[x] + 1, in - 1);
    a.frac[x] = static_cast<float>(clamped - lo);
  }
  return a;
}

namespace {

// The cubic plan: per output row, the four input rows summed by their
// weights (one array expression over W*C), then per output pixel its four
// columns of that.
template <class T>
void resample_cubic(const T* x, int64_t n, int64_t h, int64_t w, int64_t c, const ResamplePlan& plan, float* y) {
  const ResampleAxis& ys = plan.rows;
  const ResampleAxis& xs = plan.cols;
  const int64_t oh = ys.size(), ow = xs.size(), in_row = w * c;
  parallel_for(n * oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, in_row)), [&](int64_t begin, int64_t end) {
    Arr rows(in_row), line(in_row);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / oh, i = r % oh;
      rows.setZero();
      for (int k = 0; k < 4; ++k) {
        const T* src = x + (b * h + ys.taps[4 * i + k]) * in_row;
        for (int64_t e = 0; e < in_row; ++e) line[e] = static_cast<float>(src[e]);
        rows += line * ys.weights[4 * i + k];
      }
      for (int64_t j = 0; j < ow; ++j) {
        MapArr out(y + (r * ow + j) * c, c);
        out.setZero();
        for (int k = 0; k < 4; ++k) out += rows.segment(xs.taps[4 * j + k] * c, c) * xs.weights[4 * j + k];
      }
    }
  });
}

// The cubic plan's adjoint: each dy element added to its 4 x 4 taps, times
// their weights. Parallel over images (they never share a dx pixel).
void resample_cubic_grad(const float* dy, int64_t n, int64_t h, int64_t w, int64_t c, const ResamplePlan& plan,
                         float* dx) {
  const ResampleAxis& ys = plan.rows;
  const ResampleAxis& xs = plan.cols;
  const int64_t oh = ys.size(), ow = xs.size();
  parallel_for(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          Eigen::Map<const Arr> g(dy + ((b * oh + i) * ow + j) * c, c);
          for (int ky = 0; ky < 4; ++ky)
            for (int kx = 0; kx < 4; ++kx)
              MapArr(dx + ((b * h + ys.taps[4 * i + ky]) * w + xs.taps[4 * j + kx]) * c, c) +=
                  g * (ys.weights[4 * i + ky] * xs.weights[4 * j + kx]);
        }
  });
}

}  // namespace

template <class T>
void resample_nhwc(const T* x, int64_t n, int64_t h, int64_t w, int64_t c, const ResamplePlan& plan, float* y) {
  if (plan.rows.cubic()) return resample_cubic(x, n, h, w, c, plan, y);
  const ResampleAxis& ys = plan.rows;
  const ResampleAxis& xs = plan.cols;
  const int64_t oh = static_cast<int64_t>(ys.lo.size()), ow = static_cast<int64_t>(xs.lo.size());
  const int64_t row = ow * c;
  // Horizontal weights expanded per channel, so that a row's lerp is one array expression.
  Arr fx(row);
  for (int64_t j = 0; j < ow; ++j) fx.segment(j * c, c).setConstant(xs.frac[j]);
  parallel_for(n * oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, row)), [&](int64_t begin, int64_t end) {
    Arr tl(row), tr(row), bl(row), br(row);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / oh, i = r % oh;
      const T* top = x + (b * h + ys.lo[i]) * w * c;
      const T* bottom = x + (b * h + ys.hi[i]) * w * c;
      float* out = y + r * row;
      if (ys.nearest) {  // copy the chosen pixel of each output position
        for (int64_t j = 0; j < ow; ++j) std::copy_n(top + xs.lo[j] * c, c, out + j * c);
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

template void resample_nhwc<float>(const float*, int64_t, int64_t, int64_t, int64_t, const ResamplePlan&, float*);
template void resample_nhwc<uint8_t>(const uint8_t*, int64_t, int64_t, int64_t, int64_t, const ResamplePlan&, float*);

void resample_nhwc_grad(const float* dy, int64_t n, int64_t h, int64_t w, int64_t c, const ResamplePlan& plan,
                        float* dx) {
  const ResampleAxis& ys = plan.rows;
  const ResampleAxis& xs = plan.cols;
  const int64_t oh = ys.size(), ow = xs.size();
  std::fill_n(dx, n * h * w * c, 0.0f);
  if (ys.cubic()) return resample_cubic_grad(dy, n, h, w, c, plan, dx);
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

}  // namespace hub

// Reference kernels for Resize and ResizeGrad: hub::resample_nhwc and its
// adjoint (hub/core/resample.cc: whole-row Eigen lerps, channel-vector
// scatters) on the plan of hub::ops::resize_plan.
#include "hub/ops/resize.h"

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>

#include "hub/core/parallel.h"
#include "hub/core/resample.h"
#include "hub/ops/registry.h"

namespace hub::cpu {

namespace {

void resize_kernel(KernelContext& c) {
  const Shape& s = c.input(0).shape();
  Tensor& y = c.output(0);
  resample_nhwc(c.input(0).data<float>(), s[0], s[1], s[2], s[3],
                ops::resize_plan(c.attrs(), s[1], s[2], y.shape()[1], y.shape()[2]), y.data<float>());
}

void resize_grad_kernel(KernelContext& c) {
  const Shape &s = c.input(0).shape(), &g = c.input(1).shape();
  resample_nhwc_grad(c.input(1).data<float>(), s[0], s[1], s[2], s[3],
                     ops::resize_plan(c.attrs(), s[1], s[2], g[1], g[2]), c.output(0).data<float>());
}

// ---- GridSample --------------------------------------------------------------
//
// PyTorch's grid_sample, which ONNX's GridSample follows: a grid value g in
// [-1, 1] is the source coordinate (g + 1) / 2 * (size - 1) with
// align_corners, ((g + 1) * size - 1) / 2 without; bilinear and nearest
// sampling pad that coordinate (border: clipped; reflection: mirrored at the
// pixel centres with align_corners, at the outer edges without, then
// clipped), bicubic pads each of its 4x4 taps; taps outside the image read 0.

enum class GridPad { kZeros, kBorder, kReflection };

struct GridSampler {
  GridPad pad = GridPad::kZeros;
  bool align = false;

  explicit GridSampler(const Attrs& a) : align(a.get_bool("align_corners")) {
    const std::string& p = a.get_string("padding_mode");
    pad = p == "border" ? GridPad::kBorder : p == "reflection" ? GridPad::kReflection : GridPad::kZeros;
  }
  float unnormalize(float g, int64_t size) const {
    return align ? (g + 1) / 2 * static_cast<float>(size - 1) : ((g + 1) * static_cast<float>(size) - 1) / 2;
  }
  float scale(int64_t size) const { return align ? static_cast<float>(size - 1) / 2 : static_cast<float>(size) / 2; }
  // v padded along a dim of `size`; *d, the derivative so far, follows it.
  float padded(float v, int64_t size, float* d) const {
    if (pad == GridPad::kZeros) return v;
    if (pad == GridPad::kReflection) {
      const float lo = align ? 0.0f : -0.5f, span = align ? static_cast<float>(size - 1) : static_cast<float>(size);
      if (span <= 0) {
        *d = 0;
        return 0;
      }
      v -= lo;
      if (v < 0) {
        v = -v;
        *d = -*d;
      }
      const float extra = std::fmod(v, span);
      if (static_cast<int64_t>(std::floor(v / span)) % 2 == 0) {
        v = extra + lo;
      } else {
        v = span - extra + lo;
        *d = -*d;
      }
    }
    const float hi = static_cast<float>(size - 1);
    if (!(v > 0)) {  // NaN too
      *d = 0;
      return 0;
    }
    if (v >= hi) {
      *d = 0;
      return hi;
    }
    return v;
  }
};

// floor(v) as an index; far outside any image (NaN included) as -2^31.
int64_t floor_index(float v) {
  return v > -2e9f && v < 2e9f ? static_cast<int64_t>(std::floor(v)) : -(int64_t{1} << 31);
}

// Where bilinear or nearest sampling reads for one grid value: the
// top-left tap and the fractions past it (nearest: the one tap).
struct Taps {
  int64_t x0 = 0, y0 = 0;
  float ax = 0, ay = 0;
  bool nearest = false;
  // Calls f(row, column, weight) for each tap.
  template <class F>
  void each(F f) const {
    if (nearest) {
      f(y0, x0, 1.0f);
      return;
    }
    f(y0, x0, (1 - ax) * (1 - ay));
    f(y0, x0 + 1, ax * (1 - ay));
    f(y0 + 1, x0, (1 - ax) * ay);
    f(y0 + 1, x0 + 1, ax * ay);
  }
};

// The taps of grid value (gx, gy) over an H x W image; *dx and *dy (the
// source coordinates' derivatives in the grid values, starting from the
// caller's) follow the padding.
Taps grid_taps(const GridSampler& s, bool nearest, float gx, float gy, int64_t H, int64_t W, float* dx, float* dy) {
  const float fx = s.padded(s.unnormalize(gx, W), W, dx), fy = s.padded(s.unnormalize(gy, H), H, dy);
  Taps t;
  t.nearest = nearest;
  if (nearest) {  // halves to even
    t.x0 = floor_index(std::nearbyint(fx));
    t.y0 = floor_index(std::nearbyint(fy));
  } else {
    t.x0 = floor_index(fx);
    t.y0 = floor_index(fy);
    t.ax = fx - std::floor(fx);
    t.ay = fy - std::floor(fy);
  }
  return t;
}

// Bicubic weights (A = -0.75) of the taps at -1, 0, 1, 2 from floor(v), t = v - floor(v).
std::array<float, 4> cubic_weights(float t) {
  constexpr float A = -0.75f;
  auto near = [](float x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [](float x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

void grid_sample_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& grid = c.input(1);
  const GridSampler s(c.attrs());
  const std::string& mode = c.attrs().get_string("mode");
  const int64_t N = x.shape()[0], H = x.shape()[1], W = x.shape()[2], C = x.shape()[3];
  const int64_t OH = grid.shape()[1], OW = grid.shape()[2];
  const float* px = x.data<float>();
  const float* pg = grid.data<float>();
  float* py = c.output(0).data<float>();
  using Vec = Eigen::Map<Eigen::ArrayXf>;
  using ConstVec = Eigen::Map<const Eigen::ArrayXf>;
  parallel_for(N * OH * OW, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, C)), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const int64_t n = p / (OH * OW);
      Vec y(py + p * C, C);
      y.setZero();
      auto add = [&](int64_t iy, int64_t ix, float w) {
        if (iy >= 0 && iy < H && ix >= 0 && ix < W && w != 0) y += w * ConstVec(px + ((n * H + iy) * W + ix) * C, C);
      };
      if (mode == "bicubic") {
        const float fx = s.unnormalize(pg[2 * p], W), fy = s.unnormalize(pg[2 * p + 1], H);
        const int64_t x0 = floor_index(fx), y0 = floor_index(fy);
        const std::array<float, 4> wx = cubic_weights(fx - std::floor(fx)), wy = cubic_weights(fy - std::floor(fy));
        for (int j = 0; j < 4; ++j)
          for (int i = 0; i < 4; ++i) {
            float unused = 1;
            const int64_t tx = floor_index(s.padded(static_cast<float>(x0 - 1 + i), W, &unused));
            const int64_t ty = floor_index(s.padded(static_cast<float>(y0 - 1 + j), H, &unused));
            add(ty, tx, wx[i] * wy[j]);
          }
        continue;
      }
      float dx = 1, dy = 1;  // unused: no gradient here
      grid_taps(s, mode == "nearest", pg[2 * p], pg[2 * p + 1], H, W, &dx, &dy).each(add);
    }
  });
}

// (g, x, grid) -> (dx, dgrid): each output's gradient added back to the taps
// it read by their weights (one batch per thread: taps of a batch collide),
// and the bilinear weights' change with the coordinate, times the
// coordinate's with the grid value.
void grid_sample_grad_kernel(KernelContext& c) {
  const Tensor& g = c.input(0);
  const Tensor& x = c.input(1);
  const Tensor& grid = c.input(2);
  const GridSampler s(c.attrs());
  const bool nearest = c.attrs().get_string("mode") == "nearest";
  const int64_t N = x.shape()[0], H = x.shape()[1], W = x.shape()[2], C = x.shape()[3];
  const int64_t OH = grid.shape()[1], OW = grid.shape()[2];
  const float* px = x.data<float>();
  const float* pg = grid.data<float>();
  const float* pgy = g.data<float>();
  float* pdx = c.output(0).data<float>();
  float* pdg = c.output(1).data<float>();
  std::fill(pdx, pdx + x.num_elements(), 0.0f);
  using Vec = Eigen::Map<Eigen::ArrayXf>;
  using ConstVec = Eigen::Map<const Eigen::ArrayXf>;
  parallel_for(N, 1, [&](int64_t lo, int64_t hi) {
    const Eigen::ArrayXf zeros = Eigen::ArrayXf::Zero(C);
    for (int64_t n = lo; n < hi; ++n)
      for (int64_t q = 0; q < OH * OW; ++q) {
        const int64_t p = n * OH * OW + q;
        const ConstVec gy(pgy + p * C, C);
        auto inside = [&](int64_t iy, int64_t ix) { return iy >= 0 && iy < H && ix >= 0 && ix < W; };
        auto value = [&](int64_t iy, int64_t ix) {
          return inside(iy, ix) ? ConstVec(px + ((n * H + iy) * W + ix) * C, C) : ConstVec(zeros.data(), C);
        };
        auto scatter = [&](int64_t iy, int64_t ix, float w) {
          if (inside(iy, ix) && w != 0) Vec(pdx + ((n * H + iy) * W + ix) * C, C) += w * gy;
        };
        float dx = s.scale(W), dy = s.scale(H);
        const Taps t = grid_taps(s, nearest, pg[2 * p], pg[2 * p + 1], H, W, &dx, &dy);
        t.each(scatter);
        if (nearest) {
          pdg[2 * p] = pdg[2 * p + 1] = 0;
          continue;
        }
        const int64_t x0 = t.x0, y0 = t.y0;
        const float ax = t.ax, ay = t.ay;
        const auto v00 = value(y0, x0), v01 = value(y0, x0 + 1), v10 = value(y0 + 1, x0), v11 = value(y0 + 1, x0 + 1);
        const float d_fx = (gy * ((v01 - v00) * (1 - ay) + (v11 - v10) * ay)).sum();
        const float d_fy = (gy * ((v10 - v00) * (1 - ax) + (v11 - v01) * ax)).sum();
        pdg[2 * p] = d_fx * dx;
        pdg[2 * p + 1] = d_fy * dy;
      }
  });
}

// ---- RoiAlign ----------------------------------------------------------------
//
// ONNX's RoiAlign (as Detectron's): per region, bins of (h, w) / (OH, OW),
// each sampled at a grid of sampling_ratio^2 points (adaptive: ceil(h / OH)
// x ceil(w / OW)), each point bilinear (a point more than one pixel outside
// reads 0, else clamped to the image); avg averages the points, max takes
// the largest of each point's four weighted taps. Parallel over bins; the C
// channels of a tap are one contiguous NHWC run.

struct Tap {
  int64_t at[4];
  float w[4];
};

void roi_align_kernel(KernelContext& c) {
  const Tensor &x = c.input(0), &rois = c.input(1), &indices = c.input(2);
  const Shape& s = x.shape();
  const int64_t n = s[0], h = s[1], w = s[2], ch = s[3], r = rois.dim(0);
  if (indices.dim(0) != r)
    throw_error(Code::kInvalidArgument,
                "RoiAlign: " + std::to_string(indices.dim(0)) + " batch indices for " + std::to_string(r) + " regions");
  const std::vector<int64_t> batch = indices.to_int64_vector().value();  // int32 or int64
  for (int64_t i = 0; i < r; ++i)
    if (batch[static_cast<size_t>(i)] < 0 || batch[static_cast<size_t>(i)] >= n)
      throw_error(Code::kInvalidArgument, "RoiAlign: batch index " + std::to_string(batch[static_cast<size_t>(i)]) +
                                              " of region " + std::to_string(i) + " is outside [0, " +
                                              std::to_string(n) + ")");
  const Attrs& a = c.attrs();
  const int64_t oh = a.get_int("output_height"), ow = a.get_int("output_width"), ratio = a.get_int("sampling_ratio");
  const bool max_mode = a.get_string("mode") == "max", half_pixel = a.get_bool("half_pixel");
  const auto scale = static_cast<float>(a.get_float("spatial_scale"));
  const float* xd = x.data<float>();
  const float* rd = rois.data<float>();
  float* y = c.output(0).data<float>();
  parallel_for(r * oh * ow, 1, [&](int64_t begin, int64_t end) {
    std::vector<Tap> taps;
    for (int64_t bin = begin; bin < end; ++bin) {
      const int64_t i = bin / (oh * ow), ph = bin / ow % oh, pw = bin % ow;
      const float* roi = rd + 4 * i;
      const float offset = half_pixel ? 0.5f : 0.0f;
      const float x0 = roi[0] * scale - offset, y0 = roi[1] * scale - offset;
      float rw = roi[2] * scale - offset - x0, rh = roi[3] * scale - offset - y0;
      if (!half_pixel) rw = std::max(rw, 1.0f), rh = std::max(rh, 1.0f);  // legacy: at least one pixel
      const float bh = rh / static_cast<float>(oh), bw = rw / static_cast<float>(ow);
      const int64_t gh = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rh / static_cast<float>(oh)));
      const int64_t gw = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rw / static_cast<float>(ow)));
      taps.clear();
      for (int64_t iy = 0; iy < gh; ++iy) {
        const float yy =
            y0 + static_cast<float>(ph) * bh + (static_cast<float>(iy) + 0.5f) * bh / static_cast<float>(gh);
        for (int64_t ix = 0; ix < gw; ++ix) {
          const float xx =
              x0 + static_cast<float>(pw) * bw + (static_cast<float>(ix) + 0.5f) * bw / static_cast<float>(gw);
          Tap t{{0, 0, 0, 0}, {0, 0, 0, 0}};
          if (!(yy < -1.0f || yy > static_cast<float>(h) || xx < -1.0f || xx > static_cast<float>(w))) {
            float py = std::max(yy, 0.0f), px = std::max(xx, 0.0f);
            auto lo_y = static_cast<int64_t>(py), lo_x = static_cast<int64_t>(px);
            int64_t hi_y = lo_y + 1, hi_x = lo_x + 1;
            if (lo_y >= h - 1) hi_y = lo_y = h - 1, py = static_cast<float>(lo_y);
            if (lo_x >= w - 1) hi_x = lo_x = w - 1, px = static_cast<float>(lo_x);
            const float ly = py - static_cast<float>(lo_y), lx = px - static_cast<float>(lo_x);
            const float hy = 1.0f - ly, hx = 1.0f - lx;
            t = {{lo_y * w + lo_x, lo_y * w + hi_x, hi_y * w + lo_x, hi_y * w + hi_x},
                 {hy * hx, hy * lx, ly * hx, ly * lx}};
          }
          taps.push_back(t);
        }
      }
      const float* img = xd + batch[static_cast<size_t>(i)] * h * w * ch;
      Eigen::Map<Eigen::ArrayXf> out(y + bin * ch, ch);
      auto pixel = [&](int64_t at) { return Eigen::Map<const Eigen::ArrayXf>(img + at * ch, ch); };
      if (taps.empty()) {
        out.setZero();
        continue;
      }
      if (max_mode) {
        for (size_t k = 0; k < taps.size(); ++k) {
          const Tap& t = taps[k];
          const Eigen::ArrayXf v = (pixel(t.at[0]) * t.w[0])
                                       .max(pixel(t.at[1]) * t.w[1])
                                       .max(pixel(t.at[2]) * t.w[2])
                                       .max(pixel(t.at[3]) * t.w[3]);
          if (k == 0)
            out = v;
          else
            out = out.max(v);
        }
      } else {
        out.setZero();
        for (const Tap& t : taps)
          out += pixel(t.at[0]) * t.w[0] + pixel(t.at[1]) * t.w[1] + pixel(t.at[2]) * t.w[2] + pixel(t.at[3]) * t.w[3];
        out /= static_cast<float>(taps.size());
      }
    }
  });
}

}  // namespace

HUB_REGISTER_KERNEL(RoiAlign, reference, roi_align_kernel);
HUB_REGISTER_KERNEL(GridSample, reference, grid_sample_kernel);
HUB_REGISTER_KERNEL(GridSampleGrad, reference, grid_sample_grad_kernel);
HUB_REGISTER_KERNEL(Resize, reference, resize_kernel);
HUB_REGISTER_KERNEL(ResizeGrad, reference, resize_grad_kernel);

}  // namespace hub::cpu

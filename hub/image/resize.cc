#include "hub/image/resize.h"

#include <cstring>

#include "hub/core/parallel.h"
#include "hub/core/resample.h"
#include "hub/image/image.h"

namespace hub::image {
namespace {

struct Nhwc {
  int64_t n, h, w, c;
  bool batched;
};

Nhwc dims_of(const Tensor& t, const char* who) {
  if (t.rank() == 3) return {1, t.dim(0), t.dim(1), t.dim(2), false};
  if (t.rank() == 4) return {t.dim(0), t.dim(1), t.dim(2), t.dim(3), true};
  throw_error(Code::kInvalidArgument, std::string(who) + ": needs [H,W,C] or [N,H,W,C], got " + t.spec_string());
}

Shape shape_of(const Nhwc& d, int64_t h, int64_t w) { return d.batched ? Shape{d.n, h, w, d.c} : Shape{h, w, d.c}; }

}  // namespace

Tensor resize_bilinear(const Tensor& images, int64_t out_height, int64_t out_width) {
  const Nhwc d = dims_of(images, "resize_bilinear");
  if (d.h <= 0 || d.w <= 0 || d.c <= 0 || out_height <= 0 || out_width <= 0)
    throw_error(Code::kInvalidArgument, "resize_bilinear: cannot resize " + images.spec_string() + " to " +
                                            std::to_string(out_height) + "x" + std::to_string(out_width));
  Tensor out(DType::kFloat32, shape_of(d, out_height, out_width));
  if (d.n == 0) return out;
  // TF's resize_bilinear(align_corners=false, half_pixel_centers=false) is
  // resampling's linear mode with asymmetric coordinates (hub/core/resample.h).
  auto axis = [](int64_t in, int64_t out_size) {
    return resample_axis(in, out_size, static_cast<double>(out_size) / static_cast<double>(in), ResampleMode::kLinear,
                         CoordinateMode::kAsymmetric, NearestMode::kRoundPreferFloor);
  };
  const ResamplePlan plan{axis(d.h, out_height), axis(d.w, out_width)};
  if (images.dtype() == DType::kFloat32)
    resample_nhwc(images.data<float>(), d.n, d.h, d.w, d.c, plan, out.data<float>());
  else if (images.dtype() == DType::kUInt8)
    resample_nhwc(images.data<uint8_t>(), d.n, d.h, d.w, d.c, plan, out.data<float>());
  else
    throw_error(Code::kInvalidArgument, "resize_bilinear: needs float32 or uint8, got " + images.spec_string());
  return out;
}

Tensor crop(const Tensor& images, int64_t top, int64_t left, int64_t height, int64_t width) {
  const Nhwc d = dims_of(images, "crop");
  if (top < 0 || left < 0 || height <= 0 || width <= 0 || top + height > d.h || left + width > d.w)
    throw_error(Code::kInvalidArgument, "crop: window top=" + std::to_string(top) + " left=" + std::to_string(left) +
                                            " height=" + std::to_string(height) + " width=" + std::to_string(width) +
                                            " is not inside " + images.spec_string());
  Tensor out(images.dtype(), shape_of(d, height, width));
  const size_t es = dtype_size(images.dtype());
  const size_t row_bytes = static_cast<size_t>(width * d.c) * es;
  const auto* in = static_cast<const char*>(images.raw_data());
  auto* o = static_cast<char*>(out.raw_data());
  parallel_for(d.n * height, 256, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / height, y = r % height;
      const int64_t src = ((b * d.h + top + y) * d.w + left) * d.c;
      std::memcpy(o + r * row_bytes, in + static_cast<size_t>(src) * es, row_bytes);
    }
  });
  return out;
}

Tensor central_crop(const Tensor& images, double fraction) {
  const Nhwc d = dims_of(images, "central_crop");
  if (!(fraction > 0.0 && fraction <= 1.0))
    throw_error(Code::kInvalidArgument, "central_crop: fraction " + std::to_string(fraction) + " not in (0, 1]");
  if (fraction == 1.0) return images;
  const int64_t top = static_cast<int64_t>((d.h - d.h * fraction) / 2.0);
  const int64_t left = static_cast<int64_t>((d.w - d.w * fraction) / 2.0);
  return crop(images, top, left, d.h - 2 * top, d.w - 2 * left);
}

Tensor flip_left_right(const Tensor& images) {
  const Nhwc d = dims_of(images, "flip_left_right");
  Tensor out(images.dtype(), images.shape());
  const size_t px = static_cast<size_t>(d.c) * dtype_size(images.dtype());
  const auto* in = static_cast<const char*>(images.raw_data());
  auto* o = static_cast<char*>(out.raw_data());
  parallel_for(d.n * d.h, 256, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      for (int64_t x = 0; x < d.w; ++x) std::memcpy(o + (r * d.w + x) * px, in + (r * d.w + (d.w - 1 - x)) * px, px);
  });
  return out;
}

Tensor read_resized(const std::string& path, int64_t height, int64_t width, int64_t channels) {
  DecodeOptions d;
  d.channels = static_cast<int>(channels);
  d.min_height = height;
  d.min_width = width;
  return resize_bilinear(read_image(path, d), height, width);
}

}  // namespace hub::image

// Resizing and cropping of float32 images, NHWC.
//
// resize_bilinear follows tf.image.resize_bilinear / tf.compat.v1.image.
// resize_bilinear with align_corners=false, half_pixel_centers=false (the
// behaviour TF-Hub image modules and retrain.py were trained with):
//   scale_y = in_h / out_h,  in_y = y * scale_y,
//   y0 = floor(in_y), y1 = min(y0 + 1, in_h - 1), dy = in_y - y0   (same for x)
//   top    = I[y0,x0] + (I[y0,x1] - I[y0,x0]) * dx
//   bottom = I[y1,x0] + (I[y1,x1] - I[y1,x0]) * dx
//   out[y,x,c] = top + (bottom - top) * dy
// (in_y computed as y / (out_h / in_h) in double: hub::resample_nhwc's linear
// mode with asymmetric coordinates, hub/core/resample.h, which the Resize op
// runs too.)
// Input float32 or uint8, [H,W,C] or [N,H,W,C]; output float32 of the same rank.
// Rows of the batch are processed in parallel with hub::parallel_for.
#pragma once

#include <cstdint>
#include <string>

#include "hub/tensor/tensor.h"

namespace hub::image {

// Throws kInvalidArgument (naming shapes) for a bad rank, an empty input or a
// non-positive output size.
Tensor resize_bilinear(const Tensor& images, int64_t out_height, int64_t out_width);

// An image file as a module takes it: decoded (read_image, a JPEG with DCT
// scaling as long as it stays at least height x width) to `channels`
// channels, then resized with resize_bilinear to [height, width, channels]
// float32 in [0, 1]. Errors name the file.
Tensor read_resized(const std::string& path, int64_t height, int64_t width, int64_t channels);

// tf.image.central_crop: keeps the central `fraction` (0 < fraction <= 1) of
// each spatial dimension; start = int((size - size * fraction) / 2), new size
// = size - 2 * start. [H,W,C] or [N,H,W,C], any dtype.
Tensor central_crop(const Tensor& images, double fraction);

// Copies the window [top, top + height) x [left, left + width); kInvalidArgument
// if it is not inside the image. [H,W,C] or [N,H,W,C], any dtype.
Tensor crop(const Tensor& images, int64_t top, int64_t left, int64_t height, int64_t width);

// Mirrors the width axis. [H,W,C] or [N,H,W,C], any dtype.
Tensor flip_left_right(const Tensor& images);

}  // namespace hub::image

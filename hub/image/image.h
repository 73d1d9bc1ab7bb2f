// Image decoding and encoding for untrusted inputs.
//
// Decoding uses libjpeg-turbo (JPEG) and libspng (PNG), which Debian keeps
// patched; Debian's stb_image is never used to decode. The format is sniffed
// from the magic bytes, never from the file extension.
//
// Guarantees for every decode call:
//  - Before any pixel buffer is allocated, the header's size is checked
//    against two limits, and a larger image is refused with
//    Code::kResourceExhausted (decompression bombs):
//      DecodeOptions::max_pixels  width x height; default 2^27 (128 Mi), or
//                                 $HUB_IMAGE_MAX_PIXELS;
//      DecodeOptions::max_bytes   the decoded size at the stored precision:
//                                 pixels x stored channels x bytes per sample
//                                 (2 for 16-bit PNG), plus, for an interlaced
//                                 PNG, its full-size RGBA buffer (4 samples
//                                 per pixel); default 512 MiB, or
//                                 $HUB_IMAGE_MAX_BYTES.
//    The environment variables are read once, when the first DecodeOptions is
//    made; the `hub` commands that decode images (classify, retrain, train,
//    eval) take their limits from them. libjpeg-turbo's own working memory
//    (e.g. a progressive JPEG's coefficient buffer) is capped at max_bytes too.
//  - Memory: JPEG and non-interlaced PNG decode row by row straight into the
//    8-bit result (one row of the stored format at a time); an interlaced PNG
//    needs the full-size buffer above.
//  - Empty input and data that is not a supported image -> kInvalidArgument;
//    truncated or corrupt data (bad CRC, premature end, libjpeg warnings about
//    corrupt data) -> kCorruption. Messages start with the `name` passed in
//    (usually the file path). libjpeg's errors never call exit().
//  - Grayscale, gray+alpha, RGB, RGBA, palette and 16-bit PNGs are accepted;
//    16-bit samples are reduced to 8 bits (v * 255 / 65535, rounded), alpha is
//    dropped (not composited, as tf.image.decode_png with channels=3), palette
//    and tRNS are expanded. Gray -> RGB replicates; RGB -> gray uses
//    (299 R + 587 G + 114 B + 500) / 1000 on 8-bit values.
//  - CMYK/YCCK JPEGs are refused with kUnimplemented.
// All functions are thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hub/tensor/tensor.h"

namespace hub::image {

enum class Format { kUnknown, kJpeg, kPng, kGif, kBmp, kWebp };

// "jpeg", "png", "gif", "bmp", "webp", "unknown".
std::string_view format_name(Format format);
// Format from the first bytes of the data (at least 12 bytes are looked at
// when present). Never throws.
Format sniff_format(std::span<const uint8_t> data);

// 128 Mi pixels: a float32 RGB image of this size is 1.5 GiB.
inline constexpr int64_t kDefaultMaxPixels = int64_t{1} << 27;
// 512 MiB of decoded samples.
inline constexpr int64_t kDefaultMaxBytes = int64_t{512} << 20;

// The defaults of DecodeOptions: $HUB_IMAGE_MAX_PIXELS / $HUB_IMAGE_MAX_BYTES
// (positive integers) when set, else the constants above. Read once; a
// malformed value throws InvalidArgument naming the variable.
int64_t default_max_pixels();
int64_t default_max_bytes();

struct DecodeOptions {
  int channels = 3;                           // 1 or 3
  int64_t max_pixels = default_max_pixels();  // width * height limit
  int64_t max_bytes = default_max_bytes();    // decoded-size limit (see above)
  // When both are > 0, a JPEG may be decoded with libjpeg-turbo's DCT scaling
  // (1/2, 1/4 or 1/8) as long as the scaled image stays at least this large.
  // The result is then smaller than the stored image. PNG ignores these.
  int64_t min_height = 0;
  int64_t min_width = 0;
};

struct ImageInfo {
  Format format = Format::kUnknown;
  int64_t height = 0;
  int64_t width = 0;
  int channels = 0;  // as stored: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA/CMYK
};

// Reads only the header: format, stored size and channels. Same errors as
// decoding (except that pixel data is not checked).
ImageInfo probe_image(std::span<const uint8_t> data, std::string_view name);

// uint8 [H, W, channels].
Tensor decode_image_u8(std::span<const uint8_t> data, const DecodeOptions& options, std::string_view name);
// float32 [H, W, channels] in [0, 1] (value / 255).
Tensor decode_image(std::span<const uint8_t> data, const DecodeOptions& options, std::string_view name);

// decode_image(hub::read_file_bytes(path)) (hub/core/fileio.h), errors naming the path.
Tensor read_image(const std::string& path, const DecodeOptions& options = {});
Tensor read_image_u8(const std::string& path, const DecodeOptions& options = {});

// uint8 -> float32 in [0, 1], and float32 in [0, 1] -> uint8 (clamped,
// rounded to nearest). Any shape.
Tensor to_float(const Tensor& u8);
Tensor to_uint8(const Tensor& f32);

// Encoders take uint8 [H, W, C] with C = 1 (gray) or 3 (RGB) (4 = RGBA for
// PNG). They throw kInvalidArgument naming the shape otherwise.
std::vector<uint8_t> encode_png(const Tensor& image);
// quality in [1, 100]; 4:2:0 chroma subsampling as libjpeg's default.
std::vector<uint8_t> encode_jpeg(const Tensor& image, int quality = 95);

}  // namespace hub::image

// Decoding and encoding through libjpeg-turbo and libspng (see image.h).
#include "hub/image/image.h"

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>
#include <spng.h>

#include "hub/core/fileio.h"
#include "hub/core/parallel.h"

namespace hub::image {
namespace {

[[noreturn]] void fail(Code code, std::string_view name, const std::string& what) {
  throw_error(code, std::string(name) + ": " + what);
}

void check_channels(int channels, std::string_view name) {
  if (channels != 1 && channels != 3)
    fail(Code::kInvalidArgument, name, "requested " + std::to_string(channels) + " channels (1 or 3 supported)");
}

int64_t env_limit(const char* var, int64_t fallback) {
  const char* v = std::getenv(var);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0' || errno != 0 || n <= 0)
    throw_error(Code::kInvalidArgument, std::string("$") + var + "='" + v + "' is not a positive integer");
  return n;
}

// Refuses an image whose decoded size (see image.h) is over options.max_bytes.
void check_bytes(int64_t height, int64_t width, int64_t samples_per_pixel, int64_t bytes_per_sample,
                 const DecodeOptions& options, std::string_view name, Format format, const char* what) {
  // height, width < 2^32 and the factors are small: no overflow in 128 bits, and
  // the pixel check already bounded height * width.
  const __int128 bytes = static_cast<__int128>(height) * width * samples_per_pixel * bytes_per_sample;
  if (bytes > options.max_bytes)
    fail(Code::kResourceExhausted, name,
         std::string(format_name(format)) + " image of " + std::to_string(width) + "x" + std::to_string(height) +
             " pixels x " + std::to_string(samples_per_pixel) + " " + what + " x " + std::to_string(bytes_per_sample) +
             " bytes decodes to " + std::to_string(static_cast<int64_t>(bytes)) + " bytes, over the limit of " +
             std::to_string(options.max_bytes) + " (DecodeOptions::max_bytes, $HUB_IMAGE_MAX_BYTES)");
}

void check_pixels(int64_t height, int64_t width, const DecodeOptions& options, std::string_view name, Format format) {
  if (height <= 0 || width <= 0)
    fail(Code::kCorruption, name,
         std::string(format_name(format)) + " header has empty size " + std::to_string(width) + "x" +
             std::to_string(height));
  // Both are < 2^32, so the product fits in int64.
  if (height * width > options.max_pixels)
    fail(Code::kResourceExhausted, name,
         std::string(format_name(format)) + " image of " + std::to_string(width) + "x" + std::to_string(height) +
             " pixels exceeds the limit of " + std::to_string(options.max_pixels) +
             " pixels (DecodeOptions::max_pixels, $HUB_IMAGE_MAX_PIXELS)");
}

// ---------------------------------------------------------------- JPEG

struct JpegErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool warning;
};

extern "C" void hub_jpeg_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  err->warning = false;
  std::longjmp(err->jump, 1);
}

// Level -1 is a warning (e.g. "Premature end of JPEG file", "Corrupt JPEG
// data"): a partially gray image must not pass as a good one, so it fails.
extern "C" void hub_jpeg_emit_message(j_common_ptr cinfo, int msg_level) {
  if (msg_level >= 0) return;  // trace messages
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  err->warning = true;
  std::longjmp(err->jump, 1);
}

extern "C" void hub_jpeg_output_message(j_common_ptr) {}

// The decompressor's state lives here so that setjmp's frame owns no C++
// objects that longjmp could skip.
struct JpegDecoder {
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  bool created = false;
  int64_t max_memory = kDefaultMaxBytes;  // libjpeg's working memory cap
  // One CMYK row. A member, not a local of the function that calls setjmp:
  // a longjmp out of libjpeg must not skip a destructor.
  std::vector<uint8_t> cmyk_row;
  ~JpegDecoder() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

void throw_jpeg_error(const JpegDecoder& d, std::string_view name) {
  const int code = d.err.pub.msg_code;
  if (!d.err.warning && (code == JERR_OUT_OF_MEMORY || code == JERR_NO_BACKING_STORE))
    fail(Code::kResourceExhausted, name,
         "JPEG needs more working memory than the limit of " + std::to_string(d.max_memory) +
             " bytes (DecodeOptions::max_bytes, $HUB_IMAGE_MAX_BYTES): " + d.err.message);
  fail(Code::kCorruption, name, std::string(d.err.warning ? "corrupt JPEG data: " : "invalid JPEG: ") + d.err.message);
}

// Header only; returns false on a libjpeg error (message in d.err).
bool jpeg_read_header_safe(JpegDecoder& d, std::span<const uint8_t> data) {
  d.cinfo.err = jpeg_std_error(&d.err.pub);
  d.err.pub.error_exit = hub_jpeg_error_exit;
  d.err.pub.emit_message = hub_jpeg_emit_message;
  d.err.pub.output_message = hub_jpeg_output_message;
  d.err.message[0] = '\0';
  d.err.warning = false;
  if (setjmp(d.err.jump)) return false;
  jpeg_create_decompress(&d.cinfo);
  d.created = true;
  d.cinfo.mem->max_memory_to_use = static_cast<long>(d.max_memory);
  jpeg_mem_src(&d.cinfo, data.data(), static_cast<unsigned long>(data.size()));
  jpeg_read_header(&d.cinfo, TRUE);
  return true;
}

// Picks the largest DCT down-scaling (1/8, 1/4, 1/2) keeping the output at
// least min_height x min_width, then decodes rows into `out` (allocated by
// `alloc(h, w)` once the output size is known). Returns false on error.
// A CMYK (or YCCK) JPEG is decoded to CMYK and converted per pixel as
// TensorFlow's decode_jpeg does: with an Adobe marker the samples are stored
// inverted (Photoshop's convention), R = C * K / 255; without one,
// R = (255 - C) * (255 - K) / 255; likewise G from M and B from Y.
template <class Alloc>
bool jpeg_decode_safe(JpegDecoder& d, const DecodeOptions& options, Alloc&& alloc, uint8_t** out) {
  if (setjmp(d.err.jump)) return false;
  const bool cmyk = d.cinfo.jpeg_color_space == JCS_CMYK || d.cinfo.jpeg_color_space == JCS_YCCK;
  d.cinfo.out_color_space = cmyk ? JCS_CMYK : options.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  d.cinfo.scale_num = 1;
  d.cinfo.scale_denom = 1;
  if (options.min_height > 0 && options.min_width > 0) {
    for (unsigned denom : {8u, 4u, 2u}) {
      // libjpeg's scaled size is ceil(size / denom).
      const int64_t h = (static_cast<int64_t>(d.cinfo.image_height) + denom - 1) / denom;
      const int64_t w = (static_cast<int64_t>(d.cinfo.image_width) + denom - 1) / denom;
      if (h >= options.min_height && w >= options.min_width) {
        d.cinfo.scale_denom = denom;
        break;
      }
    }
  }
  jpeg_calc_output_dimensions(&d.cinfo);
  *out = alloc(d.cinfo.output_height, d.cinfo.output_width);
  jpeg_start_decompress(&d.cinfo);
  const size_t width = d.cinfo.output_width, stride = width * options.channels;
  d.cmyk_row.resize(cmyk ? width * 4 : 0);
  const bool inverted = d.cinfo.saw_Adobe_marker;
  while (d.cinfo.output_scanline < d.cinfo.output_height) {
    uint8_t* dest = *out + stride * d.cinfo.output_scanline;
    JSAMPROW row = cmyk ? d.cmyk_row.data() : dest;
    jpeg_read_scanlines(&d.cinfo, &row, 1);
    if (!cmyk) continue;
    for (size_t x = 0; x < width; ++x) {
      const uint8_t* p = &d.cmyk_row[x * 4];
      uint32_t rgb[3];
      for (int k = 0; k < 3; ++k)
        rgb[k] = inverted ? uint32_t{p[k]} * p[3] / 255u : (255u - p[k]) * (255u - p[3]) / 255u;
      if (options.channels == 1)
        dest[x] = static_cast<uint8_t>((299u * rgb[0] + 587u * rgb[1] + 114u * rgb[2] + 500u) / 1000u);
      else
        for (int k = 0; k < 3; ++k) dest[x * 3 + k] = static_cast<uint8_t>(rgb[k]);
    }
  }
  jpeg_finish_decompress(&d.cinfo);
  return true;
}

ImageInfo probe_jpeg(std::span<const uint8_t> data, std::string_view name) {
  JpegDecoder d;
  if (!jpeg_read_header_safe(d, data)) throw_jpeg_error(d, name);
  return {Format::kJpeg, d.cinfo.image_height, d.cinfo.image_width, d.cinfo.num_components};
}

Tensor decode_jpeg(std::span<const uint8_t> data, const DecodeOptions& options, std::string_view name) {
  JpegDecoder d;
  d.max_memory = options.max_bytes;
  if (!jpeg_read_header_safe(d, data)) throw_jpeg_error(d, name);
  check_pixels(d.cinfo.image_height, d.cinfo.image_width, options, name, Format::kJpeg);
  check_bytes(d.cinfo.image_height, d.cinfo.image_width, d.cinfo.num_components, 1, options, name, Format::kJpeg,
              "components");
  Tensor result;
  auto alloc = [&](int64_t h, int64_t w) {
    result = Tensor(DType::kUInt8, Shape{h, w, options.channels});
    return result.data<uint8_t>();
  };
  uint8_t* out = nullptr;
  if (!jpeg_decode_safe(d, options, alloc, &out)) throw_jpeg_error(d, name);
  return result;
}

// ---------------------------------------------------------------- PNG

struct SpngCtx {
  spng_ctx* ctx;
  explicit SpngCtx(int flags) : ctx(spng_ctx_new(flags)) {
    if (!ctx) throw_error(Code::kResourceExhausted, "spng_ctx_new failed");
  }
  ~SpngCtx() { spng_ctx_free(ctx); }
  SpngCtx(const SpngCtx&) = delete;
  SpngCtx& operator=(const SpngCtx&) = delete;
};

void png_check(int rc, std::string_view name, const char* what) {
  if (rc == 0) return;
  fail(Code::kCorruption, name, std::string("invalid PNG (") + what + "): " + spng_strerror(rc));
}

spng_ihdr png_header(SpngCtx& c, std::span<const uint8_t> data, std::string_view name) {
  // Bounds memory spent on ancillary chunks (text, ICC profiles...).
  spng_set_chunk_limits(c.ctx, size_t{16} << 20, size_t{64} << 20);
  png_check(spng_set_png_buffer(c.ctx, data.data(), data.size()), name, "buffer");
  spng_ihdr ihdr{};
  png_check(spng_get_ihdr(c.ctx, &ihdr), name, "header");
  return ihdr;
}

int png_stored_channels(const spng_ihdr& ihdr) {
  switch (ihdr.color_type) {
    case SPNG_COLOR_TYPE_GRAYSCALE:
      return 1;
    case SPNG_COLOR_TYPE_GRAYSCALE_ALPHA:
      return 2;
    case SPNG_COLOR_TYPE_TRUECOLOR_ALPHA:
      return 4;
    default:
      return 3;  // truecolor, indexed
  }
}

// 16-bit samples to 8 bits: v * 255 / 65535, rounded.
inline uint8_t narrow16(uint16_t v) { return static_cast<uint8_t>((uint32_t{v} * 255u + 32767u) / 65535u); }

// One decoded RGBA row (8- or 16-bit samples) into `out_c` 8-bit channels.
// `gray`: the PNG is gray (R = G = B), so one channel is R, unweighted.
void store_row(const uint8_t* rgba8, const uint16_t* rgba16, int64_t width, bool gray, int out_c, uint8_t* out) {
  for (int64_t x = 0; x < width; ++x) {
    uint8_t px[3];
    for (int k = 0; k < 3; ++k) px[k] = rgba16 ? narrow16(rgba16[x * 4 + k]) : rgba8[x * 4 + k];
    if (out_c == 1) {
      out[x] = gray ? px[0] : static_cast<uint8_t>((299u * px[0] + 587u * px[1] + 114u * px[2] + 500u) / 1000u);
    } else {
      out[x * 3] = px[0];
      out[x * 3 + 1] = px[1];
      out[x * 3 + 2] = px[2];
    }
  }
}

Tensor decode_png(std::span<const uint8_t> data, const DecodeOptions& options, std::string_view name) {
  SpngCtx c(0);
  const spng_ihdr ihdr = png_header(c, data, name);
  check_pixels(ihdr.height, ihdr.width, options, name, Format::kPng);
  const int64_t h = ihdr.height, w = ihdr.width;
  const bool sixteen = ihdr.bit_depth == 16;
  const bool interlaced = ihdr.interlace_method != 0;
  const int stored = png_stored_channels(ihdr);
  check_bytes(h, w, stored, sixteen ? 2 : 1, options, name, Format::kPng, "channels");
  // Deinterlacing writes each row in up to seven passes, so an interlaced
  // image is decoded into a full-size RGBA buffer first; count it too.
  if (interlaced) check_bytes(h, w, 4, sixteen ? 2 : 1, options, name, Format::kPng, "RGBA samples (interlaced)");
  const int fmt = sixteen ? SPNG_FMT_RGBA16 : SPNG_FMT_RGBA8;
  size_t image_size = 0;
  png_check(spng_decoded_image_size(c.ctx, fmt, &image_size), name, "size");
  const size_t row_bytes = image_size / static_cast<size_t>(h);
  png_check(spng_decode_image(c.ctx, nullptr, 0, fmt, SPNG_DECODE_PROGRESSIVE), name, "data");
  Tensor result(DType::kUInt8, Shape{h, w, options.channels});
  uint8_t* out = result.data<uint8_t>();
  const bool gray = stored <= 2;
  const size_t out_row = static_cast<size_t>(w) * options.channels;
  // Rows are 8- or 16-bit RGBA; uint16_t storage keeps 16-bit rows aligned.
  std::vector<uint16_t> rows((interlaced ? image_size : row_bytes) / 2 + 1);
  auto* base = reinterpret_cast<uint8_t*>(rows.data());
  int rc = 0;
  for (;;) {
    spng_row_info info{};
    rc = spng_get_row_info(c.ctx, &info);
    if (rc != 0) break;
    uint8_t* row = interlaced ? base + row_bytes * info.row_num : base;
    rc = spng_decode_row(c.ctx, row, row_bytes);
    if (rc != 0 && rc != SPNG_EOI) break;
    if (!interlaced)
      store_row(sixteen ? nullptr : row, sixteen ? reinterpret_cast<uint16_t*>(row) : nullptr, w, gray,
                options.channels, out + out_row * info.row_num);
    if (rc == SPNG_EOI) break;
  }
  if (rc != SPNG_EOI) png_check(rc, name, "data");
  if (interlaced) {
    parallel_for(h, 64, [&](int64_t begin, int64_t end) {
      for (int64_t y = begin; y < end; ++y) {
        const uint8_t* row = base + row_bytes * y;
        store_row(sixteen ? nullptr : row, sixteen ? reinterpret_cast<const uint16_t*>(row) : nullptr, w, gray,
                  options.channels, out + out_row * y);
      }
    });
  }
  // Reads on to IEND: a file cut after the pixel data (or with a bad CRC
  // there) is corrupt even though the pixels came out.
  png_check(spng_decode_chunks(c.ctx), name, "trailing chunks");
  return result;
}

ImageInfo probe_png(std::span<const uint8_t> data, std::string_view name) {
  SpngCtx c(0);
  const spng_ihdr ihdr = png_header(c, data, name);
  return {Format::kPng, ihdr.height, ihdr.width, png_stored_channels(ihdr)};
}

void check_supported(Format f, std::span<const uint8_t> data, std::string_view name) {
  if (data.empty()) fail(Code::kInvalidArgument, name, "empty file is not an image");
  if (f == Format::kJpeg || f == Format::kPng) return;
  if (f == Format::kUnknown) fail(Code::kInvalidArgument, name, "not a JPEG or PNG image (unrecognized magic bytes)");
  fail(Code::kInvalidArgument, name, std::string(format_name(f)) + " images are not supported (only JPEG and PNG)");
}

}  // namespace

int64_t default_max_pixels() {
  static const int64_t v = env_limit("HUB_IMAGE_MAX_PIXELS", kDefaultMaxPixels);
  return v;
}

int64_t default_max_bytes() {
  static const int64_t v = env_limit("HUB_IMAGE_MAX_BYTES", kDefaultMaxBytes);
  return v;
}

std::string_view format_name(Format format) {
  switch (format) {
    case Format::kJpeg:
      return "jpeg";
    case Format::kPng:
      return "png";
    case Format::kGif:
      return "gif";
    case Format::kBmp:
      return "bmp";
    case Format::kWebp:
      return "webp";
    case Format::kUnknown:
      break;
  }
  return "unknown";
}

Format sniff_format(std::span<const uint8_t> d) {
  auto starts = [&](std::string_view magic, size_t at = 0) {
    return d.size() >= at + magic.size() && std::memcmp(d.data() + at, magic.data(), magic.size()) == 0;
  };
  if (starts("\x89PNG\r\n\x1a\n")) return Format::kPng;
  if (starts("\xff\xd8\xff")) return Format::kJpeg;
  if (starts("GIF87a") || starts("GIF89a")) return Format::kGif;
  if (starts("BM")) return Format::kBmp;
  if (starts("RIFF") && starts("WEBP", 8)) return Format::kWebp;
  return Format::kUnknown;
}

ImageInfo probe_image(std::span<const uint8_t> data, std::string_view name) {
  const Format f = sniff_format(data);
  check_supported(f, data, name);
  return f == Format::kJpeg ? probe_jpeg(data, name) : probe_png(data, name);
}

Tensor decode_image_u8(std::span<const uint8_t> data, const DecodeOptions& options, std::string_view name) {
  check_channels(options.channels, name);
  const Format f = sniff_format(data);
  check_supported(f, data, name);
  return f == Format::kJpeg ? decode_jpeg(data, options, name) : decode_png(data, options, name);
}

Tensor decode_image(std::span<const uint8_t> data, const DecodeOptions& options, std::string_view name) {
  return to_float(decode_image_u8(data, options, name));
}

namespace {
std::span<const uint8_t> byte_span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
}  // namespace

Tensor read_image(const std::string& path, const DecodeOptions& options) {
  return decode_image(byte_span(read_file_bytes(path)), options, path);
}

Tensor read_image_u8(const std::string& path, const DecodeOptions& options) {
  return decode_image_u8(byte_span(read_file_bytes(path)), options, path);
}

Tensor to_float(const Tensor& u8) {
  Tensor out(DType::kFloat32, u8.shape());
  const uint8_t* in = u8.data<uint8_t>();
  float* o = out.data<float>();
  parallel_for(out.num_elements(), 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i] = static_cast<float>(in[i]) * (1.0f / 255.0f);
  });
  return out;
}

Tensor to_uint8(const Tensor& f32) {
  Tensor out(DType::kUInt8, f32.shape());
  const float* in = f32.data<float>();
  uint8_t* o = out.data<uint8_t>();
  parallel_for(out.num_elements(), 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float v = in[i] * 255.0f + 0.5f;
      v = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
      o[i] = static_cast<uint8_t>(v);
    }
  });
  return out;
}

namespace {
void check_encodable(const Tensor& image, bool allow_rgba, const char* who) {
  if (image.dtype() != DType::kUInt8 || image.rank() != 3 || image.dim(0) <= 0 || image.dim(1) <= 0 ||
      !(image.dim(2) == 1 || image.dim(2) == 3 || (allow_rgba && image.dim(2) == 4)))
    throw_error(Code::kInvalidArgument, std::string(who) + ": needs uint8 [H, W, 1|3" + (allow_rgba ? "|4" : "") +
                                            "], got " + image.spec_string());
  if (image.dim(0) > 65500 || image.dim(1) > 65500)
    throw_error(Code::kInvalidArgument, std::string(who) + ": image too large: " + image.spec_string());
}
}  // namespace

std::vector<uint8_t> encode_png(const Tensor& image) {
  check_encodable(image, true, "encode_png");
  SpngCtx c(SPNG_CTX_ENCODER);
  spng_set_option(c.ctx, SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr ihdr{};
  ihdr.width = static_cast<uint32_t>(image.dim(1));
  ihdr.height = static_cast<uint32_t>(image.dim(0));
  ihdr.bit_depth = 8;
  const int64_t ch = image.dim(2);
  ihdr.color_type = ch == 1   ? SPNG_COLOR_TYPE_GRAYSCALE
                    : ch == 3 ? SPNG_COLOR_TYPE_TRUECOLOR
                              : SPNG_COLOR_TYPE_TRUECOLOR_ALPHA;
  auto check = [](int rc) {
    if (rc) throw_error(Code::kInternal, std::string("encode_png: ") + spng_strerror(rc));
  };
  check(spng_set_ihdr(c.ctx, &ihdr));
  check(spng_encode_image(c.ctx, image.data<uint8_t>(), image.nbytes(), SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE));
  size_t len = 0;
  int err = 0;
  void* buf = spng_get_png_buffer(c.ctx, &len, &err);
  check(err);
  std::vector<uint8_t> out(static_cast<uint8_t*>(buf), static_cast<uint8_t*>(buf) + len);
  std::free(buf);
  return out;
}

namespace {
struct JpegEncoder {
  jpeg_compress_struct cinfo;
  JpegErrorManager err;
  unsigned char* buf = nullptr;
  unsigned long len = 0;
  bool created = false;
  ~JpegEncoder() {
    if (created) jpeg_destroy_compress(&cinfo);
    std::free(buf);
  }
};

bool jpeg_encode_safe(JpegEncoder& e, const uint8_t* pixels, int h, int w, int c, int quality) {
  e.cinfo.err = jpeg_std_error(&e.err.pub);
  e.err.pub.error_exit = hub_jpeg_error_exit;
  e.err.pub.emit_message = hub_jpeg_emit_message;
  e.err.pub.output_message = hub_jpeg_output_message;
  if (setjmp(e.err.jump)) return false;
  jpeg_create_compress(&e.cinfo);
  e.created = true;
  jpeg_mem_dest(&e.cinfo, &e.buf, &e.len);
  e.cinfo.image_width = static_cast<JDIMENSION>(w);
  e.cinfo.image_height = static_cast<JDIMENSION>(h);
  e.cinfo.input_components = c;
  e.cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&e.cinfo);
  jpeg_set_quality(&e.cinfo, quality, TRUE);
  jpeg_start_compress(&e.cinfo, TRUE);
  const size_t stride = static_cast<size_t>(w) * c;
  while (e.cinfo.next_scanline < e.cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels) + stride * e.cinfo.next_scanline;
    jpeg_write_scanlines(&e.cinfo, &row, 1);
  }
  jpeg_finish_compress(&e.cinfo);
  return true;
}
}  // namespace

std::vector<uint8_t> encode_jpeg(const Tensor& image, int quality) {
  check_encodable(image, false, "encode_jpeg");
  if (quality < 1 || quality > 100)
    throw_error(Code::kInvalidArgument, "encode_jpeg: quality " + std::to_string(quality) + " not in [1, 100]");
  JpegEncoder e;
  if (!jpeg_encode_safe(e, image.data<uint8_t>(), static_cast<int>(image.dim(0)), static_cast<int>(image.dim(1)),
                        static_cast<int>(image.dim(2)), quality))
    throw_error(Code::kInternal, std::string("encode_jpeg: ") + e.err.message);
  return std::vector<uint8_t>(e.buf, e.buf + e.len);
}

}  // namespace hub::image

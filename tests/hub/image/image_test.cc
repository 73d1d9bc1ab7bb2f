// Decoding/encoding tests. Test images are written by stb_image_write and by
// libspng/libjpeg directly (independent of the decoder under test), or crafted
// byte by byte for the hostile cases.
#include <doctest/doctest.h>
#include <spng.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#include <stb/stb_image_write.h>

#include "hub/core/fileio.h"
#include "hub/image/image.h"
#include "subprocess.h"
#include "testutil.h"

using namespace hub;
using namespace hub::image;
using hub::testing::expect_error;
using Bytes = std::vector<uint8_t>;

namespace {

void append_bytes(void* ctx, void* data, int size) {
  auto* out = static_cast<Bytes*>(ctx);
  out->insert(out->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
}

// Deterministic test pattern, h x w x c.
Bytes pattern(int h, int w, int c) {
  Bytes p(static_cast<size_t>(h) * w * c);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) p[(y * w + x) * c + k] = static_cast<uint8_t>((y * 37 + x * 11 + k * 85) % 256);
  return p;
}

// Smooth pattern (JPEG reproduces it within a few levels).
Bytes smooth(int h, int w, int c) {
  Bytes p(static_cast<size_t>(h) * w * c);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k)
        p[(y * w + x) * c + k] = static_cast<uint8_t>(40 + (y * 150) / h + (x * 50) / w + k * 10);
  return p;
}

Bytes stb_png(const Bytes& px, int h, int w, int c) {
  Bytes out;
  REQUIRE(stbi_write_png_to_func(append_bytes, &out, w, h, c, px.data(), w * c));
  return out;
}

Bytes stb_jpg(const Bytes& px, int h, int w, int c, int quality = 95) {
  Bytes out;
  REQUIRE(stbi_write_jpg_to_func(append_bytes, &out, w, h, c, px.data(), quality));
  return out;
}

uint32_t crc32(const uint8_t* p, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

void png_chunk(Bytes& b, const char* type, const Bytes& data) {
  put_be32(b, static_cast<uint32_t>(data.size()));
  Bytes td(type, type + 4);
  td.insert(td.end(), data.begin(), data.end());
  b.insert(b.end(), td.begin(), td.end());
  put_be32(b, crc32(td.data(), td.size()));
}

// A PNG whose IHDR (with a valid CRC) claims w x h (RGB, 8-bit unless told);
// no pixel data follows.
Bytes png_bomb(uint32_t w, uint32_t h, uint8_t depth = 8, uint8_t color = 2) {
  Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  ihdr.insert(ihdr.end(), {depth, color, 0, 0, 0});
  png_chunk(b, "IHDR", ihdr);
  png_chunk(b, "IEND", {});
  return b;
}

// An Adam7-interlaced PNG written by hand (spng's encoder does not
// interlace): `bpp` bytes per pixel of stored samples in `px` (big-endian for
// 16-bit), each pass's rows with filter 0, deflated by zlib.
Bytes interlaced_png(const Bytes& px, uint32_t w, uint32_t h, uint8_t depth, uint8_t color, size_t bpp) {
  static const int kPass[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                  {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  Bytes raw;
  for (const auto& p : kPass) {
    for (uint32_t y = p[1]; y < h; y += p[3]) {
      if (static_cast<uint32_t>(p[0]) >= w) break;
      raw.push_back(0);
      for (uint32_t x = p[0]; x < w; x += p[2])
        raw.insert(raw.end(), px.begin() + (static_cast<size_t>(y) * w + x) * bpp,
                   px.begin() + (static_cast<size_t>(y) * w + x + 1) * bpp);
    }
  }
  uLongf n = compressBound(raw.size());
  Bytes z(n);
  REQUIRE(compress(z.data(), &n, raw.data(), raw.size()) == Z_OK);
  z.resize(n);
  Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  ihdr.insert(ihdr.end(), {depth, color, 0, 0, 1});
  png_chunk(b, "IHDR", ihdr);
  png_chunk(b, "IDAT", z);
  png_chunk(b, "IEND", {});
  return b;
}

Bytes spng_encode(const void* px, size_t len, uint32_t w, uint32_t h, uint8_t depth, uint8_t color,
                  const spng_plte* plte = nullptr) {
  spng_ctx* ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr ihdr{};
  ihdr.width = w;
  ihdr.height = h;
  ihdr.bit_depth = depth;
  ihdr.color_type = color;
  REQUIRE(spng_set_ihdr(ctx, &ihdr) == 0);
  if (plte) REQUIRE(spng_set_plte(ctx, const_cast<spng_plte*>(plte)) == 0);
  REQUIRE(spng_encode_image(ctx, px, len, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE) == 0);
  size_t n = 0;
  int err = 0;
  void* buf = spng_get_png_buffer(ctx, &n, &err);
  REQUIRE(err == 0);
  Bytes out(static_cast<uint8_t*>(buf), static_cast<uint8_t*>(buf) + n);
  std::free(buf);
  spng_ctx_free(ctx);
  return out;
}

Tensor u8(const Bytes& px, int h, int w, int c) {
  Tensor t(DType::kUInt8, Shape{h, w, c});
  std::memcpy(t.data<uint8_t>(), px.data(), px.size());
  return t;
}

}  // namespace

// Prints the default decode limits (read from the environment once per process).
HUB_TEST_CHILD_MODE(image_limits) {
  try {
    DecodeOptions o;
    std::printf("%lld %lld", static_cast<long long>(o.max_pixels), static_cast<long long>(o.max_bytes));
    return 0;
  } catch (const hub::Error& e) {
    std::printf("%s", e.message().c_str());
    return 3;
  }
}

TEST_CASE("format is sniffed from magic bytes") {
  const Bytes px = pattern(4, 5, 3);
  CHECK(sniff_format(stb_png(px, 4, 5, 3)) == Format::kPng);
  CHECK(sniff_format(stb_jpg(px, 4, 5, 3)) == Format::kJpeg);
  const Bytes gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0};
  CHECK(sniff_format(gif) == Format::kGif);
  CHECK(sniff_format(Bytes{}) == Format::kUnknown);
  CHECK(sniff_format(Bytes{'h', 'e', 'l', 'l', 'o'}) == Format::kUnknown);
  // A JPEG named .png still decodes as JPEG.
  const auto path = std::filesystem::temp_directory_path() / "hub_image_test_misnamed.png";
  const Bytes jpg = stb_jpg(smooth(16, 16, 3), 16, 16, 3);
  write_file_atomic(path.string(), {reinterpret_cast<const char*>(jpg.data()), jpg.size()});
  Tensor t = read_image_u8(path.string());
  CHECK(t.shape() == Shape{16, 16, 3});
  std::filesystem::remove(path);
}

TEST_CASE("PNG decodes exactly: RGB, gray, RGBA, to 1 and 3 channels") {
  const int h = 7, w = 9;
  for (int c : {1, 3, 4}) {
    CAPTURE(c);
    const Bytes px = pattern(h, w, c);
    const Bytes png = stb_png(px, h, w, c);
    ImageInfo info = probe_image(png, "x.png");
    CHECK(info.format == Format::kPng);
    CHECK(info.height == h);
    CHECK(info.width == w);
    CHECK(info.channels == c);
    Tensor rgb = decode_image_u8(png, {.channels = 3}, "x.png");
    Tensor gray = decode_image_u8(png, {.channels = 1}, "x.png");
    REQUIRE(rgb.shape() == Shape{h, w, 3});
    REQUIRE(gray.shape() == Shape{h, w, 1});
    const uint8_t* r = rgb.data<uint8_t>();
    const uint8_t* g = gray.data<uint8_t>();
    for (int i = 0; i < h * w; ++i) {
      const uint8_t* p = &px[i * c];
      if (c == 1) {
        CHECK(r[i * 3] == p[0]);
        CHECK(r[i * 3 + 1] == p[0]);
        CHECK(r[i * 3 + 2] == p[0]);
        CHECK(g[i] == p[0]);
      } else {
        CHECK(r[i * 3] == p[0]);
        CHECK(r[i * 3 + 1] == p[1]);
        CHECK(r[i * 3 + 2] == p[2]);
        CHECK(g[i] == (299 * p[0] + 587 * p[1] + 114 * p[2] + 500) / 1000);
      }
    }
  }
}

TEST_CASE("float decode is value / 255") {
  const Bytes px = pattern(3, 4, 3);
  Tensor f = decode_image(stb_png(px, 3, 4, 3), {}, "f.png");
  CHECK(f.dtype() == DType::kFloat32);
  const float* p = f.data<float>();
  for (size_t i = 0; i < px.size(); ++i) CHECK(p[i] == doctest::Approx(px[i] / 255.0).epsilon(1e-6));
}

TEST_CASE("16-bit and palette PNGs") {
  const uint32_t w = 5, h = 3;
  std::vector<uint16_t> wide(w * h);
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<uint16_t>(i * 4000 + 7);
  // spng's encoder takes host-endian 16-bit samples with SPNG_FMT_PNG.
  Bytes png16 = spng_encode(wide.data(), wide.size() * 2, w, h, 16, SPNG_COLOR_TYPE_GRAYSCALE);
  Tensor g = decode_image_u8(png16, {.channels = 1}, "g16.png");
  REQUIRE(g.shape() == Shape{3, 5, 1});
  for (size_t i = 0; i < wide.size(); ++i)
    CHECK(g.data<uint8_t>()[i] == static_cast<uint8_t>((wide[i] * 255u + 32767u) / 65535u));

  spng_plte plte{};
  plte.n_entries = 3;
  plte.entries[0] = {10, 20, 30, 255};
  plte.entries[1] = {200, 100, 0, 255};
  plte.entries[2] = {0, 255, 128, 255};
  Bytes idx(w * h);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<uint8_t>(i % 3);
  Bytes pal = spng_encode(idx.data(), idx.size(), w, h, 8, SPNG_COLOR_TYPE_INDEXED, &plte);
  Tensor rgb = decode_image_u8(pal, {.channels = 3}, "pal.png");
  REQUIRE(rgb.shape() == Shape{3, 5, 3});
  for (size_t i = 0; i < idx.size(); ++i) {
    const auto& e = plte.entries[idx[i]];
    CHECK(rgb.data<uint8_t>()[i * 3] == e.red);
    CHECK(rgb.data<uint8_t>()[i * 3 + 1] == e.green);
    CHECK(rgb.data<uint8_t>()[i * 3 + 2] == e.blue);
  }
}

TEST_CASE("16-bit RGBA PNGs decode straight to 8 bits; interlaced ones to the same pixels") {
  const uint32_t w = 13, h = 11;
  std::vector<uint16_t> wide(w * h * 4);
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<uint16_t>((i * 2654435761u) >> 7);
  Bytes png16 = spng_encode(wide.data(), wide.size() * 2, w, h, 16, SPNG_COLOR_TYPE_TRUECOLOR_ALPHA);
  Tensor rgb = decode_image_u8(png16, {.channels = 3}, "rgba16.png");
  REQUIRE(rgb.shape() == Shape{11, 13, 3});
  Tensor gray = decode_image_u8(png16, {.channels = 1}, "rgba16.png");
  auto narrow = [](uint16_t v) { return static_cast<uint8_t>((v * 255u + 32767u) / 65535u); };
  for (size_t p = 0; p < w * h; ++p) {
    const uint8_t r = narrow(wide[p * 4]), g = narrow(wide[p * 4 + 1]), b = narrow(wide[p * 4 + 2]);
    CHECK(rgb.data<uint8_t>()[p * 3] == r);
    CHECK(rgb.data<uint8_t>()[p * 3 + 1] == g);
    CHECK(rgb.data<uint8_t>()[p * 3 + 2] == b);
    CHECK(gray.data<uint8_t>()[p] == static_cast<uint8_t>((299u * r + 587u * g + 114u * b + 500u) / 1000u));
  }
  // The same pixels, Adam7-interlaced (stored big-endian).
  Bytes be(wide.size() * 2);
  for (size_t i = 0; i < wide.size(); ++i) {
    be[i * 2] = static_cast<uint8_t>(wide[i] >> 8);
    be[i * 2 + 1] = static_cast<uint8_t>(wide[i]);
  }
  Bytes inter = interlaced_png(be, w, h, 16, SPNG_COLOR_TYPE_TRUECOLOR_ALPHA, 8);
  Tensor irgb = decode_image_u8(inter, {.channels = 3}, "interlaced.png");
  CHECK(irgb.to_vector<uint8_t>() == rgb.to_vector<uint8_t>());
  // 8-bit RGB interlaced equals the non-interlaced file of the same pixels.
  const Bytes px = pattern(9, 7, 3);
  Tensor plain = decode_image_u8(spng_encode(px.data(), px.size(), 7, 9, 8, SPNG_COLOR_TYPE_TRUECOLOR), {}, "p");
  Tensor i8 = decode_image_u8(interlaced_png(px, 7, 9, 8, SPNG_COLOR_TYPE_TRUECOLOR, 3), {}, "i");
  CHECK(i8.to_vector<uint8_t>() == plain.to_vector<uint8_t>());
  CHECK(plain.to_vector<uint8_t>() == px);
}

TEST_CASE("decoded bytes are capped before allocating: a small 16-bit RGBA PNG of 11000 x 11000 is refused") {
  // 121 Mi pixels is under the pixel cap, but 8 bytes each is 968 MB.
  const Bytes big = png_bomb(11000, 11000, 16, SPNG_COLOR_TYPE_TRUECOLOR_ALPHA);
  CHECK(big.size() < 100);
  CHECK(11000LL * 11000 < kDefaultMaxPixels);
  expect_error(
      Code::kResourceExhausted, [&] { decode_image_u8(big, {}, "big16.png"); },
      "big16.png: png image of 11000x11000 pixels x 4 channels x 2 bytes decodes to 968000000 bytes, "
      "over the limit of 536870912");
  expect_error(
      Code::kResourceExhausted, [&] { decode_image(big, {}, "big16.png"); }, "$HUB_IMAGE_MAX_BYTES");
  // The same size at 8 bits per RGB sample fits (and then fails on the missing data).
  expect_error(
      Code::kCorruption, [&] { decode_image_u8(png_bomb(11000, 11000), {}, "big8.png"); }, "big8.png");
  // An interlaced image also counts its full-size RGBA buffer.
  Bytes inter = png_bomb(8000, 8000, 8, SPNG_COLOR_TYPE_GRAYSCALE);  // 64 MB stored
  inter[28] = 1;                                                     // interlace method (CRC below fixed by rebuilding)
  Bytes fixed = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  png_chunk(fixed, "IHDR", Bytes(inter.begin() + 16, inter.begin() + 29));
  png_chunk(fixed, "IEND", {});
  expect_error(
      Code::kResourceExhausted, [&] { decode_image_u8(fixed, {.max_bytes = 200'000'000}, "i.png"); },
      "4 RGBA samples (interlaced)");
  // A small explicit limit applies to ordinary images, JPEG included.
  const Bytes jpg = stb_jpg(smooth(16, 16, 3), 16, 16, 3);
  expect_error(
      Code::kResourceExhausted, [&] { decode_image_u8(jpg, {.max_bytes = 767}, "s.jpg"); },
      "16x16 pixels x 3 components x 1 bytes");
  CHECK(decode_image_u8(jpg, {.max_bytes = 768}, "s.jpg").num_elements() == 768);
}

TEST_CASE("decode limits come from $HUB_IMAGE_MAX_PIXELS and $HUB_IMAGE_MAX_BYTES") {
  auto child = [](const std::vector<std::pair<std::string, std::string>>& env) {
    hub::testing::ChildOptions o;
    o.env = env;
    return hub::testing::Child::self("image_limits", {}, o).wait(30, "image_limits");
  };
  CHECK(child({}).output == std::to_string(kDefaultMaxPixels) + " " + std::to_string(kDefaultMaxBytes));
  CHECK(child({{"HUB_IMAGE_MAX_PIXELS", "1000"}, {"HUB_IMAGE_MAX_BYTES", "2000"}}).output == "1000 2000");
  hub::testing::ChildResult bad = child({{"HUB_IMAGE_MAX_BYTES", "lots"}});
  CHECK(bad.code == 3);
  CHECK(bad.output == "$HUB_IMAGE_MAX_BYTES='lots' is not a positive integer");
}

TEST_CASE("JPEG decodes within tolerance, gray and RGB") {
  const int h = 32, w = 24;
  for (int c : {1, 3}) {
    CAPTURE(c);
    const Bytes px = smooth(h, w, c);
    const Bytes jpg = stb_jpg(px, h, w, c, 100);
    ImageInfo info = probe_image(jpg, "x.jpg");
    CHECK(info.format == Format::kJpeg);
    CHECK(info.height == h);
    CHECK(info.width == w);
    CHECK(info.channels == 3);  // stb_image_write stores gray as YCbCr too
    Tensor t = decode_image_u8(jpg, {.channels = 3}, "x.jpg");
    REQUIRE(t.shape() == Shape{h, w, 3});
    int worst = 0;
    for (int i = 0; i < h * w; ++i)
      for (int k = 0; k < 3; ++k)
        worst = std::max(worst, std::abs(int(t.data<uint8_t>()[i * 3 + k]) - int(px[i * c + (c == 1 ? 0 : k)])));
    CHECK(worst <= 6);
  }
}

TEST_CASE("CMYK JPEGs decode to RGB as TensorFlow's decode_jpeg does (Adobe-inverted or plain)") {
  const uint8_t ink[4] = {255, 128, 0, 200};
  // Adobe marker: stored inverted, R = C*K/255 = 200, G = 128*200/255 = 100, B = 0.
  const Bytes adobe = hub::testing::cmyk_jpeg(16, 8, ink, true);
  CHECK(probe_image(adobe, "cmyk.jpg").channels == 4);
  Tensor t = decode_image_u8(adobe, {.channels = 3}, "cmyk.jpg");
  REQUIRE(t.shape() == Shape{16, 8, 3});
  for (int i : {0, 77, 127}) {
    CHECK(std::abs(int{t.data<uint8_t>()[i * 3 + 0]} - 200) <= 2);
    CHECK(std::abs(int{t.data<uint8_t>()[i * 3 + 1]} - 100) <= 2);
    CHECK(int{t.data<uint8_t>()[i * 3 + 2]} <= 2);
  }
  // Gray: the same weights as everywhere else, (299R + 587G + 114B) / 1000 = 119.
  Tensor g = decode_image_u8(adobe, {.channels = 1}, "cmyk.jpg");
  CHECK(std::abs(int{g.data<uint8_t>()[5]} - 119) <= 2);
  // No Adobe marker: plain ink, R = (255-C)(255-K)/255 = 0, G = 127*55/255 = 27, B = 255*55/255 = 55.
  Tensor p = decode_image_u8(hub::testing::cmyk_jpeg(8, 8, ink, false), {.channels = 3}, "plain.jpg");
  CHECK(int{p.data<uint8_t>()[0]} <= 2);
  CHECK(std::abs(int{p.data<uint8_t>()[1]} - 27) <= 2);
  CHECK(std::abs(int{p.data<uint8_t>()[2]} - 55) <= 2);
}

TEST_CASE("JPEG DCT scaling when the target is much smaller") {
  const int h = 64, w = 80;
  const Bytes jpg = stb_jpg(smooth(h, w, 3), h, w, 3);
  CHECK(decode_image_u8(jpg, {.min_height = 8, .min_width = 10}, "s").shape() == Shape{8, 10, 3});
  CHECK(decode_image_u8(jpg, {.min_height = 9, .min_width = 10}, "s").shape() == Shape{16, 20, 3});
  CHECK(decode_image_u8(jpg, {.min_height = 30, .min_width = 40}, "s").shape() == Shape{32, 40, 3});
  CHECK(decode_image_u8(jpg, {.min_height = 33, .min_width = 10}, "s").shape() == Shape{64, 80, 3});
  // Scaled decode averages blocks: close to the mean of each 8x8 block.
  const Bytes px = smooth(h, w, 3);
  Tensor s = decode_image_u8(jpg, {.min_height = 8, .min_width = 10}, "s");
  double mean = 0;
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x) mean += px[(y * w + x) * 3];
  CHECK(std::abs(s.data<uint8_t>()[0] - mean / 64) <= 4);
}

TEST_CASE("our encoders round-trip") {
  const Bytes px = pattern(6, 5, 3);
  Tensor img = u8(px, 6, 5, 3);
  Tensor back = decode_image_u8(encode_png(img), {}, "enc.png");
  CHECK(identical(back, img));
  Tensor gray = u8(pattern(6, 5, 1), 6, 5, 1);
  CHECK(identical(decode_image_u8(encode_png(gray), {.channels = 1}, "g.png"), gray));
  Tensor smooth_img = u8(smooth(16, 16, 3), 16, 16, 3);
  Tensor j = decode_image_u8(encode_jpeg(smooth_img, 100), {}, "enc.jpg");
  int worst = 0;
  for (int64_t i = 0; i < j.num_elements(); ++i)
    worst = std::max(worst, std::abs(int(j.data<uint8_t>()[i]) - int(smooth_img.data<uint8_t>()[i])));
  CHECK(worst <= 6);
  // A gray JPEG from our encoder has one component and decodes to 1 or 3 channels.
  Tensor gray_smooth = u8(smooth(16, 16, 1), 16, 16, 1);
  const Bytes gj = encode_jpeg(gray_smooth, 100);
  CHECK(probe_image(gj, "g.jpg").channels == 1);
  Tensor g1 = decode_image_u8(gj, {.channels = 1}, "g.jpg");
  Tensor g3 = decode_image_u8(gj, {.channels = 3}, "g.jpg");
  REQUIRE(g3.shape() == Shape{16, 16, 3});
  for (int i = 0; i < 256; ++i) {
    CHECK(std::abs(int(g1.data<uint8_t>()[i]) - int(gray_smooth.data<uint8_t>()[i])) <= 3);
    CHECK(g3.data<uint8_t>()[3 * i] == g1.data<uint8_t>()[i]);
    CHECK(g3.data<uint8_t>()[3 * i + 2] == g1.data<uint8_t>()[i]);
  }
  expect_error(
      Code::kInvalidArgument,
      [] {
        encode_png(Tensor(DType::kFloat32, Shape{2, 2, 3}));
      },
      "float32[2,2,3]");
  expect_error(
      Code::kInvalidArgument, [&] { encode_jpeg(img, 0); }, "quality 0");
}

TEST_CASE("decompression bombs are refused from the header") {
  // No pixel data follows the header: reaching the decoder would report
  // corruption, so kResourceExhausted proves the check came first.
  const Bytes bomb = png_bomb(30000, 30000);
  CHECK(probe_image(bomb, "bomb.png").width == 30000);
  expect_error(
      Code::kResourceExhausted, [&] { decode_image_u8(bomb, {}, "bomb.png"); }, "bomb.png");
  expect_error(
      Code::kResourceExhausted, [&] { decode_image_u8(bomb, {}, "bomb.png"); }, "30000x30000");
  // A small limit applies to ordinary images too.
  const Bytes small = stb_png(pattern(10, 10, 3), 10, 10, 3);
  expect_error(
      Code::kResourceExhausted, [&] { decode_image_u8(small, {.max_pixels = 99}, "small.png"); }, "10x10");
  CHECK(decode_image_u8(small, {.max_pixels = 100}, "small.png").num_elements() == 300);

  // JPEG: patch a real file's SOF0 to claim 65500 x 65500.
  Bytes jpg = stb_jpg(smooth(8, 8, 3), 8, 8, 3);
  bool patched = false;
  for (size_t i = 0; i + 9 < jpg.size(); ++i) {
    if (jpg[i] == 0xff && jpg[i + 1] == 0xc0) {
      jpg[i + 5] = 0xff;
      jpg[i + 6] = 0xdc;  // height 65500
      jpg[i + 7] = 0xff;
      jpg[i + 8] = 0xdc;  // width 65500
      patched = true;
      break;
    }
  }
  REQUIRE(patched);
  CHECK(probe_image(jpg, "bomb.jpg").height == 65500);
  expect_error(
      Code::kResourceExhausted, [&] { decode_image_u8(jpg, {}, "bomb.jpg"); }, "65500x65500");
}

TEST_CASE("corrupt, truncated, empty and non-image inputs name the file") {
  expect_error(
      Code::kInvalidArgument, [] { decode_image_u8(Bytes{}, {}, "empty.jpg"); }, "empty.jpg");
  const Bytes text = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'};
  expect_error(
      Code::kInvalidArgument, [&] { decode_image_u8(text, {}, "notes.png"); }, "notes.png");
  const Bytes gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0, 0, 0};
  expect_error(
      Code::kInvalidArgument, [&] { decode_image_u8(gif, {}, "a.gif"); }, "gif");

  const Bytes png = stb_png(pattern(16, 16, 3), 16, 16, 3);
  for (size_t cut : {size_t{4}, size_t{20}, png.size() / 2, png.size() - 13}) {
    CAPTURE(cut);
    Bytes t(png.begin(), png.begin() + static_cast<long>(cut));
    try {
      decode_image_u8(t, {}, "trunc.png");
      FAIL("truncated PNG decoded");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("trunc.png") != std::string::npos);
      CHECK((e.code() == Code::kCorruption || e.code() == Code::kInvalidArgument));
    }
  }
  Bytes flipped = png;
  flipped[40] ^= 0x55;  // inside IDAT: CRC mismatch
  expect_error(
      Code::kCorruption, [&] { decode_image_u8(flipped, {}, "crc.png"); }, "crc.png");

  const Bytes jpg = stb_jpg(smooth(64, 64, 3), 64, 64, 3);
  for (size_t cut : {size_t{3}, size_t{100}, jpg.size() / 2, jpg.size() - 2}) {
    CAPTURE(cut);
    Bytes t(jpg.begin(), jpg.begin() + static_cast<long>(cut));
    expect_error(
        Code::kCorruption, [&] { decode_image_u8(t, {}, "trunc.jpg"); }, "trunc.jpg");
  }
  expect_error(
      Code::kInvalidArgument, [&] { decode_image_u8(jpg, {.channels = 2}, "c.jpg"); }, "2 channels");
  expect_error(
      Code::kNotFound, [] { read_image("/nonexistent/hub/x.jpg"); }, "/nonexistent/hub/x.jpg");
}

TEST_CASE("write_file_atomic leaves no temporary behind") {
  const auto dir = std::filesystem::temp_directory_path() / "hub_image_atomic";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write_file_atomic((dir / "a.bin").string(), std::string("\x01\x02\x03"));
  CHECK(read_file_bytes((dir / "a.bin").string()) == std::string("\x01\x02\x03"));
  expect_error(
      Code::kIOError, [&] { write_file_atomic((dir / "no/such/b.bin").string(), "\x01"); }, "b.bin");
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  CHECK(files == 1);
  std::filesystem::remove_all(dir);
}

// Fuzzes image decoding from JPEG seeds (the format is sniffed, so PNG
// mutations are reached too): 8-bit gray and RGB output, probe.
#include "fuzz_util.h"
#include "hub/core/error.h"
#include "hub/image/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  for (int channels : {1, 3}) {
    try {
      hub::image::DecodeOptions o;
      o.channels = channels;
      o.max_pixels = 1 << 22;
      o.max_bytes = 64 << 20;
      hub::image::decode_image_u8(in, o, "fuzz.jpg");
      o.min_height = 3;  // with DCT scaling
      o.min_width = 3;
      hub::image::decode_image_u8(in, o, "fuzz.jpg");
    } catch (const hub::Error&) {
    }
  }
  try {
    hub::image::probe_image(in, "fuzz.jpg");
  } catch (const hub::Error&) {
  }
  return 0;
}

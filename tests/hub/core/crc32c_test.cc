// hub/core/crc32c: CRC-32C against published check values (the CRC
// catalogue's "123456789" check, RFC 3720 appendix B.4), extension in pieces,
// the portable path against the SSE4.2 one, and the TFRecord/LevelDB masking
// against values worked out by hand.
#include "hub/core/crc32c.h"

#include <doctest/doctest.h>

#include <numeric>
#include <string>

using namespace hub;

TEST_CASE("crc32c: published check values") {
  CHECK(crc32c::value("123456789") == 0xE3069283u);
  const std::string zeros(32, '\0'), ones(32, '\xff');
  std::string ascending(32, '\0'), descending(32, '\0');
  std::iota(ascending.begin(), ascending.end(), 0);
  for (int i = 0; i < 32; ++i) descending[i] = static_cast<char>(31 - i);
  CHECK(crc32c::value(zeros) == 0x8A9136AAu);  // RFC 3720 B.4
  CHECK(crc32c::value(ones) == 0x62A8AB43u);
  CHECK(crc32c::value(ascending) == 0x46DD794Eu);
  CHECK(crc32c::value(descending) == 0x113FDB5Cu);
  CHECK(crc32c::value("") == 0u);
}

TEST_CASE("crc32c: extending in pieces equals one pass; portable equals SSE4.2") {
  std::string data(1000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + 3);
  for (size_t cut : {0, 1, 7, 8, 9, 500, 999}) {
    CAPTURE(cut);
    const uint32_t a = crc32c::extend(0, data.data(), cut);
    CHECK(crc32c::extend(a, data.data() + cut, data.size() - cut) == crc32c::value(data));
    CHECK(crc32c::extend_portable(0, data.data(), cut) == a);
    CHECK(crc32c::extend_portable(a, data.data() + cut, data.size() - cut) == crc32c::value(data));
  }
}

TEST_CASE("crc32c: masking") {
  // mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8, by hand:
  //   0xE3069283 >> 15 = 0x0001C60D; 0xE3069283 << 17 = 0x25060000 (mod 2^32);
  //   0x2507C60D + 0xA282EAD8 = 0xC78AB0E5.
  CHECK(crc32c::mask(0xE3069283u) == 0xC78AB0E5u);
  CHECK(crc32c::mask(0) == 0xA282EAD8u);
  //   0xFFFFFFFF rotates to itself; + 0xA282EAD8 = 0xA282EAD7 (mod 2^32).
  CHECK(crc32c::mask(0xFFFFFFFFu) == 0xA282EAD7u);
  for (uint32_t c : {0u, 1u, 0x12345678u, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u}) {
    CAPTURE(c);
    CHECK(crc32c::unmask(crc32c::mask(c)) == c);
    CHECK(crc32c::mask(c) != c);
  }
}

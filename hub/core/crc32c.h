// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by
// TFRecord, LevelDB tables and TensorFlow checkpoint bundles.
// crc32c::value("123456789") == 0xE3069283. Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hub::crc32c {

// CRC of data appended to a stream whose CRC so far is `crc` (0 to start).
uint32_t extend(uint32_t crc, const void* data, size_t n);
// Table-driven version (what extend() uses without SSE4.2); for tests.
uint32_t extend_portable(uint32_t crc, const void* data, size_t n);

inline uint32_t value(const void* data, size_t n) { return extend(0, data, n); }
inline uint32_t value(std::string_view s) { return extend(0, s.data(), s.size()); }

// TFRecord's masking, so that CRCs of data containing CRCs stay well mixed:
// ((crc >> 15) | (crc << 17)) + 0xa282ead8.
inline uint32_t mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t unmask(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace hub::crc32c

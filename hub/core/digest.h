// SHA-1 / SHA-256 helpers over OpenSSL's EVP interface, random hex tokens and
// constant-time comparison; shared by the resolver, the registry and retrain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace hub {

// Incremental SHA-256. Not thread-safe; movable, not copyable.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Lower-case hex of the digest; the object is reset afterwards.
  std::string hex_digest();
  void reset();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Lower-case hex digests of `data`.
std::string sha256_hex(std::string_view data);
std::string sha1_hex(std::string_view data);
// Hashes a whole file (lower-case hex); stores its byte count in `*size` when
// `size` is not null. Throws hub::Error(kIOError) naming the path on failure.
std::string sha256_file(const std::filesystem::path& path, uint64_t* size = nullptr);

// True for exactly 64 hex digits (either case); callers that need the
// canonical lower-case form also check `s == to_lower(s)`.
bool is_sha256_hex(std::string_view s);
// ASCII lower-casing (A-Z only; other bytes unchanged, whatever the locale).
std::string to_lower(std::string s);

// `n` cryptographically random bytes (RAND_bytes) as lower-case hex (2n characters).
std::string random_hex(size_t n);
// Constant-time equality of two equal-length strings (CRYPTO_memcmp); false if lengths differ.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace hub

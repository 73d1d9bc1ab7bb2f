// SHA-256 helpers (OpenSSL EVP) shared by the registry server and client.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace hub::registry {

// Incremental SHA-256. Not thread-safe; one per stream.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  // Lower-case hex of the digest; the object must not be updated afterwards.
  std::string hex_digest();

 private:
  EVP_MD_CTX* ctx_;
};

std::string sha256_hex(std::string_view data);
// Hashes a file; throws kIOError naming the path.
std::string sha256_file(const std::filesystem::path& path, uint64_t* size = nullptr);
// True for exactly 64 lower-case hex digits.
bool is_sha256_hex(std::string_view s);
// `n` cryptographically random bytes as lower-case hex (2n characters).
std::string random_hex(size_t n);
// Constant-time equality of two equal-length strings (CRYPTO_memcmp); false if lengths differ.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace hub::registry

// SHA-1 / SHA-256 helpers over OpenSSL's EVP interface.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace hub::resolver {

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

std::string sha256_hex(std::string_view data);
// Hashes a whole file; throws hub::Error(kIOError) naming it on failure.
std::string sha256_file(const std::filesystem::path& path);
std::string sha1_hex(std::string_view data);

// True for 64 hex digits (either case).
bool is_sha256_hex(std::string_view s);
std::string to_lower(std::string s);

}  // namespace hub::resolver

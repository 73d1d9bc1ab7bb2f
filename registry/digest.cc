#include "registry/digest.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdio>
#include <memory>

#include "hub/core/error.h"

namespace hub::registry {
namespace {
std::string to_hex(const unsigned char* p, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kHex[p[i] >> 4];
    out[2 * i + 1] = kHex[p[i] & 15];
  }
  return out;
}
}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  HUB_CHECK(ctx_ != nullptr && EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) == 1);
}
Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }
void Sha256::update(const void* data, size_t n) {
  HUB_CHECK(EVP_DigestUpdate(ctx_, data, n) == 1);
}
std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HUB_CHECK(EVP_DigestFinal_ex(ctx_, md, &len) == 1);
  return to_hex(md, len);
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data.data(), data.size());
  return h.hex_digest();
}

std::string sha256_file(const std::filesystem::path& path, uint64_t* size) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw_error(Code::kIOError, "cannot open " + path.string() + " for hashing");
  Sha256 h;
  std::string buf(1 << 16, '\0');
  uint64_t total = 0;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) {
    h.update(buf.data(), n);
    total += n;
  }
  if (std::ferror(f.get())) throw_error(Code::kIOError, "read error while hashing " + path.string());
  if (size) *size = total;
  return h.hex_digest();
}

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string random_hex(size_t n) {
  std::string bytes(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(n)) != 1)
    throw_error(Code::kInternal, "RAND_bytes failed");
  return to_hex(reinterpret_cast<const unsigned char*>(bytes.data()), n);
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace hub::registry

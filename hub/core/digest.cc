#include "hub/core/digest.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include "hub/core/error.h"
#include "hub/core/fd.h"

namespace hub {
namespace {
std::string to_hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  return out;
}

std::string one_shot(const EVP_MD* md, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  if (EVP_Digest(data.data(), data.size(), out, &n, md, nullptr) != 1) {
    throw_error(Code::kInternal, "EVP_Digest failed");
  }
  return to_hex(out, n);
}
}  // namespace

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  HUB_CHECK(impl_->ctx != nullptr);
  reset();
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::reset() { HUB_CHECK(EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) == 1); }

void Sha256::update(const void* data, size_t size) { HUB_CHECK(EVP_DigestUpdate(impl_->ctx, data, size) == 1); }

std::string Sha256::hex_digest() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  HUB_CHECK(EVP_DigestFinal_ex(impl_->ctx, out, &n) == 1);
  reset();
  return to_hex(out, n);
}

std::string sha256_hex(std::string_view data) { return one_shot(EVP_sha256(), data); }
std::string sha1_hex(std::string_view data) { return one_shot(EVP_sha1(), data); }

std::string sha256_file(const std::filesystem::path& path, uint64_t* size) {
  Fd fd;
  try {
    fd = open_fd(path, O_RDONLY);
  } catch (const Error& e) {
    throw Error(Code::kIOError, e.message());
  }
  Sha256 h;
  std::vector<char> buf(1 << 20);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_error(Code::kIOError, "cannot read " + path.string() + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    h.update(buf.data(), static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
  }
  if (size) *size = total;
  return h.hex_digest();
}

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string to_lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
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

}  // namespace hub

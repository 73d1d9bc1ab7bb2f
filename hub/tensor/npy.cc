#include "hub/tensor/npy.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "hub/core/fileio.h"

namespace hub {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

std::string_view descr_of(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "<f4";
    case DType::kInt32:
      return "<i4";
    case DType::kInt64:
      return "<i8";
    case DType::kUInt8:
      return "|u1";
    case DType::kBool:
      return "|b1";
    case DType::kInt8:
      return "|i1";
  }
  return "?";
}

[[noreturn]] void corrupt(const std::string& source, const std::string& what) {
  throw_error(Code::kCorruption, "npy file '" + source + "': " + what);
}

// A tiny reader for the header's Python dict literal.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : s_(text), source_(source) {}

  void skip_ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool consume(char c) {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c))
      corrupt(source_, std::string("header: expected '") + c + "' at " + std::to_string(i_) + " in " + std::string(s_));
  }
  std::string string_literal() {
    skip_ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) corrupt(source_, "header: expected a string");
    char q = s_[i_++];
    size_t start = i_;
    while (i_ < s_.size() && s_[i_] != q) ++i_;
    if (i_ >= s_.size()) corrupt(source_, "header: unterminated string");
    return std::string(s_.substr(start, i_++ - start));
  }
  std::string word() {
    skip_ws();
    size_t start = i_;
    while (i_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[i_]))) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }
  int64_t integer() {
    std::string w = word();
    if (w.empty() || w.size() > 18 || !std::all_of(w.begin(), w.end(), ::isdigit))
      corrupt(source_, "header: bad dimension '" + w + "'");
    return std::stoll(w);
  }
  bool at_end() {
    skip_ws();
    return i_ == s_.size();
  }

 private:
  std::string_view s_;
  const std::string& source_;
  size_t i_ = 0;
};

}  // namespace

std::string encode_npy(const Tensor& t) {
  if (!t.defined() || t.device() != Device::kCPU)
    throw_error(Code::kInvalidArgument, "encode_npy: tensor is undefined or not on the CPU");
  std::string dict = "{'descr': '" + std::string(descr_of(t.dtype())) + "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < t.rank(); ++i)
    dict += std::to_string(t.shape()[i]) + (t.rank() == 1 ? "," : i + 1 < t.rank() ? ", " : "");
  dict += "), }";
  // Version 1.0 when the header length fits in u16.
  int major = 1;
  size_t prefix = kMagicLen + 2 + 2;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  if (padded - prefix > 0xffff) {
    major = 2;
    prefix = kMagicLen + 2 + 4;
    total = prefix + dict.size() + 1;
    padded = (total + 63) / 64 * 64;
  }
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += static_cast<char>(0);
  uint32_t len = static_cast<uint32_t>(dict.size());
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += dict;
  out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return out;
}

Tensor decode_npy(std::string_view bytes, const std::string& source) {
  if (bytes.size() < kMagicLen + 4 || bytes.substr(0, kMagicLen) != std::string_view(kMagic, kMagicLen))
    corrupt(source, "not a .npy file (no \\x93NUMPY magic)");
  int major = static_cast<unsigned char>(bytes[6]);
  size_t len_bytes;
  if (major == 1)
    len_bytes = 2;
  else if (major == 2 || major == 3)
    len_bytes = 4;
  else
    corrupt(source, "unsupported format version " + std::to_string(major) + "." +
                        std::to_string(static_cast<unsigned char>(bytes[7])));
  if (bytes.size() < kMagicLen + 2 + len_bytes) corrupt(source, "truncated header");
  size_t hlen = 0;
  for (size_t i = 0; i < len_bytes; ++i)
    hlen |= static_cast<size_t>(static_cast<unsigned char>(bytes[kMagicLen + 2 + i])) << (8 * i);
  size_t data_start = kMagicLen + 2 + len_bytes + hlen;
  if (data_start > bytes.size())
    corrupt(source,
            "header length " + std::to_string(hlen) + " exceeds the file (" + std::to_string(bytes.size()) + " bytes)");
  HeaderParser p(bytes.substr(kMagicLen + 2 + len_bytes, hlen), source);
  std::string descr;
  std::optional<bool> fortran;
  std::optional<std::vector<int64_t>> dims;
  p.expect('{');
  while (!p.consume('}')) {
    std::string key = p.string_literal();
    p.expect(':');
    if (key == "descr") {
      descr = p.string_literal();
    } else if (key == "fortran_order") {
      std::string w = p.word();
      if (w != "True" && w != "False") corrupt(source, "header: fortran_order is '" + w + "'");
      fortran = w == "True";
    } else if (key == "shape") {
      p.expect('(');
      std::vector<int64_t> d;
      while (!p.consume(')')) {
        d.push_back(p.integer());
        if (!p.consume(',')) {
          p.expect(')');
          break;
        }
      }
      dims = std::move(d);
    } else {
      corrupt(source, "header: unknown key '" + key + "'");
    }
    if (!p.consume(',')) {
      p.expect('}');
      break;
    }
  }
  if (!p.at_end()) corrupt(source, "header: text after the dict");
  if (descr.empty() || !fortran || !dims) corrupt(source, "header lacks descr, fortran_order or shape");
  if (*fortran)
    throw_error(Code::kInvalidArgument, "npy file '" + source +
                                            "': fortran_order arrays are not supported; save a C-order "
                                            "array (numpy.ascontiguousarray)");
  DType dtype;
  if (descr == "<f4")
    dtype = DType::kFloat32;
  else if (descr == "<i4")
    dtype = DType::kInt32;
  else if (descr == "<i8")
    dtype = DType::kInt64;
  else if (descr == "|u1" || descr == "<u1")
    dtype = DType::kUInt8;
  else if (descr == "|b1")
    dtype = DType::kBool;
  else if (descr == "|i1" || descr == "<i1")
    dtype = DType::kInt8;
  else
    throw_error(Code::kInvalidArgument, "npy file '" + source + "': dtype '" + descr +
                                            "' is not supported (use <f4, <i4, <i8, |u1, |i1 or |b1)");
  Shape shape(*dims);
  uint64_t count = 1;
  for (int64_t d : *dims) {
    if (d != 0 && count > std::numeric_limits<uint64_t>::max() / 16 / static_cast<uint64_t>(d))
      corrupt(source, "shape " + shape.to_string() + " is too large");
    count *= static_cast<uint64_t>(d);
  }
  uint64_t need = count * dtype_size(dtype);
  if (bytes.size() - data_start != need)
    corrupt(source, "data is " + std::to_string(bytes.size() - data_start) + " bytes, shape " + shape.to_string() +
                        " of " + std::string(descr) + " needs " + std::to_string(need));
  Tensor t(dtype, shape);
  if (need) std::memcpy(t.raw_data(), bytes.data() + data_start, need);
  if (dtype == DType::kBool) {
    const uint8_t* b = static_cast<const uint8_t*>(t.raw_data());
    for (uint64_t i = 0; i < count; ++i)
      if (b[i] > 1) corrupt(source, "bool element " + std::to_string(i) + " is " + std::to_string(b[i]));
  }
  return t;
}

void write_npy(const std::string& path, const Tensor& t) { write_file_atomic(path, encode_npy(t)); }

Tensor read_npy(const std::string& path) { return decode_npy(read_file_bytes(path), path); }

}  // namespace hub

#include "hub/core/text.h"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace hub {

size_t invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > s.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
      return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string printable(std::string_view s, size_t max_bytes) {
  std::string out;
  const bool cut = s.size() > max_bytes;
  if (cut) s = s.substr(0, max_bytes);
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (cut) out += "...";
  return out;
}

std::string redact_credentials(std::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t sep = text.find("://", i);
    if (sep == std::string_view::npos) break;
    // A scheme (letters, digits, + - .) must precede "://".
    size_t scheme = sep;
    while (scheme > i && (std::isalnum(static_cast<unsigned char>(text[scheme - 1])) || text[scheme - 1] == '+' ||
                          text[scheme - 1] == '-' || text[scheme - 1] == '.'))
      --scheme;
    const size_t start = sep + 3;
    size_t end = start;
    while (end < text.size() && std::string_view("/?#\"' \t\r\n<>").find(text[end]) == std::string_view::npos) ++end;
    const size_t at = text.substr(start, end - start).rfind('@');
    out.append(text.substr(i, start - i));
    if (scheme < sep && at != std::string_view::npos) {
      out += "***";
      out.append(text.substr(start + at, end - start - at));
    } else {
      out.append(text.substr(start, end - start));
    }
    i = end;
  }
  out.append(text.substr(i));
  return out;
}

}  // namespace hub

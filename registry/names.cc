#include "registry/names.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "hub/core/error.h"

namespace hub::registry {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

std::string quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 80)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += '?';
    } else {
      out += c;
    }
  }
  if (s.size() > 80) out += "...";
  return out + "'";
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

std::string normalize_name(std::string_view name, std::string_view what) {
  std::string out(name);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  if (out.empty()) throw_error(Code::kInvalidArgument, std::string(what) + " name is empty");
  if (out.size() > kMaxNameLength)
    throw_error(Code::kInvalidArgument, std::string(what) + " name " + quoted(name) + " is longer than " +
                                            std::to_string(kMaxNameLength) + " characters");
  for (char c : out)
    if (!is_name_char(c))
      throw_error(Code::kInvalidArgument, std::string(what) + " name " + quoted(name) +
                                              " may contain only lower-case letters, digits, '-', '_' and '.'");
  if (out[0] == '.' || out[0] == '-' || out[0] == '_')
    throw_error(Code::kInvalidArgument,
                std::string(what) + " name " + quoted(name) + " must start with a letter or digit");
  return out;
}

std::string canonical_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    bool sep = c == '-' || c == '_' || c == '.';
    if (sep) {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
  }
  return out;
}

Version parse_version(std::string_view text) {
  auto bad = [&](const std::string& why) {
    throw_error(Code::kInvalidArgument,
                "version " + quoted(text) + " is not a semantic version MAJOR.MINOR.PATCH: " + why);
  };
  if (text.empty()) bad("empty");
  if (text.size() > kMaxVersionLength) bad("longer than " + std::to_string(kMaxVersionLength));
  std::string_view core = text;
  if (size_t plus = core.find('+'); plus != std::string_view::npos) {
    std::string_view build = core.substr(plus + 1);
    for (std::string_view id : split(build, '.')) {
      if (id.empty()) bad("empty build identifier");
      for (char c : id)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) bad("bad build identifier");
    }
    core = core.substr(0, plus);
  }
  Version v;
  std::string_view pre;
  if (size_t dash = core.find('-'); dash != std::string_view::npos) {
    pre = core.substr(dash + 1);
    core = core.substr(0, dash);
    if (pre.empty()) bad("empty prerelease");
  }
  std::vector<std::string_view> nums = split(core, '.');
  if (nums.size() != 3) bad("expected three numbers");
  uint64_t* fields[3] = {&v.major, &v.minor, &v.patch};
  for (int i = 0; i < 3; ++i) {
    std::string_view n = nums[i];
    if (!all_digits(n)) bad(quoted(n) + " is not a number");
    if (n.size() > 1 && n[0] == '0') bad("leading zero in " + quoted(n));
    auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), *fields[i]);
    if (ec != std::errc() || p != n.data() + n.size()) bad("number out of range");
  }
  if (!pre.empty()) {
    for (std::string_view id : split(pre, '.')) {
      if (id.empty()) bad("empty prerelease identifier");
      for (char c : id)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) bad("bad prerelease identifier");
      if (all_digits(id) && id.size() > 1 && id[0] == '0') bad("leading zero in prerelease");
      v.prerelease.emplace_back(id);
    }
  }
  v.text = std::string(text.substr(0, text.find('+')));
  return v;
}

int compare_versions(const Version& a, const Version& b) {
  auto cmp = [](uint64_t x, uint64_t y) { return x < y ? -1 : (x > y ? 1 : 0); };
  if (int c = cmp(a.major, b.major)) return c;
  if (int c = cmp(a.minor, b.minor)) return c;
  if (int c = cmp(a.patch, b.patch)) return c;
  if (a.prerelease.empty() || b.prerelease.empty()) {
    return a.prerelease.empty() == b.prerelease.empty() ? 0 : (a.prerelease.empty() ? 1 : -1);
  }
  size_t n = std::min(a.prerelease.size(), b.prerelease.size());
  for (size_t i = 0; i < n; ++i) {
    const std::string& x = a.prerelease[i];
    const std::string& y = b.prerelease[i];
    bool xn = all_digits(x), yn = all_digits(y);
    if (xn && yn) {
      if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
      if (int c = x.compare(y)) return c < 0 ? -1 : 1;
    } else if (xn != yn) {
      return xn ? -1 : 1;  // numeric identifiers sort before alphanumeric ones
    } else if (int c = x.compare(y)) {
      return c < 0 ? -1 : 1;
    }
  }
  return cmp(a.prerelease.size(), b.prerelease.size());
}

ModuleName parse_module_name(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos)
    throw_error(Code::kInvalidArgument, "module name " + quoted(text) + " must have the form publisher/name");
  ModuleName m;
  m.publisher = normalize_name(text.substr(0, slash), "publisher");
  m.name = normalize_name(text.substr(slash + 1), "module");
  return m;
}

Handle parse_handle(std::string_view text) {
  Handle h;
  size_t at = text.rfind('@');
  h.module = parse_module_name(text.substr(0, at));
  if (at == std::string_view::npos || text.substr(at + 1) == "latest") {
    h.version = "latest";
  } else {
    h.version = parse_version(text.substr(at + 1)).text;
  }
  return h;
}

}  // namespace hub::registry

// Registry names, versions and handles: normalization, validation, ordering.
//
// Publisher and module names are normalized (ASCII lower-cased) and then must
// be 1..64 characters from [a-z0-9._-], starting with a letter or digit, so a
// name is always a single safe path component ("../x", "A B", "", ".hidden"
// are refused). Versions are semantic versions MAJOR.MINOR.PATCH with an
// optional -prerelease (and ignored +build), at most 64 characters.
// Every function throws hub::Error(kInvalidArgument) naming the value on bad
// input. All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hub::registry {

inline constexpr size_t kMaxNameLength = 64;
inline constexpr size_t kMaxVersionLength = 64;

// Lower-cases and validates; `what` names the thing in the error ("publisher").
std::string normalize_name(std::string_view name, std::string_view what);

// The name's identity: lower-cased, each run of '-', '_' and '.' replaced by
// one '-' ("Image__Net.v1" -> "image-net-v1"). Total on any input.
std::string canonical_name(std::string_view name);

struct Version {
  uint64_t major = 0, minor = 0, patch = 0;
  std::vector<std::string> prerelease;  // dot-separated identifiers, empty = release
  std::string text;                     // canonical text (without build metadata)
};

Version parse_version(std::string_view text);
// Semantic-version precedence: <0, 0, >0. A prerelease sorts before its release.
int compare_versions(const Version& a, const Version& b);

// "publisher/name".
struct ModuleName {
  std::string publisher, name;
  std::string str() const { return publisher + "/" + name; }
};
ModuleName parse_module_name(std::string_view text);

// "publisher/name@version" or "publisher/name@latest" (or no "@": latest).
struct Handle {
  ModuleName module;
  std::string version;  // canonical version text, or "latest"
  bool latest() const { return version == "latest"; }
};
Handle parse_handle(std::string_view text);

}  // namespace hub::registry

// doctest helpers shared by the fetch tests (resolver_testutil.h has the
// helpers that the benchmarks use too, without doctest).
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "hub/core/error.h"
#include "hub/resolver/resolver.h"
#include "resolver_testutil.h"

namespace hub::testing {

// Resolves and returns the error; fails the test if it succeeds.
inline Error resolve_error(const std::string& handle, const resolver::ResolverOptions& o,
                           const std::string& sha256 = "") {
  try {
    resolve_dir(handle, o, sha256);
  } catch (const Error& e) {
    return e;
  }
  FAIL("resolve('" << handle << "') succeeded");
  return Error(Code::kInternal, "unreachable");
}

inline bool contains(const Error& e, const std::string& s) {
  return std::string(e.what()).find(s) != std::string::npos;
}

// After a failed fetch nothing may remain in the cache but its empty
// folders for work, refs and kept partial downloads.
inline void check_cache_empty(const Sandbox& sb) {
  std::vector<std::string> t = list_tree(sb.cache);
  CHECK((t.empty() || t == std::vector<std::string>{".tmp", "refs"} ||
         t == std::vector<std::string>{".partial", ".tmp", "refs"}));
}

}  // namespace hub::testing

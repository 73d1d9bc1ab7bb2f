// GCC 12.2 with AVX-512 built int64 constants {a, a, 0, 0} as a broadcast of
// a ({a, a, a, a}): attribute lists such as explicit_paddings {1, 1, 0, 0}
// arrived at ops changed. meson.build turns SLP vectorization off where the
// compiler does this; this test fails if the tree is built without that.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace {
__attribute__((noinline)) std::vector<int64_t> pads() { return {1, 1, 0, 0}; }
__attribute__((noinline)) std::vector<std::vector<int64_t>> nested() { return {{3, 3, 0, 0}, {2, 2}}; }
}  // namespace

TEST_CASE("regression: int64 constant lists {a, a, 0, 0} keep their zeros") {
  // Element by element: an expected list built from constants could be
  // miscompiled the same way.
  const std::vector<int64_t> p = pads();
  REQUIRE(p.size() == 4);
  CHECK(p[0] == 1);
  CHECK(p[1] == 1);
  CHECK(p[2] == 0);
  CHECK(p[3] == 0);
  const std::vector<std::vector<int64_t>> n = nested();
  REQUIRE(n.size() == 2);
  REQUIRE(n[0].size() == 4);
  CHECK(n[0][0] == 3);
  CHECK(n[0][2] == 0);
  CHECK(n[0][3] == 0);
  CHECK(n[1].size() == 2);
}

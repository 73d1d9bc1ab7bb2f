// Every registered op is complete: a reference kernel (the ground truth the
// other backends are tested against) and either a gradient or a stated
// reason for having none. That each gradient has a finite-difference check
// is verified after the whole ops suite ran (tests/main.cc), and that
// docs/ops.md lists every op by the cli test `ops_doc_current`.
#include "hub/ops/registry.h"

#include <doctest/doctest.h>

using namespace hub;

TEST_CASE("every op has a reference kernel and a gradient or a reason for none") {
  const OpRegistry& reg = OpRegistry::global();
  REQUIRE(reg.op_names().size() > 50);
  for (const std::string& op : reg.op_names()) {
    INFO("op " << op);
    CHECK(reg.kernel(op, "reference") != nullptr);
    const OpDef& def = reg.find(op);
    CHECK(static_cast<bool>(def.grad) != !def.no_gradient.empty());
    CHECK_FALSE(def.doc.empty());
  }
}

// `hub ops`: lists the registered ops and which backends implement them.
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "hub/backend/backend.h"
#include "hub/ops/registry.h"

namespace hub::cli {
namespace {
RunFn setup_ops(CLI::App& app) {
  (void)app;
  return [] {
    const OpRegistry& reg = OpRegistry::global();
    const std::vector<const Backend*> backends = registered_backends();
    std::printf("%-28s", "op");
    for (const Backend* b : backends) std::printf(" %-10s", b->name().c_str());
    std::printf(" %-5s %s\n", "grad", "description");
    for (const std::string& name : reg.op_names()) {
      const OpDef& def = reg.find(name);
      std::printf("%-28s", name.c_str());
      for (const Backend* b : backends) std::printf(" %-10s", reg.kernel(name, b->name()) ? "yes" : "-");
      std::printf(" %-5s %s\n", def.grad ? "yes" : "-", def.doc.c_str());
    }
    return 0;
  };
}
}  // namespace
HUB_REGISTER_COMMAND(ops, "List the registered ops and their backends", setup_ops);
}  // namespace hub::cli

// `hub ops`: lists the registered ops and which backends implement them.
#include <cstdio>

#include "cli/command.h"
#include "hub/ops/registry.h"

namespace hub::cli {
namespace {
RunFn setup_ops(CLI::App& app) {
  (void)app;
  return [] {
    const OpRegistry& reg = OpRegistry::global();
    std::printf("%-28s %-10s %-7s %-5s %s\n", "op", "reference", "onednn", "grad", "description");
    for (const std::string& name : reg.op_names()) {
      const OpDef& def = reg.find(name);
      std::printf("%-28s %-10s %-7s %-5s %s\n", name.c_str(),
                  reg.kernel(name, Backend::kReference) ? "yes" : "-",
                  reg.kernel(name, Backend::kOneDNN) ? "yes" : "-", def.grad ? "yes" : "-",
                  def.doc.c_str());
    }
    return 0;
  };
}
}  // namespace
HUB_REGISTER_COMMAND(ops, "List the registered ops and their backends", setup_ops);
}  // namespace hub::cli

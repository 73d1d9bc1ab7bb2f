// `hub ops`: lists the registered ops and which backends implement them.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "hub/ops/registry.h"

namespace hub::cli {
namespace {
RunFn setup_ops(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  app.add_flag("--json", *json, "Print JSON: one object per op (name, reference, onednn, grad, description)");
  return [json] {
    const OpRegistry& reg = OpRegistry::global();
    if (*json) {
      nlohmann::json out = nlohmann::json::array();
      for (const std::string& name : reg.op_names()) {
        const OpDef& def = reg.find(name);
        out.push_back({{"name", name},
                       {"reference", reg.kernel(name, Backend::kReference) != nullptr},
                       {"onednn", reg.kernel(name, Backend::kOneDNN) != nullptr},
                       {"grad", static_cast<bool>(def.grad)},
                       {"description", def.doc}});
      }
      print_json(out);
      return 0;
    }
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

#include "signatures/upgrade.h"

#include "hub/core/error.h"
#include "signatures/module.pb.h"

namespace hub {

namespace {

// Version 2 added what version 1 could not hold (int8 tensors and
// quantization ops in graphs, ModuleDef.quantization); every version-1 field
// keeps its meaning, so there is nothing to rewrite.
void upgrade_v1_to_v2(ModuleDef&) {}

// Version 3 added graph-valued attributes (AttrValueDef.graph: the branches
// and bodies of If and Loop), which a version-2 reader takes for an attribute
// without a value; nothing else changed.
void upgrade_v2_to_v3(ModuleDef&) {}

}  // namespace

const std::vector<FormatUpgrade>& format_upgrades() {
  // {from_version, "upgrade_vN_to_vN+1", function}, in order.
  static const std::vector<FormatUpgrade> kUpgrades = {{1, "upgrade_v1_to_v2", upgrade_v1_to_v2},
                                                       {2, "upgrade_v2_to_v3", upgrade_v2_to_v3}};
  return kUpgrades;
}

void upgrade_module_def(ModuleDef& def, const std::string& where, const std::vector<FormatUpgrade>& upgrades,
                        unsigned current) {
  unsigned v = def.format_version();
  if (v == 0) throw_error(Code::kCorruption, "module " + where + " has no format_version (0 or unset)");
  if (v > current)
    throw_error(Code::kFailedPrecondition, "module " + where + " has format_version " + std::to_string(v) +
                                               "; this hub reads up to " + std::to_string(current) + "; upgrade hub");
  while (v < current) {
    const FormatUpgrade* step = nullptr;
    for (const FormatUpgrade& u : upgrades)
      if (u.from_version == v) step = &u;
    if (!step)
      throw_error(Code::kInternal, "module " + where + ": no upgrade from format_version " + std::to_string(v) +
                                       " to " + std::to_string(v + 1));
    try {
      step->apply(def);
    } catch (const Error& e) {
      throw e.with_context("module " + where + ": " + step->name);
    }
    def.set_format_version(++v);
  }
}

}  // namespace hub

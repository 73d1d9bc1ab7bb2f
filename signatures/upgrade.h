// Format versions of module.pb and the named upgrades between them.
//
// ModuleDef.format_version says which rules a module.pb follows. This hub
// writes kModuleFormatVersion and reads every version from 1 up to it:
// upgrade_module_def() applies, in order, each registered upgrade whose
// from_version is the file's version, so an old file is brought forward one
// step at a time (1 -> 2 -> ... -> current) before anything else reads it.
// A file newer than kModuleFormatVersion is refused with
//   "module X has format_version N; this hub reads up to M; upgrade hub".
//
// Changing the format:
//   1. Change signatures/module.proto (never reuse a number; `reserved` on removal).
//   2. Bump kModuleFormatVersion to V+1.
//   3. Add `void upgrade_vV_to_vV1(ModuleDef&)` in upgrade.cc and a row
//      {V, "upgrade_vV_to_vV1", fn} to format_upgrades().
//   4. Add a golden module.pb of version V under tests/testdata/ and a test
//      that loads it.
#pragma once

#include <string>
#include <vector>

namespace hub {

class ModuleDef;

inline constexpr unsigned kModuleFormatVersion = 3;

struct FormatUpgrade {
  unsigned from_version;      // turns a version `from_version` ModuleDef into from_version + 1
  const char* name;           // e.g. "upgrade_v1_to_v2" (shown in errors and logs)
  void (*apply)(ModuleDef&);  // may throw hub::Error
};

// The upgrades this hub knows, by from_version: upgrade_v1_to_v2 (version 2
// only added int8 data and ModuleDef.quantization, so a version-1 module is a
// valid version-2 module as it stands) and upgrade_v2_to_v3 (version 3 only
// added graph-valued attributes, control flow's subgraphs).
const std::vector<FormatUpgrade>& format_upgrades();

// Brings `def` to `current` (the default: kModuleFormatVersion). `where` names
// the module in errors. Throws Corruption when format_version is 0 (unset),
// FailedPrecondition when it is newer than `current`, Internal when the chain
// has a gap; an error thrown by an upgrade gets "upgrade NAME" as context.
void upgrade_module_def(ModuleDef& def, const std::string& where,
                        const std::vector<FormatUpgrade>& upgrades = format_upgrades(),
                        unsigned current = kModuleFormatVersion);

}  // namespace hub

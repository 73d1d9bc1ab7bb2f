// Fuzzes module loading: the input is module.pb (no weights file), loaded
// with load_module_spec (parsing, format upgrades, graph validation through
// the op registry).
#include "fuzz_util.h"
#include "hub/core/error.h"
#include "hub/module/module.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path dir = hub::fuzz::scratch_dir() / "module";
  std::filesystem::create_directories(dir);
  hub::fuzz::write_input(dir / "module.pb", data, size);
  try {
    hub::ModuleSpec spec = hub::load_module_spec(dir.string());
    for (const hub::TagSet& tags : spec.tag_sets()) (void)spec.signature_names(tags);
  } catch (const hub::Error&) {
  }
  return 0;
}

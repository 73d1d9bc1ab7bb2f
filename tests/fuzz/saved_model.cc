// Fuzzes SavedModel import (hub/interop/tf/saved_model.h): the input is three
// files in the form of fuzz_util.h's split_parts: saved_model.pb, then
// variables/variables.index, then variables/variables.data-00000-of-00001
// (no variables/ folder when the index part is empty: a frozen graph). The
// imported spec is then validated by building a Module from it.
#include "hub/interop/tf/saved_model.h"

#include "fuzz_util.h"
#include "hub/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> parts = hub::fuzz::split_parts(data, size, 3);
  if (parts.empty()) return 0;
  const std::filesystem::path dir = hub::fuzz::scratch_dir() / "saved_model";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  hub::fuzz::write_input(dir / "saved_model.pb", parts[0]);
  if (!parts[1].empty()) {
    std::filesystem::create_directories(dir / "variables");
    hub::fuzz::write_input(dir / "variables" / "variables.index", parts[1]);
    hub::fuzz::write_input(dir / "variables" / "variables.data-00000-of-00001", parts[2]);
  }
  try {
    hub::Module module(hub::tf::import_saved_model(dir.string()));
  } catch (const hub::Error&) {
  }
  return 0;
}

// Fuzzes TensorFlow.js graph model import (hub/interop/tf/tfjs.h): the input
// is two files in the form of fuzz_util.h's split_parts: model.json, then the
// weight shard w.bin (the seeds' manifests name that one file). The imported
// spec is then validated by building a Module from it.
#include "fuzz_util.h"
#include "hub/core/error.h"
#include "hub/interop/tf/tfjs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> parts = hub::fuzz::split_parts(data, size, 2);
  if (parts.empty()) return 0;
  const std::filesystem::path dir = hub::fuzz::scratch_dir();
  hub::fuzz::write_input(dir / "model.json", parts[0]);
  hub::fuzz::write_input(dir / "w.bin", parts[1]);
  try {
    hub::Module module(hub::tf::import_tfjs((dir / "model.json").string()));
  } catch (const hub::Error&) {
  }
  return 0;
}

// Fuzzes ONNX import (hub/interop/onnx/importer.h): the input is a model file,
// checked, converted, shape-inferred and mapped to a module, whose graph is
// then validated by building a Module from it. External data stays confined
// to the scratch folder the model is written to.
#include "fuzz_util.h"
#include "hub/core/error.h"
#include "hub/interop/onnx/importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path path = hub::fuzz::scratch_dir() / "model.onnx";
  hub::fuzz::write_input(path, data, size);
  try {
    hub::Module module(hub::onnx_interop::import_onnx(path.string()));
  } catch (const hub::Error&) {
  }
  return 0;
}

// Fuzzes the strict reader of CIFAR-10 python batches (pickles; the
// downloaded cifar-10-python.tar.gz): opcodes, the memo, globals, REDUCE and
// BUILD of numpy arrays, and the checks on the dict it yields.
#include "modules/datasets/cifar_pickle.h"

#include <string_view>

#include "hub/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    hub::data::parse_cifar_pickle(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz batch");
  } catch (const hub::Error&) {
  }
  return 0;
}

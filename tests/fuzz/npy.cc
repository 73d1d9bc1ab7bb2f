// Fuzzes the .npy reader (header dictionary, dtype, shape, data size).
#include "hub/tensor/npy.h"

#include "fuzz_util.h"
#include "hub/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    hub::decode_npy(hub::fuzz::bytes(data, size), "fuzz.npy");
  } catch (const hub::Error&) {
  }
  return 0;
}

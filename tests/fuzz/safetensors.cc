// Fuzzes the safetensors reader (header JSON, offsets, dtypes, data).
#include "hub/module/safetensors.h"

#include "fuzz_util.h"
#include "hub/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    hub::decode_safetensors(hub::fuzz::bytes(data, size), "fuzz.safetensors");
  } catch (const hub::Error&) {
  }
  return 0;
}

// Fuzzes the TensorFlow checkpoint reader (hub/interop/tf/bundle.h): the input
// is a 4-byte little-endian length L, then L bytes of P.index (the table),
// then the bytes of the one data shard P.data-00000-of-00001. Every tensor the
// index names is described and read.
#include <cstring>

#include "hub/core/error.h"
#include "hub/interop/tf/bundle.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  uint32_t index_size = 0;
  std::memcpy(&index_size, data, 4);
  if (index_size > size - 4) return 0;
  const std::string prefix = (hub::fuzz::scratch_dir() / "model.ckpt").string();
  hub::fuzz::write_input(hub::tf::bundle_index_path(prefix), data + 4, index_size);
  hub::fuzz::write_input(hub::tf::bundle_data_path(prefix, 0, 1), data + 4 + index_size,
                         size - 4 - index_size);
  try {
    hub::tf::BundleReader reader(prefix);
    for (const std::string& name : reader.names()) {
      try {
        (void)reader.spec(name);
        (void)reader.read(name);
      } catch (const hub::Error&) {
      }
    }
  } catch (const hub::Error&) {
  }
  return 0;
}

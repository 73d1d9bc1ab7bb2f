// Fuzzes the TensorFlow checkpoint reader (hub/interop/tf/bundle.h): the input
// is a 4-byte little-endian length L, then L bytes of P.index (the table),
// then the bytes of the one data shard P.data-00000-of-00001. Every tensor the
// index names is described and read.
#include "fuzz_util.h"
#include "hub/core/error.h"
#include "hub/interop/tf/bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> parts = hub::fuzz::split_parts(data, size, 2);
  if (parts.empty()) return 0;
  const std::string prefix = (hub::fuzz::scratch_dir() / "model.ckpt").string();
  hub::fuzz::write_input(hub::tf::bundle_index_path(prefix), parts[0]);
  hub::fuzz::write_input(hub::tf::bundle_data_path(prefix, 0, 1), parts[1]);
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

// Fuzzes secure unpacking of tar and tar.gz archives (extraction into a
// scratch folder, then inspection), with small caps.
#include "hub/resolver/unpack.h"

#include "fuzz_util.h"
#include "hub/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path& dir = hub::fuzz::scratch_dir();
  hub::fuzz::write_input(dir / "in.tar.gz", data, size);
  hub::resolver::UnpackOptions o;
  o.limits.max_total_bytes = 16 << 20;
  o.limits.max_entries = 1000;
  std::error_code ec;
  std::filesystem::remove_all(dir / "out", ec);
  try {
    hub::resolver::unpack_archive(dir / "in.tar.gz", dir / "out", o);
  } catch (const hub::Error&) {
  }
  std::filesystem::remove_all(dir / "out", ec);
  try {
    hub::resolver::inspect_archive(dir / "in.tar.gz", o);
  } catch (const hub::Error&) {
  }
  return 0;
}

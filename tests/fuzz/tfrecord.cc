// Fuzzes TFRecord reading (lengths, masked CRC-32C of header and data) and
// the tf.Example parsing of each record.
#include "modules/datasets/tfrecord.h"

#include "fuzz_util.h"
#include "hub/core/error.h"
#include "modules/datasets/example.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path path = hub::fuzz::scratch_dir() / "in.tfrecord";
  hub::fuzz::write_input(path, data, size);
  try {
    hub::data::TFRecordReader reader(path.string(), 1 << 20);
    std::string record;
    while (reader.read(&record)) {
      try {
        hub::data::parse_image_example(record, "fuzz record");
      } catch (const hub::Error&) {
      }
    }
  } catch (const hub::Error&) {
  }
  return 0;
}

// Safety and shape checks for an uploaded module archive, before it is accepted.
//
// inspect_module_archive() streams the whole archive through libarchive
// (tar, optionally gzip/bzip2/xz/zstd compressed) without writing anything,
// counting the bytes each entry really expands to, and refuses:
//   - entries whose path is absolute, contains "..", or is empty (traversal);
//   - links (symbolic or hard) and device/fifo/socket entries;
//   - more than max_entries entries, an entry expanding past max_entry_bytes, or
//     a total past max_total_bytes (decompression bombs: kResourceExhausted);
//   - an archive without a top-level module.pb, or whose module.pb is not
//     well-formed protobuf wire format (kInvalidArgument);
//   - a truncated or corrupt stream (kCorruption).
// On success returns the bytes of module.pb (for the module loader).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace hub::registry {

struct ArchiveLimits {
  uint64_t max_entries = 10000;
  uint64_t max_entry_bytes = 2ull << 30;
  uint64_t max_total_bytes = 4ull << 30;
  uint64_t max_module_pb_bytes = 512ull << 20;
};

struct ArchiveSummary {
  std::string module_pb;      // contents of module.pb
  uint64_t entries = 0;
  uint64_t unpacked_bytes = 0;
};

ArchiveSummary inspect_module_archive(const std::filesystem::path& archive,
                                      const ArchiveLimits& limits = {});

// True if `data` parses as protobuf wire format (any message).
bool is_protobuf_wire_format(const std::string& data);

}  // namespace hub::registry

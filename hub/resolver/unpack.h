// Secure unpacking of module archives (plain tar or gzip-compressed tar).
//
// Archives come from the network, so every entry is treated as hostile:
//   - the path must be relative, non-empty, with no `..` component, at most 64
//     components deep, and must not pass through a symlink created earlier by
//     the same archive;
//   - names (and link targets) must be valid UTF-8 without control characters
//     or backslashes, and no two entries may differ only in case (they would
//     merge on a case-insensitive file system);
//   - only regular files, directories, symlinks and hard links are accepted;
//     device nodes, FIFOs and sockets are refused;
//   - a symlink target must be relative and stay inside the destination
//     (checked on the entry's text, and again on the extracted tree with the
//     kernel's own resolution, so chains of links cannot escape either);
//   - a hard link must name a regular file extracted earlier by this archive
//     and carry no data of its own (pax allows a body; other tools would
//     write it into the linked file);
//   - the total unpacked size and the number of entries are capped; an entry's
//     declared size is checked against the cap *before* any byte of it is
//     written, so a 10 GB sparse or declared-size bomb is refused without
//     touching the disk.
// A gzip archive is decompressed by zlib (not libarchive) and read to its end:
// corrupt deflate data, a CRC-32 or ISIZE trailer that does not match the
// data, a stream cut short, and any byte after the last member other than NUL
// padding (which tar writers emit and gzip accepts) are Corruption, even when
// the damage lies after the tar end marker. Concatenated members are one
// stream (RFC 1952). The decompressed stream is capped at max_total_bytes +
// 4 KiB per allowed entry + 16 MiB (headers, padding).
// Files are created with O_EXCL|O_NOFOLLOW (never through a link, never over an
// existing file), mode 0644 or 0755 (no setuid/setgid, no ownership changes).
//
// On failure nothing is left behind: the destination directory (which this
// function creates) is removed entirely, and nothing is ever written outside it.
// Between entries hub::interrupted() (hub/core/interrupt.h) is polled: an
// interrupted unpack fails with kUnavailable and cleans up the same way.
//
// Thread safety: unpack_archive() and inspect_archive() may run concurrently on
// different destinations.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace hub::resolver {

struct UnpackLimits {
  // Sum of all entries' sizes (declared or actually written, whichever is larger).
  uint64_t max_total_bytes = uint64_t{8} << 30;  // 8 GiB
  // Number of archive entries of any kind (directories and links included).
  uint64_t max_entries = 100000;
};

// Checks that `dir` holds a loadable module; throws hub::Error otherwise.
using ModuleValidator = std::function<void(const std::filesystem::path& dir)>;

// The default validator: `dir/module.pb` exists, is a regular file (not a
// symlink) and is non-empty. Throws Code::kCorruption naming the directory.
// (The resolver passes a stricter one that loads the module.)
void check_module_pb_present(const std::filesystem::path& dir);

struct UnpackOptions {
  UnpackLimits limits;
  // Called on the extracted module directory; empty = check_module_pb_present.
  ModuleValidator validator;
  // Skip module validation entirely (for archives that are not modules).
  bool validate = true;
  // Name used in error messages (the handle or URL); defaults to the archive path.
  std::string display_name;
};

struct UnpackResult {
  // The module directory: `dest` itself, or `dest/<top>` when the archive holds
  // a single top-level directory and no module.pb at its root (as made by
  // `tar czf m.tar.gz my_module/`); in that case the tree is hoisted so that
  // the module directory is always `dest`.
  std::filesystem::path module_dir;
  uint64_t entries = 0;
  uint64_t total_bytes = 0;
};

// Extracts `archive` (a tar or tar.gz file) into `dest`, which must not exist
// (its parent must). On success `dest` holds the module and the validator has
// accepted it. Errors (hub::Error), each naming the archive and the entry
// (escaped for printing; never the temporary unpack folder, which is
// removed from the validator's messages too):
//   kCorruption        malformed/truncated archive, damaged gzip stream (data,
//                      CRC-32, ISIZE, trailing bytes), no module.pb, duplicate entry
//   kPermissionDenied  unsafe entry: absolute path, `..`, escaping link,
//                      device/FIFO/socket, path through a symlink
//   kResourceExhausted total size or entry count over the limits
//   kIOError           the local file system failed (disk full, ...)
// On any error `dest` does not exist afterwards.
UnpackResult unpack_archive(const std::filesystem::path& archive, const std::filesystem::path& dest,
                            const UnpackOptions& options = {});

// Reads every header of `archive` and applies the same entry checks and caps
// as unpack_archive() without writing anything (data is read and discarded).
// Returns the entry count and total declared size. Does not run the validator
// on a tree, but fails with kCorruption when no `module.pb` regular file is
// present at the root or under a single top-level directory (when
// options.validate). Useful for checking an upload before storing it.
UnpackResult inspect_archive(const std::filesystem::path& archive, const UnpackOptions& options = {});

}  // namespace hub::resolver

// Whole-file reads and writes with hub::Error reporting.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "hub/core/fd.h"

namespace hub {

// Opens `path` read-only (close-on-exec) and fstat()s it into *st. Throws NotFound when `path` does not exist,
// InvalidArgument when it is a directory, IOError otherwise, naming the path.
Fd open_for_reading(const std::string& path, struct stat* st);

// Reads the whole file. Throws NotFound when `path` does not exist,
// InvalidArgument when it is a directory, IOError otherwise, naming the path.
// Files larger than `max_bytes` are refused with ResourceExhausted before reading.
std::string read_file_bytes(const std::string& path, int64_t max_bytes = int64_t{1} << 30);

// Writes `bytes` to a temporary sibling of `path`, flushes it and renames it
// over `path`, so readers never see a partial file and a failed write leaves
// nothing behind. Throws IOError naming the path.
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace hub

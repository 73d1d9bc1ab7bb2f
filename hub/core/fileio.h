// Whole-file reads and writes with hub::Error reporting.
#pragma once

#include <string>
#include <string_view>

namespace hub {

// Throws NotFound when `path` does not exist, IOError otherwise, naming the path.
std::string read_file_bytes(const std::string& path);

// Writes `bytes` to a temporary sibling of `path`, flushes it and renames it
// over `path`, so readers never see a partial file and a failed write leaves
// nothing behind. Throws IOError naming the path.
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace hub

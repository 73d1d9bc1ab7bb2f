// LevelDB's own table reader and writer (Debian's libleveldb-dev), the
// independent implementation hub's TensorFlow table code is checked against.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace hub::testing {

using Entries = std::vector<std::pair<std::string, std::string>>;

// Every entry of the table at `path` in LevelDB's iteration order, read by
// leveldb::Table with paranoid checks and checksum verification; a LevelDB
// error fails the test.
Entries leveldb_entries(const std::string& path);
// The value of `key` found by LevelDB's Seek (through the index block), or
// "<absent>".
std::string leveldb_seek(const std::string& path, const std::string& key);
// Writes `entries` (sorted) with leveldb::TableBuilder.
void leveldb_write(const std::string& path, const Entries& entries, bool snappy, size_t block_size,
                   int restart_interval);

}  // namespace hub::testing

// LevelDB's table format (the "SSTable"), which TensorFlow uses for the
// X.index file of a checkpoint. Layout (google/leveldb doc/table_format.md;
// TensorFlow's copy is tensorflow/core/lib/io/table*):
//
//   [data block 0] [trailer] ... [data block n-1] [trailer]
//   [meta-index block] [trailer]
//   [index block] [trailer]
//   [footer: 48 bytes]
//
// A block holds entries sorted by key, each
//   varint32 shared | varint32 non_shared | varint32 value_length |
//   key[shared..] (non_shared bytes) | value
// where `shared` bytes of the key are those of the previous entry (prefix
// compression). Every `restart_interval` entries a restart point stores its
// key whole (shared = 0); the block ends with the restart offsets (fixed32
// each) and their count (fixed32). Each block is followed by a 5-byte
// trailer: the compression type (0 = none, 1 = Snappy) and the masked
// CRC-32C of the block bytes and that type byte (hub/core/crc32c.h). The
// index block (restart interval 1) maps, for each data block, a key >= every
// key of that block and < every key of the next to the block's handle
// (varint64 offset, varint64 size). The meta-index block holds optional
// filters (TensorFlow writes it empty). The footer is the meta-index handle,
// the index handle, zero padding to 40 bytes, and the magic number
// 0xdb4775248b80fb57 (fixed64). Integers are little-endian; keys compare as
// unsigned bytes.
//
// Thread safety: a Table is immutable once opened and may be read from any
// number of threads; a TableBuilder is not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hub::tf {

inline constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;

struct TableOptions {
  // A data block is closed once its size reaches this many bytes.
  // TensorFlow's default (tensorflow/core/lib/io/table_options.h).
  size_t block_size = 256 * 1024;
  // Entries between restart points in data blocks (TensorFlow's and LevelDB's default).
  int restart_interval = 16;
};

// Builds an uncompressed table in memory, as TensorFlow writes checkpoint
// indexes (no compression, empty meta-index block, LevelDB's shortest
// separators in the index).
class TableBuilder {
 public:
  explicit TableBuilder(TableOptions options = {});
  ~TableBuilder();
  TableBuilder(const TableBuilder&) = delete;
  TableBuilder& operator=(const TableBuilder&) = delete;

  // Appends an entry. Keys must be strictly increasing (bytewise); throws
  // InvalidArgument naming both keys otherwise, leaving the builder unchanged.
  void add(std::string_view key, std::string_view value);
  // The whole file. The builder must not be used afterwards.
  std::string finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A table opened for reading: random access by key and ordered iteration.
//
// open() reads the whole file into memory (at most 1 GiB; larger files are
// ResourceExhausted) and checks the footer, the meta-index and index blocks:
// sizes and offsets within the file, trailers' checksums, the magic number,
// handles pointing before the meta-index. Data blocks are checked (bounds,
// checksum, entry encoding, restart points, strictly increasing keys) when
// they are read. Every damage is Code::kCorruption with a message naming the
// source and what is wrong (e.g. "'x.index': corrupt table: block at offset
// 0 (size 94): checksum mismatch"); a block compressed with Snappy or an
// unknown method is Code::kUnimplemented (TensorFlow writes checkpoint
// indexes uncompressed). A missing file is NotFound, other I/O failures
// IOError, naming the path.
class Table {
 public:
  static Table open(const std::string& path);
  // A table from bytes in memory; `source` names it in errors.
  Table(std::string bytes, std::string source);

  // The value stored under `key`, if any. Reads the one data block that can
  // hold it.
  std::optional<std::string> get(std::string_view key) const;
  // Calls fn(key, value) for every entry in key order. The views are valid
  // during the call only.
  void for_each(const std::function<void(std::string_view key, std::string_view value)>& fn) const;
  // Number of data blocks (from the index).
  size_t num_blocks() const { return index_.size(); }
  const std::string& source() const { return source_; }

 private:
  struct Handle {
    uint64_t offset = 0, size = 0;
  };
  struct IndexEntry {
    std::string key;
    Handle block;
  };
  // The contents of the block at h, its trailer checked.
  std::string_view block(const Handle& h, const char* what) const;
  [[noreturn]] void corrupt(const std::string& what) const;

  std::string bytes_;
  std::string source_;
  std::vector<IndexEntry> index_;
};

}  // namespace hub::tf

// TFRecord files, byte-compatible with TensorFlow's tf.io.TFRecordWriter /
// tf.data.TFRecordDataset (uncompressed). Each record is
//   uint64 length (little-endian)
//   uint32 masked_crc32c(length bytes)
//   byte   data[length]
//   uint32 masked_crc32c(data)
// with mask() from crc32c.h.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "hub/core/fd.h"

namespace hub::data {

// Writes records to a temporary file beside `path`; commit() flushes and
// renames it to `path`. Destroying an uncommitted writer (e.g. on an error)
// removes the temporary, so no partial file is ever visible at `path`.
// Not thread-safe. Throws kIOError naming the path.
class TFRecordWriter {
 public:
  explicit TFRecordWriter(std::string path);
  ~TFRecordWriter();
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  void write(std::string_view record);
  void commit();
  int64_t records_written() const { return count_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
  int64_t count_ = 0;
};

// Reads a TFRecord file sequentially (read, skip) and at random (read_at).
// Every CRC of a record read is checked: a mismatch, a truncated record or a
// length over max_record_bytes throws kCorruption naming the file, the record
// index and the byte offset. skip() checks the length header only.
//
// Thread safety: read() and skip() are for one thread; read_at() is const and
// may run on any number of threads at once, also while one thread reads or
// skips (it uses pread on the file and touches no position).
class TFRecordReader {
 public:
  // Throws kNotFound or kIOError naming the path.
  explicit TFRecordReader(std::string path, uint64_t max_record_bytes = uint64_t{1} << 30);
  TFRecordReader(const TFRecordReader&) = delete;
  TFRecordReader& operator=(const TFRecordReader&) = delete;

  // Reads the next record into *record; false at a clean end of file.
  bool read(std::string* record);
  // Steps over the next record without reading its data; false at a clean
  // end of file.
  bool skip();
  // Index of the next record to be read (= records read or skipped so far).
  int64_t index() const { return index_; }
  // Byte offset of the next record.
  uint64_t offset() const { return offset_; }
  // The record starting at byte `offset` (an offset() seen before reading or
  // skipping it), its CRCs checked; `index` is its index, for errors.
  std::string read_at(uint64_t offset, int64_t index) const;
  const std::string& path() const { return path_; }

 private:
  // The data length of the record at `offset` from its checked header; 0 with
  // *end set at a clean end of file.
  uint64_t length_at(uint64_t offset, int64_t index, bool* end) const;
  [[noreturn]] void corrupt(uint64_t offset, int64_t index, const std::string& what) const;
  std::string path_;
  Fd fd_;
  uint64_t max_record_bytes_;
  uint64_t file_size_ = 0;
  int64_t index_ = 0;
  uint64_t offset_ = 0;
};

// Encodes one record (header, data, footer) as it appears in the file.
std::string encode_tfrecord(std::string_view data);

}  // namespace hub::data

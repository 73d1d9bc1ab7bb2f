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

// Sequential reader. Every CRC is checked: a mismatch, a truncated record or a
// length over max_record_bytes throws kCorruption naming the file, the record
// index and the byte offset. Not thread-safe.
class TFRecordReader {
 public:
  explicit TFRecordReader(std::string path, uint64_t max_record_bytes = uint64_t{1} << 30);
  ~TFRecordReader();
  TFRecordReader(const TFRecordReader&) = delete;
  TFRecordReader& operator=(const TFRecordReader&) = delete;

  // Reads the next record into *record; false at a clean end of file.
  bool read(std::string* record);
  // Index of the next record to be read (= records read so far).
  int64_t index() const { return index_; }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void corrupt(const std::string& what) const;
  std::string path_;
  std::FILE* file_ = nullptr;
  uint64_t max_record_bytes_;
  int64_t index_ = 0;
  uint64_t offset_ = 0;
  uint64_t file_size_ = 0;
};

// Encodes one record (header, data, footer) as it appears in the file.
std::string encode_tfrecord(std::string_view data);

}  // namespace hub::data

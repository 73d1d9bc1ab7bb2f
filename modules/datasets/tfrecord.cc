#include "modules/datasets/tfrecord.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "hub/core/crc32c.h"
#include "hub/core/error.h"

namespace hub::data {
namespace {

void put_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void put_u64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t get_u32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string encode_tfrecord(std::string_view data) {
  std::string out(12 + data.size() + 4, '\0');
  put_u64(out.data(), data.size());
  put_u32(out.data() + 8, crc32c::mask(crc32c::value(out.data(), 8)));
  std::memcpy(out.data() + 12, data.data(), data.size());
  put_u32(out.data() + 12 + data.size(), crc32c::mask(crc32c::value(data)));
  return out;
}

TFRecordWriter::TFRecordWriter(std::string path) : path_(std::move(path)) {
  static std::atomic<uint64_t> counter{0};
  tmp_ = path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) throw_error(Code::kIOError, path_ + ": cannot create TFRecord file: " + std::strerror(errno));
}

TFRecordWriter::~TFRecordWriter() {
  if (file_) {
    std::fclose(file_);
    std::remove(tmp_.c_str());
  }
}

void TFRecordWriter::write(std::string_view record) {
  if (!file_) throw_error(Code::kFailedPrecondition, path_ + ": write after commit");
  char header[12], footer[4];
  put_u64(header, record.size());
  put_u32(header + 8, crc32c::mask(crc32c::value(header, 8)));
  put_u32(footer, crc32c::mask(crc32c::value(record)));
  if (std::fwrite(header, 1, 12, file_) != 12 || std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fwrite(footer, 1, 4, file_) != 4)
    throw_error(Code::kIOError, path_ + ": write failed: " + std::strerror(errno));
  ++count_;
}

void TFRecordWriter::commit() {
  if (!file_) return;
  const bool ok = std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp_.c_str());
    throw_error(Code::kIOError, path_ + ": cannot finish TFRecord file: " + std::strerror(e));
  }
}

TFRecordReader::TFRecordReader(std::string path, uint64_t max_record_bytes)
    : path_(std::move(path)), fd_(open_fd(path_, O_RDONLY)), max_record_bytes_(max_record_bytes) {
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0)
    throw_error(Code::kIOError, path_ + ": cannot stat TFRecord file: " + std::strerror(errno));
  file_size_ = static_cast<uint64_t>(st.st_size);
}

void TFRecordReader::corrupt(uint64_t offset, int64_t index, const std::string& what) const {
  throw_error(Code::kCorruption,
              path_ + ": record " + std::to_string(index) + " at byte " + std::to_string(offset) + ": " + what);
}

uint64_t TFRecordReader::length_at(uint64_t offset, int64_t index, bool* end) const {
  unsigned char header[12];
  const size_t got = pread_full(fd_.get(), header, 12, static_cast<int64_t>(offset), path_);
  *end = got == 0;
  if (*end) return 0;
  if (got != 12) corrupt(offset, index, "truncated header (" + std::to_string(got) + " of 12 bytes)");
  const uint64_t length = get_u64(header);
  if (crc32c::mask(crc32c::value(header, 8)) != get_u32(header + 8)) corrupt(offset, index, "length CRC mismatch");
  if (length > max_record_bytes_)
    corrupt(offset, index,
            "record length " + std::to_string(length) + " exceeds the limit of " + std::to_string(max_record_bytes_));
  if (length + 16 > file_size_ - offset)
    corrupt(offset, index,
            "record length " + std::to_string(length) + " runs past the end of the file (" +
                std::to_string(file_size_) + " bytes)");
  return length;
}

std::string TFRecordReader::read_at(uint64_t offset, int64_t index) const {
  bool end = false;
  const uint64_t length = length_at(offset, index, &end);
  if (end) corrupt(offset, index, "no record here (end of file)");
  std::string record(length + 4, '\0');
  if (pread_full(fd_.get(), record.data(), length + 4, static_cast<int64_t>(offset + 12), path_) != length + 4)
    corrupt(offset, index, "truncated record of " + std::to_string(length) + " bytes");
  const uint32_t footer = get_u32(reinterpret_cast<const unsigned char*>(record.data() + length));
  record.resize(length);
  if (crc32c::mask(crc32c::value(record)) != footer) corrupt(offset, index, "data CRC mismatch");
  return record;
}

bool TFRecordReader::read(std::string* record) {
  if (offset_ == file_size_) return false;
  *record = read_at(offset_, index_);
  ++index_;
  offset_ += 16 + record->size();
  return true;
}

bool TFRecordReader::skip() {
  bool end = false;
  const uint64_t length = length_at(offset_, index_, &end);
  if (end) return false;
  ++index_;
  offset_ += 16 + length;
  return true;
}

}  // namespace hub::data

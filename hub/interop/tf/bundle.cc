#include "hub/interop/tf/bundle.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "hub/core/crc32c.h"
#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/interop/tf/proto/tensor_bundle.pb.h"

namespace fs = std::filesystem;

namespace hub::tf {

static_assert(std::endian::native == std::endian::little, "tensor bundles are read and written little-endian");

namespace {

// The bundle format's version (tensorflow/core/util/tensor_bundle/tensor_bundle.cc):
// written as producer; as a consumer this reader is version 1 and needs
// producer >= 0.
constexpr int kBundleVersion = 1;
constexpr int kMaxShards = 99999;  // five digits in the data file names

struct TfType {
  int number;
  const char* name;
};
// TensorFlow's DataType numbers (hub/interop/tf/proto/types.proto).
constexpr TfType kTfTypes[] = {
    {1, "DT_FLOAT"},    {2, "DT_DOUBLE"},  {3, "DT_INT32"},       {4, "DT_UINT8"},        {5, "DT_INT16"},
    {6, "DT_INT8"},     {7, "DT_STRING"},  {8, "DT_COMPLEX64"},   {9, "DT_INT64"},        {10, "DT_BOOL"},
    {11, "DT_QINT8"},   {12, "DT_QUINT8"}, {13, "DT_QINT32"},     {14, "DT_BFLOAT16"},    {15, "DT_QINT16"},
    {16, "DT_QUINT16"}, {17, "DT_UINT16"}, {18, "DT_COMPLEX128"}, {19, "DT_HALF"},        {20, "DT_RESOURCE"},
    {21, "DT_VARIANT"}, {22, "DT_UINT32"}, {23, "DT_UINT64"},     {24, "DT_FLOAT8_E5M2"}, {25, "DT_FLOAT8_E4M3FN"},
    {29, "DT_INT4"},    {30, "DT_UINT4"},
};

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

std::string errno_text() { return std::strerror(errno); }

using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

// A file being written under a temporary name beside `path`: removed unless
// committed (renamed into place).
class PendingFile {
 public:
  explicit PendingFile(std::string path) : path_(std::move(path)), file_(nullptr, std::fclose) {
    static std::atomic<unsigned> counter{0};
    tmp_ = path_ + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    file_.reset(std::fopen(tmp_.c_str(), "wbx"));
    if (!file_) throw_error(Code::kIOError, "cannot create " + in_quotes(tmp_) + ": " + errno_text());
  }
  PendingFile(PendingFile&&) = default;
  ~PendingFile() {
    file_.reset();
    if (!committed_) ::unlink(tmp_.c_str());
  }

  uint64_t size() const { return size_; }
  void write(const void* data, size_t n) {
    if (n > 0 && std::fwrite(data, 1, n, file_.get()) != n)
      throw_error(Code::kIOError, "cannot write " + in_quotes(path_) + ": " + errno_text());
    size_ += n;
  }
  // Flushes the data to the disk and closes the file.
  void finish() {
    if (std::fflush(file_.get()) != 0 || ::fsync(::fileno(file_.get())) != 0)
      throw_error(Code::kIOError, "cannot write " + in_quotes(path_) + ": " + errno_text());
    if (std::fclose(file_.release()) != 0)
      throw_error(Code::kIOError, "cannot write " + in_quotes(path_) + ": " + errno_text());
  }
  void commit() {
    if (::rename(tmp_.c_str(), path_.c_str()) != 0)
      throw_error(Code::kIOError, "cannot rename into " + in_quotes(path_) + ": " + errno_text());
    committed_ = true;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;
  File file_;
  uint64_t size_ = 0;
  bool committed_ = false;
};

// The data files P.data-* that exist beside prefix P, sorted.
std::vector<fs::path> data_files(const std::string& prefix) {
  fs::path p(prefix);
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::string stem = p.filename().string() + ".data-";
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind(stem, 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The data files that exist beside prefix, for error messages.
std::string existing_data_files(const std::string& prefix) {
  std::string found;
  for (const fs::path& f : data_files(prefix)) found += (found.empty() ? "" : ", ") + f.filename().string();
  return found.empty() ? "no data files exist" : "found " + found;
}

}  // namespace

std::string tf_dtype_name(int tf_dtype) {
  for (const TfType& t : kTfTypes)
    if (t.number == tf_dtype) return t.name;
  return "DT_<" + std::to_string(tf_dtype) + ">";
}

std::optional<DType> dtype_from_tf(int tf_dtype) {
  switch (tf_dtype) {
    case proto::DT_FLOAT:
      return DType::kFloat32;
    case proto::DT_INT32:
      return DType::kInt32;
    case proto::DT_INT64:
      return DType::kInt64;
    case proto::DT_UINT8:
      return DType::kUInt8;
    case proto::DT_BOOL:
      return DType::kBool;
    case proto::DT_INT8:
      return DType::kInt8;
    default:
      return std::nullopt;
  }
}

int dtype_to_tf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return proto::DT_FLOAT;
    case DType::kInt32:
      return proto::DT_INT32;
    case DType::kInt64:
      return proto::DT_INT64;
    case DType::kUInt8:
      return proto::DT_UINT8;
    case DType::kBool:
      return proto::DT_BOOL;
    case DType::kInt8:
      return proto::DT_INT8;
  }
  HUB_UNREACHABLE("unknown dtype");
  return 0;
}

std::string bundle_index_path(const std::string& prefix) { return prefix + ".index"; }

std::string bundle_data_path(const std::string& prefix, int shard, int num_shards) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ".data-%05d-of-%05d", shard, num_shards);
  return prefix + buf;
}

bool is_bundle_prefix(const std::string& prefix) {
  std::error_code ec;
  return fs::is_regular_file(bundle_index_path(prefix), ec);
}

// ------------------------------------------------------------------ reader

struct BundleReader::Entry {
  DType dtype;
  Shape shape;
  int shard = 0;
  uint64_t offset = 0, size = 0;
  uint32_t masked_crc = 0;
};

BundleReader::BundleReader(const std::string& prefix)
    : prefix_(prefix), index_(Table::open(bundle_index_path(prefix))) {
  const std::string index_path = bundle_index_path(prefix);
  auto fail = [&](Code code, const std::string& what) { throw_error(code, in_quotes(index_path) + ": " + what); };
  std::optional<std::string> header_bytes = index_.get("");
  if (!header_bytes) fail(Code::kCorruption, "no bundle header (the entry under the empty key)");
  proto::BundleHeaderProto header;
  if (!header.ParseFromString(*header_bytes)) fail(Code::kCorruption, "the bundle header does not parse");
  if (header.num_shards() < 1 || header.num_shards() > kMaxShards)
    fail(Code::kCorruption, "the header's num_shards " + std::to_string(header.num_shards()) + " is not in [1, " +
                                std::to_string(kMaxShards) + "]");
  if (header.endianness() != proto::BundleHeaderProto::LITTLE)
    fail(Code::kUnimplemented, "the tensor data are big-endian; hub reads little-endian bundles only");
  const proto::VersionDef& v = header.version();
  if (v.producer() < 0 || v.min_consumer() > kBundleVersion)
    fail(Code::kFailedPrecondition, "bundle version (producer " + std::to_string(v.producer()) + ", min_consumer " +
                                        std::to_string(v.min_consumer()) + ") needs a reader newer than version " +
                                        std::to_string(kBundleVersion));
  for (int bad : v.bad_consumers())
    if (bad == kBundleVersion)
      fail(Code::kFailedPrecondition, "the bundle disallows readers of version " + std::to_string(kBundleVersion));
  num_shards_ = header.num_shards();
  for (int k = 0; k < num_shards_; ++k) {
    std::string data = bundle_data_path(prefix, k, num_shards_);
    std::error_code ec;
    if (!fs::is_regular_file(data, ec))
      fail(Code::kCorruption, "the header names " + std::to_string(num_shards_) + " data file(s) but " +
                                  in_quotes(data) + " does not exist (" + existing_data_files(prefix) + ")");
  }
}

std::vector<std::string> BundleReader::names() const {
  std::vector<std::string> out;
  index_.for_each([&](std::string_view key, std::string_view) {
    if (!key.empty()) out.emplace_back(key);
  });
  return out;
}

bool BundleReader::contains(const std::string& name) const { return !name.empty() && index_.get(name).has_value(); }

BundleReader::Entry BundleReader::entry(const std::string& name) const {
  const std::string index_path = bundle_index_path(prefix_);
  auto fail = [&](Code code, const std::string& what) {
    throw_error(code, in_quotes(index_path) + ": tensor " + in_quotes(name) + ": " + what);
  };
  std::optional<std::string> bytes = name.empty() ? std::nullopt : index_.get(name);
  if (!bytes)
    throw_error(Code::kNotFound, "tensor " + in_quotes(name) + " is not in checkpoint " + in_quotes(index_path));
  proto::BundleEntryProto p;
  if (!p.ParseFromString(*bytes)) fail(Code::kCorruption, "the entry does not parse");
  if (p.slices_size() > 0)
    fail(Code::kUnimplemented, "saved as " + std::to_string(p.slices_size()) +
                                   " slices (a partitioned variable); hub reads whole tensors only");
  Entry e;
  std::optional<DType> dtype = dtype_from_tf(p.dtype());
  if (!dtype) {
    bool known = tf_dtype_name(p.dtype()).rfind("DT_<", 0) != 0 && p.dtype() != 0;
    fail(known ? Code::kInvalidArgument : Code::kCorruption,
         known ? "dtype " + tf_dtype_name(p.dtype()) + " is not supported by hub (float32, int32, int64, uint8, bool)"
               : "invalid dtype " + std::to_string(p.dtype()));
  }
  e.dtype = *dtype;
  if (p.shape().unknown_rank()) fail(Code::kCorruption, "the shape has unknown rank");
  std::vector<int64_t> dims;
  uint64_t elements = 1;
  for (const auto& d : p.shape().dim()) {
    if (d.size() < 0) fail(Code::kCorruption, "the shape has dimension " + std::to_string(d.size()));
    dims.push_back(d.size());
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(d.size()), &elements))
      fail(Code::kCorruption, "the shape's element count overflows");
  }
  e.shape = Shape(dims);
  uint64_t expected = 0;
  if (__builtin_mul_overflow(elements, static_cast<uint64_t>(dtype_size(e.dtype)), &expected) || p.size() < 0 ||
      static_cast<uint64_t>(p.size()) != expected)
    fail(Code::kCorruption, "size " + std::to_string(p.size()) + " does not match " + std::string(dtype_name(e.dtype)) +
                                e.shape.to_string() + " (" + std::to_string(expected) + " bytes)");
  if (p.shard_id() < 0 || p.shard_id() >= num_shards_)
    fail(Code::kCorruption,
         "shard_id " + std::to_string(p.shard_id()) + " is not below num_shards " + std::to_string(num_shards_));
  if (p.offset() < 0) fail(Code::kCorruption, "negative offset " + std::to_string(p.offset()));
  e.shard = p.shard_id();
  e.offset = static_cast<uint64_t>(p.offset());
  e.size = expected;
  e.masked_crc = p.crc32c();
  return e;
}

TensorSpec BundleReader::spec(const std::string& name) const {
  Entry e = entry(name);
  return {e.dtype, e.shape};
}

Tensor BundleReader::read(const std::string& name) const {
  const Entry e = entry(name);
  const std::string path = bundle_data_path(prefix_, e.shard, num_shards_);
  auto fail = [&](Code code, const std::string& what) {
    throw_error(code, in_quotes(path) + ": tensor " + in_quotes(name) + ": " + what);
  };
  File file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) fail(errno == ENOENT ? Code::kNotFound : Code::kIOError, "cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(::fileno(file.get()), &st) != 0) fail(Code::kIOError, "cannot stat: " + errno_text());
  const auto file_size = static_cast<uint64_t>(st.st_size);
  if (e.offset > file_size || e.size > file_size - e.offset)
    fail(Code::kCorruption, "bytes [" + std::to_string(e.offset) + ", " + std::to_string(e.offset + e.size) +
                                ") lie past the end of the data file (" + std::to_string(file_size) + " bytes)");
  Tensor t(e.dtype, e.shape);
  if (e.size > 0) {
    if (::fseeko(file.get(), static_cast<off_t>(e.offset), SEEK_SET) != 0)
      fail(Code::kIOError, "cannot seek: " + errno_text());
    if (std::fread(t.raw_data(), 1, e.size, file.get()) != e.size)
      fail(std::ferror(file.get()) ? Code::kIOError : Code::kCorruption, "the data file ended early (truncated?)");
  }
  const uint32_t actual = crc32c::value(t.raw_data(), e.size);
  if (crc32c::mask(actual) != e.masked_crc) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "CRC-32C mismatch (entry 0x%08x, data 0x%08x)", crc32c::unmask(e.masked_crc),
                  actual);
    fail(Code::kCorruption, buf);
  }
  if (e.dtype == DType::kBool) {
    const auto* b = static_cast<const uint8_t*>(t.raw_data());
    for (uint64_t i = 0; i < e.size; ++i)
      if (b[i] > 1) fail(Code::kCorruption, "bool element " + std::to_string(i) + " is " + std::to_string(b[i]));
  }
  return t;
}

// ------------------------------------------------------------------ writer

void write_bundle(const std::string& prefix, const std::map<std::string, Tensor>& tensors,
                  const BundleWriteOptions& options) {
  const std::string index_path = bundle_index_path(prefix);
  if (options.num_shards < 1 || options.num_shards > kMaxShards)
    throw_error(Code::kInvalidArgument, "writing " + in_quotes(index_path) + ": num_shards " +
                                            std::to_string(options.num_shards) + " is not in [1, " +
                                            std::to_string(kMaxShards) + "]");
  if (options.alignment == 0)
    throw_error(Code::kInvalidArgument, "writing " + in_quotes(index_path) + ": alignment must be at least 1");
  for (const auto& [name, t] : tensors) {
    if (name.empty())
      throw_error(Code::kInvalidArgument,
                  "writing " + in_quotes(index_path) + ": a tensor has the empty name (the key of the bundle header)");
    if (!t.defined() || t.device() != Device::kCPU)
      throw_error(Code::kInvalidArgument, "writing " + in_quotes(index_path) + ": tensor " + in_quotes(name) +
                                              " is undefined or not on the CPU");
  }

  // Each tensor, in name order, goes to the shard with the fewest bytes.
  const int n = options.num_shards;
  std::vector<std::vector<const std::pair<const std::string, Tensor>*>> shards(static_cast<size_t>(n));
  std::vector<uint64_t> load(static_cast<size_t>(n), 0);
  for (const auto& item : tensors) {
    size_t k = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    shards[k].push_back(&item);
    load[k] += item.second.nbytes();
  }

  std::map<std::string, proto::BundleEntryProto> entries;
  std::vector<PendingFile> data;
  data.reserve(static_cast<size_t>(n));
  const std::string zeros(options.alignment, '\0');
  for (int k = 0; k < n; ++k) {
    PendingFile& f = data.emplace_back(bundle_data_path(prefix, k, n));
    for (const auto* item : shards[static_cast<size_t>(k)]) {
      const Tensor& t = item->second;
      proto::BundleEntryProto& e = entries[item->first];
      e.set_dtype(static_cast<proto::DataType>(dtype_to_tf(t.dtype())));
      for (int i = 0; i < t.rank(); ++i) e.mutable_shape()->add_dim()->set_size(t.dim(i));
      e.set_shard_id(k);
      e.set_offset(static_cast<int64_t>(f.size()));
      e.set_size(static_cast<int64_t>(t.nbytes()));
      e.set_crc32c(crc32c::mask(crc32c::value(t.raw_data(), t.nbytes())));
      f.write(t.raw_data(), t.nbytes());
      if (size_t over = f.size() % options.alignment; over != 0) f.write(zeros.data(), options.alignment - over);
    }
    f.finish();
  }

  TableBuilder table;
  proto::BundleHeaderProto header;
  header.set_num_shards(n);
  header.set_endianness(proto::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(kBundleVersion);
  table.add("", header.SerializeAsString());
  for (const auto& [name, e] : entries) table.add(name, e.SerializeAsString());
  const std::string index = table.finish();

  size_t committed = 0;
  try {
    for (PendingFile& f : data) {
      f.commit();
      ++committed;
    }
    write_file_atomic(index_path, index);
  } catch (...) {
    for (size_t i = 0; i < committed; ++i) ::unlink(data[i].path().c_str());
    throw;
  }
}

void remove_bundle(const std::string& prefix) {
  std::error_code ec;
  fs::remove(bundle_index_path(prefix), ec);
  for (const fs::path& f : data_files(prefix)) fs::remove(f, ec);
}

}  // namespace hub::tf

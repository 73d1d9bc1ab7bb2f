#include "modules/datasets/sources.h"

#include <archive.h>
#include <archive_entry.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "hub/core/error.h"
#include "modules/datasets/cifar_pickle.h"

namespace hub::data {
namespace {

struct GzFile {
  gzFile f;
  std::string path;
  explicit GzFile(const std::string& p) : f(gzopen(p.c_str(), "rb")), path(p) {
    if (!f) {
      const int e = errno;
      throw_error(e == ENOENT ? Code::kNotFound : Code::kIOError, path + ": cannot open: " + std::strerror(e));
    }
    gzbuffer(f, 1 << 17);
  }
  ~GzFile() { gzclose(f); }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Reads up to n bytes; returns how many (fewer only at end of data).
  size_t read(void* out, size_t n) {
    size_t got = 0;
    auto* p = static_cast<char*>(out);
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 30));
      const int r = gzread(f, p + got, chunk);
      if (r < 0) {
        int errnum = 0;
        const char* msg = gzerror(f, &errnum);
        throw_error(Code::kCorruption, path + ": bad gzip data: " + msg);
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    // zlib reports a truncated stream as an error after the short read.
    int errnum = 0;
    const char* msg = gzerror(f, &errnum);
    if (errnum != Z_OK && errnum != Z_STREAM_END) throw_error(Code::kCorruption, path + ": bad gzip data: " + msg);
    return got;
  }
};

}  // namespace

std::string read_gzip_file(const std::string& path, uint64_t max_bytes) {
  GzFile gz(path);
  std::string out;
  char buf[1 << 16];
  while (true) {
    const size_t n = gz.read(buf, sizeof buf);
    if (n == 0) break;
    if (out.size() + n > max_bytes)
      throw_error(Code::kResourceExhausted,
                  path + ": decompressed size exceeds the limit of " + std::to_string(max_bytes) + " bytes");
    out.append(buf, n);
  }
  return out;
}

Tensor read_idx_gz(const std::string& path, int64_t max_count) {
  GzFile gz(path);
  unsigned char magic[4];
  if (gz.read(magic, 4) != 4) throw_error(Code::kCorruption, path + ": IDX file too short");
  if (magic[0] != 0 || magic[1] != 0) throw_error(Code::kInvalidArgument, path + ": not an IDX file (bad magic bytes)");
  if (magic[2] != 0x08) {
    char type[8];
    std::snprintf(type, sizeof type, "0x%02x", magic[2]);
    throw_error(Code::kInvalidArgument,
                path + ": IDX element type " + type + " is not supported (only 0x08, unsigned byte)");
  }
  const int rank = magic[3];
  if (rank < 1 || rank > 4)
    throw_error(Code::kCorruption, path + ": IDX rank " + std::to_string(rank) + " not in 1..4");
  std::vector<int64_t> dims(rank);
  int64_t total = 1;
  for (int i = 0; i < rank; ++i) {
    unsigned char d[4];
    if (gz.read(d, 4) != 4) throw_error(Code::kCorruption, path + ": truncated IDX header");
    dims[i] = (int64_t{d[0]} << 24) | (d[1] << 16) | (d[2] << 8) | d[3];
    if (i == 0 && max_count > 0 && dims[0] > max_count) dims[0] = max_count;
    total *= dims[i];
    if (total > (int64_t{1} << 32))
      throw_error(Code::kResourceExhausted, path + ": IDX dims claim more than 2^32 bytes (dim " + std::to_string(i) +
                                                " = " + std::to_string(dims[i]) + ")");
  }
  Tensor out(DType::kUInt8, Shape(dims));
  const size_t got = gz.read(out.data<uint8_t>(), static_cast<size_t>(total));
  if (got != static_cast<size_t>(total))
    throw_error(Code::kCorruption, path + ": IDX data truncated: header says " + std::to_string(total) +
                                       " bytes, file has " + std::to_string(got));
  if (max_count <= 0) {
    unsigned char extra;
    if (gz.read(&extra, 1) != 0)
      throw_error(Code::kCorruption,
                  path + ": trailing bytes after the " + std::to_string(total) + " bytes the IDX header declares");
  }
  return out;
}

LabeledImages read_mnist(const std::string& images_gz, const std::string& labels_gz, int64_t max_count) {
  Tensor images = read_idx_gz(images_gz, max_count);
  Tensor labels = read_idx_gz(labels_gz, max_count);
  if (images.rank() != 3)
    throw_error(Code::kCorruption, images_gz + ": MNIST images must be rank 3, got " + images.shape().to_string());
  if (labels.rank() != 1)
    throw_error(Code::kCorruption, labels_gz + ": MNIST labels must be rank 1, got " + labels.shape().to_string());
  if (images.dim(0) != labels.dim(0))
    throw_error(Code::kCorruption, images_gz + " has " + std::to_string(images.dim(0)) + " images but " + labels_gz +
                                       " has " + std::to_string(labels.dim(0)) + " labels");
  LabeledImages out;
  out.images = images.reshaped(Shape{images.dim(0), images.dim(1), images.dim(2), 1});
  const uint8_t* l = labels.data<uint8_t>();
  out.labels.assign(l, l + labels.dim(0));
  for (int64_t i = 0; i < labels.dim(0); ++i)
    if (l[i] > 9)
      throw_error(Code::kCorruption,
                  labels_gz + ": label " + std::to_string(l[i]) + " at index " + std::to_string(i) + " not in 0..9");
  return out;
}

LabeledImages read_cifar10(const std::string& tar_gz, const std::string& split) {
  // The batches of the split, as the binary and the python version name them.
  std::vector<std::string> python;
  if (split == "train") {
    for (int i = 1; i <= 5; ++i) python.push_back("data_batch_" + std::to_string(i));
  } else if (split == "test") {
    python.push_back("test_batch");
  } else {
    throw_error(Code::kInvalidArgument, "CIFAR-10 split '" + split + "' (train or test)");
  }
  std::vector<std::string> binary;
  for (const auto& p : python) binary.push_back(p + ".bin");
  constexpr int64_t kRecord = 3073, kMaxBinaryEntry = 4 * 10000 * kRecord;
  std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), archive_read_free);
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_filename(a.get(), tar_gz.c_str(), 1 << 16) != ARCHIVE_OK)
    throw_error(std::filesystem::exists(tar_gz) ? Code::kCorruption : Code::kNotFound,
                tar_gz + ": cannot open CIFAR-10 archive: " + archive_error_string(a.get()));
  auto wanted = [](const std::vector<std::string>& names, const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  std::map<std::string, std::string> found;
  archive_entry* entry = nullptr;
  int rc;
  while ((rc = archive_read_next_header(a.get(), &entry)) == ARCHIVE_OK) {
    const std::string name = std::filesystem::path(archive_entry_pathname(entry)).filename();
    const bool is_binary = wanted(binary, name);
    if (!is_binary && !wanted(python, name)) continue;
    const int64_t size = archive_entry_size(entry);
    if (!archive_entry_size_is_set(entry) || size <= 0 ||
        (is_binary ? size % kRecord != 0 || size > kMaxBinaryEntry : size > static_cast<int64_t>(kMaxPickleBytes)))
      throw_error(Code::kCorruption,
                  tar_gz + ": " + name + " has " + std::to_string(size) + " bytes, " +
                      (is_binary ? "not a positive multiple of " + std::to_string(kRecord) + "-byte records"
                                 : "not a pickle of 1 to " + std::to_string(kMaxPickleBytes) + " bytes"));
    std::string data(static_cast<size_t>(size), '\0');
    const la_ssize_t n = archive_read_data(a.get(), data.data(), data.size());
    if (n != size)
      throw_error(Code::kCorruption, tar_gz + ": " + name + " truncated: read " + std::to_string(n) + " of " +
                                         std::to_string(size) + " bytes" +
                                         (n < 0 ? std::string(": ") + archive_error_string(a.get()) : std::string()));
    found[name] = std::move(data);
  }
  if (rc != ARCHIVE_EOF) throw_error(Code::kCorruption, tar_gz + ": bad archive: " + archive_error_string(a.get()));
  auto all_found = [&](const std::vector<std::string>& names) {
    return std::all_of(names.begin(), names.end(), [&](const std::string& n) { return found.count(n) > 0; });
  };
  LabeledImages out;
  if (all_found(binary)) {
    int64_t count = 0;
    for (const auto& w : binary) count += static_cast<int64_t>(found[w].size()) / kRecord;
    out.images = Tensor(DType::kUInt8, Shape{count, 32, 32, 3});
    out.labels.reserve(count);
    uint8_t* img = out.images.data<uint8_t>();
    int64_t i = 0;
    for (const auto& w : binary) {
      const auto* p = reinterpret_cast<const uint8_t*>(found[w].data());
      const int64_t n = static_cast<int64_t>(found[w].size()) / kRecord;
      for (int64_t r = 0; r < n; ++r, ++i) {
        const uint8_t* rec = p + r * kRecord;
        if (rec[0] > 9)
          throw_error(Code::kCorruption,
                      tar_gz + ": " + w + " record " + std::to_string(r) + " has label " + std::to_string(rec[0]));
        out.labels.push_back(rec[0]);
        cifar_planes_to_hwc(rec + 1, img + i * 3072);
      }
    }
    return out;
  }
  if (!all_found(python)) {
    const std::vector<std::string>& closer =
        std::any_of(python.begin(), python.end(), [&](const std::string& n) { return found.count(n) > 0; }) ? python
                                                                                                            : binary;
    for (const auto& w : closer)
      if (!found.count(w))
        throw_error(Code::kCorruption,
                    tar_gz + ": missing " + w + " (not a CIFAR-10 binary or python archive, or an incomplete one)");
  }
  std::vector<LabeledImages> parts;
  int64_t count = 0;
  for (const auto& w : python) {
    parts.push_back(parse_cifar_pickle(found[w], tar_gz + ": " + w));
    found.erase(w);
    count += parts.back().images.dim(0);
  }
  out.images = Tensor(DType::kUInt8, Shape{count, 32, 32, 3});
  uint8_t* img = out.images.data<uint8_t>();
  for (const auto& part : parts) {
    std::memcpy(img, part.images.data<uint8_t>(), static_cast<size_t>(part.images.dim(0)) * 3072);
    img += part.images.dim(0) * 3072;
    out.labels.insert(out.labels.end(), part.labels.begin(), part.labels.end());
  }
  return out;
}

void cifar_planes_to_hwc(const uint8_t* planes, uint8_t* hwc) {
  for (int px = 0; px < 1024; ++px)
    for (int c = 0; c < 3; ++c) hwc[px * 3 + c] = planes[c * 1024 + px];
}

ImageFolder list_image_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw_error(fs::exists(dir, ec) ? Code::kInvalidArgument : Code::kNotFound,
                dir + ": not a directory of class folders");
  auto hidden = [](const fs::path& p) { return p.filename().string().starts_with("."); };
  std::vector<fs::path> class_dirs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && !hidden(e.path())) class_dirs.push_back(e.path());
  std::sort(class_dirs.begin(), class_dirs.end());
  ImageFolder out;
  for (const auto& cd : class_dirs) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(cd))
      if (e.is_regular_file() && !hidden(e.path())) files.push_back(e.path().string());
    if (files.empty()) continue;
    std::sort(files.begin(), files.end());
    const int64_t label = static_cast<int64_t>(out.classes.size());
    out.classes.push_back(cd.filename().string());
    for (auto& f : files) out.items.push_back({std::move(f), label});
  }
  if (out.classes.empty()) throw_error(Code::kInvalidArgument, dir + ": no class folders with files found");
  return out;
}

}  // namespace hub::data

#include "registry/server/archive_check.h"

#include <archive.h>
#include <archive_entry.h>
#include <google/protobuf/unknown_field_set.h>

#include <memory>
#include <string_view>

#include "hub/core/error.h"

namespace hub::registry {
namespace {

// Normalized relative path, or empty if the path is unsafe.
std::string safe_relative(std::string_view path) {
  if (path.empty() || path.front() == '/') return {};
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part == "..") return {};
    if (!part.empty() && part != ".") {
      if (!out.empty()) out += '/';
      out += part;
    }
    start = end + 1;
  }
  return out.empty() ? std::string(".") : out;
}

}  // namespace

bool is_protobuf_wire_format(const std::string& data) {
  google::protobuf::UnknownFieldSet fields;
  return fields.ParseFromString(data);
}

ArchiveSummary inspect_module_archive(const std::filesystem::path& path, const ArchiveLimits& limits) {
  std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), &archive_read_free);
  HUB_CHECK(a != nullptr);
  archive_read_support_format_tar(a.get());
  archive_read_support_format_gnutar(a.get());
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_bzip2(a.get());
  archive_read_support_filter_xz(a.get());
  archive_read_support_filter_zstd(a.get());
  const std::string where = "archive " + path.filename().string();
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 16) != ARCHIVE_OK)
    throw_error(Code::kCorruption,
                where + " is not a readable tar archive: " + archive_error_string(a.get()));
  ArchiveSummary out;
  bool have_module_pb = false;
  std::string buf(1 << 16, '\0');
  while (true) {
    archive_entry* entry = nullptr;
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
      throw_error(Code::kCorruption, where + " is corrupt: " + archive_error_string(a.get()));
    const char* raw = archive_entry_pathname(entry);
    std::string name = raw ? raw : "";
    if (++out.entries > limits.max_entries)
      throw_error(Code::kResourceExhausted,
                  where + " has more than " + std::to_string(limits.max_entries) + " entries");
    std::string rel = safe_relative(name);
    if (rel.empty())
      throw_error(Code::kInvalidArgument, where + " has an unsafe entry path '" + name +
                                              "' (absolute, empty or containing '..')");
    if (archive_entry_hardlink(entry) || archive_entry_symlink(entry))
      throw_error(Code::kInvalidArgument, where + " has a link entry '" + name + "'; links are not allowed");
    mode_t type = archive_entry_filetype(entry);
    if (type == AE_IFDIR) continue;
    if (type != AE_IFREG)
      throw_error(Code::kInvalidArgument, where + " has entry '" + name + "' that is not a file or directory");
    bool is_module_pb = rel == "module.pb";
    if (is_module_pb && have_module_pb)
      throw_error(Code::kInvalidArgument, where + " has module.pb twice");
    uint64_t entry_bytes = 0;
    while (true) {
      la_ssize_t n = archive_read_data(a.get(), buf.data(), buf.size());
      if (n == 0) break;
      if (n < 0)
        throw_error(Code::kCorruption, where + " is corrupt in entry '" + name + "': " +
                                           archive_error_string(a.get()));
      entry_bytes += static_cast<uint64_t>(n);
      out.unpacked_bytes += static_cast<uint64_t>(n);
      if (entry_bytes > limits.max_entry_bytes)
        throw_error(Code::kResourceExhausted, where + " entry '" + name + "' expands past " +
                                                  std::to_string(limits.max_entry_bytes) + " bytes");
      if (out.unpacked_bytes > limits.max_total_bytes)
        throw_error(Code::kResourceExhausted, where + " expands past " +
                                                  std::to_string(limits.max_total_bytes) + " bytes");
      if (is_module_pb) {
        if (out.module_pb.size() + static_cast<size_t>(n) > limits.max_module_pb_bytes)
          throw_error(Code::kResourceExhausted, where + " module.pb is larger than " +
                                                    std::to_string(limits.max_module_pb_bytes) + " bytes");
        out.module_pb.append(buf.data(), static_cast<size_t>(n));
      }
    }
    if (is_module_pb) have_module_pb = true;
  }
  if (!have_module_pb)
    throw_error(Code::kInvalidArgument, where + " is not a module: it has no top-level module.pb");
  if (out.module_pb.empty() || !is_protobuf_wire_format(out.module_pb))
    throw_error(Code::kInvalidArgument, where + " is not a module: module.pb is not a protobuf message");
  return out;
}

}  // namespace hub::registry

#include "fixtures.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace hub::testing {

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + " failed");
  path = tmpl;
  namespace fs = std::filesystem;
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {
la_ssize_t append_to_string(struct archive*, void* user, const void* buf, size_t n) {
  static_cast<std::string*>(user)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}
}  // namespace

std::string make_tar(const std::vector<TarEntry>& entries, bool gzip, int gzip_level) {
  std::string out;
  struct archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_set_bytes_in_last_block(a, 1);  // no padding after the last record
  if (gzip) {
    archive_write_add_filter_gzip(a);
    std::string opt = "gzip:compression-level=" + std::to_string(gzip_level);
    archive_write_set_options(a, opt.c_str());
  }
  if (archive_write_open2(a, &out, nullptr, append_to_string, nullptr, nullptr) != ARCHIVE_OK) {
    throw std::runtime_error(archive_error_string(a));
  }
  struct archive_entry* e = archive_entry_new();
  for (const TarEntry& t : entries) {
    archive_entry_clear(e);
    archive_entry_set_pathname(e, t.path.c_str());
    archive_entry_set_perm(e, 0644);
    archive_entry_set_mtime(e, 1700000000, 0);
    switch (t.type) {
      case TarEntry::kFile:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, t.declared_size >= 0 ? t.declared_size : static_cast<int64_t>(t.data.size()));
        break;
      case TarEntry::kDir:
        archive_entry_set_filetype(e, AE_IFDIR);
        archive_entry_set_perm(e, 0755);
        break;
      case TarEntry::kSymlink:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, t.target.c_str());
        break;
      case TarEntry::kHardlink:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_hardlink(e, t.target.c_str());
        archive_entry_set_size(e, 0);
        break;
      case TarEntry::kCharDevice:
        archive_entry_set_filetype(e, AE_IFCHR);
        archive_entry_set_rdevmajor(e, 1);
        archive_entry_set_rdevminor(e, 3);
        break;
      case TarEntry::kFifo:
        archive_entry_set_filetype(e, AE_IFIFO);
        break;
      case TarEntry::kSocket:
        archive_entry_set_filetype(e, AE_IFSOCK);
        break;
    }
    if (archive_write_header(a, e) < ARCHIVE_WARN) {
      throw std::runtime_error(std::string("archive_write_header: ") + archive_error_string(a));
    }
    if (t.type == TarEntry::kFile && !t.data.empty()) {
      archive_write_data(a, t.data.data(), t.data.size());
    }
  }
  archive_entry_free(e);
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

std::vector<TarEntry> dir_entries(const std::filesystem::path& dir) {
  std::vector<TarEntry> out;
  for (const auto& it : std::filesystem::recursive_directory_iterator(dir)) {
    std::string rel = it.path().lexically_relative(dir).string();
    if (it.is_directory()) {
      out.push_back({rel, TarEntry::kDir});
    } else {
      out.push_back({rel, TarEntry::kFile, read_file(it.path())});
    }
  }
  return out;
}

}  // namespace hub::testing

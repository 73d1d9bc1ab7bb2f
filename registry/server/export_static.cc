#include "registry/server/export_static.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "hub/core/error.h"
#include "hub/core/fd.h"
#include "registry/server/registry_server.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hub::registry {
namespace {

constexpr mode_t kFileMode = 0644;
constexpr mode_t kDirMode = 0755;

void set_mode(const fs::path& path, mode_t mode) {
  if (::chmod(path.c_str(), mode) != 0)
    throw_error(Code::kIOError, "cannot chmod " + path.string() + ": " + std::strerror(errno));
}

// Creates `out`/`rel` folder by folder; every folder from `out` down is 0755.
fs::path public_dir(const fs::path& out, const fs::path& rel) {
  fs::path dir = out;
  for (const fs::path& part : rel) {
    dir /= part;
    if (::mkdir(dir.c_str(), kDirMode) != 0 && errno != EEXIST)
      throw_error(Code::kIOError, "cannot create " + dir.string() + ": " + std::strerror(errno));
    set_mode(dir, kDirMode);
  }
  return dir;
}

// Writes `text` to a temp sibling (0644) and renames it over `path`.
void write_public(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    Fd fd = open_fd(tmp, O_WRONLY | O_CREAT | O_TRUNC, kFileMode);
    if (::fchmod(fd.get(), kFileMode) != 0)
      throw_error(Code::kIOError, "cannot chmod " + tmp.string() + ": " + std::strerror(errno));
    write_all(fd.get(), text, tmp.string());
    fd.close(tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw_error(Code::kIOError, "cannot rename " + tmp.string() + ": " + ec.message());
}

}  // namespace

ExportStats export_static(Store& store, const fs::path& out) {
  ExportStats stats;
  if (::mkdir(out.c_str(), kDirMode) == 0) {
    set_mode(out, kDirMode);
  } else if (errno != EEXIST) {
    throw_error(Code::kIOError, "cannot create " + out.string() + ": " + std::strerror(errno));
  }
  std::set<std::string> blobs;
  json mods = json::array();
  for (const ModuleSummary& m : store.search("")) {
    mods.push_back(module_json(m));
    auto versions = store.versions(m.publisher, m.name);
    ++stats.modules;
    stats.versions += static_cast<int>(versions.size());
    for (const auto& v : versions) blobs.insert(v.sha256);
    fs::path dir = public_dir(out, fs::path("v1") / "modules" / m.publisher / m.name);
    write_public(dir / "versions.json", versions_doc(m.publisher, m.name, versions).dump(2));
  }
  fs::path blob_dir = public_dir(out, fs::path("v1") / "blobs" / "sha256");
  for (const std::string& sha : blobs) {
    fs::path src = store.blob_path(sha), dst = blob_dir / sha;
    std::error_code ec;
    if (fs::exists(dst, ec) && fs::file_size(dst, ec) == fs::file_size(src, ec)) {
      set_mode(dst, kFileMode);
      continue;
    }
    fs::path tmp = dst;
    tmp += ".tmp";
    fs::remove(tmp, ec);
    fs::create_hard_link(src, tmp, ec);
    if (ec) {
      ec.clear();
      fs::copy_file(src, tmp, fs::copy_options::overwrite_existing, ec);
    }
    if (ec) throw_error(Code::kIOError, "cannot export blob " + sha + " to " + tmp.string() + ": " + ec.message());
    set_mode(tmp, kFileMode);
    fs::rename(tmp, dst, ec);
    if (ec) throw_error(Code::kIOError, "cannot export blob " + sha + " to " + dst.string() + ": " + ec.message());
    ++stats.blobs;
  }
  public_dir(out, "v1");
  write_public(out / "v1" / "index.json", json{{"modules", mods}}.dump(2));
  return stats;
}

}  // namespace hub::registry

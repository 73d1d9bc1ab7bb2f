#include "registry/server/export_static.h"

#include <fstream>
#include <set>

#include "hub/core/error.h"
#include "hub/core/digest.h"
#include "registry/server/registry_server.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hub::registry {
namespace {

void write_atomic(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) throw_error(Code::kIOError, "cannot create " + path.parent_path().string() + ": " + ec.message());
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) throw_error(Code::kIOError, "cannot write " + tmp.string());
  }
  fs::rename(tmp, path, ec);
  if (ec) throw_error(Code::kIOError, "cannot rename " + tmp.string() + ": " + ec.message());
}

}  // namespace

ExportStats export_static(Store& store, const fs::path& out) {
  ExportStats stats;
  std::set<std::string> blobs;
  json mods = json::array();
  for (const ModuleSummary& m : store.search("")) {
    mods.push_back(module_json(m));
    auto versions = store.versions(m.publisher, m.name);
    ++stats.modules;
    stats.versions += static_cast<int>(versions.size());
    for (const auto& v : versions) blobs.insert(v.sha256);
    write_atomic(out / "v1" / "modules" / m.publisher / m.name / "versions.json",
                 versions_doc(m.publisher, m.name, versions).dump(2));
  }
  for (const std::string& sha : blobs) {
    fs::path dst = out / "v1" / "blobs" / "sha256" / sha;
    std::error_code ec;
    if (fs::exists(dst, ec) && fs::file_size(dst, ec) == fs::file_size(store.blob_path(sha), ec)) continue;
    fs::create_directories(dst.parent_path(), ec);
    fs::path tmp = dst;
    tmp += ".tmp";
    fs::remove(tmp, ec);
    fs::create_hard_link(store.blob_path(sha), tmp, ec);
    if (ec) {
      ec.clear();
      fs::copy_file(store.blob_path(sha), tmp, fs::copy_options::overwrite_existing, ec);
    }
    if (!ec) fs::rename(tmp, dst, ec);
    if (ec) throw_error(Code::kIOError, "cannot export blob " + sha + " to " + dst.string() + ": " + ec.message());
    ++stats.blobs;
  }
  write_atomic(out / "v1" / "index.json", json{{"modules", mods}}.dump(2));
  return stats;
}

}  // namespace hub::registry

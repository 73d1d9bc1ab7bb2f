// Writes the registry's read side as plain files any web server can serve:
//   OUT/v1/index.json                       {"modules":[...]}     (as GET /v1/index.json)
//   OUT/v1/modules/P/N/versions.json        {"versions":[...]}    (as GET .../versions.json)
//   OUT/v1/blobs/sha256/<hex>               archive bytes         (as GET /v1/blobs/sha256/<hex>)
// The paths equal the dynamic server's, so clients (search falls back to
// filtering index.json) and resolve_registry_handle() work against either.
// Blobs are hard-linked when OUT is on the same file system, else copied.
// Each file is written to a temp name and renamed, so a concurrent reader
// sees old or new content, never a partial file.
// Everything written is readable by a web server running as another user,
// whatever the umask: files 0644 (a hard-linked blob shares its inode with the
// store's, which is set 0644 too: blobs are public content), folders 0755
// (OUT itself when created here). Re-exporting repairs the modes of what an
// earlier export left. Throws kIOError naming the path.
#pragma once

#include <filesystem>

#include "registry/server/store.h"

namespace hub::registry {

struct ExportStats {
  int modules = 0;
  int versions = 0;
  int blobs = 0;
};

ExportStats export_static(Store& store, const std::filesystem::path& out);

}  // namespace hub::registry

// The module cache: one folder per archive, installed atomically.
//
// Layout under the root ($HUB_CACHE_DIR, else $XDG_CACHE_HOME/hub, else
// ~/.cache/hub):
//
//   <key>/                 key = SHA-1 hex of the entry's identity (see below)
//     module/              the unpacked module; what Resolver::resolve returns
//                          (converted, when the archive held a foreign model)
//     file/<name>          instead of module/: a file fetched as it is
//                          (Resolver::fetch_file; descriptor "kind": "file")
//     descriptor.json      handle, url, fetched_at, sha256, size, unpacked_bytes,
//                          entries, tree_sha256; for registry modules also
//                          registry and version; for converted ones
//                          source_format and import_options. URLs are stored
//                          redacted.
//     complete             SHA-256 hex of the archive; written last
//   <key>.lock             "pid host unix_time token": held while one writer works
//   refs/<ref>             what a registry name resolved to last (see resolver.h)
//   .tmp/                  per-writer work folders <key>.<host>.<pid>.<random>/
//   .partial/<key>/        a download of <key> cut short, kept for the next
//                          run to continue with Range (Resolver; see
//                          fetcher.h): body.part (the bytes received) and
//                          state.json (url, validator, total, bytes). Never
//                          an entry: list(), hits and verify() ignore it.
//
// Identity (cache_key): a URL or archive path is its text without the
// "#sha256=" fragment; a registry module is the registry's URL (without
// credentials), the concrete version and the archive's digest, so two
// registries, or two versions, never share an entry. A foreign model
// converted with non-default import options has the key of its identity and
// those options (import_cache_key), apart from the default conversion.
//
// Guarantees:
//   - An entry folder appears only by one rename(2) of a finished work folder,
//     so a reader never sees a partial module, even if the writer is killed.
//   - A folder without `complete` (damage, older layouts) counts as absent and
//     is replaced by the next writer.
//   - The lock only avoids duplicate downloads; correctness never depends on
//     it: racing writers each build their own work folder and the loser of the
//     rename discards its copy and uses the winner's.
//   - A lock whose owner is dead (same host) or that has not been refreshed for
//     `stale_after_s` is taken over.
//   - The root must be a directory owned by this user (or root) and not
//     writable by group or others; otherwise every operation fails with
//     PermissionDenied naming the fix, since another user could plant files or
//     links in it. Inside the root nothing is followed through a symbolic
//     link: entries, markers, descriptors, locks, refs/, .tmp/ and .partial/ are opened
//     relative to the checked root with O_NOFOLLOW, and a link found where one
//     of them belongs counts as damage (the entry is absent; a linked .tmp/ or
//     refs/ is removed and recreated).
//
// Thread safety: a Cache may be used from several threads; processes
// coordinate through the file system as described above.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hub/core/fd.h"

namespace hub::resolver {

// $HUB_CACHE_DIR, else $XDG_CACHE_HOME/hub, else $HOME/.cache/hub.
std::filesystem::path default_cache_dir();

// The handle with any trailing "#sha256=..." removed.
std::string strip_digest_fragment(const std::string& handle);
// Key of a URL or archive path: SHA-1 hex of strip_digest_fragment(handle).
std::string cache_key(const std::string& handle);
// Key of a plain file download (Resolver::fetch_file): SHA-1 hex of "file\n"
// and the URL without its fragment, apart from cache_key(url).
std::string file_cache_key(const std::string& url);
// Key of a registry module: SHA-1 hex over the registry's id, the module's
// name@version and the archive's SHA-256.
std::string registry_cache_key(const std::string& registry_id, const std::string& name_at_version,
                               const std::string& sha256);
// `key` for a conversion with import options `options_key`
// (hub::interop::options_key): `key` itself when that is empty, else the
// SHA-1 hex of both.
std::string import_cache_key(const std::string& key, const std::string& options_key);

struct CacheEntry {
  std::string key;
  std::filesystem::path dir;         // <root>/<key>
  std::filesystem::path module_dir;  // <root>/<key>/module, or <root>/<key>/file for a file entry
  bool complete = false;             // the `complete` marker is present and valid
  // From descriptor.json (empty/zero if it is missing or unreadable).
  std::string handle, url, fetched_at, sha256, tree_sha256, registry, version;
  // The foreign format the module was converted from (e.g. "tf_hub_module",
  // "onnx"; empty for a hub module archive) and the import options' text.
  std::string source_format, import_options;
  uint64_t size = 0;  // archive bytes
  uint64_t unpacked_bytes = 0;
  uint64_t entries = 0;
};

// What a registry name resolved to, kept under refs/.
struct CachedRef {
  std::string handle;    // as given, e.g. "acme/net@latest"
  std::string registry;  // registry id
  std::string version;   // e.g. "1.2.0"
  std::string sha256;    // the archive's
  std::string resolved_at;
};

class Cache;

// A held `<key>.lock`. Released (file removed if still ours) on destruction.
class CacheLock {
 public:
  // Blocks until the lock is held, or until `done()` returns true (then the
  // returned lock is not held: held() == false). Polls every `poll_s` seconds;
  // stops the wait with kUnavailable "interrupted" when hub::interrupted().
  // The lock borrows the cache's root descriptor: `cache` must outlive it.
  static CacheLock acquire(const Cache& cache, const std::string& key, double stale_after_s, double poll_s,
                           const std::function<bool()>& done);
  CacheLock(CacheLock&& other) noexcept;
  CacheLock& operator=(CacheLock&&) = delete;
  CacheLock(const CacheLock&) = delete;
  ~CacheLock();

  bool held() const { return root_fd_ >= 0; }
  // Refreshes the lock's time so others do not judge it stale (cheap; rate-limited).
  void heartbeat();
  void release();

 private:
  CacheLock() = default;
  int root_fd_ = -1;  // the cache's (borrowed); -1 when not held
  std::string name_;  // <key>.lock
  std::string token_;
  double last_beat_ = 0;
};

class Cache {
 public:
  // Opens and checks `root` if it exists (PermissionDenied when it is
  // writable by group or others, or owned by another user; InvalidArgument
  // when it is not a directory). A missing root is an empty cache.
  explicit Cache(std::filesystem::path root);
  Cache(Cache&&) noexcept = default;
  Cache& operator=(Cache&&) noexcept = default;

  const std::filesystem::path& root() const { return root_; }
  // Creates the root (mode 0700 for folders this creates) and .tmp/ when
  // missing, and opens it. Throws IOError naming the root.
  void create();
  // The checked root's descriptor (-1 when the root does not exist).
  int root_fd() const { return root_fd_.get(); }

  std::filesystem::path entry_dir(const std::string& key) const { return root_ / key; }
  std::filesystem::path lock_path(const std::string& key) const { return root_ / (key + ".lock"); }
  std::filesystem::path tmp_dir() const { return root_ / ".tmp"; }

  // The entry for `key` if its folder exists (complete or not).
  std::optional<CacheEntry> read_entry(const std::string& key) const;
  // The SHA-256 in `<key>/complete` when the entry is complete, else nullopt.
  std::optional<std::string> complete_sha256(const std::string& key) const;

  // refs/<sha1(registry + handle)>: what `handle` resolved to at `registry`.
  std::optional<CachedRef> read_ref(const std::string& registry, const std::string& handle) const;
  void write_ref(const CachedRef& ref);

  // Creates a private work folder in .tmp/ for `key` (create() first).
  std::filesystem::path make_work_dir(const std::string& key);

  std::vector<CacheEntry> list() const;
  // Removes the entries matching `handle_or_key`: a 40-hex key, a handle's
  // key, or entries whose recorded handle equals it (e.g. "acme/net@1.0.0",
  // from any registry). Returns how many were removed. Takes each entry's lock.
  size_t remove(const std::string& handle_or_key);
  // Removes every entry, ref, work folder and kept partial download. Returns
  // the number of entries.
  size_t clear();

  struct Verdict {
    CacheEntry entry;
    bool ok = false;
    std::string problem;  // empty when ok
  };
  // Re-hashes every entry's module tree against its recorded tree_sha256.
  std::vector<Verdict> verify() const;

  // Removes work folders of `key` left by dead processes on this host (and any
  // older than a day).
  void clean_stale_work(const std::string& key) const;

  // A download cut short (see .partial/ above). Both calls need the key's
  // lock held.
  struct PartialDownload {
    std::string url;        // what it was downloaded from, credentials redacted
    std::string validator;  // ResumeState::validator
    uint64_t total = 0;     // ResumeState::total
    uint64_t bytes = 0;     // the size of body.part when it was kept
  };
  // Moves the kept body of `key` to `dest` (a path in this cache's work
  // folder) and returns its state, when one was kept for this `url` and the
  // body still has the recorded size; otherwise (none, another URL, damage,
  // links) nothing is moved, and whatever was kept for `key` is removed.
  std::optional<PartialDownload> take_partial(const std::string& key, const std::string& url,
                                              const std::filesystem::path& dest);
  // Keeps the file `body` (moved, not copied; in this cache's work folder)
  // with `state` for the next take_partial, replacing what was kept for `key`.
  // Best effort: a failure is logged, not thrown, since it runs while another
  // error is on its way up.
  void keep_partial(const std::string& key, const PartialDownload& state, const std::filesystem::path& body) noexcept;

 private:
  std::filesystem::path root_;
  Fd root_fd_;
};

// SHA-256 over a directory tree: for each path in sorted order its type, name,
// and content digest (files) or target (symlinks). Independent of mtimes.
std::string tree_sha256(const std::filesystem::path& dir);

// "pid host" helpers shared with the lock.
std::string this_host();
bool pid_alive(long pid);

}  // namespace hub::resolver

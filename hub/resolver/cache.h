// The module cache: one folder per handle, installed atomically.
//
// Layout under the root ($HUB_CACHE_DIR, else $XDG_CACHE_HOME/hub, else
// ~/.cache/hub):
//
//   <key>/                 key = SHA-1 hex of the handle (without #sha256=...)
//     module/              the unpacked module; what resolve() returns
//     descriptor.json      handle, url, fetched_at, sha256, size, unpacked_bytes,
//                          entries, tree_sha256
//     complete             SHA-256 hex of the archive; written last
//   <key>.lock             "pid host unix_time": held while one writer works
//   .tmp/                  per-writer work folders <key>.<host>.<pid>.<random>/
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
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hub::resolver {

// $HUB_CACHE_DIR, else $XDG_CACHE_HOME/hub, else $HOME/.cache/hub.
std::filesystem::path default_cache_dir();

// The handle with any trailing "#sha256=..." removed.
std::string strip_digest_fragment(const std::string& handle);
// SHA-1 hex of strip_digest_fragment(handle).
std::string cache_key(const std::string& handle);

struct CacheEntry {
  std::string key;
  std::filesystem::path dir;         // <root>/<key>
  std::filesystem::path module_dir;  // <root>/<key>/module
  bool complete = false;             // the `complete` marker is present and valid
  // From descriptor.json (empty/zero if it is missing or unreadable).
  std::string handle, url, fetched_at, sha256, tree_sha256;
  uint64_t size = 0;            // archive bytes
  uint64_t unpacked_bytes = 0;
  uint64_t entries = 0;
};

// A held `<key>.lock`. Released (file removed if still ours) on destruction.
class CacheLock {
 public:
  // Blocks until the lock is held, or until `done()` returns true (then the
  // returned lock is not held: held() == false). Polls every `poll_s` seconds.
  static CacheLock acquire(const std::filesystem::path& root, const std::string& key,
                           double stale_after_s, double poll_s,
                           const std::function<bool()>& done);
  CacheLock(CacheLock&& other) noexcept;
  CacheLock& operator=(CacheLock&&) = delete;
  CacheLock(const CacheLock&) = delete;
  ~CacheLock();

  bool held() const { return !path_.empty(); }
  // Refreshes the lock's time so others do not judge it stale (cheap; rate-limited).
  void heartbeat();
  void release();

 private:
  CacheLock() = default;
  std::filesystem::path path_;
  std::string token_;
  double last_beat_ = 0;
};

class Cache {
 public:
  explicit Cache(std::filesystem::path root);
  const std::filesystem::path& root() const { return root_; }

  std::filesystem::path entry_dir(const std::string& key) const { return root_ / key; }
  std::filesystem::path lock_path(const std::string& key) const;
  std::filesystem::path tmp_dir() const { return root_ / ".tmp"; }

  // The entry for `key` if its folder exists (complete or not).
  std::optional<CacheEntry> read_entry(const std::string& key) const;
  // The SHA-256 in `<key>/complete` when the entry is complete, else nullopt.
  std::optional<std::string> complete_sha256(const std::string& key) const;

  std::vector<CacheEntry> list() const;
  // Removes the entry of `handle_or_key` (a handle, or a 40-hex key). Returns
  // false when there was none. Takes the entry's lock.
  bool remove(const std::string& handle_or_key);
  // Removes every entry and every work folder. Returns the number of entries.
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

 private:
  std::filesystem::path root_;
};

// SHA-256 over a directory tree: for each path in sorted order its type, name,
// and content digest (files) or target (symlinks). Independent of mtimes.
std::string tree_sha256(const std::filesystem::path& dir);

// "pid host" helpers shared with the lock.
std::string this_host();
bool pid_alive(long pid);

}  // namespace hub::resolver

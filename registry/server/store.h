// The registry's storage: metadata in SQLite, archives as content-addressed blobs.
//
// Layout under the root directory:
//   registry.db                  SQLite (WAL mode, busy timeout): tokens, versions
//   blobs/sha256/ab/abcdef...    archives, named by the SHA-256 of their bytes
//   tmp/                         uploads in progress (removed by recover())
//
// Visibility: a version exists iff its row exists in `versions`; the row is
// inserted last, in one transaction, after the blob is fsynced and renamed into
// place. A crash at any point therefore leaves no visible version and no row;
// at worst a temp file or an unreferenced blob, both removed by recover().
// (PRIMARY KEY(publisher, name, version)) makes concurrent publishes of the
// same version race safely: exactly one INSERT succeeds.
//
// Tokens are stored only as SHA-256 hashes and compared in constant time.
//
// Thread safety: all methods may be called concurrently (a small pool of
// SQLite connections). recover() must run while no upload is in progress in
// any process (the server calls it once at start; one server per root).
#pragma once

#include <sqlite3.h>

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace hub::registry {

struct VersionRecord {
  std::string publisher, name, version;
  std::string sha256;
  uint64_t size = 0;
  std::string description;
  std::string signatures_json = "[]";  // JSON array summarizing the module's signatures
  int64_t published_at = 0;             // unix seconds
};

struct ModuleSummary {
  std::string publisher, name;
  std::string description;  // of the latest version
  std::string latest;       // what @latest resolves to: highest release, else highest prerelease
  int64_t num_versions = 0;
  int64_t updated_at = 0;   // newest publish time
};

class Store {
 public:
  // Creates the root layout and schema if missing. Throws kIOError naming the path.
  explicit Store(std::filesystem::path root);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path tmp_dir() const { return root_ / "tmp"; }
  std::filesystem::path blob_path(const std::string& sha256) const;

  // Removes temp files and blobs no row refers to. Returns how many files were removed.
  int recover();

  // Creates a token for `publisher` (normalized); returns it (the only time it is visible).
  std::string create_token(const std::string& publisher);
  // The publisher a token may publish for, or nullopt for an unknown/malformed token.
  std::optional<std::string> authenticate(const std::string& token);

  bool has_version(const std::string& publisher, const std::string& name,
                   const std::string& version);
  std::optional<VersionRecord> version(const std::string& publisher, const std::string& name,
                                       const std::string& version);
  // All versions of a module, highest semantic version first.
  std::vector<VersionRecord> versions(const std::string& publisher, const std::string& name);
  // Modules whose "publisher/name" or description contains `query` (case-insensitive);
  // an empty query lists all. Sorted by publisher/name.
  std::vector<ModuleSummary> search(const std::string& query);

  // Moves the fsynced file `temp` (whose SHA-256 is rec.sha256) into the blob
  // store and inserts the version row. Throws kAlreadyExists if the version
  // exists (the temp file is removed either way).
  void commit_version(const std::filesystem::path& temp, const VersionRecord& rec);

 private:
  class Conn;
  friend class Conn;
  sqlite3* acquire();
  void release(sqlite3* db);
  sqlite3* open_connection();

  std::filesystem::path root_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<sqlite3*> free_;
  int open_count_ = 0;
};

}  // namespace hub::registry

// The registry's storage: metadata in SQLite, archives as content-addressed blobs.
//
// Layout under the root directory:
//   registry.db                  SQLite (WAL mode, busy timeout): tokens, versions
//   blobs/sha256/ab/abcdef...    archives, named by the SHA-256 of their bytes
//   tmp/                         uploads in progress (removed by recover())
//
// Visibility: a version exists iff its row exists in `versions`. A commit
// runs in one write transaction (BEGIN IMMEDIATE: one writer at a time, across
// processes): check that the version is new and the name's spelling is the
// published one, rename the fsynced upload into place as its blob, insert the
// row, commit. A crash at any point therefore leaves no visible version and
// no row; at worst a temp file or an unreferenced blob, both removed by
// recover(). Of concurrent publishes of one version exactly one commits; the
// others get kAlreadyExists and leave no blob behind: a blob a failed commit
// placed is removed before its transaction ends, while no other commit can
// refer to it (a blob that already existed belongs to a committed version and
// stays).
//
// Blobs are written 0644 (public content; a static export hard-links them).
//
// Names: module names are kept as first published; a name with the same
// canonical_name() (registry/names.h) as a published module of the same
// publisher is that module (published_name()), and publishing under another
// spelling is refused. Publisher names are held to the same rule when tokens
// are created. Spellings that already coexist in a registry made before this
// rule keep working, each as itself.
//
// Tokens are "hubt_<id>_<secret>": a 16-hex-digit id, public and safe to log
// (what `hub registry token list/revoke` show and take), and a 64-hex-digit
// secret. Only the SHA-256 of the whole token is stored, compared in constant
// time. A token may expire (expires_at) and may be revoked (revoked_at); both
// are kept, so `token list` shows what happened to it.
//
// Schema versions: PRAGMA user_version numbers the schema. Opening a store
// applies, in one transaction each, every migration past the database's
// version (kMigrations in store.cc: 1 = tokens.expires_at, tokens.revoked_at),
// so a registry made by an older hub keeps working; a database newer than
// kStoreSchemaVersion is refused (kFailedPrecondition) rather than misread.
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

inline constexpr int kStoreSchemaVersion = 1;

struct TokenRecord {
  std::string id;          // the token's public id (16 hex digits)
  std::string publisher;   // normalized publisher name it may publish for
  int64_t created_at = 0;  // unix seconds
  int64_t expires_at = 0;  // unix seconds; 0 = never expires
  int64_t revoked_at = 0;  // unix seconds; 0 = not revoked
};

enum class AuthStatus { kOk, kMalformed, kUnknown, kWrongSecret, kRevoked, kExpired };

struct AuthResult {
  AuthStatus status = AuthStatus::kMalformed;
  std::string token_id;   // set unless kMalformed: safe to log
  std::string publisher;  // set when kOk
};

struct VersionRecord {
  std::string publisher, name, version;
  std::string sha256;
  uint64_t size = 0;
  std::string description;
  std::string signatures_json = "[]";  // JSON array summarizing the module's signatures
  int64_t published_at = 0;            // unix seconds
};

struct ModuleSummary {
  std::string publisher, name;
  std::string description;  // of the latest version
  std::string latest;       // what @latest resolves to: highest release, else highest prerelease
  int64_t num_versions = 0;
  int64_t updated_at = 0;  // newest publish time
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

  // Creates a token for `publisher` (normalized), expiring at `expires_at`
  // (unix seconds; 0 = never, negative: kInvalidArgument); returns it, the only
  // time its secret is visible. kAlreadyExists, naming the existing spelling,
  // when another spelling of the publisher has tokens.
  std::string create_token(const std::string& publisher, int64_t expires_at = 0);
  // All tokens, oldest first.
  std::vector<TokenRecord> list_tokens();
  // Revokes the token with this id; false when it was revoked already.
  // Throws kInvalidArgument for a malformed id, kNotFound for an unknown one.
  bool revoke_token(const std::string& id);
  // Checks a presented token. kRevoked and kExpired are reported only for the
  // right secret (a guess learns nothing beyond kWrongSecret).
  AuthResult authenticate(const std::string& token);

  // The spelling under which `publisher` publishes the module `name` names:
  // `name` itself when published so, else the first published spelling with
  // the same canonical_name(), else nullopt.
  std::optional<std::string> published_name(const std::string& publisher, const std::string& name);
  bool has_version(const std::string& publisher, const std::string& name, const std::string& version);
  // Throws kAlreadyExists when commit_version() would refuse this version:
  // it exists, or `name` is another spelling of a published module (the
  // message names it). For refusing before an upload is received.
  void check_publishable(const std::string& publisher, const std::string& name, const std::string& version);
  std::optional<VersionRecord> version(const std::string& publisher, const std::string& name,
                                       const std::string& version);
  // All versions of a module, highest semantic version first.
  std::vector<VersionRecord> versions(const std::string& publisher, const std::string& name);
  // Modules whose "publisher/name" or description contains `query` (case-insensitive);
  // an empty query lists all. Sorted by publisher/name.
  std::vector<ModuleSummary> search(const std::string& query);

  // Moves the fsynced file `temp` (whose SHA-256 is rec.sha256) into the blob
  // store and inserts the version row (see "Visibility"). Throws
  // kAlreadyExists if the version exists, or if rec.name is another spelling
  // of a published module (the message names it). The temp file is removed
  // either way.
  void commit_version(const std::filesystem::path& temp, const VersionRecord& rec);

 private:
  class Conn;
  friend class Conn;
  sqlite3* acquire();
  void release(sqlite3* db);
  sqlite3* open_connection();
  void migrate(sqlite3* db);
  void check_publishable(sqlite3* db, const std::string& publisher, const std::string& name,
                         const std::string& version);
  std::optional<std::string> published_name(sqlite3* db, const std::string& publisher, const std::string& name);

  std::filesystem::path root_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<sqlite3*> free_;
  int open_count_ = 0;
};

}  // namespace hub::registry

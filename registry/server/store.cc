#include "registry/server/store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <map>
#include <set>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/fd.h"
#include "registry/names.h"

namespace fs = std::filesystem;

namespace hub::registry {
namespace {

constexpr int kMaxConnections = 8;

// The schema as the first release created it (user_version 0); kMigrations
// bring it to kStoreSchemaVersion. Never edit these: add a migration.
const char* kBaseSchema = R"sql(
CREATE TABLE IF NOT EXISTS tokens(
  id TEXT PRIMARY KEY,
  publisher TEXT NOT NULL,
  hash TEXT NOT NULL,
  created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS versions(
  publisher TEXT NOT NULL,
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size INTEGER NOT NULL,
  description TEXT NOT NULL,
  signatures TEXT NOT NULL,
  published_at INTEGER NOT NULL,
  PRIMARY KEY(publisher, name, version));
)sql";

struct Migration {
  int version;       // user_version after it
  const char* what;  // for the error when it fails
  const char* sql;
};
const Migration kMigrations[] = {
    {1, "tokens can expire and be revoked",
     "ALTER TABLE tokens ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE tokens ADD COLUMN revoked_at INTEGER NOT NULL DEFAULT 0;"},
};
static_assert(std::size(kMigrations) == kStoreSchemaVersion, "one migration per schema version");

bool is_token_id(const std::string& id) {
  if (id.size() != 16) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

[[noreturn]] void sql_error(sqlite3* db, const std::string& what) {
  throw_error(Code::kIOError, "registry database: " + what + ": " + sqlite3_errmsg(db));
}

// RAII prepared statement.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) sql_error(db, "prepare");
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt& bind(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  // True while rows remain; throws on error.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    sql_error(db_, "step");
  }
  std::string text(int i) {
    const unsigned char* p = sqlite3_column_text(stmt_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, i)))
             : std::string();
  }
  int64_t integer(int i) { return sqlite3_column_int64(stmt_, i); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown";
    sqlite3_free(err);
    throw_error(Code::kIOError, std::string("registry database: ") + msg);
  }
}

VersionRecord read_record(Stmt& s) {
  VersionRecord r;
  r.publisher = s.text(0);
  r.name = s.text(1);
  r.version = s.text(2);
  r.sha256 = s.text(3);
  r.size = static_cast<uint64_t>(s.integer(4));
  r.description = s.text(5);
  r.signatures_json = s.text(6);
  r.published_at = s.integer(7);
  return r;
}

bool version_less(const std::string& a, const std::string& b) {
  try {
    return compare_versions(parse_version(a), parse_version(b)) < 0;
  } catch (const Error&) {
    return a < b;
  }
}

// The version @latest resolves to: releases before prereleases, then highest.
bool better_latest(const std::string& candidate, const std::string& current) {
  try {
    Version c = parse_version(candidate), cur = parse_version(current);
    if (c.prerelease.empty() != cur.prerelease.empty()) return c.prerelease.empty();
    return compare_versions(c, cur) > 0;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

class Store::Conn {
 public:
  explicit Conn(Store* s) : store_(s), db_(s->acquire()) {}
  ~Conn() { store_->release(db_); }
  sqlite3* get() const { return db_; }

 private:
  Store* store_;
  sqlite3* db_;
};

Store::Store(fs::path root) : root_(std::move(root)) {
  std::error_code ec;
  fs::create_directories(root_ / "blobs" / "sha256", ec);
  if (!ec) fs::create_directories(root_ / "tmp", ec);
  if (ec) throw_error(Code::kIOError, "cannot create registry root " + root_.string() + ": " + ec.message());
  try {
    Conn c(this);
    exec(c.get(), kBaseSchema);
    migrate(c.get());
  } catch (...) {
    for (sqlite3* db : free_) sqlite3_close(db);  // no destructor runs for a failed constructor
    throw;
  }
}

void Store::migrate(sqlite3* db) {
  exec(db, "BEGIN IMMEDIATE");  // one migrator at a time, across processes
  try {
    int64_t version;
    {
      Stmt s(db, "PRAGMA user_version");
      s.step();
      version = s.integer(0);
    }
    if (version > kStoreSchemaVersion)
      throw_error(Code::kFailedPrecondition, "registry database " + (root_ / "registry.db").string() +
                                                 " has schema version " + std::to_string(version) +
                                                 "; this hub knows versions up to " +
                                                 std::to_string(kStoreSchemaVersion) + " (upgrade hub)");
    for (const Migration& m : kMigrations) {
      if (m.version <= version) continue;
      try {
        exec(db, m.sql);
        exec(db, ("PRAGMA user_version = " + std::to_string(m.version)).c_str());
      } catch (const Error& e) {
        throw e.with_context("migrating " + (root_ / "registry.db").string() + " to schema version " +
                             std::to_string(m.version) + " (" + m.what + ")");
      }
    }
    exec(db, "COMMIT");
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

Store::~Store() {
  for (sqlite3* db : free_) sqlite3_close(db);
}

sqlite3* Store::open_connection() {
  sqlite3* db = nullptr;
  fs::path path = root_ / "registry.db";
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw_error(Code::kIOError, "cannot open registry database " + path.string() + ": " + msg);
  }
  sqlite3_busy_timeout(db, 10000);
  try {
    exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;");
  } catch (...) {
    sqlite3_close(db);
    throw;
  }
  return db;
}

sqlite3* Store::acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (!free_.empty()) {
      sqlite3* db = free_.back();
      free_.pop_back();
      return db;
    }
    if (open_count_ < kMaxConnections) {
      ++open_count_;
      lock.unlock();
      try {
        return open_connection();
      } catch (...) {
        lock.lock();
        --open_count_;
        cv_.notify_one();
        throw;
      }
    }
    cv_.wait(lock);
  }
}

void Store::release(sqlite3* db) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(db);
  cv_.notify_one();
}

fs::path Store::blob_path(const std::string& sha256) const {
  HUB_CHECK(is_sha256_hex(sha256) && sha256 == to_lower(sha256), sha256);
  return root_ / "blobs" / "sha256" / sha256.substr(0, 2) / sha256;
}

int Store::recover() {
  int removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(tmp_dir(), ec)) {
    fs::remove_all(e.path(), ec);
    ++removed;
  }
  std::set<std::string> referenced;
  {
    Conn c(this);
    Stmt s(c.get(), "SELECT DISTINCT sha256 FROM versions");
    while (s.step()) referenced.insert(s.text(0));
  }
  for (const auto& e : fs::recursive_directory_iterator(root_ / "blobs" / "sha256", ec)) {
    if (!e.is_regular_file()) continue;
    if (!referenced.count(e.path().filename().string())) {
      fs::remove(e.path(), ec);
      ++removed;
    }
  }
  return removed;
}

std::string Store::create_token(const std::string& publisher, int64_t expires_at) {
  std::string pub = normalize_name(publisher, "publisher");
  if (expires_at < 0)
    throw_error(Code::kInvalidArgument, "token expiry " + std::to_string(expires_at) + " is negative");
  std::string id = random_hex(8);
  std::string token = "hubt_" + id + "_" + random_hex(32);
  Conn c(this);
  exec(c.get(), "BEGIN IMMEDIATE");
  try {
    {
      Stmt existing(c.get(), "SELECT DISTINCT publisher FROM tokens");
      while (existing.step()) {
        std::string other = existing.text(0);
        if (other != pub && canonical_name(other) == canonical_name(pub))
          throw_error(Code::kAlreadyExists, "publisher '" + pub + "' is another spelling of the existing publisher '" +
                                                other +
                                                "' (names differing only in '-', '_', '.' or case are one name)");
      }
    }
    {
      Stmt s(c.get(), "INSERT INTO tokens(id, publisher, hash, created_at, expires_at) VALUES(?,?,?,?,?)");
      s.bind(1, id).bind(2, pub).bind(3, sha256_hex(token)).bind(4, static_cast<int64_t>(::time(nullptr)));
      s.bind(5, expires_at);
      s.step();
    }
    exec(c.get(), "COMMIT");
  } catch (...) {
    sqlite3_exec(c.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return token;
}

std::vector<TokenRecord> Store::list_tokens() {
  std::vector<TokenRecord> out;
  Conn c(this);
  Stmt s(c.get(), "SELECT id, publisher, created_at, expires_at, revoked_at FROM tokens ORDER BY created_at, id");
  while (s.step()) out.push_back(TokenRecord{s.text(0), s.text(1), s.integer(2), s.integer(3), s.integer(4)});
  return out;
}

bool Store::revoke_token(const std::string& id) {
  if (!is_token_id(id))
    throw_error(Code::kInvalidArgument, "token id '" + id.substr(0, 40) + "' is not 16 lower-case hex digits");
  Conn c(this);
  {
    Stmt s(c.get(), "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at = 0");
    s.bind(1, static_cast<int64_t>(::time(nullptr))).bind(2, id);
    s.step();
  }
  if (sqlite3_changes(c.get()) > 0) return true;
  Stmt exists(c.get(), "SELECT 1 FROM tokens WHERE id = ?");
  exists.bind(1, id);
  if (!exists.step()) throw_error(Code::kNotFound, "no token with id " + id);
  return false;
}

AuthResult Store::authenticate(const std::string& token) {
  // hubt_<16 hex id>_<64 hex secret>
  AuthResult r;
  if (token.size() != 5 + 16 + 1 + 64 || token.compare(0, 5, "hubt_") != 0 || token[21] != '_' ||
      !is_token_id(token.substr(5, 16)))
    return r;  // kMalformed
  r.token_id = token.substr(5, 16);
  Conn c(this);
  Stmt s(c.get(), "SELECT publisher, hash, expires_at, revoked_at FROM tokens WHERE id = ?");
  s.bind(1, r.token_id);
  if (!s.step()) {
    r.status = AuthStatus::kUnknown;
    return r;
  }
  if (!constant_time_equal(sha256_hex(token), s.text(1))) {
    r.status = AuthStatus::kWrongSecret;
    return r;
  }
  int64_t expires_at = s.integer(2), revoked_at = s.integer(3);
  if (revoked_at != 0) {
    r.status = AuthStatus::kRevoked;
  } else if (expires_at != 0 && expires_at <= static_cast<int64_t>(::time(nullptr))) {
    r.status = AuthStatus::kExpired;
  } else {
    r.status = AuthStatus::kOk;
    r.publisher = s.text(0);
  }
  return r;
}

void Store::check_publishable(const std::string& publisher, const std::string& name, const std::string& version) {
  Conn c(this);
  check_publishable(c.get(), publisher, name, version);
}

void Store::check_publishable(sqlite3* db, const std::string& publisher, const std::string& name,
                              const std::string& version) {
  {
    Stmt s(db, "SELECT 1 FROM versions WHERE publisher=? AND name=? AND version=?");
    s.bind(1, publisher).bind(2, name).bind(3, version);
    if (s.step())
      throw_error(Code::kAlreadyExists,
                  publisher + "/" + name + "@" + version + " is already published; versions are immutable");
  }
  std::optional<std::string> spelling = published_name(db, publisher, name);
  if (spelling && *spelling != name)
    throw_error(Code::kAlreadyExists,
                "module " + publisher + "/" + name + " is published as " + publisher + "/" + *spelling +
                    " (names differing only in '-', '_', '.' or case are one name); publish it under that name");
}

std::optional<std::string> Store::published_name(const std::string& publisher, const std::string& name) {
  Conn c(this);
  return published_name(c.get(), publisher, name);
}

std::optional<std::string> Store::published_name(sqlite3* db, const std::string& publisher, const std::string& name) {
  // The publisher's modules, first published first (rowid breaks ties).
  Stmt s(db,
         "SELECT name, MIN(published_at) AS first, MIN(rowid) FROM versions WHERE publisher = ? "
         "GROUP BY name ORDER BY first, 3");
  s.bind(1, publisher);
  const std::string canonical = canonical_name(name);
  std::optional<std::string> found;
  while (s.step()) {
    std::string spelling = s.text(0);
    if (spelling == name) return spelling;
    if (!found && canonical_name(spelling) == canonical) found = spelling;
  }
  return found;
}

bool Store::has_version(const std::string& p, const std::string& n, const std::string& v) {
  Conn c(this);
  Stmt s(c.get(), "SELECT 1 FROM versions WHERE publisher=? AND name=? AND version=?");
  s.bind(1, p).bind(2, n).bind(3, v);
  return s.step();
}

std::optional<VersionRecord> Store::version(const std::string& p, const std::string& n, const std::string& v) {
  Conn c(this);
  Stmt s(c.get(),
         "SELECT publisher,name,version,sha256,size,description,signatures,published_at "
         "FROM versions WHERE publisher=? AND name=? AND version=?");
  s.bind(1, p).bind(2, n).bind(3, v);
  if (!s.step()) return std::nullopt;
  return read_record(s);
}

std::vector<VersionRecord> Store::versions(const std::string& p, const std::string& n) {
  std::vector<VersionRecord> out;
  {
    Conn c(this);
    Stmt s(c.get(),
           "SELECT publisher,name,version,sha256,size,description,signatures,published_at "
           "FROM versions WHERE publisher=? AND name=?");
    s.bind(1, p).bind(2, n);
    while (s.step()) out.push_back(read_record(s));
  }
  std::sort(out.begin(), out.end(),
            [](const VersionRecord& a, const VersionRecord& b) { return version_less(b.version, a.version); });
  return out;
}

std::vector<ModuleSummary> Store::search(const std::string& query) {
  std::string q = to_lower(query);
  std::map<std::string, ModuleSummary> mods;
  Conn c(this);
  Stmt s(c.get(), "SELECT publisher,name,version,description,published_at FROM versions");
  while (s.step()) {
    std::string p = s.text(0), n = s.text(1), v = s.text(2), d = s.text(3);
    int64_t t = s.integer(4);
    auto [it, fresh] = mods.try_emplace(p + "/" + n);
    ModuleSummary& m = it->second;
    if (fresh) {
      m.publisher = p;
      m.name = n;
    }
    ++m.num_versions;
    m.updated_at = std::max(m.updated_at, t);
    if (m.latest.empty() || better_latest(v, m.latest)) {
      m.latest = v;
      m.description = d;
    }
  }
  std::vector<ModuleSummary> out;
  for (auto& [key, m] : mods) {
    if (q.empty() || key.find(q) != std::string::npos || to_lower(m.description).find(q) != std::string::npos)
      out.push_back(std::move(m));
  }
  return out;
}

void Store::commit_version(const fs::path& temp, const VersionRecord& rec) {
  std::error_code ec;
  const fs::path blob = blob_path(rec.sha256);
  bool placed = false;  // this commit created the blob file
  Conn c(this);
  exec(c.get(), "BEGIN IMMEDIATE");
  try {
    check_publishable(c.get(), rec.publisher, rec.name, rec.version);
    fs::create_directories(blob.parent_path(), ec);
    if (ec)
      throw_error(Code::kIOError, "cannot create blob directory " + blob.parent_path().string() + ": " + ec.message());
    if (fs::exists(blob, ec)) {
      fs::remove(temp, ec);  // same digest, same bytes: the existing blob serves both
    } else {
      if (::rename(temp.c_str(), blob.c_str()) != 0)
        throw_error(Code::kIOError,
                    "cannot move upload into blob store " + blob.string() + ": " + std::strerror(errno));
      placed = true;
      fsync_dir(blob.parent_path());
    }
    Stmt s(c.get(),
           "INSERT INTO versions(publisher,name,version,sha256,size,description,signatures,"
           "published_at) VALUES(?,?,?,?,?,?,?,?)");
    s.bind(1, rec.publisher).bind(2, rec.name).bind(3, rec.version).bind(4, rec.sha256);
    s.bind(5, static_cast<int64_t>(rec.size)).bind(6, rec.description).bind(7, rec.signatures_json);
    s.bind(8, rec.published_at);
    s.step();
    exec(c.get(), "COMMIT");
  } catch (...) {
    // Still inside the transaction: no other commit can have referred to a
    // blob this one placed.
    if (placed) fs::remove(blob, ec);
    fs::remove(temp, ec);
    sqlite3_exec(c.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

}  // namespace hub::registry

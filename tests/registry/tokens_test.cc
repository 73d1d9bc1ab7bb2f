// Publish tokens (issue 13 item 6): list, revoke, expiry, the schema
// migration that added them, per-client throttling of failed
// authentications (429 + Retry-After), and logs that name token ids, never
// secrets.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "registry_testutil.h"

namespace fs = std::filesystem;
using namespace hub::registry;
using namespace hub::registry::testing;

namespace {

int64_t now_s() { return static_cast<int64_t>(::time(nullptr)); }

std::string id_of(const std::string& token) { return token.substr(5, 16); }
std::string secret_of(const std::string& token) { return token.substr(22); }

// Everything written to stderr (where the log goes) while it lives.
class StderrCapture {
 public:
  explicit StderrCapture(const fs::path& file) : file_(file) {
    saved_ = ::dup(STDERR_FILENO);
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
  }
  std::string finish() {
    if (saved_ >= 0) {
      ::dup2(saved_, STDERR_FILENO);
      ::close(saved_);
      saved_ = -1;
    }
    return read_file(file_);
  }
  ~StderrCapture() { finish(); }

 private:
  fs::path file_;
  int saved_ = -1;
};

void sql(const fs::path& db_path, const std::string& statements) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(db_path.c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, statements.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  REQUIRE_MESSAGE(rc == SQLITE_OK, msg);
}

int64_t user_version(const fs::path& db_path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(db_path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  int64_t v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

}  // namespace

TEST_CASE("tokens are listed and revoked by id") {
  TempDir dir;
  Store store(dir.path / "root");
  std::string a = store.create_token("Acme");
  std::string b = store.create_token("other", now_s() + 3600);
  auto tokens = store.list_tokens();
  REQUIRE(tokens.size() == 2);
  const TokenRecord& ra = tokens[0].id == id_of(a) ? tokens[0] : tokens[1];
  const TokenRecord& rb = tokens[0].id == id_of(a) ? tokens[1] : tokens[0];
  CHECK(ra.id == id_of(a));
  CHECK(ra.publisher == "acme");
  CHECK(std::abs(ra.created_at - now_s()) < 60);
  CHECK(ra.expires_at == 0);
  CHECK(ra.revoked_at == 0);
  CHECK(rb.id == id_of(b));
  CHECK(rb.expires_at > now_s());

  AuthResult ok = store.authenticate(a);
  CHECK(ok.status == AuthStatus::kOk);
  CHECK(ok.publisher == "acme");
  CHECK(ok.token_id == id_of(a));
  CHECK(store.revoke_token(id_of(a)));
  CHECK_FALSE(store.revoke_token(id_of(a)));  // already revoked
  CHECK(store.authenticate(a).status == AuthStatus::kRevoked);
  CHECK(store.authenticate(b).status == AuthStatus::kOk);  // the other token is untouched
  for (const TokenRecord& r : store.list_tokens())
    if (r.id == id_of(a)) CHECK(r.revoked_at > 0);
  try {
    store.revoke_token("0123456789abcdef");
    FAIL("revoked an unknown id");
  } catch (const hub::Error& e) {
    CHECK(e.code() == hub::Code::kNotFound);
    CHECK(std::string(e.what()).find("0123456789abcdef") != std::string::npos);
  }
  CHECK_THROWS_AS(store.revoke_token("not-an-id"), hub::Error);

  // Statuses: the secret is checked before revocation or expiry is told.
  std::string wrong = a.substr(0, a.size() - 1) + (a.back() == '0' ? "1" : "0");
  CHECK(store.authenticate(wrong).status == AuthStatus::kWrongSecret);
  CHECK(store.authenticate("hubt_" + std::string(16, 'f') + "_" + std::string(64, 'a')).status == AuthStatus::kUnknown);
  CHECK(store.authenticate("garbage").status == AuthStatus::kMalformed);
  CHECK(store.authenticate("garbage").token_id.empty());
}

TEST_CASE("expired tokens are refused") {
  TempDir dir;
  Store store(dir.path / "root");
  std::string old = store.create_token("acme", now_s() - 1);
  std::string fresh = store.create_token("acme", now_s() + 60);
  CHECK(store.authenticate(old).status == AuthStatus::kExpired);
  CHECK(store.authenticate(fresh).status == AuthStatus::kOk);
  CHECK_THROWS_AS(store.create_token("acme", -5), hub::Error);
}

TEST_CASE("a registry made before tokens could expire keeps working after the migration") {
  TempDir dir;
  fs::path root = dir.path / "root";
  fs::create_directories(root);
  // The schema as the first release created it (user_version 0), with one
  // token and one version row.
  const std::string token = "hubt_00112233445566ff_" + std::string(64, 'c');
  const std::string sha = std::string(64, 'e');
  sql(root / "registry.db",
      "CREATE TABLE tokens(id TEXT PRIMARY KEY, publisher TEXT NOT NULL, hash TEXT NOT NULL, created_at INTEGER NOT "
      "NULL);"
      "CREATE TABLE versions(publisher TEXT NOT NULL, name TEXT NOT NULL, version TEXT NOT NULL, sha256 TEXT NOT NULL,"
      " size INTEGER NOT NULL, description TEXT NOT NULL, signatures TEXT NOT NULL, published_at INTEGER NOT NULL,"
      " PRIMARY KEY(publisher, name, version));"
      "INSERT INTO tokens VALUES('00112233445566ff', 'acme', '" +
          hub::sha256_hex(token) +
          "', 1700000000);"
          "INSERT INTO versions VALUES('acme', 'net', '1.0.0', '" +
          sha + "', 12, 'old', '[]', 1700000000);");
  fs::create_directories(root / "blobs" / "sha256" / "ee");
  std::ofstream(root / "blobs" / "sha256" / "ee" / sha) << "twelve bytes";
  CHECK(user_version(root / "registry.db") == 0);
  {
    Store store(root);
    CHECK(user_version(root / "registry.db") == kStoreSchemaVersion);
    AuthResult r = store.authenticate(token);
    CHECK(r.status == AuthStatus::kOk);
    CHECK(r.publisher == "acme");
    auto tokens = store.list_tokens();
    REQUIRE(tokens.size() == 1);
    CHECK(tokens[0].created_at == 1700000000);
    CHECK(tokens[0].expires_at == 0);
    CHECK(tokens[0].revoked_at == 0);
    REQUIRE(store.versions("acme", "net").size() == 1);
    CHECK(store.recover() == 0);  // the blob is still referenced
    CHECK(store.revoke_token("00112233445566ff"));
    CHECK(store.authenticate(token).status == AuthStatus::kRevoked);
  }
  { Store again(root); }  // opening a migrated registry again changes nothing
  CHECK(user_version(root / "registry.db") == kStoreSchemaVersion);
  // A registry from a newer hub is refused, naming the versions.
  sql(root / "registry.db", "PRAGMA user_version = " + std::to_string(kStoreSchemaVersion + 1));
  try {
    Store newer(root);
    FAIL("opened a newer schema");
  } catch (const hub::Error& e) {
    CHECK(e.code() == hub::Code::kFailedPrecondition);
    CHECK(std::string(e.what()).find("version " + std::to_string(kStoreSchemaVersion + 1)) != std::string::npos);
  }
}

TEST_CASE("failed authentications are throttled per client with 429 and Retry-After") {
  RegistryServerOptions opt;
  opt.auth_failure_burst = 3;
  opt.auth_failure_refill_ms = 400;
  TestRegistry reg(opt);
  std::string bytes = module_archive("throttle");
  std::string wrong = "hubt_" + id_of(reg.token) + "_" + std::string(64, '0');
  auto put_from = [&](const char* source, const std::string& token, const std::string& version) {
    std::string req =
        http_request("PUT", "/v1/modules/acme/net/" + version,
                     {{"Authorization", "Bearer " + token}, {"X-Hub-SHA256", hub::sha256_hex(bytes)}}, bytes);
    return raw_request(reg.server->port(), req, 10000, source);
  };
  for (int i = 0; i < 3; ++i) CHECK(put_from("127.0.0.1", wrong, "1.0.0").status == 401);
  RawResponse limited = put_from("127.0.0.1", wrong, "1.0.0");
  CHECK(limited.status == 429);
  CHECK(limited.headers["retry-after"] == "1");
  // Throttled before the token is looked at: the right token waits too.
  CHECK(put_from("127.0.0.1", reg.token, "1.0.0").status == 429);
  // Another client is not affected.
  CHECK(put_from("127.0.0.2", reg.token, "1.0.0").status == 201);
  // Reads are never throttled.
  CHECK(raw_request(reg.server->port(), http_request("GET", "/v1/index.json", {})).status == 200);
  // One failure is forgiven per refill interval.
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  CHECK(put_from("127.0.0.1", reg.token, "1.0.1").status == 201);
  CHECK(put_from("127.0.0.1", wrong, "1.0.2").status == 401);
  CHECK(put_from("127.0.0.1", wrong, "1.0.2").status == 429);
  // A request without a token, and a valid token for another publisher, are
  // not failed authentications.
  TestRegistry reg2(opt);
  std::string other = reg2.server->store().create_token("other");
  for (int i = 0; i < 5; ++i) {
    CHECK(reg2.put("acme/net", "1.0.0", bytes, "").status == 401);
    CHECK(reg2.put("acme/net", "1.0.0", bytes, other).status == 403);
  }
  CHECK(reg2.put("acme/net", "1.0.0", bytes).status == 201);
}

TEST_CASE("behind a trusted proxy, failed authentications are counted per X-Real-IP") {
  RegistryServerOptions opt;
  opt.auth_failure_burst = 2;
  opt.auth_failure_refill_ms = 60000;
  opt.trusted_proxies = {"127.0.0.1"};
  TestRegistry reg(opt);
  std::string bytes = module_archive("proxy");
  std::string wrong = "hubt_" + id_of(reg.token) + "_" + std::string(64, '0');
  auto put = [&](const char* source, const std::string& real_ip, const std::string& token, const std::string& version) {
    std::vector<std::pair<std::string, std::string>> h = {{"Authorization", "Bearer " + token},
                                                          {"X-Hub-SHA256", hub::sha256_hex(bytes)}};
    if (!real_ip.empty()) h.emplace_back("X-Real-IP", real_ip);
    return raw_request(reg.server->port(), http_request("PUT", "/v1/modules/acme/net/" + version, h, bytes), 10000,
                       source)
        .status;
  };
  CHECK(put("127.0.0.1", "192.0.2.1", wrong, "1.0.0") == 401);
  CHECK(put("127.0.0.1", "192.0.2.1", wrong, "1.0.0") == 401);
  CHECK(put("127.0.0.1", "192.0.2.1", reg.token, "1.0.0") == 429);
  CHECK(put("127.0.0.1", "192.0.2.2", reg.token, "1.0.0") == 201);  // another client behind the proxy
  // An untrusted peer's X-Real-IP is ignored: it is counted by its own address.
  CHECK(put("127.0.0.2", "192.0.2.9", wrong, "1.0.1") == 401);
  CHECK(put("127.0.0.2", "192.0.2.10", wrong, "1.0.1") == 401);
  CHECK(put("127.0.0.2", "192.0.2.11", reg.token, "1.0.1") == 429);
}

TEST_CASE("revoked and expired tokens get 401 naming why; logs name token ids, never secrets") {
  TestRegistry reg;
  Store& store = reg.server->store();
  std::string revoked = store.create_token("acme");
  store.revoke_token(id_of(revoked));
  std::string expired = store.create_token("acme", now_s() - 10);
  std::string other = store.create_token("other");
  std::string bytes = module_archive("logs");
  std::string wrong = reg.token.substr(0, reg.token.size() - 4) + "0000";
  if (wrong == reg.token) wrong = reg.token.substr(0, reg.token.size() - 4) + "1111";
  std::string log;
  {
    TempDir logs;
    StderrCapture capture(logs.path / "stderr.txt");
    RawResponse r = reg.put("acme/net", "1.0.0", bytes, revoked);
    CHECK(r.status == 401);
    CHECK(r.body.find("revoked") != std::string::npos);
    r = reg.put("acme/net", "1.0.0", bytes, expired);
    CHECK(r.status == 401);
    CHECK(r.body.find("expired") != std::string::npos);
    CHECK(reg.put("acme/net", "1.0.0", bytes, wrong).status == 401);
    CHECK(reg.put("acme/net", "1.0.0", bytes, "hubt_" + secret_of(reg.token)).status == 401);  // a pasted secret
    CHECK(reg.put("acme/net", "1.0.0", bytes, other).status == 403);
    CHECK(reg.put("acme/net", "1.0.0", bytes).status == 201);
    log = capture.finish();
  }
  INFO("log:\n" << log);
  for (const std::string& t : {reg.token, revoked, expired, other}) CHECK(log.find(secret_of(t)) == std::string::npos);
  CHECK(log.find(secret_of(wrong)) == std::string::npos);
  // Each event names the token id (what an operator revokes by) and the client.
  auto line_with = [&](const std::string& a, const std::string& b) {
    size_t pos = 0;
    while (pos < log.size()) {
      size_t end = log.find('\n', pos);
      std::string line = log.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) return true;
      if (end == std::string::npos) break;
      pos = end + 1;
    }
    return false;
  };
  CHECK(line_with(id_of(revoked), "revoked"));
  CHECK(line_with(id_of(expired), "expired"));
  CHECK(line_with(id_of(wrong), "wrong secret"));
  CHECK(line_with(id_of(other), "forbidden"));
  CHECK(line_with("published acme/net@1.0.0", "token=" + id_of(reg.token)));
  CHECK(line_with("published acme/net@1.0.0", "client=127.0.0.1"));
  CHECK(line_with("malformed token", "127.0.0.1"));
}

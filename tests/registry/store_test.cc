// The registry store (issue 13 item 10): a publish race leaves no loser's
// blob, the static export is readable by a web server whatever the umask,
// and module names that differ only in '-', '_', '.' or case are one name.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "registry/client/client.h"
#include "registry/server/export_static.h"
#include "registry_testutil.h"

namespace fs = std::filesystem;
using namespace hub::registry;
using namespace hub::registry::testing;

namespace {

std::set<std::string> blob_files(const fs::path& root) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root / "blobs"))
    if (e.is_regular_file()) out.insert(e.path().filename().string());
  return out;
}

int blob_status(const TestRegistry& reg, const std::string& sha) {
  return raw_request(reg.server->port(), http_request("GET", "/v1/blobs/sha256/" + sha, {})).status;
}

// Holds every upload at validation until `n` have arrived (or 10 s pass), so
// all of them are past the early "version exists" check and race in commit.
struct Barrier {
  explicit Barrier(int n) : want(n) {}
  void arrive() {
    std::unique_lock<std::mutex> lock(mu);
    ++count;
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return count >= want; });
  }
  int want, count = 0;
  std::mutex mu;
  std::condition_variable cv;
};

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("issue13: blobs of publish-race losers are removed, shared blobs kept") {
  constexpr int kRacers = 6;
  auto barrier = std::make_shared<Barrier>(kRacers);
  ModuleValidator check = default_module_validator();
  RegistryServerOptions opt;
  opt.http.worker_threads = kRacers + 2;
  std::atomic<bool> racing{false};
  opt.validator = [barrier, check, &racing](const fs::path& archive) {
    ModuleInfo info = check(archive);
    if (racing.load()) barrier->arrive();
    return info;
  };
  TestRegistry reg(opt);
  std::vector<std::string> bodies;
  for (int i = 0; i < kRacers; ++i) bodies.push_back(module_archive("racer" + std::to_string(i)));
  // Racer 0 uploads the same bytes as an existing version: that blob must stay.
  REQUIRE(reg.put("acme/race", "1.0.0", bodies[0]).status == 201);
  racing = true;
  std::vector<int> status(kRacers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRacers; ++i)
    threads.emplace_back([&, i] { status[i] = reg.put("acme/race", "2.0.0", bodies[i]).status; });
  for (auto& t : threads) t.join();
  CHECK(barrier->count == kRacers);  // every upload reached the commit
  int winner = -1, conflicts = 0;
  for (int i = 0; i < kRacers; ++i) {
    if (status[i] == 201) winner = i;
    if (status[i] == 409) ++conflicts;
  }
  REQUIRE(winner >= 0);
  CHECK(conflicts == kRacers - 1);
  auto rec = reg.server->store().version("acme", "race", "2.0.0");
  REQUIRE(rec);
  CHECK(rec->sha256 == hub::sha256_hex(bodies[winner]));
  // On disk and over HTTP: exactly the blobs a version refers to.
  std::set<std::string> referenced = {hub::sha256_hex(bodies[0]), hub::sha256_hex(bodies[winner])};
  CHECK(blob_files(reg.root()) == referenced);
  for (int i = 0; i < kRacers; ++i) {
    CAPTURE(i);
    std::string sha = hub::sha256_hex(bodies[i]);
    CHECK(blob_status(reg, sha) == (referenced.count(sha) ? 200 : 404));
  }
  CHECK(reg.temp_files() == 0);
}

TEST_CASE("issue13: export-static writes 0644 files and 0755 folders whatever the umask") {
  mode_t old_umask = ::umask(077);  // the server writes its blobs under this umask too
  TestRegistry reg;
  REQUIRE(reg.put("acme/vision", "1.0.0", module_archive("perm-1")).status == 201);
  REQUIRE(reg.put("acme/vision", "1.1.0", module_archive("perm-2")).status == 201);
  REQUIRE(reg.put("acme/text", "0.1.0", module_archive("perm-3")).status == 201);
  // A blob from an older hub, private to the registry's user.
  std::string old_sha = reg.server->store().version("acme", "text", "0.1.0")->sha256;
  fs::permissions(reg.server->store().blob_path(old_sha), fs::perms::owner_read | fs::perms::owner_write);
  TempDir site;
  fs::path out = site.path / "www";
  ExportStats stats = export_static(reg.server->store(), out);
  ::umask(old_umask);
  CHECK(stats.blobs == 3);
  int files = 0, dirs = 0;
  CHECK(mode_of(out) == 0755);
  for (const auto& e : fs::recursive_directory_iterator(out)) {
    CAPTURE(e.path());
    if (e.is_directory()) {
      CHECK(mode_of(e.path()) == 0755);
      ++dirs;
    } else {
      CHECK(e.is_regular_file());
      CHECK(mode_of(e.path()) == 0644);
      ++files;
    }
  }
  CHECK(files == 6);  // index.json, 2 x versions.json, 3 blobs
  CHECK(dirs == 7);   // v1, modules, acme, vision, text, blobs, sha256
  // A re-export repairs what an older export left private.
  fs::path blob = out / "v1" / "blobs" / "sha256" / old_sha;
  fs::permissions(blob, fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(out / "v1" / "modules", fs::perms::owner_all);
  CHECK(export_static(reg.server->store(), out).blobs == 0);
  CHECK(mode_of(blob) == 0644);
  CHECK(mode_of(out / "v1" / "modules") == 0755);
}

TEST_CASE("issue13: module names that differ only in '-', '_', '.' or case are one name") {
  TestRegistry reg;
  std::string v1 = module_archive("pep503-1");
  REQUIRE(reg.put("acme/image_net", "1.0.0", v1).status == 201);
  for (const char* other : {"acme/image-net", "acme/Image.Net", "acme/IMAGE__NET", "acme/image-._net"}) {
    CAPTURE(other);
    RawResponse r = reg.put(other, "2.0.0", module_archive("pep503-2"));
    CHECK(r.status == 409);
    CHECK(r.body.find("acme/image_net") != std::string::npos);
  }
  CHECK(reg.put("acme/image_net", "1.1.0", module_archive("pep503-3")).status == 201);
  CHECK(reg.put("acme/imagenet", "1.0.0", module_archive("pep503-4")).status == 201);  // a different name
  // Reads through any spelling find the module under its published name.
  ResolvedModule m = resolve_registry_handle(reg.url, "acme/Image.Net@1.0.0");
  CHECK(m.sha256 == hub::sha256_hex(v1));
  RawResponse versions =
      raw_request(reg.server->port(), http_request("GET", "/v1/modules/acme/image-net/versions.json", {}));
  CHECK(versions.status == 200);
  CHECK(versions.body.find("\"name\":\"image_net\"") != std::string::npos);
  CHECK(raw_request(reg.server->port(), http_request("GET", "/v1/modules/acme/IMAGE.NET/1.1.0/archive", {})).status ==
        200);
  CHECK(raw_request(reg.server->port(), http_request("GET", "/v1/modules/acme/image-nets/1.1.0", {})).status == 404);
  CHECK(reg.server->store().search("").size() == 2);

  // Two new spellings raced: one wins.
  std::string a = module_archive("race-a"), b = module_archive("race-b");
  int sa = 0, sb = 0;
  std::thread ta([&] { sa = reg.put("acme/foo-bar", "1.0.0", a).status; });
  std::thread tb([&] { sb = reg.put("acme/Foo_Bar", "1.0.0", b).status; });
  ta.join();
  tb.join();
  CHECK(((sa == 201 && sb == 409) || (sa == 409 && sb == 201)));
  CHECK(blob_status(reg, hub::sha256_hex(sa == 201 ? b : a)) == 404);

  // Publishers are held to the same rule when their tokens are made.
  Store& store = reg.server->store();
  store.create_token("acme-corp");
  store.create_token("acme-corp");  // the same spelling again is fine
  try {
    store.create_token("Acme_Corp");
    FAIL("a second spelling of a publisher got a token");
  } catch (const hub::Error& e) {
    CHECK(e.code() == hub::Code::kAlreadyExists);
    CHECK(std::string(e.what()).find("'acme-corp'") != std::string::npos);
  }
}

TEST_CASE("spellings that already coexist in an older registry keep working") {
  TempDir dir;
  fs::path root = dir.path / "root";
  {
    Store store(root);  // creates the schema
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((root / "registry.db").c_str(), &db) == SQLITE_OK);
  const std::string rows = "INSERT INTO versions VALUES('acme','a_b','1.0.0','" + std::string(64, 'a') +
                           "',1,'','[]',100);"
                           "INSERT INTO versions VALUES('acme','a-b','1.0.0','" +
                           std::string(64, 'b') + "',1,'','[]',200);";
  REQUIRE(sqlite3_exec(db, rows.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  Store store(root);
  CHECK(store.published_name("acme", "a_b") == "a_b");  // each existing spelling is itself
  CHECK(store.published_name("acme", "a-b") == "a-b");
  CHECK(store.published_name("acme", "A.B") == "a_b");  // a new spelling: the first published
  CHECK_FALSE(store.published_name("acme", "ab"));
  CHECK_FALSE(store.published_name("other", "a_b"));
}

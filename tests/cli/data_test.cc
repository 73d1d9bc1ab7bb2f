// `hub data download_and_convert` through the built binary (path in HUB_EXE,
// set by tests/meson.build): flower_photos.tgz served on loopback, the cache
// from $HUB_CACHE_DIR, --offline, and the exit statuses of its failures.
#include <doctest/doctest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "../hub/resolver/http_server.h"
#include "fixtures.h"
#include "hub/core/digest.h"
#include "hub/image/image.h"
#include "modules/datasets/tfrecord.h"
#include "subprocess.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

std::string q(const std::string& s) {
  std::string out(1, '\'');
  out += s;
  out += '\'';
  return out;
}

struct Run {
  int rc;
  std::string out, err;
};

// `hub data download_and_convert ARGS` with the cache in dir/cache and the
// environment variables in `env` ("NAME=value ...").
Run download(const TempDir& dir, const std::string& args, const std::string& env = "") {
  std::string cmd = env + " HUB_CACHE_DIR=" + q(dir / "cache") + " " + q(hub_exe());
  cmd += " data download_and_convert " + args + " > " + q(dir / "stdout") + " 2> " + q(dir / "stderr");
  const int rc = run_shell(cmd, 120);
  return {rc, read_file(dir / "stdout"), read_file(dir / "stderr")};
}

size_t count_records(const std::string& path) {
  data::TFRecordReader reader(path);
  std::string record;
  size_t n = 0;
  while (reader.read(&record)) ++n;
  return n;
}

}  // namespace

TEST_CASE("hub data download_and_convert: flowers over HTTP, cached, offline, corrupted") {
  TempDir t("data_cli");
  std::vector<TarEntry> entries;
  for (const char* cls : {"roses", "tulips"})
    for (int i = 0; i < 3; ++i) {
      hub::Tensor pixels(DType::kUInt8, Shape{4, 4, 3});
      std::memset(pixels.data<uint8_t>(), 40 * i, pixels.nbytes());
      const auto jpeg = image::encode_jpeg(pixels, 90);
      entries.push_back({std::string("flower_photos/") + cls + "/" + std::to_string(i) + ".jpg", TarEntry::kFile,
                         std::string(jpeg.begin(), jpeg.end())});
    }
  const std::string tgz = make_tar(entries);
  HttpServer server;
  server.route("/flower_photos.tgz", [&](const HttpRequest& r, HttpConn& c) { serve_body(r, c, tgz); });
  const std::string url = server.url("/flower_photos.tgz") + "#sha256=" + sha256_hex(tgz);
  const std::string common = " --dataset_name flowers --num_validation 2 --num_shards 1 --source_url " + q(url);

  Run r = download(t, "--dataset_dir " + q(t / "out") + common);
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.err.find("downloaded " + server.url("/flower_photos.tgz")) != std::string::npos);
  CHECK(r.out.find("train: 4 records\nvalidation: 2 records\n") != std::string::npos);
  CHECK(count_records(t / "out/flowers_train.tfrecord") == 4);
  CHECK(count_records(t / "out/flowers_validation.tfrecord") == 2);
  CHECK(read_file(t / "out/labels.txt") == "0:roses\n1:tulips\n");

  r = download(t, "--dataset_dir " + q(t / "again") + common + " --offline");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.err.find("cached " + server.url("/flower_photos.tgz")) != std::string::npos);
  CHECK(server.requests("/flower_photos.tgz") == 1);

  // Offline, slim's URL, not cached: unavailable (16), saying how to go on.
  r = download(t, "--dataset_dir " + q(t / "offline") + " --dataset_name flowers --offline");
  CHECK(r.rc == 16);
  CHECK(r.err.find("dataset flowers: file 'http://download.tensorflow.org/example_images/flower_photos.tgz'") !=
        std::string::npos);
  CHECK(r.err.find("hub data convert --dataset_name flowers --source PATH") != std::string::npos);
  CHECK_FALSE(fs::exists(t / "offline"));

  // Other bytes than pinned: data loss (22), nothing written.
  server.route("/other/flower_photos.tgz",
               [&](const HttpRequest& req, HttpConn& c) { serve_body(req, c, tgz.substr(0, tgz.size() - 1)); });
  r = download(t, "--dataset_dir " + q(t / "bad") + " --dataset_name flowers --source_url " +
                      q(server.url("/other/flower_photos.tgz") + "#sha256=" + sha256_hex(tgz)));
  CHECK(r.rc == 22);
  CHECK(r.err.find("sha256 mismatch") != std::string::npos);
  CHECK_FALSE(fs::exists(t / "bad"));
  // A file name that is not flowers' is a usage of the wrong file (11).
  r = download(
      t, "--dataset_dir " + q(t / "bad") + " --dataset_name flowers --source_url " + q(server.url("/photos.zip")));
  CHECK(r.rc == 11);
  CHECK(r.err.find("'photos.zip' is not a source file of flowers (its files: flower_photos.tgz)") != std::string::npos);
}

TEST_CASE("hub data download_and_convert: a download cut in one run is continued by the next") {
  TempDir t("data_cli_resume");
  std::vector<TarEntry> entries;
  for (int i = 0; i < 4; ++i) {
    hub::Tensor pixels(DType::kUInt8, Shape{32, 32, 3});
    for (size_t k = 0; k < pixels.nbytes(); ++k) pixels.data<uint8_t>()[k] = static_cast<uint8_t>(k * 37 + i * 101);
    const auto jpeg = image::encode_jpeg(pixels, 95);
    entries.push_back({std::string("flower_photos/") + (i % 2 ? "roses/" : "tulips/") + std::to_string(i) + ".jpg",
                       TarEntry::kFile, std::string(jpeg.begin(), jpeg.end())});
  }
  const std::string tgz = make_tar(entries);
  const size_t cut = tgz.size() / 2;
  // The first response sends `cut` bytes, then closes the connection (kCut)
  // or holds it open (kHang); later ones serve the rest.
  enum Mode { kCut, kHang, kWhole };
  std::atomic<int> mode{kCut};
  HttpServer server;
  server.route("/flower_photos.tgz", [&](const HttpRequest& r, HttpConn& c) {
    const int m = mode.exchange(kWhole);
    serve_body(r, c, tgz, "\"f1\"", m == kWhole ? static_cast<size_t>(-1) : cut);
    for (int waited = 0; m == kHang && waited < 30000 && c.sleep_ms(50);) waited += 50;
  });
  const std::string url = server.url("/flower_photos.tgz") + "#sha256=" + sha256_hex(tgz);
  const std::string common = " --dataset_name flowers --num_validation 2 --num_shards 1 --source_url " + q(url);

  SUBCASE("the connection closes; no retries left") {
    Run r = download(t, "--dataset_dir " + q(t / "out") + common, "HUB_FETCH_RETRIES=0");
    CHECK(r.rc != 0);
  }
  SUBCASE("SIGINT while the body arrives") {
    mode = kHang;
    ChildOptions o;
    o.env = {{"HUB_CACHE_DIR", t / "cache"}};
    Child hub = Child::spawn({hub_exe(), "data", "download_and_convert", "--dataset_dir", t / "out", "--dataset_name",
                              "flowers", "--num_validation", "2", "--num_shards", "1", "--source_url", url},
                             o);
    // Interrupt once the first `cut` bytes are in the work folder's file.
    bool arrived = false;
    for (int i = 0; i < 400 && !arrived; ++i) {
      std::error_code ec;
      for (const auto& e : fs::recursive_directory_iterator(t / "cache", ec))
        if (e.path().filename() == "download" && fs::file_size(e.path(), ec) == cut) arrived = true;
      if (!arrived) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    REQUIRE(arrived);
    hub.kill(SIGINT);
    ChildResult r = hub.wait(30, "hub data download_and_convert");
    CHECK_FALSE(r.exited);  // cleaned up, then re-raised: the shell's status 130
    CHECK(r.signal == SIGINT);
  }
  CHECK_FALSE(fs::exists(t / "out"));
  int kept = 0;
  for (const auto& e : fs::recursive_directory_iterator(t / "cache/.partial"))
    if (e.path().filename() == "body.part") kept += fs::file_size(e.path()) == cut;
  CHECK(kept == 1);

  Run r = download(t, "--dataset_dir " + q(t / "out") + common);
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.err.find("at byte " + std::to_string(cut) + " (kept from an earlier run)") != std::string::npos);
  CHECK(count_records(t / "out/flowers_train.tfrecord") == 2);
  auto log = server.log("/flower_photos.tgz");
  REQUIRE(log.size() == 2);
  CHECK(log[0].header("range").empty());
  CHECK(log[1].header("range") == "bytes=" + std::to_string(cut) + "-");
  CHECK(log[1].header("if-range") == "\"f1\"");
}

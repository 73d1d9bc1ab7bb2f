// The `hub` binary's conventions, in separate processes (tests/subprocess.h):
// usage errors exit 2, a closed stdout ends quietly, --help lists the exit
// codes and every command's help works, --json prints JSON, Ctrl-C during a
// download cleans up (issue 13 items 8 and 12, issue 15 item 9), credentials
// never reach the output (item 7), registry names need --registry.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../hub/resolver/http_server.h"
#include "../hub/resolver/resolver_testutil.h"
#include "../registry/registry_testutil.h"
#include "hub/core/fileio.h"
#include "registry/client/client.h"
#include "subprocess.h"
#include "testutil.h"

namespace fs = std::filesystem;
using hub::testing::Child;
using hub::testing::ChildOptions;
using hub::testing::ChildResult;
using hub::testing::hub_exe;
using hub::testing::HubRun;
using hub::testing::run_hub;
using hub::testing::TempDir;

namespace {

using Run = HubRun;

// A shell pipeline's status of its first command and its stderr.
Run pipeline(const std::string& script) {
  TempDir tmp("hub_cli_conventions");
  const std::string full = script + " 2>" + (tmp / "err") + "; echo \"status=${PIPESTATUS[0]}\"";
  ChildResult r = Child::spawn({"/bin/bash", "-c", full, hub_exe()}).wait(60, "pipeline");
  Run run;
  run.out = r.output;
  run.err = hub::read_file_bytes(tmp / "err");
  size_t p = r.output.rfind("status=");
  run.code = p == std::string::npos ? -1 : std::atoi(r.output.c_str() + p + 7);
  return run;
}

nlohmann::json json_of(const Run& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), "not JSON: " << r.out << r.err);
  return j;
}

std::vector<std::string> subcommands(const std::string& help) {
  std::vector<std::string> out;
  size_t p = help.find("Subcommands:\n");
  if (p == std::string::npos) return out;
  std::istringstream in(help.substr(p + 13));
  for (std::string line; std::getline(in, line) && line.rfind("  ", 0) == 0;) {
    std::string name = line.substr(2, line.find(' ', 2) - 2);
    out.push_back(name);
  }
  return out;
}

}  // namespace

TEST_CASE("usage errors exit 2 with a message; hub --help lists every exit code") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"info", "--bogus", "x"}, {"info"}, {"nosuchcommand"}, {"fetch", "x", "--sha256"}, {"cache"}, {}}) {
    Run r = run_hub(args);
    CAPTURE(r.err);
    CHECK(r.code == 2);
    CHECK(!r.err.empty());
  }
  Run help = run_hub({"--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("Exit status:") != std::string::npos);
  for (const char* line : {"  0 ", "  1 ", "  2 ", "  11 ", "  12 ", "  16 ", "  22 ", "  23 ", "130, 143", "141"})
    CHECK_MESSAGE(help.out.find(line) != std::string::npos, line);
  // A hub error keeps its own code: 10 + code (12: not found).
  CHECK(run_hub({"info", "/nonexistent/module"}).code == 12);
}

TEST_CASE("hub eval's --checkpoint_path defaults to hub train's --train_dir, as slim's eval does") {
  Run train = run_hub({"train", "--help"}), eval = run_hub({"eval", "--help"});
  REQUIRE(train.code == 0);
  REQUIRE(eval.code == 0);
  CHECK(train.out.find("/tmp/tfmodel/") != std::string::npos);
  CHECK(eval.out.find("/tmp/tfmodel/") != std::string::npos);
  // Not a usage error: the default is used, and when it holds no checkpoint
  // the error (not found: 12) names the flag and the folder.
  if (fs::exists("/tmp/tfmodel")) {
    MESSAGE("/tmp/tfmodel exists here: the run without --checkpoint_path is skipped");
    return;
  }
  Run r = run_hub({"eval", "--model_name", "lenet", "--dataset_dir", "/nonexistent/data"});
  CAPTURE(r.err);
  CHECK(r.code == 12);
  CHECK(r.err.find("--checkpoint_path") != std::string::npos);
  CHECK(r.err.find("/tmp/tfmodel/") != std::string::npos);
}

TEST_CASE("hub export takes export_inference_graph's --output_file and --is_training") {
  TempDir t("hub_export_flags");
  Run r = run_hub({"export", "--model_name", "lenet", "--is_training", "--output_file", t / "m"});
  CAPTURE(r.err);
  CHECK(r.code == 0);
  CHECK(fs::exists(t / "m/module.pb"));
  // Still one destination: both names at once is a usage error.
  CHECK(run_hub({"export", "--model_name", "lenet", "--output_file", t / "a", "--output_dir", t / "b"}).code == 2);
}

TEST_CASE("every command and subcommand prints its help and exits 0") {
  Run top = run_hub({"--help"});
  std::vector<std::string> names = subcommands(top.out);
  REQUIRE(names.size() >= 15);
  for (const std::string& name : names) {
    CAPTURE(name);
    Run r = run_hub({name, "--help"});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    for (const std::string& sub : subcommands(r.out)) {
      CAPTURE(sub);
      CHECK(run_hub({name, sub, "--help"}).code == 0);
    }
  }
}

TEST_CASE("a closed stdout pipe ends quietly: status 0 or 141, nothing on stderr") {
  for (const std::string& cmd :
       {std::string("ops"), std::string("ops --json"), std::string("nets --json"), std::string("--help")}) {
    for (const std::string& prefix : {std::string(""), std::string("trap '' PIPE; ")}) {
      CAPTURE(cmd);
      CAPTURE(prefix);
      // The reader exits at once, so the writer finds no reader.
      Run r = pipeline(prefix + "\"$0\" " + cmd + " | true");
      CHECK((r.code == 0 || r.code == 141));
      CHECK(r.err.empty());
      Run h = pipeline(prefix + "\"$0\" " + cmd + " | head -c 1 >/dev/null");
      CHECK((h.code == 0 || h.code == 141));
      CHECK(h.err.empty());
    }
  }
}

TEST_CASE("--json prints JSON on the commands that print data") {
  TempDir tmp("hub_cli_conventions");
  const std::vector<std::pair<std::string, std::string>> env = {{"HUB_CACHE_DIR", tmp / "cache"}};
  auto ops = json_of(run_hub({"ops", "--json"}));
  REQUIRE(ops.is_array());
  CHECK(ops.size() > 20);
  CHECK(ops[0].contains("backends"));
  auto nets = json_of(run_hub({"nets", "--json"}));
  REQUIRE(nets.is_array());
  CHECK(nets[0].contains("image_size"));
  // fetch, cache list and info on a real (tiny) module archive.
  hub::registry::testing::make_module_dir(tmp.path / "mod", "json");
  hub::registry::pack_module_dir(tmp.path / "mod", tmp.path / "mod.tar.gz");
  auto fetched = json_of(run_hub({"fetch", "--json", tmp / "mod.tar.gz"}, env));
  CHECK(fs::exists(fs::path(fetched["dir"].get<std::string>()) / "module.pb"));
  CHECK(fetched["cached"] == false);
  CHECK(json_of(run_hub({"fetch", "--json", tmp / "mod.tar.gz"}, env))["cached"] == true);
  auto listed = json_of(run_hub({"cache", "list", "--json"}, env));
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["handle"] == tmp / "mod.tar.gz");
  auto info = json_of(run_hub({"info", "--json", tmp / "mod.tar.gz"}, env));
  CHECK(info["total_parameters"] == 2);
  CHECK(info["metadata"]["description"] == "module json");
}

TEST_CASE("credentials in a URL never reach the output, the cache listing or an error") {
  TempDir tmp("hub_cli_conventions");
  hub::testing::HttpServer server;
  hub::registry::testing::make_module_dir(tmp.path / "mod", "creds");
  hub::registry::pack_module_dir(tmp.path / "mod", tmp.path / "mod.tar.gz");
  const std::string archive = hub::read_file_bytes(tmp / "mod.tar.gz");
  server.route("/m.tar.gz", [&](const hub::testing::HttpRequest& r, hub::testing::HttpConn& c) {
    hub::testing::serve_body(r, c, archive);
  });
  const std::string with_creds = "http://carol:t0ps3cret@" + server.url("/m.tar.gz").substr(7);
  const std::vector<std::pair<std::string, std::string>> env = {{"HUB_CACHE_DIR", tmp / "cache"}};
  Run fetched = run_hub({"fetch", "--json", with_creds}, env);
  CHECK(fetched.code == 0);
  Run list = run_hub({"cache", "list"}, env);
  Run list_json = run_hub({"cache", "list", "--json"}, env);
  Run gone = run_hub({"fetch", "http://carol:t0ps3cret@" + server.url("/gone.tar.gz").substr(7)}, env);
  CHECK(gone.code == 12);
  for (const Run* r : {&fetched, &list, &list_json, &gone}) {
    CHECK(r->out.find("t0ps3cret") == std::string::npos);
    CHECK(r->err.find("t0ps3cret") == std::string::npos);
  }
  CHECK(list.out.find("http://***@127.0.0.1") != std::string::npos);
  CHECK(gone.err.find("http://***@127.0.0.1") != std::string::npos);
}

TEST_CASE("registry names need a registry: --registry or $HUB_REGISTRY, on fetch and run alike") {
  TempDir tmp("hub_cli_conventions");
  hub::registry::testing::TestRegistry reg;
  REQUIRE(reg.put("acme/net", "1.0.0", hub::registry::testing::module_archive("r1")).status == 201);
  const std::vector<std::pair<std::string, std::string>> env = {{"HUB_CACHE_DIR", tmp / "cache"}};
  Run none = run_hub({"fetch", "acme/net@latest"}, env);
  CHECK(none.code == 12);
  CHECK(none.err.find("--registry") != std::string::npos);
  auto first = json_of(run_hub({"fetch", "--json", "--registry", reg.url, "acme/net@latest"}, env));
  CHECK(first["resolved"] == "acme/net@1.0.0");
  REQUIRE(reg.put("acme/net", "1.1.0", hub::registry::testing::module_archive("r2")).status == 201);
  Run second = run_hub({"fetch", "acme/net@latest"}, {{"HUB_CACHE_DIR", tmp / "cache"}, {"HUB_REGISTRY", reg.url}});
  CHECK(second.code == 0);
  CHECK(second.err.find("acme/net@latest: acme/net@1.1.0 from " + reg.url) != std::string::npos);
  Run offline = run_hub({"fetch", "--offline", "--registry", reg.url, "acme/net@latest"}, env);
  CHECK(offline.err.find("acme/net@1.1.0") != std::string::npos);
  CHECK(offline.err.find("offline") != std::string::npos);
  CHECK(offline.out == second.out);
  // hub run and hub info take the same flags.
  CHECK(run_hub({"info", "--registry", reg.url, "acme/net@1.0.0"}, env).code == 0);
  hub::write_file_atomic(tmp / "x.npy", std::string());  // not read: the module resolves first
  CHECK(run_hub({"run", "--registry", reg.url, "acme/net@9.9.9", "--input", tmp / "x.npy"}, env).code == 12);
}

TEST_CASE("SIGINT or SIGTERM during a download removes the lock and the work folder") {
  hub::testing::HttpServer server;
  // Headers and a first slice of a large body, then silence until stopped.
  server.route("/slow.tar.gz", [](const hub::testing::HttpRequest&, hub::testing::HttpConn& c) {
    c.send(hub::testing::http_head(200, {{"Content-Length", std::to_string(10 << 20)}}));
    c.send(std::string(64 << 10, 'x'));
    while (c.sleep_ms(50)) {
    }
  });
  for (int sig : {SIGINT, SIGTERM}) {
    CAPTURE(sig);
    TempDir tmp("hub_cli_conventions");
    const fs::path cache = tmp.path / "cache";
    ChildOptions o;
    o.env = {{"HUB_CACHE_DIR", cache.string()}, {"HUB_FETCH_LOW_SPEED_TIME", "60"}};
    Child child = Child::spawn({hub_exe(), "fetch", "-q", server.url("/slow.tar.gz")}, o);
    // Wait until the download is under way: the lock and a work folder exist.
    auto under_way = [&] {
      std::error_code ec;
      bool lock = false, work = false;
      for (const auto& e : fs::directory_iterator(cache, ec)) lock |= e.path().extension() == ".lock";
      for (const auto& e : fs::directory_iterator(cache / ".tmp", ec)) {
        (void)e;
        work = true;
      }
      return lock && work && server.requests("/slow.tar.gz") > 0;
    };
    for (int i = 0; i < 400 && !under_way(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    REQUIRE(under_way());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // bytes are arriving
    child.kill(sig);
    ChildResult r = child.wait(20, "hub fetch");
    CHECK(!r.exited);
    CHECK(r.signal == sig);
    std::vector<std::string> left = hub::testing::list_tree(cache);
    CHECK(left == std::vector<std::string>{".tmp", "refs"});
  }
}

// Secure unpacking: good archives in every accepted shape, and hostile ones,
// each refused with its code and entry name, leaving nothing behind.
#include "hub/resolver/unpack.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include "hub/core/error.h"
#include "hub/module/module.h"
#include "resolver_testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;
using resolver::UnpackOptions;

namespace {

// Unpacks `bytes` into sandbox/x/dest; on the expected failure checks that
// nothing at all was left in the sandbox besides the input archive.
void expect_refused(const std::string& bytes, Code code, const std::string& needle, UnpackOptions opts = {}) {
  Sandbox sb;
  fs::path archive = sb.root / "in.tar";
  write_file(archive, bytes);
  fs::create_directories(sb.root / "x");
  fs::path dest = sb.root / "x" / "dest";
  try {
    resolver::unpack_archive(archive, dest, opts);
    FAIL("archive was accepted; expected a refusal mentioning '" << needle << "'");
  } catch (const Error& e) {
    INFO(std::string(e.what()));
    CHECK(e.code() == code);
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
  CHECK(list_tree(sb.root / "x").empty());
  CHECK(list_tree(sb.outside).empty());
  std::vector<std::string> all = list_tree(sb.root);
  CHECK(all == std::vector<std::string>{"in.tar", "outside", "x"});
}

// "f<i>", empty (built with += : GCC 12 warns falsely on "f" + to_string).
TarEntry tiny_entry(uint64_t i) {
  std::string name = "f";
  name += std::to_string(i);
  return TarEntry(name);
}

}  // namespace

TEST_CASE("unpack: tar.gz and plain tar produce the same module tree") {
  for (bool gzip : {true, false}) {
    Sandbox sb;
    fs::path archive = sb.root / "m.tar";
    write_file(archive, make_tar(module_entries(), gzip));
    auto r = resolver::unpack_archive(archive, sb.root / "out");
    CHECK(r.module_dir == sb.root / "out");
    CHECK(r.entries == 4);
    CHECK(r.total_bytes == 7 + 3000 + 8);
    CHECK(list_tree(sb.root / "out") ==
          std::vector<std::string>{"assets", "assets/labels.txt", "module.pb", "variables.safetensors"});
    CHECK(read_file(sb.root / "out/assets/labels.txt") == "cat\ndog\n");
    CHECK(read_file(sb.root / "out/variables.safetensors") == std::string(3000, 'w'));
  }
}

TEST_CASE("unpack: a single top-level directory is hoisted; safe links inside are kept") {
  Sandbox sb;
  auto entries = module_entries("my_module");
  entries.push_back({"my_module/assets/alias.txt", TarEntry::kSymlink, "", "labels.txt"});
  entries.push_back({"my_module/assets/hard.txt", TarEntry::kHardlink, "", "my_module/assets/labels.txt"});
  entries.push_back({"my_module/sub", TarEntry::kDir});
  entries.push_back({"my_module/sub/up.txt", TarEntry::kSymlink, "", "../assets/labels.txt"});
  fs::path archive = sb.root / "m.tgz";
  write_file(archive, make_tar(entries));
  auto r = resolver::unpack_archive(archive, sb.root / "out");
  CHECK(fs::is_regular_file(sb.root / "out/module.pb"));
  CHECK(read_file(sb.root / "out/assets/alias.txt") == "cat\ndog\n");
  CHECK(read_file(sb.root / "out/assets/hard.txt") == "cat\ndog\n");
  CHECK(read_file(sb.root / "out/sub/up.txt") == "cat\ndog\n");
  struct stat st;
  REQUIRE(::stat((sb.root / "out/assets/hard.txt").c_str(), &st) == 0);
  CHECK(st.st_nlink == 2);
}

TEST_CASE("unpack: absolute path refused") {
  Sandbox probe;  // only to learn an absolute path that would be outside
  auto e = module_entries();
  e.push_back({(probe.outside / "pwned").string(), TarEntry::kFile, "evil"});
  expect_refused(make_tar(e), Code::kPermissionDenied, "absolute path");
  CHECK(!fs::exists(probe.outside / "pwned"));
}

TEST_CASE("unpack: ../ escape refused") {
  auto e = module_entries();
  e.push_back({"assets/../../outside/pwned", TarEntry::kFile, "evil"});
  expect_refused(make_tar(e), Code::kPermissionDenied, "'assets/../../outside/pwned'");
}

TEST_CASE("unpack: symlink to /etc/passwd refused") {
  auto e = module_entries();
  e.push_back({"passwd", TarEntry::kSymlink, "", "/etc/passwd"});
  expect_refused(make_tar(e), Code::kPermissionDenied, "symlink to absolute path '/etc/passwd'");
}

TEST_CASE("unpack: symlink to .. refused, and writing through a symlink refused") {
  auto e = module_entries();
  e.push_back({"up", TarEntry::kSymlink, "", ".."});
  expect_refused(make_tar(e), Code::kPermissionDenied, "'up': symlink to '..' points outside");

  auto deep = module_entries();
  deep.push_back({"assets/up", TarEntry::kSymlink, "", "../.."});
  expect_refused(make_tar(deep), Code::kPermissionDenied, "points outside");

  // A link that is itself inside, then an entry written through it.
  auto through = module_entries();
  through.push_back({"here", TarEntry::kSymlink, "", "assets"});
  through.push_back({"here/x.txt", TarEntry::kFile, "evil"});
  expect_refused(make_tar(through), Code::kPermissionDenied, "passes through symlink 'here'");
}

TEST_CASE("unpack: chained symlinks that only escape when resolved are refused") {
  // a -> "." and b -> "a/.." look harmless lexically; the kernel resolves b to
  // the parent of the module.
  auto e = module_entries();
  e.push_back({"a", TarEntry::kSymlink, "", "."});
  e.push_back({"sub", TarEntry::kDir});
  e.push_back({"sub/b", TarEntry::kSymlink, "", "../a/.."});
  expect_refused(make_tar(e), Code::kPermissionDenied, "'sub/b'");
}

TEST_CASE("unpack: hard link escapes refused") {
  auto e = module_entries();
  e.push_back({"hl", TarEntry::kHardlink, "", "../outside/secret"});
  expect_refused(make_tar(e), Code::kPermissionDenied, "'..' path component");

  auto abs = module_entries();
  abs.push_back({"hl", TarEntry::kHardlink, "", "/etc/passwd"});
  expect_refused(make_tar(abs), Code::kPermissionDenied, "absolute path");

  // To a name not (yet) extracted by this archive: would link whatever is there.
  auto later = module_entries();
  later.push_back({"hl", TarEntry::kHardlink, "", "not_yet"});
  later.push_back({"not_yet", TarEntry::kFile, "x"});
  expect_refused(make_tar(later), Code::kPermissionDenied, "hard link to 'not_yet'");
}

TEST_CASE("unpack: device nodes, FIFOs and sockets refused") {
  for (auto [type, name] : {std::pair{TarEntry::kCharDevice, "character device"}, std::pair{TarEntry::kFifo, "FIFO"}}) {
    auto e = module_entries();
    e.push_back({"dev", type});
    expect_refused(make_tar(e), Code::kPermissionDenied, std::string("'dev': ") + name);
  }
}

TEST_CASE("unpack: 10 GB declared-size bomb refused on its header, nothing written") {
  const int64_t ten_gb = int64_t{10} << 30;
  std::string bomb = make_declared_size_bomb("module.pb", ten_gb);
  CHECK(bomb.size() < 64 * 1024);
  expect_refused(bomb, Code::kResourceExhausted, "'module.pb' (10.0 GiB)");
}

TEST_CASE("unpack: 10 GB sparse-file bomb refused by the cap") {
  const int64_t ten_gb = int64_t{10} << 30;
  std::string bomb = make_sparse_bomb("weights", ten_gb);
  CHECK(bomb.size() < 64 * 1024);
  expect_refused(bomb, Code::kResourceExhausted, "'weights'");
}

TEST_CASE("unpack: total size cap counts real bytes") {
  auto e = module_entries();
  e.push_back({"big1", TarEntry::kFile, std::string(600 * 1024, 'a')});
  e.push_back({"big2", TarEntry::kFile, std::string(600 * 1024, 'b')});
  UnpackOptions o;
  o.limits.max_total_bytes = 1 << 20;
  expect_refused(make_tar(e), Code::kResourceExhausted, "'big2'", o);
  o.limits.max_total_bytes = 2 << 20;
  Sandbox sb;
  write_file(sb.root / "a.tgz", make_tar(e));
  CHECK_NOTHROW(resolver::unpack_archive(sb.root / "a.tgz", sb.root / "out", o));
}

TEST_CASE("unpack: entry-count bomb refused (configured cap, same code path)") {
  std::vector<TarEntry> e = module_entries();
  for (int i = 0; i < 3000; ++i) e.push_back(tiny_entry(static_cast<uint64_t>(i)));
  UnpackOptions o;
  o.limits.max_entries = 1000;
  expect_refused(make_tar(e), Code::kResourceExhausted, "more than 1000 entries", o);
}

TEST_CASE("unpack: default entry cap refuses 100,001 tiny entries without writing (inspect)") {
  Sandbox sb;
  std::vector<TarEntry> e = module_entries();
  const uint64_t n = resolver::UnpackLimits{}.max_entries;
  for (uint64_t i = 0; i < n; ++i) e.push_back(tiny_entry(static_cast<uint64_t>(i)));
  write_file(sb.root / "bomb.tgz", make_tar(e));
  try {
    resolver::inspect_archive(sb.root / "bomb.tgz");
    FAIL("accepted");
  } catch (const Error& err) {
    CHECK(err.code() == Code::kResourceExhausted);
    CHECK(std::string(err.what()).find("more than 100000 entries") != std::string::npos);
  }
  CHECK(list_tree(sb.root) == std::vector<std::string>{"bomb.tgz", "outside"});
}

TEST_CASE("unpack: archive without module.pb, or with an empty one, refused") {
  expect_refused(make_tar({{"variables.safetensors", TarEntry::kFile, "w"}}), Code::kCorruption, "no module.pb");
  expect_refused(make_tar({{"module.pb", TarEntry::kFile, ""}}), Code::kCorruption, "module.pb is empty");
  expect_refused(make_tar({{"module.pb", TarEntry::kDir}}), Code::kCorruption, "not a regular file");
}

TEST_CASE("unpack: truncated and non-archive input refused as corruption") {
  std::string good = make_tar(module_entries(), /*gzip=*/false);
  expect_refused(good.substr(0, 1000), Code::kCorruption, "");
  // Cut exactly at an entry boundary (after the last entry's data): only the
  // missing end-of-archive marker tells.
  // module.pb 512+512, variables 512+3072, assets/ 512, labels 512+512 = 6144,
  // then the end-of-archive marker: two zero blocks (make_tar pads no further).
  REQUIRE(good.size() == 6144 + 1024);
  CHECK(good.substr(6144) == std::string(1024, '\0'));
  CHECK(good[6144 - 512] != '\0');
  expect_refused(good.substr(0, 6144), Code::kCorruption, "without the end-of-archive marker");
  expect_refused("this is not a tar file at all, just some text that is long enough " + std::string(600, 'z'),
                 Code::kCorruption, "");
  auto noisy = module_entries();
  noisy.push_back({"weights.bin", TarEntry::kFile, noise(20000)});
  std::string gz = make_tar(noisy, true);
  expect_refused(gz.substr(0, gz.size() / 2), Code::kCorruption, "");
}

TEST_CASE("unpack: duplicate entries refused") {
  auto e = module_entries();
  e.push_back({"module.pb", TarEntry::kFile, "again"});
  expect_refused(make_tar(e), Code::kCorruption, "duplicate entry 'module.pb'");
}

TEST_CASE("unpack: the validator decides what a module is") {
  Sandbox sb;
  write_file(sb.root / "m.tgz", make_tar(module_entries()));
  int calls = 0;
  UnpackOptions opts;
  opts.validator = [&](const fs::path& dir) {
    ++calls;
    if (read_file(dir / "module.pb").find("tes") == std::string::npos) {
      throw Error(Code::kCorruption, "bad module.pb");
    }
  };
  CHECK_NOTHROW(resolver::unpack_archive(sb.root / "m.tgz", sb.root / "a", opts));
  opts.validator = [&](const fs::path&) {
    ++calls;
    throw Error(Code::kCorruption, "rejected by validator");
  };
  CHECK_THROWS_WITH_AS(resolver::unpack_archive(sb.root / "m.tgz", sb.root / "b", opts),
                       doctest::Contains("rejected by validator"), Error);
  CHECK(!fs::exists(sb.root / "b"));
  CHECK(calls == 2);
  // Without one, a non-empty module.pb is enough.
  CHECK_NOTHROW(resolver::unpack_archive(sb.root / "m.tgz", sb.root / "c"));
}

TEST_CASE("inspect: accepts a good archive without writing; refuses hostile ones") {
  Sandbox sb;
  write_file(sb.root / "m.tgz", make_tar(module_entries("top")));
  auto r = resolver::inspect_archive(sb.root / "m.tgz");
  CHECK(r.entries == 5);
  CHECK(list_tree(sb.root) == std::vector<std::string>{"m.tgz", "outside"});
  auto e = module_entries();
  e.push_back({"../x", TarEntry::kFile, "x"});
  write_file(sb.root / "bad.tgz", make_tar(e));
  CHECK_THROWS_AS(resolver::inspect_archive(sb.root / "bad.tgz"), Error);
}

TEST_CASE("the resolver's own validator loads the module: a garbage module.pb is refused") {
  Sandbox sb;
  std::vector<TarEntry> entries = module_entries();
  for (TarEntry& e : entries)
    if (e.path == "module.pb") e.data = "this is not a ModuleDef";
  write_file(sb.root / "m.tar.gz", make_tar(entries));
  resolver::ResolverOptions o = sb.options();
  o.validator = nullptr;  // the default: load_module_spec
  try {
    resolver::Resolver(o).resolve((sb.root / "m.tar.gz").string());
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kCorruption);
    CHECK(std::string(e.what()).find("module.pb") != std::string::npos);
  }
  CHECK(list_tree(sb.cache) == std::vector<std::string>{".tmp", "refs"});
}

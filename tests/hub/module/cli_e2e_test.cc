// End to end, in separate processes: examples/half_plus_two exports a module,
// `hub run` runs it on [10, 3, 4] from a .npy file and writes y.npy = [7, 3.5, 4].
// The executables' paths come from the environment (set by tests/meson.build).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "hub/core/fileio.h"
#include "hub/tensor/npy.h"
#include "subprocess.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using hub::testing::TempDir;

namespace {
std::string env_or_fail(const char* name) {
  const char* v = std::getenv(name);
  REQUIRE_MESSAGE(v != nullptr, name << " is not set (run through meson test)");
  return v;
}
int run(const std::string& cmd) { return hub::testing::run_shell(cmd); }
}  // namespace

TEST_CASE("half_plus_two export, then hub run in another process") {
  const std::string hub_exe = env_or_fail("HUB_EXE");
  const std::string exporter = env_or_fail("HALF_PLUS_TWO_EXE");
  TempDir tmp("hub_cli_e2e");
  const std::string module = (tmp.path / "half_plus_two").string();
  REQUIRE(run("'" + exporter + "' '" + module + "' > /dev/null") == 0);
  CHECK(fs::exists(fs::path(module) / "module.pb"));
  CHECK(fs::exists(fs::path(module) / "variables.safetensors"));
  CHECK(fs::is_directory(fs::path(module) / "assets"));

  // A second export onto the same path fails clearly and leaves it intact.
  const std::string err = (tmp.path / "err.txt").string();
  CHECK(run("'" + exporter + "' '" + module + "' 2> '" + err + "'") != 0);
  std::string msg = read_file_bytes(err);
  CHECK(msg.find("already exists") != std::string::npos);

  write_npy((tmp.path / "x.npy").string(), Tensor::floats({10, 3, 4}));
  const std::string out_dir = (tmp.path / "out").string();
  REQUIRE(run("'" + hub_exe + "' run '" + module + "' --signature default --input x=" + (tmp.path / "x.npy").string() +
              " --output_dir '" + out_dir + "' > /dev/null") == 0);
  Tensor y = read_npy((fs::path(out_dir) / "y.npy").string());
  CHECK(y.spec_string() == "float32[3]");
  CHECK(y.to_vector<float>() == std::vector<float>{7.0f, 3.5f, 4.0f});

  // Printing instead of writing, and `hub info` in both formats.
  const std::string printed = (tmp.path / "printed.txt").string();
  REQUIRE(run("'" + hub_exe + "' run '" + module + "' --input " + (tmp.path / "x.npy").string() + " > '" + printed +
              "'") == 0);
  CHECK(read_file_bytes(printed).find("y: float32[3] [7, 3.5, 4]") != std::string::npos);
  const std::string info = (tmp.path / "info.txt").string();
  REQUIRE(run("'" + hub_exe + "' info '" + module + "' > '" + info + "'") == 0);
  std::string text = read_file_bytes(info);
  CHECK(text.find("total: 2 parameters in 2 variables") != std::string::npos);
  CHECK(text.find("x: float32[?]") != std::string::npos);
  REQUIRE(run("'" + hub_exe + "' info --format json '" + module + "' > '" + info + "'") == 0);
  CHECK(read_file_bytes(info).find("\"total_parameters\": 2") != std::string::npos);
  REQUIRE(run("'" + hub_exe + "' info --graph '" + module + "' > '" + info + "'") == 0);
  CHECK(read_file_bytes(info).find("op: \"Mul\"") != std::string::npos);

  // Wrong dtype input: a clear error and a non-zero exit.
  write_npy((tmp.path / "xi.npy").string(), Tensor::from_vector<int32_t>({3}, {1, 2, 3}));
  CHECK(run("'" + hub_exe + "' run '" + module + "' --input x=" + (tmp.path / "xi.npy").string() + " 2> '" + err +
            "'") != 0);
  CHECK(read_file_bytes(err).find("input 'x' expects float32[?], got int32[3]") != std::string::npos);
}

TEST_CASE("the golden version-1 and version-2 modules still load and run") {
  const std::string hub_exe = env_or_fail("HUB_EXE");
  for (const char* version : {"v1", "v2"}) {
    CAPTURE(version);
    const std::string golden = env_or_fail("HUB_TESTDATA") + "/modules/half_plus_two_" + version;
    TempDir tmp("hub_cli_e2e");
    write_npy((tmp.path / "x.npy").string(), Tensor::floats({10, 3, 4}));
    REQUIRE(run("'" + hub_exe + "' run '" + golden + "' --input x=" + (tmp.path / "x.npy").string() +
                " --output_dir '" + tmp.path.string() + "' > /dev/null") == 0);
    CHECK(read_npy((tmp.path / "y.npy").string()).to_vector<float>() == std::vector<float>{7.0f, 3.5f, 4.0f});
  }
}

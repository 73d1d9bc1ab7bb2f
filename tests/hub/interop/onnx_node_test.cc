// ONNX's own backend test cases (Debian's libonnx-testdata): every case whose
// operators hub supports is imported and run on both CPU backends against its
// expected outputs (rtol 1e-3, atol 1e-5). Cases hub cannot import are listed
// with the reason in tests/hub/interop/onnx_node_skips.txt (and in
// docs/import.md); the test fails when a case outside that list fails to
// import, or when a listed case starts to work (so the list stays exact).
#include <doctest/doctest.h>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "hub/backend/backend.h"
#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/graph/session.h"
#include "hub/interop/onnx/importer.h"
#include "hub/interop/onnx/model.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

const char* kTestData = "/usr/share/libonnx-testdata/data";

Tensor read_tensor(const fs::path& p) {
  ::onnx::TensorProto t;
  std::string bytes = read_file_bytes(p.string());
  REQUIRE_MESSAGE(t.ParseFromString(bytes), p.string());
  return onnx_interop::tensor_from_onnx(t, p.string());
}

// Runs the imported default signature on one test_data_set_* folder.
void check_data_set(const ModuleSpec& spec, const fs::path& dir, const std::string& backend) {
  const SignatureInfo& sig = spec.signature();
  // Inputs are named input_<i>.pb in the order of the graph's inputs; the
  // signature keeps ONNX names, so order them by the model's input list.
  std::vector<std::pair<std::string, TensorInfo>> inputs(sig.inputs.begin(), sig.inputs.end());
  const Graph& g = spec.graph();
  std::sort(inputs.begin(), inputs.end(), [&](const auto& a, const auto& b) {
    return g.tensor(a.second.tensor_name).node < g.tensor(b.second.tensor_name).node;
  });
  std::vector<std::pair<std::string, TensorInfo>> outputs(sig.outputs.begin(), sig.outputs.end());
  VariableStore vars;
  for (const auto& [name, t] : spec.weights()) vars.set(name, t.clone());
  Session session(g, &vars, {&find_backend(backend)});
  FeedList feeds;
  for (size_t i = 0; i < inputs.size(); ++i)
    feeds.push_back({g.tensor(inputs[i].second.tensor_name), read_tensor(dir / ("input_" + std::to_string(i) + ".pb"))});
  std::map<std::string, Tensor> expected;
  std::vector<Output> fetches;
  for (size_t i = 0; i < outputs.size(); ++i) fetches.push_back(g.tensor(outputs[i].second.tensor_name));
  std::vector<Tensor> got = session.run(feeds, fetches);
  // output_<i>.pb follow the graph's output order, which the module's
  // signature (a map) does not keep: match each file by name when it has
  // one, else by position in the model.
  for (size_t i = 0;; ++i) {
    fs::path p = dir / ("output_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    ::onnx::TensorProto t;
    REQUIRE(t.ParseFromString(read_file_bytes(p.string())));
    auto it = std::find_if(outputs.begin(), outputs.end(), [&](const auto& o) { return o.first == t.name(); });
    REQUIRE_MESSAGE(it != outputs.end(), "no output named '" << t.name() << "' for " << p.string());
    INFO("output " << it->first << " on " << backend);
    expect_close(got[static_cast<size_t>(it - outputs.begin())], onnx_interop::tensor_from_onnx(t, p.string()), 1e-5,
                 1e-3);
  }
}

std::map<std::string, std::string> expected_skips() {
  std::map<std::string, std::string> out;
  std::ifstream in(std::string(HUB_SOURCE_DIR) + "/tests/hub/interop/onnx_node_skips.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto tab = line.find('\t');
    out[line.substr(0, tab)] = tab == std::string::npos ? "" : line.substr(tab + 1);
  }
  return out;
}

}  // namespace

TEST_CASE("ONNX backend test cases from libonnx-testdata") {
  HUB_SKIP_UNLESS(fs::exists(kTestData), std::string(kTestData) + " not installed (Debian package libonnx-testdata)");
  const std::map<std::string, std::string> listed = expected_skips();
  std::map<std::string, std::string> skipped;
  int passed = 0;
  for (const char* group : {"node", "pytorch-converted", "pytorch-operator"}) {
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(fs::path(kTestData) / group)) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    for (const fs::path& dir : cases) {
      const std::string name = std::string(group) + "/" + dir.filename().string();
      ModuleSpec spec;
      try {
        spec = onnx_interop::import_onnx((dir / "model.onnx").string());
      } catch (const Error& e) {
        std::string why = e.message();
        skipped[name] = why;
        continue;
      }
      std::vector<fs::path> sets;
      for (const auto& e : fs::directory_iterator(dir))
        if (e.is_directory()) sets.push_back(e.path());
      std::sort(sets.begin(), sets.end());
      bool ok = true;
      for (const char* backend : {"reference", "onednn"})
        for (const fs::path& set : sets) {
          INFO("case " << name << ", " << set.filename().string());
          try {
            check_data_set(spec, set, backend);
          } catch (const Error& e) {
            ok = false;
            FAIL_CHECK("case " << name << " on " << backend << ": " << e.what());
          }
        }
      passed += ok;
    }
  }
  MESSAGE("ONNX cases passing: " << passed << ", skipped: " << skipped.size());
  for (const auto& [name, why] : skipped)
    if (!listed.count(name)) FAIL_CHECK("case " << name << " is not in onnx_node_skips.txt: " << why);
  for (const auto& [name, why] : listed)
    if (!skipped.count(name)) FAIL_CHECK("case " << name << " imports now: remove it from onnx_node_skips.txt");
  if (const char* dump = std::getenv("HUB_ONNX_SKIPS_OUT")) {
    std::ofstream out(dump);
    for (const auto& [name, why] : skipped) out << name << '\t' << why << '\n';
  }
}

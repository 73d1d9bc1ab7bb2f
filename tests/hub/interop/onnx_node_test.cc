// ONNX's own backend test cases (Debian's libonnx-testdata): every case whose
// operators hub supports is imported and run on both CPU backends against its
// expected outputs (rtol 1e-3, atol 1e-5; rtol 1e-2 for bfloat16). Cases hub cannot import are listed
// with the reason in tests/hub/interop/onnx_node_skips.txt (and in
// docs/import.md); the test fails when a case outside that list fails to
// import, or when a listed case starts to work (so the list stays exact).
// A case refused as written because hub needs some input constant that the
// test feeds at run time is run again with its inputs after the first (else
// all) made initializers of each data set's values, and must then match too.
// A few cases import but carry test data that does not fit their own model:
// the list gives those as "test data: <why>".
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
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
const char* kDataMismatch = "test data: ";

// A test data file of a value the model declares of ONNX type `declared`.
// libonnx-testdata 1.12 stores bfloat16 data as UINT16 (the same bits).
Tensor read_tensor(const fs::path& p, int declared) {
  ::onnx::TensorProto t;
  std::string bytes = read_file_bytes(p.string());
  REQUIRE_MESSAGE(t.ParseFromString(bytes), p.string());
  if (declared == ::onnx::TensorProto::BFLOAT16 && t.data_type() == ::onnx::TensorProto::UINT16)
    t.set_data_type(::onnx::TensorProto::BFLOAT16);
  return onnx_interop::tensor_from_onnx(t, p.string());
}

// The model's input (non-initializer) and output names and ONNX types, in
// the order of its test data files input_<i>.pb / output_<i>.pb.
struct Order {
  std::vector<std::string> inputs, outputs;
  std::vector<int> input_types, output_types;
};

Order io_order(const fs::path& model) {
  ::onnx::ModelProto m;
  REQUIRE(m.ParseFromString(read_file_bytes(model.string())));
  std::set<std::string> initializers;
  for (const auto& t : m.graph().initializer()) initializers.insert(t.name());
  Order o;
  for (const auto& in : m.graph().input())
    if (!initializers.count(in.name())) {
      o.inputs.push_back(in.name());
      o.input_types.push_back(in.type().tensor_type().elem_type());
    }
  for (const auto& out : m.graph().output()) {
    o.outputs.push_back(out.name());
    o.output_types.push_back(out.type().tensor_type().elem_type());
  }
  return o;
}

// Runs the imported default signature on one test_data_set_* folder, feeding
// its first `fed` inputs (all by default; the rest were made constants).
void check_data_set(const ModuleSpec& spec, const Order& order, const fs::path& dir, const std::string& backend,
                    size_t fed = SIZE_MAX) {
  const SignatureInfo& sig = spec.signature();
  const Graph& g = spec.graph();
  VariableStore vars;
  for (const auto& [name, t] : spec.weights()) vars.set(name, t.clone());
  Session session(g, &vars, {&find_backend(backend)});
  FeedList feeds;
  for (size_t i = 0; i < std::min(fed, order.inputs.size()); ++i)
    feeds.push_back({g.tensor(sig.inputs.at(order.inputs[i]).tensor_name),
                     read_tensor(dir / ("input_" + std::to_string(i) + ".pb"), order.input_types[i])});
  std::vector<Output> fetches;
  for (const std::string& name : order.outputs) fetches.push_back(g.tensor(sig.outputs.at(name).tensor_name));
  std::vector<Tensor> got = session.run(feeds, fetches);
  for (size_t i = 0; i < order.outputs.size(); ++i) {
    INFO("output " << order.outputs[i] << " on " << backend);
    // hub computes float16 and bfloat16 in float32: an expected output
    // stored at bfloat16's 8-bit precision matches to that precision.
    const int type = order.output_types[i];
    expect_close(got[i], read_tensor(dir / ("output_" + std::to_string(i) + ".pb"), type), 1e-5,
                 type == ::onnx::TensorProto::BFLOAT16 ? 1e-2 : 1e-3);
  }
}

// The model with its inputs after the first `keep` made initializers
// holding one data set's values: hub needs some inputs constant
// (a Resize's scales, a Reshape's shape, a CumSum's axis) that these tests
// feed at run time. Written to `out`.
void bake_inputs(const fs::path& model, const Order& order, const fs::path& set, size_t keep, const fs::path& out) {
  ::onnx::ModelProto m;
  REQUIRE(m.ParseFromString(read_file_bytes(model.string())));
  auto* g = m.mutable_graph();
  ::google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto> inputs;
  for (const auto& in : g->input()) {
    auto it = std::find(order.inputs.begin(), order.inputs.end(), in.name());
    const size_t i = static_cast<size_t>(it - order.inputs.begin());
    if (it == order.inputs.end() || i < keep) {
      *inputs.Add() = in;
      continue;
    }
    ::onnx::TensorProto* t = g->add_initializer();
    REQUIRE(t->ParseFromString(read_file_bytes((set / ("input_" + std::to_string(i) + ".pb")).string())));
    t->set_name(in.name());
  }
  *g->mutable_input() = inputs;
  if (m.ir_version() < 4) m.set_ir_version(4);  // initializers that are not inputs
  std::ofstream f(out, std::ios::binary);
  REQUIRE(m.SerializeToOstream(&f));
}

// The data sets of a case, in order.
std::vector<fs::path> data_sets(const fs::path& dir) {
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  return sets;
}

// Whether the case imports once the inputs after the first (else all of
// them) are constants, for every data set; then checks it, and fails the
// test where the outputs differ.
bool passes_baked(const std::string& name, const fs::path& dir, const fs::path& scratch) {
  const Order order = io_order(dir / "model.onnx");
  for (size_t keep : {size_t{1}, size_t{0}}) {
    if (order.inputs.size() <= keep) continue;
    std::vector<std::pair<fs::path, ModuleSpec>> specs;
    try {
      for (const fs::path& set : data_sets(dir)) {
        const fs::path baked = scratch / (set.filename().string() + ".onnx");
        bake_inputs(dir / "model.onnx", order, set, keep, baked);
        specs.emplace_back(set, onnx_interop::import_onnx(baked.string()));
      }
    } catch (const Error&) {
      continue;
    }
    for (const auto& [set, spec] : specs)
      for (const char* backend : {"reference", "onednn"}) {
        INFO("case " << name << " with constant inputs, " << set.filename().string());
        try {
          check_data_set(spec, order, set, backend, keep);
        } catch (const std::exception& e) {
          FAIL_CHECK("case " << name << " with constant inputs on " << std::string(backend) << ": "
                             << std::string(e.what()));
        }
      }
    return true;
  }
  return false;
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
  int passed = 0, passed_baked = 0;
  TempDir scratch("onnx_node_baked");
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
        if (passes_baked(name, dir, scratch.path))
          ++passed_baked;
        else
          skipped[name] = e.message();
        continue;
      }
      // Cases whose own test data does not fit their model are listed as
      // "test data: <why>" and imported but not run.
      if (auto it = listed.find(name); it != listed.end() && it->second.rfind(kDataMismatch, 0) == 0) {
        skipped[name] = it->second;
        continue;
      }
      const Order order = io_order(dir / "model.onnx");
      const std::vector<fs::path> sets = data_sets(dir);
      bool ok = true;
      for (const char* backend : {"reference", "onednn"})
        for (const fs::path& set : sets) {
          INFO("case " << name << ", " << set.filename().string());
          try {
            check_data_set(spec, order, set, backend);
          } catch (const Error& e) {
            ok = false;
            FAIL_CHECK("case " << name << " on " << std::string(backend) << ": " << std::string(e.what()));
          }
        }
      passed += ok;
    }
  }
  MESSAGE("ONNX cases passing: " << passed << " as written, " << passed_baked
                                 << " more with the inputs hub needs constant given as initializers; skipped: "
                                 << skipped.size());
  for (const auto& [name, why] : skipped)
    if (!listed.count(name)) FAIL_CHECK("case " << name << " is not in onnx_node_skips.txt: " << why);
  for (const auto& [name, why] : listed)
    if (!skipped.count(name)) FAIL_CHECK("case " << name << " imports now: remove it from onnx_node_skips.txt");
  if (const char* dump = std::getenv("HUB_ONNX_SKIPS_OUT")) {
    std::ofstream out(dump);
    for (const auto& [name, why] : skipped) out << name << '\t' << why << '\n';
  }
}

// ONNX import: hand-built models with hand-computed answers (layouts,
// folding, weights as variables), the image signatures, and bad input (each
// a clear error naming the model file, the node, its op and the attribute).
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/interop/onnx/convert.h"
#include "hub/interop/onnx/exporter.h"
#include "hub/interop/onnx/importer.h"
#include "hub/interop/onnx/model.h"
#include "hub/interop/onnx/rewrite.h"
#include "hub/ops/fused.h"
#include "onnx_testutil.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

// A small ModelProto builder (opset 13 unless told otherwise).
struct OnnxBuilder {
  ::onnx::ModelProto model;
  ::onnx::GraphProto* g;
  explicit OnnxBuilder(int opset = 13) {
    model.set_ir_version(7);
    auto* op = model.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    g = model.mutable_graph();
    g->set_name("test");
  }
  void input(const std::string& name, const std::vector<int64_t>& dims, int type = ::onnx::TensorProto::FLOAT) {
    auto* vi = g->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    tt->mutable_shape();  // rank 0 too
    for (int64_t d : dims) {
      auto* dim = tt->mutable_shape()->add_dim();
      if (d < 0)
        dim->set_dim_param("N");
      else
        dim->set_dim_value(d);
    }
  }
  // A graph output of rank dims.size(); negative dims are symbolic.
  void output(const std::string& name, const std::vector<int64_t>& dims) {
    auto* vi = g->add_output();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    tt->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = tt->mutable_shape()->add_dim();
      if (d < 0)
        dim->set_dim_param(std::string("d").append(std::to_string(tt->shape().dim_size())));
      else
        dim->set_dim_value(d);
    }
  }
  ::onnx::TensorProto* init(const std::string& name, const Tensor& t) {
    auto* p = g->add_initializer();
    onnx_interop::tensor_to_onnx(t, p);
    p->set_name(name);
    return p;
  }
  ::onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& in, const std::string& out,
                          const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? "/" + op : name);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  }
  std::string save(const fs::path& dir, const std::string& file = "model.onnx") {
    std::string path = (dir / file).string();
    std::ofstream out(path, std::ios::binary);
    REQUIRE(model.SerializeToOstream(&out));
    return path;
  }
};

void ints_attr(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void int_attr(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

// `spec` converted back to ONNX in `dir`, run by ONNX Runtime on `inputs`:
// each output named in `names` must match `want` (in that order; the
// exported outputs come in the signature's key order). Returns the model.
::onnx::ModelProto expect_exported_agrees(const ModuleSpec& spec, const fs::path& dir,
                                          const std::vector<std::pair<std::string, Tensor>>& inputs,
                                          const std::vector<std::string>& names, const std::vector<Tensor>& want) {
  const std::string exported = (dir / "exported.onnx").string();
  onnx_interop::export_onnx(spec, exported);
  ::onnx::ModelProto m;
  REQUIRE(m.ParseFromString(read_file_bytes(exported)));
  const std::vector<Tensor> again = run_onnx_runtime(exported, inputs, dir / "exported");
  std::map<std::string, size_t> index;
  for (int i = 0; i < m.graph().output_size(); ++i) index[m.graph().output(i).name()] = static_cast<size_t>(i);
  for (size_t i = 0; i < names.size(); ++i) {
    INFO("exported " << names[i]);
    REQUIRE(index.count(names[i]));
    expect_close(again.at(index.at(names[i])), want.at(i), 1e-5, 1e-4);
  }
  return m;
}

}  // namespace

TEST_CASE("ONNX import: NCHW convolution, bias and ReLU at the boundary, weights as variables") {
  TempDir dir("onnx_conv");
  OnnxBuilder b;
  b.input("x", {1, 2, 3, 3});
  // W [O=1, C=2, 2, 2]: channel 0 weights 1, channel 1 weights -1; bias 0.5.
  b.init("W", make({1, 2, 2, 2}, {1, 1, 1, 1, -1, -1, -1, -1}));
  b.init("B", make({1}, {0.5f}));
  b.node("Conv", {"x", "W", "B"}, "c");
  b.node("Relu", {"c"}, "y");
  b.output("y", {1, 1, 2, 2});
  ModuleSpec spec = onnx_interop::import_onnx(b.save(dir.path));
  // x channel 0 = 1..9, channel 1 = all 1: each 2x2 window sums to
  // (channel 0 window sum) - 4 + 0.5.
  Tensor x = make({1, 2, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  for (const char* backend : {"reference", "onednn"}) {
    TensorMap out = run_signature(spec, "default", {{"x", x}}, backend);
    expect_close(out.at("y"), make({1, 1, 2, 2}, {12 - 3.5f, 16 - 3.5f, 24 - 3.5f, 28 - 3.5f}));
  }
  // The weight is a module variable, transposed once to HWIO [2,2,2,1].
  REQUIRE(spec.weights().count("W"));
  CHECK(spec.weights().at("W").shape() == Shape{2, 2, 2, 1});
  CHECK(spec.weights().at("B").shape() == Shape{1});
  CHECK(std::get<std::string>(spec.attached().at("source_format")) == "onnx");
  CHECK(std::get<int64_t>(spec.attached().at("source_opset")) == 13);
  CHECK(std::get<std::string>(spec.attached().at("source_sha256")).size() == 64);
}

TEST_CASE("ONNX import: constants fold, including Shape chains, and a dynamic batch reshape") {
  TempDir dir("onnx_fold");
  OnnxBuilder b;
  b.input("x", {-1, 2, 2, 2});
  // Shape(x)[0] unsqueezed, concat [-1]: PyTorch's x.view(x.size(0), -1).
  b.node("Shape", {"x"}, "s");
  b.init("zero", Tensor::scalar<int64_t>(0));
  auto* gather = b.node("Gather", {"s", "zero"}, "n");
  int_attr(gather, "axis", 0);
  b.init("axes0", Tensor::from_vector<int64_t>({1}, {0}));
  b.node("Unsqueeze", {"n", "axes0"}, "n1");
  b.init("minus1", Tensor::from_vector<int64_t>({1}, {-1}));
  auto* cat = b.node("Concat", {"n1", "minus1"}, "target");
  int_attr(cat, "axis", 0);
  b.node("Reshape", {"x", "target"}, "flat");
  // (2 + 3) * 0.5 folds to one constant.
  b.init("two", make({}, {2}));
  b.init("three", make({}, {3}));
  b.init("half", make({}, {0.5f}));
  b.node("Add", {"two", "three"}, "five");
  b.node("Mul", {"five", "half"}, "k");
  b.node("Mul", {"flat", "k"}, "y");
  b.output("y", {-1, 8});
  ModuleSpec spec = onnx_interop::import_onnx(b.save(dir.path));
  // No Add node survives: 2 + 3 was folded at import.
  for (const Node& n : spec.graph().nodes()) CHECK(n.op != "Add");
  Tensor x = random_tensor({3, 2, 2, 2}, 4);
  Tensor y = run_signature(spec, "default", {{"x", x}}, "reference").at("y");
  CHECK(y.shape() == Shape{3, 8});
  for (int64_t i = 0; i < 24; ++i) CHECK(y.data<float>()[i] == doctest::Approx(x.data<float>()[i] * 2.5f));
}

TEST_CASE("ONNX import: a chain of spatial ops has no layout change between them") {
  TempDir dir("onnx_layout");
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.init("W1", random_tensor({4, 3, 3, 3}, 1));
  b.init("W2", random_tensor({4, 4, 3, 3}, 2));
  auto* c1 = b.node("Conv", {"x", "W1"}, "c1");
  ints_attr(c1, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c1"}, "r1");
  auto* p = b.node("MaxPool", {"r1"}, "p");
  ints_attr(p, "kernel_shape", {2, 2});
  ints_attr(p, "strides", {2, 2});
  auto* c2 = b.node("Conv", {"p", "W2"}, "c2");
  ints_attr(c2, "pads", {1, 1, 1, 1});
  b.node("GlobalAveragePool", {"c2"}, "g");
  b.node("Flatten", {"g"}, "y");
  b.output("y", {1, 4});
  ModuleSpec spec = onnx_interop::import_onnx(b.save(dir.path));
  int transposes = 0;
  for (const Node& n : spec.graph().nodes()) transposes += n.op == "Transpose";
  CHECK(transposes == 1);  // at the input edge only; the flatten of [N,1,1,C] is a free reshape
}

TEST_CASE("ONNX import: image signatures normalise NHWC images and share the model's variables") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_image");
  write_pytorch_style_models(dir.path);
  onnx_interop::OnnxImportOptions o;
  o.mean = {0.485, 0.456, 0.406};
  o.std = {0.229, 0.224, 0.225};
  o.labels = "a\nb\n";
  ModuleSpec spec = onnx_interop::import_onnx((dir.path / "mobilenet.onnx").string(), o);
  CHECK(get_expected_image_size(spec) == std::pair<int64_t, int64_t>{64, 64});
  const TensorInfo& fv = spec.signature("image_feature_vector").outputs.at("default");
  CHECK(fv.shape == Shape{kUnknownDim, 128});
  const size_t variables = spec.variables().size();
  // The second copy of the body added no variables.
  size_t var_nodes = 0;
  for (const Node& n : spec.graph().nodes()) var_nodes += n.op == "Variable";
  CHECK(var_nodes == variables);
  // image_classification(images) == default((images - mean) / std as NCHW).
  Tensor images = random_tensor({2, 64, 64, 3}, 9, 0, 1);
  Tensor nchw(DType::kFloat32, {2, 3, 64, 64});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < 64 * 64; ++i)
        nchw.data<float>()[(n * 3 + c) * 4096 + i] =
            static_cast<float>((images.data<float>()[(n * 4096 + i) * 3 + c] - o.mean[c]) / o.std[c]);
  // The model's own input has batch 1: compare image by image.
  for (int64_t n = 0; n < 2; ++n) {
    Tensor one(DType::kFloat32, {1, 3, 64, 64});
    std::memcpy(one.raw_data(), nchw.data<float>() + n * 3 * 4096, 3 * 4096 * sizeof(float));
    Tensor want = run_signature(spec, "default", {{"input", one}}, "onednn").begin()->second;
    Tensor got = run_signature(spec, "image_classification", {{"images", images}}, "onednn").at("default");
    Tensor row(DType::kFloat32, {1, 1000});
    std::memcpy(row.raw_data(), got.data<float>() + n * 1000, 1000 * sizeof(float));
    expect_close(row, want, 1e-5, 1e-4);
  }
  CHECK(spec.asset_files().at("labels.txt") == "a\nb\n");
}

TEST_CASE("ONNX import: unsupported operators, attributes and types name the node, op and file") {
  TempDir dir("onnx_bad");
  {
    OnnxBuilder b;
    b.input("x", {2, 2});
    b.node("Det", {"x"}, "y", "the_node");
    b.output("y", {2, 2});
    const std::string path = b.save(dir.path, "op.onnx");
    expect_error(
        Code::kUnimplemented, [&] { onnx_interop::import_onnx(path); }, "node 'the_node' (Det)");
    expect_error(
        Code::kUnimplemented, [&] { onnx_interop::import_onnx(path); }, path);
  }
  {
    OnnxBuilder b;
    b.input("x", {1, 2, 4, 4});
    auto* n = b.node("MaxPool", {"x"}, "y", "pool");
    ints_attr(n, "kernel_shape", {2, 2});
    int_attr(n, "storage_order", 1);
    b.output("y", {1, 2, 2, 2});
    const std::string path = b.save(dir.path, "attr.onnx");
    expect_error(
        Code::kUnimplemented, [&] { onnx_interop::import_onnx(path); }, "storage_order");
  }
  // A window attribute with the wrong count or a zero stride (the fuzzer's find: the count was
  // not checked, and computing SAME padding read past it).
  for (const std::vector<int64_t>& strides :
       {std::vector<int64_t>{2}, std::vector<int64_t>{2, 0}, std::vector<int64_t>{2, int64_t{1} << 40}}) {
    OnnxBuilder b;
    b.input("x", {1, 2, 4, 4});
    auto* n = b.node("AveragePool", {"x"}, "y", "pool");
    ints_attr(n, "kernel_shape", {2, 2});
    ints_attr(n, "strides", strides);
    b.output("y", {1, 2, 2, 2});
    const std::string path = b.save(dir.path, "strides.onnx");
    expect_error(
        Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); }, "attribute strides");
  }
  {
    OnnxBuilder b;
    b.input("x", {2}, ::onnx::TensorProto::DOUBLE);
    b.node("Relu", {"x"}, "y");
    b.output("y", {2});
    const std::string path = b.save(dir.path, "dtype.onnx");
    expect_error(
        Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); }, "DOUBLE");
  }
  {
    OnnxBuilder b(18);
    b.input("x", {2});
    b.node("Relu", {"x"}, "y");
    b.output("y", {2});
    const std::string path = b.save(dir.path, "new.onnx");
    expect_error(
        Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); }, "opsets 1 to 17");
  }
}

TEST_CASE("ONNX import: opset 1 to 6 forms and the experimental operators take their opset-7 meaning") {
  TempDir dir("onnx_legacy");
  auto float_attr = [](::onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(v);
  };
  auto string_attr = [](::onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
  };
  auto run = [](const std::string& path, const Tensor& x) {
    const ModuleSpec spec = onnx_interop::import_onnx(path);
    return run_signature(spec, "default", {{"x", x}}, "reference");
  };
  SUBCASE("opset 1: legacy broadcast along an axis, consumed_inputs, Cast by name, Reshape's and Concat's defaults") {
    OnnxBuilder b(1);
    b.input("x", {2, 3, 2});
    b.init("b", make({3}, {10, 20, 30}));
    auto* add = b.node("Add", {"x", "b"}, "t");
    int_attr(add, "broadcast", 1);
    int_attr(add, "axis", 1);  // b's dims match x's dim 1: b[j] is added to x[i, j, k]
    ints_attr(b.node("Relu", {"t"}, "relu"), "consumed_inputs", {0});
    string_attr(b.node("Cast", {"relu"}, "i"), "to", "INT32");
    string_attr(b.node("Cast", {"i"}, "y"), "to", "FLOAT");
    ints_attr(b.node("Reshape", {"x"}, "r"), "shape", {3, 4});
    b.node("Concat", {"r", "r"}, "c");  // axis 1 by default before opset 4
    b.output("y", {2, 3, 2});
    b.output("c", {3, 8});
    const Tensor x = make({2, 3, 2}, {-11.5f, 1.5f, -20.5f, 2.5f, 0, 3.7f, 4, 5, 6, 7, -40, 8.9f});
    const TensorMap out = run(b.save(dir.path, "opset1.onnx"), x);
    expect_close(out.at("y"), make({2, 3, 2}, {0, 11, 0, 22, 30, 33, 14, 15, 26, 27, 0, 38}));
    std::vector<float> c;
    for (int row = 0; row < 3; ++row)
      for (int copy = 0; copy < 2; ++copy)
        for (int k = 0; k < 4; ++k) c.push_back(x.data<float>()[row * 4 + k]);
    expect_close(out.at("c"), make({3, 8}, c));
  }
  SUBCASE("opset 1: Pad's paddings, Split's split input, Upsample's two scales") {
    OnnxBuilder b(1);
    b.input("x", {1, 1, 2, 2});
    auto* pad = b.node("Pad", {"x"}, "p");
    ints_attr(pad, "paddings", {0, 0, 0, 1, 0, 0, 1, 0});  // one column before, one row after
    float_attr(pad, "value", 5);
    b.init("split", Tensor::from_vector<int64_t>(Shape{2}, {1, 2}));
    auto* split = b.node("Split", {"p", "split"}, "s0");
    split->add_output("s1");
    int_attr(split, "axis", 3);
    auto* up = b.node("Upsample", {"x"}, "u");
    float_attr(up, "height_scale", 2);
    float_attr(up, "width_scale", 2);
    b.output("s0", {1, 1, 3, 1});
    b.output("s1", {1, 1, 3, 2});
    b.output("u", {1, 1, 4, 4});
    const TensorMap out = run(b.save(dir.path, "opset1_shapes.onnx"), make({1, 1, 2, 2}, {1, 2, 3, 4}));
    expect_close(out.at("s0"), make({1, 1, 3, 1}, {5, 5, 5}));
    expect_close(out.at("s1"), make({1, 1, 3, 2}, {1, 2, 3, 4, 5, 5}));
    expect_close(out.at("u"), make({1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  }
  SUBCASE("opset 5: Tile's tiles and axis inputs") {
    OnnxBuilder b(5);
    b.input("x", {2, 2});
    b.init("tiles", Tensor::scalar<int64_t>(3));
    b.init("axis", Tensor::scalar<int64_t>(1));
    b.node("Tile", {"x", "tiles", "axis"}, "y");
    b.output("y", {2, 6});
    const TensorMap out = run(b.save(dir.path, "tile.onnx"), make({2, 2}, {1, 2, 3, 4}));
    expect_close(out.at("y"), make({2, 6}, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  }
  SUBCASE("opsets 1 to 9: ImageScaler, Scale, Affine, ScaledTanh, ParametricSoftplus, ThresholdedRelu")
  for (int opset : {1, 5, 9}) {
    CAPTURE(opset);
    OnnxBuilder b(opset);
    b.model.set_ir_version(3);  // the new constants are graph inputs too
    b.input("x", {1, 3, 1, 2});
    auto* scaler = b.node("ImageScaler", {"x"}, "image");
    float_attr(scaler, "scale", 2);
    auto* bias = scaler->add_attribute();
    bias->set_name("bias");
    bias->set_type(::onnx::AttributeProto::FLOATS);
    for (float v : {1.0f, 2.0f, 3.0f}) bias->add_floats(v);
    float_attr(b.node("Scale", {"x"}, "scale"), "scale", 3);
    auto* affine = b.node("Affine", {"x"}, "affine");
    float_attr(affine, "alpha", 2);
    float_attr(affine, "beta", 1);
    auto* tanh = b.node("ScaledTanh", {"x"}, "tanh");
    float_attr(tanh, "alpha", 2);
    float_attr(tanh, "beta", 0.5f);
    auto* softplus = b.node("ParametricSoftplus", {"x"}, "softplus");
    float_attr(softplus, "alpha", 2);
    float_attr(softplus, "beta", 3);
    float_attr(b.node("ThresholdedRelu", {"x"}, "relu"), "alpha", 0.5f);
    for (const char* name : {"image", "scale", "affine", "tanh", "softplus", "relu"}) b.output(name, {1, 3, 1, 2});
    const std::vector<float> v{-1, 0.25f, 0.5f, 0.75f, 2, -3};
    const TensorMap out =
        run(b.save(dir.path, "experimental" + std::to_string(opset) + ".onnx"), make({1, 3, 1, 2}, v));
    auto each = [&](const std::function<float(float, int)>& f) {
      std::vector<float> r;
      for (int i = 0; i < 6; ++i) r.push_back(f(v[i], i / 2));
      return make({1, 3, 1, 2}, r);
    };
    expect_close(out.at("image"), each([](float x, int c) { return 2 * x + static_cast<float>(c + 1); }));
    expect_close(out.at("scale"), each([](float x, int) { return 3 * x; }));
    expect_close(out.at("affine"), each([](float x, int) { return 2 * x + 1; }));
    expect_close(out.at("tanh"), each([](float x, int) { return 2 * std::tanh(0.5f * x); }));
    expect_close(out.at("softplus"), each([](float x, int) { return 2 * std::log1p(std::exp(3 * x)); }));
    expect_close(out.at("relu"), each([](float x, int) { return x > 0.5f ? x : 0.0f; }));
  }
  SUBCASE("opset 11: a Softmax of a computed value reaches ONNX's converter with its shape") {
    OnnxBuilder b(11);
    b.input("x", {1, 3});
    b.node("Neg", {"x"}, "n");
    b.node("Softmax", {"n"}, "y");
    b.output("y", {1, 3});
    const TensorMap out = run(b.save(dir.path, "softmax.onnx"), make({1, 3}, {0, 1, 2}));
    const float e1 = std::exp(-1.0f), e2 = std::exp(-2.0f), sum = 1 + e1 + e2;
    expect_close(out.at("y"), make({1, 3}, {1 / sum, e1 / sum, e2 / sum}));
  }
  SUBCASE("what has no opset-7 meaning is refused, naming the node") {
    {
      OnnxBuilder b(6);  // is_test defaults to 0: training mode
      b.input("x", {1, 2, 2, 2});
      for (const char* name : {"scale", "bias", "mean", "var"}) b.init(name, make({2}, {1, 1}));
      b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, "y", "bn");
      b.output("y", {1, 2, 2, 2});
      const std::string path = b.save(dir.path, "bn.onnx");
      expect_error(
          Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); },
          "node 0 'bn' (BatchNormalization, opset 6)");
      expect_error(
          Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); }, "is_test = 0 (training mode");
    }
    {
      OnnxBuilder b(6);
      b.input("x", {2, 3});
      b.init("b", make({3}, {1, 2, 3}));
      auto* add = b.node("Add", {"x", "b"}, "y", "add");
      int_attr(add, "broadcast", 1);
      int_attr(add, "axis", 2);
      b.output("y", {2, 3});
      const std::string path = b.save(dir.path, "axis.onnx");
      expect_error(
          Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); }, "axis 2 places B's 1 dims outside A's 2");
    }
    {
      OnnxBuilder b(3);
      b.input("x", {2, 2});
      b.input("tiles", {}, ::onnx::TensorProto::INT64);
      b.init("axis", Tensor::scalar<int64_t>(0));
      b.node("Tile", {"x", "tiles", "axis"}, "y", "tile");
      b.output("y", {-1, 2});
      const std::string path = b.save(dir.path, "tile_input.onnx");
      expect_error(
          Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); },
          "input 1 (tiles) ('tiles') must be a constant");
    }
    {
      OnnxBuilder b(1);
      b.input("x", {2});
      string_attr(b.node("Cast", {"x"}, "y", "cast"), "to", "QUATERNION");
      b.output("y", {2});
      const std::string path = b.save(dir.path, "cast.onnx");
      expect_error(
          Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); },
          "to = 'QUATERNION' names no ONNX data type");
    }
  }
}

TEST_CASE("ONNX import: corrupt files, bad tensors and external data outside the folder are refused") {
  TempDir dir("onnx_corrupt");
  OnnxBuilder b;
  b.input("x", {2});
  b.init("w", make({2}, {1, 2}));
  b.node("Add", {"x", "w"}, "y");
  b.output("y", {2});
  const std::string good = b.save(dir.path, "good.onnx");
  CHECK_NOTHROW(onnx_interop::import_onnx(good));
  // Truncated.
  std::string bytes = read_file_bytes(good);
  {
    std::ofstream(dir.path / "cut.onnx", std::ios::binary) << bytes.substr(0, bytes.size() - 7);
    expect_error(
        Code::kCorruption, [&] { onnx_interop::import_onnx((dir.path / "cut.onnx").string()); }, "cut.onnx");
  }
  // Not ONNX at all.
  std::ofstream(dir.path / "text.onnx") << "hello, world";
  expect_error(
      Code::kCorruption, [&] { onnx_interop::import_onnx((dir.path / "text.onnx").string()); }, "not");
  // An initializer whose bytes do not match its shape.
  {
    OnnxBuilder bad = b;
    bad.g = bad.model.mutable_graph();
    bad.g->mutable_initializer(0)->set_raw_data(std::string(12, '\0'));
    const std::string path = bad.save(dir.path, "size.onnx");
    expect_error(
        Code::kCorruption, [&] { onnx_interop::import_onnx(path); }, "initializer 'w'");
  }
  // One that declares four terabytes in a few bytes: refused before anything is allocated (the
  // fuzzer's find: the tensor was allocated first, which the sanitizers report as too large).
  {
    OnnxBuilder bad = b;
    bad.g = bad.model.mutable_graph();
    ::onnx::TensorProto* w = bad.g->mutable_initializer(0);
    w->clear_dims();
    w->add_dims(int64_t{1} << 40);
    w->set_raw_data(std::string(8, '\0'));
    const std::string path = bad.save(dir.path, "huge.onnx");
    expect_error(
        Code::kCorruption, [&] { onnx_interop::import_onnx(path); }, "needs 4398046511104 bytes, raw_data holds 8");
  }
  // Sizes are checked before ONNX's shape inference reads any tensor: it
  // copied a Resize's 14 bytes of scales into room for three floats (the
  // fuzzer's find), and they are checked for types hub refuses as well.
  {
    OnnxBuilder bad;
    bad.input("x", {1, 1, 2, 2});
    bad.init("scales", make({4}, {1, 1, 2, 2}))->set_raw_data(std::string(14, '\0'));
    bad.node("Resize", {"x", "", "scales"}, "y", "resize");
    bad.output("y", {1, 1, 4, 4});
    const std::string path = bad.save(dir.path, "scales.onnx");
    expect_error(
        Code::kCorruption, [&] { onnx_interop::import_onnx(path); },
        "initializer 'scales': FLOAT[4] needs 16 bytes, raw_data holds 14");
    auto* c = bad.node("Constant", {}, "k", "const");
    auto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(::onnx::TensorProto::INT16);
    a->mutable_t()->add_dims(3);
    a->mutable_t()->add_int32_data(7);
    bad.g->mutable_initializer(0)->set_raw_data(std::string(16, '\0'));
    const std::string const_path = bad.save(dir.path, "const.onnx");
    expect_error(
        Code::kCorruption, [&] { onnx_interop::import_onnx(const_path); },
        "node 1 'const' (Constant) attribute value: INT16[3] needs 6 bytes, int32_data holds 2");
  }
  // External data: inside the folder it loads; absolute, '..' or a symlink
  // out of the folder is refused.
  auto external = [&](const std::string& location, const std::string& file) {
    OnnxBuilder e = b;
    e.g = e.model.mutable_graph();
    auto* t = e.g->mutable_initializer(0);
    t->clear_raw_data();
    t->set_data_location(::onnx::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    return e.save(dir.path, file);
  };
  {
    float w[2] = {1, 2};
    std::ofstream(dir.path / "w.bin", std::ios::binary).write(reinterpret_cast<const char*>(w), sizeof w);
    ModuleSpec spec = onnx_interop::import_onnx(external("w.bin", "ext.onnx"));
    CHECK(spec.weights().empty());  // an Add operand: a constant
  }
  expect_error(
      Code::kPermissionDenied, [&] { onnx_interop::import_onnx(external("/etc/passwd", "abs.onnx")); }, "absolute");
  expect_error(
      Code::kPermissionDenied, [&] { onnx_interop::import_onnx(external("../w.bin", "up.onnx")); },
      "leaves the model's folder");
  fs::create_directories(dir.path / "outside");
  std::ofstream(dir.path / "outside" / "secret.bin") << "12345678";
  fs::create_directories(dir.path / "model");
  fs::create_symlink(dir.path / "outside" / "secret.bin", dir.path / "model" / "link.bin");
  {
    OnnxBuilder e = b;
    e.g = e.model.mutable_graph();
    auto* t = e.g->mutable_initializer(0);
    t->clear_raw_data();
    t->set_data_location(::onnx::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value("link.bin");
    const std::string path = e.save(dir.path / "model", "sym.onnx");
    expect_error(
        Code::kPermissionDenied, [&] { onnx_interop::import_onnx(path); }, "outside the model's folder");
  }
}

TEST_CASE("ONNX import: float16, bfloat16 and double tensors are read as float32") {
  using ::onnx::TensorProto;
  // Half-precision bits and their values: 1, -2, the largest half (65504), the
  // smallest subnormal (2^-24), infinity, 1/3 rounded (0x3555 = 1365/4096).
  const std::vector<uint16_t> half_bits{0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00, 0x3555};
  const std::vector<float> half_values{
      1, -2, 65504, std::ldexp(1.0f, -24), std::numeric_limits<float>::infinity(), 1365.0f / 4096};
  // bfloat16 keeps float32's top 16 bits: 1.5 is 0x3FC0, -0.03125 0xBD00, 3 * 2^100 0x7240.
  const std::vector<uint16_t> bf16_bits{0x3FC0, 0xBD00, 0x7240};
  const std::vector<float> bf16_values{1.5f, -0.03125f, std::ldexp(3.0f, 100)};
  auto check = [](const TensorProto& t, const std::vector<float>& want) {
    const Tensor got = onnx_interop::tensor_from_onnx(t, "t");
    REQUIRE(got.dtype() == DType::kFloat32);
    REQUIRE(got.num_elements() == static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i) CHECK(got.data<float>()[i] == want[i]);
  };
  for (bool raw : {true, false}) {
    CAPTURE(raw);
    for (int type : {TensorProto::FLOAT16, TensorProto::BFLOAT16}) {
      const std::vector<uint16_t>& bits = type == TensorProto::FLOAT16 ? half_bits : bf16_bits;
      TensorProto t;
      t.set_data_type(type);
      t.add_dims(static_cast<int64_t>(bits.size()));
      if (raw)
        t.set_raw_data(std::string(reinterpret_cast<const char*>(bits.data()), 2 * bits.size()));
      else
        for (uint16_t b : bits) t.add_int32_data(b);
      check(t, type == TensorProto::FLOAT16 ? half_values : bf16_values);
    }
    // Doubles narrow to the nearest float; beyond float's range, to infinity.
    const std::vector<double> doubles{0.1, -1e300, 1e-50, 2.5};
    TensorProto t;
    t.set_data_type(TensorProto::DOUBLE);
    t.add_dims(4);
    if (raw)
      t.set_raw_data(std::string(reinterpret_cast<const char*>(doubles.data()), 8 * doubles.size()));
    else
      for (double d : doubles) t.add_double_data(d);
    check(t, {0.1f, -std::numeric_limits<float>::infinity(), 0.0f, 2.5f});
  }
  // Sizes are counted in the stored type: 3 halves are 6 bytes, not 12.
  TensorProto short_half;
  short_half.set_data_type(TensorProto::FLOAT16);
  short_half.add_dims(3);
  short_half.set_raw_data(std::string(12, '\0'));
  expect_error(
      Code::kCorruption, [&] { onnx_interop::tensor_from_onnx(short_half, "t"); },
      "t: FLOAT16[3] needs 6 bytes, raw_data holds 12");
  TensorProto short_double;
  short_double.set_data_type(TensorProto::DOUBLE);
  short_double.add_dims(2);
  short_double.add_double_data(1.0);
  expect_error(
      Code::kCorruption, [&] { onnx_interop::tensor_from_onnx(short_double, "t"); },
      "t: DOUBLE[2] needs 16 bytes, double_data holds 8");
  // A double graph input is a float32 signature input.
  TempDir dir("onnx_wide_types");
  OnnxBuilder b(17);
  b.input("x", {2}, TensorProto::DOUBLE);
  b.node("Cast", {"x"}, "y", "cast");
  int_attr(b.g->mutable_node(0), "to", TensorProto::FLOAT);
  b.output("y", {2});
  const ModuleSpec spec = onnx_interop::import_onnx(b.save(dir.path));
  CHECK(spec.signature("default").inputs.at("x").dtype == DType::kFloat32);
  expect_close(run_signature(spec, "default", {{"x", make({2}, {0.5f, -3})}}, "reference").at("y"),
               make({2}, {0.5f, -3}));
}

TEST_CASE("issue13: ONNX graphs with broken wiring are refused before ONNX's converter sees them") {
  // A graph output no node produces made ONNX's version converter dereference
  // null (found by tests/fuzz/onnx_model.cc); the checker lets it through.
  TempDir dir("onnx_wiring");
  auto model = [&](const std::string& file, auto edit) {
    OnnxBuilder b(13);  // not the target opset: the converter runs
    b.input("x", {2});
    b.node("Relu", {"x"}, "y", "relu");
    b.node("Neg", {"y"}, "z", "neg");
    b.output("z", {2});
    edit(b);
    return b.save(dir.path, file);
  };
  CHECK_NOTHROW(onnx_interop::import_onnx(model("good.onnx", [](OnnxBuilder&) {})));
  expect_error(
      Code::kInvalidArgument,
      [&] {
        onnx_interop::import_onnx(
            model("out.onnx", [](OnnxBuilder& b) { b.g->mutable_output(0)->set_name("M\x9cz"); }));
      },
      "graph output 'M\\x9cz' is produced by no node");
  // A map-typed graph input crashed the converter (the fuzzer's find).
  expect_error(
      Code::kInvalidArgument,
      [&] {
        onnx_interop::import_onnx(model("map.onnx", [](OnnxBuilder& b) {
          auto* map = b.g->mutable_input(0)->mutable_type()->mutable_map_type();
          map->set_key_type(::onnx::TensorProto::INT64);
          map->mutable_value_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
        }));
      },
      "graph input 'x' is not a tensor");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        onnx_interop::import_onnx(model("in.onnx", [](OnnxBuilder& b) { b.g->mutable_node(1)->set_input(0, "w"); }));
      },
      "node 1 'neg' (Neg): input 'w' is defined by no earlier node");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        onnx_interop::import_onnx(model("order.onnx", [](OnnxBuilder& b) { b.g->mutable_node()->SwapElements(0, 1); }));
      },
      "node 0 'neg' (Neg): input 'y' is defined by no earlier node");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        onnx_interop::import_onnx(
            model("twice.onnx", [](OnnxBuilder& b) { b.g->mutable_node(1)->set_output(0, "y"); }));
      },
      "output 'y' is already defined");
  expect_error(
      Code::kUnimplemented,
      [&] {
        onnx_interop::import_onnx(model("if.onnx", [](OnnxBuilder& b) {
          auto* a = b.g->mutable_node(1)->add_attribute();
          a->set_name("then_branch");
          a->set_type(::onnx::AttributeProto::GRAPH);
          a->mutable_g()->set_name("branch");
        }));
      },
      "node 1 'neg' (Neg) has a subgraph (attribute then_branch); hub imports the subgraphs of If, Loop and Scan only");
}

TEST_CASE("issue13: an ONNX node input whose type shape inference cannot infer is refused, not a crash") {
  // Found by tests/fuzz/onnx_model.cc: a Conv on a rank-2 input has no
  // inferable output, and ONNX's data propagation for the Shape after it
  // dereferenced that missing type (libonnx 1.12): the process died.
  TempDir dir("onnx_untyped");
  for (int opset : {13, 17}) {  // converted to 17 first, or as written
    CAPTURE(opset);
    OnnxBuilder b(opset);
    b.input("x", {16, 16});
    b.init("w", random_tensor({4, 3, 3, 3}, 1));
    b.node("Conv", {"x", "w"}, "c", "conv");
    b.node("Shape", {"c"}, "s", "shape");
    b.output("s", {-1});
    b.g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
    const std::string path = b.save(dir.path);
    expect_error(
        Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); },
        "node 1 'shape' (Shape): ONNX shape inference found no type for its input 'c', output of node 0 'conv' "
        "(Conv), whose inference failed on its inputs");
  }
  // Its convolution inference also read past its vectors where the weights'
  // rank differs from the input's and kernel_shape is absent.
  OnnxBuilder b;
  b.input("x", {1, 3, 8});
  b.init("w", random_tensor({4, 3, 3, 3}, 2));
  b.node("Conv", {"x", "w"}, "y", "conv");
  b.output("y", {1, 4, -1});
  const std::string rank_path = b.save(dir.path, "rank.onnx");
  expect_error(
      Code::kInvalidArgument, [&] { onnx_interop::import_onnx(rank_path); },
      "weights [4,3,3,3] do not match input [1,3,8] in rank");
  b.g->mutable_initializer(0)->clear_dims();
  b.g->mutable_initializer(0)->add_dims(4);
  b.g->mutable_initializer(0)->add_dims(27);
  const std::string flat_path = b.save(dir.path, "flat.onnx");
  expect_error(
      Code::kInvalidArgument, [&] { onnx_interop::import_onnx(flat_path); },
      "node 0 'conv' (Conv): weights 'w' have rank 2; a convolution's weights have rank 3 or more");
  // With kernel_shape given, such weights crashed it too (the fuzzer's find, on a ConvTranspose),
  // and a kernel_shape whose length is not the weights' rank - 2 is refused as well.
  ints_attr(b.g->mutable_node(0), "kernel_shape", {3, 3});
  const std::string given_path = b.save(dir.path, "given.onnx");
  expect_error(
      Code::kInvalidArgument, [&] { onnx_interop::import_onnx(given_path); },
      "weights 'w' have rank 2; a convolution's weights have rank 3 or more");
  b.g->mutable_initializer(0)->clear_dims();
  for (int64_t d : {4, 3, 3, 3}) b.g->mutable_initializer(0)->add_dims(d);
  b.g->mutable_node(0)->mutable_attribute(0)->add_ints(3);
  const std::string long_path = b.save(dir.path, "long.onnx");
  expect_error(
      Code::kInvalidArgument, [&] { onnx_interop::import_onnx(long_path); },
      "weights 'w' have rank 4 but kernel_shape 3 entries");
}

TEST_CASE("issue13: convolution weights that other nodes compute get their kernel_shape before ONNX's inference") {
  // Weights computed in the graph (a Reshape here; PyTorch's weight
  // normalisation writes a Div and Mul): inference learns their dims only as
  // it goes, and crashed where their rank differed from the input's (found by
  // tests/fuzz/onnx_model.cc, with declared weights on a ConvTranspose).
  TempDir dir("onnx_computed_weights");
  const Tensor w = random_tensor({4, 3, 3, 3}, 3), x = random_tensor({1, 3, 6, 6}, 4);
  auto build = [&](int opset, const std::vector<int64_t>& x_dims, const std::vector<int64_t>& w_dims) {
    OnnxBuilder b(opset);
    b.input("x", x_dims);
    b.init("flat_w", w.reshaped({w.num_elements()}));
    b.init("w_shape", Tensor::from_vector<int64_t>({static_cast<int64_t>(w_dims.size())}, w_dims));
    b.node("Reshape", {"flat_w", "w_shape"}, "w", "reshape");
    b.node("Conv", {"x", "w"}, "y", "conv");
    b.output("y", std::vector<int64_t>(x_dims.size(), -1));
    return b;
  };
  for (int opset : {13, 17}) {
    CAPTURE(opset);
    // Ranks that agree: the same numbers as the weights given as an initializer.
    OnnxBuilder direct(opset);
    direct.input("x", {1, 3, 6, 6});
    direct.init("w", w);
    direct.node("Conv", {"x", "w"}, "y", "conv");
    direct.output("y", {-1, -1, -1, -1});
    const Tensor want = run_signature(onnx_interop::import_onnx(direct.save(dir.path, "direct.onnx")), "default",
                                      {{"x", x}}, "reference")
                            .at("y");
    const std::string good = build(opset, {1, 3, 6, 6}, {4, 3, 3, 3}).save(dir.path, "good.onnx");
    expect_close(run_signature(onnx_interop::import_onnx(good), "default", {{"x", x}}, "reference").at("y"), want);
    // A rank-3 input under rank-4 weights: refused by name, not a crash.
    const std::string rank = build(opset, {1, 3, 6}, {4, 3, 3, 3}).save(dir.path, "rank.onnx");
    expect_error(
        Code::kInvalidArgument, [&] { onnx_interop::import_onnx(rank); },
        "node 'conv' (Conv): weights [4,3,3,3] do not match input [1,3,6] in rank");
    // Weights computed to rank 2.
    const std::string flat = build(opset, {1, 3, 6, 6}, {4, 27}).save(dir.path, "flat.onnx");
    expect_error(
        Code::kInvalidArgument, [&] { onnx_interop::import_onnx(flat); },
        "node 1 'conv' (Conv): weights 'w' have rank 2; a convolution's weights have rank 3 or more");
  }
  // Weights computed from another convolution's output: learnt in a second
  // round of that first inference, after the first convolution is checked.
  // ONNX Runtime computes the same.
  OnnxBuilder chained = build(17, {1, 3, 6, 6}, {4, 3, 3, 3});  // y: [1, 4, 4, 4]
  chained.init("shape2", Tensor::from_vector<int64_t>({4}, {4, 4, 2, 2}));
  chained.node("Reshape", {"y", "shape2"}, "w2", "reshape2");
  chained.node("Conv", {"y", "w2"}, "z", "conv2");
  chained.g->mutable_output()->Clear();
  chained.output("z", {1, 4, 3, 3});
  const std::string chained_path = chained.save(dir.path, "chained.onnx");
  const Tensor z = run_signature(onnx_interop::import_onnx(chained_path), "default", {{"x", x}}, "reference").at("z");
  CHECK(z.shape() == Shape{1, 4, 3, 3});
  if (onnx_references_available())
    expect_close(z, run_onnx_runtime(chained_path, {{"x", x}}, dir.path / "chained").at(0), 1e-5, 1e-4);
  // Declared weights (a graph input) of rank 4 under a rank-2 input, on a
  // ConvTranspose at opset 11: the fuzzer's find.
  OnnxBuilder declared(11);
  declared.input("X", {3, 3});
  declared.input("W", {1, 2, 3, 3});
  declared.node("ConvTranspose", {"X", "W"}, "Y", "");
  declared.output("Y", {1, 2, 5, 5});
  const std::string declared_path = declared.save(dir.path, "declared.onnx");
  expect_error(
      Code::kInvalidArgument, [&] { onnx_interop::import_onnx(declared_path); },
      "(ConvTranspose): only 1-D and 2-D transposed convolutions are supported, input is [3,3]");
}

TEST_CASE("issue13: ONNX constants that would overflow an integer conversion are refused") {
  // Found by tests/fuzz/onnx_model.cc: a Resize scale of 1e38 reached a
  // float-to-int64 conversion (undefined behaviour).
  TempDir dir("onnx_overflow");
  for (float scale : {1e38f, std::numeric_limits<float>::infinity(), -2.0f, 0.0f}) {
    CAPTURE(scale);
    OnnxBuilder b;
    b.input("x", {1, 1, 4, 4});
    b.init("scales", make({4}, {1, 1, scale, 2}));
    b.node("Resize", {"x", "", "scales"}, "y", "resize");
    b.output("y", {1, 1, -1, 8});
    const std::string path = b.save(dir.path, "resize.onnx");
    expect_error(
        Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); },
        "scales must give output sizes from 1 to 2^31");
  }
  for (float limit : {1e30f, std::numeric_limits<float>::infinity()}) {
    CAPTURE(limit);
    OnnxBuilder b;
    b.input("x", {2});
    b.init("start", make({}, {0}));
    b.init("limit", make({}, {limit}));
    b.init("delta", make({}, {1}));
    b.node("Range", {"start", "limit", "delta"}, "r", "range");
    b.node("Add", {"x", "r"}, "y", "add");
    b.output("y", {2});
    const std::string path = b.save(dir.path, "range.onnx");
    expect_error(
        Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); }, "more than 2^24 elements");
  }
}

TEST_CASE("ONNX import: a run-time reshape target whose known elements overflow int64 is refused, not computed") {
  // The fuzzer's find: Reshape(x, Concat(Shape(x)[0], huge)) multiplied the known elements in int64.
  TempDir dir("onnx_symbolic_overflow");
  OnnxBuilder b;
  b.input("x", {-1, 4});
  b.init("i0", Tensor::from_vector<int64_t>({1}, {0}));
  b.init("huge", Tensor::from_vector<int64_t>({2}, {int64_t{1} << 62, 8}));
  b.node("Shape", {"x"}, "shape");
  b.node("Gather", {"shape", "i0"}, "batch");
  auto* concat = b.node("Concat", {"batch", "huge"}, "target");
  int_attr(concat, "axis", 0);
  b.node("Reshape", {"x", "target"}, "y", "reshape");
  b.output("y", {-1, -1, -1});
  const std::string path = b.save(dir.path, "overflow.onnx");
  expect_error(
      Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); }, "overflow");
}

TEST_CASE("ONNX import: a dimension above 2^31 - 1 is kept at opset 17 and refused where the converter would cut it") {
  // ONNX's version converter carried 2^32 + 5 through 32 bits and gave 5: the
  // module declared [1,5] where the model said [1,4294967301].
  TempDir dir("onnx_big_dim");
  const int64_t big = (int64_t{1} << 32) + 5;
  for (int opset : {13, 17}) {
    CAPTURE(opset);
    OnnxBuilder b(opset);
    b.input("x", {1, big});
    b.node("Relu", {"x"}, "y", "relu");
    b.output("y", {1, big});
    const std::string path = b.save(dir.path, "big" + std::to_string(opset) + ".onnx");
    if (opset == 17) {
      const ModuleSpec spec = onnx_interop::import_onnx(path);
      CHECK(spec.signature("default").inputs.at("x").shape == Shape{1, big});
    } else {
      expect_error(
          Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); },
          "value 'x' has dimension 4294967301, above 2^31 - 1, which ONNX's version converter cannot carry from opset "
          "13 to 17");
    }
  }
}

TEST_CASE("issue13: a LayerNormalization axis outside its input's rank is refused before ONNX's inference") {
  // libonnx indexed Mean's dims from the axis unchecked: a rank-0 input with
  // the default axis -1 crashed it (found by tests/fuzz/onnx_model.cc).
  TempDir dir("onnx_layer_norm_axis");
  auto build = [&](const std::vector<int64_t>& x_dims, int64_t axis, bool mean_read) {
    OnnxBuilder b(17);
    b.input("x", x_dims);
    b.init("scale", make({1}, {1}));
    auto* n = b.node("LayerNormalization", {"x", "scale"}, "y", "ln");
    n->add_output("mean");
    int_attr(n, "axis", axis);
    b.output("y", x_dims);
    if (mean_read) b.output("mean", std::vector<int64_t>(x_dims.size(), 1));
    return b.save(dir.path, "ln.onnx");
  };
  expect_error(
      Code::kInvalidArgument, [&] { onnx_interop::import_onnx(build({}, -1, true)); },
      "node 0 'ln' (LayerNormalization): axis -1 is outside the dims of its input, of rank 0");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        onnx_interop::import_onnx(build({2, 3}, -3, true));
      },
      "axis -3 is outside the dims of its input, of rank 2");
  // Computed from a graph input (a Reshape to rank 0): learnt by the first inference.
  {
    OnnxBuilder b(17);
    b.input("x", {1});
    b.init("to_scalar", Tensor::from_vector<int64_t>({0}, {}));
    b.node("Reshape", {"x", "to_scalar"}, "s", "reshape");
    b.init("scale", make({1}, {1}));
    auto* n = b.node("LayerNormalization", {"s", "scale"}, "y", "ln");
    n->add_output("mean");
    b.output("y", {});
    b.output("mean", {});
    const std::string path = b.save(dir.path, "computed.onnx");
    expect_error(
        Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); },
        "node 1 'ln' (LayerNormalization): axis -1 is outside the dims of its input, of rank 0");
  }
  // A Mean nothing reads is dropped, and the model imports.
  const ModuleSpec spec = onnx_interop::import_onnx(build({2, 3}, -1, false));
  expect_close(run_signature(spec, "default", {{"x", make({2, 3}, {1, 2, 3, 0, 0, 6})}}, "reference").at("y"),
               make({2, 3}, {-1.2247357f, 0, 1.2247357f, -0.70710677f, -0.70710677f, 1.4142135f}), 1e-5, 1e-4);
}

TEST_CASE("ONNX import: Slice with a negative step over an empty axis gives an empty tensor") {
  TempDir dir("onnx_empty_slice");
  OnnxBuilder b;
  b.input("x", {2, 0});
  b.init("starts", Tensor::from_vector<int64_t>({1}, {-1}));
  b.init("ends", Tensor::from_vector<int64_t>({1}, {std::numeric_limits<int64_t>::min()}));
  b.init("axes", Tensor::from_vector<int64_t>({1}, {1}));
  b.init("steps", Tensor::from_vector<int64_t>({1}, {-1}));
  b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, "y");
  b.output("y", {2, 0});
  ModuleSpec spec = onnx_interop::import_onnx(b.save(dir.path));
  Tensor y = run_signature(spec, "default", {{"x", Tensor::zeros(DType::kFloat32, {2, 0})}}, "reference").at("y");
  CHECK(y.shape() == Shape{2, 0});
}

TEST_CASE("ONNX export: the opset is the lowest that has every op, and an --opset that lacks one is refused") {
  TempDir dir("onnx_export_opset");
  OnnxBuilder relu(13), hard_swish(14);
  for (OnnxBuilder* b : {&relu, &hard_swish}) {
    b->input("x", {1, 4});
    b->output("y", {1, 4});
  }
  relu.node("Relu", {"x"}, "y");
  hard_swish.node("HardSwish", {"x"}, "y", "hs");
  const ModuleSpec plain = onnx_interop::import_onnx(relu.save(dir.path, "relu.onnx"));
  const ModuleSpec newer = onnx_interop::import_onnx(hard_swish.save(dir.path, "hard_swish.onnx"));
  auto written = [&](const ModuleSpec& spec, int asked, const std::string& file) {
    onnx_interop::OnnxExportOptions o;
    o.opset = asked;
    const int opset = onnx_interop::export_onnx(spec, (dir.path / file).string(), o);
    ::onnx::ModelProto m;
    REQUIRE(m.ParseFromString(read_file_bytes((dir.path / file).string())));
    CHECK(m.opset_import(0).version() == opset);
    return opset;
  };
  CHECK(written(plain, 0, "a.onnx") == 13);
  CHECK(written(newer, 0, "b.onnx") == 14);
  CHECK(written(newer, 17, "c.onnx") == 17);
  onnx_interop::OnnxExportOptions o13;
  o13.opset = 13;
  expect_error(
      Code::kInvalidArgument, [&] { onnx_interop::export_onnx(newer, (dir.path / "d.onnx").string(), o13); },
      "--opset 13 lacks HardSwish");
  CHECK(!fs::exists(dir.path / "d.onnx"));
}

TEST_CASE("ONNX export: an infinite Clip bound is written as an absent input; outputs keep their names") {
  TempDir dir("onnx_clip_inf");
  OnnxBuilder b;
  b.input("x", {1, 4});
  b.init("lo", Tensor::scalar<float>(-std::numeric_limits<float>::infinity()));
  b.init("hi", Tensor::scalar<float>(0.5f));
  b.node("Clip", {"x", "lo", "hi"}, "y");
  b.output("y", {1, 4});
  ModuleSpec spec = onnx_interop::import_onnx(b.save(dir.path));
  const std::string out = (dir.path / "out.onnx").string();
  onnx_interop::export_onnx(spec, out);
  ::onnx::ModelProto m;
  std::ifstream in(out, std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  int clips = 0;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "Clip") continue;
    ++clips;
    REQUIRE(n.input_size() == 3);
    CHECK(n.input(1).empty());
    CHECK(!n.input(2).empty());
  }
  CHECK(clips == 1);
  // The imported graph has a node named like the output ("y"); the output keeps the name.
  REQUIRE(m.graph().output_size() == 1);
  CHECK(m.graph().output(0).name() == "y");
  for (const auto& t : m.graph().initializer()) {
    const Tensor v = onnx_interop::tensor_from_onnx(t, out);
    if (v.dtype() != DType::kFloat32) continue;
    for (int64_t i = 0; i < v.num_elements(); ++i) CHECK(std::isfinite(v.data<float>()[i]));
  }
  Tensor x = make({1, 4}, {-3, 0.25f, 0.75f, 9});
  Tensor y = run_signature(onnx_interop::import_onnx(out), "default", {{"x", x}}, "reference").at("y");
  CHECK(y.data<float>()[0] == -3);
  CHECK(y.data<float>()[1] == 0.25f);
  CHECK(y.data<float>()[2] == 0.5f);
  CHECK(y.data<float>()[3] == 0.5f);
}

TEST_CASE("docs/import.md lists exactly the ONNX operators the importer maps or rewrites") {
  const std::string doc = read_file_bytes(std::string(HUB_SOURCE_DIR) + "/docs/import.md");
  size_t start = doc.find("### Operators");
  REQUIRE(start != std::string::npos);
  size_t end = doc.find("###", start + 3);
  std::set<std::string> documented;
  std::istringstream lines(doc.substr(start, end - start));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| ", 0) != 0 || line.rfind("| ONNX op", 0) == 0) continue;
    std::string cell = line.substr(2, line.find(" |", 2) - 2);
    if (auto paren = cell.find(" ("); paren != std::string::npos) cell = cell.substr(0, paren);
    std::istringstream ops(cell);
    for (std::string op; std::getline(ops, op, ',');) {
      op.erase(0, op.find_first_not_of(' '));
      documented.insert(op);
    }
  }
  std::set<std::string> mapped = onnx_interop::rewritten_operators();
  for (const auto& [op, mapper] : onnx_interop::op_mappers()) mapped.insert(op);
  CHECK(documented == mapped);
  for (const std::string& op : mapped)
    if (!documented.count(op)) MESSAGE("not documented: " << op);
  for (const std::string& op : documented)
    if (!mapped.count(op)) MESSAGE("documented but not mapped: " << op);
}

TEST_CASE(
    "ONNX import and export of layer norm, Erf, rounding, trigonometry, logic, Where, ArgMin, CumSum, Mod, "
    "GatherND, the scatters, OneHot, Celu, IsNaN and MeanVarianceNormalization agree with ONNX Runtime") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_math_ort");
  OnnxBuilder b(17);
  b.input("x", {1, 8, 2, 4});
  b.init("scale", random_tensor({4}, 21, 0.5f, 1.5f));
  b.init("bias", random_tensor({4}, 22));
  b.init("half", Tensor::scalar<float>(0.5f));
  b.init("three", Tensor::scalar<float>(3.0f));
  b.init("zero", Tensor::scalar<float>(0.0f));
  // Each node named after its output (ONNX Runtime wants distinct names).
  auto node = [&](const std::string& op, const std::vector<std::string>& in, const std::string& out) {
    return b.node(op, in, out, "/" + out);
  };
  int_attr(node("LayerNormalization", {"x", "scale", "bias"}, "ln"), "axis", -1);
  node("Erf", {"ln"}, "o1_erf");
  node("Mul", {"x", "half"}, "xh");
  node("Sin", {"x"}, "sin");
  node("Cos", {"x"}, "cos");
  node("Tan", {"xh"}, "tan");
  node("Add", {"sin", "cos"}, "sc");
  node("Add", {"sc", "tan"}, "o2_trig");
  node("Tanh", {"x"}, "unit");  // in (-1, 1): the inverse functions' domain
  node("Asin", {"unit"}, "asin");
  node("Acos", {"unit"}, "acos");
  node("Atanh", {"unit"}, "atanh");
  node("Atan", {"x"}, "atan");
  node("Sum", {"asin", "acos", "atanh", "atan"}, "o3_inverse");
  node("Sinh", {"xh"}, "sinh");
  node("Cosh", {"xh"}, "cosh");  // >= 1: Acosh's domain
  node("Acosh", {"cosh"}, "acosh");
  node("Asinh", {"x"}, "asinh");
  node("Sum", {"sinh", "acosh", "asinh"}, "o4_hyperbolic");
  node("Mul", {"x", "three"}, "x3");
  node("Floor", {"x3"}, "floor");
  node("Ceil", {"x3"}, "ceil");
  node("Round", {"x3"}, "round");
  node("Sum", {"floor", "ceil", "round"}, "o5_rounding");
  node("Greater", {"x", "zero"}, "positive");
  node("Less", {"x", "half"}, "below_half");
  node("And", {"positive", "below_half"}, "between");
  node("Not", {"between"}, "outside");
  node("Greater", {"ln", "zero"}, "ln_positive");
  node("Xor", {"outside", "ln_positive"}, "either");
  node("Or", {"either", "positive"}, "chosen");
  node("Where", {"chosen", "o1_erf", "x"}, "o6_where");
  int_attr(node("ArgMin", {"x"}, "argmin"), "axis", 1);
  int_attr(node("Cast", {"argmin"}, "o7_argmin"), "to", ::onnx::TensorProto::FLOAT);
  b.init("k2", Tensor::from_vector<int64_t>({1}, {2}));
  auto* top = node("TopK", {"x", "k2"}, "top_values");
  top->add_output("top_indices");
  int_attr(top, "axis", 1);
  int_attr(top, "largest", 0);
  int_attr(node("Cast", {"top_indices"}, "o9_top_indices"), "to", ::onnx::TensorProto::FLOAT);
  node("Identity", {"top_values"}, "o8_top_values");
  int_attr(node("Hardmax", {"x"}, "o10_hardmax"), "axis", 1);
  int_attr(node("Trilu", {"x"}, "o11_lower"), "upper", 0);
  node("Shrink", {"x"}, "shrunk");
  node("ThresholdedRelu", {"shrunk"}, "o12_shrink_threshold");
  std::vector<int64_t> picks;
  for (int i = 0; i < 24; ++i) picks.push_back((i * 5) % 16 - 8);  // in [-8, 8): negative ones count from the end
  b.init("picks", Tensor::from_vector<int64_t>({1, 3, 2, 4}, picks));
  int_attr(node("GatherElements", {"x", "picks"}, "o13_gathered"), "axis", 1);
  b.init("s8", random_tensor({8}, 24, 0.5f, 1.5f));
  b.init("b8", random_tensor({8}, 25));
  node("InstanceNormalization", {"x", "s8", "b8"}, "o14_instance_norm");
  node("Sum",
       {node("Selu", {"x"}, "selu")->output(0), node("Softplus", {"x"}, "softplus")->output(0),
        node("Softsign", {"x"}, "softsign")->output(0)},
       "o15_selu_softplus_softsign");
  // A sequence [1, 8, 8]: 1-D convolution, rank-3 batch norm, 1-D pooling.
  b.init("seq_shape", Tensor::from_vector<int64_t>({3}, {1, 8, 8}));
  node("Reshape", {"x", "seq_shape"}, "seq");
  b.init("w1d", random_tensor({4, 8, 3}, 26, -0.3f, 0.3f));
  b.init("b1d", random_tensor({4}, 27));
  ints_attr(node("Conv", {"seq", "w1d", "b1d"}, "conv1d"), "pads", {1, 1});
  b.init("bn_scale", random_tensor({4}, 28, 0.5f, 1.5f));
  b.init("bn_bias", random_tensor({4}, 29));
  b.init("bn_mean", random_tensor({4}, 30));
  b.init("bn_var", random_tensor({4}, 31, 0.5f, 2.0f));
  node("BatchNormalization", {"conv1d", "bn_scale", "bn_bias", "bn_mean", "bn_var"}, "bn1d");
  auto* pool = node("MaxPool", {"bn1d"}, "pool1d");
  ints_attr(pool, "kernel_shape", {2});
  ints_attr(pool, "strides", {2});
  ints_attr(node("AveragePool", {"pool1d"}, "o16_sequence"), "kernel_shape", {2});
  b.init("axis1", Tensor::scalar<int64_t>(1));
  auto* cum = node("CumSum", {"x", "axis1"}, "o17_cumsum");
  int_attr(cum, "exclusive", 1);
  int_attr(cum, "reverse", 1);
  b.init("seven_tenths", Tensor::scalar<float>(0.7f));
  int_attr(node("Mod", {"x3", "seven_tenths"}, "o18_fmod"), "fmod", 1);
  b.init("nd_index", Tensor::from_vector<int64_t>({2, 2}, {0, 3, 0, -1}));
  node("GatherND", {"x", "nd_index"}, "o19_gather_nd");
  b.init("nd_rows", Tensor::from_vector<int64_t>({2, 2}, {0, 2, 0, 5}));
  b.init("nd_updates", random_tensor({2, 2, 4}, 32));
  node("ScatterND", {"x", "nd_rows", "nd_updates"}, "o20_scatter_nd");
  b.init("element_updates", random_tensor({1, 3, 2, 4}, 33));
  auto* scatter = node("ScatterElements", {"x", "picks", "element_updates"}, "o21_scatter_elements");
  int_attr(scatter, "axis", 1);
  auto* reduction = scatter->add_attribute();
  reduction->set_name("reduction");
  reduction->set_type(::onnx::AttributeProto::STRING);
  reduction->set_s("add");  // the picks repeat rows
  b.init("depth", Tensor::scalar<int64_t>(8));
  b.init("on_off", make({2}, {-1, 2}));
  int_attr(node("OneHot", {"argmin", "depth", "on_off"}, "o22_one_hot"), "axis", 1);
  auto* celu = node("Celu", {"x"}, "celu");
  auto* alpha = celu->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(::onnx::AttributeProto::FLOAT);
  alpha->set_f(0.6f);
  node("Log", {"x"}, "log_x");  // NaN where x < 0
  int_attr(node("Cast", {node("IsNaN", {"log_x"}, "is_nan")->output(0)}, "nan_as_float"), "to",
           ::onnx::TensorProto::FLOAT);
  node("Add", {"celu", "nan_as_float"}, "o23_celu_isnan");
  ints_attr(node("MeanVarianceNormalization", {"x"}, "o24_mvn"), "axes", {0, 2, 3});
  const std::vector<std::pair<std::string, std::vector<int64_t>>> outputs = {
      {"o1_erf", {1, 8, 2, 4}},
      {"o2_trig", {1, 8, 2, 4}},
      {"o3_inverse", {1, 8, 2, 4}},
      {"o4_hyperbolic", {1, 8, 2, 4}},
      {"o5_rounding", {1, 8, 2, 4}},
      {"o6_where", {1, 8, 2, 4}},
      {"o7_argmin", {1, 1, 2, 4}},
      {"o8_top_values", {1, 2, 2, 4}},
      {"o9_top_indices", {1, 2, 2, 4}},
      {"o10_hardmax", {1, 8, 2, 4}},
      {"o11_lower", {1, 8, 2, 4}},
      {"o12_shrink_threshold", {1, 8, 2, 4}},
      {"o13_gathered", {1, 3, 2, 4}},
      {"o14_instance_norm", {1, 8, 2, 4}},
      {"o15_selu_softplus_softsign", {1, 8, 2, 4}},
      {"o16_sequence", {1, 4, 3}},
      {"o17_cumsum", {1, 8, 2, 4}},
      {"o18_fmod", {1, 8, 2, 4}},
      {"o19_gather_nd", {2, 2, 4}},
      {"o20_scatter_nd", {1, 8, 2, 4}},
      {"o21_scatter_elements", {1, 8, 2, 4}},
      {"o22_one_hot", {1, 8, 1, 2, 4}},
      {"o23_celu_isnan", {1, 8, 2, 4}},
      {"o24_mvn", {1, 8, 2, 4}}};
  for (const auto& [name, dims] : outputs) b.output(name, dims);
  const std::string source = b.save(dir.path, "source.onnx");

  const Tensor x = random_tensor({1, 8, 2, 4}, 23, -1.5f, 1.5f);
  const std::vector<Tensor> want = run_onnx_runtime(source, {{"x", x}}, dir.path / "source");
  REQUIRE(want.size() == outputs.size());
  const ModuleSpec spec = onnx_interop::import_onnx(source);
  for (const char* backend : {"reference", "onednn"}) {
    INFO("hub on " << backend);
    const TensorMap got = run_signature(spec, "default", {{"x", x}}, backend);
    for (size_t i = 0; i < outputs.size(); ++i) {
      INFO(outputs[i].first);
      expect_close(got.at(outputs[i].first), want[i], 1e-5, 1e-4);
    }
  }
  // Exported back to ONNX: the new ops are written as themselves, and ONNX Runtime computes the same.
  std::vector<std::string> names;
  for (const auto& o : outputs) names.push_back(o.first);
  const ::onnx::ModelProto m = expect_exported_agrees(spec, dir.path, {{"x", x}}, names, want);
  std::set<std::string> ops;
  for (const auto& n : m.graph().node()) ops.insert(n.op_type());
  for (const char* op : {"Erf",       "Sin",
                         "Cos",       "Tan",
                         "Asin",      "Acos",
                         "Atan",      "Sinh",
                         "Cosh",      "Asinh",
                         "Acosh",     "Atanh",
                         "Floor",     "Ceil",
                         "Round",     "Not",
                         "And",       "Or",
                         "Xor",       "Where",
                         "ArgMin",    "CumSum",
                         "Mod",       "GatherND",
                         "ScatterND", "ScatterElements",
                         "OneHot"})
    CHECK_MESSAGE(ops.count(op), op << " is not in the exported model");
}

TEST_CASE(
    "ONNX import: Einsum (batch, contraction, ellipsis, broadcasting, implicit output, three operands) "
    "agrees with ONNX Runtime") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_einsum");
  OnnxBuilder b(17);
  b.input("x", {-1, 3, 4});  // the batch known only at run time
  b.init("w", random_tensor({4, 5}, 51));
  b.init("k", random_tensor({2, 3, 6, 4}, 52));
  b.init("v", random_tensor({3}, 53));
  b.init("m", random_tensor({5, 2}, 54));
  b.init("one_batch", random_tensor({1, 4, 2}, 55));
  const std::vector<std::tuple<std::string, std::vector<std::string>, std::vector<int64_t>>> cases = {
      {"bij,jk->bik", {"x", "w"}, {-1, 3, 5}},          // a projection
      {"bhd,chkd->bchk", {"x", "k"}, {-1, 2, 3, 6}},    // attention scores, batches on both sides
      {"...ij,...jk", {"x", "one_batch"}, {-1, 3, 2}},  // implicit output, a batch of 1 broadcast
      {"bij->bji", {"x"}, {-1, 4, 3}},                  // a transpose
      {"bij->j", {"x"}, {3}},                           // sums
      {"bij,i->bj", {"x", "v"}, {-1, 4}},               // a weighted sum over the middle dim
      {"bij,jk,kl->bil", {"x", "w", "m"}, {-1, 3, 2}},  // three operands
  };
  std::vector<std::pair<std::string, std::vector<int64_t>>> outputs;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [equation, inputs, dims] = cases[i];
    const std::string out = "e" + std::to_string(i);
    auto* n = b.node("Einsum", inputs, out, "/" + out);
    auto* a = n->add_attribute();
    a->set_name("equation");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(equation);
    outputs.emplace_back(out, dims);
    b.output(out, dims);
  }
  const std::string path = b.save(dir.path, "einsum.onnx");
  const Tensor x = random_tensor({2, 3, 4}, 56);
  const std::vector<Tensor> want = run_onnx_runtime(path, {{"x", x}}, dir.path / "einsum");
  REQUIRE(want.size() == outputs.size());
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  const TensorMap got = run_signature(spec, "default", {{"x", x}}, "reference");
  for (size_t i = 0; i < outputs.size(); ++i) {
    INFO(outputs[i].first);
    expect_close(got.at(outputs[i].first), want[i], 1e-5, 1e-4);
  }
  // Converted back to ONNX (as hub's ops), ONNX Runtime computes the same.
  std::vector<std::string> names;
  for (const auto& o : outputs) names.push_back(o.first);
  expect_exported_agrees(spec, dir.path, {{"x", x}}, names, want);
  // Refused, each naming the equation: malformed ones as invalid, a diagonal as unsupported.
  for (const auto& [equation, inputs, code, why] :
       std::vector<std::tuple<std::string, std::vector<std::string>, Code, std::string>>{
           {"bij,i->bijk", {"x", "v"}, Code::kInvalidArgument, "has output label 'k' repeated or in no operand"},
           {"bij,jk", {"x"}, Code::kInvalidArgument, "names 2 operands for 1 inputs"},
           {"bi->b", {"x"}, Code::kInvalidArgument, "has term 'bi', which does not fit input 0 [2,3,3]"},
           {"bii->bi",
            {"x"},
            Code::kUnimplemented,
            "repeats label 'i' within one operand (diagonals are not supported)"}}) {
    OnnxBuilder bad(17);
    bad.input("x", {2, 3, 3});
    bad.init("v", random_tensor({3}, 57));
    auto* n = bad.node("Einsum", inputs, "y", "einsum");
    auto* a = n->add_attribute();
    a->set_name("equation");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(equation);
    bad.output("y", {2, 3});
    const std::string bad_path = bad.save(dir.path, "bad.onnx");
    expect_error(
        code, [&] { onnx_interop::import_onnx(bad_path); }, why);
  }
}

TEST_CASE(
    "ONNX import: quantized operators (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger, "
    "DynamicQuantizeLinear) agree with ONNX Runtime on both backends") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_qoperator");
  auto bytes = [](DType dtype, const Shape& shape, int64_t lo, int64_t span, int64_t step) {
    Tensor t(dtype, shape);
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      const int64_t v = lo + (i * step) % span;
      if (dtype == DType::kInt8)
        t.data<int8_t>()[i] = static_cast<int8_t>(v);
      else
        t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
    }
    return t;
  };
  OnnxBuilder b(13);
  b.input("x", {2, 3, 6, 6});
  b.input("v", {2, 8});
  // Static (QOperator) path: uint8 activations, int8 weights per output channel, int32 bias.
  b.init("xs", Tensor::scalar(0.02f));
  b.init("xz", Tensor::scalar<uint8_t>(128));
  b.node("QuantizeLinear", {"x", "xs", "xz"}, "xq");
  b.init("w", bytes(DType::kInt8, {4, 3, 3, 3}, -127, 255, 37));
  b.init("ws", make({4}, {0.004f, 0.002f, 0.003f, 0.005f}));
  b.init("wz", Tensor::zeros(DType::kInt8, Shape{4}));
  b.init("ys", Tensor::scalar(0.05f));
  b.init("yz", Tensor::scalar<uint8_t>(10));
  b.init("bias", Tensor::from_vector<int32_t>(Shape{4}, {500, -300, 0, 1200}));
  auto* conv = b.node("QLinearConv", {"xq", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"}, "yq");
  ints_attr(conv, "pads", {1, 1, 1, 1});
  ints_attr(conv, "strides", {2, 2});
  b.init("flat", Tensor::from_vector<int64_t>(Shape{2}, {2, 36}));
  b.node("Reshape", {"yq", "flat"}, "yflat");
  b.init("m", bytes(DType::kInt8, {36, 5}, -100, 200, 53));
  b.init("ms", Tensor::scalar(0.01f));
  b.init("mz", Tensor::scalar<int8_t>(0));
  b.init("os", Tensor::scalar(0.1f));
  b.init("oz", Tensor::scalar<uint8_t>(100));
  b.node("QLinearMatMul", {"yflat", "ys", "yz", "m", "ms", "mz", "os", "oz"}, "oq");
  b.node("DequantizeLinear", {"oq", "os", "oz"}, "q");
  // Integer ops: uint8 weights with a zero point, as ONNX Runtime's ConvInteger takes them.
  b.init("wu", bytes(DType::kUInt8, {2, 3, 2, 2}, 0, 256, 41));
  b.init("wuz", Tensor::scalar<uint8_t>(120));
  b.node("ConvInteger", {"xq", "wu", "xz", "wuz"}, "ci32");
  int_attr(b.node("Cast", {"ci32"}, "ci", "/cast_ci"), "to", ::onnx::TensorProto::FLOAT);
  // Dynamic quantization: DynamicQuantizeLinear -> MatMulInteger -> rescale.
  auto* dq = b.node("DynamicQuantizeLinear", {"v"}, "vq");
  dq->add_output("vs");
  dq->add_output("vz");
  b.init("d", bytes(DType::kInt8, {8, 3}, -90, 180, 29));
  b.init("dz", Tensor::scalar<int8_t>(3));
  b.node("MatMulInteger", {"vq", "d", "vz", "dz"}, "di32");
  int_attr(b.node("Cast", {"di32"}, "di", "/cast_di"), "to", ::onnx::TensorProto::FLOAT);
  b.node("Mul", {"di", "vs"}, "dyn");
  b.output("q", {2, 5});
  b.output("ci", {2, 2, 5, 5});
  b.output("dyn", {2, 3});
  const std::string path = b.save(dir.path, "qoperator.onnx");
  const Tensor x = random_tensor({2, 3, 6, 6}, 71, -2.0f, 2.5f);
  const Tensor v = random_tensor({2, 8}, 72, -3.0f, 1.0f);
  const std::vector<Tensor> want = run_onnx_runtime(path, {{"x", x}, {"v", v}}, dir.path / "ort");
  REQUIRE(want.size() == 3);
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  for (const char* backend : {"reference", "onednn"}) {
    INFO(backend);
    const TensorMap got = run_signature(spec, "default", {{"x", x}, {"v", v}}, backend);
    // The requantized output within one step of its scale (0.1): rounding
    // of the int32 sums' rescale may differ by one; the integer ops exactly.
    expect_close(got.at("q"), want[0], 0.1001, 0);
    expect_close(got.at("ci"), want[1], 0, 0);
    expect_close(got.at("dyn"), want[2], 1e-5, 1e-5);
  }
  // The int8 weights stay int8 (non-trainable variables), so inference runs QLinearConv and
  // QLinearMatMul as the int8 fused ops; ConvInteger's uint8 weights with a zero point stay float.
  int int8_variables = 0;
  for (const VariableInfo& v : spec.variables()) int8_variables += v.dtype == DType::kInt8 && !v.trainable;
  CHECK(int8_variables == 2);
  Module module(spec);
  expect_close(module({{"x", x}, {"v", v}}).at("q"), want[0], 0.1001, 0);
  std::multiset<std::string> quantized;
  for (const Node& n : module.execution_graph().nodes())
    if ((n.op == "_FusedConv2D" || n.op == "_FusedMatMul") && ops::quantization_of(n.attrs).quantized())
      quantized.insert(n.op);
  CHECK(quantized == std::multiset<std::string>{"_FusedConv2D", "_FusedMatMul"});
}

TEST_CASE("ONNX import and export: cubic Resize (coefficient, exclude_outside, coordinates) agrees with ONNX Runtime") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_resize_cubic");
  OnnxBuilder b(13);
  b.input("x", {2, 3, 5, 6});
  b.init("sizes", Tensor::from_vector<int64_t>(Shape{4}, {2, 3, 9, 4}));
  b.init("scales", make({4}, {1, 1, 1.7f, 0.6f}));
  std::vector<std::string> outputs;
  for (const char* coordinates : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"})
    for (float a : {-0.75f, -0.5f})
      for (int exclude : {0, 1}) {
        const std::string out =
            std::string(coordinates) + (a == -0.5f ? "_a05" : "_a075") + "_" + std::to_string(exclude);
        // align_corners with a scale whose output length is not whole differs by design: ONNX's
        // reference (and hub) divide by scale * L - 1, ONNX Runtime by the rounded length - 1.
        const bool by_scales = exclude == 1 && std::string(coordinates) != "align_corners";
        auto* n = b.node("Resize", {"x", "", by_scales ? "scales" : "", by_scales ? "" : "sizes"}, out, "/" + out);
        for (const auto& [name, value] :
             {std::pair<const char*, const char*>{"mode", "cubic"}, {"coordinate_transformation_mode", coordinates}}) {
          auto* attr = n->add_attribute();
          attr->set_name(name);
          attr->set_type(::onnx::AttributeProto::STRING);
          attr->set_s(value);
        }
        auto* attr = n->add_attribute();
        attr->set_name("cubic_coeff_a");
        attr->set_type(::onnx::AttributeProto::FLOAT);
        attr->set_f(a);
        int_attr(n, "exclude_outside", exclude);
        b.output(out, by_scales ? std::vector<int64_t>{2, 3, 8, 3} : std::vector<int64_t>{2, 3, 9, 4});
        outputs.push_back(out);
      }
  const std::string path = b.save(dir.path, "resize_cubic.onnx");
  const Tensor x = random_tensor({2, 3, 5, 6}, 61);
  const std::vector<Tensor> want = run_onnx_runtime(path, {{"x", x}}, dir.path / "source");
  REQUIRE(want.size() == outputs.size());
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  const TensorMap got = run_signature(spec, "default", {{"x", x}}, "onednn");
  for (size_t i = 0; i < outputs.size(); ++i) {
    INFO(outputs[i]);
    expect_close(got.at(outputs[i]), want[i], 1e-5, 1e-4);
  }
  expect_exported_agrees(spec, dir.path, {{"x", x}}, outputs, want);
}

TEST_CASE(
    "ONNX import and export: 3-D convolutions, pooling and batch norm, and 1-D transposed convolutions agree "
    "with ONNX Runtime") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_volumetric");
  OnnxBuilder b(13);
  b.input("x", {-1, 4, 5, 6, 7});
  b.input("s", {2, 3, 9});
  // Grouped, strided, dilated, asymmetrically padded, with a bias.
  b.init("w", random_tensor({6, 2, 3, 2, 3}, 81, -0.5f, 0.5f));
  b.init("b", random_tensor({6}, 82));
  auto* conv = b.node("Conv", {"x", "w", "b"}, "c", "/conv3d");
  int_attr(conv, "group", 2);
  ints_attr(conv, "strides", {2, 1, 2});
  ints_attr(conv, "dilations", {1, 2, 1});
  ints_attr(conv, "pads", {1, 0, 1, 2, 1, 0});
  for (const char* name : {"scale", "bias", "mean", "var"})
    b.init(std::string("bn_") + name, random_tensor({6}, 83 + (name[0] - 'a'), 0.5f, 1.5f));
  b.node("BatchNormalization", {"c", "bn_scale", "bn_bias", "bn_mean", "bn_var"}, "n", "/bn3d");
  b.node("Relu", {"n"}, "r", "/relu");
  auto* max = b.node("MaxPool", {"r"}, "m", "/maxpool3d");
  ints_attr(max, "kernel_shape", {2, 3, 2});
  ints_attr(max, "strides", {2, 2, 1});
  ints_attr(max, "pads", {0, 1, 1, 1, 1, 0});
  int_attr(max, "ceil_mode", 1);
  for (int include = 0; include < 2; ++include) {
    const std::string out = "avg" + std::to_string(include);
    auto* avg = b.node("AveragePool", {"x"}, out, "/" + out);
    ints_attr(avg, "kernel_shape", {3, 2, 3});
    ints_attr(avg, "strides", {1, 2, 2});
    ints_attr(avg, "pads", {1, 1, 0, 1, 0, 2});
    int_attr(avg, "count_include_pad", include);
    b.output(out, {-1, 4, 5, 3, 4});
  }
  b.node("GlobalAveragePool", {"m"}, "g", "/global3d");
  // A 1-D transposed convolution [N, C, L]: stride 2, output padding, grouped.
  b.init("wt", random_tensor({3, 2, 4}, 89, -0.5f, 0.5f));
  auto* ct = b.node("ConvTranspose", {"s", "wt"}, "t", "/conv_transpose1d");
  ints_attr(ct, "strides", {2});
  ints_attr(ct, "pads", {1, 2});
  ints_attr(ct, "output_padding", {1});
  b.output("m", {-1, 6, 2, 3, 2});
  b.output("g", {-1, 6, 1, 1, 1});
  b.output("t", {2, 2, 18});
  const std::string path = b.save(dir.path, "volumetric.onnx");
  const Tensor x = random_tensor({2, 4, 5, 6, 7}, 90);
  const Tensor sq = random_tensor({2, 3, 9}, 91);
  const std::vector<std::pair<std::string, Tensor>> inputs{{"x", x}, {"s", sq}};
  const std::vector<Tensor> want = run_onnx_runtime(path, inputs, dir.path / "source");
  const std::vector<std::string> names{"avg0", "avg1", "m", "g", "t"};
  REQUIRE(want.size() == names.size());
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  for (const char* backend : {"reference", "onednn"}) {
    INFO(backend);
    const TensorMap got = run_signature(spec, "default", {{"x", x}, {"s", sq}}, backend);
    for (size_t i = 0; i < names.size(); ++i) {
      INFO(names[i]);
      expect_close(got.at(names[i]), want[i], 1e-5, 1e-4);
    }
  }
  expect_exported_agrees(spec, dir.path, inputs, names, want);
}

TEST_CASE("ONNX import and export: a transformer with run-time batch and sequence lengths agrees with ONNX Runtime") {
  // A BERT-style layer as PyTorch exports it with dynamic axes: position ids sliced to the
  // sequence length (Shape, Gather, Slice) and expanded to the batch, token types made by
  // ConstantOfShape(Shape(ids)), heads split and merged by Reshapes to
  // Concat(batch, sequence, ...) of Shape dims, an attention mask, Erf GELU. The ids come in as
  // floats (ONNX Runtime's harness feeds float32) and are cast.
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_dynamic_transformer");
  const int64_t hidden = 8, heads = 2, vocab = 20, positions = 16;
  OnnxBuilder b(17);
  b.input("ids_f", {-1, -1});
  b.input("mask_f", {-1, -1});
  auto node = [&](const std::string& op, const std::vector<std::string>& in, const std::string& out) {
    return b.node(op, in, out, "/" + out);
  };
  b.init("word", random_tensor({vocab, hidden}, 101));
  b.init("pos", random_tensor({positions, hidden}, 102));
  std::vector<int64_t> ids(positions);
  std::iota(ids.begin(), ids.end(), 0);
  b.init("pos_ids", Tensor::from_vector<int64_t>({1, positions}, ids));
  b.init("i0", Tensor::from_vector<int64_t>({1}, {0}));
  b.init("i1", Tensor::from_vector<int64_t>({1}, {1}));
  b.init("split_heads", Tensor::from_vector<int64_t>({2}, {heads, hidden / heads}));
  b.init("merged", Tensor::from_vector<int64_t>({1}, {hidden}));
  b.init("ln_scale", random_tensor({hidden}, 103, 0.5f, 1.5f));
  b.init("ln_bias", random_tensor({hidden}, 104));
  b.init("one", Tensor::scalar(1.0f));
  b.init("minus_big", Tensor::scalar(-10000.0f));
  b.init("root_depth", Tensor::scalar(2.0f));
  b.init("mask_axes", Tensor::from_vector<int64_t>({2}, {1, 2}));
  int_attr(node("Cast", {"ids_f"}, "ids"), "to", ::onnx::TensorProto::INT64);
  node("Shape", {"ids"}, "ids_shape");
  node("Gather", {"ids_shape", "i1"}, "sequence");
  node("Slice", {"pos_ids", "i0", "sequence", "i1"}, "positions");
  node("Expand", {"positions", "ids_shape"}, "batch_positions");  // [1, L] -> [N, L]
  node("Gather", {"word", "ids"}, "word_embedding");
  node("Gather", {"pos", "batch_positions"}, "position_embedding");
  // Token types all 0, as HuggingFace's exports make them: ConstantOfShape(Shape(ids)).
  b.init("types", random_tensor({2, hidden}, 109));
  auto* zeros = node("ConstantOfShape", {"ids_shape"}, "type_ids");
  auto* value = zeros->add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  onnx_interop::tensor_to_onnx(Tensor::from_vector<int64_t>({1}, {0}), value->mutable_t());
  node("Gather", {"types", "type_ids"}, "type_embedding");
  node("Sum", {"word_embedding", "position_embedding", "type_embedding"}, "embedding");
  int_attr(node("LayerNormalization", {"embedding", "ln_scale", "ln_bias"}, "x"), "axis", -1);
  node("Unsqueeze", {"mask_f", "mask_axes"}, "mask4");
  node("Mul", {node("Sub", {"one", "mask4"}, "masked")->output(0), "minus_big"}, "mask_add");
  node("Shape", {"x"}, "x_shape");
  node("Gather", {"x_shape", "i0"}, "batch");
  node("Gather", {"x_shape", "i1"}, "length");
  int_attr(node("Concat", {"batch", "length", "split_heads"}, "head_shape"), "axis", 0);
  int_attr(node("Concat", {"batch", "length", "merged"}, "merged_shape"), "axis", 0);
  for (const char* p : {"q", "k", "v"}) {
    const std::string w = std::string("w") + p, t = std::string(p);
    b.init(w, random_tensor({hidden, hidden}, 105 + (p[0] - 'k'), -0.5f, 0.5f));
    node("MatMul", {"x", w}, t + "0");
    node("Reshape", {t + "0", "head_shape"}, t + "1");
    ints_attr(node("Transpose", {t + "1"}, t + "2"), "perm",
              t == "k" ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3});
  }
  node("Div", {node("MatMul", {"q2", "k2"}, "scores")->output(0), "root_depth"}, "scaled");
  int_attr(node("Softmax", {node("Add", {"scaled", "mask_add"}, "masked_scores")->output(0)}, "probs"), "axis", -1);
  ints_attr(node("Transpose", {node("MatMul", {"probs", "v2"}, "context")->output(0)}, "context_t"), "perm",
            {0, 2, 1, 3});
  node("Reshape", {"context_t", "merged_shape"}, "y");
  // [batch * heads, length, depth], as nn.MultiheadAttention views it: batch x heads is arithmetic
  // on a run-time dim, inferred as the reshape's -1.
  b.init("heads_count", Tensor::from_vector<int64_t>({1}, {heads}));
  b.init("depth", Tensor::from_vector<int64_t>({1}, {hidden / heads}));
  node("Mul", {"batch", "heads_count"}, "batch_heads");
  int_attr(node("Concat", {"batch_heads", "length", "depth"}, "flat_heads"), "axis", 0);
  node("Reshape", {"q2", "flat_heads"}, "q_flat");
  // Positions 0 .. length - 1 by Range with a run-time limit (GPT-style exports).
  b.init("zero_i", Tensor::scalar<int64_t>(0));
  b.init("one_i", Tensor::scalar<int64_t>(1));
  node("Squeeze", {"sequence"}, "sequence_scalar");
  node("Range", {"zero_i", "sequence_scalar", "one_i"}, "range");
  int_attr(node("Cast", {"range"}, "range_f"), "to", ::onnx::TensorProto::FLOAT);
  b.output("y", {-1, -1, hidden});
  b.output("q_flat", {-1, -1, hidden / heads});
  b.output("range_f", {-1});
  const std::string path = b.save(dir.path, "transformer.onnx");
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  CHECK(spec.input_info().at("ids_f").shape == Shape{kUnknownDim, kUnknownDim});
  Module module(spec);
  for (const auto& [batch, length] : {std::pair<int64_t, int64_t>{2, 3}, {1, 7}, {3, 5}}) {
    CAPTURE(length);
    Tensor ids_in(DType::kFloat32, Shape{batch, length}), mask(DType::kFloat32, Shape{batch, length});
    for (int64_t i = 0; i < batch * length; ++i) {
      ids_in.data<float>()[i] = static_cast<float>((i * 7 + 3) % vocab);
      mask.data<float>()[i] = i % length < length - 1 || i / length == 0 ? 1.0f : 0.0f;  // pad the last token
    }
    const std::vector<std::pair<std::string, Tensor>> inputs{{"ids_f", ids_in}, {"mask_f", mask}};
    const std::vector<Tensor> want = run_onnx_runtime(path, inputs, dir.path / ("ort" + std::to_string(length)));
    REQUIRE(want.size() == 3);
    CHECK(want[0].shape() == Shape{batch, length, hidden});
    CHECK(want[1].shape() == Shape{batch * heads, length, hidden / heads});
    CHECK(want[2].shape() == Shape{length});
    for (const char* backend : {"reference", "onednn"}) {
      INFO(backend);
      const TensorMap got = run_signature(spec, "default", {{"ids_f", ids_in}, {"mask_f", mask}}, backend);
      expect_close(got.at("y"), want[0], 1e-5, 1e-4);
      expect_close(got.at("q_flat"), want[1], 1e-5, 1e-4);
      expect_close(got.at("range_f"), want[2], 0, 0);
    }
    // One Module, shapes changing between calls.
    expect_close(module({{"ids_f", ids_in}, {"mask_f", mask}}).at("y"), want[0], 1e-5, 1e-4);
    if (length == 7) expect_exported_agrees(spec, dir.path, inputs, {"y", "q_flat", "range_f"}, want);
  }
}

TEST_CASE("ONNX import and export: GridSample in every mode, padding and alignment agrees with ONNX Runtime") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_grid_sample");
  OnnxBuilder b(16);
  b.input("x", {2, 3, 5, 6});
  b.input("grid", {2, 4, 7, 2});
  std::vector<std::string> outputs;
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* padding : {"zeros", "border", "reflection"})
      for (int align : {0, 1}) {
        const std::string out = std::string(mode) + "_" + padding + "_" + std::to_string(align);
        auto* n = b.node("GridSample", {"x", "grid"}, out, "/" + out);
        for (const auto& [name, value] :
             {std::pair<const char*, const char*>{"mode", mode}, {"padding_mode", padding}}) {
          auto* a = n->add_attribute();
          a->set_name(name);
          a->set_type(::onnx::AttributeProto::STRING);
          a->set_s(value);
        }
        int_attr(n, "align_corners", align);
        b.output(out, {2, 3, 4, 7});
        outputs.push_back(out);
      }
  const std::string path = b.save(dir.path, "grid_sample.onnx");
  const Tensor x = random_tensor({2, 3, 5, 6}, 58);
  const Tensor grid = random_tensor({2, 4, 7, 2}, 59, -1.3f, 1.3f);  // some outside, to pad
  const std::vector<Tensor> want = run_onnx_runtime(path, {{"x", x}, {"grid", grid}}, dir.path / "source");
  REQUIRE(want.size() == outputs.size());
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  const TensorMap got = run_signature(spec, "default", {{"x", x}, {"grid", grid}}, "reference");
  for (size_t i = 0; i < outputs.size(); ++i) {
    INFO(outputs[i]);
    expect_close(got.at(outputs[i]), want[i], 1e-5, 1e-4);
  }
  // Written back as GridSample (opset 16), ONNX Runtime computes the same.
  CHECK(expect_exported_agrees(spec, dir.path, {{"x", x}, {"grid", grid}}, outputs, want).opset_import(0).version() ==
        16);
}

TEST_CASE(
    "ONNX import: LSTM, GRU and RNN, both directions, biases, peepholes and initial states, agree with ONNX "
    "Runtime") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_recurrent");
  const int64_t steps = 5, batch = 3, input = 4, hidden = 6;
  OnnxBuilder b(14);
  b.input("x", {steps, -1, input});  // the batch known only at run time
  b.input("h0", {2, batch, hidden});
  b.input("c0", {2, batch, hidden});
  auto add_string = [](::onnx::NodeProto* n, const char* name, const char* value) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(value);
  };
  uint64_t seed = 70;
  auto weights = [&](const std::string& prefix, int dirs, int gates) {
    b.init(prefix + "_w", random_tensor({dirs, gates * hidden, input}, ++seed, -0.5f, 0.5f));
    b.init(prefix + "_r", random_tensor({dirs, gates * hidden, hidden}, ++seed, -0.5f, 0.5f));
    b.init(prefix + "_b", random_tensor({dirs, 2 * gates * hidden}, ++seed, -0.5f, 0.5f));
  };
  // A bidirectional LSTM with peepholes and initial h and c: all three outputs.
  weights("lstm", 2, 4);
  b.init("lstm_p", random_tensor({2, 3 * hidden}, ++seed, -0.5f, 0.5f));
  b.init("lens", Tensor::from_vector<int32_t>({batch}, {5, 5, 5}));
  auto* lstm = b.node("LSTM", {"x", "lstm_w", "lstm_r", "lstm_b", "lens", "h0", "c0", "lstm_p"}, "lstm_y", "/lstm");
  lstm->add_output("lstm_h");
  lstm->add_output("lstm_c");
  add_string(lstm, "direction", "bidirectional");
  int_attr(lstm, "hidden_size", hidden);
  // A bidirectional GRU, linear_before_reset, from zero states.
  weights("gru", 2, 3);
  auto* gru = b.node("GRU", {"x", "gru_w", "gru_r", "gru_b"}, "gru_y", "/gru");
  gru->add_output("gru_h");
  add_string(gru, "direction", "bidirectional");
  int_attr(gru, "hidden_size", hidden);
  int_attr(gru, "linear_before_reset", 1);
  // A GRU without it, and a reversed RNN.
  weights("gru0", 1, 3);
  int_attr(b.node("GRU", {"x", "gru0_w", "gru0_r", "gru0_b"}, "gru0_y", "/gru0"), "hidden_size", hidden);
  weights("rnn", 1, 1);
  auto* rnn = b.node("RNN", {"x", "rnn_w", "rnn_r", "rnn_b"}, "rnn_y", "/rnn");
  add_string(rnn, "direction", "reverse");
  int_attr(rnn, "hidden_size", hidden);
  const std::vector<std::pair<std::string, std::vector<int64_t>>> outputs = {
      {"lstm_y", {steps, 2, batch, hidden}}, {"lstm_h", {2, batch, hidden}}, {"lstm_c", {2, batch, hidden}},
      {"gru_y", {steps, 2, batch, hidden}},  {"gru_h", {2, batch, hidden}},  {"gru0_y", {steps, 1, batch, hidden}},
      {"rnn_y", {steps, 1, batch, hidden}}};
  for (const auto& [name, dims] : outputs) b.output(name, dims);
  const std::string path = b.save(dir.path, "recurrent.onnx");
  const Tensor x = random_tensor({steps, batch, input}, ++seed);
  const Tensor h0 = random_tensor({2, batch, hidden}, ++seed), c0 = random_tensor({2, batch, hidden}, ++seed);
  const TensorMap feeds{{"x", x}, {"h0", h0}, {"c0", c0}};
  const std::vector<Tensor> want = run_onnx_runtime(path, {{"x", x}, {"h0", h0}, {"c0", c0}}, dir.path / "ort");
  REQUIRE(want.size() == outputs.size());
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  // Variables per direction: LSTM W, R, two biases and three peepholes (14);
  // GRU with linear_before_reset W, R, two biases and the reset's (10); GRU
  // without W, R, two biases and R's h columns (5); RNN W, R, two biases (4).
  CHECK(spec.variables().size() == 33);
  for (const char* backend : {"reference", "onednn"}) {
    INFO(backend);
    const TensorMap got = run_signature(spec, "default", feeds, backend);
    for (size_t i = 0; i < outputs.size(); ++i) {
      INFO(outputs[i].first);
      expect_close(got.at(outputs[i].first), want[i], 1e-5, 1e-4);
    }
  }
  // Converted back to ONNX (unrolled), ONNX Runtime computes the same.
  std::vector<std::string> names;
  for (const auto& o : outputs) names.push_back(o.first);
  expect_exported_agrees(spec, dir.path, {{"x", x}, {"h0", h0}, {"c0", c0}}, names, want);
  // Unsupported forms are refused by name.
  lstm->mutable_attribute(0)->set_s("sideways");
  const std::string bad = b.save(dir.path, "bad.onnx");
  expect_error(
      Code::kUnimplemented, [&] { onnx_interop::import_onnx(bad); },
      "attribute direction = sideways: expected forward, reverse or bidirectional");
  // Bounds checked before anything is built: the hidden size, and the steps unrolled.
  for (const auto& [steps, hidden_size, why] : std::vector<std::tuple<int64_t, int64_t, std::string>>{
           {4, -3, "attribute hidden_size = -3: must be in [1, 2^24]"},
           {9000, 2, "a sequence of 9000 steps is longer than the 8192 hub unrolls at import"}}) {
    OnnxBuilder r(14);
    r.input("x", {steps, 1, 2});
    r.init("w", random_tensor({1, 2, 2}, 80));
    r.init("r", random_tensor({1, 2, 2}, 81));
    int_attr(r.node("RNN", {"x", "w", "r"}, "y", "rnn"), "hidden_size", hidden_size);
    r.output("y", {steps, 1, 1, 2});
    const std::string path = r.save(dir.path, "bounds.onnx");
    CHECK_THROWS_WITH_AS(onnx_interop::import_onnx(path), doctest::Contains(why.c_str()), Error);
  }
}

TEST_CASE("ONNX import: an imported SoftmaxCrossEntropyLoss is differentiable: (softmax - one-hot) * w / sum(w)") {
  TempDir dir("onnx_sce_grad");
  OnnxBuilder b(13);
  b.input("scores", {3, 4});
  b.input("labels", {3}, ::onnx::TensorProto::INT64);
  b.init("weights", make({4}, {1, 2, 0.5f, 1}));
  b.node("SoftmaxCrossEntropyLoss", {"scores", "labels", "weights"}, "loss", "sce");
  b.g->add_output()->set_name("loss");
  b.g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  b.g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  const ModuleSpec spec = onnx_interop::import_onnx(b.save(dir.path));
  Graph g = spec.graph();
  Scope s(g);
  const Output scores = g.tensor(spec.signature().inputs.at("scores").tensor_name);
  const Output labels = g.tensor(spec.signature().inputs.at("labels").tensor_name);
  const Output loss = g.tensor(spec.signature().outputs.at("loss").tensor_name);
  const Output grad = gradients(s, loss, {scores})[0];
  VariableStore vars;
  for (const auto& [name, t] : spec.weights()) vars.set(name, t.clone());
  Session session(g, &vars);
  const Tensor x = random_tensor({3, 4}, 60);
  const std::vector<int64_t> y{2, 0, 1};
  const std::vector<Tensor> out =
      session.run({{scores, x}, {labels, Tensor::from_vector<int64_t>({3}, y)}}, {loss, grad});
  const float w[4] = {1, 2, 0.5f, 1};
  const float total = w[2] + w[0] + w[1];
  float want_loss = 0;
  std::vector<float> want_grad(12);
  for (int n = 0; n < 3; ++n) {
    float z = 0;
    for (int k = 0; k < 4; ++k) z += std::exp(x.data<float>()[n * 4 + k]);
    want_loss -= w[y[n]] * (x.data<float>()[n * 4 + y[n]] - std::log(z)) / total;
    for (int k = 0; k < 4; ++k)
      want_grad[n * 4 + k] = w[y[n]] * (std::exp(x.data<float>()[n * 4 + k]) / z - (k == y[n] ? 1.0f : 0.0f)) / total;
  }
  CHECK(out[0].item<float>() == doctest::Approx(want_loss).epsilon(1e-5));
  expect_close(out[1], make({3, 4}, want_grad), 1e-6, 1e-5);
}

TEST_CASE(
    "ONNX import: a constant folded at import is bounded (ConstantOfShape, EyeLike, Trilu's mask, any growing fold)") {
  TempDir dir("onnx_fold_bound");
  const int64_t side = 8193;  // side^2 > 2^24
  {
    OnnxBuilder b;
    b.init("shape", Tensor::from_vector<int64_t>({2}, {side, side}));
    b.node("ConstantOfShape", {"shape"}, "y", "zeros");
    b.output("y", {side, side});
    const std::string path = b.save(dir.path, "cos.onnx");
    expect_error(
        Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); }, "node 'zeros' (ConstantOfShape): the output");
  }
  for (const char* op : {"EyeLike", "Trilu"}) {
    INFO(op);
    OnnxBuilder b(14);
    b.input("x", {side, side});
    b.node(op, {"x"}, "y", "big");
    b.output("y", {side, side});
    const std::string path = b.save(dir.path, std::string(op) + ".onnx");
    expect_error(
        Code::kInvalidArgument, [&] { onnx_interop::import_onnx(path); }, "more than 2^24 elements");
  }
  // Any other op of constant inputs whose output would outgrow the bound (the fuzzer's find: a
  // Tile of constants with huge repeats, an old model's opset-6 Tile, allocated 2^54 elements) is
  // not folded at import: it stays in the graph, where it runs when the module does.
  for (int opset : {6, 13}) {
    OnnxBuilder tile(opset);
    tile.init("x", make({2}, {1, 2}));
    tile.init("repeats", Tensor::from_vector<int64_t>({1}, {int64_t{1} << 25}));
    tile.node("Tile", {"x", "repeats"}, "y", "tile");
    tile.output("y", {-1});
    const ModuleSpec spec = onnx_interop::import_onnx(tile.save(dir.path, "tile" + std::to_string(opset) + ".onnx"));
    int tiles = 0, large = 0;
    for (const Node& n : spec.graph().nodes()) {
      tiles += n.op == "Tile";
      for (const TensorSpec& o : n.outputs) large += n.op == "Const" && o.shape.num_elements() > 2;
    }
    CHECK(tiles == 1);
    CHECK(large == 0);
    CHECK(spec.signature().outputs.at("y").shape == Shape{int64_t{1} << 26});
  }
  // Just inside the bound: imported; a fold that does not grow its input (a dequantized weight) is
  // not bounded.
  OnnxBuilder b(14);
  b.input("x", {4096, 4096});
  b.node("Trilu", {"x"}, "y");
  b.output("y", {4096, 4096});
  CHECK_NOTHROW(onnx_interop::import_onnx(b.save(dir.path, "ok.onnx")));
  OnnxBuilder big(13);
  big.input("x", {1, 5000});
  big.init("q", Tensor::zeros(DType::kInt8, Shape{5000, 3400}));  // 17M elements > 2^24
  big.init("s", Tensor::scalar(0.5f));
  big.node("DequantizeLinear", {"q", "s"}, "w", "dequantize");
  big.node("MatMul", {"x", "w"}, "y", "matmul");
  big.output("y", {1, 3400});
  CHECK_NOTHROW(onnx_interop::import_onnx(big.save(dir.path, "big.onnx")));
}

TEST_CASE("ONNX import and export: ReverseSequence on either axis order agrees with ONNX Runtime") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_reverse_sequence");
  OnnxBuilder b(13);
  b.input("x", {5, 3, 4});  // [time, batch, features]
  b.input("y", {3, 5, 2});  // [batch, time, features]
  b.init("x_lengths", Tensor::from_vector<int64_t>({3}, {5, 0, 3}));
  b.init("y_lengths", Tensor::from_vector<int64_t>({3}, {1, 4, 2}));
  b.node("ReverseSequence", {"x", "x_lengths"}, "time_major", "/time_major");
  auto* n = b.node("ReverseSequence", {"y", "y_lengths"}, "batch_major", "/batch_major");
  int_attr(n, "batch_axis", 0);
  int_attr(n, "time_axis", 1);
  b.output("time_major", {5, 3, 4});
  b.output("batch_major", {3, 5, 2});
  const std::string path = b.save(dir.path, "reverse_sequence.onnx");
  const Tensor x = random_tensor({5, 3, 4}, 61), y = random_tensor({3, 5, 2}, 62);
  const std::vector<Tensor> want = run_onnx_runtime(path, {{"x", x}, {"y", y}}, dir.path / "source");
  REQUIRE(want.size() == 2);
  // Hand-checked corners: batch 1 of x (length 0) is unchanged; batch 2 (length 3) has steps 0 and 2 swapped.
  const std::vector<float> xv = x.to_vector<float>(), w0 = want[0].to_vector<float>();
  CHECK(w0[(0 * 3 + 1) * 4] == xv[(0 * 3 + 1) * 4]);
  CHECK(w0[(0 * 3 + 2) * 4 + 1] == xv[(2 * 3 + 2) * 4 + 1]);
  CHECK(w0[(4 * 3 + 2) * 4 + 3] == xv[(4 * 3 + 2) * 4 + 3]);
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  const TensorMap got = run_signature(spec, "default", {{"x", x}, {"y", y}}, "reference");
  expect_close(got.at("time_major"), want[0], 0, 0);
  expect_close(got.at("batch_major"), want[1], 0, 0);
  expect_exported_agrees(spec, dir.path, {{"x", x}, {"y", y}}, {"batch_major", "time_major"}, {want[1], want[0]});
}

TEST_CASE("ONNX import and export: Unique, sorted or not, flattened or along an axis, agrees with ONNX Runtime") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_unique");
  OnnxBuilder b(13);
  b.input("x", {4, 6});
  // Values repeat (rounded to halves) so rows and elements recur.
  b.init("two", Tensor::scalar<float>(2));
  b.node("Mul", {"x", "two"}, "x2");
  b.node("Round", {"x2"}, "halves");
  std::vector<std::string> outputs;
  auto unique = [&](const std::string& name, std::optional<int64_t> axis, int sorted) {
    auto* n = b.g->add_node();
    n->set_op_type("Unique");
    n->set_name("/" + name);
    n->add_input("halves");
    for (const char* o : {"y", "indices", "inverse", "counts"}) n->add_output(name + "_" + o);
    if (axis) int_attr(n, "axis", *axis);
    int_attr(n, "sorted", sorted);
    for (const char* o : {"y", "indices", "inverse", "counts"}) {
      const std::string out = name + "_" + o, f = out + "_f";
      if (std::string(o) != "y") {
        int_attr(b.node("Cast", {out}, f, "/" + f), "to", ::onnx::TensorProto::FLOAT);
      } else {
        b.node("Identity", {out}, f, "/" + f);
      }
      b.output(f, axis ? std::vector<int64_t>(std::string(o) == "y" ? 2 : 1, -1) : std::vector<int64_t>{-1});
      outputs.push_back(f);
    }
  };
  unique("flat_sorted", std::nullopt, 1);
  unique("flat_unsorted", std::nullopt, 0);
  unique("rows", 0, 1);
  const std::string path = b.save(dir.path, "unique.onnx");
  // Rows 0 and 2 equal, so rows has three.
  Tensor x = random_tensor({4, 6}, 63, -1.5f, 1.5f);
  for (int j = 0; j < 6; ++j) x.data<float>()[12 + j] = x.data<float>()[j];
  const std::vector<Tensor> want = run_onnx_runtime(path, {{"x", x}}, dir.path / "source");
  REQUIRE(want.size() == outputs.size());
  CHECK(want[8].shape() == Shape{3, 6});
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  const TensorMap got = run_signature(spec, "default", {{"x", x}}, "reference");
  for (size_t i = 0; i < outputs.size(); ++i) {
    INFO(outputs[i]);
    expect_close(got.at(outputs[i]), want[i], 0, 0);
  }
  expect_exported_agrees(spec, dir.path, {{"x", x}}, outputs, want);
}

TEST_CASE("ONNX import and export: resizes to run-time sizes (scales of a dynamic image, another tensor's size)") {
  // A U-Net step as PyTorch exports it with dynamic height and width: a stride-2 convolution, then
  // F.interpolate(down, size=x.shape[2:]) (sizes = Concat(Shape(down)[0:2], Shape(x)[2:4])) added to
  // the input, and nn.Upsample(scale_factor=2) (constant scales on a size known only at run time).
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_resize_runtime");
  OnnxBuilder b(13);
  b.input("x", {1, 3, -1, -1});
  auto* dims = b.g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(2)->set_dim_param("height");
  dims->mutable_dim(3)->set_dim_param("width");
  b.init("w", random_tensor({3, 3, 3, 3}, 71));
  b.init("i0", Tensor::from_vector<int64_t>({1}, {0}));
  b.init("i2", Tensor::from_vector<int64_t>({1}, {2}));
  b.init("i4", Tensor::from_vector<int64_t>({1}, {4}));
  b.init("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 2}));
  auto* conv = b.node("Conv", {"x", "w"}, "down", "/down");
  ints_attr(conv, "strides", {2, 2});
  ints_attr(conv, "pads", {1, 1, 1, 1});
  b.node("Shape", {"down"}, "down_shape", "/down_shape");
  b.node("Slice", {"down_shape", "i0", "i2"}, "nc", "/nc");
  b.node("Shape", {"x"}, "x_shape", "/x_shape");
  b.node("Slice", {"x_shape", "i2", "i4"}, "hw", "/hw");
  int_attr(b.node("Concat", {"nc", "hw"}, "sizes", "/sizes"), "axis", 0);
  auto* up = b.node("Resize", {"down", "", "", "sizes"}, "up", "/up");
  auto str_attr = [](::onnx::NodeProto* n, const char* name, const char* value) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(value);
  };
  str_attr(up, "mode", "linear");
  b.node("Add", {"x", "up"}, "skip", "/skip");
  auto* twice = b.node("Resize", {"x", "", "scales"}, "twice", "/twice");
  str_attr(twice, "mode", "nearest");
  str_attr(twice, "coordinate_transformation_mode", "asymmetric");
  str_attr(twice, "nearest_mode", "floor");
  b.output("skip", {1, 3, -1, -1});
  b.output("twice", {1, 3, -1, -1});
  const std::string path = b.save(dir.path, "resize_runtime.onnx");
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  CHECK(spec.input_info().at("x").shape == Shape{1, 3, kUnknownDim, kUnknownDim});
  Module module(spec);
  int run = 0;
  for (const auto& [h, w] : std::vector<std::pair<int64_t, int64_t>>{{9, 13}, {16, 10}, {9, 13}}) {
    INFO(h << " x " << w);
    const fs::path here = dir.path / std::to_string(run++);
    fs::create_directories(here);
    const Tensor x = random_tensor({1, 3, h, w}, 72 + h);
    const std::vector<Tensor> want = run_onnx_runtime(path, {{"x", x}}, here / "source");
    REQUIRE(want.size() == 2);
    CHECK(want[1].shape() == Shape{1, 3, 2 * h, 2 * w});
    const TensorMap got = module("default", {{"x", x}});
    expect_close(got.at("skip"), want[0], 1e-5, 1e-4);
    expect_close(got.at("twice"), want[1], 0, 0);
    expect_exported_agrees(spec, here, {{"x", x}}, {"skip", "twice"}, want);
  }
}

TEST_CASE(
    "ONNX import and export: GPT-2's causal mask, a Slice starting at key_length - query_length, agrees with ONNX "
    "Runtime") {
  // HF GPT-2's attention as torch.onnx exports it: bias[:, :, key_length - query_length : key_length,
  // :key_length] with both lengths Gathered from Shape at run time (queries of a later step attend to
  // a longer key cache), the mask applied with Where, then Softmax.
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_causal_mask");
  OnnxBuilder b(13);
  b.input("q", {1, 2, -1, 4});
  b.input("k", {1, 2, -1, 4});
  b.g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_param("query");
  b.g->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_param("key");
  const int64_t positions = 16;
  std::vector<bool> tril;
  for (int64_t i = 0; i < positions; ++i)
    for (int64_t j = 0; j < positions; ++j) tril.push_back(j <= i);
  Tensor bias(DType::kBool, Shape{1, 1, positions, positions});
  for (size_t i = 0; i < tril.size(); ++i) bias.data<bool>()[i] = tril[i];
  b.init("bias", bias);
  b.init("two", Tensor::scalar<int64_t>(2));
  b.init("axis0", Tensor::from_vector<int64_t>({1}, {0}));
  b.init("axis2", Tensor::from_vector<int64_t>({1}, {2}));
  b.init("axis3", Tensor::from_vector<int64_t>({1}, {3}));
  b.init("zero", Tensor::from_vector<int64_t>({1}, {0}));
  b.init("masked", Tensor::scalar<float>(-10000.0f));
  ints_attr(b.node("Transpose", {"k"}, "kt", "/kt"), "perm", {0, 1, 3, 2});
  b.node("MatMul", {"q", "kt"}, "scores", "/scores");
  b.node("Shape", {"q"}, "q_shape", "/q_shape");
  b.node("Shape", {"k"}, "k_shape", "/k_shape");
  b.node("Gather", {"q_shape", "two"}, "query_length", "/query_length");
  b.node("Gather", {"k_shape", "two"}, "key_length", "/key_length");
  b.node("Sub", {"key_length", "query_length"}, "offset", "/offset");
  b.node("Unsqueeze", {"offset", "axis0"}, "start", "/start");
  b.node("Unsqueeze", {"key_length", "axis0"}, "end", "/end");
  b.node("Slice", {"bias", "start", "end", "axis2"}, "rows", "/rows");
  b.node("Slice", {"rows", "zero", "end", "axis3"}, "mask", "/mask");
  b.node("Where", {"mask", "scores", "masked"}, "scores_masked", "/scores_masked");
  int_attr(b.node("Softmax", {"scores_masked"}, "weights", "/weights"), "axis", -1);
  b.output("weights", {1, 2, -1, -1});
  const std::string path = b.save(dir.path, "causal_mask.onnx");
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  Module module(spec);
  int run = 0;
  for (const auto& [query, key] : std::vector<std::pair<int64_t, int64_t>>{{3, 5}, {4, 4}, {1, 7}, {3, 5}}) {
    INFO(query << " queries, " << key << " keys");
    const fs::path here = dir.path / std::to_string(run++);
    fs::create_directories(here);
    const Tensor q = random_tensor({1, 2, query, 4}, 80 + query), k = random_tensor({1, 2, key, 4}, 90 + key);
    const std::vector<Tensor> want = run_onnx_runtime(path, {{"q", q}, {"k", k}}, here / "source");
    REQUIRE(want.size() == 1);
    // Query i sees keys 0 .. key - query + i: the last query sees all, the first only key - query + 1.
    if (query > 1) CHECK(want[0].data<float>()[key - query + 1] == 0.0f);
    CHECK(want[0].data<float>()[key - query] > 0.0f);
    const TensorMap got = module("default", {{"q", q}, {"k", k}});
    expect_close(got.at("weights"), want[0], 1e-6, 1e-5);
    expect_exported_agrees(spec, here, {{"q", q}, {"k", k}}, {"weights"}, want);
  }
}

TEST_CASE(
    "ONNX import and export: RoiAlign (avg and max, both pixel conventions, adaptive sampling) agrees with ONNX "
    "Runtime") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_roi_align");
  OnnxBuilder b(16);
  b.input("x", {2, 3, 10, 12});
  b.input("rois", {5, 4});
  // Regions inside, across the border, degenerate (zero width) and tiny, on both images.
  b.init("batch", Tensor::from_vector<int64_t>({5}, {0, 1, 1, 0, 1}));
  std::vector<std::string> outputs;
  auto str_attr = [](::onnx::NodeProto* n, const char* name, const std::string& value) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(value);
  };
  for (const char* mode : {"avg", "max"})
    for (const char* ctm : {"half_pixel", "output_half_pixel"})
      for (int ratio : {0, 2}) {
        const std::string out = std::string(mode) + "_" + ctm + "_" + std::to_string(ratio);
        auto* n = b.node("RoiAlign", {"x", "rois", "batch"}, out, "/" + out);
        str_attr(n, "mode", mode);
        str_attr(n, "coordinate_transformation_mode", ctm);
        int_attr(n, "output_height", 3);
        int_attr(n, "output_width", 4);
        int_attr(n, "sampling_ratio", ratio);
        auto* a = n->add_attribute();
        a->set_name("spatial_scale");
        a->set_type(::onnx::AttributeProto::FLOAT);
        a->set_f(0.5f);
        b.output(out, {5, 3, 3, 4});
        outputs.push_back(out);
      }
  const std::string path = b.save(dir.path, "roi_align.onnx");
  const Tensor x = random_tensor({2, 3, 10, 12}, 73);
  const Tensor rois = make({5, 4}, {2,  2,  18,   14,    // inside (image coordinates at scale 0.5)
                                    -4, -3, 10,   25,    // across the top-left and bottom edges
                                    6,  4,  6,    16,    // zero width
                                    1,  1,  2.5f, 1.8f,  // smaller than a bin
                                    20, 0,  26,   22});  // past the right edge
  const std::vector<Tensor> want = run_onnx_runtime(path, {{"x", x}, {"rois", rois}}, dir.path / "source");
  REQUIRE(want.size() == outputs.size());
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  const TensorMap got = run_signature(spec, "default", {{"x", x}, {"rois", rois}}, "reference");
  for (size_t i = 0; i < outputs.size(); ++i) {
    INFO(outputs[i]);
    expect_close(got.at(outputs[i]), want[i], 1e-5, 1e-5);
  }
  CHECK(expect_exported_agrees(spec, dir.path, {{"x", x}, {"rois", rois}}, outputs, want).opset_import(0).version() ==
        16);
}

TEST_CASE(
    "ONNX import and export: Expand to dims of several tensors (an attention mask to [batch, 1, target, source])") {
  // BART-style: mask [batch, source] unsqueezed to [batch, 1, 1, source], expanded to
  // Concat(Shape(mask)[0], 1, Shape(q)[2], Shape(mask)[1]) with batch, target and source known at run time.
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_expand_runtime");
  OnnxBuilder b(13);
  b.input("mask", {-1, -1});
  b.input("q", {-1, 2, -1, 4});
  auto* md = b.g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  md->mutable_dim(0)->set_dim_param("batch");
  md->mutable_dim(1)->set_dim_param("source");
  auto* qd = b.g->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape();
  qd->mutable_dim(0)->set_dim_param("batch");
  qd->mutable_dim(2)->set_dim_param("target");
  b.init("axes12", Tensor::from_vector<int64_t>({2}, {1, 2}));
  b.init("i0", Tensor::from_vector<int64_t>({1}, {0}));
  b.init("i1", Tensor::from_vector<int64_t>({1}, {1}));
  b.init("i2", Tensor::from_vector<int64_t>({1}, {2}));
  b.init("one", Tensor::from_vector<int64_t>({1}, {1}));
  b.node("Unsqueeze", {"mask", "axes12"}, "mask4", "/mask4");
  b.node("Shape", {"mask"}, "mask_shape", "/mask_shape");
  b.node("Shape", {"q"}, "q_shape", "/q_shape");
  b.node("Gather", {"mask_shape", "i0"}, "batch", "/batch");
  b.node("Gather", {"q_shape", "i2"}, "target", "/target");
  b.node("Gather", {"mask_shape", "i1"}, "source", "/source");
  int_attr(b.node("Concat", {"batch", "one", "target", "source"}, "shape", "/shape"), "axis", 0);
  b.node("Expand", {"mask4", "shape"}, "expanded", "/expanded");
  b.output("expanded", {-1, 1, -1, -1});
  const std::string path = b.save(dir.path, "expand_runtime.onnx");
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  int broadcasts = 0;
  for (int id = 0; id < spec.graph().num_nodes(); ++id) broadcasts += spec.graph().node(id).op == "BroadcastTo";
  CHECK(broadcasts == 1);  // the shape is several tensors' dims, read at each run
  Module module(spec);
  int run = 0;
  for (const auto& [batch, target, source] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{2, 3, 5}, {1, 4, 2}, {2, 3, 5}}) {
    INFO(batch << " x " << target << " x " << source);
    const fs::path here = dir.path / std::to_string(run++);
    fs::create_directories(here);
    const Tensor mask = random_tensor({batch, source}, 74 + source), q = random_tensor({batch, 2, target, 4}, 75);
    const std::vector<Tensor> want = run_onnx_runtime(path, {{"mask", mask}, {"q", q}}, here / "source");
    REQUIRE(want.size() == 1);
    CHECK(want[0].shape() == Shape{batch, 1, target, source});
    expect_close(module("default", {{"mask", mask}, {"q", q}}).at("expanded"), want[0], 0, 0);
    expect_exported_agrees(spec, here, {{"mask", mask}, {"q", q}}, {"expanded"}, want);
  }
}

TEST_CASE(
    "ONNX import and export: positions past .. past + length - 1 (GPT-2 with a key cache) agree with ONNX Runtime") {
  // position_ids = arange(past_length, past_length + input_length) with both lengths Gathered from
  // Shape at run time, then the position embeddings looked up: Range with a start and a limit linear
  // in run-time dims (DynamicRange's terms).
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_range_past");
  OnnxBuilder b(13);
  b.input("ids_f", {1, -1});
  b.input("past", {1, 2, -1, 4});
  b.g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_param(
      "length");
  b.g->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_param("past");
  b.init("table", random_tensor({16, 3}, 76));
  b.init("i1", Tensor::scalar<int64_t>(1));
  b.init("i2", Tensor::scalar<int64_t>(2));
  b.init("step", Tensor::scalar<int64_t>(1));
  b.init("axis0", Tensor::from_vector<int64_t>({1}, {0}));
  b.node("Shape", {"ids_f"}, "ids_shape", "/ids_shape");
  b.node("Shape", {"past"}, "past_shape", "/past_shape");
  b.node("Gather", {"ids_shape", "i1"}, "length", "/length");
  b.node("Gather", {"past_shape", "i2"}, "past_length", "/past_length");
  b.node("Add", {"length", "past_length"}, "limit", "/limit");
  b.node("Range", {"past_length", "limit", "step"}, "positions", "/positions");
  b.node("Unsqueeze", {"positions", "axis0"}, "position_ids", "/position_ids");
  b.node("Gather", {"table", "position_ids"}, "embedded", "/embedded");
  b.output("embedded", {1, -1, 3});
  const std::string path = b.save(dir.path, "range_past.onnx");
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  Module module(spec);
  int run = 0;
  for (const auto& [length, past] : std::vector<std::pair<int64_t, int64_t>>{{3, 2}, {1, 5}, {4, 0}, {3, 2}}) {
    INFO(length << " tokens after " << past);
    const fs::path here = dir.path / std::to_string(run++);
    fs::create_directories(here);
    const Tensor ids = random_tensor({1, length}, 77), cache = random_tensor({1, 2, past, 4}, 78);
    const std::vector<Tensor> want = run_onnx_runtime(path, {{"ids_f", ids}, {"past", cache}}, here / "source");
    REQUIRE(want.size() == 1);
    // Row k is table row past + k.
    CHECK(want[0].shape() == Shape{1, length, 3});
    const Tensor table = random_tensor({16, 3}, 76);
    for (int j = 0; j < 3; ++j) CHECK(want[0].data<float>()[j] == table.data<float>()[past * 3 + j]);
    expect_close(module("default", {{"ids_f", ids}, {"past", cache}}).at("embedded"), want[0], 0, 0);
    expect_exported_agrees(spec, here, {{"ids_f", ids}, {"past", cache}}, {"embedded"}, want);
  }
}

TEST_CASE(
    "ONNX import and export: TopK of the survivors, K = min(5, their count) computed at run time, agrees with ONNX "
    "Runtime") {
  // A detector's last step: scores above 0.5 kept (NonZero, Gather), then the best min(5, kept) of them
  // (K from Shape of a value-dependent tensor, through Min: a shape value hub computes as a tensor).
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_top_k_runtime");
  OnnxBuilder b(13);
  b.input("scores", {12});
  b.init("half", Tensor::scalar<float>(0.5f));
  b.init("five", Tensor::from_vector<int64_t>({1}, {5}));
  b.init("i0", Tensor::scalar<int64_t>(0));
  b.node("Greater", {"scores", "half"}, "high", "/high");
  b.node("NonZero", {"high"}, "where", "/where");
  b.node("Gather", {"where", "i0"}, "kept_at", "/kept_at");
  b.node("Gather", {"scores", "kept_at"}, "kept", "/kept");
  b.node("Shape", {"kept"}, "count", "/count");
  b.node("Min", {"count", "five"}, "k", "/k");
  auto* top = b.g->add_node();
  top->set_op_type("TopK");
  top->set_name("/top");
  for (const char* in : {"kept", "k"}) top->add_input(in);
  for (const char* out : {"best", "best_at"}) top->add_output(out);
  int_attr(b.node("Cast", {"best_at"}, "best_at_f", "/best_at_f"), "to", ::onnx::TensorProto::FLOAT);
  b.output("best", {-1});
  b.output("best_at_f", {-1});
  const std::string path = b.save(dir.path, "top_k_runtime.onnx");
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  Module module(spec);
  int run = 0;
  for (const float cut : {0.2f, 0.8f}) {  // many survivors (K = 5), then few (K = their count)
    INFO("scores above " << cut);
    const fs::path here = dir.path / std::to_string(run++);
    fs::create_directories(here);
    Tensor scores = random_tensor({12}, 79, 0, 1);
    for (int i = 0; i < 12; ++i) scores.data<float>()[i] = scores.data<float>()[i] * (1 - cut) + cut - 0.3f;
    const std::vector<Tensor> want = run_onnx_runtime(path, {{"scores", scores}}, here / "source");
    REQUIRE(want.size() == 2);
    if (cut > 0.5f)
      CHECK(want[0].num_elements() == 5);  // all 12 survive: K = 5
    else
      CHECK(want[0].num_elements() < 5);  // a few survive: K = their count
    const TensorMap got = module("default", {{"scores", scores}});
    expect_close(got.at("best"), want[0], 0, 0);
    expect_close(got.at("best_at_f"), want[1], 0, 0);
    expect_exported_agrees(spec, here, {{"scores", scores}}, {"best", "best_at_f"}, want);
  }
}

TEST_CASE("ONNX import: a shape value hub cannot compute as a tensor fails only where it is needed") {
  // rows x cols (a product of two run-time dims) used by a run-time op (Neg): unused, the model
  // imports; as a graph output, the import names the value.
  TempDir dir("onnx_shape_product");
  for (const bool used : {false, true}) {
    INFO("used " << used);
    OnnxBuilder b(13);
    b.input("x", {-1, -1});
    b.init("i0", Tensor::from_vector<int64_t>({1}, {0}));
    b.init("i1", Tensor::from_vector<int64_t>({1}, {1}));
    b.node("Shape", {"x"}, "shape", "/shape");
    b.node("Gather", {"shape", "i0"}, "rows", "/rows");
    b.node("Gather", {"shape", "i1"}, "cols", "/cols");
    b.node("Mul", {"rows", "cols"}, "count", "/count");
    b.node("Neg", {"count"}, "negated", "/negated");
    b.node("Relu", {"x"}, "y", "/y");
    b.output("y", {-1, -1});
    if (used) {
      auto* o = b.g->add_output();
      o->set_name("negated");
      o->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
      o->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
    }
    const std::string path = b.save(dir.path, used ? "used.onnx" : "unused.onnx");
    if (!used) {
      const ModuleSpec spec = onnx_interop::import_onnx(path);
      expect_close(run_signature(spec, "default", {{"x", make({1, 2}, {-1, 2})}}, "reference").at("y"),
                   make({1, 2}, {0, 2}));
    } else {
      expect_error(
          Code::kUnimplemented, [&] { onnx_interop::import_onnx(path); },
          "arithmetic other than sums and constant multiples");
    }
  }
}

namespace {

// A graph attribute `name` of `n` holding `sub`'s graph.
void graph_attr(::onnx::NodeProto* n, const std::string& name, const OnnxBuilder& sub) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::GRAPH);
  *a->mutable_g() = *sub.g;
}

}  // namespace

TEST_CASE("ONNX import and export: If on a run-time condition with branches of different sizes; a known one inlined") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_if");
  auto model = [&](bool known) {
    OnnxBuilder b(13);
    b.input("x", {2});
    b.init("zero", Tensor::scalar<float>(0));
    if (known)
      b.init("positive", Tensor::scalar<bool>(false));
    else
      b.node("Greater", {b.node("ReduceSum", {"x"}, "sum")->output(0), "zero"}, "positive");
    OnnxBuilder twice, negated;
    twice.node("Concat", {"x", "x"}, "doubled");
    int_attr(twice.g->mutable_node(0), "axis", 0);
    twice.output("doubled", {4});
    negated.node("Neg", {"x"}, "negated");
    negated.output("negated", {2});
    ::onnx::NodeProto* n = b.node("If", {"positive"}, "y", "/If");
    graph_attr(n, "then_branch", twice);
    graph_attr(n, "else_branch", negated);
    b.output("y", {-1});
    return b.save(dir.path, known ? "known.onnx" : "if.onnx");
  };
  const std::string path = model(false);
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  for (const Tensor& x : {Tensor::floats({1, 2}), Tensor::floats({-1, 0.5f})}) {
    const bool positive = x.data<float>()[0] > 0;
    const fs::path run_dir = dir.path / (positive ? "then" : "else");
    fs::create_directories(run_dir);
    const std::vector<Tensor> want = run_onnx_runtime(path, {{"x", x}}, run_dir / "source");
    REQUIRE(want.size() == 1);
    CHECK(want[0].num_elements() == (positive ? 4 : 2));
    expect_close(run_signature(spec, "default", {{"x", x}}, "reference").at("y"), want[0], 0, 0);
    expect_exported_agrees(spec, run_dir, {{"x", x}}, {"y"}, want);
  }
  // A condition known at import: the branch is imported in the If's place.
  const ModuleSpec known = onnx_interop::import_onnx(model(true));
  for (const Node& node : known.graph().nodes()) CHECK(node.op != "If");
  CHECK(run_signature(known, "default", {{"x", Tensor::floats({3, -4})}}, "reference").at("y").to_vector<float>() ==
        std::vector<float>{-3, 4});
}

TEST_CASE("ONNX import: broken or unsupported subgraphs are refused naming the graph and node") {
  TempDir dir("onnx_subgraphs");
  // y = Loop(3, true, s0) with body (i, c, s) -> (c, s + 1): edited per case.
  auto model = [&](const std::string& file, auto edit) {
    OnnxBuilder b(13);
    b.input("x", {1, 2, 4, 4});
    b.init("trips", Tensor::scalar<int64_t>(3));
    b.init("go", Tensor::scalar<bool>(true));
    b.init("one", Tensor::scalar<float>(1));
    b.init("w", random_tensor({2, 2, 3, 3}, 3));
    OnnxBuilder body;
    body.input("i", {}, ::onnx::TensorProto::INT64);
    body.input("c", {}, ::onnx::TensorProto::BOOL);
    body.input("s", {1, 2, 4, 4});
    body.node("Add", {"s", "one"}, "s_next", "/body/Add");
    body.node("Identity", {"c"}, "c_next", "/body/Identity");
    body.g->add_output()->set_name("c_next");
    body.output("s_next", {1, 2, 4, 4});
    edit(body);
    graph_attr(b.node("Loop", {"trips", "go", "x"}, "y", "/Loop"), "body", body);
    b.output("y", {1, 2, 4, 4});
    return b.save(dir.path, file);
  };
  const ModuleSpec good = onnx_interop::import_onnx(model("good.onnx", [](OnnxBuilder&) {}));
  Tensor x = random_tensor({1, 2, 4, 4}, 4);
  Tensor y = run_signature(good, "default", {{"x", x}}, "reference").at("y");
  for (int64_t e = 0; e < x.num_elements(); ++e) CHECK(y.data<float>()[e] == doctest::Approx(x.data<float>()[e] + 3));
  expect_error(
      Code::kInvalidArgument,
      [&] {
        onnx_interop::import_onnx(
            model("ghost.onnx", [](OnnxBuilder& body) { body.g->mutable_node(0)->set_input(1, "ghost"); }));
      },
      "node 0 '/Loop' (Loop) attribute body: node 0 '/body/Add' (Add): input 'ghost' is defined by no earlier node");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        onnx_interop::import_onnx(
            model("shadow.onnx", [](OnnxBuilder& body) { body.g->mutable_node(0)->set_output(0, "one"); }));
      },
      "output 'one' is already defined");
  expect_error(
      Code::kUnimplemented,
      [&] {
        onnx_interop::import_onnx(model("conv.onnx", [](OnnxBuilder& body) {
          body.g->mutable_node(0)->set_op_type("Conv");
          body.g->mutable_node(0)->set_input(1, "w");
        }));
      },
      "inside a subgraph, a convolution needs kernel_shape unless its weights are the subgraph's own constants");
  // With its kernel_shape, the convolution runs in the body (its weights a constant there).
  const ModuleSpec conv = onnx_interop::import_onnx(model("conv_kernel.onnx", [](OnnxBuilder& body) {
    body.g->mutable_node(0)->set_op_type("Conv");
    body.g->mutable_node(0)->set_input(1, "w");
    ints_attr(body.g->mutable_node(0), "kernel_shape", {3, 3});
    ints_attr(body.g->mutable_node(0), "pads", {1, 1, 1, 1});
  }));
  CHECK(run_signature(conv, "default", {{"x", x}}, "reference").at("y").shape() == Shape{1, 2, 4, 4});
  CHECK(conv.variables().empty());
}

TEST_CASE("ONNX import and export: Slice bounds computed at run time, and on a dim known only at run time") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_run_time_slice");
  OnnxBuilder b(13);
  b.input("x", {-1, 6});  // batch known only at run time
  // from = argmax of row 0 (an int64 [1]); y = x[:, from : from + 2]; z = x[:-1, ::-2].
  b.init("zero", Tensor::from_vector<int64_t>({1}, {0}));
  b.init("one", Tensor::from_vector<int64_t>({1}, {1}));
  b.init("two", Tensor::from_vector<int64_t>({1}, {2}));
  b.init("minus_one", Tensor::from_vector<int64_t>({1}, {-1}));
  b.init("end", Tensor::from_vector<int64_t>({1}, {std::numeric_limits<int64_t>::min()}));
  b.init("minus_two", Tensor::from_vector<int64_t>({1}, {-2}));
  b.node("Slice", {"x", "zero", "one", "zero"}, "row0", "/row0");
  ::onnx::NodeProto* argmax = b.node("ArgMax", {"row0"}, "from2d", "/argmax");
  int_attr(argmax, "axis", 1);
  b.node("Reshape", {"from2d", "minus_one"}, "from", "/from");
  b.node("Add", {"from", "two"}, "to", "/to");
  b.node("Slice", {"x", "from", "to", "one"}, "y", "/y");
  b.node("Slice", {"x", "zero", "minus_one", "zero"}, "rows", "/rows");
  b.init("last", Tensor::from_vector<int64_t>({1}, {-1}));
  b.node("Slice", {"rows", "last", "end", "one", "minus_two"}, "z", "/z");
  b.output("y", {-1, -1});
  b.output("z", {-1, 3});
  const std::string path = b.save(dir.path, "slice.onnx");
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  int run = 0;
  for (const Tensor& x : {random_tensor({3, 6}, 70), random_tensor({5, 6}, 71)}) {
    const fs::path run_dir = dir.path / std::to_string(run++);
    fs::create_directories(run_dir);
    const std::vector<Tensor> want = run_onnx_runtime(path, {{"x", x}}, run_dir / "source");
    REQUIRE(want.size() == 2);
    CHECK(want[1].shape() == Shape{x.shape()[0] - 1, 3});
    const TensorMap got = run_signature(spec, "default", {{"x", x}}, "reference");
    expect_close(got.at("y"), want[0], 0, 0);
    expect_close(got.at("z"), want[1], 0, 0);
    expect_exported_agrees(spec, run_dir, {{"x", x}}, {"y", "z"}, want);
  }
}

TEST_CASE(
    "ONNX import and export: Scan over two sequences (one reversed, on another axis), scan outputs reversed and "
    "moved, a value read from around it, agrees with ONNX Runtime") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_scan");
  OnnxBuilder b(16);
  b.input("x", {3, -1});  // steps along axis 1, known only at run time
  b.input("y", {-1, 3});  // steps along axis 0
  b.init("s0", Tensor::floats({0, 1, -1}));
  b.node("ReduceMean", {"x"}, "w", "/w");
  ints_attr(b.g->mutable_node(0), "axes", {1});
  int_attr(b.g->mutable_node(0), "keepdims", 0);
  // body(s, a, c) -> (s + a * c + w, the new state scanned, a - c)
  OnnxBuilder body(16);
  body.input("s", {3});
  body.input("a", {3});
  body.input("c", {3});
  body.node("Mul", {"a", "c"}, "ac", "/body/mul");
  body.node("Add", {"s", "ac"}, "sac", "/body/add");
  body.node("Add", {"sac", "w"}, "s_next", "/body/add_w");
  body.node("Identity", {"s_next"}, "scanned", "/body/scanned");
  body.node("Sub", {"a", "c"}, "diff", "/body/sub");
  body.output("s_next", {3});
  body.output("scanned", {3});
  body.output("diff", {3});
  ::onnx::NodeProto* scan = b.node("Scan", {"s0", "x", "y"}, "final", "/Scan");
  scan->add_output("states");
  scan->add_output("diffs");
  graph_attr(scan, "body", body);
  int_attr(scan, "num_scan_inputs", 2);
  ints_attr(scan, "scan_input_axes", {1, 0});
  ints_attr(scan, "scan_input_directions", {1, 0});
  ints_attr(scan, "scan_output_axes", {1, 0});
  ints_attr(scan, "scan_output_directions", {1, 0});
  b.output("final", {3});
  b.output("states", {3, -1});
  b.output("diffs", {-1, 3});
  const std::string path = b.save(dir.path, "scan.onnx");
  const ModuleSpec spec = onnx_interop::import_onnx(path);
  int run = 0;
  for (int64_t steps : {5, 2}) {
    const fs::path run_dir = dir.path / std::to_string(run++);
    fs::create_directories(run_dir);
    const Tensor x = random_tensor({3, steps}, 80 + run), y = random_tensor({steps, 3}, 90 + run);
    const std::vector<Tensor> want = run_onnx_runtime(path, {{"x", x}, {"y", y}}, run_dir / "source");
    REQUIRE(want.size() == 3);
    CHECK(want[1].shape() == Shape{3, steps});
    const TensorMap got = run_signature(spec, "default", {{"x", x}, {"y", y}}, "reference");
    expect_close(got.at("final"), want[0], 1e-6, 1e-5);
    expect_close(got.at("states"), want[1], 1e-6, 1e-5);
    expect_close(got.at("diffs"), want[2], 0, 0);
    expect_exported_agrees(spec, run_dir, {{"x", x}, {"y", y}}, {"final", "states", "diffs"}, want);
  }
}

TEST_CASE("ONNX import: nested loops whose carried shapes relax are bounded, not exponential") {
  // Each level's body grows its carried sequence by one and appends what the next level's Loop makes
  // from an empty sequence: each import of a body imports the next level's twice (its carried shape
  // relaxes from the empty one's), so n levels take 2^n imports; 13 levels exceed the bound
  // (interop::kMaxSubgraphImports) and are refused, 3 levels import and run.
  TempDir dir("onnx_nested_loops");
  std::function<OnnxBuilder(int)> body = [&](int level) {
    const std::string l = std::to_string(level);
    OnnxBuilder b(13);
    b.input("i" + l, {}, ::onnx::TensorProto::INT64);
    b.input("c" + l, {}, ::onnx::TensorProto::BOOL);
    b.input("seq" + l, {0});
    b.node("Identity", {"c" + l}, "c_out" + l, "/c" + l);
    int_attr(b.node("Concat", {"seq" + l, "one"}, "grown" + l, "/grow" + l), "axis", 0);
    std::string out = "grown" + l;
    if (level > 0) {
      graph_attr(b.node("Loop", {"trips", "", "empty"}, "inner" + l, "/loop" + l), "body", body(level - 1));
      int_attr(b.node("Concat", {"grown" + l, "inner" + l}, "joined" + l, "/join" + l), "axis", 0);
      out = "joined" + l;
    }
    b.g->add_output()->set_name("c_out" + l);
    b.output(out, {-1});
    return b;
  };
  auto model = [&](int levels) {
    OnnxBuilder b(13);
    b.input("x", {1});
    b.init("trips", Tensor::scalar<int64_t>(1));
    b.init("one", Tensor::floats({1}));
    b.init("empty", make({0}, {}));
    graph_attr(b.node("Loop", {"trips", "", "empty"}, "y", "/Loop"), "body", body(levels - 1));
    b.node("Add", {"y", "x"}, "z", "/add");
    b.output("z", {-1});
    return b.save(dir.path, std::to_string(levels) + ".onnx");
  };
  const ModuleSpec three = onnx_interop::import_onnx(model(3));
  CHECK(run_signature(three, "default", {{"x", Tensor::floats({2})}}, "reference").at("z").to_vector<float>() ==
        std::vector<float>{3, 3, 3});
  expect_error(
      Code::kResourceExhausted, [&] { onnx_interop::import_onnx(model(13)); }, "subgraph imports");
}

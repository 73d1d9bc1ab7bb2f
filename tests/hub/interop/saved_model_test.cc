// hub/interop/tf/saved_model: SavedModels built by hand through TensorFlow's
// schemas (tf_testutil.h) import as hub modules. A dense layer with
// hand-computed outputs in three forms TensorFlow writes: TF1 reference
// variables (VariableV2 + Identity, a saver that stores a variable under
// another key), TF1 resource variables (VarHandleOp + ReadVariableOp), and
// a TensorFlow 2 export (signature and restore logic in library functions,
// object-graph checkpoint keys). A small CNN against the same network built
// with hub's ops; shape arithmetic (Shape -> StridedSlice -> Pack ->
// Reshape) with an unknown batch; StridedSlice masks and Split by hand;
// trainability; TF Hub modules (tag sets {} and {train}, image size from
// image_module_info or the signature). Bad files: a cycle, an input naming
// no node, a truncated saved_model.pb, a damaged bundle, a missing variable,
// an unsupported op, attribute and dtype: each a clear error.
#include "hub/interop/tf/saved_model.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "hub/core/fileio.h"
#include "hub/graph/session.h"
#include "hub/interop/tf/proto/tfhub_module.pb.h"
#include "hub/interop/tf/proto/variable.pb.h"
#include "hub/ops/activation.h"
#include "hub/ops/array.h"
#include "hub/ops/batch_norm.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/matmul.h"
#include "hub/ops/pool.h"
#include "hub/ops/reduction.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"
#include "testutil.h"
#include "tf_testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

const Tensor kX = make({2, 2}, {1, 2, -3, 0.5f});
const Tensor kW = make({2, 3}, {1, 0, -1, 2, 1, 0.5f});
const Tensor kB = Tensor::floats({0.5f, -1, 0});
// relu(x w + b), worked by hand.
const Tensor kY = make({2, 3}, {5.5f, 1, 0, 0, 0, 3.25f});

// A SavedModel's one meta graph, tagged serve.
tfp::MetaGraphDef* serving_meta_graph(tfp::SavedModel& sm) {
  sm.set_saved_model_schema_version(1);
  tfp::MetaGraphDef* mg = sm.add_meta_graphs();
  mg->mutable_meta_info_def()->add_tags("serve");
  return mg;
}

// A TF1 serving SavedModel of relu(x w + b); the bias is saved under the key
// "renamed/bias", which only the saver's restore ops tell.
tfp::SavedModel dense_tf1(bool resource) {
  tfp::SavedModel sm;
  tfp::MetaGraphDef* mg = serving_meta_graph(sm);
  mg->mutable_meta_info_def()->set_tensorflow_version("1.15.5");
  TfGraph g(mg->mutable_graph_def());
  g.placeholder("x", {-1, 2});
  std::string w = resource ? g.resource_variable("dense/kernel", {2, 3}) : g.variable_v2("dense/kernel", {2, 3});
  std::string b = resource ? g.resource_variable("dense/bias", {3}) : g.variable_v2("dense/bias", {3});
  auto& mm = g.op("dense/MatMul", "MatMul", {"x", w});
  attr_bool(mm, "transpose_a", false);
  attr_bool(mm, "transpose_b", false);
  auto& ba = g.op("dense/BiasAdd", "BiasAdd", {"dense/MatMul", b});
  attr_string(ba, "data_format", "NHWC");
  g.op("out", "Relu", {"dense/BiasAdd"});
  // Initializers and a training op that import never reaches.
  g.op("unused/RandomUniform", "RandomUniform", {"x"});
  *mg->mutable_saver_def() = g.saver({{"dense/kernel", "dense/kernel"}, {"dense/bias", "renamed/bias"}});
  (*mg->mutable_signature_def())["serving_default"] =
      tf_signature({{"x", {"x:0", DType::kFloat32, {-1, 2}}}}, {{"y", {"out:0", DType::kFloat32, {-1, 3}}}});
  return sm;
}

Tensor run_sig(const ModuleSpec& spec, const std::string& signature, const std::string& input, const Tensor& x,
               const std::string& output, const TagSet& tags = {}) {
  Module m(spec, tags);
  return m(signature, {{input, x}}).at(output);
}

// The tensor at `name` of a GraphDef's Const node, for building graphs.
Tensor arange(const Shape& shape, float scale, float offset) {
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = scale * static_cast<float>((i * 7) % 11) + offset;
  return t;
}

}  // namespace

TEST_CASE("TF1 SavedModel with reference variables: signatures, tags, saver keys") {
  TempDir dir("saved_model");
  write_saved_model(dir / "m", dense_tf1(false), {{"dense/kernel", kW}, {"renamed/bias", kB}});
  ModuleSpec spec = tf::import_saved_model(dir / "m");
  REQUIRE(spec.tag_sets() == std::vector<TagSet>{TagSet{}});  // {"serve"} is hub's inference set
  CHECK(spec.signature_names() == std::vector<std::string>{"default", "serving_default"});
  CHECK(spec.input_info().at("x").shape == Shape{kUnknownDim, 2});
  expect_close(run_sig(spec, "serving_default", "x", kX, "y"), kY);
  expect_close(run_sig(spec, "default", "x", kX, "y"), kY);
  // Variables keep TensorFlow's names; without a trainable_variables
  // collection every float variable not feeding batch-norm statistics is trainable.
  REQUIRE(spec.variables().size() == 2);
  CHECK(spec.variables()[0].name == "dense/bias");
  CHECK(spec.variables()[0].trainable);
  expect_close(spec.weights().at("dense/bias"), kB);
  CHECK(std::get<std::string>(spec.attached().at("source_format")) == "tf_saved_model");
  CHECK(std::get<std::string>(spec.attached().at("source_producer")) == "TensorFlow 1.15.5");
  CHECK(std::get<std::string>(spec.attached().at("source_sha256")).size() == 64);
}

TEST_CASE("TF1 SavedModel with resource variables and a trainable_variables collection") {
  TempDir dir("saved_model");
  tfp::SavedModel sm = dense_tf1(true);
  tfp::VariableDef vd;
  vd.set_variable_name("dense/kernel:0");
  (*sm.mutable_meta_graphs(0)->mutable_collection_def())["trainable_variables"].mutable_bytes_list()->add_value(
      vd.SerializeAsString());
  write_saved_model(dir / "m", sm, {{"dense/kernel", kW}, {"renamed/bias", kB}});
  ModuleSpec spec = tf::import_saved_model(dir / "m");
  expect_close(run_sig(spec, "default", "x", kX, "y"), kY);
  CHECK(spec.variables()[1].name == "dense/kernel");
  CHECK(spec.variables()[1].trainable);
  CHECK_FALSE(spec.variables()[0].trainable);  // not in the collection
}

TEST_CASE("TensorFlow 2 SavedModel: signatures and restore in functions, object-graph keys") {
  tfp::SavedModel sm;
  tfp::MetaGraphDef* mg = serving_meta_graph(sm);
  TfGraph g(mg->mutable_graph_def());
  for (const char* v : {"dense/kernel", "dense/bias"}) {
    auto& h = g.add(v, "VarHandleOp");
    attr_type(h, "dtype", kTfFloat);
    attr_shape(h, "shape", std::string(v) == "dense/kernel" ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{3});
    attr_string(h, "shared_name", v);
  }
  g.placeholder("serving_default_x", {-1, 2});
  auto& call =
      g.add("StatefulPartitionedCall", "StatefulPartitionedCall", {"serving_default_x", "dense/kernel", "dense/bias"});
  (*call.mutable_attr())["f"].mutable_func()->set_name("__inference_signature_wrapper_10");
  g.placeholder("saver_filename", {}, kTfString);
  auto& restore =
      g.add("StatefulPartitionedCall_2", "StatefulPartitionedCall", {"saver_filename", "dense/kernel", "dense/bias"});
  (*restore.mutable_attr())["f"].mutable_func()->set_name("__inference__traced_restore_30");
  auto* lib = mg->mutable_graph_def()->mutable_library();
  auto arg = [](tfp::OpDef* sig, const std::string& name, bool out) {
    auto* a = out ? sig->add_output_arg() : sig->add_input_arg();
    a->set_name(name);
    a->set_type(tfp::DT_FLOAT);
  };
  {  // The signature wrapper calls the model's function.
    tfp::FunctionDef* f = lib->add_function();
    f->mutable_signature()->set_name("__inference_signature_wrapper_10");
    for (const char* a : {"x", "unknown", "unknown_0"}) arg(f->mutable_signature(), a, false);
    arg(f->mutable_signature(), "identity", true);
    tfp::NodeDef* n = f->add_node_def();
    n->set_name("StatefulPartitionedCall");
    n->set_op("StatefulPartitionedCall");
    for (const char* a : {"x", "unknown", "unknown_0"}) n->add_input(a);
    (*n->mutable_attr())["f"].mutable_func()->set_name("__inference_call_5");
    tfp::NodeDef* id = f->add_node_def();
    id->set_name("Identity");
    id->set_op("Identity");
    id->add_input("StatefulPartitionedCall:output:0");
    id->add_input("^StatefulPartitionedCall");
    attr_type(*id, "T", kTfFloat);
    (*f->mutable_ret())["identity"] = "Identity:output:0";
  }
  {  // The model: ReadVariableOp of resource arguments.
    tfp::FunctionDef* f = lib->add_function();
    f->mutable_signature()->set_name("__inference_call_5");
    for (const char* a : {"inputs", "matmul_readvariableop_resource", "biasadd_readvariableop_resource"})
      arg(f->mutable_signature(), a, false);
    arg(f->mutable_signature(), "identity", true);
    auto node = [&](const std::string& name, const std::string& op, std::vector<std::string> in) -> tfp::NodeDef& {
      tfp::NodeDef* n = f->add_node_def();
      n->set_name(name);
      n->set_op(op);
      for (auto& i : in) n->add_input(i);
      return *n;
    };
    attr_type(node("MatMul/ReadVariableOp", "ReadVariableOp", {"matmul_readvariableop_resource"}), "dtype", kTfFloat);
    attr_type(node("MatMul", "MatMul", {"inputs", "MatMul/ReadVariableOp:value:0"}), "T", kTfFloat);
    attr_type(node("BiasAdd/ReadVariableOp", "ReadVariableOp", {"biasadd_readvariableop_resource"}), "dtype", kTfFloat);
    attr_type(node("BiasAdd", "BiasAdd", {"MatMul:product:0", "BiasAdd/ReadVariableOp:value:0"}), "T", kTfFloat);
    attr_type(node("Relu", "Relu", {"BiasAdd:output:0"}), "T", kTfFloat);
    node("NoOp", "NoOp", {"^BiasAdd/ReadVariableOp", "^MatMul/ReadVariableOp"});
    attr_type(node("Identity", "Identity", {"Relu:activations:0", "^NoOp"}), "T", kTfFloat);
    (*f->mutable_ret())["identity"] = "Identity:output:0";
  }
  {  // The restore function: RestoreV2 -> Identity -> AssignVariableOp.
    tfp::FunctionDef* f = lib->add_function();
    f->mutable_signature()->set_name("__inference__traced_restore_30");
    for (const char* a : {"file_prefix", "assignvariableop_resource", "assignvariableop_1_resource"})
      arg(f->mutable_signature(), a, false);
    arg(f->mutable_signature(), "identity_3", true);
    tfp::GraphDef scratch;
    TfGraph consts(&scratch);
    consts.strings("RestoreV2/tensor_names",
                   {"layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE",
                    "layer_with_weights-0/bias/.ATTRIBUTES/VARIABLE_VALUE", "_CHECKPOINTABLE_OBJECT_GRAPH"});
    consts.strings("RestoreV2/shape_and_slices", {"", "", ""});
    for (const auto& n : scratch.node()) *f->add_node_def() = n;
    auto node = [&](const std::string& name, const std::string& op, std::vector<std::string> in) -> tfp::NodeDef& {
      tfp::NodeDef* n = f->add_node_def();
      n->set_name(name);
      n->set_op(op);
      for (auto& i : in) n->add_input(i);
      return *n;
    };
    node("RestoreV2", "RestoreV2",
         {"file_prefix", "RestoreV2/tensor_names:output:0", "RestoreV2/shape_and_slices:output:0"});
    attr_type(node("Identity", "Identity", {"RestoreV2:tensors:0"}), "T", kTfFloat);
    attr_type(node("AssignVariableOp", "AssignVariableOp", {"assignvariableop_resource", "Identity:output:0"}), "dtype",
              kTfFloat);
    attr_type(node("Identity_1", "Identity", {"RestoreV2:tensors:1"}), "T", kTfFloat);
    attr_type(node("AssignVariableOp_1", "AssignVariableOp", {"assignvariableop_1_resource", "Identity_1:output:0"}),
              "dtype", kTfFloat);
    node("NoOp", "NoOp", {"^AssignVariableOp", "^AssignVariableOp_1"});
    attr_type(node("Identity_3", "Identity", {"file_prefix", "^NoOp"}), "T", kTfString);
    (*f->mutable_ret())["identity_3"] = "Identity_3:output:0";
  }
  (*mg->mutable_signature_def())["serving_default"] =
      tf_signature({{"x", {"serving_default_x:0", DType::kFloat32, {-1, 2}}}},
                   {{"output_0", {"StatefulPartitionedCall:0", DType::kFloat32, {-1, 3}}}});
  (*mg->mutable_signature_def())["__saved_model_init_op"] =
      tf_signature({}, {{"__saved_model_init_op", {"NoOp", DType::kFloat32, {}}}});
  mg->mutable_saver_def()->set_restore_op_name("StatefulPartitionedCall_2");
  // A call that cannot be inlined matters only when an output needs it.
  auto& missing = g.add("StatefulPartitionedCall_9", "StatefulPartitionedCall", {"serving_default_x"});
  (*missing.mutable_attr())["f"].mutable_func()->set_name("__inference_missing_7");
  {  // So does one of a function that calls itself (it nests past the limit).
    tfp::FunctionDef* f = lib->add_function();
    f->mutable_signature()->set_name("__inference_loop_8");
    arg(f->mutable_signature(), "x", false);
    arg(f->mutable_signature(), "y", true);
    tfp::NodeDef* again = f->add_node_def();
    again->set_name("again");
    again->set_op("StatefulPartitionedCall");
    again->add_input("x");
    (*again->mutable_attr())["f"].mutable_func()->set_name("__inference_loop_8");
    (*f->mutable_ret())["y"] = "again:output:0";
  }
  auto& loop = g.add("StatefulPartitionedCall_10", "StatefulPartitionedCall", {"serving_default_x"});
  (*loop.mutable_attr())["f"].mutable_func()->set_name("__inference_loop_8");

  TempDir dir("saved_model");
  const std::map<std::string, Tensor> vars = {{"layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE", kW},
                                              {"layer_with_weights-0/bias/.ATTRIBUTES/VARIABLE_VALUE", kB}};
  write_saved_model(dir / "m", sm, vars);
  ModuleSpec spec = tf::import_saved_model(dir / "m");
  CHECK(spec.signature_names() == std::vector<std::string>{"default", "serving_default"});
  expect_close(run_sig(spec, "serving_default", "x", kX, "output_0"), kY);
  expect_close(spec.weights().at("dense/kernel"), kW);

  (*mg->mutable_signature_def())["broken"] =
      tf_signature({{"x", {"serving_default_x:0", DType::kFloat32, {-1, 2}}}},
                   {{"y", {"StatefulPartitionedCall_9:0", DType::kFloat32, {-1, 3}}}});
  write_saved_model(dir / "n", sm, vars);
  expect_error(
      Code::kInvalidArgument, [&] { tf::import_saved_model(dir / "n"); },
      "node 'StatefulPartitionedCall_9' (StatefulPartitionedCall) calls '__inference_missing_7', "
      "which the function library lacks (the outputs need this call)");
  (*mg->mutable_signature_def())["broken"] =
      tf_signature({{"x", {"serving_default_x:0", DType::kFloat32, {-1, 2}}}},
                   {{"y", {"StatefulPartitionedCall_10:0", DType::kFloat32, {-1, 3}}}});
  write_saved_model(dir / "o", sm, vars);
  expect_error(
      Code::kInvalidArgument, [&] { tf::import_saved_model(dir / "o"); },
      "function calls nest deeper than 32 (the outputs need this call)");
}

TEST_CASE("a small CNN imports as the same network built with hub's ops") {
  // x [?,6,6,2] -> Conv2D 3x3 SAME stride 2 -> BiasAdd -> FusedBatchNormV3
  // (inference) -> Relu6 -> DepthwiseConv2dNative 2x2 VALID -> MaxPool 2x2
  // SAME -> Mean over H, W -> Reshape(Pack(StridedSlice(Shape), -1)) ->
  // MatMul -> Softmax.
  const Tensor w1 = arange({3, 3, 2, 4}, 0.1f, -0.5f), b1 = arange({4}, 0.2f, -0.3f);
  const Tensor gamma = arange({4}, 0.05f, 0.8f), beta = arange({4}, 0.1f, -0.2f), mean = arange({4}, 0.03f, -0.1f),
               var = arange({4}, 0.07f, 0.5f);
  const Tensor w2 = arange({2, 2, 4, 1}, -0.08f, 0.4f), w3 = arange({4, 3}, 0.09f, -0.4f);
  tfp::SavedModel sm;
  tfp::MetaGraphDef* mg = sm.add_meta_graphs();
  TfGraph g(mg->mutable_graph_def());
  g.placeholder("images", {-1, 6, 6, 2});
  g.constant("w1", w1);
  auto& conv = g.op("conv", "Conv2D", {"images", "w1"});
  attr_ints(conv, "strides", {1, 2, 2, 1});
  attr_string(conv, "padding", "SAME");  // data_format, dilations: stripped defaults
  g.constant("b1", b1);
  g.op("bias", "BiasAdd", {"conv", "b1"});
  g.constant("gamma", gamma);
  g.constant("beta", beta);
  std::string m = g.variable_v2("bn/moving_mean", {4}), v = g.variable_v2("bn/moving_variance", {4});
  auto& bn = g.op("bn", "FusedBatchNormV3", {"bias", "gamma", "beta", m, v});
  attr_type(bn, "U", kTfFloat);
  attr_float(bn, "epsilon", 0.001f);
  attr_bool(bn, "is_training", false);
  g.op("relu6", "Relu6", {"bn"});
  g.constant("w2", w2);
  auto& dw = g.op("dw", "DepthwiseConv2dNative", {"relu6", "w2"});
  attr_ints(dw, "strides", {1, 1, 1, 1});
  attr_string(dw, "padding", "VALID");
  auto& pool = g.op("pool", "MaxPool", {"dw"});
  attr_ints(pool, "ksize", {1, 2, 2, 1});
  attr_ints(pool, "strides", {1, 2, 2, 1});
  attr_string(pool, "padding", "SAME");
  g.constant("axes", Tensor::from_vector<int32_t>({2}, {1, 2}));
  auto& mean_node = g.op("gap", "Mean", {"pool", "axes"});
  attr_bool(mean_node, "keep_dims", true);
  attr_type(mean_node, "Tidx", kTfInt32);
  // Flatten as Keras writes it: Reshape(x, Pack(Shape(x)[0], -1)).
  attr_type(g.op("flat/Shape", "Shape", {"gap"}), "out_type", kTfInt32);
  g.constant("flat/begin", Tensor::from_vector<int32_t>({1}, {0}));
  g.constant("flat/end", Tensor::from_vector<int32_t>({1}, {1}));
  g.constant("flat/strides", Tensor::from_vector<int32_t>({1}, {1}));
  auto& ss = g.add("flat/strided_slice", "StridedSlice", {"flat/Shape", "flat/begin", "flat/end", "flat/strides"});
  attr_type(ss, "T", kTfInt32);
  attr_type(ss, "Index", kTfInt32);
  attr_int(ss, "shrink_axis_mask", 1);
  g.constant("flat/minus_one", Tensor::scalar<int32_t>(-1));
  auto& pack = g.add("flat/shape", "Pack", {"flat/strided_slice", "flat/minus_one"});
  attr_type(pack, "T", kTfInt32);
  attr_int(pack, "N", 2);
  auto& reshape = g.op("flat", "Reshape", {"gap", "flat/shape"});
  attr_type(reshape, "Tshape", kTfInt32);
  g.constant("w3", w3);
  g.op("logits", "MatMul", {"flat", "w3"});
  g.op("probs", "Softmax", {"logits"});
  (*mg->mutable_signature_def())["default"] = tf_signature({{"images", {"images:0", DType::kFloat32, {-1, 6, 6, 2}}}},
                                                           {{"default", {"probs:0", DType::kFloat32, {-1, 3}}}});
  TempDir dir("saved_model");
  write_saved_model(dir / "m", sm, {{"bn/moving_mean", mean}, {"bn/moving_variance", var}});
  ModuleSpec spec = tf::import_saved_model(dir / "m");
  // The graph's variables, batch-norm statistics not trainable; its Consts
  // stay constants.
  REQUIRE(spec.variables().size() == 2);
  CHECK_FALSE(spec.variables()[0].trainable);
  CHECK_FALSE(spec.variables()[1].trainable);

  Graph ref;
  Scope s(ref);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 6, 6, 2}, "x");
  ops::ConvOptions co;
  co.strides = {2, 2};
  Output y = ops::conv2d(s, x, ops::constant(s, w1, "w1"), co);
  y = ops::bias_add(s, y, ops::constant(s, b1, "b1"));
  y = ops::fused_batch_norm(s, y, ops::constant(s, gamma, "g"), ops::constant(s, beta, "b"),
                            ops::constant(s, mean, "m"), ops::constant(s, var, "v"), 0.001f, false)[0];
  y = ops::relu6(s, y);
  ops::ConvOptions valid;
  valid.padding = "VALID";
  y = ops::depthwise_conv2d(s, y, ops::constant(s, w2, "w2"), valid);
  y = ops::max_pool(s, y, {2, 2}, {2, 2}, "SAME");
  y = ops::mean(s, y, {1, 2});
  y = ops::softmax(s, ops::matmul(s, y, ops::constant(s, w3, "w3")));
  const Tensor images = arange({3, 6, 6, 2}, 0.13f, -0.6f);
  Session session(ref, nullptr);
  Tensor want = session.run({{x, images}}, {y})[0];
  expect_close(run_sig(spec, "default", "images", images, "default"), want, 1e-6, 1e-5);
}

TEST_CASE("a frozen SavedModel (no variables): Consts used as weights become variables") {
  tfp::SavedModel sm;
  tfp::MetaGraphDef* mg = sm.add_meta_graphs();
  TfGraph g(mg->mutable_graph_def());
  g.placeholder("x", {-1, 2});
  g.constant("dense/kernel", kW);
  g.constant("dense/bias", kB);
  g.op("dense/MatMul", "MatMul", {"x", "dense/kernel"});
  g.op("dense/BiasAdd", "BiasAdd", {"dense/MatMul", "dense/bias"});
  g.op("out", "Relu", {"dense/BiasAdd"});
  (*mg->mutable_signature_def())["default"] =
      tf_signature({{"x", {"x:0", DType::kFloat32, {-1, 2}}}}, {{"y", {"out:0", DType::kFloat32, {-1, 3}}}});
  TempDir dir("saved_model");
  write_saved_model(dir / "m", sm, {});
  ModuleSpec spec = tf::import_saved_model(dir / "m");
  expect_close(run_sig(spec, "default", "x", kX, "y"), kY);
  REQUIRE(spec.variables().size() == 2);
  CHECK(spec.variables()[1].name == "dense/kernel");
  CHECK(spec.variables()[1].trainable);
  expect_close(spec.weights().at("dense/kernel"), kW);
}

TEST_CASE("StridedSlice masks, Split and Slice, worked by hand") {
  // x [2, 3, 4] = 0..23. a = x[:, 1, ::1] (shrink axis 1) -> [2, 4];
  // b = x[..., tf.newaxis, 1:3] (ellipsis, new axis) -> [2, 3, 1, 2];
  // Split(axis 2, 2) of x -> [2,3,2] twice; Slice(x, [1,0,2], [1,-1,2]).
  Tensor x(DType::kFloat32, {2, 3, 4});
  for (int i = 0; i < 24; ++i) x.data<float>()[i] = static_cast<float>(i);
  tfp::SavedModel sm;
  tfp::MetaGraphDef* mg = sm.add_meta_graphs();
  TfGraph g(mg->mutable_graph_def());
  g.placeholder("x", {2, 3, 4});
  auto ints = [&](const std::string& name, std::vector<int32_t> v) {
    return g.constant(name, Tensor::from_vector<int32_t>({static_cast<int64_t>(v.size())}, v));
  };
  auto& a = g.add("a", "StridedSlice", {"x", ints("a/b", {0, 1, 0}), ints("a/e", {0, 2, 0}), ints("a/s", {1, 1, 1})});
  attr_type(a, "T", kTfFloat);
  attr_type(a, "Index", kTfInt32);
  attr_int(a, "begin_mask", 5);
  attr_int(a, "end_mask", 5);
  attr_int(a, "shrink_axis_mask", 2);
  auto& b = g.add("b", "StridedSlice", {"x", ints("b/b", {0, 0, 1}), ints("b/e", {0, 0, 3}), ints("b/s", {1, 1, 1})});
  attr_type(b, "T", kTfFloat);
  attr_type(b, "Index", kTfInt32);
  attr_int(b, "ellipsis_mask", 1);
  attr_int(b, "new_axis_mask", 2);
  g.constant("axis", Tensor::scalar<int32_t>(2));
  auto& split = g.op("split", "Split", {"axis", "x"});
  attr_int(split, "num_split", 2);
  auto& slice = g.op("slice", "Slice", {"x", ints("slice/b", {1, 0, 2}), ints("slice/s", {1, -1, 2})});
  attr_type(slice, "Index", kTfInt32);
  (*mg->mutable_signature_def())["default"] =
      tf_signature({{"x", {"x:0", DType::kFloat32, {2, 3, 4}}}}, {{"a", {"a:0", DType::kFloat32, {}}},
                                                                  {"b", {"b:0", DType::kFloat32, {}}},
                                                                  {"s0", {"split:0", DType::kFloat32, {}}},
                                                                  {"s1", {"split:1", DType::kFloat32, {}}},
                                                                  {"slice", {"slice:0", DType::kFloat32, {}}}});
  TempDir dir("saved_model");
  write_saved_model(dir / "m", sm, {});
  ModuleSpec spec = tf::import_saved_model(dir / "m");
  Module mod(spec);
  TensorMap out = mod({{"x", x}});
  expect_close(out.at("a"), make({2, 4}, {4, 5, 6, 7, 16, 17, 18, 19}));
  expect_close(out.at("b"), make({2, 3, 1, 2}, {1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22}));
  expect_close(out.at("s0"), make({2, 3, 2}, {0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21}));
  expect_close(out.at("s1"), make({2, 3, 2}, {2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23}));
  expect_close(out.at("slice"), make({1, 3, 2}, {14, 15, 18, 19, 22, 23}));
}

TEST_CASE("MaxPool with EXPLICIT padding and a grouped Conv2D, worked by hand") {
  // MaxPool 2x2 stride 2 over 1..9 (3x3) padded 1 above and 1 right:
  // windows {1,2} {3} {4,5,7,8} {6,9}. Conv2D of [1,2,3,4] with a
  // [1,1,2,2] filter: two groups of two channels.
  tfp::SavedModel sm;
  tfp::MetaGraphDef* mg = sm.add_meta_graphs();
  TfGraph g(mg->mutable_graph_def());
  g.placeholder("x", {1, 3, 3, 1});
  auto& mp = g.op("pool", "MaxPool", {"x"});
  attr_ints(mp, "ksize", {1, 2, 2, 1});
  attr_ints(mp, "strides", {1, 2, 2, 1});
  attr_string(mp, "padding", "EXPLICIT");
  attr_ints(mp, "explicit_paddings", {0, 0, 1, 0, 0, 1, 0, 0});
  g.placeholder("c", {1, 1, 1, 4});
  g.constant("w", make({1, 1, 2, 2}, {1, 10, 100, 1000}));
  auto& conv = g.op("grouped", "Conv2D", {"c", "w"});
  attr_ints(conv, "strides", {1, 1, 1, 1});
  attr_string(conv, "padding", "VALID");
  (*mg->mutable_signature_def())["default"] =
      tf_signature({{"x", {"x:0", DType::kFloat32, {1, 3, 3, 1}}}, {"c", {"c:0", DType::kFloat32, {1, 1, 1, 4}}}},
                   {{"pool", {"pool:0", DType::kFloat32, {}}}, {"conv", {"grouped:0", DType::kFloat32, {}}}});
  TempDir dir("saved_model");
  write_saved_model(dir / "m", sm, {});
  Module m(tf::import_saved_model(dir / "m"));
  TensorMap out = m({{"x", make({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9})}, {"c", make({1, 1, 1, 4}, {1, 2, 3, 4})}});
  expect_close(out.at("pool"), make({1, 2, 2, 1}, {2, 3, 8, 9}));
  expect_close(out.at("conv"), make({1, 1, 1, 2}, {1 * 1 + 2 * 100, 3 * 10 + 4 * 1000}));
}

TEST_CASE("TF Hub module: tag sets {} and {train}, default signature, image size") {
  tfp::SavedModel sm;
  for (bool train : {false, true}) {
    tfp::MetaGraphDef* mg = sm.add_meta_graphs();
    if (train) mg->mutable_meta_info_def()->add_tags("train");
    TfGraph g(mg->mutable_graph_def());
    g.placeholder("images", {-1, 4, 5, 3});
    g.constant("axes", Tensor::from_vector<int32_t>({2}, {1, 2}));
    g.op("gap", "Mean", {"images", "axes"});
    std::string w = g.resource_variable("module/w", {3, 2});
    g.op("features", "MatMul", {"gap", w});
    *mg->mutable_saver_def() = g.saver({{"module/w", "module/w"}});
    (*mg->mutable_signature_def())["default"] = tf_signature({{"images", {"images:0", DType::kFloat32, {-1, 4, 5, 3}}}},
                                                             {{"default", {"features:0", DType::kFloat32, {-1, 2}}}});
    if (!train)
      (*mg->mutable_collection_def())["hub_module_attachments"].mutable_bytes_list()->add_value(
          image_module_info_attachment(224, 192));
  }
  TempDir dir("tfhub");
  const Tensor w = make({3, 2}, {1, 0, 0, 1, 1, 1});
  write_saved_model(dir / "m", sm, {{"module/w", w}});
  write_tfhub_module_def(dir / "m");
  REQUIRE(tf::is_tfhub_module_dir(dir / "m"));
  ModuleSpec spec = tf::import_tfhub_module(dir / "m");
  CHECK(spec.tag_sets() == std::vector<TagSet>{TagSet{}, TagSet{"train"}});
  CHECK(get_expected_image_size(spec) == std::pair<int64_t, int64_t>{224, 192});
  CHECK(get_num_image_channels(spec) == 3);
  CHECK(std::get<std::string>(spec.attached().at("source_format")) == "tf_hub_module");
  // Mean over H, W of a constant image per channel, then w.
  Tensor images(DType::kFloat32, {1, 4, 5, 3});
  for (int64_t i = 0; i < images.num_elements(); ++i) images.data<float>()[i] = static_cast<float>(i % 3);
  for (const TagSet& tags : spec.tag_sets()) {
    Module m(spec, tags);
    expect_close(m(images), make({1, 2}, {0 + 2, 1 + 2}));
  }

  // Without the attachment: the static size of the images input.
  sm.mutable_meta_graphs(0)->mutable_collection_def()->clear();
  write_saved_model(dir / "n", sm, {{"module/w", w}});
  write_tfhub_module_def(dir / "n");
  CHECK(get_expected_image_size(tf::import_tfhub_module(dir / "n")) == std::pair<int64_t, int64_t>{4, 5});
  // Only the inference graph.
  tf::SavedModelImportOptions only;
  only.tag_sets = {TagSet{}};
  CHECK(tf::import_tfhub_module(dir / "n", only).tag_sets() == std::vector<TagSet>{TagSet{}});
  only.tag_sets = {TagSet{"serve"}};
  expect_error(
      Code::kNotFound, [&] { tf::import_tfhub_module(dir / "n", only); }, "no graph with the tag set {serve}");
  // A newer module format.
  tfp::ModuleDef def;
  def.set_format(static_cast<tfp::ModuleDef::Format>(4));
  {
    std::ofstream out(dir / "n/tfhub_module.pb", std::ios::binary);
    out << def.SerializeAsString();
  }
  expect_error(
      Code::kUnimplemented, [&] { tf::import_tfhub_module(dir / "n"); }, "module format 4 is not supported");
}

TEST_CASE("bad SavedModels: each a clear error naming the file, the node and the op") {
  TempDir dir("saved_model_bad");
  const std::map<std::string, Tensor> vars = {{"dense/kernel", kW}, {"renamed/bias", kB}};
  auto write = [&](const std::string& name, const tfp::SavedModel& sm) {
    write_saved_model(dir / name, sm, vars);
    return dir / name;
  };
  auto node = [](tfp::SavedModel& sm, const std::string& name) -> tfp::NodeDef& {
    for (auto& n : *sm.mutable_meta_graphs(0)->mutable_graph_def()->mutable_node())
      if (n.name() == name) return n;
    FAIL("no node " << name);
    throw;
  };

  SUBCASE("a cycle") {
    tfp::SavedModel sm = dense_tf1(false);
    *node(sm, "dense/MatMul").mutable_input(0) = "out";
    std::string d = write("cycle", sm);
    expect_error(
        Code::kInvalidArgument, [&] { tf::import_saved_model(d); }, "the graph has a cycle: ");
    expect_error(
        Code::kInvalidArgument, [&] { tf::import_saved_model(d); }, "dense/MatMul");
  }
  SUBCASE("an input naming no node") {
    tfp::SavedModel sm = dense_tf1(false);
    *node(sm, "dense/BiasAdd").mutable_input(1) = "dense/bais/read";
    std::string d = write("missing", sm);
    expect_error(
        Code::kInvalidArgument, [&] { tf::import_saved_model(d); },
        "node 'dense/BiasAdd' (BiasAdd): input 'dense/bais/read:0' names no node of the graph");
  }
  SUBCASE("a truncated saved_model.pb") {
    std::string d = write("truncated", dense_tf1(false));
    std::string bytes = read_file_bytes(d + "/saved_model.pb");
    std::ofstream(d + "/saved_model.pb", std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
    expect_error(
        Code::kCorruption, [&] { tf::import_saved_model(d); }, "saved_model.pb' is not a SavedModel");
  }
  SUBCASE("no saved_model.pb") {
    fs::create_directories(dir / "empty");
    expect_error(
        Code::kNotFound, [&] { tf::import_saved_model(dir / "empty"); }, "no saved_model.pb");
  }
  SUBCASE("a damaged variables bundle") {
    std::string d = write("bundle", dense_tf1(false));
    const std::string data = d + "/variables/variables.data-00000-of-00001";
    std::string bytes = read_file_bytes(data);
    bytes[3] ^= 0x40;
    std::ofstream(data, std::ios::binary | std::ios::trunc) << bytes;
    expect_error(
        Code::kCorruption, [&] { tf::import_saved_model(d); }, "variables.data-00000-of-00001");
  }
  SUBCASE("a variable the bundle lacks") {
    tfp::SavedModel sm = dense_tf1(false);
    write_saved_model(dir / "novar", sm, {{"dense/kernel", kW}});
    expect_error(
        Code::kNotFound, [&] { tf::import_saved_model(dir / "novar"); },
        "variable 'dense/bias': checkpoint key 'renamed/bias' is not in");
  }
  SUBCASE("a constant folded at import that would outgrow 2^24 elements stays in the graph") {
    // Fill of constant dims [8192, 8192] (2^26 elements) from a few bytes: not computed at import
    // (hub/interop/fold.h), but a BroadcastTo that runs when the module does.
    tfp::SavedModel sm = dense_tf1(false);
    TfGraph g(sm.mutable_meta_graphs(0)->mutable_graph_def());
    const std::string dims = g.constant("big/dims", Tensor::from_vector<int32_t>({2}, {8192, 8192}));
    const std::string value = g.constant("big/value", Tensor::scalar(1.0f));
    g.op("big/fill", "Fill", {dims, value});
    attr_type(node(sm, "big/fill"), "index_type", 3);  // DT_INT32
    (*sm.mutable_meta_graphs(0)->mutable_signature_def())["serving_default"] = tf_signature(
        {{"x", {"x:0", DType::kFloat32, {-1, 2}}}}, {{"y", {"big/fill:0", DType::kFloat32, {8192, 8192}}}});
    const ModuleSpec spec = tf::import_saved_model(write("fill", sm));
    int broadcasts = 0;
    for (const Node& n : spec.graph().nodes()) broadcasts += n.op == "BroadcastTo";
    CHECK(broadcasts == 1);
    CHECK(spec.signature().outputs.at("y").shape == Shape{8192, 8192});
  }
  SUBCASE("an unsupported op") {
    tfp::SavedModel sm = dense_tf1(false);
    node(sm, "out").set_op("Softsign");
    std::string d = write("op", sm);
    expect_error(
        Code::kUnimplemented, [&] { tf::import_saved_model(d); },
        "saved_model.pb, tag set {}: node 'out' (Softsign): op Softsign is not supported");
  }
  SUBCASE("an unsupported attribute and attribute value") {
    tfp::SavedModel sm = dense_tf1(false);
    attr_bool(node(sm, "out"), "fancy", true);
    std::string d = write("attr", sm);
    expect_error(
        Code::kUnimplemented, [&] { tf::import_saved_model(d); },
        "node 'out' (Relu): attribute 'fancy' is not supported");
    tfp::SavedModel sm2 = dense_tf1(false);
    attr_string(node(sm2, "dense/BiasAdd"), "data_format", "NCHW");
    std::string d2 = write("attr2", sm2);
    expect_error(
        Code::kUnimplemented, [&] { tf::import_saved_model(d2); },
        "node 'dense/BiasAdd' (BiasAdd): attribute data_format = \"NCHW\": supported: NHWC");
  }
  SUBCASE("an unsupported dtype") {
    tfp::SavedModel sm = dense_tf1(false);
    attr_type(node(sm, "out"), "T", kTfHalf);
    std::string d = write("dtype", sm);
    expect_error(
        Code::kUnimplemented, [&] { tf::import_saved_model(d); }, "node 'out' (Relu): attribute T = DT_HALF");
  }
  SUBCASE("nothing is written") {
    // The importer returns a spec; the folder it read is all there is.
    std::string d = write("clean", dense_tf1(false));
    tf::import_saved_model(d);
    std::vector<std::string> names;
    for (const auto& e : fs::recursive_directory_iterator(d)) names.push_back(fs::relative(e.path(), d).string());
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"saved_model.pb", "variables", "variables/variables.data-00000-of-00001",
                                            "variables/variables.index"});
  }
}

TEST_CASE("a quantization-aware training graph: FakeQuant ops on variables and on constants") {
  // tf.contrib.quantize's activation quant: min/max variables read through
  // Identity; per channel with constant ranges. 2 bits, worked by hand:
  // [-1, 2] has grid {-1, 0, 1, 2}; channels [-1, 2], [0, 0] (zeros), [-2, 1].
  tfp::SavedModel sm;
  tfp::MetaGraphDef* mg = sm.add_meta_graphs();
  mg->mutable_meta_info_def()->add_tags("serve");
  TfGraph g(mg->mutable_graph_def());
  g.placeholder("x", {-1, 3});
  std::string lo = g.variable_v2("act_quant/min", {});
  std::string hi = g.variable_v2("act_quant/max", {});
  auto& fq = g.add("act_quant/FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVars", {"x", lo, hi});
  attr_int(fq, "num_bits", 2);
  g.constant("pc/min", make({3}, {-1, 0, -2}));
  g.constant("pc/max", make({3}, {2, 0, 1}));
  auto& pc = g.add("pc/FakeQuant", "FakeQuantWithMinMaxVarsPerChannel", {"x", "pc/min", "pc/max"});
  attr_int(pc, "num_bits", 2);
  attr_bool(pc, "narrow_range", false);
  *mg->mutable_saver_def() = g.saver({{"act_quant/min", "act_quant/min"}, {"act_quant/max", "act_quant/max"}});
  (*mg->mutable_signature_def())["serving_default"] =
      tf_signature({{"x", {"x:0", DType::kFloat32, {-1, 3}}}},
                   {{"y", {"act_quant/FakeQuantWithMinMaxVars:0", DType::kFloat32, {-1, 3}}},
                    {"pc", {"pc/FakeQuant:0", DType::kFloat32, {-1, 3}}}});
  TempDir dir("saved_model");
  write_saved_model(dir / "m", sm,
                    {{"act_quant/min", Tensor::scalar<float>(-1)}, {"act_quant/max", Tensor::scalar<float>(2)}});
  ModuleSpec spec = tf::import_saved_model(dir / "m");
  Module m(spec);
  TensorMap out = m("serving_default", {{"x", make({2, 3}, {-3, 0.4f, 0.5f, 1.5f, -1, -2.6f})}});
  // Per tensor: -3 -> -1, 0.4 -> 0, 0.5 -> 1, 1.5 -> 2, -1 -> -1, -2.6 -> -1.
  expect_close(out.at("y"), make({2, 3}, {-1, 0, 1, 2, -1, -1}), 0, 0);
  // Per channel: -3 -> -1, 0.4 -> 0 (zeros), 0.5 -> floor(2.5 + 0.5) - 2 = 1; 1.5 -> 2, -1 -> 0, -2.6 -> -2.
  expect_close(out.at("pc"), make({2, 3}, {-1, 0, 1, 2, 0, -2}), 0, 0);
  // The activation range reads the module's variables, as hub quantize expects.
  std::set<std::string> variables;
  for (const auto& v : spec.variables()) variables.insert(v.name);
  CHECK(variables == std::set<std::string>{"act_quant/max", "act_quant/min"});
  int fake_quants = 0;
  for (const Node& n : spec.graph().nodes()) fake_quants += n.op.rfind("FakeQuantWithMinMaxVars", 0) == 0;
  CHECK(fake_quants == 2);
}

TEST_CASE("a While reading a resource variable through a loop variable (Keras style), and an If, worked by hand") {
  // y = x * v^3 by three steps of `x *= read(v)`, then doubled by an If where sum(x) > 0 (else negated).
  TempDir dir("saved_model");
  tfp::SavedModel sm;
  tfp::MetaGraphDef* mg = serving_meta_graph(sm);
  TfGraph g(mg->mutable_graph_def());
  g.placeholder("x", {-1, 2});
  g.resource_variable("v", {2});
  g.constant("zero", Tensor::scalar<int32_t>(0));
  g.constant("limit", Tensor::scalar<int32_t>(3));
  auto* lib = mg->mutable_graph_def()->mutable_library();
  auto arg = [](tfp::OpDef* sig, bool output, const std::string& name, int type) {
    auto* a = output ? sig->add_output_arg() : sig->add_input_arg();
    a->set_name(name);
    a->set_type(static_cast<tfp::DataType>(type));
  };
  constexpr int kTfVariant = 21;
  // hist: each step's acc pushed onto a TensorList made empty (TensorArray with dynamic_size).
  const std::vector<std::pair<std::string, int>> vars{
      {"i", kTfInt32}, {"acc", kTfFloat}, {"handle", kTfResource}, {"n", kTfInt32}, {"hist", kTfVariant}};
  auto function = [&](const std::string& name, const std::vector<std::pair<std::string, int>>& outputs) {
    tfp::FunctionDef* f = lib->add_function();
    f->mutable_signature()->set_name(name);
    for (const auto& [n, t] : vars) arg(f->mutable_signature(), false, n, t);
    for (const auto& [n, t] : outputs) arg(f->mutable_signature(), true, n, t);
    return f;
  };
  auto body_node = [](tfp::FunctionDef* f, const std::string& name, const std::string& op,
                      std::vector<std::string> inputs, int type) -> tfp::NodeDef& {
    tfp::NodeDef& n = *f->add_node_def();
    n.set_name(name);
    n.set_op(op);
    for (auto& i : inputs) n.add_input(i);
    attr_type(n, op == "ReadVariableOp" ? "dtype" : "T", type);
    return n;
  };
  tfp::FunctionDef* cond = function("cond", {{"go", 10 /* DT_BOOL */}});
  body_node(cond, "less", "Less", {"i", "n"}, kTfInt32);
  (*cond->mutable_ret())["go"] = "less:z:0";
  tfp::FunctionDef* body = function("body", {{"i_out", kTfInt32},
                                             {"acc_out", kTfFloat},
                                             {"handle_out", kTfResource},
                                             {"n_out", kTfInt32},
                                             {"hist_out", kTfVariant}});
  tfp::NodeDef& one = *body->add_node_def();
  one.set_name("one");
  one.set_op("Const");
  attr_type(one, "dtype", kTfInt32);
  tfp::TensorProto* one_value = (*one.mutable_attr())["value"].mutable_tensor();
  one_value->set_dtype(tfp::DT_INT32);
  one_value->mutable_tensor_shape();
  one_value->add_int_val(1);
  body_node(body, "next", "AddV2", {"i", "one:output:0"}, kTfInt32);
  body_node(body, "read", "ReadVariableOp", {"handle"}, kTfFloat);
  body_node(body, "scaled", "Mul", {"acc", "read:value:0"}, kTfFloat);
  body_node(body, "handle_id", "Identity", {"handle"}, kTfResource);
  body_node(body, "n_id", "Identity", {"n"}, kTfInt32);
  (*body->mutable_ret())["i_out"] = "next:z:0";
  (*body->mutable_ret())["acc_out"] = "scaled:z:0";
  (*body->mutable_ret())["handle_out"] = "handle_id:output:0";
  (*body->mutable_ret())["n_out"] = "n_id:output:0";
  tfp::NodeDef& push = body_node(body, "push", "TensorListPushBack", {"hist", "scaled:z:0"}, kTfFloat);
  push.mutable_attr()->erase("T");
  attr_type(push, "element_dtype", kTfFloat);
  (*body->mutable_ret())["hist_out"] = "push:output_handle:0";
  g.constant("element_shape", Tensor::from_vector<int32_t>({2}, {-1, 2}));
  g.constant("max_elements", Tensor::scalar<int32_t>(-1));
  tfp::NodeDef& empty = g.add("empty", "EmptyTensorList", {"element_shape", "max_elements"});
  attr_type(empty, "element_dtype", kTfFloat);
  attr_type(empty, "shape_type", kTfInt32);
  tfp::NodeDef& loop = g.add("while", "While", {"zero", "x", "v", "limit", "empty"});
  for (const auto& [n, t] : vars) (*loop.mutable_attr())["T"].mutable_list()->add_type(static_cast<tfp::DataType>(t));
  (*loop.mutable_attr())["cond"].mutable_func()->set_name("cond");
  (*loop.mutable_attr())["body"].mutable_func()->set_name("body");
  // The If: branches of one float input.
  auto branch = [&](const std::string& name, const std::string& op) {
    tfp::FunctionDef* f = lib->add_function();
    f->mutable_signature()->set_name(name);
    arg(f->mutable_signature(), false, "a", kTfFloat);
    arg(f->mutable_signature(), true, "b", kTfFloat);
    tfp::NodeDef& n = *f->add_node_def();
    n.set_name("r");
    n.set_op(op);
    n.add_input("a");
    if (op == "AddV2") n.add_input("a");
    attr_type(n, "T", kTfFloat);
    (*f->mutable_ret())["b"] = op == "AddV2" ? "r:z:0" : "r:y:0";
  };
  branch("twice", "AddV2");
  branch("negated", "Neg");
  g.constant("axes", Tensor::from_vector<int32_t>({2}, {0, 1}));
  tfp::NodeDef& sum = g.op("sum", "Sum", {"while:1", "axes"});
  attr_type(sum, "Tidx", kTfInt32);
  attr_bool(sum, "keep_dims", false);
  g.constant("zero_f", Tensor::scalar<float>(0));
  g.op("positive", "Greater", {"sum", "zero_f"});
  tfp::NodeDef& iff = g.add("if", "StatelessIf", {"positive", "while:1"});
  attr_type(iff, "Tcond", 10);
  (*iff.mutable_attr())["Tin"].mutable_list()->add_type(tfp::DT_FLOAT);
  (*iff.mutable_attr())["Tout"].mutable_list()->add_type(tfp::DT_FLOAT);
  (*iff.mutable_attr())["then_branch"].mutable_func()->set_name("twice");
  (*iff.mutable_attr())["else_branch"].mutable_func()->set_name("negated");
  tfp::NodeDef& stack = g.add("steps", "TensorListStack", {"while:4", "element_shape"});
  attr_type(stack, "element_dtype", kTfFloat);
  *mg->mutable_saver_def() = g.saver({{"v", "v"}});
  (*mg->mutable_signature_def())["serving_default"] =
      tf_signature({{"x", {"x:0", DType::kFloat32, {-1, 2}}}},
                   {{"y", {"if:0", DType::kFloat32, {-1, 2}}}, {"steps", {"steps:0", DType::kFloat32, {-1, -1, 2}}}});
  write_saved_model(dir / "m", sm, {{"v", Tensor::floats({0.5f, 2})}});
  ModuleSpec spec = tf::import_saved_model(dir / "m");
  REQUIRE(spec.variables().size() == 1);
  CHECK(spec.variables()[0].name == "v");
  // x * v^3 = x * [0.125, 8], summed over the whole batch (> 0: doubled; < 0: negated).
  expect_close(run_sig(spec, "default", "x", make({2, 2}, {1, 1, 2, -1}), "y"), make({2, 2}, {0.25f, 16, 0.5f, -16}));
  expect_close(run_sig(spec, "default", "x", make({1, 2}, {1, -1}), "y"), make({1, 2}, {-0.125f, 8}));
  // Each step's x * v^k, pushed: [3, 1, 2].
  expect_close(run_sig(spec, "default", "x", make({1, 2}, {1, -1}), "steps"),
               make({3, 1, 2}, {0.5f, -2, 0.25f, -4, 0.125f, -8}));
  // The variable is the module's: a new value changes what the loop reads.
  Module m(spec);
  m.variable_map().at("v").assign(Tensor::floats({1, -1}));  // x * v^3 = [3, -4]: sum < 0, negated
  expect_close(m("default", {{"x", make({1, 2}, {3, 4})}}).at("y"), make({1, 2}, {-3, 4}));
}

TEST_CASE("TensorFlow 1 cond on a learning phase, left at its default or fed (Switch/Merge), worked by hand") {
  // Keras' TF1 graphs: y = cond(learning_phase, x * 0.5 (dropout-like), x + 1), learning_phase a
  // PlaceholderWithDefault of false. The branches' constants hang on cond/switch_t and cond/switch_f.
  auto model = [](bool fed_phase) {
    tfp::SavedModel sm;
    tfp::MetaGraphDef* mg = serving_meta_graph(sm);
    TfGraph g(mg->mutable_graph_def());
    g.placeholder("x", {-1, 2});
    g.constant("phase_default", Tensor::scalar<bool>(false));
    tfp::NodeDef& phase = g.add("learning_phase", "PlaceholderWithDefault", {"phase_default"});
    attr_type(phase, "dtype", 10);
    attr_shape(phase, "shape", {});
    attr_type(g.add("cond/Switch", "Switch", {"learning_phase", "learning_phase"}), "T", 10);
    tfp::NodeDef& t = g.add("cond/switch_t", "Identity", {"cond/Switch:1"});
    attr_type(t, "T", 10);
    tfp::NodeDef& f = g.add("cond/switch_f", "Identity", {"cond/Switch"});
    attr_type(f, "T", 10);
    g.op("cond/Switch_x", "Switch", {"x", "learning_phase"});
    g.constant("cond/half", Tensor::scalar<float>(0.5f));
    g.graph().mutable_node(g.graph().node_size() - 1)->add_input("^cond/switch_t");
    g.op("cond/mul", "Mul", {"cond/Switch_x:1", "cond/half"});
    g.constant("cond/one", Tensor::scalar<float>(1));
    g.graph().mutable_node(g.graph().node_size() - 1)->add_input("^cond/switch_f");
    g.op("cond/add", "AddV2", {"cond/Switch_x", "cond/one"});
    tfp::NodeDef& merge = g.op("cond/Merge", "Merge", {"cond/add", "cond/mul"});
    attr_int(merge, "N", 2);
    g.op("y", "Identity", {"cond/Merge"});
    // A second output whose branches are only Consts (on which side: their control inputs tell): 1 or 0.
    g.constant("cond/on", Tensor::scalar<float>(1));
    g.graph().mutable_node(g.graph().node_size() - 1)->add_input("^cond/switch_t");
    g.constant("cond/off", Tensor::scalar<float>(0));
    g.graph().mutable_node(g.graph().node_size() - 1)->add_input("^cond/switch_f");
    attr_int(g.op("cond/Merge_1", "Merge", {"cond/off", "cond/on"}), "N", 2);
    g.op("training", "Identity", {"cond/Merge_1"});
    // A later cond on the same predicate, reading the first one's result: y2 = phase ? y * 0.5 : y.
    g.op("later/Switch_y", "Switch", {"cond/Merge", "learning_phase"});
    g.op("later/mul", "Mul", {"later/Switch_y:1", "cond/half"});
    g.op("later/same", "Identity", {"later/Switch_y"});
    attr_int(g.op("later/Merge", "Merge", {"later/same", "later/mul"}), "N", 2);
    g.op("y2", "Identity", {"later/Merge"});
    std::map<std::string, TfTensor> inputs{{"x", {"x:0", DType::kFloat32, {-1, 2}}}};
    if (fed_phase) inputs["learning_phase"] = {"learning_phase:0", DType::kBool, {}};
    (*mg->mutable_signature_def())["serving_default"] =
        tf_signature(inputs, {{"y", {"y:0", DType::kFloat32, {-1, 2}}},
                              {"training", {"training:0", DType::kFloat32, {}}},
                              {"y2", {"y2:0", DType::kFloat32, {-1, 2}}}});
    return sm;
  };
  TempDir dir("saved_model");
  write_saved_model(dir / "m", model(false), {});
  ModuleSpec spec = tf::import_saved_model(dir / "m");
  expect_close(run_sig(spec, "default", "x", make({1, 2}, {3, -2}), "y"), make({1, 2}, {4, -1}));
  expect_close(run_sig(spec, "default", "x", make({1, 2}, {3, -2}), "training"), Tensor::scalar<float>(0));
  expect_close(run_sig(spec, "default", "x", make({1, 2}, {3, -2}), "y2"), make({1, 2}, {4, -1}));
  for (const Node& n : spec.graph().nodes()) CHECK(n.op != "Mul");  // the branch not taken is not imported
  // A learning phase fed at run time is a predicate known only then: the cond becomes an If whose branches
  // are the two sides, and the phase fed picks one at each run.
  write_saved_model(dir / "fed", model(true), {});
  const ModuleSpec fed = tf::import_saved_model(dir / "fed");
  CHECK(
      std::any_of(fed.graph().nodes().begin(), fed.graph().nodes().end(), [](const Node& n) { return n.op == "If"; }));
  Module m(fed);
  const Tensor x = make({1, 2}, {3, -2});
  for (const bool phase : {false, true}) {
    const TensorMap out = m("default", {{"x", x}, {"learning_phase", Tensor::scalar<bool>(phase)}});
    expect_close(out.at("y"), phase ? make({1, 2}, {1.5f, -1}) : make({1, 2}, {4, -1}));
    expect_close(out.at("training"), Tensor::scalar<float>(phase ? 1 : 0));
    // (Two conds on one predicate, one feeding the other: two Ifs, not one.)
    expect_close(out.at("y2"), phase ? make({1, 2}, {0.75f, -0.5f}) : make({1, 2}, {4, -1}));
  }
}

TEST_CASE("a TensorFlow 1 while loop reading a reference variable, worked by hand") {
  // i = 0, acc = x; while i < 3: acc = acc * v + 1, i += 1 — as tf.while_loop writes it in a TF1 graph: the
  // variable's snapshot and the limit enter the frame as invariants, the body's constants hang on its pivot.
  tfp::SavedModel sm;
  tfp::MetaGraphDef* mg = serving_meta_graph(sm);
  TfGraph g(mg->mutable_graph_def());
  g.placeholder("x", {-1, 2});
  const std::string v = g.variable_v2("v", {2});
  g.constant("zero", Tensor::scalar<int32_t>(0));
  g.constant("three", Tensor::scalar<int32_t>(3));
  auto enter = [&](const std::string& name, const std::string& from, bool invariant, int dtype) {
    tfp::NodeDef& n = g.add(name, "Enter", {from});
    attr_type(n, "T", dtype);
    attr_string(n, "frame_name", "while/while_context");
    attr_bool(n, "is_constant", invariant);
    attr_int(n, "parallel_iterations", 10);
  };
  auto typed = [&](const std::string& name, const std::string& op, std::vector<std::string> inputs, int dtype) {
    attr_type(g.add(name, op, std::move(inputs)), "T", dtype);
  };
  const int i32 = 3, f32 = 1;
  enter("while/Enter", "zero", false, i32);
  enter("while/Enter_1", "x", false, f32);
  for (const char* k : {"", "_1"}) {
    const int dtype = std::string(k).empty() ? i32 : f32;
    tfp::NodeDef& merge = g.add(std::string("while/Merge") + k, "Merge",
                                {std::string("while/Enter") + k, std::string("while/NextIteration") + k});
    attr_type(merge, "T", dtype);
    attr_int(merge, "N", 2);
  }
  enter("while/Less/Enter", "three", true, i32);
  typed("while/Less", "Less", {"while/Merge", "while/Less/Enter"}, i32);
  g.add("while/LoopCond", "LoopCond", {"while/Less"});
  for (const char* k : {"", "_1"}) {
    const int dtype = std::string(k).empty() ? i32 : f32;
    const std::string sw = std::string("while/Switch") + k;
    typed(sw, "Switch", {std::string("while/Merge") + k, "while/LoopCond"}, dtype);
    typed(std::string("while/Identity") + k, "Identity", {sw + ":1"}, dtype);
    typed(std::string("while/Exit") + k, "Exit", {sw}, dtype);
  }
  enter("while/mul/Enter", v, true, f32);
  g.op("while/mul", "Mul", {"while/Identity_1", "while/mul/Enter"});
  g.constant("while/one", Tensor::scalar<float>(1));
  g.graph().mutable_node(g.graph().node_size() - 1)->add_input("^while/Identity");
  g.op("while/add", "AddV2", {"while/mul", "while/one"});
  g.constant("while/step", Tensor::scalar<int32_t>(1));
  g.graph().mutable_node(g.graph().node_size() - 1)->add_input("^while/Identity");
  typed("while/add_1", "AddV2", {"while/Identity", "while/step"}, i32);
  typed("while/NextIteration", "NextIteration", {"while/add_1"}, i32);
  typed("while/NextIteration_1", "NextIteration", {"while/add"}, f32);
  g.op("y", "Identity", {"while/Exit_1"});
  *mg->mutable_saver_def() = g.saver({{"v", "v"}});
  (*mg->mutable_signature_def())["serving_default"] =
      tf_signature({{"x", {"x:0", DType::kFloat32, {-1, 2}}}}, {{"y", {"y:0", DType::kFloat32, {-1, 2}}}});
  TempDir dir("saved_model");
  write_saved_model(dir / "m", sm, {{"v", Tensor::floats({0.5f, 2})}});
  Module m(tf::import_saved_model(dir / "m"));
  // [1, -2] -> [1.5, -3] -> [1.75, -5] -> [1.875, -9].
  expect_close(m("default", {{"x", make({1, 2}, {1, -2})}}).at("y"), make({1, 2}, {1.875f, -9}));
  // The loop reads the variable as it is at each run: v = 1 adds 3.
  m.variable_map().at("v").assign(Tensor::floats({1, 1}));
  expect_close(m("default", {{"x", make({1, 2}, {1, -2})}}).at("y"), make({1, 2}, {4, 1}));
}

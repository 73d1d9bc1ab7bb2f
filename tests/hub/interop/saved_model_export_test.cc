// hub/interop/tf/saved_model_export: a module using every hub op that maps
// to TensorFlow is written as a TF1 SavedModel; the files hold what
// TensorFlow reads (tags, SignatureDefs, VariableV2 + read, the saver's
// RestoreV2 keys, the variables collections, the bundle's values) and read
// back to a module with the same outputs. Bad exports (ops without a
// TensorFlow equivalent, an existing folder, an unknown tag set) fail before
// anything is written.
#include "hub/interop/tf/saved_model_export.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "hub/core/fileio.h"
#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/proto/saved_model.pb.h"
#include "hub/interop/tf/proto/variable.pb.h"
#include "hub/interop/tf/saved_model.h"
#include "hub/ops/array.h"
#include "hub/ops/state.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

// images [?, 8, 8, 3] -> (probs [?, 4], features [?, 48]) through every
// exported op.
void every_op(ModuleBuilder& b) {
  Scope s = b.scope();
  ops::VariableOptions random;
  random.initializer = "random_uniform";
  random.init_params = {-0.5, 0.5};
  auto var = [&](const std::string& name, Shape shape, bool trainable = true) {
    ops::VariableOptions o = random;
    o.trainable = trainable;
    return ops::variable(s, name, shape, o);
  };
  auto ints = [](std::vector<int64_t> v) { return v; };
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 8, 8, 3}, "images");
  Output y =
      s.op("Conv2D", {x, var("conv/weights", {3, 3, 3, 6})},
           Attrs().set("strides", ints({2, 2})).set("padding", "EXPLICIT").set("explicit_paddings", ints({1, 0, 0, 1})),
           "conv");
  y = s.op("BiasAdd", {y, var("conv/biases", {6})}, {}, "conv/bias");
  y = s.op_n("FusedBatchNorm",
             {y, var("bn/gamma", {6}), var("bn/beta", {6}), var("bn/mean", {6}, false),
              ops::constant(s, Tensor::floats({1, 2, 0.5f, 1, 1.5f, 1}), "bn/variance")},
             Attrs().set("epsilon", 0.001).set("is_training", false), "bn")[0];
  y = s.op("Relu6", {y}, {}, "relu6");
  y = s.op("DepthwiseConv2dNative", {y, var("dw/weights", {3, 3, 6, 1})}, Attrs().set("padding", "SAME"), "dw");
  y = s.op("Elu", {y}, {}, "elu");
  Output mp = s.op("MaxPool", {y},
                   Attrs()
                       .set("ksize", ints({3, 3}))
                       .set("strides", ints({1, 1}))
                       .set("padding", "EXPLICIT")
                       .set("explicit_paddings", ints({0, 1, 1, 0})),
                   "maxpool");
  Output ap = s.op("AvgPool", {y},
                   Attrs().set("ksize", ints({2, 2})).set("strides", ints({2, 2})).set("padding", "VALID"), "avgpool");
  y = s.op("LRN", {mp}, Attrs().set("depth_radius", int64_t{2}).set("alpha", 0.1).set("beta", 0.75), "lrn");
  Output up =
      s.op("Resize", {ap},
           Attrs().set("size", ints({3, 3})).set("mode", "linear").set("coordinate_transformation_mode", "half_pixel"),
           "resize_linear");
  Output nn = s.op("Resize", {ap},
                   Attrs()
                       .set("size", ints({3, 3}))
                       .set("mode", "nearest")
                       .set("coordinate_transformation_mode", "align_corners")
                       .set("nearest_mode", "round_prefer_ceil"),
                   "resize_nearest");
  Output cubic = s.op("Resize", {ap},
                      Attrs()
                          .set("size", ints({3, 3}))
                          .set("mode", "cubic")
                          .set("coordinate_transformation_mode", "half_pixel")
                          .set("cubic_coeff_a", -0.5)
                          .set("exclude_outside", true),
                      "resize_cubic");
  y = s.op("Concat", {y, up, nn, cubic}, Attrs().set("axis", int64_t{-1}), "concat");  // [?, 3, 3, 24]
  y = s.op("Pad", {y}, Attrs().set("paddings", ints({0, 0, 1, 0, 0, 1, 0, 0})),
           "pad");  // [?, 4, 4, 18]
  y = s.op("Slice", {y}, Attrs().set("begin", ints({0, 0, 1, 2})).set("size", ints({-1, 3, 3, 12})), "slice");
  y = s.op("LeakyRelu", {y}, Attrs().set("alpha", 0.3), "leaky");
  y = s.op("Pad", {y}, Attrs().set("paddings", ints({0, 0, 1, 1, 1, 1, 0, 0})).set("mode", "REFLECT"),
           "mirror");  // [?, 5, 5, 12]
  y = s.op("Pad", {y}, Attrs().set("paddings", ints({0, 0, 1, 0, 0, 1, 0, 0})).set("constant_value", 0.5),
           "pad_value");  // [?, 6, 6, 12]
  y = s.op("Pad", {y}, Attrs().set("paddings", ints({0, 0, 0, 1, 1, 0, 0, 0})).set("mode", "SYMMETRIC"),
           "symmetric");  // [?, 7, 7, 12]
  y = s.op("StridedSlice", {y},
           Attrs()
               .set("begin", ints({0, -1, 0, 0}))
               .set("end", ints({0, 0, 7, 12}))
               .set("strides", ints({1, -2, 3, 1}))
               .set("begin_mask", int64_t{1})
               .set("end_mask", int64_t{1}),
           "strided");  // rows 6, 4, 2 and columns 0, 3, 6: [?, 3, 3, 12]
  y = s.op("Transpose", {y}, Attrs().set("perm", ints({0, 2, 1, 3})), "transpose");
  Output a = s.op("Sigmoid", {y}, {}, "sigmoid"), t = s.op("Tanh", {y}, {}, "tanh");
  y = s.op("Add", {s.op("Mul", {a, t}, {}, "mul"), s.op("Relu", {y}, {}, "relu")}, {}, "add");
  y = s.op("Sub", {y, ops::scalar(s, 0.25f, "quarter")}, {}, "sub");
  y = s.op("Minimum", {s.op("Maximum", {y, ops::scalar(s, 0.1f, "lo")}, {}, "max"), ops::scalar(s, 2.f, "hi")}, {},
           "min");
  Output sq = s.op("Square", {y}, {}, "square");
  Output one = s.op("Add", {sq, ops::scalar(s, 1.f, "one")}, {}, "add1");
  y = s.op("AddN",
           {s.op("Rsqrt", {one}, {}, "rsqrt"), s.op("Div", {y, one}, {}, "div"), s.op("Reciprocal", {one}, {}, "recip"),
            s.op("Log",
                 {s.op("Exp", {s.op("Sqrt", {s.op("Abs", {s.op("Neg", {y}, {}, "neg")}, {}, "abs")}, {}, "sqrt")}, {},
                       "exp")},
                 {}, "log")},
           {}, "addn");
  Output mean = s.op("Mean", {y}, Attrs().set("axes", ints({1, 2})).set("keep_dims", true),
                     "mean");                                                           // [?, 1, 1, 12]
  Output flat = s.op("Squeeze", {mean}, Attrs().set("axes", ints({1, 2})), "squeeze");  // [?, 12]
  Output mx = s.op("Max", {s.op("ExpandDims", {flat}, Attrs().set("axis", int64_t{1}), "expand")},
                   Attrs().set("axes", ints({1})), "max_over");             // [?, 12]
  Output sum = s.op("Sum", {y}, Attrs().set("axes", ints({1, 2})), "sum");  // [?, 12]
  // Element-wise math, comparisons, logic and Select on [?, 12]; unit in (-0.9, 0.9).
  Output x3 = s.op("Mul", {flat, ops::scalar(s, 3.f, "three")}, {}, "x3");
  Output unit = s.op("Mul", {s.op("Tanh", {flat}, {}, "unit_tanh"), ops::scalar(s, 0.9f, "nine_tenths")}, {}, "unit");
  std::vector<Output> terms;
  for (const std::string op : {"Erf", "Floor", "Ceil", "Round", "Sin", "Cos", "Atan", "Asinh"})
    terms.push_back(s.op(op, {x3}, {}, "x3_" + op));
  for (const std::string op : {"Tan", "Asin", "Acos", "Sinh", "Cosh", "Atanh"})
    terms.push_back(s.op(op, {unit}, {}, "unit_" + op));
  terms.push_back(
      s.op("Acosh", {s.op("Add", {terms.back(), ops::scalar(s, 1.f, "plus_one")}, {}, "cosh1")}, {}, "acosh"));
  // Indexing: columns of flat (GatherV2), an element pair (GatherNd), a row
  // replaced and a row added to (TensorScatterUpdate, TensorScatterAdd).
  Output columns = s.op("Gather", {flat, ops::constant(s, Tensor::from_vector<int32_t>({3}, {0, 5, 11}), "columns")},
                        Attrs().set("axis", int64_t{1}), "gather");
  Output pair = s.op("GatherND", {flat, ops::constant(s, Tensor::from_vector<int64_t>({2, 2}, {0, 2, 1, 5}), "pair")},
                     {}, "gather_nd");
  const Output row1 = ops::constant(s, Tensor::from_vector<int64_t>({1, 1}, {1}), "row1");
  const Output fill = ops::constant(s, random_tensor({1, 12}, 9), "fill");
  for (const char* r : {"none", "add"})
    terms.push_back(
        s.op("ScatterND", {flat, row1, fill}, Attrs().set("reduction", std::string(r)), std::string("scatter_") + r));
  terms.push_back(
      s.op("CumSum", {x3}, Attrs().set("axis", int64_t{1}).set("exclusive", true).set("reverse", true), "cumsum"));
  terms.push_back(s.op("Pow", {s.op("Abs", {x3}, {}, "abs_x3"), ops::scalar(s, 1.5f, "power")}, {}, "pow"));
  // BatchMatMulV2, ArgMax, Tile, ZerosLike, OnesLike, TopKV2 on [?, 12].
  Output tokens = s.op("Reshape", {flat}, Attrs().set("shape", ints({-1, 3, 4})), "tokens");
  Output mixed = s.op("BatchMatMul", {tokens, ops::constant(s, random_tensor({1, 4, 4}, 10), "mix")},
                      Attrs().set("adj_y", true), "batch_matmul");
  terms.push_back(s.op("Reshape", {mixed}, Attrs().set("shape", ints({-1, 12})), "mixed_flat"));
  Output arg = s.op("Cast", {s.op("ArgMax", {flat}, Attrs().set("axis", int64_t{1}), "arg_max")},
                    Attrs().set("dtype", DType::kFloat32), "arg_max_f");
  terms.push_back(s.op("Tile", {s.op("ExpandDims", {arg}, Attrs().set("axis", int64_t{1}), "arg_column")},
                       Attrs().set("multiples", ints({1, 12})), "tile"));
  terms.push_back(s.op("OnesLike", {flat}, {}, "ones"));
  terms.push_back(s.op("ZerosLike", {flat}, {}, "zeros"));
  std::vector<Output> top = s.op_n("TopK", {flat}, Attrs().set("k", int64_t{12}), "top_k");
  terms.push_back(top[0]);
  terms.push_back(s.op("Cast", {top[1]}, Attrs().set("dtype", DType::kFloat32), "top_k_indices"));
  terms.push_back(s.op("Min", {y}, Attrs().set("axes", ints({1, 2})), "min"));    // [?, 12]
  terms.push_back(s.op("Prod", {y}, Attrs().set("axes", ints({1, 2})), "prod"));  // [?, 12]
  for (bool truncate : {false, true})
    terms.push_back(s.op("Mod", {x3, ops::scalar(s, -0.7f, "mod_by")}, Attrs().set("truncate", truncate),
                         truncate ? "truncate_mod" : "floor_mod"));
  auto cmp = [&](const std::string& op, Output a, float v) {
    return s.op(op, {a, ops::scalar(s, v, op + "_v")}, {}, op);
  };
  Output in_range = s.op("LogicalAnd", {cmp("Greater", x3, 0.3f), cmp("Less", x3, 2.f)}, {}, "in_range");
  Output odd = s.op("LogicalOr", {cmp("GreaterEqual", x3, 4.f), cmp("LessEqual", x3, -1.f)}, {}, "odd");
  Output cond = s.op("LogicalOr", {in_range, s.op("LogicalNot", {odd}, {}, "not_odd")}, {}, "cond");
  cond = s.op("LogicalAnd", {cond, s.op("NotEqual", {terms[1], terms[2]}, {}, "fractional")}, {}, "cond_fractional");
  cond = s.op("LogicalOr", {cond, s.op("Equal", {terms[1], terms[3]}, {}, "rounds_down")}, {}, "cond_down");
  terms.push_back(s.op("Select", {cond, terms[0], x3}, {}, "select"));
  Output math = s.op("AddN", terms, {}, "math");  // [?, 12]
  Output r = s.op("Reshape", {y}, Attrs().set("shape", ints({-1, 108})), "reshape");
  Output like = s.op("ReshapeLike", {s.op("Identity", {r}, {}, "identity"), r}, {}, "reshape_like");
  Output logits = s.op("MatMul", {like, var("fc/weights", {108, 4})}, {}, "fc");
  logits = s.op("Add",
                {logits, s.op("MatMul", {s.op("Tanh", {sum}, {}, "tanh_sum"), var("fc2/weights", {4, 12})},
                              Attrs().set("transpose_b", true), "fc2")},
                {}, "logits");
  logits = s.op("StopGradient", {logits}, {}, "stop");
  Output probs = s.op("Softmax", {logits}, {}, "probs");
  Output logp = s.op("Cast", {s.op("LogSoftmax", {logits}, {}, "logp")}, Attrs().set("dtype", DType::kFloat32), "cast");
  Output features = s.op("Concat", {mx, flat, s.op("Sigmoid", {sum}, {}, "sig_sum"), math},
                         Attrs().set("axis", int64_t{1}), "features");
  b.add_signature("default", {{"images", x}},
                  {{"default", probs}, {"log_probs", logp}, {"columns", columns}, {"pair", pair}});
  b.add_signature("image_feature_vector", {{"images", x}}, {{"default", features}});
  // Run-time dims read from reference tensors: [batch, 108] -> [batch, 12, 9], then rows 1 to the
  // batch size of the flat features' columns.
  Output split = s.op("DynamicReshape", {r, r}, Attrs().set("shape", ints({0, 12, 9})).set("from", ints({0, 1, 0})),
                      "dynamic_reshape");
  Output rows = s.op("DynamicSlice", {split, x},
                     Attrs().set("begin", ints({0, 1, 0})).set("size", ints({-1, 0, 4})).set("from", ints({1, 1, 0})),
                     "dynamic_slice");
  // Positions 0 .. batch - 1 (a limit read at run time), as floats.
  Output range = s.op("DynamicRange", {x},
                      Attrs()
                          .set("start", int64_t{0})
                          .set("delta", int64_t{1})
                          .set("dtype", DType::kFloat32)
                          .set("from", ints({0, 0, 0})),
                      "dynamic_range");
  // The images resized to [batch, 4] (a height read at run time from x's batch).
  Output resized = s.op("Resize", {x, x},
                        Attrs()
                            .set("size", ints({0, 4}))
                            .set("mode", "linear")
                            .set("coordinate_transformation_mode", "half_pixel")
                            .set("from", ints({0, 1, 0})),
                        "resize_runtime");
  // The last `batch` rows of each image: begin = H - batch at run time (GPT-2's causal-mask slice).
  Output last_rows = s.op("DynamicSlice", {x, x},
                          Attrs()
                              .set("begin", ints({0, 0, 0, 0}))
                              .set("size", ints({-1, -1, -1, -1}))
                              .set("from", ints({}))
                              .set("begin_from", ints({1, 1, 1, 1, 1, 1, 0, -1})),
                          "last_rows");
  // A row broadcast to [batch, 4] (the batch read at run time), and to a constant [2, 4].
  Output row = ops::constant(s, Tensor::floats({1, 2, 3, 4}).reshaped({1, 4}), "row");
  Output rows_of_batch =
      s.op("BroadcastTo", {row, x}, Attrs().set("shape", ints({1, 4})).set("from", ints({0, 1, 0})), "row_per_image");
  Output two_rows = s.op("BroadcastTo", {row}, Attrs().set("shape", ints({2, 4})), "two_rows");
  // batch .. 2 x batch - 1: a start and a limit linear in the run-time batch.
  Output later = s.op("DynamicRange", {x},
                      Attrs()
                          .set("delta", int64_t{1})
                          .set("dtype", DType::kFloat32)
                          .set("from", ints({}))
                          .set("terms", ints({0, 0, 0, 1, 1, 0, 0, 2})),
                      "later_positions");
  b.add_signature("dynamic", {{"images", x}},
                  {{"later_positions", later},
                   {"default", rows},
                   {"range", range},
                   {"resized", resized},
                   {"last_rows", last_rows},
                   {"row_per_image", rows_of_batch},
                   {"two_rows", two_rows}});
  // Output sizes that follow from the values: the images' values as one batch of center-point boxes
  // scored by their mean (NonMaxSuppressionV3 of corners), and NonZero of a test (Where).
  Output boxes = s.op("Reshape", {x}, Attrs().set("shape", ints({1, -1, 4})), "boxes");
  Output scores = s.op("Reshape", {s.op("Mean", {boxes}, Attrs().set("axes", ints({2})), "box_mean")},
                       Attrs().set("shape", ints({1, 1, -1})), "scores");
  Output kept = s.op("NonMaxSuppression", {boxes, scores},
                     Attrs()
                         .set("center_point_box", true)
                         .set("max_per_class", int64_t{200})
                         .set("iou_threshold", 0.3)
                         .set("score_threshold", 0.45),
                     "nms");
  Output nonzero = s.op("NonZero", {s.op("Greater", {scores, ops::scalar(s, 0.6f)}, {}, "high")}, {}, "nonzero");
  // Each image's rows reversed over its first 8, 3 and 5 (int32 lengths: batch 3).
  Output reversed =
      s.op("ReverseSequence", {x, ops::constant(s, Tensor::from_vector<int32_t>({3}, {8, 3, 5}), "lengths")},
           Attrs().set("batch_axis", int64_t{0}).set("time_axis", int64_t{1}), "reverse_rows");
  // The best min(3, kept) scores: k computed at run time from a value-dependent count.
  Output k = s.op("Minimum",
                  {ops::slice(s, s.op("Shape", {kept}, {}, "kept_shape"), {0}, {1}, "kept_count"),
                   ops::constant(s, Tensor::from_vector<int64_t>({1}, {3}), "three")},
                  {}, "k");
  Output best = s.op_n("DynamicTopK", {ops::reshape(s, scores, {-1}, "flat_scores"), k}, {}, "best")[0];
  b.add_signature("selection", {{"images", x}},
                  {{"kept", kept}, {"nonzero", nonzero}, {"reversed", reversed}, {"best", best}});
  b.add_asset("labels.txt", "a\nb\nc\nd\n");
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("a module of every exported op: the SavedModel TensorFlow reads, and back") {
  ModuleSpec spec = create_module_spec(every_op);
  TempDir dir("tf_export");
  const std::string out = dir / "saved";
  tf::export_saved_model(spec, out);
  CHECK(listing(dir.path) == std::vector<std::string>{"saved", "saved/assets", "saved/assets/labels.txt",
                                                      "saved/saved_model.pb", "saved/variables",
                                                      "saved/variables/variables.data-00000-of-00001",
                                                      "saved/variables/variables.index"});
  tf::proto::SavedModel sm;
  REQUIRE(sm.ParseFromString(read_file_bytes(out + "/saved_model.pb")));
  CHECK(sm.saved_model_schema_version() == 1);
  REQUIRE(sm.meta_graphs_size() == 1);
  const auto& mg = sm.meta_graphs(0);
  CHECK(std::vector<std::string>(mg.meta_info_def().tags().begin(), mg.meta_info_def().tags().end()) ==
        std::vector<std::string>{"serve"});
  CHECK(mg.signature_def().count("serving_default"));
  CHECK(mg.signature_def().count("image_feature_vector"));
  const auto& sd = mg.signature_def().at("serving_default");
  CHECK(sd.method_name() == "tensorflow/serving/predict");
  CHECK(sd.inputs().at("images").name() == "images:0");
  CHECK(sd.outputs().at("default").name() == "probs:0");
  CHECK(sd.inputs().at("images").tensor_shape().dim(0).size() == -1);
  // Only TensorFlow ops, each variable a VariableV2 read through name/read.
  std::map<std::string, const tf::proto::NodeDef*> nodes;
  for (const auto& n : mg.graph_def().node()) nodes[n.name()] = &n;
  const std::set<std::string> tf_ops = {"Placeholder",
                                        "Const",
                                        "VariableV2",
                                        "Identity",
                                        "Fill",
                                        "Assign",
                                        "Conv2D",
                                        "BiasAdd",
                                        "FusedBatchNorm",
                                        "Relu6",
                                        "DepthwiseConv2dNative",
                                        "Elu",
                                        "MaxPool",
                                        "AvgPool",
                                        "LRN",
                                        "ResizeBilinear",
                                        "ResizeNearestNeighbor",
                                        "ResizeBicubic",
                                        "Shape",
                                        "Range",
                                        "ConcatV2",
                                        "Pad",
                                        "PadV2",
                                        "MirrorPad",
                                        "LeakyRelu",
                                        "StridedSlice",
                                        "Slice",
                                        "Transpose",
                                        "Sigmoid",
                                        "Tanh",
                                        "Mul",
                                        "Add",
                                        "Relu",
                                        "Sub",
                                        "Maximum",
                                        "Minimum",
                                        "Square",
                                        "Rsqrt",
                                        "RealDiv",
                                        "Reciprocal",
                                        "Log",
                                        "Exp",
                                        "Sqrt",
                                        "Abs",
                                        "Neg",
                                        "AddN",
                                        "Mean",
                                        "Squeeze",
                                        "ExpandDims",
                                        "Max",
                                        "Sum",
                                        "Reshape",
                                        "Shape",
                                        "MatMul",
                                        "StopGradient",
                                        "Softmax",
                                        "LogSoftmax",
                                        "Erf",
                                        "Floor",
                                        "Ceil",
                                        "Round",
                                        "Sin",
                                        "Cos",
                                        "Tan",
                                        "Asin",
                                        "Acos",
                                        "Atan",
                                        "Sinh",
                                        "Cosh",
                                        "Asinh",
                                        "Acosh",
                                        "Atanh",
                                        "Greater",
                                        "GreaterEqual",
                                        "Less",
                                        "LessEqual",
                                        "Equal",
                                        "NotEqual",
                                        "LogicalAnd",
                                        "LogicalOr",
                                        "LogicalNot",
                                        "SelectV2",
                                        "FloorMod",
                                        "Cumsum",
                                        "BatchMatMulV2",
                                        "ArgMax",
                                        "Tile",
                                        "OnesLike",
                                        "ZerosLike",
                                        "TopKV2",
                                        "Pow",
                                        "Min",
                                        "Prod",
                                        "GatherV2",
                                        "GatherNd",
                                        "TensorScatterUpdate",
                                        "TensorScatterAdd",
                                        "TruncateMod",
                                        "Cast",
                                        "PlaceholderWithDefault",
                                        "SaveV2",
                                        "RestoreV2",
                                        "NoOp",
                                        "Where",
                                        "NonMaxSuppressionV3",
                                        "ReverseSequence",
                                        "BroadcastTo",
                                        "Minimum",
                                        "Cast",
                                        "TopKV2"};
  for (const auto& [name, n] : nodes) {
    INFO(name);
    CHECK(tf_ops.count(n->op()));
  }
  CHECK(nodes.at("conv/weights")->op() == "VariableV2");
  CHECK(nodes.at("conv/weights/read")->input(0) == "conv/weights");
  CHECK(nodes.at("conv")->input(1) == "conv/weights/read");
  CHECK(nodes.at("conv")->attr().at("padding").s() == "EXPLICIT");
  CHECK(nodes.at("conv")->attr().at("explicit_paddings").list().i_size() == 8);
  CHECK(nodes.at("resize_nearest")->attr().at("align_corners").b());
  CHECK(nodes.at("resize_cubic")->op() == "ResizeBicubic");
  CHECK(nodes.at("resize_cubic")->attr().at("half_pixel_centers").b());
  // The saver restores each variable from the key of its name.
  CHECK(mg.saver_def().restore_op_name() == "save/restore_all");
  CHECK(mg.saver_def().filename_tensor_name() == "save/Const:0");
  const auto& keys = nodes.at("save/RestoreV2/tensor_names")->attr().at("value").tensor().string_val();
  std::vector<std::string> var_names;
  for (const VariableInfo& v : spec.variables()) var_names.push_back(v.name);
  CHECK(std::vector<std::string>(keys.begin(), keys.end()).size() == var_names.size());
  tf::BundleReader bundle(out + "/variables/variables");
  CHECK(bundle.names() == var_names);
  // The variables collections: all eight variables, seven trainable.
  CHECK(mg.collection_def().at("variables").bytes_list().value_size() == 8);
  CHECK(mg.collection_def().at("trainable_variables").bytes_list().value_size() == 7);
  tf::proto::VariableDef vd;
  REQUIRE(vd.ParseFromString(mg.collection_def().at("variables").bytes_list().value(0)));
  CHECK(nodes.count(vd.initializer_name()));
  CHECK(vd.snapshot_name() == vd.variable_name().substr(0, vd.variable_name().size() - 2) + "/read:0");

  // Read back: the same outputs and variables.
  ModuleSpec back = tf::import_saved_model(out);
  CHECK(back.signature_names() ==
        std::vector<std::string>{"default", "dynamic", "image_feature_vector", "selection", "serving_default"});
  // (A fresh spec's variables start from their initializers, which the
  // export wrote.)
  Module want(spec), got(back);
  const Tensor images = random_tensor({3, 8, 8, 3}, 5, 0, 1);
  for (const char* sig : {"default", "image_feature_vector", "dynamic", "selection"}) {
    INFO(sig);
    TensorMap w = want(sig, {{"images", images}}), g = got(sig, {{"images", images}});
    REQUIRE(g.size() == w.size());
    if (std::string(sig) == "dynamic")
      CHECK(w.at("later_positions").to_vector<float>() == std::vector<float>{3, 4, 5});  // batch 3
    if (std::string(sig) == "selection") {
      // Some boxes kept and some suppressed (of 144), some scores above the cut.
      CHECK(w.at("kept").shape()[0] > 5);
      CHECK(w.at("kept").shape()[0] < 100);
      CHECK(w.at("nonzero").shape()[1] > 5);
    }
    for (const auto& [key, v] : w) expect_close(g.at(key), v, 0, 0);
  }
  for (const VariableInfo& v : back.variables()) {
    INFO(v.name);
    CHECK(v.trainable == (v.name != "bn/mean"));
    expect_close(back.weights().at(v.name), bundle.read(v.name), 0, 0);
  }
  CHECK(read_file_bytes(back.assets_dir() + "/labels.txt") == "a\nb\nc\nd\n");
}

TEST_CASE("exports that cannot be written fail before anything is written") {
  TempDir dir("tf_export_bad");
  auto no_partial = [&] { CHECK(listing(dir.path).empty()); };
  SUBCASE("ops without a TensorFlow equivalent, all named") {
    ModuleSpec spec = create_module_spec([](ModuleBuilder& b) {
      Scope s = b.scope();
      Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 5}, "x");
      Output top = s.op("HardSwish", {x}, {}, "top");
      Output sign = s.op("Sign", {x}, {}, "sign");
      Output after = s.op("Relu", {sign}, {}, "after");
      b.add_signature("default", {{"x", x}}, {{"top", top}, {"sign", sign}, {"after", after}});
    });
    // Only the ops at fault are named, not what reads them.
    try {
      tf::export_saved_model(spec, dir / "out");
      FAIL("exported");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("'after'") == std::string::npos);
    }
    expect_error(
        Code::kUnimplemented, [&] { tf::export_saved_model(spec, dir / "out"); },
        "hub node 'top' (HardSwish): op HardSwish has no TensorFlow equivalent");
    expect_error(
        Code::kUnimplemented, [&] { tf::export_saved_model(spec, dir / "out"); },
        "hub node 'sign' (Sign): op Sign has no TensorFlow equivalent");
    no_partial();
  }
  SUBCASE("attribute values TensorFlow cannot express") {
    ModuleSpec spec = create_module_spec([](ModuleBuilder& b) {
      Scope s = b.scope();
      Output x = ops::placeholder(s, DType::kFloat32, {1, 4, 4, 1}, "x");
      Output y = s.op("Resize", {x},
                      Attrs()
                          .set("size", std::vector<int64_t>{6, 6})
                          .set("mode", "linear")
                          .set("coordinate_transformation_mode", "pytorch_half_pixel"),
                      "resize");
      Output z = s.op("AvgPool", {x},
                      Attrs()
                          .set("ksize", std::vector<int64_t>{2, 2})
                          .set("strides", std::vector<int64_t>{2, 2})
                          .set("padding", "VALID")
                          .set("count_include_pad", true),
                      "pool");
      Output e =
          s.op("Pad", {x}, Attrs().set("paddings", std::vector<int64_t>{0, 0, 1, 1, 1, 1, 0, 0}).set("mode", "EDGE"),
               "edge");
      Output elu = s.op("Elu", {x}, Attrs().set("alpha", 0.5), "elu");
      b.add_signature("default", {{"x", x}}, {{"y", y}, {"z", z}, {"e", e}, {"elu", elu}});
    });
    expect_error(
        Code::kUnimplemented, [&] { tf::export_saved_model(spec, dir / "out"); },
        "hub node 'resize' (Resize): mode linear with pytorch_half_pixel has no TensorFlow "
        "equivalent");
    expect_error(
        Code::kUnimplemented, [&] { tf::export_saved_model(spec, dir / "out"); },
        "hub node 'pool' (AvgPool): count_include_pad has no TensorFlow equivalent");
    expect_error(
        Code::kUnimplemented, [&] { tf::export_saved_model(spec, dir / "out"); },
        "hub node 'edge' (Pad): EDGE padding has no TensorFlow equivalent");
    expect_error(
        Code::kUnimplemented, [&] { tf::export_saved_model(spec, dir / "out"); },
        "hub node 'elu' (Elu): Elu with alpha 0.5 has no TensorFlow equivalent (TensorFlow's "
        "alpha is 1)");
    no_partial();
  }
  SUBCASE("an existing folder, an unknown tag set") {
    ModuleSpec spec = create_module_spec(every_op);
    fs::create_directories(dir.path / "there");
    expect_error(
        Code::kAlreadyExists, [&] { tf::export_saved_model(spec, dir / "there"); }, "already exists");
    CHECK(listing(dir.path) == std::vector<std::string>{"there"});
    tf::SavedModelExportOptions o;
    o.tags = {"train"};
    expect_error(
        Code::kNotFound, [&] { tf::export_saved_model(spec, dir / "new", o); }, "has no tag set {train}");
  }
}

// TensorBoard logs (modules/train/summary.h, hub/interop/tf/display_graph.h):
// the events file read back by an independent reader (event_reader.h:
// framing, both CRCs of every record, the protobuf wire format by hand) and
// checked against values computed here: TensorFlow's histogram buckets on a
// small tensor, tf.summary.image's scaling on hand-made pixels, the graph as
// a GraphDef; and what `hub train` writes (slim's summaries of a step,
// checked against the checkpoint of the same step).
#include "modules/train/summary.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>

#include "hub/graph/graph.h"
#include "hub/image/image.h"
#include "hub/interop/tf/display_graph.h"
#include "hub/interop/tf/proto/graph.pb.h"
#include "hub/ops/activation.h"
#include "hub/ops/matmul.h"
#include "hub/ops/state.h"
#include "modules/datasets/convert.h"
#include "modules/datasets/example.h"
#include "modules/datasets/tfrecord.h"
#include "modules/train/checkpoint.h"
#include "modules/train/event_reader.h"
#include "modules/train/train.h"
#include "testutil.h"

using namespace hub;
namespace fs = std::filesystem;
namespace ev = hub::event_test;
using hub::testing::TempDir;

namespace {

// For a histogram written as TensorFlow writes it: every entry's range is
// [previous limit, limit) (from -DBL_MAX for the first), and its count is
// the number of `values` in that range; no two empty entries follow each
// other; the last limit is DBL_MAX; every limit is 0, +-DBL_MAX or
// +-1e-12 * 1.1^k for an integer k.
void check_buckets(const ev::Histogram& h, const std::vector<double>& values) {
  REQUIRE(h.limits.size() == h.counts.size());
  REQUIRE(!h.limits.empty());
  CHECK(h.limits.back() == DBL_MAX);
  double lower = -DBL_MAX;
  for (size_t i = 0; i < h.limits.size(); ++i) {
    const double limit = h.limits[i];
    CHECK(limit > lower);
    const double expected = static_cast<double>(
        std::count_if(values.begin(), values.end(), [&](double v) { return v >= lower && v < limit; }));
    CHECK_MESSAGE(h.counts[i] == expected, "bucket [" << lower << ", " << limit << ")");
    if (i > 0) CHECK_MESSAGE(!(h.counts[i] == 0 && h.counts[i - 1] == 0), "empty buckets " << i - 1 << ", " << i);
    if (limit != 0 && std::abs(limit) != DBL_MAX) {
      const double k = std::log(std::abs(limit) / 1e-12) / std::log(1.1);
      CHECK_MESSAGE(std::abs(k - std::round(k)) < 1e-6, "limit " << limit << " is 1e-12 * 1.1^" << k);
    }
    lower = limit;
  }
}

ev::Event single_summary_event(const std::function<void(tensorboard::Summary*)>& add) {
  TempDir tmp("summary");
  {
    train::SummaryWriter w(tmp / "logs");
    tensorboard::Summary s;
    add(&s);
    w.write(s, 7);
  }
  std::vector<ev::Event> events = ev::read_events_dir(tmp.path / "logs");
  REQUIRE(events.size() == 2);
  CHECK(events[1].what == 5);
  CHECK(events[1].step == 7);
  return events[1];
}

}  // namespace

TEST_CASE("histogram summary: TensorFlow's default buckets, min, max, num, sum, sum of squares") {
  const std::vector<float> x = {-2.5f, 0.0f, 0.0f, 0.5f, 1.0f, 7.0f, 1.0f};
  ev::Event e = single_summary_event(
      [&](tensorboard::Summary* s) { train::add_histogram(s, "weights", Tensor::from_vector<float>({7}, x)); });
  REQUIRE(e.values.size() == 1);
  const ev::Value& v = e.values[0];
  CHECK(v.tag == "weights");
  REQUIRE(v.kind == 5);
  const ev::Histogram& h = v.histo;
  CHECK(h.min == -2.5);
  CHECK(h.max == 7.0);
  CHECK(h.num == 7);
  CHECK(h.sum == 7.0);           // -2.5 + 0.5 + 1 + 7 + 1
  CHECK(h.sum_squares == 57.5);  // 6.25 + 0.25 + 1 + 49 + 1
  check_buckets(h, {x.begin(), x.end()});
  // Five occupied buckets and the six empty runs around them.
  REQUIRE(h.limits.size() == 11);
  // 0 lies in [0, 1e-12); 1 in [1e-12 * 1.1^289, 1e-12 * 1.1^290), since
  // 1.1^289 < 1e12 < 1.1^290 (289.9 = 12 ln 10 / ln 1.1).
  CHECK(h.limits[3] == 1e-12);
  CHECK(h.counts[3] == 2);
  CHECK(h.limits[2] == 0.0);
  CHECK(h.counts[7] == 2);
  CHECK(h.limits[7] == doctest::Approx(1e-12 * std::pow(1.1, 290)).epsilon(1e-12));
  CHECK(h.limits[7] > 1.0);
  CHECK(h.limits[6] == doctest::Approx(1e-12 * std::pow(1.1, 289)).epsilon(1e-12));
  CHECK(h.limits[6] <= 1.0);
  // -2.5's bucket ends at -1e-12 * 1.1^k for the largest k with that above -2.5.
  const double k = std::floor(std::log(2.5e12) / std::log(1.1));
  CHECK(h.limits[1] == doctest::Approx(-1e-12 * std::pow(1.1, k)).epsilon(1e-12));
}

TEST_CASE("histogram summary: an empty tensor, and a NaN refused with the tag") {
  ev::Event e = single_summary_event([](tensorboard::Summary* s) {
    train::add_histogram(s, "empty", Tensor(DType::kFloat32, {0, 3}));
  });
  const ev::Histogram& h = e.values.at(0).histo;
  CHECK(h.num == 0);
  CHECK(h.min == DBL_MAX);
  CHECK(h.max == -DBL_MAX);
  CHECK(h.limits == std::vector<double>{DBL_MAX});
  CHECK(h.counts == std::vector<double>{0});

  tensorboard::Summary s;
  hub::testing::expect_error(
      Code::kInvalidArgument,
      [&] {
        train::add_histogram(&s, "act/x", Tensor::from_vector<float>({2}, {1.0f, NAN}));
      },
      "summary histogram 'act/x'");
  hub::testing::expect_error(
      Code::kInvalidArgument, [&] { train::add_histogram(&s, "ints", Tensor::from_vector<int32_t>({1}, {1})); },
      "float32");
}

TEST_CASE("scalar summary") {
  ev::Event e = single_summary_event([](tensorboard::Summary* s) {
    train::add_scalar(s, "learning_rate", 0.01);
    train::add_scalar(s, "losses/total_loss", 2.5);
  });
  REQUIRE(e.values.size() == 2);
  CHECK(e.values[0].tag == "learning_rate");
  CHECK(e.values[0].kind == 2);
  CHECK(e.values[0].simple_value == 0.01f);
  CHECK(e.values[1].tag == "losses/total_loss");
  CHECK(e.values[1].simple_value == 2.5f);
}

TEST_CASE("image summary: tf.summary.image's scaling per image, PNG of the right size, tags") {
  // Image 0, all >= 0 with max 2: x * 255/2, truncated. Image 1 has
  // negatives, max |x| = 1: x * 127 + 128, truncated; its NaN pixel is red.
  Tensor batch = Tensor::from_vector<float>({2, 1, 3, 3}, {0.0f, 1.0f, 2.0f, 0.5f, 0.25f, 0.0f, 2.0f, 2.0f, 2.0f, -1.0f,
                                                           0.5f, 1.0f, 0.25f, NAN, 0.0f, 0.0f, 0.0f, 0.0f});
  const std::vector<std::vector<uint8_t>> expected = {{0, 127, 255, 63, 31, 0, 255, 255, 255},
                                                      {1, 191, 255, 255, 0, 0, 128, 128, 128}};
  ev::Event e = single_summary_event([&](tensorboard::Summary* s) { train::add_images(s, "input", batch, 3); });
  REQUIRE(e.values.size() == 2);  // max_outputs 3 > batch 2
  for (int i = 0; i < 2; ++i) {
    const ev::Value& v = e.values[i];
    CHECK(v.tag == "input/image/" + std::to_string(i));
    REQUIRE(v.kind == 4);
    CHECK(v.image.height == 1);
    CHECK(v.image.width == 3);
    CHECK(v.image.colorspace == 3);
    const auto* bytes = reinterpret_cast<const uint8_t*>(v.image.encoded.data());
    REQUIRE(image::probe_image({bytes, v.image.encoded.size()}, "summary").format == image::Format::kPng);
    Tensor px = image::decode_image_u8({bytes, v.image.encoded.size()}, {}, "summary");
    REQUIRE(px.shape() == Shape({1, 3, 3}));
    CHECK(std::vector<uint8_t>(px.data<uint8_t>(), px.data<uint8_t>() + 9) == expected[i]);
  }

  // One output: "<tag>/image"; gray images: colorspace 1.
  Tensor gray = Tensor::from_vector<float>({3, 2, 2, 1}, std::vector<float>(12, 0.5f));
  ev::Event g = single_summary_event([&](tensorboard::Summary* s) { train::add_images(s, "gray", gray, 1); });
  REQUIRE(g.values.size() == 1);
  CHECK(g.values[0].tag == "gray/image");
  CHECK(g.values[0].image.colorspace == 1);
  image::DecodeOptions one;
  one.channels = 1;
  const auto* bytes = reinterpret_cast<const uint8_t*>(g.values[0].image.encoded.data());
  Tensor px = image::decode_image_u8({bytes, g.values[0].image.encoded.size()}, one, "summary");
  CHECK(px.shape() == Shape({2, 2, 1}));
  CHECK(px.data<uint8_t>()[0] == 255);  // 0.5 * 255/0.5

  tensorboard::Summary s;
  hub::testing::expect_error(
      Code::kInvalidArgument,
      [&] {
        train::add_images(&s, "bad", Tensor(DType::kFloat32, {2, 4, 4, 2}));
      },
      "summary image 'bad'");
}

TEST_CASE("the graph event: a GraphDef with the nodes, ops, inputs and shapes of the graph") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 3}, "images");
  Scope fc = s.sub("fc");
  Output w = ops::variable(fc, "weights", {3, 2});
  Output y = ops::relu(fc, ops::matmul(fc, x, w));
  TempDir tmp("graph");
  {
    train::SummaryWriter writer(tmp / "logs");
    writer.graph(tf::display_graph_def(g).SerializeAsString());
  }
  std::vector<ev::Event> events = ev::read_events_dir(tmp.path / "logs");
  REQUIRE(events.size() == 2);
  REQUIRE(events[1].what == 4);
  tf::proto::GraphDef def;
  REQUIRE(def.ParseFromString(events[1].graph_def));
  REQUIRE(def.node_size() == g.num_nodes());
  std::map<std::string, const tf::proto::NodeDef*> by_name;
  for (const auto& n : def.node()) by_name[n.name()] = &n;
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    REQUIRE(by_name.count(n.name) == 1);
    const tf::proto::NodeDef& d = *by_name[n.name];
    CHECK(d.op() == n.op);
    REQUIRE(d.input_size() == static_cast<int>(n.inputs.size()));
    for (size_t i = 0; i < n.inputs.size(); ++i) CHECK(d.input(static_cast<int>(i)) == g.node(n.inputs[i].node).name);
    const auto& shapes = d.attr().at("_output_shapes").list().shape();
    REQUIRE(shapes.size() == static_cast<int>(n.outputs.size()));
    for (int k = 0; k < shapes.size(); ++k) {
      REQUIRE(shapes[k].dim_size() == n.outputs[k].shape.rank());
      for (int j = 0; j < shapes[k].dim_size(); ++j)
        CHECK(shapes[k].dim(j).size() == (n.outputs[k].shape[j] < 0 ? -1 : n.outputs[k].shape[j]));
    }
  }
  CHECK(by_name.at(g.node(w).name)->op() == "Variable");
  CHECK(by_name.at(g.node(y).name)->op() == "Relu");
  CHECK(by_name.at("images")->attr().at("_output_shapes").list().shape(0).dim(0).size() == -1);
}

TEST_CASE("hub train writes slim's summaries: variables, activations, sparsity, gradients, images, the graph") {
  TempDir tmp("train_summaries");
  // 8 gray 28x28 images of 2 classes.
  const fs::path data = tmp.path / "data";
  fs::create_directories(data);
  {
    data::TFRecordWriter w((data / data::shard_file_name("tiny", "train", 0, 1)).string());
    for (int i = 0; i < 8; ++i) {
      Tensor img(DType::kUInt8, {28, 28, 1});
      for (int64_t p = 0; p < 28 * 28; ++p) img.data<uint8_t>()[p] = static_cast<uint8_t>((p * (i % 2 + 1) * 37) % 256);
      std::vector<uint8_t> png = image::encode_png(img);
      w.write(data::make_image_example({std::string(png.begin(), png.end()), "png", i % 2, 28, 28}));
    }
    w.commit();
  }
  data::write_labels_file((data / "labels.txt").string(), {"a", "b"});
  train::TrainConfig c;
  c.train_dir = tmp / "train";
  c.model_name = "lenet";
  c.dataset_name = "tiny";
  c.dataset_dir = data.string();
  c.batch_size = 4;
  c.max_number_of_steps = 1;
  c.num_preprocessing_threads = 1;
  c.learning_rate = 0.02;
  c.learning_rate_decay_type = "fixed";
  c.optimizer = "sgd";
  c.summarize_gradients = true;
  c.seed = 3;
  train::TrainResult r = train::train(c);
  REQUIRE(r.steps == 1);

  std::vector<ev::Event> events = ev::read_events_dir(c.train_dir);
  REQUIRE(events.size() == 3);  // version, graph, the summary of step 1
  REQUIRE(events[1].what == 4);
  tf::proto::GraphDef def;
  REQUIRE(def.ParseFromString(events[1].graph_def));
  std::set<std::string> node_names, ops;
  for (const auto& n : def.node()) {
    node_names.insert(n.name());
    ops.insert(n.op());
  }
  CHECK(node_names.count("LeNet/conv1/weights"));
  CHECK(node_names.count("LeNet/fc4/biases"));
  CHECK(ops.count("Conv2D"));
  CHECK(ops.count("Conv2DBackpropFilter"));  // the gradients are in the training graph

  const ev::Event& e = events[2];
  REQUIRE(e.what == 5);
  CHECK(e.step == 1);
  REQUIRE(e.find("learning_rate"));
  CHECK(e.find("learning_rate")->simple_value == 0.02f);
  REQUIRE(e.find("losses/total_loss"));
  CHECK(e.find("losses/total_loss")->simple_value == static_cast<float>(r.first_loss));

  // The model variables: histograms equal to the checkpoint of this step.
  train::CheckpointReader checkpoint(r.checkpoint);
  int variables = 0;
  for (const std::string& name : checkpoint.names()) {
    if (name.rfind("optimizer/", 0) == 0) continue;
    ++variables;
    const ev::Value* v = e.find(name);
    REQUIRE_MESSAGE(v, name);
    REQUIRE(v->kind == 5);
    Tensor t = checkpoint.read(name);
    std::vector<double> values(t.data<float>(), t.data<float>() + t.num_elements());
    CHECK(v->histo.num == static_cast<double>(values.size()));
    CHECK(v->histo.min == *std::min_element(values.begin(), values.end()));
    CHECK(v->histo.max == *std::max_element(values.begin(), values.end()));
    CHECK(v->histo.sum == doctest::Approx(std::accumulate(values.begin(), values.end(), 0.0)).epsilon(1e-9));
    if (values.size() < 2000) check_buckets(v->histo, values);

    // The gradient and its norm (a histogram of one value).
    const ev::Value* g = e.find(name + "_gradient");
    const ev::Value* norm = e.find(name + "_gradient_norm");
    REQUIRE_MESSAGE(g, name);
    REQUIRE_MESSAGE(norm, name);
    CHECK(g->histo.num == static_cast<double>(values.size()));
    CHECK(norm->histo.num == 1);
    CHECK(norm->histo.min == norm->histo.max);
    CHECK(norm->histo.min == doctest::Approx(std::sqrt(g->histo.sum_squares)).epsilon(1e-6));
  }
  CHECK(variables == 8);  // 4 layers, weights and biases

  // Activations and sparsity of every end point; a ReLU's zeros are its
  // histogram's [0, 1e-12) bucket.
  int end_points = 0;
  for (const ev::Value& v : e.values) {
    if (v.tag.rfind("activations/", 0) != 0) continue;
    ++end_points;
    const std::string name = v.tag.substr(12);
    const ev::Value* sparsity = e.find("sparsity/" + name);
    REQUIRE_MESSAGE(sparsity, name);
    CHECK(sparsity->simple_value >= 0.0f);
    CHECK(sparsity->simple_value <= 1.0f);
    if (v.histo.min == 0.0) {
      auto it = std::find(v.histo.limits.begin(), v.histo.limits.end(), 1e-12);
      REQUIRE(it != v.histo.limits.end());
      const double zeros = v.histo.counts[it - v.histo.limits.begin()];
      CHECK(sparsity->simple_value == doctest::Approx(zeros / v.histo.num));
    }
  }
  CHECK(end_points >= 4);
  REQUIRE(e.find("activations/conv1"));
  CHECK(e.find("activations/conv1")->histo.num == 4 * 28 * 28 * 32);

  // The first 3 images of the preprocessed batch.
  for (int i = 0; i < 3; ++i) {
    const ev::Value* img = e.find("input_images/image/" + std::to_string(i));
    REQUIRE(img);
    CHECK(img->image.height == 28);
    CHECK(img->image.width == 28);
    CHECK(img->image.colorspace == 1);
    image::DecodeOptions one;
    one.channels = 1;
    const auto* bytes = reinterpret_cast<const uint8_t*>(img->image.encoded.data());
    CHECK(image::decode_image_u8({bytes, img->image.encoded.size()}, one, "summary").shape() == Shape({28, 28, 1}));
  }
  CHECK(!e.find("input_images/image/3"));
}

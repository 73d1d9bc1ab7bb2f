// Built-in networks: parameter counts, multiply-adds and output shapes against
// the published slim / Keras / TF figures; docs/nets.md's table against the
// graphs; small nets run on a tiny batch, and the larger families run with
// gradients at small input sizes (never at full size here).
#include "modules/nets/nets.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "hub/graph/optimizer.h"
#include "hub/graph/session.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;

namespace {
struct Built {
  Graph g;
  nets::Net net;
  Output images;
};

// The net at its default image size, or at `size` when given.
std::unique_ptr<Built> build(const std::string& name, int64_t classes, bool training = false, int64_t size = 0) {
  auto b = std::make_unique<Built>();
  const nets::NetInfo& info = nets::find_net(name);
  if (size == 0) size = info.image_size;
  Scope s(b->g);
  b->images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, size, size, info.channels}, "images");
  nets::NetOptions o;
  o.num_classes = classes;
  o.is_training = training;
  b->net = nets::build_net(name, s, b->images, o);
  return b;
}

// Elements of the variables whose names lack `without` (all if empty).
int64_t elements(const Graph& g, const std::string& without = "") {
  int64_t n = 0;
  for (int id : g.variables(false))
    if (without.empty() || g.node(id).name.find(without) == std::string::npos)
      n += g.node(id).outputs[0].shape.num_elements();
  return n;
}
}  // namespace

TEST_CASE("small nets: exact parameter counts computed by hand") {
  // lenet / mnist: conv1 5*5*1*32+32, conv2 5*5*32*64+64, fc 7*7*64*1024+1024, logits 1024*10+10.
  const int64_t lenet = 832 + 51264 + 3212288 + 10250;
  CHECK(nets::count_parameters(build("lenet", 10)->g, true) == lenet);
  CHECK(nets::count_parameters(build("mnist", 10)->g, true) == lenet);
  // cifarnet: conv1 5*5*3*64+64, conv2 5*5*64*64+64, fc3 8*8*64*384+384, fc4 384*192+192, logits 192*10+10.
  CHECK(nets::count_parameters(build("cifarnet", 10)->g, true) == 4864 + 102464 + 1573248 + 73920 + 1930);
  // cifar10 (24x24 crops): local3 takes 6*6*64 = 2304 inputs.
  CHECK(nets::count_parameters(build("cifar10", 10)->g, true) == 4864 + 102464 + 885120 + 73920 + 1930);
  // alexnet_v2: conv1 11*11*3*64+64, conv2 5*5*64*192+192, conv3 3*3*192*384+384,
  // conv4 3*3*384*384+384, conv5 3*3*384*256+256, fc6 5*5*256*4096+4096,
  // fc7 4096*4096+4096, fc8 4096*1000+1000.
  CHECK(nets::count_parameters(build("alexnet_v2", 1000)->g, true) ==
        23296 + 307392 + 663936 + 1327488 + 884992 + 26218496 + 16781312 + 4097000);
}

TEST_CASE("large nets: published parameter counts") {
  // VGG (Simonyan & Zisserman; Keras applications): 1000 classes.
  CHECK(nets::count_parameters(build("vgg_16", 1000)->g, true) == 138357544);
  CHECK(nets::count_parameters(build("vgg_19", 1000)->g, true) == 143667240);
  CHECK(nets::count_parameters(build("vgg_a", 1000)->g, true) == 132863336);
  // Inception v3 without aux head, 1000 classes, all variables (Keras: 23,851,784).
  CHECK(nets::count_parameters(build("inception_v3", 1000)->g, false) == 23851784);
  // ResNet-50 v1: 25,557,032 trainable (conv weights, BN gamma/beta, fc).
  CHECK(nets::count_parameters(build("resnet_v1_50", 1000)->g, true) == 25557032);
  // ResNet-101 / -152 (same units, more of them): 44,549,160 and 60,192,808.
  CHECK(nets::count_parameters(build("resnet_v1_101", 1000)->g, true) == 44549160);
  CHECK(nets::count_parameters(build("resnet_v1_152", 1000)->g, true) == 60192808);
  // GoogLeNet / Inception v1: about 6.6 M (slim's table), 1.5 G multiply-adds.
  auto v1 = build("inception_v1", 1001);
  CHECK(static_cast<double>(nets::count_parameters(v1->g, true)) / 1e6 == doctest::Approx(6.6).epsilon(0.01));
  CHECK(static_cast<double>(nets::count_macs(v1->g)) / 1e9 == doctest::Approx(1.5).epsilon(0.01));
  // MobileNet v1 1.0/224: 4,231,976 trainable with 1000 classes (Keras).
  CHECK(nets::count_parameters(build("mobilenet_v1", 1000)->g, true) == 4231976);
}

TEST_CASE("mobilenet multiply-adds and shapes match slim's table") {
  auto m = build("mobilenet_v1", 1001);
  double macs = static_cast<double>(nets::count_macs(m->g)) / 1e6;
  CHECK(macs == doctest::Approx(569).epsilon(0.01));  // slim: 569 M
  CHECK(m->g.spec(m->net.logits).shape == Shape({kUnknownDim, 1001}));
  CHECK(m->g.spec(m->net.features).shape == Shape({kUnknownDim, 1024}));
  auto half = build("mobilenet_v1_050_160", 1001);
  CHECK(static_cast<double>(nets::count_macs(half->g)) / 1e6 == doctest::Approx(77).epsilon(0.02));  // slim: 77 M
  CHECK(static_cast<double>(nets::count_parameters(half->g, true)) / 1e6 == doctest::Approx(1.34).epsilon(0.01));
  CHECK(half->g.spec(half->net.features).shape == Shape({kUnknownDim, 512}));
  CHECK(half->g.find("MobilenetV1/Conv2d_13_pointwise/weights").has_value());
  CHECK(half->g.find("MobilenetV1/Conv2d_1_depthwise/depthwise_weights").has_value());
}

TEST_CASE("end points and variable names follow slim") {
  auto r = build("resnet_v1_50", 1000);
  CHECK(r->g.find("resnet_v1_50/block1/unit_1/bottleneck_v1/conv1/weights").has_value());
  CHECK(r->g.find("resnet_v1_50/block4/unit_3/bottleneck_v1/conv3/BatchNorm/gamma").has_value());
  CHECK(r->g.spec(r->net.end_points.at("block4")).shape == Shape({kUnknownDim, 7, 7, 2048}));
  auto v = build("inception_v3", 1001);
  CHECK(v->g.find("InceptionV3/Mixed_5b/Branch_1/Conv2d_0b_5x5/weights").has_value());
  CHECK(v->g.spec(v->net.end_points.at("Mixed_7c")).shape == Shape({kUnknownDim, 8, 8, 2048}));
  auto g1 = build("inception_v1", 1001);
  CHECK(g1->g.spec(g1->net.end_points.at("Mixed_5c")).shape == Shape({kUnknownDim, 7, 7, 1024}));
  auto vg = build("vgg_16", 1000);
  CHECK(vg->g.find("vgg_16/conv1/conv1_1/weights").has_value());
  CHECK(vg->g.spec(vg->net.logits).shape == Shape({kUnknownDim, 1000}));
  CHECK_THROWS_AS(nets::find_net("no_such_net"), Error);
}

TEST_CASE("small nets run and give finite logits") {
  for (const char* name : {"lenet", "cifarnet", "mnist", "cifar10"}) {
    INFO(std::string(name));
    auto b = build(name, 10);
    VariableStore vars;
    vars.initialize(b->g);
    Session session(b->g, &vars);
    const nets::NetInfo& info = nets::find_net(name);
    Tensor x = hub::testing::random_tensor({2, info.image_size, info.image_size, info.channels}, 7, 0, 1);
    Tensor logits = session.run({{b->images, x}}, {b->net.logits})[0];
    CHECK(logits.shape() == Shape({2, 10}));
    for (float v : logits.to_vector<float>()) CHECK(std::isfinite(v));
  }
}

TEST_CASE("slim's later nets: parameter counts of independent ports of the same checkpoints") {
  // Keras applications' model summaries (converted from slim's checkpoints;
  // 1000 classes, no auxiliary head): trainable parameters and all of them
  // (with the batch-norm moving statistics).
  struct Row {
    std::string name;
    int64_t trainable, all;
  };
  for (const Row& r : {Row{"inception_resnet_v2", 55813192, 55873736}, Row{"nasnet_mobile", 5289978, 5326716},
                       Row{"nasnet_large", 88753150, 88949818}, Row{"mobilenet_v2", 3504872, 3538984},
                       Row{"mobilenet_v2_140", 6108776, 6156712}, Row{"resnet_v2_50", 25568360, 25613800},
                       Row{"resnet_v2_101", 44577896, 44675560}, Row{"resnet_v2_152", 60236904, 60380648}}) {
    CAPTURE(r.name);
    auto b = build(r.name, 1000);
    CHECK(nets::count_parameters(b->g, true) == r.trainable);
    CHECK(nets::count_parameters(b->g, false) == r.all);
  }
  // Inception v4 has no Keras port; timm's (from the same checkpoint, 1000
  // classes) has 42,679,816 parameters, its batch norms carrying a gamma that
  // slim's (scale=False) lack: trainable + one per batch-norm channel.
  auto v4 = build("inception_v4", 1000);
  const int64_t v4_trainable = nets::count_parameters(v4->g, true);
  CHECK(v4_trainable + (nets::count_parameters(v4->g, false) - v4_trainable) / 2 == 42679816);
  CHECK(v4_trainable == 42648232);
  // slim's OverFeat (overfeat.py), by hand: conv1 11*11*3*64+64,
  // conv2 5*5*64*256+256, conv3 3*3*256*512+512, conv4 3*3*512*1024+1024,
  // conv5 3*3*1024*1024+1024, fc6 6*6*1024*3072+3072, fc7 3072*4096+4096,
  // fc8 4096*1000+1000 (about 145 M).
  CHECK(nets::count_parameters(build("overfeat", 1000)->g, true) ==
        23296 + 409856 + 1180160 + 4719616 + 9438208 + 113249280 + 12587008 + 4097000);
  // ResNet-200 (v1 and v2): block2 24 units and block3 36 (resnet_v1.py's
  // resnet_v1_200). Its difference from ResNet-152 is 16 more block2 units of
  // 1x1 512->128, 3x3 128->128, 1x1 128->512 with their batch norms.
  const int64_t unit2 = 512 * 128 + 2 * 128 + 9 * 128 * 128 + 2 * 128 + 128 * 512 + 2 * 512;
  CHECK(nets::count_parameters(build("resnet_v1_200", 1000)->g, true) == 60192808 + 16 * unit2);
}

TEST_CASE("slim's README tables: MobileNet v2, NASNet and PNASNet multiply-adds and parameters") {
  // research/slim/nets/mobilenet/README.md: MACs (millions) and parameters
  // (millions; the weights without batch-norm variables, 1001 classes).
  struct Row {
    std::string name;
    double macs, params;
  };
  const Row v2[] = {
      {"mobilenet_v2_140_224", 582, 6.06}, {"mobilenet_v2_130_224", 509, 5.34}, {"mobilenet_v2_100_224", 300, 3.47},
      {"mobilenet_v2_100_192", 221, 3.47}, {"mobilenet_v2_100_160", 154, 3.47}, {"mobilenet_v2_100_128", 99, 3.47},
      {"mobilenet_v2_100_96", 56, 3.47},   {"mobilenet_v2_075_224", 209, 2.61}, {"mobilenet_v2_075_192", 153, 2.61},
      {"mobilenet_v2_075_160", 107, 2.61}, {"mobilenet_v2_075_128", 69, 2.61},  {"mobilenet_v2_075_96", 39, 2.61},
      {"mobilenet_v2_050_224", 97, 1.95},  {"mobilenet_v2_050_192", 71, 1.95},  {"mobilenet_v2_050_160", 50, 1.95},
      {"mobilenet_v2_050_128", 32, 1.95},  {"mobilenet_v2_050_96", 18, 1.95},   {"mobilenet_v2_035_224", 59, 1.66},
      {"mobilenet_v2_035_192", 43, 1.66},  {"mobilenet_v2_035_160", 30, 1.66},  {"mobilenet_v2_035_128", 20, 1.66},
      {"mobilenet_v2_035_96", 11, 1.66}};
  for (const Row& r : v2) {
    CAPTURE(r.name);
    auto b = build(r.name, 1001);
    const double macs = static_cast<double>(nets::count_macs(b->g)) / 1e6;
    CHECK(macs >= r.macs);  // the table truncates
    CHECK(macs < r.macs + 1);
    CHECK(std::abs(static_cast<double>(elements(b->g, "BatchNorm")) / 1e6 - r.params) <= 0.005);
  }
  // The NASNet and PNASNet papers (slim's nasnet/README.md has NASNet's):
  // multiply-adds in millions and trainable parameters in millions, 1001
  // classes. The papers' own counters round differently from the graphs'
  // (PNASNet-5 mobile has 587.3 M here, 588 there; large 24.94 G vs 25.0 G),
  // hence the 0.3% on MACs; parameters agree to the digit printed except
  // NASNet-A large's 88.9 M (88.76 M here, the figure 0.2% apart; the exact
  // count is checked against Keras above).
  struct Paper {
    std::string name;
    double macs, params, params_tolerance;
  };
  for (const Paper& r : {Paper{"nasnet_mobile", 564, 5.3, 0.05}, Paper{"nasnet_large", 23800, 88.9, 0.15},
                         Paper{"pnasnet_mobile", 588, 5.1, 0.05}, Paper{"pnasnet_large", 25000, 86.1, 0.05}}) {
    CAPTURE(r.name);
    auto b = build(r.name, 1001);
    CHECK(static_cast<double>(nets::count_macs(b->g)) / 1e6 == doctest::Approx(r.macs).epsilon(0.003));
    CHECK(std::abs(static_cast<double>(nets::count_parameters(b->g, true)) / 1e6 - r.params) <= r.params_tolerance);
  }
  // Widths: 1280 features below multiplier 1 (the published checkpoints), 1792 at 1.4.
  auto narrow = build("mobilenet_v2_035", 0);
  CHECK(narrow->g.spec(narrow->net.features).shape == Shape({kUnknownDim, 1280}));
  auto wide = build("mobilenet_v2_140", 0);
  CHECK(wide->g.spec(wide->net.features).shape == Shape({kUnknownDim, 1792}));
  auto nas = build("nasnet_large", 0);
  CHECK(nas->g.spec(nas->net.features).shape == Shape({kUnknownDim, 4032}));
  auto pnas = build("pnasnet_mobile", 0);
  CHECK(pnas->g.spec(pnas->net.features).shape == Shape({kUnknownDim, 1080}));
}

TEST_CASE("docs/nets.md's table lists every net with what the graphs give") {
  // Every row: default input, classes, preprocessing, parameters (trainable,
  // default classes) and multiply-adds as `hub nets --stats` computes them,
  // to the digits printed.
  std::ifstream in(std::string(HUB_SOURCE_DIR) + "/docs/nets.md");
  REQUIRE(in);
  auto trim = [](const std::string& c) {
    const size_t b = c.find_first_not_of(' ');
    return b == std::string::npos ? std::string() : c.substr(b, c.find_last_not_of(' ') - b + 1);
  };
  // "3,274,634" -> exact; "13.9 M", "1.50 G" -> value and half a unit in the last place.
  auto number = [](std::string cell) {
    cell.erase(std::remove(cell.begin(), cell.end(), ','), cell.end());
    std::istringstream is(cell);
    double v = 0;
    std::string unit;
    is >> v >> unit;
    const double scale = unit == "G" ? 1e9 : unit == "M" ? 1e6 : 1;
    const std::string digits = cell.substr(0, cell.find(' '));
    const size_t dot = digits.find('.');
    const int decimals = dot == std::string::npos ? 0 : static_cast<int>(digits.size() - dot - 1);
    return std::pair<double, double>{v * scale, unit.empty() ? 0 : 0.5 * std::pow(10.0, -decimals) * scale};
  };
  std::set<std::string> listed;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    for (std::string c; std::getline(row, c, '|');) cells.push_back(trim(c));
    if (cells.size() < 7 || cells[0] == "name") continue;
    const std::string name = cells[0];
    CAPTURE(name);
    CHECK(listed.insert(name).second);
    const nets::NetInfo& info = nets::find_net(name);
    const std::string size = std::to_string(info.image_size);
    CHECK(cells[1] == size + "×" + size + "×" + std::to_string(info.channels));
    CHECK(cells[2] == std::to_string(info.default_classes));
    CHECK(cells[3] == info.preprocessing);
    auto b = build(name, info.default_classes);
    auto [params, params_round] = number(cells[4]);
    auto [macs, macs_round] = number(cells[5]);
    CHECK(std::abs(static_cast<double>(nets::count_parameters(b->g, true)) - params) <= params_round);
    CHECK(std::abs(static_cast<double>(nets::count_macs(b->g)) - macs) <= macs_round);
  }
  const std::vector<std::string> names = nets::net_names();
  CHECK(listed == std::set<std::string>(names.begin(), names.end()));
}

TEST_CASE("the later families run at small sizes, and every variable gets a gradient") {
  // Inference graphs at the smallest sizes each net allows (VALID stems),
  // batch 2: finite logits of the right shape, and the gradient of a loss on
  // them reaches every trainable variable with a nonzero value (a variable
  // the cells leave unwired would have none).
  struct Case {
    std::string name;
    int64_t size;
  };
  for (const Case& c : {Case{"mobilenet_v2_035", 32}, Case{"inception_v2", 32}, Case{"inception_v4", 75},
                        Case{"inception_resnet_v2", 75}, Case{"nasnet_cifar", 8}, Case{"nasnet_mobile", 32},
                        Case{"pnasnet_mobile", 32}}) {
    CAPTURE(c.name);
    auto b = build(c.name, 3, false, c.size);
    Scope s(b->g);
    Output labels = ops::placeholder(s, DType::kInt64, {kUnknownDim}, "labels");
    Output loss = ops::sparse_softmax_cross_entropy(s, b->net.logits, labels);
    const GradientOps grads = build_gradients(s, loss);
    CHECK(grads.variables.size() == b->g.variables(true).size());
    VariableStore vars;
    b->g.set_seed(3);
    vars.initialize(b->g);
    Session session(b->g, &vars);
    std::vector<Output> fetch{b->net.logits};
    fetch.insert(fetch.end(), grads.gradients.begin(), grads.gradients.end());
    const auto out = session.run({{b->images, hub::testing::random_tensor({2, c.size, c.size, 3}, 11, -1, 1)},
                                  {labels, Tensor::from_vector<int64_t>({2}, {0, 2})}},
                                 fetch);
    CHECK(out[0].shape() == Shape({2, 3}));
    for (float v : out[0].to_vector<float>()) CHECK(std::isfinite(v));
    int without_gradient = 0;
    for (size_t i = 1; i < out.size(); ++i) {
      const std::vector<float> g = out[i].to_vector<float>();
      if (std::none_of(g.begin(), g.end(), [](float v) { return v != 0; })) {
        MESSAGE("no gradient reaches " << grads.variables[i - 1]);
        ++without_gradient;
      }
    }
    CHECK(without_gradient == 0);
  }
}

// Built-in networks: parameter counts, multiply-adds and output shapes against
// the published slim / Keras / TF figures; small nets run on a tiny batch.
#include <doctest/doctest.h>

#include <cmath>

#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "modules/nets/nets.h"
#include "testutil.h"

using namespace hub;

namespace {
struct Built {
  Graph g;
  nets::Net net;
  Output images;
};

std::unique_ptr<Built> build(const std::string& name, int64_t classes, bool training = false) {
  auto b = std::make_unique<Built>();
  const nets::NetInfo& info = nets::find_net(name);
  Scope s(b->g);
  b->images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, info.image_size, info.image_size, info.channels},
                               "images");
  nets::NetOptions o;
  o.num_classes = classes;
  o.is_training = training;
  b->net = nets::build_net(name, s, b->images, o);
  return b;
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
  CHECK(macs == doctest::Approx(569).epsilon(0.01));   // slim: 569 M
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

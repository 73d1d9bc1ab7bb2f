// Every built-in net creates exactly the variables (names and shapes) that
// the checkpoints of its reference implementation hold, so those checkpoints
// load by name (hub train --checkpoint_path). The expectations are derived
// here, independently of modules/nets, from the reference definitions in
// tensorflow/models:
//   research/slim/nets/{lenet,cifarnet,alexnet,vgg,inception_v1,inception_v3,
//   resnet_v1,resnet_v2,mobilenet_v1}.py with inception_utils.py and
//   resnet_utils.py (their arg scopes: which layers have batch norm, which
//   scale it), tutorials/image/cifar10/cifar10.py, official/mnist/mnist.py.
// slim's rules: slim.conv2d creates <scope>/weights [kh, kw, in, out], then
// <scope>/BatchNorm/{beta, gamma if scale, moving_mean, moving_variance} when
// the arg scope has normalizer_fn=batch_norm, else <scope>/biases [out];
// slim.separable_conv2d with num_outputs=None creates depthwise_weights
// [kh, kw, in, multiplier]; slim.fully_connected creates weights [in, out];
// slim.batch_norm(scope=S) creates S/{beta, ...} directly; layers called with
// normalizer_fn=None (logits, resnet_v2's shortcut and conv3) have biases.
#include <doctest/doctest.h>

#include <map>
#include <sstream>

#include "hub/graph/graph.h"
#include "hub/ops/state.h"
#include "modules/nets/nets.h"

using namespace hub;

namespace {

// Expected variables, built layer by layer with slim's naming rules.
struct Expected {
  std::map<std::string, Shape> vars;
  bool scale = false;  // the arg scope's batch_norm scale (gamma)

  void batch_norm(const std::string& scope, int64_t c) {
    vars[scope + "/beta"] = {c};
    if (scale) vars[scope + "/gamma"] = {c};
    vars[scope + "/moving_mean"] = {c};
    vars[scope + "/moving_variance"] = {c};
  }
  // slim.conv2d with batch norm; returns the output depth.
  int64_t conv(const std::string& scope, int64_t kh, int64_t kw, int64_t in, int64_t out) {
    vars[scope + "/weights"] = {kh, kw, in, out};
    batch_norm(scope + "/BatchNorm", out);
    return out;
  }
  // slim.conv2d without normalizer: biases.
  int64_t conv_biased(const std::string& scope, int64_t kh, int64_t kw, int64_t in, int64_t out) {
    vars[scope + "/weights"] = {kh, kw, in, out};
    vars[scope + "/biases"] = {out};
    return out;
  }
  int64_t depthwise(const std::string& scope, int64_t k, int64_t in) {
    vars[scope + "/depthwise_weights"] = {k, k, in, 1};
    batch_norm(scope + "/BatchNorm", in);
    return in;
  }
  int64_t fully_connected(const std::string& scope, int64_t in, int64_t out) {
    vars[scope + "/weights"] = {in, out};
    vars[scope + "/biases"] = {out};
    return out;
  }
};

// The variables hub's net creates: the training graph with the published
// number of classes at the default image size (inception_v3 with AuxLogits,
// which its checkpoint holds).
std::map<std::string, Shape> hub_variables(const std::string& name) {
  const nets::NetInfo& info = nets::find_net(name);
  Graph g;
  Scope s(g);
  Output images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, info.image_size, info.image_size, info.channels});
  nets::NetOptions o;
  o.num_classes = info.default_classes;
  o.is_training = true;
  o.create_aux_logits = name == "inception_v3";
  nets::build_net(name, s, images, o);
  std::map<std::string, Shape> out;
  for (int id : g.variables()) out[g.node(id).name] = g.node(id).outputs[0].shape;
  return out;
}

// "" when equal, else what differs (at most 30 lines).
std::string differences(const std::map<std::string, Shape>& want, const std::map<std::string, Shape>& got) {
  std::ostringstream out;
  int lines = 0;
  auto line = [&](const std::string& s) {
    if (lines++ < 30) out << s << "\n";
  };
  for (const auto& [name, shape] : want) {
    auto it = got.find(name);
    if (it == got.end()) line("missing in hub: " + name + " " + shape.to_string());
    else if (it->second != shape) line("shape of " + name + ": slim " + shape.to_string() + ", hub " + it->second.to_string());
  }
  for (const auto& [name, shape] : got)
    if (!want.count(name)) line("not in slim: " + name + " " + shape.to_string());
  if (lines > 30) out << "... " << lines - 30 << " more\n";
  return out.str();
}

// ------------------------------------------------------------ the nets

Expected lenet() {  // lenet.py, 28x28x1: 5x5 SAME convs, 2x2/2 VALID pools -> 7x7x64
  Expected e;
  e.conv_biased("LeNet/conv1", 5, 5, 1, 32);
  e.conv_biased("LeNet/conv2", 5, 5, 32, 64);
  e.fully_connected("LeNet/fc3", 7 * 7 * 64, 1024);
  e.fully_connected("LeNet/fc4", 1024, 10);
  return e;
}

Expected cifarnet() {  // cifarnet.py, 32x32x3: 2x2/2 pools -> 8x8x64
  Expected e;
  e.conv_biased("CifarNet/conv1", 5, 5, 3, 64);
  e.conv_biased("CifarNet/conv2", 5, 5, 64, 64);
  e.fully_connected("CifarNet/fc3", 8 * 8 * 64, 384);
  e.fully_connected("CifarNet/fc4", 384, 192);
  e.fully_connected("CifarNet/logits", 192, 10);
  return e;
}

Expected cifar10() {  // cifar10.py inference(), 24x24x3 crops: 3x3/2 SAME pools -> 6x6x64; no root scope
  Expected e;
  e.conv_biased("conv1", 5, 5, 3, 64);
  e.conv_biased("conv2", 5, 5, 64, 64);
  e.fully_connected("local3", 6 * 6 * 64, 384);
  e.fully_connected("local4", 384, 192);
  e.fully_connected("softmax_linear", 192, 10);
  return e;
}

// official/mnist/mnist.py (tf.layers; no published checkpoint): its layer
// shapes, 2x2/2 SAME pools -> 7x7x64, under slim's names as hub gives them.
Expected mnist() {
  Expected e;
  e.conv_biased("mnist/conv1", 5, 5, 1, 32);
  e.conv_biased("mnist/conv2", 5, 5, 32, 64);
  e.fully_connected("mnist/dense", 7 * 7 * 64, 1024);
  e.fully_connected("mnist/logits", 1024, 10);
  return e;
}

Expected alexnet_v2() {  // alexnet.py, 224: conv1 11x11/4 VALID, VALID 3x3/2 pools -> 5x5x256
  Expected e;
  const std::string s = "alexnet_v2/";
  e.conv_biased(s + "conv1", 11, 11, 3, 64);
  e.conv_biased(s + "conv2", 5, 5, 64, 192);
  e.conv_biased(s + "conv3", 3, 3, 192, 384);
  e.conv_biased(s + "conv4", 3, 3, 384, 384);
  e.conv_biased(s + "conv5", 3, 3, 384, 256);
  e.conv_biased(s + "fc6", 5, 5, 256, 4096);
  e.conv_biased(s + "fc7", 1, 1, 4096, 4096);
  e.conv_biased(s + "fc8", 1, 1, 4096, 1000);
  return e;
}

Expected vgg(const std::string& name, std::vector<int> repeats) {  // vgg.py, slim.repeat -> convK/convK_i
  Expected e;
  const int64_t depths[] = {64, 128, 256, 512, 512};
  int64_t in = 3;
  for (int b = 0; b < 5; ++b) {
    const std::string block = "conv" + std::to_string(b + 1);
    for (int i = 1; i <= repeats[static_cast<size_t>(b)]; ++i)
      in = e.conv_biased(name + "/" + block + "/" + block + "_" + std::to_string(i), 3, 3, in, depths[b]);
  }
  e.conv_biased(name + "/fc6", 7, 7, 512, 4096);
  e.conv_biased(name + "/fc7", 1, 1, 4096, 4096);
  e.conv_biased(name + "/fc8", 1, 1, 4096, 1000);
  return e;
}

// A branch of an inception block: its convs in order (name, kh, kw, depth);
// a branch starting with a pool passes the block's input depth on.
struct Conv {
  std::string name;
  int64_t kh, kw, depth;
};
using Branch = std::vector<Conv>;

// The block's output depth (the branches concatenated).
int64_t mixed(Expected& e, const std::string& scope, int64_t in, const std::vector<Branch>& branches) {
  int64_t out = 0;
  for (size_t b = 0; b < branches.size(); ++b) {
    int64_t depth = in;
    for (const Conv& c : branches[b])
      depth = e.conv(scope + "/Branch_" + std::to_string(b) + "/" + c.name, c.kh, c.kw, depth, c.depth);
    out += depth;
  }
  return out;
}

Expected inception_v1() {  // inception_v1.py; inception_arg_scope: batch norm, scale=False
  Expected e;
  const std::string s = "InceptionV1/";
  int64_t d = e.conv(s + "Conv2d_1a_7x7", 7, 7, 3, 64);
  d = e.conv(s + "Conv2d_2b_1x1", 1, 1, d, 64);
  d = e.conv(s + "Conv2d_2c_3x3", 3, 3, d, 192);
  // Branch_0 1x1 | Branch_1 1x1 -> 3x3 | Branch_2 1x1 -> 3x3 | Branch_3 pool -> 1x1.
  auto block = [&](const std::string& name, int64_t b0, int64_t b1a, int64_t b1b, int64_t b2a, int64_t b2b, int64_t b3,
                   const std::string& b2b_name = "Conv2d_0b_3x3") {
    d = mixed(e, s + name, d,
              {{{"Conv2d_0a_1x1", 1, 1, b0}},
               {{"Conv2d_0a_1x1", 1, 1, b1a}, {"Conv2d_0b_3x3", 3, 3, b1b}},
               {{"Conv2d_0a_1x1", 1, 1, b2a}, {b2b_name, 3, 3, b2b}},
               {{"Conv2d_0b_1x1", 1, 1, b3}}});
  };
  block("Mixed_3b", 64, 96, 128, 16, 32, 32);
  block("Mixed_3c", 128, 128, 192, 32, 96, 64);
  block("Mixed_4b", 192, 96, 208, 16, 48, 64);
  block("Mixed_4c", 160, 112, 224, 24, 64, 64);
  block("Mixed_4d", 128, 128, 256, 24, 64, 64);
  block("Mixed_4e", 112, 144, 288, 32, 64, 64);
  block("Mixed_4f", 256, 160, 320, 32, 128, 128);
  block("Mixed_5b", 256, 160, 320, 32, 128, 128, "Conv2d_0a_3x3");  // slim's name for this one conv
  block("Mixed_5c", 384, 192, 384, 48, 128, 128);
  CHECK(d == 1024);
  e.conv_biased(s + "Logits/Conv2d_0c_1x1", 1, 1, d, 1001);
  return e;
}

Expected inception_v3() {  // inception_v3.py; inception_arg_scope: batch norm, scale=False
  Expected e;
  const std::string s = "InceptionV3/";
  int64_t d = e.conv(s + "Conv2d_1a_3x3", 3, 3, 3, 32);
  d = e.conv(s + "Conv2d_2a_3x3", 3, 3, d, 32);
  d = e.conv(s + "Conv2d_2b_3x3", 3, 3, d, 64);
  d = e.conv(s + "Conv2d_3b_1x1", 1, 1, d, 80);
  d = e.conv(s + "Conv2d_4a_3x3", 3, 3, d, 192);
  for (const char* name : {"Mixed_5b", "Mixed_5c", "Mixed_5d"}) {
    const bool c = std::string(name) == "Mixed_5c";  // slim names Mixed_5c's branch 1 differently
    d = mixed(e, s + name, d,
              {{{"Conv2d_0a_1x1", 1, 1, 64}},
               {{c ? "Conv2d_0b_1x1" : "Conv2d_0a_1x1", 1, 1, 48}, {c ? "Conv_1_0c_5x5" : "Conv2d_0b_5x5", 5, 5, 64}},
               {{"Conv2d_0a_1x1", 1, 1, 64}, {"Conv2d_0b_3x3", 3, 3, 96}, {"Conv2d_0c_3x3", 3, 3, 96}},
               {{"Conv2d_0b_1x1", 1, 1, std::string(name) == "Mixed_5b" ? 32 : 64}}});
  }
  CHECK(d == 288);  // "mixed_2: 35 x 35 x 288"
  d = mixed(e, s + "Mixed_6a", d,
            {{{"Conv2d_1a_1x1", 3, 3, 384}},
             {{"Conv2d_0a_1x1", 1, 1, 64}, {"Conv2d_0b_3x3", 3, 3, 96}, {"Conv2d_1a_1x1", 3, 3, 96}},
             {}});
  for (auto [name, k] : {std::pair<const char*, int64_t>{"Mixed_6b", 128}, {"Mixed_6c", 160}, {"Mixed_6d", 160},
                         {"Mixed_6e", 192}}) {
    d = mixed(e, s + name, d,
              {{{"Conv2d_0a_1x1", 1, 1, 192}},
               {{"Conv2d_0a_1x1", 1, 1, k}, {"Conv2d_0b_1x7", 1, 7, k}, {"Conv2d_0c_7x1", 7, 1, 192}},
               {{"Conv2d_0a_1x1", 1, 1, k},
                {"Conv2d_0b_7x1", 7, 1, k},
                {"Conv2d_0c_1x7", 1, 7, k},
                {"Conv2d_0d_7x1", 7, 1, k},
                {"Conv2d_0e_1x7", 1, 7, 192}},
               {{"Conv2d_0b_1x1", 1, 1, 192}}});
  }
  CHECK(d == 768);  // "mixed_7: 17 x 17 x 768"
  // AuxLogits on Mixed_6e: 5x5/3 VALID pool (17 -> 5), then a 5x5 VALID conv.
  e.conv(s + "AuxLogits/Conv2d_1b_1x1", 1, 1, d, 128);
  e.conv(s + "AuxLogits/Conv2d_2a_5x5", 5, 5, 128, 768);
  e.conv_biased(s + "AuxLogits/Conv2d_2b_1x1", 1, 1, 768, 1001);
  d = mixed(e, s + "Mixed_7a", d,
            {{{"Conv2d_0a_1x1", 1, 1, 192}, {"Conv2d_1a_3x3", 3, 3, 320}},
             {{"Conv2d_0a_1x1", 1, 1, 192},
              {"Conv2d_0b_1x7", 1, 7, 192},
              {"Conv2d_0c_7x1", 7, 1, 192},
              {"Conv2d_1a_3x3", 3, 3, 192}},
             {}});
  CHECK(d == 1280);  // "mixed_8: 8 x 8 x 1280"
  for (const char* name : {"Mixed_7b", "Mixed_7c"}) {
    const std::string m = s + name;
    const bool b = std::string(name) == "Mixed_7b";
    e.conv(m + "/Branch_0/Conv2d_0a_1x1", 1, 1, d, 320);
    e.conv(m + "/Branch_1/Conv2d_0a_1x1", 1, 1, d, 384);
    e.conv(m + "/Branch_1/Conv2d_0b_1x3", 1, 3, 384, 384);  // two parallel convs, concatenated
    e.conv(m + (b ? "/Branch_1/Conv2d_0b_3x1" : "/Branch_1/Conv2d_0c_3x1"), 3, 1, 384, 384);
    e.conv(m + "/Branch_2/Conv2d_0a_1x1", 1, 1, d, 448);
    e.conv(m + "/Branch_2/Conv2d_0b_3x3", 3, 3, 448, 384);
    e.conv(m + "/Branch_2/Conv2d_0c_1x3", 1, 3, 384, 384);
    e.conv(m + "/Branch_2/Conv2d_0d_3x1", 3, 1, 384, 384);
    e.conv(m + "/Branch_3/Conv2d_0b_1x1", 1, 1, d, 192);
    d = 320 + 768 + 768 + 192;
  }
  CHECK(d == 2048);  // "mixed_10: 8 x 8 x 2048"
  e.conv_biased(s + "Logits/Conv2d_1c_1x1", 1, 1, d, 1001);
  return e;
}

// resnet_v1.py / resnet_v2.py with resnet_utils.resnet_arg_scope (batch norm,
// scale=True): blocks of bottleneck units (base depth, units); a unit's
// shortcut is a 1x1 conv only where its input depth differs from 4 x base.
Expected resnet(const std::string& name, std::vector<int> units, bool v2) {
  Expected e;
  e.scale = true;
  const std::string s = name + "/";
  int64_t d = v2 ? e.conv_biased(s + "conv1", 7, 7, 3, 64)  // v2: no batch norm or activation in conv1
                 : e.conv(s + "conv1", 7, 7, 3, 64);
  const int64_t base[] = {64, 128, 256, 512};
  for (int b = 0; b < 4; ++b) {
    for (int u = 1; u <= units[static_cast<size_t>(b)]; ++u) {
      const std::string unit = s + "block" + std::to_string(b + 1) + "/unit_" + std::to_string(u) +
                               (v2 ? "/bottleneck_v2/" : "/bottleneck_v1/");
      const int64_t depth = 4 * base[b];
      if (v2) e.batch_norm(unit + "preact", d);  // slim.batch_norm(scope='preact')
      if (depth != d) {
        if (v2) e.conv_biased(unit + "shortcut", 1, 1, d, depth);
        else e.conv(unit + "shortcut", 1, 1, d, depth);
      }
      e.conv(unit + "conv1", 1, 1, d, base[b]);
      e.conv(unit + "conv2", 3, 3, base[b], base[b]);
      if (v2) e.conv_biased(unit + "conv3", 1, 1, base[b], depth);
      else e.conv(unit + "conv3", 1, 1, base[b], depth);
      d = depth;
    }
  }
  if (v2) e.batch_norm(s + "postnorm", d);  // slim.batch_norm(scope='postnorm')
  e.conv_biased(s + "logits", 1, 1, d, v2 ? 1001 : 1000);
  return e;
}

// mobilenet_v1.py; mobilenet_v1_arg_scope: batch norm with scale=True;
// depth(d) = max(int(d * multiplier), 8).
Expected mobilenet_v1(double multiplier) {
  Expected e;
  e.scale = true;
  auto depth = [&](int64_t d) { return std::max<int64_t>(static_cast<int64_t>(static_cast<double>(d) * multiplier), 8); };
  const int64_t depths[] = {32, 64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024};
  int64_t d = e.conv("MobilenetV1/Conv2d_0", 3, 3, 3, depth(depths[0]));
  for (int i = 1; i < 14; ++i) {
    const std::string base = "MobilenetV1/Conv2d_" + std::to_string(i);
    d = e.depthwise(base + "_depthwise", 3, d);
    d = e.conv(base + "_pointwise", 1, 1, d, depth(depths[i]));
  }
  e.conv_biased("MobilenetV1/Logits/Conv2d_1c_1x1", 1, 1, d, 1001);
  return e;
}

Expected expected_for(const std::string& name) {
  if (name == "lenet") return lenet();
  if (name == "cifarnet") return cifarnet();
  if (name == "cifar10") return cifar10();
  if (name == "mnist") return mnist();
  if (name == "alexnet_v2") return alexnet_v2();
  if (name == "vgg_a") return vgg(name, {1, 1, 2, 2, 2});
  if (name == "vgg_16") return vgg(name, {2, 2, 3, 3, 3});
  if (name == "vgg_19") return vgg(name, {2, 2, 4, 4, 4});
  if (name == "inception_v1") return inception_v1();
  if (name == "inception_v3") return inception_v3();
  if (name == "resnet_v1_50") return resnet(name, {3, 4, 6, 3}, false);
  if (name == "resnet_v1_101") return resnet(name, {3, 4, 23, 3}, false);
  if (name == "resnet_v1_152") return resnet(name, {3, 8, 36, 3}, false);
  if (name == "resnet_v2_50") return resnet(name, {3, 4, 6, 3}, true);
  if (name.rfind("mobilenet_v1", 0) == 0) {
    // mobilenet_v1[_MMM][_SIZE]: MMM of 100, 075, 050, 025 (default 100).
    const std::string rest = name.substr(12);
    const std::string tag = rest.size() >= 4 ? rest.substr(1, 3) : "100";
    return mobilenet_v1(std::stoi(tag) / 100.0);
  }
  FAIL("no expectation for net " << name << ": derive one from its reference definition");
  return {};
}

int64_t elements(const std::map<std::string, Shape>& vars, const std::string& prefix, const std::string& suffix) {
  int64_t n = 0;
  for (const auto& [name, shape] : vars)
    if (name.rfind(prefix, 0) == 0 && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      n += shape.num_elements();
  return n;
}

}  // namespace

TEST_CASE("every built-in net has the variable names and shapes of its reference checkpoints") {
  int checked = 0;
  for (const std::string& name : nets::net_names()) {
    CAPTURE(name);
    const Expected want = expected_for(name);
    const std::string diff = differences(want.vars, hub_variables(name));
    CHECK_MESSAGE(diff.empty(), name, ":\n", diff);
    ++checked;
  }
  CHECK(checked == 34);
}

TEST_CASE("the expectations agree with published parameter counts") {
  // mobilenet_v1.py's docstring tables: conv weights of the base network.
  auto m100 = expected_for("mobilenet_v1").vars;
  CHECK(elements(m100, "MobilenetV1/Conv2d_", "weights") == 3185088);
  CHECK(elements(expected_for("mobilenet_v1_075_128").vars, "MobilenetV1/Conv2d_", "weights") == 1800144);
  // VGG-16 (Simonyan & Zisserman; e.g. Keras' VGG16 summary): 138,357,544 parameters.
  int64_t vgg16 = 0;
  for (const auto& [n, s] : expected_for("vgg_16").vars) vgg16 += s.num_elements();
  CHECK(vgg16 == 138357544);
  // Counts of batch-norm variables: inception nets have no gamma, resnet and mobilenet do.
  CHECK(elements(expected_for("inception_v3").vars, "", "/gamma") == 0);
  CHECK(expected_for("resnet_v1_50").vars.count("resnet_v1_50/block1/unit_1/bottleneck_v1/conv1/BatchNorm/gamma"));
  CHECK(expected_for("resnet_v2_50").vars.count("resnet_v2_50/block2/unit_1/bottleneck_v2/preact/gamma"));
  CHECK(m100.at("MobilenetV1/Conv2d_0/BatchNorm/gamma") == Shape{32});
}

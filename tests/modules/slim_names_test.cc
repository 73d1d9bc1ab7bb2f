// Every built-in net creates exactly the variables (names and shapes) that
// the checkpoints of its reference implementation hold, so those checkpoints
// load by name (hub train --checkpoint_path). The expectations are derived
// here, independently of modules/nets, from the reference definitions in
// tensorflow/models:
//   research/slim/nets/{lenet,cifarnet,alexnet,vgg,overfeat,inception_v1,
//   inception_v2,inception_v3,inception_v4,inception_resnet_v2,resnet_v1,
//   resnet_v2,mobilenet_v1}.py, mobilenet/{mobilenet_v2,mobilenet,
//   conv_blocks}.py and nasnet/{nasnet,nasnet_utils,pnasnet}.py with
//   inception_utils.py and resnet_utils.py (their arg scopes: which layers
//   have batch norm, which scale it, which have no biases),
//   tutorials/image/cifar10/cifar10.py, official/mnist/mnist.py.
// slim's rules: slim.conv2d creates <scope>/weights [kh, kw, in, out], then
// <scope>/BatchNorm/{beta, gamma if scale, moving_mean, moving_variance} when
// the arg scope has normalizer_fn=batch_norm, else <scope>/biases [out];
// slim.separable_conv2d with num_outputs=None creates depthwise_weights
// [kh, kw, in, multiplier], with num_outputs also pointwise_weights
// [1, 1, in * multiplier, out]; slim.fully_connected creates weights [in, out];
// slim.repeat(x, n, f) calls f under scope Repeat (Repeat_1, ... when taken)
// with scopes f_1 ... f_n;
// slim.batch_norm(scope=S) creates S/{beta, ...} directly; layers called with
// normalizer_fn=None (logits, resnet_v2's shortcut and conv3) have biases.
#include <doctest/doctest.h>

#include <map>
#include <optional>
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
  // slim.conv2d with biases_initializer=None and no normalizer: weights only.
  int64_t conv_plain(const std::string& scope, int64_t kh, int64_t kw, int64_t in, int64_t out) {
    vars[scope + "/weights"] = {kh, kw, in, out};
    return out;
  }
  // slim.separable_conv2d with num_outputs, no normalizer; biases unless
  // biases_initializer=None.
  int64_t separable(const std::string& scope, int64_t k, int64_t in, int64_t multiplier, int64_t out, bool biases) {
    vars[scope + "/depthwise_weights"] = {k, k, in, multiplier};
    vars[scope + "/pointwise_weights"] = {1, 1, in * multiplier, out};
    if (biases) vars[scope + "/biases"] = {out};
    return out;
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
  o.create_aux_logits = true;  // nets without an auxiliary head ignore it
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
    if (it == got.end())
      line("missing in hub: " + name + " " + shape.to_string());
    else if (it->second != shape)
      line("shape of " + name + ": slim " + shape.to_string() + ", hub " + it->second.to_string());
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
  for (auto [name, k] :
       {std::pair<const char*, int64_t>{"Mixed_6b", 128}, {"Mixed_6c", 160}, {"Mixed_6d", 160}, {"Mixed_6e", 192}}) {
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

Expected overfeat() {  // overfeat.py, 231: conv1 11x11/4 VALID, conv2 5x5 VALID, 2x2 pools -> 6x6x1024
  Expected e;
  const std::string s = "overfeat/";
  e.conv_biased(s + "conv1", 11, 11, 3, 64);
  e.conv_biased(s + "conv2", 5, 5, 64, 256);
  e.conv_biased(s + "conv3", 3, 3, 256, 512);
  e.conv_biased(s + "conv4", 3, 3, 512, 1024);
  e.conv_biased(s + "conv5", 3, 3, 1024, 1024);
  e.conv_biased(s + "fc6", 6, 6, 1024, 3072);
  e.conv_biased(s + "fc7", 1, 1, 3072, 4096);
  e.conv_biased(s + "fc8", 1, 1, 4096, 1000);
  return e;
}

// inception_v2.py (depth_multiplier 1); inception_arg_scope covers
// slim.conv2d only, so the separable Conv2d_1a_7x7 (depthwise multiplier
// min(int(64 / 3), 8) = 8) has biases and no batch norm.
Expected inception_v2() {
  Expected e;
  const std::string s = "InceptionV2/";
  int64_t d = e.separable(s + "Conv2d_1a_7x7", 7, 3, 8, 64, true);
  d = e.conv(s + "Conv2d_2b_1x1", 1, 1, d, 64);
  d = e.conv(s + "Conv2d_2c_3x3", 3, 3, d, 192);
  auto block = [&](const std::string& name, int64_t b0, int64_t b1a, int64_t b1b, int64_t b2a, int64_t b2b,
                   int64_t b3) {
    d = mixed(e, s + name, d,
              {{{"Conv2d_0a_1x1", 1, 1, b0}},
               {{"Conv2d_0a_1x1", 1, 1, b1a}, {"Conv2d_0b_3x3", 3, 3, b1b}},
               {{"Conv2d_0a_1x1", 1, 1, b2a}, {"Conv2d_0b_3x3", 3, 3, b2b}, {"Conv2d_0c_3x3", 3, 3, b2b}},
               {{"Conv2d_0b_1x1", 1, 1, b3}}});
  };
  auto reduction = [&](const std::string& name, int64_t b0a, int64_t b0b, int64_t b1a, int64_t b1b) {
    d = mixed(e, s + name, d,
              {{{"Conv2d_0a_1x1", 1, 1, b0a}, {"Conv2d_1a_3x3", 3, 3, b0b}},
               {{"Conv2d_0a_1x1", 1, 1, b1a}, {"Conv2d_0b_3x3", 3, 3, b1b}, {"Conv2d_1a_3x3", 3, 3, b1b}},
               {}});
  };
  block("Mixed_3b", 64, 64, 64, 64, 96, 32);
  block("Mixed_3c", 64, 64, 96, 64, 96, 64);
  reduction("Mixed_4a", 128, 160, 64, 96);
  CHECK(d == 576);  // "14 x 14 x 576"
  block("Mixed_4b", 224, 64, 96, 96, 128, 128);
  block("Mixed_4c", 192, 96, 128, 96, 128, 128);
  block("Mixed_4d", 160, 128, 160, 128, 160, 96);
  block("Mixed_4e", 96, 128, 192, 160, 192, 96);
  reduction("Mixed_5a", 128, 192, 192, 256);
  block("Mixed_5b", 352, 192, 320, 160, 224, 128);
  block("Mixed_5c", 352, 192, 320, 192, 224, 128);
  CHECK(d == 1024);  // "7 x 7 x 1024"
  e.conv_biased(s + "Logits/Conv2d_1c_1x1", 1, 1, d, 1001);
  return e;
}

// inception_v4.py; inception_arg_scope. The auxiliary head reads Mixed_6h
// (17x17, pooled 5x5/3 to 5x5); both heads are slim.fully_connected (biases).
Expected inception_v4() {
  Expected e;
  const std::string s = "InceptionV4/";
  int64_t d = e.conv(s + "Conv2d_1a_3x3", 3, 3, 3, 32);
  d = e.conv(s + "Conv2d_2a_3x3", 3, 3, d, 32);
  d = e.conv(s + "Conv2d_2b_3x3", 3, 3, d, 64);
  d = mixed(e, s + "Mixed_3a", d, {{}, {{"Conv2d_0a_3x3", 3, 3, 96}}});
  d = mixed(e, s + "Mixed_4a", d,
            {{{"Conv2d_0a_1x1", 1, 1, 64}, {"Conv2d_1a_3x3", 3, 3, 96}},
             {{"Conv2d_0a_1x1", 1, 1, 64},
              {"Conv2d_0b_1x7", 1, 7, 64},
              {"Conv2d_0c_7x1", 7, 1, 64},
              {"Conv2d_1a_3x3", 3, 3, 96}}});
  d = mixed(e, s + "Mixed_5a", d, {{{"Conv2d_1a_3x3", 3, 3, 192}}, {}});
  CHECK(d == 384);
  for (char c = 'b'; c <= 'e'; ++c)
    d = mixed(e, s + "Mixed_5" + c, d,
              {{{"Conv2d_0a_1x1", 1, 1, 96}},
               {{"Conv2d_0a_1x1", 1, 1, 64}, {"Conv2d_0b_3x3", 3, 3, 96}},
               {{"Conv2d_0a_1x1", 1, 1, 64}, {"Conv2d_0b_3x3", 3, 3, 96}, {"Conv2d_0c_3x3", 3, 3, 96}},
               {{"Conv2d_0b_1x1", 1, 1, 96}}});
  d = mixed(e, s + "Mixed_6a", d,
            {{{"Conv2d_1a_3x3", 3, 3, 384}},
             {{"Conv2d_0a_1x1", 1, 1, 192}, {"Conv2d_0b_3x3", 3, 3, 224}, {"Conv2d_1a_3x3", 3, 3, 256}},
             {}});
  CHECK(d == 1024);
  for (char c = 'b'; c <= 'h'; ++c)
    d = mixed(e, s + "Mixed_6" + c, d,
              {{{"Conv2d_0a_1x1", 1, 1, 384}},
               {{"Conv2d_0a_1x1", 1, 1, 192}, {"Conv2d_0b_1x7", 1, 7, 224}, {"Conv2d_0c_7x1", 7, 1, 256}},
               {{"Conv2d_0a_1x1", 1, 1, 192},
                {"Conv2d_0b_7x1", 7, 1, 192},
                {"Conv2d_0c_1x7", 1, 7, 224},
                {"Conv2d_0d_7x1", 7, 1, 224},
                {"Conv2d_0e_1x7", 1, 7, 256}},
               {{"Conv2d_0b_1x1", 1, 1, 128}}});
  e.conv(s + "AuxLogits/Conv2d_1b_1x1", 1, 1, d, 128);
  e.conv(s + "AuxLogits/Conv2d_2a", 5, 5, 128, 768);
  e.fully_connected(s + "AuxLogits/Aux_logits", 768, 1001);
  d = mixed(e, s + "Mixed_7a", d,
            {{{"Conv2d_0a_1x1", 1, 1, 192}, {"Conv2d_1a_3x3", 3, 3, 192}},
             {{"Conv2d_0a_1x1", 1, 1, 256},
              {"Conv2d_0b_1x7", 1, 7, 256},
              {"Conv2d_0c_7x1", 7, 1, 320},
              {"Conv2d_1a_3x3", 3, 3, 320}},
             {}});
  CHECK(d == 1536);
  for (char c = 'b'; c <= 'd'; ++c) {
    const std::string m = s + "Mixed_7" + c;
    e.conv(m + "/Branch_0/Conv2d_0a_1x1", 1, 1, d, 256);
    e.conv(m + "/Branch_1/Conv2d_0a_1x1", 1, 1, d, 384);
    e.conv(m + "/Branch_1/Conv2d_0b_1x3", 1, 3, 384, 256);  // two parallel convs, concatenated
    e.conv(m + "/Branch_1/Conv2d_0c_3x1", 3, 1, 384, 256);
    e.conv(m + "/Branch_2/Conv2d_0a_1x1", 1, 1, d, 384);
    e.conv(m + "/Branch_2/Conv2d_0b_3x1", 3, 1, 384, 448);
    e.conv(m + "/Branch_2/Conv2d_0c_1x3", 1, 3, 448, 512);
    e.conv(m + "/Branch_2/Conv2d_0d_1x3", 1, 3, 512, 256);
    e.conv(m + "/Branch_2/Conv2d_0e_3x1", 3, 1, 512, 256);
    e.conv(m + "/Branch_3/Conv2d_0b_1x1", 1, 1, d, 256);
  }
  e.fully_connected(s + "Logits/Logits", 1536, 1001);
  return e;
}

// inception_resnet_v2.py with its arg scope (batch norm, scale=False). A
// residual block's branches are concatenated and projected back to the
// block's input depth by a biased 1x1 "Conv2d_1x1" without batch norm.
Expected inception_resnet_v2() {
  Expected e;
  const std::string s = "InceptionResnetV2/";
  int64_t d = e.conv(s + "Conv2d_1a_3x3", 3, 3, 3, 32);
  d = e.conv(s + "Conv2d_2a_3x3", 3, 3, d, 32);
  d = e.conv(s + "Conv2d_2b_3x3", 3, 3, d, 64);
  d = e.conv(s + "Conv2d_3b_1x1", 1, 1, d, 80);
  d = e.conv(s + "Conv2d_4a_3x3", 3, 3, d, 192);
  d = mixed(e, s + "Mixed_5b", d,
            {{{"Conv2d_1x1", 1, 1, 96}},
             {{"Conv2d_0a_1x1", 1, 1, 48}, {"Conv2d_0b_5x5", 5, 5, 64}},
             {{"Conv2d_0a_1x1", 1, 1, 64}, {"Conv2d_0b_3x3", 3, 3, 96}, {"Conv2d_0c_3x3", 3, 3, 96}},
             {{"Conv2d_0b_1x1", 1, 1, 64}}});
  CHECK(d == 320);
  auto residual = [&](const std::string& scope, const std::vector<Branch>& branches) {
    e.conv_biased(scope + "/Conv2d_1x1", 1, 1, mixed(e, scope, d, branches), d);
  };
  for (int i = 1; i <= 10; ++i)
    residual(s + "Repeat/block35_" + std::to_string(i),
             {{{"Conv2d_1x1", 1, 1, 32}},
              {{"Conv2d_0a_1x1", 1, 1, 32}, {"Conv2d_0b_3x3", 3, 3, 32}},
              {{"Conv2d_0a_1x1", 1, 1, 32}, {"Conv2d_0b_3x3", 3, 3, 48}, {"Conv2d_0c_3x3", 3, 3, 64}}});
  d = mixed(e, s + "Mixed_6a", d,
            {{{"Conv2d_1a_3x3", 3, 3, 384}},
             {{"Conv2d_0a_1x1", 1, 1, 256}, {"Conv2d_0b_3x3", 3, 3, 256}, {"Conv2d_1a_3x3", 3, 3, 384}},
             {}});
  CHECK(d == 1088);
  for (int i = 1; i <= 20; ++i)
    residual(s + "Repeat_1/block17_" + std::to_string(i),
             {{{"Conv2d_1x1", 1, 1, 192}},
              {{"Conv2d_0a_1x1", 1, 1, 128}, {"Conv2d_0b_1x7", 1, 7, 160}, {"Conv2d_0c_7x1", 7, 1, 192}}});
  e.conv(s + "AuxLogits/Conv2d_1b_1x1", 1, 1, d, 128);
  e.conv(s + "AuxLogits/Conv2d_2a_5x5", 5, 5, 128, 768);
  e.fully_connected(s + "AuxLogits/Logits", 768, 1001);
  d = mixed(e, s + "Mixed_7a", d,
            {{{"Conv2d_0a_1x1", 1, 1, 256}, {"Conv2d_1a_3x3", 3, 3, 384}},
             {{"Conv2d_0a_1x1", 1, 1, 256}, {"Conv2d_1a_3x3", 3, 3, 288}},
             {{"Conv2d_0a_1x1", 1, 1, 256}, {"Conv2d_0b_3x3", 3, 3, 288}, {"Conv2d_1a_3x3", 3, 3, 320}},
             {}});
  CHECK(d == 2080);
  const std::vector<Branch> block8 = {
      {{"Conv2d_1x1", 1, 1, 192}},
      {{"Conv2d_0a_1x1", 1, 1, 192}, {"Conv2d_0b_1x3", 1, 3, 224}, {"Conv2d_0c_3x1", 3, 1, 256}}};
  for (int i = 1; i <= 9; ++i) residual(s + "Repeat_2/block8_" + std::to_string(i), block8);
  residual(s + "Block8", block8);  // the last block8 is called without slim.repeat
  d = e.conv(s + "Conv2d_7b_1x1", 1, 1, d, 1536);
  e.fully_connected(s + "Logits/Logits", d, 1001);
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
        if (v2)
          e.conv_biased(unit + "shortcut", 1, 1, d, depth);
        else
          e.conv(unit + "shortcut", 1, 1, d, depth);
      }
      e.conv(unit + "conv1", 1, 1, d, base[b]);
      e.conv(unit + "conv2", 3, 3, base[b], base[b]);
      if (v2)
        e.conv_biased(unit + "conv3", 1, 1, base[b], depth);
      else
        e.conv(unit + "conv3", 1, 1, base[b], depth);
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
  auto depth = [&](int64_t d) {
    return std::max<int64_t>(static_cast<int64_t>(static_cast<double>(d) * multiplier), 8);
  };
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

// mobilenet_v2.py's V2_DEF in the paper's (expansion t, depth c, repeats n,
// first stride s) form; mobilenet.py's depth_multiplier and conv_blocks.py's
// _make_divisible(v, 8) scale every depth but the last one, which stays 1280
// below multiplier 1 (finegrain_classification_mode). training_scope: batch
// norm with scale on every layer; the first block (t = 1) has no "expand".
Expected mobilenet_v2(double multiplier) {
  Expected e;
  e.scale = true;
  auto divisible = [](double v) {
    int64_t d = std::max<int64_t>(8, static_cast<int64_t>(v + 4) / 8 * 8);
    return static_cast<double>(d) < 0.9 * v ? d + 8 : d;
  };
  const std::string s = "MobilenetV2/";
  int64_t d = e.conv(s + "Conv", 3, 3, 3, divisible(32 * multiplier));
  const int64_t table[][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int block = 0;
  for (const auto& row : table) {
    for (int64_t r = 0; r < row[2]; ++r, ++block) {
      const std::string b = s + (block == 0 ? std::string("expanded_conv") : "expanded_conv_" + std::to_string(block));
      const int64_t inner = row[0] == 1 ? d : divisible(static_cast<double>(d * row[0]));
      if (inner > d) e.conv(b + "/expand", 1, 1, d, inner);
      e.depthwise(b + "/depthwise", 3, inner);
      d = e.conv(b + "/project", 1, 1, inner, divisible(static_cast<double>(row[1]) * multiplier));
    }
  }
  CHECK(block == 17);
  d = e.conv(s + "Conv_1", 1, 1, d, multiplier < 1 ? 1280 : divisible(1280 * multiplier));
  e.conv_biased(s + "Logits/Conv2d_1c_1x1", 1, 1, d, 1001);
  return e;
}

// nasnet.py / pnasnet.py with nasnet_utils.py: a walk over the feature maps'
// (size, depth) following NasNetABaseCell, recording the variables each step
// creates. Arg scope: conv2d and separable_conv2d without biases or
// normalizer, slim.batch_norm (scale=True) in its own scopes; the
// fully_connected "FC" layers have biases. No root scope.
struct NasNet {
  struct Map {
    int64_t size, depth;
  };
  struct Cell {
    std::vector<std::string> ops;
    std::vector<int> inputs, used;
  };
  Expected e;
  int64_t classes;

  void bn(const std::string& scope, int64_t depth) { e.batch_norm(scope, depth); }
  static int64_t same(int64_t size, int64_t stride) { return (size + stride - 1) / stride; }

  Map reduce(const std::string& scope, Map x, int64_t filters, int64_t stride) {  // factorized_reduction
    if (stride == 1) {
      e.conv_plain(scope + "/path_conv", 1, 1, x.depth, filters);
      bn(scope + "/path_bn", filters);
      return {x.size, filters};
    }
    e.conv_plain(scope + "/path1_conv", 1, 1, x.depth, filters / 2);
    e.conv_plain(scope + "/path2_conv", 1, 1, x.depth, filters - filters / 2);
    bn(scope + "/final_path_bn", filters);
    return {same(x.size, 2), filters};
  }

  Map op(const std::string& scope, Map x, const std::string& name, int64_t stride, int64_t f) {
    if (name.rfind("separable_", 0) == 0) {  // "separable_KxK_2": two layers, the first strided
      const int64_t k = name[10] - '0';
      const std::string kk = std::to_string(k) + "x" + std::to_string(k);
      for (int l = 1; l <= 2; ++l) {
        e.separable(scope + "/separable_" + kk + "_" + std::to_string(l), k, x.depth, 1, f, false);
        bn(scope + "/bn_sep_" + kk + "_" + std::to_string(l), f);
        x = {same(x.size, l == 1 ? stride : 1), f};
      }
      return x;
    }
    const bool none = name == "none";
    if (none && stride == 1 && x.depth == f) return x;
    x.size = same(x.size, stride);
    if (x.depth != f) {
      e.conv_plain(scope + "/1x1", 1, 1, x.depth, f);
      bn(scope + "/bn_1", f);
    } else if (none) {  // strided identity: a strided 1x1
      e.conv_plain(scope + "/1x1", 1, 1, x.depth, f);
      bn(scope + "/bn_1", f);
    }
    return {x.size, f};
  }

  Map cell(const std::string& scope, const Cell& c, Map net, const Map* prev, int64_t f, int64_t stride) {
    Map p = prev ? *prev : net;
    if (prev && prev->size != net.size) {
      p = reduce(scope, *prev, f, 2);
    } else if (prev && prev->depth != f) {
      e.conv_plain(scope + "/prev_1x1", 1, 1, prev->depth, f);
      bn(scope + "/prev_bn", f);
      p = {prev->size, f};
    }
    e.conv_plain(scope + "/1x1", 1, 1, net.depth, f);
    bn(scope + "/beginning_bn", f);
    std::vector<Map> states{{net.size, f}, p};
    for (int i = 0; i < 5; ++i) {
      const std::string comb = scope + "/comb_iter_" + std::to_string(i);
      Map h[2];
      for (int side = 0; side < 2; ++side) {
        const int idx = c.inputs[static_cast<size_t>(2 * i + side)];
        h[side] = op(comb + (side ? "/right" : "/left"), states[static_cast<size_t>(idx)],
                     c.ops[static_cast<size_t>(2 * i + side)], idx < 2 ? stride : 1, f);
      }
      CHECK(h[0].size == h[1].size);
      states.push_back(h[0]);
    }
    Map out{states.back().size, 0};
    for (size_t i = 0; i < states.size(); ++i) {
      if (c.used[i]) continue;
      Map m = states[i];
      if (m.size != out.size || m.depth != states.back().depth)
        m = reduce(scope + "/cell_output/reduction_" + std::to_string(i), m, states.back().depth,
                   m.size != out.size ? 2 : 1);
      out.depth += m.depth;
    }
    return out;
  }

  void aux(const std::string& scope, Map x) {
    const std::string a = scope + "/aux_logits";
    e.conv_plain(a + "/proj", 1, 1, x.depth, 128);
    bn(a + "/aux_bn0", 128);
    const int64_t k = (x.size - 5) / 3 + 1;  // 5x5/3 VALID average pool
    e.conv_plain(a + "/Conv", k, k, 128, 768);
    bn(a + "/aux_bn1", 768);
    e.fully_connected(a + "/FC", 768, classes);
  }
};

// NASNet-A (normal and reduction cells) or PNASNet-5 (one cell, strided at
// the reductions) at `size` with the configuration's hparams.
Expected nasnet(bool pnas, bool cifar, int64_t size, double stem_multiplier, int cells, int64_t filters,
                bool skip_reduction_layer_input, int64_t classes) {
  const NasNet::Cell normal{{"separable_5x5_2", "separable_3x3_2", "separable_5x5_2", "separable_3x3_2", "avg_pool_3x3",
                             "none", "avg_pool_3x3", "avg_pool_3x3", "separable_3x3_2", "none"},
                            {0, 1, 1, 1, 0, 1, 1, 1, 0, 0},
                            {1, 0, 0, 0, 0, 0, 0}};
  const NasNet::Cell reduction{{"separable_5x5_2", "separable_7x7_2", "max_pool_3x3", "separable_7x7_2", "avg_pool_3x3",
                                "separable_5x5_2", "none", "avg_pool_3x3", "separable_3x3_2", "max_pool_3x3"},
                               {0, 1, 0, 1, 0, 1, 3, 2, 2, 0},
                               {1, 1, 1, 0, 0, 0, 0}};
  const NasNet::Cell pnasnet{{"separable_5x5_2", "max_pool_3x3", "separable_7x7_2", "max_pool_3x3", "separable_5x5_2",
                              "separable_3x3_2", "separable_3x3_2", "max_pool_3x3", "separable_3x3_2", "none"},
                             {1, 1, 0, 0, 0, 0, 4, 0, 1, 0},
                             {1, 1, 0, 0, 0, 0, 0}};
  NasNet n;
  n.e.scale = true;
  n.classes = classes;
  std::vector<std::optional<NasNet::Map>> outputs{std::nullopt};
  NasNet::Map x;
  if (cifar) {
    x = {size,
         n.e.conv_plain("l1_stem_3x3", 3, 3, 3, static_cast<int64_t>(static_cast<double>(filters) * stem_multiplier))};
    n.bn("l1_stem_bn", x.depth);
    outputs.push_back(x);
  } else {
    x = {(size - 3) / 2 + 1, n.e.conv_plain("conv0", 3, 3, 3, static_cast<int64_t>(32 * stem_multiplier))};
    n.bn("conv0_bn", x.depth);
    outputs.push_back(x);
    for (int i = 0; i < 2; ++i) {
      const auto& prev = outputs[outputs.size() - 2];
      x = n.cell("cell_stem_" + std::to_string(i), pnas ? pnasnet : reduction, x, prev ? &*prev : nullptr,
                 filters / (i == 0 ? 4 : 2), 2);
      outputs.push_back(x);
    }
  }
  // calc_reduction_layers(num_cells, 2) and the aux head before the second.
  const int r1 = static_cast<int>(1.0 / 3 * cells), r2 = static_cast<int>(2.0 / 3 * cells);
  int64_t f = filters;
  std::optional<NasNet::Map> prev;
  for (int c = 0; c < cells; ++c) {
    const bool reducing = c == r1 || c == r2;
    if (reducing) f *= 2;
    if (skip_reduction_layer_input) prev = outputs[outputs.size() - 2];
    if (reducing && !pnas) {
      const auto& p = outputs[outputs.size() - 2];
      x = n.cell("reduction_cell_" + std::to_string(c == r1 ? 0 : 1), reduction, x, p ? &*p : nullptr, f, 2);
      outputs.push_back(x);
    }
    if (!skip_reduction_layer_input) prev = outputs[outputs.size() - 2];
    x = n.cell("cell_" + std::to_string(c), pnas ? pnasnet : normal, x, prev ? &*prev : nullptr, f,
               reducing && pnas ? 2 : 1);
    if (c == r2 - 1) n.aux("aux_" + std::to_string(c), x);
    outputs.push_back(x);
  }
  n.e.fully_connected("final_layer/FC", x.depth, classes);
  return n.e;
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
  if (name == "overfeat") return overfeat();
  if (name == "inception_v1") return inception_v1();
  if (name == "inception_v2") return inception_v2();
  if (name == "inception_v3") return inception_v3();
  if (name == "inception_v4") return inception_v4();
  if (name == "inception_resnet_v2") return inception_resnet_v2();
  if (name.rfind("resnet_v", 0) == 0) {
    // resnet_v1.py / resnet_v2.py: units per block for 50, 101, 152, 200 layers.
    const std::map<std::string, std::vector<int>> units = {
        {"50", {3, 4, 6, 3}}, {"101", {3, 4, 23, 3}}, {"152", {3, 8, 36, 3}}, {"200", {3, 24, 36, 3}}};
    return resnet(name, units.at(name.substr(10)), name[8] == '2');
  }
  // nasnet.py's cifar_config, mobile_imagenet_config, large_imagenet_config;
  // pnasnet.py's mobile and large configs (stem multiplier, cells, filters,
  // skip_reduction_layer_input).
  if (name == "nasnet_cifar") return nasnet(false, true, 32, 3.0, 18, 32, false, 10);
  if (name == "nasnet_mobile") return nasnet(false, false, 224, 1.0, 12, 44, false, 1001);
  if (name == "nasnet_large") return nasnet(false, false, 331, 3.0, 18, 168, true, 1001);
  if (name == "pnasnet_mobile") return nasnet(true, false, 224, 1.0, 9, 54, true, 1001);
  if (name == "pnasnet_large") return nasnet(true, false, 331, 3.0, 12, 216, true, 1001);
  if (name.rfind("mobilenet_v2", 0) == 0) {
    // mobilenet_v2[_MMM][_SIZE]: MMM of 140, 130, 100, 075, 050, 035 (default 100).
    const std::string rest = name.substr(12);
    return mobilenet_v2(std::stoi(rest.size() >= 4 ? rest.substr(1, 3) : "100") / 100.0);
  }
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
  CHECK(checked == 75);
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

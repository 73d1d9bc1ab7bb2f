#include <deque>

#include "modules/nets/nets.h"

namespace hub::nets {

namespace {

std::deque<NetInfo> make_table() {
  std::deque<NetInfo> t = {
      {"lenet", 28, 1, 10, "lenet", lenet},
      {"cifarnet", 32, 3, 10, "cifarnet", cifarnet},
      {"mnist", 28, 1, 10, "mnist", mnist},
      {"cifar10", 24, 3, 10, "cifar10", cifar10},
      {"alexnet_v2", 224, 3, 1000, "vgg", alexnet_v2},
      {"vgg_a", 224, 3, 1000, "vgg", vgg},
      {"vgg_16", 224, 3, 1000, "vgg", vgg},
      {"vgg_19", 224, 3, 1000, "vgg", vgg},
      {"overfeat", 231, 3, 1000, "vgg", overfeat},
      {"inception_v1", 224, 3, 1001, "inception", inception_v1},
      {"inception_v2", 224, 3, 1001, "inception", inception_v2},
      {"inception_v3", 299, 3, 1001, "inception", inception_v3},
      {"inception_v4", 299, 3, 1001, "inception", inception_v4},
      {"inception_resnet_v2", 299, 3, 1001, "inception", inception_resnet_v2},
      {"resnet_v1_50", 224, 3, 1000, "vgg", resnet},
      {"resnet_v1_101", 224, 3, 1000, "vgg", resnet},
      {"resnet_v1_152", 224, 3, 1000, "vgg", resnet},
      {"resnet_v1_200", 224, 3, 1000, "vgg", resnet},
      // The published v2 checkpoints were trained with inception preprocessing
      // and 1001 classes (slim's README), not the factory's vgg default.
      {"resnet_v2_50", 224, 3, 1001, "inception", resnet},
      {"resnet_v2_101", 224, 3, 1001, "inception", resnet},
      {"resnet_v2_152", 224, 3, 1001, "inception", resnet},
      {"resnet_v2_200", 224, 3, 1001, "inception", resnet},
      {"nasnet_cifar", 32, 3, 10, "cifarnet", nasnet},
      {"nasnet_mobile", 224, 3, 1001, "inception", nasnet},
      {"nasnet_large", 331, 3, 1001, "inception", nasnet},
      {"pnasnet_mobile", 224, 3, 1001, "inception", nasnet},
      {"pnasnet_large", 331, 3, 1001, "inception", nasnet},
  };
  const std::pair<const char*, double> multipliers[] = {{"100", 1.0}, {"075", 0.75}, {"050", 0.5}, {"025", 0.25}};
  for (auto [tag, m] : multipliers) {
    for (int64_t size : {224, 192, 160, 128})
      t.push_back({"mobilenet_v1_" + std::string(tag) + "_" + std::to_string(size), size, 3, 1001, "inception",
                   mobilenet_v1, m});
    // slim's short names: mobilenet_v1 (1.0), mobilenet_v1_075, ... at 224.
    t.push_back({m == 1.0 ? std::string("mobilenet_v1") : "mobilenet_v1_" + std::string(tag), 224, 3, 1001, "inception",
                 mobilenet_v1, m});
  }
  // MobileNet v2: slim's published multipliers x sizes (1.4 and 1.3 at 224
  // only), plus the short names at 224 (mobilenet_v2, mobilenet_v2_140, ...).
  const std::pair<const char*, double> v2[] = {{"140", 1.4},  {"130", 1.3}, {"100", 1.0},
                                               {"075", 0.75}, {"050", 0.5}, {"035", 0.35}};
  for (auto [tag, m] : v2) {
    for (int64_t size : {224, 192, 160, 128, 96})
      if (size == 224 || m <= 1.0)
        t.push_back({"mobilenet_v2_" + std::string(tag) + "_" + std::to_string(size), size, 3, 1001, "inception",
                     mobilenet_v2, m});
    t.push_back({m == 1.0 ? std::string("mobilenet_v2") : "mobilenet_v2_" + std::string(tag), 224, 3, 1001, "inception",
                 mobilenet_v2, m});
  }
  return t;
}

const std::deque<NetInfo>& table() {
  static const std::deque<NetInfo> t = make_table();
  return t;
}

}  // namespace

const NetInfo& find_net(const std::string& name) {
  for (const NetInfo& n : table())
    if (n.name == name) return n;
  std::string known;
  for (const NetInfo& n : table()) known += (known.empty() ? "" : ", ") + n.name;
  throw_error(Code::kNotFound, "unknown network '" + name + "'; known networks: " + known);
}

std::vector<std::string> net_names() {
  std::vector<std::string> names;
  for (const NetInfo& n : table()) names.push_back(n.name);
  return names;
}

Net build_net(const std::string& name, const Scope& s, Output images, const NetOptions& o) {
  const NetInfo& info = find_net(name);
  const TensorSpec& spec = s.graph().spec(images);
  if (spec.dtype != DType::kFloat32 || spec.shape.rank() != 4 || (spec.shape[3] >= 0 && spec.shape[3] != info.channels))
    throw_error(Code::kInvalidArgument, "network '" + name + "' needs float32 images [batch, H, W, " +
                                            std::to_string(info.channels) + "], got " + spec.to_string());
  return info.build(s, images, o, info);
}

int64_t count_macs(const Graph& g) {
  int64_t total = 0;
  for (const Node& n : g.nodes()) {
    if (n.op == "Conv2D" || n.op == "DepthwiseConv2dNative") {
      const Shape& out = n.outputs[0].shape;
      const Shape& w = g.spec(n.inputs[1]).shape;
      int64_t per_out = w[0] * w[1] * (n.op == "Conv2D" ? w[2] : 1);
      total += out[1] * out[2] * out[3] * per_out;
    } else if (n.op == "MatMul") {
      const Shape& a = g.spec(n.inputs[0]).shape;
      const Shape& out = n.outputs[0].shape;
      int64_t k = n.attrs.get_bool("transpose_a") ? a[0] : a[1];
      total += k * out[1];
    }
  }
  return total;
}

int64_t count_parameters(const Graph& g, bool trainable_only) {
  int64_t total = 0;
  for (int id : g.variables(trainable_only)) total += g.node(id).outputs[0].shape.num_elements();
  return total;
}

}  // namespace hub::nets

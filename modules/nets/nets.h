// Built-in networks: TF-Slim's model library, TensorFlow's official MNIST
// CNN and the CIFAR-10 tutorial model, as graph builders with slim's scope
// and variable names (e.g. "MobilenetV1/Conv2d_1_depthwise/depthwise_weights")
// and end points.
//
// build_net(name, scope, images, options) appends the network to the graph:
// images are float32 [batch, H, W, C] already preprocessed for the net (see
// modules/preprocessing). With num_classes = 0 the net stops before the
// logits (a feature extractor).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hub/graph/graph.h"
#include "modules/slim/quantize.h"

namespace hub::nets {

struct NetOptions {
  int64_t num_classes = 1000;
  bool is_training = false;
  double dropout_keep_prob = -1;  // < 0: the net's own default
  double weight_decay = -1;       // < 0: the net's own default
  bool spatial_squeeze = true;
  // Build the auxiliary classifier of the nets that have one (inception_v3,
  // inception_v4, inception_resnet_v2, NASNet, PNASNet) as end point
  // "AuxLogits" (training; their checkpoints hold its variables).
  bool create_aux_logits = false;
  // Quantization-aware training: the slim layers' fake quantization
  // (modules/slim/quantize.h; LayerOptions::quantize).
  slim::QuantizeMode quantize = slim::QuantizeMode::kOff;
};

struct Net {
  Output logits;    // [batch, num_classes] (invalid if num_classes == 0)
  Output features;  // the pooled layer before the logits, [batch, D]
  std::map<std::string, Output> end_points;
};

struct NetInfo {
  std::string name;
  int64_t image_size;  // default height = width
  int64_t channels;
  int64_t default_classes;    // of the published checkpoints
  std::string preprocessing;  // name for modules/preprocessing
  Net (*build)(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
  double depth_multiplier = 1.0;
};

// Throws NotFound listing the known names.
const NetInfo& find_net(const std::string& name);
std::vector<std::string> net_names();
Net build_net(const std::string& name, const Scope& s, Output images, const NetOptions& o);

// The builders, one per family (modules/nets/<family>.cc).
Net lenet(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net cifarnet(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net mnist(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net cifar10(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net alexnet_v2(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net vgg(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net inception_v1(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net inception_v2(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net inception_v3(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net inception_v4(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net inception_resnet_v2(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net resnet(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net overfeat(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net mobilenet_v1(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net mobilenet_v2(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);
Net nasnet(const Scope& s, Output images, const NetOptions& o, const NetInfo& info);  // NASNet-A and PNASNet-5

// Multiply-accumulate count of the graph's Conv2D, DepthwiseConv2dNative and
// MatMul nodes for a batch of one (from the inferred node shapes).
int64_t count_macs(const Graph& g);
// Sum of the element counts of the graph's variables (trainable only, or all).
int64_t count_parameters(const Graph& g, bool trainable_only);

}  // namespace hub::nets

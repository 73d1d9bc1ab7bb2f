// Pieces the built-in networks share (modules/nets/*.cc only): the
// arg-scope basics, and the classifier heads several slim nets end with.
// Layer and end-point names are parameters where the nets differ, so each
// net keeps slim's exact variable names.
#pragma once

#include <string>
#include <vector>

#include "hub/ops/lrn.h"
#include "modules/nets/nets.h"
#include "modules/slim/layers.h"

namespace hub::nets {

// o's value, or the net's own default where o leaves it < 0.
double weight_decay_or(const NetOptions& o, double net_default);
double keep_prob_or(const NetOptions& o, double net_default);

// slim.arg_scope basics: o's training mode, weight decay o's or net_default.
slim::LayerOptions base_options(const NetOptions& o, double default_weight_decay);
// Layers with batch norm (replacing biases) of these settings.
void set_batch_norm(slim::LayerOptions& lo, float decay, float epsilon, bool scale);
// A logits layer's options: lo without activation or batch norm, zero biases.
slim::LayerOptions linear(slim::LayerOptions lo);

// Fully connected logits `name` on x [batch, D]: net.logits and end point "Logits".
void fc_logits(Net& net, const Scope& s, Output x, int64_t num_classes, const std::string& name,
               const slim::LayerOptions& lo);
// 1x1-conv logits `name` on x [batch, 1, 1, D] (linear(lo)), squeezed to
// [batch, classes] as `squeeze_name` when o.spatial_squeeze.
Output conv_logits(const Scope& s, Output x, const NetOptions& o, const slim::LayerOptions& lo, const std::string& name,
                   const std::string& squeeze_name = "SpatialSqueeze");

// LeNet / official MNIST tail: flatten -> fc `fc` (units, end point `fc`,
// net.features) -> with classes: dropout `dropout` (keep o's or
// default_keep) -> fc_logits `logits`.
struct DenseHead {
  int64_t units;
  std::string fc, dropout, logits;
  double default_keep;
};
void dense_head(Net& net, const Scope& s, Output x, const NetOptions& o, const slim::LayerOptions& lo,
                const DenseHead& h);

// alexnet_v2 / vgg / overfeat tail, fully connected layers as convolutions:
// fc6 (fc6_kernel VALID, fc6_depth), dropout6, fc7 (1x1, 4096; end point
// "fc7", net.features = fc7 squeezed) -> with classes: dropout7, conv_logits
// "fc8" squeezed as "fc8/squeezed", end point "fc8". fc: the fc layers' options.
void conv_fc_head(Net& net, const Scope& s, Output x, const NetOptions& o, slim::LayerOptions fc, int64_t fc6_kernel,
                  int64_t fc6_depth, double keep);

// slim's _reduced_kernel_size_for_small_input: a k x k pooling window cut
// down to x's height and width [min(H, k), min(W, k)] where they are known.
std::vector<int64_t> reduced_kernel(const Scope& s, Output x, int64_t k);

// Inception / MobileNet tail under scope "Logits": VALID average pool `pool`
// (end point pool_name, net.features squeezed) -> with classes: dropout
// "Dropout_1b" (keep o's or default_keep) -> conv_logits `conv_name`, end point "Logits".
void pooled_logits_head(Net& net, const Scope& s, Output x, std::vector<int64_t> pool, const std::string& pool_name,
                        const std::string& conv_name, const NetOptions& o, const slim::LayerOptions& lo,
                        double default_keep);

// The CIFAR-10 tutorial's and slim CifarNet's settings: LRN(4, 1.0, 0.001/9,
// 0.75); conv weights N(0, 5e-2) truncated; fc weights N(0, 0.04) truncated,
// biases 0.1, weight decay o's or 0.004; logits N(0, 1/192) linear, no decay.
ops::LrnOptions cifar_lrn();
struct CifarLayers {
  slim::LayerOptions conv, fc, logits;
};
CifarLayers cifar_layers(const NetOptions& o);

}  // namespace hub::nets

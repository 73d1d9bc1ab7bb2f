// Quantization-aware training: the fake quantization tf.contrib.quantize
// inserted into TF-Slim training graphs, built here by the slim layers
// (modules/slim/layers.h, LayerOptions::quantize) and by retrain's head as
// they create their nodes, rather than by rewriting a finished graph. The
// exported module keeps the FakeQuant nodes and range variables for
// `hub quantize` (docs/training.md, "Quantization-aware training", states
// that contract).
//
// Weights (quantize_weights), under <layer>/<weights name>_quant/, per
// output channel (o, the index over the filter's trailing dims: O of an
// HWIO filter, c*M+m of a depthwise HWCM one, N of matmul weights [K, N]):
//   m_o = max |w| over channel o's weights (no gradient through m)
//   w_q = FakeQuantWithMinMaxVarsPerChannel(w as [-1, O], -m, m;
//         num_bits 8, narrow_range true), reshaped back
//   the symmetric int8 grid [-127, 127] * m_o / 127 per channel. Per channel
//   so that what training saw survives batch-norm folding exactly: folding
//   scales channel o by s_o = gamma_o / sqrt(variance_o + epsilon), which
//   scales its grid by |s_o| and leaves the integers alone, so `hub quantize`
//   (which quantizes a module trained this way per channel) gives the
//   folded layer the same int8 weights training used.
// Activations (quantize_activation), under <layer>/act_quant/:
//   variables min, max: float32 [], zeros, not trainable (model variables:
//   checkpointed, exported);
//   y = FakeQuantWithMinMaxVars(x, min, max; num_bits 8, narrow_range false);
//   when training, kUpdateOps also hold (decay 0.999, MovingAvgQuantize's)
//     min <- min * decay + min(min(x), 0) * (1 - decay)
//     max <- max * decay + max(max(x), 0) * (1 - decay)
//   (batch ranges widened to contain 0, as TensorFlow's). The FakeQuant node
//   comes before the updates, so a step quantizes with the ranges as of the
//   previous step; initialize_activation_ranges() gives fresh ranges their
//   first batch's values before the first step.
#pragma once

#include <string>

#include "hub/graph/graph.h"
#include "hub/graph/session.h"
#include "hub/ops/variables.h"

namespace hub::slim {

enum class QuantizeMode {
  kOff,          // a float graph
  kTrackRanges,  // range variables (and their updates when training) but no FakeQuant: before --quantize_delay
  kFakeQuant,    // range variables and FakeQuant nodes on weights and activations
};

struct QuantizeOptions {
  QuantizeMode mode = QuantizeMode::kOff;
  bool is_training = false;  // add the activation ranges' moving-average updates
  float ema_decay = 0.999f;
};

// The collection listing the activation ranges' AssignMovingAverage nodes.
inline constexpr const char* kActivationRangeUpdates = "activation_range_updates";

// w_q for a weights variable w of `out_channels` output channels (its
// trailing dims, see above) in mode kFakeQuant, else w itself.
Output quantize_weights(const Scope& layer, Output w, int64_t out_channels, const QuantizeOptions& o);
// The activation fake quant of a layer's output x (mode kFakeQuant), else x;
// creates the range variables unless mode is kOff. A layer scope that already
// has them is AlreadyExists.
Output quantize_activation(const Scope& layer, Output x, const QuantizeOptions& o);

// Whether `variable` is an activation range (".../act_quant/min" or "max").
// Restoring a float checkpoint (fine-tuning or resuming with fake
// quantization newly on) leaves the ranges it lacks fresh instead of failing.
bool is_activation_range(const std::string& variable);

// The number of activation ranges (pairs of act_quant/min, max variables) in
// the graph: 0 when nothing was quantized.
int count_activation_ranges(const GraphBuilder& graph);

// For each range of the graph's kActivationRangeUpdates whose min and max
// variables both still hold 0 (fresh: never updated, nor restored), runs the
// graph on `feeds` and sets them to the batch's range. Returns how many
// ranges it set. Call it with a training step's feeds before that step.
int initialize_activation_ranges(Session& session, const GraphBuilder& graph, VariableStore& variables,
                                 const FeedList& feeds);

}  // namespace hub::slim

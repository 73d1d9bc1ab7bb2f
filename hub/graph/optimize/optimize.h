// The inference optimiser: rewrites a graph, given its variables' current
// values, into a faster graph that computes the same outputs (within float
// rounding) for a forward-only run. Modules instantiated for inference use it
// (hub/module/module.h); training graphs are never rewritten.
//
// Passes, in order (each in its own file here):
//   fold.cc    variables become constants (their tensors shared, not copied);
//              Identity / StopGradient are bypassed; every stateless node whose
//              inputs are all constant is evaluated once with the reference
//              kernels and becomes a constant.
//   fuse.cc    Conv2D (not grouped) / DepthwiseConv2dNative with a constant filter, and
//              MatMul with a constant right operand, become _FusedConv2D /
//              _FusedMatMul (hub/ops/fused.h), a float convolution taking
//              the zero constant Pad of the spatial dims before it (slim's
//              conv2d_same) into its explicit padding; then, while something
//              changes:
//              an inference FusedBatchNorm with constant parameters is folded
//              into the filter and bias (w' = w * s, b' = (b - mean) * s +
//              offset, s = scale / sqrt(variance + epsilon), per output
//              channel); BiasAdd / Add / Mul by a per-channel constant go into
//              the bias (and filter); a following activation (Relu, Relu6,
//              LeakyRelu, Elu, Sigmoid, Tanh, HardSwish, ClipByValue) and a
//              residual Add of a same-shaped tensor become post-ops. A node
//              is absorbed only when the fused node's output has no other
//              consumer and is not itself an output of the graph. An
//              inference batch norm left over (resnet_v2's pre-activation,
//              after a residual Add that also feeds the shortcut) becomes a
//              1x1 depthwise _FusedConv2D (filter s, bias offset - mean * s),
//              which then takes the activation after it as a post-op: one
//              pass over the tensor instead of two.
//              Quantized (QDQ) graphs: a conv / MatMul whose input is a
//              per-tensor DequantizeLinear of 8-bit activations and whose
//              filter is a DequantizeLinear of a constant int8 tensor (zero
//              point 0, per tensor or per output channel) becomes the fused
//              op's quantized form on the 8-bit tensors themselves (the int8
//              filter is kept through the constant folding for this); bias
//              and activations are absorbed as above (batch norm, Mul and
//              residual Add are not: they stay float ops), and a following
//              per-tensor QuantizeLinear becomes the requantization of its
//              output. So a chain Q -> DQ -> conv -> Q -> DQ -> conv runs on
//              8-bit tensors from one int8 primitive to the next; a
//              MaxPool / AvgPool between a DequantizeLinear and a
//              QuantizeLinear of the same parameters runs on the 8-bit
//              tensor. Any int8 weights left over are then folded to float
//              constants.
//   layout.cc  where the backend prefers a channel-blocked layout (oneDNN on
//              AVX2: nChw8c) each edge between two fused convolutions that
//              both run blocked stays blocked; _Relayout nodes convert where a
//              blocked tensor meets anything else, and every kept output is
//              NHWC. On a backend that prefers NHWC (oneDNN's AVX-512
//              kernels) nothing changes.
//   then nodes no kept output needs are dropped.
//
// Control flow's subgraphs (If's branches, a Loop's body: hub/ops/subgraph.h)
// are optimised the same way, each on its own with its arguments and results
// kept (a loop body's MatMul, bias and activation become one _FusedMatMul
// run once per iteration); their statistics add to the graph's.
//
// The result is derived from the variables' values (folded batch norm,
// copies of scaled filters): OptimizedGraph::stale() says when a variable
// was written since (Storage::generation) or replaced, and the caller must
// optimise again.
//
// Which layout is faster depends on the net, the batch size and the CPU
// (measured: MobileNet v1 runs NHWC faster at batch 1 and nChw8c / nChw16c
// faster at batch 32, ResNet v1 50 blocked at every batch), and oneDNN's
// own preference cannot tell; so an inference Module optimises the graph
// once per layout the backend offers (layout_candidates()) and times them
// on the first calls of each set of input shapes (Contest), keeping the
// faster.
//
// HUB_GRAPH_OPT=0 in the environment turns the optimiser off for modules
// (graph_optimization_enabled()), for debugging; HUB_GRAPH_LAYOUT=nhwc or
// =blocked fixes the layout instead of timing (auto, the default, times).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hub/backend/backend.h"
#include "hub/graph/graph.h"
#include "hub/ops/variables.h"

namespace hub {

struct OptimizeOptions {
  // The backend whose kernels will run the graph (its layout preference is
  // asked); default_backend() when null.
  const Backend* backend = nullptr;
  // Channel block for activations between fused convolutions: -1 asks the
  // backend (its preferred: OpRegistry::activation_blocks), 0 keeps NHWC, 8 or 16 forces it.
  int64_t block = -1;
};

struct OptimizeStats {
  int nodes_before = 0, nodes_after = 0;
  int constants_folded = 0;  // nodes evaluated into constants
  int batch_norms_folded = 0;
  int fused = 0;      // _FusedConv2D / _FusedMatMul nodes
  int post_ops = 0;   // nodes absorbed as post-ops or into the bias
  int relayouts = 0;  // _Relayout nodes inserted
  int64_t block = 0;  // the channel block used (0: NHWC)
};

class OptimizedGraph {
 public:
  const Graph& graph() const { return graph_; }
  // The optimised graph's tensor for a kept tensor of the source graph;
  // throws InvalidArgument for one that was not kept.
  Output tensor(Output source) const;
  // Whether any variable the result was derived from has been written or
  // replaced in `variables` since.
  bool stale(const VariableStore& variables) const;
  const OptimizeStats& stats() const { return stats_; }

 private:
  friend OptimizedGraph optimize_for_inference(const Graph&, const VariableStore&, const std::vector<Output>&,
                                               const OptimizeOptions&);
  struct Source {
    std::string name;
    std::weak_ptr<Storage> storage;
    uint64_t generation;
  };
  Graph graph_;
  std::map<Output, Output> tensors_;
  std::vector<Source> sources_;
  OptimizeStats stats_;
};

// Optimises `graph` for computing the tensors in `keep` (signature inputs
// and outputs: placeholders stay placeholders) from the current values in
// `variables`. Throws NotFound naming a variable the graph uses that the
// store lacks, and whatever a failed constant evaluation throws.
OptimizedGraph optimize_for_inference(const Graph& graph, const VariableStore& variables,
                                      const std::vector<Output>& keep, const OptimizeOptions& options = {});

// False when $HUB_GRAPH_OPT is "0" (read on every call).
bool graph_optimization_enabled();

// The activation layouts (channel blocks, 0 for NHWC) worth trying on
// `backend`, preferred first, as $HUB_GRAPH_LAYOUT allows: unset or "auto"
// all that the backend offers (OpRegistry::activation_blocks), "nhwc" {0},
// "blocked" the backend's channel block ({0} on a backend without one).
// Throws InvalidArgument naming the variable for any other value.
std::vector<int64_t> layout_candidates(const Backend& backend);

// Settles which of several interchangeable ways of making one call (here
// activation layouts) is fastest by timing the real calls, so no call costs
// more than one run: the first call of each way is untimed (it makes
// primitives, reorders weights, plans memory), then the ways take turns,
// one timed call each, for `rounds` rounds; from then on next() is the way
// whose fastest timed call was the fastest (the least disturbed by a noisy
// machine). A single way is settled from the start.
class Contest {
 public:
  static constexpr int kRounds = 5;
  // Calls until a contest of `ways` ways settles: one untimed call and
  // `rounds` timed ones each.
  static constexpr int calls_to_settle(int ways, int rounds = kRounds) { return ways * (1 + rounds); }
  explicit Contest(std::vector<int64_t> ways, int rounds = kRounds);
  // The way the next call should run: while unsettled, the way with the
  // fewest calls (the earlier of equals).
  int64_t next() const;
  // The call next() named took `seconds`.
  void record(double seconds);
  bool settled() const;
  const std::vector<int64_t>& ways() const { return ways_; }
  // Takes `way` out (found to be the same as another); the last way stays.
  void drop(int64_t way);

 private:
  size_t next_index() const;
  std::vector<int64_t> ways_;
  std::vector<int> calls_;
  std::vector<double> best_;
  int rounds_;
};

}  // namespace hub

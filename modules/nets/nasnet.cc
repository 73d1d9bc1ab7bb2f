// slim's NASNet-A (nasnet/nasnet.py, nasnet_utils.py; Zoph et al. 2017) and
// PNASNet-5 (nasnet/pnasnet.py; Liu et al. 2017). The networks are stacks of
// searched cells; a cell (nasnet_utils.NasNetABaseCell) takes the previous
// two cell outputs, brings both to its filter count F = num_conv_filters x
// filter_scaling ("1x1" + "beginning_bn" on the input, "prev_1x1" +
// "prev_bn" or a factorized reduction on the one before when it differs),
// then runs five "comb_iter_i" steps, each adding two operations ("left",
// "right") on earlier hidden states, and concatenates the states no step
// used ("cell_output"). Operations: "separable_KxK_2" = twice (ReLU,
// separable conv K x K "separable_KxK_j", batch norm "bn_sep_KxK_j") with
// the stride on the first; "avg|max_pool_3x3" (SAME) with "1x1" + "bn_1"
// when the depth differs; "none" = identity, or ReLU + strided "1x1" +
// "bn_1". Only the cell's two inputs are strided in a reduction cell.
// Variables: convolutions without biases, batch norm with scale; weights
// variance-scaling (fan out); the final "final_layer/FC" has biases.
// Drop path is not built: it is off in the mobile configurations and at
// inference; the large ones are trained here without it (see docs/nets.md).
#include <cmath>

#include "hub/ops/activation.h"
#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/reduction.h"
#include "modules/nets/net_util.h"

namespace hub::nets {

namespace {

// A searched cell: ten operations, the hidden state each one reads, and which
// of the seven states (two inputs, five combinations) the output leaves out.
struct CellDef {
  std::vector<std::string> operations;
  std::vector<int> hiddenstate_indices;
  std::vector<int> used_hiddenstates;
};

const CellDef kNasNetNormal{{"separable_5x5_2", "separable_3x3_2", "separable_5x5_2", "separable_3x3_2", "avg_pool_3x3",
                             "none", "avg_pool_3x3", "avg_pool_3x3", "separable_3x3_2", "none"},
                            {0, 1, 1, 1, 0, 1, 1, 1, 0, 0},
                            {1, 0, 0, 0, 0, 0, 0}};
const CellDef kNasNetReduction{{"separable_5x5_2", "separable_7x7_2", "max_pool_3x3", "separable_7x7_2", "avg_pool_3x3",
                                "separable_5x5_2", "none", "avg_pool_3x3", "separable_3x3_2", "max_pool_3x3"},
                               {0, 1, 0, 1, 0, 1, 3, 2, 2, 0},
                               {1, 1, 1, 0, 0, 0, 0}};
const CellDef kPnasNet{{"separable_5x5_2", "max_pool_3x3", "separable_7x7_2", "max_pool_3x3", "separable_5x5_2",
                        "separable_3x3_2", "separable_3x3_2", "max_pool_3x3", "separable_3x3_2", "none"},
                       {1, 1, 0, 0, 0, 0, 4, 0, 1, 0},
                       {1, 1, 0, 0, 0, 0, 0}};

// The hparams of nasnet.py's / pnasnet.py's configurations and arg scopes.
struct Config {
  bool pnas;        // PNASNet: one cell type, strided at the reductions
  bool cifar_stem;  // one 3x3 conv instead of conv0 + two reduction cells
  double stem_multiplier;
  int num_cells;
  int64_t num_conv_filters;
  double dense_dropout_keep_prob;
  bool skip_reduction_layer_input;
  double weight_decay, batch_norm_decay, batch_norm_epsilon;
};

Config config_of(const std::string& name) {
  if (name == "nasnet_cifar") return {false, true, 3.0, 18, 32, 1.0, false, 5e-4, 0.9, 1e-5};
  if (name == "nasnet_mobile") return {false, false, 1.0, 12, 44, 0.5, false, 4e-5, 0.9997, 1e-3};
  if (name == "nasnet_large") return {false, false, 3.0, 18, 168, 0.5, true, 5e-5, 0.9997, 1e-3};
  if (name == "pnasnet_mobile") return {true, false, 1.0, 9, 54, 0.5, true, 4e-5, 0.9997, 1e-3};
  if (name == "pnasnet_large") return {true, false, 3.0, 12, 216, 0.5, true, 4e-5, 0.9997, 1e-3};
  throw_error(Code::kInvalidArgument, "no NASNet configuration named '" + name + "'");
}

class Builder {
 public:
  Builder(const GraphBuilder& g, const slim::LayerOptions& lo) : graph_(g), conv_(lo), bn_(lo.batch_norm) {
    conv_.use_batch_norm = false;
    conv_.use_biases = false;
    conv_.activation = nullptr;
    bn_.is_training = lo.is_training;
  }

  Output conv(const Scope& s, Output x, int64_t depth, int64_t k, const std::string& name, int64_t stride = 1,
              const std::string& padding = "SAME") const {
    slim::LayerOptions l = conv_;
    l.padding = padding;
    return slim::conv2d(s, x, depth, {k, k}, name, l, {stride, stride});
  }
  Output bn(const Scope& s, Output x, const std::string& name) const { return slim::batch_norm(s.sub(name), x, bn_); }
  const slim::LayerOptions& options() const { return conv_; }

  // nasnet_utils.factorized_reduction: stride 1 is a 1x1 conv; stride 2 joins
  // two 1x1 convs of half the filters (the second one more when odd) on the
  // input subsampled at even and at odd positions.
  Output factorized_reduction(const Scope& s, Output x, int64_t filters, int64_t stride) const {
    if (stride == 1) return bn(s, conv(s, x, filters, 1, "path_conv"), "path_bn");
    Output path1 = slim::avg_pool2d(s, x, {1, 1}, {stride, stride}, "VALID", "path1_pool");
    path1 = conv(s, path1, filters / 2, 1, "path1_conv");
    Output shifted = ops::slice(s, ops::pad(s, x, {0, 0, 0, 1, 0, 1, 0, 0}), {0, 1, 1, 0}, {-1, -1, -1, -1});
    Output path2 = slim::avg_pool2d(s, shifted, {1, 1}, {stride, stride}, "VALID", "path2_pool");
    path2 = conv(s, path2, filters / 2 + filters % 2, 1, "path2_conv");
    return bn(s, ops::concat(s, {path1, path2}, 3), "final_path_bn");
  }

  // One cell call (NasNetABaseCell.__call__) under scope `name`.
  Output cell(const Scope& root, const CellDef& def, Output net, Output prev, const std::string& name, int64_t filters,
              int64_t stride) const {
    Scope s = root.sub(name);
    // _reduce_prev_layer: prev brought to net's resolution and F filters.
    if (!prev.valid()) {
      prev = net;
    } else if (width(prev) != width(net)) {
      prev = factorized_reduction(s, ops::relu(s, prev), filters, 2);
    } else if (depth(prev) != filters) {
      prev = bn(s, conv(s, ops::relu(s, prev), filters, 1, "prev_1x1"), "prev_bn");
    }
    std::vector<Output> states{bn(s, conv(s, ops::relu(s, net), filters, 1, "1x1"), "beginning_bn"), prev};
    for (int i = 0; i < 5; ++i) {
      Scope comb = s.sub("comb_iter_" + std::to_string(i));
      Output h[2];
      for (int side = 0; side < 2; ++side) {
        const int idx = def.hiddenstate_indices[static_cast<size_t>(2 * i + side)];
        h[side] = operation(comb.sub(side == 0 ? "left" : "right"), states[static_cast<size_t>(idx)],
                            def.operations[static_cast<size_t>(2 * i + side)], idx < 2 ? stride : 1, filters);
      }
      states.push_back(ops::add(comb.sub("combine"), h[0], h[1]));
    }
    // _combine_unused_states: the unused states, reduced to the last one's shape.
    Scope out = s.sub("cell_output");
    const Output last = states.back();
    std::vector<Output> unused;
    for (size_t i = 0; i < states.size(); ++i) {
      if (def.used_hiddenstates[i]) continue;
      if (width(states[i]) != width(last) || depth(states[i]) != depth(last))
        states[i] = factorized_reduction(out.sub("reduction_" + std::to_string(i)), states[i], depth(last),
                                         width(states[i]) != width(last) ? 2 : 1);
      unused.push_back(states[i]);
    }
    return ops::concat(out, unused, 3);
  }

 private:
  int64_t width(Output x) const { return graph_.spec(x).shape.dim(2); }
  int64_t depth(Output x) const { return graph_.spec(x).shape.dim(3); }

  Output operation(const Scope& s, Output x, const std::string& op, int64_t stride, int64_t filters) const {
    if (op.rfind("separable_", 0) == 0) {  // separable_KxK_N
      const int64_t k = op[10] - '0';
      const int layers = op.back() - '0';
      const std::string kk = std::to_string(k) + "x" + std::to_string(k);
      for (int l = 1; l <= layers; ++l) {
        x = slim::separable_conv2d(s, ops::relu(s, x), filters, {k, k}, "separable_" + kk + "_" + std::to_string(l),
                                   conv_, {stride, stride});
        x = bn(s, x, "bn_sep_" + kk + "_" + std::to_string(l));
        stride = 1;
      }
      return x;
    }
    if (op == "none") {
      if (stride == 1 && depth(x) == filters) return x;
      return bn(s, conv(s, ops::relu(s, x), filters, 1, "1x1", stride), "bn_1");
    }
    x = op[0] == 'a' ? slim::avg_pool2d(s, x, {3, 3}, {stride, stride}, "SAME", "AvgPool")
                     : slim::max_pool2d(s, x, {3, 3}, {stride, stride}, "SAME", "MaxPool");
    if (depth(x) != filters) x = bn(s, conv(s, x, filters, 1, "1x1"), "bn_1");
    return x;
  }

  const GraphBuilder& graph_;
  slim::LayerOptions conv_;
  ops::BatchNormOptions bn_;
};

// nasnet._build_aux_head on relu(x): 5x5/3 VALID average pool, 1x1 "proj" of
// 128 + "aux_bn0" + ReLU, a VALID "Conv" of 768 covering the map + "aux_bn1"
// + ReLU, flatten, "FC" (linear, biases).
Output aux_head(const Scope& root, const Builder& b, Output x, int64_t classes, const std::string& name) {
  Scope s = root.sub(name).sub("aux_logits");
  x = slim::avg_pool2d(s, ops::relu(s, x), {5, 5}, {3, 3}, "VALID", "AvgPool");
  x = ops::relu(s, b.bn(s, b.conv(s, x, 128, 1, "proj"), "aux_bn0"));
  const Shape& shape = s.graph().spec(x).shape;
  slim::LayerOptions l = b.options();
  l.padding = "VALID";
  x = slim::conv2d(s, x, 768, {shape[1], shape[2]}, "Conv", l);
  x = slim::flatten(s, ops::relu(s, b.bn(s, x, "aux_bn1")));
  slim::LayerOptions fc = b.options();
  fc.use_biases = true;
  return slim::fully_connected(s, x, classes, "FC", fc);
}

}  // namespace

Net nasnet(const Scope& s, Output images, const NetOptions& o, const NetInfo& info) {
  const Config c = config_of(info.name);
  slim::LayerOptions lo = base_options(o, c.weight_decay);
  set_batch_norm(lo, static_cast<float>(c.batch_norm_decay), static_cast<float>(c.batch_norm_epsilon), true);
  lo.weights_init.initializer = "variance_scaling";
  lo.weights_init.init_params = {2.0};
  lo.weights_init.init_mode = "fan_out";
  const Builder b(s.graph(), lo);
  const CellDef& normal = c.pnas ? kPnasNet : kNasNetNormal;
  const CellDef& reduction = c.pnas ? kPnasNet : kNasNetReduction;
  Net net;
  // nasnet_utils.calc_reduction_layers(num_cells, 2).
  const int reductions[2] = {c.num_cells / 3, static_cast<int>(2.0 / 3.0 * c.num_cells)};
  const int aux_cell = reductions[1] - 1;
  std::vector<Output> outputs;  // cell_outputs; an invalid Output stands for None
  Output x;
  if (c.cifar_stem) {
    x = b.bn(s,
             b.conv(s, images, static_cast<int64_t>(static_cast<double>(c.num_conv_filters) * c.stem_multiplier), 3,
                    "l1_stem_3x3"),
             "l1_stem_bn");
    outputs = {Output(), x};
  } else {
    x = b.bn(s, b.conv(s, images, static_cast<int64_t>(32 * c.stem_multiplier), 3, "conv0", 2, "VALID"), "conv0_bn");
    outputs = {Output(), x};
    double scaling = 0.25;
    for (int i = 0; i < 2; ++i, scaling *= 2) {
      x = b.cell(s, reduction, x, outputs[outputs.size() - 2], "cell_stem_" + std::to_string(i),
                 static_cast<int64_t>(static_cast<double>(c.num_conv_filters) * scaling), 2);
      outputs.push_back(x);
    }
  }
  net.end_points["Stem"] = x;
  double scaling = 1.0;
  Output prev;
  for (int cell = 0; cell < c.num_cells; ++cell) {
    const int r = cell == reductions[0] ? 0 : cell == reductions[1] ? 1 : -1;
    if (r >= 0) scaling *= 2;
    const int64_t filters = static_cast<int64_t>(static_cast<double>(c.num_conv_filters) * scaling);
    if (c.skip_reduction_layer_input) prev = outputs[outputs.size() - 2];
    if (r >= 0 && !c.pnas) {
      x = b.cell(s, reduction, x, outputs[outputs.size() - 2], "reduction_cell_" + std::to_string(r), filters, 2);
      net.end_points["Reduction_Cell_" + std::to_string(r)] = x;
      outputs.push_back(x);
    }
    if (!c.skip_reduction_layer_input) prev = outputs[outputs.size() - 2];
    // PNASNet reduces with a strided normal cell.
    x = b.cell(s, normal, x, prev, "cell_" + std::to_string(cell), filters, r >= 0 && c.pnas ? 2 : 1);
    net.end_points["Cell_" + std::to_string(cell)] = x;
    if (cell == aux_cell && o.create_aux_logits && o.num_classes > 0)
      net.end_points["AuxLogits"] = aux_head(s, b, x, o.num_classes, "aux_" + std::to_string(cell));
    outputs.push_back(x);
  }
  Scope f = s.sub("final_layer");
  net.features = ops::mean(f, ops::relu(f, x), {1, 2}, false, "global_pool");
  net.end_points["global_pool"] = net.features;
  if (o.num_classes > 0) {
    x = slim::dropout(f, net.features, keep_prob_or(o, c.dense_dropout_keep_prob), o.is_training, "dropout");
    slim::LayerOptions fc = b.options();
    fc.use_biases = true;
    net.logits = slim::fully_connected(f, x, o.num_classes, "FC", fc);
    net.end_points["Logits"] = net.logits;
  }
  return net;
}

}  // namespace hub::nets

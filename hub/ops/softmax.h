// Softmax family and cross-entropy losses (float32).
//
//   Softmax(x; axis = -1):     y_i = e^(x_i - m) / sum_j e^(x_j - m),  m = max_j x_j
//                              dx = (g - sum(g * y, axis)) * y
//   LogSoftmax(x; axis = -1):  y_i = x_i - m - log sum_j e^(x_j - m)
//                              dx = g - e^y * sum(g, axis)
//   i and j run along `axis` (negative counts from the end; must lie in
//   [-rank, rank)), every other index fixed. x of rank >= 1; y has x's shape.
//   This is TF's Softmax (last axis) and ONNX Softmax/LogSoftmax from opset 13;
//   ONNX opset < 13, which flattens x to 2-D at `axis` and normalises over all
//   trailing dims, maps to Reshape [prod(dims before axis), -1], Softmax(axis
//   -1), Reshape back. Backends: reference (Eigen), onednn (softmax and
//   logsoftmax primitives, any axis). Gradients are compositions (Mul, Sum,
//   Sub, Exp).
//
// The cross-entropy ops below take their classes along the last axis.
//
//   SoftmaxCrossEntropyWithLogits(logits [N,C], labels [N,C]) -> (loss [N], backprop [N,C])
//     loss_n = -sum_c labels_nc * log softmax(logits)_nc;  backprop = softmax(logits) - labels
//     d logits = g_loss[:, None] * backprop (+ the softmax Jacobian applied to g_backprop)
//     d labels = -g_loss[:, None] * log softmax(logits) (- g_backprop)
//     Each row of labels should be a distribution (sum 1): backprop, and so
//     the logits gradient, assume it, as in TF.
//   SparseSoftmaxCrossEntropyWithLogits(logits [N,C], labels [N] int32|int64) -> (loss [N], backprop [N,C])
//     as above with labels = one_hot(labels, C); a label outside [0, C) fails
//     at run time with InvalidArgument naming the node, the label and C.
//     Labels get no gradient.
//
//   OneHot(indices; depth, on_value = 1, off_value = 0): float32 of shape
//     indices.shape + [depth]; out[..., j] = on_value if indices[...] == j else
//     off_value (an index outside [0, depth) gives a row of off_value, as TF).
//     indices int32 or int64. Not differentiable.
#pragma once

#include <string>

#include "hub/ops/scope.h"

namespace hub::ops {

Output softmax(const Scope& s, Output logits, int64_t axis = -1, const std::string& name = "Softmax");
Output log_softmax(const Scope& s, Output logits, int64_t axis = -1, const std::string& name = "LogSoftmax");
struct CrossEntropy {
  Output loss;      // [N]
  Output backprop;  // [N, C]
};
CrossEntropy softmax_cross_entropy_with_logits(const Scope& s, Output logits, Output labels,
                                               const std::string& name = "SoftmaxCrossEntropyWithLogits");
CrossEntropy sparse_softmax_cross_entropy_with_logits(const Scope& s, Output logits, Output labels,
                                                      const std::string& name = "SparseSoftmaxCrossEntropyWithLogits");
Output one_hot(const Scope& s, Output indices, int64_t depth, float on_value = 1.0f, float off_value = 0.0f,
               const std::string& name = "OneHot");

// tf.losses.softmax_cross_entropy: mean over the batch of the cross entropy
// between softmax(logits [N,C]) and onehot_labels [N,C] (float32), the labels
// smoothed to labels * (1 - label_smoothing) + label_smoothing / C when
// label_smoothing > 0 (C must then be known in the graph). A float32 scalar.
Output softmax_cross_entropy(const Scope& s, Output logits, Output onehot_labels, float label_smoothing = 0.0f);
// tf.losses.sparse_softmax_cross_entropy: as above with integer class labels
// [N] (int32 or int64); with label_smoothing > 0 they go through OneHot and the
// dense loss. A float32 scalar.
Output sparse_softmax_cross_entropy(const Scope& s, Output logits, Output labels, float label_smoothing = 0.0f);

}  // namespace hub::ops

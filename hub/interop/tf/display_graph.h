// A hub graph as a TensorFlow GraphDef for display: what TensorBoard's graph
// tab draws (the Event.graph_def that tf.summary.FileWriter(logdir, graph)
// writes). Internal to hub (the result is a generated proto); not installed.
//
// Every node of the graph becomes one NodeDef:
//   name    the hub node's name (name scopes become TensorBoard's groups),
//           made a valid TensorFlow name (tf_node_name in ops.h) and unique
//   op      the hub op's name. Hub names its ops as TensorFlow does where
//           TensorFlow has the op (Conv2D, Relu, MatMul, FusedBatchNorm,
//           Conv2DBackpropInput, ReluGrad ...); the others (Variable,
//           ReduceToLike, BroadcastLike, hub's fused ops) keep hub's names,
//           which TensorBoard draws like any op it does not know
//   input   "producer" for output 0, "producer:k" for output k
//   attr    the node's attributes in AttrValue form (ints, floats, bools,
//           strings, their lists, dtypes, shapes; tensor-valued attributes
//           only up to kMaxDisplayTensorElements elements, so a constant
//           does not copy a large tensor into the log) and "_output_shapes",
//           the inferred output shapes (unknown dims -1) TensorBoard shows
//           on the edges
// It describes the graph; it is not a graph TensorFlow can run:
// export_saved_model (saved_model_export.h) writes that, for the ops the
// TensorFlow op mapping covers (not the gradient ops a training graph holds).
#pragma once

#include <cstdint>

#include "hub/graph/graph.h"
#include "hub/interop/tf/proto/graph.pb.h"

namespace hub::tf {

inline constexpr int64_t kMaxDisplayTensorElements = 16;

proto::GraphDef display_graph_def(const Graph& graph);

}  // namespace hub::tf

// TensorFlow GraphDef -> hub graph: the driver every TensorFlow importer
// (SavedModel, TF Hub module, TF.js graph model) shares. Internal to
// hub/interop/tf; not installed.
//
// 1. flatten_graph() inlines function calls (PartitionedCall,
//    StatefulPartitionedCall, and nodes whose op is a library function, as
//    TensorFlow 2 exports keep their signatures and savers in functions):
//    each body node becomes "<call>/<node>", function arguments become the
//    caller's inputs, and the call's outputs name the returned tensors.
//    Every input is then canonical: "node:k", or "^node" for a control input.
//    A call that cannot be inlined (a missing function, list arguments, too
//    deep) fails only if the outputs need it.
// 2. import_graph() imports the part of the graph the fetches need (control
//    inputs are dropped, so NoOps, savers and initializers are never
//    reached), in topological order, each node through its OpImporter
//    (hub/interop/tf/ops.h). Fed tensors become hub Placeholders named after
//    their node. Variables (VariableV2, VarHandleOp + ReadVariableOp) become
//    hub Variables named after their TensorFlow node, with values from
//    `variable_value`; in a frozen graph (weights_as_variables), float Consts
//    used as weights become variables too.
//
// Errors (hub::Error naming `file`, and the node and op where there is one):
// a node name used twice, an input naming no node, a cycle among the needed
// nodes (listing it), an op without importer, an attribute the importer does
// not know or a value it does not support, a dtype hub lacks, a needed
// placeholder that is not fed, a variable without a value.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hub/core/error.h"
#include "hub/graph/graph.h"
#include "hub/interop/tf/proto/graph.pb.h"
#include "hub/module/module.h"
#include "hub/tensor/tensor.h"

namespace hub::tf {

// Limits on what flattening produces (hostile files nest calls deeply or
// expand them exponentially).
inline constexpr int kMaxCallDepth = 32;
inline constexpr int64_t kMaxFlatNodes = 4'000'000;

struct FlatGraph {
  std::vector<proto::NodeDef> nodes;   // inputs canonical: "node:k" or "^node"
  std::map<std::string, int> by_name;  // node name -> index
  std::string file;                    // for messages
  // Outputs of inlined calls ("call:k") -> the tensors they return.
  std::map<std::string, std::string> aliases;
  // Calls that could not be inlined (kept as nodes) -> why; importing one
  // is that error.
  std::map<std::string, Error> broken;
  // The functions calls may name, by name: control flow (If, While) imports
  // the ones it names as subgraphs (OpContext::import_function_graph). They
  // point into the GraphDefs flattened, which must outlive the flat graph.
  std::map<std::string, const proto::FunctionDef*> functions;
  // The functions made here: TensorFlow 1 loops' (rewrite_tf1_while_loops).
  std::vector<std::shared_ptr<const proto::FunctionDef>> made_functions;
  // The node, or nullptr.
  const proto::NodeDef* find(const std::string& name) const;
  // A canonical tensor name with call outputs replaced by what they return.
  std::string resolve(const std::string& tensor) const;
};

// "x" -> "x:0"; "x:1" stays; "^x" stays.
std::string canonical_tensor(const std::string& name);
// "x:1" -> {"x", 1}, "x" -> {"x", 0}; nothing when malformed.
std::optional<std::pair<std::string, int>> parse_tensor(const std::string& name);
// parse_tensor, throwing InvalidArgument naming `what` when malformed.
std::pair<std::string, int> split_tensor(const std::string& name, const std::string& what);

// The output arguments of op `op` ("node:arg:k" in function bodies): a
// library function's, those its importer declares, or the savers' TensorFlow 2
// exports name; nothing for an op hub does not know.
std::optional<std::vector<std::string>> op_output_args(
    const std::string& op, const std::map<std::string, const proto::FunctionDef*>& functions);

// TensorFlow 1 while loops (frames of Enter, Merge, Switch, LoopCond,
// NextIteration and Exit nodes) as While nodes calling functions made from
// their nodes, so they import as TensorFlow 2's (tf1_control_flow.cc). A loop that
// cannot be read so is an error of its Exits (FlatGraph::broken). Also
// gives a TensorArrayV3 of unknown element shape the one a gather of it
// states. flatten_graph() ends with it.
void rewrite_tf1_while_loops(FlatGraph& graph);

// TensorFlow 1 conds whose predicate is known only at run time (computed from
// a tensor in `fed` or a variable): each becomes an If calling functions made
// from its branches' nodes, its Merges Identities of the If's outputs
// (tf1_control_flow.cc). Nothing (nullopt) when the graph has none; conds on
// a predicate known at import are left to the Switch and Merge importers,
// which import only the branch taken. import_graph() starts with it.
std::optional<FlatGraph> rewrite_tf1_conds(const FlatGraph& graph, const std::set<std::string>& fed);

// `inherited`: functions of an enclosing graph the calls may also name (a
// control-flow function graph's); the graph's own library takes precedence.
FlatGraph flatten_graph(const proto::GraphDef& graph, const std::string& file,
                        const std::map<std::string, const proto::FunctionDef*>& inherited = {});

// A tensor fed at run time: a signature input.
struct Feed {
  std::string tensor;          // "node:k"
  std::optional<DType> dtype;  // from the signature (else the node's attribute)
  std::optional<Shape> shape;  // from the signature (else the node's attribute)
};

struct GraphImportOptions {
  std::vector<Feed> feeds;
  std::vector<std::string> fetches;  // "node:k"
  // The value of the variable node `name` (VariableV2 or VarHandleOp); throws
  // (naming the variable and where it looked) when there is none. Unset: the
  // model has no variables, and a variable node is an error.
  std::function<Tensor(const std::string& name)> variable_value;
  // When set: the trainable variables (others are not); else every variable
  // is trainable except those feeding batch-norm statistics.
  std::optional<std::set<std::string>> trainable;
  // Values of Const nodes stored outside the graph (TF.js weights).
  const std::map<std::string, Tensor>* const_values = nullptr;
  // A frozen graph (weights are Consts): float Consts feeding weight inputs
  // (filters, matrices, biases, batch-norm parameters) become module
  // variables named after their Const node, so they live in
  // variables.safetensors and can be fine-tuned.
  bool weights_as_variables = true;
  // Control flow nesting around this import (each function graph imported
  // for an If or While adds one; at most kMaxCallDepth), and the function
  // graphs imported so far, shared by the nested imports (at most
  // interop::kMaxSubgraphImports).
  int depth = 0;
  std::shared_ptr<int> subgraph_imports = std::make_shared<int>(0);
};

struct ImportedGraph {
  Graph graph;
  std::vector<Output> feeds;              // as options.feeds
  std::vector<Output> fetches;            // as options.fetches
  std::map<std::string, Tensor> weights;  // variable name -> value
};

ImportedGraph import_graph(const FlatGraph& graph, const GraphImportOptions& options);

// What every imported module records about its source: source_format,
// source_sha256 (of the file read), source_producer (when known) and
// imported_at (UTC, ISO 8601).
std::map<std::string, AttachedValue> provenance(const std::string& format, const std::string& sha256,
                                                const std::string& producer);

}  // namespace hub::tf

// TensorFlow -> hub: functional control flow. If and StatelessIf become hub's
// If, While and StatelessWhile hub's Loop; the functions they name are
// imported as hub subgraphs (OpContext::import_function_graph) from a small
// graph that feeds them: constants enter as Consts (and fold there),
// variables as their VarHandleOp (the module's variables), other tensors as
// Placeholders the hub node passes.
#include <algorithm>
#include <limits>

#include "hub/interop/linear.h"
#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/ops.h"
#include "hub/interop/tf/tensor_proto.h"
#include "hub/ops/control_flow.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"
#include "hub/ops/state.h"

namespace hub::tf {

namespace {

proto::NodeDef& add_node(proto::GraphDef& g, const std::string& name, const std::string& op) {
  proto::NodeDef& n = *g.add_node();
  n.set_name(name);
  n.set_op(op);
  return n;
}

// The graph feeding a function: its inputs as Consts, VarHandleOps or fed
// Placeholders, by name.
struct FunctionInputs {
  proto::GraphDef graph;
  std::vector<std::string> feeds;  // Placeholder tensors, in the order fed
  std::vector<Output> passed;      // the tensors the hub node passes, one per Placeholder add() made
  std::vector<std::string> names;  // each input's tensor in the graph

  std::string placeholder(const std::string& name, DType dtype, const Shape& shape) {
    proto::NodeDef& n = add_node(graph, name, "Placeholder");
    (*n.mutable_attr())["dtype"].set_type(static_cast<proto::DataType>(dtype_to_tf(dtype)));
    shape_to_proto(shape, (*n.mutable_attr())["shape"].mutable_shape());
    feeds.push_back(name + ":0");
    return name + ":0";
  }
  // Input i of the node: a constant, a variable handle, or a tensor passed.
  void add(OpContext& c, int i) {
    const TfValue& v = c.value(i);
    const std::string name = "__hub_in" + std::to_string(i);
    if (v.constant) {
      proto::NodeDef& n = add_node(graph, name, "Const");
      (*n.mutable_attr())["dtype"].set_type(static_cast<proto::DataType>(dtype_to_tf(v.constant->dtype())));
      tensor_to_proto(*v.constant, (*n.mutable_attr())["value"].mutable_tensor());
      names.push_back(name + ":0");
    } else if (!v.variable.empty()) {
      bool declared = false;
      for (const auto& n : graph.node()) declared = declared || n.name() == v.variable;
      if (!declared) *graph.add_node() = c.variable_node(v.variable);
      names.push_back(v.variable + ":0");
    } else {
      names.push_back(placeholder(name, c.dtype(i), c.shape(i)));
      passed.push_back(c.input(i));
    }
  }
  // A call of function `f` (with its instantiation attributes) on `inputs`.
  void call(const std::string& name, const proto::NameAttrList& f, const std::vector<std::string>& inputs) {
    proto::NodeDef& n = add_node(graph, name, f.name());
    for (const std::string& in : inputs) n.add_input(in);
    for (const auto& [key, value] : f.attr()) (*n.mutable_attr())[key] = value;
  }
};

const proto::FunctionDef& function(OpContext& c, const std::string& name) {
  if (const proto::FunctionDef* f = c.function(name)) return *f;
  c.fail("calls function '" + name + "', which the function library lacks");
}

// The node's condition as a bool of one element (TensorFlow's If takes a
// number too: nonzero is true).
Output condition(OpContext& c, int i) {
  const Shape s = c.shape(i);
  if (!s.is_fully_defined() || s.num_elements() != 1)
    c.unsupported("the condition must hold one element, got " + s.to_string());
  if (c.dtype(i) == DType::kBool) return c.input(i);
  return ops::not_equal(c.scope(), c.input(i), ops::constant(c.scope(), Tensor::zeros(c.dtype(i), Shape{}), "zero"),
                        "cond");
}

void map_if(OpContext& c) {
  const Output cond = condition(c, 0);
  FunctionInputs in;
  for (int i = 1; i < c.num_inputs(); ++i) in.add(c, i);
  // Resource handles (variables the branches pass on) are not tensors: left out.
  std::vector<int> kept;
  const auto& types = c.attr("Tout").list().type();
  for (int k = 0; k < types.size(); ++k) {
    if (types[k] != proto::DT_RESOURCE)
      kept.push_back(k);
    else
      c.set_unavailable(k, "an If output of dtype " + tf_dtype_name(types[k]) + " (a resource handle)");
  }
  if (kept.empty()) c.unsupported("no output of the If is a tensor hub computes");
  std::vector<SubgraphPtr> branches;
  for (const char* branch : {"then_branch", "else_branch"}) {
    FunctionInputs g = in;
    g.call("__hub_branch", c.attr(branch).func(), g.names);
    std::vector<std::string> fetches;
    for (int k : kept) fetches.push_back("__hub_branch:" + std::to_string(k));
    branches.push_back(c.import_function_graph(g.graph, g.feeds, fetches));
  }
  std::vector<Output> inputs{cond};
  inputs.insert(inputs.end(), in.passed.begin(), in.passed.end());
  const std::vector<Output> out =
      c.add_n("If", inputs, Attrs().set("then_branch", branches[0]).set("else_branch", branches[1]));
  for (size_t j = 0; j < kept.size(); ++j) c.set_output(kept[j], out[j]);
}

// Whether `f` returns its input k unchanged (directly or through Identity).
bool passes_through(const proto::FunctionDef& f, int k) {
  if (k >= f.signature().input_arg_size() || k >= f.signature().output_arg_size()) return false;
  auto r = f.ret().find(f.signature().output_arg(k).name());
  if (r == f.ret().end()) return false;
  std::string ref = r->second;
  for (int hops = 0; hops < 16; ++hops) {
    if (ref == f.signature().input_arg(k).name()) return true;
    const std::string node = ref.substr(0, ref.find(':'));
    const proto::NodeDef* n = nullptr;
    for (const auto& d : f.node_def())
      if (d.name() == node) n = &d;
    if (!n || n->op() != "Identity" || n->input_size() < 1) return false;
    ref = n->input(0);
  }
  return false;
}

// While(vars; cond, body): hub's Loop, whose body computes go = cond(vars)
// and then body(vars) where go holds, vars where it does not (an If), so the
// last iteration, the one finding the condition false, leaves the values as
// they are. Loop variables the body passes through unchanged are not carried:
// constants and variables enter as themselves, tensors as invariant inputs.
// A carried value whose dims change across iterations enters the body with
// those dims unknown (its function graph is imported again until its
// results fit).
void map_while(OpContext& c) {
  const proto::NameAttrList& cond_fn = c.attr("cond").func();
  const proto::NameAttrList& body_fn = c.attr("body").func();
  const proto::FunctionDef& body = function(c, body_fn.name());
  const int n = c.num_inputs();
  if (body.signature().input_arg_size() != n || body.signature().output_arg_size() != n)
    c.fail("the body takes and returns " + std::to_string(body.signature().input_arg_size()) + " and " +
           std::to_string(body.signature().output_arg_size()) + " values; the loop has " + std::to_string(n));
  std::vector<int> carried;
  std::vector<TensorSpec> specs;
  for (int k = 0; k < n; ++k) {
    if (passes_through(body, k)) {
      c.forward(k, k);
      continue;
    }
    if (!c.value(k).variable.empty())
      c.unsupported("loop variable " + std::to_string(k) + " is a resource the body changes");
    carried.push_back(k);
    specs.push_back({c.dtype(k), c.shape(k)});
  }
  if (carried.empty()) c.unsupported("the body changes no loop variable");
  // The body's If returns every loop variable unchanged when the condition fails.
  const std::string identity = "__hub_while_identity";
  proto::FunctionDef same;
  same.mutable_signature()->set_name(identity);
  const auto& types = c.attr("T").list().type();
  if (types.size() != n)
    c.fail("T lists " + std::to_string(types.size()) + " types for " + std::to_string(n) + " inputs");
  for (int k = 0; k < n; ++k) {
    auto* a = same.mutable_signature()->add_input_arg();
    a->set_name("in" + std::to_string(k));
    a->set_type(static_cast<proto::DataType>(types[k]));
    auto* o = same.mutable_signature()->add_output_arg();
    o->set_name("out" + std::to_string(k));
    o->set_type(static_cast<proto::DataType>(types[k]));
    (*same.mutable_ret())["out" + std::to_string(k)] = "in" + std::to_string(k);
  }
  SubgraphPtr step;
  std::vector<Output> invariant;
  for (int round = 0;; ++round) {
    FunctionInputs g;
    g.placeholder("__hub_iteration", DType::kInt64, Shape{});
    g.placeholder("__hub_cond", DType::kBool, Shape{});
    std::vector<std::string> vars(static_cast<size_t>(n));
    for (size_t j = 0; j < carried.size(); ++j)
      vars[static_cast<size_t>(carried[j])] =
          g.placeholder("__hub_var" + std::to_string(carried[j]), specs[j].dtype, specs[j].shape);
    for (int k = 0; k < n; ++k) {
      if (!vars[static_cast<size_t>(k)].empty()) continue;
      g.add(c, k);
      vars[static_cast<size_t>(k)] = g.names.back();
    }
    g.call("__hub_go", cond_fn, vars);
    proto::NodeDef& step_if = add_node(g.graph, "__hub_step", "StatelessIf");
    step_if.add_input("__hub_go:0");
    for (const std::string& v : vars) step_if.add_input(v);
    auto& attrs = *step_if.mutable_attr();
    attrs["Tcond"].set_type(proto::DT_BOOL);
    *attrs["Tin"].mutable_list() = c.attr("T").list();
    *attrs["Tout"].mutable_list() = c.attr("T").list();
    *attrs["then_branch"].mutable_func() = body_fn;
    attrs["else_branch"].mutable_func()->set_name(identity);
    *g.graph.mutable_library()->add_function() = same;
    std::vector<std::string> fetches{"__hub_go:0"};
    for (int k : carried) fetches.push_back("__hub_step:" + std::to_string(k));
    step = c.import_function_graph(g.graph, g.feeds, fetches);
    invariant = g.passed;
    bool relaxed = false;
    for (size_t j = 0; j < carried.size(); ++j) {
      const TensorSpec& result = step->spec(step->results[1 + j]);
      if (result.dtype != specs[j].dtype || result.shape.rank() != specs[j].shape.rank())
        c.fail("loop variable " + std::to_string(carried[j]) + " enters the body as " + specs[j].to_string() +
               " and leaves it as " + result.to_string());
      for (int d = 0; d < specs[j].shape.rank(); ++d)
        if (specs[j].shape[d] != kUnknownDim && specs[j].shape[d] != result.shape[d]) {
          specs[j].shape.set_dim(d, kUnknownDim);
          relaxed = true;
        }
    }
    if (!relaxed) break;
    HUB_CHECK(round < 64, "While: carried shapes keep changing");  // each round makes a dim unknown
  }
  const TensorSpec& go = step->spec(step->results[0]);
  if (go.dtype != DType::kBool || !go.shape.is_fully_defined() || go.shape.num_elements() != 1)
    c.unsupported("the condition function returns " + go.to_string() + ", not a bool of one element");
  const Scope s = c.scope();
  std::vector<Output> inputs{
      ops::constant(s, Tensor::scalar<int64_t>(std::numeric_limits<int64_t>::max()), "no_trip_limit"),
      ops::constant(s, Tensor::scalar<bool>(true), "go")};
  for (int k : carried) inputs.push_back(c.input(k));
  inputs.insert(inputs.end(), invariant.begin(), invariant.end());
  const std::vector<Output> out =
      c.add_n("Loop", inputs, Attrs().set("body", step).set("num_carried", static_cast<int64_t>(carried.size())));
  for (size_t j = 0; j < carried.size(); ++j) c.set_output(carried[j], out[j]);
}

// TensorLists (a loop reads its input sequence from one and writes its
// outputs to another, as Keras' RNN layers do) are kept as one tensor
// [n, ...]: the list made from a tensor is that tensor; a reserved or empty
// list is empty ([0, ...], unknown row dims as 0), and setting the item after
// the last (or pushing one back) appends it (ListSetItem).
void map_tensor_list_reserve(OpContext& c) {
  const std::optional<DType> dtype = dtype_from_tf(c.attr("element_dtype").type());
  if (!dtype) c.unsupported("element_dtype " + tf_dtype_name(c.attr("element_dtype").type()) + " is not supported");
  if (c.shape(0).rank() != 1) c.unsupported("an element_shape of unknown rank is not supported");
  std::vector<int64_t> dims{0};
  for (int64_t d : c.constant_ints(0, "element_shape")) dims.push_back(std::max<int64_t>(d, 0));
  c.set_constant(0, Tensor::zeros(*dtype, Shape(dims)));
}

// (resize_if_index_out_of_bounds, a dynamically sized TensorArray's: an
// index one past the end appends either way; one further is an error at run
// time.)
void map_tensor_list_set_item(OpContext& c) {
  c.set_output(0, c.add("ListSetItem", {c.input(0), c.input(1), c.input(2)}));
}

// PushBack appends: the item set at the list's length.
void map_tensor_list_push_back(OpContext& c) {
  const Output list = c.input(0);
  c.set_output(0, c.add("ListSetItem", {list, interop::run_time_dim(c.scope(), list, 0), c.input(1)}));
}

// Rows `index` (input) of the list (input), along its first dim.
void gather_rows(OpContext& c, int list, int index) {
  c.set_output(0, c.add("Gather", {c.input(list), c.input(index)},
                        Attrs().set("axis", int64_t{0}).set("batch_dims", int64_t{0})));
}

void map_tensor_list_get_item(OpContext& c) { gather_rows(c, 0, 1); }

// A list's length: its dim 0 (the list is input `i`), an int32 scalar.
void list_length(OpContext& c, int i) {
  if (const std::optional<Tensor> list = c.constant(i)) {
    c.set_constant(0, Tensor::scalar<int32_t>(static_cast<int32_t>(list->shape()[0])));
    return;
  }
  c.set_dims(0, {DimValue::dim_of(c.input(i), 0)}, DType::kInt32, /*scalar=*/true);
}

void map_tensor_list_length(OpContext& c) { list_length(c, 0); }

// TensorFlow 1's TensorArrays, as TensorLists: the array's tensor travels on
// its flow (every read and write takes the flow of the array's last write),
// the handle is a placeholder value nothing reads. A new array is empty
// ([0, ...] in its element shape, unknown dims 0; or [0] when the element
// shape is unknown, taking the rank of the first write outside a loop);
// writes append or replace, a scatter onto a new array puts the rows where
// its indices say (a permutation of 0..n-1, as unstack() gives).
void map_tensor_array(OpContext& c) {
  const DType dtype = c.attr_dtype("dtype");
  const proto::TensorShapeProto& element = c.attr("element_shape").shape();
  std::vector<int64_t> dims{0};
  if (!element.unknown_rank()) {
    const Shape shape = shape_from_proto(element, c.where());
    for (int64_t d : shape.dims()) dims.push_back(std::max<int64_t>(d, 0));
  }
  c.set_constant(0, Tensor::scalar<int32_t>(0));
  c.set_constant(1, Tensor::zeros(dtype, Shape(dims)));
}

// Whether the flow input is a new array's (empty, known at import).
bool new_array(const OpContext& c, int flow) {
  const std::optional<Tensor> list = c.constant(flow);
  return list && list->rank() > 0 && list->shape()[0] == 0;
}

// The flow input as a list of `item`'s rows: a new array of unknown element
// shape takes the item's rank.
Output tensor_array(OpContext& c, int flow, const Shape& item) {
  if (new_array(c, flow)) {
    std::vector<int64_t> dims(static_cast<size_t>(item.rank()) + 1, 0);
    return ops::constant(c.scope(), Tensor::zeros(c.dtype(flow), Shape(dims)), "empty");
  }
  if (c.shape(flow).rank() != item.rank() + 1)
    c.unsupported("writes " + item.to_string() + " into a TensorArray of elements of rank " +
                  std::to_string(c.shape(flow).rank() - 1) +
                  " (a TensorArray of unknown element shape written in a loop needs element_shape, or a "
                  "TensorArrayGatherV3 of it stating one)");
  return c.input(flow);
}

void map_tensor_array_write(OpContext& c) {
  c.set_output(0, c.add("ListSetItem", {tensor_array(c, 3, c.shape(2)), c.input(1), c.input(2)}));
}

void map_tensor_array_scatter(OpContext& c) {
  const Shape value = c.shape(2);
  if (value.rank() < 1) c.fail("scatters a scalar " + value.to_string());
  Output list;
  if (new_array(c, 3)) {
    if (c.constant(1)) {
      const std::vector<int64_t> v = c.constant_ints(1, "indices");
      bool in_order = value[0] == static_cast<int64_t>(v.size());
      for (size_t i = 0; in_order && i < v.size(); ++i) in_order = v[i] == static_cast<int64_t>(i);
      if (in_order) {
        c.forward(0, 2);
        return;
      }
    }
    list = ops::zeros_like(c.scope(), c.input(2), "rows");
  } else {
    list = tensor_array(c, 3, Shape(std::vector<int64_t>(value.dims().begin() + 1, value.dims().end())));
  }
  const Output at = c.scope().op("ExpandDims", {c.input(1)}, Attrs().set("axis", int64_t{-1}), "at");
  c.set_output(0, c.add("ScatterND", {list, at, c.input(2)}));
}

void map_tensor_array_size(OpContext& c) { list_length(c, 1); }

// Concat(handle, flow): the elements joined along their first dim (all have
// the same, the list being one tensor), and each one's length.
void map_tensor_array_concat(OpContext& c) {
  const Shape list = c.shape(1);
  if (list.rank() < 2) c.fail("concatenates elements of rank 0 (a list " + list.to_string() + ")");
  std::vector<int64_t> dims{-1};
  for (int d = 2; d < list.rank(); ++d) {
    if (list[d] == kUnknownDim)
      c.unsupported("concatenates elements " + list.to_string() +
                    " whose dims after the first are known only at run time");
    dims.push_back(list[d]);
  }
  c.set_output(0, c.add("Reshape", {c.input(1)}, Attrs().set("shape", dims)));
  if (list[0] == kUnknownDim || list[1] == kUnknownDim || list[0] > (int64_t{1} << 20)) {
    c.set_unavailable(1, "the lengths of a TensorArray's elements known only at run time");
    return;
  }
  c.set_constant(1,
                 Tensor::from_vector<int64_t>({list[0]}, std::vector<int64_t>(static_cast<size_t>(list[0]), list[1])));
}

// Split(handle, value, lengths, flow): a new array of value's consecutive
// pieces, which must be of one length (known at import) to be one tensor.
void map_tensor_array_split(OpContext& c) {
  const std::vector<int64_t> lengths = c.constant_ints(2, "lengths");
  const Shape value = c.shape(1);
  if (lengths.empty() || value.rank() < 1) c.fail("splits " + value.to_string() + " into no pieces");
  if (std::any_of(lengths.begin(), lengths.end(), [&](int64_t l) { return l != lengths[0]; }))
    c.unsupported("splits into pieces of different lengths, which hub's one-tensor TensorArray cannot hold");
  std::vector<int64_t> dims{static_cast<int64_t>(lengths.size()), lengths[0]};
  for (int d = 1; d < value.rank(); ++d) {
    if (value[d] == kUnknownDim) c.unsupported("splits " + value.to_string() + " with dims known only at run time");
    dims.push_back(value[d]);
  }
  c.set_output(0, c.add("Reshape", {c.input(1)}, Attrs().set("shape", dims)));
}

// Read(handle, index, flow) and Gather(handle, indices, flow): rows of the flow.
void map_tensor_array_read(OpContext& c) { gather_rows(c, 2, 1); }

// TensorFlow 1's cond: Switch(data, pred) passes data to output 1 (pred
// true) or 0, the other output dead; a Merge passes on its live input and
// which one it was. Here the predicate is known at import (a
// PlaceholderWithDefault left at its default: Keras' learning phase); a cond
// on a run-time predicate was made an If before import (tf1_control_flow.cc).
void map_switch(OpContext& c) {
  const std::optional<Tensor> pred = c.constant(1);
  if (!pred || pred->dtype() != DType::kBool || pred->num_elements() != 1)
    c.unsupported(
        "a Switch on a predicate known only at run time outside a TensorFlow 1 cond hub reads (a Merge of the two "
        "sides of Switches on one predicate computed from inputs or variables) is not supported");
  const int taken = pred->item<bool>() ? 1 : 0;
  c.forward(taken, 0);
  c.set_dead(1 - taken);
}

void map_merge(OpContext& c) {
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (c.value(i).dead) continue;
    c.forward(0, i);
    c.set_constant(1, Tensor::scalar<int32_t>(i));
    return;
  }
  c.fail("every input is dead");  // (the importer marks such a Merge dead before mapping it)
}

}  // namespace

void add_control_flow_importers(std::map<std::string, OpImporter>& m) {
  const std::map<std::string, proto::AttrValue> if_attrs{{"Tcond", attr_required()},
                                                         {"Tin", attr_list()},
                                                         {"Tout", attr_list()},
                                                         {"then_branch", attr_required()},
                                                         {"else_branch", attr_required()},
                                                         {"output_shapes", attr_list()}};
  const std::map<std::string, proto::AttrValue> while_attrs{{"T", attr_list()},
                                                            {"cond", attr_required()},
                                                            {"body", attr_required()},
                                                            {"output_shapes", attr_list()},
                                                            {"parallel_iterations", attr_i(10)}};
  for (const char* op : {"If", "StatelessIf"}) m[op] = {map_if, if_attrs, {"output"}, false};
  for (const char* op : {"While", "StatelessWhile"}) m[op] = {map_while, while_attrs, {"output"}, false};
  const proto::AttrValue element_dtype = attr_required(), shape_type = attr_type(3 /* DT_INT32 */);
  m["TensorListFromTensor"] = {
      map_forward, {{"element_dtype", element_dtype}, {"shape_type", shape_type}}, {"output_handle"}, false};
  m["TensorListReserve"] = {
      map_tensor_list_reserve, {{"element_dtype", element_dtype}, {"shape_type", shape_type}}, {"handle"}, false};
  m["EmptyTensorList"] = {
      map_tensor_list_reserve, {{"element_dtype", element_dtype}, {"shape_type", shape_type}}, {"handle"}, false};
  m["TensorListPushBack"] = {map_tensor_list_push_back, {{"element_dtype", element_dtype}}, {"output_handle"}, false};
  m["TensorListSetItem"] = {map_tensor_list_set_item,
                            {{"element_dtype", element_dtype}, {"resize_if_index_out_of_bounds", attr_b(false)}},
                            {"output_handle"},
                            false};
  m["TensorListGetItem"] = {map_tensor_list_get_item, {{"element_dtype", element_dtype}}, {"item"}, false};
  m["TensorListStack"] = {
      map_forward, {{"element_dtype", element_dtype}, {"num_elements", attr_i(-1)}}, {"tensor"}, false};
  m["TensorListLength"] = {map_tensor_list_length, {}, {"length"}, false};
  // (The handle input of reads and writes is never read; the flow is the array.)
  const proto::AttrValue T = attr_required(), unknown_shape = [] {
    proto::AttrValue v;
    v.mutable_shape()->set_unknown_rank(true);
    return v;
  }();
  m["TensorArrayV3"] = {map_tensor_array,
                        {{"dtype", T},
                         {"element_shape", unknown_shape},
                         {"dynamic_size", attr_b(false)},
                         {"clear_after_read", attr_b(true)},
                         {"identical_element_shapes", attr_b(false)},
                         {"tensor_array_name", attr_s("")}},
                        {"handle", "flow"},
                        false};
  m["TensorArrayWriteV3"] = {map_tensor_array_write, {{"T", T}}, {"flow_out"}, false};
  m["TensorArrayScatterV3"] = {map_tensor_array_scatter, {{"T", T}}, {"flow_out"}, false};
  m["TensorArrayReadV3"] = {map_tensor_array_read, {{"dtype", T}}, {"value"}, false};
  m["TensorArrayGatherV3"] = {
      map_tensor_array_read, {{"dtype", T}, {"element_shape", unknown_shape}}, {"value"}, false};
  m["TensorArraySizeV3"] = {map_tensor_array_size, {}, {"size"}, false};
  m["TensorArrayConcatV3"] = {
      map_tensor_array_concat, {{"dtype", T}, {"element_shape_except0", unknown_shape}}, {"value", "lengths"}, false};
  m["TensorArraySplitV3"] = {map_tensor_array_split, {{"T", T}}, {"flow_out"}, false};
  m["Switch"] = {map_switch, {{"T", attr_required()}}, {"output_false", "output_true"}, false};
  m["Merge"] = {map_merge, {{"T", attr_required()}, {"N", attr_required()}}, {"output", "value_index"}, false};
}

}  // namespace hub::tf

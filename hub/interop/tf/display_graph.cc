#include "hub/interop/tf/display_graph.h"

#include <set>
#include <string>
#include <vector>

#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/ops.h"
#include "hub/interop/tf/tensor_proto.h"

namespace hub::tf {

namespace {

// False when the value is a tensor too large to show.
bool to_attr(const AttrValue& value, proto::AttrValue* out) {
  switch (attr_type(value)) {
    case AttrType::kInt:
      out->set_i(std::get<int64_t>(value));
      return true;
    case AttrType::kFloat:
      out->set_f(static_cast<float>(std::get<double>(value)));
      return true;
    case AttrType::kBool:
      out->set_b(std::get<bool>(value));
      return true;
    case AttrType::kString:
      out->set_s(std::get<std::string>(value));
      return true;
    case AttrType::kInts:
      for (int64_t v : std::get<std::vector<int64_t>>(value)) out->mutable_list()->add_i(v);
      return true;
    case AttrType::kFloats:
      for (double v : std::get<std::vector<double>>(value)) out->mutable_list()->add_f(static_cast<float>(v));
      return true;
    case AttrType::kStrings:
      for (const std::string& v : std::get<std::vector<std::string>>(value)) out->mutable_list()->add_s(v);
      return true;
    case AttrType::kDType:
      out->set_type(static_cast<proto::DataType>(dtype_to_tf(std::get<DType>(value))));
      return true;
    case AttrType::kShape:
      shape_to_proto(std::get<Shape>(value), out->mutable_shape());
      return true;
    case AttrType::kTensor: {
      const Tensor& t = std::get<Tensor>(value);
      if (t.num_elements() > kMaxDisplayTensorElements) return false;
      tensor_to_proto(t, out->mutable_tensor());
      return true;
    }
    case AttrType::kGraph:  // a branch or loop body: not drawn
      return false;
  }
  return false;
}

}  // namespace

proto::GraphDef display_graph_def(const Graph& graph) {
  proto::GraphDef out;
  std::vector<std::string> names(graph.num_nodes());
  std::set<std::string> used;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    std::string name = tf_node_name(graph.node(id).name);
    for (int k = 1; !used.insert(name).second; ++k) name = tf_node_name(graph.node(id).name) + "_" + std::to_string(k);
    names[id] = name;
  }
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node& n = graph.node(id);
    proto::NodeDef* def = out.add_node();
    def->set_name(names[id]);
    def->set_op(n.op);
    for (const Output& in : n.inputs)
      def->add_input(in.index == 0 ? names.at(in.node) : names.at(in.node) + ":" + std::to_string(in.index));
    auto& attrs = *def->mutable_attr();
    for (const auto& [key, value] : n.attrs.items()) {
      proto::AttrValue a;
      if (to_attr(value, &a)) attrs[key] = std::move(a);
    }
    auto* shapes = attrs["_output_shapes"].mutable_list();
    for (const TensorSpec& spec : n.outputs) shape_to_proto(spec.shape, shapes->add_shape());
  }
  return out;
}

}  // namespace hub::tf

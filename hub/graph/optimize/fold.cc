// Freezing variables into constants, bypassing identities, and evaluating
// constant subgraphs once (optimize.h).
#include <algorithm>

#include "hub/graph/optimize/passes.h"
#include "hub/ops/registry.h"
#include "hub/tensor/allocator.h"

namespace hub::optimize {

void freeze_variables(Ir& ir, const VariableStore& variables, std::vector<FrozenVariable>* frozen) {
  for (INode& n : ir.nodes) {
    if (n.dead || n.op != "Variable") continue;
    if (!variables.contains(n.name))
      throw_error(Code::kNotFound, "optimising for inference: no value for variable '" + n.name + "'");
    const Tensor& v = variables.at(n.name);
    if (v.dtype() != n.outputs[0].dtype || v.shape() != n.outputs[0].shape)
      throw_error(Code::kInvalidArgument, "optimising for inference: variable '" + n.name + "' holds " +
                                              v.spec_string() + " but the graph declares " + n.outputs[0].to_string());
    frozen->push_back({n.name, v.storage(), v.storage()->generation.load()});
    n.op = "Const";
    n.attrs = Attrs().set("value", v);  // shares the variable's storage
  }
}

void bypass_identities(Ir& ir) {
  for (size_t i = 0; i < ir.nodes.size(); ++i) {
    INode& n = ir.nodes[i];
    if (n.dead || (n.op != "Identity" && n.op != "StopGradient")) continue;
    ir.replace_uses(Output{static_cast<int>(i), 0}, n.inputs[0]);
    n.dead = true;
  }
}

int fold_constants(Ir& ir, bool keep_quantized_weights) {
  std::vector<int> order;
  for (size_t i = 0; i < ir.nodes.size(); ++i) order.push_back(static_cast<int>(i));
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return ir.nodes[a].position < ir.nodes[b].position; });
  PoolAllocator alloc;
  int folded = 0;
  for (int id : order) {
    const INode& n = ir.nodes[id];
    if (n.dead || n.inputs.empty() || n.op == "Const" || OpRegistry::global().find(n.op).stateful) continue;
    // Control flow (its subgraphs need a session) runs at run time.
    if (std::any_of(n.attrs.items().begin(), n.attrs.items().end(),
                    [](const auto& a) { return attr_type(a.second) == AttrType::kGraph; }))
      continue;
    if (keep_quantized_weights && n.op == "DequantizeLinear" && ir.spec(n.inputs[0]).dtype == DType::kInt8) continue;
    bool all_constant =
        std::all_of(n.inputs.begin(), n.inputs.end(), [&](Output in) { return ir.constant(in).defined(); });
    bool known =
        std::all_of(n.outputs.begin(), n.outputs.end(), [](const TensorSpec& s) { return s.shape.is_fully_defined(); });
    if (!all_constant || !known) continue;
    Node node;
    node.id = id;
    node.name = n.name;
    node.op = n.op;
    node.attrs = n.attrs;
    node.outputs = n.outputs;
    std::vector<const Tensor*> inputs;
    for (Output in : n.inputs) inputs.push_back(&ir.constant(in));
    const KernelDef* kernel = OpRegistry::global().kernel(n.op, "reference");
    HUB_CHECK(kernel != nullptr, "no reference kernel for " + n.op);
    KernelContext ctx(node, inputs, node.outputs, alloc, nullptr, 0);
    try {
      kernel->fn(ctx);
    } catch (const Error& e) {
      throw e.with_context("optimising for inference: evaluating constant node '" + n.name + "' (" + n.op + ")");
    }
    const std::string name = n.name;
    const int outputs = static_cast<int>(n.outputs.size());
    for (int i = 0; i < outputs; ++i) {
      Output o{id, i};
      if (ir.consumers(o).empty() && !ir.kept(o)) continue;
      Tensor value = ctx.outputs()[i].defined() ? ctx.outputs()[i] : ctx.output(i);
      ir.replace_uses(o, ir.add_constant(value, i == 0 ? name + "/folded" : name + "/folded_" + std::to_string(i), id));
    }
    ir.nodes[id].dead = true;
    ++folded;
  }
  return folded;
}

}  // namespace hub::optimize

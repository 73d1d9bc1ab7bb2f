// Which nodes of the built-in networks would leave the GPU under
// `--backend cuda`: every node of each net's training graph (forward, loss,
// gradients, batch-norm updates) and of its inference graph must be placed on
// the cuda backend at the shapes a step feeds. Placement is host code
// (registry lookups and the kernels' `supports`), so this runs without a GPU
// in a build with CUDA.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "hub/backend/backend.h"
#include "hub/graph/optimize/optimize.h"
#include "hub/graph/optimizer.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"
#include "modules/nets/nets.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

// The ops of `graph` (with its placeholders fed `feeds`, in node order) that
// the cuda backend leaves to the host, each with a node that has it. Shapes
// follow from the feeds through each op's shape function, as a session
// infers them at run time. Integer constants (shapes, axes) stay on the host
// by design (hub/ops/cuda/state.cu).
std::set<std::string> left_to_host(const Graph& graph, const std::vector<TensorSpec>& feeds, const Backend& cuda) {
  std::vector<std::vector<TensorSpec>> outputs(static_cast<size_t>(graph.num_nodes()));
  std::set<std::string> off;
  size_t fed = 0;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node& node = graph.node(id);
    if (node.op == "Placeholder") {
      REQUIRE(fed < feeds.size());
      outputs[static_cast<size_t>(id)] = {feeds[fed++]};
      continue;
    }
    std::vector<TensorSpec> inputs;
    for (const Output& in : node.inputs) inputs.push_back(outputs[static_cast<size_t>(in.node)].at(in.index));
    outputs[static_cast<size_t>(id)] =
        OpRegistry::global().find(node.op).shape_fn(InferContext(node.name, node.op, inputs, node.attrs));
    const bool host_constant = node.op == "Const" && node.outputs[0].dtype != DType::kFloat32;
    if (!host_constant && place(node, inputs, cuda).backend != &cuda) off.insert(node.op + " (" + node.name + ")");
  }
  return off;
}

std::string joined(const std::set<std::string>& ops) {
  std::string out;
  for (const std::string& op : ops) out += op + "\n";
  return out;
}

}  // namespace

TEST_CASE("cuda placement: every node of every built-in net's training and inference steps has a cuda kernel") {
  const Backend* cuda = built_cuda_backend();
  HUB_SKIP_UNLESS(cuda != nullptr, kNoCudaBuild);
  const std::set<std::string> gpu_nets{"mnist", "cifar10", "mobilenet_v1", "resnet_v1_50", "inception_v3"};
  for (const std::string& name : nets::net_names()) {
    const nets::NetInfo& info = nets::find_net(name);
    const TensorSpec images{DType::kFloat32, {2, info.image_size, info.image_size, info.channels}};
    for (bool training : {true, false}) {
      CAPTURE(name);
      CAPTURE(training);
      Graph graph;
      Scope s(graph);
      Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, info.image_size, info.image_size, info.channels},
                                  "images");
      nets::NetOptions o;
      o.num_classes = 10;
      o.is_training = training;
      o.create_aux_logits = training;  // as hub train builds it
      const nets::Net net = nets::build_net(name, s, x, o);
      std::vector<TensorSpec> feeds{images};
      if (training) {
        Output labels = ops::placeholder(s, DType::kInt64, {kUnknownDim}, "labels");
        feeds.push_back({DType::kInt64, {2}});
        Output loss = ops::total_loss(s, ops::sparse_softmax_cross_entropy(s, net.logits, labels));
        build_gradients(s, loss);
      }
      const std::set<std::string> off = left_to_host(graph, feeds, *cuda);
      CHECK_MESSAGE(off.empty(), "on the host in a cuda session:\n" << joined(off));
      if (training || !gpu_nets.count(name)) continue;
      // What an inference Module runs with HUB_BACKEND=cuda: the graph
      // optimised for each layout the backend offers (folded batch norms,
      // fused convolutions and products), for the nets the GPU benchmarks
      // and `hub train --backend cuda` are about (all of them would take
      // half a minute).
      VariableStore vars;
      vars.initialize(graph);
      for (int64_t layout : layout_candidates(*cuda)) {
        CAPTURE(layout);
        OptimizeOptions options;
        options.backend = cuda;
        options.block = layout;
        const OptimizedGraph optimized = optimize_for_inference(graph, vars, {net.logits}, options);
        CHECK(optimized.stats().fused > 0);
        const std::set<std::string> off_optimized = left_to_host(optimized.graph(), feeds, *cuda);
        CHECK_MESSAGE(off_optimized.empty(), "on the host in a cuda module:\n" << joined(off_optimized));
      }
    }
  }
}

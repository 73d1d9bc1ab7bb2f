// Reference kernels of If and Loop: the subgraphs run through the session's
// SubgraphRunner (hub/ops/subgraph.h).
#include "hub/ops/control_flow.h"

#include <algorithm>
#include <cstring>

#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

bool condition(const KernelContext& c, const Tensor& t, const char* what) {
  if (t.num_elements() != 1)
    throw_error(Code::kInvalidArgument,
                "node '" + c.node().name + "': " + what + " must hold one element, got " + t.spec_string());
  return t.item<bool>();
}

void if_kernel(KernelContext& c) {
  const bool take_then = condition(c, c.input(0), "cond");
  const Subgraph& branch = c.attrs().get_graph(take_then ? "then_branch" : "else_branch");
  std::vector<Tensor> args;
  for (int i = 1; i < c.num_inputs(); ++i) args.push_back(c.input(i));
  std::vector<Tensor> results = c.subgraphs().run(branch, args);
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, std::move(results[i]));
}

void loop_kernel(KernelContext& c) {
  const Subgraph& body = c.attrs().get_graph("body");
  const int carried = static_cast<int>(c.attrs().get_int("num_carried"));
  const int scans = c.num_outputs() - carried;
  if (c.input(0).num_elements() != 1)
    throw_error(Code::kInvalidArgument,
                "node '" + c.node().name + "': max_trips must hold one element, got " + c.input(0).spec_string());
  const int64_t max_trips = c.input(0).item<int64_t>();
  bool cond = condition(c, c.input(1), "cond");
  std::vector<Tensor> args(c.num_inputs());
  for (int i = 2; i < c.num_inputs(); ++i) args[i] = c.input(i);
  std::vector<std::vector<Tensor>> scanned(scans);
  for (int64_t i = 0; i < max_trips && cond; ++i) {
    args[0] = Tensor::scalar<int64_t>(i);
    args[1] = Tensor::scalar<bool>(cond);
    std::vector<Tensor> results = c.subgraphs().run(body, args);
    cond = condition(c, results[0], "the body's cond");
    for (int k = 0; k < carried; ++k) args[2 + k] = std::move(results[1 + k]);
    for (int s = 0; s < scans; ++s) {
      Tensor& r = results[1 + carried + s];
      if (!scanned[s].empty() && r.shape() != scanned[s][0].shape())
        throw_error(Code::kInvalidArgument, "node '" + c.node().name + "': scan output " + std::to_string(s) + " is " +
                                                r.spec_string() + " at iteration " + std::to_string(i) + ", " +
                                                scanned[s][0].spec_string() + " before");
      scanned[s].push_back(std::move(r));
    }
  }
  for (int k = 0; k < carried; ++k) c.set_output(k, args[2 + k]);
  for (int s = 0; s < scans; ++s) {
    const std::vector<Tensor>& parts = scanned[s];
    std::vector<int64_t> dims{static_cast<int64_t>(parts.size())};
    if (parts.empty()) {
      // No iteration ran: dims the body's result leaves unknown are 0.
      const Shape& element = c.output_spec(carried + s).shape;
      for (int d = 1; d < element.rank(); ++d) dims.push_back(std::max<int64_t>(element[d], 0));
    } else {
      dims.insert(dims.end(), parts[0].shape().dims().begin(), parts[0].shape().dims().end());
    }
    Tensor& out = c.output(carried + s, Shape(dims));
    char* dst = static_cast<char*>(out.raw_data());
    for (const Tensor& p : parts) {
      std::memcpy(dst, p.raw_data(), p.nbytes());
      dst += p.nbytes();
    }
  }
}

}  // namespace

HUB_REGISTER_KERNEL(If, reference, if_kernel);
HUB_REGISTER_KERNEL(Loop, reference, loop_kernel);

}  // namespace hub::cpu

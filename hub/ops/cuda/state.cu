// CUDA kernels for Const, Variable and AssignMovingAverage.
//
// Const and Variable keep their float32 values resident on the device: a
// Const uploads its value once (kept in the node's kernel state for the
// session's life); a Variable whose tensor lives in host memory is mirrored,
// the copy renewed only when the host tensor changed (its storage or
// generation), and a Variable already on the device is used as it is. Other
// dtypes (shapes, axes, indices: read by host kernels) stay on the host.
//
// AssignMovingAverage writes its variable in place, so the variable must be
// the store's own tensor on the device (hub::move_variables): a mirror would
// take the update and lose it, so that is refused.
#include "hub/core/error.h"
#include "hub/ops/cuda/common.h"
#include "hub/ops/variables.h"

namespace hub::cuda {
namespace {

// A device copy of a host tensor, renewed when the host tensor changes.
struct Mirror {
  ContentsStamp stamp;
  Tensor device;
};

const Tensor& mirrored(KernelContext& c, const Tensor& host) {
  auto& state = c.state();
  if (!state) state = std::make_shared<Mirror>();
  auto* m = static_cast<Mirror*>(state.get());
  if (!m->stamp.matches(host)) {
    const ContentsStamp stamp(host);
    m->device = c.temp(host.dtype(), host.shape());
    if (host.nbytes() > 0)
      HUB_CUDA_CHECK(cudaMemcpyAsync(m->device.device_data<float>(), host.raw_data(), host.nbytes(),
                                     cudaMemcpyHostToDevice, stream()));
    m->stamp = stamp;
  }
  return m->device;
}

void const_kernel(KernelContext& c) { c.set_output(0, mirrored(c, c.attrs().get_tensor("value"))); }

void variable_kernel(KernelContext& c) {
  const Tensor& v = c.variables().at(c.node().name);
  if (v.dtype() != c.output_spec(0).dtype || v.shape() != c.output_spec(0).shape)
    throw_error(Code::kInvalidArgument, "variable '" + c.node().name + "' holds " + v.spec_string() +
                                            " but the graph declares " + c.output_spec(0).to_string());
  c.set_output(0, v.device() == Device::kCUDA ? v : mirrored(c, v));
}

__global__ void moving_average_kernel(float* v, const float* x, int64_t n, float decay) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    v[i] -= (v[i] - x[i]) * (1.0f - decay);
}

void assign_moving_average_kernel(KernelContext& c) {
  Tensor var = c.input(0);
  if (c.has_variables()) {  // in a graph (run_standalone updates the caller's own tensors)
    bool in_store = false;
    for (const auto& [name, t] : c.variables().items())
      if (t.shares_storage_with(var)) in_store = true;
    if (!in_store)
      throw_error(Code::kFailedPrecondition,
                  "'" + c.node().name +
                      "' updates a variable that lives in host memory from the GPU; move the variables to the "
                      "device first (hub::move_variables)");
  }
  const int64_t n = var.num_elements();
  if (n > 0) {
    moving_average_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(
        var.device_data<float>(), c.input(1).device_data<float>(), n, static_cast<float>(c.attrs().get_float("decay")));
    HUB_CUDA_CHECK(cudaGetLastError());
  }
  c.set_output(0, var);
}

bool float32_value(const Node& node, const std::vector<TensorSpec>&) {
  return node.attrs.get_tensor("value").dtype() == DType::kFloat32;
}

bool variable_float32(const Node& node, const std::vector<TensorSpec>&) {
  return node.attrs.get_dtype("dtype") == DType::kFloat32;
}

}  // namespace

HUB_REGISTER_KERNEL(Const, cuda, const_kernel, float32_value);
HUB_REGISTER_KERNEL(Variable, cuda, variable_kernel, variable_float32);
HUB_REGISTER_KERNEL(AssignMovingAverage, cuda, assign_moving_average_kernel);

}  // namespace hub::cuda

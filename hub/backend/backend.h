// Compute backends: the seam between the graph executor and the kernels.
//
// A Backend is a named object with a device: it makes that device's
// allocator, copies tensors between the host and its device, runs kernels
// and synchronises. Kernels register under a backend's name
// (HUB_REGISTER_KERNEL in hub/ops/registry.h). Backends built into this
// library:
//   reference  CPU, Eigen; a kernel for every op; the ground truth.
//   onednn     CPU fast path (hub/ops/onednn); falls back to reference.
//   cuda       NVIDIA GPU (hub/ops/cuda), only in builds with CUDA and only
//              usable where a device is present; falls back to reference,
//              with copies at the device boundary.
// Which kernel runs a node is decided in one place, place(): the preferred
// backend's kernel if it has one that supports the node's inputs, else its
// fallback's, and so on. The session (hub/graph/session.h) allocates each
// node's outputs on its backend's device and copies inputs across devices.
//
// Thread safety: backends are immutable after registration (at static
// initialisation) and may be used from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hub/ops/registry.h"
#include "hub/ops/variables.h"
#include "hub/tensor/allocator.h"

namespace hub {

class Backend {
 public:
  // `fallback`: the name of the backend that runs what this one lacks
  // ("" for none: the backend has every op, as reference does).
  Backend(std::string name, Device device, std::string fallback);
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  const std::string& name() const { return name_; }
  Device device() const { return device_; }
  // Null for a backend without fallback.
  const Backend* fallback() const;

  // Empty when the backend can run here; else why not ("no CUDA device").
  virtual std::string unavailable_reason() const { return ""; }
  // A new allocator for this backend's device (sessions keep one per device).
  virtual std::unique_ptr<Allocator> make_allocator() const = 0;
  // A new allocator of host memory for tensors that will be copied to this
  // backend's device (input batches): page-locked for a device backend, so
  // such a copy is queued without the host waiting; a plain pool otherwise.
  virtual std::unique_ptr<Allocator> make_host_allocator() const;
  // Copies src's contents into dst (same dtype and shape); each of them is on
  // the host or on this backend's device.
  virtual void copy(const Tensor& src, Tensor& dst) const = 0;
  // Runs a kernel of this backend (default: calls it on the calling thread).
  virtual void run(const KernelDef& kernel, KernelContext& context) const { kernel.fn(context); }
  // Waits until work queued on this backend has finished.
  virtual void synchronize() const {}

  // This backend's kernel for `node` if it has one that supports `inputs`.
  const KernelDef* kernel(const Node& node, const std::vector<TensorSpec>& inputs) const;

 private:
  std::string name_;
  Device device_;
  std::string fallback_;
};

// Adds a backend (called at static initialisation by each backend's file).
void register_backend(std::unique_ptr<Backend> backend);
// Every registered backend, in registration order (available or not).
std::vector<const Backend*> registered_backends();
// The backend called `name`. Throws InvalidArgument naming the registered
// backends when there is none, and Unavailable with the reason when it
// cannot run here (e.g. "cuda": not built with CUDA, or no device).
const Backend& find_backend(std::string_view name);
// $HUB_BACKEND if set (validated by find_backend), else "onednn".
const Backend& default_backend();
const Backend& reference_backend();
// The first available registered backend whose device is `device` (for
// copies of tensors living there); throws Internal if none.
const Backend& backend_for_device(Device device);

// A node for running `op` outside a graph (run_standalone): named `name`,
// attributes checked against the op's schema and completed. Throws
// InvalidArgument naming the op and attribute.
Node standalone_node(const std::string& op, const std::string& name, const Attrs& attrs);
// Runs `node`'s op once on `inputs`, which all live on one device, with the
// kernel place() picks on that device's first available backend: for state
// updates outside a graph (optimizer steps, moving averages) that write
// their inputs in place, so no input is ever copied. Returns the outputs.
// Throws Unimplemented when no backend of that device has a kernel for it.
std::vector<Tensor> run_standalone(const Node& node, const std::vector<Tensor>& inputs);

// `t` on `device`: t itself when it lives there, else a copy (made by the
// backend of the device side; waits for it when the copy is to the host).
Tensor to_device(const Tensor& t, Device device);
inline Tensor to_host(const Tensor& t) { return to_device(t, Device::kCPU); }
// Moves every variable of `store` to `device` (a copy each; the store then
// holds the copies): a model trained on a GPU keeps its variables there.
void move_variables(VariableStore& store, Device device);
// A copy of t with storage of its own, on t's device.
Tensor copy_of(const Tensor& t);
// Copies src's contents into dst's storage (same dtype and shape, throws
// InvalidArgument otherwise), wherever either lives.
void copy_into(const Tensor& src, Tensor& dst);

// The kernel and backend that run `node` with `inputs` when `preferred` is
// asked for: preferred's kernel if it supports them, else its fallback's,
// and so on. Throws Unimplemented naming the op when no backend in the
// chain has a kernel for it.
struct Placement {
  const KernelDef* kernel = nullptr;
  const Backend* backend = nullptr;
};
Placement place(const Node& node, const std::vector<TensorSpec>& inputs, const Backend& preferred);

}  // namespace hub

#define HUB_REGISTER_BACKEND(type, ...)                                    \
  static const bool HUB_CONCAT(hub_backend_registrar_, __COUNTER__) = [] { \
    ::hub::register_backend(std::make_unique<type>(__VA_ARGS__));          \
    return true;                                                           \
  }()

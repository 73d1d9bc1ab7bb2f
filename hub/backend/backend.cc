#include "hub/backend/backend.h"

#include <cstdlib>
#include <mutex>

#include "hub/core/error.h"

namespace hub {

namespace {

struct Backends {
  std::mutex mu;
  std::vector<std::unique_ptr<Backend>> list;
};

Backends& backends() {
  static auto* b = new Backends;
  return *b;
}

const Backend* lookup(std::string_view name) {
  std::lock_guard<std::mutex> lock(backends().mu);
  for (const auto& b : backends().list)
    if (b->name() == name) return b.get();
  return nullptr;
}

std::string names() {
  std::string out;
  for (const Backend* b : registered_backends())
    if (b->unavailable_reason().empty()) out += (out.empty() ? "" : ", ") + b->name();
  return out;
}

}  // namespace

Backend::Backend(std::string name, Device device, std::string fallback)
    : name_(std::move(name)), device_(device), fallback_(std::move(fallback)) {}

std::unique_ptr<Allocator> Backend::make_host_allocator() const { return std::make_unique<PoolAllocator>(); }

const Backend* Backend::fallback() const {
  if (fallback_.empty()) return nullptr;
  const Backend* b = lookup(fallback_);
  HUB_CHECK(b != nullptr, "backend " + name_ + " falls back to unregistered backend " + fallback_);
  return b;
}

const KernelDef* Backend::kernel(const Node& node, const std::vector<TensorSpec>& inputs) const {
  const KernelDef* k = OpRegistry::global().kernel(node.op, name_);
  if (k && (!k->supports || k->supports(node, inputs))) return k;
  return nullptr;
}

void register_backend(std::unique_ptr<Backend> backend) {
  HUB_CHECK(lookup(backend->name()) == nullptr, "backend " + backend->name() + " registered twice");
  std::lock_guard<std::mutex> lock(backends().mu);
  backends().list.push_back(std::move(backend));
}

std::vector<const Backend*> registered_backends() {
  std::lock_guard<std::mutex> lock(backends().mu);
  std::vector<const Backend*> out;
  for (const auto& b : backends().list) out.push_back(b.get());
  return out;
}

const Backend& find_backend(std::string_view name) {
  const Backend* b = lookup(name);
  if (!b) {
    std::string why = name == "cuda" ? " (this build has no CUDA support: configure with -Dcuda=enabled)" : "";
    throw_error(Code::kInvalidArgument,
                "unknown backend '" + std::string(name) + "'" + why + "; available: " + names());
  }
  std::string reason = b->unavailable_reason();
  if (!reason.empty())
    throw_error(Code::kUnavailable,
                "backend '" + std::string(name) + "' is not available: " + reason + "; available: " + names());
  return *b;
}

const Backend& default_backend() {
  if (const char* env = std::getenv("HUB_BACKEND")) {
    try {
      return find_backend(env);
    } catch (const Error& e) {
      throw e.with_context("$HUB_BACKEND");
    }
  }
  return find_backend("onednn");
}

const Backend& reference_backend() { return find_backend("reference"); }

const Backend& backend_for_device(Device device) {
  for (const Backend* b : registered_backends())
    if (b->device() == device && b->unavailable_reason().empty()) return *b;
  throw_error(Code::kInternal, "no backend for device " + std::string(device_name(device)));
}

Node standalone_node(const std::string& op, const std::string& name, const Attrs& attrs) {
  Node node;
  node.name = name;
  node.op = op;
  node.attrs = complete_attrs(OpRegistry::global().find(op), name, attrs);
  return node;
}

std::vector<Tensor> run_standalone(const Node& node, const std::vector<Tensor>& inputs) {
  HUB_CHECK(!inputs.empty(), "run_standalone of '" + node.name + "' without inputs");
  const Device device = inputs[0].device();
  std::vector<TensorSpec> specs;
  std::vector<const Tensor*> pointers;
  for (const Tensor& t : inputs) {
    if (t.device() != device)
      throw_error(Code::kInvalidArgument, "'" + node.name + "' (" + node.op + "): inputs on both " +
                                              std::string(device_name(device)) + " and " +
                                              std::string(device_name(t.device())));
    specs.push_back({t.dtype(), t.shape()});
    pointers.push_back(&t);
  }
  const OpDef& def = OpRegistry::global().find(node.op);
  const std::vector<TensorSpec> out_specs = def.shape_fn(InferContext(node.name, node.op, specs, node.attrs));
  const Backend& backend = backend_for_device(device);
  const Placement placement = place(node, specs, backend);
  if (placement.backend->device() != device)
    throw_error(Code::kUnimplemented, "'" + node.name + "' (" + node.op + "): no kernel on " +
                                          std::string(device_name(device)) + ", where its inputs live");
  std::unique_ptr<Allocator> alloc = placement.backend->make_allocator();
  KernelContext context(node, pointers, out_specs, *alloc, nullptr, 0);
  placement.backend->run(*placement.kernel, context);
  std::vector<Tensor> out;
  for (int i = 0; i < context.num_outputs(); ++i) out.push_back(context.output(i));
  return out;
}

namespace {

// An uninitialised tensor like t on `device`.
Tensor empty_on(const Tensor& t, Device device) {
  return device == Device::kCPU ? Tensor(t.dtype(), t.shape())
                                : backend_for_device(device).make_allocator()->allocate_tensor(t.dtype(), t.shape());
}

}  // namespace

void copy_into(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.shape() != dst.shape())
    throw_error(Code::kInvalidArgument, "cannot copy " + src.spec_string() + " into " + dst.spec_string());
  // The backend of the side that is not the host (both host: any host backend).
  backend_for_device(src.device() != Device::kCPU ? src.device() : dst.device()).copy(src, dst);
}

Tensor to_device(const Tensor& t, Device device) {
  if (!t.defined() || t.device() == device) return t;
  Tensor out = empty_on(t, device);
  copy_into(t, out);
  return out;
}

void move_variables(VariableStore& store, Device device) {
  for (const std::string& name : store.names()) store.set(name, to_device(store.at(name), device));
}

Tensor copy_of(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor out = empty_on(t, t.device());
  copy_into(t, out);
  return out;
}

Placement place(const Node& node, const std::vector<TensorSpec>& inputs, const Backend& preferred) {
  for (const Backend* b = &preferred; b; b = b->fallback())
    if (const KernelDef* k = b->kernel(node, inputs)) return {k, b};
  throw_error(Code::kUnimplemented, "node '" + node.name + "' (" + node.op + "): no kernel on backend " +
                                        preferred.name() + " or its fallbacks");
}

}  // namespace hub

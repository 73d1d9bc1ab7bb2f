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
    if (b->device() == device) return *b;
  throw_error(Code::kInternal, "no backend for device " + std::string(device_name(device)));
}

Placement place(const Node& node, const std::vector<TensorSpec>& inputs, const Backend& preferred) {
  for (const Backend* b = &preferred; b; b = b->fallback())
    if (const KernelDef* k = b->kernel(node, inputs)) return {k, b};
  throw_error(Code::kUnimplemented, "node '" + node.name + "' (" + node.op + "): no kernel on backend " +
                                        preferred.name() + " or its fallbacks");
}

}  // namespace hub

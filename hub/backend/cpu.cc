// The host backends: `reference` (Eigen kernels, hub/ops/cpu) and `onednn`
// (hub/ops/onednn, falling back to reference). Both keep tensors in host
// memory from a PoolAllocator, so copies between them never happen.
#include <cstring>

#include "hub/backend/backend.h"

namespace hub {
namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::string name, std::string fallback) : Backend(std::move(name), Device::kCPU, std::move(fallback)) {}
  std::unique_ptr<Allocator> make_allocator() const override { return std::make_unique<PoolAllocator>(); }
  void copy(const Tensor& src, Tensor& dst) const override {
    HUB_CHECK(src.nbytes() == dst.nbytes() && src.device() == Device::kCPU && dst.device() == Device::kCPU);
    if (src.nbytes()) std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
  }
};

HUB_REGISTER_BACKEND(CpuBackend, "reference", "");
HUB_REGISTER_BACKEND(CpuBackend, "onednn", "reference");

}  // namespace
}  // namespace hub

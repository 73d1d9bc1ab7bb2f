// The `cuda` backend: NVIDIA GPU through the CUDA runtime, cuDNN and cuBLAS
// (kernels in hub/ops/cuda). Built only with CUDA (meson -Dcuda); usable
// only where a device is present (unavailable_reason() says why not).
//
// Device memory comes from one process-wide caching pool: a freed block goes
// back to a free list by its rounded size and the next request of that size
// takes it, so a steady-state step asks CUDA for no memory (cudaMalloc and
// cudaFree synchronise the device and cost far more than a kernel). Reuse is
// safe without events because all work runs in order on hub::cuda::stream().
// When cudaMalloc fails, the cached blocks are released and it is tried once
// more. Ops this backend lacks fall back to `onednn` (then `reference`) on
// the host, with copies at the boundary.
#include "hub/core/cuda.h"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>

#include "hub/backend/backend.h"

namespace hub {
namespace {

// Blocks are rounded to this many bytes (cudaMalloc itself aligns to 256).
constexpr size_t kGranule = 512;

class DevicePool {
 public:
  static DevicePool& get() {
    static auto* pool = new DevicePool;  // never destroyed: tensors may outlive static destruction
    return *pool;
  }

  std::shared_ptr<Storage> allocate(size_t bytes) {
    const size_t rounded = bytes == 0 ? kGranule : (bytes + kGranule - 1) / kGranule * kGranule;
    void* p = take(rounded);
    if (!p) {
      cuda::use_device();
      cudaError_t status = cudaMalloc(&p, rounded);
      if (status == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        trim();
        status = cudaMalloc(&p, rounded);
      }
      if (status != cudaSuccess) cuda::fail("cudaMalloc", status, __FILE__, __LINE__);
      std::lock_guard<std::mutex> lock(mu_);
      ++system_allocations_;
      bytes_held_ += static_cast<int64_t>(rounded);
    }
    auto s = std::make_shared<Storage>();
    s->data = p;
    s->bytes = bytes;
    s->device = Device::kCUDA;
    s->release = [rounded](Storage& st) { DevicePool::get().give_back(st.data, rounded); };
    return s;
  }

  void trim() {
    std::multimap<size_t, void*> blocks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocks.swap(free_);
      for (auto& [size, p] : blocks) bytes_held_ -= static_cast<int64_t>(size);
    }
    for (auto& [size, p] : blocks) HUB_CUDA_CHECK(cudaFree(p));  // waits for queued work
  }

  int64_t system_allocations() {
    std::lock_guard<std::mutex> lock(mu_);
    return system_allocations_;
  }
  int64_t bytes_held() {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_held_;
  }

 private:
  void* take(size_t rounded) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(rounded);
    if (it == free_.end()) return nullptr;
    void* p = it->second;
    free_.erase(it);
    return p;
  }
  void give_back(void* p, size_t rounded) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.emplace(rounded, p);
  }

  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  int64_t system_allocations_ = 0;
  int64_t bytes_held_ = 0;
};

// Every session's device allocator is a view of the one pool.
class DeviceAllocator final : public Allocator {
 public:
  std::shared_ptr<Storage> allocate(size_t bytes) override { return DevicePool::get().allocate(bytes); }
  int64_t system_allocations() const override { return DevicePool::get().system_allocations(); }
  int64_t bytes_held() const override { return DevicePool::get().bytes_held(); }
  void trim() override { DevicePool::get().trim(); }
};

class CudaBackend final : public Backend {
 public:
  CudaBackend() : Backend("cuda", Device::kCUDA, "onednn") {}
  std::string unavailable_reason() const override { return cuda::unavailable_reason(); }
  std::unique_ptr<Allocator> make_allocator() const override { return std::make_unique<DeviceAllocator>(); }
  void copy(const Tensor& src, Tensor& dst) const override {
    HUB_CHECK(src.nbytes() == dst.nbytes(), "copy of " + src.spec_string() + " into " + dst.spec_string());
    if (src.nbytes() == 0) return;
    // cudaMemcpyDefault: the direction follows from the pointers (unified
    // addressing), so a copy is right whatever allocated either side.
    HUB_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), src.nbytes(), cudaMemcpyDefault, cuda::stream()));
    if (dst.device() == Device::kCPU) cuda::synchronize();  // the host reads dst next
  }
  void synchronize() const override { cuda::synchronize(); }
};

HUB_REGISTER_BACKEND(CudaBackend);

}  // namespace
}  // namespace hub

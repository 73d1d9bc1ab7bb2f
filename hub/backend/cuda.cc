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
// more. Input batches on their way to the device live in page-locked host
// memory from a second such pool (make_host_allocator). Ops this backend
// lacks fall back to `onednn` (then `reference`) on the host, with copies at
// the boundary.
#include "hub/core/cuda.h"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <optional>

#include "hub/backend/backend.h"

namespace hub {
namespace {

// Blocks are rounded to this many bytes (cudaMalloc itself aligns to 256).
constexpr size_t kGranule = 512;

// A process-wide free list of memory blocks by rounded size, and its
// counters (never destroyed: tensors may outlive static destruction).
// `Kind` says what a block is: Kind::Block, and
//   static Block make(size_t bytes)       a new block (throws hub::Error)
//   static void reuse(const Block&)       before a cached block is handed out again
//   static bool release(const Block&)     when it is freed (false: drop it)
//   static void destroy(const Block&)     when the cache lets it go
//   static void* data(const Block&), static constexpr Device kDevice.
template <class Kind>
class CachingPool {
 public:
  using Block = typename Kind::Block;
  static CachingPool& get() {
    static auto* pool = new CachingPool;
    return *pool;
  }

  std::shared_ptr<Storage> allocate(size_t bytes) {
    const size_t rounded = bytes == 0 ? kGranule : (bytes + kGranule - 1) / kGranule * kGranule;
    std::optional<Block> block = take(rounded);
    if (block) {
      Kind::reuse(*block);
    } else {
      try {
        block = Kind::make(rounded);
      } catch (const Error& e) {
        if (e.code() != Code::kResourceExhausted) throw;
        trim();  // the cached blocks back to CUDA, then once more
        block = Kind::make(rounded);
      }
      std::lock_guard<std::mutex> lock(mu_);
      ++system_allocations_;
      bytes_held_ += static_cast<int64_t>(rounded);
    }
    auto s = std::make_shared<Storage>();
    s->data = Kind::data(*block);
    s->bytes = bytes;
    s->device = Kind::kDevice;
    s->release = [b = *block, rounded](Storage&) { CachingPool::get().give_back(b, rounded); };
    return s;
  }

  void trim() {
    std::multimap<size_t, Block> blocks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocks.swap(free_);
      for (auto& [size, b] : blocks) bytes_held_ -= static_cast<int64_t>(size);
    }
    for (auto& [size, b] : blocks) Kind::destroy(b);
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
  std::optional<Block> take(size_t rounded) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(rounded);
    if (it == free_.end()) return std::nullopt;
    Block b = it->second;
    free_.erase(it);
    return b;
  }
  void give_back(const Block& b, size_t rounded) {
    if (!Kind::release(b)) {
      std::lock_guard<std::mutex> lock(mu_);
      bytes_held_ -= static_cast<int64_t>(rounded);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    free_.emplace(rounded, b);
  }

  std::mutex mu_;
  std::multimap<size_t, Block> free_;
  int64_t system_allocations_ = 0;
  int64_t bytes_held_ = 0;
};

// Device memory. Reuse needs no events: all work runs in order on
// hub::cuda::stream(), so a later user's work follows an earlier one's.
struct DeviceMemory {
  using Block = void*;
  static constexpr Device kDevice = Device::kCUDA;
  static Block make(size_t bytes) {
    cuda::use_device();
    void* p = nullptr;
    HUB_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  }
  static void reuse(const Block&) {}
  static bool release(const Block&) { return true; }
  static void destroy(const Block& p) { HUB_CUDA_CHECK(cudaFree(p)); }  // waits for queued work
  static void* data(const Block& p) { return p; }
};

// Page-locked host memory for tensors on their way to the device (input
// batches): cudaMemcpyAsync from it is queued without staging, so the host
// goes on while the copy waits its turn on the stream. A freed block records
// an event on the stream and is handed out again only once that event has
// passed, i.e. once every copy queued from it before it was freed is done.
struct PinnedMemory {
  struct Block {
    void* data;
    cudaEvent_t copied;  // recorded on the stream when the block was last freed
  };
  static constexpr Device kDevice = Device::kCPU;
  static Block make(size_t bytes) {
    cuda::use_device();
    Block b{};
    HUB_CUDA_CHECK(cudaHostAlloc(&b.data, bytes, cudaHostAllocDefault));
    HUB_CUDA_CHECK(cudaEventCreateWithFlags(&b.copied, cudaEventDisableTiming));
    return b;
  }
  static void reuse(const Block& b) { HUB_CUDA_CHECK(cudaEventSynchronize(b.copied)); }
  // In a storage's release nothing can be thrown: a block whose event cannot
  // be recorded is dropped (leaked) rather than handed out too early.
  static bool release(const Block& b) {
    if (cudaEventRecord(b.copied, cuda::stream()) == cudaSuccess) return true;
    (void)cudaGetLastError();
    return false;
  }
  static void destroy(const Block& b) {
    HUB_CUDA_CHECK(cudaEventSynchronize(b.copied));
    HUB_CUDA_CHECK(cudaEventDestroy(b.copied));
    HUB_CUDA_CHECK(cudaFreeHost(b.data));
  }
  static void* data(const Block& b) { return b.data; }
};

// What sessions and readers allocate through: views of the one pool of each kind.
template <class Kind>
class CachingAllocator final : public Allocator {
 public:
  std::shared_ptr<Storage> allocate(size_t bytes) override { return CachingPool<Kind>::get().allocate(bytes); }
  int64_t system_allocations() const override { return CachingPool<Kind>::get().system_allocations(); }
  int64_t bytes_held() const override { return CachingPool<Kind>::get().bytes_held(); }
  void trim() override { CachingPool<Kind>::get().trim(); }
};

class CudaBackend final : public Backend {
 public:
  CudaBackend() : Backend("cuda", Device::kCUDA, "onednn") {}
  std::string unavailable_reason() const override { return cuda::unavailable_reason(); }
  std::unique_ptr<Allocator> make_allocator() const override {
    return std::make_unique<CachingAllocator<DeviceMemory>>();
  }
  std::unique_ptr<Allocator> make_host_allocator() const override {
    return std::make_unique<CachingAllocator<PinnedMemory>>();
  }
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

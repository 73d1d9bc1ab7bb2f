// Allocators for tensor storage.
//
// Allocator is what kernels and sessions allocate through; each backend
// (hub/backend) makes the allocator of its device. PoolAllocator, the host
// one, caches freed blocks by size so that a steady-state loop
// (a training step, an inference call) reuses the buffers of the previous
// iteration and asks the system for no memory. Storage handed out keeps the
// pool alive (shared ownership), so tensors may outlive the allocator object.
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "hub/tensor/tensor.h"

namespace hub {

class Allocator {
 public:
  virtual ~Allocator() = default;
  // `bytes` of storage (zero allowed) on this allocator's device, aligned to
  // kTensorAlignment. Throws ResourceExhausted when memory runs out.
  virtual std::shared_ptr<Storage> allocate(size_t bytes) = 0;
  // Number of blocks obtained from the system so far.
  virtual int64_t system_allocations() const = 0;
  // Bytes held (in use or cached).
  virtual int64_t bytes_held() const = 0;
  // Returns cached free blocks to the system.
  virtual void trim() = 0;
  Tensor allocate_tensor(DType dtype, const Shape& shape);
};

class PoolAllocator final : public Allocator {
 public:
  PoolAllocator();
  ~PoolAllocator() override;
  PoolAllocator(const PoolAllocator&) = delete;
  PoolAllocator& operator=(const PoolAllocator&) = delete;

  std::shared_ptr<Storage> allocate(size_t bytes) override;
  int64_t system_allocations() const override;
  int64_t bytes_held() const override;
  void trim() override;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace hub

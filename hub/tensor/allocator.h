// Allocators for tensor storage.
//
// PoolAllocator caches freed blocks by size so that a steady-state loop
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

class PoolAllocator {
 public:
  PoolAllocator();
  ~PoolAllocator();
  PoolAllocator(const PoolAllocator&) = delete;
  PoolAllocator& operator=(const PoolAllocator&) = delete;

  std::shared_ptr<Storage> allocate(size_t bytes);
  Tensor allocate_tensor(DType dtype, const Shape& shape);

  // Number of blocks obtained from the system so far.
  int64_t system_allocations() const;
  // Bytes held (in use or cached).
  int64_t bytes_held() const;
  // Returns cached free blocks to the system.
  void trim();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace hub

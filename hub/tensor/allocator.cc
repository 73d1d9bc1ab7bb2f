#include "hub/tensor/allocator.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace hub {

struct PoolAllocator::State {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;  // rounded size -> block
  int64_t system_allocations = 0;
  int64_t bytes_held = 0;
  ~State() {
    for (auto& [size, p] : free_blocks) std::free(p);
  }
};

PoolAllocator::PoolAllocator() : state_(std::make_shared<State>()) {}
PoolAllocator::~PoolAllocator() = default;

std::shared_ptr<Storage> PoolAllocator::allocate(size_t bytes) {
  size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (rounded == 0) rounded = kTensorAlignment;
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->free_blocks.find(rounded);
    if (it != state_->free_blocks.end()) {
      p = it->second;
      state_->free_blocks.erase(it);
    }
  }
  if (!p) {
    p = std::aligned_alloc(kTensorAlignment, rounded);
    if (!p) throw_error(Code::kResourceExhausted, "out of memory allocating " + std::to_string(bytes) + " bytes");
    std::lock_guard<std::mutex> lock(state_->mu);
    ++state_->system_allocations;
    state_->bytes_held += static_cast<int64_t>(rounded);
  }
  auto s = std::make_shared<Storage>();
  s->data = p;
  s->bytes = bytes;
  std::weak_ptr<State> weak = state_;
  s->release = [weak, rounded](Storage& st) {
    if (auto state = weak.lock()) {
      std::lock_guard<std::mutex> lock(state->mu);
      state->free_blocks.emplace(rounded, st.data);
    } else {
      std::free(st.data);
    }
  };
  return s;
}

Tensor Allocator::allocate_tensor(DType dtype, const Shape& shape) {
  int64_t n = shape.num_elements();
  return Tensor(dtype, shape, allocate(static_cast<size_t>(n) * dtype_size(dtype)));
}

int64_t PoolAllocator::system_allocations() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->system_allocations;
}

int64_t PoolAllocator::bytes_held() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->bytes_held;
}

void PoolAllocator::trim() {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (auto& [size, p] : state_->free_blocks) {
    std::free(p);
    state_->bytes_held -= static_cast<int64_t>(size);
  }
  state_->free_blocks.clear();
}

}  // namespace hub

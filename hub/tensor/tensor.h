// Tensor: dtype + fully defined shape + a view into shared, 64-byte-aligned
// storage on a device.
//
// Copying a Tensor is cheap and shares the storage (like a shared_ptr);
// reshaped() returns a view without copying; clone() copies the bytes. A
// default-constructed Tensor is undefined (defined() == false). Tensors are not
// synchronized: concurrent writes to shared storage are the caller's problem.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hub/core/error.h"
#include "hub/tensor/dtype.h"
#include "hub/tensor/shape.h"

namespace hub {

inline constexpr size_t kTensorAlignment = 64;

// A block of device memory. The deleter returns it to whoever allocated it.
//
// `generation` changes whenever the contents may change: every mutable
// access through a Tensor (data<T>(), raw_data(), fill) bumps it. Kernels
// that cache data derived from an input (oneDNN's reordered weights) key the
// cache on it (ContentsStamp below), so a write through any path (optimizer
// updates, Module variable writes, checkpoint restore, a user's own pointer
// obtained after the cache was made) invalidates it by construction.
struct Storage {
  void* data = nullptr;
  size_t bytes = 0;
  Device device = Device::kCPU;
  std::atomic<uint64_t> generation{0};
  std::function<void(Storage&)> release;
  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (release) release(*this);
  }
};

// Allocates 64-byte-aligned CPU storage (zero bytes allowed).
std::shared_ptr<Storage> allocate_cpu_storage(size_t bytes);

class Tensor {
 public:
  Tensor() = default;
  // Uninitialized contents.
  Tensor(DType dtype, Shape shape);
  // Wraps existing storage (offset in bytes); checks the view fits.
  Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage, size_t offset = 0);

  static Tensor zeros(DType dtype, Shape shape);
  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  template <class T>
  static Tensor scalar(T value) {
    return from_vector<T>(Shape{}, {value});
  }
  // Convenience for tests and examples: float32 vector of the given values.
  static Tensor floats(std::initializer_list<float> values);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t num_elements() const { return num_elements_; }
  size_t nbytes() const { return static_cast<size_t>(num_elements_) * dtype_size(dtype_); }
  Device device() const { return storage_ ? storage_->device : Device::kCPU; }

  // Mutable access marks the storage as (possibly) written: see Storage::generation.
  void* raw_data() {
    storage_->generation.fetch_add(1, std::memory_order_relaxed);
    return static_cast<char*>(storage_->data) + offset_;
  }
  const void* raw_data() const { return static_cast<const char*>(storage_->data) + offset_; }
  // The elements, for code on the host: throws FailedPrecondition when the
  // tensor lives on a device (copy it to the host first).
  template <class T>
  T* data() {
    check_type(dtype_of<T>, true);
    return static_cast<T*>(raw_data());
  }
  template <class T>
  const T* data() const {
    check_type(dtype_of<T>, true);
    return static_cast<const T*>(raw_data());
  }
  // The elements wherever the tensor lives: for a device backend's kernels,
  // which pass the pointer to their device.
  template <class T>
  T* device_data() {
    check_type(dtype_of<T>, false);
    return static_cast<T*>(raw_data());
  }
  template <class T>
  const T* device_data() const {
    check_type(dtype_of<T>, false);
    return static_cast<const T*>(raw_data());
  }
  template <class T>
  T item() const;
  template <class T>
  std::vector<T> to_vector() const;
  // The elements of an int32 or int64 tensor as int64; nullopt for other dtypes.
  std::optional<std::vector<int64_t>> to_int64_vector() const;

  // View with a new shape of the same element count (one dim may be -1).
  Tensor reshaped(Shape shape) const;
  // A copy of a host tensor's bytes (FailedPrecondition on a device:
  // hub::to_device in hub/backend/backend.h copies across devices).
  Tensor clone() const;
  // Fills every element with value (converted to the dtype).
  void fill(double value);
  bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  size_t offset() const { return offset_; }

  // "float32[2,3]"
  std::string spec_string() const;

 private:
  void check_type(DType requested, bool on_host) const;

  DType dtype_ = DType::kFloat32;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
};

// What a tensor held when a cache derived data from it (oneDNN's reordered
// weights, the CUDA backend's device copies and transposed filters):
// matches() stays true while the tensor views the same storage at the same
// offset and generation. The storage is held weakly, so a storage allocated
// later at a freed one's address never passes for it; a default stamp
// matches nothing. Take the stamp before deriving, so a write meanwhile
// makes it stale.
class ContentsStamp {
 public:
  ContentsStamp() = default;
  explicit ContentsStamp(const Tensor& t)
      : storage_(t.storage()), offset_(t.offset()), generation_(t.storage()->generation.load()) {}
  bool matches(const Tensor& t) const {
    return t.offset() == offset_ && t.storage()->generation.load() == generation_ && storage_.lock() == t.storage();
  }
  // Whether the storage it was taken from is gone (a cache entry that can never match again).
  bool expired() const { return storage_.expired(); }

 private:
  std::weak_ptr<Storage> storage_;
  size_t offset_ = 0;
  uint64_t generation_ = 0;
};

// Bitwise equality of dtype, shape and contents.
bool identical(const Tensor& a, const Tensor& b);

template <class T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Tensor t(dtype_of<T>, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.num_elements())
    throw_error(Code::kInvalidArgument,
                "Tensor::from_vector: " + std::to_string(values.size()) + " values for shape " + t.shape().to_string());
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

template <class T>
T Tensor::item() const {
  if (num_elements_ != 1)
    throw_error(Code::kInvalidArgument, "Tensor::item on " + spec_string() + " (needs 1 element)");
  return data<T>()[0];
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  const T* p = data<T>();
  return std::vector<T>(p, p + num_elements_);
}

}  // namespace hub

namespace hub {
// What a graph knows about a tensor before running: dtype and a partial shape.
struct TensorSpec {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::string to_string() const { return std::string(dtype_name(dtype)) + shape.to_string(); }
  bool operator==(const TensorSpec& o) const { return dtype == o.dtype && shape == o.shape; }
};
}  // namespace hub

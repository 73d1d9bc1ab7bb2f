// Shape: a list of dimensions. In graphs a dimension may be unknown (kUnknownDim,
// printed "?"), e.g. the batch dimension of a signature. Tensors always have
// fully defined shapes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace hub {

inline constexpr int64_t kUnknownDim = -1;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const;  // negative i counts from the end
  int64_t operator[](int i) const { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  void set_dim(int i, int64_t d) { dims_[i] = d; }
  void push_back(int64_t d) { dims_.push_back(d); }

  bool is_fully_defined() const;
  // Product of dims; throws InvalidArgument if unknown, negative or overflowing.
  int64_t num_elements() const;
  // True if every pair of dims is equal or at least one is unknown.
  bool compatible_with(const Shape& other) const;
  // "[2,?,3]"
  std::string to_string() const;

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

 private:
  std::vector<int64_t> dims_;
};

// NumPy/TF broadcasting of two (partial) shapes; throws InvalidArgument naming
// both shapes when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace hub

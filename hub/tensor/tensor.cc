#include "hub/tensor/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace hub {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kUInt8:
      return 1;
    case DType::kBool:
      return 1;
    case DType::kInt8:
      return 1;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kUInt8:
      return "uint8";
    case DType::kBool:
      return "bool";
    case DType::kInt8:
      return "int8";
  }
  return "invalid";
}

DType parse_dtype(std::string_view name) {
  for (DType d : {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kUInt8, DType::kBool, DType::kInt8})
    if (dtype_name(d) == name) return d;
  throw_error(Code::kInvalidArgument, "unknown dtype '" + std::string(name) + "'");
}

bool is_floating(DType dtype) { return dtype == DType::kFloat32; }
bool is_arith(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kInt32 || dtype == DType::kInt64; }
bool is_8bit(DType dtype) { return dtype == DType::kUInt8 || dtype == DType::kInt8; }

std::string_view device_name(Device device) { return device == Device::kCPU ? "cpu" : "cuda"; }

int64_t Shape::dim(int i) const {
  int r = rank();
  int j = i < 0 ? i + r : i;
  if (j < 0 || j >= r)
    throw_error(Code::kInvalidArgument, "dimension " + std::to_string(i) + " out of range for shape " + to_string());
  return dims_[j];
}

float half_to_float(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  float v;
  if (exponent == 0)  // zero and subnormals: mantissa * 2^-24
    v = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    v = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else  // (1024 + mantissa) * 2^(exponent - 15 - 10)
    v = std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
  return (bits & 0x8000) ? -v : v;
}

float bfloat16_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float v;
  std::memcpy(&v, &wide, sizeof v);
  return v;
}

bool Shape::is_fully_defined() const {
  for (int64_t d : dims_)
    if (d < 0) return false;
  return true;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) {
    if (d < 0) throw_error(Code::kInvalidArgument, "shape " + to_string() + " is not fully defined");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw_error(Code::kInvalidArgument, "shape " + to_string() + " has too many elements");
    n *= d;
  }
  return n;
}

bool Shape::compatible_with(const Shape& other) const {
  if (rank() != other.rank()) return false;
  for (int i = 0; i < rank(); ++i)
    if (dims_[i] >= 0 && other.dims_[i] >= 0 && dims_[i] != other.dims_[i]) return false;
  return true;
}

std::optional<std::vector<int64_t>> Tensor::to_int64_vector() const {
  if (dtype_ == DType::kInt64) return to_vector<int64_t>();
  if (dtype_ != DType::kInt32) return std::nullopt;
  const int32_t* p = data<int32_t>();
  return std::vector<int64_t>(p, p + num_elements_);
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i] < 0 ? "?" : std::to_string(dims_[i]);
  }
  return s + "]";
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  int r = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(r);
  for (int i = 0; i < r; ++i) {
    int ia = a.rank() - r + i, ib = b.rank() - r + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da == 1)
      out[i] = db;
    else if (db == 1)
      out[i] = da;
    else if (da < 0 || db < 0)
      out[i] = da < 0 ? db : da;  // unknown vs n: assume n
    else if (da == db)
      out[i] = da;
    else
      throw_error(Code::kInvalidArgument,
                  "shapes " + a.to_string() + " and " + b.to_string() + " are not broadcast-compatible");
  }
  return Shape(out);
}

std::shared_ptr<Storage> allocate_cpu_storage(size_t bytes) {
  auto s = std::make_shared<Storage>();
  size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (rounded == 0) rounded = kTensorAlignment;
  s->data = std::aligned_alloc(kTensorAlignment, rounded);
  if (!s->data) throw_error(Code::kResourceExhausted, "out of memory allocating " + std::to_string(bytes) + " bytes");
  s->bytes = bytes;
  s->release = [](Storage& st) { std::free(st.data); };
  return s;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  num_elements_ = shape_.num_elements();
  if (num_elements_ > static_cast<int64_t>(std::numeric_limits<int64_t>::max() / 8))
    throw_error(Code::kInvalidArgument, "tensor shape " + shape_.to_string() + " is too large");
  storage_ = allocate_cpu_storage(nbytes());
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage, size_t offset)
    : dtype_(dtype), shape_(std::move(shape)), storage_(std::move(storage)), offset_(offset) {
  num_elements_ = shape_.num_elements();
  HUB_CHECK(storage_ != nullptr);
  if (offset_ + nbytes() > storage_->bytes)
    throw_error(Code::kInvalidArgument, "tensor view " + spec_string() + " exceeds its storage");
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}

Tensor Tensor::floats(std::initializer_list<float> values) {
  return from_vector<float>(Shape{static_cast<int64_t>(values.size())}, std::vector<float>(values));
}

Tensor Tensor::reshaped(Shape shape) const {
  int unknown = -1;
  int64_t known = 1;
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape[i] == -1) {
      if (unknown >= 0) throw_error(Code::kInvalidArgument, "reshape to " + shape.to_string() + ": more than one -1");
      unknown = i;
    } else if (shape[i] < 0) {
      throw_error(Code::kInvalidArgument, "reshape to " + shape.to_string() + ": negative dimension");
    } else {
      known *= shape[i];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || num_elements_ % known != 0)
      throw_error(Code::kInvalidArgument, "cannot reshape " + spec_string() + " to " + shape.to_string());
    shape.set_dim(unknown, num_elements_ / known);
  }
  if (shape.num_elements() != num_elements_)
    throw_error(Code::kInvalidArgument, "cannot reshape " + spec_string() + " to " + shape.to_string());
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  if (device() != Device::kCPU)
    throw_error(Code::kFailedPrecondition, "clone of " + spec_string() + " on " + std::string(device_name(device())) +
                                               " (copy it with hub::to_device)");
  Tensor t(dtype_, shape_);
  std::memcpy(t.raw_data(), raw_data(), nbytes());
  return t;
}

void Tensor::fill(double value) {
  dispatch_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    T* p = data<T>();
    T v = static_cast<T>(value);
    for (int64_t i = 0; i < num_elements_; ++i) p[i] = v;
  });
}

std::string Tensor::spec_string() const { return std::string(dtype_name(dtype_)) + shape_.to_string(); }

void Tensor::check_type(DType requested, bool on_host) const {
  if (!defined()) throw_error(Code::kFailedPrecondition, "access to an undefined tensor");
  if (on_host && storage_->device != Device::kCPU)
    throw_error(Code::kFailedPrecondition, "host access to " + spec_string() + " on " +
                                               std::string(device_name(storage_->device)) +
                                               " (copy it to the host first)");
  if (requested != dtype_)
    throw_error(Code::kInvalidArgument,
                "tensor is " + spec_string() + ", accessed as " + std::string(dtype_name(requested)));
}

bool identical(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  HUB_CHECK(a.device() == Device::kCPU && b.device() == Device::kCPU, "identical() compares host tensors");
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace hub

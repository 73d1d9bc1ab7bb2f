// Element types and devices of tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hub/core/error.h"

namespace hub {

// Values are part of the module format (signatures/module.proto): never reuse.
enum class DType : uint8_t { kFloat32 = 1, kInt32 = 2, kInt64 = 3, kUInt8 = 4, kBool = 5, kInt8 = 6 };

enum class Device : uint8_t { kCPU = 0, kCUDA = 1 };

size_t dtype_size(DType dtype);
// "float32", "int32", "int64", "uint8", "bool", "int8".
std::string_view dtype_name(DType dtype);
// Inverse of dtype_name; throws InvalidArgument naming the text.
DType parse_dtype(std::string_view name);
bool is_floating(DType dtype);
// float32, int32 or int64: the dtypes of arithmetic.
bool is_arith(DType dtype);
// uint8 or int8: the dtypes of quantized tensors.
bool is_8bit(DType dtype);
std::string_view device_name(Device device);

// Element types hub reads but computes in float32: IEEE half precision and
// bfloat16 (the top half of a float32), from their bits.
float half_to_float(uint16_t bits);
float bfloat16_to_float(uint16_t bits);

template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::kInt8;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};
template <class T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

// Calls f(T{}) with T the C++ type of dtype.
template <class F>
decltype(auto) dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
      return f(float{});
    case DType::kInt32:
      return f(int32_t{});
    case DType::kInt64:
      return f(int64_t{});
    case DType::kUInt8:
      return f(uint8_t{});
    case DType::kBool:
      return f(bool{});
    case DType::kInt8:
      return f(int8_t{});
  }
  return f(float{});
}

// Calls f(T{}) with T float, int32_t or int64_t, the arithmetic dtypes;
// InvalidArgument naming any other.
template <class F>
decltype(auto) dispatch_arith(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
      return f(float{});
    case DType::kInt32:
      return f(int32_t{});
    case DType::kInt64:
      return f(int64_t{});
    default:
      throw_error(Code::kInvalidArgument, "arithmetic on " + std::string(dtype_name(dtype)));
  }
}

}  // namespace hub

#include "hub/interop/tf/tensor_proto.h"

#include <algorithm>
#include <cstring>

#include "hub/core/error.h"
#include "hub/interop/tf/bundle.h"

namespace hub::tf {

Shape shape_from_proto(const proto::TensorShapeProto& shape, const std::string& what) {
  if (shape.unknown_rank()) throw_error(Code::kInvalidArgument, what + ": the shape has an unknown rank");
  std::vector<int64_t> dims;
  for (const auto& d : shape.dim()) {
    if (d.size() < -1) throw_error(Code::kInvalidArgument, what + ": dimension " + std::to_string(d.size()));
    dims.push_back(d.size() < 0 ? kUnknownDim : d.size());
  }
  return Shape(std::move(dims));
}

void shape_to_proto(const Shape& shape, proto::TensorShapeProto* out) {
  out->Clear();
  for (int64_t d : shape.dims()) out->add_dim()->set_size(d < 0 ? -1 : d);
}

namespace {

// Fills t from `values` (the typed field), repeating the last one.
template <class T, class Field>
void fill_typed(Tensor& t, const Field& values, const std::string& what) {
  const int64_t n = t.num_elements();
  if (values.size() > n)
    throw_error(Code::kInvalidArgument,
                what + ": " + std::to_string(values.size()) + " values for " + std::to_string(n) + " elements");
  T* out = t.data<T>();
  for (int64_t i = 0; i < n; ++i) {
    if (values.empty()) {
      out[i] = T{};
    } else {
      auto v = values[static_cast<int>(std::min<int64_t>(i, values.size() - 1))];
      out[i] = static_cast<T>(v);
    }
  }
}

}  // namespace

Tensor tensor_from_proto(const proto::TensorProto& p, const std::string& what) {
  std::optional<DType> dtype = dtype_from_tf(p.dtype());
  if (!dtype) throw_error(Code::kInvalidArgument, what + ": dtype " + tf_dtype_name(p.dtype()) + " is not supported");
  Shape shape = shape_from_proto(p.tensor_shape(), what);
  int64_t n = 1;
  for (int64_t d : shape.dims()) {
    if (d < 0) throw_error(Code::kInvalidArgument, what + ": the shape " + shape.to_string() + " is not fully defined");
    if (d > 0 && n > kMaxProtoElements / d)
      throw_error(Code::kInvalidArgument, what + ": the shape " + shape.to_string() + " is too large");
    n *= d;
  }
  if (n > kMaxProtoElements)
    throw_error(Code::kInvalidArgument, what + ": the shape " + shape.to_string() + " is too large");
  Tensor t(*dtype, shape);
  if (!p.tensor_content().empty()) {
    if (p.tensor_content().size() != t.nbytes())
      throw_error(Code::kInvalidArgument, what + ": tensor_content has " + std::to_string(p.tensor_content().size()) +
                                              " bytes, " + t.spec_string() + " needs " + std::to_string(t.nbytes()));
    std::memcpy(t.raw_data(), p.tensor_content().data(), t.nbytes());
  } else {
    switch (*dtype) {
      case DType::kFloat32:
        fill_typed<float>(t, p.float_val(), what);
        break;
      case DType::kInt32:
        fill_typed<int32_t>(t, p.int_val(), what);
        break;
      case DType::kUInt8:
        fill_typed<uint8_t>(t, p.int_val(), what);
        break;
      case DType::kInt8:
        fill_typed<int8_t>(t, p.int_val(), what);
        break;
      case DType::kInt64:
        fill_typed<int64_t>(t, p.int64_val(), what);
        break;
      case DType::kBool:
        fill_typed<bool>(t, p.bool_val(), what);
        break;
    }
  }
  if (*dtype == DType::kBool) {
    const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i)
      if (bytes[i] > 1) throw_error(Code::kInvalidArgument, what + ": bool value " + std::to_string(bytes[i]));
  }
  return t;
}

std::vector<std::string> strings_from_proto(const proto::TensorProto& p, const std::string& what) {
  if (p.dtype() != proto::DT_STRING)
    throw_error(Code::kInvalidArgument, what + ": expected DT_STRING, got " + tf_dtype_name(p.dtype()));
  const Shape shape = shape_from_proto(p.tensor_shape(), what);
  if (!shape.is_fully_defined() || shape.num_elements() > kMaxProtoElements)
    throw_error(Code::kInvalidArgument, what + ": bad shape " + shape.to_string());
  const int64_t n = shape.num_elements();
  if (p.string_val_size() > n)
    throw_error(Code::kInvalidArgument,
                what + ": " + std::to_string(p.string_val_size()) + " strings for " + std::to_string(n) + " elements");
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(p.string_val_size() == 0
                      ? std::string()
                      : p.string_val(static_cast<int>(std::min<int64_t>(i, p.string_val_size() - 1))));
  return out;
}

void tensor_to_proto(const Tensor& tensor, proto::TensorProto* out) {
  out->Clear();
  out->set_dtype(static_cast<proto::DataType>(dtype_to_tf(tensor.dtype())));
  shape_to_proto(tensor.shape(), out->mutable_tensor_shape());
  out->set_tensor_content(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
}

}  // namespace hub::tf

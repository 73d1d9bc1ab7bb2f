// TensorFlow's TensorProto and TensorShapeProto <-> hub's Tensor and Shape
// (schemas in hub/interop/tf/proto/). Dtypes map as in bundle.h: DT_FLOAT,
// DT_INT32, DT_INT64, DT_UINT8 and DT_BOOL; any other dtype is refused.
#pragma once

#include <string>
#include <vector>

#include "hub/interop/tf/proto/tensor.pb.h"
#include "hub/interop/tf/proto/tensor_shape.pb.h"
#include "hub/tensor/tensor.h"

namespace hub::tf {

// The most elements a TensorProto may describe (2^31: 8 GiB of float32),
// checked before anything is allocated.
inline constexpr int64_t kMaxProtoElements = int64_t{1} << 31;

// A shape with unknown dims as kUnknownDim. Throws InvalidArgument naming
// `what` for an unknown rank or a dim below -1.
Shape shape_from_proto(const proto::TensorShapeProto& shape, const std::string& what);
void shape_to_proto(const Shape& shape, proto::TensorShapeProto* out);

// The tensor a TensorProto holds: its bytes from tensor_content, or its
// typed values (the last one repeated to fill the shape, none meaning
// zeros). Throws InvalidArgument naming `what` for a dtype hub lacks (with
// TensorFlow's name for it), a shape that is not fully defined or too large,
// tensor_content of the wrong size, more typed values than elements, and
// bool values other than 0 or 1.
Tensor tensor_from_proto(const proto::TensorProto& proto, const std::string& what);
// The strings of a DT_STRING TensorProto (string_val, the last repeated to
// fill the shape). Throws InvalidArgument naming `what` for another dtype.
std::vector<std::string> strings_from_proto(const proto::TensorProto& proto, const std::string& what);
// tensor_content form (every dtype hub has maps to one TensorFlow has).
void tensor_to_proto(const Tensor& tensor, proto::TensorProto* out);

}  // namespace hub::tf

// Reading ONNX files: the model is parsed with ONNX's own protobuf schema
// (Debian's libonnx), checked with its checker, converted to one opset with
// its version converter and annotated with its shape inference, so the
// importer (hub/interop/onnx/importer.h) maps exactly one version of each
// operator and knows every static shape.
//
// What is refused, each as hub::Error naming the file (and the tensor or
// node):
//   - a file that is not a parsable ModelProto, or is larger than
//     kMaxModelBytes (Corruption / ResourceExhausted);
//   - a default-domain opset outside [kMinOpset, kMaxOpset], or nodes of
//     another domain (InvalidArgument);
//   - a model ONNX's checker rejects (InvalidArgument, with its message);
//   - an initializer whose data size does not match its dtype and shape
//     (Corruption), or of a dtype hub lacks (InvalidArgument);
//   - external data (tensor bytes in a side file) whose location is
//     absolute, climbs out of the model's folder (`..`, or a symbolic link
//     resolving outside it), or whose offset/length lies outside the file
//     (PermissionDenied / Corruption).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

#include "hub/tensor/tensor.h"

namespace hub::onnx_interop {

inline constexpr int kMinOpset = 1;
inline constexpr int kMaxOpset = 17;
// The opset every model is converted to before mapping.
inline constexpr int kTargetOpset = 17;
// protobuf's own limit for one message.
inline constexpr int64_t kMaxModelBytes = int64_t{2} << 30;

// A loaded model: converted to kTargetOpset, shapes inferred (also through
// shape-computing nodes: ONNX's data propagation), every initializer's
// external data read into raw_data.
struct OnnxModel {
  std::string path;  // as given, for messages
  ::onnx::ModelProto proto;
  int source_opset = 0;  // the default-domain opset the file declared
};

OnnxModel load_onnx_model(const std::string& path);

// A value type's shape (kUnknownDim where a dim has no value), or nullopt
// where it has no tensor shape.
std::optional<Shape> shape_of(const ::onnx::TypeProto& type);

// Runs ONNX's shape inference (with data propagation) over `model` again
// after its input shapes changed: the old inferred shapes (value_info, and
// output shapes) are dropped first. `where` names the model in errors.
void infer_shapes(::onnx::ModelProto& model, const std::string& where);

// hub's dtype for an ONNX TensorProto data type; throws InvalidArgument
// naming `what` for types hub lacks.
DType dtype_from_onnx(int onnx_type, const std::string& what);
int dtype_to_onnx(DType dtype);
// "FLOAT", "INT64", ... for messages.
std::string onnx_type_name(int onnx_type);

// A TensorProto's shape, checked (without allocating) against the bytes its
// raw_data or typed field holds, for every fixed-size type; Corruption
// naming `where` on a mismatch, a negative dim or an overflowing shape.
Shape check_tensor_data(const ::onnx::TensorProto& t, const std::string& where);

// The tensor a TensorProto holds (raw_data or the typed fields), checked
// against its dtype and shape; `where` names it in errors.
Tensor tensor_from_onnx(const ::onnx::TensorProto& t, const std::string& where);
void tensor_to_onnx(const Tensor& t, ::onnx::TensorProto* out);

}  // namespace hub::onnx_interop

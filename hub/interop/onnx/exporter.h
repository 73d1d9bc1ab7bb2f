// hub modules -> ONNX models (docs/import.md, "Export").
//
// One signature of the module's inference tag set {} becomes an ONNX graph
// whose inputs and outputs are the signature's: same names, shapes, dtypes
// and layout (an NHWC image input stays NHWC), so ONNX Runtime given the
// arrays `hub run` takes returns what `hub run` prints. Inside, spatial ops
// run NCHW as ONNX defines them: a tensor is transposed where an op needs
// the other layout, and weights are transposed at export (HWIO -> OIHW).
// The module's variables (their stored values, else their initial values)
// become initializers. The model is checked with ONNX's checker before it is
// written; it is written atomically (a temporary file renamed into place).
//
// Ops with no ONNX equivalent (training-only ops, random ops, ...) fail the
// export with one error listing each such op and a node using it.
#pragma once

#include <string>

#include "hub/module/module.h"

namespace hub::onnx_interop {

struct OnnxExportOptions {
  std::string signature = kDefaultSignature;
  // 13..17, or 0: the lowest from 13 that has every op the signature needs
  // (HardSwish came in 14).
  int opset = 0;
  bool overwrite = false;  // replace a file at the path (else AlreadyExists)
};

// Writes `spec` as an ONNX model to `path` (which must not exist unless
// options.overwrite). Returns the opset written.
int export_onnx(const ModuleSpec& spec, const std::string& path, const OnnxExportOptions& options = {});

}  // namespace hub::onnx_interop

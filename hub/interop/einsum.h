// Einsum (NumPy's notation) built from hub ops, for the ONNX and TensorFlow
// importers.
#pragma once

#include <string>
#include <vector>

#include "hub/ops/scope.h"

namespace hub::interop {

// `inputs` (float32) combined by `equation` ("bij,bjk->bik", "...ij,...jk"
// with the implicit output) into `s`. Throws InvalidArgument for an equation
// that does not fit the inputs, Unimplemented for what hub does not map:
// diagonals (a label repeated in one operand), other dtypes, a reshape with
// more than one dim of unknown size.
Output einsum(const Scope& s, const std::string& equation, const std::vector<Output>& inputs);

}  // namespace hub::interop

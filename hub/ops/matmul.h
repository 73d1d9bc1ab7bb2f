// Dense products and bias.
//
//   MatMul(a, b; transpose_a, transpose_b): C = op(a) op(b), with op(x) = x or
//     x^T; op(a) [M,K], op(b) [K,N] -> C [M,N]; float32, 2-D. Gradients (TF):
//       ta tb | da                         | db
//       F  F  | MatMul(g, b; F, T)          | MatMul(a, g; T, F)
//       F  T  | MatMul(g, b; F, F)          | MatMul(g, a; T, F)
//       T  F  | MatMul(b, g; F, T)          | MatMul(a, g; F, F)
//       T  T  | MatMul(b, g; T, T)          | MatMul(g, a; T, T)
//     Backends: reference (Eigen GEMM), onednn (dnnl::matmul, float32).
//   BiasAdd(value [..., C], bias [C]) -> value + bias along the last dim.
//       dvalue = g, dbias = BiasAddGrad(g)
//   BiasAddGrad(g [..., C]) -> [C]: g summed over all but the last dim.
//       dg = BiasAdd(ZerosLike(g), gg) (gg broadcast along the last dim)
#pragma once

#include <string>

#include "hub/ops/scope.h"

namespace hub::ops {

Output matmul(const Scope& s, Output a, Output b, bool transpose_a = false, bool transpose_b = false,
              const std::string& name = "MatMul");
Output bias_add(const Scope& s, Output value, Output bias, const std::string& name = "BiasAdd");
Output bias_add_grad(const Scope& s, Output grad, const std::string& name = "BiasAddGrad");

}  // namespace hub::ops

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
//   BatchMatMul(x, y; adj_x, adj_y) (TF's BatchMatMulV2): float32, rank >= 2.
//     x [..bx, M, K] (adj_x: [..bx, K, M]), y [..by, K, N] (adj_y: [..by, N, K])
//     -> [..b, M, N], z[..b] = op(x[..b]) op(y[..b]); the batch dims bx and by
//     broadcast as NumPy/TF (right-aligned, each pair equal or one of them 1;
//     the shorter one padded with 1s), b = broadcast(bx, by). Rank 2 is MatMul.
//     Gradients: the MatMul table above with (ta, tb) = (adj_x, adj_y) applied
//     per batch through BatchMatMul, then summed over the batch dims along
//     which x (resp. y) was broadcast (ReduceToLike), so dx has x's shape.
//     Backends: reference (Eigen GEMM per batch, in parallel over batches),
//     onednn (dnnl::matmul with broadcast batch dims, operands transposed by
//     their strides, never copied).
//     ONNX MatMul (NumPy matmul) maps here: both operands of rank >= 2 go as
//     they are (adj false). A 1-D x [K] becomes ExpandDims(x, 0) -> [1, K] and
//     the result's dim -2 is squeezed; a 1-D y [K] becomes ExpandDims(y, -1)
//     -> [K, 1] and the result's dim -1 is squeezed (both when both are 1-D,
//     giving a scalar). ONNX Gemm is MatMul(transA, transB) * alpha + beta * C.
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
Output batch_matmul(const Scope& s, Output x, Output y, bool adj_x = false, bool adj_y = false,
                    const std::string& name = "BatchMatMul");
Output bias_add(const Scope& s, Output value, Output bias, const std::string& name = "BiasAdd");
Output bias_add_grad(const Scope& s, Output grad, const std::string& name = "BiasAddGrad");

}  // namespace hub::ops

// Unary math, comparisons, casts and BroadcastLike.
//
// Unary ops keep x's shape. g = d loss / d y.
//   Neg:         y = -x              dx = -g                 (float32, int32, int64)
//   Square:      y = x^2             dx = g * 2x             (float32, int32, int64)
//   Abs:         y = |x|             dx = g * sign(x)        (float32, int32, int64)
//   Sign:        y = -1, 0 or 1      dx = 0                  (float32, int32, int64)
//   Sqrt:        y = sqrt(x)         dx = g * 0.5 / y        (float32)
//   Rsqrt:       y = 1/sqrt(x)       dx = g * -0.5 * y^3     (float32)
//   Exp:         y = e^x             dx = g * y              (float32)
//   Log:         y = ln(x)           dx = g / x              (float32)
//   Reciprocal:  y = 1/x             dx = -g * y^2           (float32)
//   Erf:         y = erf(x)          dx = g * 2/sqrt(pi) * e^(-x^2)      (float32)
//   Floor, Ceil: y = floor(x), ceil(x)                 dx = 0          (float32)
//   Round:       y = x to the nearest integer, halves to even  dx = 0  (float32)
//   Sin:         y = sin(x)          dx = g * cos(x)         (float32)
//   Cos:         y = cos(x)          dx = -g * sin(x)        (float32)
//   Tan:         y = tan(x)          dx = g * (1 + y^2)      (float32)
//   Asin:        y = asin(x)         dx = g / sqrt(1 - x^2)  (float32)
//   Acos:        y = acos(x)         dx = -g / sqrt(1 - x^2) (float32)
//   Atan:        y = atan(x)         dx = g / (1 + x^2)      (float32)
//   Sinh:        y = sinh(x)         dx = g * cosh(x)        (float32)
//   Cosh:        y = cosh(x)         dx = g * sinh(x)        (float32)
//   Asinh:       y = asinh(x)        dx = g / sqrt(x^2 + 1)  (float32)
//   Acosh:       y = acosh(x)        dx = g / sqrt(x^2 - 1)  (float32)
//   Atanh:       y = atanh(x)        dx = g / (1 - x^2)      (float32)
// Domain errors follow IEEE: Sqrt(-1) = NaN, Log(0) = -inf, Reciprocal(0) = inf,
// Asin(2) = NaN, Atanh(1) = inf.
//
// Cast(x; dtype): y = x converted to `dtype` (any of float32, int32, int64,
// uint8, bool), as static_cast: float -> int truncates toward zero, nonzero ->
// true, bool -> 0/1. Values outside the destination's range are undefined (as
// in TF). Gradient: g passes through when source and destination are both
// float32; otherwise none.
//
// Comparisons Equal, NotEqual, Greater, GreaterEqual, Less, LessEqual:
// z = a (op) b as bool, shape broadcast(a, b) (NumPy/TF rules); a and b share a
// dtype (float32, int32, int64, uint8; Equal and NotEqual also bool, where
// NotEqual is exclusive or). Not differentiable.
//
// LogicalNot(x), LogicalAnd(a, b), LogicalOr(a, b): bool in, bool out, the
// binary ones broadcasting. Not differentiable.
//
// Select(cond, x, y): z = cond ? x : y element by element, the three
// broadcast together (NumPy rules: TF SelectV2, ONNX Where). cond is bool; x
// and y share a dtype (any). dx = ReduceToLike(Select(cond, g, 0), x), dy =
// ReduceToLike(Select(cond, 0, g), y); none for cond.
//
// BroadcastLike(x, like; reduced_axes = []): y has like's run-time shape and
// dtype of x. With reduced_axes empty, x broadcasts to like's shape by the
// usual right-aligned rules. With reduced_axes set, x is the result of a
// reduction of like over those axes without keep_dims (rank(x) = rank(like) -
// |reduced_axes|): size-1 dims are first re-inserted at reduced_axes, then x is
// broadcast. Gradient: dx = ReduceToLike(Sum(g, reduced_axes), x); none for like.
//
// BroadcastTo(x; shape): y = x broadcast to broadcast(x.shape, shape) (NumPy
// rules, both ways: ONNX Expand; for TF BroadcastTo, whose valid inputs have x
// broadcastable to `shape`, that is `shape`). Entries of shape >= 0. x of any
// dtype. dx = ReduceToLike(g, x).
#pragma once

#include <string>
#include <vector>

#include "hub/ops/scope.h"

namespace hub::ops {

Output neg(const Scope& s, Output x, const std::string& name = "Neg");
Output square(const Scope& s, Output x, const std::string& name = "Square");
Output abs(const Scope& s, Output x, const std::string& name = "Abs");
Output sign(const Scope& s, Output x, const std::string& name = "Sign");
Output sqrt(const Scope& s, Output x, const std::string& name = "Sqrt");
Output rsqrt(const Scope& s, Output x, const std::string& name = "Rsqrt");
Output exp(const Scope& s, Output x, const std::string& name = "Exp");
Output log(const Scope& s, Output x, const std::string& name = "Log");
Output reciprocal(const Scope& s, Output x, const std::string& name = "Reciprocal");
Output erf(const Scope& s, Output x, const std::string& name = "Erf");
Output floor(const Scope& s, Output x, const std::string& name = "Floor");
Output ceil(const Scope& s, Output x, const std::string& name = "Ceil");
Output round(const Scope& s, Output x, const std::string& name = "Round");
Output sin(const Scope& s, Output x, const std::string& name = "Sin");
Output cos(const Scope& s, Output x, const std::string& name = "Cos");
Output tan(const Scope& s, Output x, const std::string& name = "Tan");
Output asin(const Scope& s, Output x, const std::string& name = "Asin");
Output acos(const Scope& s, Output x, const std::string& name = "Acos");
Output atan(const Scope& s, Output x, const std::string& name = "Atan");
Output sinh(const Scope& s, Output x, const std::string& name = "Sinh");
Output cosh(const Scope& s, Output x, const std::string& name = "Cosh");
Output asinh(const Scope& s, Output x, const std::string& name = "Asinh");
Output acosh(const Scope& s, Output x, const std::string& name = "Acosh");
Output atanh(const Scope& s, Output x, const std::string& name = "Atanh");
Output cast(const Scope& s, Output x, DType dtype, const std::string& name = "Cast");

Output equal(const Scope& s, Output a, Output b, const std::string& name = "Equal");
Output not_equal(const Scope& s, Output a, Output b, const std::string& name = "NotEqual");
Output greater(const Scope& s, Output a, Output b, const std::string& name = "Greater");
Output greater_equal(const Scope& s, Output a, Output b, const std::string& name = "GreaterEqual");
Output less(const Scope& s, Output a, Output b, const std::string& name = "Less");
Output less_equal(const Scope& s, Output a, Output b, const std::string& name = "LessEqual");
Output logical_not(const Scope& s, Output x, const std::string& name = "LogicalNot");
Output logical_and(const Scope& s, Output a, Output b, const std::string& name = "LogicalAnd");
Output logical_or(const Scope& s, Output a, Output b, const std::string& name = "LogicalOr");
Output select(const Scope& s, Output cond, Output x, Output y, const std::string& name = "Select");

// x broadcast to like's run-time shape; see the header comment for reduced_axes.
Output broadcast_like(const Scope& s, Output x, Output like, const std::vector<int64_t>& reduced_axes = {},
                      const std::string& name = "BroadcastLike");

Output broadcast_to(const Scope& s, Output x, const std::vector<int64_t>& shape,
                    const std::string& name = "BroadcastTo");

// Normalizes reduction axes against `rank`: negative axes count from the end;
// empty means all axes. Returns them sorted and unique. Throws InvalidArgument
// (prefixed with `what`) for an axis outside [-rank, rank).
std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int rank, const std::string& what);

// x's dims with a size-1 dim re-inserted at each of `axes` (sorted, unique,
// from normalize_axes): the shape of x before a reduction over `axes` dropped
// them. Requires x.rank() + axes.size() dims in all.
Shape insert_reduced_axes(const Shape& x, const std::vector<int>& axes);

}  // namespace hub::ops

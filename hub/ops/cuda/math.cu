// CUDA kernels of the unary math ops, casts, comparisons and broadcasts of
// hub/ops/math.h: Neg, Square, Abs, Sign (float32, int32, int64), Sqrt,
// Rsqrt, Exp, Log, Reciprocal, Erf, Floor, Ceil, Round, the trigonometric and
// hyperbolic functions and their inverses (float32), Cast (every pair of
// dtypes), Equal, NotEqual (float32, int32, int64, uint8, bool), Greater,
// GreaterEqual, Less, LessEqual (float32, int32, int64, uint8), LogicalNot,
// LogicalAnd, LogicalOr (bool; all broadcasting), BroadcastLike and
// BroadcastTo (any dtype). Select runs on the host.
//
// They compute what the reference kernels (hub/ops/cpu/math.cc) do:
// - Sign(NaN) = 0 (both comparisons fail); Sign(-0) = +0.
// - Sqrt, Exp, Log, Reciprocal are IEEE-rounded or within CUDA's documented
//   ulp bounds of the reference (sqrtf and 1/x are exactly rounded; expf,
//   logf, rsqrtf within 2 ulp), with the same IEEE domain results
//   (Sqrt(-1) = NaN, Log(0) = -inf, Rsqrt(0) = Reciprocal(0) = inf); the
//   other float functions are CUDA's, within its documented ulp bounds
//   (Round is rintf: halves to even, as the reference).
// - Cast is static_cast: float -> integer truncates toward zero, nonzero
//   (and NaN) -> true, bool -> 0 / 1, integer narrowing keeps the low bits.
//   Values outside the destination's range are undefined, as on the CPU
//   (where x86 wraps, CUDA saturates). A cast to the same dtype aliases x.
// - BroadcastLike / BroadcastTo move elements as unsigned integers of their
//   size, and alias x when no dim grows.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "hub/ops/cuda/elementwise.h"
#include "hub/ops/math.h"

namespace hub::cuda {
namespace {

struct NegFn {
  template <class T>
  __device__ T operator()(T x) const {
    return static_cast<T>(-x);
  }
};
struct SquareFn {
  template <class T>
  __device__ T operator()(T x) const {
    return static_cast<T>(x * x);
  }
};
struct AbsFn {
  template <class T>
  __device__ T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      return fabsf(x);
    else
      return static_cast<T>(x < 0 ? -x : x);
  }
};
struct SignFn {
  template <class T>
  __device__ T operator()(T x) const {
    return static_cast<T>(static_cast<T>(x > T(0)) - static_cast<T>(x < T(0)));
  }
};
struct SqrtFn {
  __device__ float operator()(float x) const { return sqrtf(x); }
};
struct RsqrtFn {
  __device__ float operator()(float x) const { return rsqrtf(x); }
};
struct ExpFn {
  __device__ float operator()(float x) const { return expf(x); }
};
struct LogFn {
  __device__ float operator()(float x) const { return logf(x); }
};
struct ReciprocalFn {
  __device__ float operator()(float x) const { return 1.0f / x; }
};
// A float function of CUDA's math library as a functor.
template <float (*kFn)(float)>
struct MathFn {
  __device__ float operator()(float x) const { return kFn(x); }
};
__device__ float erf_of(float x) { return erff(x); }
__device__ float floor_of(float x) { return floorf(x); }
__device__ float ceil_of(float x) { return ceilf(x); }
__device__ float round_of(float x) { return rintf(x); }
__device__ float sin_of(float x) { return sinf(x); }
__device__ float cos_of(float x) { return cosf(x); }
__device__ float tan_of(float x) { return tanf(x); }
__device__ float asin_of(float x) { return asinf(x); }
__device__ float acos_of(float x) { return acosf(x); }
__device__ float atan_of(float x) { return atanf(x); }
__device__ float sinh_of(float x) { return sinhf(x); }
__device__ float cosh_of(float x) { return coshf(x); }
__device__ float asinh_of(float x) { return asinhf(x); }
__device__ float acosh_of(float x) { return acoshf(x); }
__device__ float atanh_of(float x) { return atanhf(x); }

template <class F>
void arith_unary_op(KernelContext& c) {
  dispatch_arith(c.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    broadcast_map<T>(F{}, c.output(0), c.input(0));
  });
}

template <class F>
void float_unary_op(KernelContext& c) {
  broadcast_map<float>(F{}, c.output(0), c.input(0));
}

template <class D>
struct CastFn {
  template <class S>
  __device__ D operator()(S x) const {
    return static_cast<D>(x);
  }
};

void cast_op(KernelContext& c) {
  const Tensor& x = c.input(0);
  const DType to = c.output_spec(0).dtype;
  if (x.dtype() == to) {
    c.set_output(0, x);
    return;
  }
  dispatch_dtype(x.dtype(), [&](auto from_tag) {
    using S = decltype(from_tag);
    dispatch_dtype(to, [&](auto to_tag) {
      using D = decltype(to_tag);
      if constexpr (!std::is_same_v<S, D>) broadcast_map<S, D>(CastFn<D>{}, c.output(0), x);
    });
  });
}

struct EqualFn {
  template <class T>
  __device__ bool operator()(T a, T b) const {
    return a == b;
  }
};
struct NotEqualFn {
  template <class T>
  __device__ bool operator()(T a, T b) const {
    return a != b;
  }
};
struct GreaterFn {
  template <class T>
  __device__ bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterEqualFn {
  template <class T>
  __device__ bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct LessFn {
  template <class T>
  __device__ bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LessEqualFn {
  template <class T>
  __device__ bool operator()(T a, T b) const {
    return a <= b;
  }
};

// Comparisons take float32, int32, int64 or uint8 operands (Equal and
// NotEqual also bool).
template <class F>
void compare_op(KernelContext& c) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    broadcast_map<T, bool>(F{}, c.output(0), c.input(0), c.input(1));
  };
  if (c.input(0).dtype() == DType::kUInt8)
    run(uint8_t{});
  else if (c.input(0).dtype() == DType::kBool)
    run(bool{});
  else
    dispatch_arith(c.input(0).dtype(), run);
}

struct NotFn {
  __device__ bool operator()(bool x) const { return !x; }
};
struct AndFn {
  __device__ bool operator()(bool a, bool b) const { return a && b; }
};
struct OrFn {
  __device__ bool operator()(bool a, bool b) const { return a || b; }
};

void logical_not_op(KernelContext& c) { broadcast_map<bool>(NotFn{}, c.output(0), c.input(0)); }

template <class F>
void logical_binary_op(KernelContext& c) {
  broadcast_map<bool>(F{}, c.output(0), c.input(0), c.input(1));
}

struct CopyFn {
  template <class T>
  __device__ T operator()(T x) const {
    return x;
  }
};

// out = x broadcast to out's shape, any dtype.
void broadcast_copy(const Tensor& x, Tensor& out) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    launch_broadcast_map<T, T, 1, 1>(CopyFn{}, out.shape(), Outputs<T, 1>{{static_cast<T*>(out.raw_data())}},
                                     Inputs<T, 1>{{static_cast<const T*>(x.raw_data())}}, {&x.shape()});
  };
  switch (dtype_size(x.dtype())) {
    case 1:
      return run(uint8_t{});
    case 4:
      return run(uint32_t{});
    case 8:
      return run(uint64_t{});
    default:
      throw_error(Code::kInternal, "no CUDA broadcast of " + x.spec_string());
  }
}

// BroadcastLike's x with size-1 dims re-inserted at reduced_axes (none when empty).
Shape broadcast_like_source(const Shape& x, const Shape& like, const Attrs& attrs) {
  const auto& axes = attrs.get_ints("reduced_axes");
  if (axes.empty()) return x;
  return ops::insert_reduced_axes(x, ops::normalize_axes(axes, like.rank(), "reduced_axes"));
}

void broadcast_like_op(KernelContext& c) {
  const Shape& like = c.input(1).shape();
  const Tensor x = c.input(0).reshaped(broadcast_like_source(c.input(0).shape(), like, c.attrs()));
  if (x.shape() == like) {
    c.set_output(0, x);
    return;
  }
  broadcast_copy(x, c.output(0));
}

bool supports_broadcast_like(const Node& node, const std::vector<TensorSpec>& inputs) {
  const Shape& like = inputs[1].shape;
  return broadcast_fits(like, broadcast_like_source(inputs[0].shape, like, node.attrs));
}

void broadcast_to_op(KernelContext& c) {
  const Tensor& x = c.input(0);
  if (x.shape() == c.output_spec(0).shape) {
    c.set_output(0, x);
    return;
  }
  broadcast_copy(x, c.output(0));
}

bool supports_broadcast_to(const Node& node, const std::vector<TensorSpec>& inputs) {
  // The output as the shape function infers it (with the entries `from` reads from the references).
  const InferContext ictx(node.name, node.op, inputs, node.attrs);
  return broadcast_fits(OpRegistry::global().find(node.op).shape_fn(ictx)[0].shape, inputs[0].shape);
}

}  // namespace

HUB_REGISTER_KERNEL(Neg, cuda, arith_unary_op<NegFn>);
HUB_REGISTER_KERNEL(Square, cuda, arith_unary_op<SquareFn>);
HUB_REGISTER_KERNEL(Abs, cuda, arith_unary_op<AbsFn>);
HUB_REGISTER_KERNEL(Sign, cuda, arith_unary_op<SignFn>);
HUB_REGISTER_KERNEL(Sqrt, cuda, float_unary_op<SqrtFn>);
HUB_REGISTER_KERNEL(Rsqrt, cuda, float_unary_op<RsqrtFn>);
HUB_REGISTER_KERNEL(Exp, cuda, float_unary_op<ExpFn>);
HUB_REGISTER_KERNEL(Log, cuda, float_unary_op<LogFn>);
HUB_REGISTER_KERNEL(Reciprocal, cuda, float_unary_op<ReciprocalFn>);
HUB_REGISTER_KERNEL(Erf, cuda, float_unary_op<MathFn<erf_of>>);
HUB_REGISTER_KERNEL(Floor, cuda, float_unary_op<MathFn<floor_of>>);
HUB_REGISTER_KERNEL(Ceil, cuda, float_unary_op<MathFn<ceil_of>>);
HUB_REGISTER_KERNEL(Round, cuda, float_unary_op<MathFn<round_of>>);
HUB_REGISTER_KERNEL(Sin, cuda, float_unary_op<MathFn<sin_of>>);
HUB_REGISTER_KERNEL(Cos, cuda, float_unary_op<MathFn<cos_of>>);
HUB_REGISTER_KERNEL(Tan, cuda, float_unary_op<MathFn<tan_of>>);
HUB_REGISTER_KERNEL(Asin, cuda, float_unary_op<MathFn<asin_of>>);
HUB_REGISTER_KERNEL(Acos, cuda, float_unary_op<MathFn<acos_of>>);
HUB_REGISTER_KERNEL(Atan, cuda, float_unary_op<MathFn<atan_of>>);
HUB_REGISTER_KERNEL(Sinh, cuda, float_unary_op<MathFn<sinh_of>>);
HUB_REGISTER_KERNEL(Cosh, cuda, float_unary_op<MathFn<cosh_of>>);
HUB_REGISTER_KERNEL(Asinh, cuda, float_unary_op<MathFn<asinh_of>>);
HUB_REGISTER_KERNEL(Acosh, cuda, float_unary_op<MathFn<acosh_of>>);
HUB_REGISTER_KERNEL(Atanh, cuda, float_unary_op<MathFn<atanh_of>>);
HUB_REGISTER_KERNEL(Cast, cuda, cast_op);
HUB_REGISTER_KERNEL(Equal, cuda, compare_op<EqualFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(NotEqual, cuda, compare_op<NotEqualFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(Greater, cuda, compare_op<GreaterFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(GreaterEqual, cuda, compare_op<GreaterEqualFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(Less, cuda, compare_op<LessFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(LessEqual, cuda, compare_op<LessEqualFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(LogicalNot, cuda, logical_not_op);
HUB_REGISTER_KERNEL(LogicalAnd, cuda, logical_binary_op<AndFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(LogicalOr, cuda, logical_binary_op<OrFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(BroadcastLike, cuda, broadcast_like_op, supports_broadcast_like);
HUB_REGISTER_KERNEL(BroadcastTo, cuda, broadcast_to_op, supports_broadcast_to);

}  // namespace hub::cuda

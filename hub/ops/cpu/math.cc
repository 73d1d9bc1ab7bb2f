#include "hub/ops/math.h"

#include <Eigen/Core>
#include <cstring>
#include <unsupported/Eigen/SpecialFunctions>

#include "hub/ops/cpu/broadcast.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

// out = f(x) element-wise, in parallel chunks. T: x's type, U: out's type.
template <class T, class U = T, class F>
void unary(const Tensor& x, Tensor& out, F f) {
  const T* px = x.data<T>();
  U* po = out.data<U>();
  parallel_for(x.num_elements(), 16384, [&](int64_t b, int64_t e) {
    using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
    Eigen::Map<Eigen::Array<U, Eigen::Dynamic, 1>>(po + b, e - b) = f(Eigen::Map<const Arr>(px + b, e - b));
  });
}

template <class F>
void arith_unary_kernel(KernelContext& c, F f) {
  dispatch_arith(c.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    unary<T>(c.input(0), c.output(0), f);
  });
}
template <class F>
void float_unary_kernel(KernelContext& c, F f) {
  unary<float>(c.input(0), c.output(0), f);
}

void neg_kernel(KernelContext& c) {
  arith_unary_kernel(c, [](const auto& x) { return -x; });
}
void square_kernel(KernelContext& c) {
  arith_unary_kernel(c, [](const auto& x) { return x.square(); });
}
void abs_kernel(KernelContext& c) {
  arith_unary_kernel(c, [](const auto& x) { return x.abs(); });
}
void sign_kernel(KernelContext& c) {
  arith_unary_kernel(c, [](const auto& x) {
    using T = typename std::decay_t<decltype(x)>::Scalar;
    return (x > T(0)).template cast<T>() - (x < T(0)).template cast<T>();
  });
}
void sqrt_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.sqrt(); });
}
void rsqrt_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.rsqrt(); });
}
void exp_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.exp(); });
}
void log_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.log(); });
}
void reciprocal_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.inverse(); });
}

void erf_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.erf(); });
}
void floor_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.floor(); });
}
void ceil_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.ceil(); });
}
void round_kernel(KernelContext& c) {  // to nearest, halves to even (the default rounding mode)
  float_unary_kernel(c, [](const auto& x) { return x.rint(); });
}
void sin_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.sin(); });
}
void cos_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.cos(); });
}
void tan_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.tan(); });
}
void asin_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.asin(); });
}
void acos_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.acos(); });
}
void atan_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.atan(); });
}
void sinh_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.sinh(); });
}
void cosh_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.cosh(); });
}
void asinh_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.asinh(); });
}
void acosh_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.acosh(); });
}
void atanh_kernel(KernelContext& c) {
  float_unary_kernel(c, [](const auto& x) { return x.atanh(); });
}

void cast_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  DType to = c.output_spec(0).dtype;
  if (x.dtype() == to) {
    c.set_output(0, x);
    return;
  }
  Tensor& out = c.output(0);
  dispatch_dtype(x.dtype(), [&](auto from_tag) {
    using S = decltype(from_tag);
    dispatch_dtype(to, [&](auto to_tag) {
      using D = decltype(to_tag);
      unary<S, D>(x, out, [](const auto& v) { return v.template cast<D>(); });
    });
  });
}

// Comparison kernels: T over float32, int32, int64, uint8, bool; output bool.
template <class F>
void compare_kernel(KernelContext& c, F f) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    broadcast_apply<T, bool>(c.input(0), c.input(1), c.output(0), f);
  };
  if (c.input(0).dtype() == DType::kUInt8)
    run(uint8_t{});
  else if (c.input(0).dtype() == DType::kBool)
    run(bool{});
  else
    dispatch_arith(c.input(0).dtype(), run);
}
void equal_kernel(KernelContext& c) {
  compare_kernel(c, [](const auto& a, const auto& b) { return a == b; });
}
void not_equal_kernel(KernelContext& c) {
  compare_kernel(c, [](const auto& a, const auto& b) { return a != b; });
}
void greater_kernel(KernelContext& c) {
  compare_kernel(c, [](const auto& a, const auto& b) { return a > b; });
}
void greater_equal_kernel(KernelContext& c) {
  compare_kernel(c, [](const auto& a, const auto& b) { return a >= b; });
}
void less_kernel(KernelContext& c) {
  compare_kernel(c, [](const auto& a, const auto& b) { return a < b; });
}
void less_equal_kernel(KernelContext& c) {
  compare_kernel(c, [](const auto& a, const auto& b) { return a <= b; });
}

void logical_not_kernel(KernelContext& c) {
  unary<bool>(c.input(0), c.output(0), [](const auto& x) { return !x; });
}
void logical_and_kernel(KernelContext& c) {
  broadcast_apply<bool, bool>(c.input(0), c.input(1), c.output(0), [](const auto& a, const auto& b) { return a && b; });
}
void logical_or_kernel(KernelContext& c) {
  broadcast_apply<bool, bool>(c.input(0), c.input(1), c.output(0), [](const auto& a, const auto& b) { return a || b; });
}

// cond, x and y are first broadcast to z's shape where they differ from it.
void select_kernel(KernelContext& c) {
  Tensor& z = c.output(0);
  auto full = [&](int i) {
    const Tensor& t = c.input(i);
    if (t.shape() == z.shape()) return t;
    Tensor b = c.temp(t.dtype(), z.shape());
    broadcast_copy(t, b);
    return b;
  };
  const Tensor cond = full(0), x = full(1), y = full(2);
  const bool* pc = cond.data<bool>();
  dispatch_dtype(z.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* pz = z.data<T>();
    using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
    parallel_for(z.num_elements(), 16384, [&](int64_t b, int64_t e) {
      Eigen::Map<const Eigen::Array<bool, Eigen::Dynamic, 1>> when(pc + b, e - b);
      Eigen::Map<Arr>(pz + b, e - b) =
          when.select(Eigen::Map<const Arr>(px + b, e - b), Eigen::Map<const Arr>(py + b, e - b));
    });
  });
}

void broadcast_like_kernel(KernelContext& c) {
  Tensor x = c.input(0);
  const Shape& like = c.input(1).shape();
  const auto& axes_attr = c.attrs().get_ints("reduced_axes");
  if (!axes_attr.empty()) {
    std::vector<int> axes = ops::normalize_axes(axes_attr, like.rank(), "reduced_axes");
    x = x.reshaped(ops::insert_reduced_axes(x.shape(), axes));
  }
  if (x.shape() == like) {
    c.set_output(0, x);
    return;
  }
  broadcast_copy(x, c.output(0));
}

void broadcast_to_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  if (x.shape() == c.output_spec(0).shape) {
    c.set_output(0, x);
    return;
  }
  broadcast_copy(x, c.output(0));
}

}  // namespace

HUB_REGISTER_KERNEL(Neg, reference, neg_kernel);
HUB_REGISTER_KERNEL(Square, reference, square_kernel);
HUB_REGISTER_KERNEL(Abs, reference, abs_kernel);
HUB_REGISTER_KERNEL(Sign, reference, sign_kernel);
HUB_REGISTER_KERNEL(Sqrt, reference, sqrt_kernel);
HUB_REGISTER_KERNEL(Rsqrt, reference, rsqrt_kernel);
HUB_REGISTER_KERNEL(Exp, reference, exp_kernel);
HUB_REGISTER_KERNEL(Log, reference, log_kernel);
HUB_REGISTER_KERNEL(Reciprocal, reference, reciprocal_kernel);
HUB_REGISTER_KERNEL(Erf, reference, erf_kernel);
HUB_REGISTER_KERNEL(Floor, reference, floor_kernel);
HUB_REGISTER_KERNEL(Ceil, reference, ceil_kernel);
HUB_REGISTER_KERNEL(Round, reference, round_kernel);
HUB_REGISTER_KERNEL(Sin, reference, sin_kernel);
HUB_REGISTER_KERNEL(Cos, reference, cos_kernel);
HUB_REGISTER_KERNEL(Tan, reference, tan_kernel);
HUB_REGISTER_KERNEL(Asin, reference, asin_kernel);
HUB_REGISTER_KERNEL(Acos, reference, acos_kernel);
HUB_REGISTER_KERNEL(Atan, reference, atan_kernel);
HUB_REGISTER_KERNEL(Sinh, reference, sinh_kernel);
HUB_REGISTER_KERNEL(Cosh, reference, cosh_kernel);
HUB_REGISTER_KERNEL(Asinh, reference, asinh_kernel);
HUB_REGISTER_KERNEL(Acosh, reference, acosh_kernel);
HUB_REGISTER_KERNEL(Atanh, reference, atanh_kernel);
HUB_REGISTER_KERNEL(Cast, reference, cast_kernel);
HUB_REGISTER_KERNEL(Equal, reference, equal_kernel);
HUB_REGISTER_KERNEL(NotEqual, reference, not_equal_kernel);
HUB_REGISTER_KERNEL(Greater, reference, greater_kernel);
HUB_REGISTER_KERNEL(GreaterEqual, reference, greater_equal_kernel);
HUB_REGISTER_KERNEL(Less, reference, less_kernel);
HUB_REGISTER_KERNEL(LessEqual, reference, less_equal_kernel);
HUB_REGISTER_KERNEL(LogicalNot, reference, logical_not_kernel);
HUB_REGISTER_KERNEL(LogicalAnd, reference, logical_and_kernel);
HUB_REGISTER_KERNEL(LogicalOr, reference, logical_or_kernel);
HUB_REGISTER_KERNEL(Select, reference, select_kernel);
HUB_REGISTER_KERNEL(BroadcastLike, reference, broadcast_like_kernel);
HUB_REGISTER_KERNEL(BroadcastTo, reference, broadcast_to_kernel);

}  // namespace hub::cpu

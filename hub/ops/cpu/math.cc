#include "hub/ops/math.h"

#include <Eigen/Core>
#include <cstring>

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

// Comparison kernels: T over float32, int32, int64, uint8; output bool.
template <class F>
void compare_kernel(KernelContext& c, F f) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    broadcast_apply<T, bool>(c.input(0), c.input(1), c.output(0), f);
  };
  if (c.input(0).dtype() == DType::kUInt8)
    run(uint8_t{});
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
HUB_REGISTER_KERNEL(Cast, reference, cast_kernel);
HUB_REGISTER_KERNEL(Equal, reference, equal_kernel);
HUB_REGISTER_KERNEL(NotEqual, reference, not_equal_kernel);
HUB_REGISTER_KERNEL(Greater, reference, greater_kernel);
HUB_REGISTER_KERNEL(GreaterEqual, reference, greater_equal_kernel);
HUB_REGISTER_KERNEL(Less, reference, less_kernel);
HUB_REGISTER_KERNEL(LessEqual, reference, less_equal_kernel);
HUB_REGISTER_KERNEL(BroadcastLike, reference, broadcast_like_kernel);
HUB_REGISTER_KERNEL(BroadcastTo, reference, broadcast_to_kernel);

}  // namespace hub::cpu

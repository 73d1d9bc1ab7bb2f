#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "hub/ops/cpu/broadcast.h"
#include "hub/ops/node.h"
#include "hub/ops/registry.h"

namespace hub::cpu {

BroadcastPlan plan_broadcast(const Shape& a, const Shape& b, const Shape& out) {
  int r = out.rank();
  // Per output dim: size, a's size (1 if absent), b's size.
  std::vector<int64_t> od, ad, bd;
  for (int i = 0; i < r; ++i) {
    int ia = a.rank() - r + i, ib = b.rank() - r + i;
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (out[i] == 1) continue;  // size-1 output dims do not matter
    od.push_back(out[i]);
    ad.push_back(sa);
    bd.push_back(sb);
  }
  // Merge adjacent dims with the same pattern (operand full or broadcast).
  std::vector<int64_t> mo, ma, mb;
  for (size_t i = 0; i < od.size(); ++i) {
    bool fa = ad[i] != 1, fb = bd[i] != 1;
    if (!mo.empty() && (ma.back() != 1) == fa && (mb.back() != 1) == fb) {
      mo.back() *= od[i];
      ma.back() *= ad[i];
      mb.back() *= bd[i];
    } else {
      mo.push_back(od[i]);
      ma.push_back(ad[i]);
      mb.push_back(bd[i]);
    }
  }
  BroadcastPlan p;
  if (mo.empty()) return p;  // one element
  p.inner = mo.back();
  p.a_inner = ma.back() != 1;
  p.b_inner = mb.back() != 1;
  int m = static_cast<int>(mo.size()) - 1;
  p.out_dims.assign(mo.begin(), mo.begin() + m);
  p.a_strides.resize(m);
  p.b_strides.resize(m);
  int64_t sa = p.a_inner ? p.inner : 1, sb = p.b_inner ? p.inner : 1;
  for (int i = m - 1; i >= 0; --i) {
    p.a_strides[i] = ma[i] != 1 ? sa : 0;
    p.b_strides[i] = mb[i] != 1 ? sb : 0;
    if (ma[i] != 1) sa *= ma[i];
    if (mb[i] != 1) sb *= mb[i];
    p.outer *= mo[i];
  }
  return p;
}

void BroadcastPlan::offsets(int64_t row, int64_t* a_off, int64_t* b_off) const {
  int64_t ao = 0, bo = 0;
  for (int i = static_cast<int>(out_dims.size()) - 1; i >= 0; --i) {
    int64_t idx = row % out_dims[i];
    row /= out_dims[i];
    ao += idx * a_strides[i];
    bo += idx * b_strides[i];
  }
  *a_off = ao;
  *b_off = bo;
}

void broadcast_copy(const Tensor& x, Tensor& out) {
  auto as = [](const Tensor& t, DType d) { return Tensor(d, t.shape(), t.storage(), t.offset()); };
  auto run = [&](auto tag, DType d) {
    using T = decltype(tag);
    Tensor o = as(out, d);
    broadcast_apply<T, T>(as(x, d), as(x, d), o, [](const auto& a, const auto&) { return a; });
  };
  switch (dtype_size(x.dtype())) {
    case 1:
      return run(uint8_t{}, DType::kUInt8);
    case 4:
      return run(int32_t{}, DType::kInt32);
    case 8:
      return run(int64_t{}, DType::kInt64);
    default:
      throw_error(Code::kUnimplemented, "broadcast of " + x.spec_string());
  }
}

namespace {

template <class F>
void binary_kernel(KernelContext& c, F f) {
  dispatch_arith(c.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    broadcast_apply<T, T>(c.input(0), c.input(1), c.output(0), f);
  });
}

void add_kernel(KernelContext& c) {
  binary_kernel(c, [](const auto& a, const auto& b) { return a + b; });
}
void sub_kernel(KernelContext& c) {
  binary_kernel(c, [](const auto& a, const auto& b) { return a - b; });
}
void mul_kernel(KernelContext& c) {
  binary_kernel(c, [](const auto& a, const auto& b) { return a * b; });
}
// An integer divisor of 0 is an error naming the node (it traps on x86).
void check_integer_divisor(const KernelContext& c) {
  const Tensor& b = c.input(1);
  if (b.dtype() == DType::kFloat32) return;
  dispatch_arith(b.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = b.data<T>();
    const T* zero = std::find(p, p + b.num_elements(), T(0));
    if (zero != p + b.num_elements())
      throw_error(Code::kInvalidArgument, "node '" + c.node().name + "' (" + c.node().op +
                                              "): integer division by zero (divisor " + b.spec_string() +
                                              " is 0 at flat position " + std::to_string(zero - p) + ")");
  });
}

// Integer quotient and remainder as C's (truncating), also where C++ leaves
// them undefined (and x86 traps): MIN / -1 wraps to MIN and MIN % -1 is 0.
template <class T>
T int_quotient(T a, T b) {
  return b == T(-1) ? static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(a)) : a / b;
}
template <class T>
T int_remainder(T a, T b) {
  return b == T(-1) ? T(0) : a % b;
}

void div_kernel(KernelContext& c) {
  check_integer_divisor(c);
  dispatch_arith(c.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    broadcast_apply<T, T>(c.input(0), c.input(1), c.output(0), [](const auto& a, const auto& b) {
      if constexpr (std::is_floating_point_v<T>)
        return a / b;
      else
        return a.binaryExpr(b, [](T x, T y) { return int_quotient(x, y); });
    });
  });
}

// The remainder with the divisor's sign, or (kTruncate) with the dividend's.
template <bool kTruncate>
void mod_kernel(KernelContext& c) {
  check_integer_divisor(c);
  dispatch_arith(c.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    broadcast_apply<T, T>(c.input(0), c.input(1), c.output(0), [](const auto& a, const auto& b) {
      return a.binaryExpr(b, [](T x, T y) {
        T r;
        if constexpr (std::is_floating_point_v<T>)
          r = std::fmod(x, y);
        else
          r = int_remainder(x, y);
        if (!kTruncate && r != T(0) && (r < T(0)) != (y < T(0))) r += y;
        return r;
      });
    });
  });
}

void mod_dispatch_kernel(KernelContext& c) {
  if (c.attrs().get_bool("truncate"))
    mod_kernel<true>(c);
  else
    mod_kernel<false>(c);
}
void maximum_kernel(KernelContext& c) {
  binary_kernel(c, [](const auto& a, const auto& b) { return a.max(b); });
}
void minimum_kernel(KernelContext& c) {
  binary_kernel(c, [](const auto& a, const auto& b) { return a.min(b); });
}

// std::pow element by element (its special cases are the documented ones).
struct PowFn {
  float operator()(float a, float b) const { return std::pow(a, b); }
};

void pow_kernel(KernelContext& c) {
  broadcast_apply<float, float>(c.input(0), c.input(1), c.output(0),
                                [](const auto& a, const auto& b) { return a.binaryExpr(b, PowFn{}); });
}

// (g * b * a^(b-1), g * a^b * ln a masked to 0 where a <= 0) at g's shape.
void pow_grad_kernel(KernelContext& c) {
  const Tensor& g = c.input(0);
  // a and b broadcast to g's shape.
  Tensor a = c.temp(DType::kFloat32, g.shape()), b = c.temp(DType::kFloat32, g.shape());
  broadcast_apply<float, float>(c.input(1), c.input(2), a, [](const auto& x, const auto&) { return x; });
  broadcast_apply<float, float>(c.input(1), c.input(2), b, [](const auto&, const auto& y) { return y; });
  using Arr = Eigen::ArrayXf;
  // Both outputs allocated here, once: output() allocates lazily, so calling
  // it inside the parallel loop raced (threads wrote into buffers then lost).
  float* da = c.output(0).data<float>();
  float* db = c.output(1).data<float>();
  parallel_for(g.num_elements(), 16384, [&](int64_t lo, int64_t hi) {
    int64_t n = hi - lo;
    Eigen::Map<const Arr> gv(g.data<float>() + lo, n), av(a.data<float>() + lo, n), bv(b.data<float>() + lo, n);
    Eigen::Map<Arr>(da + lo, n) = gv * bv * av.binaryExpr(bv - 1.0f, PowFn{});
    Eigen::Map<Arr>(db + lo, n) = (av > 0.0f).select(gv * av.binaryExpr(bv, PowFn{}) * av.log(), 0.0f);
  });
}

// (g*[a OP b], g*[!(a OP b)]) at g's shape; a and b broadcast to g.
template <bool kMax>
void select_grad_kernel(KernelContext& c) {
  const Tensor& g = c.input(0);
  dispatch_arith(g.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // mask = [a >= b] (max) or [a <= b] (min), as T.
    Tensor mask = c.temp(g.dtype(), g.shape());
    broadcast_apply<T, T>(c.input(1), c.input(2), mask, [](const auto& a, const auto& b) {
      if constexpr (kMax)
        return (a >= b).template cast<T>();
      else
        return (a <= b).template cast<T>();
    });
    int64_t n = g.num_elements();
    Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> gv(g.data<T>(), n), mv(mask.data<T>(), n);
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(c.output(0).template data<T>(), n) = gv * mv;
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(c.output(1).template data<T>(), n) = gv * (T(1) - mv);
  });
}

void add_n_kernel(KernelContext& c) {
  dispatch_arith(c.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Map = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
    Tensor& out = c.output(0);
    int64_t n = out.num_elements();
    T* o = out.data<T>();
    parallel_for(n, 16384, [&](int64_t b, int64_t e) {
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> ov(o + b, e - b);
      ov = Map(c.input(0).data<T>() + b, e - b);
      for (int i = 1; i < c.num_inputs(); ++i) ov += Map(c.input(i).data<T>() + b, e - b);
    });
  });
}

// Sums x over the dims where `like` has size 1 (or is absent).
void reduce_to_like_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Shape& target = c.input(1).shape();
  if (x.shape() == target) {
    c.set_output(0, x);
    return;
  }
  dispatch_arith(x.dtype(), [&](auto tag) { sum_to_shape<decltype(tag)>(x, c.output(0)); });
}

void identity_kernel(KernelContext& c) { c.set_output(0, c.input(0)); }

void fill_kernel(KernelContext& c, double value) {
  Tensor& out = c.output(0);
  out.fill(value);
}
void zeros_like_kernel(KernelContext& c) { fill_kernel(c, 0.0); }
void ones_like_kernel(KernelContext& c) { fill_kernel(c, 1.0); }

}  // namespace

HUB_REGISTER_KERNEL(Add, reference, add_kernel);
HUB_REGISTER_KERNEL(Sub, reference, sub_kernel);
HUB_REGISTER_KERNEL(Mul, reference, mul_kernel);
HUB_REGISTER_KERNEL(Div, reference, div_kernel);
HUB_REGISTER_KERNEL(Mod, reference, mod_dispatch_kernel);
HUB_REGISTER_KERNEL(Maximum, reference, maximum_kernel);
HUB_REGISTER_KERNEL(Minimum, reference, minimum_kernel);
HUB_REGISTER_KERNEL(Pow, reference, pow_kernel);
HUB_REGISTER_KERNEL(PowGrad, reference, pow_grad_kernel);
HUB_REGISTER_KERNEL(MaximumGrad, reference, select_grad_kernel<true>);
HUB_REGISTER_KERNEL(MinimumGrad, reference, select_grad_kernel<false>);
HUB_REGISTER_KERNEL(AddN, reference, add_n_kernel);
HUB_REGISTER_KERNEL(ReduceToLike, reference, reduce_to_like_kernel);
HUB_REGISTER_KERNEL(Identity, reference, identity_kernel);
HUB_REGISTER_KERNEL(StopGradient, reference, identity_kernel);
HUB_REGISTER_KERNEL(ZerosLike, reference, zeros_like_kernel);
HUB_REGISTER_KERNEL(OnesLike, reference, ones_like_kernel);

}  // namespace hub::cpu

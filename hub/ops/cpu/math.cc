#include <Eigen/Core>

#include "hub/ops/cpu/broadcast.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

// out = f(x) element-wise, in parallel chunks.
template <class T, class F> void unary(const Tensor& x, Tensor& out, F f) {
  const T* px = x.data<T>();
  T* po = out.data<T>();
  parallel_for(x.num_elements(), 16384, [&](int64_t b, int64_t e) {
    using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
    Eigen::Map<Arr>(po + b, e - b) = f(Eigen::Map<const Arr>(px + b, e - b));
  });
}

void neg_kernel(KernelContext& c) {
  dispatch_arith(c.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    unary<T>(c.input(0), c.output(0), [](const auto& x) { return -x; });
  });
}

}  // namespace

HUB_REGISTER_KERNEL(Neg, kReference, neg_kernel);

}  // namespace hub::cpu

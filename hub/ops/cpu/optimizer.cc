// Reference kernels of the optimizer update ops (formulas in
// hub/ops/optimizer.h): Eigen arrays over chunks of the variable, the chunks
// on all cores.
#include <Eigen/Core>
#include <cmath>
#include <vector>

#include "hub/core/parallel.h"
#include "hub/ops/registry.h"

namespace hub {
namespace {

using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;
using Map = Eigen::Map<Arr>;
using CMap = Eigen::Map<const Arr>;

constexpr int64_t kGrain = 16384;

float attr(const KernelContext& c, const char* name) { return static_cast<float>(c.attrs().get_float(name)); }

// Calls rule(w, g, slots, n) on disjoint chunks of the variable (in place),
// and makes output 0 the variable itself.
template <class Rule>
void update(KernelContext& c, Rule rule) {
  Tensor w = c.input(0);
  std::vector<Tensor> slot_tensors;
  for (int i = 2; i < c.num_inputs(); ++i) slot_tensors.push_back(c.input(i));
  float* pw = w.data<float>();
  const float* pg = c.input(1).data<float>();
  std::vector<float*> slots;
  for (Tensor& t : slot_tensors) slots.push_back(t.data<float>());
  parallel_for(w.num_elements(), kGrain, [&](int64_t b, int64_t e) {
    std::vector<float*> local(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) local[i] = slots[i] + b;
    rule(Map(pw + b, e - b), CMap(pg + b, e - b), local.data(), e - b);
  });
  c.set_output(0, w);
}

void gradient_descent(KernelContext& c) {
  const float lr = attr(c, "lr");
  update(c, [&](Map w, CMap g, float* const*, int64_t) { w -= lr * g; });
}

void momentum(KernelContext& c) {
  const float lr = attr(c, "lr"), m = attr(c, "momentum");
  const bool nesterov = c.attrs().get_bool("use_nesterov");
  update(c, [&](Map w, CMap g, float* const* s, int64_t n) {
    Map a(s[0], n);
    a = a * m + g;
    if (nesterov)
      w -= g * lr + a * (m * lr);
    else
      w -= lr * a;
  });
}

void rmsprop(KernelContext& c) {
  const float lr = attr(c, "lr"), decay = attr(c, "decay"), m = attr(c, "momentum"), eps = attr(c, "epsilon");
  update(c, [&](Map w, CMap g, float* const* s, int64_t n) {
    Map ms(s[0], n), mom(s[1], n);
    ms += (g.square() - ms) * (1.0f - decay);
    mom = mom * m + g * lr / (ms + eps).sqrt();
    w -= mom;
  });
}

void adam(KernelContext& c) {
  const float lr = attr(c, "lr"), b1 = attr(c, "beta1"), b2 = attr(c, "beta2"), eps = attr(c, "epsilon");
  update(c, [&](Map w, CMap g, float* const* s, int64_t n) {
    Map m(s[0], n), v(s[1], n);
    m += (g - m) * (1.0f - b1);
    v += (g.square() - v) * (1.0f - b2);
    w -= m * lr / (v.sqrt() + eps);
  });
}

void adagrad(KernelContext& c) {
  const float lr = attr(c, "lr");
  update(c, [&](Map w, CMap g, float* const* s, int64_t n) {
    Map acc(s[0], n);
    acc += g.square();
    w -= g * lr * acc.rsqrt();
  });
}

void adadelta(KernelContext& c) {
  const float lr = attr(c, "lr"), rho = attr(c, "rho"), eps = attr(c, "epsilon");
  update(c, [&](Map w, CMap g, float* const* s, int64_t n) {
    Map acc(s[0], n), acc_u(s[1], n);
    acc = acc * rho + g.square() * (1.0f - rho);
    Arr u = (acc_u + eps).sqrt() * (acc + eps).rsqrt() * g;
    acc_u = acc_u * rho + u.square() * (1.0f - rho);
    w -= u * lr;
  });
}

void ftrl(KernelContext& c) {
  const float lr = attr(c, "lr"), p = attr(c, "lr_power"), l1 = attr(c, "l1"), l2 = attr(c, "l2");
  update(c, [&](Map w, CMap g, float* const* s, int64_t n) {
    Map acc(s[0], n), lin(s[1], n);
    if (p == -0.5f) {  // the default: square roots instead of pow
      lin += g - ((acc + g.square()).sqrt() - acc.sqrt()) / lr * w;
      acc += g.square();
      Arr y = acc.sqrt() / lr + 2.0f * l2;
      w = (lin.abs() > l1).select((l1 * lin.sign() - lin) / y, 0.0f);
    } else {
      lin += g - ((acc + g.square()).pow(-p) - acc.pow(-p)) / lr * w;
      acc += g.square();
      Arr y = acc.pow(-p) / lr + 2.0f * l2;
      w = (lin.abs() > l1).select((l1 * lin.sign() - lin) / y, 0.0f);
    }
  });
}

}  // namespace

HUB_REGISTER_KERNEL(ApplyGradientDescent, reference, gradient_descent);
HUB_REGISTER_KERNEL(ApplyMomentum, reference, momentum);
HUB_REGISTER_KERNEL(ApplyRMSProp, reference, rmsprop);
HUB_REGISTER_KERNEL(ApplyAdam, reference, adam);
HUB_REGISTER_KERNEL(ApplyAdagrad, reference, adagrad);
HUB_REGISTER_KERNEL(ApplyAdadelta, reference, adadelta);
HUB_REGISTER_KERNEL(ApplyFtrl, reference, ftrl);

}  // namespace hub

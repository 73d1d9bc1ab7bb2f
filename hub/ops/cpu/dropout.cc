#include <Eigen/Core>

#include "hub/core/parallel.h"
#include "hub/core/random.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

void dropout_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  double rate = c.attrs().get_float("rate");
  float keep = static_cast<float>(1.0 - rate);
  float scale = static_cast<float>(1.0 / (1.0 - rate));
  Philox rng(mix_seed(c.seed(), static_cast<uint64_t>(c.attrs().get_int("seed"))));
  const float* px = x.data<float>();
  float* py = c.output(0).data<float>();
  float* pm = c.output(1).data<float>();
  parallel_for(x.num_elements(), 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) pm[i] = rng.uniform(static_cast<uint64_t>(i)) < keep ? 1.0f : 0.0f;
    using Map = Eigen::Map<const Eigen::ArrayXf>;
    Eigen::Map<Eigen::ArrayXf>(py + b, e - b) = Map(px + b, e - b) * Map(pm + b, e - b) * scale;
  });
}

}  // namespace

HUB_REGISTER_KERNEL(Dropout, reference, dropout_kernel);

}  // namespace hub::cpu

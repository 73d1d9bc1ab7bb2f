// Reference kernels for Resize and ResizeGrad: hub::resample_nhwc and its
// adjoint (hub/core/resample.cc: whole-row Eigen lerps, channel-vector
// scatters) on the plan of hub::ops::resize_plan.
#include "hub/ops/resize.h"

#include "hub/core/resample.h"
#include "hub/ops/registry.h"

namespace hub::cpu {

namespace {

void resize_kernel(KernelContext& c) {
  const Shape& s = c.input(0).shape();
  resample_nhwc(c.input(0).data<float>(), s[0], s[1], s[2], s[3], ops::resize_plan(c.attrs(), s[1], s[2]),
                c.output(0).data<float>());
}

void resize_grad_kernel(KernelContext& c) {
  const Shape& s = c.input(0).shape();
  resample_nhwc_grad(c.input(1).data<float>(), s[0], s[1], s[2], s[3], ops::resize_plan(c.attrs(), s[1], s[2]),
                     c.output(0).data<float>());
}

}  // namespace

HUB_REGISTER_KERNEL(Resize, reference, resize_kernel);
HUB_REGISTER_KERNEL(ResizeGrad, reference, resize_grad_kernel);

}  // namespace hub::cpu

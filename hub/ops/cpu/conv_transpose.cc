// Reference kernel for Conv2DTranspose: the backprop-input of the convolution
// whose geometry conv_transpose_geometry gives (hub/ops/conv_transpose.h),
// run by the same im2col/col2im routine as Conv2DBackpropInput.
#include "hub/ops/conv_transpose.h"

#include "hub/core/error.h"
#include "hub/ops/cpu/conv2d.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

void conv_transpose_kernel(KernelContext& c) {
  ops::ConvGeometry g;
  std::string error = ops::conv_transpose_geometry(c.input(0).shape(), c.input(1).shape(), c.attrs(), &g);
  HUB_CHECK(error.empty(), error);
  conv2d_backprop_input(c, g, c.input(1).data<float>(), c.input(0).data<float>(), c.output(0).data<float>());
}

}  // namespace

HUB_REGISTER_KERNEL(Conv2DTranspose, reference, conv_transpose_kernel);

}  // namespace hub::cpu

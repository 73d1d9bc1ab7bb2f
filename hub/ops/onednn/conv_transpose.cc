// oneDNN kernel for Conv2DTranspose: the backward-data primitive of the
// convolution whose geometry conv_transpose_geometry gives
// (hub/ops/conv_transpose.h), as Conv2DBackpropInput runs it, with the same
// rule for when that primitive is worthwhile (hub/ops/onednn/conv2d.h).
#include "hub/ops/conv_transpose.h"

#include "hub/core/error.h"
#include "hub/ops/onednn/common.h"
#include "hub/ops/onednn/conv2d.h"

namespace hub::onednn {
namespace {

void conv_transpose(KernelContext& c) {
  ops::ConvGeometry g;
  std::string error = ops::conv_transpose_geometry(c.input(0).shape(), c.input(1).shape(), c.attrs(), &g);
  HUB_CHECK(error.empty(), error);
  conv2d_backward_data(c, g, c.input(1), c.input(0));
}

bool supports(const Node&, const std::vector<TensorSpec>& inputs) { return backward_data_worthwhile(inputs, 1); }

}  // namespace

HUB_REGISTER_KERNEL(Conv2DTranspose, onednn, guarded<conv_transpose>, supports);

}  // namespace hub::onednn

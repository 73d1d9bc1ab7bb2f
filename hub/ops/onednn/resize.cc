// oneDNN kernels for Resize and ResizeGrad: resampling_linear, whose source
// coordinate is (x + 0.5) * L / O - 0.5 clamped to [0, L-1] with linear
// weights, is Resize's linear mode with half_pixel coordinates (and
// pytorch_half_pixel where both output sizes exceed 1) and the default scales
// (evaluated in float: its weights agree with the reference to float
// rounding). Everything else runs on the reference kernel: oneDNN's
// resampling_nearest rounds a float coordinate half away from zero, which
// matches none of Resize's nearest modes at every size.
#include "hub/ops/resize.h"

#include <string>

#include "hub/ops/onednn/common.h"

namespace hub::onednn {
namespace {

struct Resampling {
  dnnl::resampling_forward::primitive_desc fwd_pd;
  dnnl::resampling_forward fwd;
  dnnl::resampling_backward::primitive_desc bwd_pd;
  dnnl::resampling_backward bwd;
};

// The primitives for input (x) and output (y) of one Resize shape.
std::shared_ptr<Resampling> primitives(const dims& x, const dims& y) {
  return cached_as<Resampling>("resize:" + key_of(x) + "|" + key_of(y), [&] {
    const dnnl::memory::desc src = desc(x, tag::nhwc), dst = desc(y, tag::nhwc);
    dnnl::resampling_forward::primitive_desc fwd_pd(
        dnnl::resampling_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::resampling_linear, src, dst),
        engine());
    dnnl::resampling_backward::primitive_desc bwd_pd(
        dnnl::resampling_backward::desc(dnnl::algorithm::resampling_linear, src, dst), engine(), fwd_pd);
    return std::make_shared<Resampling>(
        Resampling{fwd_pd, dnnl::resampling_forward(fwd_pd), bwd_pd, dnnl::resampling_backward(bwd_pd)});
  });
}

dims nchw_dims(const Shape& s) { return {s[0], s[3], s[1], s[2]}; }

void resize(KernelContext& c) {
  const dims x = nchw_dims(c.input(0).shape()), y = nchw_dims(c.output_spec(0).shape);
  auto p = primitives(x, y);
  execute(p->fwd,
          {{DNNL_ARG_SRC, memory(c.input(0), x, tag::nhwc)}, {DNNL_ARG_DST, memory(c.output(0), y, tag::nhwc)}});
}

void resize_grad(KernelContext& c) {
  const dims x = nchw_dims(c.input(0).shape()), y = nchw_dims(c.input(1).shape());
  auto p = primitives(x, y);
  execute(p->bwd, {{DNNL_ARG_DIFF_DST, memory(c.input(1), y, tag::nhwc)},
                   {DNNL_ARG_DIFF_SRC, memory(c.output(0), x, tag::nhwc)}});
}

bool supports(const Node& node, const std::vector<TensorSpec>& inputs) {
  if (!float32_nonempty(inputs, 4)) return false;
  const Attrs& a = node.attrs;
  if (a.get_string("mode") != "linear" || !a.get_floats("scales").empty()) return false;
  const std::string& coordinates = a.get_string("coordinate_transformation_mode");
  // (A run-time size, 0, could be 1: pytorch_half_pixel then differs.)
  const std::vector<int64_t>& size = a.get_ints("size");
  return coordinates == "half_pixel" || (coordinates == "pytorch_half_pixel" && size[0] > 1 && size[1] > 1);
}

}  // namespace

HUB_REGISTER_KERNEL(Resize, onednn, guarded<resize>, supports);
HUB_REGISTER_KERNEL(ResizeGrad, onednn, guarded<resize_grad>, supports);

}  // namespace hub::onednn

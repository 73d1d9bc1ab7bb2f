// oneDNN Softmax and LogSoftmax (float32) on any axis: x is viewed as
// [A, R, B] with R the softmax axis (dims before and after it merged), so one
// primitive per (op, A, R, B) covers every rank; cached.
#include <memory>

#include "hub/ops/node.h"
#include "hub/ops/onednn/common.h"
#include "hub/ops/registry.h"

namespace hub::onednn {
namespace {

dims view_of(const Tensor& x, int64_t axis) {
  if (axis < 0) axis += x.rank();
  dims d{1, x.dim(static_cast<int>(axis)), 1};
  for (int i = 0; i < x.rank(); ++i)
    if (i != axis) d[i < axis ? 0 : 2] *= x.dim(i);
  return d;
}

template <class Prim>
void softmax_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  dims d = view_of(x, c.attrs().get_int("axis"));
  auto prim = cached_as<Prim>(
      std::string(std::is_same_v<Prim, dnnl::softmax_forward> ? "softmax:" : "logsoftmax:") + key_of(d), [&] {
        typename Prim::desc fd(dnnl::prop_kind::forward_inference, desc(d, tag::abc), 1);
        return std::make_shared<Prim>(typename Prim::primitive_desc(fd, engine()));
      });
  execute(*prim, {{DNNL_ARG_SRC, memory(x, d, tag::abc)}, {DNNL_ARG_DST, memory(c.output(0), d, tag::abc)}});
}

bool supports(const Node&, const std::vector<TensorSpec>& inputs) {
  return inputs[0].shape.is_fully_defined() && float32_nonempty(inputs);
}

}  // namespace

HUB_REGISTER_KERNEL(Softmax, onednn, guarded<softmax_kernel<dnnl::softmax_forward>>, supports);
HUB_REGISTER_KERNEL(LogSoftmax, onednn, guarded<softmax_kernel<dnnl::logsoftmax_forward>>, supports);

}  // namespace hub::onednn

// oneDNN MatMul (float32): one dnnl::matmul primitive per (M, K, N,
// transpose_a, transpose_b), cached. Transposed operands are described by
// their memory format (tag ba = the logical matrix stored column-major), so no
// operand is copied.
#include "hub/ops/node.h"
#include "hub/ops/onednn/common.h"
#include "hub/ops/registry.h"

namespace hub::onednn {
namespace {

bool matmul_supports(const Node& node, const std::vector<TensorSpec>& inputs) {
  (void)node;
  for (const TensorSpec& s : inputs)
    if (s.dtype != DType::kFloat32 || s.shape.rank() != 2) return false;
  return true;
}

void matmul_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  Tensor& out = c.output(0);
  bool ta = c.attrs().get_bool("transpose_a"), tb = c.attrs().get_bool("transpose_b");
  int64_t m = out.dim(0), n = out.dim(1), k = ta ? a.dim(0) : a.dim(1);
  if (out.num_elements() == 0) return;
  if (k == 0) {
    out.fill(0.0);
    return;
  }
  dims src_d{m, k}, wei_d{k, n}, dst_d{m, n};
  tag src_tag = ta ? tag::ba : tag::ab, wei_tag = tb ? tag::ba : tag::ab;
  std::string key = "matmul:" + key_of({m, k, n}) + (ta ? "T" : "N") + (tb ? "T" : "N");
  auto prim = cached_as<dnnl::matmul>(key, [&] {
    dnnl::matmul::desc d(desc(src_d, src_tag), desc(wei_d, wei_tag), desc(dst_d, tag::ab));
    return std::make_shared<dnnl::matmul>(dnnl::matmul::primitive_desc(d, engine()));
  });
  dnnl::memory src = memory(a, src_d, src_tag);
  dnnl::memory wei = memory(b, wei_d, wei_tag);
  dnnl::memory dst = memory(out, dst_d, tag::ab);
  execute(*prim, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
}

}  // namespace

HUB_REGISTER_KERNEL(MatMul, onednn, guarded<matmul_kernel>, matmul_supports);

}  // namespace hub::onednn

// oneDNN MatMul and BatchMatMul (float32): one dnnl::matmul primitive per
// (operand shapes, transposes), cached. Both operands are padded with leading
// 1s to the output's rank; a size-1 batch dim against a larger one is
// oneDNN's batch broadcast. A transposed operand is described by its strides
// (the logical matrix stored column-major), so no operand is copied.
#include "hub/ops/node.h"
#include "hub/ops/onednn/common.h"
#include "hub/ops/registry.h"

namespace hub::onednn {
namespace {

// Float32 with every dim known and positive (empty products and K = 0 run on
// reference; the output is then non-empty too), rank within oneDNN's limit.
bool supports(const Node&, const std::vector<TensorSpec>& inputs) {
  for (const TensorSpec& s : inputs)
    if (!s.shape.is_fully_defined() || s.shape.rank() > DNNL_MAX_NDIMS) return false;
  return float32_nonempty(inputs);
}

// t's logical dims (as op(t), padded to `rank`) and strides.
dnnl::memory::desc operand_desc(const Tensor& t, int rank, bool transposed) {
  dims d(rank, 1), strides(rank, 0);
  int off = rank - t.rank();
  int64_t stride = 1;
  for (int i = t.rank() - 1; i >= 0; --i) {
    d[off + i] = t.dim(i);
    strides[off + i] = stride;
    stride *= t.dim(i);
  }
  for (int i = 0; i < off; ++i) strides[i] = stride;
  if (transposed) {
    std::swap(d[rank - 1], d[rank - 2]);
    std::swap(strides[rank - 1], strides[rank - 2]);
  }
  return dnnl::memory::desc(d, dt::f32, strides);
}

void gemm(KernelContext& c, bool ta, bool tb) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  Tensor& out = c.output(0);
  int r = out.rank();
  std::string key =
      "matmul:" + key_of(to_dims(a.shape())) + ":" + key_of(to_dims(b.shape())) + (ta ? "T" : "N") + (tb ? "T" : "N");
  dnnl::memory::desc src = operand_desc(a, r, ta), wei = operand_desc(b, r, tb), dst = operand_desc(out, r, false);
  auto prim = cached_as<dnnl::matmul>(key, [&] {
    dnnl::matmul::desc d(src, wei, dst);
    return std::make_shared<dnnl::matmul>(dnnl::matmul::primitive_desc(d, engine()));
  });
  auto mem = [](const dnnl::memory::desc& md, const Tensor& t) {
    return dnnl::memory(md, engine(), const_cast<void*>(t.raw_data()));
  };
  execute(*prim, {{DNNL_ARG_SRC, mem(src, a)}, {DNNL_ARG_WEIGHTS, mem(wei, b)}, {DNNL_ARG_DST, mem(dst, out)}});
}

void matmul_kernel(KernelContext& c) { gemm(c, c.attrs().get_bool("transpose_a"), c.attrs().get_bool("transpose_b")); }
void batch_matmul_kernel(KernelContext& c) { gemm(c, c.attrs().get_bool("adj_x"), c.attrs().get_bool("adj_y")); }

}  // namespace

HUB_REGISTER_KERNEL(MatMul, onednn, guarded<matmul_kernel>, supports);
HUB_REGISTER_KERNEL(BatchMatMul, onednn, guarded<batch_matmul_kernel>, supports);

}  // namespace hub::onednn

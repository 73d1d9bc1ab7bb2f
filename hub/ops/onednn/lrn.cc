// oneDNN LRN across channels (NHWC as oneDNN's nhwc layout, float32).
// oneDNN normalizes by (k + alpha/n * sum x^2)^beta with n = local_size, so
// TF's (depth_radius r, bias, alpha, beta) map to local_size = 2r+1, k = bias,
// alpha_onednn = alpha * n. The backward may need the forward's workspace,
// which ops do not carry between nodes: LRNGrad re-runs the forward for it.
#include <string>

#include "hub/graph/graph.h"
#include "hub/ops/onednn/common.h"
#include "hub/ops/registry.h"

namespace hub::onednn {
namespace {

struct Params {
  dims data;
  dnnl::memory::dim n;
  float k, alpha, beta;
  std::string key;
};

Params params_of(const KernelContext& c, const char* op) {
  const Attrs& a = c.attrs();
  const Shape& s = c.input(0).shape();
  Params p;
  p.data = {s[0], s[3], s[1], s[2]};
  p.n = 2 * a.get_int("depth_radius") + 1;
  p.k = static_cast<float>(a.get_float("bias"));
  p.alpha = static_cast<float>(a.get_float("alpha") * static_cast<double>(p.n));
  p.beta = static_cast<float>(a.get_float("beta"));
  p.key = std::string(op) + ":" + key_of(p.data) + std::to_string(p.n) + "," + std::to_string(p.k) + "," +
          std::to_string(p.alpha) + "," + std::to_string(p.beta);
  return p;
}

dnnl::lrn_forward::desc forward_desc(const Params& p, dnnl::prop_kind kind) {
  return dnnl::lrn_forward::desc(kind, dnnl::algorithm::lrn_across_channels, desc(p.data, tag::nhwc), p.n,
                                 p.alpha, p.beta, p.k);
}

struct Forward {
  dnnl::lrn_forward::primitive_desc pd;
  dnnl::lrn_forward prim;
};

void lrn_kernel(KernelContext& c) {
  Params p = params_of(c, "LRN");
  auto f = cached_as<Forward>(p.key, [&] {
    auto pd = dnnl::lrn_forward::primitive_desc(forward_desc(p, dnnl::prop_kind::forward_inference), engine());
    return std::make_shared<Forward>(Forward{pd, dnnl::lrn_forward(pd)});
  });
  dnnl::memory src = memory(c.input(0), p.data, tag::nhwc);
  dnnl::memory dst = memory(c.output(0), p.data, tag::nhwc);
  f->prim.execute(stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  stream().wait();
}

struct Backward {
  dnnl::lrn_forward::primitive_desc fwd_pd;  // forward_training
  dnnl::lrn_forward fwd;
  dnnl::lrn_backward::primitive_desc pd;
  dnnl::lrn_backward prim;
};

// Inputs: grads, x, y.
void lrn_grad_kernel(KernelContext& c) {
  Params p = params_of(c, "LRNGrad");
  auto b = cached_as<Backward>(p.key, [&] {
    auto fwd_pd = dnnl::lrn_forward::primitive_desc(forward_desc(p, dnnl::prop_kind::forward_training), engine());
    auto bwd = dnnl::lrn_backward::desc(dnnl::algorithm::lrn_across_channels, desc(p.data, tag::nhwc),
                                        desc(p.data, tag::nhwc), p.n, p.alpha, p.beta, p.k);
    auto pd = dnnl::lrn_backward::primitive_desc(bwd, engine(), fwd_pd);
    return std::make_shared<Backward>(Backward{fwd_pd, dnnl::lrn_forward(fwd_pd), pd, dnnl::lrn_backward(pd)});
  });
  dnnl::memory src = memory(c.input(1), p.data, tag::nhwc);
  dnnl::memory diff_dst = memory(c.input(0), p.data, tag::nhwc);
  dnnl::memory diff_src = memory(c.output(0), p.data, tag::nhwc);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_src}};
  Tensor ws;
  dnnl::memory::desc ws_desc = b->pd.workspace_desc();
  if (ws_desc.get_size() != 0) {
    ws = c.temp(DType::kUInt8, Shape{static_cast<int64_t>(ws_desc.get_size())});
    Tensor y = c.temp(DType::kFloat32, c.input(1).shape());
    dnnl::memory ws_mem(ws_desc, engine(), ws.raw_data());
    dnnl::memory dst = memory(y, p.data, tag::nhwc);
    b->fwd.execute(stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_WORKSPACE, ws_mem}});
    args[DNNL_ARG_WORKSPACE] = ws_mem;
  }
  b->prim.execute(stream(), args);
  stream().wait();
}

bool supports(const Node&, const std::vector<TensorSpec>& inputs) {
  for (const TensorSpec& s : inputs) {
    if (s.dtype != DType::kFloat32 || s.shape.rank() != 4) return false;
    for (int64_t d : s.shape.dims())
      if (d <= 0) return false;
  }
  return true;
}

// dnnl::error -> hub::Error naming the node (a oneDNN failure is our bug or an
// unsupported case `supports` missed; either way callers see one error type).
template <void (*kKernel)(KernelContext&)> void guarded(KernelContext& c) {
  try {
    kKernel(c);
  } catch (const dnnl::error& e) {
    throw_error(Code::kInternal, "oneDNN kernel for node '" + c.node().name + "' (" + c.node().op + "): " + e.what());
  }
}

}  // namespace

HUB_REGISTER_KERNEL(LRN, kOneDNN, guarded<lrn_kernel>, supports);
HUB_REGISTER_KERNEL(LRNGrad, kOneDNN, guarded<lrn_grad_kernel>, supports);

}  // namespace hub::onednn

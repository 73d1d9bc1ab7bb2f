// CUDA kernels for the fused inference ops _FusedConv2D and _FusedMatMul
// (float32 form, NHWC; hub/ops/fused.h): the product through cuDNN / cuBLAS,
// then one pass that adds the bias and applies the post-ops (residual add
// and activations) in place. The quantized form and oneDNN's blocked
// layouts stay on the CPU backends (supports() declines them).
#include <limits>
#include <string>
#include <vector>

#include "hub/core/error.h"
#include "hub/ops/cuda/common.h"
#include "hub/ops/cuda/conv2d.h"
#include "hub/ops/cuda/matmul.h"
#include "hub/ops/fused.h"

namespace hub::cuda {
namespace {

enum Act : int { kAdd, kRelu, kLeakyRelu, kRelu6, kClip, kElu, kSigmoid, kTanh, kHardSwish };

constexpr int kMaxPostOps = 8;

struct PostOps {
  int count = 0;
  int op[kMaxPostOps];
  float a[kMaxPostOps], b[kMaxPostOps];
};

bool encode(const std::string& name, int* op) {
  static const std::pair<const char*, Act> table[] = {
      {"Add", kAdd}, {"Relu", kRelu},       {"LeakyRelu", kLeakyRelu}, {"Relu6", kRelu6},        {"Clip", kClip},
      {"Elu", kElu}, {"Sigmoid", kSigmoid}, {"Tanh", kTanh},           {"HardSwish", kHardSwish}};
  for (const auto& [n, a] : table)
    if (name == n) {
      *op = a;
      return true;
    }
  return false;
}

// Post-ops of a node; false when one is unknown here or there are too many.
bool post_ops_of(const Attrs& attrs, PostOps* out) {
  const std::vector<ops::PostOp> list = ops::post_ops_of(attrs);
  if (static_cast<int>(list.size()) > kMaxPostOps) return false;
  out->count = static_cast<int>(list.size());
  for (int i = 0; i < out->count; ++i) {
    if (!encode(list[i].op, &out->op[i])) return false;
    out->a[i] = list[i].alpha;
    out->b[i] = list[i].beta;
  }
  return true;
}

// z[i] = z[i] + bias[i % channels], then each post-op in order. Index is
// 32-bit where n allows: a 64-bit remainder costs the GPU more than the
// pass's memory traffic.
template <class Index>
__global__ void epilogue_kernel(float* z, const float* bias, const float* side, Index n, Index channels, PostOps post) {
  for (Index i = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<Index>(blockDim.x) * gridDim.x) {
    float v = z[i] + bias[i % channels];
    // Unrolled, so the post-ops are read from the kernel's parameters by
    // constant indices (a variable index would copy them to local memory).
#pragma unroll
    for (int p = 0; p < kMaxPostOps; ++p) {
      if (p == post.count) break;
      const float a = post.a[p], b = post.b[p];
      switch (post.op[p]) {
        case kAdd:
          v += side[i];
          break;
        case kRelu:
          v = fmaxf(v, 0.0f);
          break;
        case kLeakyRelu:
          v = v > 0.0f ? v : a * v;
          break;
        case kRelu6:
          v = fminf(fmaxf(v, 0.0f), 6.0f);
          break;
        case kClip:
          v = fminf(fmaxf(v, a), b);
          break;
        case kElu:
          v = v > 0.0f ? v : a * expm1f(v);
          break;
        case kSigmoid:
          v = 1.0f / (1.0f + expf(-v));
          break;
        case kTanh:
          v = tanhf(v);
          break;
        case kHardSwish:
          v = v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
          break;
      }
    }
    z[i] = v;
  }
}

void epilogue(KernelContext& c, Tensor& z) {
  PostOps post;
  HUB_CHECK(post_ops_of(c.attrs(), &post), "unsupported post-ops on node '" + c.node().name + "'");
  const int64_t n = z.num_elements();
  if (n == 0) return;
  const float* side = c.num_inputs() > 3 ? c.input(3).device_data<float>() : nullptr;
  float* data = z.device_data<float>();
  const float* bias = c.input(2).device_data<float>();
  if (n <= std::numeric_limits<uint32_t>::max() - kThreads * static_cast<int64_t>(blocks_for(n)))
    epilogue_kernel<uint32_t><<<blocks_for(n), kThreads, 0, stream()>>>(data, bias, side, static_cast<uint32_t>(n),
                                                                        static_cast<uint32_t>(z.dim(-1)), post);
  else
    epilogue_kernel<int64_t><<<blocks_for(n), kThreads, 0, stream()>>>(data, bias, side, n, z.dim(-1), post);
  HUB_CUDA_CHECK(cudaGetLastError());
}

bool supports_float_form(const Node& node, const std::vector<TensorSpec>& inputs) {
  for (const TensorSpec& s : inputs) {
    if (s.dtype != DType::kFloat32) return false;
    for (int64_t d : s.shape.dims())
      if (d <= 0) return false;
  }
  PostOps post;
  return !ops::quantization_of(node.attrs).quantized() && post_ops_of(node.attrs, &post);
}

bool supports_fused_conv2d(const Node& node, const std::vector<TensorSpec>& inputs) {
  return supports_float_form(node, inputs) && node.attrs.get_int("src_block") == 0 &&
         node.attrs.get_int("dst_block") == 0;
}

void fused_conv2d(KernelContext& c) {
  const bool depthwise = c.attrs().get_bool("depthwise");
  ops::ConvGeometry g;
  const std::string error = ops::conv_geometry(c.input(0).shape(), c.input(1).shape(), c.attrs(), depthwise, &g);
  HUB_CHECK(error.empty(), error);
  const float* w = filter_krsc(c, c.input(1), g.oc);
  Tensor& y = c.output(0);
  convolution(c, ConvPass::kForward, g, const_cast<float*>(c.input(0).device_data<float>()), const_cast<float*>(w),
              y.device_data<float>());
  epilogue(c, y);
}

void fused_matmul(KernelContext& c) {
  const bool ta = c.attrs().get_bool("transpose_a"), tb = c.attrs().get_bool("transpose_b");
  const Tensor &a = c.input(0), &b = c.input(1);
  Tensor& y = c.output(0);
  gemm(ta, tb, y.dim(0), y.dim(1), ta ? a.dim(0) : a.dim(1), a.device_data<float>(), 0, b.device_data<float>(), 0,
       y.device_data<float>());
  epilogue(c, y);
}

}  // namespace

HUB_REGISTER_KERNEL(_FusedConv2D, cuda, fused_conv2d, supports_fused_conv2d);
HUB_REGISTER_KERNEL(_FusedMatMul, cuda, fused_matmul, supports_float_form);

}  // namespace hub::cuda

// cuDNN kernels for FusedBatchNorm (training and inference) and
// FusedBatchNormGrad (formulas in hub/ops/batch_norm.h, reference kernels in
// hub/ops/cpu/batch_norm.cc), on cuDNN's legacy batch-norm API (declared
// deprecated in cuDNN 9; it warns only with CUDNN_WARN_DEPRECATED). This file
// holds no device code: where cuDNN's results are not the op's outputs they
// are converted with further cuDNN calls.
//
// x [N,H,W,C] is a 4-D NHWC tensor to cuDNN, and x [N,C] the same with H = W
// = 1; per-channel vectors use the 1xCx1x1 descriptor cuDNN derives from it.
// Statistics run over the M = N*H*W rows. Training and the backward pass use
// CUDNN_BATCHNORM_SPATIAL_PERSISTENT: for NHWC float data its statistics
// were as accurate as CUDNN_BATCHNORM_SPATIAL's or better in every case
// measured (cuDNN 9.14 on an H200; e.g. a variance relative error of 1e-5
// against 3e-3 for mean 100 and standard deviation 6e-4 over 65536 rows), and
// its documented loss of range applies to NCHW only.
//
// Where cuDNN's outputs differ from the op's:
// - Training forward: cuDNN saves the batch mean and inverse standard
//   deviation, and blends its "running" mean and variance as new * factor +
//   old * (1 - factor), the variance Bessel-corrected. With factor 1 they are
//   the batch mean and unbiased_variance (so they are zeroed first: 0 * NaN
//   from fresh pool memory would be NaN); batch_variance, the biased one the
//   normalization used, is unbiased_variance * (M-1)/M. For M = 1 cuDNN's
//   correction is 0/0, where the op's is 0 * 1/max(M-1, 1): both variances
//   are 0 then. (The variance is not recovered from the inverse standard
//   deviation: 1/rstd^2 - epsilon cancels catastrophically when the variance
//   is small next to epsilon.)
// - FusedBatchNormGrad takes mean and variance, cuDNN's backward the mean and
//   inverse standard deviation its forward saved. It uses the saved values
//   as given (checked against the formula with unrelated ones), so rstd =
//   1/sqrt(variance + epsilon) is made first, by cuDNN's inference
//   normalization of a one-pixel batch of ones (mean 0, scale 1, offset 0).
// - Inference gradient (dx = scale * rstd * dy): the backward's dscale and
//   doffset are the op's (the same sums in both modes); its dx, training's
//   formula, is then overwritten by cuDNN's inference normalization of dy
//   with mean 0 and offset 0, which is scale * rstd * dy.
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "hub/ops/cuda/common.h"
#include "hub/ops/cuda/matmul.h"

namespace hub::cuda {
namespace {

constexpr cudnnBatchNormMode_t kTrainingMode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;

class TensorDesc {
 public:
  TensorDesc() { HUB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

// An NHWC tensor of n x h x w pixels of c channels, and cuDNN's per-channel
// descriptor for it.
struct Layout {
  TensorDesc x, channel;
  int64_t rows, channels;
  Layout(int64_t n, int64_t h, int64_t w, int64_t c) : rows(n * h * w), channels(c) {
    HUB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, static_cast<int>(n),
                                               static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)));
    HUB_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(channel.get(), x.get(), CUDNN_BATCHNORM_SPATIAL));
  }
  // x [N,H,W,C] or [N,C].
  explicit Layout(const Shape& s) : Layout(s[0], s.rank() == 4 ? s[1] : 1, s.rank() == 4 ? s[2] : 1, s.dim(-1)) {}
};

const float kOne = 1.0f, kZero = 0.0f;

// The epsilon the reference adds (a float), for cuDNN (a double).
double epsilon_of(const KernelContext& c) { return static_cast<float>(c.attrs().get_float("epsilon")); }

const float* in(const KernelContext& c, int i) { return c.input(i).device_data<float>(); }
float* out(KernelContext& c, int i) { return c.output(i).device_data<float>(); }

void zero(float* p, int64_t n) {
  HUB_CUDA_CHECK(cudaMemsetAsync(p, 0, static_cast<size_t>(n) * sizeof(float), stream()));
}
void copy(const float* from, float* to, int64_t n) {
  HUB_CUDA_CHECK(cudaMemcpyAsync(to, from, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream()));
}

// y = scale * (x - mean) / sqrt(variance + epsilon) + offset.
void normalize(const Layout& l, const float* x, float* y, const float* scale, const float* offset, const float* mean,
               const float* variance, double epsilon) {
  HUB_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, l.x.get(), x,
                                                          l.x.get(), y, l.channel.get(), scale, offset, mean, variance,
                                                          epsilon));
}

// Inputs: x, scale, offset, mean, variance. Outputs: y, batch_mean,
// batch_variance, unbiased_variance.
void fused_batch_norm(KernelContext& c) {
  const Layout l(c.input(0).shape());
  const int64_t C = l.channels, M = l.rows;
  const double eps = epsilon_of(c);
  float *mean = out(c, 1), *variance = out(c, 2), *unbiased = out(c, 3);
  if (!c.attrs().get_bool("is_training")) {
    normalize(l, in(c, 0), out(c, 0), in(c, 1), in(c, 2), in(c, 3), in(c, 4), eps);
    copy(in(c, 3), mean, C);
    copy(in(c, 4), variance, C);
    copy(in(c, 4), unbiased, C);
    return;
  }
  Tensor saved_mean = c.temp(DType::kFloat32, Shape{C}), saved_rstd = c.temp(DType::kFloat32, Shape{C});
  zero(mean, C);
  zero(unbiased, C);
  HUB_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
      cudnn(), kTrainingMode, &kOne, &kZero, l.x.get(), in(c, 0), l.x.get(), out(c, 0), l.channel.get(), in(c, 1),
      in(c, 2), /*exponentialAverageFactor=*/1.0, mean, unbiased, eps, saved_mean.device_data<float>(),
      saved_rstd.device_data<float>()));
  if (M > 1) {
    const float biased = static_cast<float>(M - 1) / static_cast<float>(M);
    HUB_CUDNN_CHECK(
        cudnnTransformTensor(cudnn(), &biased, l.channel.get(), unbiased, &kZero, l.channel.get(), variance));
  } else {
    zero(variance, C);
    zero(unbiased, C);
  }
}

// Inputs: dy, x, scale, mean, variance. Outputs: dx, dscale, doffset.
void fused_batch_norm_grad(KernelContext& c) {
  const Layout l(c.input(1).shape());
  const int64_t C = l.channels;
  const double eps = epsilon_of(c);
  Tensor zeros = c.temp(DType::kFloat32, Shape{C}), rstd = c.temp(DType::kFloat32, Shape{C});
  zero(zeros.device_data<float>(), C);
  const float* ones_c = ones(C);
  const Layout pixel(1, 1, 1, C);
  normalize(pixel, ones_c, rstd.device_data<float>(), ones_c, zeros.device_data<float>(), zeros.device_data<float>(),
            in(c, 4), eps);
  HUB_CUDNN_CHECK(cudnnBatchNormalizationBackward(
      cudnn(), kTrainingMode, &kOne, &kZero, &kOne, &kZero, l.x.get(), in(c, 1), l.x.get(), in(c, 0), l.x.get(),
      out(c, 0), l.channel.get(), in(c, 2), out(c, 1), out(c, 2), eps, in(c, 3), rstd.device_data<float>()));
  if (!c.attrs().get_bool("is_training"))
    normalize(l, in(c, 0), out(c, 0), in(c, 2), zeros.device_data<float>(), zeros.device_data<float>(), in(c, 4), eps);
}

// x of rank 2 or 4 with no empty dimension and at most 2^31 - 1 elements
// (cuDNN's int dimensions and size limit); epsilon >= CUDNN_BN_MIN_EPSILON.
// The x input is 0 for FusedBatchNorm, 1 for FusedBatchNormGrad.
template <int kX>
bool supports(const Node& node, const std::vector<TensorSpec>& inputs) {
  const Shape& x = inputs[kX].shape;
  int64_t elements = 1;
  for (int64_t d : x.dims()) {
    if (d <= 0) return false;
    elements *= d;
    if (elements > std::numeric_limits<int32_t>::max()) return false;
  }
  return static_cast<float>(node.attrs.get_float("epsilon")) >= CUDNN_BN_MIN_EPSILON;
}

}  // namespace

HUB_REGISTER_KERNEL(FusedBatchNorm, cuda, fused_batch_norm, supports<0>);
HUB_REGISTER_KERNEL(FusedBatchNormGrad, cuda, fused_batch_norm_grad, supports<1>);

}  // namespace hub::cuda

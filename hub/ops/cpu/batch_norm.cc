// Reference batch-norm kernels, and the fused batch norm + activation ops
// (formulas in hub/ops/batch_norm.h). x is viewed as [M, C] rows.
//
// Memory traffic is what these kernels cost, so each pass over the tensor
// does as much as it can:
// - the training statistics come from blocks of rows small enough to stay
//   in cache: each block's mean, then its sum of squared deviations from
//   that mean, are taken while the block is cached (float within a block),
//   and the blocks are combined in double (the pairwise-update formula of
//   Chan, Golub and LeVeque), so x is read from memory once for both;
// - y = x * a + b and the activation (when fused) are one pass;
// - the gradient takes sum g and sum g * (x - mean) in one pass and dx in
//   a second; a fused activation's mask is applied on the fly in both, so
//   its gradient is never written out.
// The row loops are plain loops the compiler vectorises, built for AVX-512,
// AVX2 and the baseline and picked when the library loads (GCC's
// target_clones): the library is built for the baseline ISA, and these
// passes are where the time goes.
#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <limits>

#include "hub/core/parallel.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using RowVec = Eigen::Array<float, 1, Eigen::Dynamic>;
using CRowMap = Eigen::Map<const RowVec>;
using DRowVec = Eigen::Array<double, 1, Eigen::Dynamic>;
using DRows = Eigen::Array<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

#define HUB_BN_CLONES [[gnu::target_clones("avx512f", "avx2", "default")]]

// Bytes of x per block of rows (well inside a core's L2 cache).
constexpr int64_t kBlockBytes = 128 * 1024;

struct View {
  int64_t M, C;
};
View view_of(const Tensor& x) {
  int64_t C = x.dim(-1);
  return {C ? x.num_elements() / C : 0, C};
}

// Rows per block for C channels, and the number of blocks for M rows.
int64_t block_rows(int64_t C) { return std::max<int64_t>(1, kBlockBytes / (4 * std::max<int64_t>(C, 1))); }
int64_t num_blocks(int64_t M, int64_t C) { return (M + block_rows(C) - 1) / block_rows(C); }

// fn(r0, r1) over blocks of rows [r0, r1) of [0, M), spread over the threads.
template <class F>
void for_blocks(int64_t M, int64_t C, F fn) {
  const int64_t rows = block_rows(C);
  parallel_for(num_blocks(M, C), 1, [&](int64_t b0, int64_t b1) {
    for (int64_t k = b0; k < b1; ++k) fn(k, k * rows, std::min(M, (k + 1) * rows));
  });
}

// Over rows [r0, r1) of x [*, C]: mean[j] of the rows, then m2[j] = the sum
// of squared deviations from it (the block is in cache for the second pass).
HUB_BN_CLONES void block_moments(const float* px, int64_t r0, int64_t r1, int64_t C, float* mean, float* m2) {
  std::fill(mean, mean + C, 0.0f);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t j = 0; j < C; ++j) mean[j] += px[r * C + j];
  const float inv = 1.0f / static_cast<float>(r1 - r0);
  for (int64_t j = 0; j < C; ++j) mean[j] *= inv;
  std::fill(m2, m2 + C, 0.0f);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t j = 0; j < C; ++j) {
      const float d = px[r * C + j] - mean[j];
      m2[j] += d * d;
    }
}

// min(max(x * a + b, lo), hi) over rows [r0, r1): the activation with lo =
// 0, none with lo = -inf and hi = +inf (which keeps NaN: std::max and
// std::min return their first argument when a comparison fails).
HUB_BN_CLONES void normalize_rows(const float* px, float* py, int64_t r0, int64_t r1, int64_t C, const float* a,
                                  const float* b, float lo, float hi) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t j = 0; j < C; ++j) py[r * C + j] = std::min(std::max(px[r * C + j] * a[j] + b[j], lo), hi);
}

// The gradient reaching batch norm's output: dy, or (with a mask) dz where
// 0 < features < hi and 0 elsewhere; branch-free, so the loops vectorise
// (the compiler makes one loop per value of `mask`).
inline float grad_at(const float* dy, const float* f, int64_t i, bool mask, float hi) {
  return mask ? (((f[i] > 0.0f) & (f[i] < hi)) ? dy[i] : 0.0f) : dy[i];
}

// Over rows [r0, r1): sg[j] = sum g, sgx[j] = sum g * (x - mean[j]).
HUB_BN_CLONES void grad_sums(const float* pdy, const float* pf, const float* px, int64_t r0, int64_t r1, int64_t C,
                             const float* mean, bool mask, float hi, float* sg, float* sgx) {
  std::fill(sg, sg + C, 0.0f);
  std::fill(sgx, sgx + C, 0.0f);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t j = 0; j < C; ++j) {
      const int64_t i = r * C + j;
      const float g = grad_at(pdy, pf, i, mask, hi);
      sg[j] += g;
      sgx[j] += g * (px[i] - mean[j]);
    }
}

// dx = ((g - shift) - (x - mean) * xs) * k over rows [r0, r1).
HUB_BN_CLONES void grad_rows(const float* pdy, const float* pf, const float* px, float* pdx, int64_t r0, int64_t r1,
                             int64_t C, const float* mean, const float* shift, const float* xs, const float* k,
                             bool mask, float hi) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t j = 0; j < C; ++j) {
      const int64_t i = r * C + j;
      pdx[i] = ((grad_at(pdy, pf, i, mask, hi) - shift[j]) - (px[i] - mean[j]) * xs[j]) * k[j];
    }
}

// Per-channel mean and biased variance of the M rows of px (M > 0).
void moments(const float* px, int64_t M, int64_t C, RowVec* mean, RowVec* var) {
  const int64_t rows = block_rows(C), blocks = num_blocks(M, C);
  DRows block_mean(blocks, C), block_m2(blocks, C);
  for_blocks(M, C, [&](int64_t k, int64_t r0, int64_t r1) {
    RowVec m(C), m2(C);
    block_moments(px, r0, r1, C, m.data(), m2.data());
    block_mean.row(k) = m.cast<double>();
    block_m2.row(k) = m2.cast<double>();
  });
  // mean = sum_k n_k mean_k / M; M2 = sum_k M2_k + n_k (mean_k - mean)^2.
  auto rows_in = [&](int64_t k) { return static_cast<double>(std::min(M, (k + 1) * rows) - k * rows); };
  DRowVec total = DRowVec::Zero(C);
  for (int64_t k = 0; k < blocks; ++k) total += block_mean.row(k) * rows_in(k);
  const DRowVec mu = total / static_cast<double>(M);
  DRowVec m2 = DRowVec::Zero(C);
  for (int64_t k = 0; k < blocks; ++k) m2 += block_m2.row(k) + (block_mean.row(k) - mu).square() * rows_in(k);
  *mean = mu.cast<float>();
  *var = (m2 / static_cast<double>(M)).cast<float>();
}

void copy_to(const Tensor& from, Tensor& to) { std::memcpy(to.raw_data(), from.raw_data(), from.nbytes()); }

constexpr float kInf = std::numeric_limits<float>::infinity();

// The upper clip of the fused activation: z = min(max(y, 0), hi), gradient
// mask [0 < features < hi]; hi = +inf for Relu.
float activation_hi(const KernelContext& c) { return c.attrs().get_string("activation") == "Relu6" ? 6.0f : kInf; }

// Inputs: x, scale, offset, mean, variance. Outputs: min(max(y, lo), hi)
// (y itself for lo = -inf, hi = +inf), batch_mean, batch_variance,
// unbiased_variance.
void batch_norm_forward(KernelContext& c, float lo, float hi) {
  const Tensor& x = c.input(0);
  const View v = view_of(x);
  const int64_t M = v.M, C = v.C;
  const float eps = static_cast<float>(c.attrs().get_float("epsilon"));
  const bool training = c.attrs().get_bool("is_training");
  const float* px = x.data<float>();
  RowVec mean(C), var(C);
  if (training) {
    if (M > 0) {
      moments(px, M, C, &mean, &var);
    } else {
      mean.setZero();
      var.setZero();
    }
    Eigen::Map<RowVec>(c.output(1).data<float>(), C) = mean;
    Eigen::Map<RowVec>(c.output(2).data<float>(), C) = var;
    const float bessel = static_cast<float>(M) / static_cast<float>(std::max<int64_t>(M - 1, 1));
    Eigen::Map<RowVec>(c.output(3).data<float>(), C) = var * bessel;
  } else {
    mean = CRowMap(c.input(3).data<float>(), C);
    var = CRowMap(c.input(4).data<float>(), C);
    copy_to(c.input(3), c.output(1));
    copy_to(c.input(4), c.output(2));
    copy_to(c.input(4), c.output(3));
  }
  // y = x * a + b with a = scale * rstd, b = offset - mean * a.
  const RowVec a = CRowMap(c.input(1).data<float>(), C) * (var + eps).rsqrt();
  const RowVec b = CRowMap(c.input(2).data<float>(), C) - mean * a;
  float* py = c.output(0).data<float>();
  for_blocks(M, C,
             [&](int64_t, int64_t r0, int64_t r1) { normalize_rows(px, py, r0, r1, C, a.data(), b.data(), lo, hi); });
}

// FusedBatchNormGrad of g, where g = dy (no mask) or g = dz masked by
// [0 < features < hi]. Inputs: dy (or dz, features), then x, scale, mean,
// variance. Outputs: dx, dscale, doffset.
void batch_norm_backward(KernelContext& c, bool mask, float hi) {
  const int first = mask ? 2 : 1;  // index of x
  const Tensor& x = c.input(first);
  const View v = view_of(x);
  const int64_t M = v.M, C = v.C;
  const float eps = static_cast<float>(c.attrs().get_float("epsilon"));
  const bool training = c.attrs().get_bool("is_training");
  const float* pdy = c.input(0).data<float>();
  const float* pf = mask ? c.input(1).data<float>() : nullptr;
  const float* px = x.data<float>();
  const RowVec mean = CRowMap(c.input(first + 2).data<float>(), C);
  const RowVec rstd = (CRowMap(c.input(first + 3).data<float>(), C) + eps).rsqrt();
  // sum g and sum g * (x - mean) in one pass (float within a block, double
  // across blocks).
  DRows part_g(num_blocks(M, C), C), part_gx(num_blocks(M, C), C);
  for_blocks(M, C, [&](int64_t k, int64_t r0, int64_t r1) {
    RowVec sg(C), sgx(C);
    grad_sums(pdy, pf, px, r0, r1, C, mean.data(), mask, hi, sg.data(), sgx.data());
    part_g.row(k) = sg.cast<double>();
    part_gx.row(k) = sgx.cast<double>();
  });
  const RowVec doffset = part_g.colwise().sum().cast<float>();
  const RowVec dscale = part_gx.colwise().sum().cast<float>() * rstd;
  Eigen::Map<RowVec>(c.output(1).data<float>(), C) = dscale;
  Eigen::Map<RowVec>(c.output(2).data<float>(), C) = doffset;
  // Training: dx = k * (g - doffset/M - xhat * dscale/M), xhat = (x - mean)
  // * rstd; inference: dx = k * g (shift and xs zero).
  const RowVec k = CRowMap(c.input(first + 1).data<float>(), C) * rstd;
  const float inv_m = training && M > 0 ? 1.0f / static_cast<float>(M) : 0.0f;
  const RowVec xs = rstd * dscale * inv_m;  // coefficient of (x - mean)
  const RowVec shift = doffset * inv_m;
  float* pdx = c.output(0).data<float>();
  for_blocks(M, C, [&](int64_t, int64_t r0, int64_t r1) {
    grad_rows(pdy, pf, px, pdx, r0, r1, C, mean.data(), shift.data(), xs.data(), k.data(), mask, hi);
  });
}

void fused_batch_norm_kernel(KernelContext& c) { batch_norm_forward(c, -kInf, kInf); }
void fused_batch_norm_grad_kernel(KernelContext& c) { batch_norm_backward(c, false, kInf); }
void fused_batch_norm_activation_kernel(KernelContext& c) { batch_norm_forward(c, 0.0f, activation_hi(c)); }
void fused_batch_norm_activation_grad_kernel(KernelContext& c) { batch_norm_backward(c, true, activation_hi(c)); }

}  // namespace

HUB_REGISTER_KERNEL(FusedBatchNorm, reference, fused_batch_norm_kernel);
HUB_REGISTER_KERNEL(FusedBatchNormGrad, reference, fused_batch_norm_grad_kernel);
HUB_REGISTER_KERNEL(_FusedBatchNormActivation, reference, fused_batch_norm_activation_kernel);
HUB_REGISTER_KERNEL(_FusedBatchNormActivationGrad, reference, fused_batch_norm_activation_grad_kernel);

}  // namespace hub::cpu

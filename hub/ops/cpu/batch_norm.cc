// Reference batch-norm kernels: x viewed as [M, C] rows; per-channel sums are
// taken over row chunks in parallel (float within a chunk, double across
// chunks), and the element-wise passes run over row chunks in parallel.
#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <vector>

#include "hub/core/parallel.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using Rows = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CRowsMap = Eigen::Map<const Rows>;
using RowsMap = Eigen::Map<Rows>;
using RowVec = Eigen::Array<float, 1, Eigen::Dynamic>;
using CRowMap = Eigen::Map<const RowVec>;

constexpr int64_t kRowGrain = 256;

// Per-channel sums over the M rows: add_row(r, acc) adds row r's term to
// acc [1, C]. Rows are split into chunks summed in parallel (float within a
// chunk, double across chunks), without materializing the terms.
template <class AddRow>
RowVec column_sums(int64_t M, int64_t C, AddRow add_row) {
  int64_t chunks = std::clamp<int64_t>(M / kRowGrain, 1, 4 * num_threads());
  std::vector<Eigen::Array<double, 1, Eigen::Dynamic>> partial(chunks);
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    RowVec acc(C);
    for (int64_t k = b; k < e; ++k) {
      acc.setZero();
      for (int64_t r = M * k / chunks, r1 = M * (k + 1) / chunks; r < r1; ++r) add_row(r, acc);
      partial[k] = acc.cast<double>();
    }
  });
  Eigen::Array<double, 1, Eigen::Dynamic> total = Eigen::Array<double, 1, Eigen::Dynamic>::Zero(C);
  for (const auto& p : partial) total += p;
  return total.cast<float>();
}

template <class F>
void for_rows(int64_t M, int64_t C, F fn) {
  parallel_for(M, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, C)), [&](int64_t b, int64_t e) { fn(b, e - b); });
}

struct View {
  int64_t M, C;
};
View view_of(const Tensor& x) {
  int64_t C = x.dim(-1);
  return {C ? x.num_elements() / C : 0, C};
}

void copy_to(const Tensor& from, Tensor& to) { std::memcpy(to.raw_data(), from.raw_data(), from.nbytes()); }

// Inputs: x, scale, offset, mean, variance. Outputs: y, batch_mean, batch_variance, unbiased_variance.
void fused_batch_norm_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  auto [M, C] = view_of(x);
  float eps = static_cast<float>(c.attrs().get_float("epsilon"));
  bool training = c.attrs().get_bool("is_training");
  const float* px = x.data<float>();
  RowVec mean(C), var(C);
  if (training) {
    float inv_m = M > 0 ? 1.0f / static_cast<float>(M) : 0.0f;
    mean = column_sums(M, C, [&](int64_t r, RowVec& acc) { acc += CRowMap(px + r * C, C); }) * inv_m;
    var = column_sums(M, C, [&](int64_t r, RowVec& acc) { acc += (CRowMap(px + r * C, C) - mean).square(); }) * inv_m;
    Eigen::Map<RowVec>(c.output(1).data<float>(), C) = mean;
    Eigen::Map<RowVec>(c.output(2).data<float>(), C) = var;
    float bessel = static_cast<float>(M) / static_cast<float>(std::max<int64_t>(M - 1, 1));
    Eigen::Map<RowVec>(c.output(3).data<float>(), C) = var * bessel;
  } else {
    mean = CRowMap(c.input(3).data<float>(), C);
    var = CRowMap(c.input(4).data<float>(), C);
    copy_to(c.input(3), c.output(1));
    copy_to(c.input(4), c.output(2));
    copy_to(c.input(4), c.output(3));
  }
  // y = x * a + b with a = scale * rstd, b = offset - mean * a.
  RowVec a = CRowMap(c.input(1).data<float>(), C) * (var + eps).rsqrt();
  RowVec b = CRowMap(c.input(2).data<float>(), C) - mean * a;
  float* py = c.output(0).data<float>();
  for_rows(M, C, [&](int64_t r0, int64_t n) {
    RowsMap(py + r0 * C, n, C) = (CRowsMap(px + r0 * C, n, C).rowwise() * a).rowwise() + b;
  });
}

// Inputs: dy, x, scale, mean, variance. Outputs: dx, dscale, doffset.
void fused_batch_norm_grad_kernel(KernelContext& c) {
  const Tensor& x = c.input(1);
  auto [M, C] = view_of(x);
  float eps = static_cast<float>(c.attrs().get_float("epsilon"));
  bool training = c.attrs().get_bool("is_training");
  const float* pdy = c.input(0).data<float>();
  const float* px = x.data<float>();
  CRowMap scale(c.input(2).data<float>(), C), mean(c.input(3).data<float>(), C);
  RowVec rstd = (CRowMap(c.input(4).data<float>(), C) + eps).rsqrt();
  RowVec doffset = column_sums(M, C, [&](int64_t r, RowVec& acc) { acc += CRowMap(pdy + r * C, C); });
  // dscale = sum dy * (x - mean) * rstd
  RowVec dscale =
      column_sums(M, C,
                  [&](int64_t r, RowVec& acc) { acc += CRowMap(pdy + r * C, C) * (CRowMap(px + r * C, C) - mean); }) *
      rstd;
  Eigen::Map<RowVec>(c.output(1).data<float>(), C) = dscale;
  Eigen::Map<RowVec>(c.output(2).data<float>(), C) = doffset;
  float* pdx = c.output(0).data<float>();
  RowVec k = scale * rstd;
  if (training && M > 0) {
    // dx = k * (dy - doffset/M - xhat * dscale/M), xhat = (x - mean) * rstd.
    float inv_m = 1.0f / static_cast<float>(M);
    RowVec xs = rstd * dscale * inv_m;  // coefficient of (x - mean)
    RowVec shift = doffset * inv_m;
    for_rows(M, C, [&](int64_t r0, int64_t n) {
      RowsMap(pdx + r0 * C, n, C) = ((CRowsMap(pdy + r0 * C, n, C).rowwise() - shift) -
                                     (CRowsMap(px + r0 * C, n, C).rowwise() - mean).rowwise() * xs)
                                        .rowwise() *
                                    k;
    });
  } else {
    for_rows(M, C,
             [&](int64_t r0, int64_t n) { RowsMap(pdx + r0 * C, n, C) = CRowsMap(pdy + r0 * C, n, C).rowwise() * k; });
  }
}

}  // namespace

HUB_REGISTER_KERNEL(FusedBatchNorm, reference, fused_batch_norm_kernel);
HUB_REGISTER_KERNEL(FusedBatchNormGrad, reference, fused_batch_norm_grad_kernel);

}  // namespace hub::cpu

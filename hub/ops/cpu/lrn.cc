// Reference LRN kernels: rows of D channels as Eigen arrays; the windowed sum
// over channels is 2r+1 shifted column-block additions. Parallel over rows.
#include <Eigen/Core>
#include <algorithm>

#include "hub/core/parallel.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using Rows = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowsMap = Eigen::Map<Rows>;
using CRowsMap = Eigen::Map<const Rows>;

struct Params {
  int64_t r;
  float bias, alpha, beta;
};
Params params_of(const KernelContext& c) {
  const Attrs& a = c.attrs();
  return {a.get_int("depth_radius"), static_cast<float>(a.get_float("bias")), static_cast<float>(a.get_float("alpha")),
          static_cast<float>(a.get_float("beta"))};
}

// out[:, d] = sum over k in [d-r, d+r] ∩ [0, D) of in[:, k].
void window_sum(const Rows& in, int64_t r, Rows& out) {
  const int64_t D = in.cols();
  out.setZero(in.rows(), D);
  int64_t reach = std::min(r, D - 1);
  for (int64_t o = -reach; o <= reach; ++o) {
    int64_t t0 = std::max<int64_t>(0, -o), len = D - (o < 0 ? -o : o);
    out.middleCols(t0, len) += in.middleCols(t0 + o, len);
  }
}

// norm^(-beta), with the common betas (0.5: TF's default, 0.75: AlexNet's)
// as square roots instead of pow.
Rows pow_neg_beta(const Rows& norm, float beta) {
  if (beta == 0.5f) return norm.rsqrt();
  if (beta == 0.75f) {
    Rows r = norm.rsqrt();
    return r * r.sqrt();
  }
  return norm.pow(-beta);
}

// Runs fn(row_begin, row_count) over chunks of the [M, D] row view.
template <class F>
void for_row_chunks(int64_t rows, int64_t depth, F fn) {
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, depth)),
               [&](int64_t b, int64_t e) { fn(b, e - b); });
}

void lrn_kernel(KernelContext& c) {
  Params p = params_of(c);
  const Tensor& x = c.input(0);
  const int64_t D = x.dim(3), M = D ? x.num_elements() / D : 0;
  const float* px = x.data<float>();
  float* py = c.output(0).data<float>();
  for_row_chunks(M, D, [&](int64_t b, int64_t n) {
    CRowsMap xs(px + b * D, n, D);
    Rows sq = xs.square(), norm;
    window_sum(sq, p.r, norm);
    norm = p.bias + p.alpha * norm;
    RowsMap(py + b * D, n, D) = xs * pow_neg_beta(norm, p.beta);
  });
}

void lrn_grad_kernel(KernelContext& c) {
  Params p = params_of(c);
  const Tensor& g = c.input(0);
  const int64_t D = g.dim(3), M = D ? g.num_elements() / D : 0;
  const float* pg = g.data<float>();
  const float* px = c.input(1).data<float>();
  const float* py = c.input(2).data<float>();
  float* pdx = c.output(0).data<float>();
  for_row_chunks(M, D, [&](int64_t b, int64_t n) {
    CRowsMap gs(pg + b * D, n, D), xs(px + b * D, n, D), ys(py + b * D, n, D);
    Rows sq = xs.square(), norm, t, tsum;
    window_sum(sq, p.r, norm);
    norm = p.bias + p.alpha * norm;
    t = gs * ys / norm;
    window_sum(t, p.r, tsum);
    RowsMap(pdx + b * D, n, D) = gs * pow_neg_beta(norm, p.beta) - (2.0f * p.alpha * p.beta) * xs * tsum;
  });
}

}  // namespace

HUB_REGISTER_KERNEL(LRN, reference, lrn_kernel);
HUB_REGISTER_KERNEL(LRNGrad, reference, lrn_grad_kernel);

}  // namespace hub::cpu

// Reference kernels: MatMul and BatchMatMul through Eigen's GEMM on row-major
// maps (one product per batch; batches in parallel, and a single product on
// Eigen's own OpenMP threads), BiasAdd and BiasAddGrad as Eigen array
// expressions over [rows, C] views, in parallel over rows.
#include <Eigen/Core>

#include "hub/core/parallel.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowArr = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// out[..b] = op(a[..b]) op(b[..b]) for operands of rank >= 2 whose batch dims
// broadcast to out's (ta/tb: transpose that operand's last two dims).
void gemm(const Tensor& a, const Tensor& b, Tensor& out, bool ta, bool tb) {
  int r = out.rank();
  if (out.num_elements() == 0) return;
  if (a.dim(ta ? -2 : -1) == 0) {
    out.fill(0.0);
    return;
  }
  // Per output batch dim: the element stride of a and b (0 where broadcast).
  int nb = r - 2;
  std::vector<int64_t> sa(nb, 0), sb(nb, 0);
  auto strides = [nb](const Tensor& t, std::vector<int64_t>& s) {
    int64_t stride = t.dim(-2) * t.dim(-1);
    for (int i = t.rank() - 3, o = nb - 1; i >= 0; --i, --o) {
      if (t.dim(i) != 1) s[o] = stride;
      stride *= t.dim(i);
    }
  };
  strides(a, sa);
  strides(b, sb);
  int64_t batches = 1;
  for (int i = 0; i < nb; ++i) batches *= out.dim(i);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  int64_t m = out.dim(-2), n = out.dim(-1);
  auto one = [&](int64_t batch) {
    int64_t rem = batch, ao = 0, bo = 0;
    for (int i = nb - 1; i >= 0; --i) {
      int64_t idx = rem % out.dim(i);
      rem /= out.dim(i);
      ao += idx * sa[i];
      bo += idx * sb[i];
    }
    Eigen::Map<const RowMat> A(pa + ao, a.dim(-2), a.dim(-1));
    Eigen::Map<const RowMat> B(pb + bo, b.dim(-2), b.dim(-1));
    Eigen::Map<RowMat> C(po + batch * m * n, m, n);
    if (!ta && !tb)
      C.noalias() = A * B;
    else if (!ta && tb)
      C.noalias() = A * B.transpose();
    else if (ta && !tb)
      C.noalias() = A.transpose() * B;
    else
      C.noalias() = A.transpose() * B.transpose();
  };
  parallel_for(batches, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) one(i);
  });
}

void matmul_kernel(KernelContext& c) {
  gemm(c.input(0), c.input(1), c.output(0), c.attrs().get_bool("transpose_a"), c.attrs().get_bool("transpose_b"));
}
void batch_matmul_kernel(KernelContext& c) {
  gemm(c.input(0), c.input(1), c.output(0), c.attrs().get_bool("adj_x"), c.attrs().get_bool("adj_y"));
}

void bias_add_kernel(KernelContext& c) {
  const Tensor& v = c.input(0);
  const Tensor& bias = c.input(1);
  Tensor& out = c.output(0);
  int64_t ch = bias.num_elements();
  if (v.num_elements() == 0 || ch == 0) return;
  int64_t rows = v.num_elements() / ch;
  Eigen::Map<const Eigen::Array<float, 1, Eigen::Dynamic>> pb(bias.data<float>(), ch);
  const float* pv = v.data<float>();
  float* po = out.data<float>();
  parallel_for(rows, std::max<int64_t>(1, 16384 / ch), [&](int64_t b, int64_t e) {
    Eigen::Map<RowArr>(po + b * ch, e - b, ch) = Eigen::Map<const RowArr>(pv + b * ch, e - b, ch).rowwise() + pb;
  });
}
void bias_add_grad_kernel(KernelContext& c) {
  const Tensor& g = c.input(0);
  Tensor& out = c.output(0);
  int64_t ch = out.num_elements();
  if (ch == 0) return;
  int64_t rows = g.num_elements() / ch;
  Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>> po(out.data<float>(), ch);
  const float* pg = g.data<float>();
  // Per-chunk partial sums, then their sum: parallel without atomics.
  int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(num_threads(), rows * ch / 32768));
  if (chunks == 1) {
    po = Eigen::Map<const RowArr>(pg, rows, ch).colwise().sum();
    return;
  }
  Tensor partial = c.temp(DType::kFloat32, Shape{chunks, ch});
  float* pp = partial.data<float>();
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t r0 = rows * k / chunks, r1 = rows * (k + 1) / chunks;
      Eigen::Map<Eigen::Array<float, 1, Eigen::Dynamic>>(pp + k * ch, ch) =
          Eigen::Map<const RowArr>(pg + r0 * ch, r1 - r0, ch).colwise().sum();
    }
  });
  po = Eigen::Map<const RowArr>(pp, chunks, ch).colwise().sum();
}

}  // namespace

HUB_REGISTER_KERNEL(MatMul, reference, matmul_kernel);
HUB_REGISTER_KERNEL(BatchMatMul, reference, batch_matmul_kernel);
HUB_REGISTER_KERNEL(BiasAdd, reference, bias_add_kernel);
HUB_REGISTER_KERNEL(BiasAddGrad, reference, bias_add_grad_kernel);

}  // namespace hub::cpu

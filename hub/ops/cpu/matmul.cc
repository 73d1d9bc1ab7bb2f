// Reference kernels: MatMul through Eigen's GEMM on row-major maps (Eigen's
// product runs on the OpenMP pool), BiasAdd and BiasAddGrad as Eigen array
// expressions over [rows, C] views, in parallel over rows.
#include <Eigen/Core>

#include "hub/core/parallel.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowArr = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void matmul_kernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  Tensor& out = c.output(0);
  bool ta = c.attrs().get_bool("transpose_a"), tb = c.attrs().get_bool("transpose_b");
  Eigen::Map<const RowMat> A(a.data<float>(), a.dim(0), a.dim(1));
  Eigen::Map<const RowMat> B(b.data<float>(), b.dim(0), b.dim(1));
  Eigen::Map<RowMat> C(out.data<float>(), out.dim(0), out.dim(1));
  if (out.num_elements() == 0) return;
  if ((ta ? a.dim(0) : a.dim(1)) == 0) {
    C.setZero();
    return;
  }
  if (!ta && !tb) C.noalias() = A * B;
  else if (!ta && tb) C.noalias() = A * B.transpose();
  else if (ta && !tb) C.noalias() = A.transpose() * B;
  else C.noalias() = A.transpose() * B.transpose();
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
HUB_REGISTER_KERNEL(BiasAdd, reference, bias_add_kernel);
HUB_REGISTER_KERNEL(BiasAddGrad, reference, bias_add_grad_kernel);

}  // namespace hub::cpu

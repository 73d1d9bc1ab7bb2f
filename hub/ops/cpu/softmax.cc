#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "hub/core/parallel.h"
#include "hub/ops/node.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using Row = Eigen::Map<const Eigen::ArrayXf>;
using ORow = Eigen::Map<Eigen::ArrayXf>;

// Calls fn(row) for each of `rows` rows of length `cols`, in parallel.
template <class F>
void for_rows(int64_t rows, int64_t cols, F fn) {
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, cols)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) fn(r);
  });
}

// out = log softmax(x) for one row (numerically stable: shifted by the max).
inline void log_softmax_row(const Row& x, ORow out) {
  float m = x.maxCoeff();
  out = x - m;
  float lse = std::log(out.exp().sum());
  out -= lse;
}

// Softmax along `axis` of x viewed as [A, R, B] (R the axis): rows of R
// contiguous values when B = 1; otherwise blocks [R, B-chunk] reduced down
// their columns, vectorized along B.
template <bool kLog>
void softmax_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  if (x.num_elements() == 0) return;
  int axis = static_cast<int>(c.attrs().get_int("axis"));
  if (axis < 0) axis += x.rank();
  int64_t A = 1, R = x.dim(axis), B = 1;
  for (int d = 0; d < axis; ++d) A *= x.dim(d);
  for (int d = axis + 1; d < x.rank(); ++d) B *= x.dim(d);
  const float* px = x.data<float>();
  float* po = y.data<float>();
  if (B == 1) {
    for_rows(A, R, [&](int64_t r) {
      Row in(px + r * R, R);
      ORow out(po + r * R, R);
      if constexpr (kLog) {
        log_softmax_row(in, out);
      } else {
        out = (in - in.maxCoeff()).exp();
        out /= out.sum();
      }
    });
    return;
  }
  using Block = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  const int64_t chunk = std::min<int64_t>(B, 256), chunks = (B + chunk - 1) / chunk;
  for_rows(A * chunks, R * chunk, [&](int64_t w) {
    int64_t a = w / chunks, b0 = (w % chunks) * chunk, len = std::min(chunk, B - b0);
    Eigen::Map<const Block, 0, Stride> in(px + a * R * B + b0, R, len, Stride(B));
    Eigen::Map<Block, 0, Stride> out(po + a * R * B + b0, R, len, Stride(B));
    Eigen::Array<float, 1, Eigen::Dynamic> m = in.colwise().maxCoeff();
    out = in.rowwise() - m;
    if constexpr (kLog) {
      Eigen::Array<float, 1, Eigen::Dynamic> lse = out.exp().colwise().sum().log();
      out.rowwise() -= lse;
    } else {
      out = out.exp();
      Eigen::Array<float, 1, Eigen::Dynamic> sum = out.colwise().sum();
      out.rowwise() /= sum;
    }
  });
}

// loss_r = -sum(labels_r * log softmax(logits_r)); backprop_r = softmax - labels.
void xent_kernel(KernelContext& c) {
  const Tensor& logits = c.input(0);
  const Tensor& labels = c.input(1);
  int64_t n = logits.dim(0), k = logits.dim(1);
  float* loss = c.output(0).data<float>();
  float* back = c.output(1).data<float>();
  if (k == 0) {
    std::fill(loss, loss + n, 0.0f);
    return;
  }
  const float* pl = logits.data<float>();
  const float* py = labels.data<float>();
  for_rows(n, k, [&](int64_t r) {
    ORow logp(back + r * k, k);
    log_softmax_row(Row(pl + r * k, k), logp);
    Row y(py + r * k, k);
    loss[r] = -(y * logp).sum();
    logp = logp.exp() - y;
  });
}

void sparse_xent_kernel(KernelContext& c) {
  const Tensor& logits = c.input(0);
  const Tensor& labels = c.input(1);
  int64_t n = logits.dim(0), k = logits.dim(1);
  std::vector<int64_t> cls(n);
  dispatch_dtype(labels.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      const T* p = labels.data<T>();
      for (int64_t r = 0; r < n; ++r) cls[r] = static_cast<int64_t>(p[r]);
    }
  });
  for (int64_t r = 0; r < n; ++r)
    if (cls[r] < 0 || cls[r] >= k)
      throw_error(Code::kInvalidArgument, "label " + std::to_string(cls[r]) + " at batch index " + std::to_string(r) +
                                              " is outside the valid range [0, " + std::to_string(k) +
                                              ") for C = " + std::to_string(k) + " classes");
  float* loss = c.output(0).data<float>();
  float* back = c.output(1).data<float>();
  const float* pl = logits.data<float>();
  for_rows(n, k, [&](int64_t r) {
    ORow logp(back + r * k, k);
    log_softmax_row(Row(pl + r * k, k), logp);
    loss[r] = -logp[cls[r]];
    logp = logp.exp();
    logp[cls[r]] -= 1.0f;
  });
}

void one_hot_kernel(KernelContext& c) {
  const Tensor& idx = c.input(0);
  int64_t depth = c.attrs().get_int("depth");
  float on = static_cast<float>(c.attrs().get_float("on_value"));
  float off = static_cast<float>(c.attrs().get_float("off_value"));
  float* out = c.output(0).data<float>();
  int64_t n = idx.num_elements();
  auto run = [&](const auto* p) {
    parallel_for(n, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, depth)), [&](int64_t b, int64_t e) {
      ORow(out + b * depth, (e - b) * depth).setConstant(off);
      for (int64_t i = b; i < e; ++i) {
        int64_t j = static_cast<int64_t>(p[i]);
        if (j >= 0 && j < depth) out[i * depth + j] = on;
      }
    });
  };
  if (idx.dtype() == DType::kInt32)
    run(idx.data<int32_t>());
  else
    run(idx.data<int64_t>());
}

}  // namespace

HUB_REGISTER_KERNEL(Softmax, reference, softmax_kernel<false>);
HUB_REGISTER_KERNEL(LogSoftmax, reference, softmax_kernel<true>);
HUB_REGISTER_KERNEL(SoftmaxCrossEntropyWithLogits, reference, xent_kernel);
HUB_REGISTER_KERNEL(SparseSoftmaxCrossEntropyWithLogits, reference, sparse_xent_kernel);
HUB_REGISTER_KERNEL(OneHot, reference, one_hot_kernel);

}  // namespace hub::cpu

// Reference kernels of the fused inference ops (hub/ops/fused.h), composed
// from the ops they replace: the registered reference kernel of Conv2D /
// DepthwiseConv2dNative / MatMul computes z into the output, then bias and
// post-ops are applied in place with Eigen, one row of O channels at a time.
// Blocked inputs and outputs are converted with the _Relayout routines below
// around that, so the arithmetic is exactly the unfused graph's. The
// quantized form dequantizes x and the filter into float temporaries first
// and quantizes z into the output last (DequantizeLinear / QuantizeLinear's
// formulas), so it is the float graph it was made from, step for step.
#include "hub/ops/fused.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "hub/core/parallel.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using Arr = Eigen::ArrayXf;
using Map = Eigen::Map<Arr>;
using CMap = Eigen::Map<const Arr>;

// NHWC [n,h,w,c] <-> blocked [n][c/b][h][w][c%b] (zero past C).
void to_blocked(const float* src, float* dst, int64_t n, int64_t h, int64_t w, int64_t c, int64_t b) {
  const int64_t cb = (c + b - 1) / b;
  parallel_for(n * cb * h, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t y = r % h, k = (r / h) % cb, i = r / (h * cb);
      const int64_t width = std::min(b, c - k * b);
      float* out = dst + r * w * b;
      const float* in = src + (i * h + y) * w * c + k * b;
      for (int64_t x = 0; x < w; ++x) {
        std::memcpy(out + x * b, in + x * c, static_cast<size_t>(width) * sizeof(float));
        std::fill(out + x * b + width, out + (x + 1) * b, 0.0f);
      }
    }
  });
}

void from_blocked(const float* src, float* dst, int64_t n, int64_t h, int64_t w, int64_t c, int64_t b) {
  const int64_t cb = (c + b - 1) / b;
  parallel_for(n * cb * h, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t y = r % h, k = (r / h) % cb, i = r / (h * cb);
      const int64_t width = std::min(b, c - k * b);
      const float* in = src + r * w * b;
      float* out = dst + (i * h + y) * w * c + k * b;
      for (int64_t x = 0; x < w; ++x) std::memcpy(out + x * c, in + x * b, static_cast<size_t>(width) * sizeof(float));
    }
  });
}

Tensor unblock(KernelContext& c, const Tensor& t, int64_t channels) {
  const Shape& s = t.shape();  // [N, CB, H, W, b]
  Tensor out = c.temp(DType::kFloat32, Shape{s[0], s[2], s[3], channels});
  from_blocked(t.data<float>(), out.data<float>(), s[0], s[2], s[3], channels, s[4]);
  return out;
}

// z (rows x o, row-major) += bias, then the post-ops; side is rows x o.
void bias_and_post_ops(float* z, int64_t rows, int64_t o, const float* bias, const float* side,
                       const std::vector<ops::PostOp>& post_ops) {
  CMap b(bias, o);
  parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(o, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      Map v(z + r * o, o);
      v += b;
      for (const ops::PostOp& p : post_ops) {
        const float a = p.alpha, beta = p.beta;
        if (p.op == "Add")
          v += CMap(side + r * o, o);
        else if (p.op == "Relu")
          v = v.max(0.0f);
        else if (p.op == "LeakyRelu")
          v = (v > 0.0f).select(v, v * a);
        else if (p.op == "Relu6")
          v = v.max(0.0f).min(6.0f);
        else if (p.op == "Clip")
          v = v.max(a).min(beta);
        else if (p.op == "Elu")
          v = (v > 0.0f).select(v, (v.min(0.0f).exp() - 1.0f) * a);
        else if (p.op == "Sigmoid")
          v = ((-v).exp() + 1.0f).inverse();
        else if (p.op == "Tanh")
          v = v.tanh();
        else if (p.op == "HardSwish")
          v = v * (v + 3.0f).max(0.0f).min(6.0f) / 6.0f;
        else
          HUB_UNREACHABLE("post-op " + p.op);
      }
    }
  });
}

// (x - zero_point) * scale as a float32 temporary of x's shape.
template <class Q>
Tensor dequantized_as(KernelContext& c, const Tensor& x, float scale, int32_t zero_point) {
  Tensor out = c.temp(DType::kFloat32, x.shape());
  Eigen::Map<const Eigen::Array<Q, Eigen::Dynamic, 1>> q(x.data<Q>(), x.num_elements());
  Map(out.data<float>(), x.num_elements()) = (q.template cast<float>() - static_cast<float>(zero_point)) * scale;
  return out;
}
Tensor dequantized(KernelContext& c, const Tensor& x, float scale, int32_t zero_point) {
  return x.dtype() == DType::kInt8 ? dequantized_as<int8_t>(c, x, scale, zero_point)
                                   : dequantized_as<uint8_t>(c, x, scale, zero_point);
}

// The int8 filter times its scales (one, or one per output channel: the
// last dim, or the rows of a transposed MatMul operand).
Tensor dequantized_filter(KernelContext& c, const Tensor& w, const std::vector<float>& scales, bool by_rows) {
  Tensor out = dequantized_as<int8_t>(c, w, 1.0f, 0);
  const int64_t channels = static_cast<int64_t>(scales.size()), rows = w.num_elements() / channels;
  CMap s(scales.data(), channels);
  using M = Eigen::Map<Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
  if (by_rows)
    M(out.data<float>(), channels, rows).colwise() *= s;
  else
    M(out.data<float>(), rows, channels).rowwise() *= s.transpose();
  return out;
}

// y = saturate(round_half_even(z / scale) + zero_point) in y's dtype.
template <class Q>
void quantize_as(const Tensor& z, Tensor& y, float scale, int32_t zero_point) {
  const float lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  parallel_for(z.num_elements(), 16384, [&](int64_t b, int64_t e) {
    CMap v(z.data<float>() + b, e - b);
    Eigen::Map<Eigen::Array<Q, Eigen::Dynamic, 1>>(y.data<Q>() + b, e - b) =
        ((v / scale).unaryExpr([](float t) { return std::rint(t); }) + static_cast<float>(zero_point))
            .max(lo)
            .min(hi)
            .template cast<Q>();
  });
}

// The fused node's x and filter as float32: themselves, or dequantized.
std::pair<Tensor, Tensor> float_operands(KernelContext& c, const Tensor& x, const ops::FusedQuantization& q,
                                         bool filter_by_rows) {
  if (!q.quantized()) return {x, c.input(1)};
  return {dequantized(c, x, q.src_scale, q.src_zero_point),
          dequantized_filter(c, c.input(1), q.filter_scales, filter_by_rows)};
}

// Writes z into the output: quantized when the node says so (z is then a
// temporary), else z is the output already.
void store(KernelContext& c, const Tensor& z, const ops::FusedQuantization& q) {
  if (!q.quantized_output()) return;
  if (q.dst_type == DType::kInt8)
    quantize_as<int8_t>(z, c.output(0), q.dst_scale, q.dst_zero_point);
  else
    quantize_as<uint8_t>(z, c.output(0), q.dst_scale, q.dst_zero_point);
}

// Runs the reference kernel of `op` on `inputs` (attributes of `fused`),
// writing its one output into `out`.
void run_reference(KernelContext& c, const std::string& op, std::vector<const Tensor*> inputs, Tensor out) {
  Node node = c.node();
  node.op = op;
  const KernelDef* k = OpRegistry::global().kernel(op, "reference");
  HUB_CHECK(k != nullptr, "no reference kernel for " + op);
  std::vector<TensorSpec> specs{{out.dtype(), out.shape()}};
  KernelContext inner(node, std::move(inputs), specs, c.allocator(), nullptr, c.seed());
  inner.outputs()[0] = out;
  k->fn(inner);
  HUB_CHECK(inner.outputs()[0].raw_data() == out.raw_data(), op + " did not write its given output");
}

// The side input as NHWC (or [M,N]), read before the output is written: a
// copy when the session placed the output in the side input's buffer.
Tensor side_input(KernelContext& c, int64_t channels, int64_t dst_block) {
  if (c.num_inputs() <= 3) return Tensor();
  const Tensor& side = c.input(3);
  if (dst_block > 0) return unblock(c, side, channels);
  if (side.raw_data() != static_cast<const Tensor&>(c.output(0)).raw_data()) return side;
  Tensor copy = c.temp(DType::kFloat32, side.shape());
  std::memcpy(copy.raw_data(), side.raw_data(), side.nbytes());
  return copy;
}

// z holds the fused op's main op (NHWC, or [M,N]): adds bias, applies the
// post-ops and, when dst is blocked, writes z blocked into the output.
void finish(KernelContext& c, Tensor z, const Tensor& side, int64_t channels, int64_t dst_block) {
  const std::vector<ops::PostOp> post_ops = ops::post_ops_of(c.attrs());
  const int64_t rows = channels > 0 ? z.num_elements() / channels : 0;
  bias_and_post_ops(z.data<float>(), rows, channels, c.input(2).data<float>(),
                    side.defined() ? side.data<float>() : nullptr, post_ops);
  if (dst_block > 0) {
    const Shape& s = z.shape();
    to_blocked(z.data<float>(), c.output(0).data<float>(), s[0], s[1], s[2], s[3], dst_block);
  }
}

void fused_conv2d_kernel(KernelContext& c) {
  const bool depthwise = c.attrs().get_bool("depthwise");
  const int64_t src_block = c.attrs().get_int("src_block"), dst_block = c.attrs().get_int("dst_block");
  const ops::FusedQuantization q = ops::quantization_of(c.attrs());
  const int64_t channels = c.input(2).dim(0);
  Tensor side = side_input(c, channels, dst_block);
  Tensor z;
  if (dst_block > 0) {
    const Shape& y = c.output_spec(0).shape;  // [N, CB, OH, OW, b]
    z = c.temp(DType::kFloat32, Shape{y[0], y[2], y[3], channels});
  } else if (q.quantized_output()) {
    z = c.temp(DType::kFloat32, c.output_spec(0).shape);
  } else {
    z = c.output(0);
  }
  if (z.num_elements() == 0) return;
  const auto [x, w] =
      float_operands(c, src_block > 0 ? unblock(c, c.input(0), c.input(1).dim(2)) : c.input(0), q, false);
  run_reference(c, depthwise ? "DepthwiseConv2dNative" : "Conv2D", {&x, &w}, z);
  finish(c, z, side, channels, dst_block);
  store(c, z, q);
}

void fused_matmul_kernel(KernelContext& c) {
  const ops::FusedQuantization q = ops::quantization_of(c.attrs());
  Tensor side = side_input(c, c.output_spec(0).shape[1], 0);
  Tensor z = q.quantized_output() ? c.temp(DType::kFloat32, c.output_spec(0).shape) : c.output(0);
  if (z.num_elements() == 0) return;
  const auto [a, b] = float_operands(c, c.input(0), q, c.attrs().get_bool("transpose_b"));
  run_reference(c, "MatMul", {&a, &b}, z);
  finish(c, z, side, z.dim(1), 0);
  store(c, z, q);
}

void relayout_kernel(KernelContext& c) {
  const int64_t from = c.attrs().get_int("from_block"), to = c.attrs().get_int("to_block");
  const int64_t ch = c.attrs().get_int("channels");
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  if (y.num_elements() == 0) return;
  if (from == 0)
    to_blocked(x.data<float>(), y.data<float>(), x.dim(0), x.dim(1), x.dim(2), ch, to);
  else
    from_blocked(x.data<float>(), y.data<float>(), x.dim(0), x.dim(2), x.dim(3), ch, from);
}

}  // namespace

HUB_REGISTER_KERNEL(_FusedConv2D, reference, fused_conv2d_kernel);
HUB_REGISTER_KERNEL(_FusedMatMul, reference, fused_matmul_kernel);
HUB_REGISTER_KERNEL(_Relayout, reference, relayout_kernel);

}  // namespace hub::cpu

// Reference QuantizeLinear / DequantizeLinear kernels (formulas in
// hub/ops/quantize.h): x viewed as [outer, C, inner] around the axis (C = 1
// per tensor); each chunk of an (outer, c) row of `inner` elements is one
// Eigen array expression with its channel's scale and zero point. Parallel
// over the chunks.
//
// Fake quantization: per tensor, one Eigen expression per chunk of x (the
// gradient's sums per chunk, added in order);
// per channel, x viewed as [rows, C] and one expression per row with the
// channels' grids as C-vectors.
#include "hub/ops/quantize.h"

#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <vector>

#include "hub/core/parallel.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using Row = Eigen::Array<float, Eigen::Dynamic, 1>;

// x's shape as [outer, C, inner] around the quantization axis.
struct Layout {
  int64_t outer = 1, channels = 1, inner = 1;
};
Layout layout_of(const KernelContext& c) {
  const Shape& x = c.input(0).shape();
  Layout l;
  l.inner = c.input(0).num_elements();
  if (c.input(1).shape().rank() == 0) return l;
  int64_t axis = c.attrs().get_int("axis");
  if (axis < 0) axis += x.rank();
  l.outer = 1;
  for (int d = 0; d < axis; ++d) l.outer *= x[d];
  l.channels = x[static_cast<int>(axis)];
  l.inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < x.rank(); ++d) l.inner *= x[d];
  return l;
}

void check_scales(const KernelContext& c) {
  const Tensor& scale = c.input(1);
  for (int64_t i = 0; i < scale.num_elements(); ++i) {
    const float s = scale.data<float>()[i];
    if (!(s > 0) || !std::isfinite(s))
      throw_error(Code::kInvalidArgument, "node '" + c.node().name + "' (" + c.node().op + "): scale " +
                                              std::to_string(i) + " is " + std::to_string(s) + ", must be > 0");
  }
}

// Calls f(channel, offset, length) over `l` in chunks of at most
// kChunk elements of one row, in parallel: a per-tensor (de)quantization is
// one long row.
constexpr int64_t kChunk = 16384;
template <class F>
void for_each_chunk(const Layout& l, const F& f) {
  const int64_t chunks = (l.inner + kChunk - 1) / kChunk;
  parallel_for(l.outer * l.channels * chunks,
               std::max<int64_t>(1, 4096 / std::min(std::max<int64_t>(l.inner, 1), kChunk)), [&](int64_t b, int64_t e) {
                 for (int64_t t = b; t < e; ++t) {
                   const int64_t r = t / chunks, offset = (t % chunks) * kChunk;
                   f(r % l.channels, r * l.inner + offset, std::min(kChunk, l.inner - offset));
                 }
               });
}

template <class Q>
void quantize(KernelContext& c) {
  check_scales(c);
  const float* x = c.input(0).data<float>();
  const float* scale = c.input(1).data<float>();
  const Q* zp = c.input(2).data<Q>();
  Q* y = c.output(0).data<Q>();
  constexpr float lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  for_each_chunk(layout_of(c), [&](int64_t ch, int64_t offset, int64_t n) {
    Eigen::Map<const Row> xs(x + offset, n);
    // rint rounds half to even in the default rounding mode; NaN -> 0.
    Eigen::Map<Eigen::Array<Q, Eigen::Dynamic, 1>>(y + offset, n) =
        ((xs == xs).select((xs / scale[ch]).rint(), 0.0f) + static_cast<float>(zp[ch]))
            .max(lo)
            .min(hi)
            .template cast<Q>();
  });
}

template <class Q>
void dequantize(KernelContext& c) {
  check_scales(c);
  const Q* x = c.input(0).data<Q>();
  const float* scale = c.input(1).data<float>();
  const Q* zp = c.input(2).data<Q>();
  float* y = c.output(0).data<float>();
  for_each_chunk(layout_of(c), [&](int64_t ch, int64_t offset, int64_t n) {
    Eigen::Map<const Eigen::Array<Q, Eigen::Dynamic, 1>> xs(x + offset, n);
    // In double: int32 values and zero points differ by up to 2^32.
    Eigen::Map<Row>(y + offset, n) =
        ((xs.template cast<double>() - static_cast<double>(zp[ch])) * static_cast<double>(scale[ch]))
            .template cast<float>();
  });
}

void quantize_kernel(KernelContext& c) {
  if (c.input(2).dtype() == DType::kInt8)
    quantize<int8_t>(c);
  else
    quantize<uint8_t>(c);
}

void dequantize_kernel(KernelContext& c) {
  switch (c.input(0).dtype()) {
    case DType::kInt8:
      return dequantize<int8_t>(c);
    case DType::kUInt8:
      return dequantize<uint8_t>(c);
    default:
      return dequantize<int32_t>(c);
  }
}

// The grids of fake quantization's min/max inputs (at `first`, `first`+1):
// clamp bounds lo/hi and step scale per channel (one entry per tensor), and
// the bounds inside which the gradient passes. min = max = 0 is TensorFlow's
// "output zero, pass every gradient" case: grid [0, 0] step 1, unbounded pass.
struct Grids {
  Eigen::ArrayXf lo, hi, scale, pass_lo, pass_hi;
};
Grids grids_of(const KernelContext& c, int first) {
  const Tensor& min = c.input(first);
  const Tensor& max = c.input(first + 1);
  const int64_t n = min.num_elements();
  const int bits = static_cast<int>(c.attrs().get_int("num_bits"));
  const bool narrow = c.attrs().get_bool("narrow_range");
  constexpr float inf = std::numeric_limits<float>::infinity();
  Grids g{Eigen::ArrayXf(n), Eigen::ArrayXf(n), Eigen::ArrayXf(n), Eigen::ArrayXf(n), Eigen::ArrayXf(n)};
  for (int64_t i = 0; i < n; ++i) {
    const float lo = min.data<float>()[i], hi = max.data<float>()[i];
    const std::string where = "node '" + c.node().name + "' (" + c.node().op + ")";
    if (lo > hi)
      throw_error(Code::kInvalidArgument, where + ": min " + std::to_string(lo) + " > max " + std::to_string(hi) +
                                              (n > 1 ? " in channel " + std::to_string(i) : std::string()));
    if (lo == 0 && hi == 0) {
      g.lo[i] = g.hi[i] = 0;
      g.scale[i] = 1;
      g.pass_lo[i] = -inf;
      g.pass_hi[i] = inf;
      continue;
    }
    ops::QuantParams p;
    try {
      p = ops::nudged_quant_params(lo, hi, bits, narrow);
    } catch (const Error& e) {
      throw e.with_context(where);
    }
    g.lo[i] = g.pass_lo[i] = p.nudged_min;
    g.hi[i] = g.pass_hi[i] = p.nudged_max;
    g.scale[i] = p.scale;
  }
  return g;
}

// y = floor((clamp(x, lo, hi) - lo) / scale + 0.5) * scale + lo, for a chunk
// with scalar bounds or a row with C-vector ones.
template <class X, class B>
auto snapped(const X& x, const B& lo, const B& hi, const B& scale) {
  return ((x.min(hi).max(lo) - lo) / scale + 0.5f).floor() * scale + lo;
}

// Rows of C channels; C = 1 per tensor, where chunks of x are the rows.
void fake_quant_kernel(KernelContext& c) {
  const Grids g = grids_of(c, 1);
  const int64_t n = c.input(0).num_elements(), channels = g.lo.size();
  const float* x = c.input(0).data<float>();
  float* y = c.output(0).data<float>();
  if (channels == 1) {
    for_each_chunk(Layout{1, 1, n}, [&](int64_t, int64_t offset, int64_t len) {
      Eigen::Map<Row>(y + offset, len) = snapped(Eigen::Map<const Row>(x + offset, len), g.lo[0], g.hi[0], g.scale[0]);
    });
    return;
  }
  parallel_for(n / channels, std::max<int64_t>(1, 16384 / channels), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      Eigen::Map<Row>(y + r * channels, channels) =
          snapped(Eigen::Map<const Row>(x + r * channels, channels), g.lo, g.hi, g.scale);
  });
}

// (g, x, min, max) -> dx, dmin, dmax (sums in double over the rows).
void fake_quant_grad_kernel(KernelContext& c) {
  const Grids grid = grids_of(c, 2);
  const int64_t n = c.input(1).num_elements(), channels = grid.lo.size();
  const float* g = c.input(0).data<float>();
  const float* x = c.input(1).data<float>();
  float* dx = c.output(0).data<float>();
  Eigen::ArrayXd below = Eigen::ArrayXd::Zero(channels), above = Eigen::ArrayXd::Zero(channels);
  if (channels == 1) {
    // Per chunk, in parallel; the chunks' sums are added in order, so the
    // result does not depend on the number of threads.
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> chunk_below(static_cast<size_t>(chunks)), chunk_above(static_cast<size_t>(chunks));
    for_each_chunk(Layout{1, 1, n}, [&](int64_t, int64_t offset, int64_t len) {
      Eigen::Map<const Row> gs(g + offset, len), xs(x + offset, len);
      Eigen::Map<Row>(dx + offset, len) = (xs >= grid.pass_lo[0] && xs <= grid.pass_hi[0]).select(gs, 0.0f);
      chunk_below[static_cast<size_t>(offset / kChunk)] = (xs < grid.pass_lo[0]).select(gs, 0.0f).cast<double>().sum();
      chunk_above[static_cast<size_t>(offset / kChunk)] = (xs > grid.pass_hi[0]).select(gs, 0.0f).cast<double>().sum();
    });
    for (int64_t k = 0; k < chunks; ++k) {
      below[0] += chunk_below[static_cast<size_t>(k)];
      above[0] += chunk_above[static_cast<size_t>(k)];
    }
  } else {
    for (int64_t r = 0; r < n / channels; ++r) {
      Eigen::Map<const Row> gs(g + r * channels, channels), xs(x + r * channels, channels);
      Eigen::Map<Row>(dx + r * channels, channels) = (xs >= grid.pass_lo && xs <= grid.pass_hi).select(gs, 0.0f);
      below += (xs < grid.pass_lo).select(gs, 0.0f).cast<double>();
      above += (xs > grid.pass_hi).select(gs, 0.0f).cast<double>();
    }
  }
  Eigen::Map<Row>(c.output(1).data<float>(), channels) = below.cast<float>();
  Eigen::Map<Row>(c.output(2).data<float>(), channels) = above.cast<float>();
}

}  // namespace

HUB_REGISTER_KERNEL(FakeQuantWithMinMaxVars, reference, fake_quant_kernel);
HUB_REGISTER_KERNEL(FakeQuantWithMinMaxVarsPerChannel, reference, fake_quant_kernel);
HUB_REGISTER_KERNEL(FakeQuantWithMinMaxVarsGradient, reference, fake_quant_grad_kernel);
HUB_REGISTER_KERNEL(FakeQuantWithMinMaxVarsPerChannelGradient, reference, fake_quant_grad_kernel);
HUB_REGISTER_KERNEL(QuantizeLinear, reference, quantize_kernel);
HUB_REGISTER_KERNEL(DequantizeLinear, reference, dequantize_kernel);

}  // namespace hub::cpu

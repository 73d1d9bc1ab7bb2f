// Reference QuantizeLinear / DequantizeLinear kernels (formulas in
// hub/ops/quantize.h): x viewed as [outer, C, inner] around the axis (C = 1
// per tensor); each (outer, c) row of `inner` elements is one Eigen array
// expression with its channel's scale and zero point. Parallel over rows.
#include <Eigen/Core>
#include <cmath>
#include <limits>

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

template <class Q>
void quantize(KernelContext& c) {
  check_scales(c);
  const Layout l = layout_of(c);
  const float* x = c.input(0).data<float>();
  const float* scale = c.input(1).data<float>();
  const Q* zp = c.input(2).data<Q>();
  Q* y = c.output(0).data<Q>();
  constexpr float lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  parallel_for(l.outer * l.channels, std::max<int64_t>(1, 4096 / std::max<int64_t>(l.inner, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t r = b; r < e; ++r) {
                   const int64_t ch = r % l.channels;
                   Eigen::Map<const Row> xs(x + r * l.inner, l.inner);
                   // rint rounds half to even in the default rounding mode; NaN -> 0.
                   Row q = (xs / scale[ch]).unaryExpr([](float v) { return std::isnan(v) ? 0.0f : std::rint(v); });
                   Eigen::Map<Eigen::Array<Q, Eigen::Dynamic, 1>>(y + r * l.inner, l.inner) =
                       (q + static_cast<float>(zp[ch])).max(lo).min(hi).template cast<Q>();
                 }
               });
}

template <class Q>
void dequantize(KernelContext& c) {
  check_scales(c);
  const Layout l = layout_of(c);
  const Q* x = c.input(0).data<Q>();
  const float* scale = c.input(1).data<float>();
  const Q* zp = c.input(2).data<Q>();
  float* y = c.output(0).data<float>();
  parallel_for(l.outer * l.channels, std::max<int64_t>(1, 4096 / std::max<int64_t>(l.inner, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t r = b; r < e; ++r) {
                   const int64_t ch = r % l.channels;
                   Eigen::Map<const Eigen::Array<Q, Eigen::Dynamic, 1>> xs(x + r * l.inner, l.inner);
                   // In double: int32 values and zero points differ by up to 2^32.
                   Eigen::Map<Row>(y + r * l.inner, l.inner) =
                       ((xs.template cast<double>() - static_cast<double>(zp[ch])) * static_cast<double>(scale[ch]))
                           .template cast<float>();
                 }
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

}  // namespace

HUB_REGISTER_KERNEL(QuantizeLinear, reference, quantize_kernel);
HUB_REGISTER_KERNEL(DequantizeLinear, reference, dequantize_kernel);

}  // namespace hub::cpu

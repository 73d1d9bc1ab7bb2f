// CUDA kernels for MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad (NHWC;
// semantics in hub/ops/pool.h, reference kernels in hub/ops/cpu/pool.cc).
//
// These are hub's own kernels, not cuDNN's pooling: cuDNN pads symmetrically
// (TF's SAME puts an odd padding pixel after), cannot express ceil_mode's
// overhang past the padding, and divides an average by the whole window or by
// its part inside symmetric padding, neither of which is hub's divisor. Here
// every window is exactly the reference's: the in-bounds taps of each output
// row and column come from ops::pool_taps (PoolGeometry::row_taps/col_taps)
// on the host, once per input shape, and stay on the device in the node's
// kernel state (a Session clears it when the input shape changes).
//
// Forward: one thread per output element, channels innermost, so a warp's
// loads of each tap and its stores are contiguous. A maximum keeps the first
// largest tap in scan order (rows, then columns; NaN taps never win), an
// average adds the taps in that order and multiplies by 1/divisor, as the
// reference does; 8-bit averages round half to even. MaxPool and AvgPool take
// float32, uint8 and int8 like the reference.
//
// Backward: a gather, deterministic and free of atomics. One thread per
// input element sums over the windows that contain it as a tap (per row and
// per column: lists made on the host from the same taps, in increasing window
// order, which is the order the reference accumulates in). MaxPoolGrad first
// records each window's argmax (the first maximum in scan order, TF's rule) as
// a pixel index h*W + w; an input pixel then takes the grads of the windows
// whose argmax it is. AvgPoolGrad adds grad / divisor of each window.
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "hub/ops/cuda/common.h"
#include "hub/ops/pool.h"

namespace hub::cuda {
namespace {

// PoolGeometry::divisor on the device: count_include_pad counts the taps
// inside the padding, else the in-bounds ones.
__device__ int64_t divisor(const ops::PoolGeometry& g, const ops::PoolTaps& rows, const ops::PoolTaps& cols) {
  return g.count_include_pad ? rows.extent * cols.extent : rows.count * cols.count;
}

template <class T>
__device__ T from_float(float v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else
    return static_cast<T>(rintf(v));  // exact for maxima; averages round half to even
}

template <class T, bool kMax>
__global__ void pool_kernel(const T* x, T* y, ops::PoolGeometry g, const ops::PoolTaps* row_taps,
                            const ops::PoolTaps* col_taps, int64_t total) {
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t c = idx % g.c, pixel = idx / g.c;  // output pixel (n, i, j)
    const int64_t j = pixel % g.ow, i = pixel / g.ow % g.oh, n = pixel / (g.ow * g.oh);
    const ops::PoolTaps rows = row_taps[i], cols = col_taps[j];
    const T* xn = x + n * g.h * g.w * g.c + c;
    float acc = kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
    for (int64_t a = 0; a < rows.count; ++a) {
      const T* row = xn + (rows.first + a * g.dh) * g.w * g.c;
      for (int64_t b = 0; b < cols.count; ++b) {
        const float v = static_cast<float>(row[(cols.first + b * g.dw) * g.c]);
        if constexpr (kMax)
          acc = acc < v ? v : acc;
        else
          acc += v;
      }
    }
    if constexpr (!kMax) acc *= 1.0f / static_cast<float>(divisor(g, rows, cols));
    y[idx] = from_float<T>(acc);
  }
}

// arg[n,i,j,c] = h*W + w of the first maximum of window (i, j) in scan order
// (strictly greater replaces), as the reference's MaxPoolGrad picks it.
__global__ void argmax_kernel(const float* x, int32_t* arg, ops::PoolGeometry g, const ops::PoolTaps* row_taps,
                              const ops::PoolTaps* col_taps, int64_t total) {
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t c = idx % g.c, pixel = idx / g.c;
    const int64_t j = pixel % g.ow, i = pixel / g.ow % g.oh, n = pixel / (g.ow * g.oh);
    const ops::PoolTaps rows = row_taps[i], cols = col_taps[j];
    const float* xn = x + n * g.h * g.w * g.c + c;
    int64_t best_pos = rows.first * g.w + cols.first;  // the geometry has no empty window
    float best = xn[best_pos * g.c];
    for (int64_t a = 0; a < rows.count; ++a) {
      const int64_t row = (rows.first + a * g.dh) * g.w;
      for (int64_t b = 0; b < cols.count; ++b) {
        const int64_t pos = row + cols.first + b * g.dw;
        const float v = xn[pos * g.c];
        if (v > best) {
          best = v;
          best_pos = pos;
        }
      }
    }
    arg[idx] = static_cast<int32_t>(best_pos);
  }
}

// The windows (output rows, output columns) that contain each input row and
// column as a tap: those of input row h are row_windows[row_start[h] ..
// row_start[h+1]), increasing; likewise for columns.
struct Windows {
  const int64_t *row_start, *row_windows, *col_start, *col_windows;
};

// dx[n,h,w,c] = sum over the windows (i, j) containing (h, w), in increasing
// (i, j) order, of grad[n,i,j,c] where arg[n,i,j,c] == h*W + w (kMax), or of
// grad[n,i,j,c] / divisor(i, j).
template <bool kMax>
__global__ void pool_grad_kernel(const float* grad, const int32_t* arg, float* dx, ops::PoolGeometry g,
                                 const ops::PoolTaps* row_taps, const ops::PoolTaps* col_taps, Windows windows,
                                 int64_t total) {
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t c = idx % g.c, pixel = idx / g.c;  // input pixel (n, h, w)
    const int64_t w = pixel % g.w, h = pixel / g.w % g.h, n = pixel / (g.w * g.h);
    const int64_t out_image = n * g.oh * g.ow;
    float sum = 0.0f;
    for (int64_t e = windows.row_start[h]; e < windows.row_start[h + 1]; ++e) {
      const int64_t i = windows.row_windows[e];
      for (int64_t f = windows.col_start[w]; f < windows.col_start[w + 1]; ++f) {
        const int64_t j = windows.col_windows[f];
        const int64_t o = (out_image + i * g.ow + j) * g.c + c;
        if constexpr (kMax) {
          if (arg[o] == h * g.w + w) sum += grad[o];
        } else {
          sum += grad[o] / static_cast<float>(divisor(g, row_taps[i], col_taps[j]));
        }
      }
    }
    dx[idx] = sum;
  }
}

// The windows containing each of the `in` positions of one axis, as a start
// index per position (in + 1 entries) followed by the window lists, appended
// to `out`; returns the offset of the lists within `out`.
int64_t append_windows(const std::vector<ops::PoolTaps>& taps, int64_t in, int64_t dilation,
                       std::vector<int64_t>& out) {
  const size_t start = out.size();
  out.resize(start + static_cast<size_t>(in) + 1, 0);
  int64_t* count = out.data() + start + 1;
  for (const ops::PoolTaps& t : taps)
    for (int64_t k = 0; k < t.count; ++k) ++count[t.first + k * dilation];
  for (int64_t p = 0; p < in; ++p) count[p] += count[p - 1];  // count[-1] is the zero start
  const size_t lists = out.size();
  out.resize(lists + static_cast<size_t>(out.back()));
  std::vector<int64_t> next(out.begin() + static_cast<int64_t>(start), out.begin() + static_cast<int64_t>(start) + in);
  for (int64_t o = 0; o < static_cast<int64_t>(taps.size()); ++o)
    for (int64_t k = 0; k < taps[o].count; ++k) out[lists + next[taps[o].first + k * dilation]++] = o;
  return static_cast<int64_t>(lists);
}

// The geometry's taps on the device, and for the gradients the windows
// containing each input row and column.
struct Tables {
  Tensor taps, windows;  // device bytes
  const ops::PoolTaps *rows = nullptr, *cols = nullptr;
  Windows contain{};
};

const Tables& tables(KernelContext& c, const ops::PoolGeometry& g, bool with_windows) {
  auto& state = c.state();
  if (state) return *static_cast<const Tables*>(state.get());
  auto t = std::make_shared<Tables>();
  std::vector<ops::PoolTaps> rows(g.oh), cols(g.ow);
  for (int64_t i = 0; i < g.oh; ++i) rows[i] = g.row_taps(i);
  for (int64_t j = 0; j < g.ow; ++j) cols[j] = g.col_taps(j);
  std::vector<ops::PoolTaps> all = rows;
  all.insert(all.end(), cols.begin(), cols.end());
  t->taps = upload(c, all);
  t->rows = reinterpret_cast<const ops::PoolTaps*>(t->taps.device_data<uint8_t>());
  t->cols = t->rows + g.oh;
  if (with_windows) {
    std::vector<int64_t> host;
    const int64_t row_lists = append_windows(rows, g.h, g.dh, host);
    const int64_t col_start = static_cast<int64_t>(host.size());
    const int64_t col_lists = append_windows(cols, g.w, g.dw, host);
    t->windows = upload(c, host);
    const int64_t* base = reinterpret_cast<const int64_t*>(t->windows.device_data<uint8_t>());
    t->contain = {base, base + row_lists, base + col_start, base + col_lists};
  }
  state = t;
  return *t;
}

ops::PoolGeometry geometry_of(const KernelContext& c) {
  return ops::pool_geometry(c.attrs(), c.input(0).shape(), c.node().name);
}

template <class T, bool kMax>
void pool(KernelContext& c, const ops::PoolGeometry& g) {
  const int64_t total = g.n * g.oh * g.ow * g.c;
  if (total == 0) return;
  const Tables& t = tables(c, g, false);
  pool_kernel<T, kMax><<<blocks_for(total), kThreads, 0, stream()>>>(
      c.input(0).device_data<T>(), c.output(0).device_data<T>(), g, t.rows, t.cols, total);
  HUB_CUDA_CHECK(cudaGetLastError());
}

template <bool kMax>
void pool_forward(KernelContext& c) {
  const ops::PoolGeometry g = geometry_of(c);
  switch (c.input(0).dtype()) {
    case DType::kUInt8:
      return pool<uint8_t, kMax>(c, g);
    case DType::kInt8:
      return pool<int8_t, kMax>(c, g);
    default:
      return pool<float, kMax>(c, g);
  }
}

// MaxPoolGrad(x, y, grad) and AvgPoolGrad(x_like, grad): grad is the last input.
template <bool kMax>
void pool_backward(KernelContext& c) {
  const ops::PoolGeometry g = geometry_of(c);
  const int64_t total = g.n * g.h * g.w * g.c, outputs = g.n * g.oh * g.ow * g.c;
  if (total == 0) return;
  const Tables& t = tables(c, g, true);
  const float* grad = c.input(c.num_inputs() - 1).device_data<float>();
  Tensor arg;  // MaxPoolGrad: each window's argmax
  if constexpr (kMax) {
    arg = c.temp(DType::kInt32, Shape{outputs});
    argmax_kernel<<<blocks_for(outputs), kThreads, 0, stream()>>>(
        c.input(0).device_data<float>(), arg.device_data<int32_t>(), g, t.rows, t.cols, outputs);
    HUB_CUDA_CHECK(cudaGetLastError());
  }
  pool_grad_kernel<kMax><<<blocks_for(total), kThreads, 0, stream()>>>(
      grad, arg.defined() ? arg.device_data<int32_t>() : nullptr, c.output(0).device_data<float>(), g, t.rows, t.cols,
      t.contain, total);
  HUB_CUDA_CHECK(cudaGetLastError());
}

// The argmax is an int32 pixel index within an image.
bool supports_max_pool_grad(const Node&, const std::vector<TensorSpec>& inputs) {
  const Shape& x = inputs[0].shape;
  return x[1] * x[2] <= std::numeric_limits<int32_t>::max();
}

}  // namespace

HUB_REGISTER_KERNEL(MaxPool, cuda, pool_forward<true>);
HUB_REGISTER_KERNEL(AvgPool, cuda, pool_forward<false>);
HUB_REGISTER_KERNEL(MaxPoolGrad, cuda, pool_backward<true>, supports_max_pool_grad);
HUB_REGISTER_KERNEL(AvgPoolGrad, cuda, pool_backward<false>);

}  // namespace hub::cuda

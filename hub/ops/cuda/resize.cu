// CUDA kernels for Resize and ResizeGrad (NHWC float32; semantics in
// hub/ops/resize.h, reference kernels in hub/ops/cpu/resize.cc over
// hub::resample_nhwc).
//
// Every mode and coordinate convention samples exactly where the reference
// does: the per-axis plan comes from ops::resize_plan on the host (ONNX's
// double-precision coordinate formulas, nearest rounding, clamping), once
// per input shape, and stays on the device in the node's kernel state (a
// Session clears it when the input shape changes). The kernels only read it.
//
// Resize: one thread per output element, channels innermost (a warp's loads
// of each neighbour and its stores are contiguous). Nearest copies the chosen
// pixel; linear lerps along W, then H, in the reference's order.
//
// ResizeGrad, the adjoint: a gather, deterministic and free of atomics. For
// each input row (column), the host lists the output rows (columns) that read
// it with their weights (nearest: 1; linear: 1 - frac for the lower
// neighbour, frac for the upper); one thread per input element then sums
// grad * (row weight * column weight) over the pairs, the product the
// reference scatters.
#include <cstdint>
#include <memory>
#include <vector>

#include "hub/core/resample.h"
#include "hub/ops/cuda/common.h"
#include "hub/ops/resize.h"

namespace hub::cuda {
namespace {

// Output index o along one axis reads input indices lo and hi with weights
// 1 - frac and frac (nearest: lo == hi, frac 0).
struct Sample {
  int64_t lo, hi;
  float frac;
};

// An output index reading a given input index, with its weight.
struct Share {
  int64_t out;
  float weight;
};

struct Dims {
  int64_t h, w, c, oh, ow;
};

template <bool kNearest>
__global__ void resize_kernel(const float* x, float* y, Dims d, const Sample* rows, const Sample* cols, int64_t total) {
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t c = idx % d.c, pixel = idx / d.c;  // output pixel (n, i, j)
    const int64_t j = pixel % d.ow, i = pixel / d.ow % d.oh, n = pixel / (d.ow * d.oh);
    const Sample r = rows[i], s = cols[j];
    const float* xn = x + n * d.h * d.w * d.c + c;
    const float* top = xn + r.lo * d.w * d.c;
    if constexpr (kNearest) {
      y[idx] = top[s.lo * d.c];
    } else {
      const float* bottom = xn + r.hi * d.w * d.c;
      const float tl = top[s.lo * d.c], tr = top[s.hi * d.c];
      const float bl = bottom[s.lo * d.c], br = bottom[s.hi * d.c];
      const float t = tl + (tr - tl) * s.frac, b = bl + (br - bl) * s.frac;
      y[idx] = t + (b - t) * r.frac;
    }
  }
}

// The outputs reading each input index of one axis: those of input index p
// are shares[start[p] .. start[p+1]), by increasing output index.
struct Readers {
  const int64_t* start;
  const Share* shares;
};

// dx[n,h,w,c] = sum over the (row, column) reader pairs of (h, w) of
// grad[n,i,j,c] * (row weight * column weight).
__global__ void resize_grad_kernel(const float* grad, float* dx, Dims d, Readers rows, Readers cols, int64_t total) {
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t c = idx % d.c, pixel = idx / d.c;  // input pixel (n, h, w)
    const int64_t w = pixel % d.w, h = pixel / d.w % d.h, n = pixel / (d.w * d.h);
    const float* gn = grad + n * d.oh * d.ow * d.c + c;
    float sum = 0.0f;
    for (int64_t e = rows.start[h]; e < rows.start[h + 1]; ++e) {
      const Share r = rows.shares[e];
      for (int64_t f = cols.start[w]; f < cols.start[w + 1]; ++f) {
        const Share s = cols.shares[f];
        sum += gn[(r.out * d.ow + s.out) * d.c] * (r.weight * s.weight);
      }
    }
    dx[idx] = sum;
  }
}

std::vector<Sample> samples_of(const ResampleAxis& a) {
  std::vector<Sample> s(a.lo.size());
  for (size_t o = 0; o < s.size(); ++o) s[o] = {a.lo[o], a.hi[o], a.frac[o]};
  return s;
}

// The readers of each of the `in` indices of axis `a`: start (in + 1
// entries) and shares, the latter by increasing output index.
void readers_of(const ResampleAxis& a, int64_t in, std::vector<int64_t>& start, std::vector<Share>& shares) {
  const int64_t out = static_cast<int64_t>(a.lo.size());
  auto each = [&](auto fn) {  // fn(input index, output index, weight) for every read, by output index
    for (int64_t o = 0; o < out; ++o) {
      if (a.nearest) {
        fn(a.lo[o], o, 1.0f);
      } else {
        fn(a.lo[o], o, 1.0f - a.frac[o]);
        fn(a.hi[o], o, a.frac[o]);
      }
    }
  };
  start.assign(static_cast<size_t>(in) + 1, 0);
  each([&](int64_t p, int64_t, float) { ++start[p + 1]; });
  for (int64_t p = 0; p < in; ++p) start[p + 1] += start[p];
  shares.resize(static_cast<size_t>(start[in]));
  std::vector<int64_t> next(start.begin(), start.end() - 1);
  each([&](int64_t p, int64_t o, float weight) { shares[next[p]++] = {o, weight}; });
}

// The plan on the device: samples for Resize, readers for ResizeGrad.
struct Tables {
  std::vector<Tensor> keep;  // device bytes the pointers below point into
  bool nearest = false;
  const Sample *rows = nullptr, *cols = nullptr;
  Readers row_readers{}, col_readers{};
};

template <class T>
const T* keep_on_device(KernelContext& c, Tables& t, const std::vector<T>& host) {
  t.keep.push_back(upload(c, host));
  return reinterpret_cast<const T*>(t.keep.back().device_data<uint8_t>());
}

const Tables& tables(KernelContext& c, bool readers) {
  auto& state = c.state();
  if (state) return *static_cast<const Tables*>(state.get());
  const Shape& s = c.input(0).shape();
  // The resized size: the output's, or ResizeGrad's grad's.
  const Shape& r = c.node().op == "ResizeGrad" ? c.input(1).shape() : c.output_spec(0).shape;
  const ResamplePlan plan = ops::resize_plan(c.attrs(), s[1], s[2], r[1], r[2]);
  auto t = std::make_shared<Tables>();
  t->nearest = plan.rows.nearest;
  if (readers) {
    std::vector<int64_t> start;
    std::vector<Share> shares;
    readers_of(plan.rows, s[1], start, shares);
    t->row_readers = {keep_on_device(c, *t, start), keep_on_device(c, *t, shares)};
    readers_of(plan.cols, s[2], start, shares);
    t->col_readers = {keep_on_device(c, *t, start), keep_on_device(c, *t, shares)};
  } else {
    t->rows = keep_on_device(c, *t, samples_of(plan.rows));
    t->cols = keep_on_device(c, *t, samples_of(plan.cols));
  }
  state = t;
  return *t;
}

Dims dims_of(const Shape& x, const Shape& y) { return {x[1], x[2], x[3], y[1], y[2]}; }

void resize(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  const int64_t total = y.num_elements();
  if (total == 0) return;
  const Tables& t = tables(c, false);
  const Dims d = dims_of(x.shape(), y.shape());
  if (t.nearest)
    resize_kernel<true><<<blocks_for(total), kThreads, 0, stream()>>>(x.device_data<float>(), y.device_data<float>(), d,
                                                                      t.rows, t.cols, total);
  else
    resize_kernel<false><<<blocks_for(total), kThreads, 0, stream()>>>(x.device_data<float>(), y.device_data<float>(),
                                                                       d, t.rows, t.cols, total);
  HUB_CUDA_CHECK(cudaGetLastError());
}

// Inputs: x_like (only its shape is used), grad.
void resize_grad(KernelContext& c) {
  Tensor& dx = c.output(0);
  const int64_t total = dx.num_elements();
  if (total == 0) return;
  const Tables& t = tables(c, true);
  const Tensor& grad = c.input(1);
  resize_grad_kernel<<<blocks_for(total), kThreads, 0, stream()>>>(grad.device_data<float>(), dx.device_data<float>(),
                                                                   dims_of(dx.shape(), grad.shape()), t.row_readers,
                                                                   t.col_readers, total);
  HUB_CUDA_CHECK(cudaGetLastError());
}

// Cubic runs on the host (the reference kernel).
bool supports(const Node& node, const std::vector<TensorSpec>&) { return node.attrs.get_string("mode") != "cubic"; }

}  // namespace

HUB_REGISTER_KERNEL(Resize, cuda, resize, supports);
HUB_REGISTER_KERNEL(ResizeGrad, cuda, resize_grad, supports);

}  // namespace hub::cuda

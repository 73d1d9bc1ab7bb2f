// Reference kernels for Conv2D and DepthwiseConv2dNative (and their backprops).
//
// Conv2D: im2col + Eigen GEMM. Output rows r = n*OH + oh are contiguous in y
// ([N,OH,OW,O] row-major), so a block of rows is one GEMM
//   y[rows*OW, O] = col[rows*OW, KH*KW*C] * w[KH*KW*C, O]
// (the HWIO filter is already that row-major matrix). Blocks are split across
// threads; each thread's col buffer comes from the session pool. A 1x1,
// stride-1, unpadded convolution uses the input itself as the col matrix.
// Backprops: dcol = dy * w^T then col2im (added into dx, per image so threads
// never write the same pixel); dw = sum over blocks of col^T * dy, one partial
// per thread, summed at the end.
//
// Depthwise: per output pixel, Eigen array expressions over the channel vector
// (C, or a C x M block for multiplier M).
#include <Eigen/Core>

#include <algorithm>

#include "hub/core/parallel.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using ops::ConvGeometry;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapMat = Eigen::Map<RowMat>;
using CMapMat = Eigen::Map<const RowMat>;
using Vec = Eigen::Array<float, Eigen::Dynamic, 1>;
using MapVec = Eigen::Map<Vec>;
using CMapVec = Eigen::Map<const Vec>;
using RowArr = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapArr = Eigen::Map<RowArr>;
using CMapArr = Eigen::Map<const RowArr>;

// Geometry from the forward input (input 0) and filter (input 1) shapes; the
// shape function has validated them.
ConvGeometry geometry(const KernelContext& c, bool depthwise) {
  ConvGeometry g;
  std::string error = ops::conv_geometry(c.input(0).shape(), c.input(1).shape(), c.attrs(), depthwise, &g);
  HUB_CHECK(error.empty(), error);
  return g;
}

// Splits [0, n) into `chunks` near-equal parts and runs fn(chunk, begin, end)
// for each, in parallel. A chunk index lets each part own a scratch slot.
template <class F> void for_chunks(int64_t n, int64_t chunks, F fn) {
  chunks = std::max<int64_t>(1, std::min(chunks, n));
  parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t ci = cb; ci < ce; ++ci) fn(ci, n * ci / chunks, n * (ci + 1) / chunks);
  });
}

int64_t chunk_count(int64_t work) { return std::max<int64_t>(1, std::min<int64_t>(num_threads(), work)); }

bool is_pointwise(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0 &&
         g.pad_bottom == 0 && g.pad_right == 0;
}

// Output rows per im2col block: keeps a block's col buffer near 1M floats.
int64_t block_rows(const ConvGeometry& g) {
  const int64_t per_row = std::max<int64_t>(1, g.ow * g.kh * g.kw * g.c);
  return std::max<int64_t>(1, (int64_t{1} << 20) / per_row);
}

// Walks the im2col layout of output rows [r0, r1) (r = n*OH + oh):
//   col[(r-r0)*OW + ow, (kh*KW + kw)*C + c] = x[n, ih, iw, c] (0 outside),
// calling run(col_off, x_off, len) for each run of len floats at col + col_off
// that mirrors x + x_off; x_off < 0 means the run lies in the padding.
template <class Run> void for_each_col_run(const ConvGeometry& g, int64_t r0, int64_t r1, Run run) {
  const int64_t K = g.kh * g.kw * g.c;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / g.oh, oh = r % g.oh;
    const int64_t xn = n * g.h * g.w * g.c;
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      const int64_t dst = ((r - r0) * g.ow + ow) * K;
      const int64_t ih0 = oh * g.sh - g.pad_top, iw0 = ow * g.sw - g.pad_left;
      const bool row_inside = g.dw == 1 && iw0 >= 0 && iw0 + g.kw <= g.w;
      for (int64_t kh = 0; kh < g.kh; ++kh) {
        const int64_t seg = dst + kh * g.kw * g.c;
        const int64_t ih = ih0 + kh * g.dh;
        if (ih < 0 || ih >= g.h) {
          run(seg, int64_t{-1}, g.kw * g.c);
          continue;
        }
        const int64_t xrow = xn + ih * g.w * g.c;
        if (row_inside) {  // the whole window row is one contiguous run of KW*C floats
          run(seg, xrow + iw0 * g.c, g.kw * g.c);
          continue;
        }
        for (int64_t kw = 0; kw < g.kw; ++kw) {
          const int64_t iw = iw0 + kw * g.dw;
          run(seg + kw * g.c, iw < 0 || iw >= g.w ? int64_t{-1} : xrow + iw * g.c, g.c);
        }
      }
    }
  }
}

// col for output rows [r0, r1) (layout above).
void im2col(const float* x, const ConvGeometry& g, int64_t r0, int64_t r1, float* col) {
  for_each_col_run(g, r0, r1, [&](int64_t col_off, int64_t x_off, int64_t len) {
    if (x_off < 0)
      std::fill_n(col + col_off, len, 0.0f);
    else
      std::copy_n(x + x_off, len, col + col_off);
  });
}

// Adjoint of im2col for the rows [r0, r1): dx += scatter(col).
void col2im_add(const float* col, const ConvGeometry& g, int64_t r0, int64_t r1, float* dx) {
  for_each_col_run(g, r0, r1, [&](int64_t col_off, int64_t x_off, int64_t len) {
    if (x_off >= 0) MapVec(dx + x_off, len) += CMapVec(col + col_off, len);
  });
}

// ---- Conv2D -----------------------------------------------------------------

void conv2d_kernel(KernelContext& c) {
  const ConvGeometry g = geometry(c, false);
  const float* x = c.input(0).data<float>();
  float* y = c.output(0).data<float>();
  const int64_t K = g.kh * g.kw * g.c;
  CMapMat w(c.input(1).data<float>(), K, g.oc);
  const int64_t rows = g.n * g.oh;
  if (rows * g.ow == 0) return;
  const bool pointwise = is_pointwise(g);  // the input is its own im2col matrix
  const int64_t block = block_rows(g);
  const int64_t chunks = chunk_count(rows);
  Tensor scratch = c.temp(DType::kFloat32, Shape{chunks, pointwise ? 1 : std::min(block, rows) * g.ow * K});
  float* buffers = scratch.data<float>();
  const int64_t slot = scratch.dim(1);
  for_chunks(rows, chunks, [&](int64_t ci, int64_t b, int64_t e) {
    float* col = buffers + ci * slot;
    for (int64_t r0 = b; r0 < e; r0 += block) {
      const int64_t r1 = std::min(e, r0 + block);
      const float* src = pointwise ? x + r0 * g.ow * K : col;
      if (!pointwise) im2col(x, g, r0, r1, col);
      MapMat(y + r0 * g.ow * g.oc, (r1 - r0) * g.ow, g.oc).noalias() =
          CMapMat(src, (r1 - r0) * g.ow, K) * w;
    }
  });
}

void conv2d_backprop_input_kernel(KernelContext& c) {
  const ConvGeometry g = geometry(c, false);
  const float* dy = c.input(2).data<float>();
  float* dx = c.output(0).data<float>();
  const int64_t K = g.kh * g.kw * g.c;
  CMapMat w(c.input(1).data<float>(), K, g.oc);
  if (is_pointwise(g)) {  // dx rows are independent: split them across threads
    const int64_t pixels = g.n * g.h * g.w;
    for_chunks(pixels, chunk_count(pixels), [&](int64_t, int64_t b, int64_t e) {
      MapMat(dx + b * g.c, e - b, g.c).noalias() = CMapMat(dy + b * g.oc, e - b, g.oc) * w.transpose();
    });
    return;
  }
  std::fill_n(dx, c.output(0).num_elements(), 0.0f);
  if (g.n * g.oh * g.ow == 0) return;
  const int64_t block = std::min(block_rows(g), g.oh);
  const int64_t chunks = chunk_count(g.n);  // per image: no two threads touch the same dx pixel
  Tensor scratch = c.temp(DType::kFloat32, Shape{chunks, block * g.ow * K});
  float* buffers = scratch.data<float>();
  const int64_t slot = scratch.dim(1);
  for_chunks(g.n, chunks, [&](int64_t ci, int64_t nb, int64_t ne) {
    float* col = buffers + ci * slot;
    for (int64_t n = nb; n < ne; ++n)
      for (int64_t oh = 0; oh < g.oh; oh += block) {
        const int64_t r0 = n * g.oh + oh, r1 = n * g.oh + std::min(g.oh, oh + block);
        MapMat(col, (r1 - r0) * g.ow, K).noalias() =
            CMapMat(dy + r0 * g.ow * g.oc, (r1 - r0) * g.ow, g.oc) * w.transpose();
        col2im_add(col, g, r0, r1, dx);
      }
  });
}

void conv2d_backprop_filter_kernel(KernelContext& c) {
  const ConvGeometry g = geometry(c, false);
  const float* x = c.input(0).data<float>();
  const float* dy = c.input(2).data<float>();
  const int64_t K = g.kh * g.kw * g.c;
  MapMat dw(c.output(0).data<float>(), K, g.oc);
  const int64_t rows = g.n * g.oh;
  if (rows * g.ow == 0) {
    dw.setZero();
    return;
  }
  const bool pointwise = is_pointwise(g);
  const int64_t block = block_rows(g);
  const int64_t chunks = chunk_count(rows);
  Tensor scratch =
      c.temp(DType::kFloat32, Shape{chunks, (pointwise ? 0 : std::min(block, rows) * g.ow * K) + K * g.oc + 1});
  float* buffers = scratch.data<float>();
  const int64_t slot = scratch.dim(1);
  for_chunks(rows, chunks, [&](int64_t ci, int64_t b, int64_t e) {
    float* partial = buffers + ci * slot;
    float* col = partial + K * g.oc;
    MapMat acc(partial, K, g.oc);
    acc.setZero();
    for (int64_t r0 = b; r0 < e; r0 += block) {
      const int64_t r1 = std::min(e, r0 + block);
      const float* src = pointwise ? x + r0 * g.ow * K : col;
      if (!pointwise) im2col(x, g, r0, r1, col);
      acc.noalias() += CMapMat(src, (r1 - r0) * g.ow, K).transpose() *
                       CMapMat(dy + r0 * g.ow * g.oc, (r1 - r0) * g.ow, g.oc);
    }
  });
  dw = MapMat(buffers, K, g.oc);
  for (int64_t ci = 1; ci < chunks; ++ci) dw += MapMat(buffers + ci * slot, K, g.oc);
}

// ---- DepthwiseConv2dNative --------------------------------------------------

// Runs pixel(p) for each output pixel p = r*OW + ow of the rows r in [b, e),
// then tap(p, k, xi) for each of its window taps k = kh*KW + kw inside the
// input, where xi points at x[n, ih, iw, 0] (C floats).
template <class Pixel, class Tap>
void for_each_depthwise_tap(const float* x, const ConvGeometry& g, int64_t b, int64_t e, Pixel pixel, Tap tap) {
  for (int64_t r = b; r < e; ++r) {
    const int64_t n = r / g.oh, oh = r % g.oh;
    const float* xn = x + n * g.h * g.w * g.c;
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      const int64_t p = r * g.ow + ow;
      pixel(p);
      const int64_t ih0 = oh * g.sh - g.pad_top, iw0 = ow * g.sw - g.pad_left;
      for (int64_t kh = 0; kh < g.kh; ++kh) {
        const int64_t ih = ih0 + kh * g.dh;
        if (ih < 0 || ih >= g.h) continue;
        for (int64_t kw = 0; kw < g.kw; ++kw) {
          const int64_t iw = iw0 + kw * g.dw;
          if (iw < 0 || iw >= g.w) continue;
          tap(p, kh * g.kw + kw, CMapVec(xn + (ih * g.w + iw) * g.c, g.c));
        }
      }
    }
  }
}

void depthwise_kernel(KernelContext& c) {
  const ConvGeometry g = geometry(c, true);
  const float* x = c.input(0).data<float>();
  const float* f = c.input(1).data<float>();
  float* y = c.output(0).data<float>();
  const int64_t rows = g.n * g.oh;
  for_chunks(rows, chunk_count(rows), [&](int64_t, int64_t b, int64_t e) {
    for_each_depthwise_tap(
        x, g, b, e, [&](int64_t p) { MapVec(y + p * g.oc, g.oc).setZero(); },
        [&](int64_t p, int64_t k, const CMapVec& xi) {
          float* out = y + p * g.oc;
          const float* fk = f + k * g.oc;
          if (g.m == 1)
            MapVec(out, g.c) += xi * CMapVec(fk, g.c);
          else
            MapArr(out, g.c, g.m) += CMapArr(fk, g.c, g.m).colwise() * xi;
        });
  });
}

// Gather form: each input pixel sums the (oh, ow, kh, kw) that read it, so
// rows of dx are independent and split across threads.
void depthwise_backprop_input_kernel(KernelContext& c) {
  const ConvGeometry g = geometry(c, true);
  const float* f = c.input(1).data<float>();
  const float* dy = c.input(2).data<float>();
  float* dx = c.output(0).data<float>();
  const int64_t rows = g.n * g.h;
  for_chunks(rows, chunk_count(rows), [&](int64_t, int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t n = r / g.h, ih = r % g.h;
      const float* dyn = dy + n * g.oh * g.ow * g.oc;
      for (int64_t iw = 0; iw < g.w; ++iw) {
        MapVec acc(dx + (r * g.w + iw) * g.c, g.c);
        acc.setZero();
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          const int64_t th = ih + g.pad_top - kh * g.dh;  // = oh * sh
          if (th < 0 || th % g.sh != 0 || th / g.sh >= g.oh) continue;
          const int64_t oh = th / g.sh;
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            const int64_t tw = iw + g.pad_left - kw * g.dw;
            if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.ow) continue;
            const float* d = dyn + (oh * g.ow + tw / g.sw) * g.oc;
            const float* fk = f + (kh * g.kw + kw) * g.oc;
            if (g.m == 1)
              acc += CMapVec(d, g.c) * CMapVec(fk, g.c);
            else
              acc += (CMapArr(d, g.c, g.m) * CMapArr(fk, g.c, g.m)).rowwise().sum();
          }
        }
      }
    }
  });
}

void depthwise_backprop_filter_kernel(KernelContext& c) {
  const ConvGeometry g = geometry(c, true);
  const float* x = c.input(0).data<float>();
  const float* dy = c.input(2).data<float>();
  const int64_t size = g.kh * g.kw * g.oc;
  MapVec df(c.output(0).data<float>(), size);
  const int64_t rows = g.n * g.oh;
  if (rows * g.ow == 0) {
    df.setZero();
    return;
  }
  const int64_t chunks = chunk_count(rows);
  Tensor scratch = c.temp(DType::kFloat32, Shape{chunks, size});
  float* partials = scratch.data<float>();
  for_chunks(rows, chunks, [&](int64_t ci, int64_t b, int64_t e) {
    float* acc = partials + ci * size;
    MapVec(acc, size).setZero();
    for_each_depthwise_tap(
        x, g, b, e, [](int64_t) {},
        [&](int64_t p, int64_t k, const CMapVec& xi) {
          const float* d = dy + p * g.oc;
          float* ak = acc + k * g.oc;
          if (g.m == 1)
            MapVec(ak, g.c) += xi * CMapVec(d, g.c);
          else
            MapArr(ak, g.c, g.m) += CMapArr(d, g.c, g.m).colwise() * xi;
        });
  });
  df = MapVec(partials, size);
  for (int64_t ci = 1; ci < chunks; ++ci) df += MapVec(partials + ci * size, size);
}

}  // namespace

HUB_REGISTER_KERNEL(Conv2D, reference, conv2d_kernel);
HUB_REGISTER_KERNEL(Conv2DBackpropInput, reference, conv2d_backprop_input_kernel);
HUB_REGISTER_KERNEL(Conv2DBackpropFilter, reference, conv2d_backprop_filter_kernel);
HUB_REGISTER_KERNEL(DepthwiseConv2dNative, reference, depthwise_kernel);
HUB_REGISTER_KERNEL(DepthwiseConv2dNativeBackpropInput, reference, depthwise_backprop_input_kernel);
HUB_REGISTER_KERNEL(DepthwiseConv2dNativeBackpropFilter, reference, depthwise_backprop_filter_kernel);

}  // namespace hub::cpu

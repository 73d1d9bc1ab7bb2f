// Reference kernels for Conv2D and DepthwiseConv2dNative (and their backprops).
//
// Conv2D: im2col + Eigen GEMM, one GEMM per group. Output rows r = n*OH + oh
// are contiguous in y ([N,OH,OW,O] row-major), so a block of rows and group g
// is one GEMM
//   y[rows*OW, g*O/G : (g+1)*O/G] = col_g[rows*OW, KH*KW*C/G] * w[KH*KW*C/G, g*O/G : (g+1)*O/G]
// (the [KH,KW,C/G,O] filter is already that row-major matrix; a group's
// columns are a strided block of it). Blocks are split across threads; each
// thread's col buffer comes from the session pool. A 1x1, stride-1,
// unpadded convolution uses the input itself (a strided block of its
// channels per group) as the col matrix.
// Backprops: dcol = dy * w^T then col2im (added into dx, per image so threads
// never write the same pixel); dw = sum over blocks of col^T * dy, one partial
// per thread, summed at the end.
//
// Depthwise: per output pixel, Eigen array expressions over the channel vector
// (C, or a C x M block for multiplier M).
#include "hub/ops/cpu/conv2d.h"

#include <Eigen/Core>
#include <algorithm>

#include "hub/core/parallel.h"

namespace hub::cpu {
namespace {

using ops::ConvGeometry;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Stride = Eigen::OuterStride<>;
using MapMat = Eigen::Map<RowMat, 0, Stride>;
using CMapMat = Eigen::Map<const RowMat, 0, Stride>;
using Vec = Eigen::Array<float, Eigen::Dynamic, 1>;
using MapVec = Eigen::Map<Vec>;
using CMapVec = Eigen::Map<const Vec>;
using RowArr = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapArr = Eigen::Map<RowArr>;
using CMapArr = Eigen::Map<const RowArr>;

// rows x cols row-major matrices whose rows are `stride` floats apart.
MapMat mat(float* p, int64_t rows, int64_t cols, int64_t stride) { return MapMat(p, rows, cols, Stride(stride)); }
CMapMat mat(const float* p, int64_t rows, int64_t cols, int64_t stride) {
  return CMapMat(p, rows, cols, Stride(stride));
}

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
template <class F>
void for_chunks(int64_t n, int64_t chunks, F fn) {
  chunks = std::max<int64_t>(1, std::min(chunks, n));
  parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t ci = cb; ci < ce; ++ci) fn(ci, n * ci / chunks, n * (ci + 1) / chunks);
  });
}

int64_t chunk_count(int64_t work) { return std::max<int64_t>(1, std::min<int64_t>(num_threads(), work)); }

bool is_pointwise(const ConvGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0 && g.pad_bottom == 0 &&
         g.pad_right == 0;
}

// Columns of one group's col matrix: KH*KW*C/G.
int64_t group_k(const ConvGeometry& g) { return g.kh * g.kw * g.cg; }

// Output rows per im2col block: keeps a block's col buffer near 1M floats.
int64_t block_rows(const ConvGeometry& g) {
  const int64_t per_row = std::max<int64_t>(1, g.ow * group_k(g));
  return std::max<int64_t>(1, (int64_t{1} << 20) / per_row);
}

// Walks the im2col layout of output rows [r0, r1) (r = n*OH + oh) for the
// group whose input channels start at c0:
//   col[(r-r0)*OW + ow, (kh*KW + kw)*C/G + i] = x[n, ih, iw, c0 + i] (0 outside),
// calling run(col_off, x_off, len) for each run of len floats at col + col_off
// that mirrors x + x_off; x_off < 0 means the run lies in the padding.
template <class Run>
void for_each_col_run(const ConvGeometry& g, int64_t r0, int64_t r1, int64_t c0, Run run) {
  const int64_t K = group_k(g);
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / g.oh, oh = r % g.oh;
    const int64_t xn = n * g.h * g.w * g.c + c0;
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      const int64_t dst = ((r - r0) * g.ow + ow) * K;
      const int64_t ih0 = oh * g.sh - g.pad_top, iw0 = ow * g.sw - g.pad_left;
      // The whole window row is one contiguous run of KW*C floats.
      const bool row_inside = g.dw == 1 && g.cg == g.c && iw0 >= 0 && iw0 + g.kw <= g.w;
      for (int64_t kh = 0; kh < g.kh; ++kh) {
        const int64_t seg = dst + kh * g.kw * g.cg;
        const int64_t ih = ih0 + kh * g.dh;
        if (ih < 0 || ih >= g.h) {
          run(seg, int64_t{-1}, g.kw * g.cg);
          continue;
        }
        const int64_t xrow = xn + ih * g.w * g.c;
        if (row_inside) {
          run(seg, xrow + iw0 * g.c, g.kw * g.c);
          continue;
        }
        for (int64_t kw = 0; kw < g.kw; ++kw) {
          const int64_t iw = iw0 + kw * g.dw;
          run(seg + kw * g.cg, iw < 0 || iw >= g.w ? int64_t{-1} : xrow + iw * g.c, g.cg);
        }
      }
    }
  }
}

// col for output rows [r0, r1) and the group starting at input channel c0.
void im2col(const float* x, const ConvGeometry& g, int64_t r0, int64_t r1, int64_t c0, float* col) {
  for_each_col_run(g, r0, r1, c0, [&](int64_t col_off, int64_t x_off, int64_t len) {
    if (x_off < 0)
      std::fill_n(col + col_off, len, 0.0f);
    else
      std::copy_n(x + x_off, len, col + col_off);
  });
}

// Adjoint of im2col for the rows [r0, r1) and group at c0: dx += scatter(col).
void col2im_add(const float* col, const ConvGeometry& g, int64_t r0, int64_t r1, int64_t c0, float* dx) {
  for_each_col_run(g, r0, r1, c0, [&](int64_t col_off, int64_t x_off, int64_t len) {
    if (x_off >= 0) MapVec(dx + x_off, len) += CMapVec(col + col_off, len);
  });
}

}  // namespace

// ---- Conv2D -----------------------------------------------------------------

void conv2d_forward(KernelContext& c, const ConvGeometry& g, const float* x, const float* w, float* y) {
  const int64_t K = group_k(g);
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
      const int64_t r1 = std::min(e, r0 + block), m = (r1 - r0) * g.ow;
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        const int64_t c0 = gi * g.cg;
        if (!pointwise) im2col(x, g, r0, r1, c0, col);
        // Pointwise: K = C/G and x's rows (stride C) are the col matrix.
        CMapMat src = mat(pointwise ? x + r0 * g.ow * g.c + c0 : col, m, K, pointwise ? g.c : K);
        mat(y + r0 * g.ow * g.oc + gi * g.og, m, g.og, g.oc).noalias() = src * mat(w + gi * g.og, K, g.og, g.oc);
      }
    }
  });
}

void conv2d_backprop_input(KernelContext& c, const ConvGeometry& g, const float* w, const float* dy, float* dx) {
  const int64_t K = group_k(g);
  if (is_pointwise(g)) {  // dx rows are independent: split them across threads
    const int64_t pixels = g.n * g.h * g.w;
    for_chunks(pixels, chunk_count(pixels), [&](int64_t, int64_t b, int64_t e) {
      for (int64_t gi = 0; gi < g.groups; ++gi)
        mat(dx + b * g.c + gi * g.cg, e - b, g.cg, g.c).noalias() =
            mat(dy + b * g.oc + gi * g.og, e - b, g.og, g.oc) * mat(w + gi * g.og, K, g.og, g.oc).transpose();
    });
    return;
  }
  std::fill_n(dx, g.n * g.h * g.w * g.c, 0.0f);
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
        const int64_t r0 = n * g.oh + oh, r1 = n * g.oh + std::min(g.oh, oh + block), m = (r1 - r0) * g.ow;
        for (int64_t gi = 0; gi < g.groups; ++gi) {
          mat(col, m, K, K).noalias() =
              mat(dy + r0 * g.ow * g.oc + gi * g.og, m, g.og, g.oc) * mat(w + gi * g.og, K, g.og, g.oc).transpose();
          col2im_add(col, g, r0, r1, gi * g.cg, dx);
        }
      }
  });
}

void conv2d_backprop_filter(KernelContext& c, const ConvGeometry& g, const float* x, const float* dy, float* dw) {
  const int64_t K = group_k(g);
  const int64_t rows = g.n * g.oh;
  if (rows * g.ow == 0) {
    std::fill_n(dw, K * g.oc, 0.0f);
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
    std::fill_n(partial, K * g.oc, 0.0f);
    for (int64_t r0 = b; r0 < e; r0 += block) {
      const int64_t r1 = std::min(e, r0 + block), m = (r1 - r0) * g.ow;
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        const int64_t c0 = gi * g.cg;
        if (!pointwise) im2col(x, g, r0, r1, c0, col);
        CMapMat src = mat(pointwise ? x + r0 * g.ow * g.c + c0 : col, m, K, pointwise ? g.c : K);
        mat(partial + gi * g.og, K, g.og, g.oc).noalias() +=
            src.transpose() * mat(dy + r0 * g.ow * g.oc + gi * g.og, m, g.og, g.oc);
      }
    }
  });
  MapVec out(dw, K * g.oc);
  out = MapVec(buffers, K * g.oc);
  for (int64_t ci = 1; ci < chunks; ++ci) out += MapVec(buffers + ci * slot, K * g.oc);
}

namespace {

void conv2d_kernel(KernelContext& c) {
  conv2d_forward(c, geometry(c, false), c.input(0).data<float>(), c.input(1).data<float>(), c.output(0).data<float>());
}

void conv2d_backprop_input_kernel(KernelContext& c) {
  conv2d_backprop_input(c, geometry(c, false), c.input(1).data<float>(), c.input(2).data<float>(),
                        c.output(0).data<float>());
}

void conv2d_backprop_filter_kernel(KernelContext& c) {
  conv2d_backprop_filter(c, geometry(c, false), c.input(0).data<float>(), c.input(2).data<float>(),
                         c.output(0).data<float>());
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

// CUDA kernels for hub/ops/softmax.h: Softmax and LogSoftmax through cuDNN,
// SoftmaxCrossEntropyWithLogits and SparseSoftmaxCrossEntropyWithLogits as
// row kernels, and OneHot.
//
// Softmax along any axis: x viewed as [outer, axis, inner] is the NCHW tensor
// [outer, axis, inner, 1], and cuDNN's CHANNEL mode normalises over C for
// each (n, h, w), which is exactly the op's axis. CUDNN_SOFTMAX_ACCURATE
// subtracts the max first, as the reference does; CUDNN_SOFTMAX_LOG computes
// (x - max) - log sum exp(x - max).
//
// The cross-entropy kernels work on one row per block: the row's max m and
// lse = log sum exp(x - m) (tree reductions), then log softmax = (x - m) - lse
// and the outputs from it, in the reference's order of operations.
#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "hub/core/error.h"
#include "hub/ops/cuda/common.h"
#include "hub/ops/cuda/reduction.h"

namespace hub::cuda {
namespace {

// Rows beyond this many blocks are covered by the blocks' grid-stride loop.
constexpr int64_t kMaxRowBlocks = int64_t{1} << 20;

// ---- Softmax, LogSoftmax ----------------------------------------------------------

struct DescriptorDeleter {
  void operator()(cudnnTensorStruct* d) const { cudnnDestroyTensorDescriptor(d); }
};
using TensorDescriptor = std::unique_ptr<cudnnTensorStruct, DescriptorDeleter>;

// The float NCHW descriptor [n, c, h, 1].
TensorDescriptor nchw(int64_t n, int64_t c, int64_t h) {
  cudnnTensorDescriptor_t raw = nullptr;
  HUB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&raw));
  TensorDescriptor desc(raw);
  HUB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(raw, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(n),
                                             static_cast<int>(c), static_cast<int>(h), 1));
  return desc;
}

// cuDNN's legacy descriptors take int dims and strides.
bool supports_softmax(const Node&, const std::vector<TensorSpec>& inputs) {
  return inputs[0].shape.num_elements() <= std::numeric_limits<int>::max();
}

template <cudnnSoftmaxAlgorithm_t kAlgorithm>
void softmax(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  if (x.num_elements() == 0) return;
  int axis = static_cast<int>(c.attrs().get_int("axis"));
  if (axis < 0) axis += x.rank();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  const TensorDescriptor desc = nchw(outer, x.dim(axis), inner);
  const float one = 1.0f, zero = 0.0f;
  HUB_CUDNN_CHECK(cudnnSoftmaxForward(cudnn(), kAlgorithm, CUDNN_SOFTMAX_MODE_CHANNEL, &one, desc.get(),
                                      x.device_data<float>(), &zero, desc.get(), y.device_data<float>()));
}

// ---- cross entropy ------------------------------------------------------------------

// Every thread of the block gets the row's max m and lse = log sum exp(x - m),
// so that log softmax(x)_c = (x_c - m) - lse.
__device__ void log_softmax_terms(const float* x, int64_t classes, float* part, float* m, float* lse) {
  float v = -std::numeric_limits<float>::infinity();
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) v = Maximum{}(v, x[c]);
  *m = block_reduce(v, part, Maximum{});
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) s += expf(x[c] - *m);
  *lse = logf(block_reduce(s, part, Add{}));
}

// loss_r = -sum_c labels_rc * logp_rc, backprop_rc = exp(logp_rc) - labels_rc.
__global__ void xent_kernel(const float* logits, const float* labels, float* loss, float* backprop, int64_t rows,
                            int64_t classes) {
  __shared__ float part[kThreads];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* x = logits + row * classes;
    const float* y = labels + row * classes;
    float* back = backprop + row * classes;
    float m, lse;
    log_softmax_terms(x, classes, part, &m, &lse);
    float dot = 0.0f;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      const float logp = (x[c] - m) - lse;
      dot += y[c] * logp;
      back[c] = expf(logp) - y[c];
    }
    dot = block_reduce(dot, part, Add{});
    if (threadIdx.x == 0) loss[row] = -dot;
  }
}

// As xent_kernel with labels one-hot at class labels[r]. The reference fails
// on a label outside [0, classes); the device cannot report it without the
// host waiting, so such a row gets a NaN loss and a NaN backprop row, as
// TensorFlow's GPU kernel does.
template <class Label>
__global__ void sparse_xent_kernel(const float* logits, const Label* labels, float* loss, float* backprop, int64_t rows,
                                   int64_t classes) {
  __shared__ float part[kThreads];
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* x = logits + row * classes;
    float* back = backprop + row * classes;
    float m, lse;
    log_softmax_terms(x, classes, part, &m, &lse);
    const int64_t label = static_cast<int64_t>(labels[row]);
    const bool valid = label >= 0 && label < classes;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      const float p = expf((x[c] - m) - lse);
      back[c] = !valid ? nan : c == label ? p - 1.0f : p;
    }
    if (threadIdx.x == 0) loss[row] = valid ? -((x[label] - m) - lse) : nan;
  }
}

// Threads per row: a power of two (block_reduce), at least a warp.
int row_threads(int64_t classes) { return std::max(32, pow2_at_least(classes, kThreads)); }
unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(std::min(rows, kMaxRowBlocks)); }

void xent(KernelContext& c) {
  const Tensor &logits = c.input(0), &labels = c.input(1);
  const int64_t rows = logits.dim(0), classes = logits.dim(1);
  Tensor &loss = c.output(0), &backprop = c.output(1);
  if (rows == 0) return;
  if (classes == 0) {  // an empty sum, as the reference
    HUB_CUDA_CHECK(cudaMemsetAsync(loss.device_data<float>(), 0, loss.nbytes(), stream()));
    return;
  }
  xent_kernel<<<row_blocks(rows), row_threads(classes), 0, stream()>>>(
      logits.device_data<float>(), labels.device_data<float>(), loss.device_data<float>(),
      backprop.device_data<float>(), rows, classes);
  HUB_CUDA_CHECK(cudaGetLastError());
}

void sparse_xent(KernelContext& c) {
  const Tensor &logits = c.input(0), &labels = c.input(1);
  const int64_t rows = logits.dim(0), classes = logits.dim(1);
  Tensor &loss = c.output(0), &backprop = c.output(1);
  if (rows == 0) return;
  auto run = [&](const auto* label) {
    sparse_xent_kernel<<<row_blocks(rows), row_threads(classes), 0, stream()>>>(
        logits.device_data<float>(), label, loss.device_data<float>(), backprop.device_data<float>(), rows, classes);
    HUB_CUDA_CHECK(cudaGetLastError());
  };
  if (labels.dtype() == DType::kInt32)
    run(labels.device_data<int32_t>());
  else
    run(labels.device_data<int64_t>());
}

// ---- OneHot ---------------------------------------------------------------------------

// out[i][j] = on if indices[i] == j else off, for out viewed as [n, depth].
template <class Index>
__global__ void one_hot_kernel(const Index* indices, float* out, int64_t elements, int64_t depth, float on, float off) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < elements;
       e += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t i = e / depth;
    out[e] = static_cast<int64_t>(indices[i]) == e - i * depth ? on : off;
  }
}

void one_hot(KernelContext& c) {
  const Tensor& indices = c.input(0);
  Tensor& out = c.output(0);
  const int64_t elements = out.num_elements(), depth = c.attrs().get_int("depth");
  if (elements == 0) return;
  const float on = static_cast<float>(c.attrs().get_float("on_value"));
  const float off = static_cast<float>(c.attrs().get_float("off_value"));
  auto run = [&](const auto* index) {
    one_hot_kernel<<<blocks_for(elements), kThreads, 0, stream()>>>(index, out.device_data<float>(), elements, depth,
                                                                    on, off);
    HUB_CUDA_CHECK(cudaGetLastError());
  };
  if (indices.dtype() == DType::kInt32)
    run(indices.device_data<int32_t>());
  else
    run(indices.device_data<int64_t>());
}

}  // namespace

HUB_REGISTER_KERNEL(Softmax, cuda, softmax<CUDNN_SOFTMAX_ACCURATE>, supports_softmax);
HUB_REGISTER_KERNEL(LogSoftmax, cuda, softmax<CUDNN_SOFTMAX_LOG>, supports_softmax);
HUB_REGISTER_KERNEL(SoftmaxCrossEntropyWithLogits, cuda, xent);
HUB_REGISTER_KERNEL(SparseSoftmaxCrossEntropyWithLogits, cuda, sparse_xent);
HUB_REGISTER_KERNEL(OneHot, cuda, one_hot);

}  // namespace hub::cuda

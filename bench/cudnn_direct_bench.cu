// cudnn_direct_bench: hub's MobileNet v1 1.0/224 on the `cuda` backend
// against the same network written directly on cuDNN and cuBLAS, for
// inference and for a training step: issue #16's `ratio=hub/cudnn_direct`
// lines.
//
//   ./build/bench/cudnn_direct_bench [--profile] [rounds [batch...]]   (default 7 rounds, batches 1 and 64)
//
// --profile adds, per batch, where hub's inference time goes on the GPU
// (bench::print_inference_profile: each node's time until its work on the
// device is done).
//
// Convolutions (both programs) run on cuDNN's graph API: each pass of each
// layer gets the fastest of the first four engines cuDNN's heuristics
// propose that keep hub's float32 contract (no TF32 tensor cores, no
// down-converted inputs, no reduced-precision reductions, no FFT; timed on
// the real buffers). The direct program keeps its filters in cuDNN's KRSC
// layout, allocates every buffer before the first call, and launches its own
// kernels for the rest.
//
// Inference (each batch): it takes the weights of the module
// bench/net_module.h makes (randomised batch-norm statistics), folds each
// batch norm into its convolution (w' = w * s, b' = beta - mean * s, s =
// gamma / sqrt(variance + 0.001)), then per layer runs the convolution and
// one pass adding the bias and clipping to [0, 6]; a global average pool, the
// logits as one cublasSgemm and a bias pass. The images are on the device
// and the [batch, 1001] logits are copied to the host at the end of a call,
// as hub's module call returns them. Before timing, the logits of both must
// agree within 1e-4 relative (max |hub - direct| / max |hub|).
//
// Training (batch 64): hub's step is train_step() on the training graph
// (batch norm on batch statistics, dropout keeping 0.999, sparse softmax
// cross entropy, SGD at 0.01, the moving averages as update ops), variables
// on the device. The direct program does the same arithmetic: per layer the
// convolution, cuDNN's training batch norm (its running averages with factor
// 1 - 0.9997) and ReLU6 forward; average pool, dropout, logits and the loss;
// then backward (ReLU6 and cuDNN's batch-norm backward, the convolution's
// backward filter and data passes, the logits' three products) and one SGD
// pass per variable; the loss is copied to the host at the end, as hub reads
// it. Its dropout draws its own masks, so the two compute the same functions
// but not the same numbers; only their speed is compared.
//
// Rounds alternate hub and the direct program; a line per case gives the
// medians in images/s and GFLOP/s (2 flops per multiply-add; training counts
// 3x the forward's) and `ratio=hub/cudnn_direct` (hub's rate over the
// direct one's).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "hub/backend/backend.h"
#include "hub/graph/optimizer.h"
#include "hub/module/module.h"
#include "hub/ops/softmax.h"
#include "modules/nets/nets.h"
#include "net_module.h"

namespace {

void check(cudaError_t s, const char* what, int line) {
  if (s == cudaSuccess) return;
  std::fprintf(stderr, "cudnn_direct_bench: %s (line %d): %s\n", what, line, cudaGetErrorString(s));
  std::exit(1);
}
void check(cudnnStatus_t s, const char* what, int line) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  std::fprintf(stderr, "cudnn_direct_bench: %s (line %d): %s\n", what, line, cudnnGetErrorString(s));
  std::exit(1);
}
void check(cublasStatus_t s, const char* what, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "cudnn_direct_bench: %s (line %d): %s\n", what, line, cublasGetStatusString(s));
  std::exit(1);
}
#define CK(expr) check((expr), #expr, __LINE__)

// Device memory of n floats, freed with the object.
struct Buffer {
  float* p = nullptr;
  explicit Buffer(size_t n) { CK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(float))); }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer&) = delete;
};
using BufferPtr = std::unique_ptr<Buffer>;

BufferPtr upload(const float* host, int64_t n) {
  auto b = std::make_unique<Buffer>(n);
  CK(cudaMemcpy(b->p, host, sizeof(float) * n, cudaMemcpyHostToDevice));
  return b;
}

#define FOR_EACH(i, n)                                                                   \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

int grid(int64_t n) { return static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535 * 8)); }

__global__ void bias_relu6(float* y, const float* bias, int64_t n, int64_t channels) {
  FOR_EACH(i, n) y[i] = fminf(fmaxf(y[i] + bias[i % channels], 0.0f), 6.0f);
}
__global__ void relu6(const float* x, float* y, int64_t n) { FOR_EACH(i, n) y[i] = fminf(fmaxf(x[i], 0.0f), 6.0f); }
// dx = dy where 0 < x < 6
__global__ void relu6_grad(const float* dy, const float* x, float* dx, int64_t n) {
  FOR_EACH(i, n) dx[i] = x[i] > 0.0f && x[i] < 6.0f ? dy[i] : 0.0f;
}
__global__ void add_bias(float* y, const float* bias, int64_t n, int64_t channels) {
  FOR_EACH(i, n) y[i] += bias[i % channels];
}
// y[b, c] = mean over the hw positions of x[b, :, c] (NHWC)
__global__ void global_average(const float* x, float* y, int64_t batch, int64_t hw, int64_t channels) {
  FOR_EACH(i, batch * channels) {
    const int64_t b = i / channels, c = i % channels;
    float sum = 0;
    for (int64_t p = 0; p < hw; ++p) sum += x[(b * hw + p) * channels + c];
    y[i] = sum / static_cast<float>(hw);
  }
}
// dx[b, p, c] = dy[b, c] / hw
__global__ void global_average_grad(const float* dy, float* dx, int64_t batch, int64_t hw, int64_t channels) {
  FOR_EACH(i, batch * hw * channels)
  dx[i] = dy[(i / (hw * channels)) * channels + i % channels] / static_cast<float>(hw);
}
// mask = [hash(seed, i) < keep], y = x * mask / keep
__global__ void dropout(const float* x, float* y, float* mask, int64_t n, uint32_t seed, float keep) {
  FOR_EACH(i, n) {
    uint32_t h = static_cast<uint32_t>(i) * 0x9E3779B9u ^ seed;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    const float m = (h >> 8) * (1.0f / 16777216.0f) < keep ? 1.0f : 0.0f;
    mask[i] = m;
    y[i] = x[i] * m / keep;
  }
}
__global__ void dropout_grad(const float* dy, const float* mask, float* dx, int64_t n, float keep) {
  FOR_EACH(i, n) dx[i] = dy[i] * mask[i] / keep;
}
// Per row of logits [batch, classes]: loss[b] = logsumexp - logit[label],
// dlogits = (softmax - onehot) / batch. One thread per row.
__global__ void softmax_xent(const float* logits, const int64_t* labels, float* loss, float* dlogits, int64_t batch,
                             int64_t classes) {
  FOR_EACH(b, batch) {
    const float* row = logits + b * classes;
    float top = row[0];
    for (int64_t k = 1; k < classes; ++k) top = fmaxf(top, row[k]);
    float sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += expf(row[k] - top);
    loss[b] = logf(sum) + top - row[labels[b]];
    for (int64_t k = 0; k < classes; ++k)
      dlogits[b * classes + k] = (expf(row[k] - top) / sum - (k == labels[b] ? 1.0f : 0.0f)) / batch;
  }
}
__global__ void mean_of(const float* x, float* out, int64_t n) {
  FOR_EACH(i, 1) {
    float s = 0;
    for (int64_t k = 0; k < n; ++k) s += x[k];
    out[0] = s / static_cast<float>(n);
  }
}
__global__ void sgd(float* w, const float* g, int64_t n, float lr) { FOR_EACH(i, n) w[i] -= lr * g[i]; }
__global__ void fill(float* p, int64_t n, float v) { FOR_EACH(i, n) p[i] = v; }

// ---- convolutions on cuDNN's graph API ------------------------------------------------

struct Descriptor {
  cudnnBackendDescriptor_t d = nullptr;
  explicit Descriptor(cudnnBackendDescriptorType_t type) { CK(cudnnBackendCreateDescriptor(type, &d)); }
  ~Descriptor() { cudnnBackendDestroyDescriptor(d); }
  Descriptor(const Descriptor&) = delete;
};

void put(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
         const void* values) {
  CK(cudnnBackendSetAttribute(d, name, type, count, values));
}

// One convolution layer of the network: NHWC [batch, size, size, in_ch] to
// [batch, out, out, out_ch], TF's SAME padding.
struct Geometry {
  int64_t batch, size, in_ch, out_ch, kernel, stride, out;
  bool depthwise;
  int64_t y_size() const { return batch * out * out * out_ch; }
  int64_t w_size() const { return kernel * kernel * (depthwise ? 1 : in_ch) * out_ch; }
};

enum class Pass { kForward, kBackwardData, kBackwardFilter };

// One pass of one convolution: the plan (the fastest of the first four
// float32 engines mode A proposes without tensor cores, timed on the given
// buffers) and every descriptor it was made from. Uids: 1 = x, 2 = w, 3 = y.
class ConvPlan {
 public:
  ConvPlan(cudnnHandle_t dnn, cudaStream_t stream, Pass pass, const Geometry& g, float* x, float* w, float* y)
      : dnn_(dnn) {
    cudnnBackendDescriptor_t graph = make_graph(pass, g);
    cudnnBackendDescriptor_t heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    put(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    put(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    CK(cudnnBackendFinalize(heur));
    int64_t count = 0;
    CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                nullptr));
    std::vector<cudnnBackendDescriptor_t> configs;
    for (int64_t i = 0; i < count; ++i) configs.push_back(make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count,
                                configs.data()));
    float best_ms = -1;
    int tried = 0;
    for (int64_t i = 0; i < count && tried < 4; ++i) {
      cudnnBackendDescriptor_t engine = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      int64_t n = 0;
      CK(cudnnBackendGetAttribute(configs[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                  &engine));
      cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
      int64_t note_count = 0;
      CK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                  CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &note_count, notes));
      // hub's float32 contract (docs/gpu.md): no TF32 tensor cores, no
      // down-converted inputs, no reduced-precision reductions, no FFT.
      const bool float32 = std::none_of(notes, notes + note_count, [](cudnnBackendNumericalNote_t note) {
        return note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
               note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION || note == CUDNN_NUMERICAL_NOTE_FFT;
      });
      if (!float32) continue;
      cudnnBackendDescriptor_t plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      put(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn_);
      put(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs[i]);
      if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) continue;
      ++tried;
      int64_t workspace = 0;
      CK(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &workspace));
      Buffer ws(static_cast<size_t>(workspace / 4 + 1));
      std::swap(plan_, plan);  // run the candidate
      run(x, w, y, ws.p);      // warm-up
      cudaEvent_t start, stop;
      CK(cudaEventCreate(&start));
      CK(cudaEventCreate(&stop));
      CK(cudaEventRecord(start, stream));
      for (int r = 0; r < 3; ++r) run(x, w, y, ws.p);
      CK(cudaEventRecord(stop, stream));
      CK(cudaEventSynchronize(stop));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, start, stop));
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
      if (best_ms < 0 || ms < best_ms) {
        best_ms = ms;
        workspace_ = workspace;
      } else {
        std::swap(plan_, plan);  // keep the faster one
      }
    }
    if (!plan_) {
      std::fprintf(stderr, "cudnn_direct_bench: no float32 engine for a %lldx%lld convolution pass\n",
                   static_cast<long long>(g.kernel), static_cast<long long>(g.kernel));
      std::exit(1);
    }
  }

  int64_t workspace() const { return workspace_; }

  void run(float* x, float* w, float* y, void* workspace) const {
    void* pointers[3] = {x, w, y};
    const int64_t uids[3] = {1, 2, 3};
    Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    put(pack.d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
    put(pack.d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
    put(pack.d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    CK(cudnnBackendFinalize(pack.d));
    CK(cudnnBackendExecute(dnn_, plan_, pack.d));
  }

 private:
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type) {
    keep_.push_back(std::make_unique<Descriptor>(type));
    return keep_.back()->d;
  }

  cudnnBackendDescriptor_t tensor(int64_t uid, std::vector<int64_t> dims, std::vector<int64_t> strides) {
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    const int64_t align = 16;
    cudnnBackendDescriptor_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    put(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    put(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
    put(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
    put(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    put(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    CK(cudnnBackendFinalize(t));
    return t;
  }

  cudnnBackendDescriptor_t make_graph(Pass pass, const Geometry& g) {
    const int64_t s = g.size, o = g.out, k = g.kernel, cg = g.depthwise ? 1 : g.in_ch;
    cudnnBackendDescriptor_t x = tensor(1, {g.batch, g.in_ch, s, s}, {s * s * g.in_ch, 1, s * g.in_ch, g.in_ch});
    cudnnBackendDescriptor_t w = tensor(2, {g.out_ch, cg, k, k}, {cg * k * k, 1, k * cg, cg});
    cudnnBackendDescriptor_t y = tensor(3, {g.batch, g.out_ch, o, o}, {o * o * g.out_ch, 1, o * g.out_ch, g.out_ch});
    const int64_t total = std::max<int64_t>((o - 1) * g.stride + k - s, 0);  // TF SAME: the odd pixel after
    const int64_t pre[2] = {total / 2, total / 2}, post[2] = {total - total / 2, total - total / 2};
    const int64_t strides[2] = {g.stride, g.stride}, dilations[2] = {1, 1}, spatial = 2;
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    cudnnBackendDescriptor_t conv = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    put(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
    put(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    put(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    put(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pre);
    put(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, post);
    put(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides);
    put(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations);
    CK(cudnnBackendFinalize(conv));
    // Per pass: the operation, and the attributes of its x, w, y, conv, alpha, beta.
    struct Names {
      cudnnBackendDescriptorType_t op;
      cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
    };
    const Names names = pass == Pass::kForward ? Names{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                                       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                                       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                                       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                                       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                                       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                                       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA}
                        : pass == Pass::kBackwardData
                            ? Names{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA}
                            : Names{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
    const float alpha = 1, beta = 0;
    cudnnBackendDescriptor_t op = make(names.op);
    put(op, names.x, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    put(op, names.w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
    put(op, names.y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    put(op, names.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
    put(op, names.alpha, CUDNN_TYPE_FLOAT, 1, &alpha);
    put(op, names.beta, CUDNN_TYPE_FLOAT, 1, &beta);
    CK(cudnnBackendFinalize(op));
    cudnnBackendDescriptor_t graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    put(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
    put(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn_);
    CK(cudnnBackendFinalize(graph));
    return graph;
  }

  cudnnHandle_t dnn_;
  std::vector<std::unique_ptr<Descriptor>> keep_;
  cudnnBackendDescriptor_t plan_ = nullptr;
  int64_t workspace_ = 0;
};

// ---- the network ------------------------------------------------------------------------

// One convolution layer of MobileNet v1 1.0/224: its geometry and its
// variables' scope and filter name.
struct LayerSpec {
  Geometry g;
  std::string scope, weights;
};

std::vector<LayerSpec> mobilenet_layers(int64_t batch) {
  const std::string v1 = "MobilenetV1/";
  std::vector<LayerSpec> layers{{{batch, 224, 3, 32, 3, 2, 112, false}, v1 + "Conv2d_0", "weights"}};
  int64_t size = 112, channels = 32;
  const int64_t strides[] = {1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1};
  const int64_t depths[] = {64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024};
  for (int i = 0; i < 13; ++i) {
    const std::string base = v1 + "Conv2d_" + std::to_string(i + 1);
    const int64_t out = (size + strides[i] - 1) / strides[i];
    layers.push_back(
        {{batch, size, channels, channels, 3, strides[i], out, true}, base + "_depthwise", "depthwise_weights"});
    layers.push_back({{batch, out, channels, depths[i], 1, 1, out, false}, base + "_pointwise", "weights"});
    size = out;
    channels = depths[i];
  }
  return layers;
}

// A filter (HWIO, or HWCM with M = 1: output channel innermost) scaled per
// output channel and transposed to KRSC.
std::vector<float> krsc(const hub::Tensor& w, const std::vector<float>& scale) {
  const int64_t out_ch = static_cast<int64_t>(scale.size()), per_out = w.num_elements() / out_ch;
  std::vector<float> t(w.num_elements());
  for (int64_t i = 0; i < per_out; ++i)
    for (int64_t o = 0; o < out_ch; ++o) t[o * per_out + i] = w.data<float>()[i * out_ch + o] * scale[o];
  return t;
}

const float* values(const hub::VariableStore& vars, const std::string& name) { return vars.at(name).data<float>(); }

// The handles both directs use, on their own stream.
struct Handles {
  cudaStream_t stream = nullptr;
  cudnnHandle_t dnn = nullptr;
  cublasHandle_t blas = nullptr;
  Handles() {
    CK(cudaStreamCreate(&stream));
    CK(cudnnCreate(&dnn));
    CK(cudnnSetStream(dnn, stream));
    CK(cublasCreate(&blas));
    CK(cublasSetStream(blas, stream));
    CK(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));
  }
  ~Handles() {
    cublasDestroy(blas);
    cudnnDestroy(dnn);
    cudaStreamDestroy(stream);
  }
};

// c[m, n] = a[m, k] b[k, n] (row-major), with transposes as flagged.
void gemm(cublasHandle_t blas, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
          float* c) {
  const float one = 1, zero = 0;
  CK(cublasSgemm(blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n),
                 static_cast<int>(m), static_cast<int>(k), &one, b, static_cast<int>(tb ? k : n), a,
                 static_cast<int>(ta ? m : k), &zero, c, static_cast<int>(n)));
}

class DirectInference {
 public:
  DirectInference(const hub::VariableStore& vars, int64_t batch, float* images) : batch_(batch), images_(images) {
    float* x = images;
    for (const LayerSpec& spec : mobilenet_layers(batch)) {
      const Geometry& g = spec.g;
      const std::string& bn = spec.scope + "/BatchNorm/";
      std::vector<float> scale(g.out_ch), bias(g.out_ch);
      for (int64_t c = 0; c < g.out_ch; ++c) {
        scale[c] = values(vars, bn + "gamma")[c] / std::sqrt(values(vars, bn + "moving_variance")[c] + 0.001f);
        bias[c] = values(vars, bn + "beta")[c] - values(vars, bn + "moving_mean")[c] * scale[c];
      }
      auto l = std::make_unique<Layer>();
      l->g = g;
      l->filter = upload(krsc(vars.at(spec.scope + "/" + spec.weights), scale).data(), g.w_size());
      l->bias = upload(bias.data(), g.out_ch);
      l->output = std::make_unique<Buffer>(g.y_size());
      l->plan = std::make_unique<ConvPlan>(h_.dnn, h_.stream, Pass::kForward, g, x, l->filter->p, l->output->p);
      x = l->output->p;
      layers_.push_back(std::move(l));
    }
    const Geometry& last = layers_.back()->g;
    hw_ = last.out * last.out;
    channels_ = last.out_ch;
    const hub::Tensor& w = vars.at("MobilenetV1/Logits/Conv2d_1c_1x1/weights");  // [1, 1, C, classes]
    classes_ = w.shape()[3];
    logits_w_ = upload(w.data<float>(), w.num_elements());
    logits_b_ = upload(values(vars, "MobilenetV1/Logits/Conv2d_1c_1x1/biases"), classes_);
    pooled_ = std::make_unique<Buffer>(batch * channels_);
    logits_ = std::make_unique<Buffer>(batch * classes_);
    int64_t most = 0;
    for (const auto& l : layers_) most = std::max(most, l->plan->workspace());
    workspace_ = std::make_unique<Buffer>(static_cast<size_t>(most / 4 + 1));
  }

  int64_t classes() const { return classes_; }

  // logits [batch, classes] on the host of the images (on the device).
  void run(float* logits) {
    float* x = images_;
    for (const auto& l : layers_) {
      l->plan->run(x, l->filter->p, l->output->p, workspace_->p);
      const int64_t n = l->g.y_size();
      bias_relu6<<<grid(n), 256, 0, h_.stream>>>(l->output->p, l->bias->p, n, l->g.out_ch);
      x = l->output->p;
    }
    global_average<<<grid(batch_ * channels_), 256, 0, h_.stream>>>(x, pooled_->p, batch_, hw_, channels_);
    gemm(h_.blas, false, false, batch_, classes_, channels_, pooled_->p, logits_w_->p, logits_->p);
    add_bias<<<grid(batch_ * classes_), 256, 0, h_.stream>>>(logits_->p, logits_b_->p, batch_ * classes_, classes_);
    CK(cudaGetLastError());
    CK(cudaMemcpyAsync(logits, logits_->p, sizeof(float) * batch_ * classes_, cudaMemcpyDeviceToHost, h_.stream));
    CK(cudaStreamSynchronize(h_.stream));
  }

 private:
  struct Layer {
    Geometry g;
    BufferPtr filter, bias, output;  // filter in KRSC
    std::unique_ptr<ConvPlan> plan;
  };
  Handles h_;
  int64_t batch_;
  float* images_;
  std::vector<std::unique_ptr<Layer>> layers_;
  int64_t hw_ = 0, channels_ = 0, classes_ = 0;
  BufferPtr logits_w_, logits_b_, pooled_, logits_, workspace_;
};

// The training step (see the top of the file).
class DirectTraining {
 public:
  DirectTraining(const hub::VariableStore& vars, int64_t batch, float* images, const int64_t* labels)
      : batch_(batch), images_(images), labels_(labels) {
    float* x = images;
    int64_t most = 0;
    for (const LayerSpec& spec : mobilenet_layers(batch)) {
      const Geometry& g = spec.g;
      const std::string& bn = spec.scope + "/BatchNorm/";
      auto l = std::make_unique<Layer>();
      l->g = g;
      l->input = x;
      l->filter =
          upload(krsc(vars.at(spec.scope + "/" + spec.weights), std::vector<float>(g.out_ch, 1.0f)).data(), g.w_size());
      l->gamma = upload(values(vars, bn + "gamma"), g.out_ch);
      l->beta = upload(values(vars, bn + "beta"), g.out_ch);
      l->mean = upload(values(vars, bn + "moving_mean"), g.out_ch);
      l->variance = upload(values(vars, bn + "moving_variance"), g.out_ch);
      for (BufferPtr* b : {&l->conv, &l->normalized, &l->output, &l->grad}) *b = std::make_unique<Buffer>(g.y_size());
      for (BufferPtr* b : {&l->saved_mean, &l->saved_rstd, &l->dgamma, &l->dbeta})
        *b = std::make_unique<Buffer>(g.out_ch);
      l->dfilter = std::make_unique<Buffer>(g.w_size());
      CK(cudnnCreateTensorDescriptor(&l->desc));
      CK(cudnnSetTensor4dDescriptor(l->desc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, static_cast<int>(batch),
                                    static_cast<int>(g.out_ch), static_cast<int>(g.out), static_cast<int>(g.out)));
      CK(cudnnCreateTensorDescriptor(&l->channel));
      CK(cudnnDeriveBNTensorDescriptor(l->channel, l->desc, CUDNN_BATCHNORM_SPATIAL));
      l->forward = std::make_unique<ConvPlan>(h_.dnn, h_.stream, Pass::kForward, g, x, l->filter->p, l->conv->p);
      l->backward_filter =
          std::make_unique<ConvPlan>(h_.dnn, h_.stream, Pass::kBackwardFilter, g, x, l->dfilter->p, l->grad->p);
      if (!layers_.empty()) {  // the images need no gradient; the rest's goes to the layer below
        l->input_grad = layers_.back()->grad->p;
        l->backward_data = std::make_unique<ConvPlan>(h_.dnn, h_.stream, Pass::kBackwardData, g, l->input_grad,
                                                      l->filter->p, l->grad->p);
      }
      for (const ConvPlan* p : {l->forward.get(), l->backward_filter.get(), l->backward_data.get()})
        if (p) most = std::max(most, p->workspace());
      x = l->output->p;
      layers_.push_back(std::move(l));
    }
    const Geometry& last = layers_.back()->g;
    hw_ = last.out * last.out;
    channels_ = last.out_ch;
    const hub::Tensor& w = vars.at("MobilenetV1/Logits/Conv2d_1c_1x1/weights");
    classes_ = w.shape()[3];
    logits_w_ = upload(w.data<float>(), w.num_elements());
    logits_b_ = upload(values(vars, "MobilenetV1/Logits/Conv2d_1c_1x1/biases"), classes_);
    for (BufferPtr* b : {&pooled_, &dropped_, &mask_, &dpooled_}) *b = std::make_unique<Buffer>(batch * channels_);
    for (BufferPtr* b : {&logits_, &dlogits_}) *b = std::make_unique<Buffer>(batch * classes_);
    dlogits_w_ = std::make_unique<Buffer>(channels_ * classes_);
    dlogits_b_ = std::make_unique<Buffer>(classes_);
    losses_ = std::make_unique<Buffer>(batch);
    loss_ = std::make_unique<Buffer>(1);
    ones_ = std::make_unique<Buffer>(batch);
    fill<<<grid(batch), 256, 0, h_.stream>>>(ones_->p, batch, 1.0f);
    workspace_ = std::make_unique<Buffer>(static_cast<size_t>(most / 4 + 1));
  }
  ~DirectTraining() {
    for (const auto& l : layers_) {
      cudnnDestroyTensorDescriptor(l->desc);
      cudnnDestroyTensorDescriptor(l->channel);
    }
  }

  // One step; returns the loss (copied to the host, which waits for the step).
  float step() {
    const float one = 1, zero = 0, lr = 0.01f, keep = 0.999f;
    for (const auto& l : layers_) {
      const int64_t n = l->g.y_size();
      l->forward->run(l->input, l->filter->p, l->conv->p, workspace_->p);
      CK(cudnnBatchNormalizationForwardTraining(h_.dnn, CUDNN_BATCHNORM_SPATIAL_PERSISTENT, &one, &zero, l->desc,
                                                l->conv->p, l->desc, l->normalized->p, l->channel, l->gamma->p,
                                                l->beta->p, 1.0 - 0.9997, l->mean->p, l->variance->p, 0.001,
                                                l->saved_mean->p, l->saved_rstd->p));
      relu6<<<grid(n), 256, 0, h_.stream>>>(l->normalized->p, l->output->p, n);
    }
    const float* features = layers_.back()->output->p;
    const int64_t pooled = batch_ * channels_, logits = batch_ * classes_;
    global_average<<<grid(pooled), 256, 0, h_.stream>>>(features, pooled_->p, batch_, hw_, channels_);
    dropout<<<grid(pooled), 256, 0, h_.stream>>>(pooled_->p, dropped_->p, mask_->p, pooled, ++seed_, keep);
    gemm(h_.blas, false, false, batch_, classes_, channels_, dropped_->p, logits_w_->p, logits_->p);
    add_bias<<<grid(logits), 256, 0, h_.stream>>>(logits_->p, logits_b_->p, logits, classes_);
    softmax_xent<<<grid(batch_), 256, 0, h_.stream>>>(logits_->p, labels_, losses_->p, dlogits_->p, batch_, classes_);
    mean_of<<<1, 1, 0, h_.stream>>>(losses_->p, loss_->p, batch_);
    // Backward: the logits' bias, weights and input.
    CK(cublasSgemv(h_.blas, CUBLAS_OP_N, static_cast<int>(classes_), static_cast<int>(batch_), &one, dlogits_->p,
                   static_cast<int>(classes_), ones_->p, 1, &zero, dlogits_b_->p, 1));
    gemm(h_.blas, true, false, channels_, classes_, batch_, dropped_->p, dlogits_->p, dlogits_w_->p);
    gemm(h_.blas, false, true, batch_, channels_, classes_, dlogits_->p, logits_w_->p, dpooled_->p);
    dropout_grad<<<grid(pooled), 256, 0, h_.stream>>>(dpooled_->p, mask_->p, dpooled_->p, pooled, keep);
    float* grad = layers_.back()->grad->p;  // d features, through the average pool
    global_average_grad<<<grid(layers_.back()->g.y_size()), 256, 0, h_.stream>>>(dpooled_->p, grad, batch_, hw_,
                                                                                 channels_);
    for (size_t i = layers_.size(); i-- > 0;) {
      Layer& l = *layers_[i];
      const int64_t n = l.g.y_size();
      // grad holds d output: through ReLU6 into d normalized (in place), then the batch norm into d conv.
      relu6_grad<<<grid(n), 256, 0, h_.stream>>>(grad, l.normalized->p, l.normalized->p, n);
      CK(cudnnBatchNormalizationBackward(h_.dnn, CUDNN_BATCHNORM_SPATIAL_PERSISTENT, &one, &zero, &one, &zero, l.desc,
                                         l.conv->p, l.desc, l.normalized->p, l.desc, l.grad->p, l.channel, l.gamma->p,
                                         l.dgamma->p, l.dbeta->p, 0.001, l.saved_mean->p, l.saved_rstd->p));
      l.backward_filter->run(l.input, l.dfilter->p, l.grad->p, workspace_->p);
      if (l.backward_data) {
        l.backward_data->run(l.input_grad, l.filter->p, l.grad->p, workspace_->p);
        grad = l.input_grad;
      }
    }
    // SGD on every variable.
    auto update = [&](float* w, const float* g, int64_t n) { sgd<<<grid(n), 256, 0, h_.stream>>>(w, g, n, lr); };
    for (const auto& l : layers_) {
      update(l->filter->p, l->dfilter->p, l->g.w_size());
      update(l->gamma->p, l->dgamma->p, l->g.out_ch);
      update(l->beta->p, l->dbeta->p, l->g.out_ch);
    }
    update(logits_w_->p, dlogits_w_->p, channels_ * classes_);
    update(logits_b_->p, dlogits_b_->p, classes_);
    CK(cudaGetLastError());
    float loss = 0;
    CK(cudaMemcpyAsync(&loss, loss_->p, sizeof(float), cudaMemcpyDeviceToHost, h_.stream));
    CK(cudaStreamSynchronize(h_.stream));
    return loss;
  }

 private:
  struct Layer {
    Geometry g;
    float* input = nullptr;                         // the layer below's output, or the images
    float* input_grad = nullptr;                    // the layer below's grad (none for the first layer)
    BufferPtr filter, gamma, beta, mean, variance;  // the variables (filter in KRSC)
    BufferPtr conv, normalized, output;             // forward: conv, batch norm, ReLU6
    BufferPtr saved_mean, saved_rstd;               // the batch's statistics, for the backward pass
    BufferPtr grad, dfilter, dgamma, dbeta;         // grad: d output, then d conv
    cudnnTensorDescriptor_t desc = nullptr, channel = nullptr;
    std::unique_ptr<ConvPlan> forward, backward_filter, backward_data;
  };
  Handles h_;
  int64_t batch_;
  float* images_;
  const int64_t* labels_;
  std::vector<std::unique_ptr<Layer>> layers_;
  int64_t hw_ = 0, channels_ = 0, classes_ = 0;
  uint32_t seed_ = 0;
  BufferPtr logits_w_, logits_b_, pooled_, dropped_, mask_, dpooled_, logits_, dlogits_, dlogits_w_, dlogits_b_,
      losses_, loss_, ones_, workspace_;
};

// hub's MobileNet training step on the GPU (see the top of the file).
struct HubTraining {
  hub::Graph graph;
  hub::VariableStore vars;
  hub::Output images, labels, loss;
  hub::GradientOps grads;
  std::unique_ptr<hub::Optimizer> sgd;
  std::unique_ptr<hub::Session> session;
  hub::FeedList feeds;

  HubTraining(int64_t batch, const hub::Tensor& x, const hub::Tensor& y) {
    using namespace hub;
    Scope s(graph);
    images = ops::placeholder(s, DType::kFloat32, {batch, 224, 224, 3}, "images");
    labels = ops::placeholder(s, DType::kInt64, {batch}, "labels");
    nets::NetOptions o;
    o.num_classes = 1001;
    o.is_training = true;
    loss = ops::sparse_softmax_cross_entropy(s, nets::build_net("mobilenet_v1", s, images, o).logits, labels);
    grads = build_gradients(s, loss);
    sgd = make_optimizer("sgd", LearningRateSchedule::fixed(0.01));
    vars.initialize(graph);
    SessionOptions options;
    options.backend = &find_backend("cuda");
    options.fetch_to_host = false;
    session = std::make_unique<Session>(graph, &vars, options);
    feeds = {{images, x}, {labels, y}};
  }
  void step() { train_step(*session, *sgd, vars, grads, loss, feeds); }
  // The ops of the step that ran off the GPU, after a step (none expected).
  std::string off_gpu() const {
    std::string out;
    for (const auto& [node, backend] : session->last_kernels())
      if (backend != "cuda" && graph.node(*graph.find(node)).op != "Const")
        out += " " + node + " (" + graph.node(*graph.find(node)).op + ")";
    return out;
  }
};

void report(const std::string& what, int64_t batch, double gflop, const std::vector<double>& seconds,
            const std::string& extra) {
  std::printf("%s batch=%lld hub=%.1f img/s (%.1f GFLOP/s) cudnn_direct=%.1f img/s (%.1f GFLOP/s)%s ratio=%.2f\n",
              what.c_str(), static_cast<long long>(batch), batch / seconds[0], gflop / seconds[0], batch / seconds[1],
              gflop / seconds[1], extra.c_str(), seconds[1] / seconds[0]);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const bool profile = argc > 1 && std::string(argv[1]) == "--profile";
  if (profile) {
    --argc;
    ++argv;
  }
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  std::vector<int64_t> batches;
  for (int i = 2; i < argc; ++i) batches.push_back(std::atoll(argv[i]));
  if (batches.empty()) batches = {1, 64};
  if (rounds < 1 || std::any_of(batches.begin(), batches.end(), [](int64_t b) { return b < 1; })) {
    std::fprintf(stderr, "usage: cudnn_direct_bench [--profile] [rounds >= 1 [batch >= 1 ...]]\n");
    return 2;
  }
  try {
    hub::find_backend("cuda");
    ::setenv("HUB_BACKEND", "cuda", 1);  // the module's sessions run on the GPU
    int64_t macs = 0;
    const hub::ModuleSpec spec = bench::net_module("mobilenet_v1", &macs);
    hub::Module hub_module(spec);
    for (int64_t batch : batches) {
      hub::Tensor x = hub::to_device(bench::uniform({batch, 224, 224, 3}, 7, 0, 1), hub::Device::kCUDA);
      DirectInference direct(hub_module.variables(), batch, x.device_data<float>());
      std::vector<float> logits(static_cast<size_t>(batch * direct.classes()));
      const hub::Tensor h = hub_module(x);
      direct.run(logits.data());
      if (h.num_elements() != static_cast<int64_t>(logits.size())) {
        std::fprintf(stderr, "cudnn_direct_bench: hub gave %lld logits, direct %zu\n",
                     static_cast<long long>(h.num_elements()), logits.size());
        return 1;
      }
      const double rel = bench::max_rel_diff(h.data<float>(), logits.data(), h.num_elements());
      if (!(rel <= 1e-4)) {
        std::fprintf(stderr, "cudnn_direct_bench: batch=%lld: hub and direct logits differ, max_rel_diff=%.2e\n",
                     static_cast<long long>(batch), rel);
        return 1;
      }
      const std::vector<double> seconds =
          bench::time_alternating(rounds, std::max<int>(4, static_cast<int>(256 / batch)),
                                  {[&] { hub_module(x); }, [&] { direct.run(logits.data()); }});
      char extra[64];
      std::snprintf(extra, sizeof extra, " max_rel_diff=%.1e", rel);
      report("mobilenet_v1 infer", batch, 2.0 * static_cast<double>(macs) * batch / 1e9, seconds, extra);
      if (profile) {
        const hub::Graph& g = hub_module.graph();
        const hub::Output images = g.tensor(spec.signature().inputs.at("images").tensor_name);
        const hub::Output logits = g.tensor(spec.signature().outputs.at("default").tensor_name);
        bench::print_inference_profile(hub::optimize_for_inference(g, hub_module.variables(), {images, logits}),
                                       hub_module.variables(), images, logits, x, rounds);
      }
    }
    const int64_t batch = 64;
    hub::Tensor y(hub::DType::kInt64, {batch});
    for (int64_t i = 0; i < batch; ++i) y.data<int64_t>()[i] = i % 10;
    const hub::Tensor x = hub::to_device(bench::uniform({batch, 224, 224, 3}, 7, 0, 1), hub::Device::kCUDA);
    const hub::Tensor labels = hub::to_device(y, hub::Device::kCUDA);
    HubTraining hub_training(batch, x, labels);
    DirectTraining direct(hub_training.vars, batch, const_cast<float*>(x.device_data<float>()),
                          labels.device_data<int64_t>());
    hub::move_variables(hub_training.vars, hub::Device::kCUDA);
    hub_training.step();
    direct.step();
    const std::string off = hub_training.off_gpu();
    const std::vector<double> seconds =
        bench::time_alternating(rounds, 5, {[&] { hub_training.step(); }, [&] { direct.step(); }});
    report("mobilenet_v1 train", batch, 6.0 * static_cast<double>(macs) * batch / 1e9, seconds,
           off.empty() ? "" : " off the GPU:" + off);
  } catch (const hub::Error& e) {
    std::fprintf(stderr, "cudnn_direct_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

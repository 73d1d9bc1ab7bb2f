// cudnn_direct_bench: hub's MobileNet v1 1.0/224 inference on the `cuda`
// backend against the same network written directly on cuDNN's graph API
// and cuBLAS: issue #16's `ratio=hub/cudnn_direct` line.
//
//   ./build/bench/cudnn_direct_bench [rounds [batch...]]   (default 7 rounds, batches 1 and 64)
//
// The direct program takes the weights of the module bench/net_module.h
// makes (randomised batch-norm statistics), folds each batch norm into its
// convolution (w' = w * s, b' = beta - mean * s, s = gamma / sqrt(variance +
// 0.001) per output channel) and keeps the filters on the device in cuDNN's
// KRSC layout. Per layer: one convolution (its execution plan chosen once:
// of the float32 engines cuDNN's heuristics propose, without tensor cores,
// the fastest of the first four, timed) and one pass adding the bias and
// clipping to [0, 6]; then a global average pool kernel, the logits as one
// cublasSgemm and a bias pass. Every buffer is allocated before the first
// call; activations are NHWC on the device, the images are already there,
// and the [batch, 1001] logits are copied to the host at the end of a call,
// as hub's module call returns them.
//
// Before timing, each batch's logits of both must agree within 1e-4 relative
// (max |hub - direct| / max |hub|), or the program fails. Rounds alternate
// hub and the direct program (a fixed number of calls each); a line per batch
// gives the medians in images/s and GFLOP/s (2 flops per multiply-add) and
// `ratio=hub/cudnn_direct` (hub's rate over the direct one's).
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

__global__ void bias_relu6(float* y, const float* bias, int64_t n, int64_t channels) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    y[i] = fminf(fmaxf(y[i] + bias[i % channels], 0.0f), 6.0f);
}

__global__ void add_bias(float* y, const float* bias, int64_t n, int64_t channels) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    y[i] += bias[i % channels];
}

// y[b, c] = mean over the hw positions of x[b, :, c] (NHWC).
__global__ void global_average(const float* x, float* y, int64_t batch, int64_t hw, int64_t channels) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < batch * channels;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t b = i / channels, c = i % channels;
    float sum = 0;
    for (int64_t p = 0; p < hw; ++p) sum += x[(b * hw + p) * channels + c];
    y[i] = sum / static_cast<float>(hw);
  }
}

int grid(int64_t n) { return static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535 * 8)); }

// An owned cuDNN backend descriptor.
struct Descriptor {
  cudnnBackendDescriptor_t d = nullptr;
  explicit Descriptor(cudnnBackendDescriptorType_t type) { CK(cudnnBackendCreateDescriptor(type, &d)); }
  ~Descriptor() { cudnnBackendDestroyDescriptor(d); }
  Descriptor(const Descriptor&) = delete;
};
using DescriptorList = std::vector<std::unique_ptr<Descriptor>>;

cudnnBackendDescriptor_t make(DescriptorList& keep, cudnnBackendDescriptorType_t type) {
  keep.push_back(std::make_unique<Descriptor>(type));
  return keep.back()->d;
}
void put(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
         const void* values) {
  CK(cudnnBackendSetAttribute(d, name, type, count, values));
}

// One folded convolution + bias + ReLU6 layer, NHWC in and out.
struct Layer {
  int64_t size, in_ch, out_ch, kernel, stride, out;
  bool depthwise;
  std::unique_ptr<Buffer> filter, bias, output;  // filter in KRSC
  DescriptorList keep;                           // the plan and what it was built from
  cudnnBackendDescriptor_t plan = nullptr;
  int64_t workspace = 0;
};

class DirectMobilenet {
 public:
  DirectMobilenet(const hub::VariableStore& vars, int64_t batch, const float* images) : batch_(batch), images_(images) {
    CK(cudaStreamCreate(&stream_));
    CK(cudnnCreate(&dnn_));
    CK(cudnnSetStream(dnn_, stream_));
    CK(cublasCreate(&blas_));
    CK(cublasSetStream(blas_, stream_));
    CK(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));
    const std::string scope = "MobilenetV1/";
    int64_t size = 224, channels = 3;
    add_layer(vars, scope + "Conv2d_0", "weights", size, channels, 32, 2, false);
    size = layers_.back()->out;
    channels = 32;
    const int64_t strides[] = {1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1};
    const int64_t depths[] = {64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024};
    for (int i = 0; i < 13; ++i) {
      const std::string base = scope + "Conv2d_" + std::to_string(i + 1);
      add_layer(vars, base + "_depthwise", "depthwise_weights", size, channels, channels, strides[i], true);
      size = layers_.back()->out;
      add_layer(vars, base + "_pointwise", "weights", size, channels, depths[i], 1, false);
      channels = depths[i];
    }
    hw_ = size * size;
    channels_ = channels;
    const hub::Tensor& w = vars.at(scope + "Logits/Conv2d_1c_1x1/weights");  // [1, 1, C, classes]
    classes_ = w.shape()[3];
    logits_w_ = upload(w.data<float>(), w.num_elements());
    logits_b_ = upload(vars.at(scope + "Logits/Conv2d_1c_1x1/biases").data<float>(), classes_);
    pooled_ = std::make_unique<Buffer>(batch * channels);
    logits_ = std::make_unique<Buffer>(batch * classes_);
    int64_t most = 0;
    for (const auto& l : layers_) most = std::max(most, l->workspace);
    workspace_ = std::make_unique<Buffer>(static_cast<size_t>(most / 4 + 1));
  }
  ~DirectMobilenet() {
    layers_.clear();
    cublasDestroy(blas_);
    cudnnDestroy(dnn_);
    cudaStreamDestroy(stream_);
  }

  int64_t classes() const { return classes_; }

  // logits [batch, classes] on the host of the images (on the device).
  void run(float* logits) {
    const float* x = images_;
    for (const auto& l : layers_) {
      execute(*l, x, workspace_->p);
      const int64_t n = batch_ * l->out * l->out * l->out_ch;
      bias_relu6<<<grid(n), 256, 0, stream_>>>(l->output->p, l->bias->p, n, l->out_ch);
      x = l->output->p;
    }
    global_average<<<grid(batch_ * channels_), 256, 0, stream_>>>(x, pooled_->p, batch_, hw_, channels_);
    const float one = 1, zero = 0;
    CK(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(classes_), static_cast<int>(batch_),
                   static_cast<int>(channels_), &one, logits_w_->p, static_cast<int>(classes_), pooled_->p,
                   static_cast<int>(channels_), &zero, logits_->p, static_cast<int>(classes_)));
    add_bias<<<grid(batch_ * classes_), 256, 0, stream_>>>(logits_->p, logits_b_->p, batch_ * classes_, classes_);
    CK(cudaGetLastError());
    CK(cudaMemcpyAsync(logits, logits_->p, sizeof(float) * batch_ * classes_, cudaMemcpyDeviceToHost, stream_));
    CK(cudaStreamSynchronize(stream_));
  }

 private:
  std::unique_ptr<Buffer> upload(const float* host, int64_t n) {
    auto b = std::make_unique<Buffer>(n);
    CK(cudaMemcpy(b->p, host, sizeof(float) * n, cudaMemcpyHostToDevice));
    return b;
  }

  void add_layer(const hub::VariableStore& vars, const std::string& name, const std::string& weights_name, int64_t size,
                 int64_t in_ch, int64_t out_ch, int64_t stride, bool depthwise) {
    auto l = std::make_unique<Layer>();
    const hub::Tensor& w = vars.at(name + "/" + weights_name);  // HWIO, or HWCM with M = 1
    l->size = size;
    l->in_ch = in_ch;
    l->out_ch = out_ch;
    l->kernel = w.shape()[0];
    l->stride = stride;
    l->out = (size + stride - 1) / stride;
    l->depthwise = depthwise;
    const float* gamma = vars.at(name + "/BatchNorm/gamma").data<float>();
    const float* beta = vars.at(name + "/BatchNorm/beta").data<float>();
    const float* mean = vars.at(name + "/BatchNorm/moving_mean").data<float>();
    const float* variance = vars.at(name + "/BatchNorm/moving_variance").data<float>();
    std::vector<float> scale(out_ch), bias(out_ch);
    for (int64_t c = 0; c < out_ch; ++c) {
      scale[c] = gamma[c] / std::sqrt(variance[c] + 0.001f);
      bias[c] = beta[c] - mean[c] * scale[c];
    }
    // HWIO / HWCM (output channel innermost) folded and transposed to KRSC.
    const int64_t per_out = w.num_elements() / out_ch;  // kh * kw * (C/G)
    std::vector<float> krsc(w.num_elements());
    for (int64_t i = 0; i < per_out; ++i)
      for (int64_t o = 0; o < out_ch; ++o) krsc[o * per_out + i] = w.data<float>()[i * out_ch + o] * scale[o];
    l->filter = upload(krsc.data(), w.num_elements());
    l->bias = upload(bias.data(), out_ch);
    l->output = std::make_unique<Buffer>(batch_ * l->out * l->out * out_ch);
    choose_plan(*l, layers_.empty() ? images_ : layers_.back()->output->p);
    layers_.push_back(std::move(l));
  }

  // The operation graph of the layer's convolution (uids 1 = x, 2 = w, 3 = y).
  cudnnBackendDescriptor_t graph_of(Layer& l) {
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    const int64_t align = 16, cg = l.depthwise ? 1 : l.in_ch;
    auto tensor = [&](int64_t uid, std::vector<int64_t> dims, std::vector<int64_t> strides) {
      cudnnBackendDescriptor_t t = make(l.keep, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
      put(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
      put(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
      put(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
      put(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
      put(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
      CK(cudnnBackendFinalize(t));
      return t;
    };
    const int64_t s = l.size, o = l.out, k = l.kernel;
    cudnnBackendDescriptor_t x = tensor(1, {batch_, l.in_ch, s, s}, {s * s * l.in_ch, 1, s * l.in_ch, l.in_ch});
    cudnnBackendDescriptor_t w = tensor(2, {l.out_ch, cg, k, k}, {cg * k * k, 1, k * cg, cg});
    cudnnBackendDescriptor_t y = tensor(3, {batch_, l.out_ch, o, o}, {o * o * l.out_ch, 1, o * l.out_ch, l.out_ch});
    // TF's SAME padding: the odd pixel after.
    const int64_t total = std::max<int64_t>((o - 1) * l.stride + k - s, 0);
    const int64_t pre[2] = {total / 2, total / 2}, post[2] = {total - total / 2, total - total / 2};
    const int64_t strides[2] = {l.stride, l.stride}, dilations[2] = {1, 1}, spatial = 2;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    cudnnBackendDescriptor_t conv = make(l.keep, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    put(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
    put(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    put(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    put(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pre);
    put(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, post);
    put(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides);
    put(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations);
    CK(cudnnBackendFinalize(conv));
    const float alpha = 1, beta = 0;
    cudnnBackendDescriptor_t op = make(l.keep, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    put(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    put(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
    put(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    put(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
    put(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    put(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    CK(cudnnBackendFinalize(op));
    cudnnBackendDescriptor_t graph = make(l.keep, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    put(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
    put(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn_);
    CK(cudnnBackendFinalize(graph));
    return graph;
  }

  void execute(const Layer& l, const float* x, float* workspace) {
    void* pointers[3] = {const_cast<float*>(x), l.filter->p, l.output->p};
    const int64_t uids[3] = {1, 2, 3};
    Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    put(pack.d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
    put(pack.d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
    void* ws = workspace;
    put(pack.d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    CK(cudnnBackendFinalize(pack.d));
    CK(cudnnBackendExecute(dnn_, l.plan, pack.d));
  }

  // Of the engines heuristics mode A proposes without tensor cores, the
  // fastest of the first four that build (each timed on the real buffers).
  void choose_plan(Layer& l, const float* x) {
    cudnnBackendDescriptor_t graph = graph_of(l);
    cudnnBackendDescriptor_t heur = make(l.keep, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    put(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    put(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    CK(cudnnBackendFinalize(heur));
    int64_t count = 0;
    CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                nullptr));
    std::vector<cudnnBackendDescriptor_t> configs;
    for (int64_t i = 0; i < count; ++i) configs.push_back(make(l.keep, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count,
                                configs.data()));
    float best_ms = -1;
    int tried = 0;
    for (int64_t i = 0; i < count && tried < 4; ++i) {
      cudnnBackendDescriptor_t engine = make(l.keep, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      int64_t n = 0;
      CK(cudnnBackendGetAttribute(configs[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                  &engine));
      cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
      int64_t note_count = 0;
      CK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                  CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &note_count, notes));
      if (std::find(notes, notes + note_count, CUDNN_NUMERICAL_NOTE_TENSOR_CORE) != notes + note_count) continue;
      cudnnBackendDescriptor_t plan = make(l.keep, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      put(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn_);
      put(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs[i]);
      if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) continue;
      ++tried;
      int64_t workspace = 0;
      CK(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &workspace));
      Buffer ws(static_cast<size_t>(workspace / 4 + 1));
      const cudnnBackendDescriptor_t previous = l.plan;
      l.plan = plan;
      execute(l, x, ws.p);  // warm-up
      cudaEvent_t start, stop;
      CK(cudaEventCreate(&start));
      CK(cudaEventCreate(&stop));
      CK(cudaEventRecord(start, stream_));
      for (int r = 0; r < 3; ++r) execute(l, x, ws.p);
      CK(cudaEventRecord(stop, stream_));
      CK(cudaEventSynchronize(stop));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, start, stop));
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
      if (best_ms < 0 || ms < best_ms) {
        best_ms = ms;
        l.workspace = workspace;
      } else {
        l.plan = previous;
      }
    }
    if (!l.plan) {
      std::fprintf(stderr, "cudnn_direct_bench: no float32 engine for a %lldx%lld convolution\n",
                   static_cast<long long>(l.kernel), static_cast<long long>(l.kernel));
      std::exit(1);
    }
  }

  int64_t batch_;
  const float* images_;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::vector<std::unique_ptr<Layer>> layers_;
  int64_t hw_ = 0, channels_ = 0, classes_ = 0;
  std::unique_ptr<Buffer> logits_w_, logits_b_, pooled_, logits_, workspace_;
};

// hub's MobileNet training step on the GPU (SGD at 0.01, 1001 classes, as
// bench/model_bench.cc's CPU case): images/s over `rounds` rounds of 5 steps,
// and the ops of the step that ran off the GPU (none expected).
void hub_training(int64_t batch, int rounds, int64_t macs) {
  using namespace hub;
  Graph graph;
  Scope s(graph);
  Output images = ops::placeholder(s, DType::kFloat32, {batch, 224, 224, 3}, "images");
  Output labels = ops::placeholder(s, DType::kInt64, {batch}, "labels");
  nets::NetOptions o;
  o.num_classes = 1001;
  o.is_training = true;
  Output loss = ops::sparse_softmax_cross_entropy(s, nets::build_net("mobilenet_v1", s, images, o).logits, labels);
  GradientOps grads = build_gradients(s, loss);
  auto sgd = make_optimizer("sgd", LearningRateSchedule::fixed(0.01));
  VariableStore vars;
  vars.initialize(graph);
  SessionOptions options;
  options.backend = &find_backend("cuda");
  options.fetch_to_host = false;
  Session session(graph, &vars, options);
  move_variables(vars, Device::kCUDA);
  Tensor y(DType::kInt64, {batch});
  for (int64_t i = 0; i < batch; ++i) y.data<int64_t>()[i] = i % 10;
  const FeedList feeds{{images, to_device(bench::uniform({batch, 224, 224, 3}, 7, 0, 1), Device::kCUDA)},
                       {labels, to_device(y, Device::kCUDA)}};
  auto step = [&] { train_step(session, *sgd, vars, grads, loss, feeds); };
  step();
  std::string off_gpu;
  for (const auto& [node, backend] : session.last_kernels())
    if (backend != "cuda" && graph.node(*graph.find(node)).op != "Const")
      off_gpu += " " + node + " (" + graph.node(*graph.find(node)).op + ")";
  const double seconds = bench::time_alternating(rounds, 5, {step})[0];
  std::printf("mobilenet_v1 train batch=%lld hub=%.1f img/s (%.1f GFLOP/s, 3x the forward's flops)%s%s\n",
              static_cast<long long>(batch), batch / seconds, 6.0 * static_cast<double>(macs) * batch / seconds / 1e9,
              off_gpu.empty() ? "" : " off the GPU:", off_gpu.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  std::vector<int64_t> batches;
  for (int i = 2; i < argc; ++i) batches.push_back(std::atoll(argv[i]));
  if (batches.empty()) batches = {1, 64};
  if (rounds < 1 || std::any_of(batches.begin(), batches.end(), [](int64_t b) { return b < 1; })) {
    std::fprintf(stderr, "usage: cudnn_direct_bench [rounds >= 1 [batch >= 1 ...]]\n");
    return 2;
  }
  try {
    hub::find_backend("cuda");
    ::setenv("HUB_BACKEND", "cuda", 1);  // the module's sessions run on the GPU
    const std::string name = "mobilenet_v1";
    int64_t macs = 0;
    hub::Module hub_module(bench::net_module(name, &macs));
    for (int64_t batch : batches) {
      const hub::Tensor x = hub::to_device(bench::uniform({batch, 224, 224, 3}, 7, 0, 1), hub::Device::kCUDA);
      DirectMobilenet direct(hub_module.variables(), batch, x.device_data<float>());
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
        std::fprintf(stderr, "cudnn_direct_bench: %s batch=%lld: hub and direct logits differ, max_rel_diff=%.2e\n",
                     name.c_str(), static_cast<long long>(batch), rel);
        return 1;
      }
      const std::vector<double> seconds =
          bench::time_alternating(rounds, std::max<int>(4, static_cast<int>(256 / batch)),
                                  {[&] { hub_module(x); }, [&] { direct.run(logits.data()); }});
      const double gflop = 2.0 * static_cast<double>(macs) * static_cast<double>(batch) / 1e9;
      std::printf(
          "%s batch=%lld hub=%.1f img/s (%.1f GFLOP/s) cudnn_direct=%.1f img/s (%.1f GFLOP/s) max_rel_diff=%.1e "
          "ratio=%.2f\n",
          name.c_str(), static_cast<long long>(batch), batch / seconds[0], gflop / seconds[0], batch / seconds[1],
          gflop / seconds[1], rel, seconds[1] / seconds[0]);
      std::fflush(stdout);
    }
    hub_training(64, rounds, macs);
  } catch (const hub::Error& e) {
    std::fprintf(stderr, "cudnn_direct_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

// onednn_direct_bench: hub's MobileNet v1 1.0/224 inference against the same
// network written directly against oneDNN's primitives (v2 API, Debian's
// 2.6): the physical best this library gives, and issue #14's
// `ratio=hub/onednn_direct` line.
//
//   ./build/bench/onednn_direct_bench [rounds [batch...]]   (default 7 rounds, batches 1 and 32)
//
// The direct program computes the same network with the same weights as the
// module bench/net_module.h makes (randomised batch-norm statistics): it
// takes the module instance's variables, folds each batch norm into its
// convolution's weights and bias itself (w' = w * s, b' = beta - mean * s,
// s = gamma / sqrt(variance + 0.001) per output channel), fuses ReLU6 as a
// clip_v2(0, 6) post-op, lets oneDNN choose every activation and weight
// layout (format `any`), reorders the weights once and the activations only
// where one primitive's chosen output layout differs from the next one's
// input, and allocates every buffer before the first call. Its input is the
// module's NHWC images and its output the [batch, 1001] logits (an
// inner-product for the final 1x1 convolution after the 7x7 average pool).
//
// Before timing, each batch's logits of both must agree within 1e-4 relative
// (max |hub - direct| / max |hub|); otherwise the program fails. Each round
// then times a fixed number of calls of hub and of the direct program in
// turn, on the same OpenMP threads; a line per batch gives the medians in
// images/s, GFLOP/s (2 flops per multiply-add of the convolutions and the
// matmul) and `ratio=hub/onednn_direct` (hub's rate over the direct one).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "hub/module/module.h"
#include "net_module.h"

namespace {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using algo = dnnl::algorithm;

// TensorFlow's SAME padding along one axis: {before, after}.
std::pair<int64_t, int64_t> same_padding(int64_t in, int64_t kernel, int64_t stride) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + kernel - in, 0);
  return {total / 2, total - total / 2};
}

class DirectMobilenet {
 public:
  DirectMobilenet(const hub::VariableStore& vars, int64_t batch)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_), batch_(batch) {
    input_ = dnnl::memory({{batch, 3, 224, 224}, dt::f32, tag::nhwc}, engine_, DNNL_MEMORY_NONE);
    current_ = input_;
    int64_t size = 224, channels = 3;
    const std::string scope = "MobilenetV1/";
    add_conv(vars, scope + "Conv2d_0", "weights", size, channels, 32, 2, false);
    size = (size + 1) / 2;
    channels = 32;
    const int64_t strides[] = {1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1};
    const int64_t depths[] = {64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024};
    for (int i = 0; i < 13; ++i) {
      const std::string base = scope + "Conv2d_" + std::to_string(i + 1);
      add_conv(vars, base + "_depthwise", "depthwise_weights", size, channels, channels, strides[i], true);
      size = (size + strides[i] - 1) / strides[i];
      add_conv(vars, base + "_pointwise", "weights", size, channels, depths[i], 1, false);
      channels = depths[i];
    }
    // Logits: 7x7 average pool, then the 1x1 convolution with biases as an
    // inner product into the user's [batch, classes] buffer.
    const dims pooled{batch, channels, 1, 1};
    dnnl::pooling_forward::primitive_desc pool({dnnl::prop_kind::forward_inference,
                                                algo::pooling_avg_exclude_padding,
                                                current_.get_desc(),
                                                {pooled, dt::f32, tag::any},
                                                {1, 1},
                                                {size, size},
                                                {0, 0},
                                                {0, 0}},
                                               engine_);
    dnnl::memory pool_dst(pool.dst_desc(), engine_);
    steps_.push_back({dnnl::pooling_forward(pool), {{DNNL_ARG_SRC, current_}, {DNNL_ARG_DST, pool_dst}}});
    current_ = pool_dst;
    const hub::Tensor& w = vars.at(scope + "Logits/Conv2d_1c_1x1/weights");  // [1, 1, C, classes]
    const hub::Tensor& b = vars.at(scope + "Logits/Conv2d_1c_1x1/biases");
    const int64_t classes = w.shape()[3];
    output_ = dnnl::memory({{batch, classes}, dt::f32, tag::nc}, engine_, DNNL_MEMORY_NONE);
    dnnl::inner_product_forward::primitive_desc ip({dnnl::prop_kind::forward_inference,
                                                    {pooled, dt::f32, tag::any},
                                                    {{classes, channels, 1, 1}, dt::f32, tag::any},
                                                    {{classes}, dt::f32, tag::a},
                                                    output_.get_desc()},
                                                   engine_);
    relayout_to(ip.src_desc());
    dnnl::memory bias({{classes}, dt::f32, tag::a}, engine_);
    std::copy_n(b.data<float>(), classes, static_cast<float*>(bias.get_data_handle()));
    steps_.push_back(
        {dnnl::inner_product_forward(ip),
         {{DNNL_ARG_SRC, current_},
          {DNNL_ARG_WEIGHTS, prepacked(w.data<float>(), {classes, channels, 1, 1}, tag::hwio, ip.weights_desc())},
          {DNNL_ARG_BIAS, bias},
          {DNNL_ARG_DST, output_}}});
  }

  int64_t classes() const { return output_.get_desc().dims()[1]; }

  // logits [batch, classes] of images [batch, 224, 224, 3] (NHWC).
  void run(const float* images, float* logits) {
    input_.set_data_handle(const_cast<float*>(images));
    output_.set_data_handle(logits);
    for (auto& [prim, args] : steps_) prim.execute(stream_, args);
    stream_.wait();
  }

 private:
  // A convolution (depthwise: groups = channels) with its batch norm folded
  // in and ReLU6 as a post-op, reading the current activation.
  void add_conv(const hub::VariableStore& vars, const std::string& name, const std::string& weights_name, int64_t size,
                int64_t in_ch, int64_t out_ch, int64_t stride, bool depthwise) {
    const hub::Tensor& w = vars.at(name + "/" + weights_name);  // [3|1, 3|1, in, out] or [3, 3, in, 1]
    const int64_t k = w.shape()[0];
    const float* gamma = vars.at(name + "/BatchNorm/gamma").data<float>();
    const float* beta = vars.at(name + "/BatchNorm/beta").data<float>();
    const float* mean = vars.at(name + "/BatchNorm/moving_mean").data<float>();
    const float* variance = vars.at(name + "/BatchNorm/moving_variance").data<float>();
    std::vector<float> scale(out_ch), folded(w.data<float>(), w.data<float>() + w.num_elements());
    dnnl::memory bias({{out_ch}, dt::f32, tag::a}, engine_);
    float* b = static_cast<float*>(bias.get_data_handle());
    for (int64_t c = 0; c < out_ch; ++c) {
      scale[c] = gamma[c] / std::sqrt(variance[c] + 0.001f);
      b[c] = beta[c] - mean[c] * scale[c];
    }
    // The output channel is the innermost dimension of both filter layouts.
    for (size_t i = 0; i < folded.size(); ++i) folded[i] *= scale[i % out_ch];
    const auto [pad_t, pad_b] = same_padding(size, k, stride);
    const int64_t out = (size + stride - 1) / stride;
    const dims weights = depthwise ? dims{in_ch, 1, 1, k, k} : dims{out_ch, in_ch, k, k};
    dnnl::post_ops po;
    po.append_eltwise(1.0f, algo::eltwise_clip_v2, 0.0f, 6.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    dnnl::convolution_forward::primitive_desc pd({dnnl::prop_kind::forward_inference,
                                                  algo::convolution_direct,
                                                  {{batch_, in_ch, size, size}, dt::f32, tag::any},
                                                  {weights, dt::f32, tag::any},
                                                  bias.get_desc(),
                                                  {{batch_, out_ch, out, out}, dt::f32, tag::any},
                                                  {stride, stride},
                                                  {pad_t, pad_t},
                                                  {pad_b, pad_b}},
                                                 attr, engine_);
    relayout_to(pd.src_desc());
    dnnl::memory dst(pd.dst_desc(), engine_);
    steps_.push_back(
        {dnnl::convolution_forward(pd),
         {{DNNL_ARG_SRC, current_},
          {DNNL_ARG_WEIGHTS, prepacked(folded.data(), weights, depthwise ? tag::hwigo : tag::hwio, pd.weights_desc())},
          {DNNL_ARG_BIAS, bias},
          {DNNL_ARG_DST, dst}}});
    current_ = dst;
  }

  // Adds a reorder of the current activation when the next primitive wants
  // another layout.
  void relayout_to(const dnnl::memory::desc& want) {
    if (current_.get_desc() == want) return;
    dnnl::memory to(want, engine_);
    steps_.push_back({dnnl::reorder(current_, to), {{DNNL_ARG_FROM, current_}, {DNNL_ARG_TO, to}}});
    current_ = to;
  }

  // Weights in the layout `want`, reordered now, once.
  dnnl::memory prepacked(const float* data, const dims& d, tag layout, const dnnl::memory::desc& want) {
    dnnl::memory user({d, dt::f32, layout}, engine_, const_cast<float*>(data));
    dnnl::memory packed(want, engine_);
    dnnl::reorder(user, packed).execute(stream_, user, packed);
    stream_.wait();
    return packed;
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  int64_t batch_;
  dnnl::memory input_, output_, current_;
  std::vector<std::pair<dnnl::primitive, std::unordered_map<int, dnnl::memory>>> steps_;
};

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  std::vector<int64_t> batches;
  for (int i = 2; i < argc; ++i) batches.push_back(std::atoll(argv[i]));
  if (batches.empty()) batches = {1, 32};
  if (rounds < 1 || std::any_of(batches.begin(), batches.end(), [](int64_t b) { return b < 1; })) {
    std::fprintf(stderr, "usage: onednn_direct_bench [rounds >= 1 [batch >= 1 ...]]\n");
    return 2;
  }
  try {
    const std::string name = "mobilenet_v1";
    int64_t macs = 0;
    hub::Module hub_module(bench::net_module(name, &macs));
    for (int64_t batch : batches) {
      const hub::Tensor x = bench::uniform({batch, 224, 224, 3}, 7, 0, 1);
      DirectMobilenet direct(hub_module.variables(), batch);
      std::vector<float> logits(static_cast<size_t>(batch * direct.classes()));
      // Warm up both (hub: the optimiser, primitives, weight reorders) and
      // check they compute the same logits.
      const hub::Tensor h = hub_module(x);
      direct.run(x.data<float>(), logits.data());
      if (h.num_elements() != static_cast<int64_t>(logits.size())) {
        std::fprintf(stderr, "onednn_direct_bench: hub gave %lld logits, direct %zu\n",
                     static_cast<long long>(h.num_elements()), logits.size());
        return 1;
      }
      const double rel = bench::max_rel_diff(h.data<float>(), logits.data(), h.num_elements());
      if (!(rel <= 1e-4)) {
        std::fprintf(stderr, "onednn_direct_bench: %s batch=%lld: hub and direct logits differ, max_rel_diff=%.2e\n",
                     name.c_str(), static_cast<long long>(batch), rel);
        return 1;
      }
      const std::vector<double> seconds =
          bench::time_alternating(rounds, std::max<int>(2, static_cast<int>(64 / batch)),
                                  {[&] { hub_module(x); }, [&] { direct.run(x.data<float>(), logits.data()); }});
      const double gflop = 2.0 * static_cast<double>(macs) * static_cast<double>(batch) / 1e9;
      std::printf(
          "%s batch=%lld hub=%.1f img/s (%.1f GFLOP/s) onednn_direct=%.1f img/s (%.1f GFLOP/s) max_rel_diff=%.1e "
          "ratio=%.2f\n",
          name.c_str(), static_cast<long long>(batch), batch / seconds[0], gflop / seconds[0], batch / seconds[1],
          gflop / seconds[1], rel, seconds[1] / seconds[0]);
      std::fflush(stdout);
    }
  } catch (const hub::Error& e) {
    std::fprintf(stderr, "onednn_direct_bench: %s\n", e.what());
    return 1;
  } catch (const dnnl::error& e) {
    std::fprintf(stderr, "onednn_direct_bench: oneDNN: %s (status %d)\n", e.what(), static_cast<int>(e.status));
    return 1;
  }
  return 0;
}

// The CUDA convolution, matmul and fused kernels (cuDNN graph API, cuBLAS)
// against the reference on awkward shapes, their gradients by finite
// differences, and float32 numerics (no TF32 unless asked for). Every case
// skips where there is no CUDA device.
#include "hub/ops/conv2d.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../conv_cases.h"
#include "hub/ops/fused.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

Attrs matmul_attrs(bool ta, bool tb) { return Attrs().set("transpose_a", ta).set("transpose_b", tb); }

}  // namespace

TEST_CASE("cuda Conv2D, DepthwiseConv2dNative and their backprops match the reference on awkward shapes") {
  HUB_SKIP_UNLESS_CUDA();
  // The oneDNN comparison's cases, and the MNIST tutorial's and a MobileNet
  // block's shapes (many blocks of work).
  std::vector<ConvCase> cases = awkward_conv_cases();
  cases.push_back({false, {16, 28, 28, 1}, {5, 5, 1, 32}, conv_attrs("SAME")});
  cases.push_back({false, {16, 14, 14, 32}, {5, 5, 32, 64}, conv_attrs("SAME")});
  cases.push_back({true, {4, 56, 56, 64}, {3, 3, 64, 1}, conv_attrs("SAME", {2, 2})});
  cases.push_back({false, {4, 28, 28, 64}, {1, 1, 64, 128}, conv_attrs("SAME")});
  int seed = 200;
  for (const ConvCase& k : cases) {
    INFO((k.depthwise ? "depthwise" : "conv") << " x " << k.x.to_string() << " w " << k.w.to_string());
    const std::vector<Tensor> in = k.inputs(seed);  // x, w, dy
    compare_backends(k.forward(), {in[0], in[1]}, k.attrs, "cuda", 2e-4, 2e-4);
    compare_backends(k.forward() + "BackpropInput", in, k.attrs, "cuda", 2e-4, 2e-4);
    compare_backends(k.forward() + "BackpropFilter", in, k.attrs, "cuda", 5e-4, 5e-4);
  }
}

TEST_CASE("cuda Conv2D and DepthwiseConv2dNative: gradients by finite differences") {
  HUB_SKIP_UNLESS_CUDA();
  GradCheckOptions o;
  o.backend = "cuda";
  check_gradients("Conv2D", {random_tensor({2, 5, 5, 3}, 1), random_tensor({3, 3, 3, 4}, 2)},
                  conv_attrs("SAME", {2, 2}), o);
  check_gradients("DepthwiseConv2dNative", {random_tensor({1, 6, 5, 3}, 3), random_tensor({3, 3, 3, 2}, 4)},
                  conv_attrs("SAME"), o);
}

TEST_CASE("cuda MatMul, BatchMatMul, BiasAdd and BiasAddGrad match the reference") {
  HUB_SKIP_UNLESS_CUDA();
  int seed = 300;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("transpose_a " << ta << " transpose_b " << tb);
      const int64_t m = 7, k = 13, n = 5;
      Tensor a = random_tensor(ta ? Shape{k, m} : Shape{m, k}, ++seed);
      Tensor b = random_tensor(tb ? Shape{n, k} : Shape{k, n}, ++seed);
      compare_backends("MatMul", {a, b}, matmul_attrs(ta, tb), "cuda");
    }
  compare_backends("MatMul", {random_tensor({300, 257}, 1), random_tensor({257, 129}, 2)}, matmul_attrs(false, false),
                   "cuda", 2e-4, 2e-4);
  compare_backends("MatMul", {random_tensor({1, 9}, 3), random_tensor({9, 1}, 4)}, matmul_attrs(false, false), "cuda");
  struct Batched {
    Shape x, y;
    bool adj_x, adj_y;
  };
  for (const Batched& b : std::vector<Batched>{{{3, 4, 5}, {3, 5, 2}, false, false},
                                               {{2, 3, 4, 5}, {5, 6}, false, false},       // y broadcast
                                               {{1, 4, 5}, {3, 2, 5}, false, true},        // x broadcast
                                               {{2, 1, 5, 4}, {1, 3, 5, 6}, true, false},  // both broadcast
                                               {{4, 6}, {2, 6, 3}, false, false}}) {
    INFO("BatchMatMul " << b.x.to_string() << " x " << b.y.to_string());
    compare_backends("BatchMatMul", {random_tensor(b.x, ++seed), random_tensor(b.y, ++seed)},
                     Attrs().set("adj_x", b.adj_x).set("adj_y", b.adj_y), "cuda");
  }
  compare_backends("BiasAdd", {random_tensor({3, 4, 5}, 5), random_tensor({5}, 6)}, {}, "cuda");
  compare_backends("BiasAdd", {random_tensor({70000, 3}, 7), random_tensor({3}, 8)}, {}, "cuda");
  compare_backends("BiasAddGrad", {random_tensor({3, 4, 5}, 9)}, {}, "cuda");
  compare_backends("BiasAddGrad", {random_tensor({50000, 7}, 10)}, {}, "cuda", 1e-3, 1e-4);
  GradCheckOptions o;
  o.backend = "cuda";
  check_gradients("MatMul", {random_tensor({3, 4}, 11), random_tensor({2, 4}, 12)}, matmul_attrs(false, true), o);
  check_gradients("BatchMatMul", {random_tensor({2, 3, 4}, 13), random_tensor({4, 2}, 14)}, {}, o);
  check_gradients("BiasAdd", {random_tensor({2, 3, 4}, 15), random_tensor({4}, 16)}, {}, o);
}

TEST_CASE("cuda float32 products are float32: no TF32 rounding unless HUB_CUDA_TF32=1") {
  HUB_SKIP_UNLESS_CUDA();
  // With inputs rounded to TF32's 10-bit mantissa, a K = 2048 product is off
  // by about 1e-3 relative; float32 accumulation stays near 1e-6. The
  // convolution (K = 2304, outputs of rms 16) may run on cuDNN's float32
  // Winograd engines, whose errors reach about 1e-4 even near zero outputs:
  // its absolute tolerance allows that, and TF32's ~5e-3 still fails it.
  compare_backends("MatMul", {random_tensor({64, 2048}, 21), random_tensor({2048, 64}, 22)}, matmul_attrs(false, false),
                   "cuda", 1e-4, 1e-4);
  compare_backends("Conv2D", {random_tensor({8, 16, 16, 256}, 23), random_tensor({3, 3, 256, 64}, 24)},
                   conv_attrs("SAME"), "cuda", 1e-3, 1e-4);
}

TEST_CASE("cuda _FusedConv2D and _FusedMatMul: bias, residual add and every post-op") {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 1;
  for (const FusedConvCase& k : fused_conv_cases()) {
    INFO("x " << k.x.to_string() << " depthwise " << k.depthwise << " stride " << k.stride << " " << k.padding);
    compare_backends("_FusedConv2D", k.inputs(seed), k.attrs(), "cuda", 2e-4, 2e-4);
  }
  Attrs mm = Attrs().set("transpose_a", false).set("transpose_b", true);
  ops::set_post_ops(mm, {{"Add"}, {"Relu"}});
  compare_backends(
      "_FusedMatMul",
      {random_tensor({6, 10}, 41), random_tensor({4, 10}, 42), random_tensor({4}, 43), random_tensor({6, 4}, 44)}, mm,
      "cuda");
}

// The CUDA kernels of hub/ops/activation.h against the reference: every
// activation and grad op on awkward shapes (scalars, size-1 dims, ranks 1..5,
// float4 tails, > 65536 elements, empty), every attribute form, the grad ops'
// boundary conventions by hand, NaN and infinities, PRelu / PReluGrad for
// every slope pattern (including those oneDNN cannot map), and
// finite-difference gradients on the cuda backend.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../activation_cases.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

Attrs hard_sigmoid(float a, float b) { return Attrs().set("alpha", a).set("beta", b); }

const std::vector<Shape> kActivationShapes = {
    {}, {1}, {7}, {1, 1}, {3, 1, 5}, {2, 3, 1, 7}, {4, 17, 9}, {1, 33, 1, 3}, {2, 3, 4, 5, 6}, {70001}, {0, 3}};

}  // namespace

TEST_CASE("cuda activations: every op and attribute form on awkward shapes") {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 1;
  for (const Shape& shape : kActivationShapes) {
    INFO("shape " << shape.to_string());
    Tensor x = random_tensor(shape, ++seed, -8.0f, 8.0f);
    for (const char* op : {"Relu", "Relu6", "HardSwish"}) compare_backends(op, {x}, {}, "cuda", 0, 0);
    for (const char* op : {"Sigmoid", "Tanh"}) compare_backends(op, {x}, {}, "cuda", 1e-6, 1e-5);
    for (float a : {0.1f, -0.3f, 1.7f}) compare_backends("LeakyRelu", {x}, alpha(a), "cuda", 0, 0);
    for (float a : {0.0f, 0.5f, 1.0f, 2.0f}) compare_backends("Elu", {x}, alpha(a), "cuda", 1e-6, 1e-5);
    compare_backends("HardSigmoid", {x}, {}, "cuda", 0, 0);
    compare_backends("HardSigmoid", {x}, hard_sigmoid(1.0f / 6, 0.5f), "cuda", 0, 0);
    compare_backends("HardSigmoid", {x}, hard_sigmoid(-0.7f, 0.2f), "cuda", 0, 0);
    compare_backends("ClipByValue", {x}, clip(-1.5f, 2.25f), "cuda", 0, 0);
    compare_backends("ClipByValue", {x}, Attrs().set("min", 0.5f), "cuda", 0, 0);
    compare_backends("ClipByValue", {x}, Attrs().set("max", -0.5f), "cuda", 0, 0);
    compare_backends("ClipByValue", {x}, clip(1, 1), "cuda", 0, 0);
    compare_backends("ClipByValue", {x}, clip(3, 1), "cuda", 0, 0);  // min > max: max everywhere
  }
}

TEST_CASE("cuda activations: hand-computed values, NaN and infinities") {
  HUB_SKIP_UNLESS_CUDA();
  Tensor x = make({6}, {-2, -0.5f, 0, 0.5f, 3, 7});
  expect_close(run_op("Relu", {x}, {}, "cuda")[0], make({6}, {0, 0, 0, 0.5f, 3, 7}), 0, 0);
  expect_close(run_op("Relu6", {x}, {}, "cuda")[0], make({6}, {0, 0, 0, 0.5f, 3, 6}), 0, 0);
  expect_close(run_op("LeakyRelu", {x}, alpha(0.1f), "cuda")[0], make({6}, {-0.2f, -0.05f, 0, 0.5f, 3, 7}));
  expect_close(run_op("Elu", {x}, alpha(0.5f), "cuda")[0],
               make({6}, {0.5f * (std::exp(-2.0f) - 1), 0.5f * (std::exp(-0.5f) - 1), 0, 0.5f, 3, 7}));
  expect_close(run_op("HardSwish", {x}, {}, "cuda")[0], make({6}, {-1.0f / 3, -0.20833333f, 0, 0.29166667f, 3, 7}));
  expect_close(run_op("HardSigmoid", {x}, {}, "cuda")[0], make({6}, {0.1f, 0.4f, 0.5f, 0.6f, 1, 1}));
  expect_close(run_op("ClipByValue", {x}, clip(-1, 2), "cuda")[0], make({6}, {-1, -0.5f, 0, 0.5f, 2, 2}), 0, 0);
  expect_close(run_op("Sigmoid", {x}, {}, "cuda")[0],
               make({6}, {0.11920292f, 0.37754067f, 0.5f, 0.62245933f, 0.95257413f, 0.99908895f}));
  expect_close(run_op("Tanh", {x}, {}, "cuda")[0],
               make({6}, {-0.96402758f, -0.46211716f, 0, 0.46211716f, 0.99505475f, 0.99999834f}));
  // Saturation without NaN; NaN propagates through the clamps as on the CPU.
  expect_close(run_op("Sigmoid", {make({4}, {-100, 100, -kInf, kInf})}, {}, "cuda")[0], make({4}, {0, 1, 0, 1}));
  expect_close(run_op("Tanh", {make({4}, {-100, 100, -kInf, kInf})}, {}, "cuda")[0], make({4}, {-1, 1, -1, 1}));
  Tensor special = make({4}, {kNaN, -kInf, kInf, -0.0f});
  for (const char* op : {"Relu", "Relu6"}) compare_backends(op, {special}, {}, "cuda", 0, 0);
  compare_backends("LeakyRelu", {special}, alpha(0.2f), "cuda", 0, 0);
  compare_backends("ClipByValue", {special}, clip(-1, 1), "cuda", 0, 0);
  compare_backends("ClipByValue", {special}, {}, "cuda", 0, 0);
  std::vector<float> r = run_op("Relu", {special}, {}, "cuda")[0].to_vector<float>();
  CHECK(std::isnan(r[0]));
  CHECK(r[1] == 0);
  CHECK(r[2] == kInf);
}

TEST_CASE("cuda activation grad ops: every op on awkward shapes") {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 100;
  for (const Shape& shape : kActivationShapes) {
    INFO("shape " << shape.to_string());
    Tensor x = random_tensor(shape, ++seed, -8.0f, 8.0f);
    Tensor g = random_tensor(shape, ++seed, -1.0f, 1.0f);
    Tensor y01 = random_tensor(shape, ++seed, 0.0f, 1.0f);
    Tensor ym = random_tensor(shape, ++seed, -1.0f, 1.0f);
    compare_backends("ReluGrad", {g, x}, {}, "cuda", 0, 0);
    compare_backends("Relu6Grad", {g, x}, {}, "cuda", 0, 0);
    compare_backends("HardSwishGrad", {g, x}, {}, "cuda", 1e-7, 1e-6);
    compare_backends("SigmoidGrad", {y01, g}, {}, "cuda", 1e-7, 1e-6);
    compare_backends("TanhGrad", {ym, g}, {}, "cuda", 1e-6, 1e-6);  // 1 - y^2 may be one fma
    for (float a : {0.1f, -0.3f, 1.7f}) compare_backends("LeakyReluGrad", {g, x}, alpha(a), "cuda", 0, 0);
    for (float a : {0.0f, 0.5f, 2.0f}) compare_backends("EluGrad", {g, ym}, alpha(a), "cuda", 1e-7, 1e-6);
    compare_backends("HardSigmoidGrad", {g, x}, {}, "cuda", 0, 0);
    compare_backends("HardSigmoidGrad", {g, x}, hard_sigmoid(-0.7f, 0.2f), "cuda", 0, 0);
    compare_backends("ClipByValueGrad", {g, x}, clip(-1.5f, 2.25f), "cuda", 0, 0);
    compare_backends("ClipByValueGrad", {g, x}, Attrs().set("max", -0.5f), "cuda", 0, 0);
    compare_backends("ClipByValueGrad", {g, x}, clip(3, 1), "cuda", 0, 0);
  }
}

TEST_CASE("cuda activation grad ops: TF conventions at the boundaries") {
  HUB_SKIP_UNLESS_CUDA();
  Tensor g = make({6}, {1, 2, 3, 4, 5, 6});
  Tensor features = make({6}, {-1, 0, 0.5f, 5.9f, 6, 7});
  // ReluGrad: features > 0. Relu6Grad: 0 < features < 6 (open at both ends).
  expect_close(run_op("ReluGrad", {g, features}, {}, "cuda")[0], make({6}, {0, 0, 3, 4, 5, 6}), 0, 0);
  expect_close(run_op("Relu6Grad", {g, features}, {}, "cuda")[0], make({6}, {0, 0, 3, 4, 0, 0}), 0, 0);
  expect_close(run_op("LeakyReluGrad", {g, features}, alpha(0.1f), "cuda")[0], make({6}, {0.1f, 0.2f, 3, 4, 5, 6}));
  // EluGrad(gradients, outputs): outputs > 0 ? g : g * (outputs + alpha).
  Tensor outputs = make({6}, {-0.5f, 0, 0.25f, -0.9f, 2, -1});
  expect_close(run_op("EluGrad", {g, outputs}, {}, "cuda")[0], make({6}, {0.5f, 2, 3, 0.4f, 5, 0}));
  // SigmoidGrad(y, dy) = dy * y * (1 - y); TanhGrad(y, dy) = dy * (1 - y^2).
  Tensor y = make({6}, {0.5f, 0.1f, 0.9f, 0, 1, 0.25f});
  expect_close(run_op("SigmoidGrad", {y, g}, {}, "cuda")[0], make({6}, {0.25f, 0.18f, 0.27f, 0, 0, 1.125f}), 1e-5,
               1e-4);
  expect_close(run_op("TanhGrad", {y, g}, {}, "cuda")[0], make({6}, {0.75f, 1.98f, 0.57f, 4, 0, 5.625f}), 1e-5, 1e-4);
  // HardSwishGrad: 0 for x <= -3, g for x >= 3, else g (2x + 3) / 6.
  expect_close(run_op("HardSwishGrad", {g, make({6}, {-4, -3, -1, 0, 3, 2})}, {}, "cuda")[0],
               make({6}, {0, 0, 0.5f, 2, 5, 7}));
  // ClipByValueGrad passes on the closed interval [min, max].
  expect_close(run_op("ClipByValueGrad", {g, make({6}, {-2, -1, 0, 2, 2.5f, 1})}, clip(-1, 2), "cuda")[0],
               make({6}, {0, 2, 3, 4, 0, 6}), 0, 0);
  // HardSigmoidGrad (alpha 0.5, beta 0.5: kinks at x = -1 and 1): g * alpha on the open interval.
  expect_close(run_op("HardSigmoidGrad", {g, make({6}, {-2, -1, 0, 0.5f, 1, 3})}, hard_sigmoid(0.5f, 0.5f), "cuda")[0],
               make({6}, {0, 0, 1.5f, 2, 0, 0}), 0, 0);
  // The same boundary points against the reference.
  Tensor kinks = make({8}, {-3, 0, 3, 6, -1, 1, 2, -2.5f});
  Tensor gk = random_tensor({8}, 7);
  compare_backends("ReluGrad", {gk, kinks}, {}, "cuda", 0, 0);
  compare_backends("Relu6Grad", {gk, kinks}, {}, "cuda", 0, 0);
  compare_backends("HardSwishGrad", {gk, kinks}, {}, "cuda", 0, 0);
  compare_backends("ClipByValueGrad", {gk, kinks}, clip(-1, 1), "cuda", 0, 0);
  compare_backends("HardSigmoidGrad", {gk, kinks}, hard_sigmoid(0.5f, 0.5f), "cuda", 0, 0);
  compare_backends("HardSigmoidGrad", {gk, kinks}, {}, "cuda", 0, 0);
}

TEST_CASE("cuda PRelu, PReluGrad: every slope pattern, x = 0 takes the slope") {
  HUB_SKIP_UNLESS_CUDA();
  Tensor pg = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor px = make({2, 3}, {-1, 2, 0, 4, -5, 6});
  Tensor slope = make({3}, {0.1f, 0.2f, 0.3f});
  expect_close(run_op("PRelu", {px, slope}, {}, "cuda")[0], make({2, 3}, {-0.1f, 2, 0, 4, -1, 6}));
  auto d = run_op("PReluGrad", {pg, px, slope}, {}, "cuda");
  expect_close(d[0], make({2, 3}, {0.1f, 2, 0.9f, 4, 1, 6}));
  expect_close(d[1], make({3}, {-1, -25, 0}));

  struct Case {
    Shape x, slope;
  };
  // Channel-wise (NHWC), scalar, whole tensor, broadcast along inner,
  // middle or alternating dims, size-1 dims, > 65536 elements with few
  // slopes (long per-block sums) and with many, and empty x.
  const std::vector<Case> cases = {{{2, 5, 5, 7}, {7}},
                                   {{2, 5, 5, 7}, {1, 1, 7}},
                                   {{3, 4, 5}, {4, 1}},
                                   {{3, 4, 5}, {4, 5}},
                                   {{3, 4, 5}, {3, 4, 5}},
                                   {{3, 4, 5}, {}},
                                   {{3, 4, 5}, {1, 1, 1}},
                                   {{1, 9, 1, 3}, {9, 1, 3}},
                                   {{6}, {6}},
                                   {{2, 1, 3, 1}, {1, 3, 1}},
                                   {{2, 3, 4, 5}, {3, 4, 1}},
                                   {{2, 3, 4}, {2, 1, 4}},
                                   {{2, 3, 4, 5, 6}, {3, 1, 5, 1}},
                                   {{64, 33, 35}, {35}},
                                   {{70001}, {}},
                                   {{300, 257}, {300, 1}},
                                   {{300, 257}, {300, 257}},
                                   {{0, 3}, {3}}};
  uint64_t seed = 500;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " slope " << k.slope.to_string());
    Tensor x = random_tensor(k.x, ++seed, -2, 2);
    Tensor s = random_tensor(k.slope, ++seed, -1, 1);
    Tensor g = random_tensor(k.x, ++seed);
    compare_backends("PRelu", {x, s}, {}, "cuda", 0, 0);
    // dslope sums up to 70001 products in another order than the reference.
    compare_backends("PReluGrad", {g, x, s}, {}, "cuda", 1e-4, 1e-4);
  }
}

TEST_CASE("cuda activation gradients match finite differences") {
  HUB_SKIP_UNLESS_CUDA();
  check_activation_gradients("cuda");
}

// CUDA Resize kernels (hub/ops/cuda/resize.cu) against the reference: every
// coordinate convention and nearest rounding, up- and downscaling, explicit
// scales, output sizes of 1, one-pixel inputs, many blocks; hand-computed
// vectors; a session re-planned for a new input shape; finite differences
// through ResizeGrad on the GPU.
#include "hub/ops/resize.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../op_attrs.h"
#include "hub/backend/backend.h"
#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

struct Case {
  Shape x;
  Attrs attrs;
};

std::string describe(const Case& k) {
  const Attrs& a = k.attrs;
  return "x " + k.x.to_string() + " -> " + attr_to_string(a.get_ints("size")) + " " + a.get_string("mode") + " " +
         a.get_string("coordinate_transformation_mode") + " " + a.get_string("nearest_mode") + " scales " +
         attr_to_string(a.get_floats("scales"));
}

}  // namespace

TEST_CASE("cuda Resize, ResizeGrad: every mode matches reference") {
  HUB_SKIP_UNLESS_CUDA();
  std::vector<Case> cases;
  const char* coordinates[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                               "tf_half_pixel_for_nn"};
  const char* roundings[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  for (const char* coordinate : coordinates) {
    cases.push_back({{2, 5, 7, 3}, resize_attrs({11, 4}, "linear", coordinate)});  // up in H, down in W
    cases.push_back({{1, 8, 8, 17}, resize_attrs({3, 5}, "linear", coordinate)});
    cases.push_back({{1, 4, 4, 3}, resize_attrs({1, 6}, "linear", coordinate)});  // an output size of 1
    for (const char* rounding : roundings) {
      cases.push_back({{2, 4, 5, 1}, resize_attrs({9, 2}, "nearest", coordinate, rounding)});
      cases.push_back({{1, 6, 3, 2}, resize_attrs({4, 12}, "nearest", coordinate, rounding)});
    }
  }
  // Explicit scales (the O' of ONNX's formulas differs from the size), a
  // one-pixel input, identity sizes, and an input large enough for many blocks.
  cases.push_back({{1, 4, 3, 2}, resize_attrs({6, 2}, "linear", "asymmetric", "round_prefer_floor", {1.7, 0.8})});
  cases.push_back({{1, 4, 4, 3}, resize_attrs({8, 8}, "linear", "align_corners", "round_prefer_floor", {2.3, 2.0})});
  cases.push_back({{1, 5, 5, 2}, resize_attrs({2, 3}, "nearest", "half_pixel", "round_prefer_ceil", {0.5, 0.7})});
  cases.push_back({{3, 1, 1, 5}, resize_attrs({4, 3}, "linear", "half_pixel")});
  cases.push_back({{3, 1, 1, 5}, resize_attrs({2, 7}, "nearest", "asymmetric")});
  cases.push_back({{2, 6, 7, 3}, resize_attrs({6, 7}, "linear", "half_pixel")});
  cases.push_back({{4, 60, 50, 16}, resize_attrs({97, 31}, "linear", "half_pixel")});
  cases.push_back({{4, 60, 50, 16}, resize_attrs({97, 31}, "nearest", "asymmetric", "floor")});
  uint64_t seed = 40;
  for (const Case& k : cases) {
    INFO(describe(k));
    const Tensor x = random_tensor(k.x, ++seed);
    compare_backends("Resize", {x}, k.attrs, "cuda", 1e-5, 1e-5);
    const Tensor g = random_tensor(run_op("Resize", {x}, k.attrs)[0].shape(), ++seed);
    compare_backends("ResizeGrad", {x, g}, k.attrs, "cuda", 1e-4, 1e-4);
  }
}

TEST_CASE("cuda Resize, ResizeGrad: hand-computed vectors") {
  HUB_SKIP_UNLESS_CUDA();
  // One row 2 -> 4, half_pixel linear: y = [x0, 0.75x0 + 0.25x1, 0.25x0 + 0.75x1, x1].
  const Tensor x = make({1, 1, 2, 1}, {5, 7});
  const Attrs linear = resize_attrs({1, 4}, "linear", "half_pixel");
  expect_close(run_op("Resize", {x}, linear, "cuda")[0], make({1, 1, 4, 1}, {5, 5.5, 6.5, 7}));
  const Tensor g = make({1, 1, 4, 1}, {1, 10, 100, 1000});
  expect_close(run_op("ResizeGrad", {x, g}, linear, "cuda")[0], make({1, 1, 2, 1}, {1 + 7.5f + 25, 2.5f + 75 + 1000}));
  // nearest, asymmetric floor: indices 0, 0, 1, 1.
  const Attrs nearest = resize_attrs({1, 4}, "nearest", "asymmetric", "floor");
  expect_close(run_op("Resize", {x}, nearest, "cuda")[0], make({1, 1, 4, 1}, {5, 5, 7, 7}));
  expect_close(run_op("ResizeGrad", {x, g}, nearest, "cuda")[0], make({1, 1, 2, 1}, {11, 1100}));
}

TEST_CASE("cuda Resize, ResizeGrad: one session, input shapes changing between runs") {
  HUB_SKIP_UNLESS_CUDA();
  // The sampling tables live in the node's kernel state, made for one input
  // shape: each shape must get its own.
  Graph graph;
  Scope s(graph);
  Output x = ops::placeholder(s, DType::kFloat32, Shape{kUnknownDim, kUnknownDim, kUnknownDim, 2}, "x");
  const Attrs a = resize_attrs({5, 6}, "linear", "half_pixel");
  Output y = s.op("Resize", {x}, a, "resize");
  Output dx = s.op("ResizeGrad", {x, y}, a, "resize_grad");
  SessionOptions options;
  options.backend = &find_backend("cuda");
  Session session(graph, nullptr, options);
  uint64_t seed = 400;
  for (const Shape& shape : {Shape{1, 3, 4, 2}, Shape{2, 9, 2, 2}, Shape{1, 3, 4, 2}, Shape{1, 1, 1, 2}}) {
    INFO("shape " << shape.to_string());
    const Tensor xt = random_tensor(shape, ++seed);
    std::vector<Tensor> got = session.run({{x, xt}}, {y, dx});
    CHECK(session.last_kernels().at("resize") == "cuda");
    CHECK(session.last_kernels().at("resize_grad") == "cuda");
    const Tensor want_y = run_op("Resize", {xt}, a)[0];
    expect_close(got[0], want_y);
    expect_close(got[1], run_op("ResizeGrad", {xt, want_y}, a)[0]);
  }
}

TEST_CASE("cuda Resize: gradients match finite differences") {
  HUB_SKIP_UNLESS_CUDA();
  const std::vector<Case> cases{
      {{2, 3, 4, 2}, resize_attrs({5, 7}, "linear", "half_pixel")},
      {{1, 5, 6, 3}, resize_attrs({3, 4}, "linear", "align_corners")},
      {{1, 3, 3, 2}, resize_attrs({7, 5}, "nearest", "half_pixel")},
      {{2, 4, 5, 1}, resize_attrs({2, 8}, "nearest", "tf_half_pixel_for_nn", "ceil")},
  };
  GradCheckOptions o;
  o.backend = "cuda";
  GradCheckOptions og = o;
  og.inputs = {1};
  uint64_t seed = 0;
  for (const Case& k : cases) {
    INFO(describe(k));
    const Tensor x = random_tensor(k.x, ++seed);
    check_gradients("Resize", {x}, k.attrs, o);
    const Tensor gy = random_tensor(run_op("Resize", {x}, k.attrs)[0].shape(), ++seed);
    check_gradients("ResizeGrad", {x, gy}, k.attrs, og);
  }
}

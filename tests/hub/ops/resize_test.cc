#include "hub/ops/resize.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "op_attrs.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

// y[i,j] = x[rows[i], cols[j]] for a one-channel image x: nearest's expected
// output from hand-derived index tables.
Tensor pick(const Tensor& x, const std::vector<int64_t>& rows, const std::vector<int64_t>& cols) {
  const int64_t w = x.dim(2);
  std::vector<float> v;
  for (int64_t r : rows)
    for (int64_t c : cols) v.push_back(x.data<float>()[r * w + c]);
  return make({1, static_cast<int64_t>(rows.size()), static_cast<int64_t>(cols.size()), 1}, v);
}

std::string error_of(const std::vector<Shape>& inputs, const std::string& op, const Attrs& attrs) {
  Graph g;
  Scope s(g);
  std::vector<Output> in;
  for (size_t i = 0; i < inputs.size(); ++i)
    in.push_back(ops::placeholder(s, DType::kFloat32, inputs[i], "in" + std::to_string(i)));
  try {
    s.op(op, in, attrs, "resize");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    return e.what();
  }
  FAIL("expected an error");
  return "";
}

}  // namespace

TEST_CASE("Resize: ONNX's nearest cases, index tables worked out by hand") {
  Tensor x2 = make({1, 2, 2, 1}, {1, 2, 3, 4});
  Tensor x4 = iota({1, 4, 4, 1}, 1);
  // 2x2 -> 4x6, half_pixel, round_prefer_floor: (x + 0.5)/s - 0.5 with s = 2
  // rows: -0.25, 0.25, 0.75, 1.25 -> 0, 0, 1, 1; s = 3 columns: -1/3, 0, 1/3,
  // 2/3, 1, 4/3 -> 0, 0, 0, 1, 1, 1 (ONNX's resize_upsample_scales_nearest).
  expect_close(run_op("Resize", {x2}, resize_attrs({4, 6}, "nearest", "half_pixel"))[0],
               pick(x2, {0, 0, 1, 1}, {0, 0, 0, 1, 1, 1}));
  // 2x2 -> 7x8: rows (x+0.5)/3.5 - 0.5 = -0.36, -0.07, 0.21, 0.5 (a tie: floor),
  // 0.79, 1.07, 1.36 -> 0,0,0,0,1,1,1; columns -0.375 .. 1.375 by 0.25 -> 0 x4, 1 x4.
  expect_close(run_op("Resize", {x2}, resize_attrs({7, 8}, "nearest", "half_pixel"))[0],
               pick(x2, {0, 0, 0, 0, 1, 1, 1}, {0, 0, 0, 0, 1, 1, 1, 1}));
  // 4x4 -> 8x8, half_pixel, ceil: -0.25, 0.25, 0.75, ..., 3.25 -> 0,1,1,2,2,3,3,3 (clamped).
  std::vector<int64_t> ceil_idx{0, 1, 1, 2, 2, 3, 3, 3};
  expect_close(run_op("Resize", {x4}, resize_attrs({8, 8}, "nearest", "half_pixel", "ceil"))[0],
               pick(x4, ceil_idx, ceil_idx));
  // align_corners, floor: x * 3/7 = 0, 0.43, 0.86, 1.29, 1.71, 2.14, 2.57, 3.
  std::vector<int64_t> floor_idx{0, 0, 0, 1, 1, 2, 2, 3};
  expect_close(run_op("Resize", {x4}, resize_attrs({8, 8}, "nearest", "align_corners", "floor"))[0],
               pick(x4, floor_idx, floor_idx));
  // asymmetric: x / 2 = 0, 0.5, 1, ..., 3.5; ties go up with round_prefer_ceil
  // and down with round_prefer_floor.
  std::vector<int64_t> up{0, 1, 1, 2, 2, 3, 3, 3}, down{0, 0, 1, 1, 2, 2, 3, 3};
  expect_close(run_op("Resize", {x4}, resize_attrs({8, 8}, "nearest", "asymmetric", "round_prefer_ceil"))[0],
               pick(x4, up, up));
  expect_close(run_op("Resize", {x4}, resize_attrs({8, 8}, "nearest", "asymmetric", "round_prefer_floor"))[0],
               pick(x4, down, down));
  // tf_half_pixel_for_nn, 4x4 -> 3x2: rows (x+0.5)/0.75 = 0.67, 2, 3.33 -> 1, 2, 3;
  // columns (x+0.5)/0.5 = 1, 3.
  expect_close(run_op("Resize", {x4}, resize_attrs({3, 2}, "nearest", "tf_half_pixel_for_nn"))[0],
               make({1, 3, 2, 1}, {6, 8, 10, 12, 14, 16}));
  // ONNX's scales input, 2x4 * 0.6 -> 1x2: columns x / 0.6 - ... with
  // half_pixel: (0.5)/0.6 - 0.5 = 0.33 -> 0, 1.5/0.6 - 0.5 = 2 -> 2.
  expect_close(run_op("Resize", {make({1, 2, 4, 1}, {1, 2, 3, 4, 5, 6, 7, 8})},
                      resize_attrs({1, 2}, "nearest", "half_pixel", "round_prefer_floor", {0.6f, 0.6f}))[0],
               make({1, 1, 2, 1}, {1, 3}));
}

TEST_CASE("Resize: ONNX's linear cases, worked out by hand") {
  for (const char* b : {"reference", "onednn"}) {
    INFO(b);
    // 2x2 -> 4x4 half_pixel: coordinates -0.25 (clamped to 0), 0.25, 0.75,
    // 1.25 (clamped to 1): weights of x[1] 0, 0.25, 0.75, 1 per axis.
    expect_close(
        run_op("Resize", {make({1, 2, 2, 1}, {1, 2, 3, 4})}, resize_attrs({4, 4}, "linear", "half_pixel"), b)[0],
        make({1, 4, 4, 1}, {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}));
    // pytorch_half_pixel, 4x4 -> 3x1: rows 0.5/0.75 - 0.5 = 1/6, 1.5, 17/6;
    // the single column is at 0: 1 + 4/6, 5 + 2, 9 + 4*5/6.
    expect_close(run_op("Resize", {iota({1, 4, 4, 1}, 1)}, resize_attrs({3, 1}, "linear", "pytorch_half_pixel"), b)[0],
                 make({1, 3, 1, 1}, {1.6666667f, 7, 12.333333f}));
  }
  // align_corners, 2x2 -> 4x4: x * 1/3 -> thirds.
  expect_close(run_op("Resize", {make({1, 2, 2, 1}, {1, 2, 3, 4})}, resize_attrs({4, 4}, "linear", "align_corners"))[0],
               make({1, 4, 4, 1}, {1, 4.f / 3, 5.f / 3, 2, 5.f / 3, 2, 7.f / 3, 8.f / 3, 7.f / 3, 8.f / 3, 3, 10.f / 3,
                                   3, 10.f / 3, 11.f / 3, 4}));
  // ONNX's downsample cases with scales 0.6 (float32 0.6, as ONNX stores it)
  // on [[1,2,3,4],[5,6,7,8]] -> 1x2.
  Tensor x = make({1, 2, 4, 1}, {1, 2, 3, 4, 5, 6, 7, 8});
  const std::vector<double> s{0.6f, 0.6f};
  // half_pixel: row 0.5/0.6 - 0.5 = 1/3, columns 1/3 and 2: 1 + 1/3 + 4/3, 3 + 4/3.
  expect_close(run_op("Resize", {x}, resize_attrs({1, 2}, "linear", "half_pixel", "round_prefer_floor", s))[0],
               make({1, 1, 2, 1}, {2.6666667f, 4.3333333f}), 1e-5, 1e-6);
  // align_corners divides by O' - 1 = 0.6*4 - 1 = 1.4 (ONNX's reference):
  // row O' = 1.2, column 1 at 3/1.4 = 2.142857.
  expect_close(run_op("Resize", {x}, resize_attrs({1, 2}, "linear", "align_corners", "round_prefer_floor", s))[0],
               make({1, 1, 2, 1}, {1, 3.142857f}), 1e-5, 1e-6);
}

TEST_CASE("Resize: TensorFlow's ResizeBilinear and ResizeNearestNeighbor map onto its modes") {
  // ResizeBilinear(align_corners=false, half_pixel_centers=false), TF's
  // scale in/out = 2/3: x = 0, 2/3, 4/3 (clamped to 1 for the right neighbour).
  expect_close(run_op("Resize", {make({1, 2, 2, 1}, {0, 3, 6, 9})}, resize_attrs({3, 3}, "linear", "asymmetric"))[0],
               make({1, 3, 3, 1}, {0, 2, 3, 4, 6, 7, 6, 8, 9}));
  // ResizeNearestNeighbor on 3 -> 5 columns, TF's formulas (scale 3/5):
  Tensor x = make({1, 1, 3, 1}, {10, 20, 30});
  // default: floor(x * 0.6) = 0, 0, 1, 1, 2
  expect_close(run_op("Resize", {x}, resize_attrs({1, 5}, "nearest", "asymmetric", "floor"))[0],
               make({1, 1, 5, 1}, {10, 10, 20, 20, 30}));
  // align_corners: roundf(x * 2/4) = 0, 1 (0.5 rounds up), 1, 2, 2
  expect_close(run_op("Resize", {x}, resize_attrs({1, 5}, "nearest", "align_corners", "round_prefer_ceil"))[0],
               make({1, 1, 5, 1}, {10, 20, 20, 30, 30}));
  // half_pixel_centers: floor((x + 0.5) * 0.6) = 0, 0, 1, 2, 2
  expect_close(run_op("Resize", {x}, resize_attrs({1, 5}, "nearest", "tf_half_pixel_for_nn", "floor"))[0],
               make({1, 1, 5, 1}, {10, 10, 20, 30, 30}));
}

TEST_CASE("Resize: cubic, Keys' weights worked out by hand and ONNX's reference numbers; gradients") {
  // One row 4 -> 8, half_pixel, A = -0.75. Output 0 reads src -0.25: taps -2, -1, 0, 1 (the first
  // three the edge pixel) with k(1.75) = -0.03515625, k(0.75) = 0.26171875, k(0.25) = 0.87890625,
  // k(1.25) = -0.10546875: 1.10546875 * 1 - 0.10546875 * 2. Output 3 reads 1.25: taps 0..3 with
  // k(1.25), k(0.25), k(0.75), k(1.75). With exclude_outside, output 0 keeps taps 0 and 1 only:
  // (0.87890625 - 0.2109375) / 0.7734375 = 19/22. The other entries are ONNX's reference
  // implementation's (onnx.backend.test.case.node.resize.interpolate_nd).
  const Tensor row = make({1, 1, 4, 1}, {1, 2, 4, 8});
  expect_close(run_op("Resize", {row}, resize_attrs({1, 8}, "cubic", "half_pixel"))[0],
               make({1, 1, 8, 1},
                    {0.89453125f, 1.15625f, 1.5625f, 2.41796875f, 3.16015625f, 5.1171875f, 7.1640625f, 8.421875f}));
  expect_close(
      run_op("Resize", {row}, resize_attrs({1, 8}, "cubic", "half_pixel", "round_prefer_floor", {}, -0.75, true))[0],
      make({1, 1, 8, 1}, {19.0f / 22, 1.1413427561837455f, 1.5433962264150942f, 2.41796875f, 3.16015625f,
                          5.215094339622642f, 7.243816254416961f, 8.545454545454547f}));
  // 4x4 -> 3x5 with A = -0.5 (TensorFlow's and PyTorch's), x = (i + 1)^1.5.
  Tensor image(DType::kFloat32, Shape{1, 4, 4, 1});
  for (int i = 0; i < 16; ++i) image.data<float>()[i] = std::pow(static_cast<float>(i + 1), 1.5f);
  expect_close(
      run_op("Resize", {image}, resize_attrs({3, 5}, "cubic", "align_corners", "round_prefer_floor", {}, -0.5))[0],
      make({1, 3, 5, 1}, {1.0f, 2.2905471194535494f, 3.9513261169195175f, 5.932164879515767f, 8.0f, 18.48443078994751f,
                          21.459371020435356f, 24.762136687524617f, 28.231375873438083f, 31.61060893535614f,
                          46.87216567993164f, 50.86217921972275f, 55.21433711051941f, 59.69584667682648f, 64.0f}),
      1e-4, 1e-5);
  expect_close(
      run_op("Resize", {image}, resize_attrs({3, 5}, "cubic", "half_pixel", "round_prefer_floor", {}, -0.5, true))[0],
      make({1, 3, 5, 1},
           {1.8983914946976936f, 3.250321297051172f, 5.196398366169273f, 7.5209628205454475f, 9.584421510498556f,
            18.306175325280773f, 21.135825011223716f, 24.762136687524617f, 28.594258710944242f, 31.81081695195574f,
            44.549473156703904f, 48.28351216958702f, 52.994108484271344f, 57.867259477553745f, 61.90688951973404f}),
      1e-4, 1e-5);
  // oneDNN has no cubic resampling: the reference kernel runs there too.
  expect_close(run_op("Resize", {row}, resize_attrs({1, 8}, "cubic", "half_pixel"), "onednn")[0],
               run_op("Resize", {row}, resize_attrs({1, 8}, "cubic", "half_pixel"))[0]);
  int seed = 40;
  for (const Attrs& attrs :
       {resize_attrs({5, 7}, "cubic", "half_pixel"),
        resize_attrs({3, 2}, "cubic", "align_corners", "round_prefer_floor", {}, -0.5),
        resize_attrs({6, 4}, "cubic", "asymmetric", "round_prefer_floor", {1.7, 0.8}, -0.5, true)}) {
    INFO(attrs.get_string("coordinate_transformation_mode"));
    const Tensor x = random_tensor({2, 4, 3, 2}, ++seed);
    check_gradients("Resize", {x}, attrs);
    GradCheckOptions o;
    o.inputs = {1};
    check_gradients("ResizeGrad", {x, random_tensor(run_op("Resize", {x}, attrs)[0].shape(), ++seed)}, attrs, o);
  }
}

TEST_CASE("ResizeGrad: hand-computed vectors, and gradients match finite differences") {
  // One row 2 -> 4, half_pixel linear: y = [x0, 0.75x0 + 0.25x1, 0.25x0 + 0.75x1, x1].
  Tensor x = make({1, 1, 2, 1}, {5, 7});
  Tensor g = make({1, 1, 4, 1}, {1, 10, 100, 1000});
  expect_close(run_op("ResizeGrad", {x, g}, resize_attrs({1, 4}, "linear", "half_pixel"))[0],
               make({1, 1, 2, 1}, {1 + 7.5f + 25, 2.5f + 75 + 1000}));
  // nearest, asymmetric floor: indices 0, 0, 1, 1.
  expect_close(run_op("ResizeGrad", {x, g}, resize_attrs({1, 4}, "nearest", "asymmetric", "floor"))[0],
               make({1, 1, 2, 1}, {11, 1100}));

  struct Case {
    Shape x;
    Attrs attrs;
  };
  std::vector<Case> cases{
      {{2, 3, 4, 2}, resize_attrs({5, 7}, "linear", "half_pixel")},
      {{1, 5, 6, 3}, resize_attrs({3, 4}, "linear", "align_corners")},
      {{1, 4, 3, 2}, resize_attrs({6, 2}, "linear", "asymmetric", "round_prefer_floor", {1.7, 0.8})},
      {{1, 3, 3, 2}, resize_attrs({7, 5}, "nearest", "half_pixel")},
      {{2, 4, 5, 1}, resize_attrs({2, 8}, "nearest", "tf_half_pixel_for_nn", "ceil")},
  };
  int seed = 0;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " " << k.attrs.get_string("mode") << " "
              << k.attrs.get_string("coordinate_transformation_mode"));
    Tensor xt = random_tensor(k.x, ++seed);
    check_gradients("Resize", {xt}, k.attrs);
    Tensor gy = random_tensor(run_op("Resize", {xt}, k.attrs)[0].shape(), ++seed);
    GradCheckOptions o;
    o.inputs = {1};
    check_gradients("ResizeGrad", {xt, gy}, k.attrs, o);
  }
}

TEST_CASE("Resize: oneDNN runs linear half_pixel and matches reference") {
  struct Case {
    Shape x;
    Attrs attrs;
    bool onednn;
  };
  std::vector<Case> cases{
      {{2, 5, 7, 3}, resize_attrs({11, 4}, "linear", "half_pixel"), true},
      {{1, 8, 8, 17}, resize_attrs({3, 5}, "linear", "half_pixel"), true},
      {{3, 1, 6, 2}, resize_attrs({4, 13}, "linear", "pytorch_half_pixel"), true},
      {{1, 4, 4, 8}, resize_attrs({9, 9}, "linear", "half_pixel"), true},
      {{1, 4, 4, 3}, resize_attrs({1, 6}, "linear", "pytorch_half_pixel"), false},  // O = 1
      {{1, 4, 4, 3}, resize_attrs({7, 6}, "linear", "align_corners"), false},
      {{1, 4, 4, 3}, resize_attrs({8, 8}, "linear", "half_pixel", "round_prefer_floor", {2.0, 2.0}), false},
      {{1, 4, 4, 3}, resize_attrs({8, 6}, "nearest", "half_pixel"), false},
  };
  int seed = 30;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " " << k.attrs.get_string("coordinate_transformation_mode"));
    Tensor x = random_tensor(k.x, ++seed);
    Tensor g = random_tensor(run_op("Resize", {x}, k.attrs)[0].shape(), ++seed);
    if (k.onednn) {
      compare_backends("Resize", {x}, k.attrs, "onednn", 1e-5, 1e-5);
      compare_backends("ResizeGrad", {x, g}, k.attrs, "onednn", 1e-4, 1e-4);
    } else {
      CHECK(backend_used("Resize", {x}, k.attrs) == "reference");
      CHECK(backend_used("ResizeGrad", {x, g}, k.attrs) == "reference");
    }
  }
}

TEST_CASE("Resize: shape inference and errors name the node, attribute and value") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 5, kUnknownDim, 3}, "x");
  CHECK(g.spec(ops::resize(s, x, {{7, 2}, "linear", "half_pixel"})).shape == Shape{kUnknownDim, 7, 2, 3});

  std::string m = error_of({{1, 4, 4, 1}}, "Resize", resize_attrs({-1, 4}, "linear", "half_pixel"));
  CHECK(contains(m, "'resize'"));
  CHECK(contains(m, "size must be [OH, OW]"));
  CHECK(contains(m, "[-1,4]"));
  m = error_of({{1, 4, 4, 1}}, "Resize", resize_attrs({2, 2}, "lanczos", "half_pixel"));
  CHECK(contains(m, "mode must be one of \"nearest\", \"linear\", \"cubic\", got \"lanczos\""));
  m = error_of({{1, 4, 4, 1}}, "Resize",
               resize_attrs({2, 2}, "cubic", "half_pixel", "round_prefer_floor", {}, std::nan("")));
  CHECK(contains(m, "cubic_coeff_a must be finite"));
  m = error_of({{1, 4, 4, 1}}, "Resize", resize_attrs({2, 2}, "linear", "tf_crop_and_resize"));
  CHECK(contains(m, "coordinate_transformation_mode"));
  CHECK(contains(m, "\"tf_crop_and_resize\""));
  m = error_of({{1, 4, 4, 1}}, "Resize", resize_attrs({2, 2}, "nearest", "half_pixel", "round"));
  CHECK(contains(m, "nearest_mode"));
  m = error_of({{1, 4, 4, 1}}, "Resize", resize_attrs({2, 2}, "linear", "half_pixel", "floor", {0.5, -1}));
  CHECK(contains(m, "scales must be empty or [sh, sw]"));
  m = error_of({{4, 4, 1}}, "Resize", resize_attrs({2, 2}, "linear", "half_pixel"));
  CHECK(contains(m, "rank"));
  m = error_of({{1, 0, 4, 1}}, "Resize", resize_attrs({2, 2}, "linear", "half_pixel"));
  CHECK(contains(m, "empty image"));
  m = error_of({{1, 4, 4, 1}, {1, 3, 2, 1}}, "ResizeGrad", resize_attrs({2, 2}, "linear", "half_pixel"));
  CHECK(contains(m, "does not match the resized shape [1,2,2,1]"));
}

TEST_CASE("GridSample: hand-computed taps for each mode, padding and alignment; gradients") {
  // x: one 2x3 channel, [[0, 1, 2], [3, 4, 5]] (NHWC [1, 2, 3, 1]).
  const Tensor x = make({1, 2, 3, 1}, {0, 1, 2, 3, 4, 5});
  auto sample = [&](const std::vector<float>& xy, const std::string& mode, const std::string& padding, bool align) {
    const Tensor grid = make({1, 1, static_cast<int64_t>(xy.size() / 2), 2}, xy);
    return run_op("GridSample", {x, grid},
                  Attrs().set("mode", mode).set("padding_mode", padding).set("align_corners", align))[0]
        .to_vector<float>();
  };
  auto near = [](const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
  };
  // align_corners: -1 and 1 are the corner pixels' centres, so (0, 0) is the
  // centre of the image, (column 1, row 0.5): (1 + 4) / 2 = 2.5; (1, 1) is 5.
  near(sample({0, 0, 1, 1, -1, -1}, "bilinear", "zeros", true), {2.5f, 5, 0});
  // Without it, -1 and 1 are the outer edges: x = -1 is column -0.5, half
  // outside: with zeros padding half of column 0's value.
  near(sample({-1, -1, 0, 0}, "bilinear", "zeros", false), {0.25f * 0, 2.5f});
  near(sample({-1, 1}, "bilinear", "zeros", false), {0.25f * 3});
  // Border clamps the coordinate to column 0, row 1: 3.
  near(sample({-1, 1}, "bilinear", "border", false), {3});
  // Reflection (edges without align_corners): x = -1.4 is column -0.5 - 0.6 =
  // -1.1, mirrored at -0.5 to 0.1, and y = 0.8 is row 1.3, inside the mirror
  // (-0.5 to 1.5) and clipped to 1: 3 + 0.1 * (4 - 3) = 3.1.
  near(sample({-1.4f, 0.8f}, "bilinear", "reflection", false), {3.1f});
  // Nearest rounds halves to even: column 0.5 -> 0, row 0.5 -> 0 (align_corners x = -0.5, y = 0).
  near(sample({-0.5f, 0, 0, 0}, "nearest", "zeros", true), {0, 1});
  // Bicubic at a pixel centre is that pixel; halfway between two in a row
  // weights -0.09375, 0.59375, 0.59375, -0.09375 (A = -0.75), here with border
  // taps: columns -1, 0, 1, 2 -> 0, 0, 1, 2 of row 0: 0.59375 * 1 - 0.09375 * 2.
  near(sample({0, -1}, "bicubic", "border", true), {1});
  near(sample({-0.5f, -1}, "bicubic", "border", true), {0.40625f});
  // Gradients by finite differences, away from integer coordinates and borders.
  const Tensor img = random_tensor({2, 4, 5, 3}, 61);
  const Tensor grid =
      make({2, 2, 3, 2}, {-0.81f, -0.62f, -0.33f, 0.11f, 0.07f, 0.58f, 0.41f,  -0.27f, 0.66f, 0.73f, -0.55f, 0.37f,
                          0.23f,  -0.71f, -0.44f, 0.19f, 0.52f, 0.88f, -0.12f, -0.36f, 0.91f, 0.04f, -0.68f, -0.87f});
  GradCheckOptions o;
  o.step = 1e-3;
  for (const char* padding : {"zeros", "border", "reflection"})
    for (bool align : {false, true}) {
      CAPTURE(padding);
      CAPTURE(align);
      const Attrs a = Attrs().set("mode", "bilinear").set("padding_mode", padding).set("align_corners", align);
      check_gradients("GridSample", {img, grid}, a, o);
    }
  GradCheckOptions x_only = o;
  x_only.inputs = {0};
  check_gradients("GridSample", {img, grid}, Attrs().set("mode", "nearest"), x_only);
  // Bad input: the grid's last dim, the mode.
  Graph graph;
  Scope s(graph);
  Output xi = ops::placeholder(s, DType::kFloat32, {1, 4, 4, 3}, "x");
  CHECK_THROWS_WITH_AS(s.op("GridSample", {xi, ops::placeholder(s, DType::kFloat32, {1, 2, 2, 3}, "g3")}),
                       doctest::Contains("must end in 2 (x, y)"), Error);
  CHECK_THROWS_WITH_AS(
      s.op("GridSample", {xi, ops::placeholder(s, DType::kFloat32, {1, 2, 2, 2}, "g")}, Attrs().set("mode", "area")),
      doctest::Contains("attribute mode 'area' is not one of bilinear, nearest, bicubic"), Error);
}

TEST_CASE("Resize: a size known at run time, from scales or from a reference tensor's dims; gradients") {
  const Tensor x = random_tensor({1, 3, 4, 2}, 90);
  // size 0 with scales: floor(3 * 2) x floor(4 * 1.5), as the fixed size with the same scales.
  const Attrs scaled = resize_attrs({0, 0}, "linear", "asymmetric", "round_prefer_floor", {2, 1.5});
  const Tensor want =
      run_op("Resize", {x}, resize_attrs({6, 6}, "linear", "asymmetric", "round_prefer_floor", {2, 1.5}))[0];
  expect_close(run_op("Resize", {x}, scaled)[0], want, 0, 0);
  Graph g;
  Scope s(g);
  Output p = ops::placeholder(s, DType::kFloat32, {1, kUnknownDim, kUnknownDim, 2}, "p");
  CHECK(g.spec(s.op("Resize", {p}, scaled, "r")).shape == Shape{1, kUnknownDim, kUnknownDim, 2});
  // OH from dim 2 of a reference (read for its shape only), OW fixed at 5.
  const Tensor ref = random_tensor({2, 9, 7}, 91);
  Attrs like = resize_attrs({0, 5}, "linear", "half_pixel");
  like.set("from", std::vector<int64_t>{0, 1, 2});
  expect_close(run_op("Resize", {x, ref}, like)[0],
               run_op("Resize", {x}, resize_attrs({7, 5}, "linear", "half_pixel"))[0], 0, 0);
  GradCheckOptions x_only;
  x_only.inputs = {0};
  check_gradients("Resize", {x, ref}, like, x_only);
  check_gradients("Resize", {x}, scaled);
  // ResizeGrad of a run-time size takes it from grad; its own gradient resizes to grad's size.
  GradCheckOptions grad_only;
  grad_only.inputs = {1};
  check_gradients("ResizeGrad", {x, random_tensor(want.shape(), 92)}, scaled, grad_only);
  check_gradients("ResizeGrad", {x, random_tensor({1, 7, 5, 2}, 93)}, like, grad_only);
  CHECK(error_of({{1, 3, 4, 2}}, "Resize", resize_attrs({0, 4}, "linear", "half_pixel"))
            .find("size entry 0 is 0 without scales or a reference") != std::string::npos);
  Attrs both = resize_attrs({3, 4}, "linear", "half_pixel");
  both.set("from", std::vector<int64_t>{0, 1, 1});
  CHECK(error_of({{1, 3, 4, 2}, {1, 5, 5, 1}}, "Resize", both).find("both fixed and read from a reference") !=
        std::string::npos);
}

TEST_CASE("RoiAlign: bin centres worked out by hand, both pixel conventions, max of weighted taps, bad indices") {
  // x[y][x] = 4y + x on a 4 x 4 image; the region (0, 0, 4, 4) in 2 x 2 bins, one sample per bin.
  const Tensor x = iota({1, 4, 4, 1});
  const Tensor roi = make({1, 4}, {0, 0, 4, 4});
  const Tensor batch = Tensor::from_vector<int64_t>({1}, {0});
  auto attrs = [](bool half_pixel, const char* mode) {
    return Attrs()
        .set("mode", mode)
        .set("output_height", int64_t{2})
        .set("output_width", int64_t{2})
        .set("sampling_ratio", int64_t{1})
        .set("spatial_scale", 1.0)
        .set("half_pixel", half_pixel);
  };
  // No offset: centres at pixels (1, 1), (1, 3), (3, 1), (3, 3).
  expect_close(run_op("RoiAlign", {x, roi, batch}, attrs(false, "avg"))[0], make({1, 2, 2, 1}, {5, 7, 13, 15}));
  // Half-pixel: centres at (0.5, 0.5) ...: the mean of four pixels each.
  expect_close(run_op("RoiAlign", {x, roi, batch}, attrs(true, "avg"))[0],
               make({1, 2, 2, 1}, {2.5f, 4.5f, 10.5f, 12.5f}));
  // max: the largest tap times its weight (0.25 each): the bottom-right pixel's quarter.
  expect_close(run_op("RoiAlign", {x, roi, batch}, attrs(true, "max"))[0],
               make({1, 2, 2, 1}, {1.25f, 1.75f, 3.25f, 3.75f}));
  CHECK_THROWS_WITH_AS(run_op("RoiAlign", {x, roi, Tensor::from_vector<int64_t>({1}, {1})}, attrs(true, "avg")),
                       doctest::Contains("batch index 1 of region 0 is outside [0, 1)"), Error);
}

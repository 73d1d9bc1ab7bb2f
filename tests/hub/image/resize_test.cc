// resize_bilinear against values computed by hand from TF's formula
// (align_corners=false, half_pixel_centers=false), plus crops.
#include "hub/image/resize.h"

#include <doctest/doctest.h>

#include <cmath>

#include "testutil.h"

using namespace hub;
using namespace hub::image;
using hub::testing::expect_close;
using hub::testing::make;

TEST_CASE("resize 2x2 -> 3x3 upscale") {
  // scale = 2/3: src = 0, 2/3, 4/3 -> (0, 0), (0, 2/3), (1, 1/3 -> clamped hi = 1)
  // I = [[0, 3], [6, 9]]:
  //   row 0: 0, 2, 3; row 1 (y=2/3): 4, 6, 7; row 2 (y=4/3: y0=1,y1=1): 6, 8, 9
  Tensor in = make({2, 2, 1}, {0, 3, 6, 9});
  expect_close(resize_bilinear(in, 3, 3), make({3, 3, 1}, {0, 2, 3, 4, 6, 7, 6, 8, 9}));
}

TEST_CASE("resize 4x4 -> 3x3 downscale") {
  // I[y][x] = 4y + x. scale = 4/3: src = 0, 4/3, 8/3. The image is linear, so
  // out = 4*src_y + src_x exactly (no clamping needed: 8/3 < 3).
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
  Tensor in = make({4, 4, 1}, v);
  std::vector<float> want;
  for (float sy : {0.f, 4.f / 3, 8.f / 3})
    for (float sx : {0.f, 4.f / 3, 8.f / 3}) want.push_back(4 * sy + sx);
  expect_close(resize_bilinear(in, 3, 3), make({3, 3, 1}, want));
}

TEST_CASE("resize 1xN and channels") {
  // 1x3 -> 1x5, two channels: scale 3/5, src x = 0, .6, 1.2, 1.8, 2.4 (hi clamps to 2).
  Tensor in = make({1, 3, 2}, {0, 10, 5, 20, 1, 40});
  // channel 0 values 0,5,1: x=.6 -> 3; 1.2 -> 5 - 4*.2 = 4.2; 1.8 -> 5 - 4*.8 = 1.8; 2.4 -> 1
  // channel 1 values 10,20,40: 10; 16; 24; 36; 40
  expect_close(resize_bilinear(in, 1, 5), make({1, 5, 2}, {0, 10, 3, 16, 4.2f, 24, 1.8f, 36, 1, 40}), 1e-5);
  // Nx1 -> 2x1 keeps the column.
  expect_close(resize_bilinear(make({2, 1, 1}, {1, 3}), 4, 1), make({4, 1, 1}, {1, 2, 3, 3}));
}

TEST_CASE("batched resize equals per-image resize; uint8 input") {
  Tensor batch = hub::testing::random_tensor({3, 7, 5, 3}, 42, 0.0f, 1.0f);
  Tensor out = resize_bilinear(batch, 4, 9);
  REQUIRE(out.shape() == Shape{3, 4, 9, 3});
  for (int b = 0; b < 3; ++b) {
    Tensor img(DType::kFloat32, {7, 5, 3});
    std::copy_n(batch.data<float>() + b * 105, 105, img.data<float>());
    Tensor want = resize_bilinear(img, 4, 9);
    Tensor got(DType::kFloat32, {4, 9, 3});
    std::copy_n(out.data<float>() + b * 108, 108, got.data<float>());
    expect_close(got, want, 0, 0);
  }
  Tensor u(DType::kUInt8, {2, 2, 1});
  uint8_t vals[] = {0, 30, 60, 90};
  std::copy_n(vals, 4, u.data<uint8_t>());
  expect_close(resize_bilinear(u, 3, 3), make({3, 3, 1}, {0, 20, 30, 40, 60, 70, 60, 80, 90}));
  // Identity size is a copy.
  expect_close(resize_bilinear(batch, 7, 5), batch, 0, 0);
}

TEST_CASE("resize rejects bad shapes") {
  CHECK_THROWS_AS(resize_bilinear(make({4}, {1, 2, 3, 4}), 2, 2), Error);
  CHECK_THROWS_AS(resize_bilinear(make({2, 2, 1}, {1, 2, 3, 4}), 0, 2), Error);
}

TEST_CASE("central_crop and crop") {
  std::vector<float> v(5 * 4);
  for (int i = 0; i < 20; ++i) v[i] = static_cast<float>(i);
  Tensor in = make({5, 4, 1}, v);
  // fraction .5: top = int((5 - 2.5)/2) = 1 -> height 3; left = int((4-2)/2) = 1 -> width 2
  expect_close(central_crop(in, 0.5), make({3, 2, 1}, {5, 6, 9, 10, 13, 14}));
  CHECK(identical(central_crop(in, 1.0), in));
  expect_close(crop(in, 3, 2, 2, 2), make({2, 2, 1}, {14, 15, 18, 19}));
  CHECK_THROWS_AS(crop(in, 4, 0, 2, 1), Error);
  CHECK_THROWS_AS(central_crop(in, 0.0), Error);
  expect_close(flip_left_right(make({1, 3, 2}, {1, 2, 3, 4, 5, 6})), make({1, 3, 2}, {5, 6, 3, 4, 1, 2}));
}

// Convolution cases shared by the backend comparisons of the Conv2D family
// (oneDNN in conv2d_test.cc, CUDA in cuda/conv2d_test.cc): attribute
// helpers and the awkward shapes every fast kernel must match the reference
// on.
#pragma once

#include <string>
#include <vector>

#include "hub/ops/conv2d.h"

namespace hub::testing {

inline Attrs conv_attrs(const std::string& padding, std::vector<int64_t> strides = {1, 1},
                        std::vector<int64_t> dilations = {1, 1}) {
  return ops::ConvOptions{strides, padding, dilations}.to_attrs();
}

// padding "EXPLICIT" with pads [top, bottom, left, right].
inline Attrs explicit_attrs(std::vector<int64_t> pads, std::vector<int64_t> strides = {1, 1},
                            std::vector<int64_t> dilations = {1, 1}) {
  return ops::ConvOptions{strides, "EXPLICIT", dilations, pads}.to_attrs();
}

struct ConvCase {
  bool depthwise;
  Shape x, w;
  Attrs attrs;
};

// Batch 1 and 2, strides above and below the window, asymmetric SAME
// padding, dilation, one input channel, 1x1 windows, EXPLICIT pads larger
// than the window, grouped convolutions (G = 2, G = C/2 odd, G = C) and
// depthwise multipliers 1 and 2.
inline std::vector<ConvCase> awkward_conv_cases() {
  return {
      {false, {1, 7, 7, 3}, {3, 3, 3, 5}, conv_attrs("SAME", {2, 2})},            // batch 1, stride 2, odd input
      {false, {2, 9, 8, 5}, {5, 5, 5, 4}, conv_attrs("SAME")},                    // 5x5, odd channels
      {false, {3, 6, 6, 7}, {1, 1, 7, 3}, conv_attrs("SAME")},                    // 1x1
      {false, {2, 7, 5, 3}, {1, 1, 3, 6}, conv_attrs("VALID", {2, 2})},           // 1x1 stride 2, odd input
      {false, {1, 10, 9, 3}, {3, 3, 3, 4}, conv_attrs("VALID", {1, 1}, {2, 2})},  // dilation
      {false, {2, 11, 11, 1}, {5, 5, 1, 32}, conv_attrs("SAME", {2, 2})},         // one input channel
      {false, {1, 5, 6, 2}, {2, 4, 2, 3}, conv_attrs("SAME", {3, 2}, {2, 1})},    // stride > kernel, asym.
      // >= 8 input channels: oneDNN's backward-data path (fewer go to reference)
      {false, {1, 7, 7, 9}, {3, 3, 9, 5}, conv_attrs("SAME", {2, 2})},
      {false, {2, 5, 6, 16}, {1, 1, 16, 3}, conv_attrs("SAME")},
      {false, {1, 9, 8, 8}, {3, 2, 8, 4}, conv_attrs("VALID", {2, 1}, {2, 2})},
      {false, {1, 5, 5, 8}, {5, 5, 8, 2}, conv_attrs("SAME", {3, 3})},
      {true, {1, 7, 7, 3}, {3, 3, 3, 2}, conv_attrs("SAME", {2, 2})},  // multiplier 2
      {true, {2, 8, 9, 5}, {3, 3, 5, 1}, conv_attrs("SAME")},
      {true, {1, 9, 9, 4}, {5, 5, 4, 1}, conv_attrs("VALID", {2, 2})},
      {true, {2, 6, 7, 3}, {3, 3, 3, 2}, conv_attrs("SAME", {1, 1}, {2, 2})},
      {true, {1, 4, 4, 3}, {1, 1, 3, 3}, conv_attrs("SAME")},
      // EXPLICIT: asymmetric, larger than the window, with strides and dilation
      {false, {1, 7, 6, 3}, {3, 3, 3, 4}, explicit_attrs({2, 0, 1, 3}, {2, 1})},
      {false, {2, 5, 5, 8}, {2, 2, 8, 3}, explicit_attrs({3, 1, 0, 4}, {1, 2})},
      {false, {1, 9, 8, 9}, {3, 2, 9, 2}, explicit_attrs({1, 2, 2, 1}, {2, 2}, {2, 2})},
      {true, {1, 6, 7, 3}, {3, 3, 3, 2}, explicit_attrs({0, 2, 1, 1}, {2, 2})},
      // grouped: G = 2, G = C/2 (odd), G = C, and 8 channels per group (oneDNN backward data)
      {false, {2, 6, 5, 4}, {3, 3, 2, 6}, conv_attrs("SAME", {2, 1})},
      {false, {1, 7, 7, 6}, {3, 2, 2, 9}, explicit_attrs({1, 1, 0, 2})},
      {false, {1, 5, 6, 5}, {3, 3, 1, 10}, conv_attrs("VALID", {1, 1}, {1, 2})},
      {false, {1, 6, 6, 16}, {3, 3, 8, 6}, conv_attrs("SAME", {2, 2})},
      {false, {2, 5, 4, 24}, {1, 1, 8, 9}, conv_attrs("SAME")},
  };
}

}  // namespace hub::testing

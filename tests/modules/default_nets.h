// The built-in nets the nets suite runs by default, one per builder, with the
// small image each takes there (its own default size where that is already
// small). The variants that repeat a builder's layers at other depths, sizes
// or unit counts (the MobileNet multipliers and sizes, ResNet-101/152/200, the
// ImageNet NASNets and PNASNets, whose cells nasnet_cifar has) and the nets
// with over 40 M parameters (AlexNet, the VGGs, OverFeat, Inception v4,
// Inception-ResNet v2) run when HUB_TEST_LARGE_NETS=1 is set.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

namespace hub::testing {

inline const std::map<std::string, int64_t>& default_test_nets() {
  static const std::map<std::string, int64_t> nets = {{"lenet", 28},
                                                      {"cifarnet", 32},
                                                      {"mnist", 28},
                                                      {"cifar10", 24},
                                                      {"inception_v1", 224},
                                                      {"inception_v2", 64},
                                                      {"inception_v3", 75},
                                                      {"resnet_v1_50", 64},
                                                      {"resnet_v2_50", 64},
                                                      {"mobilenet_v1_025", 64},
                                                      {"mobilenet_v2_035", 64},
                                                      {"nasnet_cifar", 32}};
  return nets;
}

// Whether HUB_TEST_LARGE_NETS=1 asks for every net.
inline bool test_all_nets() { return std::getenv("HUB_TEST_LARGE_NETS") != nullptr; }

}  // namespace hub::testing

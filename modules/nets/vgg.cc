// slim's VGG (vgg.py): vgg_a (1,1,2,2,2 convs per block), vgg_16 (2,2,3,3,3),
// vgg_19 (2,2,4,4,4); 3x3 SAME convs of 64/128/256/512/512, 2x2/2 max pools,
// fc6 7x7 VALID 4096 (as conv), dropout, fc7 1x1 4096, dropout, fc8 1x1.
// Weight decay 0.0005; biases zero. 224x224x3.
#include "modules/nets/net_util.h"

namespace hub::nets {

Net vgg(const Scope& root, Output images, const NetOptions& o, const NetInfo& info) {
  std::vector<int> repeats = info.name == "vgg_a"    ? std::vector<int>{1, 1, 2, 2, 2}
                             : info.name == "vgg_16" ? std::vector<int>{2, 2, 3, 3, 3}
                                                     : std::vector<int>{2, 2, 4, 4, 4};
  const int64_t depths[] = {64, 128, 256, 512, 512};
  Scope s = root.sub(info.name);
  slim::LayerOptions lo = base_options(o, 0.0005);
  Net net;
  Output x = images;
  for (int b = 0; b < 5; ++b) {
    std::string block = "conv" + std::to_string(b + 1);
    Scope bs = s.sub(block);
    for (int r = 0; r < repeats[b]; ++r)
      x = slim::conv2d(bs, x, depths[b], {3, 3}, block + "_" + std::to_string(r + 1), lo);
    net.end_points[block] = x;
    x = slim::max_pool2d(s, x, {2, 2}, {2, 2}, "VALID", "pool" + std::to_string(b + 1));
  }
  conv_fc_head(net, s, x, o, lo, 7, 4096, keep_prob_or(o, 0.5));
  return net;
}

}  // namespace hub::nets

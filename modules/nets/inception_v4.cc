// slim's Inception v4 (inception_v4.py) and Inception-ResNet v2
// (inception_resnet_v2.py), Szegedy et al. 2016; 299x299x3.
// Inception v4's arg scope is inception_utils' (batch norm decay 0.9997,
// epsilon 0.001, no scale; weight decay 4e-5; variance-scaling init).
// inception_utils' initializer covers slim.conv2d only, so the fully
// connected layers keep slim's default Xavier init. Inception-ResNet v2's arg
// scope is its own: the same batch norm, weight decay 4e-5 on weights and
// biases, Xavier init everywhere. Both end in a fully connected "Logits"
// layer and have an auxiliary head (create_aux_logits).
#include <functional>

#include "hub/ops/activation.h"
#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "modules/nets/net_util.h"

namespace hub::nets {

namespace {

// A conv k[0] x k[1] (SAME, stride 1 unless given) with the net's options.
struct Conv {
  slim::LayerOptions lo;
  Output operator()(const Scope& s, Output x, int64_t depth, std::vector<int64_t> k, const std::string& name,
                    int64_t stride = 1, const std::string& padding = "SAME") const {
    slim::LayerOptions l = lo;
    l.padding = padding;
    return slim::conv2d(s, x, depth, k, name, l, {stride, stride});
  }
};

// The auxiliary head on a 17x17 map: 5x5/3 VALID average pool `pool_name`, 1x1
// conv 128, a VALID conv of 768 covering the pooled map, flatten, fully
// connected `logits_name` (linear(fc)). End point "AuxLogits".
void aux_head(Net& net, const Scope& s, Output x, const NetOptions& o, const Conv& conv, const slim::LayerOptions& fc,
              const std::string& pool_name, const std::string& conv_name, const std::string& logits_name) {
  if (!o.create_aux_logits || o.num_classes <= 0) return;
  Scope a = s.sub("AuxLogits");
  x = slim::avg_pool2d(a, x, {5, 5}, {3, 3}, "VALID", pool_name);
  x = conv(a, x, 128, {1, 1}, "Conv2d_1b_1x1");
  const Shape& shape = s.graph().spec(x).shape;
  x = conv(a, x, 768, {shape[1], shape[2]}, conv_name, 1, "VALID");
  x = slim::flatten(a, x);
  net.end_points["AuxLogits"] = slim::fully_connected(a, x, o.num_classes, logits_name, linear(fc));
}

// Final average pool over the whole map `pool_name` (end point "global_pool",
// net.features flattened), then dropout and a fully connected "Logits" layer
// (linear(fc)).
// (inception_v4 drops out before flattening, inception_resnet_v2 after: the
// values are the same.)
void fc_head(Net& net, const Scope& s, Output x, const NetOptions& o, const slim::LayerOptions& fc,
             const std::string& pool_name, const std::string& dropout_name) {
  Scope ls = s.sub("Logits");
  const Shape& shape = s.graph().spec(x).shape;
  x = slim::avg_pool2d(ls, x, {shape[1], shape[2]}, {1, 1}, "VALID", pool_name);
  net.end_points["global_pool"] = x;
  net.features = slim::flatten(ls, x, "PreLogitsFlatten");
  if (o.num_classes <= 0) return;
  x = slim::dropout(ls, net.features, keep_prob_or(o, 0.8), o.is_training, dropout_name);
  fc_logits(net, ls, x, o.num_classes, "Logits", fc);
}

}  // namespace

Net inception_v4(const Scope& root, Output images, const NetOptions& o, const NetInfo&) {
  Scope s = root.sub("InceptionV4");
  slim::LayerOptions lo = base_options(o, 4e-5);
  set_batch_norm(lo, 0.9997f, 0.001f, false);
  lo.weights_init.initializer = "variance_scaling";
  lo.weights_init.init_params = {2.0};
  slim::LayerOptions fc = lo;
  fc.weights_init = slim::LayerOptions{}.weights_init;
  const Conv conv{lo};
  Net net;
  auto end = [&](const std::string& name, Output x) { return net.end_points[name] = x; };
  Output x = end("Conv2d_1a_3x3", conv(s, images, 32, {3, 3}, "Conv2d_1a_3x3", 2, "VALID"));
  x = end("Conv2d_2a_3x3", conv(s, x, 32, {3, 3}, "Conv2d_2a_3x3", 1, "VALID"));
  x = end("Conv2d_2b_3x3", conv(s, x, 64, {3, 3}, "Conv2d_2b_3x3"));
  {
    Scope m = s.sub("Mixed_3a");
    Output y0 = slim::max_pool2d(m.sub("Branch_0"), x, {3, 3}, {2, 2}, "VALID", "MaxPool_0a_3x3");
    Output y1 = conv(m.sub("Branch_1"), x, 96, {3, 3}, "Conv2d_0a_3x3", 2, "VALID");
    x = end("Mixed_3a", ops::concat(m, {y0, y1}, 3));
  }
  {
    Scope m = s.sub("Mixed_4a");
    Scope b0 = m.sub("Branch_0");
    Output y0 = conv(b0, conv(b0, x, 64, {1, 1}, "Conv2d_0a_1x1"), 96, {3, 3}, "Conv2d_1a_3x3", 1, "VALID");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, x, 64, {1, 1}, "Conv2d_0a_1x1");
    y1 = conv(b1, y1, 64, {1, 7}, "Conv2d_0b_1x7");
    y1 = conv(b1, y1, 64, {7, 1}, "Conv2d_0c_7x1");
    y1 = conv(b1, y1, 96, {3, 3}, "Conv2d_1a_3x3", 1, "VALID");
    x = end("Mixed_4a", ops::concat(m, {y0, y1}, 3));
  }
  {
    Scope m = s.sub("Mixed_5a");
    Output y0 = conv(m.sub("Branch_0"), x, 192, {3, 3}, "Conv2d_1a_3x3", 2, "VALID");
    Output y1 = slim::max_pool2d(m.sub("Branch_1"), x, {3, 3}, {2, 2}, "VALID", "MaxPool_1a_3x3");
    x = end("Mixed_5a", ops::concat(m, {y0, y1}, 3));
  }
  for (char c = 'b'; c <= 'e'; ++c) {  // Inception-A, 35x35x384
    const std::string name = std::string("Mixed_5") + c;
    Scope m = s.sub(name);
    Output y0 = conv(m.sub("Branch_0"), x, 96, {1, 1}, "Conv2d_0a_1x1");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, conv(b1, x, 64, {1, 1}, "Conv2d_0a_1x1"), 96, {3, 3}, "Conv2d_0b_3x3");
    Scope b2 = m.sub("Branch_2");
    Output y2 = conv(b2, conv(b2, x, 64, {1, 1}, "Conv2d_0a_1x1"), 96, {3, 3}, "Conv2d_0b_3x3");
    y2 = conv(b2, y2, 96, {3, 3}, "Conv2d_0c_3x3");
    Scope b3 = m.sub("Branch_3");
    Output y3 =
        conv(b3, slim::avg_pool2d(b3, x, {3, 3}, {1, 1}, "SAME", "AvgPool_0a_3x3"), 96, {1, 1}, "Conv2d_0b_1x1");
    x = end(name, ops::concat(m, {y0, y1, y2, y3}, 3));
  }
  {  // Reduction-A -> 17x17x1024
    Scope m = s.sub("Mixed_6a");
    Output y0 = conv(m.sub("Branch_0"), x, 384, {3, 3}, "Conv2d_1a_3x3", 2, "VALID");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, conv(b1, x, 192, {1, 1}, "Conv2d_0a_1x1"), 224, {3, 3}, "Conv2d_0b_3x3");
    y1 = conv(b1, y1, 256, {3, 3}, "Conv2d_1a_3x3", 2, "VALID");
    Output y2 = slim::max_pool2d(m.sub("Branch_2"), x, {3, 3}, {2, 2}, "VALID", "MaxPool_1a_3x3");
    x = end("Mixed_6a", ops::concat(m, {y0, y1, y2}, 3));
  }
  for (char c = 'b'; c <= 'h'; ++c) {  // Inception-B
    const std::string name = std::string("Mixed_6") + c;
    Scope m = s.sub(name);
    Output y0 = conv(m.sub("Branch_0"), x, 384, {1, 1}, "Conv2d_0a_1x1");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, x, 192, {1, 1}, "Conv2d_0a_1x1");
    y1 = conv(b1, y1, 224, {1, 7}, "Conv2d_0b_1x7");
    y1 = conv(b1, y1, 256, {7, 1}, "Conv2d_0c_7x1");
    Scope b2 = m.sub("Branch_2");
    Output y2 = conv(b2, x, 192, {1, 1}, "Conv2d_0a_1x1");
    y2 = conv(b2, y2, 192, {7, 1}, "Conv2d_0b_7x1");
    y2 = conv(b2, y2, 224, {1, 7}, "Conv2d_0c_1x7");
    y2 = conv(b2, y2, 224, {7, 1}, "Conv2d_0d_7x1");
    y2 = conv(b2, y2, 256, {1, 7}, "Conv2d_0e_1x7");
    Scope b3 = m.sub("Branch_3");
    Output y3 =
        conv(b3, slim::avg_pool2d(b3, x, {3, 3}, {1, 1}, "SAME", "AvgPool_0a_3x3"), 128, {1, 1}, "Conv2d_0b_1x1");
    x = end(name, ops::concat(m, {y0, y1, y2, y3}, 3));
  }
  aux_head(net, s, x, o, conv, fc, "AvgPool_1a_5x5", "Conv2d_2a", "Aux_logits");
  {  // Reduction-B -> 8x8x1536
    Scope m = s.sub("Mixed_7a");
    Scope b0 = m.sub("Branch_0");
    Output y0 = conv(b0, conv(b0, x, 192, {1, 1}, "Conv2d_0a_1x1"), 192, {3, 3}, "Conv2d_1a_3x3", 2, "VALID");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, x, 256, {1, 1}, "Conv2d_0a_1x1");
    y1 = conv(b1, y1, 256, {1, 7}, "Conv2d_0b_1x7");
    y1 = conv(b1, y1, 320, {7, 1}, "Conv2d_0c_7x1");
    y1 = conv(b1, y1, 320, {3, 3}, "Conv2d_1a_3x3", 2, "VALID");
    Output y2 = slim::max_pool2d(m.sub("Branch_2"), x, {3, 3}, {2, 2}, "VALID", "MaxPool_1a_3x3");
    x = end("Mixed_7a", ops::concat(m, {y0, y1, y2}, 3));
  }
  for (char c = 'b'; c <= 'd'; ++c) {  // Inception-C
    const std::string name = std::string("Mixed_7") + c;
    Scope m = s.sub(name);
    Output y0 = conv(m.sub("Branch_0"), x, 256, {1, 1}, "Conv2d_0a_1x1");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, x, 384, {1, 1}, "Conv2d_0a_1x1");
    y1 = ops::concat(b1, {conv(b1, y1, 256, {1, 3}, "Conv2d_0b_1x3"), conv(b1, y1, 256, {3, 1}, "Conv2d_0c_3x1")}, 3);
    Scope b2 = m.sub("Branch_2");
    Output y2 = conv(b2, x, 384, {1, 1}, "Conv2d_0a_1x1");
    y2 = conv(b2, y2, 448, {3, 1}, "Conv2d_0b_3x1");
    y2 = conv(b2, y2, 512, {1, 3}, "Conv2d_0c_1x3");
    y2 = ops::concat(b2, {conv(b2, y2, 256, {1, 3}, "Conv2d_0d_1x3"), conv(b2, y2, 256, {3, 1}, "Conv2d_0e_3x1")}, 3);
    Scope b3 = m.sub("Branch_3");
    Output y3 =
        conv(b3, slim::avg_pool2d(b3, x, {3, 3}, {1, 1}, "SAME", "AvgPool_0a_3x3"), 256, {1, 1}, "Conv2d_0b_1x1");
    x = end(name, ops::concat(m, {y0, y1, y2, y3}, 3));
  }
  fc_head(net, s, x, o, fc, "AvgPool_1a", "Dropout_1b");
  return net;
}

namespace {

// A residual block of Inception-ResNet v2 under scope `name`: the branches'
// concatenation, a linear 1x1 conv "Conv2d_1x1" back to x's depth (biases,
// no batch norm), x + scale * that, then ReLU unless `relu` is false.
Output residual(const Scope& s, Output x, const std::string& name, const Conv& conv, double scale, bool relu,
                const std::function<std::vector<Output>(const Scope&, Output)>& branches) {
  Scope b = s.sub(name);
  Output mixed = ops::concat(b, branches(b, x), 3);
  slim::LayerOptions up = conv.lo;
  up.use_batch_norm = false;
  up.activation = nullptr;
  Output y = slim::conv2d(b, mixed, s.graph().spec(x).shape.dim(-1), {1, 1}, "Conv2d_1x1", up);
  y = ops::add(b, x, ops::mul(b, y, ops::scalar(b, static_cast<float>(scale))));
  return relu ? ops::relu(b, y) : y;
}

}  // namespace

// Inception-ResNet v2: stem as Inception v3's to 35x35x192, Mixed_5b (320),
// 10 x block35 (scale 0.17) under "Repeat", Mixed_6a (17x17x1088), 20 x
// block17 (0.10) under "Repeat_1" (the aux head reads the result), Mixed_7a
// (8x8x2080), 9 x block8 (0.20) under "Repeat_2", one more "Block8" (scale 1,
// no ReLU), Conv2d_7b_1x1 1536; slim.repeat names the blocks block35_1 ...
Net inception_resnet_v2(const Scope& root, Output images, const NetOptions& o, const NetInfo&) {
  Scope s = root.sub("InceptionResnetV2");
  slim::LayerOptions lo = base_options(o, 4e-5);
  lo.biases_decay = lo.weight_decay;
  set_batch_norm(lo, 0.9997f, 0.001f, false);
  const Conv conv{lo};
  Net net;
  auto end = [&](const std::string& name, Output x) { return net.end_points[name] = x; };
  Output x = end("Conv2d_1a_3x3", conv(s, images, 32, {3, 3}, "Conv2d_1a_3x3", 2, "VALID"));
  x = end("Conv2d_2a_3x3", conv(s, x, 32, {3, 3}, "Conv2d_2a_3x3", 1, "VALID"));
  x = end("Conv2d_2b_3x3", conv(s, x, 64, {3, 3}, "Conv2d_2b_3x3"));
  x = end("MaxPool_3a_3x3", slim::max_pool2d(s, x, {3, 3}, {2, 2}, "VALID", "MaxPool_3a_3x3"));
  x = end("Conv2d_3b_1x1", conv(s, x, 80, {1, 1}, "Conv2d_3b_1x1", 1, "VALID"));
  x = end("Conv2d_4a_3x3", conv(s, x, 192, {3, 3}, "Conv2d_4a_3x3", 1, "VALID"));
  x = end("MaxPool_5a_3x3", slim::max_pool2d(s, x, {3, 3}, {2, 2}, "VALID", "MaxPool_5a_3x3"));
  {
    Scope m = s.sub("Mixed_5b");
    Output y0 = conv(m.sub("Branch_0"), x, 96, {1, 1}, "Conv2d_1x1");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, conv(b1, x, 48, {1, 1}, "Conv2d_0a_1x1"), 64, {5, 5}, "Conv2d_0b_5x5");
    Scope b2 = m.sub("Branch_2");
    Output y2 = conv(b2, conv(b2, x, 64, {1, 1}, "Conv2d_0a_1x1"), 96, {3, 3}, "Conv2d_0b_3x3");
    y2 = conv(b2, y2, 96, {3, 3}, "Conv2d_0c_3x3");
    Scope b3 = m.sub("Branch_3");
    Output y3 =
        conv(b3, slim::avg_pool2d(b3, x, {3, 3}, {1, 1}, "SAME", "AvgPool_0a_3x3"), 64, {1, 1}, "Conv2d_0b_1x1");
    x = end("Mixed_5b", ops::concat(m, {y0, y1, y2, y3}, 3));
  }
  Scope repeat = s.sub("Repeat");
  for (int i = 1; i <= 10; ++i)
    x = residual(repeat, x, "block35_" + std::to_string(i), conv, 0.17, true, [&](const Scope& b, Output in) {
      Output y0 = conv(b.sub("Branch_0"), in, 32, {1, 1}, "Conv2d_1x1");
      Scope b1 = b.sub("Branch_1");
      Output y1 = conv(b1, conv(b1, in, 32, {1, 1}, "Conv2d_0a_1x1"), 32, {3, 3}, "Conv2d_0b_3x3");
      Scope b2 = b.sub("Branch_2");
      Output y2 = conv(b2, conv(b2, in, 32, {1, 1}, "Conv2d_0a_1x1"), 48, {3, 3}, "Conv2d_0b_3x3");
      return std::vector<Output>{y0, y1, conv(b2, y2, 64, {3, 3}, "Conv2d_0c_3x3")};
    });
  {
    Scope m = s.sub("Mixed_6a");
    Output y0 = conv(m.sub("Branch_0"), x, 384, {3, 3}, "Conv2d_1a_3x3", 2, "VALID");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, conv(b1, x, 256, {1, 1}, "Conv2d_0a_1x1"), 256, {3, 3}, "Conv2d_0b_3x3");
    y1 = conv(b1, y1, 384, {3, 3}, "Conv2d_1a_3x3", 2, "VALID");
    Output y2 = slim::max_pool2d(m.sub("Branch_2"), x, {3, 3}, {2, 2}, "VALID", "MaxPool_1a_3x3");
    x = end("Mixed_6a", ops::concat(m, {y0, y1, y2}, 3));
  }
  Scope repeat1 = s.sub("Repeat_1");
  for (int i = 1; i <= 20; ++i)
    x = residual(repeat1, x, "block17_" + std::to_string(i), conv, 0.10, true, [&](const Scope& b, Output in) {
      Output y0 = conv(b.sub("Branch_0"), in, 192, {1, 1}, "Conv2d_1x1");
      Scope b1 = b.sub("Branch_1");
      Output y1 = conv(b1, conv(b1, in, 128, {1, 1}, "Conv2d_0a_1x1"), 160, {1, 7}, "Conv2d_0b_1x7");
      return std::vector<Output>{y0, conv(b1, y1, 192, {7, 1}, "Conv2d_0c_7x1")};
    });
  end("PreAuxLogits", x);
  aux_head(net, s, x, o, conv, lo, "Conv2d_1a_3x3", "Conv2d_2a_5x5", "Logits");
  {
    Scope m = s.sub("Mixed_7a");
    Scope b0 = m.sub("Branch_0");
    Output y0 = conv(b0, conv(b0, x, 256, {1, 1}, "Conv2d_0a_1x1"), 384, {3, 3}, "Conv2d_1a_3x3", 2, "VALID");
    Scope b1 = m.sub("Branch_1");
    Output y1 = conv(b1, conv(b1, x, 256, {1, 1}, "Conv2d_0a_1x1"), 288, {3, 3}, "Conv2d_1a_3x3", 2, "VALID");
    Scope b2 = m.sub("Branch_2");
    Output y2 = conv(b2, conv(b2, x, 256, {1, 1}, "Conv2d_0a_1x1"), 288, {3, 3}, "Conv2d_0b_3x3");
    y2 = conv(b2, y2, 320, {3, 3}, "Conv2d_1a_3x3", 2, "VALID");
    Output y3 = slim::max_pool2d(m.sub("Branch_3"), x, {3, 3}, {2, 2}, "VALID", "MaxPool_1a_3x3");
    x = end("Mixed_7a", ops::concat(m, {y0, y1, y2, y3}, 3));
  }
  auto block8 = [&](const Scope& b, Output in) {
    Output y0 = conv(b.sub("Branch_0"), in, 192, {1, 1}, "Conv2d_1x1");
    Scope b1 = b.sub("Branch_1");
    Output y1 = conv(b1, conv(b1, in, 192, {1, 1}, "Conv2d_0a_1x1"), 224, {1, 3}, "Conv2d_0b_1x3");
    return std::vector<Output>{y0, conv(b1, y1, 256, {3, 1}, "Conv2d_0c_3x1")};
  };
  Scope repeat2 = s.sub("Repeat_2");
  for (int i = 1; i <= 9; ++i) x = residual(repeat2, x, "block8_" + std::to_string(i), conv, 0.20, true, block8);
  x = residual(s, x, "Block8", conv, 1.0, false, block8);
  x = end("Conv2d_7b_1x1", conv(s, x, 1536, {1, 1}, "Conv2d_7b_1x1"));
  fc_head(net, s, x, o, lo, "AvgPool_1a_8x8", "Dropout");
  return net;
}

}  // namespace hub::nets

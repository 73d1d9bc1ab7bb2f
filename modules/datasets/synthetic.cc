#include "modules/datasets/synthetic.h"

#include <algorithm>

#include "hub/core/random.h"

namespace hub::datasets {

SyntheticSet make_bars(int64_t n, int64_t size, uint64_t seed) {
  if (n <= 0 || size < 8)
    throw_error(Code::kInvalidArgument,
                "make_bars: need n > 0 and size >= 8, got n=" + std::to_string(n) + " size=" + std::to_string(size));
  SyntheticSet set;
  set.images = Tensor(DType::kFloat32, {n, size, size, 1});
  set.labels = Tensor(DType::kInt32, {n});
  float* img = set.images.data<float>();
  int32_t* lab = set.labels.data<int32_t>();
  fill_uniform(img, set.images.num_elements(), mix_seed(seed, 1), 0.0f, 0.3f);  // background noise
  Philox rng(mix_seed(seed, 2));
  const int64_t len = size / 2;
  for (int64_t i = 0; i < n; ++i) {
    auto r = rng.block(i, 0);
    int cls = static_cast<int>(r[0] % SyntheticSet::kNumClasses);
    lab[i] = cls;
    float bright = 0.7f + 0.3f * (r[1] >> 8) * (1.0f / 16777216.0f);
    int64_t y0 = r[2] % (size - len + 1), x0 = r[3] % (size - len + 1);
    float* im = img + i * size * size;
    for (int64_t k = 0; k < len; ++k) {
      int64_t y = y0, x = x0;
      switch (cls) {
        case 0:
          y = y0 + len / 2;
          x = x0 + k;
          break;
        case 1:
          y = y0 + k;
          x = x0 + len / 2;
          break;
        case 2:
          y = y0 + k;
          x = x0 + k;
          break;
        default:
          y = y0 + k;
          x = x0 + len - 1 - k;
          break;
      }
      im[y * size + x] = std::max(im[y * size + x], bright);
    }
  }
  return set;
}

}  // namespace hub::datasets

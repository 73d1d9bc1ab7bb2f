// Reference kernels of the selection ops (hub/ops/selection.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "hub/core/parallel.h"
#include "hub/ops/node.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

// Chunks of about this many elements are counted, then filled, in parallel.
constexpr int64_t kNonZeroChunk = 1 << 16;

template <class T>
void non_zero(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const T* v = x.data<T>();
  const int64_t n = x.num_elements();
  const int rank = x.shape().rank();
  const int64_t chunks = (n + kNonZeroChunk - 1) / kNonZeroChunk;
  std::vector<int64_t> first(static_cast<size_t>(chunks) + 1, 0);  // nonzeros before each chunk
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const int64_t end = std::min(n, (k + 1) * kNonZeroChunk);
      int64_t count = 0;
      for (int64_t i = k * kNonZeroChunk; i < end; ++i) count += v[i] != T(0);
      first[static_cast<size_t>(k) + 1] = count;
    }
  });
  std::partial_sum(first.begin(), first.end(), first.begin());
  const int64_t total = first.back();
  int64_t* out = ctx.output(0, Shape{static_cast<int64_t>(rank), total}).data<int64_t>();
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    std::vector<int64_t> coord(static_cast<size_t>(rank));
    for (int64_t k = b; k < e; ++k) {
      // The coordinates of the chunk's first element, then counted up.
      int64_t rest = k * kNonZeroChunk;
      for (int d = rank - 1; d >= 0; --d) {
        coord[static_cast<size_t>(d)] = rest % x.shape()[d];
        rest /= x.shape()[d];
      }
      int64_t j = first[static_cast<size_t>(k)];
      const int64_t end = std::min(n, (k + 1) * kNonZeroChunk);
      for (int64_t i = k * kNonZeroChunk; i < end; ++i) {
        if (v[i] != T(0)) {
          for (int d = 0; d < rank; ++d) out[d * total + j] = coord[static_cast<size_t>(d)];
          ++j;
        }
        for (int d = rank - 1; d >= 0 && ++coord[static_cast<size_t>(d)] == x.shape()[d]; --d)
          coord[static_cast<size_t>(d)] = 0;
      }
    }
  });
}

void non_zero_kernel(KernelContext& ctx) {
  dispatch_dtype(ctx.input(0).dtype(), [&](auto t) { non_zero<decltype(t)>(ctx); });
}

// One box as its extent on each axis, and its area.
struct Box {
  float y0, x0, y1, x1, area;
};

Box box_of(const float* b, bool center_point_box) {
  Box r;
  if (center_point_box) {
    r = {b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2, 0};
  } else {
    r = {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3]), 0};
  }
  r.area = (r.y1 - r.y0) * (r.x1 - r.x0);
  return r;
}

// Whether IoU(a, b) exceeds the threshold; a box of no area overlaps nothing.
bool overlaps(const Box& a, const Box& b, float threshold) {
  const float w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  const float h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  if (w <= 0 || h <= 0 || a.area <= 0 || b.area <= 0) return false;
  const float inter = w * h;
  const float uni = a.area + b.area - inter;
  return uni > 0 && inter / uni > threshold;
}

void non_max_suppression_kernel(KernelContext& ctx) {
  const Tensor &boxes = ctx.input(0), &scores = ctx.input(1);
  const Shape &bs = boxes.shape(), &ss = scores.shape();
  if (bs[0] != ss[0] || bs[1] != ss[2] || bs[2] != 4)
    throw_error(Code::kInvalidArgument, "boxes " + boxes.spec_string() + " and scores " + scores.spec_string() +
                                            " are not [batch, boxes, 4] and [batch, classes, boxes]");
  const int64_t batches = bs[0], n = bs[1], classes = ss[1];
  const Attrs& a = ctx.attrs();
  const bool center = a.get_bool("center_point_box");
  const int64_t max_per_class = a.get_int("max_per_class");
  const auto iou = static_cast<float>(a.get_float("iou_threshold"));
  const double score_threshold = a.get_float("score_threshold");
  const bool filter = score_threshold != -std::numeric_limits<double>::infinity();
  const auto threshold = static_cast<float>(score_threshold);
  std::vector<Box> all(static_cast<size_t>(batches * n));
  const float* bd = boxes.data<float>();
  for (size_t i = 0; i < all.size(); ++i) all[i] = box_of(bd + 4 * i, center);
  // Per (batch, class): the kept box indices, in the order kept.
  std::vector<std::vector<int64_t>> kept(static_cast<size_t>(batches * classes));
  parallel_for(batches * classes, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> order;
    for (int64_t pair = begin; pair < end; ++pair) {
      const float* s = scores.data<float>() + pair * n;
      const Box* box = all.data() + (pair / classes) * n;
      order.clear();
      for (int64_t i = 0; i < n && max_per_class > 0; ++i)
        if (!std::isnan(s[i]) && (!filter || s[i] > threshold)) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
      std::vector<int64_t>& out = kept[static_cast<size_t>(pair)];
      for (int64_t i : order) {
        if (static_cast<int64_t>(out.size()) == max_per_class) break;
        if (std::none_of(out.begin(), out.end(), [&](int64_t k) { return overlaps(box[k], box[i], iou); }))
          out.push_back(i);
      }
    }
  });
  int64_t total = 0;
  for (const auto& k : kept) total += static_cast<int64_t>(k.size());
  int64_t* out = ctx.output(0, Shape{total, 3}).data<int64_t>();
  for (int64_t pair = 0; pair < batches * classes; ++pair)
    for (int64_t i : kept[static_cast<size_t>(pair)]) {
      *out++ = pair / classes;
      *out++ = pair % classes;
      *out++ = i;
    }
}

// Unique: the slices x[:, j, :] of x viewed as [outer, n, inner] gathered
// into rows, row indices sorted stably by the rows' values (lexicographic),
// equal runs grouped; unsorted, the groups are then ordered by their first
// index. Element comparison is the dtype's (so -0 == 0).
template <class T>
void unique(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& s = x.shape();
  int64_t axis = ctx.attrs().get_int("axis");
  if (axis < 0) axis += s.rank();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < s.rank(); ++d) (d < axis ? outer : inner) *= d == axis ? 1 : s[d];
  const int64_t n = s[static_cast<int>(axis)], width = outer * inner;
  // Row j: slice j in (outer, inner) order. (Not a std::vector: vector<bool> has no data().)
  const std::unique_ptr<T[]> rows(new T[static_cast<size_t>(n * width)]);
  const T* v = x.data<T>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      std::copy(v + (o * n + j) * inner, v + (o * n + j + 1) * inner, rows.get() + j * width + o * inner);
  const T* r = rows.get();
  auto less = [&](int64_t a, int64_t b) {
    return std::lexicographical_compare(r + a * width, r + (a + 1) * width, r + b * width, r + (b + 1) * width);
  };
  auto equal = [&](int64_t a, int64_t b) { return std::equal(r + a * width, r + (a + 1) * width, r + b * width); };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  std::vector<int64_t> first;                // per group: its first row
  std::vector<int64_t> group(order.size());  // per row: its group
  std::vector<int64_t> count;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || !equal(order[i - 1], order[i])) {
      first.push_back(order[i]);
      count.push_back(0);
    }
    group[static_cast<size_t>(order[i])] = static_cast<int64_t>(first.size()) - 1;
    ++count.back();
  }
  const auto k = static_cast<int64_t>(first.size());
  std::vector<int64_t> rank(first.size());  // group -> its place in y
  std::iota(rank.begin(), rank.end(), 0);
  if (!ctx.attrs().get_bool("sorted")) {
    std::vector<int64_t> by_first(first.size());
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    for (int64_t p = 0; p < k; ++p) rank[static_cast<size_t>(by_first[static_cast<size_t>(p)])] = p;
  }
  Shape ys = s;
  ys.set_dim(static_cast<int>(axis), k);
  T* y = ctx.output(0, ys).data<T>();
  int64_t* indices = ctx.output(1, Shape{k}).data<int64_t>();
  int64_t* inverse = ctx.output(2, Shape{n}).data<int64_t>();
  int64_t* counts = ctx.output(3, Shape{k}).data<int64_t>();
  for (int64_t g = 0; g < k; ++g) {
    const int64_t p = rank[static_cast<size_t>(g)], row = first[static_cast<size_t>(g)];
    indices[p] = row;
    counts[p] = count[static_cast<size_t>(g)];
    for (int64_t o = 0; o < outer; ++o)
      std::copy(r + row * width + o * inner, r + row * width + (o + 1) * inner, y + (o * k + p) * inner);
  }
  for (int64_t j = 0; j < n; ++j) inverse[j] = rank[static_cast<size_t>(group[static_cast<size_t>(j)])];
}

void unique_kernel(KernelContext& ctx) {
  dispatch_dtype(ctx.input(0).dtype(), [&](auto t) { unique<decltype(t)>(ctx); });
}

}  // namespace

HUB_REGISTER_KERNEL(Unique, reference, unique_kernel);
HUB_REGISTER_KERNEL(NonZero, reference, non_zero_kernel);
HUB_REGISTER_KERNEL(NonMaxSuppression, reference, non_max_suppression_kernel);

}  // namespace hub::cpu

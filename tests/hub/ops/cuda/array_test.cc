// The CUDA kernels of the shape ops (hub/ops/cuda/array.cu) against the
// reference: every permutation kind of Transpose (the tiled and the box
// paths), every Pad mode, Slice / StridedSlice with all masks and negative
// strides, Concat / Split along every axis, Gather with every axis and
// batch_dims, Tile, and the gradients, on awkward shapes (ranks 0..6, size-1
// and empty dims, sizes that need many blocks) and on 1-, 4- and 8-byte
// dtypes. Moves must be exact; sums within float rounding. Every case skips
// where there is no CUDA device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../op_attrs.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

// The same shape as float32, int64 and uint8 tensors with distinct values
// (where the dtype allows), so a misplaced element shows.
std::vector<Tensor> dtypes_of(const Shape& shape, uint64_t seed) {
  Tensor f = random_tensor(shape, seed);
  std::vector<int64_t> l(static_cast<size_t>(f.num_elements()));
  std::vector<uint8_t> b(l.size());
  for (size_t i = 0; i < l.size(); ++i) {
    l[i] = static_cast<int64_t>(i) * 3 - 11 + (static_cast<int64_t>(seed) << 40);
    b[i] = static_cast<uint8_t>(i * 7 + seed);
  }
  return {f, Tensor::from_vector<int64_t>(shape, l), Tensor::from_vector<uint8_t>(shape, b)};
}

// These ops move elements unchanged: the cuda kernel must match exactly.
void same_on_cuda(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  compare_backends(op, inputs, attrs, "cuda", 0, 0);
}

// same_on_cuda for a one-input op on x of `shape` in each of dtypes_of's dtypes.
void same_on_cuda_in_dtypes(const std::string& op, const Shape& shape, const Attrs& attrs, uint64_t seed) {
  for (const Tensor& x : dtypes_of(shape, seed)) {
    INFO(op << " of " << x.spec_string());
    same_on_cuda(op, {x}, attrs);
  }
}

}  // namespace

TEST_CASE("cuda Reshape, ReshapeLike, Squeeze and ExpandDims: views of the device input") {
  HUB_SKIP_UNLESS_CUDA();
  same_on_cuda_in_dtypes("Reshape", {2, 3, 4}, Attrs().set("shape", Ints{4, -1}), 1);
  same_on_cuda_in_dtypes("Reshape", {1}, Attrs().set("shape", Ints{}), 2);
  same_on_cuda_in_dtypes("Reshape", {0, 3}, Attrs().set("shape", Ints{3, 0}), 3);
  same_on_cuda("ReshapeLike", {random_tensor({6}, 4), random_tensor({3, 1, 2}, 5)}, {});
  same_on_cuda_in_dtypes("Squeeze", {1, 2, 1, 3}, {}, 6);
  same_on_cuda_in_dtypes("Squeeze", {1, 2, 1, 3}, Attrs().set("axes", Ints{-2}), 7);
  same_on_cuda_in_dtypes("ExpandDims", {2, 3}, Attrs().set("axis", -1), 8);
  same_on_cuda_in_dtypes("ExpandDims", {}, Attrs().set("axis", 0), 9);
  check_gradients("Reshape", {random_tensor({2, 3, 2}, 10)}, Attrs().set("shape", Ints{4, -1}), on_cuda());
  check_gradients("Squeeze", {random_tensor({1, 3, 1}, 11)}, {}, on_cuda());
  check_gradients("ExpandDims", {random_tensor({3, 2}, 12)}, Attrs().set("axis", 1), on_cuda());
}

TEST_CASE("cuda Transpose: every kind of permutation, tiled and box paths, dtypes") {
  HUB_SKIP_UNLESS_CUDA();
  struct Case {
    Shape x;
    Ints perm;
  };
  const std::vector<Case> cases = {
      {{}, {}},                                    // scalar
      {{37}, {0}},                                 // rank 1
      {{5, 6, 7}, {0, 1, 2}},                      // identity: one copy
      {{300, 257}, {1, 0}},                        // 2-D, tiled, many blocks
      {{3, 1}, {1, 0}},                            // a size-1 dim: a copy
      {{2, 33, 17, 48}, {0, 3, 1, 2}},             // NHWC -> NCHW, tiled
      {{2, 48, 33, 17}, {0, 2, 3, 1}},             // NCHW -> NHWC, tiled
      {{2, 40, 41, 3}, {0, 3, 1, 2}},              // NHWC -> NCHW with 3 channels: box walk
      {{2, 3, 40, 41}, {0, 2, 3, 1}},              // NCHW -> NHWC with 3 channels
      {{3, 4, 37, 41}, {0, 1, 3, 2}},              // swap of the inner dims, batched tiles
      {{20, 3, 24, 18}, {1, 3, 0, 2}},             // tiles with batch dims on both sides of the read dim
      {{7, 1, 9, 4}, {3, 2, 1, 0}},                // reversal with a size-1 dim
      {{2, 3, 4, 5, 6}, {4, 0, 3, 1, 2}},          // rank 5
      {{3, 2, 1, 3, 2, 5}, {5, 4, 3, 2, 1, 0}},    // rank 6 reversal
      {{2, 3, 17, 1, 19, 2}, {1, 0, 4, 3, 2, 5}},  // rank 6: inner dim kept, rows copied
      {{0, 3, 4}, {2, 0, 1}},                      // empty
      {{70000, 2}, {1, 0}},                        // a long and a short dim: box walk, many blocks
  };
  uint64_t seed = 20;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " perm " << Shape(k.perm).to_string());
    same_on_cuda_in_dtypes("Transpose", k.x, Attrs().set("perm", k.perm), ++seed);
  }
  check_gradients("Transpose", {random_tensor({2, 3, 4}, 40)}, Attrs().set("perm", Ints{2, 0, 1}), on_cuda());
}

TEST_CASE("cuda Transpose: a permutation of more dims than the kernel walks falls back to the host") {
  HUB_SKIP_UNLESS_CUDA();
  // 13 dims of 2 reversed: no two stay adjacent, so nothing merges.
  Shape x;
  Ints perm;
  for (int d = 0; d < 13; ++d) {
    x.push_back(2);
    perm.push_back(12 - d);
  }
  Tensor t = random_tensor(x, 41);
  const Attrs attrs = Attrs().set("perm", perm);
  CHECK(backend_used("Transpose", {t}, attrs, "cuda") != "cuda");
  expect_close(run_op("Transpose", {t}, attrs, "cuda")[0], run_op("Transpose", {t}, attrs)[0], 0, 0);
}

TEST_CASE("cuda Pad: every mode on ranks 1..4, dtypes, the constant cast, empty input") {
  HUB_SKIP_UNLESS_CUDA();
  struct Case {
    Shape x;
    Ints p;
  };
  const std::vector<Case> cases = {
      {{3}, {2, 2}},
      {{3, 4, 5}, {2, 1, 0, 3, 4, 2}},
      {{2, 5, 7, 3}, {0, 0, 3, 3, 2, 4, 0, 0}},  // NHWC spatial padding
      {{1, 4, 1}, {0, 0, 3, 2, 0, 0}},
      {{6, 2, 2}, {5, 5, 1, 1, 1, 0}},
      {{4, 6, 5}, {0, 0, 0, 0, 1, 3}},               // only the last dim: the others merge
      {{2, 130, 130, 3}, {0, 0, 1, 1, 1, 1, 0, 0}},  // many blocks
      {{2, 3}, {0, 0, 0, 0}},                        // nothing padded
  };
  uint64_t seed = 50;
  for (const Case& k : cases)
    for (const char* mode : {"CONSTANT", "REFLECT", "SYMMETRIC", "EDGE"}) {
      bool fits = true;  // how far each mode may pad
      for (int d = 0; d < k.x.rank(); ++d) {
        const int64_t limit = std::string(mode) == "REFLECT"     ? k.x[d] - 1
                              : std::string(mode) == "SYMMETRIC" ? k.x[d]
                                                                 : k.x[d] + 1000;
        fits = fits && std::max(k.p[2 * d], k.p[2 * d + 1]) <= limit;
      }
      if (!fits) continue;
      INFO(mode << " x " << k.x.to_string() << " paddings " << Shape(k.p).to_string());
      same_on_cuda_in_dtypes("Pad", k.x, pad_attrs(k.p, mode, 2.5), ++seed);
    }
  // The constant converted to the dtype as the reference converts it.
  same_on_cuda("Pad", {Tensor::from_vector<int32_t>({2}, {7, 8})}, pad_attrs({1, 2}, "CONSTANT", -3));
  same_on_cuda("Pad", {Tensor::from_vector<bool>({2}, {true, false})}, pad_attrs({1, 1}, "CONSTANT", 1));
  // An empty x padded with the constant is all constant; an unpadded empty dim stays empty.
  same_on_cuda("Pad", {Tensor::zeros(DType::kFloat32, {0, 2})}, pad_attrs({1, 2, 0, 1}, "CONSTANT", 4));
  same_on_cuda("Pad", {Tensor::zeros(DType::kFloat32, {0, 2})}, pad_attrs({0, 0, 1, 1}, "REFLECT"));
}

TEST_CASE("cuda PadGrad and Pad's gradients: border gradients fold back") {
  HUB_SKIP_UNLESS_CUDA();
  struct Case {
    Shape x;
    Ints p;
  };
  const std::vector<Case> cases = {
      {{3}, {2, 2}},
      {{1}, {1, 1}},  // SYMMETRIC and EDGE on a single element
      {{3, 4, 2}, {2, 1, 0, 3, 1, 1}},
      {{2, 5, 7, 3}, {0, 0, 3, 3, 2, 4, 0, 0}},
      {{2, 60, 60, 8}, {0, 0, 2, 1, 1, 2, 0, 0}},  // many blocks
      {{2, 3}, {0, 0, 0, 0}},                      // nothing padded: a copy
  };
  uint64_t seed = 70;
  for (const Case& k : cases)
    for (const char* mode : {"REFLECT", "SYMMETRIC", "EDGE"}) {
      bool fits = true;
      Shape g;
      for (int d = 0; d < k.x.rank(); ++d) {
        const int64_t limit = std::string(mode) == "REFLECT"     ? k.x[d] - 1
                              : std::string(mode) == "SYMMETRIC" ? k.x[d]
                                                                 : 1000;
        fits = fits && std::max(k.p[2 * d], k.p[2 * d + 1]) <= limit;
        g.push_back(k.x[d] + k.p[2 * d] + k.p[2 * d + 1]);
      }
      if (!fits) continue;
      INFO(mode << " x " << k.x.to_string() << " paddings " << Shape(k.p).to_string());
      compare_backends("PadGrad", {random_tensor(g, ++seed)}, Attrs().set("paddings", k.p).set("mode", mode), "cuda",
                       1e-5, 1e-5);
    }
  Tensor x = random_tensor({3, 4, 2}, 79);
  check_gradients("Pad", {x}, pad_attrs({2, 1, 0, 3, 1, 1}, "REFLECT"), on_cuda());
  check_gradients("Pad", {x}, pad_attrs({3, 2, 4, 0, 2, 2}, "SYMMETRIC"), on_cuda());
  check_gradients("Pad", {x}, pad_attrs({4, 1, 0, 5, 1, 3}, "EDGE"), on_cuda());
  check_gradients("Pad", {x}, pad_attrs({1, 0, 0, 2, 1, 1}, "CONSTANT", 3), on_cuda());
}

TEST_CASE("cuda Slice: ranks 1..6, size -1, empty slices, dtypes") {
  HUB_SKIP_UNLESS_CUDA();
  struct Case {
    Shape x;
    Ints begin, size;
  };
  const std::vector<Case> cases = {
      {{9}, {2}, {5}},
      {{3, 4}, {1, 1}, {2, -1}},
      {{3, 4}, {0, 2}, {-1, 1}},            // a column
      {{3, 4}, {3, 0}, {0, 4}},             // empty
      {{4, 5, 6}, {1, 0, 0}, {2, -1, -1}},  // whole rows: one copy
      {{2, 7, 1, 5}, {1, 2, 0, 1}, {1, 4, 1, 3}},
      {{3, 2, 4, 3, 5}, {1, 0, 1, 0, 2}, {2, 2, 2, -1, 3}},
      {{2, 3, 2, 3, 2, 3}, {1, 1, 0, 1, 1, 0}, {1, 2, -1, 2, 1, 2}},
      {{300, 301}, {3, 5}, {290, 290}},  // many blocks
  };
  uint64_t seed = 80;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " begin " << Shape(k.begin).to_string() << " size " << Shape(k.size).to_string());
    same_on_cuda_in_dtypes("Slice", k.x, Attrs().set("begin", k.begin).set("size", k.size), ++seed);
  }
  check_gradients("Slice", {random_tensor({3, 4, 2}, 90)},
                  Attrs().set("begin", Ints{1, 0, 1}).set("size", Ints{2, 3, -1}), on_cuda());
}

TEST_CASE("cuda Concat: every axis, negative axes, empty and single parts, dtypes") {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 100;
  const Shape base{3, 4, 5, 2};
  for (int64_t axis = -4; axis < 4; ++axis) {
    const int a = static_cast<int>(axis < 0 ? axis + 4 : axis);
    for (const Ints& sizes : {Ints{1, 3, 2}, Ints{2, 0, 1, 4}, Ints{3}}) {
      INFO("axis " << axis << " sizes " << Shape(sizes).to_string());
      std::vector<std::vector<Tensor>> parts(3);  // per dtype
      for (int64_t s : sizes) {
        Shape shape = base;
        shape.set_dim(a, s);
        std::vector<Tensor> t = dtypes_of(shape, ++seed);
        for (size_t d = 0; d < t.size(); ++d) parts[d].push_back(t[d]);
      }
      for (const std::vector<Tensor>& p : parts) same_on_cuda("Concat", p, Attrs().set("axis", axis));
    }
  }
  // Rank 1 and many blocks.
  same_on_cuda("Concat", {random_tensor({5}, 110), random_tensor({0}, 111), random_tensor({7}, 112)},
               Attrs().set("axis", 0));
  same_on_cuda("Concat", {random_tensor({200, 300}, 113), random_tensor({200, 17}, 114)}, Attrs().set("axis", 1));
  check_gradients("Concat", {random_tensor({2, 3}, 115), random_tensor({2, 1}, 116), random_tensor({2, 2}, 117)},
                  Attrs().set("axis", 1), on_cuda());
}

TEST_CASE("cuda Split: every axis, equal parts and sizes with -1 and 0, dtypes") {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 120;
  const Shape x{6, 4, 6, 2};
  for (int64_t axis = -4; axis < 4; ++axis) {
    INFO("axis " << axis);
    same_on_cuda_in_dtypes("Split", x, split_attrs(axis, 2), ++seed);
    const int64_t dim = x.dim(static_cast<int>(axis));
    same_on_cuda_in_dtypes("Split", x, split_attrs(axis, 0, {1, -1, 0, dim > 2 ? 2 : 1}), ++seed);
    same_on_cuda_in_dtypes("Split", x, split_attrs(axis, 1), ++seed);
  }
  same_on_cuda("Split", {random_tensor({400, 300}, 130)}, split_attrs(1, 0, {7, -1, 100}));
  Tensor g = random_tensor({3, 5, 2}, 131);
  for (int out = 0; out < 3; ++out) {
    GradCheckOptions o = on_cuda();
    o.output = out;
    check_gradients("Split", {g}, split_attrs(1, 0, {2, -1, 1}), o);
  }
}

TEST_CASE("cuda Gather and GatherGrad: every axis and batch_dims, index dtypes, negative indices") {
  HUB_SKIP_UNLESS_CUDA();
  struct Case {
    Shape params;
    Shape indices;
    int64_t axis, batch_dims;
  };
  const std::vector<Case> cases = {
      {{5, 3}, {4}, 0, 0},
      {{5, 3}, {2, 3}, 1, 0},
      {{5, 3}, {}, 0, 0},    // a scalar index drops the axis
      {{5, 3}, {0}, -1, 0},  // no indices
      {{2, 4, 3, 2}, {3, 2}, 2, 0},
      {{2, 4, 3, 2}, {2, 5}, 1, 1},
      {{2, 4, 3, 2}, {2, 4, 3}, 2, 2},
      {{2, 4, 3, 2}, {2, 4, 1, 2}, -1, -2},
      {{1000, 96}, {1500}, 0, 0},  // an embedding lookup, many blocks
  };
  uint64_t seed = 140;
  for (const Case& k : cases) {
    INFO("params " << k.params.to_string() << " indices " << k.indices.to_string() << " axis " << k.axis
                   << " batch_dims " << k.batch_dims);
    const int axis = static_cast<int>(k.axis < 0 ? k.axis + k.params.rank() : k.axis);
    const int64_t dim = k.params[axis];
    // Indices over [-dim, dim): negative ones count from the end; repeats accumulate in GatherGrad.
    std::vector<int64_t> iv(static_cast<size_t>(k.indices.num_elements()));
    for (size_t i = 0; i < iv.size(); ++i) iv[i] = static_cast<int64_t>((i * 7 + seed) % (2 * dim)) - dim;
    const Attrs attrs = Attrs().set("axis", k.axis).set("batch_dims", k.batch_dims);
    const Tensor i64 = Tensor::from_vector<int64_t>(k.indices, iv);
    const Tensor i32 = Tensor::from_vector<int32_t>(k.indices, std::vector<int32_t>(iv.begin(), iv.end()));
    for (const Tensor& params : dtypes_of(k.params, ++seed))
      for (const Tensor& idx : {i64, i32}) {
        INFO(params.spec_string() << " indices " << idx.spec_string());
        same_on_cuda("Gather", {params, idx}, attrs);
      }
    const Tensor y = run_op("Gather", {random_tensor(k.params, ++seed), i64}, attrs)[0];
    for (const Tensor& idx : {i64, i32})
      compare_backends("GatherGrad", {random_tensor(y.shape(), ++seed, 0, 1), idx, random_tensor(k.params, ++seed)},
                       attrs, "cuda", 1e-5, 1e-5);
  }
  // Many repeats of few rows: the atomics add up.
  std::vector<int64_t> rows(3000);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i * 13 % 50) - 25;
  compare_backends(
      "GatherGrad",
      {random_tensor({3000, 40}, 160, 0, 1), Tensor::from_vector<int64_t>({3000}, rows), random_tensor({50, 40}, 161)},
      {}, "cuda", 1e-4, 1e-4);
  check_gradients("Gather", {random_tensor({4, 3}, 162), Tensor::from_vector<int64_t>({3}, {2, 0, 2})}, {},
                  on_cuda({.inputs = {0}}));
  check_gradients("Gather", {random_tensor({2, 3, 2}, 163), Tensor::from_vector<int32_t>({2, 3}, {2, -1, 0, 1, 0, 0})},
                  Attrs().set("axis", 1).set("batch_dims", 1), on_cuda({.inputs = {0}}));
}

TEST_CASE("cuda Gather: an index out of range gives zeros, and GatherGrad drops it (no host read)") {
  HUB_SKIP_UNLESS_CUDA();
  Tensor p = make({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor idx = Tensor::from_vector<int64_t>({3}, {2, 3, -4});
  expect_close(run_op("Gather", {p, idx}, {}, "cuda")[0], make({3, 2}, {5, 6, 0, 0, 0, 0}), 0, 0);
  expect_close(run_op("GatherGrad", {make({3, 2}, {1, 2, 3, 4, 5, 6}), idx, p}, {}, "cuda")[0],
               make({3, 2}, {0, 0, 0, 0, 1, 2}), 0, 0);
}

TEST_CASE("cuda StridedSlice and StridedSliceGrad: masks, negative strides, random specs, dtypes") {
  HUB_SKIP_UNLESS_CUDA();
  const Shape t{3, 2, 3};
  const std::vector<Attrs> specs = {
      ss({1, 0, 0}, {2, 1, 3}, {1, 1, 1}),
      ss({1, -1, 0}, {2, -3, 3}, {1, -1, 1}),
      ss({0, 0}, {0, 1}, {1, 1}, 0, 0, 1, 0, 2),                                         // t[..., 0]
      ss({1}, {2}, {1}, 0, 0, 0, 0, 1),                                                  // t[1]
      ss({0, 0, -1, 0}, {0, 0, 0, 0}, {1, 1, 1, 2}, 0b1001, 0b1001, 0, 0b0010, 0b0100),  // t[:, newaxis, -1, ::2]
      ss({0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 0, 0, 0b010, 0b101),                           // t[newaxis, ..., newaxis]
      ss({0, 0}, {0, 0}, {1, -1}, 0b10, 0b10, 0b01),                                     // t[..., ::-1]
      ss({0, 0, 1, 0}, {0, 0, 0, 0}, {1, 1, 1, 1}, 0b0010, 0b0010, 0b1000, 0, 0b0101),   // t[0, :, 1, ...]
      ss({-1, -1, -1}, {0, 0, 0}, {-1, -1, -1}, 0, 0b111),                               // every dim reversed
      ss({2, 1, 2}, {3, 2, 3}, {1, 1, 1}, 0, 0, 0, 0, 0b111),                            // a scalar
  };
  uint64_t seed = 170;
  for (const Attrs& a : specs) {
    INFO("spec " << a.get_ints("begin").size() << " entries, masks " << a.get_int("begin_mask") << " "
                 << a.get_int("end_mask") << " " << a.get_int("ellipsis_mask") << " " << a.get_int("new_axis_mask")
                 << " " << a.get_int("shrink_axis_mask") << ", strides " << Shape(a.get_ints("strides")).to_string());
    same_on_cuda_in_dtypes("StridedSlice", t, a, ++seed);
    const Tensor x = random_tensor(t, ++seed);
    const Tensor y = run_op("StridedSlice", {x}, a)[0];
    same_on_cuda("StridedSliceGrad", {x, random_tensor(y.shape(), ++seed)}, a);
  }
  // Random Python slices of a [5, 4, 7] tensor: begin/end past both ends, strides -3..3.
  const Tensor x = random_tensor({5, 4, 7}, 180);
  uint64_t state = 12345;
  auto next = [&](int64_t lo, int64_t hi) {  // uniform in [lo, hi]
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(hi - lo + 1));
  };
  for (int trial = 0; trial < 60; ++trial) {
    Ints b, e, st;
    for (int d = 0; d < 3; ++d) {
      const int64_t len = x.dim(d);
      b.push_back(next(-len - 3, len + 3));
      e.push_back(next(-len - 3, len + 3));
      const int64_t s = next(-3, 3);
      st.push_back(s == 0 ? 1 : s);
    }
    INFO("begin " << Shape(b).to_string() << " end " << Shape(e).to_string() << " strides " << Shape(st).to_string());
    const Attrs a = ss(b, e, st);
    same_on_cuda("StridedSlice", {x}, a);
    const Tensor y = run_op("StridedSlice", {x}, a)[0];
    same_on_cuda("StridedSliceGrad", {x, random_tensor(y.shape(), ++seed)}, a);
  }
  // Rank 6 with a negative stride inside, and a large slice (many blocks).
  same_on_cuda_in_dtypes("StridedSlice", {2, 3, 4, 3, 2, 5},
                         ss({1, 0, -1, 0, 0, 1}, {2, 3, 0, 3, 2, 5}, {1, 2, -2, 1, 1, 2}), 190);
  same_on_cuda_in_dtypes("StridedSlice", {400, 500}, ss({399, 3}, {0, 500}, {-1, 2}, 0b01), 191);
  const Tensor xg = random_tensor({4, 3, 5}, 192);
  check_gradients("StridedSlice", {xg}, ss({3, 0, 1}, {0, 3, 5}, {-2, 1, 2}), on_cuda());
  check_gradients("StridedSlice", {xg}, ss({0, 1}, {0, 2}, {1, 1}, 0, 0, 0b01, 0, 0b10), on_cuda());
}

TEST_CASE("cuda Tile and TileGrad: multiples on ranks 1..5 (0 included), dtypes, long sums") {
  HUB_SKIP_UNLESS_CUDA();
  struct Case {
    Shape x;
    Ints multiples;
  };
  const std::vector<Case> cases = {
      {{3}, {4}},
      {{2, 3}, {2, 1}},
      {{2, 3}, {1, 2}},
      {{1, 2}, {2, 2}},
      {{2, 3}, {0, 3}},  // empty
      {{2, 1, 3}, {2, 3, 1}},
      {{3, 1, 2, 5}, {1, 4, 2, 3}},
      {{2, 2, 1, 2, 3}, {2, 1, 3, 2, 2}},
      {{1, 3}, {4000, 1}},   // a long sum for few outputs: TileGrad sums in chunks
      {{300, 300}, {2, 1}},  // many blocks
  };
  uint64_t seed = 200;
  for (const Case& k : cases) {
    INFO("x " << k.x.to_string() << " multiples " << Shape(k.multiples).to_string());
    const Attrs a = Attrs().set("multiples", k.multiples);
    same_on_cuda_in_dtypes("Tile", k.x, a, ++seed);
    Shape g;
    for (int d = 0; d < k.x.rank(); ++d) g.push_back(k.x[d] * k.multiples[d]);
    compare_backends("TileGrad", {random_tensor(g, ++seed, 0, 1), random_tensor(k.x, ++seed)}, a, "cuda", 1e-4, 1e-4);
  }
  same_on_cuda("Tile", {Tensor::from_vector<bool>({2}, {true, false})}, Attrs().set("multiples", Ints{3}));
  check_gradients("Tile", {random_tensor({2, 1, 3}, 220)}, Attrs().set("multiples", Ints{2, 3, 1}), on_cuda());
}

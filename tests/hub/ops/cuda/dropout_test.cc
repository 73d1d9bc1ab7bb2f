// The CUDA Dropout kernel (hub/ops/cuda/dropout.cu). It draws the reference's
// Philox numbers from the same counters, so the two backends agree bit for
// bit; the statistics and structure of the mask, its determinism and the
// gradient are checked on the device as well.
#include "hub/ops/dropout.h"

#include <doctest/doctest.h>

#include <cmath>

#include "hub/backend/backend.h"
#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

Attrs dropout_attrs(float rate, int64_t seed = 0) { return Attrs().set("rate", rate).set("seed", seed); }

// A Dropout node on a placeholder, run by sessions preferring the cuda backend.
struct DropoutGraph {
  Graph g;
  Output x;
  ops::DropoutResult d;
  DropoutGraph(float rate, uint64_t graph_seed, int64_t op_seed = 0) {
    g.set_seed(graph_seed);
    Scope s(g);
    x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 1001}, "x");
    d = ops::dropout_with_mask(s, x, rate, op_seed);
  }
};

SessionOptions cuda_session() {
  SessionOptions o;
  o.backend = &find_backend("cuda");
  return o;
}

}  // namespace

TEST_CASE("cuda Dropout: the reference's mask and values, bit for bit") {
  HUB_SKIP_UNLESS_CUDA();
  for (const Shape& shape : {Shape{7}, Shape{}, Shape{257, 1031}}) {
    Tensor x = random_tensor(shape, 1);
    for (float rate : {0.0f, 0.3f, 0.9f})
      for (int64_t seed : {0, 5}) {
        INFO(x.spec_string() << " rate " << rate << " seed " << seed);
        compare_backends("Dropout", {x}, dropout_attrs(rate, seed), "cuda", 0, 0);
      }
  }
  compare_backends("Dropout", {Tensor(DType::kFloat32, {0, 3})}, dropout_attrs(0.5f), "cuda", 0, 0);
}

TEST_CASE("cuda Dropout: a 0/1 mask kept with probability 1 - rate, kept values x / (1 - rate)") {
  HUB_SKIP_UNLESS_CUDA();
  const float rate = 0.3f;
  DropoutGraph dg(rate, 7);
  Session session(dg.g, nullptr, cuda_session());
  Tensor x = random_tensor({1000, 1001}, 2, -2.0f, 2.0f);
  std::vector<Tensor> out = session.run({{dg.x, x}}, {dg.d.y, dg.d.mask});
  CHECK(session.last_kernels().at(dg.g.node(dg.d.y).name) == "cuda");
  const float scale = static_cast<float>(1.0 / (1.0 - rate));
  const float* px = x.data<float>();
  const float* py = out[0].data<float>();
  const float* pm = out[1].data<float>();
  int64_t kept = 0, wrong_mask = 0, wrong_value = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    wrong_mask += pm[i] != 0.0f && pm[i] != 1.0f;
    kept += pm[i] == 1.0f;
    wrong_value += pm[i] == 1.0f ? py[i] != px[i] * scale : py[i] != 0.0f;
  }
  CHECK(wrong_mask == 0);
  CHECK(wrong_value == 0);
  // 1001000 Bernoulli(0.7) draws: mean 700700, sd ~458.5; allow 5 sd.
  const double n = static_cast<double>(x.num_elements()), sd = std::sqrt(n * 0.7 * 0.3);
  CHECK(std::fabs(static_cast<double>(kept) - 0.7 * n) < 5 * sd);
}

TEST_CASE("cuda Dropout: deterministic for a graph seed and run, varying across runs and seeds") {
  HUB_SKIP_UNLESS_CUDA();
  Tensor x = random_tensor({64, 1001}, 3, 0.5f, 1.5f);
  DropoutGraph a(0.5f, 7), b(0.5f, 7), c(0.5f, 8), d(0.5f, 7, 3);
  Session sa(a.g, nullptr, cuda_session()), sb(b.g, nullptr, cuda_session()), sc(c.g, nullptr, cuda_session()),
      sd(d.g, nullptr, cuda_session());
  Tensor a1 = sa.run({{a.x, x}}, {a.d.mask})[0], a2 = sa.run({{a.x, x}}, {a.d.mask})[0];
  Tensor b1 = sb.run({{b.x, x}}, {b.d.mask})[0], b2 = sb.run({{b.x, x}}, {b.d.mask})[0];
  CHECK(identical(a1, b1));  // same graph seed, same run number
  CHECK(identical(a2, b2));
  CHECK_FALSE(identical(a1, a2));                                 // a new mask each run
  CHECK_FALSE(identical(a1, sc.run({{c.x, x}}, {c.d.mask})[0]));  // the graph seed matters
  CHECK_FALSE(identical(a1, sd.run({{d.x, x}}, {d.d.mask})[0]));  // the op seed matters
  sa.reset_run_counter();
  CHECK(identical(a1, sa.run({{a.x, x}}, {a.d.mask})[0]));
  // Element i's draw does not depend on how many elements there are (counter i).
  DropoutGraph e(0.5f, 7);
  Session se(e.g, nullptr, cuda_session());
  Tensor first = se.run({{e.x, random_tensor({3, 1001}, 4)}}, {e.d.mask})[0];
  se.reset_run_counter();
  Tensor more = se.run({{e.x, random_tensor({64, 1001}, 5)}}, {e.d.mask})[0];
  bool prefix_equal = true;
  for (int64_t i = 0; i < first.num_elements(); ++i)
    prefix_equal = prefix_equal && first.data<float>()[i] == more.data<float>()[i];
  CHECK(prefix_equal);
}

TEST_CASE("cuda Dropout: gradient g * mask / (1 - rate) with the mask held fixed") {
  HUB_SKIP_UNLESS_CUDA();
  Tensor x = random_tensor({3, 50}, 6);
  GradCheckOptions o;
  o.backend = "cuda";
  o.fixed_randomness = true;
  check_gradients("Dropout", {x}, dropout_attrs(0.4f), o);
  // That mask drops some elements and keeps others, so both kinds were checked.
  Tensor mask = run_op("Dropout", {x}, dropout_attrs(0.4f), "cuda")[1];
  int64_t dropped = 0;
  for (float m : mask.to_vector<float>()) dropped += m == 0.0f;
  CHECK(dropped > 0);
  CHECK(dropped < x.num_elements());
}

#include "testutil.h"

#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

// libjpeg needs <cstdio> first.
#include <jpeglib.h>

#include "hub/backend/backend.h"
#include "hub/core/random.h"
#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/registry.h"
#include "hub/ops/state.h"

namespace hub::testing {

namespace {
struct OpGraph {
  Graph graph;
  std::vector<Output> placeholders;
  std::vector<Output> outputs;
};

void build(OpGraph& og, const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  Scope s(og.graph);
  for (size_t i = 0; i < inputs.size(); ++i)
    og.placeholders.push_back(ops::placeholder(s, inputs[i].dtype(), inputs[i].shape(), "in" + std::to_string(i)));
  og.outputs = s.op_n(op, og.placeholders, attrs, "op");
}

FeedList feeds(const OpGraph& og, const std::vector<Tensor>& inputs) {
  FeedList f;
  for (size_t i = 0; i < inputs.size(); ++i) f.push_back({og.placeholders[i], inputs[i]});
  return f;
}

double weighted_sum(const Tensor& out, const Tensor& w) {
  const float* o = out.data<float>();
  const float* pw = w.data<float>();
  double s = 0;
  for (int64_t i = 0; i < out.num_elements(); ++i) s += static_cast<double>(o[i]) * pw[i];
  return s;
}
}  // namespace

std::vector<Tensor> run_op(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                           const std::string& backend) {
  OpGraph og;
  build(og, op, inputs, attrs);
  Session session(og.graph, nullptr, {&find_backend(backend)});
  return session.run(feeds(og, inputs), og.outputs);
}

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t(DType::kFloat32, shape);
  fill_uniform(t.data<float>(), t.num_elements(), seed, lo, hi);
  return t;
}

Tensor make(const Shape& shape, const std::vector<float>& values) { return Tensor::from_vector<float>(shape, values); }

Tensor iota(const Shape& shape, float start) {
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

std::string le32(uint32_t v) {
  std::string s;
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}

void expect_close(const Tensor& got, const Tensor& want, double atol, double rtol) {
  REQUIRE(got.defined());
  REQUIRE(want.defined());
  REQUIRE_MESSAGE(got.dtype() == want.dtype(), got.spec_string() << " vs " << want.spec_string());
  REQUIRE_MESSAGE(got.shape() == want.shape(), got.spec_string() << " vs " << want.spec_string());
  Tensor g = got, w = want;
  int64_t n = got.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    double a, b;
    dispatch_dtype(got.dtype(), [&](auto tag) {
      using T = decltype(tag);
      a = static_cast<double>(g.data<T>()[i]);
      b = static_cast<double>(w.data<T>()[i]);
    });
    bool ok = a == b || std::fabs(a - b) <= atol + rtol * std::fabs(b) || (std::isnan(a) && std::isnan(b));
    if (!ok) {
      FAIL_CHECK("element " << i << " of " << got.spec_string() << ": got " << a << ", want " << b << " (atol " << atol
                            << ", rtol " << rtol << ")");
      return;
    }
  }
}

namespace {
template <class T>
Tensor int_tensor(DType dtype, const Shape& shape, const std::vector<int>& values) {
  Tensor t(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = static_cast<T>(values[i]);
  return t;
}
}  // namespace

Tensor u8(const Shape& shape, const std::vector<int>& values) {
  return int_tensor<uint8_t>(DType::kUInt8, shape, values);
}
Tensor s8(const Shape& shape, const std::vector<int>& values) {
  return int_tensor<int8_t>(DType::kInt8, shape, values);
}

std::vector<int> ints_of(const Tensor& t) {
  std::vector<int> v;
  for (int64_t i = 0; i < t.num_elements(); ++i)
    v.push_back(t.dtype() == DType::kUInt8 ? t.data<uint8_t>()[i] : t.data<int8_t>()[i]);
  return v;
}

namespace {
bool g_skipped = false;
}  // namespace

std::vector<uint8_t> cmyk_jpeg(int h, int w, const uint8_t cmyk[4], bool adobe_marker) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = 4;
  c.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_colorspace(&c, JCS_CMYK);
  c.write_Adobe_marker = adobe_marker;
  jpeg_set_quality(&c, 100, TRUE);
  jpeg_start_compress(&c, TRUE);
  std::vector<uint8_t> row(static_cast<size_t>(w) * 4);
  for (int x = 0; x < w; ++x) std::memcpy(&row[x * 4], cmyk, 4);
  while (c.next_scanline < c.image_height) {
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<uint8_t> out(mem, mem + size);
  jpeg_destroy_compress(&c);
  std::free(mem);
  return out;
}

void note_skip(const std::string& why) {
  g_skipped = true;
  MESSAGE("SKIP: " << why);
}

bool any_skipped() { return g_skipped; }

const Backend* built_cuda_backend() {
  for (const Backend* b : registered_backends())
    if (b->name() == "cuda") return b;
  return nullptr;
}

std::string cuda_unavailable_reason() {
  const Backend* cuda = built_cuda_backend();
  return cuda ? cuda->unavailable_reason() : kNoCudaBuild;
}

namespace {
std::set<std::string>& gradient_checked() {
  static std::set<std::string> ops;
  return ops;
}
}  // namespace

std::vector<std::string> ops_without_gradient_checks() {
  std::vector<std::string> missing;
  for (const std::string& op : OpRegistry::global().op_names())
    if (OpRegistry::global().find(op).grad && !gradient_checked().count(op)) missing.push_back(op);
  return missing;
}

void check_gradients(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                     const GradCheckOptions& o) {
  gradient_checked().insert(op);
  OpGraph og;
  build(og, op, inputs, attrs);
  Scope s(og.graph);
  Output y = og.outputs.at(o.output);
  const TensorSpec& yspec = og.graph.spec(y);
  // Output shape at run time may be partial in the graph; inputs are fully defined here.
  Session probe(og.graph, nullptr, {&find_backend(o.backend)});
  Tensor y0 = probe.run(feeds(og, inputs), {y})[0];
  auto restart = [&](Session& session) {
    if (o.fixed_randomness) session.reset_run_counter();
  };
  Tensor w = random_tensor(y0.shape(), 12345, -1.0f, 1.0f);
  REQUIRE(yspec.dtype == DType::kFloat32);
  std::vector<int> which = o.inputs;
  if (which.empty())
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].dtype() == DType::kFloat32) which.push_back(static_cast<int>(i));
  std::vector<Output> xs;
  for (int i : which) xs.push_back(og.placeholders[i]);
  Output wy = ops::constant(s, w, "w");
  std::vector<Output> grads = gradients(s, y, xs, wy);
  Session session(og.graph, nullptr, {&find_backend(o.backend)});
  std::vector<Output> fetch;
  for (Output g : grads) {
    REQUIRE_MESSAGE(g.valid(), "op " << op << " produced no gradient");
    fetch.push_back(g);
  }
  restart(session);
  std::vector<Tensor> analytic = session.run(feeds(og, inputs), fetch);
  for (size_t k = 0; k < which.size(); ++k) {
    int i = which[k];
    Tensor x = inputs[i].clone();
    std::vector<Tensor> perturbed = inputs;
    perturbed[i] = x;
    float* px = x.data<float>();
    REQUIRE(analytic[k].shape() == x.shape());
    const float* pa = analytic[k].data<float>();
    for (int64_t e = 0; e < x.num_elements(); ++e) {
      float orig = px[e];
      px[e] = static_cast<float>(orig + o.step);
      restart(session);
      double up = weighted_sum(session.run(feeds(og, perturbed), {y})[0], w);
      px[e] = static_cast<float>(orig - o.step);
      restart(session);
      double down = weighted_sum(session.run(feeds(og, perturbed), {y})[0], w);
      px[e] = orig;
      double numeric = (up - down) / (2 * o.step);
      double a = pa[e];
      if (std::fabs(a - numeric) > o.atol + o.rtol * std::fabs(numeric)) {
        FAIL_CHECK("op " << op << ": d/d input " << i << " element " << e << " of " << x.spec_string() << ": autodiff "
                         << a << ", finite difference " << numeric);
        return;
      }
    }
  }
}

void compare_backends(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                      const std::string& backend, double atol, double rtol) {
  REQUIRE_MESSAGE(backend_used(op, inputs, attrs, backend) == backend,
                  op << " did not run on " << backend << " (its kernel fell back)");
  std::vector<Tensor> ref = run_op(op, inputs, attrs, "reference");
  std::vector<Tensor> got = run_op(op, inputs, attrs, backend);
  REQUIRE(ref.size() == got.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    INFO("output " << i << " of " << op << " on " << backend);
    expect_close(got[i], ref[i], atol, rtol);
  }
}

std::string backend_used(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                         const std::string& backend) {
  Graph graph;
  Scope s(graph);
  std::vector<Output> in;
  FeedList feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in.push_back(ops::placeholder(s, inputs[i].dtype(), inputs[i].shape(), "in" + std::to_string(i)));
    feeds.push_back({in.back(), inputs[i]});
  }
  std::vector<Output> outs = s.op_n(op, in, attrs, "op");
  Session session(graph, nullptr, {&find_backend(backend)});
  session.run(feeds, outs);
  return session.last_kernels().at("op");
}

void expect_error(Code code, const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    FAIL("no error thrown, expected " << code_name(code));
  } catch (const Error& e) {
    CHECK_MESSAGE(e.code() == code, std::string(e.what()));
    CHECK_MESSAGE(std::string(e.what()).find(needle) != std::string::npos, std::string(e.what()));
  }
}

}  // namespace hub::testing

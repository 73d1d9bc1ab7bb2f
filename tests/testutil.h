// Shared helpers for op tests: run one op on a backend, compare tensors,
// check gradients against central finite differences, compare backends.
// An op's test then reads as a list of cases (inputs, attributes, expected).
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "fixtures.h"
#include "hub/core/error.h"
#include "hub/graph/graph.h"
#include "hub/ops/attr.h"
#include "hub/tensor/tensor.h"

namespace hub {
class Backend;
}

namespace hub::testing {

// Ends the running test case as skipped when an optional tool or data set is
// missing: tests/main.cc then exits with 77, which meson reports as SKIP. Such
// cases get their own meson test (tests/meson.build, separate_cases) so a
// skip never hides the suite's other results.
#define HUB_SKIP_UNLESS(available, why) \
  do {                                  \
    if (!(available)) {                 \
      ::hub::testing::note_skip(why);   \
      return;                           \
    }                                   \
  } while (0)
void note_skip(const std::string& why);
bool any_skipped();

// The `cuda` backend when this build has one (device or not), else null.
const Backend* built_cuda_backend();
inline constexpr const char* kNoCudaBuild = "this build has no CUDA backend (meson -Dcuda=enabled)";
// Empty when the `cuda` backend is built and has a device, else why not.
// CUDA cases begin with HUB_SKIP_UNLESS_CUDA(), so a suite without a GPU
// reports SKIP.
std::string cuda_unavailable_reason();
#define HUB_SKIP_UNLESS_CUDA()                                                   \
  do {                                                                           \
    const std::string hub_cuda_why_ = ::hub::testing::cuda_unavailable_reason(); \
    HUB_SKIP_UNLESS(hub_cuda_why_.empty(), hub_cuda_why_);                       \
  } while (0)

// A solid h x w JPEG of CMYK samples `cmyk`, written by libjpeg itself
// (jpeg_set_colorspace(JCS_CMYK), quality 100). With `adobe_marker` (what
// Photoshop writes, and libjpeg by default for CMYK) readers take the samples
// as inverted ink; without it, as plain ink.
std::vector<uint8_t> cmyk_jpeg(int h, int w, const uint8_t cmyk[4], bool adobe_marker);

// CHECKs that fn() throws hub::Error with `code` and a message containing `needle`.
void expect_error(Code code, const std::function<void()>& fn, const std::string& needle);

// Builds a graph (placeholders for inputs, one `op` node) and runs it on the
// backend named `backend` (hub/backend/backend.h).
std::vector<Tensor> run_op(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {},
                           const std::string& backend = "reference");

// Uniform in [lo, hi), deterministic for the seed.
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// float32 tensor with the given shape and values.
Tensor make(const Shape& shape, const std::vector<float>& values);
// uint8 / int8 tensors with the given values, and an 8-bit tensor's values as ints.
Tensor u8(const Shape& shape, const std::vector<int>& values);
Tensor s8(const Shape& shape, const std::vector<int>& values);
std::vector<int> ints_of(const Tensor& t);

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();

// tests/js: node scripts and the npm packages (ONNX Runtime, TensorFlow.js)
// that reference checks run.
inline const std::filesystem::path kJsDir = std::filesystem::path(HUB_SOURCE_DIR) / "tests" / "js";

// float32 tensor of `shape` holding start, start + 1, ... in row-major order.
Tensor iota(const Shape& shape, float start = 0);
// Same dtype, shape and bytes.
bool bit_equal(const Tensor& a, const Tensor& b);
// Whether `part` occurs in `text`.
bool contains(const std::string& text, const std::string& part);
// Byte strings for hand-built binary files: `b`'s values as chars, and v as
// 4 little-endian bytes.
std::string bytes(std::initializer_list<int> b);
std::string le32(uint32_t v);

// CHECKs dtype, shape and |got - want| <= atol + rtol*|want| element-wise;
// a failure prints the first differing index and both values.
void expect_close(const Tensor& got, const Tensor& want, double atol = 1e-5, double rtol = 1e-5);

struct GradCheckOptions {
  double step = 1e-2;            // finite-difference step
  double atol = 1e-2;            // absolute tolerance
  double rtol = 1e-2;            // relative tolerance
  std::vector<int> inputs = {};  // which inputs to check (default: every float input)
  int output = 0;                // which output to differentiate
  std::string backend = "reference";
  // Restart the session's run counter before every evaluation, so random
  // ops (Dropout) draw the same values each time (their gradient treats the
  // draw as fixed).
  bool fixed_randomness = false;
};
// `o` checked on the cuda backend: on_cuda(), on_cuda({.step = 1e-3}).
inline GradCheckOptions on_cuda(GradCheckOptions o = {}) {
  o.backend = "cuda";
  return o;
}

// For L = sum(w * op(inputs)[output]) with random w, compares dL/d input from
// autodiff with central finite differences. Records `op` as checked.
void check_gradients(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {},
                     const GradCheckOptions& options = {});

// After a whole suite ran (tests/main.cc, when $HUB_REQUIRE_GRADIENT_CHECKS
// is set): the registered ops that have a gradient but no check_gradients
// case ran for them.
std::vector<std::string> ops_without_gradient_checks();

// Which backend ran `op` (one node, inputs fed through placeholders) in a
// Session preferring `backend`, so a kernel that silently fell back to the
// reference shows up.
std::string backend_used(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                         const std::string& backend = "onednn");

// Runs the op on `backend` and on reference and compares every output. Fails
// when `backend` did not itself run the op (its kernel fell back).
void compare_backends(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                      const std::string& backend, double atol = 1e-4, double rtol = 1e-4);

}  // namespace hub::testing

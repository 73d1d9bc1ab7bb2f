// Shared plumbing for oneDNN kernels (the `onednn` backend).
//
// - One CPU engine and stream for the process (oneDNN runs on the OpenMP pool,
//   the same one hub::parallel_for uses).
// - A primitive cache keyed by a string describing op + shapes + attributes,
//   so a primitive is created once per shape and reused (thread-safe).
// - A weight cache: the reordered (blocked-layout) copy of a weight tensor is
//   kept while the source storage is alive and unchanged: it is keyed on the
//   storage and validated against its generation (Storage::generation,
//   bumped by every mutable access), so inference never reorders the same
//   weights twice and a write through any path invalidates the copy.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "hub/ops/registry.h"
#include "hub/tensor/tensor.h"

namespace hub::onednn {

dnnl::engine& engine();
// A stream for the calling thread.
dnnl::stream& stream();

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// Dims of a tensor as oneDNN dims.
dims to_dims(const Shape& shape);
// oneDNN's data type for float32, int32, int8 and uint8 (Internal otherwise).
dt data_type(DType dtype);
// A memory object viewing a tensor's buffer (its dtype) with the given layout.
dnnl::memory memory(const Tensor& t, const dims& d, tag layout);
dnnl::memory::desc desc(const dims& d, tag layout, dt type = dt::f32);

// Runs reorder src -> dst.
void reorder(const dnnl::memory& src, const dnnl::memory& dst);

// Runs `prim` with `args` on the calling thread's stream and waits for it.
void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args);

// Whether oneDNN's int8 convolutions and products equal exact int32 sums on
// this CPU for any 8-bit weights: only with VNNI. Without it oneDNN adds the
// u8 x s8 products in pairs into int16 with saturation (vpmaddubsw), which
// loses whole units of the result; the quantized fused convolution then
// splits its weights into 7-bit halves (hub/ops/onednn/fused.cc) and
// quantized matmuls run on the reference kernel.
bool int8_exact();

// Common `supports` test: every input is float32 with all dimensions known and
// positive (oneDNN rejects zero-sized tensors), and of rank `rank` when rank >= 0.
bool float32_nonempty(const std::vector<TensorSpec>& inputs, int rank = -1);

// Throws hub::Error(kInternal) "oneDNN kernel for node '<name>' (<op>): <what>".
[[noreturn]] void throw_kernel_error(const KernelContext& c, const dnnl::error& e);

// Kernel wrapper registered in place of kKernel: dnnl::error -> hub::Error
// naming the node (a oneDNN failure is our bug or an unsupported case the
// kernel's `supports` missed; either way callers see one error type).
template <void (*kKernel)(KernelContext&)>
void guarded(KernelContext& c) {
  try {
    kKernel(c);
  } catch (const dnnl::error& e) {
    throw_kernel_error(c, e);
  }
}

// Returns the cached object for key, creating it with make() on first use.
// T is a primitive or primitive-desc bundle; stored as shared_ptr<void>.
std::shared_ptr<void> cached(const std::string& key, const std::function<std::shared_ptr<void>()>& make);
template <class T>
std::shared_ptr<T> cached_as(const std::string& key, const std::function<std::shared_ptr<T>()>& make) {
  return std::static_pointer_cast<T>(cached(key, [&]() -> std::shared_ptr<void> { return make(); }));
}

// The weight tensor `w` reordered to `want` (a desc from a primitive desc);
// memoized on (w's storage, offset, desc) while the storage's generation is
// unchanged.
dnnl::memory reordered_weights(const Tensor& w, const dims& d, tag layout, const dnnl::memory::desc& want);

// reordered_weights() remembered in a kernel's per-node state
// (KernelContext::state()): get() returns the remembered memory while w's
// storage, offset and generation are those it was made from, else asks
// reordered_weights() again. Holds the reordered buffer, so the memory stays
// valid even when the shared cache drops its entry.
class WeightsMemo {
 public:
  // With `prepare`, prepare(w) (a tensor of dims `d` made from w, only when
  // w changed) is what gets reordered, for this memo alone.
  dnnl::memory get(const Tensor& w, const dims& d, tag layout, const dnnl::memory::desc& want,
                   const std::function<Tensor(const Tensor&)>& prepare = {});

 private:
  ContentsStamp stamp_;
  dnnl::memory mem_;
  Tensor holder_;
};

// The oneDNN layout of a hub activation tensor of logical dims {N, C, H, W}:
// NHWC for block 0, else nChw8c / nChw16c (hub/ops/fused.h).
tag activation_tag(int64_t block);

// Stable string for cache keys: "k1,k2,..."
std::string key_of(const dims& d);

}  // namespace hub::onednn

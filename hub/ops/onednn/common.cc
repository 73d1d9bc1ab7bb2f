#include "hub/ops/onednn/common.h"

#include <atomic>
#include <list>

#include "hub/core/error.h"

namespace hub::onednn {

dnnl::engine& engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

dims to_dims(const Shape& shape) { return dims(shape.dims().begin(), shape.dims().end()); }

dt data_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return dt::f32;
    case DType::kInt32:
      return dt::s32;
    case DType::kInt8:
      return dt::s8;
    case DType::kUInt8:
      return dt::u8;
    default:
      throw_error(Code::kInternal, "no oneDNN data type for " + std::string(dtype_name(dtype)));
  }
}

dnnl::memory::desc desc(const dims& d, tag layout, dt type) { return dnnl::memory::desc(d, type, layout); }

dnnl::memory memory(const Tensor& t, const dims& d, tag layout) {
  return dnnl::memory(desc(d, layout, data_type(t.dtype())), engine(), const_cast<void*>(t.raw_data()));
}

void reorder(const dnnl::memory& src, const dnnl::memory& dst) {
  dnnl::reorder(src, dst).execute(stream(), const_cast<dnnl::memory&>(src), const_cast<dnnl::memory&>(dst));
  stream().wait();
}

void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args) {
  prim.execute(stream(), args);
  stream().wait();
}

bool int8_exact() {
  static const bool vnni = [] {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::avx2_vnni:
      case dnnl::cpu_isa::avx512_core_vnni:
      case dnnl::cpu_isa::avx512_core_bf16:
      case dnnl::cpu_isa::avx512_core_amx:
        return true;
      default:
        return false;
    }
  }();
  return vnni;
}

bool float32_nonempty(const std::vector<TensorSpec>& inputs, int rank) {
  for (const TensorSpec& s : inputs) {
    if (s.dtype != DType::kFloat32 || (rank >= 0 && s.shape.rank() != rank)) return false;
    for (int64_t d : s.shape.dims())
      if (d <= 0) return false;
  }
  return true;
}

void throw_kernel_error(const KernelContext& c, const dnnl::error& e) {
  throw_error(Code::kInternal, "oneDNN kernel for node '" + c.node().name + "' (" + c.node().op + "): " + e.what());
}

namespace {
std::mutex g_mu;
std::unordered_map<std::string, std::shared_ptr<void>>& cache() {
  static auto* c = new std::unordered_map<std::string, std::shared_ptr<void>>;
  return *c;
}

struct WeightEntry {
  ContentsStamp stamp;
  dnnl::memory mem;
  Tensor holder;  // owns the reordered buffer
};
std::unordered_map<std::string, WeightEntry>& weights() {
  static auto* w = new std::unordered_map<std::string, WeightEntry>;
  return *w;
}
}  // namespace

std::shared_ptr<void> cached(const std::string& key, const std::function<std::shared_ptr<void>()>& make) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = cache().find(key);
    if (it != cache().end()) return it->second;
  }
  std::shared_ptr<void> value = make();
  std::lock_guard<std::mutex> lock(g_mu);
  return cache().emplace(key, value).first->second;
}

std::string key_of(const dims& d) {
  std::string s;
  for (auto v : d) s += std::to_string(v) + ",";
  return s;
}

namespace {
// w reordered to `want` and the tensor owning its buffer.
std::pair<dnnl::memory, Tensor> reorder_copy(const Tensor& w, const dims& d, tag layout,
                                             const dnnl::memory::desc& want) {
  Tensor holder(DType::kUInt8, Shape{static_cast<int64_t>(want.get_size())});
  dnnl::memory dst(want, engine(), holder.raw_data());
  dnnl::memory src = memory(w, d, layout);
  dnnl::reorder(src, dst).execute(stream(), src, dst);
  stream().wait();
  return {dst, holder};
}

// The reordered copy of w and the tensor owning its buffer (w itself when
// no reorder is needed), shared through the weight cache.
std::pair<dnnl::memory, Tensor> reorder_shared(const Tensor& w, const dims& d, tag layout,
                                               const dnnl::memory::desc& want) {
  dnnl::memory::desc have = desc(d, layout, data_type(w.dtype()));
  if (have == want) return {memory(w, d, layout), w};
  std::string key = std::to_string(reinterpret_cast<uintptr_t>(w.storage().get())) + "@" + std::to_string(w.offset()) +
                    ":" + key_of(d) + ":" + std::to_string(static_cast<int>(layout)) + ":" +
                    std::to_string(std::hash<std::string>{}(
                        std::string(reinterpret_cast<const char*>(&want.data), sizeof(want.data))));
  const ContentsStamp stamp(w);
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = weights().find(key);
  if (it != weights().end() && it->second.stamp.matches(w)) return {it->second.mem, it->second.holder};
  auto [dst, holder] = reorder_copy(w, d, layout, want);
  // Entries of freed tensors (e.g. a filter computed by another op, whose
  // storage is gone) would otherwise pile up with their reordered copies.
  std::erase_if(weights(), [](const auto& kv) { return kv.second.stamp.expired(); });
  weights()[key] = WeightEntry{stamp, dst, holder};
  return {dst, holder};
}
}  // namespace

dnnl::memory reordered_weights(const Tensor& w, const dims& d, tag layout, const dnnl::memory::desc& want) {
  return reorder_shared(w, d, layout, want).first;
}

dnnl::memory WeightsMemo::get(const Tensor& w, const dims& d, tag layout, const dnnl::memory::desc& want,
                              const std::function<Tensor(const Tensor&)>& prepare) {
  if (stamp_.matches(w)) return mem_;
  const ContentsStamp stamp(w);
  auto [mem, holder] = prepare ? reorder_copy(prepare(w), d, layout, want) : reorder_shared(w, d, layout, want);
  mem_ = mem;
  holder_ = holder;
  stamp_ = stamp;
  return mem_;
}

tag activation_tag(int64_t block) { return block == 16 ? tag::nChw16c : block == 8 ? tag::nChw8c : tag::nhwc; }

}  // namespace hub::onednn

#include "hub/ops/variables.h"

#include <cmath>
#include <cstring>

#include "hub/core/random.h"

namespace hub {

Tensor& VariableStore::at(const std::string& name) {
  auto it = vars_.find(name);
  if (it == vars_.end()) throw_error(Code::kNotFound, "no variable named '" + name + "'");
  return it->second;
}

const Tensor& VariableStore::at(const std::string& name) const { return const_cast<VariableStore*>(this)->at(name); }

void VariableStore::set(const std::string& name, Tensor value) { vars_[name] = std::move(value); }

void VariableStore::assign(const std::string& name, const Tensor& value) {
  Tensor& var = at(name);
  if (var.dtype() != value.dtype() || var.shape() != value.shape())
    throw_error(Code::kInvalidArgument,
                "cannot assign " + value.spec_string() + " to variable '" + name + "' of " + var.spec_string());
  if (var.device() != Device::kCPU || value.device() != Device::kCPU)
    throw_error(Code::kFailedPrecondition,
                "cannot assign to variable '" + name + "' on " + std::string(device_name(var.device())) + " from " +
                    std::string(device_name(value.device())) + " here (hub::copy_into copies across devices)");
  std::memcpy(var.raw_data(), value.raw_data(), value.nbytes());
}

std::vector<std::string> VariableStore::names() const {
  std::vector<std::string> out;
  for (auto& [name, t] : vars_) out.push_back(name);
  return out;
}

void VariableStore::initialize(const GraphBuilder& graph, bool overwrite) {
  for (int id : graph.variables()) {
    const Node& n = graph.node(id);
    if (!overwrite && contains(n.name)) continue;
    vars_[n.name] = initial_value(n, graph.seed());
  }
}

namespace {
void fans(const Shape& s, double* fan_in, double* fan_out) {
  if (s.rank() == 0) {
    *fan_in = *fan_out = 1;
  } else if (s.rank() == 1) {
    *fan_in = *fan_out = static_cast<double>(s[0]);
  } else {
    double receptive = 1;
    for (int i = 0; i + 2 < s.rank(); ++i) receptive *= static_cast<double>(s[i]);
    *fan_in = receptive * static_cast<double>(s[s.rank() - 2]);
    *fan_out = receptive * static_cast<double>(s[s.rank() - 1]);
  }
}
}  // namespace

Tensor initial_value(const Node& n, uint64_t graph_seed) {
  const Attrs& a = n.attrs;
  DType dtype = a.get_dtype("dtype");
  const Shape& shape = a.get_shape("shape");
  const std::string& init = a.get_string("initializer");
  const std::vector<double>& p = a.get_floats("init_params");
  uint64_t seed = mix_seed(
      graph_seed, a.get_int("seed") != 0 ? static_cast<uint64_t>(a.get_int("seed")) : std::hash<std::string>{}(n.name));
  auto param = [&](size_t i, double def) { return i < p.size() ? p[i] : def; };
  Tensor t(dtype, shape);
  auto bad = [&](const std::string& why) {
    throw_error(Code::kInvalidArgument, "variable '" + n.name + "' initializer '" + init + "': " + why);
  };
  if (init == "zeros" || init == "ones" || init == "constant") {
    t.fill(init == "zeros" ? 0.0 : init == "ones" ? 1.0 : param(0, 0.0));
    return t;
  }
  if (dtype != DType::kFloat32) bad("random initializers need float32, variable is " + t.spec_string());
  float* out = t.data<float>();
  int64_t count = t.num_elements();
  double fan_in, fan_out;
  fans(shape, &fan_in, &fan_out);
  if (init == "random_uniform") {
    fill_uniform(out, count, seed, static_cast<float>(param(0, -0.05)), static_cast<float>(param(1, 0.05)));
  } else if (init == "random_normal") {
    fill_normal(out, count, seed, static_cast<float>(param(0, 0)), static_cast<float>(param(1, 0.05)));
  } else if (init == "truncated_normal") {
    fill_truncated_normal(out, count, seed, static_cast<float>(param(0, 0)), static_cast<float>(param(1, 0.05)));
  } else if (init == "glorot_uniform") {
    float limit = static_cast<float>(std::sqrt(6.0 / std::max(1.0, fan_in + fan_out)));
    fill_uniform(out, count, seed, -limit, limit);
  } else if (init == "glorot_normal" || init == "variance_scaling") {
    double scale = init == "glorot_normal" ? 1.0 : param(0, 1.0);
    std::string mode = init == "glorot_normal" ? "fan_avg" : a.get_string("init_mode");
    std::string dist = init == "glorot_normal" ? "truncated_normal" : a.get_string("init_distribution");
    double fan = mode == "fan_in"    ? fan_in
                 : mode == "fan_out" ? fan_out
                 : mode == "fan_avg" ? (fan_in + fan_out) / 2
                                     : -1;
    if (fan < 0) bad("init_mode must be fan_in, fan_out or fan_avg, got '" + mode + "'");
    scale /= std::max(1.0, fan);
    if (dist == "truncated_normal") {
      // 0.8796... is the stddev of a standard normal truncated to [-2, 2].
      fill_truncated_normal(out, count, seed, 0, static_cast<float>(std::sqrt(scale) / 0.87962566103423978));
    } else if (dist == "untruncated_normal") {
      fill_normal(out, count, seed, 0, static_cast<float>(std::sqrt(scale)));
    } else if (dist == "uniform") {
      float limit = static_cast<float>(std::sqrt(3.0 * scale));
      fill_uniform(out, count, seed, -limit, limit);
    } else {
      bad("init_distribution must be truncated_normal, untruncated_normal or uniform, got '" + dist + "'");
    }
  } else {
    bad("unknown initializer");
  }
  return t;
}

}  // namespace hub

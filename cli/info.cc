// `hub info MODULE`: signatures, tag sets, variables, attached info, metadata,
// and a quantized module's quantization parameters.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "hub/module/module.h"

namespace hub::cli {
namespace {

std::string spec_text(DType dtype, const Shape& shape) { return std::string(dtype_name(dtype)) + shape.to_string(); }

nlohmann::json dims_json(const Shape& s) {
  nlohmann::json out = nlohmann::json::array();
  for (int64_t d : s.dims()) d == kUnknownDim ? out.push_back(nullptr) : out.push_back(d);
  return out;
}

nlohmann::json attached_json(const AttachedValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  if (auto* f = std::get_if<double>(&v)) return *f;
  return std::get<std::string>(v);
}

std::string attached_text(const AttachedValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* f = std::get_if<double>(&v)) return std::to_string(*f);
  return "\"" + std::get<std::string>(v) + "\"";
}

int64_t param_count(const VariableInfo& v) { return v.shape.num_elements(); }

void print_text(const ModuleSpec& spec) {
  std::printf("module: %s\n", spec.source().c_str());
  const ModuleMetadata& m = spec.metadata();
  std::printf("metadata:\n  name: %s\n  description: %s\n  version: %s\n  license: %s\n  author: %s\n", m.name.c_str(),
              m.description.c_str(), m.version.c_str(), m.license.c_str(), m.author.c_str());
  for (const TagSet& tags : spec.tag_sets()) {
    std::printf("tag set %s:\n", tag_set_string(tags).c_str());
    for (const std::string& name : spec.signature_names(tags)) {
      const SignatureInfo& si = spec.signature(name, tags);
      std::printf("  signature '%s':\n    inputs:\n", name.c_str());
      for (const auto& [k, info] : si.inputs)
        std::printf("      %s: %s (tensor %s)\n", k.c_str(), spec_text(info.dtype, info.shape).c_str(),
                    info.tensor_name.c_str());
      std::printf("    outputs:\n");
      for (const auto& [k, info] : si.outputs)
        std::printf("      %s: %s (tensor %s)\n", k.c_str(), spec_text(info.dtype, info.shape).c_str(),
                    info.tensor_name.c_str());
    }
  }
  std::printf("variables:\n");
  std::printf("  %-40s %-16s %-8s %12s %s\n", "name", "shape", "dtype", "parameters", "trainable");
  int64_t total = 0;
  for (const VariableInfo& v : spec.variables()) {
    int64_t n = param_count(v);
    total += n;
    std::printf("  %-40s %-16s %-8s %12lld %s\n", v.name.c_str(), v.shape.to_string().c_str(),
                std::string(dtype_name(v.dtype)).c_str(), static_cast<long long>(n), v.trainable ? "yes" : "no");
  }
  std::printf("  total: %lld parameters in %zu variables\n", static_cast<long long>(total), spec.variables().size());
  std::printf("attached:\n");
  for (const auto& [k, v] : spec.attached()) std::printf("  %s: %s\n", k.c_str(), attached_text(v).c_str());
  if (spec.attached().count(kImageHeightKey)) {
    auto [h, w] = get_expected_image_size(spec);
    std::printf("image input: %lldx%lld", static_cast<long long>(h), static_cast<long long>(w));
    if (spec.attached().count(kImageChannelsKey))
      std::printf("x%lld", static_cast<long long>(get_num_image_channels(spec)));
    std::printf("\n");
  }
  if (const std::optional<QuantizationInfo>& q = spec.quantization()) {
    std::printf("quantization: int8, calibration %s over %lld examples, weights per %s\n", q->method.c_str(),
                static_cast<long long>(q->calibration_images), q->per_channel ? "output channel" : "tensor");
    std::printf("  activations (uint8):\n  %-48s %12s %5s %12s %12s\n", "tensor", "scale", "zero", "min", "max");
    for (const QuantizedActivation& a : q->activations)
      std::printf("  %-48s %12.6g %5d %12.6g %12.6g\n", a.tensor.c_str(), a.scale, a.zero_point, a.range.min,
                  a.range.max);
    std::printf("  weights (int8, symmetric):\n  %-48s %7s %12s %12s\n", "variable", "scales", "min scale",
                "max scale");
    for (const QuantizedWeights& w : q->weights)
      std::printf("  %-48s %7lld %12.6g %12.6g\n", w.variable.c_str(), static_cast<long long>(w.scales), w.min_scale,
                  w.max_scale);
  }
}

nlohmann::json quantization_json(const QuantizationInfo& q) {
  nlohmann::json j = {{"method", q.method},
                      {"calibration_examples", q.calibration_images},
                      {"per_channel", q.per_channel},
                      {"activations", nlohmann::json::array()},
                      {"weights", nlohmann::json::array()}};
  for (const QuantizedActivation& a : q.activations)
    j["activations"].push_back({{"tensor", a.tensor},
                                {"scale", a.scale},
                                {"zero_point", a.zero_point},
                                {"min", a.range.min},
                                {"max", a.range.max}});
  for (const QuantizedWeights& w : q.weights)
    j["weights"].push_back(
        {{"variable", w.variable}, {"scales", w.scales}, {"min_scale", w.min_scale}, {"max_scale", w.max_scale}});
  return j;
}

nlohmann::json spec_json(const ModuleSpec& spec) {
  nlohmann::json j;
  j["module"] = spec.source();
  const ModuleMetadata& m = spec.metadata();
  j["metadata"] = {{"name", m.name},
                   {"description", m.description},
                   {"version", m.version},
                   {"license", m.license},
                   {"author", m.author}};
  j["tag_sets"] = nlohmann::json::array();
  for (const TagSet& tags : spec.tag_sets()) {
    nlohmann::json t;
    t["tags"] = std::vector<std::string>(tags.begin(), tags.end());
    t["signatures"] = nlohmann::json::object();
    for (const std::string& name : spec.signature_names(tags)) {
      const SignatureInfo& si = spec.signature(name, tags);
      nlohmann::json s;
      for (const auto* part : {&si.inputs, &si.outputs}) {
        nlohmann::json p = nlohmann::json::object();
        for (const auto& [k, info] : *part)
          p[k] = {{"tensor", info.tensor_name}, {"dtype", dtype_name(info.dtype)}, {"shape", dims_json(info.shape)}};
        s[part == &si.inputs ? "inputs" : "outputs"] = p;
      }
      t["signatures"][name] = s;
    }
    j["tag_sets"].push_back(t);
  }
  j["variables"] = nlohmann::json::array();
  int64_t total = 0;
  for (const VariableInfo& v : spec.variables()) {
    total += param_count(v);
    j["variables"].push_back({{"name", v.name},
                              {"dtype", dtype_name(v.dtype)},
                              {"shape", v.shape.dims()},
                              {"parameters", param_count(v)},
                              {"trainable", v.trainable}});
  }
  j["total_parameters"] = total;
  j["attached"] = nlohmann::json::object();
  for (const auto& [k, v] : spec.attached()) j["attached"][k] = attached_json(v);
  if (spec.quantization()) j["quantization"] = quantization_json(*spec.quantization());
  return j;
}

RunFn setup_info(CLI::App& app) {
  struct Opts {
    ModuleArgs module;
    std::string format = "text";
    bool json = false;
    bool graph = false;
  };
  auto o = std::make_shared<Opts>();
  add_module_args(app, o->module, "The module to describe");
  app.add_option("--format", o->format, "Output format: text or json")->check(CLI::IsMember({"text", "json"}));
  app.add_flag("--json", o->json, "Print JSON (as --format json)");
  app.add_flag("--graph", o->graph, "Print each tag set's graph in protobuf text format");
  return [o] {
    ModuleSpec spec = load_module(o->module);
    if (o->graph) {
      for (const TagSet& tags : spec.tag_sets())
        std::printf("# tag set %s\n%s", tag_set_string(tags).c_str(), graph_to_text(spec.graph(tags)).c_str());
      return 0;
    }
    if (o->json || o->format == "json")
      print_json(spec_json(spec));
    else
      print_text(spec);
    return 0;
  };
}

}  // namespace
HUB_REGISTER_COMMAND(info, "Describe a module: signatures, tag sets, variables, metadata", setup_info);
}  // namespace hub::cli

// `hub classify`: label_image — decode, resize to the module's input size, run,
// print the top-k labels with probabilities.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "hub/core/parallel.h"
#include "hub/image/resize.h"
#include "hub/module/module.h"

namespace hub::cli {
namespace {

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_error(Code::kNotFound, "cannot read labels file " + path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

RunFn setup_classify(CLI::App& app) {
  struct Flags {
    ModuleArgs module;
    std::string labels, signature, backend;
    std::vector<std::string> images;
    int top_k = 5;
    int64_t batch_size = 64;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  add_module_args(app, f->module, "The classification module");
  app.add_option("IMAGES", f->images, "Image files (JPEG or PNG)")->required();
  app.add_option("--top_k", f->top_k, "How many labels to print per image")->capture_default_str();
  app.add_option("--labels", f->labels, "Labels file (default: the module's assets/labels.txt)");
  app.add_option("--signature", f->signature,
                 "Signature giving probabilities (default: classification if present, else default)");
  app.add_option("--batch_size", f->batch_size, "Images per call of the module (decoded on all cores)")
      ->capture_default_str();
  app.add_flag("--json", f->json, "Print JSON");
  add_backend_flag(app, f->backend);
  return [f] {
    if (f->top_k < 1) throw_error(Code::kInvalidArgument, "--top_k must be >= 1");
    if (f->batch_size < 1) throw_error(Code::kInvalidArgument, "--batch_size must be >= 1");
    use_backend(f->backend);
    ModuleSpec spec = load_module(f->module);
    std::string sig = f->signature;
    if (sig.empty()) {
      auto names = spec.signature_names();
      sig =
          std::find(names.begin(), names.end(), "classification") != names.end() ? "classification" : kDefaultSignature;
    }
    auto [h, w] = get_expected_image_size(spec);
    int64_t channels = get_num_image_channels(spec);
    std::vector<std::string> labels;
    if (!f->labels.empty())
      labels = read_lines(f->labels);
    else if (!spec.assets_dir().empty() &&
             std::filesystem::exists(std::filesystem::path(spec.assets_dir()) / "labels.txt"))
      labels = read_lines((std::filesystem::path(spec.assets_dir()) / "labels.txt").string());
    Module m(spec);
    const int64_t per = h * w * channels, n = static_cast<int64_t>(f->images.size());
    nlohmann::json out = nlohmann::json::array();
    for (int64_t first = 0; first < n; first += f->batch_size) {
      const int64_t count = std::min(f->batch_size, n - first);
      Tensor batch(DType::kFloat32, {count, h, w, channels});
      float* pixels = batch.data<float>();
      parallel_for(count, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          const Tensor img = image::read_resized(f->images[static_cast<size_t>(first + i)], h, w, channels);
          std::copy(img.data<float>(), img.data<float>() + per, pixels + i * per);
        }
      });
      const Tensor probs = m.call_single(sig, batch);
      if (probs.rank() != 2 || probs.dim(0) != count)
        throw_error(Code::kInvalidArgument, "signature '" + sig + "' of " + f->module.module + " gives " +
                                                probs.spec_string() + ", expected [batch, classes]");
      const int64_t k = probs.dim(1);
      if (!labels.empty() && static_cast<int64_t>(labels.size()) != k)
        throw_error(Code::kInvalidArgument, "the module has " + std::to_string(k) +
                                                " classes but the labels file has " + std::to_string(labels.size()));
      for (int64_t i = 0; i < count; ++i) {
        const std::string& image = f->images[static_cast<size_t>(first + i)];
        const float* row = probs.data<float>() + i * k;
        std::vector<int64_t> order(k);
        for (int64_t j = 0; j < k; ++j) order[j] = j;
        int64_t top = std::min<int64_t>(f->top_k, k);
        std::partial_sort(order.begin(), order.begin() + top, order.end(),
                          [&](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
        nlohmann::json preds = nlohmann::json::array();
        if (!f->json) std::printf("%s\n", image.c_str());
        for (int64_t j = 0; j < top; ++j) {
          std::string label = labels.empty() ? std::to_string(order[j]) : labels[order[j]];
          if (f->json)
            preds.push_back({{"label", label}, {"index", order[j]}, {"probability", row[order[j]]}});
          else
            std::printf("  %-30s %.5f\n", label.c_str(), row[order[j]]);
        }
        if (f->json) out.push_back({{"image", image}, {"predictions", preds}});
      }
    }
    if (f->json) print_json(out);
    return 0;
  };
}

}  // namespace
HUB_REGISTER_COMMAND(classify, "Classify images with a module and print the top labels (label_image)", setup_classify);
}  // namespace hub::cli

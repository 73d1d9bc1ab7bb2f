// `hub quantize MODULE --output_dir OUT --calibration_dir IMAGES
// [--calibration_images 500] [--per_channel] [--calibration_method minmax|percentile]
// [--percentile 99.99] [--batch_size 32] [--overwrite] [--json]`:
// post-training int8 quantization of an image module (hub/module/quantize.h).
// The calibration images are the JPEG/PNG files under IMAGES (recursively,
// sorted by path; when there are more than --calibration_images, that many
// evenly spaced over the sorted list, so every class folder contributes).
// Files that do not decode are skipped with a warning; none decoding is an
// error. A module exported from quantization-aware training carries its
// activation ranges and needs no --calibration_dir.
#include "hub/module/quantize.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <tuple>

#include "cli/command.h"
#include "hub/image/resize.h"

namespace hub::cli {
namespace {

namespace fs = std::filesystem;

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// Up to `count` image files under `dir`, evenly spaced over the sorted list.
std::vector<std::string> calibration_files(const std::string& dir, int64_t count) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw_error(Code::kNotFound, "--calibration_dir " + dir + " is not a directory");
  std::vector<std::string> all;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && is_image_file(it->path())) all.push_back(it->path().string());
  if (ec) throw_error(Code::kInvalidArgument, "--calibration_dir " + dir + ": " + ec.message());
  if (all.empty()) throw_error(Code::kInvalidArgument, "--calibration_dir " + dir + " has no JPEG or PNG files");
  std::sort(all.begin(), all.end());
  if (static_cast<int64_t>(all.size()) <= count) return all;
  std::vector<std::string> picked;
  for (int64_t i = 0; i < count; ++i)
    picked.push_back(all[static_cast<size_t>(i * static_cast<int64_t>(all.size()) / count)]);
  return picked;
}

// The module's input image size (height, width, channels).
std::tuple<int64_t, int64_t, int64_t> image_input(const ModuleSpec& spec, const std::string& name) {
  try {
    const auto [h, w] = get_expected_image_size(spec);
    return {h, w, spec.attached().count(kImageChannelsKey) ? get_num_image_channels(spec) : 3};
  } catch (const Error&) {
    throw_error(Code::kInvalidArgument,
                "module " + name + " declares no image input size; hub quantize calibrates image modules");
  }
}

RunFn setup_quantize(CLI::App& app) {
  struct Flags {
    ModuleArgs module;
    std::string output_dir, calibration_dir, method = "minmax";
    int64_t calibration_images = 500, batch_size = 32;
    double percentile = 99.99;
    bool per_channel = false, overwrite = false, json = false;
  };
  auto f = std::make_shared<Flags>();
  add_module_args(app, f->module, "The float image module to quantize");
  app.add_option("--output_dir", f->output_dir, "Where to write the int8 module")->required();
  app.add_option("--calibration_dir", f->calibration_dir,
                 "Folder of representative JPEG/PNG images (searched recursively); not needed for a module from "
                 "quantization-aware training");
  app.add_option("--calibration_images", f->calibration_images, "How many images calibrate the activation ranges")
      ->capture_default_str();
  app.add_flag("--per_channel", f->per_channel, "Quantize weights per output channel (default: per tensor)");
  app.add_option("--calibration_method", f->method, "Activation ranges: minmax, or percentile (clips outliers)")
      ->capture_default_str();
  app.add_option("--percentile", f->percentile, "The percentile for --calibration_method percentile")
      ->capture_default_str();
  app.add_option("--batch_size", f->batch_size, "Calibration images per forward pass")->capture_default_str();
  app.add_flag("--overwrite", f->overwrite, "Replace --output_dir if it exists");
  app.add_flag("--json", f->json, "Print JSON: layers, activations, examples, notes, output_dir");
  return [f] {
    if (f->calibration_images < 1) throw_error(Code::kInvalidArgument, "--calibration_images must be >= 1");
    if (f->batch_size < 1) throw_error(Code::kInvalidArgument, "--batch_size must be >= 1");
    if (f->method != "minmax" && f->method != "percentile")
      throw_error(Code::kInvalidArgument, "--calibration_method must be minmax or percentile, got '" + f->method + "'");
    if (!(f->percentile > 50 && f->percentile <= 100))
      throw_error(Code::kInvalidArgument, "--percentile must be in (50, 100], got " + std::to_string(f->percentile));
    const std::vector<std::string> files = f->calibration_dir.empty()
                                               ? std::vector<std::string>{}
                                               : calibration_files(f->calibration_dir, f->calibration_images);
    ModuleSpec spec = load_module(f->module);
    int64_t h = 0, w = 0, channels = 3;
    if (!files.empty()) std::tie(h, w, channels) = image_input(spec, f->module.module);
    const int64_t per = h * w * channels;
    bool first_pass = true;
    int64_t decoded = 0;
    CalibrationData calibration = [&](const std::function<void(const Tensor&)>& feed) {
      std::vector<Tensor> images;
      auto flush = [&] {
        if (images.empty()) return;
        Tensor batch(DType::kFloat32, Shape{static_cast<int64_t>(images.size()), h, w, channels});
        for (size_t i = 0; i < images.size(); ++i)
          std::copy(images[i].data<float>(), images[i].data<float>() + per,
                    batch.data<float>() + static_cast<int64_t>(i) * per);
        images.clear();
        feed(batch);
      };
      for (const std::string& path : files) {
        try {
          images.push_back(image::read_resized(path, h, w, channels));
          decoded += first_pass;
        } catch (const Error& e) {
          if (first_pass) std::fprintf(stderr, "hub quantize: skipping %s\n", e.message().c_str());
          continue;
        }
        if (static_cast<int64_t>(images.size()) == f->batch_size) flush();
      }
      flush();
      if (first_pass && decoded == 0)
        throw_error(Code::kInvalidArgument, "--calibration_dir " + f->calibration_dir + ": none of its " +
                                                std::to_string(files.size()) + " image files decodes");
      first_pass = false;
    };
    QuantizeOptions options;
    options.per_channel = f->per_channel;
    options.method = f->method;
    options.percentile = f->percentile;
    QuantizeReport report;
    options.no_calibration_hint = "give --calibration_dir";
    const ModuleSpec quantized =
        quantize_module(spec, files.empty() ? CalibrationData() : calibration, options, &report);
    try {
      Module(quantized).export_to(f->output_dir, f->overwrite ? ExistingTarget::kReplace : ExistingTarget::kRefuse);
    } catch (const Error& e) {
      throw Error(e.code(), "--output_dir " + e.message() + (f->overwrite ? "" : " (--overwrite replaces it)"));
    }
    if (f->json) {
      print_json({{"module", f->module.module},
                  {"output_dir", f->output_dir},
                  {"layers", report.layers},
                  {"activations", report.activations},
                  {"examples", report.examples},
                  {"notes", report.notes}});
      return 0;
    }
    for (const std::string& note : report.notes) std::printf("note: %s\n", note.c_str());
    std::printf("quantized %d layers to int8 (%d activation tensors, %s calibration over %lld images); wrote %s\n",
                report.layers, report.activations, f->method.c_str(), static_cast<long long>(report.examples),
                f->output_dir.c_str());
    return 0;
  };
}

}  // namespace
HUB_REGISTER_COMMAND(quantize, "Quantize an image module to int8 with calibration images (post-training)",
                     setup_quantize);
}  // namespace hub::cli

// `hub import SRC --output_dir DIR`: a TensorFlow SavedModel, TF Hub module,
// TF.js graph model or ONNX model (format detected from the content) -> a
// hub module (hub/interop/import.h, docs/import.md).
#include "hub/interop/import.h"

#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/command.h"
#include "hub/core/fileio.h"

namespace hub::cli {
namespace {

// "a,b" -> {a, b}; "" -> {} (the inference tag set).
TagSet import_tag_set(const std::string& text) {
  TagSet tags;
  std::stringstream ss(text);
  for (std::string tag; std::getline(ss, tag, ',');)
    if (!tag.empty()) tags.insert(tag);
  return tags;
}

RunFn setup_import(CLI::App& app) {
  struct Opts {
    std::string src, output_dir, feature_output, labels;
    std::vector<std::string> tag_sets;
    std::vector<int64_t> image_size;
    std::vector<double> mean, std, input_range;
    bool image_signatures = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("SRC", o->src,
                 "A SavedModel or TF Hub module folder, a TF.js model.json (or its folder), or an "
                 "ONNX file")
      ->required();
  app.add_option("--output_dir", o->output_dir, "The module folder to write (must not exist)")
      ->required();
  app.add_option(
      "--tag_set", o->tag_sets,
      "SavedModel / TF Hub: import only this tag set, comma-separated ('' = the inference set {}; "
      "repeatable; default all)");
  app.add_option("--image_size", o->image_size, "ONNX: image height and width, H,W")
      ->delimiter(',')
      ->expected(2);
  app.add_option("--mean", o->mean, "ONNX: per-channel mean subtracted from the scaled image")
      ->delimiter(',');
  app.add_option("--std", o->std, "ONNX: per-channel standard deviation the image is divided by")
      ->delimiter(',');
  app.add_option("--input_range", o->input_range,
                 "ONNX: the range LO,HI images in [0, 1] are scaled to")
      ->delimiter(',')
      ->expected(2);
  app.add_flag(
      "--image_signatures", o->image_signatures,
      "ONNX: add image_feature_vector and image_classification signatures with the defaults");
  app.add_option("--feature_output", o->feature_output,
                 "ONNX: the value the feature vector is read from");
  app.add_option("--labels", o->labels,
                 "ONNX: class names, one per line (written as assets/labels.txt)");
  return [o] {
    interop::ImportOptions io;
    for (const std::string& t : o->tag_sets) io.tag_sets.push_back(import_tag_set(t));
    io.onnx.image_size = o->image_size;
    io.onnx.mean = o->mean;
    io.onnx.std = o->std;
    io.onnx.input_range = o->input_range;
    io.onnx.image_signatures = o->image_signatures;
    io.onnx.feature_output = o->feature_output;
    if (!o->labels.empty()) io.onnx.labels = read_file_bytes(o->labels, int64_t{64} << 20);
    ModuleSpec spec = interop::import_to_directory(o->src, o->output_dir, io);
    auto format = spec.attached().find("source_format");
    std::printf(
        "imported %s (%s) -> %s\n", o->src.c_str(),
        format != spec.attached().end() ? std::get<std::string>(format->second).c_str() : "?",
        o->output_dir.c_str());
    for (const TagSet& tags : spec.tag_sets()) {
      std::printf("  tag set %s: signatures", tag_set_string(tags).c_str());
      for (const std::string& s : spec.signature_names(tags)) std::printf(" %s", s.c_str());
      std::printf("\n");
    }
    std::printf("  %zu variables\n", spec.variables().size());
    return 0;
  };
}

}  // namespace

HUB_REGISTER_COMMAND(
    import, "Import a SavedModel, TF Hub module, TF.js graph model or ONNX model as a module",
    setup_import);

}  // namespace hub::cli

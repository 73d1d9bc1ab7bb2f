// `hub convert MODULE --to savedmodel|onnx --output PATH`: a hub module as a
// TensorFlow SavedModel (hub/interop/tf/saved_model_export.h) or an ONNX
// model (hub/interop/onnx/exporter.h); docs/import.md.
#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/command.h"
#include "hub/interop/onnx/exporter.h"
#include "hub/interop/tf/saved_model_export.h"

namespace hub::cli {
namespace {

RunFn setup_convert(CLI::App& app) {
  struct Opts {
    std::string module, to, output, tags, signature;
    int opset = 0;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("MODULE", o->module, "Module directory (or handle)")->required();
  app.add_option("--to", o->to, "Target format")
      ->required()
      ->check(CLI::IsMember({"savedmodel", "onnx"}));
  app.add_option("--output", o->output,
                 "The SavedModel folder or ONNX file to write (must not exist)")
      ->required();
  app.add_option("--tags", o->tags,
                 "savedmodel: the module's tag set to export, comma-separated (default {})");
  app.add_option("--signature", o->signature, "onnx: the signature to export (default 'default')");
  app.add_option("--opset", o->opset, "onnx: the opset to write, 13..17 (default 13)");
  return [o] {
    ModuleSpec spec = load_module_spec(o->module);
    if (o->to == "savedmodel") {
      if (!o->signature.empty() || o->opset)
        throw_error(
            Code::kInvalidArgument,
            "--signature and --opset apply to --to onnx only (a SavedModel holds every signature)");
      tf::SavedModelExportOptions so;
      std::stringstream ss(o->tags);
      for (std::string tag; std::getline(ss, tag, ',');)
        if (!tag.empty()) so.tags.insert(tag);
      tf::export_saved_model(spec, o->output, so);
      std::printf("wrote TensorFlow SavedModel %s (tag serve; signatures of tag set %s)\n",
                  o->output.c_str(), tag_set_string(so.tags).c_str());
    } else {
      if (!o->tags.empty())
        throw_error(Code::kInvalidArgument, "--tags applies to --to savedmodel only");
      onnx_interop::OnnxExportOptions eo;
      if (!o->signature.empty()) eo.signature = o->signature;
      if (o->opset) eo.opset = o->opset;
      onnx_interop::export_onnx(spec, o->output, eo);
      std::printf("wrote ONNX model %s (signature %s, opset %d)\n", o->output.c_str(),
                  eo.signature.c_str(), eo.opset);
    }
    return 0;
  };
}

}  // namespace

HUB_REGISTER_COMMAND(convert, "Write a module as a TensorFlow SavedModel or an ONNX model",
                     setup_convert);

}  // namespace hub::cli

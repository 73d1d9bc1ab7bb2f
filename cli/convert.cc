// `hub convert MODULE --to savedmodel|onnx --output PATH [--overwrite]
// [--json]`: a hub module (any handle the resolver takes) as a TensorFlow
// SavedModel (hub/interop/tf/saved_model_export.h) or an ONNX model
// (hub/interop/onnx/exporter.h); docs/import.md.
#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/command.h"
#include "hub/interop/onnx/exporter.h"
#include "hub/interop/tf/saved_model_export.h"

namespace hub::cli {
namespace {

struct ConvertArgs {
  ModuleArgs module;
  std::string to, output, tags, signature;
  int opset = 0;
  bool overwrite = false;
  bool json = false;
};

// Runs `write`; an existing --output says how to replace it.
template <class F>
void with_output_hint(F write) {
  try {
    write();
  } catch (const Error& e) {
    if (e.code() != Code::kAlreadyExists) throw;
    throw Error(e.code(), "--output " + e.message() + " (--overwrite replaces it)");
  }
}

RunFn setup_convert(CLI::App& app) {
  auto o = std::make_shared<ConvertArgs>();
  add_module_args(app, o->module, "The module to convert");
  app.add_option("--to", o->to, "Target format: savedmodel or onnx")
      ->required()
      ->check(CLI::IsMember({"savedmodel", "onnx"}));
  app.add_option("--output", o->output,
                 "The SavedModel folder or ONNX file to write (written under a temporary name and "
                 "renamed into place)")
      ->required();
  app.add_flag("--overwrite", o->overwrite,
               "Replace --output if it exists (default: refuse an existing file or non-empty folder)");
  app.add_option("--tags", o->tags, "savedmodel: the module's tag set to export, comma-separated (default {})");
  app.add_option("--signature", o->signature, "onnx: the signature to export (default 'default')");
  app.add_option("--opset", o->opset,
                 "onnx: the opset to write, 13..17 (default: the lowest from 13 that has every op the module uses)");
  app.add_flag("--json", o->json, "Print JSON: module, to, output, and tags or signature and opset");
  // Flags of the other target are usage errors (exit 2).
  app.parse_complete_callback([o] {
    if (o->to == "savedmodel" && (!o->signature.empty() || o->opset))
      throw CLI::ValidationError("--signature, --opset",
                                 "apply to --to onnx only (a SavedModel holds every signature)");
    if (o->to == "onnx" && !o->tags.empty()) throw CLI::ValidationError("--tags", "applies to --to savedmodel only");
  });
  return [o] {
    ModuleSpec spec = load_module(o->module, o->json);
    nlohmann::json doc = {{"module", o->module.module}, {"to", o->to}, {"output", o->output}};
    if (o->to == "savedmodel") {
      tf::SavedModelExportOptions so;
      std::stringstream ss(o->tags);
      for (std::string tag; std::getline(ss, tag, ',');)
        if (!tag.empty()) so.tags.insert(tag);
      so.existing = o->overwrite ? ExistingTarget::kReplace : ExistingTarget::kReplaceEmptyDir;
      with_output_hint([&] { tf::export_saved_model(spec, o->output, so); });
      doc["tags"] = std::vector<std::string>(so.tags.begin(), so.tags.end());
      if (!o->json)
        std::printf("wrote TensorFlow SavedModel %s (tag serve; signatures of tag set %s)\n", o->output.c_str(),
                    tag_set_string(so.tags).c_str());
    } else {
      onnx_interop::OnnxExportOptions eo;
      if (!o->signature.empty()) eo.signature = o->signature;
      if (o->opset) eo.opset = o->opset;
      eo.overwrite = o->overwrite;
      int opset = 0;
      with_output_hint([&] { opset = onnx_interop::export_onnx(spec, o->output, eo); });
      doc["signature"] = eo.signature;
      doc["opset"] = opset;
      if (!o->json)
        std::printf("wrote ONNX model %s (signature %s, opset %d)\n", o->output.c_str(), eo.signature.c_str(), opset);
    }
    if (o->json) print_json(doc);
    return 0;
  };
}

}  // namespace

HUB_REGISTER_COMMAND(convert, "Write a module as a TensorFlow SavedModel or an ONNX model", setup_convert);

}  // namespace hub::cli

// Other ecosystems' models -> hub modules: format detection and dispatch, the
// one entry point of `hub import` and of the resolver's conversion of foreign
// archives (docs/import.md).
//
//   hub::interop::import_to_directory("mobilenet_tfhub/", "cache/abc123");
//
// The format comes from the content, never from a name alone:
//   TF Hub module      a folder holding tfhub_module.pb (and a SavedModel)
//   SavedModel         a folder holding saved_model.pb
//   TF.js graph model  a model.json file (or a folder holding one) whose JSON
//                      is a graph model
//   ONNX               a file whose top-level protobuf fields are those of an
//                      ONNX ModelProto (ir_version, graph, opset_import ...);
//                      a file cut short after its ir_version counts too, so
//                      the ONNX importer reports it as truncated
//   TF checkpoint      a checkpoint prefix (model.ckpt-123, whose .index is a
//                      tensor bundle), its .index file, or a training folder
//                      with a `checkpoint` file: recognised, but it holds
//                      variables and no graph, so importing it is an error
//                      saying how to use it (--checkpoint_path)
// Anything else is InvalidArgument "unrecognized format: expected ...",
// naming what was found (a hub module folder is told apart). Archives of
// these (a TF Hub module .tar.gz) are the resolver's: it unpacks them and
// calls import_to_directory() when it installs them into the cache.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hub/core/fileio.h"
#include "hub/interop/onnx/importer.h"
#include "hub/module/module.h"

namespace hub::interop {

enum class Format { kTfHubModule, kSavedModel, kTfjsGraphModel, kOnnx, kTfCheckpoint };

// "TF Hub module", "SavedModel", "TF.js graph model", "ONNX", "TF checkpoint".
std::string_view format_name(Format format);

// The format of `path`, or nullopt when it is none of them. Never throws.
std::optional<Format> recognize_format(const std::string& path);
// As recognize_format, but throws InvalidArgument naming `path` and the
// formats accepted (NotFound when `path` does not exist).
Format detect_format(const std::string& path);

struct ImportOptions {
  // SavedModels and TF Hub modules: the tag sets to import (as hub names
  // them: a SavedModel's {"serve"} is {}); empty: all.
  std::vector<TagSet> tag_sets;
  // ONNX models: image conventions and labels (hub/interop/onnx/importer.h).
  onnx_interop::OnnxImportOptions onnx;
};

// "" for the default options, else a canonical text of those set (the
// labels by their SHA-256): equal options give equal text. The resolver keys
// and describes conversions with it.
std::string options_key(const ImportOptions& options);

// Imports `path` in its detected format. Errors are those of the format's
// importer (naming the file, node and op), with "importing <path> (<format>)"
// as context. Options that do not apply to the format are InvalidArgument.
ModuleSpec import_model(const std::string& path, const ImportOptions& options = {});

// import_model(), then the module written to `output_dir` (which must not
// exist unless `existing` allows replacing it; written to a temporary
// sibling and renamed into place, so it appears complete or not at all; the
// target is checked before importing). Returns the imported spec.
ModuleSpec import_to_directory(const std::string& path, const std::string& output_dir,
                               const ImportOptions& options = {}, ExistingTarget existing = ExistingTarget::kRefuse);

}  // namespace hub::interop

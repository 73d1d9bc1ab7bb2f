// TensorFlow SavedModels and TF Hub (TF1) modules -> hub modules
// (docs/import.md).
//
// A SavedModel folder holds saved_model.pb (a SavedModel: MetaGraphDefs, each
// a GraphDef with its tags, signatures, saver and collections), variables/
// (the tensor bundle variables/variables.index + data files, see bundle.h)
// and assets/. A TF Hub module in TensorFlow 1's format is a SavedModel plus
// tfhub_module.pb (a ModuleDef of format 3), with graphs tagged {} (inference)
// and {"train"}, a `default` signature, and attached messages such as
// "image_module_info" (the expected image size) in each graph's
// "hub_module_attachments" collection.
//
// Each MetaGraphDef becomes one tag set of the module, with its tags (a
// SavedModel's {"serve"} becomes hub's inference set {} when the SavedModel
// has no {} graph). Each SignatureDef becomes a signature under its name
// ("serving_default" is also available as `default` when there is none); the
// graph is imported from the signatures' outputs back to their inputs
// (graph_import.h), so savers, initializers and training ops are not
// reached. Variables take their values from the bundle under the key the
// graph's restore ops (Assign/AssignVariableOp of RestoreV2) read into them,
// else under their own name; TensorFlow 2 exports (signatures and savers in
// library functions, VarHandleOp + ReadVariableOp) import the same way.
// Trainable variables are those of the "trainable_variables" collection when
// the graph has one. A SavedModel without variables/ is a frozen graph: its
// float Consts used as weights become variables. The module records attached source_format,
// source_sha256 (of saved_model.pb), source_producer (the TensorFlow
// version) and imported_at.
//
// Errors name the folder and file: a missing or unparsable saved_model.pb or
// tfhub_module.pb (Corruption), a damaged bundle (as BundleReader), a
// missing variable, an unknown tag set, a sparse signature tensor, and every
// graph error of import_graph. Nothing is written.
#pragma once

#include <string>
#include <vector>

#include "hub/module/module.h"

namespace hub::tf {

struct SavedModelImportOptions {
  // The tag sets to import (each must exist); empty: all of them.
  std::vector<TagSet> tag_sets;
};

// The folder holds saved_model.pb (a SavedModel, or a TF Hub module's).
bool is_saved_model_dir(const std::string& dir);
// The folder holds tfhub_module.pb.
bool is_tfhub_module_dir(const std::string& dir);

ModuleSpec import_saved_model(const std::string& dir, const SavedModelImportOptions& options = {});

// A TF Hub module: checks tfhub_module.pb (format 3, no required features),
// imports the SavedModel, and attaches the expected image size
// (image_height, image_width, image_channels = 3) from the image_module_info
// attachment, else from the static height and width of the `default`
// signature's `images` input, as TF Hub's get_expected_image_size does.
ModuleSpec import_tfhub_module(const std::string& dir, const SavedModelImportOptions& options = {});

}  // namespace hub::tf

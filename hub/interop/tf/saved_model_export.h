// hub modules -> TensorFlow 1 SavedModels (docs/import.md, "Export to
// TensorFlow"): what retrain.py's --saved_model_dir wrote for TensorFlow
// Serving, and what tf.compat.v1.saved_model.load / TensorFlow 2's
// tf.saved_model.load read.
//
//   DIR/saved_model.pb        a SavedModel with one MetaGraphDef, tagged
//                             `saved_model_tags` ("serve"): the GraphDef of
//                             TensorFlow ops (producer version 27, ops that
//                             TensorFlow 1.13 and later run), a SaverDef and
//                             its save/restore subgraph, the "variables" and
//                             "trainable_variables" collections, and one
//                             SignatureDef per signature of the tag set
//                             (method tensorflow/serving/predict; `default`
//                             is named serving_default)
//   DIR/variables/variables.{index,data-00000-of-00001}
//                             the variables' values (bundle.h), under their
//                             names
//   DIR/assets/               the module's assets (e.g. labels.txt)
//
// Each hub variable becomes a VariableV2 `name` read through `name/read`,
// with a zero initializer `name/Assign` (TensorFlow restores the values from
// the bundle). Each hub op maps through the one op mapping (ops.h); only the
// nodes the signatures' outputs need are written. import_saved_model() reads
// the result back to the same module (same variable names, signatures and
// outputs).
//
// Errors (before anything is written): an unknown tag set, a hub op without
// TensorFlow equivalent or an attribute value TensorFlow cannot express (one
// error naming every such node and op), DIR existing when `existing` does
// not allow replacing it (AlreadyExists). Writing goes to a temporary sibling
// renamed into place (StagingDir), so DIR appears complete or not at all.
#pragma once

#include <string>
#include <vector>

#include "hub/module/module.h"

namespace hub::tf {

struct SavedModelExportOptions {
  TagSet tags;                                            // the module's tag set to export
  std::vector<std::string> saved_model_tags = {"serve"};  // the MetaGraphDef's tags
  ExistingTarget existing = ExistingTarget::kRefuse;      // what may be replaced at DIR
};

void export_saved_model(const ModuleSpec& spec, const std::string& dir, const SavedModelExportOptions& options = {});

}  // namespace hub::tf

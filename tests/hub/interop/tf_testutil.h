// Building TensorFlow files by hand for the TensorFlow interop tests:
// GraphDefs node by node through hub's copies of TensorFlow's schemas
// (hub/interop/tf/proto/, field numbers from TensorFlow's .proto files), the
// TF1 saver subgraph that maps checkpoint keys to variables, SavedModel and
// TF Hub module folders. Nothing here uses the importer or exporter under
// test.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hub/interop/tf/proto/graph.pb.h"
#include "hub/interop/tf/proto/meta_graph.pb.h"
#include "hub/interop/tf/proto/saved_model.pb.h"
#include "hub/module/module.h"

namespace hub::testing {

namespace tfp = hub::tf::proto;

// TensorFlow's DataType numbers.
inline constexpr int kTfFloat = 1, kTfInt32 = 3, kTfString = 7, kTfInt64 = 9, kTfHalf = 19, kTfResource = 20;

// Attribute setters on a NodeDef.
void attr_type(tfp::NodeDef& n, const std::string& key, int tf_dtype);
void attr_int(tfp::NodeDef& n, const std::string& key, int64_t v);
void attr_float(tfp::NodeDef& n, const std::string& key, float v);
void attr_bool(tfp::NodeDef& n, const std::string& key, bool v);
void attr_string(tfp::NodeDef& n, const std::string& key, const std::string& v);
void attr_ints(tfp::NodeDef& n, const std::string& key, const std::vector<int64_t>& v);
void attr_strings(tfp::NodeDef& n, const std::string& key, const std::vector<std::string>& v);
void attr_shape(tfp::NodeDef& n, const std::string& key,
                const std::vector<int64_t>& dims);  // -1 unknown

// A GraphDef under construction. Each add_* returns the node for more
// attributes; the helpers returning a string return the tensor name.
class TfGraph {
 public:
  explicit TfGraph(tfp::GraphDef* graph) : g_(graph) {}
  tfp::NodeDef& add(const std::string& name, const std::string& op, std::vector<std::string> inputs = {});
  // Const with tensor_content (float32/int32/int64 hub tensors).
  std::string constant(const std::string& name, const Tensor& value);
  // Const DT_STRING.
  std::string strings(const std::string& name, const std::vector<std::string>& values);
  std::string placeholder(const std::string& name, const std::vector<int64_t>& shape, int tf_dtype = kTfFloat);
  // VariableV2 `name` (float) and its snapshot `name/read`; returns the snapshot.
  std::string variable_v2(const std::string& name, const std::vector<int64_t>& shape);
  // VarHandleOp `name` (float, shared_name = name) and a ReadVariableOp
  // `name/Read/ReadVariableOp`; returns the read.
  std::string resource_variable(const std::string& name, const std::vector<int64_t>& shape);
  // A float op with T set: op(inputs).
  tfp::NodeDef& op(const std::string& name, const std::string& op, std::vector<std::string> inputs);
  // The TF1 saver: save/Const (the filename), save/RestoreV2 reading `keys`
  // (variable node -> checkpoint key), save/Assign_k (AssignVariableOp for a
  // VarHandleOp) and save/restore_all. Returns the SaverDef.
  tfp::SaverDef saver(const std::vector<std::pair<std::string, std::string>>& keys);
  tfp::GraphDef& graph() { return *g_; }

 private:
  tfp::GraphDef* g_;
};

// A signature of dense tensors: key -> (tensor name, hub dtype, shape).
struct TfTensor {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
};
tfp::SignatureDef tf_signature(const std::map<std::string, TfTensor>& inputs,
                               const std::map<std::string, TfTensor>& outputs);

// Writes dir/saved_model.pb and, when `variables` is not empty,
// dir/variables/variables.{index,data-00000-of-00001}.
void write_saved_model(const std::string& dir, const tfp::SavedModel& model,
                       const std::map<std::string, Tensor>& variables);
// Writes dir/tfhub_module.pb (format 3).
void write_tfhub_module_def(const std::string& dir);
// The serialized ModuleAttachment "image_module_info" holding an
// ImageModuleInfo of the given size.
std::string image_module_info_attachment(int height, int width);

}  // namespace hub::testing

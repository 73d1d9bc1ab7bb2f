// Modules: reusable, self-contained networks (graph + weights + signatures),
// the C++ counterpart of TF Hub's hub.Module.
//
//   // A builder function adds variables and signatures to a graph.
//   void half_plus_two(hub::ModuleBuilder& b, const hub::Attrs&) {
//     hub::Scope s = b.scope();
//     auto a = hub::ops::variable(s, "a", {});
//     auto c = hub::ops::variable(s, "b", {});
//     auto x = hub::ops::placeholder(s, hub::DType::kFloat32, {hub::kUnknownDim}, "x");
//     b.add_signature("default", {{"x", x}}, {{"y", hub::ops::add(s, hub::ops::mul(s, a, x), c)}});
//   }
//   hub::ModuleSpec spec = hub::create_module_spec(half_plus_two);
//   hub::Module m(spec);
//   m.variable_map().at("a").assign(0.5f);
//   m.export_to("/tmp/half_plus_two");
//   hub::Module loaded(hub::load_module_spec("/tmp/half_plus_two"));
//   hub::Tensor y = loaded(hub::Tensor::floats({10, 3, 4}));   // {7, 3.5, 4}
//
// A ModuleSpec is immutable and cheap to copy (shared). A Module owns its own
// graph copy and VariableStore, so several Modules of one spec are
// independent. Neither is thread-safe for concurrent calls on one Module.
// Every failure is a hub::Error naming the module, signature, tensor or file.
// The on-disk format is specified in docs/module-format.md.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "hub/core/fileio.h"
#include "hub/graph/graph.h"
#include "hub/graph/optimize/quantize.h"
#include "hub/ops/attr.h"
#include "hub/ops/variables.h"
#include "hub/tensor/tensor.h"

namespace hub {

class Session;

using TensorMap = std::map<std::string, Tensor>;
using OutputMap = std::map<std::string, Output>;
// A set of tags naming one graph of a module: {} inference, {"train"} training.
using TagSet = std::set<std::string>;

inline constexpr const char* kDefaultSignature = "default";
// Well-known attached-info keys (int64 values).
inline constexpr const char* kImageHeightKey = "image_height";
inline constexpr const char* kImageWidthKey = "image_width";
inline constexpr const char* kImageChannelsKey = "image_channels";

// One input or output of a signature.
struct TensorInfo {
  std::string tensor_name;  // in the tag set's graph: "node" or "node:i"
  DType dtype = DType::kFloat32;
  Shape shape;  // may have unknown dims (kUnknownDim)
};

struct SignatureInfo {
  std::map<std::string, TensorInfo> inputs;
  std::map<std::string, TensorInfo> outputs;
};

struct VariableInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;
  bool trainable = true;
};

struct ModuleMetadata {
  std::string name, description, version, license, author;
};

using AttachedValue = std::variant<int64_t, double, std::string>;

// How a quantized module was made (`hub quantize`, hub/module/quantize.h).
struct QuantizationInfo {
  std::string method;  // "minmax" or "percentile(P)"
  int64_t calibration_images = 0;
  bool per_channel = false;
  std::vector<QuantizedActivation> activations;
  std::vector<QuantizedWeights> weights;
};

// "{}" or "{train}" / "{a,b}" for messages.
std::string tag_set_string(const TagSet& tags);
// The graph in protobuf text format (GraphDef of signatures/module.proto).
std::string graph_to_text(const Graph& graph);

class Module;
class ModuleBuilder;
class ModuleSpec;
struct ModuleTagSet;
using ModuleFn = std::function<void(ModuleBuilder&, const Attrs&)>;
ModuleSpec create_module_spec(const ModuleFn& fn, const std::vector<std::pair<TagSet, Attrs>>& tags_and_args);

// Passed to a module function: builds one tag set's graph.
class ModuleBuilder {
 public:
  ModuleBuilder();
  ModuleBuilder(const ModuleBuilder&) = delete;
  ModuleBuilder& operator=(const ModuleBuilder&) = delete;

  Graph& graph();
  Scope scope() { return Scope(graph_); }
  const TagSet& tags() const { return tags_; }

  // Declares a signature. Inputs must be Placeholder nodes. Throws
  // AlreadyExists for a repeated name, InvalidArgument for a bad tensor.
  void add_signature(const std::string& name, const OutputMap& inputs, const OutputMap& outputs);
  // Single-tensor form: one input named `input_name`, one output `output_name`.
  void add_signature(const std::string& name, Output input, Output output, const std::string& input_name = "default",
                     const std::string& output_name = "default");

  // Module-wide information (the last call wins when several tag sets set it).
  void attach(const std::string& key, AttachedValue value);
  void set_image_info(int64_t height, int64_t width, int64_t channels = 3);
  void set_metadata(ModuleMetadata metadata);
  // A file for the module's assets/ folder (e.g. "labels.txt"). The name must
  // be a plain file name; throws InvalidArgument otherwise.
  void add_asset(const std::string& filename, std::string contents);

  // Initial values that override a variable's initializer (e.g. the weights
  // of a module applied inside this graph). Module::apply fills it.
  VariableStore& initial_values() { return initial_values_; }

 private:
  friend ModuleSpec create_module_spec(const ModuleFn&, const std::vector<std::pair<TagSet, Attrs>>&);
  Graph graph_;
  TagSet tags_;
  std::map<std::string, SignatureInfo> signatures_;
  std::map<std::string, AttachedValue> attached_;
  std::map<std::string, std::string> assets_;
  std::optional<ModuleMetadata> metadata_;
  VariableStore initial_values_;
};

class ModuleSpec {
 public:
  ModuleSpec() = default;  // empty: every query throws FailedPrecondition

  bool valid() const { return impl_ != nullptr; }
  std::vector<TagSet> tag_sets() const;
  bool has_tag_set(const TagSet& tags) const;
  // Sorted names; throws NotFound naming the tag set when absent.
  std::vector<std::string> signature_names(const TagSet& tags = {}) const;
  const SignatureInfo& signature(const std::string& name = kDefaultSignature, const TagSet& tags = {}) const;
  const std::map<std::string, TensorInfo>& input_info(const std::string& signature = kDefaultSignature,
                                                      const TagSet& tags = {}) const;
  const std::map<std::string, TensorInfo>& output_info(const std::string& signature = kDefaultSignature,
                                                       const TagSet& tags = {}) const;
  // The tag set's graph (validated: every node re-added through Graph::add_node).
  const Graph& graph(const TagSet& tags = {}) const;
  // Every variable of every tag set, sorted by name.
  const std::vector<VariableInfo>& variables() const;
  // Stored weights by variable name (empty for a fresh spec from
  // create_module_spec: its Modules start from the initializers, plus any
  // ModuleBuilder::initial_values()).
  const TensorMap& weights() const;
  const ModuleMetadata& metadata() const;
  const std::map<std::string, AttachedValue>& attached() const;
  // The assets/ directory of a loaded module ("" if none).
  const std::string& assets_dir() const;
  // Where it was loaded from, or "<module fn>".
  const std::string& source() const;

  // Builds a spec from explicit parts (used by create/load and by tools that
  // produce graphs another way). Checks that every tag set's variables agree
  // in dtype/shape, signature tensors exist with the stated dtypes and
  // compatible shapes, and weights match the variables.
  struct TagSetParts {
    TagSet tags;
    Graph graph;
    std::map<std::string, SignatureInfo> signatures;
  };
  static ModuleSpec from_parts(std::vector<TagSetParts> tag_sets, TensorMap weights,
                               std::map<std::string, AttachedValue> attached, ModuleMetadata metadata,
                               std::string source, std::string assets_dir = "",
                               std::map<std::string, std::string> asset_files = {});
  // Asset files added by ModuleBuilder::add_asset (name -> contents); written
  // into assets/ on export next to those of assets_dir().
  const std::map<std::string, std::string>& asset_files() const;
  // The quantization record of a quantized module (none for a float one).
  const std::optional<QuantizationInfo>& quantization() const;
  // This spec with `info` as its quantization record.
  ModuleSpec with_quantization(QuantizationInfo info) const;

 private:
  struct Impl;
  const Impl& impl() const;
  const ModuleTagSet& tag_set(const TagSet& tags) const;
  std::shared_ptr<const Impl> impl_;
};

// Runs `fn` once per (tags, args) pair: each run builds one tag set's graph.
// The default builds the inference tag set {} with no args. Throws
// InvalidArgument for repeated tag sets or an empty list; errors from `fn`
// get "building tag set {..}" as context.
ModuleSpec create_module_spec(const ModuleFn& fn,
                              const std::vector<std::pair<TagSet, Attrs>>& tags_and_args = {{{}, {}}});
ModuleSpec create_module_spec(const std::function<void(ModuleBuilder&)>& fn);

// Loads the module in the local directory `dir` (module.pb,
// variables.safetensors, assets/). Only local directories: URLs, archives and
// registry names are resolved to a directory first by a
// hub::resolver::Resolver (hub/resolver/resolver.h; Resolver::load does
// both). Throws NotFound for a missing directory/file, Corruption for
// unparsable contents, FailedPrecondition for a newer format_version,
// NotFound for an unknown op or a missing variable, InvalidArgument for
// mismatching weights.
//
// The weights are not read eagerly: variables.safetensors is validated and
// memory-mapped privately (map_safetensors), and weights() are views of that
// mapping, kept alive by the tensors themselves (so a weight outlives the
// spec safely). Writes to them, or to a Module's variables (which are
// copies), never reach the file. mmap contract: the file must not be
// truncated or rewritten in place while the spec or one of its weights is
// alive (SIGBUS on touching a removed page); replacing it by rename is safe,
// and cache entries are immutable after install. See docs/module-format.md.
ModuleSpec load_module_spec(const std::string& dir);

// Attached image info: (height, width) and channels. Throw NotFound when the
// module has no such info.
std::pair<int64_t, int64_t> get_expected_image_size(const ModuleSpec& spec);
int64_t get_num_image_channels(const ModuleSpec& spec);

// A variable of a Module, by name.
class VariableRef {
 public:
  const std::string& name() const { return name_; }
  const Tensor& value() const;
  // Copies `value` into the variable; throws InvalidArgument naming the
  // variable when dtype or shape differ (kernels' caches of derived data,
  // such as reordered weights, see the write: Storage::generation).
  void assign(const Tensor& value);
  // For a float32 variable with exactly one element.
  void assign(float value);

 private:
  friend class VariableMap;
  VariableRef(VariableStore* store, std::string name) : store_(store), name_(std::move(name)) {}
  VariableStore* store_;
  std::string name_;
};

class VariableMap {
 public:
  explicit VariableMap(VariableStore* store) : store_(store) {}
  // Throws NotFound naming the variable.
  VariableRef at(const std::string& name) const;
  bool contains(const std::string& name) const { return store_->contains(name); }
  std::vector<std::string> names() const { return store_->names(); }
  size_t size() const { return store_->size(); }

 private:
  VariableStore* store_;
};

class Module {
 public:
  // Instantiates the `tags` graph of the spec: variables start from the
  // spec's weights, else their initializers. With trainable == false the
  // instance's variables are marked non-trainable (in its graph and in graphs
  // it is applied into). Throws NotFound for an unknown tag set.
  //
  // An inference instance (trainable == false, no "train" tag) runs its
  // signatures on an optimised copy of the graph (hub/graph/optimize/
  // optimize.h: constants folded, batch norm folded into the weights,
  // activations and residual adds fused, blocked layouts between oneDNN
  // convolutions), made on the first call from the current variable values
  // and made again on the next call after a variable changes; its session
  // keeps intermediates in one arena laid out for the last input shapes
  // (SessionOptions::plan_memory). Where the backend offers two activation
  // layouts (oneDNN: NHWC and its channel-blocked one) the first calls with
  // each set of input shapes take turns between them, timed (the preferred
  // layout first, then the other; Contest in optimize.h: 12 calls), and
  // those shapes run in the faster from then on; no call runs the graph
  // more than once ($HUB_GRAPH_LAYOUT=nhwc / blocked at construction fixes
  // one). Results equal the graph's within float
  // rounding. $HUB_GRAPH_OPT=0 at construction turns all this off. Training
  // instances always run graph() as it is.
  explicit Module(ModuleSpec spec, TagSet tags = {}, bool trainable = false);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) noexcept;

  // Runs a signature. Inputs must be exactly the signature's inputs, with
  // matching dtype and compatible shape (InvalidArgument naming the input).
  TensorMap operator()(const std::string& signature, const TensorMap& inputs);
  // The default signature with named inputs.
  TensorMap operator()(const TensorMap& inputs) { return (*this)(kDefaultSignature, inputs); }
  // The default signature with its single input; returns its single output
  // (or the output named "default" when there are several).
  Tensor operator()(const Tensor& input);
  Tensor operator()(std::initializer_list<float> values) { return (*this)(Tensor::floats(values)); }
  // A named signature with a single input; its single (or "default") output.
  Tensor call_single(const std::string& signature, const Tensor& input);
  Tensor operator()(const std::string& signature, const Tensor& input) { return call_single(signature, input); }

  VariableMap variable_map() { return VariableMap(&variables()); }
  VariableStore& variables();
  const ModuleSpec& spec() const { return spec_; }
  const TagSet& tags() const { return tags_; }
  bool trainable() const { return trainable_; }
  // The instance's graph (variables marked per `trainable`).
  Graph& graph();
  // The graph signature calls run: for an inference instance the optimised
  // graph the last call ran (before any call, the one in the backend's
  // preferred layout; made now if there is none, or a variable changed
  // since), else graph().
  const Graph& execution_graph();

  // Writes the module (this tag set's graph and every other tag set of the
  // spec, with the current variable values) to a new directory `dir`.
  // Refuses an existing path (AlreadyExists) unless `existing` allows
  // replacing it; writes into a temporary sibling and renames it into place
  // (StagingDir, hub/core/fileio.h), so `dir` appears complete or not at all.
  void export_to(const std::string& dir, ExistingTarget existing = ExistingTarget::kRefuse) const;

  // Inserts this module's graph into another graph under a fresh name scope
  // (`name`, default "module", made unique), feeding the signature's inputs
  // from `inputs`, and returns the signature's outputs there. Variables are
  // renamed "<scope>/<var>", trainable only if this Module is; their current
  // values are copied into `initial_values` (pass ModuleBuilder::initial_values()
  // inside a module function so the new spec carries them). The module's
  // collections (update_ops, regularization_losses) are carried over, renamed,
  // only when this Module is trainable. Assets of the applied module are not
  // copied into the new module.
  OutputMap apply(const Scope& scope, const OutputMap& inputs, const std::string& signature = kDefaultSignature,
                  VariableStore* initial_values = nullptr, const std::string& name = "module") const;
  // apply() inside a module function, recording the weights in the builder.
  OutputMap apply(ModuleBuilder& builder, const Scope& scope, const OutputMap& inputs,
                  const std::string& signature = kDefaultSignature, const std::string& name = "module") const {
    return apply(scope, inputs, signature, &builder.initial_values(), name);
  }

 private:
  ModuleSpec spec_;
  TagSet tags_;
  bool trainable_;
  struct State;    // graph, variables, session (heap-held so moves keep the session's references valid)
  struct Variant;  // an optimised graph and its session
  std::unique_ptr<State> state_;
  // Runs graph() tensors: on graph() itself, or for an inference instance
  // on the optimised graph of the layout these input shapes run in (timed
  // on their first call).
  std::vector<Tensor> run(const std::vector<std::pair<Output, Tensor>>& feeds, const std::vector<Output>& fetches);
  // The optimised graph and session of a layout, made if missing or stale.
  Variant& optimized(int64_t layout);
};

}  // namespace hub

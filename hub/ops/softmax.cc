#include "hub/ops/softmax.h"

#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"
#include "hub/ops/reduction.h"
#include "hub/ops/registry.h"
#include "hub/ops/state.h"

namespace hub {
namespace {

std::vector<TensorSpec> softmax_shape_fn(const InferContext& c) {
  c.expect_dtype(0, DType::kFloat32);
  int rank = c.shape(0).rank();
  if (rank < 1) c.fail("logits must have rank >= 1, got " + c.input(0).to_string());
  int64_t axis = c.attrs().get_int("axis");
  if (axis < -rank || axis >= rank)
    c.fail("axis " + std::to_string(axis) + " is outside [" + std::to_string(-rank) + ", " + std::to_string(rank) +
           ") for logits " + c.input(0).to_string());
  return {c.input(0)};
}

// Merges two compatible dims (either may be unknown).
int64_t merge_dim(int64_t a, int64_t b) { return a >= 0 ? a : b; }

std::vector<TensorSpec> xent_shape_fn(const InferContext& c) {
  c.expect_dtype(0, DType::kFloat32);
  c.expect_dtype(1, DType::kFloat32);
  c.expect_rank(0, 2);
  c.expect_rank(1, 2);
  if (!c.shape(0).compatible_with(c.shape(1)))
    c.fail("logits " + c.input(0).to_string() + " and labels " + c.input(1).to_string() + " differ in shape");
  int64_t n = merge_dim(c.shape(0)[0], c.shape(1)[0]), k = merge_dim(c.shape(0)[1], c.shape(1)[1]);
  return {{DType::kFloat32, Shape{n}}, {DType::kFloat32, Shape{n, k}}};
}

std::vector<TensorSpec> sparse_xent_shape_fn(const InferContext& c) {
  c.expect_dtype(0, DType::kFloat32);
  c.expect_rank(0, 2);
  c.expect_rank(1, 1);
  if (c.dtype(1) != DType::kInt32 && c.dtype(1) != DType::kInt64)
    c.fail("labels must be int32 or int64, got " + c.input(1).to_string());
  int64_t a = c.shape(0)[0], b = c.shape(1)[0];
  if (a >= 0 && b >= 0 && a != b)
    c.fail("logits " + c.input(0).to_string() + " and labels " + c.input(1).to_string() + " differ in batch size");
  int64_t n = merge_dim(a, b);
  return {{DType::kFloat32, Shape{n}}, {DType::kFloat32, Shape{n, c.shape(0)[1]}}};
}

std::vector<Output> softmax_grad(const GradContext& c) {
  const Scope& s = c.scope;
  Output g = c.grads[0], y = c.outputs[0];
  Output dot = ops::sum(s, ops::mul(s, g, y), {c.node.attrs.get_int("axis")}, true);
  return {ops::mul(s, ops::sub(s, g, dot), y)};
}

std::vector<Output> log_softmax_grad(const GradContext& c) {
  const Scope& s = c.scope;
  Output g = c.grads[0], y = c.outputs[0];
  return {ops::sub(s, g, ops::mul(s, ops::exp(s, y), ops::sum(s, g, {c.node.attrs.get_int("axis")}, true)))};
}

// Gradients of both cross-entropy ops; `dense` adds the one w.r.t. labels.
std::vector<Output> xent_grad(const GradContext& c, bool dense) {
  const Scope& s = c.scope;
  Output logits = c.inputs[0];
  Output d_logits, d_labels;
  if (c.grads[0].valid()) {
    Output gl = ops::broadcast_like(s, c.grads[0], logits, {1});  // g_loss[:, None] as [N, C]
    d_logits = ops::mul(s, gl, c.outputs[1]);
    if (dense) d_labels = ops::neg(s, ops::mul(s, gl, ops::log_softmax(s, logits)));
  }
  if (c.grads[1].valid()) {
    // backprop = softmax(logits) - labels.
    Output gb = c.grads[1], sm = ops::softmax(s, logits);
    Output j = ops::mul(s, ops::sub(s, gb, ops::sum(s, ops::mul(s, gb, sm), {-1}, true)), sm);
    d_logits = d_logits.valid() ? ops::add(s, d_logits, j) : j;
    if (dense) d_labels = d_labels.valid() ? ops::sub(s, d_labels, gb) : ops::neg(s, gb);
  }
  return {d_logits, d_labels};
}

}  // namespace

HUB_REGISTER_OP(Softmax)
    .inputs(1)
    .attr("axis", AttrType::kInt, int64_t{-1})
    .shape_fn(softmax_shape_fn)
    .grad(softmax_grad)
    .doc("Softmax along axis (negative counts from the end).");
HUB_REGISTER_OP(LogSoftmax)
    .inputs(1)
    .attr("axis", AttrType::kInt, int64_t{-1})
    .shape_fn(softmax_shape_fn)
    .grad(log_softmax_grad)
    .doc("Log of the softmax along axis (negative counts from the end).");
HUB_REGISTER_OP(SoftmaxCrossEntropyWithLogits)
    .inputs(2)
    .outputs(2)
    .shape_fn(xent_shape_fn)
    .grad([](const GradContext& c) { return xent_grad(c, true); })
    .doc("(logits [N,C], labels [N,C]) -> (loss [N], backprop [N,C] = softmax - labels).");
HUB_REGISTER_OP(SparseSoftmaxCrossEntropyWithLogits)
    .inputs(2)
    .outputs(2)
    .shape_fn(sparse_xent_shape_fn)
    .grad([](const GradContext& c) { return xent_grad(c, false); })
    .doc("(logits [N,C], labels [N] int) -> (loss [N], backprop [N,C]); labels must lie in [0, C).");
HUB_REGISTER_OP(OneHot)
    .inputs(1)
    .attr("depth", AttrType::kInt)
    .attr("on_value", AttrType::kFloat, 1.0)
    .attr("off_value", AttrType::kFloat, 0.0)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      if (c.dtype(0) != DType::kInt32 && c.dtype(0) != DType::kInt64)
        c.fail("indices must be int32 or int64, got " + c.input(0).to_string());
      int64_t depth = c.attrs().get_int("depth");
      if (depth < 0) c.fail("depth = " + std::to_string(depth) + " must be >= 0");
      Shape out = c.shape(0);
      out.push_back(depth);
      return {{DType::kFloat32, out}};
    })
    .doc("float32 one-hot rows of length depth (on_value at the index, off_value elsewhere).")
    .no_gradient("integer indices; on/off values are attributes");

namespace ops {

Output softmax(const Scope& s, Output logits, int64_t axis, const std::string& name) {
  return s.op("Softmax", {logits}, Attrs().set("axis", axis), name);
}
Output log_softmax(const Scope& s, Output logits, int64_t axis, const std::string& name) {
  return s.op("LogSoftmax", {logits}, Attrs().set("axis", axis), name);
}
CrossEntropy softmax_cross_entropy_with_logits(const Scope& s, Output logits, Output labels, const std::string& name) {
  auto outs = s.op_n("SoftmaxCrossEntropyWithLogits", {logits, labels}, {}, name);
  return {outs[0], outs[1]};
}
CrossEntropy sparse_softmax_cross_entropy_with_logits(const Scope& s, Output logits, Output labels,
                                                      const std::string& name) {
  auto outs = s.op_n("SparseSoftmaxCrossEntropyWithLogits", {logits, labels}, {}, name);
  return {outs[0], outs[1]};
}
Output one_hot(const Scope& s, Output indices, int64_t depth, float on_value, float off_value,
               const std::string& name) {
  return s.op("OneHot", {indices}, Attrs().set("depth", depth).set("on_value", on_value).set("off_value", off_value),
              name);
}

namespace {
int64_t known_classes(const Scope& s, Output logits, const char* what) {
  const TensorSpec& spec = s.graph().spec(logits);
  if (spec.shape.rank() != 2 || spec.shape[1] < 0)
    throw_error(Code::kInvalidArgument, std::string(what) +
                                            ": label smoothing needs logits [N, C] with C known, got '" +
                                            s.graph().tensor_name(logits) + "' " + spec.to_string());
  return spec.shape[1];
}
void check_smoothing(float ls, const char* what) {
  if (!(ls >= 0.0f && ls <= 1.0f))
    throw_error(Code::kInvalidArgument,
                std::string(what) + ": label_smoothing " + std::to_string(ls) + " must lie in [0, 1]");
}
}  // namespace

Output softmax_cross_entropy(const Scope& s, Output logits, Output onehot_labels, float label_smoothing) {
  check_smoothing(label_smoothing, "softmax_cross_entropy");
  Scope ls = s.sub("softmax_cross_entropy_loss");
  Output labels = onehot_labels;
  if (label_smoothing > 0.0f) {
    int64_t c = known_classes(s, logits, "softmax_cross_entropy");
    labels = add(ls, mul(ls, labels, scalar(ls, 1.0f - label_smoothing)),
                 scalar(ls, label_smoothing / static_cast<float>(c)));
  }
  CrossEntropy xent = softmax_cross_entropy_with_logits(ls, logits, labels, "xentropy");
  return mean(ls, xent.loss, {}, false, "value");
}

Output sparse_softmax_cross_entropy(const Scope& s, Output logits, Output labels, float label_smoothing) {
  check_smoothing(label_smoothing, "sparse_softmax_cross_entropy");
  if (label_smoothing > 0.0f) {
    int64_t c = known_classes(s, logits, "sparse_softmax_cross_entropy");
    return softmax_cross_entropy(s, logits, one_hot(s, labels, c), label_smoothing);
  }
  Scope ls = s.sub("sparse_softmax_cross_entropy_loss");
  CrossEntropy xent = sparse_softmax_cross_entropy_with_logits(ls, logits, labels, "xentropy");
  return mean(ls, xent.loss, {}, false, "value");
}

}  // namespace ops
}  // namespace hub

#include "hub/graph/optimizer.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "hub/backend/backend.h"
#include "hub/graph/autodiff.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/optimizer.h"
#include "hub/ops/reduction.h"
#include "hub/ops/state.h"

namespace hub {
namespace {

// A host copy of t that shares nothing with it (state handed out for checkpoints).
Tensor host_copy(const Tensor& t) { return t.device() == Device::kCPU ? t.clone() : to_host(t); }

}  // namespace

// ---- schedules -------------------------------------------------------------------

LearningRateSchedule LearningRateSchedule::fixed(double learning_rate) {
  LearningRateSchedule s;
  s.type = "fixed";
  s.learning_rate = learning_rate;
  return s;
}

LearningRateSchedule LearningRateSchedule::exponential(double learning_rate, int64_t decay_steps, double decay_rate,
                                                       bool staircase) {
  LearningRateSchedule s;
  s.type = "exponential";
  s.learning_rate = learning_rate;
  s.decay_steps = decay_steps;
  s.decay_rate = decay_rate;
  s.staircase = staircase;
  return s;
}

LearningRateSchedule LearningRateSchedule::polynomial(double learning_rate, int64_t decay_steps,
                                                      double end_learning_rate, double power, bool cycle) {
  LearningRateSchedule s;
  s.type = "polynomial";
  s.learning_rate = learning_rate;
  s.decay_steps = decay_steps;
  s.end_learning_rate = end_learning_rate;
  s.power = power;
  s.cycle = cycle;
  return s;
}

double LearningRateSchedule::at(int64_t global_step) const {
  if (type == "fixed") return learning_rate;
  if (type != "exponential" && type != "polynomial")
    throw_error(Code::kInvalidArgument,
                "unknown learning rate decay type '" + type + "' (known: fixed, exponential, polynomial)");
  if (decay_steps <= 0)
    throw_error(Code::kInvalidArgument,
                type + " learning rate decay needs decay_steps > 0, got " + std::to_string(decay_steps));
  double step = static_cast<double>(std::max<int64_t>(0, global_step));
  double steps = static_cast<double>(decay_steps);
  if (type == "exponential") {
    double p = staircase ? std::floor(step / steps) : step / steps;
    return learning_rate * std::pow(decay_rate, p);
  }
  if (cycle) {
    double mult = step == 0 ? 1.0 : std::ceil(step / steps);
    steps *= mult;
  } else {
    step = std::min(step, steps);
  }
  return (learning_rate - end_learning_rate) * std::pow(1.0 - step / steps, power) + end_learning_rate;
}

int64_t slim_decay_steps(int64_t num_samples_per_epoch, int64_t batch_size, double num_epochs_per_decay) {
  if (batch_size <= 0)
    throw_error(Code::kInvalidArgument, "slim_decay_steps: batch_size must be > 0, got " + std::to_string(batch_size));
  return static_cast<int64_t>(static_cast<double>(num_samples_per_epoch) * num_epochs_per_decay /
                              static_cast<double>(batch_size));
}

// ---- Optimizer ---------------------------------------------------------------------

Optimizer::Optimizer(std::string name, std::string update_op, LearningRateSchedule schedule,
                     std::vector<SlotSpec> slots)
    : name_(std::move(name)),
      update_op_(std::move(update_op)),
      schedule_(std::move(schedule)),
      slot_specs_(std::move(slots)) {
  schedule_.at(0);  // validates type and decay_steps
}

void Optimizer::apply_gradients(VariableStore& variables, const GradientList& grads) {
  std::set<std::string> seen;
  for (const auto& [name, g] : grads) {
    const Tensor& w = variables.at(name);
    auto fail = [&, &name = name](const std::string& what) {
      throw_error(Code::kInvalidArgument, name_ + " optimizer, variable '" + name + "': " + what);
    };
    if (!seen.insert(name).second) fail("listed twice");
    if (w.dtype() != DType::kFloat32) fail("variable is " + w.spec_string() + "; only float32 is trained");
    if (!g.defined()) fail("gradient is undefined");
    if (g.dtype() != DType::kFloat32 || g.shape() != w.shape())
      fail("gradient " + g.spec_string() + " does not match the variable " + w.spec_string());
    for (const SlotSpec& spec : slot_specs_) {
      auto it = slots_.find(name + "/" + spec.suffix);
      if (it != slots_.end() && it->second.shape() != w.shape())
        fail("slot '" + it->first + "' is " + it->second.spec_string() + " but the variable is " + w.spec_string());
    }
  }
  const Node update = standalone_node(update_op_, name_, step_attrs(learning_rate()));
  for (const auto& [name, g] : grads) {
    Tensor& w = variables.at(name);
    std::vector<Tensor> inputs{w, to_device(g, w.device())};
    for (const SlotSpec& spec : slot_specs_) {
      std::string key = name + "/" + spec.suffix;
      auto it = slots_.find(key);
      if (it == slots_.end()) {
        Tensor t(DType::kFloat32, w.shape());
        t.fill(spec.initial_value);
        it = slots_.emplace(key, t).first;
      }
      it->second = to_device(it->second, w.device());  // slots live with their variable
      inputs.push_back(it->second);
    }
    run_standalone(update, inputs);
  }
  end_step();
  ++global_step_;
}

std::map<std::string, Tensor> Optimizer::state() const {
  std::map<std::string, Tensor> out;
  for (const auto& [k, v] : slots_) out[k] = host_copy(v);
  for (auto& [k, v] : extra_state()) out[k] = v;
  out["global_step"] = Tensor::scalar<int64_t>(global_step_);
  return out;
}

void Optimizer::load_state(const std::map<std::string, Tensor>& state) {
  std::map<std::string, Tensor> slots;
  int64_t step = 0;
  for (const auto& [key, value] : state) {
    auto fail = [&, &key = key](const std::string& what) {
      throw_error(Code::kInvalidArgument, name_ + " optimizer state '" + key + "': " + what);
    };
    if (!value.defined()) fail("undefined tensor");
    if (key == "global_step") {
      if (value.num_elements() != 1 || (value.dtype() != DType::kInt64 && value.dtype() != DType::kInt32))
        fail("expected an int64 scalar, got " + value.spec_string());
      step = value.dtype() == DType::kInt64 ? value.item<int64_t>() : value.item<int32_t>();
      continue;
    }
    size_t slash = key.rfind('/');
    bool is_slot = false;
    if (slash != std::string::npos && slash > 0)
      for (const SlotSpec& spec : slot_specs_)
        if (key.compare(slash + 1, std::string::npos, spec.suffix) == 0) is_slot = true;
    if (is_slot) {
      if (value.dtype() != DType::kFloat32) fail("expected float32, got " + value.spec_string());
      slots[key] = host_copy(value);  // moved to its variable's device at the next step
      continue;
    }
    if (!load_extra(key, value)) fail("not a state entry of this optimizer");
  }
  slots_ = std::move(slots);
  global_step_ = step;
}

const Tensor& Optimizer::slot(const std::string& variable, const std::string& slot_name) const {
  auto it = slots_.find(variable + "/" + slot_name);
  if (it == slots_.end())
    throw_error(Code::kNotFound, name_ + " optimizer has no slot '" + variable + "/" + slot_name + "'");
  return it->second;
}

// ---- the update rules: each an update op with its step's attributes ---------------------
namespace {

Attrs lr_attrs(double lr) { return Attrs().set("lr", lr); }

class GradientDescent final : public Optimizer {
 public:
  explicit GradientDescent(const LearningRateSchedule& s)
      : Optimizer("GradientDescent", "ApplyGradientDescent", s, {}) {}
  Attrs step_attrs(double lr) const override { return lr_attrs(lr); }
};

class Momentum final : public Optimizer {
 public:
  Momentum(const LearningRateSchedule& s, float momentum, bool nesterov)
      : Optimizer("Momentum", "ApplyMomentum", s, {{"Momentum", 0.0f}}), momentum_(momentum), nesterov_(nesterov) {}
  Attrs step_attrs(double lr) const override {
    return lr_attrs(lr).set("momentum", momentum_).set("use_nesterov", nesterov_);
  }

 private:
  float momentum_;
  bool nesterov_;
};

class RMSProp final : public Optimizer {
 public:
  RMSProp(const LearningRateSchedule& s, float decay, float momentum, float epsilon)
      : Optimizer("RMSProp", "ApplyRMSProp", s, {{"RMSProp", 1.0f}, {"RMSProp_1", 0.0f}}),
        decay_(decay),
        momentum_(momentum),
        epsilon_(epsilon) {}
  Attrs step_attrs(double lr) const override {
    return lr_attrs(lr).set("decay", decay_).set("momentum", momentum_).set("epsilon", epsilon_);
  }

 private:
  float decay_, momentum_, epsilon_;
};

class Adam final : public Optimizer {
 public:
  Adam(const LearningRateSchedule& s, float beta1, float beta2, float epsilon)
      : Optimizer("Adam", "ApplyAdam", s, {{"Adam", 0.0f}, {"Adam_1", 0.0f}}),
        beta1_(beta1),
        beta2_(beta2),
        epsilon_(epsilon),
        beta1_power_(beta1),
        beta2_power_(beta2) {}
  Attrs step_attrs(double lr) const override {
    const float lr_t = static_cast<float>(lr) * std::sqrt(1.0f - beta2_power_) / (1.0f - beta1_power_);
    return lr_attrs(lr_t).set("beta1", beta1_).set("beta2", beta2_).set("epsilon", epsilon_);
  }
  void end_step() override {
    beta1_power_ *= beta1_;
    beta2_power_ *= beta2_;
  }
  std::map<std::string, Tensor> extra_state() const override {
    return {{"beta1_power", Tensor::scalar<float>(beta1_power_)}, {"beta2_power", Tensor::scalar<float>(beta2_power_)}};
  }
  bool load_extra(const std::string& key, const Tensor& value) override {
    if (key != "beta1_power" && key != "beta2_power") return false;
    if (value.dtype() != DType::kFloat32 || value.num_elements() != 1)
      throw_error(Code::kInvalidArgument,
                  "Adam optimizer state '" + key + "': expected a float32 scalar, got " + value.spec_string());
    (key == "beta1_power" ? beta1_power_ : beta2_power_) = value.item<float>();
    return true;
  }

 private:
  float beta1_, beta2_, epsilon_;
  float beta1_power_, beta2_power_;
};

class Adagrad final : public Optimizer {
 public:
  Adagrad(const LearningRateSchedule& s, float initial_accumulator_value)
      : Optimizer("Adagrad", "ApplyAdagrad", s, {{"Adagrad", initial_accumulator_value}}) {}
  Attrs step_attrs(double lr) const override { return lr_attrs(lr); }
};

class Adadelta final : public Optimizer {
 public:
  Adadelta(const LearningRateSchedule& s, float rho, float epsilon)
      : Optimizer("Adadelta", "ApplyAdadelta", s, {{"Adadelta", 0.0f}, {"Adadelta_1", 0.0f}}),
        rho_(rho),
        epsilon_(epsilon) {}
  Attrs step_attrs(double lr) const override { return lr_attrs(lr).set("rho", rho_).set("epsilon", epsilon_); }

 private:
  float rho_, epsilon_;
};

class Ftrl final : public Optimizer {
 public:
  Ftrl(const LearningRateSchedule& s, float lr_power, float initial_accumulator_value, float l1, float l2)
      : Optimizer("Ftrl", "ApplyFtrl", s, {{"Ftrl", initial_accumulator_value}, {"Ftrl_1", 0.0f}}),
        lr_power_(lr_power),
        l1_(l1),
        l2_(l2) {}
  Attrs step_attrs(double lr) const override {
    return lr_attrs(lr).set("lr_power", lr_power_).set("l1", l1_).set("l2", l2_);
  }

 private:
  float lr_power_, l1_, l2_;
};

void require(bool ok, const std::string& optimizer, const std::string& what) {
  if (!ok) throw_error(Code::kInvalidArgument, "optimizer '" + optimizer + "': " + what);
}

}  // namespace

std::vector<std::string> optimizer_names() {
  return {"sgd", "momentum", "rmsprop", "adam", "adagrad", "adadelta", "ftrl"};
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const LearningRateSchedule& schedule,
                                          const OptimizerOptions& o) {
  auto f = [](double v) { return static_cast<float>(v); };
  if (name == "sgd") return std::make_unique<GradientDescent>(schedule);
  if (name == "momentum") return std::make_unique<Momentum>(schedule, f(o.momentum), o.use_nesterov);
  if (name == "rmsprop") {
    require(o.opt_epsilon > 0, name, "opt_epsilon must be > 0, got " + std::to_string(o.opt_epsilon));
    return std::make_unique<RMSProp>(schedule, f(o.rmsprop_decay), f(o.rmsprop_momentum), f(o.opt_epsilon));
  }
  if (name == "adam") {
    require(o.adam_beta1 >= 0 && o.adam_beta1 < 1, name,
            "adam_beta1 must be in [0, 1), got " + std::to_string(o.adam_beta1));
    require(o.adam_beta2 >= 0 && o.adam_beta2 < 1, name,
            "adam_beta2 must be in [0, 1), got " + std::to_string(o.adam_beta2));
    return std::make_unique<Adam>(schedule, f(o.adam_beta1), f(o.adam_beta2), f(o.opt_epsilon));
  }
  if (name == "adagrad") {
    require(
        o.adagrad_initial_accumulator_value > 0, name,
        "adagrad_initial_accumulator_value must be > 0, got " + std::to_string(o.adagrad_initial_accumulator_value));
    return std::make_unique<Adagrad>(schedule, f(o.adagrad_initial_accumulator_value));
  }
  if (name == "adadelta") {
    require(o.opt_epsilon > 0, name, "opt_epsilon must be > 0, got " + std::to_string(o.opt_epsilon));
    return std::make_unique<Adadelta>(schedule, f(o.adadelta_rho), f(o.opt_epsilon));
  }
  if (name == "ftrl") {
    require(o.ftrl_learning_rate_power <= 0, name,
            "ftrl_learning_rate_power must be <= 0, got " + std::to_string(o.ftrl_learning_rate_power));
    require(o.ftrl_initial_accumulator_value > 0, name,
            "ftrl_initial_accumulator_value must be > 0, got " + std::to_string(o.ftrl_initial_accumulator_value));
    require(o.ftrl_l1 >= 0 && o.ftrl_l2 >= 0, name, "ftrl_l1 and ftrl_l2 must be >= 0");
    return std::make_unique<Ftrl>(schedule, f(o.ftrl_learning_rate_power), f(o.ftrl_initial_accumulator_value),
                                  f(o.ftrl_l1), f(o.ftrl_l2));
  }
  std::string known;
  for (const auto& n : optimizer_names()) known += (known.empty() ? "" : ", ") + n;
  throw_error(Code::kInvalidArgument, "unknown optimizer '" + name + "' (known: " + known + ")");
}

// ---- gradients and one step ----------------------------------------------------------

GradientOps build_gradients(const Scope& s, Output loss, const std::vector<std::string>& variables) {
  const GraphBuilder& g = s.graph();
  std::vector<Output> xs;
  std::vector<std::string> names;
  if (variables.empty()) {
    for (int id : g.variables(true)) {
      xs.push_back({id, 0});
      names.push_back(g.node(id).name);
    }
  } else {
    for (const std::string& name : variables) {
      std::optional<int> id = g.find(name);
      if (!id || g.node(*id).op != "Variable")
        throw_error(Code::kNotFound, "build_gradients: no variable named '" + name + "' in the graph");
      xs.push_back({*id, 0});
      names.push_back(name);
    }
  }
  std::vector<Output> grads = gradients(s, loss, xs);
  GradientOps out;
  for (size_t i = 0; i < grads.size(); ++i)
    if (grads[i].valid()) {
      out.variables.push_back(names[i]);
      out.gradients.push_back(grads[i]);
    }
  if (out.variables.empty())
    throw_error(Code::kInvalidArgument,
                "build_gradients: loss '" + g.tensor_name(loss) + "' depends on none of the variables");
  for (const std::string& name : g.collection(kUpdateOps)) out.update_ops.push_back(g.tensor(name));
  return out;
}

float compute_gradients(Session& session, const GradientOps& grads, Output loss, const FeedList& feeds,
                        GradientList* gradients, const std::vector<Output>& also, std::vector<Tensor>* also_values) {
  std::vector<Output> fetches{loss};
  fetches.insert(fetches.end(), grads.gradients.begin(), grads.gradients.end());
  fetches.insert(fetches.end(), also.begin(), also.end());
  std::vector<Tensor> values = session.run(feeds, fetches, grads.update_ops);
  gradients->clear();
  for (size_t i = 0; i < grads.variables.size(); ++i) gradients->push_back({grads.variables[i], values[i + 1]});
  if (also_values)
    also_values->assign(values.begin() + 1 + static_cast<std::ptrdiff_t>(grads.variables.size()), values.end());
  return to_host(values[0]).item<float>();
}

float train_step(Session& session, Optimizer& optimizer, VariableStore& variables, const GradientOps& grads,
                 Output loss, const FeedList& feeds) {
  GradientList list;
  float value = compute_gradients(session, grads, loss, feeds, &list);
  optimizer.apply_gradients(variables, list);
  return value;
}

// ---- ExponentialMovingAverage ------------------------------------------------------------

ExponentialMovingAverage::ExponentialMovingAverage(double decay) : decay_(decay) {
  if (!(decay >= 0.0 && decay <= 1.0))
    throw_error(Code::kInvalidArgument,
                "ExponentialMovingAverage: decay must be in [0, 1], got " + std::to_string(decay));
}

void ExponentialMovingAverage::track(const VariableStore& variables, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (shadows_.count(name)) continue;
    const Tensor& v = variables.at(name);
    if (v.dtype() != DType::kFloat32)
      throw_error(Code::kInvalidArgument, "ExponentialMovingAverage: variable '" + name + "' is " + v.spec_string() +
                                              "; only float32 is averaged");
    shadows_[name] = copy_of(v);
  }
}

void ExponentialMovingAverage::apply(const VariableStore& variables, const std::vector<std::string>& names,
                                     std::optional<int64_t> num_updates) {
  track(variables, names);
  for (const std::string& name : names) {
    const Tensor& v = variables.at(name);
    if (v.shape() != shadows_.at(name).shape())
      throw_error(Code::kInvalidArgument, "ExponentialMovingAverage: variable '" + name + "' is " + v.spec_string() +
                                              " but its average is " + shadows_.at(name).spec_string());
  }
  double d = decay_;
  if (num_updates)
    d = std::min(d, (1.0 + static_cast<double>(*num_updates)) / (10.0 + static_cast<double>(*num_updates)));
  // shadow -= (shadow - var)*(1 - d), on the variable's device.
  const Node update = standalone_node("AssignMovingAverage", "ExponentialMovingAverage", Attrs().set("decay", d));
  for (const std::string& name : names) {
    const Tensor& v = variables.at(name);
    Tensor& shadow = shadows_.at(name);
    shadow = to_device(shadow, v.device());
    run_standalone(update, {shadow, v});
  }
}

const Tensor& ExponentialMovingAverage::average(const std::string& variable) const {
  auto it = shadows_.find(variable);
  if (it == shadows_.end())
    throw_error(Code::kNotFound, "ExponentialMovingAverage: no average of variable '" + variable + "'");
  return it->second;
}

void ExponentialMovingAverage::swap_in(VariableStore& variables) {
  if (!backup_.empty())
    throw_error(Code::kFailedPrecondition, "ExponentialMovingAverage: averages are already swapped in");
  for (const auto& [name, shadow] : shadows_) {
    const Tensor& v = variables.at(name);
    if (v.dtype() != shadow.dtype() || v.shape() != shadow.shape())
      throw_error(Code::kInvalidArgument, "ExponentialMovingAverage: variable '" + name + "' is " + v.spec_string() +
                                              " but its average is " + shadow.spec_string());
  }
  for (const auto& [name, shadow] : shadows_) {
    backup_[name] = copy_of(variables.at(name));
    copy_into(shadow, variables.at(name));
  }
}

void ExponentialMovingAverage::restore(VariableStore& variables) {
  for (const auto& [name, value] : backup_) copy_into(value, variables.at(name));
  backup_.clear();
}

std::map<std::string, Tensor> ExponentialMovingAverage::state() const {
  std::map<std::string, Tensor> out;
  for (const auto& [name, shadow] : shadows_) out[average_name(name)] = host_copy(shadow);
  return out;
}

void ExponentialMovingAverage::load_state(const std::map<std::string, Tensor>& state) {
  static const std::string kSuffix = "/ExponentialMovingAverage";
  std::map<std::string, Tensor> shadows;
  for (const auto& [key, value] : state) {
    if (key.size() <= kSuffix.size() || key.compare(key.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
      throw_error(Code::kInvalidArgument, "ExponentialMovingAverage state: '" + key + "' is not an average name");
    if (!value.defined() || value.dtype() != DType::kFloat32)
      throw_error(Code::kInvalidArgument, "ExponentialMovingAverage state '" + key + "': expected float32");
    shadows[key.substr(0, key.size() - kSuffix.size())] = host_copy(value);
  }
  shadows_ = std::move(shadows);
}

}  // namespace hub

namespace hub::ops {

Output l2_regularizer(const Scope& s, Output weight, float weight_decay, const std::string& name) {
  GraphBuilder& g = s.graph();
  if (weight_decay < 0.0f)
    throw_error(Code::kInvalidArgument, "l2_regularizer on '" + g.tensor_name(weight) + "': weight_decay " +
                                            std::to_string(weight_decay) + " is negative");
  if (weight_decay == 0.0f) return {};
  const TensorSpec& spec = g.spec(weight);
  if (spec.dtype != DType::kFloat32 || !spec.shape.is_fully_defined())
    throw_error(Code::kInvalidArgument, "l2_regularizer on '" + g.tensor_name(weight) +
                                            "': needs float32 of known shape, got " + spec.to_string());
  std::string full = s.name(name);
  Scope r = Scope(g).sub(full);
  // weight_decay * sum(w^2) / 2 = weight_decay * L2Loss(w).
  Output loss = Scope(g).op("Mul", {l2_loss(r, weight), scalar(r, weight_decay, "scale")}, {}, full);
  g.add_to_collection(kRegularizationLosses, g.node(loss).name);
  return loss;
}

Output regularization_loss(const Scope& s, const std::string& name) {
  const GraphBuilder& g = s.graph();
  std::vector<Output> losses;
  for (const std::string& n : g.collection(kRegularizationLosses)) losses.push_back(g.tensor(n));
  if (losses.empty()) return {};
  if (losses.size() == 1) return losses[0];
  return add_n(s, losses, name);
}

Output total_loss(const Scope& s, Output loss, const std::string& name) {
  const GraphBuilder& g = s.graph();
  if (g.spec(loss).shape.rank() != 0)
    throw_error(Code::kInvalidArgument,
                "total_loss: loss '" + g.tensor_name(loss) + "' is " + g.spec(loss).to_string() + "; need a scalar");
  std::vector<Output> losses{loss};
  for (const std::string& n : g.collection(kRegularizationLosses)) losses.push_back(g.tensor(n));
  if (losses.size() == 1) return loss;
  return add_n(s, losses, name);
}

}  // namespace hub::ops

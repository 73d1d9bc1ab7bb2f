// Training: optimizers, learning-rate schedules, weight decay and moving
// averages, with TensorFlow's update rules (tf.train.*Optimizer, dense case)
// and TF-Slim train_image_classifier's defaults.
//
// An Optimizer updates variables of a VariableStore in place from gradient
// tensors that a Session computed (see build_gradients / train_step). It keeps
// its slot variables (per-variable accumulators) itself, named as TensorFlow
// names them ("<var>/Adam", "<var>/Adam_1", ...), plus the global step and any
// non-slot state ("beta1_power", "beta2_power"); state() / load_state() move all
// of it in and out for checkpoints (on the host). Each rule is an update op
// (hub/ops/optimizer.h: the formulas, e.g. ApplyAdam) run on the device the
// variable lives on, with its slots kept there too: a model trained on a GPU
// never leaves it between steps. Updates write through Tensor's mutable
// accessors, which bump the storage generation that kernel caches check.
//
// Rules (slim's --optimizer): sgd (ApplyGradientDescent), momentum
// (ApplyMomentum, slot Momentum = 0), rmsprop (ApplyRMSProp, slots RMSProp = 1,
// RMSProp_1 = 0), adam (ApplyAdam, slots Adam, Adam_1 = 0; the step's rate is
// lr*sqrt(1 - beta2^t)/(1 - beta1^t)), adagrad (ApplyAdagrad, slot Adagrad =
// initial_accumulator_value), adadelta (ApplyAdadelta, slots Adadelta,
// Adadelta_1 = 0), ftrl (ApplyFtrl, slots Ftrl = initial_accumulator_value,
// Ftrl_1 = 0); lr = schedule.at(global_step).
//
// Not thread-safe; one optimizer per training loop.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hub/graph/graph.h"
#include "hub/graph/session.h"
#include "hub/ops/variables.h"
#include "hub/tensor/tensor.h"

namespace hub {

// ---- learning-rate schedules (slim's _configure_learning_rate) ---------------
struct LearningRateSchedule {
  std::string type = "fixed";  // fixed | exponential | polynomial
  double learning_rate = 0.01;
  int64_t decay_steps = 1;            // > 0 for exponential and polynomial
  double decay_rate = 0.94;           // exponential
  bool staircase = true;              // exponential: floor(step / decay_steps)
  double end_learning_rate = 0.0001;  // polynomial
  double power = 1.0;                 // polynomial
  bool cycle = false;                 // polynomial

  static LearningRateSchedule fixed(double learning_rate);
  // lr * decay_rate^(step / decay_steps) (integer division when staircase).
  static LearningRateSchedule exponential(double learning_rate, int64_t decay_steps, double decay_rate,
                                          bool staircase = true);
  // (lr - end)*(1 - s/D)^power + end with s = min(step, D), D = decay_steps;
  // with cycle, D = decay_steps*ceil(step/decay_steps) (at least decay_steps).
  static LearningRateSchedule polynomial(double learning_rate, int64_t decay_steps, double end_learning_rate,
                                         double power = 1.0, bool cycle = false);

  // The learning rate at global_step (>= 0). Throws InvalidArgument naming an
  // unknown type or a non-positive decay_steps.
  double at(int64_t global_step) const;
};

// slim: int(num_samples_per_epoch * num_epochs_per_decay / batch_size).
int64_t slim_decay_steps(int64_t num_samples_per_epoch, int64_t batch_size, double num_epochs_per_decay = 2.0);

// ---- optimizers --------------------------------------------------------------
// Hyperparameters, named and defaulted like slim's flags.
struct OptimizerOptions {
  double momentum = 0.9;          // momentum
  bool use_nesterov = false;      // momentum
  double rmsprop_decay = 0.9;     // rmsprop
  double rmsprop_momentum = 0.9;  // rmsprop
  double opt_epsilon = 1.0;       // rmsprop, adam, adadelta
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adagrad_initial_accumulator_value = 0.1;
  double adadelta_rho = 0.95;
  double ftrl_learning_rate_power = -0.5;
  double ftrl_initial_accumulator_value = 0.1;
  double ftrl_l1 = 0.0;
  double ftrl_l2 = 0.0;
};

using GradientList = std::vector<std::pair<std::string, Tensor>>;  // variable name, gradient

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // TensorFlow's name, also the slot prefix: "GradientDescent", "Momentum",
  // "RMSProp", "Adam", "Adagrad", "Adadelta", "Ftrl".
  const std::string& name() const { return name_; }
  const LearningRateSchedule& schedule() const { return schedule_; }
  int64_t global_step() const { return global_step_; }
  void set_global_step(int64_t step) { global_step_ = step; }
  // The learning rate the next apply_gradients() uses.
  double learning_rate() const { return schedule_.at(global_step_); }

  // Updates each named variable in place with its gradient (copied to the
  // variable's device if it lives elsewhere), then increments the global
  // step. All pairs are checked first (variable exists: NotFound; gradient
  // defined, float32, the variable's shape: InvalidArgument, naming the
  // variable), so on error nothing has changed.
  void apply_gradients(VariableStore& variables, const GradientList& grads);

  // Slots ("<var>/<Slot>"), "global_step" (int64 scalar) and non-slot state,
  // as host copies.
  std::map<std::string, Tensor> state() const;
  // Replaces the state with `state` (as returned by state()); throws
  // InvalidArgument naming a key this optimizer does not know or a bad tensor.
  void load_state(const std::map<std::string, Tensor>& state);
  // The slot tensor "<var>/<suffix>"; throws NotFound.
  const Tensor& slot(const std::string& variable, const std::string& slot_name) const;

 protected:
  struct SlotSpec {
    std::string suffix;  // "Adam", "Adam_1"
    float initial_value;
  };
  // `update_op`: the op that applies the rule (hub/ops/optimizer.h).
  Optimizer(std::string name, std::string update_op, LearningRateSchedule schedule, std::vector<SlotSpec> slots);
  // The update op's attributes for the coming step at learning rate lr
  // (called once per step, before any variable is updated).
  virtual Attrs step_attrs(double lr) const = 0;
  // After all variables of a step were updated.
  virtual void end_step() {}
  // Non-slot state beyond the global step.
  virtual std::map<std::string, Tensor> extra_state() const { return {}; }
  virtual bool load_extra(const std::string& key, const Tensor& value) {
    (void)key;
    (void)value;
    return false;
  }

 private:
  std::string name_;
  std::string update_op_;
  LearningRateSchedule schedule_;
  std::vector<SlotSpec> slot_specs_;
  std::map<std::string, Tensor> slots_;
  int64_t global_step_ = 0;
};

// "sgd", "momentum", "rmsprop", "adam", "adagrad", "adadelta", "ftrl" (slim's
// --optimizer values). Throws InvalidArgument naming an unknown optimizer and
// listing the known ones, or naming an invalid hyperparameter.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const LearningRateSchedule& schedule,
                                          const OptimizerOptions& options = {});
std::vector<std::string> optimizer_names();

// ---- gradients and one training step -----------------------------------------
struct GradientOps {
  std::vector<std::string> variables;  // variable names
  std::vector<Output> gradients;       // d loss / d variable, same order
  std::vector<Output> update_ops;      // the graph's kUpdateOps, run with each step
};
// Adds gradient nodes of `loss` w.r.t. the named variables (default: every
// trainable variable the loss depends on) under s.sub("gradients").
GradientOps build_gradients(const Scope& s, Output loss, const std::vector<std::string>& variables = {});
// Runs loss and gradients (and the graph's kUpdateOps as targets) with
// `feeds`; returns the loss value and sets *gradients (in grads' order). For
// loops that apply the gradients of different variables with different
// optimizers (retrain's fine-tuning: the module's variables at their own
// learning rate). `also` are fetched in the same run (e.g. the step's logits
// for summaries), their values into *also_values.
float compute_gradients(Session& session, const GradientOps& grads, Output loss, const FeedList& feeds,
                        GradientList* gradients, const std::vector<Output>& also = {},
                        std::vector<Tensor>* also_values = nullptr);
// compute_gradients, then applies them all with `optimizer`; returns the loss
// value (before the step).
float train_step(Session& session, Optimizer& optimizer, VariableStore& variables, const GradientOps& grads,
                 Output loss, const FeedList& feeds);

// ---- moving averages of variables (tf.train.ExponentialMovingAverage) --------
// shadow -= (1 - d)*(shadow - var), d = decay, or min(decay, (1+n)/(10+n)) when
// apply() gets num_updates n. Shadows are named "<var>/ExponentialMovingAverage"
// and start as a copy of the variable when first tracked (call track() right
// after initialization to match TF, whose shadows start at the initial value).
class ExponentialMovingAverage {
 public:
  explicit ExponentialMovingAverage(double decay);
  static std::string average_name(const std::string& variable) { return variable + "/ExponentialMovingAverage"; }

  // Creates shadows (copies of the current values) for variables not yet tracked.
  void track(const VariableStore& variables, const std::vector<std::string>& names);
  // Tracks any new names, then updates every named shadow once.
  void apply(const VariableStore& variables, const std::vector<std::string>& names,
             std::optional<int64_t> num_updates = std::nullopt);
  // The shadow of `variable`; throws NotFound naming it.
  const Tensor& average(const std::string& variable) const;

  // Copies the shadows into the variables, keeping the live values aside,
  // until restore(); a second swap_in without restore throws FailedPrecondition.
  void swap_in(VariableStore& variables);
  void restore(VariableStore& variables);
  // RAII form: averages in the variables for this object's lifetime.
  class Swapped {
   public:
    Swapped(ExponentialMovingAverage& ema, VariableStore& variables) : ema_(ema), variables_(variables) {
      ema_.swap_in(variables_);
    }
    ~Swapped() { ema_.restore(variables_); }
    Swapped(const Swapped&) = delete;
    Swapped& operator=(const Swapped&) = delete;

   private:
    ExponentialMovingAverage& ema_;
    VariableStore& variables_;
  };

  // Shadows by average_name(); load_state replaces them (InvalidArgument for a
  // key not ending in "/ExponentialMovingAverage").
  std::map<std::string, Tensor> state() const;
  void load_state(const std::map<std::string, Tensor>& state);

 private:
  double decay_;
  std::map<std::string, Tensor> shadows_;  // by variable name
  std::map<std::string, Tensor> backup_;   // live values while swapped in
};

}  // namespace hub

namespace hub::ops {

// slim.l2_regularizer: adds weight_decay * sum(w^2) / 2 to the graph and to the
// collection kRegularizationLosses; returns it (a float32 scalar), or an
// invalid Output when weight_decay is 0. Throws InvalidArgument for a negative
// weight_decay or a weight of unknown shape.
Output l2_regularizer(const Scope& s, Output weight, float weight_decay, const std::string& name = "l2_regularizer");
// Sum of the kRegularizationLosses collection (invalid Output if empty).
Output regularization_loss(const Scope& s, const std::string& name = "regularization_loss");
// loss + regularization_loss (tf.losses.get_total_loss); loss must be a scalar.
Output total_loss(const Scope& s, Output loss, const std::string& name = "total_loss");

}  // namespace hub::ops

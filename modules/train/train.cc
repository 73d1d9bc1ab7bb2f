#include "modules/train/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "hub/backend/backend.h"
#include "hub/core/logging.h"
#include "hub/graph/optimizer.h"
#include "hub/graph/session.h"
#include "hub/interop/tf/display_graph.h"
#include "hub/module/module.h"
#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"
#include "hub/ops/reduction.h"
#include "hub/ops/softmax.h"
#include "hub/ops/state.h"
#include "modules/datasets/convert.h"
#include "modules/datasets/example.h"
#include "modules/datasets/reader.h"
#include "modules/datasets/tfrecord.h"
#include "modules/nets/nets.h"
#include "modules/preprocessing/preprocessing.h"
#include "modules/slim/quantize.h"
#include "modules/train/checkpoint.h"
#include "modules/train/summary.h"

namespace fs = std::filesystem;

namespace hub::train {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A converted data set split: its shards, class names and size.
struct Split {
  std::vector<std::string> files;
  std::vector<std::string> labels;
  int64_t num_samples = 0;
  int64_t num_classes = 0;
};

// Rank 0 counts the examples per label (reading every record) and tells the
// other ranks.
Split open_split(Job& job, const std::string& dir, const std::string& name, const std::string& split,
                 const std::vector<int64_t>& only_classes, int64_t labels_offset) {
  if (dir.empty()) throw_error(Code::kInvalidArgument, "--dataset_dir is required");
  Split out;
  out.files = data::find_split_files(dir, name, split);
  fs::path labels = fs::path(dir) / "labels.txt";
  if (fs::exists(labels)) out.labels = data::read_labels_file(labels.string());
  std::vector<int64_t> per_label;
  std::string counts;
  if (job.chief()) {
    for (const std::string& f : out.files) {
      data::TFRecordReader reader(f);
      std::string record;
      for (int64_t i = 0; reader.read(&record); ++i) {
        int64_t label = data::parse_image_example(record, f + " record " + std::to_string(i)).label;
        if (label >= 0 && label < (int64_t{1} << 20)) {
          if (label >= static_cast<int64_t>(per_label.size())) per_label.resize(label + 1);
          ++per_label[label];
        }
      }
    }
    counts.assign(reinterpret_cast<const char*>(per_label.data()), per_label.size() * sizeof(int64_t));
  }
  job.broadcast(&counts, "broadcast of the examples per label");
  per_label.resize(counts.size() / sizeof(int64_t));
  if (!counts.empty()) std::memcpy(per_label.data(), counts.data(), counts.size());
  if (only_classes.empty()) {
    for (int64_t n : per_label) out.num_samples += n;
  } else {
    std::vector<std::string> kept;
    for (int64_t c : only_classes) {
      if (c < 0 || c >= static_cast<int64_t>(out.labels.size()))
        throw_error(Code::kInvalidArgument, "class " + std::to_string(c) + " is not in labels.txt of " + dir);
      kept.push_back(out.labels[c]);
      if (c < static_cast<int64_t>(per_label.size())) out.num_samples += per_label[c];
    }
    out.labels = kept;
  }
  out.num_classes = static_cast<int64_t>(out.labels.size()) - labels_offset;
  if (out.labels.empty())
    throw_error(Code::kNotFound, "no labels.txt in --dataset_dir " + dir + " (run `hub data convert` first)");
  return out;
}

// This rank's shard of the split (modules/datasets/reader.h).
data::ReaderOptions reader_options(const Split& split, const nets::NetInfo& info, int64_t size,
                                   const std::string& preprocessing_name, bool training, int64_t batch, int threads,
                                   uint64_t seed, const std::vector<int64_t>& only_classes, const Job& job) {
  data::ReaderOptions r;
  r.num_shards = job.size();
  r.shard_index = job.rank();
  r.files = split.files;
  r.batch_size = batch;
  r.height = r.width = size;
  r.channels = static_cast<int>(info.channels);
  r.num_threads = std::max(1, threads);
  r.shuffle_buffer = training ? std::max<int64_t>(1000, 4 * batch) : 0;
  r.seed = seed;
  r.num_epochs = training ? 0 : 1;
  r.drop_remainder = training;
  r.label_dtype = DType::kInt64;
  r.keep_labels = only_classes;
  preprocessing::Fn fn = preprocessing::get(preprocessing_name.empty() ? info.preprocessing : preprocessing_name);
  r.preprocess = [fn, size, training](const Tensor& image, uint64_t s) { return fn(image, size, size, training, s); };
  return r;
}

Tensor offset_labels(const Tensor& labels, int64_t offset) {
  if (offset == 0) return labels;
  Tensor out = labels.clone();
  for (int64_t i = 0; i < out.num_elements(); ++i) out.data<int64_t>()[i] -= offset;
  return out;
}

struct Model {
  Graph graph;
  Output images, labels, loss, total_loss;
  nets::Net net;
};

void build_model(Model& m, const std::string& model_name, int64_t size, int64_t num_classes, bool training,
                 double weight_decay, double label_smoothing, uint64_t seed,
                 slim::QuantizeMode quantize = slim::QuantizeMode::kOff) {
  const nets::NetInfo& info = nets::find_net(model_name);
  m.graph.set_seed(seed);
  Scope s(m.graph);
  m.images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, size, size, info.channels}, "images");
  m.labels = ops::placeholder(s, DType::kInt64, {kUnknownDim}, "labels");
  nets::NetOptions o;
  o.num_classes = num_classes;
  o.is_training = training;
  o.weight_decay = weight_decay;
  o.quantize = quantize;
  // As slim's nets default to when training: inception_v3/v4,
  // inception_resnet_v2, NASNet and PNASNet add "AuxLogits" (the others
  // have none), weighted 0.4 in the loss as train_image_classifier does.
  o.create_aux_logits = training;
  m.net = nets::build_net(model_name, s, m.images, o);
  Scope ls = s.sub("losses");
  m.loss = ops::sparse_softmax_cross_entropy(ls, m.net.logits, m.labels, static_cast<float>(label_smoothing));
  Output loss = m.loss;
  auto aux = m.net.end_points.find("AuxLogits");
  if (aux != m.net.end_points.end())
    loss = ops::add(
        ls, loss,
        ops::mul(ls, ops::scalar(ls, 0.4f),
                 ops::sparse_softmax_cross_entropy(ls, aux->second, m.labels, static_cast<float>(label_smoothing))));
  m.total_loss = ops::total_loss(ls, loss);
}

// The training graph and what runs it. With --quantize_delay N it is built
// twice: the float graph with the activation ranges tracked before step N,
// the fake-quantized graph from step N (the same variables in both).
struct StepGraph {
  slim::QuantizeMode mode = slim::QuantizeMode::kOff;
  Model m;
  GradientOps grads;
  std::unique_ptr<Session> session;
  std::unique_ptr<DataParallelStep> data_parallel;
  // What a summary step also fetches: the end points (slim's activation
  // histograms and sparsity), in the map's order.
  DataParallelStep::Extras extras;
};

// The graph's mode at global step `step` for --quantize_delay.
slim::QuantizeMode quantize_mode_at(int64_t quantize_delay, int64_t step) {
  if (quantize_delay < 0) return slim::QuantizeMode::kOff;
  return step >= quantize_delay ? slim::QuantizeMode::kFakeQuant : slim::QuantizeMode::kTrackRanges;
}

// batch: the global batch (all ranks' examples of one step).
LearningRateSchedule schedule_of(const TrainConfig& c, int64_t num_samples, int64_t batch) {
  int64_t decay_steps = std::max<int64_t>(1, slim_decay_steps(num_samples, batch, c.num_epochs_per_decay));
  if (c.learning_rate_decay_type == "fixed") return LearningRateSchedule::fixed(c.learning_rate);
  if (c.learning_rate_decay_type == "exponential")
    return LearningRateSchedule::exponential(c.learning_rate, decay_steps, c.learning_rate_decay_factor, true);
  if (c.learning_rate_decay_type == "polynomial")
    return LearningRateSchedule::polynomial(c.learning_rate, decay_steps, c.end_learning_rate, 1.0, false);
  throw_error(Code::kInvalidArgument, "--learning_rate_decay_type '" + c.learning_rate_decay_type +
                                          "' is not fixed, exponential or polynomial");
}

// The graph's variables by name with their dtype and shape.
std::map<std::string, TensorSpec> variable_specs(const Graph& g) {
  std::map<std::string, TensorSpec> out;
  for (int id : g.variables()) out[g.node(id).name] = g.node(id).outputs[0];
  return out;
}

// Fine-tuning as train_image_classifier.py's _get_init_fn: every variable of
// the model (BatchNorm moving statistics included) from --checkpoint_path,
// minus --checkpoint_exclude_scopes, minus missing ones with
// --ignore_missing_vars.
void restore_for_fine_tuning(const TrainConfig& c, const Graph& g, VariableStore& vars) {
  CheckpointReader checkpoint(resolve_checkpoint(c.checkpoint_path));
  RestoreOptions o;
  o.exclude_scopes = split_scopes(c.checkpoint_exclude_scopes);
  o.ignore_missing = c.ignore_missing_vars;
  o.what = "--checkpoint_path";
  std::map<std::string, TensorSpec> specs = variable_specs(g);
  std::erase_if(specs,
                [&](const auto& v) { return slim::is_activation_range(v.first) && !checkpoint.contains(v.first); });
  auto values = read_variables(checkpoint, specs, o);
  for (const auto& [name, value] : values) vars.assign(name, value);
  HUB_LOG(Info) << "fine-tuning from " << checkpoint.path() << ": restored " << values.size() << " variables";
}

// The backend named by a --backend flag (empty: the default).
const Backend& backend_named(const std::string& name) {
  try {
    return name.empty() ? default_backend() : find_backend(name);
  } catch (const Error& e) {
    throw e.with_context("--backend");
  }
}

std::map<std::string, Tensor> checkpoint_tensors(const VariableStore& vars, const Optimizer& opt,
                                                 const ExponentialMovingAverage* ema) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, value] : vars.items()) out[name] = to_host(value);
  for (auto& [k, v] : opt.state()) out["optimizer/" + k] = v;
  if (ema)
    for (auto& [k, v] : ema->state()) out[k] = v;
  return out;
}

// Suffix of ExponentialMovingAverage::average_name (25 characters).
const std::string kEmaSuffix = "/ExponentialMovingAverage";

void restore_training_state(const std::string& path, VariableStore& vars, Optimizer& opt,
                            ExponentialMovingAverage* ema) {
  CheckpointReader checkpoint(path);
  std::map<std::string, Tensor> opt_state, ema_state;
  for (const std::string& k : checkpoint.names()) {
    if (k.rfind("optimizer/", 0) == 0)
      opt_state[k.substr(10)] = checkpoint.read(k);
    else if (k.size() > kEmaSuffix.size() &&
             k.compare(k.size() - kEmaSuffix.size(), kEmaSuffix.size(), kEmaSuffix) == 0)
      ema_state[k] = checkpoint.read(k);
    else if (vars.contains(k)) {
      try {
        vars.assign(k, checkpoint.read(k));
      } catch (const Error& e) {
        throw e.with_context("resuming from checkpoint " + path);
      }
    }
  }
  for (auto& [name, t] : vars.items())
    if (!checkpoint.contains(name) && !slim::is_activation_range(name))
      throw_error(Code::kCorruption, "checkpoint " + path + " lacks variable '" + name + "'");
  opt.load_state(opt_state);
  if (ema && !ema_state.empty()) ema->load_state(ema_state);
}

// The summaries of a training step, as train_image_classifier.py merges
// them (tags as its summary ops name them): the loss and learning rate,
// histograms of the model variables, activation histograms and the fraction
// of zeros of each end point, the gradients' histograms and norms with
// summarize_gradients, and the first images of the (preprocessed) batch.
// extras: the end points in end_points' order and the step's gradients.
tensorboard::Summary training_summary(const Model& m, const std::vector<std::string>& model_variables,
                                      const VariableStore& vars, const Tensor& images,
                                      const DataParallelStep::Extras& extras, double loss, double learning_rate,
                                      bool summarize_gradients) {
  tensorboard::Summary s;
  add_scalar(&s, "losses/total_loss", loss);
  add_scalar(&s, "learning_rate", learning_rate);
  size_t k = 0;
  for (const auto& [name, out] : m.net.end_points) {
    const Tensor x = to_host(extras.values.at(k++));
    add_histogram(&s, "activations/" + name, x);
    const float* p = x.data<float>();
    const int64_t n = x.num_elements();
    add_scalar(&s, "sparsity/" + name,
               n == 0 ? 0.0 : static_cast<double>(std::count(p, p + n, 0.0f)) / static_cast<double>(n));
  }
  for (const std::string& name : model_variables) add_histogram(&s, name, to_host(vars.at(name)));
  if (summarize_gradients)
    for (const auto& [name, device_g] : extras.gradients) {
      const Tensor g = to_host(device_g);
      // tf.summary.histogram makes "<var>:gradient" the tag "<var>_gradient".
      add_histogram(&s, name + "_gradient", g);
      const float* p = g.data<float>();
      double squares = 0;
      for (int64_t i = 0; i < g.num_elements(); ++i) squares += static_cast<double>(p[i]) * p[i];
      add_histogram(&s, name + "_gradient_norm", Tensor::scalar(static_cast<float>(std::sqrt(squares))));
    }
  add_images(&s, "input_images", images);
  return s;
}

EvalResult evaluate_on(Job& job, const EvalConfig& c, const std::map<std::string, Tensor>* variables);

TrainResult train_on(Job& job, const TrainConfig& c) {
  if (c.batch_size <= 0) throw_error(Code::kInvalidArgument, "--batch_size must be positive");
  check_replica_flags(c.replica_flags, job);
  const int64_t global_batch = c.batch_size * job.size();
  const CheckpointFormat format = parse_checkpoint_format(c.checkpoint_format);
  const nets::NetInfo& info = nets::find_net(c.model_name);
  int64_t size = c.train_image_size > 0 ? c.train_image_size : info.image_size;
  if (c.quantize_delay < -1)
    throw_error(Code::kInvalidArgument, "--quantize_delay must be -1 (no quantization) or a step >= 0, got " +
                                            std::to_string(c.quantize_delay));
  Split split = open_split(job, c.dataset_dir, c.dataset_name, c.dataset_split_name, c.only_classes, c.labels_offset);
  const std::vector<std::string> scopes = split_scopes(c.trainable_scopes);
  const Backend& backend = backend_named(c.backend);
  SessionOptions session_options;
  session_options.backend = &backend;
  session_options.fetch_to_host = false;  // gradients go to the optimizer where they were computed
  VariableStore vars;
  // On a device backend the variables live there from the first step on.
  auto place_variables = [&] {
    if (backend.device() != Device::kCPU) move_variables(vars, backend.device());
  };
  std::unique_ptr<StepGraph> graph;
  auto build = [&](slim::QuantizeMode mode) {
    graph.reset();  // its session refers to its graph
    auto g = std::make_unique<StepGraph>();
    g->mode = mode;
    build_model(g->m, c.model_name, size, split.num_classes, true, c.weight_decay, c.label_smoothing, c.seed, mode);
    std::vector<std::string> trainable;
    for (int id : g->m.graph.variables(true)) {
      const std::string& name = g->m.graph.node(id).name;
      if (scopes.empty() || in_scopes(name, scopes)) trainable.push_back(name);
    }
    if (trainable.empty())
      throw_error(Code::kInvalidArgument, "--trainable_scopes '" + c.trainable_scopes + "' selects no variable");
    g->grads = build_gradients(Scope(g->m.graph), g->m.total_loss, trainable);
    g->session = std::make_unique<Session>(g->m.graph, &vars, session_options);
    g->data_parallel =
        std::make_unique<DataParallelStep>(job, g->m.graph, g->grads, g->m.total_loss, c.gradient_bucket_bytes);
    for (const auto& [name, out] : g->m.net.end_points) g->extras.fetches.push_back(out);
    graph = std::move(g);
  };
  build(quantize_mode_at(c.quantize_delay, 0));
  if (c.quantize_delay >= 0 && slim::count_activation_ranges(graph->m.graph) == 0)
    throw_error(Code::kInvalidArgument, "--quantize_delay " + std::to_string(c.quantize_delay) + ": model " +
                                            c.model_name + " has no layer to quantize");
  auto optimizer = make_optimizer(c.optimizer, schedule_of(c, split.num_samples, global_batch), c.optimizer_options);
  vars.initialize(graph->m.graph);
  std::unique_ptr<ExponentialMovingAverage> ema;
  if (c.moving_average_decay > 0) ema = std::make_unique<ExponentialMovingAverage>(c.moving_average_decay);
  // Rank 0 restores; broadcast_training_state gives its state to the others.
  if (auto latest = job.chief() ? latest_checkpoint(c.train_dir) : std::nullopt) {
    restore_training_state(*latest, vars, *optimizer, ema.get());
    HUB_LOG(Info) << "resuming from " << *latest << " at step " << optimizer->global_step();
  } else if (job.chief() && !c.checkpoint_path.empty()) {
    restore_for_fine_tuning(c, graph->m.graph, vars);
  }
  // slim.get_model_variables(): every variable of the net, trained or not,
  // batch-norm moving statistics included (optimizer slots live outside the graph).
  std::vector<std::string> model_variables;
  for (int id : graph->m.graph.variables(false)) model_variables.push_back(graph->m.graph.node(id).name);
  if (ema) ema->track(vars, model_variables);
  broadcast_training_state(job, vars, *optimizer, ema.get());
  // Every rank has the restored step, so all build the same graph.
  if (quantize_mode_at(c.quantize_delay, optimizer->global_step()) != graph->mode)
    build(quantize_mode_at(c.quantize_delay, optimizer->global_step()));
  place_variables();

  int64_t steps_per_epoch = std::max<int64_t>(1, split.num_samples / global_batch);
  int64_t max_steps = c.max_number_of_steps;
  if (c.train_epochs > 0)
    max_steps = static_cast<int64_t>(std::ceil(c.train_epochs * static_cast<double>(steps_per_epoch)));
  int64_t eval_every =
      c.epochs_between_evals > 0
          ? std::max<int64_t>(1, static_cast<int64_t>(c.epochs_between_evals * static_cast<double>(steps_per_epoch)))
          : 0;
  data::ReaderOptions read = reader_options(split, info, size, c.preprocessing_name, true, c.batch_size,
                                            c.num_preprocessing_threads, c.seed, c.only_classes, job);
  if (backend.device() != Device::kCPU) read.batch_allocator = backend.make_host_allocator();
  data::DatasetReader reader(std::move(read));
  std::optional<SummaryWriter> summaries;
  if (job.chief()) {
    summaries.emplace(c.train_dir);
    summaries->graph(tf::display_graph_def(graph->m.graph).SerializeAsString());
  }
  TrainResult result;
  auto save = [&] {
    if (!job.chief()) return;
    save_checkpoint(c.train_dir, optimizer->global_step(), checkpoint_tensors(vars, *optimizer, ema.get()), format);
    result.checkpoint = *latest_checkpoint(c.train_dir);
  };
  auto last_save = Clock::now(), last_summary = Clock::now(), window = Clock::now();
  int64_t window_steps = 0;
  // A step's batch: as read (the summaries' images) and as fed, on the
  // backend's device. The next one is read, and its copy queued, while the
  // device still runs the current step (see below).
  struct StepBatch {
    data::Batch read;
    Tensor images, labels;
  };
  auto fetch = [&](StepBatch* b) {
    if (!reader.next(&b->read)) return false;
    b->images = to_device(b->read.images, backend.device());
    b->labels = to_device(offset_labels(b->read.labels, c.labels_offset), backend.device());
    return true;
  };
  auto more_steps = [&] { return max_steps <= 0 || optimizer->global_step() < max_steps; };
  StepBatch batch, next_batch;
  bool have_batch = more_steps() && fetch(&batch);
  HUB_LOG(Info) << "training " << c.model_name << " on " << c.dataset_name << "/" << c.dataset_split_name << " ("
                << split.num_samples << " examples, " << split.num_classes << " classes), batch " << c.batch_size
                << (job.size() > 1 ? " per rank on " + std::to_string(job.size()) + " ranks" : std::string()) << ", "
                << (max_steps > 0 ? std::to_string(max_steps) + " steps" : std::string("no step limit"));
  for (; have_batch; std::swap(batch, next_batch)) {
    double lr = optimizer->learning_rate();
    const int64_t next_step = optimizer->global_step() + 1;
    const bool summarize =
        summaries && (seconds_since(last_summary) >= c.save_summaries_secs || next_step == 1 || next_step % 100 == 0);
    if (quantize_mode_at(c.quantize_delay, optimizer->global_step()) != graph->mode) {
      build(quantize_mode_at(c.quantize_delay, optimizer->global_step()));
      place_variables();
      HUB_LOG(Info) << "step " << next_step << ": fake quantization on (--quantize_delay)";
    }
    const Model& m = graph->m;
    const FeedList feeds = {{m.images, batch.images}, {m.labels, batch.labels}};
    if (c.quantize_delay >= 0 && result.losses.empty()) {
      const int fresh = slim::initialize_activation_ranges(*graph->session, m.graph, vars, feeds);
      if (fresh > 0) {
        HUB_LOG(Info) << fresh << " activation ranges set from the first batch";
      }
    }
    const Tensor loss_value =
        graph->data_parallel->run(*graph->session, *optimizer, vars, feeds, summarize ? &graph->extras : nullptr);
    // On a device the step is only queued: read the next batch and queue its
    // copy now, then wait for the loss.
    have_batch = more_steps() && fetch(&next_batch);
    const float loss = to_host(loss_value).item<float>();
    int64_t step = optimizer->global_step();
    if (!std::isfinite(loss))
      throw_error(Code::kFailedPrecondition, "model diverged with loss = " + std::to_string(loss) + " at step " +
                                                 std::to_string(step) + " (NaN or infinite loss)");
    if (ema) ema->apply(vars, model_variables, step);
    if (result.losses.empty()) result.first_loss = loss;
    result.losses.push_back(loss);
    result.final_loss = loss;
    ++window_steps;
    if (job.chief() && (step % std::max(1, c.log_every_n_steps) == 0 || step == max_steps)) {
      double secs = seconds_since(window) / static_cast<double>(window_steps);
      std::printf("step %lld: loss = %.4f, learning_rate = %.6g (%.1f examples/sec; %.3f sec/batch)\n",
                  static_cast<long long>(step), loss, lr, static_cast<double>(global_batch) / secs, secs);
      std::fflush(stdout);
      window = Clock::now();
      window_steps = 0;
    }
    if (summarize) {
      summaries->write(
          training_summary(m, model_variables, vars, batch.read.images, graph->extras, loss, lr, c.summarize_gradients),
          step);
      last_summary = Clock::now();
    }
    if (job.chief() && seconds_since(last_save) >= c.save_interval_secs) {
      save();
      last_save = Clock::now();
    }
    if (eval_every > 0 && step % eval_every == 0) {
      save();
      EvalConfig e;
      e.checkpoint_path = result.checkpoint;
      e.model_name = c.model_name;
      e.dataset_name = c.dataset_name;
      e.dataset_split_name = c.eval_split;
      e.dataset_dir = c.dataset_dir;
      e.labels_offset = c.labels_offset;
      e.preprocessing_name = c.preprocessing_name;
      e.eval_image_size = size;
      e.num_preprocessing_threads = c.num_preprocessing_threads;
      e.only_classes = c.only_classes;
      e.quantize = graph->mode == slim::QuantizeMode::kFakeQuant;
      e.backend = c.backend;
      EvalResult r = evaluate_on(job, e, &vars.items());
      result.last_eval_accuracy = r.accuracy;
      if (job.chief()) {  // every rank has the same accuracy, so all stop together
        summaries->scalar("eval/accuracy", r.accuracy, step);
        std::printf("step %lld: eval accuracy = %.4f (%lld examples)\n", static_cast<long long>(step), r.accuracy,
                    static_cast<long long>(r.examples));
        std::fflush(stdout);
      }
      if (c.stop_threshold > 0 && r.accuracy >= c.stop_threshold) {
        HUB_LOG(Info) << "stop_threshold " << c.stop_threshold << " reached";
        break;
      }
    }
  }
  save();
  result.steps = optimizer->global_step();
  check_replicas_agree(job, checkpoint_tensors(vars, *optimizer, ema.get()), result.steps);
  return result;
}

}  // namespace

TrainResult train(const TrainConfig& c) {
  Job& j = job();
  return run_on_job(j, [&] { return train_on(j, c); });
}

namespace {

// Evaluates `variables` when given (training's evaluation between epochs),
// else those of c.checkpoint_path.
EvalResult evaluate_on(Job& job, const EvalConfig& c, const std::map<std::string, Tensor>* variables) {
  const nets::NetInfo& info = nets::find_net(c.model_name);
  // The checkpoint (read by rank 0) is found before the data set is opened.
  std::string path;
  if (!variables && job.chief()) {
    try {
      path = resolve_checkpoint(c.checkpoint_path);
    } catch (const Error& e) {
      throw e.with_context("--checkpoint_path");
    }
  }
  int64_t size = c.eval_image_size > 0 ? c.eval_image_size : info.image_size;
  Split split = open_split(job, c.dataset_dir, c.dataset_name, c.dataset_split_name, c.only_classes, c.labels_offset);
  Model m;
  build_model(m, c.model_name, size, split.num_classes, false, 0, 0, 0,
              c.quantize ? slim::QuantizeMode::kFakeQuant : slim::QuantizeMode::kOff);
  Scope s(m.graph);
  Output top5 = ops::top_k(s, m.net.logits, std::min<int64_t>(5, split.num_classes)).indices;
  std::map<std::string, Tensor> values;
  if (variables) {
    for (const auto& [name, spec] : variable_specs(m.graph)) {
      auto it = variables->find(name);
      HUB_CHECK(it != variables->end(), "the trained model lacks the evaluated variable " + name);
      values[name] = it->second;
    }
  } else {
    // Rank 0 reads the checkpoint and gives its variables to the others.
    if (job.chief()) {
      RestoreOptions ro;
      ro.moving_averages = c.moving_average_decay > 0;
      ro.what = "--checkpoint_path";
      values = read_variables(CheckpointReader(path), variable_specs(m.graph), ro);
    }
    broadcast_tensors(job, &values, "broadcast of the checkpoint's variables");
  }
  VariableStore vars;
  for (auto& [name, value] : values) vars.set(name, value);
  data::DatasetReader reader(reader_options(split, info, size, c.preprocessing_name, false, c.batch_size,
                                            c.num_preprocessing_threads, 0, c.only_classes, job));
  SessionOptions session_options;
  session_options.backend = &backend_named(c.backend);
  Session session(m.graph, &vars, session_options);
  EvalResult r;
  int64_t correct = 0, in_top5 = 0, batches = 0;
  data::Batch batch;
  while ((c.max_num_batches <= 0 || batches < c.max_num_batches) && reader.next(&batch)) {
    Tensor labels = offset_labels(batch.labels, c.labels_offset);
    Tensor idx = session.run({{m.images, batch.images}}, {top5})[0];
    int64_t n = labels.num_elements(), k = idx.dim(1);
    const int32_t* pi = idx.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t label = labels.data<int64_t>()[i];
      if (pi[i * k] == label) ++correct;
      for (int64_t j = 0; j < k; ++j)
        if (pi[i * k + j] == label) ++in_top5;
    }
    r.examples += n;
    ++batches;
  }
  // The whole split's counts on every rank (exact: integers in doubles).
  double counts[3] = {static_cast<double>(correct), static_cast<double>(in_top5), static_cast<double>(r.examples)};
  job.sum(counts, 3, "sum of the evaluation counts");
  r.examples = static_cast<int64_t>(counts[2]);
  if (r.examples == 0)
    throw_error(Code::kNotFound, "split " + c.dataset_split_name + " of " + c.dataset_dir + " has no examples");
  r.accuracy = counts[0] / counts[2];
  r.recall_at_5 = counts[1] / counts[2];
  if (job.chief() && !c.eval_dir.empty()) {
    SummaryWriter w(c.eval_dir);
    int64_t step = std::max<int64_t>(0, checkpoint_step(path));
    w.scalar("eval/Accuracy", r.accuracy, step);
    w.scalar("eval/Recall_5", r.recall_at_5, step);
  }
  return r;
}

}  // namespace

EvalResult evaluate(const EvalConfig& c) {
  Job& j = job();
  return run_on_job(j, [&] { return evaluate_on(j, c, nullptr); });
}

namespace {
// Maps module input images in [0, 1] to the range the net was trained on.
Output input_transform(const Scope& s, Output x, const std::string& preprocessing) {
  if (preprocessing == "inception") return ops::sub(s, ops::mul(s, x, ops::scalar(s, 2.0f)), ops::scalar(s, 1.0f));
  if (preprocessing == "lenet")
    return ops::sub(s, ops::mul(s, x, ops::scalar(s, 255.0f / 128.0f)), ops::scalar(s, 1.0f));
  if (preprocessing == "vgg")
    return ops::sub(s, ops::mul(s, x, ops::scalar(s, 255.0f)),
                    ops::constant(s, Tensor::floats({123.68f, 116.78f, 103.94f}), "rgb_means"));
  if (preprocessing == "cifarnet" || preprocessing == "cifar10") {
    // tf.image.per_image_standardization on the 0..255 scale, per image.
    const Shape& shape = s.graph().spec(x).shape;
    float n = static_cast<float>(shape[1] * shape[2] * shape[3]);
    Output v = ops::mul(s, x, ops::scalar(s, 255.0f));
    Output centered = ops::sub(s, v, ops::mean(s, v, {1, 2, 3}, true));
    Output stddev = ops::sqrt(s, ops::mean(s, ops::square(s, centered), {1, 2, 3}, true));
    return ops::div(s, centered, ops::maximum(s, stddev, ops::scalar(s, 1.0f / std::sqrt(n))));
  }
  return x;  // mnist: [0, 1] as is
}
}  // namespace

void export_module(const ExportConfig& c) {
  if (c.output_dir.empty()) throw_error(Code::kInvalidArgument, "--output_dir is required");
  const nets::NetInfo& info = nets::find_net(c.model_name);
  int64_t size = c.image_size > 0 ? c.image_size : info.image_size;
  std::vector<std::string> labels;
  if (!c.dataset_dir.empty() && fs::exists(fs::path(c.dataset_dir) / "labels.txt")) {
    labels = data::read_labels_file((fs::path(c.dataset_dir) / "labels.txt").string());
    if (!c.only_classes.empty()) {
      std::vector<std::string> kept;
      for (int64_t k : c.only_classes) {
        if (k < 0 || k >= static_cast<int64_t>(labels.size()))
          throw_error(Code::kInvalidArgument,
                      "class " + std::to_string(k) + " is not in labels.txt of " + c.dataset_dir);
        kept.push_back(labels[static_cast<size_t>(k)]);
      }
      labels = kept;
    }
    if (c.labels_offset > 0 && static_cast<int64_t>(labels.size()) > c.labels_offset)
      labels.erase(labels.begin(), labels.begin() + c.labels_offset);
  }
  int64_t classes = c.num_classes > 0         ? c.num_classes
                    : !labels.empty()         ? static_cast<int64_t>(labels.size())
                    : !c.only_classes.empty() ? static_cast<int64_t>(c.only_classes.size())
                                              : info.default_classes;
  auto fn = [&](ModuleBuilder& b, const Attrs& args) {
    Scope s = b.scope();
    Output images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, size, size, info.channels}, "images");
    nets::NetOptions o;
    o.num_classes = classes;
    o.is_training = args.get_bool("is_training");
    o.quantize = c.quantize ? slim::QuantizeMode::kFakeQuant : slim::QuantizeMode::kOff;
    nets::Net net = nets::build_net(c.model_name, s, input_transform(s.sub("input"), images, info.preprocessing), o);
    b.add_signature(kDefaultSignature, {{"images", images}}, {{"default", net.features}});
    b.add_signature("logits", {{"images", images}}, {{"default", net.logits}});
    b.add_signature("classification", {{"images", images}},
                    {{"default", ops::softmax(s, net.logits, -1, "probabilities")}});
    b.set_image_info(size, size, info.channels);
    ModuleMetadata meta;
    meta.name = c.model_name;
    meta.description = "Built-in network " + c.model_name + " exported by hub export" +
                       (c.checkpoint_path.empty() ? " (initial weights)" : " from " + c.checkpoint_path);
    meta.version = HUB_VERSION;
    meta.license = "Apache-2.0";
    b.set_metadata(meta);
    if (!labels.empty()) {
      std::string text;
      for (const std::string& l : labels) text += l + "\n";
      b.add_asset("labels.txt", text);
    }
  };
  ModuleSpec spec = create_module_spec(
      fn, {{TagSet{}, Attrs().set("is_training", c.is_training)}, {TagSet{"train"}, Attrs().set("is_training", true)}});
  Module module(spec);
  if (!c.checkpoint_path.empty()) {
    CheckpointReader checkpoint(resolve_checkpoint(c.checkpoint_path));
    std::map<std::string, TensorSpec> wanted;
    for (const std::string& name : module.variable_map().names()) {
      const Tensor& t = module.variable_map().at(name).value();
      wanted[name] = {t.dtype(), t.shape()};
    }
    RestoreOptions ro;
    ro.what = "--checkpoint_path";
    for (const auto& [name, value] : read_variables(checkpoint, wanted, ro))
      module.variable_map().at(name).assign(value);
    if (!c.quantize) {
      const std::vector<std::string> names = checkpoint.names();
      if (std::any_of(names.begin(), names.end(), slim::is_activation_range)) {
        HUB_LOG(Warning) << "--checkpoint_path " << checkpoint.path()
                         << " was trained with fake quantization (--quantize_delay); without --quantize the module "
                            "is the float network";
      }
    }
  }
  module.export_to(c.output_dir);
}

}  // namespace hub::train

// `hub train`, `hub eval`, `hub export`: TF-Slim's train_image_classifier,
// eval_image_classifier and export_inference_graph, with their flag names.
#include "modules/train/train.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "hub/core/error.h"

namespace hub::cli {
namespace {

RunFn setup_train(CLI::App& app) {
  auto c = std::make_shared<train::TrainConfig>();
  auto classes = std::make_shared<std::string>();
  app.add_option("--train_dir", c->train_dir, "Where checkpoints and event logs are written")->capture_default_str();
  app.add_option("--model_name", c->model_name, "Network to train (see `hub nets`)")->capture_default_str();
  app.add_option("--dataset_name", c->dataset_name, "mnist, fashion_mnist, cifar10, flowers")->capture_default_str();
  app.add_option("--dataset_split_name", c->dataset_split_name, "Split to train on (train, test, validation)")
      ->capture_default_str();
  app.add_option("--dataset_dir", c->dataset_dir, "Folder written by `hub data convert`")->required();
  app.add_option("--labels_offset", c->labels_offset,
                 "Subtracted from every label (1 for checkpoints with a background class)")
      ->capture_default_str();
  app.add_option("--preprocessing_name", c->preprocessing_name, "Default: the network's");
  app.add_option("--train_image_size", c->train_image_size, "Default: the network's");
  app.add_option("--batch_size", c->batch_size, "Images per training step")->capture_default_str();
  app.add_option("--max_number_of_steps", c->max_number_of_steps, "Stop after this many steps")->capture_default_str();
  app.add_option("--num_preprocessing_threads", c->num_preprocessing_threads,
                 "Threads decoding and preprocessing images")
      ->capture_default_str();
  app.add_option("--log_every_n_steps", c->log_every_n_steps, "Log the loss every N steps")->capture_default_str();
  app.add_option("--save_interval_secs", c->save_interval_secs, "Write a checkpoint every N seconds")
      ->capture_default_str();
  app.add_option("--save_summaries_secs", c->save_summaries_secs, "Write summaries every N seconds")
      ->capture_default_str();
  app.add_flag("--summarize_gradients", c->summarize_gradients,
               "Also write histograms of the gradients and of their norms to the summaries");
  app.add_option("--optimizer", c->optimizer, "adadelta, adagrad, adam, ftrl, momentum, sgd, rmsprop")
      ->capture_default_str();
  app.add_option("--weight_decay", c->weight_decay, "L2 regularization of the weights")->capture_default_str();
  app.add_option("--adadelta_rho", c->optimizer_options.adadelta_rho, "Adadelta decay rate")->capture_default_str();
  app.add_option("--adagrad_initial_accumulator_value", c->optimizer_options.adagrad_initial_accumulator_value,
                 "Adagrad: starting value of the accumulators")
      ->capture_default_str();
  app.add_option("--adam_beta1", c->optimizer_options.adam_beta1, "Adam: decay of the first-moment estimates")
      ->capture_default_str();
  app.add_option("--adam_beta2", c->optimizer_options.adam_beta2, "Adam: decay of the second-moment estimates")
      ->capture_default_str();
  app.add_option("--opt_epsilon", c->optimizer_options.opt_epsilon, "Epsilon of the optimizer")->capture_default_str();
  app.add_option("--ftrl_learning_rate_power", c->optimizer_options.ftrl_learning_rate_power,
                 "FTRL: learning rate power")
      ->capture_default_str();
  app.add_option("--ftrl_initial_accumulator_value", c->optimizer_options.ftrl_initial_accumulator_value,
                 "FTRL: starting value of the accumulators")
      ->capture_default_str();
  app.add_option("--ftrl_l1", c->optimizer_options.ftrl_l1, "FTRL: L1 regularization strength")->capture_default_str();
  app.add_option("--ftrl_l2", c->optimizer_options.ftrl_l2, "FTRL: L2 regularization strength")->capture_default_str();
  app.add_option("--momentum", c->optimizer_options.momentum, "Momentum of the momentum optimizer")
      ->capture_default_str();
  app.add_option("--rmsprop_momentum", c->optimizer_options.rmsprop_momentum, "RMSProp: momentum")
      ->capture_default_str();
  app.add_option("--rmsprop_decay", c->optimizer_options.rmsprop_decay,
                 "RMSProp: decay of the squared-gradient average")
      ->capture_default_str();
  app.add_option("--learning_rate_decay_type", c->learning_rate_decay_type, "fixed, exponential or polynomial")
      ->capture_default_str();
  app.add_option("--learning_rate", c->learning_rate, "Initial learning rate")->capture_default_str();
  app.add_option("--end_learning_rate", c->end_learning_rate, "Polynomial decay: the final learning rate")
      ->capture_default_str();
  app.add_option("--learning_rate_decay_factor", c->learning_rate_decay_factor,
                 "Exponential decay: factor per decay period")
      ->capture_default_str();
  app.add_option("--num_epochs_per_decay", c->num_epochs_per_decay, "Epochs between learning-rate decays")
      ->capture_default_str();
  app.add_option("--label_smoothing", c->label_smoothing, "Label smoothing amount (0: none)")->capture_default_str();
  app.add_option("--moving_average_decay", c->moving_average_decay, "0: no moving averages")->capture_default_str();
  app.add_option("--quantize_delay", c->quantize_delay,
                 "Train with fake quantization (int8 weights and activations) from this step; -1: off")
      ->capture_default_str();
  app.add_option("--checkpoint_format", c->checkpoint_format,
                 "Checkpoints written to --train_dir: safetensors or tf (TensorFlow V2, model.ckpt-N.index + .data-*)")
      ->capture_default_str();
  app.add_option("--checkpoint_path", c->checkpoint_path,
                 "Fine-tune from this checkpoint: a TensorFlow checkpoint prefix (model.ckpt-N), a safetensors file, "
                 "or a folder with a 'checkpoint' file");
  app.add_option("--checkpoint_exclude_scopes", c->checkpoint_exclude_scopes,
                 "Comma-separated variable name prefixes not restored (e.g. MobilenetV1/Logits)");
  app.add_option("--trainable_scopes", c->trainable_scopes,
                 "Comma-separated variable name prefixes to train (default: all)");
  app.add_flag("--ignore_missing_vars", c->ignore_missing_vars,
               "Variables the checkpoint lacks keep their initial values instead of failing");
  app.add_option("--train_epochs", c->train_epochs, "Train this many epochs (overrides --max_number_of_steps)");
  app.add_option("--epochs_between_evals", c->epochs_between_evals, "Evaluate every N epochs");
  app.add_option("--eval_split", c->eval_split, "Split evaluated between epochs")->capture_default_str();
  app.add_option("--stop_threshold", c->stop_threshold, "Stop once eval accuracy reaches this");
  app.add_option("--classes", *classes, "Train on these class ids only, e.g. 0-4 (relabelled 0..k-1)");
  app.add_option("--seed", c->seed, "Seed for initialization, shuffling and preprocessing")->capture_default_str();
  // Data parallelism: `mpirun -np N hub train ...` (docs/distributed.md).
  auto bucket_mb = std::make_shared<double>(static_cast<double>(c->gradient_bucket_bytes) / (1 << 20));
  app.add_option("--gradient_bucket_mb", *bucket_mb, "Under mpirun: gradients are averaged in buckets of this many MiB")
      ->capture_default_str();
  app.add_option("--num_clones", c->replica_flags.num_clones, "slim's clones per process: 1 (N clones: mpirun -np N)");
  app.add_option("--worker_replicas", c->replica_flags.worker_replicas, "slim's replicas: the processes mpirun starts");
  auto sync = std::make_shared<bool>(true);
  CLI::Option* sync_flag = app.add_flag("--sync_replicas,!--nosync_replicas", *sync,
                                        "Synchronous replicas (hub always is; asynchronous training is not supported)");
  app.add_option("--replicas_to_aggregate", c->replica_flags.replicas_to_aggregate,
                 "Gradients averaged per step: the processes mpirun starts");
  app.add_option("--num_ps_tasks", c->replica_flags.num_ps_tasks, "Parameter servers: 0 (gradients are all-reduced)");
  add_backend_flag(app, c->backend);
  return [c, classes, bucket_mb, sync, sync_flag] {
    use_backend(c->backend);
    c->only_classes = parse_class_list(*classes, "--classes");
    if (!(*bucket_mb > 0 && *bucket_mb <= 1 << 20))
      throw_error(Code::kInvalidArgument,
                  "--gradient_bucket_mb must be in (0, 1048576] MiB, got " + std::to_string(*bucket_mb));
    c->gradient_bucket_bytes = std::max<int64_t>(1, static_cast<int64_t>(*bucket_mb * (1 << 20)));
    if (sync_flag->count()) c->replica_flags.sync_replicas = *sync ? 1 : 0;
    train::TrainResult r = train::train(*c);
    if (!train::job().chief()) return 0;
    std::printf("trained %lld steps, final loss %.4f, checkpoint %s\n", static_cast<long long>(r.steps), r.final_loss,
                r.checkpoint.c_str());
    return 0;
  };
}

RunFn setup_eval(CLI::App& app) {
  auto c = std::make_shared<train::EvalConfig>();
  auto classes = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  app.add_option("--checkpoint_path", c->checkpoint_path,
                 "TensorFlow checkpoint prefix, safetensors file, or a train_dir (its latest checkpoint); "
                 "default: hub train's default --train_dir")
      ->capture_default_str();
  app.add_option("--model_name", c->model_name, "Network to evaluate (see `hub nets`)")->capture_default_str();
  app.add_option("--dataset_name", c->dataset_name, "mnist, fashion_mnist, cifar10, flowers")->capture_default_str();
  app.add_option("--dataset_split_name", c->dataset_split_name, "Split to evaluate (train, test, validation)")
      ->capture_default_str();
  app.add_option("--dataset_dir", c->dataset_dir, "Folder written by `hub data convert`")->required();
  app.add_option("--eval_dir", c->eval_dir, "Write TensorBoard logs here");
  app.add_option("--labels_offset", c->labels_offset, "Subtracted from every label (as when training)")
      ->capture_default_str();
  app.add_option("--preprocessing_name", c->preprocessing_name, "Default: the network's");
  app.add_option("--eval_image_size", c->eval_image_size, "Default: the network's");
  app.add_option("--batch_size", c->batch_size, "Images per evaluation batch")->capture_default_str();
  app.add_option("--max_num_batches", c->max_num_batches, "Evaluate at most this many batches (0: the whole split)")
      ->capture_default_str();
  app.add_option("--num_preprocessing_threads", c->num_preprocessing_threads,
                 "Threads decoding and preprocessing images")
      ->capture_default_str();
  app.add_option("--moving_average_decay", c->moving_average_decay, "> 0: evaluate the moving averages");
  app.add_flag("--quantize", c->quantize, "Evaluate the fake-quantized graph (trained with --quantize_delay)");
  app.add_option("--classes", *classes, "Evaluate on these class ids only (as trained with --classes)");
  app.add_flag("--json", *json, "Print JSON: examples, accuracy, recall_at_5");
  add_backend_flag(app, c->backend);
  return [c, classes, json] {
    use_backend(c->backend);
    c->only_classes = parse_class_list(*classes, "--classes");
    train::EvalResult r = train::evaluate(*c);
    if (!train::job().chief()) return 0;
    if (*json) {
      print_json({{"examples", r.examples}, {"accuracy", r.accuracy}, {"recall_at_5", r.recall_at_5}});
      return 0;
    }
    std::printf("examples=%lld\naccuracy=%.4f recall_at_5=%.4f\n", static_cast<long long>(r.examples), r.accuracy,
                r.recall_at_5);
    return 0;
  };
}

RunFn setup_export(CLI::App& app) {
  auto c = std::make_shared<train::ExportConfig>();
  auto classes = std::make_shared<std::string>();
  app.add_option("--model_name", c->model_name, "Network to export (see `hub nets`)")->required();
  app.add_option("--checkpoint_path", c->checkpoint_path,
                 "Weights: TensorFlow checkpoint prefix, safetensors file or train_dir; default: initial values");
  app.add_option("--num_classes", c->num_classes, "Default: from the dataset's labels.txt or the network's");
  app.add_option("--dataset_name", c->dataset_name, "Data set the checkpoint was trained on (for labels.txt)");
  app.add_option("--dataset_dir", c->dataset_dir, "For labels.txt");
  app.add_option("--labels_offset", c->labels_offset, "Label offset used when training");
  app.add_option("--image_size", c->image_size, "Input image size (default: the network's)");
  app.add_flag("--is_training", c->is_training,
               "The default tag set holds the training-mode graph (batch norm on batch statistics, dropout on)");
  app.add_flag("--quantize", c->quantize,
               "Keep the fake quantization of training with --quantize_delay (FakeQuant nodes, range variables)");
  app.add_option("--output_dir,--output_file", c->output_dir,
                 "The module folder to create (must not exist); --output_file is slim's name for it")
      ->required();
  app.add_option("--classes", *classes, "Class ids the checkpoint was trained on (labels kept)");
  return [c, classes] {
    c->only_classes = parse_class_list(*classes, "--classes");
    train::export_module(*c);
    std::printf("%s\n", c->output_dir.c_str());
    return 0;
  };
}

}  // namespace

HUB_REGISTER_COMMAND(train, "Train a built-in network on a converted data set (train_image_classifier)", setup_train);
HUB_REGISTER_COMMAND(eval, "Evaluate a checkpoint: accuracy and recall@5 (eval_image_classifier)", setup_eval);
HUB_REGISTER_COMMAND(export, "Export a built-in network (and checkpoint) as a module", setup_export);

}  // namespace hub::cli

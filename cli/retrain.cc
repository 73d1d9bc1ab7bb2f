// `hub retrain`: retrain.py's flags and defaults (see retrain/retrain.h).
#include "retrain/retrain.h"

#include <cstdio>

#include "cli/command.h"
#include "modules/train/distributed.h"

namespace hub::cli {
namespace {

RunFn setup_retrain(CLI::App& app) {
  auto c = std::make_shared<retrain::RetrainConfig>();
  auto module = std::make_shared<ModuleArgs>();
  app.add_option("--image_dir,--image-dir", c->image_dir, "Folder with one sub-folder of images per class")->required();
  add_module_args(app, *module, "The image feature-vector module", "--tfhub_module");
  app.add_option("--output_graph", c->output_graph, "Where to write the retrained module (must not exist)")
      ->capture_default_str();
  app.add_option("--output_labels", c->output_labels, "Where to write the labels")->capture_default_str();
  app.add_option("--intermediate_output_graphs_dir", c->intermediate_output_graphs_dir,
                 "Where the intermediate modules go (with --intermediate_store_frequency)")
      ->capture_default_str();
  app.add_option("--intermediate_store_frequency", c->intermediate_store_frequency, "Export every N steps (0: never)")
      ->capture_default_str();
  app.add_option("--summaries_dir", c->summaries_dir, "TensorBoard logs")->capture_default_str();
  app.add_option("--how_many_training_steps", c->how_many_training_steps, "Training steps of the new head")
      ->capture_default_str();
  app.add_option("--learning_rate", c->learning_rate, "Learning rate of the head's gradient descent")
      ->capture_default_str();
  app.add_option("--testing_percentage", c->testing_percentage, "Percent of the images used for the final test")
      ->capture_default_str();
  app.add_option("--validation_percentage", c->validation_percentage, "Percent of the images used for validation")
      ->capture_default_str();
  app.add_option("--eval_step_interval", c->eval_step_interval, "Evaluate on the validation batch every N steps")
      ->capture_default_str();
  app.add_option("--train_batch_size", c->train_batch_size, "Images per training step")->capture_default_str();
  app.add_option("--test_batch_size", c->test_batch_size, "-1: the whole test set")->capture_default_str();
  app.add_option("--validation_batch_size", c->validation_batch_size, "-1: the whole validation set")
      ->capture_default_str();
  app.add_flag("--print_misclassified_test_images", c->print_misclassified_test_images,
               "Print the test images the final model gets wrong");
  app.add_option("--bottleneck_dir", c->bottleneck_dir, "Where bottleneck vectors are cached")->capture_default_str();
  app.add_option("--final_tensor_name", c->final_tensor_name, "Name of the classification output in the new module")
      ->capture_default_str();
  app.add_flag("--flip_left_right", c->flip_left_right, "Randomly mirror training images horizontally");
  app.add_option("--random_crop", c->random_crop, "Percent margin to crop")->capture_default_str();
  app.add_option("--random_scale", c->random_scale, "Percent range of scaling")->capture_default_str();
  app.add_option("--random_brightness", c->random_brightness, "Percent range of brightness")->capture_default_str();
  app.add_option("--saved_model_dir", c->saved_model_dir, "Also export the module here");
  app.add_option("--random_seed", c->seed, "Seed for batch sampling, initialization and distortions")
      ->capture_default_str();
  app.add_flag("--quantize", c->quantize,
               "Train the head with fake quantization of its input, weights and logits (for hub quantize)");
  app.add_flag("--fine_tune", c->fine_tune,
               "Train the module's own variables with the head (TF Hub's trainable=True; its {train} tag set when it "
               "has one); distortions apply on the fly and the bottleneck cache is not used");
  app.add_option("--fine_tune_scopes", c->fine_tune_scopes,
                 "With --fine_tune: comma-separated prefixes of the module variables to train (default: all "
                 "trainable)");
  auto module_rate = std::make_shared<double>(0);
  CLI::Option* module_rate_flag =
      app.add_option("--fine_tune_learning_rate", *module_rate,
                     "With --fine_tune: learning rate of the module's variables (default: --learning_rate / 10)");
  auto backend = std::make_shared<std::string>();
  add_backend_flag(app, *backend);
  return [c, module, module_rate, module_rate_flag, backend] {
    use_backend(*backend);
    c->module = module->module;
    if (module_rate_flag->count()) c->fine_tune_learning_rate = *module_rate;
    retrain::RetrainResult r = retrain::retrain(*c, make_resolver(*module));
    if (!train::job().chief()) return 0;  // under mpirun rank 0 trains and reports
    if (c->fine_tune)
      std::printf("fine-tuned %zu module variables (%s graph); bottleneck cache not used, %lld images skipped\n",
                  r.fine_tuned_variables.size(), r.used_train_tags ? "{train}" : "{}",
                  static_cast<long long>(r.images_skipped));
    else
      std::printf("bottlenecks: %lld computed, %lld cached, %lld images skipped\n",
                  static_cast<long long>(r.bottlenecks_computed), static_cast<long long>(r.bottlenecks_cached),
                  static_cast<long long>(r.images_skipped));
    std::printf("module: %s\nlabels: %s\n", c->output_graph.c_str(), c->output_labels.c_str());
    return 0;
  };
}

}  // namespace
HUB_REGISTER_COMMAND(retrain, "Retrain a classifier head on a folder of images (retrain.py)", setup_retrain);
}  // namespace hub::cli

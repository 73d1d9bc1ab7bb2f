// `hub data convert`: original data set files -> sharded TFRecord of
// tf.Example + labels.txt; `hub data export-images`: a converted split ->
// an image folder per class (see modules/datasets/convert.h, docs/data.md).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "hub/core/error.h"
#include "modules/datasets/convert.h"

namespace hub::cli {
namespace {

RunFn setup_data(CLI::App& app) {
  app.require_subcommand(1);
  auto opts = std::make_shared<data::ConvertOptions>();
  CLI::App* convert = app.add_subcommand("convert", "Convert a data set to TFRecord files of tf.Example (as TF-Slim)");
  convert->add_option("--dataset_name", opts->dataset_name, "mnist | fashion_mnist | cifar10 | flowers")->required();
  convert->add_option("--dataset_dir", opts->dataset_dir, "Output folder")->required();
  convert->add_option("--source", opts->source,
                      "Input: folder with the IDX .gz files (mnist, fashion_mnist; default for "
                      "fashion_mnist: " +
                          std::string(data::kFashionMnistDefaultSource) +
                          "), cifar-10-binary.tar.gz (cifar10), folder of class folders (flowers)");
  convert->add_option("--num_shards", opts->num_shards, "Files per split (default 5 for flowers, 1 otherwise)");
  convert->add_option("--max_per_split", opts->max_per_split,
                      "Convert only the first N records of each split (0 = all)");
  convert->add_option("--num_validation", opts->num_validation,
                      "flowers: validation images (default 350, or 10% for small folders)");
  convert->add_option("--seed", opts->seed, "flowers: shuffle seed (default 0)");
  auto ex = std::make_shared<data::ExportImagesOptions>();
  auto classes = std::make_shared<std::string>();
  CLI::App* images =
      app.add_subcommand("export-images", "Write a converted split as a folder of images per class (for hub retrain)");
  images->add_option("--dataset_dir", ex->dataset_dir, "Folder written by `hub data convert`")->required();
  images->add_option("--dataset_name", ex->dataset_name, "Data set name used when converting")->required();
  images->add_option("--split", ex->split, "train or test")->capture_default_str();
  images->add_option("--classes", *classes, "Class ids, e.g. 5-9 or 1,3 (default: all)");
  images->add_option("--per_class", ex->per_class, "At most this many images per class (0 = all)");
  images->add_option("--output_dir", ex->output_dir, "Folder to create (must not exist)")->required();
  return [opts, convert, ex, classes, images]() {
    if (images->parsed()) {
      ex->classes = parse_class_list(*classes, "--classes");
      for (const auto& [label, n] : data::export_image_folder(*ex))
        std::printf("class %lld: %lld images\n", static_cast<long long>(label), static_cast<long long>(n));
      std::printf("wrote %s\n", ex->output_dir.c_str());
      return 0;
    }
    if (!convert->parsed()) return 1;
    const data::ConvertResult r = data::convert_dataset(*opts);
    for (const auto& [split, n] : r.counts) std::printf("%s: %lld records\n", split.c_str(), static_cast<long long>(n));
    for (const auto& f : r.files) std::printf("wrote %s\n", f.c_str());
    std::printf("wrote %s/labels.txt (%zu classes)\n", opts->dataset_dir.c_str(), r.labels.size());
    return 0;
  };
}

}  // namespace
HUB_REGISTER_COMMAND(data, "Convert data sets to TFRecord files of tf.Example", setup_data);
}  // namespace hub::cli

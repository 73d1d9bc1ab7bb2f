// `hub data convert`: original data set files -> sharded TFRecord of
// tf.Example + labels.txt (see modules/datasets/convert.h and docs/data.md).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "hub/core/error.h"
#include "modules/datasets/convert.h"

namespace hub::cli {
namespace {

RunFn setup(CLI::App& app) {
  app.require_subcommand(1);
  auto opts = std::make_shared<data::ConvertOptions>();
  CLI::App* convert = app.add_subcommand(
      "convert", "Convert a data set to TFRecord files of tf.Example (as TF-Slim)");
  convert->add_option("--dataset_name", opts->dataset_name,
                      "mnist | fashion_mnist | cifar10 | flowers")
      ->required();
  convert->add_option("--dataset_dir", opts->dataset_dir, "Output folder")->required();
  convert->add_option("--source", opts->source,
                      "Input: folder with the IDX .gz files (mnist, fashion_mnist; default for "
                      "fashion_mnist: " + std::string(data::kFashionMnistDefaultSource) +
                          "), cifar-10-binary.tar.gz (cifar10), folder of class folders (flowers)");
  convert->add_option("--num_shards", opts->num_shards,
                      "Files per split (default 5 for flowers, 1 otherwise)");
  convert->add_option("--max_per_split", opts->max_per_split,
                      "Convert only the first N records of each split (0 = all)");
  convert->add_option("--num_validation", opts->num_validation,
                      "flowers: validation images (default 350, or 10% for small folders)");
  convert->add_option("--seed", opts->seed, "flowers: shuffle seed (default 0)");
  return [opts, convert]() {
    if (!convert->parsed()) return 1;
    const data::ConvertResult r = data::convert_dataset(*opts);
    for (const auto& [split, n] : r.counts)
      std::printf("%s: %lld records\n", split.c_str(), static_cast<long long>(n));
    for (const auto& f : r.files) std::printf("wrote %s\n", f.c_str());
    std::printf("wrote %s/labels.txt (%zu classes)\n", opts->dataset_dir.c_str(), r.labels.size());
    return 0;
  };
}

}  // namespace
HUB_REGISTER_COMMAND(data, "Convert data sets to TFRecord files of tf.Example", setup);
}  // namespace hub::cli

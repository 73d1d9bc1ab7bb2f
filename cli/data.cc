// `hub data convert`: original data set files -> sharded TFRecord of
// tf.Example + labels.txt; `hub data download_and_convert`: the same after
// downloading slim's source archives through the resolver's cache (imagenet:
// from an ILSVRC folder); `hub data export-images`: a converted split -> an
// image folder per class (see modules/datasets/convert.h, download.h,
// docs/data.md).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "hub/core/error.h"
#include "modules/datasets/convert.h"
#include "modules/datasets/download.h"

namespace hub::cli {
namespace {

// The conversion settings both converting subcommands take.
void add_conversion_flags(CLI::App* app, data::ConvertOptions& o) {
  app->add_option("--dataset_dir", o.dataset_dir, "Output folder")->required();
  app->add_option("--num_shards", o.num_shards, "Files per split (default 5 for flowers, 1 otherwise; not imagenet)");
  app->add_option("--max_per_split", o.max_per_split, "Convert only the first N records of each split (0 = all)");
  app->add_option("--num_validation", o.num_validation,
                  "flowers: validation images (default 350, or 10% for small folders)");
  app->add_option("--seed", o.seed, "flowers: shuffle seed (default 0)");
  app->add_option("--train_shards", o.train_shards, "imagenet: training files (default 1024)");
  app->add_option("--validation_shards", o.validation_shards, "imagenet: validation files (default 128)");
  app->add_option("--imagenet_validation_labels", o.imagenet.validation_labels,
                  "imagenet: synset per line for a flat validation/ folder (default "
                  "<ILSVRC folder>/imagenet_2012_validation_synset_labels.txt)");
  app->add_option("--imagenet_synsets", o.imagenet.synsets,
                  "imagenet: the classes, one synset per line (default <ILSVRC folder>/imagenet_lsvrc_2015_synsets.txt "
                  "if present, else the train/ folder names)");
  app->add_option("--imagenet_metadata", o.imagenet.metadata,
                  "imagenet: synset<TAB>human text lines (default <ILSVRC folder>/imagenet_metadata.txt if present)");
}

void print_result(const data::ConvertResult& r, const std::string& dataset_dir) {
  for (const auto& [split, n] : r.counts) std::printf("%s: %lld records\n", split.c_str(), static_cast<long long>(n));
  for (const auto& f : r.files) std::printf("wrote %s\n", f.c_str());
  std::printf("wrote %s/labels.txt (%zu classes)\n", dataset_dir.c_str(), r.labels.size());
}

RunFn setup_data(CLI::App& app) {
  app.require_subcommand(1);
  auto opts = std::make_shared<data::ConvertOptions>();
  CLI::App* convert = app.add_subcommand("convert", "Convert a data set to TFRecord files of tf.Example (as TF-Slim)");
  convert->add_option("--dataset_name", opts->dataset_name, "mnist | fashion_mnist | cifar10 | flowers | imagenet")
      ->required();
  convert->add_option("--source", opts->source,
                      "Input: folder with the IDX .gz files (mnist, fashion_mnist; default for "
                      "fashion_mnist: " +
                          std::string(data::kFashionMnistDefaultSource) +
                          "), cifar-10-python.tar.gz or cifar-10-binary.tar.gz (cifar10), folder of class folders "
                          "or flower_photos.tgz (flowers), ILSVRC folder (imagenet)");
  add_conversion_flags(convert, *opts);

  auto dl = std::make_shared<data::DownloadOptions>();
  auto offline = std::make_shared<bool>(false);
  CLI::App* download = app.add_subcommand(
      "download_and_convert",
      "Download a data set's original archives (as TF-Slim's download_and_convert_data.py; cached, SHA-256 "
      "pinned) and convert them");
  download
      ->add_option("--dataset_name", dl->convert.dataset_name,
                   "mnist | cifar10 | flowers (downloaded) | imagenet (from --imagenet_dir)")
      ->required();
  download->add_option("--source_url", dl->source_urls,
                       "URL[#sha256=HEX] replacing the source file of the same name (a mirror); without the "
                       "fragment the pinned digest applies. Repeatable");
  download->add_option("--imagenet_dir", dl->imagenet_dir,
                       "imagenet: the ILSVRC folder (train/<synset>/*, validation/ with synset folders or "
                       "flat images and a labels file)");
  download->add_flag("--offline", *offline, "Use only the cache (also $HUB_OFFLINE)");
  add_conversion_flags(download, dl->convert);

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
  return [opts, convert, dl, offline, download, ex, classes, images]() {
    if (images->parsed()) {
      ex->classes = parse_class_list(*classes, "--classes");
      for (const auto& [label, n] : data::export_image_folder(*ex))
        std::printf("class %lld: %lld images\n", static_cast<long long>(label), static_cast<long long>(n));
      std::printf("wrote %s\n", ex->output_dir.c_str());
      return 0;
    }
    if (download->parsed()) {
      ModuleArgs args;
      args.offline = *offline;
      const data::DownloadResult r = data::download_and_convert(*dl, make_resolver(args));
      for (const auto& s : r.sources)
        std::fprintf(stderr, "%s %s (sha256 %s)\n", s.cached ? "cached" : "downloaded", s.url.c_str(),
                     s.sha256.c_str());
      print_result(r.converted, dl->convert.dataset_dir);
      return 0;
    }
    if (!convert->parsed()) return 1;
    print_result(data::convert_dataset(*opts), opts->dataset_dir);
    return 0;
  };
}

}  // namespace
HUB_REGISTER_COMMAND(data, "Convert data sets to TFRecord files of tf.Example", setup_data);
}  // namespace hub::cli

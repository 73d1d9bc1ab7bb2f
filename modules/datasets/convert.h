// Converting data sets to sharded TFRecord files of tf.Example, as TF-Slim's
// download_and_convert_* scripts do, plus labels.txt ("<id>:<name>" lines).
//
//   mnist, fashion_mnist  source: a folder with train-images-idx3-ubyte.gz,
//                         train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz,
//                         t10k-labels-idx1-ubyte.gz (fashion_mnist defaults to
//                         /usr/share/datasets/fashion-mnist, Debian's
//                         dataset-fashion-mnist). Writes <name>_train.tfrecord
//                         and <name>_test.tfrecord; PNG-encoded 28x28x1.
//   cifar10               source: cifar-10-python.tar.gz (slim's download) or
//                         cifar-10-binary.tar.gz. Writes cifar10_train.tfrecord,
//                         cifar10_test.tfrecord; PNG 32x32x3.
//   flowers               source: a folder of class folders, or a .tgz of one
//                         (flower_photos.tgz: its flower_photos/ folder, else
//                         its single top-level folder, else its root; unpacked
//                         with hub/resolver/unpack.h's checks into a hidden
//                         work folder in dataset_dir, removed afterwards).
//                         Shuffled with `seed`, split into validation (the
//                         first num_validation) and train, 5 shards each:
//                         flowers_<split>_0000i-of-00005.tfrecord. The image
//                         files are stored as they are (JPEG or PNG, checked by
//                         decoding), format "jpeg"/"png".
//   imagenet              source: an ILSVRC folder as build_imagenet_data.py
//                         takes it (see ImagenetLayout below). Writes
//                         train-NNNNN-of-01024 and validation-NNNNN-of-00128
//                         (build_imagenet_data.py's names and counts), records
//                         without bounding boxes: image/encoded (JPEG; PNG and
//                         CMYK files re-encoded as RGB JPEG, quality 100, as
//                         build_imagenet_data.py does), image/format "JPEG",
//                         image/class/label 1..N (0 is the background class),
//                         image/class/synset, image/class/text,
//                         image/filename, image/height, image/width,
//                         image/colorspace "RGB", image/channels 3. Each split
//                         is shuffled with a fixed seed (12345) before
//                         sharding. labels.txt: 0:background, then one line
//                         per synset (its human text when known, else the
//                         synset).
// Every file is written to a temporary; all are renamed to their final names
// only after every split was written, and labels.txt last, so an error leaves
// no file (and no temporary) behind.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hub::data {

inline constexpr const char* kFashionMnistDefaultSource = "/usr/share/datasets/fashion-mnist";

// The ILSVRC folder `source` of the imagenet conversion:
//   train/<synset>/<image>       training images, one folder per synset
//   validation/<synset>/<image>  validation images sorted into synset folders
//                                (after slim's preprocess_imagenet_validation_data.py),
//   or validation/<image>        the original flat folder, labelled by
//                                validation_labels: one synset per line, for the
//                                images in sorted name order (slim's
//                                imagenet_2012_validation_synset_labels.txt)
// The classes are the synsets of `synsets` (one per line, as slim's
// imagenet_lsvrc_2015_synsets.txt) in that order, else the sorted train/
// folder names; only their folders are read. `metadata` (synset TAB text per
// line, slim's imagenet_metadata.txt) gives each class its human text.
// Empty paths default to the file of that name in `source` when it exists.
struct ImagenetLayout {
  std::string validation_labels;  // default <source>/imagenet_2012_validation_synset_labels.txt
  std::string synsets;            // default <source>/imagenet_lsvrc_2015_synsets.txt
  std::string metadata;           // default <source>/imagenet_metadata.txt
};

struct ConvertOptions {
  std::string dataset_name;     // mnist | fashion_mnist | cifar10 | flowers | imagenet
  std::string dataset_dir;      // output folder (created if missing)
  std::string source;           // input; empty = the data set's default (if any)
  int num_shards = 0;           // 0 = default: 5 for flowers, 1 otherwise (not imagenet)
  int64_t max_per_split = 0;    // > 0: convert only the first N records of each split
  int64_t num_validation = -1;  // flowers: -1 = 350 as slim (10% if that is over half)
  uint64_t seed = 0;            // flowers shuffle
  // mnist, fashion_mnist: the four IDX files by their names, each wherever it
  // is (the download's cache entries), instead of a `source` folder.
  std::map<std::string, std::string> source_files = {};
  // imagenet: files per split (0 = 1024 train, 128 validation) and layout.
  int train_shards = 0;
  int validation_shards = 0;
  ImagenetLayout imagenet = {};
};

struct ConvertResult {
  std::vector<std::string> files;         // every TFRecord written, in order
  std::map<std::string, int64_t> counts;  // records per split
  std::vector<std::string> labels;        // class names by id
};

// Throws kInvalidArgument for an unknown data set or missing source flag,
// kNotFound for missing inputs, kCorruption for malformed ones (and the
// codes of unpack_archive for a hostile flowers .tgz).
ConvertResult convert_dataset(const ConvertOptions& options);

// slim's names: "<name>_<split>.tfrecord" for one shard, else
// "<name>_<split>_<%05d shard>-of-<%05d num_shards>.tfrecord" (mnist, cifar10,
// flowers); for "imagenet" always "<split>-<%05d>-of-<%05d>" as
// build_imagenet_data.py writes (train-00000-of-01024).
std::string shard_file_name(const std::string& name, const std::string& split, int shard, int num_shards);

// TFRecord shards of a split in dataset_dir, sorted: the names of
// shard_file_name for `name`, and ImageNet-style "<split>-NNNNN-of-NNNNN"
// (slim's imagenet reader) for any name. kNotFound naming the patterns if none.
std::vector<std::string> find_split_files(const std::string& dataset_dir, const std::string& name,
                                          const std::string& split);

// labels.txt as slim's dataset_utils: one "<id>:<name>" line per class.
void write_labels_file(const std::string& path, const std::vector<std::string>& labels);
std::vector<std::string> read_labels_file(const std::string& path);

// Writes images of a converted split as an image folder, one sub-folder per
// class named by labels.txt (the layout `hub retrain --image_dir` reads):
// <output_dir>/<label>/<split>_<record index>.<png|jpg>, the encoded bytes as
// stored. Only `classes` (all if empty), at most per_class images each (0 =
// all). output_dir must not exist; the folder is built beside it and renamed
// into place when complete. Returns the number of images per class id.
struct ExportImagesOptions {
  std::string dataset_dir, dataset_name, split = "train", output_dir;
  std::vector<int64_t> classes;
  int64_t per_class = 0;
};
std::map<int64_t, int64_t> export_image_folder(const ExportImagesOptions& options);

// Class names of the built-in data sets.
std::vector<std::string> mnist_labels();
std::vector<std::string> fashion_mnist_labels();
std::vector<std::string> cifar10_labels();
// The names of MNIST's four IDX files (train images, train labels, test
// images, test labels), as they are distributed.
std::vector<std::string> mnist_file_names();

}  // namespace hub::data

#include "modules/datasets/convert.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>

#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/core/logging.h"
#include "hub/core/parallel.h"
#include "hub/image/image.h"
#include "hub/resolver/unpack.h"
#include "modules/datasets/example.h"
#include "modules/datasets/sources.h"
#include "modules/datasets/tfrecord.h"

namespace hub::data {
namespace fs = std::filesystem;

std::vector<std::string> mnist_labels() {
  return {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};
}
std::vector<std::string> fashion_mnist_labels() {
  return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
}
std::vector<std::string> cifar10_labels() {
  return {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
}

std::vector<std::string> mnist_file_names() {
  return {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
          "t10k-labels-idx1-ubyte.gz"};
}

std::string shard_file_name(const std::string& name, const std::string& split, int shard, int num_shards) {
  char buf[64];
  if (name == "imagenet") {
    std::snprintf(buf, sizeof buf, "-%05d-of-%05d", shard, num_shards);
    return split + buf;
  }
  if (num_shards == 1) return name + "_" + split + ".tfrecord";
  std::snprintf(buf, sizeof buf, "_%05d-of-%05d.tfrecord", shard, num_shards);
  return name + "_" + split + buf;
}

namespace {

// "NNNNN-of-NNNNN": five digits, "-of-", five digits.
bool is_shard_suffix(std::string_view s) {
  auto digits = [](std::string_view d) {
    return d.size() == 5 && std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return s.size() == 14 && digits(s.substr(0, 5)) && s.substr(5, 4) == "-of-" && digits(s.substr(9));
}

}  // namespace

std::vector<std::string> find_split_files(const std::string& dataset_dir, const std::string& name,
                                          const std::string& split) {
  std::vector<std::string> out;
  const std::string single = name + "_" + split + ".tfrecord";
  const std::string prefix = name + "_" + split + "_";
  const std::string imagenet_prefix = split + "-";
  std::error_code ec;
  if (fs::is_directory(dataset_dir, ec)) {
    for (const auto& e : fs::directory_iterator(dataset_dir)) {
      const std::string f = e.path().filename().string();
      if (!e.is_regular_file()) continue;
      const bool sharded =
          f.starts_with(prefix) && f.ends_with(".tfrecord") && f.find("-of-", prefix.size()) != std::string::npos;
      const bool imagenet_style =
          f.starts_with(imagenet_prefix) && is_shard_suffix(std::string_view(f).substr(imagenet_prefix.size()));
      if (f == single || sharded || imagenet_style) out.push_back(e.path().string());
    }
  }
  if (out.empty())
    throw_error(Code::kNotFound, dataset_dir + ": no TFRecord files " + single + ", " + prefix +
                                     "NNNNN-of-NNNNN.tfrecord or " + imagenet_prefix + "NNNNN-of-NNNNN");
  std::sort(out.begin(), out.end());
  return out;
}

void write_labels_file(const std::string& path, const std::vector<std::string>& labels) {
  std::string text;
  for (size_t i = 0; i < labels.size(); ++i) text += std::to_string(i) + ":" + labels[i] + "\n";
  write_file_atomic(path, text);
}

std::vector<std::string> read_labels_file(const std::string& path) {
  std::istringstream in(read_file_bytes(path, 64 << 20));
  std::vector<std::string> labels;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    const std::string id = line.substr(0, colon);
    if (colon == std::string::npos || id != std::to_string(labels.size()))
      throw_error(Code::kCorruption, path + ":" + std::to_string(line_no) + ": expected '" +
                                         std::to_string(labels.size()) + ":<name>', got '" + line + "'");
    labels.push_back(line.substr(colon + 1));
  }
  return labels;
}

namespace {

using Writers = std::vector<std::unique_ptr<TFRecordWriter>>;

// Writes examples [0, count) produced by make(i) into num_shards shards
// (contiguous ranges, as slim). Examples are built in parallel in chunks.
// The writers are appended to *pending uncommitted: convert_dataset commits
// them all once every split succeeded, so a failure leaves no file behind.
void write_shards(Writers* pending, const std::string& dir, const std::string& name, const std::string& split,
                  int num_shards, int64_t count, const std::function<std::string(int64_t)>& make) {
  const int64_t per_shard = (count + num_shards - 1) / num_shards;
  constexpr int64_t kChunk = 1024;
  std::vector<std::string> chunk(kChunk);
  for (int s = 0; s < num_shards; ++s) {
    const std::string path = (fs::path(dir) / shard_file_name(name, split, s, num_shards)).string();
    pending->push_back(std::make_unique<TFRecordWriter>(path));
    TFRecordWriter& writer = *pending->back();
    const int64_t begin = std::min(count, s * per_shard), end = std::min(count, begin + per_shard);
    for (int64_t c = begin; c < end; c += kChunk) {
      const int64_t n = std::min(kChunk, end - c);
      parallel_for(n, 8, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) chunk[i] = make(c + i);
      });
      for (int64_t i = 0; i < n; ++i) writer.write(chunk[i]);
    }
  }
  HUB_LOG(Info) << "wrote " << count << " " << split << " records of " << name << " to " << num_shards << " file(s) in "
                << dir;
}

// PNG-encoded examples of images[i] (uint8 [N,H,W,C]).
std::function<std::string(int64_t)> png_examples(const LabeledImages& data) {
  return [&data](int64_t i) {
    const Tensor& all = data.images;
    const int64_t h = all.dim(1), w = all.dim(2), c = all.dim(3);
    Tensor one(DType::kUInt8, Shape{h, w, c});
    std::memcpy(one.data<uint8_t>(), all.data<uint8_t>() + i * h * w * c, static_cast<size_t>(h * w * c));
    const std::vector<uint8_t> png = image::encode_png(one);
    ImageExample ex;
    ex.encoded.assign(png.begin(), png.end());
    ex.format = "png";
    ex.label = data.labels[i];
    ex.height = h;
    ex.width = w;
    return make_image_example(ex);
  };
}

int64_t limited(int64_t n, int64_t max_per_split) { return max_per_split > 0 ? std::min(n, max_per_split) : n; }

void convert_arrays(const ConvertOptions& o, const std::string& split, const LabeledImages& data, int shards,
                    ConvertResult& result, Writers* pending) {
  const int64_t n = limited(data.images.dim(0), o.max_per_split);
  write_shards(pending, o.dataset_dir, o.dataset_name, split, shards, n, png_examples(data));
  result.counts[split] = n;
}

// A .tgz of photos unpacked into a hidden work folder of dataset_dir,
// removed with everything in it on destruction.
class UnpackedPhotos {
 public:
  UnpackedPhotos(const std::string& archive, const std::string& dataset_dir)
      : dir_(fs::path(dataset_dir) / (".unpack.tmp-" + std::to_string(::getpid()))) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    resolver::UnpackOptions uo;
    uo.validate = false;
    uo.display_name = archive;
    resolver::unpack_archive(archive, dir_, uo);
  }
  ~UnpackedPhotos() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  UnpackedPhotos(const UnpackedPhotos&) = delete;
  UnpackedPhotos& operator=(const UnpackedPhotos&) = delete;

  // flower_photos/ if present, else the single top-level folder, else the root.
  std::string photos() const {
    if (fs::is_directory(fs::symlink_status(dir_ / "flower_photos"))) return (dir_ / "flower_photos").string();
    std::vector<fs::path> top;
    for (const auto& e : fs::directory_iterator(dir_)) top.push_back(e.path());
    if (top.size() == 1 && fs::is_directory(fs::symlink_status(top[0]))) return top[0].string();
    return dir_.string();
  }

 private:
  fs::path dir_;
};

void convert_flowers(const ConvertOptions& o, int shards, ConvertResult& result, Writers* pending) {
  std::unique_ptr<UnpackedPhotos> unpacked;
  std::error_code ec;
  if (fs::is_regular_file(o.source, ec)) unpacked = std::make_unique<UnpackedPhotos>(o.source, o.dataset_dir);
  ImageFolder folder = list_image_folder(unpacked ? unpacked->photos() : o.source);
  auto& items = folder.items;
  // Fisher-Yates with a fixed engine, so the split is the same on every platform.
  std::mt19937_64 rng(o.seed);
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng() % i]);
  const int64_t total = static_cast<int64_t>(items.size());
  int64_t num_val = o.num_validation;
  if (num_val < 0) num_val = 350 * 2 <= total ? 350 : total / 10;
  if (num_val > total)
    throw_error(Code::kInvalidArgument, "--num_validation " + std::to_string(num_val) + " exceeds the " +
                                            std::to_string(total) + " images in " + o.source);
  // Errors name a file inside an unpacked archive by its place in the archive.
  const std::string prefix = unpacked ? unpacked->photos() + "/" : "";
  auto make = [&](int64_t offset) {
    return [&items, &prefix, &o, offset](int64_t i) {
      const auto& item = items[offset + i];
      const std::string name =
          prefix.empty() ? item.path : o.source + ": " + fs::path(item.path).lexically_relative(prefix).string();
      const std::string file = read_file_bytes(item.path);
      const std::span<const uint8_t> bytes{reinterpret_cast<const uint8_t*>(file.data()), file.size()};
      // Full decode: a corrupt file must fail here, not during training.
      const Tensor pixels = image::decode_image_u8(bytes, {}, name);
      ImageExample ex;
      ex.encoded = file;
      ex.format = std::string(image::format_name(image::sniff_format(bytes)));
      ex.label = item.label;
      ex.height = pixels.dim(0);
      ex.width = pixels.dim(1);
      return make_image_example(ex);
    };
  };
  const int64_t n_val = limited(num_val, o.max_per_split);
  const int64_t n_train = limited(total - num_val, o.max_per_split);
  for (auto [split, offset, n] :
       {std::tuple{std::string("train"), num_val, n_train}, std::tuple{std::string("validation"), int64_t{0}, n_val}}) {
    write_shards(pending, o.dataset_dir, o.dataset_name, split, shards, n, make(offset));
    result.counts[split] = n;
  }
  result.labels = folder.classes;
}

// Non-empty lines of a small text file.
std::vector<std::string> read_lines(const std::string& path) {
  std::istringstream in(read_file_bytes(path, 64 << 20));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// `given`, else <source>/<name> when that exists, else "".
std::string layout_file(const std::string& given, const std::string& source, const char* name) {
  if (!given.empty()) return given;
  std::error_code ec;
  const fs::path p = fs::path(source) / name;
  return fs::exists(p, ec) ? p.string() : "";
}

// Sorted regular, non-hidden files of a folder.
std::vector<std::string> list_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && !e.path().filename().string().starts_with(".")) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct LabeledFile {
  std::string path;
  int64_t label;  // 1..N
};

// An ImageNet image as build_imagenet_data.py stores it: JPEG bytes (PNG and
// CMYK files re-encoded as RGB JPEG at quality 100) and its size.
std::string imagenet_example(const LabeledFile& f, const std::vector<std::string>& synsets,
                             const std::map<std::string, std::string>& texts) {
  std::string file = read_file_bytes(f.path);
  std::span<const uint8_t> bytes{reinterpret_cast<const uint8_t*>(file.data()), file.size()};
  const image::ImageInfo info = image::probe_image(bytes, f.path);
  const Tensor pixels = image::decode_image_u8(bytes, {.channels = 3}, f.path);
  if (info.format != image::Format::kJpeg || info.channels == 4) {
    const std::vector<uint8_t> jpeg = image::encode_jpeg(pixels, 100);
    file.assign(jpeg.begin(), jpeg.end());
  }
  const std::string& synset = synsets[static_cast<size_t>(f.label - 1)];
  auto text = texts.find(synset);
  ImageExample ex;
  ex.encoded = std::move(file);
  ex.format = "JPEG";
  ex.label = f.label;
  ex.height = pixels.dim(0);
  ex.width = pixels.dim(1);
  ex.colorspace = "RGB";
  ex.channels = 3;
  ex.synset = synset;
  ex.text = text == texts.end() ? synset : text->second;
  ex.filename = fs::path(f.path).filename().string();
  return make_image_example(ex);
}

void convert_imagenet(const ConvertOptions& o, ConvertResult& result, Writers* pending) {
  const fs::path root(o.source), train_dir = root / "train", val_dir = root / "validation";
  std::error_code ec;
  for (const fs::path& d : {train_dir, val_dir})
    if (!fs::is_directory(d, ec))
      throw_error(Code::kNotFound, d.string() + ": not a folder (an ILSVRC folder holds train/ and validation/)");
  // Classes.
  std::vector<std::string> synsets;
  const std::string synsets_file = layout_file(o.imagenet.synsets, o.source, "imagenet_lsvrc_2015_synsets.txt");
  if (!synsets_file.empty()) {
    synsets = read_lines(synsets_file);
  } else {
    for (const auto& e : fs::directory_iterator(train_dir))
      if (e.is_directory() && !e.path().filename().string().starts_with("."))
        synsets.push_back(e.path().filename().string());
    std::sort(synsets.begin(), synsets.end());
  }
  if (synsets.empty())
    throw_error(Code::kInvalidArgument, (synsets_file.empty() ? train_dir.string() : synsets_file) + ": no synsets");
  std::map<std::string, int64_t> label_of;
  for (size_t i = 0; i < synsets.size(); ++i)
    if (!label_of.emplace(synsets[i], static_cast<int64_t>(i) + 1).second)
      throw_error(Code::kCorruption, (synsets_file.empty() ? train_dir.string() : synsets_file) + ": synset " +
                                         synsets[i] + " listed twice");
  std::map<std::string, std::string> texts;
  if (const std::string meta = layout_file(o.imagenet.metadata, o.source, "imagenet_metadata.txt"); !meta.empty())
    for (const std::string& line : read_lines(meta)) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos)
        throw_error(Code::kCorruption, meta + ": line '" + line.substr(0, 80) + "' is not 'synset<TAB>text'");
      texts[line.substr(0, tab)] = line.substr(tab + 1);
    }
  // Files per split.
  auto by_synset_folders = [&](const fs::path& dir) {
    std::vector<LabeledFile> files;
    for (size_t i = 0; i < synsets.size(); ++i)
      if (fs::is_directory(dir / synsets[i], ec))
        for (auto& f : list_files(dir / synsets[i])) files.push_back({std::move(f), static_cast<int64_t>(i) + 1});
    return files;
  };
  std::vector<LabeledFile> train = by_synset_folders(train_dir), validation;
  if (std::vector<std::string> flat = list_files(val_dir); !flat.empty()) {
    const std::string labels_file =
        layout_file(o.imagenet.validation_labels, o.source, "imagenet_2012_validation_synset_labels.txt");
    if (labels_file.empty())
      throw_error(Code::kNotFound, val_dir.string() +
                                       " holds images but no synset folders, and there is no validation labels file "
                                       "(--imagenet_validation_labels, default " +
                                       (root / "imagenet_2012_validation_synset_labels.txt").string() + ")");
    const std::vector<std::string> labels = read_lines(labels_file);
    if (labels.size() != flat.size())
      throw_error(Code::kCorruption, labels_file + " has " + std::to_string(labels.size()) + " labels for the " +
                                         std::to_string(flat.size()) + " images in " + val_dir.string());
    for (size_t i = 0; i < flat.size(); ++i) {
      auto it = label_of.find(labels[i]);
      if (it == label_of.end())
        throw_error(Code::kCorruption, labels_file + ":" + std::to_string(i + 1) + ": synset '" +
                                           labels[i].substr(0, 80) + "' is not one of the " +
                                           std::to_string(synsets.size()) + " classes");
      validation.push_back({flat[i], it->second});
    }
  } else {
    validation = by_synset_folders(val_dir);
  }
  const int train_shards = o.train_shards > 0 ? o.train_shards : 1024;
  const int validation_shards = o.validation_shards > 0 ? o.validation_shards : 128;
  for (auto& [split, files, shards] : {std::tuple{std::string("train"), &train, train_shards},
                                       std::tuple{std::string("validation"), &validation, validation_shards}}) {
    if (files->empty()) throw_error(Code::kNotFound, (root / split).string() + ": no images of the classes");
    // Mixed classes in every shard, the same order on every run.
    std::mt19937_64 rng(12345);
    for (size_t i = files->size(); i > 1; --i) std::swap((*files)[i - 1], (*files)[rng() % i]);
    const int64_t n = limited(static_cast<int64_t>(files->size()), o.max_per_split);
    const std::vector<LabeledFile>& list = *files;
    write_shards(pending, o.dataset_dir, "imagenet", split, shards, n,
                 [&](int64_t i) { return imagenet_example(list[i], synsets, texts); });
    result.counts[split] = n;
  }
  result.labels = {"background"};
  for (const auto& s : synsets) result.labels.push_back(texts.count(s) ? texts[s] : s);
}

}  // namespace

ConvertResult convert_dataset(const ConvertOptions& options) {
  ConvertOptions o = options;
  const std::string& name = o.dataset_name;
  if (name != "mnist" && name != "fashion_mnist" && name != "cifar10" && name != "flowers" && name != "imagenet")
    throw_error(Code::kInvalidArgument,
                "unknown --dataset_name '" + name + "' (supported: mnist, fashion_mnist, cifar10, flowers, imagenet)");
  if (o.dataset_dir.empty()) throw_error(Code::kInvalidArgument, "--dataset_dir is required");
  const bool mnist_files = (name == "mnist" || name == "fashion_mnist") && !o.source_files.empty();
  if (o.source.empty() && !mnist_files) {
    if (name == "fashion_mnist")
      o.source = kFashionMnistDefaultSource;
    else
      throw_error(Code::kInvalidArgument, "--source is required for " + name);
  }
  if (o.train_shards < 0 || o.validation_shards < 0)
    throw_error(Code::kInvalidArgument, "--train_shards and --validation_shards must be >= 1");
  if (name == "imagenet" && o.num_shards != 0)
    throw_error(Code::kInvalidArgument,
                "--num_shards does not apply to imagenet (--train_shards, --validation_shards)");
  if (name != "imagenet" && (o.train_shards != 0 || o.validation_shards != 0))
    throw_error(Code::kInvalidArgument, "--train_shards and --validation_shards apply to imagenet only (--num_shards)");
  if (o.source.find("://") != std::string::npos)
    throw_error(Code::kUnimplemented, "--source '" + o.source + "': URLs are not supported yet; give a local path");
  if (o.num_shards < 0) throw_error(Code::kInvalidArgument, "--num_shards must be >= 1");
  const int shards = o.num_shards > 0 ? o.num_shards : (name == "flowers" ? 5 : 1);
  std::error_code ec;
  fs::create_directories(o.dataset_dir, ec);
  if (!fs::is_directory(o.dataset_dir)) throw_error(Code::kIOError, o.dataset_dir + ": cannot create output folder");

  ConvertResult result;
  Writers pending;
  if (name == "mnist" || name == "fashion_mnist") {
    auto file = [&](const std::string& file_name) {
      if (!mnist_files) return (fs::path(o.source) / file_name).string();
      auto it = o.source_files.find(file_name);
      if (it == o.source_files.end()) throw_error(Code::kInvalidArgument, "no source file " + file_name + " given");
      return it->second;
    };
    const std::vector<std::string> names = mnist_file_names();
    for (auto [split, first] : {std::pair{"train", 0}, std::pair{"test", 2}}) {
      const LabeledImages data = read_mnist(file(names[first]), file(names[first + 1]), o.max_per_split);
      convert_arrays(o, split, data, shards, result, &pending);
    }
    result.labels = name == "mnist" ? mnist_labels() : fashion_mnist_labels();
  } else if (name == "cifar10") {
    for (const char* split : {"train", "test"}) {
      const LabeledImages data = read_cifar10(o.source, split);
      convert_arrays(o, split, data, shards, result, &pending);
    }
    result.labels = cifar10_labels();
  } else if (name == "flowers") {
    convert_flowers(o, shards, result, &pending);
  } else {
    convert_imagenet(o, result, &pending);
  }
  for (auto& w : pending) {
    w->commit();
    result.files.push_back(w->path());
  }
  write_labels_file((fs::path(o.dataset_dir) / "labels.txt").string(), result.labels);
  return result;
}

std::map<int64_t, int64_t> export_image_folder(const ExportImagesOptions& o) {
  namespace fs = std::filesystem;
  if (o.output_dir.empty()) throw_error(Code::kInvalidArgument, "--output_dir is required");
  std::error_code ec;
  if (fs::exists(o.output_dir, ec))
    throw_error(Code::kAlreadyExists, "--output_dir " + o.output_dir + " already exists");
  const std::vector<std::string> labels = read_labels_file((fs::path(o.dataset_dir) / "labels.txt").string());
  for (int64_t c : o.classes)
    if (c < 0 || c >= static_cast<int64_t>(labels.size()))
      throw_error(Code::kInvalidArgument, "class " + std::to_string(c) + " is not in " + o.dataset_dir +
                                              "/labels.txt (" + std::to_string(labels.size()) + " classes)");
  fs::path target = fs::path(o.output_dir).lexically_normal();
  fs::path tmp = target;
  tmp += ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp, ec);
  std::map<int64_t, int64_t> counts;
  try {
    for (const std::string& file : find_split_files(o.dataset_dir, o.dataset_name, o.split)) {
      TFRecordReader reader(file);
      std::string record;
      for (int64_t index = reader.index(); reader.read(&record); index = reader.index()) {
        ImageExample ex = parse_image_example(record, file + ": record " + std::to_string(index));
        if (!o.classes.empty() && std::find(o.classes.begin(), o.classes.end(), ex.label) == o.classes.end()) continue;
        if (ex.label < 0 || ex.label >= static_cast<int64_t>(labels.size()))
          throw_error(Code::kCorruption, file + ": record " + std::to_string(index) + " has label " +
                                             std::to_string(ex.label) + " outside labels.txt");
        int64_t& n = counts[ex.label];
        if (o.per_class > 0 && n >= o.per_class) continue;
        ++n;
        fs::path dir = tmp / labels[ex.label];
        fs::create_directories(dir);
        const std::string format = to_lower(ex.format);
        const std::string ext = format == "jpeg" || format == "jpg" ? ".jpg" : ".png";
        write_file_atomic((dir / (o.split + "_" + std::to_string(index) + ext)).string(), ex.encoded);
      }
    }
    if (counts.empty()) throw_error(Code::kNotFound, "no images of the requested classes in " + o.dataset_dir);
    fs::rename(tmp, target);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return counts;
}

}  // namespace hub::data

#include "modules/datasets/convert.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>

#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/core/logging.h"
#include "hub/core/parallel.h"
#include "hub/image/image.h"
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

void convert_flowers(const ConvertOptions& o, int shards, ConvertResult& result, Writers* pending) {
  ImageFolder folder = list_image_folder(o.source);
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
  auto make = [&](int64_t offset) {
    return [&items, offset](int64_t i) {
      const auto& item = items[offset + i];
      const std::string file = read_file_bytes(item.path);
      const std::span<const uint8_t> bytes{reinterpret_cast<const uint8_t*>(file.data()), file.size()};
      // Full decode: a corrupt file must fail here, not during training.
      const Tensor pixels = image::decode_image_u8(bytes, {}, item.path);
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

}  // namespace

ConvertResult convert_dataset(const ConvertOptions& options) {
  ConvertOptions o = options;
  const std::string& name = o.dataset_name;
  if (name != "mnist" && name != "fashion_mnist" && name != "cifar10" && name != "flowers")
    throw_error(Code::kInvalidArgument,
                "unknown --dataset_name '" + name + "' (supported: mnist, fashion_mnist, cifar10, flowers)");
  if (o.dataset_dir.empty()) throw_error(Code::kInvalidArgument, "--dataset_dir is required");
  if (o.source.empty()) {
    if (name == "fashion_mnist")
      o.source = kFashionMnistDefaultSource;
    else
      throw_error(Code::kInvalidArgument, "--source is required for " + name);
  }
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
    const fs::path src(o.source);
    for (auto [split, prefix] : {std::pair{"train", "train"}, std::pair{"test", "t10k"}}) {
      const LabeledImages data =
          read_mnist((src / (std::string(prefix) + "-images-idx3-ubyte.gz")).string(),
                     (src / (std::string(prefix) + "-labels-idx1-ubyte.gz")).string(), o.max_per_split);
      convert_arrays(o, split, data, shards, result, &pending);
    }
    result.labels = name == "mnist" ? mnist_labels() : fashion_mnist_labels();
  } else if (name == "cifar10") {
    for (const char* split : {"train", "test"}) {
      const LabeledImages data = read_cifar10(o.source, split);
      convert_arrays(o, split, data, shards, result, &pending);
    }
    result.labels = cifar10_labels();
  } else {
    convert_flowers(o, shards, result, &pending);
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
        std::string ext = ex.format == "jpeg" || ex.format == "jpg" ? ".jpg" : ".png";
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

// `hub data download_and_convert` (modules/datasets/download.h): slim's
// source archives, built here in their original formats (gzipped IDX files,
// cifar-10-python.tar.gz of pickles, flower_photos.tgz of JPEGs), served on
// loopback and fetched through the resolver's cache; every record checked
// against the inputs. And the ImageNet conversion of an ILSVRC folder.
#include "modules/datasets/download.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "../../hub/resolver/http_server.h"
#include "datasets_testutil.h"
#include "fixtures.h"
#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/image/image.h"
#include "modules/datasets/example.h"
#include "modules/datasets/sources.h"
#include "testutil.h"

using namespace hub;
using namespace hub::data;
using namespace hub::testing;
namespace fs = std::filesystem;

namespace {

resolver::ResolverOptions options(const fs::path& cache, bool offline = false) {
  resolver::ResolverOptions o;
  o.cache_dir = cache;
  o.offline = offline;
  o.quiet = true;
  o.fetch.max_retries = 2;
  o.fetch.backoff_initial_s = 0.01;
  return o;
}

// Serves each (name -> bytes) at /<name>; the URL with its digest.
struct Mirror {
  std::map<std::string, std::string> files;  // outlives the server's handlers
  HttpServer server;
  void add(const std::string& name, std::string bytes, size_t cut_first_after = static_cast<size_t>(-1)) {
    files[name] = std::move(bytes);
    auto first = std::make_shared<bool>(true);
    server.route("/" + name, [this, name, first, cut_first_after](const HttpRequest& r, HttpConn& c) {
      const bool cut = *first;
      *first = false;
      serve_body(r, c, files[name], "\"e1\"", cut ? cut_first_after : static_cast<size_t>(-1));
    });
  }
  std::string url(const std::string& name) const { return server.url("/" + name); }
  std::string pinned(const std::string& name) const { return url(name) + "#sha256=" + sha256_hex(files.at(name)); }
};

Tensor decode(const std::string& bytes, int channels = 3) {
  return image::decode_image_u8({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, {.channels = channels},
                                "record");
}

bool same_pixels(const Tensor& a, const uint8_t* b) { return std::memcmp(a.data<uint8_t>(), b, a.nbytes()) == 0; }

std::string jpeg_of(int h, int w, uint8_t value) {
  const auto bytes = image::encode_jpeg(solid(h, w, 3, value), 95);
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

TEST_CASE("download_and_convert mnist: IDX .gz files over HTTP, every record checked, cached, offline") {
  TempDir src("dl_mnist_src"), work("dl_mnist");
  write_mnist(src.path.string(), "train", 6, 28, 28);
  write_mnist(src.path.string(), "t10k", 4, 28, 28);
  Mirror m;
  DownloadOptions o;
  o.convert.dataset_name = "mnist";
  o.convert.dataset_dir = work / "out";
  for (const std::string& name : mnist_file_names()) {
    m.add(name, read_file(src.path / name));
    o.source_urls.push_back(m.pinned(name));
  }
  const resolver::Resolver online(options(work.path / "cache"));
  DownloadResult r = download_and_convert(o, online);
  REQUIRE(r.sources.size() == 4);
  for (const auto& s : r.sources) CHECK_FALSE(s.cached);
  CHECK(r.converted.counts.at("train") == 6);
  CHECK(r.converted.counts.at("test") == 4);
  for (auto [split, prefix] : {std::pair{"train", "train"}, std::pair{"test", "t10k"}}) {
    const LabeledImages orig = read_mnist(src / (std::string(prefix) + "-images-idx3-ubyte.gz"),
                                          src / (std::string(prefix) + "-labels-idx1-ubyte.gz"));
    const auto recs = read_records(work / ("out/mnist_" + std::string(split) + ".tfrecord"));
    REQUIRE(recs.size() == orig.labels.size());
    for (size_t i = 0; i < recs.size(); ++i) {
      const ImageExample ex = parse_image_example(recs[i], "record");
      CHECK(ex.label == orig.labels[i]);
      CHECK(same_pixels(decode(ex.encoded, 1), orig.images.data<uint8_t>() + i * 784));
    }
  }
  CHECK(read_labels_file(work / "out/labels.txt") == mnist_labels());

  // Again: from the cache, no request; the same files.
  const std::string train = read_file(work / "out/mnist_train.tfrecord");
  o.convert.dataset_dir = work / "out2";
  r = download_and_convert(o, online);
  for (const auto& s : r.sources) CHECK(s.cached);
  for (const std::string& name : mnist_file_names()) CHECK(m.server.requests("/" + name) == 1);
  CHECK(read_file(work / "out2/mnist_train.tfrecord") == train);
  // Offline with the cache: works without a connection.
  const int before = m.server.connections();
  o.convert.dataset_dir = work / "out3";
  download_and_convert(o, resolver::Resolver(options(work.path / "cache", true)));
  CHECK(m.server.connections() == before);
  CHECK(read_file(work / "out3/mnist_train.tfrecord") == train);

  // Offline with an empty cache: slim's own URL, named, with how to go on.
  o.source_urls.clear();
  o.convert.dataset_dir = work / "offline";
  try {
    download_and_convert(o, resolver::Resolver(options(work.path / "empty_cache", true)));
    FAIL("offline download succeeded");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kUnavailable);
    const std::string what = e.what();
    CHECK(what.starts_with("dataset mnist: file 'http://yann.lecun.com/exdb/mnist/"));
    CHECK(what.find("offline mode") != std::string::npos);
    CHECK(what.find("hub data convert --dataset_name mnist --source PATH") != std::string::npos);
    CHECK(what.find("--source_url URL#sha256=HEX") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(work / "offline"));
}

TEST_CASE("download_and_convert cifar10: slim's python tarball (and the binary one), resumed after a cut") {
  TempDir work("dl_cifar");
  std::vector<std::pair<std::string, std::string>> py, bin;
  for (int b = 1; b <= 5; ++b) {
    py.push_back({"cifar-10-batches-py/data_batch_" + std::to_string(b), cifar_pickle(b, 2)});
    bin.push_back({"cifar-10-batches-bin/data_batch_" + std::to_string(b) + ".bin", cifar_batch(b, 2)});
  }
  py.push_back({"cifar-10-batches-py/test_batch", cifar_pickle(0, 3)});
  bin.push_back({"cifar-10-batches-bin/test_batch.bin", cifar_batch(0, 3)});
  write_tar_gz(work / "py.tar.gz", py);
  write_tar_gz(work / "bin.tar.gz", bin);
  Mirror m;
  const std::string py_bytes = read_file(work / "py.tar.gz");
  m.add("cifar-10-python.tar.gz", py_bytes, py_bytes.size() / 2);  // the first response is cut midway
  m.add("cifar-10-binary.tar.gz", read_file(work / "bin.tar.gz"));
  const resolver::Resolver res(options(work.path / "cache"));
  std::map<std::string, std::string> outputs;
  for (const char* archive : {"cifar-10-python.tar.gz", "cifar-10-binary.tar.gz"}) {
    DownloadOptions o;
    o.convert.dataset_name = "cifar10";
    o.convert.dataset_dir = work / archive + ".out";
    o.source_urls = {m.pinned(archive)};
    const DownloadResult r = download_and_convert(o, res);
    REQUIRE(r.sources.size() == 1);
    CHECK(r.sources[0].path.filename() == archive);
    for (auto [split, batches, per] :
         {std::tuple{"train", std::vector<int>{1, 2, 3, 4, 5}, 2}, std::tuple{"test", std::vector<int>{0}, 3}}) {
      const auto recs = read_records(o.convert.dataset_dir + "/cifar10_" + split + ".tfrecord");
      REQUIRE(recs.size() == batches.size() * per);
      for (size_t i = 0; i < recs.size(); ++i) {
        const int b = batches[i / per], rec = static_cast<int>(i % per);
        const ImageExample ex = parse_image_example(recs[i], "record");
        CHECK(ex.format == "png");
        CHECK(ex.label == (b + rec) % 10);
        const Tensor img = decode(ex.encoded);
        int wrong = 0;
        for (int p = 0; p < 1024; ++p)
          for (int c = 0; c < 3; ++c) wrong += img.data<uint8_t>()[p * 3 + c] != (b * 7 + rec * 3 + c * 5 + p) % 256;
        CHECK(wrong == 0);
      }
      outputs[std::string(archive) + split] = read_file(o.convert.dataset_dir + "/cifar10_" + split + ".tfrecord");
    }
  }
  CHECK(outputs["cifar-10-python.tar.gztrain"] == outputs["cifar-10-binary.tar.gztrain"]);
  // The cut download was continued with a Range request, not restarted.
  const auto log = m.server.log("/cifar-10-python.tar.gz");
  REQUIRE(log.size() == 2);
  CHECK(log[1].header("range") == "bytes=" + std::to_string(py_bytes.size() / 2) + "-");

  // A file name that is not one of cifar10's is refused, listing them.
  DownloadOptions o;
  o.convert.dataset_name = "cifar10";
  o.convert.dataset_dir = work / "bad";
  o.source_urls = {m.url("cifar-100-python.tar.gz")};
  expect_error(
      Code::kInvalidArgument, [&] { download_and_convert(o, res); },
      "'cifar-100-python.tar.gz' is not a source file of cifar10 (its files: cifar-10-python.tar.gz, "
      "cifar-10-binary.tar.gz)");
  // Without a fragment a mirror must serve slim's bytes: the pinned digest refuses these.
  o.source_urls = {m.url("cifar-10-python.tar.gz")};
  expect_error(
      Code::kDataLoss, [&] { download_and_convert(o, res); },
      "expected 6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce");
  CHECK_FALSE(fs::exists(work / "bad"));
}

TEST_CASE("download_and_convert flowers: flower_photos.tgz of JPEGs; a corrupted archive is refused, leaving nothing") {
  TempDir work("dl_flowers");
  const std::vector<std::string> classes = {"daisy", "dandelion", "roses", "sunflowers", "tulips"};
  std::vector<TarEntry> entries{{"flower_photos/", TarEntry::kDir},
                                {"flower_photos/LICENSE.txt", TarEntry::kFile, "cc"}};
  std::map<std::string, int64_t> label_of;  // image bytes -> class id
  for (size_t c = 0; c < classes.size(); ++c)
    for (int i = 0; i < 3; ++i) {
      const std::string jpeg = jpeg_of(4 + i, 5, static_cast<uint8_t>(40 * c + 10 * i));
      entries.push_back({"flower_photos/" + classes[c] + "/" + std::to_string(i) + ".jpg", TarEntry::kFile, jpeg});
      label_of[jpeg] = static_cast<int64_t>(c);
    }
  const std::string tgz = make_tar(entries);
  Mirror m;
  m.add("flower_photos.tgz", tgz);
  DownloadOptions o;
  o.convert.dataset_name = "flowers";
  o.convert.dataset_dir = work / "out";
  o.convert.num_validation = 4;
  o.convert.num_shards = 2;
  o.source_urls = {m.pinned("flower_photos.tgz")};
  const resolver::Resolver res(options(work.path / "cache"));
  const DownloadResult r = download_and_convert(o, res);
  CHECK(r.converted.labels == classes);
  CHECK(r.converted.counts.at("validation") == 4);
  CHECK(r.converted.counts.at("train") == 11);
  std::multiset<std::string> seen;
  for (const char* split : {"train", "validation"})
    for (int s = 0; s < 2; ++s)
      for (const auto& rec : read_records(
               work / ("out/flowers_" + std::string(split) + "_0000" + std::to_string(s) + "-of-00002.tfrecord"))) {
        const ImageExample ex = parse_image_example(rec, "record");
        REQUIRE(label_of.count(ex.encoded) == 1);  // the file's bytes, as they were in the archive
        CHECK(ex.label == label_of[ex.encoded]);
        CHECK(ex.format == "jpeg");
        const Tensor img = decode(ex.encoded);
        CHECK(ex.height == img.dim(0));
        CHECK(ex.width == 5);
        seen.insert(ex.encoded);
      }
  CHECK(seen.size() == 15);
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 15);
  // Only the shards and labels.txt: the unpacked photos are gone.
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(work.path / "out")) names.insert(e.path().filename().string());
  CHECK(names.size() == 5);
  CHECK(names.count("labels.txt") == 1);

  // The same URL serving other bytes than pinned: refused, nothing written.
  Mirror bad;
  std::string corrupted = tgz;
  corrupted[corrupted.size() / 2] ^= 0x55;
  bad.add("flower_photos.tgz", corrupted);
  o.convert.dataset_dir = work / "bad_out";
  o.source_urls = {bad.url("flower_photos.tgz") + "#sha256=" + sha256_hex(tgz)};
  expect_error(
      Code::kDataLoss, [&] { download_and_convert(o, resolver::Resolver(options(work.path / "cache2"))); },
      "dataset flowers: file '" + bad.url("flower_photos.tgz") + "': sha256 mismatch");
  CHECK_FALSE(fs::exists(work / "bad_out"));
  std::vector<std::string> left;
  for (const auto& e : fs::recursive_directory_iterator(work.path / "cache2"))
    if (!e.is_directory()) left.push_back(e.path().string());
  CHECK(left.empty());
}

TEST_CASE("imagenet: an ILSVRC folder -> train-NNNNN-of-NNNNN / validation shards, labels 1..N, no boxes") {
  TempDir src("ilsvrc"), work("ilsvrc_out");
  const std::vector<std::string> synsets = {"n01440764", "n01443537", "n01484850"};
  const std::vector<std::string> texts = {"tench, Tinca tinca", "goldfish, Carassius auratus", "great white shark"};
  std::map<std::string, std::pair<int64_t, std::string>> expected;  // file name -> label, synset
  for (size_t c = 0; c < synsets.size(); ++c) {
    fs::create_directories(src.path / "train" / synsets[c]);
    for (int i = 0; i < 3; ++i) {
      const std::string name = synsets[c] + "_" + std::to_string(i) + ".JPEG";
      write_all(src / ("train/" + synsets[c] + "/" + name), jpeg_of(6, 7 + i, static_cast<uint8_t>(60 * c + i)));
      expected[name] = {static_cast<int64_t>(c) + 1, synsets[c]};
    }
  }
  // A PNG named .JPEG (ImageNet has some): re-encoded as JPEG.
  const auto png = image::encode_png(solid(5, 5, 3, 200));
  write_all(src / "train/n01484850/n01484850_png.JPEG", {reinterpret_cast<const char*>(png.data()), png.size()});
  expected["n01484850_png.JPEG"] = {3, "n01484850"};
  // A CMYK JPEG (ILSVRC2012's train set has 22): re-encoded as RGB.
  const uint8_t ink[4] = {255, 128, 0, 200};  // Adobe-inverted: RGB (200, 100, 0)
  const auto cmyk = cmyk_jpeg(6, 6, ink, true);
  write_all(src / "train/n01440764/n01440764_cmyk.JPEG", {reinterpret_cast<const char*>(cmyk.data()), cmyk.size()});
  expected["n01440764_cmyk.JPEG"] = {1, "n01440764"};
  fs::create_directories(src.path / "validation");
  const std::vector<int> val_class = {2, 0, 1, 2};
  std::string val_labels;
  for (size_t i = 0; i < val_class.size(); ++i) {
    const std::string name = "ILSVRC2012_val_0000000" + std::to_string(i + 1) + ".JPEG";
    write_all(src / ("validation/" + name), jpeg_of(8, 8, static_cast<uint8_t>(i)));
    val_labels += synsets[val_class[i]] + "\n";
    expected[name] = {val_class[i] + 1, synsets[val_class[i]]};
  }
  write_all(src / "imagenet_2012_validation_synset_labels.txt", val_labels);
  std::string meta;
  for (size_t c = 0; c < synsets.size(); ++c) meta += synsets[c] + "\t" + texts[c] + "\n";
  write_all(src / "imagenet_metadata.txt", meta);

  DownloadOptions o;
  o.convert.dataset_name = "imagenet";
  o.convert.dataset_dir = work / "out";
  o.convert.train_shards = 2;
  o.convert.validation_shards = 1;
  o.imagenet_dir = src.path.string();
  const resolver::Resolver res(options(work.path / "cache"));
  const DownloadResult r = download_and_convert(o, res);
  CHECK(r.sources.empty());
  CHECK(r.converted.counts.at("train") == 11);
  CHECK(r.converted.counts.at("validation") == 4);
  CHECK(read_labels_file(work / "out/labels.txt") ==
        std::vector<std::string>{"background", texts[0], texts[1], texts[2]});
  std::set<std::string> seen;
  for (const char* file : {"train-00000-of-00002", "train-00001-of-00002", "validation-00000-of-00001"}) {
    const auto recs = read_records(work / ("out/" + std::string(file)));
    CHECK(recs.size() == (std::string(file).starts_with("train") ? (file[10] == '0' ? 6u : 5u) : 4u));
    for (const auto& rec : recs) {
      proto::Example ex;
      REQUIRE(ex.ParseFromString(rec));
      const auto& f = ex.features().feature();
      const std::string name = f.at("image/filename").bytes_list().value(0);
      REQUIRE(expected.count(name) == 1);
      CHECK(seen.insert(name).second);
      CHECK(std::string(file).starts_with("train") == !name.starts_with("ILSVRC2012_val"));
      const auto [label, synset] = expected[name];
      CHECK(f.at("image/class/label").int64_list().value(0) == label);
      CHECK(f.at("image/class/synset").bytes_list().value(0) == synset);
      CHECK(f.at("image/class/text").bytes_list().value(0) == texts[label - 1]);
      CHECK(f.at("image/format").bytes_list().value(0) == "JPEG");
      CHECK(f.at("image/colorspace").bytes_list().value(0) == "RGB");
      CHECK(f.at("image/channels").int64_list().value(0) == 3);
      for (const auto& [key, value] : f) CHECK_MESSAGE(key.find("bbox") == std::string::npos, key);
      const std::string& encoded = f.at("image/encoded").bytes_list().value(0);
      CHECK(image::sniff_format({reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size()}) ==
            image::Format::kJpeg);
      const Tensor img = decode(encoded);
      CHECK(f.at("image/height").int64_list().value(0) == img.dim(0));
      CHECK(f.at("image/width").int64_list().value(0) == img.dim(1));
      const image::ImageInfo info =
          image::probe_image({reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size()}, name);
      CHECK(info.channels == 3);
      if (name.ends_with("_png.JPEG")) {
        CHECK(std::abs(int{img.data<uint8_t>()[0]} - 200) <= 2);  // quality 100
      } else if (name.ends_with("_cmyk.JPEG")) {
        CHECK(std::abs(int{img.data<uint8_t>()[0]} - 200) <= 3);
        CHECK(std::abs(int{img.data<uint8_t>()[1]} - 100) <= 3);
        CHECK(int{img.data<uint8_t>()[2]} <= 3);
      } else {
        const std::string dir = name.starts_with("ILSVRC2012_val") ? "validation/" : "train/" + synset + "/";
        CHECK(encoded == read_file(src.path / (dir + name)));  // JPEGs stored as they are
      }
    }
  }
  CHECK(seen.size() == expected.size());

  // Validation in synset folders (slim's preprocess_imagenet_validation_data.py) needs no labels file.
  fs::remove_all(src.path / "validation");
  fs::remove(src.path / "imagenet_2012_validation_synset_labels.txt");
  fs::create_directories(src.path / "validation" / synsets[1]);
  write_all(src / ("validation/" + synsets[1] + "/v.JPEG"), jpeg_of(3, 3, 9));
  o.convert.dataset_dir = work / "out2";
  CHECK(download_and_convert(o, res).converted.counts.at("validation") == 1);
  const auto rec = read_records(work / "out2/validation-00000-of-00001");
  REQUIRE(rec.size() == 1);
  CHECK(parse_image_example(rec[0], "record").label == 2);

  // A flat validation folder whose labels do not fit.
  fs::remove_all(src.path / "validation");
  fs::create_directories(src.path / "validation");
  write_all(src / "validation/a.JPEG", jpeg_of(3, 3, 1));
  write_all(src / "validation/b.JPEG", jpeg_of(3, 3, 2));
  o.convert.dataset_dir = work / "out3";
  expect_error(
      Code::kNotFound, [&] { download_and_convert(o, res); }, "no validation labels file");
  write_all(src / "labels.txt", "n01440764\n");
  o.convert.imagenet.validation_labels = src / "labels.txt";
  expect_error(
      Code::kCorruption, [&] { download_and_convert(o, res); }, "has 1 labels for the 2 images");
  write_all(src / "labels.txt", "n01440764\nn99999999\n");
  expect_error(
      Code::kCorruption, [&] { download_and_convert(o, res); },
      "labels.txt:2: synset 'n99999999' is not one of the 3 classes");
  CHECK_FALSE(fs::exists(work / "out3/labels.txt"));
  o.convert.num_shards = 4;
  expect_error(
      Code::kInvalidArgument, [&] { download_and_convert(o, res); }, "--num_shards does not apply to imagenet");
  o.imagenet_dir.clear();
  expect_error(
      Code::kInvalidArgument, [&] { download_and_convert(o, res); }, "--imagenet_dir is required");
}

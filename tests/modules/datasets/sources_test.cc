// modules/datasets: the IDX (MNIST), CIFAR-10 binary and image-folder
// sources, conversion to TFRecord shards with slim's names, and Fashion-MNIST
// from its Debian package.
#include "modules/datasets/sources.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "datasets_testutil.h"
#include "hub/core/fileio.h"
#include "hub/image/image.h"
#include "hub/image/resize.h"
#include "modules/datasets/convert.h"
#include "modules/datasets/example.h"
#include "modules/datasets/tfrecord.h"
#include "testutil.h"

using namespace hub;
using namespace hub::data;
using namespace hub::testing;
namespace fs = std::filesystem;

TEST_CASE("IDX gz: read back, validation") {
  TempDir dir("idx");
  write_mnist(dir.path.string(), "train", 5);
  LabeledImages m = read_mnist(dir / "train-images-idx3-ubyte.gz", dir / "train-labels-idx1-ubyte.gz");
  REQUIRE(m.images.shape() == Shape{5, 4, 3, 1});
  CHECK(m.labels == std::vector<int64_t>{0, 1, 2, 3, 4});
  for (int i = 0; i < 5; ++i)
    for (int p = 0; p < 12; ++p) CHECK(m.images.data<uint8_t>()[i * 12 + p] == (i * 50 + p) % 256);
  LabeledImages first = read_mnist(dir / "train-images-idx3-ubyte.gz", dir / "train-labels-idx1-ubyte.gz", 2);
  CHECK(first.images.shape() == Shape{2, 4, 3, 1});

  // Header claims 6 images, data has 5.
  write_gz(dir / "short.gz", idx(3, {6, 4, 3}, std::string(60, 'a')));
  expect_error(
      Code::kCorruption, [&] { read_idx_gz(dir / "short.gz"); }, "short.gz");
  expect_error(
      Code::kCorruption, [&] { read_idx_gz(dir / "short.gz"); }, "72");
  write_gz(dir / "long.gz", idx(1, {3}, "abcd"));
  expect_error(
      Code::kCorruption, [&] { read_idx_gz(dir / "long.gz"); }, "trailing");
  write_gz(dir / "magic.gz", "\x01\x02\x08\x01zzzz");
  expect_error(
      Code::kInvalidArgument, [&] { read_idx_gz(dir / "magic.gz"); }, "magic");
  write_gz(dir / "float.gz", idx(1, {1}, "abcd").replace(2, 1, "\x0d"));
  expect_error(
      Code::kInvalidArgument, [&] { read_idx_gz(dir / "float.gz"); }, "0x0d");
  write_gz(dir / "big.gz", idx(3, {0xffffffu, 0xffffu, 0xffffu}, ""));
  expect_error(
      Code::kResourceExhausted, [&] { read_idx_gz(dir / "big.gz"); }, "big.gz");
  // A cut gzip stream.
  std::string gz = read_file(dir / "train-images-idx3-ubyte.gz");
  write_all(dir / "cut.gz", gz.substr(0, gz.size() - 12));
  expect_error(
      Code::kCorruption, [&] { read_idx_gz(dir / "cut.gz"); }, "cut.gz");
  // Count mismatch between images and labels.
  write_gz(dir / "labels4.gz", idx(1, {4}, "\x01\x02\x03\x04"));
  expect_error(
      Code::kCorruption, [&] { read_mnist(dir / "train-images-idx3-ubyte.gz", dir / "labels4.gz"); }, "4 labels");
  expect_error(
      Code::kNotFound, [&] { read_idx_gz(dir / "nope.gz"); }, "nope.gz");
}

TEST_CASE("CIFAR-10 binary tar.gz") {
  TempDir dir("cifar");
  std::vector<std::pair<std::string, std::string>> files;
  // Archive order differs from batch order on purpose.
  for (int b : {3, 1, 5, 2, 4})
    files.push_back({"cifar-10-batches-bin/data_batch_" + std::to_string(b) + ".bin", cifar_batch(b, 2)});
  files.push_back({"cifar-10-batches-bin/test_batch.bin", cifar_batch(9, 1)});
  files.push_back({"cifar-10-batches-bin/batches.meta.txt", "airplane\n"});
  write_tar_gz(dir / "cifar.tar.gz", files);
  LabeledImages train = read_cifar10(dir / "cifar.tar.gz", "train");
  REQUIRE(train.images.shape() == Shape{10, 32, 32, 3});
  const uint8_t* px = train.images.data<uint8_t>();
  for (int b = 1; b <= 5; ++b)
    for (int r = 0; r < 2; ++r) {
      const int i = (b - 1) * 2 + r;
      CHECK(train.labels[i] == (b + r) % 10);
      for (int p : {0, 1, 33, 1023})
        for (int c = 0; c < 3; ++c) CHECK(px[(i * 1024 + p) * 3 + c] == (b * 7 + r * 3 + c * 5 + p) % 256);
    }
  LabeledImages test = read_cifar10(dir / "cifar.tar.gz", "test");
  CHECK(test.images.dim(0) == 1);
  CHECK(test.labels[0] == 9);

  files.erase(files.begin());  // no data_batch_3
  write_tar_gz(dir / "missing.tar.gz", files);
  expect_error(
      Code::kCorruption, [&] { read_cifar10(dir / "missing.tar.gz", "train"); }, "data_batch_3.bin");
  write_tar_gz(dir / "odd.tar.gz", {{"test_batch.bin", std::string(3000, 'x')}});
  expect_error(
      Code::kCorruption, [&] { read_cifar10(dir / "odd.tar.gz", "test"); }, "3000 bytes");
  write_all(dir / "junk.tar.gz", "this is not an archive at all, not even close........");
  CHECK_THROWS_AS(read_cifar10(dir / "junk.tar.gz", "test"), Error);
  expect_error(
      Code::kInvalidArgument, [&] { read_cifar10(dir / "cifar.tar.gz", "val"); }, "val");
}

TEST_CASE("convert mnist end to end") {
  TempDir src("mnist_src"), out("mnist_out");
  write_mnist(src.path.string(), "train", 7, 28, 28);
  write_mnist(src.path.string(), "t10k", 3, 28, 28);
  ConvertOptions o;
  o.dataset_name = "mnist";
  o.dataset_dir = out.path.string();
  o.source = src.path.string();
  ConvertResult r = convert_dataset(o);
  CHECK(r.counts["train"] == 7);
  CHECK(r.counts["test"] == 3);
  CHECK(read_file(out / "labels.txt").starts_with("0:zero\n1:one\n"));
  CHECK(read_labels_file(out / "labels.txt") == mnist_labels());
  auto recs = read_records(out / "mnist_train.tfrecord");
  REQUIRE(recs.size() == 7);
  LabeledImages orig = read_mnist(src / "train-images-idx3-ubyte.gz", src / "train-labels-idx1-ubyte.gz");
  for (int i = 0; i < 7; ++i) {
    ImageExample ex = parse_image_example(recs[i], "rec");
    CHECK(ex.format == "png");
    CHECK(ex.label == i % 10);
    CHECK(ex.height == 28);
    Tensor img = image::decode_image_u8({reinterpret_cast<const uint8_t*>(ex.encoded.data()), ex.encoded.size()},
                                        {.channels = 1}, "rec");
    CHECK(std::memcmp(img.data<uint8_t>(), orig.images.data<uint8_t>() + i * 784, 784) == 0);
  }
  CHECK(find_split_files(out.path.string(), "mnist", "test") == std::vector<std::string>{out / "mnist_test.tfrecord"});
  CHECK(no_temp_files(out.path));

  // Sharded output, and a failing conversion leaves no partial file.
  o.num_shards = 3;
  r = convert_dataset(o);
  CHECK(find_split_files(out.path.string(), "mnist", "train").size() == 3 + 1);  // + single file
  CHECK(read_records(out / "mnist_train_00002-of-00003.tfrecord").size() == 1);  // 3,3,1
  fs::remove(src / "t10k-labels-idx1-ubyte.gz");
  TempDir out2("mnist_out2");
  o.dataset_dir = out2.path.string();
  expect_error(
      Code::kNotFound, [&] { convert_dataset(o); }, "t10k-labels-idx1-ubyte.gz");
  CHECK(!fs::exists(out2 / "labels.txt"));
  CHECK(fs::is_empty(out2.path));  // the train split, written first, was not committed
  CHECK(no_temp_files(out2.path));

  o.dataset_name = "cifar100";
  expect_error(
      Code::kInvalidArgument, [&] { convert_dataset(o); }, "unknown --dataset_name 'cifar100'");
  o.dataset_name = "mnist";
  o.source = "";
  expect_error(
      Code::kInvalidArgument, [&] { convert_dataset(o); }, "--source");
}

TEST_CASE("shard names as slim's: <name>_<split>[_NNNNN-of-NNNNN].tfrecord, and ImageNet's <split>-NNNNN-of-NNNNN") {
  CHECK(shard_file_name("flowers", "train", 3, 5) == "flowers_train_00003-of-00005.tfrecord");
  CHECK(shard_file_name("cifar10", "test", 0, 1) == "cifar10_test.tfrecord");
  // build_imagenet_data.py: always numbered, no extension.
  CHECK(shard_file_name("imagenet", "train", 0, 1) == "train-00000-of-00001");
  CHECK(shard_file_name("imagenet", "validation", 127, 128) == "validation-00127-of-00128");
  TempDir dir("shard_names");
  auto touch = [&](const std::string& name) {
    TFRecordWriter w((dir / name));
    w.write("x");
    w.commit();
  };
  for (const char* f :
       {"train-00000-of-00002", "train-00001-of-00002", "validation-00000-of-00001", "train-0000-of-00002",
        "train-00000-of-00002.tmp", "training-00000-of-00001", "mine_train.tfrecord"})
    touch(f);
  // ImageNet-style shards of the split, whatever the data set's name; the
  // near misses are left out.
  CHECK(find_split_files(dir.path.string(), "imagenet", "train") ==
        std::vector<std::string>{dir / "train-00000-of-00002", dir / "train-00001-of-00002"});
  CHECK(find_split_files(dir.path.string(), "mine", "train") == std::vector<std::string>{dir / "mine_train.tfrecord",
                                                                                         dir / "train-00000-of-00002",
                                                                                         dir / "train-00001-of-00002"});
  CHECK(find_split_files(dir.path.string(), "imagenet", "validation") ==
        std::vector<std::string>{dir / "validation-00000-of-00001"});
  expect_error(
      Code::kNotFound, [&] { find_split_files(dir.path.string(), "imagenet", "test"); }, "test-NNNNN-of-NNNNN");
}

TEST_CASE("convert cifar10 and flowers") {
  TempDir src("cf_src"), out("cf_out");
  std::vector<std::pair<std::string, std::string>> files;
  for (int b = 1; b <= 5; ++b) files.push_back({"data_batch_" + std::to_string(b) + ".bin", cifar_batch(b, 1)});
  files.push_back({"test_batch.bin", cifar_batch(0, 2)});
  write_tar_gz(src / "c.tar.gz", files);
  ConvertResult r =
      convert_dataset({.dataset_name = "cifar10", .dataset_dir = out.path.string(), .source = src / "c.tar.gz"});
  CHECK(r.counts["train"] == 5);
  CHECK(r.labels[9] == "truck");
  auto recs = read_records(out / "cifar10_test.tfrecord");
  REQUIRE(recs.size() == 2);
  ImageExample ex = parse_image_example(recs[1], "r");
  CHECK(ex.label == 1);
  Tensor img =
      image::decode_image_u8({reinterpret_cast<const uint8_t*>(ex.encoded.data()), ex.encoded.size()}, {}, "r");
  CHECK(img.data<uint8_t>()[3 * 5 + 2] == (0 + 3 + 10 + 5) % 256);  // record 1, pixel 5, blue

  // flowers: 3 classes x 4 images, values encode (class, index).
  const std::vector<std::string> classes = {"daisy", "roses", "tulips"};
  for (size_t c = 0; c < classes.size(); ++c) {
    fs::create_directories(src.path / "photos" / classes[c]);
    for (int i = 0; i < 4; ++i) {
      const auto png = image::encode_png(solid(3, 2 + i, 3, static_cast<uint8_t>(c * 10 + i)));
      write_file_atomic(src / ("photos/" + classes[c] + "/img" + std::to_string(i) + ".jpg"),
                        {reinterpret_cast<const char*>(png.data()), png.size()});
    }
  }
  fs::create_directories(src.path / "photos" / "empty");
  ConvertOptions fo{.dataset_name = "flowers",
                    .dataset_dir = out / "flowers",
                    .source = src / "photos",
                    .num_shards = 2,
                    .num_validation = 3,
                    .seed = 1};
  r = convert_dataset(fo);
  CHECK(r.labels == classes);
  CHECK(r.counts["validation"] == 3);
  CHECK(r.counts["train"] == 9);
  CHECK(read_labels_file(out / "flowers/labels.txt") == classes);
  std::multiset<std::pair<int64_t, int>> seen;
  for (const char* split : {"train", "validation"})
    for (const auto& f : find_split_files(out / "flowers", "flowers", split))
      for (const auto& rec : read_records(f)) {
        ImageExample e = parse_image_example(rec, f);
        CHECK(e.format == "png");  // sniffed, not the .jpg extension
        Tensor t =
            image::decode_image_u8({reinterpret_cast<const uint8_t*>(e.encoded.data()), e.encoded.size()}, {}, f);
        CHECK(t.dim(1) == e.width);
        CHECK(t.data<uint8_t>()[0] / 10 == e.label);
        seen.insert({e.label, t.data<uint8_t>()[0] % 10});
      }
  CHECK(seen.size() == 12);
  CHECK(std::set(seen.begin(), seen.end()).size() == 12);
  CHECK(fs::exists(out / "flowers/flowers_train_00001-of-00002.tfrecord"));
  // Same seed, same split.
  ConvertOptions again = fo;
  again.dataset_dir = out / "flowers2";
  convert_dataset(again);
  CHECK(read_file(out / "flowers/flowers_validation_00000-of-00002.tfrecord") ==
        read_file(out / "flowers2/flowers_validation_00000-of-00002.tfrecord"));
  // A corrupt image fails the conversion, naming the file.
  write_all(src / "photos/roses/bad.png", "\x89PNG\r\n\x1a\nbroken");
  again.dataset_dir = out / "flowers3";
  expect_error(
      Code::kCorruption, [&] { convert_dataset(again); }, "bad.png");
  CHECK(fs::is_empty(out / "flowers3"));
}

TEST_CASE("Fashion-MNIST from the Debian package (first 100 records)") {
  const std::string dir = kFashionMnistDefaultSource;
  HUB_SKIP_UNLESS(fs::exists(dir + "/train-images-idx3-ubyte.gz"),
                  dir + " not installed (Debian package dataset-fashion-mnist)");
  LabeledImages m = read_mnist(dir + "/train-images-idx3-ubyte.gz", dir + "/train-labels-idx1-ubyte.gz", 100);
  CHECK(m.images.shape() == Shape{100, 28, 28, 1});
  std::set<int64_t> labels(m.labels.begin(), m.labels.end());
  CHECK(labels.size() == 10);
  CHECK(*labels.rbegin() == 9);
}

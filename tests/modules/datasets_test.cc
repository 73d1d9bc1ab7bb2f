// modules/datasets: CRC32C, TFRecord, tf.Example, IDX/CIFAR/folder readers,
// conversion and the streaming reader. Inputs are built by the tests (gzip via
// zlib, tar.gz via libarchive, images via our PNG encoder).
#include <doctest/doctest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "hub/core/fileio.h"
#include "hub/image/image.h"
#include "hub/image/resize.h"
#include "modules/datasets/convert.h"
#include "hub/core/crc32c.h"
#include "modules/datasets/example.h"
#include "modules/datasets/reader.h"
#include "modules/datasets/sources.h"
#include "modules/datasets/tfrecord.h"
#include "testutil.h"

using namespace hub;
using namespace hub::data;
using hub::testing::expect_error;
using hub::testing::make_tar;
using hub::testing::TarEntry;
using hub::testing::TempDir;
namespace fs = std::filesystem;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

void write_gz(const std::string& path, const std::string& data) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f);
  REQUIRE(gzwrite(f, data.data(), static_cast<unsigned>(data.size())) == static_cast<int>(data.size()));
  gzclose(f);
}

std::string idx(uint8_t rank, const std::vector<uint32_t>& dims, const std::string& body) {
  std::string s = {0, 0, 8, static_cast<char>(rank)};
  for (uint32_t d : dims)
    for (int sh = 24; sh >= 0; sh -= 8) s.push_back(static_cast<char>(d >> sh));
  return s + body;
}

// n images of h x w: pixel (i, y, x) = (i * 50 + y * w + x) % 256; label i % 10.
void write_mnist(const std::string& dir, const std::string& prefix, int n, int h = 4, int w = 3) {
  std::string px, labels;
  for (int i = 0; i < n; ++i) {
    for (int p = 0; p < h * w; ++p) px.push_back(static_cast<char>((i * 50 + p) % 256));
    labels.push_back(static_cast<char>(i % 10));
  }
  write_gz(dir + "/" + prefix + "-images-idx3-ubyte.gz",
           idx(3, {static_cast<uint32_t>(n), static_cast<uint32_t>(h), static_cast<uint32_t>(w)}, px));
  write_gz(dir + "/" + prefix + "-labels-idx1-ubyte.gz", idx(1, {static_cast<uint32_t>(n)}, labels));
}

// CIFAR record r of batch b: label (b + r) % 10; plane c, pixel p = (b*7 + r*3 + c*5 + p) % 256.
std::string cifar_batch(int b, int records) {
  std::string s;
  for (int r = 0; r < records; ++r) {
    s.push_back(static_cast<char>((b + r) % 10));
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < 1024; ++p) s.push_back(static_cast<char>((b * 7 + r * 3 + c * 5 + p) % 256));
  }
  return s;
}

// `files` (name, bytes) as a .tar.gz at `path`.
void write_tar_gz(const std::string& path, const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<TarEntry> entries;
  for (const auto& [name, data] : files) entries.push_back({name, TarEntry::kFile, data});
  write_file_atomic(path, make_tar(entries));
}

std::vector<std::string> read_records(const std::string& path) {
  TFRecordReader r(path);
  std::vector<std::string> out;
  std::string rec;
  while (r.read(&rec)) out.push_back(rec);
  return out;
}

Tensor solid(int h, int w, int c, uint8_t v) {
  Tensor t(DType::kUInt8, Shape{h, w, c});
  std::memset(t.data<uint8_t>(), v, t.nbytes());
  return t;
}

std::string png_example(int64_t label, uint8_t value, int h = 2, int w = 2) {
  const auto png = image::encode_png(solid(h, w, 3, value));
  return make_image_example({std::string(png.begin(), png.end()), "png", label, h, w});
}

bool no_temp_files(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) return false;
  return true;
}

}  // namespace

TEST_CASE("TFRecord record bytes match the format") {
  // Masked CRCs computed independently (Python, bitwise CRC-32C).
  const std::string want = std::string("\x03\0\0\0\0\0\0\0", 8) + "\xb0\x99\x49\x0e" + "abc" +
                           "\x6e\x57\xf1\x21";
  CHECK(encode_tfrecord("abc") == want);
  TempDir dir("record");
  write_all(dir / "hand.tfrecord", want + want);
  auto recs = read_records(dir / "hand.tfrecord");
  REQUIRE(recs.size() == 2);
  CHECK(recs[0] == "abc");
}

TEST_CASE("TFRecord round trip, atomic writer") {
  TempDir dir("roundtrip");
  const std::string path = dir / "a.tfrecord";
  std::vector<std::string> records = {"", "x", std::string(100000, 'z'), std::string("\0\1\2", 3)};
  {
    TFRecordWriter w(path);
    for (const auto& r : records) w.write(r);
    CHECK(!fs::exists(path));  // not visible before commit
    w.commit();
    CHECK(w.records_written() == 4);
  }
  CHECK(read_records(path) == records);
  CHECK(no_temp_files(dir.path));
  {
    TFRecordWriter w(dir / "b.tfrecord");
    w.write("never committed");
  }
  CHECK(!fs::exists(dir / "b.tfrecord"));
  CHECK(no_temp_files(dir.path));
  expect_error(Code::kIOError, [&] { TFRecordWriter w(dir / "no/such/dir.tfrecord"); }, "dir.tfrecord");
}

TEST_CASE("TFRecord corruption names file and record") {
  TempDir dir("corrupt");
  const std::string good = encode_tfrecord("first") + encode_tfrecord("second record");
  const std::string path = dir / "c.tfrecord";
  std::string bad = good;
  bad[good.size() - 6] ^= 1;  // data of record 1
  write_all(path, bad);
  expect_error(Code::kCorruption, [&] { read_records(path); }, "record 1");
  expect_error(Code::kCorruption, [&] { read_records(path); }, "data CRC mismatch");
  bad = good;
  bad[0] ^= 1;  // length of record 0
  write_all(path, bad);
  expect_error(Code::kCorruption, [&] { read_records(path); }, "record 0");
  expect_error(Code::kCorruption, [&] { read_records(path); }, "length CRC");
  write_all(path, good.substr(0, good.size() - 3));
  expect_error(Code::kCorruption, [&] { read_records(path); }, "c.tfrecord: record 1");
  write_all(path, good.substr(0, good.size() - 10));  // header complete, data cut
  expect_error(Code::kCorruption, [&] { read_records(path); }, "record 1");
  // A valid header claiming a huge record is refused before allocating.
  std::string huge(8, '\0');
  huge[5] = 1;  // 2^40
  const uint32_t m = crc32c::mask(crc32c::value(huge));
  for (int i = 0; i < 4; ++i) huge.push_back(static_cast<char>(m >> (8 * i)));
  write_all(path, huge + "tiny");
  expect_error(Code::kCorruption, [&] { read_records(path); }, "exceeds");
  expect_error(Code::kNotFound, [&] { read_records(dir / "missing.tfrecord"); }, "missing.tfrecord");
}

TEST_CASE("TFRecord skip and read_at: offsets, threads, corruption") {
  TempDir dir("random_access");
  const std::string path = dir / "r.tfrecord";
  std::vector<std::string> records;
  for (int i = 0; i < 50; ++i) records.push_back(std::string(static_cast<size_t>(i * 37 % 300), static_cast<char>('a' + i % 26)));
  {
    TFRecordWriter w(path);
    for (const auto& r : records) w.write(r);
    w.commit();
  }
  // skip() walks the same offsets read() does, without the data.
  TFRecordReader scan(path);
  std::vector<uint64_t> offsets;
  uint64_t expected = 0;
  while (true) {
    offsets.push_back(scan.offset());
    if (!scan.skip()) break;
    CHECK(offsets.back() == expected);
    expected += 16 + records[offsets.size() - 1].size();
  }
  offsets.pop_back();  // the end of the file
  REQUIRE(offsets.size() == records.size());
  CHECK(scan.index() == 50);
  CHECK(scan.offset() == fs::file_size(path));
  // read_at from several threads at once, in any order.
  std::vector<std::string> got(records.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = static_cast<size_t>(t); i < records.size(); i += 4)
        got[records.size() - 1 - i] = scan.read_at(offsets[records.size() - 1 - i], static_cast<int64_t>(i));
    });
  for (auto& th : threads) th.join();
  CHECK(got == records);
  // A damaged record is found by read_at (data CRC), not by skip (header only).
  std::string bytes = read_all(path);
  bytes[offsets[7] + 12] ^= 1;
  write_all(dir / "bad.tfrecord", bytes);
  TFRecordReader bad(dir / "bad.tfrecord");
  while (bad.skip()) {
  }
  CHECK(bad.index() == 50);
  expect_error(Code::kCorruption, [&] { bad.read_at(offsets[7], 7); }, "bad.tfrecord: record 7 at byte " + std::to_string(offsets[7]) + ": data CRC mismatch");
  expect_error(Code::kCorruption, [&] { bad.read_at(offsets[7] + 1, 7); }, "length CRC mismatch");
  expect_error(Code::kCorruption, [&] { bad.read_at(fs::file_size(path), 50); }, "end of file");
}

TEST_CASE("tf.Example is wire-compatible with TensorFlow's schema") {
  // Example{features{feature{"a": int64_list{5}}}} encoded by hand:
  //   Int64List  0a 01 05 (packed field 1) ; Feature.int64_list = 3 -> 1a 03 ..
  //   map entry: key 0a 01 'a', value 12 05 ..; Features.feature = 1; Example.features = 1
  const std::string hand = std::string("\x0a\x0c\x0a\x0a\x0a\x01" "a" "\x12\x05\x1a\x03\x0a\x01\x05", 14);
  proto::Example ex;
  REQUIRE(ex.ParseFromString(hand));
  const auto& f = ex.features().feature().at("a");
  REQUIRE(f.has_int64_list());
  CHECK(f.int64_list().value(0) == 5);
  CHECK(ex.SerializeAsString() == hand);
  // FloatList is field 2 of Feature, packed floats.
  proto::Example fx;
  (*fx.mutable_features()->mutable_feature())["b"].mutable_float_list()->add_value(1.0f);
  const std::string fb = fx.SerializeAsString();
  CHECK(fb == std::string("\x0a\x0f\x0a\x0d\x0a\x01" "b" "\x12\x08\x12\x06\x0a\x04\x00\x00\x80\x3f", 17));
  // BytesList is field 1.
  proto::Example bx;
  (*bx.mutable_features()->mutable_feature())["c"].mutable_bytes_list()->add_value("hi");
  CHECK(bx.SerializeAsString() == std::string("\x0a\x0d\x0a\x0b\x0a\x01" "c" "\x12\x06\x0a\x04\x0a\x02hi", 15));
}

TEST_CASE("image examples round trip and bad examples are reported") {
  ImageExample in{"\x89PNG fake", "png", 7, 28, 29};
  const ImageExample out = parse_image_example(make_image_example(in), "here");
  CHECK(out.encoded == in.encoded);
  CHECK(out.format == "png");
  CHECK(out.label == 7);
  CHECK(out.height == 28);
  CHECK(out.width == 29);
  CHECK(make_image_example(in) == make_image_example(in));
  expect_error(Code::kCorruption, [] { parse_image_example("\xff\xff\xff", "f.tfrecord: record 3"); },
               "f.tfrecord: record 3");
  proto::Example ex;
  (*ex.mutable_features()->mutable_feature())["image/encoded"].mutable_bytes_list()->add_value("x");
  expect_error(Code::kCorruption, [&] { parse_image_example(ex.SerializeAsString(), "r"); },
               "image/format");
  (*ex.mutable_features()->mutable_feature())["image/format"].mutable_bytes_list()->add_value("png");
  (*ex.mutable_features()->mutable_feature())["image/class/label"].mutable_float_list()->add_value(1);
  expect_error(Code::kCorruption, [&] { parse_image_example(ex.SerializeAsString(), "r"); },
               "image/class/label");
}

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
  expect_error(Code::kCorruption, [&] { read_idx_gz(dir / "short.gz"); }, "short.gz");
  expect_error(Code::kCorruption, [&] { read_idx_gz(dir / "short.gz"); }, "72");
  write_gz(dir / "long.gz", idx(1, {3}, "abcd"));
  expect_error(Code::kCorruption, [&] { read_idx_gz(dir / "long.gz"); }, "trailing");
  write_gz(dir / "magic.gz", "\x01\x02\x08\x01zzzz");
  expect_error(Code::kInvalidArgument, [&] { read_idx_gz(dir / "magic.gz"); }, "magic");
  write_gz(dir / "float.gz", idx(1, {1}, "abcd").replace(2, 1, "\x0d"));
  expect_error(Code::kInvalidArgument, [&] { read_idx_gz(dir / "float.gz"); }, "0x0d");
  write_gz(dir / "big.gz", idx(3, {0xffffffu, 0xffffu, 0xffffu}, ""));
  expect_error(Code::kResourceExhausted, [&] { read_idx_gz(dir / "big.gz"); }, "big.gz");
  // A cut gzip stream.
  std::string gz = read_all(dir / "train-images-idx3-ubyte.gz");
  write_all(dir / "cut.gz", gz.substr(0, gz.size() - 12));
  expect_error(Code::kCorruption, [&] { read_idx_gz(dir / "cut.gz"); }, "cut.gz");
  // Count mismatch between images and labels.
  write_gz(dir / "labels4.gz", idx(1, {4}, "\x01\x02\x03\x04"));
  expect_error(Code::kCorruption,
               [&] { read_mnist(dir / "train-images-idx3-ubyte.gz", dir / "labels4.gz"); }, "4 labels");
  expect_error(Code::kNotFound, [&] { read_idx_gz(dir / "nope.gz"); }, "nope.gz");
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
        for (int c = 0; c < 3; ++c)
          CHECK(px[(i * 1024 + p) * 3 + c] == (b * 7 + r * 3 + c * 5 + p) % 256);
    }
  LabeledImages test = read_cifar10(dir / "cifar.tar.gz", "test");
  CHECK(test.images.dim(0) == 1);
  CHECK(test.labels[0] == 9);

  files.erase(files.begin());  // no data_batch_3
  write_tar_gz(dir / "missing.tar.gz", files);
  expect_error(Code::kCorruption, [&] { read_cifar10(dir / "missing.tar.gz", "train"); }, "data_batch_3.bin");
  write_tar_gz(dir / "odd.tar.gz", {{"test_batch.bin", std::string(3000, 'x')}});
  expect_error(Code::kCorruption, [&] { read_cifar10(dir / "odd.tar.gz", "test"); }, "3000 bytes");
  write_all(dir / "junk.tar.gz", "this is not an archive at all, not even close........");
  CHECK_THROWS_AS(read_cifar10(dir / "junk.tar.gz", "test"), Error);
  expect_error(Code::kInvalidArgument, [&] { read_cifar10(dir / "cifar.tar.gz", "val"); }, "val");
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
  CHECK(read_all(out / "labels.txt").starts_with("0:zero\n1:one\n"));
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
  CHECK(find_split_files(out.path.string(), "mnist", "test") ==
        std::vector<std::string>{out / "mnist_test.tfrecord"});
  CHECK(no_temp_files(out.path));

  // Sharded output, and a failing conversion leaves no partial file.
  o.num_shards = 3;
  r = convert_dataset(o);
  CHECK(find_split_files(out.path.string(), "mnist", "train").size() == 3 + 1);  // + single file
  CHECK(read_records(out / "mnist_train_00002-of-00003.tfrecord").size() == 1);  // 3,3,1
  fs::remove(src / "t10k-labels-idx1-ubyte.gz");
  TempDir out2("mnist_out2");
  o.dataset_dir = out2.path.string();
  expect_error(Code::kNotFound, [&] { convert_dataset(o); }, "t10k-labels-idx1-ubyte.gz");
  CHECK(!fs::exists(out2 / "labels.txt"));
  CHECK(fs::is_empty(out2.path));  // the train split, written first, was not committed
  CHECK(no_temp_files(out2.path));

  o.dataset_name = "imagenet";
  expect_error(Code::kInvalidArgument, [&] { convert_dataset(o); }, "imagenet");
  o.dataset_name = "mnist";
  o.source = "";
  expect_error(Code::kInvalidArgument, [&] { convert_dataset(o); }, "--source");
}

TEST_CASE("convert cifar10 and flowers") {
  TempDir src("cf_src"), out("cf_out");
  std::vector<std::pair<std::string, std::string>> files;
  for (int b = 1; b <= 5; ++b) files.push_back({"data_batch_" + std::to_string(b) + ".bin", cifar_batch(b, 1)});
  files.push_back({"test_batch.bin", cifar_batch(0, 2)});
  write_tar_gz(src / "c.tar.gz", files);
  ConvertResult r = convert_dataset({.dataset_name = "cifar10", .dataset_dir = out.path.string(),
                                     .source = src / "c.tar.gz"});
  CHECK(r.counts["train"] == 5);
  CHECK(r.labels[9] == "truck");
  auto recs = read_records(out / "cifar10_test.tfrecord");
  REQUIRE(recs.size() == 2);
  ImageExample ex = parse_image_example(recs[1], "r");
  CHECK(ex.label == 1);
  Tensor img = image::decode_image_u8({reinterpret_cast<const uint8_t*>(ex.encoded.data()), ex.encoded.size()}, {}, "r");
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
  ConvertOptions fo{.dataset_name = "flowers", .dataset_dir = out / "flowers", .source = src / "photos",
                    .num_shards = 2, .num_validation = 3, .seed = 1};
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
        Tensor t = image::decode_image_u8({reinterpret_cast<const uint8_t*>(e.encoded.data()), e.encoded.size()}, {}, f);
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
  CHECK(read_all(out / "flowers/flowers_validation_00000-of-00002.tfrecord") ==
        read_all(out / "flowers2/flowers_validation_00000-of-00002.tfrecord"));
  // A corrupt image fails the conversion, naming the file.
  write_all(src / "photos/roses/bad.png", "\x89PNG\r\n\x1a\nbroken");
  again.dataset_dir = out / "flowers3";
  expect_error(Code::kCorruption, [&] { convert_dataset(again); }, "bad.png");
  CHECK(fs::is_empty(out / "flowers3"));
}

namespace {
// 10 records: label i, 2x2 image of value 20 * i.
std::string write_counting_dataset(const TempDir& dir) {
  const std::string path = dir / "count.tfrecord";
  TFRecordWriter w(path);
  for (int i = 0; i < 10; ++i) w.write(png_example(i, static_cast<uint8_t>(20 * i)));
  w.commit();
  return path;
}

std::vector<int64_t> all_labels(ReaderOptions o, std::vector<int64_t>* batch_sizes = nullptr) {
  DatasetReader reader(std::move(o));
  std::vector<int64_t> labels;
  Batch b;
  while (reader.next(&b)) {
    if (batch_sizes) batch_sizes->push_back(b.labels.dim(0));
    for (int64_t i = 0; i < b.labels.dim(0); ++i) {
      const int64_t l = b.labels.dtype() == DType::kInt64 ? b.labels.data<int64_t>()[i] : b.labels.data<int32_t>()[i];
      // Image and label stay together.
      CHECK(b.images.data<float>()[i * b.images.num_elements() / b.images.dim(0)] ==
            doctest::Approx(20 * l / 255.0));
      labels.push_back(l);
    }
  }
  return labels;
}
}  // namespace

TEST_CASE("dataset reader batches, shuffles deterministically") {
  TempDir dir("reader");
  const std::string path = write_counting_dataset(dir);
  ReaderOptions o;
  o.files = {path};
  o.batch_size = 4;
  std::vector<int64_t> sizes;
  CHECK(all_labels(o, &sizes) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(sizes == std::vector<int64_t>{4, 4, 2});
  o.drop_remainder = true;
  sizes.clear();
  all_labels(o, &sizes);
  CHECK(sizes == std::vector<int64_t>{4, 4});
  o.drop_remainder = false;
  o.num_epochs = 2;
  o.label_dtype = DType::kInt32;
  CHECK(all_labels(o).size() == 20);
  o.num_epochs = 1;

  o.shuffle_buffer = 5;
  o.seed = 7;
  const std::vector<int64_t> shuffled = all_labels(o);
  CHECK(all_labels(o) == shuffled);
  std::vector<int64_t> sorted = shuffled;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(shuffled != sorted);
  o.num_threads = 3;
  CHECK(all_labels(o) == shuffled);  // same for any thread count
  o.seed = 8;
  CHECK(all_labels(o) != shuffled);

  // Default preprocessing resizes; a callback gets a per-record seed.
  o.height = 3;
  o.width = 5;
  {
    DatasetReader reader(o);
    Batch b;
    REQUIRE(reader.next(&b));
    CHECK(b.images.shape() == Shape{4, 3, 5, 3});
  }
  std::mutex mu;
  std::set<uint64_t> seeds;
  o.preprocess = [&](const Tensor& img, uint64_t seed) {
    std::lock_guard<std::mutex> lock(mu);
    seeds.insert(seed);
    return image::resize_bilinear(img, 3, 5);
  };
  CHECK(all_labels(o).size() == 10);
  CHECK(seeds.size() == 10);
  o.preprocess = [](const Tensor& img, uint64_t) { return img; };  // wrong size
  expect_error(Code::kInvalidArgument, [&] { all_labels(o); }, "count.tfrecord: record");
}

namespace {
// One reader's batches as (label, first pixel value * 255) pairs, and the
// preprocessing seed each label got.
struct Stream {
  std::vector<std::vector<std::pair<int64_t, int>>> batches;
  std::map<int64_t, uint64_t> seeds;
};
Stream read_stream(ReaderOptions o, int64_t max_batches = -1) {
  Stream out;
  std::mutex mu;
  o.preprocess = [&](const Tensor& img, uint64_t seed) {
    std::lock_guard<std::mutex> lock(mu);
    out.seeds[std::lround(img.data<float>()[0] * 255) / 15] = seed;
    return img;
  };
  DatasetReader reader(o);
  Batch b;
  while ((max_batches < 0 || static_cast<int64_t>(out.batches.size()) < max_batches) && reader.next(&b)) {
    std::vector<std::pair<int64_t, int>> rows;
    for (int64_t i = 0; i < b.labels.dim(0); ++i)
      rows.push_back({b.labels.data<int64_t>()[i], static_cast<int>(std::lround(b.images.data<float>()[i * 12] * 255))});
    out.batches.push_back(rows);
  }
  return out;
}
}  // namespace

TEST_CASE("dataset reader shards: disjoint, every record once, N shards of batch b = one reader of batch N*b") {
  TempDir dir("shards");
  // 17 records in two files: label i, a 2x2 image of value 15 * i.
  std::vector<std::string> files = {dir / "a.tfrecord", dir / "b.tfrecord"};
  for (int f = 0; f < 2; ++f) {
    TFRecordWriter w(files[f]);
    for (int i = f * 10; i < (f == 0 ? 10 : 17); ++i) w.write(png_example(i, static_cast<uint8_t>(15 * i)));
    w.commit();
  }
  ReaderOptions o;
  o.files = files;
  o.shuffle_buffer = 5;
  o.seed = 3;
  o.num_threads = 2;
  const int shards = 3, b = 2;
  for (bool drop : {false, true}) {
    CAPTURE(drop);
    o.drop_remainder = drop;
    ReaderOptions one = o;
    one.batch_size = shards * b;
    const Stream whole = read_stream(one);
    // 17 = 2 full global batches of 6 and 5 more.
    REQUIRE(whole.batches.size() == (drop ? 2u : 3u));
    std::vector<Stream> parts;
    for (int r = 0; r < shards; ++r) {
      ReaderOptions s = o;
      s.batch_size = b;
      s.num_shards = shards;
      s.shard_index = r;
      parts.push_back(read_stream(s));
    }
    std::multiset<int64_t> seen;
    for (size_t k = 0; k < whole.batches.size(); ++k) {
      std::vector<std::pair<int64_t, int>> joined;
      for (const Stream& p : parts) {
        if (k >= p.batches.size()) continue;
        joined.insert(joined.end(), p.batches[k].begin(), p.batches[k].end());
        for (const auto& [label, value] : p.batches[k]) {
          CHECK(value == 15 * label);  // image and label stay together
          seen.insert(label);
          CHECK(p.seeds.at(label) == whole.seeds.at(label));  // same augmentation whoever reads it
        }
      }
      CHECK(joined == whole.batches[k]);
    }
    for (const Stream& p : parts) CHECK(p.batches.size() == (drop ? 2u : 3u));  // shard 2's last batch: 1 record
    if (!drop) CHECK(parts[2].batches[2].size() == 1);
    if (!drop) {
      std::multiset<int64_t> all;
      for (int64_t i = 0; i < 17; ++i) all.insert(i);
      CHECK(seen == all);  // disjoint, and every record exactly once
    }
  }
  // Repeated epochs: the shards still split the one stream, across epoch ends.
  o.num_epochs = 0;
  o.drop_remainder = true;
  ReaderOptions one = o;
  one.batch_size = 4;
  const Stream whole = read_stream(one, 10);
  std::vector<Stream> parts;
  for (int r = 0; r < 2; ++r) {
    ReaderOptions s = o;
    s.batch_size = 2;
    s.num_shards = 2;
    s.shard_index = r;
    parts.push_back(read_stream(s, 10));
  }
  for (size_t k = 0; k < 10; ++k) {
    std::vector<std::pair<int64_t, int>> joined = parts[0].batches[k];
    joined.insert(joined.end(), parts[1].batches[k].begin(), parts[1].batches[k].end());
    CHECK(joined == whole.batches[k]);
  }
  o.shard_index = 3;
  o.num_shards = 3;
  expect_error(Code::kInvalidArgument, [&] { DatasetReader r(o); }, "shard 3 of 3");
}

TEST_CASE("dataset reader reports corrupt records and bad options") {
  TempDir dir("reader_bad");
  const std::string path = write_counting_dataset(dir);
  std::string bytes = read_all(path);
  bytes[bytes.size() - 30] ^= 0x40;
  write_all(dir / "bad.tfrecord", bytes);
  ReaderOptions o;
  o.files = {dir / "bad.tfrecord"};
  o.batch_size = 3;
  o.num_threads = 2;
  expect_error(Code::kCorruption, [&] { all_labels(o); }, "bad.tfrecord: record 9");
  // A record that is not an image example.
  {
    TFRecordWriter w(dir / "text.tfrecord");
    w.write(png_example(0, 1));
    w.write(make_image_example({"not an image", "png", 1, 1, 1}));
    w.commit();
  }
  o.files = {dir / "text.tfrecord"};
  expect_error(Code::kInvalidArgument, [&] { all_labels(o); }, "text.tfrecord: record 1");
  o.batch_size = 0;
  expect_error(Code::kInvalidArgument, [&] { DatasetReader r(o); }, "batch_size");
  // Destroying a reader mid-stream joins its threads.
  o.batch_size = 1;
  o.files = {path};
  o.num_epochs = 0;
  DatasetReader forever(o);
  Batch b;
  CHECK(forever.next(&b));
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

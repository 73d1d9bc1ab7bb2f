// modules/datasets: the streaming reader (batches, deterministic shuffles,
// shards across workers, preprocessing seeds, corrupt records, bad options).
#include "modules/datasets/reader.h"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "datasets_testutil.h"
#include "hub/image/resize.h"
#include "modules/datasets/example.h"
#include "modules/datasets/tfrecord.h"
#include "testutil.h"

using namespace hub;
using namespace hub::data;
using namespace hub::testing;
namespace fs = std::filesystem;

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
      CHECK(b.images.data<float>()[i * b.images.num_elements() / b.images.dim(0)] == doctest::Approx(20 * l / 255.0));
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
  expect_error(
      Code::kInvalidArgument, [&] { all_labels(o); }, "count.tfrecord: record");
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
      rows.push_back(
          {b.labels.data<int64_t>()[i], static_cast<int>(std::lround(b.images.data<float>()[i * 12] * 255))});
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
  expect_error(
      Code::kInvalidArgument, [&] { DatasetReader r(o); }, "shard 3 of 3");
}

TEST_CASE("dataset reader reports corrupt records and bad options") {
  TempDir dir("reader_bad");
  const std::string path = write_counting_dataset(dir);
  std::string bytes = read_file(path);
  bytes[bytes.size() - 30] ^= 0x40;
  write_all(dir / "bad.tfrecord", bytes);
  ReaderOptions o;
  o.files = {dir / "bad.tfrecord"};
  o.batch_size = 3;
  o.num_threads = 2;
  expect_error(
      Code::kCorruption, [&] { all_labels(o); }, "bad.tfrecord: record 9");
  // A record that is not an image example.
  {
    TFRecordWriter w(dir / "text.tfrecord");
    w.write(png_example(0, 1));
    w.write(make_image_example({"not an image", "png", 1, 1, 1}));
    w.commit();
  }
  o.files = {dir / "text.tfrecord"};
  expect_error(
      Code::kInvalidArgument, [&] { all_labels(o); }, "text.tfrecord: record 1");
  o.batch_size = 0;
  expect_error(
      Code::kInvalidArgument, [&] { DatasetReader r(o); }, "batch_size");
  // Destroying a reader mid-stream joins its threads.
  o.batch_size = 1;
  o.files = {path};
  o.num_epochs = 0;
  DatasetReader forever(o);
  Batch b;
  CHECK(forever.next(&b));
}

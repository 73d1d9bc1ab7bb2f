// hub's LevelDB table code against LevelDB itself (Debian's libleveldb-dev),
// the library TensorFlow's table code was copied from: LevelDB's Table reads
// every key hub writes, with identical values, and finds each by Seek through
// hub's index; hub reads tables written by LevelDB's TableBuilder; a
// checkpoint index written by hub is, read by LevelDB, the bundle its
// tensors describe.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "hub/core/crc32c.h"
#include "hub/core/fileio.h"
#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/proto/tensor_bundle.pb.h"
#include "hub/interop/tf/table.h"
#include "leveldb_util.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using hub::testing::Entries;
using hub::testing::expect_error;
using hub::testing::TempDir;

namespace {

// Sorted entries: the empty key, shared prefixes, binary keys, long values.
Entries sample_entries(int n) {
  std::map<std::string, std::string> m;
  m[""] = "header";
  for (int i = 0; i < n; ++i) {
    std::string key = "net/block" + std::to_string(i % 13) + "/unit_" + std::to_string(i) + "/weights";
    m[key] = std::string(static_cast<size_t>(i % 97), static_cast<char>(i));
  }
  m[std::string("\x00", 1)] = "zero";
  m[std::string("\xff\xfe", 2)] = std::string(5000, 'v');
  return Entries(m.begin(), m.end());
}

std::string read_range(const std::string& path, int64_t offset, int64_t size) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  std::string out(static_cast<size_t>(size), '\0');
  in.read(out.data(), size);
  REQUIRE(in.gcount() == size);
  return out;
}

}  // namespace

TEST_CASE("leveldb reads hub's tables: every key, identical values, found by Seek") {
  TempDir tmp("leveldb_reads");
  const Entries want = sample_entries(600);
  for (size_t block_size : {size_t{64}, size_t{4096}, size_t{256} * 1024}) {
    for (int interval : {1, 16}) {
      CAPTURE(block_size);
      CAPTURE(interval);
      tf::TableBuilder b({block_size, interval});
      for (const auto& [k, v] : want) b.add(k, v);
      const std::string path = tmp / "hub.table";
      write_file_atomic(path, b.finish());
      CHECK(testing::leveldb_entries(path) == want);
      for (size_t i = 0; i < want.size(); i += 7) {
        CHECK(testing::leveldb_seek(path, want[i].first) == want[i].second);
        CHECK(testing::leveldb_seek(path, want[i].first + std::string(1, '\0') + "absent") == "<absent>");
      }
    }
  }
  // An empty table.
  tf::TableBuilder empty;
  write_file_atomic(tmp / "empty.table", empty.finish());
  CHECK(testing::leveldb_entries(tmp / "empty.table").empty());
}

TEST_CASE("hub reads LevelDB's tables") {
  TempDir tmp("leveldb_writes");
  const Entries want = sample_entries(600);
  for (size_t block_size : {size_t{64}, size_t{4096}}) {
    for (int interval : {1, 4, 16}) {
      CAPTURE(block_size);
      CAPTURE(interval);
      const std::string path = tmp / "leveldb.table";
      testing::leveldb_write(path, want, false, block_size, interval);
      tf::Table t = tf::Table::open(path);
      Entries got;
      t.for_each([&](std::string_view k, std::string_view v) { got.emplace_back(k, v); });
      CHECK(got == want);
      for (const auto& [k, v] : want) CHECK(t.get(k) == v);
      CHECK_FALSE(t.get("net/block0").has_value());
      CHECK_FALSE(t.get(std::string("\xff\xff", 2)).has_value());
    }
  }
}

TEST_CASE("hub refuses LevelDB's Snappy-compressed tables clearly") {
  TempDir tmp("leveldb_snappy");
  Entries compressible;
  for (int i = 0; i < 50; ++i) compressible.emplace_back("key" + std::to_string(100 + i), std::string(2000, 'a'));
  testing::leveldb_write(tmp / "plain.table", compressible, false, 4096, 16);
  testing::leveldb_write(tmp / "snappy.table", compressible, true, 4096, 16);
  // Debian's LevelDB is built with Snappy: the compressed table is smaller.
  REQUIRE(fs::file_size(tmp / "snappy.table") < fs::file_size(tmp / "plain.table") / 2);
  expect_error(
      Code::kUnimplemented, [&] { tf::Table::open(tmp / "snappy.table"); }, "snappy.table': index block at offset");
  expect_error(
      Code::kUnimplemented, [&] { tf::Table::open(tmp / "snappy.table"); }, "Snappy-compressed");
}

TEST_CASE("leveldb reads hub's checkpoint index: the header, then each tensor's entry") {
  TempDir tmp("leveldb_bundle");
  std::map<std::string, Tensor> tensors;
  Tensor w(DType::kFloat32, {3, 3, 3, 32});
  for (int64_t i = 0; i < w.num_elements(); ++i) w.data<float>()[i] = static_cast<float>(i % 17) * 0.125f;
  tensors["MobilenetV1/Conv2d_0/weights"] = w;
  tensors["MobilenetV1/Conv2d_0/BatchNorm/moving_mean"] = Tensor::zeros(DType::kFloat32, {32});
  tensors["global_step"] = Tensor::scalar<int64_t>(7);
  tensors["ids"] = Tensor::from_vector<int32_t>({3}, {4, 5, 6});
  tensors["bytes"] = Tensor::from_vector<uint8_t>({2}, {9, 250});
  tensors["flags"] = Tensor::from_vector<bool>({3}, {false, true, true});
  const std::string prefix = tmp / "model.ckpt-7";
  tf::write_bundle(prefix, tensors, {2, 8});

  const Entries entries = testing::leveldb_entries(prefix + ".index");
  REQUIRE(entries.size() == tensors.size() + 1);
  CHECK(entries[0].first.empty());
  tf::proto::BundleHeaderProto header;
  REQUIRE(header.ParseFromString(entries[0].second));
  CHECK(header.num_shards() == 2);
  CHECK(header.endianness() == tf::proto::BundleHeaderProto::LITTLE);
  CHECK(header.version().producer() == 1);
  // TensorFlow's DataType numbers (types.proto): DT_FLOAT 1, DT_INT32 3,
  // DT_UINT8 4, DT_INT64 9, DT_BOOL 10.
  const std::map<DType, int> tf_number{
      {DType::kFloat32, 1}, {DType::kInt32, 3}, {DType::kUInt8, 4}, {DType::kInt64, 9}, {DType::kBool, 10}};
  auto it = tensors.begin();
  for (size_t i = 1; i < entries.size(); ++i, ++it) {
    const auto& [name, t] = *it;
    CAPTURE(name);
    CHECK(entries[i].first == name);
    tf::proto::BundleEntryProto e;
    REQUIRE(e.ParseFromString(entries[i].second));
    CHECK(e.dtype() == tf_number.at(t.dtype()));
    std::vector<int64_t> dims;
    for (const auto& d : e.shape().dim()) dims.push_back(d.size());
    CHECK(dims == t.shape().dims());
    CHECK(e.size() == static_cast<int64_t>(t.nbytes()));
    CHECK(e.offset() % 8 == 0);
    CHECK(e.slices_size() == 0);
    const std::string data = read_range(tf::bundle_data_path(prefix, e.shard_id(), 2), e.offset(), e.size());
    CHECK(std::memcmp(data.data(), t.raw_data(), t.nbytes()) == 0);
    CHECK(e.crc32c() == crc32c::mask(crc32c::value(data)));
  }
}

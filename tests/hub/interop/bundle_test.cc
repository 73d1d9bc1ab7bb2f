// hub/interop/tf/bundle: TensorFlow checkpoints (tensor bundles). The wire
// bytes of the header and an entry against encodings worked out by hand;
// round trips of every dtype over one and several shards with TF's alignment;
// and bad files, each a clear error naming the file and the tensor: truncated
// index, bad block CRC, bad footer magic, offsets past a shard's end, shard
// count mismatch, data CRC mismatch, a dtype hub lacks, slices, big-endian
// data, a newer version; failed writes leave nothing behind.
#include "hub/interop/tf/bundle.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>

#include "hub/core/crc32c.h"
#include "hub/core/fileio.h"
#include "hub/interop/tf/proto/tensor_bundle.pb.h"
#include "hub/interop/tf/table.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using hub::testing::bytes;
using hub::testing::expect_error;
using hub::testing::le32;
using hub::testing::TempDir;

namespace {

bool same(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// One tensor of each dtype, of several ranks, sizes not multiples of 8.
std::map<std::string, Tensor> sample_tensors() {
  std::map<std::string, Tensor> t;
  Tensor w(DType::kFloat32, {3, 3, 2, 5});
  for (int64_t i = 0; i < w.num_elements(); ++i) w.data<float>()[i] = 0.25f * static_cast<float>(i) - 7.0f;
  t["MobilenetV1/Conv2d_0/weights"] = w;
  t["MobilenetV1/Conv2d_0/BatchNorm/beta"] = Tensor::floats({0.5f, -1.5f, 3.0f, 1e-8f, -0.0f});
  t["global_step"] = Tensor::scalar<int64_t>(12345);
  t["counts"] = Tensor::from_vector<int32_t>({2, 2}, {1, -2, 3, 2147483647});
  t["pixels"] = Tensor::from_vector<uint8_t>({3}, {0, 128, 255});
  t["mask"] = Tensor::from_vector<bool>({2}, {true, false});
  t["empty"] = Tensor::zeros(DType::kFloat32, {0, 4});
  return t;
}

// Rewrites P.index with `edit` applied to the header and to each entry (by
// name), through hub's table builder.
void edit_index(const std::string& prefix, const std::function<void(tf::proto::BundleHeaderProto&)>& header_edit,
                const std::function<void(const std::string&, tf::proto::BundleEntryProto&)>& entry_edit) {
  const std::string path = tf::bundle_index_path(prefix);
  tf::Table old = tf::Table::open(path);
  tf::TableBuilder b;
  old.for_each([&](std::string_view key, std::string_view value) {
    if (key.empty()) {
      tf::proto::BundleHeaderProto h;
      REQUIRE(h.ParseFromString(std::string(value)));
      if (header_edit) header_edit(h);
      b.add(key, h.SerializeAsString());
    } else {
      tf::proto::BundleEntryProto e;
      REQUIRE(e.ParseFromString(std::string(value)));
      if (entry_edit) entry_edit(std::string(key), e);
      b.add(key, e.SerializeAsString());
    }
  });
  write_file_atomic(path, b.finish());
}

}  // namespace

TEST_CASE("bundle: header, entry and data bytes as TensorFlow encodes them") {
  TempDir tmp("bundle_bytes");
  const std::string prefix = tmp / "model.ckpt";
  tf::write_bundle(prefix, {{"v", Tensor::floats({1.0f, 2.0f})}});
  CHECK(files_in(tmp.path) == std::vector<std::string>{"model.ckpt.data-00000-of-00001", "model.ckpt.index"});
  // Data: two little-endian floats.
  const std::string data = bytes({0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40});
  CHECK(read_file_bytes(prefix + ".data-00000-of-00001") == data);
  tf::Table index = tf::Table::open(prefix + ".index");
  // Header: num_shards (field 1) = 1; endianness LITTLE (0, not written);
  // version (field 3, 2 bytes) { producer (field 1) = 1 }.
  CHECK(index.get("") == bytes({0x08, 0x01, 0x1a, 0x02, 0x08, 0x01}));
  // Entry: dtype (1) = DT_FLOAT (1); shape (2, 4 bytes) { dim (2, 2 bytes)
  // { size (1) = 2 } }; shard_id 0 and offset 0 not written; size (5) = 8;
  // crc32c (6, fixed32) = the masked CRC of the data.
  CHECK(index.get("v") == bytes({0x08, 0x01, 0x12, 0x04, 0x12, 0x02, 0x08, 0x02, 0x28, 0x08, 0x35}) +
                              le32(crc32c::mask(crc32c::value(data))));
  std::vector<std::string> keys;
  index.for_each([&](std::string_view k, std::string_view) { keys.emplace_back(k); });
  CHECK(keys == std::vector<std::string>{"", "v"});
}

TEST_CASE("bundle: round trip of every dtype, one or several shards, aligned or packed") {
  const auto tensors = sample_tensors();
  for (int shards : {1, 3}) {
    for (size_t alignment : {size_t{1}, size_t{64}}) {
      CAPTURE(shards);
      CAPTURE(alignment);
      TempDir tmp("bundle_rt");
      const std::string prefix = tmp / "model.ckpt-7";
      tf::write_bundle(prefix, tensors, {shards, alignment});
      std::vector<std::string> want_files{"model.ckpt-7.index"};
      for (int k = 0; k < shards; ++k)
        want_files.push_back("model.ckpt-7.data-0000" + std::to_string(k) + "-of-0000" + std::to_string(shards));
      std::sort(want_files.begin(), want_files.end());
      CHECK(files_in(tmp.path) == want_files);

      tf::BundleReader r(prefix);
      CHECK(r.num_shards() == shards);
      std::vector<std::string> names;
      for (const auto& [name, t] : tensors) names.push_back(name);
      CHECK(r.names() == names);
      for (const auto& [name, t] : tensors) {
        CAPTURE(name);
        CHECK(r.contains(name));
        CHECK(r.spec(name) == TensorSpec{t.dtype(), t.shape()});
        CHECK(same(r.read(name), t));
      }
      CHECK_FALSE(r.contains(""));
      CHECK_FALSE(r.contains("nope"));
      expect_error(
          Code::kNotFound, [&] { r.read("nope"); }, "tensor 'nope' is not in checkpoint");

      // Offsets: aligned ones are multiples of the alignment; each data file
      // ends with its last tensor's padding.
      tf::Table index = tf::Table::open(prefix + ".index");
      std::vector<uint64_t> ends(static_cast<size_t>(shards), 0);
      std::vector<int> per_shard(static_cast<size_t>(shards), 0);
      for (const auto& [name, t] : tensors) {
        tf::proto::BundleEntryProto e;
        REQUIRE(e.ParseFromString(*index.get(name)));
        CHECK(e.offset() % static_cast<int64_t>(alignment) == 0);
        CHECK(e.size() == static_cast<int64_t>(t.nbytes()));
        uint64_t end = static_cast<uint64_t>(e.offset() + e.size());
        end = (end + alignment - 1) / alignment * alignment;
        ends[static_cast<size_t>(e.shard_id())] = std::max(ends[static_cast<size_t>(e.shard_id())], end);
        ++per_shard[static_cast<size_t>(e.shard_id())];
      }
      for (int k = 0; k < shards; ++k) {
        CHECK(fs::file_size(tf::bundle_data_path(prefix, k, shards)) == ends[static_cast<size_t>(k)]);
        CHECK(per_shard[static_cast<size_t>(k)] >= 1);  // spread over every shard
      }
    }
  }
}

TEST_CASE("bundle: a bundle without tensors") {
  TempDir tmp("bundle_empty");
  tf::write_bundle(tmp / "e", {});
  tf::BundleReader r(tmp / "e");
  CHECK(r.names().empty());
  CHECK(fs::file_size(tmp / "e.data-00000-of-00001") == 0);
}

TEST_CASE("bundle: bad files are clear errors naming the file and the tensor") {
  TempDir tmp("bundle_bad");
  const std::string prefix = tmp / "model.ckpt";
  const std::string index_path = prefix + ".index", data_path = prefix + ".data-00000-of-00001";
  tf::write_bundle(prefix, sample_tensors());
  const std::string good_index = read_file_bytes(index_path), good_data = read_file_bytes(data_path);
  const std::string w = "MobilenetV1/Conv2d_0/weights";

  SUBCASE("truncated index") {
    write_file_atomic(index_path, good_index.substr(0, good_index.size() - 10));
    expect_error(
        Code::kCorruption, [&] { tf::BundleReader r(prefix); }, "model.ckpt.index': corrupt table");
  }
  SUBCASE("bad block CRC") {
    std::string bad = good_index;
    bad[20] ^= 0x01;  // inside the one data block
    write_file_atomic(index_path, bad);
    expect_error(
        Code::kCorruption, [&] { tf::BundleReader r(prefix); }, "checksum mismatch");
  }
  SUBCASE("bad footer magic") {
    std::string bad = good_index;
    bad[bad.size() - 8] ^= 0xff;
    write_file_atomic(index_path, bad);
    expect_error(
        Code::kCorruption, [&] { tf::BundleReader r(prefix); }, "bad magic number");
  }
  SUBCASE("offsets past a shard's end") {
    edit_index(prefix, nullptr, [&](const std::string& name, tf::proto::BundleEntryProto& e) {
      if (name == w) e.set_offset(static_cast<int64_t>(good_data.size()) - 8);
    });
    tf::BundleReader r(prefix);
    expect_error(
        Code::kCorruption, [&] { r.read(w); },
        "model.ckpt.data-00000-of-00001': tensor '" + w + "': bytes [" + std::to_string(good_data.size() - 8));
    CHECK(r.read("global_step").item<int64_t>() == 12345);  // the others still read
    // A truncated data file: the last tensors now end past it.
    write_file_atomic(data_path, good_data.substr(0, good_data.size() / 2));
    expect_error(
        Code::kCorruption, [&] { r.read(w); }, "lie past the end of the data file");
  }
  SUBCASE("shard count mismatch") {
    edit_index(
        prefix, [](tf::proto::BundleHeaderProto& h) { h.set_num_shards(2); }, nullptr);
    expect_error(
        Code::kCorruption, [&] { tf::BundleReader r(prefix); },
        "the header names 2 data file(s) but '" + prefix +
            ".data-00000-of-00002' does not exist (found model.ckpt.data-00000-of-00001)");
    edit_index(
        prefix, [](tf::proto::BundleHeaderProto& h) { h.set_num_shards(0); }, nullptr);
    expect_error(
        Code::kCorruption, [&] { tf::BundleReader r(prefix); }, "num_shards 0 is not in [1, 99999]");
  }
  SUBCASE("a missing data file") {
    fs::remove(data_path);
    expect_error(
        Code::kCorruption, [&] { tf::BundleReader r(prefix); }, "(no data files exist)");
  }
  SUBCASE("shard_id beyond num_shards") {
    edit_index(prefix, nullptr, [&](const std::string& name, tf::proto::BundleEntryProto& e) {
      if (name == w) e.set_shard_id(1);
    });
    expect_error(
        Code::kCorruption, [&] { tf::BundleReader(prefix).read(w); }, "shard_id 1 is not below num_shards 1");
  }
  SUBCASE("data CRC mismatch") {
    std::string bad = good_data;
    tf::proto::BundleEntryProto e;
    REQUIRE(e.ParseFromString(*tf::Table::open(index_path).get(w)));
    bad[static_cast<size_t>(e.offset()) + 5] ^= 0x40;
    write_file_atomic(data_path, bad);
    tf::BundleReader r(prefix);
    expect_error(
        Code::kCorruption, [&] { r.read(w); }, "tensor '" + w + "': CRC-32C mismatch");
    CHECK(r.read("pixels").to_vector<uint8_t>() == std::vector<uint8_t>{0, 128, 255});
  }
  SUBCASE("a dtype TensorFlow has and hub lacks") {
    edit_index(prefix, nullptr, [&](const std::string& name, tf::proto::BundleEntryProto& e) {
      if (name == "counts") e.set_dtype(tf::proto::DT_HALF);
      if (name == "pixels") e.set_dtype(static_cast<tf::proto::DataType>(77));
    });
    tf::BundleReader r(prefix);
    CHECK(r.contains("counts"));
    expect_error(
        Code::kInvalidArgument, [&] { r.read("counts"); },
        "model.ckpt.index': tensor 'counts': dtype DT_HALF is not supported by hub");
    expect_error(
        Code::kInvalidArgument, [&] { r.spec("counts"); }, "DT_HALF");
    expect_error(
        Code::kCorruption, [&] { r.read("pixels"); }, "tensor 'pixels': invalid dtype 77");
    CHECK(same(r.read(w), sample_tensors().at(w)));
  }
  SUBCASE("a size that does not match the shape; a negative dimension") {
    edit_index(prefix, nullptr, [&](const std::string& name, tf::proto::BundleEntryProto& e) {
      if (name == w) e.set_size(e.size() - 4);
      if (name == "counts") e.mutable_shape()->mutable_dim(0)->set_size(-1);
    });
    tf::BundleReader r(prefix);
    expect_error(
        Code::kCorruption, [&] { r.read(w); }, "size 356 does not match float32[3,3,2,5] (360 bytes)");
    expect_error(
        Code::kCorruption, [&] { r.read("counts"); }, "tensor 'counts': the shape has dimension -1");
  }
  SUBCASE("a bool byte other than 0 or 1 (with a matching CRC)") {
    tf::proto::BundleEntryProto e;
    REQUIRE(e.ParseFromString(*tf::Table::open(index_path).get("mask")));
    std::string bad = good_data;
    bad[static_cast<size_t>(e.offset())] = 2;
    write_file_atomic(data_path, bad);
    edit_index(prefix, nullptr, [&](const std::string& name, tf::proto::BundleEntryProto& x) {
      if (name == "mask") x.set_crc32c(crc32c::mask(crc32c::value(bad.data() + e.offset(), 2)));
    });
    expect_error(
        Code::kCorruption, [&] { tf::BundleReader(prefix).read("mask"); }, "bool element 0 is 2");
  }
  SUBCASE("partitioned variables (slices) are refused") {
    edit_index(prefix, nullptr, [&](const std::string& name, tf::proto::BundleEntryProto& e) {
      if (name == w) e.add_slices()->add_extent()->set_start(0);
    });
    expect_error(
        Code::kUnimplemented, [&] { tf::BundleReader(prefix).read(w); }, "saved as 1 slices");
  }
  SUBCASE("big-endian data, a newer format, a missing header") {
    edit_index(
        prefix, [](tf::proto::BundleHeaderProto& h) { h.set_endianness(tf::proto::BundleHeaderProto::BIG); }, nullptr);
    expect_error(
        Code::kUnimplemented, [&] { tf::BundleReader r(prefix); }, "big-endian");
    edit_index(
        prefix,
        [](tf::proto::BundleHeaderProto& h) {
          h.set_endianness(tf::proto::BundleHeaderProto::LITTLE);
          h.mutable_version()->set_min_consumer(2);
        },
        nullptr);
    expect_error(
        Code::kFailedPrecondition, [&] { tf::BundleReader r(prefix); }, "min_consumer 2");
    edit_index(
        prefix,
        [](tf::proto::BundleHeaderProto& h) {
          h.mutable_version()->set_min_consumer(0);
          h.mutable_version()->add_bad_consumers(1);
        },
        nullptr);
    expect_error(
        Code::kFailedPrecondition, [&] { tf::BundleReader r(prefix); }, "disallows readers of version 1");
    tf::TableBuilder b;
    b.add("x", "y");
    write_file_atomic(index_path, b.finish());
    expect_error(
        Code::kCorruption, [&] { tf::BundleReader r(prefix); }, "no bundle header");
  }
  SUBCASE("a missing index") {
    expect_error(
        Code::kNotFound, [&] { tf::BundleReader r(tmp / "other"); }, "other.index");
  }
}

TEST_CASE("bundle: failed writes leave nothing behind") {
  TempDir tmp("bundle_write");
  const auto tensors = sample_tensors();
  // Bad arguments: refused before anything is written.
  expect_error(
      Code::kInvalidArgument,
      [&] {
        tf::write_bundle(tmp / "a", {{"", Tensor::floats({1})}});
      },
      "the empty name");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        tf::write_bundle(tmp / "a", {{"x", Tensor()}});
      },
      "'x' is undefined");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        tf::write_bundle(tmp / "a", tensors, {0, 1});
      },
      "num_shards 0");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        tf::write_bundle(tmp / "a", tensors, {1, 0});
      },
      "alignment");
  CHECK(files_in(tmp.path).empty());
  // A folder that does not exist.
  expect_error(
      Code::kIOError, [&] { tf::write_bundle(tmp / "no/such/dir/a", tensors); }, "no/such/dir/a.data-00000-of-00001");
  CHECK(files_in(tmp.path).empty());
  // The index cannot be renamed into place (a folder has its name): the data
  // files already renamed are removed again, and no temporary remains.
  fs::create_directory(tmp / "b.index");
  fs::create_directory(tmp / "b.index/keep");
  expect_error(
      Code::kIOError,
      [&] {
        tf::write_bundle(tmp / "b", tensors, {2, 1});
      },
      "b.index");
  CHECK(files_in(tmp.path) == std::vector<std::string>{"b.index"});
}

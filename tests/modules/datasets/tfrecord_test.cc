// modules/datasets: TFRecord framing (masked CRC-32C), the atomic writer,
// corruption reports, random access, and tf.Example's wire format.
#include "modules/datasets/tfrecord.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <thread>

#include "datasets_testutil.h"
#include "hub/core/crc32c.h"
#include "modules/datasets/example.h"
#include "testutil.h"

using namespace hub;
using namespace hub::data;
using namespace hub::testing;
namespace fs = std::filesystem;

TEST_CASE("TFRecord record bytes match the format") {
  // Masked CRCs computed independently (Python, bitwise CRC-32C).
  const std::string want = std::string("\x03\0\0\0\0\0\0\0", 8) + "\xb0\x99\x49\x0e" + "abc" + "\x6e\x57\xf1\x21";
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
  expect_error(
      Code::kIOError, [&] { TFRecordWriter w(dir / "no/such/dir.tfrecord"); }, "dir.tfrecord");
}

TEST_CASE("TFRecord corruption names file and record") {
  TempDir dir("corrupt");
  const std::string good = encode_tfrecord("first") + encode_tfrecord("second record");
  const std::string path = dir / "c.tfrecord";
  std::string bad = good;
  bad[good.size() - 6] ^= 1;  // data of record 1
  write_all(path, bad);
  expect_error(
      Code::kCorruption, [&] { read_records(path); }, "record 1");
  expect_error(
      Code::kCorruption, [&] { read_records(path); }, "data CRC mismatch");
  bad = good;
  bad[0] ^= 1;  // length of record 0
  write_all(path, bad);
  expect_error(
      Code::kCorruption, [&] { read_records(path); }, "record 0");
  expect_error(
      Code::kCorruption, [&] { read_records(path); }, "length CRC");
  write_all(path, good.substr(0, good.size() - 3));
  expect_error(
      Code::kCorruption, [&] { read_records(path); }, "c.tfrecord: record 1");
  write_all(path, good.substr(0, good.size() - 10));  // header complete, data cut
  expect_error(
      Code::kCorruption, [&] { read_records(path); }, "record 1");
  // A valid header claiming a huge record is refused before allocating.
  std::string huge(8, '\0');
  huge[5] = 1;  // 2^40
  const uint32_t m = crc32c::mask(crc32c::value(huge));
  for (int i = 0; i < 4; ++i) huge.push_back(static_cast<char>(m >> (8 * i)));
  write_all(path, huge + "tiny");
  expect_error(
      Code::kCorruption, [&] { read_records(path); }, "exceeds");
  expect_error(
      Code::kNotFound, [&] { read_records(dir / "missing.tfrecord"); }, "missing.tfrecord");
}

TEST_CASE("TFRecord skip and read_at: offsets, threads, corruption") {
  TempDir dir("random_access");
  const std::string path = dir / "r.tfrecord";
  std::vector<std::string> records;
  for (int i = 0; i < 50; ++i)
    records.push_back(std::string(static_cast<size_t>(i * 37 % 300), static_cast<char>('a' + i % 26)));
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
  std::string bytes = read_file(path);
  bytes[offsets[7] + 12] ^= 1;
  write_all(dir / "bad.tfrecord", bytes);
  TFRecordReader bad(dir / "bad.tfrecord");
  while (bad.skip()) {
  }
  CHECK(bad.index() == 50);
  expect_error(
      Code::kCorruption, [&] { bad.read_at(offsets[7], 7); },
      "bad.tfrecord: record 7 at byte " + std::to_string(offsets[7]) + ": data CRC mismatch");
  expect_error(
      Code::kCorruption, [&] { bad.read_at(offsets[7] + 1, 7); }, "length CRC mismatch");
  expect_error(
      Code::kCorruption, [&] { bad.read_at(fs::file_size(path), 50); }, "end of file");
}

TEST_CASE("tf.Example is wire-compatible with TensorFlow's schema") {
  // Example{features{feature{"a": int64_list{5}}}} encoded by hand:
  //   Int64List  0a 01 05 (packed field 1) ; Feature.int64_list = 3 -> 1a 03 ..
  //   map entry: key 0a 01 'a', value 12 05 ..; Features.feature = 1; Example.features = 1
  const std::string hand = std::string(
      "\x0a\x0c\x0a\x0a\x0a\x01"
      "a"
      "\x12\x05\x1a\x03\x0a\x01\x05",
      14);
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
  CHECK(fb == std::string("\x0a\x0f\x0a\x0d\x0a\x01"
                          "b"
                          "\x12\x08\x12\x06\x0a\x04\x00\x00\x80\x3f",
                          17));
  // BytesList is field 1.
  proto::Example bx;
  (*bx.mutable_features()->mutable_feature())["c"].mutable_bytes_list()->add_value("hi");
  CHECK(bx.SerializeAsString() == std::string("\x0a\x0d\x0a\x0b\x0a\x01"
                                              "c"
                                              "\x12\x06\x0a\x04\x0a\x02hi",
                                              15));
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
  expect_error(
      Code::kCorruption, [] { parse_image_example("\xff\xff\xff", "f.tfrecord: record 3"); }, "f.tfrecord: record 3");
  proto::Example ex;
  (*ex.mutable_features()->mutable_feature())["image/encoded"].mutable_bytes_list()->add_value("x");
  expect_error(
      Code::kCorruption, [&] { parse_image_example(ex.SerializeAsString(), "r"); }, "image/format");
  (*ex.mutable_features()->mutable_feature())["image/format"].mutable_bytes_list()->add_value("png");
  (*ex.mutable_features()->mutable_feature())["image/class/label"].mutable_float_list()->add_value(1);
  expect_error(
      Code::kCorruption, [&] { parse_image_example(ex.SerializeAsString(), "r"); }, "image/class/label");
}

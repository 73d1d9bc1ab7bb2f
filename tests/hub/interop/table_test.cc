// hub/interop/tf/table: the LevelDB table format. A one-entry table byte for
// byte against the layout worked out by hand; round trips over many blocks
// and restart points with random access to every key and to absent ones; and
// damaged tables (each a clear Corruption, or Unimplemented for compression).
// tests/hub/interop/leveldb_test.cc checks the same code against LevelDB.
#include "hub/interop/tf/table.h"

#include <doctest/doctest.h>

#include <map>

#include "hub/core/crc32c.h"
#include "hub/core/fileio.h"
#include "testutil.h"

using namespace hub;
using hub::testing::bytes;
using hub::testing::expect_error;
using hub::testing::le32;
using hub::testing::TempDir;

namespace {

// A block's trailer: compression type, masked CRC-32C of contents + type.
std::string trailer(const std::string& contents, char type = 0) {
  return std::string(1, type) + le32(crc32c::mask(crc32c::value(contents + std::string(1, type))));
}

// Footer for handles given as already-encoded varint bytes.
std::string footer(const std::string& handles) {
  std::string f = handles;
  f.resize(40, '\0');
  return f + bytes({0x57, 0xfb, 0x80, 0x8b, 0x24, 0x75, 0x47, 0xdb});
}

// A table of hand-assembled blocks: one data block `data`, an empty
// meta-index and an index with one entry (`index_key` -> handle of the data
// block, or `handle` when given). Offsets here are below 128, so each varint
// is one byte.
std::string hand_table(const std::string& data, const std::string& index_key, std::string handle = "",
                       char data_type = 0) {
  const std::string meta = le32(0) + le32(1);
  if (handle.empty()) handle = bytes({0, static_cast<int>(data.size())});
  const std::string index = bytes({0, static_cast<int>(index_key.size()), static_cast<int>(handle.size())}) +
                            index_key + handle + le32(0) + le32(1);
  std::string t = data + trailer(data, data_type);
  const int meta_at = static_cast<int>(t.size());
  t += meta + trailer(meta);
  const int index_at = static_cast<int>(t.size());
  t += index + trailer(index);
  return t + footer(bytes({meta_at, static_cast<int>(meta.size()), index_at, static_cast<int>(index.size())}));
}

std::map<std::string, std::string> entries_of(const tf::Table& t) {
  std::map<std::string, std::string> out;
  t.for_each([&](std::string_view k, std::string_view v) { out.emplace(k, v); });
  return out;
}

}  // namespace

TEST_CASE("table: one entry, byte for byte") {
  tf::TableBuilder b;
  b.add("a", "1");
  const std::string got = b.finish();
  // Data block: shared 0, non_shared 1, value 1, "a", "1"; restart [0]; count 1.
  const std::string data = bytes({0, 1, 1, 'a', '1'}) + le32(0) + le32(1);
  // Meta-index: no entries, restart [0], count 1.
  const std::string meta = le32(0) + le32(1);
  // Index: the short successor of "a" ("b") -> handle (offset 0, size 13).
  const std::string index = bytes({0, 1, 2, 'b', 0, 13}) + le32(0) + le32(1);
  std::string want = data + trailer(data);  // [0, 18)
  want += meta + trailer(meta);             // [18, 31)
  want += index + trailer(index);           // [31, 50)
  want += footer(bytes({18, 8, 31, 14}));   // [50, 98)
  REQUIRE(got.size() == 98);
  CHECK(got == want);
  CHECK(data.size() == 13);
  CHECK(index.size() == 14);

  tf::Table t(got, "one");
  CHECK(t.num_blocks() == 1);
  CHECK(t.get("a") == "1");
  CHECK_FALSE(t.get("").has_value());
  CHECK_FALSE(t.get("b").has_value());
  CHECK_FALSE(t.get(std::string("a\0", 2)).has_value());
}

TEST_CASE("table: prefix compression and restart points") {
  // Restart interval 2: "abc" whole, "abd" shares 2, "b" whole (restart).
  tf::TableOptions o;
  o.restart_interval = 2;
  tf::TableBuilder b(o);
  b.add("abc", "x");
  b.add("abd", "yy");
  b.add("b", "");
  const std::string got = b.finish();
  const std::string entries =
      bytes({0, 3, 1, 'a', 'b', 'c', 'x'}) + bytes({2, 1, 2, 'd', 'y', 'y'}) + bytes({0, 1, 0, 'b'});
  CHECK(got.substr(0, entries.size()) == entries);
  CHECK(got.substr(entries.size(), 12) == le32(0) + le32(13) + le32(2));
  tf::Table t(got, "restarts");
  CHECK(t.get("abc") == "x");
  CHECK(t.get("abd") == "yy");
  CHECK(t.get("b") == "");
  CHECK_FALSE(t.get("ab").has_value());
  CHECK_FALSE(t.get("abe").has_value());
  CHECK_FALSE(t.get("c").has_value());
}

TEST_CASE("table: many blocks, random access to every key and to absent ones") {
  std::map<std::string, std::string> want;
  want[""] = "header";
  for (int i = 0; i < 3000; ++i) {
    std::string key = "layer" + std::to_string(i % 37) + "/weights/" + std::to_string(i);
    want[key] = std::string(static_cast<size_t>(i % 50), static_cast<char>('a' + i % 26));
  }
  want[std::string("\xff\xff", 2)] = "top";
  want[std::string("\x00\x01", 2)] = "binary";
  for (size_t block_size : {size_t{64}, size_t{4096}, size_t{256} * 1024}) {
    for (int interval : {1, 3, 16}) {
      CAPTURE(block_size);
      CAPTURE(interval);
      tf::TableBuilder b({block_size, interval});
      for (const auto& [k, v] : want) b.add(k, v);
      tf::Table t(b.finish(), "many");
      if (block_size == 64) CHECK(t.num_blocks() > 100);
      CHECK(entries_of(t) == want);
      for (const auto& [k, v] : want) {
        auto got = t.get(k);
        REQUIRE_MESSAGE(got.has_value(), k);
        CHECK(*got == v);
        CHECK_FALSE(t.get(k + std::string(1, '\0')).has_value());
      }
      CHECK_FALSE(t.get("layer").has_value());
      CHECK_FALSE(t.get("zzz").has_value());
      CHECK_FALSE(t.get(std::string("\xff\xff\xff", 3)).has_value());
    }
  }
}

TEST_CASE("table: empty table; keys must strictly increase") {
  tf::TableBuilder empty;
  tf::Table t(empty.finish(), "empty");
  CHECK(t.num_blocks() == 0);
  CHECK_FALSE(t.get("").has_value());
  CHECK(entries_of(t).empty());

  tf::TableBuilder b;
  b.add("b", "1");
  expect_error(
      Code::kInvalidArgument, [&] { b.add("a", "2"); }, "'a' after 'b'");
  expect_error(
      Code::kInvalidArgument, [&] { b.add("b", "2"); }, "'b' after 'b'");
  b.add("c", "3");  // the builder is still usable
  tf::Table t2(b.finish(), "order");
  CHECK(entries_of(t2) == std::map<std::string, std::string>{{"b", "1"}, {"c", "3"}});
}

TEST_CASE("table: damaged files are Corruption naming the file and the damage") {
  TempDir tmp("table_bad");
  tf::TableBuilder b({64, 4});
  for (int i = 0; i < 40; ++i) b.add("key" + std::to_string(100 + i), "value" + std::to_string(i));
  const std::string good = b.finish();
  const std::string path = tmp / "t.index";
  write_file_atomic(path, good);
  CHECK(entries_of(tf::Table::open(path)).size() == 40);

  SUBCASE("truncated") {
    for (size_t keep : {size_t{0}, size_t{10}, size_t{47}, good.size() / 2, good.size() - 1}) {
      CAPTURE(keep);
      write_file_atomic(path, good.substr(0, keep));
      expect_error(
          Code::kCorruption, [&] { tf::Table::open(path); }, "t.index': corrupt table");
    }
    write_file_atomic(path, good.substr(0, 20));
    expect_error(
        Code::kCorruption, [&] { tf::Table::open(path); }, "shorter than the 48-byte footer");
  }
  SUBCASE("bad magic") {
    std::string bad = good;
    bad[bad.size() - 1] ^= 1;
    write_file_atomic(path, bad);
    expect_error(
        Code::kCorruption, [&] { tf::Table::open(path); }, "bad magic number 0xda4775248b80fb57");
  }
  SUBCASE("a flipped byte in a data block: its read fails the checksum") {
    std::string bad = good;
    bad[3] ^= 0x20;
    write_file_atomic(path, bad);
    tf::Table t = tf::Table::open(path);  // the index is intact
    expect_error(
        Code::kCorruption, [&] { t.for_each([](std::string_view, std::string_view) {}); },
        "data block at offset 0 (size");
    expect_error(
        Code::kCorruption, [&] { t.get("key100"); }, "checksum mismatch");
    CHECK(t.get("key139") == "value39");  // other blocks still read
  }
  SUBCASE("a flipped byte in the index block") {
    std::string bad = good;
    bad[bad.size() - 48 - 8] ^= 1;  // inside the index block's restart array
    write_file_atomic(path, bad);
    expect_error(
        Code::kCorruption, [&] { tf::Table::open(path); }, "index block at offset");
  }
  SUBCASE("a missing file") {
    expect_error(
        Code::kNotFound, [&] { tf::Table::open(tmp / "none.index"); }, "none.index");
  }
}

TEST_CASE("table: structurally bad blocks with valid checksums") {
  const std::string data = bytes({0, 1, 1, 'a', '1'}) + le32(0) + le32(1);
  CHECK(tf::Table(hand_table(data, "b"), "ok").get("a") == "1");
  // The index points past the data blocks.
  expect_error(
      Code::kCorruption,
      [&] {
        tf::Table(hand_table(data, "b", bytes({0, 90})), "far");
      },
      "index entry 'b' points at offset 0 (size 90), past the data blocks (18 bytes)");
  // The index value is not a handle.
  expect_error(
      Code::kCorruption, [&] { tf::Table(hand_table(data, "b", bytes({0x80})), "h"); },
      "index entry 'b' holds no block handle");
  // A restart count larger than the block.
  const std::string many_restarts = bytes({0, 1, 1, 'a', '1'}) + le32(0) + le32(99);
  expect_error(
      Code::kCorruption, [&] { tf::Table(hand_table(many_restarts, "b"), "r").get("a"); }, "claims 99 restart points");
  // An entry sharing more bytes than the previous key has.
  const std::string shares = bytes({0, 1, 1, 'a', '1', 3, 1, 1, 'b', '2'}) + le32(0) + le32(1);
  expect_error(
      Code::kCorruption,
      [&] {
        tf::Table(hand_table(shares, "c", bytes({0, 18})), "s").for_each([](auto, auto) {});
      },
      "shares 3 bytes with a previous key of 1");
  // A value running past the entries.
  const std::string long_value = bytes({0, 1, 9, 'a', '1'}) + le32(0) + le32(1);
  expect_error(
      Code::kCorruption, [&] { tf::Table(hand_table(long_value, "b"), "v").get("a"); }, "run past the entries");
  // Keys out of order.
  const std::string unsorted = bytes({0, 1, 1, 'b', '1', 0, 1, 1, 'a', '2'}) + le32(0) + le32(1);
  expect_error(
      Code::kCorruption,
      [&] {
        tf::Table(hand_table(unsorted, "c", bytes({0, 18})), "u").for_each([](auto, auto) {});
      },
      "key 'a' does not follow 'b'");
  // A key beyond its index entry.
  expect_error(
      Code::kCorruption, [&] { tf::Table(hand_table(data, "0"), "i").for_each([](auto, auto) {}); },
      "key 'a' is past its index entry '0'");
  // Snappy and unknown compression types are refused, not misread.
  expect_error(
      Code::kUnimplemented, [&] { tf::Table(hand_table(data, "b", "", 1), "snappy").get("a"); }, "Snappy-compressed");
  expect_error(
      Code::kUnimplemented, [&] { tf::Table(hand_table(data, "b", "", 7), "seven").get("a"); },
      "unknown compression type 7");
}

// An events-file reader for the tests, independent of what hub writes with:
// its own TFRecord framing check (bitwise CRC-32C, not hub/core/crc32c.h),
// its own protobuf wire-format decoder (not the generated event.pb.h), and
// TensorFlow's field numbers written out here from the upstream schemas
// (tensorflow/core/util/event.proto, tensorflow/core/framework/summary.proto).
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace hub::event_test {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit.
inline uint32_t crc32c(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// TFRecord's masked CRC: rotate right by 15, add 0xa282ead8.
inline uint32_t masked_crc(const std::string& bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

inline uint64_t little_endian(const std::string& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

// The records of a TFRecord file: length (uint64 LE), masked CRC of the
// length bytes, data, masked CRC of the data. Every CRC is checked and the
// file must end exactly after the last record.
inline std::vector<std::string> read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  const std::string file((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::string> out;
  size_t at = 0;
  while (at < file.size()) {
    REQUIRE(file.size() - at >= 12);
    const uint64_t length = little_endian(file, at, 8);
    REQUIRE(static_cast<uint32_t>(little_endian(file, at + 8, 4)) == masked_crc(file.substr(at, 8)));
    REQUIRE(file.size() - at - 12 >= length + 4);
    std::string data = file.substr(at + 12, length);
    REQUIRE(static_cast<uint32_t>(little_endian(file, at + 12 + length, 4)) == masked_crc(data));
    out.push_back(std::move(data));
    at += 12 + length + 4;
  }
  return out;
}

// One decoded protobuf field: a varint, a fixed 32/64-bit value or bytes.
struct Field {
  int wire = 0;
  uint64_t number = 0;  // varint and fixed values
  std::string bytes;    // length-delimited
  double as_double() const {
    double d;
    std::memcpy(&d, &number, 8);
    return d;
  }
  float as_float() const {
    uint32_t u = static_cast<uint32_t>(number);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};
using Message = std::multimap<int, Field>;  // by field number, in order

inline uint64_t read_varint(const std::string& b, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    REQUIRE(at < b.size());
    REQUIRE(shift < 64);
    const unsigned char c = static_cast<unsigned char>(b[at++]);
    v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
  }
}

inline Message decode(const std::string& b) {
  Message m;
  size_t at = 0;
  while (at < b.size()) {
    const uint64_t key = read_varint(b, at);
    Field f;
    f.wire = static_cast<int>(key & 7);
    switch (f.wire) {
      case 0:
        f.number = read_varint(b, at);
        break;
      case 1:
        REQUIRE(b.size() - at >= 8);
        f.number = little_endian(b, at, 8);
        at += 8;
        break;
      case 2: {
        const uint64_t n = read_varint(b, at);
        REQUIRE(b.size() - at >= n);
        f.bytes = b.substr(at, n);
        at += n;
        break;
      }
      case 5:
        REQUIRE(b.size() - at >= 4);
        f.number = little_endian(b, at, 4);
        at += 4;
        break;
      default:
        FAIL("wire type " << f.wire << " in a message");
    }
    m.emplace(static_cast<int>(key >> 3), std::move(f));
  }
  return m;
}

inline const Field* field(const Message& m, int number) {
  auto it = m.find(number);
  return it == m.end() ? nullptr : &it->second;
}

inline double double_field(const Message& m, int number) {
  const Field* f = field(m, number);
  if (!f) return 0.0;  // proto3 default
  REQUIRE(f->wire == 1);
  return f->as_double();
}

// A packed repeated double field.
inline std::vector<double> packed_doubles(const Message& m, int number) {
  std::vector<double> out;
  const Field* f = field(m, number);
  if (!f) return out;
  REQUIRE(f->wire == 2);
  REQUIRE(f->bytes.size() % 8 == 0);
  for (size_t at = 0; at < f->bytes.size(); at += 8) {
    const uint64_t u = little_endian(f->bytes, at, 8);
    double d;
    std::memcpy(&d, &u, 8);
    out.push_back(d);
  }
  return out;
}

// HistogramProto: min 1, max 2, num 3, sum 4, sum_squares 5 (doubles),
// bucket_limit 6, bucket 7 (packed doubles).
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> limits, counts;
};

// Summary.Image: height 1, width 2, colorspace 3 (varints), encoded 4.
struct Image {
  int64_t height = 0, width = 0, colorspace = 0;
  std::string encoded;
};

// Summary.Value: tag 1, simple_value 2 (float), image 4, histo 5.
struct Value {
  std::string tag;
  int kind = 0;  // the oneof's field number: 2, 4 or 5
  float simple_value = 0;
  Image image;
  Histogram histo;
};

// Event: wall_time 1 (double), step 2 (varint), file_version 3,
// graph_def 4 (bytes), summary 5 (Summary: repeated Value value = 1).
struct Event {
  double wall_time = 0;
  int64_t step = 0;
  int what = 0;  // the oneof's field number
  std::string file_version, graph_def;
  std::vector<Value> values;
  const Value* find(const std::string& tag) const {
    for (const Value& v : values)
      if (v.tag == tag) return &v;
    return nullptr;
  }
};

inline Value decode_value(const std::string& bytes) {
  Value v;
  for (const auto& [number, f] : decode(bytes)) {
    if (number == 1) {
      REQUIRE(f.wire == 2);
      v.tag = f.bytes;
    } else if (number == 2) {
      REQUIRE(f.wire == 5);
      v.kind = 2;
      v.simple_value = f.as_float();
    } else if (number == 4) {
      REQUIRE(f.wire == 2);
      v.kind = 4;
      Message im = decode(f.bytes);
      for (const auto& [n, g] : im) {
        if (n >= 1 && n <= 3) REQUIRE(g.wire == 0);
        if (n == 1) v.image.height = static_cast<int64_t>(g.number);
        if (n == 2) v.image.width = static_cast<int64_t>(g.number);
        if (n == 3) v.image.colorspace = static_cast<int64_t>(g.number);
        if (n == 4) v.image.encoded = g.bytes;
      }
    } else if (number == 5) {
      REQUIRE(f.wire == 2);
      v.kind = 5;
      Message h = decode(f.bytes);
      v.histo.min = double_field(h, 1);
      v.histo.max = double_field(h, 2);
      v.histo.num = double_field(h, 3);
      v.histo.sum = double_field(h, 4);
      v.histo.sum_squares = double_field(h, 5);
      v.histo.limits = packed_doubles(h, 6);
      v.histo.counts = packed_doubles(h, 7);
    } else {
      FAIL("unexpected Summary.Value field " << number);
    }
  }
  return v;
}

inline Event decode_event(const std::string& record) {
  Event e;
  for (const auto& [number, f] : decode(record)) {
    switch (number) {
      case 1:
        REQUIRE(f.wire == 1);
        e.wall_time = f.as_double();
        break;
      case 2:
        REQUIRE(f.wire == 0);
        e.step = static_cast<int64_t>(f.number);
        break;
      case 3:
      case 4:
      case 5:
        REQUIRE(f.wire == 2);
        REQUIRE(e.what == 0);  // one of them
        e.what = number;
        if (number == 3) e.file_version = f.bytes;
        if (number == 4) e.graph_def = f.bytes;
        if (number == 5)
          for (const auto& [n, value] : decode(f.bytes)) {
            REQUIRE(n == 1);
            e.values.push_back(decode_value(value.bytes));
          }
        break;
      default:
        FAIL("unexpected Event field " << number);
    }
  }
  return e;
}

// The one events file of `dir` (events.out.tfevents.*), decoded; its first
// event is the "brain.Event:2" version record.
inline std::vector<Event> read_events_dir(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> found;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) found.push_back(e.path());
  REQUIRE(found.size() == 1);
  std::vector<Event> out;
  for (const std::string& r : read_records(found[0].string())) out.push_back(decode_event(r));
  REQUIRE(!out.empty());
  CHECK(out[0].what == 3);
  CHECK(out[0].file_version == "brain.Event:2");
  for (const Event& e : out) CHECK(e.wall_time > 1.5e9);
  return out;
}

}  // namespace hub::event_test

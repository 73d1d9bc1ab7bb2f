// .npy reader/writer: layout per the NumPy format spec, hand-built files in
// both header versions, and clear errors for what we do not support.
#include "hub/tensor/npy.h"

#include <doctest/doctest.h>

#include "testutil.h"

using namespace hub;

namespace {

// A version-1.0 file as numpy.save writes it, built by hand.
std::string npy_v1(const std::string& dict, const std::string& data) {
  std::string header = dict;
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

void expect_error(const std::string& bytes, Code code, const std::string& fragment) {
  try {
    decode_npy(bytes, "in.npy");
    FAIL("no error; expected: " << fragment);
  } catch (const Error& e) {
    CHECK_MESSAGE(e.code() == code, std::string(e.what()));
    CHECK_MESSAGE(std::string(e.what()).find(fragment) != std::string::npos, std::string(e.what()));
    CHECK_MESSAGE(std::string(e.what()).find("in.npy") != std::string::npos, std::string(e.what()));
  }
}

}  // namespace

TEST_CASE("encode_npy writes numpy's version 1.0 layout") {
  std::string b = encode_npy(Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  CHECK(b.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  size_t hlen = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
  CHECK((10 + hlen) % 64 == 0);
  std::string header = b.substr(10, hlen);
  CHECK(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0) == 0);
  CHECK(header.back() == '\n');
  CHECK(b.size() == 10 + hlen + 24);
  // 1-D shapes have the trailing comma of a Python 1-tuple; scalars are ().
  CHECK(encode_npy(Tensor::floats({1})).find("'shape': (1,)") != std::string::npos);
  CHECK(encode_npy(Tensor::scalar<int64_t>(3)).find("'descr': '<i8', 'fortran_order': False, 'shape': ()") !=
        std::string::npos);
}

TEST_CASE("every supported dtype round-trips") {
  std::vector<Tensor> ts = {Tensor::from_vector<float>({2, 2}, {1.5f, -0.0f, 3e38f, 7}),
                            Tensor::from_vector<int32_t>({3}, {-1, 0, 2147483647}),
                            Tensor::from_vector<int64_t>({1, 1, 2}, {-5, 1LL << 50}),
                            Tensor::from_vector<uint8_t>({3}, {0, 128, 255}),
                            Tensor::from_vector<bool>({2}, {true, false}),
                            Tensor::scalar<float>(2.5f),
                            Tensor(DType::kInt32, {0, 3})};
  for (const Tensor& t : ts) CHECK_MESSAGE(identical(decode_npy(encode_npy(t), "x"), t), t.spec_string());
}

TEST_CASE("hand-built numpy files load (v1.0 and v2.0, double quotes, no trailing comma)") {
  std::string data = std::string("\x07\x00\x00\x00\xf9\xff\xff\xff", 8);  // int32 7, -7
  Tensor t = decode_npy(npy_v1("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", data), "a.npy");
  CHECK(t.to_vector<int32_t>() == std::vector<int32_t>{7, -7});
  t = decode_npy(npy_v1("{\"shape\": (1, 2), \"descr\": \"<i4\", \"fortran_order\": False}", data), "a.npy");
  CHECK(t.shape() == Shape{1, 2});
  // Version 2.0: 4-byte header length.
  std::string dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }";
  std::string header = dict;
  header.append((64 - (12 + dict.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8);
  for (int i = 0; i < 4; ++i) v2 += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  v2 += header + "abc";
  t = decode_npy(v2, "v2.npy");
  CHECK(t.to_vector<uint8_t>() == std::vector<uint8_t>{'a', 'b', 'c'});
}

TEST_CASE("unsupported or malformed files are clear errors") {
  std::string f8(8, '\0');
  expect_error(npy_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", f8), Code::kInvalidArgument,
               "fortran_order arrays are not supported");
  expect_error(npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", f8), Code::kInvalidArgument,
               "dtype '<f8' is not supported");
  expect_error(npy_v1("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f8), Code::kInvalidArgument,
               "dtype '>f4' is not supported");
  expect_error(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f8), Code::kCorruption,
               "data is 8 bytes, shape [3] of <f4 needs 12");
  expect_error(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", f8), Code::kCorruption,
               "bad dimension");
  expect_error(npy_v1("{'descr': '<f4', 'shape': (2,), }", f8), Code::kCorruption, "lacks descr");
  expect_error(npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999,99999999999,99999999999), }", f8),
               Code::kCorruption, "too large");
  expect_error("PK\x03\x04 not numpy", Code::kCorruption, "no \\x93NUMPY magic");
  std::string truncated = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", f8);
  truncated[8] = '\x7f';
  truncated[9] = '\x7f';
  expect_error(truncated, Code::kCorruption, "exceeds the file");
  expect_error(npy_v1("{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }", "\x02"), Code::kCorruption,
               "bool element 0 is 2");
}

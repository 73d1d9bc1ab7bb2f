// CIFAR-10's python version: the strict pickle reader (modules/datasets/
// cifar_pickle.h) on batches written byte by byte as Python 2's cPickle wrote
// them, on pickles Python 3 writes (Debian's python3 and python3-numpy, when
// installed), hostile streams, and the python tarball through read_cifar10.
#include "modules/datasets/cifar_pickle.h"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "datasets_testutil.h"
#include "fixtures.h"
#include "hub/core/error.h"
#include "subprocess.h"
#include "testutil.h"

using namespace hub;
using namespace hub::data;
using namespace hub::testing;
using namespace std::string_literals;
namespace fs = std::filesystem;

namespace {

constexpr const char* kPython = "/usr/bin/python3";

// Every pixel and label of `m` is the cifar_batch(b, records) pattern.
void check_batch(const LabeledImages& m, int b, int records) {
  REQUIRE(m.images.shape() == Shape{records, 32, 32, 3});
  REQUIRE(m.labels.size() == static_cast<size_t>(records));
  const uint8_t* px = m.images.data<uint8_t>();
  int wrong = 0;
  for (int r = 0; r < records; ++r) {
    CHECK(m.labels[r] == (b + r) % 10);
    for (int p = 0; p < 1024; ++p)
      for (int c = 0; c < 3; ++c) wrong += px[(r * 1024 + p) * 3 + c] != (b * 7 + r * 3 + c * 5 + p) % 256;
  }
  CHECK(wrong == 0);
}

bool python_numpy_available() {
  if (!fs::exists(kPython)) return false;
  Child c = Child::spawn({kPython, "-c", "import numpy"});
  ChildResult r = c.wait(60, "python3 -c 'import numpy'");
  return r.exited && r.code == 0;
}

// Runs a python3 program with `args`; fails the test unless it exits 0.
std::string run_python(const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> argv{kPython, "-c", program};
  argv.insert(argv.end(), args.begin(), args.end());
  Child c = Child::spawn(argv);
  ChildResult r = c.wait(60, "python3");
  REQUIRE_MESSAGE((r.exited && r.code == 0), "python3 failed: " << r.output);
  return r.output;
}

LabeledImages parse(const std::string& bytes) { return parse_cifar_pickle(bytes, "batch"); }

// `s` with the first `from` replaced by `to` (which must be there).
std::string patched(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("CIFAR pickle: a batch as Python 2's cPickle wrote it") {
  check_batch(parse(cifar_pickle(1, 2)), 1, 2);
  check_batch(parse(cifar_pickle(4, 5)), 4, 5);
  // The reader takes the last of two equal keys, as Python's dict does.
  std::string twice = cifar_pickle(2, 1);
  twice.insert(twice.size() - 2, "U\x06labelsK\x07\x85"s);  // a tuple is not a list
  expect_error(
      Code::kCorruption, [&] { parse(twice); }, "'labels' must be a list of 1 ints");
}

TEST_CASE("CIFAR pickle: agrees with Python 3's pickle and numpy both ways") {
  if (!python_numpy_available()) {
    MESSAGE("skipped: /usr/bin/python3 with numpy (Debian's python3-numpy) is not installed");
    return;
  }
  TempDir dir("cifar_pickle");
  // Python reads the hand-written batch: the same array and labels.
  write_all(dir / "hand", cifar_pickle(3, 2));
  const std::string out = run_python(
      "import pickle, sys\n"
      "d = pickle.load(open(sys.argv[1], 'rb'), encoding='bytes')\n"
      "a = d[b'data']\n"
      "print(a.dtype, a.shape, list(d[b'labels']), d[b'batch_label'].decode(), len(d[b'filenames']))\n"
      "open(sys.argv[2], 'wb').write(a.tobytes())\n",
      {dir / "hand", dir / "hand.raw"});
  CHECK(out == "uint8 (2, 3072) [3, 4] training batch 3 of 5 2\n");
  const std::string batch = cifar_batch(3, 2);
  CHECK(read_file(dir / "hand.raw") == batch.substr(1, 3072) + batch.substr(3074, 3072));

  // Python writes batches at protocol 2 (bytes keys, as the files load with
  // encoding='bytes', and str keys); the reader gets the same pixels.
  run_python(
      "import pickle, sys, numpy\n"
      "b, n = 5, 3\n"
      "data = numpy.array([[(b * 7 + r * 3 + c * 5 + p) % 256 for c in range(3) for p in range(1024)]\n"
      "                    for r in range(n)], dtype=numpy.uint8)\n"
      "labels = [(b + r) % 10 for r in range(n)]\n"
      "for name, d in (('bytes_keys', {b'batch_label': b'x', b'labels': labels, b'data': data}),\n"
      "                ('str_keys', {'data': data, 'labels': labels, 'filenames': ['a.png'] * n})):\n"
      "    open(sys.argv[1] + '/' + name, 'wb').write(pickle.dumps(d, protocol=2))\n",
      {dir.path.string()});
  check_batch(parse(read_file(dir / "bytes_keys")), 5, 3);
  check_batch(parse(read_file(dir / "str_keys")), 5, 3);
}

TEST_CASE("CIFAR pickle: anything outside the subset is refused, naming it") {
  const std::string good = cifar_pickle(1, 1);
  expect_error(
      Code::kInvalidArgument,
      [&] {
        parse(
            "\x80\x02"
            "cos\nsystem\n"
            "U\x02id\x85R."s);
      },
      "global 'os.system'");
  expect_error(
      Code::kInvalidArgument, [&] { parse("\x80\x03}."s); }, "pickle protocol 3");
  expect_error(
      Code::kInvalidArgument, [&] { parse("(dp0\n."); }, "not a protocol-2 pickle");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        parse(patched(good, "U\x02u1",
                      "U\x02"
                      "f4"));
      },
      "numpy dtype 'f4'");
  expect_error(
      Code::kInvalidArgument, [&] { parse(patched(good, "\x89T", "\x88T")); }, "Fortran-order");
  expect_error(
      Code::kInvalidArgument, [&] { parse("\x80\x02G\x3f\xf0\x00\x00\x00\x00\x00\x00."s); }, "opcode 0x47");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        parse(
            "\x80\x02"
            "c_codecs\nencode\n"
            "X\x01\x00\x00\x00"
            "aX\x05\x00\x00\x00"
            "utf-8\x86R."s);
      },
      "_codecs.encode other than");
  // Inconsistent contents.
  expect_error(
      Code::kCorruption, [&] { parse(patched(good, "K\x01K\x01M", "K\x01K\x02M")); },
      "array of 6144 uint8 values carries 3072 bytes");
  expect_error(
      Code::kCorruption,
      [&] {
        parse(patched(good,
                      "(K\x01"
                      "e",
                      "(K\x0a"
                      "e"));
      },
      "label 0 is not an int in 0..9");
  expect_error(
      Code::kCorruption,
      [&] {
        parse(patched(good,
                      "U\x04"
                      "data",
                      "U\x04"
                      "date"));
      },
      "no 'data'");
  expect_error(
      Code::kCorruption, [&] { parse("\x80\x02h\x07."s); }, "never PUT");
  expect_error(
      Code::kCorruption, [&] { parse("\x80\x02T\xff\xff\xff\x7f."s); }, "runs past the end");
  // A list holding itself (through the memo) parses, and is no dict.
  expect_error(
      Code::kCorruption,
      [&] {
        parse(
            "\x80\x02]q\x00h\x00"
            "a."s);
      },
      "holds a list, not a dict");
  // Every truncation fails cleanly.
  int refused = 0;
  for (size_t n = 0; n < good.size(); ++n) {
    try {
      parse(good.substr(0, n));
    } catch (const Error& e) {
      refused += e.code() == Code::kCorruption || e.code() == Code::kInvalidArgument;
    }
  }
  CHECK(refused == static_cast<int>(good.size()));
}

TEST_CASE("CIFAR-10 python tar.gz: the same images as the binary one") {
  TempDir dir("cifar_py");
  std::vector<std::pair<std::string, std::string>> py, bin;
  for (int b : {2, 5, 1, 4, 3}) {
    py.push_back({"cifar-10-batches-py/data_batch_" + std::to_string(b), cifar_pickle(b, 2)});
    bin.push_back({"cifar-10-batches-bin/data_batch_" + std::to_string(b) + ".bin", cifar_batch(b, 2)});
  }
  py.push_back({"cifar-10-batches-py/test_batch", cifar_pickle(9, 3)});
  py.push_back({"cifar-10-batches-py/batches.meta", "not read"});
  bin.push_back({"cifar-10-batches-bin/test_batch.bin", cifar_batch(9, 3)});
  write_tar_gz(dir / "py.tar.gz", py);
  write_tar_gz(dir / "bin.tar.gz", bin);
  for (const char* split : {"train", "test"}) {
    const LabeledImages a = read_cifar10(dir / "py.tar.gz", split);
    const LabeledImages b = read_cifar10(dir / "bin.tar.gz", split);
    CHECK(a.labels == b.labels);
    REQUIRE(a.images.shape() == b.images.shape());
    CHECK(std::memcmp(a.images.data<uint8_t>(), b.images.data<uint8_t>(), a.images.nbytes()) == 0);
  }
  check_batch(read_cifar10(dir / "py.tar.gz", "test"), 9, 3);
  py.erase(py.begin() + 1);  // no data_batch_5
  write_tar_gz(dir / "short.tar.gz", py);
  expect_error(
      Code::kCorruption, [&] { read_cifar10(dir / "short.tar.gz", "train"); }, "missing data_batch_5 ");
  write_tar_gz(dir / "hostile.tar.gz", {{"cifar-10-batches-py/test_batch",
                                         "\x80\x02"
                                         "cos\nsystem\n."s}});
  expect_error(
      Code::kInvalidArgument, [&] { read_cifar10(dir / "hostile.tar.gz", "test"); },
      "hostile.tar.gz: test_batch: global 'os.system'");
}

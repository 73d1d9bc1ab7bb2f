#include "datasets_testutil.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>

#include "fixtures.h"
#include "hub/core/fileio.h"
#include "hub/image/image.h"
#include "modules/datasets/example.h"
#include "modules/datasets/tfrecord.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub::data;

namespace hub::testing {

void write_all(const std::string& path, const std::string& data) { std::ofstream(path, std::ios::binary) << data; }

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

void write_mnist(const std::string& dir, const std::string& prefix, int n, int h, int w) {
  std::string px, labels;
  for (int i = 0; i < n; ++i) {
    for (int p = 0; p < h * w; ++p) px.push_back(static_cast<char>((i * 50 + p) % 256));
    labels.push_back(static_cast<char>(i % 10));
  }
  write_gz(dir + "/" + prefix + "-images-idx3-ubyte.gz",
           idx(3, {static_cast<uint32_t>(n), static_cast<uint32_t>(h), static_cast<uint32_t>(w)}, px));
  write_gz(dir + "/" + prefix + "-labels-idx1-ubyte.gz", idx(1, {static_cast<uint32_t>(n)}, labels));
}

std::string cifar_batch(int b, int records) {
  std::string s;
  for (int r = 0; r < records; ++r) {
    s.push_back(static_cast<char>((b + r) % 10));
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < 1024; ++p) s.push_back(static_cast<char>((b * 7 + r * 3 + c * 5 + p) % 256));
  }
  return s;
}

namespace {
// SHORT_BINSTRING
std::string pickle_str(const std::string& s) {
  std::string out(1, 'U');
  out += static_cast<char>(s.size());
  return out + s;
}
}  // namespace

std::string cifar_pickle(int b, int records) {
  using namespace std::string_literals;
  const std::string batch = cifar_batch(b, records);
  std::string planes, labels;
  for (int r = 0; r < records; ++r) {
    labels += 'K';
    labels += batch[r * 3073];
    planes += batch.substr(r * 3073 + 1, 3072);
  }
  std::string p = "\x80\x02}q\x01(";
  p += pickle_str("batch_label") + "q\x02" + pickle_str("training batch " + std::to_string(b) + " of 5") + "q\x03";
  p += pickle_str("labels") + "q\x04]q\x05(" + labels + "e";
  p += pickle_str("data") + "q\x06";
  p += "cnumpy.core.multiarray\n_reconstruct\nq\x07"
       "cnumpy\nndarray\nq\x08K\x00\x85"s +
       pickle_str("b") + "\x87Rq\x09(K\x01K" + std::string(1, static_cast<char>(records)) + "M\x00\x0c\x86"s;
  p += "cnumpy\ndtype\nq\x0a" + pickle_str("u1") + "K\x00K\x01\x87Rq\x0b(K\x03"s + pickle_str("|") +
       "NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb"s;
  p += std::string("\x89T") + le32(static_cast<uint32_t>(planes.size())) + planes + "tb";
  p += pickle_str("filenames") + "r" + le32(300) + "](";
  for (int r = 0; r < records; ++r) p += pickle_str("img_" + std::to_string(r) + ".png");
  p += "eu.";
  return p;
}

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

std::string png_example(int64_t label, uint8_t value, int h, int w) {
  const auto png = image::encode_png(solid(h, w, 3, value));
  return make_image_example({std::string(png.begin(), png.end()), "png", label, h, w});
}

bool no_temp_files(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) return false;
  return true;
}

}  // namespace hub::testing

// Inputs for the data-set tests (tests/modules/datasets/*_test.cc): IDX and
// CIFAR files, gzip and tar.gz, TFRecord contents and image examples, all
// built here (gzip via zlib, tar.gz via the test tar builder, images via
// hub's PNG encoder).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "hub/tensor/tensor.h"

namespace hub::testing {

void write_all(const std::string& path, const std::string& data);
void write_gz(const std::string& path, const std::string& data);
// An IDX file (ubyte): magic, rank, big-endian dims, then `body`.
std::string idx(uint8_t rank, const std::vector<uint32_t>& dims, const std::string& body);
// n images of h x w: pixel (i, y, x) = (i * 50 + y * w + x) % 256; label i % 10.
void write_mnist(const std::string& dir, const std::string& prefix, int n, int h = 4, int w = 3);
// CIFAR record r of batch b: label (b + r) % 10; plane c, pixel p = (b*7 + r*3 + c*5 + p) % 256.
std::string cifar_batch(int b, int records);
// The same batch in CIFAR-10's python version, written byte by byte as Python
// 2's cPickle wrote those files (protocol 2: str as SHORT_BINSTRING and
// BINSTRING, the array through numpy.core.multiarray._reconstruct and BUILD,
// labels appended in a MARK ... APPENDS run, memo PUTs short and long), a dict
// of batch_label, labels, data and filenames.
std::string cifar_pickle(int b, int records);
// `files` (name, bytes) as a .tar.gz at `path`.
void write_tar_gz(const std::string& path, const std::vector<std::pair<std::string, std::string>>& files);
// Every record of a TFRecord file.
std::vector<std::string> read_records(const std::string& path);
// An h x w x c uint8 image of value v.
Tensor solid(int h, int w, int c, uint8_t v);
// A tf.Example with an h x w PNG of value `value` and `label`.
std::string png_example(int64_t label, uint8_t value, int h = 2, int w = 2);
// True when no "*.tmp.*" file is left anywhere under `dir`.
bool no_temp_files(const std::filesystem::path& dir);

}  // namespace hub::testing

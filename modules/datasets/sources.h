// Readers of data sets in their original distribution formats.
//
//  - IDX (MNIST, Fashion-MNIST), gzipped: magic 0x00 0x00 0x08 <rank>, then
//    rank big-endian uint32 dims, then the unsigned bytes. Only type 0x08
//    (ubyte) is accepted.
//  - CIFAR-10 binary (cifar-10-binary.tar.gz): data_batch_1..5.bin (train) and
//    test_batch.bin (test), each a sequence of 3073-byte records: label byte,
//    then 1024 R, 1024 G, 1024 B bytes of a 32x32 image (row-major planes).
//  - CIFAR-10 python (cifar-10-python.tar.gz, TF-Slim's download):
//    data_batch_1..5 and test_batch, pickles read by cifar_pickle.h.
//  - A folder of images per class: <dir>/<class>/<image>; classes are the
//    sorted subfolder names, images the sorted regular files inside them.
// Malformed input throws kCorruption (or kInvalidArgument for a wrong kind of
// file) naming the file and the offending value; sizes are checked against
// the header before allocating.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/tensor/tensor.h"

namespace hub::data {

// Decompressed contents of a gzip file; refuses more than max_bytes of output
// (kResourceExhausted). A file that is not gzip is read as is.
std::string read_gzip_file(const std::string& path, uint64_t max_bytes = uint64_t{1} << 31);

// uint8 tensor with the dims of the IDX header. max_count (> 0) reads only the
// first max_count items along dim 0 (the rest of the file is not decompressed).
Tensor read_idx_gz(const std::string& path, int64_t max_count = 0);

struct LabeledImages {
  Tensor images;                // uint8 [N, H, W, C]
  std::vector<int64_t> labels;  // N
};

// IDX images [N,28,28] (+ labels [N]) -> images [N,28,28,1]; counts must match.
LabeledImages read_mnist(const std::string& images_gz, const std::string& labels_gz, int64_t max_count = 0);

// Reads the "train" (data_batch_1..5, in order) or "test" (test_batch) split
// of a CIFAR-10 archive, binary (".bin" entries; used when all of the split's
// are present) or python (pickles) -> images [N,32,32,3], labels in 0..9.
// Entries are found by base name wherever they are in the archive.
LabeledImages read_cifar10(const std::string& tar_gz, const std::string& split);

// One CIFAR image as both of its distributions store it (1024 R, then 1024 G,
// then 1024 B bytes of a row-major 32x32 image) -> 32x32x3 HWC bytes.
void cifar_planes_to_hwc(const uint8_t* planes, uint8_t* hwc);

struct ImageFolder {
  std::vector<std::string> classes;  // sorted
  struct Item {
    std::string path;
    int64_t label;
  };
  std::vector<Item> items;  // by class, then by file name
};

// Lists <dir>/<class>/<file> (hidden entries skipped). kNotFound if dir is
// missing; kInvalidArgument if it has no class folder with files.
ImageFolder list_image_folder(const std::string& dir);

}  // namespace hub::data

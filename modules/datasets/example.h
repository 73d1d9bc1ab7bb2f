// tf.Example helpers for image data sets, with the keys TF-Slim's converters
// (datasets/dataset_utils.image_to_tfexample) write and its readers expect:
//   image/encoded      bytes   the PNG or JPEG file bytes
//   image/format       bytes   "png" or "jpeg" ("jpg" is accepted on read)
//   image/class/label  int64   class index
//   image/height       int64
//   image/width        int64
// and, when set, build_imagenet_data.py's further keys: image/colorspace,
// image/channels, image/class/synset, image/class/text, image/filename
// (written only; readers need none of them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "modules/datasets/example.pb.h"

namespace hub::data {

struct ImageExample {
  std::string encoded;
  std::string format;
  int64_t label = 0;
  int64_t height = 0;
  int64_t width = 0;
  // Written when non-empty / non-zero.
  std::string colorspace = {}, synset = {}, text = {}, filename = {};
  int64_t channels = 0;
};

// Serialized tf.Example bytes.
std::string make_image_example(const ImageExample& example);

// Parses serialized tf.Example bytes. Missing keys, wrong feature kinds or
// unparsable bytes throw kCorruption with `where` (e.g. "file.tfrecord: record
// 12") in the message.
ImageExample parse_image_example(std::string_view serialized, std::string_view where);

}  // namespace hub::data

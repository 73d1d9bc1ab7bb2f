#include "modules/datasets/example.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "hub/core/error.h"

namespace hub::data {
namespace {

void set_bytes(proto::Features& f, const std::string& key, std::string_view value) {
  (*f.mutable_feature())[key].mutable_bytes_list()->add_value(std::string(value));
}
void set_int64(proto::Features& f, const std::string& key, int64_t value) {
  (*f.mutable_feature())[key].mutable_int64_list()->add_value(value);
}

[[noreturn]] void bad(std::string_view where, const std::string& what) {
  throw_error(Code::kCorruption, std::string(where) + ": tf.Example " + what);
}

const proto::Feature& feature(const proto::Example& ex, const std::string& key, std::string_view where) {
  const auto& map = ex.features().feature();
  auto it = map.find(key);
  if (it == map.end()) bad(where, "has no feature '" + key + "'");
  return it->second;
}

const std::string& bytes_of(const proto::Example& ex, const std::string& key, std::string_view where) {
  const proto::Feature& f = feature(ex, key, where);
  if (!f.has_bytes_list() || f.bytes_list().value_size() != 1)
    bad(where, "feature '" + key + "' is not a single bytes value");
  return f.bytes_list().value(0);
}

int64_t int64_of(const proto::Example& ex, const std::string& key, std::string_view where) {
  const proto::Feature& f = feature(ex, key, where);
  if (!f.has_int64_list() || f.int64_list().value_size() != 1)
    bad(where, "feature '" + key + "' is not a single int64 value");
  return f.int64_list().value(0);
}

}  // namespace

std::string make_image_example(const ImageExample& example) {
  proto::Example ex;
  proto::Features& f = *ex.mutable_features();
  set_bytes(f, "image/encoded", example.encoded);
  set_bytes(f, "image/format", example.format);
  set_int64(f, "image/class/label", example.label);
  set_int64(f, "image/height", example.height);
  set_int64(f, "image/width", example.width);
  if (!example.colorspace.empty()) set_bytes(f, "image/colorspace", example.colorspace);
  if (example.channels != 0) set_int64(f, "image/channels", example.channels);
  if (!example.synset.empty()) set_bytes(f, "image/class/synset", example.synset);
  if (!example.text.empty()) set_bytes(f, "image/class/text", example.text);
  if (!example.filename.empty()) set_bytes(f, "image/filename", example.filename);
  // Deterministic map order so that identical inputs give identical files.
  std::string out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.SetSerializationDeterministic(true);
    ex.SerializeToCodedStream(&coded);
  }
  return out;
}

ImageExample parse_image_example(std::string_view serialized, std::string_view where) {
  proto::Example ex;
  if (!ex.ParseFromArray(serialized.data(), static_cast<int>(serialized.size())))
    bad(where, "cannot be parsed (" + std::to_string(serialized.size()) + " bytes)");
  ImageExample out;
  out.encoded = bytes_of(ex, "image/encoded", where);
  out.format = bytes_of(ex, "image/format", where);
  out.label = int64_of(ex, "image/class/label", where);
  // Height and width are optional for readers (TF's own writers sometimes omit them).
  const auto& map = ex.features().feature();
  if (map.count("image/height")) out.height = int64_of(ex, "image/height", where);
  if (map.count("image/width")) out.width = int64_of(ex, "image/width", where);
  return out;
}

}  // namespace hub::data

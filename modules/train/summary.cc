#include "modules/train/summary.h"

#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <vector>

#include "hub/core/error.h"
#include "hub/image/image.h"
#include "modules/datasets/tfrecord.h"

namespace hub::train {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// TensorFlow's default bucket limits, computed as it computes them (the
// repeated product, not a power), so the limits are the same doubles.
const std::vector<double>& default_bucket_limits() {
  static const std::vector<double> limits = [] {
    std::vector<double> positive;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) positive.push_back(v);
    positive.push_back(DBL_MAX);
    std::vector<double> out;
    for (auto it = positive.rbegin(); it != positive.rend(); ++it) out.push_back(-*it);
    out.push_back(0.0);
    out.insert(out.end(), positive.begin(), positive.end());
    return out;
  }();
  return limits;
}

}  // namespace

void add_scalar(tensorboard::Summary* summary, const std::string& tag, double value) {
  auto* v = summary->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
}

void add_histogram(tensorboard::Summary* summary, const std::string& tag, const Tensor& values) {
  if (values.dtype() != DType::kFloat32)
    throw_error(Code::kInvalidArgument,
                "summary histogram '" + tag + "' takes float32 values, got " + std::string(dtype_name(values.dtype())));
  const std::vector<double>& limits = default_bucket_limits();
  std::vector<double> counts(limits.size(), 0.0);
  double min = DBL_MAX, max = -DBL_MAX, sum = 0, sum_squares = 0;
  const float* p = values.data<float>();
  const int64_t n = values.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const double v = p[i];
    if (!std::isfinite(v))
      throw_error(Code::kInvalidArgument, "NaN or infinite value " + std::to_string(v) + " in summary histogram '" +
                                              tag + "' (element " + std::to_string(i) + ")");
    counts[std::upper_bound(limits.begin(), limits.end(), v) - limits.begin()] += 1;
    min = std::min(min, v);
    max = std::max(max, v);
    sum += v;
    sum_squares += v * v;
  }
  auto* value = summary->add_value();
  value->set_tag(tag);
  tensorboard::HistogramProto* h = value->mutable_histo();
  h->set_min(min);
  h->set_max(max);
  h->set_num(static_cast<double>(n));
  h->set_sum(sum);
  h->set_sum_squares(sum_squares);
  for (size_t i = 0; i < counts.size();) {
    double limit = limits[i], count = counts[i];
    ++i;
    if (count == 0)  // a run of empty buckets is written as one
      for (; i < counts.size() && counts[i] == 0; ++i) limit = limits[i];
    h->add_bucket_limit(limit);
    h->add_bucket(count);
  }
}

void add_images(tensorboard::Summary* summary, const std::string& tag, const Tensor& images, int max_outputs) {
  const Shape& s = images.shape();
  if (images.dtype() != DType::kFloat32 || s.rank() != 4 || (s[3] != 1 && s[3] != 3 && s[3] != 4))
    throw_error(Code::kInvalidArgument, "summary image '" + tag +
                                            "' takes float32 [N, H, W, C] with C 1, 3 or 4, got " +
                                            TensorSpec{images.dtype(), s}.to_string());
  if (max_outputs < 1)
    throw_error(Code::kInvalidArgument,
                "summary image '" + tag + "': max_outputs must be >= 1, got " + std::to_string(max_outputs));
  const int64_t h = s[1], w = s[2], depth = s[3], pixels = h * w;
  const uint8_t bad_color[4] = {255, 0, 0, 255};
  const int64_t count = std::min<int64_t>(s[0], max_outputs);
  for (int64_t i = 0; i < count; ++i) {
    const float* x = images.data<float>() + i * pixels * depth;
    auto finite = [&](int64_t pixel) {
      for (int64_t c = 0; c < depth; ++c)
        if (!std::isfinite(x[pixel * depth + c])) return false;
      return true;
    };
    float lo = INFINITY, hi = -INFINITY;
    for (int64_t q = 0; q < pixels; ++q)
      if (finite(q))
        for (int64_t c = 0; c < depth; ++c) {
          lo = std::min(lo, x[q * depth + c]);
          hi = std::max(hi, x[q * depth + c]);
        }
    constexpr float kZeroThreshold = 1e-6f;
    float scale = 0, offset = 0;
    if (lo < 0) {
      const float max_abs = std::max(std::abs(lo), std::abs(hi));
      scale = max_abs < kZeroThreshold ? 0.0f : 127.0f / max_abs;
      offset = 128.0f;
    } else {
      scale = hi < kZeroThreshold ? 0.0f : 255.0f / hi;
    }
    Tensor u8(DType::kUInt8, {h, w, depth});
    uint8_t* out = u8.data<uint8_t>();
    for (int64_t q = 0; q < pixels; ++q) {
      const bool ok = finite(q);
      for (int64_t c = 0; c < depth; ++c) {
        const float v = std::clamp(x[q * depth + c] * scale + offset, 0.0f, 255.0f);
        out[q * depth + c] = ok ? static_cast<uint8_t>(v) : bad_color[c];
      }
    }
    std::vector<uint8_t> png = image::encode_png(u8);
    auto* value = summary->add_value();
    value->set_tag(max_outputs > 1 ? tag + "/image/" + std::to_string(i) : tag + "/image");
    tensorboard::Summary::Image* img = value->mutable_image();
    img->set_height(static_cast<int32_t>(h));
    img->set_width(static_cast<int32_t>(w));
    img->set_colorspace(static_cast<int32_t>(depth));
    img->set_encoded_image_string(png.data(), png.size());
  }
}

SummaryWriter::SummaryWriter(const std::string& log_dir) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec) throw_error(Code::kIOError, "cannot create summary folder " + log_dir + ": " + ec.message());
  char host[256] = "localhost";
  ::gethostname(host, sizeof(host) - 1);
  path_ = (std::filesystem::path(log_dir) /
           ("events.out.tfevents." + std::to_string(static_cast<int64_t>(now_seconds())) + "." + host))
              .string();
  file_ = std::fopen(path_.c_str(), "ab");
  if (!file_) throw_error(Code::kIOError, "cannot open summary file " + path_);
  tensorboard::Event version;
  version.set_file_version("brain.Event:2");
  write_event(version);
}

SummaryWriter::~SummaryWriter() {
  if (file_) std::fclose(file_);
}

void SummaryWriter::write(const tensorboard::Summary& summary, int64_t step) {
  tensorboard::Event e;
  e.set_step(step);
  *e.mutable_summary() = summary;
  write_event(e);
}

void SummaryWriter::scalar(const std::string& tag, double value, int64_t step) {
  tensorboard::Summary s;
  add_scalar(&s, tag, value);
  write(s, step);
}

void SummaryWriter::graph(const std::string& graph_def) {
  tensorboard::Event e;
  e.set_graph_def(graph_def);
  write_event(e);
}

void SummaryWriter::write_event(tensorboard::Event& event) {
  event.set_wall_time(now_seconds());
  std::string record = data::encode_tfrecord(event.SerializeAsString());
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0)
    throw_error(Code::kIOError, "cannot write summary file " + path_);
}

}  // namespace hub::train

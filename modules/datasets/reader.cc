#include "modules/datasets/reader.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "hub/core/error.h"
#include "hub/core/random.h"
#include "hub/image/image.h"
#include "hub/image/resize.h"
#include "modules/datasets/example.h"
#include "modules/datasets/tfrecord.h"

namespace hub::data {

DatasetReader::DatasetReader(ReaderOptions options) : options_(std::move(options)) {
  const auto& o = options_;
  auto bad = [](const std::string& what) { throw_error(Code::kInvalidArgument, "DatasetReader: " + what); };
  if (o.files.empty()) bad("no input files");
  if (o.batch_size <= 0) bad("batch_size " + std::to_string(o.batch_size) + " must be > 0");
  if (o.channels != 1 && o.channels != 3) bad("channels " + std::to_string(o.channels) + " (1 or 3)");
  if (o.height < 0 || o.width < 0 || (o.height == 0) != (o.width == 0))
    bad("height/width " + std::to_string(o.height) + "x" + std::to_string(o.width));
  if (o.num_threads < 1) bad("num_threads " + std::to_string(o.num_threads) + " must be >= 1");
  if (o.num_epochs < 0) bad("num_epochs must be >= 0");
  if (o.label_dtype != DType::kInt64 && o.label_dtype != DType::kInt32) bad("label_dtype must be int64 or int32");
  if (o.num_shards < 1 || o.shard_index < 0 || o.shard_index >= o.num_shards)
    bad("shard " + std::to_string(o.shard_index) + " of " + std::to_string(o.num_shards));
  window_ = std::max<int64_t>(2 * o.batch_size, 4 * o.num_threads);
  threads_.emplace_back([this] { produce(); });
  for (int i = 0; i < o.num_threads; ++i) threads_.emplace_back([this] { work(); });
}

DatasetReader::~DatasetReader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void DatasetReader::fail(std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = e;
    stop_ = true;
  }
  cv_.notify_all();
}

void DatasetReader::produce() {
  try {
    std::mt19937_64 rng(mix_seed(options_.seed, 0x5eed5eed));
    std::vector<Pending> buffer;
    const int64_t cap = std::max<int64_t>(1, options_.shuffle_buffer);
    const int64_t global_batch = options_.num_shards * options_.batch_size;
    const int64_t first = options_.shard_index * options_.batch_size;
    // Gives the record at the next stream position to the workers when it is
    // this shard's, waiting while the window is full.
    auto emit = [&](Pending p) {
      std::unique_lock<std::mutex> lock(mu_);
      p.position = positions_;
      const int64_t slot = positions_ % global_batch;
      if (slot < first || slot >= first + options_.batch_size) {
        ++positions_;
        cv_.notify_all();
        return !stop_;
      }
      cv_.wait(lock, [&] { return stop_ || produced_ - consumed_ < window_; });
      if (stop_) return false;
      ++positions_;
      p.seq = produced_++;
      pending_.push_back(std::move(p));
      cv_.notify_all();
      return true;
    };
    // Buffer shuffling as tf.data's shuffle: once the buffer is full, a random
    // element leaves it for each element that enters.
    auto take_random = [&] {
      const size_t j = static_cast<size_t>(rng() % buffer.size());
      Pending p = std::move(buffer[j]);
      buffer[j] = std::move(buffer.back());
      buffer.pop_back();
      return p;
    };
    std::string record;
    for (int64_t epoch = 0; options_.num_epochs == 0 || epoch < options_.num_epochs; ++epoch) {
      int64_t records_this_epoch = 0;
      for (const auto& path : options_.files) {
        auto file = std::make_shared<TFRecordReader>(path);
        while (true) {
          Pending p{0, 0, file, file->offset(), file->index(), std::nullopt};
          if (options_.keep_labels.empty()) {
            if (!file->skip()) break;
          } else {
            if (!file->read(&record)) break;
            const std::string where = path + ": record " + std::to_string(p.index);
            if (label_index(parse_image_example(record, where).label) < 0) continue;
            p.record = std::move(record);
          }
          ++records_this_epoch;
          buffer.push_back(std::move(p));
          if (static_cast<int64_t>(buffer.size()) >= cap && !emit(take_random())) return;
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (stop_) return;
        }
      }
      if (records_this_epoch == 0) break;  // empty files: repeating would spin forever
    }
    while (!buffer.empty())
      if (!emit(take_random())) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      producer_done_ = true;
    }
    cv_.notify_all();
  } catch (...) {
    fail(std::current_exception());
  }
}

DatasetReader::Item DatasetReader::process(const Pending& p) const {
  const std::string where = p.file->path() + ": record " + std::to_string(p.index);
  std::string fetched;
  const std::string& record = p.record ? *p.record : (fetched = p.file->read_at(p.offset, p.index));
  const ImageExample ex = parse_image_example(record, where);
  image::DecodeOptions dopt;
  dopt.channels = options_.channels;
  Tensor img =
      image::decode_image({reinterpret_cast<const uint8_t*>(ex.encoded.data()), ex.encoded.size()}, dopt, where);
  if (options_.preprocess) {
    img = options_.preprocess(img, mix_seed(options_.seed, static_cast<uint64_t>(p.position)));
  } else if (options_.height > 0 && (img.dim(0) != options_.height || img.dim(1) != options_.width)) {
    img = image::resize_bilinear(img, options_.height, options_.width);
  }
  if (img.dtype() != DType::kFloat32 || img.rank() != 3 || img.dim(2) != options_.channels ||
      (options_.height > 0 && (img.dim(0) != options_.height || img.dim(1) != options_.width)))
    throw_error(Code::kInvalidArgument,
                where + ": preprocessed image is " + img.spec_string() + ", expected float32[" +
                    (options_.height > 0 ? std::to_string(options_.height) + "," + std::to_string(options_.width)
                                         : std::string("H,W")) +
                    "," + std::to_string(options_.channels) + "]");
  return {img, options_.keep_labels.empty() ? ex.label : label_index(ex.label)};
}

int64_t DatasetReader::label_index(int64_t label) const {
  const auto& keep = options_.keep_labels;
  auto it = std::find(keep.begin(), keep.end(), label);
  return it == keep.end() ? -1 : static_cast<int64_t>(it - keep.begin());
}

void DatasetReader::work() {
  while (true) {
    Pending p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !pending_.empty() || producer_done_; });
      if (stop_ || pending_.empty()) return;
      p = std::move(pending_.front());
      pending_.pop_front();
    }
    try {
      Item item = process(p);
      {
        std::lock_guard<std::mutex> lock(mu_);
        done_.emplace(p.seq, std::move(item));
      }
      cv_.notify_all();
    } catch (...) {
      fail(std::current_exception());
      return;
    }
  }
}

bool DatasetReader::next(Batch* batch) {
  std::vector<Item> items;
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (static_cast<int64_t>(items.size()) < options_.batch_size) {
      cv_.wait(lock,
               [&] { return error_ || stop_ || done_.count(consumed_) || (producer_done_ && consumed_ == produced_); });
      if (error_) std::rethrow_exception(error_);
      if (stop_) return false;
      auto it = done_.find(consumed_);
      if (it == done_.end()) break;  // exhausted
      items.push_back(std::move(it->second));
      done_.erase(it);
      ++consumed_;
      cv_.notify_all();
    }
  }
  if (items.empty()) return false;
  if (options_.drop_remainder) {
    if (static_cast<int64_t>(items.size()) < options_.batch_size) return false;
    // The other shards' parts of this global batch: complete only if the
    // stream reaches its end.
    const int64_t end = (batches_ + 1) * options_.num_shards * options_.batch_size;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return error_ || stop_ || positions_ >= end || producer_done_; });
    if (error_) std::rethrow_exception(error_);
    if (positions_ < end) return false;
  }
  ++batches_;
  const Shape& s = items[0].image.shape();
  const int64_t n = static_cast<int64_t>(items.size()), per = items[0].image.num_elements();
  const Shape images{n, s[0], s[1], s[2]};
  Allocator* alloc = options_.batch_allocator.get();
  batch->images = alloc ? alloc->allocate_tensor(DType::kFloat32, images) : Tensor(DType::kFloat32, images);
  batch->labels =
      alloc ? alloc->allocate_tensor(options_.label_dtype, Shape{n}) : Tensor(options_.label_dtype, Shape{n});
  float* out = batch->images.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    if (items[i].image.shape() != s)
      throw_error(Code::kInvalidArgument, "DatasetReader: images of different sizes in one batch (" + s.to_string() +
                                              " and " + items[i].image.shape().to_string() +
                                              "); set height and width to resize them");
    std::memcpy(out + i * per, items[i].image.data<float>(), static_cast<size_t>(per) * 4);
    if (options_.label_dtype == DType::kInt64)
      batch->labels.data<int64_t>()[i] = items[i].label;
    else
      batch->labels.data<int32_t>()[i] = static_cast<int32_t>(items[i].label);
  }
  return true;
}

}  // namespace hub::data

// TensorBoard scalar logs: an events file (TFRecord of Event protos) named
// events.out.tfevents.<unix time>.<host> in a log folder, starting with the
// "brain.Event:2" version record, as tf.summary.FileWriter writes it.
// Each scalar is appended and flushed, so TensorBoard sees it while training
// runs. Not thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace hub::train {

class SummaryWriter {
 public:
  // Creates log_dir if needed; throws IOError naming it.
  explicit SummaryWriter(const std::string& log_dir);
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  void scalar(const std::string& tag, double value, int64_t step);
  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& serialized);
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace hub::train

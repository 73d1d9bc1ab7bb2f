// TensorBoard logs: an events file (TFRecord of Event protos, event.proto)
// named events.out.tfevents.<unix time>.<host> in a log folder, starting
// with the "brain.Event:2" version record, as tf.summary.FileWriter writes
// it. What goes in, as TensorFlow's summary ops make it:
//   scalars     Summary.Value.simple_value (float)
//   histograms  TensorFlow's default buckets (tensorflow/core/lib/histogram):
//               limits 0 and +-1e-12 * 1.1^k for k = 0, 1, ... while below
//               1e20, then +-DBL_MAX; a value v counts in the first bucket
//               whose limit is > v; runs of empty buckets are written as one
//               (the run's last limit, count 0), and min, max, num, sum and
//               sum_squares are exact over the values (as doubles)
//   images      tf.summary.image of a float batch: the first max_outputs
//               images, tagged "<tag>/image" (max_outputs 1) or
//               "<tag>/image/<i>", each scaled on its own finite values
//               (all >= 0: x * 255/max; else x * 127/max|x| + 128; a range
//               under 1e-6 maps to 0 or 128), truncated to uint8, non-finite
//               pixels red, written as PNG
//   the graph   Event.graph_def, a serialized GraphDef
//               (hub/interop/tf/display_graph.h)
// Each event is appended and flushed, so TensorBoard sees it while training
// runs. Not thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "hub/tensor/tensor.h"
#include "modules/train/event.pb.h"

namespace hub::train {

// Values added to one Summary (one Event), as tf.summary.merge collects
// them. Each throws InvalidArgument naming the tag: add_histogram for a NaN
// or infinite value (as TensorFlow's HistogramSummary), add_images for a
// tensor that is not float32 [N, H, W, C] with C = 1, 3 or 4 or for
// max_outputs < 1. add_histogram takes float32 tensors of any shape.
void add_scalar(tensorboard::Summary* summary, const std::string& tag, double value);
void add_histogram(tensorboard::Summary* summary, const std::string& tag, const Tensor& values);
void add_images(tensorboard::Summary* summary, const std::string& tag, const Tensor& images, int max_outputs = 3);

class SummaryWriter {
 public:
  // Creates log_dir if needed; throws IOError naming it.
  explicit SummaryWriter(const std::string& log_dir);
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  void write(const tensorboard::Summary& summary, int64_t step);
  // A summary of one scalar.
  void scalar(const std::string& tag, double value, int64_t step);
  // The graph TensorBoard's graph tab draws (a serialized GraphDef).
  void graph(const std::string& graph_def);
  const std::string& path() const { return path_; }

 private:
  void write_event(tensorboard::Event& event);  // sets its wall time
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace hub::train

// Streaming reader of image TFRecord data sets (tf.Example with the keys of
// example.h): reads shards in order, shuffles with a buffer, decodes and
// preprocesses on worker threads, and returns batches
//   images float32 [N, height, width, channels], labels int64 or int32 [N].
//
// Determinism: for a fixed seed the sequence of batches is identical on every
// run and for any num_threads: records are numbered in reading order, the
// shuffle uses one seeded engine on the reading thread, the preprocessing
// callback receives a seed derived from (seed, position in the stream), and
// results are reassembled in order.
//
// Sharding (data parallelism, docs/distributed.md): a reader can be shard r
// of N. The stream above (files in order, shuffled, repeated) is the same for
// every N; it is cut into global batches of N * batch_size records, and shard
// r takes records [r * batch_size, (r + 1) * batch_size) of each. So the
// shards are disjoint, together they are the stream of one reader with batch
// N * batch_size, and a record gets the same preprocessing seed whichever
// shard reads it. The reading thread steps over every record by its header
// (with keep_labels it reads each one, for its label); a shard's own records
// are read by the preprocessing workers, and only those are decoded. With drop_remainder every shard stops before the
// first global batch that is incomplete, so all shards return the same number of batches.
//
// Errors (corrupt records, undecodable images, wrong preprocessed shapes) are
// raised by next() as hub::Error naming the file and record index; the reader
// is then finished. The destructor stops and joins the threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hub/tensor/allocator.h"
#include "hub/tensor/tensor.h"
#include "modules/datasets/tfrecord.h"

namespace hub::data {

// image: float32 [h, w, channels] in [0, 1] as decoded. Must return float32
// [height, width, channels] (the reader's options) and be safe to call
// concurrently. seed: distinct per record, fixed for a fixed reader seed.
using PreprocessFn = std::function<Tensor(const Tensor& image, uint64_t seed)>;

struct ReaderOptions {
  std::vector<std::string> files;  // TFRecord shards, read in this order
  int64_t batch_size = 32;
  int64_t height = 0;          // output size; 0 = keep the decoded size (all images
  int64_t width = 0;           //   must then have the same size)
  int channels = 3;            // 1 or 3
  int num_threads = 1;         // preprocessing workers
  int64_t shuffle_buffer = 0;  // <= 1: no shuffling
  uint64_t seed = 0;
  int64_t num_epochs = 1;             // 0 = repeat forever
  bool drop_remainder = false;        // drop a last batch smaller than batch_size
  int num_shards = 1;                 // sharding (see above): this reader is shard
  int shard_index = 0;                //   shard_index of num_shards
  DType label_dtype = DType::kInt64;  // or kInt32
  // Non-empty: only records whose label is in this list are read, and their
  // label becomes its index in the list (train on a subset of classes).
  std::vector<int64_t> keep_labels;
  // Default (when empty): bilinear resize (TF semantics) to height x width.
  PreprocessFn preprocess;
  // Where batches are allocated (default: plain host memory): a device
  // backend's host allocator (Backend::make_host_allocator) makes their
  // copies to the device asynchronous.
  std::shared_ptr<Allocator> batch_allocator;
};

struct Batch {
  Tensor images;  // float32 [n, height, width, channels]
  Tensor labels;  // label_dtype [n]
};

class DatasetReader {
 public:
  // Checks options (kInvalidArgument) and starts the threads.
  explicit DatasetReader(ReaderOptions options);
  ~DatasetReader();
  DatasetReader(const DatasetReader&) = delete;
  DatasetReader& operator=(const DatasetReader&) = delete;

  // Fills *batch with the next batch; false when the data is exhausted.
  bool next(Batch* batch);

 private:
  struct Item {
    Tensor image;
    int64_t label = 0;
  };
  // A record of this shard, read and processed by a worker.
  struct Pending {
    int64_t seq;       // this shard's record number (reassembly order)
    int64_t position;  // position in the stream of all shards (seed)
    std::shared_ptr<const TFRecordReader> file;
    uint64_t offset = 0;
    int64_t index = 0;                  // record index in the file
    std::optional<std::string> record;  // already read (to filter labels), else read at offset
  };
  void produce();
  void work();
  Item process(const Pending& p) const;
  // Position of label in keep_labels, or -1.
  int64_t label_index(int64_t label) const;
  void fail(std::exception_ptr e);

  ReaderOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> pending_;   // read, not yet processed
  std::map<int64_t, Item> done_;  // processed, not yet consumed
  int64_t produced_ = 0;          // records emitted by the producer
  int64_t positions_ = 0;         // stream positions passed (all shards)
  int64_t batches_ = 0;           // batches returned by next()
  int64_t consumed_ = 0;          // records taken by next()
  int64_t window_ = 0;            // max produced_ - consumed_
  bool producer_done_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace hub::data

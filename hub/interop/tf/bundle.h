// TensorFlow checkpoints in the tensor-bundle ("V2") format, as
// tf.train.Saver and tf.train.Checkpoint write them: a prefix P names
//
//   P.index                      a table (hub/interop/tf/table.h) whose entry
//                                under the empty key is a BundleHeaderProto
//                                (num_shards, endianness, version) and whose
//                                every other key is a tensor name holding a
//                                BundleEntryProto (dtype, shape, shard_id,
//                                offset, size, masked CRC-32C of the bytes)
//   P.data-0000K-of-0000N        N data files (K = 0 .. N-1, five digits
//                                each); a tensor's bytes are [offset,
//                                offset + size) of shard K, row-major,
//                                little-endian
//
// (schemas: hub/interop/tf/proto/tensor_bundle.proto). Element types map to
// hub's: DT_FLOAT <-> float32, DT_INT32 <-> int32, DT_INT64 <-> int64,
// DT_UINT8 <-> uint8, DT_BOOL <-> bool (one byte, 0 or 1).
//
// Thread safety: a BundleReader is immutable once opened; read() may be called
// from several threads at once.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hub/interop/tf/table.h"
#include "hub/tensor/tensor.h"

namespace hub::tf {

// "DT_HALF" for TensorFlow's DataType number 19, "DT_<n>" for numbers it does
// not know.
std::string tf_dtype_name(int tf_dtype);
// hub's dtype for a TensorFlow DataType number, if hub has it.
std::optional<DType> dtype_from_tf(int tf_dtype);
// TensorFlow's DataType number for a hub dtype.
int dtype_to_tf(DType dtype);

// "P.index" and "P.data-0000K-of-0000N" for prefix P.
std::string bundle_index_path(const std::string& prefix);
std::string bundle_data_path(const std::string& prefix, int shard, int num_shards);
// Whether P.index exists (a regular file): P names a bundle.
bool is_bundle_prefix(const std::string& prefix);

// A checkpoint opened for random access by tensor name.
//
// The constructor opens P.index (errors as Table::open) and checks the
// header: it is present and parses; num_shards is in [1, 99999] and every
// data file P.data-0000K-of-0000N exists (a missing one is Corruption naming
// it and the data files that do exist); the data are little-endian (a
// big-endian bundle is Unimplemented); the version admits this reader
// (producer >= 0, min_consumer <= 1, 1 not in bad_consumers; else
// FailedPrecondition). Entries are parsed when a tensor is asked for.
//
// read(name) checks the entry and reads only that tensor's bytes: the entry
// parses; it is not partitioned (an entry with `slices` is Unimplemented);
// its dtype is one hub has (else InvalidArgument naming the tensor, the
// dtype and the file); its shape is fully defined and non-negative; its size
// equals elements x dtype size (computed without overflow); shard_id <
// num_shards; [offset, offset + size) lies within that data file's current
// size; the bytes' CRC-32C matches the entry's; bool bytes are 0 or 1. Damage
// is Corruption naming the tensor and the file. A name the bundle lacks is
// NotFound naming it and the index.
class BundleReader {
 public:
  explicit BundleReader(const std::string& prefix);

  const std::string& prefix() const { return prefix_; }
  int num_shards() const { return num_shards_; }
  // Every tensor name (all keys but the header's), in key order.
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const;
  // The tensor's dtype and shape (the entry checked as for read(), the data
  // not read).
  TensorSpec spec(const std::string& name) const;
  Tensor read(const std::string& name) const;

 private:
  struct Entry;
  Entry entry(const std::string& name) const;

  std::string prefix_;
  Table index_;
  int num_shards_ = 0;
};

struct BundleWriteOptions {
  // Data files to spread the tensors over (in name order, each to the shard
  // with the fewest bytes so far).
  int num_shards = 1;
  // Each tensor's bytes are followed by zeros up to a multiple of this
  // (TensorFlow's BundleWriter::Options::data_alignment; 1 = packed, its
  // default).
  size_t alignment = 1;
};

// Writes the bundle P (P.index and its data files) holding `tensors` under
// their names, as TensorFlow's BundleWriter does: data files first, then the
// index (keys sorted, header first, masked CRCs, uncompressed). Every file
// is written to a temporary sibling and renamed into place, data files
// before the index, so a reader never sees an index whose data is missing.
// The folder of P must exist.
//
// Throws InvalidArgument (before anything is written) for an empty name (the
// header's key), a tensor not on the CPU or undefined, num_shards outside [1,
// 99999] or alignment 0; IOError naming the file when writing fails, after
// removing every file this call created.
void write_bundle(const std::string& prefix, const std::map<std::string, Tensor>& tensors,
                  const BundleWriteOptions& options = {});

// Removes P.index, then every data file P.data-*; best effort (files already
// gone or not removable are left as they are).
void remove_bundle(const std::string& prefix);

}  // namespace hub::tf

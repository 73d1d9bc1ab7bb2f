// hub/interop/tf/checkpoint_state: TensorFlow's `checkpoint` file, as
// TensorFlow 1.x and 2.x write it (absolute or relative paths, timestamps,
// fields this reader does not know), written back in the same text format;
// a damaged file is Corruption naming it and the position.
#include "hub/interop/tf/checkpoint_state.h"

#include <doctest/doctest.h>

#include "hub/core/fileio.h"
#include "testutil.h"

using namespace hub;
using hub::testing::expect_error;
using hub::testing::TempDir;

TEST_CASE("checkpoint state: TensorFlow's files read, hub's written") {
  TempDir tmp("ckpt_state");
  CHECK_FALSE(tf::read_checkpoint_state(tmp.path.string()).has_value());

  // TensorFlow 2.x (tf.train.CheckpointManager) with timestamps.
  write_file_atomic(tmp / "checkpoint",
                    "model_checkpoint_path: \"ckpt-3\"\n"
                    "all_model_checkpoint_paths: \"ckpt-2\"\n"
                    "all_model_checkpoint_paths: \"ckpt-3\"\n"
                    "all_model_checkpoint_timestamps: 1700000000.5\n"
                    "all_model_checkpoint_timestamps: 1700000100.25\n"
                    "last_preserved_timestamp: 1699999999.0\n");
  auto s = tf::read_checkpoint_state(tmp.path.string());
  REQUIRE(s.has_value());
  CHECK(s->model_checkpoint_path == "ckpt-3");
  CHECK(s->all_model_checkpoint_paths == std::vector<std::string>{"ckpt-2", "ckpt-3"});

  // TensorFlow 1.x absolute paths; a field from a future version; escapes.
  write_file_atomic(tmp / "checkpoint",
                    "model_checkpoint_path: \"/tmp/train/model.ckpt-1000\"\n"
                    "some_future_field: 7\n"
                    "all_model_checkpoint_paths: \"/tmp/train/model \\\"a\\\".ckpt-1000\"\n");
  s = tf::read_checkpoint_state(tmp.path.string());
  REQUIRE(s.has_value());
  CHECK(s->model_checkpoint_path == "/tmp/train/model.ckpt-1000");
  CHECK(s->all_model_checkpoint_paths == std::vector<std::string>{"/tmp/train/model \"a\".ckpt-1000"});

  tf::write_checkpoint_state(tmp.path.string(), {"model.ckpt-6", {"model.ckpt-5", "model.ckpt-6"}});
  CHECK(read_file_bytes(tmp / "checkpoint") ==
        "model_checkpoint_path: \"model.ckpt-6\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-5\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-6\"\n");

  write_file_atomic(tmp / "checkpoint", "model_checkpoint_path: \"unterminated\n");
  expect_error(
      Code::kCorruption, [&] { tf::read_checkpoint_state(tmp.path.string()); },
      "checkpoint' is not a TensorFlow checkpoint state (line 1");
}

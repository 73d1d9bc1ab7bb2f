#include "modules/train/summary.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "hub/core/error.h"
#include "modules/datasets/tfrecord.h"
#include "modules/train/event.pb.h"

namespace hub::train {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

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
  version.set_wall_time(now_seconds());
  version.set_file_version("brain.Event:2");
  write_event(version.SerializeAsString());
}

SummaryWriter::~SummaryWriter() {
  if (file_) std::fclose(file_);
}

void SummaryWriter::scalar(const std::string& tag, double value, int64_t step) {
  tensorboard::Event e;
  e.set_wall_time(now_seconds());
  e.set_step(step);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  write_event(e.SerializeAsString());
}

void SummaryWriter::write_event(const std::string& serialized) {
  std::string record = data::encode_tfrecord(serialized);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0)
    throw_error(Code::kIOError, "cannot write summary file " + path_);
}

}  // namespace hub::train

#include "hub/core/cuda.h"

#include <mutex>

#include "hub/core/error.h"

namespace hub::cuda {

void fail(const char* call, cudaError_t status, const char* file, int line) {
  (void)cudaGetLastError();  // a recoverable error must not surface again at the next launch check
  const Code code = status == cudaErrorMemoryAllocation ? Code::kResourceExhausted : Code::kInternal;
  throw_error(code, std::string("CUDA call ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
                        cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

const std::string& unavailable_reason() {
  static const std::string reason = [] {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();  // clear it: nothing else should see it
      return std::string("no CUDA device: ") + cudaGetErrorString(status);
    }
    if (count == 0) return std::string("no CUDA device on this machine");
    return std::string();
  }();
  return reason;
}

void use_device() {
  const std::string& reason = unavailable_reason();
  if (!reason.empty()) throw_error(Code::kUnavailable, reason);
  HUB_CUDA_CHECK(cudaSetDevice(0));
}

cudaStream_t stream() {
  static cudaStream_t s = [] {
    use_device();
    cudaStream_t made = nullptr;
    HUB_CUDA_CHECK(cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking));
    return made;
  }();
  return s;
}

void synchronize() { HUB_CUDA_CHECK(cudaStreamSynchronize(stream())); }

}  // namespace hub::cuda

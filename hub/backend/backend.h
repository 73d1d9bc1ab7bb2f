// Compute backends. Every op has a `reference` kernel (Eigen, simple and
// obviously right); `onednn` is the CPU fast path; `cuda` the optional GPU one.
// Which kernel runs a node is decided in one place: select_kernel() in
// hub/ops/registry.h — the preferred backend if it has a kernel that supports
// the node's dtypes/attributes, else reference.
#pragma once

#include <string>
#include <string_view>

namespace hub {

enum class Backend { kReference = 0, kOneDNN = 1, kCUDA = 2 };

std::string_view backend_name(Backend backend);
// "reference" | "onednn" | "cuda"; throws InvalidArgument otherwise.
Backend parse_backend(std::string_view name);
// $HUB_BACKEND if set, else onednn.
Backend default_backend();

}  // namespace hub

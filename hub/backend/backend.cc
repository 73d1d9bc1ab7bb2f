#include "hub/backend/backend.h"

#include <cstdlib>

#include "hub/core/error.h"

namespace hub {

std::string_view backend_name(Backend backend) {
  switch (backend) {
    case Backend::kReference: return "reference";
    case Backend::kOneDNN: return "onednn";
    case Backend::kCUDA: return "cuda";
  }
  return "?";
}

Backend parse_backend(std::string_view name) {
  for (Backend b : {Backend::kReference, Backend::kOneDNN, Backend::kCUDA})
    if (backend_name(b) == name) return b;
  throw_error(Code::kInvalidArgument,
              "unknown backend '" + std::string(name) + "' (expected reference, onednn or cuda)");
}

Backend default_backend() {
  if (const char* env = std::getenv("HUB_BACKEND")) return parse_backend(env);
  return Backend::kOneDNN;
}

}  // namespace hub

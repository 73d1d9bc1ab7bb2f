// Fuzzes how the registry client reads a registry's answers: the bounded
// JSON parser, then version selection (latest and pinned) on the document.
#include "fuzz_util.h"
#include "hub/core/error.h"
#include "hub/core/json.h"
#include "registry/client/client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json doc;
  try {
    doc = hub::parse_json(hub::fuzz::bytes(data, size), "answer");
  } catch (const hub::Error&) {
    return 0;
  }
  for (const char* handle : {"acme/net@latest", "acme/net@1.0.0"}) {
    try {
      hub::registry::pick_version("http://registry.invalid", handle, doc);
    } catch (const hub::Error&) {
    }
  }
  (void)doc.dump();  // bounded depth: printing it is safe
  return 0;
}

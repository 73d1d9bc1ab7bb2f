#include "registry/client/handle_hook.h"

#include "hub/core/error.h"
#include "hub/resolver/resolver.h"
#include "registry/client/client.h"
#include "registry/names.h"

namespace hub::registry {

void install_registry_handle_hook(std::string registry_url) {
  resolver::add_handle_hook(
      "registry", [registry_url](const std::string& handle) -> std::optional<resolver::HandleSource> {
        if (handle.find('@') == std::string::npos || handle.find("://") != std::string::npos) return std::nullopt;
        try {
          parse_handle(handle);
        } catch (const Error&) {
          return std::nullopt;  // not shaped like a registry handle: not ours
        }
        ResolvedModule m = resolve_registry_handle(registry_url, handle);
        return resolver::HandleSource{m.download_url, m.sha256};
      });
}

namespace {
const bool kInstalled = [] {
  install_registry_handle_hook();
  return true;
}();
}  // namespace

}  // namespace hub::registry

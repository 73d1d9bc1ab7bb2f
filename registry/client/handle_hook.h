// Plugs registry handles into hub::resolver::resolve().
//
// install_registry_handle_hook() adds the resolver hook "registry", which owns
// handles of the form "publisher/name@X.Y.Z" and "publisher/name@latest" (an
// '@' is required, so relative paths like "models/net" are never taken) and
// maps them with resolve_registry_handle() to the archive URL and its SHA-256;
// the resolver then downloads, verifies, unpacks and caches as for any URL.
// The registry is `registry_url`, or $HUB_REGISTRY at resolve time when empty.
// libhub installs the hook with the default ($HUB_REGISTRY) at load time, so
// `hub fetch acme/net@1.0.0` works; call again to point it elsewhere.
// Note: the resolver caches under the original handle, so "@latest" stays
// what it first resolved to until the cache entry is removed.
#pragma once

#include <string>

namespace hub::registry {

void install_registry_handle_hook(std::string registry_url = "");

}  // namespace hub::registry

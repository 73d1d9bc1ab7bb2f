// `hub fetch HANDLE [--sha256 HEX] [--quiet]`: resolves a handle (downloading
// and caching it if needed) and prints the local module directory.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "hub/resolver/resolver.h"

namespace hub::cli {
namespace {
struct FetchArgs {
  std::string handle;
  std::string sha256;
  bool quiet = false;
  bool offline = false;
};

RunFn setup_fetch(CLI::App& app) {
  auto args = std::make_shared<FetchArgs>();
  app.add_option("handle", args->handle,
                 "Module handle: directory, archive path, file://, http(s):// URL "
                 "(optionally with #sha256=HEX), or registry name")
      ->required();
  app.add_option("--sha256", args->sha256, "Expected SHA-256 of the archive (hex)");
  app.add_flag("-q,--quiet", args->quiet, "No progress display");
  app.add_flag("--offline", args->offline, "Use only the cache (as HUB_OFFLINE=1)");
  return [args] {
    resolver::ResolveOptions opts;
    opts.sha256 = args->sha256;
    opts.quiet = args->quiet;
    if (args->offline) opts.offline = true;
    std::filesystem::path dir = resolver::resolve(args->handle, opts);
    std::printf("%s\n", dir.c_str());
    return 0;
  };
}
}  // namespace
HUB_REGISTER_COMMAND(fetch, "Download (or find in the cache) a module and print its directory",
                     setup_fetch);
}  // namespace hub::cli

// `hub fetch MODULE [--sha256 HEX] [--registry URL] [--offline] [--quiet]
// [--json]`: resolves a module handle (downloading and caching it if needed)
// and prints the local module directory. A registry name also says, on
// stderr, which version it resolved to.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"

namespace hub::cli {
namespace {
struct FetchArgs {
  ModuleArgs module;
  std::string sha256;
  bool quiet = false;
  bool json = false;
};

RunFn setup_fetch(CLI::App& app) {
  auto args = std::make_shared<FetchArgs>();
  add_module_args(app, args->module, "The module to fetch");
  app.add_option("--sha256", args->sha256, "Expected SHA-256 of the archive (64 hex digits)");
  app.add_flag("-q,--quiet", args->quiet, "No progress display and no note of the resolved version");
  app.add_flag("--json", args->json,
               "Print JSON: dir, handle, resolved (publisher/name@version for a registry name), registry, "
               "sha256, cached, offline");
  return [args] {
    resolver::Resolution r = make_resolver(args->module, args->quiet).resolve(args->module.module, args->sha256);
    if (args->json) {
      print_json({{"dir", r.dir.string()},
                  {"handle", r.handle},
                  {"resolved", r.resolved},
                  {"registry", r.registry},
                  {"sha256", r.sha256},
                  {"cached", r.cached},
                  {"offline", r.offline}});
      return 0;
    }
    if (!args->quiet) note_resolution(r);
    std::printf("%s\n", r.dir.c_str());
    return 0;
  };
}
}  // namespace
HUB_REGISTER_COMMAND(fetch, "Download (or find in the cache) a module and print its directory", setup_fetch);
}  // namespace hub::cli

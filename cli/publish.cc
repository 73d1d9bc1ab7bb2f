// `hub publish MODULE_DIR|ARCHIVE --registry URL --name publisher/name --version X.Y.Z`.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/command.h"
#include "hub/core/json.h"
#include "hub/core/text.h"
#include "registry/client/client.h"

namespace hub::cli {
namespace {

struct PublishFlags {
  std::string source, registry, name, version, token, description;
  bool json = false;
};

RunFn setup_publish(CLI::App& app) {
  auto f = std::make_shared<PublishFlags>();
  app.add_option("MODULE,--module", f->source, "Module directory (packed to .tar.gz) or archive")->required();
  add_registry_flag(app, f->registry);
  app.add_option("--name", f->name, "publisher/name")->required();
  app.add_option("--version", f->version, "Semantic version X.Y.Z")->required();
  app.add_option("--token", f->token, "Publish token (default $HUB_TOKEN)");
  app.add_option("--description", f->description, "One-line description");
  app.add_flag("--json", f->json, "Print the registry's JSON for the new version");
  return [f]() -> int {
    registry::PublishOptions opt;
    opt.registry_url = registry_url(f->registry);
    opt.module = f->name;
    opt.version = f->version;
    opt.token = f->token;
    if (opt.token.empty())
      if (const char* t = std::getenv("HUB_TOKEN")) opt.token = t;
    opt.description = f->description;
    opt.progress = ::isatty(STDERR_FILENO);
    nlohmann::json doc = registry::publish_module(f->source, opt);
    if (f->json) {
      print_json(doc);
      return 0;
    }
    const std::string handle = printable(json_string(doc, "handle"));
    std::fprintf(stderr, "published %s (%llu bytes, sha256 %s)\n", handle.c_str(),
                 static_cast<unsigned long long>(json_uint(doc, "size")),
                 printable(json_string(doc, "sha256")).c_str());
    std::printf("%s\n", handle.c_str());
    return 0;
  };
}

}  // namespace
HUB_REGISTER_COMMAND(publish, "Publish a module to a registry", setup_publish);
}  // namespace hub::cli

// `hub publish MODULE_DIR|ARCHIVE --registry URL --name publisher/name --version X.Y.Z`.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/command.h"
#include "registry/client/client.h"

namespace hub::cli {
namespace {

struct PublishFlags {
  std::string source, registry, name, version, token, description;
};

RunFn setup_publish(CLI::App& app) {
  auto f = std::make_shared<PublishFlags>();
  app.add_option("module", f->source, "Module directory (packed to .tar.gz) or archive")->required();
  app.add_option("--registry", f->registry, "Registry URL (default $HUB_REGISTRY)");
  app.add_option("--name", f->name, "publisher/name")->required();
  app.add_option("--version", f->version, "Semantic version X.Y.Z")->required();
  app.add_option("--token", f->token, "Publish token (default $HUB_TOKEN)");
  app.add_option("--description", f->description, "One-line description");
  return [f]() -> int {
    registry::PublishOptions opt;
    opt.registry_url = f->registry;
    opt.module = f->name;
    opt.version = f->version;
    opt.token = f->token;
    if (opt.token.empty())
      if (const char* t = std::getenv("HUB_TOKEN")) opt.token = t;
    opt.description = f->description;
    opt.progress = ::isatty(STDERR_FILENO);
    nlohmann::json doc = registry::publish_module(f->source, opt);
    std::fprintf(stderr, "published %s (%llu bytes, sha256 %s)\n", doc.value("handle", "").c_str(),
                 static_cast<unsigned long long>(doc.value("size", uint64_t{0})), doc.value("sha256", "").c_str());
    std::printf("%s\n", doc.value("handle", "").c_str());
    return 0;
  };
}

}  // namespace
HUB_REGISTER_COMMAND(publish, "Publish a module to a registry", setup_publish);
}  // namespace hub::cli

// `hub search QUERY` and `hub versions publisher/name`: read a registry.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "registry/client/client.h"

namespace hub::cli {
namespace {

struct SearchFlags {
  std::string arg, registry;
  bool json = false;
};

RunFn setup_search(CLI::App& app) {
  auto f = std::make_shared<SearchFlags>();
  app.add_option("query", f->arg, "Text to find in module names and descriptions")->required();
  app.add_option("--registry", f->registry, "Registry URL (default $HUB_REGISTRY)");
  app.add_flag("--json", f->json, "Print the registry's JSON");
  return [f]() -> int {
    nlohmann::json doc = registry::search_modules(f->registry, f->arg);
    if (f->json) {
      std::printf("%s\n", doc.dump(2).c_str());
      return 0;
    }
    for (const auto& m : doc.value("modules", nlohmann::json::array()))
      std::printf("%-40s %-12s %s\n", m.value("module", "").c_str(), m.value("latest", "").c_str(),
                  m.value("description", "").c_str());
    return 0;
  };
}

RunFn setup_versions(CLI::App& app) {
  auto f = std::make_shared<SearchFlags>();
  app.add_option("module", f->arg, "publisher/name")->required();
  app.add_option("--registry", f->registry, "Registry URL (default $HUB_REGISTRY)");
  app.add_flag("--json", f->json, "Print the registry's JSON");
  return [f]() -> int {
    nlohmann::json doc = registry::list_versions(f->registry, f->arg);
    if (f->json) {
      std::printf("%s\n", doc.dump(2).c_str());
      return 0;
    }
    for (const auto& v : doc.value("versions", nlohmann::json::array()))
      std::printf("%-12s %10llu  %s  %s  %s\n", v.value("version", "").c_str(),
                  static_cast<unsigned long long>(v.value("size", uint64_t{0})), v.value("sha256", "").c_str(),
                  v.value("published_at", "").c_str(), v.value("description", "").c_str());
    return 0;
  };
}

}  // namespace
HUB_REGISTER_COMMAND(search, "Search a registry for modules", setup_search);
HUB_REGISTER_COMMAND(versions, "List the versions of a registry module", setup_versions);
}  // namespace hub::cli

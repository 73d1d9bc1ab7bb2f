// `hub search QUERY` and `hub versions publisher/name`: read a registry.
#include <cstdio>
#include <functional>
#include <memory>

#include "cli/command.h"
#include "registry/client/client.h"

namespace hub::cli {
namespace {

struct SearchFlags {
  std::string arg, registry;
  bool json = false;
};

using Json = nlohmann::json;

// A read-only registry command: one positional argument, --registry and
// --json. Prints the registry's JSON with --json, else row() of each element
// of the document's `list` array.
RunFn registry_query(CLI::App& app, const char* arg_name, const char* arg_help,
                     std::function<Json(const std::string& registry, const std::string& arg)> query,
                     const char* list, std::function<void(const Json&)> row) {
  auto f = std::make_shared<SearchFlags>();
  app.add_option(arg_name, f->arg, arg_help)->required();
  app.add_option("--registry", f->registry, "Registry URL (default $HUB_REGISTRY)");
  app.add_flag("--json", f->json, "Print the registry's JSON");
  return [f, query, list, row]() -> int {
    Json doc = query(f->registry, f->arg);
    if (f->json) {
      std::printf("%s\n", doc.dump(2).c_str());
      return 0;
    }
    for (const auto& item : doc.value(list, Json::array())) row(item);
    return 0;
  };
}

RunFn setup_search(CLI::App& app) {
  return registry_query(app, "query", "Text to find in module names and descriptions", registry::search_modules,
                        "modules", [](const Json& m) {
                          std::printf("%-40s %-12s %s\n", m.value("module", "").c_str(),
                                      m.value("latest", "").c_str(), m.value("description", "").c_str());
                        });
}

RunFn setup_versions(CLI::App& app) {
  return registry_query(app, "module", "publisher/name", registry::list_versions, "versions", [](const Json& v) {
    std::printf("%-12s %10llu  %s  %s  %s\n", v.value("version", "").c_str(),
                static_cast<unsigned long long>(v.value("size", uint64_t{0})), v.value("sha256", "").c_str(),
                v.value("published_at", "").c_str(), v.value("description", "").c_str());
  });
}

}  // namespace
HUB_REGISTER_COMMAND(search, "Search a registry for modules", setup_search);
HUB_REGISTER_COMMAND(versions, "List the versions of a registry module", setup_versions);
}  // namespace hub::cli

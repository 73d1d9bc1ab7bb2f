// `hub search QUERY` and `hub versions publisher/name`: read a registry.
#include <cstdio>
#include <functional>
#include <memory>

#include "cli/command.h"
#include "hub/core/json.h"
#include "hub/core/text.h"
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
                     std::function<Json(const std::string& registry, const std::string& arg)> query, const char* list,
                     std::function<void(const Json&)> row) {
  auto f = std::make_shared<SearchFlags>();
  app.add_option(arg_name, f->arg, arg_help)->required();
  add_registry_flag(app, f->registry);
  app.add_flag("--json", f->json, "Print the registry's JSON");
  return [f, query, list, row]() -> int {
    Json doc = query(registry_url(f->registry), f->arg);
    if (f->json) {
      print_json(doc);
      return 0;
    }
    if (doc.contains(list) && doc[list].is_array())
      for (const auto& item : doc[list]) row(item);
    return 0;
  };
}

RunFn setup_search(CLI::App& app) {
  return registry_query(app, "QUERY", "Text to find in module names and descriptions", registry::search_modules,
                        "modules", [](const Json& m) {
                          std::printf("%-40s %-12s %s\n", printable(json_string(m, "module")).c_str(),
                                      printable(json_string(m, "latest")).c_str(),
                                      printable(json_string(m, "description")).c_str());
                        });
}

RunFn setup_versions(CLI::App& app) {
  return registry_query(
      app, "MODULE,--module", "A registry module: publisher/name",
      [](const std::string& url, const std::string& m) { return registry::list_versions(url, m); }, "versions",
      [](const Json& v) {
        std::printf("%-12s %10llu  %s  %s  %s\n", printable(json_string(v, "version")).c_str(),
                    static_cast<unsigned long long>(json_uint(v, "size")), printable(json_string(v, "sha256")).c_str(),
                    printable(json_string(v, "published_at")).c_str(),
                    printable(json_string(v, "description")).c_str());
      });
}

}  // namespace
HUB_REGISTER_COMMAND(search, "Search a registry for modules", setup_search);
HUB_REGISTER_COMMAND(versions, "List the versions of a registry module", setup_versions);
}  // namespace hub::cli

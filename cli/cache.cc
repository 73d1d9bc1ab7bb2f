// `hub cache list|rm HANDLE|clear|verify|dir`: inspect and manage the module cache.
#include "hub/resolver/cache.h"

#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "hub/core/error.h"
#include "hub/core/text.h"

namespace hub::cli {
namespace {

std::string human(uint64_t bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

nlohmann::json entry_json(const resolver::CacheEntry& e) {
  return {{"key", e.key},
          {"handle", e.handle},
          {"registry", e.registry},
          {"version", e.version},
          {"url", e.url},
          {"sha256", e.sha256},
          {"size", e.size},
          {"unpacked_bytes", e.unpacked_bytes},
          {"fetched_at", e.fetched_at},
          {"source_format", e.source_format},
          {"import_options", e.import_options},
          {"complete", e.complete},
          {"dir", e.module_dir.string()}};
}

RunFn setup_cache(CLI::App& app) {
  auto handle = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  app.require_subcommand(1);
  CLI::App* list = app.add_subcommand("list", "List cached modules: handle, size, date");
  list->add_flag("--json", *json,
                 "Print JSON: one object per entry (key, handle, registry, version, url, source_format, ...)");
  CLI::App* rm = app.add_subcommand("rm", "Remove cached modules");
  rm->add_option("HANDLE", *handle,
                 "A handle as fetched, a registry module publisher/name@version, or a 40-hex cache key")
      ->required();
  CLI::App* clear = app.add_subcommand("clear", "Remove every cached module");
  CLI::App* verify = app.add_subcommand("verify", "Re-hash every cached module; report damage");
  verify->add_flag("--json", *json, "Print JSON: one object per entry with ok and problem");
  CLI::App* dir = app.add_subcommand("dir", "Print the cache directory");
  return [=] {
    resolver::Cache cache(resolver::default_cache_dir());
    if (dir->parsed()) {
      std::printf("%s\n", cache.root().c_str());
    } else if (list->parsed()) {
      if (*json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& e : cache.list()) out.push_back(entry_json(e));
        print_json(out);
        return 0;
      }
      for (const auto& e : cache.list()) {
        std::string name = e.handle.empty() ? e.key : e.handle;
        if (!e.registry.empty()) name += " (" + e.registry + ")";
        if (!e.source_format.empty())
          name += " [from " + e.source_format + (e.import_options.empty() ? "" : " " + e.import_options) + "]";
        std::printf("%-60s %10s  %s%s\n", printable(redact_credentials(name)).c_str(), human(e.unpacked_bytes).c_str(),
                    printable(e.fetched_at).c_str(), e.complete ? "" : "  (incomplete)");
      }
    } else if (rm->parsed()) {
      if (cache.remove(*handle) == 0) {
        throw_error(Code::kNotFound, "'" + *handle + "' is not in the cache " + cache.root().string());
      }
    } else if (clear->parsed()) {
      size_t n = cache.clear();
      std::fprintf(stderr, "removed %zu cached module%s\n", n, n == 1 ? "" : "s");
    } else if (verify->parsed()) {
      size_t bad = 0;
      nlohmann::json out = nlohmann::json::array();
      for (const auto& v : cache.verify()) {
        const std::string name = printable(redact_credentials(v.entry.handle.empty() ? v.entry.key : v.entry.handle));
        if (!v.ok) ++bad;
        if (*json) {
          nlohmann::json j = entry_json(v.entry);
          j["ok"] = v.ok;
          j["problem"] = v.problem;
          out.push_back(j);
        } else if (v.ok) {
          std::printf("ok       %s\n", name.c_str());
        } else {
          std::printf("DAMAGED  %s: %s\n", name.c_str(), v.problem.c_str());
        }
      }
      if (*json) print_json(out);
      if (bad) {
        throw_error(Code::kDataLoss, std::to_string(bad) + " damaged cache entr" + (bad == 1 ? "y" : "ies") +
                                         " (remove with `hub cache rm HANDLE`)");
      }
    }
    return 0;
  };
}
}  // namespace
HUB_REGISTER_COMMAND(cache, "Inspect and manage the module cache", setup_cache);
}  // namespace hub::cli

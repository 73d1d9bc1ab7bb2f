// hub: one command, a table of subcommands (see cli/command.h).
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "cli/command.h"
#include "hub/backend/backend.h"
#include "hub/core/error.h"
#include "hub/core/interrupt.h"
#include "hub/core/text.h"
#include "registry/client/client.h"

namespace hub::cli {
std::vector<Command>& commands() {
  static std::vector<Command> table;
  return table;
}

std::vector<int64_t> parse_class_list(const std::string& text, const std::string& flag) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    size_t used = 0;
    try {
      auto dash = item.find('-', 1);
      if (dash != std::string::npos) {
        int64_t lo = std::stoll(item.substr(0, dash), &used);
        if (used != dash) throw std::invalid_argument(item);
        std::string rest = item.substr(dash + 1);
        int64_t hi = std::stoll(rest, &used);
        if (used != rest.size() || lo < 0 || hi < lo) throw std::invalid_argument(item);
        for (int64_t v = lo; v <= hi; ++v) out.push_back(v);
      } else {
        int64_t v = std::stoll(item, &used);
        if (used != item.size() || v < 0) throw std::invalid_argument(item);
        out.push_back(v);
      }
    } catch (const std::exception&) {
      throw_error(Code::kInvalidArgument, flag + ": '" + item + "' is not a class id or a range like 0-4");
    }
  }
  return out;
}

void add_module_args(CLI::App& app, ModuleArgs& args, const std::string& help, const std::string& aliases) {
  app.add_option("MODULE,--module" + (aliases.empty() ? "" : "," + aliases), args.module,
                 help +
                     ": a module directory, an archive (path, file://, http(s)://, optionally with "
                     "#sha256=HEX) or a registry name publisher/name@version")
      ->required();
  add_registry_flag(app, args.registry);
  app.add_flag("--offline", args.offline, "Use only the module cache, never the network (as HUB_OFFLINE=1)");
}

void add_registry_flag(CLI::App& app, std::string& registry) {
  app.add_option("--registry", registry, "Registry URL for registry names (default $HUB_REGISTRY)");
}

std::string registry_url(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("HUB_REGISTRY");
  return env ? env : "";
}

void add_backend_flag(CLI::App& app, std::string& backend) {
  app.add_option("--backend", backend,
                 "Backend to run on: reference, onednn or cuda (default: $HUB_BACKEND, else onednn)");
}

void use_backend(const std::string& backend) {
  if (backend.empty()) return;
  try {
    find_backend(backend);
  } catch (const Error& e) {
    throw e.with_context("--backend");
  }
  ::setenv("HUB_BACKEND", backend.c_str(), 1);
}

resolver::Resolver make_resolver(const ModuleArgs& args, bool quiet) {
  resolver::ResolverOptions o;
  o.quiet = quiet;
  if (args.offline) o.offline = true;
  if (std::string url = registry_url(args.registry); !url.empty())
    o.registry = std::make_shared<registry::RegistryClient>(url, o.fetch);
  return resolver::Resolver(std::move(o));
}

void note_resolution(const resolver::Resolution& r) {
  if (r.resolved == r.handle) return;
  std::fprintf(stderr, "%s: %s from %s%s\n", printable(r.handle).c_str(), printable(r.resolved).c_str(),
               printable(r.registry).c_str(), r.offline ? " (offline: as last resolved)" : "");
}

ModuleSpec load_module(const ModuleArgs& args, bool quiet) {
  resolver::Resolution r;
  ModuleSpec spec = make_resolver(args, quiet).load(args.module, &r);
  if (!quiet) note_resolution(r);
  return spec;
}

void print_json(const nlohmann::json& doc) {
  // Names from modules and registries may not be UTF-8: replace such bytes
  // (U+FFFD) rather than fail.
  std::printf("%s\n", doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

namespace {

// The exit statuses, for `hub --help`.
std::string exit_codes_text() {
  std::string s =
      "Exit status:\n"
      "  0         success\n"
      "  1         unexpected failure (an error outside hub's codes)\n"
      "  2         usage error: unknown flag, missing or malformed argument\n";
  for (int c = static_cast<int>(Code::kInvalidArgument); c <= static_cast<int>(Code::kInternal); ++c) {
    char line[96];
    std::snprintf(line, sizeof line, "  %-9d %s\n", exit_code(static_cast<Code>(c)),
                  std::string(code_name(static_cast<Code>(c))).c_str());
    s += line;
  }
  s += "  130, 143  interrupted by SIGINT or SIGTERM (locks and work folders removed; a download cut short is\n"
       "            kept in the cache's .partial/ and continued by the next run)\n"
       "  141       stdout was closed early (e.g. `hub ops | head -1`); nothing is printed\n";
  return s;
}

// Every flag and positional of every command has a description: a bug in
// hub otherwise, caught by any run of the binary (and so by its tests).
void check_documented(const CLI::App& app, const std::string& path) {
  for (const CLI::Option* opt : app.get_options())
    HUB_CHECK(!opt->get_description().empty(), "option " + opt->get_name() + " of `" + path + "` has no description");
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    check_documented(*sub, path + " " + sub->get_name());
}

}  // namespace
}  // namespace hub::cli

int main(int argc, char** argv) {
  // A closed stdout ends the process quietly (status 141), even when the
  // parent left SIGPIPE ignored; ^C and SIGTERM clean up first (interrupt.h).
  ::signal(SIGPIPE, SIG_DFL);
  hub::install_interrupt_handlers();
  CLI::App app{"hub: fetch, run, retrain and publish reusable C++ network modules"};
  app.set_version_flag("--version", std::string("hub ") + HUB_VERSION);
  app.footer(hub::cli::exit_codes_text());
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, hub::cli::RunFn>> runs;
  for (auto& cmd : hub::cli::commands()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.help);
    runs.emplace_back(sub, cmd.setup(*sub));
  }
  try {
    hub::cli::check_documented(app, "hub");
  } catch (const hub::Error& e) {
    std::fprintf(stderr, "hub: %s\n", e.what());
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (auto& [sub, run] : runs) {
    if (!sub->parsed()) continue;
    int status = 1;
    try {
      status = run();
    } catch (const hub::Error& e) {
      hub::reraise_if_interrupted();
      std::fprintf(stderr, "hub %s: %s\n", sub->get_name().c_str(), hub::redact_credentials(e.what()).c_str());
      return hub::exit_code(e.code());
    } catch (const std::exception& e) {
      hub::reraise_if_interrupted();
      std::fprintf(stderr, "hub %s: %s\n", sub->get_name().c_str(), hub::redact_credentials(e.what()).c_str());
      return 1;
    }
    hub::reraise_if_interrupted();
    return status;
  }
  return 1;
}

// hub: one command, a table of subcommands (see cli/command.h).
#include <cstdio>
#include <exception>
#include <memory>

#include "cli/command.h"
#include "hub/core/error.h"

namespace hub::cli {
std::vector<Command>& commands() {
  static std::vector<Command> table;
  return table;
}
}  // namespace hub::cli

int main(int argc, char** argv) {
  CLI::App app{"hub: fetch, run, retrain and publish reusable C++ network modules"};
  app.set_version_flag("--version", std::string("hub ") + HUB_VERSION);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, hub::cli::RunFn>> runs;
  for (auto& cmd : hub::cli::commands()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.help);
    runs.emplace_back(sub, cmd.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, run] : runs) {
    if (!sub->parsed()) continue;
    try {
      return run();
    } catch (const hub::Error& e) {
      std::fprintf(stderr, "hub %s: %s\n", sub->get_name().c_str(), e.what());
      return hub::exit_code(e.code());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hub %s: %s\n", sub->get_name().c_str(), e.what());
      return 1;
    }
  }
  return 1;
}

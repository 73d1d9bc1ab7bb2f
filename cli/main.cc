// hub: one command, a table of subcommands (see cli/command.h).
#include <cstdio>
#include <exception>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "cli/command.h"
#include "hub/core/error.h"

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

// The `hub` command's subcommand table. Each subcommand lives in its own file
// (cli/<name>.cc) and registers itself with one statement:
//
//   HUB_REGISTER_COMMAND(fetch, "Download and cache a module", setup_fetch);
//
// where setup_fetch(CLI::App&) adds the flags and returns the function to run.
// The function returns the process exit code; hub::Error thrown from it is
// printed as "hub <name>: <message>" and exits with hub::exit_code(code).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hub::cli {

using RunFn = std::function<int()>;
using SetupFn = RunFn (*)(CLI::App& app);

struct Command {
  std::string name;
  std::string help;
  SetupFn setup;
};

std::vector<Command>& commands();

// "0-4", "1,3,7", "0-2,5" -> class ids; "" -> {}. Throws InvalidArgument
// naming `flag` for anything else.
std::vector<int64_t> parse_class_list(const std::string& text, const std::string& flag);

struct CommandRegistrar {
  CommandRegistrar(const char* name, const char* help, SetupFn setup) {
    commands().push_back({name, help, setup});
  }
};

}  // namespace hub::cli

#define HUB_REGISTER_COMMAND(name, help, setup) \
  static ::hub::cli::CommandRegistrar hub_command_registrar_##name(#name, help, setup)

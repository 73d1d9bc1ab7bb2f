// The `hub` command's subcommand table. Each subcommand lives in its own file
// (cli/<name>.cc) and registers itself with one statement:
//
//   HUB_REGISTER_COMMAND(fetch, "Download and cache a module", setup_fetch);
//
// where setup_fetch(CLI::App&) adds the flags and returns the function to run.
// The function returns the process exit code; hub::Error thrown from it is
// printed as "hub <name>: <message>" and exits with hub::exit_code(code).
// Conventions every command follows (main.cc checks the first one at start):
//   - every flag and positional has a description;
//   - flags are snake_case (--output_dir), like retrain.py's and TF-Slim's;
//   - a command that takes a module takes it with add_module_args();
//   - a command that prints data offers --json (print_json()).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hub/resolver/resolver.h"

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

// How every command that takes a module takes it: the positional MODULE
// (also accepted as --module, plus `aliases` such as "--tfhub_module"),
// --registry URL (default $HUB_REGISTRY) for registry names, and --offline.
struct ModuleArgs {
  std::string module;
  std::string registry;
  bool offline = false;
};
void add_module_args(CLI::App& app, ModuleArgs& args, const std::string& help, const std::string& aliases = "");
// --registry URL, for the commands that talk to a registry.
void add_registry_flag(CLI::App& app, std::string& registry);
// "--registry" if given, else $HUB_REGISTRY, else "" (no registry).
std::string registry_url(const std::string& flag);
// The Resolver the CLI uses: cache from the environment ($HUB_CACHE_DIR ...),
// the registry from --registry / $HUB_REGISTRY (registry names are refused,
// saying so, when there is none), --offline (or $HUB_OFFLINE).
resolver::Resolver make_resolver(const ModuleArgs& args, bool quiet = false);

// make_resolver(args).load(), saying on stderr
// which version a registry name resolved to ("acme/net@latest:
// acme/net@1.2.0 from URL") unless quiet.
ModuleSpec load_module(const ModuleArgs& args, bool quiet = false);
// The note above, for a Resolution (nothing when it resolved to itself).
void note_resolution(const resolver::Resolution& r);

// --backend NAME: the backend the command's sessions prefer (reference,
// onednn, cuda; default $HUB_BACKEND, else onednn). use_backend() checks it
// (an unknown backend, or cuda without a GPU, is an error naming the flag)
// and makes it the process's default ($HUB_BACKEND), so every Session and
// Module the command makes runs on it. Nothing when empty.
void add_backend_flag(CLI::App& app, std::string& backend);
void use_backend(const std::string& backend);

// Prints `doc` as indented JSON on stdout (the --json output of every
// command); bytes that are not UTF-8 become U+FFFD.
void print_json(const nlohmann::json& doc);

struct CommandRegistrar {
  CommandRegistrar(const char* name, const char* help, SetupFn setup) { commands().push_back({name, help, setup}); }
};

}  // namespace hub::cli

#define HUB_REGISTER_COMMAND(name, help, setup) \
  static ::hub::cli::CommandRegistrar hub_command_registrar_##name(#name, help, setup)

// `hub registry serve|token create|export-static`: run and administer a registry.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "hub/core/error.h"
#include "registry/names.h"
#include "registry/server/export_static.h"
#include "registry/server/registry_server.h"

namespace hub::cli {
namespace {

struct RegistryFlags {
  std::string root;
  std::string host = "127.0.0.1";
  int port = 8080;
  uint64_t max_upload_mb = 1024;
  int workers = 32;
  int max_connections = 256;
  int header_timeout_ms = 10000;
  std::string publisher;
  std::string out;
};

int serve(const RegistryFlags& f) {
  registry::RegistryServerOptions opt;
  opt.root = f.root;
  opt.host = f.host;
  opt.port = f.port;
  opt.max_upload_bytes = f.max_upload_mb << 20;
  opt.http.worker_threads = f.workers;
  opt.http.max_connections = f.max_connections;
  opt.http.header_timeout_ms = f.header_timeout_ms;
  // Block the stop signals in every thread; the main thread waits for them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  registry::RegistryServer server(opt);
  server.start();
  std::string host = f.host.find(':') != std::string::npos ? "[" + f.host + "]" : f.host;
  std::printf("listening on http://%s:%d\n", host.c_str(), server.port());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  std::fprintf(stderr, "hub registry: stopping on signal %d\n", sig);
  server.stop();
  return 0;
}

RunFn setup_registry(CLI::App& app) {
  auto flags = std::make_shared<RegistryFlags>();
  app.require_subcommand(1);
  CLI::App* serve_cmd = app.add_subcommand("serve", "Serve a registry over HTTP");
  serve_cmd->add_option("--root", flags->root, "Registry directory (database and blobs)")->required();
  serve_cmd->add_option("--host", flags->host, "Address to listen on")->capture_default_str();
  serve_cmd->add_option("--port", flags->port, "Port (0 = pick a free one)")->capture_default_str()->check(CLI::Range(0, 65535));
  serve_cmd->add_option("--max_upload_mb", flags->max_upload_mb, "Largest accepted archive, MiB")->capture_default_str();
  serve_cmd->add_option("--workers", flags->workers, "Worker threads")->capture_default_str()->check(CLI::Range(1, 1024));
  serve_cmd->add_option("--max_connections", flags->max_connections, "Connections accepted at once")
      ->capture_default_str()->check(CLI::Range(1, 100000));
  serve_cmd->add_option("--header_timeout_ms", flags->header_timeout_ms, "Time allowed for a request head")
      ->capture_default_str()->check(CLI::Range(100, 600000));
  CLI::App* token_cmd = app.add_subcommand("token", "Manage publish tokens");
  token_cmd->require_subcommand(1);
  CLI::App* create_cmd = token_cmd->add_subcommand("create", "Create a token for a publisher (printed once)");
  create_cmd->add_option("--root", flags->root, "Registry directory")->required();
  create_cmd->add_option("--publisher", flags->publisher, "Publisher the token may publish for")->required();
  CLI::App* export_cmd = app.add_subcommand("export-static", "Write the read side as static files");
  export_cmd->add_option("--root", flags->root, "Registry directory")->required();
  export_cmd->add_option("--out", flags->out, "Output directory")->required();
  return [flags, serve_cmd, create_cmd, export_cmd]() -> int {
    if (serve_cmd->parsed()) return serve(*flags);
    if (!std::filesystem::is_directory(flags->root) && !create_cmd->parsed())
      throw_error(Code::kNotFound, "registry root " + flags->root + " does not exist");
    registry::Store store(flags->root);
    if (create_cmd->parsed()) {
      std::string token = store.create_token(flags->publisher);
      std::fprintf(stderr, "token for publisher '%s' (shown once; only its hash is stored):\n",
                   registry::normalize_name(flags->publisher, "publisher").c_str());
      std::printf("%s\n", token.c_str());
      return 0;
    }
    if (export_cmd->parsed()) {
      registry::ExportStats s = registry::export_static(store, flags->out);
      std::printf("exported %d modules, %d versions, %d new blobs to %s\n", s.modules, s.versions, s.blobs,
                  flags->out.c_str());
      return 0;
    }
    return 1;
  };
}

}  // namespace
HUB_REGISTER_COMMAND(registry, "Run or administer a module registry", setup_registry);
}  // namespace hub::cli

// `hub registry serve | token create|list|revoke | export-static`: run and
// administer a registry.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
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
  registry::HttpLimits http;
  std::vector<std::string> trusted_proxies;
  std::string publisher;
  std::string expires_in;
  std::string token_id;
  std::string out;
};

// "30d", "12h", "45m", "90s" -> seconds. Throws InvalidArgument naming `flag`.
int64_t parse_duration_s(const std::string& text, const std::string& flag) {
  auto bad = [&] {
    throw_error(Code::kInvalidArgument, flag + ": '" + text.substr(0, 40) +
                                            "' is not a duration: a number and a unit (s, m, h or d), like 30d or 12h");
  };
  if (text.size() < 2 || text.size() > 10) bad();
  int64_t n = 0;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') bad();
    n = n * 10 + (text[i] - '0');
  }
  int64_t unit = 0;
  switch (text.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    default:
      bad();
  }
  if (n <= 0) bad();
  return n * unit;
}

std::string when(int64_t unix_seconds) { return unix_seconds == 0 ? "never" : registry::rfc3339(unix_seconds); }

int list_tokens(registry::Store& store) {
  int64_t now = static_cast<int64_t>(::time(nullptr));
  std::printf("%-16s  %-20s  %-20s  %-20s  %s\n", "ID", "PUBLISHER", "CREATED", "EXPIRES", "STATUS");
  for (const registry::TokenRecord& t : store.list_tokens()) {
    std::string status = t.revoked_at                            ? "revoked " + registry::rfc3339(t.revoked_at)
                         : (t.expires_at && t.expires_at <= now) ? "expired"
                                                                 : "active";
    std::printf("%-16s  %-20s  %-20s  %-20s  %s\n", t.id.c_str(), t.publisher.c_str(), when(t.created_at).c_str(),
                when(t.expires_at).c_str(), status.c_str());
  }
  return 0;
}

int serve(const RegistryFlags& f) {
  registry::RegistryServerOptions opt;
  opt.root = f.root;
  opt.host = f.host;
  opt.port = f.port;
  opt.max_upload_bytes = f.max_upload_mb << 20;
  opt.http = f.http;
  opt.trusted_proxies = f.trusted_proxies;
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
  serve_cmd->add_option("--port", flags->port, "Port (0 = pick a free one)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  serve_cmd->add_option("--max_upload_mb", flags->max_upload_mb, "Largest accepted archive, MiB")
      ->capture_default_str();
  registry::HttpLimits& http = flags->http;
  serve_cmd->add_option("--workers", http.worker_threads, "Worker threads (handlers running at once)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  serve_cmd->add_option("--max_connections", http.max_connections, "Connections open at once, all clients")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  serve_cmd
      ->add_option("--max_connections_per_client", http.max_connections_per_client,
                   "Connections open at once from one client (IPv4 address or IPv6 /64)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  serve_cmd->add_option("--header_timeout_ms", http.header_timeout_ms, "Time allowed for a request head, ms")
      ->capture_default_str()
      ->check(CLI::Range(100, 600000));
  serve_cmd->add_option("--keepalive_timeout_ms", http.keepalive_timeout_ms, "Idle keep-alive connection lifetime, ms")
      ->capture_default_str()
      ->check(CLI::Range(100, 600000));
  serve_cmd
      ->add_option("--min_rate", http.min_rate_bytes_per_s,
                   "Minimum transfer rate of request heads, request bodies and responses, bytes/s")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  serve_cmd->add_option("--rate_window_ms", http.rate_window_ms, "Window the minimum rate is averaged over, ms")
      ->capture_default_str()
      ->check(CLI::Range(100, 600000));
  serve_cmd->add_option("--trusted_proxy", flags->trusted_proxies,
                        "Address of a reverse proxy whose X-Real-IP names the client (repeatable)");
  CLI::App* token_cmd = app.add_subcommand("token", "Manage publish tokens");
  token_cmd->require_subcommand(1);
  CLI::App* create_cmd = token_cmd->add_subcommand("create", "Create a token for a publisher (printed once)");
  create_cmd->add_option("--root", flags->root, "Registry directory")->required();
  create_cmd->add_option("--publisher", flags->publisher, "Publisher the token may publish for")->required();
  create_cmd->add_option("--expires_in", flags->expires_in,
                         "Lifetime: a number and a unit (s, m, h or d), e.g. 30d or 12h; default: no expiry");
  CLI::App* list_cmd = token_cmd->add_subcommand("list", "List tokens: id, publisher, dates, status (never secrets)");
  list_cmd->add_option("--root", flags->root, "Registry directory")->required();
  CLI::App* revoke_cmd = token_cmd->add_subcommand("revoke", "Revoke a token by its id (see token list)");
  revoke_cmd->add_option("id", flags->token_id, "Token id (16 hex digits; hubt_<id>_...)")->required();
  revoke_cmd->add_option("--root", flags->root, "Registry directory")->required();
  CLI::App* export_cmd = app.add_subcommand("export-static", "Write the read side as static files");
  export_cmd->add_option("--root", flags->root, "Registry directory")->required();
  export_cmd->add_option("--out", flags->out, "Output directory")->required();
  return [flags, serve_cmd, create_cmd, list_cmd, revoke_cmd, export_cmd]() -> int {
    if (serve_cmd->parsed()) return serve(*flags);
    int64_t expires_at = 0;
    if (create_cmd->parsed() && !flags->expires_in.empty())
      expires_at = static_cast<int64_t>(::time(nullptr)) + parse_duration_s(flags->expires_in, "--expires_in");
    if (!std::filesystem::is_directory(flags->root) && !create_cmd->parsed())
      throw_error(Code::kNotFound, "registry root " + flags->root + " does not exist");
    registry::Store store(flags->root);
    if (create_cmd->parsed()) {
      std::string token = store.create_token(flags->publisher, expires_at);
      std::fprintf(stderr, "token %s for publisher '%s', expires %s (shown once; only its hash is stored):\n",
                   token.substr(5, 16).c_str(), registry::normalize_name(flags->publisher, "publisher").c_str(),
                   when(expires_at).c_str());
      std::printf("%s\n", token.c_str());
      return 0;
    }
    if (list_cmd->parsed()) return list_tokens(store);
    if (revoke_cmd->parsed()) {
      bool now = store.revoke_token(flags->token_id);
      std::printf("token %s %s\n", flags->token_id.c_str(), now ? "revoked" : "was already revoked");
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

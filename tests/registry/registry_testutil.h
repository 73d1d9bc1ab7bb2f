// Helpers for registry tests: temp dirs, module/archive builders, a raw
// HTTP/1.1 client on loopback (to send what a well-behaved client never would),
// and an in-process registry server with a token.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "registry/server/registry_server.h"
#include "testutil.h"

namespace hub::registry::testing {

using hub::testing::dir_entries;
using hub::testing::make_tar;
using hub::testing::read_file;
using hub::testing::TarEntry;
using hub::testing::TempDir;

// A minimal module directory: module.pb (valid protobuf wire format, varying
// with `seed`), variables.safetensors, assets/labels.txt.
void make_module_dir(const std::filesystem::path& dir, const std::string& seed);

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  bool closed_without_response = false;
};

// Opens a loopback TCP connection; sends `request` (the bytes as given); reads
// one response (until Content-Length is satisfied, or EOF); timeout in ms.
RawResponse raw_request(int port, const std::string& request, int timeout_ms = 10000, const char* source = "127.0.0.1");

// Builds a request with Content-Length = body.size() unless headers say otherwise.
std::string http_request(const std::string& method, const std::string& target,
                         const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body = "",
                         bool add_length = true);

// Connects from `source` (a loopback address: 127.0.0.2 is another client as
// far as per-client limits go) and returns the fd (caller closes).
int connect_loopback(int port, const char* source = "127.0.0.1");
// Reads one response from fd (as raw_request).
RawResponse read_response(int fd, int timeout_ms = 10000);

struct TestRegistry {
  TempDir dir;
  std::unique_ptr<RegistryServer> server;
  std::string url;
  std::string token;  // for publisher "acme"

  explicit TestRegistry(RegistryServerOptions options = {});
  std::filesystem::path root() const { return dir.path / "root"; }
  // Publishes raw bytes as acme/<name>@<version> with the right digest; returns the status.
  RawResponse put(const std::string& module, const std::string& version, const std::string& bytes,
                  const std::string& token_override = "\x01", const std::string& sha_override = "");
  // Number of files under root/tmp.
  int temp_files() const;
};

// A fresh module archive (bytes) built from make_module_dir(seed).
std::string module_archive(const std::string& seed);

}  // namespace hub::registry::testing

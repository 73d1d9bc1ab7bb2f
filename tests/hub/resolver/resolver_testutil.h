// Helpers for the resolver tests: a private sandbox directory, tar/tar.gz
// archives built in memory with libarchive's writer, and fast test options.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fixtures.h"
#include "hub/resolver/resolver.h"

namespace hub::testing {

// A TempDir holding `cache/` (the cache root) and `outside/` (must stay
// empty: hostile archives aim at it).
struct Sandbox {
  Sandbox();
  TempDir dir;
  std::filesystem::path root, cache, outside;
  resolver::ResolverOptions options() const;  // fast_options(cache)
};

// Quiet, online, fast timeouts and retries, the given cache root, and a
// stand-in validator (a non-empty module.pb) so archives need no real module;
// the resolver's own validator, which loads the module, is tested on its own.
resolver::ResolverOptions fast_options(const std::filesystem::path& cache);
// Resolver(o).resolve(handle, sha256).dir
std::filesystem::path resolve_dir(const std::string& handle, const resolver::ResolverOptions& o,
                                  const std::string& sha256 = "");

// One gzip member (RFC 1952) holding `data`, made by zlib at `level` (0 = stored).
std::string gzip_bytes(const std::string& data, int level = 6);
// A plain tar whose single regular entry declares `size` bytes but carries
// none: only the headers (the reader must refuse on the header alone).
std::string make_declared_size_bomb(const std::string& path, int64_t size);
// A pax tar with one sparse entry of logical size `size` holding a single
// byte at its end.
std::string make_sparse_bomb(const std::string& path, int64_t size);
// A minimal module: module.pb (non-empty), variables file, assets/labels.txt.
std::vector<TarEntry> module_entries(const std::string& prefix = "");
// make_tar(module_entries()), built once.
const std::string& good_archive();

// `n` bytes that do not compress (a fixed LCG sequence), so a cut in the
// compressed stream is a cut in the content.
std::string noise(size_t n, uint32_t seed = 1);

void write_file(const std::filesystem::path& p, const std::string& bytes);
// Every path under `dir`, relative, sorted ("" when dir does not exist).
std::vector<std::string> list_tree(const std::filesystem::path& dir);

}  // namespace hub::testing

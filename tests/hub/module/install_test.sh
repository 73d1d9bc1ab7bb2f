#!/bin/sh
# Installs the build into a temporary DESTDIR and builds examples/embed.cc
# against the installed headers, library and pkg-config file, as an outside
# user would, then runs it (export + reload included). The embedder links
# libhub alone: the test fails if libhub needs SQLite or carries the registry
# server or training code.
# Usage: [CXX=compiler] install_test.sh BUILD_DIR EMBED_CC [B_SANITIZE]
# CXX is the compiler the build used (meson passes it). B_SANITIZE (meson's
# b_sanitize, e.g. address,undefined): the library was built with these
# sanitizers, so the embedder is too: their runtime must be linked into the
# program itself, not only pulled in by libhub.so, and be the same compiler's.
set -eu
build=$1
src=$2
sanitize=${3:-none}
san_flags=
[ "$sanitize" = none ] || san_flags="-fsanitize=$sanitize"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --no-rebuild --destdir "$tmp/dest" >"$tmp/install.log" 2>&1 || {
  cat "$tmp/install.log"; exit 1; }
pc=$(find "$tmp/dest" -name hub.pc | head -n 1)
[ -n "$pc" ] || { echo "install_test: no hub.pc installed"; exit 1; }
test -f "$(find "$tmp/dest" -path '*include/hub/module/module.h' | head -n 1)" || {
  echo "install_test: hub/module/module.h not installed"; exit 1; }
# PKG_CONFIG_SYSROOT_DIR prefixes -I/-L paths with the DESTDIR.
export PKG_CONFIG_PATH="$(dirname "$pc")"
export PKG_CONFIG_SYSROOT_DIR="$tmp/dest"
flags=$(pkg-config --cflags --libs hub)
echo "pkg-config --cflags --libs hub: $flags"
for pcname in hub-train hub-registry; do
  pkg-config --exists "$pcname" || { echo "install_test: no $pcname.pc installed"; exit 1; }
done
# An app that runs modules links libhub alone: no SQLite, no registry server,
# no training code, and the pkg-config flags force no -std.
case "$flags" in *sqlite*|*hub-train*|*hub-registry*|*-std=*)
  echo "install_test: pkg-config hub gives more than libhub: $flags"; exit 1;; esac
libhub=$(find "$tmp/dest" -name 'libhub.so' | head -n 1)
if readelf -d "$libhub" | grep -q 'NEEDED.*sqlite'; then
  echo "install_test: libhub.so links SQLite"; exit 1
fi
if nm -DC --defined-only "$libhub" | grep -q 'HttpServer\|RegistryServer\|train::'; then
  echo "install_test: libhub.so carries registry server or training code"; exit 1
fi
# Nothing from the source or build tree: only the installed files.
${CXX:-c++} -std=c++20 -O0 $san_flags "$src" $flags -o "$tmp/embed"
if readelf -d "$tmp/embed" | grep -q 'NEEDED.*\(sqlite\|hub-train\|hub-registry\)'; then
  echo "install_test: the embedder links more than libhub"; exit 1
fi
libdir=$(dirname "$libhub")
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/embed" "$tmp/exported"
test -f "$tmp/exported/module.pb" && test -f "$tmp/exported/variables.safetensors"
echo "install_test: ok"

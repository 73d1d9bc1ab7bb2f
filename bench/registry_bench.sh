#!/usr/bin/env bash
# Registry throughput on loopback with Debian's `wrk` (apt package wrk):
# metadata reads/s (versions.json, search) and archive download MB/s, 32
# concurrent connections, with p50/p99 latency. Usage:
#   bench/registry_bench.sh [BUILD_DIR] [SECONDS] [ARCHIVE_MB]
# Prints a markdown table. Starts its own server on a free port and stops it.
set -euo pipefail
build=${1:-build}
secs=${2:-10}
mb=${3:-8}
hub="$build/cli/hub"
h2="$build/examples/half_plus_two"
command -v wrk >/dev/null || { echo "wrk not installed (apt-get install wrk)" >&2; exit 1; }
[ -x "$hub" ] && [ -x "$h2" ] || { echo "build $hub and $h2 first" >&2; exit 1; }
work=$(mktemp -d)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

token=$("$hub" registry token create --root "$work/root" --publisher bench 2>/dev/null | tail -1)
"$hub" registry serve --root "$work/root" --port 0 --workers 48 >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
for _ in $(seq 100); do grep -q listening "$work/serve.out" && break; sleep 0.05; done
url=$(sed -n 's/^listening on //p' "$work/serve.out")

"$h2" "$work/mod" >/dev/null
mkdir -p "$work/mod/assets"
head -c $((mb << 20)) /dev/urandom >"$work/mod/assets/blob.bin"
for v in 1.0.0 1.1.0 2.0.0; do
  "$hub" publish "$work/mod" --registry "$url" --name bench/net --version "$v" --token "$token" >/dev/null 2>&1
done
sha=$("$hub" versions bench/net --registry "$url" --json | sed -n 's/.*"sha256": "\([0-9a-f]*\)".*/\1/p' | head -1)
size=$(stat -c %s "$work/root/blobs/sha256/${sha:0:2}/$sha")

run() {  # name url
  local out
  out=$(wrk -t2 -c32 -d"${secs}s" --latency "$2")
  local rps p50 p99 xfer
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  xfer=$(awk '/Transfer\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  local errs
  errs=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out" | tr '\n' ' ')
  echo "| $1 | $rps | $xfer | $p50 | $p99 | ${errs:-none} |"
}

echo "archive: $size bytes; wrk -t2 -c32 -d${secs}s; $(nproc) cores shared by wrk and the server"
echo
echo "| endpoint | requests/s | transfer/s | p50 | p99 | errors |"
echo "| --- | --- | --- | --- | --- | --- |"
run "GET versions.json (metadata)" "$url/v1/modules/bench/net/versions.json"
run "GET search?q=net (metadata)" "$url/v1/search?q=net"
run "GET blob (${mb} MiB archive)" "$url/v1/blobs/sha256/$sha"

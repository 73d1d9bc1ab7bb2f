#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with Debian's clang (address,
# undefined and fuzzer sanitizers, at -O1, in build-fuzz/ or an existing tree
# configured with -Dfuzz=true such as CI's build-asan) and
# runs each on its seed corpus for FUZZ_SECONDS (default 25) seconds. Fails
# on any crash, sanitizer report, leak, timeout or out-of-memory; the input
# that did it is left in build-fuzz/findings/<harness>/ (with a note of how
# to reproduce it).
#
#   tests/fuzz/run.sh                     # every harness, 25 s each
#   FUZZ_SECONDS=3600 tests/fuzz/run.sh png unpack   # longer, some harnesses
#   FUZZ_JOBS=2 ...                       # parallel fuzzing processes per harness
#   FUZZ_PARALLEL=1 ...                   # harnesses at once (default: one per core)
#   FUZZ_BUILD_DIR=build-asan ...         # the harnesses of that tree (.ci/run)
#
# New inputs that reach new code go to build-fuzz/corpus/<harness>/ (kept
# between runs, never into the committed seeds); copy small interesting ones
# into tests/fuzz/corpus/<harness>/ by hand. docs/security.md says more.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-25}
jobs=${FUZZ_JOBS:-1}
dir=${FUZZ_BUILD_DIR:-build-fuzz}
cxx=${FUZZ_CXX:-clang++-16}
cc=${FUZZ_CC:-clang-16}

if [ ! -f "$dir/build.ninja" ]; then
  CC=$cc CXX=$cxx meson setup "$dir" -Dfuzz=true -Dtests=false -Dcuda=disabled \
    -Dbuildtype=plain -Db_sanitize=address,undefined -Db_lundef=false \
    -Dcpp_args="-O1 -g -fno-sanitize-recover=all" >/dev/null
fi
# The harnesses are the fuzz_* executables tests/fuzz/meson.build declares
# (in the tree's current configuration: regenerated first when it changed).
ninja -C "$dir" build.ninja >/dev/null
all=$(meson introspect --targets "$dir" | python3 -c '
import json, sys
print(" ".join(sorted(t["name"][5:] for t in json.load(sys.stdin) if t["name"].startswith("fuzz_"))))')
if [ -z "$all" ]; then
  echo "run.sh: $dir has no fuzz harnesses: configure it with -Dfuzz=true (and clang)"
  exit 2
fi
harnesses=${*:-$all}
targets=""
for h in $harnesses; do
  case " $all " in *" $h "*) ;; *) echo "run.sh: no harness '$h' (have: $all)"; exit 2 ;; esac
  targets="$targets tests/fuzz/fuzz_$h"
done
ninja -C "$dir" $targets

# One thread per harness (hub's and oneDNN's pools): the harnesses already
# run one per core, and an input's path through the code does not depend on
# thread timing.
export HUB_NUM_THREADS=${HUB_NUM_THREADS:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
root=$(pwd)
# One harness: prints its result, returns non-zero on a finding.
fuzz_one() {
  local h=$1
  local corpus="$root/$dir/corpus/$h"
  local findings="$root/$dir/findings/$h"
  mkdir -p "$corpus" "$findings"
  rm -f "$findings"/fuzz-*.log
  # The first corpus folder receives new inputs; the committed seeds are only
  # read. Run inside the findings folder: with -jobs, libFuzzer writes its
  # fuzz-N.log files to the working directory.
  if ! (cd "$findings" && "$root/$dir/tests/fuzz/fuzz_$h" "$corpus" "$root/tests/fuzz/corpus/$h" \
      -max_total_time="$seconds" -jobs="$jobs" -workers="$jobs" -timeout=10 -rss_limit_mb=2048 \
      -max_len=262144 -print_final_stats=1 -artifact_prefix="$findings/" >"$findings/log.txt" 2>&1); then
    tail -n 60 "$findings/log.txt"
    for log in "$findings"/fuzz-*.log; do [ -f "$log" ] && tail -n 60 "$log"; done
    echo "== fuzz $h FAILED: input in $findings/; reproduce with $dir/tests/fuzz/fuzz_$h $findings/<crash-file>"
    return 1
  fi
  echo "== fuzz $h for ${seconds} s: $(grep -hE "^Done" "$findings/log.txt" "$findings"/fuzz-*.log 2>/dev/null | tail -n 1 || true)"
}
# FUZZ_PARALLEL harnesses at once (default: one per core); each one's result
# is printed whole when it ends.
parallel=${FUZZ_PARALLEL:-$(nproc)}
mkdir -p "$dir/results"
failed=""
declare -A name_of=()
collect() {  # waits for any running harness
  local pid
  if wait -n -p pid; then :; else failed="$failed ${name_of[$pid]}"; fi
  cat "$dir/results/${name_of[$pid]}"
  unset "name_of[$pid]"
}
for h in $harnesses; do
  if [ ${#name_of[@]} -ge "$parallel" ]; then collect; fi
  fuzz_one "$h" >"$dir/results/$h" 2>&1 &
  name_of[$!]=$h
done
while [ ${#name_of[@]} -gt 0 ]; do collect; done
if [ -n "$failed" ]; then
  echo "== fuzzing failed:$failed"
  exit 1
fi
echo "== fuzzing passed: $harnesses"

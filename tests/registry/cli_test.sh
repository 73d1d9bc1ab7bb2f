#!/usr/bin/env bash
# End to end through the `hub` binary: registry serve (port 0), token create,
# publish (dir), search, versions, re-publish refused, token expiry, list and
# revoke, export-static; the server's log holds no token secret.
# Usage: cli_test.sh HUB_EXE HALF_PLUS_TWO_EXE
set -euo pipefail
hub=$1
h2=$2
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

token=$("$hub" registry token create --root "$work/root" --publisher Acme 2>/dev/null | tail -1)
[[ $token =~ ^hubt_[0-9a-f]{16}_[0-9a-f]{64}$ ]] || fail "token line: $token"
"$hub" registry serve --root "$work/root" --port 0 >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 100); do grep -qs listening "$work/out" && break; sleep 0.05; done
url=$(sed -n 's/^listening on //p' "$work/out")
[[ $url =~ ^http://127\.0\.0\.1:[0-9]+$ ]] || fail "listening line: $(cat "$work/out")"

"$h2" "$work/mod" >/dev/null
handle=$("$hub" publish "$work/mod" --registry "$url" --name acme/half --version 1.0.0 --token "$token" 2>/dev/null)
[ "$handle" = "acme/half@1.0.0" ] || fail "publish printed '$handle'"
HUB_TOKEN=$token HUB_REGISTRY=$url "$hub" publish "$work/mod" --name acme/half --version 1.0.1 >/dev/null 2>&1 \
  || fail "publish with \$HUB_TOKEN/\$HUB_REGISTRY"
set +e
"$hub" publish "$work/mod" --registry "$url" --name acme/half --version 1.0.0 --token "$token" >/dev/null 2>"$work/dup"
rc=$?
"$hub" publish "$work/mod" --registry "$url" --name acme/half --version 2.0.0 --token wrong >/dev/null 2>/dev/null
rc_auth=$?
set -e
[ $rc -ne 0 ] && grep -q "already published" "$work/dup" || fail "re-publish not refused (rc=$rc)"
[ $rc_auth -ne 0 ] || fail "wrong token accepted"
"$hub" search half --registry "$url" | grep -q "^acme/half .*1\.0\.1" || fail "search"
[ "$("$hub" versions acme/half --registry "$url" | wc -l)" -eq 2 ] || fail "versions"
"$hub" registry export-static --root "$work/root" --out "$work/www" >/dev/null
[ -f "$work/www/v1/index.json" ] && [ -f "$work/www/v1/modules/acme/half/versions.json" ] || fail "export"
# hub fetch resolves registry handles through $HUB_REGISTRY.
dir=$(HUB_CACHE_DIR="$work/cache" HUB_REGISTRY=$url "$hub" fetch -q acme/half@latest)
[ -f "$dir/module.pb" ] || fail "hub fetch acme/half@latest gave '$dir'"

# Tokens: an expiring one, listed without its secret, revoked by id.
short=$("$hub" registry token create --root "$work/root" --publisher acme --expires_in 12h 2>"$work/create.err" | tail -1)
short_id=${short:5:16}
grep -q "^token $short_id for publisher 'acme', expires 20[0-9-]*T" "$work/create.err" || fail "create: $(cat "$work/create.err")"
"$hub" publish "$work/mod" --registry "$url" --name acme/half --version 1.1.0 --token "$short" >/dev/null 2>&1 \
  || fail "publish with the expiring token"
"$hub" registry token list --root "$work/root" >"$work/list"
grep -q "^$short_id  acme  .*  20[0-9-]*T[0-9:]*Z  active$" "$work/list" || fail "token list: $(cat "$work/list")"
[ "$(grep -c "  never  *active$" "$work/list")" -eq 1 ] || fail "token list, no expiry: $(cat "$work/list")"
grep -q "${short:22}\|${token:22}" "$work/list" && fail "token list shows a secret"
"$hub" registry token revoke "$short_id" --root "$work/root" | grep -q "^token $short_id revoked$" || fail "revoke"
grep -q "^$short_id  .*  revoked 20" <("$hub" registry token list --root "$work/root") || fail "list after revoke"
set +e
"$hub" publish "$work/mod" --registry "$url" --name acme/half --version 1.2.0 --token "$short" >/dev/null 2>"$work/revoked"
rc_revoked=$?
"$hub" registry token create --root "$work/root" --publisher acme --expires_in 12x >/dev/null 2>"$work/bad_duration"
rc_duration=$?
"$hub" registry token revoke ffffffffffffffff --root "$work/root" >/dev/null 2>"$work/unknown"
rc_unknown=$?
set -e
[ $rc_revoked -ne 0 ] && grep -q "token revoked" "$work/revoked" || fail "revoked token accepted (rc=$rc_revoked)"
[ $rc_duration -ne 0 ] && grep -q -- "--expires_in: '12x' is not a duration" "$work/bad_duration" || fail "bad duration"
[ $rc_unknown -ne 0 ] && grep -q "no token with id ffffffffffffffff" "$work/unknown" || fail "unknown id"
grep -q "${short:22}\|${token:22}" "$work/err" && fail "the server log shows a token secret"
grep -q "published acme/half@1.1.0 .*token=$short_id" "$work/err" || fail "publish log line: $(cat "$work/err")"
echo "registry_cli: 1 passed, 0 failed"

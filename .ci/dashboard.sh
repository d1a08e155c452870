#!/usr/bin/env bash
# The `cosid serve` dashboard in a real browser: Debian's Chromium, headless, loads the page of a server whose own
# runtimes hold slots in two namespaces, and the script reads the slot table from the DOM Chromium rendered (each
# namespace's heading, a held row with its holder, fence and window, the recent events) and takes a screenshot:
#
#     bash .ci/dashboard.sh          # writes target/dashboard/dashboard.png
#
# Uses target/release/cosid (scripts/dist.sh builds it; built here if missing), or COSID_BIN. Installs Debian's `chromium` when it
# is missing (needs root). Chromium runs with the flags that keep it off the network (this machine has none).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

log() { echo "dashboard.sh: $*" >&2; }

bin="${COSID_BIN:-$root/target/release/cosid}"
if [ ! -x "$bin" ]; then
    log "building the cosid command (release)"
    cargo build --release -q -p cosid-cli
fi
if ! command -v chromium >/dev/null 2>&1; then
    log "installing chromium"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q chromium >&2 || { apt-get update -q >&2 && apt-get install -y -q chromium >&2; }
fi
chromium --version >&2

out="$root/target/dashboard"
work=$(mktemp -d "${TMPDIR:-/tmp}/cosid-dashboard.XXXXXX")
mkdir -p "$out"
serve_pid=""
cleanup() {
    [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

env -u COSID_STORE "$bin" serve --store "sqlite://$work/leases.db" --listen 127.0.0.1:0 \
    >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
url=""
for _ in $(seq 1 100); do
    url=$(sed -n 's/^cosid serve: listening on \(http:\/\/[^ ]*\).*/\1/p' "$work/serve.out" | head -1)
    [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$url" ] || { log "cosid serve did not start"; cat "$work/serve.err" >&2; exit 1; }
log "cosid serve at $url"

# The server's own runtimes take a slot in each namespace (and keep it while the server runs).
for ns in orders payments; do
    curl -fsS "$url/v1/namespaces/$ns/ids?n=3" >/dev/null
done

page="$url/dashboard?ns=orders&ns=payments"
browser() {
    timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$work/profile-$1" "${@:2}" 2>>"$work/chromium.log"
}
browser dom --dump-dom "$page" >"$work/dom.html"
browser shot --window-size=1280,720 --hide-scrollbars --screenshot="$out/dashboard.png" "$page" >/dev/null

fail() {
    log "FAILED: $*"
    log "the DOM Chromium rendered:"
    cat "$work/dom.html" >&2
    tail -n 20 "$work/chromium.log" >&2 || true
    exit 1
}
# The rows as the browser has them (it adds <tbody>): one table per namespace, in the order asked.
rows=$(grep -o '<tr class="[a-z]*"><td>[0-9]*</td><td>[a-z]*</td><td>[^<]*</td><td>[0-9]*</td><td>([0-9]*, [0-9]*\]</td><td>[^<]*</td></tr>' \
    "$work/dom.html" || true)
for ns in orders payments; do
    grep -q "<h2>namespace $ns</h2>" "$work/dom.html" || fail "no heading for namespace $ns"
done
held=$(grep -c '^<tr class="held"><td>0</td><td>held</td>' <<<"$rows" || true)
[ "$held" = 2 ] || fail "expected slot 0 held in both namespaces, found $held held rows: $rows"
# Each held row names a holder, a fence of 1 and a window whose ceiling is above its floor, expiring in seconds.
while IFS= read -r row; do
    [[ "$row" =~ \<td\>held\</td\>\<td\>([^<]+)\</td\>\<td\>1\</td\>\<td\>\(([0-9]+),\ ([0-9]+)\]\</td\>\<td\>([0-9.]+)\ s\</td\> ]] ||
        fail "a held row without holder, fence 1, window and expiry: $row"
    [ "${BASH_REMATCH[3]}" -gt "${BASH_REMATCH[2]}" ] || fail "an empty window: $row"
done <<<"$(grep '<td>held</td>' <<<"$rows")"

# The recent events of the server's runtimes: each namespace's acquisition.
for ns in orders payments; do
    grep -q "<td>$ns</td><td>ACQUIRED</td>" "$work/dom.html" || fail "no ACQUIRED event of namespace $ns"
done

# A PNG of the page, not an error page: the signature, and more than a blank page's few hundred bytes.
[ "$(head -c 8 "$out/dashboard.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "no PNG screenshot"
size=$(stat -c %s "$out/dashboard.png")
[ "$size" -gt 5000 ] || fail "the screenshot is only $size bytes"

log "the dashboard shows namespaces orders and payments, slot 0 held in each, in Chromium"
log "screenshot: target/dashboard/dashboard.png ($size bytes)"

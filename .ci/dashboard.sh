#!/usr/bin/env bash
# The `cosid serve` dashboard in a real browser, with tokens on: Debian's Chromium, headless, opens the page of a
# server whose own runtimes hold slots in two namespaces and whose API served a client. The token is handed to the
# page in the fragment (`#token=...`: a browser never sends a fragment, so no server or proxy sees or logs it); the
# page keeps it in sessionStorage, takes it out of the address and fetches /v1/dashboard with it. The script waits
# for the data (virtual time), reads from the DOM Chromium rendered each namespace's heading, "N of M slots used",
# a held row whose expiry counts down ("expires in ..."), an event in words and the chart's SVG, checks that the
# token is neither in the page nor in the server's log, and takes a screenshot:
#
#     bash .ci/dashboard.sh          # writes target/dashboard/dashboard.png
#
# Uses target/release/cosid (scripts/dist.sh builds it; built here if missing), or COSID_BIN. Installs Debian's
# `chromium` when it is missing (needs root). Chromium runs with the flags that keep it off the network.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

log() { echo "dashboard.sh: $*" >&2; }

# shellcheck source=scripts/release-env.sh
. "$root/scripts/release-env.sh"
bin="${COSID_BIN:-$release_target_dir/release/cosid}"
if [ ! -x "$bin" ]; then
    log "building the cosid command (release)"
    release_run cargo build --release -q -p cosid-cli
    release_link
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

token="dashboard-check-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
echo "$token" >"$work/tokens"
env -u COSID_STORE "$bin" serve --store "sqlite://$work/leases.db" --listen 127.0.0.1:0 --token-file "$work/tokens" \
    >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
url=""
for _ in $(seq 1 100); do
    url=$(sed -n 's/^cosid serve: listening on \(http:\/\/[^ ]*\).*/\1/p' "$work/serve.out" | head -1)
    [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$url" ] || { log "cosid serve did not start"; cat "$work/serve.err" >&2; exit 1; }
log "cosid serve at $url (tokens on)"

# The server's own runtimes take a slot in each namespace (and keep it while the server runs); a client of the API
# takes one in a third and gives it back (an acquisition in the chart). The token goes in a header, or in a file.
for ns in orders payments; do
    curl -fsS -H @- "$url/v1/namespaces/$ns/ids?n=3" >/dev/null <<<"Authorization: Bearer $token"
done
COSID_STORE="$url?token=$token" "$bin" next --namespace billing -n 2 >/dev/null
# Without the token the data is refused; the page itself opens.
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/dashboard")" = 401 ] || { log "the data answered without a token"; exit 1; }
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/dashboard")" = 200 ] || { log "the page needs a token"; exit 1; }

page="$url/dashboard?ns=orders&ns=payments#token=$token"
browser() {
    # The budget of virtual time lets the page fetch its data (the clock waits for the network) and tick.
    timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --virtual-time-budget=6000 --user-data-dir="$work/profile-$1" "${@:2}" 2>>"$work/chromium.log"
}
browser dom --dump-dom "$page" >"$work/dom.html"
browser shot --window-size=1280,1000 --hide-scrollbars --screenshot="$out/dashboard.png" "$page" >/dev/null

fail() {
    log "FAILED: $*"
    log "the DOM Chromium rendered:"
    cat "$work/dom.html" >&2
    tail -n 20 "$work/chromium.log" >&2 || true
    exit 1
}
check() { log "ok: $*"; }
dom="$work/dom.html"
grep -q 'id="status" class="ok">live' "$dom" || fail "the page does not say its data is live"
check "the page got its data with the token and says live"
for ns in orders payments billing; do
    grep -q "<h2>namespace $ns</h2>" "$dom" || fail "no heading for namespace $ns"
done
check "headings: namespace orders, payments (asked) and billing (a client's, watched)"
used=$(grep -o '<b>[0-9]* of [0-9]* slots used</b>' "$dom" | sed 's/<[^>]*>//g' || true)
[ "$(grep -c '^1 of 1024 slots used$' <<<"$used")" = 2 ] || fail "expected \"1 of 1024 slots used\" for orders and payments: $used"
check "usage: $(paste -sd ';' <<<"$used")"
# A held row: slot 0, its holder, fence 1, a window in UTC, and its expiry in words counted down by the page.
row=$(grep -o '<tr class="held">.*' "$dom" | sed 's/<\/tr>/&\n/g' | grep '^<tr class="held">' | head -1)
held_re='^<tr class="held"><td class="num">0</td><td><span class="pill">held</span></td><td class="mono">([^<]+)</td><td class="num">1</td><td class="mono">start → (20[0-9-]+ )?[0-9:]+Z</td><td[^>]*>(expires in [0-9]+ s)</td></tr>'
[[ "$row" =~ $held_re ]] ||
    fail "no held row with slot 0, holder, fence 1, window in UTC and \"expires in N s\": $row"
check "held row: slot 0, holder ${BASH_REMATCH[1]}, fence 1, ${BASH_REMATCH[3]}"
for ns in orders payments; do
    grep -q "<span class=\"ns\">$ns</span>slot 0 acquired (fence 1), window until 20" "$dom" ||
        fail "no event in words for namespace $ns"
done
check "events in words: \"slot 0 acquired (fence 1), window until ...\" for orders and payments"
grep -q '<li class="INFO"><time>[^<]*</time>1 acquired' "$dom" || fail "the client's acquisition is not told"
check "clients: \"1 acquired\" in the last 10 minutes"
grep -q '<div id="chart"><svg [^>]*role="img"' "$dom" || fail "no chart"
grep -q '<rect [^>]*fill="#2e6bd3"' "$dom" || fail "the chart has no bar of acquisitions"
check "chart: an inline SVG with a bar of acquisitions"
! grep -q "$token" "$dom" || fail "the token is in the page"
! grep -q "$token" "$work/serve.err" "$work/serve.out" || fail "the token is in the server's log"
check "the token is neither in the page (its address included) nor in the server's log"

# A PNG of the page, not an error page: the signature, and more than a blank page's few hundred bytes.
[ "$(head -c 8 "$out/dashboard.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "no PNG screenshot"
size=$(stat -c %s "$out/dashboard.png")
[ "$size" -gt 5000 ] || fail "the screenshot is only $size bytes"

log "the dashboard shows namespaces orders, payments and billing with tokens on, in Chromium"
log "screenshot: target/dashboard/dashboard.png ($size bytes)"

#!/bin/sh
# Every issuing figure of docs/performance.md in one run, beside the peers: Rust (cosid, ferroid, UUIDv7, ids/s
# against k, the clock's idle cost and the machine: bench/), C (tests/c/bench.sh), Python (bindings/python/bench.py)
# and Node (bindings/node/bench.mjs). Prints figures; asserts nothing. Not run in CI except `--quick`.
#
#   scripts/bench.sh            # a few minutes, plus the release builds
#   scripts/bench.sh --quick    # a smoke run
#
# Python runs if `$PYTHON -c 'import cosid'` works (pip install ./bindings/python, peers: uuid-utils snowflake-id);
# Node runs if the addon is built (cd bindings/node && npm ci && npm run build). Otherwise each says how.
# The fleet harness (bench/src/bin/fleet.rs: storms of real runtimes, steady renewals, first id) runs against a
# temporary SQLite file and every store server whose COSID_TEST_*_URL is set (.ci/services/*.sh print them);
# `--quick` runs it small (64 holders, 2 s per store). The serve harness (bench/src/bin/serve.rs) drives one
# `cosid serve` in front of a temporary SQLite file.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
quick=""
seconds=2
if [ "${1:-}" = "--quick" ]; then
    quick="--quick"
    seconds=0.5
fi
python="${PYTHON:-python3}"

echo "== Rust"
cargo build -q --release -p cosid-bench
"$root/target/release/cosid-bench" $quick

echo
echo "== C (and the Rust call measured the same way)"
if command -v cc >/dev/null 2>&1 && command -v make >/dev/null 2>&1; then
    sh "$root/tests/c/bench.sh" "$seconds"
else
    echo "(no C compiler or make: skipped)"
fi

echo
echo "== Python"
if "$python" -c 'import cosid' >/dev/null 2>&1; then
    (cd "$root/bindings/python" && "$python" bench.py $quick)
else
    echo "(cosid is not installed for $python: pip install './bindings/python[bench]', or set PYTHON)"
fi

echo
echo "== Node"
if command -v node >/dev/null 2>&1 && ls "$root"/bindings/node/cosid*.node >/dev/null 2>&1; then
    (cd "$root/bindings/node" && node bench.mjs $quick)
else
    echo "(the Node addon is not built: cd bindings/node && npm ci && npm run build)"
fi

echo
echo "== Fleet: real runtimes against each store (SQLite, and every COSID_TEST_*_URL set)"
fleet_dir=$(mktemp -d)
set -- --store "sqlite://$fleet_dir/fleet.db"
features=""
for name in HTTP REDIS POSTGRES MYSQL ETCD ZOOKEEPER MONGODB; do
    url=$(eval "printf '%s' \"\${COSID_TEST_${name}_URL:-}\"")
    if [ -n "$url" ]; then
        set -- "$@" --store "$url"
        [ "$name" = HTTP ] || features="--features stores"
    fi
done
# Builds the cosid command beside it, so the first-id figure is a real process start.
cargo build -q --release -p cosid-bench $features --bin cosid-fleet
cargo build -q --release -p cosid-cli $features
"$root/target/release/cosid-fleet" $quick "$@"
rm -rf "$fleet_dir"

echo
echo "== cosid serve: requests/s and latency of one server, what a flood from one client costs another"
cargo build -q --release -p cosid-bench --bin cosid-serve-bench
"$root/target/release/cosid-serve-bench" $quick

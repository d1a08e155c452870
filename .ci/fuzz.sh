#!/usr/bin/env bash
# Fuzzing, short runs for CI (docs/reliability.md says what each target covers):
#
#   1. the stable smoke run: every fuzz target's body over its committed corpus plus seeded random inputs
#      (`cargo test` in fuzz/; prints its seed, COSID_FUZZ_SEED replays it);
#   2. libFuzzer (cargo-fuzz, nightly Rust, AddressSanitizer): each target for COSID_FUZZ_SECONDS (default 12) from
#      its committed corpus; new inputs go to fuzz/found/<target>/ (not committed), a crash to fuzz/artifacts/;
#   3. tests/c/fuzz_api.c: random call sequences on the C API, built with -fsanitize=address,undefined.
#
# The Redis and etcd record targets run when COSID_TEST_REDIS_URL / COSID_TEST_ETCD_URL are set (scripts/test-all.sh
# starts the servers and sets them; `eval "$(bash .ci/services/redis.sh)"` does it by hand).
#
# Step 2 needs a nightly toolchain and cargo-fuzz: the script installs cargo-fuzz (`cargo install cargo-fuzz
# --locked`, a few minutes) and tries `rustup toolchain install nightly` when they are missing; if that fails it
# says so and skips step 2 (steps 1 and 3 still run). COSID_FUZZ_REQUIRE_LIBFUZZER=1 makes that a failure.
#
# COSID_FUZZ_LIBFUZZER=0 skips step 2: scripts/test-all.sh sets it unless the caller set COSID_FUZZ_LIBFUZZER=1,
# as CI's budget has no room for its build (about 5 minutes, and cargo-fuzz's install on a fresh machine) for
# 12 seconds per target; steps 1 and 3 run every target and the C API on every run.
#
# Usage: .ci/fuzz.sh [SECONDS_PER_TARGET]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-${COSID_FUZZ_SECONDS:-12}}"
step() { printf '\n==== %s\n' "$*"; }
passed=0
failed=0

features=()
if [ -n "${COSID_TEST_REDIS_URL:-}" ] || [ -n "${COSID_TEST_ETCD_URL:-}" ]; then
    features=(--features servers)
fi

step "fuzz: every target over its corpus and seeded random inputs (stable)"
# The root target folder: the smoke run shares the core's build artifacts.
CARGO_TARGET_DIR="$PWD/target" cargo test --manifest-path fuzz/Cargo.toml "${features[@]}" -- --nocapture

have_libfuzzer=1
if [ "${COSID_FUZZ_LIBFUZZER:-1}" = 0 ]; then
    step "fuzz: libFuzzer skipped (COSID_FUZZ_LIBFUZZER=0; COSID_FUZZ_LIBFUZZER=1 bash scripts/test-all.sh runs it)"
    have_libfuzzer=skip
else
    step "fuzz: libFuzzer, ${seconds}s per target"
fi
if [ "$have_libfuzzer" = skip ]; then
    :
elif ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz.sh: no nightly toolchain; trying rustup toolchain install nightly"
    timeout 600 rustup toolchain install nightly --profile minimal || have_libfuzzer=0
fi
if [ "$have_libfuzzer" = 1 ] && ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz"
    timeout 1200 cargo install cargo-fuzz --locked || have_libfuzzer=0
fi
if [ "$have_libfuzzer" = 0 ]; then
    echo "fuzz.sh: SKIPPED the libFuzzer runs: nightly Rust or cargo-fuzz is not available here"
    if [ "${COSID_FUZZ_REQUIRE_LIBFUZZER:-0}" = 1 ]; then
        exit 1
    fi
elif [ "$have_libfuzzer" = 1 ]; then
    targets=(id_text layout namespace config state_file sqlite_records http_wire)
    [ -n "${COSID_TEST_REDIS_URL:-}" ] && targets+=(redis_records)
    [ -n "${COSID_TEST_ETCD_URL:-}" ] && targets+=(etcd_records)
    (cd fuzz && cargo +nightly fuzz build -O "${features[@]}")
    for t in "${targets[@]}"; do
        mkdir -p "fuzz/found/$t"
        log="fuzz/found/$t.log"
        # The first folder receives new inputs; the committed corpus is only read.
        if (cd fuzz && cargo +nightly fuzz run -O "${features[@]}" "$t" "found/$t" "corpus/$t" -- \
            -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1) >"$log" 2>&1; then
            runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
            echo "fuzz.sh: $t: $runs runs in ${seconds}s, no crash"
            passed=$((passed + 1))
        else
            echo "fuzz.sh: $t: FAILED (crash input under fuzz/artifacts/$t/); the end of its log:"
            tail -40 "$log"
            failed=$((failed + 1))
        fi
    done
fi

step "fuzz: random call sequences on the C API under AddressSanitizer and UBSan"
# scripts/dist.sh's release build when it ran in this target folder (glibc 2.17, Zig: scripts/release-env.sh),
# found fresh; else a native one.
root=$PWD
# shellcheck source=scripts/release-env.sh
. scripts/release-env.sh
release_run cargo build -q --release -p cosid-ffi
release_link
# libcosid.so carries a SONAME: link against a folder that holds it under both names, as an installed one is.
stage="$PWD/target/c-fuzz/lib"
mkdir -p "$stage"
cp target/release/libcosid.so "$stage/libcosid.so"
soname=$(objdump -p "$stage/libcosid.so" | awk '/SONAME/ {print $2}')
[ -n "$soname" ] && ln -sf libcosid.so "$stage/$soname"
${CC:-cc} -std=c11 -Wall -Wextra -Werror -pedantic -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
    -fno-sanitize-recover=undefined -Iinclude tests/c/fuzz_api.c -o target/c-fuzz/fuzz_api \
    -L"$stage" -lcosid -Wl,-rpath,"$stage" -pthread
if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    target/c-fuzz/fuzz_api "${COSID_FUZZ_STEPS:-100000}"; then
    passed=$((passed + 1))
else
    echo "fuzz.sh: fuzz_api FAILED (replay with the seed it printed: COSID_FUZZ_SEED=<seed>)"
    failed=$((failed + 1))
fi

echo "fuzz: $passed passed, $failed failed"
[ "$failed" = 0 ]

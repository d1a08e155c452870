#!/usr/bin/env bash
# Runs every test of the project. Installs and starts what the tests need (store servers from Debian's packages,
# Python and Node build tools from their registries); servers listen on 127.0.0.1 only and are left running, so a
# second run reuses them. Needs root (or sudo-less apt) for the first install of the servers.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step prints its duration when the next one starts, and the run ends with a table of them all, so a slow
# step shows up in CI's log at a glance.
start=$SECONDS
current=""
current_start=$SECONDS
timings=()
finish_step() {
    if [ -n "$current" ]; then
        local took=$((SECONDS - current_start))
        timings+=("$(printf '%4dm%02ds  %s' $((took / 60)) $((took % 60)) "$current")")
        printf '==== done in %dm%02ds: %s\n' $((took / 60)) $((took % 60)) "$current"
    fi
}
step() {
    finish_step
    current="$*"
    current_start=$SECONDS
    printf '\n==== %s\n' "$*"
    # Free disk at each step's start: a full disk shows up as a linker's bus error, far from its cause.
    df -h --output=avail . | tail -1 | xargs printf '     disk free: %s\n'
}
summary() {
    local status=$?
    finish_step
    current=""
    local took=$((SECONDS - start))
    printf '\n==== step durations\n'
    printf '%s\n' "${timings[@]}"
    printf '%4dm%02ds  total (exit %d)\n' $((took / 60)) $((took % 60)) "$status"
}
trap summary EXIT

# A fresh clone builds each crate once: incremental compilation data would only take disk and time.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# The store servers the tests run against. Each script reuses a server that answers and starts one that does not,
# so this runs again before each later step that uses them: a server that exited since (a crash, or a signal meant
# for something else) is started again, and its script prints the end of the old one's log, instead of the step
# failing on a refused connection far from the cause.
servers() {
    # etcd first: its script also installs protoc, which the etcd tests' own gRPC client needs.
    eval "$(bash .ci/services/etcd.sh)"
    eval "$(bash .ci/services/redis.sh)"
    eval "$(bash .ci/services/postgres.sh)"
    eval "$(bash .ci/services/mariadb.sh)"
    eval "$(bash .ci/services/zookeeper.sh)"
    # After PostgreSQL, which it stores its documents in; built from the Go module proxy the first time.
    eval "$(bash .ci/services/ferretdb.sh)"
}

step "store servers (Redis, PostgreSQL, MariaDB, etcd, ZooKeeper, FerretDB for MongoDB) on 127.0.0.1"
servers

step "tools: promtool (from Debian's prometheus package, unpacked: no daemon)"
# cli/tests/serve_limits.rs checks the text of cosid serve's /metrics with `promtool check metrics`.
if ! command -v promtool >/dev/null 2>&1; then
    tools="$PWD/${CARGO_TARGET_DIR:-target}/ci-tools"
    if [ ! -x "$tools/usr/bin/promtool" ]; then
        mkdir -p "$tools"
        (cd "$tools" && { apt-get download prometheus >/dev/null 2>&1 ||
            { apt-get update -qq && apt-get download prometheus >/dev/null; }; } &&
            dpkg-deb -x prometheus_*.deb . && rm -f prometheus_*.deb)
    fi
    export PATH="$tools/usr/bin:$PATH"
fi
promtool --version | head -1
export COSID_REQUIRE_PROMTOOL=1

step "rust: format and lints"
cargo fmt --all -- --check
# The Node addon's crate too: one check build for all (.ci/node.sh then skips its own).
cargo clippy -p cosid -p cosid-cli -p cosid-bench -p cosid-node --all-targets --all-features -- -D warnings
export COSID_NODE_LINTED=1

step "rust: core, cli and chaos-harness tests, every store against its real server"
# The chaos harness's own tests (its checker's planted faults) here, on the debug build: .ci/chaos.sh then builds
# only the harness's binary, not a second release build for its tests.
cargo test -p cosid -p cosid-cli -p cosid-chaos --all-features

step "docs: the mdBook site from docs/ (target/book), every link and anchor, the lists of stores, settings and codes against the code, every sample compiled, the start page's command lines"
# Here, while the test build is on disk: the Rust samples compile against its dependencies, and the start page's
# command lines run on its `cosid`.
bash .ci/docs.sh

# No later step uses the test build (they use the release build of dist), so its disk is freed before the release
# build takes as much again; COSID_KEEP_TEST_BUILD=1 keeps it, for a developer who reruns this script.
if [ "${COSID_KEEP_TEST_BUILD:-0}" != 1 ]; then
    rm -rf "${CARGO_TARGET_DIR:-target}/debug"
fi

step "dist: one release build for glibc 2.17 (C library, Python module, Node addon, CLI) packaged into dist/"
# The C, Python and Node steps below use this build and test the artefacts it made: it is cargo-zigbuild's, for the
# target x86_64-unknown-linux-gnu, and the steps that build with cargo run it in the environment dist.sh recorded
# (scripts/release-env.sh), so cargo finds it fresh; its files are hard-linked into target/release for the others.
bash scripts/dist.sh

# `cosid serve` from that build, in front of an SQLite file: the C, Python and Node store tests run through it
# with the `http://` store, as they run on each store server above.
eval "$(bash .ci/services/serve.sh)"

step "version: one version number and one MSRV across Cargo, PyPI, npm, the header and the CLI"
bash scripts/check-version.sh
# The crates as crates.io would take them (--no-verify: the build above is the verification of the sources).
cargo package --locked --no-verify -p cosid -p cosid-cli -p cosid-ffi >/dev/null

step "C ABI: libcosid, header, C tests (plain, sanitizers, valgrind), install and example"
servers
COSID_C_NO_BENCH=1 bash .ci/c.sh

step "Python package"
servers
bash .ci/python.sh

step "Node package"
servers
bash .ci/node.sh

step "Java binding (FFM over libcosid): tests, jar and sources jar, example"
servers
bash .ci/java.sh

step "Go binding: vet, tests (processes on SQLite and Redis, conformance), static link, module zip, benchmark"
servers
bash .ci/go.sh

step "artefacts: dist/ installed without Rust (venv, npm, pnpm, C prefix with pkg-config and CMake, CLI)"
bash .ci/artefacts.sh

step "dashboard: cosid serve's page in headless Chromium with a token (slots used, holders, events, chart read from the DOM; a screenshot)"
bash .ci/dashboard.sh

step "deploy: container file, Kubernetes manifests and systemd unit checked; cosid serve run as they run it"
bash .ci/deploy.sh

step "interop: migration from the real CosId (Java)"
bash .ci/interop.sh

step "chaos: real Redis under faults, and the negative control"
bash .ci/chaos.sh

step "fuzz: every target over its corpus and seeded random inputs, the C API under sanitizers (libFuzzer with COSID_FUZZ_LIBFUZZER=1)"
COSID_FUZZ_LIBFUZZER="${COSID_FUZZ_LIBFUZZER:-0}" bash .ci/fuzz.sh

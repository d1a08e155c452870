#!/usr/bin/env bash
# The C ABI: builds libcosid, checks the committed header against cbindgen and runs the crate's tests, runs the C
# tests (plain, ASan+UBSan, valgrind, static link, the header alone as C99/C11/C++11/C++17), installs into a
# temporary prefix and builds the example there with pkg-config (cc, make, CMake, static), and prints the
# benchmark's figures (C beside Rust; no assertion).
#
#     bash .ci/c.sh            (COSID_C_NO_BENCH=1 skips the benchmark)
#
# Needs a C and C++ compiler, make, pkg-config, cmake and valgrind; installs the missing ones from Debian's packages
# when run as root. The tests need no server: they use SQLite files in temporary folders.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export CARGO_TERM_COLOR=never

step() { printf '\n==== c: %s\n' "$*"; }

missing=()
for tool in cc:gcc c++:g++ make:make pkg-config:pkg-config cmake:cmake valgrind:valgrind objdump:binutils; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
    step "installing ${missing[*]}"
    if [ "$(id -u)" != 0 ]; then
        echo "c.sh: missing ${missing[*]}; install them (apt-get install -y ${missing[*]})" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

step "build libcosid (release)"
# scripts/dist.sh's build when it ran in this target folder (for glibc 2.17, with Zig: release_run gives cargo its
# environment, so cargo finds that build fresh instead of building it again natively), else a native one.
# shellcheck source=scripts/release-env.sh
. scripts/release-env.sh
release_run cargo build -p cosid-ffi --release
release_link

step "exports: libcosid.so exports the cosid_* functions and nothing else (ffi/build.rs)"
lib=$release_dir/libcosid.so
others=$(nm -D --defined-only "$lib" | awk '$NF !~ /^cosid_/ { print $NF }')
[ -z "$others" ] || { echo "c.sh: $lib exports more than cosid_*:" $others >&2; exit 1; }
echo "$(nm -D --defined-only "$lib" | wc -l) symbols exported, every one cosid_*"

step "rust: cosid-ffi unit tests and the header check (include/cosid.h is what cbindgen generates)"
cargo test -p cosid-ffi
cargo clippy -p cosid-ffi --all-targets --no-deps -- -D warnings

step "C tests: header alone, plain, ASan+UBSan, valgrind, static"
# The Makefile's own `cargo build --release`, in the same environment, is a no-op; it links the tests against the
# library of $release_dir.
release_run make -C tests/c check LIBDIR="$release_dir"

step "install into a temporary prefix, and build the example with pkg-config"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cosid-c-ci.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
PREFIX="$prefix" COSID_SKIP_BUILD=1 scripts/install-c.sh
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
export COSID_STORE="sqlite://$tmp/leases.db"
export COSID_NAMESPACE=example
passed=0
failed=0
check() {
    local name=$1
    shift
    echo "-- $name"
    if "$@"; then passed=$((passed + 1)); else echo "FAILED: $name"; failed=$((failed + 1)); fi
}
run_example() { # binary, expected id lines
    local out
    out=$("$1" 3) || return 1
    printf '%s\n' "$out"
    [ "$(printf '%s\n' "$out" | grep -cE '^[0-9]+  [0-9]{17}-[0-9]+-[0-9]+  [0-9A-Za-z]{11}$')" = 3 ]
}
# The documented one-liner.
check "cc app.c \$(pkg-config --cflags --libs cosid)" \
    sh -c "cc -Wall -Wextra -Werror -o '$tmp/app-cc' examples/c/app.c \$(pkg-config --cflags --libs cosid)"
check "run (cc)" env LD_LIBRARY_PATH="$prefix/lib" sh -c "$(declare -f run_example); run_example '$tmp/app-cc'"
check "make" make -s -C examples/c -B app
check "run (make)" env LD_LIBRARY_PATH="$prefix/lib" sh -c "$(declare -f run_example); run_example examples/c/app"
rm -f examples/c/app
check "cmake" sh -c "cmake -S examples/c -B '$tmp/cmake' >/dev/null && cmake --build '$tmp/cmake' >/dev/null"
check "run (cmake)" sh -c "$(declare -f run_example); run_example '$tmp/cmake/app'"
# Statically: libcosid.a and the Libs.private of cosid.pc.
check "static link" sh -c "cc -o '$tmp/app-static' examples/c/app.c \$(pkg-config --cflags cosid) \
    \$(pkg-config --static --libs cosid | sed 's/-lcosid /-l:libcosid.a /')"
check "run (static)" sh -c "$(declare -f run_example); run_example '$tmp/app-static' && ! ldd '$tmp/app-static' | grep -q libcosid"
echo "c-install: $passed passed, $failed failed"
[ "$failed" = 0 ]

if [ "${COSID_C_NO_BENCH:-0}" != 1 ]; then
    step "benchmark (figures only)"
    tests/c/bench.sh 0.5
fi

#!/usr/bin/env bash
# The Go binding (bindings/go): builds it against the C library through pkg-config, as a user does, and runs
# gofmt, go vet and go test (the API, goroutines, several processes on one SQLite file, Redis when
# COSID_TEST_REDIS_URL is set, the conformance table, the examples), the example program linked against
# libcosid.so and statically (-tags cosid_static: readelf must show no libcosid.so), the Go module archive
# (bindings/go/dist.sh), and the benchmark's figures once (no assertion).
#
#     bash .ci/go.sh            (COSID_GO_NO_BENCH=1 skips the benchmark; COSID_GO_RACE=1 adds a -race run)
#
# The C library: the C tarball in dist/ (or $COSID_DIST_DIR, as for scripts/dist.sh) when scripts/dist.sh made
# one (as in CI, just before), else the release build in ${CARGO_TARGET_DIR:-target}/release installed into a
# temporary prefix (built first if missing). The Go module and build caches live in
# ${CARGO_TARGET_DIR:-target}/go-cache, so later runs reuse the downloads.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

start=$SECONDS
step_start=$SECONDS
current=""
timings=()
step() {
    if [ -n "$current" ]; then
        timings+=("$(printf '%4ds  %s' $((SECONDS - step_start)) "$current")")
        echo "go: $current took $((SECONDS - step_start)) s"
    fi
    current=$*
    step_start=$SECONDS
    [ -z "$current" ] || printf '\n==== go: %s\n' "$*"
}
summary() {
    local status=$1
    step ""
    printf '\n==== go: step durations\n'
    printf '%s\n' "${timings[@]}"
    printf '%4ds  total (exit %d)\n' $((SECONDS - start)) "$status"
}
tmp=""
cleanup() {
    local status=$?
    [ -z "$tmp" ] || rm -rf "$tmp"
    summary "$status"
}
trap cleanup EXIT

command -v go >/dev/null || { echo "go.sh: no go command on PATH" >&2; exit 1; }
for tool in pkg-config:pkg-config cc:gcc readelf:binutils; do
    if ! command -v "${tool%%:*}" >/dev/null 2>&1; then
        [ "$(id -u)" = 0 ] || { echo "go.sh: missing ${tool#*:}" >&2; exit 1; }
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${tool#*:}" >/dev/null
    fi
done

target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in /*) ;; *) target=$root/$target ;; esac
export GOFLAGS=-mod=mod
export GOMODCACHE=$target/go-cache/mod
export GOCACHE=$target/go-cache/build
export CGO_ENABLED=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cosid-go-ci.XXXXXX")

step "the C library (dist/ tarball, else the release build)"
version=$(sed -n 's/^#define COSID_VERSION "\(.*\)"$/\1/p' include/cosid.h)
tarball=${COSID_DIST_DIR:-$root/dist}/libcosid-$version-x86_64-linux-gnu.tar.gz
if [ -f "$tarball" ]; then
    tar -C "$tmp" -xzf "$tarball"
    prefix=$tmp/libcosid-$version-x86_64-linux-gnu
    echo "using $tarball"
else
    # scripts/dist.sh's build (glibc 2.17, Zig), else one made here in its environment (scripts/release-env.sh).
    # shellcheck source=scripts/release-env.sh
    . "$root/scripts/release-env.sh"
    if [ ! -f "$target/release/libcosid.so" ] || [ ! -f "$target/release/libcosid.a" ]; then
        release_run cargo build --release -p cosid-ffi
        release_link
    fi
    prefix=$tmp/prefix
    PREFIX="$prefix" COSID_SKIP_BUILD=1 scripts/install-c.sh >/dev/null
    echo "using $target/release, installed into a temporary prefix"
fi
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# The go command caches a cgo package with the flags pkg-config gave, but does not hash pkg-config's output nor the
# library: a later run with another prefix (this temporary one) or another build of libcosid would link what the
# cache remembers. CGO_CFLAGS is hashed, so a define naming the prefix and the library's checksum keys the cache.
key=$( { echo "$prefix"; cat "$prefix/lib/libcosid.a" "$prefix"/lib/libcosid.so.*.*.*; } | sha256sum | cut -c1-16)
export CGO_CFLAGS="-O2 -g -DCOSID_GO_BUILD_KEY=$key"
export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
pkg-config --modversion cosid
# No test touches the user's state directory; a stray default store would land here.
export XDG_STATE_HOME=$tmp/state

cd bindings/go

step "gofmt and go vet"
unformatted=$(gofmt -l . )
[ -z "$unformatted" ] || { echo "gofmt: not formatted: $unformatted" >&2; exit 1; }
go vet ./...
go vet -tags cosid_static ./...
(cd bench && go vet ./...)

step "go test (API, goroutines, processes on one SQLite file, conformance table, examples)"
go test -count=1 ./... 2>&1 | tee "$tmp/test.log"
go test -count=1 -v -run 'TestConformance$' . 2>&1 | grep -E '^\s+conformance_test.go:[0-9]+: conformance:' || {
    echo "go.sh: no conformance summary" >&2
    exit 1
}

if [ "${COSID_GO_RACE:-0}" = 1 ]; then
    # Off by default: building the standard library with -race takes about a minute on a cold cache.
    step "go test -race (goroutines, Close racing calls, events)"
    go test -count=1 -race -run 'TestGoroutines|TestCloseRaces|TestEvents|TestRuntimeIssues|TestProcessWide|TestUnreachable' .
fi

step "the example program, linked against libcosid.so and statically (-tags cosid_static)"
export COSID_STORE="sqlite://$tmp/example.db" COSID_NAMESPACE=go-example
go build -o "$tmp/example-shared" ./cmd/cosid-example
needed=$(readelf -d "$tmp/example-shared")
grep -q 'NEEDED.*libcosid\.so' <<<"$needed" || { echo "go.sh: the shared build does not need libcosid.so" >&2; exit 1; }
"$tmp/example-shared" 3
go build -tags cosid_static -o "$tmp/example-static" ./cmd/cosid-example
needed=$(readelf -d "$tmp/example-static")
grep NEEDED <<<"$needed"
if grep -q 'NEEDED.*libcosid' <<<"$needed" || ldd "$tmp/example-static" | grep libcosid; then
    echo "go.sh: the static build still needs libcosid.so" >&2
    exit 1
fi
# Run where no libcosid.so can be found at all.
env -u LD_LIBRARY_PATH "$tmp/example-static" 3 | tee "$tmp/static.out"
[ "$(grep -cE '^[0-9]+  [0-9]{17}-[0-9]+-[0-9]+  [0-9A-Za-z]{11}$' "$tmp/static.out")" = 3 ]
# The package's own tests, statically linked too.
env -u LD_LIBRARY_PATH go test -count=1 -tags cosid_static -run 'TestVersion|TestTextForms|TestRuntimeIssues|Example' .
unset COSID_STORE COSID_NAMESPACE

step "the Go module archive (bindings/go/dist.sh)"
bash dist.sh "$tmp/dist"
ls -l "$tmp/dist"
listing=$(python3 -m zipfile -l "$tmp/dist"/cosid-go-v*.zip)
grep -q 'bindings/go@v[0-9.]*/cosid.go ' <<<"$listing" || { echo "go.sh: the module zip lacks cosid.go" >&2; exit 1; }
! grep -q '/bench/' <<<"$listing" || { echo "go.sh: the module zip holds bench/, a module of its own" >&2; exit 1; }
# A program outside the repository that takes the module from the zip, served from a folder as the module proxy
# serves it (the go command checks the zip's format and paths), and links it statically.
module=$(sed -n 's/^module //p' go.mod)
zip=$(ls "$tmp/dist"/cosid-go-v*.zip)
mversion=$(basename "$zip" .zip)
mversion=${mversion#cosid-go-}
mkdir -p "$tmp/proxy/$module/@v" "$tmp/consumer"
cp "$zip" "$tmp/proxy/$module/@v/$mversion.zip"
cp go.mod "$tmp/proxy/$module/@v/$mversion.mod"
echo "$mversion" > "$tmp/proxy/$module/@v/list"
printf '{"Version":"%s"}\n' "$mversion" > "$tmp/proxy/$module/@v/$mversion.info"
printf 'module example.com/consumer\n\ngo 1.24\n' > "$tmp/consumer/go.mod"
printf 'package main\n\nimport (\n\t"fmt"\n\n\tcosid "%s"\n)\n\nfunc main() { fmt.Println(cosid.ToBase62(4194316295), cosid.Version()) }\n' "$module" > "$tmp/consumer/main.go"
(cd "$tmp/consumer" && export GOPROXY="file://$tmp/proxy" GONOSUMDB=github.com/cosid-rs GOMODCACHE="$tmp/modcache" &&
    go get "$module@$mversion" && go build -tags cosid_static -o consumer . && env -u LD_LIBRARY_PATH ./consumer &&
    go clean -modcache)

if [ "${COSID_GO_NO_BENCH:-0}" != 1 ]; then
    step "benchmark beside sonyflake and bwmarrin/snowflake (figures only)"
    COSID_GO_BENCH_COUNT=20000 COSID_GO_BENCH_SUSTAINED=2000 bash bench.sh
fi
step ""
echo "go: all passed"

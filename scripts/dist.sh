#!/usr/bin/env bash
# Builds every release artefact into dist/ from a checkout, with ONE release build of the Rust code:
#
#   dist/cosid-VERSION-cp39-abi3-manylinux_2_X_x86_64.whl    Python, abi3 wheel (CPython 3.9 and later)
#   dist/cosid-VERSION.tar.gz                                Python sdist (builds from source: needs Rust)
#   dist/cosid-VERSION.tgz                                   npm: the package (loader, types; no install script)
#   dist/cosid-linux-x64-gnu-VERSION.tgz                     npm: its platform package, the prebuilt addon
#   dist/libcosid-VERSION-x86_64-linux-gnu.tar.gz            C: lib/, include/, pkg-config and CMake files
#   dist/cosid-cli-VERSION-x86_64-linux-gnu.tar.gz           the `cosid` command, every store
#   dist/cosid-VERSION.jar                                   Java: the jar, libcosid.so for linux-x86_64 inside
#   dist/cosid-VERSION-sources.jar                           Java: its sources
#   dist/cosid-go-vVERSION.zip                               Go: the module zip, as the module proxy serves it
#   dist/cosid-debug-VERSION-x86_64-linux-gnu.tar.gz         debug info of the stripped .so, .node and CLI
#   dist/SHA256SUMS
#
#     scripts/dist.sh            (COSID_DIST_DIR=... for another folder than dist/)
#
# `cargo build --release` builds the C library, the Node addon and the CLI in one go (one core, every store);
# maturin builds the Python module's own crate (and pyo3) on top of it, and npm and tar only package. Needs the
# Rust toolchain, protoc (etcd's client), Python 3.9+ with venv, Node 20+ with npm, objdump, a JDK 22+ and Maven
# (the jar). maturin comes from PyPI into target/dist-tools (pinned below), reused by later runs. docs/install.md
# says what each artefact is.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CARGO_TERM_COLOR=never

MATURIN_VERSION=1.16.0
out=${COSID_DIST_DIR:-$root/dist}
target=${CARGO_TARGET_DIR:-$root/target}
release=$target/release
stage=$target/dist-stage
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
[ -n "$version" ] || { echo "dist: no version in [workspace.package] of Cargo.toml" >&2; exit 1; }
triple=x86_64-linux-gnu
case "$(uname -sm)" in
    "Linux x86_64") node_platform=linux-x64-gnu ;;
    *) echo "dist: only Linux x86_64 (glibc) is packaged so far, not $(uname -sm)" >&2; exit 1 ;;
esac

# Every tool the steps below use, checked before anything is built: one line per missing tool, naming the Debian
# package that provides it (the build itself takes many minutes and would otherwise stop at the first one missing).
missing=()
need() { # tool, Debian package
    command -v "$1" >/dev/null 2>&1 || missing+=("$1 (Debian package: $2)")
}
need cargo "cargo if it is Rust 1.89 or newer; else rustup from https://rustup.rs"
need rustc "rustc if it is 1.89 or newer; else rustup from https://rustup.rs"
need cc "gcc (the bundled SQLite and ring are C)"
need protoc "protobuf-compiler (etcd's client)"
need python3 "python3"
need node "nodejs (20 or newer)"
need npm "npm"
need mvn "maven"
for tool in objdump objcopy strip nm; do need "$tool" binutils; done
need tar tar
need gzip gzip
for tool in sha256sum install; do need "$tool" coreutils; done
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import sys; sys.exit(sys.version_info < (3, 9))' ||
        missing+=("Python 3.9 or newer, not $(python3 -V 2>&1) (Debian package: python3)")
    python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=("python3's venv with pip (Debian package: python3-venv)")
fi
if command -v node >/dev/null 2>&1 && [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
    missing+=("Node 20 or newer, not $(node --version) (Debian package: nodejs, from NodeSource's repository on Debian 12)")
fi
# shellcheck source=bindings/java/jdk.sh
. bindings/java/jdk.sh
find_jdk 2>/dev/null ||
    missing+=("a JDK 22 or newer for the jar (Debian package: openjdk-25-jdk, or temurin-25-jdk from Adoptium; or set JAVA_HOME)")
if [ ${#missing[@]} -gt 0 ]; then
    printf 'dist: missing: %s\n' "${missing[@]}" >&2
    echo "dist: nothing was built; install the packages above and run again" >&2
    exit 1
fi

step_start=$SECONDS
step() {
    [ -z "${current:-}" ] || echo "dist: $current took $((SECONDS - step_start)) s"
    current=$*
    step_start=$SECONDS
    printf '\n==== dist: %s\n' "$*"
}

rm -rf "$out" "$stage"
mkdir -p "$out" "$stage"

# What ships is stripped of its symbols and debug info; both are kept in a file of their own, NAME.debug, in the
# debug tarball, and the stripped file names it in its .gnu_debuglink section: gdb, perf and eu-stack find it when
# it sits beside the file or in a .debug/ folder next to it.
debug_name=cosid-debug-$version-$triple
debug_stage=$stage/$debug_name
mkdir -p "$debug_stage"
split_debug() { # file to strip in place, name of its debug file
    objcopy --only-keep-debug "$1" "$debug_stage/$2"
    strip --strip-all "$1"
    objcopy --add-gnu-debuglink="$debug_stage/$2" "$1"
}

step "cargo build --release: libcosid, the Node addon, the CLI (every store)"
# The Python module is built by maturin below, on this build: its crate adds only pyo3 to the same feature set
# (`cargo tree -e features` shows it), so the core and every shared dependency are compiled once. It is left out
# here because maturin builds pyo3 with its own environment: building it here too would rebuild pyo3 each time.
# napi-derive writes the addon's TypeScript definitions into $typedefs as it compiles the addon's crate (the two
# variables rebuild that crate alone): .ci/node.sh checks the committed index.d.ts against them instead of building
# the addon a second time with `napi build`.
typedefs=$target/napi-type-def
rm -rf "$typedefs"
mkdir -p "$typedefs"
NAPI_TYPE_DEF_TMP_FOLDER=$typedefs NAPI_FORCE_BUILD_COSID_NODE=$(date +%s%N) \
    cargo build --release --locked -p cosid-ffi -p cosid-node -p cosid-cli --features cosid-cli/stores
[ -s "$typedefs/cosid-node" ] || { echo "dist: the addon's build left no type definitions in $typedefs" >&2; exit 1; }

step "Python: abi3 wheel (maturin, manylinux tag from the symbols the module uses) and sdist"
tools=$target/dist-tools
if ! "$tools/bin/maturin" --version 2>/dev/null | grep -qx "maturin $MATURIN_VERSION"; then
    rm -rf "$tools"
    python3 -m venv "$tools"
    "$tools/bin/python" -m pip install -q "maturin==$MATURIN_VERSION"
fi
# Same profile, features and target folder as the build above: the core and every dependency are reused.
# `--compatibility manylinux_2_34` fails the build if the module needs a newer glibc than the tag says.
"$tools/bin/maturin" build --release --locked --manifest-path bindings/python/Cargo.toml \
    --compatibility manylinux_2_34 --out "$out"
"$tools/bin/maturin" sdist --manifest-path bindings/python/Cargo.toml --out "$out"

step "Node: the platform package with the prebuilt addon, and the package (npm pack)"
node_version=$(node -p "require('./bindings/node/package.json').version")
platform_pkg=$stage/node/$node_platform
main_pkg=$stage/node/cosid
mkdir -p "$platform_pkg" "$main_pkg"
cp bindings/node/npm/$node_platform/package.json bindings/node/npm/$node_platform/README.md "$platform_pkg/"
cp "$release/libcosid_node.so" "$platform_pkg/cosid.$node_platform.node"
split_debug "$platform_pkg/cosid.$node_platform.node" "cosid.$node_platform.node.debug"
cp bindings/node/package.json bindings/node/README.md bindings/node/index.js bindings/node/index.mjs \
    bindings/node/index.d.ts bindings/node/index.d.mts bindings/node/platform.js "$main_pkg/"
cp LICENSE-MIT LICENSE-APACHE "$platform_pkg/"
cp LICENSE-MIT LICENSE-APACHE "$main_pkg/"
# As `napi pre-publish` does: the platform packages become optional dependencies of the package at packing time
# (listed in the checkout, they would make `npm ci` there fetch a package that is not published yet).
node -e '
  const fs = require("node:fs")
  const [file, version, ...names] = process.argv.slice(1)
  const pkg = JSON.parse(fs.readFileSync(file, "utf8"))
  delete pkg.devDependencies
  delete pkg.scripts
  pkg.optionalDependencies = Object.fromEntries(names.map((n) => [n, version]))
  fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n")
' "$main_pkg/package.json" "$node_version" "cosid-$node_platform"
(cd "$platform_pkg" && npm pack --silent --pack-destination "$out" >/dev/null)
(cd "$main_pkg" && npm pack --silent --pack-destination "$out" >/dev/null)

step "C: libcosid tarball (shared and static library, header, pkg-config, CMake)"
c_name=libcosid-$version-$triple
PREFIX="$stage/$c_name" COSID_SKIP_BUILD=1 scripts/install-c.sh >/dev/null
mkdir -p "$stage/$c_name/share/doc/cosid"
cp LICENSE-MIT LICENSE-APACHE README.md "$stage/$c_name/share/doc/cosid/"
split_debug "$stage/$c_name/lib/libcosid.so.$version" "libcosid.so.$version.debug"
strip --strip-debug "$stage/$c_name/lib/libcosid.a"
tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "$out/$c_name.tar.gz" "$c_name"

step "CLI: the cosid binary (every store)"
cli_name=cosid-cli-$version-$triple
mkdir -p "$stage/$cli_name/bin"
install -m 755 "$release/cosid" "$stage/$cli_name/bin/cosid"
split_debug "$stage/$cli_name/bin/cosid" cosid.debug
cp LICENSE-MIT LICENSE-APACHE README.md "$stage/$cli_name/"
# Shell completions and man pages, made by the binary from its own definitions (`cosid generate`).
cli_share=$stage/$cli_name/share
mkdir -p "$cli_share/bash-completion/completions" "$cli_share/zsh/site-functions" \
    "$cli_share/fish/vendor_completions.d" "$cli_share/powershell" "$cli_share/man/man1"
"$release/cosid" generate completions bash >"$cli_share/bash-completion/completions/cosid"
"$release/cosid" generate completions zsh >"$cli_share/zsh/site-functions/_cosid"
"$release/cosid" generate completions fish >"$cli_share/fish/vendor_completions.d/cosid.fish"
"$release/cosid" generate completions powershell >"$cli_share/powershell/cosid.ps1"
"$release/cosid" generate man --dir "$cli_share/man/man1"
tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "$out/$cli_name.tar.gz" "$cli_name"

step "Java: the jar (libcosid.so for linux-x86_64 inside) and its sources jar"
bash bindings/java/dist.sh "$out"

step "debug info: the debug files of the stripped libcosid.so, Node addon and CLI"
# The wheel's module is stripped by maturin (`strip` in bindings/python/pyproject.toml): its debug info is not kept.
cp LICENSE-MIT LICENSE-APACHE "$debug_stage/"
tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "$out/$debug_name.tar.gz" "$debug_name"

step "Go: the module zip (github.com/cosid-rs/cosid/bindings/go)"
bash bindings/go/dist.sh "$out"

step "sizes (budgets in scripts/size-budget.txt; .ci/artefacts.sh fails past one)"
scripts/sizes.sh "$out" || echo "dist: an artefact is past its budget (above); .ci/artefacts.sh will fail" >&2

step "checksums"
(cd "$out" && sha256sum -- * > SHA256SUMS && cat SHA256SUMS)
current=""
echo "dist: done in $SECONDS s: $out"

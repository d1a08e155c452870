#!/usr/bin/env bash
# Builds every release artefact into dist/ from a checkout, with ONE release build of the Rust code:
#
#   dist/cosid-VERSION-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
#                                                            Python, abi3 wheel (CPython 3.9 and later)
#   dist/cosid-VERSION.tar.gz                                Python sdist (builds from source: needs Rust)
#   dist/cosid-VERSION.tgz                                   npm: the package (loader, types; no install script)
#   dist/cosid-linux-x64-gnu-VERSION.tgz                     npm: its platform package, the prebuilt addon
#   dist/libcosid-VERSION-x86_64-linux-gnu.tar.gz            C: lib/, include/, pkg-config and CMake files
#   dist/cosid-cli-VERSION-x86_64-linux-gnu.tar.gz           the `cosid` command
#   dist/cosid-VERSION.jar                                   Java: the jar, libcosid.so for linux-x86_64 inside
#   dist/cosid-VERSION-sources.jar                           Java: its sources
#   dist/cosid-go-vVERSION.zip                               Go: the module zip, as the module proxy serves it
#   dist/cosid-debug-VERSION-x86_64-linux-gnu.tar.gz         debug info of the stripped .so, .node and CLI
#   dist/SHA256SUMS
#
#     scripts/dist.sh            (COSID_DIST_DIR=... for another folder than dist/)
#
# Every binary is for x86_64 Linux with glibc 2.17 or newer (RHEL/CentOS 7, Ubuntu 14.04, Debian 8, Amazon Linux 2 and
# later): `cargo zigbuild --target x86_64-unknown-linux-gnu.2.17` builds the C library, the Node addon and the CLI in
# one go (the released stores: docs/install.md) with Zig as the C compiler and linker, against glibc 2.17's symbols;
# maturin builds the Python module's own crate (and pyo3) on top of it, in the same environment
# (scripts/release-env.sh), and npm and tar only package. The build's files are in
# target/x86_64-unknown-linux-gnu/release, hard-linked into target/release for the steps that read them there. Needs
# the Rust toolchain, a C compiler (build scripts), Python 3.9+ with venv, Node 20+ with npm, binutils, a JDK 22+ and
# Maven (the jar). maturin and Zig (the ziglang package) and cargo-zigbuild come from PyPI into target/dist-tools
# (pinned below), reused by later runs. docs/install.md says what each artefact is and where it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CARGO_TERM_COLOR=never

MATURIN_VERSION=1.16.0
CARGO_ZIGBUILD_VERSION=0.24.1
ZIG_VERSION=0.15.2
out=${COSID_DIST_DIR:-$root/dist}
target=${CARGO_TARGET_DIR:-$root/target}
# shellcheck source=scripts/release-env.sh
. scripts/release-env.sh
release=$release_target_dir/$release_triple/release
tools=$target/dist-tools
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
need cc "gcc (build scripts; the bundled SQLite and ring are compiled by Zig)"
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

step "tools: maturin, Zig and cargo-zigbuild (PyPI), into $tools"
# Installed once, reused by later runs while the pinned versions match. cargo-zigbuild's PyPI package is its
# release binary (the same version as on crates.io): `cargo install` compiled it for 3 to 4 minutes of every CI run.
[ -x "$tools/bin/python" ] || python3 -m venv "$tools"
if ! "$tools/bin/maturin" --version 2>/dev/null | grep -qx "maturin $MATURIN_VERSION" ||
    [ "$("$tools/bin/python" -m ziglang version 2>/dev/null)" != "$ZIG_VERSION" ] ||
    ! "$tools/bin/cargo-zigbuild" --version 2>/dev/null | grep -qx "cargo-zigbuild $CARGO_ZIGBUILD_VERSION"; then
    "$tools/bin/python" -m pip install -q "maturin==$MATURIN_VERSION" "ziglang==$ZIG_VERSION" \
        "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION"
fi
# cargo-zigbuild runs Zig as `python -m ziglang` with the venv's Python, and keeps its wrappers (zigcc-*.sh, which
# the recorded environment names) under the target folder.
export CARGO_ZIGBUILD_PYTHON_PATH=$tools/bin/python
export CARGO_ZIGBUILD_CACHE_DIR=$tools/zigbuild-cache
# The linker: cargo-zigbuild's `zig cc` wrapper (CC_x86_64_unknown_linux_gnu, which it sets), with one argument made
# into something Zig can do. ffi/build.rs and bindings/node/build.rs link with `-Wl,-z,start-stop-visibility=hidden`
# (linkme's __start_/__stop_ symbols not exported), and Zig's linker driver refuses every `-z` it does not know. So
# the library is linked without it; if it then exports __start_/__stop_ symbols, it is linked again with a small
# object that references each of them as hidden, and lld gives a symbol the strictest visibility of its references.
cat >"$tools/zig-link.sh" <<'SH'
#!/usr/bin/env bash
# The release build's linker (scripts/dist.sh): cargo-zigbuild's zig cc, without -z start-stop-visibility=hidden,
# which it does by other means.
set -euo pipefail
zigcc=${CC_x86_64_unknown_linux_gnu:?the zig cc wrapper of cargo-zigbuild}
args=() hide=0 out="" prev=""
for a in "$@"; do
    if [ "$a" = -Wl,-z,start-stop-visibility=hidden ]; then hide=1; continue; fi
    [ "$prev" != -o ] || out=$a
    args+=("$a")
    prev=$a
done
"$zigcc" "${args[@]}"
[ "$hide" = 1 ] && [ -n "$out" ] || exit 0
syms=$(nm -D --defined-only "$out" | awk '$NF ~ /^__(start|stop)_/ { print $NF }')
[ -n "$syms" ] || exit 0
c=$out.start-stop-hidden.c
{
    for s in $syms; do echo "extern char $s[] __attribute__((visibility(\"hidden\")));"; done
    echo "__attribute__((used)) static void *const cosid_start_stop_hidden[] = {"
    for s in $syms; do echo "    $s,"; done
    echo "};"
} >"$c"
"$zigcc" -c -fPIC -o "$c.o" "$c"
"$zigcc" "${args[@]}" "$c.o"
rm -f "$c" "$c.o"
SH
chmod +x "$tools/zig-link.sh"
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER=$tools/zig-link.sh
"$tools/bin/cargo-zigbuild" --version
echo "zig $("$tools/bin/python" -m ziglang version)"

step "cargo zigbuild --release (glibc $release_glibc): libcosid, the Node addon, the CLI (the released stores)"
# The Python module is built by maturin below, on this build: its crate adds only pyo3 to the same feature set
# (`cargo tree -e features` shows it), so the core and every shared dependency are compiled once. It is left out
# here because maturin builds pyo3 with its own environment: building it here too would rebuild pyo3 each time.
# napi-derive writes the addon's TypeScript definitions into $typedefs as it compiles the addon's crate (the two
# variables rebuild that crate alone): .ci/node.sh checks the committed index.d.ts against them instead of building
# the addon a second time with `napi build`.
typedefs=$target/napi-type-def
rm -rf "$typedefs"
mkdir -p "$typedefs"
# cargo-zigbuild runs cargo with Zig's wrappers as CC_x86_64_unknown_linux_gnu and the target's linker (and a few
# more variables): cargo here is a stand-in that writes down the environment it was given, then runs cargo. Its
# difference from this script's environment, with the three variables above, becomes $release_env: the later steps
# run their `cargo build --release` in it (release_run), and find this build fresh.
rm -f "$release_env"
mkdir -p "$(dirname "$release_env")"
recorder=$tools/record-cargo.sh
cat >"$recorder" <<'SH'
#!/bin/sh
# cargo, as cargo-zigbuild runs it (scripts/dist.sh): writes down the environment of `cargo build`, then is cargo.
[ "$1" != build ] || env -0 >"$COSID_RECORD_ENV.after"
exec "$COSID_REAL_CARGO" "$@"
SH
chmod +x "$recorder"
zigbuild() {
    env -0 >"$release_env.before"
    COSID_RECORD_ENV=$release_env COSID_REAL_CARGO=$(command -v cargo) CARGO=$recorder \
        "$tools/bin/cargo-zigbuild" zigbuild "$@"
}
NAPI_TYPE_DEF_TMP_FOLDER=$typedefs NAPI_FORCE_BUILD_COSID_NODE=$(date +%s%N) \
    zigbuild --release --locked --target "$release_triple.$release_glibc" \
    -p cosid-ffi -p cosid-node -p cosid-cli --features cosid-cli/release
[ -s "$typedefs/cosid-node" ] || { echo "dist: the addon's build left no type definitions in $typedefs" >&2; exit 1; }
"$tools/bin/python" - "$release_env" <<'PY'
import os, shlex, sys
out = sys.argv[1]
def read(path):
    with open(path, "rb") as f:
        return dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
before, after = read(out + ".before"), read(out + ".after")
skip = (b"COSID_RECORD_ENV", b"COSID_REAL_CARGO", b"NAPI_TYPE_DEF_TMP_FOLDER", b"NAPI_FORCE_BUILD_COSID_NODE", b"_")
keep = {k: v for k, v in after.items() if before.get(k) != v and k not in skip}
for k in (b"CARGO_ZIGBUILD_PYTHON_PATH", b"CARGO_ZIGBUILD_CACHE_DIR", b"CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER"):
    keep[k] = after[k]
with open(out, "w") as f:
    f.write("# The environment cargo-zigbuild gave cargo for the release build (scripts/dist.sh, scripts/release-env.sh)\n")
    for k, v in sorted(keep.items()):
        f.write(f"{k.decode()}={shlex.quote(v.decode())}\n")
os.remove(out + ".before"), os.remove(out + ".after")
PY
echo "dist: the zig environment, for the later steps ($release_env):"
sed 's/^/    /' "$release_env"
release_dir=$release_zig_dir
release_link

step "Python: abi3 wheel (maturin, manylinux_2_17 checked from the symbols the module uses) and sdist"
# Same profile, features, target, target folder and zig environment as the build above (release_run): the core and
# every dependency are reused. Not `maturin --zig`: its zig wrappers are other files than cargo-zigbuild's, and cargo
# would compile every C dependency, then everything above them, again. `--compatibility manylinux_2_17` fails the
# build if the module needs a newer glibc than the tag says.
release_run "$tools/bin/maturin" build --release --locked --manifest-path bindings/python/Cargo.toml \
    --target "$release_triple" --compatibility "manylinux_${release_glibc/./_}" --out "$out"
# maturin names the two tags legacy first (manylinux2014_x86_64.manylinux_2_17_x86_64); auditwheel, and so most
# wheels on PyPI, the other way round. The order in a file name means nothing to pip or PyPI, and this one keeps
# `cosid-VERSION-cp39-abi3-manylinux_*_x86_64.whl` finding it.
for wheel in "$out"/cosid-*-manylinux2014_x86_64.manylinux_2_17_x86_64.whl; do
    [ ! -e "$wheel" ] || mv "$wheel" "${wheel/manylinux2014_x86_64.manylinux_2_17_x86_64/manylinux_2_17_x86_64.manylinux2014_x86_64}"
done
# maturin deflates the wheel at a fast level; the same files at zlib's level 9 are 3 % smaller to download (the
# module 2.99 MB against 2.89). pip reads both alike, and RECORD hashes the files, not the archive, so it stands.
"$tools/bin/python" - "$out"/cosid-*-manylinux_*_x86_64.whl <<'PY'
import os, sys, zipfile
for path in sys.argv[1:]:
    before = os.path.getsize(path)
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(path + ".tmp", "w") as dst:
        for info in src.infolist():
            repacked = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            repacked.external_attr, repacked.create_system = info.external_attr, info.create_system
            dst.writestr(repacked, src.read(info), zipfile.ZIP_DEFLATED, 9)
    os.replace(path + ".tmp", path)
    print(f"dist: {os.path.basename(path)} repacked at deflate level 9: {before:,} -> {os.path.getsize(path):,} bytes")
PY
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

step "CLI: the cosid binary"
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

#!/usr/bin/env bash
# Copies the Java binding's jar (with libcosid.so for linux-x86_64 inside) and its sources jar into OUTDIR, building
# them first from the release library (${CARGO_TARGET_DIR:-target}/release/libcosid.so, which must exist: run after
# `cargo build --release -p cosid-ffi`) without running the tests (.ci/java.sh runs them).
#
#     bash bindings/java/dist.sh OUTDIR
#
# Needs a JDK 22+ (jdk.sh finds it) and Maven; Maven's repository is ${CARGO_TARGET_DIR:-target}/m2.
set -euo pipefail
out=${1:?usage: bindings/java/dist.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
root=$PWD
target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target=$root/$target ;; esac
. bindings/java/jdk.sh
find_jdk
lib=$target/release/libcosid.so
[ -f "$lib" ] || { echo "java dist: $lib is missing; build it first: cargo build --release -p cosid-ffi" >&2; exit 1; }
native=$target/java-native
mkdir -p "$native"
cp "$lib" "$native/libcosid.so"
# Stripped as the C tarball's (its symbols and debug info are in dist's debug tarball); the exported cosid_*
# functions that the binding looks up stay in the dynamic symbol table.
strip --strip-all "$native/libcosid.so"
version=$(sed -n 's|^    <version>\(.*\)</version>$|\1|p' bindings/java/pom.xml | head -1)
(cd bindings/java && mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$target/m2" -Dcosid.native.dir="$native" \
    -DskipTests clean package)
cp "bindings/java/target/cosid-$version.jar" "bindings/java/target/cosid-$version-sources.jar" "$out/"
echo "java dist: $out/cosid-$version.jar $out/cosid-$version-sources.jar"

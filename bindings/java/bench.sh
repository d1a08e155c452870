#!/usr/bin/env bash
# Prints the Java binding's figures: ns per id of Cosid.nextId(), Runtime#nextId() and nextIds(1000), beside
# UUID.randomUUID() and CosId's MillisecondSnowflakeId (from Maven Central), in one run. A harness, not a test.
#
#     bash bindings/java/bench.sh [BURSTS]      (default 400 bursts of 1000 ids)
#
# Uses ${CARGO_TARGET_DIR:-target}/release/libcosid.so (built if missing) and Maven's repository in
# ${CARGO_TARGET_DIR:-target}/m2.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target=$root/$target ;; esac
. bindings/java/jdk.sh
find_jdk
lib=$target/release/libcosid.so
[ -f "$lib" ] || cargo build --release -p cosid-ffi
(cd bindings/java && mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$target/m2" -P bench -DskipTests \
    -Dcosid.native.dir="$(dirname "$lib")" package)
exec java --enable-native-access=ALL-UNNAMED -cp "bindings/java/target/bench/classes:bindings/java/target/bench/bench-lib/*" \
    io.cosid.Bench "$@"

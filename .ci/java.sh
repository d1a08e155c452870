#!/usr/bin/env bash
# The Java binding (bindings/java, the Foreign Function & Memory API over libcosid): its tests under Maven Surefire
# (threads, several JVMs on one SQLite file, Redis when COSID_TEST_REDIS_URL is set, errors, events, the conformance
# table), the jar with libcosid inside and the sources jar, and the example program run from the jar.
#
#     bash .ci/java.sh            (COSID_JAVA_BENCH=1 also prints the benchmark's figures)
#
# Uses the release library of scripts/dist.sh (${CARGO_TARGET_DIR:-target}/release/libcosid.so), building it only if
# it is missing. Needs a JDK 22 or newer (Temurin 25 here; bindings/java/jdk.sh finds it) and Maven; Maven's
# repository is ${CARGO_TARGET_DIR:-target}/m2, so a second run needs no network.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CARGO_TERM_COLOR=never
target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target=$root/$target ;; esac

start=$SECONDS
current=""
step_start=$SECONDS
timings=()
finish_step() {
    if [ -n "$current" ]; then
        local took=$((SECONDS - step_start))
        timings+=("$(printf '%4ds  %s' "$took" "$current")")
        printf '==== java: done in %ds: %s\n' "$took" "$current"
    fi
}
step() {
    finish_step
    current="$*"
    step_start=$SECONDS
    printf '\n==== java: %s\n' "$*"
}
tmp=""
summary() {
    local status=$?
    [ -z "$tmp" ] || rm -rf "$tmp"
    finish_step
    printf '\n==== java: step durations\n'
    [ ${#timings[@]} -eq 0 ] || printf '%s\n' "${timings[@]}"
    printf '%4ds  total (exit %d)\n' $((SECONDS - start)) "$status"
}
trap summary EXIT

step "JDK and Maven"
. bindings/java/jdk.sh
find_jdk
command -v mvn >/dev/null 2>&1 || { echo "java.sh: mvn is missing (apt-get install -y maven)" >&2; exit 1; }
java -version 2>&1 | sed -n 1p
mvn -B -v 2>/dev/null | sed -n 1p

step "libcosid (release)"
# scripts/dist.sh's build (glibc 2.17, Zig), else one made here in its environment (scripts/release-env.sh).
# shellcheck source=scripts/release-env.sh
. "$root/scripts/release-env.sh"
lib=$release_dir/libcosid.so
if [ ! -f "$lib" ]; then
    release_run cargo build --release -p cosid-ffi
    release_link
fi
native=$target/java-native
mkdir -p "$native"
cp "$lib" "$native/libcosid.so"
strip --strip-debug "$native/libcosid.so"
ls -l "$native/libcosid.so"

step "mvn package: compile, tests (Surefire), jar and sources jar"
version=$(sed -n 's|^    <version>\(.*\)</version>$|\1|p' bindings/java/pom.xml | head -1)
reports=bindings/java/target/surefire-reports
rm -rf "$reports"
mvn_status=0
(cd bindings/java && mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$target/m2" -Dcosid.native.dir="$native" \
    package) || mvn_status=$?
# -q hides Surefire's own lines: the counts come from its reports.
python3 - "$reports" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
tests = failed = skipped = 0
for f in sorted(glob.glob(sys.argv[1] + "/TEST-*.xml")):
    s = ET.parse(f).getroot()
    t, fl, sk = int(s.get("tests")), int(s.get("failures")) + int(s.get("errors")), int(s.get("skipped"))
    tests, failed, skipped = tests + t, failed + fl, skipped + sk
    print(f"  {s.get('name')}: {t} tests, {fl} failed, {sk} skipped ({float(s.get('time')):.1f} s)")
    for case in s.iter("testcase"):
        for bad in list(case.findall("failure")) + list(case.findall("error")):
            print(f"  FAILED {s.get('name')}.{case.get('name')}: {(bad.get('message') or '')[:2000]}")
for f in sorted(glob.glob(sys.argv[1] + "/*-output.txt")):
    for line in open(f, errors="replace"):
        if "skipped:" in line:
            print("  " + line.rstrip())
print(f"java: {tests - failed - skipped} passed, {failed} failed, {skipped} skipped")
PY
[ "$mvn_status" = 0 ] || { echo "java.sh: mvn package failed (exit $mvn_status)" >&2; exit "$mvn_status"; }
jar=bindings/java/target/cosid-$version.jar
for f in "$jar" "bindings/java/target/cosid-$version-sources.jar"; do
    [ -s "$f" ] || { echo "java.sh: $f was not built" >&2; exit 1; }
done
unzip -l "$jar" | grep ' io/cosid/native/linux-x86_64/libcosid.so$' >/dev/null ||
    { echo "java.sh: $jar carries no io/cosid/native/linux-x86_64/libcosid.so" >&2; exit 1; }
unzip -p "$jar" META-INF/MANIFEST.MF | grep '^Enable-Native-Access: ALL-UNNAMED' >/dev/null ||
    { echo "java.sh: $jar's manifest lacks Enable-Native-Access" >&2; exit 1; }
ls -l bindings/java/target/*.jar

step "example: examples/java/App.java from the jar (java --enable-native-access=ALL-UNNAMED -cp JAR App.java 3)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cosid-java-ci.XXXXXX")
out=$(cd "$tmp" && COSID_STORE="sqlite://$tmp/leases.db" COSID_NAMESPACE=example \
    java --enable-native-access=ALL-UNNAMED -cp "$root/$jar" "$root/examples/java/App.java" 3)
printf '%s\n' "$out"
[ "$(printf '%s\n' "$out" | grep -cE '^[0-9]+  [0-9]{17}-[0-9]+-[0-9]+  [0-9A-Za-z]{11}$')" = 3 ] ||
    { echo "java.sh: the example did not print 3 ids with their text forms" >&2; exit 1; }
printf '%s\n' "$out" | grep '^event: RELEASED' >/dev/null ||
    { echo "java.sh: the example's listener saw no RELEASED event" >&2; exit 1; }

if [ "${COSID_JAVA_BENCH:-0}" = 1 ]; then
    step "benchmark (figures only)"
    bash bindings/java/bench.sh
fi

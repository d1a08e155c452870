#!/usr/bin/env bash
# Migration interop against the real CosId (Java, from Maven Central), about 2 minutes. See docs/reliability.md.
#
#     bash .ci/interop.sh
#
# 1. builds tests/interop/cosid-java against each CosId line tested (`mvn -q -B package`, one profile a line) and the
#    CLI: the release build of scripts/dist.sh when it is there (its stores include Redis); else a build with the
#    redis feature;
# 2. runs tests/interop/migrate_from_cosid.py: per line, a redis-server of its own on a free 127.0.0.1 port; CosId
#    JVMs take machine ids with CosId's SpringRedisMachineIdDistributor and issue ids (some stop normally, some
#    are SIGKILLed); a negative control (cosid on the same slots, no migrate, host clock behind the old hosts' with
#    libfaketime) that MUST find duplicates; `cosid migrate`, then cosid runtimes on the same slots: 0 duplicates;
#    the id forms (decimal, friendly, padded base-62) read and written alike by CosId's parsers and cosid's.
#
# Installs what is missing from Debian's packages (needs root): a JDK 17+, Maven, redis-server, faketime. Maven
# fetches CosId and its dependencies from Maven Central into ~/.m2. Settings (environment):
#   COSID_INTEROP_OUT   where the run folders go (default ${TMPDIR:-/tmp}/cosid-interop)
#   COSID_INTEROP_KEEP  set: keep the folders of passed runs too (a failed run's folder is always kept)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

log() { echo "interop.sh: $*" >&2; }

# The CosId lines tested: 2.13.0 (guards its machine id) and 1.8.6 (writes `machineId|0` and never updates it).
lines=(2.13.0 1.8.6)
profile_of() { case "$1" in 2.*) echo cosid-2 ;; 1.*) echo cosid-1 ;; esac; }

need=()
java_ok() { command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 &&
    [ "$(java -XshowSettings:properties -version 2>&1 | sed -n 's/.*java.specification.version = //p')" -ge 17 ]; }
java_ok || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v faketime >/dev/null 2>&1 || need+=(faketime)
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "${need[@]}" >&2 || { apt-get update -q >&2 && apt-get install -y -q "${need[@]}" >&2; }
fi
java -version 2>&1 | sed -n 1p >&2
mvn -B -v 2>&1 | sed -n 1p >&2

java_args=()
for v in "${lines[@]}"; do
    log "building the CosId $v program (mvn -q -B package -P $(profile_of "$v"))"
    (cd tests/interop/cosid-java && mvn -q -B -Dstyle.color=never package -P "$(profile_of "$v")")
    java_args+=(--java "$v=tests/interop/cosid-java/target/cosid-$v")
done

# The release CLI of scripts/dist.sh when it is there, as in scripts/test-all.sh; else a build here.
cli="${COSID_BIN:-target/release/cosid}"
if [ ! -x "$cli" ]; then
    cli=target/debug/cosid
    log "building the CLI with the redis feature"
    cargo build -q -p cosid-cli --features redis
fi

out="${COSID_INTEROP_OUT:-${TMPDIR:-/tmp}/cosid-interop}"
mkdir -p "$out"
python3 tests/interop/migrate_from_cosid.py --cli "$cli" "${java_args[@]}" --out "$out"

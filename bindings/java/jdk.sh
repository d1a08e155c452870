# Sourced by .ci/java.sh, bench.sh and dist.sh: finds a JDK with the Foreign Function & Memory API (22 or newer,
# 25 preferred) and puts it first; sets MAVEN_OPTS for Maven 3.8 on it.
java_feature() { "$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/.*java.specification.version = //p'; }
find_jdk() {
    local candidates=()
    [ -n "${COSID_JAVA_HOME:-}" ] && candidates+=("$COSID_JAVA_HOME")
    [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
    candidates+=(/usr/lib/jvm/temurin-25-jdk-amd64 $(ls -d /usr/lib/jvm/*25* /usr/lib/jvm/*-2[2-9]* 2>/dev/null || true))
    local c v
    for c in "${candidates[@]}"; do
        [ -x "$c/bin/javac" ] || continue
        v=$(java_feature "$c")
        if [ -n "$v" ] && [ "$v" -ge 22 ] 2>/dev/null; then
            export JAVA_HOME="$c"
            export PATH="$JAVA_HOME/bin:$PATH"
            # Maven 3.8's own Guava uses sun.misc.Unsafe, which JDK 24+ warns about on every run.
            if [ "$v" -ge 23 ]; then
                export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
            fi
            return 0
        fi
    done
    echo "cosid java: no JDK 22 or newer found (looked at \$COSID_JAVA_HOME, \$JAVA_HOME, /usr/lib/jvm/*25*);" \
        "the binding needs the Foreign Function & Memory API: install Temurin 25 (package temurin-25-jdk from" \
        "Adoptium's apt repository) or any JDK 22+, and set JAVA_HOME" >&2
    return 1
}

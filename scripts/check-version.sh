#!/usr/bin/env bash
# Checks that the project has ONE version number and ONE toolchain floor:
#   - version: [workspace.package] of Cargo.toml. Every crate, the crates' path dependencies on the core
#     (`version = "=X.Y.Z"`, where one is set or the crate is published), the Python package (its version is dynamic: maturin takes the crate's), the npm
#     package and its platform packages, the C header's COSID_VERSION macros, `cosid --version` and, when dist/
#     holds them, the artefacts' file names all say it;
#   - MSRV: rust-version of [workspace.package]. No crate sets another, and the README and docs/ name no other
#     "Rust 1.NN or newer".
#
#     scripts/check-version.sh            (COSID_BIN=path/to/cosid: the binary to ask; default target/release/cosid,
#                                          else `cargo run -p cosid-cli`)
# Exits 1 and lists every disagreement.
set -euo pipefail
cd "$(dirname "$0")/.."

failures=0
fail() {
    echo "check-version: $*" >&2
    failures=$((failures + 1))
}
same() { # what, found, expected
    if [ "$2" = "$3" ]; then echo "ok   $1: $2"; else fail "$1 is '$2', expected '$3'"; fi
}

section() { sed -n "/^\[$1\]/,/^\[/p" "$2"; }
version=$(section workspace.package Cargo.toml | sed -n 's/^version = "\(.*\)"$/\1/p')
msrv=$(section workspace.package Cargo.toml | sed -n 's/^rust-version = "\(.*\)"$/\1/p')
[ -n "$version" ] && [ -n "$msrv" ] || { echo "check-version: no version or rust-version in Cargo.toml" >&2; exit 1; }
echo "the version: $version; the MSRV: Rust $msrv"

# Crates, their rust-version and their dependencies on the core, from cargo's own reading of the manifests.
while IFS=$'\t' read -r kind name a b; do
    case $kind in
        crate) same "crate $name version" "$a" "$version"
               same "crate $name rust-version" "$b" "$msrv" ;;
        dep) same "$name's dependency on the core" "$a" "=$version" ;;
    esac
done < <(cargo metadata --no-deps --format-version 1 --offline 2>/dev/null | python3 -c '
import json, sys
meta = json.load(sys.stdin)
for p in meta["packages"]:
    print("crate", p["name"], p["version"], p.get("rust_version") or "", sep="\t")
    for d in p["dependencies"]:
        # An unversioned path dependency is fine in a crate never packaged (publish = false), and in a dev-dependency
        # (cargo package drops those; the core has one on itself, for its conformance feature).
        unversioned_ok = d["req"] == "*" and (p["publish"] == [] or d.get("kind") == "dev")
        if d["name"] == "cosid" and d.get("path") and not unversioned_ok:
            print("dep", p["name"], d["req"], "", sep="\t")
')

# Python: the version is the crate's (dynamic), never written in pyproject.toml.
if grep -q '^dynamic = \[.*"version".*\]' bindings/python/pyproject.toml \
    && ! section project bindings/python/pyproject.toml | grep -q '^version *='; then
    echo "ok   pyproject.toml: version is dynamic (the crate's)"
else
    fail "bindings/python/pyproject.toml must leave the version dynamic (maturin takes the crate's)"
fi

# npm: the package and each platform package.
for pkg in bindings/node/package.json bindings/node/npm/*/package.json; do
    same "$pkg version" "$(node -p "require('./$pkg').version")" "$version"
done

# Java: the jar's version in the Maven project.
same "bindings/java/pom.xml version" \
    "$(sed -n 's|^    <version>\(.*\)</version>$|\1|p' bindings/java/pom.xml | head -1)" "$version"

# C: the header's macros.
h=include/cosid.h
macro() { sed -n "s/^#define $1 \(.*\)$/\1/p" "$h"; }
IFS=. read -r major minor patch <<<"$version"
same "$h COSID_VERSION" "$(macro COSID_VERSION)" "\"$version\""
same "$h COSID_VERSION_MAJOR" "$(macro COSID_VERSION_MAJOR)" "$major"
same "$h COSID_VERSION_MINOR" "$(macro COSID_VERSION_MINOR)" "$minor"
same "$h COSID_VERSION_PATCH" "$(macro COSID_VERSION_PATCH)" "$patch"

# The CLI.
bin=${COSID_BIN:-target/release/cosid}
if [ -x "$bin" ]; then
    cli=$("$bin" --version)
else
    cli=$(cargo run -q -p cosid-cli -- --version)
fi
same "cosid --version" "$cli" "cosid $version"

# The artefacts, when scripts/dist.sh has made them.
if [ -d dist ] && [ -f dist/SHA256SUMS ]; then
    for f in "cosid-$version-cp39-abi3-manylinux_*_x86_64.whl" "cosid-$version.tar.gz" "cosid-$version.tgz" \
        "cosid-linux-x64-gnu-$version.tgz" "libcosid-$version-x86_64-linux-gnu.tar.gz" \
        "cosid-cli-$version-x86_64-linux-gnu.tar.gz"; do
        # shellcheck disable=SC2086 # the wheel's name is a pattern
        if ls dist/$f >/dev/null 2>&1; then echo "ok   dist/$f"; else fail "dist/ has no $f"; fi
    done
fi

# The MSRV in prose: the README states it, and no document names another floor.
if grep -q "Rust $msrv or newer" README.md; then
    echo "ok   README.md states Rust $msrv or newer"
else
    fail "README.md does not state the MSRV as 'Rust $msrv or newer'"
fi
while IFS= read -r line; do
    fail "another toolchain floor than Rust $msrv: $line"
done < <(grep -rnoE 'Rust 1\.[0-9]+ or newer|Rust ≥ ?1\.[0-9]+|rust-version = "1\.[0-9]+"' \
    README.md docs bindings/*/README.md bindings/node/scripts bindings/*/Cargo.toml \
    | grep -v "Rust $msrv or newer" | grep -v "Rust ≥ \?$msrv" | grep -v "rust-version = \"$msrv\"" || true)

if [ "$failures" -gt 0 ]; then
    echo "check-version: $failures disagreement(s)" >&2
    exit 1
fi
echo "check-version: one version ($version) and one MSRV (Rust $msrv) everywhere"

#!/usr/bin/env bash
# The release artefacts as a user meets them: dist/ (scripts/dist.sh) is copied to a temporary folder and every
# install runs there, with no Rust toolchain on PATH and nothing of the source tree in reach:
#   - the wheel into a fresh venv (pip --no-index: nothing else is downloaded), `import cosid`, an id;
#   - the two npm tarballs into a fresh npm project, require('cosid') and import from 'cosid', an id; the same with
#     pnpm when it installs from the registry (npx);
#   - the C tarball into a fresh prefix, moved elsewhere afterwards (relocatable), and consumers built against it:
#     cc with pkg-config (shared and static), CMake with find_package(cosid) (cosid::cosid and cosid::cosid_static);
#   - the CLI tarball: `cosid --version` and ids;
#   - the shipped .so, .node and CLI stripped, each naming its file in the debug tarball; libcosid.so exporting only
#     cosid_*; every artefact within its budget (scripts/sizes.sh, scripts/size-budget.txt);
#   - glibc 2.17 as the floor of every binary that ships: the CLI, libcosid.so (in the C tarball and in the jar), the
#     Node addon and the wheel's module need no glibc symbol version past GLIBC_2.17 (`objdump -T`), and libcosid.a
#     no symbol that glibc 2.17 lacks (scripts/check-glibc.sh).
# Each install prints its time. Then the registries' own checks: `twine check` and `auditwheel show` on the wheel
# (which must find it consistent with manylinux_2_17), @arethetypeswrong/cli on the npm package (tools from PyPI
# and npm into the temporary folder).
#
#     bash .ci/artefacts.sh            (after scripts/dist.sh; COSID_DIST_DIR=... for another folder than dist/)
#
# Needs python3 with venv, node and npm, cc, cmake, pkg-config, binutils; no server (every id comes from an SQLite file).
set -euo pipefail
AUDITWHEEL_VERSION=6.8.2
src=$(cd "$(dirname "$0")/.." && pwd)
dist=${COSID_DIST_DIR:-$src/dist}
[ -f "$dist/SHA256SUMS" ] || { echo "artefacts: no $dist/SHA256SUMS: run scripts/dist.sh first" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/cosid-artefacts.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$dist" "$work/dist"
cd "$work"
(cd dist && sha256sum --quiet -c SHA256SUMS)
version=$(sed -n 's/^.*  cosid-cli-\(.*\)-x86_64-linux-gnu\.tar\.gz$/\1/p' dist/SHA256SUMS)
[ -n "$version" ] || { echo "artefacts: no CLI tarball in dist/" >&2; exit 1; }

# No Rust: PATH without any folder that holds cargo or rustc, and no hint where a toolchain lives.
clean_path=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
    [ -n "$d" ] && [ -d "$d" ] || continue
    [ -e "$d/cargo" ] || [ -e "$d/rustc" ] || [ -e "$d/rustup" ] && continue
    clean_path=${clean_path:+$clean_path:}$d
done
export PATH=$clean_path
unset CARGO CARGO_HOME RUSTUP_HOME RUSTC CARGO_TARGET_DIR PYO3_PYTHON
if command -v cargo >/dev/null || command -v rustc >/dev/null; then
    echo "artefacts: cargo or rustc is still on PATH ($PATH)" >&2
    exit 1
fi
echo "artefacts: version $version, in $work, no Rust toolchain on PATH"

timings=()
timed() { # label, command...
    local t0=$EPOCHREALTIME
    "${@:2}"
    local took
    took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    timings+=("$(printf '%6ss  %s' "$took" "$1")")
    echo "artefacts: $1 took $took s"
}
step() { printf '\n==== artefacts: %s\n' "$*"; }
is_id() { [[ $1 =~ ^[0-9]{15,20}$ ]] || { echo "artefacts: '$1' is not an id" >&2; return 1; }; }

step "Python: the wheel into a fresh venv"
wheel=$(ls dist/cosid-"$version"-cp39-abi3-manylinux_*_x86_64.whl)
(cd / && python3 -m venv "$work/py")
timed "pip install (wheel, no index)" py/bin/python -m pip install -q --no-index "$wheel"
id=$(cd / && COSID_STORE="sqlite://$work/py.db" "$work/py/bin/python" -c '
import cosid, sys
assert cosid.__file__.startswith(sys.prefix), cosid.__file__
print(cosid.next_id())')
is_id "$id"
echo "python: cosid.next_id() = $id"

step "Node: the two tarballs into a fresh npm project"
mkdir node-app
(cd node-app && npm init -y >/dev/null)
if tar -xOzf "dist/cosid-$version.tgz" package/package.json | node -e '
    const pkg = JSON.parse(require("fs").readFileSync(0, "utf8"))
    const s = pkg.scripts || {}
    if (s.install || s.preinstall || s.postinstall) { console.error("an install script:", s); process.exit(1) }
    if (!pkg.optionalDependencies || !pkg.optionalDependencies["cosid-linux-x64-gnu"]) process.exit(1)'; then
    echo "node: the package has no install script, and the platform package as an optional dependency"
else
    echo "artefacts: the npm package has an install script or lacks its platform package" >&2
    exit 1
fi
cd node-app
timed "npm install (two tarballs)" npm install --no-audit --no-fund --loglevel=error \
    "$work/dist/cosid-linux-x64-gnu-$version.tgz" "$work/dist/cosid-$version.tgz"
cd "$work"
node_check() { # project folder
    (cd "$1" && COSID_STORE="sqlite://$work/$1.db" node -e '
        const cosid = require("cosid")
        const id = cosid.nextId()
        if (typeof id !== "bigint") throw new Error("not a bigint: " + id)
        console.log(String(id))' &&
        COSID_STORE="sqlite://$work/$1.db" node --input-type=module -e '
        import { ready, nextIdString } from "cosid"
        await ready()
        console.log(nextIdString())')
}
ids=$(node_check node-app)
for id in $ids; do is_id "$id"; done
echo "node (npm): require and import gave $(echo $ids)"

if [ "${COSID_ARTEFACTS_NO_PNPM:-0}" != 1 ] && npx --yes pnpm@10 --version >/dev/null 2>&1; then
    step "Node: the same with pnpm $(npx --yes pnpm@10 --version)"
    mkdir pnpm-app
    # As a registry would serve it: the platform package resolves to its tarball wherever it is asked for.
    cat > pnpm-app/package.json <<JSON
{ "name": "pnpm-app", "version": "1.0.0", "private": true,
  "pnpm": { "overrides": { "cosid-linux-x64-gnu": "file:../dist/cosid-linux-x64-gnu-$version.tgz" } } }
JSON
    cd pnpm-app
    timed "pnpm add (two tarballs)" npx --yes pnpm@10 add --reporter=silent \
        "$work/dist/cosid-linux-x64-gnu-$version.tgz" "$work/dist/cosid-$version.tgz"
    cd "$work"
    ids=$(node_check pnpm-app)
    for id in $ids; do is_id "$id"; done
    echo "node (pnpm): require and import gave $(echo $ids)"
else
    echo "node: pnpm skipped (COSID_ARTEFACTS_NO_PNPM=1, or npx could not fetch it)"
fi

step "C: the tarball into a fresh prefix, moved afterwards; consumers with pkg-config and CMake"
mkdir c-first
timed "tar -x (C library)" tar -xzf "dist/libcosid-$version-x86_64-linux-gnu.tar.gz" -C c-first --strip-components=1
mv c-first c-prefix
prefix=$work/c-prefix
cat > app.c <<'C'
#include <cosid.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    if (strcmp(cosid_version(), COSID_VERSION) != 0) {
        fprintf(stderr, "header %s, library %s\n", COSID_VERSION, cosid_version());
        return 1;
    }
    uint64_t id;
    cosid_result r = cosid_next_id(&id);
    if (r != COSID_RESULT_OK) {
        fprintf(stderr, "cosid_next_id: %s\n", cosid_result_message(r));
        return 1;
    }
    printf("%" PRIu64 "\n", id);
    return 0;
}
C
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[ "$(pkg-config --modversion cosid)" = "$version" ]
libdir=$(pkg-config --variable=libdir cosid)
# shellcheck disable=SC2046 # pkg-config's flags are words
cc -Wall -Wextra -Werror -o app-shared app.c $(pkg-config --cflags --libs cosid) -Wl,-rpath,"$libdir"
# shellcheck disable=SC2046
cc -Wall -Wextra -Werror -o app-static app.c $(pkg-config --cflags cosid) "$libdir/libcosid.a" \
    $(pkg-config --static --libs-only-l cosid | sed 's/-lcosid //')
if ldd app-static | grep -q libcosid; then echo "artefacts: app-static loads libcosid.so" >&2; exit 1; fi
mkdir cmake-app
cp app.c cmake-app/
cat > cmake-app/CMakeLists.txt <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(cosid_consumer C)
find_package(cosid ${version%.*} REQUIRED)
add_executable(app-shared app.c)
target_link_libraries(app-shared PRIVATE cosid::cosid)
add_executable(app-static app.c)
target_link_libraries(app-static PRIVATE cosid::cosid_static)
CMAKE
cmake -S cmake-app -B cmake-build -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build cmake-build >/dev/null
for app in app-shared app-static cmake-build/app-shared cmake-build/app-static; do
    id=$(COSID_STORE="sqlite://$work/c.db" "./$app")
    is_id "$id"
    echo "c: $app gave $id"
done

step "CLI: the tarball"
mkdir cli
timed "tar -x (CLI)" tar -xzf "dist/cosid-cli-$version-x86_64-linux-gnu.tar.gz" -C cli --strip-components=1
[ "$(cli/bin/cosid --version)" = "cosid $version" ]
ids=$(COSID_STORE="sqlite://$work/cli.db" cli/bin/cosid next -n 3)
for id in $ids; do is_id "$id"; done
echo "cli: cosid next -n 3 gave $(echo $ids)"

step "stores: every package carries the released set (docs/install.md#what-the-packages-carry)"
released_stores=memory,sqlite,http,redis,postgres
got=$(cd / && "$work/py/bin/python" -c 'import cosid; print(",".join(cosid.STORES))')
[ "$got" = "$released_stores" ] || { echo "artefacts: the wheel carries $got, not $released_stores" >&2; exit 1; }
got=$(cd node-app && node -e 'console.log(require("cosid").stores().join(","))')
[ "$got" = "$released_stores" ] || { echo "artefacts: the npm addon carries $got, not $released_stores" >&2; exit 1; }
got=$(python3 -c 'import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.cosid_stores.restype = ctypes.c_char_p
print(lib.cosid_stores().decode())' "$libdir/libcosid.so")
[ "$got" = "$released_stores" ] || { echo "artefacts: libcosid.so carries $got, not $released_stores" >&2; exit 1; }
# The CLI has no list of its own: a URL of a store it lacks is a usage error (status 2) that names what it has.
status=0
out=$(cli/bin/cosid next --store mysql://app:s3cret@127.0.0.1:1/ids 2>&1) || status=$?
if [ "$status" != 2 ] || [[ $out != *"not in this build, which has ${released_stores//,/, }"* ]] || [[ $out == *s3cret* ]]; then
    echo "artefacts: the CLI on a store it lacks exited $status with: $out" >&2
    exit 1
fi
echo "stores: the wheel, the npm addon, libcosid.so and the CLI carry $released_stores"

step "stripped, with debug files; exports; sizes"
# The shipped .so, .node and CLI carry no symbol table, and name their debug file (.gnu_debuglink), which the debug
# tarball holds; libcosid.so exports the cosid_* functions and nothing else.
mkdir debug node-addon
tar -xzf "dist/cosid-debug-$version-x86_64-linux-gnu.tar.gz" -C debug --strip-components=1
tar -xzf "dist/cosid-linux-x64-gnu-$version.tgz" -C node-addon
for f in "c-prefix/lib/libcosid.so.$version" node-addon/package/cosid.linux-x64-gnu.node cli/bin/cosid; do
    if readelf -S "$f" | grep -q '\.symtab'; then echo "artefacts: $f is not stripped" >&2; exit 1; fi
    link=$(readelf --string-dump=.gnu_debuglink "$f" 2>/dev/null | awk '/\[ *0\]/ { print $3 }')
    [ -n "$link" ] && [ -f "debug/$link" ] || { echo "artefacts: $f names no debug file in the debug tarball ('$link')" >&2; exit 1; }
    echo "debug: $f -> $link"
done
others=$(nm -D --defined-only "c-prefix/lib/libcosid.so.$version" | awk '$NF !~ /^cosid_/ { print $NF }')
[ -z "$others" ] || { echo "artefacts: libcosid.so exports more than cosid_*:" $others >&2; exit 1; }
echo "exports: libcosid.so exports $(nm -D --defined-only "c-prefix/lib/libcosid.so.$version" | wc -l) symbols, every one cosid_*"
"$src/scripts/sizes.sh" dist

step "glibc 2.17: the highest glibc symbol version each shipped binary needs"
glibc_floor=2.17
mkdir wheel-files jar-files
python3 - "$wheel" wheel-files dist/cosid-"$version".jar jar-files <<'PY'
import sys, zipfile
for archive, dest in zip(sys.argv[1::2], sys.argv[2::2]):
    with zipfile.ZipFile(archive) as z:
        for name in z.namelist():
            if name.endswith(".so"):
                print(archive, "->", name)
                z.extract(name, dest)
PY
mapfile -t wheel_so < <(find wheel-files jar-files -name '*.so' | sort)
[ ${#wheel_so[@]} -ge 2 ] || { echo "artefacts: no .so in the wheel or the jar" >&2; exit 1; }
"$src/scripts/check-glibc.sh" "$glibc_floor" "c-prefix/lib/libcosid.so.$version" c-prefix/lib/libcosid.a \
    node-addon/package/cosid.linux-x64-gnu.node cli/bin/cosid "${wheel_so[@]}"
case $wheel in
*manylinux_2_17_x86_64*) echo "glibc: the wheel is tagged manylinux_2_17 (${wheel#dist/})" ;;
*) echo "artefacts: the wheel is not tagged manylinux_2_17: ${wheel#dist/}" >&2; exit 1 ;;
esac

step "registry checks: twine check, auditwheel show, @arethetypeswrong/cli"
(cd / && python3 -m venv "$work/tools")
tools/bin/python -m pip install -q twine "auditwheel==$AUDITWHEEL_VERSION"
tools/bin/twine check --strict "$wheel" "dist/cosid-$version.tar.gz"
tools/bin/auditwheel show "$wheel" | tee auditwheel.txt
# auditwheel reads the module's symbols itself: the most compatible tag it finds must be manylinux_2_17's.
tr -s ' \n' ' ' <auditwheel.txt | grep -q 'consistent with the following platform tag: "manylinux_2_17_x86_64"' ||
    { echo "artefacts: auditwheel does not find the wheel consistent with manylinux_2_17_x86_64" >&2; exit 1; }
if npx --yes @arethetypeswrong/cli --version >/dev/null 2>&1; then
    npx --yes @arethetypeswrong/cli --no-color --profile node16 "dist/cosid-$version.tgz"
else
    echo "registry checks: @arethetypeswrong/cli did not install; skipped"
fi

printf '\n==== artefacts: install times\n'
printf '%s\n' "${timings[@]}"

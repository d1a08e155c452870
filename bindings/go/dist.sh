#!/usr/bin/env bash
# Writes the Go module github.com/cosid-rs/cosid/bindings/go as the module proxy serves it, into OUTDIR:
#
#   OUTDIR/cosid-go-vVERSION.zip    the module zip (paths "github.com/cosid-rs/cosid/bindings/go@vVERSION/...")
#
#     bindings/go/dist.sh OUTDIR
#
# The zip holds the module's files (not bench/, a module of its own) and the repository's licence files, in the
# format `go mod download` reads: docs/go.md shows how to serve it from a folder (GOPROXY=file://...). VERSION is
# the C library's (include/cosid.h); the repository tag of this module is bindings/go/vVERSION.
set -euo pipefail
[ $# = 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
version=v$(sed -n 's/^#define COSID_VERSION "\(.*\)"$/\1/p' "$root/include/cosid.h")
[ "$version" != v ] || { echo "dist: no COSID_VERSION in include/cosid.h" >&2; exit 1; }
module=$(sed -n 's/^module //p' "$here/go.mod")
python3 - "$here" "$root" "$module@$version" "$out/cosid-go-$version.zip" <<'PY'
import os, sys, zipfile
here, root, prefix, dest = sys.argv[1:]
files = []
for dirpath, dirnames, filenames in os.walk(here):
    rel = os.path.relpath(dirpath, here)
    # A folder with a go.mod of its own is another module; hidden folders and the vendor folder are not shipped.
    dirnames[:] = sorted(d for d in dirnames
                         if not d.startswith(".") and d != "vendor"
                         and not os.path.exists(os.path.join(dirpath, d, "go.mod")))
    for f in filenames:
        if f.startswith(".") or f.endswith("~"):
            continue
        files.append(os.path.normpath(os.path.join(rel, f)))
for lic in ("LICENSE-MIT", "LICENSE-APACHE"):
    if lic not in files:
        files.append(lic)
with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
    for f in sorted(files):
        src = os.path.join(here, f) if os.path.exists(os.path.join(here, f)) else os.path.join(root, f)
        info = zipfile.ZipInfo(prefix + "/" + f.replace(os.sep, "/"), date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        with open(src, "rb") as fh:
            z.writestr(info, fh.read())
print(f"{dest}: {len(files)} files")
PY

#!/bin/sh
# Installs the C library: libcosid.so (with its SONAME link), libcosid.a, include/cosid.h and a cosid.pc for
# pkg-config, so that `cc app.c $(pkg-config --cflags --libs cosid)` works.
#
#   scripts/install-c.sh                      build (cargo, release) and install into /usr/local
#   PREFIX=$HOME/.local scripts/install-c.sh  another prefix
#   DESTDIR=/tmp/pkg PREFIX=/usr scripts/install-c.sh   stage for a package
#
# Also honoured: LIBDIR (default $PREFIX/lib), INCLUDEDIR ($PREFIX/include), PKGCONFIGDIR ($LIBDIR/pkgconfig),
# COSID_SKIP_BUILD=1 (install what target/release holds), CARGO_TARGET_DIR, and COSID_C_FEATURES: the library is
# built with every store (SQLite, memory, Redis, PostgreSQL, MySQL, etcd; etcd needs `protoc` to build); set
# COSID_C_FEATURES to a list such as "redis,postgres" (or to "" for SQLite and memory only) to build fewer.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PREFIX:-/usr/local}
LIBDIR=${LIBDIR:-$PREFIX/lib}
INCLUDEDIR=${INCLUDEDIR:-$PREFIX/include}
PKGCONFIGDIR=${PKGCONFIGDIR:-$LIBDIR/pkgconfig}
DESTDIR=${DESTDIR:-}
target=${CARGO_TARGET_DIR:-$root/target}/release

if [ "${COSID_SKIP_BUILD:-0}" != 1 ]; then
    if [ "${COSID_C_FEATURES+set}" = set ]; then
        (cd "$root" && cargo build --release -p cosid-ffi --no-default-features --features "$COSID_C_FEATURES")
    else
        (cd "$root" && cargo build --release -p cosid-ffi)
    fi
fi
for f in "$target/libcosid.so" "$target/libcosid.a" "$root/include/cosid.h"; do
    [ -f "$f" ] || { echo "install-c: $f is missing (run without COSID_SKIP_BUILD=1)" >&2; exit 1; }
done

version=$(sed -n 's/^#define COSID_VERSION "\(.*\)"$/\1/p' "$root/include/cosid.h")
[ -n "$version" ] || { echo "install-c: no COSID_VERSION in include/cosid.h" >&2; exit 1; }
soname=$(objdump -p "$target/libcosid.so" 2>/dev/null | awk '/SONAME/ {print $2}')
[ -n "$soname" ] || soname=libcosid.so

install -d "$DESTDIR$LIBDIR" "$DESTDIR$INCLUDEDIR" "$DESTDIR$PKGCONFIGDIR"
install -m 644 "$root/include/cosid.h" "$DESTDIR$INCLUDEDIR/cosid.h"
install -m 644 "$target/libcosid.a" "$DESTDIR$LIBDIR/libcosid.a"
# The real file carries the full version; the SONAME link is what programs load; libcosid.so is what -lcosid finds.
install -m 755 "$target/libcosid.so" "$DESTDIR$LIBDIR/libcosid.so.$version"
if [ "$soname" != "libcosid.so" ]; then
    ln -sf "libcosid.so.$version" "$DESTDIR$LIBDIR/$soname"
fi
ln -sf "libcosid.so.$version" "$DESTDIR$LIBDIR/libcosid.so"

# Libs.private: what libcosid.a needs besides libc (rustc --print native-static-libs on Linux).
cat > "$DESTDIR$PKGCONFIGDIR/cosid.pc" <<PC
prefix=$PREFIX
exec_prefix=\${prefix}
libdir=$LIBDIR
includedir=$INCLUDEDIR

Name: cosid
Description: Lease-safe Snowflake ids: unique, time-ordered 64-bit ids
Version: $version
Libs: -L\${libdir} -lcosid
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
Cflags: -I\${includedir}
PC

echo "installed libcosid $version into $DESTDIR$PREFIX (library $LIBDIR, header $INCLUDEDIR, pkg-config $PKGCONFIGDIR)"
# Refresh the loader's cache when installing for this system (not when staging into DESTDIR).
if [ -z "$DESTDIR" ] && [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null 2>&1; then
    ldconfig
fi
case ":${PKG_CONFIG_PATH:-}:$(pkg-config --variable pc_path pkg-config 2>/dev/null || true):" in
    *":$PKGCONFIGDIR:"*) ;;
    *) echo "note: add $PKGCONFIGDIR to PKG_CONFIG_PATH for pkg-config to find cosid" ;;
esac

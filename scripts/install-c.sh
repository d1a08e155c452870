#!/bin/sh
# Installs the C library: libcosid.so (with its SONAME link), libcosid.a, include/cosid.h, a cosid.pc for
# pkg-config and a CMake package (lib/cmake/cosid: targets cosid::cosid and cosid::cosid_static), so that
# `cc app.c $(pkg-config --cflags --libs cosid)` and CMake's `find_package(cosid)` work. In the default layout
# (lib/, include/ and lib/pkgconfig/ under PREFIX) both files locate the prefix from their own place, so the
# installed tree can be moved (scripts/dist.sh makes the release tarball this way).
#
#   scripts/install-c.sh                      build (cargo, release) and install into /usr/local
#   PREFIX=$HOME/.local scripts/install-c.sh  another prefix
#   DESTDIR=/tmp/pkg PREFIX=/usr scripts/install-c.sh   stage for a package
#
# Also honoured: LIBDIR (default $PREFIX/lib), INCLUDEDIR ($PREFIX/include), PKGCONFIGDIR ($LIBDIR/pkgconfig),
# COSID_SKIP_BUILD=1 (install what target/release holds), CARGO_TARGET_DIR, and COSID_C_FEATURES: the library is
# built with the released library's stores (SQLite, memory, `http://`, Redis, PostgreSQL); set COSID_C_FEATURES
# to "stores" for every store (MySQL, etcd, ZooKeeper, MongoDB too), or to a list
# such as "redis,mysql" (or to "" for SQLite, `http://` and memory only).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PREFIX:-/usr/local}
LIBDIR=${LIBDIR:-$PREFIX/lib}
INCLUDEDIR=${INCLUDEDIR:-$PREFIX/include}
PKGCONFIGDIR=${PKGCONFIGDIR:-$LIBDIR/pkgconfig}
CMAKEDIR=${CMAKEDIR:-$LIBDIR/cmake/cosid}
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

install -d "$DESTDIR$LIBDIR" "$DESTDIR$INCLUDEDIR" "$DESTDIR$PKGCONFIGDIR" "$DESTDIR$CMAKEDIR"
install -m 644 "$root/include/cosid.h" "$DESTDIR$INCLUDEDIR/cosid.h"
install -m 644 "$target/libcosid.a" "$DESTDIR$LIBDIR/libcosid.a"
# The real file carries the full version; the SONAME link is what programs load; libcosid.so is what -lcosid finds.
install -m 755 "$target/libcosid.so" "$DESTDIR$LIBDIR/libcosid.so.$version"
if [ "$soname" != "libcosid.so" ]; then
    ln -sf "libcosid.so.$version" "$DESTDIR$LIBDIR/$soname"
fi
ln -sf "libcosid.so.$version" "$DESTDIR$LIBDIR/libcosid.so"

# Libs.private: what libcosid.a needs besides libc (rustc --print native-static-libs on Linux).
private_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
if [ "$LIBDIR" = "$PREFIX/lib" ] && [ "$INCLUDEDIR" = "$PREFIX/include" ] && [ "$PKGCONFIGDIR" = "$LIBDIR/pkgconfig" ] \
    && [ "$CMAKEDIR" = "$LIBDIR/cmake/cosid" ]; then
    pc_prefix='${pcfiledir}/../..'
    pc_libdir='${prefix}/lib'
    pc_includedir='${prefix}/include'
    cmake_prefix='${CMAKE_CURRENT_LIST_DIR}/../../..'
    cmake_libdir='${_cosid_prefix}/lib'
    cmake_includedir='${_cosid_prefix}/include'
else
    pc_prefix=$PREFIX
    pc_libdir=$LIBDIR
    pc_includedir=$INCLUDEDIR
    cmake_prefix=$PREFIX
    cmake_libdir=$LIBDIR
    cmake_includedir=$INCLUDEDIR
fi
cat > "$DESTDIR$PKGCONFIGDIR/cosid.pc" <<PC
prefix=$pc_prefix
exec_prefix=\${prefix}
libdir=$pc_libdir
includedir=$pc_includedir

Name: cosid
Description: Lease-safe Snowflake ids: unique, time-ordered 64-bit ids
Version: $version
Libs: -L\${libdir} -lcosid
Libs.private: $private_libs
Cflags: -I\${includedir}
PC

# CMake: find_package(cosid) gives cosid::cosid (the shared library) and cosid::cosid_static (libcosid.a and what
# it needs from the system).
cat > "$DESTDIR$CMAKEDIR/cosidConfig.cmake" <<CMAKE
# The CMake package of libcosid $version: find_package(cosid) defines the imported targets
#   cosid::cosid         libcosid.so (the SONAME $soname)
#   cosid::cosid_static  libcosid.a, with the system libraries it needs
get_filename_component(_cosid_prefix "$cmake_prefix" ABSOLUTE)
set(_cosid_libdir "$cmake_libdir")
set(_cosid_includedir "$cmake_includedir")
if(NOT TARGET cosid::cosid)
  add_library(cosid::cosid SHARED IMPORTED)
  set_target_properties(cosid::cosid PROPERTIES
    IMPORTED_LOCATION "\${_cosid_libdir}/libcosid.so.$version"
    IMPORTED_SONAME "$soname"
    INTERFACE_INCLUDE_DIRECTORIES "\${_cosid_includedir}")
endif()
if(NOT TARGET cosid::cosid_static)
  add_library(cosid::cosid_static STATIC IMPORTED)
  set_target_properties(cosid::cosid_static PROPERTIES
    IMPORTED_LOCATION "\${_cosid_libdir}/libcosid.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES C
    INTERFACE_INCLUDE_DIRECTORIES "\${_cosid_includedir}"
    INTERFACE_LINK_LIBRARIES "gcc_s;util;rt;pthread;m;dl")
endif()
set(cosid_VERSION "$version")
set(cosid_INCLUDE_DIRS "\${_cosid_includedir}")
set(cosid_LIBRARIES cosid::cosid)
unset(_cosid_prefix)
unset(_cosid_libdir)
unset(_cosid_includedir)
CMAKE

# Before 1.0 a minor release may break the ABI (the SONAME is libcosid.so.0.MINOR): a request for 0.1 accepts
# 0.1.x only. From 1.0 on, the same major version.
cat > "$DESTDIR$CMAKEDIR/cosidConfigVersion.cmake" <<CMAKE
set(PACKAGE_VERSION "$version")
if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif(NOT PACKAGE_FIND_VERSION_MAJOR EQUAL "${version%%.*}")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif("${version%%.*}" EQUAL 0 AND NOT PACKAGE_FIND_VERSION_MINOR EQUAL "$(echo "$version" | cut -d. -f2)")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "" AND NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION "\${PACKAGE_VERSION} (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
CMAKE

echo "installed libcosid $version into $DESTDIR$PREFIX (library $LIBDIR, header $INCLUDEDIR, pkg-config $PKGCONFIGDIR, CMake $CMAKEDIR)"
# Refresh the loader's cache when installing for this system (not when staging into DESTDIR).
if [ -z "$DESTDIR" ] && [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null 2>&1; then
    ldconfig
fi
case ":${PKG_CONFIG_PATH:-}:$(pkg-config --variable pc_path pkg-config 2>/dev/null || true):" in
    *":$PKGCONFIGDIR:"*) ;;
    *) echo "note: add $PKGCONFIGDIR to PKG_CONFIG_PATH for pkg-config to find cosid" ;;
esac

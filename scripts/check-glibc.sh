#!/usr/bin/env bash
# Fails when a file needs a newer glibc than FLOOR:
#   - an ELF executable or shared object (the CLI, libcosid.so, the Node addon, the wheel's module): the highest
#     GLIBC_x.y version among the symbols it needs from glibc (`objdump -T`), the version its loader asks for;
#   - a static library (libcosid.a, ending in .a): it names no versions (the program that links it binds them), so
#     each symbol it needs and does not define itself must exist in glibc FLOOR: the glibc of this machine lists every
#     version of each symbol it has, and one at or below FLOOR means that glibc had it (`fcntl64`, GLIBC_2.28, or
#     `__isoc23_strtol`, GLIBC_2.38, would not pass). The stat family is the exception: libc.so exports it since
#     glibc 2.33, and before that libc_nonshared.a, which every link with glibc takes, defined it. Weak references
#     are not needed: the linker leaves them null where glibc lacks the symbol.
# Prints one line per file: its highest version (or the symbols past FLOOR).
#
#     scripts/check-glibc.sh FLOOR FILE...          (.ci/artefacts.sh runs it on what dist/ ships)
#
# Needs binutils (objdump, nm) and sort -V.
set -euo pipefail
floor=${1:?usage: scripts/check-glibc.sh FLOOR FILE...}
shift

newer() { # a b: is version a past version b?
    [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -1)" = "$1" ]
}

# Every symbol of this machine's glibc with the lowest version it has (for static libraries), made once.
glibc_symbols=""
glibc_table() {
    [ -z "$glibc_symbols" ] || return 0
    local libc dir lib
    libc=$(ldd "$(command -v objdump)" | awk '$1 == "libc.so.6" { print $3 }')
    [ -f "$libc" ] || { echo "check-glibc: cannot find this machine's libc.so.6" >&2; exit 2; }
    dir=$(dirname "$libc")
    glibc_symbols=$(mktemp)
    for lib in libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1; do
        [ -f "$dir/$lib" ] && objdump -T "$dir/$lib"
    done | awk '$NF != "" && $(NF-1) ~ /^\(?GLIBC_[0-9.]+\)?$/ && $0 !~ /\*UND\*/ {
            v = $(NF-1); gsub(/[()]|GLIBC_/, "", v); print $NF, v }' |
        sort -k1,1 -k2,2V | awk '!seen[$1]++' >"$glibc_symbols"
}

# In libc_nonshared.a before glibc 2.33 (wrappers of __xstat and its kin), so linkable with every glibc.
nonshared='stat|stat64|fstat|fstat64|lstat|lstat64|fstatat|fstatat64|mknod|mknodat'

status=0
for f in "$@"; do
    case $f in
    *.a)
        glibc_table
        # Strong references only (`U`): a weak one (`w`, `v`) resolves to null where glibc lacks the symbol, which is
        # how Rust's standard library uses newer calls on older glibc (getrandom, statx, gettid,
        # __cxa_thread_atexit_impl: it checks the address before calling, and falls back).
        past=$(comm -23 <(nm --undefined-only -P "$f" 2>/dev/null | awk '$2 == "U" { print $1 }' | sed 's/@.*//' | sort -u) \
            <(nm --defined-only -P "$f" 2>/dev/null | awk '{ print $1 }' | sort -u) |
            join - "$glibc_symbols" | grep -vE "^($nonshared) " |
            while read -r sym v; do newer "$v" "$floor" && echo "$sym (GLIBC_$v)"; done || true)
        if [ -n "$past" ]; then
            echo "check-glibc: $f needs symbols glibc $floor does not have:" $past >&2
            status=1
        else
            echo "glibc: $f: every glibc symbol it needs is in glibc $floor"
        fi
        ;;
    *)
        highest=$(objdump -T "$f" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -uV | tail -1)
        [ -n "$highest" ] || { echo "check-glibc: $f needs no versioned glibc symbol (not a dynamic ELF?)" >&2; status=1; continue; }
        if newer "$highest" "$floor"; then
            echo "check-glibc: $f needs glibc $highest, past $floor:" \
                $(objdump -T "$f" | grep -E "GLIBC_$highest\b" | awk '{ print $NF }' | head -5) >&2
            status=1
        else
            echo "glibc: $f needs glibc $highest at most (floor $floor)"
        fi
        ;;
    esac
done
[ -z "$glibc_symbols" ] || rm -f "$glibc_symbols"
exit $status

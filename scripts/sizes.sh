#!/usr/bin/env bash
# Prints the size of each release artefact in DIST (what scripts/dist.sh made) beside its budget in
# scripts/size-budget.txt, and fails if one is past its budget or missing. The files are measured as they ship:
# the wheel as downloaded, the Node addon, libcosid.so, libcosid.a and the CLI as unpacked from their tarballs.
#
#     scripts/sizes.sh DIST        (scripts/dist.sh prints it; .ci/artefacts.sh fails on it)
#
# Needs tar, gzip, awk.
set -euo pipefail
dist=${1:?usage: scripts/sizes.sh DIST}
budgets=$(dirname "$0")/size-budget.txt
v=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$(dirname "$0")/../Cargo.toml" | head -1)
c=libcosid-$v-x86_64-linux-gnu
cli=cosid-cli-$v-x86_64-linux-gnu

size() { # artefact name -> bytes, or nothing if it is missing
    case $1 in
        wheel) stat -c %s "$dist"/cosid-"$v"-cp39-abi3-manylinux_*_x86_64.whl 2>/dev/null ;;
        node-addon) tar -xOzf "$dist/cosid-linux-x64-gnu-$v.tgz" package/cosid.linux-x64-gnu.node 2>/dev/null | wc -c ;;
        libcosid.so) tar -xOzf "$dist/$c.tar.gz" "$c/lib/libcosid.so.$v" 2>/dev/null | wc -c ;;
        libcosid.a) tar -xOzf "$dist/$c.tar.gz" "$c/lib/libcosid.a" 2>/dev/null | wc -c ;;
        cli) tar -xOzf "$dist/$cli.tar.gz" "$cli/bin/cosid" 2>/dev/null | wc -c ;;
        *) echo "sizes: unknown artefact '$1' in $budgets" >&2; return 1 ;;
    esac
}

over=0
printf '%-12s %12s %12s  %s\n' artefact bytes budget ""
while read -r name budget _; do
    case $name in '' | '#'*) continue ;; esac
    bytes=$(size "$name" || true)
    if [ -z "$bytes" ] || [ "$bytes" = 0 ]; then
        printf '%-12s %12s %12s  %s\n' "$name" - "$budget" "MISSING"
        over=1
    elif [ "$bytes" -gt "$budget" ]; then
        printf '%-12s %12s %12s  %s\n' "$name" "$bytes" "$budget" "PAST ITS BUDGET"
        over=1
    else
        printf '%-12s %12s %12s  %s\n' "$name" "$bytes" "$budget" \
            "$(awk -v b="$bytes" -v m="$budget" 'BEGIN { printf "%.1f MB, %d %% of its budget", b / 1e6, 100 * b / m }')"
    fi
done < "$budgets"
[ "$over" = 0 ] || { echo "sizes: an artefact is missing or past its budget in $budgets" >&2; exit 1; }

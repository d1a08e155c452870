#!/usr/bin/env bash
# Prints ns per id of cosid's Go binding beside github.com/sony/sonyflake and github.com/bwmarrin/snowflake, in one
# run (bench/bench_test.go says what each figure measures). Needs libcosid through pkg-config, as the binding
# does (docs/go.md), and the Go module proxy for the two peers the first time.
#
#     bindings/go/bench.sh
#
# COSID_GO_BENCH_COUNT (default 200000) ids per burst and batch benchmark, COSID_GO_BENCH_SUSTAINED (default
# 100000) per sustained one: Sonyflake's sustained loop issues 25,600 ids per second, so 100000 take 4 s.
set -euo pipefail
cd "$(dirname "$0")/bench"
count=${COSID_GO_BENCH_COUNT:-200000}
sustained=${COSID_GO_BENCH_SUSTAINED:-100000}
export GOFLAGS=${GOFLAGS:--mod=mod}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench 'Burst|Batch' -benchtime "${count}x" -count 1 . | tee "$out"
go test -run '^$' -bench 'Sustained' -benchtime "${sustained}x" -count 1 . | tee -a "$out"
echo
echo "ns per id (go $(go env GOVERSION), $(nproc) cores):"
awk '/^Benchmark/ {
    name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
    for (i = 2; i <= NF; i++) if ($(i+1) == "ns/op") printf "  %-40s %12s ns/id\n", name, $i
}' "$out"

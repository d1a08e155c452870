#!/bin/sh
# The C API's cost beside the Rust API's, in one run: ns per id of cosid_next_id() in bursts below the cap, and
# sustained ids/s as a percent of the cap (tests/c/bench.c), then the same for cosid::Runtime::next_id
# (ffi/benches/rust_next_id.rs), with ferroid (the Rust peer) measured the same way. Prints figures; asserts
# nothing. Usage: tests/c/bench.sh [SECONDS]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-2}
out="$root/target/c-tests"
mkdir -p "$out"
cd "$root"
cargo build -q -p cosid-ffi --release
make -s -C "$here" "$out/lib/libcosid.so" >/dev/null
cc -std=c11 -O2 -Wall -Wextra -Werror -pedantic -I"$root/include" "$here/bench.c" -o "$out/bench" \
    -L"$out/lib" -lcosid -Wl,-rpath,"$out/lib"
cargo bench -q -p cosid-ffi --bench rust_next_id --no-run 2>/dev/null
"$out/bench" "$seconds" | tee "$out/bench-c.txt"
cargo bench -q -p cosid-ffi --bench rust_next_id -- "$seconds" | tee "$out/bench-rust.txt"
# The difference in bursts: what a C call costs beyond a Rust call (means, and medians of the per-burst figures),
# and the C call against ferroid's Rust call measured the same way in this run.
awk '/cosid_next_id .*burst/ {cm=$(NF-4); cmed=$(NF-1)} END {print cm, cmed}' "$out/bench-c.txt" > "$out/bench-c.fig"
awk '/Runtime::next_id .*burst/ {rm=$(NF-4); rmed=$(NF-1)} END {print rm, rmed}' "$out/bench-rust.txt" > "$out/bench-rust.fig"
awk '/ferroid \(Rust peer\) .*burst/ {fm=$(NF-4); fmed=$(NF-1)} END {print fm, fmed}' "$out/bench-rust.txt" > "$out/bench-ferroid.fig"
awk '/ferroid via a C call .*burst/ {fm=$(NF-4); fmed=$(NF-1)} END {print fm, fmed}' "$out/bench-rust.txt" > "$out/bench-ferroid-c.fig"
paste "$out/bench-c.fig" "$out/bench-rust.fig" | awk '{ printf "C cosid_next_id() costs %+.2f ns/id (mean) and %+.2f ns/id (median) beside Runtime::next_id\n", $1 - $3, $2 - $4 }'
paste "$out/bench-c.fig" "$out/bench-ferroid.fig" | awk '{ printf "ferroid (Rust) / C cosid_next_id(): %.2f (means), %.2f (medians); above 1, the C call is the faster\n", $3 / $1, $4 / $2 }'
paste "$out/bench-c.fig" "$out/bench-ferroid-c.fig" | awk '{ printf "ferroid via a C call / C cosid_next_id(): %.2f (means), %.2f (medians); above 1, cosid is the faster\n", $3 / $1, $4 / $2 }'

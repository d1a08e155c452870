#!/usr/bin/env bash
# Builds the documentation site from docs/ (docs/book.toml, docs/SUMMARY.md) with mdBook into target/book.
#
#     bash scripts/docs.sh            # then open target/book/index.html
#
# mdBook comes from crates.io: if the pinned version is not in ${CARGO_TARGET_DIR:-target}/docs-tools, it is
# installed there with `cargo install --locked` (a few minutes, once; CI keeps it for the rest of the run). Only
# its `search` feature: the site is static, so the `serve` and `watch` features (a web server, a file watcher)
# would only lengthen the build. Each step prints its duration.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

mdbook_version=0.4.52
tools="${CARGO_TARGET_DIR:-target}/docs-tools"
case "$tools" in /*) ;; *) tools="$root/$tools" ;; esac
mdbook="$tools/bin/mdbook"
out="$root/target/book"

step() {
    local name="$1" start end ms
    shift
    start=$(date +%s%N)
    "$@"
    end=$(date +%s%N)
    ms=$(((end - start) / 1000000))
    printf 'docs: %s took %d.%01d s\n' "$name" $((ms / 1000)) $((ms % 1000 / 100)) >&2
}

install_mdbook() {
    if [ -x "$mdbook" ] && [ "$("$mdbook" --version)" = "mdbook v$mdbook_version" ]; then
        echo "docs: mdbook $mdbook_version already in $tools" >&2
        return
    fi
    cargo install --locked mdbook --version "$mdbook_version" --no-default-features --features search \
        --root "$tools"
}

build() {
    rm -rf "$out"
    "$mdbook" build "$root/docs" --dest-dir "$out"
}

step "mdbook install" install_mdbook
step "mdbook build" build
echo "docs: site in ${out#"$root"/}/index.html" >&2

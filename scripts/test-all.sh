#!/usr/bin/env bash
# Runs every test of the project. Installs and starts what the tests need (store servers from Debian's packages,
# Python and Node build tools from their registries); servers listen on 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==== %s\n' "$*"; }

step "rust: format and lints"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings

step "rust: tests (core and cli)"
cargo test

#!/usr/bin/env bash
# The Node package, as a developer works on it and against the addon that ships. Needs Node 20 or newer, npm and
# the Rust toolchain; installs Node and npm from Debian's packages when they are missing.
#
#   1. lints of the addon crate (a member of the root workspace, not a default one: the root's `cargo clippy -p
#      cosid -p cosid-cli` does not reach it);
#   2. `npm ci` inside bindings/node, then a check that the committed index.d.ts is what napi generates: from the
#      type definitions dist/'s release build of the addon left (scripts/dist.sh), or without dist/ by `npm run
#      build` (napi builds for an explicit target triple, in target/<triple>/: a second build of everything);
#   3. the tests (node --test), the store tests against real servers, and one quick run of the benchmark harness
#      (figures only), against the prebuilt addon of dist/'s platform package (scripts/dist.sh) when there is one,
#      else against the build of step 2. .ci/artefacts.sh installs the npm tarballs into fresh projects.
# The addon carries the released stores (docs/install.md); its store tests check that the others are refused.
# Each of Redis, PostgreSQL, MariaDB, etcd, ZooKeeper, MongoDB (FerretDB) and
# `cosid serve` whose COSID_TEST_*_URL is not set yet is started with .ci/services/ (scripts/test-all.sh has
# started them all and exported their URLs, which reach this script through the environment);
# COSID_NODE_NO_SERVERS=1 starts none (the tests of a store without its URL then report themselves skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
pkg=$root/bindings/node

step() { printf '\n==== %s\n' "$*"; }

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  step "node: installing nodejs and npm from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "node: Node $(node --version) is too old; the package needs Node 20 or newer" >&2
  exit 1
fi
echo "node $(node --version), npm $(npm --version), $(cargo --version)"

if [ "${COSID_NODE_NO_SERVERS:-0}" != "1" ]; then
  step "node: store servers for the store tests"
  # etcd first: its script also installs protoc, which the etcd tests' own gRPC client needs.
  [ -n "${COSID_TEST_ETCD_URL:-}" ] || eval "$(bash "$root/.ci/services/etcd.sh")"
  [ -n "${COSID_TEST_REDIS_URL:-}" ] || eval "$(bash "$root/.ci/services/redis.sh")"
  [ -n "${COSID_TEST_POSTGRES_URL:-}" ] || eval "$(bash "$root/.ci/services/postgres.sh")"
  [ -n "${COSID_TEST_MYSQL_URL:-}" ] || eval "$(bash "$root/.ci/services/mariadb.sh")"
  [ -n "${COSID_TEST_ZOOKEEPER_URL:-}" ] || eval "$(bash "$root/.ci/services/zookeeper.sh")"
  [ -n "${COSID_TEST_MONGODB_URL:-}" ] || eval "$(bash "$root/.ci/services/ferretdb.sh")"
  # `cosid serve` in front of an SQLite file: the store tests run through it too (the `http://` store).
  [ -n "${COSID_TEST_HTTP_URL:-}" ] || eval "$(bash "$root/.ci/services/serve.sh")"
fi

step "node: format and lints of the addon crate"
cargo fmt -p cosid-node -- --check
# scripts/test-all.sh lints the addon with the other crates, in one check build (COSID_NODE_LINTED=1).
if [ "${COSID_NODE_LINTED:-0}" != 1 ]; then
  cargo clippy -p cosid-node --all-targets -- -D warnings
fi

step "node: npm ci"
cd "$pkg"
npm ci --ignore-scripts --no-audit --no-fund

platform_tgz=$(ls "$root"/dist/cosid-linux-x64-gnu-*.tgz 2>/dev/null | head -1 || true)
typedefs=${CARGO_TARGET_DIR:-$root/target}/napi-type-def/cosid-node

# The committed index.d.ts must be what napi generates. With dist/, from the type definitions its release build of
# the addon left (scripts/dist.sh), rendered by @napi-rs/cli as `napi build --dts` renders them; without, by
# `napi build` itself (which passes `--target <host triple>` to cargo, so it compiles apart from any other build).
# COSID_NODE_DTS_CHECK=0 skips it for a quick run.
if [ "${COSID_NODE_DTS_CHECK:-1}" != 0 ]; then
  if [ -n "$platform_tgz" ] && [ -s "$typedefs" ]; then
    step "node: index.d.ts is what napi generates from dist's build of the addon"
    generated=$(mktemp)
    node scripts/typedefs.mjs "$(dirname "$typedefs")" "$generated"
    if ! diff -u index.d.ts "$generated"; then
      rm -f "$generated"
      echo "node: index.d.ts is not what napi generates: run 'npm run build' in bindings/node and commit it" >&2
      exit 1
    fi
    rm -f "$generated"
  else
    step "node: npm run build (napi build --dts), and index.d.ts is what it generates"
    build_start=$SECONDS
    npm run build
    echo "node: addon built in $((SECONDS - build_start)) s"
    if ! git -C "$root" diff --exit-code -- bindings/node/index.d.ts; then
      echo "node: index.d.ts is not what napi build generates: run 'npm run build' in bindings/node and commit it" >&2
      exit 1
    fi
  fi
fi

if [ -n "$platform_tgz" ]; then
  step "node: the tests load the prebuilt addon of ${platform_tgz#"$root"/}"
  addon=$pkg/cosid.$(node -p "require('./platform.js').platformName()").node
  tar -xOzf "$platform_tgz" "package/$(basename "$addon")" > "$addon.tmp"
  mv "$addon.tmp" "$addon"
  # The addon exports napi-rs's entry points only: not linkme's __start_/__stop_ section symbols
  # (bindings/node/build.rs hides them, as ffi/build.rs does for libcosid.so).
  others=$(nm -D --defined-only "$addon" | awk '$NF !~ /^(napi_|node_api_)/ { print $NF }')
  if [ -n "$others" ]; then
    echo "node: the addon exports symbols that are not napi_* or node_api_*:" $others >&2
    exit 1
  fi
  echo "node: the addon exports $(nm -D --defined-only "$addon" | wc -l) symbols, every one napi_* or node_api_*"
else
  step "node: no dist/ (scripts/dist.sh): the tests use a build from this checkout"
  [ "${COSID_NODE_DTS_CHECK:-1}" != 0 ] || node scripts/build.js
fi

step "node: tests"
node --test test/*.test.js test/*.test.mjs

step "node: benchmark harness (figures only)"
node bench.mjs --quick

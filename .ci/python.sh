#!/usr/bin/env bash
# Installs the Python package into a fresh virtual environment and runs its tests, which also run the examples
# under examples/python/. Then a short benchmark smoke run. The package is the release wheel in dist/, made by
# scripts/dist.sh (scripts/test-all.sh runs it first), so the tests run against the artefact that ships; without a
# wheel in dist/ (or with COSID_PY_FROM_SOURCE=1) it is built from the checkout as `pip install ./bindings/python`
# does, which needs a Rust toolchain and takes minutes.
#
#     bash .ci/python.sh
#
# Needs Python 3.9+ with venv; pip fetches pytest and the benchmark peers (and maturin for a source build) from PyPI.
# The package carries the released stores (docs/install.md): its store tests run them against real servers, and
# check that the others are refused with a ConfigError saying how to reach them. Each of Redis, PostgreSQL,
# MariaDB, etcd, ZooKeeper, MongoDB (FerretDB) and `cosid serve` whose COSID_TEST_*_URL is not set yet is started
# with .ci/services/ (scripts/test-all.sh has started them all and exported their URLs, which reach this script
# through the environment).
# COSID_PYTHON_NO_SERVERS=1 starts none (the tests of a store without its URL then report themselves skipped).
# Settings (environment): PYTHON (default python3), COSID_PY_VENV (default: a new temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

python="${PYTHON:-python3}"

if [ "${COSID_PYTHON_NO_SERVERS:-0}" != "1" ]; then
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
venv="${COSID_PY_VENV:-$(mktemp -d "${TMPDIR:-/tmp}/cosid-py.XXXXXX")/venv}"

echo "python.sh: creating $venv with $("$python" --version)"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
wheel=$(ls "$root"/dist/cosid-*-cp39-abi3-manylinux_*.whl 2>/dev/null | head -1 || true)
build_start=$SECONDS
if [ -n "$wheel" ] && [ "${COSID_PY_FROM_SOURCE:-0}" != 1 ]; then
    echo "python.sh: pip install ${wheel#"$root"/} (the release wheel)"
    "$venv/bin/python" -m pip install --no-index "$wheel"
    echo "python.sh: installed in $((SECONDS - build_start)) s"
else
    echo "python.sh: pip install ./bindings/python (builds the Rust extension in release mode)"
    "$venv/bin/python" -m pip install ./bindings/python
    echo "python.sh: built and installed in $((SECONDS - build_start)) s"
fi
# uWSGI for tests/test_uwsgi.py, built from PyPI's source with the C compiler (its Python-only profile: half the
# build time of the default one); mypy and pyright for the types.
tools_start=$SECONDS
"$venv/bin/python" -m pip install -q pytest snowflake-id uuid-utils mypy pyright
UWSGI_PROFILE=pyonly "$venv/bin/python" -m pip install -q uwsgi
echo "python.sh: test tools installed in $((SECONDS - tools_start)) s"

# From the tests' folder, so `import cosid` is the installed package and never the source tree.
cd "$root/bindings/python"

# The types: every documented pattern (tests/typing/patterns.py) checks under mypy --strict and pyright's strict
# mode against the installed package, and the stubs match the native module (stubtest).
export MYPY_CACHE_DIR=/dev/null  # nothing written into the checkout
"$venv/bin/python" -m mypy --strict tests/typing/patterns.py
(cd "$(mktemp -d)" && "$venv/bin/python" -m mypy.stubtest cosid)  # stubtest writes its cache in the folder it runs in
# PyPI's pyright fetches Node on first use; without it, npm's pyright package.
if "$venv/bin/pyright" --version >/dev/null 2>&1; then
    "$venv/bin/pyright" --pythonpath "$venv/bin/python" tests/typing/patterns.py
else
    npx --yes pyright --pythonpath "$venv/bin/python" tests/typing/patterns.py
fi
# A deadlock must fail the run, not hang it: the suite takes seconds.
timeout 900 "$venv/bin/python" -m pytest -q -p no:cacheprovider -o faulthandler_timeout=300 tests
"$venv/bin/python" bench.py --quick

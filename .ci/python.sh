#!/usr/bin/env bash
# Builds the Python package into a fresh virtual environment, as a user would (`pip install ./bindings/python`),
# and runs its tests, which also run the examples under examples/python/. Then a short benchmark smoke run.
#
#     bash .ci/python.sh
#
# Needs Python 3.9+ with venv and a Rust toolchain; pip fetches maturin, pytest and the benchmark peers from PyPI.
# Starts a throwaway Redis (.ci/services/redis.sh) for the Redis tests unless COSID_TEST_REDIS_URL is already set;
# COSID_PYTHON_NO_REDIS=1 skips that (the Redis tests then report themselves skipped).
# Settings (environment): PYTHON (default python3), COSID_PY_VENV (default: a new temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

python="${PYTHON:-python3}"
venv="${COSID_PY_VENV:-$(mktemp -d "${TMPDIR:-/tmp}/cosid-py.XXXXXX")/venv}"

echo "python.sh: creating $venv with $("$python" --version)"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
echo "python.sh: pip install ./bindings/python (builds the Rust extension in release mode)"
"$venv/bin/python" -m pip install ./bindings/python
"$venv/bin/python" -m pip install -q pytest snowflake-id uuid-utils

if [ -z "${COSID_TEST_REDIS_URL:-}" ] && [ "${COSID_PYTHON_NO_REDIS:-0}" != "1" ]; then
    eval "$(bash "$root/.ci/services/redis.sh")"
fi

# From the tests' folder, so `import cosid` is the installed package and never the source tree.
cd "$root/bindings/python"
# A deadlock must fail the run, not hang it: the suite takes seconds.
timeout 900 "$venv/bin/python" -m pytest -q -p no:cacheprovider -o faulthandler_timeout=300 tests
"$venv/bin/python" bench.py --quick

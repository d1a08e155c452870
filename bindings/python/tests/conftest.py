"""Test setup: every runtime uses a throwaway store, never the user's state directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

# Before cosid starts any runtime: the process-wide runtime reads COSID_* at its first use.
_STATE = tempfile.mkdtemp(prefix="cosid-pytest-")
for _name in [n for n in os.environ if n.startswith("COSID_") and not n.startswith("COSID_TEST_")]:
    del os.environ[_name]
os.environ["COSID_STORE"] = f"sqlite:///{_STATE}/leases.db"

import cosid  # noqa: E402
from cosid import _events  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_process_runtime() -> Iterator[None]:
    """Each test starts with the process-wide runtime stopped, configured from the environment, no callbacks."""
    yield
    _events._process_callbacks.clear()
    cosid._cosid._process_callbacks(False)
    cosid.configure()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A fresh SQLite lease database for one test."""
    return tmp_path / "leases.db"


@pytest.fixture
def store(db: Path) -> str:
    """The store URL of `db`."""
    return f"sqlite:///{db}"


_SQL = """
import json, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=10)
rows = conn.execute(sys.argv[2], json.loads(sys.argv[3])).fetchall()
conn.commit()
print(json.dumps(rows))
"""


def sql(db: Path, statement: str, *params: object) -> list:
    """Runs one statement on the lease database, as an operator's hand edit would.

    In another process: this process's SQLite (the store's, linked into cosid) and Python's are two libraries,
    and POSIX file locks are per process, so a second library here would neither see nor respect its locks.
    """
    out = subprocess.run(
        [sys.executable, "-c", _SQL, str(db), statement, json.dumps(params)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout)


class StoreLock:
    """Holds an exclusive transaction on the lease database from another process: the store stops answering."""

    _SCRIPT = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=10, isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""

    def __init__(self, db: Path) -> None:
        self.db = db

    def __enter__(self) -> "StoreLock":
        self.proc = subprocess.Popen(
            [sys.executable, "-c", self._SCRIPT, str(self.db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "locked"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=10)

"""Test setup: every runtime uses a throwaway store, never the user's state directory."""

from __future__ import annotations

import os
import sqlite3
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
    cosid.configure()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A fresh SQLite lease database for one test."""
    return tmp_path / "leases.db"


@pytest.fixture
def store(db: Path) -> str:
    """The store URL of `db`."""
    return f"sqlite:///{db}"


def sql(db: Path, statement: str, *params: object) -> list:
    """Runs one statement on the lease database, as an operator's hand edit would."""
    conn = sqlite3.connect(db, timeout=10)
    try:
        rows = conn.execute(statement, params).fetchall()
        conn.commit()
        return rows
    finally:
        conn.close()

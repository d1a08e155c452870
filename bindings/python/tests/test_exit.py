"""A normal interpreter exit releases every slot the process holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import sql

SCRIPT = """
import sys, cosid
cosid.configure(store=sys.argv[1], namespace="exit")
cosid.next_id()
kept_open = cosid.Runtime(store=sys.argv[1], namespace="exit")  # never closed by the script
kept_open.next_id()
print(cosid.status().slot, kept_open.status().slot)
"""


def test_interpreter_exit_releases_the_slots(db: Path, store: str) -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT, store], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    slots = sorted(int(s) for s in out.stdout.split())
    rows = sql(db, "SELECT slot, owner_key FROM cosid_slot ORDER BY slot")
    assert [r[0] for r in rows] == slots
    assert [r[1] for r in rows] == [None, None], f"slots still held after exit: {rows}"


def test_after_exit_no_runtime_starts(store: str) -> None:
    script = (
        "import sys, cosid\n"
        "cosid.configure(store=sys.argv[1])\n"
        "cosid._cosid._at_exit()\n"
        "try:\n    cosid.next_id()\nexcept cosid.ClosedError as e:\n    print(e.code)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, store], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "CLOSED"

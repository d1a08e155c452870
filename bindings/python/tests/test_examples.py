"""The examples under examples/python/ run and print what they promise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "python"


def run(name: str, tmp_path: Path, *args: str) -> str:
    env = dict(os.environ, COSID_STORE=f"sqlite:///{tmp_path}/leases.db")
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_every_example_is_tested() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == ["explicit_runtime.py", "fork_workers.py", "quickstart.py"]


def test_quickstart(tmp_path: Path) -> None:
    out = run("quickstart.py", tmp_path)
    assert "parts    IdParts(timestamp=datetime.datetime(" in out
    assert "lease    slot 0 of namespace 'default' in sqlite" in out


def test_explicit_runtime(tmp_path: Path) -> None:
    out = run("explicit_runtime.py", tmp_path, f"sqlite:///{tmp_path}/explicit.db")
    assert "event    RELEASED(" in out
    assert "closed   True" in out and "after    CLOSED:" in out


@pytest.mark.skipif(sys.platform != "linux", reason="the fork start method")
def test_fork_workers(tmp_path: Path) -> None:
    out = run("fork_workers.py", tmp_path)
    assert "unique   11000 ids from " in out
    lines = [line.split() for line in out.splitlines()]
    parent_slot = next(words[4] for words in lines if words[0] == "parent")
    # A pool worker may run several tasks; each worker process has one slot, its own.
    slot_of = {words[2]: words[4] for words in lines if words[0] == "worker"}
    slots = list(slot_of.values()) + [parent_slot]
    assert len(slots) == len(set(slots))

"""The Python driver of the cross-language conformance table, ``tests/conformance/cases.txt`` at the root of the
repository (its header describes the format). The same cases run in Rust, the CLI, C and Node: a case added to
the table runs here too. Each case runs on a fresh ``cosid.Runtime`` (the settings given as text, as the table has
them) and a fresh temporary directory; ``fork_next_id`` forks for real.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

import cosid

TABLE = Path(__file__).resolve().parents[3] / "tests" / "conformance" / "cases.txt"
ACTIONS = {"start", "next_id", "slot", "shutdown", "fork_next_id"}


def read_cases() -> List[Tuple[str, List[Tuple[str, str]], List[Tuple[str, str]]]]:
    cases: list = []
    for n, line in enumerate(TABLE.read_text().splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word == "case":
            cases.append((rest, [], [], []))
        elif word == "set":
            key, _, value = rest.partition(" ")
            cases[-1][1].append((key, value))
        elif word == "hidden":
            cases[-1][3].append(rest)
        elif word in ACTIONS:
            cases[-1][2].append((word, rest))
        else:
            raise AssertionError(f"{TABLE}:{n}: unknown directive {word!r}")
    return cases


CASES = read_cases() if TABLE.exists() else []


# Every form of every error of the current case, as Python shows it (str and repr), for `hidden`.
SHOWN: List[str] = []


def outcome(call) -> str:
    try:
        call()
        return "OK"
    except cosid.CosidError as e:
        SHOWN.extend([str(e), repr(e), str(e.args)])
        return e.code


def fork_next_id(rt: Optional[cosid.Runtime]) -> str:
    """Forks; the child issues one id on the runtime it inherited and reports its outcome."""
    parent_slot = rt.status().slot if rt is not None else None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            try:
                assert rt is not None
                rt.next_id()
                got = "OK_OTHER_SLOT" if rt.status().slot != parent_slot else "OK_SAME_SLOT"
            except cosid.CosidError as e:
                got = e.code
            os.write(write, pickle.dumps(got))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return pickle.loads(data) if data else "CHILD_DIED"


def test_the_table_is_there() -> None:
    assert TABLE.exists(), f"{TABLE} is missing"
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_case(case) -> None:
    name, settings, steps, hidden = case
    failures = []
    SHOWN.clear()
    with tempfile.TemporaryDirectory(prefix="cosid-conformance-") as tmp:
        kwargs = {key: value.replace("{dir}", tmp) for key, value in settings}
        rt: Optional[cosid.Runtime] = None

        def start() -> None:
            nonlocal rt
            rt = cosid.Runtime(**kwargs)

        for action, expect in steps:
            if action == "start":
                got = outcome(start)
            elif action == "next_id":
                got = outcome(lambda: rt.next_id())
            elif action == "shutdown":
                got = outcome(lambda: rt.shutdown())
            elif action == "slot":
                try:
                    got = str(rt.status().slot)
                except cosid.CosidError as e:
                    got = e.code
            else:
                got = fork_next_id(rt)
            if got != expect:
                failures.append(f"{action}: expected {expect}, got {got}")
        if rt is not None:
            SHOWN.append(repr(rt))
            rt.shutdown()
    for text in hidden:
        failures.extend(f"shows {text!r}: {shown}" for shown in SHOWN if text in shown)
    assert not failures, f"{name}: " + "; ".join(failures)

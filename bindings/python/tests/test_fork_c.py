"""Forks that run no Python fork hook (uWSGI's prefork, a C extension's ``fork()``, ``ctypes``): the child must
behave as one forked by ``os.fork()``, with a slot of its own, never a runtime that fails for life, never a hang.

``ctypes.CDLL(None).fork`` releases the GIL around the call, as uWSGI's master does with ``--enable-threads``, so
another thread may hold the GIL, or be inside a store call, at the fork: the two hazards of issue 28 (a child that
inherits the GIL held by a thread it does not have hangs in ``take_gil``; one forked inside the keeper's SQLite
write got ``ConfigError`` at every call for its whole life)."""

from __future__ import annotations

import ctypes
import os
import pickle
import random
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, List, Tuple

import pytest

import cosid

FORKS = 40
TTL = 0.1  # a renewal (an SQLite write, and an event) every 33 ms

libc = ctypes.CDLL(None, use_errno=True)  # releases the GIL around each call
libc_gil = ctypes.PyDLL(None)  # keeps the GIL held, as a C loop that never lets Python threads run


def child_issues(write: int) -> None:
    """In the child of a C fork: issue ids, report them (or the error), exit without Python's clean-up."""
    code = 1
    try:
        try:
            ids = cosid.next_ids(50) + [cosid.next_id() for _ in range(10)]
            s = cosid.status()
            report: Tuple[Any, ...] = ("ok", s.slot, s.incarnation, ids)
        except Exception as e:  # noqa: BLE001 - the parent reports it
            report = ("error", type(e).__name__, str(e), [])
        os.write(write, pickle.dumps(report))
        code = 0
    finally:
        os._exit(code)


def c_fork_and_collect(seed: int) -> List[Tuple[Any, ...]]:
    rng = random.Random(seed)
    results = []
    for _ in range(FORKS):
        time.sleep(rng.uniform(0, TTL / 2))
        read, write = os.pipe()
        pid = libc.fork()
        if pid == 0:
            child_issues(write)
        assert pid > 0, f"fork failed: errno {ctypes.get_errno()}"
        os.close(write)
        ready, _, _ = select.select([read], [], [], 20)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            results.append(("hang", pid, "", []))
        else:
            with os.fdopen(read, "rb") as f:
                data = f.read()
            results.append(pickle.loads(data) if data else ("died", pid, "", []))
        if not ready:
            os.close(read)
        os.waitpid(pid, 0)
    return results


def check(
    results: List[Tuple[Any, ...]], parent: cosid.Status, parent_ids: List[int], seed: int, events: Any = ()
) -> None:
    bad = [r[:3] for r in results if r[0] != "ok"]
    kinds = Counter(r[0] for r in bad)
    assert not bad, f"seed {seed}: {len(bad)} of {FORKS} children failed ({dict(kinds)}): {bad[:3]}"
    # A child may take its parent's slot only if the parent lost it (a 100 ms lease can lapse on a loaded machine:
    # the parent then takes a new lease, with another fence); the ids below are unique either way.
    after = cosid.status()
    kept = (after.slot, after.fence, after.incarnation) == (parent.slot, parent.fence, parent.incarnation)
    everything = list(parent_ids)
    for _, slot, _, ids in results:
        assert slot != parent.slot or not kept, (
            f"seed {seed}: a child issued on its parent's live slot {slot}; parent's events: {events}"
        )
        assert {cosid.parse(i).slot for i in ids} == {slot}
        everything += ids
    assert len(everything) == len(set(everything)), f"seed {seed}: repeated ids"


def test_c_forks_during_renewals_give_each_child_its_own_slot(store: str) -> None:
    seed = random.randrange(2**32)
    print(f"seed {seed}")
    cosid.configure(store=store, namespace="c-fork", ttl=TTL)
    parent_ids = cosid.next_ids(100)
    parent = cosid.status()
    results = c_fork_and_collect(seed)
    check(results, parent, parent_ids + cosid.next_ids(100), seed)


def test_c_forks_while_a_callback_holds_the_gil(store: str) -> None:
    """A callback that runs Python on the keeper thread at every renewal: a C fork must wait for it to end, not copy
    the GIL held into the child."""
    seed = random.randrange(2**32)
    print(f"seed {seed}")

    seen: List[str] = []

    def busy(event: cosid.Event) -> None:
        if event.name != "RENEWED":
            seen.append(f"{time.monotonic():.3f} {event}")
        end = time.perf_counter() + 0.005  # holds the GIL for 5 ms of every renewal's 33
        while time.perf_counter() < end:
            pass

    cosid.on_event(busy)
    try:
        cosid.configure(store=store, namespace="c-fork-callback", ttl=TTL)
        parent_ids = cosid.next_ids(100)
        parent = cosid.status()
        results = c_fork_and_collect(seed)
    finally:
        cosid.off_event(busy)
    check(results, parent, parent_ids + cosid.next_ids(100), seed, seen)


_READ_LEASE = """
import sqlite3, sys, time
time.sleep(float(sys.argv[3]))
conn = sqlite3.connect(sys.argv[1], timeout=10)
row = conn.execute("SELECT incarnation, expires_at FROM cosid_slot WHERE namespace = ? AND slot = ?",
                   (sys.argv[4], int(sys.argv[2]))).fetchone()
print(row[0], row[1], int(time.time() * 1000), flush=True)
"""


def test_renewals_go_on_while_the_gil_is_held_for_long(db: Path, store: str) -> None:
    """uWSGI's master without --enable-threads holds the GIL in its C loop, so Python threads never run there: a
    keeper that took the GIL at every renewal (to deliver the event to no callback) stopped renewing, the master's
    lease lapsed, and a worker took its slot. With no callback registered, no thread of cosid takes the GIL."""
    cosid.configure(store=store, namespace="gil-held", ttl=TTL)
    cosid.next_id()
    s = cosid.status()
    reader = subprocess.Popen(
        [sys.executable, "-c", _READ_LEASE, str(db), str(s.slot), "1.0", "gil-held"],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.2)  # the reader is running
    libc_gil.usleep(1_500_000)  # 1.5 s with the GIL held, 15 ttls
    out, _ = reader.communicate(timeout=30)
    incarnation, expires_at, now = out.split()
    assert incarnation == s.incarnation
    # Renewed up to the read, give or take a late renewal on a loaded machine (a keeper stopped by the GIL leaves
    # the lease expired about 900 ms before the read).
    assert int(expires_at) > int(now) - 300, (
        f"the lease lapsed while the GIL was held: expired {int(now) - int(expires_at)} ms before it was read"
    )
    assert cosid.status().fence == s.fence

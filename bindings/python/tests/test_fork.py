"""Fork safety: a forked child never issues ids on its parent's slot; it leases its own, with a new incarnation."""

from __future__ import annotations

import multiprocessing
import os
import pickle
from pathlib import Path
from typing import List, Tuple

import pytest

import cosid

fork = multiprocessing.get_context("fork")

CHILDREN = 8
PER_CHILD = 4_000


def issue_in_child(queue: "multiprocessing.Queue[Tuple]", n: int, barrier=None) -> None:
    # next_id() first: its fast path is the one that must not run on the parent's lease.
    ids = [cosid.next_id() for _ in range(n - n // 2)] + cosid.next_ids(n // 2)
    s = cosid.status()
    if barrier is not None:
        barrier.wait(timeout=60)  # all children hold their leases at once (an exited child releases its slot)
    queue.put((os.getpid(), s.slot, s.incarnation, ids))


def test_parent_and_eight_children_issue_unique_ids_on_distinct_slots(store: str) -> None:
    cosid.configure(store=store, namespace="fork")
    parent_ids = cosid.next_ids(1_000)  # the parent's runtime is running when it forks
    parent = cosid.status()
    queue = fork.Queue()
    barrier = fork.Barrier(CHILDREN)
    children = [fork.Process(target=issue_in_child, args=(queue, PER_CHILD, barrier)) for _ in range(CHILDREN)]
    for c in children:
        c.start()
    parent_ids += [cosid.next_id() for _ in range(PER_CHILD)]  # while the children run
    results = [queue.get(timeout=60) for _ in children]
    for c in children:
        c.join(timeout=60)
        assert c.exitcode == 0

    slots = [parent.slot] + [slot for _, slot, _, _ in results]
    assert len(set(slots)) == CHILDREN + 1, f"slots shared: {slots}"
    incarnations = {parent.incarnation} | {inc for _, _, inc, _ in results}
    assert len(incarnations) == CHILDREN + 1
    everything = list(parent_ids)
    for pid, slot, _, ids in results:
        assert pid != os.getpid() and len(ids) == PER_CHILD
        assert {cosid.parse(i).slot for i in ids} == {slot}
        everything += ids
    assert len(everything) == len(set(everything)), "duplicate ids between parent and children"
    # The parent kept its lease: same slot, same fence, still issuing on it.
    after = cosid.status()
    assert (after.slot, after.fence, after.incarnation) == (parent.slot, parent.fence, parent.incarnation)
    assert cosid.parse(cosid.next_id()).slot == parent.slot


def test_a_child_started_before_the_parent_used_cosid(store: str) -> None:
    cosid.configure(store=store, namespace="fork-lazy")
    queue = fork.Queue()
    child = fork.Process(target=issue_in_child, args=(queue, 100))
    child.start()
    _, child_slot, _, child_ids = queue.get(timeout=60)
    child.join(timeout=60)
    parent_ids = cosid.next_ids(100)
    assert not set(child_ids) & set(parent_ids)


def test_os_fork_directly(store: str) -> None:
    cosid.configure(store=store, namespace="os-fork")
    before = cosid.next_id()
    parent = cosid.status()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            os.close(read)
            ids = cosid.next_ids(500)
            s = cosid.status()
            os.write(write, pickle.dumps((s.slot, s.incarnation, s.pid, ids)))
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        slot, incarnation, child_pid, ids = pickle.loads(f.read())
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert child_pid == pid and slot != parent.slot and incarnation != parent.incarnation
    assert before not in ids
    assert not set(ids) & set(cosid.next_ids(500))
    assert cosid.status().fence == parent.fence


def use_parents_runtime(queue: "multiprocessing.Queue[Tuple]", rt: cosid.Runtime) -> None:
    try:
        ids = rt.next_ids(100)
        queue.put(("issued", rt.status().slot, ids))
    except cosid.CosidError as e:
        queue.put((type(e).__name__, e.code, str(e)))
    rt.shutdown()  # releases the child's own slot, never the parent's lease
    queue.put(("closed", rt.closed, None))


def test_an_explicit_runtime_takes_a_slot_of_its_own_in_the_child(store: str) -> None:
    with cosid.Runtime(store=store, namespace="explicit-fork") as rt:
        before = rt.status()
        parent_ids = rt.next_ids(100)
        queue = fork.Queue()
        child = fork.Process(target=use_parents_runtime, args=(queue, rt))
        child.start()
        name, slot, ids = queue.get(timeout=60)
        assert name == "issued", (slot, ids)
        assert slot != before.slot and {rt.parse(i).slot for i in ids} == {slot}
        assert not set(ids) & set(parent_ids + rt.next_ids(100))
        assert queue.get(timeout=60) == ("closed", True, None)
        child.join(timeout=60)
        assert child.exitcode == 0
        # The parent's lease is untouched and still issuing.
        after = rt.status()
        assert (after.slot, after.fence, after.state) == (before.slot, before.fence, "ACTIVE")
        assert rt.next_id() > 0


def hold_a_slot(barrier: "multiprocessing.synchronize.Barrier", queue: "multiprocessing.Queue[Tuple]") -> None:
    try:
        cosid.next_id()
        queue.put(("ok", cosid.status().slot))
    except cosid.CosidError as e:
        queue.put((e.code, None))
    barrier.wait(timeout=60)  # every child holds its slot at the same time


def run_round(n: int) -> List[Tuple]:
    barrier = fork.Barrier(n)
    queue = fork.Queue()
    children = [fork.Process(target=hold_a_slot, args=(barrier, queue)) for _ in range(n)]
    for c in children:
        c.start()
    results = [queue.get(timeout=60) for _ in children]
    for c in children:
        c.join(timeout=60)
        assert c.exitcode == 0
    return results


def test_multiprocessing_children_release_their_slots_at_exit(store: str) -> None:
    # Four slots, a 30 s lease: a slot that a child did not release stays taken for the whole test.
    cosid.configure(store=store, namespace="release", bits=2, ttl=30, acquire_timeout=0.3)
    cosid.next_id()
    first = run_round(3)
    assert [r[0] for r in first] == ["ok"] * 3
    second = run_round(3)
    assert [r[0] for r in second] == ["ok"] * 3, f"slots were not released: {second}"


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="needs os.register_at_fork")
def test_grandchildren_get_their_own_slots(store: str) -> None:
    cosid.configure(store=store, namespace="grand")
    cosid.next_id()

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            mine = cosid.status().slot
            inner_r, inner_w = os.pipe()
            grandchild = os.fork()
            if grandchild == 0:
                os.close(inner_r)
                os.write(inner_w, str(cosid.status().slot).encode())
                os._exit(0)
            os.close(inner_w)
            with os.fdopen(inner_r) as f:
                theirs = int(f.read())
            os.waitpid(grandchild, 0)
            os.write(write, f"{mine} {theirs}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as f:
        mine, theirs = map(int, f.read().split())
    os.waitpid(pid, 0)
    assert len({cosid.status().slot, mine, theirs}) == 3


def test_a_fork_that_skips_pythons_fork_hooks(store: str) -> None:
    """A fork() from C that runs no Python fork hook (uWSGI without py-call-osafterfork, a C extension): the
    pthread_atfork handler still stops the child from issuing on the parent's lease."""
    import ctypes

    cosid.configure(store=store, namespace="raw-fork")
    rt = cosid.Runtime(store=store, namespace="raw-fork")
    parent_ids = cosid.next_ids(100) + [rt.next_id()]
    parent_slots = {cosid.status().slot, rt.status().slot}
    raw_fork = ctypes.PyDLL(None).fork  # PyDLL keeps the GIL held across the call, as a C caller would
    read, write = os.pipe()
    pid = raw_fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            ids = [cosid.next_id() for _ in range(100)]
            explicit = [rt.next_id() for _ in range(100)]
            os.write(write, pickle.dumps((cosid.status().slot, (rt.status().slot, explicit), ids)))
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        slot, explicit, ids = pickle.loads(f.read())
    os.waitpid(pid, 0)
    assert slot not in parent_slots
    assert {cosid.parse(i).slot for i in ids} == {slot}
    # The explicit runtime too took a slot of its own in the child.
    explicit_slot, explicit_ids = explicit
    assert explicit_slot not in parent_slots | {slot}
    assert {cosid.parse(i).slot for i in explicit_ids} == {explicit_slot}
    assert not set(ids + explicit_ids) & set(parent_ids + cosid.next_ids(100) + [rt.next_id()])
    rt.shutdown()


@pytest.mark.parametrize("slot_store", ["memory:", "manual:3", "static:4"])
def test_a_child_of_a_store_that_cannot_give_it_a_slot_gets_forked_error(slot_store: str) -> None:
    """On memory: (the parent's only), manual: and static: without a state file (a fixed slot the parent holds), a
    forked child has no slot of its own: it raises ForkedError instead of issuing the parent's ids again (it used
    to re-lease slot 0 of a fresh memory store, or reuse the fixed slot: tens of thousands of repeated ids)."""
    cosid.configure(store=slot_store, namespace="forked")
    parent_ids = cosid.next_ids(100)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            outcome = []
            for call in (cosid.next_id, lambda: cosid.next_ids(10)):
                try:
                    outcome.append(("issued", call()))
                except cosid.CosidError as e:
                    outcome.append((type(e).__name__, e.code, str(e)))
            os.write(write, pickle.dumps(outcome))
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        outcome = pickle.loads(f.read())
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    for result in outcome:
        assert result[:2] == ("ForkedError", "FORKED"), result
        assert "fork" in result[2]
    # The parent is untouched and keeps issuing on its slot.
    assert cosid.next_id() > parent_ids[-1]


@pytest.mark.parametrize("slot_store", ["static:3?state_file={dir}/state", "manual:5", "static:ordinal"])
def test_static_and_manual_slots_are_accepted(slot_store: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOSTNAME", "web-7")
    store = slot_store.replace("{dir}", str(tmp_path))
    expected = {"static:3": 3, "manual:5": 5, "static:ordinal": 7}[store.split("?")[0]]
    with cosid.Runtime(store=store, namespace="static") as rt:
        assert rt.status().slot == expected
        assert rt.parse(rt.next_id()).slot == expected
    cosid.configure(store=store, namespace="static")
    assert cosid.parse(cosid.next_id()).slot == expected


def test_js_safe_layout_without_bits() -> None:
    """Slot bits follow the layout: js-safe has 5, so the default 10 is not forced onto it."""
    with cosid.Runtime(store="memory:", layout="js-safe") as rt:
        assert rt.next_id() < 2**53
    cosid.configure(store="memory:", layout="js-safe")
    assert cosid.next_id() < 2**53

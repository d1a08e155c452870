"""The package on a real Redis store. Runs when COSID_TEST_REDIS_URL is set (.ci/python.sh starts a server)."""

from __future__ import annotations

import multiprocessing
import os
import uuid

import pytest

import cosid

REDIS_URL = os.environ.get("COSID_TEST_REDIS_URL")
if not REDIS_URL:
    print("test_redis: skipped: COSID_TEST_REDIS_URL is not set (bash .ci/services/redis.sh starts a server)")
pytestmark = pytest.mark.skipif(not REDIS_URL, reason="COSID_TEST_REDIS_URL is not set")


def namespace() -> str:
    return f"py-{uuid.uuid4().hex[:12]}"


def child(queue: "multiprocessing.Queue", barrier) -> None:
    ids = [cosid.next_id() for _ in range(2_000)] + cosid.next_ids(2_000)
    slot = cosid.status().slot
    barrier.wait(timeout=60)
    queue.put((slot, ids))


def test_runtime_on_redis() -> None:
    ns = namespace()
    with cosid.Runtime(store=REDIS_URL, namespace=ns, bits=4) as a, cosid.Runtime(
        store=REDIS_URL, namespace=ns, bits=4
    ) as b:
        assert a.status().store == "redis"
        assert a.status().slot != b.status().slot
        ids = a.next_ids(5_000) + b.next_ids(5_000) + [a.next_id(), b.next_id()]
        assert len(set(ids)) == len(ids)
        last = a.next_id()
    # Released at exit of the block: the next holder of that slot starts past its last timestamp.
    with cosid.Runtime(store=REDIS_URL, namespace=ns, bits=4, preferred_slot=cosid.parse(last).slot) as c:
        assert c.status().slot == cosid.parse(last).slot
        assert c.next_id() > last


def test_namespace_mismatch_on_redis() -> None:
    ns = namespace()
    with cosid.Runtime(store=REDIS_URL, namespace=ns, bits=4):
        with pytest.raises(cosid.NamespaceMismatchError):
            cosid.Runtime(store=REDIS_URL, namespace=ns, bits=6)


def test_exhausted_on_redis() -> None:
    ns = namespace()
    with cosid.Runtime(store=REDIS_URL, namespace=ns, bits=1), cosid.Runtime(store=REDIS_URL, namespace=ns, bits=1):
        with pytest.raises(cosid.ExhaustedError):
            cosid.Runtime(store=REDIS_URL, namespace=ns, bits=1, acquire_timeout=0.2)


def test_unreachable_redis_is_store_unavailable() -> None:
    with pytest.raises(cosid.StoreUnavailableError):
        cosid.Runtime(store="redis://127.0.0.1:1/0", acquire_timeout=0.2)


def test_forked_children_on_redis() -> None:
    cosid.configure(store=REDIS_URL, namespace=namespace(), bits=5)
    parent_ids = cosid.next_ids(1_000)
    parent_slot = cosid.status().slot
    ctx = multiprocessing.get_context("fork")
    queue, barrier = ctx.Queue(), ctx.Barrier(8)
    procs = [ctx.Process(target=child, args=(queue, barrier)) for _ in range(8)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    slots = [parent_slot] + [s for s, _ in results]
    assert len(set(slots)) == 9
    everything = parent_ids + [i for _, ids in results for i in ids]
    assert len(everything) == len(set(everything))

"""The package on every network store it carries (``cosid.STORES``), against real servers.

COSID_TEST_{REDIS,POSTGRES,MYSQL,ETCD,ZOOKEEPER,MONGODB}_URL point at them, and COSID_TEST_HTTP_URL at a
`cosid serve` (the lease proxy), which every case also runs through with the `http://` store (.ci/python.sh starts
each one that is not set, with the scripts of .ci/services/). A store whose variable is unset is skipped, saying so.
A store the package does not carry is refused with ConfigError, saying how to reach it, before any connection.
"""

from __future__ import annotations

import multiprocessing
import os
import uuid

import pytest

import cosid

STORES = [
    ("redis", "COSID_TEST_REDIS_URL"),
    ("postgres", "COSID_TEST_POSTGRES_URL"),
    ("mysql", "COSID_TEST_MYSQL_URL"),
    ("etcd", "COSID_TEST_ETCD_URL"),
    ("zookeeper", "COSID_TEST_ZOOKEEPER_URL"),
    ("mongodb", "COSID_TEST_MONGODB_URL"),
    ("http", "COSID_TEST_HTTP_URL"),
]


# A URL of each store that needs no server.
OFFLINE = {
    "redis": "redis://127.0.0.1:1/0",
    "postgres": "postgres://u:p@127.0.0.1:1/db",
    "mysql": "mysql://u:p@127.0.0.1:1/db",
    "etcd": "etcd://127.0.0.1:1",
    "zookeeper": "zookeeper://127.0.0.1:1",
    "mongodb": "mongodb://127.0.0.1:1/ids?serverSelectionTimeoutMS=100",
    "http": "http://127.0.0.1:1",
}


def _param(kind: str, variable: str) -> object:
    if kind not in cosid.STORES:
        return pytest.param(
            (kind, None), id=kind, marks=pytest.mark.skip(reason=f"the package does not carry {kind}")
        )
    url = os.environ.get(variable)
    if not url:
        print(f"test_stores: {kind} skipped: {variable} is not set (bash .ci/services/ starts a server)")
    return pytest.param(
        (kind, url), id=kind, marks=pytest.mark.skipif(not url, reason=f"{variable} is not set")
    )


PARAMS = [_param(kind, variable) for kind, variable in STORES]


def namespace() -> str:
    return f"py-{uuid.uuid4().hex[:12]}"


def child(queue: "multiprocessing.Queue", barrier) -> None:
    ids = [cosid.next_id() for _ in range(2_000)] + cosid.next_ids(2_000)
    slot = cosid.status().slot
    barrier.wait(timeout=60)
    queue.put((slot, ids))


@pytest.mark.parametrize("store", PARAMS)
def test_runtime(store: tuple) -> None:
    kind, url = store
    ns = namespace()
    with cosid.Runtime(store=url, namespace=ns, bits=4) as a, cosid.Runtime(store=url, namespace=ns, bits=4) as b:
        assert a.status().store == kind
        assert a.status().slot != b.status().slot
        ids = a.next_ids(5_000) + b.next_ids(5_000) + [a.next_id(), b.next_id()]
        assert len(set(ids)) == len(ids)
        last = a.next_id()
    # Released at exit of the block: the next holder of that slot starts past its last timestamp.
    with cosid.Runtime(store=url, namespace=ns, bits=4, preferred_slot=cosid.parse(last).slot) as c:
        assert c.status().slot == cosid.parse(last).slot
        assert c.next_id() > last


@pytest.mark.parametrize("store", PARAMS)
def test_namespace_mismatch(store: tuple) -> None:
    _, url = store
    ns = namespace()
    with cosid.Runtime(store=url, namespace=ns, bits=4):
        with pytest.raises(cosid.NamespaceMismatchError):
            cosid.Runtime(store=url, namespace=ns, bits=6)


@pytest.mark.parametrize("store", PARAMS)
def test_exhausted(store: tuple) -> None:
    _, url = store
    ns = namespace()
    with cosid.Runtime(store=url, namespace=ns, bits=1), cosid.Runtime(store=url, namespace=ns, bits=1):
        with pytest.raises(cosid.ExhaustedError):
            cosid.Runtime(store=url, namespace=ns, bits=1, acquire_timeout=0.2)


def test_stores_carried() -> None:
    assert cosid.STORES[:3] == ("memory", "sqlite", "http"), cosid.STORES
    assert set(cosid.STORES) <= {"memory", "sqlite", "http", *OFFLINE}


@pytest.mark.parametrize("kind", [k for k in OFFLINE if k in cosid.STORES])
def test_unreachable_store_is_store_unavailable(kind: str) -> None:
    with pytest.raises(cosid.StoreUnavailableError):
        cosid.Runtime(store=OFFLINE[kind], acquire_timeout=0.2)


@pytest.mark.parametrize("kind", [k for k in OFFLINE if k not in cosid.STORES])
def test_store_not_carried_is_refused(kind: str) -> None:
    # Before any connection, whatever the timeout; the message says how to reach the store.
    with pytest.raises(cosid.ConfigError) as e:
        cosid.Runtime(store=OFFLINE[kind], acquire_timeout=30)
    assert f"the {kind} store is not in this build" in str(e.value)
    assert "cosid serve" in str(e.value)


def forked_child(queue: "multiprocessing.Queue") -> None:
    try:
        cosid.next_id()
        queue.put("issued")
    except cosid.ForkedError as e:
        queue.put(f"FORKED: {e}")


@pytest.mark.parametrize("store", [p for p in PARAMS if p.id == "zookeeper"])
def test_forked_children_are_refused_on_zookeeper(store: tuple) -> None:
    # The ZooKeeper client's I/O reactor is process-wide and does not survive fork(): a child gets FORKED at
    # once rather than hanging, and the parent keeps issuing.
    _, url = store
    cosid.configure(store=url, namespace=namespace(), bits=5)
    before = cosid.next_id()
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=forked_child, args=(queue,))
    proc.start()
    got = queue.get(timeout=60)
    proc.join(timeout=60)
    assert got.startswith("FORKED") and "zookeeper" in got, got
    assert cosid.next_id() > before


@pytest.mark.parametrize("store", [p for p in PARAMS if p.id != "zookeeper"])
def test_forked_children(store: tuple) -> None:
    _, url = store
    cosid.configure(store=url, namespace=namespace(), bits=5)
    parent_ids = cosid.next_ids(1_000)
    parent_slot = cosid.status().slot
    ctx = multiprocessing.get_context("fork")
    queue, barrier = ctx.Queue(), ctx.Barrier(8)
    procs = [ctx.Process(target=child, args=(queue, barrier)) for _ in range(8)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    slots = [parent_slot] + [s for s, _ in results]
    assert len(set(slots)) == 9
    everything = parent_ids + [i for _, ids in results for i in ids]
    assert len(everything) == len(set(everything))

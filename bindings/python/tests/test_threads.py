"""Many threads at once: every id unique, on the process-wide runtime and on an explicit one."""

from __future__ import annotations

import threading
from typing import Callable, List

import cosid

THREADS = 8


def run_threads(work: Callable[[int], List[int]]) -> List[List[int]]:
    barrier = threading.Barrier(THREADS)
    results: List[List[int]] = [[] for _ in range(THREADS)]
    errors: List[BaseException] = []

    def body(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def check_unique(results: List[List[int]]) -> List[int]:
    for ids in results:
        assert ids == sorted(ids), "ids of one thread are not increasing"
    everything = [i for ids in results for i in ids]
    assert len(everything) == len(set(everything)), "duplicate ids across threads"
    return everything


def test_threads_starting_the_runtime_together_share_one_slot(store: str) -> None:
    cosid.configure(store=store, namespace="threads")
    results = run_threads(lambda i: [cosid.next_id() for _ in range(2_000)])
    everything = check_unique(results)
    assert {cosid.parse(i).slot for i in everything} == {cosid.status().slot}


def test_threads_mixing_single_ids_and_batches(store: str) -> None:
    cosid.configure(store=store, namespace="mixed")

    def work(i: int) -> List[int]:
        out: List[int] = []
        for round_ in range(20):
            if (i + round_) % 2:
                out.extend(cosid.next_ids(500))
            else:
                out.extend(cosid.next_id() for _ in range(500))
        return out

    assert len(check_unique(run_threads(work))) == THREADS * 20 * 500


def test_threads_on_an_explicit_runtime(store: str) -> None:
    with cosid.Runtime(store=store, namespace="explicit") as rt:
        results = run_threads(lambda i: [rt.next_id() for _ in range(3_000)] + rt.next_ids(3_000))
        check_unique(results)


def test_reconfiguring_under_load_loses_no_call_and_repeats_no_id(store: str) -> None:
    cosid.configure(store=store, namespace="reconf")
    stop = threading.Event()

    def work(i: int) -> List[int]:
        out: List[int] = []
        while not stop.is_set() or len(out) < 2_000:
            out.append(cosid.next_id())
        return out

    def reconfigure() -> None:
        for ttl in ("10s", "20s", "30s", "40s"):
            cosid.configure(store=store, namespace="reconf", ttl=ttl)
            cosid.next_id()
        stop.set()

    changer = threading.Thread(target=reconfigure)
    changer.start()
    results = run_threads(work)
    changer.join()
    check_unique(results)

"""Forked workers (multiprocessing with the fork start method, as gunicorn and Celery prefork do): each child
leases its own slot on first use, so no two processes ever issue the same id.

    COSID_STORE=sqlite:///tmp/cosid-example.db python examples/python/fork_workers.py
"""

import multiprocessing
import os

import cosid


def work(n: int) -> tuple:
    ids = [cosid.next_id() for _ in range(n)]
    return os.getpid(), cosid.status().slot, ids


if __name__ == "__main__":
    parent_ids = cosid.next_ids(1000)  # the parent's runtime is running before it forks
    with multiprocessing.get_context("fork").Pool(4) as pool:
        results = pool.map(work, [2500] * 4)
    everything = list(parent_ids)
    print(f"parent   pid {os.getpid()} slot {cosid.status().slot}")
    for pid, slot, ids in results:
        print(f"worker   pid {pid} slot {slot} issued {len(ids)}")
        everything += ids
    assert len(everything) == len(set(everything)), "duplicate ids"
    print(f"unique   {len(everything)} ids from {1 + len({pid for pid, _, _ in results})} processes")

"""Benchmark harness for the Python package: prints figures, asserts nothing.

    python bindings/python/bench.py            # about 20 s
    python bindings/python/bench.py --quick    # a smoke run (CI)

Measures, in one run and one process:
- ns per id of ``cosid.next_id()`` in bursts below the cap (a burst, then a pause into the next millisecond, so the
  per-millisecond sequence never runs out), beside the peers: ``snowflake-id`` (PyPI ``snowflake-id``),
  ``uuid_utils.uuid7()`` (PyPI ``uuid-utils``) and the standard library's ``uuid.uuid4()``;
- ns per id of ``cosid.next_ids(n)`` (a list of ints) and ``cosid.next_ids_array(n)`` (an ``array('Q')``);
- the sustained rate of a tight ``next_id()`` loop and of ``next_ids(4096)``, as a percent of the layout's cap
  (4,096,000 ids per second per slot for the default layout);
- the cost of a trivial native call, for scale.

Each figure is the median of several rounds; the store is an SQLite file in a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from typing import Callable, List, Optional


def burst_ns(fn: Callable[[], object], burst: int, rounds: int) -> float:
    """Median ns per call over `rounds` bursts of `burst` calls, each burst starting a fresh millisecond."""
    per: List[float] = []
    counter = time.perf_counter_ns
    for _ in range(rounds):
        time.sleep(0.0011)
        start = counter()
        for _ in range(burst):
            fn()
        per.append((counter() - start) / burst)
    return statistics.median(per)


def batch_ns(fn: Callable[[int], object], n: int, rounds: int) -> float:
    """Median ns per id of `fn(n)`, each call starting a fresh millisecond."""
    per: List[float] = []
    counter = time.perf_counter_ns
    for _ in range(rounds):
        time.sleep(0.0011)
        start = counter()
        fn(n)
        per.append((counter() - start) / n)
    return statistics.median(per)


def sustained(fn: Callable[[], object], ids_per_call: int, seconds: float) -> float:
    """Ids per second of calling `fn` back to back for `seconds`."""
    calls = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(64):
            fn()
        calls += 64
        now = time.perf_counter()
        if now >= deadline:
            return calls * ids_per_call / (now - start)


def optional_peer(name: str) -> Optional[Callable[[], object]]:
    try:
        if name == "snowflake-id":
            from snowflake import SnowflakeGenerator  # type: ignore[import-not-found]

            gen = SnowflakeGenerator(42)
            return lambda: next(gen)
        if name == "uuid-utils uuid7()":
            import uuid_utils  # type: ignore[import-not-found]

            return uuid_utils.uuid7
    except ImportError:
        return None
    raise ValueError(name)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    args = parser.parse_args(argv)
    rounds = 20 if args.quick else 400
    burst = 1_000
    sustain_s = 0.2 if args.quick else 2.0

    state = tempfile.mkdtemp(prefix="cosid-bench-")
    os.environ["COSID_STORE"] = f"sqlite:///{state}/leases.db"
    import cosid

    cosid.next_id()  # start the runtime outside the measurements
    layout = cosid.default_layout()
    cap = layout.cap_per_second

    print(f"cosid {cosid.__version__}, Python {sys.version.split()[0]}, layout cap {cap:,} ids/s per slot")
    print(f"bursts of {burst} calls below the cap, median of {rounds} rounds")
    print()
    print(f"{'what':44s} {'ns/id':>9s}")

    def row(label: str, ns: float) -> None:
        print(f"{label:44s} {ns:9.1f}")

    row("(a native call returning an int: int.bit_length)", burst_ns((1 << 60).bit_length, burst, rounds))
    row("cosid.next_id()", burst_ns(cosid.next_id, burst, rounds))
    rt = cosid.Runtime(store="memory:")
    row("cosid.Runtime.next_id()", burst_ns(rt.next_id, burst, rounds))
    # next_ids always releases the GIL around the core call; with n = 1 that is the price of releasing it.
    row("cosid.next_ids(1) (GIL released and retaken)", burst_ns(lambda: cosid.next_ids(1), burst, rounds))
    for n in (100, 1_000, 4_000):
        row(f"cosid.next_ids({n}) per id (list)", batch_ns(cosid.next_ids, n, rounds))
    for n in (1_000, 4_000):
        row(f"cosid.next_ids_array({n}) per id", batch_ns(cosid.next_ids_array, n, rounds))
    for name in ("snowflake-id", "uuid-utils uuid7()"):
        peer = optional_peer(name)
        if peer is None:
            print(f"{name:44s} {'(not installed)':>9s}")
        else:
            row(name, burst_ns(peer, burst, rounds))
    row("uuid.uuid4() (standard library)", burst_ns(uuid.uuid4, burst, max(rounds // 4, 5)))

    print()
    print(f"sustained for {sustain_s:g} s          ids/s      % of cap")
    rate = sustained(cosid.next_id, 1, sustain_s)
    print(f"{'cosid.next_id() loop':30s} {rate:12,.0f} {100 * rate / cap:8.1f}%")
    rate = sustained(lambda: cosid.next_ids(4_096), 4_096, sustain_s)
    print(f"{'cosid.next_ids(4096) loop':30s} {rate:12,.0f} {100 * rate / cap:8.1f}%")
    rt.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

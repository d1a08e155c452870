# pyright: strict
"""Every pattern docs/python.md shows, for the type checkers: .ci/python.sh runs `mypy --strict` and
`pyright --strict` on this file against the installed package (its stubs and py.typed). It is not run."""

from __future__ import annotations

import logging
from array import array
from datetime import datetime, timedelta
from typing import List, Optional, Tuple

import cosid


def process_wide() -> None:
    order_id: int = cosid.next_id()
    ts, slot, seq = cosid.parse(order_id)
    when: datetime = ts
    parts: cosid.IdParts = cosid.parse(order_id, "millis")
    ms: int = parts.timestamp_ms
    friendly: str = cosid.to_friendly(order_id)
    short: str = cosid.to_base62(order_id)
    assert cosid.from_friendly(friendly) == cosid.from_base62(short) == order_id
    batch: List[int] = cosid.next_ids(100)
    packed: array[int] = cosid.next_ids_array(cosid.MAX_BATCH // 1000)
    cosid.configure(store="redis://10.0.0.5:6379/0", namespace="orders", ttl="30s")
    cosid.configure(
        store="sqlite:///var/lib/app/leases.db",
        namespace="orders",
        layout=cosid.Layout.js_safe(),
        ttl=timedelta(seconds=30),
        tolerance=0.5,
        bits=5,
        owner_key="web-1",
        preferred_slot="ordinal",
        slots=2,
        acquire_timeout=10,
        max_wait="2s",
        backwards_wait=0.5,
        on_fork="reacquire",
    )
    s: cosid.Status = cosid.status()
    fields: Tuple[str, str, str, str, int, int] = (s.namespace, s.store, s.owner_key, s.incarnation, s.slot, s.fence)
    window: Tuple[int, int, int, int] = (s.floor_ms, s.ceiling_ms, s.expires_at_ms, s.store_now_ms)
    last: Optional[int] = s.last_issued_ms
    expires: datetime = s.expires_at
    state: str = s.state
    last_ms: Optional[int] = cosid.shutdown()
    print(when, slot, seq, ms, batch, packed, fields, window, last, expires, state, last_ms, cosid.__version__)


def explicit() -> None:
    with cosid.Runtime(store="sqlite:///var/lib/app/leases.db", namespace="invoices", layout="seconds") as rt:
        ids = [rt.next_id() for _ in range(3)] + rt.next_ids(100)
        slot: int = rt.status().slot
        parts: cosid.IdParts = rt.parse(ids[0])
        text: str = rt.to_friendly(ids[0])
        assert rt.from_friendly(text) == ids[0]
        packed: array[int] = rt.next_ids_array(10)
        layout: cosid.Layout = rt.layout

        @rt.on_event
        def on_lease(event: cosid.Event) -> None:
            print(event.name, event["slot"], dict(event.fields))

        print(slot, parts, packed, layout)
    closed: bool = rt.closed
    last: Optional[int] = rt.shutdown()
    print(closed, last)


def layouts() -> None:
    for layout in (cosid.Layout.millis(), cosid.Layout.seconds(), cosid.Layout.js_safe(), cosid.Layout.named("js-safe")):
        print(layout.epoch_ms, layout.tick, layout.timestamp_bits, layout.slot_bits, layout.sequence_bits)
    custom = cosid.Layout(epoch_ms=1_577_203_200_000, tick="second", timestamp_bits=31, slot_bits=10, sequence_bits=22)
    tick, timestamp_ms, slot, sequence = custom.decompose(custom.compose(1, 2, 3))
    cap: int = custom.cap_per_second
    default: cosid.Layout = cosid.default_layout()
    print(tick, timestamp_ms, slot, sequence, cap, default == custom)


@cosid.on_event
def log_lease(event: cosid.Event) -> None:
    if event.name in ("SLOT_LOST", "RENEW_FAILED", "CLOCK_SKEW"):
        logging.warning("cosid: %s", event)


def events() -> None:
    removed: bool = cosid.off_event(log_lease)
    print(removed)


def errors() -> None:
    try:
        cosid.next_id()
    except cosid.SlotLostError as e:
        code: str = e.code
        print(code)
    except (cosid.ForkedError, cosid.ClosedError, cosid.ReentrantError) as e:
        print(e.code, str(e))
    except cosid.StoreUnavailableError as e:
        print(e.code)
    except cosid.ConfigError as e:
        value_error: ValueError = e
        print(value_error)
    except cosid.CosidError as e:
        if e.code == "EXHAUSTED":
            print("every slot is held")

"""An explicit runtime with its own settings, events, and a `with` block that releases its slot.

    python examples/python/explicit_runtime.py [STORE_URL]
"""

import sys

import cosid

store = sys.argv[1] if len(sys.argv) > 1 else "memory:"


def log_event(event: cosid.Event) -> None:
    print(f"event    {event}")


with cosid.Runtime(store=store, namespace="invoices", layout="seconds", ttl="10s") as rt:
    rt.on_event(log_event)
    ids = [rt.next_id() for _ in range(3)]
    print(f"ids      {ids}")
    print(f"friendly {[rt.to_friendly(i) for i in ids]}")
    print(f"slot     {rt.status().slot}, layout {rt.layout}")

print(f"closed   {rt.closed}")
try:
    rt.next_id()
except cosid.ClosedError as e:
    print(f"after    {e.code}: {e}")

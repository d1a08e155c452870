"""The shortest use of cosid: ids from the process-wide runtime, and what is inside one.

    COSID_STORE=sqlite:///tmp/cosid-example.db python examples/python/quickstart.py
"""

import cosid

order_id = cosid.next_id()
batch = cosid.next_ids(5)
print(f"id       {order_id}")
print(f"parts    {cosid.parse(order_id)}")
print(f"friendly {cosid.to_friendly(order_id)}")
print(f"base62   {cosid.to_base62(order_id)}")
print(f"batch    {batch}")

status = cosid.status()
print(f"lease    slot {status.slot} of namespace {status.namespace!r} in {status.store}, "
      f"fence {status.fence}, expires {status.expires_at:%H:%M:%S} UTC")
assert cosid.parse(order_id).slot == status.slot
assert batch == sorted(batch) and batch[0] > order_id
# Interpreter exit releases the slot.

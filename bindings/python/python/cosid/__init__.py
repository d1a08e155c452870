"""Lease-safe Snowflake ids: unique, time-ordered 64-bit ids for many processes, with no coordination on the hot
path.

>>> import cosid
>>> a, b = cosid.next_id(), cosid.next_id()
>>> b > a
True

``next_id()`` runs on a process-wide runtime that starts on first use from :func:`configure` or the ``COSID_*``
environment variables (``COSID_STORE``, ``COSID_NAMESPACE``, ...; by default an SQLite file in the user's state
directory). The runtime leases an exclusive time window on a slot from the store and renews it in the background;
every id is checked against that window, so no two processes ever issue the same id.

It is safe from many threads at once and across ``os.fork()``: a forked child (multiprocessing, gunicorn, Celery)
never issues ids on its parent's slot; on a shared store it acquires its own lease on first use, and on a store
that cannot give it one (``memory:``, ``manual:``, ``static:`` without a state file) it raises
:class:`ForkedError`. A normal interpreter exit releases the slot.
"""

from __future__ import annotations

import atexit
import os
import sys
from datetime import timedelta
from typing import Any, Callable, Optional, Union

from . import _cosid
from ._cosid import (
    MAX_BATCH,
    STORES,
    Layout,
    from_base62,
    from_friendly,
    next_id,
    next_ids,
    next_ids_array,
    to_base62,
    to_friendly,
)
from ._errors import (
    AlreadyInitializedError,
    BeforeWindowError,
    ClockMovedBackwardsError,
    ClosedError,
    ConfigError,
    CorruptRecordError,
    CosidError,
    ExhaustedError,
    ForkedError,
    InternalError,
    InvalidIdError,
    LayoutError,
    NamespaceMismatchError,
    PanicError,
    ReentrantError,
    SlotLostError,
    StateFileError,
    StoreError,
    StoreRegressionError,
    StoreUnavailableError,
    WindowClosedError,
)
from ._events import Event, off_event, on_event
from ._types import IdParts, Status, from_unix_ms

__version__: str = _cosid.__version__

__all__ = [
    "next_id",
    "next_ids",
    "next_ids_array",
    "configure",
    "shutdown",
    "status",
    "on_event",
    "off_event",
    "parse",
    "to_friendly",
    "from_friendly",
    "to_base62",
    "from_base62",
    "default_layout",
    "Runtime",
    "Layout",
    "IdParts",
    "Status",
    "Event",
    "MAX_BATCH",
    "STORES",
    "CosidError",
    "SlotLostError",
    "WindowClosedError",
    "BeforeWindowError",
    "ClockMovedBackwardsError",
    "ClosedError",
    "ExhaustedError",
    "NamespaceMismatchError",
    "StoreError",
    "StoreUnavailableError",
    "CorruptRecordError",
    "ConfigError",
    "LayoutError",
    "InvalidIdError",
    "ForkedError",
    "ReentrantError",
    "AlreadyInitializedError",
    "StateFileError",
    "StoreRegressionError",
    "PanicError",
    "InternalError",
]

Duration = Union[int, float, str, timedelta]
LayoutLike = Union[str, Layout]


def configure(
    *,
    store: Optional[str] = None,
    namespace: Optional[str] = None,
    layout: Optional[LayoutLike] = None,
    ttl: Optional[Duration] = None,
    tolerance: Optional[Duration] = None,
    bits: Optional[int] = None,
    owner_key: Optional[str] = None,
    preferred_slot: Optional[Union[int, str]] = None,
    slots: Optional[int] = None,
    acquire_timeout: Optional[Duration] = None,
    max_wait: Optional[Duration] = None,
    backwards_wait: Optional[Duration] = None,
    on_fork: Optional[str] = None,
) -> None:
    """Sets the settings of the process-wide runtime behind :func:`next_id`.

    Settings not given come from the ``COSID_*`` environment, else the defaults; each call replaces the previous
    one's settings. Everything that can be checked without the store is checked now (a bad value raises
    :class:`ConfigError`, a wrong type ``TypeError``). A running process-wide runtime is shut down (its slot
    released); the next id starts a new one with these settings, so configuring stays lazy: a process that
    configures and then forks (gunicorn ``--preload``) holds no slot it does not use.

    :param store: store URL: ``sqlite:///path/leases.db``, ``memory:`` (this process only), ``redis://...``,
        ``postgres://...``, ``mysql://...``, ``etcd://host:port``, ``zookeeper://host:port``, ``mongodb://host:port/db``; or a slot without a store:
        ``static:3?state_file=/var/lib/app/cosid.state``, ``static:ordinal`` (a StatefulSet's ordinal),
        ``manual:3``.
    :param namespace: the namespace (ids are unique within it); default ``"default"``.
    :param layout: ``"millis"`` (default), ``"seconds"``, ``"js-safe"`` or a :class:`Layout`.
    :param ttl: lease length; default 30 s. Durations are seconds (``0.5``), a string (``"30s"``, ``"500ms"``)
        or a ``timedelta``.
    :param tolerance: how far past expiry a holder may issue; default 1 s.
    :param bits: slot bits of the namespace (``2**bits`` slots); default 10, or the layout's slot bits if fewer
        (5 for ``"js-safe"``).
    :param owner_key: the owner key; default ``"host:pid"``.
    :param preferred_slot: a slot to take if it is free, or ``"ordinal"`` for a StatefulSet's ordinal.
    :param slots: how many slots to lease, 1 (default) to 64: each issues up to 4,096,000 ids/s (``"millis"``),
        and ids come from the next slot while one's millisecond is spent. Ids stay unique and ordered by
        timestamp; within one millisecond, ids of two slots are not in call order.
    :param acquire_timeout: how long start-up retries an exhausted namespace or an unreachable store; default the
        ttl.
    :param max_wait: how long an id call waits for a renewal or for the clock to pass the window's floor;
        default 2 s.
    :param backwards_wait: how far a stepped-back wall clock is waited out; default 0.5 s.
    :param on_fork: what a forked child does: ``"reacquire"`` (default: a slot of its own on a shared store) or
        ``"error"`` (:class:`ForkedError` until configured again).
    """
    _cosid.configure(
        store=store,
        namespace=namespace,
        layout=layout,
        ttl=ttl,
        tolerance=tolerance,
        bits=bits,
        owner_key=owner_key,
        preferred_slot=preferred_slot,
        slots=slots,
        acquire_timeout=acquire_timeout,
        max_wait=max_wait,
        backwards_wait=backwards_wait,
        on_fork=on_fork,
    )


def shutdown() -> Optional[int]:
    """Shuts the process-wide runtime down now: seals it (no id is returned after this starts), releases its slot
    with the exact last timestamp, and stops its thread. Returns that timestamp (Unix ms), or ``None`` if none was
    issued or no runtime was running. Later id calls raise :class:`ClosedError` until :func:`configure` is called
    again (the same rule in every language). Interpreter exit does this by itself."""
    return _cosid.shutdown()


def status() -> Status:
    """The process-wide runtime's lease and state (slot, fence, window, expiry, ...). Starts the runtime if it is
    not running yet, as :func:`next_id` would."""
    return Status(**_cosid._status())


def default_layout() -> Layout:
    """The layout of the process-wide runtime: from :func:`configure`, else ``COSID_LAYOUT``, else millis."""
    return _cosid.default_layout()


def parse(id: int, layout: Optional[LayoutLike] = None) -> IdParts:
    """The parts of an id: ``(timestamp, slot, sequence)``, the timestamp a timezone-aware UTC ``datetime``
    (the start of the id's tick).

    ``layout`` defaults to :func:`default_layout`. Raises :class:`InvalidIdError` (a ``ValueError``) for an id the
    layout cannot have made (negative, 2**63 or more, wider than the layout), ``TypeError`` for a non-int.
    """
    timestamp_ms, slot, sequence = _cosid._decompose(id, layout)
    return IdParts(from_unix_ms(timestamp_ms), slot, sequence)


class Runtime(_cosid.Runtime):
    """A runtime with its own settings and lease, independent of the process-wide one.

    Takes the keyword arguments of :func:`configure` (the ``COSID_*`` environment fills in the rest). Creating it
    acquires a slot (the GIL is released meanwhile). Use it as a context manager: leaving the block shuts it down
    (seals it, then releases the slot with its exact last timestamp)::

        with cosid.Runtime(store="sqlite:///var/lib/app/leases.db", namespace="orders") as rt:
            order_id = rt.next_id()

    In a child forked from the process that created it, a ``Runtime`` never issues on its parent's slot: on a
    shared store it acquires a slot of its own at its first call; on ``memory:``, ``manual:`` or ``static:``
    without a state file it raises :class:`ForkedError`.
    """

    def __init__(
        self,
        *,
        store: Optional[str] = None,
        namespace: Optional[str] = None,
        layout: Optional[LayoutLike] = None,
        ttl: Optional[Duration] = None,
        tolerance: Optional[Duration] = None,
        bits: Optional[int] = None,
        owner_key: Optional[str] = None,
        preferred_slot: Optional[Union[int, str]] = None,
        slots: Optional[int] = None,
        acquire_timeout: Optional[Duration] = None,
        max_wait: Optional[Duration] = None,
        backwards_wait: Optional[Duration] = None,
        on_fork: Optional[str] = None,
    ) -> None:
        # The settings were taken by the native ``__new__``. ``next_id`` as a plain function of this runtime,
        # shadowing the method: a fifth faster per call.
        self.__dict__["next_id"] = _cosid._bind_next_id(self)

    def status(self) -> Status:
        """This runtime's lease and state."""
        return Status(**self._status())

    def on_event(self, callback: Callable[[Event], Any]) -> Callable[[Event], Any]:
        """Calls ``callback(event)`` with every later :class:`Event` of this runtime, on its background thread.
        Exceptions are logged to the ``"cosid"`` logger. Returns ``callback`` (usable as a decorator)."""
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        self._subscribe(callback)
        return callback

    def parse(self, id: int) -> IdParts:
        """The parts of an id of this runtime's layout."""
        return parse(id, self.layout)

    def to_friendly(self, id: int) -> str:
        """The friendly form of an id of this runtime's layout."""
        return to_friendly(id, self.layout)

    def from_friendly(self, text: str) -> int:
        """Reads the friendly form of an id of this runtime's layout."""
        return from_friendly(text, self.layout)

    def __repr__(self) -> str:
        return f"<cosid.Runtime {'closed' if self.closed else 'open'} {self.layout!r}>"


class _Anchor:
    """A weak-referenceable object for multiprocessing.util.register_after_fork."""


_MP_ANCHOR = _Anchor()


def _register_mp_finalizer(_anchor: object) -> None:
    # multiprocessing children leave through os._exit(), which skips atexit; their own exit hook runs these.
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util.Finalize(None, _cosid._at_exit, exitpriority=-100)


def _after_fork_in_child() -> None:
    _cosid._after_fork_in_child()
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        # Runs at the start of a multiprocessing child, after it clears the finalizers it inherited.
        util.register_after_fork(_MP_ANCHOR, _register_mp_finalizer)


if hasattr(os, "register_at_fork"):
    # No store I/O in flight across the fork (a child that inherits SQLite's locks held would hang), and a new
    # fork generation in the child: the policy is the core's (cosid::host::fork), these are only its hooks.
    os.register_at_fork(
        before=_cosid._fork_prepare, after_in_parent=_cosid._fork_parent, after_in_child=_after_fork_in_child
    )
atexit.register(_cosid._at_exit)

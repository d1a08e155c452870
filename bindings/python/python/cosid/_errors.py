"""The exceptions of cosid: one per stable error code of the Rust core (``CosidError.code``)."""

from __future__ import annotations

from typing import Dict, Type

__all__ = [
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


class CosidError(Exception):
    """Base of every cosid error. ``code`` is the stable name of the failure, the same in every binding
    (``"SLOT_LOST"``, ...)."""

    code: str = "ERROR"


class SlotLostError(CosidError):
    """The lease was found gone (taken over after a long pause, or deleted from the store). No id is issued on it
    any more; the runtime is acquiring a new slot, and a later call succeeds once it has one."""

    code = "SLOT_LOST"


class WindowClosedError(CosidError):
    """The clock passed the lease window's ceiling and no renewal came within ``max_wait`` (the store is slow or
    unreachable, or this host's clock runs ahead)."""

    code = "WINDOW_CLOSED"


class BeforeWindowError(CosidError):
    """This host's clock is still behind the lease window's floor after waiting ``max_wait`` (it runs behind the
    clock of the previous holder of the slot)."""

    code = "BEFORE_WINDOW"


class ClockMovedBackwardsError(CosidError):
    """The wall clock stepped back further than ``backwards_wait``; no smaller timestamp is ever issued."""

    code = "CLOCK_MOVED_BACKWARDS"


class ClosedError(CosidError):
    """The runtime was shut down (by :func:`cosid.shutdown`, ``Runtime.shutdown()`` or interpreter exit). It stays
    closed until :func:`cosid.configure` is called again."""

    code = "CLOSED"


class ForkedError(CosidError):
    """This process is a fork of the runtime's owner and cannot take a slot of its own: the store is ``memory:``
    (the parent's only), ``manual:`` or ``static:`` without a state file (a fixed slot the parent holds), or the
    fork policy is ``on_fork="error"``. The child never issues on its parent's slot; configure it again (another
    store or slot) to issue ids."""

    code = "FORKED"


class ReentrantError(CosidError, RuntimeError):
    """Called from one of the runtime's own event callbacks (which run on the runtime's thread, or during its
    start), which the call would have to wait for. Call it from another thread. Also a ``RuntimeError``."""

    code = "REENTRANT"


class AlreadyInitializedError(CosidError):
    """The runtime is running, so its settings can no longer change."""

    code = "ALREADY_INITIALIZED"


class ExhaustedError(CosidError):
    """Every slot of the namespace is held, and none came free within ``acquire_timeout``."""

    code = "EXHAUSTED"


class NamespaceMismatchError(CosidError):
    """The namespace is recorded in the store with other settings (``bits``, ``tolerance``) than this instance's.
    The message names both values."""

    code = "NAMESPACE_MISMATCH"


class StoreError(CosidError):
    """The lease store answered with an error."""

    code = "STORE"


class StoreUnavailableError(StoreError):
    """The lease store could not be reached or did not answer."""

    code = "STORE_UNAVAILABLE"


class CorruptRecordError(StoreError):
    """A record in the store breaks the protocol's invariants; it is refused, never read as absent."""

    code = "CORRUPT_RECORD"


class StateFileError(StoreError):
    """A static slot's state file is locked by another process, corrupt, or cannot be written."""

    code = "STATE_FILE"


class StoreRegressionError(StoreError):
    """The store lost or rolled back writes (a restart without its data, a restored backup)."""

    code = "STORE_REGRESSION"


class PanicError(CosidError):
    """A bug in cosid: a Rust panic, caught where the call entered the library. Please report it with its
    message."""

    code = "PANIC"


class InternalError(CosidError):
    """A bug in cosid: an internal invariant failed."""

    code = "INTERNAL"


class ConfigError(CosidError, ValueError):
    """A setting has a wrong value (also a ``ValueError``). The message names the setting, the value and what was
    expected."""

    code = "CONFIG"


class LayoutError(ConfigError):
    """An id layout cannot be built (widths, epoch, tick)."""

    code = "LAYOUT"


class InvalidIdError(CosidError, ValueError):
    """An id, or its text form, is not valid (also a ``ValueError``)."""

    code = "INVALID_ID"


BY_CODE: Dict[str, Type[CosidError]] = {
    cls.code: cls
    for cls in (
        CosidError,
        SlotLostError,
        WindowClosedError,
        BeforeWindowError,
        ClockMovedBackwardsError,
        ClosedError,
        ExhaustedError,
        NamespaceMismatchError,
        StoreError,
        StoreUnavailableError,
        CorruptRecordError,
        ConfigError,
        LayoutError,
        InvalidIdError,
        ForkedError,
        ReentrantError,
        AlreadyInitializedError,
        StateFileError,
        StoreRegressionError,
        PanicError,
        InternalError,
    )
}

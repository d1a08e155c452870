"""Runtime events and their callbacks."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, List, Mapping, TypeVar

from . import _cosid

__all__ = ["Event", "on_event", "off_event"]

log = logging.getLogger("cosid")


@dataclass(frozen=True)
class Event:
    """Something a runtime did or saw.

    ``name`` is a stable upper-case name, the same in every binding: ``"ACQUIRED"``, ``"RENEWED"``,
    ``"RENEW_FAILED"``, ``"SLOT_LOST"``, ``"RELEASED"``, ``"DUPLICATE_OWNER_KEY"``, ``"CLOCK_SKEW"``,
    ``"STORE_REGRESSION"``, ``"STORE_UNSAFE"``. ``fields`` holds its details (``slot``, ``fence``, ``ceiling_ms``,
    ``error``, ``setting``, ...).

    Every event of every runtime is also logged to the ``"cosid"`` logger of :mod:`logging`: ``SLOT_LOST`` and
    ``STORE_REGRESSION`` at ERROR, ``RENEW_FAILED``, ``CLOCK_SKEW`` and ``STORE_UNSAFE`` at WARNING, the lease's
    steps at INFO (renewals, DEBUG, are left to callbacks). The record carries ``cosid_event`` (the name) and
    ``cosid_fields``.
    """

    name: str
    fields: Mapping[str, Any]

    def __getitem__(self, key: str) -> Any:
        """A field, as ``event["slot"]``."""
        return self.fields[key]

    def __str__(self) -> str:
        details = ", ".join(f"{k}={v!r}" for k, v in self.fields.items())
        return f"{self.name}({details})"


Callback = TypeVar("Callback", bound=Callable[[Event], Any])

# Callbacks of the process-wide runtime. A list changed and copied only with the GIL held, and no lock: a lock
# held by another thread at os.fork() would stay locked forever in the child.
_process_callbacks: List[Callable[[Event], Any]] = []


def on_event(callback: Callback) -> Callback:
    """Calls ``callback(event)`` with every later :class:`Event` of the process-wide runtime, including those of
    runtimes it starts later (after ``configure()`` or in a forked child).

    Callbacks run on the runtime's background thread (the first ``ACQUIRED`` on the thread that starts the
    runtime); keep them short. An exception in a callback is logged to the ``"cosid"`` logger and otherwise
    ignored: it never stops the runtime. Returns ``callback``, so it also works as a decorator.
    """
    if not callable(callback):
        raise TypeError(f"callback must be callable, not {type(callback).__name__}")
    _process_callbacks.append(callback)
    # From now on the runtimes' threads take the GIL to deliver events (without callbacks they never do).
    _cosid._process_callbacks(True)
    return callback


def off_event(callback: Callable[[Event], Any]) -> bool:
    """Stops calling ``callback``; returns whether it was registered."""
    try:
        _process_callbacks.remove(callback)
    except ValueError:
        return False
    _cosid._process_callbacks(bool(_process_callbacks))
    return True


def _call(callback: Callable[[Event], Any], event: Event) -> None:
    try:
        callback(event)
    except BaseException:  # noqa: BLE001 - a callback must never take the runtime's thread down
        log.exception("cosid: event callback %r failed on %s", callback, event)


_LEVELS = {"ERROR": logging.ERROR, "WARN": logging.WARNING, "INFO": logging.INFO, "DEBUG": logging.DEBUG}


def _log(level: str, name: str, message: str, fields: dict) -> None:
    levelno = _LEVELS.get(level, logging.WARNING)
    if log.isEnabledFor(levelno):
        log.log(levelno, "%s", message, extra={"cosid_event": name, "cosid_fields": dict(fields)})


def _deliver(callback: Callable[[Event], Any], name: str, fields: dict) -> None:
    _call(callback, Event(name, MappingProxyType(fields)))


def _deliver_process(name: str, fields: dict) -> None:
    callbacks = list(_process_callbacks)
    if callbacks:
        event = Event(name, MappingProxyType(fields))
        for callback in callbacks:
            _call(callback, event)

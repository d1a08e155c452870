"""Small value types: the parts of an id and a runtime's status."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import NamedTuple, Optional

__all__ = ["IdParts", "Status"]

UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class IdParts(NamedTuple):
    """The fields of an id, as :func:`cosid.parse` returns them."""

    timestamp: datetime
    """The start of the id's tick, timezone-aware (UTC)."""
    slot: int
    """The slot that issued the id."""
    sequence: int
    """The sequence number within the tick."""

    @property
    def timestamp_ms(self) -> int:
        """The timestamp in Unix milliseconds."""
        return (self.timestamp - UNIX_EPOCH) // timedelta(milliseconds=1)


def from_unix_ms(ms: int) -> datetime:
    """A UTC datetime, exact to the millisecond (no float rounding)."""
    return UNIX_EPOCH + timedelta(milliseconds=ms)


@dataclass(frozen=True)
class Status:
    """A runtime's lease and state at one moment. Times are Unix milliseconds of the store's clock."""

    namespace: str
    store: str
    """The store kind: ``"sqlite"``, ``"memory"``, ``"redis"``, ..."""
    owner_key: str
    incarnation: str
    """A UUID, new for every runtime start (and so for every forked child)."""
    slot: int
    fence: int
    floor_ms: int
    """The window's floor (excluded)."""
    ceiling_ms: int
    """The window's ceiling (included)."""
    expires_at_ms: int
    store_now_ms: int
    last_issued_ms: Optional[int]
    """The last millisecond used by an id of this window, if any."""
    state: str
    """``"ACTIVE"``, ``"RENEWING"``, ``"REACQUIRING"`` or ``"CLOSED"``."""
    pid: int
    """The process this status was read in."""

    @property
    def expires_at(self) -> datetime:
        """The lease expiry as a UTC datetime."""
        return from_unix_ms(self.expires_at_ms)

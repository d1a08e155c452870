"""Every exception class: its place in the hierarchy, its code, and a real way to provoke it where there is one."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import cosid
from cosid import _cosid
from cosid._errors import BY_CODE

from conftest import StoreLock, sql

# Every code of the Rust core's cosid::Error::code(), with the class it must raise.
CODES = {
    "SLOT_LOST": cosid.SlotLostError,
    "WINDOW_CLOSED": cosid.WindowClosedError,
    "BEFORE_WINDOW": cosid.BeforeWindowError,
    "CLOCK_MOVED_BACKWARDS": cosid.ClockMovedBackwardsError,
    "CLOSED": cosid.ClosedError,
    "EXHAUSTED": cosid.ExhaustedError,
    "NAMESPACE_MISMATCH": cosid.NamespaceMismatchError,
    "STORE": cosid.StoreError,
    "STORE_UNAVAILABLE": cosid.StoreUnavailableError,
    "CORRUPT_RECORD": cosid.CorruptRecordError,
    "CONFIG": cosid.ConfigError,
    "LAYOUT": cosid.LayoutError,
    "INVALID_ID": cosid.InvalidIdError,
}

# Each variant of cosid::Error (and of its StoreError) with the class it becomes.
VARIANTS = {
    "SlotLost": cosid.SlotLostError,
    "WindowClosed": cosid.WindowClosedError,
    "BeforeWindow": cosid.BeforeWindowError,
    "ClockMovedBackwards": cosid.ClockMovedBackwardsError,
    "Closed": cosid.ClosedError,
    "Store.Unavailable": cosid.StoreUnavailableError,
    "Store.Generic": cosid.StoreError,
    "Store.Exhausted": cosid.ExhaustedError,
    "Store.NamespaceMismatch": cosid.NamespaceMismatchError,
    "Store.LeaseLost": cosid.SlotLostError,
    "Store.Corrupt": cosid.CorruptRecordError,
    "Store.InvalidUrl": cosid.ConfigError,
    "Config": cosid.ConfigError,
    "Layout": cosid.LayoutError,
    "Id": cosid.InvalidIdError,
    "Namespace": cosid.ConfigError,
}


def test_hierarchy_and_codes() -> None:
    assert BY_CODE["ERROR"] is cosid.CosidError
    for code, cls in CODES.items():
        assert BY_CODE[code] is cls
        assert cls.code == code
        assert issubclass(cls, cosid.CosidError)
    for cls in (cosid.StoreUnavailableError, cosid.CorruptRecordError):
        assert issubclass(cls, cosid.StoreError)
    for cls in (cosid.ConfigError, cosid.LayoutError, cosid.InvalidIdError):
        assert issubclass(cls, ValueError)
    assert issubclass(cosid.LayoutError, cosid.ConfigError)
    assert not issubclass(cosid.SlotLostError, ValueError)


@pytest.mark.parametrize("variant, cls", sorted(VARIANTS.items()))
def test_every_core_error_maps_to_its_class(variant: str, cls: type) -> None:
    err = _cosid._sample_error(variant)
    assert type(err) is cls
    assert err.code == cls.code
    assert str(err)


def test_instances_pickle_with_their_code() -> None:
    import pickle

    err = _cosid._sample_error("SlotLost")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cosid.SlotLostError and again.code == "SLOT_LOST" and str(again) == str(err)


def test_closed_error(store: str) -> None:
    rt = cosid.Runtime(store=store)
    rt.shutdown()
    with pytest.raises(cosid.ClosedError, match="shut down") as info:
        rt.next_id()
    assert info.value.code == "CLOSED"


def test_exhausted_error(store: str) -> None:
    with cosid.Runtime(store=store, bits=1) as a, cosid.Runtime(store=store, bits=1) as b:
        assert {a.status().slot, b.status().slot} == {0, 1}
        with pytest.raises(cosid.ExhaustedError, match="exhausted") as info:
            cosid.Runtime(store=store, bits=1, acquire_timeout=0.2)
        assert info.value.code == "EXHAUSTED"


def test_namespace_mismatch_error_names_both_values(store: str) -> None:
    with cosid.Runtime(store=store, namespace="shared", bits=4):
        pass
    with pytest.raises(cosid.NamespaceMismatchError, match=r"bits = 4.*5") as info:
        cosid.Runtime(store=store, namespace="shared", bits=5)
    assert info.value.code == "NAMESPACE_MISMATCH"


def test_store_unavailable_error() -> None:
    # /proc refuses new folders, even to root.
    with pytest.raises(cosid.StoreUnavailableError) as info:
        cosid.Runtime(store="sqlite:///proc/cosid-test/leases.db", acquire_timeout=0)
    assert info.value.code == "STORE_UNAVAILABLE" and isinstance(info.value, cosid.StoreError)


def test_store_unavailable_for_a_file_that_is_not_a_database(db: Path) -> None:
    db.write_bytes(b"this is not an SQLite database, just some bytes" * 100)
    with pytest.raises(cosid.StoreUnavailableError):
        cosid.Runtime(store=f"sqlite:///{db}", acquire_timeout=0)


def test_corrupt_record_error(db: Path, store: str) -> None:
    with cosid.Runtime(store=store, namespace="c", bits=1):
        pass
    # A hand edit that breaks the protocol: a floor above the ceiling.
    sql(db, "UPDATE cosid_slot SET floor = ceiling + 1000")
    with pytest.raises(cosid.CorruptRecordError) as info:
        cosid.Runtime(store=store, namespace="c", bits=1, acquire_timeout=0)
    assert info.value.code == "CORRUPT_RECORD"


def test_slot_lost_error(db: Path, store: str) -> None:
    lost = threading.Event()
    rt = cosid.Runtime(store=store, namespace="lost", bits=1, ttl=0.3, tolerance=0.05)
    try:
        rt.on_event(lambda e: lost.set() if e.name == "SLOT_LOST" else None)
        rt.next_id()
        # Another owner takes this slot over (as after a long pause), and holds the only other slot too, so the
        # runtime cannot get a new one.
        far = int(time.time() * 1000) + 3_600_000
        thief = "'thief', '00000000-0000-4000-8000-000000000000'"
        sql(db, f"INSERT INTO cosid_slot SELECT namespace, 1, {thief}, 'thief', 1, ?, ?, ?, ? FROM cosid_slot "
                "WHERE slot = 0", far, far - 1000, far, far)
        sql(db, f"UPDATE cosid_slot SET (owner_key, incarnation) = ({thief}), fence = fence + 1, expires_at = ?, "
                "floor = ceiling, ceiling = ?, next_floor = ? WHERE slot = 0", far, far, far)
        assert lost.wait(5), "the keeper never noticed the lost lease"
        with pytest.raises(cosid.SlotLostError, match="lost") as info:
            rt.next_id()
        assert info.value.code == "SLOT_LOST"
        assert rt.status().state == "REACQUIRING"
    finally:
        rt.shutdown()


def test_window_closed_error(db: Path, store: str) -> None:
    rt = cosid.Runtime(store=store, ttl=0.2, tolerance=0, max_wait=0.05)
    try:
        # The store stops answering: an exclusive transaction blocks every renewal.
        with StoreLock(db):
            # Past the ceiling of the last renewal that got through.
            while time.time() * 1000 <= rt.status().ceiling_ms + 20:
                time.sleep(0.02)
            with pytest.raises(cosid.WindowClosedError, match="closed") as info:
                rt.next_id()
            assert info.value.code == "WINDOW_CLOSED"
        # Once the store answers again, a renewal reopens the window.
        deadline = time.time() + 12
        while True:
            try:
                assert rt.next_id() > 0
                break
            except cosid.WindowClosedError:
                assert time.time() < deadline, "no renewal after the store came back"
                time.sleep(0.02)
    finally:
        rt.shutdown()


def test_before_window_error(db: Path, store: str) -> None:
    with cosid.Runtime(store=store, namespace="future", bits=1):
        pass
    # The previous holders' clocks ran far ahead: every window starts ten minutes from now.
    ahead = int(time.time() * 1000) + 600_000
    sql(db, "UPDATE cosid_slot SET next_floor = ?, floor = ?, ceiling = ?", ahead, ahead, ahead)
    sql(db, "INSERT INTO cosid_slot SELECT namespace, 1, NULL, NULL, NULL, fence, expires_at, floor, ceiling, "
            "next_floor FROM cosid_slot WHERE slot = 0")
    with cosid.Runtime(store=store, namespace="future", bits=1, max_wait=0.05) as rt:
        assert rt.status().floor_ms >= ahead
        with pytest.raises(cosid.BeforeWindowError) as info:
            rt.next_id()
        assert info.value.code == "BEFORE_WINDOW"


def test_config_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="ttl"):
        cosid.configure(ttl="0s")


def test_a_failed_call_leaves_the_process_runtime_usable() -> None:
    with pytest.raises(cosid.InvalidIdError):
        cosid.parse(-5)
    assert cosid.next_id() > 0

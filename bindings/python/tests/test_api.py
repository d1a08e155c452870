"""The public API: ids, batches, parsing and text forms, status, configure, Runtime, Layout."""

from __future__ import annotations

import array
import datetime as dt
from datetime import timedelta, timezone

import pytest

import cosid


def test_next_id_is_a_positive_increasing_int() -> None:
    ids = [cosid.next_id() for _ in range(10_000)]
    assert all(type(i) is int for i in ids)
    assert all(0 < i < 2**63 for i in ids)
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_next_id_is_a_documented_function_of_no_arguments() -> None:
    # A plain C function (METH_NOARGS), not a PyO3 one: its signature, doc and module are set by hand.
    import inspect

    assert str(inspect.signature(cosid.next_id)) == "()"
    assert cosid.next_id.__module__ == "cosid._cosid"
    assert (cosid.next_id.__doc__ or "").startswith("Issues one id from the process-wide runtime")
    with pytest.raises(TypeError, match="takes no arguments"):
        cosid.next_id(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        cosid.next_id(n=1)  # type: ignore[call-arg]


def test_next_ids_returns_increasing_unique_ints() -> None:
    ids = cosid.next_ids(10_000)
    assert isinstance(ids, list) and len(ids) == 10_000
    assert all(type(i) is int for i in ids)
    assert all(b > a for a, b in zip(ids, ids[1:]))
    assert cosid.next_ids(0) == []
    later = cosid.next_id()
    assert later > ids[-1]


def test_next_ids_array_holds_the_same_kind_of_ids() -> None:
    ids = cosid.next_ids_array(5000)
    assert isinstance(ids, array.array) and ids.typecode == "Q" and len(ids) == 5000
    assert all(b > a for a, b in zip(ids, ids[1:]))
    assert cosid.parse(ids[0]).slot == cosid.status().slot
    assert len(cosid.next_ids_array(0)) == 0


@pytest.mark.parametrize("bad", [-1, cosid.MAX_BATCH + 1, 2**70])
def test_next_ids_refuses_counts_out_of_range(bad: int) -> None:
    with pytest.raises(ValueError, match=r"n = .* is out of range"):
        cosid.next_ids(bad)


@pytest.mark.parametrize("bad", ["10", 1.5, None, True])
def test_next_ids_refuses_non_int_counts(bad: object) -> None:
    with pytest.raises(TypeError, match="n must be an int"):
        cosid.next_ids(bad)  # type: ignore[arg-type]


def test_parse_returns_utc_timestamp_slot_and_sequence() -> None:
    before = dt.datetime.now(timezone.utc) - timedelta(seconds=1)
    a, b = cosid.next_ids(2)
    after = dt.datetime.now(timezone.utc) + timedelta(seconds=1)
    parts = cosid.parse(a)
    assert isinstance(parts, cosid.IdParts)
    timestamp, slot, sequence = parts
    assert timestamp.tzinfo is not None and timestamp.utcoffset() == timedelta(0)
    assert before <= timestamp <= after
    assert slot == cosid.status().slot
    second = cosid.parse(b)
    assert (second.timestamp, second.sequence) > (timestamp, sequence)
    assert parts.timestamp_ms == int(timestamp.timestamp() * 1000)


def test_parse_known_id() -> None:
    layout = cosid.Layout.millis()
    id_ = layout.compose(1_234, 5, 67)
    assert id_ == (1_234 << 22) | (5 << 12) | 67
    parts = cosid.parse(id_)
    assert parts == cosid.IdParts(
        dt.datetime(2019, 12, 24, 16, 0, 1, 234_000, tzinfo=timezone.utc), 5, 67
    )
    assert layout.decompose(id_) == (1_234, layout.epoch_ms + 1_234, 5, 67)


def test_friendly_form_both_ways() -> None:
    id_ = cosid.Layout.millis().compose(1_234, 5, 67)
    assert cosid.to_friendly(id_) == "20191224160001234-5-67"
    assert cosid.from_friendly("20191224160001234-5-67") == id_
    live = cosid.next_id()
    assert cosid.from_friendly(cosid.to_friendly(live)) == live
    seconds = cosid.Layout.seconds()
    sid = seconds.compose(10, 3, 0)
    assert cosid.to_friendly(sid, "seconds") == "20191224160010000-3-0"
    assert cosid.from_friendly("20191224160010000-3-0", seconds) == sid


def test_base62_both_ways() -> None:
    assert cosid.to_base62(0) == "00000000000"
    assert cosid.to_base62(61) == "0000000000z"
    assert cosid.to_base62(2**64 - 1) == "LygHa16AHYF"
    assert cosid.from_base62("0000000000z") == 61
    live = cosid.next_id()
    text = cosid.to_base62(live)
    assert len(text) == 11 and cosid.from_base62(text) == live
    assert sorted([cosid.to_base62(i) for i in (5, 62, 3_000)]) == [cosid.to_base62(i) for i in (5, 62, 3_000)]


@pytest.mark.parametrize(
    "call",
    [
        lambda: cosid.from_base62("0000000000!"),
        lambda: cosid.from_base62("zzzzzzzzzzz"),
        lambda: cosid.from_base62(""),
        lambda: cosid.from_friendly("20191224160001234-05-67"),
        lambda: cosid.from_friendly("20191332160001234-5-67"),
        lambda: cosid.from_friendly("not-an-id"),
        lambda: cosid.parse(-1),
        lambda: cosid.parse(2**63),
        lambda: cosid.parse(2**64),
        lambda: cosid.to_friendly(2**63 + 5),
        lambda: cosid.parse(1 << 62, cosid.Layout.js_safe()),
    ],
)
def test_bad_ids_and_text_raise_invalid_id_error(call) -> None:
    with pytest.raises(cosid.InvalidIdError) as info:
        call()
    assert isinstance(info.value, ValueError)
    assert info.value.code == "INVALID_ID"
    assert str(info.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda: cosid.parse("123"),
        lambda: cosid.parse(1.0),
        lambda: cosid.parse(True),
        lambda: cosid.to_base62(None),
        lambda: cosid.from_base62(123),
        lambda: cosid.from_friendly(b"20191224160001234-5-67"),
        lambda: cosid.parse(1, layout=7),
    ],
)
def test_wrong_argument_types_raise_type_error(call) -> None:
    with pytest.raises(TypeError, match="must be"):
        call()


def test_status_describes_the_lease() -> None:
    cosid.next_id()
    s = cosid.status()
    assert isinstance(s, cosid.Status)
    assert s.namespace == "default" and s.store == "sqlite" and s.state == "ACTIVE"
    assert 0 <= s.slot < 1024 and s.fence >= 1
    assert s.floor_ms < s.ceiling_ms and s.expires_at_ms <= s.ceiling_ms
    assert s.last_issued_ms is not None and s.floor_ms < s.last_issued_ms <= s.ceiling_ms
    assert s.expires_at.tzinfo is not None
    assert len(s.incarnation) == 36


def test_configure_applies_settings_and_restarts_lazily(store: str) -> None:
    first = cosid.status()
    cosid.configure(store=store, namespace="orders", ttl="10s", tolerance=0.5, bits=4, layout="seconds")
    s = cosid.status()
    assert (s.namespace, s.store) == ("orders", "sqlite")
    assert s.incarnation != first.incarnation
    assert s.expires_at_ms - s.store_now_ms <= 10_000
    assert s.ceiling_ms - s.expires_at_ms == 500
    assert cosid.default_layout() == cosid.Layout.seconds()
    parts = cosid.parse(cosid.next_id())
    assert parts.slot == s.slot and parts.timestamp.microsecond == 0


@pytest.mark.parametrize("ttl", [30, 30.0, "30s", "30000ms", timedelta(seconds=30)])
def test_durations_take_seconds_strings_and_timedeltas(ttl: object, store: str) -> None:
    with cosid.Runtime(store=store, ttl=ttl) as rt:
        s = rt.status()
        assert s.expires_at_ms - s.store_now_ms == 30_000


@pytest.mark.parametrize(
    "kwargs, setting",
    [
        ({"ttl": "soon"}, "ttl"),
        ({"ttl": 0.001}, "ttl"),
        ({"ttl": -1}, "ttl"),
        ({"ttl": float("nan")}, "ttl"),
        ({"bits": 0}, "bits"),
        ({"bits": 11}, "bits"),
        ({"bits": 300}, "bits"),
        ({"preferred_slot": 1024}, "preferred_slot"),
        ({"preferred_slot": -1}, "preferred_slot"),
        ({"layout": "decimal"}, "layout"),
        ({"store": "ftp://x"}, "ftp"),
        ({"tolerance": "1h"}, "tolerance"),
    ],
)
def test_bad_settings_raise_config_error_naming_the_setting(kwargs: dict, setting: str) -> None:
    for call in (cosid.configure, cosid.Runtime):
        with pytest.raises(cosid.ConfigError, match=setting) as info:
            call(**kwargs)
        # A layout name that is not one is LAYOUT (a ConfigError too), as in every language.
        assert isinstance(info.value, ValueError) and info.value.code == ("LAYOUT" if setting == "layout" else "CONFIG")


@pytest.mark.parametrize(
    "kwargs",
    [{"ttl": True}, {"ttl": [30]}, {"bits": 4.0}, {"store": 5}, {"namespace": b"x"}, {"layout": 3}],
)
def test_wrong_setting_types_raise_type_error(kwargs: dict) -> None:
    with pytest.raises(TypeError, match="must be"):
        cosid.configure(**kwargs)


def test_unknown_setting_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        cosid.configure(tll=30)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        cosid.Runtime(tll=30)  # type: ignore[call-arg]


def test_failed_configure_keeps_the_running_runtime() -> None:
    before = cosid.status().incarnation
    with pytest.raises(cosid.ConfigError):
        cosid.configure(ttl="never")
    assert cosid.status().incarnation == before


def test_shutdown_releases_and_stays_closed_until_configured_again() -> None:
    ids = cosid.next_ids(3)
    first = cosid.status()
    last_ms = cosid.shutdown()
    assert last_ms == cosid.parse(ids[-1]).timestamp_ms
    assert cosid.shutdown() is None
    # The rule of every language: closed until configured again, never a silent restart.
    for call in (cosid.next_id, lambda: cosid.next_ids(2), lambda: cosid.next_ids_array(2)):
        with pytest.raises(cosid.ClosedError):
            call()
    assert cosid.status().state == "CLOSED"
    cosid.configure()
    later = cosid.next_id()
    second = cosid.status()
    assert second.incarnation != first.incarnation
    assert later > ids[-1]


def test_runtime_is_a_context_manager(store: str) -> None:
    with cosid.Runtime(store=store, namespace="ctx") as rt:
        assert isinstance(rt, cosid.Runtime) and not rt.closed
        ids = [rt.next_id() for _ in range(100)] + rt.next_ids(100) + list(rt.next_ids_array(100))
        assert ids == sorted(ids) and len(set(ids)) == 300
        assert rt.parse(ids[0]).slot == rt.status().slot
        assert rt.from_friendly(rt.to_friendly(ids[5])) == ids[5]
    assert rt.closed
    with pytest.raises(cosid.ClosedError) as info:
        rt.next_id()
    assert info.value.code == "CLOSED"
    with pytest.raises(cosid.ClosedError):
        rt.next_ids(3)
    assert rt.status().state == "CLOSED"
    assert rt.shutdown() is None


def test_runtime_next_id_is_a_plain_function_of_the_runtime(store: str) -> None:
    # ``rt.next_id`` is a METH_NOARGS function bound to the runtime's holder (not PyO3's method): the same
    # signature, doc and errors, and it works detached; the class keeps the method.
    import gc
    import inspect

    rt = cosid.Runtime(store=store, namespace="own")
    next_id = rt.next_id
    assert "next_id" in vars(rt) and callable(cosid.Runtime.next_id)
    assert str(inspect.signature(next_id)) == "()"
    assert (next_id.__doc__ or "").startswith("Issues one id.")
    with pytest.raises(TypeError, match="takes no arguments"):
        next_id(1)  # type: ignore[call-arg]
    ids = [next_id() for _ in range(5000)] + [cosid.Runtime.next_id(rt)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert rt.parse(ids[0]).slot == rt.status().slot
    rt.shutdown()
    with pytest.raises(cosid.ClosedError):
        next_id()
    # Kept past its Runtime object, as a bound method would be: the runtime keeps issuing, and is shut down (its
    # slot released) when the function goes too.
    import threading

    released = threading.Event()
    again = cosid.Runtime(store=store, namespace="own-kept")
    again.on_event(lambda e: released.set() if e.name == "RELEASED" else None)
    kept = again.next_id
    slot = again.status().slot
    del again
    gc.collect()
    assert not released.is_set()
    assert cosid.parse(kept()).slot == slot
    assert cosid.Runtime(store=store, namespace="own-temporary").next_id() > 0  # a temporary runtime's function
    del kept
    gc.collect()
    assert released.wait(10), "the runtime was not shut down when its last owner went"


def test_runtime_shutdown_returns_the_last_timestamp(store: str) -> None:
    rt = cosid.Runtime(store=store)
    last = rt.next_ids(10)[-1]
    assert rt.shutdown() == cosid.parse(last).timestamp_ms
    # The next holder of the slot starts past that timestamp.
    with cosid.Runtime(store=store) as again:
        s = again.status()
        assert s.slot == rt.parse(last).slot
        assert s.floor_ms >= cosid.parse(last).timestamp_ms
        assert again.next_id() > last


def test_runtimes_on_one_store_hold_distinct_slots(store: str) -> None:
    cosid.configure(store=store)
    with cosid.Runtime(store=store) as a, cosid.Runtime(store=store) as b:
        slots = {cosid.status().slot, a.status().slot, b.status().slot}
        assert len(slots) == 3
        ids = {cosid.next_id(), a.next_id(), b.next_id()}
        assert len(ids) == 3


def test_runtime_with_a_custom_layout(store: str) -> None:
    layout = cosid.Layout(epoch_ms=1_700_000_000_000, tick="second", timestamp_bits=32, slot_bits=8, sequence_bits=20)
    with cosid.Runtime(store=store, layout=layout, bits=8) as rt:
        assert rt.layout == layout
        id_ = rt.next_id()
        parts = rt.parse(id_)
        assert parts.slot == rt.status().slot and parts.timestamp.microsecond == 0
        assert "epoch_ms=1700000000000" in repr(layout)


def test_layout_presets_and_properties() -> None:
    m = cosid.Layout.millis()
    assert (m.timestamp_bits, m.slot_bits, m.sequence_bits, m.tick) == (41, 10, 12, "millisecond")
    assert m.cap_per_second == 4_096_000 and m.epoch_ms == 1_577_203_200_000
    assert cosid.Layout() == m and hash(cosid.Layout()) == hash(m)
    assert cosid.Layout.named("js-safe") == cosid.Layout.js_safe()
    assert cosid.Layout.js_safe().slot_bits + cosid.Layout.js_safe().sequence_bits + 41 == 53
    assert cosid.Layout.seconds().tick == "second"
    assert cosid.Layout.millis() != cosid.Layout.seconds()


@pytest.mark.parametrize(
    "kwargs",
    [{"slot_bits": 0}, {"timestamp_bits": 50, "slot_bits": 10, "sequence_bits": 12}, {"tick": "minute"},
     {"slot_bits": -1}, {"sequence_bits": 300}, {"epoch_ms": -5},
     {"epoch_ms": 1_577_203_200_001, "tick": "second", "timestamp_bits": 31, "sequence_bits": 22}],
)
def test_bad_layouts_raise_layout_error(kwargs: dict) -> None:
    with pytest.raises(cosid.LayoutError) as info:
        cosid.Layout(**kwargs)
    assert info.value.code == "LAYOUT"
    assert isinstance(info.value, cosid.ConfigError) and isinstance(info.value, ValueError)


def test_environment_configures_the_process_runtime(monkeypatch: pytest.MonkeyPatch, store: str) -> None:
    monkeypatch.setenv("COSID_STORE", store)
    monkeypatch.setenv("COSID_NAMESPACE", "from-env")
    monkeypatch.setenv("COSID_LAYOUT", "js-safe")
    monkeypatch.setenv("COSID_BITS", "5")
    cosid.configure()
    assert cosid.status().namespace == "from-env"
    assert cosid.default_layout() == cosid.Layout.js_safe()
    # Arguments win over the environment.
    cosid.configure(namespace="from-args")
    assert cosid.status().namespace == "from-args"


def test_bad_environment_raises_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COSID_TTL", "forever")
    with pytest.raises(cosid.ConfigError, match="COSID_TTL"):
        cosid.configure()


def test_version_and_exports() -> None:
    assert cosid.__version__.count(".") == 2
    for name in cosid.__all__:
        assert getattr(cosid, name) is not None, name


def test_every_public_function_has_a_docstring() -> None:
    import inspect

    for name in cosid.__all__:
        obj = getattr(cosid, name)
        if callable(obj):
            assert inspect.getdoc(obj), name
    for name in ("next_id", "next_ids", "next_ids_array", "shutdown", "status", "on_event", "parse"):
        assert inspect.getdoc(getattr(cosid.Runtime, name, None) or getattr(cosid, name)), name


def test_the_stubs_match_the_native_module() -> None:
    import ast
    from pathlib import Path

    from cosid import _cosid

    stub = ast.parse((Path(cosid.__file__).parent / "_cosid.pyi").read_text())
    stubbed = {n.name for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    stubbed |= {n.target.id for n in stub.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    native = {n for n in dir(_cosid) if not n.startswith("__")} | {"__version__"}
    assert stubbed - {"_Duration", "_LayoutLike"} == native
    for cls in ("Layout", "Runtime"):
        node = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == cls)
        methods = {m.name for m in node.body if isinstance(m, ast.FunctionDef)}
        real = {m for m in dir(getattr(_cosid, cls)) if not m.startswith("__")}
        assert real <= methods, real - methods
    assert (Path(cosid.__file__).parent / "py.typed").exists()

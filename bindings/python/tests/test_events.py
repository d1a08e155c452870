"""Event callbacks: what they receive, on which thread, and that a failing callback never hurts the runtime."""

from __future__ import annotations

import logging
import threading
from typing import List

import pytest

import cosid


def test_process_callbacks_see_acquired_and_released(store: str) -> None:
    seen: List[cosid.Event] = []

    @cosid.on_event
    def record(event: cosid.Event) -> None:
        seen.append(event)

    assert callable(record)
    cosid.configure(store=store, namespace="events")
    id_ = cosid.next_id()
    status = cosid.status()
    last = cosid.shutdown()
    names = [e.name for e in seen]
    assert names[0] == "ACQUIRED" and names[-1] == "RELEASED", names
    acquired, released = seen[0], seen[-1]
    assert acquired["slot"] == status.slot and acquired.fields["fence"] == status.fence
    assert acquired["floor_ms"] < acquired["ceiling_ms"]
    assert released["slot"] == status.slot and released["last_issued_ms"] == last == cosid.parse(id_).timestamp_ms
    assert str(released).startswith("RELEASED(")
    with pytest.raises(TypeError):
        released.fields["slot"] = 5  # type: ignore[index]


def test_off_event_stops_the_calls(store: str) -> None:
    seen: List[str] = []
    callback = cosid.on_event(lambda e: seen.append(e.name))
    assert cosid.off_event(callback) is True
    assert cosid.off_event(callback) is False
    cosid.configure(store=store)
    cosid.next_id()
    cosid.shutdown()
    assert seen == []


def test_callbacks_outlive_a_reconfigure(store: str) -> None:
    seen: List[str] = []
    cosid.on_event(lambda e: seen.append(e.name))
    cosid.configure(store=store, namespace="one")
    cosid.next_id()
    cosid.configure(store=store, namespace="two")
    cosid.next_id()
    assert seen.count("ACQUIRED") == 2 and "RELEASED" in seen


def test_renewals_arrive_from_the_background_thread(store: str) -> None:
    renewed = threading.Event()
    threads = set()

    def on(event: cosid.Event) -> None:
        if event.name == "RENEWED":
            threads.add(threading.get_ident())
            renewed.set()

    with cosid.Runtime(store=store, ttl=0.15, tolerance=0.05) as rt:
        assert rt.on_event(on) is on
        assert renewed.wait(5), "no RENEWED event"
        assert threading.get_ident() not in threads
        assert rt.next_id() > 0


def test_a_failing_callback_is_logged_and_the_runtime_goes_on(store: str, caplog: pytest.LogCaptureFixture) -> None:
    good = threading.Event()
    renewals = []

    def bad(event: cosid.Event) -> None:
        raise RuntimeError(f"callback broke on {event.name}")

    def fine(event: cosid.Event) -> None:
        if event.name == "RENEWED":
            renewals.append(event)
            if len(renewals) >= 2:
                good.set()

    with caplog.at_level(logging.ERROR, logger="cosid"):
        with cosid.Runtime(store=store, ttl=0.15, tolerance=0.05) as rt:
            rt.on_event(bad)
            rt.on_event(fine)
            assert good.wait(5), "renewals stopped after a callback raised"
            assert rt.status().state == "ACTIVE"
            assert rt.next_id() > 0
    failures = [r for r in caplog.records if r.name == "cosid" and "callback" in r.getMessage()]
    assert failures, "the failing callback was not logged"
    assert failures[0].exc_info is not None and "callback broke on" in str(failures[0].exc_info[1])


def test_shutdown_from_a_callback_is_refused_not_deadlocked(store: str) -> None:
    errors: List[BaseException] = []
    done = threading.Event()

    with cosid.Runtime(store=store, ttl=0.15, tolerance=0.05) as rt:

        def on(event: cosid.Event) -> None:
            if event.name == "RENEWED" and not done.is_set():
                try:
                    rt.shutdown()
                except BaseException as e:  # noqa: BLE001
                    errors.append(e)
                done.set()

        rt.on_event(on)
        assert done.wait(5)
        assert len(errors) == 1 and isinstance(errors[0], cosid.ReentrantError), errors
        assert isinstance(errors[0], RuntimeError) and "event callback" in str(errors[0])
        assert not rt.closed


def test_on_event_refuses_non_callables(store: str) -> None:
    with pytest.raises(TypeError, match="callable"):
        cosid.on_event(5)  # type: ignore[arg-type]
    with cosid.Runtime(store=store) as rt, pytest.raises(TypeError, match="callable"):
        rt.on_event("nope")  # type: ignore[arg-type]


def test_issuing_from_the_first_acquired_callback_is_refused_not_deadlocked(store: str) -> None:
    outcome: List[object] = []

    @cosid.on_event
    def on(event: cosid.Event) -> None:
        if event.name == "ACQUIRED" and not outcome:
            for call in (cosid.next_id, cosid.shutdown, lambda: cosid.configure(store=store)):
                try:
                    outcome.append(call())
                except RuntimeError as e:
                    outcome.append(e)

    cosid.configure(store=store, namespace="reentrant")
    assert cosid.next_id() > 0
    assert len(outcome) == 3 and all(isinstance(o, cosid.ReentrantError) for o in outcome), outcome
    assert all("ACQUIRED" in str(o) for o in outcome), outcome


def test_a_callback_taking_ids_while_configure_replaces_the_runtime(store: str) -> None:
    """configure() joins the old runtime's thread, whose RELEASED callback asks for an id: refused, no deadlock."""
    outcome: List[object] = []

    @cosid.on_event
    def on(event: cosid.Event) -> None:
        if event.name == "RELEASED":
            try:
                outcome.append(cosid.next_id())
            except (RuntimeError, cosid.CosidError) as e:
                outcome.append(e)

    cosid.configure(store=store, namespace="replace")
    cosid.next_id()
    cosid.configure(store=store, namespace="replace", ttl=20)
    assert len(outcome) == 1 and isinstance(outcome[0], cosid.ReentrantError), outcome
    assert cosid.next_id() > 0

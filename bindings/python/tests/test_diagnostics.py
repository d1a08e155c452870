"""Diagnostics reach the ``logging`` module (logger ``"cosid"``) at each event's level, and no error, repr or log
record shows a password planted in a store URL.

A Redis server of the test's own (``redis-server`` on a free port, ``appendfsync everysec``) stands for a store
whose settings break the safety claim; without ``redis-server`` on PATH those tests report themselves skipped.
"""

from __future__ import annotations

import logging
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

import cosid


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def unsafe_redis(tmp_path: Path) -> Iterator[int]:
    """A redis-server that fsyncs its log once a second, with password ``s3cret-pw``; yields its port."""
    if shutil.which("redis-server") is None:
        pytest.skip("no redis-server on PATH")
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", str(tmp_path), "--save", "",
         "--appendonly", "yes", "--appendfsync", "everysec", "--requirepass", "s3cret-pw"],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("redis-server did not start")
                time.sleep(0.05)
        yield port
    finally:
        server.terminate()
        server.wait(10)


def test_an_unsafe_store_setting_is_logged_as_a_warning(
    unsafe_redis: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="cosid")
    rt = cosid.Runtime(store=f"redis://default:s3cret-pw@127.0.0.1:{unsafe_redis}/0", namespace="diag")
    rt.next_id()
    rt.shutdown()
    found = [r for r in caplog.records if getattr(r, "cosid_event", None) == "STORE_UNSAFE"]
    assert len(found) == 1, [r.getMessage() for r in caplog.records]
    record = found[0]
    assert record.name == "cosid" and record.levelno == logging.WARNING
    assert record.cosid_fields == {  # type: ignore[attr-defined]
        "store": "redis",
        "setting": "appendfsync",
        "value": "everysec",
        "expected": "always",
    }
    assert "appendfsync = everysec" in record.getMessage()
    assert "s3cret-pw" not in caplog.text


def test_a_safe_store_logs_no_warning(store: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="cosid")
    rt = cosid.Runtime(store=store, namespace="diag")
    rt.next_id()
    rt.shutdown()
    levels = {r.cosid_event: r.levelno for r in caplog.records if hasattr(r, "cosid_event")}
    assert levels.get("ACQUIRED") == logging.INFO and levels.get("RELEASED") == logging.INFO, levels
    assert all(level < logging.WARNING for level in levels.values()), levels


def test_the_process_runtime_logs_too(store: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="cosid")
    cosid.configure(store=store, namespace="diag-process")
    cosid.next_id()
    cosid.shutdown()
    assert [r.cosid_event for r in caplog.records if hasattr(r, "cosid_event")] == ["ACQUIRED", "RELEASED"]


CLOSED = free_port()


@pytest.mark.parametrize(
    ("url", "secrets"),
    [
        (f"redis://app:s3cret-ui@127.0.0.1:{CLOSED}/0", ["s3cret-ui"]),
        (f"postgres://app@127.0.0.1:{CLOSED}/ids?password=s3cret-q", ["s3cret-q"]),
        (f"etcd://root:s3cret-e@127.0.0.1:{CLOSED}", ["s3cret-e"]),
        (f"redis://app:pa@ss-s3cret@127.0.0.1:{CLOSED}/0", ["pa@ss", "s3cret"]),
        (f"redis://app:s3cr#et-h@127.0.0.1:{CLOSED}/0", ["s3cr", "et-h"]),
        (f"rediss//app:s3cret-t@127.0.0.1:{CLOSED}/0", ["s3cret-t"]),
    ],
)
def test_no_error_or_log_record_shows_a_password(url: str, secrets: list, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="cosid")
    shown = []
    with pytest.raises(cosid.CosidError) as info:
        cosid.Runtime(store=url, namespace="diag-secret", acquire_timeout=1)
    shown += [str(info.value), repr(info.value), str(info.value.args), caplog.text]
    for secret in secrets:
        for text in shown:
            assert secret not in text, text


def test_a_wrong_password_is_not_shown(unsafe_redis: int) -> None:
    with pytest.raises(cosid.CosidError) as info:
        cosid.Runtime(store=f"redis://default:wr0ng-pw@127.0.0.1:{unsafe_redis}/0", acquire_timeout=1)
    assert "wr0ng-pw" not in f"{info.value} {info.value!r}"

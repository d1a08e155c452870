"""A Rust panic inside cosid is a cosid error (PanicError, code PANIC, an ``Exception``), not PyO3's
``PanicException``, which derives from ``BaseException`` and escapes ``except Exception`` handlers."""

from __future__ import annotations

import pytest

import cosid
from cosid import _cosid


def test_a_panic_is_a_panic_error() -> None:
    with pytest.raises(cosid.PanicError) as info:
        _cosid._panic_for_test()
    assert isinstance(info.value, cosid.CosidError) and isinstance(info.value, Exception)
    assert info.value.code == "PANIC"
    assert "probe: sync" in str(info.value) and "a bug in cosid" in str(info.value)
    # The module still works afterwards.
    assert cosid.to_base62(1) == "00000000001"

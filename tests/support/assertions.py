"""Small assertions the test files share."""

from __future__ import annotations

import pytest


def assert_raises_naming(call, words, error=ValueError):
    """``call()`` raises ``error`` with a message that contains every one of ``words`` (an error
    must name the operation and the values at fault)."""
    with pytest.raises(error) as info:
        call()
    missing = [w for w in words if w not in str(info.value)]
    assert not missing, f"{error.__name__} {str(info.value)!r} does not name {missing}"

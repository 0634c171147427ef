"""Argument checks shared by the library; each error names the op and the offending value."""

from __future__ import annotations

import numbers

import numpy as np


def positive_int(op: str, name: str, value) -> int:
    """``value`` as an int, if it is an integer >= 1 (a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{op}: {name} must be a positive integer, got {value!r}")
    return int(value)


def int_pair(op: str, name: str, value, minimum: int) -> tuple[int, int]:
    """An int or a pair of ints, each >= ``minimum``, as a pair (PyTorch's ``_pair``)."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(items) != 2:
        raise ValueError(f"{op}: {name} must be an int or a pair of ints, got {value!r}")
    for v in items:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{op}: {name} must be an int or a pair of ints, got {value!r}")
        if v < minimum:
            raise ValueError(f"{op}: {name} must be >= {minimum}, got {name}={value!r}")
    return int(items[0]), int(items[1])


def to_array(op: str, name: str, x) -> np.ndarray:
    """A Tensor's ``.data`` (duck typing: any object whose ``.data`` is an ndarray), else
    ``np.asarray(x)``; an array of numbers. An ndarray's own ``.data`` is a memoryview, so arrays
    pass through."""
    data = getattr(x, "data", None)
    if isinstance(data, np.ndarray):
        x = data
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{op}: {name} must be array-like, got {type(x).__name__}: {err}") from None
    if arr.dtype == object:
        raise TypeError(f"{op}: {name} must hold numbers, got an object array")
    return arr

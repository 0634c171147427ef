"""Argument checks the labs share: each raises a ValueError that names the lab function and the
argument (``op: name must be ...``), which the notebooks show as they are."""

from __future__ import annotations

import math
import numbers


def _int(op, name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{op}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _positive(op, name, value):
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{op}: {name} must be a positive finite number, got {value}")
    return value

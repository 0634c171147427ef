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


def is_default(op, settings: dict, default: dict) -> bool:
    """Whether ``settings`` (some or all of ``default``'s keys) hold their shipped default values:
    the one test, for every lab, of "show the shipped model, or train on the learner's settings".

    Numbers compare to round-off, since a slider moved away and back may give 0.30000000000000004;
    a bool, a string or anything else must be equal. A key ``default`` lacks is a programming
    error (a misspelt setting would otherwise never be default), so it raises.
    """
    unknown = set(settings) - set(default)
    if unknown:
        raise ValueError(f"{op}: unknown settings {sorted(unknown)}; known: {sorted(default)}")

    def same(value, shipped) -> bool:
        numeric = (
            isinstance(value, numbers.Real)
            and isinstance(shipped, numbers.Real)
            and not isinstance(value, bool)
            and not isinstance(shipped, bool)
        )
        return math.isclose(value, shipped, rel_tol=1e-9, abs_tol=1e-12) if numeric else value == shipped

    return all(same(value, default[key]) for key, value in settings.items())

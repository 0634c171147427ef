"""Factories: tensors filled with constants, ranges, or random draws (PyTorch's names and defaults).

Random factories draw from :mod:`engine.random`, so ``engine.manual_seed`` fixes them.
"""

import numpy as np

from . import random as _random
from .tensor import _DEFAULT_FLOAT, Tensor, _shape_arg


def _make(data, dtype, requires_grad) -> Tensor:
    if dtype is not None:
        data = data.astype(np.dtype(dtype), copy=False)
    t = Tensor._wrap(data)
    return t.requires_grad_(True) if requires_grad else t


def _size(size, op) -> tuple:
    shape = _shape_arg(size, op)
    if any(n < 0 for n in shape):
        raise ValueError(f"{op}: sizes must be non-negative, got {shape}")
    return shape


def zeros(*size, dtype=None, requires_grad=False) -> Tensor:
    return _make(np.zeros(_size(size, "zeros"), dtype=dtype or _DEFAULT_FLOAT), None, requires_grad)


def ones(*size, dtype=None, requires_grad=False) -> Tensor:
    return _make(np.ones(_size(size, "ones"), dtype=dtype or _DEFAULT_FLOAT), None, requires_grad)


def full(size, fill_value, dtype=None, requires_grad=False) -> Tensor:
    if dtype is None:
        dtype = _DEFAULT_FLOAT if isinstance(fill_value, float) else np.asarray(fill_value).dtype
    return _make(np.full(_size((size,), "full"), fill_value, dtype=dtype), None, requires_grad)


def zeros_like(t, dtype=None, requires_grad=False) -> Tensor:
    data = t.data if isinstance(t, Tensor) else np.asarray(t)
    return _make(np.zeros_like(data, dtype=dtype), None, requires_grad)


def ones_like(t, dtype=None, requires_grad=False) -> Tensor:
    data = t.data if isinstance(t, Tensor) else np.asarray(t)
    return _make(np.ones_like(data, dtype=dtype), None, requires_grad)


def randn(*size, dtype=None, requires_grad=False) -> Tensor:
    """Standard normal draws N(0, 1)."""
    data = _random.generator().standard_normal(_size(size, "randn"))
    return _make(data.astype(dtype or _DEFAULT_FLOAT), None, requires_grad)


def rand(*size, dtype=None, requires_grad=False) -> Tensor:
    """Uniform draws on [0, 1)."""
    data = _random.generator().random(_size(size, "rand"))
    return _make(data.astype(dtype or _DEFAULT_FLOAT), None, requires_grad)


def randint(low, high=None, size=(), dtype=None) -> Tensor:
    """Integers uniform on [low, high), int64: ``randint(low, high, size)``, or ``randint(high, size)``
    as PyTorch (a tuple second argument is the size)."""
    if isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    data = _random.generator().integers(low, high, size=_size((size,), "randint"))
    return _make(data.astype(dtype or np.int64), None, False)


def arange(start, end=None, step=1, dtype=None, requires_grad=False) -> Tensor:
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must not be 0")
    is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
    data = np.arange(start, end, step, dtype=dtype or (np.int64 if is_int else _DEFAULT_FLOAT))
    return _make(data, None, requires_grad)


def linspace(start, end, steps, dtype=None, requires_grad=False) -> Tensor:
    if steps < 1:
        raise ValueError(f"linspace: steps must be at least 1, got {steps}")
    return _make(np.linspace(start, end, int(steps), dtype=dtype or _DEFAULT_FLOAT), None, requires_grad)


def eye(n, m=None, dtype=None, requires_grad=False) -> Tensor:
    return _make(np.eye(n, m, dtype=dtype or _DEFAULT_FLOAT), None, requires_grad)

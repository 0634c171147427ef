"""What the labs of notebooks 07 (diffusion) and 08 (VAE) share: the standardised 2-D toy data
sets, and caches keyed on what the page's lesson functions compute."""

from __future__ import annotations

import functools

import numpy as np

from engine import data as engine_data

from ._checks import _int

__all__ = ["DATASETS_2D", "cached_by_code", "code_key", "toy_data_2d"]


# ----------------------------------------------------------------------------- data
DATASETS_2D = ("moons", "swiss roll", "8 Gaussians")


def toy_data_2d(name="moons", n=3000, seed=0, return_labels=False):
    """A 2-D data set from ``engine.data``, standardised (mean 0, std 1 per coordinate), so that
    it lives on the same scale as the N(0, I) noise the diffusion ends in. float64 [n, 2]; with
    ``return_labels`` also the int64 labels [n] (moon, Gaussian component, or segment of the
    roll), for colouring."""
    n = _int("toy_data_2d", "n", n, 2)
    if isinstance(seed, (int, np.integer)):  # a fixed draw: made once, callers get copies
        X, y = _toy_data_2d_once(name, n, int(seed))
        X, y = X.copy(), y.copy()
    else:
        X, y = _toy_data_2d(name, n, seed)
    return (X, y) if return_labels else X


@functools.lru_cache(maxsize=8)
def _toy_data_2d_once(name, n, seed):
    """:func:`_toy_data_2d` for an integer seed, kept: 07 redraws several sections from it at
    every change of its data set."""
    return _toy_data_2d(name, n, seed)


def _toy_data_2d(name, n, seed):
    op = "toy_data_2d"
    if name == "moons":
        X, y = engine_data.make_moons(n, noise=0.05, seed=seed)
    elif name == "swiss roll":
        X, y = engine_data.make_swiss_roll(n, noise=0.05, seed=seed)
    elif name == "8 Gaussians":
        X, y = engine_data.make_gaussian_mixture(n, seed=seed)[:2]
    else:
        raise ValueError(f"{op}: name must be one of {DATASETS_2D}, got {name!r}")
    X = np.asarray(X, dtype=np.float64)
    X = (X - X.mean(0)) / X.std(0)
    return X, np.asarray(y, dtype=np.int64)


# ----------------------------------------------------------------------------- caches keyed on code
def code_key(function):
    """What ``function`` computes, as a hashable value: its code object (which compares by value:
    bytecode, constants, names, nested functions and classes) and its default arguments.

    Every session of a page (each visitor of ``marimo run``, each run of a test) defines the
    lesson's functions anew, as new objects with equal code. Keyed on this, what a lab computed
    or loaded for the page's code is found again by the next session; an edited function has
    other code, so it misses. A callable without code of its own (a model, a class) is its own
    key."""
    code = getattr(function, "__code__", None)
    if code is None:
        return function
    key = (
        getattr(function, "__qualname__", None),
        code,
        function.__defaults__,
        tuple(sorted((function.__kwdefaults__ or {}).items())),
    )
    try:
        hash(key)
    except TypeError:  # an unhashable default (a list): the function itself
        return function
    return key


class _ByCode:
    """A function argument of a :func:`cached_by_code` function: equal to another when its code is."""

    __slots__ = ("function", "key")

    def __init__(self, function):
        self.function, self.key = function, code_key(function)

    def __eq__(self, other):
        return isinstance(other, _ByCode) and self.key == other.key

    def __hash__(self):
        return hash(self.key)


def cached_by_code(maxsize=4):
    """``functools.lru_cache`` for a lab function whose callable arguments are the page's lesson
    functions: two calls hit the same entry when those functions have the same :func:`code_key`
    (and the other arguments are equal), so a page opened again does not load or compute again."""

    def decorate(function):
        @functools.lru_cache(maxsize=maxsize)
        def cached(*args, **kwargs):
            return function(*(a.function if isinstance(a, _ByCode) else a for a in args), **kwargs)

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            return cached(*(_ByCode(a) if callable(a) else a for a in args), **kwargs)

        wrapper.cache_clear = cached.cache_clear
        return wrapper

    return decorate

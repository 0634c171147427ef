"""The engine's single source of randomness.

Every random draw in the engine (initialisation, dropout, ``randn``, toy data) asks this module for
the current generator, so ``engine.manual_seed(s)`` makes a whole run reproducible.
"""

import numpy as np

_generator = np.random.default_rng()


def manual_seed(seed: int) -> np.random.Generator:
    """Reset the global generator to ``seed``; returns the new generator."""
    global _generator
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
    _generator = np.random.default_rng(int(seed))
    return _generator


def generator() -> np.random.Generator:
    """The current global generator (ask again after each ``manual_seed``; do not cache it)."""
    return _generator

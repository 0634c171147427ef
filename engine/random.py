"""The engine's single source of randomness.

Every random draw in the engine (initialisation, dropout, ``randn``, toy data) asks this module for
the current generator, so ``engine.manual_seed(s)`` makes a whole run reproducible.
"""

import contextlib

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


@contextlib.contextmanager
def fork_rng(seed: int | None = None):
    """Run a block on its own random stream and give the global one back untouched afterwards.

        with engine.random.fork_rng(seed=0):
            model = nn.Linear(2, 3)          # the same weights every time
        # the global stream is exactly where it was before the block

    PyTorch's ``torch.random.fork_rng()`` saves and restores the state the same way; the ``seed``
    argument is ours (in PyTorch, call ``torch.manual_seed`` inside the block). Without a seed the
    block continues from a copy of the global stream. The course's labs use it so that building a
    model never resets the stream a learner's own cells are using.
    """
    global _generator
    saved = _generator
    if seed is None:
        forked = np.random.default_rng()
        forked.bit_generator.state = saved.bit_generator.state
    else:
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"fork_rng: seed must be an int or None, got {type(seed).__name__}")
        forked = np.random.default_rng(int(seed))
    _generator = forked
    try:
        yield forked
    finally:
        _generator = saved

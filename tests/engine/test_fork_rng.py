"""engine.random.fork_rng: a block on its own stream; the global stream is untouched afterwards."""

import numpy as np
import pytest

import engine
from engine import nn
from engine.random import fork_rng, generator


def test_a_seeded_block_is_reproducible_and_leaves_the_global_stream_alone():
    engine.manual_seed(7)
    expected_next = np.random.default_rng(7).standard_normal(3)
    with fork_rng(seed=0):
        a = nn.Linear(2, 3).weight.data.copy()
    with fork_rng(seed=0):
        b = nn.Linear(2, 3).weight.data.copy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(engine.randn(3).data, expected_next.astype(np.float32))


def test_without_a_seed_the_block_continues_from_a_copy():
    engine.manual_seed(3)
    with fork_rng() as g:
        inside = g.standard_normal(2)
    np.testing.assert_array_equal(inside, np.random.default_rng(3).standard_normal(2))
    np.testing.assert_array_equal(generator().standard_normal(2), inside)  # global did not advance


def test_the_stream_comes_back_after_an_exception_and_a_bad_seed_is_clear():
    engine.manual_seed(5)
    before = generator().bit_generator.state
    with pytest.raises(RuntimeError):
        with fork_rng(seed=1):
            engine.randn(4)
            raise RuntimeError("inside")
    assert generator().bit_generator.state == before
    with pytest.raises(TypeError, match="fork_rng"):
        with fork_rng(seed=1.5):
            pass

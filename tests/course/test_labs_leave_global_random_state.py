"""No lab reseeds or draws from the global random streams (engine's and NumPy's legacy one): a lab
function that needs randomness takes ``seed=`` or a generator (docs/notebook-convention.md), so one
notebook cell can never silently reset the stream another cell or a learner's script is using.
"""

from __future__ import annotations

import inspect
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest

import engine
import engine.course.labs as labs
from engine import random as engine_random

LAB_MODULES = [m.name for m in pkgutil.iter_modules(labs.__path__)]
LAB_FILES = sorted(Path(labs.__file__).parent.glob("*.py")) + [Path(engine.course.graph.__file__)]


@pytest.mark.parametrize("path", LAB_FILES, ids=lambda p: p.name)
def test_no_lab_reseeds_the_global_stream(path):
    source = path.read_text()
    for pattern in (r"manual_seed\(", r"np\.random\.seed\(", r"random\.seed\("):
        assert not re.search(pattern, source), f"{path.name} calls {pattern[:-2]}: take seed= instead"


def _public_functions():
    for name in LAB_MODULES:
        module = __import__(f"engine.course.labs.{name}", fromlist=["_"])
        for fname, fn in vars(module).items():
            if fname.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
                continue
            required = [
                p
                for p in inspect.signature(fn).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            if not required:
                yield pytest.param(fn, id=f"{name}.{fname}")


@pytest.mark.parametrize("fn", list(_public_functions()))
def test_a_lab_function_leaves_the_global_streams_as_they_were(fn):
    """Every public lab function callable with its defaults is called; the global generators'
    states are the same afterwards."""
    engine.manual_seed(1234)
    np.random.seed(1234)
    engine_state = engine_random.generator().bit_generator.state
    legacy_state = np.random.get_state()[1].copy()
    try:
        fn()
    except (ValueError, TypeError):
        pass  # a function whose defaults are not a valid setting still must not touch the streams
    assert engine_random.generator().bit_generator.state == engine_state, (
        f"{fn.__name__} drew from or reseeded engine's stream"
    )
    np.testing.assert_array_equal(np.random.get_state()[1], legacy_state)

"""The checkpoints the course ships (engine/course/checkpoints/) are what their labs' training
code makes: each is retrained here from its fixed seed and compared with the shipped file."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

from engine import Tensor
from engine.course import checkpoints

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import make_checkpoints  # noqa: E402  (scripts/make_checkpoints.py: it writes the modules)

DECLARED = checkpoints.registry()


def assert_same_state(made, shipped, where="state"):
    """Equal structure and values; arrays to float32 round-off (BLAS may sum in another order)."""
    if isinstance(made, Tensor):
        made = made.data
    if isinstance(shipped, Tensor):
        shipped = shipped.data
    if isinstance(made, dict):
        assert isinstance(shipped, dict) and list(made) == list(shipped), f"{where}: keys differ"
        for key in made:
            assert_same_state(made[key], shipped[key], f"{where}[{key!r}]")
    elif isinstance(made, (list, tuple)):
        assert isinstance(shipped, (list, tuple)) and len(made) == len(shipped), f"{where}: lengths differ"
        for i, (a, b) in enumerate(zip(made, shipped)):
            assert_same_state(a, b, f"{where}[{i}]")
    elif isinstance(made, np.ndarray):
        assert isinstance(shipped, np.ndarray), f"{where}: shipped {type(shipped).__name__}, made an array"
        assert made.shape == shipped.shape and made.dtype == shipped.dtype, \
            f"{where}: made {made.dtype}{made.shape}, shipped {shipped.dtype}{shipped.shape}"
        np.testing.assert_allclose(made, shipped, rtol=1e-4, atol=1e-5, err_msg=where)
    elif isinstance(made, float):
        assert shipped == pytest.approx(made, rel=1e-4, abs=1e-6), where
    else:
        assert made == shipped, f"{where}: made {made!r}, shipped {shipped!r}"


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_shipped_checkpoint_is_what_its_lab_trains(name):
    lab, train = DECLARED[name]
    shipped = checkpoints.load_named(name)
    assert_same_state(train(), shipped, name)
    module = __import__(f"engine.course.checkpoints.{name}", fromlist=["MADE_BY"])
    assert module.MADE_BY == f"{lab}.{train.__name__}", "rebuild with `make checkpoints`"


def test_every_shipped_checkpoint_is_declared_by_a_lab():
    shipped = {p.stem for p in checkpoints.FOLDER.glob("*.py") if p.stem != "__init__"}
    assert shipped <= set(DECLARED), f"no lab declares {sorted(shipped - set(DECLARED))}: delete or declare"
    assert set(DECLARED) <= shipped, f"run `make checkpoints`: {sorted(set(DECLARED) - shipped)} missing"


def test_round_trip_and_corruption_is_refused(tmp_path):
    state = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "steps": 3}
    path = make_checkpoints.write("probe", state, made_by="tests.probe", folder=tmp_path)
    namespace: dict = {}
    exec(path.read_text(), namespace)
    module = types.SimpleNamespace(__name__="probe", **{k: v for k, v in namespace.items() if k.isupper()})
    loaded = checkpoints.load(module)
    assert isinstance(loaded["w"], np.ndarray)  # the course reads checkpoints as NumPy data
    np.testing.assert_array_equal(loaded["w"], state["w"])
    assert loaded["steps"] == 3
    module.SHA256 = "0" * 64
    with pytest.raises(ValueError, match="probe is corrupted"):
        checkpoints.load(module)
    with pytest.raises(ValueError, match="public Python identifier"):
        make_checkpoints.write("_private", state, made_by="x", folder=tmp_path)

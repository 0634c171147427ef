"""engine.data.load_digits: the real 8x8 handwritten digits that ship inside the engine.

What is pinned: the published size of the set (1,797 images, 10 classes with the counts below),
the pixel scale (counts 0..16 over 16), the fixed stratified 1,437/360 split, the clear error of a
missing, truncated or corrupted copy, and that a linear classifier learns from it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import engine
import engine.functional as F
from engine import data, nn, optim
from engine.data import load_digits

ROOT = Path(__file__).resolve().parents[2]
CLASS_COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]  # UCI optdigits.tes / sklearn
TEST_CLASS_COUNTS = [36, 37, 35, 37, 36, 36, 36, 36, 35, 36]  # 360 in proportion (largest remainders)


@pytest.fixture
def fresh_digits():
    """Forget the cached table before and after, so a test's broken copy is read and then forgotten."""
    data._digits.cache_clear()
    yield
    data._digits.cache_clear()


def test_all_digits_shape_dtype_range_and_class_counts():
    X, y = load_digits()
    assert X.shape == (1797, 8, 8) and X.dtype == np.float32
    assert y.shape == (1797,) and y.dtype == np.int64
    assert X.min() == 0.0 and X.max() == 1.0
    counts = X * 16  # every pixel is a count of ink pixels 0..16 over 16
    np.testing.assert_array_equal(counts, np.round(counts))
    assert np.bincount(y).tolist() == CLASS_COUNTS


def test_channel_dim_gives_the_layout_conv2d_takes():
    X, y = load_digits("test", channel_dim=True)
    assert X.shape == (360, 1, 8, 8) and X.dtype == np.float32
    np.testing.assert_array_equal(X[:, 0], load_digits("test")[0])


def test_the_split_is_1437_360_stratified_and_a_partition_of_the_set():
    X_train, y_train = load_digits("train")
    X_test, y_test = load_digits("test")
    assert (len(X_train), len(y_train), len(X_test), len(y_test)) == (1437, 1437, 360, 360)
    assert np.bincount(y_test).tolist() == TEST_CLASS_COUNTS
    assert (np.bincount(y_train) + np.bincount(y_test)).tolist() == CLASS_COUNTS

    # train and test together are exactly the whole set (as a multiset of labelled images), so no
    # image is in both: compare the sorted rows [64 pixels, label]
    def rows(X, y):
        table = np.concatenate([X.reshape(len(X), -1) * 16, y[:, None]], axis=1).astype(np.int64)
        return table[np.lexsort(table.T[::-1])]

    X_all, y_all = load_digits("all")
    np.testing.assert_array_equal(
        rows(np.concatenate([X_train, X_test]), np.concatenate([y_train, y_test])), rows(X_all, y_all)
    )


def test_the_split_is_fixed_across_calls_and_seeds_and_returns_new_arrays():
    X_test, y_test = load_digits("test")
    engine.manual_seed(123)  # the global seed does not move the split
    again_X, again_y = load_digits("test")
    np.testing.assert_array_equal(X_test, again_X)
    np.testing.assert_array_equal(y_test, again_y)
    # pinned, so a change of the split (or of the data) is a visible, deliberate change
    assert int((X_test * 16).sum()) == 111_717
    assert y_test[:10].tolist() == [3, 7, 3, 9, 0, 8, 7, 0, 8, 0]
    X_test[:] = -1.0  # the caller owns what it gets: the next call is unaffected
    y_test[:] = -1
    assert load_digits("test")[0].min() == 0.0 and load_digits("test")[1].min() == 0


@pytest.mark.parametrize("split", ["valid", "Train", None, 1])
def test_an_unknown_split_is_a_clear_error(split):
    with pytest.raises(ValueError, match="split must be one of"):
        load_digits(split)


def _stored():
    from engine.datasets import digits_data

    return digits_data.BASE64, digits_data.SIZE, digits_data.SHA256


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda text: text[: len(text) // 2], "truncated or corrupted"),  # cut in the middle
        (lambda text: text[: text.index("\n", 5000)], "truncated or corrupted"),  # cut at a line end
        (lambda text: text.replace("A", "B", 1), "corrupted: the SHA-256"),  # one character changed
        (lambda text: text.strip()[:-3], "not valid base64"),  # cut mid-quantum
        (lambda text: "", "truncated or corrupted"),  # emptied
    ],
)
def test_a_damaged_copy_is_a_clear_error_naming_the_file(damage, words):
    text, size, sha256 = _stored()
    with pytest.raises(RuntimeError, match=words) as error:
        data._decode_digits(damage(text), size, sha256)
    assert str(data.DIGITS_FILE) in str(error.value)
    assert data.DIGITS_FILE.name == "digits_data.py" and data.DIGITS_FILE.is_file()


def test_a_missing_data_module_is_a_clear_error(monkeypatch, fresh_digits):
    import engine.datasets

    monkeypatch.setitem(sys.modules, "engine.datasets.digits_data", None)  # import raises ImportError
    monkeypatch.delattr(engine.datasets, "digits_data", raising=False)
    with pytest.raises(RuntimeError, match="cannot be imported") as error:
        load_digits()
    assert "digits_data.py" in str(error.value)


def test_a_truncated_data_file_in_an_installed_copy_is_a_clear_error(tmp_path):
    """The real failure: the .py file itself cut short (an interrupted copy). `import engine` still
    works (the data is imported only when asked for); load_digits names the file."""
    copy = tmp_path / "engine"
    shutil.copytree(ROOT / "engine", copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "datasets" / "digits_data.py"
    text = target.read_text(encoding="utf-8")
    target.write_text(text[: len(text) // 3], encoding="utf-8")
    probe = "import engine\ntry:\n    engine.data.load_digits()\nexcept RuntimeError as e:\n    print(e)\n"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert "load_digits: the data file" in run.stdout and str(target) in run.stdout, run.stdout


def test_a_linear_classifier_trained_with_the_engine_beats_chance_by_far():
    engine.manual_seed(0)
    X, y = load_digits("train")
    X_test, y_test = load_digits("test")
    model = nn.Linear(64, 10)
    optimizer = optim.Adam(model.parameters(), lr=0.05)
    inputs = engine.Tensor(X.reshape(len(X), -1))
    for _ in range(100):  # full batch, well under a second
        loss = F.cross_entropy(model(inputs), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with engine.no_grad():
        predicted = model(engine.Tensor(X_test.reshape(len(X_test), -1))).argmax(dim=1).numpy()
    accuracy = (predicted == y_test).mean()
    assert accuracy >= 0.9, f"test accuracy {accuracy:.3f} (chance is 0.1)"

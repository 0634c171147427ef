"""engine.save / engine.load: exact round trips of nested state dicts, no pickle, atomic writes."""

from __future__ import annotations

import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import engine
from engine import Tensor


def _state():
    rng = np.random.default_rng(0)
    return {
        "model": {
            "fc1.weight": Tensor(rng.standard_normal((4, 3)).astype(np.float32)),
            "fc1.bias": Tensor(np.zeros(4, dtype=np.float32)),
            "double": Tensor(rng.standard_normal((2, 2))),
            "scalar": Tensor(np.array(3.25)),
        },
        "optimizer": {
            "step": 12,
            "lr": 1e-3,
            "betas": (0.9, 0.999),
            "moments": [np.arange(5, dtype=np.int64), np.ones((2, 2), dtype=np.float64)],
            "extreme": [float("inf"), -0.0, 1e-310],
        },
        "name": "mlp-ünïcode",
        "flag": True,
        "nothing": None,
        "counts": [1, 2, [3, [4]]],
        7: "an int key",
        "mask": np.array([True, False]),
    }


def _assert_same(loaded, original, where="root"):
    if isinstance(original, (Tensor, np.ndarray)):
        data = original.data if isinstance(original, Tensor) else original
        assert isinstance(loaded, Tensor), f"{where}: expected a Tensor, got {type(loaded).__name__}"
        assert loaded.dtype == data.dtype and loaded.shape == data.shape, where
        np.testing.assert_array_equal(loaded.data, data, err_msg=where)
    elif isinstance(original, dict):
        assert isinstance(loaded, dict) and list(loaded) == list(original), where
        for k in original:
            _assert_same(loaded[k], original[k], f"{where}[{k!r}]")
    elif isinstance(original, (list, tuple)):
        assert type(loaded) is type(original) and len(loaded) == len(original), where
        for i, (a, b) in enumerate(zip(loaded, original)):
            _assert_same(a, b, f"{where}[{i}]")
    else:
        assert type(loaded) is type(original) and loaded == original, f"{where}: {loaded!r} != {original!r}"
        if isinstance(original, float):
            assert np.copysign(1, loaded) == np.copysign(1, original), where


def test_round_trip_is_exact(tmp_path):
    state = _state()
    path = tmp_path / "checkpoint.npz"
    engine.save(state, path)
    _assert_same(engine.load(path), state)
    _assert_same(engine.load(str(path)), state)


def test_saved_file_is_a_plain_npz_without_pickle(tmp_path):
    path = tmp_path / "ckpt.npz"
    engine.save(_state(), path)
    with np.load(path, allow_pickle=False) as archive:  # loads with pickle disabled
        assert all(archive[name].dtype != object for name in archive.files)


def test_save_overwrites_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "ckpt.npz"
    engine.save({"v": Tensor(np.ones(2))}, path)
    engine.save({"v": Tensor(np.zeros(3))}, path)
    np.testing.assert_array_equal(engine.load(path)["v"].data, np.zeros(3))
    assert sorted(os.listdir(tmp_path)) == ["ckpt.npz"]


def test_a_failure_mid_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.npz"
    engine.save({"v": Tensor(np.ones(2))}, path)
    before = path.read_bytes()

    def exploding_savez(file, **arrays):
        file.write(b"PK\x03\x04 half a zip")  # something was written before the failure
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", exploding_savez)
    with pytest.raises(OSError, match="disk full"):
        engine.save({"v": Tensor(np.zeros(5))}, path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["ckpt.npz"]
    monkeypatch.undo()
    np.testing.assert_array_equal(engine.load(path)["v"].data, np.ones(2))


def test_a_failed_first_save_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(np, "savez", lambda file, **arrays: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        engine.save({"v": Tensor(np.ones(2))}, tmp_path / "new.npz")
    assert os.listdir(tmp_path) == []


def test_unsupported_objects_are_refused_before_writing(tmp_path):
    path = tmp_path / "ckpt.npz"
    with pytest.raises(TypeError, match="save: cannot store an object of type object"):
        engine.save({"bad": object()}, path)
    with pytest.raises(TypeError, match="save: dict keys must be str or int"):
        engine.save({(1, 2): 3}, path)
    with pytest.raises(TypeError, match="save: arrays of dtype"):
        engine.save({"s": np.array(["a", "b"])}, path)
    assert os.listdir(tmp_path) == []


def test_loading_a_pickle_is_a_clear_value_error(tmp_path):
    path = tmp_path / "evil.npz"
    with open(path, "wb") as f:
        pickle.dump({"weights": [1, 2, 3]}, f)
    with pytest.raises(ValueError, match=r"load: .*evil.npz is not a readable engine checkpoint"):
        engine.load(path)


def test_loading_an_npy_with_pickled_objects_is_a_clear_value_error(tmp_path):
    path = tmp_path / "objects.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="not a readable engine checkpoint"):
        engine.load(path)


def test_loading_an_npz_with_pickled_objects_is_a_clear_value_error(tmp_path):
    path = tmp_path / "objects.npz"
    np.savez(path, a=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="not a readable engine checkpoint"):
        engine.load(path)


def test_loading_a_plain_npz_not_written_by_engine_is_a_clear_value_error(tmp_path):
    path = tmp_path / "plain.npz"
    np.savez(path, w=np.ones(3))
    with pytest.raises(ValueError, match="no engine structure record"):
        engine.load(path)


@pytest.mark.parametrize("keep", [0.3, 0.7, 0.95])
def test_loading_a_truncated_file_is_a_clear_value_error(tmp_path, keep):
    path = tmp_path / "ckpt.npz"
    engine.save(_state(), path)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ValueError, match="not a readable engine checkpoint"):
        engine.load(path)


def test_loading_garbage_or_a_missing_file(tmp_path):
    path = tmp_path / "garbage.npz"
    path.write_bytes(b"\x00\x01 not a zip at all")
    with pytest.raises(ValueError, match="not a readable engine checkpoint"):
        engine.load(path)
    with pytest.raises(FileNotFoundError, match="load: no such file"):
        engine.load(tmp_path / "missing.npz")


def test_a_zip_with_a_corrupt_member_is_a_clear_value_error(tmp_path):
    path = tmp_path / "ckpt.npz"
    engine.save({"v": Tensor(np.arange(1000.0))}, path)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    raw = bytearray(path.read_bytes())
    middle = len(raw) // 2
    raw[middle : middle + 64] = bytes(64)  # zeroed bytes inside the array member
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="not a readable engine checkpoint"):
        engine.load(path)
    assert "a0.npy" in names


def test_loaded_tensors_are_plain_tensors_that_can_train(tmp_path):
    path = tmp_path / "ckpt.npz"
    engine.save({"w": Tensor(np.ones(3), requires_grad=True)}, path)
    w = engine.load(path)["w"]
    assert not w.requires_grad
    w.requires_grad_()
    (w * 2).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])


def test_save_and_load_through_file_objects_as_torch_does():
    state = {"w": engine.randn(3, 2), "step": 7, "name": "mlp"}
    buffer = io.BytesIO()
    engine.save(state, buffer)
    buffer.seek(0)
    loaded = engine.load(buffer)
    np.testing.assert_array_equal(loaded["w"].data, state["w"].data)
    assert loaded["step"] == 7 and loaded["name"] == "mlp"
    with np.load(io.BytesIO(buffer.getvalue()), allow_pickle=False) as archive:
        assert "__structure__" in archive.files


def test_load_of_a_wrong_file_object_names_the_object():
    with pytest.raises(ValueError, match=r"load: the BytesIO object is not a readable engine checkpoint"):
        engine.load(io.BytesIO(b"hello, not an archive"))
    with pytest.raises(TypeError, match=r"load: .* text mode"):
        engine.load(io.StringIO("PK\x03\x04 text"))

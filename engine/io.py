"""``engine.save`` / ``engine.load``: state dicts in NumPy's ``.npz`` format, never pickle.

A state dict may nest dicts, lists and tuples of tensors, arrays, numbers, strings, booleans and
None (a model's parameters, an optimizer's moments and step counts). Arrays are stored as the
archive's members; the nesting is stored as JSON in one more member, so loading never has to
unpickle anything. Writes are atomic: a temporary file in the same folder, then a rename.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile

import numpy as np

from .tensor import Tensor

_STRUCTURE_KEY = "__structure__"
_FORMAT = "engine-state/1"


def _encode(obj, arrays: list):
    if isinstance(obj, Tensor):
        obj = obj.data
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biufc":
            raise TypeError(f"save: arrays of dtype {obj.dtype} are not supported (numbers and booleans only)")
        arrays.append(obj)
        return {"array": len(arrays) - 1}
    if isinstance(obj, np.generic):
        return _encode(obj.item(), arrays)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"value": obj}
    if isinstance(obj, dict):
        bad = [k for k in obj if not isinstance(k, (str, int))]
        if bad:
            raise TypeError(f"save: dict keys must be str or int, got {bad[0]!r}")
        return {"dict": [[k, _encode(v, arrays)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        return {"tuple" if isinstance(obj, tuple) else "list": [_encode(v, arrays) for v in obj]}
    raise TypeError(f"save: cannot store an object of type {type(obj).__name__} (no pickle, by design)")


def _decode(node, archive):
    if "array" in node:
        return Tensor._wrap(archive[f"a{node['array']}"])
    if "value" in node:
        return node["value"]
    if "dict" in node:
        return {k: _decode(v, archive) for k, v in node["dict"]}
    if "tuple" in node:
        return tuple(_decode(v, archive) for v in node["tuple"])
    return [_decode(v, archive) for v in node["list"]]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _is_file_object(target) -> bool:
    return hasattr(target, "write") or hasattr(target, "read")


def save(obj, path) -> None:
    """Write ``obj`` (a state dict) to ``path`` as ``.npz``; the file appears whole or not at all.

    As ``open(path, "wb")`` (and so ``torch.save``) would: a new file gets the usual permissions
    (0o666 minus the umask), an existing file keeps its own, and a symbolic link is written through
    (its target is replaced, the link stays). ``path`` may also be a binary file object (an open
    file, ``io.BytesIO``), as with ``torch.save``; the archive is then written to it directly.
    """
    arrays: list = []
    structure = {"format": _FORMAT, "root": _encode(obj, arrays)}
    members = {f"a{i}": a for i, a in enumerate(arrays)}
    members[_STRUCTURE_KEY] = np.array(json.dumps(structure))
    if _is_file_object(path):
        if not hasattr(path, "write"):
            raise TypeError(
                f"save: {type(path).__name__} has no write(); pass a path or a binary file opened for writing"
            )
        np.savez(path, **members)
        return
    path = os.fspath(path)
    target = os.path.realpath(path)  # through symbolic links: replace what the link points to
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"save: the folder of {path} does not exist ({folder}); create it first")
    if os.path.isdir(target):
        raise IsADirectoryError(f"save: {path} is a folder; give a file name, e.g. {os.path.join(path, 'model.npz')}")
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    try:
        fd, tmp = tempfile.mkstemp(prefix=".engine-save-", suffix=".tmp", dir=folder)
    except OSError as err:
        raise type(err)(err.errno, f"save: cannot write {path}: {err.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **members)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


_ZIP_MAGIC = b"PK\x03\x04"
_NPY_MAGIC = b"\x93NUMPY"


def load(path):
    """Read what :func:`save` wrote; arrays come back as Tensors. Never unpickles.

    ``path`` may be a file name or, as with ``torch.load``, a binary file object
    (``io.BytesIO(data)``, an open file) positioned at the start of the archive.
    """
    if _is_file_object(path):
        if not hasattr(path, "read"):
            raise TypeError(
                f"load: {type(path).__name__} has no read(); pass a path or a binary file opened for reading"
            )
        start = path.tell() if hasattr(path, "tell") else None
        head = path.read(6)
        if start is not None and hasattr(path, "seek"):
            path.seek(start)
        return _load_archive(path, head, name=f"the {type(path).__name__} object")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load: no such file: {path}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"load: {path} is a folder, not a checkpoint file")
    with open(path, "rb") as f:
        head = f.read(6)
    return _load_archive(path, head, name=path)


def _load_archive(source, head: bytes, *, name: str):
    """Check the magic bytes, then read the archive at ``source`` (a path or a file object)."""
    if isinstance(head, str):
        raise TypeError(f"load: {name} is opened in text mode; open it with 'rb'")
    if head.startswith(_NPY_MAGIC):
        raise ValueError(
            f"load: {name} is not a readable engine checkpoint (.npz written by engine.save): it holds "
            "a single NumPy array (.npy format); read it with numpy.load, or wrap it: "
            "engine.save({'x': array}, 'file.npz')"
        )
    if not head.startswith(_ZIP_MAGIC):
        raise ValueError(
            f"load: {name} is not a readable engine checkpoint (.npz written by engine.save): it is not "
            "a zip archive at all (a text file, a pickle, or a truncated download?)"
        )
    try:
        with np.load(source, allow_pickle=False) as archive:
            if _STRUCTURE_KEY not in archive.files:
                raise ValueError("it has no engine structure record (a plain numpy.savez archive?)")
            structure = json.loads(str(archive[_STRUCTURE_KEY]))
            if structure.get("format") != _FORMAT:
                raise ValueError(f"unknown format {structure.get('format')!r}")
            return _decode(structure["root"], archive)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError, json.JSONDecodeError) as err:
        reason = str(err)
        if "pickle" in reason:  # never point anyone towards unpickling an untrusted file
            reason = "a member holds Python objects, which engine checkpoints never do"
        raise ValueError(
            f"load: {name} is not a readable engine checkpoint (.npz written by engine.save): {reason}"
        ) from None

"""Trained default models the course ships, so that every figure is on the page when it opens.

A notebook section about a trained model (07's DDPM samples, 08's latent space, 05's learned
filters) shows the model trained with the section's default settings as soon as the page opens,
under ``marimo run``, in the static export and in the WebAssembly build; its run button then
retrains with the learner's settings. When that default training takes well under a second the
notebook trains at load; otherwise it loads a checkpoint from here.

**One checkpoint, one module.** ``engine/course/checkpoints/<name>.py`` holds ``ARCHIVE``, the
base64 text of an :func:`engine.save` archive (``SIZE`` bytes, ``SHA256``), and ``MADE_BY``, the
lab function that made it. A Python module rather than a ``.npz`` file because ``marimo export
html-wasm`` packs only ``.py`` files into the wheel the browser pages install (as
``engine/datasets/digits_data.py``). A lab imports its checkpoint modules by name, statically
(``from engine.course.checkpoints import diffusion_ddpm``), so that the WebAssembly bundler sees
them, and reads one with :func:`load`.

**Where they come from.** A lab that ships checkpoints lists them in ``CHECKPOINTS``, a dict
from the checkpoint's name to a zero-argument function that trains the section's default model
with the lab's own training code from a fixed seed and returns its state (anything
:func:`engine.save` stores: nested dicts of arrays, numbers, strings). ``make checkpoints``
(``scripts/make_checkpoints.py``) runs them and writes the modules: the writing lives there, since
the package only reads (tests/site/test_pyodide_rules.py). ``tests/course/test_checkpoints.py``
runs them again and checks that the result matches what is shipped.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import io
import types
from pathlib import Path

import engine

FOLDER = Path(__file__).resolve().parent


def load(module):
    """The state stored in a checkpoint module (``from engine.course.checkpoints import x``), its
    arrays as NumPy arrays: the labs read a checkpoint as data (curves, samples, parameters for
    ``load_state_dict``, which takes arrays), where ``engine.load`` gives Tensors."""
    blob = base64.b64decode(module.ARCHIVE)
    if len(blob) != module.SIZE or hashlib.sha256(blob).hexdigest() != module.SHA256:
        raise ValueError(f"checkpoint {module.__name__} is corrupted (size or SHA-256 differs); "
                         "rebuild it with `make checkpoints`")
    return _arrays(engine.load(io.BytesIO(blob)))


def _arrays(node):
    """``node`` with every Tensor in it replaced by its NumPy array."""
    if isinstance(node, engine.Tensor):
        return node.data
    if isinstance(node, dict):
        return {key: _arrays(value) for key, value in node.items()}
    if isinstance(node, (list, tuple)):
        return type(node)(_arrays(value) for value in node)
    return node


def load_named(name: str):
    """The state of checkpoint ``name`` (for scripts and tests; labs import the module itself)."""
    return load(importlib.import_module(f"{__name__}.{name}"))


def registry() -> dict:
    """Every checkpoint the labs declare: ``{name: (lab module name, train function)}``."""
    from .. import labs

    found: dict = {}
    for lab_name in sorted(vars(labs)):
        lab = getattr(labs, lab_name)
        if not isinstance(lab, types.ModuleType):
            continue
        for name, train in getattr(lab, "CHECKPOINTS", {}).items():
            if name in found:
                raise ValueError(f"checkpoint {name!r} is declared by {found[name][0]} and {lab.__name__}")
            found[name] = (lab.__name__, train)
    return found

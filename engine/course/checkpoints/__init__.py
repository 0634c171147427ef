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
from the checkpoint's name to what trains the section's default model from a fixed seed and
returns its state (anything :func:`engine.save` stores: nested dicts of arrays, numbers, strings):

- :class:`FromNotebook` when the model and its training loop are the notebook's own lesson cells
  (``@app.function`` / ``@app.class_definition``): the notebook file and the name of its function
  that returns the state, and the names of the lesson cells whose code the state depends on. A
  lab never imports a notebook, so this is only names; ``scripts/make_checkpoints.py`` loads the
  notebook file to run it, and stores :func:`code_fingerprint` of those cells as ``FINGERPRINT``;
- a zero-argument function of the lab, for data the lab itself computes (sweeps, tables).

``make checkpoints`` (``scripts/make_checkpoints.py``) runs them and writes the modules: the
writing lives there, since the package only reads (tests/site/test_pyodide_rules.py).
``tests/course/test_checkpoints.py`` runs them again and checks that the result matches what is
shipped, and that every fingerprint matches the notebook's code as it is.

**When a learner edits the lesson.** A page loads a checkpoint with :func:`load_if_fits`, passing
its own lesson objects: if their code is not the code the checkpoint was trained with (its
fingerprint differs), or the stored parameters do not fit the model, the page gets the reason in
one line instead of the state, says so, and offers its Train button.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import importlib
import inspect
import io
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path

import engine

FOLDER = Path(__file__).resolve().parent


def load(module):
    """The state stored in a checkpoint module (``from engine.course.checkpoints import x``), its
    arrays as NumPy arrays: the labs read a checkpoint as data (curves, samples, parameters for
    ``load_state_dict``, which takes arrays), where ``engine.load`` gives Tensors."""
    blob = base64.b64decode(module.ARCHIVE)
    if len(blob) != module.SIZE or hashlib.sha256(blob).hexdigest() != module.SHA256:
        raise ValueError(
            f"checkpoint {module.__name__} is corrupted (size or SHA-256 differs); rebuild it with `make checkpoints`"
        )
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


@dataclass(frozen=True)
class FromNotebook:
    """A checkpoint trained by a notebook's own lesson code.

    ``notebook``: the file under ``notebooks/`` without ``.py`` (``"08_vae"``); ``function``: the
    name of its ``@app.function`` that trains the default model and returns the state; ``code``:
    the names of the lesson cells (functions and classes) whose code the state depends on, in the
    order the page passes them to :func:`load_if_fits`."""

    notebook: str
    function: str
    code: tuple[str, ...]

    @property
    def __name__(self) -> str:  # what MADE_BY records: "notebooks/08_vae.py:train_default"
        return f"notebooks/{self.notebook}.py:{self.function}"


def code_fingerprint(*objects) -> str:
    """SHA-256 of the syntax trees of ``objects`` (functions and classes), decorators, docstrings
    and comments left out: a fix to prose leaves it as it is, a change to what runs does not.

    A class counts as its name, its bases' names, its methods' code and its plain class
    attributes: in a marimo kernel a function's source can be read but a class's cannot, and the
    page must compute the same fingerprint as ``make checkpoints`` does outside it."""
    digest = hashlib.sha256()
    for obj in objects:
        digest.update(_class_code(obj) if isinstance(obj, type) else _function_code(obj))
    return digest.hexdigest()


# Every session of a page defines its lesson functions anew (new objects, equal code objects), and
# each checkpoint a page loads fingerprints them: reading and parsing their source again cost a
# page open 0.1 s (07, five checkpoints). A code object compares by what runs (bytecode, constants,
# names), so equal code has the same tree; an edit makes another key and is parsed afresh.
_TREES: dict = {}
_TREES_KEPT = 512


def _function_code(function) -> bytes:
    """The syntax tree of ``function`` without decorators, docstrings and comments, as bytes
    (remembered per code object)."""
    code = getattr(function, "__code__", None)
    key = (getattr(function, "__qualname__", None), code)
    if code is not None and key in _TREES:
        return _TREES[key]
    tree = _parsed_tree(function)
    if code is not None:
        if len(_TREES) >= _TREES_KEPT:
            try:
                _TREES.pop(next(iter(_TREES)), None)  # the oldest entry
            except (StopIteration, RuntimeError):  # another session's kernel thread changed it meanwhile
                pass
        _TREES[key] = tree
    return tree


def _parsed_tree(function) -> bytes:
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            node.decorator_list = []
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(getattr(body[0], "value", None), ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False).encode()


def _class_code(cls) -> bytes:
    parts = [f"class {cls.__name__}({', '.join(b.__name__ for b in cls.__bases__)})".encode()]
    for name, value in vars(cls).items():
        value = getattr(value, "__func__", value)  # staticmethod / classmethod
        if inspect.isfunction(value):
            parts.append(_function_code(value))
        elif isinstance(value, property):
            parts.extend(_function_code(f) for f in (value.fget, value.fset) if f is not None)
        elif isinstance(value, (int, float, str, bytes, tuple, frozenset, type(None))) and not name.startswith("__"):
            parts.append(f"{name} = {value!r}".encode())
    return b"\n".join(parts)


def load_if_fits(module, *code) -> tuple[object, str]:
    """``(state, "")`` from checkpoint ``module`` when ``code`` (the page's lesson objects, in the
    order its :class:`FromNotebook` names them) is the code it was trained with; otherwise
    ``(None, reason)``, the reason one sentence a page can show."""
    expected = getattr(module, "FINGERPRINT", None)
    if expected is None:
        raise ValueError(f"checkpoint {module.__name__} has no FINGERPRINT: it was not made from a notebook's code")
    try:
        found = code_fingerprint(*code)
    except OSError:  # no source to read (a page built without it): nothing was edited
        return load(module), ""
    if found != expected:
        names = ", ".join(f"`{getattr(c, '__name__', '?')}`" for c in code)
        return None, (
            f"the shipped model was trained with other code than this page's {names}, "
            "so it is not loaded: train with the button to see what your code does"
        )
    return load(module), ""


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

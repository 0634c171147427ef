"""The formula row: one formula, its LaTeX, and the same computation in NumPy, engine and PyTorch.

Every cheat sheet is drawn from :class:`FormulaRow` objects, and the tests run every row's code
(see :mod:`engine.course.formulas.evaluate`), so a formula shown on a sheet is a formula that was checked.

A row's three snippets are real code, shown verbatim. Each is run in its own namespace:

* ``numpy``:  ``np``, ``math``, ``sliding_window_view``, ``rng`` (a seeded Generator);
* ``engine``: ``engine``, ``F`` (engine.functional), ``nn``, ``optim``, ``metrics``, ``shapes``, ``data``,
  ``attention``, ``diffusion``, ``vae``, ``np``, ``math``;
* ``torch``:  ``torch``, ``F`` (torch.nn.functional), ``nn``, ``optim``, ``np``, ``math``;

with the row's inputs bound to their names (NumPy arrays, engine Tensors or torch tensors, all
float64; Python numbers, tuples and lists unchanged). A snippet is one line: an expression, or
statements separated by ``;`` ending in an expression, whose value is the result.

Kinds of row (``kind``):

* ``"value"``:    the result is compared directly (a forward formula, or a gradient: the engine and
                  PyTorch snippets call ``.backward(g)`` and read ``.grad``, the NumPy snippet is
                  the derivative's formula);
* ``"update"``:   an optimizer step repeated ``steps`` times on the parameter ``p`` with gradients
                  ``G[0], G[1], ...``: the NumPy snippet is the update rule (statements using
                  ``g``, the step count ``t`` from 1, and the state named in ``state``, assigning
                  ``p``); the engine and PyTorch snippets construct the optimizer;
* ``"schedule"``: a learning-rate schedule over ``steps`` steps: the NumPy snippet is the closed
                  form in ``t = np.arange(steps)``; the engine and PyTorch snippets construct the
                  scheduler on ``opt`` (an SGD optimizer with learning rate ``lr``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

KINDS = ("value", "update", "schedule")
SAME = "<same as engine>"  # a sheet module's helpers use it: the PyTorch snippet is the engine's
BACKENDS = ("numpy", "engine", "torch")


@dataclass(frozen=True)
class FormulaRow:
    """One formula of a cheat sheet and its code in three spellings.

    id:       unique, dotted, stable (``"act.relu"``); the tests and the hub refer to rows by id.
    sheet:    the cheat sheet the row belongs to (an ``engine.course.toc`` id).
    section:  the heading it is listed under on that sheet.
    name:     what a reader searches for ("ReLU derivative").
    latex:    the formula, without dollar signs.
    numpy, engine, torch: one-line snippets (``torch`` is None where PyTorch has no counterpart).
    inputs:   ``rng -> {name: value}``: random arrays and the hyper-parameters the snippets use.
    notes:    one short sentence a reader needs next to the formula (markdown).
    grad:     names of the inputs that need a gradient in engine and PyTorch (``requires_grad``).
    grads:    ``{parameter: input}``: gradients preset on parameters before the snippet runs (by
              ``(parameter * gradient).sum().backward()``), for rows such as gradient clipping.
    result:   for snippets that end in a statement (``with ...: r = ...``), the variable returned.
    kind, steps, state: see the module docstring.
    rtol, atol: the tolerance of the comparison between the three results.
    keywords: extra words the hub's search box matches.
    """

    id: str
    sheet: str
    section: str
    name: str
    latex: str
    numpy: str
    engine: str
    torch: str | None
    inputs: Callable[[np.random.Generator], dict]
    notes: str = ""
    grad: tuple = ()
    grads: Mapping = field(default_factory=dict)
    result: str | None = None
    kind: str = "value"
    steps: int = 0
    state: Mapping = field(default_factory=dict)
    rtol: float = 1e-9
    atol: float = 1e-12
    keywords: tuple = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"FormulaRow {self.id!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind != "value" and self.steps < 1:
            raise ValueError(f"FormulaRow {self.id!r}: a {self.kind!r} row needs steps >= 1")
        for backend in BACKENDS:
            code = getattr(self, backend)
            if backend != "torch" or code is not None:
                if not isinstance(code, str) or not code.strip():
                    raise ValueError(f"FormulaRow {self.id!r}: the {backend} snippet is empty")
                if "\n" in code:
                    raise ValueError(f"FormulaRow {self.id!r}: the {backend} snippet must be one line")

    def snippets(self) -> dict:
        """``{backend: code}`` for the backends this row has code for."""
        return {b: getattr(self, b) for b in BACKENDS if getattr(self, b) is not None}

    def text(self) -> str:
        """Everything the search box matches: name, id, section, keywords."""
        return " ".join((self.name, self.id, self.section, self.sheet, *self.keywords)).lower()


# ----------------------------------------------------------------------------- input specs
# Small builders for ``inputs``: ``spec(x=N(4, 5), alpha=0.1)`` draws x ~ N(0, 1) of shape (4, 5)
# and passes alpha through. Arrays are float64 so that the three backends agree to ~1e-12.


def sheet_row(sheet: str, after_engine: tuple = ("torch", "inputs", "notes"), torch_from: str = "engine", **defaults):
    """The row constructor of one sheet module: ``row(id, section, name, latex, numpy, engine, *rest,
    **fields)`` makes a :class:`FormulaRow` of ``sheet``. ``rest`` fills the fields named by
    ``after_engine`` in order; a field a call leaves out takes its value from ``defaults``; a
    ``torch`` left out or given as :data:`SAME` is the snippet named by ``torch_from`` (the
    engine's, or NumPy's where PyTorch code would be plain NumPy)."""

    def row(id, section, name, latex, numpy, engine, *rest, **fields):
        fields = {**defaults, **dict(zip(after_engine, rest)), **fields}
        if fields.get("torch", SAME) == SAME:
            fields["torch"] = {"engine": engine, "numpy": numpy}[torch_from]
        return FormulaRow(
            id=id, sheet=sheet, section=section, name=name, latex=latex, numpy=numpy, engine=engine, **fields
        )

    return row


def backward_snippet(forward: str, wrt: tuple, out: str = "r", upstream: str = "g") -> str:
    """Autograd through the snippet ``forward``: ``r = <forward>; r.backward(g); x.grad``, the
    ``.grad`` of each name in ``wrt`` (a tuple of them for several)."""
    grads = ", ".join(f"{name}.grad" for name in wrt)
    return f"{out} = {forward}; {out}.backward({upstream}); {grads if len(wrt) == 1 else f'({grads})'}"


def gradient_row(
    forward: FormulaRow,
    name: str,
    latex: str,
    numpy: str,
    wrt: tuple,
    *,
    suffix: str = ".grad",
    out: str = "r",
    upstream: str = "g",
    grad: tuple | None = None,
    **fields,
) -> FormulaRow:
    """The gradient row of ``forward`` (id ``forward.id + suffix``, same sheet, section and inputs
    unless ``fields`` give others): ``numpy`` is the gradient's formula, and the engine and PyTorch
    snippets differentiate ``forward``'s own with :func:`backward_snippet`, so the forward code is
    written once. ``grad`` (the inputs that need a gradient) defaults to ``wrt``."""
    engine = backward_snippet(forward.engine, wrt, out, upstream)
    if forward.torch is None:
        torch = None
    elif forward.torch == forward.engine:
        torch = engine
    else:
        torch = backward_snippet(forward.torch, wrt, out, upstream)
    fields.setdefault("inputs", forward.inputs)
    return FormulaRow(
        id=forward.id + suffix,
        sheet=forward.sheet,
        section=forward.section,
        name=name,
        latex=latex,
        numpy=numpy,
        engine=engine,
        torch=torch,
        grad=wrt if grad is None else grad,
        **fields,
    )


def with_gradient(forward: FormulaRow, *args, **kwargs) -> tuple[FormulaRow, FormulaRow]:
    """``forward`` followed by its :func:`gradient_row`."""
    return forward, gradient_row(forward, *args, **kwargs)


@dataclass(frozen=True)
class N:
    """Standard-normal float64 array of this shape, times ``scale``."""

    shape: tuple
    scale: float = 1.0

    def __init__(self, *shape, scale=1.0):
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "scale", scale)

    def draw(self, rng):
        return self.scale * rng.standard_normal(self.shape)


@dataclass(frozen=True)
class U:
    """Uniform float64 array in [low, high) of this shape."""

    low: float
    high: float
    shape: tuple

    def __init__(self, low, high, *shape):
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "shape", shape)

    def draw(self, rng):
        return rng.uniform(self.low, self.high, self.shape)


@dataclass(frozen=True)
class Ints:
    """int64 array of integers in [0, high) of this shape."""

    high: int
    shape: tuple

    def __init__(self, high, *shape):
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "shape", shape)

    def draw(self, rng):
        return rng.integers(0, self.high, self.shape)


@dataclass(frozen=True)
class Probs:
    """float64 array of probability distributions along the last axis (each row sums to 1)."""

    shape: tuple

    def __init__(self, *shape):
        object.__setattr__(self, "shape", shape)

    def draw(self, rng):
        e = np.exp(rng.standard_normal(self.shape))
        return e / e.sum(-1, keepdims=True)


def spec(**fields) -> Callable[[np.random.Generator], dict]:
    """``rng -> dict``: draws N/U/Ints/Probs fields, calls ``callable(rng)`` fields, passes the rest."""

    def inputs(rng):
        out = {}
        for name, value in fields.items():
            if hasattr(value, "draw"):
                out[name] = value.draw(rng)
            elif callable(value):
                out[name] = value(rng)
            else:
                out[name] = value
        return out

    return inputs

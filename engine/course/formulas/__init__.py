"""Every formula of the cheat sheets, as data: LaTeX plus NumPy, engine and PyTorch code.

    from engine.course import formulas
    formulas.rows("activation_functions")      # the rows of one sheet, in order
    formulas.row("deriv.div.grad")             # one row by id
    formulas.check_row(formulas.row("act.relu"))   # run its code; raises if the engine disagrees
    formulas.search("relu")                    # the hub's search box

One module per sheet holds that sheet's rows (``activation_functions``, ``loss_functions``,
``derivatives``, ``optimizers``, ``metrics``, ``tensor_shapes``, ``deep_learning``);
:mod:`.core` defines :class:`FormulaRow`, :mod:`.evaluate` runs the snippets, :mod:`.render`
draws them as markdown and :mod:`.page` gives a focused sheet's tables as one cell's output.
"""

from __future__ import annotations

from . import activation_functions, deep_learning, derivatives, loss_functions, metrics, optimizers, tensor_shapes
from .core import BACKENDS, KINDS, FormulaRow
from .evaluate import (
    FormulaMismatch,
    assert_close,
    check_row,
    evaluate,
    evaluate_with,
    run_snippet,
    to_numpy,
    torch_available,
)

__all__ = [
    "FormulaRow",
    "FormulaMismatch",
    "ROWS",
    "SHEETS",
    "BACKENDS",
    "KINDS",
    "rows",
    "row",
    "search",
    "evaluate",
    "evaluate_with",
    "check_row",
    "assert_close",
    "run_snippet",
    "to_numpy",
    "torch_available",
    "snippet_count",
    "render",
    "tables",
]

_MODULES = (activation_functions, loss_functions, derivatives, optimizers, metrics, tensor_shapes, deep_learning)
SHEETS = tuple(m.SHEET for m in _MODULES)
ROWS: tuple = tuple(r for m in _MODULES for r in m.ROWS)
_BY_ID = {}
for _r in ROWS:
    if _r.id in _BY_ID:
        raise ValueError(f"engine.course.formulas: duplicate row id {_r.id!r}")
    _BY_ID[_r.id] = _r


def row(id: str) -> FormulaRow:
    """The row with this id; a clear error otherwise."""
    try:
        return _BY_ID[id]
    except KeyError:
        raise KeyError(f"engine.course.formulas: no row with id {id!r}") from None


def rows(sheet: str | None = None) -> tuple:
    """All rows, or the rows whose home is ``sheet``, in their order of definition."""
    if sheet is None:
        return ROWS
    if sheet not in SHEETS:
        raise ValueError(f"engine.course.formulas.rows: unknown sheet {sheet!r}; sheets: {', '.join(SHEETS)}")
    return tuple(r for r in ROWS if r.sheet == sheet)


def search(query: str, candidates=None) -> tuple:
    """Rows whose name, id, section or keywords contain every word of ``query`` (case-insensitive).

    An empty query matches everything.
    """
    pool = ROWS if candidates is None else tuple(candidates)
    words = str(query or "").lower().split()
    return tuple(r for r in pool if all(w in r.text() for w in words))


from . import render  # noqa: E402  (render looks rows up through this package)
from .page import tables  # noqa: E402  (page draws with render)


def snippet_count(candidates=None) -> dict:
    """How many snippets the rows hold per backend (the tests run every one of them)."""
    pool = ROWS if candidates is None else tuple(candidates)
    return {b: sum(getattr(r, b) is not None for r in pool) for b in BACKENDS}

"""Run a formula row's snippets and compare them.

:func:`evaluate` runs one row's snippet for one backend ('numpy', 'engine' or 'torch') on the
row's inputs drawn from a seeded Generator, and returns the result as NumPy (a tuple of arrays for
a tuple result). :func:`check_row` runs the three and raises :class:`FormulaMismatch`, naming the
row, the snippets and the worst element, when the engine or PyTorch disagrees with NumPy.

The protocols for ``kind='update'`` and ``kind='schedule'`` rows are described in
:mod:`engine.course.formulas.core`. PyTorch is optional: :func:`torch_available` says whether it can run.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib
import importlib.util
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .core import BACKENDS, FormulaRow

__all__ = [
    "FormulaMismatch",
    "evaluate",
    "evaluate_with",
    "check_row",
    "namespace",
    "run_snippet",
    "to_numpy",
    "assert_close",
    "torch_available",
]


class FormulaMismatch(AssertionError):
    """A row's engine or PyTorch result differs from its NumPy formula."""


def torch_available() -> bool:
    """True when PyTorch can be imported (it is a test-only dependency)."""
    return importlib.util.find_spec("torch") is not None


class _Unavailable:
    """Stands in for a module that cannot be imported; says why when it is used."""

    def __init__(self, name: str, error: Exception):
        self._name, self._error = name, error

    def __getattr__(self, attr):
        raise ModuleNotFoundError(f"{self._name} is not available ({self._error}); cannot use .{attr}")


def _module(name: str):
    try:
        return importlib.import_module(name)
    except Exception as error:  # a module still being written should not break every row
        return _Unavailable(name, error)


def namespace(backend: str, seed: int = 0) -> dict:
    """The globals a snippet of ``backend`` runs in (see :mod:`engine.course.formulas.core`)."""
    base = {"np": np, "math": math}
    if backend == "numpy":
        return {**base, "sliding_window_view": sliding_window_view, "rng": np.random.default_rng(seed + 1)}
    if backend == "engine":
        import engine

        engine.manual_seed(seed + 2)  # not `seed`: the inputs are drawn from that stream
        ns = {**base, "engine": engine, "F": _module("engine.functional")}
        for name in ("nn", "optim", "metrics", "shapes", "attention", "diffusion", "vae", "data"):
            ns[name] = _module(f"engine.{name}")
        return ns
    if backend == "torch":
        if not torch_available():
            raise ModuleNotFoundError("evaluate: torch is not installed (pip install torch==2.13.0)")
        import torch

        torch.manual_seed(seed + 3)
        return {**base, "torch": torch, "F": torch.nn.functional, "nn": torch.nn, "optim": torch.optim}
    raise ValueError(f"evaluate: backend must be one of {BACKENDS}, got {backend!r}")


def run_snippet(code: str, ns: dict, filename: str = "<snippet>"):
    """Execute ``code`` in ``ns``; the value of its last expression, or None if it ends in a statement."""
    tree = ast.parse(code, filename, mode="exec")
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        head = ast.Module(body=tree.body[:-1], type_ignores=[])
        exec(compile(head, filename, "exec"), ns)
        return eval(compile(ast.Expression(tree.body[-1].value), filename, "eval"), ns)
    exec(compile(tree, filename, "exec"), ns)
    return None


def _is_tensor(value, module: str) -> bool:
    return type(value).__module__.split(".")[0] == module and hasattr(value, "shape")


def to_numpy(value):
    """A snippet's result as NumPy: tensors to arrays, numbers to 0-d arrays, tuples element-wise."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if _is_tensor(value, "engine"):
        return np.array(value.data)
    if _is_tensor(value, "torch"):
        return value.detach().cpu().numpy().copy()
    if isinstance(value, (bool, int, float, np.generic)):
        return np.asarray(value)
    if isinstance(value, (tuple, list)):  # includes torch.Size and named tuples
        items = [to_numpy(v) for v in value]
        if all(item.ndim == 0 for item in items):
            return np.asarray(items)
        return tuple(items)
    raise TypeError(f"to_numpy: cannot convert a {type(value).__name__} to an array")


def _convert(value, backend: str, requires_grad: bool):
    """An input value for ``backend``: arrays become Tensors / torch tensors (float64 kept)."""
    if not isinstance(value, np.ndarray):
        return copy.deepcopy(value)
    data = value.copy()
    floating = np.issubdtype(data.dtype, np.floating)
    if backend == "numpy":
        return data
    if backend == "engine":
        import engine

        return engine.Tensor(data, requires_grad=requires_grad and floating)
    import torch

    return torch.tensor(data, requires_grad=requires_grad and floating)


def _bind_inputs(row: FormulaRow, backend: str, values: dict, ns: dict) -> None:
    needs_grad = set(row.grad) | set(row.grads)
    for name, value in values.items():
        ns[name] = _convert(value, backend, name in needs_grad)
    if backend != "numpy":
        for param, gradient in row.grads.items():
            (ns[param] * ns[gradient]).sum().backward()


def _filename(row: FormulaRow, backend: str) -> str:
    return f"<{row.id}: {backend}>"


def _evaluate_update(row, backend, code, values, ns):
    if "p" not in values or "G" not in values:
        raise ValueError(f"row {row.id!r}: an 'update' row needs inputs 'p' and 'G'")
    if backend == "numpy":
        ns.update({k: copy.deepcopy(v) for k, v in values.items()})
        ns.update({k: copy.deepcopy(v) for k, v in row.state.items()})
        for t in range(1, row.steps + 1):
            ns["t"], ns["g"] = t, values["G"][t - 1]
            run_snippet(code, ns, _filename(row, backend))
        return to_numpy(ns["p"])
    _bind_inputs(row, backend, {**values, "p": values["p"]}, ns)
    ns["p"].requires_grad_(True)
    opt = run_snippet(code, ns, _filename(row, backend))
    for t in range(row.steps):
        opt.zero_grad()
        (ns["p"] * ns["G"][t]).sum().backward()
        opt.step()
    return to_numpy(ns["p"])


def _evaluate_schedule(row, backend, code, values, ns):
    if "lr" not in values:
        raise ValueError(f"row {row.id!r}: a 'schedule' row needs the input 'lr'")
    ns.update({k: copy.deepcopy(v) for k, v in values.items()})
    if backend == "numpy":
        ns["t"] = np.arange(row.steps)
        lrs = run_snippet(code, ns, _filename(row, backend))
        return np.broadcast_to(np.asarray(lrs, dtype=np.float64), (row.steps,)).copy()
    if backend == "engine":
        import engine

        p = engine.Tensor(np.zeros(1), requires_grad=True)
    else:
        import torch

        p = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    ns["opt"] = opt = ns["optim"].SGD([p], lr=values["lr"])
    (p * 0.0).sum().backward()  # a zero gradient: opt.step() runs but leaves p unchanged
    scheduler = run_snippet(code, ns, _filename(row, backend))
    metric = values.get("metric")
    lrs = []
    for t in range(row.steps):
        lrs.append(float(scheduler.get_last_lr()[0]))
        opt.step()
        if metric is None:
            scheduler.step()
        else:
            scheduler.step(float(metric[t]))
    return np.asarray(lrs)


def evaluate(row: FormulaRow, backend: str, seed: int = 0):
    """Run ``row``'s ``backend`` snippet on its inputs drawn with ``seed``; the result as NumPy."""
    return evaluate_with(row, backend, row.inputs(np.random.default_rng(seed)), seed)


def evaluate_with(row: FormulaRow, backend: str, values: dict, seed: int = 0, steps: int | None = None):
    """Run ``row``'s ``backend`` snippet on the given input ``values`` (a sheet's live chart uses
    it to draw a formula on a grid); the result as NumPy. ``steps`` overrides the number of steps
    of an 'update' or 'schedule' row."""
    if steps is not None:
        if row.kind == "value":
            raise ValueError(f"evaluate: row {row.id!r} is a 'value' row; steps applies to updates and schedules")
        row = dataclasses.replace(row, steps=int(steps))
    if backend not in BACKENDS:
        raise ValueError(f"evaluate: backend must be one of {BACKENDS}, got {backend!r}")
    code = getattr(row, backend)
    if code is None:
        raise ValueError(f"evaluate: row {row.id!r} has no {backend!r} snippet")
    ns = namespace(backend, seed)
    if row.kind == "update":
        return _evaluate_update(row, backend, code, values, ns)
    if row.kind == "schedule":
        return _evaluate_schedule(row, backend, code, values, ns)
    _bind_inputs(row, backend, values, ns)
    out = run_snippet(code, ns, _filename(row, backend))
    if out is None:
        if row.result is None or row.result not in ns:
            raise ValueError(
                f"row {row.id!r}: the {backend} snippet ends in a statement; set result= to the "
                "variable that holds its value"
            )
        out = ns[row.result]
    return to_numpy(out)


def assert_close(actual, expected, rtol: float = 1e-9, atol: float = 1e-12, what: str = "result"):
    """Assert two results (arrays, or tuples of arrays) agree in structure, shape and value."""
    if isinstance(actual, tuple) or isinstance(expected, tuple):
        if not (isinstance(actual, tuple) and isinstance(expected, tuple)) or len(actual) != len(expected):
            raise FormulaMismatch(f"{what}: structure differs: {_describe(actual)} vs {_describe(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, rtol, atol, f"{what}[{i}]")
        return
    a, e = np.asarray(actual), np.asarray(expected)
    if a.shape != e.shape:
        raise FormulaMismatch(f"{what}: shape {a.shape} vs {e.shape}")
    if a.dtype == bool or e.dtype == bool:
        if not np.array_equal(a, e):
            raise FormulaMismatch(f"{what}: boolean results differ: {a} vs {e}")
        return
    a, e = a.astype(np.float64), e.astype(np.float64)
    bad = ~np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=False)
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, np.abs(a - e), -1.0)), a.shape) if a.ndim else ()
        raise FormulaMismatch(
            f"{what}: {int(bad.sum())} of {a.size} values differ (rtol={rtol}, atol={atol}); "
            f"worst at index {tuple(int(j) for j in i)}: {a[i]!r} vs {e[i]!r}"
        )


def _describe(x) -> str:
    if isinstance(x, tuple):
        return f"tuple of {len(x)}"
    return f"array of shape {np.shape(x)}"


def check_row(row: FormulaRow, backends=None, seed: int = 0) -> dict:
    """Run the row's snippets and check each against the NumPy formula.

    ``backends`` defaults to numpy and engine, plus torch when it is installed and the row has a
    PyTorch snippet. Returns ``{backend: result}``; raises :class:`FormulaMismatch` on a disagreement.
    """
    if backends is None:
        backends = ["numpy", "engine"] + (["torch"] if row.torch is not None and torch_available() else [])
    results = {"numpy": evaluate(row, "numpy", seed)}
    for backend in backends:
        if backend == "numpy":
            continue
        results[backend] = evaluate(row, backend, seed)
        try:
            assert_close(
                results[backend],
                results["numpy"],
                row.rtol,
                row.atol,
                what=f"{row.id} ({row.name}): {backend} vs numpy",
            )
        except FormulaMismatch as error:
            raise FormulaMismatch(f"{error}\n  numpy:  {row.numpy}\n  {backend}: {getattr(row, backend)}") from None
    return results

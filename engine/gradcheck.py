"""Gradient checking: autograd against central differences, in float64.

For a function f and a fixed random upstream vector v, autograd gives vᵀJ (one backward pass);
numerically, each input element's entry of vᵀJ is the slope of the scalar v·f(x) along that
element, ≈ (v·f(x + h) − v·f(x − h)) / 2h. A random v (not a vector of ones, which is what
``.sum()`` would give) makes errors that cancel in a sum show up.
"""

from __future__ import annotations

import numpy as np

from .tensor import Tensor


class GradcheckError(AssertionError):
    """Autograd and finite differences disagree; the message names the worst element."""


def _as_float64_inputs(inputs):
    prepared = []
    for x in inputs:
        if isinstance(x, Tensor):
            needs = x.requires_grad
            data = x.data
        else:
            needs = isinstance(x, np.ndarray) and x.dtype.kind == "f"
            data = x
        if isinstance(data, np.ndarray) and data.dtype.kind == "f":
            t = Tensor(data.astype(np.float64), requires_grad=needs)
        else:
            t = x  # integer targets, masks, Python settings: passed through untouched
        prepared.append(t)
    return prepared


def gradcheck(fn, inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3, seed: int = 0) -> bool:
    """True if autograd's gradients of ``fn(*inputs)`` match central differences, else raise.

    ``inputs``: Tensors (those with ``requires_grad`` are checked) or arrays (float arrays are
    checked). Everything is copied to float64 first. Raises :class:`GradcheckError` naming the
    input, the worst element, its analytic and numeric values.
    """
    inputs = _as_float64_inputs(list(inputs))
    checked = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input requires a gradient; pass float tensors with requires_grad=True")

    out = fn(*inputs)
    if not isinstance(out, Tensor):
        raise TypeError(f"gradcheck: fn must return a Tensor, got {type(out).__name__}")
    if not out.requires_grad:
        raise ValueError("gradcheck: the output does not depend on any input that requires a gradient")
    upstream = np.random.default_rng(seed).standard_normal(out.shape)
    out.backward(upstream)

    def projected(values) -> float:
        with_values = list(inputs)
        with_values[i] = Tensor(values)
        return float(np.sum(fn(*with_values).data.astype(np.float64) * upstream))

    for i in checked:
        x = inputs[i].data
        analytic = inputs[i].grad.data if inputs[i].grad is not None else np.zeros_like(x)
        numeric = np.zeros_like(x)
        flat_x, flat_n = x.reshape(-1), numeric.reshape(-1)
        for j in range(flat_x.size):
            shifted = flat_x.copy()
            shifted[j] += eps
            up = projected(shifted.reshape(x.shape))
            shifted[j] -= 2 * eps
            down = projected(shifted.reshape(x.shape))
            flat_n[j] = (up - down) / (2 * eps)
        error = np.abs(analytic - numeric)
        allowed = atol + rtol * np.abs(numeric)
        if not np.all(error <= allowed):
            worst = np.unravel_index(np.argmax(error - allowed), x.shape)
            raise GradcheckError(
                f"gradcheck: input {i} (shape {x.shape}), element {tuple(int(k) for k in worst)}: "
                f"autograd gives {analytic[worst]:.8g}, central differences give {numeric[worst]:.8g} "
                f"(|difference| {error[worst]:.3g} > atol {atol} + rtol {rtol}·|numeric|); "
                f"{int(np.sum(error > allowed))} of {x.size} elements disagree"
            )
    return True

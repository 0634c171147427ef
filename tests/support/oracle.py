"""Test helpers: optional tools (PyTorch, Chromium) and the PyTorch oracle.

Optional tools
--------------
``require_torch()`` returns the ``torch`` module. Without torch the calling test is *skipped* with
a visible reason, unless the environment sets ``REQUIRE_ORACLE=1`` (as ``.ci/run`` does): then a
missing torch is a *failure*, so CI can never pass by silently skipping the oracle.
``require_browser()`` does the same for Chromium + Playwright under ``REQUIRE_BROWSER=1`` and
returns the path of the Chromium executable.

The oracle
----------
``check_against_torch(engine_fn, torch_fn, inputs)`` runs one function written twice, once with
``engine`` tensors and once with ``torch`` tensors, on the same float64 inputs, then:

1. compares the forward outputs (shape, dtype and values);
2. back-propagates the *same random* upstream gradient ``g`` (seeded, shape of the output) through
   both, i.e. computes the vector-Jacobian product ``g^T J`` for every input. A random ``g`` checks
   every column of the Jacobian; ``out.sum().backward()`` (``g`` all ones) would let an op whose
   gradient is wrong but sums correctly slip through;
3. compares every input's gradient (shape and values).

``check_gradcheck(fn, inputs)`` wraps ``engine.gradcheck`` (float64 central differences).

Both take plain NumPy arrays; integer arrays (class indices, masks) are passed as constants that
need no gradient. Use them as::

    from oracle import check_against_torch, check_gradcheck, require_torch

    def test_mul_broadcast():
        a, b = random_arrays((3, 4), (4,))
        check_gradcheck(lambda x, y: x * y, [a, b])
        check_against_torch(lambda x, y: x * y, lambda x, y: x * y, [a, b])
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence

import numpy as np
import pytest

TORCH_VERSION = "2.13.0"
TORCH_MISSING = f"torch not installed: oracle test skipped (pip install torch=={TORCH_VERSION})"
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "/usr/bin/chromium")


def _required(variable: str) -> bool:
    """True when the environment variable asks for a tool to be present (REQUIRE_ORACLE=1)."""
    return os.environ.get(variable, "").strip().lower() in {"1", "true", "yes", "on"}


def _missing(reason: str, variable: str):
    """Skip the current test, or fail it when ``variable`` says the tool is required."""
    if _required(variable):
        pytest.fail(f"{reason} [{variable}=1 makes this a failure]", pytrace=False)
    pytest.skip(reason)


# ----------------------------------------------------------------------------- optional tools
@functools.lru_cache(maxsize=1)
def _torch_or_none():
    try:
        return importlib.import_module("torch")
    except ImportError:
        return None


def torch_available() -> bool:
    return _torch_or_none() is not None


def require_torch():
    """The ``torch`` module; skips the test without it (fails under ``REQUIRE_ORACLE=1``)."""
    torch = _torch_or_none()
    if torch is None:
        _missing(TORCH_MISSING, "REQUIRE_ORACLE")
    return torch


@functools.lru_cache(maxsize=1)
def _browser_status() -> tuple[str | None, str]:
    """(chromium path or None, reason when unusable)."""
    if importlib.util.find_spec("playwright") is None:
        return None, "playwright not installed: browser test skipped (pip install -e .[test])"
    explicit = os.environ.get("CHROMIUM_PATH")
    candidates = (explicit,) if explicit else CHROMIUM_CANDIDATES
    path = next((found for name in candidates if (found := shutil.which(name))), None)
    if path is None:
        return None, (
            f"Chromium not found ({', '.join(candidates)}): browser test skipped "
            "(apt-get install chromium, or set CHROMIUM_PATH)"
        )
    try:  # a broken install (missing shared libraries) should say so here, not in Playwright
        subprocess.run([path, "--version"], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        return None, f"Chromium at {path} does not start ({error}): browser test skipped"
    return path, ""


def browser_available() -> bool:
    return _browser_status()[0] is not None


def require_browser() -> str:
    """Path of a working Chromium (Playwright importable); skips without (fails under REQUIRE_BROWSER=1)."""
    path, reason = _browser_status()
    if path is None:
        _missing(reason, "REQUIRE_BROWSER")
    return path


# ----------------------------------------------------------------------------- inputs
def random_arrays(*shapes, seed: int = 0, low: float | None = None, high: float | None = None):
    """float64 arrays of the given shapes: standard normal, or uniform in [low, high)."""
    rng = np.random.default_rng(seed)
    if low is None and high is None:
        return [rng.standard_normal(shape) for shape in shapes]
    low = -1.0 if low is None else low
    high = 1.0 if high is None else high
    return [rng.uniform(low, high, size=shape) for shape in shapes]


def _needs_grad(array: np.ndarray, grad: bool) -> bool:
    return bool(grad) and np.issubdtype(array.dtype, np.floating)


def _grad_flags(arrays: Sequence[np.ndarray], grad: bool | Sequence[bool]) -> list[bool]:
    if isinstance(grad, (bool, np.bool_)):
        return [_needs_grad(a, grad) for a in arrays]
    if len(grad) != len(arrays):
        raise ValueError(f"grad has {len(grad)} flags for {len(arrays)} inputs")
    return [_needs_grad(a, g) for a, g in zip(arrays, grad)]


def _torch_dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


# ----------------------------------------------------------------------------- oracle
def check_against_torch(
    engine_fn: Callable,
    torch_fn: Callable,
    inputs: Sequence[np.ndarray],
    atol: float = 1e-7,
    rtol: float = 1e-6,
    grad: bool | Sequence[bool] = True,
    seed: int = 0,
    check_dtype: bool = True,
):
    """Compare ``engine_fn`` with ``torch_fn``: forward output, then every input gradient.

    inputs: NumPy arrays (float64 for what is differentiated; integer arrays are constants).
    grad:   True/False for all inputs, or one flag per input (integer inputs never need grad).
    Returns ``(engine_output, torch_output)`` for further assertions.
    """
    torch = require_torch()
    import engine

    arrays = [np.asarray(a) for a in inputs]
    originals = [a.copy() for a in arrays]
    flags = _grad_flags(arrays, grad)

    engine_inputs = [engine.Tensor(a.copy(), requires_grad=f) for a, f in zip(arrays, flags)]
    torch_inputs = [torch.tensor(a.copy(), requires_grad=f) for a, f in zip(arrays, flags)]
    engine_out = engine_fn(*engine_inputs)
    torch_out = torch_fn(*torch_inputs)

    # 1. forward
    assert isinstance(engine_out, engine.Tensor), (
        f"engine_fn returned {type(engine_out).__name__}, expected engine.Tensor"
    )
    expected = torch_out.detach().numpy()
    assert engine_out.shape == expected.shape, f"forward shape: engine {engine_out.shape} vs torch {expected.shape}"
    if check_dtype:
        assert engine_out.data.dtype == np.dtype(_torch_dtype_name(torch_out.dtype)), (
            f"forward dtype: engine {engine_out.data.dtype} vs torch {torch_out.dtype}"
        )
    np.testing.assert_allclose(
        engine_out.data, expected, atol=atol, rtol=rtol, err_msg="forward output differs from torch"
    )
    for i, (before, tensor) in enumerate(zip(originals, engine_inputs)):
        np.testing.assert_array_equal(tensor.data, before, err_msg=f"engine_fn modified input {i} in place")
    assert bool(engine_out.requires_grad) == bool(torch_out.requires_grad), (
        f"requires_grad of the output: engine {engine_out.requires_grad} vs torch {torch_out.requires_grad}"
    )
    if not torch_out.requires_grad:  # nothing to differentiate (no float input, or argmax, ...)
        return engine_out, torch_out

    # 2. the same random upstream gradient through both graphs
    upstream = np.random.default_rng(seed).standard_normal(expected.shape).astype(expected.dtype)
    engine_out.backward(upstream.copy())
    torch_out.backward(torch.from_numpy(upstream.copy()))

    # 3. every input gradient
    for i, (flag, e_in, t_in) in enumerate(zip(flags, engine_inputs, torch_inputs)):
        if not flag:
            continue
        where = f"gradient of input {i} (shape {arrays[i].shape})"
        if t_in.grad is None:  # the output does not depend on this input
            assert e_in.grad is None or not np.any(e_in.grad.numpy()), f"{where}: torch has none, engine is non-zero"
            continue
        assert e_in.grad is not None, f"{where}: engine left .grad as None, torch computed one"
        torch_grad = t_in.grad.numpy()
        assert np.shape(e_in.grad.numpy()) == torch_grad.shape, (
            f"{where}: engine grad shape {np.shape(e_in.grad.numpy())} vs torch {torch_grad.shape}"
        )
        np.testing.assert_allclose(e_in.grad.numpy(), torch_grad, atol=atol, rtol=rtol, err_msg=where)
    return engine_out, torch_out


def check_gradcheck(fn: Callable, inputs: Sequence[np.ndarray], grad: bool | Sequence[bool] = True, **kwargs):
    """``engine.gradcheck`` on float64 copies of ``inputs``; asserts it returns True.

    Integer arrays become constant tensors; keyword arguments (eps, atol, rtol) go to gradcheck.
    """
    import engine

    arrays = [np.asarray(a) for a in inputs]
    flags = _grad_flags(arrays, grad)
    tensors = [engine.Tensor(a.astype(np.float64) if f else a.copy(), requires_grad=f) for a, f in zip(arrays, flags)]
    assert any(flags), "check_gradcheck needs at least one floating input to differentiate"
    assert engine.gradcheck(fn, tensors, **kwargs) is True

"""engine: a small reverse-mode autograd library on NumPy with PyTorch's names.

    import engine
    from engine import Tensor, nn, optim
    import engine.functional as F

See the course's notebooks for what each piece computes and why; ``../API.md`` is the contract.
"""

from .autograd import enable_grad, is_grad_enabled, no_grad
from .creation import arange, eye, full, linspace, ones, ones_like, rand, randint, randn, zeros, zeros_like
from .gradcheck import GradcheckError, gradcheck
from .io import load, save
from .random import manual_seed
from .tensor import Tensor, cat, log, matmul, maximum, minimum, stack, tensor, where

float32 = "float32"
float64 = "float64"
int64 = "int64"
bool_ = "bool"

# Every other submodule, imported here, eagerly and by name (not through importlib): `engine.nn`
# works after `import engine`, and `marimo export html-wasm`, which bundles the modules a notebook
# reaches in Ruff's static import graph, puts the whole package into one wheel that every page of
# the site shares. (autograd, creation, gradcheck, io, random and tensor are imported above; naming
# them here would rebind `engine.tensor` and `engine.gradcheck` from the functions to the modules.)
# A new module goes into this list: tests/site/test_site.py checks it.
from . import (activations_lab, attention, attention_lab, conv_lab, course, data, diffusion,
    distances, exercises, fit_lab, formulas, functional, generative_lab, graph, losses_lab,
    metrics, nn, ops, optim, optim_lab, plot, shapes, ui, vae)  # noqa: E402,F401


__all__ = [
    "Tensor", "tensor", "cat", "stack", "where", "maximum", "minimum", "matmul", "log",
    "zeros", "ones", "full", "zeros_like", "ones_like", "randn", "rand", "randint", "arange",
    "linspace", "eye", "manual_seed", "no_grad", "enable_grad", "is_grad_enabled",
    "gradcheck", "GradcheckError", "save", "load",
]

"""engine: a small reverse-mode autograd library on NumPy with PyTorch's names.

    import engine
    from engine import Tensor, nn, optim
    import engine.functional as F

This package is the library: NumPy only, no marimo, plotting or lesson code. The course's labs,
charts, widgets, formula rows and table of contents live in ``engine.course``, which imports from
here and never the other way. The README says what to read first and how the layers fit.
"""

from ._memory import keep_freed_memory as _keep_freed_memory
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .creation import arange, eye, full, linspace, ones, ones_like, rand, randint, randn, zeros, zeros_like
from .gradcheck import GradcheckError, gradcheck
from .io import load, save
from .random import manual_seed
from .tensor import METHOD_FUNCTIONS as _METHOD_FUNCTIONS
from .tensor import Tensor, cat, log, matmul, maximum, minimum, stack, tensor, where

# engine.exp, engine.softmax, engine.sum, engine.max, ...: PyTorch's free functions over the methods
globals().update(_METHOD_FUNCTIONS)

_keep_freed_memory()  # speed: the next step's arrays reuse this step's pages (engine/_memory.py)

float32 = "float32"
float64 = "float64"
int64 = "int64"
bool_ = "bool"

# Every other library submodule, imported here, eagerly and by name (not through importlib):
# `engine.nn` works after `import engine`, and `marimo export html-wasm`, which bundles the modules
# a notebook reaches in Ruff's static import graph, puts the whole library into the one wheel that
# every page of the site shares (the notebooks' `from engine.course import ...` reaches the course
# layer, whose `__init__` imports its own submodules the same way). (autograd, creation,
# gradcheck, io, random and tensor are imported above; naming them here would rebind
# `engine.tensor` and `engine.gradcheck` from the functions to the modules.) `engine.course` is
# deliberately absent: `import engine` loads no lesson code. A new library module goes into this
# list: tests/site/test_site.py checks it.
# They come after the names above, which the submodules import from `engine`.
from . import attention, data, diffusion, distances, functional, metrics, nn, ops, optim, shapes, vae  # noqa: E402

__all__ = [
    "Tensor",
    "tensor",
    "cat",
    "stack",
    "where",
    "maximum",
    "minimum",
    "matmul",
    "log",
    "zeros",
    "ones",
    "full",
    "zeros_like",
    "ones_like",
    "randn",
    "rand",
    "randint",
    "arange",
    "linspace",
    "eye",
    "manual_seed",
    "no_grad",
    "enable_grad",
    "is_grad_enabled",
    "inference_mode",
    "set_grad_enabled",
    "gradcheck",
    "GradcheckError",
    "save",
    "load",
    *_METHOD_FUNCTIONS,
]

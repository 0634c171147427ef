"""engine: a small reverse-mode autograd library on NumPy with PyTorch's names.

    import engine
    from engine import Tensor, nn, optim
    import engine.functional as F

See the course's notebooks for what each piece computes and why; ``../API.md`` is the contract.
"""

import importlib as _importlib

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

# Submodules: imported on first use while the package is being assembled.
_SUBMODULES = (
    "functional", "nn", "optim", "shapes", "attention", "diffusion", "vae",
    "metrics", "data", "plot", "course", "random", "ops",
)


def __getattr__(name):
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'engine' has no attribute {name!r}")


__all__ = [
    "Tensor", "tensor", "cat", "stack", "where", "maximum", "minimum", "matmul", "log",
    "zeros", "ones", "full", "zeros_like", "ones_like", "randn", "rand", "randint", "arange",
    "linspace", "eye", "manual_seed", "no_grad", "enable_grad", "is_grad_enabled",
    "gradcheck", "GradcheckError", "save", "load",
]

"""Weight initialisers, as ``torch.nn.init``: each fills a tensor in place and returns it.

Why the variances: a layer y = W x with n inputs of unit variance gives Var(yᵢ) = n·Var(W).
- Xavier/Glorot keeps the variance of both the activations and the gradients when the activation
  is roughly linear near 0: Var(W) = gain² · 2/(n_in + n_out).
- He/Kaiming compensates ReLU's halving of the second moment: Var(W) = gain²/n with gain² = 2
  for ReLU, so Var(W) = 2/n_in (mode 'fan_in', forward signal) or 2/n_out ('fan_out', gradients).
A uniform U(−a, a) has variance a²/3, so a = √3·std gives the same variance as the normal.

Fans follow PyTorch: for a weight of shape (out, in, *kernel) (Linear: (out, in); Conv2d:
(out, in, kh, kw)) fan_in = in·∏kernel and fan_out = out·∏kernel.
Every draw comes from :func:`engine.random.generator`, so ``engine.manual_seed`` fixes it.
"""

from __future__ import annotations

import math

import numpy as np

from .. import random as _random
from ..tensor import Tensor

_LINEAR_LIKE = (
    "linear",
    "identity",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
)


def calculate_gain(nonlinearity: str, param=None) -> float:
    """PyTorch's recommended gain: 1 (linear, conv, sigmoid), 5/3 (tanh), √2 (relu),
    √(2/(1 + slope²)) (leaky_relu, slope default 0.01), 3/4 (selu)."""
    if nonlinearity in _LINEAR_LIKE:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(
        f"calculate_gain: unsupported nonlinearity {nonlinearity!r}; use one of linear, sigmoid, "
        "tanh, relu, leaky_relu, selu, conv2d"
    )


def _array(tensor, op: str) -> np.ndarray:
    arr = tensor.data if isinstance(tensor, Tensor) else tensor
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{op}: expected a Tensor or a NumPy array, got {type(tensor).__name__}")
    if arr.dtype.kind != "f":
        raise TypeError(f"{op}: can only fill floating-point tensors, got {arr.dtype}")
    return arr


def _calculate_fan_in_and_fan_out(tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of shape (out, in, *kernel), as PyTorch."""
    shape = tensor.shape
    if len(shape) < 2:
        raise ValueError(
            f"init: fan in and fan out need a tensor with at least 2 dims (out, in, ...), got shape {tuple(shape)}"
        )
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return int(shape[1]) * receptive, int(shape[0]) * receptive


def _fan(tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    if fan == 0:
        raise ValueError(f"init: cannot initialise a tensor with zero {mode} (shape {tuple(tensor.shape)})")
    return fan


def _fill(tensor, values: np.ndarray):
    arr = tensor.data if isinstance(tensor, Tensor) else tensor
    arr[...] = values
    if isinstance(tensor, Tensor):
        tensor._bump_version()  # an in-place write: a graph that saved the old values must know
    return tensor


def uniform_(tensor, a: float = 0.0, b: float = 1.0):
    """Fill with U(a, b)."""
    arr = _array(tensor, "uniform_")
    if a > b:
        raise ValueError(f"uniform_: lower bound a={a} is greater than upper bound b={b}")
    return _fill(tensor, _random.generator().uniform(a, b, arr.shape))


def normal_(tensor, mean: float = 0.0, std: float = 1.0):
    """Fill with N(mean, std²)."""
    arr = _array(tensor, "normal_")
    if std < 0:
        raise ValueError(f"normal_: std must be non-negative, got {std}")
    return _fill(tensor, mean + std * _random.generator().standard_normal(arr.shape))


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0):
    """Fill with N(mean, std²) restricted to [a, b] (rejection sampling: redraw what falls outside)."""
    arr = _array(tensor, "trunc_normal_")
    if not a < b:
        raise ValueError(f"trunc_normal_: need a < b, got a={a}, b={b}")
    values = mean + std * _random.generator().standard_normal(arr.shape)
    for _ in range(100):
        bad = (values < a) | (values > b)
        if not bad.any():
            break
        values[bad] = mean + std * _random.generator().standard_normal(int(bad.sum()))
    return _fill(tensor, np.clip(values, a, b))


def constant_(tensor, val: float):
    _array(tensor, "constant_")
    return _fill(tensor, val)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain: float = 1.0):
    """U(−a, a) with a = gain·√(6/(fan_in + fan_out)), i.e. Var = gain²·2/(fan_in + fan_out)."""
    arr = _array(tensor, "xavier_uniform_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(arr)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return _fill(tensor, _random.generator().uniform(-bound, bound, arr.shape))


def xavier_normal_(tensor, gain: float = 1.0):
    """N(0, std²) with std = gain·√(2/(fan_in + fan_out))."""
    arr = _array(tensor, "xavier_normal_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(arr)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    return _fill(tensor, std * _random.generator().standard_normal(arr.shape))


def kaiming_uniform_(tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    """U(−b, b) with b = √3·gain/√fan: Var = gain²/fan (2/fan_in for ReLU).

    ``a`` is the negative slope of a leaky ReLU; PyTorch's defaults (a=0, 'leaky_relu') give the
    ReLU gain √2. ``nn.Linear`` uses a=√5, which gives b = 1/√fan_in.
    """
    arr = _array(tensor, "kaiming_uniform_")
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(_fan(arr, mode))
    return _fill(tensor, _random.generator().uniform(-bound, bound, arr.shape))


def kaiming_normal_(tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    """N(0, std²) with std = gain/√fan (He: std = √(2/fan_in) for ReLU)."""
    arr = _array(tensor, "kaiming_normal_")
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(_fan(arr, mode))
    return _fill(tensor, std * _random.generator().standard_normal(arr.shape))


# PyTorch's spellings without the trailing underscore are deprecated aliases; keep the canonical ones.
he_normal_ = kaiming_normal_
he_uniform_ = kaiming_uniform_
glorot_normal_ = xavier_normal_
glorot_uniform_ = xavier_uniform_

"""Convolutions and dtypes: one dtype in, the same dtype out; mixed float32/float64 is an error.

PyTorch refuses ``conv2d(float32 input, float64 weight)`` ("expected scalar type Float but found
Double") instead of silently computing in float64; the engine raises a TypeError that names both
dtypes and the fix.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import engine
import engine.functional as F
from engine import nn

F32, F64 = np.float32, np.float64


def tensors(x_dtype, w_dtype, b_dtype=None, transpose=False):
    rng = np.random.default_rng(0)
    x = engine.Tensor(rng.standard_normal((2, 3, 6, 6)).astype(x_dtype), requires_grad=True)
    w_shape = (3, 4, 3, 3) if transpose else (4, 3, 3, 3)
    w = engine.Tensor(rng.standard_normal(w_shape).astype(w_dtype), requires_grad=True)
    b = None if b_dtype is None else engine.Tensor(np.zeros(4, dtype=b_dtype), requires_grad=True)
    return x, w, b


@pytest.mark.parametrize("op, transpose", [(F.conv2d, False), (F.conv_transpose2d, True)])
@pytest.mark.parametrize(
    "x_dtype, w_dtype, b_dtype, culprit",
    [
        (F32, F64, None, "weight is float64"),
        (F64, F32, None, "weight is float32"),
        (F32, F32, F64, "bias is float64"),
        (F64, F64, F32, "bias is float32"),
    ],
)
def test_mixed_float32_float64_is_a_clear_error(op, transpose, x_dtype, w_dtype, b_dtype, culprit):
    x, w, b = tensors(x_dtype, w_dtype, b_dtype, transpose)
    name = op.__name__
    with pytest.raises(
        TypeError, match=rf"{name}: input is {np.dtype(x_dtype)} but {culprit}.*same dtype.*\.float\(\) or \.double\(\)"
    ):
        op(x, w, b, padding=1)


def test_torch_refuses_the_same_mix():
    torch = require_torch()
    x = torch.zeros(2, 3, 6, 6)
    with pytest.raises(RuntimeError):
        torch.nn.functional.conv2d(x, torch.zeros(4, 3, 3, 3, dtype=torch.float64))
    with pytest.raises(RuntimeError):
        torch.nn.functional.conv2d(x, torch.zeros(4, 3, 3, 3), torch.zeros(4, dtype=torch.float64))


def test_a_float64_numpy_kernel_on_a_float32_image_names_the_fix():
    x = engine.zeros(1, 1, 5, 5)  # float32, PyTorch's default
    kernel = np.ones((1, 1, 3, 3))  # NumPy's default, float64
    with pytest.raises(TypeError, match="input is float32 but weight is float64"):
        F.conv2d(x, kernel)
    assert F.conv2d(x, kernel.astype(np.float32)).dtype == np.float32
    assert F.conv2d(x.double(), kernel).dtype == np.float64


def test_a_float32_module_on_float64_input_is_the_same_error():
    conv = nn.Conv2d(3, 4, 3)  # float32 parameters
    with pytest.raises(TypeError, match="conv2d: input is float64 but weight is float32"):
        conv(engine.Tensor(np.zeros((1, 3, 6, 6))))


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize(
    "op, transpose, stride", [(F.conv2d, False, 1), (F.conv2d, False, 2), (F.conv_transpose2d, True, 2)]
)
def test_one_dtype_in_is_the_same_dtype_out_and_in_every_gradient(dtype, op, transpose, stride):
    x, w, b = tensors(dtype, dtype, dtype, transpose)
    out = op(x, w, b, stride=stride, padding=1)
    assert out.dtype == dtype
    out.backward(np.ones(out.shape, dtype=dtype))
    assert x.grad.dtype == w.grad.dtype == b.grad.dtype == dtype

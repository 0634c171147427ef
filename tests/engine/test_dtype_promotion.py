"""Dtypes as PyTorch (issue 12): every unary op over integer, bool and float inputs, and binary ops,
``cat`` and ``where`` over mixed dtypes, against torch with Hypothesis.

Floating functions of integers compute in float32 (torch's default dtype): sigmoid of an int tensor
no longer truncates to 0 and exp no longer gives float64. Where torch refuses an integer input
(silu, gelu, softplus, elu, leaky_relu, logsigmoid, softmax, log_softmax: "not implemented for
'Long'"), the engine computes in float32, the answer torch gives after ``.float()``; that
difference is listed in docs/differences-from-pytorch.md.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import require_torch

import engine
import engine.functional as F

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

pytestmark = pytest.mark.oracle

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64"]
INTEGER = {"bool", "uint8", "int8", "int16", "int32", "int64"}

# name: (engine function, torch function, what torch does with integers:
#        "same" = accepts them, "float" = the engine promotes where torch refuses)
UNARY = {
    "exp": (lambda x: x.exp(), lambda x: x.exp(), "same"),
    "log": (lambda x: x.log(), lambda x: x.log(), "same"),
    "log2": (lambda x: x.log2(), lambda x: x.log2(), "same"),
    "log10": (lambda x: x.log10(), lambda x: x.log10(), "same"),
    "sqrt": (lambda x: x.sqrt(), lambda x: x.sqrt(), "same"),
    "sin": (lambda x: x.sin(), lambda x: x.sin(), "same"),
    "cos": (lambda x: x.cos(), lambda x: x.cos(), "same"),
    "tanh": (lambda x: x.tanh(), lambda x: x.tanh(), "same"),
    "sigmoid": (lambda x: x.sigmoid(), lambda x: x.sigmoid(), "same"),
    "F.sigmoid": (lambda x: F.sigmoid(x), lambda x: x.sigmoid(), "same"),
    "F.tanh": (lambda x: F.tanh(x), lambda x: x.tanh(), "same"),
    "relu": (lambda x: x.relu(), lambda x: x.relu(), "same"),
    "F.relu": (lambda x: F.relu(x), lambda x: x.relu(), "same"),
    "abs": (lambda x: x.abs(), lambda x: x.abs(), "same"),
    "neg": (lambda x: -x, lambda x: -x, "same"),
    "square": (lambda x: x.square(), lambda x: x.square(), "same"),
    "clamp": (lambda x: x.clamp(-1, 2), lambda x: x.clamp(-1, 2), "same"),
    "clamp float bounds": (lambda x: x.clamp(-0.5, 1.5), lambda x: x.clamp(-0.5, 1.5), "same"),
    "logsumexp": (lambda x: x.logsumexp(-1), lambda x: x.logsumexp(-1), "same"),
    "sum": (lambda x: x.sum(), lambda x: x.sum(), "same"),
    "silu": (lambda x: F.silu(x), lambda x: F_torch().silu(x), "float"),
    "gelu": (lambda x: F.gelu(x), lambda x: F_torch().gelu(x), "float"),
    "gelu tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda x: F_torch().gelu(x, approximate="tanh"), "float"),
    "softplus": (lambda x: F.softplus(x), lambda x: F_torch().softplus(x), "float"),
    "elu": (lambda x: F.elu(x), lambda x: F_torch().elu(x), "float"),
    "leaky_relu": (lambda x: F.leaky_relu(x), lambda x: F_torch().leaky_relu(x), "float"),
    "logsigmoid": (lambda x: F.logsigmoid(x), lambda x: F_torch().logsigmoid(x), "float"),
    "softmax": (lambda x: F.softmax(x, dim=-1), lambda x: F_torch().softmax(x, dim=-1), "float"),
    "log_softmax": (lambda x: F.log_softmax(x, dim=-1), lambda x: F_torch().log_softmax(x, dim=-1), "float"),
}


def F_torch():
    import torch.nn.functional as TF

    return TF


def _values(dtype: str):
    if dtype == "bool":
        return st.booleans()
    if dtype == "uint8":
        return st.integers(0, 12)
    if dtype.startswith("int"):
        return st.integers(-12, 12)
    return st.floats(-12, 12, width=32 if dtype == "float32" else 64)


@st.composite
def arrays(draw, dtype):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4))
    return draw(hnp.arrays(np.dtype(dtype), shape, elements=_values(dtype)))


def _torch_answer(torch, t_fn, x: np.ndarray, kind: str):
    """torch's result, or (for kind 'float' with an integer input) torch's result on x.float()."""
    t = torch.from_numpy(x.copy())
    try:
        return t_fn(t), None
    except (RuntimeError, NotImplementedError, TypeError) as err:
        if kind == "float" and x.dtype.name in INTEGER:
            return t_fn(t.float()), None
        return None, err


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=15)
@given(data=st.data())
def test_unary_op_dtype_and_values_match_torch(name, dtype, data):
    torch = require_torch()
    e_fn, t_fn, kind = UNARY[name]
    if name == "clamp" and dtype == "uint8":
        return  # torch wraps the bound -1 to 255 for uint8 (then min > max); the engine clamps to [0, 2]
    x = data.draw(arrays(dtype))
    expected, refusal = _torch_answer(torch, t_fn, x, kind)
    if refusal is not None:  # torch refuses (relu/abs/neg of bool, ...): the engine too, by name
        with pytest.raises((TypeError, RuntimeError, ValueError)):
            e_fn(engine.tensor(x))
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = e_fn(engine.tensor(x))
    want = expected.numpy()
    assert out.dtype == want.dtype, f"{name}({dtype}): engine {out.dtype}, torch {want.dtype}"
    assert out.shape == want.shape
    tol = 1e-5 if want.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.data, want, rtol=tol, atol=tol, equal_nan=True)


def test_sigmoid_silu_gelu_of_integers_no_longer_truncate():
    x = engine.arange(-2, 3)
    for out in (x.sigmoid(), F.silu(x), F.gelu(x), F.sigmoid(x)):
        assert out.dtype == np.float32 and np.any((out.data != 0) & (out.data != np.round(out.data)))
    assert x.exp().dtype == np.float32 and F.softplus(x).dtype == np.float32


# ---------------------------------------------------------------- two operands

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": None,
    "where": None,
}


@st.composite
def operand_pair(draw):
    da, db = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(DTYPES))
    zero_d_a, zero_d_b = draw(st.booleans()), draw(st.booleans())
    n = draw(st.integers(1, 4))
    a = draw(hnp.arrays(np.dtype(da), () if zero_d_a else (n,), elements=_values(da)))
    b = draw(hnp.arrays(np.dtype(db), () if zero_d_b else (n,), elements=_values(db)))
    return a, b


@pytest.mark.parametrize("name", list(BINARY))
@settings(max_examples=60)
@given(pair=operand_pair())
def test_binary_promotion_matches_torch(name, pair):
    torch = require_torch()
    a, b = pair
    if name == "sub" and a.dtype == bool and b.dtype == bool:  # refused by both, naming the op
        with pytest.raises(RuntimeError):
            torch.from_numpy(a.copy()) - torch.from_numpy(b.copy())
        with pytest.raises(TypeError, match="sub: subtraction of two bool tensors"):
            engine.tensor(a) - engine.tensor(b)
        return
    ta, tb = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
    ea, eb = engine.tensor(a), engine.tensor(b)
    if name == "maximum":
        want, got = torch.maximum(ta, tb), engine.maximum(ea, eb)
    elif name == "where":
        cond = np.arange(max(a.size, b.size)) % 2 == 0
        want = torch.where(torch.from_numpy(cond), ta, tb)
        got = engine.where(cond, ea, eb)
    else:
        try:
            want = BINARY[name](ta, tb)
        except RuntimeError:
            return
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=RuntimeWarning)  # x/0 is the user's division
            got = BINARY[name](ea, eb)
    assert got.dtype == np.dtype(str(want.dtype).removeprefix("torch.")), (
        f"{name}({a.dtype}{'[0-d]' if a.ndim == 0 else ''}, {b.dtype}{'[0-d]' if b.ndim == 0 else ''})"
    )
    np.testing.assert_allclose(got.data, want.numpy(), rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize(
    "dtypes",
    [
        ("int64", "float32"),
        ("int64", "float64"),
        ("bool", "int64"),
        ("uint8", "int8"),
        ("float32", "float64"),
        ("int32", "bool", "float32"),
    ],
)
def test_cat_promotes_as_torch(dtypes, torch):
    parts = [np.arange(3).astype(d) for d in dtypes]
    want = torch.cat([torch.from_numpy(p) for p in parts])
    got = engine.cat([engine.tensor(p) for p in parts])
    assert got.dtype == np.dtype(str(want.dtype).removeprefix("torch."))
    np.testing.assert_array_equal(got.data, want.numpy())


def test_cat_of_int_and_float_keeps_the_gradient_in_float32():
    x = engine.tensor([1.5, 2.5], requires_grad=True)
    out = engine.cat([engine.tensor([1, 2]), x])
    assert out.dtype == np.float32
    (out * engine.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.numpy().tolist() == [3.0, 4.0] and x.grad.dtype == np.float32


def test_a_float64_scalar_tensor_does_not_widen_a_float32_tensor(torch):
    x = engine.tensor(np.ones(3, np.float32), requires_grad=True)
    s = engine.tensor(np.float64(2.0), requires_grad=True)
    out = x * s
    assert out.dtype == (torch.ones(3) * torch.tensor(2.0, dtype=torch.float64)).numpy().dtype
    out.sum().backward()
    assert s.grad.dtype == np.float64 and s.grad.numpy() == 3.0


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.ones(2, 3) @ lib.ones(3, 2, dtype=lib.float64),
        lambda lib: lib.ones(3) @ lib.ones(3, dtype=lib.float64),
        lambda lib: lib.matmul(lib.ones(2, 2, dtype=lib.float64), lib.ones(2, 2)),
    ],
)
def test_matmul_of_float32_and_float64_raises_as_torch(make, torch):
    with pytest.raises(RuntimeError):
        make(torch)
    with pytest.raises(RuntimeError, match="matmul: expected both operands to have the same dtype"):
        make(engine)


def test_integer_to_a_negative_integer_power_is_a_clear_error(torch):
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        torch.tensor([2]) ** -1
    for fn in (
        lambda: 2 ** engine.tensor([-1]),
        lambda: engine.tensor([2]) ** -1,
        lambda: engine.tensor([2]) ** engine.tensor([-1]),
        lambda: engine.tensor([2]).pow(-2),
    ):
        with pytest.raises(RuntimeError, match="pow: Integers to negative integer powers are not allowed"):
            fn()
    assert (2.0 ** engine.tensor([-1])).data.tolist() == [0.5]
    assert (2 ** engine.tensor([3])).data.tolist() == [8]

"""Elementwise primitives: arithmetic, pow, exp/log, sqrt, abs, trigonometry, clamp, max/min, where.

Every row is checked twice: ``engine.gradcheck`` (float64 central differences) and PyTorch (forward
value and every input gradient under a random upstream gradient, 1e-10 relative).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from oracle import require_torch
from torch_compare import SAME, check_op, draw, oracle

import engine
from engine import Tensor

pytestmark = pytest.mark.oracle

# ---------------------------------------------------------------- binary tensor ops
# (id, engine fn, torch fn, shapes, domain of a, domain of b)
BINARY = [
    ("add", lambda a, b: a + b, SAME, ((3, 4), (3, 4)), "normal", "normal"),
    ("add_broadcast", lambda a, b: a + b, SAME, ((2, 3, 4), (3, 1)), "normal", "normal"),
    ("sub", lambda a, b: a - b, SAME, ((3, 4), (3, 4)), "normal", "normal"),
    ("sub_broadcast", lambda a, b: a - b, SAME, ((4,), (3, 1)), "normal", "normal"),
    ("mul", lambda a, b: a * b, SAME, ((3, 4), (3, 4)), "normal", "normal"),
    ("mul_broadcast", lambda a, b: a * b, SAME, ((1, 4), (3, 1)), "normal", "normal"),
    ("div", lambda a, b: a / b, SAME, ((3, 4), (3, 4)), "normal", "away"),
    ("div_broadcast", lambda a, b: a / b, SAME, ((2, 3), (3,)), "normal", "away"),
    ("pow_tensor", lambda a, b: a**b, SAME, ((3, 4), (3, 4)), "positive", "normal"),
    ("pow_broadcast", lambda a, b: a**b, SAME, ((3, 1), (4,)), "positive", "normal"),
    ("method_add", lambda a, b: a.add(b), SAME, ((3,), (3,)), "normal", "normal"),
    ("method_sub", lambda a, b: a.sub(b), SAME, ((3,), (3,)), "normal", "normal"),
    ("method_mul", lambda a, b: a.mul(b), SAME, ((3,), (3,)), "normal", "normal"),
    ("method_div", lambda a, b: a.div(b), SAME, ((3,), (3,)), "normal", "away"),
    ("method_pow", lambda a, b: a.pow(b), SAME, ((3,), (3,)), "positive", "normal"),
    ("maximum", engine.maximum, lambda a, b: require_torch().maximum(a, b), ((3, 4), (3, 4)), "normal", "normal"),
    (
        "maximum_broadcast",
        engine.maximum,
        lambda a, b: require_torch().maximum(a, b),
        ((3, 4), (4,)),
        "normal",
        "normal",
    ),
    ("minimum", engine.minimum, lambda a, b: require_torch().minimum(a, b), ((3, 4), (3, 4)), "normal", "normal"),
    (
        "log_tensor_base",
        lambda a, b: engine.log(a, b),
        lambda a, b: a.log() / b.log(),
        ((3, 4), (3, 4)),
        "positive",
        "positive",
    ),
    (
        "log_tensor_base_broadcast",
        lambda a, b: engine.log(a, b),
        lambda a, b: a.log() / b.log(),
        ((3, 4), (1,)),
        "positive",
        "positive",
    ),
]


@pytest.mark.parametrize("name, fn, torch_fn, shapes, dom_a, dom_b", BINARY, ids=[r[0] for r in BINARY])
def test_binary_op(name, fn, torch_fn, shapes, dom_a, dom_b):
    a = draw(shapes[0], dom_a, seed=1)
    b = draw(shapes[1], dom_b, seed=2)
    if name == "log_tensor_base" or name == "log_tensor_base_broadcast":
        b = np.where(np.abs(b - 1) < 0.2, b + 0.5, b)  # keep ln b away from 0
    check_op(fn, torch_fn, [a, b])


# ---------------------------------------------------------------- a tensor with a Python number
SCALAR = [
    ("add_scalar", lambda x: x + 2.5, "normal"),
    ("radd", lambda x: 2.5 + x, "normal"),
    ("sub_scalar", lambda x: x - 1.5, "normal"),
    ("rsub", lambda x: 2 - x, "normal"),
    ("mul_scalar", lambda x: x * -3, "normal"),
    ("rmul", lambda x: 0.5 * x, "normal"),
    ("div_scalar", lambda x: x / 4.0, "normal"),
    ("rdiv", lambda x: 1 / x, "away"),
    ("neg", lambda x: -x, "normal"),
    ("pow_2", lambda x: x**2, "normal"),
    ("pow_3", lambda x: x**3, "normal"),
    ("pow_int_negative", lambda x: x**-2, "away"),
    ("pow_half", lambda x: x**0.5, "positive"),
    ("pow_fraction", lambda x: x**1.7, "positive"),
    ("pow_float_negative", lambda x: x**-0.5, "positive"),
    ("pow_zero", lambda x: x**0, "normal"),
    ("pow_one", lambda x: x**1, "normal"),
    ("rpow_2", lambda x: 2**x, "normal"),
    ("rpow_fraction", lambda x: 0.3**x, "normal"),
    ("rpow_e", lambda x: math.e**x, "normal"),
    ("square", lambda x: x.square(), "normal"),
]


@pytest.mark.parametrize("name, fn, domain", SCALAR, ids=[r[0] for r in SCALAR])
def test_tensor_with_python_number(name, fn, domain):
    check_op(fn, SAME, [draw((3, 4), domain, seed=3)])


def test_python_number_keeps_the_tensor_dtype():
    x = Tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    for y in (x + 1.5, 2.0 - x, x * 3, 1 / x, x**2.5, 2**x):
        assert y.dtype == np.float32
    (x * 2.0).sum().backward()
    assert x.grad.dtype == np.float32


# ---------------------------------------------------------------- unary functions and methods
UNARY = [
    ("exp", lambda x: x.exp(), "normal"),
    ("log", lambda x: x.log(), "positive"),
    ("log2", lambda x: x.log2(), "positive"),
    ("log10", lambda x: x.log10(), "positive"),
    ("sqrt", lambda x: x.sqrt(), "positive"),
    ("abs", lambda x: x.abs(), "away"),
    ("sin", lambda x: x.sin(), "normal"),
    ("cos", lambda x: x.cos(), "normal"),
    ("tanh", lambda x: x.tanh(), "normal"),
    ("sigmoid", lambda x: x.sigmoid(), "normal"),
    ("relu", lambda x: x.relu(), "away"),
    ("clamp", lambda x: x.clamp(-0.5, 0.7), "normal"),
    ("clamp_min_only", lambda x: x.clamp(min=-0.2), "normal"),
    ("clamp_max_only", lambda x: x.clamp(max=0.1), "normal"),
    ("clip", lambda x: x.clip(-0.5, 0.5), "normal"),
]


@pytest.mark.parametrize("name, fn, domain", UNARY, ids=[r[0] for r in UNARY])
def test_unary_method(name, fn, domain):
    x = draw((3, 5), domain, seed=4)
    if name.startswith("cl"):  # central differences straddling a bound are meaningless
        x = np.where(np.min(np.abs(x[..., None] - np.array([-0.5, -0.2, 0.1, 0.5, 0.7])), -1) < 1e-3, 0.0, x)
    check_op(fn, SAME, [x])


@pytest.mark.parametrize(
    "base, torch_name", [(2.0, "log2"), (10.0, "log10"), (math.e, "log"), (3.0, None), (0.5, None)]
)
def test_log_with_number_base(base, torch_name):
    def torch_fn(x):
        return getattr(x, torch_name)() if torch_name else x.log() / math.log(base)

    check_op(lambda x: engine.log(x, base), torch_fn, [draw((4, 3), "positive", seed=5)])


def test_log_base_gradient_is_the_closed_form():
    """∂ log_b(a)/∂b = −ln a / (b·ln² b): falls as the base grows (a sign one seed drops)."""
    a = Tensor(np.array([3.0, 0.5]), requires_grad=True)
    b = Tensor(np.array([2.0, 4.0]), requires_grad=True)
    engine.log(a, b).backward(np.ones(2))
    np.testing.assert_allclose(b.grad.numpy(), -np.log(a.data) / (b.data * np.log(b.data) ** 2), rtol=1e-14)
    np.testing.assert_allclose(a.grad.numpy(), 1 / (a.data * np.log(b.data)), rtol=1e-14)


def test_div_gradient_wrt_divisor_is_minus_a_over_b_squared():
    a = Tensor(np.array([3.0, -2.0]), requires_grad=True)
    b = Tensor(np.array([2.0, 0.5]), requires_grad=True)
    (a / b).backward(np.ones(2))
    np.testing.assert_allclose(b.grad.numpy(), -a.data / b.data**2, rtol=1e-15)
    np.testing.assert_allclose(a.grad.numpy(), 1 / b.data, rtol=1e-15)


def test_pow_exponent_gradient_is_a_to_the_b_times_ln_a():
    a = Tensor(np.array([3.0, 0.5]), requires_grad=True)
    b = Tensor(np.array([1.5, -2.0]), requires_grad=True)
    (a**b).backward(np.ones(2))
    np.testing.assert_allclose(b.grad.numpy(), a.data**b.data * np.log(a.data), rtol=1e-14)


# ---------------------------------------------------------------- special points (torch only)
def test_pow_with_zero_base_matches_torch():
    """0^b: the exponent's gradient is 0 (limit of aᵇ ln a), the base's is 0 when b = 0, b when b = 1."""
    a = np.array([0.0, 0.0, 0.0, 0.0, 2.0])
    b = np.array([0.0, 1.0, 2.0, 3.5, 0.5])
    oracle(lambda x, y: x**y, SAME, [a, b])
    oracle(lambda x: x**0, SAME, [a])  # constant exponent 0: gradient 0, not 0·0⁻¹ = NaN
    oracle(lambda x: x**2, SAME, [a])
    oracle(lambda x: 0**x, SAME, [np.array([0.0, 1.0, 2.5])])


def test_pow_negative_base_with_integer_exponent_needs_no_log():
    a = np.array([-2.0, -0.5, 3.0])
    oracle(lambda x: x**3, SAME, [a])
    oracle(lambda x: x**-1, SAME, [a])
    # a tensor exponent that is a constant: only the base's gradient is asked for
    oracle(lambda x, y: x**y, SAME, [a, np.array([2.0, 3.0, 2.0])], grad=[True, False])


def test_pow_exponent_gradient_at_negative_and_zero_bases_matches_torch(torch):
    """NaN at a negative base (no real ln), 0 at a zero base with b ≥ 0, as PyTorch (listed)."""
    base = np.array([-2.0, 0.0, 0.0, 3.0, -1.5])
    exponent = np.array([2.0, 1.5, 0.0, 1.5, 3.0])
    g = np.random.default_rng(3).standard_normal(5)
    a, b = Tensor(base), Tensor(exponent, requires_grad=True)
    (a**b).backward(g)
    tb = torch.tensor(exponent, requires_grad=True)
    (torch.tensor(base) ** tb).backward(torch.tensor(g))
    np.testing.assert_array_equal(np.isnan(np.asarray(b.grad.numpy())), [True, False, False, False, True])
    np.testing.assert_allclose(np.asarray(b.grad.numpy()), tb.grad.numpy(), equal_nan=True)


@pytest.mark.parametrize("lo, hi", [(-1.0, 1.0), (0.0, None), (None, 0.5)])
def test_clamp_at_and_outside_bounds_matches_torch(lo, hi):
    """Gradient 1 inside and AT the bounds (inclusive, as torch), 0 outside."""
    x = np.array([-2.0, -1.0, -0.3, 0.0, 0.5, 1.0, 2.0])
    oracle(lambda t: t.clamp(lo, hi), lambda t: t.clamp(lo, hi), [x])


def test_clamp_gradient_values():
    x = Tensor(np.array([-2.0, -1.0, 0.0, 1.0, 2.0]), requires_grad=True)
    x.clamp(-1, 1).backward(np.full(5, 3.0))
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 3.0, 3.0, 3.0, 0.0])


@pytest.mark.parametrize("fn, torch_name", [(engine.maximum, "maximum"), (engine.minimum, "minimum")])
def test_maximum_minimum_split_ties_like_torch(fn, torch_name):
    torch = require_torch()
    a = np.array([1.0, 2.0, 3.0, -1.0])
    b = np.array([1.0, 3.0, 2.0, -1.0])
    oracle(fn, getattr(torch, torch_name), [a, b])
    x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    fn(x, y).backward(np.full(4, 2.0))
    assert (
        x.grad.numpy()[0] == y.grad.numpy()[0] == 1.0 and x.grad.numpy()[3] == y.grad.numpy()[3] == 1.0
    )  # ties share half each


def test_maximum_with_a_number_and_an_array():
    x = Tensor(np.array([-1.0, 0.5, 2.0]), requires_grad=True)
    out = engine.maximum(x, 0.0)
    np.testing.assert_array_equal(out.data, [0.0, 0.5, 2.0])
    out = engine.minimum(np.array([1.0, 1.0, 1.0]), x)
    out.backward(np.ones(3))
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 0.0])


def test_kinks_match_torch():
    x = np.array([-1.5, 0.0, 0.0, 2.0])
    oracle(lambda t: t.abs(), SAME, [x])  # sign(0) = 0
    oracle(lambda t: t.relu(), SAME, [x])  # relu'(0) = 0


def test_log_and_sqrt_near_zero_are_finite_and_match_torch():
    x = np.array([1e-300, 1e-30, 1e-8])
    out, _ = oracle(lambda t: t.log(), SAME, [x])
    assert np.all(np.isfinite(out.data))
    oracle(lambda t: t.sqrt(), SAME, [x], rtol=1e-10)
    oracle(lambda t: t.log2(), SAME, [x])


def test_log_of_zero_is_minus_infinity_like_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning leaks to the learner
        out = Tensor(np.array([0.0, 1.0])).log()
    assert out.data[0] == -np.inf


# ---------------------------------------------------------------- where and masked_fill
def test_where_routes_gradients_to_the_chosen_side():
    torch = require_torch()
    cond = np.array([[True, False, True], [False, False, True]])
    a, b = draw((2, 3), seed=6), draw((2, 3), seed=7)
    fn = lambda x, y: engine.where(cond, x, y)  # noqa: E731
    check_op(fn, lambda x, y: torch.where(torch.tensor(cond), x, y), [a, b])


def test_where_broadcasts_condition_and_operands():
    torch = require_torch()
    cond = np.array([True, False, True])
    a, b = draw((2, 3), seed=8), draw((2, 1), seed=9)
    check_op(lambda x, y: engine.where(cond, x, y), lambda x, y: torch.where(torch.tensor(cond), x, y), [a, b])
    check_op(lambda x: engine.where(cond, x, 0.0), lambda x: torch.where(torch.tensor(cond), x, 0.0), [a])


def test_where_condition_may_be_a_tensor_comparison():
    x = Tensor(np.array([-1.0, 2.0, -3.0]), requires_grad=True)
    out = engine.where(x > 0, x, x * 0.1)
    out.backward(np.ones(3))
    np.testing.assert_allclose(x.grad.numpy(), [0.1, 1.0, 0.1])


def test_masked_fill_matches_torch():
    torch = require_torch()
    mask = np.array([[True, False, False, True], [False, True, False, False], [False] * 4])
    x = draw((3, 4), seed=10)
    check_op(lambda t: t.masked_fill(mask, -5.0), lambda t: t.masked_fill(torch.tensor(mask), -5.0), [x])
    # -1e9 (an attention mask's fill) would swamp central differences: torch only
    oracle(lambda t: t.masked_fill(mask, -1e9), lambda t: t.masked_fill(torch.tensor(mask), -1e9), [x])
    row_mask = np.array([False, True, False, True])  # broadcast along rows, like a causal/padding mask
    check_op(lambda t: t.masked_fill(row_mask, 0.0), lambda t: t.masked_fill(torch.tensor(row_mask), 0.0), [x])


def test_masked_fill_rejects_a_non_boolean_mask():
    with pytest.raises(TypeError, match="masked_fill: mask must be boolean"):
        Tensor(np.ones(3)).masked_fill(np.array([1, 0, 1]), 0.0)


# ---------------------------------------------------------------- dtypes
@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.exp(),
        lambda x: x.sigmoid(),
        lambda x: x * x,
        lambda x: x / 3,
        lambda x: x**1.5,
        lambda x: 2**x,
        lambda x: engine.log(x, 2.0),
    ],
)
def test_float32_in_float32_out_and_float32_gradient(fn):
    x = Tensor(np.array([0.5, 1.5, 2.0], dtype=np.float32), requires_grad=True)
    out = fn(x)
    assert out.dtype == np.float32
    out.backward(np.ones(3, dtype=np.float32))
    assert x.grad.dtype == np.float32


@pytest.mark.parametrize(
    "fn, torch_fn",
    [
        (lambda t: engine.where(t > 0, t, 0), lambda t: require_torch().where(t > 0, t, 0)),
        (lambda t: engine.where(t > 0, 0.5, t), lambda t: require_torch().where(t > 0, 0.5, t)),
        (lambda t: engine.where(t > 0, t, np.float64(0)), lambda t: require_torch().where(t > 0, t, np.float64(0))),
        (lambda t: engine.maximum(t, 0), lambda t: require_torch().clamp(t, min=0)),
        (lambda t: t.clamp(np.float64(0), np.float64(1)), lambda t: t.clamp(np.float64(0), np.float64(1))),
        (lambda t: engine.minimum(np.float64(0.5), t), lambda t: require_torch().clamp(t, max=0.5)),
    ],
    ids=[
        "where_int_zero",
        "where_float_left",
        "where_numpy_scalar",
        "maximum_int",
        "clamp_numpy_scalars",
        "minimum_numpy_scalar_left",
    ],
)
def test_free_functions_with_numbers_keep_float32(fn, torch_fn):
    torch = require_torch()
    x = np.array([-1.0, 0.25, 2.0], dtype=np.float32)
    ours, theirs = fn(Tensor(x, requires_grad=True)), torch_fn(torch.tensor(x))
    assert ours.dtype == np.float32 and theirs.dtype == torch.float32
    np.testing.assert_array_equal(ours.data, theirs.numpy())


# ---------------------------------------------------------------- issue 27: % and //
def test_remainder_and_floor_divide_match_torch():
    torch = require_torch()
    a, b = np.array([5.5, -3.2, 7.0, -7.3]), np.array([2.0, 1.5, -2.5, -2.0])  # no a/b integer (a jump)
    check_op(lambda x, y: x % y, SAME, [a, b])
    check_op(lambda x: x % 1.5, SAME, [a])
    oracle(lambda x: 10.0 % x, SAME, [b], grad=False)  # torch has no gradient for a number % tensor
    for ours, theirs in (
        (Tensor(a) // Tensor(b), torch.tensor(a) // torch.tensor(b)),
        (engine.tensor([7, -7]) // 2, torch.tensor([7, -7]) // 2),
        (engine.tensor([7, -7]) % 3, torch.tensor([7, -7]) % 3),
        (7 // engine.tensor([2, -3]), 7 // torch.tensor([2, -3])),
    ):
        assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch."))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not (Tensor(a, requires_grad=True) // 2).requires_grad  # a step function: no gradient (listed)
    with pytest.raises(RuntimeError, match="remainder: ZeroDivisionError"):
        engine.tensor([3]) % 0

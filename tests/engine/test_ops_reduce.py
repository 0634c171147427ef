"""Reductions: sum, mean, var, std, max/min, amax/amin, argmax/argmin, prod, and the fused, stable
logsumexp / softmax / log_softmax; with and without ``dim``, ``keepdim``, ties and extremes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import require_torch
from torch_compare import SAME, check_op, draw, oracle

import engine
from engine import Tensor

pytestmark = pytest.mark.oracle

SHAPE = (3, 4, 2)

# (id, fn with identical spelling in engine and torch)
REDUCTIONS = [
    ("sum_all", lambda x: x.sum()),
    ("sum_dim", lambda x: x.sum(dim=1)),
    ("sum_negative_dim", lambda x: x.sum(dim=-1)),
    ("sum_dims_keepdim", lambda x: x.sum(dim=(0, 2), keepdim=True)),
    ("mean_all", lambda x: x.mean()),
    ("mean_dim_keepdim", lambda x: x.mean(dim=0, keepdim=True)),
    ("mean_dims", lambda x: x.mean(dim=(1, 2))),
    ("var_all_unbiased", lambda x: x.var()),
    ("var_dim", lambda x: x.var(dim=1)),
    ("var_dim_biased", lambda x: x.var(dim=1, unbiased=False)),
    ("var_correction0_keepdim", lambda x: x.var(dim=(0, 2), keepdim=True, correction=0)),
    ("var_correction2", lambda x: x.var(dim=1, correction=2)),
    ("std_all", lambda x: x.std()),
    ("std_dim", lambda x: x.std(dim=-1)),
    ("std_correction0", lambda x: x.std(dim=(0, 1), correction=0)),
    ("std_biased_keepdim", lambda x: x.std(dim=0, unbiased=False, keepdim=True)),
    ("max_all", lambda x: x.max()),
    ("min_all", lambda x: x.min()),
    ("max_dim_values", lambda x: x.max(dim=1).values),
    ("max_dim_keepdim", lambda x: x.max(dim=-1, keepdim=True)[0]),
    ("min_dim_values", lambda x: x.min(dim=0).values),
    ("amax_dims", lambda x: x.amax(dim=(0, 2))),
    ("amax_keepdim", lambda x: x.amax(dim=1, keepdim=True)),
    ("amin_dim", lambda x: x.amin(dim=-1)),
    ("prod_all", lambda x: x.prod()),
    ("prod_dim", lambda x: x.prod(dim=1)),
    ("prod_dim_keepdim", lambda x: x.prod(dim=-1, keepdim=True)),
    ("logsumexp", lambda x: x.logsumexp(dim=1)),
    ("logsumexp_keepdim", lambda x: x.logsumexp(dim=-1, keepdim=True)),
    ("softmax_last", lambda x: x.softmax(dim=-1)),
    ("softmax_middle", lambda x: x.softmax(dim=1)),
    ("log_softmax_last", lambda x: x.log_softmax(dim=-1)),
    ("log_softmax_first", lambda x: x.log_softmax(dim=0)),
]


@pytest.mark.parametrize("name, fn", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction_matches_torch_and_gradcheck(name, fn):
    x = draw(SHAPE, seed=11)  # continuous draws: no ties
    check_op(fn, SAME, [x])


def test_reductions_of_a_0d_and_1d_tensor():
    check_op(lambda x: x.sum(), SAME, [np.array(1.5)])
    check_op(lambda x: x.mean(dim=0), SAME, [draw((5,), seed=12)])
    check_op(lambda x: x.softmax(dim=0), SAME, [draw((5,), seed=13)])


# ---------------------------------------------------------------- ties (torch only)
TIES = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 1.0], [0.0, -1.0, 0.0, 0.0]])


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.max(),
        lambda x: x.min(),  # the whole tensor: split evenly among the ties
        lambda x: x.amax(dim=1),
        lambda x: x.amin(dim=1),
        lambda x: x.amax(dim=(0, 1)),
        lambda x: x.max(dim=1).values,
        lambda x: x.min(dim=1).values,  # along a dim: the returned index
    ],
    ids=["max", "min", "amax_dim", "amin_dim", "amax_all", "max_dim", "min_dim"],
)
def test_ties_share_the_gradient_like_torch(fn):
    oracle(fn, SAME, [TIES])


def test_max_tie_values():
    x = Tensor(TIES, requires_grad=True)
    x.amax(dim=1).backward(np.array([6.0, 6.0, 6.0]))
    np.testing.assert_allclose(x.grad.numpy()[0], [0, 3, 3, 0])  # two tied maxima: half each
    np.testing.assert_allclose(x.grad.numpy()[1], [2, 2, 2, 0])
    x.grad = None
    x.max(dim=1).values.backward(np.ones(3))
    np.testing.assert_allclose(x.grad.numpy().sum(axis=1), [1, 1, 1])  # exactly one element per row


INDEX_CASES = [
    (op, dim, keepdim)
    for op in ("argmax", "argmin", "max", "min")
    for dim, keepdim in ((None, False), (0, False), (1, True), (-1, False))
    if not (dim is None and op in ("max", "min"))
]  # max() without dim is a value


@pytest.mark.parametrize("op, dim, keepdim", INDEX_CASES)
def test_indices_match_torch(op, dim, keepdim):
    torch = require_torch()
    x = draw((4, 5), seed=14)
    x[1, 2] = x[1, 4] = x.max() + 1  # a tie: both give the first index
    t = torch.tensor(x)
    if op in ("max", "min"):
        got = getattr(Tensor(x), op)(dim=dim, keepdim=keepdim)
        want = getattr(t, op)(dim=dim, keepdim=keepdim)
        np.testing.assert_array_equal(got.indices.data, want.indices.numpy())
        np.testing.assert_array_equal(got.values.data, want.values.numpy())
        assert got.values.shape == tuple(want.values.shape)
        return
    got = getattr(Tensor(x), op)(dim=dim, keepdim=keepdim)
    want = getattr(t, op)(dim=dim, keepdim=keepdim) if dim is not None else getattr(t, op)()
    np.testing.assert_array_equal(got.data, want.numpy())
    assert got.data.dtype == np.int64 and not got.requires_grad


# ---------------------------------------------------------------- prod with zeros
@pytest.mark.parametrize(
    "x",
    [
        np.array([2.0, 0.0, 3.0, -1.5]),
        np.array([0.0, 2.0, 0.0, 3.0]),
        np.array([[1.0, 0.0, 3.0], [2.0, -3.0, 4.0], [0.0, 0.0, 5.0]]),
    ],
    ids=["one_zero", "two_zeros", "matrix"],
)
def test_prod_with_zeros_matches_torch(x):
    oracle(lambda t: t.prod(), SAME, [x])
    oracle(lambda t: t.prod(dim=-1), SAME, [x])
    oracle(lambda t: t.prod(dim=0, keepdim=True), SAME, [x])
    check_op(lambda t: t.prod(dim=-1), SAME, [x])  # prod is a polynomial: central differences are exact


def test_prod_gradient_with_one_zero_is_the_product_of_the_others():
    x = Tensor(np.array([2.0, 0.0, 3.0]), requires_grad=True)
    x.prod().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 6.0, 0.0])


# ---------------------------------------------------------------- extremes of the fused ops
EXTREME = np.array([[1e4, -1e4, 0.0, 3.0], [-1e4, -1e4, -1e4, -1e4], [1e4, 1e4, -3.0, 2.0]])


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.logsumexp(dim=1),
        lambda x: x.softmax(dim=1),
        lambda x: x.log_softmax(dim=1),
        lambda x: x.logsumexp(dim=0, keepdim=True),
        lambda x: x.softmax(dim=0),
        lambda x: x.log_softmax(dim=0),
    ],
    ids=["logsumexp", "softmax", "log_softmax", "logsumexp_dim0", "softmax_dim0", "log_softmax_dim0"],
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fused_ops_stay_finite_at_plus_minus_1e4(fn, dtype):
    torch = require_torch()
    x = Tensor(EXTREME.astype(dtype), requires_grad=True)
    t = torch.tensor(EXTREME.astype(dtype), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning either
        out = fn(x)
        g = np.random.default_rng(0).standard_normal(out.shape).astype(dtype)
        out.backward(g)
    ref = fn(t)
    ref.backward(torch.tensor(g))
    assert np.all(np.isfinite(out.data)) and np.all(np.isfinite(x.grad.numpy()))
    assert out.dtype == dtype and x.grad.dtype == dtype
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == np.float64 else dict(rtol=1e-6, atol=1e-3)
    np.testing.assert_allclose(out.data, ref.detach().numpy(), **tol)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), **tol)


def test_softmax_with_a_masked_minus_infinity_entry():
    x = np.array([[0.5, -np.inf, 1.0], [2.0, 0.0, -np.inf]])
    out, _ = oracle(lambda t: t.softmax(dim=-1), SAME, [x])
    assert out.data[0, 1] == 0.0 and np.all(np.isfinite(out.data))
    oracle(lambda t: t.logsumexp(dim=-1), SAME, [x])


def test_logsumexp_of_an_all_minus_infinity_row_is_minus_infinity_without_warnings():
    x = np.array([[-np.inf, -np.inf], [0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, _ = oracle(lambda t: t.logsumexp(dim=1), SAME, [x])  # its gradient is NaN in both
    assert out.data[0] == -np.inf


def test_softmax_rows_sum_to_one_and_gradient_of_the_sum_is_zero():
    x = Tensor(draw((3, 5), seed=15), requires_grad=True)
    s = x.softmax(dim=1)
    np.testing.assert_allclose(s.data.sum(axis=1), 1.0, rtol=1e-15)
    s.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 0.0, atol=1e-15)


# ---------------------------------------------------------------- errors and dtypes
def test_var_without_degrees_of_freedom_is_a_clear_error():
    with pytest.raises(ValueError, match=r"var: 1 element\(s\) with correction=1"):
        Tensor(np.ones((3, 1))).var(dim=1)
    Tensor(np.ones((3, 1))).var(dim=1, correction=0)  # fine


def test_max_of_an_empty_tensor_is_a_clear_error():
    with pytest.raises(ValueError, match=r"max: the tensor is empty \(shape \(0, 3\)\)"):
        Tensor(np.ones((0, 3))).max()


@pytest.mark.parametrize("method", ["sum", "mean", "amax", "softmax", "logsumexp", "prod", "argmax"])
def test_dim_out_of_range_names_the_op(method):
    with pytest.raises(IndexError, match=rf"{method}: dim 2 is out of range for a tensor with 2 dimension"):
        getattr(Tensor(np.ones((2, 3))), method)(dim=2)


def test_mean_of_an_integer_tensor_is_a_type_error():
    with pytest.raises(TypeError, match="mean: needs a floating-point tensor"):
        Tensor(np.arange(4)).mean()


def test_integer_sum_stays_integer_like_torch():
    torch = require_torch()
    x = np.arange(6).reshape(2, 3)
    got = Tensor(x).sum(dim=0)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.data, torch.tensor(x).sum(dim=0).numpy())


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.sum(),
        lambda x: x.mean(dim=0),
        lambda x: x.var(),
        lambda x: x.softmax(0),
        lambda x: x.logsumexp(0),
        lambda x: x.prod(),
        lambda x: x.amax(),
    ],
)
def test_float32_reductions_keep_float32(fn):
    x = Tensor(np.array([0.5, 1.5, 2.0], dtype=np.float32), requires_grad=True)
    out = fn(x)
    assert out.dtype == np.float32
    out.backward(np.ones(out.shape, dtype=np.float32))
    assert x.grad.dtype == np.float32


def test_reduction_results_carry_a_gradient_only_when_asked():
    x = Tensor(np.ones(3))
    assert not x.sum().requires_grad
    with engine.no_grad():
        assert not Tensor(np.ones(3), requires_grad=True).mean().requires_grad


# ---------------------------------------------------------------- issue 27: scans, norm, any/all
@pytest.mark.parametrize(
    "name, fn",
    [
        ("cumsum_dim1", lambda x: x.cumsum(1)),
        ("cumsum_dim0", lambda x: x.cumsum(dim=0)),
        ("cumprod_dim1", lambda x: x.cumprod(1)),
        ("cumprod_dim_neg", lambda x: x.cumprod(-2)),
        ("norm", lambda x: x.norm()),
        ("norm_dim", lambda x: x.norm(dim=1)),
        ("norm_p1_keepdim", lambda x: x.norm(p=1, dim=0, keepdim=True)),
        ("norm_p3", lambda x: x.norm(p=3, dim=1)),
    ],
)
def test_scans_and_norms_match_torch(name, fn):
    check_op(fn, SAME, [draw((3, 4), seed=41)])


def test_cumprod_gradient_with_zeros_and_norm_gradient_at_zero_match_torch():
    a = np.array([[2.0, 0.0, 3.0, 0.5], [0.0, 0.0, 1.5, -2.0], [1.0, -1.0, 0.0, 4.0]])
    oracle(lambda x: x.cumprod(1), SAME, [a])  # exact where 0/0 would appear
    z = np.zeros((2, 3))
    z[1] = [3.0, -4.0, 0.0]
    oracle(lambda x: x.norm(dim=1), SAME, [z])  # 0 for the all-zero row, as torch
    oracle(lambda x: x.norm(), SAME, [np.zeros(3)])


def test_any_and_all_along_a_dim_match_torch():
    torch = require_torch()
    a = np.array([[0, 1, 0], [0, 0, 0]])
    for method in ("any", "all"):
        for kw in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}):
            ours, theirs = getattr(engine.tensor(a), method)(**kw), getattr(torch.tensor(a), method)(**kw)
            assert ours.dtype == np.bool_ and ours.shape == tuple(theirs.shape)
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

"""engine.functional activations against torch.nn.functional, gradcheck, and extreme inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import require_torch
from torch_compare import check_op, draw, oracle

import engine.functional as F
from engine import Tensor

pytestmark = pytest.mark.oracle


def TF():
    return require_torch().nn.functional


# (id, engine fn, torch fn, domain)
ACTIVATIONS = [
    ("relu", F.relu, lambda x: TF().relu(x), "away"),
    ("leaky_relu_default", F.leaky_relu, lambda x: TF().leaky_relu(x), "away"),
    ("leaky_relu_0.2", lambda x: F.leaky_relu(x, 0.2), lambda x: TF().leaky_relu(x, 0.2), "away"),
    (
        "leaky_relu_keyword",
        lambda x: F.leaky_relu(x, negative_slope=0.3),
        lambda x: TF().leaky_relu(x, negative_slope=0.3),
        "away",
    ),
    ("sigmoid", F.sigmoid, lambda x: require_torch().sigmoid(x), "normal"),
    ("tanh", F.tanh, lambda x: require_torch().tanh(x), "normal"),
    ("gelu_exact", F.gelu, lambda x: TF().gelu(x), "normal"),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), lambda x: TF().gelu(x, approximate="tanh"), "normal"),
    ("silu", F.silu, lambda x: TF().silu(x), "normal"),
    ("softplus", F.softplus, lambda x: TF().softplus(x), "normal"),
    ("softplus_beta", lambda x: F.softplus(x, beta=2.5), lambda x: TF().softplus(x, beta=2.5), "normal"),
    ("elu", F.elu, lambda x: TF().elu(x), "away"),
    ("elu_alpha", lambda x: F.elu(x, alpha=0.7), lambda x: TF().elu(x, alpha=0.7), "away"),
    ("logsigmoid", F.logsigmoid, lambda x: TF().logsigmoid(x), "normal"),
    ("softmax", lambda x: F.softmax(x, dim=1), lambda x: TF().softmax(x, dim=1), "normal"),
    ("log_softmax", lambda x: F.log_softmax(x, dim=0), lambda x: TF().log_softmax(x, dim=0), "normal"),
]


@pytest.mark.parametrize("name, fn, torch_fn, domain", ACTIVATIONS, ids=[r[0] for r in ACTIVATIONS])
def test_activation_matches_torch_and_gradcheck(name, fn, torch_fn, domain):
    check_op(fn, torch_fn, [draw((3, 5), domain, seed=41) * 2.0])


def test_softmax_without_dim_warns_as_torch_and_takes_the_last_dim():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        check_op(F.softmax, lambda x: TF().softmax(x, dim=-1), [draw((3, 5), "normal", seed=41) * 2.0])


def test_gelu_on_a_wide_range_including_the_erfc_switch_point():
    """The exact GELU uses two erf expansions switching at |x/√2| = 2.5 (x ≈ 3.54)."""
    x = np.concatenate([np.linspace(-9, 9, 37), [-3.5355, -3.5356, 3.5355, 3.5356]])
    oracle(F.gelu, lambda t: TF().gelu(t), [x], rtol=1e-12, atol=1e-15)


def test_float32_gelu_sums_fewer_series_terms_and_keeps_float32s_precision():
    """A float32 GELU stops its erf series at float32's precision: it must still round to the
    float64 GELU's float32 value within one rounding step, the left tail (where erfc = 1 − erf
    cancels, down to x ≈ −3.54) included."""
    x = np.concatenate([np.linspace(-9, 9, 2001), [-3.5355, -3.5356, 3.5355, 3.5356]]).astype(np.float32)
    exact = F.gelu(Tensor(x.astype(np.float64))).numpy().astype(np.float32)
    fast = F.gelu(Tensor(x)).numpy()
    assert fast.dtype == np.float32
    ulp = np.spacing(np.abs(exact))
    assert np.all(np.abs(fast - exact) <= ulp), np.max(np.abs(fast - exact) / ulp)


def test_float32_normal_cdf_fit_is_a_hundredth_of_a_float32_rounding_step():
    """The float32 GELU's Φ (a polynomial in t = 2/(2 + |z|) fitted to the float64 expansions)
    agrees with the float64 Φ to 1e-9 relative, down the left tail to where float32's Φ is 0."""
    from engine.ops import special

    x = np.concatenate([np.linspace(-14.5, 14.5, 200_001), [0.0, -0.0]])
    fast, exact = special.normal_cdf(x, precision=np.float32), special.normal_cdf(x)
    assert np.max(np.abs(fast / exact - 1)) < 1e-9


def test_kinks_at_zero_match_torch():
    x = np.array([-1.0, 0.0, 0.0, 1.0])
    for fn, torch_fn in [
        (F.relu, lambda t: TF().relu(t)),
        (F.leaky_relu, lambda t: TF().leaky_relu(t)),
        (F.elu, lambda t: TF().elu(t)),
    ]:
        oracle(fn, torch_fn, [x])


def test_swiglu_matches_torch_composition():
    x, w_gate, w_up = draw((4, 3), seed=42), draw((3, 5), seed=43), draw((3, 5), seed=44)

    def torch_swiglu(x, wg, wu):
        return TF().silu(x @ wg) * (x @ wu)

    check_op(F.swiglu, torch_swiglu, [x, w_gate, w_up])
    check_op(F.swiglu, torch_swiglu, [draw((2, 4, 3), seed=45), w_gate, w_up])


def test_swiglu_shape_mismatch():
    with pytest.raises(ValueError, match=r"swiglu: w_gate \(3, 5\) and w_up \(3, 4\)"):
        F.swiglu(Tensor(np.ones((2, 3))), Tensor(np.ones((3, 5))), Tensor(np.ones((3, 4))))


def test_tensor_methods_equal_the_functions():
    x = Tensor(draw((2, 3), seed=46))
    for method, fn in [("relu", F.relu), ("sigmoid", F.sigmoid), ("tanh", F.tanh)]:
        np.testing.assert_array_equal(getattr(x, method)().data, fn(x).data)
    np.testing.assert_array_equal(x.softmax(1).data, F.softmax(x, 1).data)
    np.testing.assert_array_equal(x.log_softmax(1).data, F.log_softmax(x, 1).data)


# ---------------------------------------------------------------- extremes
EXTREMES = np.array([-1000.0, -100.0, -30.0, -1.0, 0.0, 1.0, 30.0, 100.0, 1000.0])
EXTREME_ROWS = [
    ("sigmoid", F.sigmoid, lambda x: require_torch().sigmoid(x)),
    ("softplus", F.softplus, lambda x: TF().softplus(x)),
    ("silu", F.silu, lambda x: TF().silu(x)),
    ("gelu", F.gelu, lambda x: TF().gelu(x)),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), lambda x: TF().gelu(x, approximate="tanh")),
    ("tanh", F.tanh, lambda x: require_torch().tanh(x)),
    ("elu", F.elu, lambda x: TF().elu(x)),
    ("logsigmoid", F.logsigmoid, lambda x: TF().logsigmoid(x)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name, fn, torch_fn", EXTREME_ROWS, ids=[r[0] for r in EXTREME_ROWS])
def test_extreme_inputs_stay_finite_and_match_torch(name, fn, torch_fn, dtype):
    torch = require_torch()
    x = Tensor(EXTREMES.astype(dtype), requires_grad=True)
    t = torch.tensor(EXTREMES.astype(dtype), requires_grad=True)
    g = np.random.default_rng(0).standard_normal(EXTREMES.shape).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow/underflow RuntimeWarning either
        out = fn(x)
        out.backward(g)
    ref = torch_fn(t)
    ref.backward(torch.tensor(g))
    assert np.all(np.isfinite(out.data)) and np.all(np.isfinite(x.grad.numpy()))
    assert out.dtype == dtype and x.grad.dtype == dtype
    # torch's softplus returns x itself once βx > 20 (threshold): 1e-9 apart from the exact value
    rtol = 1e-8 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=rtol, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=1e-12)


def test_sigmoid_saturates_exactly():
    out = F.sigmoid(Tensor(np.array([-1000.0, 1000.0])))
    assert out.data[0] >= 0.0 and out.data[1] == 1.0
    assert F.softplus(Tensor(np.array([1000.0]))).data[0] == 1000.0


def test_activation_errors():
    x = Tensor(np.ones(3))
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh'"):
        F.gelu(x, approximate="erf")
    with pytest.raises(ValueError, match="softplus: beta must be positive"):
        F.softplus(x, beta=0)


def test_activations_accept_numpy_arrays():
    out = F.relu(np.array([-1.0, 2.0]))
    assert isinstance(out, Tensor) and not out.requires_grad
    np.testing.assert_array_equal(out.data, [0.0, 2.0])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_of_a_0d_tensor_matches_torch(approximate, dtype):
    """A 0-d input took a path where NumPy returns scalars, and the exact GELU's series raised
    a bare TypeError from np.exp(out=...)."""
    torch = require_torch()
    for value in (-4.0, -0.75, 0.0, 1.3, 2.7):
        x = Tensor(np.asarray(value, dtype=dtype), requires_grad=True)
        y = F.gelu(x, approximate=approximate)
        y.backward()
        t = torch.tensor(value, dtype=getattr(torch, dtype), requires_grad=True)
        z = torch.nn.functional.gelu(t, approximate=approximate)
        z.backward()
        # float32: torch computes ½x(1 + erf(x/√2)), whose left tail cancels to ~1e-7 absolute
        rtol, atol = (1e-12, 1e-15) if dtype == "float64" else (1e-6, 1e-7)
        assert y.shape == () and x.grad.shape == ()
        np.testing.assert_allclose(y.item(), z.item(), rtol=rtol, atol=atol)
        np.testing.assert_allclose(x.grad.item(), t.grad.item(), rtol=rtol, atol=atol)

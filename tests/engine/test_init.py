"""nn.init: the variances of He/Kaiming and Xavier (checked statistically), gains and fans as PyTorch.

For N independent draws with variance σ², the sample variance has standard deviation
σ²·√(2/(N − 1)) for a normal and σ²·√(0.8/N) for a uniform (fourth moment 9σ⁴/5); each check
allows 5 of those standard deviations.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracle import require_torch

import engine
from engine import nn
from engine.nn import init

Z = 5.0


def _check_variance(values, expected, kind):
    n = values.size
    rel_sd = math.sqrt(2.0 / (n - 1)) if kind == "normal" else math.sqrt(0.8 / n)
    assert abs(values.var() - expected) < Z * rel_sd * expected, (values.var(), expected)
    assert abs(values.mean()) < Z * math.sqrt(expected / n)


def _weight(*shape):
    return engine.zeros(*shape, dtype="float64")


@pytest.mark.parametrize("shape", [(400, 300), (64, 32, 3, 3)])
@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
def test_kaiming_normal_relu_is_he(shape, mode):
    engine.manual_seed(0)
    w = _weight(*shape)
    init.kaiming_normal_(w, mode=mode, nonlinearity="relu")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    fan = (shape[1] if mode == "fan_in" else shape[0]) * receptive
    _check_variance(w.data, 2.0 / fan, "normal")  # He: 2/n


@pytest.mark.parametrize(
    "nonlinearity,a,gain2",
    [
        ("relu", 0, 2.0),
        ("leaky_relu", 0, 2.0),
        ("leaky_relu", 0.2, 2 / 1.04),
        ("tanh", 0, 25 / 9),
        ("linear", 0, 1.0),
        ("sigmoid", 0, 1.0),
    ],
)
def test_kaiming_uniform_variance_and_bound(nonlinearity, a, gain2):
    engine.manual_seed(1)
    w = _weight(300, 500)
    init.kaiming_uniform_(w, a=a, nonlinearity=nonlinearity)
    var = gain2 / 500
    _check_variance(w.data, var, "uniform")
    bound = math.sqrt(3 * var)
    assert np.abs(w.data).max() <= bound and np.abs(w.data).max() > 0.99 * bound


def test_kaiming_default_is_relu_gain():
    engine.manual_seed(2)
    w = _weight(200, 400)
    init.kaiming_normal_(w)  # PyTorch's defaults: a=0, leaky_relu -> gain √2
    _check_variance(w.data, 2.0 / 400, "normal")


@pytest.mark.parametrize("shape", [(300, 500), (32, 16, 5, 5)])
@pytest.mark.parametrize("gain", [1.0, 5 / 3])
def test_xavier_variances(shape, gain):
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    var = gain**2 * 2.0 / ((shape[0] + shape[1]) * receptive)  # gain²·2/(n_in + n_out)
    engine.manual_seed(3)
    w = _weight(*shape)
    init.xavier_normal_(w, gain=gain)
    _check_variance(w.data, var, "normal")
    init.xavier_uniform_(w, gain=gain)
    _check_variance(w.data, var, "uniform")
    assert np.abs(w.data).max() <= math.sqrt(3 * var)


def test_normal_uniform_constant():
    engine.manual_seed(4)
    w = _weight(500, 200)
    init.normal_(w, mean=2.0, std=0.5)
    assert abs(w.data.mean() - 2.0) < Z * 0.5 / math.sqrt(w.data.size)
    _check_variance(w.data - 2.0, 0.25, "normal")
    init.uniform_(w, -3.0, 1.0)
    assert w.data.min() >= -3.0 and w.data.max() < 1.0
    _check_variance(w.data + 1.0, 16 / 12, "uniform")
    assert init.zeros_(w) is w and not w.data.any()
    init.ones_(w)
    assert np.all(w.data == 1.0)
    init.constant_(w, 0.25)
    assert np.all(w.data == 0.25)


def test_trunc_normal_stays_in_bounds():
    engine.manual_seed(5)
    w = _weight(100, 100)
    init.trunc_normal_(w, std=1.0, a=-1.0, b=1.5)
    assert w.data.min() >= -1.0 and w.data.max() <= 1.5 and w.data.std() > 0.3


def test_in_place_reproducible_and_dtype_kept():
    w = engine.zeros(20, 10)
    array = w.data
    engine.manual_seed(7)
    init.kaiming_uniform_(w)
    first = w.data.copy()
    engine.manual_seed(7)
    init.kaiming_uniform_(w)
    assert w.data is array and w.data.dtype == np.float32 and np.array_equal(w.data, first)


def test_linear_and_embedding_default_init():
    engine.manual_seed(8)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)  # kaiming_uniform_(a=√5) gives U(−1/√in, 1/√in)
    for p in (lin.weight, lin.bias):
        assert np.abs(p.data).max() <= bound
    _check_variance(lin.weight.data.astype(np.float64), bound**2 / 3, "uniform")
    emb = nn.Embedding(1000, 50)
    _check_variance(emb.weight.data.astype(np.float64), 1.0, "normal")


def test_gains_and_fans_match_torch():
    torch = require_torch()
    for name, param in [
        ("linear", None),
        ("sigmoid", None),
        ("tanh", None),
        ("relu", None),
        ("leaky_relu", None),
        ("leaky_relu", 0.3),
        ("selu", None),
        ("conv2d", None),
    ]:
        assert init.calculate_gain(name, param) == pytest.approx(torch.nn.init.calculate_gain(name, param), rel=1e-15)
    for shape in [(5, 3), (8, 4, 3, 3), (2, 6, 5), (7, 1, 2, 2, 2)]:
        ours = init._calculate_fan_in_and_fan_out(np.zeros(shape))
        theirs = torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))
        assert ours == tuple(theirs)


def test_errors():
    with pytest.raises(ValueError, match="at least 2 dims"):
        init.xavier_uniform_(engine.zeros(5))
    with pytest.raises(ValueError, match="mode"):
        init.kaiming_normal_(engine.zeros(3, 3), mode="fan_avg")
    with pytest.raises(ValueError, match="nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(TypeError, match="floating"):
        init.normal_(engine.Tensor(np.zeros((2, 2), dtype=np.int64)))
    with pytest.raises(ValueError, match="zero fan_in"):
        init.kaiming_uniform_(engine.zeros(3, 0))

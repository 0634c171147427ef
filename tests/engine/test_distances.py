"""engine.distances: energy distance and Gaussian-kernel MMD between sample sets.

Checked three ways: against the definitions written as plain double loops, against an independent
identity (in 1-D the energy distance is 2∫(F − G)² of the empirical CDFs), and against closed-form
population values for Gaussians (large samples, tolerance from the estimator's spread).
"""

import math

import numpy as np
import pytest

import engine
from engine import distances as D


def _loop_energy(x, y, unbiased):
    """The definition, literally: three means of Euclidean norms over pairs."""

    def mean_norm(a, b, skip_diagonal):
        values = [
            np.linalg.norm(a[i] - b[j]) for i in range(len(a)) for j in range(len(b)) if not (skip_diagonal and i == j)
        ]
        return float(np.mean(values))

    return 2 * mean_norm(x, y, False) - mean_norm(x, x, unbiased) - mean_norm(y, y, unbiased)


def _loop_mmd2(x, y, h, unbiased):
    def k(a, b):
        return math.exp(-float(np.sum((a - b) ** 2)) / (2 * h * h))

    def mean_k(a, b, skip_diagonal):
        values = [k(a[i], b[j]) for i in range(len(a)) for j in range(len(b)) if not (skip_diagonal and i == j)]
        return float(np.mean(values))

    return mean_k(x, x, unbiased) + mean_k(y, y, unbiased) - 2 * mean_k(x, y, False)


@pytest.mark.parametrize("unbiased", [False, True])
def test_energy_distance_matches_the_definition(unbiased):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(13, 3)), rng.normal(0.5, 1.5, size=(9, 3))
    assert D.energy_distance(x, y, unbiased=unbiased) == pytest.approx(_loop_energy(x, y, unbiased), rel=1e-10)


@pytest.mark.parametrize("unbiased", [False, True])
def test_mmd_matches_the_definition(unbiased):
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(11, 2)), rng.normal(1.0, 0.5, size=(8, 2))
    got = D.mmd_squared(x, y, bandwidth=0.7, unbiased=unbiased)
    assert got == pytest.approx(_loop_mmd2(x, y, 0.7, unbiased), rel=1e-10)
    # a list of bandwidths sums the kernels
    both = D.mmd_squared(x, y, bandwidth=[0.7, 2.0], unbiased=unbiased)
    assert both == pytest.approx(_loop_mmd2(x, y, 0.7, unbiased) + _loop_mmd2(x, y, 2.0, unbiased), rel=1e-10)


def test_energy_distance_in_1d_is_twice_the_cdf_l2_distance():
    """Cramér's identity for empirical CDFs F, G: 2·E|X−Y| − E|X−X'| − E|Y−Y'| = 2∫(F − G)²."""
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=40), rng.exponential(size=30)
    grid = np.sort(np.concatenate([x, y]))
    F = np.searchsorted(np.sort(x), grid[:-1], side="right") / len(x)
    G = np.searchsorted(np.sort(y), grid[:-1], side="right") / len(y)
    integral = float(np.sum((F - G) ** 2 * np.diff(grid)))
    assert D.energy_distance(x, y) == pytest.approx(2 * integral, rel=1e-10)


def _mean_abs_normal(m, s):
    """E|Z| for Z ~ N(m, s²) (folded normal)."""
    phi = 0.5 * (1 + math.erf(-m / (s * math.sqrt(2))))
    return s * math.sqrt(2 / math.pi) * math.exp(-m * m / (2 * s * s)) + m * (1 - 2 * phi)


def test_energy_distance_estimates_the_population_value_for_gaussians():
    """X ~ N(0, 1), Y ~ N(δ, 1): E = 2·E|N(δ, 2)| − 2·E|N(0, 2)|."""
    delta = 1.0
    exact = 2 * _mean_abs_normal(delta, math.sqrt(2)) - 2 * _mean_abs_normal(0.0, math.sqrt(2))
    rng = np.random.default_rng(3)
    estimates = [
        D.energy_distance(rng.normal(size=200), rng.normal(delta, size=200), unbiased=True) for _ in range(100)
    ]
    spread = np.std(estimates) / math.sqrt(len(estimates))
    assert abs(np.mean(estimates) - exact) < 4 * spread + 1e-3, (np.mean(estimates), exact, spread)


def test_mmd_estimates_the_population_value_for_gaussians():
    """N(0, σ²) vs N(δ, σ²), bandwidth h: E k(X, Y) = h/√(h² + 2σ²)·exp(−δ²/(2(h² + 2σ²)))."""
    sigma, delta, h = 1.0, 1.5, 1.0
    s2 = h * h + 2 * sigma * sigma
    exact = 2 * h / math.sqrt(s2) * (1 - math.exp(-delta * delta / (2 * s2)))
    rng = np.random.default_rng(4)
    estimates = [
        D.mmd_squared(rng.normal(0, sigma, size=200), rng.normal(delta, sigma, size=200), bandwidth=h, unbiased=True)
        for _ in range(100)
    ]
    spread = np.std(estimates) / math.sqrt(len(estimates))
    assert abs(np.mean(estimates) - exact) < 4 * spread + 1e-3, (np.mean(estimates), exact, spread)


def test_distances_grow_with_the_shift_and_vanish_for_identical_sets():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(300, 2))
    energies = [D.energy_distance(x, rng.normal(size=(300, 2)) + [shift, 0]) for shift in (0.0, 0.5, 1.0, 2.0)]
    mmds = [D.mmd(x, rng.normal(size=(300, 2)) + [shift, 0], bandwidth=1.0) for shift in (0.0, 0.5, 1.0, 2.0)]
    assert np.all(np.diff(energies) > 0) and np.all(np.diff(mmds) > 0)
    assert D.energy_distance(x, x) == pytest.approx(0.0, abs=1e-12)
    assert D.mmd(x, x) == pytest.approx(0.0, abs=1e-6)
    # the V-statistics are never negative
    assert min(energies) >= 0 and min(mmds) >= 0


def test_blocks_give_the_same_answer(monkeypatch):
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=(50, 2)), rng.normal(size=(37, 2))
    whole = (D.energy_distance(x, y), D.mmd_squared(x, y, bandwidth=0.5))
    monkeypatch.setattr(D, "_BLOCK_ROWS", 7)
    assert (D.energy_distance(x, y), D.mmd_squared(x, y, bandwidth=0.5)) == pytest.approx(whole, rel=1e-12)


def test_tensors_and_arrays_agree_and_the_median_heuristic():
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=(30, 2)).astype(np.float32), rng.normal(size=(20, 2))
    assert D.energy_distance(engine.Tensor(x), engine.Tensor(y)) == pytest.approx(D.energy_distance(x, y))
    pooled = np.concatenate([x, y]).astype(np.float64)
    distances = [np.linalg.norm(pooled[i] - pooled[j]) for i in range(50) for j in range(i + 1, 50)]
    assert D.median_bandwidth(x, y) == pytest.approx(float(np.median(distances)))
    assert D.mmd_squared(x, y) == pytest.approx(D.mmd_squared(x, y, bandwidth=float(np.median(distances))))
    assert D.median_bandwidth(np.zeros((5, 2))) == 1.0
    assert D.pairwise_distances(x, y).shape == (30, 20)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: D.energy_distance(np.zeros((3, 2)), np.zeros((3, 3))), "same dimension"),
        (lambda: D.energy_distance(np.zeros((0, 2)), np.zeros((3, 2))), "non-empty"),
        (lambda: D.energy_distance([[np.nan, 0.0]], np.zeros((3, 2))), "NaN"),
        (lambda: D.energy_distance(np.zeros((1, 2)), np.zeros((3, 2)), unbiased=True), "at least 2"),
        (lambda: D.mmd_squared(np.zeros((3, 2)), np.ones((3, 2)), bandwidth=0.0), "bandwidth"),
        (lambda: D.mmd_squared(np.zeros((3, 2)), np.ones((3, 2)), bandwidth=-1.0), "bandwidth"),
        (lambda: D.energy_distance(np.zeros((2, 2, 2)), np.zeros((3, 2))), "shape"),
    ],
)
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_non_numeric_input_is_a_type_error():
    with pytest.raises(TypeError, match="energy_distance"):
        D.energy_distance(np.array(["a", "b"]), np.zeros(2))
    with pytest.raises(TypeError, match="mmd_squared"):
        D.mmd_squared(np.zeros((3, 2)), np.ones((3, 2)), bandwidth="wide")


def test_far_apart_sets_give_finite_answers():
    x = np.full((4, 2), -1e150)
    y = np.full((4, 2), 1e150)
    assert np.isfinite(D.energy_distance(x, y))
    assert np.isfinite(D.mmd_squared(x, y))

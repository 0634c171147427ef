"""Distances between two sets of samples, to score a generative model against held-out data.

Both statistics compare distributions, not points: they are zero (in expectation) when the two
sets come from the same law, and grow as the laws drift apart. They take NumPy arrays or Tensors
of shape [N, D] (a 1-D array is N points in one dimension) and return Python floats; no gradient.

- ``energy_distance(x, y)``: Székely and Rizzo's energy distance
      E(P, Q) = 2·E‖X − Y‖ − E‖X − X'‖ − E‖Y − Y'‖,   X, X' ~ P,  Y, Y' ~ Q,
  zero if and only if P = Q. (``scipy.stats.energy_distance`` returns the square root of this, in 1-D.)
- ``mmd_squared(x, y, bandwidth)``: the squared maximum mean discrepancy with a Gaussian kernel
      k(a, b) = exp(−‖a − b‖² / (2h²)),
      MMD² = E k(X, X') + E k(Y, Y') − 2·E k(X, Y),
  and ``mmd`` its square root. ``bandwidth=None`` takes the median heuristic
  (h = median pairwise distance of the pooled sample).

Estimators: the default V-statistic averages over all pairs, including i = j (where ‖x_i − x_i‖ = 0
and k = 1); it is never negative but slightly biased. ``unbiased=True`` averages over i ≠ j only
(a U-statistic): unbiased, and it may dip below zero when P = Q.

Pairwise distances are computed in row blocks, so memory stays O(block · N) for large sets.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["pairwise_distances", "energy_distance", "mmd_squared", "mmd", "median_bandwidth"]

_BLOCK_ROWS = 1024


def _points(x, op: str, name: str) -> np.ndarray:
    """x as a float64 array [N, D] (Tensor -> .data; 1-D -> [N, 1]); refuses empty or non-finite input."""
    data = getattr(x, "data", None)
    arr = data if isinstance(data, np.ndarray) else np.asarray(x)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{op}: {name} must be numeric points [N, D], got dtype {arr.dtype}")
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{op}: {name} must be a non-empty array of points [N, D], got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{op}: {name} contains NaN or infinite values")
    return arr


def _point_sets(x, y, op: str, unbiased: bool) -> tuple[np.ndarray, np.ndarray]:
    x, y = _points(x, op, "x"), _points(y, op, "y")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"{op}: x and y must have the same dimension D, got shapes {x.shape} and {y.shape}")
    if unbiased and min(len(x), len(y)) < 2:
        raise ValueError(f"{op}: the unbiased estimate needs at least 2 points per set, got {len(x)} and {len(y)}")
    return x, y


def _squared_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """‖a_i − b_j‖² for all pairs via ‖a‖² + ‖b‖² − 2 a·b, clipped at 0 (round-off can go below)."""
    sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    return np.maximum(sq, 0.0)


def pairwise_distances(x, y=None) -> np.ndarray:
    """Euclidean distances ‖x_i − y_j‖, shape [N, M] (``y=None``: between the rows of x)."""
    a = _points(x, "pairwise_distances", "x")
    b = a if y is None else _points(y, "pairwise_distances", "y")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"pairwise_distances: dimensions differ, shapes {a.shape} and {b.shape}")
    return np.sqrt(_squared_distances(a, b))


def _pair_sum(a: np.ndarray, b: np.ndarray, kernel) -> float:
    """Σ_ij kernel(‖a_i − b_j‖²), computed in blocks of rows of a.

    When b is a (pairs within one set) the diagonal is set to exactly 0: the expanded form leaves
    round-off of order 1e-16·‖a_i‖² there, which a square root would blow up to 1e-8."""
    total = 0.0
    for start in range(0, len(a), _BLOCK_ROWS):
        sq = _squared_distances(a[start : start + _BLOCK_ROWS], b)
        if b is a:
            rows = np.arange(len(sq))
            sq[rows, rows + start] = 0.0
        total += float(kernel(sq).sum())
    return total


def _mean_within(a: np.ndarray, kernel, unbiased: bool, diagonal: float) -> float:
    """Mean of kernel over pairs of rows of a: all n² pairs, or the n(n − 1) pairs with i ≠ j."""
    n = len(a)
    total = _pair_sum(a, a, kernel)
    if unbiased:
        return (total - n * diagonal) / (n * (n - 1))
    return total / (n * n)


def energy_distance(x, y, unbiased: bool = False) -> float:
    """E = 2·mean‖x_i − y_j‖ − mean‖x_i − x_j‖ − mean‖y_i − y_j‖ (see the module docstring).

    ``unbiased=False`` (default) averages the within-set terms over all n² pairs (V-statistic,
    E ≥ 0); ``unbiased=True`` over the pairs i ≠ j.
    """
    x, y = _point_sets(x, y, "energy_distance", unbiased)
    between = _pair_sum(x, y, np.sqrt) / (len(x) * len(y))
    within_x = _mean_within(x, np.sqrt, unbiased, 0.0)
    within_y = _mean_within(y, np.sqrt, unbiased, 0.0)
    return 2.0 * between - within_x - within_y


def median_bandwidth(x, y=None) -> float:
    """The median heuristic: the median of the pairwise distances ‖z_i − z_j‖, i < j, of the
    pooled sample z = (x, y) (at most 1000 points, evenly spaced, to bound the cost); 1.0 when
    every point coincides."""
    z = _points(x, "median_bandwidth", "x")
    if y is not None:
        z = np.concatenate([z, _points(y, "median_bandwidth", "y")])
    if len(z) > 1000:
        z = z[np.linspace(0, len(z) - 1, 1000).astype(int)]
    upper = np.triu_indices(len(z), k=1)
    distances = np.sqrt(_squared_distances(z, z)[upper])
    median = float(np.median(distances)) if distances.size else 0.0
    return median if median > 0 else 1.0


def _bandwidths(bandwidth, x, y, op: str) -> np.ndarray:
    if bandwidth is None:
        return np.array([median_bandwidth(x, y)])
    values = np.atleast_1d(np.asarray(bandwidth, dtype=np.float64))
    if values.ndim != 1 or values.size == 0 or not (np.isfinite(values).all() and (values > 0).all()):
        raise ValueError(f"{op}: bandwidth must be a positive number or a list of them, got {bandwidth!r}")
    return values


def mmd_squared(x, y, bandwidth=None, unbiased: bool = False) -> float:
    """MMD² with the Gaussian kernel k(a, b) = exp(−‖a − b‖²/(2h²)) (see the module docstring).

    ``bandwidth``: h, a list of h values (the kernel is then the sum over them), or None for the
    median heuristic on the pooled sample. The V-statistic (default) is ≥ 0.
    """
    op = "mmd_squared"
    if isinstance(bandwidth, bool) or not (
        bandwidth is None or isinstance(bandwidth, numbers.Real) or np.ndim(bandwidth) == 1
    ):
        raise TypeError(f"{op}: bandwidth must be None, a number or a list of numbers, got {bandwidth!r}")
    x, y = _point_sets(x, y, op, unbiased)
    widths = _bandwidths(bandwidth, x, y, op)

    def kernel(sq):
        return sum(np.exp(-sq / (2.0 * h * h)) for h in widths)

    diagonal = float(len(widths))  # k(a, a) = 1 for each bandwidth
    between = _pair_sum(x, y, kernel) / (len(x) * len(y))
    return _mean_within(x, kernel, unbiased, diagonal) + _mean_within(y, kernel, unbiased, diagonal) - 2.0 * between


def mmd(x, y, bandwidth=None) -> float:
    """The maximum mean discrepancy √MMD² (V-statistic, Gaussian kernel; see ``mmd_squared``)."""
    return float(np.sqrt(max(mmd_squared(x, y, bandwidth=bandwidth, unbiased=False), 0.0)))

"""Special functions NumPy lacks, to double precision: erf, erfc and the normal CDF/PDF.

The exact GELU needs Φ(x) = ½·erfc(−x/√2). NumPy has no erf, and the engine may depend on NumPy
alone, so it is computed here from two classical expansions (no rational fits to copy):

* |x| < 2.5: erf(x) = (2/√π)·e^(−x²)·Σₙ 2ⁿ x^(2n+1) / (1·3·5···(2n+1)); every term is positive,
  so nothing cancels, and the sum stops once the next term is below 2⁻⁵⁶ of it for the largest
  |x| given (41 terms at |x| = 2.5, 20 at |x| = 1: the GELU of a layer costs what its inputs need);
* |x| ≥ 2.5: the continued fraction erfc(x) = e^(−x²)/√π · 1/(x + ½/(x + 1/(x + 3⁄2/(x + …)))),
  evaluated from the tail, which keeps erfc's tiny values to full relative precision.
"""

import numpy as np

_SQRT_PI = np.sqrt(np.pi)
_SERIES_MAX_TERMS = 60
_FRACTION_TERMS = 90
_SWITCH = 2.5


def _series_terms(x_max: float) -> int:
    """How many series terms bring erf to double precision for every |x| <= ``x_max``: the ratio
    of term n to the sum (at least x) is prod 2x²/(2k+1), largest at ``x_max``; stop once it is
    below 2⁻⁵⁶ and the terms shrink at least twofold (the rest then adds less than it)."""
    u, ratio = 2.0 * x_max * x_max, 1.0
    for n in range(1, _SERIES_MAX_TERMS):
        ratio *= u / (2 * n + 1)
        if ratio < 2.0 ** -56 and u / (2 * n + 3) < 0.5:
            return n + 1
    return _SERIES_MAX_TERMS


def _erf_series(x):
    term = x.copy()
    total = x.copy()
    two_x2 = 2.0 * x * x
    for n in range(1, _series_terms(float(np.max(np.abs(x))))):
        term *= two_x2 / (2 * n + 1)
        total += term
    return 2.0 / _SQRT_PI * np.exp(-x * x) * total


def _erfc_fraction(x):
    """erfc(x) for x ≥ 2.5 by the continued fraction (evaluated backwards)."""
    tail = x.copy()
    for n in range(_FRACTION_TERMS, 0, -1):
        tail = x + (n / 2.0) / tail
    return np.exp(-x * x) / (_SQRT_PI * tail)


def _by_region(x, series, fraction) -> np.ndarray:
    """``series(x)`` where |x| < 2.5, else ``fraction(x, erfc(|x|))`` from the continued fraction."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    small = np.abs(x) < _SWITCH
    if small.any():
        out[small] = series(x[small])
    large = ~small
    if large.any():
        out[large] = fraction(x[large], _erfc_fraction(np.abs(x[large])))
    return out


def erfc(x) -> np.ndarray:
    """Complementary error function 1 − erf(x), float64, accurate to ~1e-15 relative."""
    # erfc(−x) = 2 − erfc(x) on the left
    return _by_region(x, lambda s: 1.0 - _erf_series(s), lambda v, tail: np.where(v > 0, tail, 2.0 - tail))


def erf(x) -> np.ndarray:
    """Error function (2/√π)∫₀ˣ e^(−t²) dt, float64."""
    # erf is odd: erf(x) = sign(x)·(1 − erfc(|x|))
    return _by_region(x, _erf_series, lambda v, tail: np.sign(v) * (1.0 - tail))


def normal_cdf(x) -> np.ndarray:
    """Φ(x), the standard normal CDF, via erfc so that the far left tail keeps its precision."""
    return 0.5 * erfc(-np.asarray(x, dtype=np.float64) / np.sqrt(2.0))


def normal_pdf(x) -> np.ndarray:
    """φ(x) = e^(−x²/2)/√(2π)."""
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)

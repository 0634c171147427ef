"""What notebook 02 (losses) needs beside its lesson: data sets, the exact line fits, the shipped fits.

The lesson itself (the losses written out, the fitting loop, the fits it runs) is the notebook's
own ``@app.function`` cells; where a helper here needs one of them, the notebook passes it in, so
a learner's edited version is the one that runs.

- :func:`regression_curves`: a per-example loss against the residual e = ŷ − y, with ∂ℓ/∂ŷ by
  autograd through the page's loss and by the closed form of :data:`REGRESSION_LOSSES`.
- :func:`cross_entropy_report`: softmax, a label-smoothed target, the page's loss and ∂L/∂z = p − q.
- :func:`naive_vs_fused` and :func:`naive_breakdown`: −log(softmax(z)_y) computed naively (exp,
  divide, log) next to the fused ``F.cross_entropy``, as the logits grow.
- :func:`kl_both_ways`, the two-bump ``p`` and the grid of section 6; the default fits ship as the
  checkpoint ``losses_kl_fits``, made by the notebook's ``shipped_kl_fits``.
- :func:`margin_gradients`: why MSE on a sigmoid saturates while cross-entropy keeps pushing;
  :func:`margin_losses`: hinge beside logistic loss, and the gradient each leaves a point far on
  the right side of the boundary.
- :func:`make_line_data` and :func:`best_line`: the line that minimises MSE, MAE, Huber or
  pseudo-Huber while outliers pull on it, exactly (least squares, the best line through two
  points, reweighted least squares), in about a millisecond, so dragging a point refits at once.
- :func:`initial_loss`: the cross-entropy of an untrained K-class classifier, ≈ ln K.
- :func:`noisy_line`, :func:`constant_noise_fit`, :func:`weighted_line` and :func:`band_coverage`:
  data whose noise grows with x, the one-variance Gaussian fit, and how many points a band holds;
  the page's mean-and-variance fits ship as the checkpoint ``losses_noise_fits``.
- :func:`calibration_data` and :func:`softmax_probabilities`: the calibration example's three
  splits and its model's probabilities; the page's softmax regressions and their temperatures
  ship as the checkpoint ``losses_calibration``.
- The likelihood, class-frequency and imbalance sections open on fits shipped as the checkpoint
  ``losses_default_fits`` (the notebook's ``shipped_default_fits``): :func:`shipped_constant`,
  :func:`shipped_class_probabilities` and :func:`shipped_imbalance_run` read them.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

import engine.functional as F
from engine import Tensor
from engine.course import checkpoints
from engine.course.checkpoints import losses_calibration as _calibration_checkpoint
from engine.course.checkpoints import losses_default_fits as _defaults_checkpoint  # static imports: the
from engine.course.checkpoints import losses_kl_fits as _kl_checkpoint  # WebAssembly bundler follows only those
from engine.course.checkpoints import losses_line_fits as _line_checkpoint
from engine.course.checkpoints import losses_noise_fits as _noise_checkpoint

from ..plot import compact_chart as compact_chart  # re-exported: 02's charts send coded series names
from ._checks import is_default
from .activations import Curves
from .activations import parse_numbers as parse_numbers  # re-exported: 02 reads logits typed as text

# ----------------------------------------------------------------------------- regression losses


def _huber(e, delta):
    a = np.abs(e)
    return np.where(a <= delta, 0.5 * e * e, delta * (a - 0.5 * delta))


# The closed forms the page prints and checks autograd against: ℓ(e, δ) and ℓ'(e, δ).
REGRESSION_LOSSES = {
    "mse": dict(label="MSE (L2)", formula=r"e^2", grad=r"2e", f=lambda e, d: e * e, df=lambda e, d: 2 * e),
    "mae": dict(
        label="MAE (L1)",
        formula=r"|e|",
        grad=r"\operatorname{sign}(e)",
        f=lambda e, d: np.abs(e),
        df=lambda e, d: np.sign(e),
    ),
    "huber": dict(
        label="Huber",
        formula=r"\begin{cases}\tfrac12 e^2 & |e|\le\delta\\ \delta(|e|-\tfrac12\delta) & |e|>\delta\end{cases}",
        grad=r"\begin{cases}e & |e|\le\delta\\ \delta\,\operatorname{sign}(e) & |e|>\delta\end{cases}",
        f=_huber,
        df=lambda e, d: np.clip(e, -d, d),
    ),
    "pseudo_huber": dict(
        label="pseudo-Huber",
        formula=r"\delta^2\left(\sqrt{1+(e/\delta)^2}-1\right)",
        grad=r"\frac{e}{\sqrt{1+(e/\delta)^2}}",
        f=lambda e, d: d * d * (np.sqrt(1 + (e / d) ** 2) - 1),
        df=lambda e, d: e / np.sqrt(1 + (e / d) ** 2),
    ),
}


def _check(name, table):
    if name not in table:
        raise ValueError(f"losses lab: unknown loss {name!r}; choose one of {', '.join(table)}")


def regression_curves(loss, name: str, e, delta: float = 1.0) -> Curves:
    """ℓ(e) and ∂ℓ/∂ŷ for residuals e = ŷ − y (target 0): the page's per-example ``loss(ŷ, y)`` (its
    δ bound) through autograd, and the closed forms of :data:`REGRESSION_LOSSES` ``[name]`` at δ."""
    _check(name, REGRESSION_LOSSES)
    if not delta > 0:
        raise ValueError(f"regression_curves: delta must be positive, got {delta}")
    spec = REGRESSION_LOSSES[name]
    e = np.asarray(e, dtype=np.float64)
    t = Tensor(e, requires_grad=True)
    target = Tensor(np.zeros_like(e))
    value = loss(t, target)
    value.sum().backward()  # one residual per example: the sum's gradient is each ℓ'(e_i)
    return Curves(e, value.data.copy(), t.grad.numpy().copy(), spec["f"](e, delta), spec["df"](e, delta))


# ----------------------------------------------------------------------------- classification


@dataclass
class CrossEntropyReport:
    probs: np.ndarray
    target: np.ndarray  # the smoothed target distribution q
    loss: float
    grad_autograd: np.ndarray
    grad_formula: np.ndarray  # p − q


def cross_entropy_report(loss, logits, target: int, label_smoothing: float = 0.0) -> CrossEntropyReport:
    """One example scored by the page's ``loss(logits, target, label_smoothing)`` (L = −Σ q_k log
    softmax(z)_k with q = (1 − ε)·onehot(y) + ε/K), its gradient by autograd, and p − q."""
    z = np.asarray(logits, dtype=np.float64)
    k = len(z)
    if not isinstance(target, (int, np.integer)) or isinstance(target, bool):
        raise ValueError(f"cross_entropy_report: the target class must be an integer in [0, {k - 1}], got {target!r}")
    if not 0 <= target < k:
        raise ValueError(
            f"cross_entropy_report: there are only {k} classes (0 to {k - 1}), so class {target} "
            "does not exist; lower the true class y or add logits"
        )
    t = Tensor(z[None, :], requires_grad=True)
    value = loss(t, np.array([target]), label_smoothing=label_smoothing)
    value.backward()
    p = F.softmax(Tensor(z), dim=-1).data
    q = np.full(k, label_smoothing / k)
    q[target] += 1 - label_smoothing
    return CrossEntropyReport(p, q, float(value.data), t.grad.numpy()[0].copy(), p - q)


NAIVE_LOGITS = np.array([1.0, 0.0, -1.0])  # logits s·(1, 0, −1): class 0 most likely, class 2 least


def _check_naive(dtype, target):
    if dtype not in ("float32", "float64"):
        raise ValueError(f"naive_vs_fused: dtype must be 'float32' or 'float64', got {dtype!r}")
    if target not in (0, 1, 2):
        raise ValueError(f"naive_vs_fused: the target class must be 0, 1 or 2, got {target!r}")


def naive_cross_entropy(naive, scales, dtype: str = "float32", target: int = 2) -> np.ndarray:
    """The page's ``naive(z, y)`` (−log(exp(z_y) / Σ exp(z)) as written) for logits s·(1, 0, −1), in
    ``dtype`` (one row per scale), NumPy's overflow warnings silenced: they are what it shows.

    Two ways to fail: for the most likely class, exp(s) overflows (float32 past s ≈ 88.7, float64
    past ≈ 709.8) and the ratio is inf/inf = NaN; for the least likely one, p = e^{−s}/(e^{s} + …)
    underflows to 0 once e^{−2s} is below the smallest subnormal (float32: s ≈ 52) and −log 0 = +∞.
    """
    _check_naive(dtype, target)
    z = (np.asarray(scales, dtype=np.float64)[:, None] * NAIVE_LOGITS).astype(dtype)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return np.asarray(naive(z, np.full(len(z), target)), dtype=np.float64)


def naive_vs_fused(naive, scales, dtype: str = "float32", target: int = 2):
    """(naive, fused) cross-entropy of logits s·(1, 0, −1) against class ``target``, as s grows.

    fused: ``F.cross_entropy``, which subtracts the largest logit before the log-sum-exp, so no
    intermediate overflows or underflows: numerically stable (its float64 values agree with the
    closed form −z_y + log Σ e^{z} to ~1e-15 relative).
    """
    _check_naive(dtype, target)
    scales = np.asarray(scales, dtype=np.float64)
    z = (scales[:, None] * NAIVE_LOGITS).astype(dtype)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        fused = F.cross_entropy(Tensor(z), np.full(len(scales), target), reduction="none").data
    return naive_cross_entropy(naive, scales, dtype, target), fused.astype(np.float64)


@dataclass
class NaiveBreakdown:
    """Where the naive cross-entropy first stops being a number, scanning s upward from 1."""

    scale: float | None  # first s (on a grid 0.1 % apart) where the naive loss is not finite; None if never
    kind: str | None  # "NaN" (inf/inf) or "+∞" (log of an underflowed 0)


def naive_breakdown(naive, dtype: str = "float32", target: int = 2, s_max: float = 1000.0) -> NaiveBreakdown:
    """The first logit scale s ∈ [1, s_max] where :func:`naive_cross_entropy` is NaN or ±∞, and which."""
    scales = np.geomspace(1.0, s_max, 6910)  # consecutive scales 0.1 % apart
    values = naive_cross_entropy(naive, scales, dtype, target)
    bad = ~np.isfinite(values)
    if not bad.any():
        return NaiveBreakdown(None, None)
    i = int(np.argmax(bad))
    return NaiveBreakdown(float(scales[i]), "NaN" if np.isnan(values[i]) else "+∞")


_REMEMBERED: dict = {}


def remembered(key, build, size: int = 64):
    """``build()``, made once for each ``key`` and kept (the latest ``size`` keys, for every session
    of the server): what the page draws for one setting of a control, when another control changes
    the rest of its cell. Give the key every value and lesson function the result depends on: an
    edited lesson cell is another function, so its result is made afresh. Nothing may modify it."""
    from engine.course import plot

    try:
        return _REMEMBERED[key]
    except KeyError:
        return plot.remember(_REMEMBERED, key, build(), size)


def code_key(*objects) -> tuple:
    """A key for :func:`remembered` that holds in every session of the server: each function (a
    lesson cell, or a cell's own drawing function) as its source text, or its code and defaults
    where the source cannot be read; any other object as itself. Edited code is another key."""
    import inspect

    key = []
    for obj in objects:
        if callable(obj) and hasattr(obj, "__code__"):
            try:
                key.append(inspect.getsource(obj))
            except (OSError, TypeError):
                key.append((obj.__code__, obj.__defaults__, repr(obj.__kwdefaults__)))
        else:
            key.append(obj)
    return tuple(key)


_LOADED: dict = {}


def _read_only(node):
    """``node`` with every array in it made read-only (a kept checkpoint is shared by every session)."""
    if isinstance(node, np.ndarray):
        node.flags.writeable = False
    elif isinstance(node, dict):
        for value in node.values():
            _read_only(value)
    elif isinstance(node, (list, tuple)):
        for value in node:
            _read_only(value)
    return node


def load_if_fits(module, *code) -> tuple:
    """``checkpoints.load_if_fits(module, *code)``, checked and loaded once for each text of the
    page's lesson code and kept, its arrays read-only: the fingerprint parses every lesson cell's
    source and the archive is decoded, tens of milliseconds on every page open. Code whose source
    cannot be read is checked as the checkpoints module checks it."""
    import inspect

    try:
        key = (module.__name__, tuple(inspect.getsource(c) for c in code))
    except (OSError, TypeError):
        return checkpoints.load_if_fits(module, *code)
    try:
        return _LOADED[key]
    except KeyError:
        from engine.course import plot

        state, problem = checkpoints.load_if_fits(module, *code)
        return plot.remember(_LOADED, key, (_read_only(state), problem), 16)


NAIVE_SCALES = np.geomspace(1, 1000, 61)  # the chart's logit scales s
NAIVE_SCALES.flags.writeable = False


@functools.lru_cache(maxsize=32)
def naive_curves(naive, dtype: str = "float32", target: int = 2) -> tuple:
    """The chart of section 5 for the page's ``naive`` at one precision and target, computed once
    each (the logit-scale slider only moves a rule over it): (scales, naive, fused, breakdown), the
    two curves of :func:`naive_vs_fused` over :data:`NAIVE_SCALES` and :func:`naive_breakdown`.
    An edited ``naive`` is another function, so it is computed afresh."""
    naive_curve, fused_curve = naive_vs_fused(naive, NAIVE_SCALES, dtype, target)
    for a in (naive_curve, fused_curve):
        a.flags.writeable = False
    return NAIVE_SCALES, naive_curve, fused_curve, naive_breakdown(naive, dtype, target)


# ----------------------------------------------------------------------------- KL divergence


def gaussian_on_grid(grid, mu: float, sigma: float):
    """A normal density discretised on an evenly spaced grid and normalised to sum to 1."""
    g = np.exp(-0.5 * ((np.asarray(grid) - mu) / sigma) ** 2)
    return g / g.sum()


def bimodal_on_grid(grid, separation: float = 4.0, weight: float = 0.5, sigma: float = 0.7):
    """p: a mixture of two normals at ±separation/2 (left weight ``weight``), on the grid."""
    g = weight * gaussian_on_grid(grid, -separation / 2, sigma) + (1 - weight) * gaussian_on_grid(
        grid, separation / 2, sigma
    )
    return g / g.sum()


def kl_both_ways(kl_divergence, p, q):
    """(KL(p‖q), KL(q‖p)) by the page's ``kl_divergence(log_p, log_q)``: the two directions differ."""
    log_p, log_q = (Tensor(np.log(np.maximum(np.asarray(v, dtype=np.float64), 1e-300))) for v in (p, q))
    return float(kl_divergence(log_p, log_q).data), float(kl_divergence(log_q, log_p).data)


# The section's grid and default settings: what the page shows on open, from the shipped checkpoint.
KL_GRID = np.linspace(-7.0, 7.0, 281)
KL_DEFAULT = {"separation": 5.0, "mu0": 1.0, "sigma0": 1.0}
KL_STEPS = 300
KL_CHECKPOINT = _kl_checkpoint


def is_default_kl(settings: dict) -> bool:
    """Whether ``settings`` (any of :data:`KL_DEFAULT`'s keys) all hold their default value: the
    section then shows the fits shipped as the checkpoint ``losses_kl_fits``."""
    return is_default("is_default_kl", settings, KL_DEFAULT)


def kl_fits(state) -> dict:
    """The shipped fits (the state of ``losses_kl_fits``): 'forward' / 'reverse' -> (μ, σ, losses)."""
    return {
        direction: (float(fit["mu"]), float(fit["sigma"]), np.asarray(fit["losses"]))
        for direction, fit in state.items()
    }


# ----------------------------------------------------------------------------- MSE vs CE on a sigmoid


@dataclass
class MarginGradients:
    """|∂ℓ/∂z| over the margins, for each loss by autograd and by its formula."""

    margins: np.ndarray
    ce_autograd: np.ndarray
    ce_formula: np.ndarray
    mse_autograd: np.ndarray
    mse_formula: np.ndarray


def margin_gradients(bce_with_logits, mse, margins) -> MarginGradients:
    """|∂ℓ/∂z| for a positive example (y = 1) as the logit z = margin moves, by autograd through the
    page's per-example ``bce_with_logits(z, y)`` and ``mse(p, y)``, and by formula.

    cross-entropy ℓ = −ln σ(z):  ∂ℓ/∂z = σ(z) − 1            → −1 when the model is badly wrong
    MSE on p = σ(z), ℓ = (σ(z) − 1)²: ∂ℓ/∂z = 2(σ − 1)σ(1 − σ) → 0 when badly wrong (saturated)
    """
    m = np.asarray(margins, dtype=np.float64)
    ones = Tensor(np.ones_like(m))
    ce_t = Tensor(m, requires_grad=True)
    bce_with_logits(ce_t, ones).sum().backward()  # the page's per-example losses
    mse_t = Tensor(m, requires_grad=True)
    mse(F.sigmoid(mse_t), ones).sum().backward()
    s = 1 / (1 + np.exp(-m))
    return MarginGradients(
        m, np.abs(ce_t.grad.numpy()), np.abs(s - 1), np.abs(mse_t.grad.numpy()), np.abs(2 * (s - 1) * s * (1 - s))
    )


@dataclass
class MarginLosses:
    """Hinge and logistic loss over the margins m = t·z of a positive example (t = 1, so m = z):
    each loss by the page's code, ∂ℓ/∂m by autograd through it and by its formula."""

    margins: np.ndarray
    hinge: np.ndarray
    logistic: np.ndarray
    hinge_autograd: np.ndarray
    hinge_formula: np.ndarray
    logistic_autograd: np.ndarray
    logistic_formula: np.ndarray

    @property
    def zero_one(self) -> np.ndarray:
        """The 0-1 loss [m ≤ 0], which both bound from above (the logistic one in bits)."""
        return (self.margins <= 0).astype(np.float64)


def margin_losses(hinge, bce_with_logits, margins) -> MarginLosses:
    """Hinge ℓ = max(0, 1 − m) and logistic ℓ = ln(1 + e^{−m}) over ``margins``, through the page's
    per-example ``hinge(z, y)`` and ``bce_with_logits(z, y)`` with y = 1.

    hinge:    ∂ℓ/∂m = −1 for m < 1, 0 for m > 1 (exactly: a point beyond the margin gets no gradient)
    logistic: ∂ℓ/∂m = −σ(−m) = −1/(1 + e^{m}), never 0
    """
    m = np.asarray(margins, dtype=np.float64)
    ones = Tensor(np.ones_like(m))
    values, grads = [], []
    for loss in (hinge, bce_with_logits):
        z = Tensor(m, requires_grad=True)
        ell = loss(z, ones)
        ell.sum().backward()
        values.append(ell.numpy())
        grads.append(z.grad.numpy())
    return MarginLosses(m, values[0], values[1], grads[0], np.where(m < 1, -1.0, 0.0), grads[1], -1 / (1 + np.exp(m)))


def sigmoid_classifier_data(n: int = 100, seed: int = 0):
    """1-D two-class data: x ~ N(−2, 1) for y = 0 and N(2, 1) for y = 1."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0.0, 1.0], n // 2)
    x = rng.normal(0.0, 1.0, len(y)) + np.where(y == 1, 2.0, -2.0)
    return x, y


@dataclass
class ClassifierRun:
    """One training run, per step (before each update, and after the last)."""

    loss: np.ndarray
    accuracy: np.ndarray
    w: np.ndarray

    def steps_to(self, accuracy: float = 0.95) -> int | None:
        """The first step whose training accuracy reaches ``accuracy``, or None."""
        hit = np.flatnonzero(self.accuracy >= accuracy)
        return int(hit[0]) if hit.size else None


# ----------------------------------------------------------------------------- initial loss


def initial_loss(n_classes: int, logit_scale: float, n_samples: int = 512, seed: int = 0, loss=F.cross_entropy):
    """Mean cross-entropy (``loss(logits, labels)``, the library's unless a page passes its own) of
    random logits N(0, scale²) against random labels, and ln K.

    With small logits every class gets ≈ 1/K, so the loss is ≈ ln K: the first number to check when
    training starts. Large initial logits make confident mistakes and a much larger loss.
    """
    if not (isinstance(n_classes, (int, np.integer)) and n_classes >= 2):
        raise ValueError(f"initial_loss: need at least 2 classes, got {n_classes!r}")
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, logit_scale, (n_samples, n_classes))
    y = rng.integers(0, n_classes, n_samples)
    return float(loss(Tensor(z), y).data), math.log(n_classes)


# ----------------------------------------------------------------------------- line fits

LINE_LOSSES = ("mse", "mae", "huber", "pseudo_huber")


def make_line_data(
    n: int = 30,
    slope: float = 1.5,
    intercept: float = 0.5,
    noise: float = 0.4,
    n_outliers: int = 0,
    outlier_shift: float = 8.0,
    seed: int = 0,
):
    """Points y = slope·x + intercept + noise on x ∈ [−3, 3]; the ``n_outliers`` right-most
    points are moved up by ``outlier_shift``. Returns (x, y, is_outlier)."""
    if not 0 <= n_outliers <= n // 2:
        raise ValueError(f"make_line_data: n_outliers must be between 0 and {n // 2}, got {n_outliers}")
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-3, 3, n))
    y = slope * x + intercept + rng.normal(0, noise, n)
    is_outlier = np.zeros(n, dtype=bool)
    if n_outliers:
        is_outlier[-n_outliers:] = True
        y[is_outlier] += outlier_shift
    return x, y, is_outlier


def _least_squares(design, y, weights=None):
    """θ minimising Σ u_i (design_i·θ − y_i)² (u = 1 when ``weights`` is None)."""
    u = np.ones(len(y)) if weights is None else weights
    return np.linalg.solve(design.T @ (u[:, None] * design), design.T @ (u * y))


# ψ(e)/e for the losses IRLS fits (ψ = dℓ/de, up to the constant factor): each step is the
# least-squares fit with these weights at the last residuals, and never raises the loss
_IRLS_WEIGHTS = {
    "huber": lambda e, d: d / np.maximum(np.abs(e), d),  # 1 inside ±δ, δ/|e| beyond
    "pseudo_huber": lambda e, d: 1.0 / np.sqrt(1.0 + (e / d) ** 2),
}


def best_line(x, y, loss: str = "mse", delta: float = 1.0, tol: float = 1e-12, max_steps: int = 500):
    """The line ŷ = w·x + b that minimises the mean ``loss`` exactly, as (w, b).

    - MSE: least squares, the closed form.
    - MAE: an L1 line fit has an optimum through two of the points (the loss is convex and
      piecewise linear in (w, b), so a minimum lies at a vertex), so every line through two
      points of different x is scored and the best kept (n(n − 1)/2 lines: 435 for 30 points).
    - Huber and pseudo-Huber: iteratively reweighted least squares from the least-squares line,
      until (w, b) moves less than ``tol``: each step is a least-squares fit whose weights
      ψ(e)/e fall off with the residual, so the far points count less and less.

    The notebook's ``fit_line`` reaches the same lines with the engine's Adam (its tests check it).
    """
    if loss not in LINE_LOSSES:
        raise ValueError(f"best_line: loss must be one of {LINE_LOSSES}, got {loss!r}")
    if not delta > 0:
        raise ValueError(f"best_line: delta must be positive, got {delta}")
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if np.ptp(x) == 0:
        raise ValueError("best_line: every point has the same x, so no line is determined; move a point sideways")
    design = np.column_stack([x, np.ones_like(x)])
    if loss == "mae":
        i, j = np.triu_indices(len(x), 1)
        i, j = i[x[i] != x[j]], j[x[i] != x[j]]
        w = (y[j] - y[i]) / (x[j] - x[i])
        b = y[i] - w * x[i]
        cost = np.abs(y[None, :] - w[:, None] * x[None, :] - b[:, None]).mean(axis=1)
        k = int(np.argmin(cost))
        return float(w[k]), float(b[k])
    theta = _least_squares(design, y)
    if loss in _IRLS_WEIGHTS:
        for _ in range(max_steps):
            step = _least_squares(design, y, _IRLS_WEIGHTS[loss](design @ theta - y, delta))
            done = np.max(np.abs(step - theta)) < tol * (1.0 + np.max(np.abs(theta)))
            theta = step
            if done:
                break
    return float(theta[0]), float(theta[1])


# ----------------------------------------------------------------------------- losses are likelihoods

NOISE_KINDS = ("gamma", "gaussian")


def skewed_targets(kind: str = "gamma", n: int = 2000, seed: int = 0) -> np.ndarray:
    """Targets y for a constant predictor: Gamma(shape 2, scale 1), skewed to the right (mean 2,
    median ≈ 1.68), or Gaussian N(2, 1), symmetric (mean = median = 2)."""
    if kind not in NOISE_KINDS:
        raise ValueError(f"skewed_targets: kind must be one of {NOISE_KINDS}, got {kind!r}")
    rng = np.random.default_rng(seed)
    return rng.gamma(2.0, 1.0, n) if kind == "gamma" else rng.normal(2.0, 1.0, n)


@dataclass
class ConstantFit:
    """The best constant predictor ĉ under one loss, found by the engine, and the statistic it estimates."""

    loss: str
    fitted: float
    statistic_name: str
    statistic: float
    minimisers: tuple  # (lo, hi): every constant in [lo, hi] minimises the sample's loss

    @property
    def is_a_minimiser(self) -> bool:
        """The engine's constant lies in the minimising interval (to 1e-6)."""
        return self.minimisers[0] - 1e-6 <= self.fitted <= self.minimisers[1] + 1e-6


STATISTIC_OF = {"mse": "mean", "mae": "median", "pinball": "quantile"}


def constant_fit(y, loss: str, tau: float, fitted: float | None) -> ConstantFit:
    """The engine's best constant ``fitted`` under ``loss`` (NaN when None: not fitted) next to the
    statistic it estimates: MSE (the Gaussian's negative log-likelihood) the mean, MAE (the
    Laplace's) the median, pinball(τ) (the asymmetric Laplace's) the τ-quantile."""
    y = np.asarray(y, dtype=np.float64)
    if loss not in STATISTIC_OF:
        raise ValueError(f"constant_fit: loss must be one of {tuple(STATISTIC_OF)}, got {loss!r}")
    statistic = {"mse": np.mean, "mae": np.median, "pinball": lambda v: np.quantile(v, tau)}[loss](y)
    name = f"{tau:g}-quantile" if loss == "pinball" else STATISTIC_OF[loss]
    minimisers = (float(statistic),) * 2 if loss == "mse" else quantile_interval(y, 0.5 if loss == "mae" else tau)
    return ConstantFit(loss, float("nan") if fitted is None else float(fitted), name, float(statistic), minimisers)


def quantile_interval(y, tau: float) -> tuple:
    """Every minimiser of the mean pinball loss ρ_τ(y − c) over c, as (lo, hi): with the sorted
    sample s_1 ≤ … ≤ s_n and k = nτ, the interval [s_k, s_{k+1}] when k is a whole number (the
    loss is flat between them), else the single point s_⌈k⌉. τ = ½ gives MAE's medians."""
    s = np.sort(np.asarray(y, dtype=np.float64))
    k = len(s) * tau
    if abs(k - round(k)) < 1e-9 and 1 <= round(k) < len(s):
        return float(s[round(k) - 1]), float(s[round(k)])
    point = float(s[math.ceil(k) - 1])
    return point, point


def target_density(y, bins: int = 40):
    """(bin centres, density) of the targets, the histogram drawn under the fitted constants."""
    density, edges = np.histogram(np.asarray(y, dtype=np.float64), bins=bins, density=True)
    return 0.5 * (edges[:-1] + edges[1:]), density


def sample_labels(probs=(0.6, 0.3, 0.1), n: int = 500, seed: int = 0) -> np.ndarray:
    """``n`` class labels drawn with the given class probabilities."""
    probs = np.asarray(probs, dtype=np.float64)
    return np.random.default_rng(seed).choice(len(probs), n, p=probs / probs.sum())


# ----------------------------------------------------------------------------- multi-label and imbalance


@dataclass
class MultiLabelReport:
    """One example with several true labels, scored two ways from the same logits."""

    sigmoid_probs: np.ndarray  # independent per label: need not sum to 1
    softmax_probs: np.ndarray  # one distribution over the labels: sums to 1
    bce: float  # Σ_k BCE(σ(z_k), t_k), the multi-label loss (summed over labels)
    softmax_ce: float  # −Σ_k q_k ln p_k with q = t / Σt
    softmax_floor: float  # the least softmax CE can reach, the entropy of q: ln(number of true labels)
    bce_grad: np.ndarray  # ∂BCE/∂z = σ(z) − t, by autograd
    softmax_grad: np.ndarray  # ∂CE/∂z = p − q, by autograd


def multilabel_report(logits, labels) -> MultiLabelReport:
    """Multi-label BCE next to softmax cross-entropy for logits z and the set of true ``labels``."""
    z = np.asarray(logits, dtype=np.float64)
    k = len(z)
    labels = sorted(set(int(v) for v in labels))
    if not labels:
        raise ValueError(
            "multilabel_report: softmax cross-entropy needs at least one true label to spread its "
            "target over; pick one or more labels"
        )
    if labels[-1] >= k or labels[0] < 0:
        raise ValueError(f"multilabel_report: there are only {k} labels (0 to {k - 1}), got label {labels[-1]}")
    t = np.zeros(k)
    t[labels] = 1.0
    q = t / t.sum()
    zb = Tensor(z, requires_grad=True)
    bce = F.binary_cross_entropy_with_logits(zb, t, reduction="sum")
    bce.backward()
    zs = Tensor(z[None, :], requires_grad=True)
    ce = -(F.log_softmax(zs, dim=-1) * q[None, :]).sum()
    ce.backward()
    return MultiLabelReport(
        F.sigmoid(Tensor(z)).data,
        F.softmax(Tensor(z), dim=-1).data,
        float(bce.data),
        float(ce.data),
        math.log(len(labels)),
        zb.grad.numpy().copy(),
        zs.grad.numpy()[0].copy(),
    )


IMBALANCE_METHODS = ("plain", "weighted", "focal")


def imbalanced_data(n: int = 1000, minority_share: float = 0.05, seed: int = 0):
    """Two overlapping 2-D Gaussian classes, N((0, 0), I) and N((1.5, 1.5), I); the positive
    class (y = 1) is the minority. Returns (x of shape (n, 2), y)."""
    if not 0 < minority_share <= 0.5:
        raise ValueError(f"imbalanced_data: minority_share must be in (0, 0.5], got {minority_share}")
    rng = np.random.default_rng(seed)
    n_pos = max(1, int(round(n * minority_share)))
    y = np.concatenate([np.zeros(n - n_pos), np.ones(n_pos)])
    x = rng.standard_normal((n, 2)) + 1.5 * y[:, None]
    return x, y


@dataclass
class ImbalanceRun:
    method: str
    accuracy: float
    recall: float  # of the minority class, at threshold ½
    precision: float  # of the minority predictions (nan when none is predicted)
    w: np.ndarray
    b: float


def score_imbalanced(x, y, method: str, w, b: float) -> ImbalanceRun:
    """The run of a classifier z = x wᵀ + b: accuracy, minority recall and precision at threshold ½."""
    x, y, w = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64), np.array(w, dtype=np.float64)
    pred = (x @ w.T + b).reshape(-1) > 0
    hits = float(np.sum(pred & (y == 1)))
    precision = hits / pred.sum() if pred.sum() else float("nan")
    return ImbalanceRun(
        method, float(np.mean(pred == (y == 1))), float(hits / max((y == 1).sum(), 1)), float(precision), w, float(b)
    )


# ----------------------------------------------------------------------------- the defaults, shipped
#
# The sections that train (the likelihood fits, the class frequencies, the imbalance runs) open on
# fits shipped as the checkpoint ``losses_default_fits``, made by the notebook's own code
# (``shipped_default_fits``): every setting their controls reach (either noise, every τ step, every
# minority-share and γ step), so no control trains. The page loads it with
# ``checkpoints.load_if_fits``; when a learner's edit makes it not fit, the shipped_* readers below
# get ``None`` for the state and answer ``None``, and the page trains with its own code on a button.

LINE_DEFAULT = {"n_outliers": 3, "outlier_shift": 10.0, "delta": 1.0}
LINE_DELTAS = tuple(round(0.1 * k, 1) for k in range(1, 51))  # the δ slider's steps, 0.1 to 5.0
LIKELIHOOD_DEFAULT = {"kind": "gamma", "tau": 0.9}
LIKELIHOOD_TAUS = tuple(round(0.05 * k, 2) for k in range(1, 20))  # the τ slider's steps, 0.05 to 0.95
CLASS_PROBS = (0.6, 0.3, 0.1)
IMBALANCE_DEFAULT = {"minority_share": 0.05, "gamma": 2.0}
IMBALANCE_SHARES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)  # the minority-share slider's steps
FOCAL_GAMMAS = tuple(0.5 * k for k in range(11))  # the γ slider's steps, 0 to 5
DEFAULT_FITS_CHECKPOINT = _defaults_checkpoint


def default_line_data():
    """The outlier lab's data at its default settings: (x, y, is_outlier)."""
    return make_line_data(
        n=30, n_outliers=LINE_DEFAULT["n_outliers"], outlier_shift=LINE_DEFAULT["outlier_shift"], seed=0
    )


def default_class_labels() -> np.ndarray:
    """The 500 labels the cross-entropy ↔ categorical example fits."""
    return sample_labels(CLASS_PROBS, n=500, seed=0)


def _key(value: float) -> str:
    """A slider step as a checkpoint key: '0.3' for 0.30000000000000004."""
    return f"{round(float(value), 6):g}"


def _on_step(value: float, steps) -> bool:
    return any(abs(float(value) - step) < 1e-9 for step in steps)


def default_fits_state(constant, class_probabilities, classifier) -> dict:
    """The state of ``losses_default_fits``, made by the page's code: ``constant(y, loss, tau)``, the
    best constant (each noise kind's targets; MSE, MAE, and pinball at every τ step);
    ``class_probabilities(labels, k)`` (the default labels); ``classifier(x, y, method, gamma)``,
    the (w, b) of a logistic regression (every minority share; the focal loss at every γ step)."""

    def constants(kind):
        y = targets(kind)
        return {
            "mse": constant(y, "mse", 0.5),
            "mae": constant(y, "mae", 0.5),
            "pinball": {_key(tau): constant(y, "pinball", tau) for tau in LIKELIHOOD_TAUS},
        }

    def imbalance(share):
        x, y = imbalance_data(share)
        runs = {m: classifier(x, y, m, 0.0) for m in ("plain", "weighted")}
        runs.update({f"focal {_key(g)}": classifier(x, y, "focal", g) for g in FOCAL_GAMMAS})
        return {m: {"w": np.asarray(w, dtype=np.float64), "b": float(b)} for m, (w, b) in runs.items()}

    return {
        "constants": {kind: constants(kind) for kind in NOISE_KINDS},
        "class_probabilities": np.asarray(class_probabilities(default_class_labels(), len(CLASS_PROBS))),
        "imbalance": {_key(share): imbalance(share) for share in IMBALANCE_SHARES},
    }


@functools.lru_cache(maxsize=None)
def targets(kind: str) -> np.ndarray:
    """The likelihood section's 2,000 targets of each noise kind (read-only: shared by the cache)."""
    y = skewed_targets(kind, n=2000, seed=0)
    y.flags.writeable = False
    return y


@functools.lru_cache(maxsize=None)
def imbalance_data(share: float) -> tuple:
    """The imbalance section's data at each minority share (read-only: shared by the cache)."""
    x, y = imbalanced_data(n=1000, minority_share=share, seed=0)
    x.flags.writeable = y.flags.writeable = False
    return x, y


KL_CODE = ("fit", "kl_divergence", "fit_gaussian", "shipped_kl_fits")
DEFAULT_FITS_CODE = (
    "fit",
    "mse",
    "mae",
    "pinball",
    "per_example_loss",
    "fit_constant",
    "cross_entropy",
    "fit_class_probabilities",
    "bce_with_logits",
    "focal_loss",
    "imbalance_loss",
    "train_logistic",
    "shipped_default_fits",
)
LINE_CODE = ("fit", "fit_line", "mse", "mae", "huber", "pseudo_huber", "per_example_loss", "shipped_line_fits")
CHECKPOINTS = {
    "losses_kl_fits": checkpoints.FromNotebook(notebook="02_losses", function="shipped_kl_fits", code=KL_CODE),
    "losses_default_fits": checkpoints.FromNotebook(
        notebook="02_losses", function="shipped_default_fits", code=DEFAULT_FITS_CODE
    ),
    "losses_line_fits": checkpoints.FromNotebook(notebook="02_losses", function="shipped_line_fits", code=LINE_CODE),
}


def line_fits_state(fit_line_under) -> dict:
    """The state of ``losses_line_fits``, made by the page's code: ``fit_line_under(x, y, loss, δ)``
    (the page's fitting loop on the line) under each of :data:`LINE_LOSSES`, on the outlier lab's
    points and δ as the page opens: ``{loss: [w, b]}``."""
    x, y, _ = default_line_data()
    return {
        name: np.asarray(fit_line_under(x, y, name, LINE_DEFAULT["delta"]), dtype=np.float64) for name in LINE_LOSSES
    }


def shipped_line_fits(*code) -> dict | None:
    """``{loss: (w, b)}`` from ``losses_line_fits`` when ``code`` (the page's objects named by
    :data:`LINE_CODE`, in that order) is the code that made it, else None."""
    state, _ = load_if_fits(_line_checkpoint, *code)
    return None if state is None else {name: (float(v[0]), float(v[1])) for name, v in state.items()}


def _equal(a, b) -> bool:
    return np.shape(a) == np.shape(b) and np.array_equal(a, b)


def line_fits(x, y, losses, delta: float = LINE_DEFAULT["delta"]) -> dict:
    """loss -> (w, b) of :func:`best_line` for each of ``losses`` (about 1 ms each, so any data,
    dragged pucks included, is refitted at once)."""
    return {name: best_line(x, y, name, delta=delta) for name in losses}


def shipped_constant(state, y, loss: str, tau: float) -> float | None:
    """The shipped best constant for targets ``y`` under ``loss`` (pinball at ``tau``), or None:
    ``y`` is not a noise kind's targets, τ is off the slider's steps, or ``state`` is None (the
    page's code is not the code it was made with)."""
    kind = next((k for k in NOISE_KINDS if _equal(y, targets(k))), None)
    if state is None or kind is None:
        return None
    if loss != "pinball":
        return float(state["constants"][kind][loss])
    return float(state["constants"][kind]["pinball"][_key(tau)]) if _on_step(tau, LIKELIHOOD_TAUS) else None


def shipped_class_probabilities(state, labels, n_classes: int) -> np.ndarray | None:
    """The shipped fitted class probabilities for the default labels, or None."""
    if state is None or n_classes != len(CLASS_PROBS) or not _equal(labels, default_class_labels()):
        return None
    return np.array(state["class_probabilities"])


def shipped_imbalance_run(state, x, y, method: str, gamma: float) -> ImbalanceRun | None:
    """The shipped run on the data of a minority-share step (the focal loss at a γ step), scored
    on ``x, y``; or None."""
    share = next(
        (s for s in IMBALANCE_SHARES if _equal(x, imbalance_data(s)[0]) and _equal(y, imbalance_data(s)[1])), None
    )
    if state is None or share is None or (method == "focal" and not _on_step(gamma, FOCAL_GAMMAS)):
        return None
    run = state["imbalance"][_key(share)][f"focal {_key(gamma)}" if method == "focal" else method]
    return score_imbalanced(x, y, method, run["w"], float(run["b"]))


# ----------------------------------------------------------------------------- calibration

CALIBRATION_NOISE_DIMS = (0, 5, 10, 20, 40)  # the slider's steps: features that carry no signal
CALIBRATION_DEFAULT = {"noise_dims": 20, "n_bins": 10}
CALIBRATION_SIZES = {"train": 100, "validation": 500, "test": 2000}
CALIBRATION_CENTRES = np.array([[0.0, 1.0], [-0.9, -0.5], [0.9, -0.5]])  # three classes in the first two features
CALIBRATION_CODE = ("fit", "cross_entropy", "train_softmax", "fit_temperature", "shipped_calibration")
CALIBRATION_CHECKPOINT = _calibration_checkpoint
CHECKPOINTS["losses_calibration"] = checkpoints.FromNotebook(
    notebook="02_losses", function="shipped_calibration", code=CALIBRATION_CODE
)


@functools.lru_cache(maxsize=None)
def calibration_data(noise_dims: int, seed: int = 0) -> dict:
    """``{split: (x, y)}`` for 'train' (100), 'validation' (500) and 'test' (2,000): three classes,
    x = (a point near its class's centre, 0.8 spread, then ``noise_dims`` N(0, 1) features that carry
    no signal). Read-only: shared by the cache."""
    if int(noise_dims) != noise_dims or noise_dims < 0:
        raise ValueError(f"calibration_data: noise_dims must be a whole number ≥ 0, got {noise_dims}")
    rng = np.random.default_rng(seed)
    splits = {}
    for split, n in CALIBRATION_SIZES.items():
        y = rng.integers(0, len(CALIBRATION_CENTRES), n)
        x = np.concatenate(
            [CALIBRATION_CENTRES[y] + 0.8 * rng.standard_normal((n, 2)), rng.standard_normal((n, int(noise_dims)))],
            axis=1,
        )
        x.flags.writeable = y.flags.writeable = False
        splits[split] = (x, y)
    return splits


def softmax_probabilities(logits, temperature: float = 1.0) -> np.ndarray:
    """softmax(z / T) row by row, in NumPy."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def calibration_state(train_softmax, fit_temperature) -> dict:
    """The state of ``losses_calibration``, made by the page's code at every step of the slider:
    ``train_softmax(x, y)`` on the training split gives (W, b); ``fit_temperature(z, y)`` on the
    validation split's logits z = x W + b gives T."""
    state = {}
    for dims in CALIBRATION_NOISE_DIMS:
        data = calibration_data(dims)
        weights, bias = train_softmax(*data["train"])
        x_val, y_val = data["validation"]
        temperature = fit_temperature(x_val @ weights + bias, y_val)
        state[str(dims)] = {
            "W": np.asarray(weights, dtype=np.float64),
            "b": np.asarray(bias, dtype=np.float64),
            "T": float(temperature),
        }
    return state


def shipped_calibration(state, noise_dims: int) -> tuple | None:
    """(W, b, T) shipped for ``noise_dims``, or None (``state`` is None: other code than the page's)."""
    if state is None:
        return None
    run = state[str(int(noise_dims))]
    return np.array(run["W"]), np.array(run["b"]), float(run["T"])


# ----------------------------------------------------------------------------- learning the noise

NOISE_SIGMA0 = 0.15  # σ(x) = σ₀·e^{g·x}: the noise's std at x = 0
NOISE_GROWTHS = (0.0, 0.25, 0.5, 0.75, 1.0)  # the growth slider's steps g
NOISE_STEPS = 600  # the page's fit_noise_model runs this many Adam steps
NOISE_EVERY = 10  # the shipped fits keep θ every this many steps
NOISE_DEFAULT = {"growth": 0.75, "step": NOISE_STEPS}
NOISE_CODE = ("fit", "gaussian_nll", "noise_model", "fit_noise_model", "shipped_noise_fits")
NOISE_CHECKPOINT = _noise_checkpoint
CHECKPOINTS["losses_noise_fits"] = checkpoints.FromNotebook(
    notebook="02_losses", function="shipped_noise_fits", code=NOISE_CODE
)


def noise_sigma(growth: float, x):
    """The true noise std σ(x) = σ₀·e^{g·x}: constant for g = 0, growing with x for g > 0."""
    return NOISE_SIGMA0 * np.exp(growth * np.asarray(x, dtype=np.float64))


@functools.lru_cache(maxsize=None)
def noisy_line(growth: float, n: int = 400, seed: int = 0) -> tuple:
    """(x, y): x ~ U(0, 2), y = 1.5x + 0.5 + σ(x)·ε with ε ~ N(0, 1) (the same draws at every
    growth g, so only the noise's spread changes). Read-only: shared by the cache."""
    if not _on_step(growth, NOISE_GROWTHS):
        raise ValueError(f"noisy_line: growth g must be one of {NOISE_GROWTHS}, got {growth}")
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 2.0, n)
    y = 1.5 * x + 0.5 + noise_sigma(growth, x) * rng.standard_normal(n)
    x.flags.writeable = y.flags.writeable = False
    return x, y


def weighted_line(x, y, weights) -> tuple:
    """(w, b) minimising Σ_i weights_i (y_i − w x_i − b)²: weighted least squares."""
    design = np.stack([np.asarray(x, dtype=np.float64), np.ones(len(x))], axis=1)
    w, b = _least_squares(design, np.asarray(y, dtype=np.float64), np.asarray(weights, dtype=np.float64))
    return float(w), float(b)


def constant_noise_fit(x, y) -> tuple:
    """(w, b, σ) of the Gaussian with one variance for every x, by maximum likelihood: the least
    squares line (the MSE fit) and σ² the mean squared residual."""
    w, b = weighted_line(x, y, np.ones(len(x)))
    residual = np.asarray(y) - (w * np.asarray(x) + b)
    return w, b, float(np.sqrt(np.mean(residual**2)))


def band_coverage(x, y, mean, sigma, split: float = 1.0) -> tuple:
    """The shares of the points with x < split and with x ≥ split inside mean ± 2σ (``mean`` and
    ``sigma`` given at each point)."""
    inside = np.abs(np.asarray(y) - mean) <= 2 * np.asarray(sigma)
    left = np.asarray(x) < split
    return float(inside[left].mean()), float(inside[~left].mean())


def noise_fits_state(fit_noise_model) -> dict:
    """The state of ``losses_noise_fits``, made by the page's ``fit_noise_model(x, y)`` (θ before
    each step and after the last) on the data of every growth step: θ every NOISE_EVERY steps."""
    return {
        _key(g): np.asarray(fit_noise_model(*noisy_line(g)), dtype=np.float64)[::NOISE_EVERY] for g in NOISE_GROWTHS
    }


def shipped_noise_trail(state, growth: float) -> np.ndarray | None:
    """The shipped θ every NOISE_EVERY steps at growth ``growth``, or None (``state`` is None: the
    page's code is not the code that made it)."""
    return None if state is None else np.array(state[_key(growth)])


# ----------------------------------------------------------------------------- dragged outliers

LINE_BOUNDS = ((-3.2, 3.2), (-26.0, 28.0))  # (x, y) limits of the outlier lab's chart and its pucks


def with_dragged_outliers(x, y, is_outlier, points):
    """The line data with its outliers replaced by ``points`` (float [m, 2], e.g. dragged pucks):
    (x, y, is_outlier) with the inliers first, in their order, then the m points."""
    x, y, is_outlier = (np.asarray(v) for v in (x, y, is_outlier))
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    keep = ~is_outlier
    return (
        np.concatenate([x[keep], points[:, 0]]),
        np.concatenate([y[keep], points[:, 1]]),
        np.concatenate([np.zeros(keep.sum(), dtype=bool), np.ones(len(points), dtype=bool)]),
    )


@functools.lru_cache(maxsize=None)
def outlier_background(n_outliers: int):
    """The pucks' chart (``widgets.puck_background``) with ``n_outliers`` outliers taken out of the
    line data: its inliers and the true line, drawn once for each count."""
    from engine.course import widgets

    x, y, out = make_line_data(n=30, n_outliers=n_outliers, seed=0)
    return widgets.puck_background(
        lambda ax: draw_inliers(ax, x[~out], y[~out]),
        x_bounds=LINE_BOUNDS[0],
        y_bounds=LINE_BOUNDS[1],
        figsize=(5.0, 3.2),
    )


def outlier_pucks(n_outliers: int, x, y):
    """``widgets.draggable_points`` over :func:`outlier_background` (drawn once per count) with pucks
    at ``(x[i], y[i])``, one per outlier, for the sliders that place them: a new widget at each move,
    made by ChartPuck's constructor over the chart's stored PNG (a few ms)."""
    from engine.course import widgets

    return widgets.draggable_points(outlier_background(int(n_outliers)), x, y)


def draw_inliers(ax, x, y, slope: float = 1.5, intercept: float = 0.5):
    """The pucks' background, drawn once on the Matplotlib axes of ``widgets.draggable_points``:
    the inliers (the palette's "data") and the true line they were drawn from ("reference")."""
    from engine.course.plot import color

    xs = np.array(LINE_BOUNDS[0])
    ax.plot(xs, slope * xs + intercept, color=color("reference"), linestyle="--", linewidth=1)
    ax.scatter(x, y, s=14, color=color("data"))
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title("drag the red outliers", fontsize=10)

"""Computations behind notebook 02 (losses), all through the engine's losses and autograd.

- :func:`regression_curves`: MSE, MAE, Huber and pseudo-Huber against the residual e = ŷ − y,
  with ∂ℓ/∂ŷ from autograd and from the closed form.
- :func:`cross_entropy_report`: softmax, a label-smoothed target, the loss and ∂L/∂z = p − q.
- :func:`naive_vs_fused` and :func:`naive_breakdown`: −log(softmax(z)_y) computed naively (exp,
  divide, log) next to the fused ``F.cross_entropy``, as the logits grow: the naive one gives NaN
  (overflow, inf/inf) for the likeliest class and +∞ (underflow, log 0) for the least likely.
- :func:`kl_both_ways` and :func:`fit_gaussian_kl`: KL(p‖q) ≠ KL(q‖p), and fitting a Gaussian q to a
  bimodal p in each direction (mode-covering against mode-seeking); the default fits ship as the
  checkpoint ``losses_kl_fits`` (:data:`CHECKPOINTS`), so the page shows them on open.
- :func:`margin_gradients` and :func:`train_sigmoid_classifier`: why MSE on a sigmoid saturates
  while cross-entropy keeps pushing.
- :func:`make_line_data`, :func:`best_line` and :func:`fit_line`: the line that minimises MSE,
  MAE, Huber or pseudo-Huber while outliers pull on it, exactly (least squares, the best line
  through two points, reweighted least squares) and by the engine (Adam with a cosine schedule).
- :func:`initial_loss`: the cross-entropy of an untrained K-class classifier, ≈ ln K when the logits
  start small.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

import engine.functional as F
from engine import Tensor
from engine.course import checkpoints
from engine.course.checkpoints import losses_default_fits as _defaults_checkpoint  # static imports: the
from engine.course.checkpoints import losses_kl_fits as _kl_checkpoint  # WebAssembly bundler follows only those
from engine.optim import SGD, Adam
from engine.optim.lr_scheduler import CosineAnnealingLR

from ._checks import is_default
from .activations import Curves
from .activations import parse_numbers as parse_numbers  # re-exported: 02 reads logits typed as text

# ----------------------------------------------------------------------------- regression losses


def _huber(e, delta):
    a = np.abs(e)
    return np.where(a <= delta, 0.5 * e * e, delta * (a - 0.5 * delta))


REGRESSION_LOSSES = {
    "mse": dict(label="MSE (L2)", formula=r"e^2", grad=r"2e",
                f=lambda e, d: e * e, df=lambda e, d: 2 * e,
                engine=lambda t, d: F.mse_loss(t, np.zeros_like(t.data), reduction="none")),
    "mae": dict(label="MAE (L1)", formula=r"|e|", grad=r"\operatorname{sign}(e)",
                f=lambda e, d: np.abs(e), df=lambda e, d: np.sign(e),
                engine=lambda t, d: F.l1_loss(t, np.zeros_like(t.data), reduction="none")),
    "huber": dict(label="Huber", formula=r"\begin{cases}\tfrac12 e^2 & |e|\le\delta\\ \delta(|e|-\tfrac12\delta) & |e|>\delta\end{cases}",
                  grad=r"\begin{cases}e & |e|\le\delta\\ \delta\,\operatorname{sign}(e) & |e|>\delta\end{cases}",
                  f=_huber, df=lambda e, d: np.clip(e, -d, d),
                  engine=lambda t, d: F.huber_loss(t, np.zeros_like(t.data), reduction="none", delta=d)),
    "pseudo_huber": dict(label="pseudo-Huber", formula=r"\delta^2\left(\sqrt{1+(e/\delta)^2}-1\right)",
                         grad=r"\frac{e}{\sqrt{1+(e/\delta)^2}}",
                         f=lambda e, d: d * d * (np.sqrt(1 + (e / d) ** 2) - 1),
                         df=lambda e, d: e / np.sqrt(1 + (e / d) ** 2),
                         engine=lambda t, d: F.pseudo_huber_loss(t, np.zeros_like(t.data), reduction="none", delta=d)),
}


def _check(name, table):
    if name not in table:
        raise ValueError(f"losses lab: unknown loss {name!r}; choose one of {', '.join(table)}")


def regression_curves(name: str, e, delta: float = 1.0) -> Curves:
    """ℓ(e) and ∂ℓ/∂ŷ for residuals e = ŷ − y (target 0): engine forward + autograd, and formulas."""
    _check(name, REGRESSION_LOSSES)
    if not delta > 0:
        raise ValueError(f"regression_curves: delta must be positive, got {delta}")
    spec = REGRESSION_LOSSES[name]
    e = np.asarray(e, dtype=np.float64)
    t = Tensor(e, requires_grad=True)
    loss = spec["engine"](t, delta)
    loss.backward(np.ones_like(loss.data))
    return Curves(e, loss.data.copy(), t.grad.numpy().copy(), spec["f"](e, delta), spec["df"](e, delta))


# ----------------------------------------------------------------------------- classification


@dataclass
class CrossEntropyReport:
    probs: np.ndarray
    target: np.ndarray  # the smoothed target distribution q
    loss: float
    grad_autograd: np.ndarray
    grad_formula: np.ndarray  # p − q


def cross_entropy_report(logits, target: int, label_smoothing: float = 0.0) -> CrossEntropyReport:
    """One example: L = −Σ q_k log softmax(z)_k with q = (1 − ε)·onehot(y) + ε/K; ∂L/∂z = p − q."""
    z = np.asarray(logits, dtype=np.float64)
    k = len(z)
    if not isinstance(target, (int, np.integer)) or isinstance(target, bool):
        raise ValueError(f"cross_entropy_report: the target class must be an integer in [0, {k - 1}], got {target!r}")
    if not 0 <= target < k:
        raise ValueError(f"cross_entropy_report: there are only {k} classes (0 to {k - 1}), so class {target} "
                         "does not exist; lower the true class y or add logits")
    t = Tensor(z[None, :], requires_grad=True)
    loss = F.cross_entropy(t, np.array([target]), label_smoothing=label_smoothing)
    loss.backward()
    p = F.softmax(Tensor(z), dim=-1).data
    q = np.full(k, label_smoothing / k)
    q[target] += 1 - label_smoothing
    return CrossEntropyReport(p, q, float(loss.data), t.grad.numpy()[0].copy(), p - q)


NAIVE_LOGITS = np.array([1.0, 0.0, -1.0])  # logits s·(1, 0, −1): class 0 most likely, class 2 least


def _check_naive(dtype, target):
    if dtype not in ("float32", "float64"):
        raise ValueError(f"naive_vs_fused: dtype must be 'float32' or 'float64', got {dtype!r}")
    if target not in (0, 1, 2):
        raise ValueError(f"naive_vs_fused: the target class must be 0, 1 or 2, got {target!r}")


def naive_cross_entropy(scales, dtype: str = "float32", target: int = 2) -> np.ndarray:
    """−log(exp(z_y) / Σ exp(z)) for logits s·(1, 0, −1), every step in ``dtype`` (one row per scale).

    Two ways to fail: for the most likely class, exp(s) overflows (float32 past s ≈ 88.7, float64
    past ≈ 709.8) and the ratio is inf/inf = NaN; for the least likely one, p = e^{−s}/(e^{s} + …)
    underflows to 0 once e^{−2s} is below the smallest subnormal (float32: s ≈ 52) and −log 0 = +∞.
    """
    _check_naive(dtype, target)
    z = (np.asarray(scales, dtype=np.float64)[:, None] * NAIVE_LOGITS).astype(dtype)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        e = np.exp(z)
        p = e[:, target] / e.sum(axis=1)
        return (-np.log(p)).astype(np.float64)


def naive_vs_fused(scales, dtype: str = "float32", target: int = 2):
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
    return naive_cross_entropy(scales, dtype, target), fused.astype(np.float64)


@dataclass
class NaiveBreakdown:
    """Where the naive cross-entropy first stops being a number, scanning s upward from 1."""

    scale: float | None  # first s (on a grid 0.1 % apart) where the naive loss is not finite; None if never
    kind: str | None  # "NaN" (inf/inf) or "+∞" (log of an underflowed 0)


def naive_breakdown(dtype: str = "float32", target: int = 2, s_max: float = 1000.0) -> NaiveBreakdown:
    """The first logit scale s ∈ [1, s_max] where :func:`naive_cross_entropy` is NaN or ±∞, and which."""
    scales = np.geomspace(1.0, s_max, 6910)  # consecutive scales 0.1 % apart
    naive = naive_cross_entropy(scales, dtype, target)
    bad = ~np.isfinite(naive)
    if not bad.any():
        return NaiveBreakdown(None, None)
    i = int(np.argmax(bad))
    return NaiveBreakdown(float(scales[i]), "NaN" if np.isnan(naive[i]) else "+∞")


# ----------------------------------------------------------------------------- KL divergence


def gaussian_on_grid(grid, mu: float, sigma: float):
    """A normal density discretised on an evenly spaced grid and normalised to sum to 1."""
    g = np.exp(-0.5 * ((np.asarray(grid) - mu) / sigma) ** 2)
    return g / g.sum()


def bimodal_on_grid(grid, separation: float = 4.0, weight: float = 0.5, sigma: float = 0.7):
    """p: a mixture of two normals at ±separation/2 (left weight ``weight``), on the grid."""
    g = weight * gaussian_on_grid(grid, -separation / 2, sigma) + (1 - weight) * gaussian_on_grid(grid, separation / 2, sigma)
    return g / g.sum()


def kl(p, q) -> float:
    """KL(p‖q) = Σ p ln(p/q) by ``F.kl_div`` (input log q, target p, summed)."""
    q = np.maximum(np.asarray(q, dtype=np.float64), 1e-300)
    return float(F.kl_div(Tensor(np.log(q)), np.asarray(p, dtype=np.float64), reduction="sum").data)


def kl_both_ways(p, q):
    """(KL(p‖q), KL(q‖p)): the two directions differ."""
    return kl(p, q), kl(q, p)


def fit_gaussian_kl(p, grid, direction: str = "forward", mu0: float = 0.5, sigma0: float = 1.0,
                    steps: int = 300, lr: float = 0.05):
    """Fit q = N(μ, σ²) (on the grid) to p by Adam on KL(p‖q) ('forward') or KL(q‖p) ('reverse').

    Forward KL punishes q ≈ 0 where p > 0, so q spreads over every mode (mode-covering); reverse
    KL punishes q > 0 where p ≈ 0, so q settles on one mode (mode-seeking). Returns (μ, σ, losses).
    """
    if direction not in ("forward", "reverse"):
        raise ValueError(f"fit_gaussian_kl: direction must be 'forward' or 'reverse', got {direction!r}")
    grid = np.asarray(grid, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    mu = Tensor(np.array(mu0, dtype=np.float64), requires_grad=True)
    log_sigma = Tensor(np.array(math.log(sigma0), dtype=np.float64), requires_grad=True)
    opt = Adam([mu, log_sigma], lr=lr)
    g = Tensor(grid)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        logits = -0.5 * ((g - mu) / log_sigma.exp()) ** 2
        log_q = F.log_softmax(logits, dim=-1)  # the normalised discretised Gaussian, in logs
        if direction == "forward":
            loss = F.kl_div(log_q, p, reduction="sum")
        else:
            q = log_q.exp()
            loss = (q * (log_q - np.log(np.maximum(p, 1e-300)))).sum()
        loss.backward()
        opt.step()
        losses.append(float(loss.data))
    return float(mu.data), float(np.exp(log_sigma.data)), np.array(losses)


# The section's grid and default settings: what the page shows on open, from the shipped checkpoint.
KL_GRID = np.linspace(-7.0, 7.0, 281)
KL_DEFAULT = {"separation": 5.0, "mu0": 1.0, "sigma0": 1.0}
KL_STEPS = 300


def is_default_kl(settings: dict) -> bool:
    """Whether ``settings`` (any of :data:`KL_DEFAULT`'s keys) all hold their default value: the
    section then shows the fits shipped as the checkpoint ``losses_kl_fits``."""
    return is_default("is_default_kl", settings, KL_DEFAULT)


def fit_q_both_ways(separation: float, mu0: float, sigma0: float, steps: int = KL_STEPS) -> dict:
    """q fitted to the two-bump p (on :data:`KL_GRID`) each way from the same start:
    'forward' / 'reverse' -> (μ, σ, losses)."""
    p = bimodal_on_grid(KL_GRID, separation=separation)
    return {direction: fit_gaussian_kl(p, KL_GRID, direction, mu0=mu0, sigma0=sigma0, steps=steps)
            for direction in ("forward", "reverse")}


def train_default_kl_fits() -> dict:
    """The checkpoint ``losses_kl_fits``: both fits from :data:`KL_DEFAULT` (deterministic, ~0.08 s)."""
    return {direction: {"mu": mu, "sigma": sigma, "losses": losses}
            for direction, (mu, sigma, losses) in fit_q_both_ways(**KL_DEFAULT).items()}


def default_kl_fits() -> dict:
    """The fits of :func:`fit_q_both_ways` at :data:`KL_DEFAULT`, read from the shipped checkpoint
    (no training when the page opens)."""
    state = checkpoints.load(_kl_checkpoint)
    return {direction: (float(fit["mu"]), float(fit["sigma"]), fit["losses"])
            for direction, fit in state.items()}


# ----------------------------------------------------------------------------- MSE vs CE on a sigmoid


@dataclass
class MarginGradients:
    """|∂ℓ/∂z| over the margins, for each loss by autograd and by its formula."""

    margins: np.ndarray
    ce_autograd: np.ndarray
    ce_formula: np.ndarray
    mse_autograd: np.ndarray
    mse_formula: np.ndarray


def margin_gradients(margins) -> MarginGradients:
    """|∂ℓ/∂z| for a positive example (y = 1) as the logit z = margin moves, by autograd and formula.

    cross-entropy ℓ = −ln σ(z):  ∂ℓ/∂z = σ(z) − 1            → −1 when the model is badly wrong
    MSE on p = σ(z), ℓ = (σ(z) − 1)²: ∂ℓ/∂z = 2(σ − 1)σ(1 − σ) → 0 when badly wrong (saturated)
    """
    m = np.asarray(margins, dtype=np.float64)
    ce_t = Tensor(m, requires_grad=True)
    F.binary_cross_entropy_with_logits(ce_t, np.ones_like(m), reduction="sum").backward()
    mse_t = Tensor(m, requires_grad=True)
    F.mse_loss(F.sigmoid(mse_t), np.ones_like(m), reduction="sum").backward()
    s = 1 / (1 + np.exp(-m))
    return MarginGradients(m, np.abs(ce_t.grad.numpy()), np.abs(s - 1), np.abs(mse_t.grad.numpy()), np.abs(2 * (s - 1) * s * (1 - s)))


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


def train_sigmoid_classifier(x, y, loss: str, w0: float, b0: float = 0.0, lr: float = 0.5,
                             steps: int = 100) -> ClassifierRun:
    """Fit p = σ(w x + b) by full-batch SGD from (w0, b0) with 'cross_entropy' or 'mse' on p."""
    if loss not in ("cross_entropy", "mse"):
        raise ValueError(f"train_sigmoid_classifier: loss must be 'cross_entropy' or 'mse', got {loss!r}")
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    w = Tensor(np.array(w0, dtype=np.float64), requires_grad=True)
    b = Tensor(np.array(b0, dtype=np.float64), requires_grad=True)
    opt = SGD([w, b], lr=lr)
    hist = {"loss": [], "accuracy": [], "w": []}
    for step in range(steps + 1):
        z = w * x + b
        if loss == "cross_entropy":
            value = F.binary_cross_entropy_with_logits(z, y)
        else:
            value = F.mse_loss(F.sigmoid(z), y)
        hist["loss"].append(float(value.data))
        hist["accuracy"].append(float(np.mean((z.data > 0) == (y == 1))))
        hist["w"].append(float(w.data))
        if step == steps:
            break
        opt.zero_grad()
        value.backward()
        opt.step()
    return ClassifierRun(np.array(hist["loss"]), np.array(hist["accuracy"]), np.array(hist["w"]))


# ----------------------------------------------------------------------------- initial loss


def initial_loss(n_classes: int, logit_scale: float, n_samples: int = 512, seed: int = 0):
    """Mean cross-entropy of random logits N(0, scale²) against random labels, and ln K.

    With small logits every class gets ≈ 1/K, so the loss is ≈ ln K: the first number to check when
    training starts. Large initial logits make confident mistakes and a much larger loss.
    """
    if not (isinstance(n_classes, (int, np.integer)) and n_classes >= 2):
        raise ValueError(f"initial_loss: need at least 2 classes, got {n_classes!r}")
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, logit_scale, (n_samples, n_classes))
    y = rng.integers(0, n_classes, n_samples)
    return float(F.cross_entropy(Tensor(z), y).data), math.log(n_classes)


# ----------------------------------------------------------------------------- line fits

LINE_LOSSES = ("mse", "mae", "huber", "pseudo_huber")


def make_line_data(n: int = 30, slope: float = 1.5, intercept: float = 0.5, noise: float = 0.4,
                   n_outliers: int = 0, outlier_shift: float = 8.0, seed: int = 0):
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


def _regression_loss(name, pred, target, delta):
    if name == "mse":
        return F.mse_loss(pred, target)
    if name == "mae":
        return F.l1_loss(pred, target)
    if name == "huber":
        return F.huber_loss(pred, target, delta=delta)
    if name == "pseudo_huber":
        return F.pseudo_huber_loss(pred, target, delta=delta)
    raise ValueError(f"fit_line: loss must be one of {LINE_LOSSES}, got {name!r}")


def fit_line(x, y, loss: str = "mse", delta: float = 1.0, steps: int = 400, lr: float = 0.2):
    """Fit ŷ = w·x + b by minimising the mean ``loss`` with the engine: Adam, learning rate
    annealed to 0 by a cosine schedule (so MAE's constant-size gradients still settle).
    Returns (w, b, loss history)."""
    if loss not in LINE_LOSSES:
        raise ValueError(f"fit_line: loss must be one of {LINE_LOSSES}, got {loss!r}")
    xt, yt = Tensor(np.asarray(x, dtype=np.float64)), Tensor(np.asarray(y, dtype=np.float64))
    w = Tensor(np.array(0.0), requires_grad=True)
    b = Tensor(np.array(0.0), requires_grad=True)
    opt = Adam([w, b], lr=lr)
    sched = CosineAnnealingLR(opt, T_max=steps)
    history = np.empty(steps)
    for i in range(steps):
        opt.zero_grad()
        value = _regression_loss(loss, w * xt + b, yt, delta)
        value.backward()
        opt.step()
        sched.step()
        history[i] = float(value.data)
    return float(w.data), float(b.data), history


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

    :func:`fit_line` reaches the same lines with the engine's Adam (the tests check it).
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


def pinball_loss(pred, target, tau: float):
    """The quantile (pinball) loss, mean over the batch: τ·e for e = y − ŷ ≥ 0, (τ − 1)·e below;
    its minimiser over constants is the τ-quantile of y."""
    if not 0 < tau < 1:
        raise ValueError(f"pinball_loss: the quantile τ must lie strictly between 0 and 1, got {tau}")
    e = Tensor(np.asarray(target, dtype=np.float64)) - pred
    return (tau * F.relu(e) + (1 - tau) * F.relu(-e)).mean()


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


def fit_constant(y, loss: str = "mse", tau: float = 0.5, steps: int = 400, lr: float = 0.1) -> float:
    """argmin_c mean ℓ(y − c) by the engine: Adam from c = 0, learning rate annealed to 0 by a
    cosine schedule (so MAE's and pinball's constant-size gradients settle)."""
    y = np.asarray(y, dtype=np.float64)
    # shape (1,), not 0-d: Adam on a lone 0-d parameter fails in the engine today (reported)
    c = Tensor(np.zeros(1), requires_grad=True)
    opt = Adam([c], lr=lr)
    sched = CosineAnnealingLR(opt, T_max=steps)
    yt, zeros = Tensor(y), Tensor(np.zeros_like(y))
    for _ in range(steps):
        opt.zero_grad()
        if loss == "mse":
            value = F.mse_loss(c + zeros, yt)  # the constant broadcast over the batch
        elif loss == "mae":
            value = F.l1_loss(c + zeros, yt)
        elif loss == "pinball":
            value = pinball_loss(c, y, tau)
        else:
            raise ValueError(f"fit_constant: loss must be 'mse', 'mae' or 'pinball', got {loss!r}")
        value.backward()
        opt.step()
        sched.step()
    return float(c.data[0])


STATISTIC_OF = {"mse": "mean", "mae": "median", "pinball": "quantile"}


def constant_fit(y, loss: str = "mse", tau: float = 0.9, fitted: float | None = None) -> ConstantFit:
    """The engine's best constant under ``loss`` next to the statistic it estimates: MSE (the
    Gaussian's negative log-likelihood) the mean, MAE (the Laplace's) the median, pinball(τ) (the
    asymmetric Laplace's) the τ-quantile. ``fitted``: the engine's constant, when already known."""
    y = np.asarray(y, dtype=np.float64)
    if loss not in STATISTIC_OF:
        raise ValueError(f"constant_fit: loss must be one of {tuple(STATISTIC_OF)}, got {loss!r}")
    statistic = {"mse": np.mean, "mae": np.median, "pinball": lambda v: np.quantile(v, tau)}[loss](y)
    name = f"{tau:g}-quantile" if loss == "pinball" else STATISTIC_OF[loss]
    minimisers = (float(statistic),) * 2 if loss == "mse" else quantile_interval(y, 0.5 if loss == "mae" else tau)
    fitted = fit_constant(y, loss, tau=tau) if fitted is None else float(fitted)
    return ConstantFit(loss, fitted, name, float(statistic), minimisers)


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


def fit_class_probabilities(labels, n_classes: int, steps: int = 300, lr: float = 0.1) -> np.ndarray:
    """Constant logits fitted by cross-entropy to ``labels``: softmax of the result, which is the
    categorical maximum-likelihood estimate, the class frequencies."""
    labels = np.asarray(labels)
    z = Tensor(np.zeros(n_classes), requires_grad=True)
    opt = Adam([z], lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(z + Tensor(np.zeros((len(labels), n_classes))), labels).backward()
        opt.step()
    return F.softmax(Tensor(z.data), dim=-1).data


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
        raise ValueError("multilabel_report: softmax cross-entropy needs at least one true label to spread its "
                         "target over; pick one or more labels")
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
    return MultiLabelReport(F.sigmoid(Tensor(z)).data, F.softmax(Tensor(z), dim=-1).data, float(bce.data),
                            float(ce.data), math.log(len(labels)), zb.grad.numpy().copy(), zs.grad.numpy()[0].copy())


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


def focal_loss(logits, target, gamma: float = 2.0):
    """Lin et al.'s focal loss, mean over the batch: −(1 − p_t)^γ ln p_t with p_t the probability
    of the true class; γ = 0 is plain BCE, larger γ down-weights the examples already right."""
    if gamma < 0:
        raise ValueError(f"focal_loss: gamma must be ≥ 0, got {gamma}")
    t = np.asarray(target, dtype=np.float64)
    signed = logits * Tensor(2 * t - 1)  # ln p_t = ln σ(±z)
    log_pt = F.logsigmoid(signed)
    return (-((1 - log_pt.exp()) ** gamma) * log_pt).mean()


@dataclass
class ImbalanceRun:
    method: str
    accuracy: float
    recall: float  # of the minority class, at threshold ½
    precision: float  # of the minority predictions (nan when none is predicted)
    w: np.ndarray
    b: float


def train_imbalanced(x, y, method: str = "plain", gamma: float = 2.0, steps: int = 200, lr: float = 0.1) -> ImbalanceRun:
    """Logistic regression z = x wᵀ + b by full-batch Adam under plain BCE, BCE with the positives
    weighted by n_neg/n_pos (``pos_weight``, as PyTorch), or the focal loss; scored at threshold ½."""
    if method not in IMBALANCE_METHODS:
        raise ValueError(f"train_imbalanced: method must be one of {IMBALANCE_METHODS}, got {method!r}")
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    w = Tensor(np.zeros((1, x.shape[1])), requires_grad=True)
    b = Tensor(np.zeros(1), requires_grad=True)
    opt = Adam([w, b], lr=lr)
    xt = Tensor(x)
    pos_weight = np.array([(y == 0).sum() / max((y == 1).sum(), 1)])
    for _ in range(steps):
        opt.zero_grad()
        z = (xt @ w.T + b).reshape(-1)
        if method == "focal":
            loss = focal_loss(z, y, gamma)
        else:
            loss = F.binary_cross_entropy_with_logits(z, y, pos_weight=pos_weight if method == "weighted" else None)
        loss.backward()
        opt.step()
    return score_imbalanced(x, y, method, w.data.copy(), float(b.data[0]))


def score_imbalanced(x, y, method: str, w, b: float) -> ImbalanceRun:
    """The run of a classifier z = x wᵀ + b: accuracy, minority recall and precision at threshold ½."""
    x, y, w = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64), np.array(w, dtype=np.float64)
    pred = (x @ w.T + b).reshape(-1) > 0
    hits = float(np.sum(pred & (y == 1)))
    precision = hits / pred.sum() if pred.sum() else float("nan")
    return ImbalanceRun(method, float(np.mean(pred == (y == 1))), float(hits / max((y == 1).sum(), 1)), float(precision),
                        w, float(b))


# ----------------------------------------------------------------------------- the defaults, shipped
#
# The sections that train (the likelihood fits, the class frequencies, the imbalance runs) open on
# their default settings. Their results there are shipped as the checkpoint
# ``losses_default_fits``, so the page opens without training (~0.3 s of CPU saved); so are the
# results one control away that a radio or a slider of few steps reaches (the Gaussian noise,
# every τ and minority-share step), so those controls answer without
# training too (to rounding: a slider's 0.30000000000000004 reads the fit made at 0.3). The
# functions below are what the notebook calls: each returns the shipped result when its inputs are
# exactly ones shipped (the training is deterministic, so that is the result it would compute), and
# trains otherwise. ``train_default_fits`` trains with the functions above, never the shipped copy.

LINE_DEFAULT = {"n_outliers": 3, "outlier_shift": 10.0, "delta": 1.0}
LINE_DELTAS = tuple(round(0.1 * k, 1) for k in range(1, 51))  # the δ slider's steps, 0.1 to 5.0
LIKELIHOOD_DEFAULT = {"kind": "gamma", "tau": 0.9}
LIKELIHOOD_TAUS = tuple(round(0.05 * k, 2) for k in range(1, 20))  # the τ slider's steps, 0.05 to 0.95
CLASS_PROBS = (0.6, 0.3, 0.1)
IMBALANCE_DEFAULT = {"minority_share": 0.05, "gamma": 2.0}
IMBALANCE_SHARES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)  # the minority-share slider's steps
LINE_STEPS = 300


def default_line_data():
    """The outlier lab's data at its default settings: (x, y, is_outlier)."""
    return make_line_data(n=30, n_outliers=LINE_DEFAULT["n_outliers"], outlier_shift=LINE_DEFAULT["outlier_shift"],
                          seed=0)


def default_class_labels() -> np.ndarray:
    """The 500 labels the cross-entropy ↔ categorical example fits."""
    return sample_labels(CLASS_PROBS, n=500, seed=0)


def _key(value: float) -> str:
    """A slider step as a checkpoint key: '0.3' for 0.30000000000000004."""
    return f"{round(float(value), 6):g}"


def _on_step(value: float, steps) -> bool:
    return any(abs(float(value) - step) < 1e-9 for step in steps)


def train_default_fits() -> dict:
    """The checkpoint ``losses_default_fits``: the likelihood constants (either noise, pinball at every
    τ step), the class frequencies and the imbalance runs (every share step, γ = 2) (~2 s)."""
    def constants(kind):
        y = _targets(kind)
        return {"mse": fit_constant(y, "mse"), "mae": fit_constant(y, "mae"),
                "pinball": {_key(tau): fit_constant(y, "pinball", tau=tau) for tau in LIKELIHOOD_TAUS}}

    def imbalance(share):
        xi, yi = _imbalance_data(share)
        runs = {m: train_imbalanced(xi, yi, m, gamma=IMBALANCE_DEFAULT["gamma"]) for m in IMBALANCE_METHODS}
        return {m: {"w": r.w, "b": r.b} for m, r in runs.items()}

    return {
        "constants": {kind: constants(kind) for kind in NOISE_KINDS},
        "class_probabilities": fit_class_probabilities(default_class_labels(), len(CLASS_PROBS)),
        "imbalance": {_key(share): imbalance(share) for share in IMBALANCE_SHARES},
    }


@functools.lru_cache(maxsize=None)
def _targets(kind: str) -> np.ndarray:
    """The likelihood section's 2,000 targets of each noise kind (read-only: shared by the cache)."""
    y = skewed_targets(kind, n=2000, seed=0)
    y.flags.writeable = False
    return y


@functools.lru_cache(maxsize=None)
def _imbalance_data(share: float) -> tuple:
    """The imbalance section's data at each minority share (read-only: shared by the cache)."""
    x, y = imbalanced_data(n=1000, minority_share=share, seed=0)
    x.flags.writeable = y.flags.writeable = False
    return x, y


CHECKPOINTS = {"losses_kl_fits": train_default_kl_fits, "losses_default_fits": train_default_fits}


@functools.lru_cache(maxsize=1)
def _shipped() -> dict:
    """The checkpoint ``losses_default_fits``, read once."""
    return checkpoints.load(_defaults_checkpoint)


def _equal(a, b) -> bool:
    return np.shape(a) == np.shape(b) and np.array_equal(a, b)


def line_fits(x, y, losses, delta: float = LINE_DEFAULT["delta"]) -> dict:
    """loss -> (w, b) of :func:`best_line` for each of ``losses`` (about 1 ms each, so any data,
    dragged pucks included, is refitted at once)."""
    return {name: best_line(x, y, name, delta=delta) for name in losses}


def likelihood_fit(y, loss: str, tau: float) -> ConstantFit:
    """:func:`constant_fit`; its engine fit shipped for either noise kind's targets (pinball at every
    τ step)."""
    kind = next((k for k in NOISE_KINDS if _equal(y, _targets(k))), None)
    fitted = None
    if kind is not None and loss != "pinball":
        fitted = _shipped()["constants"][kind][loss]
    elif kind is not None and _on_step(tau, LIKELIHOOD_TAUS):
        fitted = _shipped()["constants"][kind]["pinball"][_key(tau)]
    return constant_fit(y, loss, tau, fitted=fitted)


def class_probabilities(labels, n_classes: int) -> np.ndarray:
    """:func:`fit_class_probabilities`; shipped for the default labels."""
    if n_classes == len(CLASS_PROBS) and _equal(labels, default_class_labels()):
        return _shipped()["class_probabilities"].copy()
    return fit_class_probabilities(labels, n_classes)


def imbalance_run(x, y, method: str, gamma: float) -> ImbalanceRun:
    """:func:`train_imbalanced`; shipped for the data of every minority-share step (at the default γ,
    for the focal loss)."""
    share = next((s for s in IMBALANCE_SHARES if _equal(x, _imbalance_data(s)[0]) and _equal(y, _imbalance_data(s)[1])),
                 None)
    if share is not None and (method != "focal" or gamma == IMBALANCE_DEFAULT["gamma"]):
        run = _shipped()["imbalance"][_key(share)][method]
        return score_imbalanced(x, y, method, run["w"], float(run["b"]))
    return train_imbalanced(x, y, method, gamma=gamma)


# ----------------------------------------------------------------------------- dragged outliers

LINE_BOUNDS = ((-3.2, 3.2), (-26.0, 28.0))  # (x, y) limits of the outlier lab's chart and its pucks


def with_dragged_outliers(x, y, is_outlier, points):
    """The line data with its outliers replaced by ``points`` (float [m, 2], e.g. dragged pucks):
    (x, y, is_outlier) with the inliers first, in their order, then the m points."""
    x, y, is_outlier = (np.asarray(v) for v in (x, y, is_outlier))
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    keep = ~is_outlier
    return (np.concatenate([x[keep], points[:, 0]]), np.concatenate([y[keep], points[:, 1]]),
            np.concatenate([np.zeros(keep.sum(), dtype=bool), np.ones(len(points), dtype=bool)]))


@functools.lru_cache(maxsize=None)
def outlier_background(n_outliers: int):
    """The pucks' chart (``widgets.puck_background``) with ``n_outliers`` outliers taken out of the
    line data: its inliers and the true line, drawn once for each count."""
    from engine.course import widgets

    x, y, out = make_line_data(n=30, n_outliers=n_outliers, seed=0)
    return widgets.puck_background(lambda ax: draw_inliers(ax, x[~out], y[~out]), x_bounds=LINE_BOUNDS[0],
                                   y_bounds=LINE_BOUNDS[1], figsize=(5.0, 3.2))


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

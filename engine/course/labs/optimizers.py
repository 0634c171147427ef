"""Optimizers at work on 2-D loss surfaces (notebook 04), all through ``engine.optim``.

- :data:`SURFACES`: an ill-conditioned quadratic, Rosenbrock's valley, a saddle with two minima,
  and Beale's function, each an engine-differentiable function of θ = (θ₁, θ₂) with its NumPy
  twin for contour grids, a start, the minimum and suggested learning rates.
- :func:`run_optimizer`: an engine optimizer (SGD, momentum, Nesterov, RMSprop, Adam, AdamW) on a
  2-D parameter for N steps, optionally with a learning-rate schedule and gradient clipping;
  returns the trajectory, the losses and whether it diverged.
- :func:`adam_first_steps`: Adam's update sizes over the first steps with and without bias
  correction (the corrected one equals ``engine.optim.Adam``).
- :func:`schedule_curves`: the learning rates of StepLR, cosine, linear warm-up then cosine,
  one-cycle and reduce-on-plateau from ``engine.optim.lr_scheduler``.
- :func:`l2_vs_decoupled`: Adam with an L2 penalty against AdamW's decoupled weight decay on a
  loss with one flat direction, where the two differ.
- :func:`clip_by_global_norm`: gradient clipping with ``nn.utils.clip_grad_norm_``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from engine import Tensor, optim
from engine.nn.module import Parameter
from engine.nn.utils import clip_grad_norm_
from engine.optim import lr_scheduler

OPTIMIZERS = ("sgd", "momentum", "nesterov", "rmsprop", "adam", "adamw")
LABELS = {"sgd": "SGD", "momentum": "momentum", "nesterov": "Nesterov", "rmsprop": "RMSprop",
          "adam": "Adam", "adamw": "AdamW"}
SCHEDULES = ("constant", "step", "cosine", "warmup_cosine", "onecycle", "plateau")

# ----------------------------------------------------------------------------- surfaces


def _quadratic(t):
    return 0.5 * (t[0] ** 2 + 100.0 * t[1] ** 2)


def _rosenbrock(t):
    x, y = t[0], t[1]  # index once: each index is a node of the graph
    return (1.0 - x) ** 2 + 100.0 * (y - x ** 2) ** 2


def _saddle(t):
    x, y = t[0], t[1]
    return 0.5 * x ** 2 - 0.5 * y ** 2 + 0.25 * y ** 4


def _beale(t):
    x, y = t[0], t[1]
    return (1.5 - x + x * y) ** 2 + (2.25 - x + x * y ** 2) ** 2 + (2.625 - x + x * y ** 3) ** 2


SURFACES = {
    "quadratic": dict(label="ill-conditioned quadratic", fn=_quadratic,
                      latex=r"f(\theta) = \tfrac12(\theta_1^2 + 100\,\theta_2^2)",
                      start=(-2.8, 1.2), minimum=(0.0, 0.0), box=((-3.2, 3.2), (-1.6, 1.6)),
                      lr=dict(sgd=0.018, momentum=0.01, nesterov=0.01, rmsprop=0.03, adam=0.1, adamw=0.1)),
    "rosenbrock": dict(label="Rosenbrock's valley", fn=_rosenbrock,
                       latex=r"f(\theta) = (1-\theta_1)^2 + 100\,(\theta_2-\theta_1^2)^2",
                       start=(-1.2, 1.0), minimum=(1.0, 1.0), box=((-2.0, 2.0), (-1.0, 3.0)),
                       lr=dict(sgd=1e-3, momentum=1e-3, nesterov=1e-3, rmsprop=3e-2, adam=0.1, adamw=0.1)),
    "saddle": dict(label="a saddle between two minima", fn=_saddle,
                   latex=r"f(\theta) = \tfrac12\theta_1^2 - \tfrac12\theta_2^2 + \tfrac14\theta_2^4",
                   start=(-2.0, 0.01), minimum=(0.0, 1.0), box=((-2.5, 2.5), (-1.8, 1.8)),
                   lr=dict(sgd=0.05, momentum=0.02, nesterov=0.02, rmsprop=0.01, adam=0.03, adamw=0.03)),
    "beale": dict(label="Beale's function", fn=_beale,
                  latex=r"f(\theta) = (1.5-\theta_1+\theta_1\theta_2)^2 + (2.25-\theta_1+\theta_1\theta_2^2)^2 + (2.625-\theta_1+\theta_1\theta_2^3)^2",
                  start=(1.0, 1.4), minimum=(3.0, 0.5), box=((-0.5, 4.5), (-1.0, 2.0)),
                  lr=dict(sgd=1e-2, momentum=3e-3, nesterov=3e-3, rmsprop=3e-2, adam=0.1, adamw=0.1)),
}


def _check_surface(name):
    if name not in SURFACES:
        raise ValueError(f"optimizers lab: unknown surface {name!r}; choose one of {', '.join(SURFACES)}")


def surface_value(name: str, theta) -> float:
    """f(θ) with the engine (the same function the optimizers minimise)."""
    _check_surface(name)
    return float(SURFACES[name]["fn"](Tensor(np.asarray(theta, dtype=np.float64))).data)


def surface_gradient(name: str, theta) -> np.ndarray:
    """∇f(θ) by autograd."""
    _check_surface(name)
    t = Tensor(np.asarray(theta, dtype=np.float64), requires_grad=True)
    SURFACES[name]["fn"](t).backward()
    return t.grad.numpy().copy()


def surface_grid(name: str, size: int = 120):
    """(θ₁ grid, θ₂ grid, f on the grid) over the surface's box, for contours (vectorised NumPy)."""
    _check_surface(name)
    (x0, x1), (y0, y1) = SURFACES[name]["box"]
    xx, yy = np.meshgrid(np.linspace(x0, x1, size), np.linspace(y0, y1, size))
    zz = SURFACES[name]["fn"](np.stack([xx, yy]))
    return xx, yy, zz


# ----------------------------------------------------------------------------- running optimizers


def surface_optimizer(name: str, params, lr: float, momentum: float = 0.9, alpha: float = 0.99,
                   betas=(0.9, 0.999), weight_decay: float = 0.0):
    """One of :data:`OPTIMIZERS` from ``engine.optim`` (AdamW's decay is ``weight_decay``; the others get none)."""
    if name == "sgd":
        return optim.SGD(params, lr=lr)
    if name == "momentum":
        return optim.SGD(params, lr=lr, momentum=momentum)
    if name == "nesterov":
        if momentum <= 0:
            raise ValueError("Nesterov momentum needs μ > 0 (with μ = 0 it is plain SGD); raise the momentum slider")
        return optim.SGD(params, lr=lr, momentum=momentum, nesterov=True)
    if name == "rmsprop":
        return optim.RMSprop(params, lr=lr, alpha=alpha)
    if name == "adam":
        return optim.Adam(params, lr=lr, betas=tuple(betas))
    if name == "adamw":
        return optim.AdamW(params, lr=lr, betas=tuple(betas), weight_decay=weight_decay)
    raise ValueError(f"optimizers lab: optimizer must be one of {OPTIMIZERS}, got {name!r}")


def make_lr_scheduler(name: str, opt, steps: int, warmup: int | None = None, step_size: int | None = None,
                  gamma: float = 0.5, factor: float = 0.5, patience: int = 10):
    """A scheduler from ``engine.optim.lr_scheduler`` for a run of ``steps`` steps (None for 'constant')."""
    warmup = warmup if warmup is not None else max(1, steps // 10)
    step_size = step_size if step_size is not None else max(1, steps // 4)
    if name == "constant":
        return None
    if name == "step":
        return lr_scheduler.StepLR(opt, step_size=step_size, gamma=gamma)
    if name == "cosine":
        return lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    if name == "warmup_cosine":
        return lr_scheduler.warmup_cosine(opt, warmup_steps=min(max(1, warmup), steps - 1), total_steps=steps)
    if name == "onecycle":
        lr = opt.param_groups[0]["lr"]
        return lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps + 1, cycle_momentum=False)
    if name == "plateau":
        return lr_scheduler.ReduceLROnPlateau(opt, factor=factor, patience=patience)
    raise ValueError(f"optimizers lab: schedule must be one of {SCHEDULES}, got {name!r}")


@dataclass
class Trajectory:
    path: np.ndarray  # [k + 1, 2]: the start, then θ after each step
    losses: np.ndarray  # f at each point of the path
    lrs: np.ndarray  # the learning rate used at each step
    diverged: bool
    grad_norms: np.ndarray  # ‖∇f‖ before clipping, per step

    @property
    def final_loss(self) -> float:
        return float(self.losses[-1])


@dataclass
class _Runner:
    """One optimizer's run in progress: its parameter, optimizer, schedule and what it has recorded."""

    theta: Parameter
    opt: object
    sched: object
    plateau: bool  # ReduceLROnPlateau steps on the loss
    path: list
    losses: list = field(default_factory=list)
    lrs: list = field(default_factory=list)
    norms: list = field(default_factory=list)
    diverged: bool = False

    def trajectory(self, surface: str) -> Trajectory:
        last = float("nan") if self.diverged else surface_value(surface, self.path[-1])
        return Trajectory(np.array(self.path), np.array(self.losses + [last]), np.array(self.lrs), self.diverged,
                          np.array(self.norms))


def _runner(surface: str, name: str, start, steps: int, lr: float | None, schedule: str, hyper: dict) -> _Runner:
    """A fresh run of optimizer ``name`` (ValueError for a setting it refuses)."""
    spec = SURFACES[surface]
    lr = spec["lr"][name] if lr is None else lr
    if not (lr > 0 and math.isfinite(lr)):
        raise ValueError(f"run_optimizer: the learning rate must be positive, got {lr}")
    theta = Parameter(np.asarray(start if start is not None else spec["start"], dtype=np.float64))
    opt = surface_optimizer(name, [theta], lr, **hyper)
    return _Runner(theta, opt, make_lr_scheduler(schedule, opt, steps), schedule == "plateau", [theta.data.copy()])


def _check_run(surface: str, steps) -> None:
    _check_surface(surface)
    if not (isinstance(steps, (int, np.integer)) and 1 <= steps <= 5000):
        raise ValueError(f"run_optimizer: steps must be an integer in [1, 5000], got {steps!r}")


def _run_together(surface: str, runners: dict, steps: int, clip: float | None) -> dict:
    """Step every runner ``steps`` times in lockstep: one autograd pass a step evaluates f and ∇f at
    all their θ at once (the surfaces are elementwise in θ₁ and θ₂, so θ of run j is column j),
    then each engine optimizer steps its own parameter. The numbers are those of separate runs;
    six optimizers cost about two runs' time instead of six."""
    fn, active = SURFACES[surface]["fn"], list(runners.values())
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(steps):
            if not active:
                break
            thetas = Tensor(np.stack([r.theta.data for r in active], axis=1), requires_grad=True)
            loss = fn(thetas)
            loss.sum().backward()  # column j of the gradient is ∇f at run j's θ alone
            for j, r in enumerate(active):
                r.losses.append(float(loss.data[j]))
                r.theta.grad = thetas.grad.numpy()[:, j].copy()
                r.norms.append(math.sqrt(float(r.theta.grad @ r.theta.grad)))
                if clip is not None:
                    clip_grad_norm_([r.theta], clip)
                r.lrs.append(r.opt.param_groups[0]["lr"])
                r.opt.step()
                if r.sched is not None:
                    r.sched.step(r.losses[-1]) if r.plateau else r.sched.step()
                r.path.append(r.theta.data.copy())
                r.diverged = not np.abs(r.theta.data).max() <= 1e6  # also true for inf and NaN
            active = [r for r in active if not r.diverged]
    return {key: r.trajectory(surface) for key, r in runners.items()}


def run_optimizer(surface: str, name: str, start=None, steps: int = 100, lr: float | None = None,
                  schedule: str = "constant", clip: float | None = None, **hyper) -> Trajectory:
    """Minimise ``surface`` from ``start`` with optimizer ``name`` for ``steps`` steps.

    Each step: f(θ) and ∇f by autograd, optional ``clip_grad_norm_(θ, clip)``, ``opt.step()``,
    then the schedule's ``step()`` (ReduceLROnPlateau gets the loss). A run that leaves the view
    by a factor of 10⁶ or becomes non-finite stops and is flagged ``diverged``.
    """
    _check_run(surface, steps)
    return _run_together(surface, {name: _runner(surface, name, start, steps, lr, schedule, hyper)}, steps, clip)[name]


def loss_gap(surface: str, run: Trajectory, max_points: int = 200) -> tuple:
    """(steps, f(θ_t) − f(θ*)) along a run, floored at 10⁻¹⁶ for a log axis, at no more than
    ``max_points`` evenly spaced steps (the last one kept): what a chart needs, not every step."""
    gap = np.maximum(run.losses - surface_value(surface, SURFACES[surface]["minimum"]), 1e-16)
    steps = np.arange(len(gap))
    if len(gap) > max_points:
        steps = np.unique(np.linspace(0, len(gap) - 1, max_points).round().astype(int))
    return steps, gap[steps]


# Which hyper-parameters each optimizer reads: a run is cached on these only, so moving μ re-runs
# momentum and Nesterov, not Adam (the race's sliders stay fast).
HYPER_USED = {"sgd": (), "momentum": ("momentum",), "nesterov": ("momentum",), "rmsprop": ("alpha",),
              "adam": ("betas",), "adamw": ("betas", "weight_decay")}

_RUNS: dict = {}  # run key -> Trajectory, the last 512 runs (oldest dropped first)


def _run_key(surface, name, start, steps, lr, schedule, clip, hyper) -> tuple:
    """What a run depends on: only the hyper-parameters ``name`` reads (:data:`HYPER_USED`)."""
    used = tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else float(v))
                        for k, v in hyper.items() if k in HYPER_USED.get(name, ())))
    start = None if start is None else tuple(float(v) for v in start)
    return (surface, name, start, int(steps), None if lr is None else float(lr), schedule,
            None if clip is None else float(clip), used)


def _remember(key: tuple, run: Trajectory) -> Trajectory:
    if len(_RUNS) >= 512:
        _RUNS.pop(next(iter(_RUNS)))
    _RUNS[key] = run
    return run


def cached_run(surface: str, name: str, start=None, steps: int = 100, lr: float | None = None,
               schedule: str = "constant", clip: float | None = None, **hyper) -> Trajectory:
    """:func:`run_optimizer`, remembered: the same settings return the same (unchanged) Trajectory.
    Only the hyper-parameters ``name`` reads (:data:`HYPER_USED`) are part of the key."""
    key = _run_key(surface, name, start, steps, lr, schedule, clip, hyper)
    if key not in _RUNS:
        _remember(key, run_optimizer(surface, name, start=start, steps=steps, lr=lr, schedule=schedule, clip=clip,
                                     **hyper))
    return _RUNS[key]


@dataclass
class Race:
    """Several optimizers from one start: the trajectories that ran, and why the others did not."""

    trajectories: dict = field(default_factory=dict)  # name -> Trajectory
    problems: dict = field(default_factory=dict)  # name -> the ValueError's message


def race(surface: str, names, start=None, steps: int = 100, lrs: dict | None = None,
         schedule: str = "constant", **hyper) -> Race:
    """Run each optimizer of ``names`` (in :data:`OPTIMIZERS` order) with its own learning rate;
    a setting one optimizer refuses (Nesterov with μ = 0) is recorded, the others still run. Runs
    are remembered as :func:`cached_run` remembers them; those not remembered run together."""
    _check_run(surface, steps)
    result, keys, fresh = Race(), {}, {}
    for name in (n for n in OPTIMIZERS if n in names):
        lr = (lrs or {}).get(name)
        keys[name] = _run_key(surface, name, start, steps, lr, schedule, None, hyper)
        if keys[name] not in _RUNS:
            try:
                fresh[name] = _runner(surface, name, start, steps, lr, schedule, hyper)
            except ValueError as err:
                result.problems[name] = str(err)
    for name, run in _run_together(surface, fresh, steps, None).items():
        _remember(keys[name], run)
    result.trajectories = {n: _RUNS[k] for n, k in keys.items() if n not in result.problems}
    return result


# ----------------------------------------------------------------------------- Nesterov's look-ahead


@dataclass
class LookAhead:
    """Nesterov momentum two ways on one surface: Sutskever et al.'s look-ahead form and PyTorch's."""

    theta: np.ndarray  # look-ahead form: θ_t, [steps + 1, 2]
    lookahead: np.ndarray  # φ_t = θ_t + μv_t, where the look-ahead form takes its gradients
    engine: np.ndarray  # engine.optim.SGD(nesterov=True)'s parameters, [steps + 1, 2]

    @property
    def max_difference(self) -> float:
        """max ‖φ_t − engine θ_t‖: PyTorch's parameters are the look-ahead points."""
        return float(np.max(np.abs(self.lookahead - self.engine)))


def lookahead_point(theta, velocity, momentum: float):
    """φ = θ + μv: where momentum alone would carry θ, and where Nesterov takes the gradient."""
    return np.asarray(theta, dtype=np.float64) + momentum * np.asarray(velocity, dtype=np.float64)


def nesterov_lookahead(surface: str = "quadratic", lr: float = 0.01, momentum: float = 0.9,
                       steps: int = 50) -> LookAhead:
    """The look-ahead form v ← μv − η∇f(θ + μv), θ ← θ + v takes the gradient where momentum is
    about to carry θ, so it brakes before it overshoots. PyTorch's form (b ← μb + g, θ ← θ − η(g + μb),
    with g at its own parameters) is the same algorithm in the variable φ = θ + μv."""
    _check_surface(surface)
    fn = SURFACES[surface]["fn"]
    theta, v = np.array(SURFACES[surface]["start"], dtype=np.float64), np.zeros(2)
    thetas, points = [theta.copy()], [theta.copy()]
    for _ in range(steps):
        v = momentum * v - lr * surface_gradient(surface, lookahead_point(theta, v, momentum))
        theta = theta + v
        thetas.append(theta.copy())
        points.append(lookahead_point(theta, v, momentum))
    p = Parameter(np.array(SURFACES[surface]["start"], dtype=np.float64))
    opt = optim.SGD([p], lr=lr, momentum=momentum, nesterov=True)
    path = [p.data.copy()]
    for _ in range(steps):
        opt.zero_grad()
        fn(p).backward()
        opt.step()
        path.append(p.data.copy())
    return LookAhead(np.array(thetas), np.array(points), np.array(path))


# ----------------------------------------------------------------------------- Adam's bias correction


@dataclass
class AdamSteps:
    """Adam's update Δθ_t and its moments at steps t = 1, 2, … (arrays over the steps)."""

    update: np.ndarray
    m: np.ndarray
    v: np.ndarray
    m_hat: np.ndarray
    v_hat: np.ndarray


def adam_first_steps(grads, lr: float = 0.01, betas=(0.9, 0.999), eps: float = 1e-8, bias_correction: bool = True):
    """Adam's updates Δθ_t for a sequence of gradients g_1, g_2, … (one parameter):

        m_t = β₁m_{t−1} + (1 − β₁)g_t,   v_t = β₂v_{t−1} + (1 − β₂)g_t²,
        with correction:  Δθ_t = −η · m̂_t / (√v̂_t + ε),  m̂ = m/(1 − β₁ᵗ), v̂ = v/(1 − β₂ᵗ)
        without:          Δθ_t = −η · m_t / (√v_t + ε)

    m and v start at 0, so early on they are biased toward 0, v more than m (β₂ > β₁): without
    the correction the first step is η(1 − β₁)/√(1 − β₂) ≈ 3.2η for the default betas.
    Returns an :class:`AdamSteps` of arrays over the steps.
    """
    b1, b2 = betas
    m = v = 0.0
    out = {k: [] for k in ("update", "m", "v", "m_hat", "v_hat")}
    for t, g in enumerate(np.asarray(grads, dtype=np.float64), start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = (m / (1 - b1**t), v / (1 - b2**t)) if bias_correction else (m, v)
        out["update"].append(-lr * m_hat / (math.sqrt(v_hat) + eps))
        for k, val in (("m", m), ("v", v), ("m_hat", m_hat), ("v_hat", v_hat)):
            out[k].append(val)
    return AdamSteps(**{k: np.array(val) for k, val in out.items()})


def engine_adam_updates(grads, lr: float = 0.01, betas=(0.9, 0.999), eps: float = 1e-8) -> np.ndarray:
    """The same updates from ``engine.optim.Adam`` fed the gradients one by one (the reference)."""
    p = Parameter(np.zeros(1))
    opt = optim.Adam([p], lr=lr, betas=tuple(betas), eps=eps)
    updates = []
    for g in np.asarray(grads, dtype=np.float64):
        before = p.data.copy()
        p.grad = np.array([g])
        opt.step()
        updates.append(float(p.data[0] - before[0]))
    return np.array(updates)


def noisy_gradients(steps: int, mean: float = 1.0, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    """g_t = mean + noise·N(0, 1): the gradient sequence of the bias-correction demo."""
    return mean + noise * np.random.default_rng(seed).standard_normal(steps)


# ----------------------------------------------------------------------------- stochastic gradients


@dataclass
class NoisyRuns:
    """Mini-batch SGD on least squares: the excess loss L(θ_t) − L(θ̂) after each step (full data),
    with a constant η, with η decayed by a cosine to 0, and full-batch GD at the same η."""

    batch_size: int
    n: int
    excess: dict  # 'constant' / 'decayed' / 'full batch' -> array over steps 0 … steps
    floor: dict  # the mean excess over the last 10 % of the steps, per run
    gradient_noise: float  # E‖g_batch − g‖² at θ̂, measured over 200 batches: the noise a step sees


def _least_squares_data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2)) * np.array([1.0, 0.5])
    y = X @ np.array([2.0, -1.0]) + rng.standard_normal(n)  # σ = 1 label noise: no θ fits every point
    return X, y


def least_squares_gradient(theta, X, y, idx) -> np.ndarray:
    """∇ of the mini-batch loss ‖X_B θ − y_B‖²/2B: X_Bᵀ(X_B θ − y_B)/B (the test checks it against
    autograd; written out because the noise demo takes thousands of two-parameter steps, where
    building a graph per step would cost most of the time)."""
    Xb = X[idx]
    return Xb.T @ (Xb @ np.asarray(theta, dtype=np.float64) - y[idx]) / len(Xb)


def _least_squares_step(opt, theta, X, y, idx) -> None:
    """One ``engine.optim`` step on the mini-batch ``idx`` of L(θ) = ‖Xθ − y‖²/2n."""
    theta.grad = least_squares_gradient(theta.data, X, y, idx)
    opt.step()


def sgd_noise(batch_size: int = 8, lr: float = 0.1, steps: int = 400, n: int = 512, seed: int = 0) -> NoisyRuns:
    """L(θ) = ‖Xθ − y‖²/2n on 2-D data with label noise. A mini-batch gradient is unbiased but
    noisy, with variance about 1/B of one example's: at a constant η, SGD stops falling at a floor
    that rises as B shrinks; decaying η averages the noise out and goes below it. Full-batch GD
    (B = n) has no noise and no floor. The batches come from ``default_rng(seed)``."""
    if not (isinstance(batch_size, (int, np.integer)) and 1 <= batch_size <= n):
        raise ValueError(f"sgd_noise: batch size must be an integer in [1, {n}], got {batch_size!r}")
    if not (0 < lr <= 1.0):
        raise ValueError(f"sgd_noise: η must be in (0, 1] for this problem (its largest curvature is ≈ 1), got {lr}")
    if not (isinstance(steps, (int, np.integer)) and 10 <= steps <= 5000):
        raise ValueError(f"sgd_noise: steps must be an integer in [10, 5000], got {steps!r}")
    X, y = _least_squares_data(n, seed)
    best = np.linalg.lstsq(X, y, rcond=None)[0]

    def losses(thetas):  # L at each row of thetas, in one product (not one per step)
        return 0.5 * np.mean((thetas @ X.T - y) ** 2, axis=1)

    floor_loss = float(losses(best[None])[0])
    excess, floor = {}, {}
    for name in ("constant", "decayed", "full batch"):
        rng = np.random.default_rng(seed + 1)  # the same batches for the constant and the decayed run
        theta = Parameter(np.zeros(2))
        opt = optim.SGD([theta], lr=lr)
        sched = lr_scheduler.CosineAnnealingLR(opt, T_max=steps) if name == "decayed" else None
        path = [theta.data.copy()]
        for _ in range(steps):
            idx = slice(None) if name == "full batch" else rng.integers(0, n, batch_size)
            _least_squares_step(opt, theta, X, y, idx)
            if sched is not None:
                sched.step()
            path.append(theta.data.copy())
        excess[name] = np.maximum(losses(np.array(path)) - floor_loss, 0.0)
        floor[name] = float(np.mean(excess[name][-max(1, steps // 10):]))
    rng = np.random.default_rng(seed + 2)
    noise = [np.sum((X[i].T @ (X[i] @ best - y[i]) / batch_size) ** 2)
             for i in (rng.integers(0, n, batch_size) for _ in range(200))]
    return NoisyRuns(int(batch_size), n, excess, floor, float(np.mean(noise)))


@dataclass
class RangeTest:
    """A learning-rate range test (Smith, 2017): η grows geometrically each mini-batch step while the
    loss is recorded, until it blows up."""

    lrs: np.ndarray  # η at each step taken
    losses: np.ndarray  # the full-data loss after each step
    best_lr: float  # η where the loss was lowest
    blowup_lr: float  # first η after the lowest point whose loss exceeds 4× the lowest (nan if none)
    stable_limit: float  # 2/λ_max of the Hessian XᵀX/n: plain GD diverges above it


def gd_stability_limit(hessian) -> float:
    """2/λ_max: gradient descent on a quadratic with this Hessian diverges for any larger η (along the
    steepest eigenvector each step multiplies the error by 1 − ηλ_max, below −1 past it)."""
    return 2.0 / float(np.linalg.eigvalsh(np.asarray(hessian, dtype=np.float64)).max())


def lr_range_test(batch_size: int = 32, steps: int = 120, lr_min: float = 1e-4, lr_max: float = 30.0,
                  n: int = 512, seed: int = 0) -> RangeTest:
    """SGD on the least-squares problem of :func:`sgd_noise` with η_t = lr_min·(lr_max/lr_min)^(t/steps).
    It stops once the loss exceeds 4× the lowest seen (as ``lr_find`` does) or is not finite."""
    if not (isinstance(batch_size, (int, np.integer)) and 1 <= batch_size <= n):
        raise ValueError(f"lr_range_test: batch size must be an integer in [1, {n}], got {batch_size!r}")
    if not (isinstance(steps, (int, np.integer)) and 10 <= steps <= 2000):
        raise ValueError(f"lr_range_test: steps must be an integer in [10, 2000], got {steps!r}")
    if not (0 < lr_min < lr_max):
        raise ValueError(f"lr_range_test: need 0 < lr_min < lr_max, got {lr_min}, {lr_max}")
    X, y = _least_squares_data(n, seed)
    rng = np.random.default_rng(seed + 1)
    theta = Parameter(np.zeros(2))
    opt = optim.SGD([theta], lr=lr_min)
    lrs, losses = [], []
    growth = (lr_max / lr_min) ** (1.0 / steps)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(steps):
            opt.param_groups[0]["lr"] = lr = lr_min * growth ** t
            _least_squares_step(opt, theta, X, y, rng.integers(0, n, batch_size))
            lrs.append(lr)
            losses.append(0.5 * float(np.mean((X @ theta.data - y) ** 2)))
            if not math.isfinite(losses[-1]) or losses[-1] > 4 * min(losses):
                break
    losses_arr = np.array(losses)
    finite = np.where(np.isfinite(losses_arr), losses_arr, np.inf)
    best = int(np.argmin(finite))
    over = np.flatnonzero(~(finite[best:] <= 4 * finite[best])) + best  # after the lowest point
    limit = gd_stability_limit(X.T @ X / n)
    return RangeTest(np.array(lrs), losses_arr, float(lrs[best]),
                     float(lrs[over[0]]) if len(over) else float("nan"), limit)


# ----------------------------------------------------------------------------- condition number


@dataclass
class ConditionRates:
    """Gradient descent and heavy-ball momentum, each with its best constant setting, on
    f(θ) = ½(θ₁² + κθ₂²) (Hessian eigenvalues μ = 1 and L = κ), from θ₀ = (1, 1)."""

    kappa: float
    norms: dict  # 'gd' / 'momentum' -> ‖θ_t − θ*‖ for t = 0 … steps
    measured: dict  # per-step contraction (‖θ_T‖/‖θ_{T/2}‖)^(2/T), over the second half of the run
    theory: dict  # GD (κ − 1)/(κ + 1); momentum (√κ − 1)/(√κ + 1)
    settings: dict  # the (η, μ) each ran with


@functools.lru_cache(maxsize=16)  # the section's chart and exercise 4 both read κ = 100: computed once
def condition_rates(kappa: float = 100.0, steps: int = 300) -> ConditionRates:
    """Measure the linear rates of "Why Momentum Really Works" (Goh, 2017) with ``engine.optim.SGD``.

    GD at its best η = 2/(L + μ) contracts by (κ − 1)/(κ + 1) per step. Momentum at its best
    η = (2/(√L + √μ))², μ_m = ((√κ − 1)/(√κ + 1))² contracts by √μ_m = (√κ − 1)/(√κ + 1).
    PyTorch's b ← μb + g, θ ← θ − ηb is exactly the heavy ball θ_{t+1} = θ_t − ηg_t + μ(θ_t − θ_{t−1}).
    The measurement skips the first half: at this setting momentum's extreme directions decay as
    t·rᵗ (a double root), which lifts a short window's rate slightly above r.
    """
    if not (math.isfinite(kappa) and 1.0 < kappa <= 1e4):
        raise ValueError(f"condition_rates: κ must be in (1, 10000], got {kappa}")
    if not (isinstance(steps, (int, np.integer)) and 10 <= steps <= 2000):
        raise ValueError(f"condition_rates: steps must be an integer in [10, 2000], got {steps!r}")
    root = math.sqrt(kappa)
    settings = {"gd": (2.0 / (kappa + 1.0), 0.0),
                "momentum": ((2.0 / (root + 1.0)) ** 2, ((root - 1.0) / (root + 1.0)) ** 2)}
    theory = {"gd": (kappa - 1.0) / (kappa + 1.0), "momentum": (root - 1.0) / (root + 1.0)}
    norms, measured = {}, {}
    for name, (lr, mu) in settings.items():
        theta = Parameter(np.ones(2))
        opt = optim.SGD([theta], lr=lr, momentum=mu)
        history = [float(np.linalg.norm(theta.data))]
        for _ in range(steps):
            opt.zero_grad()
            (0.5 * (theta[0] ** 2 + kappa * theta[1] ** 2)).backward()
            opt.step()
            history.append(float(np.linalg.norm(theta.data)))
        norms[name] = np.array(history)
        end = int(np.flatnonzero(norms[name] > 1e-250)[-1])  # a fast run may reach float64's floor
        half = end // 2
        measured[name] = float((norms[name][end] / norms[name][half]) ** (1.0 / max(end - half, 1)))
    return ConditionRates(float(kappa), norms, measured, theory, settings)


# ----------------------------------------------------------------------------- schedules


def plateau_metric(steps: int, seed: int = 0) -> np.ndarray:
    """A validation loss that falls, then stalls with noise: what ReduceLROnPlateau reacts to."""
    t = np.arange(steps)
    rng = np.random.default_rng(seed)
    return 0.3 + np.exp(-t / max(1, steps / 8)) + 0.01 * rng.standard_normal(steps)


def schedule_curves(steps: int = 100, lr: float = 0.1, step_size: int = 25, gamma: float = 0.5,
                    warmup: int = 10, pct_start: float = 0.3, factor: float = 0.5, patience: int = 5,
                    seed: int = 0) -> dict:
    """{schedule name: learning rate at steps 0 … steps − 1} from the engine's schedulers."""
    if not (isinstance(steps, (int, np.integer)) and steps >= 2):
        raise ValueError(f"schedule_curves: steps must be an integer ≥ 2, got {steps!r}")
    warmup = int(min(max(1, warmup), steps - 1))
    sv = lr_scheduler.schedule_values
    return {
        "step": sv(lambda o: lr_scheduler.StepLR(o, step_size=max(1, step_size), gamma=gamma), steps, lr),
        "cosine": sv(lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=steps), steps, lr),
        "warmup_cosine": sv(lambda o: lr_scheduler.warmup_cosine(o, warmup_steps=warmup, total_steps=steps), steps, lr),
        "onecycle": sv(lambda o: lr_scheduler.OneCycleLR(o, max_lr=lr, total_steps=steps, pct_start=pct_start),
                       steps, lr),
        "plateau": sv(lambda o: lr_scheduler.ReduceLROnPlateau(o, factor=factor, patience=patience), steps, lr,
                      metrics=plateau_metric(steps, seed)),
    }


# ----------------------------------------------------------------------------- weight decay


def _flat_direction_loss(t):
    """f(θ) = 5(θ₁ − 2)²: θ₂ does not affect the loss at all; only weight decay moves it."""
    return 5.0 * (t[0] - 2.0) ** 2


@dataclass
class WeightDecayPaths:
    adam_l2: np.ndarray  # Adam(weight_decay=λ): θ after each step, [steps + 1, 2]
    adamw: np.ndarray  # AdamW(weight_decay=λ)


def l2_vs_decoupled(weight_decay: float = 0.1, lr: float = 0.05, steps: int = 200,
                    start=(0.0, 2.0)) -> WeightDecayPaths:
    """Adam with L2 (``Adam(weight_decay=λ)``: λθ added to the gradient, then normalised by √v̂)
    against AdamW (``AdamW(weight_decay=λ)``: θ ← θ − ηλθ outside the adaptive step).

    On θ₂, which has no loss gradient, L2-Adam's normalised step is ≈ η·sign(θ₂) whatever λ is
    (it drives θ₂ to 0 in about |θ₂|/η steps), while AdamW shrinks it by (1 − ηλ) per step. On
    θ₁, whose loss gradient is large, L2's λθ₁ is drowned out; AdamW still pulls θ₁ toward 0 a little.
    Returns both paths, each [steps + 1, 2].
    """
    paths = {}
    for name in ("adam_l2", "adamw"):
        theta = Parameter(np.asarray(start, dtype=np.float64))
        if name == "adam_l2":
            opt = optim.Adam([theta], lr=lr, weight_decay=weight_decay)
        else:
            opt = optim.AdamW([theta], lr=lr, weight_decay=weight_decay)
        path = [theta.data.copy()]
        for _ in range(steps):
            opt.zero_grad()
            _flat_direction_loss(theta).backward()
            opt.step()
            path.append(theta.data.copy())
        paths[name] = np.array(path)
    return WeightDecayPaths(**paths)


# ----------------------------------------------------------------------------- clipping


def clip_by_global_norm(grads, max_norm: float):
    """Clip gradients (a list of arrays, one per parameter) by their global norm √(Σ g²) with
    ``nn.utils.clip_grad_norm_``. Returns (clipped list, norm before, norm after)."""
    params = []
    for g in grads:
        p = Parameter(np.zeros_like(np.asarray(g, dtype=np.float64)))
        p.grad = np.array(g, dtype=np.float64)
        params.append(p)
    before = float(clip_grad_norm_(params, max_norm).data)
    clipped = [p.grad.numpy() for p in params]
    after = math.sqrt(sum(float(np.sum(g * g)) for g in clipped))
    return clipped, before, after

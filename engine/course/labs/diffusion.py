"""The data, measurements and shipped results behind notebook 07 (diffusion).

The lesson itself (the noise schedules, ``q_sample``, the ε-prediction loss, the training loop,
the DDPM and DDIM steps and samplers, the conditional denoiser and guidance) is code on the
page, in its ``@app.function`` cells. This lab keeps the rest: seeded data sets, the 1-D
mixtures and their exact reverse process (written for speed), training runs that measure a
quality number as they go, sampler comparisons and the guidance trade. Where one of these needs
the lesson's code, the notebook passes its own functions in (``train``, ``sample``, ...), so a
learner's edit is what runs.

Every section opens on its default result: the networks trained with the default settings, and
the samples whose drawing would cost more than the page's budget, are shipped as
``engine/course/checkpoints/diffusion_*.py``, made by the notebook's own ``default_*`` functions
(``CHECKPOINTS`` at the end). ``shipped_*`` load them when the page's code is the code that
made them, and otherwise give the reason in one sentence.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from engine import Tensor, no_grad, random
from engine import data as engine_data
from engine import diffusion as D
from engine.course import checkpoints
from engine.course.checkpoints import diffusion_ddpm as _ddpm_checkpoint
from engine.course.checkpoints import diffusion_denoiser_1d as _denoiser_1d_checkpoint
from engine.course.checkpoints import diffusion_drawing as _drawing_checkpoint
from engine.course.checkpoints import diffusion_guidance as _guidance_checkpoint
from engine.course.checkpoints import diffusion_guidance_seeds as _guidance_seeds_checkpoint
from engine.course.checkpoints import diffusion_sampler_spread as _spread_checkpoint
from engine.course.checkpoints import diffusion_samplers as _samplers_checkpoint
from engine.distances import energy_distance

from ..plot import compact_chart, vega_text  # re-exported: the page's charts send less
from . import _checks
from ._checks import _int, _positive
from ._generative import DATASETS_2D, cached_by_code, code_key, toy_data_2d

__all__ = [
    "DATASETS_2D",
    "LINEAR_MAX_SCALE",
    "ChainCheck",
    "DDPMRun",
    "EpsilonCurves",
    "Moments",
    "chain_vs_closed_form",
    "compact_chart",
    "epsilon_curves",
    "packed_chart",
    "point_chart",
    "exact_reverse_1d",
    "linear_scale",
    "mixture_1d",
    "mixture_moments",
    "mode_commitment",
    "remembered",
    "reverse_trajectory",
    "run_trajectory",
    "sample_moments",
    "step_at",
    "toy_data_2d",
    "train_ddpm_tracked",
    "train_denoiser_1d",
    "SamplerComparison",
    "compare_samplers",
    "energy_distance",
    "ring_mixture",
    "sample_ddpm_steps",
    "sampler_floor_range",
    "SPREAD_SEEDS",
    "SPREAD_STEPS",
    "SamplerSpread",
    "sampler_spread",
    "shipped_sampler_spread",
    "spread_state",
    "ETAS",
    "ETA_STEPS",
    "EtaSweep",
    "eta_sweep",
    "sampling_steps",
    "ExactEpsilon",
    "GuidanceTrade",
    "guidance_trade",
    "MIN_DRAWN_POINTS",
    "drawing_held_out",
    "train_on_points",
    "vega_text",
    "ExactReverse1D",
    "exact_reverse_study_1d",
    "ScoreField",
    "empirical_score",
    "run_score_field",
    "score_field",
    "CHECKPOINTS",
    "DDPM_DEFAULT",
    "DDPM_DEFAULT_TEXT",
    "DRAW_DEFAULT",
    "GUIDANCE_SCALES",
    "MIX_DEFAULT",
    "SAMPLER_STEP_COUNTS",
    "GuidanceStudy",
    "GUIDANCE_SEEDS",
    "GuidanceSeeds",
    "guidance_seeds_state",
    "guidance_summary",
    "shipped_guidance_seeds",
    "SamplerGallery",
    "canvas_start",
    "guidance_study",
    "is_default",
    "run_state",
    "sampler_gallery",
    "shipped_ddpm",
    "shipped_denoiser_1d",
    "shipped_drawing_run",
    "shipped_guidance",
    "shipped_sampler_gallery",
]


_REMEMBERED: dict = {}


def remembered(key, build, size: int = 64):
    """``build()``, made once for each ``key`` and kept (the latest ``size`` keys, for every session):
    a chart that depends only on the values in ``key``, so a control moved back to a value it had
    shows it without building it again. ``key`` must hold everything the result depends on (the
    arrays a chart draws, as bytes); nothing may modify the result."""
    from engine.course import plot

    try:
        return _REMEMBERED[key]
    except KeyError:
        return plot.remember(_REMEMBERED, key, build(), size)


def packed_chart(chart, per_unit=None, digits: int = 4):
    """``chart`` (an Altair chart, one view or layers, its data inline as CSV from ``plot.data`` or
    :func:`compact_chart`), rewritten in place to send each group of rows (those that share their
    text and boolean columns: a series) as one object of arrays, ``{"series": "data", "x_q": [...],
    "y_q": [...]}``. Numbers keep ``digits`` significant digits, or travel as whole 1/``per_unit[c]``
    steps for the columns ``c`` of the dict ``per_unit`` (a hundredth of an 8-unit axis is a
    fraction of a pixel: ``-0.707`` travels as ``-71``). In the browser a ``flatten`` transform
    turns the arrays back into rows and a ``calculate`` divides the whole steps back. On the page
    a CSV row costs its fields plus a six-character line break (``&#92;n``: the spec is JSON inside
    an HTML attribute), an array entry its digits and a comma: a 600-point scatter takes about
    5 KB where compact CSV took 14. Encodings, tooltips and legend are unchanged. Returns ``chart``."""
    import csv
    import io

    per_unit = per_unit or {}
    for part in getattr(chart, "layer", None) or [chart]:
        source = part.data  # plain dicts below: the labs build no Altair objects (test_pyodide_rules)
        if not isinstance(getattr(source, "values", None), str):
            continue
        parse = dict(getattr(getattr(source, "format", None), "parse", None) or {})
        head, *body = csv.reader(io.StringIO(source.values))
        columns = dict(zip(head, zip(*body))) if body else {c: () for c in head}
        arrays = [c for c in head if parse.get(c) == "number"]
        keys = [c for c in head if c not in arrays]
        names = {c: f"{c}_q" if c in per_unit else c for c in arrays}
        rows_of: dict = {}  # each group's rows, in order
        for i, key in enumerate(zip(*(columns[c] for c in keys)) if keys else [()] * len(body)):
            rows_of.setdefault(key, []).append(i)
        numbers = {c: np.array([float(v) if v else np.nan for v in columns[c]]) for c in arrays}
        numbers = {c: np.round(v * per_unit[c]) if c in per_unit else v for c, v in numbers.items()}
        groups = {}
        for key, rows in rows_of.items():
            group = {c: k == "true" if parse.get(c) == "boolean" else k for c, k in zip(keys, key)}
            for c in arrays:
                group[names[c]] = _json_numbers(numbers[c][rows], c in per_unit, digits)
            groups[key] = group
        part.data = {"values": list(groups.values())}
        part.transform = [
            {"flatten": [names[c] for c in arrays]},
            *({"calculate": f"datum.{c}_q / {per_unit[c]}", "as": c} for c in per_unit if c in arrays),
            *(part.transform if isinstance(part.transform, list) else []),
        ]
    return chart


def _json_numbers(v: np.ndarray, whole: bool, digits: int) -> list:
    """``v`` as a JSON list: whole numbers as ints, others with ``digits`` significant digits, NaN as null."""
    if whole and np.isfinite(v).all():
        return v.astype(np.int64).tolist()
    return [None if not np.isfinite(x) else int(x) if whole else float(f"{x:.{digits}g}") for x in v]


def point_chart(layers: dict, **options):
    """``plot.point_layers(layers, **options)`` as the page sends it: each layer's points as two
    arrays of hundredths (:func:`packed_chart`)."""
    from engine.course import plot

    return packed_chart(plot.point_layers(layers, **options), per_unit={"x": 100, "y": 100})


# ----------------------------------------------------------------------------- schedules
LINEAR_MAX_SCALE = 0.999 / 0.02  # the largest rescaling that keeps β_T = 0.02·scale below 1


def linear_scale(T) -> float:
    """The factor applied to DDPM's bounds 1e-4 … 0.02 for T steps: 1000/T (so that ᾱ_T stays
    near 4e-5), capped at 0.999/0.02 ≈ 50 for T < 21, where β_T would otherwise reach 1."""
    return min(1000.0 / T, LINEAR_MAX_SCALE)


def step_at(fraction, T) -> int:
    """The time step t ∈ {0, …, T − 1} at a fraction of the way through the process."""
    return int(round(float(fraction) * (int(T) - 1)))


# ----------------------------------------------------------------------------- forward process
@dataclass(frozen=True)
class ChainCheck:
    """n runs of the forward chain from one point against the closed form q(x_t | x_0)."""

    samples: np.ndarray  # [n, D]: x_t of every run
    mean: np.ndarray  # [D]: their mean per coordinate
    var: np.ndarray  # [D]: their variance per coordinate
    closed_mean: np.ndarray  # [D]: √ᾱ_t x_0
    closed_var: float  # 1 − ᾱ_t


def chain_vs_closed_form(x0, schedule, t, n=4000, seed=0) -> ChainCheck:
    """Run the forward chain one step at a time from the single point ``x0`` (n copies):

        x_s = √(1 − β_s) x_{s−1} + √β_s ε_s,   s = 0 … t,

    and compare with the closed form q(x_t | x_0) = N(√ᾱ_t x_0, (1 − ᾱ_t) I).

    The chain of a schedule, ``x0``, ``n`` and ``seed`` is one run, kept every few steps with the
    generator's state there (:class:`_ChainRun`): another t resumes it from the last state kept
    before t, with the same draws, instead of drawing all t + 1 steps again."""
    op = "chain_vs_closed_form"
    x0 = np.atleast_1d(np.asarray(x0, dtype=np.float64))
    t = _int(op, "t", t, 0)
    if t >= schedule.T:
        raise ValueError(f"{op}: t must be < T = {schedule.T}, got {t}")
    n = _int(op, "n", n, 2)
    key = (x0.tobytes(), x0.shape, n, seed, schedule.betas.tobytes())
    # A run is taken out of the store while it advances, so two sessions of `marimo run` (threads of
    # one process) never step the same run: the other makes its own. No lock: the course layer
    # imports no threading (it must run in the browser's Pyodide too).
    run = _CHAINS.pop(key, None) or _ChainRun(x0, n, seed, schedule.T)
    x = run.state_at(t, schedule)
    _CHAINS[key] = run  # the newest last; the oldest forgotten beyond a few
    while len(_CHAINS) > 4:
        try:
            _CHAINS.pop(next(iter(_CHAINS)), None)
        except (StopIteration, RuntimeError):  # another session changed the store meanwhile
            break
    mean, var = D.q_mean_var(x0[None], t, schedule)
    return ChainCheck(
        samples=x,
        mean=x.mean(0),
        var=x.var(0),
        closed_mean=np.asarray(mean)[0],
        closed_var=float(np.asarray(var).reshape(-1)[0]),
    )


class _ChainRun:
    """One seeded run of the forward chain from n copies of x0, its states kept every ``every``
    steps (at most 25 a run) with the generator's state after each, so that a step t is reached
    from the last kept state before it with the draws a run from the start would make there."""

    def __init__(self, x0, n, seed, T):
        rng = np.random.default_rng(seed)
        self.every = max(8, -(-T // 25))
        self.kept = {-1: (np.broadcast_to(x0, (n,) + x0.shape).copy(), rng.bit_generator.state)}

    def state_at(self, t, schedule) -> np.ndarray:
        start = max(s for s in self.kept if s <= t)
        x, state = self.kept[start]
        rng = np.random.default_rng()
        rng.bit_generator.state = state
        for s in range(start + 1, t + 1):  # one step per time step: the chain itself (vectorised over samples)
            x = math.sqrt(schedule.alphas[s]) * x + math.sqrt(schedule.betas[s]) * rng.standard_normal(x.shape)
            if (s + 1) % self.every == 0 and s not in self.kept:
                self.kept[s] = (x, rng.bit_generator.state)
        return x.copy()  # the kept states stay as they are


_CHAINS: dict = {}  # (x0, n, seed, the schedule's β) -> _ChainRun, the most recently used last


# ----------------------------------------------------------------------------- training with a quality curve
@dataclass
class DDPMRun:
    """A seeded DDPM training run and the sample quality measured along it."""

    model: D.Denoiser
    losses: np.ndarray  # the loss at every step
    checkpoints: np.ndarray  # the steps at which quality was measured
    quality: np.ndarray  # energy distance of fresh samples to the held-out rows, per checkpoint
    noise_quality: float  # the same for pure N(0, I) noise, where sampling starts
    floor: float  # the same for a second draw of the data: what a perfect model would score
    held_out: np.ndarray  # the held-out rows [n_eval, D]
    stopped: str = ""  # why training stopped early (a non-finite loss), or empty
    samples: np.ndarray | None = None  # the 1-D runs: samples drawn with the learned model
    trajectories: dict = field(default_factory=dict, repr=False)  # run_trajectory's draws, kept
    fields: dict = field(default_factory=dict, repr=False)  # run_score_field's grids, kept


def train_ddpm_tracked(
    X,
    schedule,
    train,
    sample,
    steps=2000,
    hidden=64,
    lr=1e-2,
    batch_size=256,
    n_checkpoints=8,
    n_eval=500,
    seed=0,
    variance="posterior",
    on_step=None,
) -> DDPMRun:
    """Train ``engine.diffusion.Denoiser`` on X [N, D] (the last ``n_eval`` rows held out) with
    the page's training loop, ``train(model, X, schedule, steps, lr, batch_size, on_step)``, and
    measure the sample quality ``n_checkpoints`` times on the way with the page's sampler,
    ``sample(model, schedule, n, dim, variance)``.

    Quality: the energy distance between ``n_eval`` fresh samples and the held-out rows
    (0 for identical distributions). ``on_step(step)`` is called after every step. Seeded (on a
    forked stream: the global one is left as it was): the same arguments give the same run.
    """
    op = "train_ddpm_tracked"
    steps = _int(op, "steps", steps, 1)
    lr = _positive(op, "lr", lr)
    X = np.asarray(X, dtype=np.float32)
    n_eval = _int(op, "n_eval", n_eval, 2)
    if X.ndim != 2 or X.shape[0] < 2 * n_eval + 2:
        raise ValueError(f"{op}: X must be [N, D] with N >= 2·n_eval + 2 = {2 * n_eval + 2}, got shape {X.shape}")
    train_rows, held = X[:-n_eval], X[-n_eval:].astype(np.float64)
    measured_at = sorted({max(1, round(steps * k / n_checkpoints)) for k in range(1, n_checkpoints + 1)})
    quality = []
    with random.fork_rng(int(seed)):
        model = D.Denoiser(X.shape[1], int(hidden), T=schedule.T)

        def measure(step):
            if step in measured_at:
                quality.append(_quality(sample, model, schedule, held, variance))
            if on_step is not None:
                on_step(step)

        with np.errstate(all="ignore"):  # a diverging run is reported below, not warned about
            losses = np.asarray(train(model, train_rows, schedule, steps, lr, batch_size, measure), dtype=np.float64)
    stopped = ""
    if len(losses) and not math.isfinite(losses[-1]):
        stopped = f"the loss became non-finite at step {len(losses)}: lower the learning rate"
    rng = np.random.default_rng(seed + 1)
    noise = rng.standard_normal(held.shape)
    floor = energy_distance(train_rows[rng.choice(len(train_rows), n_eval, replace=False)].astype(np.float64), held)
    return DDPMRun(
        model=model,
        losses=losses,
        checkpoints=np.asarray(measured_at[: len(quality)]),
        quality=np.asarray(quality),
        noise_quality=energy_distance(noise, held),
        floor=floor,
        held_out=held,
        stopped=stopped,
    )


def _quality(sample, model, schedule, held, variance) -> float:
    """Energy distance of ``len(held)`` samples to ``held`` (NaN when sampling diverges)."""
    x = _finite_samples(sample, model, schedule, len(held), held.shape[1], variance)
    return float("nan") if x is None else energy_distance(x, held)


def _finite_samples(sample, model, schedule, n, dim, variance, trajectory=False):
    """``sample``'s draw, or None when it is not finite (a diverged model overflows)."""
    with np.errstate(all="ignore"):
        x = (
            sample(model, schedule, n, dim, variance, trajectory)
            if trajectory
            else sample(model, schedule, n, dim, variance)
        )
    x = np.asarray(x)
    return x if np.isfinite(x).all() else None


def reverse_trajectory(sample, model, schedule, n=1000, dim=2, seed=0, variance="posterior") -> np.ndarray:
    """The page's ancestral sampler ``sample`` from N(0, I) to data with every intermediate state
    kept: [T + 1, n, dim] (index k = the state after k reverse steps: k = 0 is the pure noise x_T,
    k = T the samples x_0). Seeded. A badly trained model can make the states blow up:
    ValueError, saying so."""
    with random.fork_rng(int(seed)):
        states = _finite_samples(sample, model, schedule, int(n), dim, variance, trajectory=True)
    if states is None:
        raise ValueError(
            "reverse_trajectory: the samples became NaN or infinite; the model's noise "
            "predictions are too large: lower the learning rate"
        )
    return states


def run_trajectory(run, sample, schedule, n=1000, dim=2, seed=0, variance="posterior") -> np.ndarray:
    """:func:`reverse_trajectory` of ``run.model``, drawn once per sampler code, schedule and
    setting and kept on the run (read-only): a control that redraws the section's figures
    re-reads it instead of sampling T steps again."""
    key = (code_key(sample), schedule.betas.tobytes(), int(n), dim, int(seed), variance)
    if key not in run.trajectories:
        states = reverse_trajectory(sample, run.model, schedule, n, dim, seed, variance)
        states.setflags(write=False)
        run.trajectories[key] = states
    return run.trajectories[key]


# ----------------------------------------------------------------------------- the score field in 2-D
@dataclass(frozen=True)
class ScoreField:
    """A learned score field against the true one on a grid, at one step t."""

    points: np.ndarray  # [G, 2] the grid
    true: np.ndarray  # [G, 2] ∇log q_t of the noised training points
    learned: np.ndarray  # [G, 2] the model's score
    density: np.ndarray  # [G] q_t at each grid point
    agreement: float  # the cosine between the two arrows, averaged with weights q_t


def empirical_score(X, points, schedule, t) -> tuple[np.ndarray, np.ndarray]:
    """The exact score and density of the training points X [N, D] noised to step t, at ``points``
    [G, D]: q_t = (1/N) Σ_i N(√ᾱ_t x_i, (1 − ᾱ_t) I), ∇log q_t(x) = (Σ_i r_i(x) √ᾱ_t x_i − x)/(1 − ᾱ_t),
    r_i ∝ exp(−‖x − √ᾱ_t x_i‖²/(2(1 − ᾱ_t))). A network that minimised the loss on these points
    exactly would predict ε = −√(1 − ᾱ_t) times this score."""
    X, points = np.asarray(X, dtype=np.float64), np.asarray(points, dtype=np.float64)
    t = _int("empirical_score", "t", t, 0)
    if t >= schedule.T:
        raise ValueError(f"empirical_score: t must be < T = {schedule.T}, got {t}")
    centres, v = schedule.sqrt_alpha_bars[t] * X, 1.0 - schedule.alpha_bars[t]
    # ‖x − c_i‖² = ‖x‖² − 2 x·c_i + ‖c_i‖²: one matrix product
    d2 = (points**2).sum(1)[:, None] - 2 * points @ centres.T + (centres**2).sum(1)[None]
    logits = -np.maximum(d2, 0) / (2 * v)
    top = logits.max(1, keepdims=True)
    w = np.exp(logits - top)
    total = w.sum(1, keepdims=True)
    score = ((w / total) @ centres - points) / v
    density = (total[:, 0] * np.exp(top[:, 0])) / (len(X) * (2 * np.pi * v) ** (X.shape[1] / 2))
    return score, density


def score_field(learned_score, model, X, schedule, t, size=15, bound=3.0) -> ScoreField:
    """``learned_score(model, x, t, schedule)`` (the page's) against :func:`empirical_score` of the
    training points X on a ``size`` × ``size`` grid over [−bound, bound]², at step t."""
    g = np.linspace(-bound, bound, _int("score_field", "size", size, 2))
    points = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    true, density = empirical_score(X, points, schedule, t)
    learned = np.asarray(learned_score(model, points.astype(np.float32), int(t), schedule), dtype=np.float64)
    norms = np.linalg.norm(true, axis=1) * np.linalg.norm(learned, axis=1)
    cosine = (true * learned).sum(1) / np.where(norms > 0, norms, 1.0)
    return ScoreField(
        points=points, true=true, learned=learned, density=density, agreement=float(density @ cosine / density.sum())
    )


def run_score_field(run, learned_score, X, schedule, t, size=15, bound=3.0) -> ScoreField:
    """:func:`score_field` of ``run.model`` on its training points X, made once per step, grid and
    code of ``learned_score`` and kept on the run (read-only): the t slider moved back re-reads it."""
    X = np.asarray(X)
    key = (code_key(learned_score), schedule.betas.tobytes(), int(t), int(size), float(bound), X.shape, float(X.sum()))
    if key not in run.fields:
        f = score_field(learned_score, run.model, X, schedule, t, size, bound)
        for a in (f.points, f.true, f.learned, f.density):
            a.setflags(write=False)
        run.fields[key] = f
    return run.fields[key]


# ----------------------------------------------------------------------------- exact reverse process in 1-D
def mixture_1d(separation=2.0, std=0.3, weight_left=0.5):
    """Two 1-D Gaussians at ±separation/2 with a common ``std``; the left one has weight
    ``weight_left``. An ``engine.data.GaussianMixture`` (exact density and score)."""
    op = "mixture_1d"
    separation = float(separation)
    std = _positive(op, "std", std)
    w = float(weight_left)
    if not 0 < w < 1:
        raise ValueError(f"{op}: weight_left must lie strictly between 0 and 1, got {w}")
    means = np.array([[-separation / 2], [separation / 2]])
    return engine_data.GaussianMixture(means, std, np.array([w, 1 - w]))


@dataclass(frozen=True)
class Moments:
    """Mean, variance and the share of mass left of 0 of a 1-D distribution or sample."""

    mean: float
    var: float
    share_left: float


def mixture_moments(mixture) -> Moments:
    """The exact moments of a 1-D mixture: E[x] = Σ w_k μ_k, Var[x] = Σ w_k (σ_k² + μ_k²) − E[x]²,
    and P(x < 0) = Σ w_k Φ(−μ_k/σ_k)."""
    means, w = mixture.means[:, 0], mixture.weights
    stds = np.broadcast_to(np.asarray(mixture.stds, dtype=np.float64).reshape(-1), means.shape)
    mean = float(w @ means)
    left = float(w @ np.array([0.5 * math.erfc(m / (s * math.sqrt(2))) for m, s in zip(means, stds)]))
    return Moments(mean=mean, var=float(w @ (stds**2 + means**2)) - mean**2, share_left=left)


def sample_moments(x) -> Moments:
    """The same three numbers for a sample."""
    x = np.asarray(x, dtype=np.float64)
    return Moments(mean=float(x.mean()), var=float(x.var()), share_left=float(np.mean(x < 0)))


def _exact_reverse_states_1d(mixture, schedule, n, variance="posterior", keep_states=False):
    """``engine.diffusion.exact_sample`` for a 1-D mixture, written for speed: the same draws from
    the engine's generator (x_T, then z at each step but the last), the same update, with
    ε*(x, t) = −√(1 − ᾱ_t) Σ_k r_k(x) (√ᾱ_t μ_k − x)/v_k, v_k = ᾱ_t σ_k² + 1 − ᾱ_t.
    Each component's log-weight log w_k − ½ log(2π v_k) − (√ᾱ_t μ_k − x)²/(2 v_k) is a quadratic
    in x whose coefficients depend on t only, so a step costs a few array operations on the n
    samples (two components, the page's mixtures: a logistic responsibility instead of a
    softmax). Returns the final samples [n] float32, or with ``keep_states`` every state [T + 1, n]."""
    if variance not in D.VARIANCES:
        raise ValueError(f"exact_reverse_1d: variance must be one of {D.VARIANCES}, got {variance!r}")
    T = schedule.T
    sigma = np.sqrt(schedule.betas if variance == "beta" else schedule.posterior_variance)
    means = mixture.means[:, 0]
    stds2 = np.broadcast_to(np.asarray(mixture.stds, dtype=np.float64).reshape(-1), means.shape) ** 2
    ab = schedule.alpha_bars[:, None]
    centres = schedule.sqrt_alpha_bars[:, None] * means  # [T, K] √ᾱ_t μ_k
    spreads = ab * stds2 + (1 - ab)  # [T, K] v_k
    # log-weight of component k at step t: a + b x + c x²; its score term (centre − x)/v = b + 2c x
    a = np.log(mixture.weights) - 0.5 * np.log(2 * np.pi * spreads) - centres**2 / (2 * spreads)
    b, c = centres / spreads, -0.5 / spreads
    eps_scale = -schedule.sqrt_one_minus_alpha_bars  # ε* = eps_scale · score
    step_scale = schedule.betas / schedule.sqrt_one_minus_alpha_bars
    inv_sqrt_alpha = 1.0 / np.sqrt(schedule.alphas)
    rng = random.generator()
    x = rng.standard_normal(int(n)).astype(np.float32)
    states = [x] if keep_states else None
    two = len(means) == 2
    for t in reversed(range(T)):
        x64 = x.astype(np.float64)
        if two:  # r_1 = σ(logit), logit = log-weight_1 − log-weight_0
            logit = (a[t, 1] - a[t, 0]) + x64 * ((b[t, 1] - b[t, 0]) + x64 * (c[t, 1] - c[t, 0]))
            with np.errstate(over="ignore"):
                r1 = 1.0 / (1.0 + np.exp(-logit))
            score = (b[t, 0] + 2 * c[t, 0] * x64) + r1 * ((b[t, 1] - b[t, 0]) + 2 * (c[t, 1] - c[t, 0]) * x64)
        else:
            terms = [a[t, k] + x64 * (b[t, k] + x64 * c[t, k]) for k in range(len(means))]
            top = np.maximum.reduce(terms)
            weights = [np.exp(term - top) for term in terms]
            score = sum(w * (b[t, k] + 2 * c[t, k] * x64) for k, w in enumerate(weights)) / sum(weights)
        eps = (eps_scale[t] * score).astype(np.float32)
        mean = (x - step_scale[t] * eps) * inv_sqrt_alpha[t]
        if t > 0:
            mean = mean + sigma[t] * rng.standard_normal(x.shape)
        x = mean.astype(np.float32)
        if keep_states:
            states.append(x)
    return np.stack(states) if keep_states else x


def exact_reverse_1d(mixture, schedule, n=4000, seed=0, variance="posterior", return_trajectory=False) -> np.ndarray:
    """Samples [n] of the reverse process run with the exact ε* = −√(1 − ᾱ_t) ∇log q_t of the
    mixture (what ``engine.diffusion.exact_sample`` draws); seeded. With ``return_trajectory``
    every state [T + 1, n] (index k: after k reverse steps; the samples are the last)."""
    with random.fork_rng(int(seed)):
        return _exact_reverse_states_1d(mixture, schedule, n, variance, keep_states=return_trajectory)


def train_denoiser_1d(
    mixture, schedule, train, sample, steps=1500, hidden=64, lr=1e-2, n=4000, seed=0, variance="posterior", on_step=None
) -> DDPMRun:
    """A learned ε_θ for the 1-D mixture: :func:`train_ddpm_tracked` on ``n`` samples of it, with
    ``samples`` [n] drawn with the learned model (NaN, and ``stopped`` says why, if they diverge)."""
    X = mixture.sample(n + 600, seed=seed)[0].astype(np.float64)
    run = train_ddpm_tracked(
        X,
        schedule,
        train,
        sample,
        steps=steps,
        hidden=hidden,
        lr=lr,
        n_checkpoints=4,
        n_eval=300,
        seed=seed,
        variance=variance,
        on_step=on_step,
    )
    with random.fork_rng(int(seed) + 7):
        x = _finite_samples(sample, run.model, schedule, n, 1, variance)
    if x is None:
        run.samples = np.full(n, np.nan)
        run.stopped = run.stopped or "sampling diverged: the model's predictions are too large"
    else:
        run.samples = x[:, 0]
    return run


@dataclass(frozen=True)
class EpsilonCurves:
    """The noise prediction over a grid of x at one step t."""

    x: np.ndarray  # the grid
    exact: np.ndarray  # ε*(x, t) = −√(1 − ᾱ_t) ∇log q_t(x)
    density: np.ndarray  # q_t(x), the noised density
    learned: np.ndarray | None = None  # ε_θ(x, t) when a model was given


def epsilon_curves(mixture, schedule, t, model=None, grid=None) -> EpsilonCurves:
    """The optimal noise prediction ε*(x, t) of the mixture over a grid of x, and the learned
    ε_θ(x, t) when a ``model`` is given; also the noised density q_t(x)."""
    grid = np.linspace(-4, 4, 401) if grid is None else np.asarray(grid, dtype=np.float64)
    t = int(t)
    learned = None
    if model is not None:
        with no_grad():
            learned = (
                model(Tensor(grid[:, None].astype(np.float32)), np.full(len(grid), t, dtype=np.int64))
                .data[:, 0]
                .astype(np.float64)
            )
    return EpsilonCurves(
        x=grid,
        exact=D.exact_epsilon(mixture, grid[:, None], t, schedule)[:, 0],
        density=D.noised_mixture(mixture, t, schedule).prob(grid[:, None]),
        learned=learned,
    )


def mode_commitment(mixture, schedule, n=2000, seed=0, variance="posterior", states=None) -> np.ndarray:
    """Coarse to fine with the exact ε*: for each number k = 0 … T of reverse steps taken, the
    share of samples already on the side of the valley between the two modes (x = the midpoint
    of the means, scaled by √ᾱ_t) on which they end. Which mode a sample joins (the coarse
    structure) is settled by the large-t steps; where in the mode it lands is settled last.
    ``states``: a trajectory of :func:`exact_reverse_1d` to count on (n, seed and variance are
    then its own) rather than drawing one."""
    if states is None:
        states = exact_reverse_1d(mixture, schedule, n, seed, variance, return_trajectory=True)
    states = np.asarray(states)
    if states.ndim != 2 or len(states) != schedule.T + 1:
        raise ValueError(f"mode_commitment: states must be [T + 1, n] = [{schedule.T + 1}, n], got {states.shape}")
    middle = float(mixture.means[:, 0].mean())
    # after k steps the state is x_{T−k}, noised by ᾱ at index T − 1 − k (and not at all at k = T)
    scale = np.sqrt(np.concatenate([schedule.alpha_bars[::-1], [1.0]]))
    side = states > (scale * middle)[:, None]
    return (side == side[-1]).mean(axis=1)


@dataclass(frozen=True)
class ExactReverse1D:
    """One run of the exact reverse process on a two-mode 1-D mixture: what section 4 shows."""

    samples: np.ndarray  # [n] the samples it ends with
    commitment: np.ndarray  # [T + 1] :func:`mode_commitment` of its states


@cached_by_code(maxsize=32)
def exact_reverse_study_1d(
    schedule_of, separation, std, weight_left, T, variance="posterior", n=4000, seed=0
) -> ExactReverse1D:
    """:func:`exact_reverse_1d` on ``mixture_1d(separation, std, weight_left)`` and the page's
    linear schedule of ``T`` steps, ``schedule_of("linear", T)``, with the coarse-to-fine count of
    the same run. Kept per setting (read-only arrays): a control moved back to a value it had
    redraws without sampling again."""
    mixture = mixture_1d(separation, std, weight_left)
    schedule = schedule_of("linear", T)
    states = exact_reverse_1d(mixture, schedule, n, seed, variance, return_trajectory=True)
    study = ExactReverse1D(samples=states[-1].copy(), commitment=mode_commitment(mixture, schedule, states=states))
    study.samples.setflags(write=False)
    study.commitment.setflags(write=False)
    return study


# ----------------------------------------------------------------------------- few-step samplers
def ring_mixture(n_modes=8, radius=1.6, std=0.15):
    """``n_modes`` 2-D Gaussians on a circle (the "8 Gaussians" set on the scale of N(0, I)), as an
    ``engine.data.GaussianMixture``: its exact ε* lets a sampler be judged with no training error."""
    op = "ring_mixture"
    n_modes = _int(op, "n_modes", n_modes, 1)
    angles = 2 * np.pi * np.arange(n_modes) / n_modes
    means = _positive(op, "radius", radius) * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return engine_data.GaussianMixture(means, _positive(op, "std", std), np.ones(n_modes))


class ExactEpsilon:
    """The exact ε*(x, t) = −√(1 − ᾱ_t) ∇log q_t(x) of an isotropic Gaussian mixture as a "model"
    ``(x, t) -> Tensor``: the values of ``engine.diffusion.OptimalDenoiser``, written for speed
    (the samplers of section 5 ask it thousands of times). q_t is the mixture with centres
    c_k = √ᾱ_t μ_k and variances v_k = ᾱ_t σ_k² + 1 − ᾱ_t; its log-terms
    log w_k − (D/2) log(2π v_k) − (‖x‖² − 2 x·c_k + ‖c_k‖²)/(2 v_k) need one matrix product
    x·cᵀ per call, the rest is computed once per step of the schedule."""

    def __init__(self, mixture, schedule):
        means, stds2 = mixture.means, np.asarray(mixture.stds, dtype=np.float64) ** 2
        ab = schedule.alpha_bars[:, None]
        self.centres = schedule.sqrt_alpha_bars[:, None, None] * means  # [T, K, D]
        self.spreads = ab * stds2 + (1 - ab)  # [T, K]
        self.constant = (
            np.log(mixture.weights)
            - 0.5 * mixture.dim * np.log(2 * np.pi * self.spreads)
            - (self.centres**2).sum(-1) / (2 * self.spreads)
        )  # [T, K]
        self.eps_scale = -schedule.sqrt_one_minus_alpha_bars
        self.T = schedule.T

    def __call__(self, x, t) -> Tensor:
        x = np.asarray(getattr(x, "data", x))
        x64 = x.astype(np.float64)
        t = np.broadcast_to(np.asarray(t, dtype=np.int64), x.shape[:1])
        if len(t) and (t.min() < 0 or t.max() >= self.T):
            raise ValueError(f"ExactEpsilon: steps must lie in 0 … {self.T - 1}, got {t.min()} … {t.max()}")
        dtype = x.dtype if x.dtype.kind == "f" else np.float32
        if len(t) and (t == t[0]).all():  # the samplers ask one step for every row
            return Tensor(self._at(x64, int(t[0])).astype(dtype))
        eps = np.empty(x.shape, dtype=np.float64)
        for step in np.unique(t):
            rows = t == step
            eps[rows] = self._at(x64[rows], int(step))
        return Tensor(eps.astype(dtype))

    def _at(self, x, step) -> np.ndarray:
        c, v = self.centres[step], self.spreads[step]
        terms = self.constant[step] + (x @ c.T - 0.5 * (x * x).sum(1, keepdims=True)) / v
        r = np.exp(terms - terms.max(1, keepdims=True))
        r /= r.sum(1, keepdims=True)  # responsibilities r_k(x)
        pull = r / v  # score = Σ_k r_k (c_k − x)/v_k
        return self.eps_scale[step] * (pull @ c - pull.sum(1, keepdims=True) * x)


def sampling_steps(schedule, steps) -> np.ndarray:
    """The ``steps`` time steps τ_1 < … < τ_S (0-based indices into the schedule, τ_S = T − 1,
    τ_1 = 0) a few-step sampler visits, evenly spaced."""
    steps = _int("sampling_steps", "steps", steps, 1)
    if steps > schedule.T:
        raise ValueError(f"sampling_steps: steps must be <= T = {schedule.T}, got {steps}")
    return np.unique(np.round(np.linspace(0, schedule.T - 1, steps)).astype(np.int64))


def _respaced(schedule, taus):
    """The schedule of the visited steps: β'_i = 1 − ᾱ_{τ_i}/ᾱ_{τ_{i−1}} (ᾱ before τ_1 is 1),
    so that ᾱ'_i = ᾱ_{τ_i}: the same marginals q(x_τ | x_0), fewer steps (Nichol & Dhariwal 2021)."""
    ab = schedule.alpha_bars[taus]
    return D.Schedule.from_betas(1 - ab / np.concatenate([[1.0], ab[:-1]]))


def sample_ddpm_steps(sample, model, schedule, steps, n=1000, dim=2, seed=0) -> np.ndarray:
    """The page's ancestral sampler ``sample`` (σ² = β̃, the posterior variance) on ``steps``
    evenly spaced steps of ``schedule``: the respaced schedule, with the model asked at the
    original steps τ_i."""
    taus = sampling_steps(schedule, steps)

    def at_original_steps(x, i):
        return model(x, taus[np.asarray(i)])

    with random.fork_rng(int(seed)):
        return sample(at_original_steps, _respaced(schedule, taus), int(n), dim, "posterior")


@dataclass(frozen=True)
class SamplerComparison:
    """DDPM against DDIM with the exact ε* of a mixture, scored by energy distance to fresh data."""

    steps: np.ndarray  # the step counts
    ddpm: np.ndarray  # energy distance of the DDPM samples, per step count
    ddim: np.ndarray  # the same for DDIM
    floor: float  # a second draw of the data against the first: the score of a perfect sampler


def compare_samplers(
    mixture, schedule, ddpm_sample, ddim_sample, steps=(10, 50, 1000), n=1000, seed=0, on_step=None
) -> SamplerComparison:
    """Both of the page's samplers at each step count, from the same x_T (``seed``), with the
    exact ε* of ``mixture``: respaced ancestral sampling (:func:`sample_ddpm_steps`) and
    ``ddim_sample(model, schedule, steps, n, dim)``."""
    gallery = sampler_gallery(
        mixture, schedule, ddpm_sample, ddim_sample, steps=steps, n=n, shown=1, seed=seed, on_step=on_step
    )
    return gallery.table(steps)


SPREAD_STEPS = (5, 10, 50, 1000)  # the step counts section 5 compares over seeds
SPREAD_SEEDS = 5


@dataclass(frozen=True)
class SamplerSpread:
    """:func:`sampler_gallery`'s scores for several seeds: each seed draws its own x_T, its own
    noise, its own 1000 data points to score against and its own second draw (the floor)."""

    steps: np.ndarray  # [S] step counts
    seeds: np.ndarray  # [R]
    ddpm: np.ndarray  # [R, S] energy distance of the respaced DDPM samples
    ddim: np.ndarray  # [R, S] the same for DDIM
    floor: np.ndarray  # [R] a second draw of the data against the first, per seed

    def ddim_lower(self) -> np.ndarray:
        """[S]: for how many seeds DDIM scored below DDPM at each step count."""
        return (self.ddim < self.ddpm).sum(axis=0)


def sampler_spread(
    mixture, schedule, ddpm_sample, ddim_sample, steps=SPREAD_STEPS, seeds=SPREAD_SEEDS, n=1000, on_step=None
) -> SamplerSpread:
    """:func:`sampler_gallery` at ``steps`` for the seeds 0 … ``seeds`` − 1 (seed 0 is the page's
    gallery): how much of a difference between the samplers outlives a new draw.
    ``on_step(k)`` after each seed."""
    seeds = np.arange(_int("sampler_spread", "seeds", seeds, 1))
    ddpm, ddim, floor = [], [], []
    for k, seed in enumerate(seeds):
        g = sampler_gallery(mixture, schedule, ddpm_sample, ddim_sample, steps=steps, n=n, shown=1, seed=int(seed))
        ddpm.append(g.ddpm)
        ddim.append(g.ddim)
        floor.append(g.floor)
        if on_step is not None:
            on_step(k + 1)
    return SamplerSpread(
        steps=np.asarray(steps), seeds=seeds, ddpm=np.asarray(ddpm), ddim=np.asarray(ddim), floor=np.asarray(floor)
    )


ETAS = (0.0, 0.25, 0.5, 0.75, 1.0)  # the η slider's stops
ETA_STEPS = 10


@dataclass(frozen=True)
class EtaSweep:
    """DDIM with η from 0 (no noise after x_T) to 1 (the respaced DDPM's noise) at one step
    count, scored for several seeds as :func:`sampler_gallery` scores."""

    steps: int
    etas: np.ndarray  # [E]
    scores: np.ndarray  # [R, E] energy distance to the data, per seed and η
    samples: np.ndarray  # [E, shown, dim] seed 0's first samples at each η


def eta_sweep(
    mixture, schedule, ddim_sample, steps=ETA_STEPS, etas=ETAS, seeds=SPREAD_SEEDS, n=1000, shown=300, on_step=None
) -> EtaSweep:
    """``ddim_sample(model, schedule, steps, n, dim, eta)`` with the exact ε* of ``mixture`` at each
    η of ``etas``, for the seeds 0 … ``seeds`` − 1 (x_T and the data scored against drawn as
    :func:`sampler_gallery` draws them, so η = 0 is its DDIM). ``on_step(k)`` after each seed."""
    model = ExactEpsilon(mixture, schedule)
    scores, samples = [], []
    for seed in range(_int("eta_sweep", "seeds", seeds, 1)):
        held = mixture.sample(n, seed=seed + 100)[0]
        row = []
        for eta in etas:
            with random.fork_rng(seed):
                x = np.asarray(ddim_sample(model, schedule, steps, int(n), mixture.dim, float(eta)))
            row.append(energy_distance(x, held))
            if seed == 0:
                samples.append(x[:shown].astype(np.float32))
        scores.append(row)
        if on_step is not None:
            on_step(seed + 1)
    return EtaSweep(
        steps=int(steps), etas=np.asarray(etas, dtype=np.float64), scores=np.asarray(scores), samples=np.stack(samples)
    )


def spread_state(s: SamplerSpread, e: EtaSweep) -> dict:
    """What the shipped spread and η sweep keep."""
    return {
        "steps": s.steps,
        "seeds": s.seeds,
        "ddpm": s.ddpm,
        "ddim": s.ddim,
        "floor": s.floor,
        "eta": {"steps": e.steps, "etas": e.etas, "scores": e.scores, "samples": e.samples},
    }


@cached_by_code(maxsize=4)
def shipped_sampler_spread(*code) -> tuple[SamplerSpread | None, EtaSweep | None, str]:
    """Section 5's scores over seeds and its η sweep as the page's ``default_sampler_spread`` drew
    them, or ``(None, None, reason)`` as :func:`shipped_ddpm`."""
    state, reason = checkpoints.load_if_fits(_spread_checkpoint, *code)
    if state is None:
        return None, None, reason
    e = state["eta"]
    return (
        SamplerSpread(**{k: state[k] for k in ("steps", "seeds", "ddpm", "ddim", "floor")}),
        EtaSweep(steps=int(e["steps"]), etas=e["etas"], scores=e["scores"], samples=e["samples"]),
        "",
    )


# ----------------------------------------------------------------------------- classifier-free guidance
@dataclass(frozen=True)
class GuidanceTrade:
    """Per guidance scale: fidelity (the share of samples whose nearest training point has the
    label) and spread (the samples' total variance over the labelled class's own)."""

    scales: np.ndarray
    fidelity: np.ndarray
    spread: np.ndarray


def guidance_trade(X, y, label, samples_by_scale: dict) -> GuidanceTrade:
    """Score samples drawn at several guidance scales (``{w: samples}``) for ``label`` of the
    labelled training data X [N, 2], y [N]."""
    X = np.asarray(X, dtype=np.float64)
    real = X[y == label]
    scales = np.asarray(sorted(samples_by_scale), dtype=np.float64)
    fidelity, spread = [], []
    data_norms = (X**2).sum(1)
    for w in scales:
        x = np.asarray(samples_by_scale[w], dtype=np.float64)
        # ‖x − X‖² = ‖X‖² − 2 x·X (+ ‖x‖², the same for every training point): one matrix product
        nearest = np.argmin(data_norms[None] - 2 * x @ X.T, axis=1)
        fidelity.append(float(np.mean(y[nearest] == label)))
        spread.append(float(x.var(0).sum() / real.var(0).sum()))
    return GuidanceTrade(scales=scales, fidelity=np.asarray(fidelity), spread=np.asarray(spread))


# ----------------------------------------------------------------------------- your own data
MIN_DRAWN_POINTS = 20


def drawing_held_out(n) -> int:
    """How many of ``n`` drawn points :func:`train_on_points` holds out to score the samples: a
    quarter (of the points beyond two), at least 2; it trains on the rest."""
    return max(2, (int(n) - 2) // 4)


def train_on_points(X, schedule, train, sample, steps=1500, seed=0, on_step=None) -> DDPMRun:
    """A DDPM on a small set of 2-D points (a drawing): shuffled on ``seed``, a quarter held out
    for the quality number, the rest to train on; ``samples`` [500, 2] drawn from the model.
    The points are used as they are (not standardised): draw them on the scale of N(0, I)."""
    op = "train_on_points"
    X = np.asarray(X, dtype=np.float64).reshape(-1, 2)
    if len(X) < MIN_DRAWN_POINTS:
        raise ValueError(f"{op}: draw at least {MIN_DRAWN_POINTS} points, got {len(X)}")
    X = X[np.random.default_rng(seed).permutation(len(X))]
    run = train_ddpm_tracked(
        X,
        schedule,
        train,
        sample,
        steps=steps,
        n_checkpoints=2,
        n_eval=drawing_held_out(len(X)),
        batch_size=min(256, len(X)),
        seed=seed,
        on_step=on_step,
    )
    with random.fork_rng(int(seed) + 5):
        x = _finite_samples(sample, run.model, schedule, 500, 2, "posterior")
    if x is None:
        run.stopped = run.stopped or "sampling diverged: the model's predictions are too large"
    else:
        run.samples = x.astype(np.float64)
    return run


# ----------------------------------------------------------------------------- shipped default results
# Every section opens on its default result: the trained networks (and, where sampling at load
# would cost more than the page's budget, the samples and scores the figures show), made by the
# notebook's default_* functions and shipped as engine/course/checkpoints/diffusion_*.py.
DDPM_DEFAULT = {"data": "moons", "kind": "linear", "T": 50, "steps": 2000, "hidden": 64, "lr": 1e-2}
DDPM_DEFAULT_TEXT = (
    f"{DDPM_DEFAULT['data']}, {DDPM_DEFAULT['kind']} schedule, T = {DDPM_DEFAULT['T']}, "
    f"{DDPM_DEFAULT['steps']} steps, width {DDPM_DEFAULT['hidden']}, "
    f"learning rate {DDPM_DEFAULT['lr']:.0e}".replace("e-0", "e-")
)  # as the dropdown says 1e-2
MIX_DEFAULT = {"separation": 3.0, "std": 0.3, "weight_left": 0.3, "T": 50, "variance": "beta", "steps": 1500}
DRAW_DEFAULT = {"data": "moons", "points": 300, "bound": 3.0, "T": 50, "steps": 1500}
SAMPLER_STEP_COUNTS = (2, 5, 10, 20, 50, 100, 200, 1000)  # the notebook's slider stops
GUIDANCE_SCALES = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)


def is_default(settings: dict, default: dict) -> bool:
    """Whether a section's ``settings`` are its shipped ``default`` (every key given; numbers to
    round-off: a slider moved away and back may give 0.30000000000000004)."""
    return set(settings) == set(default) and _checks.is_default("diffusion.is_default", settings, default)


def run_state(run: DDPMRun) -> dict:
    """What a shipped DDPMRun keeps: the network and every number its figures show."""
    state = {
        "model": dict(run.model.state_dict()),
        "losses": run.losses,
        "checkpoints": run.checkpoints,
        "quality": run.quality,
        "noise_quality": float(run.noise_quality),
        "floor": float(run.floor),
        "stopped": run.stopped,
    }
    if run.samples is not None:
        state["samples"] = run.samples
    return state


def _run_from_state(state, model, held_out) -> DDPMRun:
    model.load_state_dict(state["model"])
    return DDPMRun(
        model=model,
        losses=state["losses"],
        checkpoints=state["checkpoints"],
        quality=state["quality"],
        noise_quality=float(state["noise_quality"]),
        floor=float(state["floor"]),
        held_out=held_out,
        stopped=state["stopped"],
        samples=state.get("samples"),
    )


@cached_by_code(maxsize=4)
def shipped_ddpm(*code) -> tuple[DDPMRun | None, str]:
    """``(run, "")``: the DDPM of :data:`DDPM_DEFAULT` as the page's ``default_ddpm`` trained it,
    when ``code`` (the page's lesson functions, as ``CHECKPOINTS`` names them) is the code that
    trained it; otherwise ``(None, reason)``."""
    state, reason = checkpoints.load_if_fits(_ddpm_checkpoint, *code)
    if state is None:
        return None, reason
    d = DDPM_DEFAULT
    held = toy_data_2d(d["data"], n=3000, seed=0)[-500:].astype(np.float32).astype(np.float64)
    return _run_from_state(state, D.Denoiser(2, d["hidden"], T=d["T"]), held), ""


@cached_by_code(maxsize=4)
def shipped_denoiser_1d(*code) -> tuple[DDPMRun | None, str]:
    """The 1-D denoiser of :data:`MIX_DEFAULT` as the page's ``default_denoiser_1d`` trained it,
    or ``(None, reason)`` as :func:`shipped_ddpm`."""
    state, reason = checkpoints.load_if_fits(_denoiser_1d_checkpoint, *code)
    if state is None:
        return None, reason
    return _run_from_state(state, D.Denoiser(1, 64, T=MIX_DEFAULT["T"]), held_out=None), ""


def canvas_start(X, bound=3.0) -> np.ndarray:
    """The points a drawing canvas spanning [−bound, bound]² starts with, as it gives them back
    (``widgets.scatter_data``): clipped to the canvas, float32."""
    return np.clip(np.asarray(X, dtype=np.float64), -bound, bound).astype(np.float32)


def drawing_start() -> np.ndarray:
    """The drawing the canvas starts with: the first points of the moons, clipped to it."""
    d = DRAW_DEFAULT
    return canvas_start(toy_data_2d(d["data"], n=3000, seed=0)[: d["points"]], d["bound"])


@cached_by_code(maxsize=4)
def _shipped_drawing(*code):
    state, reason = checkpoints.load_if_fits(_drawing_checkpoint, *code)
    if state is None:
        return None, None, reason
    run = _run_from_state(state["run"], D.Denoiser(2, 64, T=DRAW_DEFAULT["T"]), held_out=None)
    return state["points"], run, ""


def shipped_drawing_run(X, *code) -> tuple[DDPMRun | None, str]:
    """``(run, "")``: the shipped DDPM of the canvas's starting drawing when ``X`` is that drawing
    and ``code`` made it; ``(None, "")`` for another drawing; ``(None, reason)`` when the page's
    code is not the code that made it."""
    points, run, reason = _shipped_drawing(*code)
    if run is None:
        return None, reason
    X = np.asarray(X, dtype=np.float32)
    return (run if X.shape == points.shape and np.allclose(X, points, atol=1e-5) else None), ""


@dataclass(frozen=True)
class SamplerGallery:
    """Respaced DDPM and DDIM with a mixture's exact ε* at every step count of the notebook's
    slider, from the same x_T: scores on all ``n`` samples, the first ``shown`` samples kept."""

    steps: np.ndarray  # [S] step counts
    ddpm: np.ndarray  # [S] energy distance of the n DDPM samples to the data
    ddim: np.ndarray  # [S] the same for DDIM
    floor: float  # a second draw of the data against the first
    ddpm_samples: np.ndarray  # [S, shown, dim]
    ddim_samples: np.ndarray  # [S, shown, dim]

    def at(self, steps) -> int:
        """The row of step count ``steps``."""
        rows = np.flatnonzero(self.steps == int(steps))
        if not len(rows):
            raise ValueError(f"SamplerGallery: no run at {steps} steps; have {list(self.steps)}")
        return int(rows[0])

    def table(self, steps) -> SamplerComparison:
        """The rows of ``steps`` as a :class:`SamplerComparison`."""
        rows = [self.at(s) for s in steps]
        return SamplerComparison(steps=self.steps[rows], ddpm=self.ddpm[rows], ddim=self.ddim[rows], floor=self.floor)


def sampler_gallery(
    mixture, schedule, ddpm_sample, ddim_sample, steps=SAMPLER_STEP_COUNTS, n=1000, shown=500, seed=0, on_step=None
) -> SamplerGallery:
    """The page's two samplers with the exact ε* of ``mixture`` at every step count of
    ``steps``, from the same x_T (``seed``): respaced ancestral sampling with ``ddpm_sample``
    (:func:`sample_ddpm_steps`) and ``ddim_sample(model, schedule, steps, n, dim)``; scores on
    all ``n`` samples, the first ``shown`` kept. ``on_step(k)`` after each step count."""
    model = ExactEpsilon(mixture, schedule)
    held = mixture.sample(n, seed=seed + 100)[0]
    runs = {"ddpm": [], "ddim": []}
    scores = {"ddpm": [], "ddim": []}
    for k, count in enumerate(steps):
        x = sample_ddpm_steps(ddpm_sample, model, schedule, count, n, mixture.dim, seed)
        with random.fork_rng(int(seed)):
            x_ddim = ddim_sample(model, schedule, count, int(n), mixture.dim)
        for name, drawn in (("ddpm", x), ("ddim", x_ddim)):
            scores[name].append(energy_distance(drawn, held))
            runs[name].append(np.asarray(drawn[:shown], dtype=np.float32))
        if on_step is not None:
            on_step(k + 1)
    floor = energy_distance(mixture.sample(n, seed=seed + 200)[0], held)
    return SamplerGallery(
        steps=np.asarray(steps),
        ddpm=np.asarray(scores["ddpm"]),
        ddim=np.asarray(scores["ddim"]),
        floor=float(floor),
        ddpm_samples=np.stack(runs["ddpm"]),
        ddim_samples=np.stack(runs["ddim"]),
    )


# sampler_floor_range() at its defaults, as _draw_floor_range drew it (tests draw it again and compare):
# ten energy distances of 1000 points cost 0.2 s, which every first opening of the page would pay
_FLOOR_RANGES = {(1000, 10, 0): (0.0024747952817003593, 0.009045295811437537)}


def sampler_floor_range(n=1000, draws=10, seed=0) -> tuple[float, float]:
    """How much the floor itself varies: the energy distance to the held-out draw that
    :func:`sampler_gallery` scores against (``seed + 100``) of ``draws`` other draws of ``n`` points
    of the ring mixture, (smallest, largest). The page's defaults are drawn ahead of time (and
    checked against a fresh draw by the tests); other arguments are drawn once per process."""
    key = (int(n), int(draws), int(seed))
    return _FLOOR_RANGES[key] if key in _FLOOR_RANGES else _draw_floor_range(*key)


@functools.lru_cache(maxsize=4)
def _draw_floor_range(n, draws, seed) -> tuple[float, float]:
    mixture = ring_mixture()
    held = mixture.sample(n, seed=seed + 100)[0]
    values = [energy_distance(mixture.sample(n, seed=seed + 300 + k)[0], held) for k in range(draws)]
    return float(min(values)), float(max(values))


def gallery_state(g: SamplerGallery) -> dict:
    """What the shipped gallery keeps."""
    return {
        "steps": g.steps,
        "ddpm": g.ddpm,
        "ddim": g.ddim,
        "floor": g.floor,
        "ddpm_samples": g.ddpm_samples,
        "ddim_samples": g.ddim_samples,
    }


@cached_by_code(maxsize=4)
def shipped_sampler_gallery(*code) -> tuple[SamplerGallery | None, str]:
    """Section 5's gallery (ring mixture, T = 1000 linear, seed 0) as the page's
    ``default_sampler_gallery`` drew it, or ``(None, reason)`` as :func:`shipped_ddpm`."""
    state, reason = checkpoints.load_if_fits(_samplers_checkpoint, *code)
    if state is None:
        return None, reason
    return SamplerGallery(
        steps=state["steps"],
        ddpm=state["ddpm"],
        ddim=state["ddim"],
        floor=float(state["floor"]),
        ddpm_samples=state["ddpm_samples"],
        ddim_samples=state["ddim_samples"],
    ), ""


@dataclass(frozen=True)
class GuidanceStudy:
    """A conditional denoiser's guided samples for every label and guidance scale, scored."""

    scales: np.ndarray  # [W] guidance scales
    samples: dict  # {label: [W, shown, 2]} the first ``shown`` samples at each scale
    trades: dict  # {label: GuidanceTrade} scored on all n samples
    X: np.ndarray  # the training data [N, 2]
    y: np.ndarray  # its labels [N]


def guidance_study(
    make_model, train, sample, schedule, steps, n=1000, shown=500, seed=0, on_step=None
) -> GuidanceStudy:
    """Section 6 with the page's code: on the two moons, ``make_model(dim, n_classes, T)``
    trained by ``train(model, X, y, schedule, steps, on_step=...)`` (seed ``seed``), then
    ``sample(model, schedule, label, w, n, dim)`` for each label at every scale of
    :data:`GUIDANCE_SCALES` (seed ``seed + 1``), scored. ``on_step(k)`` counts the training
    steps, then one more per (label, scale) sampled: up to ``steps + 2 · len(GUIDANCE_SCALES)``."""
    X, y = toy_data_2d("moons", n=3000, seed=seed, return_labels=True)
    X = X.astype(np.float32)
    n_classes = int(y.max()) + 1
    with random.fork_rng(int(seed)):
        model = make_model(X.shape[1], n_classes, schedule.T)
        train(model, X, y, schedule, _int("guidance_study", "steps", steps, 1), on_step=on_step)
    samples, trades = {}, {}
    done = steps
    for label in range(n_classes):
        by_scale = {}
        for w in GUIDANCE_SCALES:
            with random.fork_rng(int(seed) + 1):
                by_scale[w] = np.asarray(sample(model, schedule, label, w, int(n), X.shape[1]), dtype=np.float64)
            done += 1
            if on_step is not None:
                on_step(done)
        trades[label] = guidance_trade(X, y, label, by_scale)
        samples[label] = np.stack([by_scale[w][:shown] for w in GUIDANCE_SCALES]).astype(np.float32)
    return GuidanceStudy(
        scales=np.asarray(GUIDANCE_SCALES), samples=samples, trades=trades, X=X.astype(np.float64), y=y
    )


def guidance_state(g: GuidanceStudy) -> dict:
    """What the shipped study keeps."""
    return {
        "scales": g.scales,
        "labels": {
            str(k): {"samples": g.samples[k], "fidelity": t.fidelity, "spread": t.spread} for k, t in g.trades.items()
        },
    }


@cached_by_code(maxsize=4)
def shipped_guidance(*code) -> tuple[GuidanceStudy | None, str]:
    """Section 6's default study as the page's ``default_guidance`` trained and sampled it, or
    ``(None, reason)`` as :func:`shipped_ddpm`."""
    state, reason = checkpoints.load_if_fits(_guidance_checkpoint, *code)
    if state is None:
        return None, reason
    scales = state["scales"]
    X, y = toy_data_2d("moons", n=3000, seed=0, return_labels=True)
    X = X.astype(np.float32).astype(np.float64)  # as guidance_study keeps it
    labels = {int(k): v for k, v in state["labels"].items()}
    return GuidanceStudy(
        scales=scales,
        samples={k: v["samples"] for k, v in labels.items()},
        trades={k: GuidanceTrade(scales=scales, fidelity=v["fidelity"], spread=v["spread"]) for k, v in labels.items()},
        X=X,
        y=y,
    ), ""


# Section 6's claims over five trained models: seed 0 is the shipped study, these the others.
GUIDANCE_SEEDS = (1, 2, 3, 4)


@dataclass(frozen=True)
class GuidanceSeeds:
    """Section 6's study at seeds 0 to 4, per label ``{label: [seeds, W]}``: fidelity, spread and
    the mean outward height of the samples shown (y for the upper moon, −y for the lower one) at
    each guidance scale, and ``middle`` {label: [seeds]}, the class's own mean outward height."""

    seeds: np.ndarray
    scales: np.ndarray
    fidelity: dict
    spread: dict
    height: dict
    middle: dict


_SEED_PARTS = ("fidelity", "spread", "height", "middle")  # what the seeds keep of a study, per label


def _outward(label) -> float:
    return 1.0 if int(label) == 0 else -1.0


def guidance_summary(g: GuidanceStudy) -> dict:
    """What section 6's claims read of one study, per label: fidelity, spread and mean outward
    height (of the samples shown) at each scale, and the class's own mean outward height."""
    return {
        str(k): {
            "fidelity": t.fidelity,
            "spread": t.spread,
            "height": _outward(k) * g.samples[k][:, :, 1].astype(np.float64).mean(axis=1),
            "middle": _outward(k) * float(g.X[g.y == k, 1].mean()),
        }
        for k, t in g.trades.items()
    }


def guidance_seeds_state(studies) -> dict:
    """What the shipped seeds keep of the studies at :data:`GUIDANCE_SEEDS`: small arrays, no samples."""
    summaries = [guidance_summary(g) for g in studies]
    return {
        "seeds": np.asarray(GUIDANCE_SEEDS),
        "labels": {
            k: {part: np.asarray([s[k][part] for s in summaries]) for part in _SEED_PARTS} for k in summaries[0]
        },
    }


@cached_by_code(maxsize=4)
def shipped_guidance_seeds(*code) -> tuple[GuidanceSeeds | None, str]:
    """Section 6's study at seeds 0 (the shipped :func:`shipped_guidance`) to 4 (the page's
    ``default_guidance_seeds``), or ``(None, reason)`` when the page's code is not the code that
    made them."""
    study, reason = shipped_guidance(*code)
    state, reason = (None, reason) if study is None else checkpoints.load_if_fits(_guidance_seeds_checkpoint, *code)
    if state is None:
        return None, reason
    first = guidance_summary(study)
    parts = {
        part: {int(k): np.concatenate([np.asarray(first[k][part])[None], v[part]]) for k, v in state["labels"].items()}
        for part in _SEED_PARTS
    }
    return GuidanceSeeds(seeds=np.concatenate([[0], state["seeds"]]), scales=study.scales, **parts), ""


# The lesson cells each shipped state depends on, in the order the page passes them to shipped_*.
DDPM_CODE = ("noise_schedule", "linear_schedule", "q_sample", "ddpm_loss", "train_ddpm", "ddpm_step", "ddpm_sample")
SAMPLER_CODE = ("noise_schedule", "linear_schedule", "ddpm_step", "ddpm_sample", "ddim_step", "ddim_sample")
GUIDANCE_CODE = (
    "noise_schedule",
    "linear_schedule",
    "q_sample",
    "conditional_denoiser",
    "train_conditional",
    "guided_epsilon",
    "guided_sample",
    "ddpm_step",
    "ddpm_sample",
)

CHECKPOINTS = {
    "diffusion_ddpm": checkpoints.FromNotebook("07_diffusion", "default_ddpm", DDPM_CODE),
    "diffusion_denoiser_1d": checkpoints.FromNotebook("07_diffusion", "default_denoiser_1d", DDPM_CODE),
    "diffusion_drawing": checkpoints.FromNotebook("07_diffusion", "default_drawing", DDPM_CODE),
    "diffusion_samplers": checkpoints.FromNotebook("07_diffusion", "default_sampler_gallery", SAMPLER_CODE),
    "diffusion_guidance": checkpoints.FromNotebook("07_diffusion", "default_guidance", GUIDANCE_CODE),
    "diffusion_sampler_spread": checkpoints.FromNotebook("07_diffusion", "default_sampler_spread", SAMPLER_CODE),
    "diffusion_guidance_seeds": checkpoints.FromNotebook("07_diffusion", "default_guidance_seeds", GUIDANCE_CODE),
}

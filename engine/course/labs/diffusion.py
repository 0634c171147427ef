"""The computations behind notebook 07 (diffusion) that ``engine.diffusion`` does not already
provide: seeded data sets, training runs that record a quality number as they go, the reverse
process as snapshots, and the exact-vs-learned comparison on a 1-D Gaussian mixture.
"""

from __future__ import annotations

import math

import numpy as np

from engine import Tensor, manual_seed, no_grad, random
from engine import data as engine_data
from engine import diffusion as D
from engine.distances import energy_distance
from engine.optim import Adam
from engine.optim.lr_scheduler import CosineAnnealingLR

from ._checks import _int, _positive
from ._generative import DATASETS_2D, toy_data_2d

__all__ = [
    "DATASETS_2D", "LINEAR_MAX_SCALE", "chain_vs_closed_form", "epsilon_curves", "exact_reverse_1d",
    "forward_snapshot", "linear_scale", "make_schedule", "mixture_1d", "reverse_trajectory",
    "toy_data_2d", "train_ddpm_tracked", "train_denoiser_1d",
]


# ----------------------------------------------------------------------------- schedules
LINEAR_MAX_SCALE = 0.999 / 0.02  # the largest rescaling that keeps β_T = 0.02·scale below 1


def linear_scale(T) -> float:
    """The factor applied to DDPM's bounds 1e-4 … 0.02 for T steps: 1000/T (so that ᾱ_T stays
    near 4e-5), capped at 0.999/0.02 ≈ 50 for T < 21, where β_T would otherwise reach 1."""
    return min(1000.0 / T, LINEAR_MAX_SCALE)


def make_schedule(kind="linear", T=100):
    """'linear' (DDPM's 1e-4 … 0.02 times :func:`linear_scale`, so that ᾱ_T ≈ 4e-5 for T ≥ 21),
    'linear (fixed bounds)' (1e-4 … 0.02 as printed, whatever T) or 'cosine'."""
    if kind == "linear":
        scale = linear_scale(T)
        return D.linear_beta_schedule(T, beta_start=1e-4 * scale, beta_end=0.02 * scale)
    if kind == "linear (fixed bounds)":
        return D.linear_beta_schedule(T)
    if kind == "cosine":
        return D.cosine_beta_schedule(T)
    raise ValueError(f"make_schedule: kind must be 'linear', 'linear (fixed bounds)' or 'cosine', "
                     f"got {kind!r}")


# ----------------------------------------------------------------------------- forward process
def forward_snapshot(X0, schedule, t, seed=0) -> np.ndarray:
    """x_t = √ᾱ_t x_0 + √(1 − ᾱ_t) ε for every row of X0, with ε drawn from ``seed`` (the same
    ε for every t, so moving t morphs one picture into the other)."""
    X0 = np.asarray(X0, dtype=np.float64)
    noise = np.random.default_rng(seed).standard_normal(X0.shape)
    return D.q_sample(X0, int(t), noise, schedule)


def chain_vs_closed_form(x0, schedule, t, n=4000, seed=0) -> dict:
    """Run the forward chain one step at a time from the single point ``x0`` (n copies):

        x_s = √(1 − β_s) x_{s−1} + √β_s ε_s,   s = 0 … t,

    and compare with the closed form q(x_t | x_0) = N(√ᾱ_t x_0, (1 − ᾱ_t) I). Returns
    ``samples`` [n, D], their ``mean``/``var`` per coordinate, and ``closed_mean``/``closed_var``.
    """
    op = "chain_vs_closed_form"
    x0 = np.atleast_1d(np.asarray(x0, dtype=np.float64))
    t = _int(op, "t", t, 0)
    if t >= schedule.T:
        raise ValueError(f"{op}: t must be < T = {schedule.T}, got {t}")
    n = _int(op, "n", n, 2)
    rng = np.random.default_rng(seed)
    x = np.broadcast_to(x0, (n,) + x0.shape).copy()
    for s in range(t + 1):  # one step per time step: the chain itself (vectorised over samples)
        x = math.sqrt(schedule.alphas[s]) * x + math.sqrt(schedule.betas[s]) * rng.standard_normal(x.shape)
    mean, var = D.q_mean_var(x0[None], t, schedule)
    return {"samples": x, "mean": x.mean(0), "var": x.var(0), "closed_mean": np.asarray(mean)[0],
            "closed_var": float(np.asarray(var).reshape(-1)[0])}


# ----------------------------------------------------------------------------- training with a quality curve
def train_ddpm_tracked(X, schedule, steps=2000, hidden=64, lr=1e-2, batch_size=256, n_checkpoints=8,
                       n_eval=500, seed=0, variance="posterior", on_step=None) -> dict:
    """Train ``engine.diffusion.Denoiser`` on X [N, D] (the last ``n_eval`` rows held out) with
    Adam, the learning rate decaying from ``lr`` to lr/100 along a cosine, and measure the sample
    quality ``n_checkpoints`` times on the way.

    Quality: the energy distance between ``n_eval`` fresh samples and the held-out rows
    (0 for identical distributions); ``noise_quality`` is the same for pure N(0, I) noise (where
    sampling starts) and ``floor`` for a second held-out draw of the data (what a perfect model
    would score with this many points). Returns ``model``, ``losses`` (every step),
    ``checkpoints`` (step numbers), ``quality``, ``noise_quality``, ``floor``, ``stopped``.
    ``on_step(step)`` is called after every step. Seeded: the same arguments give the same run.
    """
    op = "train_ddpm_tracked"
    steps = _int(op, "steps", steps, 1)
    lr = _positive(op, "lr", lr)
    X = np.asarray(X, dtype=np.float32)
    n_eval = _int(op, "n_eval", n_eval, 2)
    if X.ndim != 2 or X.shape[0] < 2 * n_eval + 2:
        raise ValueError(f"{op}: X must be [N, D] with N >= 2·n_eval + 2 = {2 * n_eval + 2}, "
                         f"got shape {X.shape}")
    train, held = X[:-n_eval], X[-n_eval:].astype(np.float64)
    manual_seed(int(seed))
    model = D.Denoiser(X.shape[1], int(hidden), T=schedule.T)
    opt = Adam(model.parameters(), lr=lr)
    decay = CosineAnnealingLR(opt, steps, eta_min=lr / 100)
    checkpoints = sorted({max(1, round(steps * k / n_checkpoints)) for k in range(1, n_checkpoints + 1)})
    losses, quality, stopped = [], [], ""
    for step in range(1, steps + 1):
        batch = train[random.generator().integers(0, len(train), size=batch_size)]
        loss = D.ddpm_loss(model, batch, schedule)
        opt.zero_grad()
        loss.backward()
        opt.step()
        decay.step()
        losses.append(float(loss.data))
        if not math.isfinite(losses[-1]):
            stopped = f"the loss became non-finite at step {step}: lower the learning rate"
            break
        if step in checkpoints:
            try:
                samples = D.sample(model, schedule, n_eval, X.shape[1], variance=variance)
                quality.append(energy_distance(samples, held))
            except FloatingPointError:
                quality.append(float("nan"))
        if on_step is not None:
            on_step(step)
    rng = np.random.default_rng(seed + 1)
    noise = rng.standard_normal(held.shape)
    floor = energy_distance(train[rng.choice(len(train), n_eval, replace=False)].astype(np.float64), held)
    return {"model": model, "losses": np.asarray(losses), "checkpoints": np.asarray(checkpoints[:len(quality)]),
            "quality": np.asarray(quality), "noise_quality": energy_distance(noise, held),
            "floor": floor, "stopped": stopped, "held_out": held}


def reverse_trajectory(model, schedule, n=1000, dim=2, seed=0, variance="posterior") -> dict:
    """Ancestral sampling from N(0, I) to data with every intermediate state kept.

    Returns ``states`` [T + 1, n, dim] (index k = the state after k reverse steps: k = 0 is the
    pure noise x_T, k = T the samples x_0) and ``message`` (empty, or why sampling failed: a
    badly trained model can make the states blow up; ``states`` is then None). Seeded.
    """
    manual_seed(int(seed))
    try:
        states = D.sample(model, schedule, int(n), dim, return_trajectory=True, variance=variance)
    except FloatingPointError as error:
        return {"states": None, "message": str(error).replace("sample: ", "")}
    return {"states": states, "message": ""}


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


def exact_reverse_1d(mixture, schedule, n=4000, seed=0, variance="posterior") -> np.ndarray:
    """Samples [n] of the reverse process run with the exact ε* = −√(1 − ᾱ_t) ∇log q_t of the
    mixture (``engine.diffusion.exact_sample``); seeded."""
    manual_seed(int(seed))
    return D.exact_sample(mixture, schedule, int(n), variance=variance)[:, 0]


def train_denoiser_1d(mixture, schedule, steps=1500, hidden=64, lr=1e-2, n=4000, seed=0,
                      variance="posterior", on_step=None) -> dict:
    """A learned ε_θ for the 1-D mixture: :func:`train_ddpm_tracked` on ``n`` samples of it.
    Returns that dict plus ``samples`` [n] drawn with the learned model."""
    X = mixture.sample(n + 600, seed=seed)[0].astype(np.float64)
    run = train_ddpm_tracked(X, schedule, steps=steps, hidden=hidden, lr=lr, n_checkpoints=4,
                             n_eval=300, seed=seed, variance=variance, on_step=on_step)
    manual_seed(int(seed) + 7)
    try:
        run["samples"] = D.sample(run["model"], schedule, n, 1, variance=variance)[:, 0]
    except FloatingPointError:
        run["samples"] = np.full(n, np.nan)
        run["stopped"] = run["stopped"] or "sampling diverged: the model's predictions are too large"
    return run


def epsilon_curves(mixture, schedule, t, model=None, grid=None) -> dict:
    """The optimal noise prediction ε*(x, t) = −√(1 − ᾱ_t) ∇log q_t(x) of the mixture over a grid
    of x, and the learned ε_θ(x, t) when a ``model`` is given; also the noised density q_t(x)."""
    grid = np.linspace(-4, 4, 401) if grid is None else np.asarray(grid, dtype=np.float64)
    t = int(t)
    out = {"x": grid, "exact": D.exact_epsilon(mixture, grid[:, None], t, schedule)[:, 0],
           "density": D.noised_mixture(mixture, t, schedule).prob(grid[:, None])}
    if model is not None:
        with no_grad():
            out["learned"] = model(Tensor(grid[:, None].astype(np.float32)),
                                   np.full(len(grid), t, dtype=np.int64)).data[:, 0].astype(np.float64)
    return out

"""Denoising diffusion (DDPM, Ho et al. 2020): noise schedules, the forward process, the training
loss, the ancestral sampler, a small denoiser for 2-D data, and the exact reverse process of a
Gaussian mixture.

Time steps are 0-indexed, as in PyTorch code (``diffusers``): t ∈ {0, …, T − 1}, and the arrays of a
:class:`Schedule` hold at index t the values of the paper's step t + 1 (so ``alpha_bars[0]`` is
ᾱ_1 = 1 − β_1 and ``alpha_bars[T - 1]`` is ᾱ_T).

Forward (noising) process, closed form:      q(x_t | x_0) = N(√ᾱ_t x_0, (1 − ᾱ_t) I),
    x_t = √ᾱ_t x_0 + √(1 − ᾱ_t) ε,  ε ~ N(0, I),   α_t = 1 − β_t,  ᾱ_t = ∏_{s ≤ t} α_s.
Training (the "simple" loss):                  L = E_{t, x_0, ε} ‖ε − ε_θ(x_t, t)‖².
Reverse step (ancestral sampling):
    x_{t−1} = 1/√α_t · (x_t − β_t/√(1 − ᾱ_t) · ε_θ(x_t, t)) + σ_t z,   z ~ N(0, I),
    σ_t² = β_t, or the posterior variance β̃_t = β_t (1 − ᾱ_{t−1})/(1 − ᾱ_t); no noise at the last step.
The best possible ε-predictor is ε*(x_t, t) = E[ε | x_t] = −√(1 − ᾱ_t) ∇ log q(x_t) (Tweedie), so a
model that learns ε learns the score of the noised data. For a Gaussian mixture the noised
marginal is again a Gaussian mixture (means √ᾱ_t μ_k, variances ᾱ_t σ_k² + 1 − ᾱ_t), whose score
is exact: :func:`exact_sample` runs the reverse process with ε*.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from . import functional as F
from . import nn
from . import random as engine_random
from .autograd import no_grad
from .distances import energy_distance
from .tensor import Tensor

__all__ = [
    "Schedule",
    "linear_beta_schedule",
    "cosine_beta_schedule",
    "q_sample",
    "q_mean_var",
    "q_posterior_mean_var",
    "ddpm_loss",
    "reverse_step",
    "sample",
    "timestep_embedding",
    "Denoiser",
    "train_ddpm",
    "SampleQuality",
    "sample_quality",
    "noised_mixture",
    "exact_score",
    "exact_epsilon",
    "OptimalDenoiser",
    "exact_reverse_step",
    "exact_sample",
]

VARIANCES = ("beta", "posterior")


# ----------------------------------------------------------------------------- schedules
@dataclass(frozen=True, eq=False)
class Schedule:
    """A noise schedule and every quantity derived from it (float64 arrays of length T).

    Index t holds the paper's step t + 1. ``alpha_bars_prev[t]`` is ᾱ at the step before
    (1 at t = 0), ``snr`` = ᾱ/(1 − ᾱ), ``posterior_variance`` β̃_t = β_t(1 − ᾱ_{t−1})/(1 − ᾱ_t)
    (0 at t = 0), and the posterior mean of q(x_{t−1} | x_t, x_0) is
    ``posterior_mean_coef_x0`` · x_0 + ``posterior_mean_coef_xt`` · x_t with
    coefficients √ᾱ_{t−1} β_t/(1 − ᾱ_t) and √α_t (1 − ᾱ_{t−1})/(1 − ᾱ_t).
    Build one with :func:`linear_beta_schedule`, :func:`cosine_beta_schedule` or
    :meth:`Schedule.from_betas`.
    """

    name: str
    betas: np.ndarray
    alphas: np.ndarray
    alpha_bars: np.ndarray
    alpha_bars_prev: np.ndarray
    sqrt_alpha_bars: np.ndarray
    sqrt_one_minus_alpha_bars: np.ndarray
    snr: np.ndarray
    posterior_variance: np.ndarray
    posterior_mean_coef_x0: np.ndarray
    posterior_mean_coef_xt: np.ndarray

    @property
    def T(self) -> int:
        return len(self.betas)

    @property
    def timesteps(self) -> np.ndarray:
        """0, 1, …, T − 1."""
        return np.arange(self.T)

    @classmethod
    def from_betas(cls, betas, name: str = "custom") -> "Schedule":
        """Derive every quantity from β_1..β_T (each strictly between 0 and 1)."""
        betas = np.array(getattr(betas, "data", betas), dtype=np.float64)
        if betas.ndim != 1 or betas.size == 0:
            raise ValueError(f"Schedule: betas must be a non-empty 1-D array, got shape {betas.shape}")
        if not (np.isfinite(betas).all() and (betas > 0).all() and (betas < 1).all()):
            worst = betas[~((betas > 0) & (betas < 1))]
            raise ValueError(
                f"Schedule ({name}): every beta must lie strictly between 0 and 1, got "
                f"{worst[:3].tolist()} (min {np.nanmin(betas):.4g}, max {np.nanmax(betas):.4g})"
            )
        alphas = 1.0 - betas
        alpha_bars = np.cumprod(alphas)
        alpha_bars_prev = np.concatenate([[1.0], alpha_bars[:-1]])
        one_minus = 1.0 - alpha_bars
        arrays = dict(
            betas=betas,
            alphas=alphas,
            alpha_bars=alpha_bars,
            alpha_bars_prev=alpha_bars_prev,
            sqrt_alpha_bars=np.sqrt(alpha_bars),
            sqrt_one_minus_alpha_bars=np.sqrt(one_minus),
            snr=alpha_bars / one_minus,
            posterior_variance=betas * (1.0 - alpha_bars_prev) / one_minus,
            posterior_mean_coef_x0=np.sqrt(alpha_bars_prev) * betas / one_minus,
            posterior_mean_coef_xt=np.sqrt(alphas) * (1.0 - alpha_bars_prev) / one_minus,
        )
        for value in arrays.values():
            value.setflags(write=False)  # a schedule is shared; nobody should edit it in place
        return cls(name=name, **arrays)

    def __repr__(self) -> str:
        return (
            f"Schedule({self.name}, T={self.T}, beta {self.betas[0]:.3g}..{self.betas[-1]:.3g}, "
            f"alpha_bar_T={self.alpha_bars[-1]:.3g})"
        )


def _steps(T, op: str) -> int:
    if isinstance(T, bool) or not isinstance(T, numbers.Integral) or T < 1:
        raise ValueError(f"{op}: T must be an integer >= 1, got {T!r}")
    return int(T)


def linear_beta_schedule(
    T: int = 1000, beta_start: float = 1e-4, beta_end: float = 0.02, rescale: bool = False
) -> Schedule:
    """β_t evenly spaced from ``beta_start`` to ``beta_end`` (DDPM: 1e-4 to 0.02 over T = 1000,
    which gives ᾱ_T ≈ 4.04e-5).

    Since ᾱ_T ≈ exp(−Σβ_t), the same bounds with a small T leave much signal at the end
    (T = 100: ᾱ_T ≈ 0.36). ``rescale=True`` multiplies both bounds by 1000/T (as Nichol and
    Dhariwal's code does), which keeps ᾱ_T near 4e-5 for any T ≥ 20.
    """
    op = "linear_beta_schedule"
    T = _steps(T, op)
    scale = 1000.0 / T if rescale else 1.0
    start, end = float(beta_start) * scale, float(beta_end) * scale
    if not (0 < start < 1 and 0 < end < 1):
        raise ValueError(
            f"{op}: betas must lie in (0, 1), got beta_start={start:.4g}, beta_end={end:.4g}"
            + (f" after rescaling by 1000/T = {scale:.4g}" if rescale else "")
        )
    return Schedule.from_betas(np.linspace(start, end, T), name="linear")


def cosine_beta_schedule(T: int = 1000, s: float = 0.008, max_beta: float = 0.999) -> Schedule:
    """Nichol and Dhariwal's cosine schedule: f(t) = cos²(((t/T) + s)/(1 + s) · π/2),
    ᾱ_t = f(t)/f(0), β_t = min(1 − ᾱ_t/ᾱ_{t−1}, 0.999) for t = 1..T.

    ᾱ falls slowly at both ends, so fewer steps are wasted on almost-clean or almost-pure-noise
    inputs. The clipping keeps β_T (where f(T) = 0) below 1; the schedule's ᾱ is then the
    product of the clipped α's, the quantity the sampler actually uses. Mind the last steps:
    with β near 0.999 the reverse step divides by √α_t ≈ 0.03, so a small model's errors in ε_θ
    there are amplified about 30 times (a rescaled linear schedule is more forgiving).
    """
    op = "cosine_beta_schedule"
    T = _steps(T, op)
    if not (isinstance(s, numbers.Real) and s > 0):
        raise ValueError(f"{op}: s must be a positive number, got {s!r}")
    if not (0 < max_beta < 1):
        raise ValueError(f"{op}: max_beta must lie in (0, 1), got {max_beta!r}")
    steps = np.arange(T + 1, dtype=np.float64)
    f = np.cos((steps / T + s) / (1 + s) * math.pi / 2) ** 2
    alpha_bars = f / f[0]
    betas = np.clip(1.0 - alpha_bars[1:] / alpha_bars[:-1], 1e-12, max_beta)
    return Schedule.from_betas(betas, name="cosine")


# ----------------------------------------------------------------------------- forward process
def _check_schedule(schedule, op: str) -> Schedule:
    if not isinstance(schedule, Schedule):
        raise TypeError(
            f"{op}: schedule must be a Schedule (from linear_beta_schedule or "
            f"cosine_beta_schedule), got {type(schedule).__name__}"
        )
    return schedule


def _timesteps(t, schedule: Schedule, op: str) -> np.ndarray:
    """t as an int64 array (0-d or 1-d), each in 0..T−1."""
    t = np.asarray(getattr(t, "data", t))
    if t.dtype.kind not in "iu" or t.ndim > 1:
        raise TypeError(
            f"{op}: t must be an int or a 1-D integer array of time steps, got dtype {t.dtype}, shape {t.shape}"
        )
    if t.size and (t.min() < 0 or t.max() >= schedule.T):
        raise ValueError(
            f"{op}: time steps must lie in 0..{schedule.T - 1} (T = {schedule.T}), "
            f"got values from {t.min()} to {t.max()}"
        )
    return t.astype(np.int64)


def _coefficient(values: np.ndarray, t: np.ndarray, like_shape: tuple, dtype, op: str) -> np.ndarray:
    """values[t] shaped to broadcast against a batch of shape ``like_shape`` (one value per row)."""
    picked = values[t]
    if t.ndim == 1:
        if not like_shape or like_shape[0] != t.shape[0]:
            raise ValueError(
                f"{op}: {t.shape[0]} time steps for a batch of shape {like_shape}; "
                "give one step per sample (or a single int)"
            )
        picked = picked.reshape((-1,) + (1,) * (len(like_shape) - 1))
    return picked.astype(dtype)


def _float_dtype(x) -> np.dtype:
    dtype = np.asarray(getattr(x, "data", x)).dtype
    return dtype if dtype.kind == "f" else np.dtype(np.float32)


def _values(x, op: str, name: str):
    """A Tensor stays a Tensor (its graph is kept); anything else becomes a float array."""
    if isinstance(x, Tensor):
        return x
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"{op}: {name} must be numeric, got dtype {arr.dtype}")
    return arr.astype(_float_dtype(arr), copy=False)


def q_sample(x0, t, noise=None, schedule: Schedule = None):
    """x_t = √ᾱ_t · x_0 + √(1 − ᾱ_t) · ε, a draw from q(x_t | x_0).

    x0: a batch [N, ...] (Tensor or array); t: an int, or N ints (one per sample); noise: ε of
    x0's shape (None draws it from the engine's generator). Returns a Tensor (with x0's and
    noise's graph, so gradients flow) if either input is a Tensor, otherwise an array.
    Gradient: ∂x_t/∂x_0 = √ᾱ_t, ∂x_t/∂ε = √(1 − ᾱ_t).
    """
    op = "q_sample"
    schedule = _check_schedule(schedule, op)
    x0 = _values(x0, op, "x0")
    t = _timesteps(t, schedule, op)
    if noise is None:
        noise = engine_random.generator().standard_normal(x0.shape).astype(_float_dtype(x0))
    else:
        noise = _values(noise, op, "noise")
        if tuple(noise.shape) != tuple(x0.shape):
            raise ValueError(f"{op}: noise has shape {tuple(noise.shape)} but x0 has shape {tuple(x0.shape)}")
    dtype = _float_dtype(x0)
    a = _coefficient(schedule.sqrt_alpha_bars, t, tuple(x0.shape), dtype, op)
    b = _coefficient(schedule.sqrt_one_minus_alpha_bars, t, tuple(x0.shape), dtype, op)
    if isinstance(x0, Tensor) or isinstance(noise, Tensor):
        x0 = x0 if isinstance(x0, Tensor) else Tensor._wrap(x0)
        noise = noise if isinstance(noise, Tensor) else Tensor._wrap(noise)
        return x0 * Tensor._wrap(a) + noise * Tensor._wrap(b)
    return x0 * a + noise * b


def q_mean_var(x0, t, schedule: Schedule):
    """Mean √ᾱ_t x_0 and variance 1 − ᾱ_t of q(x_t | x_0) (the variance broadcasts against x0).

    Returns ``(mean, variance)``: the mean is a Tensor if x0 is one, the variance an array.
    """
    op = "q_mean_var"
    schedule = _check_schedule(schedule, op)
    x0 = _values(x0, op, "x0")
    t = _timesteps(t, schedule, op)
    dtype = _float_dtype(x0)
    a = _coefficient(schedule.sqrt_alpha_bars, t, tuple(x0.shape), dtype, op)
    var = _coefficient(1.0 - schedule.alpha_bars, t, tuple(x0.shape), dtype, op)
    mean = x0 * Tensor._wrap(a) if isinstance(x0, Tensor) else x0 * a
    return mean, var


def q_posterior_mean_var(x0, x_t, t, schedule: Schedule):
    """Mean and variance of q(x_{t−1} | x_t, x_0): μ̃ = c₀ x_0 + c_t x_t and β̃_t (see Schedule)."""
    op = "q_posterior_mean_var"
    schedule = _check_schedule(schedule, op)
    x0, x_t = _values(x0, op, "x0"), _values(x_t, op, "x_t")
    t = _timesteps(t, schedule, op)
    dtype = _float_dtype(x0)
    shape = tuple(x0.shape)
    c0 = _coefficient(schedule.posterior_mean_coef_x0, t, shape, dtype, op)
    ct = _coefficient(schedule.posterior_mean_coef_xt, t, shape, dtype, op)
    var = _coefficient(schedule.posterior_variance, t, shape, dtype, op)
    if isinstance(x0, Tensor) or isinstance(x_t, Tensor):
        return Tensor._wrap(c0) * x0 + Tensor._wrap(ct) * x_t, var
    return c0 * x0 + ct * x_t, var


# ----------------------------------------------------------------------------- training loss
def ddpm_loss(model, x0, schedule: Schedule) -> Tensor:
    """The simple DDPM loss: mean over the batch and dimensions of (ε − ε_θ(x_t, t))².

    For each sample t ~ U{0..T−1} and ε ~ N(0, I) come from the engine's generator, x_t from
    :func:`q_sample`; ``model(x_t, t)`` gets x_t as a Tensor and t as an int64 array [N].
    """
    op = "ddpm_loss"
    schedule = _check_schedule(schedule, op)
    x0 = np.asarray(getattr(x0, "data", x0))
    if x0.ndim < 1 or x0.shape[0] == 0:
        raise ValueError(f"ddpm_loss: x0 must be a non-empty batch [N, ...], got shape {x0.shape}")
    x0 = x0.astype(_float_dtype(x0), copy=False)
    rng = engine_random.generator()
    t = rng.integers(0, schedule.T, size=x0.shape[0])
    noise = rng.standard_normal(x0.shape).astype(x0.dtype)
    x_t = q_sample(x0, t, noise, schedule)
    prediction = model(Tensor._wrap(x_t), t)
    return F.mse_loss(prediction, noise)


# ----------------------------------------------------------------------------- sampling
def _variance_values(schedule: Schedule, variance: str, op: str) -> np.ndarray:
    if variance == "beta":
        return schedule.betas
    if variance == "posterior":
        return schedule.posterior_variance
    raise ValueError(f"{op}: variance must be one of {VARIANCES}, got {variance!r}")


def reverse_step(x_t, eps, t: int, schedule: Schedule, noise=None, variance: str = "beta") -> np.ndarray:
    """One ancestral step from x_t to x_{t−1} given the predicted noise ``eps`` (arrays):

        x_{t−1} = (x_t − β_t/√(1 − ᾱ_t) · ε) / √α_t + σ_t z,

    σ_t² = β_t (``variance="beta"``) or β̃_t (``"posterior"``); z = ``noise`` (None: drawn from
    the engine's generator). No noise is added at t = 0, the last step.
    """
    op = "reverse_step"
    schedule = _check_schedule(schedule, op)
    if isinstance(t, bool) or not isinstance(t, numbers.Integral) or not 0 <= t < schedule.T:
        raise ValueError(f"{op}: t must be an int in 0..{schedule.T - 1}, got {t!r}")
    sigma2 = _variance_values(schedule, variance, op)[t]
    x_t = np.asarray(getattr(x_t, "data", x_t))
    eps = np.asarray(getattr(eps, "data", eps))
    if eps.shape != x_t.shape:
        raise ValueError(f"{op}: the predicted noise has shape {eps.shape}, x_t has shape {x_t.shape}")
    coef = schedule.betas[t] / schedule.sqrt_one_minus_alpha_bars[t]
    mean = (x_t - coef * eps) / math.sqrt(schedule.alphas[t])
    if t == 0:
        return mean.astype(x_t.dtype, copy=False)
    if noise is None:
        noise = engine_random.generator().standard_normal(x_t.shape)
    return (mean + math.sqrt(sigma2) * np.asarray(noise)).astype(x_t.dtype, copy=False)


def _sample_shape(n, dim, op: str) -> tuple:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"{op}: n must be an integer >= 1, got {n!r}")
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    if not dims or any(isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 1 for d in dims):
        raise ValueError(f"{op}: dim must be a positive int or a shape of them, got {dim!r}")
    return (int(n),) + tuple(int(d) for d in dims)


def sample(
    model,
    schedule: Schedule,
    n: int,
    dim=2,
    return_trajectory: bool = False,
    progress: Callable | None = None,
    variance: str = "beta",
    x_T=None,
):
    """Draw ``n`` samples by ancestral sampling from x_T ~ N(0, I) down to x_0 (under no_grad).

    ``model(x_t, t)`` predicts ε (x_t a float32 Tensor [n, *dim], t an int64 array [n]); see
    :func:`reverse_step` for the update and ``variance``. ``x_T`` replaces the starting noise.
    ``progress(done, total)`` is called after each of the T steps (e.g. to move a progress bar).
    Returns x_0 as a float32 array [n, *dim], or with ``return_trajectory=True`` the array
    [T + 1, n, *dim] of x_T, x_{T−1}, …, x_0 (index i holds the state after i steps).
    """
    op = "sample"
    schedule = _check_schedule(schedule, op)
    shape = _sample_shape(n, dim, op)
    _variance_values(schedule, variance, op)
    rng = engine_random.generator()
    if x_T is None:
        x = rng.standard_normal(shape).astype(np.float32)
    else:
        x = np.array(getattr(x_T, "data", x_T), dtype=np.float32)
        if x.shape != shape:
            raise ValueError(f"{op}: x_T has shape {x.shape}, expected {shape}")
    trajectory = [x] if return_trajectory else None
    with no_grad():
        for done, t in enumerate(reversed(range(schedule.T)), start=1):
            eps = model(Tensor._wrap(x), np.full(shape[0], t, dtype=np.int64))
            x = reverse_step(x, eps, t, schedule, variance=variance)
            if not np.isfinite(x).all():
                raise FloatingPointError(
                    f"{op}: the samples became NaN or infinite at t = {t}; the model's noise predictions are too large"
                )
            if trajectory is not None:
                trajectory.append(x)
            if progress is not None:
                progress(done, schedule.T)
    return np.stack(trajectory) if trajectory is not None else x


# ----------------------------------------------------------------------------- the denoiser
def timestep_embedding(t, dim: int, max_period: float = 10000.0) -> np.ndarray:
    """Sinusoidal embedding of (possibly fractional) time steps, as in DDPM and the Transformer:
    [sin(t ω_0), …, sin(t ω_{h−1}), cos(t ω_0), …, cos(t ω_{h−1})], ω_i = max_period^(−i/h),
    h = dim/2. Returns float32 [N, dim] for t of shape [N] (a scalar gives [1, dim])."""
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim < 2 or dim % 2:
        raise ValueError(f"timestep_embedding: dim must be an even integer >= 2, got {dim!r}")
    t = np.atleast_1d(np.asarray(getattr(t, "data", t), dtype=np.float64))
    if t.ndim != 1:
        raise ValueError(f"timestep_embedding: t must be a scalar or 1-D, got shape {t.shape}")
    half = dim // 2
    frequencies = max_period ** (-np.arange(half) / half)
    angles = t[:, None] * frequencies[None, :]
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1).astype(np.float32)


class Denoiser(nn.Module):
    """A small MLP ε_θ(x_t, t) for low-dimensional data.

    The time step enters through a sinusoidal embedding (t is first mapped to the 0..1000 range
    of DDPM's T = 1000, so one embedding suits any T) and a linear layer; it is added to the
    input layer's output, which equals a linear layer on the concatenation [x, emb(t)]:

        h = SiLU(W_x x + W_t emb(t) + b),   h = SiLU(W_k h + b_k) (``n_layers`` − 1 times),
        ε_θ = W_out h + b_out.
    """

    def __init__(self, dim: int = 2, hidden: int = 128, time_embedding_dim: int = 32, T: int = 1000, n_layers: int = 3):
        super().__init__()
        op = "Denoiser"
        for name, value, low in (("dim", dim, 1), ("hidden", hidden, 1), ("T", T, 1), ("n_layers", n_layers, 1)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
                raise ValueError(f"{op}: {name} must be an integer >= {low}, got {value!r}")
        if (
            isinstance(time_embedding_dim, bool)
            or not isinstance(time_embedding_dim, numbers.Integral)
            or time_embedding_dim < 2
            or time_embedding_dim % 2
        ):
            raise ValueError(f"{op}: time_embedding_dim must be an even integer >= 2, got {time_embedding_dim!r}")
        self.dim, self.T, self.time_embedding_dim = int(dim), int(T), int(time_embedding_dim)
        self.input = nn.Linear(dim, hidden)
        self.time = nn.Linear(time_embedding_dim, hidden, bias=False)
        self.hidden = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(n_layers - 1)])
        self.output = nn.Linear(hidden, dim)

    def forward(self, x, t) -> Tensor:
        x = x if isinstance(x, Tensor) else Tensor(np.asarray(x, dtype=np.float32))
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"Denoiser: x must have shape [N, {self.dim}], got {x.shape}")
        t = np.broadcast_to(np.asarray(getattr(t, "data", t)), (x.shape[0],))
        if t.dtype.kind not in "iu" or (t.size and (t.min() < 0 or t.max() >= self.T)):
            raise ValueError(
                f"Denoiser: t must be integers in 0..{self.T - 1}, got {t.dtype} "
                f"values {t.min() if t.size else ''}..{t.max() if t.size else ''}"
            )
        embedding = timestep_embedding(t * (1000.0 / self.T), self.time_embedding_dim)
        h = F.silu(self.input(x) + self.time(Tensor._wrap(embedding.astype(x.dtype, copy=False))))
        for layer in self.hidden:
            h = F.silu(layer(h))
        return self.output(h)


def train_ddpm(
    model,
    data,
    schedule: Schedule,
    steps: int = 2000,
    batch_size: int = 128,
    lr: float = 1e-3,
    progress: Callable | None = None,
    optimizer=None,
) -> np.ndarray:
    """Train ``model`` with :func:`ddpm_loss` and Adam for ``steps`` mini-batches drawn (with
    replacement) from ``data`` [N, ...]; returns the loss of every step (float64 array).

    ``progress(done, total)`` is called after each step. Pass your own ``optimizer`` to continue
    a run (Adam's moments are kept); ``lr`` is then ignored.
    """
    from .optim import Adam  # imported here: optim is not needed to sample or to compute losses

    op = "train_ddpm"
    schedule = _check_schedule(schedule, op)
    for name, value in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{op}: {name} must be an integer >= 1, got {value!r}")
    data = np.asarray(getattr(data, "data", data))
    if data.ndim < 2 or data.shape[0] == 0:
        raise ValueError(f"{op}: data must be a non-empty array [N, D], got shape {data.shape}")
    data = data.astype(np.float32, copy=False)
    if optimizer is None:
        if not (isinstance(lr, numbers.Real) and lr > 0):
            raise ValueError(f"{op}: lr must be a positive number, got {lr!r}")
        optimizer = Adam(model.parameters(), lr=lr)
    losses = np.empty(steps)
    for step in range(steps):
        batch = data[engine_random.generator().integers(0, data.shape[0], size=batch_size)]
        loss = ddpm_loss(model, batch, schedule)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses[step] = loss.item()
        if not math.isfinite(losses[step]):
            raise FloatingPointError(f"{op}: the loss became {losses[step]} at step {step}; lower lr")
        if progress is not None:
            progress(step + 1, steps)
    return losses


class SampleQuality(NamedTuple):
    """Energy distances to held-out data: of the model's samples, and of pure N(0, I) noise."""

    model: float
    noise: float

    @property
    def ratio(self) -> float:
        return self.model / self.noise


def sample_quality(model, schedule: Schedule, held_out, n: int | None = None, variance: str = "beta") -> SampleQuality:
    """Sample ``n`` points (default: as many as ``held_out``) and score them, and an equally large
    draw of N(0, I) noise (the sampler's starting point), by the energy distance to ``held_out``."""
    held_out = np.asarray(getattr(held_out, "data", held_out), dtype=np.float64)
    if held_out.ndim != 2 or held_out.shape[0] < 2:
        raise ValueError(f"sample_quality: held_out must be points [N >= 2, D], got shape {held_out.shape}")
    n = held_out.shape[0] if n is None else n
    samples = sample(model, schedule, n, held_out.shape[1], variance=variance)
    noise = engine_random.generator().standard_normal(samples.shape)
    return SampleQuality(energy_distance(samples, held_out), energy_distance(noise, held_out))


# ----------------------------------------------------------------------------- exact Gaussian mixture
def _one_step(t, schedule: Schedule, op: str) -> int:
    t = np.asarray(getattr(t, "data", t))
    if t.size != 1 or t.dtype.kind not in "iu" or not 0 <= int(t.reshape(())) < schedule.T:
        raise ValueError(f"{op}: t must be one int in 0..{schedule.T - 1}, got {t!r}")
    return int(t.reshape(()))


def noised_mixture(mixture, t: int, schedule: Schedule):
    """The law of x_t when x_0 follows ``mixture`` (a ``engine.data.GaussianMixture``):
    Σ_k w_k N(√ᾱ_t μ_k, (ᾱ_t σ_k² + 1 − ᾱ_t) I), again a GaussianMixture."""
    op = "noised_mixture"
    schedule = _check_schedule(schedule, op)
    t = _one_step(t, schedule, op)
    return mixture.diffused(schedule.sqrt_alpha_bars[t], schedule.sqrt_one_minus_alpha_bars[t])


def exact_score(mixture, x, t: int, schedule: Schedule) -> np.ndarray:
    """∇_x log q(x_t = x), the exact score of the noised mixture at step t (array, x's shape)."""
    return noised_mixture(mixture, t, schedule).score(x)


def exact_epsilon(mixture, x, t: int, schedule: Schedule) -> np.ndarray:
    """The optimal noise prediction ε*(x, t) = E[ε | x_t = x] = −√(1 − ᾱ_t) ∇ log q(x)."""
    return -schedule.sqrt_one_minus_alpha_bars[_one_step(t, schedule, "exact_epsilon")] * exact_score(
        mixture, x, t, schedule
    )


class OptimalDenoiser:
    """A "model" that returns the exact ε* of a Gaussian mixture; ``sample(OptimalDenoiser(m, s), s, ...)``
    runs the exact reverse process (t per sample may vary; each distinct step is computed once)."""

    def __init__(self, mixture, schedule: Schedule):
        self.mixture = mixture
        self.schedule = _check_schedule(schedule, "OptimalDenoiser")

    def __call__(self, x, t) -> Tensor:
        x = np.asarray(getattr(x, "data", x))
        t = np.broadcast_to(_timesteps(t, self.schedule, "OptimalDenoiser"), x.shape[:1])
        eps = np.empty(x.shape, dtype=np.float64)
        for step in np.unique(t):
            rows = t == step
            eps[rows] = exact_epsilon(self.mixture, x[rows], int(step), self.schedule)
        return Tensor._wrap(eps.astype(x.dtype if x.dtype.kind == "f" else np.float32))


def exact_reverse_step(mixture, x_t, t: int, schedule: Schedule, noise=None, variance: str = "beta") -> np.ndarray:
    """One ancestral step with the exact ε* of the mixture in place of a learned ε_θ."""
    x_t = np.asarray(getattr(x_t, "data", x_t))
    eps = exact_epsilon(mixture, x_t, t, schedule).astype(x_t.dtype if x_t.dtype.kind == "f" else np.float64)
    return reverse_step(x_t, eps, _one_step(t, schedule, "exact_reverse_step"), schedule, noise, variance)


def exact_sample(
    mixture,
    schedule: Schedule,
    n: int,
    return_trajectory: bool = False,
    progress: Callable | None = None,
    variance: str = "beta",
    x_T=None,
):
    """:func:`sample` with the exact ε* of ``mixture``: the reverse process a perfect denoiser
    would run (its only errors are the time discretisation and a finite T)."""
    return sample(
        OptimalDenoiser(mixture, schedule),
        schedule,
        n,
        mixture.dim,
        return_trajectory=return_trajectory,
        progress=progress,
        variance=variance,
        x_T=x_T,
    )

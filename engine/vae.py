"""Variational autoencoders (Kingma and Welling 2014): the reparameterisation trick, the Gaussian
KL, the ELBO, small MLP VAEs for points and images, training, and a comparison of gradient
estimators.

An encoder gives q(z | x) = N(μ(x), diag σ²(x)) (it outputs μ and log σ²); a decoder gives
p(x | z). The evidence lower bound on log p(x), for one x, is

    ELBO = E_{z~q}[log p(x | z)] − KL(q(z | x) ‖ N(0, I)),
    KL   = −½ Σ_j (1 + log σ_j² − μ_j² − σ_j²)            (closed form, summed over latent dims),

and training maximises it (minimises −ELBO). With a weight β on the KL (β-VAE),
loss = reconstruction + β·KL; large β pushes q(z | x) onto the prior and the latent dimensions
stop carrying information ("posterior collapse": their KL drops to zero).

Reparameterisation: z = μ + σ ⊙ ε, ε ~ N(0, I), so z is a differentiable function of μ and log σ²
with ∂z/∂μ = 1 and ∂z/∂(log σ²) = ½ σ ε; the randomness sits in ε, which needs no gradient.
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
from .tensor import Tensor, as_tensor

__all__ = [
    "reparameterize",
    "gaussian_kl",
    "gaussian_kl_per_dim",
    "gaussian_kl_monte_carlo",
    "elbo",
    "bernoulli_log_likelihood",
    "gaussian_log_likelihood",
    "VAELoss",
    "VAE",
    "ImageVAE",
    "VAEHistory",
    "train_vae",
    "GradientEstimates",
    "score_function_vs_reparam_variance",
]

LIKELIHOODS = ("gaussian", "bernoulli")
_LOG_2PI = math.log(2 * math.pi)


# ----------------------------------------------------------------------------- the pieces
def _mu_logvar(mu, logvar, op: str) -> tuple[Tensor, Tensor]:
    mu, logvar = as_tensor(mu), as_tensor(logvar)
    if mu.shape != logvar.shape:
        raise ValueError(f"{op}: mu {mu.shape} and logvar {logvar.shape} must have the same shape")
    if mu.ndim == 0:
        raise ValueError(f"{op}: mu and logvar need a latent dimension (shape [..., latent_dim]), got a scalar")
    return mu, logvar


def reparameterize(mu, logvar, eps=None) -> Tensor:
    """z = μ + σ ⊙ ε with σ = exp(½ log σ²); ε ~ N(0, I) from the engine's generator, or given.

    Gradients: ∂z/∂μ = 1, ∂z/∂(log σ²) = ½ σ ε (ε is a constant).
    """
    op = "reparameterize"
    mu, logvar = _mu_logvar(mu, logvar, op)
    if eps is None:
        eps = engine_random.generator().standard_normal(mu.shape).astype(mu.dtype)
    else:
        eps = np.asarray(getattr(eps, "data", eps))
        if eps.shape != mu.shape:
            raise ValueError(f"{op}: eps has shape {eps.shape}, mu has shape {mu.shape}")
        eps = eps.astype(mu.dtype, copy=False)
    return mu + (logvar * 0.5).exp() * Tensor._wrap(eps)


def gaussian_kl_per_dim(mu, logvar) -> Tensor:
    """KL(N(μ_j, σ_j²) ‖ N(0, 1)) = −½(1 + log σ_j² − μ_j² − σ_j²) for each latent dimension j
    (same shape as μ). Gradients: ∂/∂μ = μ, ∂/∂(log σ²) = ½(σ² − 1)."""
    mu, logvar = _mu_logvar(mu, logvar, "gaussian_kl")
    return (1.0 + logvar - mu * mu - logvar.exp()) * -0.5


def gaussian_kl(mu, logvar) -> Tensor:
    """KL(N(μ, diag σ²) ‖ N(0, I)) = −½ Σ_j (1 + log σ_j² − μ_j² − σ_j²), summed over the last
    (latent) dimension: one value per sample, shape μ.shape[:-1]. Average it over a batch yourself."""
    return gaussian_kl_per_dim(mu, logvar).sum(dim=-1)


def gaussian_kl_monte_carlo(mu, logvar, n_samples: int = 1000, seed=None) -> tuple[np.ndarray, np.ndarray]:
    """Monte-Carlo estimate of the same KL: the mean over z ~ q of log q(z) − log N(z; 0, I).

    Returns ``(estimate, standard_error)`` arrays of shape μ.shape[:-1] (float64, no gradient).
    Per draw, log q(z) − log p(z) = −½ Σ_j (log σ_j² + ε_j² − z_j²) with z = μ + σ ε.
    """
    mu, logvar = _mu_logvar(mu, logvar, "gaussian_kl_monte_carlo")
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) or n_samples < 2:
        raise ValueError(f"gaussian_kl_monte_carlo: n_samples must be an integer >= 2, got {n_samples!r}")
    rng = engine_random.generator() if seed is None else np.random.default_rng(seed)
    m, lv = mu.data.astype(np.float64), logvar.data.astype(np.float64)
    eps = rng.standard_normal((n_samples,) + m.shape)
    z = m + np.exp(0.5 * lv) * eps
    log_ratio = -0.5 * (lv + eps**2 - z**2).sum(axis=-1)  # [n_samples, ...]
    return log_ratio.mean(axis=0), log_ratio.std(axis=0, ddof=1) / math.sqrt(n_samples)


def elbo(recon_log_likelihood, kl, beta: float = 1.0):
    """ELBO = log p(x | z) − β·KL (β = 1: the evidence lower bound itself). Works on Tensors
    (per sample or averaged) and on plain numbers; maximise it, or minimise its negative."""
    if not (isinstance(beta, numbers.Real) and not isinstance(beta, bool) and math.isfinite(beta) and beta >= 0):
        raise ValueError(f"elbo: beta must be a finite number >= 0, got {beta!r}")
    return recon_log_likelihood - kl * beta


def _per_sample_sum(values: Tensor) -> Tensor:
    """Sum over every dimension but the first (one value per sample); a 1-D input is one sample."""
    return values.sum() if values.ndim <= 1 else values.sum(dim=tuple(range(1, values.ndim)))


def bernoulli_log_likelihood(logits, x) -> Tensor:
    """log p(x | z) = Σ_i [x_i log σ(ℓ_i) + (1 − x_i) log(1 − σ(ℓ_i))] per sample, from logits ℓ
    (stable: it is −BCE-with-logits). x may be any value in [0, 1] (grey pixels)."""
    logits = as_tensor(logits)
    x = as_tensor(x)
    if logits.shape != x.shape:
        raise ValueError(f"bernoulli_log_likelihood: logits {logits.shape} and x {x.shape} must match")
    return -_per_sample_sum(F.binary_cross_entropy_with_logits(logits, x, reduction="none"))


def gaussian_log_likelihood(x_hat, x, var: float = 1.0) -> Tensor:
    """log N(x; x̂, var·I) = −½ Σ_i [(x_i − x̂_i)²/var + log(2π·var)] per sample."""
    x_hat, x = as_tensor(x_hat), as_tensor(x)
    if x_hat.shape != x.shape:
        raise ValueError(f"gaussian_log_likelihood: x_hat {x_hat.shape} and x {x.shape} must match")
    if not (isinstance(var, numbers.Real) and math.isfinite(var) and var > 0):
        raise ValueError(f"gaussian_log_likelihood: var must be a positive number, got {var!r}")
    squared = (x - x_hat) ** 2
    return _per_sample_sum(squared * (-0.5 / var) - 0.5 * (_LOG_2PI + math.log(var)))


# ----------------------------------------------------------------------------- models
class VAELoss(NamedTuple):
    """One batch's terms, averaged over the batch.

    loss: recon + β·kl (a Tensor to call ``backward()`` on); recon: −log p(x | z), the
    reconstruction loss; kl: KL(q(z | x) ‖ N(0, I)); kl_per_dim: the KL of each latent
    dimension [latent_dim] (near 0 means the dimension is unused); elbo: −(recon + kl), the
    β = 1 bound, whatever β trained with.
    """

    loss: Tensor
    recon: float
    kl: float
    kl_per_dim: np.ndarray
    elbo: float


def _positive_int(value, name: str, op: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{op}: {name} must be an integer >= 1, got {value!r}")
    return int(value)


class VAE(nn.Module):
    """An MLP VAE for vectors [N, input_dim].

    encoder: x → Linear → SiLU → Linear → SiLU → (μ, log σ²), each a Linear to ``latent_dim``;
    decoder: z → Linear → SiLU → Linear → SiLU → Linear to ``input_dim``. The decoder's output is
    the mean of p(x | z) = N(x̂, obs_var·I) (``likelihood="gaussian"``, real-valued data) or the
    logits of p(x | z) = Bernoulli(σ(ℓ)) (``"bernoulli"``, data in [0, 1] such as pixels).
    ``obs_var`` sets how much reconstruction error costs against the KL: smaller means sharper
    reconstructions and more information in z.
    """

    def __init__(
        self,
        input_dim: int = 2,
        hidden: int = 64,
        latent_dim: int = 2,
        likelihood: str = "gaussian",
        obs_var: float = 0.05,
    ):
        super().__init__()
        op = type(self).__name__
        self.input_dim = _positive_int(input_dim, "input_dim", op)
        hidden = _positive_int(hidden, "hidden", op)
        self.latent_dim = _positive_int(latent_dim, "latent_dim", op)
        if likelihood not in LIKELIHOODS:
            raise ValueError(f"{op}: likelihood must be one of {LIKELIHOODS}, got {likelihood!r}")
        if not (isinstance(obs_var, numbers.Real) and math.isfinite(obs_var) and obs_var > 0):
            raise ValueError(f"{op}: obs_var must be a positive number, got {obs_var!r}")
        self.likelihood, self.obs_var = likelihood, float(obs_var)
        self.encoder = nn.Sequential(nn.Linear(self.input_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
        self.to_mu = nn.Linear(hidden, self.latent_dim)
        self.to_logvar = nn.Linear(hidden, self.latent_dim)
        self.decoder = nn.Sequential(
            nn.Linear(self.latent_dim, hidden),
            nn.SiLU(),
            nn.Linear(hidden, hidden),
            nn.SiLU(),
            nn.Linear(hidden, self.input_dim),
        )

    def _input(self, x) -> Tensor:
        """x as a Tensor of the model's input shape [N, input_dim] (a clear error otherwise)."""
        x = x if isinstance(x, Tensor) else Tensor(np.asarray(getattr(x, "data", x), dtype=np.float32))
        if x.ndim != 2 or x.shape[1] != self.input_dim:
            raise ValueError(f"{type(self).__name__}: x must have shape [N, {self.input_dim}], got {x.shape}")
        return x

    def _flat(self, x) -> Tensor:
        """The encoder's input [N, input_dim]."""
        return self._input(x)

    def encode(self, x) -> tuple[Tensor, Tensor]:
        """(μ, log σ²) of q(z | x), each [N, latent_dim]."""
        h = self.encoder(self._flat(x))
        return self.to_mu(h), self.to_logvar(h)

    def decode(self, z) -> Tensor:
        """The decoder's output for latents z [N, latent_dim]: the mean x̂ or the logits ℓ."""
        z = z if isinstance(z, Tensor) else Tensor(np.asarray(z, dtype=np.float32))
        if z.ndim != 2 or z.shape[1] != self.latent_dim:
            raise ValueError(f"{type(self).__name__}.decode: z must have shape [N, {self.latent_dim}], got {z.shape}")
        return self.decoder(z)

    def forward(self, x, eps=None) -> tuple[Tensor, Tensor, Tensor]:
        """(decoder output, μ, log σ²) with z = μ + σ ε drawn once per sample."""
        mu, logvar = self.encode(x)
        return self.decode(reparameterize(mu, logvar, eps)), mu, logvar

    def reconstruction_log_likelihood(self, output, x) -> Tensor:
        """log p(x | z) per sample, from the decoder's output."""
        if self.likelihood == "bernoulli":
            return bernoulli_log_likelihood(output, x)
        return gaussian_log_likelihood(output, x, var=self.obs_var)

    def loss(self, x, beta: float = 1.0, eps=None) -> VAELoss:
        """The batch's β-weighted negative ELBO and its parts (see :class:`VAELoss`);
        one z per sample (the usual single-sample estimate of the reconstruction term)."""
        x = self._input(x)
        output, mu, logvar = self.forward(x, eps)
        recon = -self.reconstruction_log_likelihood(output, x).mean()
        kl_per_dim = gaussian_kl_per_dim(mu, logvar).mean(dim=0)
        kl = kl_per_dim.sum()
        loss = -elbo(-recon, kl, beta)
        return VAELoss(loss, recon.item(), kl.item(), kl_per_dim.data.astype(np.float64), -(recon.item() + kl.item()))

    @no_grad()
    def reconstruct(self, x) -> np.ndarray:
        """Decode the posterior means μ(x) (no sampling): x̂ or pixel probabilities σ(ℓ)."""
        mu, _ = self.encode(x)
        return self._mean_of(self.decode(mu))

    @no_grad()
    def generate(self, n: int = None, z=None) -> np.ndarray:
        """Decode z ~ N(0, I) (``n`` draws) or the given latents z: the mean of p(x | z)."""
        if z is None:
            n = _positive_int(n, "n", "generate")
            z = engine_random.generator().standard_normal((n, self.latent_dim)).astype(np.float32)
        return self._mean_of(self.decode(z))

    def _mean_of(self, output: Tensor) -> np.ndarray:
        return F.sigmoid(output).data if self.likelihood == "bernoulli" else output.data


class ImageVAE(VAE):
    """The MLP VAE on flattened images [N, C, H, W] with a Bernoulli likelihood on the pixels
    (grey values in [0, 1]); ``decode``, ``reconstruct`` and ``generate`` give images back."""

    def __init__(self, image_shape=(1, 16, 16), hidden: int = 256, latent_dim: int = 2):
        shape = tuple(image_shape)
        if len(shape) != 3 or any(isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 1 for s in shape):
            raise ValueError(f"ImageVAE: image_shape must be (C, H, W) of positive ints, got {image_shape!r}")
        super().__init__(int(np.prod(shape)), hidden, latent_dim, likelihood="bernoulli")
        self.image_shape = shape

    def _input(self, x) -> Tensor:
        x = x if isinstance(x, Tensor) else Tensor(np.asarray(getattr(x, "data", x), dtype=np.float32))
        if x.ndim != 4 or tuple(x.shape[1:]) != self.image_shape:
            raise ValueError(
                f"ImageVAE: images must have shape [N, {', '.join(map(str, self.image_shape))}], got {x.shape}"
            )
        return x

    def _flat(self, x) -> Tensor:
        x = self._input(x)
        return x.reshape(x.shape[0], self.input_dim)

    def decode(self, z) -> Tensor:
        out = super().decode(z)
        return out.reshape((out.shape[0],) + self.image_shape)


# ----------------------------------------------------------------------------- training
@dataclass
class VAEHistory:
    """Per-step records of :func:`train_vae` (float64 arrays; ``epoch`` int) and per-epoch means."""

    loss: np.ndarray
    recon: np.ndarray
    kl: np.ndarray
    elbo: np.ndarray
    epoch: np.ndarray
    kl_per_dim: np.ndarray  # [steps, latent_dim]

    def per_epoch(self, name: str = "elbo") -> np.ndarray:
        """The mean of a record over each epoch's steps, e.g. ``history.per_epoch("elbo")``."""
        values = getattr(self, name)
        epochs = np.unique(self.epoch)
        return np.stack([values[self.epoch == e].mean(axis=0) for e in epochs])


def train_vae(
    model: VAE,
    X,
    epochs: int | None = None,
    batch_size: int = 128,
    lr: float = 1e-3,
    beta: float = 1.0,
    progress: Callable | None = None,
    optimizer=None,
    steps: int | None = None,
) -> VAEHistory:
    """Train ``model`` on X (rows shuffled each epoch by the engine's generator) with Adam.

    Give ``epochs`` (default 20) or ``steps`` (mini-batches, running as many epochs as needed).
    ``progress(done, total)`` is called after each step; pass ``optimizer`` to continue a run.
    """
    from .optim import Adam

    op = "train_vae"
    X = np.asarray(getattr(X, "data", X))
    if X.ndim < 2 or X.shape[0] == 0:
        raise ValueError(f"{op}: X must be a non-empty batch [N, ...], got shape {X.shape}")
    X = X.astype(np.float32, copy=False)
    batch_size = _positive_int(batch_size, "batch_size", op)
    n_batches = math.ceil(X.shape[0] / batch_size)
    if steps is not None and epochs is not None:
        raise ValueError(f"{op}: give epochs or steps, not both")
    total = (
        _positive_int(steps, "steps", op)
        if steps is not None
        else n_batches * _positive_int(20 if epochs is None else epochs, "epochs", op)
    )
    elbo(0.0, 0.0, beta)  # validates beta
    if optimizer is None:
        if not (isinstance(lr, numbers.Real) and lr > 0):
            raise ValueError(f"{op}: lr must be a positive number, got {lr!r}")
        optimizer = Adam(model.parameters(), lr=lr)
    records = {name: np.empty(total) for name in ("loss", "recon", "kl", "elbo")}
    epoch_of = np.empty(total, dtype=np.int64)
    kl_dims = np.empty((total, model.latent_dim))
    step = 0
    while step < total:
        order = engine_random.generator().permutation(X.shape[0])
        for start in range(0, X.shape[0], batch_size):
            if step == total:
                break
            result = model.loss(X[order[start : start + batch_size]], beta=beta)
            optimizer.zero_grad()
            result.loss.backward()
            optimizer.step()
            if not math.isfinite(result.loss.item()):
                raise FloatingPointError(f"{op}: the loss became {result.loss.item()} at step {step}; lower lr")
            for name in records:
                records[name][step] = result.loss.item() if name == "loss" else getattr(result, name)
            epoch_of[step] = step // n_batches
            kl_dims[step] = result.kl_per_dim
            step += 1
            if progress is not None:
                progress(step, total)
    return VAEHistory(epoch=epoch_of, kl_per_dim=kl_dims, **records)


# ----------------------------------------------------------------------------- gradient estimators
class GradientEstimates(NamedTuple):
    """n estimates of ∂/∂μ E_{z~N(μ, σ²)}[f(z)] by each estimator, their means and variances.

    true_gradient: the exact value when known (f = z²: 2μ), else None.
    """

    score_function: np.ndarray
    reparameterized: np.ndarray
    score_mean: float
    score_var: float
    reparam_mean: float
    reparam_var: float
    true_gradient: float | None


def score_function_vs_reparam_variance(
    mu: float = 1.0, sigma: float = 1.0, n: int = 1000, f: Callable | None = None, n_samples: int = 1, seed=None
) -> GradientEstimates:
    """Estimate ∇_μ E_{z~N(μ, σ²)}[f(z)] ``n`` times with each estimator (each estimate averages
    ``n_samples`` draws), both gradients computed by the engine's autograd:

    - score function (REINFORCE): f(z) · ∂/∂μ log N(z; μ, σ²) = f(z)(z − μ)/σ², z held fixed;
    - reparameterised (pathwise): ∂/∂μ f(μ + σε) = f'(μ + σε).

    Both are unbiased; the pathwise one uses f's slope and usually has far lower variance.
    ``f`` maps a Tensor to a Tensor elementwise (default z ↦ z², whose true gradient is 2μ).
    """
    op = "score_function_vs_reparam_variance"
    for name, value in (("mu", mu), ("sigma", sigma)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise ValueError(f"{op}: {name} must be a finite number, got {value!r}")
    if sigma <= 0:
        raise ValueError(f"{op}: sigma must be positive, got {sigma!r}")
    n = _positive_int(n, "n", op)
    n_samples = _positive_int(n_samples, "n_samples", op)
    true_gradient = 2.0 * mu if f is None else None
    f = f if f is not None else (lambda z: z * z)
    rng = engine_random.generator() if seed is None else np.random.default_rng(seed)
    eps = rng.standard_normal((n, n_samples))

    # pathwise: one μ per estimate, so each row's gradient is its own estimate
    mu_path = Tensor(np.full((n, 1), float(mu)), requires_grad=True)
    f(mu_path + sigma * Tensor._wrap(eps)).mean(dim=1).sum().backward()
    reparameterized = mu_path.grad.data[:, 0].copy()

    # score function: differentiate log q(z) with z a constant, weighted by f(z)
    z = mu + sigma * eps
    with no_grad():
        weights = as_tensor(f(Tensor._wrap(z))).data
    mu_score = Tensor(np.full((n, 1), float(mu)), requires_grad=True)
    log_q = ((Tensor._wrap(z) - mu_score) ** 2) * (-0.5 / sigma**2) - math.log(sigma) - 0.5 * _LOG_2PI
    (log_q * Tensor._wrap(weights)).mean(dim=1).sum().backward()
    score_function = mu_score.grad.data[:, 0].copy()

    return GradientEstimates(
        score_function,
        reparameterized,
        float(score_function.mean()),
        float(score_function.var(ddof=1)) if n > 1 else 0.0,
        float(reparameterized.mean()),
        float(reparameterized.var(ddof=1)) if n > 1 else 0.0,
        true_gradient,
    )

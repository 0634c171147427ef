"""The computations behind notebook 08 (VAE) that ``engine.vae`` does not already provide: the
reparameterisation trick and the KL by Monte Carlo, the score-function vs reparameterised
gradient estimators, training runs with a held-out budget, the β sweep and latent-space decoding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine import Tensor, no_grad, random, vae

from ._checks import _int, _positive
from ._generative import DATASETS_2D, toy_data_2d

__all__ = [
    "DATASETS_2D", "ESTIMATOR_FUNCTIONS", "BetaSweep", "EstimatorComparison", "ImageVAERun",
    "KLCheck", "LatentGrid", "ReparamGradients", "VAERun", "beta_sweep", "decode_point",
    "equivalent_beta", "estimator_comparison", "kl_check", "latent_grid", "reparam_gradients",
    "toy_data_2d", "train_image_vae", "train_vae_2d",
]


@dataclass(frozen=True)
class ReparamGradients:
    """The reparameterised estimate of E[z²] and its gradients, next to the exact values."""

    eps: np.ndarray  # the draws ε ~ N(0, 1)
    z: np.ndarray  # z = μ + σε
    estimate: float  # the average of z²
    grad_mu: float  # its gradient in μ (autograd)
    grad_sigma: float  # its gradient in σ (autograd)
    value: float  # μ² + σ²
    exact_grad_mu: float  # 2μ
    exact_grad_sigma: float  # 2σ


def reparam_gradients(mu=1.0, sigma=1.0, n=2000, seed=0) -> ReparamGradients:
    """The reparameterisation trick on E_{z~N(μ, σ²)}[z²] = μ² + σ².

    z = μ + σε with ε ~ N(0, 1) drawn once (``seed``): the average of z² is a differentiable
    function of μ and σ, and the engine's autograd gives its gradient, an unbiased estimate of
    the exact ∂/∂μ = 2μ and ∂/∂σ = 2σ.
    """
    op = "reparam_gradients"
    sigma = _positive(op, "sigma", sigma)
    mu = float(mu)
    n = _int(op, "n", n, 1)
    eps = np.random.default_rng(seed).standard_normal(n)
    mu_t = Tensor(np.array(mu), requires_grad=True)
    sigma_t = Tensor(np.array(sigma), requires_grad=True)
    z = mu_t + sigma_t * Tensor(eps)
    estimate = (z * z).mean()
    estimate.backward()
    return ReparamGradients(eps=eps, z=z.data, estimate=float(estimate.data), grad_mu=float(mu_t.grad),
                            grad_sigma=float(sigma_t.grad), value=mu**2 + sigma**2,
                            exact_grad_mu=2 * mu, exact_grad_sigma=2 * sigma)


@dataclass(frozen=True)
class KLCheck:
    """KL(N(μ, σ²) ‖ N(0, 1)) in closed form and by Monte Carlo, and both densities on a grid."""

    closed: float
    mc: float
    mc_se: float  # the Monte Carlo estimate's standard error
    x: np.ndarray
    q: np.ndarray  # N(μ, σ²) on the grid
    p: np.ndarray  # N(0, 1) on the grid


def kl_check(mu=1.0, sigma=0.5, n_samples=1000, seed=0) -> KLCheck:
    """KL(N(μ, σ²) ‖ N(0, 1)) in closed form (``engine.vae.gaussian_kl``) and by Monte Carlo
    (``engine.vae.gaussian_kl_monte_carlo``: the average of log q(z) − log p(z) over z ~ q), with
    the two densities on a grid for the picture."""
    op = "kl_check"
    sigma = _positive(op, "sigma", sigma)
    mu = np.array([[float(mu)]])
    logvar = np.log(np.array([[sigma**2]]))
    closed = float(vae.gaussian_kl(mu, logvar).data[0])
    mc, se = vae.gaussian_kl_monte_carlo(mu, logvar, n_samples=_int(op, "n_samples", n_samples, 2),
                                         seed=seed)
    x = np.linspace(-6, 6, 401)
    q = np.exp(-(x - mu[0, 0]) ** 2 / (2 * sigma**2)) / (sigma * math.sqrt(2 * math.pi))
    p = np.exp(-(x**2) / 2) / math.sqrt(2 * math.pi)
    return KLCheck(closed=closed, mc=float(mc[0]), mc_se=float(se[0]), x=x, q=q, p=p)


ESTIMATOR_FUNCTIONS = ("z²", "sin z", "exp z")
_FUNCTIONS = {"z²": lambda z: z * z, "sin z": lambda z: z.sin(), "exp z": lambda z: z.exp()}


@dataclass(frozen=True)
class EstimatorComparison:
    """n estimates of ∂/∂μ E_{z~N(μ, σ²)}[f(z)] by three estimators, with the exact gradient."""

    score_function: np.ndarray  # f(z)·∂/∂μ log q(z), REINFORCE
    baseline: np.ndarray  # (f(z) − f(μ))·∂/∂μ log q(z): the same with a control variate
    reparameterized: np.ndarray  # f'(μ + σε), pathwise
    exact: float

    @property
    def score_var(self) -> float:
        return float(self.score_function.var(ddof=1))

    @property
    def baseline_var(self) -> float:
        return float(self.baseline.var(ddof=1))

    @property
    def reparam_var(self) -> float:
        return float(self.reparameterized.var(ddof=1))


def _score_with_baseline(mu, sigma, f, eps) -> np.ndarray:
    """Score-function estimates with the baseline b = f(μ) subtracted from f(z), by autograd:
    E[∂/∂μ log q(z)] = 0, so any b that does not depend on z leaves the estimate unbiased, and
    one close to f(z) removes most of its variance."""
    z = mu + sigma * eps
    with no_grad():
        weights = f(Tensor(z)).data - f(Tensor(np.array(mu))).data
    mu_t = Tensor(np.full((eps.shape[0], 1), float(mu)), requires_grad=True)
    log_q = ((Tensor(z) - mu_t) ** 2) * (-0.5 / sigma**2)  # log N(z; μ, σ²) up to a constant
    (log_q * Tensor(weights)).mean(dim=1).sum().backward()
    return mu_t.grad[:, 0].copy()


def estimator_comparison(mu=1.0, sigma=1.0, f_name="z²", n_samples=1, n=2000, seed=0) -> EstimatorComparison:
    """Score-function (REINFORCE, bare and with the baseline f(μ)) against reparameterised
    gradient estimates of ∂/∂μ E_{z~N(μ, σ²)}[f(z)] (``engine.vae.score_function_vs_reparam_variance``
    for the bare two), ``n`` estimates of ``n_samples`` draws each, on the same draws, with the
    exact gradient:

        f = z²:   2μ;      f = sin z:   cos μ · e^{−σ²/2};      f = exp z:   e^{μ + σ²/2}.
    """
    op = "estimator_comparison"
    mu, sigma = float(mu), _positive(op, "sigma", sigma)
    if f_name not in _FUNCTIONS:
        raise ValueError(f"{op}: f_name must be one of {ESTIMATOR_FUNCTIONS}, got {f_name!r}")
    exact = {"z²": 2 * mu, "sin z": math.cos(mu) * math.exp(-sigma**2 / 2),
             "exp z": math.exp(mu + sigma**2 / 2)}[f_name]
    f = _FUNCTIONS[f_name]
    est = vae.score_function_vs_reparam_variance(mu, sigma, n=n, f=f, n_samples=n_samples, seed=seed)
    eps = np.random.default_rng(seed).standard_normal((n, _int(op, "n_samples", n_samples, 1)))  # the same draws
    return EstimatorComparison(score_function=est.score_function, reparameterized=est.reparameterized,
                               baseline=_score_with_baseline(mu, sigma, f, eps), exact=exact)


@dataclass
class VAERun:
    """A VAE trained on 2-D points, with its held-out budget (nats, averaged per point)."""

    model: vae.VAE
    history: vae.VAEHistory | None
    stopped: str = ""  # why training stopped (a non-finite loss), or empty
    recon: float = math.nan  # −log p(x | z), held out
    kl: float = math.nan
    kl_per_dim: np.ndarray | None = None  # [latent_dim]
    elbo: float = math.nan  # the β = 1 bound, −(recon + kl)
    latents: np.ndarray | None = None  # posterior means μ(x) of the held-out points
    held_out: np.ndarray | None = None
    reconstructions: np.ndarray | None = None  # decoded posterior means of the held-out points
    samples: np.ndarray | None = None  # decoded z ~ N(0, I)


def equivalent_beta(beta, obs_var, reference_var=0.05) -> float:
    """The β that trains the same model with decoder variance ``reference_var``: the loss
    ‖x − x̂‖²/(2σ²) + β·KL times σ²/σ₀² is ‖x − x̂‖²/(2σ₀²) + β(σ²/σ₀²)·KL (plus a constant), and
    Adam's steps do not change when the loss is multiplied by a constant. So the decoder variance
    σ² is the same knob as β: β' = β·σ²/σ₀²."""
    return float(beta) * _positive("equivalent_beta", "obs_var", obs_var) / _positive(
        "equivalent_beta", "reference_var", reference_var)


def train_vae_2d(X, beta=1.0, latent_dim=2, steps=800, lr=3e-3, hidden=64, obs_var=0.05,
                 n_eval=500, seed=0, on_step=None) -> VAERun:
    """A ``engine.vae.VAE`` with a Gaussian decoder p(x | z) = N(x̂(z), obs_var·I) trained on 2-D
    points (the last ``n_eval`` rows held out), with the held-out budget measured at the end.
    Seeded on a forked stream (the global one is left as it was)."""
    op = "train_vae_2d"
    X = np.asarray(X, dtype=np.float32)
    n_eval = _int(op, "n_eval", n_eval, 2)
    if X.ndim != 2 or X.shape[0] <= n_eval + 1:
        raise ValueError(f"{op}: X must be [N, D] with N > n_eval + 1 = {n_eval + 1}, got {X.shape}")
    train, held = X[:-n_eval], X[-n_eval:]
    with random.fork_rng(int(seed)):
        model = vae.VAE(X.shape[1], int(hidden), _int(op, "latent_dim", latent_dim, 1),
                        obs_var=_positive(op, "obs_var", obs_var))
        progress = None if on_step is None else (lambda done, total: on_step(done))
        try:
            history = vae.train_vae(model, train, steps=_int(op, "steps", steps, 1), batch_size=128,
                                    lr=_positive(op, "lr", lr), beta=float(beta), progress=progress)
        except FloatingPointError as error:
            return VAERun(model=model, history=None, stopped=str(error).replace("train_vae: ", ""))
    with random.fork_rng(int(seed) + 1):
        final = model.loss(held, beta=float(beta))
    with no_grad():
        latents = model.encode(held)[0].data.astype(np.float64)
    with random.fork_rng(int(seed) + 2):
        samples = model.generate(n_eval)
    return VAERun(model=model, history=history, recon=final.recon, kl=final.kl,
                  kl_per_dim=final.kl_per_dim, elbo=final.elbo, latents=latents, held_out=held,
                  reconstructions=model.reconstruct(held), samples=samples)


@dataclass(frozen=True)
class BetaSweep:
    """One VAE per β: the held-out budget and the active latent dimensions (KL > 0.05 nats)."""

    betas: np.ndarray
    recon: np.ndarray
    kl_per_dim: np.ndarray  # [len(betas), latent_dim]
    kl: np.ndarray
    elbo: np.ndarray
    active: np.ndarray


def beta_sweep(X, betas=(0.1, 0.3, 1.0, 3.0, 10.0, 30.0), latent_dim=3, steps=600, obs_var=0.05,
               seed=0, on_step=None) -> BetaSweep:
    """:func:`train_vae_2d` once per β (same seed, same data). As β grows the KL is squeezed out
    dimension by dimension (posterior collapse) and the reconstruction worsens. ``on_step(done)``
    counts steps over the whole sweep."""
    betas = [float(b) for b in betas]
    recon, kl_dims, elbos = [], [], []
    for i, beta in enumerate(betas):
        hook = None if on_step is None else (lambda s, i=i: on_step(i * steps + s))
        run = train_vae_2d(X, beta=beta, latent_dim=latent_dim, steps=steps, obs_var=obs_var,
                           seed=seed, on_step=hook)
        failed = bool(run.stopped)
        recon.append(math.nan if failed else run.recon)
        kl_dims.append(np.full(latent_dim, np.nan) if failed else run.kl_per_dim)
        elbos.append(math.nan if failed else run.elbo)
    kl_dims = np.asarray(kl_dims)
    return BetaSweep(betas=np.asarray(betas), recon=np.asarray(recon), kl_per_dim=kl_dims,
                     kl=kl_dims.sum(axis=1), elbo=np.asarray(elbos), active=(kl_dims > 0.05).sum(axis=1))


@dataclass
class ImageVAERun:
    """A VAE trained on flattened grey images with a Gaussian decoder."""

    model: vae.VAE
    history: vae.VAEHistory | None
    image_shape: tuple
    stopped: str = ""
    latents: np.ndarray | None = None  # posterior means μ(x) of the held-out images
    labels: np.ndarray | None = None  # their labels (never shown to the model)
    images: np.ndarray | None = None  # the held-out images [n, H, W]
    reconstructions: np.ndarray | None = None  # [n, H, W]
    elbo: float = math.nan  # held-out ELBO per image, nats (a bound on log p(x), a density)


def train_image_vae(train_images, test_images, test_labels, steps=400, latent_dim=2, hidden=128,
                    lr=2e-3, obs_var=0.05, seed=0, on_step=None) -> ImageVAERun:
    """A ``engine.vae.VAE`` on flattened images [N, H, W] with a Gaussian decoder
    p(x | z) = N(x̂(z), obs_var·I): grey pixels are intensities, not coin flips, and the Gaussian
    is a normalised density on them, so the held-out ELBO is a bound on log p(x). Trained on
    ``train_images``, measured on ``test_images``. Seeded on a forked stream."""
    op = "train_image_vae"
    train = np.asarray(train_images, dtype=np.float32)
    test = np.asarray(test_images, dtype=np.float32)
    if train.ndim != 3 or test.ndim != 3 or train.shape[1:] != test.shape[1:] or len(test) == 0:
        raise ValueError(f"{op}: images must be [N, H, W] of one size, got {train.shape} and {test.shape}")
    shape = train.shape[1:]
    flat = int(np.prod(shape))
    with random.fork_rng(int(seed)):
        model = vae.VAE(flat, int(hidden), _int(op, "latent_dim", latent_dim, 1),
                        obs_var=_positive(op, "obs_var", obs_var))
        progress = None if on_step is None else (lambda done, total: on_step(done))
        try:
            history = vae.train_vae(model, train.reshape(len(train), flat), steps=_int(op, "steps", steps, 1),
                                    batch_size=64, lr=_positive(op, "lr", lr), progress=progress)
        except FloatingPointError as error:
            return ImageVAERun(model=model, history=None, image_shape=shape,
                               stopped=str(error).replace("train_vae: ", ""))
    held = test.reshape(len(test), flat)
    with no_grad():
        mu, _ = model.encode(held)
    with random.fork_rng(int(seed) + 1):
        elbo = model.loss(held).elbo
    return ImageVAERun(model=model, history=history, image_shape=shape, latents=mu.data.astype(np.float64),
                       labels=np.asarray(test_labels), images=test,
                       reconstructions=model.reconstruct(held).reshape(test.shape), elbo=elbo)


@dataclass(frozen=True)
class LatentGrid:
    images: np.ndarray  # [n, n, H, W]: row 0 at the top = largest z₂
    z: np.ndarray  # the grid values along each axis


def latent_grid(model, image_shape, n=8, limit=2.5) -> LatentGrid:
    """Decode an n × n grid of latents z ∈ [−limit, limit]² (the first two latent dimensions; any
    others 0) into images of ``image_shape``."""
    op = "latent_grid"
    n = _int(op, "n", n, 1)
    values = np.linspace(-limit, limit, n)
    z2, z1 = np.meshgrid(values[::-1], values, indexing="ij")
    z = np.zeros((n * n, model.latent_dim), dtype=np.float32)
    z[:, 0] = z1.ravel()
    if model.latent_dim > 1:
        z[:, 1] = z2.ravel()
    return LatentGrid(images=model.generate(z=z).reshape((n, n) + tuple(image_shape)), z=values)


def decode_point(model, z1=0.0, z2=0.0) -> np.ndarray:
    """What the decoder gives for the latent (z1, z2, 0, …): the mean of p(x | z), flat."""
    z = np.zeros((1, model.latent_dim), dtype=np.float32)
    z[0, 0] = z1
    if model.latent_dim > 1:
        z[0, 1] = z2
    return model.generate(z=z)[0]

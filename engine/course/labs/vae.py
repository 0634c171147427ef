"""The computations behind notebook 08 (VAE) that ``engine.vae`` does not already provide: the
reparameterisation trick and the KL by Monte Carlo, the score-function vs reparameterised
gradient estimators, training runs with a held-out budget, the β sweep and latent-space decoding.
"""

from __future__ import annotations

import math

import numpy as np

from engine import Tensor, manual_seed, no_grad, vae

from ._checks import _int, _positive
from ._generative import DATASETS_2D, toy_data_2d

__all__ = [
    "DATASETS_2D", "ESTIMATOR_FUNCTIONS", "beta_sweep", "decode_point", "estimator_comparison",
    "kl_check", "latent_grid", "reparam_gradients", "toy_data_2d", "train_image_vae", "train_vae_2d",
]


def reparam_gradients(mu=1.0, sigma=1.0, n=2000, seed=0) -> dict:
    """The reparameterisation trick on E_{z~N(μ, σ²)}[z²] = μ² + σ².

    z = μ + σε with ε ~ N(0, 1) drawn once (``seed``): the average of z² is a differentiable
    function of μ and σ, and the engine's autograd gives its gradient, an unbiased estimate of
    the exact ∂/∂μ = 2μ and ∂/∂σ = 2σ. Returns ``eps``, ``z``, ``estimate`` (the average of z²),
    ``grad_mu``, ``grad_sigma`` (autograd) and the exact ``value``, ``exact_grad_mu``,
    ``exact_grad_sigma``.
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
    return {"eps": eps, "z": z.data, "estimate": float(estimate.data), "grad_mu": float(mu_t.grad),
            "grad_sigma": float(sigma_t.grad), "value": mu**2 + sigma**2, "exact_grad_mu": 2 * mu,
            "exact_grad_sigma": 2 * sigma}


def kl_check(mu=1.0, sigma=0.5, n_samples=1000, seed=0) -> dict:
    """KL(N(μ, σ²) ‖ N(0, 1)) in closed form (``engine.vae.gaussian_kl``) and by Monte Carlo
    (``engine.vae.gaussian_kl_monte_carlo``: the average of log q(z) − log p(z) over z ~ q), with
    the two densities on a grid for the picture. Returns ``closed``, ``mc``, ``mc_se`` (its
    standard error), ``x``, ``q``, ``p``."""
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
    return {"closed": closed, "mc": float(mc[0]), "mc_se": float(se[0]), "x": x, "q": q, "p": p}


ESTIMATOR_FUNCTIONS = ("z²", "sin z", "exp z")


def estimator_comparison(mu=1.0, sigma=1.0, f_name="z²", n_samples=1, n=2000, seed=0) -> dict:
    """Score-function (REINFORCE) against reparameterised gradient estimates of
    ∂/∂μ E_{z~N(μ, σ²)}[f(z)] (``engine.vae.score_function_vs_reparam_variance``), ``n`` estimates
    of ``n_samples`` draws each, with the exact gradient:

        f = z²:   2μ;      f = sin z:   cos μ · e^{−σ²/2};      f = exp z:   e^{μ + σ²/2}.

    Returns the engine's ``GradientEstimates`` fields as a dict plus ``exact``."""
    op = "estimator_comparison"
    mu, sigma = float(mu), _positive(op, "sigma", sigma)
    functions = {"z²": (lambda z: z * z, 2 * mu),
                 "sin z": (lambda z: z.sin(), math.cos(mu) * math.exp(-sigma**2 / 2)),
                 "exp z": (lambda z: z.exp(), math.exp(mu + sigma**2 / 2))}
    if f_name not in functions:
        raise ValueError(f"{op}: f_name must be one of {ESTIMATOR_FUNCTIONS}, got {f_name!r}")
    f, exact = functions[f_name]
    est = vae.score_function_vs_reparam_variance(mu, sigma, n=n, f=f, n_samples=n_samples, seed=seed)
    out = est._asdict()
    out["exact"] = exact
    return out


def train_vae_2d(X, beta=1.0, latent_dim=2, steps=800, lr=3e-3, hidden=64, obs_var=0.05,
                 n_eval=500, seed=0, on_step=None) -> dict:
    """A ``engine.vae.VAE`` (Gaussian likelihood of variance ``obs_var``) trained on 2-D points
    (the last ``n_eval`` rows held out), with the held-out budget measured at the end:
    ``recon`` = −log p(x | z) (nats), ``kl_per_dim`` [latent_dim], ``kl``, ``elbo`` (β = 1),
    plus ``latents`` (posterior means μ(x) of the held-out points [n_eval, latent_dim]),
    ``reconstructions`` (decoded posterior means of the held-out points), ``samples``
    (decoded z ~ N(0, I)), ``history`` (``engine.vae.VAEHistory``), ``model``, ``stopped``."""
    op = "train_vae_2d"
    X = np.asarray(X, dtype=np.float32)
    n_eval = _int(op, "n_eval", n_eval, 2)
    if X.ndim != 2 or X.shape[0] <= n_eval + 1:
        raise ValueError(f"{op}: X must be [N, D] with N > n_eval + 1 = {n_eval + 1}, got {X.shape}")
    train, held = X[:-n_eval], X[-n_eval:]
    manual_seed(int(seed))
    model = vae.VAE(X.shape[1], int(hidden), _int(op, "latent_dim", latent_dim, 1), obs_var=obs_var)
    progress = None if on_step is None else (lambda done, total: on_step(done))
    try:
        history = vae.train_vae(model, train, steps=_int(op, "steps", steps, 1), batch_size=128,
                                lr=_positive(op, "lr", lr), beta=float(beta), progress=progress)
    except FloatingPointError as error:
        return {"model": model, "stopped": str(error).replace("train_vae: ", ""), "history": None}
    manual_seed(int(seed) + 1)
    final = model.loss(held, beta=float(beta))
    with no_grad():
        latents = model.encode(held)[0].data.astype(np.float64)
    manual_seed(int(seed) + 2)
    return {"model": model, "history": history, "recon": final.recon, "kl": final.kl,
            "latents": latents,
            "kl_per_dim": final.kl_per_dim, "elbo": final.elbo, "held_out": held,
            "reconstructions": model.reconstruct(held), "samples": model.generate(n_eval),
            "stopped": ""}


def beta_sweep(X, betas=(0.1, 0.3, 1.0, 3.0, 10.0, 30.0), latent_dim=3, steps=600, seed=0,
               on_step=None) -> dict:
    """:func:`train_vae_2d` once per β (same seed, same data): the held-out reconstruction loss,
    KL per latent dimension, and the number of **active** dimensions (KL > 0.05 nats) at each β.
    As β grows the KL is squeezed out dimension by dimension (posterior collapse) and the
    reconstruction worsens. ``on_step(done)`` counts steps over the whole sweep."""
    betas = [float(b) for b in betas]
    recon, kl_dims, elbos = [], [], []
    for i, beta in enumerate(betas):
        hook = None if on_step is None else (lambda s, i=i: on_step(i * steps + s))
        run = train_vae_2d(X, beta=beta, latent_dim=latent_dim, steps=steps, seed=seed, on_step=hook)
        if run["stopped"]:
            recon.append(float("nan"))
            kl_dims.append(np.full(latent_dim, np.nan))
            elbos.append(float("nan"))
            continue
        recon.append(run["recon"])
        kl_dims.append(run["kl_per_dim"])
        elbos.append(run["elbo"])
    kl_dims = np.asarray(kl_dims)
    return {"betas": np.asarray(betas), "recon": np.asarray(recon), "kl_per_dim": kl_dims,
            "kl": kl_dims.sum(axis=1), "elbo": np.asarray(elbos),
            "active": (kl_dims > 0.05).sum(axis=1)}


def train_image_vae(images, labels, steps=400, latent_dim=2, hidden=256, lr=2e-3, n_eval=256,
                    seed=0, on_step=None) -> dict:
    """An ``engine.vae.ImageVAE`` (Bernoulli pixels) trained on the shapes images (the last
    ``n_eval`` held out). Returns ``model``, ``history``, ``latents`` (posterior means μ(x) of the
    held-out images [n_eval, latent_dim]), ``labels`` (theirs), ``images`` (the held-out images),
    ``reconstructions``, ``elbo`` (held-out, per image), ``stopped``."""
    op = "train_image_vae"
    images = np.asarray(images, dtype=np.float32)
    labels = np.asarray(labels)
    n_eval = _int(op, "n_eval", n_eval, 1)
    if images.ndim != 4 or len(images) <= n_eval:
        raise ValueError(f"{op}: images must be [N, C, H, W] with N > n_eval = {n_eval}, got {images.shape}")
    manual_seed(int(seed))
    model = vae.ImageVAE(images.shape[1:], int(hidden), _int(op, "latent_dim", latent_dim, 1))
    progress = None if on_step is None else (lambda done, total: on_step(done))
    try:
        history = vae.train_vae(model, images[:-n_eval], steps=_int(op, "steps", steps, 1),
                                batch_size=64, lr=_positive(op, "lr", lr), progress=progress)
    except FloatingPointError as error:
        return {"model": model, "history": None, "stopped": str(error).replace("train_vae: ", "")}
    held = images[-n_eval:]
    with no_grad():
        mu, _ = model.encode(held)
    manual_seed(int(seed) + 1)
    return {"model": model, "history": history, "latents": mu.data.astype(np.float64),
            "labels": labels[-n_eval:], "images": held, "reconstructions": model.reconstruct(held),
            "elbo": model.loss(held).elbo, "stopped": ""}


def latent_grid(model, n=8, limit=2.5) -> dict:
    """Decode an n × n grid of latents z ∈ [−limit, limit]² (the first two latent dimensions; any
    others 0): ``images`` [n, n, H, W] (row 0 at the top = largest z₂) and the grid values ``z``."""
    op = "latent_grid"
    n = _int(op, "n", n, 1)
    values = np.linspace(-limit, limit, n)
    z2, z1 = np.meshgrid(values[::-1], values, indexing="ij")
    z = np.zeros((n * n, model.latent_dim), dtype=np.float32)
    z[:, 0] = z1.ravel()
    if model.latent_dim > 1:
        z[:, 1] = z2.ravel()
    images = model.generate(z=z)
    return {"images": images.reshape((n, n) + images.shape[-2:]), "z": values}


def decode_point(model, z1=0.0, z2=0.0) -> np.ndarray:
    """The image (or point) the decoder gives for the latent (z1, z2, 0, …)."""
    z = np.zeros((1, model.latent_dim), dtype=np.float32)
    z[0, 0] = z1
    if model.latent_dim > 1:
        z[0, 1] = z2
    out = model.generate(z=z)[0]
    return out.reshape(out.shape[-2:]) if out.ndim >= 2 else out

"""The computations behind notebooks 07 (diffusion) and 08 (VAE) that ``engine.diffusion`` and
``engine.vae`` do not already provide: seeded data sets, training runs that record a quality
number as they go, the reverse process as snapshots, the exact-vs-learned comparison on a 1-D
Gaussian mixture, and (for 08) the KL and gradient-estimator experiments, the β sweep and
latent-space decoding.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from . import data as engine_data
from . import diffusion as D
from .distances import energy_distance

__all__ = [
    "DATASETS_2D", "ESTIMATOR_FUNCTIONS", "LINEAR_MAX_SCALE", "beta_sweep", "decode_point",
    "estimator_comparison", "kl_check", "latent_grid", "linear_scale", "reparam_gradients",
    "train_image_vae", "train_vae_2d", "chain_vs_closed_form", "epsilon_curves", "exact_reverse_1d",
    "forward_snapshot", "make_schedule", "mixture_1d", "reverse_trajectory", "toy_data_2d",
    "train_ddpm_tracked", "train_denoiser_1d",
]


def _int(op, name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{op}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _positive(op, name, value):
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{op}: {name} must be a positive finite number, got {value}")
    return value


# ----------------------------------------------------------------------------- data and schedules
DATASETS_2D = ("moons", "swiss roll", "8 Gaussians")


def toy_data_2d(name="moons", n=3000, seed=0, return_labels=False):
    """A 2-D data set from ``engine.data``, standardised (mean 0, std 1 per coordinate), so that
    it lives on the same scale as the N(0, I) noise the diffusion ends in. float64 [n, 2]; with
    ``return_labels`` also the int64 labels [n] (moon, Gaussian component, or segment of the
    roll), for colouring."""
    op = "toy_data_2d"
    n = _int(op, "n", n, 2)
    if name == "moons":
        X, y = engine_data.make_moons(n, noise=0.05, seed=seed)
    elif name == "swiss roll":
        X, y = engine_data.make_swiss_roll(n, noise=0.05, seed=seed)
    elif name == "8 Gaussians":
        X, y = engine_data.make_gaussian_mixture(n, seed=seed)[:2]
    else:
        raise ValueError(f"{op}: name must be one of {DATASETS_2D}, got {name!r}")
    X = np.asarray(X, dtype=np.float64)
    X = (X - X.mean(0)) / X.std(0)
    return (X, np.asarray(y, dtype=np.int64)) if return_labels else X


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
    from . import manual_seed, random
    from .optim import Adam
    from .optim.lr_scheduler import CosineAnnealingLR

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
    from . import manual_seed

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
    from . import manual_seed

    manual_seed(int(seed))
    return D.exact_sample(mixture, schedule, int(n), variance=variance)[:, 0]


def train_denoiser_1d(mixture, schedule, steps=1500, hidden=64, lr=1e-2, n=4000, seed=0,
                      variance="posterior", on_step=None) -> dict:
    """A learned ε_θ for the 1-D mixture: :func:`train_ddpm_tracked` on ``n`` samples of it.
    Returns that dict plus ``samples`` [n] drawn with the learned model."""
    from . import manual_seed

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
    from . import Tensor, no_grad

    grid = np.linspace(-4, 4, 401) if grid is None else np.asarray(grid, dtype=np.float64)
    t = int(t)
    out = {"x": grid, "exact": D.exact_epsilon(mixture, grid[:, None], t, schedule)[:, 0],
           "density": D.noised_mixture(mixture, t, schedule).prob(grid[:, None])}
    if model is not None:
        with no_grad():
            out["learned"] = model(Tensor(grid[:, None].astype(np.float32)),
                                   np.full(len(grid), t, dtype=np.int64)).data[:, 0].astype(np.float64)
    return out


# ============================================================================= 08: VAE
def reparam_gradients(mu=1.0, sigma=1.0, n=2000, seed=0) -> dict:
    """The reparameterisation trick on E_{z~N(μ, σ²)}[z²] = μ² + σ².

    z = μ + σε with ε ~ N(0, 1) drawn once (``seed``): the average of z² is a differentiable
    function of μ and σ, and the engine's autograd gives its gradient, an unbiased estimate of
    the exact ∂/∂μ = 2μ and ∂/∂σ = 2σ. Returns ``eps``, ``z``, ``estimate`` (the average of z²),
    ``grad_mu``, ``grad_sigma`` (autograd) and the exact ``value``, ``exact_grad_mu``,
    ``exact_grad_sigma``.
    """
    from . import Tensor

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
    from . import vae

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
    from . import vae

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
    from . import manual_seed, no_grad, vae

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
    from . import manual_seed, no_grad, vae

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

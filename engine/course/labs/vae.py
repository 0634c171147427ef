"""What notebook 08 (VAE) needs beside its lesson: the 2-D and digit data, the training runs with
their held-out budget, the β sweep, the aggregate posterior, the remedies for collapse, the IWAE
table and the latent-space decoding, the score-function comparison, and the default models every
section opens on (``CHECKPOINTS``, shipped in engine/course/checkpoints/vae_*.py).

The lesson itself (the VAE's encoder and decoder, the reparameterisation, the KL, the negative
ELBO, the training loop, the IWAE bound) is code in the notebook's own cells. A helper here that
trains or measures a model takes them as a :class:`Lesson` (or the one function it needs), so the
learner's edited cells are the ones that run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from engine import Tensor, data, no_grad, random, vae
from engine.course import checkpoints

# static imports, by name: the WebAssembly bundler follows only those
from engine.course.checkpoints import vae_aggregate as _aggregate_checkpoint
from engine.course.checkpoints import vae_amortisation as _amortisation_checkpoint
from engine.course.checkpoints import vae_ddpm as _ddpm_checkpoint
from engine.course.checkpoints import vae_digits as _digits_checkpoint
from engine.course.checkpoints import vae_iwae as _iwae_checkpoint
from engine.course.checkpoints import vae_remedies as _remedies_checkpoint
from engine.course.checkpoints import vae_remedy_seeds as _remedy_seeds_checkpoint
from engine.course.checkpoints import vae_sweep as _sweep_checkpoint
from engine.course.checkpoints import vae_toy as _toy_checkpoint

from ._checks import _int, _positive
from ._generative import DATASETS_2D, cached_by_code, code_key, toy_data_2d

__all__ = [
    "VS_DDPM",
    "VaeAgainstDdpm",
    "vae_against_ddpm",
    "vae_ddpm_state",
    "off_data_share",
    "OFF_DATA",
    "default_vae_against_ddpm",
    "remembered_vae_against_ddpm",
    "DATASETS_2D",
    "ESTIMATOR_FUNCTIONS",
    "BetaSweep",
    "EstimatorComparison",
    "ImageVAERun",
    "KLCheck",
    "LatentGrid",
    "Lesson",
    "ReparamGradients",
    "VAERun",
    "beta_sweep",
    "decode_point",
    "equivalent_beta",
    "estimator_comparison",
    "kl_check",
    "latent_grid",
    "reparam_gradients",
    "toy_data_2d",
    "train_image_vae",
    "train_vae_2d",
    "IWAEBounds",
    "iwae_bounds",
    "AggregatePosterior",
    "aggregate_posterior",
    "COLLAPSE_REMEDIES",
    "train_vae_remedy",
    "Posterior",
    "encode_image",
    "CHECKPOINTS",
    "TOY_DEFAULTS",
    "SWEEP_BETAS",
    "SWEEP_STEPS",
    "REMEDY_DEFAULTS",
    "IMAGE_DEFAULTS",
    "IWAE_KS",
    "default_vae_2d",
    "default_beta_sweep",
    "default_aggregate_posterior",
    "default_remedies",
    "default_image_vae",
    "image_iwae",
    "shipped_caption",
    "train_remedies",
    "toy_points",
    "digits",
    "AGGREGATE_BETAS",
    "AGGREGATE_STEPS",
    "TOY_DEFAULTS_TEXT",
    "toy_state",
    "sweep_state",
    "aggregate_state",
    "remedies_state",
    "digits_state",
    "LESSON_CODE",
    "iwae_state",
    "REMEDY_SEEDS",
    "RemedySeeds",
    "remedies_over_seeds",
    "remedy_seeds_state",
    "default_remedy_seeds",
    "Interpolation",
    "interpolation",
    "midpoints_to_data",
    "AmortisationGap",
    "amortisation_gap",
    "elbo_and_iwae_of_q",
    "amortisation_state",
    "default_amortisation",
    "AMORTISATION_STEPS",
]


# ----------------------------------------------------------------------------- the lesson, passed in
@dataclass(frozen=True)
class Lesson:
    """The notebook's lesson cells, as the page defines them (a learner's edits included).

    ``model(input_dim, hidden, latent_dim, obs_var)``: a new VAE (a module with attributes
    ``input_dim``, ``latent_dim``, ``obs_var``); ``encode(model, x) -> (μ, log σ²)``;
    ``decode(model, z) -> x̂``; ``loss(model, x, beta, free_bits) -> (loss, recon, kl_per_dim)``,
    batch averages; ``train(model, X, steps, lr=, beta=, batch_size=, free_bits=, anneal=,
    on_step=)``; ``parts``: the other lesson cells they call (the reparameterisation, the KL),
    which the shipped models also depend on. ``code`` is all of them, in the order of
    :data:`LESSON_CODE`, which the checkpoints' fingerprints take."""

    model: Callable
    encode: Callable
    decode: Callable
    loss: Callable
    train: Callable
    parts: tuple = ()

    @property
    def code(self) -> tuple:
        return (self.model, self.encode, self.decode, *self.parts, self.loss, self.train)

    # Two lessons are equal when their cells' code is (see _generative.code_key): each session of
    # the page defines the cells anew, and the shipped models it loads stay cached for the next.
    def __eq__(self, other):
        return isinstance(other, Lesson) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    @property
    def _key(self) -> tuple:
        return tuple(code_key(f) for f in self.code)


def _encode(lesson, model, x) -> tuple[np.ndarray, np.ndarray]:
    """(μ, log σ²) of q(z | x) for rows x, float64, no gradient."""
    with no_grad():
        mu, logvar = lesson.encode(model, Tensor(np.asarray(x, dtype=np.float32)))
    return mu.numpy().astype(np.float64), logvar.numpy().astype(np.float64)


def _decode(lesson, model, z) -> np.ndarray:
    """The decoder's mean x̂(z) for latents z [N, latent_dim], no gradient."""
    with no_grad():
        return lesson.decode(model, Tensor(np.asarray(z, dtype=np.float32))).numpy()


def _prior_samples(lesson, model, n) -> np.ndarray:
    """Decoded draws z ~ N(0, I) from the engine's stream (fork it to seed them)."""
    return _decode(lesson, model, random.generator().standard_normal((n, model.latent_dim)).astype(np.float32))


def _measure(lesson, model, x, beta=1.0) -> dict:
    """The lesson's loss on rows x (one z per row, from the engine's stream) as numbers:
    reconstruction, KL per dimension, total KL, and the β = 1 ELBO."""
    with no_grad():
        _, recon, kl_per_dim = lesson.loss(model, np.asarray(x, dtype=np.float32), beta)
    recon, kl_per_dim = float(recon.item()), kl_per_dim.numpy().astype(np.float64)
    kl = float(kl_per_dim.sum())
    return {"recon": recon, "kl": kl, "kl_per_dim": kl_per_dim, "elbo": -(recon + kl)}


@dataclass(frozen=True, eq=False)
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


def reparam_gradients(reparameterize, mu=1.0, sigma=1.0, n=2000, seed=0) -> ReparamGradients:
    """The reparameterisation trick on E_{z~N(μ, σ²)}[z²] = μ² + σ².

    ``reparameterize(μ, log σ², ε)`` (the notebook's cell) turns the draws ε ~ N(0, 1) (``seed``)
    into z: the average of z² is then a differentiable function of μ and σ, and the engine's
    autograd gives its gradient, an unbiased estimate of the exact ∂/∂μ = 2μ and ∂/∂σ = 2σ.
    """
    op = "reparam_gradients"
    sigma = _positive(op, "sigma", sigma)
    mu = float(mu)
    n = _int(op, "n", n, 1)
    eps = np.random.default_rng(seed).standard_normal(n)
    mu_t = Tensor(np.array(mu), requires_grad=True)
    sigma_t = Tensor(np.array(sigma), requires_grad=True)
    z = reparameterize(mu_t, sigma_t.log() * 2, Tensor(eps))
    estimate = (z * z).mean()
    estimate.backward()
    grad = [0.0 if t.grad is None else float(t.grad) for t in (mu_t, sigma_t)]  # no path: no gradient
    return ReparamGradients(
        eps=eps,
        z=z.numpy(),
        estimate=float(estimate.item()),
        grad_mu=grad[0],
        grad_sigma=grad[1],
        value=mu**2 + sigma**2,
        exact_grad_mu=2 * mu,
        exact_grad_sigma=2 * sigma,
    )


@dataclass(frozen=True, eq=False)
class KLCheck:
    """KL(N(μ, σ²) ‖ N(0, 1)) in closed form and by Monte Carlo, and both densities on a grid."""

    closed: float
    mc: float
    mc_se: float  # the Monte Carlo estimate's standard error
    x: np.ndarray
    q: np.ndarray  # N(μ, σ²) on the grid
    p: np.ndarray  # N(0, 1) on the grid


def kl_check(kl_to_prior, mu=1.0, sigma=0.5, n_samples=1000, seed=0) -> KLCheck:
    """KL(N(μ, σ²) ‖ N(0, 1)) by ``kl_to_prior(μ, log σ²)`` (the notebook's closed form) and by
    Monte Carlo (``engine.vae.gaussian_kl_monte_carlo``: the average of log q(z) − log p(z) over
    z ~ q), with the two densities on a grid for the picture (sorted x, uneven)."""
    op = "kl_check"
    sigma = _positive(op, "sigma", sigma)
    mu = np.array([[float(mu)]])
    logvar = np.log(np.array([[sigma**2]]))
    closed = float(np.asarray(kl_to_prior(Tensor(mu), Tensor(logvar)).numpy()).sum())
    mc, se = vae.gaussian_kl_monte_carlo(mu, logvar, n_samples=_int(op, "n_samples", n_samples, 2), seed=seed)
    # an even grid for the prior, denser over μ ± 4σ where q lives: ~100 points resolve any σ
    x = np.union1d(np.linspace(-6, 6, 61), np.clip(np.linspace(-4, 4, 41) * sigma + mu[0, 0], -6, 6))
    q = np.exp(-((x - mu[0, 0]) ** 2) / (2 * sigma**2)) / (sigma * math.sqrt(2 * math.pi))
    p = np.exp(-(x**2) / 2) / math.sqrt(2 * math.pi)
    return KLCheck(closed=closed, mc=float(mc[0]), mc_se=float(se[0]), x=x, q=q, p=p)


ESTIMATOR_FUNCTIONS = ("z²", "sin z", "exp z")
_FUNCTIONS = {"z²": lambda z: z * z, "sin z": lambda z: z.sin(), "exp z": lambda z: z.exp()}


@dataclass(frozen=True, eq=False)
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


def _pathwise(reparameterize, f, mu, sigma, eps) -> np.ndarray:
    """Pathwise estimates of ∂/∂μ E[f(z)], one per row of eps [n, S]: the mean over the row of
    f(z), z = ``reparameterize(μ, log σ², ε)`` (the notebook's cell), differentiated in μ by
    autograd; 0 where the cell leaves no path from μ to z."""
    mu_rows = Tensor(np.full((eps.shape[0], 1), float(mu)), requires_grad=True)
    logvar = Tensor(np.full((eps.shape[0], 1), 2 * math.log(sigma)))
    f(reparameterize(mu_rows, logvar, Tensor(eps))).mean(dim=1).sum().backward()
    return np.zeros(eps.shape[0]) if mu_rows.grad is None else mu_rows.grad.numpy()[:, 0].copy()


def estimator_comparison(
    score_function, reparameterize, mu=1.0, sigma=1.0, f_name="z²", n_samples=1, n=2000, seed=0
) -> EstimatorComparison:
    """``n`` estimates of ∂/∂μ E_{z~N(μ, σ²)}[f(z)] of ``n_samples`` draws each, all on the same
    draws ε (``seed``), by the notebook's cells: ``score_function(f, μ, σ, ε, baseline)``
    (REINFORCE, bare and with the baseline f(μ)) and the pathwise gradient through
    ``reparameterize(μ, log σ², ε)``; with the exact gradient:

        f = z²:   2μ;      f = sin z:   cos μ · e^{−σ²/2};      f = exp z:   e^{μ + σ²/2}.
    """
    op = "estimator_comparison"
    mu, sigma = float(mu), _positive(op, "sigma", sigma)
    if f_name not in _FUNCTIONS:
        raise ValueError(f"{op}: f_name must be one of {ESTIMATOR_FUNCTIONS}, got {f_name!r}")
    exact = {"z²": 2 * mu, "sin z": math.cos(mu) * math.exp(-(sigma**2) / 2), "exp z": math.exp(mu + sigma**2 / 2)}[
        f_name
    ]
    f = _FUNCTIONS[f_name]
    eps = np.random.default_rng(seed).standard_normal((_int(op, "n", n, 2), _int(op, "n_samples", n_samples, 1)))
    with no_grad():
        at_mu = float(f(Tensor(np.array(mu))).item())  # the baseline b = f(μ)
    return EstimatorComparison(
        score_function=np.asarray(score_function(f, mu, sigma, eps), dtype=np.float64),
        baseline=np.asarray(score_function(f, mu, sigma, eps, baseline=at_mu), dtype=np.float64),
        reparameterized=_pathwise(reparameterize, f, mu, sigma, eps),
        exact=exact,
    )


@dataclass(eq=False)
class VAERun:
    """A VAE trained on 2-D points, with its held-out budget (nats, averaged per point)."""

    model: object | None  # the lesson's VAE; None for a shipped remedy run, whose table needs only the numbers
    stopped: str = ""  # why training stopped (a non-finite loss), or empty
    recon: float = math.nan  # −log p(x | z), held out
    kl: float = math.nan
    kl_per_dim: np.ndarray | None = None  # [latent_dim]
    elbo: float = math.nan  # the β = 1 bound, −(recon + kl)
    latents: np.ndarray | None = None  # posterior means μ(x) of the held-out points
    held_out: np.ndarray | None = None
    reconstructions: np.ndarray | None = None  # decoded posterior means of the held-out points
    samples: np.ndarray | None = None  # decoded z ~ N(0, I)
    beta: float = math.nan  # the KL weight it trained with
    labels: np.ndarray | None = None  # the held-out points' classes, for colouring (never trained on)


def equivalent_beta(beta, obs_var, reference_var=0.05) -> float:
    """The β that trains the same model with decoder variance ``reference_var``: the loss
    ‖x − x̂‖²/(2σ²) + β·KL times σ²/σ₀² is ‖x − x̂‖²/(2σ₀²) + β(σ²/σ₀²)·KL (plus a constant), and
    Adam's steps do not change when the loss is multiplied by a constant. So the decoder variance
    σ² is the same knob as β: β' = β·σ²/σ₀²."""
    return (
        float(beta)
        * _positive("equivalent_beta", "obs_var", obs_var)
        / _positive("equivalent_beta", "reference_var", reference_var)
    )


def _rows(op, X, n_eval, spare=1):
    """X as float32 [N, D] split into training rows and the last ``n_eval`` held out."""
    X = np.asarray(X, dtype=np.float32)
    n_eval = _int(op, "n_eval", n_eval, 2)
    if X.ndim != 2 or X.shape[0] <= n_eval + spare:
        raise ValueError(f"{op}: X must be [N, D] with N > n_eval + {spare} = {n_eval + spare}, got {X.shape}")
    return X[:-n_eval], X[-n_eval:]


def _train(
    lesson, op, input_dim, train, *, hidden, latent_dim, obs_var, steps, lr, batch_size, seed, on_step, **loss_settings
):
    """A new ``lesson.model`` trained by ``lesson.train`` on a forked stream (``seed``): the model,
    and why training stopped ("" when it did not)."""
    with random.fork_rng(int(seed)):
        model = lesson.model(
            input_dim, int(hidden), _int(op, "latent_dim", latent_dim, 1), _positive(op, "obs_var", obs_var)
        )
        try:
            lesson.train(
                model,
                train,
                _int(op, "steps", steps, 1),
                lr=_positive(op, "lr", lr),
                batch_size=batch_size,
                on_step=on_step,
                **loss_settings,
            )
        except FloatingPointError as error:
            return model, str(error)
    return model, ""


def _after(on_step, done):
    """A sweep's ``on_step(done)`` for one of its runs, which starts after ``done`` of the sweep's
    steps (None stays None)."""
    return None if on_step is None else (lambda s: on_step(done + s))


def train_vae_2d(
    lesson,
    X,
    beta=1.0,
    latent_dim=2,
    steps=800,
    lr=3e-3,
    hidden=64,
    obs_var=0.05,
    n_eval=500,
    seed=0,
    on_step=None,
    labels=None,
) -> VAERun:
    """The lesson's VAE with a Gaussian decoder p(x | z) = N(x̂(z), obs_var·I) trained by the
    lesson's loop on 2-D points (the last ``n_eval`` rows held out), with the held-out budget
    measured at the end. ``labels`` (one per row, optional) are kept for the held-out rows, to
    colour them. Seeded on a forked stream (the global one is left as it was)."""
    settings = dict(hidden=hidden, latent_dim=latent_dim, obs_var=obs_var, steps=steps, lr=lr, on_step=on_step)
    run = _train_2d(lesson, "train_vae_2d", X, n_eval, seed, settings, measured_beta=beta, beta=float(beta))
    if labels is not None and not run.stopped:
        run.labels = np.asarray(labels)[-len(run.held_out) :]
    return run


def _train_2d(lesson, op, X, n_eval, seed, settings, *, measured_beta, spare=1, **loss_settings) -> VAERun:
    """The lesson's VAE trained on X's rows but the last ``n_eval`` (``settings``: :func:`_train`'s,
    ``loss_settings``: the lesson loop's loss terms) and measured on those at ``measured_beta``; a
    run with only ``model`` and ``stopped`` when training stopped."""
    train, held = _rows(op, X, n_eval, spare)
    model, stopped = _train(lesson, op, train.shape[1], train, batch_size=128, seed=seed, **settings, **loss_settings)
    if stopped:
        return VAERun(model=model, stopped=stopped)
    return _held_out_run(lesson, model, held, measured_beta, seed)


def _held_out_run(lesson, model, held, beta, seed) -> VAERun:
    """A trained 2-D VAE measured on the held-out rows: the β-weighted budget (one z per row,
    seed + 1), the codes μ(x), the reconstructions and as many decoded prior draws (seed + 2)."""
    with random.fork_rng(int(seed) + 1):
        final = _measure(lesson, model, held, beta)
    latents = _encode(lesson, model, held)[0]
    with random.fork_rng(int(seed) + 2):
        samples = _prior_samples(lesson, model, len(held))
    return VAERun(
        model=model,
        latents=latents,
        held_out=held,
        reconstructions=_decode(lesson, model, latents),
        samples=samples,
        beta=float(beta),
        **final,
    )


@dataclass(frozen=True, eq=False)
class BetaSweep:
    """One VAE per β: the held-out budget and the active latent dimensions (KL > 0.05 nats)."""

    betas: np.ndarray
    recon: np.ndarray
    kl_per_dim: np.ndarray  # [len(betas), latent_dim]
    kl: np.ndarray
    elbo: np.ndarray
    active: np.ndarray

    @property
    def kl_ranked(self) -> np.ndarray:
        """[len(betas), latent_dim]: each model's KL per dimension, largest first. Models trained
        at different β number their dimensions independently, so dimension j of one is not
        dimension j of another: compared across β, the dimensions are ranked by their KL."""
        return -np.sort(-self.kl_per_dim, axis=1)


def beta_sweep(
    lesson, X, betas=(0.1, 0.3, 1.0, 3.0, 10.0, 30.0), latent_dim=3, steps=600, obs_var=0.05, seed=0, on_step=None
) -> BetaSweep:
    """:func:`train_vae_2d` once per β (same seed, same data). As β grows the KL is squeezed out
    dimension by dimension (posterior collapse) and the reconstruction worsens. ``on_step(done)``
    counts steps over the whole sweep."""
    betas = [float(b) for b in betas]
    recon, kl_dims, elbos = [], [], []
    for i, beta in enumerate(betas):
        hook = _after(on_step, i * steps)
        run = train_vae_2d(
            lesson, X, beta=beta, latent_dim=latent_dim, steps=steps, obs_var=obs_var, seed=seed, on_step=hook
        )
        failed = bool(run.stopped)
        recon.append(math.nan if failed else run.recon)
        kl_dims.append(np.full(latent_dim, np.nan) if failed else run.kl_per_dim)
        elbos.append(math.nan if failed else run.elbo)
    return _sweep(betas, recon, kl_dims, elbos)


def _sweep(betas, recon, kl_per_dim, elbo) -> BetaSweep:
    """The sweep's table from its measured columns (the totals and the active counts follow)."""
    kl_per_dim = np.asarray(kl_per_dim, dtype=np.float64)
    return BetaSweep(
        betas=np.asarray(betas, dtype=np.float64),
        recon=np.asarray(recon, dtype=np.float64),
        kl_per_dim=kl_per_dim,
        kl=kl_per_dim.sum(axis=1),
        elbo=np.asarray(elbo, dtype=np.float64),
        active=(kl_per_dim > 0.05).sum(axis=1),
    )


@dataclass(eq=False)
class ImageVAERun:
    """A VAE trained on flattened grey images with a Gaussian decoder."""

    model: object
    image_shape: tuple
    stopped: str = ""
    latents: np.ndarray | None = None  # posterior means μ(x) of the held-out images
    labels: np.ndarray | None = None  # their labels (never shown to the model)
    images: np.ndarray | None = None  # the held-out images [n, H, W]
    reconstructions: np.ndarray | None = None  # [n, H, W]
    elbo: float = math.nan  # held-out ELBO per image, nats (a bound on log p(x), a density)
    iwae_tables: dict = field(default_factory=dict)  # per IWAE bound's code_key: the rows computed so far


def train_image_vae(
    lesson,
    train_images,
    test_images,
    test_labels,
    steps=400,
    latent_dim=2,
    hidden=128,
    lr=2e-3,
    obs_var=0.05,
    seed=0,
    on_step=None,
) -> ImageVAERun:
    """The lesson's VAE on flattened images [N, H, W] with a Gaussian decoder
    p(x | z) = N(x̂(z), obs_var·I): grey pixels are intensities, not coin flips, and the Gaussian
    is a normalised density on them, so the held-out ELBO is a bound on log p(x). Trained on
    ``train_images`` by the lesson's loop, measured on ``test_images``. Seeded on a forked stream."""
    op = "train_image_vae"
    train = np.asarray(train_images, dtype=np.float32)
    test = np.asarray(test_images, dtype=np.float32)
    if train.ndim != 3 or test.ndim != 3 or train.shape[1:] != test.shape[1:] or len(test) == 0:
        raise ValueError(f"{op}: images must be [N, H, W] of one size, got {train.shape} and {test.shape}")
    shape = train.shape[1:]
    flat = int(np.prod(shape))
    model, stopped = _train(
        lesson,
        op,
        flat,
        train.reshape(len(train), flat),
        hidden=hidden,
        latent_dim=latent_dim,
        obs_var=obs_var,
        steps=steps,
        lr=lr,
        batch_size=64,
        seed=seed,
        on_step=on_step,
    )
    if stopped:
        return ImageVAERun(model=model, image_shape=shape, stopped=stopped)
    return _held_out_images(lesson, model, test, test_labels, seed)


def _held_out_images(lesson, model, test, test_labels, seed) -> ImageVAERun:
    """A trained image VAE measured on the held-out images [N, H, W]: codes, reconstructions and
    the ELBO (one z per image, seed + 1)."""
    test = np.asarray(test, dtype=np.float32)
    held = test.reshape(len(test), -1)
    mu, _ = _encode(lesson, model, held)
    with random.fork_rng(int(seed) + 1):
        elbo = _measure(lesson, model, held)["elbo"]
    return ImageVAERun(
        model=model,
        image_shape=test.shape[1:],
        latents=mu,
        labels=np.asarray(test_labels),
        images=test,
        reconstructions=_decode(lesson, model, mu).reshape(test.shape),
        elbo=elbo,
    )


@dataclass(frozen=True, eq=False)
class LatentGrid:
    images: np.ndarray  # [n, n, H, W]: row 0 at the top = largest z₂
    z: np.ndarray  # the grid values along each axis


def latent_grid(lesson, model, image_shape, n=8, limit=2.5) -> LatentGrid:
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
    return LatentGrid(images=_decode(lesson, model, z).reshape((n, n) + tuple(image_shape)), z=values)


def decode_point(lesson, model, z1=0.0, z2=0.0) -> np.ndarray:
    """What the decoder gives for the latent (z1, z2, 0, …): the mean of p(x | z), flat."""
    z = np.zeros((1, model.latent_dim), dtype=np.float32)
    z[0, 0] = z1
    if model.latent_dim > 1:
        z[0, 1] = z2
    return _decode(lesson, model, z)[0]


@dataclass(frozen=True, eq=False)
class Interpolation:
    """Two held-out images joined through the latent space and through pixel space."""

    codes: np.ndarray  # [steps, latent_dim]: the codes between μ(x_a) and μ(x_b)
    latent_path: np.ndarray  # [steps, H, W]: what the decoder makes of them
    pixel_path: np.ndarray  # [steps, H, W]: the images between x_a and x_b
    latent_distance: float  # the latent path's midpoint (t = ½): RMS per pixel to the nearest other held-out image
    pixel_distance: float  # the same for the pixel path's midpoint


def _nearest_distance(images, x, exclude) -> np.ndarray:
    """For each row of x [M, P], the RMS distance per pixel to the nearest row of ``images`` [N, P]
    other than the two of ``exclude`` [M, 2] (the row's own end points)."""
    d = np.sqrt(((x[:, None, :] - images[None, :, :]) ** 2).mean(-1))
    d[np.arange(len(x))[:, None], np.asarray(exclude)] = np.inf
    return d.min(1)


def _midpoints(lesson, interpolate, run, pairs):
    """(latent, pixel) midpoints, t = ½, of the held-out image pairs [M, 2] of ``run``."""
    flat = run.images.reshape(len(run.images), -1).astype(np.float64)
    codes = np.stack([np.asarray(interpolate(run.latents[a], run.latents[b], 3))[1] for a, b in pairs])
    pixels = np.stack([np.asarray(interpolate(flat[a], flat[b], 3))[1] for a, b in pairs])
    return _decode(lesson, run.model, codes).astype(np.float64), pixels, flat


def interpolation(lesson, interpolate, run, a, b, steps=7) -> Interpolation:
    """Held-out images ``a`` and ``b`` of an :class:`ImageVAERun` joined by ``interpolate(u, v, steps)``
    (the notebook's straight line, ends included) two ways: the decoded codes between μ(x_a) and
    μ(x_b), and the images between x_a and x_b. Each path's midpoint is scored by how far it is
    from the nearest held-out image other than a and b."""
    op = "interpolation"
    n = len(run.images)
    a, b, steps = _int(op, "a", a, 0), _int(op, "b", b, 0), _int(op, "steps", steps, 2)
    if a >= n or b >= n:
        raise ValueError(f"{op}: a and b index the {n} held-out images, got {a} and {b}")
    flat = run.images.reshape(n, -1)
    codes = np.asarray(interpolate(run.latents[a], run.latents[b], steps), dtype=np.float64)
    pixels = np.asarray(interpolate(flat[a].astype(np.float64), flat[b].astype(np.float64), steps))
    if codes.shape != (steps, run.latents.shape[1]) or pixels.shape != (steps, flat.shape[1]):
        raise ValueError(
            f"{op}: interpolate(u, v, {steps}) must give [{steps}, len(u)] rows, got {codes.shape} and {pixels.shape}"
        )
    latent_mid, pixel_mid, flat = _midpoints(lesson, interpolate, run, [(a, b)])
    distances = _nearest_distance(flat, np.concatenate([latent_mid, pixel_mid]), [(a, b), (a, b)])
    return Interpolation(
        codes=codes,
        latent_path=_decode(lesson, run.model, codes).reshape((steps,) + run.image_shape),
        pixel_path=pixels.reshape((steps,) + run.image_shape),
        latent_distance=float(distances[0]),
        pixel_distance=float(distances[1]),
    )


def midpoints_to_data(lesson, interpolate, run, indices) -> np.ndarray:
    """[M, 2]: for every pair (a, b) of the held-out ``indices``, a before b in their order (the
    midpoint of b to a is the same), the distances :func:`interpolation` reports for its latent
    and its pixel midpoint."""
    indices = list(indices)
    pairs = [(a, b) for i, a in enumerate(indices) for b in indices[i + 1 :]]
    latent_mid, pixel_mid, flat = _midpoints(lesson, interpolate, run, pairs)
    return np.stack([_nearest_distance(flat, latent_mid, pairs), _nearest_distance(flat, pixel_mid, pairs)], axis=1)


# ----------------------------------------------------------------------------- the gap to log p(x)
@dataclass(frozen=True, eq=False)
class IWAEBounds:
    """The importance-weighted bounds IWAE_K on log p(x), averaged over images (nats)."""

    K: np.ndarray  # the numbers of importance samples
    bound: np.ndarray  # IWAE_K for each K
    standard_error: np.ndarray  # of each average over the images
    elbo: float  # IWAE_1, the ELBO, on its own draws
    # of each row's average per-image difference from the K = 1 row (its stream): paired on the same
    # images, so the spread of log p(x) between images cancels and the rise with K is far surer
    gap_standard_error: np.ndarray

    @property
    def gap(self) -> np.ndarray:
        """IWAE_K − ELBO: how much of KL(q(z|x) ‖ p(z|x)) the K samples recover."""
        return self.bound - self.elbo


def iwae_bounds(bound, model, X, Ks=(1, 10, 100), seed=0) -> IWAEBounds:
    """The average over the rows of X of ``bound(model, x, K, rng)`` (the notebook's IWAE_K per
    row), for each K, with its standard error. Each K draws from its own stream ``(seed, K)``, so
    a row of the table does not depend on which other rows are asked for; ``elbo`` is IWAE_1 on a
    draw of its own (stream ``(seed, 0)``). ``gap_standard_error`` pairs each row with the K = 1
    row's draw (stream ``(seed, 1)``, computed for that even when K = 1 is not asked for)."""
    Ks = [_int("iwae_bounds", "K", k, 1) for k in Ks]
    X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)

    def per_image(stream, K):
        return np.asarray(bound(model, X, K, np.random.default_rng((int(seed), stream))), dtype=np.float64)

    def standard_error(values):
        return values.std(ddof=1) / math.sqrt(len(X)) if len(X) > 1 else math.nan

    first = per_image(1, 1)
    rows = [first if K == 1 else per_image(K, K) for K in Ks]
    return IWAEBounds(
        K=np.asarray(Ks),
        bound=np.asarray([r.mean() for r in rows]),
        standard_error=np.asarray([standard_error(r) for r in rows]),
        elbo=float(per_image(0, 1).mean()),
        gap_standard_error=np.asarray([standard_error(r - first) for r in rows]),
    )


def _iwae_rows(table: IWAEBounds, Ks) -> IWAEBounds:
    """The rows ``Ks`` of a table :func:`iwae_bounds` made (each row has its own stream, so the
    rows are what a new call with these ``Ks`` would compute)."""
    where = [int(np.flatnonzero(table.K == k)[0]) for k in Ks]
    return IWAEBounds(
        K=table.K[where],
        bound=table.bound[where],
        standard_error=table.standard_error[where],
        elbo=table.elbo,
        gap_standard_error=table.gap_standard_error[where],
    )


def image_iwae(bound, run, Ks=(1, 10, 100)) -> IWAEBounds:
    """:func:`iwae_bounds` (seed 0) of an :class:`ImageVAERun` on its held-out images. The rows
    already computed for the run with this ``bound`` are read, the others computed once and kept
    on the run: each K has its own stream, so reading equals recomputing."""
    Ks = [_int("image_iwae", "K", k, 1) for k in Ks]
    table = run.iwae_tables.get(code_key(bound))
    missing = [k for k in dict.fromkeys(Ks) if table is None or k not in table.K]
    if missing:
        new = iwae_bounds(bound, run.model, run.images, Ks=missing, seed=0)
        if table is not None:  # the ELBO row has its own stream too: the same in both
            new = IWAEBounds(
                K=np.concatenate([table.K, new.K]),
                bound=np.concatenate([table.bound, new.bound]),
                standard_error=np.concatenate([table.standard_error, new.standard_error]),
                elbo=table.elbo,
                gap_standard_error=np.concatenate([table.gap_standard_error, new.gap_standard_error]),
            )
        table = run.iwae_tables[code_key(bound)] = new
    return _iwae_rows(table, Ks)


def elbo_and_iwae_of_q(lesson, model, x, mu, logvar, K, rng) -> tuple[np.ndarray, np.ndarray]:
    """For each row of x [N, D] and its q = N(mu, diag exp(logvar)) [N, latent_dim], the ELBO and
    IWAE_K estimated on the same K draws z_k ~ q (from ``rng``), in float64: the average of the
    log-weights log p(x | z_k) + log p(z_k) − log q(z_k | x), and the log of the average weight
    (the notebook's ``iwae_bound``, with any q in place of the encoder's)."""
    x, mu, logvar = (np.asarray(v, dtype=np.float64) for v in (x, mu, logvar))
    std = np.exp(0.5 * logvar)
    z = mu + std * rng.standard_normal((int(K),) + mu.shape)
    x_hat = _decode(lesson, model, z.reshape(-1, mu.shape[1])).astype(np.float64).reshape(int(K), len(x), -1)

    def log_normal(v, mean, var):
        return -0.5 * (((v - mean) ** 2) / var + np.log(2 * np.pi * var)).sum(-1)

    log_w = log_normal(x, x_hat, model.obs_var) + log_normal(z, 0.0, 1.0) - log_normal(z, mu, std**2)
    top = log_w.max(0)
    return log_w.mean(0), top + np.log(np.exp(log_w - top).mean(0))


@dataclass(frozen=True, eq=False)
class AmortisationGap:
    """Per held-out image: the ELBO with the encoder's q(z | x), with a q optimised for that image
    alone (the decoder fixed), and IWAE_K with the optimised q as its proposal (nats)."""

    steps: int  # the optimiser's steps
    encoder_elbo: np.ndarray  # [N]
    fitted_elbo: np.ndarray  # [N]
    fitted_iwae: np.ndarray  # [N]: the tightest bound on log p(x) the page computes

    @property
    def amortisation(self) -> float:
        """The amortisation gap: the average ELBO the encoder loses to a q fitted per image."""
        return float(self.fitted_elbo.mean() - self.encoder_elbo.mean())

    @property
    def total(self) -> float:
        """The best bound minus the encoder's ELBO: a lower estimate of log p(x) − ELBO."""
        return float(self.fitted_iwae.mean() - self.encoder_elbo.mean())


def amortisation_gap(lesson, fit, run, steps=200, K=300, seed=0, on_step=None) -> AmortisationGap:
    """The amortisation gap of an :class:`ImageVAERun` on its held-out images (Cremer, Li &
    Duvenaud 2018): ``fit(model, x, steps, on_step=)`` (the notebook's optimiser of each image's
    μ and log σ², starting from the encoder's) runs on a forked stream (``seed``); both q are then
    scored on K draws each (seed + 1)."""
    op = "amortisation_gap"
    steps, K = _int(op, "steps", steps, 1), _int(op, "K", K, 1)
    x = run.images.reshape(len(run.images), -1).astype(np.float32)
    with random.fork_rng(int(seed)):
        mu, logvar = (np.asarray(v, dtype=np.float64) for v in fit(run.model, x, steps, on_step=on_step))
    if mu.shape != run.latents.shape or logvar.shape != run.latents.shape:
        raise ValueError(
            f"{op}: fit must return μ and log σ² of shape {run.latents.shape}, got {mu.shape} and {logvar.shape}"
        )
    rng = np.random.default_rng(int(seed) + 1)
    encoder_elbo, _ = elbo_and_iwae_of_q(lesson, run.model, x, *_encode(lesson, run.model, x), K, rng)
    fitted_elbo, fitted_iwae = elbo_and_iwae_of_q(lesson, run.model, x, mu, logvar, K, rng)
    return AmortisationGap(steps=steps, encoder_elbo=encoder_elbo, fitted_elbo=fitted_elbo, fitted_iwae=fitted_iwae)


# ----------------------------------------------------------------------------- the aggregate posterior
@dataclass(frozen=True, eq=False)
class AggregatePosterior:
    """For each β: draws of the aggregate posterior q(z) = mean over x of q(z | x), and how far it
    and the decoded prior samples are from where they should be (energy distances)."""

    betas: np.ndarray
    codes: list  # per β: z ~ q(z | x), one per held-out x [n, 2]
    to_prior: np.ndarray  # energy distance of those codes to draws of N(0, I)
    samples_to_data: np.ndarray  # energy distance of decoded z ~ N(0, I) to the held-out data


def aggregate_posterior(
    lesson, X, betas=(0.0, 0.1, 1.0, 10.0), steps=600, obs_var=0.05, n_eval=500, seed=0, on_step=None
) -> AggregatePosterior:
    """Train the lesson's VAE with a 2-D code per β (β = 0: a plain autoencoder with noisy codes)
    and draw one z ~ q(z | x) per held-out x: the aggregate posterior q(z), which the prior
    N(0, I) should match for decoded prior samples to look like data."""
    from engine.distances import energy_distance

    codes, to_prior, to_data = [], [], []
    rng = np.random.default_rng(seed + 3)
    for i, beta in enumerate(betas):
        hook = _after(on_step, i * steps)
        run = train_vae_2d(
            lesson, X, beta=beta, latent_dim=2, steps=steps, obs_var=obs_var, n_eval=n_eval, seed=seed, on_step=hook
        )
        if run.stopped:
            raise ValueError(f"aggregate_posterior: training at β = {beta:g} failed: {run.stopped}")
        logvar = _encode(lesson, run.model, run.held_out)[1]
        z = run.latents + np.exp(0.5 * logvar) * rng.standard_normal(run.latents.shape)
        codes.append(z)
        to_prior.append(energy_distance(z, rng.standard_normal(z.shape)))
        to_data.append(energy_distance(run.samples.astype(np.float64), run.held_out.astype(np.float64)))
    return AggregatePosterior(
        betas=np.asarray(betas, dtype=np.float64),
        codes=codes,
        to_prior=np.asarray(to_prior),
        samples_to_data=np.asarray(to_data),
    )


# ----------------------------------------------------------------------------- remedies for collapse
COLLAPSE_REMEDIES = ("none", "KL annealing", "free bits")


def train_vae_remedy(
    lesson,
    X,
    beta=10.0,
    remedy="free bits",
    free_bits=0.5,
    latent_dim=3,
    steps=800,
    lr=3e-3,
    hidden=64,
    obs_var=0.05,
    n_eval=500,
    seed=0,
    on_step=None,
) -> VAERun:
    """:func:`train_vae_2d` with a remedy for posterior collapse, which the lesson's loop applies:

    - "KL annealing" (Bowman et al. 2016): ``anneal=True``, the KL weight rises linearly from 0
      to β over the first half of training, so the code is cheap while the decoder learns to use it;
    - "free bits" (Kingma et al. 2016): ``free_bits=λ``, each dimension's batch-averaged KL counts
      as max(KL_j, λ), so no gradient pushes a dimension below λ nats;
    - "none": the plain β-weighted loss.

    The held-out numbers are measured without the remedy (the true KL and the β = 1 ELBO)."""
    op = "train_vae_remedy"
    if remedy not in COLLAPSE_REMEDIES:
        raise ValueError(f"{op}: remedy must be one of {COLLAPSE_REMEDIES}, got {remedy!r}")
    settings = dict(hidden=hidden, latent_dim=latent_dim, obs_var=obs_var, steps=steps, lr=lr, on_step=on_step)
    remedy_terms = dict(free_bits=float(free_bits) if remedy == "free bits" else 0.0, anneal=remedy == "KL annealing")
    run = _train_2d(
        lesson, op, X, n_eval, seed, settings, measured_beta=1.0, spare=128, beta=float(beta), **remedy_terms
    )
    if not run.stopped:
        run.beta = float(beta)
    return run


def train_remedies(
    lesson, X, beta=10.0, free_bits=0.5, latent_dim=3, steps=800, obs_var=0.05, seed=0, on_step=None
) -> dict:
    """:func:`train_vae_remedy` once per remedy of :data:`COLLAPSE_REMEDIES` (same seed, same
    data): ``{remedy: VAERun}``. ``on_step(done)`` counts steps over the three trainings."""
    runs = {}
    for i, remedy in enumerate(COLLAPSE_REMEDIES):
        hook = _after(on_step, i * steps)
        runs[remedy] = train_vae_remedy(
            lesson,
            X,
            beta=beta,
            remedy=remedy,
            free_bits=free_bits,
            latent_dim=latent_dim,
            steps=steps,
            obs_var=obs_var,
            seed=seed,
            on_step=hook,
        )
    return runs


@dataclass(frozen=True, eq=False)
class RemedySeeds:
    """:func:`train_remedies` repeated over seeds: per remedy, one row per seed."""

    seeds: np.ndarray
    kl_per_dim: dict  # remedy -> [n_seeds, latent_dim], the held-out KL per dimension (nats)
    elbo: dict  # remedy -> [n_seeds], the held-out β = 1 ELBO

    @property
    def active(self) -> dict:
        """remedy -> [n_seeds]: the latent dimensions in use (KL > 0.05 nats) in each run."""
        return {name: (kl > 0.05).sum(axis=1) for name, kl in self.kl_per_dim.items()}


def _remedy_seeds(seeds, runs: list) -> RemedySeeds:
    """The table of ``runs`` (one ``{remedy: run or numbers}`` per seed)."""

    def column(name, what):
        return np.asarray(
            [r[name][what] if isinstance(r[name], dict) else getattr(r[name], what) for r in runs], dtype=np.float64
        )

    return RemedySeeds(
        seeds=np.asarray(seeds),
        kl_per_dim={n: column(n, "kl_per_dim") for n in COLLAPSE_REMEDIES},
        elbo={n: column(n, "elbo") for n in COLLAPSE_REMEDIES},
    )


def remedies_over_seeds(
    lesson, X, seeds=(0, 1, 2, 3, 4), beta=10.0, free_bits=0.5, latent_dim=3, steps=800, obs_var=0.05, on_step=None
) -> RemedySeeds:
    """:func:`train_remedies` once per seed (same data): whether what one run shows holds
    for others. ``on_step(done)`` counts steps over all the trainings."""
    runs, per_seed = [], len(COLLAPSE_REMEDIES) * steps
    for i, seed in enumerate(seeds):
        hook = _after(on_step, i * per_seed)
        runs.append(
            train_remedies(
                lesson,
                X,
                beta=beta,
                free_bits=free_bits,
                latent_dim=latent_dim,
                steps=steps,
                obs_var=obs_var,
                seed=seed,
                on_step=hook,
            )
        )
    return _remedy_seeds(seeds, runs)


# ----------------------------------------------------------------------------- one image's code
@dataclass(frozen=True, eq=False)
class Posterior:
    """q(z | x) = N(mean, diag(std²)) of one image, and what the decoder makes of its mean."""

    mean: np.ndarray  # [latent_dim]
    std: np.ndarray  # [latent_dim]
    reconstruction: np.ndarray  # the decoded mean, the image's shape
    ellipse: np.ndarray  # [n, 2]: the 2σ ellipse of the first two latent dimensions


def encode_image(lesson, model, image, n=64) -> Posterior:
    """Encode one image (any shape with the model's number of pixels) with a trained VAE."""
    image = np.asarray(image, dtype=np.float32)
    if image.size != model.input_dim:
        raise ValueError(f"encode_image: the image has {image.size} pixels, the model takes {model.input_dim}")
    mu, logvar = (v[0] for v in _encode(lesson, model, image.reshape(1, -1)))
    std = np.exp(0.5 * logvar)
    angle = np.linspace(0, 2 * np.pi, _int("encode_image", "n", n, 3))
    second = (mu[1], std[1]) if len(mu) > 1 else (0.0, 0.0)
    ellipse = np.stack([mu[0] + 2 * std[0] * np.cos(angle), second[0] + 2 * second[1] * np.sin(angle)], axis=1)
    reconstruction = _decode(lesson, model, mu[None])[0].reshape(image.shape)
    return Posterior(mean=mu, std=std, reconstruction=reconstruction, ellipse=ellipse)


# ----------------------------------------------------------------------------- shipped defaults
# Each section of the notebook opens on its default model, trained from a fixed seed by the
# notebook's own cells (its ``shipped_*`` functions pass its lesson to the ``*_state`` functions
# below) and shipped in engine/course/checkpoints/vae_*.py; the notebook's controls take their
# defaults from these settings, and its buttons retrain.
TOY_DEFAULTS = {"data": "moons", "n": 2500, "beta": 1.0, "obs_var": 0.05, "latent_dim": 3, "steps": 800}
SWEEP_BETAS = (0.1, 1.0, 3.0, 10.0, 30.0, 100.0)
SWEEP_STEPS = 500
AGGREGATE_BETAS = (0.0, 0.1, 1.0, 10.0)
AGGREGATE_STEPS = 600
REMEDY_DEFAULTS = {"beta": 10.0, "free_bits": 0.5, "latent_dim": 3, "steps": 800}
REMEDY_SEEDS = (0, 1, 2, 3, 4)  # seed 0 is the run the table shows (vae_remedies), 1-4 vae_remedy_seeds
IMAGE_DEFAULTS = {"steps": 400, "obs_var": 0.05}
IWAE_KS = (1, 3, 10, 30, 100, 300)  # the K the notebook offers
AMORTISATION_STEPS = 200  # the optimiser's steps per image's q in the shipped amortisation gap
TOY_DEFAULTS_TEXT = (
    f"{TOY_DEFAULTS['data']}, σ²ₓ = {TOY_DEFAULTS['obs_var']:g}, {TOY_DEFAULTS['latent_dim']} latent dimensions"
)
LESSON_CODE = ("vae_model", "encode", "decode", "reparameterize", "kl_to_prior", "negative_elbo", "train_vae")


def toy_points(name=TOY_DEFAULTS["data"]):
    """The section's 2-D data set ``name`` ([n, 2]) and its class labels [n]."""
    return toy_data_2d(name, n=TOY_DEFAULTS["n"], seed=0, return_labels=True)


@functools.lru_cache(maxsize=1)
def digits():
    """The UCI digits: the training images, and the held-out images with their labels."""
    train, _ = data.load_digits("train")
    test, labels = data.load_digits("test")
    return train, test, labels


def _model_state(model) -> dict:
    """What rebuilds a Gaussian-decoder VAE: its sizes, decoder variance and parameters."""
    return {
        "input_dim": model.input_dim,
        "hidden": int(model.to_mu.weight.shape[1]),
        "latent_dim": model.latent_dim,
        "obs_var": model.obs_var,
        "parameters": {name: p.data for name, p in model.state_dict().items()},
    }


def _model_from_state(lesson, state):
    """The lesson's VAE with the shipped parameters; ValueError (one sentence) when they do not fit it."""
    try:
        with random.fork_rng(0):  # the initial draw is overwritten; keep the global stream untouched
            model = lesson.model(state["input_dim"], state["hidden"], state["latent_dim"], state["obs_var"])
        if not hasattr(model, "load_state_dict"):
            raise TypeError(f"it made a {type(model).__name__}, not a module")
        model.load_state_dict(state["parameters"])
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise ValueError(
            f"the shipped parameters do not fit this page's `{getattr(lesson.model, '__name__', '?')}` "
            f"({error}), so they are not loaded: train with the button to see what your code does"
        ) from None
    return model


def _shipped(module, lesson):
    """The state of checkpoint ``module`` when ``lesson`` is the code it was trained with;
    otherwise ValueError with the one sentence the page shows."""
    state, reason = checkpoints.load_if_fits(module, *lesson.code)
    if state is None:
        raise ValueError(reason)
    return state


def toy_state(lesson) -> dict:
    """Section 5's default VAE (:data:`TOY_DEFAULTS`, seed 0) trained by ``lesson``: its state."""
    d = TOY_DEFAULTS
    run = train_vae_2d(
        lesson,
        toy_points()[0],
        beta=d["beta"],
        latent_dim=d["latent_dim"],
        steps=d["steps"],
        obs_var=d["obs_var"],
        seed=0,
    )
    return _model_state(run.model)


def sweep_state(lesson) -> dict:
    """The default β sweep (:data:`SWEEP_BETAS`) trained by ``lesson``: its table."""
    d = TOY_DEFAULTS
    sweep = beta_sweep(
        lesson,
        toy_points()[0],
        SWEEP_BETAS,
        latent_dim=d["latent_dim"],
        steps=SWEEP_STEPS,
        obs_var=d["obs_var"],
        seed=0,
    )
    return {"betas": sweep.betas, "recon": sweep.recon, "kl_per_dim": sweep.kl_per_dim, "elbo": sweep.elbo}


def aggregate_state(lesson) -> dict:
    """The default aggregate posteriors (:data:`AGGREGATE_BETAS`) trained by ``lesson``."""
    found = aggregate_posterior(
        lesson, toy_points()[0], betas=AGGREGATE_BETAS, steps=AGGREGATE_STEPS, obs_var=TOY_DEFAULTS["obs_var"], seed=0
    )
    return {
        "betas": found.betas,
        "codes": np.stack(found.codes),
        "to_prior": found.to_prior,
        "samples_to_data": found.samples_to_data,
    }


def remedies_state(lesson) -> dict:
    """The default remedy runs (:data:`REMEDY_DEFAULTS`) trained by ``lesson``: their numbers."""
    runs = train_remedies(lesson, toy_points()[0], obs_var=TOY_DEFAULTS["obs_var"], seed=0, **REMEDY_DEFAULTS)
    return {
        name: {"recon": r.recon, "kl": r.kl, "kl_per_dim": r.kl_per_dim, "elbo": r.elbo} for name, r in runs.items()
    }


def remedy_seeds_state(lesson) -> dict:
    """The remedy runs at :data:`REMEDY_DEFAULTS` for the seeds of :data:`REMEDY_SEEDS` after the
    first (the first is :func:`remedies_state`'s): per remedy, their held-out numbers by seed."""
    found = remedies_over_seeds(
        lesson, toy_points()[0], seeds=REMEDY_SEEDS[1:], obs_var=TOY_DEFAULTS["obs_var"], **REMEDY_DEFAULTS
    )
    return {name: {"kl_per_dim": found.kl_per_dim[name], "elbo": found.elbo[name]} for name in COLLAPSE_REMEDIES}


def digits_state(lesson) -> dict:
    """The default digit VAE (:data:`IMAGE_DEFAULTS`) trained by ``lesson``: its state."""
    train, test, labels = digits()
    return _model_state(train_image_vae(lesson, train, test, labels, seed=0, **IMAGE_DEFAULTS).model)


def iwae_state(lesson, bound) -> dict:
    """The IWAE table of the default digit VAE (trained by ``lesson``) at every K of
    :data:`IWAE_KS`, by the notebook's ``bound``: what section 7 opens on."""
    train, test, labels = digits()
    run = train_image_vae(lesson, train, test, labels, seed=0, **IMAGE_DEFAULTS)
    table = iwae_bounds(bound, run.model, run.images, Ks=IWAE_KS, seed=0)
    return {
        "K": table.K,
        "bound": table.bound,
        "standard_error": table.standard_error,
        "elbo": table.elbo,
        "gap_standard_error": table.gap_standard_error,
    }


def amortisation_state(lesson, fit) -> dict:
    """The amortisation gap of the shipped digit VAE with :data:`AMORTISATION_STEPS` steps of the
    notebook's ``fit``: what section 7 opens on."""
    found = amortisation_gap(lesson, fit, default_image_vae(lesson), steps=AMORTISATION_STEPS)
    return {
        "steps": found.steps,
        "encoder_elbo": found.encoder_elbo,
        "fitted_elbo": found.fitted_elbo,
        "fitted_iwae": found.fitted_iwae,
    }


CHECKPOINTS = {
    name: checkpoints.FromNotebook(notebook="08_vae", function=f"shipped_{name[4:]}", code=LESSON_CODE)
    for name in ("vae_toy", "vae_sweep", "vae_aggregate", "vae_remedies", "vae_remedy_seeds", "vae_digits")
}
CHECKPOINTS["vae_iwae"] = checkpoints.FromNotebook(
    notebook="08_vae", function="shipped_iwae", code=(*LESSON_CODE, "iwae_bound")
)
CHECKPOINTS["vae_amortisation"] = checkpoints.FromNotebook(
    notebook="08_vae", function="shipped_amortisation", code=(*LESSON_CODE, "fit_posterior")
)


@cached_by_code(maxsize=4)
def default_vae_2d(lesson) -> VAERun:
    """The shipped 2-D VAE (:data:`TOY_DEFAULTS`), measured on its held-out points as
    :func:`train_vae_2d` measures the model it trains; ValueError when ``lesson`` is not the
    code it was trained with."""
    points, labels = toy_points()
    model = _model_from_state(lesson, _shipped(_toy_checkpoint, lesson))
    run = _held_out_run(lesson, model, points[-500:].astype(np.float32), TOY_DEFAULTS["beta"], seed=0)
    run.labels = labels[-500:]
    return run


@cached_by_code(maxsize=4)
def default_beta_sweep(lesson) -> BetaSweep:
    """The shipped β sweep (:data:`SWEEP_BETAS`, the default data and settings)."""
    state = _shipped(_sweep_checkpoint, lesson)
    return _sweep(state["betas"], state["recon"], state["kl_per_dim"], state["elbo"])


@cached_by_code(maxsize=4)
def default_aggregate_posterior(lesson) -> AggregatePosterior:
    """The shipped aggregate posteriors (:data:`AGGREGATE_BETAS`, the default data)."""
    state = _shipped(_aggregate_checkpoint, lesson)
    return AggregatePosterior(
        betas=state["betas"],
        codes=list(state["codes"]),
        to_prior=state["to_prior"],
        samples_to_data=state["samples_to_data"],
    )


@cached_by_code(maxsize=4)
def default_remedies(lesson) -> dict:
    """The shipped remedy runs (:data:`REMEDY_DEFAULTS`): their held-out numbers, no models."""
    return {
        name: VAERun(
            model=None,
            recon=numbers["recon"],
            kl=numbers["kl"],
            kl_per_dim=numbers["kl_per_dim"],
            elbo=numbers["elbo"],
            beta=REMEDY_DEFAULTS["beta"],
        )
        for name, numbers in _shipped(_remedies_checkpoint, lesson).items()
    }


@cached_by_code(maxsize=4)
def default_remedy_seeds(lesson) -> RemedySeeds:
    """The shipped remedy runs over :data:`REMEDY_SEEDS`: seed 0 as :func:`default_remedies`
    gives it, the others from their own checkpoint."""
    first = {name: {"kl_per_dim": run.kl_per_dim, "elbo": run.elbo} for name, run in default_remedies(lesson).items()}
    rest = _shipped(_remedy_seeds_checkpoint, lesson)
    runs = [first] + [
        {name: {what: rest[name][what][i] for what in ("kl_per_dim", "elbo")} for name in rest}
        for i in range(len(REMEDY_SEEDS) - 1)
    ]
    return _remedy_seeds(REMEDY_SEEDS, runs)


@cached_by_code(maxsize=4)
def default_image_vae(lesson, bound=None) -> ImageVAERun:
    """The shipped digit VAE (:data:`IMAGE_DEFAULTS`) measured on the held-out digits as
    :func:`train_image_vae` measures the model it trains; with the IWAE bound function ``bound``,
    also its shipped IWAE table when that is what ``bound`` computes (else :func:`image_iwae`
    computes the rows asked for)."""
    _, test, labels = digits()
    run = _held_out_images(
        lesson, _model_from_state(lesson, _shipped(_digits_checkpoint, lesson)), test, labels, seed=0
    )
    if bound is not None:
        table, _ = checkpoints.load_if_fits(_iwae_checkpoint, *lesson.code, bound)
        if table is not None:
            run.iwae_tables[code_key(bound)] = IWAEBounds(**table)
    return run


@cached_by_code(maxsize=4)
def default_amortisation(lesson, fit) -> AmortisationGap:
    """The shipped amortisation gap of the shipped digit VAE, while ``lesson`` and ``fit`` are
    the code that computed it; ValueError otherwise."""
    state, reason = checkpoints.load_if_fits(_amortisation_checkpoint, *lesson.code, fit)
    if state is None:
        raise ValueError(reason)
    return AmortisationGap(
        steps=int(state["steps"]),
        encoder_elbo=state["encoder_elbo"],
        fitted_elbo=state["fitted_elbo"],
        fitted_iwae=state["fitted_iwae"],
    )


def shipped_caption(button: str, settings: str, what: str = "the model") -> str:
    """The caption of a figure that shows shipped default models (``what``: "the model", "the
    six models"...)."""
    return (
        f"*Shown: {what} shipped with the course, trained by this page's cells with the default "
        f"settings ({settings}); press **{button}** to train with yours.*"
    )


# ----------------------------------------------------------------------------- a VAE against a DDPM
# Section 8: the page's VAE (section 5's settings) and engine.diffusion's DDPM (notebook 07's small
# denoiser) trained on the same moons, their samples scored against the same held-out points.
VS_DDPM = {"seeds": (0, 1, 2, 3, 4), "T": 50, "hidden": 64, "steps": 1500, "lr": 1e-2, "n_eval": 500, "samples": 2000}
OFF_DATA = 0.25  # a sample this far (standardised units) from every training point lies off the data


@dataclass(frozen=True, eq=False)
class VaeAgainstDdpm:
    """Per seed, the energy distance to the 500 held-out points of 2,000 VAE samples (decoded
    z ~ N(0, I)) and of 2,000 DDPM samples, and the share of each lying off the data (farther than
    :data:`OFF_DATA` from every training point); ``floor`` and ``floor_off``: the same for the
    2,000 training points themselves (distance) and the held-out points (share), what a perfect
    sampler would get; the held-out points and 500 of seed 0's samples, for the figure."""

    seeds: tuple
    held_out: np.ndarray
    vae_samples: np.ndarray
    ddpm_samples: np.ndarray
    vae: np.ndarray
    ddpm: np.ndarray
    floor: float
    vae_off: np.ndarray
    ddpm_off: np.ndarray
    floor_off: float
    shipped: bool = False


def vae_against_ddpm(lesson, seeds=VS_DDPM["seeds"], on_step=None) -> VaeAgainstDdpm:
    """For each seed: the lesson's VAE trained by :func:`train_vae_2d` at section 5's defaults
    (:data:`TOY_DEFAULTS`; seed 0 is the shipped model of section 5) and an
    ``engine.diffusion.Denoiser`` trained by ``engine.diffusion.train_ddpm`` (:data:`VS_DDPM`) on
    the same training rows; both sampled 500 times and scored by the energy distance to the same
    500 held-out rows. ``on_step(done)`` counts the training steps of all runs."""
    from engine import diffusion
    from engine.distances import energy_distance

    d, v = TOY_DEFAULTS, VS_DDPM
    points = toy_points()[0]
    train, held = _rows("vae_against_ddpm", points, v["n_eval"])
    held64 = held.astype(np.float64)
    schedule = diffusion.linear_beta_schedule(v["T"], rescale=True)
    per_seed = d["steps"] + v["steps"]
    found = {"vae": [], "ddpm": [], "vae_off": [], "ddpm_off": [], "vae_samples": None, "ddpm_samples": None}
    for i, seed in enumerate(seeds):
        done = i * per_seed
        run = train_vae_2d(
            lesson,
            points,
            beta=d["beta"],
            latent_dim=d["latent_dim"],
            steps=d["steps"],
            obs_var=d["obs_var"],
            n_eval=v["n_eval"],
            seed=seed,
            on_step=_after(on_step, done),
        )
        if run.stopped:
            raise ValueError(f"vae_against_ddpm: the VAE's training failed at seed {seed}: {run.stopped}")
        with random.fork_rng(int(seed) + 2):
            vae_samples = _prior_samples(lesson, run.model, v["samples"]).astype(np.float64)
        with random.fork_rng(int(seed)):
            model = diffusion.Denoiser(2, v["hidden"], T=v["T"])
            progress = None if on_step is None else (lambda s, total, done=done: on_step(done + d["steps"] + s))
            diffusion.train_ddpm(model, train, schedule, steps=v["steps"], lr=v["lr"], progress=progress)
        with random.fork_rng(int(seed) + 2):
            ddpm_samples = np.asarray(diffusion.sample(model, schedule, v["samples"], 2), dtype=np.float64)
        for name, samples in (("vae", vae_samples), ("ddpm", ddpm_samples)):
            found[name].append(energy_distance(samples, held64))
            found[f"{name}_off"].append(off_data_share(samples, train))
        if i == 0:
            shown = slice(0, v["n_eval"])  # the figure draws 500 of each
            found["vae_samples"] = vae_samples[shown].astype(np.float32)
            found["ddpm_samples"] = ddpm_samples[shown].astype(np.float32)
    return VaeAgainstDdpm(
        seeds=tuple(int(s) for s in seeds),
        held_out=held,
        vae_samples=found["vae_samples"],
        ddpm_samples=found["ddpm_samples"],
        vae=np.asarray(found["vae"]),
        ddpm=np.asarray(found["ddpm"]),
        floor=energy_distance(train.astype(np.float64), held64),
        vae_off=np.asarray(found["vae_off"]),
        ddpm_off=np.asarray(found["ddpm_off"]),
        floor_off=off_data_share(held64, train),
    )


def off_data_share(points, reference, radius=OFF_DATA) -> float:
    """The share of ``points`` [n, 2] farther than ``radius`` from every row of ``reference``."""
    points, reference = np.asarray(points, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    squared = (points**2).sum(1)[:, None] + (reference**2).sum(1)[None, :] - 2 * points @ reference.T
    nearest = squared.min(axis=1)
    return float(np.mean(nearest > radius**2))


def vae_ddpm_state(lesson) -> dict:
    """Section 8's comparison at its defaults, as shipped: the samples of seed 0 and the distances
    of every seed."""
    found = vae_against_ddpm(lesson)
    return {
        "seeds": np.asarray(found.seeds),
        "vae_samples": found.vae_samples,
        "ddpm_samples": found.ddpm_samples,
        "vae": found.vae,
        "ddpm": found.ddpm,
        "floor": found.floor,
        "vae_off": found.vae_off,
        "ddpm_off": found.ddpm_off,
        "floor_off": found.floor_off,
    }


CHECKPOINTS["vae_ddpm"] = checkpoints.FromNotebook(notebook="08_vae", function="shipped_vae_ddpm", code=LESSON_CODE)


@cached_by_code(maxsize=4)
def default_vae_against_ddpm(lesson) -> VaeAgainstDdpm:
    """The shipped comparison; ValueError when ``lesson`` is not the code it was trained with."""
    state = _shipped(_ddpm_checkpoint, lesson)
    return VaeAgainstDdpm(
        seeds=tuple(int(s) for s in state["seeds"]),
        held_out=toy_points()[0][-VS_DDPM["n_eval"] :].astype(np.float32),
        vae_samples=state["vae_samples"],
        ddpm_samples=state["ddpm_samples"],
        vae=state["vae"],
        ddpm=state["ddpm"],
        floor=float(state["floor"]),
        vae_off=state["vae_off"],
        ddpm_off=state["ddpm_off"],
        floor_off=float(state["floor_off"]),
        shipped=True,
    )


@cached_by_code(maxsize=2)
def remembered_vae_against_ddpm(lesson, on_step=None) -> VaeAgainstDdpm:
    """:func:`vae_against_ddpm` at its defaults, remembered per process by the lesson cells' code:
    the runs are seeded, so a second press of the page's button with the same code would train
    the same models again (about 14 s CPU); it shows the first press's result instead."""
    return vae_against_ddpm(lesson, on_step=on_step)

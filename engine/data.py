"""Data sets that need no download (toy sets and one real one), and a mini-batch iterator.

Every ``make_*`` function is seeded: ``seed=None`` draws from the engine's global generator
(so ``engine.manual_seed(s)`` fixes it), an int gives its own ``np.random.default_rng(seed)``,
and a ``np.random.Generator`` is used as is. Points come back as ``X`` float32 [N, 2] and labels
``y`` int64 [N], classes as equal in size as N allows, rows shuffled.

- ``make_moons``: two interleaved half circles.          ``make_circles``: two concentric rings.
- ``make_spirals``: C arms r = t, φ = 2π·turns·t + 2πc/C.  ``make_blobs``: isotropic clusters.
- ``make_swiss_roll``: the rolled sheet (t cos t, t sin t), 2-D or 3-D, for diffusion demos.
- ``make_gaussian_mixture``: samples plus the exact ``GaussianMixture`` (log-density and score).
- ``make_shapes``: small grey images of circles, squares, triangles and crosses.
- ``load_digits``: the 1,797 real 8x8 handwritten digits of UCI's "Optical Recognition of
  Handwritten Digits" (CC BY 4.0), shipped inside the engine, with a fixed train/test split.
- ``DataLoader`` / ``batches``: shuffled mini-batches; ``train_test_split``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import gzip
import hashlib
import io
import math
import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

from . import random as engine_random
from ._checks import to_array

__all__ = [
    "SHAPE_CLASSES",
    "DataLoader",
    "GaussianMixture",
    "batches",
    "load_digits",
    "make_blobs",
    "make_circles",
    "make_gaussian_mixture",
    "make_moons",
    "make_shapes",
    "make_spirals",
    "make_swiss_roll",
    "train_test_split",
]

SHAPE_CLASSES = ("circle", "square", "triangle", "cross")


# ----------------------------------------------------------------------------- helpers
def _rng(seed) -> np.random.Generator:
    """The generator to draw from: the engine's global one for None, else a seeded one."""
    if seed is None:
        return engine_random.generator()
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be None, an int or a np.random.Generator, got {seed!r}")
    return np.random.default_rng(int(seed))


def _count(op: str, name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{op}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _nonnegative(op: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{op}: {name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _balanced_labels(n: int, n_classes: int) -> np.ndarray:
    """Labels 0..C-1 in blocks whose sizes differ by at most one (the first n % C get one more)."""
    sizes = np.full(n_classes, n // n_classes)
    sizes[: n % n_classes] += 1
    return np.repeat(np.arange(n_classes, dtype=np.int64), sizes)


def _shuffled(rng: np.random.Generator, X: np.ndarray, y: np.ndarray, *more):
    order = rng.permutation(len(X))
    return (X[order].astype(np.float32), y[order].astype(np.int64), *(m[order] for m in more))


# ----------------------------------------------------------------------------- 2-D point sets
def make_moons(n_samples=200, noise=0.1, seed=None):
    """Two interleaving half circles: class 0 on (cos θ, sin θ), class 1 on
    (1 - cos θ, 1/2 - sin θ), θ ~ U(0, π), plus Gaussian noise of std ``noise``."""
    op = "make_moons"
    n = _count(op, "n_samples", n_samples)
    noise = _nonnegative(op, "noise", noise)
    rng = _rng(seed)
    y = _balanced_labels(n, 2)
    theta = rng.uniform(0.0, math.pi, n)
    upper = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    lower = np.stack([1.0 - np.cos(theta), 0.5 - np.sin(theta)], axis=1)
    X = np.where(y[:, None] == 0, upper, lower) + noise * rng.standard_normal((n, 2))
    return _shuffled(rng, X, y)


def make_circles(n_samples=200, noise=0.05, factor=0.5, seed=None):
    """Two concentric circles: class 0 of radius 1, class 1 of radius ``factor`` (0 < factor < 1),
    angles ~ U(0, 2π), plus Gaussian noise of std ``noise``. No line separates them."""
    op = "make_circles"
    n = _count(op, "n_samples", n_samples)
    noise = _nonnegative(op, "noise", noise)
    if not (isinstance(factor, numbers.Real) and 0 < factor < 1):
        raise ValueError(f"{op}: factor must lie strictly between 0 and 1, got {factor!r}")
    rng = _rng(seed)
    y = _balanced_labels(n, 2)
    theta = rng.uniform(0.0, 2 * math.pi, n)
    radius = np.where(y == 0, 1.0, float(factor))
    X = radius[:, None] * np.stack([np.cos(theta), np.sin(theta)], axis=1)
    X += noise * rng.standard_normal((n, 2))
    return _shuffled(rng, X, y)


def make_spirals(n_samples=300, n_classes=2, noise=0.05, turns=1.25, seed=None):
    """``n_classes`` interleaved spiral arms around the origin.

    Arm c: radius r = t, angle φ = 2π·turns·t + 2πc/C, for t in (0, 1], then Gaussian noise of
    std ``noise``. t = sqrt(u), u ~ U(0, 1), spreads points about evenly along each arm instead
    of crowding the centre, where the arms meet. Neighbouring arms lie 1/(turns·C) apart along a
    ray; the defaults keep them separable (a k-NN classifier scores about 99.8%).
    """
    op = "make_spirals"
    n = _count(op, "n_samples", n_samples)
    n_classes = _count(op, "n_classes", n_classes, 2)
    noise = _nonnegative(op, "noise", noise)
    if not (isinstance(turns, numbers.Real) and turns > 0):
        raise ValueError(f"{op}: turns must be a positive number, got {turns!r}")
    rng = _rng(seed)
    y = _balanced_labels(n, n_classes)
    t = np.sqrt(rng.uniform(0.0, 1.0, n))
    phi = 2 * math.pi * (float(turns) * t + y / n_classes)
    X = t[:, None] * np.stack([np.cos(phi), np.sin(phi)], axis=1)
    X += noise * rng.standard_normal((n, 2))
    return _shuffled(rng, X, y)


def make_blobs(
    n_samples=300, centers=3, noise=1.0, n_features=2, center_box=(-10.0, 10.0), seed=None, return_centers=False
):
    """Isotropic Gaussian clusters: class c ~ N(center_c, noise² I).

    ``centers``: a number of clusters (centres drawn uniformly in ``center_box``) or an array
    [C, n_features] of centres. ``noise`` is each cluster's standard deviation (scikit-learn
    calls it ``cluster_std``). With ``return_centers=True`` returns (X, y, centers).
    """
    op = "make_blobs"
    n = _count(op, "n_samples", n_samples)
    noise = _nonnegative(op, "noise", noise)
    rng = _rng(seed)
    if isinstance(centers, numbers.Integral) and not isinstance(centers, bool):
        k = _count(op, "centers", centers)
        d = _count(op, "n_features", n_features)
        low, high = center_box
        centers = rng.uniform(low, high, size=(k, d))
    else:
        centers = np.asarray(to_array(op, "centers", centers), dtype=np.float64)
        if centers.ndim != 2 or len(centers) == 0:
            raise ValueError(f"{op}: centers must be an int or an array [C, D], got shape {centers.shape}")
    y = _balanced_labels(n, len(centers))
    X = centers[y] + noise * rng.standard_normal((n, centers.shape[1]))
    X, y = _shuffled(rng, X, y)
    return (X, y, centers.astype(np.float32)) if return_centers else (X, y)


def make_swiss_roll(n_samples=1000, noise=0.05, dim=2, n_segments=4, seed=None, return_t=False):
    """The swiss roll, as used in diffusion-model demos.

    t = 1.5π(1 + 2u), u ~ U(0, 1) (one and a half turns); 2-D points (t cos t, t sin t) / 10,
    3-D points (t cos t, 21 v, t sin t) / 10 with v ~ U(0, 1), the 2-D roll being the 3-D one
    seen from above. Gaussian noise of std ``noise`` is added after scaling. There are no
    classes: ``y`` is the segment of the roll (0 .. n_segments-1, innermost first), handy for
    colouring; ``return_t=True`` also returns the position t along the roll as float32.
    """
    op = "make_swiss_roll"
    n = _count(op, "n_samples", n_samples)
    noise = _nonnegative(op, "noise", noise)
    n_segments = _count(op, "n_segments", n_segments)
    if dim not in (2, 3):
        raise ValueError(f"{op}: dim must be 2 or 3, got {dim!r}")
    rng = _rng(seed)
    u = rng.uniform(0.0, 1.0, n)
    t = 1.5 * math.pi * (1.0 + 2.0 * u)
    if dim == 2:
        X = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / 10.0
    else:
        X = np.stack([t * np.cos(t), 21.0 * rng.uniform(0.0, 1.0, n), t * np.sin(t)], axis=1)
        X /= 10.0
    X += noise * rng.standard_normal(X.shape)
    y = np.minimum((u * n_segments).astype(np.int64), n_segments - 1)
    X, y, t = _shuffled(rng, X, y, t)
    return (X, y, t.astype(np.float32)) if return_t else (X, y)


# ----------------------------------------------------------------------------- Gaussian mixture
@dataclass(frozen=True)
class GaussianMixture:
    """An isotropic Gaussian mixture p(x) = Σ_k w_k N(x; μ_k, σ_k² I) in D dimensions.

    ``means`` [K, D], ``stds`` [K], ``weights`` [K] (normalised to sum to 1). Its density and
    score are exact, so notebooks can compare a model against the truth::

        log p(x) = logsumexp_k [log w_k - (D/2) log(2π σ_k²) - |x - μ_k|² / (2σ_k²)]
        ∇ log p(x) = Σ_k r_k(x) (μ_k - x) / σ_k²,   r_k(x) = w_k N(x; μ_k, σ_k² I) / p(x)

    Points x are [..., D]; in 1-D, [...] works too (every entry is a point).
    """

    means: np.ndarray
    stds: np.ndarray
    weights: np.ndarray

    def __post_init__(self):
        means = np.asarray(to_array("GaussianMixture", "means", self.means), dtype=np.float64)
        if means.ndim == 1:
            means = means[:, None]  # K one-dimensional means
        if means.ndim != 2 or len(means) == 0:
            raise ValueError(f"GaussianMixture: means must be [K, D], got shape {means.shape}")
        k = len(means)
        stds = np.broadcast_to(
            np.asarray(to_array("GaussianMixture", "stds", self.stds), dtype=np.float64), (k,)
        ).copy()
        weights = np.broadcast_to(
            np.asarray(to_array("GaussianMixture", "weights", self.weights), dtype=np.float64), (k,)
        ).copy()
        if not (np.isfinite(means).all() and np.isfinite(stds).all() and (stds > 0).all()):
            raise ValueError(f"GaussianMixture: means must be finite and stds > 0, got stds {stds}")
        if not (np.isfinite(weights).all() and (weights > 0).all()):
            raise ValueError(f"GaussianMixture: weights must be positive, got {weights}")
        object.__setattr__(self, "means", means)
        object.__setattr__(self, "stds", stds)
        object.__setattr__(self, "weights", weights / weights.sum())

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    @property
    def n_components(self) -> int:
        return self.means.shape[0]

    def _points(self, x) -> tuple[np.ndarray, bool]:
        """x as float64 [..., D], and whether an axis was added (1-D points given as [...])."""
        x = np.asarray(to_array("GaussianMixture", "x", x), dtype=np.float64)
        if self.dim == 1 and (x.ndim == 0 or x.ndim == 1 or x.shape[-1] != 1):
            return x[..., None], True
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise ValueError(f"GaussianMixture: points must have shape [..., {self.dim}], got {x.shape}")
        return x, False

    def _component_log_terms(self, x: np.ndarray) -> np.ndarray:
        """log w_k + log N(x; μ_k, σ_k² I), shape [..., K]."""
        sq = ((x[..., None, :] - self.means) ** 2).sum(axis=-1)
        var = self.stds**2
        return np.log(self.weights) - 0.5 * self.dim * np.log(2 * math.pi * var) - sq / (2 * var)

    def log_prob(self, x) -> np.ndarray:
        """log p(x), shape [...] for points [..., D] (float64, stable logsumexp)."""
        x, _ = self._points(x)
        terms = self._component_log_terms(x)
        top = terms.max(axis=-1, keepdims=True)
        return top[..., 0] + np.log(np.exp(terms - top).sum(axis=-1))

    def prob(self, x) -> np.ndarray:
        """p(x), shape [...]."""
        return np.exp(self.log_prob(x))

    def score(self, x) -> np.ndarray:
        """The score ∇_x log p(x) = Σ_k r_k(x)(μ_k - x)/σ_k², the same shape as x."""
        x, squeezed = self._points(x)
        terms = self._component_log_terms(x)
        r = np.exp(terms - terms.max(axis=-1, keepdims=True))
        r /= r.sum(axis=-1, keepdims=True)  # responsibilities r_k(x), [..., K]
        pull = (self.means - x[..., None, :]) / (self.stds**2)[:, None]  # [..., K, D]
        out = (r[..., None] * pull).sum(axis=-2)
        return out[..., 0] if squeezed else out

    def sample(self, n_samples, seed=None):
        """(X float32 [N, D], y int64 [N]): component y ~ Categorical(w), X ~ N(μ_y, σ_y² I)."""
        n = _count("GaussianMixture.sample", "n_samples", n_samples)
        rng = _rng(seed)
        y = rng.choice(self.n_components, size=n, p=self.weights).astype(np.int64)
        X = self.means[y] + self.stds[y, None] * rng.standard_normal((n, self.dim))
        return X.astype(np.float32), y

    def diffused(self, scale, noise_std) -> GaussianMixture:
        """The law of scale·X + noise_std·ε (ε ~ N(0, I)): again an isotropic mixture, with
        means scale·μ_k and stds sqrt(scale² σ_k² + noise_std²). With scale = sqrt(ᾱ_t) and
        noise_std = sqrt(1 - ᾱ_t) it is a diffusion's x_t, whose exact score a denoiser learns."""
        scale, noise_std = float(scale), float(noise_std)
        stds = np.sqrt(scale**2 * self.stds**2 + noise_std**2)
        return GaussianMixture(self.means * scale, stds, self.weights)


def make_gaussian_mixture(n_samples=500, n_components=None, means=None, stds=None, weights=None, dim=2, seed=None):
    """Samples of an isotropic Gaussian mixture, with the mixture itself.

    Returns ``(X, y, mixture)``: X float32 [N, dim], y int64 [N] (the component of each sample),
    and the ``GaussianMixture`` (exact ``log_prob`` and ``score``). Defaults: in 2-D,
    ``n_components`` = 8 means on a circle of radius 2 with stds 0.25; in 1-D, 2 means spread
    evenly over [-2, 2] with stds 0.5; equal weights. Give ``means`` [K, D] for anything else
    (``dim`` is then read from them).
    """
    op = "make_gaussian_mixture"
    if means is None:
        dim = _count(op, "dim", dim)
        if dim == 2:
            k = _count(op, "n_components", 8 if n_components is None else n_components)
            angle = 2 * math.pi * np.arange(k) / k
            means = 2.0 * np.stack([np.cos(angle), np.sin(angle)], axis=1)
        elif dim == 1:
            k = _count(op, "n_components", 2 if n_components is None else n_components)
            means = np.linspace(-2.0, 2.0, k)[:, None] if k > 1 else np.zeros((1, 1))
        else:
            raise ValueError(f"{op}: default means exist for dim 1 and 2; pass means [K, {dim}]")
    means = np.asarray(to_array(op, "means", means), dtype=np.float64)
    if stds is None:
        stds = 0.5 if means.ndim == 1 or means.shape[-1] == 1 else 0.25
    mixture = GaussianMixture(means, stds, 1.0 if weights is None else weights)
    X, y = mixture.sample(n_samples, seed=seed)
    return X, y, mixture


# ----------------------------------------------------------------------------- shape images
def make_shapes(n_samples=512, size=16, classes=SHAPE_CLASSES, noise=0.1, seed=None):
    """Small grey images of simple shapes, for CNN and VAE demos.

    Returns ``(images, labels)``: images float32 [N, 1, size, size] in [0, 1], labels int64 [N]
    indexing ``classes`` (a subset of ``SHAPE_CLASSES``, in any order), classes equally common.
    Each image draws a centre, a half-extent r ∈ [0.2, 0.42]·size (the shape stays inside the
    frame) and a brightness in [0.6, 1]; the shape is a mask on the pixel grid:

    - circle: |p - c| <= r;          square: max(|dx|, |dy|) <= 0.85 r;
    - triangle (apex up): -r <= dy <= r and |dx| <= (dy + r)/2;
    - cross: (|dx| <= w and |dy| <= r) or (|dy| <= w and |dx| <= r), w = 0.3 r,

    then Gaussian pixel noise of std ``noise``, clipped to [0, 1]. Masks are computed for all
    images of a class at once from coordinate grids.
    """
    op = "make_shapes"
    n = _count(op, "n_samples", n_samples)
    size = _count(op, "size", size, 8)
    noise = _nonnegative(op, "noise", noise)
    if isinstance(classes, str):
        classes = (classes,)
    classes = tuple(classes)
    unknown = [c for c in classes if c not in SHAPE_CLASSES]
    if not classes or unknown or len(set(classes)) != len(classes):
        raise ValueError(f"{op}: classes must be distinct names from {SHAPE_CLASSES}, got {classes}")
    rng = _rng(seed)
    labels = rng.permutation(_balanced_labels(n, len(classes)))
    half = rng.uniform(0.2, 0.42, n) * size
    # Centres keep the whole shape (extent ±r around the centre) on the grid 0..size-1.
    cx = rng.uniform(half, size - 1 - half)
    cy = rng.uniform(half, size - 1 - half)
    brightness = rng.uniform(0.6, 1.0, n)
    grid = np.arange(size, dtype=np.float64)
    images = np.zeros((n, size, size))
    for index, name in enumerate(classes):
        members = np.flatnonzero(labels == index)
        r = half[members, None, None]
        dx = grid[None, None, :] - cx[members, None, None]  # columns
        dy = grid[None, :, None] - cy[members, None, None]  # rows, growing downwards
        if name == "circle":
            mask = dx**2 + dy**2 <= r**2
        elif name == "square":
            mask = np.maximum(np.abs(dx), np.abs(dy)) <= 0.85 * r
        elif name == "triangle":
            mask = (dy >= -r) & (dy <= r) & (np.abs(dx) <= (dy + r) / 2)
        else:  # cross
            w = 0.3 * r
            mask = ((np.abs(dx) <= w) & (np.abs(dy) <= r)) | ((np.abs(dy) <= w) & (np.abs(dx) <= r))
        images[members] = mask * brightness[members, None, None]
    images += noise * rng.standard_normal(images.shape)
    np.clip(images, 0.0, 1.0, out=images)
    return images[:, None].astype(np.float32), labels.astype(np.int64)


# ----------------------------------------------------------------------------- real digits
DIGITS_FILE = Path(__file__).resolve().parent / "datasets" / "digits_data.py"
DIGITS_SPLITS = ("train", "test", "all")
_DIGITS_TEST_SIZE = 360  # 20% of 1,797 rounded up, as scikit-learn's train_test_split(test_size=0.2)
_DIGITS_SPLIT_SEED = 0


def load_digits(split="all", *, channel_dim=False):
    """The 1,797 handwritten digits of UCI's "Optical Recognition of Handwritten Digits", 8x8 pixels.

        X, y = load_digits()                      # all 1,797: X float32 [1797, 8, 8], y int64 [1797]
        X_train, y_train = load_digits("train")   # 1,437 images to train on
        X_test, y_test = load_digits("test")      # the 360 others, to report accuracy on
        X, y = load_digits("train", channel_dim=True)   # [1437, 1, 8, 8], what conv2d takes

    Returns ``(images, labels)``, new arrays on every call. A pixel is the number of ink pixels
    (0..16) in one 4x4 block of a 32x32 scan, divided by 16, so images lie in [0, 1]. Labels are
    the digits 0..9; the full set has 178, 182, 177, 183, 181, 182, 181, 179, 174, 180 of them.

    The split is fixed (the same on every call, machine and NumPy version) and stratified: the
    test set's 360 images are split over the digits in proportion to their counts (the largest
    remainders round up), and which images of each digit go to test is drawn by NumPy's legacy
    ``RandomState(0)``, whose stream never changes. ``engine.manual_seed`` does not affect it.
    Both parts keep the file's order: shuffle with ``DataLoader``.

    Source: the copy in scikit-learn (``sklearn/datasets/data/digits.csv.gz``, the test part of
    the UCI set; E. Alpaydin and C. Kaynak, 1998; CC BY 4.0), shipped inside the engine as
    ``engine/datasets/digits_data.py`` (see the README there). It loads with no network and
    without scikit-learn. A missing, truncated or corrupted copy raises ``RuntimeError`` naming
    the file.
    """
    if split not in DIGITS_SPLITS:
        raise ValueError(f"load_digits: split must be one of {DIGITS_SPLITS}, got {split!r}")
    pixels, labels, test = _digits()
    rows = slice(None) if split == "all" else (test if split == "test" else ~test)
    images = pixels[rows].reshape(-1, 8, 8).astype(np.float32) / np.float32(16)
    if channel_dim:
        images = images[:, None]
    return images, labels[rows].copy()


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pixels uint8 [1797, 64] in 0..16, labels int64 [1797], test mask bool [1797]), read once."""
    try:
        from .datasets import digits_data
    except (ImportError, SyntaxError, ValueError) as error:  # missing, or cut in the middle
        _digits_error(f"cannot be imported ({type(error).__name__}: {error})")
    table = _decode_digits(digits_data.BASE64, digits_data.SIZE, digits_data.SHA256)
    pixels, labels = table[:, :64].astype(np.uint8), table[:, 64].astype(np.int64)
    return pixels, labels, _stratified_test_mask(labels, _DIGITS_TEST_SIZE, _DIGITS_SPLIT_SEED)


def _decode_digits(text: str, size: int, sha256: str) -> np.ndarray:
    """The CSV table [1797, 65] (64 pixels, then the label) from the base64 text of its .gz file.

    The SHA-256 of the decoded bytes must be the one recorded beside them, so a truncated or
    altered copy is refused before anything is parsed."""
    try:
        blob = base64.b64decode(text)
    except binascii.Error as error:
        _digits_error(f"is truncated or corrupted: its text is not valid base64 ({error})")
    if len(blob) != size:
        _digits_error(f"is truncated or corrupted: it decodes to {len(blob):,} bytes, not {size:,}")
    if hashlib.sha256(blob).hexdigest() != sha256:
        _digits_error("is corrupted: the SHA-256 of its bytes is not the one recorded in it")
    return np.loadtxt(io.StringIO(gzip.decompress(blob).decode("ascii")), delimiter=",", dtype=np.int64, ndmin=2)


def _digits_error(problem: str) -> NoReturn:
    raise RuntimeError(
        f"load_digits: the data file {DIGITS_FILE} {problem}. It ships with the engine: restore it "
        "(git checkout engine/datasets, or reinstall the package)."
    )


def _stratified_test_mask(labels: np.ndarray, test_size: int, seed: int) -> np.ndarray:
    """A boolean mask of ``test_size`` rows with every class in proportion to its count."""
    counts = np.bincount(labels)
    share = counts * test_size / counts.sum()
    per_class = np.floor(share).astype(np.int64)
    remainders = share - per_class
    per_class[np.argsort(-remainders, kind="stable")[: test_size - per_class.sum()]] += 1
    rng = np.random.RandomState(seed)  # legacy generator: its stream is frozen across NumPy versions
    mask = np.zeros(len(labels), dtype=bool)
    for digit, k in enumerate(per_class):
        mask[rng.permutation(np.flatnonzero(labels == digit))[:k]] = True
    return mask


# ----------------------------------------------------------------------------- batching
class DataLoader:
    """Mini-batches of one or more arrays that share their first dimension.

        loader = DataLoader(X, y, batch_size=64, shuffle=True, seed=0)
        for epoch in range(10):
            for xb, yb in loader:      # a fresh shuffle every epoch
                ...
        len(loader)                    # batches per epoch: ceil(N / batch_size)

    As PyTorch's: ``batch_size=1`` and no shuffling unless ``shuffle=True``. Yields a tuple of
    NumPy arrays per batch (or one array when given one array). Tensors are read through ``.data``. With ``seed`` the sequence of epochs is reproducible; with
    ``seed=None`` each epoch's order comes from the engine's global generator.
    ``drop_last=True`` skips a final batch smaller than ``batch_size``.
    """

    def __init__(self, *arrays, batch_size=1, shuffle=False, seed=None, drop_last=False):
        if not arrays:
            raise ValueError("DataLoader: give at least one array")
        self.arrays = tuple(to_array("DataLoader", "arrays", a) for a in arrays)
        lengths = [a.shape[0] if a.ndim else None for a in self.arrays]
        if None in lengths or len(set(lengths)) != 1:
            shapes = [a.shape for a in self.arrays]
            raise ValueError(f"DataLoader: arrays must share their first dimension, got {shapes}")
        self.n = lengths[0]
        self.batch_size = _count("DataLoader", "batch_size", batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self._rng = None if seed is None else _rng(seed)

    def __len__(self) -> int:
        full, rest = divmod(self.n, self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)

    def __iter__(self):
        if self.shuffle:
            rng = self._rng if self._rng is not None else engine_random.generator()
            order = rng.permutation(self.n)
        else:
            order = np.arange(self.n)
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            index = order[start : start + self.batch_size]
            batch = tuple(a[index] for a in self.arrays)
            yield batch if len(batch) > 1 else batch[0]


def batches(X, y=None, batch_size=32, shuffle=True, seed=None, drop_last=False):
    """Iterate once over mini-batches of X (and y): yields ``(xb, yb)``, or ``xb`` without y.

    One epoch of ``DataLoader``; every index appears exactly once (unless ``drop_last``)."""
    arrays = (X,) if y is None else (X, y)
    yield from DataLoader(*arrays, batch_size=batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)


def train_test_split(*arrays, test_size=0.25, shuffle=True, seed=None):
    """Split arrays sharing their first dimension into train and test parts.

    Returns ``[a_train, a_test, b_train, b_test, ...]`` (scikit-learn's order), so
    ``X_train, X_test, y_train, y_test = train_test_split(X, y, seed=0)``. ``test_size``: a
    fraction in (0, 1) (the test set gets ceil(test_size·N) rows) or a row count.
    """
    op = "train_test_split"
    if not arrays:
        raise ValueError(f"{op}: give at least one array")
    arrays = [to_array(op, "arrays", a) for a in arrays]
    lengths = {a.shape[0] if a.ndim else None for a in arrays}
    if None in lengths or len(lengths) != 1:
        raise ValueError(f"{op}: arrays must share their first dimension, got {[a.shape for a in arrays]}")
    (n,) = lengths
    if isinstance(test_size, numbers.Integral) and not isinstance(test_size, bool):
        n_test = int(test_size)
    elif isinstance(test_size, numbers.Real) and 0 < test_size < 1:
        n_test = math.ceil(test_size * n)
    else:
        raise ValueError(f"{op}: test_size must be a fraction in (0, 1) or a count, got {test_size!r}")
    if not 1 <= n_test <= n - 1:
        raise ValueError(
            f"{op}: test_size={test_size!r} leaves {n_test} of {n} rows for the "
            f"test set; both parts need at least one row"
        )
    order = _rng(seed).permutation(n) if shuffle else np.arange(n)
    test, train = order[:n_test], order[n_test:]
    return [part for a in arrays for part in (a[train], a[test])]

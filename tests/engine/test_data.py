"""engine.data: toy sets (shapes, seeding, geometry), the Gaussian mixture's exact density and
score, shape images, mini-batches and splits."""

import math

import numpy as np
import pytest
from assertions import assert_raises_naming

import engine.random
from engine.data import (
    SHAPE_CLASSES,
    DataLoader,
    GaussianMixture,
    batches,
    make_blobs,
    make_circles,
    make_gaussian_mixture,
    make_moons,
    make_shapes,
    make_spirals,
    make_swiss_roll,
    train_test_split,
)

POINT_SETS = {
    "moons": (make_moons, 2),
    "circles": (make_circles, 2),
    "spirals": (make_spirals, 2),
    "spirals3": (lambda **kw: make_spirals(n_classes=3, **kw), 3),
    "blobs": (make_blobs, 3),
    "swiss_roll": (make_swiss_roll, 4),
}


# ----------------------------------------------------------------------------- common contract
@pytest.mark.parametrize("name", POINT_SETS)
def test_point_sets_shapes_dtypes_and_balance(name):
    make, n_classes = POINT_SETS[name]
    X, y = make(n_samples=301, seed=0)
    assert X.shape == (301, 2) and X.dtype == np.float32
    assert y.shape == (301,) and y.dtype == np.int64
    assert np.isfinite(X).all()
    counts = np.bincount(y, minlength=n_classes)
    assert len(counts) == n_classes
    if name != "swiss_roll":  # the roll's segments are drawn at random, the classes are not
        assert counts.max() - counts.min() <= 1


@pytest.mark.parametrize("name", POINT_SETS)
def test_point_sets_are_seeded(name):
    make, _ = POINT_SETS[name]
    X1, y1 = make(n_samples=100, seed=7)
    X2, y2 = make(n_samples=100, seed=7)
    X3, _ = make(n_samples=100, seed=8)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    assert not np.allclose(X1, X3)
    # seed=None draws from the engine's global generator, which manual_seed resets.
    engine.random.manual_seed(3)
    A, _ = make(n_samples=100)
    B, _ = make(n_samples=100)
    engine.random.manual_seed(3)
    C, _ = make(n_samples=100)
    np.testing.assert_array_equal(A, C)
    assert not np.allclose(A, B)


def test_rows_are_shuffled():
    _, y = make_moons(200, seed=0)
    # Unshuffled, the first 100 labels would all be 0.
    assert 20 < y[:100].sum() < 80


# ----------------------------------------------------------------------------- geometry
def test_moons_lie_on_their_half_circles():
    X, y = make_moons(400, noise=0.0, seed=1)
    upper, lower = X[y == 0].astype(np.float64), X[y == 1].astype(np.float64)
    np.testing.assert_allclose(np.hypot(*upper.T), 1.0, atol=1e-6)
    assert (upper[:, 1] >= -1e-6).all()
    np.testing.assert_allclose(np.hypot(lower[:, 0] - 1, lower[:, 1] - 0.5), 1.0, atol=1e-6)
    assert (lower[:, 1] <= 0.5 + 1e-6).all()


def test_circles_radii():
    X, y = make_circles(400, noise=0.0, factor=0.3, seed=1)
    r = np.hypot(*X.astype(np.float64).T)
    np.testing.assert_allclose(r[y == 0], 1.0, atol=1e-6)
    np.testing.assert_allclose(r[y == 1], 0.3, atol=1e-6)


@pytest.mark.parametrize("n_classes, turns", [(2, 1.25), (3, 1.0), (5, 2.0)])
def test_spiral_points_lie_on_their_arms(n_classes, turns):
    X, y = make_spirals(600, n_classes=n_classes, noise=0.0, turns=turns, seed=2)
    X = X.astype(np.float64)
    r = np.hypot(*X.T)
    phi = np.arctan2(X[:, 1], X[:, 0])
    # On arm c the angle grows with the radius: φ = 2π(turns·r + c/C) (mod 2π).
    residual = phi - 2 * np.pi * (turns * r + y / n_classes)
    wrapped = np.angle(np.exp(1j * residual))
    assert np.abs(wrapped[r > 1e-3]).max() < 1e-4
    assert r.max() <= 1.0 + 1e-6


def _one_nn_accuracy(X_train, y_train, X_test, y_test):
    d = ((X_test[:, None, :] - X_train[None, :, :]) ** 2).sum(-1)
    return np.mean(y_train[d.argmin(axis=1)] == y_test)


def test_default_spirals_are_separable():
    X, y = make_spirals(1000, seed=0)
    Xt, yt = make_spirals(400, seed=1)
    assert _one_nn_accuracy(X, y, Xt, yt) > 0.97


def test_blobs_gather_around_their_centres():
    X, y, centers = make_blobs(3000, centers=3, noise=0.5, seed=4, return_centers=True)
    for c in range(3):
        np.testing.assert_allclose(X[y == c].mean(axis=0), centers[c], atol=0.06)
        np.testing.assert_allclose(X[y == c].std(axis=0), 0.5, atol=0.05)
    given = np.array([[0.0, 0.0], [5.0, 5.0]])
    X, y = make_blobs(10, centers=given, noise=0.0, seed=0)
    np.testing.assert_array_equal(X, given[y])


def test_swiss_roll_follows_t_cos_t():
    X, y, t = make_swiss_roll(500, noise=0.0, seed=5, return_t=True)
    t = t.astype(np.float64)
    assert (t >= 1.5 * np.pi - 1e-5).all() and (t <= 4.5 * np.pi + 1e-5).all()
    np.testing.assert_allclose(X * 10, np.stack([t * np.cos(t), t * np.sin(t)], 1), atol=1e-4)
    # segments follow t: innermost segment first
    assert (np.diff([t[y == s].mean() for s in range(4)]) > 0).all()
    # 3-D: the 2-D roll in columns 0 and 2, the height 21 v / 10 in column 1
    X3, _, t3 = make_swiss_roll(500, noise=0.0, dim=3, seed=5, return_t=True)
    t3 = t3.astype(np.float64)
    assert X3.shape == (500, 3)
    np.testing.assert_allclose(X3[:, [0, 2]] * 10, np.stack([t3 * np.cos(t3), t3 * np.sin(t3)], 1), atol=1e-4)
    assert 0 <= X3[:, 1].min() and X3[:, 1].max() <= 2.1 and X3[:, 1].std() > 0.4


# ----------------------------------------------------------------------------- Gaussian mixture
def _reference_density(mixture, x):
    """Sum of the component densities, written out directly (no logs), for points [N, D]."""
    D = mixture.dim
    total = np.zeros(len(x))
    for mu, sigma, w in zip(mixture.means, mixture.stds, mixture.weights):
        sq = ((x - mu) ** 2).sum(axis=1)
        total += w * np.exp(-sq / (2 * sigma**2)) / (2 * np.pi * sigma**2) ** (D / 2)
    return total


def test_gaussian_mixture_density_matches_direct_formula():
    gm = GaussianMixture(means=[[0.0, 0.0], [2.0, -1.0], [-1.0, 3.0]], stds=[0.5, 1.0, 0.8], weights=[1.0, 2.0, 1.0])
    np.testing.assert_allclose(gm.weights, [0.25, 0.5, 0.25])
    x = np.random.default_rng(0).normal(size=(50, 2)) * 2
    np.testing.assert_allclose(gm.prob(x), _reference_density(gm, x), rtol=1e-12)


def test_gaussian_mixture_integrates_to_one():
    gm1 = GaussianMixture(means=[-2.0, 1.5], stds=[0.5, 0.7], weights=[0.3, 0.7])
    grid = np.linspace(-8, 8, 4001)
    assert np.trapezoid(gm1.prob(grid), grid) == pytest.approx(1.0, abs=1e-8)
    _, _, gm2 = make_gaussian_mixture(10, seed=0)
    g = np.linspace(-4, 4, 401)
    xx, yy = np.meshgrid(g, g)
    p = gm2.prob(np.stack([xx, yy], axis=-1))
    assert p.shape == (401, 401)
    assert p.sum() * (g[1] - g[0]) ** 2 == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("dim", [1, 2])
def test_gaussian_mixture_score_matches_finite_differences(dim):
    _, _, gm = make_gaussian_mixture(10, dim=dim, seed=0)
    x = np.random.default_rng(1).normal(size=(40, dim)) * 2
    eps = 1e-6
    numeric = np.zeros_like(x)
    for d in range(dim):
        step = np.zeros(dim)
        step[d] = eps
        numeric[:, d] = (gm.log_prob(x + step) - gm.log_prob(x - step)) / (2 * eps)
    np.testing.assert_allclose(gm.score(x), numeric, rtol=1e-5, atol=1e-6)


def test_gaussian_mixture_far_points_stay_finite():
    _, _, gm = make_gaussian_mixture(10, seed=0)
    far = np.array([[1e3, -1e3], [50.0, 0.0]])
    assert np.isfinite(gm.log_prob(far)).all()
    s = gm.score(far)
    assert np.isfinite(s).all()
    # Far away one component dominates: the score points back towards it, (μ - x)/σ².
    assert s[1, 0] < 0


def test_one_dimensional_points_keep_their_shape():
    _, _, gm = make_gaussian_mixture(10, dim=1, seed=0)
    x = np.linspace(-3, 3, 7)
    assert gm.log_prob(x).shape == (7,)
    assert gm.score(x).shape == (7,)
    np.testing.assert_allclose(gm.log_prob(x[:, None]), gm.log_prob(x))
    np.testing.assert_allclose(gm.score(x[:, None])[:, 0], gm.score(x))
    # The default 1-D mixture: means -2 and 2, std 0.5, symmetric, so the score at 0 is 0.
    assert gm.score(0.0) == pytest.approx(0.0, abs=1e-12)


def test_gaussian_mixture_samples_follow_the_mixture():
    X, y, gm = make_gaussian_mixture(
        20000, means=[[0.0, 0.0], [4.0, 0.0]], stds=[0.5, 1.0], weights=[0.25, 0.75], seed=3
    )
    assert X.dtype == np.float32 and y.dtype == np.int64 and X.shape == (20000, 2)
    assert np.mean(y == 1) == pytest.approx(0.75, abs=0.015)
    np.testing.assert_allclose(X[y == 0].std(axis=0), 0.5, atol=0.03)
    np.testing.assert_allclose(X[y == 1].mean(axis=0), [4.0, 0.0], atol=0.05)


def test_diffused_mixture_is_the_convolution():
    gm = GaussianMixture(means=[-2.0, 1.0], stds=[0.3, 0.6], weights=[0.4, 0.6])
    scale, noise_std = math.sqrt(0.7), math.sqrt(0.3)  # x_t = sqrt(ᾱ) x0 + sqrt(1 - ᾱ) ε
    diffused = gm.diffused(scale, noise_std)
    # Density of scale·X: p(x/scale)/scale; then convolve numerically with N(0, noise_std²).
    grid = np.linspace(-8, 8, 3201)
    h = grid[1] - grid[0]
    scaled = gm.prob(grid / scale) / scale
    kernel = np.exp(-(grid**2) / (2 * noise_std**2)) / math.sqrt(2 * math.pi * noise_std**2)
    conv = np.convolve(scaled, kernel, mode="same") * h
    np.testing.assert_allclose(conv[800:2400], diffused.prob(grid)[800:2400], atol=1e-6)


def test_gaussian_mixture_rejects_bad_parameters():
    with pytest.raises(ValueError, match="stds"):
        GaussianMixture(means=[[0.0, 0.0]], stds=[0.0], weights=[1.0])
    with pytest.raises(ValueError, match="weights"):
        GaussianMixture(means=[0.0, 1.0], stds=1.0, weights=[1.0, -1.0])
    gm = GaussianMixture(means=[[0.0, 0.0]], stds=1.0, weights=1.0)
    with pytest.raises(ValueError, match=r"\[\.\.\., 2\]"):
        gm.log_prob(np.zeros((4, 3)))


# ----------------------------------------------------------------------------- shape images
def _shape_features(images):
    """Translation- and size-free features of clean (noise-free) shape images, from each
    shape's bounding box: fill ratio, top-vs-bottom mass balance, share of filled box corners."""
    mask = images[:, 0] > 0
    n, size, _ = mask.shape
    rows, cols = mask.any(axis=2), mask.any(axis=1)
    top, bottom = rows.argmax(1), size - 1 - rows[:, ::-1].argmax(1)
    left, right = cols.argmax(1), size - 1 - cols[:, ::-1].argmax(1)
    area = mask.sum(axis=(1, 2))
    box = (bottom - top + 1) * (right - left + 1)
    row_index = np.arange(size)[None, :, None]
    middle = ((top + bottom) / 2)[:, None, None]
    balance = ((mask & (row_index < middle)).sum((1, 2)) - (mask & (row_index > middle)).sum((1, 2))) / area
    i = np.arange(n)
    corners = (
        mask[i, top, left].astype(int) + mask[i, top, right] + mask[i, bottom, left] + mask[i, bottom, right]
    ) / 4
    return np.stack([area / box, balance, corners], axis=1)


def test_shape_images_contract():
    images, labels = make_shapes(202, size=16, seed=0)
    assert images.shape == (202, 1, 16, 16) and images.dtype == np.float32
    assert labels.shape == (202,) and labels.dtype == np.int64
    assert images.min() >= 0.0 and images.max() <= 1.0
    counts = np.bincount(labels, minlength=4)
    assert len(counts) == 4 and counts.max() - counts.min() <= 1
    a, la = make_shapes(20, seed=5)
    b, lb = make_shapes(20, seed=5)
    c, _ = make_shapes(20, seed=6)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(la, lb)
    assert not np.array_equal(a, c)


def test_clean_shapes_sit_inside_the_frame_with_their_brightness():
    images, _ = make_shapes(200, size=20, noise=0.0, seed=1)
    values = images[images > 0]
    assert values.min() >= 0.6 - 1e-6 and values.max() <= 1.0
    assert (images.reshape(200, -1) > 0).sum(1).min() >= 9  # every image shows a shape
    # the shapes vary in position: the centres of mass spread over the frame
    grid = np.arange(20)
    mass = images[:, 0].sum(axis=(1, 2))
    cx = (images[:, 0].sum(axis=1) * grid).sum(1) / mass
    assert cx.max() - cx.min() > 5


def test_shape_classes_are_recognisable():
    images, labels = make_shapes(800, noise=0.0, seed=2)
    features = _shape_features(images)
    # Per-class feature means differ clearly (e.g. squares fill their box, triangles are
    # heavier at the bottom).
    means = np.stack([features[labels == k].mean(0) for k in range(4)])
    square, triangle = SHAPE_CLASSES.index("square"), SHAPE_CLASSES.index("triangle")
    assert means[square, 0] > 0.95
    assert means[triangle, 1] < -0.2
    # A nearest-centroid classifier on these features, fitted on half, is near perfect.
    train, test = slice(0, 400), slice(400, 800)
    centroids = np.stack([features[train][labels[train] == k].mean(0) for k in range(4)])
    d = ((features[test][:, None, :] - centroids[None]) ** 2).sum(-1)
    assert np.mean(d.argmin(1) == labels[test]) > 0.95


def test_shape_class_subsets_and_order():
    images, labels = make_shapes(60, classes=("cross", "circle"), noise=0.0, seed=3)
    assert set(labels.tolist()) == {0, 1}
    features = _shape_features(images)
    # label 0 is the cross here: its box corners are empty, like the circle's, but it fills less
    assert features[labels == 0, 0].mean() < features[labels == 1, 0].mean()


def test_noise_is_added_and_clipped():
    clean, _ = make_shapes(50, noise=0.0, seed=4)
    noisy, _ = make_shapes(50, noise=0.2, seed=4)
    assert (clean == 0).mean() > 0.4  # background is exactly 0 without noise
    assert (noisy[clean == 0] > 0).mean() > 0.3
    assert noisy.min() >= 0 and noisy.max() <= 1


# ----------------------------------------------------------------------------- batching
def test_batches_cover_every_index_once_per_epoch():
    X = np.arange(103, dtype=np.float32)[:, None] * np.ones((1, 2), dtype=np.float32)
    y = np.arange(103)
    seen = []
    sizes = []
    for xb, yb in batches(X, y, batch_size=10, seed=0):
        np.testing.assert_array_equal(xb[:, 0], yb)  # rows stay paired
        seen.extend(yb.tolist())
        sizes.append(len(yb))
    assert sorted(seen) == list(range(103))
    assert seen != list(range(103))  # shuffled
    assert sizes == [10] * 10 + [3]


def test_batches_without_labels_and_drop_last():
    X = np.arange(25)
    out = list(batches(X, batch_size=10, shuffle=False))
    np.testing.assert_array_equal(np.concatenate(out), X)
    dropped = list(batches(X, batch_size=10, drop_last=True, seed=1))
    assert [len(b) for b in dropped] == [10, 10]


def test_dataloader_reshuffles_every_epoch_reproducibly():
    X, y = np.arange(50), np.arange(50) * 10
    loader = DataLoader(X, y, batch_size=8, shuffle=True, seed=0)
    assert len(loader) == 7
    assert len(DataLoader(X, batch_size=8, drop_last=True)) == 6
    epoch1 = np.concatenate([xb for xb, _ in loader])
    epoch2 = np.concatenate([xb for xb, _ in loader])
    assert sorted(epoch1) == sorted(epoch2) == list(range(50))
    assert not np.array_equal(epoch1, epoch2)  # a fresh shuffle each epoch
    again = DataLoader(X, y, batch_size=8, shuffle=True, seed=0)
    np.testing.assert_array_equal(np.concatenate([xb for xb, _ in again]), epoch1)
    # seed=None: the engine's global generator decides, so manual_seed reproduces it
    engine.random.manual_seed(11)
    a = np.concatenate(list(DataLoader(X, batch_size=8, shuffle=True)))
    engine.random.manual_seed(11)
    b = np.concatenate(list(DataLoader(X, batch_size=8, shuffle=True)))
    np.testing.assert_array_equal(a, b)
    # as PyTorch: in order unless asked to shuffle, one sample per batch by default
    np.testing.assert_array_equal(np.concatenate(list(DataLoader(X, batch_size=8))), X)
    assert len(DataLoader(X)) == 50


def test_dataloader_reads_tensors_through_data():
    class DuckTensor:
        def __init__(self, values):
            self.data = np.asarray(values)

    (xb,) = [b for b in DataLoader(DuckTensor(np.ones((4, 3))), batch_size=4)]
    assert isinstance(xb, np.ndarray) and xb.shape == (4, 3)


def test_train_test_split():
    X = np.arange(40).reshape(20, 2)
    y = np.arange(20)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, seed=0)
    assert len(X_test) == 5 and len(X_train) == 15
    np.testing.assert_array_equal(X_train[:, 0] // 2, y_train)  # rows stay paired
    np.testing.assert_array_equal(X_test[:, 0] // 2, y_test)
    assert sorted(np.r_[y_train, y_test].tolist()) == list(range(20))
    assert len(train_test_split(X, y, test_size=3, seed=0)[1]) == 3
    again = train_test_split(X, y, test_size=0.25, seed=0)
    np.testing.assert_array_equal(again[3], y_test)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: make_moons(0), ["make_moons", "n_samples"]),
        (lambda: make_moons(10, noise=-0.1), ["noise", "-0.1"]),
        (lambda: make_circles(10, factor=1.5), ["factor", "1.5"]),
        (lambda: make_spirals(10, n_classes=1), ["n_classes"]),
        (lambda: make_swiss_roll(10, dim=4), ["dim", "4"]),
        (lambda: make_shapes(10, classes=("circle", "star")), ["star"]),
        (lambda: make_shapes(10, size=4), ["size"]),
        (lambda: make_gaussian_mixture(10, dim=3), ["dim", "3"]),
        (lambda: DataLoader(np.ones(5), np.ones(6)), ["(5,)", "(6,)"]),
        (lambda: DataLoader(np.ones(5), batch_size=0), ["batch_size"]),
        (lambda: train_test_split(np.ones(5), test_size=1.5), ["test_size"]),
        (lambda: train_test_split(np.ones(5), test_size=5), ["test_size"]),
    ],
)
def test_bad_arguments_raise_value_error(call, words):
    assert_raises_naming(call, words)


def test_bad_seed_raises_type_error():
    with pytest.raises(TypeError, match="seed"):
        make_moons(10, seed="zero")


def test_engine_tensors_are_accepted():
    import engine

    X, y = engine.tensor(np.arange(12.0).reshape(6, 2)), engine.tensor(np.arange(6))
    parts = train_test_split(X, y, test_size=2, seed=0)
    assert [type(p) for p in parts] == [np.ndarray] * 4 and len(parts[1]) == 2
    _, _, gm = make_gaussian_mixture(5, seed=0)
    points = np.zeros((3, 2))
    np.testing.assert_allclose(gm.log_prob(engine.tensor(points)), gm.log_prob(points))

"""The engine modules behind notebooks 01-04: activations_lab, graph, optim_lab, backprop_lab.

Each expected value is computed independently here (closed forms with math/NumPy, published
constants), never by the function under test.
"""

import math

import numpy as np
import pytest

import engine
import engine.functional as F
from engine.course import checkpoints
from engine.course.labs import losses

# ============================================================================ losses_lab

# The library's per-example losses, passed in where the notebook passes its own (whose agreement
# with these is tests/notebooks/test_02_losses.py's)
LIBRARY_LOSSES = {
    "mse": lambda d: lambda p, t: F.mse_loss(p, t, reduction="none"),
    "mae": lambda d: lambda p, t: F.l1_loss(p, t, reduction="none"),
    "huber": lambda d: lambda p, t: F.huber_loss(p, t, delta=d, reduction="none"),
    "pseudo_huber": lambda d: lambda p, t: F.pseudo_huber_loss(p, t, delta=d, reduction="none"),
}


@pytest.mark.parametrize("name", list(losses.REGRESSION_LOSSES))
@pytest.mark.parametrize("delta", [0.3, 1.0, 2.5])
def test_regression_loss_gradients_autograd_equals_formula(name, delta):
    e = np.linspace(-5, 5, 201) + 1e-3
    c = losses.regression_curves(LIBRARY_LOSSES[name](delta), name, e, delta)
    np.testing.assert_allclose(c.f, c.f_formula, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c.df_autograd, c.df_formula, rtol=1e-10, atol=1e-12)
    spec = losses.REGRESSION_LOSSES[name]
    h = 1e-6
    numeric = (spec["f"](e + h, delta) - spec["f"](e - h, delta)) / (2 * h)
    np.testing.assert_allclose(c.df_formula, numeric, rtol=1e-5, atol=1e-5)


def test_huber_values_and_bad_delta():
    huber = LIBRARY_LOSSES["huber"](1.0)
    c = losses.regression_curves(huber, "huber", np.array([0.5, 3.0, -3.0]), delta=1.0)
    np.testing.assert_allclose(c.f, [0.125, 2.5, 2.5])
    with pytest.raises(ValueError, match="delta must be positive"):
        losses.regression_curves(huber, "huber", np.zeros(2), delta=0.0)
    with pytest.raises(ValueError, match="unknown loss"):
        losses.regression_curves(huber, "hinge", np.zeros(2))


def test_cross_entropy_report_against_numpy():
    z = np.array([2.0, 0.5, -1.0, 0.0])
    for eps in (0.0, 0.1, 0.5):
        r = losses.cross_entropy_report(F.cross_entropy, z, 1, eps)
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        q = np.full(4, eps / 4)
        q[1] += 1 - eps
        assert r.loss == pytest.approx(-(q * np.log(p)).sum(), rel=1e-12)
        np.testing.assert_allclose(r.grad_autograd, p - q, atol=1e-12)
        np.testing.assert_allclose(r.target, q)
    with pytest.raises(ValueError, match=r"there are only 4 classes \(0 to 3\), so class 4 does not exist"):
        losses.cross_entropy_report(F.cross_entropy, z, 4)
    with pytest.raises(ValueError, match="target class must be an integer"):
        losses.cross_entropy_report(F.cross_entropy, z, 1.5)


def naive_ce(z, y):
    """Cross-entropy as written, −ln(e^{z_y} / Σ e^{z}), as a page passes it (in z's precision)."""
    e = np.exp(z)
    return -np.log(e[np.arange(len(z)), y] / e.sum(axis=-1))


def test_naive_cross_entropy_breaks_where_the_fused_one_does_not():
    scales = np.array([1.0, 10.0, 100.0, 1000.0])
    exact = 2 * scales + np.log1p(np.exp(-scales) + np.exp(-2 * scales))  # -z_2 + log(e^s + 1 + e^-s)
    naive32, fused32 = losses.naive_vs_fused(naive_ce, scales, "float32")
    np.testing.assert_allclose(fused32, exact, rtol=1e-6)
    assert naive32[0] == pytest.approx(exact[0], rel=1e-5)
    assert not np.isfinite(naive32[3])  # exp(1000) overflows in float32
    naive64, fused64 = losses.naive_vs_fused(naive_ce, scales, "float64")
    np.testing.assert_allclose(fused64, exact, rtol=1e-12)
    assert naive64[2] == pytest.approx(exact[2], rel=1e-9) and not np.isfinite(naive64[3])


def test_naive_cross_entropy_each_target_and_its_breakdown():
    scales = np.array([1.0, 10.0, 30.0])
    for target in (0, 1, 2):
        z = scales[:, None] * np.array([1.0, 0.0, -1.0])
        exact = -z[:, target] + scales + np.log1p(np.exp(-scales) + np.exp(-2 * scales))  # max logit is s
        naive, fused = losses.naive_vs_fused(naive_ce, scales, "float64", target)
        np.testing.assert_allclose(naive, exact, rtol=1e-12, atol=1e-15)  # class 0's loss ≈ e^{−s}: absolute
        np.testing.assert_allclose(fused, exact, rtol=1e-12, atol=1e-14)  # log of a sum ≥ 1: ~ε absolute
    ln_max32, ln_max64 = math.log(np.finfo(np.float32).max), math.log(np.finfo(np.float64).max)
    b = losses.naive_breakdown(naive_ce, "float32", 0)
    assert b.kind == "NaN" and ln_max32 < b.scale < 1.002 * ln_max32
    b = losses.naive_breakdown(naive_ce, "float64", 0)
    assert b.kind == "NaN" and ln_max64 < b.scale < 1.002 * ln_max64
    for dtype in ("float32", "float64"):
        under = -math.log(float(np.finfo(dtype).smallest_subnormal)) / 2
        b = losses.naive_breakdown(naive_ce, dtype, 2)
        assert b.kind == "+∞" and under < b.scale < 1.02 * under
    assert losses.naive_breakdown(naive_ce, "float64", 2, s_max=100.0) == losses.NaiveBreakdown(None, None)
    with pytest.raises(ValueError, match="target class must be 0, 1 or 2"):
        losses.naive_vs_fused(naive_ce, [1.0], "float32", 3)
    with pytest.raises(ValueError, match="dtype must be"):
        losses.naive_breakdown(naive_ce, "float16", 0)


def test_kl_divergence_properties():
    grid = np.linspace(-7, 7, 281)
    p = losses.bimodal_on_grid(grid, separation=5.0)
    q = losses.gaussian_on_grid(grid, 1.0, 1.0)
    kl_div = lambda log_p, log_q: F.kl_div(log_q, np.exp(log_p.numpy()), reduction="sum")  # noqa: E731  (the library's)
    fwd, rev = losses.kl_both_ways(kl_div, p, q)
    assert fwd == pytest.approx(np.sum(p * np.log(p / q)), rel=1e-10)
    assert rev == pytest.approx(np.sum(q * np.log(q / p)), rel=1e-10)
    assert fwd > 0 and rev > 0 and abs(fwd - rev) > 0.1
    assert losses.kl_both_ways(kl_div, p, p) == pytest.approx((0.0, 0.0), abs=1e-12)


def test_margin_gradients_show_mse_saturating():
    m = np.linspace(-10, 10, 41)
    g = losses.margin_gradients(
        lambda z, t: F.binary_cross_entropy_with_logits(z, t, reduction="none"),
        lambda p, t: F.mse_loss(p, t, reduction="none"),
        m,
    )
    for auto, formula in ((g.ce_autograd, g.ce_formula), (g.mse_autograd, g.mse_formula)):
        np.testing.assert_allclose(auto, formula, rtol=1e-10, atol=1e-15)
    s = 1 / (1 + np.exp(-m))
    np.testing.assert_allclose(g.ce_formula, 1 - s, atol=1e-15)
    assert g.ce_autograd[0] > 0.99 and g.mse_autograd[0] < 1e-3


def test_initial_loss_is_ln_k_for_small_logits():
    for k in (2, 10, 1000):
        value, ln_k = losses.initial_loss(k, 1e-3)
        assert ln_k == math.log(k) and value == pytest.approx(ln_k, abs=1e-3)
    big, ln_k = losses.initial_loss(10, 10.0)
    assert big > 3 * ln_k
    assert losses.initial_loss(10, 10.0, loss=lambda z, y: 2 * F.cross_entropy(z, y))[0] == pytest.approx(2 * big)
    with pytest.raises(ValueError, match="at least 2 classes"):
        losses.initial_loss(1, 1.0)


# ============================================================================ losses lab (02): line fits


@pytest.mark.parametrize("n_outliers, shift", [(3, 10.0), (6, -15.0), (10, 20.0)])
def test_best_line_is_the_minimum_of_each_loss(n_outliers, shift):
    x, y, _ = losses.make_line_data(n=30, n_outliers=n_outliers, outlier_shift=shift, seed=3)
    w, b = losses.best_line(x, y, "mse")
    assert (w, b) == pytest.approx(tuple(np.polyfit(x, y, 1)), abs=1e-10)
    for name, delta in (("huber", 0.5), ("pseudo_huber", 2.0)):
        w, b = losses.best_line(x, y, name, delta=delta)
        # stationary: the engine's autograd gradient of the mean loss vanishes at the line
        wt, bt = engine.tensor(np.array(w), requires_grad=True), engine.tensor(np.array(b), requires_grad=True)
        LIBRARY_LOSSES[name](delta)(wt * engine.tensor(x) + bt, engine.tensor(y)).mean().backward()
        assert abs(float(wt.grad)) < 1e-9 and abs(float(bt.grad)) < 1e-9, name
    w, b = losses.best_line(x, y, "mae")
    cost = lambda w, b: np.mean(np.abs(y - w * x - b))  # noqa: E731
    nearby = np.random.default_rng(0).normal(0.0, 0.05, (2000, 2)) + [w, b]  # convex: no better line nearby
    assert cost(w, b) <= np.mean(np.abs(y[None, :] - nearby[:, :1] * x[None, :] - nearby[:, 1:]), axis=1).min()
    with pytest.raises(ValueError, match="same x"):
        losses.best_line(np.ones(5), np.arange(5.0), "mae")
    with pytest.raises(ValueError, match="loss must be one of"):
        losses.best_line(x, y, "hinge")


def test_robust_lines_resist_outliers_and_the_data_refuses_too_many():
    x, y, _ = losses.make_line_data(n=30, n_outliers=5, outlier_shift=15.0, seed=0)
    slopes = {name: losses.best_line(x, y, name)[0] for name in losses.LINE_LOSSES}
    assert abs(slopes["mae"] - 1.5) < abs(slopes["mse"] - 1.5) / 3
    assert abs(slopes["huber"] - 1.5) < abs(slopes["mse"] - 1.5) / 2
    with pytest.raises(ValueError, match="n_outliers"):
        losses.make_line_data(n=10, n_outliers=6)


def test_constant_fit_names_the_statistic_of_each_likelihood():
    y = losses.skewed_targets("gamma", n=500, seed=3)
    for loss, tau, stat in (
        ("mse", 0.5, np.mean(y)),
        ("mae", 0.5, np.median(y)),
        ("pinball", 0.9, np.quantile(y, 0.9)),
    ):
        found = losses.constant_fit(y, loss, tau, fitted=stat)
        assert found.statistic == pytest.approx(stat, rel=1e-12) and found.is_a_minimiser
    assert np.isnan(losses.constant_fit(y, "mse", 0.5, None).fitted)  # not fitted: shown as a dash
    with pytest.raises(ValueError, match="loss must be one of"):
        losses.constant_fit(y, "huber", 0.5, 1.0)
    centres, density = losses.target_density(losses.skewed_targets("gaussian"), bins=20)
    assert len(centres) == 20 and np.sum(density * np.diff(centres).mean()) == pytest.approx(1.0, rel=1e-9)


def test_quantile_interval_is_where_the_pinball_loss_is_flat():
    y = np.array([3.0, 1.0, 4.0, 1.5, 9.0, 2.0])  # sorted: 1, 1.5, 2, 3, 4, 9
    assert losses.quantile_interval(y, 0.5) == (2.0, 3.0)  # n·τ = 3: flat between s_3 and s_4
    assert losses.quantile_interval(y, 0.25) == (1.5, 1.5)  # n·τ = 1.5: the single point s_2
    f = lambda c, t: np.mean(np.maximum(t * (y - c), (t - 1) * (y - c)))  # noqa: E731
    assert f(2.0, 0.5) == pytest.approx(f(2.7, 0.5)) and f(1.9, 0.5) > f(2.0, 0.5) < f(3.1, 0.5) + 0
    assert f(3.1, 0.5) > f(3.0, 0.5)


def test_multilabel_report_against_pytorch():
    torch = pytest.importorskip("torch")
    z = np.array([0.3, -1.2, 2.0, 0.5, -0.1])
    r = losses.multilabel_report(z, [1, 2])
    t = torch.tensor([0.0, 1.0, 1.0, 0.0, 0.0], dtype=torch.float64)
    zt = torch.tensor(z, requires_grad=True)
    bce = torch.nn.functional.binary_cross_entropy_with_logits(zt, t, reduction="sum")
    bce.backward()
    assert r.bce == pytest.approx(bce.item(), rel=1e-12)
    np.testing.assert_allclose(r.bce_grad, zt.grad.numpy(), rtol=1e-12)
    zt2 = torch.tensor(z[None, :], requires_grad=True)
    ce = torch.nn.functional.cross_entropy(zt2, (t / t.sum())[None, :])  # probability targets
    ce.backward()
    assert r.softmax_ce == pytest.approx(ce.item(), rel=1e-12)
    np.testing.assert_allclose(r.softmax_grad, zt2.grad.numpy()[0], rtol=1e-12, atol=1e-15)
    assert r.softmax_floor == pytest.approx(math.log(2))
    with pytest.raises(ValueError, match="at least one true label"):
        losses.multilabel_report(z, [])
    with pytest.raises(ValueError, match="only 5 labels"):
        losses.multilabel_report(z, [5])


def test_imbalanced_data_and_scores():
    x, y = losses.imbalanced_data(n=400, minority_share=0.1, seed=2)
    assert y.sum() == 40 and x.shape == (400, 2)
    w, b = np.array([[1.0, 1.0]]), -2.0
    run = losses.score_imbalanced(x, y, "weighted", w, b)
    pred = (x @ w.T + b).reshape(-1) > 0
    assert run.recall == pytest.approx(np.sum(pred & (y == 1)) / 40)
    assert run.accuracy == pytest.approx(np.mean(pred == (y == 1)))
    assert run.precision == pytest.approx(np.sum(pred & (y == 1)) / pred.sum())
    with pytest.raises(ValueError, match="minority_share"):
        losses.imbalanced_data(minority_share=0.0)


def test_with_dragged_outliers_keeps_inliers_in_order():
    x, y, out = losses.make_line_data(n=10, n_outliers=2, outlier_shift=5.0, seed=1)
    nx, ny, nout = losses.with_dragged_outliers(x, y, out, [[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]])
    np.testing.assert_array_equal(nx[:8], x[:8])
    np.testing.assert_array_equal(ny[:8], y[:8])
    np.testing.assert_array_equal(nx[8:], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(ny[8:], [1.0, 2.0, 3.0])
    assert nout.tolist() == [False] * 8 + [True] * 3
    nx, ny, nout = losses.with_dragged_outliers(x, y, out, np.empty((0, 2)))
    assert len(nx) == 8 and not nout.any()


def test_the_shipped_fits_cover_every_step_and_nothing_else():
    """The readers give the shipped fit at every setting the page's controls reach, and None
    elsewhere or when the page's code does not fit the checkpoint (state None)."""
    made = checkpoints.load(losses.DEFAULT_FITS_CHECKPOINT)
    ly = losses.skewed_targets("gamma", n=2000, seed=0)
    assert losses.shipped_constant(made, ly, "pinball", 0.05 * 3) == made["constants"]["gamma"]["pinball"]["0.15"]
    gaussian = losses.skewed_targets("gaussian", n=2000, seed=0)  # the radio's other choice: shipped too
    assert losses.shipped_constant(made, gaussian, "mae", 0.5) == made["constants"]["gaussian"]["mae"]
    assert len(made["constants"]["gaussian"]["pinball"]) == len(losses.LIKELIHOOD_TAUS)  # every τ step
    for missing in ((made, ly[1:], "mse", 0.5), (made, ly, "pinball", 0.33), (None, ly, "mse", 0.5)):
        assert losses.shipped_constant(*missing) is None
    xs, ys = losses.imbalanced_data(n=1000, minority_share=0.5, seed=0)  # every minority-share step
    for gamma in (0.0, 0.5 * 3, 5.0):  # and every γ step of the focal loss
        run = made["imbalance"]["0.5"][f"focal {gamma:g}"]
        assert losses.shipped_imbalance_run(made, xs, ys, "focal", gamma).b == run["b"]
    assert losses.shipped_imbalance_run(made, xs, ys, "focal", 0.7) is None
    assert losses.shipped_imbalance_run(None, xs, ys, "plain", 0.0) is None
    xi, yi = losses.imbalanced_data(n=1000, minority_share=0.05, seed=0)
    run = losses.shipped_imbalance_run(made, xi, yi, "weighted", 2.0)  # weighted BCE does not read γ
    shipped = made["imbalance"]["0.05"]["weighted"]
    assert run.recall == losses.score_imbalanced(xi, yi, "weighted", shipped["w"], shipped["b"]).recall
    np.testing.assert_allclose(
        losses.shipped_class_probabilities(made, losses.default_class_labels(), 3), made["class_probabilities"], rtol=0
    )
    assert losses.shipped_class_probabilities(made, losses.default_class_labels()[1:], 3) is None


def test_default_kl_fits_read_from_the_checkpoint():
    state = checkpoints.load(losses.KL_CHECKPOINT)
    fits = losses.kl_fits(state)
    for direction in ("forward", "reverse"):
        assert fits[direction][:2] == (state[direction]["mu"], state[direction]["sigma"])
        assert len(fits[direction][2]) == losses.KL_STEPS
    # the notebook shows them while its sliders hold the defaults (a slider's 0.9999999999999999 too)
    assert losses.is_default_kl({"separation": 5.0, "mu0": 0.3 * 3 + 0.1, "sigma0": 1})
    assert not losses.is_default_kl({"separation": 5.0, "mu0": 0.0, "sigma0": 1.0})
    with pytest.raises(ValueError, match="unknown settings \\['mu'\\]"):
        losses.is_default_kl({"mu": 1.0})


def test_noisy_line_and_the_one_variance_fit():
    x, y = losses.noisy_line(0.5)
    x0, y0 = losses.noisy_line(0.0)
    np.testing.assert_array_equal(x, x0)  # the same draws: only the spread changes with g
    np.testing.assert_allclose((y - (1.5 * x + 0.5)) / (y0 - (1.5 * x + 0.5)), np.exp(0.5 * x), rtol=1e-12)
    with pytest.raises(ValueError, match="growth g must be one of"):
        losses.noisy_line(0.3)
    weights = np.linspace(0.5, 3.0, len(x))
    w, b = losses.weighted_line(x, y, weights)
    assert (w, b) == pytest.approx(tuple(np.polyfit(x, y, 1, w=np.sqrt(weights))), rel=1e-10)
    w, b, sigma = losses.constant_noise_fit(x, y)
    assert (w, b) == pytest.approx(tuple(np.polyfit(x, y, 1)), rel=1e-10)
    assert sigma == pytest.approx(np.std(y - (w * x + b)), rel=1e-12)  # the residuals' mean is 0
    assert losses.band_coverage([0.5, 0.5, 1.5, 1.5], [0.0, 3.0, 0.0, 1.0], 0.0, 1.0) == (0.5, 1.0)


def test_noise_fits_state_keeps_theta_every_few_steps_at_every_growth():
    def fit_noise_model(x, y):  # a stand-in: its own step count in every row
        return np.arange(losses.NOISE_STEPS + 1)[:, None] * np.ones(4)

    state = losses.noise_fits_state(fit_noise_model)
    assert sorted(state) == sorted(f"{g:g}" for g in losses.NOISE_GROWTHS)
    trail = losses.shipped_noise_trail(state, 0.25 * 3)
    assert trail.shape == (losses.NOISE_STEPS // losses.NOISE_EVERY + 1, 4) and trail[-1, 0] == losses.NOISE_STEPS
    assert losses.shipped_noise_trail(None, 0.5) is None


def test_margin_losses_by_formula_and_through_the_given_losses():
    def hinge(z, y):
        return F.relu(1 - (2 * y - 1) * z)

    def bce(z, y):
        return -(y * F.logsigmoid(z) + (1 - y) * F.logsigmoid(-z))

    m = np.array([-2.0, 0.0, 0.5, 1.5, 5.0])
    r = losses.margin_losses(hinge, bce, m)
    np.testing.assert_allclose(r.hinge, np.maximum(0, 1 - m), rtol=1e-15)
    np.testing.assert_allclose(r.logistic, np.log1p(np.exp(-m)), rtol=1e-12)
    np.testing.assert_array_equal(r.hinge_autograd, [-1, -1, -1, 0, 0])
    np.testing.assert_array_equal(r.hinge_formula, r.hinge_autograd)
    np.testing.assert_allclose(r.logistic_autograd, r.logistic_formula, rtol=1e-12)
    np.testing.assert_array_equal(r.zero_one, [1, 1, 0, 0, 0])


def test_calibration_data_softmax_and_the_shipped_state():
    data = losses.calibration_data(5)
    assert {k: (v[0].shape, v[1].shape) for k, v in data.items()} == {
        "train": ((100, 7), (100,)),
        "validation": ((500, 7), (500,)),
        "test": ((2000, 7), (2000,)),
    }
    x, y = data["test"]
    for k, centre in enumerate(losses.CALIBRATION_CENTRES):  # the first two features hold the class
        np.testing.assert_allclose(x[y == k, :2].mean(axis=0), centre, atol=0.1)
    assert abs(x[:, 2:].mean()) < 0.05 and np.std(x[:, 2:]) == pytest.approx(1, abs=0.05)
    with pytest.raises(ValueError, match="noise_dims must be a whole number"):
        losses.calibration_data(2.5)
    z = np.array([[1000.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(losses.softmax_probabilities(z)[1], np.full(3, 1 / 3), rtol=1e-15)
    np.testing.assert_allclose(
        losses.softmax_probabilities(z, 2.0)[0], F.softmax(engine.tensor(z / 2), dim=-1).numpy()[0]
    )

    def train(x, y):  # stand-ins that record what they were given
        return np.full((x.shape[1], 3), float(len(y))), np.zeros(3)

    state = losses.calibration_state(train, lambda z, y: float(len(y)))
    assert sorted(state, key=int) == [str(d) for d in losses.CALIBRATION_NOISE_DIMS]
    weights, _, temperature = losses.shipped_calibration(state, 20)
    assert weights.shape == (22, 3) and weights[0, 0] == 100 and temperature == 500  # train, then validation
    assert losses.shipped_calibration(None, 20) is None


def test_outlier_pucks_are_draggable_points_made_without_drawing_again():
    """The sliders' pucks are widgets.draggable_points over the count's background, drawn once:
    the same state and test values as a widget made over a background drawn again."""
    from engine.course import widgets

    x, y = [-1.0, 0.5, 2.0], [4.0, -2.0, 0.0]
    fast = losses.outlier_pucks(3, x, y)
    full = widgets.draggable_points(losses.outlier_background(3), x, y)
    assert type(fast) is type(full) and type(fast.widget).__name__ == type(full.widget).__name__ == "ChartPuck"
    assert fast.widget is not losses.outlier_pucks(3, x, y).widget  # a new widget at each move
    assert fast.value == full.value
    assert fast.test_values == full.test_values

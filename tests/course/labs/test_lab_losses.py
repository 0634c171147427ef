"""The engine modules behind notebooks 01-04: activations_lab, graph, optim_lab, backprop_lab.

Each expected value is computed independently here (closed forms with math/NumPy, published
constants), never by the function under test.
"""

import math
import numpy as np
import pytest
import engine
from engine.course.labs import activations as act
from engine.course.labs import backprop as backprop_lab
from engine.course.labs import losses
from engine.course import checkpoints
from engine.course import graph as graphs
from engine.course.labs import optimizers as olab


# ============================================================================ losses_lab


@pytest.mark.parametrize("name", list(losses.REGRESSION_LOSSES))
@pytest.mark.parametrize("delta", [0.3, 1.0, 2.5])
def test_regression_loss_gradients_autograd_equals_formula(name, delta):
    e = np.linspace(-5, 5, 201) + 1e-3
    c = losses.regression_curves(name, e, delta)
    np.testing.assert_allclose(c.f, c.f_formula, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c.df_autograd, c.df_formula, rtol=1e-10, atol=1e-12)
    spec = losses.REGRESSION_LOSSES[name]
    h = 1e-6
    numeric = (spec["f"](e + h, delta) - spec["f"](e - h, delta)) / (2 * h)
    np.testing.assert_allclose(c.df_formula, numeric, rtol=1e-5, atol=1e-5)


def test_huber_values_and_bad_delta():
    c = losses.regression_curves("huber", np.array([0.5, 3.0, -3.0]), delta=1.0)
    np.testing.assert_allclose(c.f, [0.125, 2.5, 2.5])
    with pytest.raises(ValueError, match="delta must be positive"):
        losses.regression_curves("huber", np.zeros(2), delta=0.0)
    with pytest.raises(ValueError, match="unknown loss"):
        losses.regression_curves("hinge", np.zeros(2))


def test_cross_entropy_report_against_numpy():
    z = np.array([2.0, 0.5, -1.0, 0.0])
    for eps in (0.0, 0.1, 0.5):
        r = losses.cross_entropy_report(z, 1, eps)
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        q = np.full(4, eps / 4)
        q[1] += 1 - eps
        assert r.loss == pytest.approx(-(q * np.log(p)).sum(), rel=1e-12)
        np.testing.assert_allclose(r.grad_autograd, p - q, atol=1e-12)
        np.testing.assert_allclose(r.target, q)
    with pytest.raises(ValueError, match=r"there are only 4 classes \(0 to 3\), so class 4 does not exist"):
        losses.cross_entropy_report(z, 4)
    with pytest.raises(ValueError, match="target class must be an integer"):
        losses.cross_entropy_report(z, 1.5)


def test_naive_cross_entropy_breaks_where_the_fused_one_does_not():
    scales = np.array([1.0, 10.0, 100.0, 1000.0])
    exact = 2 * scales + np.log1p(np.exp(-scales) + np.exp(-2 * scales))  # -z_2 + log(e^s + 1 + e^-s)
    naive32, fused32 = losses.naive_vs_fused(scales, "float32")
    np.testing.assert_allclose(fused32, exact, rtol=1e-6)
    assert naive32[0] == pytest.approx(exact[0], rel=1e-5)
    assert not np.isfinite(naive32[3])  # exp(1000) overflows in float32
    naive64, fused64 = losses.naive_vs_fused(scales, "float64")
    np.testing.assert_allclose(fused64, exact, rtol=1e-12)
    assert naive64[2] == pytest.approx(exact[2], rel=1e-9) and not np.isfinite(naive64[3])


def test_naive_cross_entropy_each_target_and_its_breakdown():
    scales = np.array([1.0, 10.0, 30.0])
    for target in (0, 1, 2):
        z = scales[:, None] * np.array([1.0, 0.0, -1.0])
        exact = -z[:, target] + scales + np.log1p(np.exp(-scales) + np.exp(-2 * scales))  # max logit is s
        naive, fused = losses.naive_vs_fused(scales, "float64", target)
        np.testing.assert_allclose(naive, exact, rtol=1e-12, atol=1e-15)  # class 0's loss ≈ e^{−s}: absolute
        np.testing.assert_allclose(fused, exact, rtol=1e-12, atol=1e-14)  # log of a sum ≥ 1: ~ε absolute
    ln_max32, ln_max64 = math.log(np.finfo(np.float32).max), math.log(np.finfo(np.float64).max)
    b = losses.naive_breakdown("float32", 0)
    assert b.kind == "NaN" and ln_max32 < b.scale < 1.002 * ln_max32
    b = losses.naive_breakdown("float64", 0)
    assert b.kind == "NaN" and ln_max64 < b.scale < 1.002 * ln_max64
    for dtype in ("float32", "float64"):
        under = -math.log(float(np.finfo(dtype).smallest_subnormal)) / 2
        b = losses.naive_breakdown(dtype, 2)
        assert b.kind == "+∞" and under < b.scale < 1.02 * under
    assert losses.naive_breakdown("float64", 2, s_max=100.0) == losses.NaiveBreakdown(None, None)
    with pytest.raises(ValueError, match="target class must be 0, 1 or 2"):
        losses.naive_vs_fused([1.0], "float32", 3)
    with pytest.raises(ValueError, match="dtype must be"):
        losses.naive_breakdown("float16", 0)


def test_kl_divergence_properties():
    grid = np.linspace(-7, 7, 281)
    p = losses.bimodal_on_grid(grid, separation=5.0)
    q = losses.gaussian_on_grid(grid, 1.0, 1.0)
    fwd, rev = losses.kl_both_ways(p, q)
    assert fwd == pytest.approx(np.sum(p * np.log(p / q)), rel=1e-10)
    assert rev == pytest.approx(np.sum(q * np.log(q / p)), rel=1e-10)
    assert fwd > 0 and rev > 0 and abs(fwd - rev) > 0.1
    assert losses.kl(p, p) == pytest.approx(0.0, abs=1e-12)


def test_forward_kl_matches_moments_and_reverse_kl_picks_a_mode():
    grid = np.linspace(-12, 12, 481)  # wide enough that q is not cut off at the edges
    p = losses.bimodal_on_grid(grid, separation=5.0)
    mean = np.sum(p * grid)
    std = math.sqrt(np.sum(p * (grid - mean) ** 2))  # forward KL to a Gaussian = moment matching
    mu, sigma, hist = losses.fit_gaussian_kl(p, grid, "forward", mu0=1.0, sigma0=1.0, steps=300)
    assert mu == pytest.approx(mean, abs=0.02) and sigma == pytest.approx(std, rel=0.02)
    assert hist[-1] < hist[0]
    mu, sigma, _ = losses.fit_gaussian_kl(p, grid, "reverse", mu0=1.0, sigma0=1.0, steps=300)
    assert mu == pytest.approx(2.5, abs=0.1) and sigma == pytest.approx(0.7, abs=0.1)


def test_margin_gradients_show_mse_saturating():
    m = np.linspace(-10, 10, 41)
    g = losses.margin_gradients(m)
    for auto, formula in ((g.ce_autograd, g.ce_formula), (g.mse_autograd, g.mse_formula)):
        np.testing.assert_allclose(auto, formula, rtol=1e-10, atol=1e-15)
    s = 1 / (1 + np.exp(-m))
    np.testing.assert_allclose(g.ce_formula, 1 - s, atol=1e-15)
    assert g.ce_autograd[0] > 0.99 and g.mse_autograd[0] < 1e-3


def test_cross_entropy_trains_a_wrong_sigmoid_faster_than_mse():
    x, y = losses.sigmoid_classifier_data(100, seed=0)
    ce = losses.train_sigmoid_classifier(x, y, "cross_entropy", w0=-4.0, lr=0.3, steps=100)
    mse = losses.train_sigmoid_classifier(x, y, "mse", w0=-4.0, lr=0.3, steps=100)
    z = -4.0 * x
    assert ce.loss[0] == pytest.approx(np.mean(np.logaddexp(0, -z) * y + np.logaddexp(0, z) * (1 - y)), rel=1e-10)
    assert mse.loss[0] == pytest.approx(np.mean((1 / (1 + np.exp(-z)) - y) ** 2), rel=1e-10)
    assert ce.accuracy[20] > 0.95 and mse.accuracy[20] < 0.5
    assert ce.steps_to(0.95) == int(np.flatnonzero(ce.accuracy >= 0.95)[0]) and mse.steps_to(1.01) is None
    with pytest.raises(ValueError, match="loss must be"):
        losses.train_sigmoid_classifier(x, y, "hinge", w0=0.0)


def test_initial_loss_is_ln_k_for_small_logits():
    for k in (2, 10, 1000):
        value, ln_k = losses.initial_loss(k, 1e-3)
        assert ln_k == math.log(k) and value == pytest.approx(ln_k, abs=1e-3)
    big, ln_k = losses.initial_loss(10, 10.0)
    assert big > 3 * ln_k
    with pytest.raises(ValueError, match="at least 2 classes"):
        losses.initial_loss(1, 1.0)


# ============================================================================ losses lab (02): line fits

def test_fit_line_mse_equals_least_squares():
    x, y, _ = losses.make_line_data(n=30, n_outliers=3, outlier_shift=8.0, seed=1)
    w, b, hist = losses.fit_line(x, y, "mse", steps=400)
    w_ls, b_ls = np.polyfit(x, y, 1)
    assert w == pytest.approx(w_ls, abs=1e-4) and b == pytest.approx(b_ls, abs=1e-4)
    assert hist[-1] <= hist[0]


def test_fit_line_mae_reaches_the_least_absolute_deviation_optimum():
    x, y, _ = losses.make_line_data(n=30, n_outliers=5, outlier_shift=10.0, seed=2)
    w, b, _ = losses.fit_line(x, y, "mae", steps=400)
    # An L1 line fit has an optimum through two of the points: try every pair.
    i, j = np.triu_indices(len(x), 1)
    ws = (y[j] - y[i]) / (x[j] - x[i])
    bs = y[i] - ws * x[i]
    best = np.min(np.mean(np.abs(y[None, :] - ws[:, None] * x[None, :] - bs[:, None]), axis=1))
    assert np.mean(np.abs(y - w * x - b)) == pytest.approx(best, abs=2e-3)


@pytest.mark.parametrize("n_outliers, shift", [(3, 10.0), (6, -15.0), (10, 20.0)])
def test_best_line_is_the_minimum_adam_reaches(n_outliers, shift):
    x, y, _ = losses.make_line_data(n=30, n_outliers=n_outliers, outlier_shift=shift, seed=3)
    w, b = losses.best_line(x, y, "mse")
    assert (w, b) == pytest.approx(tuple(np.polyfit(x, y, 1)), abs=1e-10)
    for name, delta in (("huber", 0.5), ("pseudo_huber", 2.0)):
        w, b = losses.best_line(x, y, name, delta=delta)
        # stationary: the engine's autograd gradient of the mean loss vanishes at the line
        wt, bt = engine.tensor(np.array(w), requires_grad=True), engine.tensor(np.array(b), requires_grad=True)
        losses._regression_loss(name, wt * engine.tensor(x) + bt, engine.tensor(y), delta).backward()
        assert abs(float(wt.grad)) < 1e-9 and abs(float(bt.grad)) < 1e-9, name
        assert (w, b) == pytest.approx(losses.fit_line(x, y, name, delta=delta, steps=300)[:2], abs=1e-4)
    w, b = losses.best_line(x, y, "mae")
    cost = lambda w, b: np.mean(np.abs(y - w * x - b))  # noqa: E731
    adam = losses.fit_line(x, y, "mae", steps=300)
    assert (w, b) == pytest.approx(adam[:2], abs=2e-3) and cost(w, b) <= cost(*adam[:2]) + 1e-12
    nearby = np.random.default_rng(0).normal(0.0, 0.05, (2000, 2)) + [w, b]  # convex: no better line nearby
    assert cost(w, b) <= np.mean(np.abs(y[None, :] - nearby[:, :1] * x[None, :] - nearby[:, 1:]), axis=1).min()
    with pytest.raises(ValueError, match="same x"):
        losses.best_line(np.ones(5), np.arange(5.0), "mae")
    with pytest.raises(ValueError, match="loss must be one of"):
        losses.best_line(x, y, "hinge")


@pytest.mark.parametrize("delta", [min(losses.LINE_DELTAS), 1.0, max(losses.LINE_DELTAS)])
def test_adam_reaches_the_drawn_lines_on_the_default_data(delta):
    """The notebook draws best_line and says the engine's Adam (300 steps) reaches the same lines
    to about 10⁻³: on its default data, at the δ slider's ends and its default."""
    x, y, _ = losses.default_line_data()
    for name in losses.LINE_LOSSES:
        adam = losses.fit_line(x, y, name, delta=delta, steps=losses.LINE_STEPS)[:2]
        assert tuple(adam) == pytest.approx(losses.best_line(x, y, name, delta=delta), abs=1e-3), name


def test_huber_fit_is_stationary_and_robust_losses_resist_outliers():
    x, y, out = losses.make_line_data(n=30, n_outliers=5, outlier_shift=15.0, seed=0)
    w, b, _ = losses.fit_line(x, y, "huber", delta=1.0, steps=400)
    e = w * x + b - y
    g = np.clip(e, -1.0, 1.0)  # dHuber/de
    assert abs(np.mean(g * x)) < 1e-3 and abs(np.mean(g)) < 1e-3
    slopes = {name: losses.fit_line(x, y, name, steps=300)[0] for name in losses.LINE_LOSSES}
    assert abs(slopes["mae"] - 1.5) < abs(slopes["mse"] - 1.5) / 3
    assert abs(slopes["huber"] - 1.5) < abs(slopes["mse"] - 1.5) / 2
    with pytest.raises(ValueError, match="n_outliers"):
        losses.make_line_data(n=10, n_outliers=6)




def test_pinball_loss_value_and_gradient():
    y = np.array([0.5, 1.0, 3.0, -2.0])
    for tau in (0.1, 0.5, 0.9):
        c = engine.tensor(np.array([0.7]), requires_grad=True)
        loss = losses.pinball_loss(c, y, tau)
        e = y - 0.7
        assert float(loss.data) == pytest.approx(np.mean(np.maximum(tau * e, (tau - 1) * e)), rel=1e-12)
        loss.backward()
        h = 1e-6
        f = lambda v: np.mean(np.maximum(tau * (y - v), (tau - 1) * (y - v)))  # noqa: E731
        assert c.grad[0] == pytest.approx((f(0.7 + h) - f(0.7 - h)) / (2 * h), rel=1e-6)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        losses.pinball_loss(engine.tensor([0.0]), y, 1.0)


@pytest.mark.parametrize("loss, tau", [("mse", 0.5), ("mae", 0.5), ("pinball", 0.25), ("pinball", 0.9)])
def test_constant_fit_finds_the_statistic_of_its_likelihood(loss, tau):
    y = losses.skewed_targets("gamma", n=500, seed=3)
    fit = losses.constant_fit(y, loss, tau=tau)
    stat = {"mse": np.mean(y), "mae": np.median(y), "pinball": np.quantile(y, tau)}[loss]
    assert fit.statistic == pytest.approx(stat, rel=1e-12) and fit.fitted == pytest.approx(stat, abs=2e-2)
    assert fit.is_a_minimiser
    # brute force: the loss at the fit is the smallest the sample allows (its minimum over all sample points)
    t = {"mse": None, "mae": 0.5, "pinball": tau}[loss]
    objective = (lambda c: np.mean((y - c) ** 2)) if t is None else \
        (lambda c: np.mean(np.maximum(t * (y - c), (t - 1) * (y - c))))
    best = min(objective(c) for c in (np.append(y, np.mean(y))))
    assert objective(fit.fitted) == pytest.approx(best, rel=1e-6)
    with pytest.raises(ValueError, match="loss must be one of"):
        losses.constant_fit(y, "huber")


def test_fit_class_probabilities_are_the_frequencies():
    labels = losses.sample_labels((0.2, 0.5, 0.3), n=400, seed=1)
    np.testing.assert_allclose(losses.fit_class_probabilities(labels, 3), np.bincount(labels) / 400, atol=1e-3)
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


def test_focal_loss_against_its_formula_and_bce_at_gamma_zero():
    z = np.array([-2.0, -0.3, 0.0, 1.1, 3.0])
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    s = 1 / (1 + np.exp(-z))
    pt = np.where(y == 1, s, 1 - s)
    for gamma in (0.0, 0.5, 2.0):
        zt = engine.tensor(z, requires_grad=True)
        loss = losses.focal_loss(zt, y, gamma)
        assert float(loss.data) == pytest.approx(np.mean(-((1 - pt) ** gamma) * np.log(pt)), rel=1e-12)
        loss.backward()
        h = 1e-6
        for i in range(len(z)):
            zp, zm = z.copy(), z.copy()
            zp[i] += h
            zm[i] -= h
            f = lambda v: float(losses.focal_loss(engine.tensor(v), y, gamma).data)  # noqa: E731
            assert zt.grad[i] == pytest.approx((f(zp) - f(zm)) / (2 * h), rel=1e-5, abs=1e-9)
    bce = float(engine.functional.binary_cross_entropy_with_logits(engine.tensor(z), y).data)
    assert float(losses.focal_loss(engine.tensor(z), y, 0.0).data) == pytest.approx(bce, rel=1e-12)
    with pytest.raises(ValueError, match="gamma must be"):
        losses.focal_loss(engine.tensor(z), y, -1.0)


def test_train_imbalanced_scores_and_errors():
    x, y = losses.imbalanced_data(n=400, minority_share=0.1, seed=2)
    assert y.sum() == 40 and x.shape == (400, 2)
    run = losses.train_imbalanced(x, y, "weighted", steps=50)
    pred = (x @ run.w.T + run.b).reshape(-1) > 0
    assert run.recall == pytest.approx(np.sum(pred & (y == 1)) / 40)
    assert run.accuracy == pytest.approx(np.mean(pred == (y == 1)))
    with pytest.raises(ValueError, match="method must be one of"):
        losses.train_imbalanced(x, y, "smote")
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


def test_default_fits_are_shipped_and_other_inputs_train(monkeypatch):
    """At the defaults the notebook's fit functions read the shipped checkpoint (no training), which
    holds what the training functions make there (tests/course/test_checkpoints.py); any other
    input trains."""
    made = losses._shipped()
    ly = losses.skewed_targets("gamma", n=2000, seed=0)
    xi, yi = losses.imbalanced_data(n=1000, minority_share=0.05, seed=0)
    trained = {"constant": losses.fit_constant(ly[1:], "pinball", tau=0.9),
               "focal": losses.train_imbalanced(xi, yi, "focal", gamma=1.0)}
    for name in ("fit_constant", "train_imbalanced", "fit_class_probabilities"):
        monkeypatch.setattr(losses, name, lambda *a, _n=name, **k: pytest.fail(f"{_n} trained at the defaults"))
    assert losses.likelihood_fit(ly, "pinball", 0.05 * 3).fitted == made["constants"]["gamma"]["pinball"]["0.15"]
    gaussian = losses.skewed_targets("gaussian", n=2000, seed=0)  # the radio's other choice: shipped too
    assert losses.likelihood_fit(gaussian, "mae", 0.5).fitted == made["constants"]["gaussian"]["mae"]
    xs, ys = losses.imbalanced_data(n=1000, minority_share=0.5, seed=0)  # every minority-share step
    assert losses.imbalance_run(xs, ys, "focal", gamma=2.0).b == made["imbalance"]["0.5"]["focal"]["b"]
    assert len(made["constants"]["gaussian"]["pinball"]) == 19  # every τ step
    np.testing.assert_allclose(losses.class_probabilities(losses.default_class_labels(), 3),
                               made["class_probabilities"], rtol=1e-12)
    run = losses.imbalance_run(xi, yi, "weighted", gamma=0.0)  # weighted BCE does not read γ
    shipped = made["imbalance"]["0.05"]["weighted"]
    assert run.recall == losses.score_imbalanced(xi, yi, "weighted", shipped["w"], shipped["b"]).recall
    monkeypatch.undo()
    assert losses.likelihood_fit(ly[1:], "pinball", 0.9).fitted == pytest.approx(trained["constant"])
    assert losses.imbalance_run(xi, yi, "focal", gamma=1.0).recall == trained["focal"].recall


def test_default_kl_fits_are_the_fits_from_the_default_start():
    shipped = losses.default_kl_fits()
    made = losses.fit_q_both_ways(**losses.KL_DEFAULT)
    for direction in ("forward", "reverse"):
        assert shipped[direction][:2] == pytest.approx(made[direction][:2], rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(shipped[direction][2], made[direction][2], rtol=1e-9)
    # the notebook shows them while its sliders hold the defaults (a slider's 0.9999999999999999 too)
    assert losses.is_default_kl({"separation": 5.0, "mu0": 0.3 * 3 + 0.1, "sigma0": 1})
    assert not losses.is_default_kl({"separation": 5.0, "mu0": 0.0, "sigma0": 1.0})
    with pytest.raises(ValueError, match="unknown settings \\['mu'\\]"):
        losses.is_default_kl({"mu": 1.0})

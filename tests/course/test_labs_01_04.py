"""The engine modules behind notebooks 01-04: activations_lab, graph, optim_lab, backprop_lab.

Each expected value is computed independently here (closed forms with math/NumPy, published
constants), never by the function under test.
"""

import math

import numpy as np
import pytest

import engine
from engine.course.labs import activations as act


# ============================================================================ activations_lab

def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("name", list(act.ACTIVATIONS))
def test_autograd_derivative_matches_the_formula(name):
    x = np.linspace(-6, 6, 241) + 1e-3  # off the kinks of ReLU-like functions
    c = act.evaluate(name, x, slope=0.2, alpha=1.5)
    np.testing.assert_allclose(c.f, c.f_formula, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(c.df_autograd, c.df_formula, rtol=1e-7, atol=1e-10)
    # and the formula against a central difference of the formula itself (catches a wrong formula)
    h = 1e-5
    spec = act.ACTIVATIONS[name]
    kw = {k: v for k, v in {"slope": 0.2, "alpha": 1.5}.items() if k in spec["params"]}
    numeric = (spec["f"](x + h, **kw) - spec["f"](x - h, **kw)) / (2 * h)
    np.testing.assert_allclose(c.df_formula, numeric, rtol=1e-5, atol=1e-6)


def test_closed_forms_match_independent_definitions():
    x = np.linspace(-5, 5, 101)
    f = act.ACTIVATIONS
    np.testing.assert_allclose(f["gelu"]["f"](x), [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x], atol=1e-12)
    np.testing.assert_allclose(f["silu"]["f"](x), x / (1 + np.exp(-x)), atol=1e-12)
    np.testing.assert_allclose(f["softplus"]["f"](x), np.log1p(np.exp(x)), atol=1e-12)
    np.testing.assert_allclose(f["tanh"]["f"](x), (np.exp(2 * x) - 1) / (np.exp(2 * x) + 1), atol=1e-12)


def test_gelu_minimum_found_by_bisection_is_where_the_derivative_vanishes():
    x_star, f_star = act.activation_minimum("gelu")
    cdf = 0.5 * (1 + math.erf(x_star / math.sqrt(2)))
    pdf = math.exp(-x_star**2 / 2) / math.sqrt(2 * math.pi)
    assert abs(cdf + x_star * pdf) < 1e-12  # Φ(x) + xφ(x) = 0
    assert f_star == pytest.approx(x_star * cdf, abs=1e-14)
    assert f_star == pytest.approx(-0.16997, abs=5e-5) and x_star == pytest.approx(-0.75179, abs=5e-5)


def test_silu_minimum_is_minus_one_minus_lambert_w_of_one_over_e():
    # 1 + x(1 − σ(x)) = 0 gives x* = −1 − W(1/e), and then f(x*) = x* + 1.
    w = 0.5  # solve w e^w = 1/e by Newton
    for _ in range(50):
        w -= (w * math.exp(w) - math.exp(-1)) / (math.exp(w) * (1 + w))
    x_star, f_star = act.activation_minimum("silu")
    assert x_star == pytest.approx(-1 - w, abs=1e-12)
    assert f_star == pytest.approx(-w, abs=1e-12)


def test_monotone_activations_have_no_interior_minimum():
    for name in ("relu", "leaky_relu", "sigmoid", "tanh", "softplus", "elu"):
        assert act.activation_minimum(name) is None


@pytest.mark.parametrize("name, params, text", [
    ("relu", {}, "[0, ∞)"), ("leaky_relu", {"slope": 0.1}, "(−∞, ∞)"), ("sigmoid", {}, "(0, 1)"),
    ("tanh", {}, "(−1, 1)"), ("softplus", {}, "(0, ∞)"), ("elu", {"alpha": 2.0}, "(−2, ∞)"),
    ("gelu", {}, "[−0.17, ∞)"), ("silu", {}, "[−0.278, ∞)"), ("swiglu", {}, "(0, ∞)"),
])
def test_output_ranges_found_numerically(name, params, text):
    assert act.output_range(name, **params).text() == text


def test_gelu_tanh_approximation_error_is_below_five_ten_thousandths():
    x = np.linspace(-6, 6, 2001)
    err = act.gelu_approximation_error(x)
    exact = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    approx = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(err, approx - exact, atol=1e-12)
    assert 4e-4 < np.abs(err).max() < 5e-4


def test_derivative_peaks():
    assert act.derivative_peak("sigmoid") == pytest.approx(0.25, abs=1e-6)
    assert act.derivative_peak("tanh") == pytest.approx(1.0, abs=1e-6)
    assert act.derivative_peak("gelu") == pytest.approx(1.1289, abs=2e-4)
    assert act.derivative_peak("swiglu") == math.inf


def test_softmax_with_temperature_against_numpy():
    z = np.array([2.0, 1.0, 0.1, -1.0])
    for t in (0.05, 0.5, 1.0, 10.0):
        r = act.softmax_with_temperature(z, t)
        e = np.exp((z - z.max()) / t)
        p = e / e.sum()
        np.testing.assert_allclose(r.probs, p, rtol=1e-12, atol=1e-300)
        assert r.entropy == pytest.approx(-(p[p > 0] * np.log(p[p > 0])).sum(), abs=1e-12)
        assert 0 <= r.entropy <= r.max_entropy == pytest.approx(math.log(4))
    sharp = act.softmax_with_temperature([1000.0, -1000.0, 0.0], 0.05)
    assert np.all(np.isfinite(sharp.probs)) and sharp.probs[0] == 1.0 and sharp.entropy == 0.0
    flat = act.softmax_with_temperature(z, 1e6)
    assert flat.entropy_share == pytest.approx(1.0, abs=1e-9)
    with pytest.raises(ValueError, match="temperature must be positive"):
        act.softmax_with_temperature(z, 0.0)


def test_parse_numbers_says_what_is_wrong():
    np.testing.assert_array_equal(act.parse_numbers("2, 1 ,0.5;-3"), [2, 1, 0.5, -3])
    with pytest.raises(ValueError, match="'abc' is not a number"):
        act.parse_numbers("1, abc")
    with pytest.raises(ValueError, match="at least 2"):
        act.parse_numbers("")
    with pytest.raises(ValueError, match="at most 12"):
        act.parse_numbers(",".join(["1"] * 13))
    with pytest.raises(ValueError, match="finite"):
        act.parse_numbers("1, inf")


def test_init_std_matches_engine_nn_init():
    from engine import nn

    engine.manual_seed(0)
    w = engine.zeros(400, 300)
    nn.init.kaiming_normal_(w, nonlinearity="relu")
    assert w.data.std() == pytest.approx(act.init_std("he", 300, 400), rel=0.02)
    nn.init.xavier_normal_(w)
    assert w.data.std() == pytest.approx(act.init_std("xavier", 300, 400), rel=0.02)
    assert act.init_std("custom", 100, 100, scale=2.0) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="init must be one of"):
        act.init_std("lecun", 10, 10)


def test_depth_lab_gradients_against_a_numpy_backward_pass():
    r = act.depth_lab(depth=4, width=16, activation="tanh", init="xavier", n_samples=8, seed=3)
    # Redo the same network by hand: same seed, same draw order.
    rng = np.random.default_rng(3)
    std = math.sqrt(2 / 32)
    a = rng.standard_normal((8, 16))
    zs, ws = [], []
    for _ in range(4):
        w = rng.normal(0.0, std, (16, 16))
        z = a @ w.T
        zs.append(z)
        ws.append(w)
        a = np.tanh(z)
    delta = rng.standard_normal(a.shape) * (1 - np.tanh(zs[-1]) ** 2)
    norms = [np.linalg.norm(delta)]
    for l in range(3, 0, -1):
        delta = (delta @ ws[l]) * (1 - np.tanh(zs[l - 1]) ** 2)
        norms.append(np.linalg.norm(delta))
    np.testing.assert_allclose(r.grad_norm, norms[::-1], rtol=1e-10)
    np.testing.assert_allclose(r.z_std, [z.std() for z in zs], rtol=1e-10)


def test_depth_lab_shows_vanishing_stable_and_exploding_regimes():
    sig = act.depth_lab(depth=30, width=64, activation="sigmoid", init="xavier", n_samples=64, seed=1)
    assert sig.verdict() == "vanish" and sig.gradient_ratio < 1e-6
    he = act.depth_lab(depth=20, width=128, activation="relu", init="he", n_samples=128)
    assert he.verdict() == "stable"
    assert 0.35 < he.flat_share[0] < 0.65  # ReLU is flat for about half its inputs
    big = act.depth_lab(depth=30, width=64, activation="relu", init="custom", scale=3.0, n_samples=64)
    assert big.verdict() == "explode"
    # the product of per-layer factors predicts the autograd norms (ReLU: within a factor 2)
    ratio = he.predicted_grad_norm / he.grad_norm
    assert np.all((ratio > 0.5) & (ratio < 2.0))


def test_depth_lab_extremes_are_finite_or_explained():
    huge = act.depth_lab(depth=50, width=256, activation="relu", init="custom", scale=3.0, n_samples=32)
    assert np.all(np.isfinite(huge.grad_norm)) or huge.message
    tiny = act.depth_lab(depth=50, width=8, activation="sigmoid", init="custom", scale=0.1, n_samples=32)
    assert tiny.verdict() in ("vanish", "broken")
    one = act.depth_lab(depth=1, width=8, activation="gelu", init="he", n_samples=4)
    assert one.gradient_ratio == 1.0 and one.predicted_grad_norm[0] == one.grad_norm[0]
    with pytest.raises(ValueError, match="depth must be"):
        act.depth_lab(depth=0)
    with pytest.raises(ValueError, match="unknown activation"):
        act.depth_lab(activation="swish2")


# ============================================================================ losses_lab
from engine.course.labs import backprop as backprop_lab  # noqa: E402
from engine.course.labs import losses  # noqa: E402


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
    with pytest.raises(ValueError, match="target class must be an integer"):
        losses.cross_entropy_report(z, 4)


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
    for auto, formula in g.values():
        np.testing.assert_allclose(auto, formula, rtol=1e-10, atol=1e-15)
    s = 1 / (1 + np.exp(-m))
    np.testing.assert_allclose(g["cross-entropy"][1], 1 - s, atol=1e-15)
    assert g["cross-entropy"][0][0] > 0.99 and g["MSE on σ(z)"][0][0] < 1e-3


def test_cross_entropy_trains_a_wrong_sigmoid_faster_than_mse():
    x, y = losses.sigmoid_classifier_data(100, seed=0)
    ce = losses.train_sigmoid_classifier(x, y, "cross_entropy", w0=-4.0, lr=0.3, steps=100)
    mse = losses.train_sigmoid_classifier(x, y, "mse", w0=-4.0, lr=0.3, steps=100)
    z = -4.0 * x
    assert ce["loss"][0] == pytest.approx(np.mean(np.logaddexp(0, -z) * y + np.logaddexp(0, z) * (1 - y)), rel=1e-10)
    assert mse["loss"][0] == pytest.approx(np.mean((1 / (1 + np.exp(-z)) - y) ** 2), rel=1e-10)
    assert ce["accuracy"][20] > 0.95 and mse["accuracy"][20] < 0.5
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


# ============================================================================ graph
from engine.course import graph as graphs  # noqa: E402


def _square_grads(x, y):
    inner = x * y + math.sin(x)
    return 2 * inner * (y + math.cos(x)), 2 * inner * x


@pytest.mark.parametrize("x, y", [(1.5, -0.5), (-2.0, 3.0), (0.0, 0.0)])
def test_traced_graph_gradients_match_the_chain_rule_by_hand(x, y):
    g = graphs.expression_graph("square", x, y, 0.0)
    gx, gy = _square_grads(x, y)
    grads = graphs.input_gradients(g)
    assert grads["x"] == pytest.approx(gx, abs=1e-12) and grads["y"] == pytest.approx(gy, abs=1e-12)
    assert g.node(g.output).value == pytest.approx((x * y + math.sin(x)) ** 2)


def test_every_expression_against_central_differences():
    for name, spec in graphs.EXPRESSIONS.items():
        vals = (0.8, -1.3, 0.4)
        g = graphs.expression_graph(name, *vals)
        f = lambda a, b, c: float(spec["build"](*(engine.tensor(np.array(v, dtype=np.float64)) for v in (a, b, c))).data)  # noqa: E731
        for i, label in enumerate("xyz"):
            if label not in graphs.input_gradients(g):
                continue
            h = 1e-6
            up, down = list(vals), list(vals)
            up[i] += h
            down[i] -= h
            assert graphs.input_gradients(g)[label] == pytest.approx((f(*up) - f(*down)) / (2 * h), rel=1e-6, abs=1e-8)


def test_backward_order_puts_every_node_after_its_users():
    g = graphs.expression_graph("quotient", 0.5, 1.0, -0.7)
    position = {i: k for k, i in enumerate(g.order)}
    for a, b in g.edges:  # b uses a
        if a in position:
            assert position[b] < position[a]
    assert g.order[0] == g.output
    assert {n.id for n in g.nodes if n.kind != "const"} == set(g.order)


def test_steps_replay_what_backward_sent():
    g = graphs.expression_graph("reuse", 1.2, 0.5, 0.0)  # f = x·eˣ + x·y: x receives three contributions
    received: dict = {}
    for k in range(len(g.order)):
        for parent, _, c in g.step(k).sends:
            received[parent] = received.get(parent, 0.0) + c
    for n in g.nodes:
        if n.kind == "input":
            assert received[n.id] == pytest.approx(n.grad, abs=1e-12)
    x = next(n for n in g.nodes if n.label == "x")
    assert sum(1 for k in range(len(g.order)) for p, _, _ in g.step(k).sends if p == x.id) == 3
    assert x.grad == pytest.approx(math.exp(1.2) * (1 + 1.2) + 0.5)
    with pytest.raises(ValueError, match="k must be in"):
        g.step(len(g.order))


def test_local_rules_come_from_the_op_docstrings():
    g = graphs.expression_graph("square", 1.0, 2.0, 0.0)
    rules = {n.label: n.rule for n in g.nodes if n.kind == "op"}
    assert rules["mul"] == "∂r/∂a = b, ∂r/∂b = a"
    assert rules["sin"] == "∂r/∂a = cos a"
    assert rules["add"] == "∂r/∂a = 1, ∂r/∂b = 1"
    from engine.ops.elementwise import Mul
    assert Mul.__doc__.startswith("r = a·b;")
    drawing = g.drawing(0)
    known = [n for n in drawing["nodes"] if n["grad"] is not None]
    assert [n["id"] for n in known] == [g.output]


def test_dense_layer_gradients_by_hand_equal_autograd():
    d = graphs.dense_layer_gradients(n=7, d_in=5, d_out=3, seed=4)
    assert d.shapes["dW"] == (5, 3) and d.shapes["db"] == (3,) and d.shapes["dX"] == (7, 5)
    for k, v in d.max_difference.items():
        assert v < 1e-12, k
    # the formulas themselves, against a finite difference of L = Σ (XW + b) ⊙ G
    rng = np.random.default_rng(4)
    X, W, b = rng.standard_normal((7, 5)), rng.standard_normal((5, 3)), rng.standard_normal(3)
    G = rng.standard_normal((7, 3))
    L = lambda W_: np.sum((X @ W_ + b) * G)  # noqa: E731
    E = np.zeros_like(W)
    E[2, 1] = 1e-6
    assert (L(W + E) - L(W - E)) / 2e-6 == pytest.approx(d.by_hand["dW"][2, 1], rel=1e-6)
    assert graphs.linear_layer_matches_functional() < 1e-12
    with pytest.raises(ValueError, match="d_in must be"):
        graphs.dense_layer_gradients(d_in=0)


# ============================================================================ backprop lab (03): playground, gradient check

def test_finite_difference_error_has_the_v_shape():
    fd = backprop_lab.finite_difference_errors(0.7)
    exact = backprop_lab.probe_derivative_exact(0.7)
    h = 1e-5
    numeric = (math.sin(0.7 + h) * math.exp(0.7 + h) / (1 + (0.7 + h) ** 2)
               - math.sin(0.7 - h) * math.exp(0.7 - h) / (1 + (0.7 - h) ** 2)) / (2 * h)
    assert exact == pytest.approx(numeric, rel=1e-8)
    for dtype, eps in (("float32", 1.2e-7), ("float64", 2.2e-16)):
        h_best, e_best = backprop_lab.best_step(fd, dtype)
        e = fd[dtype]
        assert e[-1] > 100 * e_best and e[0] > 100 * e_best  # both arms of the V rise
        assert eps ** 0.5 / 100 < h_best < eps ** 0.25  # the bottom sits near ε^(1/3)
    assert backprop_lab.best_step(fd, "float64")[1] < 1e-9 < backprop_lab.best_step(fd, "float32")[1]
    assert fd["autograd_float64"] < 1e-14 and fd["autograd_float32"] < 1e-6


def test_playground_learns_moons_and_reports_history():
    Xtr, ytr, Xva, yva = backprop_lab.make_playground_data("moons", n=200, noise=0.1, seed=0)
    assert Xtr.shape == (150, 2) and np.allclose(np.concatenate([Xtr, Xva]).mean(0), 0, atol=1e-12)
    calls = []
    run = backprop_lab.train_playground(Xtr, ytr, Xva, yva, width=16, depth=2, activation="tanh", optimizer="adam",
                                   lr=0.03, epochs=60, progress=calls.append)
    assert calls == list(range(60)) and not run.diverged
    assert run.history["train_acc"][-1] > 0.95 and run.history["val_acc"][-1] > 0.9
    assert run.history["train_loss"][-1] < run.history["train_loss"][0] / 3
    assert run.grid_probs.shape == (60, 60, 2)
    np.testing.assert_allclose(run.grid_probs.sum(-1), 1.0, atol=1e-12)


def test_playground_divergence_is_flagged_not_raised():
    Xtr, ytr, Xva, yva = backprop_lab.make_playground_data("spirals", n=200, noise=0.1, seed=0)
    run = backprop_lab.train_playground(Xtr, ytr, Xva, yva, width=64, depth=4, activation="relu", optimizer="sgd",
                                   lr=3.0, epochs=40)
    assert run.diverged and len(run.history["train_loss"]) < 40 and run.grid_probs is None
    with pytest.raises(ValueError, match="data set must be"):
        backprop_lab.make_playground_data("mnist")
    with pytest.raises(ValueError, match="optimizer must be"):
        backprop_lab.make_optimizer("lbfgs", [], 0.1)


def test_untrained_playground_starts_near_ln_k_and_overfits_one_batch():
    Xtr, ytr, Xva, yva = backprop_lab.make_playground_data("blobs", n=200, noise=0.1, seed=0)
    run = backprop_lab.train_playground(Xtr, ytr, Xva, yva, epochs=0)
    assert run.history["train_loss"] == [] and run.grid_probs.shape[-1] == 3
    losses = backprop_lab.overfit_one_batch(Xtr, ytr, width=32, depth=2, activation="tanh", steps=300)
    assert losses[-1] < 0.05 < losses[0]


# ============================================================================ optim_lab
from engine.course.labs import optimizers as olab  # noqa: E402


@pytest.mark.parametrize("name", list(olab.SURFACES))
def test_surface_gradients_by_autograd_match_central_differences(name):
    rng = np.random.default_rng(0)
    (x0, x1), (y0, y1) = olab.SURFACES[name]["box"]
    for _ in range(5):
        th = np.array([rng.uniform(x0, x1), rng.uniform(y0, y1)])
        g = olab.surface_gradient(name, th)
        for i in range(2):
            e = np.zeros(2)
            e[i] = 1e-6
            numeric = (olab.surface_value(name, th + e) - olab.surface_value(name, th - e)) / 2e-6
            assert g[i] == pytest.approx(numeric, rel=1e-5, abs=1e-5)
    xx, yy, zz = olab.surface_grid(name, 30)
    assert zz[3, 7] == pytest.approx(olab.surface_value(name, [xx[3, 7], yy[3, 7]]))
    minimum = olab.SURFACES[name]["minimum"]
    np.testing.assert_allclose(olab.surface_gradient(name, minimum), 0.0, atol=1e-12)


def test_sgd_trajectory_is_theta_minus_lr_times_gradient():
    t = olab.run_optimizer("quadratic", "sgd", start=(-2.0, 1.0), steps=5, lr=0.005)
    th = np.array([-2.0, 1.0])
    for k in range(5):
        th = th - 0.005 * np.array([th[0], 100.0 * th[1]])
        np.testing.assert_allclose(t.path[k + 1], th, rtol=1e-12)
    assert t.losses[0] == pytest.approx(0.5 * (4 + 100))


def test_momentum_and_adam_beat_sgd_on_the_ill_conditioned_quadratic():
    final = {n: olab.run_optimizer("quadratic", n, steps=100).final_loss for n in ("sgd", "momentum", "adam")}
    assert final["momentum"] < final["sgd"] / 10 and final["adam"] < final["sgd"] / 10
    edge = olab.run_optimizer("quadratic", "sgd", start=(0.0, 1.0), steps=50, lr=0.02)  # 1 − ηκ = −1
    np.testing.assert_allclose(np.abs(edge.path[:, 1]), 1.0, rtol=1e-12)


def test_saddle_and_divergence():
    for n in olab.OPTIMIZERS:
        t = olab.run_optimizer("saddle", n, steps=300)
        assert t.final_loss == pytest.approx(-0.25, abs=1e-3), n  # escaped to a minimum f = −1/4
    bad = olab.run_optimizer("rosenbrock", "sgd", steps=100, lr=0.05)
    assert bad.diverged and len(bad.path) < 101 and math.isnan(bad.final_loss)
    with pytest.raises(ValueError, match="learning rate must be positive"):
        olab.run_optimizer("rosenbrock", "sgd", lr=0.0)
    with pytest.raises(ValueError, match="unknown surface"):
        olab.run_optimizer("himmelblau", "sgd")


def test_schedules_inside_trajectories_use_the_engine_schedulers():
    t = olab.run_optimizer("beale", "adam", steps=100, schedule="cosine", lr=0.1)
    expected = 0.1 * 0.5 * (1 + np.cos(np.pi * np.arange(100) / 100))
    np.testing.assert_allclose(t.lrs, expected, atol=1e-12)
    for s in olab.SCHEDULES:
        r = olab.run_optimizer("rosenbrock", "adam", steps=50, schedule=s)
        assert len(r.lrs) == 50 and np.all(r.lrs > 0) and not r.diverged


def test_adam_bias_correction_formulas_and_engine_agree():
    g = olab.noisy_gradients(30, mean=0.5, noise=1.0, seed=3)
    corrected = olab.adam_first_steps(g, lr=0.01)
    np.testing.assert_allclose(corrected["update"], olab.engine_adam_updates(g, lr=0.01), rtol=1e-10, atol=1e-15)
    plain = olab.adam_first_steps(np.ones(3), lr=1.0, bias_correction=False)
    assert abs(plain["update"][0]) == pytest.approx(0.1 / math.sqrt(0.001), rel=1e-6)
    np.testing.assert_allclose(olab.adam_first_steps(np.ones(3), lr=1.0)["update"], -1.0, rtol=1e-7)


def test_schedule_curves_closed_forms():
    c = olab.schedule_curves(steps=100, lr=0.1, step_size=25, gamma=0.5, warmup=10, pct_start=0.3)
    t = np.arange(100)
    np.testing.assert_allclose(c["step"], 0.1 * 0.5 ** (t // 25), rtol=1e-12)
    np.testing.assert_allclose(c["cosine"], 0.05 * (1 + np.cos(np.pi * t / 100)), atol=1e-12)
    assert c["warmup_cosine"][0] < c["warmup_cosine"][10] == pytest.approx(0.1)
    assert np.argmax(c["onecycle"]) == pytest.approx(29, abs=1) and c["onecycle"].max() == pytest.approx(0.1)
    drops = np.flatnonzero(np.diff(c["plateau"]) < 0)
    assert len(drops) >= 1 and np.all(np.isin(np.round(c["plateau"] / 0.1, 12), 0.5 ** np.arange(20)))
    with pytest.raises(ValueError, match="steps must be"):
        olab.schedule_curves(steps=1)


def test_l2_penalty_and_decoupled_decay_differ_as_described():
    p = olab.l2_vs_decoupled(weight_decay=0.1, lr=0.05, steps=200)
    t = np.arange(201)
    np.testing.assert_allclose(p["adamw"][:, 1], 2.0 * (1 - 0.05 * 0.1) ** t, rtol=1e-9)  # θ₂ ← (1 − ηλ)θ₂
    assert abs(p["adam_l2"][-1, 1]) < 0.05  # normalised: ~η per step, gone after ~40 steps
    assert abs(p["adam_l2"][40, 1]) < 0.5 < p["adamw"][40, 1]
    assert abs(p["adam_l2"][-1, 0] - 2.0) < abs(p["adamw"][-1, 0] - 2.0)  # decay drowned out on θ₁


def test_clip_by_global_norm_uses_the_square_root():
    clipped, before, after = olab.clip_by_global_norm([np.array([3.0]), np.array([4.0])], 1.0)
    assert before == pytest.approx(5.0) and after == pytest.approx(1.0, rel=1e-5)
    assert clipped[0][0] == pytest.approx(0.6, rel=1e-5) and clipped[1][0] == pytest.approx(0.8, rel=1e-5)
    same, before, after = olab.clip_by_global_norm([np.array([0.3, 0.4])], 1.0)
    np.testing.assert_array_equal(same[0], [0.3, 0.4])
    free = olab.run_optimizer("rosenbrock", "sgd", steps=300, lr=0.01)
    held = olab.run_optimizer("rosenbrock", "sgd", steps=300, lr=0.01, clip=3.0)
    assert free.diverged and not held.diverged and held.final_loss < 1.0

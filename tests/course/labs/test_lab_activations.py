"""The engine modules behind notebooks 01-04: activations_lab, graph, optim_lab, backprop_lab.

Each expected value is computed independently here (closed forms with math/NumPy, published
constants), never by the function under test.
"""

import math

import numpy as np
import pytest
from notebook_driver import load_module

import engine
from engine.course.labs import activations as act

# ============================================================================ activations_lab

NB = load_module("notebooks/01_activations.py")  # the lesson cells the lab runs: init_std, deep_forward, ...


def depth_lab(init="xavier", scale=1.0, width=128, activation="tanh", slope=0.01, **kw):
    """act.depth_lab with the notebook's forward pass and initialisation, as the page calls it."""
    std = NB.init_std(init, width, width, scale, leaky_slope=slope if activation == "leaky_relu" else 0.0)
    return act.depth_lab(NB.deep_forward, std, width=width, activation=activation, slope=slope, **kw)


def depth_variants(init="xavier", scale=1.0, width=64, **kw):
    return act.depth_variants(NB.deep_forward, NB.init_std(init, width, width, scale), width=width, **kw)


def bend(width, depth, steps=0, seed=0, grid=150):
    """The notebook's small ReLU network built on ``seed``, trained ``steps``, and its pieces."""
    X, y = act.moons(seed=seed)
    with engine.random.fork_rng(seed):
        net = NB.moon_net(width, depth)
    NB.train_moons(net, X, y, steps=steps)
    return act.bend_report(NB.moon_forward, net, X, y, steps=steps, grid=grid)


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
    pdf = math.exp(-(x_star**2) / 2) / math.sqrt(2 * math.pi)
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


@pytest.mark.parametrize(
    "name, params, text",
    [
        ("relu", {}, "[0, ∞)"),
        ("leaky_relu", {"slope": 0.1}, "(−∞, ∞)"),
        ("sigmoid", {}, "(0, 1)"),
        ("tanh", {}, "(−1, 1)"),
        ("softplus", {}, "(0, ∞)"),
        ("elu", {"alpha": 2.0}, "(−2, ∞)"),
        ("gelu", {}, "[−0.17, ∞)"),
        ("silu", {}, "[−0.278, ∞)"),
        ("swiglu", {}, "[0, ∞)"),
    ],
)
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
    assert w.data.std() == pytest.approx(NB.init_std("he", 300, 400), rel=0.02)
    nn.init.xavier_normal_(w)
    assert w.data.std() == pytest.approx(NB.init_std("xavier", 300, 400), rel=0.02)
    assert NB.init_std("custom", 100, 100, scale=2.0) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="no initialisation called 'lecun'"):
        NB.init_std("lecun", 10, 10)
    with pytest.raises(ValueError, match="weight std"):
        act.depth_lab(NB.deep_forward, 0.0)


def test_depth_lab_gradients_against_a_numpy_backward_pass():
    r = depth_lab(depth=4, width=16, activation="tanh", init="xavier", n_samples=8, seed=3)
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
    for layer in range(3, 0, -1):
        delta = (delta @ ws[layer]) * (1 - np.tanh(zs[layer - 1]) ** 2)
        norms.append(np.linalg.norm(delta))
    np.testing.assert_allclose(r.grad_norm, norms[::-1], rtol=1e-10)
    np.testing.assert_allclose(r.z_std, [z.std() for z in zs], rtol=1e-10)


def test_depth_lab_shows_vanishing_stable_and_exploding_regimes():
    sig = depth_lab(depth=30, width=64, activation="sigmoid", init="xavier", n_samples=64, seed=1)
    assert sig.verdict() == "vanish" and sig.gradient_ratio < 1e-6
    he = depth_lab(depth=20, width=128, activation="relu", init="he", n_samples=128)
    assert he.verdict() == "stable"
    assert 0.35 < he.flat_share[0] < 0.65  # ReLU is flat for about half its inputs
    big = depth_lab(depth=30, width=64, activation="relu", init="custom", scale=3.0, n_samples=64)
    assert big.verdict() == "explode"
    # the product of per-layer factors predicts the autograd norms (ReLU: within a factor 2)
    ratio = he.predicted_grad_norm / he.grad_norm
    assert np.all((ratio > 0.5) & (ratio < 2.0))


def test_depth_lab_extremes_are_finite_or_explained():
    huge = depth_lab(depth=50, width=256, activation="relu", init="custom", scale=3.0, n_samples=32)
    assert np.all(np.isfinite(huge.grad_norm)) or huge.message
    tiny = depth_lab(depth=50, width=8, activation="sigmoid", init="custom", scale=0.1, n_samples=32)
    assert tiny.verdict() in ("vanish", "broken")
    one = depth_lab(depth=1, width=8, activation="gelu", init="he", n_samples=4)
    assert one.gradient_ratio == 1.0 and one.predicted_grad_norm[0] == one.grad_norm[0]
    with pytest.raises(ValueError, match="depth must be"):
        depth_lab(depth=0)
    with pytest.raises(ValueError, match="unknown activation"):
        depth_lab(activation="swish2")


def test_swiglu_slice_minimum_is_zero_at_zero_past_its_local_maximum():
    """z²σ(z): derivative zσ(z)(2 + z(1 − σ(z))) is positive on (−2.2, …) only after z = 0; a
    bracket search from −4 met a positive slope at both ends and missed the minimum."""
    x_star, f_star = act.activation_minimum("swiglu")
    assert abs(x_star) < 1e-12 and 0 <= f_star < 1e-24
    assert act.minimum_text("swiglu") == "0.0000 at z = 0.0000"
    assert act.output_range("swiglu").text() == "[0, ∞)"
    # the local maximum the old bracket tripped on: 2 + z(1 − σ(z)) = 0, solved by bisection here
    lo, hi = -3.0, -1.5
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if 2 + mid * (1 - _sigmoid(mid)) > 0 else (mid, hi)
    assert -2.4 < lo < -2.0


def test_family_row_reads_the_lab():
    row = act.family_row("sigmoid")
    assert row == {"activation": "Sigmoid", "range": "(0, 1)", "minimum": "—", "steepest slope": "0.2500"}
    assert act.family_row("elu", alpha=2.0)["range"] == "(−2, ∞)"


def test_per_layer_factors_are_the_geometric_means_of_the_stack():
    r = depth_lab(depth=12, width=32, activation="tanh", init="custom", scale=0.5, n_samples=64, seed=3)
    steps = r.grad_norm[:-1] / r.grad_norm[1:]
    assert r.per_layer_factor == pytest.approx(float(np.exp(np.log(steps).mean())), rel=1e-12)
    var_steps = (r.z_std[1:] / r.z_std[:-1]) ** 2
    assert r.variance_factor == pytest.approx(float(np.exp(np.log(var_steps).mean())), rel=1e-12)
    one = depth_lab(depth=1, width=8, activation="relu", init="he", n_samples=8, seed=0)
    assert one.per_layer_factor == 1.0 and one.variance_factor == 1.0


@pytest.mark.parametrize("residual, norm", [(False, False), (True, False), (False, True), (True, True)])
def test_depth_lab_residual_and_prenorm_gradients_against_pytorch(residual, norm):
    torch = pytest.importorskip("torch")
    depth, width, n, seed = 6, 16, 32, 7
    r = depth_lab(
        depth=depth, width=width, activation="tanh", init="xavier", n_samples=n, seed=seed, residual=residual, norm=norm
    )
    rng = np.random.default_rng(seed)  # the lab's draws, in its order: inputs, weights, upstream gradient
    x = torch.tensor(rng.standard_normal((n, width)))
    std = math.sqrt(2.0 / (2 * width))
    weights = [torch.tensor(rng.normal(0.0, std, (width, width))) for _ in range(depth)]
    a, zs = x, []
    for w in weights:
        h = torch.nn.functional.layer_norm(a, (width,)) if norm else a
        z = h @ w.T
        z.requires_grad_(True) if not z.requires_grad else None
        z.retain_grad()
        zs.append(z)
        a = a + torch.tanh(z) if residual else torch.tanh(z)
    a.backward(torch.tensor(rng.standard_normal(tuple(a.shape))))
    np.testing.assert_allclose(r.grad_norm, [float(z.grad.norm()) for z in zs], rtol=1e-9)
    np.testing.assert_allclose(r.z_std, [float(z.detach().std(unbiased=False)) for z in zs], rtol=1e-9)
    assert (r.predicted_grad_norm is None) == (residual or norm)


def test_residual_plus_prenorm_keeps_fifty_layers_trainable_where_the_parts_do_not():
    for activation, init, scale in (
        ("sigmoid", "xavier", 1.0),
        ("relu", "xavier", 1.0),
        ("relu", "he", 1.0),
        ("tanh", "custom", 2.0),
    ):
        v = depth_variants(depth=50, width=64, activation=activation, init=init, scale=scale)
        assert set(v) == {"plain", "residual", "pre-norm", "residual + pre-norm"}
        assert 1.0 < v["residual + pre-norm"].gradient_ratio < 15, activation
    relu = depth_variants(depth=50, width=64, activation="relu", init="he")
    assert relu["residual"].verdict() == "explode" and relu["pre-norm"].verdict() == "explode"
    # each layer adds at least the stream's own variance: Var(z) at least doubles per layer
    assert relu["residual"].variance_factor > 2.0
    assert 0.9 < relu["residual + pre-norm"].variance_factor < 1.1


def test_scale_sweep_crosses_one_at_he_for_relu():
    sweep = act.scale_sweep(NB.deep_forward, "relu")
    assert sweep.crossing == pytest.approx(math.sqrt(2), rel=0.03)  # s·rms φ′ = s/√2 = 1
    direct = depth_lab(
        depth=20, width=64, activation="relu", init="custom", scale=float(sweep.scales[3]), n_samples=32, seed=0
    )
    assert sweep.per_layer_factor[3] == direct.per_layer_factor
    assert act.scale_sweep(NB.deep_forward, "sigmoid").crossing is None  # σ′ ≤ ¼: no scale up to 5 reaches 1
    assert 1.0 < act.scale_sweep(NB.deep_forward, "tanh").crossing < 1.5


def _edited_block(a, w, phi, residual=False, pre_norm=False):
    """A learner's edit of the notebook's block: the residual branch scaled by 0.2."""
    z = a @ w.T
    return z, (a + 0.2 * phi(z) if residual else phi(z))


def test_shipped_sweeps_are_the_notebook_code_s_and_refused_for_other_code():
    shipped, reason = act.shipped_sweeps(NB.block, NB.deep_forward)
    assert reason == "" and set(shipped) == set(act.DEPTH_ACTIVATIONS)
    for name in ("relu", "tanh"):
        computed = act.scale_sweep(NB.deep_forward, name).per_layer_factor
        np.testing.assert_allclose(
            act.scale_sweep(NB.deep_forward, name, shipped=shipped).per_layer_factor, computed, rtol=1e-3
        )
    refused, reason = act.shipped_sweeps(_edited_block, NB.deep_forward)
    assert refused is None and "other code than this page's `block` and `deep_forward`" in reason


def test_shipped_variants_are_the_runs_of_the_notebook_code_and_refused_for_other_code():
    shipped = act.shipped_variants(NB.block, NB.deep_forward, NB.init_std)
    for name, init in (("relu", "he"), ("tanh", "xavier"), ("leaky_relu", "he")):
        std = NB.init_std(init, 64, 64, leaky_slope=0.01 if name == "leaky_relu" else 0.0)
        assert act.variants_are_shipped(shipped, name, std, 64)
        read = act.depth_variants(NB.deep_forward, std, activation=name, shipped=shipped)
        run = act._depth_variants.__wrapped__(NB.deep_forward, 50, 64, name, float(std), 32, 0)
        for variant in act.DEPTH_VARIANTS:
            assert read[variant].verdict() == run[variant].verdict()
            np.testing.assert_allclose(read[variant].grad_norm, run[variant].grad_norm, rtol=1e-6)
            np.testing.assert_allclose(read[variant].z_std, run[variant].z_std, rtol=1e-6)
    relu_he = act.depth_variants(NB.deep_forward, NB.init_std("he", 64, 64), activation="relu", shipped=shipped)
    assert [r.fate() for r in relu_he.values()] == ["stays in range", "explodes", "explodes", "stays in range"]
    # another width, scale or activation is run, not read
    assert not act.variants_are_shipped(shipped, "relu", NB.init_std("custom", 64, 64, 2.0), 64)
    assert not act.variants_are_shipped(shipped, "relu", NB.init_std("he", 128, 128), 128)
    assert not act.variants_are_shipped(shipped, NB.my_activation, NB.init_std("he", 64, 64), 64)
    assert act.shipped_variants(_edited_block, NB.deep_forward, NB.init_std) is None


def test_bend_report_pieces_are_affine_and_bounded():
    r = bend(width=5, depth=1, steps=0, seed=4, grid=60)
    assert r.pieces <= act.max_pieces_one_layer(5) == 16 and r.one_layer_bound == 16
    # inside one piece the network is one affine map: fit it on three points, predict the rest
    logit = np.log(r.probs / (1 - r.probs))
    pts = np.column_stack([r.xx.ravel(), r.yy.ravel()])
    ids = r.piece_ids.ravel()
    for piece in np.unique(ids)[:6]:
        idx = np.flatnonzero(ids == piece)
        if len(idx) < 4:
            continue
        A = np.column_stack([pts[idx], np.ones(len(idx))])
        coef, *_ = np.linalg.lstsq(A, logit.ravel()[idx], rcond=None)
        np.testing.assert_allclose(A @ coef, logit.ravel()[idx], atol=1e-5)  # float32 weights
    assert bend(width=5, depth=0, seed=4, grid=60).pieces == 1


def test_moons_and_bend_report_leave_the_global_stream_and_are_reproducible():
    with engine.random.fork_rng(1):
        net = NB.moon_net(4, 2)
    engine.manual_seed(5)
    before = engine.randn(3).data
    engine.manual_seed(5)
    X, y = act.moons(seed=1)
    a = act.bend_report(NB.moon_forward, net, X, y, steps=0, grid=20)
    after = engine.randn(3).data
    np.testing.assert_array_equal(before, after)
    b = act.bend_report(NB.moon_forward, net, *act.moons(seed=1), steps=0, grid=20)
    np.testing.assert_array_equal(a.probs, b.probs)
    assert (a.width, a.depth) == (4, 2)


def test_scale_sweep_equals_one_depth_lab_per_scale():
    """Each factor of the sweep is depth_lab's for that scale (the same draws, σ_W = s/√n)."""
    sweep = act.scale_sweep(NB.deep_forward, "tanh", scales=[0.5, 1.3, 2.7], depth=6, width=16, n_samples=8, seed=3)
    direct = [
        depth_lab(depth=6, width=16, activation="tanh", init="custom", scale=s, n_samples=8, seed=3).per_layer_factor
        for s in (0.5, 1.3, 2.7)
    ]
    np.testing.assert_allclose(sweep.per_layer_factor, direct, rtol=1e-12)
    with pytest.raises(ValueError, match="unknown activation"):
        act.scale_sweep(NB.deep_forward, "swiglu")


def test_depth_variants_are_depth_lab_runs_on_shared_draws():
    v = depth_variants(depth=7, width=16, activation="relu", init="he", n_samples=12, seed=2)
    for name, (residual, norm) in act.DEPTH_VARIANTS.items():
        alone = depth_lab(
            depth=7, width=16, activation="relu", init="he", n_samples=12, seed=2, residual=residual, norm=norm
        )
        np.testing.assert_allclose(v[name].grad_norm, alone.grad_norm, rtol=1e-12)
        np.testing.assert_allclose(v[name].z_std, alone.z_std, rtol=1e-12)
        assert v[name].flat_share is None and v[name].predicted_grad_norm is None  # the table shows no slopes
    # by default 2,048 pre-activations per layer, at most 32 examples: at width 64, the run of 32
    default = depth_variants(depth=7, width=64, activation="relu", init="he")
    np.testing.assert_array_equal(
        default["plain"].grad_norm,
        depth_variants(depth=7, width=64, activation="relu", init="he", n_samples=32)["plain"].grad_norm,
    )


def test_pattern_ids_label_the_distinct_rows_as_np_unique_does():
    bits = np.random.default_rng(0).random((500, 19)) < 0.1
    bits[::3] = bits[0]  # repeated patterns
    expected = np.unique(bits, axis=0, return_inverse=True)[1].ravel()
    np.testing.assert_array_equal(act._pattern_ids(bits), expected)


def test_bend_default_network_is_trained_and_beats_its_initialisation():
    trained = bend(**act.BEND_DEFAULT, steps=act.BEND_STEPS, seed=0, grid=40)
    untrained = bend(**act.BEND_DEFAULT, steps=0, seed=0, grid=40)
    assert trained.steps == act.BEND_STEPS and trained.accuracy > max(0.9, untrained.accuracy)
    assert act.is_default_bend({"width": 8, "depth": 1}) and act.is_default_bend({"depth": 1.0})
    assert not act.is_default_bend({"width": 9, "depth": 1})
    with pytest.raises(ValueError, match="unknown settings \\['steps'\\]"):
        act.is_default_bend({"steps": 400})


def test_samples_for_width_keeps_about_8192_values_per_layer():
    assert [act.samples_for_width(w) for w in (8, 64, 128, 256)] == [128, 128, 64, 32]
    assert act.samples_for_width(256, values_per_layer=4096, most=64) * 256 == 4096


def test_a_function_of_ones_own_runs_as_the_named_activation_does():
    """The notebook's my_activation reaches the depth lab as a function: F.tanh passed in gives the
    numbers of "tanh"; |z|, whose slope is −1 for z < 0, has no flat units."""
    import engine.functional as F

    named = depth_lab(depth=6, width=16, activation="tanh", n_samples=8, seed=2)
    passed = depth_lab(depth=6, width=16, activation=F.tanh, n_samples=8, seed=2)
    np.testing.assert_allclose(passed.grad_norm, named.grad_norm, rtol=1e-12)
    np.testing.assert_allclose(passed.flat_share, named.flat_share)
    np.testing.assert_allclose(
        act.scale_sweep(NB.deep_forward, F.tanh, scales=[0.5, 2.0], depth=5, width=16).per_layer_factor,
        act.scale_sweep(NB.deep_forward, "tanh", scales=[0.5, 2.0], depth=5, width=16).per_layer_factor,
    )
    folded = depth_lab(depth=6, width=16, activation=lambda z: z.abs(), n_samples=8, seed=2)
    assert np.all(folded.flat_share == 0) and folded.deriv_rms == pytest.approx(np.ones(6))
    f, df = act.engine_derivative(lambda z: z * z, np.array([-1.0, 3.0]))
    np.testing.assert_array_equal(f, [1.0, 9.0])
    np.testing.assert_array_equal(df, [-2.0, 6.0])


def test_self_normalisation_statistics_by_a_linear_stack():
    """With φ(z) = z the layers are x W₁ᵀ … W_lᵀ: the statistics are those of that product, computed
    here with NumPy from the same N(0, 1) draws; and a bad input scale is refused by name."""
    run = act.self_normalisation(NB.deep_forward, lambda z: z, 0.125, input_std=2.0, depth=5, width=64)
    x, weights = act._unit_draws(5, 64, 64, 0)
    a = 2.0 * x
    for layer, w in enumerate(weights):
        a = a @ (0.125 * w).T
        assert run.a_var[layer] == pytest.approx(a.var(), rel=1e-12)
        assert run.a_mean[layer] == pytest.approx(a.mean(), rel=1e-9, abs=1e-15)
    with pytest.raises(ValueError, match="self_normalisation: the input std must be a positive number"):
        act.self_normalisation(NB.deep_forward, "relu", 0.1, input_std=0.0)

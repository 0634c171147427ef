"""The lab behind notebook 03 (backprop): the playground's data and runs, the gradient check, the modes
(run with the notebook's lesson functions, passed in as the page does).

Each expected value is computed independently here (closed forms with math/NumPy, published
constants), never by the function under test.
"""

import csv
import io
import math

import numpy as np
import pytest
from notebook_driver import load_module

import engine
from engine.course.labs import backprop as backprop_lab

NB = load_module("notebooks/03_backprop.py")  # the lesson's forward and reverse mode, its counter of saved floats

# ============================================================================ backprop lab (03): playground, gradient check


def _central(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


def _mlp(depth=2, width=16, n_out=2):
    """A tanh MLP of nn layers (the notebook writes its own; the lab only runs what it is given)."""
    sizes = [2] + [width] * depth
    layers = []
    with engine.random.fork_rng(0):
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            layers += [engine.nn.Linear(fan_in, fan_out, dtype="float64"), engine.nn.Tanh()]
        layers.append(engine.nn.Linear(width, n_out, dtype="float64"))
    return engine.nn.Sequential(*layers)


def test_finite_difference_error_has_the_v_shape():
    fd = backprop_lab.finite_difference_errors(_central, 0.7)
    exact = backprop_lab.probe_derivative_exact(0.7)
    h = 1e-5
    numeric = (
        math.sin(0.7 + h) * math.exp(0.7 + h) / (1 + (0.7 + h) ** 2)
        - math.sin(0.7 - h) * math.exp(0.7 - h) / (1 + (0.7 - h) ** 2)
    ) / (2 * h)
    assert exact == pytest.approx(numeric, rel=1e-8)
    for dtype, eps in (("float32", 1.2e-7), ("float64", 2.2e-16)):
        h_best, e_best = backprop_lab.best_step(fd, dtype)
        e = fd.error(dtype)
        assert e[-1] > 100 * e_best and e[0] > 100 * e_best  # both arms of the V rise
        assert eps**0.5 / 100 < h_best < eps**0.25  # the bottom sits near ε^(1/3)
    assert backprop_lab.best_step(fd, "float64")[1] < 1e-9 < backprop_lab.best_step(fd, "float32")[1]
    assert fd.autograd_float64 < 1e-14 and fd.autograd_float32 < 1e-6
    with pytest.raises(ValueError, match="dtype must be"):
        backprop_lab.best_step(fd, "float16")


def test_probe_third_derivative_is_torchs_and_the_step_rule_check_reads_the_v_it_is_given():
    torch = pytest.importorskip("torch")
    for x0 in (-2.0, -0.5, 0.7, 1.3, 2.0):
        x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
        f = torch.sin(x) * torch.exp(x) / (1 + x * x)
        (d1,) = torch.autograd.grad(f, x, create_graph=True)
        (d2,) = torch.autograd.grad(d1, x, create_graph=True)
        want = (f.item(), torch.autograd.grad(d2, x)[0].item())
        assert backprop_lab.probe_value_and_third_derivative(x0) == pytest.approx(want, rel=1e-12)
    fd = backprop_lab.finite_difference_errors(_central, 0.7, hs=backprop_lab.FD_STEPS)
    fixed = backprop_lab.step_rule_check(_central, lambda f, f3, eps: 1e-4, fd, 0.7)  # any rule: its h is used
    for dtype in ("float32", "float64"):
        rule = fixed[dtype]
        assert rule.h == 1e-4 and (rule.best_h, rule.best_error) == backprop_lab.best_step(fd, dtype)
        assert rule.error_at_h == backprop_lab.finite_difference_errors(_central, 0.7, hs=[1e-4]).error(dtype)[0]
        assert rule.decades_from_best == pytest.approx(abs(np.log10(1e-4 / rule.best_h)))
    at_zero = backprop_lab.step_rule_check(_central, lambda f, f3, eps: 1.0, fd, 0.0)["float64"]  # f(0) = 0
    assert np.isnan(at_zero.h) and "no h* to find" in at_zero.describe()


def test_finite_difference_errors_use_the_difference_they_are_given():
    """A one-sided difference (error ∝ h, not h²) puts the float64 V's bottom near √ε, not ε^(1/3)."""
    one_sided = backprop_lab.finite_difference_errors(lambda f, x, h: (f(x + h) - f(x)) / h, 0.7)
    central = backprop_lab.finite_difference_errors(_central, 0.7)
    (h1, e1), (h2, e2) = (backprop_lab.best_step(fd, "float64") for fd in (one_sided, central))
    assert h1 < 1e-7 < h2 and e1 > 100 * e2
    assert one_sided.autograd_float64 == central.autograd_float64  # autograd's error does not depend on it


def test_playground_run_draws_the_model_it_is_given_and_flags_divergence():
    split = backprop_lab.make_playground_data("blobs", n=200, noise=0.1, seed=0)
    assert split[0].shape == (150, 2) and split[2].shape == (50, 2)
    model = _mlp(n_out=3)
    run = backprop_lab.playground_run(model, split, initial_loss=1.1, grid_size=12)
    assert run.history == {} and not run.diverged and run.initial_loss == 1.1 and run.model is model
    assert run.grid_probs.shape == (12, 12, 3)
    np.testing.assert_allclose(run.grid_probs.sum(-1), 1.0, atol=1e-12)
    both = np.concatenate([split[0], split[2]])  # the grid covers every point, with a margin
    assert run.grid_x.min() < both[:, 0].min() and run.grid_y.max() > both[:, 1].max()
    with engine.no_grad():
        logits = model(engine.Tensor(np.array([[run.grid_x[0, 0], run.grid_y[0, 0]]]))).data[0]
    np.testing.assert_allclose(run.grid_probs[0, 0], np.exp(logits) / np.exp(logits).sum(), rtol=1e-12)
    gone = backprop_lab.playground_run(model, split, {"train_loss": [0.7, float("nan")]})
    assert gone.diverged and gone.grid_probs is None
    with pytest.raises(ValueError, match="data set must be"):
        backprop_lab.make_playground_data("mnist")
    with pytest.raises(ValueError, match="optimizer must be"):
        backprop_lab.playground_optimizer("lbfgs", [], 0.1)


def test_default_playground_reads_the_checkpoint_on_the_default_data():
    from engine.course import checkpoints

    state = checkpoints.load(backprop_lab.playground_checkpoint)
    shown = backprop_lab.default_playground(state)
    d = backprop_lab.PLAYGROUND_DEFAULTS
    split = backprop_lab.make_playground_data(d["data"], n=backprop_lab.PLAYGROUND_POINTS, noise=d["noise"], seed=0)
    for got, want in zip(shown.split, split):
        np.testing.assert_array_equal(got, want)
    assert state["settings"] == dict(
        d,
        points=backprop_lab.PLAYGROUND_POINTS,
        grid=backprop_lab.PLAYGROUND_GRID,
        overfit_steps=backprop_lab.OVERFIT_STEPS,
    )
    assert all(len(v) == d["epochs"] for v in shown.run.history.values()) and not shown.run.diverged
    assert shown.run.grid_probs.shape == (30, 30, 2) and shown.overfit_losses.shape == (300,)
    assert backprop_lab.is_default_playground(dict(d)) and backprop_lab.is_default_playground({})
    assert not backprop_lab.is_default_playground({"width": 8})
    with pytest.raises(ValueError, match="unknown settings \\['colour'\\]"):
        backprop_lab.is_default_playground({"colour": "red"})
    assert backprop_lab.overfit_width(2) == 8 and backprop_lab.overfit_width(32) == 32


def _modes(n, hidden=16, seed=3):
    return backprop_lab.forward_vs_reverse(NB.forward_mode, NB.reverse_mode, NB.mode_costs, n, hidden=hidden, seed=seed)


@pytest.mark.parametrize("n", [1, 7, 300])
def test_forward_and_reverse_mode_give_the_gradient_at_their_costs(n):
    r = _modes(n)
    # independently: the gradient by central differences of f(x) = v·tanh(Wx) with the same draws
    rng = np.random.default_rng(3)
    W, v, x = rng.standard_normal((16, n)) / math.sqrt(n), rng.standard_normal(16), rng.standard_normal(n)
    f = lambda x_: float(v @ np.tanh(W @ x_))  # noqa: E731
    for i in {0, n // 2, n - 1}:
        e = np.zeros(n)
        e[i] = 1e-6
        fd = (f(x + e) - f(x - e)) / 2e-6
        assert r.grad_forward_mode[i] == pytest.approx(fd, rel=1e-6, abs=1e-9)
        assert r.grad_reverse_mode[i] == pytest.approx(fd, rel=1e-6, abs=1e-9)
    np.testing.assert_allclose(r.grad_autograd, r.grad_reverse_mode, rtol=1e-12, atol=1e-15)
    assert (r.jvp_passes, r.vjp_passes) == (n, 2)
    h = 16  # one forward: Wx (h·n), tanh and the dot product (h each)
    assert r.forward_madds == h * n + 2 * h
    assert r.vjp_madds == 2 * h * n + 5 * h and r.jvp_madds == n * (2 * h * n + 5 * h)
    assert 2 <= r.reverse_mode_in_forwards <= 3  # "about 2–3 forwards", whatever n is


@pytest.mark.parametrize("n, hidden", [(1, 16), (7, 16), (300, 16), (1000, 64)])
def test_the_closed_form_costs_are_what_the_lesson_functions_count(n, hidden):
    counted = _modes(n, hidden=hidden, seed=0)
    assert NB.mode_costs(n, hidden) == (counted.forward_madds, counted.jvp_madds, counted.vjp_madds)


def test_mode_problem_refuses_bad_sizes():
    with pytest.raises(ValueError, match="mode_problem: n must be"):
        _modes(0)
    with pytest.raises(ValueError, match="mode_problem: hidden must be an integer in \\[1, 1024\\], got 0"):
        backprop_lab.mode_problem(5, hidden=0)


def _saved(model, batch, depth=2):
    return backprop_lab.saved_for_backward(NB.saved_floats, model, batch, depth=depth, width=16)


def test_saved_for_backward_grows_with_batch_and_depth_not_parameters():
    base = _saved(_mlp(), 1)
    big = _saved(_mlp(), 50)
    deeper = _saved(_mlp(depth=3), 50, depth=3)
    assert big.activation_floats == 50 * base.activation_floats  # one row per example
    assert deeper.activation_floats - big.activation_floats == 50 * 16  # B × width per hidden layer
    assert big.parameter_floats == base.parameter_floats == (2 * 16 + 16) + (16 * 16 + 16) + (16 * 2 + 2)
    assert big.activation_bytes == 8 * big.activation_floats
    # the first linear layer keeps its input x (B × 2): the count includes what we fed in
    assert big.per_op[-1] == ("Linear", 50 * 2)
    # the lesson's walk finds what the engine's own topological order finds
    from engine.autograd import topological_order

    model = _mlp()
    loss = engine.functional.cross_entropy(model(engine.Tensor(np.ones((4, 2)))), np.zeros(4, dtype=np.int64))
    ops = [type(t._ctx).__name__ for t in topological_order(loss) if t._ctx is not None]
    assert [op for op, _ in NB.saved_floats(loss, model.parameters())] == ops
    # inference records nothing: no graph, nothing saved
    with engine.no_grad():
        assert model(engine.Tensor(np.zeros((5, 2))))._ctx is None
    with pytest.raises(ValueError, match="batch must be"):
        _saved(model, 0)


@pytest.mark.parametrize("name", backprop_lab.DATASETS)
def test_playground_data_are_standardised_with_the_training_part_alone(name):
    """Issue 25: the scaler sees only the training points; the validation points are scaled by the
    training part's mean and spread, as new points would be, so their own mean is not 0."""
    Xtr, _, Xva, _ = backprop_lab.make_playground_data(name, n=200, noise=0.1, seed=0)
    np.testing.assert_allclose(Xtr.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(Xtr.std(0), 1.0, rtol=1e-12)
    assert np.abs(Xva.mean(0)).max() > 1e-3  # not refitted on the validation part
    raw = np.random.default_rng(1).normal((3.0, -2.0), (0.5, 4.0), (8, 2))
    scaled = backprop_lab.standardise_on_train(raw, 6)
    np.testing.assert_allclose(scaled[6:], (raw[6:] - raw[:6].mean(0)) / raw[:6].std(0), rtol=1e-12)


def test_split_drawn_standardises_on_its_training_part_shuffles_and_keeps_both_sides():
    X = np.column_stack([np.arange(8.0), np.full(8, 3.0)])  # a horizontal line: zero spread in y
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    Xtr, ytr, Xva, yva = backprop_lab.split_drawn(X, y, seed=0)
    assert len(Xtr) == 6 and len(Xva) == 2
    order = np.random.default_rng(0).permutation(8)
    train = X[order[:6], 0]  # the scaler's statistics: the training part's, not all eight points'
    np.testing.assert_allclose(np.concatenate([Xtr, Xva])[:, 0], (X[order, 0] - train.mean()) / train.std())
    np.testing.assert_allclose(Xtr.mean(0), 0, atol=1e-12)
    np.testing.assert_array_equal(np.concatenate([Xtr, Xva])[:, 1], 0.0)  # no spread: only shifted
    np.testing.assert_array_equal(np.concatenate([ytr, yva]), y[order])
    two = backprop_lab.split_drawn(X[:2], y[3:5])
    assert len(two[0]) == len(two[2]) == 1
    with pytest.raises(ValueError, match="at least 2 labelled points"):
        backprop_lab.split_drawn(X[:1], y[:1])


def test_check_op_grades_each_input_and_checkpointing_view_refuses_other_sizes():
    """check_op against engine.gradcheck on an op whose backward is right: the library's own dense
    layer (engine.ops.matmul.Linear, Z = X Wᵀ + b, checked in the engine's tests); checkpointing_view's
    sizes are the page's."""
    from engine.ops.matmul import Linear

    def check(f, inputs, h=1e-6):  # a gradient check that always finds 0.5 wrong
        return 0.5

    right = backprop_lab.check_op(check, Linear, n=5, d=2)
    assert right.errors == {"X": 0.5, "W": 0.5, "b": 0.5} and right.caught and right.gradcheck is True
    with pytest.raises(ValueError, match="depth must be one of"):
        backprop_lab.checkpointing_view(None, None, None, depth=5, segment=1)


def _png_pixels(url):
    """The RGB pixels of a ``data:image/png;base64,...`` URL."""
    import base64

    from PIL import Image

    assert url.startswith("data:image/png;base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))


def test_regions_chart_is_one_image_of_the_class_colours_with_x2_rising_upwards():
    """The playground's map: one image mark (not a rect per cell) under the data, each cell 4 × 4
    pixels in the colour plot.class_regions gives it, row 0 of the image the grid's top row."""
    xx, yy = np.meshgrid(np.linspace(-1, 1, 5), np.linspace(-2, 2, 4))  # 4 rows (x₂) × 5 columns (x₁)
    p1 = 1 / (1 + np.exp(-(3 * xx + yy)))
    probs = np.stack([1 - p1, p1], axis=-1)
    X, y = np.array([[0.0, 0.0], [0.5, 1.0]]), np.array([0, 1])
    spec = backprop_lab.regions_chart(xx, yy, probs, X, y, title="t").to_dict()
    image, dots = spec["layer"]
    assert image["mark"]["type"] == "image" and dots["mark"]["type"] == "circle"
    pixels = _png_pixels(image["mark"]["url"])
    assert pixels.shape == (16, 20, 3)
    # the same cell colours as the rect version (plot.class_regions: one '#rrggbb' per grid point, in ravel order)
    rects = engine.course.plot.class_regions(xx, yy, probs, X, y).to_dict()
    values = rects["datasets"][rects["layer"][0]["data"]["name"]]
    fills = [row["fill"] for row in csv.DictReader(io.StringIO(values))]
    assert len(fills) == 20
    for i in range(4):  # grid row i (x₂ = yy[i, 0], rising) is image row 3 − i: the top is the largest x₂
        for j in range(5):
            assert "#" + bytes(pixels[4 * (3 - i) + 1, 4 * j + 2]).hex() == fills[5 * i + j]

"""Notebook 03_backprop: the values it shows are the engine's, and its claims hold on them."""

import math

import numpy as np
import pytest
from notebook_driver import load_module, notebook_text

import engine
import engine.functional as F
from engine import Tensor
from engine.autograd import Function, topological_order
from engine.course import checkpoints
from engine.course import graph as graphs
from engine.course.labs import backprop as backprop_lab

NB = load_module("notebooks/03_backprop.py")  # the lesson cells, as tests and make_checkpoints import them


def _trained(split, width=16, depth=2, activation="tanh", optimizer="adam", lr=0.03, epochs=60):
    """The training history the page's own cells give for these settings."""
    k = int(max(split[1].max(), split[3].max())) + 1
    model = NB.mlp(2, k, width, depth, activation, seed=0)
    return NB.train_playground(
        model, backprop_lab.playground_optimizer(optimizer, model.parameters(), lr), split, epochs
    )


def _overfit(split, width=16, activation="tanh"):
    return NB.overfit_one_batch(NB.mlp(2, 2, width, 2, activation, seed=0), split[0], split[1])


# ----------------------------------------------------------------------------- the lesson cells


def _mlp_loss(seed=0):
    """A loss with a broadcast bias, a value used twice and a reduction: the walk's hard cases."""
    rng = np.random.default_rng(seed)
    model = NB.mlp(2, 3, 8, 2, "tanh", seed=seed)
    X, y = rng.standard_normal((5, 2)), np.array([0, 1, 2, 1, 0])
    return model, F.cross_entropy(model(Tensor(X)), y)


def test_03_the_teaching_copies_agree_with_the_library():
    rng = np.random.default_rng(0)
    a, b, g = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((3, 4))
    ours, theirs = ([Tensor(v, requires_grad=True) for v in (a, b)] for _ in range(2))
    np.testing.assert_array_equal(NB.Mul.apply(*ours).data, (theirs[0] * theirs[1]).data)
    (NB.Mul.apply(*ours) * Tensor(g)).sum().backward()
    (theirs[0] * theirs[1] * Tensor(g)).sum().backward()
    for mine, engines in zip(ours, theirs):  # b was broadcast over the rows: its gradient summed back
        np.testing.assert_allclose(mine.grad.numpy(), engines.grad.numpy(), rtol=1e-15)
    # the sort and the walk: autograd's order, and backward()'s gradients, on an MLP's loss
    model, loss = _mlp_loss()
    assert NB.topological_sort(loss) == topological_order(loss)
    walked = NB.backward_walk(loss)
    loss.backward()
    for p in model.parameters():
        np.testing.assert_allclose(walked[p], p.grad.numpy(), rtol=1e-12, atol=1e-15)
    for name in graphs.EXPRESSIONS:
        leaves = [Tensor(np.array(v), requires_grad=True) for v in (0.8, -1.3, 0.4)]
        out = graphs.EXPRESSIONS[name]["build"](*leaves)
        assert NB.topological_sort(out) == topological_order(out), name
    # the dense layer by hand, against autograd
    assert max(graphs.dense_layer_gradients(NB.linear_backward, 7, 5, 3, seed=4).max_difference.values()) < 1e-12
    # the gradient check passes where engine.gradcheck passes, and catches what it catches
    xs = [rng.standard_normal((2, 3)), rng.standard_normal(3) + 3]
    for f in (lambda u, v: (u * v).tanh(), lambda u, v: (u / v).exp() * u):
        assert engine.gradcheck(f, xs) and NB.gradient_check(f, xs) < 1e-8
    with pytest.raises(engine.GradcheckError):
        engine.gradcheck(lambda u, v: _SwappedMul.apply(u, v).tanh(), xs)
    assert NB.gradient_check(lambda u, v: _SwappedMul.apply(u, v).tanh(), xs) > 0.1
    # the lesson calls the engine's backward() and an optimizer's step()
    import inspect

    assert ".backward()" in inspect.getsource(NB.train_step) and ".step()" in inspect.getsource(NB.train_step)


class _SwappedMul(Function):
    """r = a·b;  ∂r/∂a = a, ∂r/∂b = b (the prompt's edit: the shares swapped)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * a, g * b


def _one_sided(f, x, h):
    return (f(x + h) - f(x)) / h


def test_03_an_edited_lesson_cell_changes_the_figures_that_use_it():
    """The page's "change this cell" prompts: what the learner is told to expect is what happens."""
    text, shipped = notebook_text("03_backprop")
    assert "largest difference 0.0e+00" in text and shipped["grad_check_error"] < 1e-8
    # Mul with its shares swapped: the stepper's gradients change and the page says they are wrong
    text, defs = notebook_text("03_backprop", Mul=_SwappedMul)
    assert defs["input_grads"]["x"] != pytest.approx(shipped["input_grads"]["x"])
    assert defs["input_grads"]["y"] != pytest.approx(shipped["input_grads"]["y"])
    assert "they differ" in text and "the gradients are wrong" in text
    assert 0.3 < defs["grad_check_error"] < 3  # "about 1"
    # the one-sided difference: the float64 V's bottom moves from about 1e-6 to about 1e-8
    text, defs = notebook_text("03_backprop", central_difference=_one_sided)
    (h0, e0), (h1, e1) = shipped["fd_best"]["float64"], defs["fd_best"]["float64"]
    assert 1e-7 < h0 < 1e-5 and 1e-9 < h1 < 1e-7
    assert 1e-12 < e0 < 1e-10 and 1e-9 < e1 < 1e-8  # "about 1e-11", "a few times 1e-9"


def train_step(model, optimizer, X, y):
    """The prompt's edit of train_step: optimizer.zero_grad() deleted."""
    loss = F.cross_entropy(model(Tensor(X)), y)
    loss.backward()
    optimizer.step()
    return float(loss.data)


def test_03_an_edited_training_step_is_not_shown_the_shipped_model():
    text, defs = notebook_text("03_backprop", train_step=train_step)
    assert defs["pg_run"] is None and defs["overfit_losses"] is None and defs["pg_default"] is None
    assert text.count("The shipped model was trained with other code than this page's mlp , train_step") == 2
    assert "so it is not loaded: train with the button" in text  # under the map, and in the overfit check
    text, defs = notebook_text("03_backprop", train_step=train_step, train_button=True, overfit_button=True)
    losses = defs["pg_run"].history["train_loss"]
    shipped = checkpoints.load_named("backprop_playground")
    assert max(losses[len(losses) // 2 :]) > 1 and shipped["history"]["train_loss"][-1] < 0.1  # it jumps about
    assert defs["overfit_losses"][-1] > 0.5 and shipped["overfit_losses"][-1] < 0.05  # it stalls far above 0
    assert "Trained just now by the lesson cells above" in text and "a lesson cell above is broken" in text


# ----------------------------------------------------------------------------- the page


def test_03_graph_step_through_shows_the_engine_gradients():
    for name in graphs.EXPRESSIONS:
        text, defs = notebook_text("03_backprop", expr=name, x_val=-3.0, y_val=3.0, z_val=0.5, bp_step=2)
        g = graphs.expression_graph(name, -3.0, 3.0, 0.5)
        assert defs["input_grads"] == pytest.approx(graphs.input_gradients(g))
        for label, grad in graphs.input_gradients(g).items():
            assert f"∂f/∂{label} = {grad:.6g}" in text
        assert defs["graph_step"].node.id == g.order[2]
        assert "Local rule" in text or "is an input" in text
    text, defs = notebook_text("03_backprop", expr="neuron")
    assert "No value is used twice" in text


def test_03_the_backward_step_slider_spans_the_chosen_graph():
    """One position per step of the backward pass, for each expression (issue 25: it ran 0-13 for
    graphs of 6 or 12 steps), and the graph's shape does not depend on the inputs."""
    for name in graphs.EXPRESSIONS:
        _, defs = notebook_text("03_backprop", expr=name)
        steps = len(defs["graph"].order)
        assert defs["bp_step"].stop == steps - 1 and defs["bp_step"].start == 0
        assert all(len(graphs.expression_graph(name, *v).order) == steps for v in ((-3, 3, 0.5), (0, 0, 0), (2, -1, 3)))
        text, _ = notebook_text("03_backprop", expr=name, bp_step=steps - 1)
        assert f"Step {steps - 1} of {steps - 1}." in text


def test_03_stepper_shows_shares_adding_up_at_x():
    g = graphs.expression_graph("reuse", 1.5, -0.5, 0.3)
    x = next(n for n in g.nodes if n.label == "x")
    seen = []
    for k in range(len(g.order)):
        text, defs = notebook_text("03_backprop", expr="reuse", bp_step=k)
        total, got, n = defs["graph_sums"][x.id]
        seen.append(got)
        assert f"{got} of 3 contributions arrived, partial sum {total:.6g}" in text
        assert "Backward order" in text and " → ".join(g.node(i).label for i in g.order) in text
    assert seen[0] == 0 and seen[-1] == 3 and sorted(set(seen)) == [0, 1, 2, 3]
    assert f"partial sum {x.grad:.6g} (its final gradient)" in text


def test_03_reverse_mode_costs_about_two_forwards_whatever_n():
    for n in (1, 1000):
        text, defs = notebook_text("03_backprop", mode_n=n)
        m = defs["modes"]
        np.testing.assert_allclose(m.grad_reverse_mode, m.grad_autograd, rtol=1e-12)
        np.testing.assert_allclose(m.grad_forward_mode, m.grad_autograd, rtol=1e-10)
        assert f"Reverse mode costs {m.reverse_mode_in_forwards:.3g} forward passes" in text
        assert 2 <= m.reverse_mode_in_forwards <= 3
        assert abs(m.forward_mode_in_forwards / (2 * n) - 1) < 0.2  # "about 2n"
        assert f"forward (JVPs) {n} {m.jvp_madds:,}" in text
        swept = defs["mode_sweep"][n]  # the chart's curves: the counts in closed form, in forward passes
        assert tuple(swept) == (m.forward_mode_in_forwards, m.reverse_mode_in_forwards)


def test_03_what_backward_keeps_grows_with_the_batch_as_the_prose_says():
    shown = {}
    for batch, depth in ((1, 1), (8192, 1), (8192, 8)):
        text, defs = notebook_text("03_backprop", mem_batch=batch, mem_depth=depth)
        s = defs["saved"]
        shown[batch, depth] = s
        assert f"leaves {s.activation_floats:,} floats" in text and f"against {s.parameter_floats:,} parameters" in text
    assert shown[8192, 1].activation_floats == 8192 * shown[1, 1].activation_floats
    assert shown[8192, 8].activation_floats - shown[8192, 1].activation_floats == 7 * 8192 * 64
    assert shown[8192, 1].parameter_floats == shown[1, 1].parameter_floats


def test_03_dense_layer_and_gradient_check():
    text, defs = notebook_text("03_backprop", dense_n=64, dense_in=32, dense_out=32, gc_x0=-2.0, gc_h=1e-12)
    assert max(defs["dense"].max_difference.values()) < 1e-10
    assert "(32, 32)" in text and "(64, 32)" in text
    # one weight convention, PyTorch's: W stored (out, in), Z = X Wᵀ + b, dW = dZᵀX (issue 13)
    small_text, small = notebook_text("03_backprop", dense_n=7, dense_in=5, dense_out=3)
    assert small["dense"].shapes["W"] == small["dense"].shapes["dW"] == (3, 5)
    assert "W is (3, 5) (out, in), Z = XWᵀ + b is (7, 3)" in small_text
    assert "dW (3, 5)" in small_text and "XW + b" not in small_text and "Z = XW " not in small_text
    fd = backprop_lab.finite_difference_errors(NB.central_difference, -2.0, hs=np.logspace(-12, 0, 61))
    for dt in ("float32", "float64"):
        h, e = backprop_lab.best_step(fd, dt)
        assert defs["fd_best"][dt] == pytest.approx((h, e))
        assert f"smallest {e:.1e} at h ≈ {h:.0e}" in text


def test_03_playground_opens_on_the_default_model_trained_at_load():
    """Complete on open (issue 16): the default network, trained with the controls' defaults, and
    its overfit check are on the page before any click; the words on the page say so."""
    text, defs = notebook_text("03_backprop")
    d = backprop_lab.PLAYGROUND_DEFAULTS
    Xtr, ytr, Xva, yva = backprop_lab.make_playground_data(d["data"], n=240, noise=d["noise"], seed=0)
    for got, want in zip(defs["pg_split"], (Xtr, ytr, Xva, yva)):
        np.testing.assert_array_equal(got, want)  # the default model is trained on the data shown
    made = NB.train_default_playground()  # what the lesson cells train now: the shipped checkpoint's numbers
    assert defs["pg_run_is_default"] and "Press" not in text
    np.testing.assert_allclose(defs["pg_run"].history["train_loss"], made["history"]["train_loss"], rtol=1e-6)
    np.testing.assert_allclose(defs["pg_run"].grid_probs, made["grid_probs"], rtol=1e-6, atol=1e-9)
    h = {k: list(v) for k, v in made["history"].items()}
    for key, values in _trained(defs["pg_split"]).items():  # the button's path gives the same run
        np.testing.assert_allclose(values, h[key], rtol=1e-12)
    assert "Trained with the default settings above and shipped with the course" in text
    assert "come from the shipped checkpoint" in text
    assert f"train loss {h['train_loss'][-1]:.4f} , validation accuracy {100 * h['val_acc'][-1]:.1f} %" in text
    assert h["val_acc"][-1] >= 0.9 and h["train_loss"][-1] < 0.1  # a trained model, not the untrained one
    # the prose: the untrained network's first loss is about ln K
    assert f"Initial training loss {defs['pg_untrained'].initial_loss:.4f}" in text
    assert abs(defs["pg_untrained"].initial_loss - math.log(2)) < 0.3
    # the overfit check of the default network, run at load: its loss falls close to 0
    losses = made["overfit_losses"]
    np.testing.assert_allclose(defs["overfit_losses"], losses, rtol=1e-6)
    np.testing.assert_allclose(_overfit(defs["pg_split"]), losses, rtol=1e-12)
    assert losses[-1] < 0.05 and f"Final loss on the batch: {losses[-1]:.2e} ." in text
    assert "Run on the default data and network and shipped with the course" in text and "memorise a batch" in text


def test_03_playground_retrains_behind_the_button():
    Xtr, ytr, Xva, yva = backprop_lab.make_playground_data("moons", n=240, noise=0.15, seed=0)
    text, defs = notebook_text("03_backprop", pg_epochs=20)  # a setting moved: the untrained net of it
    assert defs["pg_run"] is None and not defs["pg_run_is_default"] and "train runs 20 epochs" in text
    assert defs["overfit_losses"] is not None  # the epochs do not change the overfit check's network
    text, defs = notebook_text("03_backprop", pg_width=8)
    assert defs["pg_run"] is None and defs["overfit_losses"] is None and "The button runs the check" in text
    text, defs = notebook_text("03_backprop", train_button=True, pg_epochs=20)
    history = _trained((Xtr, ytr, Xva, yva), epochs=20)
    np.testing.assert_allclose(defs["pg_run"].history["train_loss"], history["train_loss"])
    assert not defs["pg_run_is_default"] and f"train loss {history['train_loss'][-1]:.4f}" in text
    text, defs = notebook_text(
        "03_backprop",
        train_button=True,
        pg_epochs=50,
        pg_opt="sgd",
        pg_lr=3.0,
        pg_act="relu",
        pg_depth=4,
        pg_width=64,
        pg_data="spirals",
    )
    assert defs["pg_run"].diverged and "Training diverged" in text
    text, defs = notebook_text("03_backprop", overfit_button=True, pg_width=8, pg_act="relu")
    want = _overfit((Xtr, ytr, Xva, yva), width=8, activation="relu")
    np.testing.assert_allclose(defs["overfit_losses"], want)
    assert "Run on the default data" not in text and f"{want[-1]:.2e}" in text


def test_03_the_step_rule_finds_the_bottom_of_the_v():
    """Issue 25: the page's rule h* = (3ε|f|/|f‴|)^(1/3), on the line under the V, against the V it
    draws: the lowest dot within about a decade of h*, the error at h* typically within a factor of
    five of the lowest dot's (above or below), and exercise 3 grades the rule's answer."""
    torch = pytest.importorskip("torch")

    def f_and_f3(x0):  # the probe by torch, three derivatives deep: an oracle apart from the lab's formula
        x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
        f = torch.sin(x) * torch.exp(x) / (1 + x * x)
        (d1,) = torch.autograd.grad(f, x, create_graph=True)
        (d2,) = torch.autograd.grad(d1, x, create_graph=True)
        return f.item(), torch.autograd.grad(d2, x)[0].item()

    for x0 in (0.7, -2.0, 2.0):  # the default point and the slider's ends
        text, defs = notebook_text("03_backprop", gc_x0=x0)
        f, f3 = f_and_f3(x0)
        for dt in ("float32", "float64"):
            rule = defs["fd_rule"][dt]
            assert rule.h == pytest.approx((3 * float(np.finfo(dt).eps) * abs(f) / abs(f3)) ** (1 / 3), rel=1e-9)
            at_h = backprop_lab.finite_difference_errors(NB.central_difference, x0, hs=[rule.h]).error(dt)[0]
            assert rule.error_at_h == at_h and (rule.best_h, rule.best_error) == defs["fd_best"][dt]
            assert (
                f"{dt}: h* = {rule.h:.1e} , error there {rule.error_at_h:.1e} ; the lowest dot: "
                f"{rule.best_error:.1e} at h ≈ {rule.best_h:.0e}, {rule.decades_from_best:.1f} decades away" in text
            )
            assert rule.decades_from_best <= 1.2 and 0.1 < rule.error_at_h / rule.best_error < 5
        if x0 == 0.7:
            default_text, default_rule, exercise = text, defs["fd_rule"]["float64"], defs["exercises_check"]["h"]
    text, defs = notebook_text("03_backprop", gc_x0=0.0)  # f(0) = 0: no round-off to balance
    assert "no h* to find" in text and np.isnan(defs["fd_rule"]["float64"].h)
    # every point of the slider: "within about a decade", "typically within a factor of five"
    for dt in ("float32", "float64"):
        decades, factors = [], []
        for x0 in np.round(np.arange(-2.0, 2.05, 0.1), 1):
            fd = backprop_lab.finite_difference_errors(NB.central_difference, float(x0), hs=backprop_lab.FD_STEPS)
            rule = backprop_lab.step_rule_check(NB.central_difference, NB.step_rule, fd, float(x0))[dt]
            if x0 != 0.0:
                ratio = rule.error_at_h / rule.best_error if rule.best_error else np.inf
                decades.append(rule.decades_from_best)
                factors.append(max(ratio, 1 / ratio) if ratio else np.inf)
        assert max(decades) <= 1.2 and np.median(factors) < 5, (dt, max(decades), np.median(factors))
    # exercise 3 grades log₁₀ h* with a tolerance that also takes the lowest dot (the flat bottom)
    assert exercise.truth == pytest.approx(np.log10(default_rule.h)) and 1.0 <= exercise.abs_tol <= 1.3
    hint_answer = np.log10(np.finfo("float64").eps ** (1 / 3))  # balancing h² against ε/h alone: −5.2
    for answer in (hint_answer, exercise.truth, np.log10(default_rule.best_h)):
        assert exercise.check(f"{answer:.1f}")[0], answer
    for answer in (-7.0, -3.0):
        assert not exercise.check(f"{answer:.1f}")[0], answer
    assert f"within {exercise.abs_tol:.1f} decades counts" in default_text


def test_03_exercises_are_graded_by_the_engine():
    s = 1 / (1 + math.exp(1.5))
    modes = f"{NB.mode_costs(500)[1] / NB.mode_costs(500)[0]:.0f}"
    answers = {  # exercise: (a right answer, a wrong one)
        "neuron": (f"{s * (1 - s) * 2:.4f}", "0.5"),
        "dw": ("5", "10"),
        "h": ("-6", "-12"),
        "uses": ("3", "2"),
        "modes": (modes, "2"),
        "saved": ("6400", "64"),
        "held": ("10", "17"),
    }
    right, wrong = ({k: pair[i] for k, pair in answers.items()} for i in (0, 1))
    text, defs = notebook_text("03_backprop", answers_check=right)
    truth = {k: e.truth for k, e in defs["exercises_check"].items()}
    assert truth["neuron"] == pytest.approx(s * (1 - s) * 2)
    assert truth["dw"] == 5 and -8 <= truth["h"] <= -4
    assert truth["uses"] == 3
    assert 900 < truth["modes"] < 1100
    assert truth["saved"] == 100 * 64
    assert truth["held"] == math.ceil(16 / 2) + 2  # the formula the section draws
    assert text.count("Right") == 7
    text, _ = notebook_text("03_backprop", answers_check=wrong)
    assert "Right" not in text and text.count("Not quite") == 7


def test_03_playground_trains_on_a_drawn_data_set():
    from engine.course import widgets

    rng = np.random.default_rng(5)  # two clusters, as a learner would spray them
    X = np.concatenate([rng.normal((-1.5, -1.0), 0.3, (12, 2)), rng.normal((1.0, 1.5), 0.3, (12, 2))])
    y = np.repeat([0, 1], 12)
    drawing = widgets.scatter(
        backprop_lab.CANVAS_CLASSES, bounds=backprop_lab.CANVAS_BOUNDS, size=(360, 360), start=(X, y)
    ).value
    text, defs = notebook_text("03_backprop", pg_canvas=drawing, train_button=True, pg_epochs=30)
    drawn = widgets.scatter_data(drawing, bounds=backprop_lab.CANVAS_BOUNDS)
    np.testing.assert_allclose(drawn.X, X, atol=1e-5)  # the canvas gives back what was drawn
    expected = backprop_lab.split_drawn(drawn.X, drawn.y, seed=0)
    for got, want in zip(defs["pg_split"], expected):
        np.testing.assert_array_equal(got, want)
    assert "24 points, 2 classes" in text
    history = _trained(expected, epochs=30)
    np.testing.assert_allclose(defs["pg_run"].history["train_loss"], history["train_loss"])
    assert history["val_acc"][-1] == 1.0  # two separated clusters
    empty = {**drawing, "data": []}
    text, defs = notebook_text("03_backprop", pg_canvas=empty, train_button=True)
    assert defs["pg_split"] is None and defs["pg_run"] is None and "No data set to train on" in text


def test_03_loss_zoom_shows_the_second_half_of_training_until_a_stretch_is_brushed():
    """Issue 23: the loss curve is a control (a brush picks epochs); at open the zoom shows the
    second half of the shipped run, and its text gives the losses at the stretch's two ends."""
    text, defs = notebook_text("03_backprop")
    history = defs["pg_run"].history
    n = len(history["train_loss"])
    first = int(np.ceil(n / 2))
    assert (
        f"Over epochs {first} to {n} the training loss went from {history['train_loss'][first - 1]:.4f} to "
        f"{history['train_loss'][-1]:.4f}"
    ) in text
    assert defs["loss_overview"].selections == {}


def test_03_the_first_loss_is_explained_by_the_untrained_logits():
    """Issue 25: the playground's first loss (0.825 at the defaults) is not ln 2. The page shows the
    second-order expansion around equal logits with the values it computes, and it holds."""
    text, defs = notebook_text("03_backprop")
    f = defs["pg_first_loss"]
    assert f.loss == pytest.approx(defs["pg_untrained"].initial_loss, rel=1e-12) and f.loss > math.log(2) + 0.1
    assert f"on average {f.true_class:.3f}" in text and f"on average {2 * f.spread:.3f}" in text
    assert f"≈ {f.approximation:.4f}" in text and abs(f.approximation - f.loss) < 0.005
    for data in backprop_lab.DATASETS:
        for act in ("tanh", "relu"):
            _, defs = notebook_text("03_backprop", pg_data=data, pg_act=act)
            f = defs["pg_first_loss"]
            assert abs(f.approximation - f.loss) < 0.03, (data, act, f)
    # "ln K only if its logits are equal at every point": the same network with a zero last layer
    split = defs["pg_split"]
    model = NB.mlp(2, 3, 16, 2, "relu", seed=0)
    model[-1].weight.data[:] = 0.0
    flat = backprop_lab.initial_loss(model, split[0], split[1], 3)
    assert flat.loss == pytest.approx(math.log(3), rel=1e-12) and flat.true_class == flat.spread == 0.0


def test_03_the_playground_says_where_it_starts_to_overfit():
    """Issue 25: validation accuracy peaks (100.0 % after epoch 19) and ends lower (93.3 %) at the defaults; the page
    says so from the history it shows, and says nothing of overfitting when the curve ends at its peak."""
    text, defs = notebook_text("03_backprop")
    val = np.asarray(defs["pg_run"].history["val_acc"])
    peak = int(np.argmax(val))
    assert val[peak] - val[-1] > 0.05  # the shipped run overfits
    assert (
        f"peaked at {100 * val[peak]:.1f} % after epoch {peak + 1} and ends {100 * (val[peak] - val[-1]):.1f} "
        "points lower"
        in text
        and "(overfitting)" in text
    )
    steady = backprop_lab.overfitting_note({"val_acc": [0.5, 0.9, 0.95, 0.948]})
    assert "no sign of overfitting" in steady and "95.0 %** after epoch 3" in steady


# ----------------------------------------------------------------------------- write your own op


_TOUCHES = {"no accumulation": "X", "missing transpose": "W", "broadcast not summed back": "b"}


class _ForgotTheSkip(NB.ResidualLinear):
    """The prompt's first edit: dX = dZ W, the skip's share forgotten."""

    @staticmethod
    def backward(ctx, dZ):
        X, W = ctx.saved_tensors
        return dZ @ W, dZ.T @ X, dZ.sum(axis=0)


class _BiasShareUnsummed(NB.ResidualLinear):
    """The prompt's second edit: the bias's share returned with the output's shape, dZ itself."""

    @staticmethod
    def backward(ctx, dZ):
        X, W = ctx.saved_tensors
        return dZ + dZ @ W, dZ.T @ X, dZ


def test_03_your_own_op_passes_each_injected_bug_is_caught_and_checkpointing_holds_fewer_floats():
    """Two sections read from one run of the page at its defaults (each notebook run costs seconds)."""
    text, defs = notebook_text("03_backprop")
    mine, *bugs = defs["op_checks"]
    assert mine.bug is None and not mine.caught and mine.gradcheck is True
    assert "Your op's backward agrees with central differences on every input." in text
    assert [c.bug for c in bugs] == list(backprop_lab.OP_BUGS) == list(_TOUCHES)
    for c in bugs:  # the table shows the values, and engine.gradcheck names the input the bug touches
        assert f"{c.bug} {c.errors['X']:.1e} {c.errors['W']:.1e} {c.errors['b']:.1e}" in text
        assert f"input {'XWb'.index(_TOUCHES[c.bug])} (shape" in c.gradcheck and c.gradcheck in text
    # "each shows up only in the input it touches", over 5 random draws; the op passes on each
    for seed in range(5):
        assert not backprop_lab.check_op(NB.gradient_check, NB.ResidualLinear, seed=seed).caught
        for bug, touched in _TOUCHES.items():
            c = backprop_lab.check_op(NB.gradient_check, NB.with_bug(NB.ResidualLinear, bug), seed=seed, bug=bug)
            assert c.errors[touched] > 1e-2 and isinstance(c.gradcheck, str), (seed, bug)
            assert all(e < 1e-8 for k, e in c.errors.items() if k != touched), (seed, bug)
    # "each leaves the shapes right": every share has its input's shape before any summing back
    inputs = backprop_lab.op_inputs()
    for bug in _TOUCHES:
        ctx = type("Ctx", (), {"saved_tensors": (inputs["X"], inputs["W"])})()
        shares = NB.with_bug(NB.ResidualLinear, bug).backward(ctx, np.ones((4, 3)))
        assert [s.shape for s in shares] == [v.shape for v in inputs.values()]
    # "the third would hide in a test with a batch of one row"
    one_row = backprop_lab.check_op(NB.gradient_check, NB.with_bug(NB.ResidualLinear, "broadcast not summed back"), n=1)
    assert not one_row.caught and one_row.gradcheck is True
    # memory against recompute, at the defaults: n = 16, k = 4 = √n
    r = defs["recompute"]
    a = backprop_lab.CHAIN_BATCH * backprop_lab.CHAIN_WIDTH
    assert (r.depth, r.segment) == (16, 4) and r.plain_floats == 17 * a and r.checkpointed_floats == 8 * a
    assert f"plain {r.plain_floats:,} 17 16" in text and f"checkpointed, k = 4 {r.checkpointed_floats:,} 8 32" in text
    assert "Checkpointing holds 47% of plain backprop's floats" in text and r.max_difference == 0.0
    assert "covers the whole chain" not in text


def test_03_the_prompts_edits_of_your_own_op_and_checkpointing_at_the_controls_ends():
    """The op's two 'change this cell' edits, each run with one checkpointing control at an end."""
    a = backprop_lab.CHAIN_BATCH * backprop_lab.CHAIN_WIDTH
    text, defs = notebook_text("03_backprop", ResidualLinear=_ForgotTheSkip, ck_depth=4)
    mine = defs["op_checks"][0]
    assert mine.errors["X"] > 1e-2 and mine.errors["W"] < 1e-8 and mine.errors["b"] < 1e-8
    assert "Your op's backward is wrong in dX:" in text
    assert mine.errors["X"] == pytest.approx(defs["op_checks"][1].errors["X"])  # "like the no accumulation row"
    assert defs["recompute"].checkpointed_floats == 5 * a and "covers the whole chain" in text  # k = 4 = n
    text, defs = notebook_text("03_backprop", ResidualLinear=_BiasShareUnsummed, ck_segment=1)
    assert not defs["op_checks"][0].caught and "agrees with central differences on every input" in text
    assert defs["recompute"].checkpointed_floats == defs["recompute"].plain_floats  # n checkpoints: no saving
    assert "Checkpointing holds 100%" in text and "covers the whole chain" not in text
    text, defs = notebook_text("03_backprop", ck_segment=64)
    assert defs["recompute"].checkpointed_floats == defs["recompute"].plain_floats and "covers the whole chain" in text


def test_03_the_injected_bug_lands_where_the_page_says():
    """The error maps under the table, for each bug the dropdown injects; its default, the missing
    transpose, is read from the page at its defaults."""
    X, W, b = backprop_lab.op_inputs().values()
    dZ = 1 - np.tanh(X + X @ W.T + b) ** 2  # the gradient arriving at Z from Σ tanh(Z)
    bugs = ("none", *backprop_lab.OP_BUGS)
    shown, texts = {}, {}
    for bug in bugs:
        texts[bug], defs = notebook_text("03_backprop", **({} if bug == "missing transpose" else {"op_bug": bug}))
        shown[bug] = defs["op_errors"]
        worst = {k: float(np.abs(v).max()) for k, v in shown[bug].items()}
        assert worst == pytest.approx(defs["op_checks"][bugs.index(bug)].errors, rel=1e-12)  # the table's numbers
    assert all(np.abs(v).max() < 1e-8 for v in shown["none"].values()) and "agrees to about 10⁻¹⁰" in texts["none"]
    np.testing.assert_allclose(shown["no accumulation"]["X"], -dZ, atol=1e-8)  # "minus the share the skip sends it"
    assert "Every element of dX is off" in texts["no accumulation"]
    d = shown["missing transpose"]["W"]  # "dW's diagonal is right and the rest is wrong"
    assert np.abs(np.diag(d)).max() < 1e-8 and np.abs(d[~np.eye(3, dtype=bool)]).min() > 1e-3
    assert "dW's diagonal is right and the rest is wrong" in texts["missing transpose"]
    np.testing.assert_allclose(shown["broadcast not summed back"]["b"], -dZ[1:].sum(0), atol=1e-8)  # the other rows'
    assert "Every entry of db is off" in texts["broadcast not summed back"]


def test_03_pytorch_sums_a_broadcast_share_back_as_the_engine_does():
    """The prompt's 'as PyTorch does': a custom Function returning dZ for a broadcast bias."""
    torch = pytest.importorskip("torch")

    class TorchResidual(torch.autograd.Function):
        @staticmethod
        def forward(ctx, X, W, b):  # torch's linear, X Wᵀ + b, and the skip
            ctx.save_for_backward(X, W)
            return torch.nn.functional.linear(X, W, b) + X

        @staticmethod
        def backward(ctx, dZ):  # the bias's share has the output's shape, (4, 3)
            X, W = ctx.saved_tensors
            return torch.addmm(dZ, dZ, W), torch.mm(dZ.t(), X), dZ

    inputs = [torch.tensor(v, requires_grad=True) for v in backprop_lab.op_inputs().values()]
    TorchResidual.apply(*inputs).tanh().sum().backward()
    ours = [Tensor(v, requires_grad=True) for v in backprop_lab.op_inputs().values()]
    _BiasShareUnsummed.apply(*ours).tanh().sum().backward()
    for t, o in zip(inputs, ours):
        np.testing.assert_allclose(t.grad.numpy(), o.grad.numpy(), rtol=1e-12)


# ----------------------------------------------------------------------------- memory against recompute


def test_03_checkpointing_holds_n_over_k_plus_k_activations_for_a_second_forward_pass(monkeypatch):
    """The chart's formula, ⌈n/k⌉ + k activations against n + 1, is what the page's functions
    measure at every setting, smallest at k = √n; and every layer runs forward twice (the table's 2n)."""
    a = backprop_lab.CHAIN_BATCH * backprop_lab.CHAIN_WIDTH
    for n in backprop_lab.CHAIN_DEPTHS:
        measured = {}
        for k in backprop_lab.CHAIN_SEGMENTS:
            c = backprop_lab.checkpointing_view(NB.chain, NB.checkpointed_backward, NB.saved_floats, n, k)
            kk = min(k, n)
            assert c.plain_floats == (n + 1) * a and c.checkpointed_floats == (math.ceil(n / kk) + kk) * a, (n, k)
            assert c.max_difference < 1e-12
            measured[k] = c.checkpointed_floats
        best = min(measured.values())  # "the fewest, 2√n, at k = √n"
        assert measured[round(math.sqrt(n))] == best == 2 * math.sqrt(n) * a
    layers, chain = [], NB.chain

    def counting_chain(h, weights):
        layers.append(len(weights))
        return chain(h, weights)

    monkeypatch.setitem(NB.checkpointed_backward.__globals__, "chain", counting_chain)
    weights = backprop_lab.chain_weights(16)
    x = Tensor(np.random.default_rng(1).standard_normal((backprop_lab.CHAIN_BATCH, backprop_lab.CHAIN_WIDTH)))
    for k in (1, 4, 16):
        layers.clear()
        NB.checkpointed_backward(x, weights, k)
        assert sum(layers) == 2 * 16

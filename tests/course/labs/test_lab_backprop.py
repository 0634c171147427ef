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
from engine.course import graph as graphs
from engine.course.labs import optimizers as olab


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
        e = fd.error(dtype)
        assert e[-1] > 100 * e_best and e[0] > 100 * e_best  # both arms of the V rise
        assert eps ** 0.5 / 100 < h_best < eps ** 0.25  # the bottom sits near ε^(1/3)
    assert backprop_lab.best_step(fd, "float64")[1] < 1e-9 < backprop_lab.best_step(fd, "float32")[1]
    assert fd.autograd_float64 < 1e-14 and fd.autograd_float32 < 1e-6
    with pytest.raises(ValueError, match="dtype must be"):
        backprop_lab.best_step(fd, "float16")


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
        backprop_lab.playground_optimizer("lbfgs", [], 0.1)


def test_untrained_playground_starts_near_ln_k_and_overfits_one_batch():
    Xtr, ytr, Xva, yva = backprop_lab.make_playground_data("blobs", n=200, noise=0.1, seed=0)
    run = backprop_lab.train_playground(Xtr, ytr, Xva, yva, epochs=0)
    assert run.history["train_loss"] == [] and run.grid_probs.shape[-1] == 3
    losses = backprop_lab.overfit_one_batch(Xtr, ytr, width=32, depth=2, activation="tanh", steps=300)
    assert losses[-1] < 0.05 < losses[0]




def test_default_playground_is_the_defaults_trained_and_read_from_its_checkpoint():
    import time

    backprop_lab.default_playground.cache_clear()
    started = time.process_time()
    shown = backprop_lab.default_playground()
    spent = time.process_time() - started
    assert backprop_lab.default_playground() is shown  # read once per process
    d = backprop_lab.PLAYGROUND_DEFAULTS
    split = backprop_lab.make_playground_data(d["data"], n=backprop_lab.PLAYGROUND_POINTS, noise=d["noise"], seed=0)
    for got, want in zip(shown.split, split):
        np.testing.assert_array_equal(got, want)
    run = backprop_lab.train_playground(*split, width=16, depth=2, activation="tanh", optimizer="adam", lr=0.03,
                                        epochs=60, seed=0, grid_size=40)
    for key in ("train_loss", "val_loss", "train_acc", "val_acc"):
        np.testing.assert_allclose(shown.run.history[key], run.history[key], rtol=1e-6)
    np.testing.assert_allclose(shown.run.grid_probs, run.grid_probs, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(shown.run.grid_x, run.grid_x)
    assert shown.run.initial_loss == pytest.approx(run.initial_loss) and not shown.run.diverged
    assert shown.run.grid_probs.shape == (40, 40, 2) and shown.run.history["val_acc"][-1] >= 0.9
    losses = backprop_lab.overfit_one_batch(split[0], split[1], width=16, depth=2, activation="tanh", steps=300)
    np.testing.assert_allclose(shown.overfit_losses, losses, rtol=1e-6)
    assert shown.overfit_losses.shape == (300,) and shown.overfit_losses[-1] < 0.05
    assert spent < 0.05, f"reading the default playground took {spent:.3f} s of CPU: it is meant to be shipped"
    assert backprop_lab.is_default_playground(dict(d)) and backprop_lab.is_default_playground({})
    assert not backprop_lab.is_default_playground({"width": 8})
    with pytest.raises(ValueError, match="unknown settings \\['colour'\\]"):
        backprop_lab.is_default_playground({"colour": "red"})
    assert backprop_lab.overfit_width(2) == 8 and backprop_lab.overfit_width(32) == 32


@pytest.mark.parametrize("n", [1, 7, 300])
def test_forward_and_reverse_mode_give_the_gradient_at_their_costs(n):
    r = backprop_lab.forward_vs_reverse(n, hidden=16, seed=3)
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
def test_mode_counts_in_closed_form_are_what_the_counter_counts(n, hidden):
    counted = backprop_lab.forward_vs_reverse(n, hidden=hidden, seed=0)
    closed = backprop_lab.mode_counts(n, hidden)
    names = ("n", "hidden", "forward_madds", "jvp_passes", "jvp_madds", "vjp_passes", "vjp_madds")
    assert [getattr(closed, k) for k in names] == [getattr(counted, k) for k in names]
    assert closed.forward_mode_in_forwards == counted.forward_mode_in_forwards


def test_forward_vs_reverse_refuses_bad_sizes():
    with pytest.raises(ValueError, match="forward_vs_reverse: n must be"):
        backprop_lab.forward_vs_reverse(0)
    with pytest.raises(ValueError, match="mode_counts: hidden must be an integer in \\[1, 1024\\], got 0"):
        backprop_lab.mode_counts(5, hidden=0)


def test_saved_for_backward_grows_with_batch_and_depth_not_parameters():
    base = backprop_lab.saved_for_backward(1, depth=2, width=16)
    big = backprop_lab.saved_for_backward(50, depth=2, width=16)
    deeper = backprop_lab.saved_for_backward(50, depth=3, width=16)
    assert big.activation_floats == 50 * base.activation_floats  # one row per example
    assert deeper.activation_floats - big.activation_floats == 50 * 16  # B × width per hidden layer
    assert big.parameter_floats == base.parameter_floats == (2 * 16 + 16) + (16 * 16 + 16) + (16 * 2 + 2)
    assert big.activation_bytes == 8 * big.activation_floats
    # the first linear layer keeps its input x (B × 2): the count includes what we fed in
    assert big.per_op[-1] == ("Linear", 50 * 2)
    # inference records nothing: no graph, nothing saved
    import engine
    model = backprop_lab.build_mlp(2, 2, 16, 2)
    with engine.no_grad():
        assert model(engine.Tensor(np.zeros((5, 2))))._ctx is None
    with pytest.raises(ValueError, match="batch must be"):
        backprop_lab.saved_for_backward(0)


def test_split_drawn_standardises_shuffles_and_keeps_both_sides():
    X = np.column_stack([np.arange(8.0), np.full(8, 3.0)])  # a horizontal line: zero spread in y
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    Xtr, ytr, Xva, yva = backprop_lab.split_drawn(X, y, seed=0)
    assert len(Xtr) == 6 and len(Xva) == 2
    both = np.concatenate([Xtr, Xva])
    np.testing.assert_allclose(both.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(both[:, 0].std(), 1.0) and np.testing.assert_array_equal(both[:, 1], 0.0)
    order = np.random.default_rng(0).permutation(8)
    np.testing.assert_array_equal(np.concatenate([ytr, yva]), y[order])
    two = backprop_lab.split_drawn(X[:2], y[3:5])
    assert len(two[0]) == len(two[2]) == 1
    with pytest.raises(ValueError, match="at least 2 labelled points"):
        backprop_lab.split_drawn(X[:1], y[:1])

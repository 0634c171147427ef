"""Notebook 03_backprop: the values it shows are the engine's, and its claims hold on them.
"""

import math
import re

from pathlib import Path
import numpy as np
import pytest
from engine.course import graph as graphs
from engine.course import toc
from engine.course.labs import activations as activations_lab
from engine.course.labs import backprop as backprop_lab
from engine.course.labs import losses as losses_lab
from engine.course.labs import optimizers as optim_lab
from notebook_driver import (ROOT, assert_no_error_outputs, control_values, default_defs, load_app, load_module,
                             notebook_text, output_text, run_app)


# ----------------------------------------------------------------------------- 03_backprop

def test_03_graph_step_through_shows_the_engine_gradients():
    for name in graphs.EXPRESSIONS:
        text, defs = notebook_text("03_backprop", expr=name, x_val=-3.0, y_val=3.0, z_val=0.5, bp_step=2)
        g = graphs.expression_graph(name, -3.0, 3.0, 0.5)
        assert defs["input_grads"] == pytest.approx(graphs.input_gradients(g))
        for label, grad in graphs.input_gradients(g).items():
            assert f"∂f/∂{label} = {grad:.6g}" in text
        assert defs["graph_step"].node.id == g.order[2]
        assert "Local rule" in text or "is an input" in text
    text, defs = notebook_text("03_backprop", expr="neuron", bp_step=13)
    assert "past the end" in text and "No value is used twice" in text


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
        ref = backprop_lab.forward_vs_reverse(n, seed=0)
        np.testing.assert_allclose(m.grad_reverse_mode, ref.grad_autograd, rtol=1e-12)
        assert f"Reverse mode costs {m.reverse_mode_in_forwards:.3g} forward passes" in text
        assert 2 <= m.reverse_mode_in_forwards <= 3
        assert abs(m.forward_mode_in_forwards / (2 * n) - 1) < 0.2  # "about 2n"
        assert f"forward (JVPs) {n} {m.jvp_madds:,}" in text
        swept = {c.n: c for c in defs["mode_sweep"]}  # the chart's curves: the counts in closed form
        assert (swept[n].jvp_madds, swept[n].vjp_madds, swept[n].forward_madds) == \
            (m.jvp_madds, m.vjp_madds, m.forward_madds)


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
    fd = backprop_lab.finite_difference_errors(-2.0, hs=np.logspace(-12, 0, 61))
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
    run = backprop_lab.train_playground(Xtr, ytr, Xva, yva, width=16, depth=2, activation="tanh", optimizer="adam",
                                        lr=0.03, epochs=60, seed=0, grid_size=40)
    assert defs["pg_run_is_default"] and "Press" not in text
    np.testing.assert_allclose(defs["pg_run"].history["train_loss"], run.history["train_loss"])
    np.testing.assert_allclose(defs["pg_run"].grid_probs, run.grid_probs)
    h = run.history
    assert "Trained with the default settings above and shipped with the course" in text
    assert f"train loss {h['train_loss'][-1]:.4f} , validation accuracy {100 * h['val_acc'][-1]:.1f} %" in text
    assert h["val_acc"][-1] >= 0.9 and h["train_loss"][-1] < 0.1  # a trained model, not the untrained one
    # the prose: the untrained network's first loss is about ln K
    assert f"Initial training loss {defs['pg_untrained'].initial_loss:.4f}" in text
    assert abs(defs["pg_untrained"].initial_loss - math.log(2)) < 0.3
    # the overfit check of the default network, run at load: its loss falls close to 0
    losses = backprop_lab.overfit_one_batch(Xtr, ytr, width=16, depth=2, activation="tanh", steps=300)
    np.testing.assert_allclose(defs["overfit_losses"], losses)
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
    run = backprop_lab.train_playground(Xtr, ytr, Xva, yva, width=16, depth=2, activation="tanh", optimizer="adam",
                                        lr=0.03, epochs=20, seed=0, grid_size=40)
    np.testing.assert_allclose(defs["pg_run"].history["train_loss"], run.history["train_loss"])
    assert not defs["pg_run_is_default"] and f"train loss {run.history['train_loss'][-1]:.4f}" in text
    text, defs = notebook_text("03_backprop", train_button=True, pg_epochs=50, pg_opt="sgd", pg_lr=3.0, pg_act="relu",
                               pg_depth=4, pg_width=64, pg_data="spirals")
    assert defs["pg_run"].diverged and "Training diverged" in text
    text, defs = notebook_text("03_backprop", overfit_button=True, pg_width=8, pg_act="relu")
    want = backprop_lab.overfit_one_batch(Xtr, ytr, width=8, depth=2, activation="relu", steps=300)
    np.testing.assert_allclose(defs["overfit_losses"], want)
    assert "Run on the default data" not in text and f"{want[-1]:.2e}" in text


def test_03_exercises_are_graded_by_the_engine():
    s = 1 / (1 + math.exp(1.5))
    text, defs = notebook_text("03_backprop", answer_neuron=f"{s * (1 - s) * 2:.4f}", answer_dw="5", answer_h="-6",
                               answer_uses="3",
                               answer_modes=f"{backprop_lab.forward_vs_reverse(500).forward_mode_in_forwards:.0f}",
                               answer_saved="6400")
    assert defs["exercise_neuron"].truth == pytest.approx(s * (1 - s) * 2)
    assert defs["exercise_dw"].truth == 5 and -8 <= defs["exercise_h"].truth <= -4
    assert defs["exercise_uses"].truth == 3
    assert 900 < defs["exercise_modes"].truth < 1100
    assert defs["exercise_saved"].truth == 100 * 64
    assert text.count("Right") == 6
    text, _ = notebook_text("03_backprop", answer_neuron="0.5", answer_dw="10", answer_h="-12", answer_uses="2",
                            answer_modes="2", answer_saved="64")
    assert "Right" not in text and text.count("Not quite") == 6




def test_03_playground_trains_on_a_drawn_data_set():
    from engine.course import widgets

    rng = np.random.default_rng(5)  # two clusters, as a learner would spray them
    X = np.concatenate([rng.normal((-1.5, -1.0), 0.3, (12, 2)), rng.normal((1.0, 1.5), 0.3, (12, 2))])
    y = np.repeat([0, 1], 12)
    drawing = widgets.scatter(backprop_lab.CANVAS_CLASSES, bounds=backprop_lab.CANVAS_BOUNDS, size=(360, 360),
                              start=(X, y)).value
    text, defs = notebook_text("03_backprop", pg_canvas=drawing, train_button=True, pg_epochs=30)
    drawn = widgets.scatter_data(drawing, bounds=backprop_lab.CANVAS_BOUNDS)
    np.testing.assert_allclose(drawn.X, X, atol=1e-5)  # the canvas gives back what was drawn
    expected = backprop_lab.split_drawn(drawn.X, drawn.y, seed=0)
    for got, want in zip(defs["pg_split"], expected):
        np.testing.assert_array_equal(got, want)
    assert "24 points, 2 classes" in text
    run = backprop_lab.train_playground(*expected, width=16, depth=2, activation="tanh", optimizer="adam", lr=0.03,
                                        epochs=30, seed=0, grid_size=40)
    np.testing.assert_allclose(defs["pg_run"].history["train_loss"], run.history["train_loss"])
    assert run.history["val_acc"][-1] == 1.0  # two separated clusters
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
    assert (f"Over epochs {first} to {n} the training loss went from {history['train_loss'][first - 1]:.4f} to "
            f"{history['train_loss'][-1]:.4f}") in text
    assert defs["loss_overview"].selections == {}

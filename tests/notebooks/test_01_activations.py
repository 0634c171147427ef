"""Notebook 01_activations: the values it shows are the engine's, and its claims hold on them.
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


# ----------------------------------------------------------------------------- 01_activations

def test_01_shows_each_activation_with_engine_values():
    app = load_app("notebooks/01_activations.py")
    for name in ("leaky_relu", "elu", "gelu"):
        text, defs = notebook_text("01_activations", act_choice=name, leaky_slope=0.25, elu_alpha=2.0)
        expected = activations_lab.output_range(name, slope=0.25, alpha=2.0).text()
        assert defs["act_range"].text() == expected
        assert f"Output range (found numerically): {expected}" in text
        assert defs["act_gap"] < 1e-9  # autograd dots sit on the formula
    assert app is not None


def test_01_minima_and_gelu_error_agree_with_the_engine():
    text, defs = notebook_text("01_activations")
    g, s = activations_lab.activation_minimum("gelu"), activations_lab.activation_minimum("silu")
    assert defs["gelu_min"] == g and defs["silu_min"] == s
    assert f"GELU's minimum {g[1]:.4f}" in text and f"SiLU's minimum {s[1]:.4f}" in text
    assert round(g[1], 2) == -0.17 and round(s[1], 2) == -0.28
    err = np.abs(activations_lab.gelu_approximation_error(np.linspace(-6, 6, 601))).max()
    assert f"{err:.2e}" in text
    rows = {r["activation"]: r for r in defs["family_rows"]}
    assert rows["Sigmoid"]["range"] == "(0, 1)" and rows["Sigmoid"]["steepest slope"] == "0.2500"


def test_01_softmax_follows_logits_and_temperature():
    text, defs = notebook_text("01_activations", logits_text="3, 0, -3", temperature=0.5)
    z = np.array([3.0, 0.0, -3.0]) / 0.5
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    np.testing.assert_allclose(defs["softmax_result"].probs, p, rtol=1e-12)
    h = -(p * np.log(p)).sum()
    assert f"H = {h:.4f} nats" in text and f"ln K = {math.log(3):.4f}" in text
    for bad, msg in [("", "at least 2"), ("1, two", "'two' is not a number"), ("x" * 200, "not a number")]:
        text, defs = notebook_text("01_activations", logits_text=bad)
        assert "Cannot read the logits" in text and msg in text and defs["softmax_result"] is None


def test_01_depth_lab_reports_the_engine_numbers():
    text, defs = notebook_text("01_activations", depth=30, width=64, depth_act="sigmoid", init="xavier")
    r = activations_lab.depth_lab(depth=30, width=64, activation="sigmoid", init="xavier", n_samples=128, seed=0)
    assert defs["depth_report"].gradient_ratio == pytest.approx(r.gradient_ratio, rel=1e-9)
    assert f"{r.gradient_ratio:.3g}" in text and "vanishes" in text
    text, _ = notebook_text("01_activations", depth=50, width=256, depth_act="relu", init="custom", init_scale=3.0)
    assert "explodes" in text


def test_01_exercises_are_graded_by_the_engine():
    text, defs = notebook_text("01_activations", answer_sigmoid="1/4", answer_softmax="0.79", answer_depth="vanish")
    assert defs["sigmoid_slope_truth"] == pytest.approx(0.25)
    p0 = math.exp(2) / (math.exp(2) + 2)
    assert defs["softmax_truth"] == pytest.approx(p0)
    assert text.count("Right") == 3
    text, _ = notebook_text("01_activations", answer_sigmoid="0.5", answer_softmax="0.33", answer_depth="explode")
    assert "Right" not in text and text.count("Not quite") == 2 and "Not this one" in text
    text, _ = notebook_text("01_activations", answer_sigmoid="a quarter")
    assert "is not a number I can read" in text



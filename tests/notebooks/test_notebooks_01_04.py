"""Notebooks 01-04: they run headless, pass `marimo check`, export, and every control can be
driven to its extremes with no error, showing the values the engine computes.

Controls are driven with `app.run(defs=...)` through tests/support/notebook_driver.py (see its docstring).
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
from notebook_driver import (ROOT, assert_no_error_outputs, control_values, default_defs, export_html,
                                   load_app, load_module, marimo_check, output_text, run_app, run_headless)

NOTEBOOKS = {
    "01_activations": ["act_choice", "leaky_slope", "elu_alpha", "x_span", "logits_text", "temperature",
                       "depth", "width", "depth_act", "init", "init_scale",
                       "answer_sigmoid", "answer_depth", "answer_softmax"],
    "02_losses": ["reg_loss", "delta", "n_outliers", "outlier_shift", "ce_logits", "ce_target", "smoothing",
                  "logit_scale", "precision", "kl_separation", "q_mu", "q_sigma", "kl_fit_button", "w0", "clf_lr",
                  "n_classes", "init_logit_scale", "answer_ln10", "answer_huber", "answer_bce"],
    "03_backprop": ["expr", "x_val", "y_val", "z_val", "bp_step", "dense_n", "dense_in", "dense_out", "gc_x0", "gc_h",
                    "pg_data", "pg_noise", "pg_width", "pg_depth", "pg_act", "pg_opt", "pg_lr", "pg_epochs",
                    "train_button", "overfit_button", "answer_neuron", "answer_db", "answer_h"],
    "04_optimizers": ["surface", "start_x", "start_y", "n_steps", "shown_opts", "lrs", "momentum_beta", "rms_alpha",
                      "adam_beta1", "adam_beta2", "adamw_decay", "traj_schedule", "bc_steps", "bc_noise",
                      "sched_steps", "sched_lr", "sched_step_size", "sched_gamma", "sched_warmup", "sched_pct",
                      "plateau_patience", "wd_lambda", "wd_lr", "clip_norm", "clip_lr",
                      "answer_adam", "answer_cosine", "answer_clip"],
}
PATHS = {nb: f"notebooks/{nb}.py" for nb in NOTEBOOKS}


def _app(nb):
    return load_app(PATHS[nb])


def _text(nb, **values):
    outputs, defs = run_app(_app(nb), **values)
    assert_no_error_outputs(outputs)
    return output_text(outputs), defs


# ----------------------------------------------------------------------------- every notebook

@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_runs_headless_without_error_output(nb):
    seconds = run_headless(PATHS[nb])
    print(f"{nb}: headless run {seconds:.1f} s")


def test_marimo_check_strict_and_wasm_rules():
    paths = list(PATHS.values())
    marimo_check(*paths)
    marimo_check(*paths, select="MW")


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_exports_to_html(nb, tmp_path):
    page = export_html(PATHS[nb], tmp_path / f"{nb}.html")
    assert toc.entry(nb).title.split()[0] in page


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_metadata_title_and_navigation(nb):
    module = load_module(PATHS[nb])
    meta = module.METADATA
    assert meta["id"] == nb and set(meta) >= {"id", "name", "summary", "topics"}
    assert module.app._config.app_title.startswith(nb[:2])
    text, _ = _text(nb)
    assert meta["name"] in text
    nav = re.findall(r"\]\(([^)]+)\)", toc.nav_md(nb, mode="site"))
    html_outputs = " ".join(str(getattr(o, "text", "")) for o in run_app(_app(nb))[0])
    for url in nav:
        assert url in html_outputs, f"{nb} does not link {url}"
    source = (ROOT / PATHS[nb]).read_text()
    assert '__generated_with = "0.25.2"' in source and "with app.setup:" in source
    assert source.count("hide_code=True") >= 4


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_every_control_is_listed_and_there_are_at_least_four(nb):
    from marimo._plugins.ui._core.ui_element import UIElement

    base = default_defs(_app(nb))
    controls = {name for name, v in base.items() if isinstance(v, UIElement)}
    assert controls == set(NOTEBOOKS[nb])
    assert len([c for c in controls if not c.startswith("answer_")]) >= 4
    assert len([c for c in controls if c.startswith("answer_")]) >= 2  # check-yourself exercises


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_every_control_at_its_extremes(nb):
    base = default_defs(_app(nb))
    values = {name: control_values(base[name]) for name in NOTEBOOKS[nb]}
    # all controls at their first value (minimum), then all at their second (maximum)
    for k in (0, 1):
        _text(nb, **{name: v[min(k, len(v) - 1)] for name, v in values.items()})
    # every option of every choice control: run i sets each one to its option i (cycling), the
    # numeric controls stay at their defaults
    choices = {name: vs for name, vs in values.items() if not isinstance(vs[0], (int, float))}
    for i in range(max((len(vs) for vs in choices.values()), default=0)):
        _text(nb, **{name: vs[i % len(vs)] for name, vs in choices.items()})


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_the_same_in_your_own_script_runs(nb, tmp_path, monkeypatch):
    source = (ROOT / PATHS[nb]).read_text()
    section = source[source.index("The same in your own script"):]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, f"{nb} has no script block"
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        code = "\n".join(line[4:] if line.startswith("    ") else line for line in block.splitlines())
        exec(compile(code, f"{nb}-script", "exec"), {})


# ----------------------------------------------------------------------------- 01_activations

def test_01_shows_each_activation_with_engine_values():
    app = _app("01_activations")
    for name in ("leaky_relu", "elu", "gelu"):
        text, defs = _text("01_activations", act_choice=name, leaky_slope=0.25, elu_alpha=2.0)
        expected = activations_lab.output_range(name, slope=0.25, alpha=2.0).text()
        assert defs["act_range"].text() == expected
        assert f"Output range (found numerically): {expected}" in text
        assert defs["act_gap"] < 1e-9  # autograd dots sit on the formula
    assert app is not None


def test_01_minima_and_gelu_error_agree_with_the_engine():
    text, defs = _text("01_activations")
    g, s = activations_lab.activation_minimum("gelu"), activations_lab.activation_minimum("silu")
    assert defs["gelu_min"] == g and defs["silu_min"] == s
    assert f"GELU's minimum {g[1]:.4f}" in text and f"SiLU's minimum {s[1]:.4f}" in text
    assert round(g[1], 2) == -0.17 and round(s[1], 2) == -0.28
    err = np.abs(activations_lab.gelu_approximation_error(np.linspace(-6, 6, 601))).max()
    assert f"{err:.2e}" in text
    rows = {r["activation"]: r for r in defs["family_rows"]}
    assert rows["Sigmoid"]["range"] == "(0, 1)" and rows["Sigmoid"]["steepest slope"] == "0.2500"


def test_01_softmax_follows_logits_and_temperature():
    text, defs = _text("01_activations", logits_text="3, 0, -3", temperature=0.5)
    z = np.array([3.0, 0.0, -3.0]) / 0.5
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    np.testing.assert_allclose(defs["softmax_result"].probs, p, rtol=1e-12)
    h = -(p * np.log(p)).sum()
    assert f"H = {h:.4f} nats" in text and f"ln K = {math.log(3):.4f}" in text
    for bad, msg in [("", "at least 2"), ("1, two", "'two' is not a number"), ("x" * 200, "not a number")]:
        text, defs = _text("01_activations", logits_text=bad)
        assert "Cannot read the logits" in text and msg in text and defs["softmax_result"] is None


def test_01_depth_lab_reports_the_engine_numbers():
    text, defs = _text("01_activations", depth=30, width=64, depth_act="sigmoid", init="xavier")
    r = activations_lab.depth_lab(depth=30, width=64, activation="sigmoid", init="xavier", n_samples=128, seed=0)
    assert defs["depth_report"].gradient_ratio == pytest.approx(r.gradient_ratio, rel=1e-9)
    assert f"{r.gradient_ratio:.3g}" in text and "vanishes" in text
    text, _ = _text("01_activations", depth=50, width=256, depth_act="relu", init="custom", init_scale=3.0)
    assert "explodes" in text


def test_01_exercises_are_graded_by_the_engine():
    text, defs = _text("01_activations", answer_sigmoid="1/4", answer_softmax="0.79", answer_depth="vanish")
    assert defs["sigmoid_slope_truth"] == pytest.approx(0.25)
    p0 = math.exp(2) / (math.exp(2) + 2)
    assert defs["softmax_truth"] == pytest.approx(p0)
    assert text.count("Right") == 3
    text, _ = _text("01_activations", answer_sigmoid="0.5", answer_softmax="0.33", answer_depth="explode")
    assert "Right" not in text and text.count("Not quite") == 2 and "Not this one" in text
    text, _ = _text("01_activations", answer_sigmoid="a quarter")
    assert "is not a number I can read" in text


# ----------------------------------------------------------------------------- 02_losses

def test_02_regression_losses_and_outlier_fits_come_from_the_engine():
    for name in losses_lab.REGRESSION_LOSSES:
        text, defs = _text("02_losses", reg_loss=name, delta=0.5)
        assert defs["reg_gap"] < 1e-9
        np.testing.assert_allclose(defs["reg_curves"].f, losses_lab.regression_curves(name, defs["reg_curves"].x, 0.5).f)
    text, defs = _text("02_losses", n_outliers=6, outlier_shift=-15, delta=2.0)
    x, y, out = losses_lab.make_line_data(n=30, n_outliers=6, outlier_shift=-15.0, seed=0)
    np.testing.assert_array_equal(defs["line_y"], y)
    for name in losses_lab.LINE_LOSSES:
        w, b, _ = losses_lab.fit_line(x, y, name, delta=2.0, steps=300)
        assert defs["line_fits"][name] == pytest.approx((w, b))
        assert f"{w:.3f}" in text


def test_02_cross_entropy_with_label_smoothing():
    text, defs = _text("02_losses", ce_logits="1, 2, 3", ce_target=0, smoothing=0.2)
    r = losses_lab.cross_entropy_report(np.array([1.0, 2.0, 3.0]), 0, 0.2)
    assert defs["ce_report"].loss == pytest.approx(r.loss)
    assert f"L = {r.loss:.4f}" in text
    text, defs = _text("02_losses", ce_logits="1, 2", ce_target=5)
    assert "There are only 2 classes" in text and defs["ce_report"] is None


def test_02_naive_log_softmax_fails_and_the_fused_loss_does_not():
    text, defs = _text("02_losses", logit_scale=1000, precision="float32")
    assert not math.isfinite(defs["naive_now"]) and math.isfinite(defs["fused_now"])
    assert defs["fused_now"] == pytest.approx(2000.0)
    assert ("naive inf" in text or "naive nan" in text) and "fused 2000.0000" in text
    assert 10 < defs["naive_breaks_at"] < 100  # float32 fails somewhere between s = 10 and 100
    _, defs64 = _text("02_losses", logit_scale=1, precision="float64")
    assert defs64["naive_breaks_at"] > defs["naive_breaks_at"]


def test_02_kl_both_ways_and_the_fits():
    text, defs = _text("02_losses", q_mu=-2.0, q_sigma=0.5, kl_separation=4.0, kl_fit_button=True)
    grid = np.linspace(-7, 7, 281)
    p = losses_lab.bimodal_on_grid(grid, separation=4.0)
    q = losses_lab.gaussian_on_grid(grid, -2.0, 0.5)
    fwd, rev = losses_lab.kl_both_ways(p, q)
    assert defs["kl_forward"] == pytest.approx(fwd) and f"KL(p‖q) = {fwd:.4f}" in text
    assert f"KL(q‖p) = {rev:.4f}" in text
    mu_f, s_f, _ = losses_lab.fit_gaussian_kl(p, grid, "forward", mu0=-2.0, sigma0=0.5, steps=300)
    assert defs["kl_fits"]["forward"][:2] == pytest.approx((mu_f, s_f))
    assert f"μ = {mu_f:.2f}, σ = {s_f:.2f}" in text
    _, defs = _text("02_losses")
    assert defs["kl_fits"] == {}  # nothing fitted until the button is pressed


def test_02_mse_vs_cross_entropy_and_initial_loss():
    text, defs = _text("02_losses", w0=-6.0, clf_lr=1.0, n_classes=1000, init_logit_scale=10.0)
    x, y = losses_lab.sigmoid_classifier_data(100, seed=0)
    ce = losses_lab.train_sigmoid_classifier(x, y, "cross_entropy", w0=-6.0, lr=1.0, steps=100)
    np.testing.assert_allclose(defs["clf_runs"]["cross_entropy"]["accuracy"], ce["accuracy"])
    value, ln_k = losses_lab.initial_loss(1000, 10.0, n_samples=512, seed=0)
    assert defs["initial"] == pytest.approx(value) and f"{value:.4f}" in text and "shrink the initial logits" in text
    text, _ = _text("02_losses", n_classes=2, init_logit_scale=0.001)
    assert "Healthy start" in text


def test_02_exercises_are_graded_by_the_engine():
    text, defs = _text("02_losses", answer_ln10="2.303", answer_huber="2.5", answer_bce="-0.2")
    assert defs["ln10_truth"] == pytest.approx(math.log(10))
    assert defs["huber_truth"] == pytest.approx(2.5) and defs["bce_truth"] == pytest.approx(-0.2)
    assert text.count("Right") == 3
    text, _ = _text("02_losses", answer_ln10="1", answer_huber="4.5", answer_bce="0.2")
    assert "Right" not in text and text.count("Not quite") == 3


# ----------------------------------------------------------------------------- 03_backprop

def test_03_graph_step_through_shows_the_engine_gradients():
    for name in graphs.EXPRESSIONS:
        text, defs = _text("03_backprop", expr=name, x_val=-3.0, y_val=3.0, z_val=0.5, bp_step=2)
        g = graphs.expression_graph(name, -3.0, 3.0, 0.5)
        assert defs["input_grads"] == pytest.approx(graphs.input_gradients(g))
        for label, grad in graphs.input_gradients(g).items():
            assert f"∂f/∂{label} = {grad:.6g}" in text
        assert defs["graph_step"].node.id == g.order[2]
        assert "Local rule" in text or "is an input" in text
    text, defs = _text("03_backprop", expr="neuron", bp_step=13)
    assert "past the end" in text


def test_03_dense_layer_and_gradient_check():
    text, defs = _text("03_backprop", dense_n=64, dense_in=32, dense_out=32, gc_x0=-2.0, gc_h=1e-12)
    assert max(defs["dense"].max_difference.values()) < 1e-10
    assert "(32, 32)" in text and "(64, 32)" in text
    fd = backprop_lab.finite_difference_errors(-2.0, hs=np.logspace(-12, 0, 61))
    for dt in ("float32", "float64"):
        h, e = backprop_lab.best_step(fd, dt)
        assert defs["fd_best"][dt] == pytest.approx((h, e))
        assert f"smallest {e:.1e} at h ≈ {h:.0e}" in text


def test_03_playground_trains_behind_the_button():
    text, defs = _text("03_backprop")
    assert defs["pg_run"] is None and "Press train" in text
    Xtr, ytr, Xva, yva = backprop_lab.make_playground_data("moons", n=240, noise=0.15, seed=0)
    assert f"Initial training loss {defs['pg_initial_loss']:.4f}" in text
    text, defs = _text("03_backprop", train_button=True, pg_epochs=20)
    run = backprop_lab.train_playground(Xtr, ytr, Xva, yva, width=16, depth=2, activation="tanh", optimizer="adam",
                                   lr=0.03, epochs=20, seed=0, grid_size=50)
    np.testing.assert_allclose(defs["pg_run"].history["train_loss"], run.history["train_loss"])
    assert f"train loss {run.history['train_loss'][-1]:.4f}" in text
    text, defs = _text("03_backprop", train_button=True, pg_epochs=50, pg_opt="sgd", pg_lr=3.0, pg_act="relu",
                       pg_depth=4, pg_width=64, pg_data="spirals")
    assert defs["pg_run"].diverged and "Training diverged" in text
    text, defs = _text("03_backprop", overfit_button=True)
    assert defs["overfit_losses"][-1] < 0.05 and "memorise a batch" in text


def test_03_exercises_are_graded_by_the_engine():
    s = 1 / (1 + math.exp(1.5))
    text, defs = _text("03_backprop", answer_neuron=f"{s * (1 - s) * 2:.4f}", answer_db="5", answer_h="-6")
    assert defs["neuron_truth"] == pytest.approx(s * (1 - s) * 2)
    assert defs["db_truth"] == 5 and -8 <= defs["h_truth"] <= -4
    assert text.count("Right") == 3
    text, _ = _text("03_backprop", answer_neuron="0.5", answer_db="160", answer_h="-12")
    assert "Right" not in text and text.count("Not quite") == 3


# ----------------------------------------------------------------------------- 04_optimizers

def test_04_trajectories_come_from_the_engine_optimizers():
    lrs = {n: optim_lab.SURFACES["beale"]["lr"][n] for n in optim_lab.OPTIMIZERS}
    text, defs = _text("04_optimizers", surface="beale", start_x=0.5, start_y=1.0, n_steps=80, lrs=lrs,
                       traj_schedule="warmup_cosine", adamw_decay=0.2)
    hyper = dict(momentum=0.9, alpha=0.99, betas=(0.9, 0.999), weight_decay=0.2)
    for name in optim_lab.OPTIMIZERS:
        t = optim_lab.run_optimizer("beale", name, start=(0.5, 1.0), steps=80, lr=lrs[name],
                                    schedule="warmup_cosine", **hyper)
        np.testing.assert_allclose(defs["trajectories"][name].path, t.path)
        assert f"{t.final_loss:.3g}" in text
    text, defs = _text("04_optimizers", shown_opts=[])
    assert "No optimizer selected" in text and defs["trajectories"] == {}
    text, defs = _text("04_optimizers", momentum_beta=0.0)
    assert "Nesterov not run" in text and "nesterov" not in defs["trajectories"]


def test_04_divergence_is_reported():
    lrs = {n: 1.0 for n in optim_lab.OPTIMIZERS}
    text, defs = _text("04_optimizers", surface="rosenbrock", lrs=lrs)
    assert defs["trajectories"]["sgd"].diverged and "diverged" in text and "Lower its learning rate" in text


def test_04_bias_correction_schedules_decay_and_clipping():
    text, defs = _text("04_optimizers", adam_beta1=0.9, adam_beta2=0.999, bc_steps=20, bc_noise=0.0)
    assert abs(defs["bc_with"]["update"][0]) == pytest.approx(1.0)
    assert abs(defs["bc_without"]["update"][0]) == pytest.approx(0.1 / math.sqrt(0.001))
    np.testing.assert_allclose(defs["bc_engine"], defs["bc_with"]["update"], rtol=1e-9)
    assert "First step: 1.000 η with the correction, 3.162 η without" in text
    text, defs = _text("04_optimizers", sched_steps=10, sched_warmup=100)
    assert all(len(v) == 10 for v in defs["schedules"].values()) and "cut to 9" in text
    c = optim_lab.schedule_curves(steps=100, lr=0.1, step_size=25, gamma=0.5, warmup=10, pct_start=0.3,
                                  factor=0.5, patience=5)
    _, defs = _text("04_optimizers")
    for k in c:
        np.testing.assert_allclose(defs["schedules"][k], c[k])
    text, defs = _text("04_optimizers", wd_lambda=0.5, wd_lr=0.1)
    p = optim_lab.l2_vs_decoupled(weight_decay=0.5, lr=0.1, steps=200)
    np.testing.assert_allclose(defs["wd_paths"]["adamw"], p["adamw"])
    assert f"{2 * (1 - 0.05) ** 200:.3f} at t = 200" in text
    text, defs = _text("04_optimizers", clip_norm=3.0, clip_lr=0.01)
    runs = list(defs["clip_runs"].values())
    assert runs[0].diverged and not runs[1].diverged and "diverged at step" in text


def test_04_exercises_are_graded_by_the_engine():
    text, defs = _text("04_optimizers", answer_adam="0.01", answer_cosine="0.05", answer_clip="0.6")
    assert defs["adam_truth"] == pytest.approx(0.01, rel=1e-6)
    assert defs["cosine_truth"] == pytest.approx(0.05) and defs["clip_truth"] == pytest.approx(0.6, rel=1e-5)
    assert text.count("Right") == 3
    text, _ = _text("04_optimizers", answer_adam="0.003", answer_cosine="0.1", answer_clip="3")
    assert "Right" not in text and text.count("Not quite") == 3

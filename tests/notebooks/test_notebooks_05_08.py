"""Notebooks 05-08 run headless, pass marimo's checks, export, and survive every control's extremes.

Each control is driven (through ``app.run(defs=...)``, see tests/support/notebook_driver.py) at its
minimum, maximum and default; no cell may raise, warn or print a traceback. The values a
notebook shows are compared with the engine computing the same thing directly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from notebook_driver import (
    assert_no_error_outputs,
    control_values,
    default_defs,
    export_html,
    load_app,
    marimo_check,
    output_text,
    run_app,
    run_headless,
)

import engine
from engine import diffusion, shapes, vae
from engine.course.labs import attention as attention_lab
from engine.course.labs import convolution as conv_lab
from engine.course.labs import vae as vae_lab

NOTEBOOKS = ["notebooks/05_convolution.py", "notebooks/06_attention.py", "notebooks/07_diffusion.py",
             "notebooks/08_vae.py"]


def _ui_controls(app) -> list[str]:
    from marimo._plugins.ui._core.ui_element import UIElement

    defs = default_defs(app)
    return sorted(n for n, v in defs.items()
                  if isinstance(v, UIElement) and type(v).__name__ not in ("run_button", "table"))


# ----------------------------------------------------------------------------- whole files
@pytest.mark.parametrize("path", NOTEBOOKS)
def test_runs_headless(path):
    seconds = run_headless(path)
    print(f"{path}: headless run {seconds:.1f} s")


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_marimo_check_strict_and_wasm(path):
    marimo_check(path)
    marimo_check(path, select="MW")


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_exports_html(path, tmp_path):
    page = export_html(path, tmp_path / "page.html")
    assert "<html" in page.lower()


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_structure(path):
    """Title, metadata, at least four controls, two graded exercises, a run button for training."""
    app = load_app(path)
    outputs, defs = run_app(app)
    assert_no_error_outputs(outputs)
    meta = defs["METADATA"]
    assert set(meta) >= {"id", "name", "summary", "topics"}
    assert meta["id"] == path.split("/")[-1][:-3]
    assert engine.course.toc.entry(meta["id"]).path == path
    controls = _ui_controls(app)
    assert len(controls) >= 4, controls
    assert sum(name.startswith("answer_") for name in controls) >= 2
    text = output_text(outputs)
    assert "Type your answer" in text  # the exercises wait for an answer
    assert "cheat sheet" in text  # the navigation bar


# ----------------------------------------------------------------------------- every control
def _drive_cases():
    cases = []
    for path in NOTEBOOKS:
        app = load_app(path)
        for name in _ui_controls(app):
            control = default_defs(app)[name]
            for value in control_values(control):
                if value == control.value and len(control_values(control)) > 1:
                    continue  # the default run covers it
                cases.append(pytest.param(path, name, value, id=f"{path[10:12]}-{name}-{value!r:.20}"))
    return cases


@pytest.mark.parametrize("path, name, value", _drive_cases())
def test_every_control_extreme_runs_clean(path, name, value):
    outputs, _ = run_app(load_app(path), **{name: value})
    assert_no_error_outputs(outputs)


# Training controls act only when their run button is pressed: drive each at its extremes with it.
TRAINING = {
    "notebooks/05_convolution.py": ("cnn_train", ["cnn_filters", "cnn_kernel", "cnn_epochs", "cnn_lr",
                                                  "cnn_image"]),
    "notebooks/06_attention.py": ("tiny_train", ["tiny_task", "tiny_length", "tiny_steps", "tiny_lr"]),
    "notebooks/07_diffusion.py": ("ddpm_train", ["ddpm_steps", "ddpm_T", "ddpm_hidden", "ddpm_lr",
                                                 "reverse_k", "forward_data", "forward_kind"]),
    "notebooks/08_vae.py": ("image_train", ["image_steps", "latent_z1", "latent_z2"]),
}
TRAINING_EXTRA = {  # second buttons of a notebook
    "notebooks/07_diffusion.py": ("mix_train", ["mix_separation", "mix_std", "mix_weight", "mix_T",
                                                "mix_variance", "mix_t"]),
    "notebooks/08_vae.py": ("vae_train", ["vae_data", "vae_beta", "vae_latent", "vae_steps"]),
}


def _training_cases():
    cases = []
    for table in (TRAINING, TRAINING_EXTRA):
        for path, (button, names) in table.items():
            app = load_app(path)
            for name in names:
                control = default_defs(app)[name]
                values = control_values(control)
                extremes = values if type(control).__name__ == "dropdown" else values[:2]
                for value in extremes:
                    if value == control.value:
                        continue
                    cases.append(pytest.param(path, button, name, value,
                                              id=f"{path[10:12]}-{button}-{name}-{value!r:.20}"))
    return cases


@pytest.mark.slow
@pytest.mark.parametrize("path, button, name, value", _training_cases())
def test_training_controls_at_their_extremes(path, button, name, value):
    outputs, _ = run_app(load_app(path), **{button: True, name: value})
    assert_no_error_outputs(outputs)


def test_every_control_is_driven():
    """Each control of each notebook appears in the extreme-value tests (nothing forgotten)."""
    driven = {(c.values[0], c.values[1]) for c in _drive_cases()}
    for path in NOTEBOOKS:
        app = load_app(path)
        for name in _ui_controls(app):
            assert (path, name) in driven or len(control_values(default_defs(app)[name])) == 1, name
        buttons = {n for n, v in default_defs(app).items() if type(v).__name__ == "run_button"}
        covered = {b for t in (TRAINING, TRAINING_EXTRA) if path in t for b in [t[path][0]]}
        covered |= {"vae_sweep"} if path.endswith("08_vae.py") else set()  # its own test
        assert buttons <= covered, buttons - covered


# ============================================================================= 05 convolution
NB05 = "notebooks/05_convolution.py"


@pytest.mark.parametrize("w, k, p, s, d", [(7, 3, 1, 2, 1), (16, 7, 0, 1, 3), (1, 1, 0, 4, 1),
                                           (2, 7, 0, 1, 3), (16, 3, 4, 4, 2)])
def test_05_calculator_agrees_with_engine_shapes(w, k, p, s, d):
    outputs, defs = run_app(load_app(NB05), size_w=w, kernel_k=k, padding_p=p, stride_s=s,
                            dilation_d=d)
    assert_no_error_outputs(outputs)
    report = defs["conv_setting"]
    k_eff = shapes.effective_kernel_size(k, d)
    assert report.effective_kernel == k_eff
    if k_eff > w + 2 * p:
        assert not report.ok and "Impossible" in output_text(outputs)
        with pytest.raises(ValueError):
            shapes.conv_output_size(w, k, s, p, d)
    else:
        out = shapes.conv_output_size(w, k, s, p, d)
        assert report.output_size == out
        assert f"= {out}" in output_text(outputs)


def test_05_transposed_and_params_agree_with_torch_shapes(torch):
    outputs, defs = run_app(load_app(NB05), transpose_w=4, kernel_k=4, stride_s=2, padding_p=1,
                            output_padding=1, channels_in=64, channels_out=1)
    assert_no_error_outputs(outputs)
    y = torch.nn.functional.conv_transpose1d(torch.ones(1, 1, 4), torch.ones(1, 1, 4), stride=2,
                                             padding=1, output_padding=1)
    assert defs["transposed"]["report"].output_size == y.shape[-1]
    np.testing.assert_array_equal(defs["transposed"]["coverage"], y[0, 0].numpy())
    conv = torch.nn.Conv2d(64, 1, 4)
    assert defs["conv_setting"].params == sum(p.numel() for p in conv.parameters())


@pytest.mark.parametrize("preset", ["AlexNet", "VGG-16", "ResNet-50"])
def test_05_receptive_field_presets(preset):
    outputs, defs = run_app(load_app(NB05), rf_preset=preset)
    assert_no_error_outputs(outputs)
    expected = shapes.receptive_field(shapes.RECEPTIVE_FIELD_PRESETS[preset])[-1].size
    assert defs["rf_final"] == expected
    assert str(expected) in output_text(outputs)


def test_05_receptive_field_custom_collapse_is_a_warning():
    outputs, defs = run_app(load_app(NB05), rf_preset="custom stack", rf_layers=12, rf_stride=3,
                            rf_kernel=7, rf_input=8)
    assert_no_error_outputs(outputs)
    assert "cannot go on" in output_text(outputs)


def test_05_exercises_graded_by_the_engine():
    app = load_app(NB05)
    _, defs = run_app(app)
    truths = {"answer_size": shapes.conv_output_size(28, 5, 2, 0),
              "answer_params": shapes.conv2d_params(3, 16, 5),
              "answer_rf": shapes.receptive_field([(3, 2, 1), (3, 2, 1), (3, 1, 1)])[-1].size}
    assert (defs["truth_size"], defs["truth_params"], defs["truth_rf"]) == tuple(truths.values())
    assert truths["answer_rf"] == 15 and truths["answer_size"] == 12 and truths["answer_params"] == 1216
    for name, truth in truths.items():
        text = output_text(run_app(app, **{name: str(truth)})[0])
        assert f"Right: {truth}" in text
        text = output_text(run_app(app, **{name: str(truth + 1)})[0])
        assert "Not quite" in text and "Hint" in text


@pytest.mark.parametrize("size, k, s, p, r", [(5, 3, 1, 1, 7), (8, 4, 3, 2, 63), (3, 4, 1, 0, 0),
                                              (6, 2, 2, 0, 5)])
def test_05_im2col_view_agrees_with_conv2d(size, k, s, p, r):
    outputs, defs = run_app(load_app(NB05), im_size=size, im_kernel=k, im_stride=s, im_padding=p,
                            im_pixel=r)
    assert_no_error_outputs(outputs)
    view = defs["view"]
    report = conv_lab.conv_report(size, k, s, p)
    assert view["ok"] == report.ok
    if not report.ok:
        return
    ref = engine.functional.conv2d(defs["im_x"][None], defs["im_w"], stride=s, padding=p).data[0, 0]
    np.testing.assert_allclose(view["output"], ref)
    o = report.output_size
    assert view["row"] == min(r, o * o - 1)
    assert view["value"] == pytest.approx(ref[view["out_row"], view["out_col"]])
    assert f"**{view['value']:g}**" not in output_text(outputs)  # rendered bold, not raw markdown
    assert f"{view['value']:g}" in output_text(outputs)
    assert defs["backward_gap"] < 1e-9


def test_05_filters_agree_with_engine():
    for name in ["Gaussian blur", "edge magnitude", "Laplacian"]:
        outputs, defs = run_app(load_app(NB05), filter_name=name, filter_stride=2, filter_repeat=2)
        assert_no_error_outputs(outputs)
        np.testing.assert_allclose(defs["filtered"],
                                   conv_lab.apply_filter(conv_lab.sample_image(48), name, 2, 2))


def test_05_training_runs_behind_the_button():
    app = load_app(NB05)
    outputs, defs = run_app(app)
    assert "cnn_history" not in defs or defs.get("cnn_history") is None
    outputs, defs = run_app(app, cnn_train=True, cnn_epochs=2, cnn_filters=2, cnn_image=255)
    assert_no_error_outputs(outputs)
    history = defs["cnn_history"]
    assert len(history["loss"]) == 2
    X, y = defs["shapes_test"]
    assert history["test_acc"][-1] == pytest.approx(conv_lab.cnn_accuracy(defs["cnn"], X, y))
    assert f"{history['test_acc'][-1]:.1%}" in output_text(outputs)


def test_05_training_with_a_huge_learning_rate_says_so():
    outputs, defs = run_app(load_app(NB05), cnn_train=True, cnn_epochs=1, cnn_lr=1e-1)
    assert_no_error_outputs(outputs)
    assert math.isfinite(defs["cnn_history"]["loss"][0]) or "non-finite" in output_text(outputs)


# ============================================================================= 06 attention
NB06 = "notebooks/06_attention.py"


def _softmax_rows(scores, mask):
    """Masked softmax written out in NumPy (no engine): blocked keys get weight 0."""
    s = np.where(mask, scores, -np.inf) if mask is not None else scores
    top = np.max(np.where(np.isfinite(s), s, -1e300), axis=1, keepdims=True)
    e = np.where(np.isfinite(s), np.exp(s - top), 0.0)
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


@pytest.mark.parametrize("kind", attention_lab.MASK_KINDS)
@pytest.mark.parametrize("tau", [0.05, 20.0])
def test_06_weights_agree_with_a_numpy_softmax(kind, tau):
    outputs, defs = run_app(load_app(NB06), mask_kind=kind, qkv_temperature=tau, mask_window=1,
                            mask_pad=10 if tau > 1 else 0, qkv_dk=64)
    assert_no_error_outputs(outputs)
    qkv, maps, mask = defs["qkv"], defs["maps"], defs["mask"]
    expected = _softmax_rows(qkv["Q"] @ qkv["K"].T / np.sqrt(64) / tau, mask)
    np.testing.assert_allclose(maps["weights"], expected, atol=1e-10)
    np.testing.assert_allclose(maps["output"], expected @ qkv["V"], atol=1e-10)
    ref = engine.functional.scaled_dot_product_attention(qkv["Q"], qkv["K"], qkv["V"],
                                                         attn_mask=mask, scale=1 / np.sqrt(64) / tau)
    np.testing.assert_allclose(maps["output"], ref.data, atol=1e-10)
    if kind == "padding" and tau > 1:  # every key is padding: the notebook says so, no NaN
        assert "may attend to no key" in output_text(outputs)
        assert np.all(maps["weights"] == 0)


def test_06_scale_options_and_attention_against_torch(torch):
    for label, factor in [("1 (no scaling)", 1.0), ("1/d_k", 1 / 8)]:
        outputs, defs = run_app(load_app(NB06), qkv_scale=attention_lab.SCALES[label], qkv_dk=8,
                                mask_kind="causal")
        assert_no_error_outputs(outputs)
        q, k, v = (torch.tensor(defs["qkv"][n]) for n in "QKV")
        ref = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=torch.tensor(defs["mask"]), scale=factor)
        np.testing.assert_allclose(defs["maps"]["output"], ref.numpy(), atol=1e-10)
        assert defs["maps"]["scale"] == pytest.approx(factor)


@pytest.mark.parametrize("dk", [1, 512])
def test_06_variance_experiment(dk):
    outputs, defs = run_app(load_app(NB06), variance_dk=dk)
    assert_no_error_outputs(outputs)
    v = defs["variance"]
    assert v["var_raw"] == pytest.approx(dk, rel=0.1)
    assert v["var_scaled"] == pytest.approx(1.0, rel=0.1)
    assert f"{v['var_raw']:.1f}" in output_text(outputs)
    sweep = defs["sweep"]
    assert sweep["max_raw"][-1] > 0.8 and sweep["max_scaled"][-1] < 0.4


def test_06_multihead_shapes_against_torch(torch):
    outputs, defs = run_app(load_app(NB06), mha_dmodel=96, mha_heads=16, mha_batch=3,
                            mha_length=128)
    assert_no_error_outputs(outputs)
    mha = defs["mha"]
    assert mha["ok"] and mha["d_k"] == 6
    layer = torch.nn.MultiheadAttention(96, 16, batch_first=True)
    assert mha["module_params"] == mha["params"]["total"] == sum(p.numel() for p in layer.parameters())
    x = torch.zeros(3, 128, 96)
    out, w = layer(x, x, x, average_attn_weights=False)
    assert mha["output_shape"] == tuple(out.shape) and mha["weights_shape"] == tuple(w.shape)
    assert dict(mha["rows"])["scores"] == (3, 16, 128, 128)
    outputs, defs = run_app(load_app(NB06), mha_dmodel=8, mha_heads=3)
    assert not defs["mha"]["ok"] and "divide" in output_text(outputs)


def test_06_rope_shift_invariance_shown():
    for m, n, s in [(0, 50, 200), (50, 0, 0), (17, 17, 123)]:
        outputs, defs = run_app(load_app(NB06), rope_m=m, rope_n=n, rope_shift=s)
        assert_no_error_outputs(outputs)
        c = defs["shift_check"]
        assert c["rope"] == pytest.approx(c["rope_shifted"], abs=1e-9)
        q, k = defs["rope_q"], defs["rope_k"]
        # the same score by rotating k by the offset only (independent of absolute position)
        rotated = engine.attention.apply_rope(k[None], positions=np.array([n - m])).data[0]
        assert c["rope"] == pytest.approx(float(q @ rotated), abs=1e-9)


def test_06_exercises_graded_by_the_engine():
    app = load_app(NB06)
    _, defs = run_app(app)
    assert defs["truth_variance"] == 256 and defs["truth_causal"] == 21
    assert defs["truth_mha"] == 4 * (512 * 512 + 512)
    assert defs["truth_rope"] == pytest.approx(defs["shift_check"]["rope"], abs=1e-9)  # m=3, n=7
    for name, truth in [("answer_variance", 256), ("answer_causal", 21),
                        ("answer_mha", defs["truth_mha"]),
                        ("answer_rope", round(defs["truth_rope"], 4))]:
        assert "Right" in output_text(run_app(app, **{name: str(truth)})[0])
        assert "Not quite" in output_text(run_app(app, **{name: str(truth * 1.5 + 5)})[0])


def test_06_tiny_model_learns_reversal():
    outputs, defs = run_app(load_app(NB06), tiny_train=True)
    assert_no_error_outputs(outputs)
    tiny = defs["tiny"]
    assert defs["tiny_accuracy"] > 0.9
    L = len(tiny["example"])
    assert list(tiny["weights"].argmax(axis=1)) == list(range(L - 1, -1, -1))
    with engine.no_grad():
        pred = tiny["model"](tiny["x_test"]).data.argmax(-1)
    assert defs["tiny_accuracy"] == pytest.approx(float((pred == tiny["y_test"]).mean()))
    assert f"{defs['tiny_accuracy']:.1%}" in output_text(outputs)


def test_06_tiny_model_extremes():
    for kwargs in [dict(tiny_lr=1.0, tiny_steps=25, tiny_length=12, tiny_task="sort"),
                   dict(tiny_lr=1e-4, tiny_steps=25, tiny_length=2, tiny_task="rotate by 1")]:
        outputs, defs = run_app(load_app(NB06), tiny_train=True, **kwargs)
        assert_no_error_outputs(outputs)
        assert 0.0 <= defs["tiny_accuracy"] <= 1.0 or "non-finite" in output_text(outputs)


# ============================================================================= 07 diffusion
NB07 = "notebooks/07_diffusion.py"


@pytest.mark.parametrize("T, rescale", [(10, True), (10, False), (1000, False), (1000, True)])
def test_07_schedules_agree_with_engine(T, rescale):
    outputs, defs = run_app(load_app(NB07), schedule_T=T, schedule_rescale=rescale)
    assert_no_error_outputs(outputs)
    linear = defs["schedules"]["linear"]
    betas = np.linspace(1e-4, 0.02, T) * (min(1000 / T, 0.999 / 0.02) if rescale else 1)
    np.testing.assert_allclose(linear.betas, betas)
    np.testing.assert_allclose(linear.alpha_bars, np.cumprod(1 - betas))
    cosine = defs["schedules"]["cosine"]
    np.testing.assert_allclose(cosine.alpha_bars, diffusion.cosine_beta_schedule(T).alpha_bars)
    text = output_text(outputs)
    assert f"linear: ᾱ_T = {linear.alpha_bars[-1]:.2g}" in text
    assert ("far from pure noise" in text) == (linear.alpha_bars[-1] > 0.01)


@pytest.mark.parametrize("t, kind", [(0.0, "linear"), (1.0, "cosine"), (0.5, "linear")])
def test_07_forward_chain_matches_closed_form(t, kind):
    outputs, defs = run_app(load_app(NB07), forward_t=t, forward_kind=kind)
    assert_no_error_outputs(outputs)
    schedule, step = defs["forward_schedule"], defs["forward_step"]
    assert step == round(t * (schedule.T - 1))
    ab = schedule.alpha_bars[step]
    chain = defs["chain"]
    np.testing.assert_allclose(chain["closed_mean"], np.sqrt(ab) * np.array([1.5, -1.0]))
    assert chain["closed_var"] == pytest.approx(1 - ab)
    sem = np.sqrt((1 - ab) / 4000)  # standard error of the chain's mean
    np.testing.assert_allclose(chain["mean"], chain["closed_mean"], atol=5 * sem + 1e-12)
    np.testing.assert_allclose(chain["var"], 1 - ab, atol=5 * (1 - ab) * np.sqrt(2 / 4000) + 1e-12)
    assert f"ᾱ_t = {ab:.3f}" in output_text(outputs)


def test_07_exercises_graded_by_the_engine():
    app = load_app(NB07)
    _, defs = run_app(app)
    assert defs["truth_alpha_bar"] == pytest.approx(0.98 ** 50)
    assert defs["truth_mean"] == pytest.approx(1.2) and defs["truth_std"] == pytest.approx(0.8)
    for name, truth in [("answer_alpha_bar", f"{0.98 ** 50:.3f}"), ("answer_mean", "1.2"),
                        ("answer_std", "0.8")]:
        assert "Right" in output_text(run_app(app, **{name: truth})[0])
        assert "Not quite" in output_text(run_app(app, **{name: "0.1"})[0])


def test_07_ddpm_trains_behind_the_button_and_steps_back():
    app = load_app(NB07)
    outputs, defs = run_app(app, ddpm_train=True)
    assert_no_error_outputs(outputs)
    ddpm = defs["ddpm"]
    assert len(ddpm["losses"]) == 2000 and len(ddpm["quality"]) == 8
    assert ddpm["losses"][-200:].mean() < ddpm["losses"][:20].mean()
    assert defs["ddpm_final"] < 0.5 * ddpm["noise_quality"]  # far better than noise
    assert f"{defs['ddpm_final']:.4f}" in output_text(outputs)
    traj = defs["trajectory"]
    assert traj.shape == (51, 1000, 2)
    assert 0.8 < traj[0].std() < 1.2  # k = 0: pure N(0, I) noise
    for k in (0, 50):
        outputs, _ = run_app(app, ddpm_train=True, ddpm_steps=100, reverse_k=k)
        assert_no_error_outputs(outputs)


def test_07_ddpm_extremes_never_raise():
    for kwargs in [dict(ddpm_lr=1.0, ddpm_steps=100), dict(ddpm_T=200, ddpm_hidden=32, ddpm_steps=100)]:
        outputs, defs = run_app(load_app(NB07), ddpm_train=True, **kwargs)
        assert_no_error_outputs(outputs)


@pytest.mark.parametrize("sep, std, w, T, variance", [(3.0, 0.3, 0.3, 1000, "beta"),
                                                       (0.0, 1.0, 0.5, 1000, "beta"),
                                                       (5.0, 0.05, 0.05, 10, "posterior")])
def test_07_exact_reverse_process(sep, std, w, T, variance):
    outputs, defs = run_app(load_app(NB07), mix_separation=sep, mix_std=std, mix_weight=w, mix_T=T,
                            mix_variance=variance)
    assert_no_error_outputs(outputs)
    mixture, samples = defs["mixture"], defs["exact_samples"]
    means = np.array([-sep / 2, sep / 2])
    mean = w * means[0] + (1 - w) * means[1]
    var = w * (std**2 + means[0] ** 2) + (1 - w) * (std**2 + means[1] ** 2) - mean**2
    assert defs["mix_moments"]["true"] == pytest.approx((mean, var))
    if T == 1000:  # fine steps: the exact reverse process reproduces the mixture
        assert samples.mean() == pytest.approx(mean, abs=0.06)
        assert samples.var() == pytest.approx(var, rel=0.06)
    # ε* shown is −√(1 − ᾱ_t) times the exact score of the noised mixture
    curves, schedule = defs["mix_curves"], defs["mix_schedule"]
    t = round(0.2 * (schedule.T - 1))
    noised = mixture.diffused(np.sqrt(schedule.alpha_bars[t]), np.sqrt(1 - schedule.alpha_bars[t]))
    np.testing.assert_allclose(curves["exact"], -np.sqrt(1 - schedule.alpha_bars[t])
                               * noised.score(curves["x"][:, None])[:, 0], atol=1e-10)


def test_07_learned_1d_denoiser_tracks_the_exact_one():
    outputs, defs = run_app(load_app(NB07), mix_train=True)
    assert_no_error_outputs(outputs)
    curves = defs["mix_curves"]
    inside = np.abs(curves["x"]) < 2.5
    assert np.max(np.abs(curves["learned"] - curves["exact"])[inside]) < 0.5
    assert "learned reverse process" in output_text(outputs)


# ============================================================================= 08 VAE
NB08 = "notebooks/08_vae.py"


@pytest.mark.parametrize("mu, sigma, n", [(-3.0, 0.05, 10), (3.0, 3.0, 10000), (1.0, 0.5, 1000)])
def test_08_reparameterisation_and_kl_agree_with_engine(mu, sigma, n):
    outputs, defs = run_app(load_app(NB08), q_mu=mu, q_sigma=sigma, q_samples=n)
    assert_no_error_outputs(outputs)
    r = defs["reparam"]
    eps = np.random.default_rng(0).standard_normal(n)
    z = mu + sigma * eps
    # autograd through z = μ + σε equals the hand-written pathwise gradients of mean(z²)
    assert r["grad_mu"] == pytest.approx(np.mean(2 * z))
    assert r["grad_sigma"] == pytest.approx(np.mean(2 * z * eps))
    assert r["exact_grad_mu"] == 2 * mu and r["exact_grad_sigma"] == pytest.approx(2 * sigma)
    kl = defs["kl"]
    assert kl["closed"] == pytest.approx(-0.5 * (1 + np.log(sigma**2) - mu**2 - sigma**2))
    if n >= 1000:
        assert abs(kl["mc"] - kl["closed"]) < 5 * kl["mc_se"] + 1e-9
    text = output_text(outputs)
    assert f"{kl['closed']:.4f}" in text and f"{r['grad_mu']:.4f}" in text


def test_08_kl_against_torch(torch):
    _, defs = run_app(load_app(NB08), q_mu=2.0, q_sigma=0.3)
    q = torch.distributions.Normal(2.0, 0.3)
    p = torch.distributions.Normal(0.0, 1.0)
    assert defs["kl"]["closed"] == pytest.approx(float(torch.distributions.kl_divergence(q, p)), rel=1e-6)


@pytest.mark.parametrize("f", vae_lab.ESTIMATOR_FUNCTIONS)
def test_08_estimators_are_unbiased_and_compared(f):
    outputs, defs = run_app(load_app(NB08), est_function=f, est_samples=10)
    assert_no_error_outputs(outputs)
    e = defs["estimates"]
    for name in ("score_function", "reparameterized"):
        values = e[name]
        assert values.mean() == pytest.approx(e["exact"], abs=5 * values.std() / np.sqrt(len(values)))
    assert defs["variance_ratio"] == pytest.approx(e["score_var"] / e["reparam_var"])
    if f == "z²":
        assert defs["variance_ratio"] > 2  # the pathwise gradient is much tighter here


def test_08_exercises_graded_by_the_engine():
    app = load_app(NB08)
    _, defs = run_app(app)
    assert defs["truth_kl_shift"] == pytest.approx(0.5)
    assert defs["truth_kl_narrow"] == pytest.approx(-0.5 * (1 + np.log(0.25) - 0.25))
    assert defs["truth_gradient"] == pytest.approx(3.0)
    for name, truth in [("answer_kl_shift", "0.5"), ("answer_kl_narrow", "0.318"),
                        ("answer_gradient", "3")]:
        assert "Right" in output_text(run_app(app, **{name: truth})[0])
        assert "Not quite" in output_text(run_app(app, **{name: "7"})[0])


def test_08_vae_budget_and_collapse():
    app = load_app(NB08)
    outputs, defs = run_app(app, vae_train=True)
    assert_no_error_outputs(outputs)
    run = defs["vae_run"]
    assert run["kl"] == pytest.approx(run["kl_per_dim"].sum(), rel=1e-5)
    assert run["elbo"] == pytest.approx(-(run["recon"] + run["kl"]), rel=1e-5)
    assert defs["vae_active"] == int((run["kl_per_dim"] > 0.05).sum())
    assert run["latents"].shape == (500, 3)
    assert "active dimensions (KL > 0.05)" in output_text(outputs)
    assert f"{run['recon']:.3f}" in output_text(outputs)
    outputs, defs = run_app(app, vae_train=True, vae_beta=100.0)
    assert_no_error_outputs(outputs)
    assert defs["vae_active"] == 0  # every dimension collapsed at β = 100
    outputs, defs = run_app(app, vae_sweep=True)
    assert_no_error_outputs(outputs)
    sweep = defs["sweep"]
    assert sweep["active"][0] >= 1 and sweep["active"][-1] == 0
    assert sweep["recon"][-1] > sweep["recon"][0]  # collapse costs reconstruction


def test_08_vae_extremes_never_raise():
    app = load_app(NB08)
    for kwargs in [dict(vae_beta=0.01, vae_latent=1, vae_steps=100, vae_data="swiss roll"),
                   dict(vae_beta=0.01, vae_latent=6, vae_steps=100, vae_data="8 Gaussians")]:
        outputs, _ = run_app(app, vae_train=True, **kwargs)
        assert_no_error_outputs(outputs)


def test_08_image_vae_latent_space_and_explorer():
    app = load_app(NB08)
    outputs, defs = run_app(app, image_train=True, image_steps=50, latent_z1=-3.0, latent_z2=3.0)
    assert_no_error_outputs(outputs)
    image_vae = defs["image_vae"]
    assert image_vae["latents"].shape == (256, 2)
    z = np.array([[-3.0, 3.0]], dtype=np.float32)
    expected = image_vae["model"].generate(z=z)[0, 0]
    np.testing.assert_allclose(defs["decoded"], expected, rtol=1e-6)
    assert defs["decoded"].min() >= 0 and defs["decoded"].max() <= 1
    with engine.no_grad():
        mu, _ = image_vae["model"].encode(defs["shape_images"][-256:])
    np.testing.assert_allclose(image_vae["latents"], mu.data, rtol=1e-6)

"""Notebook 06_attention: the values it shows are the engine's, and its claims hold on them.
"""

import math
import re

import numpy as np
import pytest
import engine
from engine import diffusion, shapes, vae
from engine.course.labs import attention as attention_lab
from engine.course.labs import convolution as conv_lab
from engine.course.labs import vae as vae_lab
from notebook_driver import (ROOT, assert_no_error_outputs, control_values, default_defs, load_app, load_module,
                             notebook_text, output_text, run_app)


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



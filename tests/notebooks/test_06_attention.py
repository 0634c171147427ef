"""Notebook 06_attention: the values it shows are the engine's, and its claims hold on them."""

import math
import re

import numpy as np
import pytest
from notebook_driver import (
    ROOT,
    assert_no_error_outputs,
    load_app,
    load_module,
    notebook_text,
    output_html,
    output_text,
    run_app,
)

import engine
from engine.course.labs import attention as attention_lab

# ============================================================================= 06 attention
NB06 = "notebooks/06_attention.py"
NB = load_module(NB06)
TINY_CODE = tuple(getattr(NB, name) for name in attention_lab.TINY_CODE)
TINY_CLASSES = tuple(getattr(NB, name) for name in attention_lab.TINY_CLASSES)
GPT_CODE = tuple(getattr(NB, name) for name in attention_lab.GPT_CODE)
GPT_CLASSES = tuple(getattr(NB, name) for name in attention_lab.GPT_CLASSES)


def edited_copy(tmp_path, old, new):
    """The notebook with ``old`` replaced by ``new`` in its code, as a learner would edit a cell in
    ``marimo edit``, loaded from its own file (so that its cells' source, and their fingerprint,
    are the edited ones)."""
    text = (ROOT / NB06).read_text(encoding="utf-8")
    assert text.count(old) == 1, f"the notebook no longer contains {old!r} once: update the page's prompt"
    path = tmp_path / "06_attention.py"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return load_module(path)


# ----------------------------------------------------------------------------- the lesson cells


@pytest.mark.parametrize("kind", ["none", "causal", "padding"])
def test_06_attention_cell_is_the_library_attention(kind):
    """The teaching copy against engine.attention: outputs, weights, and the gradients of q, k, v,
    a query with no key included (zero weights and output, no NaN)."""
    rng = np.random.default_rng(1)
    mask = attention_lab.make_mask(kind, 6, n_pad=6)
    qkv = [rng.standard_normal((2, 6, 4)) for _ in range(3)]
    mine = [engine.tensor(a, requires_grad=True) for a in qkv]
    ref = [engine.tensor(a, requires_grad=True) for a in qkv]
    out, weights = NB.attention(*mine, mask, scale=0.7)
    expected = engine.attention.scaled_dot_product_attention(*ref, attn_mask=mask, scale=0.7)
    np.testing.assert_allclose(out.data, expected.data, atol=1e-12)
    np.testing.assert_allclose(
        weights.data, engine.attention.attention_weights(*qkv[:2], attn_mask=mask, scale=0.7).data, atol=1e-12
    )
    upstream = rng.standard_normal(out.shape)
    (out * engine.tensor(upstream)).sum().backward()
    (expected * engine.tensor(upstream)).sum().backward()
    for a, b in zip(mine, ref):
        assert np.all(np.isfinite(a.grad.data))
        np.testing.assert_allclose(a.grad.data, b.grad.data, atol=1e-10)


def test_06_multihead_attention_cell_is_nn_multiheadattention():
    """Built on the same seed, the lesson's MultiHeadAttention has nn.MultiheadAttention's
    parameters, names and shapes, and computes its output and per-head weights."""
    with engine.random.fork_rng(5):
        mine = NB.MultiHeadAttention(12, 3)
    with engine.random.fork_rng(5):
        library = engine.nn.MultiheadAttention(12, 3, batch_first=True)
    for (name, p), (name_lib, q) in zip(mine.named_parameters(), library.named_parameters()):
        assert name == name_lib
        np.testing.assert_array_equal(p.data, q.data)
    x = engine.randn(2, 7, 12)
    causal = engine.attention.causal_mask(7)
    out, weights = mine(x, causal)
    ref, ref_weights = library(x, x, x, attn_mask=~causal, average_attn_weights=False)  # PyTorch's mask: True = blocked
    np.testing.assert_allclose(out.data, ref.data, atol=1e-6)
    np.testing.assert_allclose(weights.data, ref_weights.data, atol=1e-6)
    x4 = engine.randn(1, 5, 12)
    np.testing.assert_array_equal(NB.merge_heads(NB.split_heads(x4, 3)).data, x4.data)
    np.testing.assert_array_equal(NB.split_heads(x4, 3).data[0, 1], x4.data[0, :, 4:8])  # head 1: columns 4..7


def test_06_transformer_block_and_tiny_gpt():
    """The block's parameters are the count section 6's exercise grades; TinyGPT is causal; one
    train_step (backward and Adam's step) lowers the loss of the batch it saw."""
    with engine.random.fork_rng(0):
        block = NB.TransformerBlock(48, 4)
        model = NB.TinyGPT(vocab=10, context=8, d_model=16, heads=2, layers=2)
    assert sum(p.data.size for p in block.parameters()) == attention_lab.block_parameters(48, 4)
    x = np.random.default_rng(0).integers(0, 10, size=(4, 8))
    y = x.copy()
    y[0, 5] = (y[0, 5] + 1) % 10  # change a later token: earlier logits must not move
    with engine.no_grad():
        a, b = model(x).data, model(y).data
    np.testing.assert_allclose(a[0, :5], b[0, :5], atol=1e-6)
    assert np.abs(a[0, 5:] - b[0, 5:]).max() > 1e-4
    optimizer = engine.optim.Adam(model.parameters(), lr=1e-2)
    first = NB.train_step(model, optimizer, x, y)
    assert first == pytest.approx(
        engine.functional.cross_entropy(engine.tensor(a.reshape(-1, 10)), y.reshape(-1)).item(), rel=1e-5
    )
    assert NB.train_step(model, optimizer, x, y) < first


def test_06_tiny_gpt_loop_logs_and_samples():
    calls = []
    run = NB.train_tiny_gpt(steps=40, eval_every=20, on_step=calls.append)
    assert calls == list(range(1, 41)) and list(run.steps) == [20, 40] and not run.stopped
    assert run.train_loss[-1] < run.train_loss[0]
    assert run.heldout_loss[-1] == pytest.approx(NB.heldout_loss(run.model, run.data.heldout, 16))
    text = NB.sample(run.model, run.data.chars, "a query ", 30, 0.8, seed=1)
    assert text.startswith("a query ") and len(text) == len("a query ") + 30
    assert text == NB.sample(run.model, run.data.chars, "a query ", 30, 0.8, seed=1)
    with pytest.raises(ValueError, match="must divide"):
        NB.MultiHeadAttention(30, 4)


def test_06_editing_attention_moves_the_maps_and_unloads_the_shipped_models(tmp_path):
    """The page's first prompt, made in a copy of the file: without `* scale` the rows sharpen
    (mean entropy about 2.0 -> 0.6 nats at d_k = 64), and sections 5 and 6, whose models were
    trained with the function as it was, say so in one line and show no figure, no error."""
    _, before = run_app(load_app(NB06), qkv_dk=64)
    edited = edited_copy(tmp_path, "scores = q @ k.transpose(-2, -1) * scale", "scores = q @ k.transpose(-2, -1)")
    outputs, after = run_app(edited.app, qkv_dk=64)
    assert_no_error_outputs(outputs)
    assert before["maps"].entropy.mean() == pytest.approx(2.0, abs=0.1)
    assert after["maps"].entropy.mean() == pytest.approx(0.6, abs=0.1)
    assert np.median(after["maps"].weights.max(axis=1)) > 0.8  # "most rows give one key most of their weight"
    assert after["tiny"] is None and after["gpt"] is None and after["ablations"] is None
    for problem in (after["tiny_problem"], after["gpt_problem"]):
        assert problem.startswith("the shipped model was trained with other code than this page's `attention`")
    assert after["ablations_problem"].startswith(
        "the shipped runs were trained with other code than this page's `attention`"
    )
    assert output_text(outputs).count("so it is not loaded: train with the button to see what your code does") == 3


def test_06_editing_a_model_class_unloads_its_checkpoint(tmp_path):
    """A change to TinyAttention's code (same parameter names and shapes) is seen too."""
    edited = edited_copy(tmp_path, "        return self.out(out), weights", "        return self.out(out + h), weights")
    outputs, after = run_app(edited.app)
    assert_no_error_outputs(outputs)
    assert after["tiny"] is None and after["gpt"] is after["gpt_shipped"] is not None  # the Transformer does not use it
    assert after["ablations"] is after["ablations_shipped"] is not None
    assert after["tiny_problem"].startswith(
        "the shipped model was trained with other code than this page's `attention`"
    )
    assert after["tiny_problem"].endswith(
        "`default_tiny_attention`, `TinyAttention`, so it is not loaded: "
        "train with the button to see what your code does"
    )


def test_06_greedy_sampling_repeats_itself(tmp_path):
    """The page's sampler prompt, made in a copy of the file: the likeliest character instead of
    a draw gives the same text at every temperature, and it loops on one phrase."""
    edited = edited_copy(tmp_path, "int(rng.choice(len(p), p=p / p.sum()))", "int(p.argmax())")
    gpt, _ = attention_lab.shipped_tiny_gpt(GPT_CODE, GPT_CLASSES)
    cold, hot = (edited.sample(gpt.model, gpt.data.chars, temperature=t) for t in (0.2, 1.5))
    assert cold == hot and cold != NB.sample(gpt.model, gpt.data.chars)
    assert any(cold[-n:] * 2 == cold[-2 * n :] for n in range(5, 31)), cold  # the end: one phrase, twice in a row


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
    outputs, defs = run_app(
        load_app(NB06), mask_kind=kind, qkv_temperature=tau, mask_window=1, mask_pad=10 if tau > 1 else 0, qkv_dk=64
    )
    assert_no_error_outputs(outputs)
    qkv, maps, mask = defs["qkv"], defs["maps"], defs["mask"]
    expected = _softmax_rows(qkv.Q @ qkv.K.T / np.sqrt(64) / tau, mask)
    np.testing.assert_allclose(maps.weights, expected, atol=1e-10)
    np.testing.assert_allclose(maps.output, expected @ qkv.V, atol=1e-10)
    ref = engine.functional.scaled_dot_product_attention(
        qkv.Q, qkv.K, qkv.V, attn_mask=mask, scale=1 / np.sqrt(64) / tau
    )
    np.testing.assert_allclose(maps.output, ref.data, atol=1e-10)
    if kind == "padding" and tau > 1:  # every key is padding: the notebook says so, no NaN
        assert "may attend to no key" in output_text(outputs)
        assert np.all(maps.weights == 0)


def test_06_scale_options_and_attention_against_torch(torch):
    for label, factor in [("1 (no scaling)", 1.0), ("1/d_k", 1 / 8)]:
        outputs, defs = run_app(load_app(NB06), qkv_scale=attention_lab.SCALES[label], qkv_dk=8, mask_kind="causal")
        assert_no_error_outputs(outputs)
        q, k, v = (torch.tensor(getattr(defs["qkv"], n)) for n in "QKV")
        ref = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=torch.tensor(defs["mask"]), scale=factor
        )
        np.testing.assert_allclose(defs["maps"].output, ref.numpy(), atol=1e-10)
        assert defs["maps"].scale == pytest.approx(factor)


@pytest.mark.parametrize("dk", [1, 512])
def test_06_variance_experiment(dk):
    outputs, defs = run_app(load_app(NB06), variance_dk=dk)
    assert_no_error_outputs(outputs)
    v = defs["variance"]
    assert v.var_raw == pytest.approx(dk, rel=0.1)
    assert v.var_scaled == pytest.approx(1.0, rel=0.1)
    assert f"{v.var_raw:.1f}" in output_text(outputs)
    sweep = defs["sweep"]
    assert sweep.max_raw[-1] > 0.8 and sweep.max_scaled[-1] < 0.4


def test_06_multihead_shapes_against_torch(torch):
    outputs, defs = run_app(load_app(NB06), mha_dmodel=96, mha_heads=16, mha_batch=3, mha_length=128)
    assert_no_error_outputs(outputs)
    mha = defs["mha"]
    assert mha.d_k == 6
    layer = torch.nn.MultiheadAttention(96, 16, batch_first=True)
    assert mha.module_params == mha.params["total"] == sum(p.numel() for p in layer.parameters())
    x = torch.zeros(3, 128, 96)
    out, w = layer(x, x, x, average_attn_weights=False)
    assert mha.output_shape == tuple(out.shape) and mha.weights_shape == tuple(w.shape)
    assert dict(mha.rows)["scores"] == (3, 16, 128, 128)
    outputs, defs = run_app(load_app(NB06), mha_dmodel=8, mha_heads=3)
    assert defs["mha"] is None and "must divide d_model = 8" in output_text(outputs)
    assert "try H = 1, 2, 4, 8" in output_text(outputs)


def test_06_rope_shift_invariance_shown():
    for m, n, s in [(0, 50, 200), (50, 0, 0), (17, 17, 123)]:
        outputs, defs = run_app(load_app(NB06), rope_m=m, rope_n=n, rope_shift=s)
        assert_no_error_outputs(outputs)
        c = defs["shift_check"]
        assert c.rope == pytest.approx(c.rope_shifted, abs=1e-9)
        q, k = defs["rope_q"], defs["rope_k"]
        # the same score by rotating k by the offset only (independent of absolute position)
        rotated = engine.attention.apply_rope(k[None], positions=np.array([n - m])).data[0]
        assert c.rope == pytest.approx(float(q @ rotated), abs=1e-9)


def test_06_exercises_graded_by_the_engine():
    app = load_app(NB06)
    _, defs = run_app(app)
    built = {**defs["exercises_scaling"], **defs["exercises_heads"]}
    built.update(rope=defs["exercise_rope"], lookup=defs["exercise_lookup"])
    truth = {n: e.truth for n, e in built.items()}
    assert truth["variance"] == 256 and truth["causal"] == 21
    assert truth["mha"] == 4 * (512 * 512 + 512)
    assert truth["rope"] == pytest.approx(defs["shift_check"].rope, abs=1e-9)  # m=3, n=7
    # the lookup exercise: its truth is the weight the retrieval chart shows at c = 1 for scores
    # 4 and 0 ... recomputed from the definition of the softmax
    assert truth["lookup"] == pytest.approx(math.exp(4) / (math.exp(4) + 7))
    for box, name, truth in [  # a section's dictionary of boxes and the entry, or a box of its own
        ("answers_scaling", "variance", 256),
        ("answers_scaling", "causal", 21),
        ("answers_heads", "mha", truth["mha"]),
        ("answer_rope", None, round(truth["rope"], 4)),
        ("answer_lookup", None, round(truth["lookup"], 2)),
    ]:
        for answer, verdict in ((str(truth), "Right"), (str(truth * 1.5 + 5), "Not quite")):
            value = answer if name is None else {name: answer}
            assert verdict in output_text(run_app(app, **{box: value})[0])
    # the 20,000-sample estimate is computed when the exercise is built, never per keystroke
    text = output_text(run_app(app, answers_scaling={"variance": "256"})[0])
    shown = re.search(r"20 000 pairs gives ([0-9]+\.[0-9])", text)
    sample = attention_lab.dot_product_variance(256, n=20000, seed=1).var_raw
    assert float(shown.group(1)) == pytest.approx(sample, abs=0.05)
    assert sample == pytest.approx(256, rel=0.02)  # within the exercise's own tolerance


def test_06_opens_on_the_shipped_models_and_their_claims_hold():
    """Issue 16: sections 5 and 6 show the default models on open, loaded from the checkpoints the
    page's own lesson cells trained with the controls' default settings; every number shown is the
    loaded model's own, and the prose's claims hold on them."""
    text, defs = notebook_text("06_attention")
    assert defs["tiny_problem"] == defs["gpt_problem"] == ""
    d = attention_lab.TINY_DEFAULTS
    # the settings shown in the Train form are the shipped model's, and nothing trains until it is submitted
    assert defs["tiny_train"].value is None
    assert defs["tiny_train"].element.value == {k: d[k] for k in ("task", "length", "steps", "lr")}
    tiny = defs["tiny"]
    assert tiny is defs["tiny_shipped"]
    assert (
        "The map and the accuracy curve below are the default model's (reverse, length 6, "
        "300 steps, learning rate 0.01), trained in advance by the cells above and shipped"
    ) in text
    with engine.no_grad():
        pred = tiny.model(tiny.x_test).data.argmax(-1)
    assert defs["tiny_accuracy"] == pytest.approx(float((pred == tiny.y_test).mean()))
    assert defs["tiny_accuracy"] > 0.9 and f"{defs['tiny_accuracy']:.1%}" in text
    # "to reverse a sequence, output i must read input L-1-i: an anti-diagonal"
    assert list(tiny.weights.argmax(axis=1)) == list(range(len(tiny.example) - 1, -1, -1))
    assert f"predicted {tiny.prediction.tolist()}" in text
    # the Transformer: the loss shown is the loaded model's, below the unigram baseline
    g = attention_lab.GPT_DEFAULTS
    # the settings shown in the Train form are the shipped model's, and nothing trains until it is submitted
    assert defs["gpt_train"].value is None
    assert defs["gpt_train"].element.value == {"steps": g["steps"], "blocks": g["layers"], "lr": g["lr"]}
    gpt = defs["gpt"]
    assert gpt is defs["gpt_shipped"] and not gpt.stopped
    assert gpt.heldout_loss[-1] == pytest.approx(NB.heldout_loss(gpt.model, gpt.data.heldout, g["context"]), rel=1e-5)
    assert gpt.heldout_loss[-1] < gpt.unigram - 0.8, (gpt.heldout_loss[-1], gpt.unigram)
    assert (
        f"Held-out loss {gpt.heldout_loss[-1]:.2f} nats per character against "
        f"{gpt.unigram:.2f} for the unigram baseline"
    ) in text
    # the text shown is what the page's sampler draws from the loaded model after the prompt
    assert defs["gpt_sample"].startswith("a query ") and defs["gpt_sample"] in text
    assert defs["gpt_sample"] == NB.sample(gpt.model, gpt.data.chars, "a query ", 120, 0.8, seed=0)
    assert (
        "The loss curves below are the default model's (400 steps, 1 block, learning rate 0.003), "
        "trained in advance by the cells above and shipped"
    ) in text
    assert defs["exercise_block"].truth == 12 * 768**2 + 13 * 768


def test_06_tiny_model_learns_reversal():
    """The button retrains with the settings shown; at the defaults it makes the shipped model."""
    d = attention_lab.TINY_DEFAULTS
    outputs, defs = run_app(load_app(NB06), tiny_train={k: d[k] for k in ("task", "length", "steps", "lr")})
    assert_no_error_outputs(outputs)
    tiny = defs["tiny"]
    assert tiny is not defs["tiny_shipped"] and "Trained just now by the cells above" in output_text(outputs)
    assert defs["tiny_accuracy"] > 0.9
    L = len(tiny.example)
    assert list(tiny.weights.argmax(axis=1)) == list(range(L - 1, -1, -1))
    with engine.no_grad():
        pred = tiny.model(tiny.x_test).data.argmax(-1)
    assert defs["tiny_accuracy"] == pytest.approx(float((pred == tiny.y_test).mean()))
    assert f"{defs['tiny_accuracy']:.1%}" in output_text(outputs)
    np.testing.assert_allclose(tiny.history.accuracy, defs["tiny_shipped"].history.accuracy)
    np.testing.assert_allclose(tiny.weights, defs["tiny_shipped"].weights, rtol=1e-4, atol=1e-5)
    # the map shown is softmax(q kᵀ/√d) of the model's own projections
    m = tiny.model
    with engine.no_grad():
        h = m.token(tiny.example[None]) + m.position(np.arange(L))
        q, k = m.q(h).data[0], m.k(h).data[0]
    s = q @ k.T / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(1, keepdims=True))
    np.testing.assert_allclose(tiny.weights, p / p.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)


def test_06_a_transformer_without_its_causal_mask_copies_the_next_character(tmp_path):
    """The page's TransformerBlock prompt, made in a copy of the file and trained as its button
    does: both losses fall to about 0.1 nats per character, far below the page's model."""
    edited = edited_copy(tmp_path, "causal = engine.attention.causal_mask(x.shape[1])", "causal = None")
    run = edited.train_tiny_gpt(**attention_lab.GPT_DEFAULTS)
    shipped, _ = attention_lab.shipped_tiny_gpt(GPT_CODE, GPT_CLASSES)
    assert run.train_loss[-1] < 0.2 and run.heldout_loss[-1] < 0.2
    assert shipped.heldout_loss[-1] > 1.5


def test_06_tiny_model_extremes():
    for kwargs in [
        dict(lr=1.0, steps=25, length=12, task="sort"),
        dict(lr=1e-4, steps=25, length=2, task="rotate by 1"),
    ]:
        outputs, defs = run_app(load_app(NB06), tiny_train=kwargs)
        assert_no_error_outputs(outputs)
        assert 0.0 <= defs["tiny_accuracy"] <= 1.0 or "non-finite" in output_text(outputs)


def test_06_rope_decay_chart_is_su_et_al_bound():
    """Issue 14: the decay chart plotted random q, k that do not decay. It now plots the bound
    and the aligned score, each relative to distance 0, and the number it quotes is the bound's."""
    text, defs = notebook_text("06_attention", rope_dim=64)
    r = defs["rope_distance"]
    theta = 10000.0 ** (-np.arange(0, 64, 2) / 64)
    partial = np.cumsum(np.exp(1j * np.outer(r.distance, theta)), axis=1)
    np.testing.assert_allclose(r.bound, np.abs(partial).mean(axis=1), atol=1e-12)
    np.testing.assert_allclose(r.aligned, 2 * np.cos(np.outer(r.distance, theta)).sum(1), atol=1e-9)
    assert np.all(np.abs(r.aligned) <= 64 * r.bound + 1e-9)  # the bound holds (h_i = 2, h_{d/2} = 0)
    far = r.bound_relative[200:].max()
    assert far < 0.5 and f"**{far:.2f}**" not in text and f"{far:.2f} of its value" in text
    assert "random q, k" not in text
    outputs, _ = run_app(load_app(NB06), rope_dim=64)  # chart titles are in the specs, not text
    assert "positions, one pair in 2)" in output_html(outputs)  # 32 of the 64 rows drawn, said
    # "the more pairs, the deeper the decay; with d = 2 nothing decays"
    text2, defs2 = notebook_text("06_attention", rope_dim=2)
    assert defs2["rope_distance"].bound_relative.min() == pytest.approx(1.0)
    assert "1.00 of its value" in text2
    fars = [
        attention_lab.rope_score_vs_distance(d, 10000.0, 256).bound_relative[200:].max()
        for d in (2, 4, 8, 16, 32, 64, 128)
    ]
    assert all(b <= a + 1e-12 for a, b in zip(fars, fars[1:])) and fars[-1] < 0.35


@pytest.mark.parametrize("d", [2, 16, 128])
@pytest.mark.parametrize("base", [100.0, 10000.0, 1e6])
def test_06_rope_chart_draws_the_bound_above_the_aligned_score(d, base):
    """Issue 26: the chart drew each curve over its own value at distance 0, so the aligned score
    rose to 1.4-1.6 times the "upper bound". Both are now over the aligned score at distance 0 (d),
    and the bound holds at every distance, with room to spare at 0 (it is loose there)."""
    _, defs = run_app(load_app(NB06), rope_dim=d, rope_base=base)
    r = defs["rope_distance"]
    assert r.aligned[0] == pytest.approx(d)
    assert np.all(np.abs(r.aligned_relative) <= r.bound + 1e-9)
    assert r.bound[0] == pytest.approx((d / 2 + 1) / 2)  # (1/(d/2)) Σ_j j: loose at distance 0
    # under the old scaling (each curve over its own start) the aligned curve crossed the bound
    assert d == 2 or np.max(r.aligned_relative / r.bound_relative) > 1.05


def test_06_rope_score_is_re_sum_of_conj_q_k_rotated_by_the_key_minus_the_query_position():
    """Issue 26: the formula's sign. With pairs as complex numbers and Δ = n − m, the RoPE score
    ⟨R_m q, R_n k⟩ the table shows is Re Σ conj(q_i) k_i e^{iΔθ_i}; q_i conj(k_i) would need e^{−iΔθ_i}."""
    _, defs = run_app(load_app(NB06), rope_m=3, rope_n=11, rope_shift=0)
    q, k, shown = defs["rope_q"], defs["rope_k"], defs["shift_check"].rope
    d = q.size
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    qc, kc = q[0::2] + 1j * q[1::2], k[0::2] + 1j * k[1::2]
    assert np.real(np.sum(np.conj(qc) * kc * np.exp(1j * (11 - 3) * theta))) == pytest.approx(shown, abs=1e-9)
    assert abs(np.real(np.sum(qc * np.conj(kc) * np.exp(1j * (11 - 3) * theta))) - shown) > 1e-3
    assert np.real(np.sum(qc * np.conj(kc) * np.exp(-1j * (11 - 3) * theta))) == pytest.approx(shown, abs=1e-9)


@pytest.mark.parametrize("d, base", [(16, 10000.0), (4, 100.0), (128, 100.0), (2, 1e6), (128, 1e6)])
def test_06_sinusoidal_similarity_falls_only_on_average(d, base):
    """Issue 26: "falls with distance" held only on average; the page says which, with the numbers,
    at the default, at both ends of d (2: one pair, cos Δ, whatever the base) and of the base."""
    text, defs = notebook_text("06_attention", rope_dim=d, rope_base=base)
    sim = defs["sinusoid"].similarity[0]
    near, far = sim[1:32].mean(), sim[32:].mean()
    rise = next(n for n in range(1, 64) if sim[n] > sim[n - 1])  # "it ripples": a rise exists
    if d == 2:
        np.testing.assert_allclose(sim, np.cos(np.arange(64)), atol=1e-6)
    said = "falls only on average" if near > far else "does not even fall on average"
    assert (
        f"{said} (mean {near:.2f} over distances 1 to 31, {far:.2f} over 32 to 63): it ripples, and "
        f"already at distance {rise} it rises again, from {sim[rise - 1]:.2f} to {sim[rise]:.2f}"
    ) in text
    assert (d, base) != (16, 10000.0) or said == "falls only on average"
    assert (d, base) != (4, 100.0) or said == "does not even fall on average"


def test_06_kv_cache_counts_are_per_layer():
    """Issue 26: the counts are one layer's; the page says a model repeats them in every layer."""
    text, defs = notebook_text("06_attention")
    c = defs["kv_check"]
    assert "Rows of K and V projected in this layer: 12 with the cache, 78 without" in text
    assert (
        f"with 12 layers, {12 * c.projected_cached} rows against {12 * c.projected_uncached}, and "
        f"{12 * c.scores} products per head either way"
    ) in text
    assert "with 12 layers, 144 rows against 936, and 936 products" in text


def test_06_the_transformer_is_measured_against_an_ngram_ladder():
    """Issue 26: unigram, bigram and trigram held-out losses beside the model's; this run (seed 0)
    beats the trigram by little, and its held-out loss rises at the end of training (both said,
    with numbers, for this run); over the five shipped seeds the page gives the range against the
    trigram, how many runs beat it, and the rise at the end in each run, read from their curves."""
    text, defs = notebook_text("06_attention")
    gpt = defs["gpt"]
    uni, bi, tri = gpt.unigram, attention_lab.ngram_loss(2), attention_lab.ngram_loss(3)
    last, best = gpt.heldout_loss[-1], int(np.argmin(gpt.heldout_loss))
    assert uni > bi > tri > last and tri - last < 0.1
    assert (
        f"Held-out loss {last:.2f} nats per character against {uni:.2f} for the unigram baseline, "
        f"{bi:.2f} for the bigram and {tri:.2f} for the trigram. This run beats the trigram "
        f"by only {tri - last:.2f} nats"
    ) in text
    assert best < len(gpt.steps) - 1 and gpt.train_loss[-1] < gpt.train_loss[best]
    assert f"lowest at step {gpt.steps[best]} ({gpt.heldout_loss[best]:.2f}) and has risen since" in text
    # the five shipped seeds' curves (seed 0 is the run above)
    curves = defs["ablations_seeds"]["full model"]
    assert curves.shape == (5, len(gpt.steps))
    np.testing.assert_allclose(curves[0], gpt.heldout_loss, rtol=1e-5)
    ends = curves[:, -1]
    lead, rise = tri - ends, ends - curves.min(axis=1)
    assert 0 < np.sum(lead > 0) < 5  # not every seed beats the trigram: the page says so
    assert np.all(rise > 0)  # each run ends above its lowest, as the page says
    assert (
        # bold numbers: the text has a space before the colon
        f"One run is one seed. Trained from seeds 0 to 4, the same model ends between {ends.min():.2f} and "
        f"{ends.max():.2f} : its lead over the trigram ranges from {lead.min():.3f} to {lead.max():.3f} nats, "
        f"and {np.sum(lead > 0)} of the 5 runs beat it. In every run the last held-out loss is above the "
        f"run's lowest, by {rise.min():.3f} to {rise.max():.3f} nats."
    ) in text


def test_06_dense_mask_counts_all_scores():
    """Issue 14: a sliding window saves work only with a banded kernel; a dense mask computes L²."""
    text, defs = notebook_text("06_attention", mask_kind="sliding window", mask_window=2)
    L = len(defs["qkv"].tokens)
    band = sum(1 for i in range(L) for j in range(L) if abs(i - j) < 2)
    assert defs["mask_counts"].computed == L * L and defs["mask_counts"].used == band
    assert f"Scores computed: {L * L}" in text and f"scores the mask keeps: {band}" in text
    assert "banded kernel" in text


def test_06_permutation_equivariance_shown():
    """Issue 14: claimed, never shown. Reorder X: outputs reorder (no positions), not with PE."""
    text, defs = notebook_text("06_attention")
    p, qkv = defs["permutation"], defs["qkv"]

    def attend(x):  # softmax(QKᵀ/√d_k)V written out in NumPy
        q, k, v = x @ qkv.W_q, x @ qkv.W_k, x @ qkv.W_v
        s = q @ k.T / np.sqrt(q.shape[1])
        w = np.exp(s - s.max(1, keepdims=True))
        return (w / w.sum(1, keepdims=True)) @ v

    order = p.order
    assert sorted(order) == list(range(len(qkv.tokens))) and list(order) != sorted(order)
    assert p.gap_plain == pytest.approx(np.abs(attend(qkv.X[order]) - attend(qkv.X)[order]).max(), abs=1e-12)
    pe = engine.attention.sinusoidal_positions(len(order), qkv.X.shape[1]).data
    shown = np.abs(attend(qkv.X[order] + pe) - attend(qkv.X + pe)[order]).max()
    assert p.gap_positions == pytest.approx(shown, rel=1e-5)
    after = np.abs(attend((qkv.X + pe)[order]) - attend(qkv.X + pe)[order]).max()
    assert p.gap_after == pytest.approx(after, abs=1e-12)
    assert p.gap_plain < 1e-12 and p.gap_positions > 0.01 and p.gap_after < 1e-12
    assert f"{p.gap_plain:.1e}" in text and f"{p.gap_positions:.3f}" in text
    assert f"{p.gap_after:.1e} when they are reordered after" in text


def test_06_fully_masked_row_said_as_pytorch_does(torch):
    """Issue 14: say what PyTorch returns for a row with no allowed key; check each word of it."""
    text, defs = notebook_text("06_attention", mask_kind="padding", mask_pad=10)
    qkv, mask = defs["qkv"], defs["mask"]
    assert not mask.any() and np.all(defs["maps"].output == 0)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(getattr(qkv, n)) for n in "QKV"), attn_mask=torch.tensor(mask)
    )
    assert torch.all(ref == 0)  # SDPA: zeros, as the engine
    assert torch.isnan(torch.softmax(torch.full((3,), -math.inf), 0)).all()  # softmax: NaN
    layer = torch.nn.MultiheadAttention(4, 1, batch_first=True)
    x = torch.randn(1, 3, 4)
    assert torch.isnan(layer(x, x, x, key_padding_mask=torch.ones(1, 3, dtype=torch.bool))[0]).all()
    assert "F.scaled_dot_product_attention does (since 2.5)" in text and "give NaN" in text


@pytest.mark.parametrize("c", [0.0625, 8.0])
def test_06_designed_lookup_concentrates_as_the_scale_grows(c):
    text, defs = notebook_text("06_attention", retrieval_scale=c)
    r = defs["retrieval"]
    assert r.scores.argmax() == 3
    s = r.scores * c
    w = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    np.testing.assert_allclose(r.weights[0], w, atol=1e-12)
    assert f"{r.on_target[0]:.3f}" in text
    if c == 8.0:
        assert r.on_target[0] > 0.99
    else:
        assert abs(r.on_target[0] - 1 / 8) < 0.1  # near uniform


@pytest.mark.parametrize("L", [128, 131072])
def test_06_memory_counts_and_growth(L):
    """The scores' L² and the cache's L, on the values the notebook shows; bytes of real arrays."""
    text, defs = notebook_text("06_attention", kv_length=L, kv_precision=2)
    m, sweep = defs["kv_memory"], defs["kv_sweep"]
    assert m.scores_bytes == 12 * L * L * 2 and m.kv_cache_bytes == 2 * 12 * L * 768 * 2
    assert f"{m.scores_bytes / 2**20:,.1f} MiB" in text and f"{m.kv_cache_bytes / 2**20:,.1f} MiB" in text
    for a, b in zip(sweep, sweep[1:]):  # "doubling L multiplies the first by 4, the second by 2"
        ratio = b.length / a.length
        assert b.scores_bytes == a.scores_bytes * ratio**2 and b.kv_cache_bytes == a.kv_cache_bytes * ratio
    # the same counts on arrays the engine builds (small sizes)
    small = attention_lab.attention_memory(7, 8, 3, 2, 4)
    q = engine.randn(2, 7, 4)
    assert engine.matmul(q, q.transpose(-1, -2)).data.nbytes == small.scores_bytes
    assert 3 * 2 * engine.randn(7, 8).data.nbytes == small.kv_cache_bytes


def test_06_kv_cache_decodes_exactly_and_counts_projections(torch):
    text, defs = notebook_text("06_attention", answers_heads={"kv": "72"})
    c = defs["kv_check"]
    assert c.max_gap < 1e-12 and f"{c.max_gap:.1e}" in text
    assert (c.projected_cached, c.projected_uncached, c.scores) == (12, 78, 78)
    assert defs["exercises_heads"]["kv"].truth == 72 and "Right: 72" in text
    # the cache against PyTorch's causal attention on the same projections
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 8))
    Wq, Wk, Wv = rng.standard_normal((3, 8, 8)) / np.sqrt(8)
    full = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(X @ W) for W in (Wq, Wk, Wv)), is_causal=True
    ).numpy()
    last = attention_lab.kv_cache_decode(12, 8, seed=0)
    assert last.max_gap < 1e-12
    step = X[5] @ Wq @ (X[:6] @ Wk).T / np.sqrt(8)
    w = np.exp(step - step.max()) / np.exp(step - step.max()).sum()
    np.testing.assert_allclose(w @ (X[:6] @ Wv), full[5], atol=1e-12)


def test_06_transformer_button_trains_with_the_settings_shown():
    text, defs = notebook_text("06_attention", gpt_train={"steps": 50, "blocks": 2, "lr": 3e-3})
    gpt = defs["gpt"]
    assert gpt is not defs["gpt_shipped"] and len(gpt.model.blocks) == 2
    assert list(gpt.steps) == [50] and "Trained just now by the cells above" in text
    assert "with your settings (50 steps, 2 blocks" in text
    assert defs["gpt_sample"] in text and f"{gpt.heldout_loss[-1]:.2f}" in text
    assert "One run is one seed" not in text  # the shipped seeds' sentence is about the default model


@pytest.mark.parametrize("noise", [0.0, 0.5, 4.0])
def test_06_cross_attention_shown(torch, noise):
    text, defs = notebook_text("06_attention", cross_noise=noise, answer_cross="84")
    c = defs["cross"]
    assert c.weights.shape == (4, 8) and c.output.shape == (4, 16)
    # the same construction written out, and torch's attention on it
    rng = np.random.default_rng(0)
    table = {w: rng.standard_normal(16) for w in dict.fromkeys(c.source)}
    source = torch.tensor(np.stack([table[w] for w in c.source]))
    target = source[[2, 1, 3, 7]] + noise * torch.tensor(rng.standard_normal((4, 16)))
    ref = torch.softmax(target @ source.T / 4.0, dim=1)
    np.testing.assert_allclose(c.weights, ref.numpy(), atol=1e-10)
    np.testing.assert_allclose(c.output, (ref @ source).numpy(), atol=1e-10)
    found = int((c.weights.argmax(1) == c.aligned).sum())
    assert f"{found} of 4" in text
    if noise <= 1.0:  # "with little noise each query puts its largest weight on its word"
        assert found == 4
    assert defs["exercise_cross"].truth == 84 and "Right: 84" in text


@pytest.mark.parametrize("q", [[2.0, 0.0, 0.0, 0.0], [-5.0, 5.0, 0.5, 0.0]])
def test_06_steered_query_weights_are_softmax_of_q(q):
    text, defs = notebook_text("06_attention", query_edit=[q])
    e = np.exp(np.array(q) - max(q))
    np.testing.assert_allclose(defs["steered"].weights[0], e / e.sum(), atol=1e-12)
    assert ", ".join(f"{w:.3f}" for w in e / e.sum()) in text


# ----------------------------------------------------------------------------- what each head reads


def _heads_by_hand(model, ids):
    """Each head's weights [blocks, H, L, L] and the next-character distribution, computed in NumPy
    from the model's parameters (pre-norm blocks, causal softmax(q kᵀ/√d_k))."""
    p = {name: np.asarray(value.data, dtype=np.float64) for name, value in model.state_dict().items()}

    def norm(x, prefix):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * p[f"{prefix}.weight"] + p[f"{prefix}.bias"]

    L = len(ids)
    x = p["token.weight"][ids] + p["position.weight"][:L]
    maps = []
    for b, block in enumerate(model.blocks):
        pre, H = f"blocks.{b}.", block.attention.heads
        d = x.shape[-1]
        qkv = (
            norm(x, pre + "norm_attention") @ p[pre + "attention.in_proj_weight"].T + p[pre + "attention.in_proj_bias"]
        )
        q, k, v = (qkv[:, i * d : (i + 1) * d].reshape(L, H, d // H).transpose(1, 0, 2) for i in range(3))
        s = q @ k.transpose(0, 2, 1) / np.sqrt(d // H)
        s = np.where(np.tri(L, dtype=bool), s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        maps.append(w)
        out = (w @ v).transpose(1, 0, 2).reshape(L, d) @ p[pre + "attention.out_proj.weight"].T + p[
            pre + "attention.out_proj.bias"
        ]
        x = x + out
        h = norm(x, pre + "norm_mlp") @ p[pre + "mlp.0.weight"].T + p[pre + "mlp.0.bias"]
        h = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
        x = x + h @ p[pre + "mlp.2.weight"].T + p[pre + "mlp.2.bias"]
    z = norm(x, "norm") @ p["head.weight"].T + p["head.bias"]
    z = z[-1] - z[-1].max()
    return np.stack(maps), np.exp(z) / np.exp(z).sum()


@pytest.mark.parametrize("prompt", ["the next token", "The NEXT token, 42!", "x" * 200])
def test_06_head_maps_of_a_typed_prompt_are_the_models_weights(prompt):
    """The maps shown are the shipped model's attention on the prompt's last 16 known characters
    (lower-cased, the unknown ones named), causal, each row summing to 1; the likeliest next
    characters are the model's."""
    text, defs = notebook_text("06_attention", gpt_prompt=prompt)
    gpt, view = defs["gpt"], defs["head_view"]
    known = "".join(c for c in prompt.lower() if c in gpt.data.chars)
    assert view.window.text == known[-16:] and f"The model reads “{known[-16:]}”" in text
    assert view.window.dropped == "".join(dict.fromkeys(c for c in prompt.lower() if c not in gpt.data.chars))
    assert prompt != "The NEXT token, 42!" or "left out: '4', '2', '!'" in text
    ids = np.array([gpt.data.chars.index(c) for c in view.window.text])
    maps, next_p = _heads_by_hand(gpt.model, ids)
    np.testing.assert_allclose(view.weights, maps, atol=2e-5)
    np.testing.assert_allclose(view.next_p, next_p, atol=2e-5)
    assert np.all(np.triu(view.weights, 1) == 0)
    np.testing.assert_allclose(view.weights.sum(-1), 1, atol=1e-5)
    top = gpt.data.chars[int(np.argmax(next_p))]
    assert f"likeliest next characters: “{'␣' if top == ' ' else top}” {next_p.max():.2f}" in text


@pytest.mark.parametrize("prompt", ["", "42?!"])
def test_06_a_prompt_with_no_known_character_is_said(prompt):
    text, defs = notebook_text("06_attention", gpt_prompt=prompt)
    assert defs["head_view"] is None and "the prompt has no character the model knows" in text


def test_06_heads_read_the_character_before_on_average():
    """The first chart: the mean weight each head gives the key δ characters back, over the
    held-out windows, computed here from the model's own weights; both heads of the shipped model
    give the character just before the query more weight than any other distance, and the page
    says so with their shares."""
    text, defs = notebook_text("06_attention")
    gpt, reach = defs["gpt"], defs["reach"]
    x, _ = attention_lab.heldout_windows(gpt.data.heldout, 16)
    maps = np.stack([_heads_by_hand(gpt.model, row)[0] for row in x], axis=1)  # [blocks, B, H, L, L]
    L = maps.shape[-1]
    for delta in (0, 1, 2, 5, 15):
        by_hand = np.mean([maps[0, :, :, i, i - delta] for i in range(max(delta, 1), L)], axis=(0, 1))
        np.testing.assert_allclose(reach.weight[0, :, delta], by_hand, atol=2e-5)
    assert reach.weight.shape == (1, 2, 16) and list(reach.favourite[0]) == [1, 1]
    assert all(reach.weight[0, h, 1] > 0.5 for h in range(2))
    assert (
        f"Weight on the character just before the query, on average: block 1, head 1 "
        f"{reach.weight[0, 0, 1]:.0%}, block 1, head 2 {reach.weight[0, 1, 1]:.0%}. Every head of the "
        "first block gives that one character more weight than any other"
    ) in text


# ----------------------------------------------------------------------------- ablations


def test_06_ablations_open_shipped_and_their_claims_hold():
    """The four shipped runs: the full model's curves are section 6's shipped Transformer's (the
    same training), each run differs from it in the one part its name says, the table shows their
    last losses, and each sentence under it follows from the values shown."""
    text, defs = notebook_text("06_attention")
    runs, gpt = defs["ablations"], defs["gpt"]
    assert runs is defs["ablations_shipped"] and defs["ablations_problem"] == ""
    assert list(runs) == ["full model", "no position embedding", "one head", "no residual path"]
    full = runs["full model"]
    np.testing.assert_allclose(full.heldout_loss, gpt.heldout_loss, rtol=1e-5)
    np.testing.assert_allclose(full.train_loss, gpt.train_loss, rtol=1e-5)
    assert "were trained in advance by the cells above, at the default settings, and ship" in text
    for name, run in runs.items():
        assert list(run.steps) == list(gpt.steps)
        assert (
            f"{name} {run.final_train:.2f} {run.final_heldout:.2f} {run.final_heldout - full.final_heldout:+.2f}"
        ) in text
    gaps = {name: run.final_heldout - full.final_heldout for name, run in runs.items() if name != "full model"}
    # the shipped runs (seed 0): only the position embedding's removal costs more than 0.15 nats
    assert (
        gaps["no position embedding"] > 0.15 and abs(gaps["one head"]) < 0.15 and abs(gaps["no residual path"]) < 0.15
    )
    assert "Clearly worse: no position embedding ." in text  # bold names: the text has a space before the stop
    assert "Within 0.15 nats of the full model: one head, no residual path ." in text
    bigram, nopos = attention_lab.ngram_loss(2), runs["no position embedding"].final_heldout
    assert (
        nopos < bigram
        and f"Without positions the model still beats the bigram ({nopos:.2f} against {bigram:.2f})" in text
    )
    nores = runs["no residual path"]
    assert nores.final_train < full.final_train - 0.1
    assert (
        f"On this seed, without the residual path the training loss even ends lower ({nores.final_train:.2f} against "
        f"{full.final_train:.2f})"
    ) in text
    # over five seeds (shipped; seed 0's are the runs above): the full model's spread is below the
    # 0.15 nats the page requires of a clear gap, and without positions the loss is higher every time
    seeds = defs["ablations_seeds"]
    f, n = seeds["full model"][:, -1], seeds["no position embedding"][:, -1]
    assert len(f) == len(n) == 5 and f[0] == pytest.approx(full.final_heldout, rel=1e-6)
    assert n[0] == pytest.approx(nopos, rel=1e-6)
    spread = f.max() - f.min()
    assert 0.02 < spread < 0.15 < gaps["no position embedding"] and np.all(n > f)
    assert (
        f"the full model's final held-out loss ranges from {f.min():.2f} to {f.max():.2f} ({spread:.2f} nats); "
        f"without the position embedding it is higher for every seed, by {(n - f).min():.2f} to "
        f"{(n - f).max():.2f} nats"
    ) in text
    # one head and no residual path: one seed each, and their gaps lie inside the full model's
    # spread over seeds, which the page says instead of ranking them
    assert abs(gaps["one head"]) < spread and abs(gaps["no residual path"]) < spread
    assert (
        f"One head and no residual path were trained from seed 0 only: they differ from the full model by "
        f"{gaps['one head']:+.3f} and {gaps['no residual path']:+.3f} nats, within the {spread:.2f} nats the "
        "seed alone moves the full model, so one run cannot tell them from it."
    ) in text


def test_06_ablation_models_differ_in_the_part_named():
    """positions=False leaves out the position embedding, residual=False the two 'x +', heads=1
    one head: checked on the page's classes, on one input."""
    V = len(attention_lab.char_data().chars)
    ids = np.arange(10).reshape(1, 10) % V
    with engine.random.fork_rng(0):
        full = NB.TinyGPT(V)
    with engine.random.fork_rng(0):
        bare = NB.TinyGPT(V, positions=False)
    assert bare.position is None and "position.weight" not in bare.state_dict()
    # without positions, a query's output does not depend on the order of the keys before it
    swapped = ids.copy()
    swapped[0, [2, 5]] = swapped[0, [5, 2]]
    with engine.no_grad():
        assert np.allclose(bare(ids).data[0, 9], bare(swapped).data[0, 9], atol=1e-5)
        assert not np.allclose(full(ids).data[0, 9], full(swapped).data[0, 9], atol=1e-3)
    block = NB.TransformerBlock(32, 2, residual=False)
    x = engine.randn(1, 5, 32)
    with engine.no_grad():
        attended = block.attention(block.norm_attention(x), engine.attention.causal_mask(5))[0]
        expected = block.mlp(block.norm_mlp(attended)).data
        np.testing.assert_allclose(block(x).data, expected, atol=1e-6)
        assert block.weights.shape == (1, 2, 5, 5)
    assert NB.TinyGPT(V, heads=1).blocks[0].attention.heads == 1


@pytest.mark.slow
def test_06_retraining_the_ablations_gives_the_shipped_runs():
    """The button trains the four models with the page's cells: at the default settings, the
    shipped runs again."""
    text, defs = notebook_text("06_attention", gpt_ablate=True)
    runs, shipped = defs["ablations"], defs["ablations_shipped"]
    assert runs is not shipped and "Trained by the button with the cells above, as they are on this page" in text
    for name in shipped:
        np.testing.assert_allclose(runs[name].heldout_loss, shipped[name].heldout_loss, rtol=1e-3)

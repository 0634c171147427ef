"""engine.course.formulas: every formula row of every cheat sheet, executed.

- Every NumPy snippet runs against its engine snippet on random inputs (two draws), and every
  PyTorch snippet against the NumPy one (the oracle; required under REQUIRE_ORACLE=1).
- The seeds' checklist: every formula family of the four seed documents maps to at least one row.
- The seeds' errors: the rows carry the corrected formulas, and the seed's wrong version is shown
  to disagree with the engine (so it could not have stayed on a sheet).
- The machinery itself: snippets, conversions, comparisons, search, rendering, training loops.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import pathlib
import re

import numpy as np
import pytest
from oracle import require_torch

from engine.course import formulas, toc
from engine.course.formulas import FormulaMismatch, FormulaRow, render
from engine.course.formulas import deep_learning as hub
from engine.course.formulas.core import N, spec

ROWS = formulas.ROWS
IDS = [r.id for r in ROWS]
TORCH_ROWS = [r for r in ROWS if r.torch is not None]

# ----------------------------------------------------------------------------- the seeds' checklist
# Every formula family of the four seed documents (in ../shared/seeds/), by seed, and the rows
# that hold it. E = deep-learning-essential-formulas.marimo.py, M = neural-network-notions-math.md,
# R = deep-learning-reference.txt, P = formulas-numpy-pytorch.txt. The two training loops (E, P)
# are code blocks, tested by test_training_loops_reach_a_low_loss below.
SEED_CHECKLIST = {
    # E: the essential-formulas cheat sheet
    "E neuron z = wᵀx + b, a = φ(z)": ["dl.neuron"],
    "E dense layer z = W a + b": ["dl.dense"],
    "E dense layer parameters n_in·n_out + n_out": ["dl.dense.params", "shape.linear_params"],
    "E ReLU": ["act.relu"],
    "E Leaky ReLU max(αz, z)": ["act.leaky_relu"],
    "E sigmoid": ["act.sigmoid"],
    "E tanh": ["act.tanh"],
    "E GELU zΦ(z)": ["act.gelu"],
    "E linear layers collapse without an activation": ["dl.collapse"],
    "E regression: identity output and MSE": ["loss.mse"],
    "E binary: sigmoid and log loss": ["loss.bce", "loss.bce_logits"],
    "E binary: ∂L/∂z = p̂ − y": ["loss.bce_logits.grad"],
    "E multiclass: softmax": ["act.softmax"],
    "E multiclass: cross-entropy −Σ y log p": ["loss.ce", "loss.ce.probs"],
    "E multiclass: ∂L/∂z = p − y": ["loss.ce.grad"],
    "E chain rule": ["deriv.chain_rule"],
    "E backprop ∂L/∂W = δ aᵀ, ∂L/∂b = δ": ["dl.backprop.outer"],
    "E backprop δ(l−1) = (Wᵀδ) ⊙ φ′(z)": ["dl.backprop.delta"],
    "E gradient descent": ["opt.sgd"],
    "E momentum": ["opt.momentum"],
    "E Adam (moments, bias correction, update)": ["opt.adam"],
    "E Xavier Var = 2/(n_in + n_out)": ["dl.init.xavier"],
    "E He Var = 2/n_in": ["dl.init.he"],
    "E L2 penalty λ‖W‖²": ["dl.l2"],
    "E inverted dropout m ⊙ h / (1 − q)": ["dl.dropout", "dl.dropout.scale"],
    "E weight decay = L2 for plain SGD": ["opt.sgd_weight_decay"],
    "E batch normalisation": ["dl.batchnorm"],
    "E layer normalisation": ["dl.layernorm"],
    "E 1-D convolution y[t] = ΣΣ W[c,k] x_c[t+k] + b": ["shape.conv1d"],
    "E conv2d parameters C_out(C_in K_h K_w + 1)": ["shape.conv2d_params"],
    "E attention softmax(QKᵀ/√d_k) V": ["shape.attention.sdpa"],
    # M: forward and gradient functions
    "M addition": ["deriv.add", "deriv.add.grad"],
    "M subtraction": ["deriv.sub", "deriv.sub.grad"],
    "M multiplication": ["deriv.mul", "deriv.mul.grad"],
    "M division (∂/∂b = −a/b², corrected)": ["deriv.div", "deriv.div.grad"],
    "M power (∂/∂exp = a^exp ln a)": ["deriv.pow", "deriv.pow.grad"],
    "M exp": ["deriv.exp", "deriv.exp.grad"],
    "M log with base (∂/∂base = −ln arg/(base ln² base), corrected)": ["deriv.log_base", "deriv.log_base.grad"],
    "M natural log": ["deriv.ln", "deriv.ln.grad"],
    "M matmul ∇a = ∇r bᵀ, ∇b = aᵀ ∇r": ["deriv.matmul", "deriv.matmul.grad"],
    "M convolution and its gradients (rotated kernels)": [
        "deriv.conv2d",
        "deriv.conv2d.grad_input",
        "deriv.conv2d.grad_weight",
    ],
    "M linear activation": ["deriv.identity"],
    "M sigmoid and σ(1 − σ)": ["act.sigmoid", "act.sigmoid.grad"],
    "M tanh (e^2t − 1)/(e^2t + 1) and 1 − tanh²": ["act.tanh.exp2", "act.tanh.grad"],
    "M ReLU and its gradient": ["act.relu", "act.relu.grad"],
    "M Leaky ReLU and its gradient": ["act.leaky_relu", "act.leaky_relu.grad"],
    "M softmax and its gradient r ⊙ (∇r − Σ ∇r r)": ["act.softmax", "deriv.softmax.grad"],
    "M MSE (t − target)² and 2(t − target)": ["deriv.mse", "deriv.mse.grad"],
    "M pseudo-Huber and its gradient": ["deriv.pseudo_huber", "deriv.pseudo_huber.grad"],
    "M softmax cross-entropy and p − target": ["deriv.softmax_ce", "deriv.softmax_ce.grad"],
    "M SGD step": ["opt.sgd"],
    "M Adam moments, bias correction, step": ["opt.adam"],
    "M AdamW (decay on θ before the step, corrected)": ["opt.adamw"],
    "M clip and its gradient": ["deriv.clip", "deriv.clip.grad"],
    "M global gradient norm (square root, corrected)": ["opt.clip_grad_norm.total"],
    "M clip gradients by the global norm": ["opt.clip_grad_norm"],
    "M soft update τθ_a + (1 − τ)θ_t": ["opt.soft_update"],
    # R: the web reference
    "R conv output ⌊(W − K + 2P)/S⌋ + 1": ["shape.conv_out"],
    "R transposed conv (W − 1)S − 2P + K + P_out": ["shape.conv_transpose_out"],
    "R dilation K_eff = K + (K − 1)(D − 1)": ["shape.effective_kernel", "shape.conv_out_dilated"],
    "R receptive field RF_l = RF_l−1 + (K_l − 1) S_cum": ["shape.receptive_field"],
    "R scaled dot-product attention": ["shape.attention.sdpa"],
    "R attention mask (masked_fill)": ["shape.attention.masked_fill", "shape.attention.causal"],
    "R Q, K, V per head [B, H, L, d_k], d_k = d_model/H": ["shape.attention.heads"],
    "R attention scores [B, H, L, L]": ["shape.attention.scores"],
    "R input and output [B, L, d_model]": ["shape.attention.output"],
    "R RoPE θ_i = 10000^(−2(i−1)/d)": ["shape.rope.frequencies"],
    "R RoPE rotation of coordinate pairs": ["shape.rope"],
    "R RoPE ⟨R_m q, R_n k⟩ depends on m − n": ["shape.rope.relative"],
    "R ReLU range and derivative": ["act.relu", "act.relu.grad"],
    "R GELU tanh approximation": ["act.gelu.tanh"],
    "R GELU range [−0.17, ∞)": ["act.gelu.min"],
    "R SiLU / Swish x·σ(x)": ["act.silu"],
    "R SiLU range [−0.28, ∞)": ["act.silu.min"],
    "R SwiGLU": ["act.swiglu"],
    "R softmax with temperature τ": ["act.softmax.temperature"],
    "R AdamW decoupled decay": ["opt.adamw"],
    "R L2 in Adam, coupled (g + λθ)": ["opt.adam_l2"],
    "R cosine annealing": ["sched.cosine"],
    "R diffusion α_t = 1 − β_t, ᾱ_t = Π α_s": ["dl.diffusion.alpha_bar"],
    "R diffusion q(x_t | x_0), x_t = √ᾱ x_0 + √(1 − ᾱ) ε": ["dl.diffusion.q_sample"],
    "R ELBO": ["dl.vae.elbo"],
    "R VAE KL −½ Σ(1 + log σ² − μ² − σ²)": ["dl.vae.kl"],
    # P: formulas with NumPy and PyTorch
    "P sigmoid and σ′": ["act.sigmoid", "act.sigmoid.grad"],
    "P tanh (eˣ − e⁻ˣ)/(eˣ + e⁻ˣ) and tanh′": ["act.tanh", "act.tanh.grad"],
    "P ReLU and ReLU′": ["act.relu", "act.relu.grad"],
    "P Leaky ReLU": ["act.leaky_relu"],
    "P GELU tanh approximation": ["act.gelu.tanh"],
    "P SiLU / Swish": ["act.silu"],
    "P softmax, max subtracted for stability": ["act.softmax", "act.softmax.shift"],
    "P MSE": ["loss.mse"],
    "P MAE": ["loss.mae"],
    "P Huber": ["loss.huber"],
    "P binary cross-entropy, ∂L/∂z = p − y": ["loss.bce", "loss.bce_logits.grad"],
    "P cross-entropy −z_y + log Σ e^z, ∂L/∂z = softmax − onehot": ["loss.ce", "loss.ce.grad"],
    "P KL divergence (batchmean)": ["loss.kl_div"],
    "P losses take raw logits (fused, stable)": ["loss.bce_logits.stable", "loss.bce_logits"],
    "P tip: normalise inputs": ["dl.tips.normalise"],
    "P tip: initial loss ≈ ln K": ["dl.tips.initial_loss"],
    "P tip: train() / eval()": ["dl.tips.eval"],
    "P tip: chain rule": ["deriv.chain_rule"],
    "P tip: gradient check by central differences": ["deriv.grad_check"],
    "P tip: no grad": ["dl.tips.no_grad"],
    "P SGD": ["opt.sgd"],
    "P momentum v ← μv + g": ["opt.momentum"],
    "P RMSProp": ["opt.rmsprop"],
    "P Adam": ["opt.adam"],
    "P AdamW": ["opt.adamw"],
    "P StepLR": ["sched.step"],
    "P cosine schedule": ["sched.cosine"],
    "P warm-up": ["sched.warmup"],
    "P one-cycle": ["sched.one_cycle"],
    "P reduce on plateau": ["sched.plateau"],
    "P accuracy": ["metric.accuracy"],
    "P precision": ["metric.precision"],
    "P recall": ["metric.recall"],
    "P F1": ["metric.f1"],
    "P confusion matrix": ["metric.confusion"],
    "P ROC-AUC": ["metric.roc_auc"],
    "P R²": ["metric.r2"],
    "P perplexity": ["metric.perplexity"],
    "P He / Kaiming N(0, 2/n_in)": ["dl.init.he"],
    "P Xavier": ["dl.init.xavier"],
    "P BatchNorm": ["dl.batchnorm"],
    "P LayerNorm": ["dl.layernorm"],
    "P dropout, scale 1/(1 − p)": ["dl.dropout", "dl.dropout.scale"],
    "P weight decay: L + λ‖w‖², or θ ← θ − ηλθ": ["dl.l2", "opt.adamw"],
    "P dense backprop dW = XᵀdZ, db = ΣdZ, dX = dZ Wᵀ": ["dl.backprop.dense"],
    "P clip_grad_norm_": ["opt.clip_grad_norm"],
}


def test_the_seed_checklist_maps_every_family_to_existing_rows():
    known = set(IDS)
    for family, ids in SEED_CHECKLIST.items():
        assert ids, f"{family}: no row listed"
        missing = [i for i in ids if i not in known]
        assert not missing, f"{family}: rows {missing} do not exist"
    assert len(SEED_CHECKLIST) >= 125  # a guard against the list being emptied


def test_every_seed_is_represented_in_the_checklist():
    seeds = {family.split()[0] for family in SEED_CHECKLIST}
    assert seeds == {"E", "M", "R", "P"}


# ----------------------------------------------------------------------------- every snippet runs


@pytest.mark.parametrize("row", ROWS, ids=IDS)
@pytest.mark.parametrize("seed", [0, 1])
def test_numpy_and_engine_agree(row, seed):
    results = formulas.check_row(row, backends=["numpy", "engine"], seed=seed)
    for value in results["numpy"] if isinstance(results["numpy"], tuple) else (results["numpy"],):
        assert np.all(np.isfinite(np.asarray(value, dtype=float))), f"{row.id}: non-finite result"


@pytest.mark.oracle
@pytest.mark.parametrize("row", TORCH_ROWS, ids=[r.id for r in TORCH_ROWS])
def test_pytorch_agrees_with_numpy(row):
    require_torch()
    formulas.check_row(row, backends=["numpy", "torch"], seed=0)


def test_snippet_counts():
    counts = formulas.snippet_count()
    assert counts["numpy"] == counts["engine"] == len(ROWS)
    assert counts["torch"] == len(TORCH_ROWS)
    # Rows without PyTorch code are the few where PyTorch has no counterpart to run.
    assert {r.id for r in ROWS if r.torch is None} == {
        "shape.receptive_field",
        "shape.rope.frequencies",
        "shape.rope",
        "shape.rope.relative",
        "shape.sinusoidal",
        "dl.diffusion.cosine",
    }


# ----------------------------------------------------------------------------- rows are well formed


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_row_is_well_formed(row):
    assert row.sheet in formulas.SHEETS and toc.entry(row.sheet).kind == "cheatsheet"
    assert row.name.strip() and row.section.strip()
    assert re.fullmatch(r"[a-z0-9_.]+", row.id), row.id
    for backend, code in row.snippets().items():
        ast.parse(code)  # valid Python
        assert "\n" not in code
    # Pipes would split a markdown table cell; LaTeX uses \lvert, \Vert instead.
    assert "|" not in row.latex
    assert row.latex.count("{") == row.latex.count("}"), "unbalanced braces in the LaTeX"
    assert "$" not in row.latex
    assert 0 < row.rtol <= 0.03 and row.atol >= 0


def test_ids_are_unique_and_rows_are_found_by_id():
    assert len(set(IDS)) == len(IDS)
    assert len({r.name for r in ROWS}) == len(ROWS), "two rows share a name (the search and pickers show names)"
    assert formulas.row("deriv.div.grad").name == "Division gradient"
    with pytest.raises(KeyError, match="no row with id 'nope'"):
        formulas.row("nope")
    with pytest.raises(ValueError, match="unknown sheet"):
        formulas.rows("nope")


def test_every_sheet_has_rows():
    for sheet in formulas.SHEETS:
        assert len(formulas.rows(sheet)) >= 8, sheet
    assert set(formulas.SHEETS) == {e.id for e in toc.cheatsheets()}


# ----------------------------------------------------------------------------- the seeds' errors, corrected


def _engine_disagrees_with(row_id: str, wrong_numpy: str, seed: int = 0):
    """The row passes, and the same row with the seed's wrong NumPy formula fails."""
    row = formulas.row(row_id)
    formulas.check_row(row, backends=["numpy", "engine"], seed=seed)
    wrong = dataclasses.replace(row, numpy=wrong_numpy)
    with pytest.raises(FormulaMismatch):
        formulas.check_row(wrong, backends=["numpy", "engine"], seed=seed)


def test_division_gradient_has_the_minus_sign():
    row = formulas.row("deriv.div.grad")
    assert "-g * a / b ** 2" in row.numpy and r"-\frac{a}{b^2}" in row.latex
    _engine_disagrees_with("deriv.div.grad", "(g / b, g * a / b ** 2)")
    # And the value itself: d(a/b)/db at a = 3, b = 2 is −3/4.
    got = formulas.evaluate_with(row, "engine", {"a": np.array([3.0]), "b": np.array([2.0]), "g": np.array([1.0])})
    assert got[1][0] == pytest.approx(-0.75)


def test_log_base_gradient_has_the_minus_sign():
    row = formulas.row("deriv.log_base.grad")
    assert "-g * np.log(x) / (base * np.log(base) ** 2)" in row.numpy
    assert r"-\frac{\ln x}{\beta\,\ln^2\beta}" in row.latex
    _engine_disagrees_with(
        "deriv.log_base.grad", "(g / (x * np.log(base)), g * np.log(x) / (base * np.log(base) ** 2))"
    )
    # d log_b(x) / db at x = e, b = e is −1/e.
    e = np.array([math.e])
    got = formulas.evaluate_with(row, "engine", {"x": e, "base": e.copy(), "g": np.array([1.0])})
    assert got[1][0] == pytest.approx(-1 / math.e)


def test_global_gradient_norm_takes_the_square_root():
    row = formulas.row("opt.clip_grad_norm.total")
    assert row.numpy.startswith("np.sqrt(") and r"\sqrt" in row.latex
    _engine_disagrees_with("opt.clip_grad_norm.total", "(g1 ** 2).sum() + (g2 ** 2).sum()")
    # A 3-4-5 triangle: the norm of the gradients (3, 4) is 5.
    values = {"p1": np.zeros(1), "p2": np.zeros(1), "g1": np.array([3.0]), "g2": np.array([4.0]), "max_norm": 1.0}
    assert float(formulas.evaluate_with(row, "engine", values)) == pytest.approx(5.0)


def test_adamw_decays_the_weights_before_the_step():
    row = formulas.row("opt.adamw")
    assert "p = p - lr * wd * p - lr * (m" in row.numpy
    # The seed's line applies the decay to the already-stepped θ_n; it disagrees with the engine.
    adam_then_decay = (
        "m = b1 * m + (1 - b1) * g; v = b2 * v + (1 - b2) * g ** 2; "
        "p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps); p = p - lr * wd * p"
    )
    _engine_disagrees_with("opt.adamw", adam_then_decay)


def test_a_wrong_formula_cannot_stay_on_a_sheet():
    # Sigmoid's derivative without the (1 − σ) factor, a sign slip in tanh', a transposed matmul.
    _engine_disagrees_with("act.sigmoid.grad", "s = 1 / (1 + np.exp(-x)); g * s")
    _engine_disagrees_with("act.tanh.grad", "g * (1 + np.tanh(x) ** 2)")
    _engine_disagrees_with("deriv.matmul.grad", "(g @ b.T, g.T @ a)")


# ----------------------------------------------------------------------------- one weight convention
# PyTorch's storage, W ∈ ℝ^{n_out × n_in}, written Z = X Wᵀ + b with X of shape (batch, n_in)
# (issue 13). Each dense-layer row: {weight input: n_in from the row's inputs}.
DENSE_LAYER_ROWS = {
    "dl.dense": {"W": lambda v: v["X"].shape[-1]},
    "dl.collapse": {"W1": lambda v: v["X"].shape[-1], "W2": lambda v: v["W1"].shape[0]},
    "dl.backprop.outer": {"W": lambda v: v["a"].shape[-1]},
    "dl.backprop.delta": {"W": lambda v: v["z"].shape[-1]},
    "dl.backprop.dense": {"W": lambda v: v["X"].shape[-1]},
    "act.swiglu": {"Wg": lambda v: v["X"].shape[-1], "Wu": lambda v: v["X"].shape[-1]},
    "dl.residual": {"W": lambda v: v["x"].shape[-1]},
    "deriv.residual.grad": {"W": lambda v: v["x"].shape[-1]},
    "dl.diffusion.loss": {"W": lambda v: v["x0"].shape[-1]},
    "dl.transformer_block": {
        **{w: (lambda v: v["x"].shape[-1]) for w in ("Wq", "Wk", "Wv", "Wo", "W1")},
        "W2": lambda v: v["W1"].shape[0],
    },
}


@pytest.mark.parametrize("row_id", DENSE_LAYER_ROWS)
def test_dense_layer_rows_store_weights_as_nn_linear_does(row_id):
    """Every weight of a dense-layer row has the shape of nn.Linear(n_in, n_out).weight, where n_in
    is the width of what it multiplies."""
    from engine import nn

    row = formulas.row(row_id)
    values = row.inputs(np.random.default_rng(0))
    torch = require_torch() if formulas.torch_available() else None
    for weight, n_in_of in DENSE_LAYER_ROWS[row_id].items():
        n_in, n_out = n_in_of(values), values[weight].shape[0]
        assert values[weight].shape == tuple(nn.Linear(n_in, n_out).weight.shape), (row_id, weight)
        if torch is not None:
            assert values[weight].shape == tuple(torch.nn.Linear(n_in, n_out).weight.shape), (row_id, weight)


# A weight multiplied from the left of a column vector (W a, W x) or untransposed from the right of
# a batch (X W, x @ W): the two conventions the course no longer uses.
OTHER_CONVENTIONS = (
    re.compile(r"W(?:\^\{\(l\)\}|_(?:\{\w+\}|\w))?\s*\\mathbf\s*[ax]\b"),  # LaTeX: W a, W^{(l)} \mathbf a
    re.compile(r"\b[Xx]\s*W(?:_(?:\{\w+\}|\w))?(?!\s*(?:_(?:\{\w+\}|\w))?\^\\top)(?![\w^{])"),  # LaTeX: XW, x W_gate
    re.compile(r"\b[Xxah]\s*@\s*(?:params\[\"W\w*\"\]|W\w*)(?!\.T|\w)"),  # code: X @ W, x @ Wg
    re.compile(r"\bW\w*\s*@\s*[axh]\b"),  # code: W @ a
)


def _other_convention(text: str):
    return next((m.group(0) for pattern in OTHER_CONVENTIONS for m in [pattern.search(text)] if m), None)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_every_row_writes_dense_weights_one_way(row):
    for part in (row.latex, row.numpy, row.engine, row.torch or ""):
        assert _other_convention(part) is None, f"{row.id}: {_other_convention(part)!r} in {part!r}"


def test_the_convention_check_catches_the_old_spellings():
    for old in (
        r"\mathbf z^{(l)} = W^{(l)} \mathbf a^{(l-1)} + \mathbf b^{(l)}",
        r"Z = XW + b",
        r"\operatorname{SiLU}(x W_{gate})",
        "Z = X @ W + b",
        "s = x @ Wg; s",
        "z = W @ a + b",
        'pre = X @ params["W1"] + params["b1"]',
    ):
        assert _other_convention(old), old
    for new in (
        r"Z = X W^\top + \mathbf b",
        r"\operatorname{SiLU}(X W_{gate}^\top)",
        "X @ W.T + b",
        'X @ params["W1"].T',
        r"(X W_1^\top) W_2^\top",
    ):
        assert _other_convention(new) is None, new


def test_the_sheets_prose_writes_dense_weights_one_way():
    root = pathlib.Path(__file__).resolve().parents[2]
    for path in sorted((root / "cheatsheets").glob("*.py")) + sorted((root / "engine/course/formulas").glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            assert _other_convention(line) is None, f"{path.name}:{number}: {line.strip()}"


# ----------------------------------------------------------------------------- one L2 convention
# The sheets write an L2 penalty as ½λ‖θ‖², whose gradient λθ is PyTorch's weight_decay=λ (dl.l2,
# opt.sgd_weight_decay, 04 §5). A λ‖θ‖² without the ½ (λ meaning 2 × weight_decay) must not come back.
SQUARED_NORM = r"(?:\\(?:lVert|\|)[^$]{1,40}?\\(?:rVert|\|)(?:_2)?\^\{?2\}?|‖[^‖]{1,20}‖₂?²)"
HALF = re.compile(r"\\t?frac\{?1\}?\{?2\}?|\\t?frac\{\\lambda\}\{2\}|½|(?:\\lambda|λ)\s*/\s*2")
# a λ, what stands up to 14 characters before it and up to 6 after it, then a squared norm
PENALTY = re.compile(rf".{{0,14}}(?:\\lambda|λ)[^=]{{0,6}}?{SQUARED_NORM}")


def _unhalved_penalty(text: str):
    """The first λ‖·‖² in ``text`` with no ½ (or λ/2) beside its λ, else None."""
    return next((m.group(0) for m in PENALTY.finditer(text) if not HALF.search(m.group(0))), None)


def test_every_sheet_writes_the_l2_penalty_with_its_half():
    seen = 0
    for row in ROWS:
        for part in (row.latex, row.notes or ""):
            seen += bool(PENALTY.search(part))
            assert _unhalved_penalty(part) is None, f"{row.id}: {_unhalved_penalty(part)!r} in {part!r}"
    root = pathlib.Path(__file__).resolve().parents[2]
    for path in sorted((root / "cheatsheets").glob("*.py")) + sorted((root / "notebooks").glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            seen += bool(PENALTY.search(line))
            assert _unhalved_penalty(line) is None, f"{path.name}:{number}: {line.strip()}"
    assert seen >= 3  # dl.l2, opt.sgd_weight_decay and 04 §5 state the penalty: the check reads them


def test_the_l2_check_catches_a_penalty_without_its_half():
    for old in (r"\lambda \lVert W\rVert_2^2", r"+ \lambda \|\theta\|^2", "an L2 penalty λ‖θ‖²"):
        assert _unhalved_penalty(old), old
    for new in (r"\tfrac{\lambda}{2} \lVert W\rVert_2^2", r"\frac12 \lambda \|\theta\|^2", "an L2 penalty ½λ‖θ‖²"):
        assert _unhalved_penalty(new) is None, new


def test_the_numpy_training_loop_stores_weights_as_nn_linear_does():
    code = hub.NUMPY_TRAINING_LOOP
    assert "rng.standard_normal((hidden, d))" in code and "rng.standard_normal((classes, hidden))" in code
    assert _other_convention(code) is None, _other_convention(code)


# ----------------------------------------------------------------------------- published anchors


def test_activation_minima_match_the_reference_ranges():
    # solved, not sampled: GELU(x*) = x*·Φ(x*) at Φ(x*) + x*φ(x*) = 0, and SiLU(x*) = x* + 1
    assert float(formulas.evaluate(formulas.row("act.gelu.min"), "engine")) == pytest.approx(-0.169971, abs=1e-6)
    assert float(formulas.evaluate(formulas.row("act.silu.min"), "engine")) == pytest.approx(-0.278465, abs=1e-6)


def test_the_stability_bound_is_where_gradient_descent_starts_to_diverge():
    """η < 2/λ_max: just below the row's bound gradient descent on ½θᵀHθ shrinks θ, just above it grows."""
    row = formulas.row("opt.stability")
    H = row.inputs(np.random.default_rng(0))["H"]
    bound = float(formulas.evaluate(row, "engine"))
    assert bound == pytest.approx(2 / 8.0, rel=1e-9)
    for eta, shrinks in ((0.98 * bound, True), (1.02 * bound, False)):
        theta = np.ones(4)
        for _ in range(400):
            theta = theta - eta * H @ theta
        assert (np.linalg.norm(theta) < 1e-2) == shrinks, eta


def test_adams_first_step_moves_every_coordinate_by_about_eta():
    row = formulas.row("opt.adam.first_step")
    inputs = row.inputs(np.random.default_rng(0))
    moved = np.abs(np.asarray(formulas.evaluate(row, "engine")) - inputs["p"])
    g = np.abs(inputs["G"][0])
    np.testing.assert_allclose(moved, inputs["lr"] * g / (g + inputs["eps"]), rtol=1e-9)
    assert moved.max() <= inputs["lr"] and np.median(moved) > 0.9 * inputs["lr"]


def test_initial_loss_is_ln_k_and_ddpm_alpha_bar_ends_near_4e_5():
    assert float(formulas.evaluate(formulas.row("dl.tips.initial_loss"), "engine")) == pytest.approx(
        math.log(10), rel=1e-6
    )
    alpha_bars = formulas.evaluate(formulas.row("dl.diffusion.alpha_bar"), "numpy")
    assert alpha_bars.shape == (1000,) and alpha_bars[-1] == pytest.approx(4.04e-5, rel=0.01)


def test_conv_arithmetic_anchors():
    # Dumoulin & Visin: 5x5 input, 3x3 kernel, stride 2, padding 1 -> 3x3; its transpose -> 5x5.
    row, tr = formulas.row("shape.conv_out"), formulas.row("shape.conv_transpose_out")
    assert int(formulas.evaluate_with(row, "engine", {"W": 5, "K": 3, "S": 2, "P": 1})) == 3
    assert int(formulas.evaluate_with(tr, "numpy", {"W": 3, "K": 3, "S": 2, "P": 1, "P_out": 0})) == 5
    # Two 3x3 convolutions see 5x5 pixels; three, 7x7 (VGG's argument).
    rf = formulas.row("shape.receptive_field")
    stack = {"k": [3, 3, 3], "s": [1, 1, 1], "p": [1, 1, 1]}
    assert int(formulas.evaluate_with(rf, "numpy", stack)) == int(formulas.evaluate_with(rf, "engine", stack)) == 7


# ----------------------------------------------------------------------------- the newer rows' claims
# (issue 14): each row's notes claim something beyond "the three spellings agree"; check it.


def _value(row_id, backend="numpy", **values):
    return formulas.evaluate_with(formulas.row(row_id), backend, values)


def test_the_residual_path_hands_the_gradient_through_unchanged():
    rng = np.random.default_rng(0)
    x, W, g = rng.standard_normal((4, 5)), rng.standard_normal((5, 5)), rng.standard_normal((4, 5))
    dead = _value("deriv.residual.grad", "engine", x=x, W=W, b=np.full(5, -100.0), g=g)  # ReLU branch off
    np.testing.assert_array_equal(dead, g)
    alive = _value("deriv.residual.grad", "engine", x=x, W=W, b=np.zeros(5), g=g)
    assert np.abs(alive - g).max() > 0.1  # the branch adds its own share on top of g


def test_batchnorm_backward_is_orthogonal_to_the_mean_and_to_x_hat():
    """What the note says it loses: per feature, Σ_i ∇x_i = 0 and Σ_i ∇x_i x̂_i = 0 (exactly with
    ε = 0; ε > 0 leaves x̂ a variance slightly below 1)."""
    row = formulas.row("deriv.batchnorm.grad")
    values = {**row.inputs(np.random.default_rng(3)), "eps": 0.0}
    dx = formulas.evaluate_with(row, "engine", values)[0]
    x = values["x"]
    x_hat = (x - x.mean(0)) / np.sqrt(x.var(0) + values["eps"])
    np.testing.assert_allclose(dx.sum(0), 0.0, atol=1e-10)
    np.testing.assert_allclose((dx * x_hat).sum(0), 0.0, atol=1e-10)
    assert np.abs(dx).max() > 0.1


def test_rmsnorm_is_layernorm_on_zero_mean_rows():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 5))
    x -= x.mean(-1, keepdims=True)
    gamma = rng.standard_normal(5)
    rms = _value("dl.rmsnorm", "engine", x=x, gamma=gamma, eps=1e-5)
    ln = _value("dl.layernorm", "engine", x=x, gamma=gamma, beta=np.zeros(5), eps=1e-5)
    np.testing.assert_allclose(rms, ln, rtol=1e-12)
    x_shifted = x + 3.0  # and differs once the mean is not 0
    assert not np.allclose(
        _value("dl.rmsnorm", x=x_shifted, gamma=gamma, eps=1e-5),
        _value("dl.layernorm", x=x_shifted, gamma=gamma, beta=np.zeros(5), eps=1e-5),
    )


def test_the_transformer_block_is_causal_and_residual():
    row = formulas.row("dl.transformer_block")
    values = row.inputs(np.random.default_rng(2))
    y = formulas.evaluate_with(row, "engine", values)
    changed = {**values, "x": values["x"].copy()}
    changed["x"][-1] += 1.0  # a new last token changes no earlier output
    y2 = formulas.evaluate_with(row, "engine", changed)
    np.testing.assert_allclose(y2[:-1], y[:-1], rtol=1e-12)
    assert np.abs(y2[-1] - y[-1]).max() > 0.1
    zero_branches = {**values, "Wo": np.zeros_like(values["Wo"]), "W2": np.zeros_like(values["W2"])}
    np.testing.assert_array_equal(formulas.evaluate_with(row, "engine", zero_branches), values["x"])


def test_attention_flops_and_memory_anchors():
    sizes = {"B": 1, "H": 32, "L": 8192, "d_model": 4096}
    assert int(_value("shape.attention.memory", **sizes)) == 8 * 2**30  # the note's 8 GiB
    # The L² term equals the projections' 8·B·L·d² at L = 2·d_model, and exceeds it beyond.
    d = 64
    assert int(_value("shape.attention.flops", "engine", B=1, H=4, L=2 * d, d_model=d)) == 8 * 1 * (2 * d) * d**2
    assert int(_value("shape.attention.flops", "engine", B=1, H=4, L=4 * d, d_model=d)) > 8 * 1 * (4 * d) * d**2


def test_the_ddpm_step_with_the_true_noise_lands_on_the_posterior_mean():
    from engine import diffusion

    sch = diffusion.linear_beta_schedule(1000)
    rng = np.random.default_rng(4)
    x0, eps = rng.standard_normal((8, 2)), rng.standard_normal((8, 2))
    for t in (1, 500, 999):
        xt = diffusion.q_sample(x0, t, eps, sch)
        step = _value("dl.diffusion.ddpm_step", xt=xt, eps=eps, z=np.zeros_like(xt), t=t)
        mean, _ = diffusion.q_posterior_mean_var(x0, xt, t, sch)
        np.testing.assert_allclose(step, mean, rtol=1e-9, atol=1e-12)


def test_ddim_with_the_true_noise_jumps_exactly_along_the_forward_process():
    from engine import diffusion

    sch = diffusion.linear_beta_schedule(1000)
    rng = np.random.default_rng(5)
    x0, eps = rng.standard_normal((8, 2)), rng.standard_normal((8, 2))
    for t, s in ((999, 0), (999, 900), (10, 3)):
        xt = diffusion.q_sample(x0, t, eps, sch)
        np.testing.assert_allclose(
            _value("dl.diffusion.ddim_step", xt=xt, eps=eps, t=t, s=s),
            diffusion.q_sample(x0, s, eps, sch),
            rtol=1e-9,
            atol=1e-12,
        )


def test_the_ddpm_loss_is_zero_only_for_a_perfect_noise_prediction():
    rng = np.random.default_rng(6)
    x0, eps, t = rng.standard_normal((8, 2)), rng.standard_normal((8, 2)), rng.integers(0, 1000, 8)
    loss = float(_value("dl.diffusion.loss", "engine", x0=x0, eps=eps, t=t, W=np.zeros((2, 2))))
    assert loss == pytest.approx(float((eps**2).mean()))  # predicting 0: the noise's own power


def test_tweedie_tends_to_the_data_mean_as_the_noise_grows():
    xt = np.linspace(-3, 3, 7)[:, None]
    late = _value("dl.diffusion.tweedie", "engine", xt=xt, m=1.5, s=0.5, t=999)
    early = _value("dl.diffusion.tweedie", "engine", xt=xt, m=1.5, s=0.5, t=0)
    np.testing.assert_allclose(late, 1.5, atol=0.01)  # x_t says almost nothing about x_0
    np.testing.assert_allclose(early, xt, atol=0.01)  # x_t is almost x_0


def _iwae(mu, sigma, K, seed, x=0.8):
    rng = np.random.default_rng(seed)
    return float(
        _value(
            "dl.vae.iwae",
            "engine",
            x=np.array([[x]]),
            mu=np.array([[mu]]),
            sigma=np.array([[sigma]]),
            eps=rng.standard_normal((1, K)),
        )[0]
    )


def test_iwae_tightens_with_k_and_is_exact_for_the_true_posterior():
    x = 0.8
    log_px = -0.5 * math.log(2 * math.pi * 2.0) - x**2 / 4.0  # log N(x; 0, 2)
    for K in (1, 7, 50):  # true posterior N(x/2, 1/2): every weight is p(x)
        assert _iwae(x / 2, math.sqrt(0.5), K, seed=K, x=x) == pytest.approx(log_px, abs=1e-12)
    # A poor q: averaged over draws, ELBO = L_1 < L_10 < L_100 < log p(x).
    means = [np.mean([_iwae(-1.0, 0.5, K, seed) for seed in range(300)]) for K in (1, 10, 100)]
    assert means[0] < means[1] < means[2] < log_px
    assert log_px - means[2] < 0.5 * (log_px - means[0])


def test_the_elbo_row_uses_a_normalised_gaussian_decoder():
    """Integrated over x, exp(log N(x; x̂, σ²)) is 1 (a density): the ELBO is a bound in nats."""
    row = formulas.row("dl.vae.elbo")
    assert "gaussian_log_likelihood" in row.engine and "bernoulli" not in row.engine
    grid = np.linspace(-3, 4, 20001)[:, None]
    values = {
        "x_hat": np.full_like(grid, 0.5),
        "x": grid,
        "mu": np.zeros((len(grid), 3)),
        "logvar": np.zeros((len(grid), 3)),
        "var": 0.05,
    }  # KL = 0: the ELBO is log N(x; 0.5, 0.05)
    density = np.exp(formulas.evaluate_with(row, "engine", values))
    assert np.trapezoid(density, grid[:, 0]) == pytest.approx(1.0, abs=1e-6)


# ----------------------------------------------------------------------------- the evaluator


def test_run_snippet_returns_the_last_expression_or_none():
    ns = {"np": np}
    assert formulas.run_snippet("a = 2; b = 3; a * b", ns) == 6
    assert formulas.run_snippet("c = 4", ns) is None and ns["c"] == 4


def test_to_numpy_converts_every_result_kind():
    import engine

    assert formulas.to_numpy(engine.tensor([1.0, 2.0])).tolist() == [1.0, 2.0]
    assert formulas.to_numpy(3).shape == ()
    assert formulas.to_numpy((1, 2, 3)).tolist() == [1, 2, 3]  # shapes become arrays
    pair = formulas.to_numpy((np.zeros(2), np.ones(3)))
    assert isinstance(pair, tuple) and [p.shape for p in pair] == [(2,), (3,)]
    with pytest.raises(TypeError, match="cannot convert"):
        formulas.to_numpy(object())


def test_assert_close_checks_structure_shape_and_value():
    formulas.assert_close(np.ones(3), np.ones(3) + 1e-12)
    with pytest.raises(FormulaMismatch, match="shape"):
        formulas.assert_close(np.ones(3), np.ones((3, 1)))
    with pytest.raises(FormulaMismatch, match="worst at index"):
        formulas.assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.5]))
    with pytest.raises(FormulaMismatch, match="structure"):
        formulas.assert_close((np.ones(1),), np.ones(1))
    with pytest.raises(FormulaMismatch):
        formulas.assert_close(np.array([True]), np.array([False]))


# the smallest valid row: one input x, its snippets return x itself
MINIMAL_ROW = dict(
    id="t.x",
    sheet="derivatives",
    section="s",
    name="n",
    latex="x",
    numpy="x",
    engine="x",
    torch=None,
    inputs=spec(x=N(2)),
)


def test_row_validation_is_clear():
    base = MINIMAL_ROW
    with pytest.raises(ValueError, match="one line"):
        FormulaRow(**{**base, "numpy": "a = 1\nb"})
    with pytest.raises(ValueError, match="empty"):
        FormulaRow(**{**base, "engine": " "})
    with pytest.raises(ValueError, match="kind"):
        FormulaRow(**{**base, "kind": "magic"})
    with pytest.raises(ValueError, match="steps"):
        FormulaRow(**{**base, "kind": "update"})
    row = FormulaRow(**base)
    with pytest.raises(ValueError, match="no 'torch' snippet"):
        formulas.evaluate(row, "torch")
    with pytest.raises(ValueError, match="backend"):
        formulas.evaluate(dataclasses.replace(row, torch="x"), "jax")


def test_a_snippet_ending_in_a_statement_needs_result():
    row = FormulaRow(**{**MINIMAL_ROW, "id": "t.y", "numpy": "y = x", "engine": "y = x"})
    with pytest.raises(ValueError, match="result="):
        formulas.evaluate(row, "numpy")
    assert formulas.evaluate(dataclasses.replace(row, result="y"), "numpy").shape == (2,)


def test_inputs_are_reproducible_and_seed_dependent():
    row = formulas.row("act.relu")
    np.testing.assert_array_equal(formulas.evaluate(row, "numpy", 3), formulas.evaluate(row, "numpy", 3))
    assert not np.array_equal(formulas.evaluate(row, "numpy", 3), formulas.evaluate(row, "numpy", 4))


def test_update_rows_take_several_steps_and_schedules_any_horizon():
    adam = formulas.row("opt.adam")
    assert adam.steps >= 3
    values = adam.inputs(np.random.default_rng(0))
    one = formulas.evaluate_with(adam, "engine", values, steps=1)
    many = formulas.evaluate_with(adam, "engine", values)
    assert not np.allclose(one, many)
    sched = formulas.row("sched.cosine")
    lrs = formulas.evaluate_with(sched, "engine", {**sched.inputs(np.random.default_rng(0)), "T": 49}, steps=50)
    assert lrs.shape == (50,) and lrs[0] == pytest.approx(0.1) and lrs[-1] == pytest.approx(0.001)
    with pytest.raises(ValueError, match="'value' row"):
        formulas.evaluate_with(formulas.row("act.relu"), "numpy", {}, steps=3)


# ----------------------------------------------------------------------------- search and rendering


def test_search_narrows_by_every_word_case_insensitively():
    relu = formulas.search("ReLU")
    assert relu and all("relu" in r.text() for r in relu)
    assert {r.id for r in relu} >= {"act.relu", "act.relu.grad", "act.leaky_relu"}
    both = formulas.search("leaky derivative")
    assert [r.id for r in both] == ["act.leaky_relu.grad"]
    assert formulas.search("") == ROWS and formulas.search("   ") == ROWS
    assert formulas.search("x" * 200) == ()
    assert formulas.search("adam", formulas.rows("optimizers"))


def test_table_shows_every_snippet_verbatim_and_escapes_pipes():
    rows = formulas.rows("metrics")
    md = render.table_md(rows, sheet="metrics", link=lambda i: f"/{i}")
    for r in rows:
        for code in r.snippets().values():
            assert "`" + code.replace("|", r"\|") + "`" in md
        assert f"${r.latex}$" in md
    assert md.count("\n") == len(rows) + 1
    foreign = render.table_md([formulas.row("act.relu")], sheet="deep_learning", link=lambda i: f"/{i}")
    assert "(/activation_functions)" in foreign
    assert render.table_md([], sheet="metrics") == "_No formula matches._"
    piped = dataclasses.replace(formulas.row("act.relu"), numpy="a | b")
    assert r"`a \| b`" in render.table_md([piped], link=lambda i: i)


def test_sheet_sections_hold_the_sheet_rows_and_the_borrowed_ones():
    for sheet in formulas.SHEETS:
        if sheet == "deep_learning":
            continue
        shown = [r.id for _, rows in render.sheet_sections(sheet) for r in rows]
        assert set(shown) >= {r.id for r in formulas.rows(sheet)}
    derivative_ids = {r.id for _, rows in render.sheet_sections("derivatives") for r in rows}
    # The seed's table also lists the activations, the optimizers and the model functions.
    assert {"act.sigmoid.grad", "opt.sgd", "opt.adamw", "opt.clip_grad_norm", "opt.soft_update"} <= derivative_ids


def test_the_hub_sections_cover_its_rows_and_link_every_notebook_and_sheet():
    on_hub = [i for s in hub.HUB_SECTIONS for i in s.rows]
    for i in on_hub:
        formulas.row(i)
    assert {r.id for r in formulas.rows("deep_learning")} <= set(on_hub)
    linked_notebooks = {n for s in hub.HUB_SECTIONS for n in s.notebooks}
    linked_sheets = {n for s in hub.HUB_SECTIONS for n in s.sheets}
    assert linked_notebooks == {e.id for e in toc.notebooks()}
    assert linked_sheets == {e.id for e in toc.cheatsheets()} - {"deep_learning"}
    titles = [s.title for s in hub.HUB_SECTIONS]
    for expected in (
        "Neuron and dense layer",
        "Activations",
        "Output layers and losses",
        "Backpropagation",
        "Parameter updates",
        "Initialisation and regularisation",
        "Normalisation and residual connections",
        "Convolution arithmetic",
        "Attention, the Transformer block and RoPE",
        "Learning-rate schedules",
        "Metrics",
        "Training tips",
        "The minimal training loop",
        "Diffusion: forward process, loss and samplers",
        "VAE: ELBO, KL and the IWAE bound",
    ):
        assert expected in titles


def test_hub_sections_filter_by_query():
    link = lambda i: f"/{i}"  # noqa: E731
    full = render.hub_section_md("updates", "", link=link)
    assert full.startswith("## 5. Parameter updates") and "(/04_optimizers)" in full and "(/optimizers)" in full
    assert "AdamW" in render.hub_section_md("updates", "adamw", link=link)
    assert "SGD with momentum" not in render.hub_section_md("updates", "adamw", link=link)
    assert render.hub_section_md("updates", "relu", link=link) == ""
    assert render.hub_section_md("loop", "", link=link).startswith("## 13.")
    assert render.hub_section_md("loop", "loop", link=link) and render.hub_section_md("loop", "relu", link=link) == ""
    assert render.search_md("", link=link) == ""
    found = render.search_found("relu derivative")
    assert found["here"] == [] and found["elsewhere"] == found["everywhere"]  # not on the hub: on derivatives
    assert {r.id for r in found["elsewhere"]} >= {"act.relu.grad", "act.leaky_relu.grad"}
    summary = render.search_md("relu derivative", link=link)
    assert all(r.name in summary for r in found["elsewhere"])  # the table of those rows
    with pytest.raises(KeyError, match="unknown key"):
        render.hub_section_md("nope")


# ----------------------------------------------------------------------------- training loops


@pytest.fixture(scope="module")
def moons():
    from engine import data

    return data.make_moons(200, noise=0.1, seed=0)


@pytest.mark.parametrize("backend", ["numpy", "engine"])
def test_training_loops_reach_a_low_loss(backend, moons):
    X, y = moons
    result = hub.run_training_loop(backend, X, y)
    assert result["loss"] < 0.1, result
    assert result["accuracy"] > 0.97, result


@pytest.mark.oracle
def test_the_pytorch_loop_is_the_engine_loop_and_trains_too(moons):
    torch = require_torch()
    torch.set_num_threads(1)
    X, y = moons
    result = hub.run_training_loop("torch", X, y)
    assert result["loss"] < 0.1 and result["accuracy"] > 0.97, result


def test_the_pytorch_loop_differs_from_the_engine_loop_only_in_names():
    engine_lines = hub.ENGINE_TRAINING_LOOP.splitlines()
    torch_lines = hub.torch_training_loop().splitlines()
    assert len(engine_lines) == len(torch_lines)
    for e, t in zip(engine_lines, torch_lines):
        assert e == t or e.replace("engine.functional", "torch.nn.functional").replace("engine", "torch") == t
    assert "torch.no_grad()" in hub.torch_training_loop() and "engine" not in hub.torch_training_loop()


def test_the_training_loops_reject_bad_data():
    with pytest.raises(ValueError, match="backend"):
        hub.run_training_loop("jax", np.zeros((2, 2)), np.zeros(2, int))
    with pytest.raises(ValueError, match="integer y"):
        hub.run_training_loop("numpy", np.zeros((4, 2)), np.zeros(4))

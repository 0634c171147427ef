"""The computations behind notebook 06 (attention), one function per picture or exercise.

- :func:`toy_qkv`: embeddings of a short sentence and their queries, keys and values.
- :func:`attention_maps`: scores q·kᵀ·scale/τ, softmax weights (through
  ``engine.attention.attention_weights``), the output, and each row's entropy; :func:`make_mask`
  builds the causal, padding and sliding-window masks from ``engine.attention``.
- :func:`dot_product_variance` / :func:`scaling_sweep`: why scores are divided by √d_k.
- :func:`mha_shapes`: multi-head shapes and parameter counts, checked by running
  ``nn.MultiheadAttention``.
- RoPE: :func:`rope_pair_trajectory`, :func:`rope_shift_check`, :func:`rope_score_vs_distance`,
  :func:`sinusoidal_similarity`.
- A tiny attention model on a toy sequence task: :func:`make_sequence_task`,
  :class:`TinyAttention`, :func:`train_tiny_attention`.
"""

from __future__ import annotations

import math

import numpy as np

import engine.functional as F
from engine import Tensor, attention, manual_seed, matmul, nn, no_grad, optim, shapes
from engine.nn import Module

from ._checks import _int, _positive

__all__ = [
    "MASK_KINDS", "SCALES", "TASKS", "TinyAttention", "attention_maps", "dot_product_variance",
    "make_mask", "make_sequence_task", "mha_shapes", "rope_pair_trajectory",
    "rope_score_vs_distance", "rope_shift_check", "scaling_sweep", "sinusoidal_similarity",
    "toy_qkv", "train_tiny_attention",
]

SENTENCE = "the cat sat on the mat because it was warm"


# ----------------------------------------------------------------------------- Q, K, V
def toy_qkv(tokens=SENTENCE, d_model=8, d_k=4, seed=0) -> dict:
    """Queries, keys and values of a short sentence.

    Each distinct word gets a random embedding x ∈ R^d_model (a repeated word, the same one), and
    three random projections map it: q = x W_q, k = x W_k, v = x W_v, each W ~ N(0, 1/d_model)
    so that q, k, v have entries of variance about 1. Returns ``tokens`` (list of words), ``X``
    [L, d_model], ``W_q``/``W_k``/``W_v`` [d_model, d_k], ``Q``/``K``/``V`` [L, d_k].
    """
    op = "toy_qkv"
    words = tokens.split() if isinstance(tokens, str) else list(tokens)
    if not words:
        raise ValueError(f"{op}: give at least one token")
    d_model = _int(op, "d_model", d_model, 1)
    d_k = _int(op, "d_k", d_k, 1)
    rng = np.random.default_rng(seed)
    vocab = sorted(set(words))
    table = rng.standard_normal((len(vocab), d_model))
    X = table[[vocab.index(w) for w in words]]
    W = rng.standard_normal((3, d_model, d_k)) / math.sqrt(d_model)
    return {"tokens": words, "X": X, "W_q": W[0], "W_k": W[1], "W_v": W[2],
            "Q": X @ W[0], "K": X @ W[1], "V": X @ W[2]}


# ----------------------------------------------------------------------------- masks
MASK_KINDS = ("none", "causal", "padding", "sliding window", "causal sliding window")


def make_mask(kind, L, window=2, n_pad=0):
    """A boolean [L, L] mask, True where query i may attend to key j (None for 'none').

    'causal': j <= i; 'padding': the last ``n_pad`` keys are padding, blocked for every query;
    'sliding window': |i − j| < window; 'causal sliding window': i − window < j <= i.
    """
    op = "make_mask"
    L = _int(op, "L", L, 1)
    if kind == "none":
        return None
    if kind == "causal":
        return attention.causal_mask(L)
    if kind == "padding":
        n_pad = _int(op, "n_pad", n_pad, 0)
        lengths = np.array([max(L - n_pad, 0)])
        return np.broadcast_to(attention.padding_mask(lengths, L), (L, L)).copy()
    if kind == "sliding window":
        return attention.sliding_window_mask(L, _int(op, "window", window, 1), causal=False)
    if kind == "causal sliding window":
        return attention.sliding_window_mask(L, _int(op, "window", window, 1), causal=True)
    raise ValueError(f"{op}: kind must be one of {MASK_KINDS}, got {kind!r}")


# ----------------------------------------------------------------------------- scores and weights
SCALES = {"1/√d_k (standard)": "sqrt", "1 (no scaling)": "none", "1/d_k": "linear"}


def _scale_value(scale, d_k, op):
    if isinstance(scale, str):
        table = {"sqrt": 1 / math.sqrt(d_k), "none": 1.0, "linear": 1 / d_k}
        if scale not in table:
            raise ValueError(f"{op}: scale must be a number or one of {list(table)}, got {scale!r}")
        return table[scale]
    return _positive(op, "scale", scale)


def attention_maps(Q, K, V, scale="sqrt", temperature=1.0, mask=None) -> dict:
    """Scaled dot-product attention step by step, for one sequence.

        S = Q Kᵀ · scale / τ,     A = softmax(S) over the allowed keys,     out = A V

    ``scale``: a number or 'sqrt' (1/√d_k), 'none' (1), 'linear' (1/d_k); ``temperature`` τ > 0.
    Returns ``scores`` [L, L] (NaN where masked: drawn as gaps), ``weights`` (from
    ``engine.attention.attention_weights``, rows sum to 1, or 0 for a query with no key),
    ``output`` [L, d_v], ``entropy`` per row (nats), ``scale`` (the number used), ``empty_rows``
    (queries that may attend to nothing).
    """
    op = "attention_maps"
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    temperature = _positive(op, "temperature", temperature)
    factor = _scale_value(scale, Q.shape[-1], op) / temperature
    raw = Q @ K.T * factor
    weights = attention.attention_weights(Q, K, attn_mask=mask, scale=factor).data
    scores = raw if mask is None else np.where(mask, raw, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(weights > 0, weights * np.log(np.where(weights > 0, weights, 1.0)), 0.0)
    allowed = np.ones(raw.shape, bool) if mask is None else np.broadcast_to(mask, raw.shape)
    return {"scores": scores, "weights": weights, "output": weights @ V,
            "entropy": -plogp.sum(axis=-1), "scale": factor,
            "empty_rows": np.flatnonzero(~allowed.any(axis=-1))}


# ----------------------------------------------------------------------------- why √d_k
def dot_product_variance(d_k, n=4000, seed=0) -> dict:
    """Samples of q·k for q, k ~ N(0, I_{d_k}), raw and divided by √d_k.

    Var(q·k) = Σ_i Var(q_i k_i) = d_k (each product has variance 1), so q·k/√d_k has variance 1
    whatever d_k. Returns ``raw``, ``scaled`` (n samples each) and their sample variances.
    """
    op = "dot_product_variance"
    d_k = _int(op, "d_k", d_k, 1)
    n = _int(op, "n", n, 2)
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, d_k))
    k = rng.standard_normal((n, d_k))
    raw = np.einsum("nd,nd->n", q, k)
    scaled = raw / math.sqrt(d_k)
    return {"raw": raw, "scaled": scaled, "var_raw": float(raw.var()),
            "var_scaled": float(scaled.var())}


def scaling_sweep(dims=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), L=16, n=400, seed=0) -> dict:
    """For each d_k: the variance of q·k (raw and scaled) and the average largest softmax weight
    over L random keys, raw and scaled: without scaling the softmax saturates (one key takes
    nearly all the weight, the gradient through the others vanishes) as d_k grows."""
    op = "scaling_sweep"
    L = _int(op, "L", L, 2)
    n = _int(op, "n", n, 2)
    rng = np.random.default_rng(seed)
    out = {"d_k": np.asarray(dims), "var_raw": [], "var_scaled": [], "max_raw": [], "max_scaled": []}
    for d in dims:
        q = rng.standard_normal((n, 1, d))
        k = rng.standard_normal((n, L, d))
        s = (q * k).sum(-1)  # [n, L]
        for key, scores in (("raw", s), ("scaled", s / math.sqrt(d))):
            z = scores - scores.max(axis=1, keepdims=True)
            p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
            out[f"var_{key}"].append(float(scores.var()))
            out[f"max_{key}"].append(float(p.max(axis=1).mean()))
    return {k: np.asarray(v) for k, v in out.items()}


# ----------------------------------------------------------------------------- multi-head shapes
def mha_shapes(B, L, d_model, H) -> dict:
    """Shapes through multi-head self-attention (``engine.shapes.attention_shapes``) checked by
    running ``engine.nn.MultiheadAttention(d_model, H, batch_first=True)`` on a random
    [B, L, d_model] batch. Returns ``ok``; when H does not divide d_model, ``ok`` False and
    ``message``; else ``d_k``, ``rows`` (stage, shape), ``params`` (by formula), ``module_params``
    (counted on the module), ``output_shape`` and ``weights_shape`` (from the module)."""
    try:
        info = shapes.attention_shapes(B, L, d_model, H)
    except ValueError as error:
        return {"ok": False, "message": str(error).replace("attention_shapes: ", "")}
    manual_seed(0)
    mha = nn.MultiheadAttention(d_model, H, batch_first=True)
    x = Tensor(np.random.default_rng(0).standard_normal((B, L, d_model)).astype(np.float32))
    with no_grad():
        out, weights = mha(x, x, x, need_weights=True, average_attn_weights=False)
    return {"ok": True, "message": "", "d_k": info.d_k, "rows": list(info.shapes.items()),
            "params": dict(info.params), "module_params": int(sum(p.data.size for p in mha.parameters())),
            "output_shape": tuple(out.shape), "weights_shape": tuple(weights.shape)}


# ----------------------------------------------------------------------------- RoPE
def rope_pair_trajectory(d=8, pair=0, positions=16, base=10000.0, x=None) -> dict:
    """Where pair ``pair`` of a vector x (default all ones) goes as its position m runs over
    0 … positions−1 under ``engine.attention.apply_rope``: it turns by θ_i per position,
    θ_i = base^(−2i/d). Returns ``positions``, ``xy`` [P, 2] and ``theta`` (radians/position)."""
    op = "rope_pair_trajectory"
    d = _int(op, "d", d, 2)
    pair = _int(op, "pair", pair, 0)
    if pair >= d // 2:
        raise ValueError(f"{op}: pair must be < d/2 = {d // 2}, got {pair}")
    P = _int(op, "positions", positions, 1)
    x = np.ones(d) if x is None else np.asarray(x, dtype=np.float64)
    rotated = attention.apply_rope(np.broadcast_to(x, (P, d)).copy(), base=base).data
    theta = attention.rope_frequencies(d, base)[pair]
    return {"positions": np.arange(P), "xy": rotated[:, 2 * pair:2 * pair + 2], "theta": float(theta)}


def _rope_at(x, m, base):
    return attention.apply_rope(np.asarray(x, dtype=np.float64)[None], positions=np.array([m]),
                                base=base).data[0]


def rope_shift_check(q, k, m, n, shift, base=10000.0) -> dict:
    """The score of query q at position m with key k at position n, before and after shifting
    both positions by ``shift``: with RoPE, ⟨R_m q, R_n k⟩ = ⟨R_{m+s} q, R_{n+s} k⟩ (it depends
    on m − n only); with sinusoidal positions added, (q + p_m)·(k + p_n) changes with the shift.
    Returns ``rope``, ``rope_shifted``, ``absolute``, ``absolute_shifted``."""
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    d = q.shape[-1]
    top = max(m, n) + shift + 1
    pe = attention.sinusoidal_positions(top, d, base).data.astype(np.float64)
    return {
        "rope": float(_rope_at(q, m, base) @ _rope_at(k, n, base)),
        "rope_shifted": float(_rope_at(q, m + shift, base) @ _rope_at(k, n + shift, base)),
        "absolute": float((q + pe[m]) @ (k + pe[n])),
        "absolute_shifted": float((q + pe[m + shift]) @ (k + pe[n + shift])),
    }


def rope_score_vs_distance(d=64, base=10000.0, max_distance=256, q=None, k=None) -> dict:
    """⟨R_m q, R_n k⟩ against the distance n − m = 0 … max_distance (m = 0).

    With q = k = all ones the score is 2 Σ_i cos(Δ·θ_i): it starts at d and decays, with
    ripples, as Δ grows (RoPE's long-range decay). Also returns the same for random q, k
    (given or drawn with seed 0) and the ones-vector's closed form for comparison."""
    op = "rope_score_vs_distance"
    d = _int(op, "d", d, 2)
    D = _int(op, "max_distance", max_distance, 1)
    dist = np.arange(D + 1)
    ones = np.ones(d)
    rng = np.random.default_rng(0)
    q = rng.standard_normal(d) if q is None else np.asarray(q, float)
    k = rng.standard_normal(d) if k is None else np.asarray(k, float)
    rot_ones = attention.apply_rope(np.broadcast_to(ones, (D + 1, d)).copy(), positions=dist,
                                    base=base).data
    rot_k = attention.apply_rope(np.broadcast_to(k, (D + 1, d)).copy(), positions=dist,
                                 base=base).data
    theta = attention.rope_frequencies(d, base)
    return {"distance": dist, "ones": rot_ones @ ones, "random": rot_k @ q,
            "closed_form": 2 * np.cos(dist[:, None] * theta[None, :]).sum(axis=1)}


def sinusoidal_similarity(L=64, d=64, base=10000.0) -> dict:
    """The sinusoidal table PE [L, d] and the dot products PE_m·PE_n [L, L]: they depend on
    m − n only (Σ_i cos((m − n)ω_i)), largest at m = n and fading with distance."""
    pe = attention.sinusoidal_positions(L, d, base).data.astype(np.float64)
    return {"pe": pe, "similarity": pe @ pe.T}


# ----------------------------------------------------------------------------- a tiny model
TASKS = ("reverse", "sort", "rotate by 1")


def make_sequence_task(task="reverse", n=512, length=6, vocab=8, seed=0):
    """Random token sequences x [n, length] in 0 … vocab−1 and their targets y [n, length]:
    'reverse' y_i = x_{L−1−i}; 'sort' y = sorted(x); 'rotate by 1' y_i = x_{(i+1) mod L}."""
    op = "make_sequence_task"
    if task not in TASKS:
        raise ValueError(f"{op}: task must be one of {TASKS}, got {task!r}")
    n = _int(op, "n", n, 1)
    length = _int(op, "length", length, 2)
    vocab = _int(op, "vocab", vocab, 2)
    x = np.random.default_rng(seed).integers(0, vocab, size=(n, length))
    if task == "reverse":
        y = x[:, ::-1]
    elif task == "sort":
        y = np.sort(x, axis=1)
    else:
        y = np.roll(x, -1, axis=1)
    return x.astype(np.int64), np.ascontiguousarray(y).astype(np.int64)


class TinyAttention(Module):
    """One head of self-attention between two embeddings and a read-out:

        h = E[x] + P[pos]          (token and learned position embeddings, [B, L, d])
        A = softmax(h W_q (h W_k)ᵀ / √d),      logits = (A · h W_v) W_o      ([B, L, vocab])

    No residual connection: each output position can only answer through what it attends to,
    so the attention map shows the rule it found (an anti-diagonal for reversal).
    """

    def __init__(self, vocab=8, length=6, d_model=32):
        super().__init__()
        self.length = length
        self.token = nn.Embedding(vocab, d_model)
        self.position = nn.Embedding(length, d_model)
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.out = nn.Linear(d_model, vocab)

    def attend(self, x):
        """(logits [B, L, vocab], attention weights [B, L, L]) for token ids x [B, L]."""
        x = np.asarray(x)
        h = self.token(x) + self.position(np.arange(x.shape[-1]))
        weights = attention.attention_weights(self.q(h), self.k(h))
        return self.out(matmul(weights, self.v(h))), weights

    def forward(self, x):
        return self.attend(x)[0]


def train_tiny_attention(task="reverse", steps=300, lr=1e-2, d_model=32, length=6, vocab=8,
                         batch_size=64, seed=0, eval_every=25, on_step=None) -> dict:
    """Train :class:`TinyAttention` with Adam on fresh random batches of ``task``.

    Returns ``model``, ``history`` (``step``, ``loss``, ``accuracy``: per-token accuracy on a fixed
    held-out set of 256 sequences, every ``eval_every`` steps) and ``example``/``target``/
    ``prediction``/``weights`` [L, L] for one held-out sequence. ``on_step(step)`` is called after
    every step (a progress bar's hook). A non-finite loss stops early with ``stopped`` set.
    """
    op = "train_tiny_attention"
    steps = _int(op, "steps", steps, 1)
    lr = _positive(op, "lr", lr)
    manual_seed(int(seed))
    model = TinyAttention(vocab, length, d_model)
    opt = optim.Adam(model.parameters(), lr=lr)
    x_test, y_test = make_sequence_task(task, 256, length, vocab, seed=10_000 + seed)
    history = {"step": [], "loss": [], "accuracy": []}
    stopped = ""
    rng = np.random.default_rng(seed)
    losses = []
    for step in range(1, steps + 1):
        xb, yb = make_sequence_task(task, batch_size, length, vocab, seed=rng)
        logits = model(xb)
        loss = F.cross_entropy(logits.reshape(-1, vocab), yb.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.data))
        if not math.isfinite(losses[-1]):
            stopped = f"the loss became non-finite at step {step}: lower the learning rate"
            break
        if step % eval_every == 0 or step == steps:
            with no_grad():
                pred = model(x_test).data.argmax(-1)
            history["step"].append(step)
            history["loss"].append(float(np.mean(losses[-eval_every:])))
            history["accuracy"].append(float((pred == y_test).mean()))
        if on_step is not None:
            on_step(step)
    with no_grad():
        logits, weights = model.attend(x_test[:1])
    return {"model": model, "history": {k: np.asarray(v) for k, v in history.items()},
            "example": x_test[0], "target": y_test[0], "prediction": logits.data[0].argmax(-1),
            "weights": weights.data[0], "stopped": stopped, "x_test": x_test, "y_test": y_test}

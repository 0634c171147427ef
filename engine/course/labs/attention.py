"""The data, sweeps and checks behind notebook 06 (attention), one function per picture or exercise.

The lesson itself (scaled dot-product attention, the multi-head split, the Transformer block, the
tiny models, their loss, training loops and the sampler) is the notebook's own code: where a
function here needs it, the page passes it in.

- :func:`toy_qkv`: embeddings of a short sentence and their queries, keys and values.
- :func:`attention_maps`: scores q·kᵀ·scale/τ, the weights and output of the attention function
  the page passes in, and each row's entropy; :func:`make_mask` builds the causal, padding and
  sliding-window masks from ``engine.attention``.
- :func:`dot_product_variance` / :func:`scaling_sweep`: why scores are divided by √d_k (scores
  of random pairs drawn by :func:`random_scores`, exactly and at a cost independent of d_k).
- :func:`mha_shapes`: multi-head shapes and parameter counts, checked by running the page's
  multi-head attention module.
- RoPE: :func:`rope_pair_trajectory`, :func:`rope_shift_check`, :func:`rope_score_vs_distance`,
  :func:`sinusoidal_similarity`.
- A tiny attention model's data: :func:`make_sequence_task`, :func:`tiny_heldout`, and
  :func:`tiny_run` (its map on a held-out sequence); a tiny Transformer's: :data:`TEXT`,
  :func:`char_data`, :func:`random_windows`, :func:`heldout_windows`.
- The notebook opens on both models trained by its own cells with their default settings,
  loaded from the checkpoints ``CHECKPOINTS`` declares when they fit the page's code
  (:func:`shipped_tiny_attention`, :func:`shipped_tiny_gpt`).
"""

from __future__ import annotations

import copy
import functools
import math
import weakref
from dataclasses import dataclass

import numpy as np

from engine import Tensor, attention, no_grad, shapes
from engine.course import checkpoints
from engine.course.checkpoints import attention_gpt as _gpt_checkpoint
from engine.course.checkpoints import attention_gpt_ablations as _ablations_checkpoint  # static: for the bundler
from engine.course.checkpoints import attention_tiny as _tiny_checkpoint
from engine.nn import Module
from engine.random import fork_rng

from ..plot import compact_chart, vega_text  # re-exported: the page's charts send less
from ._checks import _int, _positive

__all__ = [
    "CROSS_SOURCE",
    "compact_chart",
    "vega_text",
    "CrossAttention",
    "MASK_KINDS",
    "SCALES",
    "TASKS",
    "AttentionMaps",
    "AttentionMemory",
    "KVDecode",
    "DotProductVariance",
    "MHAShapes",
    "MaskCost",
    "PermutationCheck",
    "QKV",
    "Retrieval",
    "RopeDistance",
    "RopeShift",
    "RopeTrajectory",
    "ScalingSweep",
    "SinusoidalSimilarity",
    "TinyHistory",
    "TinyRun",
    "attention_maps",
    "dot_product_variance",
    "attention_memory",
    "cross_attention",
    "kv_cache_decode",
    "make_mask",
    "make_sequence_task",
    "mask_cost",
    "mha_shapes",
    "permutation_check",
    "rope_pair_trajectory",
    "random_scores",
    "shown_dimensions",
    "blue_orange_url",
    "rope_score_vs_distance",
    "rope_shift_check",
    "scaling_sweep",
    "sinusoidal_similarity",
    "TEXT",
    "CharData",
    "GPTRun",
    "block_parameters",
    "char_data",
    "designed_retrieval",
    "heldout_windows",
    "ngram_loss",
    "random_windows",
    "sampled_text",
    "tiny_heldout",
    "tiny_run",
    "toy_qkv",
    "GPT_CLASSES",
    "GPT_CODE",
    "GPT_DEFAULTS",
    "TINY_CLASSES",
    "TINY_CODE",
    "TINY_DEFAULTS",
    "shipped_tiny_attention",
    "shipped_tiny_gpt",
    "HeadMaps",
    "HeadReach",
    "PromptWindow",
    "head_maps",
    "head_reach",
    "prompt_window",
    "ABLATION_CODE",
    "AblationRun",
    "GPT_ABLATIONS",
    "ablation_runs",
    "shipped_gpt_ablations",
]

SENTENCE = "the cat sat on the mat because it was warm"


# ----------------------------------------------------------------------------- Q, K, V
@dataclass(frozen=True)
class QKV:
    """A sentence's embeddings ``X`` [L, d_model], projections ``W_q``/``W_k``/``W_v``
    [d_model, d_k] and their products ``Q``/``K``/``V`` [L, d_k]."""

    tokens: list
    X: np.ndarray
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray


def toy_qkv(tokens=SENTENCE, d_model=8, d_k=4, seed=0) -> QKV:
    """Queries, keys and values of a short sentence.

    Each distinct word gets a random embedding x ∈ R^d_model (a repeated word, the same one), and
    three random projections map it: q = x W_q, k = x W_k, v = x W_v, each W ~ N(0, 1/d_model)
    so that q, k, v have entries of variance about 1. Returns a :class:`QKV`.
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
    return QKV(words, X, W[0], W[1], W[2], X @ W[0], X @ W[1], X @ W[2])


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


@dataclass(frozen=True)
class AttentionMaps:
    """Scores (NaN where masked), weights, output, per-row entropy (nats), the scale used and
    the queries allowed no key (``empty_rows``)."""

    scores: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    entropy: np.ndarray
    scale: float
    empty_rows: np.ndarray


def attention_maps(attend, Q, K, V, scale="sqrt", temperature=1.0, mask=None) -> AttentionMaps:
    """Scaled dot-product attention step by step, for one sequence, by ``attend`` (the page's
    ``attention(q, k, v, mask, scale)``, returning the output and the weights as Tensors).

        S = Q Kᵀ · scale / τ,     A = softmax(S) over the allowed keys,     out = A V

    ``scale``: a number or 'sqrt' (1/√d_k), 'none' (1), 'linear' (1/d_k); ``temperature`` τ > 0.
    Returns ``scores`` [L, L] (NaN where masked: drawn as gaps), ``weights`` (``attend``'s: rows
    sum to 1, or 0 for a query with no key),
    ``output`` [L, d_v], ``entropy`` per row (nats), ``scale`` (the number used), ``empty_rows``
    (queries that may attend to nothing).
    """
    op = "attention_maps"
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    temperature = _positive(op, "temperature", temperature)
    factor = _scale_value(scale, Q.shape[-1], op) / temperature
    raw = Q @ K.T * factor
    output, weights = (
        np.asarray(t.data if isinstance(t, Tensor) else t, dtype=np.float64)
        for t in attend(Tensor(Q), Tensor(K), Tensor(V), mask=mask, scale=factor)
    )
    scores = raw if mask is None else np.where(mask, raw, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(weights > 0, weights * np.log(np.where(weights > 0, weights, 1.0)), 0.0)
    allowed = np.ones(raw.shape, bool) if mask is None else np.broadcast_to(mask, raw.shape)
    return AttentionMaps(scores, weights, output, -plogp.sum(axis=-1), factor, np.flatnonzero(~allowed.any(axis=-1)))


@dataclass(frozen=True)
class PermutationCheck:
    """Self-attention on tokens reordered by ``order``, against the original output reordered
    the same way: ``gap_plain`` (no positions: equal up to rounding), ``gap_positions`` (tokens
    reordered *before* the sinusoidal positions are added, so each slot keeps its position: no
    longer equal) and ``gap_after`` (reordered *after*: each token carries its position along,
    equal again)."""

    order: np.ndarray
    gap_plain: float
    gap_positions: float
    gap_after: float


def permutation_check(attend, qkv: QKV, seed=0) -> PermutationCheck:
    """Is self-attention permutation-equivariant? With no mask and no positions,
    Attention(PX) = P·Attention(X) for every permutation matrix P (softmax(P S Pᵀ) = P softmax(S) Pᵀ).
    Adding positions (X + PE, PE fixed per slot) breaks it: a token's position travels with it
    no longer. ``attend``: the page's attention function (see :func:`attention_maps`); ``order``
    is drawn from ``np.random.default_rng(seed)``."""
    X = np.asarray(qkv.X, dtype=np.float64)
    L = X.shape[0]
    order = np.random.default_rng(seed).permutation(L)
    pe = attention.sinusoidal_positions(L, X.shape[1]).data.astype(np.float64)

    def outputs(x):
        return attention_maps(attend, x @ qkv.W_q, x @ qkv.W_k, x @ qkv.W_v).output

    plain = np.abs(outputs(X[order]) - outputs(X)[order]).max()
    with_positions = np.abs(outputs(X[order] + pe) - outputs(X + pe)[order]).max()
    after = np.abs(outputs((X + pe)[order]) - outputs(X + pe)[order]).max()
    return PermutationCheck(order, float(plain), float(with_positions), float(after))


@dataclass(frozen=True)
class MaskCost:
    """What a dense mask costs: ``computed`` = L² scores computed, ``used`` = the allowed ones
    (what a banded kernel would compute), and ``dense_waste`` = 1 − used/computed."""

    computed: int
    used: int

    @property
    def dense_waste(self) -> float:
        return 1.0 - self.used / self.computed


def mask_cost(mask, L) -> MaskCost:
    """Scores a dense masked attention computes (all L², masked ones are set to −∞ afterwards)
    against the ones the mask allows."""
    L = _int("mask_cost", "L", L, 1)
    used = L * L if mask is None else int(np.asarray(mask).sum())
    return MaskCost(L * L, used)


@dataclass(frozen=True)
class Retrieval:
    """A query built to match key ``target``: at each multiplier c of the standard scale, the
    ``weights`` [len(multipliers), L] and the ``scores`` q·k_j/√d_k (c = 1)."""

    target: int
    multipliers: np.ndarray
    scores: np.ndarray
    weights: np.ndarray

    @property
    def on_target(self) -> np.ndarray:
        return self.weights[:, self.target]


def designed_retrieval(L=8, d_k=16, target=3, multipliers=(0.25, 0.5, 1, 2, 4, 8), seed=0) -> Retrieval:
    """Keys k_j ~ N(0, I_{d_k}); the query is q = k_target, so its score against k_target is
    |k_target|²/√d_k ≈ √d_k while the others are ≈ N(0, 1). Multiplying the scores by c (an
    inverse temperature) moves the softmax from uniform (c → 0) to all weight on the target
    (c → ∞): attention as a soft dictionary lookup."""
    op = "designed_retrieval"
    L = _int(op, "L", L, 2)
    d_k = _int(op, "d_k", d_k, 1)
    target = _int(op, "target", target, 0)
    if target >= L:
        raise ValueError(f"{op}: target must be < L = {L}, got {target}")
    c = np.asarray([_positive(op, "multiplier", m) for m in np.atleast_1d(multipliers)])
    keys = np.random.default_rng(seed).standard_normal((L, d_k))
    scores = keys @ keys[target] / math.sqrt(d_k)
    z = c[:, None] * scores[None, :]
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return Retrieval(target, c, scores, z / z.sum(axis=1, keepdims=True))


@dataclass(frozen=True)
class CrossAttention:
    """Queries from one sequence (``target`` words), keys and values from another (``source``):
    ``weights`` [L_q, L_k] (not square), ``output`` [L_q, d] (a mix of source values),
    ``aligned`` (for each target word, the source position it was copied from)."""

    source: list
    target: list
    weights: np.ndarray
    output: np.ndarray
    aligned: np.ndarray


CROSS_SOURCE = "the black cat sleeps on the warm mat".split()


def cross_attention(noise=0.5, target_positions=(2, 1, 3, 7), d=16, seed=0) -> CrossAttention:
    """Cross-attention as in an encoder-decoder: each target token is a noisy copy (std ``noise``)
    of the embedding of a source word; queries come from the target, keys and values from the
    source (identity projections, scale 1/√d). With little noise each query finds its word."""
    op = "cross_attention"
    noise = float(noise)
    if not (math.isfinite(noise) and noise >= 0):
        raise ValueError(f"{op}: noise must be a finite number >= 0, got {noise}")
    positions = np.asarray(target_positions, dtype=int)
    if positions.ndim != 1 or len(positions) == 0 or positions.min() < 0 or positions.max() >= len(CROSS_SOURCE):
        raise ValueError(f"{op}: target_positions must index the {len(CROSS_SOURCE)} source words")
    d = _int(op, "d", d, 1)
    rng = np.random.default_rng(seed)
    table = {w: rng.standard_normal(d) for w in dict.fromkeys(CROSS_SOURCE)}
    source = np.stack([table[w] for w in CROSS_SOURCE])
    target = source[positions] + noise * rng.standard_normal((len(positions), d))
    weights = attention.attention_weights(target, source).data
    return CrossAttention(
        list(CROSS_SOURCE), [CROSS_SOURCE[p] for p in positions], weights, weights @ source, positions
    )


# ----------------------------------------------------------------------------- why √d_k
@dataclass(frozen=True)
class DotProductVariance:
    """``raw`` samples of q·k, the same ``scaled`` by 1/√d_k, and their sample variances."""

    raw: np.ndarray
    scaled: np.ndarray
    var_raw: float
    var_scaled: float


def random_scores(d_k, n, keys=1, seed=0) -> np.ndarray:
    """Scores q·k_j [n, keys] of ``n`` random queries, each against ``keys`` random keys, with
    q, k_j ~ N(0, I_{d_k}) all independent, drawn without forming the vectors.

    q·k_j = |q| (q̂·k_j): |q|² follows a χ² law with d_k degrees of freedom, and because each k_j
    is isotropic and independent of q, the projections q̂·k_j are independent N(0, 1), independent
    of |q| too. So ``sqrt(χ²(d_k)) · N(0, 1)`` has exactly the law of the dot products, at a cost
    of O(n · keys) numbers instead of O(n · keys · d_k) (20,000 pairs at d_k = 256: 40,000
    numbers, not ten million). ``seed``: an int or a ``np.random.Generator``.
    """
    op = "random_scores"
    d_k, n, keys = _int(op, "d_k", d_k, 1), _int(op, "n", n, 1), _int(op, "keys", keys, 1)
    rng = np.random.default_rng(seed)
    norms = np.sqrt(rng.chisquare(d_k, size=(n, 1)))
    return norms * rng.standard_normal((n, keys))


def dot_product_variance(d_k, n=4000, seed=0) -> DotProductVariance:
    """Samples of q·k for q, k ~ N(0, I_{d_k}) (drawn by :func:`random_scores`), raw and divided
    by √d_k.

    Var(q·k) = Σ_i Var(q_i k_i) = d_k (each product has variance 1), so q·k/√d_k has variance 1
    whatever d_k. Returns ``raw``, ``scaled`` (n samples each) and their sample variances.
    """
    op = "dot_product_variance"
    d_k = _int(op, "d_k", d_k, 1)
    raw = random_scores(d_k, _int(op, "n", n, 2), seed=seed)[:, 0]
    scaled = raw / math.sqrt(d_k)
    return DotProductVariance(raw, scaled, float(raw.var()), float(scaled.var()))


@dataclass(frozen=True)
class ScalingSweep:
    """Per d_k: score variance and mean largest softmax weight, raw and scaled by 1/√d_k."""

    d_k: np.ndarray
    var_raw: np.ndarray
    var_scaled: np.ndarray
    max_raw: np.ndarray
    max_scaled: np.ndarray


def scaling_sweep(dims=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), L=16, n=400, seed=0) -> ScalingSweep:
    """For each d_k: the variance of q·k (raw and scaled) and the average largest softmax weight
    over L random keys, raw and scaled: without scaling the softmax saturates (one key takes
    nearly all the weight, the gradient through the others vanishes) as d_k grows."""
    op = "scaling_sweep"
    L = _int(op, "L", L, 2)
    n = _int(op, "n", n, 2)
    rng = np.random.default_rng(seed)
    out = {"d_k": np.asarray(dims), "var_raw": [], "var_scaled": [], "max_raw": [], "max_scaled": []}
    for d in dims:
        s = random_scores(d, n, keys=L, seed=rng)  # [n, L]: each query against L keys
        for key, scores in (("raw", s), ("scaled", s / math.sqrt(d))):
            z = scores - scores.max(axis=1, keepdims=True)
            p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
            out[f"var_{key}"].append(float(scores.var()))
            out[f"max_{key}"].append(float(p.max(axis=1).mean()))
    return ScalingSweep(**{k: np.asarray(v) for k, v in out.items()})


# ----------------------------------------------------------------------------- multi-head shapes
@dataclass(frozen=True)
class MHAShapes:
    """``d_k`` per head, ``rows`` (stage, shape), ``params`` by formula, ``module_params`` counted
    on ``nn.MultiheadAttention``, and the module's ``output_shape`` and ``weights_shape``."""

    d_k: int
    rows: list
    params: dict
    module_params: int
    output_shape: tuple
    weights_shape: tuple


def mha_shapes(module_class, B, L, d_model, H) -> MHAShapes:
    """Shapes through multi-head self-attention (``engine.shapes.attention_shapes``) checked by
    running ``module_class(d_model, H)`` (the page's multi-head attention: ``module(x)`` gives the
    output [B, L, d_model] and the per-head weights [B, H, L, L]) on a random [B, L, d_model]
    batch (built on its own random stream). When H does not divide d_model, a ValueError says so
    and lists the head counts that do."""
    try:
        info = shapes.attention_shapes(B, L, d_model, H)
    except ValueError as error:
        divisors = ", ".join(str(h) for h in range(1, 17) if int(d_model) % h == 0)
        raise ValueError(
            f"mha_shapes: {str(error).replace('attention_shapes: ', '')}. Each head "
            f"gets d_model / H columns, so H must divide d_model = {d_model}: "
            f"try H = {divisors}."
        ) from None
    return MHAShapes(
        info.d_k,
        list(info.shapes.items()),
        dict(info.params),
        *_run_multihead_attention(module_class, int(B), int(L), int(d_model), int(H)),
    )


@functools.lru_cache(maxsize=64)
def _run_multihead_attention(module_class, B, L, d_model, H) -> tuple:
    """(parameter count, output shape, per-head weights shape) of ``module_class(d_model, H)`` run
    on a random [B, L, d_model] batch. Cached (per class: an edited class is a new key): at
    B = 64, L = 128, d = 256, H = 16 the run takes a third of a second, and a learner dragging the
    sliders back revisits the same settings."""
    with fork_rng(0):
        mha = module_class(d_model, H)
    x = Tensor(np.random.default_rng(0).standard_normal((B, L, d_model)).astype(np.float32))
    with no_grad():
        out, weights = mha(x)
    return int(sum(p.data.size for p in mha.parameters())), tuple(out.shape), tuple(weights.shape)


# ----------------------------------------------------------------------------- memory and the KV cache
@dataclass(frozen=True)
class AttentionMemory:
    """Bytes of one forward pass over a sequence of ``length`` tokens (batch 1): the score
    tensor [H, L, L] of one layer (``scores_bytes``, what a kernel that forms it must hold) and
    the KV cache of all layers (``kv_cache_bytes`` = 2 · layers · L · d_model values)."""

    length: int
    scores_bytes: int
    kv_cache_bytes: int


def attention_memory(length=1024, d_model=768, layers=12, heads=12, bytes_per_value=4) -> AttentionMemory:
    """Score memory grows as L² (H·L² values per layer), the KV cache as L (2·layers·L·d_model)."""
    op = "attention_memory"
    L = _int(op, "length", length, 1)
    d = _int(op, "d_model", d_model, 1)
    n = _int(op, "layers", layers, 1)
    h = _int(op, "heads", heads, 1)
    b = _int(op, "bytes_per_value", bytes_per_value, 1)
    return AttentionMemory(L, h * L * L * b, 2 * n * L * d * b)


@dataclass(frozen=True)
class KVDecode:
    """Causal self-attention generated one token at a time with a KV cache, against the full
    masked computation: ``max_gap`` between the two outputs; rows of K and V projected with the
    cache (``projected_cached`` = L) and without it (``projected_uncached`` = L(L+1)/2, every
    prefix recomputed); ``scores`` = L(L+1)/2 query-key products either way."""

    max_gap: float
    projected_cached: int
    projected_uncached: int
    scores: int


def kv_cache_decode(length=12, d_model=8, seed=0) -> KVDecode:
    """Decode ``length`` steps: at step t, project only token t's key and value, append them to
    the cache, and attend from token t's query to the cached t + 1 keys. The outputs equal one
    causal-masked pass over the whole sequence (a test of the cache, not an approximation)."""
    op = "kv_cache_decode"
    L = _int(op, "length", length, 1)
    d = _int(op, "d_model", d_model, 1)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((L, d))
    Wq, Wk, Wv = rng.standard_normal((3, d, d)) / math.sqrt(d)
    full = attention.scaled_dot_product_attention(X @ Wq, X @ Wk, X @ Wv, attn_mask=attention.causal_mask(L)).data
    keys, values, rows = [], [], []
    for t in range(L):
        keys.append(X[t] @ Wk)  # one new row per step: the cache
        values.append(X[t] @ Wv)
        rows.append(attention.scaled_dot_product_attention((X[t] @ Wq)[None], np.array(keys), np.array(values)).data[0])
    return KVDecode(float(np.abs(np.array(rows) - full).max()), L, L * (L + 1) // 2, L * (L + 1) // 2)


# ----------------------------------------------------------------------------- RoPE
@dataclass(frozen=True)
class RopeTrajectory:
    """One pair's rotated coordinates ``xy`` [P, 2] at ``positions``; ``theta`` rad/position."""

    positions: np.ndarray
    xy: np.ndarray
    theta: float


def rope_pair_trajectory(d=8, pair=0, positions=16, base=10000.0, x=None) -> RopeTrajectory:
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
    return RopeTrajectory(np.arange(P), rotated[:, 2 * pair : 2 * pair + 2], float(theta))


def _rope_at(x, m, base):
    return attention.apply_rope(np.asarray(x, dtype=np.float64)[None], positions=np.array([m]), base=base).data[0]


@dataclass(frozen=True)
class RopeShift:
    """Scores at (m, n) and at (m + s, n + s), with RoPE and with added sinusoidal positions."""

    rope: float
    rope_shifted: float
    absolute: float
    absolute_shifted: float


def rope_shift_check(q, k, m, n, shift, base=10000.0) -> RopeShift:
    """The score of query q at position m with key k at position n, before and after shifting
    both positions by ``shift``: with RoPE, ⟨R_m q, R_n k⟩ = ⟨R_{m+s} q, R_{n+s} k⟩ (it depends
    on m − n only); with sinusoidal positions added, (q + p_m)·(k + p_n) changes with the shift.
    Returns ``rope``, ``rope_shifted``, ``absolute``, ``absolute_shifted``."""
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    d = q.shape[-1]
    top = max(m, n) + shift + 1
    pe = attention.sinusoidal_positions(top, d, base).data.astype(np.float64)
    return RopeShift(
        rope=float(_rope_at(q, m, base) @ _rope_at(k, n, base)),
        rope_shifted=float(_rope_at(q, m + shift, base) @ _rope_at(k, n + shift, base)),
        absolute=float((q + pe[m]) @ (k + pe[n])),
        absolute_shifted=float((q + pe[m + shift]) @ (k + pe[n + shift])),
    )


@dataclass(frozen=True)
class RopeDistance:
    """Against the distance Δ = n − m: the score of aligned vectors q = k = 1 (``aligned``, its
    ``closed_form`` 2 Σ_i cos Δθ_i) and Su et al.'s relative upper bound ``bound``
    = (1/(d/2)) Σ_j |S_j|, S_j = Σ_{i<j} e^{iΔθ_i}; ``*_relative``: each divided by its value at 0."""

    distance: np.ndarray
    aligned: np.ndarray
    closed_form: np.ndarray
    bound: np.ndarray

    @property
    def aligned_relative(self) -> np.ndarray:
        return self.aligned / self.aligned[0]

    @property
    def bound_relative(self) -> np.ndarray:
        return self.bound / self.bound[0]


def rope_score_vs_distance(d=64, base=10000.0, max_distance=256) -> RopeDistance:
    """RoPE's long-range decay (Su et al. 2021, §3.4.3), for Δ = n − m = 0 … max_distance.

    Writing each pair as a complex number, ⟨R_m q, R_n k⟩ = Re Σ_i h_i e^{iΔθ_i} with
    h_i = conj(q_[i]) k_[i] (rotating by mθ_i multiplies by e^{imθ_i}, and ⟨a, b⟩ = Re conj(a) b). Abel summation bounds its size by max_i |h_{i+1} − h_i| · Σ_j |S_j|,
    S_j = Σ_{i<j} e^{iΔθ_i}: the factor (1/(d/2)) Σ_j |S_j| decays with Δ. It bounds the score of
    vectors whose pairs agree (q = k = 1 here, computed with ``apply_rope``); a random pair of
    vectors has no such decay (its h_i jump around, so the bound's first factor is large).
    """
    op = "rope_score_vs_distance"
    d = _int(op, "d", d, 2)
    D = _int(op, "max_distance", max_distance, 1)
    dist = np.arange(D + 1)
    ones = np.ones(d)
    rot_ones = attention.apply_rope(np.broadcast_to(ones, (D + 1, d)).copy(), positions=dist, base=base).data.astype(
        np.float64
    )
    theta = attention.rope_frequencies(d, base)
    partial = np.cumsum(np.exp(1j * dist[:, None] * theta[None, :]), axis=1)  # S_1 … S_{d/2}
    return RopeDistance(
        dist, rot_ones @ ones, 2 * np.cos(dist[:, None] * theta[None, :]).sum(axis=1), np.abs(partial).mean(axis=1)
    )


@dataclass(frozen=True)
class SinusoidalSimilarity:
    """The table ``pe`` [L, d] and its Gram matrix ``similarity`` [L, L]."""

    pe: np.ndarray
    similarity: np.ndarray


def shown_dimensions(d, most=32) -> np.ndarray:
    """The dimensions of a d-wide sinusoidal table a heatmap draws: all of them when d <= most,
    else both dimensions (sine, cosine) of every k-th pair, k = ceil(d / most), so the chart keeps
    at most ``most`` rows while still spanning the fast and the slow frequencies."""
    d = _int("shown_dimensions", "d", d, 2)
    step = -(-d // _int("shown_dimensions", "most", most, 2))
    pairs = np.arange(0, d // 2, step)
    return np.stack([2 * pairs, 2 * pairs + 1], axis=1).ravel()


# Vega's "blueorange" scheme (vega-scale), the colours the page's other maps of signed values use
BLUE_ORANGE = "134b852f78b35da2cb9dcae1d2e5eff2f0ebfce0bafbbf74e8932fc5690d994a07"


def blue_orange_url(values, low: float = -1.0, high: float = 1.0, cell: int = 8) -> str:
    """A matrix of values in [low, high] as a PNG data URL in Vega's blueorange colours (blue at
    ``low``, orange at ``high``), ``cell`` × ``cell`` pixels a value, row 0 at the top: one image
    mark for a heatmap that a control redraws, where a rect per value made the browser redraw
    hundreds of marks (the cells' tooltips are the price)."""
    import base64

    from engine.course import plot

    stops = np.array([[int(BLUE_ORANGE[i + j : i + j + 2], 16) for j in (0, 2, 4)] for i in range(0, 66, 6)], float)
    t = np.clip((np.asarray(values, dtype=float) - low) / (high - low), 0.0, 1.0) * (len(stops) - 1)
    rgb = np.stack([np.interp(t, np.arange(len(stops)), stops[:, c]) for c in range(3)], axis=-1)
    pixels = np.round(rgb).astype(np.uint8).repeat(cell, axis=0).repeat(cell, axis=1)
    return "data:image/png;base64," + base64.b64encode(plot.png(pixels)).decode("ascii")


def sinusoidal_similarity(L=64, d=64, base=10000.0) -> SinusoidalSimilarity:
    """The sinusoidal table PE [L, d] and the dot products PE_m·PE_n [L, L]: they depend on
    m − n only (Σ_i cos((m − n)ω_i)), largest at m = n and fading with distance."""
    pe = attention.sinusoidal_positions(L, d, base).data.astype(np.float64)
    return SinusoidalSimilarity(pe, pe @ pe.T)


# ----------------------------------------------------------------------------- a tiny model's data
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


def tiny_heldout(task, length, vocab, seed):
    """The fixed held-out set (256 sequences) a tiny model of ``seed`` is scored on."""
    return make_sequence_task(task, 256, length, vocab, seed=10_000 + seed)


@dataclass(frozen=True)
class TinyHistory:
    """Every ``eval_every`` steps: the ``step``, the mean training ``loss`` since the last entry
    and the held-out per-token ``accuracy``."""

    step: np.ndarray
    loss: np.ndarray
    accuracy: np.ndarray


@dataclass(frozen=True)
class TinyRun:
    """A trained tiny attention model (the notebook's ``TinyAttention``), its history, one
    held-out ``example`` with its ``target``, ``prediction`` and attention ``weights`` [L, L],
    and the held-out set."""

    model: Module
    history: TinyHistory
    example: np.ndarray
    target: np.ndarray
    prediction: np.ndarray
    weights: np.ndarray
    stopped: str
    x_test: np.ndarray
    y_test: np.ndarray


def tiny_run(model, history, stopped, x_test, y_test) -> TinyRun:
    """A :class:`TinyRun` for ``model`` (whose ``attend(x)`` gives logits and weights): its map and
    prediction on the first held-out sequence. ``history``: a :class:`TinyHistory` or a dict of
    lists with its fields."""
    if isinstance(history, dict):
        history = TinyHistory(**{k: np.asarray(v) for k, v in history.items()})
    with no_grad():
        logits, weights = model.attend(x_test[:1])
    return TinyRun(
        model, history, x_test[0], y_test[0], logits.data[0].argmax(-1), weights.data[0], stopped, x_test, y_test
    )


# ----------------------------------------------------------------------------- a Transformer's data
# A short text the project wrote for this lesson (no licence question): character-level data for
# the notebook's tiny decoder. Its sentences repeat words and patterns, so a small model can learn some.
TEXT = (
    "a query asks a question. a key says what a token offers. a value is what a token passes on. "
    "each query meets every key, and the scores become weights that sum to one. the output mixes "
    "the values with those weights. a causal mask lets each token read only the tokens before it, "
    "so a model can learn to predict the next token. the residual stream carries each token from "
    "layer to layer; every block adds what attention reads and what the small network computes. "
    "layer norm keeps the numbers in a steady range before each part. the model reads the text "
    "one character at a time and guesses the next one. at first it guesses letters by how often "
    "they appear. then it learns which letter follows which, then short words, then the shape of "
    "a sentence. a query asks, a key answers, a value is passed on. the weights sum to one and "
    "the output mixes the values. each block reads, mixes and adds. each token reads the tokens "
    "before it and never the ones after it. the next token is a guess, and the loss says how "
    "surprised the model was. a small model on a short text learns the words it sees often and "
    "the way a sentence starts and ends. it will not learn the meaning of the words, only which "
    "characters tend to follow which, and that is already far better than counting letters. "
    "a convolution reads a small window and shares its weights across the image. attention reads "
    "every token and chooses its weights from the data. the scores are divided by the square root "
    "of the width, so that the softmax does not saturate. a mask sets a score to minus infinity, "
    "and its weight becomes zero. a token may read the tokens before it, and the mask hides the "
    "ones after it. the model learns to put its weight where the answer is. when the scale grows, "
    "the weight moves to the best key. when the scale shrinks, the weights become even. the cache "
    "keeps the keys and the values, so each new token adds one row and reads all the rows before "
    "it. the memory of the scores grows with the square of the length, the cache grows with the "
    "length. a block reads, mixes and adds, and the next block reads what the last one wrote. "
)


@dataclass(frozen=True)
class CharData:
    """``TEXT`` as character ids: ``chars`` (the vocabulary, sorted), ``train``/``heldout`` ids
    (the last tenth is held out), and ``unigram`` = the held-out cross-entropy (nats/char) of
    the training text's character frequencies (add-one smoothed): the baseline to beat."""

    chars: str
    train: np.ndarray
    heldout: np.ndarray
    unigram: float


def char_data(text=TEXT) -> CharData:
    chars = "".join(sorted(set(text)))
    ids = np.array([chars.index(c) for c in text], dtype=np.int64)
    cut = int(0.9 * len(ids))
    counts = np.bincount(ids[:cut], minlength=len(chars)) + 1.0
    p = counts / counts.sum()
    return CharData(chars, ids[:cut], ids[cut:], float(-np.log(p[ids[cut:]]).mean()))


@functools.lru_cache(maxsize=8)
def ngram_loss(n=2, alpha=0.1, text=TEXT) -> float:
    """The held-out cross-entropy (nats/char) of an n-gram count model of ``text``'s training part:
    p(c | the n − 1 characters before) = (count(context, c) + α) / (count(context) + α·V), add-α
    smoothed (n = 1 with α = 1 is :func:`char_data`'s unigram). Each held-out character from the
    n-th on is predicted from the held-out characters before it: the ladder the Transformer is
    measured against."""
    op = "ngram_loss"
    n = _int(op, "n", n, 1)
    alpha = _positive(op, "alpha", alpha)
    data = char_data(text)
    V = len(data.chars)

    def codes(ids):  # each window of n ids as one integer, and its first n − 1 (the context) as another
        full = np.lib.stride_tricks.sliding_window_view(ids, n) @ (V ** np.arange(n - 1, -1, -1))
        return full, full // V

    full, context = codes(data.train)
    seen, seen_context = np.bincount(full, minlength=V**n), np.bincount(context, minlength=V ** (n - 1))
    full, context = codes(data.heldout)
    return float(-np.log((seen[full] + alpha) / (seen_context[context] + alpha * V)).mean())


def _windows(ids, context, starts):
    return (np.stack([ids[s : s + context] for s in starts]), np.stack([ids[s + 1 : s + context + 1] for s in starts]))


def random_windows(ids, context, batch_size, rng):
    """A batch of ``batch_size`` windows of ``context`` ids starting at random places, and the
    same windows shifted by one (the next character at every position): x, y [batch, context]."""
    return _windows(ids, context, rng.integers(0, len(ids) - context - 1, size=batch_size))


def heldout_windows(ids, context):
    """Every non-overlapping window of ``context`` ids, and its next characters: x, y."""
    return _windows(ids, context, np.arange(0, len(ids) - context - 1, context))


@dataclass(frozen=True)
class GPTRun:
    """A trained tiny Transformer (the notebook's ``TinyGPT``): ``steps`` and
    ``train_loss``/``heldout_loss`` (nats/char) every ``eval_every`` steps, the ``unigram``
    baseline and ``stopped`` (why training stopped early, or '')."""

    model: Module
    data: CharData
    steps: np.ndarray
    train_loss: np.ndarray
    heldout_loss: np.ndarray
    unigram: float
    stopped: str


# The shipped Transformers a page has loaded, each with the fingerprint of the code that trained it:
# two pages (or two runs of one) that load it with the same code hold equal models.
_SHIPPED_GPT = weakref.WeakKeyDictionary()
_SHIPPED_SAMPLES: dict = {}


def sampled_text(sample, model, chars, prompt, length, temperature, seed=0) -> str:
    """``sample(model, chars, prompt, length, temperature, seed=seed)``, the page's sampler passed
    in, remembered per sampler, model and temperature: a draw runs the model once per character
    (about 0.1 s for 120 of them), and the training settings re-run the cell without changing the
    model. The shipped model's texts are remembered for the process, by the code of the sampler
    and of the model (their fingerprints): another page that opens with the same code draws the
    same text, so it is not drawn again."""
    try:
        shipped = _SHIPPED_GPT.get(model)
    except TypeError:  # an object that cannot be weakly referenced is not a shipped model
        shipped = None
    if shipped is None:
        return _sampled_text(sample, model, chars, prompt, length, temperature, seed)
    try:
        key = (checkpoints.code_fingerprint(sample), shipped, chars, prompt, length, temperature, seed)
    except OSError:  # no source to read: remember it per sampler object only
        return _sampled_text(sample, model, chars, prompt, length, temperature, seed)
    if key not in _SHIPPED_SAMPLES:
        if len(_SHIPPED_SAMPLES) >= 64:
            _SHIPPED_SAMPLES.clear()
        _SHIPPED_SAMPLES[key] = sample(model, chars, prompt, length, temperature, seed=seed)
    return _SHIPPED_SAMPLES[key]


@functools.lru_cache(maxsize=32)  # the page flips between a few temperatures: each text drawn once per model
def _sampled_text(sample, model, chars, prompt, length, temperature, seed=0) -> str:
    return sample(model, chars, prompt, length, temperature, seed=seed)


@dataclass(frozen=True)
class PromptWindow:
    """What the tiny Transformer reads of a typed prompt: ``text``, the last ``context`` characters
    of the prompt (lower-cased) that are in its vocabulary, their ``ids``, and ``dropped``, the
    prompt's characters outside the vocabulary (each once), which it cannot read."""

    text: str
    ids: np.ndarray
    dropped: str


def prompt_window(prompt, chars, context) -> PromptWindow:
    lowered = str(prompt).lower()
    known = "".join(c for c in lowered if c in chars)
    text = known[-_int("prompt_window", "context", context, 1) :]
    return PromptWindow(
        text,
        np.array([chars.index(c) for c in text], dtype=np.int64),
        "".join(dict.fromkeys(c for c in lowered if c not in chars)),
    )


def _block_weights(model, ids) -> np.ndarray:
    """Run ``model`` on ``ids`` [B, L] and stack what each of its blocks kept in ``.weights``:
    [blocks, B, H, L, L]. A ValueError when a block keeps none (its code was changed)."""
    model = copy.deepcopy(model)  # its own copy: two sessions reading one shipped model never mix their weights
    with no_grad():
        logits = model(ids)
    kept = [getattr(block, "weights", None) for block in model.blocks]
    if any(not isinstance(w, Tensor) for w in kept):
        raise ValueError(
            "head maps: a TransformerBlock kept no attention weights (its forward sets "
            "self.weights to what its attention returns): restore that line to see them"
        )
    return np.stack([w.data for w in kept]), logits.data


@dataclass(frozen=True)
class HeadMaps:
    """Each head's attention on one prompt: ``weights`` [blocks, H, L, L] (query i, key j ≤ i)
    and ``next_p``, the model's distribution of the character after the prompt."""

    window: PromptWindow
    weights: np.ndarray
    next_p: np.ndarray


@functools.lru_cache(maxsize=32)  # a few prompts per model: each read once
def head_maps(model, chars, prompt) -> HeadMaps:
    """The attention maps of every block and head of the page's ``TinyGPT`` on ``prompt`` (see
    :func:`prompt_window`), read from what each block kept; a ValueError for a prompt with no
    character the model knows."""
    window = prompt_window(prompt, chars, model.context)
    if not window.text:
        raise ValueError(
            "head maps: the prompt has no character the model knows (lower-case letters, "
            "space, '.', ',' and ';'): type a few words"
        )
    weights, logits = _block_weights(model, window.ids[None])
    z = logits[0, -1] - logits[0, -1].max()
    return HeadMaps(window, weights[:, 0], np.exp(z) / np.exp(z).sum())


@dataclass(frozen=True)
class HeadReach:
    """How far back each head reads, over the held-out text: ``weight[b, h, δ]`` is the mean
    weight block b's head h gives the key δ characters before its query, over every held-out
    window and every query with a choice (position ≥ 1) and at least δ characters before it."""

    weight: np.ndarray

    @property
    def favourite(self) -> np.ndarray:
        """[blocks, H]: the distance each head gives the most weight on average."""
        return self.weight.argmax(-1)


_HEAD_REACH = weakref.WeakKeyDictionary()


def head_reach(model, heldout) -> HeadReach:
    """:class:`HeadReach` of ``model`` on every non-overlapping held-out window, remembered per
    model (the training settings re-run its cell without changing the model)."""
    if model not in _HEAD_REACH:
        x, _ = heldout_windows(heldout, model.context)
        w = _block_weights(model, x)[0]  # [blocks, B, H, L, L]
        L = w.shape[-1]
        reach = np.zeros(w.shape[:1] + w.shape[2:3] + (L,))
        for delta in range(L):
            queries = np.arange(max(delta, 1), L)
            if len(queries):
                reach[..., delta] = w[:, :, :, queries, queries - delta].mean(axis=(1, 3))
        _HEAD_REACH[model] = HeadReach(reach)
    return _HEAD_REACH[model]


def block_parameters(d_model=768, heads=12) -> int:
    """Parameters of one pre-norm Transformer block, its parts counted by ``engine.shapes``:
    12d² + 13d (attention 4d² + 4d, MLP 8d² + 5d, two LayerNorms 4d), whatever the heads. By
    count rather than by building the module: at d = 768 that allocates seven million weights
    (the tests count the notebook's block against this)."""
    op = "block_parameters"
    d = _int(op, "d_model", d_model, 1)
    if d % _int(op, "heads", heads, 1):
        raise ValueError(f"{op}: heads ({heads}) must divide d_model ({d})")
    mlp = shapes.linear_params(d, 4 * d) + shapes.linear_params(4 * d, d)
    return shapes.multihead_attention_params(d) + mlp + 2 * (2 * d)


# ----------------------------------------------------------------------------- shipped default models
# Sections 5 and 6 open on these models, trained with the notebook's default settings by the
# notebook's own lesson cells (engine/course/checkpoints/), so the page shows a trained model
# without training in the browser; the run buttons retrain with the learner's settings.
TINY_DEFAULTS = {"task": "reverse", "steps": 300, "lr": 1e-2, "length": 6, "d_model": 32, "vocab": 8, "seed": 0}
GPT_DEFAULTS = {"steps": 400, "lr": 3e-3, "layers": 1, "d_model": 32, "heads": 2, "context": 16, "seed": 0}
# The lesson cells each default model depends on, in the order the page passes them to
# shipped_tiny_attention / shipped_tiny_gpt: the functions, then the classes (the model's class
# last). Their fingerprint is the checkpoint's (checkpoints.load_if_fits).
TINY_CODE = ("attention", "next_token_loss", "train_step", "train_tiny_attention", "default_tiny_attention")
TINY_CLASSES = ("TinyAttention",)
GPT_CODE = (
    "attention",
    "split_heads",
    "merge_heads",
    "next_token_loss",
    "train_step",
    "heldout_loss",
    "train_tiny_gpt",
    "default_tiny_gpt",
)
GPT_CLASSES = ("MultiHeadAttention", "TransformerBlock", "TinyGPT")
# The ablations of section 6: the default Transformer, then one part taken out at a time (the
# keyword arguments train_tiny_gpt is given on top of GPT_DEFAULTS).
GPT_ABLATIONS = {
    "full model": {},
    "no position embedding": {"positions": False},
    "one head": {"heads": 1},
    "no residual path": {"residual": False},
}
ABLATION_CODE = GPT_CODE[:-1] + ("ablate_tiny_gpt", "default_gpt_ablations")
CHECKPOINTS = {
    "attention_tiny": checkpoints.FromNotebook(
        notebook="06_attention", function="default_tiny_attention", code=TINY_CODE + TINY_CLASSES
    ),
    "attention_gpt": checkpoints.FromNotebook(
        notebook="06_attention", function="default_tiny_gpt", code=GPT_CODE + GPT_CLASSES
    ),
    "attention_gpt_ablations": checkpoints.FromNotebook(
        notebook="06_attention", function="default_gpt_ablations", code=ABLATION_CODE + GPT_CLASSES
    ),
}


def _load_into(module, code, classes, build):
    """(state, model, "") when checkpoint ``module`` fits ``code`` and ``classes`` and its
    parameters load into the model ``build(classes[-1], settings)`` makes; (None, None, one
    sentence) otherwise."""
    state, reason = checkpoints.load_if_fits(module, *code, *classes)
    if state is None:
        return None, None, reason
    model_class = classes[-1]
    try:
        with fork_rng(state["settings"]["seed"]):
            model = build(model_class, state["settings"])
        model.load_state_dict(state["parameters"])
    except (KeyError, ValueError, TypeError, RuntimeError) as error:
        return (
            None,
            None,
            (
                f"the shipped parameters do not fit this page's `{model_class.__name__}` "
                f"({str(error).splitlines()[0][:120]}), so it is not loaded: train "
                "with the button to see what your code does"
            ),
        )
    return state, model, ""


def shipped_tiny_attention(code, classes) -> tuple:
    """Section 5's default model as the notebook's ``default_tiny_attention`` trained it
    (checkpoint ``attention_tiny``), rebuilt with the page's model class from the stored
    parameters and history: ``(TinyRun, "")``, or ``(None, reason)`` when ``code`` and
    ``classes`` (the page's lesson objects named by ``TINY_CODE`` and ``TINY_CLASSES``, in that
    order) are not the code that trained it."""
    state, model, reason = _load_into(
        _tiny_checkpoint, code, classes, lambda cls, s: cls(s["vocab"], s["length"], s["d_model"])
    )
    if state is None:
        return None, reason
    s = state["settings"]
    return tiny_run(model, state["history"], "", *tiny_heldout(s["task"], s["length"], s["vocab"], s["seed"])), ""


def shipped_tiny_gpt(code, classes) -> tuple:
    """Section 6's default Transformer as the notebook's ``default_tiny_gpt`` trained it
    (checkpoint ``attention_gpt``), rebuilt with the page's model class: ``(GPTRun, "")``, or
    ``(None, reason)`` when ``code`` and ``classes`` (named by ``GPT_CODE`` and ``GPT_CLASSES``)
    are not the code that trained it."""
    data = char_data()
    state, model, reason = _load_into(
        _gpt_checkpoint,
        code,
        classes,
        lambda cls, s: cls(len(data.chars), s["context"], s["d_model"], s["heads"], s["layers"]),
    )
    if state is None:
        return None, reason
    _SHIPPED_GPT[model] = _gpt_checkpoint.FINGERPRINT
    return GPTRun(model, data, state["steps"], state["train_loss"], state["heldout_loss"], data.unigram, ""), ""


@dataclass(frozen=True)
class AblationRun:
    """One model of the ablations: its loss curves (nats/char) every ``eval_every`` steps."""

    steps: np.ndarray
    train_loss: np.ndarray
    heldout_loss: np.ndarray

    @property
    def final_train(self) -> float:
        return float(self.train_loss[-1]) if len(self.train_loss) else math.nan

    @property
    def final_heldout(self) -> float:
        return float(self.heldout_loss[-1]) if len(self.heldout_loss) else math.nan


def ablation_runs(runs) -> dict:
    """``{name: AblationRun}`` of what the notebook's ``ablate_tiny_gpt`` returns."""
    return {
        name: AblationRun(np.asarray(r["steps"]), np.asarray(r["train_loss"]), np.asarray(r["heldout_loss"]))
        for name, r in runs.items()
    }


# Section 6's retrained ablations, by the code that trained them (see remembered_ablations).
_ABLATION_RUNS: dict = {}


def remembered_ablations(code, classes, train) -> dict:
    """``ablation_runs(train())``, remembered per process by the code of ``code`` and ``classes``
    (named by ``ABLATION_CODE`` and ``GPT_CLASSES``): the four runs are seeded and use the default
    settings, so a second press of the page's button with the same code would train the same
    models again (about 10 s CPU); it shows the first press's runs instead."""
    key = checkpoints.code_fingerprint(*code, *classes)
    if key not in _ABLATION_RUNS:
        _ABLATION_RUNS[key] = ablation_runs(train())
    return _ABLATION_RUNS[key]


def shipped_gpt_ablations(code, classes) -> tuple:
    """Section 6's ablations as the notebook's ``default_gpt_ablations`` trained them (checkpoint
    ``attention_gpt_ablations``): ``({name: AblationRun}, {name: held-out loss curves for seeds
    0-4, one row per seed, at the AblationRun's steps} of the full model and the one without
    positions, "")``, or ``(None, None, reason)`` when
    ``code`` and ``classes`` (named by ``ABLATION_CODE`` and ``GPT_CLASSES``) are not the code
    that trained them."""
    state, reason = checkpoints.load_if_fits(_ablations_checkpoint, *code, *classes)
    if state is None:
        return None, None, reason.replace("the shipped model was", "the shipped runs were")
    return ablation_runs(state["runs"]), {k: np.asarray(v) for k, v in state["seed_heldout"].items()}, ""

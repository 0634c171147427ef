"""Attention: scaled dot-product attention, its masks, and position encodings.

Scaled dot-product attention of queries q [..., L, d], keys k [..., S, d], values v [..., S, d_v]::

    scores  = q kᵀ · scale (+ additive mask)             scale = 1/√d by default
    weights = softmax(scores) along the keys             (blocked entries get weight 0)
    out     = weights v                                  [..., L, d_v]

Mask conventions (as ``torch.nn.functional.scaled_dot_product_attention``): a *boolean* mask is
True where attention is ALLOWED (False blocks); a *float* mask is added to the scores (0 keeps,
−inf blocks, anything else biases). ``causal_mask``, ``sliding_window_mask`` and ``padding_mask``
below return boolean masks with the same convention. (``nn.MultiheadAttention`` follows PyTorch's
opposite convention for its boolean masks: True there means BLOCKED; pass ``~mask``.)

A query whose every key is blocked gets all-zero weights and a zero output, never NaN; so does
every query when there are no keys at all (S = 0), as PyTorch.

Positions: ``sinusoidal_positions`` (Vaswani et al., 2017) and rotary embeddings ``apply_rope``
(Su et al., 2021), which rotate each pair (x_{2i}, x_{2i+1}) by the angle m·θ_i,
θ_i = base^(−2i/d), so that ⟨R_m q, R_n k⟩ depends on the positions only through m − n.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from .autograd import Function
from .tensor import Tensor, _check_broadcast, as_tensor, matmul

__all__ = [
    "scaled_dot_product_attention",
    "attention_weights",
    "causal_mask",
    "sliding_window_mask",
    "padding_mask",
    "sinusoidal_positions",
    "rope_frequencies",
    "apply_rope",
]


# ----------------------------------------------------------------------------- masks
def _count(op: str, name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{op}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def causal_mask(L: int, S: int | None = None) -> np.ndarray:
    """Boolean [L, S] (S defaults to L): True where query i may attend to key j, i.e. j <= i.

    The lower triangle including the diagonal, aligned at the top-left corner as PyTorch's
    ``is_causal``. For ``nn.MultiheadAttention`` (True = blocked) pass ``~causal_mask(L)``.
    """
    L = _count("causal_mask", "L", L)
    S = L if S is None else _count("causal_mask", "S", S)
    return np.tril(np.ones((L, S), dtype=bool))


def sliding_window_mask(L: int, window: int, causal: bool = True) -> np.ndarray:
    """Boolean [L, L], True where attention is allowed within a local window.

    causal=True: query i sees keys i − window + 1 … i (itself and the window − 1 before it);
    causal=False: keys with |i − j| < window (a band of width 2·window − 1).
    """
    op = "sliding_window_mask"
    L = _count(op, "L", L)
    window = _count(op, "window", window)
    offset = np.arange(L)[:, None] - np.arange(L)[None, :]  # i − j
    if causal:
        return (offset >= 0) & (offset < window)
    return np.abs(offset) < window


def padding_mask(lengths, L: int | None = None) -> np.ndarray:
    """Boolean [B, L]: True at the real tokens (position < length), False at padding.

    For ``scaled_dot_product_attention`` over keys, reshape it to [B, 1, 1, L] (broadcast over heads
    and queries); for ``nn.MultiheadAttention``'s ``key_padding_mask`` (True = ignore) pass ``~mask``.
    """
    op = "padding_mask"
    lengths = np.asarray(getattr(lengths, "data", lengths))
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
        raise ValueError(f"{op}: lengths must be a 1-D array of integers, got {lengths!r:.80}")
    if lengths.size and lengths.min() < 0:
        raise ValueError(f"{op}: lengths must be >= 0, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.size else 0
    L = longest if L is None else _count(op, "L", L, 0)
    if longest > L:
        raise ValueError(f"{op}: a length ({longest}) exceeds the sequence length L={L}")
    return np.arange(L)[None, :] < lengths[:, None]


# ----------------------------------------------------------------------------- attention
def _softmax_scores(q, k, add, blocked, scale, bias):
    """(q·scale, P) with P = softmax(q kᵀ·scale + add + bias, blocked → −inf) along the keys."""
    qs = q * np.asarray(scale, dtype=q.dtype)  # scale the small [L, d] operand, not [L, S]
    scores = np.matmul(qs, np.swapaxes(k, -1, -2))
    for extra in (add, bias):
        if extra is not None:
            scores = _add_into(scores, extra)
    if blocked is not None:
        shape = np.broadcast_shapes(scores.shape, blocked.shape)
        if shape != scores.shape:
            scores = np.broadcast_to(scores, shape).copy()
        np.copyto(scores, -np.inf, where=blocked)
    if scores.shape[-1] == 0:  # no keys: nothing to attend to, zero weights and a zero output (as PyTorch)
        return qs, scores
    top = scores.max(axis=-1, keepdims=True)
    top[~np.isfinite(top)] = 0.0  # a fully blocked row: exp(−inf − 0) = 0, no inf − inf
    scores -= top
    np.exp(scores, out=scores)
    total = np.einsum("...j->...", scores)[..., None]  # row sums (einsum: faster than .sum here)
    total[total == 0] = 1.0  # a fully blocked row keeps weights 0 instead of 0/0
    scores /= total
    return qs, scores


def _softmax_scores_backward(ds, p, qs, k, scale, needs):
    """Turn ds = ∂L/∂P (a scratch array, overwritten) into ∂L/∂scores, then into (∂L/∂q, ∂L/∂k, ∂L/∂add)."""
    row = np.einsum("...j,...j->...", ds, p)[..., None]  # Σⱼ gⱼPⱼ without an [L, S] temporary
    ds -= row
    ds *= p
    gq = np.matmul(ds, k) * np.asarray(scale, dtype=ds.dtype) if needs[0] else None
    gk = np.matmul(np.swapaxes(ds, -1, -2), qs) if needs[1] else None  # qs already holds the scale
    return gq, gk, ds


class AttentionWeights(Function):
    """P = softmax(q kᵀ·scale + mask) along the last axis; blocked entries (False / −inf) get 0.

    Gradient (g = ∂L/∂P): ∂L/∂scores = dS = P ⊙ (g − Σⱼ gⱼPⱼ) (softmax's vector-Jacobian product),
    ∂L/∂q = dS k · scale,  ∂L/∂k = dSᵀ q · scale,  ∂L/∂mask = dS (an additive float mask).

    ``add`` is a float mask that may need a gradient; ``bias`` (a constant additive array, e.g. the
    cached causal mask) and ``blocked`` (boolean, True = blocked) are settings without one.
    """

    @staticmethod
    def forward(ctx, q, k, add=None, *, blocked, scale, bias=None):
        qs, p = _softmax_scores(q, k, add, blocked, scale, bias)
        ctx.save_for_backward(qs, k, p)
        ctx.scale = scale
        return p

    @staticmethod
    def backward(ctx, g):
        qs, k, p = ctx.saved_tensors
        needs = ctx.needs_input_grad
        gq, gk, ds = _softmax_scores_backward(g.copy(), p, qs, k, ctx.scale, needs)  # g is not ours
        return (gq, gk, ds if needs[2] else None) if len(needs) == 3 else (gq, gk)


class ScaledDotProductAttention(Function):
    """out = P v with P = softmax(q kᵀ·scale + mask): attention in one node (no dropout).

    Gradient (g = ∂L/∂out): ∂L/∂v = Pᵀ g;  ∂L/∂P = g vᵀ, then as :class:`AttentionWeights`.
    Fusing P v into the node lets ∂L/∂P be computed and turned into ∂L/∂scores in one scratch
    array, and keeps one fewer [L, S] array alive: the hot path of every transformer layer.
    """

    @staticmethod
    def forward(ctx, q, k, v, add=None, *, blocked, scale, bias=None):
        qs, p = _softmax_scores(q, k, add, blocked, scale, bias)
        ctx.save_for_backward(qs, k, v, p)
        ctx.scale = scale
        return np.matmul(p, v)

    @staticmethod
    def backward(ctx, g):
        qs, k, v, p = ctx.saved_tensors
        needs = ctx.needs_input_grad
        gv = np.matmul(np.swapaxes(p, -1, -2), g) if needs[2] else None
        gq = gk = ds = None
        if needs[0] or needs[1] or (len(needs) == 4 and needs[3]):
            ds = np.matmul(g, np.swapaxes(v, -1, -2))  # ∂L/∂P, our own scratch array
            gq, gk, ds = _softmax_scores_backward(ds, p, qs, k, ctx.scale, needs)
        if len(needs) == 4:
            return gq, gk, gv, (ds if needs[3] else None)
        return gq, gk, gv


def _add_into(scores: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """scores + extra, in place when the shape and dtype allow it."""
    if np.broadcast_shapes(scores.shape, extra.shape) == scores.shape and np.result_type(scores, extra) == scores.dtype:
        scores += extra
        return scores
    return scores + extra


@functools.lru_cache(maxsize=32)
def _causal_bias(L: int, S: int, dtype: str) -> np.ndarray:
    """A read-only additive causal mask [L, S]: 0 where j <= i, −inf above the diagonal."""
    bias = np.where(causal_mask(L, S), 0.0, -np.inf).astype(dtype)
    bias.flags.writeable = False
    return bias


def _split_mask(op: str, attn_mask, is_causal: bool, L: int, S: int, scores_shape, dtype):
    """The user's mask as (additive float Tensor or None, boolean 'blocked' array or None,
    constant additive array or None)."""
    if is_causal:
        if attn_mask is not None:
            raise ValueError(f"{op}: give either attn_mask or is_causal=True, not both")
        return None, None, _causal_bias(L, S, np.dtype(dtype).str)
    if attn_mask is None:
        return None, None, None
    mask = attn_mask if isinstance(attn_mask, Tensor) else np.asarray(attn_mask)
    _check_broadcast(tuple(mask.shape), scores_shape, f"{op} (attn_mask vs scores [..., L, S])")
    dtype = mask.dtype if isinstance(mask, np.ndarray) else mask.data.dtype
    if dtype == np.bool_:
        return None, ~np.asarray(getattr(mask, "data", mask)), None
    if dtype.kind != "f":
        raise TypeError(f"{op}: attn_mask must be boolean (True = attend) or float (added), got {dtype}")
    return as_tensor(mask), None, None


def _check_qkv(op: str, q: Tensor, k: Tensor, v: Tensor | None = None):
    if q.ndim < 2 or k.ndim < 2 or (v is not None and v.ndim < 2):
        shapes = (q.shape, k.shape) + ((v.shape,) if v is not None else ())
        raise ValueError(f"{op}: query, key (and value) must be at least 2-D [..., L, d], got shapes {shapes}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{op}: query {q.shape} and key {k.shape} must have the same last dim d")
    _check_broadcast(q.shape[:-2], k.shape[:-2], f"{op} (batch dims of query and key)")
    if v is not None:
        if v.shape[-2] != k.shape[-2]:
            raise ValueError(f"{op}: key {k.shape} and value {v.shape} must have the same length S (dim −2)")
        _check_broadcast(k.shape[:-2], v.shape[:-2], f"{op} (batch dims of key and value)")
    for name, t in (("query", q), ("key", k), ("value", v)):
        if t is not None and t.dtype.kind != "f":
            raise TypeError(f"{op}: {name} must be floating point, got {t.dtype}")


def _prepare(op, q, k, attn_mask, is_causal, scale):
    """Scale and the mask split into (add, blocked, bias) for the primitives."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    L, S = q.shape[-2], k.shape[-2]
    scores_shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (L, S)
    dtype = np.result_type(q.dtype, k.dtype)
    add, blocked, bias = _split_mask(op, attn_mask, is_causal, L, S, scores_shape, dtype)
    return scale, add, blocked, bias


def attention_weights(query, key, attn_mask=None, is_causal: bool = False, scale=None) -> Tensor:
    """softmax(q kᵀ · scale + mask) [..., L, S]: how much each query attends to each key.

    Row i sums to 1 over the allowed keys (or is all zero when every key is blocked).
    """
    op = "attention_weights"
    q, k = as_tensor(query), as_tensor(key)
    _check_qkv(op, q, k)
    scale, add, blocked, bias = _prepare(op, q, k, attn_mask, is_causal, scale)
    inputs = (q, k) if add is None else (q, k, add)
    return AttentionWeights.apply(*inputs, blocked=blocked, scale=scale, bias=bias)


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False, scale=None
) -> Tensor:
    """softmax(q kᵀ/√d + mask) v, as ``torch.nn.functional.scaled_dot_product_attention``.

    query [..., L, d], key [..., S, d], value [..., S, d_v] (e.g. [B, H, L, d]) -> [..., L, d_v].
    attn_mask: boolean (True = attend) or float (added to the scores), broadcastable to
    [..., L, S]; is_causal: query i attends to keys j <= i; dropout_p: dropout on the weights
    (always applied when > 0, as PyTorch's function); scale defaults to 1/√d.
    Arguments after ``value`` are best passed by name (PyTorch's order: attn_mask, dropout_p,
    is_causal, scale).
    """
    op = "scaled_dot_product_attention"
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real) or not 0.0 <= dropout_p <= 1.0:
        raise ValueError(
            f"{op}: dropout_p must be a probability in [0, 1], got {dropout_p!r} "
            "(pass is_causal by name: is_causal=True)"
        )
    q, k, v = as_tensor(query), as_tensor(key), as_tensor(value)
    _check_qkv(op, q, k, v)
    if dropout_p > 0.0:  # dropout acts on the weights: compose weights → dropout → product
        from .functional import dropout

        weights = attention_weights(q, k, attn_mask=attn_mask, is_causal=is_causal, scale=scale)
        return matmul(dropout(weights, dropout_p, training=True), v)
    scale, add, blocked, bias = _prepare(op, q, k, attn_mask, is_causal, scale)
    inputs = (q, k, v) if add is None else (q, k, v, add)
    return ScaledDotProductAttention.apply(*inputs, blocked=blocked, scale=scale, bias=bias)


# ----------------------------------------------------------------------------- positions
def sinusoidal_positions(L: int, d: int, base: float = 10000.0) -> Tensor:
    """The fixed position encoding of "Attention Is All You Need", a float32 [L, d] constant:

        PE[pos, 2i] = sin(pos / base^(2i/d)),   PE[pos, 2i+1] = cos(pos / base^(2i/d)).

    Each pair of columns is a clock of wavelength 2π·base^(2i/d), from 2π (i = 0) to ~2π·base.
    """
    op = "sinusoidal_positions"
    L = _count(op, "L", L)
    d = _count(op, "d", d)
    if not base > 1:
        raise ValueError(f"{op}: base must be greater than 1, got {base}")
    pos = np.arange(L, dtype=np.float64)[:, None]
    rates = float(base) ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # 1/base^(2i/d)
    pe = np.empty((L, d))
    pe[:, 0::2] = np.sin(pos * rates)
    pe[:, 1::2] = np.cos(pos * rates[: d // 2])
    return Tensor._wrap(pe.astype(np.float32))


def rope_frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """θ_i = base^(−2i/d) for i = 0 … d/2 − 1: the rotation speed of pair i (radians per position)."""
    d = _count("rope_frequencies", "d", d, 2)
    if d % 2:
        raise ValueError(f"rope_frequencies: d must be even (dims are rotated in pairs), got d={d}")
    if not base > 1:
        raise ValueError(f"rope_frequencies: base must be greater than 1, got {base}")
    return float(base) ** (-np.arange(0, d, 2, dtype=np.float64) / d)


class Rotary(Function):
    """Rotate each pair (x_{2i}, x_{2i+1}) by the angle a = m·θ_i:

        r_{2i}   = x_{2i} cos a − x_{2i+1} sin a,    r_{2i+1} = x_{2i} sin a + x_{2i+1} cos a.

    A rotation's transpose is its inverse, so the gradient rotates g by −a:
        ∂L/∂x_{2i} = g_{2i} cos a + g_{2i+1} sin a,   ∂L/∂x_{2i+1} = −g_{2i} sin a + g_{2i+1} cos a.
    """

    @staticmethod
    def forward(ctx, x, *, cos, sin):
        ctx.cos, ctx.sin = cos, sin
        return _rotate(x, cos, sin)

    @staticmethod
    def backward(ctx, g):
        return _rotate(g, ctx.cos, -ctx.sin)


def _rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    even, odd = x[..., 0::2], x[..., 1::2]
    shape = np.broadcast_shapes(x.shape, cos.shape[:-1] + (x.shape[-1],))
    out = np.empty(shape, dtype=np.result_type(x.dtype, cos.dtype))
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def apply_rope(x, positions=None, base: float = 10000.0) -> Tensor:
    """Rotary position embedding of x [..., L, d] (d even): pair i of the token at position m is
    rotated by m·θ_i, θ_i = base^(−2i/d) (pairs are consecutive dims (x_{2i}, x_{2i+1})).

    ``positions``: the position m of each token, shape [L] or broadcastable to x.shape[:-1];
    default 0 … L − 1. Apply it to queries and keys (not values) before their dot product: then
    ⟨R_m q, R_n k⟩ = ⟨q, R_{n−m} k⟩ depends only on the offset n − m.
    """
    op = "apply_rope"
    x = as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"{op}: x must be [..., L, d], got shape {x.shape}")
    if x.dtype.kind != "f":
        raise TypeError(f"{op}: x must be floating point, got {x.dtype}")
    if x.shape[-1] % 2:
        raise ValueError(f"{op}: the last dim d must be even (pairs are rotated), got shape {x.shape}")
    theta = rope_frequencies(x.shape[-1], base)
    if positions is None:
        positions = np.arange(x.shape[-2], dtype=np.float64)
    positions = np.asarray(getattr(positions, "data", positions), dtype=np.float64)
    try:
        np.broadcast_shapes(positions.shape, x.shape[:-1])
    except ValueError:
        raise ValueError(
            f"{op}: positions of shape {positions.shape} do not broadcast to x's tokens {x.shape[:-1]}"
        ) from None
    angles = positions[..., None] * theta  # [..., L, d/2]
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
    return Rotary.apply(x, cos=cos, sin=sin)

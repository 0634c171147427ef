"""``MultiheadAttention``, as ``torch.nn.MultiheadAttention``: inputs are (sequence, batch, feature)
by default, as PyTorch's; pass ``batch_first=True`` for (batch, sequence, feature).

For queries X_q [B, L, E] and keys/values X_k, X_v [B, S, E] (shown batch first), with H heads of
width d = E/H::

    Q = X_q W_qᵀ + b_q,  K = X_k W_kᵀ + b_k,  V = X_v W_vᵀ + b_v      (W_q, W_k, W_v: rows of in_proj_weight)
    split each into H heads [B, H, ·, d]
    head_h = softmax(Q_h K_hᵀ / √d + mask) V_h                         [B, H, L, d]
    output = concat(head_1 … head_H) W_oᵀ + b_o                        (out_proj)

Parameters as PyTorch: ``in_proj_weight`` [3E, E] (W_q; W_k; W_v stacked), ``in_proj_bias`` [3E],
``out_proj`` (a Linear E -> E); 4(E² + E) numbers in all, whatever H.

Masks follow PyTorch's MultiheadAttention, whose boolean convention is the OPPOSITE of
``scaled_dot_product_attention``'s: here True means "do NOT attend". ``attn_mask`` is [L, S] or
[B·H, L, S], boolean (True = blocked) or float (added to the scores); ``key_padding_mask`` [B, S]
marks padded keys (True = ignore) or is a float added to every query's scores.
Masks are constants (no gradient). A query with every key blocked gets zero weights and output.
"""

from __future__ import annotations

import numpy as np

from .. import functional as F
from .._checks import positive_int
from ..attention import attention_weights, causal_mask, scaled_dot_product_attention
from ..tensor import Tensor, as_tensor, matmul
from . import init
from .layers import Linear
from .module import Module, Parameter

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Multi-head attention with learned projections; ``forward`` returns (output, weights).

    MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False): as
    PyTorch, query, key and value are [L, B, E] unless ``batch_first=True`` ([B, L, E]).
    Initialisation as PyTorch: in_proj_weight Xavier-uniform, both biases zero, out_proj.weight
    as a Linear layer's (U(−1/√E, 1/√E)).
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        batch_first: bool = False,
        dtype=None,
    ):
        super().__init__()
        op = "MultiheadAttention"
        embed_dim, num_heads = positive_int(op, "embed_dim", embed_dim), positive_int(op, "num_heads", num_heads)
        if embed_dim % num_heads:
            raise ValueError(f"{op}: embed_dim={embed_dim} must be divisible by num_heads={num_heads}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"{op}: dropout must be a probability in [0, 1], got {dropout}")
        self.embed_dim, self.num_heads = int(embed_dim), int(num_heads)
        self.head_dim = self.embed_dim // self.num_heads
        self.dropout, self.batch_first = float(dropout), bool(batch_first)
        dtype = np.dtype(np.float32 if dtype is None else dtype)
        E = self.embed_dim
        self.in_proj_weight = Parameter(np.empty((3 * E, E), dtype=dtype))
        self.in_proj_bias = Parameter(np.zeros(3 * E, dtype=dtype)) if bias else None
        self.out_proj = Linear(E, E, bias=bias, dtype=dtype)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights: bool = True,
        attn_mask=None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ):
        """Attention of ``query`` over ``key``/``value``; returns ``(output, weights or None)``.

        Shapes: query [L, B, E], key and value [S, B, E] -> output [L, B, E] (the default, as
        PyTorch), or [B, L, E], [B, S, E] -> [B, L, E] with ``batch_first=True``; unbatched [L, E]
        works too. Masks do not depend on the layout: attn_mask [L, S] or [B·H, L, S],
        key_padding_mask [B, S]. weights: [B, L, S] averaged over heads, or [B, H, L, S] with
        ``average_attn_weights=False``; None when ``need_weights=False``.
        ``is_causal=True`` without ``attn_mask`` builds the causal mask (PyTorch requires it given).
        Arguments after ``value`` follow PyTorch's order; pass them by name.
        """
        self_attention = query is key and key is value
        batched = as_tensor(query).ndim == 3
        q_in, k_in, v_in = self._as_batch_first(query, key, value)  # [B, L, E], [B, S, E], [B, S, E]
        B, L, S = q_in.shape[0], q_in.shape[1], k_in.shape[1]
        q, k, v = self._project(q_in, k_in, v_in, self_attention)  # split into heads: [B, H, ·, d]
        mask = self._merge_masks(attn_mask, key_padding_mask, is_causal, B, L, S, batched, q.dtype)
        heads, weights = self._attend(q, k, v, mask, need_weights)  # [B, H, L, d], [B, H, L, S]
        merged = heads.permute(0, 2, 1, 3).reshape(B, L, self.embed_dim)  # concat(head_1 … head_H)
        out = self.out_proj(merged)
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)
        return self._restore_layout(out, weights, batched)

    def _as_batch_first(self, query, key, value):
        """The three inputs checked and brought to [B, ·, E] (unbatched gets B = 1)."""
        op = "MultiheadAttention"
        E = self.embed_dim
        q_in, k_in, v_in = as_tensor(query), as_tensor(key), as_tensor(value)
        for name, t in (("query", q_in), ("key", k_in), ("value", v_in)):
            if t.ndim != q_in.ndim or t.ndim not in (2, 3) or t.shape[-1] != E:
                layout = "[B, L, E]" if self.batch_first else "[L, B, E]"
                raise ValueError(
                    f"{op}: query, key and value must all be {layout} (or unbatched [L, E]) with "
                    f"E = embed_dim = {E}; got {name} of shape {t.shape} (query {q_in.shape}, "
                    f"key {k_in.shape}, value {v_in.shape})"
                )
        if q_in.ndim == 2:
            q_in, k_in, v_in = (t.unsqueeze(0) for t in (q_in, k_in, v_in))
        elif not self.batch_first:
            q_in, k_in, v_in = (t.transpose(0, 1) for t in (q_in, k_in, v_in))
        if k_in.shape[:2] != v_in.shape[:2] or k_in.shape[0] != q_in.shape[0]:
            raise ValueError(
                f"{op}: key {tuple(key.shape)} and value {tuple(value.shape)} must have the same batch "
                f"and length, and the batch of query {tuple(query.shape)}"
            )
        return q_in, k_in, v_in

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, mask, need_weights: bool):
        """Every head's softmax(QKᵀ/√d + mask)V, with dropout on the weights in training:
        (heads [B, H, L, d], weights [B, H, L, S] or None)."""
        p = self.dropout if self.training else 0.0
        if not need_weights:  # the fused path never materialises the weights for the caller
            return scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p), None
        weights = attention_weights(q, k, attn_mask=mask)
        if p > 0.0:
            weights = F.dropout(weights, p, training=True)
        return matmul(weights, v), weights

    def _restore_layout(self, out: Tensor, weights, batched: bool):
        """Back to the caller's layout: unbatched, or [L, B, E] when not batch_first."""
        if not batched:
            return out.squeeze(0), (weights.squeeze(0) if weights is not None else None)
        if not self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def _project(self, q_in: Tensor, k_in: Tensor, v_in: Tensor, self_attention: bool):
        """Q, K, V through in_proj, split into heads: [B, H, length, d]."""
        E, H, d = self.embed_dim, self.num_heads, self.head_dim
        W, b = self.in_proj_weight, self.in_proj_bias
        if self_attention:  # one product for all three
            B, L = q_in.shape[:2]
            qkv = F.linear(q_in, W, b).reshape(B, L, 3, H, d).permute(2, 0, 3, 1, 4)
            return qkv[0], qkv[1], qkv[2]
        parts = []
        for i, t in enumerate((q_in, k_in, v_in)):
            rows = slice(i * E, (i + 1) * E)
            x = F.linear(t, W[rows], None if b is None else b[rows])
            parts.append(x.reshape(t.shape[0], t.shape[1], H, d).transpose(1, 2))
        return tuple(parts)

    def _merge_masks(self, attn_mask, key_padding_mask, is_causal, B, L, S, batched, dtype):
        """One additive float mask broadcastable to [B, H, L, S] (0 = keep, −inf = blocked), or None."""
        op = "MultiheadAttention"
        H = self.num_heads
        total = None
        if attn_mask is None and is_causal:
            attn_mask = ~causal_mask(L, S)
        if attn_mask is not None:
            m = _additive(op, "attn_mask", attn_mask, dtype)
            if m.shape == (L, S):
                pass
            elif batched and m.shape == (B * H, L, S):
                m = m.reshape(B, H, L, S)
            elif not batched and m.shape == (H, L, S):
                pass
            else:
                expected = f"({L}, {S}) or ({B * H}, {L}, {S})" if batched else f"({L}, {S}) or ({H}, {L}, {S})"
                raise ValueError(
                    f"{op}: attn_mask must have shape {expected} (L, S or B·num_heads, L, S), got {m.shape}"
                )
            total = m
        if key_padding_mask is not None:
            m = _additive(op, "key_padding_mask", key_padding_mask, dtype)
            expected = (B, S) if batched else (S,)
            if m.shape != expected:
                raise ValueError(f"{op}: key_padding_mask must have shape {expected} (batch, S), got {m.shape}")
            m = m.reshape(B, 1, 1, S)
            total = m if total is None else total + m
        return total


def _additive(op: str, name: str, mask, dtype) -> np.ndarray:
    """A mask as an additive float array: boolean True (= blocked) -> −inf, False -> 0."""
    m = np.asarray(getattr(mask, "data", mask))
    if m.dtype == np.bool_:
        return np.where(m, -np.inf, 0.0).astype(dtype)
    if m.dtype.kind != "f":
        raise TypeError(f"{op}: {name} must be boolean (True = blocked) or float (added), got {m.dtype}")
    return m.astype(dtype, copy=False)

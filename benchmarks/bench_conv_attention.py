"""Convolution and causal attention, forward + backward: engine vs hand-written NumPy vs PyTorch.

- conv2d: batch 32, 8 -> 16 channels, 28x28, 3x3 kernel, padding 1, with bias; one forward and
  one backward with a fixed random upstream gradient (gradients for input, weight and bias).
- attention: causal scaled dot-product attention, B 8, H 4, L 128, d 32; forward and backward
  (gradients for q, k and v).

Everything is float32. Goals: conv and attention at most 1.5x PyTorch at the same thread count
(issue 28; conv was 3x in issue 4, 2x in issue 16).
The NumPy column is the same arithmetic written directly (no autograd bookkeeping).
"""

from __future__ import annotations

import numpy as np

from benchmarks.common import backward_step
from benchmarks.run import Case

CONV = dict(n=32, c_in=8, c_out=16, size=28, k=3, padding=1)
ATTN = dict(B=8, H=4, L=128, d=32)


def _conv_arrays():
    rng = np.random.default_rng(0)
    n, c, o, s, k = CONV["n"], CONV["c_in"], CONV["c_out"], CONV["size"], CONV["k"]
    x = rng.standard_normal((n, c, s, s), dtype=np.float32)
    w = (rng.standard_normal((o, c, k, k), dtype=np.float32) * 0.1).astype(np.float32)
    b = np.zeros(o, dtype=np.float32)
    g = rng.standard_normal((n, o, s, s), dtype=np.float32)
    return x, w, b, g


def _attn_arrays():
    rng = np.random.default_rng(0)
    shape = (ATTN["B"], ATTN["H"], ATTN["L"], ATTN["d"])
    return [rng.standard_normal(shape, dtype=np.float32) for _ in range(4)]  # q, k, v, g


# ----------------------------------------------------------------------------- conv2d
def conv_engine():
    import engine
    import engine.functional as F

    x, w, b, g = _conv_arrays()
    inputs = [engine.Tensor(a, requires_grad=True) for a in (x, w, b)]
    return backward_step(inputs, lambda x, w, b: F.conv2d(x, w, b, padding=CONV["padding"]), g)


def conv_numpy():
    from numpy.lib.stride_tricks import sliding_window_view

    x, w, b, g = _conv_arrays()
    p, k = CONV["padding"], CONV["k"]
    n, c, h, wd = x.shape
    o = w.shape[0]
    w2 = w.reshape(o, -1)

    def step():
        xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
        windows = sliding_window_view(xp, (k, k), axis=(2, 3))  # [N, C, H, W, k, k]
        cols = windows.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * k * k, h * wd)
        out = np.matmul(w2, cols) + b[:, None]  # forward [N, O, L]
        g3 = g.reshape(n, o, h * wd)
        gw = np.matmul(g3, cols.transpose(0, 2, 1)).sum(axis=0)
        gb = g3.sum(axis=(0, 2))
        dcols = np.matmul(w2.T, g3).reshape(n, c, k, k, h, wd)
        gx = np.zeros_like(xp)
        for i in range(k):
            for j in range(k):
                gx[:, :, i : i + h, j : j + wd] += dcols[:, :, i, j]
        return out, gw, gb, gx[:, :, p : p + h, p : p + wd]

    return step


def conv_torch():
    import torch

    x, w, b, g = (torch.from_numpy(a) for a in _conv_arrays())
    inputs = [t.requires_grad_(True) for t in (x, w, b)]
    conv2d = torch.nn.functional.conv2d
    return backward_step(inputs, lambda x, w, b: conv2d(x, w, b, padding=CONV["padding"]), g)


# ----------------------------------------------------------------------------- attention
def attention_engine():
    import engine
    import engine.functional as F

    q, k, v, g = _attn_arrays()
    inputs = [engine.Tensor(a, requires_grad=True) for a in (q, k, v)]
    return backward_step(inputs, lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), g)


def attention_numpy():
    q, k, v, g = _attn_arrays()
    L, d = q.shape[-2], q.shape[-1]
    blocked = np.where(np.tril(np.ones((L, L), dtype=bool)), 0.0, -np.inf).astype(np.float32)
    scale = np.float32(1.0 / np.sqrt(d))

    def step():
        s = np.matmul(q, np.swapaxes(k, -1, -2))
        s *= scale
        s += blocked
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        out = np.matmul(s, v)
        gv = np.matmul(np.swapaxes(s, -1, -2), g)
        gp = np.matmul(g, np.swapaxes(v, -1, -2))
        gp *= s
        gp -= s * gp.sum(axis=-1, keepdims=True)
        gq = np.matmul(gp, k) * scale
        gk = np.matmul(np.swapaxes(gp, -1, -2), q) * scale
        return out, gq, gk, gv

    return step


def attention_torch():
    import torch

    q, k, v, g = (torch.from_numpy(a) for a in _attn_arrays())
    inputs = [t.requires_grad_(True) for t in (q, k, v)]
    sdpa = torch.nn.functional.scaled_dot_product_attention
    return backward_step(inputs, lambda q, k, v: sdpa(q, k, v, is_causal=True), g)


CASES = [
    Case(
        "conv2d 32x8x28x28 -> 16, 3x3 pad 1, fwd+bwd",
        engine=conv_engine,
        numpy=conv_numpy,
        torch=conv_torch,
        torch_goal=1.5,
    ),
    Case(
        "causal attention B8 H4 L128 d32, fwd+bwd",
        engine=attention_engine,
        numpy=attention_numpy,
        torch=attention_torch,
        torch_goal=1.5,
    ),
]

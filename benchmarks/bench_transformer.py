"""One pre-norm Transformer block, forward + backward: engine vs PyTorch (issue 28's block row).

The size notebook 06's tiny GPT trains (its ``train_tiny_gpt`` defaults): batch 32, context 16,
d_model 32, 2 heads, an MLP of 4·d_model with GELU. GPT-2's layout::

    x ← x + MultiheadAttention(LN(x), causal mask)
    x ← x + Linear(GELU(Linear(LN(x))))

built from the library's layers (``nn.LayerNorm``, ``nn.MultiheadAttention(batch_first=True)``,
``nn.Linear``, ``nn.GELU``) in both columns; benchmarks never import notebooks. The causal mask is
an additive float mask (0 / −inf, the same meaning in both libraries) and ``need_weights=False``
(PyTorch then runs its fused scaled-dot-product kernel, the engine its fused attention op). One
step: every gradient cleared, forward, backward with a fixed random upstream gradient (gradients
for the input and the 12 parameters). float32; the same weights in both columns.
Goal: at most 1.5x PyTorch (issue 28).
"""

from __future__ import annotations

import numpy as np

from benchmarks.run import Case

BATCH, CONTEXT, D_MODEL, HEADS = 32, 16, 32, 2


def _arrays():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, CONTEXT, D_MODEL), dtype=np.float32)
    g = rng.standard_normal((BATCH, CONTEXT, D_MODEL), dtype=np.float32)
    mask = np.triu(np.full((CONTEXT, CONTEXT), -np.inf, dtype=np.float32), k=1)  # key j > query i: −inf
    return x, g, mask


def _block(nn):
    """The block in ``nn`` (``engine.nn`` or ``torch.nn``: the two spell it the same)."""

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm_attention = nn.LayerNorm(D_MODEL)
            self.attention = nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True)
            self.norm_mlp = nn.LayerNorm(D_MODEL)
            self.mlp = nn.Sequential(nn.Linear(D_MODEL, 4 * D_MODEL), nn.GELU(), nn.Linear(4 * D_MODEL, D_MODEL))

        def forward(self, x, mask):
            h = self.norm_attention(x)
            x = x + self.attention(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.norm_mlp(x))

    return Block()


def _engine_block():
    from engine import nn

    rng = np.random.default_rng(1)
    block = _block(nn)
    for p in block.parameters():  # not the initial zeros and ones: every path of the gradient counts
        p.data[...] = rng.uniform(-0.3, 0.3, p.shape).astype(np.float32)
    return block


def _step(block, x, mask, g):
    def step():
        x.grad = None
        for p in block.parameters():
            p.grad = None
        block(x, mask).backward(g)

    return step


def block_engine():
    import engine

    x, g, mask = _arrays()
    x = engine.Tensor(x, requires_grad=True)
    return _step(_engine_block(), x, engine.Tensor(mask), g)


def block_torch():
    import torch

    x, g, mask = _arrays()
    block = _block(torch.nn)
    with torch.no_grad():
        for (name, p), q in zip(block.named_parameters(), _engine_block().parameters()):
            assert p.shape == q.shape, name  # the same layers in the same order
            p.copy_(torch.from_numpy(q.data))
    x = torch.from_numpy(x).requires_grad_(True)
    return _step(block, x, torch.from_numpy(mask), torch.from_numpy(g))


CASES = [
    Case(
        f"Transformer block B{BATCH} L{CONTEXT} d{D_MODEL} H{HEADS}, fwd+bwd",
        engine=block_engine,
        torch=block_torch,
        torch_goal=1.5,
    ),
]

"""Matrix products: ``matmul`` (batched, broadcast) and the fused dense layer ``linear``."""

import numpy as np

from ..autograd import Function


def _swap(x):
    return np.swapaxes(x, -1, -2)


class MatMul(Function):
    """r = a @ b;  ∂L/∂a = g @ bᵀ, ∂L/∂b = aᵀ @ g (batch axes broadcast like NumPy's matmul).

    A 1-D operand is treated as a row (left) or column (right) vector, as ``np.matmul`` does; the
    broadcast batch axes are summed back centrally.
    """

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = ctx.needs_input_grad or (False, False)
        ctx.save_for_backward(a if need_b else None, b if need_a else None)  # each gradient uses the other
        ctx.ndims = (a.ndim, b.ndim)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        a_ndim, b_ndim = ctx.ndims
        if a_ndim == 1 and b_ndim == 1:  # dot product: a scalar output
            return (g * b if need_a else None), (g * a if need_b else None)
        a2 = a[None, :] if a_ndim == 1 and a is not None else a
        b2 = b[:, None] if b_ndim == 1 and b is not None else b
        if a_ndim == 1:
            g = np.expand_dims(g, -2)
        if b_ndim == 1:
            g = np.expand_dims(g, -1)
        ga = gb = None
        if need_a:
            ga = g @ _swap(b2)
            ga = ga[..., 0, :] if a_ndim == 1 else ga
        if need_b:
            if b_ndim <= 2 and a2.ndim > 2:  # a shared matrix: one product over the whole batch
                gb = a2.reshape(-1, a2.shape[-1]).T @ g.reshape(-1, g.shape[-1])
            else:
                gb = _swap(a2) @ g
            gb = gb[..., :, 0] if b_ndim == 1 else gb
        return ga, gb


class Linear(Function):
    """r = x Wᵀ + b (W is out × in, as PyTorch);  ∂L/∂x = g W, ∂L/∂W = gᵀ x, ∂L/∂b = Σ g.

    One node instead of three (transpose, matmul, add): the dense layer is the hot path of every
    MLP, so its batch axes are flattened into one matrix product each way.
    """

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        needs = ctx.needs_input_grad or (False, False)
        ctx.save_for_backward(x if needs[1] else None, weight if needs[0] else None)
        # speed: [..., in] as one [rows, in] matrix, so one GEMM covers every batch row (NumPy's
        # 3-D @ 2-D loops over the leading axis: ~25 % slower at a transformer block's sizes)
        out = x.reshape(-1, x.shape[-1]) @ weight.T if x.ndim > 2 else x @ weight.T
        if bias is not None:
            out += bias
        return out.reshape(*x.shape[:-1], out.shape[-1]) if x.ndim > 2 else out

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        g2 = g.reshape(-1, g.shape[-1])
        gx = None
        if needs[0]:  # one GEMM over all rows, as forward
            gx = (g2 @ weight).reshape(*g.shape[:-1], weight.shape[1]) if g.ndim > 2 else g @ weight
        gw = (g2.T @ x.reshape(-1, x.shape[-1])) if needs[1] else None
        if len(needs) == 3:
            return gx, gw, (g2.sum(axis=0) if needs[2] else None)
        return gx, gw

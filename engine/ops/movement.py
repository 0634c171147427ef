"""Movement primitives: they rearrange, select or copy elements without changing their values.

Their gradients route each upstream element back to where it came from: a reshape reshapes back,
a permutation applies the inverse permutation, an index scatters (adding where an index repeats),
a concatenation splits, an expansion sums over the copies.
"""

import numpy as np

from ..autograd import Function


class Reshape(Function):
    """r = a viewed with a new shape;  the gradient is g reshaped to a's shape."""

    shares_input = True  # a view when NumPy can make one: one memory, one version counter

    @staticmethod
    def forward(ctx, a, *, shape):
        ctx.shape = a.shape
        return a.reshape(shape)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape)


class Permute(Function):
    """r = a with its axes reordered by ``dims``;  the gradient applies the inverse order."""

    shares_input = True

    @staticmethod
    def forward(ctx, a, *, dims):
        ctx.inverse = tuple(np.argsort(dims))
        return np.transpose(a, dims)

    @staticmethod
    def backward(ctx, g):
        return np.transpose(g, ctx.inverse)


class Expand(Function):
    """r = a broadcast to ``shape`` (no copy);  the gradient sums over the copies (done centrally)."""

    shares_input = True

    @staticmethod
    def forward(ctx, a, *, shape):
        return np.broadcast_to(a, shape)

    @staticmethod
    def backward(ctx, g):
        return g


class Index(Function):
    """r = a[index];  the gradient is scattered back: zeros with g added at ``index``.

    Basic slices select each element at most once, so assignment suffices; integer-array indices
    may repeat, and ``np.add.at`` adds every repetition's gradient (a repeated row gets the sum).
    Basic indexing gives a view (it shares the version counter); ``index`` arrives copied.
    """

    shares_input = True

    @staticmethod
    def forward(ctx, a, *, index):
        ctx.shape, ctx.dtype, ctx.index = a.shape, a.dtype, index
        ctx.advanced = _is_advanced(index)
        return a[index]

    @staticmethod
    def backward(ctx, g):
        grad = np.zeros(ctx.shape, dtype=g.dtype)
        if ctx.advanced:
            np.add.at(grad, ctx.index, g)
        else:
            grad[ctx.index] = g
        return grad


def _is_advanced(index) -> bool:
    """True when ``index`` holds an integer array, whose entries may repeat (boolean masks cannot)."""
    if isinstance(index, (int, slice)):  # speed: x[0] and x[i:j] skip the scan below
        return False
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, (list, np.ndarray)) and np.asarray(p).dtype != bool for p in parts)


class Cat(Function):
    """r = [a₁, a₂, …] joined along ``dim``;  the gradient is g split at the same boundaries."""

    @staticmethod
    def forward(ctx, *arrays, dim):
        ctx.dim = dim
        ctx.bounds = np.cumsum([x.shape[dim] for x in arrays])[:-1]
        return np.concatenate(arrays, axis=dim)

    @staticmethod
    def backward(ctx, g):
        return tuple(np.split(g, ctx.bounds, axis=ctx.dim))


class Pad(Function):
    """r = a surrounded by a constant;  the gradient is g with the padding cut away.

    ``widths`` is NumPy's per-axis ((before, after), ...) form; negative widths crop.
    """

    @staticmethod
    def forward(ctx, a, *, widths, value):
        crop = tuple(slice(max(-lo, 0), a.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(widths))
        grow = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
        ctx.shape, ctx.crop = a.shape, crop
        ctx.inner = tuple(slice(lo, lo + (c.stop - c.start)) for (lo, _), c in zip(grow, crop))
        return np.pad(a[crop], grow, mode="constant", constant_values=value)

    @staticmethod
    def backward(ctx, g):
        grad = np.zeros(ctx.shape, dtype=g.dtype)
        grad[ctx.crop] = g[ctx.inner]
        return grad


class Clone(Function):
    """r = a copy of a (its own memory, C-contiguous);  the gradient is g."""

    @staticmethod
    def forward(ctx, a):
        return np.array(a, order="C", copy=True)

    @staticmethod
    def backward(ctx, g):
        return g


class Flip(Function):
    """r = a reversed along ``dims`` (a copy, as PyTorch);  the gradient is g reversed the same way."""

    @staticmethod
    def forward(ctx, a, *, dims):
        ctx.dims = dims
        return np.flip(a, axis=dims).copy()

    @staticmethod
    def backward(ctx, g):
        return np.flip(g, axis=ctx.dims)


class SetItem(Function):
    """r = a with r[index] = v (``t[index] = v`` recorded in a graph);  ∂r/∂a = 1 outside ``index``
    (0 inside: those values were overwritten), ∂r/∂v = g[index] (summed back over v's broadcast)."""

    @staticmethod
    def forward(ctx, a, v, *, index):
        ctx.index = index
        out = a.copy()
        out[index] = v
        return out

    @staticmethod
    def backward(ctx, g):
        need_a, need_v = ctx.needs_input_grad
        ga = None
        if need_a:
            ga = g.copy()
            ga[ctx.index] = 0
        return ga, (g[ctx.index] if need_v else None)

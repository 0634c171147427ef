"""Reductions: sum, mean, max/min, prod, var, and the fused, stable logsumexp/softmax family.

A reduction's backward spreads the upstream gradient back over the reduced axes; ``_expand``
restores the reduced axes (as length 1) so that NumPy broadcasting does the spreading.
"""

import math

import numpy as np

from ..autograd import Function


def normalize_dims(dim, ndim: int, op: str, empty_is_all: bool = False) -> tuple:
    """``dim`` (None, int or sequence, negatives allowed) as a sorted tuple of axes.

    ``empty_is_all``: for reductions, ``dim=()`` means every dim, as PyTorch (NumPy: none).
    """
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        dims = (dim,)
    elif isinstance(dim, (tuple, list)) and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dim
    ):
        dims = tuple(dim)
    else:
        raise TypeError(f"{op}: dim must be an int or a tuple of ints, got {type(dim).__name__} {dim!r}")
    if not dims and empty_is_all:
        return tuple(range(ndim))
    out = []
    for d in dims:
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(
                f"{op}: dim {d} is out of range for a tensor with {ndim} dimension(s) "
                f"(valid: {-max(ndim, 1)} to {max(ndim, 1) - 1})"
            )
        out.append(d % ndim if ndim else 0)
    return tuple(sorted(set(out))) if ndim else ()


def _expand(grad, axes: tuple, keepdim):
    """Give ``grad`` back the reduced ``axes`` (sorted) as length-1 axes (a no-op when keepdim).

    A reshape rather than ``np.expand_dims``: the same view, without its Python-level checks
    (reductions end every loss, so this runs once per training step).
    """
    if keepdim or not axes:
        return grad
    shape = list(np.shape(grad))
    for axis in axes:
        shape.insert(axis, 1)
    return grad.reshape(shape)


# Up to this many elements a reduction's backward writes the spread gradient into a new array.
_SMALL = 4096


def _spread(g, shape: tuple):
    """``g`` (with the reduced axes back, as length 1) broadcast to ``shape``.

    Speed: a small result is written into a new array (~0.3 µs), where ``np.broadcast_to`` spends
    ~2.4 µs in Python checks (every loss ends in a sum or a mean); a large one stays a read-only
    broadcast view (no memory).
    """
    if math.prod(shape) > _SMALL:
        return np.broadcast_to(g, shape)
    out = np.empty(shape, dtype=g.dtype)
    out[...] = g
    return out


def _count(shape: tuple, axes: tuple) -> int:
    """How many elements each reduced value summarises (1 when no axis is reduced)."""
    return math.prod(map(shape.__getitem__, axes))  # (speed: a list comprehension adds a frame)


def _degrees_of_freedom(shape: tuple, axes: tuple, correction, op: str):
    """n − c for var/std over ``axes``; an error when nothing is left."""
    count = _count(shape, axes)
    if count - correction <= 0:
        raise ValueError(
            f"{op}: {count} element(s) with correction={correction} leaves no degrees of "
            "freedom; use correction=0 or reduce over more elements"
        )
    return count - correction


class Sum(Function):
    """r = Σ a over ``axes``;  ∂r/∂aᵢ = 1, so the gradient is g broadcast back."""

    @staticmethod
    def forward(ctx, a, *, axes, keepdim):
        ctx.shape, ctx.axes, ctx.keepdim = a.shape, axes, keepdim
        if a.dtype.kind in "biu":  # integers and booleans sum into int64, as PyTorch (NumPy: uint64)
            return np.add.reduce(a, axis=axes, keepdims=keepdim, dtype=np.int64)
        return np.add.reduce(a, axis=axes, keepdims=keepdim)  # np.sum without its wrapper

    @staticmethod
    def backward(ctx, g):
        return _spread(_expand(g, ctx.axes, ctx.keepdim), ctx.shape)


class Mean(Function):
    """r = (1/n) Σ a over ``axes``;  ∂r/∂aᵢ = 1/n."""

    @staticmethod
    def forward(ctx, a, *, axes, keepdim):
        ctx.shape, ctx.axes, ctx.keepdim = a.shape, axes, keepdim
        ctx.count = _count(a.shape, axes)
        if ctx.count == 0:  # the mean of nothing is NaN, as PyTorch (without NumPy's warning)
            shape = np.sum(a, axis=axes, keepdims=keepdim).shape
            return np.full(shape, np.nan, dtype=a.dtype)
        if a.dtype.itemsize < 4:  # float16: NumPy's mean accumulates in float32
            return np.mean(a, axis=axes, keepdims=keepdim)
        # np.mean's own steps (sum, then divide by the count) without its Python wrapper: the same bits
        return np.add.reduce(a, axis=axes, keepdims=keepdim) / ctx.count

    @staticmethod
    def backward(ctx, g):
        return _spread(_expand(g, ctx.axes, ctx.keepdim) / ctx.count, ctx.shape)


class Var(Function):
    """r = Σ(a − ā)² / (n − c) over ``axes`` (c = correction, 1 = unbiased);  ∂r/∂aᵢ = 2(aᵢ − ā)/(n − c)."""

    @staticmethod
    def forward(ctx, a, *, axes, keepdim, correction):
        denominator = _degrees_of_freedom(a.shape, axes, correction, "var")
        centred = a - a.mean(axis=axes, keepdims=True)
        ctx.save_for_backward(centred)
        ctx.axes, ctx.keepdim, ctx.denominator = axes, keepdim, denominator
        return np.sum(centred * centred, axis=axes, keepdims=keepdim) / ctx.denominator

    @staticmethod
    def backward(ctx, g):
        (centred,) = ctx.saved_tensors
        return _expand(g, ctx.axes, ctx.keepdim) * (2.0 / ctx.denominator) * centred


class Std(Function):
    """r = √var(a) over ``axes``;  ∂r/∂aᵢ = (aᵢ − ā)/((n − c)·r), and 0 where r = 0 (as PyTorch:
    a constant slice has no direction to move in; 0/0 would be NaN)."""

    @staticmethod
    def forward(ctx, a, *, axes, keepdim, correction):
        denominator = _degrees_of_freedom(a.shape, axes, correction, "std")
        centred = a - a.mean(axis=axes, keepdims=True)
        out = np.sqrt(np.sum(centred * centred, axis=axes, keepdims=True) / denominator)
        ctx.save_for_backward(centred, out)
        ctx.axes, ctx.keepdim, ctx.denominator = axes, keepdim, denominator
        return out if keepdim else np.squeeze(out, axis=axes)

    @staticmethod
    def backward(ctx, g):
        centred, out = ctx.saved_tensors
        scale = np.zeros_like(out)
        np.divide(_expand(g, ctx.axes, ctx.keepdim), ctx.denominator * out, out=scale, where=out != 0)
        return scale * centred


class Amax(Function):
    """r = max a over ``axes``;  the gradient is split evenly among the maximal elements.

    A NaN in a slice makes its max NaN. ``nan_is_extreme`` (``max()``/``min()`` without dim, as
    PyTorch) then shares that slice's gradient among its NaNs; otherwise (``amax``, as PyTorch) the
    slice's gradient is NaN.
    """

    @staticmethod
    def forward(ctx, a, *, axes, keepdim, use_min=False, nan_is_extreme=False):
        out = (np.min if use_min else np.max)(a, axis=axes, keepdims=True)
        mask = a == out
        if a.dtype.kind in "fc":
            nan_out = np.isnan(out)
            if nan_out.any():
                mask = np.where(nan_out, np.isnan(a) if nan_is_extreme else False, mask)
        count = mask.sum(axis=axes, keepdims=True)
        share = np.full(mask.shape, np.nan, dtype=a.dtype if a.dtype.kind in "fc" else np.float64)
        np.divide(mask, count, out=share, where=count > 0)
        ctx.save_for_backward(share)
        ctx.axes, ctx.keepdim = axes, keepdim
        return out if keepdim else np.squeeze(out, axis=axes)

    @staticmethod
    def backward(ctx, g):
        (share,) = ctx.saved_tensors
        return _expand(g, ctx.axes, ctx.keepdim) * share


class MaxAlongDim(Function):
    """values = max a along ``dim`` with its argmax; the gradient goes to that one index."""

    @staticmethod
    def forward(ctx, a, *, dim, keepdim, use_min=False):
        index = (np.argmin if use_min else np.argmax)(a, axis=dim)
        index_k = np.expand_dims(index, dim)
        values = np.take_along_axis(a, index_k, axis=dim)
        ctx.shape, ctx.dim, ctx.keepdim, ctx.index_k = a.shape, dim, keepdim, index_k
        ctx.indices = index_k if keepdim else index
        return values if keepdim else np.squeeze(values, axis=dim)

    @staticmethod
    def backward(ctx, g):
        grad = np.zeros(ctx.shape, dtype=g.dtype)
        g = g if ctx.keepdim else np.expand_dims(g, ctx.dim)
        np.put_along_axis(grad, ctx.index_k, g, axis=ctx.dim)
        return grad


class Norm(Function):
    """r = (Σ |a|ᵖ)^(1/p) over ``axes`` (p > 0, finite);  ∂r/∂aᵢ = sign(aᵢ)|aᵢ|ᵖ⁻¹ / rᵖ⁻¹.

    Where r = 0 the gradient is 0 (a subgradient, as PyTorch), not 0/0. For p = 2 this is a/r.
    """

    @staticmethod
    def forward(ctx, a, *, axes, keepdim, p):
        ctx.axes, ctx.keepdim, ctx.p = axes, keepdim, p
        if p == 2:
            out = np.sqrt(np.add.reduce(a * a, axis=axes, keepdims=keepdim))
        else:
            out = np.add.reduce(np.abs(a) ** p, axis=axes, keepdims=keepdim) ** (1.0 / p)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        p = ctx.p
        r = _expand(out, ctx.axes, ctx.keepdim)
        g = _expand(g, ctx.axes, ctx.keepdim)
        with np.errstate(divide="ignore", invalid="ignore"):
            if p == 2:
                local = a / r
            elif p == 1:
                local = np.sign(a) * np.ones_like(r)
            else:
                local = np.sign(a) * np.abs(a) ** (p - 1) / r ** (p - 1)
        return g * np.where(r == 0, 0.0, local).astype(a.dtype, copy=False)


class CumSum(Function):
    """rₖ = Σ_{i≤k} aᵢ along ``dim``;  ∂L/∂aᵢ = Σ_{k≥i} gₖ (a cumulative sum from the end)."""

    @staticmethod
    def forward(ctx, a, *, dim):
        ctx.dim = dim
        if a.dtype.kind in "biu":  # integers and booleans sum into int64, as PyTorch
            return np.cumsum(a, axis=dim, dtype=np.int64)
        return np.cumsum(a, axis=dim)

    @staticmethod
    def backward(ctx, g):
        d = ctx.dim
        return np.flip(np.cumsum(np.flip(g, d), axis=d), d)


class CumProd(Function):
    """rₖ = Π_{i≤k} aᵢ along ``dim``;  ∂L/∂aᵢ = Σ_{k≥i} gₖ Π_{j≤k, j≠i} aⱼ.

    Written as ∂L/∂aᵢ = (Π_{j<i} aⱼ)·Sᵢ with Sᵢ = gᵢ + aᵢ₊₁·Sᵢ₊₁, one pass from the end, so a zero
    among the aⱼ gives the exact gradient (dividing rₖ by aᵢ would give 0/0 there).
    """

    @staticmethod
    def forward(ctx, a, *, dim):
        ctx.dim = dim
        ctx.save_for_backward(a)
        if a.dtype.kind in "biu":
            return np.cumprod(a, axis=dim, dtype=np.int64)
        return np.cumprod(a, axis=dim)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        a, g = np.moveaxis(a, ctx.dim, 0), np.moveaxis(g, ctx.dim, 0)
        n = a.shape[0]
        before = np.ones_like(a)  # Π_{j<i} aⱼ
        if n > 1:
            np.cumprod(a[:-1], axis=0, out=before[1:])
        s = np.empty_like(g)
        if n:
            s[-1] = g[-1]
        for i in range(n - 2, -1, -1):
            s[i] = g[i] + a[i + 1] * s[i + 1]
        return np.moveaxis(before * s, 0, ctx.dim)


class Prod(Function):
    """r = Π a over ``axes``;  ∂r/∂aᵢ = Π_{j≠i} aⱼ (computed without dividing, so zeros are fine)."""

    @staticmethod
    def forward(ctx, a, *, dim, keepdim):
        ctx.save_for_backward(a)
        ctx.dim, ctx.keepdim = dim, keepdim
        if a.dtype.kind in "biu":
            return np.prod(a, axis=dim, keepdims=keepdim, dtype=np.int64)
        return np.prod(a, axis=dim, keepdims=keepdim)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        dim = ctx.dim
        flat = dim is None
        x = a.reshape(-1) if flat else a
        axis = 0 if flat else dim
        n = x.shape[axis]
        ones_shape = list(x.shape)
        ones_shape[axis] = 1
        ones = np.ones(ones_shape, dtype=x.dtype)
        # products of everything before and after each element along the axis
        before = np.concatenate([ones, np.cumprod(x, axis=axis)], axis=axis)
        rev = np.flip(x, axis=axis)
        after = np.flip(np.concatenate([ones, np.cumprod(rev, axis=axis)], axis=axis), axis=axis)
        others = np.take(before, range(n), axis=axis) * np.take(after, range(1, n + 1), axis=axis)
        if flat:
            return (g * others).reshape(a.shape)
        g = g if ctx.keepdim else np.expand_dims(g, dim)
        return g * others


# ---------------------------------------------------------------- fused, numerically stable


def stable_logsumexp(a: np.ndarray, axis, keepdims: bool = True) -> np.ndarray:
    """log Σ exp(a) = m + log Σ exp(a − m) with m = max a, so exp never overflows.

    Over an empty axis the sum is 0 and the result −inf, as PyTorch.
    """
    if a.shape[axis] == 0:
        shape = list(a.shape)
        shape[axis] = 1
        out = np.full(shape, -np.inf, dtype=a.dtype)
        return out if keepdims else np.squeeze(out, axis=axis)
    m = np.maximum.reduce(a, axis=axis, keepdims=True)
    finite = np.isfinite(m)
    if np.logical_and.reduce(finite, axis=None):  # the common case: every sum of exp is ≥ 1
        out = m + np.log(np.add.reduce(np.exp(a - m), axis=axis, keepdims=True))
    else:
        m = np.where(finite, m, 0)  # all −inf along the axis: keep −inf, avoid inf − inf
        with np.errstate(divide="ignore"):  # log 0 = −inf for an all −inf slice, as PyTorch
            out = m + np.log(np.add.reduce(np.exp(a - m), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


def stable_log_softmax(a: np.ndarray, axis: int) -> np.ndarray:
    """log softmax(a) = a − logsumexp(a)."""
    return a - stable_logsumexp(a, axis)


def stable_softmax(a: np.ndarray, axis: int) -> np.ndarray:
    """softmax(a)ᵢ = exp(aᵢ − m) / Σⱼ exp(aⱼ − m) with m = max a (an empty axis: an empty result)."""
    if a.shape[axis] == 0:
        return a.copy()
    e = np.exp(a - np.max(a, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


class LogSumExp(Function):
    """r = log Σᵢ exp(aᵢ) along ``dim``;  ∂r/∂aᵢ = softmax(a)ᵢ."""

    @staticmethod
    def forward(ctx, a, *, dim, keepdim):
        out = stable_logsumexp(a, dim, keepdims=True)
        ctx.save_for_backward(a, out)
        ctx.dim, ctx.keepdim = dim, keepdim
        return out if keepdim else np.squeeze(out, axis=dim)

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        g = _expand(g, (ctx.dim,), ctx.keepdim)
        with np.errstate(invalid="ignore"):  # an all −inf slice: NaN, as PyTorch
            return g * np.exp(a - out)


class LayerNorm(Function):
    """r = x̂·γ + β with x̂ = (x − μ)/σ, μ and σ² = mean((x − μ)²) + ε over ``dims`` (the last ones).

    Gradient (g = ∂L/∂r, ĝ = g·γ, means over ``dims``):
    ∂L/∂x = (ĝ − mean(ĝ) − x̂·mean(ĝ·x̂))/σ,  ∂L/∂γ = Σ g·x̂,  ∂L/∂β = Σ g (over the leading dims).
    One node instead of seven (mean, var, sub, add, sqrt, div, mul, add): speed, since the
    Transformer block calls it twice a layer and its backward reuses x̂ and σ.
    ``has_weight`` / ``has_bias`` say which of γ, β follow x among the inputs.
    """

    @staticmethod
    def forward(ctx, x, *affine, dims, eps, has_weight, has_bias):
        centred = x - x.mean(axis=dims, keepdims=True)
        sigma = np.sqrt(np.mean(centred * centred, axis=dims, keepdims=True) + eps)
        centred /= sigma  # x̂, in place
        weight = affine[0] if has_weight else None
        ctx.settings = (dims, has_weight, has_bias)
        ctx.save_for_backward(centred, sigma, weight)
        out = centred * weight if has_weight else centred.copy()
        if has_bias:
            out += affine[-1]
        return out

    @staticmethod
    def backward(ctx, g):
        x_hat, sigma, weight = ctx.saved_tensors
        dims, has_weight, has_bias = ctx.settings
        needs = ctx.needs_input_grad
        grads = []
        if needs[0]:
            g_hat = g * weight if has_weight else g.copy()
            correction = x_hat * np.mean(g_hat * x_hat, axis=dims, keepdims=True)
            g_hat -= np.mean(g_hat, axis=dims, keepdims=True)
            g_hat -= correction
            g_hat /= sigma
            grads.append(g_hat)
        else:
            grads.append(None)
        if has_weight:  # summed over the leading dims by backward's un-broadcasting
            grads.append(g * x_hat if needs[1] else None)
        if has_bias:
            grads.append(g if needs[-1] else None)
        return tuple(grads)


class _NormalisedAlongDim(Function):
    """r = f(a, dim) for a normalisation along one dim whose gradient needs only r (softmax,
    log-softmax): the op saves r and ``dim``; a subclass names f and writes its backward."""

    f = staticmethod(None)

    @staticmethod
    def forward(ctx, a, *, dim):
        out = type(ctx).f(a, dim)
        ctx.save_for_backward(out)
        ctx.dim = dim
        return out


class Softmax(_NormalisedAlongDim):
    """rᵢ = exp(aᵢ)/Σⱼ exp(aⱼ) along ``dim``;  vector-Jacobian product: ∂L/∂a = r ⊙ (g − Σⱼ gⱼrⱼ)."""

    f = staticmethod(stable_softmax)

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return r * (g - np.sum(g * r, axis=ctx.dim, keepdims=True))


class LogSoftmax(_NormalisedAlongDim):
    """rᵢ = aᵢ − log Σⱼ exp(aⱼ);  ∂L/∂a = g − softmax(a)·Σⱼ gⱼ."""

    f = staticmethod(stable_log_softmax)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g - np.exp(out) * np.sum(g, axis=ctx.dim, keepdims=True)

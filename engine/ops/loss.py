"""Fused, numerically stable loss primitives: cross-entropy, NLL, and binary cross-entropy.

Composing ``log(softmax(z))`` overflows for logits of 1e4 and costs several graph nodes; each
loss here is one node whose forward works in log space and whose backward is the closed form.

Cross-entropy in one formula. Write the per-sample loss as a weighted sum of log-probabilities,
ℓᵢ = −Σ_c A_ic · log p_ic with p = softmax(z). Then ∂ℓᵢ/∂z_ic = p_ic·Σ_c' A_ic' − A_ic, which for a
one-hot A is the familiar p − y. Class-index targets, probability targets, class weights, label
smoothing and ignored samples are all just different coefficient matrices A.
"""

import math

import numpy as np

from ..autograd import Function
from .elementwise import stable_sigmoid
from .reduce import stable_log_softmax

REDUCTIONS = ("mean", "sum", "none")


def _reduce(per_sample, reduction, denominator):
    """The mean of no samples (an empty batch, every target ignored, zero total weight) is NaN, as
    PyTorch: 0/0, without NumPy's warning."""
    if reduction == "none":
        return per_sample
    total = per_sample.sum()
    if reduction == "sum":
        return total
    return total / denominator if denominator else np.nan


def _reduction_grad(g, shape, reduction, denominator, dtype, valid=None):
    """dL/d(per-sample loss) for the chosen reduction, broadcastable to the per-sample ``shape``
    (a single value for 'mean' and 'sum': the caller's product with a full-shape array spreads it).

    A mean over zero total weight has the gradient g/0: NaN for the samples that count (weight 0),
    0 for ignored ones (``valid`` False), as PyTorch.
    """
    if reduction == "none":
        return g
    if reduction == "mean" and not denominator:
        nan = np.full(shape, np.nan, dtype=dtype)
        return nan if valid is None else np.where(valid, nan, dtype.type(0))
    scale = 1.0 if reduction == "sum" else 1.0 / denominator
    return np.asarray(g * scale, dtype=dtype)


def _weighted_sum(coef, log_p):
    """Σ_c A_ic·log p_ic, where a class with A = 0 contributes 0 even if log p = −inf (a masked
    logit) or NaN (an ignored sample's), not 0·(−inf) = NaN."""
    if math.isfinite(np.add.reduce(log_p, axis=None)):  # no ±inf, no NaN (the common case): no 0·inf
        return np.add.reduce(coef * log_p, axis=-1)
    with np.errstate(invalid="ignore"):
        total = np.sum(coef * log_p, axis=-1)
    bad = np.isnan(total)
    if bad.any():
        c = coef[bad]
        total[bad] = np.sum(c * np.where(c != 0, log_p[bad], 0), axis=-1)
    return total


class CrossEntropy(Function):
    """ℓᵢ = −Σ_c A_ic log softmax(zᵢ)_c, classes on the last axis;  ∂ℓᵢ/∂zᵢ = pᵢ·ΣA_i − A_i.

    ``coef`` (A) and ``denominator`` (the mean's divisor) are built by
    :func:`engine.functional.cross_entropy`, which also moves the class axis last.
    """

    @staticmethod
    def forward(ctx, z, *, coef, reduction, denominator, valid=None):
        log_p = stable_log_softmax(z, -1)
        per_sample = -_weighted_sum(coef, log_p)
        ctx.save_for_backward(log_p, coef)
        ctx.reduction, ctx.denominator, ctx.valid = reduction, denominator, valid
        ctx.sample_shape = per_sample.shape
        return np.asarray(_reduce(per_sample, reduction, denominator), dtype=z.dtype)

    @staticmethod
    def backward(ctx, g):
        log_p, coef = ctx.saved_tensors
        g_sample = _reduction_grad(g, ctx.sample_shape, ctx.reduction, ctx.denominator, log_p.dtype, ctx.valid)
        dz = np.exp(log_p) * np.add.reduce(coef, axis=-1, keepdims=True) - coef
        return dz * g_sample[..., None]


class NLLLoss(Function):
    """ℓᵢ = −Σ_c A_ic · x_ic for log-probabilities x (A one-hot times class weight);  ∂ℓᵢ/∂x = −A."""

    @staticmethod
    def forward(ctx, log_p, *, coef, reduction, denominator, valid=None):
        per_sample = -_weighted_sum(coef, log_p)
        ctx.save_for_backward(coef)
        ctx.reduction, ctx.denominator, ctx.valid = reduction, denominator, valid
        ctx.sample_shape = per_sample.shape
        return np.asarray(_reduce(per_sample, reduction, denominator), dtype=log_p.dtype)

    @staticmethod
    def backward(ctx, g):
        (coef,) = ctx.saved_tensors
        g_sample = _reduction_grad(g, ctx.sample_shape, ctx.reduction, ctx.denominator, coef.dtype, ctx.valid)
        return -coef * g_sample[..., None]


def _softplus_neg(z):
    """softplus(−z) = −log σ(z) = max(−z, 0) + log(1 + e^(−|z|)), finite for any z."""
    return np.maximum(-z, 0) + np.log1p(np.exp(-np.abs(z)))


class BCEWithLogits(Function):
    """ℓ = −w[p·y·log σ(z) + (1 − y)·log(1 − σ(z))] with pos_weight p, from logits z.

    Stable form: ℓ = w[(1 − y)·z + (1 + (p − 1)y)·softplus(−z)].
    ∂ℓ/∂z = w[(1 − y) − (1 + (p − 1)y)(1 − σ(z))]  (= w(σ(z) − y) when p = 1);
    ∂ℓ/∂y = w[−z + (p − 1)·softplus(−z)].
    """

    @staticmethod
    def forward(ctx, z, y, *, weight, pos_weight, reduction):
        sp = _softplus_neg(z)
        lw = 1.0 if pos_weight is None else 1.0 + (pos_weight - 1.0) * y
        per = (1.0 - y) * z + lw * sp
        if weight is not None:
            per = per * weight
        ctx.save_for_backward(z, y, sp)
        ctx.weight, ctx.pos_weight, ctx.reduction = weight, pos_weight, reduction
        ctx.shape = per.shape
        return np.asarray(_reduce(per, reduction, per.size), dtype=z.dtype)

    @staticmethod
    def backward(ctx, g):
        z, y, sp = ctx.saved_tensors
        g = _reduction_grad(g, ctx.shape, ctx.reduction, math.prod(ctx.shape), z.dtype)
        if ctx.weight is not None:
            g = g * ctx.weight
        pw = ctx.pos_weight
        need_z, need_y = ctx.needs_input_grad
        gz = gy = None
        if need_z:
            if pw is None:
                gz = g * (stable_sigmoid(z) - y)
            else:
                gz = g * ((1.0 - y) - (1.0 + (pw - 1.0) * y) * stable_sigmoid(-z))
        if need_y:
            gy = g * (-z if pw is None else -z + (pw - 1.0) * sp)
        return gz, gy


class BCE(Function):
    """ℓ = −w[y·log p + (1 − y)·log(1 − p)] on probabilities p, logs clamped at −100 (as PyTorch).

    ∂ℓ/∂p = w(p − y) / max(p(1 − p), 1e-12);  ∂ℓ/∂y = w[log(1 − p) − log p] (clamped logs).
    """

    @staticmethod
    def forward(ctx, p, y, *, weight, reduction):
        with np.errstate(divide="ignore"):
            log_p = np.maximum(np.log(p), -100.0)
            log_1mp = np.maximum(np.log1p(-p), -100.0)
        per = -(y * log_p + (1.0 - y) * log_1mp)
        if weight is not None:
            per = per * weight
        ctx.save_for_backward(p, y, log_p, log_1mp)
        ctx.weight, ctx.reduction, ctx.shape = weight, reduction, per.shape
        return np.asarray(_reduce(per, reduction, per.size), dtype=p.dtype)

    @staticmethod
    def backward(ctx, g):
        p, y, log_p, log_1mp = ctx.saved_tensors
        g = _reduction_grad(g, ctx.shape, ctx.reduction, math.prod(ctx.shape), p.dtype)
        if ctx.weight is not None:
            g = g * ctx.weight
        need_p, need_y = ctx.needs_input_grad
        gp = g * (p - y) / np.maximum(p * (1.0 - p), 1e-12) if need_p else None
        gy = g * (log_1mp - log_p) if need_y else None
        return gp, gy

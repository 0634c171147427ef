"""``engine.functional`` (import as ``F``): activations, losses and layers as functions.

Names, arguments and defaults follow ``torch.nn.functional``. Each function checks its inputs and
names itself in any error; the arithmetic lives in the primitives of :mod:`engine.ops` or is
composed from Tensor methods, so every gradient here comes from tested primitives.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import random as _random
from .ops import elementwise as ew
from .ops import loss as loss_ops
from .ops import movement as mv
from .ops import reduce as rd
from .ops.matmul import Linear
from .tensor import (
    Tensor,
    _floating,
    _no_bool,
    _promote_types,
    _to_dtype,
    as_tensor,
    where,
)

# ---------------------------------------------------------------- activations


# Activations of integer or bool tensors compute in float32, PyTorch's default dtype (PyTorch
# itself refuses most of them for integers; relu keeps the integer dtype, as PyTorch).


def relu(x) -> Tensor:
    """max(0, x)."""
    x = as_tensor(x)
    _no_bool(x, "relu")
    return ew.Relu.apply(x)


def leaky_relu(x, negative_slope: float = 0.01) -> Tensor:
    """x if x > 0 else negative_slope·x."""
    return ew.LeakyRelu.apply(_floating(as_tensor(x)), negative_slope=negative_slope)


def sigmoid(x) -> Tensor:
    """1 / (1 + e⁻ˣ), stable for any x."""
    return ew.Sigmoid.apply(_floating(as_tensor(x)))


def tanh(x) -> Tensor:
    return ew.Tanh.apply(_floating(as_tensor(x)))


def gelu(x, approximate: str = "none") -> Tensor:
    """x·Φ(x) (exact), or ½x(1 + tanh(√(2/π)(x + 0.044715x³))) with approximate='tanh'."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return ew.Gelu.apply(_floating(as_tensor(x)), approximate=approximate)


def silu(x) -> Tensor:
    """x·σ(x), also called Swish."""
    return ew.Silu.apply(_floating(as_tensor(x)))


def softplus(x, beta: float = 1.0) -> Tensor:
    """(1/β)·ln(1 + e^(βx)), a smooth ReLU; finite for x = ±1000."""
    if beta <= 0:
        raise ValueError(f"softplus: beta must be positive, got {beta}")
    return ew.Softplus.apply(_floating(as_tensor(x)), beta=float(beta))


def elu(x, alpha: float = 1.0) -> Tensor:
    """x if x > 0 else α(eˣ − 1)."""
    return ew.Elu.apply(_floating(as_tensor(x)), alpha=float(alpha))


def _softmax_dim(x: Tensor, dim, op: str) -> int:
    """``dim``, or PyTorch's legacy implicit choice (0 for 0-, 1- and 3-d inputs, else 1) with its
    deprecation warning: name the dim."""
    if dim is not None:
        return dim
    warnings.warn(
        f"Implicit dimension choice for {op} has been deprecated. Change the call to include dim=X as an argument.",
        UserWarning,
        stacklevel=3,
    )
    return 0 if x.ndim in (0, 1, 3) else 1


def softmax(x, dim=None) -> Tensor:
    """e^(xᵢ) / Σⱼ e^(xⱼ) along ``dim`` (stable: the max is subtracted first).

    Without ``dim``: PyTorch's implicit choice and warning (dim 1 of a 2-d input, but dim 0 of a
    3-d one); always pass ``dim``.
    """
    x = as_tensor(x)
    return x.softmax(_softmax_dim(x, dim, "softmax"))


def log_softmax(x, dim=None) -> Tensor:
    """xᵢ − log Σⱼ e^(xⱼ) along ``dim`` (without ``dim``: as :func:`softmax`)."""
    x = as_tensor(x)
    return x.log_softmax(_softmax_dim(x, dim, "log_softmax"))


def logsigmoid(x) -> Tensor:
    """log σ(x) = −softplus(−x), stable."""
    return -softplus(-_floating(as_tensor(x)))


def swiglu(x, w_gate, w_up) -> Tensor:
    """SiLU(x W_gate) ⊙ (x W_up), the gated MLP of LLaMA; W_gate and W_up are (d_in, d_hidden)."""
    x, w_gate, w_up = as_tensor(x), as_tensor(w_gate), as_tensor(w_up)
    if w_gate.shape != w_up.shape:
        raise ValueError(f"swiglu: w_gate {w_gate.shape} and w_up {w_up.shape} must have the same shape")
    return silu(x @ w_gate) * (x @ w_up)


# ---------------------------------------------------------------- losses


def _check_reduction(reduction, op, allowed=loss_ops.REDUCTIONS):
    if reduction not in allowed:
        raise ValueError(f"{op}: reduction must be one of {allowed}, got {reduction!r}")


def _input_target(input, target, op, dtype_from: str = "both"):
    """The pair checked and brought to one dtype. PyTorch has no single rule for a float32 input
    with a float64 target, so each loss names its own: ``"both"`` (the wider: MSE, L1, smooth L1,
    KL), ``"input"`` (Huber), ``"target"`` (BCE with logits), ``"same"`` (BCE: refused)."""
    input, target = as_tensor(input), as_tensor(target)
    if input.shape != target.shape:
        raise ValueError(
            f"{op}: input shape {input.shape} and target shape {target.shape} differ; they must "
            "match (reshape or squeeze one of them)"
        )
    if input.dtype.kind != "f":
        raise TypeError(f"{op}: input must be floating point, got {input.dtype}")
    if target.dtype == input.dtype:
        return input, target
    if dtype_from == "same" and target.dtype.kind == "f":
        raise RuntimeError(
            f"{op}: input is {input.dtype} but target is {target.dtype}; they must have the same "
            f"dtype (as PyTorch): convert one, e.g. target.to({str(input.dtype)!r})"
        )
    dtype = input.dtype
    if target.dtype.kind == "f" and dtype_from != "input":
        dtype = target.dtype if dtype_from == "target" else _promote_types(input.dtype, target.dtype)
    return _to_dtype(input, dtype), _to_dtype(target, dtype)


def _apply_reduction(per_element: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return per_element.mean()
    if reduction == "sum":
        return per_element.sum()
    return per_element


def mse_loss(input, target, reduction: str = "mean") -> Tensor:
    """(x − y)², averaged (or summed) over all elements."""
    _check_reduction(reduction, "mse_loss")
    input, target = _input_target(input, target, "mse_loss")
    return _apply_reduction((input - target) ** 2, reduction)


def _residual(op: str, input, target, reduction: str, delta=None, dtype_from: str = "both") -> Tensor:
    """e = input − target, after checking the reduction, δ > 0 (when the loss has one) and the pair."""
    _check_reduction(reduction, op)
    if delta is not None and delta <= 0:
        raise ValueError(f"{op}: delta must be positive, got {delta}")
    input, target = _input_target(input, target, op, dtype_from)
    return input - target


def l1_loss(input, target, reduction: str = "mean") -> Tensor:
    """|x − y|, averaged (or summed); its gradient is sign(x − y)."""
    e = _residual("l1_loss", input, target, reduction)
    return _apply_reduction(e.abs(), reduction)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """½e² if |e| ≤ δ else δ(|e| − ½δ), e = x − y: quadratic near 0, linear (robust) beyond δ."""
    e = _residual("huber_loss", input, target, reduction, delta, dtype_from="input")
    a = e.abs()
    per = where(a.data <= delta, 0.5 * e * e, delta * (a - 0.5 * delta))
    return _apply_reduction(per, reduction)


def smooth_l1_loss(input, target, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """½e²/β if |e| < β else |e| − ½β, e = x − y: Huber divided by β (β = 0 is L1)."""
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    if beta == 0:
        return l1_loss(input, target, reduction)
    e = _residual("smooth_l1_loss", input, target, reduction)
    a = e.abs()
    per = where(a.data < beta, (0.5 / beta) * e * e, a - 0.5 * beta)
    return _apply_reduction(per, reduction)


def pseudo_huber_loss(input, target, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """δ²(√(1 + (e/δ)²) − 1): a smooth Huber; ∂/∂x = e / √(1 + (e/δ)²)."""
    e = _residual("pseudo_huber_loss", input, target, reduction, delta)
    per = delta * delta * (((e / delta) ** 2 + 1.0).sqrt() - 1.0)
    return _apply_reduction(per, reduction)


def _optional_array(x, dtype, op, name, shape=None):
    if x is None:
        return None
    arr = np.array(x.data if isinstance(x, Tensor) else x, dtype=dtype)  # a copy: saved for backward
    if shape is not None:
        try:
            np.broadcast_shapes(arr.shape, shape)
        except ValueError:
            raise ValueError(f"{op}: {name} of shape {arr.shape} does not broadcast to {shape}") from None
    return arr


def binary_cross_entropy(input, target, weight=None, reduction: str = "mean") -> Tensor:
    """−[y·log p + (1 − y)·log(1 − p)] on probabilities p ∈ [0, 1] (logs clamped at −100).

    Prefer :func:`binary_cross_entropy_with_logits`: it takes the logit and stays exact.
    """
    _check_reduction(reduction, "binary_cross_entropy")
    input, target = _input_target(input, target, "binary_cross_entropy", "same")
    p = input.data
    if np.any(~((p >= 0) & (p <= 1))):
        bad = p[~((p >= 0) & (p <= 1))].flat[0]
        raise ValueError(
            f"binary_cross_entropy: input must be probabilities in [0, 1], found {bad}; pass "
            "logits to binary_cross_entropy_with_logits instead"
        )
    w = _optional_array(weight, input.dtype, "binary_cross_entropy", "weight", input.shape)
    return loss_ops.BCE.apply(input, target, weight=w, reduction=reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction: str = "mean", pos_weight=None) -> Tensor:
    """BCE of σ(z) computed from the logit z in one stable step; ∂L/∂z = σ(z) − y."""
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    input, target = _input_target(input, target, "binary_cross_entropy_with_logits", "target")
    op = "binary_cross_entropy_with_logits"
    w = _optional_array(weight, input.dtype, op, "weight", input.shape)
    pw = _optional_array(pos_weight, input.dtype, op, "pos_weight", input.shape)
    return loss_ops.BCEWithLogits.apply(input, target, weight=w, pos_weight=pw, reduction=reduction)


def _class_last(input: Tensor, op: str) -> Tensor:
    """Logits with the class axis (1 for N×C×d…, 0 for a single C-vector) moved last."""
    if input.ndim == 0:
        raise ValueError(f"{op}: input must have a class dimension, got a scalar")
    if input.ndim > 2:
        return input.permute(0, *range(2, input.ndim), 1)
    return input


def _index_coefficients(target, n_classes, sample_shape, weight, ignore_index, smoothing, dtype, op):
    """Coefficient matrix A and mean divisor for class-index targets (see :mod:`engine.ops.loss`)."""
    t = np.asarray(target)
    if t.shape != sample_shape:
        raise ValueError(
            f"{op}: target of class indices has shape {t.shape} but the input implies {sample_shape} "
            "(the input's shape without its class dimension)"
        )
    valid = t != ignore_index
    all_valid = bool(np.logical_and.reduce(valid, axis=None))  # (the ufuncs: no Python wrapper)
    if all_valid:  # the common case: two cheap range checks instead of a masked search
        bad = (np.minimum.reduce(t, axis=None) < 0 or np.maximum.reduce(t, axis=None) >= n_classes) if t.size else False
    else:
        bad = bool((valid & ((t < 0) | (t >= n_classes))).any())
    if bad:
        wrong = t[valid & ((t < 0) | (t >= n_classes))].flat[0]
        raise IndexError(f"{op}: target class {wrong} is out of range for {n_classes} classes (0 to {n_classes - 1})")
    safe_t = t if all_valid else np.where(valid, t, 0)
    coef = (safe_t[..., None] == np.arange(n_classes)).astype(dtype)  # one-hot rows
    if weight is None and all_valid and not smoothing:
        return coef, float(t.size), None
    w = np.ones(n_classes, dtype=dtype) if weight is None else weight
    w_y = w[safe_t] * valid
    coef *= ((1.0 - smoothing) * w_y)[..., None]
    if smoothing:
        coef += (smoothing / n_classes) * w * valid[..., None]
    return coef, float(w_y.sum()), (None if all_valid else valid)


def _class_weight(weight, n_classes, dtype, op):
    if weight is None:
        return None
    w = np.array(weight.data if isinstance(weight, Tensor) else weight, dtype=dtype)
    if w.shape != (n_classes,):
        raise ValueError(f"{op}: weight must have one entry per class ({n_classes},), got {w.shape}")
    return w


def cross_entropy(
    input, target, weight=None, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0
) -> Tensor:
    """−log softmax(z)_y from logits z (classes on dim 1), fused and stable; ∂L/∂z = softmax(z) − y.

    ``target`` holds class indices (integers, shape of the input without dim 1) or class
    probabilities (floats, the input's shape). ``label_smoothing`` ε mixes the target with the
    uniform distribution: (1 − ε)·y + ε/C.
    """
    op = "cross_entropy"
    _check_reduction(reduction, op)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    input = as_tensor(input)
    if input.dtype.kind != "f":
        raise TypeError(f"{op}: logits must be floating point, got {input.dtype}")
    z = _class_last(input, op)
    n_classes = z.shape[-1]
    sample_shape = z.shape[:-1]
    w = _class_weight(weight, n_classes, z.dtype, op)
    t = target.data if isinstance(target, Tensor) else np.asarray(target)
    if t.dtype.kind in "iub":
        coef, denominator, valid = _index_coefficients(
            t, n_classes, sample_shape, w, ignore_index, label_smoothing, z.dtype, op
        )
    elif t.dtype.kind == "f":
        if t.shape != input.shape:
            raise ValueError(f"{op}: probability targets must have the input's shape {input.shape}, got {t.shape}")
        if isinstance(target, Tensor) and target.requires_grad:
            # a target that learns (rare): composed from primitives so that it gets its gradient
            # ∂ℓ/∂q = −w·log softmax(z); the fused op below treats the target as a constant
            q = target if input.ndim <= 2 else _class_last(target, op)
            q = q * (1.0 - label_smoothing) + label_smoothing / n_classes
            if w is not None:
                q = q * Tensor._wrap(w)
            return _apply_reduction(-(q * z.log_softmax(-1)).sum(-1), reduction)
        if t.dtype != z.dtype:  # float32 logits with float64 probabilities: float64, as PyTorch
            z = _to_dtype(z, _promote_types(z.dtype, t.dtype))
            w = None if w is None else w.astype(z.dtype)
        q = t if input.ndim <= 2 else np.moveaxis(t, 1, -1)
        q = q.astype(z.dtype) * (1.0 - label_smoothing) + label_smoothing / n_classes
        coef = q if w is None else q * w
        denominator, valid = float(np.prod(sample_shape)), None  # an empty batch: NaN, as PyTorch
    else:
        raise TypeError(f"{op}: target must hold class indices or probabilities, got dtype {t.dtype}")
    return loss_ops.CrossEntropy.apply(z, coef=coef, reduction=reduction, denominator=denominator, valid=valid)


def nll_loss(input, target, weight=None, ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """−x_y for log-probabilities x (e.g. from log_softmax), averaged over the targets' weights."""
    op = "nll_loss"
    _check_reduction(reduction, op)
    x = _class_last(as_tensor(input), op)
    n_classes = x.shape[-1]
    w = _class_weight(weight, n_classes, x.dtype, op)
    t = np.asarray(target.data if isinstance(target, Tensor) else target)
    if t.dtype.kind not in "iu":
        raise TypeError(f"{op}: target must hold integer class indices, got {t.dtype}")
    coef, denominator, valid = _index_coefficients(t, n_classes, x.shape[:-1], w, ignore_index, 0.0, x.dtype, op)
    return loss_ops.NLLLoss.apply(x, coef=coef, reduction=reduction, denominator=denominator, valid=valid)


def kl_div(input, target, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL(p ‖ q) = Σ p·(log p − log q), with ``input`` = log q and ``target`` = p (or log p).

    Terms with p = 0 contribute 0. 'batchmean' divides the sum by the batch size (input.shape[0]),
    which is the true KL per sample; 'mean' (the default, as PyTorch) divides by the number of
    elements, which is not the KL: pass reduction='batchmean'.
    """
    op = "kl_div"
    _check_reduction(reduction, op, ("batchmean", "mean", "sum", "none"))
    input, target = _input_target(input, target, op)
    if log_target:
        per = target.exp() * (target - input)
    else:
        positive = target.data > 0
        if np.any(target.data < 0):
            raise ValueError(
                f"{op}: target probabilities must be ≥ 0 (found {target.data.min()}); pass log_target=True for log-probabilities"
            )
        safe = where(positive, target, 1.0)
        per = where(positive, target * (safe.log() - input), 0.0)
    if reduction == "batchmean":
        return per.sum() / (input.shape[0] if input.ndim else 1)
    return _apply_reduction(per, reduction)


# ---------------------------------------------------------------- layers as functions


def integer_input_error(op: str, x: Tensor, weight: Tensor):
    """Refuse an integer or bool input to a layer, as PyTorch (NumPy would silently compute)."""
    raise TypeError(
        f"{op}: the input is {x.data.dtype} but the weight is {weight.data.dtype}; a layer needs a "
        "floating-point input (as PyTorch): convert it first, e.g. x.float()"
    )


def linear(x, weight, bias=None) -> Tensor:
    """x Wᵀ + b with W of shape (out_features, in_features), as ``torch.nn.functional.linear``."""
    x, weight = as_tensor(x), as_tensor(weight)
    if weight.ndim != 2 or x.ndim == 0 or x.shape[-1] != weight.shape[1]:
        raise ValueError(
            f"linear: input of shape {x.shape} needs a last dim equal to the weight's in_features; "
            f"weight has shape {weight.shape} (out_features, in_features)"
        )
    if x.data.dtype.kind not in "fc":
        integer_input_error("linear", x, weight)
    if bias is None:
        return Linear.apply(x, weight)
    bias = as_tensor(bias)
    if bias.shape != (weight.shape[0],):
        raise ValueError(f"linear: bias shape {bias.shape} must be ({weight.shape[0]},)")
    return Linear.apply(x, weight, bias)


def dropout(x, p: float = 0.5, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability p, scale the rest by 1/(1 − p).

    The expectation is unchanged, so evaluation (``training=False``) is the identity.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: probability p must be in [0, 1], got {p}")
    x = as_tensor(x)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    keep = _random.generator().random(x.shape) >= p
    return x * Tensor._wrap((keep / (1.0 - p)).astype(x.dtype))


def one_hot(idx, num_classes: int = -1) -> Tensor:
    """Integer indices → a 0/1 int64 tensor with a new last axis of length ``num_classes``."""
    i = np.asarray(idx.data if isinstance(idx, Tensor) else idx)
    if i.dtype.kind not in "iu":
        raise TypeError(f"one_hot: indices must be integers, got {i.dtype}")
    if num_classes == -1:
        num_classes = int(i.max()) + 1 if i.size else 0
    if i.size and (i.min() < 0 or i.max() >= num_classes):
        raise IndexError(
            f"one_hot: index {i.max() if i.max() >= num_classes else i.min()} is out of range for {num_classes} classes"
        )
    return Tensor._wrap((i[..., None] == np.arange(num_classes)).astype(np.int64))


def embedding(idx, weight, padding_idx=None) -> Tensor:
    """Rows of ``weight`` picked by integer ``idx``; repeated indices accumulate their gradients.
    The row ``padding_idx`` (if given) gets no gradient, as PyTorch."""
    weight = as_tensor(weight)
    i = np.array(idx.data if isinstance(idx, Tensor) else idx)  # a copy: backward scatters by it
    if i.dtype.kind not in "iu":
        raise TypeError(f"embedding: indices must be integers, got {i.dtype}")
    if i.size and (i.min() < 0 or i.max() >= weight.shape[0]):
        raise IndexError(
            f"embedding: index {i.max() if i.max() >= weight.shape[0] else i.min()} is out of range for {weight.shape[0]} embeddings"
        )
    out = mv.Index.apply(weight, index=i)
    if padding_idx is None:
        return out
    n = weight.shape[0]
    if not -n <= padding_idx < n:
        raise ValueError(f"embedding: padding_idx {padding_idx} is out of range for {n} embeddings")
    padded = (i == padding_idx % n)[..., None]
    return where(padded, Tensor._wrap(out.data), out) if padded.any() else out


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """(x − μ)/√(σ² + ε)·γ + β with μ, σ² over the last len(normalized_shape) dims of each sample."""
    x = as_tensor(x)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if x.shape[x.ndim - len(shape) :] != shape:
        raise ValueError(f"layer_norm: input shape {x.shape} does not end with normalized_shape {shape}")
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    affine = tuple(as_tensor(t) for t in (weight, bias) if t is not None)
    return rd.LayerNorm.apply(x, *affine, dims=dims, eps=eps, has_weight=weight is not None, has_bias=bias is not None)


def batch_norm(
    x,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """(x − μ_B)/√(σ²_B + ε)·γ + β over every dim but the channel dim 1.

    Training uses the batch's statistics and updates the running ones in place:
    running ← (1 − momentum)·running + momentum·batch (the variance unbiased, as PyTorch).
    Evaluation uses the running statistics.
    """
    x = as_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"batch_norm: input needs a batch and a channel dim, got shape {x.shape}")
    dims = (0,) + tuple(range(2, x.ndim))
    view = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if training:
        count = x.data.size // x.shape[1]
        if count <= 1:
            raise ValueError(f"batch_norm: training needs more than 1 value per channel, got input shape {x.shape}")
        mu = x.mean(dim=dims, keepdim=True)
        var = x.var(dim=dims, keepdim=True, correction=0)
        if running_mean is not None:
            rm = running_mean.data if isinstance(running_mean, Tensor) else running_mean
            rm *= 1 - momentum
            rm += momentum * mu.data.reshape(-1)
        if running_var is not None:
            rv = running_var.data if isinstance(running_var, Tensor) else running_var
            rv *= 1 - momentum
            rv += momentum * var.data.reshape(-1) * count / (count - 1)
        out = (x - mu) / (var + eps).sqrt()
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: evaluation mode needs running_mean and running_var")
        rm = np.asarray(running_mean.data if isinstance(running_mean, Tensor) else running_mean)
        rv = np.asarray(running_var.data if isinstance(running_var, Tensor) else running_var)
        out = (x - rm.reshape(view).astype(x.dtype)) / np.sqrt(rv.reshape(view) + eps).astype(x.dtype)
    if weight is not None:
        out = out * as_tensor(weight).reshape(view)
    if bias is not None:
        out = out + as_tensor(bias).reshape(view)
    return out


def pad(x, pad, mode: str = "constant", value: float = 0.0) -> Tensor:
    """Constant padding; ``pad`` lists (before, after) pairs starting from the LAST dim, as PyTorch."""
    x = as_tensor(x)
    if mode != "constant":
        raise NotImplementedError(f"pad: only mode='constant' is implemented, got {mode!r}")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(f"pad: needs an even number of values, at most 2 per dim; got {pad} for shape {x.shape}")
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    for (lo, hi), n in zip(widths, x.shape):
        if n + lo + hi < 0 or -lo > n or -hi > n:
            raise ValueError(f"pad: padding {pad} crops more than the size of shape {x.shape}")
    return mv.Pad.apply(x, widths=tuple(widths), value=value)


# Convolution, pooling and attention live beside their primitives; they are re-exported here.
_ELSEWHERE = {
    "conv2d": "engine.ops.conv",
    "conv_transpose2d": "engine.ops.conv",
    "max_pool2d": "engine.ops.conv",
    "avg_pool2d": "engine.ops.conv",
    "scaled_dot_product_attention": "engine.attention",
}


def __getattr__(name):
    if name in _ELSEWHERE:
        import importlib

        return getattr(importlib.import_module(_ELSEWHERE[name]), name)
    raise AttributeError(f"module 'engine.functional' has no attribute {name!r}")

"""Gradient clipping and parameter averaging, as ``torch.nn.utils`` (plus the DQN soft update).

All of them act in place on the arrays of ``.grad`` or ``.data`` and build no graph.
"""

from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor


def _param_list(parameters, op: str) -> list:
    if isinstance(parameters, Tensor):
        return [parameters]
    try:
        params = list(parameters)
    except TypeError:
        raise TypeError(f"{op}: expected a Tensor or an iterable of Tensors, got {type(parameters).__name__}") from None
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(f"{op}: expected Tensors, got a {type(p).__name__}")
    return params


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Rescale all gradients together so that their global norm is at most ``max_norm``.

    total = (Σ over every gradient element |g|^p)^(1/p); for p = 2 that is √(Σ g²), the length of
    all gradients stacked into one vector (p = inf: max |g|). When total > max_norm each gradient is
    multiplied by max_norm/(total + 1e-6) (as PyTorch: the direction is kept, the step shortened).
    Returns the total norm *before* clipping, as a 0-d Tensor. Parameters without a gradient are
    ignored.
    """
    params = _param_list(parameters, "clip_grad_norm_")
    if max_norm < 0:
        raise ValueError(f"clip_grad_norm_: max_norm must be non-negative, got {max_norm}")
    norm_type = float(norm_type)
    if norm_type <= 0:
        raise ValueError(f"clip_grad_norm_: norm_type must be positive or inf, got {norm_type}")
    grads = [p.grad.data for p in params if p.grad is not None]
    if not grads:
        return Tensor._wrap(np.asarray(0.0, dtype=np.float32))
    dtype = np.result_type(*[g.dtype for g in grads])
    if math.isinf(norm_type):  # np.max, not max(): a NaN in any gradient makes the norm NaN
        total = float(np.max([np.max(np.abs(g)) if g.size else 0.0 for g in grads]))
    elif norm_type == 2.0:
        # the norm of the per-parameter norms equals the norm of everything stacked together
        total = math.sqrt(sum(float(np.dot(g.ravel(), g.ravel())) for g in grads))
    else:
        total = sum(float(np.sum(np.abs(g) ** norm_type)) for g in grads) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is {total}; "
            "set error_if_nonfinite=False to clip anyway"
        )
    coef = max_norm / (total + 1e-6)
    if not coef < 1.0 and not math.isnan(coef):
        return Tensor._wrap(np.asarray(total, dtype=dtype))
    # scaled in place (a reference to .grad sees it, as PyTorch); a NaN or infinite norm makes
    # every gradient NaN, as PyTorch (min(coef, 1) keeps NaN), rather than leaving them unclipped
    for p in params:
        if p.grad is not None:
            g = p.grad.data
            if g.flags.writeable:
                g *= np.asarray(coef, dtype=g.dtype)
            else:
                p.grad.data = g * np.asarray(coef, dtype=g.dtype)
    return Tensor._wrap(np.asarray(total, dtype=dtype))


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient element into [−clip_value, clip_value]."""
    params = _param_list(parameters, "clip_grad_value_")
    if clip_value < 0:
        raise ValueError(f"clip_grad_value_: clip_value must be non-negative, got {clip_value}")
    for p in params:
        if p.grad is not None:
            np.clip(p.grad.data, -clip_value, clip_value, out=p.grad.data)


def soft_update(target, source, tau: float) -> None:
    """Polyak averaging, the DQN/DDPG target network update: θ_target ← τ·θ_source + (1 − τ)·θ_target.

    ``target`` and ``source`` are Modules of the same architecture (or matching iterables of
    parameters); τ = 1 copies the source, τ = 0 leaves the target unchanged.
    """
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"soft_update: tau must be in [0, 1], got {tau}")
    t_params = list(target.parameters()) if hasattr(target, "parameters") else _param_list(target, "soft_update")
    s_params = list(source.parameters()) if hasattr(source, "parameters") else _param_list(source, "soft_update")
    if len(t_params) != len(s_params):
        raise ValueError(
            f"soft_update: target has {len(t_params)} parameters but source has {len(s_params)}; "
            "they must be the same architecture"
        )
    for i, (t, s) in enumerate(zip(t_params, s_params)):
        if t.shape != s.shape:
            raise ValueError(f"soft_update: parameter {i} has shape {t.shape} in target but {s.shape} in source")
    for t, s in zip(t_params, s_params):
        t.data *= 1.0 - tau
        t.data += tau * s.data
        t._bump_version()


def parameters_to_vector(parameters) -> Tensor:
    """All parameters flattened and concatenated into one 1-D Tensor (a copy)."""
    params = _param_list(parameters, "parameters_to_vector")
    return Tensor._wrap(np.concatenate([p.data.ravel() for p in params]) if params else np.zeros(0, np.float32))


def vector_to_parameters(vec, parameters) -> None:
    """Copy consecutive slices of ``vec`` back into the parameters, in place."""
    params = _param_list(parameters, "vector_to_parameters")
    v = np.asarray(vec.data if isinstance(vec, Tensor) else vec).ravel()
    total = sum(p.data.size for p in params)
    if v.size != total:
        raise ValueError(f"vector_to_parameters: vector has {v.size} elements, the parameters need {total}")
    offset = 0
    for p in params:
        n = p.data.size
        p.data[...] = v[offset : offset + n].reshape(p.shape)
        p._bump_version()
        offset += n

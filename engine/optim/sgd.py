"""Stochastic gradient descent with momentum, Nesterov momentum and L2 weight decay (``torch.optim.SGD``)."""

from __future__ import annotations

import numpy as np

from .optimizer import Optimizer, hyperparameters


class SGD(Optimizer):
    """θ ← θ − η·d, where, with g = ∇L (negated when ``maximize``):

        g ← g + λθ                                   (weight_decay λ, coupled L2)
        b ← g at the first step, then b ← μ·b + (1 − τ)·g   (momentum μ, dampening τ)
        d = g + μ·b  (nesterov)   or   d = b  (momentum)   or   d = g  (μ = 0)

    Exactly PyTorch's update (its momentum buffer starts at the first gradient, undampened).
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
    ):
        super().__init__(params, hyperparameters(locals()))

    def _check_hyperparameters(self, group: dict) -> None:
        super()._check_hyperparameters(group)
        if not group["momentum"] >= 0:
            raise ValueError(f"SGD: invalid momentum={group['momentum']!r} (must be >= 0)")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(
                f"SGD: Nesterov momentum requires momentum > 0 and dampening = 0, got "
                f"momentum={group['momentum']}, dampening={group['dampening']}"
            )

    def _update(self, group, p, grad, state) -> None:
        g = -grad if group["maximize"] else grad
        wd, mu = group["weight_decay"], group["momentum"]
        if wd != 0:
            g = g + wd * p.data
        if mu != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = np.array(g, dtype=p.data.dtype, copy=True)
            else:
                buf *= mu
                buf += (1 - group["dampening"]) * g
            g = g + mu * buf if group["nesterov"] else buf
        p.data -= group["lr"] * g

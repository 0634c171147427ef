"""RMSprop (``torch.optim.RMSprop``): divide each gradient by a running RMS of its recent values."""

from __future__ import annotations

import numpy as np

from .optimizer import Optimizer, hyperparameters


class RMSprop(Optimizer):
    """With g = ∇L (+ λθ for weight_decay λ), decay α and step size η:

        v ← α·v + (1 − α)·g²                                    (running mean square)
        centered:  ḡ ← α·ḡ + (1 − α)·g,  s = √(v − ḡ²) + ε      (running variance instead)
        otherwise: s = √v + ε
        momentum μ > 0:  b ← μ·b + g/s,  θ ← θ − η·b;   else  θ ← θ − η·g/s

    Note ε is added *outside* the square root, as PyTorch (Keras adds it inside).
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        *,
        maximize: bool = False,
    ):
        super().__init__(params, hyperparameters(locals()))

    def _check_hyperparameters(self, group: dict) -> None:
        super()._check_hyperparameters(group)
        for key in ("alpha", "eps", "momentum"):
            if not group[key] >= 0:
                raise ValueError(f"RMSprop: invalid {key}={group[key]!r} (must be >= 0)")

    def _update(self, group, p, grad, state) -> None:
        if not state:
            state["step"] = 0
            state["square_avg"] = np.zeros_like(p.data)
            if group["momentum"] > 0:
                state["momentum_buffer"] = np.zeros_like(p.data)
            if group["centered"]:
                state["grad_avg"] = np.zeros_like(p.data)
        state["step"] += 1
        g = -grad if group["maximize"] else grad
        alpha = group["alpha"]
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * p.data
        square_avg = state["square_avg"]
        square_avg *= alpha
        square_avg += (1 - alpha) * (g * g)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg += (1 - alpha) * (g - grad_avg)
            # v − ḡ² ≥ 0 in exact arithmetic; clamp the rounding so the root is never NaN
            avg = np.sqrt(np.maximum(square_avg - grad_avg * grad_avg, 0))
        else:
            avg = np.sqrt(square_avg)
        avg += group["eps"]
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf *= group["momentum"]
            buf += g / avg
            p.data -= group["lr"] * buf
        else:
            p.data -= group["lr"] * (g / avg)

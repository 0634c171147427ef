"""Loss modules, as ``torch.nn``: each holds its options and calls its :mod:`engine.functional` form.

    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    loss = criterion(logits, targets)        # F.cross_entropy(logits, targets, label_smoothing=0.1)

The formulas and gradients live with the functions (and their primitives in ``engine.ops.loss``).
"""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CrossEntropyLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "MSELoss",
    "NLLLoss",
    "SmoothL1Loss",
]


class _Loss(Module):
    """``forward(input, target)`` is ``function(input, target, **options)``; options as the function's."""

    function = None

    def __init__(self, **options):
        super().__init__()
        self._settings = options  # checked by the function at each call, as PyTorch

    def __getattr__(self, name):  # criterion.reduction, criterion.label_smoothing, ... as PyTorch
        settings = self.__dict__.get("_settings", {})
        if name in settings:
            return settings[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    def forward(self, input, target):
        return type(self).function(input, target, **self._settings)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self._settings.items() if k != "weight" and k != "pos_weight")


class MSELoss(_Loss):
    """Mean squared error (x − y)², as ``torch.nn.MSELoss(reduction='mean')``."""

    function = staticmethod(F.mse_loss)

    def __init__(self, reduction: str = "mean"):
        super().__init__(reduction=reduction)


class L1Loss(_Loss):
    """Mean absolute error |x − y|, as ``torch.nn.L1Loss``."""

    function = staticmethod(F.l1_loss)

    def __init__(self, reduction: str = "mean"):
        super().__init__(reduction=reduction)


class HuberLoss(_Loss):
    """½e² for |e| ≤ δ, δ(|e| − ½δ) beyond, as ``torch.nn.HuberLoss(reduction, delta)``."""

    function = staticmethod(F.huber_loss)

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction, delta=delta)


class SmoothL1Loss(_Loss):
    """Huber divided by β, as ``torch.nn.SmoothL1Loss(reduction, beta)``."""

    function = staticmethod(F.smooth_l1_loss)

    def __init__(self, reduction: str = "mean", beta: float = 1.0):
        super().__init__(reduction=reduction, beta=beta)


class BCELoss(_Loss):
    """Binary cross-entropy on probabilities, as ``torch.nn.BCELoss(weight, reduction)``."""

    function = staticmethod(F.binary_cross_entropy)

    def __init__(self, weight=None, reduction: str = "mean"):
        super().__init__(weight=weight, reduction=reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy on logits (stable), as ``torch.nn.BCEWithLogitsLoss(weight, reduction, pos_weight)``."""

    function = staticmethod(F.binary_cross_entropy_with_logits)

    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None):
        super().__init__(weight=weight, reduction=reduction, pos_weight=pos_weight)


class CrossEntropyLoss(_Loss):
    """Softmax cross-entropy on logits, as ``torch.nn.CrossEntropyLoss(weight, ignore_index,
    reduction, label_smoothing)``: targets are class indices or class probabilities."""

    function = staticmethod(F.cross_entropy)

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight=weight, ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing)


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities, as ``torch.nn.NLLLoss(weight, ignore_index, reduction)``."""

    function = staticmethod(F.nll_loss)

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(weight=weight, ignore_index=ignore_index, reduction=reduction)


class KLDivLoss(_Loss):
    """KL(target ‖ input) with ``input`` log-probabilities, as ``torch.nn.KLDivLoss(reduction,
    log_target)``; reduction='batchmean' gives the true KL per sample."""

    function = staticmethod(F.kl_div)

    def __init__(self, reduction: str = "mean", log_target: bool = False):
        super().__init__(reduction=reduction, log_target=log_target)

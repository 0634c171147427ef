"""Learning-rate schedules, as ``torch.optim.lr_scheduler``, with PyTorch's exact values.

A scheduler rewrites ``group["lr"]`` of its optimizer's parameter groups each time ``step()`` is
called (once per epoch, or once per batch for OneCycleLR); ``get_last_lr()`` returns the current
values. Construction already applies step 0. The chainable schedulers compute the new rate from the
*current* one (so several can be combined), which is why CosineAnnealingLR uses PyTorch's
recursive form; their closed forms are given in the docstrings.

:func:`schedule_values` runs a scheduler on a throw-away optimizer and returns its rates as an
array, for plots.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

import numpy as np

from .._checks import positive_int
from .optimizer import Optimizer

__all__ = [
    "LRScheduler",
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "PolynomialLR",
    "CosineAnnealingLR",
    "SequentialLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
    "OneCycleLR",
    "warmup_cosine",
    "schedule_values",
]


def _lrs(optimizer) -> list:
    return [group["lr"] for group in optimizer.param_groups]


class LRScheduler:
    """Base class. Subclasses define ``get_lr()`` (the rates for ``self.last_epoch``, usually from
    the current ``group["lr"]``) and may define ``_get_closed_form_lr()``."""

    _is_initial = False  # True only during the step that construction performs

    def __init__(self, optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected an engine Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"{type(self).__name__}: param_groups[{i}] has no 'initial_lr'; resuming with "
                        f"last_epoch={last_epoch} needs the optimizer state of the run being resumed"
                    )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list:  # pragma: no cover - abstract
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to ``epoch``, using the closed form when there is one)."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 "
                "and later (and in the engine), you should call them in the opposite order: "
                "`optimizer.step()` before `lr_scheduler.step()`. Failure to do this will result in "
                "skipping the first value of the learning rate schedule.",
                UserWarning,
                stacklevel=2,
            )
        self._step_count += 1
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = _lrs(self.optimizer)

    def get_last_lr(self) -> list:
        """The learning rate of each parameter group after the latest ``step()``."""
        return list(self._last_lr)

    _not_saved = ("optimizer",)

    def state_dict(self) -> dict:
        """Every attribute except the optimizer (and functions), as PyTorch; ``engine.save`` can store it."""
        return {k: v for k, v in self.__dict__.items() if k not in self._not_saved}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(last_epoch={self.last_epoch}, last_lr={self._last_lr})"


def _per_group(value, optimizer, name: str) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} has {len(value)} values but the optimizer has {len(optimizer.param_groups)} parameter groups"
            )
        return list(value)
    return [value] * len(optimizer.param_groups)


class _LambdaBase(LRScheduler):
    _not_saved = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        self.optimizer = optimizer
        self.lr_lambdas = _per_group(lr_lambda, optimizer, "lr_lambda")
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"{type(self).__name__}: lr_lambda must be a function, got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict:
        out = super().state_dict()
        # functions are not data; a callable object's attributes are (as PyTorch)
        out["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else dict(fn.__dict__) for fn in self.lr_lambdas
        ]
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        saved = state_dict.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        self.__dict__.update(state_dict)
        for fn, attrs in zip(self.lr_lambdas, saved):
            if attrs is not None:
                fn.__dict__.update(attrs)


class LambdaLR(_LambdaBase):
    """η_t = η₀ · λ(t) for a function λ of the epoch t."""

    def get_lr(self) -> list:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaBase):
    """η_t = η_{t−1} · λ(t)."""

    def get_lr(self) -> list:
        if self._is_initial:
            return _lrs(self.optimizer)
        return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """η_t = η₀ · γ^⌊t / step_size⌋: multiply by γ every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size, self.gamma = positive_int("StepLR", "step_size", step_size), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _lrs(self.optimizer)
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply by γ at each epoch listed in ``milestones``."""

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = dict(Counter(int(m) for m in milestones))
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch not in self.milestones:
            return _lrs(self.optimizer)
        return [g["lr"] * self.gamma ** self.milestones[self.last_epoch] for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        ms = sorted(Counter(self.milestones).elements())
        return [base * self.gamma ** bisect_right(ms, self.last_epoch) for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """η₀ · factor for the first ``total_iters`` epochs, then η₀."""

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1):
        if not 0 <= factor <= 1:
            raise ValueError(f"ConstantLR: factor must be in [0, 1], got {factor}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _lrs(self.optimizer)
        return [g["lr"] * (1.0 / self.factor) for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [
            base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)) for base in self.base_lrs
        ]


class LinearLR(LRScheduler):
    """Linear warm-up: η_t = η₀ · (s + (e − s)·min(t, T)/T), from factor s to factor e over T epochs.

    Chainable form (PyTorch's): η_t = η_{t−1} · (1 + (e − s)/(T·s + (t − 1)(e − s))) for 0 < t ≤ T.
    """

    def __init__(
        self,
        optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        if not 0 < start_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        total_iters = positive_int("LinearLR", "total_iters", total_iters)
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta)
        return [g["lr"] * ratio for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * frac) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """η_t = η₀ · γᵗ."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self._is_initial:
            return _lrs(self.optimizer)
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """η_t = η₀ · (1 − min(t, T)/T)^power."""

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1):
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        factor = (
            (1.0 - self.last_epoch / self.total_iters) / (1.0 - (self.last_epoch - 1) / self.total_iters)
        ) ** self.power
        return [g["lr"] * factor for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [
            base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
            for base in self.base_lrs
        ]


class CosineAnnealingLR(LRScheduler):
    """η_t = η_min + (η₀ − η_min)·(1 + cos(π t/T_max))/2 for 0 ≤ t ≤ T_max.

    Computed recursively, as PyTorch, from the current rate:
    η_t = η_min + (η_{t−1} − η_min)·(1 + cos(π t/T))/(1 + cos(π (t−1)/T)), and, where that ratio is
    0/0 (t − 1 − T a multiple of 2T), η_t = η_{t−1} + (η₀ − η_min)(1 − cos(π/T))/2. Past T_max the
    rate therefore climbs back up along the same cosine (period 2·T_max), exactly as PyTorch's.
    """

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max, self.eta_min = positive_int("CosineAnnealingLR", "T_max", T_max), eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        t, T, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return _lrs(self.optimizer)
        if self._step_count == 1 and t > 0:  # resumed at epoch t: closed form
            return [lo + (base - lo) * (1 + math.cos(t * math.pi / T)) / 2 for base in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:
            return [
                g["lr"] + (base - lo) * (1 - math.cos(math.pi / T)) / 2
                for base, g in zip(self.base_lrs, self.optimizer.param_groups)
            ]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (g["lr"] - lo) + lo for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [
            self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
            for base in self.base_lrs
        ]


class SequentialLR(LRScheduler):
    """Run ``schedulers[0]`` until ``milestones[0]``, then ``schedulers[1]`` (restarted at its epoch 0),
    and so on; e.g. a LinearLR warm-up followed by CosineAnnealingLR (see :func:`warmup_cosine`)."""

    _not_saved = ("optimizer", "_schedulers")

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("SequentialLR: expects at least one scheduler")
        for i, s in enumerate(schedulers):
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(
                    f"SequentialLR: scheduler {i} is ReduceLROnPlateau, which needs a metric; not supported"
                )
            if getattr(s, "optimizer", None) is not optimizer:
                raise ValueError(f"SequentialLR: scheduler {i} ({type(s).__name__}) belongs to a different optimizer")
        milestones = list(milestones)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"SequentialLR: needs one milestone fewer than schedulers, got {len(schedulers)} schedulers "
                f"and {len(milestones)} milestones"
            )
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # undo the first step that each scheduler's construction made, then redo the first one's
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo(self)
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = self._schedulers[idx].get_last_lr()

    def _undo(self, sched) -> None:
        if hasattr(sched, "_schedulers"):
            for s in sched._schedulers:
                self._undo(s)
        elif hasattr(sched, "last_epoch"):
            sched.last_epoch -= 1

    def step(self) -> None:
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)  # the next scheduler starts from its epoch 0 (closed form)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict:
        out = super().state_dict()
        out["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        saved = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, sd in zip(self._schedulers, saved):
            s.load_state_dict(sd)


class ChainedScheduler(LRScheduler):
    """Step several chainable schedulers together each epoch (their factors multiply)."""

    _not_saved = ("optimizer", "_schedulers")

    def __init__(self, schedulers, optimizer=None):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("ChainedScheduler: expects at least one scheduler")
        optimizer = optimizer or schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(
                    f"ChainedScheduler: scheduler {i} is ReduceLROnPlateau, which needs a metric; not supported"
                )
            if s.optimizer is not optimizer:
                raise ValueError(f"ChainedScheduler: scheduler {i} belongs to a different optimizer")
        self._schedulers, self.optimizer = schedulers, optimizer
        self._last_lr = _lrs(optimizer)

    def step(self) -> None:
        for s in self._schedulers:
            s.step()
        self._last_lr = _lrs(self.optimizer)

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` when a metric has stopped improving for ``patience`` epochs.

    ``step(metric)`` once per epoch. "Improving" in mode 'min' with threshold_mode 'rel' means
    metric < best·(1 − threshold) ('abs': metric < best − threshold; mode 'max' mirrors it). After
    a reduction, ``cooldown`` epochs pass before bad epochs count again; the rate never goes below
    ``min_lr``, and a reduction smaller than ``eps`` is skipped.
    """

    def __init__(
        self,
        optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr=0,
        eps: float = 1e-8,
    ):
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1.0, got {factor}")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"ReduceLROnPlateau: expected an engine Optimizer, got {type(optimizer).__name__}")
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            self.default_min_lr = None
            self.min_lrs = _per_group(list(min_lr), optimizer, "min_lr")
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = _lrs(optimizer)
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics, epoch=None) -> None:
        current = float(metrics.item() if hasattr(metrics, "item") else metrics)
        if math.isnan(current):
            raise ValueError("ReduceLROnPlateau.step: the metric is NaN (has training diverged?)")
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _lrs(self.optimizer)

    def _reduce_lr(self) -> None:
        if len(self.min_lrs) != len(self.optimizer.param_groups):
            if self.default_min_lr is None:
                raise RuntimeError("ReduceLROnPlateau: the optimizer gained parameter groups; update min_lrs to match")
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, group in enumerate(self.optimizer.param_groups):
            old = float(group["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                group["lr"] = new


def _one_cycle_total_steps(total_steps, epochs, steps_per_epoch) -> int:
    """total_steps, or epochs × steps_per_epoch; each a positive integer."""
    if total_steps is not None:
        return positive_int("OneCycleLR", "total_steps", total_steps)
    if epochs is not None and steps_per_epoch is not None:
        return positive_int("OneCycleLR", "epochs", epochs) * positive_int(
            "OneCycleLR", "steps_per_epoch", steps_per_epoch
        )
    raise ValueError("OneCycleLR: give total_steps, or both epochs and steps_per_epoch")


def _one_cycle_phases(total_steps: int, pct_start: float, three_phase: bool) -> list[dict]:
    """The phases as PyTorch lists them: the step each ends at, and which stored rate and momentum
    it goes from and to (warm-up, then annealing; or warm-up, back down, final annihilation)."""
    up_end = float(pct_start * total_steps) - 1
    warm_up = {
        "end_step": up_end,
        "start_lr": "initial_lr",
        "end_lr": "max_lr",
        "start_momentum": "max_momentum",
        "end_momentum": "base_momentum",
    }
    if not three_phase:
        return [
            warm_up,
            {
                "end_step": total_steps - 1,
                "start_lr": "max_lr",
                "end_lr": "min_lr",
                "start_momentum": "base_momentum",
                "end_momentum": "max_momentum",
            },
        ]
    return [
        warm_up,
        {
            "end_step": float(2 * pct_start * total_steps) - 2,
            "start_lr": "max_lr",
            "end_lr": "initial_lr",
            "start_momentum": "base_momentum",
            "end_momentum": "max_momentum",
        },
        {
            "end_step": total_steps - 1,
            "start_lr": "initial_lr",
            "end_lr": "min_lr",
            "start_momentum": "max_momentum",
            "end_momentum": "max_momentum",
        },
    ]


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith): warm up from max_lr/div_factor to max_lr over the first
    ``pct_start`` of ``total_steps``, then anneal to max_lr/(div_factor·final_div_factor).

    Step it once per *batch*. Annealing 'cos': start + (end − start)(1 − cos(π·pct))/2; 'linear'.
    With ``cycle_momentum`` the momentum (or Adam's β₁) moves the opposite way, between
    max_momentum and base_momentum. ``three_phase=True`` gives the original paper's shape
    (up, back down to the initial rate, then the final annihilation).
    """

    def __init__(
        self,
        optimizer,
        max_lr,
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum=0.85,
        max_momentum=0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"OneCycleLR: expected an engine Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        self.total_steps = _one_cycle_total_steps(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: pct_start must be a float in [0, 1], got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        self._schedule_phases = _one_cycle_phases(self.total_steps, pct_start, three_phase)
        max_lrs = _per_group(max_lr, optimizer, "max_lr")
        if last_epoch == -1:  # a fresh schedule: store each group's three rates
            for m, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = m / div_factor
                group["max_lr"] = m
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._start_momentum_cycle(optimizer, max_momentum, base_momentum, fresh=last_epoch == -1)
        super().__init__(optimizer, last_epoch)

    def _start_momentum_cycle(self, optimizer, max_momentum, base_momentum, fresh: bool) -> None:
        """Momentum (or Adam's β₁) moves opposite to the rate: store its bounds, start at the top."""
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError("OneCycleLR: cycle_momentum=True needs an optimizer with momentum or betas")
        self.use_beta1 = "betas" in optimizer.defaults
        maxs = _per_group(max_momentum, optimizer, "max_momentum")
        bases = _per_group(base_momentum, optimizer, "base_momentum")
        if not fresh:
            return
        for m, b, group in zip(maxs, bases, optimizer.param_groups):
            if self.use_beta1:
                group["betas"] = (m, *group["betas"][1:])
            else:
                group["momentum"] = m
            group["max_momentum"] = m
            group["base_momentum"] = b

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"OneCycleLR: stepped {step} times but total_steps is {self.total_steps}; "
                "make total_steps (or epochs × steps_per_epoch) cover the whole run"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                    break
                start = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (mom, *group["betas"][1:])
                else:
                    group["momentum"] = mom
        return lrs


# ---------------------------------------------------------------- helpers for notebooks


def warmup_cosine(
    optimizer, warmup_steps: int, total_steps: int, start_factor: float = 0.1, eta_min: float = 0.0
) -> SequentialLR:
    """Linear warm-up over ``warmup_steps`` then cosine decay to ``eta_min`` until ``total_steps``:
    ``SequentialLR([LinearLR, CosineAnnealingLR], milestones=[warmup_steps])``."""
    if not 0 < warmup_steps < total_steps:
        raise ValueError(f"warmup_cosine: need 0 < warmup_steps < total_steps, got {warmup_steps} and {total_steps}")
    warm = LinearLR(optimizer, start_factor=start_factor, end_factor=1.0, total_iters=warmup_steps)
    cosine = CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps, eta_min=eta_min)
    return SequentialLR(optimizer, [warm, cosine], milestones=[warmup_steps])


def schedule_values(make_scheduler, steps: int, lr: float = 0.1, metrics=None, optimizer: str = "sgd") -> np.ndarray:
    """The learning rate at steps 0, 1, ..., steps − 1 of ``make_scheduler(optimizer)``, as an array.

    A throw-away optimizer (``"sgd"`` with momentum, or ``"adam"``) over one dummy parameter with
    learning rate ``lr`` is built, so this is pure: e.g.
    ``schedule_values(lambda opt: CosineAnnealingLR(opt, T_max=50), 100)``. ReduceLROnPlateau
    needs ``metrics``, one value per step.
    """
    from ..nn.module import Parameter
    from .adam import Adam
    from .sgd import SGD

    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"schedule_values: steps must be a non-negative integer, got {steps!r}")
    param = Parameter(np.zeros(1))
    if optimizer == "sgd":
        opt = SGD([param], lr=lr, momentum=0.9)
    elif optimizer == "adam":
        opt = Adam([param], lr=lr)
    else:
        raise ValueError(f"schedule_values: optimizer must be 'sgd' or 'adam', got {optimizer!r}")
    opt._opt_called = True  # no training here: the schedule alone, without the order warning
    scheduler = make_scheduler(opt)
    plateau = isinstance(scheduler, ReduceLROnPlateau)
    if plateau and (metrics is None or len(metrics) < steps):
        raise ValueError("schedule_values: ReduceLROnPlateau needs metrics, one value per step")
    values = np.empty(steps)
    for i in range(steps):
        values[i] = scheduler.get_last_lr()[0]
        if i < steps - 1:
            scheduler.step(metrics[i]) if plateau else scheduler.step()
    return values

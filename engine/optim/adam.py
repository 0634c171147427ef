"""Adam and AdamW (``torch.optim.Adam``, ``torch.optim.AdamW``)."""

from __future__ import annotations

import math

import numpy as np

from .optimizer import Optimizer


class Adam(Optimizer):
    """Adaptive moments. With g = ∇L, step t = 1, 2, ... and step size η:

        g ← g + λθ                         (weight_decay λ: coupled L2, enters the moments)
        m ← β₁m + (1 − β₁)g,   v ← β₂v + (1 − β₂)g²
        m̂ = m/(1 − β₁ᵗ),       v̂ = v/(1 − β₂ᵗ)      (bias correction of the zero start)
        θ ← θ − η·m̂/(√v̂ + ε)

    ``amsgrad=True`` uses the running maximum of v in the denominator. Computed as PyTorch does:
    θ ← θ − (η/(1 − β₁ᵗ))·m/(√v/√(1 − β₂ᵗ) + ε).
    """

    _decoupled = False
    _moment_names = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach)
        self._flat_cache: dict = {}
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group: dict) -> None:
        super()._check_hyperparameters(group)
        name = type(self).__name__
        betas = group["betas"]
        if len(betas) != 2:
            raise ValueError(f"{name}: betas must be a pair (beta1, beta2), got {betas!r}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"{name}: invalid beta{i + 1}={b!r} (must be in [0, 1))")
        if not group["eps"] >= 0:
            raise ValueError(f"{name}: invalid eps={group['eps']!r} (must be >= 0)")

    @staticmethod
    def _direction(group, g, m, v, v_max, step) -> np.ndarray:
        """Update the moments in place and return the step (η/(1 − β₁ᵗ))·m/(√v/√(1 − β₂ᵗ) + ε).

        In place with one scratch array: with small parameters NumPy's per-call cost dominates.
        """
        beta1, beta2 = group["betas"]
        tmp = np.subtract(g, m)
        tmp *= 1 - beta1
        m += tmp  # m ← m + (1 − β₁)(g − m) = β₁m + (1 − β₁)g
        np.multiply(g, g, out=tmp)
        tmp *= 1 - beta2
        v *= beta2
        v += tmp
        if v_max is not None:
            np.maximum(v_max, v, out=v_max)
            np.sqrt(v_max, out=tmp)
        else:
            np.sqrt(v, out=tmp)
        tmp /= math.sqrt(1 - beta2 ** step)
        tmp += group["eps"]
        np.divide(m, tmp, out=tmp)
        tmp *= group["lr"] / (1 - beta1 ** step)
        return tmp

    def _update(self, group, p, grad, state) -> None:
        """One parameter (the path for single parameters, mixed dtypes or missing gradients)."""
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(p.data)
            state["exp_avg_sq"] = np.zeros_like(p.data)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = np.zeros_like(p.data)
        state["step"] += 1
        lr, wd = group["lr"], group["weight_decay"]
        g = -grad if group["maximize"] else grad
        if wd != 0:
            if self._decoupled:
                p.data *= 1 - lr * wd  # AdamW: shrink θ (before the Adam step), outside the moments
            else:
                g = g + wd * p.data
        p.data -= self._direction(group, g, state["exp_avg"], state["exp_avg_sq"],
                                  state.get("max_exp_avg_sq") if group["amsgrad"] else None, state["step"])

    # ------------------------------------------------------------------ all parameters at once

    def _step_group(self, group: dict) -> None:
        """Every parameter of the group in one set of array operations (PyTorch's 'foreach').

        The moments of the whole group live in one flat array each; ``state[p]`` holds views of it,
        so ``state_dict()`` and the per-parameter path see the same numbers. The arithmetic per
        element is the same as the per-parameter path, so both give bit-identical results.
        """
        params = group["params"]
        if group["foreach"] is False or len(params) < 2:
            return super()._step_group(group)
        grads = [p.grad for p in params]
        if any(g is None for g in grads):
            return super()._step_group(group)
        flat = self._flat_moments(group, params)
        if flat is None:
            return super()._step_group(group)
        m, v, v_max, offsets = flat
        states = [self.state[p] for p in params]
        step = states[0]["step"]
        if any(s["step"] != step for s in states):  # some were skipped earlier: keep them separate
            return super()._step_group(group)
        step += 1
        for s in states:
            s["step"] = step
        lr, wd = group["lr"], group["weight_decay"]
        g = np.concatenate([x.reshape(-1) for x in grads]).astype(m.dtype, copy=False)
        if group["maximize"]:
            np.negative(g, out=g)
        if wd != 0:
            if self._decoupled:
                for p in params:
                    p.data *= 1 - lr * wd
            else:
                g = g + wd * np.concatenate([p.data.reshape(-1) for p in params])
        d = self._direction(group, g, m, v, v_max, step)
        for p, (lo, hi) in zip(params, offsets):
            p.data -= d[lo:hi].reshape(p.data.shape)

    def _flat_moments(self, group, params):
        """(m, v, v_max or None, offsets) as flat arrays whose slices are ``state[p]``'s arrays;
        rebuilt after ``load_state_dict`` or a change of shapes; None if the group cannot be fused."""
        names = self._moment_names if group["amsgrad"] else self._moment_names[:2]
        key = id(group)
        ids = tuple(map(id, params))
        cached = self._flat_cache.get(key)
        # the views stay valid until load_state_dict replaces self.state or the parameters change
        if cached is not None and cached[0] is group and cached[1] is self.state and cached[2] == ids \
                and len(cached[3]) == len(names):
            flats, offsets = cached[3], cached[4]
            return (*flats[:2], flats[2] if len(flats) > 2 else None, offsets)
        dtype = params[0].data.dtype
        if any(p.data.dtype != dtype for p in params):
            return None
        states = [self.state.get(p) for p in params]
        sizes = [p.data.size for p in params]
        if all(not s for s in states):
            flats = [np.zeros(sum(sizes), dtype=dtype) for _ in names]
            step = 0
        elif all(s and s.get("step") == states[0]["step"] and all(n in s for n in names) for s in states):
            flats = [np.concatenate([np.asarray(s[n], dtype=dtype).reshape(-1) for s in states]) for n in names]
            step = states[0]["step"]
        else:  # parameters at different steps (some were skipped): keep them separate
            return None
        offsets, views = [], []
        lo = 0
        for p, n in zip(params, sizes):
            offsets.append((lo, lo + n))
            views.append([f[lo:lo + n].reshape(p.data.shape) for f in flats])
            lo += n
        for p, view in zip(params, views):
            s = self.state.setdefault(p, {})
            s["step"] = step
            for name, arr in zip(names, view):
                s[name] = arr
        self._flat_cache[key] = (group, self.state, ids, flats, offsets)
        return (*flats[:2], flats[2] if len(flats) > 2 else None, offsets)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): the decay acts on θ directly,

        θ ← θ − ηλθ          (with θ from *before* this step)
        then the Adam step above, whose moments see the raw gradient only.

    Default weight_decay = 1e-2, as PyTorch.
    """

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize, foreach=foreach)

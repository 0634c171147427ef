"""The ``Optimizer`` base class: parameter groups, per-parameter state, ``zero_grad`` and state dicts.

As ``torch.optim.Optimizer``: ``param_groups`` is a list of dicts, each with its ``"params"`` and
its own hyper-parameters (``lr``, ``momentum``, ...) filled in from the optimizer's defaults;
``state[p]`` holds the running quantities of parameter ``p`` (moments, step count). Subclasses
take their hyper-parameters with PyTorch's signature (``hyperparameters(locals())`` makes them
the defaults) and implement ``_update(group, p, grad, state)`` (Adam: ``_step_group``, a whole
group at once), which changes ``p.data`` in place with NumPy only, so a step never builds a graph;
``step()`` then bumps each updated parameter's version counter, so a backward through a graph
recorded before the step is an error rather than a wrong gradient.
"""

from __future__ import annotations

import numpy as np

from .. import autograd
from ..tensor import Tensor


def hyperparameters(arguments: dict) -> dict:
    """A subclass constructor's hyper-parameters, the defaults of its groups, from the
    ``locals()`` it passes before assigning any other name: every argument but ``self`` and
    ``params`` (and the ``__class__`` cell that ``super()`` adds), in the signature's order."""
    return {name: value for name, value in arguments.items() if name not in ("self", "params", "__class__")}


class Optimizer:
    """Base class: ``Optimizer(params, defaults)`` with params an iterable of Tensors or of dicts."""

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.state: dict = {}
        self.param_groups: list[dict] = []
        name = type(self).__name__
        if isinstance(params, Tensor):
            raise TypeError(
                f"{name}: params must be an iterable of Tensors or of dicts, got a single Tensor; "
                "pass [tensor] or model.parameters()"
            )
        groups = list(params)
        if not groups:
            raise ValueError(f"{name}: got an empty parameter list (did the model define any Parameter?)")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ------------------------------------------------------------------ groups

    def _check_hyperparameters(self, group: dict) -> None:
        """Raise ValueError for a bad hyper-parameter; subclasses extend it."""
        lr = group.get("lr")
        if lr is None or not isinstance(lr, (int, float, np.floating)) or isinstance(lr, bool) or not lr >= 0:
            raise ValueError(f"{type(self).__name__}: invalid learning rate lr={lr!r} (must be a number >= 0)")
        wd = group.get("weight_decay", 0.0)
        if not wd >= 0:
            raise ValueError(f"{type(self).__name__}: invalid weight_decay={wd!r} (must be >= 0)")

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own hyper-parameters (missing ones take the defaults)."""
        name = type(self).__name__
        if not isinstance(param_group, dict):
            raise TypeError(f"{name}.add_param_group: expected a dict, got {type(param_group).__name__}")
        group = dict(param_group)
        params = group.get("params")
        if params is None:
            raise ValueError(f"{name}.add_param_group: the group has no 'params' entry")
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: can only optimize Tensors, got a {type(p).__name__}")
            if p.data.dtype.kind != "f":
                raise TypeError(f"{name}: can only optimize floating-point tensors, got {p.data.dtype}")
            if not p.is_leaf:
                raise ValueError(
                    f"{name}: can't optimize a non-leaf Tensor (the result of an operation); use .detach()"
                )
        if len({id(p) for p in params}) != len(params):
            raise ValueError(f"{name}: a parameter appears twice in the same group")
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in existing for p in params):
            raise ValueError(f"{name}: some parameters appear in more than one parameter group")
        group["params"] = params
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self._check_hyperparameters(group)
        self.param_groups.append(group)

    # ------------------------------------------------------------------ stepping

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient: ``None`` (default), or zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p._grad = None  # (the .grad setter's checks are for values from outside)
                elif p.grad is not None:
                    p.grad.zero_()  # in place, as PyTorch: a reference to the gradient sees the zeros

    def step(self, closure=None):
        """One update of every parameter that has a gradient (parameters whose ``.grad`` is None
        are skipped). ``closure``, if given, re-computes and returns the loss first."""
        loss = None
        if closure is not None:
            with autograd.enable_grad():
                loss = closure()
        stamp = next(autograd._sequence)  # one in-place write stamp for the whole step
        for group in self.param_groups:
            self._step_group(group)
            for p in group["params"]:
                if p._grad is not None:  # updated in place: a graph that saved p must not reuse it
                    counter = p._vc
                    counter[0] += 1
                    counter[2] = stamp
        autograd._last_write = stamp
        self._opt_called = True  # schedulers check it (scheduler.step() before optimizer.step() warns)
        return loss

    def _step_group(self, group: dict) -> None:
        state = self.state
        for p in group["params"]:
            grad = p._grad  # the attribute behind .grad: an array, or a Tensor once .grad was read
            if grad is None:
                continue
            if not isinstance(grad, np.ndarray):
                grad = grad.data
            s = state.get(p)
            if s is None:
                s = state[p] = {}
            self._update(group, p, grad, s)

    def _update(self, group: dict, p: Tensor, grad: np.ndarray, state: dict) -> None:  # pragma: no cover
        raise NotImplementedError

    # ------------------------------------------------------------------ state dict

    def state_dict(self) -> dict:
        """``{"state": {index: {name: array or number}}, "param_groups": [{..., "params": [indices]}]}``.

        Parameters are replaced by their position (over all groups), as PyTorch, so the dict can be
        saved with ``engine.save`` and loaded into a new optimizer over a new model.
        """
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state:
                    state[index[id(p)]] = {
                        k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self.state[p].items()
                    }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyper-parameters and per-parameter state (arrays may come back as Tensors)."""
        name = type(self).__name__
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError(f"{name}.load_state_dict: expected a dict with 'state' and 'param_groups' entries")
        saved_groups = list(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"{name}.load_state_dict: the state dict has {len(saved_groups)} parameter groups, "
                f"this optimizer has {len(self.param_groups)}"
            )
        by_index = {}
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"{name}.load_state_dict: group {i} has {len(saved['params'])} parameters in the "
                    f"state dict but {len(group['params'])} in this optimizer"
                )
            for idx, p in zip(saved["params"], group["params"]):
                by_index[int(idx)] = p
        new_state = {}
        for idx, entries in state_dict["state"].items():
            p = by_index.get(int(idx))
            if p is None:
                raise ValueError(f"{name}.load_state_dict: state for parameter {idx}, which no group lists")
            restored = {}
            for key, value in entries.items():
                if isinstance(value, Tensor):
                    value = value.data
                # the parameter's running arrays come back as arrays (also a 0-d parameter's float
                # moments, which must stay arrays to be updated in place); a 0-d count is a number
                if isinstance(value, np.ndarray) and (value.ndim > 0 or (p.data.ndim == 0 and value.dtype.kind == "f")):
                    if value.shape != p.data.shape:
                        raise ValueError(
                            f"{name}.load_state_dict: state {key!r} of parameter {idx} has shape "
                            f"{value.shape} but the parameter has shape {p.data.shape}"
                        )
                    value = value.astype(p.data.dtype, copy=True)
                elif isinstance(value, np.ndarray):
                    value = value.item()
                restored[key] = value
            new_state[p] = restored
        self.state = new_state
        for saved, group in zip(saved_groups, self.param_groups):
            for key, value in saved.items():
                if key != "params":
                    group[key] = tuple(value) if isinstance(value, list) and key == "betas" else value

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

"""``Module`` and ``Parameter``: the containers every layer and model is built from.

A module's parameters, sub-modules and buffers are *discovered* from its attributes, in the order
they were assigned: a :class:`Parameter` attribute is a parameter, a :class:`Module` attribute is a
child (:class:`ModuleList`, :class:`ModuleDict`, :class:`ParameterList` and :class:`ParameterDict`
hold several, named ``"name.0"``, ``"name.key"``), and tensors registered with
:meth:`Module.register_buffer` are buffers (state that is saved but not trained, such as
BatchNorm's running statistics). As in PyTorch, a plain Python list or dict of modules is *not*
registered: its layers would be missing from ``parameters()``, so an optimizer would never train
them; use ``nn.ModuleList``. Attribute reads are ordinary Python attribute reads, so a forward pass
pays nothing for the bookkeeping.

Names follow PyTorch: ``named_parameters()`` yields ``"0.weight"``, ``"encoder.fc.bias"``, ...
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple

import numpy as np

from ..autograd import RemovableHandle
from ..tensor import Tensor, _check_device, _is_device

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Parameter(Tensor):
    """A Tensor that a Module trains: ``requires_grad=True`` by default, found by ``parameters()``.

    ``Parameter(t)`` of a Tensor shares ``t``'s data (as ``torch.nn.Parameter``); of an array or a
    list it copies, with the Tensor conversion rules (Python floats become float32).
    """

    __slots__ = ()

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            data = np.empty(0, dtype=np.float32)
        if isinstance(data, Tensor):
            self.data = data.data
            self._grad = None
            self._ctx = None
            self._retain = False
            self._vc = data._vc  # one memory, one version counter
            self._history = None
            self._requires_grad = False
            if requires_grad:
                self.requires_grad_(True)
        else:
            super().__init__(data, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


# attribute names that are bookkeeping, never members
_hooks_registered = False  # set by the first register_forward(_pre)_hook in the process
_RESERVED = frozenset({"training", "_buffers", "_non_persistent", "_hooks"})


class Module:
    """Base class of layers and models: subclass it, assign layers in ``__init__``, write ``forward``.

    ``module(x)`` calls ``forward(x)``. ``train()``/``eval()`` switch the ``training`` flag of the
    whole tree (Dropout and BatchNorm behave differently in each).
    """

    training = True  # class default, so a subclass that forgets super().__init__() still works
    _hidden: frozenset = _RESERVED  # attribute names that discovery skips

    def __init__(self):
        self.training = True
        self._buffers = {}  # name -> True; the tensor itself lives in the instance __dict__
        self._non_persistent = set()

    # ------------------------------------------------------------------ calling

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        # speed: until some module registers a hook, a call costs one global read (a per-module
        # dict lookup was ~1 % of a tiny MLP step, issue 27)
        if not _hooks_registered:
            return self.forward(*args, **kwargs)
        hooks = self.__dict__.get("_hooks")
        if not hooks:
            return self.forward(*args, **kwargs)
        for hook in list(hooks["forward_pre"].values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        output = self.forward(*args, **kwargs)
        for hook in list(hooks["forward"].values()):
            result = hook(self, args, output)
            if result is not None:
                output = result
        return output

    def _register(self, kind: str, hook) -> RemovableHandle:
        if not callable(hook):
            raise TypeError(f"register_{kind}_hook: the hook must be callable, got {type(hook).__name__}")
        global _hooks_registered
        _hooks_registered = True  # from now on every call looks for its module's hooks
        if "_hooks" not in self.__dict__:
            object.__setattr__(self, "_hooks", {"forward_pre": {}, "forward": {}})
        table = self._hooks[kind]
        handle = RemovableHandle(table)
        table[handle.id] = hook
        return handle

    def register_forward_pre_hook(self, hook) -> RemovableHandle:
        """``hook(module, args)`` before each forward; a returned value (a tuple, or one input)
        replaces the positional arguments. ``handle.remove()`` unregisters it (as PyTorch)."""
        return self._register("forward_pre", hook)

    def register_forward_hook(self, hook) -> RemovableHandle:
        """``hook(module, args, output)`` after each forward (e.g. to record activations); a returned
        value replaces the output. ``handle.remove()`` unregisters it (as PyTorch)."""
        return self._register("forward", hook)

    # ------------------------------------------------------------------ registration

    def __setattr__(self, name: str, value) -> None:
        """As PyTorch: a parameter's attribute takes only a Parameter or None (a plain tensor
        there would silently leave ``parameters()`` and ``state_dict()``)."""
        if (
            isinstance(value, Tensor)
            and not isinstance(value, Parameter)
            and isinstance(self.__dict__.get(name), Parameter)
        ):
            raise TypeError(
                f"cannot assign a {type(value).__name__} as parameter {name!r} of "
                f"{type(self).__name__} (engine.nn.Parameter or None expected); wrap it, "
                f"nn.Parameter(t), or write into the parameter: with engine.no_grad(): "
                f"module.{name}.copy_(t), or del module.{name} first to replace it by a tensor"
            )
        object.__setattr__(self, name, value)

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Attach a non-trained tensor (or None) that ``state_dict()`` saves when ``persistent``."""
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"register_buffer: invalid buffer name {name!r} (a non-empty string without '.')")
        if tensor is not None and not isinstance(tensor, Tensor):
            if isinstance(tensor, np.ndarray):
                tensor = Tensor._wrap(tensor)
            else:
                raise TypeError(
                    f"register_buffer: {name!r} must be a Tensor, an array or None, got {type(tensor).__name__}"
                )
        if "_buffers" not in self.__dict__:
            self._buffers, self._non_persistent = {}, set()
        self._buffers[name] = True
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)
        object.__setattr__(self, name, tensor)

    def register_parameter(self, name: str, param) -> None:
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: {name!r} must be a Parameter or None, got {type(param).__name__}")
        object.__setattr__(self, name, param)

    def add_module(self, name: str, module) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module, got {type(module).__name__}")
        object.__setattr__(self, name, module)

    register_module = add_module

    def _members(self):
        """(name, value) of every attribute that may hold parameters, modules or buffers, in order."""
        hidden = self._hidden
        for name, value in self.__dict__.items():
            if name not in hidden:
                yield name, value

    def _own(self):
        """Split this module's own members: (parameters, children) as lists of (name, value)."""
        params, children = [], []
        for name, value in self._members():
            if isinstance(value, Parameter):
                params.append((name, value))
            elif isinstance(value, Module):
                children.append((name, value))
        return params, children

    # ------------------------------------------------------------------ traversal

    def named_children(self):
        """(name, module) of each direct sub-module."""
        seen = set()
        for name, child in self._own()[1]:
            if id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        for _, child in self.named_children():
            yield child

    def named_modules(self, memo=None, prefix: str = ""):
        """(dotted name, module) of this module and every descendant, each once; self is ''."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._own()[1]:
            yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        """(dotted name, Parameter), each shared parameter once: own parameters first, then children's."""
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, param in module._own()[0]:
                if id(param) not in seen:
                    seen.add(id(param))
                    yield (f"{module_prefix}.{name}" if module_prefix else name), param

    def parameters(self, recurse: bool = True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def _own_buffers(self):
        registered = self.__dict__.get("_buffers", {})
        for name in registered:
            yield name, self.__dict__.get(name)

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, buf in module._own_buffers():
                if buf is not None:
                    yield (f"{module_prefix}.{name}" if module_prefix else name), buf

    def buffers(self, recurse: bool = True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def apply(self, fn):
        """Call ``fn(m)`` on every descendant, then on self (as PyTorch: e.g. custom init)."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def get_submodule(self, target: str) -> "Module":
        module = self
        for part in target.split(".") if target else []:
            found = dict(module._own()[1]).get(part)
            if found is None:
                raise AttributeError(
                    f"get_submodule: {type(module).__name__} has no sub-module {part!r} (in {target!r})"
                )
            module = found
        return module

    # ------------------------------------------------------------------ modes and gradients

    def train(self, mode: bool = True) -> "Module":
        """Set ``training`` on this module and every descendant; returns self."""
        if not isinstance(mode, bool):
            raise TypeError(f"train: mode must be a bool, got {type(mode).__name__}")
        for module in self.modules():
            module.training = mode
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients of every parameter (``None``, or zeros with set_to_none=False)."""
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()  # in place, as PyTorch

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    # ------------------------------------------------------------------ dtype

    def to(self, *args, dtype=None, device=None) -> "Module":
        """Convert every floating parameter and buffer to ``dtype`` in place (e.g. float64 for checks);
        ``to("cpu")`` (the engine's only device) changes nothing and returns the module, as PyTorch."""
        for arg in args:
            if _is_device(arg):
                device = arg
            else:
                dtype = arg
        _check_device(device, "Module.to")
        if dtype is None:
            return self
        dtype = np.dtype(dtype)
        if dtype.kind != "f":
            raise TypeError(f"Module.to: only floating dtypes are supported, got {dtype}")
        for t in list(self.parameters()) + list(self.buffers()):
            if t.data.dtype.kind == "f" and t.data.dtype != dtype:
                t.data = t.data.astype(dtype)
                if t.grad is not None:
                    t.grad = t.grad.to(dtype)
        return self

    def double(self) -> "Module":
        return self.to(np.float64)

    def float(self) -> "Module":
        return self.to(np.float32)

    def num_parameters(self) -> int:
        """Total number of trainable scalars."""
        return int(sum(p.data.size for p in self.parameters()))

    # ------------------------------------------------------------------ state dict

    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False) -> "OrderedDict":
        """Every parameter and persistent buffer by dotted name, as Tensors sharing the module's data.

        A parameter shared by two modules (tied weights: ``head.weight = emb.weight``) appears under
        both names, as in PyTorch, so checkpoints load either way.
        """
        out = OrderedDict() if destination is None else destination
        for module_prefix, module in _every_path(self, prefix.rstrip("."), {id(self)}):
            dot = f"{module_prefix}." if module_prefix else ""
            for name, param in module._own()[0]:
                out[dot + name] = param if keep_vars else param.detach()
            skip = module.__dict__.get("_non_persistent", ())
            for name, buf in module._own_buffers():
                if buf is not None and name not in skip:
                    out[dot + name] = buf if keep_vars else buf.detach()
        return out

    def load_state_dict(self, state_dict, strict: bool = True) -> IncompatibleKeys:
        """Copy values (Tensors, arrays or numbers) into the parameters and buffers, in place.

        A shape mismatch is always an error; with ``strict=True`` a missing or unexpected key is one
        too. All problems are reported together, each with its key (and both shapes).
        """
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict: expected a dict of name -> tensor, got {type(state_dict).__name__}")
        targets = self.state_dict(keep_vars=True)
        missing = [k for k in targets if k not in state_dict]
        unexpected = [k for k in state_dict if k not in targets]
        problems = []
        arrays = {}
        for key, target in targets.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            arr = np.asarray(value.data if isinstance(value, Tensor) else value)
            if arr.dtype == object or arr.dtype.kind not in "biuf":
                problems.append(f"  {key}: expected a numeric tensor or array, got {type(value).__name__}")
            elif arr.shape != target.data.shape:
                problems.append(
                    f"  {key}: shape mismatch: the checkpoint has shape {arr.shape}, "
                    f"the model's {type(target).__name__.lower()} has shape {target.data.shape}"
                )
            else:
                arrays[key] = arr
        if strict:
            problems += [
                f"  missing key {k!r} (shape {targets[k].data.shape}) is not in the state dict" for k in missing
            ]
            problems += [f"  unexpected key {k!r} is not a parameter or buffer of the model" for k in unexpected]
        if problems:
            raise ValueError(f"load_state_dict: cannot load into {type(self).__name__}:\n" + "\n".join(problems))
        for key, arr in arrays.items():
            target = targets[key]
            target.data[...] = arr  # in place: optimizers keep pointing at the same parameters
            target._bump_version()
        return IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ printing

    def extra_repr(self) -> str:
        """One line of settings shown inside the parentheses of ``repr``; override in layers."""
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, child in self.named_children():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        main = type(self).__name__ + "("
        if lines:
            if len(lines) == 1 and not list(self.named_children()):
                return main + lines[0] + ")"
            return main + "\n  " + "\n  ".join(lines) + "\n)"
        return main + ")"


def _every_path(module, prefix: str, path: set):
    """(dotted name, module) for every way of reaching each module (a shared one under each name)."""
    yield prefix, module
    for name, child in module._own()[1]:
        if id(child) not in path:  # a module inside itself would never end
            yield from _every_path(child, f"{prefix}.{name}" if prefix else name, path | {id(child)})


class _Items:
    """``len()`` and iteration of a container module, over its ``_items`` (a list or a dict)."""

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self):
        return iter(self._items)


class ModuleList(_Items, Module):
    """A list of modules, registered as children ``"0"``, ``"1"``, ... (it has no forward)."""

    _hidden = _RESERVED | {"_items"}

    def __init__(self, modules=None):
        super().__init__()
        self._items = []
        if modules is not None:
            self.extend(modules)

    @staticmethod
    def _check(module, op):
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList.{op}: expected a Module, got {type(module).__name__}")
        return module

    def _members(self):
        for i, module in enumerate(self._items):
            yield str(i), module
        yield from super()._members()

    def append(self, module) -> "ModuleList":
        self._items.append(self._check(module, "append"))
        return self

    def extend(self, modules) -> "ModuleList":
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module) -> None:
        self._items.insert(index, self._check(module, "insert"))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(self._items[index])
        return self._items[index]

    def __setitem__(self, index: int, module) -> None:
        self._items[index] = self._check(module, "__setitem__")

    def __delitem__(self, index) -> None:
        del self._items[index]

    def __iadd__(self, modules):
        return self.extend(modules)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward(); iterate over it in your own forward")


class Sequential(_Items, Module):
    """Modules applied one after another: ``Sequential(a, b, c)(x) == c(b(a(x)))``.

    Children are named ``"0"``, ``"1"``, ... or by the keys of an ``OrderedDict`` passed alone.
    """

    _hidden = _RESERVED | {"_items", "_names"}

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], (dict, OrderedDict)):
            pairs = list(modules[0].items())
        else:
            pairs = [(str(i), m) for i, m in enumerate(modules)]
        for name, m in pairs:
            if not isinstance(m, Module):
                raise TypeError(f"Sequential: item {name!r} is a {type(m).__name__}, not a Module")
        self._names = [str(n) for n, _ in pairs]
        self._items = [m for _, m in pairs]

    def _members(self):
        yield from zip(self._names, self._items)
        yield from super()._members()

    def forward(self, x):
        for module in self._items:
            x = module(x)
        return x

    def append(self, module) -> "Sequential":
        if not isinstance(module, Module):
            raise TypeError(f"Sequential.append: expected a Module, got {type(module).__name__}")
        self._names.append(str(len(self._items)))
        self._items.append(module)
        return self

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(OrderedDict(zip(self._names[index], self._items[index])))
        return self._items[index]

    def __getattr__(self, name):
        # only reached when normal lookup fails: children named by an OrderedDict
        names = self.__dict__.get("_names")
        if names is not None and name in names:
            return self.__dict__["_items"][names.index(name)]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")


class _KeyedItems(_Items):
    """The read-only dict interface of ModuleDict and ParameterDict, over their ``_items`` dict."""

    def __contains__(self, key) -> bool:
        return key in self._items

    def keys(self):
        return self._items.keys()

    def values(self):
        return self._items.values()

    def items(self):
        return self._items.items()


class ModuleDict(_KeyedItems, Module):
    """A dict of modules, registered as children under their keys (it has no forward)."""

    _hidden = _RESERVED | {"_items"}

    def __init__(self, modules=None):
        super().__init__()
        self._items = {}
        if modules is not None:
            self.update(modules)

    def _members(self):
        yield from self._items.items()
        yield from super()._members()

    def __setitem__(self, key: str, module) -> None:
        if not isinstance(key, str):
            raise TypeError(f"ModuleDict: keys must be strings, got {type(key).__name__}")
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict[{key!r}]: expected a Module, got {type(module).__name__}")
        self._items[key] = module

    def update(self, modules) -> None:
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self[key] = module

    def __getitem__(self, key: str):
        return self._items[key]

    def __delitem__(self, key: str) -> None:
        del self._items[key]

    def pop(self, key: str):
        return self._items.pop(key)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward(); call its modules in your own forward")


class ParameterList(_Items, Module):
    """A list of Parameters, registered as ``"0"``, ``"1"``, ... (a plain list is not, as PyTorch)."""

    _hidden = _RESERVED | {"_items"}

    def __init__(self, values=None):
        super().__init__()
        self._items = []
        for p in values or ():
            self.append(p)

    def _members(self):
        for i, p in enumerate(self._items):
            yield str(i), p
        yield from super()._members()

    def append(self, value) -> "ParameterList":
        self._items.append(value if isinstance(value, Parameter) else Parameter(value))
        return self

    def __getitem__(self, index):
        return self._items[index]


class ParameterDict(_KeyedItems, Module):
    """A dict of Parameters, registered under their keys."""

    _hidden = _RESERVED | {"_items"}

    def __init__(self, values=None):
        super().__init__()
        self._items = {}
        pairs = values.items() if hasattr(values, "items") else (values or ())
        for key, value in pairs:
            self[key] = value

    def _members(self):
        yield from self._items.items()
        yield from super()._members()

    def __setitem__(self, key: str, value) -> None:
        self._items[str(key)] = value if isinstance(value, Parameter) else Parameter(value)

    def __getitem__(self, key: str):
        return self._items[key]

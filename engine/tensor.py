"""The ``Tensor``: a NumPy array, its gradient, and the graph node that produced it.

Every differentiable method builds its result through a primitive in :mod:`engine.ops`; the
methods here only check and convert arguments (so that errors name the operation and the shapes
at fault) and pick the primitive.
"""

from __future__ import annotations

import math
import operator
from collections import namedtuple
from typing import Sequence

import numpy as np

from . import autograd
from .ops import elementwise as ew
from .ops import movement as mv
from .ops import reduce as rd
from .ops.matmul import MatMul

ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])

_DEFAULT_FLOAT = np.float32


def _tensor_data(data, dtype=None, floating: bool = False) -> np.ndarray:
    """``torch.tensor``'s conversion rules: Python floats become float32, ints int64, bools bool;
    arrays and NumPy scalars keep their dtype. ``floating``: ``torch.Tensor``'s, float32 for
    anything but an array or a tensor."""
    if isinstance(data, Tensor):
        data = data.data
    if isinstance(data, np.ndarray):
        arr = data
    elif isinstance(data, np.generic):
        arr = np.asarray(data)
    else:
        try:
            arr = np.asarray(data)  # a list of Tensors works too, through Tensor.__array__
        except ValueError:
            raise ValueError(
                f"tensor: nested lists must be rectangular (every row the same length), got {data!r:.80}"
            ) from None
        if floating and dtype is None and arr.dtype.kind in "biuf":
            arr = arr.astype(_DEFAULT_FLOAT)
        elif dtype is None and arr.dtype == np.float64 and not _holds_float64(data):
            arr = arr.astype(_DEFAULT_FLOAT)  # (with a dtype asked for, cast once: no float32 rounding first)
    if arr.dtype.kind not in "biufc":
        raise TypeError(
            f"tensor: cannot build a tensor from {type(data).__name__} {data!r:.80} (dtype {arr.dtype}); "
            "a tensor holds numbers or booleans: a number, a nested list of numbers, or a NumPy array"
        )
    if dtype is not None:
        arr = arr.astype(np.dtype(dtype), copy=False)
    return arr


def _holds_float64(data) -> bool:
    """True for a list whose first element is a float64 Tensor or NumPy scalar (torch keeps float64 then)."""
    first = data
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if isinstance(first, Tensor):
        first = first.data
    return isinstance(first, (np.generic, np.ndarray)) and first.dtype == np.float64


def _is_float(arr: np.ndarray) -> bool:
    return arr.dtype.kind in "fc"


def _new_version() -> list:
    """A version counter: [number of in-place writes, shared with a view recorded in a graph?,
    sequence number of the latest write (see engine.autograd)]."""
    return [0, False, 0]


def _arithmetic(function, op: str, reverse: bool = False):
    """The operator method ``self <op> other`` (``other <op> self`` when ``reverse``) of Tensor:
    ``self._binary(function, other, op, reverse)``."""

    def operator(self, other):
        return self._binary(function, other, op, reverse)

    return operator


def _comparison(fn):
    """The comparison method of Tensor that gives ``fn(self, other)``: a bool tensor, no gradient."""

    def compare(self, other):
        return self._compare(other, fn)

    return compare


class Tensor:
    """An n-dimensional array that can record the operations applied to it, for ``backward()``.

    ``Tensor(data, requires_grad=False, dtype=None)``, as ``torch.Tensor``: numbers and lists
    become float32, a NumPy array keeps its dtype (float64 stays float64), and ``dtype=`` overrides
    both. ``engine.tensor(data)`` infers the dtype from the data instead, as ``torch.tensor``.
    """

    __slots__ = ("data", "_grad", "_requires_grad", "_ctx", "_retain", "_vc", "_history", "__weakref__")
    # NumPy defers to our reflected operators (array + tensor -> Tensor.__radd__)
    __array_ufunc__ = None

    def __init__(self, data, requires_grad: bool = False, dtype=None, *, _infer: bool = False):
        for extra in (requires_grad, dtype):
            if isinstance(extra, (int, np.integer)) and not isinstance(extra, (bool, np.bool_)):
                sizes = ", ".join(str(v) for v in (data, requires_grad, dtype) if v is not None and v is not False)
                raise TypeError(
                    f"Tensor({sizes}): Tensor takes data, not sizes (torch.Tensor(2, 3) allocates "
                    f"uninitialised memory, which the engine does not); use engine.zeros({sizes}) "
                    "or another factory (ones, full, randn)"
                )
        arr = _tensor_data(data, dtype, floating=not _infer)
        if isinstance(data, (np.ndarray, Tensor)) and arr is (data.data if isinstance(data, Tensor) else data):
            arr = arr.copy()  # as torch.tensor: the tensor owns its data
        self.data = arr
        self._grad = None
        self._ctx = None
        self._retain = False
        self._vc = _new_version()
        self._history = None
        self._requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    # ------------------------------------------------------------ construction (internal)

    @classmethod
    def _wrap(cls, data: np.ndarray) -> "Tensor":
        """A constant tensor around ``data`` (no copy, no checks): the fast path for op outputs.
        (``Function.apply`` spells it out for speed: keep the two in step.)"""
        t = cls.__new__(cls)
        t.data = data if isinstance(data, np.ndarray) else np.asarray(data)
        t._grad = None
        t._ctx = None
        t._retain = False
        t._vc = [0, False, 0]
        t._history = None
        t._requires_grad = False
        return t

    # ------------------------------------------------------------ attributes

    @property
    def shape(self) -> tuple:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def is_leaf(self) -> bool:
        return self._ctx is None

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        self.requires_grad_(value)

    @property
    def grad(self):
        """dL/d(self) after ``backward()``: a Tensor without a graph (or None), as PyTorch."""
        grad = self._grad
        if isinstance(grad, np.ndarray):  # stored bare by backward: wrapped once, on first read
            grad = self._grad = Tensor._wrap(grad)
        return grad

    @grad.setter
    def grad(self, value) -> None:
        """A gradient of this tensor's shape and dtype, or None. A NumPy array is wrapped (shared)."""
        if value is None:
            self._grad = None
            return
        if isinstance(value, np.ndarray):
            value = Tensor._wrap(value)
        elif not isinstance(value, Tensor):
            raise TypeError(f"grad: assigned grad must be a Tensor (or an array) or None, got {type(value).__name__}")
        if value.shape != self.shape:
            raise RuntimeError(
                f"grad: assigned grad has shape {value.shape}, but the tensor has shape {self.shape}; "
                "a gradient must have its tensor's shape"
            )
        if value.dtype != self.dtype:
            raise TypeError(
                f"grad: assigned grad has dtype {value.dtype}, but the tensor has dtype {self.dtype}; "
                f"convert it first, e.g. g.to({str(self.dtype)!r})"
            )
        self._grad = value.detach() if value._ctx is not None else value

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor's memory has seen (as ``torch.Tensor._version``)."""
        return self._vc[0]

    def _bump_version(self) -> None:
        """Record an in-place write into ``.data`` (optimizers and initialisers call it)."""
        counter = self._vc
        counter[0] += 1
        counter[2] = autograd._last_write = next(autograd._sequence)

    @property
    def grad_fn(self):
        return self._ctx

    @property
    def T(self) -> "Tensor":
        return self.permute(*reversed(range(self.ndim)))

    def size(self, dim=None):
        return self.data.shape if dim is None else self.data.shape[dim]

    def dim(self) -> int:
        return self.data.ndim

    def numel(self) -> int:
        return int(self.data.size)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __repr__(self) -> str:
        body = np.array2string(self.data, separator=", ", prefix="tensor(")
        extra = ""
        if self.data.dtype != _DEFAULT_FLOAT and _is_float(self.data):
            extra += f", dtype={self.data.dtype}"
        if self._ctx is not None:
            extra += f", grad_fn=<{type(self._ctx).__name__}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

    # by identity, as torch (== is elementwise); object's own hash is a C slot, so the sets and
    # dicts keyed by tensors (backward's walk, optimizer state) pay no Python call per lookup
    __hash__ = object.__hash__

    def __bool__(self):
        if self.data.size != 1:
            raise RuntimeError(
                f"bool(): a tensor of shape {self.shape} has {self.data.size} values, so its truth "
                "is ambiguous; use .any() or .all()"
            )
        return bool(self.data)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.data.dtype.kind not in "iu" or self.data.size != 1:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self.data)

    # ------------------------------------------------------------ autograd

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if requires_grad and not _is_float(self.data):
            raise TypeError(
                f"requires_grad: only floating-point tensors can require gradients, this one is "
                f"{self.data.dtype}; convert it first, e.g. t.float() or Tensor(x, dtype='float32')"
            )
        if not requires_grad and self._ctx is not None:
            raise RuntimeError("requires_grad_(False) on a non-leaf tensor: use .detach() instead")
        self._requires_grad = bool(requires_grad)
        return self

    def register_hook(self, hook):
        """``hook(grad)`` runs whenever backward computes this tensor's gradient; returning a Tensor
        replaces it. Returns a handle whose ``remove()`` unregisters it (as PyTorch)."""
        return autograd.register_hook(self, hook)

    def retain_grad(self) -> "Tensor":
        """Keep this non-leaf tensor's gradient in ``.grad`` after ``backward()``."""
        self._retain = True
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False) -> None:
        """Compute d(self)/d(leaf) for every leaf that requires a gradient; leaves accumulate ``.grad``.

        ``gradient`` is dL/d(self); it may be omitted only for a single-element tensor (L = self).
        The arrays the ops saved are freed afterwards, unless ``retain_graph=True`` (needed to call
        backward through the same graph again).
        """
        if create_graph:
            raise NotImplementedError(
                "backward: create_graph=True (gradients of gradients) is not supported by the engine"
            )
        if not self._requires_grad:
            raise RuntimeError(
                "backward: this tensor does not require a gradient and has no graph; create the "
                "inputs with requires_grad=True (and not under engine.no_grad()) before computing it"
            )
        if gradient is None:
            if self.data.size != 1:
                raise RuntimeError(
                    f"backward: the tensor has shape {self.shape}; a gradient can be created "
                    "implicitly only for a single value. Reduce it first (e.g. loss.mean()) or "
                    "pass backward(gradient) with dL/d(output) of the same shape"
                )
            grad = np.empty(self.data.shape, self.data.dtype)
            grad.fill(1)  # (np.ones: the same, through ~0.5 µs more of Python wrapper)
        else:
            # no op writes into its upstream gradient, and backward copies an array before a second
            # owner gets it; only a root that keeps its own .grad (a leaf, retain_grad) needs a copy
            # of the caller's array up front (a copy of a large gradient costs as much as an op)
            own = self._ctx is None or self._retain
            grad = np.array(_tensor_data(gradient), dtype=self.data.dtype, copy=True if own else None)
            if grad.shape != self.shape:
                raise ValueError(f"backward: gradient has shape {grad.shape} but the tensor has shape {self.shape}")
        autograd.backward(self, grad, retain_graph=bool(retain_graph))

    def detach(self) -> "Tensor":
        """The same data, cut from the graph (shares memory and the version counter, like PyTorch)."""
        t = Tensor._wrap(self.data)
        t._vc = self._vc
        return t

    def zero_grad_(self) -> None:
        self._grad = None

    # ------------------------------------------------------------ conversion

    def numpy(self) -> np.ndarray:
        return self.data

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``: the data (shared, as ``t.numpy()``)."""
        arr = self.data
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(f"__array__: converting {arr.dtype} to {np.dtype(dtype)} needs a copy")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def item(self):
        if self.data.size != 1:
            raise ValueError(
                f"item: only a single-element tensor converts to a Python number; this one has shape {self.shape}"
            )
        return self.data.item()

    def tolist(self):
        return self.data.tolist()

    def to(self, *args, dtype=None, device=None, **kwargs) -> "Tensor":
        """``to(dtype)``, ``to("cpu")``, ``to(device, dtype)`` or ``to(other_tensor)``: the engine runs
        on the CPU only, so a device is accepted when it is the CPU (and this tensor comes back)."""
        for arg in args:
            if isinstance(arg, Tensor):
                dtype = arg.dtype
            elif _is_device(arg):
                device = arg
            else:
                dtype = arg
        _check_device(device, "to")
        return self if dtype is None else self.type(dtype)

    def cpu(self) -> "Tensor":
        return self

    @property
    def device(self) -> str:
        """Always ``"cpu"``: the engine computes with NumPy on the CPU."""
        return "cpu"

    def __format__(self, spec: str) -> str:
        """``f"{loss:.3f}"``: a 0-d tensor formats as its number, as PyTorch."""
        if self.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def type(self, dtype) -> "Tensor":
        dtype = np.dtype(dtype)
        if dtype == self.data.dtype:
            return self
        if self.requires_grad and _is_float(np.empty(0, dtype)):
            return _Cast.apply(self, dtype=dtype)
        return Tensor._wrap(self.data.astype(dtype))

    def float(self) -> "Tensor":
        return self.type(np.float32)

    def double(self) -> "Tensor":
        return self.type(np.float64)

    def long(self) -> "Tensor":
        return self.type(np.int64)

    def int(self) -> "Tensor":
        return self.type(np.int32)

    def bool(self) -> "Tensor":
        return self.type(np.bool_)

    # ------------------------------------------------------------ arithmetic

    def _operand(self, other, op: str) -> "Tensor":
        """``other`` as a Tensor; Python and NumPy numbers take this tensor's float dtype (as PyTorch,
        so ``x / np.sqrt(d)`` keeps a float32 ``x`` float32)."""
        if isinstance(other, Tensor):
            return other
        if isinstance(other, np.generic) and other.dtype.kind in "biuf":
            other = other.item()  # a NumPy scalar counts as a Python number, as in PyTorch
        if isinstance(other, (bool, int, float)):
            if _is_float(self.data):
                return Tensor._wrap(np.asarray(other, dtype=self.data.dtype))
            if isinstance(other, float):
                return Tensor._wrap(np.asarray(other, dtype=_DEFAULT_FLOAT))
            return Tensor._wrap(np.asarray(other))
        if isinstance(other, np.ndarray):
            # a copy: the op may save it for backward, and the caller may change the array later
            return Tensor._wrap(np.array(_tensor_data(other)))
        if isinstance(other, (np.generic, list, tuple)):
            return Tensor._wrap(_tensor_data(other))
        raise TypeError(f"{op}: unsupported operand of type {type(other).__name__}")

    def _binary(self, fn, other, op: str, reverse: bool = False) -> "Tensor":
        other = self._operand(other, op)
        a, b = (other, self) if reverse else (self, other)
        # speed: each array read once, the cheapest test first (the usual pair, one float dtype
        # and one shape, costs three comparisons)
        ad, bd = a.data, b.data
        if ad.dtype.kind == "b" and op == "sub" and bd.dtype.kind == "b":
            raise TypeError(
                "sub: subtraction of two bool tensors is not supported (as in PyTorch); "
                "use a != b (logical xor), or convert them first: a.long() - b.long()"
            )
        if ad.dtype != bd.dtype or (op == "div" and not _is_float(ad)):
            a, b = _promote(a, b, op)
        if ad.shape != bd.shape and ad.ndim and bd.ndim:  # (a 0-d operand broadcasts to any shape)
            _check_broadcast(ad.shape, bd.shape, op)
        return fn.apply(a, b)

    # t + u, 2 - t, ...: (the op's Function, its name in error messages, reflected?)
    __add__ = _arithmetic(ew.Add, "add")
    __radd__ = _arithmetic(ew.Add, "add", reverse=True)
    __sub__ = _arithmetic(ew.Sub, "sub")
    __rsub__ = _arithmetic(ew.Sub, "sub", reverse=True)
    __mul__ = _arithmetic(ew.Mul, "mul")
    __rmul__ = _arithmetic(ew.Mul, "mul", reverse=True)
    __truediv__ = _arithmetic(ew.Div, "div")
    __rtruediv__ = _arithmetic(ew.Div, "div", reverse=True)

    def __pow__(self, exponent):
        if isinstance(exponent, np.generic) and exponent.dtype.kind in "iuf":
            exponent = exponent.item()  # np.float64(2.5) must not promote a float32 tensor
        if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
            if isinstance(exponent, float) and not _is_float(self.data):
                return self.float() ** exponent  # an integer tensor to a float power is float32, as torch
            if not _is_float(self.data):
                if exponent < 0:
                    _negative_integer_power()
                if self.data.dtype == np.bool_:
                    return self.long() ** exponent
            return ew.PowScalar.apply(self, exponent=exponent)
        return self._binary(ew.Pow, exponent, "pow")

    def __rpow__(self, base):
        if isinstance(base, np.generic) and base.dtype.kind in "iuf":
            base = base.item()
        if isinstance(base, (int, float)) and not isinstance(base, bool) and base > 0:
            if isinstance(base, float) and not _is_float(self.data):
                return base ** self.float()  # 1.5 ** arange(3) is float32 (an int base dtype would truncate 1.5)
            if not _is_float(self.data) and self.data.size and self.data.min() < 0:
                _negative_integer_power()
            return ew.RPowScalar.apply(self, base=base)
        return self._binary(ew.Pow, base, "pow", reverse=True)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(self._operand(other, "matmul"), self)

    def __neg__(self):
        _no_bool(self, "neg", "use ~t (logical not) for a bool tensor")
        return ew.Neg.apply(self)

    def __pos__(self):
        return self

    add = __add__
    sub = __sub__
    mul = __mul__
    div = __truediv__
    pow = __pow__
    neg = __neg__

    def matmul(self, other):
        return matmul(self, other)

    # comparisons give boolean tensors and no gradient
    def _compare(self, other, fn) -> "Tensor":
        if not isinstance(other, (Tensor, np.ndarray, np.generic, int, float, complex, list, tuple)):
            return NotImplemented  # e.g. pytest.approx, which then compares itself
        other = other.data if isinstance(other, Tensor) else other
        _check_broadcast(self.shape, np.shape(other), fn.__name__)
        return Tensor._wrap(fn(self.data, other))

    __lt__ = _comparison(np.less)
    __le__ = _comparison(np.less_equal)
    __gt__ = _comparison(np.greater)
    __ge__ = _comparison(np.greater_equal)
    __eq__ = _comparison(np.equal)
    __ne__ = _comparison(np.not_equal)

    def __invert__(self):
        """``~t``: logical not of a bool tensor, bitwise not of an integer one (as PyTorch)."""
        if self.data.dtype.kind not in "biu":
            raise TypeError(f"~ (bitwise_not) needs a bool or integer tensor, got {self.data.dtype}")
        return Tensor._wrap(~self.data)

    def _bitwise(self, other, fn, op: str) -> "Tensor":
        """``&``, ``|``, ``^``: logical on bool tensors, bitwise on integers (as PyTorch); no gradient."""
        other = self._operand(other, op)
        a, b = self, other
        if a.data.dtype != b.data.dtype:
            a, b = _promote(a, b, op)
        if a.data.dtype.kind not in "biu":
            raise TypeError(f"{op}: needs bool or integer tensors, got {self.data.dtype} and {other.data.dtype}")
        _check_broadcast(a.shape, b.shape, op)
        return Tensor._wrap(np.asarray(fn(a.data, b.data)))

    def __and__(self, other):
        return self._bitwise(other, np.bitwise_and, "bitwise_and (&)")

    def __or__(self, other):
        return self._bitwise(other, np.bitwise_or, "bitwise_or (|)")

    def __xor__(self, other):
        return self._bitwise(other, np.bitwise_xor, "bitwise_xor (^)")

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def any(self, dim=None, keepdim: bool = False) -> "Tensor":
        """True where any element along ``dim`` (all dims by default) is non-zero; a bool tensor."""
        axes = rd.normalize_dims(dim, self.ndim, "any", empty_is_all=True)
        return Tensor._wrap(np.asarray(np.any(self.data, axis=axes, keepdims=keepdim)))

    def all(self, dim=None, keepdim: bool = False) -> "Tensor":
        """True where every element along ``dim`` (all dims by default) is non-zero; a bool tensor."""
        axes = rd.normalize_dims(dim, self.ndim, "all", empty_is_all=True)
        return Tensor._wrap(np.asarray(np.all(self.data, axis=axes, keepdims=keepdim)))

    def __floordiv__(self, other):
        """⌊a/b⌋ (rounding down, as PyTorch and Python); a step function, so no gradient (PyTorch's
        backward raises)."""
        return _floor_divide(self, other, reverse=False)

    def __rfloordiv__(self, other):
        return _floor_divide(self, other, reverse=True)

    def __mod__(self, other):
        """a − b·⌊a/b⌋ with the sign of b, as Python and PyTorch; ∂/∂a = 1, ∂/∂b = −⌊a/b⌋."""
        return _remainder(self, other, reverse=False)

    def __rmod__(self, other):
        return _remainder(self, other, reverse=True)

    floor_divide = __floordiv__
    remainder = __mod__

    # ------------------------------------------------------------ elementwise functions

    # Floating functions of an integer or bool tensor compute in float32 (PyTorch's default dtype),
    # never in the integer dtype (sigmoid would truncate to 0) nor in NumPy's float64.

    def exp(self):
        return ew.Exp.apply(_floating(self))

    def log(self):
        return ew.Log.apply(_floating(self))

    def log2(self):
        return log(self, 2.0)

    def log10(self):
        return log(self, 10.0)

    def sqrt(self):
        return ew.Sqrt.apply(_floating(self))

    def square(self):
        return self**2

    def abs(self):
        _no_bool(self, "abs")
        return ew.Abs.apply(self)

    def sin(self):
        return ew.Sin.apply(_floating(self))

    def cos(self):
        return ew.Cos.apply(_floating(self))

    def tanh(self):
        return ew.Tanh.apply(_floating(self))

    def sigmoid(self):
        return ew.Sigmoid.apply(_floating(self))

    def relu(self):
        _no_bool(self, "relu")
        return ew.Relu.apply(self)

    def clamp(self, min=None, max=None):
        if min is None and max is None:
            raise ValueError("clamp: give at least one of min and max")
        if isinstance(min, (Tensor, np.ndarray)) or isinstance(max, (Tensor, np.ndarray)):
            return _clamp_to_tensors(self, min, max)
        # NumPy scalar bounds act as Python numbers (np.float64 would promote a float32 tensor)
        min, max = (b.item() if isinstance(b, np.generic) else b for b in (min, max))
        if min is not None and max is not None and min > max:
            raise ValueError(f"clamp: min ({min}) is greater than max ({max})")
        if not _is_float(self.data) and (isinstance(min, float) or isinstance(max, float)):
            return self.float().clamp(min, max)  # an integer tensor clamped to float bounds: float32
        return ew.Clamp.apply(self, lo=min, hi=max)

    clip = clamp

    def masked_fill(self, mask, value) -> "Tensor":
        """``value`` where ``mask`` is True, this tensor elsewhere; no gradient to this tensor where
        filled. ``value`` may be a 0-d tensor that requires a gradient (it gets the filled places')."""
        mask = np.array(mask.data if isinstance(mask, Tensor) else mask)  # a copy: saved for backward
        if mask.dtype != np.bool_:
            raise TypeError(f"masked_fill: mask must be boolean, got {mask.dtype}")
        _check_broadcast(self.shape, mask.shape, "masked_fill")
        if isinstance(value, Tensor):
            if value.ndim != 0:
                raise ValueError(
                    f"masked_fill: value must be a number or a 0-d tensor, got a tensor of shape {value.shape}"
                )
            fill = value if value.dtype == self.dtype else value.type(self.dtype)
        else:
            fill = Tensor._wrap(np.asarray(value, dtype=self.dtype))
        return ew.Where.apply(fill, self, cond=mask)

    # ------------------------------------------------------------ reductions

    # dim=None or dim=() reduces every dim, as PyTorch (NumPy's axis=() would reduce none)

    def sum(self, dim=None, keepdim: bool = False):
        return rd.Sum.apply(self, axes=rd.normalize_dims(dim, self.ndim, "sum", empty_is_all=True), keepdim=keepdim)

    def mean(self, dim=None, keepdim: bool = False):
        if not _is_float(self.data):
            raise TypeError(f"mean: needs a floating-point tensor, got {self.dtype}; use .float() first")
        return rd.Mean.apply(self, axes=rd.normalize_dims(dim, self.ndim, "mean", empty_is_all=True), keepdim=keepdim)

    def _var_settings(self, dim, unbiased, correction, op):
        if not _is_float(self.data):
            raise TypeError(f"{op}: needs a floating-point tensor, got {self.dtype}; use .float() first")
        if isinstance(dim, bool):  # var(unbiased), PyTorch's other overload
            dim, unbiased = None, dim
        if unbiased is not None and correction is not None:
            raise TypeError(f"{op}: give unbiased or correction, not both")
        if correction is None:
            correction = 0 if unbiased is False else 1
        return rd.normalize_dims(dim, self.ndim, op, empty_is_all=True), correction

    def var(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
        """Variance Σ(x − x̄)²/(N − correction); as PyTorch, the second positional argument is
        ``unbiased`` (True: correction = 1, the default; False: 0), then ``keepdim``."""
        axes, correction = self._var_settings(dim, unbiased, correction, "var")
        return rd.Var.apply(self, axes=axes, keepdim=keepdim, correction=correction)

    def std(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
        """√var (arguments as :meth:`var`); its gradient is 0 where the variance is 0 (as PyTorch), not 0/0."""
        axes, correction = self._var_settings(dim, unbiased, correction, "std")
        return rd.Std.apply(self, axes=axes, keepdim=keepdim, correction=correction)

    def _extreme(self, dim, keepdim, use_min, op):
        if dim is None:
            if self.data.size == 0:
                raise ValueError(
                    f"{op}: the tensor is empty (shape {self.shape}), so it has no {op}imum; give dim= "
                    "to reduce along a non-empty dim"
                )
            # as PyTorch: a NaN is the max, and the gradient is shared among the NaNs
            return rd.Amax.apply(
                self, axes=tuple(range(self.ndim)), keepdim=False, use_min=use_min, nan_is_extreme=True
            )
        if self.ndim == 0:  # as PyTorch: a 0-d tensor is its own max, at index 0
            rd.normalize_dims(dim, 0, op)
            return ValuesIndices(
                self.reshape(1)._extreme(0, False, use_min, op).values.reshape(()), Tensor._wrap(np.asarray(0))
            )
        (axis,) = rd.normalize_dims(dim, self.ndim, op)
        _nonempty_dim(self, axis, op)
        values = rd.MaxAlongDim.apply(self, dim=axis, keepdim=keepdim, use_min=use_min)
        return_indices = (np.argmin if use_min else np.argmax)(self.data, axis=axis)
        indices = Tensor._wrap(np.expand_dims(return_indices, axis) if keepdim else return_indices)
        return ValuesIndices(values, indices)

    def max(self, dim=None, keepdim: bool = False):
        """Largest value; with ``dim``, a (values, indices) pair as PyTorch."""
        return self._extreme(dim, keepdim, False, "max")

    def min(self, dim=None, keepdim: bool = False):
        return self._extreme(dim, keepdim, True, "min")

    def amax(self, dim=None, keepdim: bool = False):
        axes = rd.normalize_dims(dim, self.ndim, "amax", empty_is_all=True)
        for axis in axes:
            _nonempty_dim(self, axis, "amax")
        return rd.Amax.apply(self, axes=axes, keepdim=keepdim, use_min=False)

    def amin(self, dim=None, keepdim: bool = False):
        axes = rd.normalize_dims(dim, self.ndim, "amin", empty_is_all=True)
        for axis in axes:
            _nonempty_dim(self, axis, "amin")
        return rd.Amax.apply(self, axes=axes, keepdim=keepdim, use_min=True)

    def argmax(self, dim=None, keepdim: bool = False):
        return _arg_extreme(self, dim, keepdim, np.argmax, "argmax")

    def argmin(self, dim=None, keepdim: bool = False):
        return _arg_extreme(self, dim, keepdim, np.argmin, "argmin")

    def norm(self, p=2, dim=None, keepdim: bool = False):
        """(Σ|x|ᵖ)^(1/p) over ``dim`` (all by default); p = 'fro' is 2, p = inf the largest |x|.
        Its gradient is 0 where the norm is 0 (as PyTorch)."""
        if not _is_float(self.data):
            raise TypeError(f"norm: needs a floating-point tensor, got {self.dtype}; use .float() first")
        p = 2 if p == "fro" else p
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not p > 0:
            raise ValueError(f"norm: p must be a positive number, 'fro' or inf, got {p!r}")
        axes = rd.normalize_dims(dim, self.ndim, "norm", empty_is_all=True)
        if math.isinf(p):
            return self.abs().amax(dim=axes, keepdim=keepdim)
        return rd.Norm.apply(self, axes=axes, keepdim=keepdim, p=p)

    def prod(self, dim=None, keepdim: bool = False):
        if dim is not None:
            (dim,) = rd.normalize_dims(dim, self.ndim, "prod")
        return rd.Prod.apply(self, dim=dim, keepdim=keepdim)

    def logsumexp(self, dim, keepdim: bool = False):
        """log Σ exp along ``dim``; over an empty dim it is log 0 = −inf, as PyTorch."""
        return _along_one_dim(rd.LogSumExp, _floating(self), dim, "logsumexp", keepdim)

    def softmax(self, dim):
        return _along_one_dim(rd.Softmax, _floating(self), dim, "softmax")

    def log_softmax(self, dim):
        return _along_one_dim(rd.LogSoftmax, _floating(self), dim, "log_softmax")

    # ------------------------------------------------------------ movement

    def reshape(self, *shape):
        shape = _shape_arg(shape, "reshape")
        try:
            np.empty(self.shape, dtype=np.bool_).reshape(shape)  # cheap validity check
        except ValueError:
            raise ValueError(
                f"reshape: cannot reshape a tensor of shape {self.shape} ({self.data.size} elements) "
                f"into shape {tuple(shape)}"
            ) from None
        return mv.Reshape.apply(self, shape=shape)

    def view(self, *shape):
        """The same memory with another shape, as PyTorch: refused when the layout does not allow it
        (after ``.T``, ``transpose``, ``permute``), where ``reshape`` would copy and writes into the
        result would no longer reach this tensor."""
        out = self.reshape(*shape)
        if self.data.size > 1 and not np.may_share_memory(out.data, self.data):
            raise RuntimeError(
                f"view: shape {tuple(out.shape)} is not compatible with the memory layout of this "
                f"tensor of shape {self.shape} (its elements are not laid out in that order, e.g. "
                "after .T, transpose or permute); use .reshape(...), which copies when it must, or "
                ".contiguous().view(...)"
            )
        return out

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        if self.ndim == 0:
            rd.normalize_dims(start_dim, 0, "flatten")
            rd.normalize_dims(end_dim, 0, "flatten")
            return self.reshape(1)
        (start,) = rd.normalize_dims(start_dim, self.ndim, "flatten")
        (end,) = rd.normalize_dims(end_dim, self.ndim, "flatten")
        if start > end:
            raise ValueError(f"flatten: start_dim ({start_dim}) comes after end_dim ({end_dim})")
        shape = self.shape[:start] + (-1,) + self.shape[end + 1 :]
        if 0 in self.shape:
            shape = self.shape[:start] + (int(np.prod(self.shape[start : end + 1])),) + self.shape[end + 1 :]
        return self.reshape(shape)

    def permute(self, *dims):
        dims = _shape_arg(dims, "permute")
        if sorted(d % max(self.ndim, 1) for d in dims) != list(range(self.ndim)):
            raise ValueError(
                f"permute: {tuple(dims)} is not a permutation of the {self.ndim} dims of shape {self.shape}"
            )
        return mv.Permute.apply(self, dims=tuple(d % self.ndim for d in dims))

    def transpose(self, dim0: int, dim1: int):
        dims = list(range(self.ndim))
        (a,) = rd.normalize_dims(dim0, self.ndim, "transpose")
        (b,) = rd.normalize_dims(dim1, self.ndim, "transpose")
        dims[a], dims[b] = dims[b], dims[a]
        return mv.Permute.apply(self, dims=tuple(dims))

    def squeeze(self, dim=None):
        """Remove dims of size 1: all of them, or those in ``dim`` (an int or a tuple, as PyTorch 2)."""
        if dim is None:
            return self.reshape(tuple(n for n in self.shape if n != 1))
        axes = rd.normalize_dims(dim, self.ndim, "squeeze")
        drop = {axis for axis in axes if self.ndim and self.shape[axis] == 1}
        if not drop:
            return self
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if i not in drop))

    def unsqueeze(self, dim: int):
        dim = _int_arg(dim, "unsqueeze", "dim")
        if not -self.ndim - 1 <= dim <= self.ndim:
            raise IndexError(f"unsqueeze: dim {dim} is out of range for a tensor with {self.ndim} dims")
        axis = dim % (self.ndim + 1)
        return self.reshape(self.shape[:axis] + (1,) + self.shape[axis:])

    def expand(self, *shape):
        shape = _shape_arg(shape, "expand")
        lead = len(shape) - self.ndim
        if lead < 0:
            raise ValueError(f"expand: cannot expand shape {self.shape} to fewer dims {tuple(shape)}")
        target = tuple(self.shape[i - lead] if n == -1 else n for i, n in enumerate(shape))
        _check_broadcast(self.shape, target, "expand", result=target)
        return mv.Expand.apply(self, shape=target)

    def expand_as(self, other):
        return self.expand(other.shape)

    def clone(self) -> "Tensor":
        """A copy with its own memory; gradients flow back to this tensor (as ``torch.clone``)."""
        return mv.Clone.apply(self)

    def contiguous(self) -> "Tensor":
        """This tensor when its memory is in row-major order, else a copy that is (``view`` needs it)."""
        return self if self.data.flags.c_contiguous else mv.Clone.apply(self)

    def t(self) -> "Tensor":
        """The transpose of a matrix (a 0-d or 1-D tensor is returned as is), as ``torch.t``."""
        if self.ndim > 2:
            raise ValueError(f"t: expects a tensor with at most 2 dims, got shape {self.shape}; use transpose(d0, d1)")
        return self if self.ndim < 2 else self.transpose(0, 1)

    def _triangle(self, diagonal: int, lower: bool, op: str) -> "Tensor":
        if self.ndim < 2:
            raise ValueError(
                f"{op}: needs a tensor with at least 2 dims (a matrix or a batch of them), got shape {self.shape}"
            )
        n, m = self.shape[-2:]
        keep = (
            np.tri(n, m, _int_arg(diagonal, op, "diagonal"), dtype=bool)
            if lower
            else ~np.tri(n, m, diagonal - 1, dtype=bool)
        )
        return self.masked_fill(~keep, 0)

    def tril(self, diagonal: int = 0) -> "Tensor":
        """The lower triangle (j − i ≤ diagonal) of the last two dims, zeros above; gradient there only."""
        return self._triangle(diagonal, True, "tril")

    def triu(self, diagonal: int = 0) -> "Tensor":
        """The upper triangle (j − i ≥ diagonal) of the last two dims, zeros below; gradient there only."""
        return self._triangle(diagonal, False, "triu")

    def _along(self, dim, index, op: str):
        """``dim`` normalised and ``index`` as an int64 array of this tensor's rank (gather/scatter)."""
        (axis,) = rd.normalize_dims(dim, self.ndim, op)
        index = np.array(index.data if isinstance(index, Tensor) else index)
        if index.dtype.kind not in "iu":
            raise TypeError(f"{op}: index must hold integers (int64), got {index.dtype}")
        if index.ndim != max(self.ndim, 1):
            raise ValueError(f"{op}: index must have as many dims as the tensor ({self.ndim}), got shape {index.shape}")
        size = self.shape[axis] if self.ndim else 1
        if index.size and (index.min() < -size or index.max() >= size):
            bad = index[(index < -size) | (index >= size)].flat[0]
            raise IndexError(
                f"{op}: index {bad} is out of bounds for dim {dim} of size {size} (tensor shape {self.shape})"
            )
        for d, (n, k) in enumerate(zip(index.shape, self.shape)):
            if d != axis and n > k:
                raise ValueError(f"{op}: index shape {index.shape} exceeds the tensor's shape {self.shape} in dim {d}")
        where = list(np.indices(index.shape, sparse=True))
        where[axis] = index
        return tuple(where)

    def gather(self, dim: int, index) -> "Tensor":
        """r[i][j][k] = x[index[i][j][k]][j][k] for dim 0 (and so on): picks along ``dim``; the
        gradient is added back where each value came from (repeats accumulate)."""
        return mv.Index.apply(self, index=self._along(dim, index, "gather"))

    def scatter(self, dim: int, index, src=None, *, value=None) -> "Tensor":
        """A copy with r[index[i][j]][j] = src[i][j] for dim 0 (and so on); ``src`` may be a number
        (or pass ``value=``). Gradient: g to this tensor outside the written places, g at them to src."""
        where = self._along(dim, index, "scatter")
        src = value if src is None else src
        if src is None:
            raise TypeError("scatter: give src (a tensor or a number) or value=")
        shape = np.broadcast_shapes(*[np.shape(w) for w in where])
        if isinstance(src, (Tensor, np.ndarray)):
            src = as_tensor(src)
            if src.ndim != len(shape) or any(n > k for n, k in zip(shape, src.shape)):
                raise ValueError(
                    f"scatter: src of shape {src.shape} must be at least index's shape {shape} in every dim"
                )
            src = src[tuple(slice(0, n) for n in shape)]
            if src.dtype != self.dtype:
                src = _to_dtype(src, self.dtype)
        else:
            src = Tensor._wrap(np.full(shape, src, dtype=self.dtype))
        return mv.SetItem.apply(self, src, index=where)

    def index_select(self, dim: int, index) -> "Tensor":
        """The slices at positions ``index`` (1-D integers) along ``dim``; repeats accumulate gradient."""
        (axis,) = rd.normalize_dims(dim, self.ndim, "index_select")
        index = np.array(index.data if isinstance(index, Tensor) else index)
        if index.ndim > 1 or index.dtype.kind not in "iu":
            raise TypeError(
                f"index_select: index must be a 1-D integer tensor, got {index.dtype} of shape {index.shape}"
            )
        return self[(slice(None),) * axis + (index.reshape(-1),)]

    def cumsum(self, dim: int) -> "Tensor":
        """Running sums along ``dim``: rₖ = Σ_{i≤k} xᵢ."""
        (axis,) = rd.normalize_dims(dim, self.ndim, "cumsum")
        x = self.reshape(1) if self.ndim == 0 else self
        out = rd.CumSum.apply(x, dim=axis)
        return out.reshape(()) if self.ndim == 0 else out

    def cumprod(self, dim: int) -> "Tensor":
        """Running products along ``dim``: rₖ = Π_{i≤k} xᵢ (exact gradient where some xᵢ = 0)."""
        (axis,) = rd.normalize_dims(dim, self.ndim, "cumprod")
        x = self.reshape(1) if self.ndim == 0 else self
        out = rd.CumProd.apply(x, dim=axis)
        return out.reshape(()) if self.ndim == 0 else out

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False):
        """(values, indices) sorted along ``dim``; values carry the gradient back to their places.
        Ties keep their order (a stable sort); NaN sorts as the largest, as PyTorch."""
        if self.ndim == 0:
            rd.normalize_dims(dim, 0, "sort")
            return ValuesIndices(self.clone(), Tensor._wrap(np.asarray(0)))
        (axis,) = rd.normalize_dims(dim, self.ndim, "sort")
        order = _sort_order(self.data, axis, descending)
        return ValuesIndices(self.gather(axis, order), Tensor._wrap(order))

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> "Tensor":
        return self.sort(dim, descending).indices

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
        """(values, indices) of the ``k`` largest (or smallest) along ``dim``, largest first."""
        x = self.reshape(1) if self.ndim == 0 else self
        (axis,) = rd.normalize_dims(dim, x.ndim, "topk")
        k = _int_arg(k, "topk", "k")
        if not 0 <= k <= x.shape[axis]:
            raise ValueError(
                f"topk: k={k} is out of range for dim {dim} of size {x.shape[axis]} (tensor shape {self.shape})"
            )
        order = np.take(_sort_order(x.data, axis, largest), np.arange(k), axis=axis)
        values, indices = x.gather(axis, order), Tensor._wrap(order)
        if self.ndim == 0:
            return ValuesIndices(values.reshape(()), Tensor._wrap(order.reshape(())))
        return ValuesIndices(values, indices)

    def flip(self, dims):
        """A reversed copy (as PyTorch; NumPy's flip is a view that later writes would change)."""
        dims = rd.normalize_dims(dims, self.ndim, "flip")
        return mv.Flip.apply(self, dims=dims)

    def __getitem__(self, index):
        index = _clean_index(index)
        try:  # (the op indexes before it records anything: a bad index leaves no trace)
            return mv.Index.apply(self, index=index)
        except IndexError as err:  # the error names the op and the shape
            raise IndexError(f"index: {err} (tensor shape {self.shape})") from None

    def __setitem__(self, index, value):
        """``t[index] = value`` in place. Into a constant, a value that requires grad makes ``t`` part
        of the graph (its gradient flows to the value); into a leaf that requires grad it is an
        error outside ``no_grad``, as in PyTorch."""
        index = _clean_index(index)
        if not (autograd._grad_enabled and (self.requires_grad or (isinstance(value, Tensor) and value.requires_grad))):
            try:
                self.data[index] = value.data if isinstance(value, Tensor) else value
            except IndexError as err:
                raise IndexError(f"setitem: {err} (tensor shape {self.shape})") from None
            except ValueError as err:
                raise ValueError(f"setitem: {err} (tensor shape {self.shape})") from None
            self._bump_version()
            return
        self._check_inplace("setitem")
        value = value if isinstance(value, Tensor) else Tensor._wrap(np.asarray(value, dtype=self.dtype))
        if value.dtype != self.dtype:
            value = value.type(self.dtype)
        try:
            target_shape = self.data[index].shape
        except IndexError as err:
            raise IndexError(f"setitem: {err} (tensor shape {self.shape})") from None
        _check_broadcast(value.shape, target_shape, "setitem", result=target_shape)
        before = self._before_inplace(copy=False)  # SetItem reads only its shape
        self._rebase(mv.SetItem.apply(before, value if value is not self else before, index=index), before, "setitem")

    # ------------------------------------------------------------ in place

    def _check_inplace(self, op: str) -> None:
        """The checks before an in-place op that gradients must flow through."""
        if self.requires_grad and self._ctx is None:
            raise RuntimeError(
                f"{op}: a leaf Variable that requires grad is being used in an in-place operation. "
                "This tensor is trained (its .grad is computed from the graph), so changing it while "
                "gradients are recorded is refused, as in PyTorch. To compute a new value, use an "
                "out-of-place op (y = x + 1, engine.where, masked_fill). To change the tensor "
                "itself (initialisation, a hand-written update step), do it under engine.no_grad(), "
                "and not between a forward pass and its backward()."
            )
        if self._vc[1]:
            raise RuntimeError(
                f"{op}: this tensor shares its memory with a view (reshape, permute, indexing, ...) "
                "that is part of the graph, so an in-place change while gradients are recorded would "
                "leave one of them with a stale gradient. The engine refuses it (PyTorch tracks "
                "views); use an out-of-place op instead (y = x + 1)."
            )

    def _before_inplace(self, copy: bool = True) -> "Tensor":
        """A tensor standing for this one's current value and history, for an in-place op to use."""
        before = Tensor._wrap(self.data.copy() if copy else self.data)
        before._ctx = self._ctx
        before._requires_grad = self._requires_grad
        return before

    def _rebase(self, new: "Tensor", before: "Tensor", op: str) -> "Tensor":
        """Write ``new`` (computed from ``before``) into this tensor, which becomes ``new``'s node's output.

        Ops recorded earlier that used this tensor keep sending their gradient to ``before``.
        """
        if new.dtype != self.dtype:
            new = new.type(self.dtype)
        old = self._ctx
        if old is not None and old.saved_tensors:  # did the op that made us save what we overwrite?
            for a in old.saved_tensors:
                if autograd._is_or_views(a, self.data):
                    old._output_overwritten = (a, "output 0", self._vc)
        self._write(new.data, op)
        self._ctx = new._ctx
        self._requires_grad = new._requires_grad
        if new.requires_grad or before.requires_grad:
            autograd._rebased = True
            history = self._history or []
            history.append((next(autograd._sequence), before))
            self._history = history
        return self

    def _write(self, values: np.ndarray, op: str) -> None:
        """``self.data[...] = values`` with PyTorch's checks, and a version bump."""
        if values.shape != self.shape:
            raise RuntimeError(f"{op}: output with shape {self.shape} doesn't match the broadcast shape {values.shape}")
        if values.dtype != self.dtype and not np.can_cast(values.dtype, self.dtype, casting="same_kind"):
            raise RuntimeError(
                f"{op}: result type {values.dtype} can't be cast to the desired output type {self.dtype}"
            )
        if not self.data.flags.writeable:
            raise RuntimeError(
                f"{op}: this tensor's memory is read-only (a broadcast view, e.g. from expand()); "
                "write into a copy instead"
            )
        self.data[...] = values
        self._bump_version()

    def _inplace(self, op: str, compute, *others) -> "Tensor":
        """Replace this tensor's values by ``compute(self, *others)``, in place, as PyTorch's ``x.op_()``.

        Without a graph to record, the result is written into ``.data``. With one (this tensor or an
        operand requires grad, outside ``no_grad``), the op is recorded on a copy of the old value
        and this tensor becomes its output.
        """
        if not (
            autograd._grad_enabled
            and (self.requires_grad or any(isinstance(o, Tensor) and o.requires_grad for o in others))
        ):
            with autograd.no_grad():
                new = compute(Tensor._wrap(self.data), *others)
            self._write(new.data, op)
            return self
        self._check_inplace(op)
        before = self._before_inplace()
        new = compute(before, *[before if o is self else o for o in others])
        return self._rebase(new, before, op)

    def add_(self, other, alpha=1):
        if alpha != 1:
            return self._inplace("add_", lambda x, o: x + o * alpha, other)
        return self._inplace("add_", Tensor.__add__, other)

    def sub_(self, other, alpha=1):
        if alpha != 1:
            return self._inplace("sub_", lambda x, o: x - o * alpha, other)
        return self._inplace("sub_", Tensor.__sub__, other)

    def mul_(self, other):
        return self._inplace("mul_", Tensor.__mul__, other)

    def div_(self, other):
        return self._inplace("div_", Tensor.__truediv__, other)

    def pow_(self, exponent):
        return self._inplace("pow_", Tensor.__pow__, exponent)

    __iadd__, __isub__, __imul__, __itruediv__, __ipow__ = add_, sub_, mul_, div_, pow_  # x += y is x.add_(y)

    def _unary_inplace(method: str):  # (a helper of the class body, deleted below)
        """The in-place form of a method without arguments: ``x.exp_()`` writes ``x.exp()`` into x."""

        def inplace(self):
            return self._inplace(f"{method}_", lambda x: getattr(x, method)())

        inplace.__name__ = inplace.__qualname__ = f"{method}_"
        inplace.__doc__ = f"``x.{method}()``, written into x (in place)."
        return inplace

    neg_, abs_, exp_, log_, sqrt_ = map(_unary_inplace, ("neg", "abs", "exp", "log", "sqrt"))
    sigmoid_, tanh_, relu_ = map(_unary_inplace, ("sigmoid", "tanh", "relu"))
    del _unary_inplace

    def clamp_(self, min=None, max=None):
        return self._inplace("clamp_", lambda x, lo, hi: x.clamp(lo, hi), min, max)

    clip_ = clamp_

    def masked_fill_(self, mask, value):
        return self._inplace("masked_fill_", lambda x, v: x.masked_fill(mask, v), value)

    def fill_(self, value):
        """Every element set to ``value`` (a number, or a 0-d tensor whose gradient is the sum)."""
        if isinstance(value, Tensor) and value.ndim != 0:
            raise ValueError(f"fill_: value must be a number or a 0-d tensor, got shape {value.shape}")
        return self._inplace("fill_", lambda x, v: _filled(x, v), value)

    def zero_(self):
        return self._inplace("zero_", lambda x: _filled(x, 0))

    def copy_(self, src):
        """This tensor's values replaced by ``src``'s (broadcast to this shape, cast to this dtype)."""
        src = src if isinstance(src, Tensor) else Tensor._wrap(np.array(_tensor_data(src)))
        _check_broadcast(src.shape, self.shape, "copy_", result=self.shape)
        return self._inplace("copy_", lambda x, v: _filled(x, v), src)

    def uniform_(self, a: float = 0.0, b: float = 1.0):
        from . import random as _random

        return self._write_drawn(_random.generator().uniform(a, b, self.shape), "uniform_")

    def normal_(self, mean: float = 0.0, std: float = 1.0):
        from . import random as _random

        return self._write_drawn(_random.generator().normal(mean, std, self.shape), "normal_")

    def _write_drawn(self, values: np.ndarray, op: str) -> "Tensor":
        values = values.astype(self.dtype)
        if autograd._grad_enabled and self.requires_grad:  # a non-leaf becomes a constant
            self._check_inplace(op)
            return self._rebase(Tensor._wrap(values), self._before_inplace(copy=False), op)
        self._write(values, op)
        return self

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


autograd._tensor_class = Tensor


# ---------------------------------------------------------------- helpers


class _Cast(autograd.Function):
    """r = a converted to another float dtype;  the gradient converts back (done centrally)."""

    @staticmethod
    def forward(ctx, a, *, dtype):
        return a.astype(dtype)

    @staticmethod
    def backward(ctx, g):
        return g


def _category(dtype) -> int:
    return 0 if dtype == np.bool_ else (2 if dtype.kind in "fc" else 1)


def _promote_types(x, y):
    """PyTorch's promote_types: the higher category (bool < integer < float) wins outright (float32
    with int64 stays float32, where NumPy gives float64); within a category, the wider type."""
    cx, cy = _category(x), _category(y)
    if cx != cy:
        return x if cx > cy else y
    return np.result_type(x, y)


def result_dtype(a: np.ndarray, b: np.ndarray):
    """PyTorch's result type of two tensors: a 0-d tensor does not widen a dimensioned one of the
    same or a higher category (float32 vector + float64 scalar tensor is float32)."""
    if (a.ndim == 0) == (b.ndim == 0):
        return _promote_types(a.dtype, b.dtype)
    dim, zero = (a.dtype, b.dtype) if a.ndim else (b.dtype, a.dtype)
    if _category(dim) >= _category(zero):
        return dim
    return _promote_types(dim, zero)


def _to_dtype(t: Tensor, dtype) -> Tensor:
    if t.data.dtype == dtype:
        return t
    if t.requires_grad:
        return _Cast.apply(t, dtype=dtype)
    return Tensor._wrap(t.data.astype(dtype))


def _promote(a: Tensor, b: Tensor, op: str):
    """Both operands converted to PyTorch's result type (see :func:`result_dtype`); dividing integers
    gives float32."""
    dtype = result_dtype(a.data, b.data)
    if op == "div" and dtype.kind not in "fc":
        dtype = np.dtype(_DEFAULT_FLOAT)
    return _to_dtype(a, dtype), _to_dtype(b, dtype)


def _floating(x: Tensor) -> Tensor:
    """``x`` itself if floating, else its values as float32 (PyTorch's default dtype)."""
    if x.data.dtype.kind in "fc":
        return x
    return Tensor._wrap(x.data.astype(_DEFAULT_FLOAT))


def _along_one_dim(function, x: Tensor, dim, op: str, keepdim: bool | None = None) -> Tensor:
    """``function.apply(x, dim=axis)`` along the one dim ``dim`` (softmax, log_softmax; logsumexp
    passes ``keepdim``); a 0-d tensor counts as a one-element axis, as PyTorch."""
    if x.ndim == 0:
        rd.normalize_dims(dim, 0, op)
        return _along_one_dim(function, x.reshape(1), 0, op, keepdim).reshape(())
    (axis,) = rd.normalize_dims(dim, x.ndim, op)
    if keepdim is None:  # speed: no keyword dictionary on the common path (0.3 µs a call)
        return function.apply(x, dim=axis)
    return function.apply(x, dim=axis, keepdim=keepdim)


def _no_bool(x: Tensor, op: str, hint: str = "convert it first, e.g. t.float() or t.long()") -> None:
    if x.data.dtype.kind == "b":
        raise TypeError(f"{op}: not supported for a bool tensor (as in PyTorch); {hint}")


def _negative_integer_power():
    raise RuntimeError(
        "pow: Integers to negative integer powers are not allowed (the result is not an integer); "
        "use a float base or a float tensor, e.g. 2.0 ** t or t.float() ** -1"
    )


def _nonempty_dim(x: Tensor, axis: int, op: str) -> None:
    if x.ndim and x.shape[axis] == 0:
        raise IndexError(
            f"{op}: Expected reduction dim {axis} to have non-zero size (the tensor has shape {x.shape}, "
            "so there is nothing to take the extreme of along it)"
        )


def _int_arg(value, op: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: {name} must be an int, got {type(value).__name__} {value!r}")
    return int(value)


def _filled(x: Tensor, v) -> Tensor:
    """A tensor of ``x``'s shape and dtype holding ``v`` (broadcast); a ``v`` that requires grad gets
    the gradient (summed over the copies)."""
    if not isinstance(v, Tensor):
        return Tensor._wrap(np.full(x.shape, v, dtype=x.dtype))
    if not v.requires_grad:
        return Tensor._wrap(np.broadcast_to(v.data.astype(x.dtype, copy=False), x.shape))
    return Tensor._wrap(np.zeros(x.shape, dtype=x.dtype)) + _to_dtype(v, x.dtype)


def _clamp_to_tensors(x: "Tensor", lo, hi) -> "Tensor":
    """clamp with tensor bounds: the gradient goes to x where lo ≤ x ≤ hi, else to the bound."""
    out = x
    if lo is not None:
        lo = as_tensor(lo)
        _check_broadcast(x.shape, lo.shape, "clamp (min)")
        out = where(out.data < lo.data, lo, out)
    if hi is not None:
        hi = as_tensor(hi)
        _check_broadcast(x.shape, hi.shape, "clamp (max)")
        out = where(out.data > hi.data, hi, out)
    return out


def _shape_arg(shape, op: str = "shape") -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    out = []
    for n in shape:
        if isinstance(n, Tensor):
            n = n.data
        if isinstance(n, bool) or isinstance(n, (float, np.floating)):
            raise TypeError(f"{op}: sizes must be integers, got {type(n).__name__} {n!r} in {tuple(shape)!r}")
        try:
            out.append(operator.index(n))
        except TypeError:
            raise TypeError(f"{op}: sizes must be integers, got {type(n).__name__} {n!r}") from None
    return tuple(out)


def _clean_index(index):
    """Tensors inside an index become arrays (they carry no gradient); index arrays are copied,
    since backward uses them and the caller may change them in the meantime."""
    if isinstance(index, Tensor):
        return index.data.copy()
    if isinstance(index, np.ndarray):
        return index.copy()
    if isinstance(index, tuple):
        return tuple(
            i.data.copy() if isinstance(i, Tensor) else (i.copy() if isinstance(i, np.ndarray) else i) for i in index
        )
    if isinstance(index, list):
        return np.array([i.item() if isinstance(i, Tensor) else i for i in index])
    return index


def _check_broadcast(a: tuple, b: tuple, op: str, result=None) -> None:
    """Raise a clear error when shapes ``a`` and ``b`` do not broadcast (NumPy's rules)."""
    if a == b:
        return
    for x, y in zip(reversed(a), reversed(b)):
        if x != y and x != 1 and y != 1:
            raise ValueError(
                f"{op}: shapes {a} and {b} cannot be broadcast together (sizes {x} and {y} differ and neither is 1)"
            )
    if result is not None:
        for x, y in zip(reversed(a), reversed(result)):
            if x != y and x != 1:
                raise ValueError(f"{op}: cannot expand shape {a} to {result}")


def _arg_extreme(t: Tensor, dim, keepdim, fn, op) -> Tensor:
    if dim is None:
        if t.data.size == 0:
            raise ValueError(f"{op}: the tensor is empty (shape {t.shape}); give dim= to reduce along a non-empty dim")
        return Tensor._wrap(np.asarray(fn(t.data)))
    (axis,) = rd.normalize_dims(dim, t.ndim, op)
    _nonempty_dim(t, axis, op)
    out = fn(t.data, axis=axis)
    return Tensor._wrap(np.expand_dims(out, axis) if keepdim else out)


def as_tensor(x) -> Tensor:
    """``x`` unchanged if it is a Tensor, else a constant Tensor (arrays keep their dtype).

    A NumPy array is copied: an op may save it for backward, and the caller may change it later.
    """
    if isinstance(x, Tensor):
        return x
    if type(x) is np.ndarray and x.dtype.kind in "biufc":  # the common case (a batch), checked
        return Tensor._wrap(np.array(x))
    if isinstance(x, np.ndarray):
        return Tensor._wrap(np.array(_tensor_data(x)))
    return Tensor._wrap(_tensor_data(x))


def _is_device(arg) -> bool:
    return isinstance(arg, str) and arg.split(":")[0] in ("cpu", "cuda", "mps", "xpu", "meta")


def _check_device(device, op: str) -> None:
    if device is None:
        return
    name = str(device)
    if name.split(":")[0] != "cpu":
        raise RuntimeError(
            f"{op}: the engine runs on the CPU only (NumPy); device {name!r} is not available, use 'cpu'"
        )


def _sort_order(data: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Indices that sort ``data`` along ``axis`` (stable; NaN counts as the largest, as PyTorch)."""
    if not descending:
        return np.argsort(data, axis=axis, kind="stable")
    if data.dtype == np.bool_:
        data = data.astype(np.int8)
    key = -data if data.dtype.kind != "u" else data.max(initial=0) - data
    if data.dtype.kind == "f":
        key = np.where(np.isnan(data), -np.inf, key)  # NaN first, as the largest
    return np.argsort(key, axis=axis, kind="stable")


def _division_operands(t: Tensor, other, reverse: bool, op: str):
    """The operands of ``//`` or ``%``, promoted and checked (an integer divisor of 0 is an error)."""
    other = t._operand(other, op)
    a, b = (other, t) if reverse else (t, other)
    if a.data.dtype != b.data.dtype:
        a, b = _promote(a, b, op)
    _check_broadcast(a.shape, b.shape, op)
    _no_integer_zero(b, op)
    return a, b


def _floor_divide(t: Tensor, other, reverse: bool) -> Tensor:
    a, b = _division_operands(t, other, reverse, "floor_divide")
    return Tensor._wrap(np.asarray(np.floor_divide(a.data, b.data)))


def _remainder(t: Tensor, other, reverse: bool) -> Tensor:
    return ew.Remainder.apply(*_division_operands(t, other, reverse, "remainder"))


def _no_integer_zero(b: Tensor, op: str) -> None:
    if b.data.dtype.kind in "biu" and not np.all(b.data):
        raise RuntimeError(f"{op}: ZeroDivisionError: an integer divisor is 0 (as PyTorch)")


# ---------------------------------------------------------------- free functions


def tensor(data, requires_grad: bool = False, dtype=None) -> Tensor:
    """A tensor whose dtype is inferred from ``data``, as ``torch.tensor``: Python floats give
    float32, ints int64, bools bool; NumPy arrays and scalars keep theirs (``Tensor`` gives float32)."""
    return Tensor(data, requires_grad=requires_grad, dtype=dtype, _infer=True)


def matmul(a, b) -> Tensor:
    """a @ b with NumPy's matmul rules (1-D vectors, broadcast batch axes)."""
    a, b = as_tensor(a), as_tensor(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: both operands need at least 1 dimension, got shapes {a.shape} and {b.shape}")
    k_a = a.shape[-1]
    k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if k_a != k_b:
        raise ValueError(
            f"matmul: shapes {a.shape} and {b.shape} do not align: the last dim of the first "
            f"({k_a}) must equal the {'only' if b.ndim == 1 else 'second-to-last'} dim of the second ({k_b})"
        )
    if a.ndim > 2 and b.ndim > 2:
        _check_broadcast(a.shape[:-2], b.shape[:-2], "matmul (batch dims)")
    if a.data.dtype != b.data.dtype:
        raise RuntimeError(
            f"matmul: expected both operands to have the same dtype, but got {a.data.dtype} and "
            f"{b.data.dtype} (as PyTorch, matmul does not promote); convert one, e.g. b.to(a.dtype)"
        )
    return MatMul.apply(a, b)


def cat(tensors: Sequence, dim: int = 0) -> Tensor:
    """Join tensors along an existing ``dim``."""
    tensors = [as_tensor(t) for t in tensors]
    if not tensors:
        raise ValueError("cat: expected a non-empty sequence of tensors")
    ndim = tensors[0].ndim
    if ndim == 0:
        raise ValueError("cat: 0-d tensors cannot be concatenated (they have no dim); use engine.stack")
    (axis,) = rd.normalize_dims(dim, ndim, "cat")
    for t in tensors[1:]:
        if t.ndim != ndim or any(t.shape[i] != tensors[0].shape[i] for i in range(ndim) if i != axis):
            raise ValueError(f"cat: shapes {[tuple(x.shape) for x in tensors]} must match except in dim {dim}")
    dtype = tensors[0].data.dtype
    if any(t.data.dtype != dtype for t in tensors):  # PyTorch's promotion: int with float32 is float32
        for t in tensors[1:]:
            dtype = _promote_types(dtype, t.data.dtype)
        tensors = [_to_dtype(t, dtype) for t in tensors]
    return mv.Cat.apply(*tensors, dim=axis)


def stack(tensors: Sequence, dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new ``dim``."""
    tensors = [as_tensor(t) for t in tensors]
    if not tensors:
        raise ValueError("stack: expected a non-empty sequence of tensors")
    shapes = {t.shape for t in tensors}
    if len(shapes) > 1:
        raise ValueError(f"stack: all tensors must have the same shape, got {sorted(shapes)}")
    ndim = tensors[0].ndim
    if not -ndim - 1 <= dim <= ndim:
        raise IndexError(
            f"stack: dim {dim} is out of range for stacking tensors of shape {tensors[0].shape} (valid: {-ndim - 1} to {ndim})"
        )
    return cat([t.unsqueeze(dim) for t in tensors], dim)


def _operands(a, b, op: str):
    """Two operands of a free function as Tensors, promoted as the operators do (a number takes the
    tensor's dtype, so ``where(x > 0, x, 0)`` keeps a float32 ``x`` float32)."""
    if isinstance(a, Tensor) and not isinstance(b, Tensor):
        b = a._operand(b, op)
    elif isinstance(b, Tensor) and not isinstance(a, Tensor):
        a = b._operand(a, op)
    else:
        a, b = as_tensor(a), as_tensor(b)
    if a.data.dtype != b.data.dtype:
        a, b = _promote(a, b, op)
    return a, b


def where(condition, a, b) -> Tensor:
    """``a`` where ``condition`` is True, else ``b``; gradients flow to the chosen side only."""
    cond = np.array(condition.data if isinstance(condition, Tensor) else condition)  # a copy: saved
    if cond.dtype != np.bool_:
        raise TypeError(f"where: condition must be boolean, got {cond.dtype}")
    a, b = _operands(a, b, "where")
    _check_broadcast(a.shape, b.shape, "where")
    _check_broadcast(cond.shape, np.broadcast_shapes(a.shape, b.shape), "where")
    return ew.Where.apply(a, b, cond=cond)


def maximum(a, b) -> Tensor:
    a, b = _operands(a, b, "maximum")
    _check_broadcast(a.shape, b.shape, "maximum")
    return ew.Maximum.apply(a, b)


def minimum(a, b) -> Tensor:
    a, b = _operands(a, b, "minimum")
    _check_broadcast(a.shape, b.shape, "minimum")
    return ew.Minimum.apply(a, b)


def log(x, base=None) -> Tensor:
    """ln x, or log_base(x) = ln x / ln base (base may be a tensor that needs a gradient)."""
    x = _floating(as_tensor(x))  # an integer tensor: float32, as torch (NumPy: uint8 -> float16)
    if base is None:
        return ew.Log.apply(x)
    if isinstance(base, (int, float)) and not isinstance(base, bool):
        if base <= 0 or base == 1:
            raise ValueError(f"log: the base must be positive and not 1, got {base}")
        base = Tensor._wrap(np.asarray(base, dtype=x.dtype if _is_float(x.data) else _DEFAULT_FLOAT))
    base = as_tensor(base)
    _check_broadcast(x.shape, base.shape, "log")
    return ew.LogBase.apply(x, base)


# PyTorch's free functions over the methods: engine.exp(x) is x.exp(), engine.max(x, 1) is x.max(1)
# (values and indices), engine.softmax(x, dim) is x.softmax(dim). Each takes a Tensor, an array or
# a number first, as torch's take a tensor. engine/__init__ binds them (kept out of this module's
# namespace, where sum, abs, max, ... must stay Python's builtins).
def _method_function(name: str):
    method = getattr(Tensor, name)

    def function(input, *args, **kwargs):
        return method(as_tensor(input), *args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``engine.{name}(x, ...)`` is ``x.{name}(...)``, as ``torch.{name}``."
    return function


def _extreme_function(name: str, pairwise):
    def function(input, dim=None, keepdim: bool = False):
        if isinstance(dim, (Tensor, np.ndarray)):  # torch.max(a, b): the elementwise maximum
            return pairwise(input, dim)
        return getattr(as_tensor(input), name)(dim, keepdim)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (
        f"``engine.{name}(x)``, ``engine.{name}(x, dim)`` (values, indices) or "
        f"``engine.{name}(a, b)`` (elementwise), as ``torch.{name}``."
    )
    return function


METHOD_FUNCTIONS = {
    name: _method_function(name)
    for name in (
        "exp",
        "log2",
        "log10",
        "sqrt",
        "square",
        "abs",
        "neg",
        "sin",
        "cos",
        "tanh",
        "sigmoid",
        "relu",
        "clamp",
        "clip",
        "softmax",
        "log_softmax",
        "logsumexp",
        "sum",
        "mean",
        "var",
        "std",
        "prod",
        "amax",
        "amin",
        "argmax",
        "argmin",
        "norm",
        "any",
        "all",
        "cumsum",
        "cumprod",
        "sort",
        "argsort",
        "topk",
        "reshape",
        "flatten",
        "transpose",
        "permute",
        "squeeze",
        "unsqueeze",
        "flip",
        "t",
        "tril",
        "triu",
        "gather",
        "scatter",
        "index_select",
        "masked_fill",
        "clone",
        "remainder",
        "floor_divide",
    )
}
METHOD_FUNCTIONS["max"] = _extreme_function("max", maximum)
METHOD_FUNCTIONS["min"] = _extreme_function("min", minimum)

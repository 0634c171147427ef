"""The ``Tensor``: a NumPy array, its gradient, and the graph node that produced it.

Every differentiable method builds its result through a primitive in :mod:`engine.ops`; the
methods here only check and convert arguments (so that errors name the operation and the shapes
at fault) and pick the primitive.
"""

from __future__ import annotations

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


def _as_array(data, dtype=None) -> np.ndarray:
    """PyTorch's conversion rules: Python floats and lists become float32, arrays keep their dtype."""
    if isinstance(data, Tensor):
        data = data.data
    if isinstance(data, np.ndarray):
        arr = data
    elif isinstance(data, np.generic):
        arr = np.asarray(data)
    else:
        try:
            arr = np.asarray(data)
        except ValueError:
            raise ValueError(
                f"tensor: nested lists must be rectangular (every row the same length), got {data!r:.80}"
            ) from None
        if arr.dtype == np.float64:
            arr = arr.astype(_DEFAULT_FLOAT)
        elif arr.dtype == object:
            raise TypeError(f"tensor: cannot build a tensor from {type(data).__name__} {data!r:.80}")
    if dtype is not None:
        arr = arr.astype(np.dtype(dtype), copy=False)
    return arr


def _is_float(arr: np.ndarray) -> bool:
    return arr.dtype.kind in "fc"


class Tensor:
    """An n-dimensional array that can record the operations applied to it, for ``backward()``.

    ``Tensor(data, requires_grad=False, dtype=None)``: Python floats and lists become float32,
    a NumPy array keeps its dtype (float64 stays float64), and ``dtype=`` overrides both.
    """

    __slots__ = ("data", "grad", "requires_grad", "_ctx", "_retain", "__weakref__")
    # NumPy defers to our reflected operators (array + tensor -> Tensor.__radd__)
    __array_ufunc__ = None

    def __init__(self, data, requires_grad: bool = False, dtype=None):
        arr = _as_array(data, dtype)
        if isinstance(data, (np.ndarray, Tensor)) and arr is (data.data if isinstance(data, Tensor) else data):
            arr = arr.copy()  # as torch.tensor: the tensor owns its data
        self.data = arr
        self.grad = None
        self._ctx = None
        self._retain = False
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    # ------------------------------------------------------------ construction (internal)

    @classmethod
    def _wrap(cls, data: np.ndarray) -> "Tensor":
        """A constant tensor around ``data`` (no copy, no checks): the fast path for op outputs."""
        t = cls.__new__(cls)
        t.data = data if isinstance(data, np.ndarray) else np.asarray(data)
        t.grad = None
        t._ctx = None
        t._retain = False
        t.requires_grad = False
        return t

    @classmethod
    def _from_op(cls, data: np.ndarray, ctx) -> "Tensor":
        t = cls._wrap(data)
        t._ctx = ctx
        t.requires_grad = True
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

    def __hash__(self):
        return id(self)

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
        self.requires_grad = bool(requires_grad)
        return self

    def retain_grad(self) -> "Tensor":
        """Keep this non-leaf tensor's gradient in ``.grad`` after ``backward()``."""
        self._retain = True
        return self

    def backward(self, gradient=None) -> None:
        """Compute d(self)/d(leaf) for every leaf that requires a gradient; leaves accumulate ``.grad``.

        ``gradient`` is dL/d(self); it may be omitted only for a single-element tensor (L = self).
        """
        if not self.requires_grad:
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
            grad = np.ones_like(self.data)
        else:
            grad = np.array(_as_array(gradient), dtype=self.data.dtype, copy=True)
            if grad.shape != self.shape:
                raise ValueError(
                    f"backward: gradient has shape {grad.shape} but the tensor has shape {self.shape}"
                )
        autograd.backward(self, grad)

    def detach(self) -> "Tensor":
        """The same data, cut from the graph (shares memory, like PyTorch)."""
        return Tensor._wrap(self.data)

    def zero_grad_(self) -> None:
        self.grad = None

    # ------------------------------------------------------------ conversion

    def numpy(self) -> np.ndarray:
        return self.data

    def item(self):
        if self.data.size != 1:
            raise ValueError(
                f"item: only a single-element tensor converts to a Python number; this one has shape {self.shape}"
            )
        return self.data.item()

    def tolist(self):
        return self.data.tolist()

    def to(self, dtype) -> "Tensor":
        return self.type(dtype)

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
        if isinstance(other, (np.ndarray, np.generic, list, tuple)):
            return Tensor._wrap(_as_array(other))
        raise TypeError(f"{op}: unsupported operand of type {type(other).__name__}")

    def _binary(self, fn, other, op: str, reverse: bool = False) -> "Tensor":
        other = self._operand(other, op)
        a, b = (other, self) if reverse else (self, other)
        if a.data.dtype != b.data.dtype or (op == "div" and not _is_float(a.data)):
            a, b = _promote(a, b, op)
        _check_broadcast(a.shape, b.shape, op)
        return fn.apply(a, b)

    def __add__(self, other):
        return self._binary(ew.Add, other, "add")

    def __radd__(self, other):
        return self._binary(ew.Add, other, "add", reverse=True)

    def __sub__(self, other):
        return self._binary(ew.Sub, other, "sub")

    def __rsub__(self, other):
        return self._binary(ew.Sub, other, "sub", reverse=True)

    def __mul__(self, other):
        return self._binary(ew.Mul, other, "mul")

    def __rmul__(self, other):
        return self._binary(ew.Mul, other, "mul", reverse=True)

    def __truediv__(self, other):
        return self._binary(ew.Div, other, "div")

    def __rtruediv__(self, other):
        return self._binary(ew.Div, other, "div", reverse=True)

    def __pow__(self, exponent):
        if isinstance(exponent, np.generic) and exponent.dtype.kind in "iuf":
            exponent = exponent.item()  # np.float64(2.5) must not promote a float32 tensor
        if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
            if isinstance(exponent, float) and not _is_float(self.data):
                return self.float() ** exponent  # an integer tensor to a float power is float32, as torch
            return ew.PowScalar.apply(self, exponent=exponent)
        return self._binary(ew.Pow, exponent, "pow")

    def __rpow__(self, base):
        if isinstance(base, (int, float)) and not isinstance(base, bool) and base > 0:
            if isinstance(base, float) and not _is_float(self.data):
                return base ** self.float()  # 1.5 ** arange(3) is float32 (an int base dtype would truncate 1.5)
            return ew.RPowScalar.apply(self, base=base)
        return self._binary(ew.Pow, base, "pow", reverse=True)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(self._operand(other, "matmul"), self)

    def __neg__(self):
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
        other = other.data if isinstance(other, Tensor) else other
        _check_broadcast(self.shape, np.shape(other), fn.__name__)
        return Tensor._wrap(fn(self.data, other))

    def __lt__(self, other):
        return self._compare(other, np.less)

    def __le__(self, other):
        return self._compare(other, np.less_equal)

    def __gt__(self, other):
        return self._compare(other, np.greater)

    def __ge__(self, other):
        return self._compare(other, np.greater_equal)

    def __eq__(self, other):
        return self._compare(other, np.equal)

    def __ne__(self, other):
        return self._compare(other, np.not_equal)

    def __invert__(self):
        if self.data.dtype != np.bool_:
            raise TypeError(f"~ (logical not) needs a bool tensor, got {self.data.dtype}")
        return Tensor._wrap(~self.data)

    def __and__(self, other):
        return self._compare(other, np.logical_and)

    def __or__(self, other):
        return self._compare(other, np.logical_or)

    def any(self) -> "Tensor":
        return Tensor._wrap(np.asarray(self.data.any()))

    def all(self) -> "Tensor":
        return Tensor._wrap(np.asarray(self.data.all()))

    # ------------------------------------------------------------ elementwise functions

    def exp(self):
        return ew.Exp.apply(self)

    def log(self):
        return ew.Log.apply(self)

    def log2(self):
        return log(self, 2.0)

    def log10(self):
        return log(self, 10.0)

    def sqrt(self):
        return ew.Sqrt.apply(self)

    def square(self):
        return ew.PowScalar.apply(self, exponent=2)

    def abs(self):
        return ew.Abs.apply(self)

    def sin(self):
        return ew.Sin.apply(self)

    def cos(self):
        return ew.Cos.apply(self)

    def tanh(self):
        return ew.Tanh.apply(self)

    def sigmoid(self):
        return ew.Sigmoid.apply(self)

    def relu(self):
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
        return ew.Clamp.apply(self, lo=min, hi=max)

    clip = clamp

    def masked_fill(self, mask, value) -> "Tensor":
        """``value`` where ``mask`` is True, this tensor elsewhere; no gradient where filled."""
        mask = np.asarray(mask.data if isinstance(mask, Tensor) else mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"masked_fill: mask must be boolean, got {mask.dtype}")
        _check_broadcast(self.shape, mask.shape, "masked_fill")
        fill = Tensor._wrap(np.asarray(value, dtype=self.dtype))
        return ew.Where.apply(fill, self, cond=mask)

    # ------------------------------------------------------------ reductions

    def sum(self, dim=None, keepdim: bool = False):
        return rd.Sum.apply(self, axes=rd.normalize_dims(dim, self.ndim, "sum"), keepdim=keepdim)

    def mean(self, dim=None, keepdim: bool = False):
        if not _is_float(self.data):
            raise TypeError(f"mean: needs a floating-point tensor, got {self.dtype}; use .float() first")
        return rd.Mean.apply(self, axes=rd.normalize_dims(dim, self.ndim, "mean"), keepdim=keepdim)

    def var(self, dim=None, keepdim: bool = False, unbiased: bool = True, correction=None):
        if not _is_float(self.data):
            raise TypeError(f"var: needs a floating-point tensor, got {self.dtype}; use .float() first")
        correction = (1 if unbiased else 0) if correction is None else correction
        axes = rd.normalize_dims(dim, self.ndim, "var")
        return rd.Var.apply(self, axes=axes, keepdim=keepdim, correction=correction)

    def std(self, dim=None, keepdim: bool = False, unbiased: bool = True, correction=None):
        return self.var(dim, keepdim, unbiased, correction).sqrt()

    def _extreme(self, dim, keepdim, use_min, op):
        if self.data.size == 0:
            raise ValueError(f"{op}: the tensor is empty (shape {self.shape})")
        if dim is None:
            return rd.Amax.apply(self, axes=tuple(range(self.ndim)), keepdim=False, use_min=use_min)
        if self.ndim == 0:  # as PyTorch: a 0-d tensor is its own max, at index 0
            rd.normalize_dims(dim, 0, op)
            return ValuesIndices(self.reshape(1)._extreme(0, False, use_min, op).values.reshape(()),
                                 Tensor._wrap(np.asarray(0)))
        (axis,) = rd.normalize_dims(dim, self.ndim, op)
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
        axes = rd.normalize_dims(dim, self.ndim, "amax")
        return rd.Amax.apply(self, axes=axes, keepdim=keepdim, use_min=False)

    def amin(self, dim=None, keepdim: bool = False):
        axes = rd.normalize_dims(dim, self.ndim, "amin")
        return rd.Amax.apply(self, axes=axes, keepdim=keepdim, use_min=True)

    def argmax(self, dim=None, keepdim: bool = False):
        return _arg_extreme(self, dim, keepdim, np.argmax, "argmax")

    def argmin(self, dim=None, keepdim: bool = False):
        return _arg_extreme(self, dim, keepdim, np.argmin, "argmin")

    def prod(self, dim=None, keepdim: bool = False):
        if dim is not None:
            (dim,) = rd.normalize_dims(dim, self.ndim, "prod")
        return rd.Prod.apply(self, dim=dim, keepdim=keepdim)

    def logsumexp(self, dim, keepdim: bool = False):
        if self.ndim == 0:  # as PyTorch: a 0-d tensor is a one-element axis
            rd.normalize_dims(dim, 0, "logsumexp")
            return self.reshape(1).logsumexp(0).reshape(())
        (axis,) = rd.normalize_dims(dim, self.ndim, "logsumexp")
        return rd.LogSumExp.apply(self, dim=axis, keepdim=keepdim)

    def softmax(self, dim):
        if self.ndim == 0:  # as PyTorch: a 0-d tensor is a one-element axis
            rd.normalize_dims(dim, 0, "softmax")
            return self.reshape(1).softmax(0).reshape(())
        (axis,) = rd.normalize_dims(dim, self.ndim, "softmax")
        return rd.Softmax.apply(self, dim=axis)

    def log_softmax(self, dim):
        if self.ndim == 0:  # as PyTorch: a 0-d tensor is a one-element axis
            rd.normalize_dims(dim, 0, "log_softmax")
            return self.reshape(1).log_softmax(0).reshape(())
        (axis,) = rd.normalize_dims(dim, self.ndim, "log_softmax")
        return rd.LogSoftmax.apply(self, dim=axis)

    # ------------------------------------------------------------ movement

    def reshape(self, *shape):
        shape = _shape_arg(shape)
        try:
            np.empty(self.shape, dtype=np.bool_).reshape(shape)  # cheap validity check
        except ValueError:
            raise ValueError(
                f"reshape: cannot reshape a tensor of shape {self.shape} ({self.data.size} elements) "
                f"into shape {tuple(shape)}"
            ) from None
        return mv.Reshape.apply(self, shape=shape)

    view = reshape

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        if self.ndim == 0:
            return self.reshape(1)
        start, end = start_dim % self.ndim, end_dim % self.ndim
        if start > end:
            raise ValueError(f"flatten: start_dim ({start_dim}) comes after end_dim ({end_dim})")
        shape = self.shape[:start] + (-1,) + self.shape[end + 1:]
        if 0 in self.shape:
            shape = self.shape[:start] + (int(np.prod(self.shape[start:end + 1])),) + self.shape[end + 1:]
        return self.reshape(shape)

    def permute(self, *dims):
        dims = _shape_arg(dims)
        if sorted(d % max(self.ndim, 1) for d in dims) != list(range(self.ndim)):
            raise ValueError(f"permute: {tuple(dims)} is not a permutation of the {self.ndim} dims of shape {self.shape}")
        return mv.Permute.apply(self, dims=tuple(d % self.ndim for d in dims))

    def transpose(self, dim0: int, dim1: int):
        dims = list(range(self.ndim))
        (a,) = rd.normalize_dims(dim0, self.ndim, "transpose")
        (b,) = rd.normalize_dims(dim1, self.ndim, "transpose")
        dims[a], dims[b] = dims[b], dims[a]
        return mv.Permute.apply(self, dims=tuple(dims))

    def squeeze(self, dim=None):
        if dim is None:
            return self.reshape(tuple(n for n in self.shape if n != 1))
        (axis,) = rd.normalize_dims(dim, self.ndim, "squeeze")
        if self.shape[axis] != 1:
            return self
        return self.reshape(self.shape[:axis] + self.shape[axis + 1:])

    def unsqueeze(self, dim: int):
        if not -self.ndim - 1 <= dim <= self.ndim:
            raise IndexError(f"unsqueeze: dim {dim} is out of range for a tensor with {self.ndim} dims")
        axis = dim % (self.ndim + 1)
        return self.reshape(self.shape[:axis] + (1,) + self.shape[axis:])

    def expand(self, *shape):
        shape = _shape_arg(shape)
        lead = len(shape) - self.ndim
        if lead < 0:
            raise ValueError(f"expand: cannot expand shape {self.shape} to fewer dims {tuple(shape)}")
        target = tuple(self.shape[i - lead] if n == -1 else n for i, n in enumerate(shape))
        _check_broadcast(self.shape, target, "expand", result=target)
        return mv.Expand.apply(self, shape=target)

    def expand_as(self, other):
        return self.expand(other.shape)

    def flip(self, dims):
        dims = rd.normalize_dims(dims, self.ndim, "flip")
        return mv.Flip.apply(self, dims=dims)

    def __getitem__(self, index):
        index = _clean_index(index)
        try:
            self.data[index]  # validate here so the error names the op and the shape
        except IndexError as err:
            raise IndexError(f"index: {err} (tensor shape {self.shape})") from None
        return mv.Index.apply(self, index=index)

    def __setitem__(self, index, value):
        if self.requires_grad and autograd.is_grad_enabled():
            raise RuntimeError(
                "setitem: in-place assignment into a tensor that requires grad would break its "
                "gradient; assign under engine.no_grad(), or build a new tensor with engine.where/cat"
            )
        self.data[_clean_index(index)] = value.data if isinstance(value, Tensor) else value

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


def _promote(a: Tensor, b: Tensor, op: str):
    """PyTorch's promotion where NumPy's differs: a float tensor meeting an integer or bool one keeps
    its float dtype (NumPy widens float32 with int64 to float64), and dividing integers gives float32."""
    float_a, float_b = _is_float(a.data), _is_float(b.data)
    if float_a and not float_b:
        b = Tensor._wrap(b.data.astype(a.data.dtype))
    elif float_b and not float_a:
        a = Tensor._wrap(a.data.astype(b.data.dtype))
    elif not float_a and not float_b and op == "div":
        a, b = Tensor._wrap(a.data.astype(_DEFAULT_FLOAT)), Tensor._wrap(b.data.astype(_DEFAULT_FLOAT))
    return a, b


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


def _shape_arg(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int(n) for n in shape)


def _clean_index(index):
    """Tensors inside an index become arrays (they carry no gradient)."""
    if isinstance(index, Tensor):
        return index.data
    if isinstance(index, tuple):
        return tuple(i.data if isinstance(i, Tensor) else i for i in index)
    if isinstance(index, list):
        return np.asarray(index)
    return index


def _check_broadcast(a: tuple, b: tuple, op: str, result=None) -> None:
    """Raise a clear error when shapes ``a`` and ``b`` do not broadcast (NumPy's rules)."""
    if a == b:
        return
    for x, y in zip(reversed(a), reversed(b)):
        if x != y and x != 1 and y != 1:
            raise ValueError(
                f"{op}: shapes {a} and {b} cannot be broadcast together (sizes {x} and {y} differ "
                "and neither is 1)"
            )
    if result is not None:
        for x, y in zip(reversed(a), reversed(result)):
            if x != y and x != 1:
                raise ValueError(f"{op}: cannot expand shape {a} to {result}")


def _arg_extreme(t: Tensor, dim, keepdim, fn, op) -> Tensor:
    if dim is None:
        return Tensor._wrap(np.asarray(fn(t.data)))
    (axis,) = rd.normalize_dims(dim, t.ndim, op)
    out = fn(t.data, axis=axis)
    return Tensor._wrap(np.expand_dims(out, axis) if keepdim else out)


def as_tensor(x) -> Tensor:
    """``x`` unchanged if it is a Tensor, else a constant Tensor (arrays keep their dtype)."""
    return x if isinstance(x, Tensor) else Tensor._wrap(_as_array(x))


# ---------------------------------------------------------------- free functions


def tensor(data, requires_grad: bool = False, dtype=None) -> Tensor:
    """Same as ``Tensor(...)``, as ``torch.tensor``."""
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


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
            raise ValueError(
                f"cat: shapes {[tuple(x.shape) for x in tensors]} must match except in dim {dim}"
            )
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
        raise IndexError(f"stack: dim {dim} is out of range for stacking tensors of shape {tensors[0].shape} (valid: {-ndim - 1} to {ndim})")
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
    cond = np.asarray(condition.data if isinstance(condition, Tensor) else condition)
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
    x = as_tensor(x)
    if base is None:
        return ew.Log.apply(x)
    if isinstance(base, (int, float)) and not isinstance(base, bool):
        if base <= 0 or base == 1:
            raise ValueError(f"log: the base must be positive and not 1, got {base}")
        base = Tensor._wrap(np.asarray(base, dtype=x.dtype if _is_float(x.data) else _DEFAULT_FLOAT))
    base = as_tensor(base)
    _check_broadcast(x.shape, base.shape, "log")
    return ew.LogBase.apply(x, base)

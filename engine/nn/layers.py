"""Layers as modules: dense, normalisation, dropout, embedding, reshaping and activations.

Each layer holds its parameters and calls the matching function of :mod:`engine.functional`, where
the arithmetic (and hence the gradient) lives. Defaults, initialisation and ``repr`` follow
``torch.nn``.
"""

from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from .._checks import positive_int
from ..ops.matmul import Linear as _LinearOp
from ..tensor import Tensor, as_tensor
from . import init
from .module import Module, Parameter

_FLOAT = np.float32


def _dtype(dtype):
    return np.dtype(_FLOAT if dtype is None else dtype)


# ---------------------------------------------------------------- dense


class Linear(Module):
    """y = x Wᵀ + b, W of shape (out_features, in_features).

    Initialisation as PyTorch: W and b ~ U(−1/√in, 1/√in) (kaiming_uniform_ with a = √5).
    Gradients: ∂L/∂x = g W, ∂L/∂W = gᵀ x, ∂L/∂b = Σ_batch g.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=None):
        super().__init__()
        self.in_features = positive_int("Linear", "in_features", in_features)
        self.out_features = positive_int("Linear", "out_features", out_features)
        dtype = _dtype(dtype)
        self.weight = Parameter(np.empty((self.out_features, self.in_features), dtype=dtype))
        self.bias = Parameter(np.empty(self.out_features, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        # the hot path of every MLP: one check, then the fused primitive (no F.linear re-checks)
        if not isinstance(x, Tensor):
            x = as_tensor(x)
        if x.data.ndim == 0 or x.data.shape[-1] != self.in_features:
            raise ValueError(
                f"Linear: input of shape {x.shape} must end with in_features={self.in_features} "
                f"(the layer maps {self.in_features} -> {self.out_features} features)"
            )
        if x.data.dtype.kind not in "fc":
            F.integer_input_error("Linear", x, self.weight)
        if self.bias is None:
            return _LinearOp.apply(x, self.weight)
        return _LinearOp.apply(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Identity(Module):
    """Returns its input unchanged (a placeholder layer)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Flatten(Module):
    """Merge dims start_dim..end_dim into one (default: everything but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        x = as_tensor(x)
        if x.ndim and not (-x.ndim <= self.start_dim < x.ndim and -x.ndim <= self.end_dim < x.ndim):
            raise ValueError(
                f"Flatten: dims start_dim={self.start_dim}, end_dim={self.end_dim} are out of range "
                f"for an input of shape {x.shape}"
            )
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x):
        x = as_tensor(x)
        d = self.dim % x.ndim
        return x.reshape(x.shape[:d] + self.unflattened_size + x.shape[d + 1 :])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Dropout(Module):
    """Inverted dropout: in training, zero each element with probability p and scale the rest by
    1/(1 − p), so E[output] = input; in evaluation, the identity."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: probability p must be in [0, 1], got {p}")
        self.p = float(p)

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace=False"


class Embedding(Module):
    """A lookup table: row i of ``weight`` (num_embeddings × embedding_dim) for index i; W ~ N(0, 1).

    ``padding_idx``: that row starts at zero and never gets a gradient (as PyTorch), so a padding
    token's embedding stays zero under training.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, dtype=None):
        super().__init__()
        self.num_embeddings = positive_int("Embedding", "num_embeddings", num_embeddings)
        self.embedding_dim = positive_int("Embedding", "embedding_dim", embedding_dim)
        if padding_idx is not None:
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ValueError(
                    f"Embedding: padding_idx {padding_idx} must be within num_embeddings ({self.num_embeddings})"
                )
            padding_idx %= self.num_embeddings
        self.padding_idx = padding_idx
        self.weight = Parameter(np.empty((self.num_embeddings, self.embedding_dim), dtype=_dtype(dtype)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0.0

    def forward(self, idx):
        return F.embedding(idx, self.weight, padding_idx=self.padding_idx)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


# ---------------------------------------------------------------- normalisation


class _BatchNorm(Module):
    """Shared body of BatchNorm1d/2d: y = (x − μ)/√(σ² + ε)·γ + β per channel (dim 1).

    Training: μ, σ² (biased) over every dim but 1; the running statistics move towards the batch's:
    running ← (1 − momentum)·running + momentum·batch, with the unbiased variance (PyTorch's rule);
    ``momentum=None`` gives the cumulative average (factor 1/num_batches_tracked).
    Evaluation uses the running statistics (unless ``track_running_stats=False``).
    """

    _allowed_ndims: tuple = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum=0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__()
        name = type(self).__name__
        self.num_features = positive_int(name, "num_features", num_features)
        if eps <= 0:
            raise ValueError(f"{name}: eps must be positive, got {eps}")
        if momentum is not None and not 0.0 <= momentum <= 1.0:
            raise ValueError(f"{name}: momentum must be in [0, 1] or None, got {momentum}")
        self.eps, self.momentum = float(eps), momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dtype = _dtype(dtype)
        if affine:
            self.weight = Parameter(np.ones(self.num_features, dtype=dtype))
            self.bias = Parameter(np.zeros(self.num_features, dtype=dtype)) if bias else None
        else:
            self.weight = self.bias = None
        if track_running_stats:
            self.register_buffer("running_mean", Tensor._wrap(np.zeros(self.num_features, dtype=dtype)))
            self.register_buffer("running_var", Tensor._wrap(np.ones(self.num_features, dtype=dtype)))
            self.register_buffer("num_batches_tracked", Tensor._wrap(np.array(0, dtype=np.int64)))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.data[...] = 0
            self.running_var.data[...] = 1
            self.num_batches_tracked.data[...] = 0

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, x):
        x = as_tensor(x)
        name = type(self).__name__
        if x.ndim not in self._allowed_ndims:
            expected = " or ".join(f"{n}-D" for n in self._allowed_ndims)
            raise ValueError(f"{name}: expected a {expected} input (batch, channels, ...), got shape {x.shape}")
        if x.shape[1] != self.num_features:
            raise ValueError(
                f"{name}: input has {x.shape[1]} channels (dim 1 of shape {x.shape}) but the layer "
                f"was built for num_features={self.num_features}"
            )
        use_batch_stats = self.training or not self.track_running_stats
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.data += 1
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.data)
        update = self.training and self.track_running_stats
        return F.batch_norm(
            x,
            self.running_mean if update or not use_batch_stats else None,
            self.running_var if update or not use_batch_stats else None,
            self.weight,
            self.bias,
            training=use_batch_stats,
            momentum=factor,
            eps=self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs, per channel C."""

    _allowed_ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) images, per channel C (statistics over N, H, W)."""

    _allowed_ndims = (4,)


class LayerNorm(Module):
    """y = (x − μ)/√(σ² + ε)·γ + β, μ and σ² (biased) over the last dims ``normalized_shape`` of each
    sample; the same in training and evaluation. γ = 1, β = 0 initially."""

    def __init__(
        self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True, dtype=None
    ):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else tuple(normalized_shape)
        self.normalized_shape = tuple(positive_int("LayerNorm", "normalized_shape", n) for n in shape)
        if eps <= 0:
            raise ValueError(f"LayerNorm: eps must be positive, got {eps}")
        self.eps = float(eps)
        self.elementwise_affine = elementwise_affine
        dtype = _dtype(dtype)
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, dtype=dtype))
            self.bias = Parameter(np.zeros(self.normalized_shape, dtype=dtype)) if bias else None
        else:
            self.weight = self.bias = None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}"
        )


# ---------------------------------------------------------------- activations


class _Activation(Module):
    """A layer that applies ``function`` with the options its constructor keeps:
    ``forward(x) = function(x, *(the attributes named in options))``, shown in the repr as
    ``name=value``. Each activation below names its function and options and keeps PyTorch's
    constructor (``inplace`` is accepted and has no effect: the result is always a new tensor)."""

    function = staticmethod(F.relu)
    options: tuple[str, ...] = ()

    def __init__(self, **options):
        super().__init__()
        for name, value in options.items():
            setattr(self, name, value)

    def forward(self, x):
        return self.function(x, *[getattr(self, name) for name in self.options])

    def extra_repr(self) -> str:
        return ", ".join(f"{name}={getattr(self, name)!r}" for name in self.options)


class ReLU(_Activation):
    """max(0, x)."""

    def __init__(self, inplace: bool = False):
        super().__init__()


class LeakyReLU(_Activation):
    """x if x > 0 else negative_slope·x."""

    function, options = staticmethod(F.leaky_relu), ("negative_slope",)

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__(negative_slope=negative_slope)


class Sigmoid(_Activation):
    """1/(1 + e⁻ˣ)."""

    function = staticmethod(F.sigmoid)


class Tanh(_Activation):
    """(eˣ − e⁻ˣ)/(eˣ + e⁻ˣ)."""

    function = staticmethod(F.tanh)


class GELU(_Activation):
    """x·Φ(x), or its tanh approximation with approximate='tanh'."""

    function, options = staticmethod(F.gelu), ("approximate",)

    def __init__(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        super().__init__(approximate=approximate)


class SiLU(_Activation):
    """x·σ(x) (Swish)."""

    function = staticmethod(F.silu)

    def __init__(self, inplace: bool = False):
        super().__init__()


class ELU(_Activation):
    """x if x > 0 else alpha·(eˣ − 1)."""

    function, options = staticmethod(F.elu), ("alpha",)

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(alpha=alpha)


class Softplus(_Activation):
    """(1/beta)·log(1 + e^(beta·x))."""

    function, options = staticmethod(F.softplus), ("beta",)

    def __init__(self, beta: float = 1.0):
        super().__init__(beta=beta)


class Softmax(_Activation):
    """e^(xᵢ)/Σⱼ e^(xⱼ) along ``dim``; without ``dim``, PyTorch's implicit choice and its warning
    (see :func:`engine.functional.softmax`): always pass ``dim``."""

    function, options = staticmethod(F.softmax), ("dim",)

    def __init__(self, dim=None):
        super().__init__(dim=dim)


class LogSoftmax(_Activation):
    """log softmax(x) along ``dim``, computed as x − logsumexp(x) (stable)."""

    function, options = staticmethod(F.log_softmax), ("dim",)

    def __init__(self, dim=None):
        super().__init__(dim=dim)


class SwiGLU(Module):
    """The gated feed-forward block of LLaMA: W_down(SiLU(W_gate x) ⊙ W_up x).

    ``d_in → d_hidden`` twice (gate and value), then ``d_hidden → d_out`` (default d_out = d_in,
    so the block fits a residual stream). Three Linear layers, without bias by default.
    """

    def __init__(self, d_in: int, d_hidden: int, d_out: int | None = None, bias: bool = False, dtype=None):
        super().__init__()
        d_out = d_in if d_out is None else d_out
        self.w_gate = Linear(d_in, d_hidden, bias=bias, dtype=dtype)
        self.w_up = Linear(d_in, d_hidden, bias=bias, dtype=dtype)
        self.w_down = Linear(d_hidden, d_out, bias=bias, dtype=dtype)

    def forward(self, x):
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))

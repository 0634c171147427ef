"""Elementwise primitives: arithmetic, exp/log, trigonometry and activations.

Each docstring gives the forward formula r = f(a, b) and the local gradients ∂r/∂a, ∂r/∂b; the
backward multiplies them by the upstream gradient g = ∂L/∂r (the chain rule). Broadcasting is
undone centrally in :mod:`engine.autograd`, so a backward may return a gradient of the output's
(broadcast) shape.
"""

import numpy as np

from ..autograd import Function
from .special import normal_cdf, normal_pdf

# ---------------------------------------------------------------- arithmetic


class Add(Function):
    """r = a + b;  ∂r/∂a = 1, ∂r/∂b = 1."""

    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g


class Sub(Function):
    """r = a − b;  ∂r/∂a = 1, ∂r/∂b = −1."""

    @staticmethod
    def forward(ctx, a, b):
        return a - b

    @staticmethod
    def backward(ctx, g):
        return g, (-g if ctx.needs_input_grad[1] else None)


def _needs(ctx) -> tuple:
    """(needs ∂/∂a, needs ∂/∂b) of a binary op; (False, False) when no graph is recorded."""
    return ctx.needs_input_grad or (False, False)


class Mul(Function):
    """r = a·b;  ∂r/∂a = b, ∂r/∂b = a.

    Saves only the factor each wanted gradient uses (``y * 2`` keeps 2, not ``y``, so a later
    ``y.add_(5)`` does not invalidate it).
    """

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = _needs(ctx)
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (g * b if need_a else None), (g * a if need_b else None)


class Div(Function):
    """r = a / b;  ∂r/∂a = 1/b, ∂r/∂b = −a/b² (``a`` is saved only when ∂r/∂b is wanted)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a if _needs(ctx)[1] else None, b)
        return a / b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = g / b if need_a else None
        gb = -g * a / (b * b) if need_b else None
        return ga, gb


class Remainder(Function):
    """r = a − b·⌊a/b⌋ (the sign of b, as Python's % and PyTorch's);  ∂r/∂a = 1, ∂r/∂b = −⌊a/b⌋."""

    @staticmethod
    def forward(ctx, a, b):
        if _needs(ctx)[1]:
            ctx.save_for_backward(a, b)
        return np.remainder(a, b)

    @staticmethod
    def backward(ctx, g):
        need_a, need_b = ctx.needs_input_grad
        gb = None
        if need_b:
            a, b = ctx.saved_tensors
            gb = -g * np.floor_divide(a, b)
        return (g if need_a else None), gb


class Neg(Function):
    """r = −a;  ∂r/∂a = −1."""

    @staticmethod
    def forward(ctx, a):
        return -a

    @staticmethod
    def backward(ctx, g):
        return -g


class Pow(Function):
    """r = aᵇ (both tensors);  ∂r/∂a = b·aᵇ⁻¹, ∂r/∂b = aᵇ·ln a.

    As PyTorch: where a = 0 and b ≥ 0 the exponent's gradient is 0 (the limit of aᵇ·ln a), and
    at a negative base, which has no real ln, it is NaN (the derivative does not exist).
    """

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype.kind in "iub" and b.dtype.kind in "iub" and np.any(b < 0):
            raise RuntimeError(
                "pow: Integers to negative integer powers are not allowed (the result is not an "
                "integer); use a float base or exponent, e.g. t.float() ** e"
            )
        out = np.power(a, b)
        ctx.save_for_backward(a, b, out if _needs(ctx)[1] else None)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if need_a:  # b = 0 gives 0 even at a = 0, where b·aᵇ⁻¹ would be 0·∞ (as PyTorch)
                ga = g * np.where(b == 0, 0.0, b * np.power(a, b - 1))
            if need_b:
                gb = g * np.where((a == 0) & (b >= 0), 0.0, out * np.log(a))
        return ga, gb


class PowScalar(Function):
    """r = aᵖ for a constant exponent p;  ∂r/∂a = p·aᵖ⁻¹."""

    @staticmethod
    def forward(ctx, a, *, exponent):
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        if exponent == 2:
            return a * a
        return np.power(a, exponent)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        p = ctx.exponent
        if p == 2:  # (a + a is 2a exactly; speed: an op with a Python number costs ~0.3 µs more)
            return g * (a + a)
        if p == 0:  # a⁰ = 1 is constant; 0·a⁻¹ would give NaN at a = 0
            return np.zeros_like(g)
        return g * p * np.power(a, p - 1)


class RPowScalar(Function):
    """r = cᵃ for a constant base c > 0;  ∂r/∂a = cᵃ·ln c."""

    @staticmethod
    def forward(ctx, a, *, base):
        out = np.power(np.asarray(base, dtype=a.dtype), a)
        ctx.save_for_backward(out)
        ctx.log_base = float(np.log(base)) if base > 0 else 0.0
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out * ctx.log_base


# ---------------------------------------------------------------- exp and log


class _OfOutput(Function):
    """A pointwise r = f(a) whose derivative is cheapest from the output r (eᵃ, σ, tanh, ReLU):
    the op saves r, and a subclass names f and ``vjp(g, r)`` = g·∂r/∂a written with r."""

    f = vjp = staticmethod(None)

    @staticmethod
    def forward(ctx, a):
        out = type(ctx).f(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return type(ctx).vjp(g, out)


class Exp(_OfOutput):
    """r = eᵃ;  ∂r/∂a = eᵃ = r."""

    f = staticmethod(np.exp)

    @staticmethod
    def vjp(g, out):
        return g * out


class Log(Function):
    """r = ln a;  ∂r/∂a = 1/a."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        with np.errstate(divide="ignore", invalid="ignore"):  # ±inf at a = 0, as PyTorch
            return g / a


class LogBase(Function):
    """r = log_b(a) = ln a / ln b (both tensors);  ∂r/∂a = 1/(a·ln b), ∂r/∂b = −ln a/(b·ln² b).

    (∂r/∂b is negative for a > 1 and b > 1: log_b(a) falls as the base grows.)
    """

    @staticmethod
    def forward(ctx, a, b):
        with np.errstate(divide="ignore", invalid="ignore"):  # log 0 = −inf, log of a negative NaN
            ln_a, ln_b = np.log(a), np.log(b)
            out = ln_a / ln_b
        ctx.save_for_backward(a, b, ln_a, ln_b)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, ln_a, ln_b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        with np.errstate(divide="ignore", invalid="ignore"):
            ga = g / (a * ln_b) if need_a else None
            gb = -g * ln_a / (b * ln_b * ln_b) if need_b else None
        return ga, gb


class Sqrt(Function):
    """r = √a;  ∂r/∂a = 1/(2√a)."""

    @staticmethod
    def forward(ctx, a):
        with np.errstate(invalid="ignore"):  # √(negative) is NaN, as PyTorch (without a warning)
            out = np.sqrt(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        with np.errstate(divide="ignore", invalid="ignore"):  # +inf at 0, as PyTorch
            return g / (2 * out)


class _OfInput(Function):
    """A pointwise r = f(a) whose derivative f′(a) needs the input: a subclass names f and f′."""

    f = df = staticmethod(None)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return type(ctx).f(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * type(ctx).df(a)


class Abs(_OfInput):
    """r = |a|;  ∂r/∂a = sign(a) (0 at a = 0, as PyTorch)."""

    f, df = staticmethod(np.abs), staticmethod(np.sign)


class Sin(_OfInput):
    """r = sin a;  ∂r/∂a = cos a."""

    f, df = staticmethod(np.sin), staticmethod(np.cos)


class Cos(_OfInput):
    """r = cos a;  ∂r/∂a = −sin a."""

    f = staticmethod(np.cos)

    @staticmethod
    def df(a):
        return -np.sin(a)


# ---------------------------------------------------------------- activations


def stable_sigmoid(a: np.ndarray) -> np.ndarray:
    """σ(a) = 1/(1 + e⁻ᵃ) without overflow: only e^(−|a|) ≤ 1 is ever formed."""
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(a.dtype, copy=False)


class Sigmoid(_OfOutput):
    """r = σ(a) = 1/(1 + e⁻ᵃ);  ∂r/∂a = σ(a)(1 − σ(a)). Finite for a = ±1000."""

    f = staticmethod(stable_sigmoid)

    @staticmethod
    def vjp(g, out):
        return g * out * (1 - out)


class Tanh(_OfOutput):
    """r = tanh a = (e²ᵃ − 1)/(e²ᵃ + 1);  ∂r/∂a = 1 − tanh² a."""

    f = staticmethod(np.tanh)

    @staticmethod
    def vjp(g, out):
        return g * (1 - out * out)


class Relu(_OfOutput):
    """r = max(0, a);  ∂r/∂a = 0 if r ≤ 0 else 1 (so a NaN passes its gradient through, as PyTorch)."""

    @staticmethod
    def f(a):
        return np.maximum(a, 0)

    @staticmethod
    def vjp(g, out):
        return g * ~(out <= 0)  # (not np.where: several times slower on a random sign pattern)


class LeakyRelu(Function):
    """r = a if a > 0 else α·a;  ∂r/∂a = 1 if a > 0 else α."""

    @staticmethod
    def forward(ctx, a, *, negative_slope):
        ctx.save_for_backward(a)
        ctx.slope = negative_slope
        return np.where(a > 0, a, a * negative_slope)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return np.where(a > 0, g, g * ctx.slope)


class Elu(Function):
    """r = a if a > 0 else α(eᵃ − 1);  ∂r/∂a = 1 if a > 0 else α·eᵃ."""

    @staticmethod
    def forward(ctx, a, *, alpha):
        neg = alpha * np.expm1(np.minimum(a, 0))
        ctx.save_for_backward(a, neg)
        ctx.alpha = alpha
        return np.where(a > 0, a, neg)

    @staticmethod
    def backward(ctx, g):
        a, neg = ctx.saved_tensors
        return np.where(a > 0, g, g * (neg + ctx.alpha))


class Softplus(Function):
    """r = (1/β)·ln(1 + e^(βa));  ∂r/∂a = σ(βa).

    Computed as max(a, 0) + ln(1 + e^(−β|a|))/β, which never overflows (finite at ±1000).
    """

    @staticmethod
    def forward(ctx, a, *, beta):
        ctx.save_for_backward(a)
        ctx.beta = beta
        return np.maximum(a, 0) + np.log1p(np.exp(-beta * np.abs(a))) / beta

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * stable_sigmoid(ctx.beta * a)


class Silu(Function):
    """r = a·σ(a) (Swish);  ∂r/∂a = σ(a)·(1 + a(1 − σ(a)))."""

    @staticmethod
    def forward(ctx, a):
        s = stable_sigmoid(a)
        ctx.save_for_backward(a, s)
        return a * s

    @staticmethod
    def backward(ctx, g):
        a, s = ctx.saved_tensors
        return g * s * (1 + a * (1 - s))


_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))  # a Python float keeps float32 inputs float32
_GELU_CUBIC = 0.044715


class Gelu(Function):
    """Exact: r = a·Φ(a);  ∂r/∂a = Φ(a) + a·φ(a), with Φ, φ the standard normal CDF and PDF.

    approximate='tanh': r = ½a(1 + tanh u), u = √(2/π)(a + 0.044715a³);
    ∂r/∂a = ½(1 + tanh u) + ½a(1 − tanh² u)·√(2/π)(1 + 3·0.044715a²).
    """

    @staticmethod
    def forward(ctx, a, *, approximate):
        ctx.save_for_backward(a)
        ctx.approximate = approximate
        if approximate == "tanh":
            t = np.tanh(_SQRT_2_OVER_PI * (a + _GELU_CUBIC * a**3))
            ctx.t = t
            return 0.5 * a * (1 + t)
        cdf = normal_cdf(a, precision=a.dtype)  # float32: series terms for float32's precision only
        ctx.cdf = cdf.astype(a.dtype, copy=False)  # (backward's arithmetic in a's dtype: no float64 pass)
        return (a * cdf).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        if ctx.approximate == "tanh":
            t = ctx.t
            du = _SQRT_2_OVER_PI * (1 + 3 * _GELU_CUBIC * a * a)
            return g * (0.5 * (1 + t) + 0.5 * a * (1 - t * t) * du)
        local = normal_pdf(a).astype(a.dtype, copy=False)
        local *= a
        local += ctx.cdf
        return g * local


class Clamp(Function):
    """r = min(max(a, lo), hi);  ∂r/∂a = 1 if lo ≤ a ≤ hi else 0."""

    @staticmethod
    def forward(ctx, a, *, lo, hi):
        ctx.save_for_backward(a)
        ctx.lo, ctx.hi = lo, hi
        return np.clip(a, lo, hi)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        inside = np.ones(a.shape, dtype=bool)
        if ctx.lo is not None:
            inside &= a >= ctx.lo
        if ctx.hi is not None:
            inside &= a <= ctx.hi
        return g * inside


class _Extreme(Function):
    """r = max(a, b) or min(a, b): the gradient goes to the input that wins, ½ each on a tie, and
    (as PyTorch) whole to both where a NaN makes the comparison false both ways. A subclass names
    f and ``losers(a, b)``, the masks where a and where b lose."""

    f = losers = staticmethod(None)

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return type(ctx).f(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        a_loses, b_loses = type(ctx).losers(a, b)
        dtype = g.dtype
        half = np.where(a == b, dtype.type(0.5), dtype.type(1.0))
        return g * np.where(a_loses, dtype.type(0), half), g * np.where(b_loses, dtype.type(0), half)


class Maximum(_Extreme):
    """r = max(a, b);  the gradient goes to the larger input, split in half on ties (as PyTorch)."""

    f = staticmethod(np.maximum)

    @staticmethod
    def losers(a, b):
        return a < b, b < a


class Minimum(_Extreme):
    """r = min(a, b);  the gradient goes to the smaller input, split in half on ties."""

    f = staticmethod(np.minimum)

    @staticmethod
    def losers(a, b):
        return a > b, b > a


class Where(Function):
    """r = a where cond else b;  ∂r/∂a = cond, ∂r/∂b = not cond (cond is a constant mask)."""

    @staticmethod
    def forward(ctx, a, b, *, cond):
        ctx.cond = cond
        return np.where(cond, a, b)

    @staticmethod
    def backward(ctx, g):
        need_a, need_b = ctx.needs_input_grad
        zero = np.zeros((), dtype=g.dtype)
        ga = np.where(ctx.cond, g, zero) if need_a else None
        gb = np.where(ctx.cond, zero, g) if need_b else None
        return ga, gb

"""Computations behind notebook 01 (activations): curves, derivatives, ranges, softmax, depth lab.

Every value comes from the engine: functions from :mod:`engine.functional`, derivatives from
autograd (``y.backward(ones)`` gives the elementwise derivative f'(x) in ``x.grad``). The NumPy
formulas in :data:`ACTIVATIONS` are the independent "analytic" curves the notebook draws under the
autograd dots; the tests check that the two agree.

- :func:`evaluate`: f(x) and f'(x) by the engine, and the same from the closed forms.
- :func:`activation_minimum`: the lowest point of a non-monotonic activation (GELU ≈ −0.170 at
  x ≈ −0.752, SiLU ≈ −0.278 at x ≈ −1.278), found by bisection on the autograd derivative.
- :func:`output_range`: the range found numerically: bounds attained, approached, or unbounded.
- :func:`softmax_with_temperature`: probabilities and entropy of softmax(z / T).
- :func:`depth_lab`: the notebook's deep forward pass (passed in) run at initialisation; per-layer
  pre-activation statistics, the share of units whose derivative is (almost) zero, and gradient
  norms from autograd next to the product of per-layer factors σ_W·√n·rms(φ') that predicts them;
  :func:`depth_variants`, the same stack plain, residual, pre-norm and both (shipped for every
  activation with He and Xavier at the default width as the checkpoint ``activations_variants``,
  made by the notebook's ``default_variants``); :func:`scale_sweep`, the per-layer factor against
  the weight scale, whose default sweeps ship as the checkpoint ``activations_sweeps``
  (:data:`CHECKPOINTS`, made by the notebook's ``default_sweeps``).
- :func:`transient`: where tanh's per-layer gradient factor crosses 1 against depth, by the
  notebook's mean-field recursion and by its stacks (checkpoint ``activations_transient``);
  :func:`deep_training`: the notebook's 50-layer classifier trained plain and with a residual
  path and pre-norm (checkpoint ``activations_deep_training``).
- :func:`moons` and :func:`bend_report`: the data of the notebook's small ReLU network, and the
  linear pieces it cuts the plane into (the network and its training loop are the notebook's).
- the page's figures (:func:`activation_view`, :func:`depth_figures`, :func:`self_normalisation_figures`,
  :func:`sweep_figure`, :func:`bend_figure`, :func:`softmax_figure`): built with
  :mod:`engine.course.plot` once per setting and kept for the last few settings, so a control moved
  back answers without building its charts again.

The lesson itself (the initialisation scales, the residual / pre-norm block, the deep forward pass,
the small network and its training loop) is code in the notebook; the functions here take it as
an argument, so a learner's edited version is the one that runs.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

import engine.functional as F
from engine import Tensor, no_grad
from engine.course import checkpoints, plot
from engine.course.checkpoints import activations_dead_relus as _dead_relus_checkpoint
from engine.course.checkpoints import activations_deep_training as _deep_training_checkpoint
from engine.course.checkpoints import activations_sweeps as _sweeps_checkpoint  # static: the WebAssembly bundler
from engine.course.checkpoints import activations_transient as _transient_checkpoint
from engine.course.checkpoints import activations_variants as _variants_checkpoint

from ._checks import is_default

# ----------------------------------------------------------------------------- closed forms


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


_erf = np.vectorize(math.erf, otypes=[float])
_C = math.sqrt(2 / math.pi)
_K = 0.044715


def _phi_cdf(x):
    return 0.5 * (1 + _erf(x / math.sqrt(2)))


def _phi_pdf(x):
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(_C * (x + _K * x**3)))


def _gelu_tanh_d(x):
    t = np.tanh(_C * (x + _K * x**3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _C * (1 + 3 * _K * x * x)


def _softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _spec(label, formula, derivative, f, df, engine, params=(), note=""):
    return dict(
        label=label, formula=formula, derivative=derivative, f=f, df=df, engine=engine, params=params, note=note
    )


# name -> label, LaTeX of f and f', NumPy f and f' (analytic), engine function, parameter names
ACTIVATIONS = {
    "relu": _spec(
        "ReLU",
        r"\max(0, z)",
        r"\begin{cases}1 & z>0\\0 & z\le 0\end{cases}",
        lambda x: np.maximum(x, 0.0),
        lambda x: (x > 0).astype(float),
        lambda t: F.relu(t),
        note="cheap and sparse; a unit whose input stays negative gets no gradient (dead)",
    ),
    "leaky_relu": _spec(
        "Leaky ReLU",
        r"\max(\alpha z, z)",
        r"\begin{cases}1 & z>0\\ \alpha & z\le 0\end{cases}",
        lambda x, slope=0.01: np.where(x > 0, x, slope * x),
        lambda x, slope=0.01: np.where(x > 0, 1.0, slope),
        lambda t, slope=0.01: F.leaky_relu(t, slope),
        params=("slope",),
        note="a small slope α for z < 0 keeps every unit trainable",
    ),
    "sigmoid": _spec(
        "Sigmoid",
        r"\sigma(z) = \frac{1}{1+e^{-z}}",
        r"\sigma(z)\,(1-\sigma(z))",
        _sigmoid,
        lambda x: _sigmoid(x) * (1 - _sigmoid(x)),
        lambda t: F.sigmoid(t),
        note="a probability for a binary output; its slope is at most 1/4, so stacks of it vanish",
    ),
    "tanh": _spec(
        "Tanh",
        r"\tanh z = \frac{e^{2z}-1}{e^{2z}+1}",
        r"1-\tanh^2 z",
        np.tanh,
        lambda x: 1 - np.tanh(x) ** 2,
        lambda t: F.tanh(t),
        note="zero-centred; saturates at ±1 where the slope vanishes",
    ),
    "gelu": _spec(
        "GELU (exact)",
        r"z\,\Phi(z)",
        r"\Phi(z) + z\,\varphi(z)",
        lambda x: x * _phi_cdf(x),
        lambda x: _phi_cdf(x) + x * _phi_pdf(x),
        lambda t: F.gelu(t),
        note="BERT's and GPT-2's choice (the 2017 Transformer used ReLU): z weighted by Φ(z), the "
        "probability that a standard normal falls below z",
    ),
    "gelu_tanh": _spec(
        "GELU (tanh approximation)",
        r"\tfrac12 z\left(1+\tanh\!\left(\sqrt{2/\pi}\,(z+0.044715z^3)\right)\right)",
        r"\tfrac12(1+\tanh u) + \tfrac12 z\,(1-\tanh^2 u)\sqrt{2/\pi}\,(1+3\cdot 0.044715z^2),\ u = \sqrt{2/\pi}\,(z+0.044715z^3)",
        _gelu_tanh,
        _gelu_tanh_d,
        lambda t: F.gelu(t, approximate="tanh"),
        note="the fast approximation used by GPT-2; within 5·10⁻⁴ of the exact GELU",
    ),
    "silu": _spec(
        "SiLU / Swish",
        r"z\,\sigma(z)",
        r"\sigma(z)\,(1 + z(1-\sigma(z)))",
        lambda x: x * _sigmoid(x),
        lambda x: _sigmoid(x) * (1 + x * (1 - _sigmoid(x))),
        lambda t: F.silu(t),
        note="self-gated and non-monotonic; the gate of SwiGLU",
    ),
    "softplus": _spec(
        "Softplus",
        r"\ln(1+e^{z})",
        r"\sigma(z)",
        _softplus,
        _sigmoid,
        lambda t: F.softplus(t),
        note="a smooth ReLU that is never exactly zero",
    ),
    "elu": _spec(
        "ELU",
        r"\begin{cases}z & z>0\\ \alpha(e^{z}-1) & z\le 0\end{cases}",
        r"\begin{cases}1 & z>0\\ \alpha e^{z} & z\le 0\end{cases}",
        lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))),
        lambda x, alpha=1.0: np.where(x > 0, 1.0, alpha * np.exp(np.minimum(x, 0))),
        lambda t, alpha=1.0: F.elu(t, alpha),
        params=("alpha",),
        note="smooth for z < 0, saturating at −α, so mean activations move toward zero",
    ),
    "swiglu": _spec(
        "SwiGLU (1-D slice)",
        r"\operatorname{SiLU}(z w_g)\,(z w_u),\ w_g = w_u = 1:\ z^2\sigma(z)",
        r"2z\,\sigma(z) + z^2\sigma(z)(1-\sigma(z))",
        lambda x: x * x * _sigmoid(x),
        lambda x: 2 * x * _sigmoid(x) + x * x * _sigmoid(x) * (1 - _sigmoid(x)),
        lambda t: F.swiglu(t.reshape(-1, 1), np.ones((1, 1), t.dtype), np.ones((1, 1), t.dtype)).reshape(-1),
        note="a gated unit with two weight matrices (LLaMA's MLP); shown with both weights set to 1",
    ),
}

DEPTH_ACTIVATIONS = ("relu", "leaky_relu", "tanh", "sigmoid", "gelu", "silu", "elu")
INITS = ("he", "xavier", "custom")


def _check_name(name, allowed=None):
    """A name of :data:`ACTIVATIONS` (of ``allowed``), or a function of one tensor: the learner's own φ."""
    allowed = ACTIVATIONS if allowed is None else allowed
    if not callable(name) and name not in allowed:
        raise ValueError(f"activations lab: unknown activation {name!r}; choose one of {', '.join(allowed)}")


def _kw(name, params: dict) -> dict:
    if callable(name):
        return {}
    return {k: float(v) for k, v in params.items() if k in ACTIVATIONS[name]["params"]}


def _engine_fn(name):
    return name if callable(name) else ACTIVATIONS[name]["engine"]


# ----------------------------------------------------------------------------- curves


@dataclass
class Curves:
    """f and f' over x: by the engine (forward and autograd) and by the closed forms."""

    x: np.ndarray
    f: np.ndarray
    df_autograd: np.ndarray
    f_formula: np.ndarray
    df_formula: np.ndarray

    @property
    def max_derivative_gap(self) -> float:
        return float(np.max(np.abs(self.df_autograd - self.df_formula)))


def engine_derivative(name, x, **params):
    """(f(x), f'(x)) with the engine: forward, then backward of ones gives the elementwise slope.
    ``name``: an activation of :data:`ACTIVATIONS`, or a function of one tensor (the learner's own)."""
    _check_name(name)
    t = Tensor(np.asarray(x, dtype=np.float64), requires_grad=True)
    y = _engine_fn(name)(t, **_kw(name, params))
    y.backward(np.ones_like(y.data))
    return y.data.copy(), t.grad.numpy().copy()


def evaluate(name: str, x, **params) -> Curves:
    """The curves the notebook draws for activation ``name`` (parameters: slope, alpha)."""
    x = np.asarray(x, dtype=np.float64)
    f, df = engine_derivative(name, x, **params)
    spec = ACTIVATIONS[name]
    kw = _kw(name, params)
    with np.errstate(over="ignore", invalid="ignore"):
        return Curves(x, f, df, spec["f"](x, **kw), spec["df"](x, **kw))


def _params_key(name, params: dict) -> tuple:
    """The parameters that ``name`` takes, as a cache key: an α that another activation ignores
    (the leaky slope while GELU is shown) is no new setting."""
    _check_name(name)
    return tuple(sorted(_kw(name, params).items()))


def activation_minimum(name: str, bracket=(-8.0, 2.0), **params):
    """(x*, f(x*)) at the lowest point where f' changes sign from − to + inside ``bracket``, or None.

    The derivative (autograd) is scanned on a grid of 0.025 steps, so a local maximum on the way
    (SwiGLU's slice z²σ(z) has one near z ≈ −2.2 before its minimum 0 at z = 0) cannot hide the
    sign change; each − to + change is refined by 60 bisection halvings (x* to ~1e-15).
    """
    return _activation_minimum(name, tuple(map(float, bracket)), _params_key(name, params))


@functools.lru_cache(maxsize=256)  # a few hundred engine calls; asked again for every α and every page load
def _activation_minimum(name, bracket: tuple, params: tuple):
    params = dict(params)
    lo, hi = bracket
    grid = np.linspace(lo, hi, int(round((hi - lo) / 0.025)) + 1)
    slope = engine_derivative(name, grid, **params)[1]
    d = lambda v: engine_derivative(name, np.array([v]), **params)[1][0]  # noqa: E731
    best = None
    for i in np.flatnonzero((slope[:-1] < 0) & (slope[1:] >= 0)):
        a, b = float(grid[i]), float(grid[i + 1])
        for _ in range(60):
            mid = 0.5 * (a + b)
            if d(mid) < 0:
                a = mid
            else:
                b = mid
        x_star = 0.5 * (a + b)
        value = float(engine_derivative(name, np.array([x_star]), **params)[0][0])
        if best is None or value < best[1]:
            best = (x_star, value)
    return best


def minimum_text(name: str, **params) -> str:
    """The table's "minimum" cell: "−0.1700 at z = −0.7518", or "—" for a monotonic activation."""
    found = activation_minimum(name, **params)
    if found is None:
        return "—"
    x_star, value = (0.0 if abs(v) < 5e-5 else v for v in found)  # −1e-20 would print as −0.0000
    return f"{value:.4f} at z = {x_star:.4f}"


@dataclass(frozen=True)  # shared by output_range's cache
class Range:
    lo: float
    hi: float
    lo_kind: str  # 'attained' | 'approached' | 'unbounded'
    hi_kind: str

    def text(self, digits: int = 3) -> str:
        def num(v):
            return f"{v:.{digits}g}".replace("-", "−") if abs(v) > 1e-12 else "0"

        left = "(−∞" if self.lo_kind == "unbounded" else ("[" if self.lo_kind == "attained" else "(") + num(self.lo)
        right = "∞)" if self.hi_kind == "unbounded" else num(self.hi) + ("]" if self.hi_kind == "attained" else ")")
        return f"{left}, {right}"


def output_range(name: str, span: float = 60.0, **params) -> Range:
    """The output range, numerically: evaluate on [−span, span]; at each end a bound is
    'unbounded' if f still moves there (|f'| > 1e-6), 'approached' if f has flattened onto a
    limit it reaches only at infinity, and the interior minimum (GELU, SiLU) is 'attained'."""
    return _output_range(name, float(span), _params_key(name, params))


@functools.lru_cache(maxsize=256)  # 24,001 engine points and a bisection, asked again for every α
def _output_range(name, span: float, params: tuple) -> Range:
    params = dict(params)
    x = np.linspace(-span, span, 24001)
    f, df = engine_derivative(name, x, **params)
    lo_kind = "unbounded" if abs(df[0]) > 1e-6 else "approached"
    hi_kind = "unbounded" if abs(df[-1]) > 1e-6 else "approached"
    lo, hi = float(f[0]), float(f[-1])
    interior = activation_minimum(name, **params)
    if interior is not None:
        lo, lo_kind = interior[1], "attained"
    elif lo_kind == "approached" and np.any(df[: len(x) // 2] == 0) and np.all(f[: len(x) // 2] == f[0]):
        lo_kind = "attained"  # flat and reached: ReLU's 0 for every x ≤ 0
    if hi_kind == "approached" and np.all(df[len(x) // 2 :] == 0):
        hi_kind = "attained"
    # values reached only in the limit are rounded to it (σ(−60) ≈ 9e−27 reads as 0)
    if lo_kind == "approached":
        lo = round(lo, 9)
    if hi_kind == "approached":
        hi = round(hi, 9)
    return Range(lo, hi, lo_kind, hi_kind)


def gelu_approximation_error(x):
    """tanh-approximate GELU minus exact GELU, both computed by the engine (float64)."""
    t = Tensor(np.asarray(x, dtype=np.float64))
    return F.gelu(t, approximate="tanh").data - F.gelu(t).data


def derivative_peak(name: str, **params) -> float:
    """max f'(x) by autograd over x ∈ [−20, 20]: ¼ for sigmoid, 1 for ReLU and tanh, ≈1.129 for GELU;
    inf when the slope still grows at the edge (SwiGLU's x²σ(x))."""
    return _derivative_peak(name, _params_key(name, params))


@functools.lru_cache(maxsize=64)  # every depth-lab run asks for its activation's peak again
def _derivative_peak(name, params: tuple) -> float:
    params = dict(params)
    d = engine_derivative(name, np.linspace(-20, 20, 8001), **params)[1]
    i = int(np.argmax(d))
    if i in (0, len(d) - 1) and abs(d[i] - d[i - 1 if i else 1]) > 1e-9:
        return float("inf")
    return float(d[i])


def family_row(name: str, **params) -> dict:
    """One row of the notebook's family table: label, range, minimum and steepest slope (a new
    dict each time, from cached parts)."""
    peak = derivative_peak(name, **params)
    return {
        "activation": ACTIVATIONS[name]["label"],
        "range": output_range(name, **params).text(),
        "minimum": minimum_text(name, **params),
        "steepest slope": f"{peak:.4f}" if np.isfinite(peak) else "unbounded",
    }


# ----------------------------------------------------------------------------- softmax


def parse_numbers(
    text: str, name: str = "logits", min_count: int = 2, max_count: int = 12, limit: float = 1e6
) -> np.ndarray:
    """'2, 1, 0.1' -> array([2., 1., .1]); a ValueError that says what is wrong otherwise."""
    parts = [p for p in str(text).replace(";", ",").replace(" ", ",").split(",") if p.strip()]
    try:
        values = np.array([float(p) for p in parts], dtype=np.float64)
    except ValueError:
        bad = next(p for p in parts if not _is_float(p))
        raise ValueError(f"{name}: {bad.strip()!r} is not a number; write numbers separated by commas") from None
    if len(values) < min_count:
        raise ValueError(f"{name}: need at least {min_count} numbers, got {len(values)}")
    if len(values) > max_count:
        raise ValueError(f"{name}: at most {max_count} numbers, got {len(values)}")
    if not np.all(np.isfinite(values)) or np.any(np.abs(values) > limit):
        raise ValueError(f"{name}: every value must be finite and within ±{limit:g}")
    return values


def _is_float(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


@dataclass
class SoftmaxResult:
    probs: np.ndarray
    entropy: float  # nats
    max_entropy: float  # ln K

    @property
    def entropy_share(self) -> float:
        return self.entropy / self.max_entropy


def softmax_with_temperature(logits, temperature: float) -> SoftmaxResult:
    """p = softmax(z / T) with the engine (stable for any T > 0) and its entropy H = −Σ p ln p."""
    if not (temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"softmax_with_temperature: the temperature must be positive and finite, got {temperature}")
    z = Tensor(np.asarray(logits, dtype=np.float64) / temperature)
    logp = F.log_softmax(z, dim=-1).data
    p = np.exp(logp)
    entropy = float(-(p * logp).sum())
    return SoftmaxResult(p, max(entropy, 0.0), math.log(len(p)))


# ----------------------------------------------------------------------------- depth lab


@dataclass
class DepthReport:
    """Per-layer statistics of an MLP at initialisation (index 0 is the first hidden layer)."""

    activation: object  # a name of ACTIVATIONS, or the learner's own function
    weight_std: float
    z_std: np.ndarray
    z_mean: np.ndarray
    # the slope statistics (None in :func:`depth_variants`' reports, whose table does not show them)
    flat_share: np.ndarray | None  # share of pre-activations where φ'(z) < 5% of its peak
    dead_share: np.ndarray | None  # share of units flat for every sample of the batch
    deriv_rms: np.ndarray | None  # √mean φ'(z)²
    grad_norm: np.ndarray  # ‖∂L/∂z_l‖ from autograd
    predicted_grad_norm: np.ndarray | None  # ‖∂L/∂z_L‖ · Π_{k>l} σ_W √n rms φ'(z_{k-1}); None off the plain stack
    z_samples: list = field(default_factory=list)
    message: str = ""

    @property
    def depth(self) -> int:
        return len(self.z_std)

    @property
    def gradient_ratio(self) -> float:
        """‖∂L/∂z_1‖ / ‖∂L/∂z_L‖: ≪ 1 vanishing, ≫ 1 exploding."""
        return float(self.grad_norm[0] / self.grad_norm[-1]) if self.grad_norm[-1] > 0 else float("nan")

    @property
    def per_layer_factor(self) -> float:
        """The geometric mean of ‖∂L/∂z_{l−1}‖ / ‖∂L/∂z_l‖ over the stack: ratio^(1/(L−1)); 1 for L = 1."""
        if self.depth == 1:
            return 1.0
        r = self.gradient_ratio
        return float(r ** (1 / (self.depth - 1))) if math.isfinite(r) and r > 0 else float("nan")

    @property
    def variance_factor(self) -> float:
        """The geometric mean of Var(z_l) / Var(z_{l−1}): the forward variance map's ratio per layer."""
        if self.depth == 1 or not (self.z_std[0] > 0 and math.isfinite(self.z_std[-1])):
            return 1.0 if self.depth == 1 else float("nan")
        return float((self.z_std[-1] / self.z_std[0]) ** (2 / (self.depth - 1)))

    def verdict(self) -> str:
        r = self.gradient_ratio
        if not math.isfinite(r):
            return "broken"
        return "vanish" if r < 1e-2 else ("explode" if r > 1e2 else "stable")

    def fate(self) -> str:
        """The verdict as the page words it: "the gradient vanishes / explodes / stays in range / is lost"."""
        return {"vanish": "vanishes", "explode": "explodes", "stable": "stays in range", "broken": "is lost"}[
            self.verdict()
        ]


# the choices of a "what happens to the gradient?" exercise, labels -> DepthReport.verdict() values
GRADIENT_FATES = {
    "much smaller (it vanishes)": "vanish",
    "about the same": "stable",
    "much larger (it explodes)": "explode",
}


def _phi(activation, slope: float = 0.01):
    """The engine's activation ``activation`` as a function of one tensor (leaky ReLU with ``slope``);
    a function passed in (the learner's own φ) as it is."""
    if callable(activation):
        return activation
    kw = _kw(activation, {"slope": slope} if activation == "leaky_relu" else {})
    fn = ACTIVATIONS[activation]["engine"]
    return lambda z: fn(z, **kw)


def depth_lab(
    forward,
    weight_std: float,
    depth: int = 10,
    width: int = 128,
    activation: str = "tanh",
    n_samples: int = 256,
    slope: float = 0.01,
    seed: int = 0,
    max_samples: int = 2000,
    residual: bool = False,
    norm: bool = False,
    slopes: bool = True,
) -> DepthReport:
    """Run the lesson's deep forward pass ``forward(x, weights, φ, residual, pre_norm) -> (a_L, [z_l])``
    (the notebook's ``deep_forward``, passed in) on a batch x ~ N(0, I) through ``depth`` layers of
    weights N(0, ``weight_std``²) stored (out, in), then backpropagate L = Σ a_L ⊙ G (G a fixed
    random upstream gradient) and record each layer. ``activation``: a name of
    :data:`DEPTH_ACTIVATIONS`, or a function of one tensor (the notebook's ``my_activation``).

    Why the prediction works (plain stack only): δ_{l−1} = (δ_l W_l) ⊙ φ'(z_{l−1}); with iid
    weights of std σ_W, ‖δ_l W_l‖ ≈ σ_W √n ‖δ_l‖, and the elementwise factor scales it by about
    rms φ'(z_{l−1}). With a residual path or a normalisation the product no longer applies, and
    ``predicted_grad_norm`` is None. ``slopes=False`` leaves out the slope statistics (``flat_share``,
    ``dead_share``, ``deriv_rms`` and ``predicted_grad_norm`` are None), for a gradient ratio alone.

    Cached (the last 16 settings, ``forward`` and a function ``activation`` by identity): treat the
    report as read-only.
    """
    _check_stack(activation, depth, width)
    _check_std(weight_std)
    return _depth_lab(
        forward,
        float(weight_std),
        depth,
        width,
        activation,
        n_samples,
        float(slope),
        seed,
        max_samples,
        bool(residual),
        bool(norm),
        bool(slopes),
    )


@functools.lru_cache(maxsize=16)  # a setting shown before (a control moved back) is shown again without a run
def _depth_lab(
    forward, weight_std, depth, width, activation, n_samples, slope, seed, max_samples, residual, norm, slopes
) -> DepthReport:
    draws = _depth_draws(depth, width, n_samples, weight_std, seed, max_samples)
    return _depth_run(forward, draws, activation, weight_std, slope, residual, norm, slopes=slopes)


def _check_std(weight_std):
    if not (isinstance(weight_std, (int, float, np.floating)) and math.isfinite(weight_std) and weight_std > 0):
        raise ValueError(f"depth_lab: the weight std σ_W must be a positive number, got {weight_std!r}")


def _check_stack(activation, depth, width):
    _check_name(activation, DEPTH_ACTIVATIONS)
    if not (isinstance(depth, (int, np.integer)) and 1 <= depth <= 200):
        raise ValueError(f"depth_lab: depth must be an integer in [1, 200], got {depth!r}")
    if not (isinstance(width, (int, np.integer)) and 2 <= width <= 2048):
        raise ValueError(f"depth_lab: width must be an integer in [2, 2048], got {width!r}")


@dataclass
class _DepthDraws:
    """The random numbers of one depth-lab run, drawn in this order from ``default_rng(seed)``."""

    x: np.ndarray  # (n_samples, width) inputs
    weights: np.ndarray  # (depth, width, width), std σ_W, each stored (out, in)
    upstream: np.ndarray  # (n_samples, width) the upstream gradient G
    pick: np.ndarray  # indices of the pre-activations kept for the histograms


def _depth_draws(depth, width, n_samples, std, seed, max_samples) -> _DepthDraws:
    """The draws with weights σ_W · N(0, 1): the numbers ``rng.normal(0, σ_W)`` gives, to the bit,
    scaled from unit draws kept for the last few stacks (a change of σ_W, the activation or the
    switches draws nothing; at width 256 the 50 weight matrices cost more than the run)."""
    unit = _unit_depth_draws(depth, width, n_samples, seed, max_samples)
    return _DepthDraws(unit.x, std * unit.weights, unit.upstream, unit.pick)


@functools.lru_cache(maxsize=4)  # up to 26 MB each (50 layers of width 256)
def _unit_depth_draws(depth, width, n_samples, seed, max_samples) -> _DepthDraws:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_samples, width))
    weights = rng.standard_normal((depth, width, width))  # layer by layer, the stream's order
    upstream = rng.standard_normal((n_samples, width))
    pick = rng.permutation(n_samples * width)[: min(max_samples, n_samples * width)]
    return _DepthDraws(x, weights, upstream, pick)


def _depth_run(forward, draws: _DepthDraws, activation, std, slope, residual, norm, slopes: bool = True) -> DepthReport:
    """:func:`depth_lab` on drawn numbers (the four variants of :func:`depth_variants` share them).
    ``slopes=False`` skips the slope statistics φ'(z) of every layer (an engine pass over all the
    pre-activations: for GELU, whose erf is a NumPy series, half the run)."""
    depth, width = len(draws.weights), draws.x.shape[1]
    params = {"slope": slope} if activation == "leaky_relu" else {}
    peak = derivative_peak(activation, **params)
    weights = [Tensor._wrap(w) for w in draws.weights]  # constants, no copy: the draws are never written
    x = Tensor(draws.x, requires_grad=True)  # so that every z_l is in the graph and keeps its gradient
    with np.errstate(over="ignore", invalid="ignore"):
        a, zs = forward(x, weights, _phi(activation, slope), residual, norm)
        a.backward(draws.upstream)

        z_all = np.stack([z.data for z in zs])  # (depth, n_samples, width)
        z_std = z_all.std(axis=(1, 2))
        z_mean = z_all.mean(axis=(1, 2))
        flat_share = dead_share = deriv_rms = predicted = None
        if slopes:
            derivs = engine_derivative(activation, z_all, **params)[1]  # one engine call for every layer
            flat = np.abs(derivs) < 0.05 * peak  # a negative slope passes the gradient on too
            flat_share = flat.mean(axis=(1, 2))
            dead_share = flat.all(axis=1).mean(axis=1)
            deriv_rms = np.sqrt(np.mean(derivs * derivs, axis=(1, 2)))
        grad_norm = np.array([np.linalg.norm(z.grad.numpy()) if z.grad is not None else 0.0 for z in zs])
        if slopes and not (residual or norm):
            factors = np.array([weights[k].data.std() * math.sqrt(width) * deriv_rms[k - 1] for k in range(1, depth)])
            # predicted[l] = grad_norm[L-1] * prod of factors k = l+1 .. L-1
            tail = np.concatenate([np.cumprod(factors[::-1])[::-1], [1.0]]) if depth > 1 else np.array([1.0])
            predicted = grad_norm[-1] * tail

    samples = [z.data.ravel()[draws.pick] for z in zs]
    report = DepthReport(
        activation, std, z_std, z_mean, flat_share, dead_share, deriv_rms, grad_norm, predicted, samples
    )
    bad = not (np.all(np.isfinite(z_std)) and np.all(np.isfinite(grad_norm)))
    if bad:
        report.message = (
            "the activations or gradients overflowed to inf/NaN: the weights are far too large "
            "for this depth; lower the scale"
        )
    elif grad_norm[-1] == 0:
        report.message = "every unit of the last layer is flat: no gradient reaches the network at all"
    return report


@dataclass
class NormalisationRun:
    """A plain stack at initialisation, per layer l = 1 … L: the mean and variance of its activations
    A⁽ˡ⁾ = φ(Z⁽ˡ⁾) over the batch and the units."""

    a_mean: np.ndarray
    a_var: np.ndarray


SELF_NORM_INPUT_STDS = (0.1, 0.3, 1.0, 3.0, 10.0)  # the input-scale slider's steps
SELF_NORM_DEFAULT = {"input_std": 3.0, "depth": 50, "width": 64, "n_samples": 64, "seed": 0}


@functools.lru_cache(maxsize=8)
def _unit_draws(depth: int, width: int, n_samples: int, seed: int) -> tuple:
    """N(0, 1) inputs (n_samples, width) and ``depth`` weight matrices (width, width), read-only."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_samples, width))
    weights = tuple(rng.standard_normal((width, width)) for _ in range(depth))
    for a in (x, *weights):
        a.flags.writeable = False
    return x, weights


def self_normalisation(
    forward,
    activation,
    weight_std: float,
    input_std: float = 1.0,
    depth: int = 50,
    width: int = 64,
    n_samples: int = 64,
    seed: int = 0,
) -> NormalisationRun:
    """The page's ``forward`` (``deep_forward``) on inputs x ~ N(0, input_std²·I) through ``depth``
    plain layers of weights N(0, ``weight_std``²), ``activation`` a name of :data:`DEPTH_ACTIVATIONS`
    or a function of one tensor (the page's ``selu``); forward only. Inputs and
    weights are N(0, 1) draws (cached: a move of the slider only rescales them) times ``input_std``
    and ``weight_std``. Cached per setting (``forward`` and a function ``activation`` by identity)."""
    _check_std(weight_std)
    if not (math.isfinite(input_std) and input_std > 0):
        raise ValueError(f"self_normalisation: the input std must be a positive number, got {input_std!r}")
    return _self_normalisation(forward, activation, float(weight_std), float(input_std), depth, width, n_samples, seed)


@functools.lru_cache(maxsize=32)  # the input-scale slider has five steps, each asked again when moved back
def _self_normalisation(forward, activation, weight_std, input_std, depth, width, n_samples, seed) -> NormalisationRun:
    x, weights = _unit_draws(depth, width, n_samples, seed)
    phi = _phi(activation)
    with no_grad():
        _, zs = forward(Tensor(x * input_std), [Tensor(w * weight_std) for w in weights], phi)
        acts = [phi(z).data for z in zs]
    return NormalisationRun(np.array([v.mean() for v in acts]), np.array([v.var() for v in acts]))


@dataclass
class ScaleSweep:
    """The per-layer gradient factor of a plain stack against the custom weight scale s (σ_W = s/√n)."""

    activation: object
    scales: np.ndarray
    per_layer_factor: np.ndarray  # geometric mean of ‖∂L/∂z_{l−1}‖ / ‖∂L/∂z_l‖ at each scale

    @property
    def crossing(self) -> float | None:
        """The scale where the factor crosses 1 (log-linear interpolation), or None if it never does."""
        log_f = np.log(self.per_layer_factor)
        up = np.flatnonzero((log_f[:-1] < 0) & (log_f[1:] >= 0))
        if not up.size:
            return None
        i = int(up[0])
        t = -log_f[i] / (log_f[i + 1] - log_f[i])
        return float(self.scales[i] + t * (self.scales[i + 1] - self.scales[i]))


SWEEP_SCALES = np.linspace(0.25, 5.0, 20)
SWEEP_DEFAULT = {"depth": 20, "width": 64, "n_samples": 32, "seed": 0}


def scale_sweep(
    forward,
    activation: str = "tanh",
    scales=None,
    depth: int = 20,
    width: int = 64,
    n_samples: int = 32,
    seed: int = 0,
    shipped: dict | None = None,
) -> ScaleSweep:
    """Run :func:`depth_lab` with the lesson's ``forward`` (plain stack, σ_W = s/√n) at each weight
    scale s and record its per-layer gradient factor: below 1 the gradient vanishes with depth,
    above 1 it explodes. Every scale draws the same numbers (σ_W·N(0, 1) from one seed).

    ``shipped``: the sweeps of :func:`shipped_sweeps` (``{activation: factors}``), used as they are
    for the default settings, so the page shows them without an engine run. Cached: the notebook
    asks again for an activation it has shown before."""
    default = scales is None and {"depth": depth, "width": width, "n_samples": n_samples, "seed": seed} == SWEEP_DEFAULT
    scales = SWEEP_SCALES if scales is None else np.asarray(scales, dtype=np.float64)
    _check_stack(activation, depth, width)
    if default and shipped is not None and not callable(activation):
        return ScaleSweep(activation, scales.copy(), np.asarray(shipped[activation], dtype=np.float64).copy())
    factors = _sweep_factors(forward, activation, tuple(float(s) for s in scales), depth, width, n_samples, seed)
    return ScaleSweep(activation, scales.copy(), np.array(factors))


def default_sweeps(forward) -> dict:
    """What the checkpoint ``activations_sweeps`` holds: :func:`scale_sweep`'s default factors for
    every depth-lab activation, run with the lesson's ``forward``."""
    return {name: scale_sweep(forward, name).per_layer_factor for name in DEPTH_ACTIVATIONS}


# the sweeps the page opens on, made by the notebook's own forward pass (its block and deep_forward)
CHECKPOINTS = {
    "activations_sweeps": checkpoints.FromNotebook(
        notebook="01_activations", function="default_sweeps", code=("block", "deep_forward")
    ),
    # the 50-layer table at the default width, by the same forward pass and the page's init_std
    "activations_variants": checkpoints.FromNotebook(
        notebook="01_activations", function="default_variants", code=("block", "deep_forward", "init_std")
    ),
    # where tanh's sweep crosses 1 at each depth: mean-field theory and the page's stacks
    "activations_transient": checkpoints.FromNotebook(
        notebook="01_activations", function="default_transient", code=("block", "deep_forward", "mean_field")
    ),
    # section 5's two 50-layer stacks trained on the moons, by the page's network and loop
    "activations_deep_training": checkpoints.FromNotebook(
        notebook="01_activations",
        function="default_deep_training",
        code=("block", "deep_forward", "init_std", "deep_net", "train_deep"),
    ),
    # section 6's dead units after training at each learning rate, 5 seeds, by the page's code
    "activations_dead_relus": checkpoints.FromNotebook(
        notebook="01_activations",
        function="default_dead_relus",
        code=("moon_net", "moon_forward", "train_moons", "dead_units"),
    ),
}


def shipped_sweeps(*code) -> tuple[dict | None, str]:
    """``(sweeps, "")`` from the shipped checkpoint when ``code`` (the page's ``block`` and
    ``deep_forward``) is the code that made it, else ``(None, reason)``: one sentence for the page."""
    state, _ = checkpoints.load_if_fits(_sweeps_checkpoint, *code)
    if state is None:
        return None, (
            "the shipped sweep was made by other code than this page's `block` and `deep_forward`, "
            "so it is not shown: the button runs the sweep with yours"
        )
    return {name: np.asarray(v, dtype=np.float64) for name, v in state.items()}, ""


def shipped_variants(*code) -> dict | None:
    """The shipped runs of :func:`default_variants` when ``code`` (the page's ``block``,
    ``deep_forward`` and ``init_std``) is the code that made them, else None (the table is then
    computed with the page's code at every setting)."""
    state, _ = checkpoints.load_if_fits(_variants_checkpoint, *code)
    return state


@functools.lru_cache(maxsize=32)
def _sweep_factors(forward, activation, scales: tuple, depth, width, n_samples, seed) -> tuple:
    """Per-layer gradient factors of plain stacks at each custom scale σ_W = s/√n, one run each."""
    draws = _depth_draws(depth, width, n_samples, 1.0, seed, max_samples=0)  # unit weights: σ_W · N(0, 1)
    factors = []
    for s in scales:
        std = s / math.sqrt(width)
        scaled = _DepthDraws(draws.x, std * draws.weights, draws.upstream, draws.pick)
        factors.append(_depth_run(forward, scaled, activation, std, 0.01, False, False, slopes=False).per_layer_factor)
    return tuple(factors)


def samples_for_width(width: int, values_per_layer: int = 8192, most: int = 128) -> int:
    """A batch size giving each layer about ``values_per_layer`` pre-activations, at most ``most``
    examples: the layer statistics are as precise at every width, and a stack of width 256 costs
    about what one of width 64 does (128 examples at width ≤ 64, 32 at width 256)."""
    return int(max(8, min(most, values_per_layer // width)))


DEPTH_VARIANTS = {
    "plain": (False, False),
    "residual": (True, False),
    "pre-norm": (False, True),
    "residual + pre-norm": (True, True),
}


def depth_variants(
    forward,
    weight_std: float,
    depth: int = 50,
    width: int = 64,
    activation: str = "tanh",
    n_samples: int | None = None,
    seed: int = 0,
    shipped: dict | None = None,
) -> dict:
    """The same stack (same weights and inputs, drawn once) run by the lesson's ``forward`` plain,
    with a residual path, with pre-norm, and with both: variant name -> :class:`DepthReport`, each
    as :func:`depth_lab` gives but without the histogram samples (``z_samples`` empty) and the
    slope statistics (``flat_share``, ``dead_share``, ``deriv_rms`` and ``predicted_grad_norm`` are None).

    ``n_samples`` defaults to 2,048 pre-activations per layer, at most 32 examples (32 at width 64):
    the four verdicts of 128 examples but for a few gradient ratios near the verdicts' threshold
    of 100 (as many as with 64 examples), at a fraction of the cost of every change of the
    notebook's controls (GELU's erf is a NumPy series). Cached (the reports are small), so a
    setting shown before is shown again at once; treat the reports as read-only.

    ``shipped``: the runs of :func:`shipped_variants`, used as they are where they hold this
    setting (the default depth, width, batch and seed, an activation by name, He's or Xavier's σ_W),
    so the page answers a change of activation or initialisation without an engine run."""
    _check_stack(activation, depth, width)
    _check_std(weight_std)
    if n_samples is None:
        n_samples = samples_for_width(width, values_per_layer=2048, most=32)
    found = _shipped_variant_runs(shipped, activation, float(weight_std), depth, width, n_samples, seed)
    if found is not None:
        return found
    return dict(_depth_variants(forward, depth, width, activation, float(weight_std), n_samples, seed))


VARIANTS_DEFAULT = {"depth": 50, "width": 64, "n_samples": 32, "seed": 0}
VARIANTS_INITS = ("he", "xavier")  # a custom scale of 1 is Xavier's σ_W at width 64


def default_variants(forward, init_std) -> dict:
    """What the checkpoint ``activations_variants`` holds: :func:`depth_variants` at the default
    depth and width for every depth-lab activation with He's and Xavier's σ_W (the lesson's
    ``init_std``), run by the lesson's ``forward``: ``{"relu/he": (4 variants, 3, depth) array of
    z_std, z_mean and grad_norm, "relu/he/std": [σ_W], ...}``."""
    width, depth = VARIANTS_DEFAULT["width"], VARIANTS_DEFAULT["depth"]
    state = {}
    for name in DEPTH_ACTIVATIONS:
        for init in VARIANTS_INITS:
            std = float(init_std(init, width, width, leaky_slope=0.01 if name == "leaky_relu" else 0.0))
            runs = depth_variants(forward, std, depth=depth, width=width, activation=name)
            state[f"{name}/{init}"] = np.stack([np.stack([r.z_std, r.z_mean, r.grad_norm]) for r in runs.values()])
            state[f"{name}/{init}/std"] = np.array([std])
    return state


def variants_are_shipped(shipped, activation, weight_std, width: int) -> bool:
    """Whether :func:`depth_variants` at this setting (default depth, batch and seed) reads ``shipped``."""
    d = VARIANTS_DEFAULT
    return (
        _shipped_variant_runs(shipped, activation, float(weight_std), d["depth"], width, d["n_samples"], d["seed"])
        is not None
    )


def _shipped_variant_runs(shipped, activation, std, depth, width, n_samples, seed) -> dict | None:
    """The shipped :func:`depth_variants` reports for this setting, or None where none is shipped."""
    if (
        shipped is None
        or callable(activation)
        or {"depth": depth, "width": width, "n_samples": n_samples, "seed": seed} != VARIANTS_DEFAULT
    ):
        return None
    for init in VARIANTS_INITS:
        if float(shipped.get(f"{activation}/{init}/std", [np.nan])[0]) == std:
            runs = shipped[f"{activation}/{init}"]
            return {
                name: DepthReport(activation, std, z_std, z_mean, None, None, None, grad_norm, None)
                for name, (z_std, z_mean, grad_norm) in zip(DEPTH_VARIANTS, runs)
            }
    return None


@functools.lru_cache(maxsize=64)
def _depth_variants(forward, depth, width, activation, std, n_samples, seed) -> dict:
    draws = _depth_draws(depth, width, n_samples, std, seed, max_samples=0)
    return {
        name: _depth_run(forward, draws, activation, std, 0.01, res, norm, slopes=False)
        for name, (res, norm) in DEPTH_VARIANTS.items()
    }


# ----------------------------------------------------------------------------- the finite-depth transient

TRANSIENT_SCALES = np.round(np.arange(0.9, 1.6001, 0.005), 3)  # fine enough to read a crossing to ±0.003
TRANSIENT_DEPTH = 1000  # mean-field theory, every depth L = 5 … 1000
TRANSIENT_FIRST_DEPTH = 5  # tanh crosses above s = 1.6 in shallower stacks, off the scales
TRANSIENT_MEASURED = (10, 20, 50)  # the engine's stacks (width 64, the sweep's batch and seed)
TRANSIENT_MEASURED_SCALES = np.round(np.arange(0.8, 1.6001, 0.05), 2)


def crossing_of(scales, factors) -> float:
    """Where ``factors`` (over increasing ``scales``) first crosses 1, log-linearly interpolated; NaN if never."""
    found = ScaleSweep("", np.asarray(scales, dtype=np.float64), np.asarray(factors, dtype=np.float64)).crossing
    return float("nan") if found is None else found


def transient(mean_field, forward, activation: str = "tanh") -> dict:
    """What the checkpoint ``activations_transient`` holds: the scale s* where the per-layer gradient
    factor crosses 1, by the lesson's ``mean_field`` at every depth L = 5 … :data:`TRANSIENT_DEPTH`
    (``"theory"``, over ``"depths"``) and by the lesson's stacks (``forward``, :func:`scale_sweep`)
    at the depths :data:`TRANSIENT_MEASURED` (``"measured"``)."""
    factors = mean_field(_phi(activation), TRANSIENT_SCALES, TRANSIENT_DEPTH)[TRANSIENT_FIRST_DEPTH - 2 :]
    theory = np.array([crossing_of(TRANSIENT_SCALES, row) for row in factors])
    measured = np.array(
        [
            scale_sweep(forward, activation, scales=TRANSIENT_MEASURED_SCALES, depth=d).crossing
            for d in TRANSIENT_MEASURED
        ]
    )
    return {
        "depths": np.arange(TRANSIENT_FIRST_DEPTH, TRANSIENT_DEPTH + 1),
        "theory": theory,
        "measured_depths": np.array(TRANSIENT_MEASURED),
        "measured": measured,
    }


def shipped_transient(*code) -> tuple[dict | None, str]:
    """``(state, "")``, the shipped :func:`transient`, when ``code`` (the page's ``block``,
    ``deep_forward`` and ``mean_field``) made it, else ``(None, reason)``."""
    state, _ = checkpoints.load_if_fits(_transient_checkpoint, *code)
    if state is None:
        return None, (
            "the shipped crossings were made by other code than this page's `block`, `deep_forward` "
            "and `mean_field`, so they are not shown"
        )
    return {k: np.asarray(v) for k, v in state.items()}, ""


def transient_figure(state: dict):
    """s* against depth (log axis): the mean-field line (about 100 of its depths), the engine's stacks
    as dots, a rule at s = 1."""
    key = ("transient", _digest(state["theory"], state["measured"]))

    def build():
        depths = np.asarray(state["depths"])  # about 100 points, evenly spaced on the log axis
        pick = np.unique(np.searchsorted(depths, np.geomspace(depths[0], depths[-1], 100).round()))
        line = plot.curves(
            depths[pick],
            {"mean field (n → ∞)": np.asarray(state["theory"])[pick]},
            log_x=True,
            x_title="depth L",
            y_title="s where the factor crosses 1",
            height=200,
            colors={"mean field (n → ∞)": "analytic"},
            title="tanh: the crossing s* against depth",
        )
        return (
            line
            + plot.points(state["measured_depths"], state["measured"], color_name="autograd", label="engine, width 64")
            + plot.rule(1.0)
        )

    return _remember(key, build)


# ----------------------------------------------------------------------------- fifty layers, trained

# section 5's training run: ReLU with Xavier's σ_W (the setting of the section's opening figure),
# 50 layers of width 32, full-batch Adam on the moons; the two stacks the section contrasts
DEEP_TRAINING = {"width": 32, "depth": 50, "steps": 100, "lr": 0.01, "activation": "relu", "init": "xavier", "seed": 0}
DEEP_TRAINING_VARIANTS = ("plain", "residual + pre-norm")


def deep_training(deep_net, train_deep, init_std, seed: int | None = None, on_step=None, activation=None) -> dict:
    """Train the lesson's ``deep_net`` (built from ``seed``, weights σ_W = ``init_std``(Xavier) for
    :data:`DEEP_TRAINING`'s width) with the lesson's ``train_deep`` on the moons, once plain and
    once with a residual path and pre-norm: ``{variant: loss at every step}``. Both stacks start
    from the same weights. ``activation``: a name of :data:`DEPTH_ACTIVATIONS` or a function of
    one tensor (the learner's own φ); ReLU if None. ``on_step(i)`` is called after each of the
    2 × steps steps."""
    from engine.random import fork_rng

    d = DEEP_TRAINING
    seed = d["seed"] if seed is None else seed
    X, y = moons(seed=0)
    std = float(init_std(d["init"], d["width"], d["width"]))
    activation = d["activation"] if activation is None else activation
    _check_name(activation, DEPTH_ACTIVATIONS)
    phi = _phi(activation)
    runs = {}
    for k, name in enumerate(DEEP_TRAINING_VARIANTS):
        residual, pre_norm = DEPTH_VARIANTS[name]
        with fork_rng(seed):
            net = deep_net(d["width"], d["depth"], std)
        step = None if on_step is None else (lambda i, k=k: on_step(k * d["steps"] + i))
        with np.errstate(over="ignore", invalid="ignore"):
            runs[name] = np.asarray(
                train_deep(net, X, y, phi, residual, pre_norm, steps=d["steps"], lr=d["lr"], on_step=step),
                dtype=np.float64,
            )
    return runs


def shipped_deep_training(*code) -> tuple[dict | None, str]:
    """``(runs, "")``, the shipped :func:`deep_training` losses, when ``code`` (the page's ``block``,
    ``deep_forward``, ``init_std``, ``deep_net`` and ``train_deep``) is the code that made them,
    else ``(None, reason)``: one sentence for the page."""
    state, reason = checkpoints.load_if_fits(_deep_training_checkpoint, *code)
    if state is None:
        return None, reason
    return {name: np.asarray(state[name], dtype=np.float64) for name in DEEP_TRAINING_VARIANTS}, ""


def deep_training_figure(runs: dict, activation_label: str = "ReLU"):
    """The training losses of the 50-layer stacks, one curve each, on a log scale, with ln 2 (the
    loss of p = ½ for every point) as a rule; ``activation_label`` names the φ they were trained with."""
    key = ("deep-training", activation_label, _digest(list(runs), list(runs.values())))
    return _remember(
        key,
        lambda: (
            plot.curves(
                np.arange(1, len(next(iter(runs.values()))) + 1),
                runs,
                x_title="Adam step",
                y_title="training loss (BCE)",
                log_y=True,
                height=220,
                colors={"plain": "reference", "residual + pre-norm": "model"},
                title=f"{activation_label}, Xavier's σ_W, 50 layers of width 32, trained on the moons",
            )
            + plot.rule(math.log(2), color_name="analytic")
        ),
    )


# ----------------------------------------------------------------------------- what the bend buys


@dataclass
class BendReport:
    """A small ReLU network on the two-moons data: its decision and its linear pieces on a grid."""

    width: int
    depth: int  # hidden layers; 0 is logistic regression, a single linear piece
    steps: int  # Adam steps trained (0: the network at initialisation)
    pieces: int  # distinct on/off patterns of the ReLUs over the grid: the linear pieces seen in the box
    accuracy: float  # on the 200 training points
    xx: np.ndarray
    yy: np.ndarray
    probs: np.ndarray  # (G, G) probability of class 1
    piece_ids: np.ndarray  # (G, G) index of the linear piece each grid point lies in
    X: np.ndarray
    y: np.ndarray

    @property
    def one_layer_bound(self) -> int | None:
        """The most pieces one hidden layer of this width can make (None for other depths)."""
        return max_pieces_one_layer(self.width) if self.depth == 1 else None


def max_pieces_one_layer(n: int) -> int:
    """n lines cut the plane into at most 1 + n + n(n − 1)/2 regions (lines in general position)."""
    return 1 + n + n * (n - 1) // 2


def _pattern_ids(bits: np.ndarray) -> np.ndarray:
    """The index of each row's on/off pattern among the distinct rows of ``bits`` (P, units), in
    sorted order: np.unique(bits, axis=0)'s labels, with each row packed into bytes first (one
    comparison per row instead of one per unit: 10-100× faster on a 150 × 150 grid)."""
    packed = np.ascontiguousarray(np.packbits(bits, axis=1))
    rows = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
    return np.unique(rows, return_inverse=True)[1].ravel()


# the section's default network, trained when the page opens (400 Adam steps take ~0.05 s)
BEND_DEFAULT = {"width": 8, "depth": 1}
BEND_STEPS = 400


def is_default_bend(settings: dict) -> bool:
    """Whether ``settings`` (any of :data:`BEND_DEFAULT`'s keys) all hold their default value: the
    section then shows the default network, trained when the page opens."""
    return is_default("is_default_bend", settings, BEND_DEFAULT)


def moons(n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The section's data: ``n`` points of two interleaved half-moons (noise 0.15), labels 0 and 1."""
    from engine.data import make_moons

    return make_moons(n, noise=0.15, seed=seed)


def bend_report(forward, net, X, y, steps: int, grid: int = 150) -> BendReport:
    """Label every point of a ``grid`` × ``grid`` box around ``X`` with the on/off pattern of the
    ReLUs of network ``net`` (the lesson's network and its forward pass, passed in:
    ``forward(net, x)`` returns the logit and each hidden layer's pre-activations z_l). Inside one pattern the network is one affine map, so the
    number of distinct patterns is the number of linear pieces the grid sees (a lower bound on the
    true count). ``steps``: how long the model was trained, for the caption. Kept for the last 16
    networks (by ``forward`` and the weights' values): treat the report as read-only."""
    key = ("bend-report", forward, steps, grid, _digest([p.data for p in net.parameters()], X, y))
    return _remember(key, lambda: _bend_report(forward, net, X, y, steps, grid), _BEND_REPORTS, 16)


_BEND_REPORTS: OrderedDict = OrderedDict()  # the last reports, by the network's weights: a width shown again


def _bend_report(forward, net, X, y, steps: int, grid: int) -> BendReport:
    import engine

    lo, hi = X.min(axis=0) - 0.5, X.max(axis=0) + 0.5
    xx, yy = np.meshgrid(np.linspace(lo[0], hi[0], grid), np.linspace(lo[1], hi[1], grid))
    points = np.column_stack([xx.ravel(), yy.ravel()])
    with engine.no_grad():
        logits, zs = forward(net, Tensor(points))
        train_logits, _ = forward(net, Tensor(X))
    bits = [z.data > 0 for z in zs]
    piece_ids = _pattern_ids(np.concatenate(bits, axis=1)) if bits else np.zeros(len(points), dtype=int)
    accuracy = float(np.mean((train_logits.data.reshape(-1) > 0) == (y == 1)))
    width = zs[0].shape[-1] if zs else 0
    return BendReport(
        width,
        len(zs),
        steps,
        int(piece_ids.max()) + 1,
        accuracy,
        xx,
        yy,
        _sigmoid(logits.data.reshape(-1).astype(np.float64)).reshape(xx.shape),
        piece_ids.reshape(xx.shape),
        X,
        y,
    )


# ----------------------------------------------------------------------------- the page's figures
# Building an Altair chart costs a page more than the lab's run behind it, so each figure is built
# once per setting and kept for the last few (a control moved back shows it without building it
# again); mo.ui.altair_chart copies the chart it shows, so a kept chart is never changed.

_FIGURES: OrderedDict = OrderedDict()
_FIGURES_KEPT = 48


def _digest(*parts) -> bytes:
    """A short hash of arrays (by content), lists of them and plain values: a figure's cache key."""
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        if isinstance(part, (list, tuple)):
            h.update(_digest(*part))
        elif isinstance(part, np.ndarray):
            a = np.ascontiguousarray(part)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        else:
            h.update(repr(part).encode())
        h.update(b"|")
    return h.digest()


def _remember(key, build, store: OrderedDict | None = None, kept: int | None = None):
    """``build()`` the first time ``key`` is asked for, the same object while it is among the last
    ``kept`` keys asked for (default: the figures, :data:`_FIGURES_KEPT`)."""
    store = _FIGURES if store is None else store
    kept = _FIGURES_KEPT if kept is None else kept
    found = store.pop(key, None)
    if found is None:
        found = build()
    store[key] = found
    while len(store) > kept:
        try:
            store.popitem(last=False)
        except KeyError:  # another session trimmed it first
            break
    return found


CURVE_POINTS = 121  # section 1's curves: smooth at the chart's width over any x range (a step of at most 0.33)


def activation_view(name: str, span: float, **params) -> tuple[Curves, object]:
    """Section 1 for activation ``name`` over [−span, span]: its :class:`Curves` (:data:`CURVE_POINTS`
    points) and their chart, φ and the formula's φ′ as lines, the engine's autograd φ′ as dots.
    Cached per setting (an α that ``name`` does not take is no new setting)."""
    return _activation_view(name, float(span), _params_key(name, params))


@functools.lru_cache(maxsize=64)
def _activation_view(name, span, params):
    c = evaluate(name, np.linspace(-span, span, CURVE_POINTS), **dict(params))
    chart = plot.function_and_derivative(
        c.x, c.f, c.df_formula, c.df_autograd, name="φ", var="z", title=ACTIVATIONS[name]["label"], height=260
    )
    return c, chart


def own_activation_view(phi, span: float) -> tuple[Curves, object]:
    """Section 1 for the learner's own ``phi`` (a function of one tensor) over [−span, span]: φ and
    autograd's φ′ by the engine and, in place of a formula, φ′ by central
    differences (φ(z + h) − φ(z − h)) / 2h, h = 1e-5 (float64, so the gap is ~1e-10), as the
    :class:`Curves`' ``df_formula``; and their chart. Cached per function (by identity) and span."""
    return _own_activation_view(phi, float(span))


@functools.lru_cache(maxsize=8)
def _own_activation_view(phi, span):
    x = np.linspace(-span, span, CURVE_POINTS)
    f, df = engine_derivative(phi, x)
    h = 1e-5
    with no_grad():
        central = (phi(Tensor(x + h)).data - phi(Tensor(x - h)).data) / (2 * h)
    fn, cd, ag = "φ(z)", "φ′(z), central difference", "φ′(z), autograd"
    chart = plot.curves(
        x,
        {fn: f, cd: central},
        dots={ag: df},
        x_title="z",
        y_title="value",
        colors={fn: "function", cd: "derivative"},
        title="yours: my_activation",
        height=260,
    )
    return Curves(x, f, df, f, central), chart


def depth_figures(report: DepthReport) -> tuple:
    """The depth lab's three charts for ``report``: histograms of z in up to 4 layers (one row: the
    first, the last and two between; each panel is 30 rects the browser redraws at every change), the flat and
    dead shares per layer, and the gradient norm per layer (autograd dots over the product of
    factors on the plain stack, the autograd line alone off it)."""
    r = report
    show = sorted(set(np.linspace(0, r.depth - 1, min(r.depth, 4)).round().astype(int)))
    key = (
        "depth",
        _digest(
            r.z_std, r.grad_norm, r.flat_share, r.dead_share, r.predicted_grad_norm, [r.z_samples[i] for i in show]
        ),
    )
    return _remember(key, lambda: _depth_figures(r, show))


def _depth_figures(r: DepthReport, show) -> tuple:
    layers = np.arange(1, r.depth + 1)
    panels = {f"layer {i + 1}": r.z_samples[i] for i in show}
    flags = {f"layer {i + 1}": f"{100 * r.flat_share[i]:.0f}% flat" for i in show}
    hist = plot.histogram_grid(
        panels, bins=30, x_title="pre-activation z", flags=flags, title="Pre-activations, layer by layer"
    )
    shares = plot.curves(
        layers,
        {"flat share": r.flat_share, "dead units": r.dead_share},
        x_title="layer l",
        y_title="share",
        y_domain=(0, 1),
        height=180,
        colors={"flat share": "reference", "dead units": "error"},
        title="Units with (almost) no slope",
    )
    if r.predicted_grad_norm is not None:
        grads = plot.curves(
            layers,
            {"product of factors σ_W√n·rms φ′": r.predicted_grad_norm},
            dots={"autograd ‖∂L/∂z‖": r.grad_norm},
            n_dots=60,
            x_title="layer l",
            y_title="‖∂L/∂z‖",
            log_y=True,
            height=180,
            colors={"product of factors σ_W√n·rms φ′": "analytic"},
            title="Gradient norm per layer",
        )
    else:  # off the plain stack the product of factors no longer predicts the norm
        grads = plot.curves(
            layers,
            {"autograd ‖∂L/∂z‖": r.grad_norm},
            x_title="layer l",
            y_title="‖∂L/∂z‖",
            log_y=True,
            height=180,
            colors={"autograd ‖∂L/∂z‖": "autograd"},
            title="Gradient norm per layer",
        )
    return hist, shares, grads


def self_normalisation_figures(runs: dict) -> tuple:
    """The variance and the mean of the activations per layer, one curve per run of ``runs``
    (name -> :class:`NormalisationRun`)."""
    key = ("self-norm", _digest(list(runs), [r.a_var for r in runs.values()], [r.a_mean for r in runs.values()]))

    def build():
        layers = np.arange(1, len(next(iter(runs.values())).a_var) + 1)
        colors = dict(zip(runs, plot.SERIES_COLORS))
        var = plot.curves(
            layers,
            {k: r.a_var for k, r in runs.items()},
            colors=colors,
            log_y=True,
            height=220,
            x_title="layer l",
            y_title="Var A⁽ˡ⁾",
            title="Variance of the activations",
        )
        mean = plot.curves(
            layers,
            {k: r.a_mean for k, r in runs.items()},
            colors=colors,
            height=220,
            x_title="layer l",
            y_title="mean A⁽ˡ⁾",
            title="Mean of the activations",
        )
        return var, mean

    return _remember(key, build)


def sweep_figure(sweep: ScaleSweep, name: str):
    """The weight-scale sweep's chart: the per-layer gradient factor against s, a rule at 1."""
    key = ("sweep", name, _digest(sweep.scales, sweep.per_layer_factor))
    return _remember(
        key,
        lambda: (
            plot.curves(
                sweep.scales,
                {"per-layer gradient factor": sweep.per_layer_factor},
                x_title="custom weight scale s (σ_W = s/√n)",
                y_title="factor per layer",
                log_y=True,
                colors={"per-layer gradient factor": "model"},
                height=200,
                title=f"{name}: plain stack, depth 20, width 64",
            )
            + plot.rule(1.0)
        ),
    )


def bend_figure(report: BendReport):
    """The two panels of section 6 for ``report``, two charts (left, right): its linear pieces (one colour each) and its
    decision (the probability of class 1, blue to orange, with the data), each one image of the
    150 × 150 grid the pieces are counted on, the cells where the probability crosses ½ drawn dark
    on both. Two image marks where a rect per cell made the browser redraw 1,800 marks at every
    move of the width or depth slider; kept for the last few reports."""
    key = (
        "bend",
        report.width,
        report.depth,
        report.steps,
        report.pieces,
        report.accuracy,
        _digest(report.probs, report.piece_ids, report.X, report.y),
    )
    return _remember(key, lambda: _bend_figure(report))


# Vega's tableau20, the colours the pieces take (shuffled with a fixed seed, so neighbours rarely match)
_PIECE_COLOURS = np.array(
    [
        [int(c[i : i + 2], 16) for i in (1, 3, 5)]
        for c in (
            "#4c78a8 #9ecae9 #f58518 #ffbf79 #54a24b #88d27a #b79a20 #f2cf5b #439894 #83bcb6 "
            "#e45756 #ff9d98 #79706e #bab0ac #d67195 #fcbfd2 #b279a2 #d6a5c9 #9e765f #d8b5a5"
        ).split()
    ],
    dtype=np.float64,
)
# P(class 1) from 0 to 1: class 0's blue, white at ½, class 1's orange (the dots' colours, lightened)
_DECISION_STOPS = np.array([[29, 78, 216], [247, 247, 247], [194, 65, 12]], dtype=np.float64)


def _image_url(rgb: np.ndarray) -> str:
    """A data URL of the PNG of uint8 RGB pixels [H, W, 3] whose row 0 is the grid's lowest x₂."""
    import base64

    return "data:image/png;base64," + base64.b64encode(plot.png(np.ascontiguousarray(rgb[::-1]))).decode("ascii")


def _bend_figure(report: BendReport, height: int = 260):
    import altair as alt

    side = report.probs >= 0.5
    edge = np.zeros_like(side)
    edge[:, :-1] |= side[:, :-1] != side[:, 1:]
    edge[:-1, :] |= side[:-1, :] != side[1:, :]
    shuffled = np.random.default_rng(0).permutation(report.pieces)[report.piece_ids]
    pieces = _PIECE_COLOURS[shuffled % len(_PIECE_COLOURS)]
    p = np.clip(report.probs, 0.0, 1.0)[..., None]
    decision = np.where(p < 0.5, (1 - 2 * p) * _DECISION_STOPS[0] + 2 * p * _DECISION_STOPS[1], 0.0)
    decision = decision + np.where(p >= 0.5, (2 - 2 * p) * _DECISION_STOPS[1] + (2 * p - 1) * _DECISION_STOPS[2], 0.0)
    decision = 0.6 * decision + 0.4 * 255  # at the old panel's opacity over white
    dark = np.array([17, 24, 39], dtype=np.float64)
    pieces[edge], decision[edge] = dark, dark
    (x0, x1), (y0, y1) = (
        (float(report.xx.min()), float(report.xx.max())),
        (float(report.yy.min()), float(report.yy.max())),
    )
    x_enc = alt.X("x:Q", title="x₁", scale=alt.Scale(domain=[x0, x1], nice=False, zero=False))
    y_enc = alt.Y("y:Q", title="x₂", scale=alt.Scale(domain=[y0, y1], nice=False, zero=False))
    box = plot.data(x=[x0], x2=[x1], y=[y0], y2=[y1])

    def image(rgb):
        url = _image_url(np.round(rgb).astype(np.uint8))
        return alt.Chart(box).mark_image(url=url, aspect=False).encode(x_enc, alt.X2("x2"), y_enc, alt.Y2("y2"))

    names = ["class 0", "class 1"]
    labels = np.asarray(names, dtype=object)[np.asarray(report.y).astype(int)]
    dots = (
        alt.Chart(plot.data(x=report.X[:, 0], y=report.X[:, 1], label=labels, digits=4))
        .mark_circle(size=22, opacity=1, stroke="white", strokeWidth=0.6, clip=True)
        .encode(
            x_enc,
            y_enc,
            alt.Color(
                "label:N",
                title="",
                scale=alt.Scale(domain=names, range=["#1d4ed8", "#c2410c"]),
                legend=alt.Legend(orient="bottom"),
            ),
        )
    )
    left = image(pieces).properties(width=300, height=height, title=f"{report.pieces} linear pieces")
    right = alt.layer(
        image(decision),
        dots,
        width=300,
        height=height,
        title=f"decision, accuracy {100 * report.accuracy:.0f} %",
    )
    return left, right  # two charts side by side: Altair copies every part of a concatenation to build and show it


def softmax_figure(result: SoftmaxResult, temperature: float):
    """Section 3's bars: the probability of each class at temperature ``temperature``."""
    key = ("softmax", float(temperature), _digest(result.probs))
    return _remember(
        key,
        lambda: plot.bars(
            [f"class {k}" for k in range(len(result.probs))],
            result.probs,
            y_title="probability p",
            y_domain=(0, 1),
            color_name="model",
            title=f"softmax(z / {temperature:g})",
        ),
    )


# ----------------------------------------------------------------------------- dead ReLUs during training

# section 6's network (two hidden layers of 32 ReLUs) trained by the page's loop at each rate, 5 seeds
DEAD_RELU = {"width": 32, "depth": 2, "steps": 400, "lrs": (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0), "seeds": 5}


def dead_relu_sweep(moon_net, moon_forward, train_moons, dead_units, on_run=None) -> dict:
    """:func:`_dead_relu_sweep`, remembered per process by the code of the four lesson functions
    (a second press of the page's button, or the tests' second run, trains nothing new)."""
    key = ("dead-relus", checkpoints.code_fingerprint(moon_net, moon_forward, train_moons, dead_units))
    return _remember(
        key, lambda: _dead_relu_sweep(moon_net, moon_forward, train_moons, dead_units, on_run), _RETRAINED, 4
    )


_RETRAINED: OrderedDict = OrderedDict()  # the runs a page's buttons made, by the code that made them


def _dead_relu_sweep(moon_net, moon_forward, train_moons, dead_units, on_run=None) -> dict:
    """What the checkpoint ``activations_dead_relus`` holds: the lesson's ``moon_net`` (built from
    seeds 0 … 4, :data:`DEAD_RELU`'s width and depth) trained by the lesson's ``train_moons`` on the
    moons at every learning rate of :data:`DEAD_RELU`, with the share of dead hidden units by the
    lesson's ``dead_units`` before and after training and the training accuracy after:
    ``{"lrs": (K,), "dead_init": (S,), "dead": (K, S), "accuracy": (K, S)}``. Every rate starts
    from the same initial weights of each seed. ``on_run(i)`` is called after each of the K × S runs."""
    from engine.random import fork_rng

    d = DEAD_RELU
    X, y = moons(seed=0)
    lrs = np.asarray(d["lrs"], dtype=np.float64)
    dead = np.zeros((len(lrs), d["seeds"]))
    accuracy = np.zeros_like(dead)
    dead_init = np.zeros(d["seeds"])
    for s in range(d["seeds"]):
        for k, lr in enumerate(lrs):
            with fork_rng(s):
                net = moon_net(d["width"], d["depth"])
            dead_init[s] = float(np.mean(dead_units(net, X)))
            with np.errstate(over="ignore", invalid="ignore"):
                train_moons(net, X, y, steps=d["steps"], lr=float(lr))
                with no_grad():
                    logit, _ = moon_forward(net, Tensor(X))
            dead[k, s] = float(np.mean(dead_units(net, X)))
            accuracy[k, s] = float(np.mean((logit.data.reshape(-1) > 0) == (y == 1)))
            if on_run is not None:
                on_run(s * len(lrs) + k)
    return {"lrs": lrs, "dead_init": dead_init, "dead": dead, "accuracy": accuracy}


def shipped_dead_relus(*code) -> tuple[dict | None, str]:
    """``(sweep, "")``, the shipped :func:`dead_relu_sweep`, when ``code`` (the page's ``moon_net``,
    ``moon_forward``, ``train_moons`` and ``dead_units``) is the code that made it, else
    ``(None, reason)``: one sentence for the page."""
    state, reason = checkpoints.load_if_fits(_dead_relus_checkpoint, *code)
    if state is None:
        return None, reason
    return {k: np.asarray(v, dtype=np.float64) for k, v in state.items()}, ""


def dead_relu_figure(sweep: dict):
    """The share of dead hidden units after training against the learning rate (log axis): each
    seed a dot, their mean a line, the mean share at initialisation a dashed rule."""
    key = ("dead-relus", _digest(sweep["lrs"], sweep["dead"], sweep["dead_init"]))

    def build():
        import altair as alt

        lrs, dead = sweep["lrs"], sweep["dead"]
        mean = "mean of 5 seeds"
        line = (
            alt.Chart(plot.data(lr=lrs, dead=dead.mean(axis=1)))
            .mark_line(color=plot.color("error"), point=True)
            .encode(
                alt.X("lr:Q", title="learning rate η (Adam, 400 steps)", scale=alt.Scale(type="log")),
                alt.Y("dead:Q", title="share of hidden units dead", scale=alt.Scale(domain=[0, 1])),
                alt.Tooltip("dead:Q", title=mean, format=".2f"),
            )
        )
        seeds = (
            alt.Chart(plot.data(lr=np.repeat(lrs, dead.shape[1]), dead=dead.ravel()))
            .mark_circle(size=30, color=plot.color("data"), opacity=0.6)
            .encode(alt.X("lr:Q"), alt.Y("dead:Q"), alt.Tooltip("dead:Q", title="one seed", format=".2f"))
        )
        start = plot.rule(float(sweep["dead_init"].mean()))
        return alt.layer(
            start,
            seeds,
            line,
            width="container",
            height=220,
            title="Dead ReLUs after training (dots: seeds; dashed: at initialisation)",
        )

    return _remember(key, build)

"""Rows of the activation-functions sheet: each activation and its derivative.

Derivative rows compare the engine's autograd (``r.backward(g); x.grad``, with a random upstream
gradient g) with the derivative's formula written in NumPy.
"""

from __future__ import annotations

from .core import N, backward_snippet, sheet_row, spec

SHEET = "activation_functions"


_act = sheet_row(SHEET, ("torch", "notes", "inputs"), inputs=spec(x=N(4, 6, scale=2.0)))


def _grad(id, section, name, latex, numpy, call, notes="", inputs=None, **kw):
    """A derivative row: NumPy formula of g·φ'(x) against autograd through ``call``."""
    code = backward_snippet(call, ("x",))
    return _act(
        id,
        section,
        name,
        latex,
        numpy,
        code,
        code,
        notes,
        inputs or spec(x=N(4, 6, scale=2.0), g=N(4, 6)),
        grad=("x",),
        **kw,
    )


def _descent(backend: str, f: str) -> str:
    """Gradient descent on the activation ``f`` itself (``F.gelu``) from x0, with autograd: the
    snippet that finds its minimum value, in ``backend`` ("engine" or "torch")."""
    return (
        f"x = {backend}.tensor(x0, dtype={backend}.float64, requires_grad=True); opt = optim.SGD([x], lr=lr); "
        f"[(opt.zero_grad(), {f}(x).backward(), opt.step()) for _ in range(steps)]; {f}(x).item()"
    )


R = r"\operatorname{ReLU}"
ROWS = [
    # ---------------------------------------------------------------- piecewise linear
    _act(
        "act.relu",
        "Piecewise linear",
        "ReLU",
        R + r"(x) = \max(0, x)",
        "np.maximum(0, x)",
        "F.relu(x)",
        notes="The usual choice for hidden layers; outputs in [0, ∞).",
        keywords=("rectified",),
    ),
    _grad(
        "act.relu.grad",
        "Piecewise linear",
        "ReLU derivative",
        R + r"'(x) = \begin{cases}1 & x > 0\\ 0 & x \le 0\end{cases}",
        "g * (x > 0)",
        "F.relu(x)",
        notes="The gradient at exactly 0 is taken as 0, as in PyTorch.",
    ),
    _act(
        "act.leaky_relu",
        "Piecewise linear",
        "Leaky ReLU",
        r"\operatorname{LeakyReLU}(x) = \begin{cases}x & x > 0\\ \alpha x & x \le 0\end{cases}",
        "np.where(x > 0, x, a * x)",
        "F.leaky_relu(x, negative_slope=a)",
        inputs=spec(x=N(4, 6, scale=2.0), a=0.1),
        notes="Negative inputs still pass a gradient of α (0.01 by default).",
    ),
    _grad(
        "act.leaky_relu.grad",
        "Piecewise linear",
        "Leaky ReLU derivative",
        r"\operatorname{LeakyReLU}'(x) = \begin{cases}1 & x > 0\\ \alpha & x \le 0\end{cases}",
        "g * np.where(x > 0, 1, a)",
        "F.leaky_relu(x, negative_slope=a)",
        inputs=spec(x=N(4, 6, scale=2.0), g=N(4, 6), a=0.1),
    ),
    # ---------------------------------------------------------------- saturating
    _act(
        "act.sigmoid",
        "Saturating",
        "Sigmoid",
        r"\sigma(x) = \frac{1}{1 + e^{-x}}",
        "1 / (1 + np.exp(-x))",
        "F.sigmoid(x)",
        "torch.sigmoid(x)",
        notes="Maps a logit to (0, 1): a probability.",
        keywords=("logistic",),
    ),
    _grad(
        "act.sigmoid.grad",
        "Saturating",
        "Sigmoid derivative",
        r"\sigma'(x) = \sigma(x)\,(1 - \sigma(x))",
        "s = 1 / (1 + np.exp(-x)); g * s * (1 - s)",
        "F.sigmoid(x)",
        notes="At most 1/4 (at x = 0): stacked sigmoids shrink gradients.",
    ),
    _act(
        "act.tanh",
        "Saturating",
        "Tanh",
        r"\tanh(x) = \frac{e^{x} - e^{-x}}{e^{x} + e^{-x}}",
        "(np.exp(x) - np.exp(-x)) / (np.exp(x) + np.exp(-x))",
        "x.tanh()",
        "torch.tanh(x)",
        notes="Zero-centred; range (−1, 1); tanh(x) = 2σ(2x) − 1.",
        keywords=("hyperbolic",),
    ),
    _act(
        "act.tanh.exp2",
        "Saturating",
        "Tanh (one exponential)",
        r"\tanh(x) = \frac{e^{2x} - 1}{e^{2x} + 1}",
        "(np.exp(2 * x) - 1) / (np.exp(2 * x) + 1)",
        "F.tanh(x)",
        "torch.tanh(x)",
        notes="The same function with one exponential; overflows for x > 354, so libraries compute tanh another way.",
        keywords=("hyperbolic",),
    ),
    _grad(
        "act.tanh.grad",
        "Saturating",
        "Tanh derivative",
        r"\tanh'(x) = 1 - \tanh^2(x)",
        "g * (1 - np.tanh(x) ** 2)",
        "x.tanh()",
    ),
    # ---------------------------------------------------------------- smooth
    _act(
        "act.gelu",
        "Smooth (Transformers)",
        "GELU",
        r"\operatorname{GELU}(x) = x\,\Phi(x) = \tfrac{x}{2}\left(1 + \operatorname{erf}(x/\sqrt2)\right)",
        "0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2)))",
        "F.gelu(x)",
        notes="Φ is the standard normal CDF. BERT and GPT-2 computed the tanh approximation below.",
        keywords=("gaussian error linear unit",),
    ),
    _act(
        "act.gelu.tanh",
        "Smooth (Transformers)",
        "GELU (tanh approximation)",
        r"\operatorname{GELU}(x) \approx \tfrac{x}{2}\left[1 + \tanh\!\left(\sqrt{2/\pi}\,(x + 0.044715\,x^3)\right)\right]",
        "0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))",
        "F.gelu(x, approximate='tanh')",
        notes="Within 5e-4 of the exact GELU; GPT-2's choice.",
    ),
    _grad(
        "act.gelu.grad",
        "Smooth (Transformers)",
        "GELU derivative",
        r"\operatorname{GELU}'(x) = \Phi(x) + x\,\varphi(x)",
        "g * (0.5 * (1 + np.vectorize(math.erf)(x / np.sqrt(2))) + x * np.exp(-x ** 2 / 2) / np.sqrt(2 * np.pi))",
        "F.gelu(x)",
        notes="φ is the standard normal density.",
    ),
    _act(
        "act.gelu.min",
        "Smooth (Transformers)",
        "GELU minimum",
        r"\operatorname{GELU}'(x^*) = \Phi(x^*) + x^*\varphi(x^*) = 0 \Rightarrow x^* \approx -0.7518,\ "
        r"\operatorname{GELU}(x^*) \approx -0.1700",
        "x = x0; [x := x - lr * (0.5 * (1 + math.erf(x / math.sqrt(2))) + x * math.exp(-x * x / 2) / math.sqrt(2 * math.pi)) "
        "for _ in range(steps)]; 0.5 * x * (1 + math.erf(x / math.sqrt(2)))",
        _descent("engine", "F.gelu"),
        _descent("torch", "F.gelu"),
        inputs=spec(x0=-1.0, lr=0.5, steps=200),
        notes="Solved by gradient descent on GELU itself (NumPy with the derivative written out, the "
        "engine and PyTorch with autograd): so GELU's range is [−0.1700, ∞).",
        keywords=("range",),
    ),
    _act(
        "act.silu",
        "Smooth (Transformers)",
        "SiLU / Swish",
        r"\operatorname{SiLU}(x) = x\,\sigma(x) = \frac{x}{1 + e^{-x}}",
        "x / (1 + np.exp(-x))",
        "F.silu(x)",
        notes="x gated by its own sigmoid; dips below 0 before rising (LLaMA's MLP uses it).",
        keywords=("swish",),
    ),
    _grad(
        "act.silu.grad",
        "Smooth (Transformers)",
        "SiLU derivative",
        r"\operatorname{SiLU}'(x) = \sigma(x)\,\bigl(1 + x\,(1 - \sigma(x))\bigr)",
        "s = 1 / (1 + np.exp(-x)); g * s * (1 + x * (1 - s))",
        "F.silu(x)",
        keywords=("swish",),
    ),
    _act(
        "act.silu.min",
        "Smooth (Transformers)",
        "SiLU minimum",
        r"\operatorname{SiLU}'(x^*) = \sigma(x^*)\,\bigl(1 + x^*(1 - \sigma(x^*))\bigr) = 0 \Rightarrow "
        r"x^* \approx -1.2785,\ \operatorname{SiLU}(x^*) = x^* + 1 \approx -0.2785",
        "x = x0; [x := x - lr * (1 + x * (1 - 1 / (1 + math.exp(-x)))) / (1 + math.exp(-x)) for _ in range(steps)]; "
        "x / (1 + math.exp(-x))",
        _descent("engine", "F.silu"),
        _descent("torch", "F.silu"),
        inputs=spec(x0=-1.0, lr=2.0, steps=200),
        notes="Solved by gradient descent, as GELU's. At the minimum 1 − σ(x*) = −1/x*, so "
        "SiLU(x*) = x* + 1: SiLU's range is [−0.2785, ∞).",
        keywords=("range", "swish"),
    ),
    _act(
        "act.softplus",
        "Smooth (Transformers)",
        "Softplus",
        r"\operatorname{softplus}(x) = \ln(1 + e^{x})",
        "np.log1p(np.exp(x))",
        "F.softplus(x)",
        notes="A smooth ReLU; its derivative is σ(x).",
    ),
    _act(
        "act.elu",
        "Smooth (Transformers)",
        "ELU",
        r"\operatorname{ELU}(x) = \begin{cases}x & x > 0\\ \alpha(e^{x} - 1) & x \le 0\end{cases}",
        "np.where(x > 0, x, a * (np.exp(x) - 1))",
        "F.elu(x, alpha=a)",
        inputs=spec(x=N(4, 6, scale=2.0), a=1.0),
    ),
    _act(
        "act.swiglu",
        "Smooth (Transformers)",
        "SwiGLU",
        r"\operatorname{SwiGLU}(X) = \operatorname{SiLU}(X W_{gate}^\top) \odot (X W_{up}^\top)",
        "s = X @ Wg.T; s / (1 + np.exp(-s)) * (X @ Wu.T)",
        "F.swiglu(X, Wg.T, Wu.T)",
        "F.silu(F.linear(X, Wg)) * F.linear(X, Wu)",
        inputs=spec(X=N(4, 6), Wg=N(8, 6), Wu=N(8, 6)),
        notes="A SiLU gate times a linear branch: the MLP block of LLaMA; any real output. W_gate and "
        "W_up are stored (d_hidden, d_in) like `nn.Linear`'s weight; `engine.functional.swiglu` "
        "multiplies by its arguments, so it takes their transposes.",
        keywords=("gated", "glu"),
    ),
    # ---------------------------------------------------------------- output functions
    _act(
        "act.softmax",
        "Output functions",
        "Softmax",
        r"\operatorname{softmax}(z)_i = \frac{e^{z_i - \max_j z_j}}{\sum_k e^{z_k - \max_j z_j}}",
        "e = np.exp(z - z.max(-1, keepdims=True)); e / e.sum(-1, keepdims=True)",
        "F.softmax(z, dim=-1)",
        inputs=spec(z=N(4, 6, scale=2.0)),
        notes="Subtracting the max changes nothing but keeps e^z finite.",
    ),
    _act(
        "act.softmax.shift",
        "Output functions",
        "Softmax ignores a shift (z + 1000)",
        r"\operatorname{softmax}(z + c) = \operatorname{softmax}(z)",
        "e = np.exp(z - z.max(-1, keepdims=True)); e / e.sum(-1, keepdims=True)",
        "F.softmax(z + 1000, dim=-1)",
        inputs=spec(z=N(4, 6, scale=2.0)),
        notes="Why the stable form works: a naive e^{1000} would overflow.",
        keywords=("stable", "overflow"),
    ),
    _act(
        "act.softmax.temperature",
        "Output functions",
        "Softmax with temperature",
        r"\operatorname{softmax}(z/\tau)_i = \frac{e^{z_i/\tau}}{\sum_j e^{z_j/\tau}}",
        "e = np.exp((z - z.max(-1, keepdims=True)) / tau); e / e.sum(-1, keepdims=True)",
        "F.softmax(z / tau, dim=-1)",
        inputs=spec(z=N(4, 6, scale=2.0), tau=0.5),
        notes="τ < 1 sharpens, τ > 1 flattens towards uniform.",
    ),
    _act(
        "act.log_softmax",
        "Output functions",
        "Log-softmax",
        r"\log\operatorname{softmax}(z)_i = z_i - \log\sum_j e^{z_j}",
        "m = z.max(-1, keepdims=True); z - m - np.log(np.exp(z - m).sum(-1, keepdims=True))",
        "F.log_softmax(z, dim=-1)",
        inputs=spec(z=N(4, 6, scale=2.0)),
        notes="The log-sum-exp form stays finite where log(softmax(z)) gives −∞.",
    ),
]

"""Rows of the derivatives sheet: every primitive's forward function and its gradient.

A gradient row is a vector-Jacobian product: given the upstream gradient g = ∂L/∂r (random in the
tests), the NumPy snippet is the gradient formula and the engine and PyTorch snippets are autograd
through the forward row's own code (``r.backward(g)`` then ``.grad``, built by
:func:`~.core.gradient_row`). Two formulas of the seed list are corrected here: the gradient
of a/b with respect to b is −a/b², and the gradient of log_base(x) with respect to the base is
−ln(x)/(base·ln²(base)).
"""

from __future__ import annotations

from .core import N, Probs, U, gradient_row, sheet_row, spec, with_gradient

SHEET = "derivatives"


_row = sheet_row(SHEET, inputs=None)


EW = "Element-wise operations"
CX = "Matrix multiplication and convolution"
ACT = "Activation and cost functions"
RULES = "Rules and checks"
LAYERS = "Normalisation and residual layers"

AB = spec(a=N(3, 4), b=N(3, 4), g=N(3, 4))
AB_POS = spec(a=U(0.5, 2.0, 3, 4), b=U(0.5, 2.0, 3, 4), g=N(3, 4))
T = spec(t=N(3, 4), g=N(3, 4))
T_PROBS = spec(t=N(3, 4), y=Probs(3, 4))  # logits and one distribution per row
CONV = spec(x=N(2, 3, 7, 6), w=N(4, 3, 3, 2), g=N(2, 4, 5, 5))
WIN = "sliding_window_view"

# its two gradients sit either side of the transposed convolution
CONV2D = _row(
    "deriv.conv2d",
    CX,
    "Convolution (cross-correlation)",
    r"r[n, o, i, j] = \sum_{c, u, v} x[n, c, i + u, j + v]\; w[o, c, u, v]",
    f"np.einsum('nchwuv,ocuv->nohw', {WIN}(x, w.shape[2:], axis=(2, 3)), w)",
    "F.conv2d(x, w)",
    inputs=CONV,
    notes=f"Deep-learning 'convolution' does not flip the kernel; {WIN} is "
    "numpy.lib.stride_tricks.sliding_window_view.",
    keywords=("conv", "im2col", "correlation"),
)
CONV2D_GRAD_INPUT = (
    "kh, kw = w.shape[2:]; gp = np.pad(g, ((0, 0), (0, 0), (kh - 1, kh - 1), (kw - 1, kw - 1))); "
    f"np.einsum('nohwuv,ocuv->nchw', {WIN}(gp, (kh, kw), axis=(2, 3)), w[:, :, ::-1, ::-1])"
)

ROWS = [
    # ---------------------------------------------------------------- element-wise
    *with_gradient(
        _row("deriv.add", EW, "Addition", r"r = a + b", "a + b", "a + b", inputs=AB),
        "Addition gradient",
        r"\frac{\partial r}{\partial a} = 1,\quad \frac{\partial r}{\partial b} = 1",
        "(g, g)",
        ("a", "b"),
    ),
    _row(
        "deriv.broadcast.grad",
        EW,
        "Broadcast gradient (sum over repeated axes)",
        r"r_{ij} = a_{ij} + b_j \Rightarrow \nabla b_j = \textstyle\sum_i \nabla r_{ij}",
        "g.sum(0)",
        "r = a + b; r.backward(g); b.grad",
        inputs=spec(a=N(3, 4), b=N(4), g=N(3, 4)),
        grad=("a", "b"),
        notes="A broadcast input's gradient is summed back to its own shape.",
        keywords=("unbroadcast", "bias"),
    ),
    *with_gradient(
        _row("deriv.sub", EW, "Subtraction", r"r = a - b", "a - b", "a - b", inputs=AB),
        "Subtraction gradient",
        r"\frac{\partial r}{\partial a} = 1,\quad \frac{\partial r}{\partial b} = -1",
        "(g, -g)",
        ("a", "b"),
    ),
    *with_gradient(
        _row("deriv.mul", EW, "Multiplication", r"r = a \cdot b", "a * b", "a * b", inputs=AB),
        "Multiplication gradient",
        r"\frac{\partial r}{\partial a} = b,\quad \frac{\partial r}{\partial b} = a",
        "(g * b, g * a)",
        ("a", "b"),
    ),
    *with_gradient(
        _row("deriv.div", EW, "Division", r"r = \frac{a}{b}", "a / b", "a / b", inputs=AB_POS),
        "Division gradient",
        r"\frac{\partial r}{\partial a} = \frac{1}{b},\quad \frac{\partial r}{\partial b} = -\frac{a}{b^2}",
        "(g / b, -g * a / b ** 2)",
        ("a", "b"),
        notes="Note the minus sign: a larger b makes a/b smaller.",
        keywords=("quotient",),
    ),
    *with_gradient(
        _row(
            "deriv.pow",
            EW,
            "Power",
            r"r = a^{e}",
            "a ** e",
            "a ** e",
            inputs=spec(a=U(0.5, 2.0, 3, 4), e=U(-1.5, 2.5, 3, 4), g=N(3, 4)),
            keywords=("exponentiation",),
        ),
        "Power gradient",
        r"\frac{\partial r}{\partial a} = e\,a^{e - 1},\quad \frac{\partial r}{\partial e} = a^{e}\ln a",
        "(g * e * a ** (e - 1), g * a ** e * np.log(a))",
        ("a", "e"),
        notes="The exponent's gradient needs a > 0 (ln a).",
        keywords=("exponentiation",),
    ),
    *with_gradient(
        _row("deriv.exp", EW, "Exponential", r"r = e^{t}", "np.exp(t)", "t.exp()", inputs=T),
        "Exponential gradient",
        r"\frac{\partial r}{\partial t} = e^{t}",
        "g * np.exp(t)",
        ("t",),
    ),
    *with_gradient(
        _row(
            "deriv.log_base",
            EW,
            "Logarithm with a base",
            r"r = \log_{\beta}(x) = \frac{\ln x}{\ln \beta}",
            "np.log(x) / np.log(base)",
            "engine.log(x, base)",
            "torch.log(x) / torch.log(base)",
            inputs=spec(x=U(0.5, 3.0, 3, 4), base=U(1.5, 4.0, 3, 4), g=N(3, 4)),
        ),
        "Logarithm-with-base gradient",
        r"\frac{\partial r}{\partial x} = \frac{1}{x \ln\beta},\quad \frac{\partial r}{\partial \beta} = -\frac{\ln x}{\beta\,\ln^2\beta}",
        "(g / (x * np.log(base)), -g * np.log(x) / (base * np.log(base) ** 2))",
        ("x", "base"),
        notes="Note the minus sign: a larger base makes the logarithm smaller (for x > 1).",
    ),
    *with_gradient(
        _row(
            "deriv.ln", EW, "Natural logarithm", r"r = \ln t", "np.log(t)", "t.log()", inputs=spec(t=U(0.2, 3.0, 3, 4))
        ),
        "Natural-logarithm gradient",
        r"\frac{\partial r}{\partial t} = \frac{1}{t}",
        "g / t",
        ("t",),
        inputs=spec(t=U(0.2, 3.0, 3, 4), g=N(3, 4)),
    ),
    *with_gradient(
        _row(
            "deriv.clip",
            EW,
            "Clip",
            r"r = \min(\max(t, lo), hi)",
            "np.clip(t, lo, hi)",
            "t.clamp(lo, hi)",
            inputs=spec(t=N(3, 4, scale=2.0), lo=-1.0, hi=1.5),
            keywords=("clamp",),
        ),
        "Clip gradient",
        r"\frac{\partial r}{\partial t} = \begin{cases}1 & lo \le t \le hi\\ 0 & \text{otherwise}\end{cases}",
        "g * ((t >= lo) & (t <= hi))",
        ("t",),
        inputs=spec(t=N(3, 4, scale=2.0), g=N(3, 4), lo=-1.0, hi=1.5),
        keywords=("clamp",),
    ),
    # ---------------------------------------------------------------- matmul and convolution
    *with_gradient(
        _row(
            "deriv.matmul",
            CX,
            "Matrix multiplication",
            r"r = a\,b",
            "a @ b",
            "a @ b",
            inputs=spec(a=N(3, 4), b=N(4, 5)),
        ),
        "Matrix-multiplication gradient",
        r"\nabla a = \nabla r\, b^{\top},\quad \nabla b = a^{\top} \nabla r",
        "(g @ b.T, a.T @ g)",
        ("a", "b"),
        inputs=spec(a=N(3, 4), b=N(4, 5), g=N(3, 5)),
        notes="Shapes decide the order: ∇a has a's shape (3×5 · 5×4).",
    ),
    CONV2D,
    gradient_row(
        CONV2D,
        "Convolution gradient w.r.t. the input",
        r"\nabla x = \nabla r \star_{\text{full}} \operatorname{rot180}(w)",
        CONV2D_GRAD_INPUT,
        ("x",),
        suffix=".grad_input",
        grad=("x", "w"),
        notes="A full correlation of the upstream gradient with the kernel rotated by 180°.",
        keywords=("conv", "rotated kernel"),
    ),
    _row(
        "deriv.conv2d.grad_input.transposed",
        CX,
        "…which is a transposed convolution",
        r"\nabla x = \operatorname{conv\_transpose2d}(\nabla r, w)",
        CONV2D_GRAD_INPUT,
        "F.conv_transpose2d(g, w)",
        inputs=CONV,
        notes="Why a transposed convolution is also called the gradient of a convolution.",
        keywords=("conv", "deconvolution"),
    ),
    gradient_row(
        CONV2D,
        "Convolution gradient w.r.t. the kernel",
        r"\nabla w[o, c, u, v] = \sum_{n, i, j} x[n, c, i + u, j + v]\; \nabla r[n, o, i, j]",
        f"np.einsum('nchwuv,nohw->ocuv', {WIN}(x, w.shape[2:], axis=(2, 3)), g)",
        ("w",),
        suffix=".grad_weight",
        grad=("x", "w"),
        notes="A correlation of the input with the upstream gradient.",
        keywords=("conv", "kernel"),
    ),
    # ---------------------------------------------------------------- normalisation and residual layers
    _row(
        "deriv.batchnorm.grad",
        LAYERS,
        "Batch normalisation backward",
        r"\nabla x_i = \frac{\gamma}{\sigma_B}\Bigl(g_i - \frac1N \sum_j g_j - \hat x_i\, \frac1N \sum_j g_j \hat x_j\Bigr),\quad "
        r"\nabla\gamma = \sum_i g_i \hat x_i,\quad \nabla\beta = \sum_i g_i",
        "s = np.sqrt(x.var(0) + eps); xh = (x - x.mean(0)) / s; (gamma / s * (g - g.mean(0) - xh * (g * xh).mean(0)), (g * xh).sum(0), g.sum(0))",
        "r = F.batch_norm(x, None, None, gamma, beta, training=True, eps=eps); r.backward(g); (x.grad, gamma.grad, beta.grad)",
        inputs=spec(x=lambda rng: 3 * rng.standard_normal((16, 5)) + 1, gamma=N(5), beta=N(5), g=N(16, 5), eps=1e-5),
        grad=("x", "gamma", "beta"),
        notes="σ_B = √(σ²_B + ε). The batch mean and variance depend on every sample, so each input's "
        "gradient loses the batch mean of g and g's projection on x̂.",
        keywords=("batchnorm", "bn", "backward"),
    ),
    _row(
        "deriv.residual.grad",
        LAYERS,
        "Residual connection backward",
        r"\mathbf y = \mathbf x + \operatorname{ReLU}(\mathbf z),\ \mathbf z = \mathbf x W^\top + \mathbf b:\quad "
        r"\nabla \mathbf x = \mathbf g + \left(\mathbf g \odot \mathbf 1[\mathbf z > 0]\right) W",
        "g + (g * (x @ W.T + b > 0)) @ W",
        "r = x + F.relu(F.linear(x, W, b)); r.backward(g); x.grad",
        inputs=spec(x=N(4, 5), W=N(5, 5), b=N(5), g=N(4, 5)),
        grad=("x",),
        notes="The identity path hands g to x unchanged, whatever the branch does: a deep stack of "
        "residual blocks cannot make the gradient vanish through its skip connections.",
        keywords=("resnet", "skip connection", "vanishing gradient"),
    ),
    # ---------------------------------------------------------------- activations and costs
    _row(
        "deriv.identity",
        ACT,
        "Linear (identity) activation",
        r"r = t,\quad \frac{\partial r}{\partial t} = 1",
        "g * np.ones_like(t)",
        "r = 1 * t; r.backward(g); t.grad",
        inputs=T,
        grad=("t",),
        notes="A layer with no activation: stacked linear layers stay one linear map.",
    ),
    _row(
        "deriv.softmax.grad",
        ACT,
        "Softmax gradient (vector-Jacobian product)",
        r"\nabla t_i = r_i\Bigl(\nabla r_i - \sum_j \nabla r_j\, r_j\Bigr)",
        "r = np.exp(t - t.max(-1, keepdims=True)); r /= r.sum(-1, keepdims=True); r * (g - (g * r).sum(-1, keepdims=True))",
        "r = F.softmax(t, dim=-1); r.backward(g); t.grad",
        inputs=T,
        grad=("t",),
        notes="No K×K Jacobian is built: O(K) per row.",
        keywords=("jacobian", "jvp", "vjp"),
    ),
    *with_gradient(
        _row(
            "deriv.mse",
            ACT,
            "Squared error (per element)",
            r"L = (t - y)^2",
            "(t - y) ** 2",
            "F.mse_loss(t, y, reduction='none')",
            inputs=spec(t=N(3, 4), y=N(3, 4)),
        ),
        "Squared-error gradient",
        r"\frac{\partial L}{\partial t} = 2\,(t - y)",
        "2 * (t - y) * g",
        ("t",),
        out="L",
        inputs=spec(t=N(3, 4), y=N(3, 4), g=N(3, 4)),
    ),
    *with_gradient(
        _row(
            "deriv.pseudo_huber",
            ACT,
            "Pseudo-Huber (per element)",
            r"L = \delta^2\left(\sqrt{1 + \left(\tfrac{y - t}{\delta}\right)^2} - 1\right)",
            "d ** 2 * (np.sqrt(1 + ((y - t) / d) ** 2) - 1)",
            "F.pseudo_huber_loss(t, y, reduction='none', delta=d)",
            "d ** 2 * (torch.sqrt(1 + ((y - t) / d) ** 2) - 1)",
            inputs=spec(t=N(3, 4, scale=2.0), y=N(3, 4), d=1.5),
            keywords=("huber",),
        ),
        "Pseudo-Huber gradient",
        r"\frac{\partial L}{\partial t} = -\frac{y - t}{\sqrt{1 + \left(\frac{y - t}{\delta}\right)^2}}",
        "-g * (y - t) / np.sqrt(1 + ((y - t) / d) ** 2)",
        ("t",),
        out="L",
        inputs=spec(t=N(3, 4, scale=2.0), y=N(3, 4), d=1.5, g=N(3, 4)),
        notes="Bounded by δ in size, like Huber's clip.",
        keywords=("huber",),
    ),
    *with_gradient(
        _row(
            "deriv.softmax_ce",
            ACT,
            "Softmax cross-entropy (summed)",
            r"L = -\sum_i y_i \ln p_i,\quad p = \operatorname{softmax}(t)",
            "m = t.max(-1, keepdims=True); -(y * (t - m - np.log(np.exp(t - m).sum(-1, keepdims=True)))).sum()",
            "F.cross_entropy(t, y, reduction='sum')",
            inputs=T_PROBS,
            notes="y holds one probability distribution per row (one-hot or soft).",
            keywords=("cross entropy", "log loss"),
        ),
        "Softmax cross-entropy gradient",
        r"\frac{\partial L}{\partial t_i} = p_i - y_i",
        "p = np.exp(t - t.max(-1, keepdims=True)); p / p.sum(-1, keepdims=True) - y",
        ("t",),
        out="L",
        upstream="",
        notes="Fusing softmax and log-loss gives this simple, stable gradient.",
        keywords=("cross entropy",),
    ),
    # ---------------------------------------------------------------- rules
    _row(
        "deriv.chain_rule",
        RULES,
        "Chain rule",
        r"\frac{\partial L}{\partial x} = \frac{\partial L}{\partial y}\,\frac{\partial y}{\partial x}:\ \ \frac{d}{dx}\sin(x^2) = \cos(x^2)\cdot 2x",
        "g * np.cos(x ** 2) * 2 * x",
        "r = (x ** 2).sin(); r.backward(g); x.grad",
        inputs=spec(x=N(3, 4), g=N(3, 4)),
        grad=("x",),
        notes="Backpropagation applies this rule node by node, from the loss back to the inputs.",
        keywords=("backpropagation",),
    ),
    _row(
        "deriv.grad_check",
        RULES,
        "Gradient check (central difference)",
        r"f'(x) \approx \frac{f(x + h) - f(x - h)}{2h},\quad h \approx 10^{-5}",
        "h = 1e-5; ((x + h) ** 3 - (x - h) ** 3) / (2 * h)",
        "(x ** 3).sum().backward(); x.grad",
        inputs=spec(x=N(3, 4)),
        grad=("x",),
        rtol=1e-7,
        atol=1e-8,
        notes="Error O(h²); float64 only. engine.gradcheck(fn, inputs) does it for every element.",
        keywords=("finite difference", "numerical gradient", "gradcheck"),
    ),
]

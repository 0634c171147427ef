"""The hub sheet: its own rows, its sections (which rows, which notebooks and sheets each links
to), and the minimal training loop in NumPy, engine and PyTorch.

The hub shows its own rows (neuron, dense layer, backpropagation of a dense layer, initialisation,
regularisation, normalisation, training tips, diffusion, VAE) next to the key rows of the focused
sheets, section by section (:data:`HUB_SECTIONS`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .core import Ints, N, U, sheet_row, spec

SHEET = "deep_learning"

# ----------------------------------------------------------------------------- rows


_row = sheet_row(SHEET, inputs=None)


NEURON = "Neuron and dense layer"
BACKPROP = "Backpropagation"
INIT = "Initialisation and regularisation"
NORM = "Normalisation and residual connections"
BLOCK = "The Transformer block"
TIPS = "Training tips"
DIFF = "Diffusion: forward process, loss and samplers"
VAE = "VAE: ELBO, KL and the IWAE bound"

DENSE = spec(X=N(4, 5), W=N(3, 5), b=N(3))  # X: (batch, n_in), W: (n_out, n_in) as nn.Linear stores it
NORM_IN = spec(x=lambda rng: 3 * rng.standard_normal((16, 5)) + 1, gamma=N(5), beta=N(5), eps=1e-5)
LATENT = spec(mu=N(4, 3), logvar=N(4, 3, scale=0.5), eps=N(4, 3))
KL_NUMPY = "-0.5 * np.sum(1 + logvar - mu ** 2 - np.exp(logvar), axis=-1)"
KL_TORCH = "-0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=-1)"
LINEAR_ALPHA_BARS = "np.cumprod(1 - np.linspace(b0, b1, T))"
# DDPM's schedule (T = 1000, β from 1e-4 to 0.02) as the diffusion rows' NumPy and PyTorch spell it.
DDPM_BETAS = {
    "numpy": "b = np.linspace(1e-4, 0.02, 1000); ab = np.cumprod(1 - b)",
    "torch": "b = torch.linspace(1e-4, 0.02, 1000, dtype=torch.float64); ab = torch.cumprod(1 - b, 0)",
}
DDPM_SCHEDULE = "sch = diffusion.linear_beta_schedule(1000)"
# One pre-norm block: causal single-head self-attention, then a ReLU MLP, each on a LayerNorm
# (no affine parameters) of the residual stream x [L, d].
BLOCK_NUMPY = (
    "ln = lambda h: (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5); h = ln(x); "
    "s = (h @ Wq.T) @ (h @ Wk.T).T / np.sqrt(Wq.shape[0]) + np.triu(np.full((len(x), len(x)), -np.inf), 1); "
    "a = np.exp(s - s.max(-1, keepdims=True)); a = a / a.sum(-1, keepdims=True); "
    "x = x + (a @ (h @ Wv.T)) @ Wo.T; x + np.maximum(ln(x) @ W1.T, 0) @ W2.T"
)
BLOCK_ENGINE = (
    "h = F.layer_norm(x, (x.shape[-1],)); "
    "x = x + F.linear(F.scaled_dot_product_attention(F.linear(h, Wq), F.linear(h, Wk), F.linear(h, Wv), is_causal=True), Wo); "
    "x + F.linear(F.relu(F.linear(F.layer_norm(x, (x.shape[-1],)), W1)), W2)"
)


def _block_inputs(rng, L=6, d=8, hidden=16):
    """A residual stream x [L, d] and the block's weights, stored (out, in) as nn.Linear does."""
    weights = {name: rng.standard_normal((d, d)) / np.sqrt(d) for name in ("Wq", "Wk", "Wv", "Wo")}
    return {
        "x": rng.standard_normal((L, d)),
        **weights,
        "W1": rng.standard_normal((hidden, d)) / np.sqrt(d),
        "W2": rng.standard_normal((d, hidden)) / np.sqrt(hidden),
    }


def _ddim_steps(rng):
    """x_t and ε̂ for 8 two-dimensional points, a step t and an earlier step s < t to jump to."""
    t = int(rng.integers(1, 1000))
    return {"xt": rng.standard_normal((8, 2)), "eps": rng.standard_normal((8, 2)), "t": t, "s": int(rng.integers(0, t))}


ROWS = [
    # ---------------------------------------------------------------- neuron and dense layer
    _row(
        "dl.neuron",
        NEURON,
        "Neuron",
        r"z = \mathbf w^\top \mathbf x + b,\quad a = \phi(z)",
        "np.tanh(w @ x + b)",
        "(w @ x + b).tanh()",
        "torch.tanh(w @ x + b)",
        spec(w=N(5), x=N(5), b=0.3),
        notes="Bias plus the inputs weighted by w, passed through φ (tanh here).",
        keywords=("perceptron", "weighted sum"),
    ),
    _row(
        "dl.dense",
        NEURON,
        "Dense layer",
        r"Z = X W^\top + \mathbf b,\quad X \in \mathbb R^{B \times n_{in}},\ W \in \mathbb R^{n_{out} \times n_{in}}",
        "X @ W.T + b",
        "F.linear(X, W, b)",
        inputs=DENSE,
        notes="The course's one convention, PyTorch's: `nn.Linear` stores W as (n_out, n_in), so row j "
        "holds output j's weights (the textbook z = W x for one column vector) and a batch of "
        "row vectors is X Wᵀ.",
        keywords=("linear", "fully connected", "weight convention"),
    ),
    _row(
        "dl.dense.params",
        NEURON,
        "Dense layer parameters, counted on the layer",
        r"\#\text{params} = n_{in}\,n_{out} + n_{out}",
        "n_in * n_out + n_out",
        "sum(p.numel() for p in nn.Linear(n_in, n_out).parameters())",
        inputs=spec(n_in=lambda rng: int(rng.integers(1, 500)), n_out=lambda rng: int(rng.integers(1, 500))),
        notes="n_in·n_out weights and n_out biases.",
        keywords=("parameter count",),
    ),
    _row(
        "dl.collapse",
        NEURON,
        "Linear layers without activation collapse",
        r"(X W_1^\top) W_2^\top = X\,(W_2 W_1)^\top",
        "X @ (W2 @ W1).T",
        "F.linear(F.linear(X, W1), W2)",
        inputs=spec(X=N(4, 5), W1=N(6, 5), W2=N(3, 6)),
        notes="Two dense layers with no activation are one dense layer of weight W₂W₁: depth adds "
        "nothing without a non-linearity.",
    ),
    # ---------------------------------------------------------------- backpropagation
    _row(
        "dl.backprop.outer",
        BACKPROP,
        "Weight and bias gradients (one sample)",
        r"\mathbf z = \mathbf a W^\top + \mathbf b:\ \ \frac{\partial L}{\partial W} = \boldsymbol\delta^\top \mathbf a,\quad "
        r"\frac{\partial L}{\partial \mathbf b} = \boldsymbol\delta",
        "(np.outer(delta, a), delta)",
        "z = F.linear(a, W, b); z.backward(delta); (W.grad, b.grad)",
        inputs=spec(W=N(3, 5), a=N(5), b=N(3), delta=N(3)),
        grad=("W", "b"),
        notes="δ = ∂L/∂z, the error signal at the layer's output (a row vector); δᵀa is their outer "
        "product, of W's shape (n_out, n_in).",
        keywords=("delta",),
    ),
    _row(
        "dl.backprop.delta",
        BACKPROP,
        "Error signal to the previous layer",
        r"\boldsymbol\delta^{(l-1)} = \left(\boldsymbol\delta^{(l)} W^{(l)}\right) \odot \phi'(\mathbf z^{(l-1)})",
        "(delta @ W) * (z > 0)",
        "a = F.relu(z); r = F.linear(a, W); r.backward(delta); z.grad",
        inputs=spec(z=N(4, 5), W=N(3, 5), delta=N(4, 3)),
        grad=("z", "W"),
        notes="Here φ = ReLU and δ holds one row per sample: the forward pass multiplies by Wᵀ, so "
        "the error travels back through W.",
        keywords=("delta",),
    ),
    _row(
        "dl.backprop.dense",
        BACKPROP,
        "Dense layer backward (batch)",
        r"Z = X W^\top + \mathbf b:\ \ dW = dZ^\top X,\ \ d\mathbf b = \textstyle\sum_n dZ_n,\ \ dX = dZ\, W",
        "(dZ.T @ X, dZ.sum(0), dZ @ W)",
        "Z = X @ W.T + b; Z.backward(dZ); (W.grad, b.grad, X.grad)",
        inputs=spec(X=N(6, 4), W=N(3, 4), b=N(3), dZ=N(6, 3)),
        grad=("X", "W", "b"),
        notes="db sums over the batch because b is broadcast to every row.",
        keywords=("chain rule",),
    ),
    # ---------------------------------------------------------------- initialisation and regularisation
    _row(
        "dl.init.he",
        INIT,
        "He (Kaiming) initialisation",
        r"W \sim \mathcal N\!\left(0, \frac{2}{n_{in}}\right)",
        "2 / n_in",
        "nn.init.kaiming_normal_(engine.zeros(n_out, n_in)).var().item()",
        "nn.init.kaiming_normal_(torch.zeros(n_out, n_in)).var().item()",
        spec(n_in=400, n_out=1000),
        rtol=0.03,
        notes="Keeps the activations' variance constant through ReLU layers (the sample variance "
        "of 400 000 draws is compared).",
        keywords=("kaiming", "init", "variance"),
    ),
    _row(
        "dl.init.xavier",
        INIT,
        "Xavier (Glorot) initialisation",
        r"\operatorname{Var}(W) = \frac{2}{n_{in} + n_{out}}",
        "2 / (n_in + n_out)",
        "nn.init.xavier_normal_(engine.zeros(n_out, n_in)).var().item()",
        "nn.init.xavier_normal_(torch.zeros(n_out, n_in)).var().item()",
        spec(n_in=400, n_out=1000),
        rtol=0.03,
        notes="Derived for units that are linear with zero mean around 0, as tanh is; sigmoid, whose output has mean ½, breaks that assumption.",
        keywords=("glorot", "init", "variance"),
    ),
    _row(
        "dl.l2",
        INIT,
        "L2 penalty gradient",
        r"\mathcal L_{total} = \mathcal L_{data} + \tfrac{\lambda}{2} \lVert W\rVert_2^2 \Rightarrow \nabla_W = \nabla_W\mathcal L_{data} + \lambda W",
        "lam * W",
        "(lam / 2 * (W ** 2).sum()).backward(); W.grad",
        inputs=spec(W=N(3, 4), lam=0.01),
        grad=("W",),
        notes="Pulls every weight towards 0 in proportion to its size. With the ½, λ is "
        "the weight_decay of PyTorch's optimizers (the convention of every row here).",
        keywords=("weight decay", "ridge", "regularization"),
    ),
    _row(
        "dl.dropout",
        INIT,
        "Inverted dropout",
        r"\tilde{\mathbf h} = \frac{\mathbf m \odot \mathbf h}{1 - q},\quad m_j \sim \operatorname{Bernoulli}(1 - q)",
        "m = rng.random(h.shape) >= q; (m * h / (1 - q)).mean()",
        "F.dropout(h, p=q).mean()",
        inputs=spec(h=U(1.0, 2.0, 200_000), q=0.3),
        rtol=0.01,
        notes="Scaling by 1/(1 − q) keeps the expectation, so evaluation needs no change "
        "(random masks: the means are compared).",
        keywords=("regularization",),
    ),
    _row(
        "dl.dropout.scale",
        INIT,
        "Dropout scale of the kept units",
        r"\tilde h_j \in \left\{0, \frac{h_j}{1 - q}\right\}",
        "1 / (1 - q)",
        "F.dropout(engine.ones(1000), p=q).max()",
        "F.dropout(torch.ones(1000), p=q).max()",
        inputs=spec(q=0.3),
        rtol=1e-6,
        keywords=("regularization",),
    ),
    # ---------------------------------------------------------------- normalisation
    _row(
        "dl.batchnorm",
        NORM,
        "Batch normalisation",
        r"\hat x_i = \frac{x_i - \mu_B}{\sqrt{\sigma_B^2 + \varepsilon}},\quad y_i = \gamma \hat x_i + \beta",
        "(x - x.mean(0)) / np.sqrt(x.var(0) + eps) * gamma + beta",
        "F.batch_norm(x, None, None, gamma, beta, training=True, eps=eps)",
        inputs=NORM_IN,
        notes="μ_B, σ²_B over the batch, per feature (biased variance); evaluation uses running averages instead.",
        keywords=("batchnorm", "bn"),
    ),
    _row(
        "dl.layernorm",
        NORM,
        "Layer normalisation",
        r"\hat x = \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}},\ \mu, \sigma^2 \text{ over the features of one sample}",
        "(x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma + beta",
        "F.layer_norm(x, (5,), gamma, beta, eps=eps)",
        inputs=NORM_IN,
        notes="Independent of the batch: the same in training and evaluation; used in Transformers.",
        keywords=("layernorm", "ln"),
    ),
    _row(
        "dl.rmsnorm",
        NORM,
        "RMS normalisation",
        r"\operatorname{RMSNorm}(x) = \frac{x}{\sqrt{\frac1d \sum_j x_j^2 + \varepsilon}} \odot \gamma",
        "x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * gamma",
        "x / ((x ** 2).mean(-1, keepdim=True) + eps).sqrt() * gamma",
        "F.rms_norm(x, (5,), gamma, eps=eps)",
        inputs=NORM_IN,
        notes="LayerNorm without the mean subtraction and without β (Zhang & Sennrich, "
        "2019): one statistic fewer; the norm of LLaMA and most recent LLMs.",
        keywords=("rmsnorm", "llama"),
    ),
    _row(
        "dl.residual",
        NORM,
        "Residual connection",
        r"\mathbf y = \mathbf x + F(\mathbf x),\quad F(\mathbf x) = \operatorname{ReLU}(\mathbf x W^\top + \mathbf b)",
        "x + np.maximum(x @ W.T + b, 0)",
        "x + F.relu(F.linear(x, W, b))",
        inputs=spec(x=N(4, 5), W=N(5, 5), b=N(5)),
        notes="The layer learns a change to its input (He et al., 2016); F's output must keep x's "
        "shape. Its gradient is on the derivatives sheet.",
        keywords=("resnet", "skip connection"),
    ),
    # ---------------------------------------------------------------- the Transformer block
    _row(
        "dl.transformer_block",
        BLOCK,
        "Transformer block (pre-norm)",
        r"\mathbf x' = \mathbf x + \operatorname{Attn}\!\left(\operatorname{LN}_1(\mathbf x)\right),\quad "
        r"\mathbf y = \mathbf x' + \operatorname{MLP}\!\left(\operatorname{LN}_2(\mathbf x')\right)",
        BLOCK_NUMPY,
        BLOCK_ENGINE,
        inputs=_block_inputs,
        notes="Each sub-layer reads a normalised copy of the residual stream and adds its output back "
        "(GPT-2 and later; the 2017 Transformer normalised after the sum). Here one causal head, "
        "Attn(h) = softmax(h W_qᵀ (h W_kᵀ)ᵀ/√d + mask) h W_vᵀ W_oᵀ, and MLP(h) = ReLU(h W₁ᵀ) W₂ᵀ.",
        keywords=("transformer", "pre-norm", "residual stream", "gpt"),
    ),
    # ---------------------------------------------------------------- training tips
    _row(
        "dl.tips.normalise",
        TIPS,
        "Normalise the inputs",
        r"x' = \frac{x - \mu_{train}}{\sigma_{train}}",
        "(X - X.mean(0)) / X.std(0)",
        "(X - X.mean(0)) / X.std(0, correction=0)",
        inputs=spec(X=lambda rng: rng.normal([5.0, -2.0, 100.0], [1.0, 0.1, 30.0], (50, 3))),
        notes="Use the training set's statistics for every split. NumPy's std divides by n, "
        "PyTorch's by n − 1 unless correction=0.",
        keywords=("standardise", "scale"),
    ),
    _row(
        "dl.tips.initial_loss",
        TIPS,
        "Initial loss ≈ ln K",
        r"L_0 = -\ln \tfrac1K = \ln K",
        "np.log(K)",
        "F.cross_entropy(engine.zeros(len(y), K), y)",
        "F.cross_entropy(torch.zeros(len(y), K), y)",
        inputs=spec(K=10, y=Ints(10, 32)),
        rtol=1e-6,
        notes="Uniform predictions over K balanced classes; far above means a bug or a bad init.",
        keywords=("sanity check", "cross entropy"),
    ),
    _row(
        "dl.tips.eval",
        TIPS,
        "train() / eval(): dropout off at evaluation",
        r"\text{eval: } \operatorname{Dropout}(h) = h",
        "h",
        "nn.Dropout(0.5).eval()(h)",
        inputs=spec(h=N(4, 5)),
        notes="eval() also makes BatchNorm use its running statistics.",
        keywords=("evaluation", "inference", "mode"),
    ),
    _row(
        "dl.tips.no_grad",
        TIPS,
        "No-grad: build no graph",
        r"\texttt{no\_grad}: \text{no gradient tracked}",
        "False",
        "with engine.no_grad(): r = (x * 2).requires_grad",
        "with torch.no_grad(): r = (x * 2).requires_grad",
        inputs=spec(x=N(3)),
        grad=("x",),
        result="r",
        notes="Nothing is recorded for backward: use it to evaluate, or around layers you keep fixed.",
        keywords=("inference", "frozen"),
    ),
    # ---------------------------------------------------------------- diffusion
    _row(
        "dl.diffusion.alpha_bar",
        DIFF,
        "Noise schedule: ᾱ_t",
        r"\alpha_t = 1 - \beta_t,\quad \bar\alpha_t = \prod_{s=1}^{t} \alpha_s",
        LINEAR_ALPHA_BARS,
        "diffusion.linear_beta_schedule(T, b0, b1).alpha_bars",
        "torch.cumprod(1 - torch.linspace(b0, b1, T, dtype=torch.float64), 0)",
        inputs=spec(T=1000, b0=1e-4, b1=0.02),
        notes="DDPM's linear β from 10⁻⁴ to 0.02: ᾱ falls from ≈1 to ≈4·10⁻⁵.",
        keywords=("ddpm", "beta schedule"),
    ),
    _row(
        "dl.diffusion.q_sample",
        DIFF,
        "Forward process in closed form",
        r"q(x_t \mid x_0) = \mathcal N\!\left(\sqrt{\bar\alpha_t}\, x_0, (1 - \bar\alpha_t) I\right):\ "
        r"x_t = \sqrt{\bar\alpha_t}\, x_0 + \sqrt{1 - \bar\alpha_t}\,\epsilon",
        "ab = np.cumprod(1 - np.linspace(1e-4, 0.02, 1000)); np.sqrt(ab[t]) * x0 + np.sqrt(1 - ab[t]) * eps",
        "diffusion.q_sample(x0, t, eps, diffusion.linear_beta_schedule(1000))",
        "ab = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 1000, dtype=torch.float64), 0); ab[t].sqrt() * x0 + (1 - ab[t]).sqrt() * eps",
        inputs=spec(x0=N(8, 2), eps=N(8, 2), t=lambda rng: int(rng.integers(0, 1000))),
        notes="Jump to any step t in one draw, ε ~ N(0, I); t counts from 0 as in code.",
        keywords=("ddpm", "noising"),
    ),
    _row(
        "dl.diffusion.cosine",
        DIFF,
        "Cosine schedule",
        r"\bar\alpha_t = \frac{f(t)}{f(0)},\ f(t) = \cos^2\!\left(\frac{t/T + s}{1 + s}\cdot\frac{\pi}{2}\right)",
        "f = np.cos((np.arange(T + 1) / T + s) / (1 + s) * np.pi / 2) ** 2; np.cumprod(1 - np.clip(1 - f[1:] / f[:-1], 1e-12, 0.999))",
        "diffusion.cosine_beta_schedule(T, s).alpha_bars",
        None,
        inputs=spec(T=100, s=0.008),
        notes="β_t = 1 − ᾱ_t/ᾱ_{t−1} clipped at 0.999; ᾱ falls slowly at both ends.",
        keywords=("improved ddpm", "beta schedule"),
    ),
    _row(
        "dl.diffusion.loss",
        DIFF,
        "DDPM loss (ε-prediction)",
        r"\mathcal L_{simple} = \mathbb E_{t, x_0, \epsilon}\left\lVert \epsilon - \epsilon_\theta\!\left(\sqrt{\bar\alpha_t}\, x_0 + \sqrt{1 - \bar\alpha_t}\,\epsilon,\ t\right)\right\rVert^2",
        DDPM_BETAS["numpy"]
        + "; a = ab[t][:, None]; xt = np.sqrt(a) * x0 + np.sqrt(1 - a) * eps; ((eps - xt @ W.T) ** 2).mean()",
        "xt = diffusion.q_sample(x0, t, eps, diffusion.linear_beta_schedule(1000)); F.mse_loss(F.linear(xt, W), eps)",
        DDPM_BETAS["torch"]
        + "; a = ab[t][:, None]; xt = a.sqrt() * x0 + (1 - a).sqrt() * eps; F.mse_loss(F.linear(xt, W), eps)",
        inputs=spec(x0=N(8, 2), eps=N(8, 2), t=Ints(1000, 8), W=N(2, 2)),
        notes="One step t per sample; ε_θ is a linear layer here, standing in for the network (which "
        "also reads t). The mean runs over the batch and the coordinates (Ho et al., 2020).",
        keywords=("ddpm", "epsilon prediction", "training"),
    ),
    _row(
        "dl.diffusion.ddpm_step",
        DIFF,
        "DDPM ancestral sampling step",
        r"x_{t-1} = \frac{1}{\sqrt{\alpha_t}}\left(x_t - \frac{\beta_t}{\sqrt{1 - \bar\alpha_t}}\,\epsilon_\theta(x_t, t)\right) + \sigma_t z,\quad \sigma_t^2 = \beta_t",
        DDPM_BETAS["numpy"] + "; (xt - b[t] / np.sqrt(1 - ab[t]) * eps) / np.sqrt(1 - b[t]) + np.sqrt(b[t]) * z",
        "diffusion.reverse_step(xt, eps, t, diffusion.linear_beta_schedule(1000), noise=z)",
        DDPM_BETAS["torch"] + "; (xt - b[t] / (1 - ab[t]).sqrt() * eps) / (1 - b[t]).sqrt() + b[t].sqrt() * z",
        inputs=spec(xt=N(8, 2), eps=N(8, 2), z=N(8, 2), t=lambda rng: int(rng.integers(1, 1000))),
        notes="From t = T − 1 down to 0 with fresh noise z ~ N(0, I) at each step but the last: T "
        "network calls per sample.",
        keywords=("ddpm", "sampler", "reverse process"),
    ),
    _row(
        "dl.diffusion.ddim_step",
        DIFF,
        "DDIM step (deterministic, η = 0)",
        r"\hat x_0 = \frac{x_t - \sqrt{1 - \bar\alpha_t}\,\hat\epsilon}{\sqrt{\bar\alpha_t}},\quad "
        r"x_s = \sqrt{\bar\alpha_s}\,\hat x_0 + \sqrt{1 - \bar\alpha_s}\,\hat\epsilon,\quad s < t",
        DDPM_BETAS["numpy"]
        + "; x0 = (xt - np.sqrt(1 - ab[t]) * eps) / np.sqrt(ab[t]); np.sqrt(ab[s]) * x0 + np.sqrt(1 - ab[s]) * eps",
        DDPM_SCHEDULE
        + "; ab = sch.alpha_bars[t]; x0 = (xt - math.sqrt(1 - ab) * eps) / math.sqrt(ab); diffusion.q_sample(x0, s, eps, sch)",
        DDPM_BETAS["torch"]
        + "; x0 = (xt - (1 - ab[t]).sqrt() * eps) / ab[t].sqrt(); ab[s].sqrt() * x0 + (1 - ab[s]).sqrt() * eps",
        inputs=_ddim_steps,
        notes="Song et al. (2021): predict x̂₀, then put it back at step s with the same noise ε̂ "
        "(the engine spells it as q_sample). No fresh noise, so s may skip many steps: tens of "
        "network calls instead of T.",
        keywords=("ddim", "sampler", "deterministic", "few steps"),
    ),
    _row(
        "dl.diffusion.tweedie",
        DIFF,
        "Tweedie's formula",
        r"\mathbb E[x_0 \mid x_t] = \frac{x_t + (1 - \bar\alpha_t)\,\nabla_{x_t} \log p_t(x_t)}{\sqrt{\bar\alpha_t}}",
        "ab = np.cumprod(1 - np.linspace(1e-4, 0.02, 1000))[t]; m + np.sqrt(ab) * s ** 2 / (ab * s ** 2 + 1 - ab) * (xt - np.sqrt(ab) * m)",
        DDPM_SCHEDULE
        + "; ab = sch.alpha_bars[t]; (xt + (1 - ab) * diffusion.exact_score(data.GaussianMixture([[m]], s, 1.0), xt, t, sch)) / math.sqrt(ab)",
        "ab = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 1000, dtype=torch.float64), 0)[t]; x = xt.clone().requires_grad_(); "
        "(-(x - ab.sqrt() * m) ** 2 / (2 * (ab * s ** 2 + 1 - ab))).sum().backward(); (xt + (1 - ab) * x.grad) / ab.sqrt()",
        inputs=spec(xt=N(8, 1), m=1.5, s=0.5, t=lambda rng: int(rng.integers(0, 1000))),
        notes="The best guess of x₀ is the noisy point moved along the score; with ε̂ = −√(1 − ᾱ_t) ∇log p_t "
        "it is DDIM's x̂₀. Checked on data x₀ ~ N(m, s²): NumPy conditions the Gaussian, the engine "
        "uses its exact score, PyTorch differentiates log p_t.",
        keywords=("score", "denoiser", "posterior mean"),
    ),
    # ---------------------------------------------------------------- VAE
    _row(
        "dl.vae.reparameterize",
        VAE,
        "Reparameterisation trick",
        r"z = \mu + \sigma \odot \epsilon,\quad \sigma = e^{\frac12 \log\sigma^2},\ \epsilon \sim \mathcal N(0, I)",
        "mu + np.exp(0.5 * logvar) * eps",
        "vae.reparameterize(mu, logvar, eps)",
        "mu + torch.exp(0.5 * logvar) * eps",
        inputs=LATENT,
        notes="The randomness moves into ε, so gradients reach μ and log σ².",
        keywords=("sampling",),
    ),
    _row(
        "dl.vae.kl",
        VAE,
        "KL to the standard normal",
        r"D_{KL}\left(\mathcal N(\mu, \operatorname{diag}\sigma^2) \,\Vert\, \mathcal N(0, I)\right) = -\frac12 \sum_j \left(1 + \log\sigma_j^2 - \mu_j^2 - \sigma_j^2\right)",
        KL_NUMPY,
        "vae.gaussian_kl(mu, logvar)",
        KL_TORCH,
        inputs=LATENT,
        notes="Closed form, per sample; 0 exactly when μ = 0 and σ = 1.",
        keywords=("kullback", "latent"),
    ),
    _row(
        "dl.vae.elbo",
        VAE,
        "ELBO (Gaussian decoder)",
        r"\log p(x) \ge \mathbb E_{q_\phi(z \mid x)}\left[\log \mathcal N\!\left(x;\, \hat x_\theta(z),\, \sigma^2 I\right)\right] - D_{KL}\left(q_\phi(z \mid x) \,\Vert\, p(z)\right)",
        "(-0.5 * ((x - x_hat) ** 2 / var + np.log(2 * np.pi * var))).sum(-1) - (" + KL_NUMPY + ")",
        "vae.elbo(vae.gaussian_log_likelihood(x_hat, x, var), vae.gaussian_kl(mu, logvar))",
        "(-0.5 * ((x - x_hat) ** 2 / var + math.log(2 * math.pi * var))).sum(-1) - " + KL_TORCH,
        inputs=spec(x_hat=U(0.0, 1.0, 4, 6), x=U(0.0, 1.0, 4, 6), mu=N(4, 3), logvar=N(4, 3, scale=0.5), var=0.05),
        notes="Reconstruction minus KL, per sample, for one draw z of q; train by minimising −ELBO. A "
        "Gaussian decoder is a density on real-valued (grey) pixels, so the ELBO bounds log p(x) "
        "in nats; a Bernoulli decoder on grey pixels in [0, 1] is not normalised there and bounds "
        "nothing. The decoder variance σ² weighs reconstruction against KL, the knob β turns.",
        keywords=("evidence lower bound", "vae loss", "decoder variance"),
    ),
    _row(
        "dl.vae.iwae",
        VAE,
        "Importance-weighted bound (IWAE)",
        r"\mathcal L_K = \mathbb E\left[\log \frac1K \sum_{k=1}^{K} \frac{p(x, z_k)}{q(z_k \mid x)}\right],\ z_k \sim q(z \mid x):\quad "
        r"\text{ELBO} = \mathcal L_1 \le \mathcal L_K \le \log p(x)",
        "z = mu + sigma * eps; lw = -0.5 * ((x - z) ** 2 + z ** 2 - eps ** 2) - 0.5 * np.log(2 * np.pi) + np.log(sigma); "
        "np.logaddexp.reduce(lw, -1) - np.log(lw.shape[-1])",
        "z = mu + sigma * eps; lw = -0.5 * ((x - z) ** 2 + z ** 2 - eps ** 2) - 0.5 * math.log(2 * math.pi) + sigma.log(); "
        "lw.logsumexp(-1) - math.log(lw.shape[-1])",
        inputs=spec(x=N(6, 1), mu=N(6, 1), sigma=U(0.3, 1.5, 6, 1), eps=N(6, 50)),
        notes="Burda et al. (2016), on the model p(z) = N(0, 1), p(x | z) = N(z, 1), so that log p(x) = "
        "log N(x; 0, 2) is known, with q(z | x) = N(μ, σ²) and K = 50 samples z_k = μ + σ ε_k. "
        "The bound rises with K, and equals log p(x) for every K when q is the true posterior N(x/2, 1/2).",
        keywords=("iwae", "importance sampling", "log likelihood", "elbo gap"),
    ),
]


# ----------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class HubSection:
    """One section of the hub: its title, the rows it lists (ids, from any sheet), and the topic
    notebooks and focused cheat sheets it links to (``engine.course.toc`` ids)."""

    key: str
    title: str
    rows: tuple
    notebooks: tuple = ()
    sheets: tuple = ()


HUB_SECTIONS = (
    HubSection(
        "neuron",
        NEURON,
        ("dl.neuron", "dl.dense", "shape.linear", "dl.dense.params", "dl.collapse"),
        ("03_backprop",),
        ("tensor_shapes",),
    ),
    HubSection(
        "activations",
        "Activations",
        (
            "act.relu",
            "act.leaky_relu",
            "act.sigmoid",
            "act.tanh",
            "act.gelu",
            "act.gelu.tanh",
            "act.silu",
            "act.swiglu",
            "act.softmax.temperature",
        ),
        ("01_activations",),
        ("activation_functions",),
    ),
    HubSection(
        "outputs",
        "Output layers and losses",
        (
            "loss.mse",
            "loss.bce_logits",
            "loss.bce_logits.grad",
            "act.softmax",
            "loss.ce",
            "loss.ce.grad",
            "loss.kl_div",
        ),
        ("02_losses",),
        ("loss_functions",),
    ),
    HubSection(
        "backprop",
        BACKPROP,
        ("deriv.chain_rule", "dl.backprop.outer", "dl.backprop.delta", "dl.backprop.dense", "deriv.matmul.grad"),
        ("03_backprop",),
        ("derivatives",),
    ),
    HubSection(
        "updates",
        "Parameter updates",
        (
            "opt.sgd",
            "opt.stability",
            "opt.momentum",
            "opt.rmsprop",
            "opt.adam",
            "opt.adam.first_step",
            "opt.adamw",
            "opt.clip_grad_norm",
        ),
        ("04_optimizers",),
        ("optimizers",),
    ),
    HubSection(
        "init",
        INIT,
        ("dl.init.he", "dl.init.xavier", "dl.l2", "opt.sgd_weight_decay", "dl.dropout", "dl.dropout.scale"),
        ("01_activations", "04_optimizers"),
        ("optimizers",),
    ),
    HubSection(
        "norm",
        NORM,
        ("dl.batchnorm", "deriv.batchnorm.grad", "dl.layernorm", "dl.rmsnorm", "dl.residual", "deriv.residual.grad"),
        ("01_activations", "05_convolution", "06_attention"),
        ("derivatives",),
    ),
    HubSection(
        "conv",
        "Convolution arithmetic",
        (
            "shape.conv1d",
            "shape.conv_out",
            "shape.conv_out_dilated",
            "shape.effective_kernel",
            "shape.conv_transpose_out",
            "shape.receptive_field",
            "shape.conv2d_params",
            "deriv.conv2d.grad_input.transposed",
        ),
        ("05_convolution",),
        ("tensor_shapes", "derivatives"),
    ),
    HubSection(
        "attention",
        "Attention, the Transformer block and RoPE",
        (
            "shape.attention.sdpa",
            "shape.attention.causal",
            "shape.attention.masked_fill",
            "shape.attention.heads",
            "shape.attention.scores",
            "shape.attention.params",
            "shape.attention.flops",
            "shape.attention.memory",
            "dl.transformer_block",
            "shape.rope.frequencies",
            "shape.rope",
            "shape.rope.relative",
        ),
        ("06_attention",),
        ("tensor_shapes",),
    ),
    HubSection(
        "schedules",
        "Learning-rate schedules",
        ("sched.step", "sched.cosine", "sched.warmup", "sched.one_cycle", "sched.plateau"),
        ("04_optimizers",),
        ("optimizers",),
    ),
    HubSection(
        "metrics",
        "Metrics",
        (
            "metric.accuracy",
            "metric.precision",
            "metric.recall",
            "metric.f1",
            "metric.confusion",
            "metric.roc_auc",
            "metric.r2",
            "metric.perplexity",
        ),
        (),
        ("metrics",),
    ),
    HubSection(
        "tips",
        TIPS,
        ("dl.tips.normalise", "dl.tips.initial_loss", "dl.tips.eval", "deriv.grad_check", "dl.tips.no_grad"),
        ("02_losses", "03_backprop"),
        ("derivatives",),
    ),
    HubSection("loop", "The minimal training loop", (), ("03_backprop", "04_optimizers"), ("optimizers",)),
    HubSection(
        "diffusion",
        DIFF,
        (
            "dl.diffusion.alpha_bar",
            "dl.diffusion.q_sample",
            "dl.diffusion.cosine",
            "dl.diffusion.loss",
            "dl.diffusion.ddpm_step",
            "dl.diffusion.ddim_step",
            "dl.diffusion.tweedie",
        ),
        ("07_diffusion",),
    ),
    HubSection("vae", VAE, ("dl.vae.reparameterize", "dl.vae.kl", "dl.vae.elbo", "dl.vae.iwae"), ("08_vae",)),
)


def hub_section(key: str) -> HubSection:
    """The hub section with this key; a clear error otherwise."""
    for section in HUB_SECTIONS:
        if section.key == key:
            return section
    raise KeyError(f"hub_section: unknown key {key!r}; keys: {', '.join(s.key for s in HUB_SECTIONS)}")


# ----------------------------------------------------------------------------- training loops
# Shown on the hub and run by the tests (and by the hub's run button): each reads X [N, D] and
# y [N] (class indices) and leaves the final training loss in `loss`.

NUMPY_TRAINING_LOOP = """\
import numpy as np

rng = np.random.default_rng(0)                        # X: [N, D] inputs, y: [N] class indices
n, d = X.shape
hidden, classes, lr = 32, int(y.max()) + 1, 0.5
onehot = np.eye(classes)[y]
params = {
    "W1": rng.standard_normal((hidden, d)) * np.sqrt(2 / d),        # (out, in), as nn.Linear; He init
    "b1": np.zeros(hidden),
    "W2": rng.standard_normal((classes, hidden)) * np.sqrt(2 / hidden),
    "b2": np.zeros(classes),
}
for epoch in range(500):
    # forward: dense, ReLU, dense, log-softmax, cross-entropy
    pre = X @ params["W1"].T + params["b1"]
    h = np.maximum(pre, 0)
    logits = h @ params["W2"].T + params["b2"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -(onehot * log_probs).sum(axis=1).mean()
    # backward: the chain rule, from the loss to each parameter
    d_logits = (np.exp(log_probs) - onehot) / n                # softmax minus one-hot
    grads = {"W2": d_logits.T @ h, "b2": d_logits.sum(axis=0)}
    d_pre = (d_logits @ params["W2"]) * (pre > 0)              # back through W2, then ReLU'
    grads["W1"], grads["b1"] = d_pre.T @ X, d_pre.sum(axis=0)
    # update: one step of gradient descent on every parameter
    for name in params:
        params[name] -= lr * grads[name]
accuracy = (logits.argmax(axis=1) == y).mean()
"""

ENGINE_TRAINING_LOOP = """\
import engine
import engine.functional as F
from engine import nn, optim

engine.manual_seed(0)                                 # X: [N, D] inputs, y: [N] class indices
inputs, targets = engine.tensor(X, dtype=engine.float32), engine.tensor(y)
model = nn.Sequential(nn.Linear(X.shape[1], 32), nn.ReLU(), nn.Linear(32, int(y.max()) + 1))
opt = optim.AdamW(model.parameters(), lr=0.02)
for epoch in range(300):
    model.train()                                     # the training behaviour of every layer
    loss = F.cross_entropy(model(inputs), targets)    # the loss takes the raw logits
    opt.zero_grad()                                   # .grad adds up across backward() calls
    loss.backward()                                   # every parameter's .grad, by the chain rule
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
model.eval()
with engine.no_grad():                                # no graph needed to measure
    accuracy = (model(inputs).argmax(1).numpy() == y).mean()
"""

# The PyTorch loop is the engine loop with other imports: the rest is character for character.
TORCH_IMPORTS = {
    "import engine.functional as F": "import torch.nn.functional as F",
    "from engine import nn, optim": "from torch import nn, optim",
    "import engine": "import torch",
    "engine.": "torch.",
}


def torch_training_loop() -> str:
    """:data:`ENGINE_TRAINING_LOOP` with PyTorch's imports (the only lines that differ)."""
    code = ENGINE_TRAINING_LOOP
    for old, new in TORCH_IMPORTS.items():
        code = code.replace(old, new)
    return code


TRAINING_LOOPS = {"numpy": NUMPY_TRAINING_LOOP, "engine": ENGINE_TRAINING_LOOP}


def run_training_loop(backend: str, X, y) -> dict:
    """Run the hub's training loop for ``backend`` ('numpy', 'engine' or 'torch') on X, y.

    Returns ``{'loss': final training loss, 'accuracy': training accuracy}``.
    """
    if backend not in ("numpy", "engine", "torch"):
        raise ValueError(f"run_training_loop: backend must be 'numpy', 'engine' or 'torch', got {backend!r}")
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],) or y.dtype.kind not in "iu":
        raise ValueError(f"run_training_loop: need X [N, D] and integer y [N], got {X.shape} and {y.shape} {y.dtype}")
    code = torch_training_loop() if backend == "torch" else TRAINING_LOOPS[backend]
    ns = {"X": X, "y": y}
    exec(compile(code, f"<training loop: {backend}>", "exec"), ns)
    loss = ns["loss"]
    loss = float(loss.item() if hasattr(loss, "item") else loss)
    return {"loss": loss, "accuracy": float(ns["accuracy"])}

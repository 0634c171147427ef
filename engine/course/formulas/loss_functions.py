"""Rows of the loss-functions sheet: regression and classification losses and their gradients.

Losses are means over the batch (PyTorch's ``reduction='mean'``) unless a row says otherwise.
Classification losses take logits; the fused forms are the numerically stable ones.
"""

from __future__ import annotations

import numpy as np

from .core import Ints, N, Probs, U, gradient_row, sheet_row, spec

SHEET = "loss_functions"


_loss = sheet_row(SHEET, inputs=None)


def _grad_row(forward, name, latex, numpy, wrt, **fields):
    """The gradient of a (batch-mean) loss row: its NumPy formula against ``L.backward()`` through
    the loss's own code."""
    return gradient_row(forward, name, latex, numpy, wrt, out="L", upstream="", **fields)


def _with_grad(forward, *args, **fields):
    """A loss row followed by its :func:`_grad_row`."""
    return forward, _grad_row(forward, *args, **fields)


def _binary_targets(rng, n=(8,)):
    return rng.integers(0, 2, n).astype(np.float64)


def _log_probs(rng):
    e = np.exp(rng.standard_normal((6, 5)))
    return np.log(e / e.sum(-1, keepdims=True))


REG = spec(y_hat=N(8, 3, scale=2.0), y=N(8, 3))
BIN_LOGITS = spec(z=N(8, scale=3.0), y=_binary_targets)
LOGITS = spec(z=N(6, 5, scale=2.0), y=Ints(5, 6))

# shown before its stable form, its gradient after
BCE_LOGITS = _loss(
    "loss.bce_logits",
    "Binary classification",
    "Binary cross-entropy from logits",
    r"J = -\frac1n\sum_i \left[y_i \log \sigma(z_i) + (1 - y_i)\log(1 - \sigma(z_i))\right]",
    "p = 1 / (1 + np.exp(-z)); -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean()",
    "F.binary_cross_entropy_with_logits(z, y)",
    inputs=BIN_LOGITS,
    notes="Pass the logit z, not σ(z): the fused form stays finite and accurate for any z, "
    "where log σ(z) computed after the sigmoid rounds to log 0.",
    keywords=("log loss", "bce", "sigmoid"),
)

ROWS = [
    # ---------------------------------------------------------------- regression
    *_with_grad(
        _loss(
            "loss.mse",
            "Regression",
            "MSE (L2 loss)",
            r"\operatorname{MSE} = \frac1n\sum_i (\hat y_i - y_i)^2",
            "((y_hat - y) ** 2).mean()",
            "F.mse_loss(y_hat, y)",
            inputs=REG,
            notes="Squares the residuals, so one large error outweighs many small ones; pair it with an identity output ŷ = z.",
            keywords=("mean squared error", "regression"),
        ),
        "MSE gradient",
        r"\frac{\partial\,\operatorname{MSE}}{\partial \hat y_i} = \frac{2}{n}(\hat y_i - y_i)",
        "2 * (y_hat - y) / y.size",
        ("y_hat",),
        keywords=("mean squared error",),
    ),
    *_with_grad(
        _loss(
            "loss.mae",
            "Regression",
            "MAE (L1 loss)",
            r"\operatorname{MAE} = \frac1n\sum_i \lvert \hat y_i - y_i\rvert",
            "np.abs(y_hat - y).mean()",
            "F.l1_loss(y_hat, y)",
            inputs=REG,
            notes="Outliers count linearly, not quadratically: every residual pulls with the same force.",
            keywords=("mean absolute error",),
        ),
        "MAE gradient",
        r"\frac{\partial\,\operatorname{MAE}}{\partial \hat y_i} = \frac1n \operatorname{sign}(\hat y_i - y_i)",
        "np.sign(y_hat - y) / y.size",
        ("y_hat",),
    ),
    *_with_grad(
        _loss(
            "loss.huber",
            "Regression",
            "Huber",
            r"\ell_\delta(e) = \begin{cases}\tfrac12 e^2 & \lvert e\rvert \le \delta\\ \delta(\lvert e\rvert - \tfrac12\delta) & \text{otherwise}\end{cases},\ e = \hat y - y",
            "a = np.abs(y_hat - y); np.where(a <= d, 0.5 * a ** 2, d * (a - 0.5 * d)).mean()",
            "F.huber_loss(y_hat, y, delta=d)",
            inputs=spec(y_hat=N(8, 3, scale=2.0), y=N(8, 3), d=1.0),
            notes="Quadratic near 0, linear beyond δ: MSE's smoothness, MAE's robustness.",
        ),
        "Huber gradient",
        r"\frac{\partial \ell_\delta}{\partial \hat y} = \operatorname{clip}(e, -\delta, \delta)",
        "np.clip(y_hat - y, -d, d) / y.size",
        ("y_hat",),
    ),
    _loss(
        "loss.pseudo_huber",
        "Regression",
        "Pseudo-Huber",
        r"\ell_\delta = \delta^2\left(\sqrt{1 + \left(\tfrac{y - \hat y}{\delta}\right)^2} - 1\right)",
        "(d ** 2 * (np.sqrt(1 + ((y - y_hat) / d) ** 2) - 1)).mean()",
        "F.pseudo_huber_loss(y_hat, y, delta=d)",
        "(d ** 2 * (torch.sqrt(1 + ((y - y_hat) / d) ** 2) - 1)).mean()",
        inputs=spec(y_hat=N(8, 3, scale=2.0), y=N(8, 3), d=1.5),
        notes="A smooth Huber (every derivative continuous); PyTorch has no built-in.",
        keywords=("smooth huber",),
    ),
    _loss(
        "loss.pinball",
        "Regression",
        "Pinball (quantile) loss",
        r"\ell_\tau(e) = \max\bigl(\tau e,\ (\tau - 1)\, e\bigr),\ e = y - \hat y",
        "e = y - y_hat; np.maximum(tau * e, (tau - 1) * e).mean()",
        "e = y - y_hat; engine.maximum(tau * e, (tau - 1) * e).mean()",
        "e = y - y_hat; torch.maximum(tau * e, (tau - 1) * e).mean()",
        inputs=spec(y_hat=N(8, 3, scale=2.0), y=N(8, 3), tau=0.9),
        notes="Its minimiser is the τ-quantile of y (τ = 0.5: half the MAE, the median); PyTorch has no built-in.",
        keywords=("quantile regression", "check loss"),
    ),
    _loss(
        "loss.gaussian_nll",
        "Regression",
        "Gaussian negative log-likelihood",
        r"\ell = \tfrac12\left(\log \sigma^2 + \frac{(y - \hat y)^2}{\sigma^2}\right) \ (+\tfrac12 \log 2\pi)",
        "(0.5 * (np.log(var) + (y - y_hat) ** 2 / var)).mean()",
        "(0.5 * (var.log() + (y - y_hat) ** 2 / var)).mean()",
        "F.gaussian_nll_loss(y_hat, y, var)",
        inputs=spec(y_hat=N(8, 3, scale=2.0), y=N(8, 3), var=U(0.2, 3.0, 8, 3)),
        notes="A predicted variance per output (heteroscedastic regression); with σ² fixed it is "
        "MSE/2σ² plus a constant. PyTorch leaves out ½ log 2π unless full=True.",
        keywords=("heteroscedastic", "likelihood", "variance"),
    ),
    # ---------------------------------------------------------------- binary classification
    _loss(
        "loss.bce",
        "Binary classification",
        "Binary cross-entropy (probabilities)",
        r"J = -\frac1n\sum_i \left[y_i \log \hat p_i + (1 - y_i)\log(1 - \hat p_i)\right]",
        "-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean()",
        "F.binary_cross_entropy(p, y)",
        inputs=spec(p=U(0.02, 0.98, 8), y=_binary_targets),
        notes="The log loss of a Bernoulli model; takes p = σ(z) ∈ (0, 1).",
        keywords=("log loss", "bce", "logistic"),
    ),
    BCE_LOGITS,
    _loss(
        "loss.bce_logits.stable",
        "Binary classification",
        "BCE from logits, stable form",
        r"\ell(z, y) = \max(z, 0) - z\,y + \log\left(1 + e^{-\lvert z\rvert}\right)",
        "(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))).mean()",
        "F.binary_cross_entropy_with_logits(z, y)",
        inputs=spec(z=N(8, scale=40.0), y=_binary_targets),
        notes="What the fused loss computes: finite even for |z| = 100, where σ(z) rounds to 0 or 1.",
        keywords=("bce", "overflow"),
    ),
    _grad_row(
        BCE_LOGITS,
        "Sigmoid + log loss gradient",
        r"\frac{\partial J}{\partial z_i} = \frac1n(\sigma(z_i) - y_i) = \frac1n(\hat p_i - y_i)",
        "(1 / (1 + np.exp(-z)) - y) / y.size",
        ("z",),
        notes="The prediction error itself: no σ' factor to vanish.",
        keywords=("bce",),
    ),
    _loss(
        "loss.bce_pos_weight",
        "Binary classification",
        "BCE with pos_weight",
        r"\ell = -\bigl[w\, y \log \sigma(z) + (1 - y)\log(1 - \sigma(z))\bigr]",
        "(w * y * np.logaddexp(0, -z) + (1 - y) * np.logaddexp(0, z)).mean()",
        "F.binary_cross_entropy_with_logits(z, y, pos_weight=w)",
        inputs=spec(z=N(8, 3, scale=3.0), y=lambda rng: _binary_targets(rng, (8, 3)), w=U(0.5, 4.0, 3)),
        notes="One weight per class on the positive term: w = negatives/positives balances a rare "
        "positive class. −log σ(z) = log(1 + e^{−z}) keeps it finite.",
        keywords=("class imbalance", "weighted", "bce"),
    ),
    _loss(
        "loss.focal",
        "Binary classification",
        "Focal loss",
        r"\ell = -\alpha_t (1 - p_t)^\gamma \log p_t,\ p_t = \begin{cases}\sigma(z) & y = 1\\ 1 - \sigma(z) & y = 0\end{cases}",
        "p = 1 / (1 + np.exp(-z)); pt = y * p + (1 - y) * (1 - p); at = y * a + (1 - y) * (1 - a); "
        "(at * (1 - pt) ** gamma * (y * np.logaddexp(0, -z) + (1 - y) * np.logaddexp(0, z))).mean()",
        "p = z.sigmoid(); pt = y * p + (1 - y) * (1 - p); at = y * a + (1 - y) * (1 - a); "
        "(at * (1 - pt) ** gamma * F.binary_cross_entropy_with_logits(z, y, reduction='none')).mean()",
        "p = z.sigmoid(); pt = y * p + (1 - y) * (1 - p); at = y * a + (1 - y) * (1 - a); "
        "(at * (1 - pt) ** gamma * F.binary_cross_entropy_with_logits(z, y, reduction='none')).mean()",
        inputs=spec(z=N(8, scale=3.0), y=_binary_targets, a=0.25, gamma=2.0),
        notes="Lin et al. (2017): (1 − p_t)^γ shrinks the loss of examples already classified well, "
        "so the rare hard ones dominate; γ = 0, α = ½ gives half the BCE. PyTorch core has no "
        "built-in (torchvision's sigmoid_focal_loss).",
        keywords=("class imbalance", "retinanet", "hard examples"),
    ),
    # ---------------------------------------------------------------- multiclass classification
    *_with_grad(
        _loss(
            "loss.ce",
            "Multiclass classification",
            "Cross-entropy from logits",
            r"L = -\log \operatorname{softmax}(z)_y = -z_y + \log\sum_j e^{z_j}",
            "m = z.max(1); (m + np.log(np.exp(z - m[:, None]).sum(1)) - z[np.arange(len(y)), y]).mean()",
            "F.cross_entropy(z, y)",
            inputs=LOGITS,
            notes="Targets are class indices; the logits go in raw (no softmax first).",
            keywords=("softmax", "categorical", "log loss"),
        ),
        "Softmax + cross-entropy gradient",
        r"\frac{\partial L}{\partial z_k} = \operatorname{softmax}(z)_k - [k = y]",
        "e = np.exp(z - z.max(1, keepdims=True)); (e / e.sum(1, keepdims=True) - np.eye(z.shape[1])[y]) / len(y)",
        ("z",),
        notes="p − onehot(y), divided by the batch size for the mean.",
        keywords=("softmax", "onehot"),
    ),
    _loss(
        "loss.ce.probs",
        "Multiclass classification",
        "Cross-entropy with probability targets",
        r"L = -\sum_k q_k \log \operatorname{softmax}(z)_k",
        "m = z.max(1, keepdims=True); -(q * (z - m - np.log(np.exp(z - m).sum(1, keepdims=True)))).sum(1).mean()",
        "F.cross_entropy(z, q)",
        inputs=spec(z=N(6, 5, scale=2.0), q=Probs(6, 5)),
        notes="Soft targets, as in distillation or mixup.",
        keywords=("soft targets",),
    ),
    _loss(
        "loss.ce.label_smoothing",
        "Multiclass classification",
        "Label smoothing",
        r"q = (1 - \varepsilon)\,\operatorname{onehot}(y) + \varepsilon / K",
        "q = (1 - eps) * np.eye(z.shape[1])[y] + eps / z.shape[1]; m = z.max(1, keepdims=True); -(q * (z - m - np.log(np.exp(z - m).sum(1, keepdims=True)))).sum(1).mean()",
        "F.cross_entropy(z, y, label_smoothing=eps)",
        inputs=spec(z=N(6, 5, scale=2.0), y=Ints(5, 6), eps=0.1),
        notes="Keeps the model from pushing logits to ±∞.",
    ),
    _loss(
        "loss.nll",
        "Multiclass classification",
        "Negative log-likelihood",
        r"L = -\frac1n\sum_i \log p_{i, y_i}",
        "-logp[np.arange(len(y)), y].mean()",
        "F.nll_loss(logp, y)",
        inputs=spec(logp=_log_probs, y=Ints(5, 6)),
        notes="Takes log-probabilities: cross_entropy(z, y) = nll_loss(log_softmax(z), y).",
    ),
    _loss(
        "loss.kl_div",
        "Distributions",
        "KL divergence",
        r"D_{KL}(p \,\Vert\, q) = \sum_k p_k \log\frac{p_k}{q_k}",
        "(p * np.log(p / q)).sum() / len(p)",
        "F.kl_div(q.log(), p, reduction='batchmean')",
        inputs=spec(p=Probs(6, 5), q=Probs(6, 5)),
        notes="The input is log q; 'batchmean' divides the sum by the batch size (the true KL).",
        keywords=("kullback", "leibler", "distillation"),
    ),
]

"""Rows of the metrics sheet: classification, ranking, regression and language-model metrics.

``y`` holds the true labels, ``y_pred`` the predicted ones, ``s`` a score (higher = more likely
positive). PyTorch has no metrics module of its own (torchmetrics is a separate package), so its
column spells the formula with tensor operations (integer division gives float32 there, hence
the looser tolerance of some rows).
"""

from __future__ import annotations

import numpy as np

from .core import Ints, N, sheet_row, spec

SHEET = "metrics"
CLS = "Classification"
RANK = "Ranking"
REG = "Regression"
LM = "Language models"

BINARY = spec(y=Ints(2, 40), y_pred=Ints(2, 40))
TP = "tp = ((y_pred == 1) & (y == 1)).sum(); "
FP = "fp = ((y_pred == 1) & (y == 0)).sum(); "
FN = "fn = ((y_pred == 0) & (y == 1)).sum(); "


def _scores(rng):
    """Scores with ties (rounded), so the ½-per-tie rule of the AUC is exercised."""
    return np.round(rng.standard_normal(40), 1)


_metric = sheet_row(SHEET, ("torch", "inputs", "notes", "rtol"), torch_from="numpy", inputs=BINARY, rtol=1e-9)


ROWS = [
    _metric(
        "metric.accuracy",
        CLS,
        "Accuracy",
        r"\text{accuracy} = \frac{TP + TN}{N}",
        "(y_pred == y).mean()",
        "metrics.accuracy(y, y_pred)",
        "(y_pred == y).double().mean()",
        inputs=spec(y=Ints(3, 40), y_pred=Ints(3, 40)),
        notes="Misleading on imbalanced classes: predicting the majority class scores high.",
    ),
    _metric(
        "metric.precision",
        CLS,
        "Precision",
        r"P = \frac{TP}{TP + FP}",
        TP + FP + "tp / (tp + fp)",
        "metrics.precision(y, y_pred)",
        notes="How many of the examples called positive really are.",
        rtol=1e-6,
    ),
    _metric(
        "metric.recall",
        CLS,
        "Recall",
        r"R = \frac{TP}{TP + FN}",
        TP + FN + "tp / (tp + fn)",
        "metrics.recall(y, y_pred)",
        notes="How many of the actual positives the model catches (sensitivity, TPR).",
        keywords=("sensitivity", "tpr"),
        rtol=1e-6,
    ),
    _metric(
        "metric.f1",
        CLS,
        "F1 score",
        r"F_1 = \frac{2PR}{P + R} = \frac{2\,TP}{2\,TP + FP + FN}",
        TP + FP + FN + "2 * tp / (2 * tp + fp + fn)",
        "metrics.f1_score(y, y_pred)",
        notes="Harmonic mean of P and R: high only when both are; useful when positives are rare.",
        rtol=1e-6,
    ),
    _metric(
        "metric.confusion",
        CLS,
        "Confusion matrix",
        r"C_{ij} = \#\{n : y_n = i,\ \hat y_n = j\}",
        "C = np.zeros((K, K), dtype=int); np.add.at(C, (y, y_pred), 1); C",
        "metrics.confusion_matrix(y, y_pred, num_classes=K)",
        "torch.bincount(y * K + y_pred, minlength=K * K).reshape(K, K)",
        inputs=spec(y=Ints(3, 40), y_pred=Ints(3, 40), K=3),
        notes="Rows are true classes, columns predictions; the diagonal is correct.",
    ),
    _metric(
        "metric.roc_auc",
        RANK,
        "ROC-AUC",
        r"\text{AUC} = P(s^+ > s^-) + \tfrac12 P(s^+ = s^-)",
        "pos, neg = s[y == 1][:, None], s[y == 0][None, :]; (pos > neg).mean() + 0.5 * (pos == neg).mean()",
        "metrics.roc_auc(y, s)",
        "pos, neg = s[y == 1][:, None], s[y == 0][None, :]; (pos > neg).double().mean() + 0.5 * (pos == neg).double().mean()",
        inputs=spec(y=Ints(2, 40), s=_scores),
        notes="The area under the TPR-vs-FPR curve equals the chance that a random positive "
        "outscores a random negative.",
        keywords=("auroc", "roc curve"),
    ),
    _metric(
        "metric.r2",
        REG,
        "R² (coefficient of determination)",
        r"R^2 = 1 - \frac{\sum_i (y_i - \hat y_i)^2}{\sum_i (y_i - \bar y)^2}",
        "1 - ((y - y_hat) ** 2).sum() / ((y - y.mean()) ** 2).sum()",
        "metrics.r2_score(y, y_hat)",
        inputs=spec(y=N(30), y_hat=N(30, scale=0.5)),
        notes="1 is perfect, 0 is as good as predicting the mean, negative is worse.",
    ),
    _metric(
        "metric.perplexity",
        LM,
        "Perplexity",
        r"\operatorname{PPL} = \exp\left(\frac1N\sum_i -\log p(y_i)\right)",
        "m = z.max(-1, keepdims=True); np.exp((m[:, 0] + np.log(np.exp(z - m).sum(-1)) - z[np.arange(len(y)), y]).mean())",
        "metrics.perplexity_from_logits(z, y)",
        "torch.exp(F.cross_entropy(z, y))",
        inputs=spec(z=N(12, 7, scale=2.0), y=Ints(7, 12)),
        notes="exp of the mean cross-entropy (in nats); a uniform guess over V tokens scores V.",
    ),
]

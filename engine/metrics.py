"""Evaluation metrics on NumPy arrays, lists or Tensors (anything with a ``.data`` ndarray).

Classification (labels are integers; 2-D predictions [N, C] are scores and become
``argmax(dim=1)``)::

    accuracy  = #(ŷ = y) / N
    precision = TP / (TP + FP)        of the items predicted positive, the share that are
    recall    = TP / (TP + FN)        of the truly positive items, the share that are found
    F1        = 2 TP / (2 TP + FP + FN) = 2 P R / (P + R)
    C[i, j]   = #(true class i, predicted class j)

``average`` follows scikit-learn: ``'binary'`` (default) scores the class ``pos_label`` only;
``None`` returns one value per class (classes sorted, those that occur in y_true or y_pred);
``'macro'`` averages them; ``'weighted'`` averages them weighted by each class's count in y_true;
``'micro'`` pools the counts of every class first (for single-label data micro P = R = F1 =
accuracy). A ratio whose denominator is 0 (no item predicted positive, say) is ``zero_division``
(0.0 by default, as scikit-learn's ``zero_division=0``), never NaN.

Ranking and regression::

    ROC-AUC = P(score of a random positive > score of a random negative) + ½ P(tie)
            = (R₊ - n₊(n₊ + 1)/2) / (n₊ n₋)   R₊: sum of the positives' ranks, ties averaged
    R²      = 1 - Σ(y - ŷ)² / Σ(y - ȳ)²
    perplexity = exp(mean negative log-likelihood per token, in nats)

Degenerate input (empty, mismatched lengths, one class only for ROC-AUC, NaN) raises ValueError
naming the metric and the values at fault.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import to_array

__all__ = [
    "accuracy",
    "confusion_matrix",
    "f1_score",
    "perplexity",
    "perplexity_from_logits",
    "precision",
    "r2_score",
    "recall",
    "roc_auc",
    "roc_curve",
]

_AVERAGES = ("binary", "micro", "macro", "weighted", None)


# ----------------------------------------------------------------------------- input handling
def _as_labels(arr: np.ndarray, op: str, name: str) -> np.ndarray:
    """Integer class labels as int64; floats are accepted when they are whole numbers."""
    if arr.dtype == bool or np.issubdtype(arr.dtype, np.integer):
        return arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.floating):
        raise TypeError(f"{op}: {name} must hold class labels (integers), got dtype {arr.dtype}")
    bad = ~np.isfinite(arr) | (arr != np.round(arr))
    if bad.any():
        value = arr[bad][0]
        raise ValueError(
            f"{op}: {name} must hold class labels (whole numbers), found {value!r}; "
            f"threshold probabilities first (e.g. p >= 0.5) or pass scores as an [N, C] array"
        )
    return arr.astype(np.int64)


def _check_length(op: str, y_true: np.ndarray, y_pred: np.ndarray) -> None:
    if len(y_true) != len(y_pred):
        raise ValueError(f"{op}: y_true and y_pred have different lengths, {len(y_true)} and {len(y_pred)}")
    if len(y_true) == 0:
        raise ValueError(f"{op}: empty input (no samples); the metric is undefined")


def _label_pair(op: str, y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    """(y_true, y_pred) as 1-D int64 labels; scores [N, C] in y_pred become argmax(dim=1)."""
    t = to_array(op, "y_true", y_true)
    p = to_array(op, "y_pred", y_pred)
    if t.ndim != 1:
        raise ValueError(f"{op}: y_true must be 1-D class labels, got shape {t.shape}")
    if p.ndim == 2:
        if p.shape[1] < 2:
            raise ValueError(
                f"{op}: y_pred has shape {p.shape}; scores need one column per class (C >= 2). "
                f"For one-column binary scores pass labels, e.g. (p[:, 0] >= 0.5)"
            )
        if not np.isfinite(p).all():
            raise ValueError(f"{op}: y_pred scores contain NaN or infinity")
        p = p.argmax(axis=1)
    elif p.ndim != 1:
        raise ValueError(f"{op}: y_pred must be labels [N] or scores [N, C], got shape {p.shape}")
    _check_length(op, t, p)
    return _as_labels(t, op, "y_true"), _as_labels(p, op, "y_pred")


def _safe_ratio(num, den, zero_division: float):
    """num / den, with ``zero_division`` where den == 0 (elementwise for arrays)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, float(zero_division))
    np.divide(num, den, out=out, where=den > 0)
    return out


def _check_zero_division(op: str, zero_division) -> float:
    if (
        isinstance(zero_division, bool)
        or not isinstance(zero_division, (int, float))
        or not (0.0 <= zero_division <= 1.0)
    ):
        raise ValueError(f"{op}: zero_division must be a number in [0, 1], got {zero_division!r}")
    return float(zero_division)


def _class_counts(t: np.ndarray, p: np.ndarray):
    """Sorted classes present in either array, and per class: TP, FP, FN, support (true count)."""
    classes = np.union1d(t, p)
    k = len(classes)
    ti, pi = np.searchsorted(classes, t), np.searchsorted(classes, p)
    conf = np.bincount(ti * k + pi, minlength=k * k).reshape(k, k)
    tp = np.diag(conf)
    return classes, tp, conf.sum(axis=0) - tp, conf.sum(axis=1) - tp, conf.sum(axis=1)


def _score(op: str, y_true, y_pred, average, pos_label, zero_division, numerator_denominator):
    """Shared body of precision, recall and F1: per-class counts, then the chosen average."""
    if average not in _AVERAGES:
        raise ValueError(f"{op}: average must be one of {_AVERAGES}, got {average!r}")
    zero_division = _check_zero_division(op, zero_division)
    t, p = _label_pair(op, y_true, y_pred)
    classes, tp, fp, fn, support = _class_counts(t, p)
    if average == "binary":
        if len(classes) > 2:
            raise ValueError(
                f"{op}: average='binary' needs at most two classes, got labels {classes.tolist()}; "
                f"pass average='macro', 'micro', 'weighted' or None for multiclass data"
            )
        if pos_label not in classes:
            if len(classes) == 2:
                raise ValueError(f"{op}: pos_label={pos_label!r} is not one of the labels {classes.tolist()}")
            # One class only and it is the negative one: no positives anywhere.
            return float(_safe_ratio(*numerator_denominator(0, 0, 0), zero_division))
        i = int(np.searchsorted(classes, pos_label))
        return float(_safe_ratio(*numerator_denominator(tp[i], fp[i], fn[i]), zero_division))
    if average == "micro":
        return float(_safe_ratio(*numerator_denominator(tp.sum(), fp.sum(), fn.sum()), zero_division))
    per_class = _safe_ratio(*numerator_denominator(tp, fp, fn), zero_division)
    if average is None:
        return per_class
    if average == "macro":
        return float(per_class.mean())
    return float(np.average(per_class, weights=support))  # weighted; support sums to N > 0


# ----------------------------------------------------------------------------- classification
def accuracy(y_true, y_pred) -> float:
    """Share of correct predictions, #(ŷ = y) / N.

    ``y_pred`` holds labels [N] or scores/logits [N, C] (their argmax is the prediction).
    """
    t, p = _label_pair("accuracy", y_true, y_pred)
    return float(np.mean(t == p))


def precision(y_true, y_pred, average="binary", pos_label=1, zero_division=0.0):
    """TP / (TP + FP): of the items predicted positive, the share that truly are.

    ``average``: 'binary' (class ``pos_label``), None (per class), 'macro', 'weighted', 'micro'
    (see the module docstring). Nothing predicted positive gives ``zero_division`` (0.0).
    """
    return _score("precision", y_true, y_pred, average, pos_label, zero_division, lambda tp, fp, fn: (tp, tp + fp))


def recall(y_true, y_pred, average="binary", pos_label=1, zero_division=0.0):
    """TP / (TP + FN): of the truly positive items, the share that are found.

    Same ``average`` choices as ``precision``; no true positives at all gives ``zero_division``.
    """
    return _score("recall", y_true, y_pred, average, pos_label, zero_division, lambda tp, fp, fn: (tp, tp + fn))


def f1_score(y_true, y_pred, average="binary", pos_label=1, zero_division=0.0):
    """F1 = 2 TP / (2 TP + FP + FN), the harmonic mean of precision and recall.

    'macro' averages the per-class F1 values (not the F1 of the averaged P and R), as
    scikit-learn does. A class absent from both y_true and y_pred scores ``zero_division``.
    """
    return _score(
        "f1_score", y_true, y_pred, average, pos_label, zero_division, lambda tp, fp, fn: (2 * tp, 2 * tp + fp + fn)
    )


def confusion_matrix(y_true, y_pred, num_classes=None) -> np.ndarray:
    """C[i, j] = #(true class i, predicted class j), an int64 [num_classes, num_classes] array.

    Rows are true classes, columns predictions; the diagonal holds the correct ones. Labels are
    class indices 0..num_classes-1; ``num_classes`` defaults to the largest label + 1. Counted in
    one ``np.bincount`` of the flat index i·C + j. With ``num_classes`` given, empty input gives
    an all-zero matrix.
    """
    op = "confusion_matrix"
    t, p = to_array(op, "y_true", y_true), to_array(op, "y_pred", y_pred)
    if num_classes is not None and t.shape == p.shape == (0,):
        t, p = t.astype(np.int64), p.astype(np.int64)  # nothing to count: all-zero matrix
    else:
        t, p = _label_pair(op, t, p)
    if len(t) and min(t.min(), p.min()) < 0:
        raise ValueError(f"{op}: labels must be class indices >= 0, found {min(t.min(), p.min())}")
    largest = int(max(t.max(), p.max())) if len(t) else -1
    if num_classes is None:
        num_classes = largest + 1
    elif isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) or (num_classes < 1):
        raise ValueError(f"{op}: num_classes must be a positive integer, got {num_classes!r}")
    elif largest >= num_classes:
        raise ValueError(f"{op}: label {largest} is out of range for num_classes={num_classes}")
    k = int(num_classes)
    return np.bincount(t * k + p, minlength=k * k).reshape(k, k).astype(np.int64)


# ----------------------------------------------------------------------------- ranking
def _binary_targets_and_scores(op: str, y_true, y_score) -> tuple[np.ndarray, np.ndarray]:
    t = to_array(op, "y_true", y_true)
    s = to_array(op, "y_score", y_score)
    if t.ndim != 1 or s.ndim != 1:
        raise ValueError(
            f"{op}: y_true and y_score must be 1-D, got shapes {t.shape} and {s.shape}; for "
            f"[N, 2] probabilities pass the positive class's column, e.g. probs[:, 1]"
        )
    _check_length(op, t, s)
    t = _as_labels(t, op, "y_true")
    if not np.isin(t, (0, 1)).all():
        raise ValueError(f"{op}: y_true must be binary (0/1 or bool), got labels {np.unique(t).tolist()}")
    if not np.issubdtype(s.dtype, np.number) and s.dtype != bool:
        raise TypeError(f"{op}: y_score must hold numbers, got dtype {s.dtype}")
    s = s.astype(np.float64)
    if np.isnan(s).any():
        raise ValueError(f"{op}: y_score contains NaN")
    n_pos = int(t.sum())
    if n_pos in (0, len(t)):
        raise ValueError(
            f"{op}: y_true contains only one class (all {int(t[0])}); ROC-AUC needs both positives and negatives"
        )
    return t, s


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..N of ``values``, tied values sharing the mean of the ranks they span."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)  # rank of each distinct value's last copy
    mean_rank = last - (counts - 1) / 2.0
    return mean_rank[inverse]


def roc_auc(y_true, y_score) -> float:
    """Area under the ROC curve, from ranks (the Mann-Whitney U statistic), ties counting ½:

        AUC = (R₊ - n₊(n₊ + 1)/2) / (n₊ n₋)

    with R₊ the sum of the positives' ranks among all scores (tied scores get their average
    rank). It is the probability that a random positive scores above a random negative.
    ``y_true`` is 0/1 or bool; ``y_score`` any real scores (probabilities, logits). One class
    only is a ValueError: the area is undefined.
    """
    t, s = _binary_targets_and_scores("roc_auc", y_true, y_score)
    n_pos = int(t.sum())
    n_neg = len(t) - n_pos
    rank_sum = _average_ranks(s)[t == 1].sum()
    return float((rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def roc_curve(y_true, y_score):
    """The ROC curve: (fpr, tpr, thresholds), one point per distinct score, highest first.

    At threshold τ an item is predicted positive when score >= τ; tpr = TP/n₊, fpr = FP/n₋.
    The first point is (0, 0) with threshold +inf. ``np.trapezoid(tpr, fpr)`` equals ``roc_auc``.
    """
    t, s = _binary_targets_and_scores("roc_curve", y_true, y_score)
    order = np.argsort(-s, kind="stable")
    s, t = s[order], t[order]
    # The last index of each run of equal scores: all tied items cross the threshold together.
    ends = np.r_[np.flatnonzero(np.diff(s) != 0), len(s) - 1]
    tps = np.cumsum(t)[ends]
    fps = (ends + 1) - tps
    tpr = np.r_[0.0, tps / tps[-1]]
    fpr = np.r_[0.0, fps / fps[-1]]
    return fpr, tpr, np.r_[np.inf, s[ends]]


# ----------------------------------------------------------------------------- regression
def r2_score(y_true, y_pred) -> float:
    """Coefficient of determination R² = 1 - Σ(y - ŷ)² / Σ(y - ȳ)².

    1 is a perfect fit, 0 is as good as predicting the mean, negative is worse. For [N, k]
    targets it is computed per column and averaged (scikit-learn's 'uniform_average'). A
    constant target (Σ(y - ȳ)² = 0) gives 1.0 for a perfect prediction and 0.0 otherwise
    (scikit-learn's force_finite), never NaN or -inf. Needs at least 2 samples.
    """
    op = "r2_score"
    t = to_array(op, "y_true", y_true).astype(np.float64)
    p = to_array(op, "y_pred", y_pred).astype(np.float64)
    if t.shape != p.shape or t.ndim not in (1, 2):
        raise ValueError(f"{op}: y_true and y_pred must have the same shape [N] or [N, k], got {t.shape} and {p.shape}")
    if len(t) < 2:
        raise ValueError(f"{op}: needs at least 2 samples, got {len(t)}")
    if not (np.isfinite(t).all() and np.isfinite(p).all()):
        raise ValueError(f"{op}: inputs contain NaN or infinity")
    ss_res = ((t - p) ** 2).sum(axis=0)
    ss_tot = ((t - t.mean(axis=0)) ** 2).sum(axis=0)
    constant = ss_tot == 0
    r2 = np.where(constant, np.where(ss_res == 0, 1.0, 0.0), 1.0 - ss_res / np.where(constant, 1.0, ss_tot))
    return float(np.mean(r2))


# ----------------------------------------------------------------------------- language models
def perplexity(nll) -> float:
    """exp(mean negative log-likelihood), the NLL in nats (natural log), as cross-entropy gives.

    ``nll`` is the mean NLL per token (a number, e.g. ``F.cross_entropy(...).item()``) or an
    array of per-token NLLs, which are averaged first. A model that guesses uniformly among V
    tokens has NLL ln V and perplexity V. Returns ``inf`` when exp overflows (mean NLL > ~709.78).
    """
    op = "perplexity"
    values = to_array(op, "nll", nll).astype(np.float64).ravel()
    if values.size == 0:
        raise ValueError(f"{op}: empty input (no token losses)")
    if np.isnan(values).any():
        raise ValueError(f"{op}: nll contains NaN")
    if (values < 0).any():
        raise ValueError(f"{op}: a negative log-likelihood of a discrete distribution is >= 0, got {values.min()!r}")
    mean = float(values.mean())
    return math.exp(mean) if mean < 709.78 else math.inf


def perplexity_from_logits(logits, targets) -> float:
    """Perplexity of next-token logits [..., V] against integer targets [...].

    NLL_i = logsumexp(z_i) - z_i[y_i]      (computed stably, shifting by max z_i)
    perplexity = exp(mean_i NLL_i)
    """
    op = "perplexity_from_logits"
    z = to_array(op, "logits", logits).astype(np.float64)
    y = _as_labels(to_array(op, "targets", targets), op, "targets")
    if z.ndim < 1 or z.shape[:-1] != y.shape:
        raise ValueError(f"{op}: logits must be [..., V] with targets [...], got {z.shape} and {y.shape}")
    if y.size == 0:
        raise ValueError(f"{op}: empty input (no tokens)")
    vocab = z.shape[-1]
    if y.min() < 0 or y.max() >= vocab:
        raise ValueError(f"{op}: targets must lie in [0, {vocab}), found {y.min()}..{y.max()}")
    if not np.isfinite(z).all():
        raise ValueError(f"{op}: logits contain NaN or infinity")
    shift = z.max(axis=-1, keepdims=True)
    logsumexp = shift[..., 0] + np.log(np.exp(z - shift).sum(axis=-1))
    picked = np.take_along_axis(z, y[..., None], axis=-1)[..., 0]
    # NLL >= 0 exactly; rounding can leave -1e-16 when one logit dominates.
    return perplexity(np.maximum(logsumexp - picked, 0.0))

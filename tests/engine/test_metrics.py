"""engine.metrics: hand-worked examples, NumPy reference implementations, edge cases."""

import math

import numpy as np
import pytest
from assertions import assert_raises_naming
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.metrics import (
    accuracy,
    confusion_matrix,
    f1_score,
    perplexity,
    perplexity_from_logits,
    precision,
    r2_score,
    recall,
    roc_auc,
    roc_curve,
)


class DuckTensor:
    """Stands in for engine.Tensor: metrics read any object's ``.data`` ndarray."""

    def __init__(self, values):
        self.data = np.asarray(values)


# ----------------------------------------------------------------------------- hand-worked
# Binary: pairs (true, pred) = (1,1) (1,1) (1,0) (1,0) (0,1) then five (0,0)
#   TP = 2, FN = 2, FP = 1, TN = 5
#   accuracy  = (TP + TN) / 10 = 7/10
#   precision = TP / (TP + FP) = 2/3
#   recall    = TP / (TP + FN) = 2/4
#   F1        = 2TP / (2TP + FP + FN) = 4/7  (= 2 * (2/3)(1/2) / (2/3 + 1/2))
BIN_TRUE = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
BIN_PRED = [1, 1, 0, 0, 1, 0, 0, 0, 0, 0]


def test_binary_metrics_by_hand():
    assert accuracy(BIN_TRUE, BIN_PRED) == pytest.approx(7 / 10)
    assert precision(BIN_TRUE, BIN_PRED) == pytest.approx(2 / 3)
    assert recall(BIN_TRUE, BIN_PRED) == pytest.approx(1 / 2)
    assert f1_score(BIN_TRUE, BIN_PRED) == pytest.approx(4 / 7)
    # Rows: true 0, true 1; columns: predicted 0, predicted 1.
    np.testing.assert_array_equal(confusion_matrix(BIN_TRUE, BIN_PRED), [[5, 1], [2, 2]])


def test_pos_label_swaps_the_roles():
    # With 0 as the positive class: TP = 5 (true 0, pred 0), FP = 2, FN = 1.
    assert precision(BIN_TRUE, BIN_PRED, pos_label=0) == pytest.approx(5 / 7)
    assert recall(BIN_TRUE, BIN_PRED, pos_label=0) == pytest.approx(5 / 6)


# Multiclass: y_true = 0 0 0 1 1 2 2 2 2, y_pred = 0 1 1 1 2 2 2 2 0
#   C = [[1, 2, 0],     true 0: predicted 0 once, 1 twice
#        [0, 1, 1],     true 1: predicted 1 once, 2 once
#        [1, 0, 3]]     true 2: predicted 0 once, 2 three times
#   column sums (predicted counts) 2, 3, 4; row sums (support) 3, 2, 4
#   class 0: TP 1, FP 1, FN 2 -> P 1/2, R 1/3, F1 2/5
#   class 1: TP 1, FP 2, FN 1 -> P 1/3, R 1/2, F1 2/5
#   class 2: TP 3, FP 1, FN 1 -> P 3/4, R 3/4, F1 3/4
MC_TRUE = [0, 0, 0, 1, 1, 2, 2, 2, 2]
MC_PRED = [0, 1, 1, 1, 2, 2, 2, 2, 0]


def test_multiclass_metrics_by_hand():
    np.testing.assert_array_equal(confusion_matrix(MC_TRUE, MC_PRED), [[1, 2, 0], [0, 1, 1], [1, 0, 3]])
    np.testing.assert_allclose(precision(MC_TRUE, MC_PRED, average=None), [1 / 2, 1 / 3, 3 / 4])
    np.testing.assert_allclose(recall(MC_TRUE, MC_PRED, average=None), [1 / 3, 1 / 2, 3 / 4])
    np.testing.assert_allclose(f1_score(MC_TRUE, MC_PRED, average=None), [2 / 5, 2 / 5, 3 / 4])
    # macro: plain mean over classes. (1/2 + 1/3 + 3/4) / 3 = 19/36
    assert precision(MC_TRUE, MC_PRED, average="macro") == pytest.approx(19 / 36)
    # macro F1 averages the per-class F1s: (2/5 + 2/5 + 3/4) / 3 = 31/60
    assert f1_score(MC_TRUE, MC_PRED, average="macro") == pytest.approx(31 / 60)
    # weighted by support 3, 2, 4: (3/2 + 2/3 + 3) / 9 = 31/54
    assert precision(MC_TRUE, MC_PRED, average="weighted") == pytest.approx(31 / 54)
    # micro pools the counts: TP 5 of 9 predictions, which is the accuracy 5/9
    for metric in (precision, recall, f1_score):
        assert metric(MC_TRUE, MC_PRED, average="micro") == pytest.approx(5 / 9)
    assert accuracy(MC_TRUE, MC_PRED) == pytest.approx(5 / 9)


def test_scores_become_argmax_predictions():
    logits = np.array([[2.0, 0.1, 0.3], [0.0, -1.0, 3.0], [0.2, 0.9, 0.1]])  # argmax 0, 2, 1
    assert accuracy([0, 2, 2], logits) == pytest.approx(2 / 3)
    np.testing.assert_array_equal(confusion_matrix([0, 2, 2], logits, num_classes=3), [[1, 0, 0], [0, 0, 0], [0, 1, 1]])


def test_inputs_may_be_lists_arrays_floats_bools_or_tensors():
    expected = 2 / 3
    assert precision(np.array(BIN_TRUE, dtype=bool), np.array(BIN_PRED, dtype=bool)) == (pytest.approx(expected))
    assert precision(np.array(BIN_TRUE, dtype=np.float32), BIN_PRED) == pytest.approx(expected)
    assert precision(DuckTensor(BIN_TRUE), DuckTensor(BIN_PRED)) == pytest.approx(expected)
    assert roc_auc(DuckTensor([0, 1]), DuckTensor([0.2, 0.7])) == 1.0
    assert r2_score(DuckTensor([1.0, 2.0, 3.0]), [1.0, 2.0, 3.0]) == 1.0


# ----------------------------------------------------------------------------- NumPy references
def _reference_counts(t, p, cls):
    tp = sum(1 for a, b in zip(t, p) if a == cls and b == cls)
    fp = sum(1 for a, b in zip(t, p) if a != cls and b == cls)
    fn = sum(1 for a, b in zip(t, p) if a == cls and b != cls)
    return tp, fp, fn


def _ratio(num, den):
    return num / den if den else 0.0


label_pairs = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 4), min_size=n, max_size=n), st.lists(st.integers(0, 4), min_size=n, max_size=n)
    )
)


@settings(max_examples=150, deadline=None)
@given(label_pairs)
def test_multiclass_metrics_match_python_reference(pair):
    t, p = pair
    classes = sorted(set(t) | set(p))
    counts = [_reference_counts(t, p, c) for c in classes]
    ref_p = [_ratio(tp, tp + fp) for tp, fp, fn in counts]
    ref_r = [_ratio(tp, tp + fn) for tp, fp, fn in counts]
    ref_f = [_ratio(2 * tp, 2 * tp + fp + fn) for tp, fp, fn in counts]
    np.testing.assert_allclose(precision(t, p, average=None), ref_p)
    np.testing.assert_allclose(recall(t, p, average=None), ref_r)
    np.testing.assert_allclose(f1_score(t, p, average=None), ref_f)
    assert f1_score(t, p, average="macro") == pytest.approx(np.mean(ref_f))
    support = [t.count(c) for c in classes]
    assert recall(t, p, average="weighted") == pytest.approx(np.dot(support, ref_r) / len(t))
    assert precision(t, p, average="micro") == pytest.approx(accuracy(t, p))
    ref_c = np.zeros((5, 5), dtype=int)
    for a, b in zip(t, p):
        ref_c[a, b] += 1
    np.testing.assert_array_equal(confusion_matrix(t, p, num_classes=5), ref_c)


def _pairwise_auc(t, s):
    """Brute force over every (positive, negative) pair: 1 if the positive scores higher,
    1/2 for a tie."""
    pos, neg = s[t == 1], s[t == 0]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return wins / (len(pos) * len(neg))


def test_roc_auc_by_hand():
    # Positives 0.35, 0.8; negatives 0.1, 0.4. Pairs won: 0.35>0.1, 0.8>0.1, 0.8>0.4; lost:
    # 0.35<0.4. AUC = 3/4.
    assert roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == pytest.approx(0.75)
    # With ties. Positives 0.5, 0.9, 0.2; negatives 0.2, 0.5:
    # 0.5: beats 0.2, ties 0.5 -> 1.5; 0.9: beats both -> 2; 0.2: ties 0.2, loses -> 0.5.
    # (1.5 + 2 + 0.5) / 6 = 2/3
    assert roc_auc([0, 1, 0, 1, 1], [0.2, 0.5, 0.5, 0.9, 0.2]) == pytest.approx(2 / 3)
    assert roc_auc([0, 0, 1, 1], [0.3, 0.3, 0.3, 0.3]) == pytest.approx(0.5)  # all tied
    assert roc_auc([1, 1, 0, 0], [0.9, 0.8, 0.2, 0.1]) == 1.0
    assert roc_auc([1, 1, 0, 0], [0.1, 0.2, 0.8, 0.9]) == 0.0


def test_roc_curve_by_hand():
    fpr, tpr, thresholds = roc_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    np.testing.assert_allclose(thresholds, [np.inf, 0.8, 0.4, 0.35, 0.1])
    np.testing.assert_allclose(tpr, [0, 0.5, 0.5, 1, 1])
    np.testing.assert_allclose(fpr, [0, 0, 0.5, 0.5, 1])


@pytest.mark.parametrize("seed", range(8))
def test_roc_auc_matches_pairwise_brute_force_with_many_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 200))
    t = rng.integers(0, 2, n)
    t[:2] = [0, 1]  # both classes present
    s = rng.integers(0, 6, n).astype(float)  # few distinct values: many ties
    assert roc_auc(t, s) == pytest.approx(_pairwise_auc(t, s), abs=1e-12)
    fpr, tpr, _ = roc_curve(t, s)
    assert np.trapezoid(tpr, fpr) == pytest.approx(_pairwise_auc(t, s), abs=1e-12)
    continuous = s + rng.normal(size=n)
    assert roc_auc(t, continuous) == pytest.approx(_pairwise_auc(t, continuous), abs=1e-12)


def test_roc_auc_is_invariant_to_monotone_transforms():
    rng = np.random.default_rng(1)
    t = rng.integers(0, 2, 300)
    s = rng.normal(size=300) + t
    assert roc_auc(t, s) == pytest.approx(roc_auc(t, 1 / (1 + np.exp(-s))), abs=1e-12)


def test_r2_by_hand():
    # ȳ = 2.5; SS_tot = 2.25 + 0.25 + 0.25 + 2.25 = 5; SS_res = (4 - 5)² = 1; R² = 1 - 1/5
    assert r2_score([1, 2, 3, 4], [1, 2, 3, 5]) == pytest.approx(0.8)
    assert r2_score([1, 2, 3, 4], [2.5] * 4) == pytest.approx(0.0)  # the mean predictor
    # predicting 4, 3, 2, 1: SS_res = 9 + 1 + 1 + 9 = 20 -> 1 - 20/5 = -3
    assert r2_score([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-3.0)
    # two outputs averaged: column 0 as above (0.8), column 1 perfect (1.0)
    y = np.array([[1, 0], [2, 1], [3, 0], [4, 1]], dtype=float)
    yhat = np.array([[1, 0], [2, 1], [3, 0], [5, 1]], dtype=float)
    assert r2_score(y, yhat) == pytest.approx(0.9)


def test_r2_matches_numpy_reference():
    rng = np.random.default_rng(3)
    y = rng.normal(size=50)
    yhat = y + 0.3 * rng.normal(size=50)
    ref = 1 - np.sum((y - yhat) ** 2) / np.sum((y - y.mean()) ** 2)
    assert r2_score(y, yhat) == pytest.approx(ref, rel=1e-12)


def test_perplexity():
    # Guessing uniformly among 10 tokens: NLL = ln 10 per token, perplexity 10.
    assert perplexity(math.log(10)) == pytest.approx(10)
    assert perplexity_from_logits(np.zeros((3, 4, 10)), np.zeros((3, 4), dtype=int)) == (pytest.approx(10))
    # Per-token NLLs are averaged before exp: exp((ln 2 + ln 8) / 2) = sqrt(16) = 4.
    assert perplexity([math.log(2), math.log(8)]) == pytest.approx(4)
    assert perplexity(DuckTensor(np.float32(0.0))) == 1.0  # certain and right
    # logits (0, ln 3): p(token 1) = 3/4, NLL = ln(4/3), perplexity 4/3.
    assert perplexity_from_logits([[0.0, math.log(3)]], [1]) == pytest.approx(4 / 3)


def test_perplexity_from_logits_matches_reference_and_is_stable():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(6, 5)) * 3
    y = rng.integers(0, 5, 6)
    probs = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    ref = np.exp(-np.mean(np.log(probs[np.arange(6), y])))
    assert perplexity_from_logits(z, y) == pytest.approx(ref, rel=1e-12)
    # Extreme logits: no overflow, no NaN.
    assert perplexity_from_logits([[1000.0, 0.0]], [0]) == 1.0
    assert perplexity_from_logits([[-1000.0, 0.0, -1000.0]], [1]) == 1.0
    assert perplexity_from_logits([[1000.0, 0.0]], [1]) == math.inf  # documented overflow


# ----------------------------------------------------------------------------- edge cases
def test_zero_denominators_give_the_documented_value():
    # Nothing predicted positive: precision = 0/0 -> zero_division (0.0 by default, or 1.0).
    assert precision([1, 0, 1], [0, 0, 0]) == 0.0
    assert precision([1, 0, 1], [0, 0, 0], zero_division=1.0) == 1.0
    # No true positive exists: recall = 0/0 -> 0.0.
    assert recall([0, 0, 0], [1, 0, 0]) == 0.0
    # One class only, all negative in both: F1 = 0/0 -> 0.0.
    assert f1_score([0, 0], [0, 0]) == 0.0
    # Per class, a class predicted but never true has recall 0/0 -> 0.0 (and no NaN anywhere).
    r = recall([0, 0, 1], [0, 2, 1], average=None)
    np.testing.assert_allclose(r, [0.5, 1.0, 0.0])
    assert not np.isnan(f1_score([0, 0, 1], [0, 2, 1], average=None)).any()


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: accuracy([], []), ["accuracy", "empty"]),
        (lambda: accuracy([0, 1], [0, 1, 1]), ["2", "3"]),
        (lambda: accuracy([0, 1], [0.2, 0.9]), ["0.2", "threshold"]),
        (lambda: accuracy([0, 1], np.array([[0.2], [0.9]])), ["(2, 1)"]),
        (lambda: precision([0, 1, 2], [0, 1, 2]), ["binary", "[0, 1, 2]", "macro"]),
        (lambda: precision([0, 2], [0, 2]), ["pos_label=1", "[0, 2]"]),
        (lambda: precision([0, 1], [0, 1], average="samples"), ["average"]),
        (lambda: precision([0, 1], [0, 1], zero_division=float("nan")), ["zero_division"]),
        (lambda: confusion_matrix([0, 3], [0, 1], num_classes=3), ["3", "num_classes=3"]),
        (lambda: confusion_matrix([0, -1], [0, 1]), ["-1"]),
        (lambda: roc_auc([1, 1, 1], [0.2, 0.3, 0.4]), ["only one class"]),
        (lambda: roc_auc([0, 2], [0.2, 0.3]), ["binary", "[0, 2]"]),
        (lambda: roc_auc([0, 1], [0.2, float("nan")]), ["NaN"]),
        (lambda: roc_auc([], []), ["empty"]),
        (lambda: roc_auc([0, 1], np.ones((2, 2))), ["probs[:, 1]"]),
        (lambda: r2_score([1.0], [1.0]), ["at least 2"]),
        (lambda: r2_score([1.0, 2.0], [1.0, 2.0, 3.0]), ["(2,)", "(3,)"]),
        (lambda: r2_score([1.0, float("nan")], [1.0, 2.0]), ["NaN"]),
        (lambda: perplexity([]), ["empty"]),
        (lambda: perplexity(-0.5), ["-0.5"]),
        (lambda: perplexity(float("nan")), ["NaN"]),
        (lambda: perplexity_from_logits(np.zeros((2, 3)), [0, 3]), ["[0, 3)"]),
    ],
)
def test_degenerate_input_raises_a_clear_error(call, words):
    assert_raises_naming(call, words)


def test_constant_target_r2_is_documented_not_nan():
    assert r2_score([2.0, 2.0, 2.0], [2.0, 2.0, 2.0]) == 1.0
    assert r2_score([2.0, 2.0, 2.0], [2.0, 2.5, 2.0]) == 0.0


def test_confusion_matrix_sizes():
    assert confusion_matrix([], [], num_classes=3).shape == (3, 3)
    assert confusion_matrix([], [], num_classes=3).sum() == 0
    c = confusion_matrix([1, 1], [1, 1], num_classes=4)
    assert c.dtype == np.int64 and c.shape == (4, 4) and c[1, 1] == 2 and c.sum() == 2


def test_engine_tensors_are_accepted():
    import engine

    logits = engine.Tensor(np.array([[2.0, 0.1], [0.3, 1.5], [0.9, 0.2]]), requires_grad=True)
    targets = engine.Tensor(np.array([0, 1, 1]))
    assert accuracy(targets, logits) == pytest.approx(2 / 3)  # predictions 0, 1, 0
    assert roc_auc(engine.tensor([0.0, 1.0, 1.0]), engine.tensor([0.2, 0.8, 0.1])) == 0.5
    assert perplexity(engine.tensor([math.log(3.0)])) == pytest.approx(3.0)

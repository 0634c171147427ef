"""Losses against torch.nn.functional (pseudo-Huber against a torch composition of its formula),
gradcheck, every reduction, class weights, ignore_index, label smoothing, extremes and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import random_arrays, require_torch
from torch_compare import check_op, oracle

import engine
import engine.functional as F
from engine import Tensor

pytestmark = [pytest.mark.oracle, pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning")]

REDUCTIONS = ["mean", "sum", "none"]
RNG = np.random.default_rng(50)
N, C = 4, 5
LOGITS = RNG.standard_normal((N, C))
TARGET = RNG.standard_normal((N, C))
PROBS = RNG.uniform(0.05, 0.95, (N, C))
SOFT = RNG.uniform(0.0, 1.0, (N, C))
CLASS_W = RNG.uniform(0.5, 2.0, C)
ELEMENT_W = RNG.uniform(0.5, 2.0, (N, C))
POS_W = RNG.uniform(0.5, 3.0, C)
INDICES = np.array([1, 0, 4, 1])
INDICES_IGNORED = np.array([1, -100, 4, 1])
DIST = RNG.dirichlet(np.ones(C), N)  # rows of class probabilities
LOGITS_ND = RNG.standard_normal((2, C, 3, 2))
INDICES_ND = RNG.integers(0, C, (2, 3, 2))
DIST_ND = np.moveaxis(RNG.dirichlet(np.ones(C), (2, 3, 2)), -1, 1).copy()


def TF():
    return require_torch().nn.functional


def T(array):
    return require_torch().tensor(array)


def torch_pseudo_huber(x, y, reduction="mean", delta=1.0):
    per = delta**2 * (((x - y) / delta) ** 2 + 1).sqrt() - delta**2
    return {"mean": per.mean, "sum": per.sum, "none": lambda: per}[reduction]()


# (id, the name in engine.functional and torch.nn.functional, keyword arguments, inputs): arrays
# among the keyword arguments reach torch as tensors. The pseudo-Huber loss has no torch function:
# its oracle is its formula written in torch (torch_pseudo_huber).
LOSSES = [
    ("mse", "mse_loss", {}, [LOGITS, TARGET]),
    ("l1", "l1_loss", {}, [LOGITS, TARGET]),
    ("huber", "huber_loss", {}, [LOGITS, TARGET]),
    ("huber_delta", "huber_loss", {"delta": 0.6}, [LOGITS, TARGET]),
    ("pseudo_huber", "pseudo_huber_loss", {}, [LOGITS, TARGET]),
    ("pseudo_huber_delta", "pseudo_huber_loss", {"delta": 0.3}, [LOGITS, TARGET]),
    ("bce", "binary_cross_entropy", {}, [PROBS, SOFT]),
    ("bce_weight", "binary_cross_entropy", {"weight": ELEMENT_W}, [PROBS, SOFT]),
    ("bce_logits", "binary_cross_entropy_with_logits", {}, [LOGITS, SOFT]),
    ("bce_logits_weight", "binary_cross_entropy_with_logits", {"weight": ELEMENT_W}, [LOGITS, SOFT]),
    ("bce_logits_pos_weight", "binary_cross_entropy_with_logits", {"pos_weight": POS_W}, [LOGITS, SOFT]),
    (
        "bce_logits_both_weights",
        "binary_cross_entropy_with_logits",
        {"weight": CLASS_W, "pos_weight": POS_W},
        [LOGITS, SOFT],
    ),
    ("ce_indices", "cross_entropy", {}, [LOGITS, INDICES]),
    ("ce_ignore_index", "cross_entropy", {}, [LOGITS, INDICES_IGNORED]),
    ("ce_custom_ignore_index", "cross_entropy", {"ignore_index": 1}, [LOGITS, INDICES]),
    ("ce_weight", "cross_entropy", {"weight": CLASS_W}, [LOGITS, INDICES_IGNORED]),
    ("ce_label_smoothing", "cross_entropy", {"label_smoothing": 0.2}, [LOGITS, INDICES_IGNORED]),
    (
        "ce_weight_smoothing",
        "cross_entropy",
        {"weight": CLASS_W, "label_smoothing": 0.1},
        [LOGITS, INDICES_IGNORED],
    ),
    ("ce_probabilities", "cross_entropy", {}, [LOGITS, DIST]),
    (
        "ce_probabilities_weight_smoothing",
        "cross_entropy",
        {"weight": CLASS_W, "label_smoothing": 0.3},
        [LOGITS, DIST],
    ),
    ("ce_nd_indices", "cross_entropy", {"weight": CLASS_W, "label_smoothing": 0.05}, [LOGITS_ND, INDICES_ND]),
    ("ce_nd_probabilities", "cross_entropy", {}, [LOGITS_ND, DIST_ND]),
    ("ce_single_sample", "cross_entropy", {}, [LOGITS[0], np.array(3)]),
    ("nll", "nll_loss", {}, [LOGITS, INDICES_IGNORED]),
    ("nll_weight", "nll_loss", {"weight": CLASS_W}, [LOGITS, INDICES_IGNORED]),
    ("nll_nd", "nll_loss", {"ignore_index": 2}, [LOGITS_ND, INDICES_ND]),
]


def _engine_loss(name, kwargs, reduction):
    return lambda x, t: getattr(F, name)(x, t, reduction=reduction, **kwargs)


def _torch_loss(name, kwargs, reduction):
    """The torch call of a case; it reaches torch only when called (collection runs without torch)."""
    if name == "pseudo_huber_loss":
        return lambda x, t: torch_pseudo_huber(x, t, reduction, **kwargs)

    def loss(x, t):
        as_torch = {k: T(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        return getattr(TF(), name)(x, t, reduction=reduction, **as_torch)

    return loss


CASES = [
    (case, r, _engine_loss(name, kw, r), _torch_loss(name, kw, r), inputs)
    for case, name, kw, inputs in LOSSES
    for r in REDUCTIONS
]


@pytest.mark.parametrize("name, reduction, fn, torch_fn, inputs", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_loss_matches_torch_and_gradcheck(name, reduction, fn, torch_fn, inputs):
    check_op(fn, torch_fn, inputs)


KL_CASES = [(r, lt) for r in ("batchmean", "mean", "sum", "none") for lt in (False, True)]


@pytest.mark.parametrize("reduction, log_target", KL_CASES, ids=[f"{r}-log_target={lt}" for r, lt in KL_CASES])
def test_kl_div(reduction, log_target):
    log_q = np.log(RNG.dirichlet(np.ones(C), N))
    p = RNG.dirichlet(np.ones(C), N)
    target = np.log(p) if log_target else p
    check_op(
        lambda x, t: F.kl_div(x, t, reduction=reduction, log_target=log_target),
        lambda x, t: TF().kl_div(x, t, reduction=reduction, log_target=log_target),
        [log_q, target],
    )


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none"])
def test_kl_div_with_zero_target_probabilities(reduction):
    """p = 0 terms contribute 0 (0·log 0 = 0); the input's gradient there is 0."""
    log_q = np.log(RNG.dirichlet(np.ones(C), N))
    p = RNG.dirichlet(np.ones(C), N)
    p[0, 1] = p[2, 3] = 0.0
    out, _ = oracle(
        lambda x, t: F.kl_div(x, t, reduction=reduction),
        lambda x, t: TF().kl_div(x, t, reduction=reduction),
        [log_q, p],
        grad=[True, False],
    )
    assert np.all(np.isfinite(out.data))


def test_kl_div_of_a_distribution_with_itself_is_zero():
    p = RNG.dirichlet(np.ones(C), N)
    assert abs(F.kl_div(Tensor(np.log(p)), Tensor(p)).item()) < 1e-15


# ---------------------------------------------------------------- the closed-form gradients
def test_cross_entropy_gradient_is_softmax_minus_one_hot():
    z = Tensor(LOGITS, requires_grad=True)
    F.cross_entropy(z, INDICES, reduction="sum").backward()
    p = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(z.grad.numpy(), p - np.eye(C)[INDICES], rtol=1e-12, atol=1e-15)


def test_bce_with_logits_gradient_is_sigmoid_minus_target():
    z = Tensor(LOGITS, requires_grad=True)
    F.binary_cross_entropy_with_logits(z, SOFT, reduction="sum").backward()
    np.testing.assert_allclose(z.grad.numpy(), 1 / (1 + np.exp(-LOGITS)) - SOFT, rtol=1e-12, atol=1e-15)


def test_all_targets_ignored_gives_nan_as_torch_and_a_zero_gradient():
    z = Tensor(LOGITS, requires_grad=True)
    loss = F.cross_entropy(z, np.full(N, -100))
    loss.backward()
    assert np.isnan(loss.item()) and np.all(z.grad.numpy() == 0)  # the mean of no samples: 0/0


# ---------------------------------------------------------------- extremes
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cross_entropy_with_logits_of_1e4(dtype):
    logits = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 0.0], [1e4, 1e4, -1e4]], dtype=dtype)
    target = np.array([1, 1, 2])
    _check_extreme(
        lambda z: F.cross_entropy(z, target, reduction="none"),
        lambda z: TF().cross_entropy(z, T(target), reduction="none"),
        logits,
    )
    _check_extreme(
        lambda z: F.cross_entropy(z, target, label_smoothing=0.1),
        lambda z: TF().cross_entropy(z, T(target), label_smoothing=0.1),
        logits,
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_bce_with_logits_of_1e4(dtype):
    z = np.array([1e4, -1e4, 1e4, -1e4, 0.0], dtype=dtype)
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.5], dtype=dtype)
    _check_extreme(
        lambda t: F.binary_cross_entropy_with_logits(t, y, reduction="none"),
        lambda t: TF().binary_cross_entropy_with_logits(t, T(y), reduction="none"),
        z,
    )
    pw = np.array([2.0], dtype=dtype)
    _check_extreme(
        lambda t: F.binary_cross_entropy_with_logits(t, y, reduction="none", pos_weight=pw),
        lambda t: TF().binary_cross_entropy_with_logits(t, T(y), reduction="none", pos_weight=T(pw)),
        z,
    )


def test_bce_at_p_0_and_1_clamps_the_log_at_minus_100_like_torch():
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.3])
    y = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    # where p(1 − p) is clamped at 1e-12 the gradient is ~1e12: torch rounds that clamp at ~4e-9
    out, _ = _check_extreme(
        lambda t: F.binary_cross_entropy(t, y, reduction="none"),
        lambda t: TF().binary_cross_entropy(t, T(y), reduction="none"),
        p,
        rtol=1e-8,
    )
    np.testing.assert_array_equal(out.data[:4], [0.0, 0.0, 100.0, 100.0])


def _check_extreme(fn, torch_fn, x, rtol=1e-10):
    torch = require_torch()
    e, t = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow/divide RuntimeWarning
        out = fn(e)
        g = np.random.default_rng(1).standard_normal(out.shape).astype(x.dtype)
        out.backward(g)
    ref = torch_fn(t)
    ref.backward(torch.tensor(g))
    assert np.all(np.isfinite(out.data)) and np.all(np.isfinite(e.grad.numpy()))
    assert out.dtype == x.dtype and e.grad.dtype == x.dtype
    tol = dict(rtol=rtol, atol=1e-10) if x.dtype == np.float64 else dict(rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(out.data, ref.detach().numpy(), **tol)
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), **tol)
    return out, ref


# ---------------------------------------------------------------- dtypes
@pytest.mark.parametrize(
    "fn",
    [
        lambda x: F.mse_loss(x, np.zeros(3, np.float32)),
        lambda x: F.huber_loss(x, np.zeros(3, np.float32)),
        lambda x: F.pseudo_huber_loss(x, np.zeros(3, np.float32)),
        lambda x: F.binary_cross_entropy_with_logits(x, np.ones(3, np.float32)),
        lambda x: F.binary_cross_entropy(x.sigmoid(), np.ones(3, np.float32)),
        lambda x: F.cross_entropy(x.reshape(1, 3), np.array([2])),
        lambda x: F.nll_loss(x.reshape(1, 3), np.array([2])),
        lambda x: F.kl_div(x, np.full(3, 1 / 3, np.float32)),
    ],
)
def test_float32_losses_stay_float32(fn):
    x = Tensor(np.array([0.2, -0.5, 1.0], dtype=np.float32), requires_grad=True)
    loss = fn(x)
    loss.backward()
    assert loss.dtype == np.float32 and x.grad.dtype == np.float32


MIXED = {  # loss -> (engine, torch, result dtype) for a float32 input and a float64 target
    "mse": (F.mse_loss, "mse_loss", np.float64),
    "l1": (F.l1_loss, "l1_loss", np.float64),
    "smooth_l1": (
        lambda x, y: F.smooth_l1_loss(x, y, beta=0.5),
        lambda tf, x, y: tf.smooth_l1_loss(x, y, beta=0.5),
        np.float64,
    ),
    "huber": (lambda x, y: F.huber_loss(x, y, delta=0.5), lambda tf, x, y: tf.huber_loss(x, y, delta=0.5), np.float32),
    "bce_with_logits": (F.binary_cross_entropy_with_logits, "binary_cross_entropy_with_logits", np.float64),
    "cross_entropy": (
        lambda x, y: F.cross_entropy(x, y.softmax(-1)),
        lambda tf, x, y: tf.cross_entropy(x, y.softmax(-1)),
        np.float64,
    ),
    "kl_div": (
        lambda x, y: F.kl_div(x, y.softmax(-1), reduction="batchmean"),
        lambda tf, x, y: tf.kl_div(x, y.softmax(-1), reduction="batchmean"),
        np.float64,
    ),
}


@pytest.mark.parametrize("name", list(MIXED))
def test_float32_input_with_float64_target_follows_each_torch_loss(name, torch):
    import torch.nn.functional as tf

    ours, theirs, dtype = MIXED[name]
    a, b = random_arrays((3, 4), (3, 4), seed=7)
    b = 1 / (1 + np.exp(-b))  # in (0, 1): valid for every loss
    x, y = Tensor(a.astype(np.float32), requires_grad=True), Tensor(b)
    tx, ty = torch.tensor(a.astype(np.float32), requires_grad=True), torch.tensor(b)
    out = ours(x, y)
    ref = getattr(tf, theirs)(tx, ty) if isinstance(theirs, str) else theirs(tf, tx, ty)
    assert out.dtype == dtype == np.dtype(str(ref.dtype).removeprefix("torch."))
    if name == "huber":  # torch 2.13's backward fails here ("Found dtype Double but expected Float")
        ref = theirs(tf, tx, ty.float())
    (g,) = random_arrays((), seed=8)
    out.backward(g)
    ref.backward(torch.tensor(g, dtype=ref.dtype))
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(out.data, ref.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_binary_cross_entropy_refuses_mixed_dtypes_as_torch(torch):
    import torch.nn.functional as tf

    p, y = np.full(3, 0.5, np.float32), np.ones(3)
    with pytest.raises(RuntimeError):
        tf.binary_cross_entropy(torch.tensor(p), torch.tensor(y))
    with pytest.raises(RuntimeError, match="binary_cross_entropy: input is float32 but target is float64"):
        F.binary_cross_entropy(Tensor(p), Tensor(y))


# ---------------------------------------------------------------- errors
# The losses of an input and a target of one shape, compared element by element.
ELEMENTWISE_LOSSES = [
    "mse_loss",
    "l1_loss",
    "huber_loss",
    "pseudo_huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
]


@pytest.mark.parametrize("name", [*ELEMENTWISE_LOSSES, "kl_div"])
def test_shape_mismatch_names_the_loss_and_both_shapes(name):
    with pytest.raises(ValueError, match=rf"{name}: input shape \(4, 1\) and target shape \(4,\) differ"):
        getattr(F, name)(Tensor(np.full((4, 1), 0.5)), Tensor(np.full(4, 0.5)))


@pytest.mark.parametrize("name", ELEMENTWISE_LOSSES)
def test_unknown_reduction_is_named(name):
    with pytest.raises(ValueError, match=rf"{name}: reduction must be one of .* got 'avg'"):
        getattr(F, name)(Tensor(np.full(3, 0.5)), Tensor(np.full(3, 0.5)), reduction="avg")


def test_cross_entropy_errors():
    z = Tensor(LOGITS)
    with pytest.raises(
        ValueError, match=r"cross_entropy: target of class indices has shape \(3,\) but the input implies \(4,\)"
    ):
        F.cross_entropy(z, np.array([0, 1, 2]))
    with pytest.raises(IndexError, match="cross_entropy: target class 5 is out of range for 5 classes"):
        F.cross_entropy(z, np.array([0, 1, 5, 2]))
    with pytest.raises(IndexError, match="cross_entropy: target class -1 is out of range"):
        F.cross_entropy(z, np.array([0, 1, -1, 2]))
    with pytest.raises(ValueError, match=r"cross_entropy: probability targets must have the input's shape \(4, 5\)"):
        F.cross_entropy(z, np.full((4, 4), 0.25))
    with pytest.raises(ValueError, match=r"cross_entropy: weight must have one entry per class \(5,\), got \(4,\)"):
        F.cross_entropy(z, INDICES, weight=np.ones(4))
    with pytest.raises(ValueError, match="cross_entropy: label_smoothing must be in"):
        F.cross_entropy(z, INDICES, label_smoothing=1.5)
    with pytest.raises(TypeError, match="cross_entropy: logits must be floating point"):
        F.cross_entropy(Tensor(np.ones((2, 3), dtype=np.int64)), np.array([0, 1]))
    with pytest.raises(ValueError, match="cross_entropy: input must have a class dimension"):
        F.cross_entropy(Tensor(1.0), np.array(0))


def test_nll_and_bce_and_kl_errors():
    with pytest.raises(TypeError, match="nll_loss: target must hold integer class indices"):
        F.nll_loss(Tensor(LOGITS), np.zeros(N))
    with pytest.raises(ValueError, match=r"binary_cross_entropy: input must be probabilities in \[0, 1\], found 1.5"):
        F.binary_cross_entropy(Tensor(np.array([0.5, 1.5])), Tensor(np.array([0.0, 1.0])))
    with pytest.raises(ValueError, match="binary_cross_entropy: input must be probabilities.*found nan"):
        F.binary_cross_entropy(Tensor(np.array([0.5, np.nan])), Tensor(np.array([0.0, 1.0])))
    with pytest.raises(
        ValueError, match=r"binary_cross_entropy_with_logits: pos_weight of shape \(3,\) does not broadcast to \(4, 5\)"
    ):
        F.binary_cross_entropy_with_logits(Tensor(LOGITS), Tensor(SOFT), pos_weight=np.ones(3))
    with pytest.raises(ValueError, match="kl_div: target probabilities must be ≥ 0"):
        F.kl_div(Tensor(np.zeros(2)), Tensor(np.array([0.5, -0.1])))
    with pytest.raises(ValueError, match="huber_loss: delta must be positive"):
        F.huber_loss(Tensor(np.zeros(2)), Tensor(np.zeros(2)), delta=0)


PROBABILITY_ROWS = [c for c in CASES if "probabilities" in c[0]]


@pytest.mark.parametrize(
    "name, reduction, fn, torch_fn, inputs", PROBABILITY_ROWS, ids=[f"{c[0]}-{c[1]}" for c in PROBABILITY_ROWS]
)
def test_probability_targets_as_constants_use_the_fused_op(name, reduction, fn, torch_fn, inputs):
    """A target that needs no gradient (the usual case) goes through the fused CrossEntropy node."""
    out, _ = check_op(fn, torch_fn, inputs, grad=[True, False])
    assert type(out.grad_fn).__name__ == "CrossEntropy"


# ---------------------------------------------------------------- loss modules (issue 27)
LOSS_MODULES = [  # (name, options, input shape, target kind)
    ("MSELoss", {}, (4, 3), "real"),
    ("L1Loss", {"reduction": "sum"}, (4, 3), "real"),
    ("HuberLoss", {"delta": 0.5}, (4, 3), "real"),
    ("SmoothL1Loss", {"beta": 0.5, "reduction": "none"}, (4, 3), "real"),
    ("BCELoss", {}, (4, 3), "prob_input"),
    ("BCEWithLogitsLoss", {"pos_weight": "@pos"}, (4, 3), "prob"),
    ("CrossEntropyLoss", {"label_smoothing": 0.1, "weight": "@class"}, (4, 3), "class"),
    ("CrossEntropyLoss", {"ignore_index": 1}, (4, 3), "class"),
    ("NLLLoss", {"reduction": "sum"}, (4, 3), "class_logp"),
    ("KLDivLoss", {"reduction": "batchmean"}, (4, 3), "kl"),
]


@pytest.mark.parametrize(
    "name, options, shape, kind", LOSS_MODULES, ids=[f"{r[0]}-{i}" for i, r in enumerate(LOSS_MODULES)]
)
def test_loss_modules_match_torch(name, options, shape, kind, torch):
    a, b = random_arrays(shape, shape, seed=9)
    extra = {"@pos": np.array([1.0, 2.0, 0.5]), "@class": np.array([1.0, 0.5, 2.0])}  # tensor options
    target = {
        "real": b,
        "prob": 1 / (1 + np.exp(-b)),
        "prob_input": 1 / (1 + np.exp(-b)),
        "class": np.array([0, 2, 1, 1]),
        "class_logp": np.array([0, 2, 1, 1]),
        "kl": np.exp(b) / np.exp(b).sum(1, keepdims=True),
    }[kind]
    if kind == "prob_input":
        a = 1 / (1 + np.exp(-a))
    if kind in ("class_logp", "kl"):
        a = a - np.log(np.exp(a).sum(1, keepdims=True))

    def build(lib, tensor):
        kw = {k: (tensor(extra[v]) if v in extra else v) for k, v in options.items()}
        return getattr(lib.nn, name)(**kw)

    ours, theirs = build(engine, engine.tensor), build(torch, torch.tensor)
    oracle(lambda x, y: ours(x, y), lambda x, y: theirs(x, y), [a, target], grad=[True, False])
    assert repr(ours).startswith(name)


def test_nn_functional_holds_the_functional_modules_functions():
    import engine.nn.functional as nnF

    assert nnF.cross_entropy is F.cross_entropy and engine.nn.functional.relu is F.relu
    public = {n for n in vars(F) if not n.startswith("_")}
    assert public <= set(vars(nnF))

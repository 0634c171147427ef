"""Hypothesis draws shapes: broadcasting pairs for the binary ops and matmul's batch axes, and
(shape, dim, keepdim) for the reductions. Each draw is checked with gradcheck and against torch."""

from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402
from oracle import require_torch  # noqa: E402
from torch_compare import SAME, check_op, draw  # noqa: E402

import engine  # noqa: E402

pytestmark = pytest.mark.oracle
EXAMPLES = settings(max_examples=30, deadline=None)

PAIRS = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=3)
SEEDS = st.integers(0, 2**16)


def _torch_fn(name):
    torch = require_torch()
    return {"maximum": torch.maximum, "minimum": torch.minimum}[name]


BINARY = [
    ("add", lambda a, b: a + b, "normal", "normal"),
    ("sub", lambda a, b: a - b, "normal", "normal"),
    ("mul", lambda a, b: a * b, "normal", "normal"),
    ("div", lambda a, b: a / b, "normal", "away"),
    ("pow", lambda a, b: a**b, "positive", "normal"),
    ("maximum", engine.maximum, "normal", "normal"),
    ("minimum", engine.minimum, "normal", "normal"),
    ("log_base", lambda a, b: engine.log(a, b + 1.0), "positive", "positive"),
]


@pytest.mark.parametrize("name, fn, dom_a, dom_b", BINARY, ids=[r[0] for r in BINARY])
@EXAMPLES
@given(shapes=PAIRS, seed=SEEDS)
def test_binary_ops_broadcast_like_torch(name, fn, dom_a, dom_b, shapes, seed):
    shape_a, shape_b = shapes.input_shapes
    a, b = draw(shape_a, dom_a, seed), draw(shape_b, dom_b, seed + 1)
    if name == "log_base":
        torch_fn = lambda x, y: x.log() / (y + 1.0).log()  # noqa: E731
    elif name in ("maximum", "minimum"):
        torch_fn = _torch_fn(name)
    else:
        torch_fn = SAME
    out, _ = check_op(fn, torch_fn, [a, b])
    assert out.shape == shapes.result_shape


@EXAMPLES
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3), seed=SEEDS)
def test_where_broadcasts_condition_and_both_sides(shapes, seed):
    torch = require_torch()
    cond_shape, shape_a, shape_b = shapes.input_shapes
    cond = np.random.default_rng(seed).random(cond_shape) > 0.5
    a, b = draw(shape_a, seed=seed), draw(shape_b, seed=seed + 1)
    check_op(lambda x, y: engine.where(cond, x, y), lambda x, y: torch.where(torch.tensor(cond), x, y), [a, b])


@EXAMPLES
@given(
    batch=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3),
    nkm=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    vector=st.sampled_from(["none", "left", "right"]),
    seed=SEEDS,
)
def test_matmul_broadcasts_batch_axes_like_torch(batch, nkm, vector, seed):
    (batch_a, batch_b), (n, k, m) = batch.input_shapes, nkm
    shape_a = (k,) if vector == "left" else batch_a + (n, k)
    shape_b = (k,) if vector == "right" else batch_b + (k, m)
    check_op(lambda x, y: x @ y, SAME, [draw(shape_a, seed=seed), draw(shape_b, seed=seed + 1)])


SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


@st.composite
def shape_and_dims(draw_, single=False):
    shape = draw_(SHAPES)
    ndim = len(shape)
    if single:
        dim = draw_(st.integers(-ndim, ndim - 1))
    else:
        dim = draw_(
            st.one_of(
                st.none(),
                st.integers(-ndim, ndim - 1),
                st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(tuple),
            )
        )
    return shape, dim, draw_(st.booleans())


MULTI_DIM = [
    ("sum", lambda x, d, k: x.sum() if d is None else x.sum(dim=d, keepdim=k)),
    ("mean", lambda x, d, k: x.mean() if d is None else x.mean(dim=d, keepdim=k)),
    ("amax", lambda x, d, k: x.amax() if d is None else x.amax(dim=d, keepdim=k)),
    ("amin", lambda x, d, k: x.amin() if d is None else x.amin(dim=d, keepdim=k)),
    ("var_correction0", lambda x, d, k: x.var(dim=d, keepdim=k, correction=0)),
]


@pytest.mark.parametrize("name, fn", MULTI_DIM, ids=[r[0] for r in MULTI_DIM])
@EXAMPLES
@given(case=shape_and_dims(), seed=SEEDS)
def test_reductions_over_drawn_dims_like_torch(name, fn, case, seed):
    shape, dim, keepdim = case
    check_op(lambda x: fn(x, dim, keepdim), SAME, [draw(shape, seed=seed)])


SINGLE_DIM = [
    ("prod", lambda x, d, k: x.prod(dim=d, keepdim=k)),
    ("logsumexp", lambda x, d, k: x.logsumexp(dim=d, keepdim=k)),
    ("softmax", lambda x, d, k: x.softmax(dim=d)),
    ("log_softmax", lambda x, d, k: x.log_softmax(dim=d)),
    ("max_values", lambda x, d, k: x.max(dim=d, keepdim=k)[0]),
    ("min_values", lambda x, d, k: x.min(dim=d, keepdim=k)[0]),
    ("var_unbiased", lambda x, d, k: x.var(dim=d, keepdim=k)),
    ("std", lambda x, d, k: x.std(dim=d, keepdim=k)),
]


@pytest.mark.parametrize("name, fn", SINGLE_DIM, ids=[r[0] for r in SINGLE_DIM])
@EXAMPLES
@given(case=shape_and_dims(single=True), seed=SEEDS)
def test_single_dim_reductions_like_torch(name, fn, case, seed):
    shape, dim, keepdim = case
    if name in ("var_unbiased", "std") and shape[dim] == 1:
        shape = shape[: dim % len(shape)] + (2,) + shape[dim % len(shape) + 1 :]  # needs 2 values
    check_op(lambda x: fn(x, dim, keepdim), SAME, [draw(shape, seed=seed)])

"""matmul (1-D, 2-D, batched, broadcast batch) and the fused dense layer F.linear."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch
from torch_compare import SAME, check_op, draw

import engine
import engine.functional as F
from engine import Tensor

pytestmark = pytest.mark.oracle

MATMUL_SHAPES = [
    ("vec_vec", (4,), (4,)),
    ("vec_mat", (3,), (3, 5)),
    ("mat_vec", (2, 3), (3,)),
    ("mat_mat", (2, 3), (3, 4)),
    ("batch_batch", (2, 3, 4), (2, 4, 5)),
    ("batch_mat", (2, 3, 4), (4, 2)),
    ("mat_batch", (3, 4), (2, 4, 2)),
    ("vec_batch", (3,), (2, 3, 4)),
    ("batch_vec", (2, 4, 3), (3,)),
    ("broadcast_batch", (2, 1, 3, 2), (4, 2, 3)),
    ("broadcast_batch_one", (1, 3, 2), (5, 2, 3)),
]


@pytest.mark.parametrize("name, shape_a, shape_b", MATMUL_SHAPES, ids=[r[0] for r in MATMUL_SHAPES])
def test_matmul_matches_torch(name, shape_a, shape_b):
    a, b = draw(shape_a, seed=1), draw(shape_b, seed=2)
    check_op(lambda x, y: x @ y, SAME, [a, b])


@pytest.mark.parametrize("spelling", ["operator", "function", "method"])
def test_matmul_spellings_agree(spelling):
    fn = {"operator": lambda x, y: x @ y, "function": engine.matmul, "method": lambda x, y: x.matmul(y)}[spelling]
    a, b = draw((2, 3), seed=3), draw((3, 2), seed=4)
    check_op(fn, lambda x, y: x @ y, [a, b])


def test_matmul_with_a_constant_numpy_operand():
    w = draw((3, 2), seed=5)
    check_op(lambda x: x @ w, lambda x: x @ require_torch().tensor(w), [draw((4, 3), seed=6)])
    x = Tensor(draw((3,), seed=7), requires_grad=True)
    out = np.ones((2, 3)) @ x  # NumPy array on the left: Tensor.__rmatmul__
    assert isinstance(out, Tensor) and out.shape == (2,)


def test_only_one_operand_needs_a_gradient():
    a, b = draw((2, 3, 4), seed=8), draw((4, 2), seed=9)
    check_op(lambda x, y: x @ y, SAME, [a, b], grad=[False, True])
    check_op(lambda x, y: x @ y, SAME, [a, b], grad=[True, False])


@pytest.mark.parametrize("shape_x, bias", [((4, 3), True), ((4, 3), False), ((2, 5, 3), True), ((3,), True)])
def test_linear_matches_torch(shape_x, bias):
    torch = require_torch()
    x, w, b = draw(shape_x, seed=10), draw((2, 3), seed=11), draw((2,), seed=12)
    if bias:
        check_op(F.linear, torch.nn.functional.linear, [x, w, b])
    else:
        check_op(F.linear, torch.nn.functional.linear, [x, w])


def test_linear_float32_keeps_float32():
    x = Tensor(np.ones((2, 3), dtype=np.float32), requires_grad=True)
    w = Tensor(np.ones((4, 3), dtype=np.float32), requires_grad=True)
    b = Tensor(np.zeros(4, dtype=np.float32), requires_grad=True)
    out = F.linear(x, w, b)
    assert out.dtype == np.float32
    out.sum().backward()
    assert x.grad.dtype == w.grad.dtype == b.grad.dtype == np.float32
    np.testing.assert_array_equal(w.grad.numpy(), np.full((4, 3), 2.0))
    np.testing.assert_array_equal(b.grad.numpy(), np.full(4, 2.0))


def test_matmul_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(4, 5\)"):
        Tensor(np.ones((2, 3))) @ Tensor(np.ones((4, 5)))
    with pytest.raises(ValueError, match=r"matmul: shapes \(3,\) and \(4,\)"):
        Tensor(np.ones(3)) @ Tensor(np.ones(4))
    with pytest.raises(ValueError, match=r"matmul \(batch dims\).*\(2,\).*\(3,\)"):
        Tensor(np.ones((2, 3, 4))) @ Tensor(np.ones((3, 4, 5)))
    with pytest.raises(ValueError, match=r"matmul: both operands need at least 1 dimension"):
        engine.matmul(Tensor(2.0), Tensor(np.ones(3)))


def test_linear_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"linear: input of shape \(4, 3\).*weight has shape \(2, 5\)"):
        F.linear(Tensor(np.ones((4, 3))), Tensor(np.ones((2, 5))))
    with pytest.raises(ValueError, match=r"linear: bias shape \(3,\) must be \(2,\)"):
        F.linear(Tensor(np.ones((4, 3))), Tensor(np.ones((2, 3))), Tensor(np.ones(3)))

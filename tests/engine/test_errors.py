"""Bad input gives a clear error that names the operation and the shapes or values at fault;
never a bare NumPy traceback."""

from __future__ import annotations

import re

import numpy as np
import pytest

import engine
import engine.functional as F
from engine import Tensor

A = Tensor(np.ones((2, 3)), requires_grad=True)
B = Tensor(np.ones(4))
SHAPES = r"\(2, 3\) and \(4,\)"

# (id, call, exception type, regex the message must match)
BROADCAST_ERRORS = [
    ("add", lambda: A + B, "add: shapes " + SHAPES),
    ("radd_array", lambda: np.ones(4) + A, r"add: shapes \(4,\) and \(2, 3\)"),
    ("sub", lambda: A - B, "sub: shapes " + SHAPES),
    ("rsub_list", lambda: [1.0, 2.0, 3.0, 4.0] - A, r"sub: shapes \(4,\) and \(2, 3\)"),
    ("mul", lambda: A * B, "mul: shapes " + SHAPES),
    ("div", lambda: A / B, "div: shapes " + SHAPES),
    ("pow", lambda: A**B, "pow: shapes " + SHAPES),
    ("maximum", lambda: engine.maximum(A, B), "maximum: shapes " + SHAPES),
    ("minimum", lambda: engine.minimum(A, B), "minimum: shapes " + SHAPES),
    ("where", lambda: engine.where(np.ones((2, 3), bool), A, B), "where: shapes " + SHAPES),
    ("where_condition", lambda: engine.where(np.ones(4, bool), A, 1.0), r"where: shapes \(4,\) and \(2, 3\)"),
    ("masked_fill", lambda: A.masked_fill(np.ones(4, bool), 0.0), "masked_fill: shapes " + SHAPES),
    ("log_base", lambda: engine.log(A, B), "log: shapes " + SHAPES),
    ("expand", lambda: A.expand(3, 3), r"expand: shapes \(2, 3\) and \(3, 3\)"),
]


@pytest.mark.parametrize("name, call, pattern", BROADCAST_ERRORS, ids=[r[0] for r in BROADCAST_ERRORS])
def test_broadcast_errors_name_the_op_and_both_shapes(name, call, pattern):
    with pytest.raises(ValueError, match=pattern) as err:
        call()
    assert "cannot be broadcast" in str(err.value)


OTHER_ERRORS = [
    ("matmul", lambda: A @ Tensor(np.ones((4, 2))), ValueError, r"matmul: shapes \(2, 3\) and \(4, 2\) do not align"),
    ("cat", lambda: engine.cat([A, Tensor(np.ones((2, 4)))]), ValueError, r"cat: shapes \[\(2, 3\), \(2, 4\)\]"),
    ("cat_ndim", lambda: engine.cat([A, Tensor(np.ones(3))]), ValueError, r"cat: shapes \[\(2, 3\), \(3,\)\]"),
    ("cat_dim", lambda: engine.cat([A, A], dim=2), IndexError, "cat: dim 2 is out of range"),
    ("cat_0d", lambda: engine.cat([Tensor(1.0), Tensor(2.0)]), ValueError, "cat: 0-d tensors cannot be concatenated"),
    ("stack", lambda: engine.stack([A, B]), ValueError, r"stack: all tensors must have the same shape"),
    ("stack_dim", lambda: engine.stack([A, A], dim=4), IndexError, r"stack: dim 4 is out of range .*\(2, 3\)"),
    (
        "mse_loss",
        lambda: F.mse_loss(A, B),
        ValueError,
        r"mse_loss: input shape \(2, 3\) and target shape \(4,\) differ",
    ),
    ("l1_loss", lambda: F.l1_loss(B, A), ValueError, r"l1_loss: input shape \(4,\) and target shape \(2, 3\) differ"),
    (
        "cross_entropy",
        lambda: F.cross_entropy(A, np.array([0, 1, 2])),
        ValueError,
        r"cross_entropy: target of class indices has shape \(3,\) but the input implies \(2,\)",
    ),
    (
        "nll_loss",
        lambda: F.nll_loss(A, np.array([0, 3])),
        IndexError,
        "nll_loss: target class 3 is out of range for 3 classes",
    ),
    ("index", lambda: A[2], IndexError, r"index: .*(tensor shape \(2, 3\))"),
    ("index_column", lambda: A[:, 3], IndexError, r"tensor shape \(2, 3\)"),
    ("index_too_many", lambda: A[0, 0, 0], IndexError, r"index: too many indices.*tensor shape \(2, 3\)"),
    ("index_float", lambda: A[1.5], IndexError, r"tensor shape \(2, 3\)"),
    ("reshape", lambda: A.reshape(4, 2), ValueError, r"reshape: .*\(2, 3\).*\(4, 2\)"),
    ("sum_dim", lambda: A.sum(dim=(0, 5)), IndexError, r"sum: dim 5 is out of range .*2 dimension"),
    ("squeeze_dim", lambda: A.squeeze(3), IndexError, "squeeze: dim 3 is out of range"),
    ("flatten", lambda: A.flatten(1, 0), ValueError, r"flatten: start_dim \(1\) comes after end_dim \(0\)"),
    ("permute", lambda: A.permute(0), ValueError, r"permute: \(0,\) is not a permutation"),
    ("log_base_one", lambda: engine.log(A, 1), ValueError, "log: the base must be positive and not 1, got 1"),
    ("log_base_negative", lambda: engine.log(A, -2.0), ValueError, "log: the base must be positive and not 1"),
    ("clamp_order", lambda: A.clamp(2, 1), ValueError, r"clamp: min \(2\) is greater than max \(1\)"),
    ("clamp_empty", lambda: A.clamp(), ValueError, "clamp: give at least one of min and max"),
    ("operand_str", lambda: A + "x", TypeError, "add: unsupported operand of type str"),
    ("operand_none", lambda: A * None, TypeError, "mul: unsupported operand of type NoneType"),
    ("ragged", lambda: Tensor([[1, 2], [3]]), ValueError, "tensor: nested lists must be rectangular"),
    ("int_requires_grad", lambda: engine.tensor([1, 2], requires_grad=True), TypeError, "only floating-point tensors"),
    (
        "backward_shape",
        lambda: (A * 2).backward(np.ones((3, 2))),
        ValueError,
        r"backward: gradient has shape \(3, 2\) but the tensor has shape \(2, 3\)",
    ),
    ("backward_non_scalar", lambda: (A * 2).backward(), RuntimeError, r"backward: the tensor has shape \(2, 3\)"),
    ("backward_no_grad", lambda: B.sum().backward(), RuntimeError, "does not require a gradient"),
    ("mean_int", lambda: engine.tensor([1, 2]).mean(), TypeError, "mean: needs a floating-point tensor"),
    (
        "mse_int",
        lambda: F.mse_loss(engine.tensor([1, 2]), engine.tensor([1, 2])),
        TypeError,
        "mse_loss: input must be floating point",
    ),
    (
        "reduction",
        lambda: F.cross_entropy(A, np.array([0, 1]), reduction="avg"),
        ValueError,
        "cross_entropy: reduction must be one of",
    ),
]


@pytest.mark.parametrize("name, call, exc, pattern", OTHER_ERRORS, ids=[r[0] for r in OTHER_ERRORS])
def test_error_names_the_op(name, call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_errors_raise_before_any_graph_is_built():
    """A failed op leaves its inputs untouched and usable."""
    x = Tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(ValueError):
        x + Tensor(np.ones(4))
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))


def test_messages_show_tuples_the_way_python_prints_shapes():
    with pytest.raises(ValueError) as err:
        Tensor(np.ones((5, 1, 7))) + Tensor(np.ones((3, 6)))
    assert re.search(r"\(5, 1, 7\) and \(3, 6\)", str(err.value))
    assert "sizes 7 and 6 differ" in str(err.value)

"""engine.gradcheck itself: True for correct gradients, and a loud, specific failure for wrong ones."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import GradcheckError, Tensor
from engine.autograd import Function
from engine.ops.elementwise import Mul


class _Square(Function):
    """r = a²; the tests below give it wrong backward passes."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a


class SquareWithWrongBackward(_Square):
    """r = a²; backward deliberately returns a (not 2a) at one element only."""

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        grad = g * 2 * a
        grad.flat[4] = (g * a).flat[4]  # the bug, hidden in element 4 = index (1, 1) of a 3×3 input
        return grad


class SwappedGradients(Mul):
    """r = a·b (the engine's forward) with the two gradients swapped: wrong for both when a ≠ b."""

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * a, g * b


class SumWithGradientRoutedWrong(Function):
    """r = a (identity) but the gradient is reversed: right under g = ones, wrong under random g."""

    @staticmethod
    def forward(ctx, a):
        return a.copy()

    @staticmethod
    def backward(ctx, g):
        return g[::-1].copy()


def test_returns_true_for_correct_ops():
    x = Tensor(np.random.default_rng(0).standard_normal((3, 3)), requires_grad=True)
    y = Tensor(np.random.default_rng(1).standard_normal(3), requires_grad=True)
    assert engine.gradcheck(lambda a, b: (a * b).tanh() @ b, [x, y]) is True
    assert engine.gradcheck(lambda a: a.softmax(dim=0), [x]) is True


def test_accepts_numpy_arrays_and_constants():
    x = np.random.default_rng(2).standard_normal((2, 3))
    assert engine.gradcheck(lambda a, i: a[i].exp(), [x, np.array([1, 1, 0])]) is True


def test_raises_naming_the_worst_element_for_a_wrong_backward():
    x = Tensor(np.linspace(0.5, 2.5, 9).reshape(3, 3), requires_grad=True)
    with pytest.raises(GradcheckError) as err:
        engine.gradcheck(SquareWithWrongBackward.apply, [x])
    message = str(err.value)
    assert "input 0 (shape (3, 3)), element (1, 1)" in message
    assert "1 of 9 elements disagree" in message
    assert "autograd gives" in message and "central differences give" in message
    a = x.data[1, 1]  # the reported values: analytic a·g against numeric 2a·g (g the random upstream)
    upstream = np.random.default_rng(0).standard_normal((3, 3))[1, 1]
    assert f"{a * upstream:.8g}" in message and f"{2 * a * upstream:.8g}" in message


def test_gradcheck_error_is_an_assertion_error():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = Tensor(np.array([3.0, -1.0]), requires_grad=True)
    with pytest.raises(AssertionError, match="gradcheck: input 0"):
        engine.gradcheck(SwappedGradients.apply, [x, y])


def test_a_random_upstream_catches_what_a_sum_would_miss():
    x = Tensor(np.array([0.3, -1.0, 2.0]), requires_grad=True)
    SumWithGradientRoutedWrong.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))  # .sum() sees nothing wrong
    with pytest.raises(GradcheckError):
        engine.gradcheck(SumWithGradientRoutedWrong.apply, [x])


def test_checks_in_float64_whatever_the_input_dtype():
    seen = []

    def fn(a):
        seen.append(a.dtype)
        return a * a

    x = Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    assert engine.gradcheck(fn, [x]) is True
    assert set(seen) == {np.dtype(np.float64)}
    assert x.grad is None  # the caller's tensor is left alone


def test_only_inputs_that_require_grad_are_checked():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    wrong = Tensor(np.array([3.0, -1.0]))  # a constant: its (swapped) gradient is never asked for
    assert engine.gradcheck(lambda a, b: a * b, [x, wrong]) is True


def test_usage_errors():
    with pytest.raises(ValueError, match="gradcheck: no input requires a gradient"):
        engine.gradcheck(lambda a: a * 2, [Tensor(np.ones(2))])
    with pytest.raises(TypeError, match="gradcheck: fn must return a Tensor"):
        engine.gradcheck(lambda a: a.data, [Tensor(np.ones(2), requires_grad=True)])
    with pytest.raises(ValueError, match="does not depend on any input"):
        engine.gradcheck(lambda a: a.detach() * 2, [Tensor(np.ones(2), requires_grad=True)])


def test_tolerances_are_honoured():
    """A 1% error in a gradient passes with rtol=0.05 and fails with the default rtol=1e-3."""

    class SlightlyOff(_Square):
        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * 2 * a * 1.01

    x = Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    assert engine.gradcheck(SlightlyOff.apply, [x], rtol=0.05) is True
    with pytest.raises(GradcheckError):
        engine.gradcheck(SlightlyOff.apply, [x])

"""Autograd mechanics: the iterative backward pass, accumulation, reuse, no_grad, detach,
retain_grad, central un-broadcasting, gradient ownership, and the errors of backward()."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import Tensor
from engine.autograd import Function, unbroadcast


def leaf(values, dtype=np.float64):
    return Tensor(np.asarray(values, dtype=dtype), requires_grad=True)


# ---------------------------------------------------------------- graph shapes
def test_a_10000_node_chain_backpropagates_without_recursion():
    x = leaf(1.0)
    y = x
    for _ in range(10_000):
        y = y * 1.0001 + 0.0
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 1.0001**10_000, rtol=1e-10)


def test_a_wide_and_deep_graph():
    """Each step uses the previous tensor twice: the count of paths doubles, the work does not."""
    x = leaf(0.5)
    y = x
    for _ in range(60):
        y = (y + y) * 0.5  # d/dx stays 1 while the number of paths is 2^60
    y.backward()
    assert x.grad.numpy() == 1.0


def test_reused_node_x_times_x():
    x = leaf([3.0, -2.0])
    (x * x).backward(np.array([1.0, 10.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, -40.0])


def test_diamond_graph():
    x = leaf(2.0)
    a = x * 3
    b = x.exp()
    c = a * b  # x reaches c along two paths
    c.backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.exp(2.0) + 3 * 2.0 * np.exp(2.0), rtol=1e-14)


def test_diamond_whose_branches_meet_after_different_depths():
    x = leaf([1.0, 2.0])
    short = x * 2
    long = ((x + 1) * 3 - 1).exp().log()  # = 3x + 2
    (short + long).backward(np.ones(2))
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0], rtol=1e-14)


def test_gradients_accumulate_across_two_backward_calls():
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3 + 2, 3 + 4])


def test_backward_twice_through_the_same_graph_accumulates():
    x = leaf(2.0)
    y = x**3
    y.backward(retain_graph=True)  # as PyTorch: without it the saved arrays are freed
    y.backward()
    assert x.grad.numpy() == 2 * 12.0
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_zero_grad_then_backward_starts_fresh():
    x = leaf(2.0)
    (x * 5).backward()
    x.grad = None
    (x * 7).backward()
    assert x.grad.numpy() == 7.0


def test_only_leaves_keep_grad_unless_retained():
    x = leaf([1.0, 2.0])
    h = x * 2
    kept = h + 1
    kept.retain_grad()
    (kept * kept).sum().backward()
    assert h.grad is None
    np.testing.assert_array_equal(kept.grad.numpy(), 2 * kept.data)
    np.testing.assert_array_equal(x.grad.numpy(), 2 * kept.data * 2)
    assert x.is_leaf and not h.is_leaf and h.grad_fn is not None and x.grad_fn is None


def test_constants_and_unneeded_inputs_get_no_gradient():
    x = leaf([1.0, 2.0])
    c = Tensor(np.array([3.0, 4.0]))
    (x * c).sum().backward()
    assert c.grad is None and not c.requires_grad
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


# ---------------------------------------------------------------- gradient ownership
def test_gradient_arrays_are_not_aliased_between_leaves():
    a, b = leaf([1.0, 2.0, 3.0]), leaf([4.0, 5.0, 6.0])
    z = a + b
    g = np.array([1.0, -1.0, 2.0])
    z.backward(g)
    assert a.grad is not b.grad.numpy()
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad[0] = 100.0
    assert b.grad.numpy()[0] == 1.0
    assert not np.shares_memory(a.grad.numpy(), g) and not np.shares_memory(b.grad.numpy(), g)
    g[1] = 50.0  # the caller's array is not captured either
    assert a.grad.numpy()[1] == -1.0


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x,
        lambda x: x.reshape(3, 2),
        lambda x: x.permute(1, 0),
        lambda x: x + 0.0,
        lambda x: (x * 1.0).retain_grad(),
    ],
    ids=["leaf_root", "reshape", "permute", "add", "retained_root"],
)
def test_the_callers_gradient_array_never_becomes_a_grad(make):
    """backward(g) copies g only when the root keeps it (a leaf, retain_grad); below the root every
    array passed on unchanged, or as a view, is copied before a tensor keeps it."""
    x = leaf(np.arange(6.0).reshape(2, 3))
    y = make(x)
    g = np.ones(y.shape)
    y.backward(g)
    for t in (x, y):
        if t.grad is not None:
            assert not np.shares_memory(t.grad.numpy(), g)
    g[...] = 7.0
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))
    x.grad += 1.0  # an optimizer's in-place update must not reach the caller's array
    assert np.all(g == 7.0)


def test_retained_gradient_is_not_shared_with_a_leaf():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    y = a + b
    y.retain_grad()
    (y * 2 + y * 3).sum().backward()  # y's gradient is accumulated from two uses, then passed on
    assert not np.shares_memory(y.grad.numpy(), a.grad.numpy()) and not np.shares_memory(y.grad.numpy(), b.grad.numpy())
    a.grad *= 0
    np.testing.assert_array_equal(y.grad.numpy(), [5.0, 5.0])


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x.sum(),
        lambda x: x.mean(),
        lambda x: x.expand(4, 3).sum(),
        lambda x: (x * 2.0).sum(dim=0).sum(),
    ],
    ids=["sum", "mean", "expand", "mul_sum"],
)
def test_leaf_gradient_is_a_writable_array_of_its_own(make):
    """Reductions hand back broadcast (read-only) views; a leaf's .grad must take in-place updates."""
    x = leaf(np.ones(3))
    make(x).backward()
    assert isinstance(x.grad.numpy(), np.ndarray) and x.grad.numpy().flags.writeable and x.grad.shape == (3,)
    x.grad *= 0.5  # what an optimizer or clip_grad_norm_ does
    x.grad[0] = 7.0
    assert x.grad.numpy()[0] == 7.0 and x.grad.numpy()[1] != 7.0


def test_the_gradient_of_a_0d_leaf_is_an_array():
    x = Tensor(2.0, requires_grad=True)
    (x * 3).backward()
    assert isinstance(x.grad.numpy(), np.ndarray) and x.grad.shape == () and x.grad.dtype == np.float32
    (x * 3).backward()
    assert isinstance(x.grad.numpy(), np.ndarray) and x.grad.numpy() == 6.0


# ---------------------------------------------------------------- broadcasting is undone centrally
@pytest.mark.parametrize(
    "grad_shape, shape",
    [
        ((2, 3), (2, 3)),
        ((2, 3), (3,)),
        ((2, 3), (1, 3)),
        ((2, 3), (2, 1)),
        ((2, 3), ()),
        ((4, 2, 3), (2, 1)),
        ((4, 1, 3), (1,)),
    ],
)
def test_unbroadcast_sums_over_broadcast_axes(grad_shape, shape):
    g = np.random.default_rng(0).standard_normal(grad_shape)
    out = unbroadcast(g, shape)
    assert out.shape == shape
    expected = g.sum(axis=tuple(range(len(grad_shape) - len(shape)))) if len(grad_shape) > len(shape) else g
    expected = expected.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True) if shape else expected
    np.testing.assert_allclose(out, np.reshape(expected, shape), rtol=1e-14)


def test_broadcast_input_gradient_has_its_own_shape():
    a = leaf(np.ones((2, 1, 3)))
    b = leaf(np.ones((4, 1)))
    c = leaf(2.0)
    out = a * b + c
    assert out.shape == (2, 4, 3)
    out.backward(np.ones(out.shape))
    assert a.grad.shape == (2, 1, 3) and b.grad.shape == (4, 1) and c.grad.shape == ()
    np.testing.assert_array_equal(a.grad.numpy(), np.full((2, 1, 3), 4.0))
    np.testing.assert_array_equal(b.grad.numpy(), np.full((4, 1), 6.0))
    assert c.grad.numpy() == 24.0


# ---------------------------------------------------------------- no_grad, detach, enable_grad
def test_no_grad_builds_no_graph():
    x = leaf([1.0, 2.0])
    with engine.no_grad():
        assert not engine.is_grad_enabled()
        y = (x * 2).exp().sum()
    assert engine.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require a gradient"):
        y.backward()


def test_no_grad_as_a_decorator_and_nested_enable_grad():
    @engine.no_grad()
    def evaluate(t):
        return t * 2

    x = leaf(1.0)
    assert not evaluate(x).requires_grad
    with engine.no_grad():
        with engine.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    assert engine.is_grad_enabled()


def test_no_grad_restores_state_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with engine.no_grad():
            1 / 0
    assert engine.is_grad_enabled()


def test_detach_cuts_the_graph_but_shares_data():
    x = leaf([1.0, 2.0])
    d = (x * 3).detach()
    assert not d.requires_grad and d.is_leaf
    y = x * d
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 6.0])  # d is a constant: no 2x term
    e = x.detach()
    assert np.shares_memory(e.data, x.data)


def test_requires_grad_flag_propagates():
    a, c = leaf(1.0), Tensor(2.0)
    assert (a + c).requires_grad and not (c + c).requires_grad
    assert not c.requires_grad_(False).requires_grad
    assert c.requires_grad_().requires_grad


def test_requires_grad_false_on_a_non_leaf_is_an_error():
    y = leaf(1.0) * 2
    with pytest.raises(RuntimeError, match="non-leaf.*detach"):
        y.requires_grad_(False)


# ---------------------------------------------------------------- backward() errors and gradients
def test_backward_on_a_non_scalar_without_gradient_says_what_to_do():
    y = leaf([1.0, 2.0]) * 2
    with pytest.raises(
        RuntimeError, match=r"backward: the tensor has shape \(2,\).*loss.mean\(\).*backward\(gradient\)"
    ):
        y.backward()


def test_backward_on_a_tensor_without_grad_says_what_to_do():
    with pytest.raises(RuntimeError, match="does not require a gradient.*requires_grad=True"):
        Tensor([1.0, 2.0]).sum().backward()


def test_backward_with_a_gradient_of_the_wrong_shape():
    y = leaf([1.0, 2.0]) * 2
    with pytest.raises(ValueError, match=r"backward: gradient has shape \(3,\) but the tensor has shape \(2,\)"):
        y.backward(np.ones(3))


def test_backward_accepts_a_tensor_or_list_gradient_and_a_one_element_tensor():
    x = leaf([1.0, 2.0])
    (x * 2).backward(Tensor(np.array([1.0, 3.0])))
    (x * 2).backward([1.0, 1.0])
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0])
    z = leaf([[3.0]])
    (z * 2).backward()  # a single element needs no gradient argument
    assert z.grad.shape == (1, 1) and z.grad.numpy()[0, 0] == 2.0


def test_integer_tensor_cannot_require_grad():
    with pytest.raises(TypeError, match=r"only floating-point tensors can require gradients.*int64.*float\(\)"):
        engine.tensor([1, 2, 3], requires_grad=True)
    with pytest.raises(TypeError, match="only floating-point"):
        Tensor(np.arange(3)).requires_grad_()


# ---------------------------------------------------------------- custom Functions
class Cube(Function):
    """r = a³; ∂r/∂a = 3a²."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a**3

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * 3 * a * a


class ScaleSecond(Function):
    """r = a·k with k a keyword setting; the second tensor input is ignored (gradient None)."""

    @staticmethod
    def forward(ctx, a, b, *, k):
        ctx.k = k
        return a * k + 0 * b

    @staticmethod
    def backward(ctx, g):
        assert ctx.needs_input_grad == (True, False)
        return g * ctx.k, None


def test_a_custom_function_joins_the_graph():
    x = leaf([1.0, -2.0])
    y = Cube.apply(x)
    assert y.grad_fn is not None and type(y.grad_fn).__name__ == "Cube"
    (y * 2).backward(np.ones(2))
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 24.0])
    assert engine.gradcheck(lambda t: Cube.apply(t), [leaf([0.3, 1.5])])


def test_a_function_may_return_none_for_an_input_and_reads_needs_input_grad():
    x, c = leaf([1.0, 2.0]), Tensor(np.array([5.0, 5.0]))
    ScaleSecond.apply(x, c, k=4.0).backward(np.ones(2))
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0])
    assert c.grad is None


def test_under_no_grad_a_function_records_nothing():
    with engine.no_grad():
        y = Cube.apply(leaf(2.0))
    assert y.grad_fn is None and not y.requires_grad


# ---------------------------------------------------------------- dtypes through the graph
def test_float32_graph_gives_float32_gradients_even_with_float64_constants():
    x = Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y = (x * np.array([0.5, 0.25])).sum()  # float64 constant: output promotes, as torch
    assert y.dtype == np.float64
    y.backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), np.array([0.5, 0.25], dtype=np.float32))


def test_cast_between_float_dtypes_keeps_the_gradient():
    x = Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    y = x.double() * 3
    assert y.dtype == np.float64
    y.sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])

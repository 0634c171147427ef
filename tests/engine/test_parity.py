"""PyTorch parity (issue 27): habits whose answers were silently wrong, each against torch.

Every case runs the same code in both libraries where torch has an answer; deliberate
differences are asserted as such and listed in docs/differences-from-pytorch.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracle import random_arrays

import engine
from engine import nn, optim

pytestmark = pytest.mark.oracle


def _same(ours, theirs, **kw):
    np.testing.assert_allclose(
        np.asarray(ours.data if isinstance(ours, engine.Tensor) else ours), theirs.detach().numpy(), **kw
    )


# ---------------------------------------------------------------- grad modes


def _modes(lib):
    """(inside a decorated function, inside a decorated generator, after it) for each mode."""

    @lib.no_grad
    def bare():
        return lib.is_grad_enabled()

    @lib.enable_grad()
    def enabled():
        return lib.is_grad_enabled()

    @lib.no_grad()
    def gen():
        yield lib.is_grad_enabled()
        yield lib.is_grad_enabled()

    @lib.set_grad_enabled(False)
    def off():
        return lib.is_grad_enabled()

    @lib.inference_mode()
    def inference():
        return lib.is_grad_enabled()

    results = [bare(), off(), inference(), lib.is_grad_enabled()]
    with lib.no_grad():
        results.append(enabled())
        results.append(lib.is_grad_enabled())
    it = gen()
    results.append(next(it))
    results.append(lib.is_grad_enabled())  # the caller's mode between two yields
    results.append(next(it))
    with lib.inference_mode():
        results.append(lib.is_grad_enabled())
    previous = lib.set_grad_enabled(False)
    results.append(lib.is_grad_enabled())
    lib.set_grad_enabled(True)
    results.append(lib.is_grad_enabled())
    with lib.set_grad_enabled(False):
        results.append(lib.is_grad_enabled())
    results.append(lib.is_grad_enabled())
    assert previous is not None
    return results


def test_grad_modes_as_decorators_generators_and_functions(torch):
    ours = _modes(engine)
    assert ours == _modes(torch)
    assert ours == [False, False, False, True, True, False, False, True, False, False, False, True, False, True]
    x = engine.ones(2, requires_grad=True)

    @engine.no_grad
    def double(t):
        return t * 2

    assert not double(x).requires_grad and (x * 2).requires_grad


# ---------------------------------------------------------------- var / std positional unbiased


def test_var_and_std_read_the_second_positional_argument_as_unbiased(torch):
    (a,) = random_arrays((3, 5), seed=1)
    x, t = engine.tensor(a), torch.tensor(a)
    for name in ("var", "std"):
        for args in ((1, False), (1, True), (1, False, True), (False,)):
            _same(getattr(x, name)(*args), getattr(t, name)(*args), rtol=1e-12)
        _same(getattr(x, name)(0, correction=0), getattr(t, name)(0, correction=0), rtol=1e-12)
    assert x.var(1, False).shape == (3,)


# ---------------------------------------------------------------- construction


def test_integer_tensors_refuse_gradients_by_attribute_too(torch):
    t = torch.tensor([1, 2])
    with pytest.raises(RuntimeError):
        t.requires_grad = True
    x = engine.tensor([1, 2])
    with pytest.raises(TypeError, match="only floating-point tensors can require gradients.*int64"):
        x.requires_grad = True
    y = engine.tensor([1.0, 2.0])
    y.requires_grad = True
    assert y.requires_grad and (y * 2).requires_grad


# ---------------------------------------------------------------- & | on integers


def test_and_or_xor_are_bitwise_on_integers_and_logical_on_bools(torch):
    a, b = np.array([12, 10, 7]), np.array([10, 6, 1])
    for op in ("__and__", "__or__", "__xor__"):
        _same(getattr(engine.tensor(a), op)(engine.tensor(b)), getattr(torch.tensor(a), op)(torch.tensor(b)))
        _same(getattr(engine.tensor(a), op)(3), getattr(torch.tensor(a), op)(3))
    m, n = np.array([True, False, True]), np.array([True, True, False])
    _same(engine.tensor(m) & engine.tensor(n), torch.tensor(m) & torch.tensor(n))
    _same(~engine.tensor(a), ~torch.tensor(a))
    with pytest.raises(TypeError, match=r"bitwise_and \(&\): needs bool or integer tensors.*float32"):
        engine.tensor([1.0]) & engine.tensor([1.0])


# ---------------------------------------------------------------- gradients and optimizers


def test_clip_grad_norm_inf_is_nan_when_any_gradient_is_nan(torch):
    grads = [np.array([1.0, 2.0]), np.array([np.nan, 0.5]), np.array([3.0])]
    for error in (False, True):
        ours = [nn.Parameter(np.zeros_like(g)) for g in grads]
        theirs = [torch.nn.Parameter(torch.zeros(len(g), dtype=torch.float64)) for g in grads]
        for p, q, g in zip(ours, theirs, grads):
            p.grad, q.grad = g.copy(), torch.tensor(g)
        if error:
            with pytest.raises(RuntimeError):
                torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type=math.inf, error_if_nonfinite=True)
            with pytest.raises(RuntimeError, match="clip_grad_norm_: the total norm of order inf.*nan"):
                nn.utils.clip_grad_norm_(ours, 1.0, norm_type=math.inf, error_if_nonfinite=True)
            continue
        total = nn.utils.clip_grad_norm_(ours, 1.0, norm_type=math.inf)
        assert math.isnan(float(total)) and math.isnan(
            float(torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type=math.inf))
        )
        for p, q in zip(ours, theirs):
            _same(p.grad, q.grad)


def test_zero_grad_set_to_none_false_zeroes_in_place_and_grad_is_a_tensor(torch):
    for lib in (engine, torch):
        model = lib.nn.Linear(3, 2)
        model(lib.ones(4, 3)).sum().backward()
        kept = model.weight.grad
        assert isinstance(kept, lib.Tensor) and not kept.requires_grad
        assert float(kept.norm()) > 0
        lib.optim.SGD(model.parameters(), lr=0.1).zero_grad(set_to_none=False)
        assert model.weight.grad is kept and float(kept.abs().sum()) == 0.0
        model.zero_grad(set_to_none=False)
        assert model.weight.grad is kept


def test_an_assigned_gradient_steps_the_optimizer_and_a_wrong_one_is_refused(torch):
    p = nn.Parameter(engine.zeros(2, 3))
    q = torch.nn.Parameter(torch.zeros(2, 3))
    p.grad, q.grad = engine.full((2, 3), 0.5), torch.full((2, 3), 0.5)
    optim.SGD([p], lr=0.1).step()
    torch.optim.SGD([q], lr=0.1).step()
    _same(p, q)
    p.grad.zero_()
    assert float(p.grad.sum()) == 0.0
    with pytest.raises(RuntimeError, match=r"grad: assigned grad has shape \(1,\), but the tensor has shape \(2, 3\)"):
        p.grad = np.ones(1, np.float32)
    with pytest.raises(RuntimeError):
        q.grad = torch.ones(1)
    with pytest.raises(TypeError, match="grad: assigned grad has dtype float64, but the tensor has dtype float32"):
        p.grad = np.ones((2, 3))
    p.grad = np.ones((2, 3), np.float32)  # an array of the right shape is wrapped (a listed difference)
    assert isinstance(p.grad, engine.Tensor)


def test_saving_only_what_backward_needs_allows_a_later_in_place_write(torch):
    for lib in (engine, torch):
        x = lib.ones(3, requires_grad=True)
        y = x * 3
        z = y * 2  # needs only the constant 2 for dz/dy
        y.add_(5)
        z.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0, 6.0])
    x = engine.ones(3, requires_grad=True)
    y = x * 3
    z = y * y  # needs y itself
    y.add_(5)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


# ---------------------------------------------------------------- modules and views


def test_a_plain_tensor_assigned_to_a_parameter_attribute_is_refused(torch):
    with pytest.raises(TypeError):
        torch.nn.Linear(3, 2).weight = torch.randn(2, 3)
    layer = nn.Linear(3, 2)
    with pytest.raises(TypeError, match="cannot assign a Tensor as parameter 'weight' of Linear"):
        layer.weight = engine.randn(2, 3)
    layer.weight = nn.Parameter(engine.zeros(2, 3))  # a Parameter, or None, is fine
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"] and float(layer.weight.abs().sum()) == 0
    del layer.bias
    layer.bias = engine.ones(2)  # after del, a plain tensor is a plain attribute, as torch
    assert [n for n, _ in layer.named_parameters()] == ["weight"]


def test_view_of_a_transposed_tensor_is_refused_as_torch(torch):
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).T.view(-1)
    x = engine.tensor(np.arange(6.0).reshape(2, 3))
    with pytest.raises(RuntimeError, match=r"view: shape \(6,\) is not compatible.*use \.reshape"):
        x.T.view(-1)
    v = x.view(3, 2)  # contiguous: a view, and writes reach the original
    v[0, 0] = 10.0
    assert float(x[0, 0]) == 10.0
    np.testing.assert_array_equal(x.T.reshape(-1).numpy(), torch.tensor(x.numpy()).T.reshape(-1).numpy())


def test_linear_refuses_an_integer_input_naming_the_dtypes(torch):
    with pytest.raises(RuntimeError):
        torch.nn.Linear(3, 2)(torch.ones(4, 3, dtype=torch.int64))
    with pytest.raises(TypeError, match="Linear: the input is int64 but the weight is float32"):
        nn.Linear(3, 2)(engine.tensor(np.ones((4, 3), np.int64)))
    with pytest.raises(TypeError, match="linear: the input is int64"):
        engine.functional.linear(np.ones((4, 3), np.int64), engine.ones(2, 3))


# ---------------------------------------------------------------- everyday surface


def test_format_devices_and_randint(torch):
    loss = engine.tensor(0.123456)
    assert f"{loss:.3f}" == f"{torch.tensor(0.123456):.3f}" == "0.123"
    with pytest.raises(TypeError):
        f"{engine.ones(2):.3f}"
    x = engine.ones(2)
    assert x.to("cpu") is x and x.cpu() is x and x.to("cpu", engine.float64).dtype == np.float64
    assert x.to(engine.tensor([1], dtype="int64")).dtype == np.int64
    model = nn.Linear(2, 2)
    assert model.to("cpu") is model and model.weight.dtype == np.float32
    with pytest.raises(RuntimeError, match="to: the engine runs on the CPU only.*'cuda'"):
        x.to("cuda")
    engine.manual_seed(0)
    r = engine.randint(5, (3, 4))
    assert (
        r.shape == tuple(torch.randint(5, (3, 4)).shape)
        and r.dtype == np.int64
        and 0 <= int(r.min())
        and int(r.max()) < 5
    )


def test_embedding_padding_idx_is_zero_and_gets_no_gradient(torch):
    ours, theirs = nn.Embedding(5, 3, padding_idx=1), torch.nn.Embedding(5, 3, padding_idx=1)
    assert not ours.weight.data[1].any() and not theirs.weight.detach()[1].any()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.data))
    idx = np.array([[1, 2, 1], [4, 1, 0]])
    g = np.random.default_rng(5).standard_normal((2, 3, 3)).astype(np.float32)
    ours(idx).backward(g)
    theirs(torch.tensor(idx)).backward(torch.tensor(g))
    _same(ours.weight.grad, theirs.weight.grad)
    assert not ours.weight.grad.numpy()[1].any()
    with pytest.raises(ValueError, match="Embedding: padding_idx 5 must be within num_embeddings"):
        nn.Embedding(5, 3, padding_idx=5)


def test_tensor_and_module_hooks_as_torch(torch):
    seen = {}
    for lib in (engine, torch):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        handle = y.register_hook(lambda g: g * 10)  # replaces the gradient flowing on
        grads = []
        x.register_hook(lambda g, grads=grads: grads.append(g.clone()))
        (y * y).sum().backward()
        handle.remove()
        x.grad = None
        y = x * 2  # a new graph: the removed hook is gone, x's own hook still records
        (y * y).sum().backward()
        layer = lib.nn.Linear(3, 2)
        outs = []
        h1 = layer.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
        h2 = layer.register_forward_hook(lambda m, args, out, outs=outs: outs.append(out.shape))
        out = layer(lib.ones(4, 3))
        h1.remove()
        h2.remove()
        layer(lib.ones(4, 3))
        seen[lib.__name__] = (
            [g.tolist() for g in grads],
            x.grad.tolist(),
            [tuple(s) for s in outs],
            np.allclose(out.detach().numpy(), layer.bias.detach().numpy()),
        )
    assert seen["engine"] == seen["torch"]
    assert seen["engine"][0] == [[80.0] * 3, [8.0] * 3] and seen["engine"][2] == [(4, 2)]


def test_listed_differences_hold():
    """docs/differences-from-pytorch.md: Tensor(5) is 0-d, ties sort by position, number % tensor
    has a gradient (torch raises), a scatter's repeated index keeps the last value."""
    assert engine.Tensor(5).shape == () and float(engine.Tensor(5)) == 5.0
    ties = engine.tensor([2.0, 1.0, 2.0, 1.0])
    assert ties.sort().indices.tolist() == [1, 3, 0, 2]
    assert ties.sort(descending=True).indices.tolist() == [0, 2, 1, 3]
    assert engine.gradcheck(lambda b: 10.0 % b, [engine.tensor(np.array([3.0, -4.0, 2.4]), requires_grad=True)])
    out = engine.zeros(3).scatter(0, engine.tensor([1, 1]), engine.tensor([5.0, 7.0]))
    assert out.tolist() == [0.0, 7.0, 0.0]

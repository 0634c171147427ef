"""In-place operations, the version counter, retain_graph and gradient accumulation (issue 12).

What PyTorch does, case by case: an in-place op on a leaf that requires grad is refused while
gradients are recorded; elsewhere it is recorded (the tensor's history continues from the op); a
tensor whose saved array changed in place since the forward pass makes backward raise, naming the
op; a second backward through freed arrays raises unless retain_graph=True; ``.grad`` accumulates
in place.
"""

from __future__ import annotations

import numpy as np
import pytest
from torch_compare import check_op, oracle

import engine
from engine import nn, optim

# every case in this file too runs with NumPy's RuntimeWarnings as errors: the engine's own
# computations (means, norms, log-probabilities) must never leak one
pytestmark = [pytest.mark.oracle, pytest.mark.filterwarnings("error::RuntimeWarning")]


def leaf(values, dtype=np.float64):
    return engine.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


# ---------------------------------------------------------------- the hand-written SGD loop


def test_minus_equals_under_no_grad_updates_the_tensor_itself():
    """`p -= lr * p.grad` in every tutorial: it must change p (not rebind a local name)."""
    p = leaf([1.0, 2.0])
    alias = p
    (p * p).sum().backward()
    with engine.no_grad():
        p -= 0.1 * p.grad
    assert alias is p
    np.testing.assert_allclose(p.data, [0.8, 1.6])
    assert p.is_leaf and p.requires_grad


def test_hand_written_sgd_trains(torch):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((32, 3)), rng.standard_normal(32)
    w_e, w_t = leaf(np.zeros(3)), torch.zeros(3, dtype=torch.float64, requires_grad=True)
    for _ in range(20):
        for w, lib, xs, ys in (
            (w_e, engine, engine.tensor(x), engine.tensor(y)),
            (w_t, torch, torch.tensor(x), torch.tensor(y)),
        ):
            loss = ((xs @ w - ys) ** 2).mean()
            loss.backward()
            with lib.no_grad():
                w -= 0.1 * w.grad  # .grad is a Tensor in both: the same two lines
                w.grad.zero_()
    np.testing.assert_allclose(w_e.data, w_t.detach().numpy(), rtol=1e-12)
    assert np.abs(w_e.data).sum() > 0.1


@pytest.mark.parametrize(
    "op",
    [
        "__iadd__",
        "__isub__",
        "__imul__",
        "__itruediv__",
        "add_",
        "sub_",
        "mul_",
        "div_",
        "zero_",
        "fill_",
        "copy_",
        "clamp_",
    ],
)
def test_in_place_on_a_leaf_that_requires_grad_raises_as_torch(op, torch):
    args = {"zero_": (), "fill_": (1.0,), "copy_": (np.ones(3),), "clamp_": (0.0, 1.0)}.get(op, (2.0,))
    t_args = tuple(torch.ones(3, dtype=torch.float64) if isinstance(a, np.ndarray) else a for a in args)
    w_t = torch.ones(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        getattr(w_t, op)(*t_args)
    w = leaf(np.ones(3))
    name = {"__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_"}.get(op, op)
    with pytest.raises(RuntimeError, match=f"{name}: a leaf Variable that requires grad"):
        getattr(w, op)(*args)
    with engine.no_grad():  # allowed where no graph is recorded, as torch
        getattr(w, op)(*args)
    assert w._version == 1


def test_setitem_on_a_leaf_that_requires_grad_raises_and_no_longer_recommends_the_unsafe_pattern():
    w = leaf(np.zeros(3))
    with pytest.raises(RuntimeError) as info:
        w[0] = 1.0
    message = str(info.value)
    assert "setitem" in message and "leaf Variable that requires grad" in message
    assert "not between a forward pass and its backward()" in message
    with engine.no_grad():
        w[0] = 1.0
    assert w.data.tolist() == [1.0, 0.0, 0.0] and w._version == 1


@pytest.mark.parametrize(
    "name, args, torch_args",
    [
        ("add_", (np.array([1.0, 2.0, 3.0]),), None),
        ("sub_", (2.5,), None),
        ("mul_", (np.array([1.0, -2.0, 3.0]),), None),
        ("div_", (4.0,), None),
        ("pow_", (2,), None),
        ("clamp_", (-0.5, 0.5), None),
        ("fill_", (7.0,), None),
        ("zero_", (), None),
        ("neg_", (), None),
        ("exp_", (), None),
        ("tanh_", (), None),
        ("sigmoid_", (), None),
        ("relu_", (), None),
        ("abs_", (), None),
    ],
)
def test_in_place_methods_without_a_graph_match_torch(name, args, torch_args, torch):
    x = np.array([0.3, -1.2, 2.0])
    e, t = engine.tensor(x.copy()), torch.tensor(x.copy())
    t_args = tuple(torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args)
    out_e, out_t = getattr(e, name)(*args), getattr(t, name)(*t_args)
    assert out_e is e and out_t is t
    np.testing.assert_allclose(e.data, t.numpy(), rtol=1e-12)
    assert e.dtype == np.float64 and e._version == t._version == 1


def test_in_place_dtype_and_shape_rules_as_torch(torch):
    i = engine.arange(3)
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        i += 1.5
    with pytest.raises(RuntimeError):
        torch.arange(3).add_(1.5)
    i *= 2
    assert i.data.tolist() == [0, 2, 4] and i.dtype == np.int64
    f = engine.ones(3)
    with pytest.raises(
        RuntimeError, match=r"add_: output with shape \(3,\) doesn't match the broadcast shape \(2, 3\)"
    ):
        f += engine.ones(2, 3)
    f += np.float64(1.0)  # a NumPy scalar acts as a Python number: float32 stays float32
    assert f.dtype == np.float32 and f.data.tolist() == [2.0, 2.0, 2.0]
    assert engine.arange(3).fill_(1.5).data.tolist() == torch.arange(3).fill_(1.5).tolist()
    c = engine.zeros(2, 3).copy_(engine.tensor([1.0, 2.0, 3.0]))
    assert c.data.tolist() == torch.zeros(2, 3).copy_(torch.tensor([1.0, 2.0, 3.0])).tolist()
    assert engine.zeros(3, dtype="int64").copy_(engine.tensor([1.7, 2.2, 3.9])).data.tolist() == [1, 2, 3]


# ---------------------------------------------------------------- in place inside a graph


def test_setitem_into_a_constant_keeps_the_graph():
    def fn(lib, x, y):
        c = lib.zeros(5, dtype=x.dtype)
        c[0:3] = x * 2
        c[4] = y.sum()
        return c * c

    import torch as _torch

    def engine_fn(x, y):
        return fn(engine, x, y)

    def torch_fn(x, y):
        return fn(_torch, x, y)

    rng = np.random.default_rng(1)
    check_op(engine_fn, torch_fn, [rng.standard_normal(3), rng.standard_normal(2)])
    x = leaf([1.0, 2.0, 3.0])
    c = engine.zeros(5, dtype="float64")
    c[0:3] = x * 2
    assert not c.is_leaf and c.requires_grad


@pytest.mark.parametrize("index", [np.array([0, 2]), (slice(None), 1), np.array([True, False, True])])
def test_setitem_gradients_for_every_kind_of_index(index, torch):
    rng = np.random.default_rng(2)
    base, value = rng.standard_normal((3, 3)), rng.standard_normal(3)

    def make(lib):
        idx = index
        if lib is torch and isinstance(index, np.ndarray):
            idx = torch.tensor(index)

        def f(b, v):
            out = b * 1.0
            out[idx] = v
            return out.exp()

        return f

    check_op(make(engine), make(torch), [base, value])


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "clamp_", "pow_", "copy_", "fill_"])
def test_in_place_ops_on_a_non_leaf_record_their_gradient(op, torch):
    rng = np.random.default_rng(3)
    x, y = rng.uniform(0.5, 2.0, 4), rng.uniform(0.5, 2.0, 4)

    def make(lib):
        def f(a, b):
            h = a * 3.0
            if op == "clamp_":
                h.clamp_(1.0, 4.0)
            elif op == "pow_":
                h.pow_(2)
            elif op == "fill_":
                h.fill_(b.sum())
            else:
                getattr(h, op)(b)
            return h * a

        return f

    oracle(make(engine), make(torch), [x, y])
    if op != "clamp_":  # central differences across clamp's kinks are meaningless
        check_op(make(engine), make(torch), [x, y])


def test_operator_forms_on_a_non_leaf(torch):
    def make(lib):
        def f(a, b):
            h = a * 2.0  # (not a.tanh(): tanh saves its output, so h += b would be refused, as torch)
            h += b
            h *= b
            h -= 1.0
            h /= 2.0
            return h

        return f

    check_op(make(engine), make(torch), [np.array([0.1, 0.5, -0.7]), np.array([1.0, 2.0, 3.0])])


def test_ops_recorded_before_an_in_place_op_keep_the_old_value(torch):
    """z used y before y.mul_(3): z's gradient flows to the old y (PyTorch keeps that edge)."""

    def make(lib):
        def f(x):
            y = x * 2.0
            z = y + 3.0
            y.mul_(3.0)
            return z * 1.0 + y

        return f

    check_op(make(engine), make(torch), [np.array([1.0, 2.0, 3.0])])


def test_in_place_on_a_tensor_with_views_in_the_graph_is_a_clear_error():
    x = leaf([1.0, 2.0, 3.0]) * 1.0
    v = x.reshape(3, 1)
    with pytest.raises(RuntimeError, match="add_: this tensor shares its memory with a view"):
        x += 1.0
    with pytest.raises(RuntimeError, match="shares its memory with a view"):
        v += 1.0
    assert v.requires_grad


def test_masked_fill_in_place_and_with_a_tensor_value(torch):
    mask = np.array([True, False, True])

    def make(lib):
        m = lib.tensor(mask) if lib is torch else mask

        def f(x, v):
            out = x * 1.0
            out.masked_fill_(m, v.sum())
            return out.masked_fill(~m, (v * 2).sum())

        return f

    check_op(make(engine), make(torch), [np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.25])])


# ---------------------------------------------------------------- the version counter


def test_version_counts_in_place_writes(torch):
    e, t = engine.zeros(3), torch.zeros(3)
    for x in (e, t):
        x[0] = 1.0
        x += 1
        x.mul_(2)
        x.zero_()
    assert e._version == t._version == 4
    d = e.detach()
    d[1] = 5.0  # detach shares the memory, so it shares the counter
    assert e._version == 5 and e.data[1] == 5.0


def test_setitem_under_no_grad_after_the_forward_pass_is_caught(torch):
    w = leaf([1.0, 2.0, 3.0])
    y = (w * w).sum()
    with engine.no_grad():
        w[0] = 5.0
    with pytest.raises(
        RuntimeError,
        match=r"modified by an inplace operation.*Mul saved \(input [01]\) was written after the forward pass \(it is now at version 1\)",
    ):
        y.backward()
    w_t = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y_t = (w_t * w_t).sum()
    with torch.no_grad():
        w_t[0] = 5.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y_t.backward()


def test_a_write_through_detach_is_caught():
    w = leaf([1.0, 2.0, 3.0])
    out = w.exp()
    out.detach()[0] = 0.0
    with pytest.raises(RuntimeError, match=r"Exp saved \(output 0\)"):  # Exp saved its output
        out.sum().backward()
    y = w.exp().sum()
    w.detach()[0] = 0.0  # Exp saved its output, not w: nothing it needs changed
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), np.exp([1.0, 2.0, 3.0]))


def test_a_write_through_a_view_is_caught():
    w = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = (w * w).sum()
    with engine.no_grad():
        w.reshape(4)[0] = 9.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_an_optimizer_step_between_two_backward_passes_is_caught(torch):
    model = nn.Linear(3, 1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    loss = model(engine.randn(4, 3, requires_grad=True)).pow(2).mean()  # the input's gradient uses W
    loss.backward(retain_graph=True)
    versions = [p._version for p in model.parameters()]
    opt.step()
    assert [p._version for p in model.parameters()] == [v + 1 for v in versions]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    # without the input's gradient nothing saved W, so a second pass is right, and allowed as in torch
    loss = model(engine.randn(4, 3)).pow(2).mean()
    loss.backward(retain_graph=True)
    opt.step()
    loss.backward()
    for make_opt in (lambda ps: optim.Adam(ps), lambda ps: optim.AdamW(ps), lambda ps: optim.RMSprop(ps)):
        model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
        opt = make_opt(model.parameters())
        loss = model(engine.randn(2, 3)).sum()
        loss.backward(retain_graph=True)
        opt.step()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_initialisers_and_load_state_dict_bump_the_version():
    lin = nn.Linear(2, 2)
    before = lin.weight._version
    nn.init.normal_(lin.weight)
    lin.load_state_dict(lin.state_dict())
    nn.utils.vector_to_parameters(nn.utils.parameters_to_vector(lin.parameters()), lin.parameters())
    assert lin.weight._version == before + 3


def test_numpy_operands_and_index_arrays_are_copied_when_captured(torch):
    x = leaf([1.0, 2.0, 3.0])
    factor = np.array([2.0, 3.0, 4.0])
    index = np.array([0, 0, 2])
    mask = np.array([True, False, False])
    y = (x * factor)[index].sum() + x.masked_fill(mask, 0.0).sum() + engine.where(~mask, x, 0.0).sum()
    factor[:] = 100.0
    index[:] = 1
    mask[:] = True
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0 + 0 + 0, 1.0 + 1.0, 4.0 + 1.0 + 1.0])


def test_numpy_constants_in_functional_ops_are_copied():
    import engine.functional as F

    w = leaf(np.ones((2, 3)))
    ids = np.array([1, 1])
    weight = np.array([1.0, 2.0, 3.0])
    emb = F.embedding(ids, w).sum()
    q = leaf(np.full(3, 0.5))
    bce = F.binary_cross_entropy(q * 1.0, np.ones(3), weight=weight)
    ids[:] = 0
    weight[:] = 0.0
    emb.backward()
    assert w.grad.numpy().tolist() == [[0, 0, 0], [2, 2, 2]]
    bce.backward()
    np.testing.assert_allclose(q.grad.numpy(), -2.0 / 3.0 * np.array([1.0, 2.0, 3.0]))


# ---------------------------------------------------------------- retain_graph and freeing


def test_second_backward_through_a_freed_graph_raises_as_torch(torch):
    x = leaf(2.0)
    y = x**3
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time.*PowScalar.*retain_graph=True"):
        y.backward()
    x_t = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    y_t = x_t**3
    y_t.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y_t.backward()


def test_retain_graph_allows_a_second_backward_that_accumulates(torch):
    x, x_t = leaf(2.0), torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    for t in (x, x_t):
        y = t**3
        y.backward(retain_graph=True)
        y.backward()
    assert x.grad.numpy() == x_t.grad.numpy().item() == 24.0


def test_graphs_without_saved_arrays_can_be_walked_twice_as_torch(torch):
    x, x_t = leaf([1.0, 2.0]), torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    for t in (x, x_t):
        y = (t + 1).sum()
        y.backward()
        y.backward()
    assert x.grad.numpy().tolist() == x_t.grad.numpy().tolist() == [2.0, 2.0]


def test_backward_frees_the_saved_arrays():
    x = leaf(np.ones(3))
    y = x.exp()
    node = y.grad_fn
    assert node.saved_tensors
    y.sum().backward()
    assert node.saved_tensors is None


# ---------------------------------------------------------------- accumulation in place


def test_gradient_accumulates_in_place(torch):
    x, x_t = leaf([1.0, 2.0]), torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    refs = []
    for t in (x, x_t):
        (t * t).sum().backward()
        refs.append(t.grad)
        (t * 3).sum().backward()
    assert refs[0] is x.grad
    np.testing.assert_array_equal(refs[0].numpy(), refs[1].numpy())
    np.testing.assert_array_equal(refs[0], [5.0, 7.0])


def test_a_gradient_is_one_tensor_whether_read_before_or_after_it_accumulates():
    # backward stores a bare array and .grad wraps it on first read: the wrapped Tensor must be the
    # one every later read returns, and a second backward must add into it
    read_early, read_late = leaf([1.0, 2.0]), leaf([1.0, 2.0])
    (read_early * read_early).sum().backward()
    early = read_early.grad
    (read_early * 3).sum().backward()
    (read_late * read_late).sum().backward()
    (read_late * 3).sum().backward()
    assert read_early.grad is early and read_late.grad is read_late.grad
    np.testing.assert_array_equal(early.numpy(), read_late.grad.numpy())
    np.testing.assert_array_equal(early, [5.0, 7.0])


def test_an_optimizer_step_is_the_same_whether_or_not_grad_was_read():
    steps = []
    for read in (False, True):
        w = leaf([1.0, -2.0])
        opt = optim.SGD([w], lr=0.5)
        (w * w).sum().backward()
        if read:
            assert isinstance(w.grad, engine.Tensor)
        opt.step()
        steps.append(w.numpy().copy())
    np.testing.assert_array_equal(steps[0], steps[1])
    np.testing.assert_array_equal(steps[0], [0.0, 0.0])


def test_leaf_gradients_never_share_memory():
    a, b = leaf(np.ones(4)), leaf(np.ones(2))
    out = engine.cat([a.reshape(2, 2), b.reshape(1, 2)])
    (out * 2).sum().backward()
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad += 1  # in place: b untouched
    assert b.grad.numpy().tolist() == [2.0, 2.0]

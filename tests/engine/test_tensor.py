"""The Tensor itself: construction and dtypes (PyTorch's rules), attributes, conversions, repr,
comparisons, factories and manual_seed."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch

import engine
from engine import Tensor


# ---------------------------------------------------------------- dtypes follow torch.tensor
@pytest.mark.parametrize(
    "data",
    [1.5, [1.0, 2.0], [[1, 2.5]], 3, [1, 2], True, [True, False], [], np.float64(2.0), np.float32(2.0)],
    ids=[
        "float",
        "float_list",
        "mixed_list",
        "int",
        "int_list",
        "bool",
        "bool_list",
        "empty",
        "np_float64",
        "np_float32",
    ],
)
def test_python_data_gets_torchs_dtype(data):
    """engine.tensor infers the dtype as torch.tensor; engine.Tensor gives float32 as torch.Tensor."""
    torch = require_torch()
    pairs = [(engine.tensor(data), torch.tensor(data))]
    if isinstance(data, list):  # torch.Tensor(3) would be 3 uninitialised values
        pairs.append((Tensor(data), torch.Tensor(data)))
    elif not isinstance(data, np.generic):
        assert Tensor(data).dtype == np.float32
    for ours, theirs in pairs:
        assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch.")), (ours.dtype, theirs.dtype)
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.data, theirs.numpy())


def test_a_list_of_numpy_float64_scalars_stays_float64_and_sizes_are_refused(torch):
    data = [np.float64(1.5), np.float64(2.0)]
    assert engine.tensor(data).dtype == np.float64 == np.dtype(str(torch.tensor(data).dtype).removeprefix("torch."))
    assert Tensor([1, 2]).dtype == np.float32 and engine.tensor([1, 2]).dtype == np.int64
    with pytest.raises(TypeError, match=r"Tensor\(2, 3\): Tensor takes data, not sizes.*engine.zeros\(2, 3\)"):
        Tensor(2, 3)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int32, np.int64, np.bool_])
def test_numpy_arrays_keep_their_dtype(dtype):
    arr = np.ones((2, 2), dtype=dtype)
    assert Tensor(arr).dtype == dtype
    assert engine.tensor(arr).dtype == dtype


@pytest.mark.parametrize(
    "dtype, expected",
    [("float64", np.float64), (np.float32, np.float32), (engine.float64, np.float64), (engine.int64, np.int64)],
)
def test_dtype_argument_overrides(dtype, expected):
    assert Tensor([1.0, 2.0], dtype=dtype).dtype == expected
    assert Tensor(np.ones(2, dtype=np.float32), dtype=dtype).dtype == expected


def test_tensor_copies_its_numpy_input_like_torch_tensor():
    arr = np.ones(3)
    t = Tensor(arr)
    arr[0] = 5.0
    assert t.data[0] == 1.0
    u = Tensor(t)
    t.data[1] = 7.0
    assert u.data[1] == 1.0


def test_requires_grad_at_construction():
    t = engine.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.grad is None


def test_object_data_is_a_type_error():
    with pytest.raises(TypeError, match="tensor: cannot build a tensor from"):
        Tensor([1.0, "a", None])


# ---------------------------------------------------------------- attributes and conversions
def test_shape_attributes():
    t = Tensor(np.zeros((2, 3, 4)))
    assert t.shape == (2, 3, 4) and t.ndim == 3 and t.dim() == 3
    assert t.size() == (2, 3, 4) and t.size(-1) == 4 and t.numel() == 24
    assert t.T.shape == (4, 3, 2)
    assert len(t) == 2


def test_len_of_a_0d_tensor_is_an_error():
    with pytest.raises(TypeError, match="len"):
        len(Tensor(1.0))


def test_item_numpy_tolist_float_int():
    assert Tensor(2.5).item() == 2.5 and isinstance(Tensor(2.5).item(), float)
    assert engine.tensor(3).item() == 3 and isinstance(engine.tensor(3).item(), int)
    assert Tensor([[4.0]]).item() == 4.0
    assert float(Tensor([1.5])) == 1.5 and int(engine.tensor(7)) == 7
    t = Tensor(np.arange(3.0))
    assert isinstance(t.numpy(), np.ndarray) and np.shares_memory(t.numpy(), t.data)
    assert t.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match=r"item: only a single-element tensor .* shape \(3,\)"):
        t.item()


def test_bool_of_a_tensor():
    assert bool(Tensor(1.0)) and not bool(Tensor([0.0]))
    with pytest.raises(RuntimeError, match=r"bool\(\): a tensor of shape \(2,\) has 2 values"):
        bool(Tensor([1.0, 2.0]))


def test_type_conversions():
    t = Tensor([1.7, -2.2])
    assert t.double().dtype == np.float64 and t.float() is t
    assert t.long().dtype == np.int64 and t.long().tolist() == [1, -2]
    assert t.int().dtype == np.int32
    assert t.bool().dtype == np.bool_
    assert t.to(np.float64).dtype == np.float64


def test_repr_shows_values_dtype_and_grad_state():
    assert repr(Tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(Tensor(np.array([1.0, 2.0]))) == "tensor([1., 2.], dtype=float64)"
    assert repr(Tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(Tensor([1.0], requires_grad=True) * 2) == "tensor([2.], grad_fn=<Mul>)"
    assert repr(engine.tensor([1, 2])) == "tensor([1, 2])"
    assert "tensor(" in repr(Tensor(np.zeros((2, 2))))


def test_setitem_refuses_to_break_a_gradient_but_works_under_no_grad():
    w = Tensor(np.zeros(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="setitem: a leaf Variable that requires grad is being used in an in-place"):
        w[0] = 1.0
    with engine.no_grad():
        w[0] = 1.0
        w[1:] = Tensor(np.array([2.0, 3.0]))
    np.testing.assert_array_equal(w.data, [1.0, 2.0, 3.0])
    c = Tensor(np.zeros(2))
    c[np.array([True, False])] = 5.0
    assert c.data.tolist() == [5.0, 0.0]


# ---------------------------------------------------------------- comparisons
COMPARISONS = ["__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"]


@pytest.mark.parametrize("op", COMPARISONS)
def test_comparisons_match_torch_and_carry_no_gradient(op):
    torch = require_torch()
    a = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    b = np.array([2.0, 2.0, 2.0])
    x = Tensor(a, requires_grad=True)
    for other, torch_other in [(Tensor(b), torch.tensor(b)), (2.0, 2.0), (b, torch.tensor(b))]:
        got = getattr(x, op)(other)
        want = getattr(torch.tensor(a), op)(torch_other)
        assert got.dtype == np.bool_ and not got.requires_grad and got.grad_fn is None
        np.testing.assert_array_equal(got.data, want.numpy())


def test_logical_operators_and_any_all():
    t = Tensor([1.0, -1.0, 2.0])
    m = (t > 0) & (t < 2)
    assert m.tolist() == [True, False, False]
    assert ((t > 1) | (t < 0)).tolist() == [False, True, True]
    assert (~(t > 0)).tolist() == [False, True, False]
    assert bool((t > -5).all()) and not bool((t > 5).any())
    with pytest.raises(TypeError, match=r"~ \(bitwise_not\) needs a bool or integer tensor, got float32"):
        ~t


def test_tensor_is_hashable_by_identity():
    a, b = Tensor([1.0]), Tensor([1.0])
    assert len({a, b}) == 2


# ---------------------------------------------------------------- factories
@pytest.mark.parametrize(
    "make, shape, value",
    [
        (lambda: engine.zeros(2, 3), (2, 3), 0.0),
        (lambda: engine.zeros((2, 3)), (2, 3), 0.0),
        (lambda: engine.ones(4), (4,), 1.0),
        (lambda: engine.ones([2, 2]), (2, 2), 1.0),
        (lambda: engine.full((2, 3), 1.5), (2, 3), 1.5),
        (lambda: engine.full(3, -2.0), (3,), -2.0),
        (lambda: engine.zeros_like(Tensor(np.ones((3, 1), dtype=np.float32))), (3, 1), 0.0),
        (lambda: engine.ones_like(Tensor(np.zeros((1, 2), dtype=np.float32))), (1, 2), 1.0),
    ],
)
def test_constant_factories(make, shape, value):
    t = make()
    assert t.shape == shape and t.dtype == np.float32 and not t.requires_grad
    assert np.all(t.data == value)


def test_factory_dtypes_match_torch():
    torch = require_torch()
    pairs = [
        (engine.zeros(2), torch.zeros(2)),
        (engine.full((2,), 3), torch.full((2,), 3)),
        (engine.full((2,), 3.0), torch.full((2,), 3.0)),
        (engine.arange(5), torch.arange(5)),
        (engine.arange(0, 1, 0.25), torch.arange(0, 1, 0.25)),
        (engine.linspace(0, 1, 5), torch.linspace(0, 1, 5)),
        (engine.eye(3), torch.eye(3)),
        (engine.eye(2, 3), torch.eye(2, 3)),
        (engine.zeros_like(engine.tensor([1, 2])), torch.zeros_like(torch.tensor([1, 2]))),
        (engine.randint(0, 5, (3,)), torch.randint(0, 5, (3,))),
        (engine.randn(2), torch.randn(2)),
        (engine.rand(2), torch.rand(2)),
    ]
    for ours, theirs in pairs:
        assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch.")), (ours, theirs)
        assert ours.shape == tuple(theirs.shape)
    for ours, theirs in pairs[:9]:  # the deterministic ones: same values too
        np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-7)


def test_factory_values():
    np.testing.assert_array_equal(engine.arange(2, 8, 3).data, [2, 5])
    np.testing.assert_allclose(engine.linspace(-1, 1, 5).data, [-1, -0.5, 0, 0.5, 1])
    np.testing.assert_array_equal(engine.eye(2).data, [[1, 0], [0, 1]])
    assert engine.zeros(2, dtype="float64").dtype == np.float64
    assert engine.randn(3, requires_grad=True).requires_grad
    assert engine.ones(2, requires_grad=True).is_leaf


def test_random_factories_ranges():
    engine.manual_seed(0)
    r = engine.rand(1000)
    assert r.data.min() >= 0.0 and r.data.max() < 1.0
    i = engine.randint(3, size=(1000,))
    assert set(np.unique(i.data)) == {0, 1, 2}
    j = engine.randint(-2, 2, (50,))
    assert j.data.min() >= -2 and j.data.max() < 2
    n = engine.randn(10_000)
    assert abs(n.data.mean()) < 0.05 and abs(n.data.std() - 1) < 0.05


def test_manual_seed_makes_draws_reproducible():
    engine.manual_seed(123)
    a = (engine.randn(3, 4), engine.rand(5), engine.randint(0, 10, (6,)))
    engine.manual_seed(123)
    b = (engine.randn(3, 4), engine.rand(5), engine.randint(0, 10, (6,)))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.data, y.data)
    engine.manual_seed(124)
    assert not np.array_equal(engine.randn(3, 4).data, a[0].data)


def test_manual_seed_replaces_the_generator_each_time():
    engine.manual_seed(7)
    first = engine.random.generator()
    engine.manual_seed(7)
    assert engine.random.generator() is not first
    with pytest.raises(TypeError, match="manual_seed: seed must be an int"):
        engine.manual_seed(1.5)


def test_factory_errors():
    with pytest.raises(ValueError, match=r"zeros: sizes must be non-negative, got \(2, -1\)"):
        engine.zeros(2, -1)
    with pytest.raises(ValueError, match=r"randint: high \(2\) must be greater than low \(2\)"):
        engine.randint(2, 2, (3,))
    with pytest.raises(ValueError, match="arange: step must not be 0"):
        engine.arange(0, 5, 0)
    with pytest.raises(ValueError, match="linspace: steps must be at least 1"):
        engine.linspace(0, 1, 0)
    with pytest.raises(TypeError, match="only floating-point"):
        engine.arange(3, requires_grad=True)


# The API contract's names, by its own groups (Tensor, factories, free functions, methods): scripts
# rely on each, so a rename or a removal must fail here; they are pinned, not read from __all__.
CONTRACT_FUNCTIONS = {
    "tensor": ["Tensor", "tensor"],
    "factories": [
        "zeros",
        "ones",
        "full",
        "zeros_like",
        "ones_like",
        "randn",
        "rand",
        "randint",
        "arange",
        "linspace",
        "eye",
    ],
    "free_functions": ["cat", "stack", "where", "maximum", "minimum", "matmul", "log"],
    "seed_grad_mode_gradcheck_io": ["manual_seed", "no_grad", "is_grad_enabled", "gradcheck", "save", "load"],
}
CONTRACT_METHODS = {
    "conversions": ["backward", "numpy", "item", "detach", "requires_grad_"],
    "movement": ["reshape", "view", "flatten", "transpose", "permute", "squeeze", "unsqueeze", "expand"],
    "reductions": ["sum", "mean", "var", "std", "max", "min", "amax", "argmax", "argmin", "prod"],
    "elementwise": [
        "exp",
        "log",
        "log2",
        "log10",
        "sqrt",
        "abs",
        "sin",
        "cos",
        "tanh",
        "sigmoid",
        "relu",
        "clamp",
        "clip",
    ],
    "softmax_and_mask": ["softmax", "log_softmax", "logsumexp", "masked_fill"],
}


@pytest.mark.parametrize("group", CONTRACT_FUNCTIONS)
def test_the_contracts_functions_exist_and_are_exported(group):
    missing = [n for n in CONTRACT_FUNCTIONS[group] if not callable(getattr(engine, n, None))]
    assert not missing, missing
    assert set(CONTRACT_FUNCTIONS[group]) <= set(engine.__all__)  # from engine import * gives them


@pytest.mark.parametrize("group", CONTRACT_METHODS)
def test_the_contracts_tensor_methods_exist(group):
    missing = [n for n in CONTRACT_METHODS[group] if not callable(getattr(Tensor, n, None))]
    assert not missing, missing


# ---------------------------------------------------------------- promotion follows torch, not NumPy
# Each row is one expression written once: T builds a tensor (engine.Tensor or torch.tensor).
PROMOTION = [
    ("float32_times_python_float", np.float32, lambda t, T: t * 1.5),
    ("float32_times_numpy_float64_scalar", np.float32, lambda t, T: t * np.float64(1.5)),
    ("float32_over_np_sqrt", np.float32, lambda t, T: t / np.sqrt(4.0)),
    ("float32_pow_numpy_scalar", np.float32, lambda t, T: t ** np.float64(1.5)),
    ("numpy_scalar_minus_float32", np.float32, lambda t, T: np.float64(2.0) - t),
    ("float32_plus_numpy_float32_scalar", np.float32, lambda t, T: t + np.float32(1)),
    ("float32_times_numpy_int_scalar", np.float32, lambda t, T: t * np.int64(3)),
    ("float32_times_int64_tensor", np.float32, lambda t, T: t * T(np.array([1, 0, 2]))),
    ("int64_tensor_times_float32", np.float32, lambda t, T: T(np.array([1, 0, 2])) * t),
    ("float32_plus_bool_tensor", np.float32, lambda t, T: t + T(np.array([True, False, True]))),
    ("float32_plus_float64_tensor", np.float32, lambda t, T: t + T(np.ones(3))),
    ("int_times_python_float", np.int64, lambda t, T: t * 1.5),
    ("int_times_numpy_float", np.int64, lambda t, T: t * np.float64(1.5)),
    ("python_float_minus_int", np.int64, lambda t, T: 1.5 - t),
    ("int_true_division", np.int64, lambda t, T: t / 2),
    ("int_reflected_division", np.int64, lambda t, T: 6 / t),
    ("int_over_int_tensor", np.int64, lambda t, T: t / T(np.array([2, 4, 8]))),
    ("int_times_int", np.int64, lambda t, T: t * 2),
    ("int_pow_float", np.int64, lambda t, T: t**0.5),
    ("int_pow_int", np.int64, lambda t, T: t**2),
    ("float_base_pow_int", np.int64, lambda t, T: 1.5**t),
    ("int_base_pow_int", np.int64, lambda t, T: 2**t),
    ("int_plus_bool", np.int64, lambda t, T: t + True),
]


@pytest.mark.parametrize("name, dtype, fn", PROMOTION, ids=[r[0] for r in PROMOTION])
def test_dtype_promotion_matches_torch(name, dtype, fn):
    """e.g. ``x / np.sqrt(d)`` keeps float32 and ``arange(3) * 0.5`` is float32, as in PyTorch."""
    torch = require_torch()
    values = np.array([1, 2, 3], dtype=dtype)
    ours = fn(Tensor(values), Tensor)
    theirs = fn(torch.tensor(values), torch.tensor)
    assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch.")), (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours.data, theirs.numpy(), rtol=1e-6)


def test_comparison_shape_mismatch_names_the_op():
    with pytest.raises(ValueError, match=r"less: shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        Tensor(np.ones((2, 3))) < Tensor(np.ones(4))


def test_mixed_dtype_gradient_flows_to_the_float_input():
    x = Tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    mask = Tensor(np.array([0, 1, 2]))  # int64, as one_hot returns
    y = x * mask
    assert y.dtype == np.float32
    y.backward(np.ones(3, dtype=np.float32))
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 2.0])


# ---------------------------------------------------------------- 0-d inputs, int var, tensor bounds


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp"])
def test_single_dim_ops_on_a_0d_tensor_match_torch(op):
    torch = require_torch()
    x = engine.tensor(np.float64(1.7), requires_grad=True)
    tx = torch.tensor(1.7, dtype=torch.float64, requires_grad=True)
    out, t_out = getattr(x, op)(0), getattr(tx, op)(0)
    assert out.shape == () and np.allclose(out.data, t_out.detach().numpy())
    out.backward(np.float64(0.3))
    t_out.backward(torch.tensor(0.3, dtype=torch.float64))
    assert np.allclose(x.grad.numpy(), tx.grad.numpy())


def test_max_along_a_dim_of_a_0d_tensor_is_itself_at_index_0():
    values, indices = engine.tensor(3.0).max(0)
    assert values.item() == 3.0 and indices.item() == 0
    with pytest.raises(IndexError, match="max"):
        engine.tensor(3.0).max(1)


def test_var_of_an_integer_tensor_is_a_clear_error():
    with pytest.raises(TypeError, match="var: needs a floating-point tensor"):
        engine.tensor([1, 2, 3]).var()


def test_clamp_with_tensor_bounds_matches_torch_and_gradcheck():
    torch = require_torch()
    rng = np.random.default_rng(3)
    x, lo = rng.standard_normal(7), rng.standard_normal(7) - 0.5
    hi, g = lo + 1.0, rng.standard_normal(7)
    ts = [engine.tensor(a, requires_grad=True) for a in (x, lo, hi)]
    out = ts[0].clamp(ts[1], ts[2])
    out.backward(g)
    tt = [torch.tensor(a, requires_grad=True) for a in (x, lo, hi)]
    t_out = tt[0].clamp(tt[1], tt[2])
    t_out.backward(torch.tensor(g))
    assert np.allclose(out.data, t_out.detach().numpy())
    for mine, theirs in zip(ts, tt):
        assert np.allclose(mine.grad.numpy(), theirs.grad.numpy())
    assert engine.gradcheck(lambda a, b, c: a.clamp(b, c), [engine.tensor(a, requires_grad=True) for a in (x, lo, hi)])


@pytest.mark.parametrize("data", [2.7, [0.1, 2.7], [[1e-300, 1.0 + 2.0**-40]]])
def test_tensor_with_a_dtype_casts_python_floats_once(data):
    """``engine.tensor(data, dtype=float64)`` holds the Python floats exactly, as torch.tensor
    does; they were once rounded to float32 first (2.7 became 2.700000047683716)."""
    held = engine.tensor(data, dtype=engine.float64)
    assert held.dtype == np.float64
    np.testing.assert_array_equal(held.data, np.asarray(data, dtype=np.float64))
    assert engine.tensor(data).dtype == np.float32  # without a dtype, Python floats still give float32


def test_tensor_with_a_dtype_matches_torch_tensor():
    torch = require_torch()
    for data in (2.7, [0.1, 2.7], 3, [1, 2], True, [[0.5, 1e-8]]):
        for ours, theirs in (
            (None, None),
            (engine.float64, torch.float64),
            (engine.float32, torch.float32),
            (engine.int64, torch.int64),
        ):
            a, b = engine.tensor(data, dtype=ours), torch.tensor(data, dtype=theirs)
            assert str(a.dtype) == str(b.dtype).removeprefix("torch."), (data, ours)
            np.testing.assert_array_equal(a.data, b.numpy())

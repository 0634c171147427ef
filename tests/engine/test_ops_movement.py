"""Movement ops: reshape/view/flatten/transpose/permute/squeeze/unsqueeze/expand/T, indexing
(slices, negative steps, integer arrays with repeats, boolean masks), cat/stack, pad, flip."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import require_torch
from torch_compare import SAME, check_op, draw

import engine
import engine.functional as F
from engine import Tensor

pytestmark = pytest.mark.oracle


def _torch():
    return require_torch()


# (id, engine fn, torch fn or SAME, input shape)
MOVEMENT = [
    ("reshape", lambda x: x.reshape(4, 6), SAME, (2, 3, 4)),
    ("reshape_tuple_minus1", lambda x: x.reshape((-1, 2)), SAME, (2, 3, 4)),
    ("view", lambda x: x.view(6, -1), SAME, (2, 3, 4)),
    ("flatten_all", lambda x: x.flatten(), SAME, (2, 3, 4)),
    ("flatten_from_1", lambda x: x.flatten(1), SAME, (2, 3, 4)),
    ("flatten_middle", lambda x: x.flatten(0, 1), SAME, (2, 3, 4)),
    ("transpose", lambda x: x.transpose(0, 2), SAME, (2, 3, 4)),
    ("transpose_negative", lambda x: x.transpose(-1, -2), SAME, (2, 3, 4)),
    ("permute", lambda x: x.permute(2, 0, 1), SAME, (2, 3, 4)),
    ("permute_tuple", lambda x: x.permute((1, 2, 0)), SAME, (2, 3, 4)),
    ("T_2d", lambda x: x.T, SAME, (3, 4)),
    ("T_3d", lambda x: x.T, lambda x: x.permute(2, 1, 0), (2, 3, 4)),
    ("squeeze_all", lambda x: x.squeeze(), SAME, (1, 3, 1, 2)),
    ("squeeze_dim", lambda x: x.squeeze(2), SAME, (1, 3, 1, 2)),
    ("squeeze_non_one_dim", lambda x: x.squeeze(1), SAME, (1, 3, 1, 2)),
    ("unsqueeze", lambda x: x.unsqueeze(1), SAME, (3, 2)),
    ("unsqueeze_negative", lambda x: x.unsqueeze(-1), SAME, (3, 2)),
    ("expand", lambda x: x.expand(4, 3, 2), SAME, (3, 1)),
    ("expand_minus1", lambda x: x.expand(-1, 5), SAME, (3, 1)),
    ("expand_leading", lambda x: x.expand(2, 3, 4), SAME, (4,)),
    ("flip_one", lambda x: x.flip(0), SAME, (3, 4)),
    ("flip_two", lambda x: x.flip((0, 1)), SAME, (3, 4)),
    ("flip_negative", lambda x: x.flip(-1), SAME, (2, 3, 2)),
    # indexing
    ("index_int", lambda x: x[1], SAME, (3, 4)),
    ("index_negative_int", lambda x: x[-1, 2], SAME, (3, 4)),
    ("index_slice", lambda x: x[1:, :3], SAME, (3, 4)),
    ("index_step", lambda x: x[::2, 1::2], SAME, (5, 4)),
    ("index_negative_step", lambda x: x[::-2, 1:], lambda x: x.flip(0)[::2, 1:], (5, 3)),
    ("index_reverse", lambda x: x[:, ::-1], lambda x: x.flip(1), (3, 4)),
    ("index_ellipsis", lambda x: x[..., 0], SAME, (2, 3, 4)),
    ("index_none", lambda x: x[:, None, 1], SAME, (3, 4)),
    ("index_int_array_repeated", lambda x: x[np.array([0, 2, 0, 0])], lambda x: x[[0, 2, 0, 0]], (3, 4)),
    ("index_list_repeated", lambda x: x[[1, 1, 2]], SAME, (3, 4)),
    (
        "index_two_arrays_repeated",
        lambda x: x[np.array([0, 0, 2]), np.array([1, 1, 3])],
        lambda x: x[[0, 0, 2], [1, 1, 3]],
        (3, 4),
    ),
    ("index_slice_and_array", lambda x: x[:, np.array([3, 0, 3])], lambda x: x[:, [3, 0, 3]], (3, 4)),
    ("index_array_2d", lambda x: x[np.array([[0, 1], [1, 1]])], lambda x: x[_torch().tensor([[0, 1], [1, 1]])], (3, 4)),
    ("index_negative_array", lambda x: x[np.array([-1, -1, 0])], lambda x: x[[-1, -1, 0]], (3, 4)),
    ("index_int_tensor", lambda x: x[engine.tensor(np.array([2, 2]))], lambda x: x[[2, 2]], (3, 4)),
    ("index_bool_mask", lambda x: x[MASK], lambda x: x[_torch().tensor(MASK)], (3, 4)),
    (
        "index_bool_rows",
        lambda x: x[np.array([True, False, True])],
        lambda x: x[_torch().tensor([True, False, True])],
        (3, 4),
    ),
    ("index_bool_tensor", lambda x: x[x > 0], lambda x: x[x > 0], (3, 4)),
]
MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])


@pytest.mark.parametrize("name, fn, torch_fn, shape", MOVEMENT, ids=[r[0] for r in MOVEMENT])
def test_movement_matches_torch_and_gradcheck(name, fn, torch_fn, shape):
    check_op(fn, torch_fn, [draw(shape, seed=21)])


def test_repeated_indices_accumulate():
    x = Tensor(np.zeros((3, 2)), requires_grad=True)
    x[np.array([0, 2, 0, 0])].backward(np.ones((4, 2)))
    np.testing.assert_array_equal(x.grad.numpy(), [[3, 3], [0, 0], [1, 1]])


def test_getitem_results_are_not_views_that_leak_writes_to_the_gradient():
    x = Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = x[0]
    y.backward(np.ones(3))
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1, 1], [0, 0, 0]])


# ---------------------------------------------------------------- cat / stack
CAT = [
    (
        "cat_dim0",
        lambda a, b, c: engine.cat([a, b, c], 0),
        lambda a, b, c: _torch().cat([a, b, c], 0),
        [(2, 3), (1, 3), (4, 3)],
    ),
    (
        "cat_dim1",
        lambda a, b, c: engine.cat([a, b, c], dim=1),
        lambda a, b, c: _torch().cat([a, b, c], dim=1),
        [(2, 1), (2, 3), (2, 2)],
    ),
    (
        "cat_dim_negative",
        lambda a, b: engine.cat((a, b), -1),
        lambda a, b: _torch().cat((a, b), -1),
        [(2, 3, 1), (2, 3, 2)],
    ),
    (
        "stack_dim0",
        lambda a, b, c: engine.stack([a, b, c]),
        lambda a, b, c: _torch().stack([a, b, c]),
        [(2, 3), (2, 3), (2, 3)],
    ),
    (
        "stack_dim_last",
        lambda a, b: engine.stack([a, b], dim=-1),
        lambda a, b: _torch().stack([a, b], dim=-1),
        [(2, 3), (2, 3)],
    ),
    ("stack_dim1", lambda a, b: engine.stack([a, b], dim=1), lambda a, b: _torch().stack([a, b], dim=1), [(4,), (4,)]),
]


@pytest.mark.parametrize("name, fn, torch_fn, shapes", CAT, ids=[r[0] for r in CAT])
def test_cat_and_stack(name, fn, torch_fn, shapes):
    check_op(fn, torch_fn, [draw(s, seed=22 + i) for i, s in enumerate(shapes)])


def test_cat_with_a_constant_and_a_tensor_used_twice():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    out = engine.cat([x, np.array([5.0]), x * 3])
    np.testing.assert_array_equal(out.data, [1, 2, 5, 3, 6])
    out.backward(np.array([1.0, 1.0, 1.0, 1.0, 2.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 7.0])


# ---------------------------------------------------------------- pad
PADS = [(1, 1), (0, 2), (1, 2, 3, 0), (2, 1, 0, 1, 1, 1), (-1, 0), (1, -1, -1, 2)]


@pytest.mark.parametrize("pad", PADS, ids=[str(p) for p in PADS])
def test_pad_matches_torch(pad):
    torch = _torch()
    check_op(lambda x: F.pad(x, pad), lambda x: torch.nn.functional.pad(x, pad), [draw((2, 3, 4), seed=30)])


def test_pad_with_a_value():
    torch = _torch()
    check_op(
        lambda x: F.pad(x, (1, 1), value=-2.5),
        lambda x: torch.nn.functional.pad(x, (1, 1), value=-2.5),
        [draw((2, 3), seed=31)],
    )


# ---------------------------------------------------------------- errors name the op and shapes
def test_index_out_of_range_names_the_shape():
    x = Tensor(np.ones((3, 4)))
    with pytest.raises(IndexError, match=r"index: .*5.*\(tensor shape \(3, 4\)\)"):
        x[5]
    with pytest.raises(IndexError, match=r"tensor shape \(3, 4\)"):
        x[0, np.array([1, 4])]
    with pytest.raises(IndexError, match=r"tensor shape \(3, 4\)"):
        x[np.array([True, False])]


def test_reshape_error_names_both_shapes():
    with pytest.raises(
        ValueError, match=r"reshape: cannot reshape a tensor of shape \(2, 3\) \(6 elements\) into shape \(4, 2\)"
    ):
        Tensor(np.ones((2, 3))).reshape(4, 2)


def test_cat_error_names_the_shapes():
    with pytest.raises(ValueError, match=r"cat: shapes \[\(2, 3\), \(2, 4\)\] must match except in dim 0"):
        engine.cat([Tensor(np.ones((2, 3))), Tensor(np.ones((2, 4)))], dim=0)
    with pytest.raises(ValueError, match="cat: expected a non-empty sequence"):
        engine.cat([])


def test_stack_error_names_the_shapes():
    with pytest.raises(ValueError, match=r"stack: all tensors must have the same shape, got \[\(2,\), \(3,\)\]"):
        engine.stack([Tensor(np.ones(2)), Tensor(np.ones(3))])


def test_permute_expand_unsqueeze_errors():
    x = Tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"permute: \(0, 0\) is not a permutation .* shape \(2, 3\)"):
        x.permute(0, 0)
    with pytest.raises(ValueError, match=r"expand: .*\(2, 3\).*\(2, 4\)"):
        x.expand(2, 4)
    with pytest.raises(ValueError, match=r"expand: cannot expand shape \(2, 3\) to fewer dims"):
        x.expand(3)
    with pytest.raises(IndexError, match="unsqueeze: dim 3 is out of range"):
        x.unsqueeze(3)
    with pytest.raises(IndexError, match="transpose: dim 2 is out of range"):
        x.transpose(0, 2)


def test_pad_errors():
    x = Tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"pad: needs an even number"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match=r"pad: padding \(-4, 0\) crops more than the size of shape \(2, 3\)"):
        F.pad(x, (-4, 0))


def test_iteration_and_len():
    x = Tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    rows = list(x)
    assert len(rows) == len(x) == 3
    engine.stack(rows).backward(np.ones((3, 2)))
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 2)))


# ---------------------------------------------------------------- issue 27: gather, scatter, sort, ...
GATHER_INDEX = np.array([[0, 2, 2], [1, 0, 3]])  # repeats accumulate their gradient
PICK = np.array([2, 0, 2])


@pytest.mark.parametrize(
    "name, fn",
    [
        ("clone", lambda x: x.clone()),
        ("contiguous_of_transpose", lambda x: x.T.contiguous().view(-1)),
        ("t", lambda x: x.t()),
        ("tril", lambda x: x.tril()),
        ("triu_offset", lambda x: x.triu(1)),
        ("tril_negative", lambda x: x.tril(-1)),
        ("gather_dim1", lambda x: x.gather(1, _index(x, GATHER_INDEX))),
        ("gather_dim0", lambda x: x.gather(0, _index(x, GATHER_INDEX[:, :2]))),
        ("index_select", lambda x: x.index_select(1, _index(x, PICK))),
        ("scatter_src", lambda x: x.scatter(1, _index(x, np.array([[3], [0], [1]])), x[:, :1] * 2)),
        ("scatter_value", lambda x: x.scatter(0, _index(x, np.array([[2, 1, 0, 2]])), 0.5)),
        ("sort_values", lambda x: x.sort(dim=1).values),
        ("sort_descending_dim0", lambda x: x.sort(0, descending=True).values),
        ("topk", lambda x: x.topk(2, dim=1).values),
        ("topk_smallest", lambda x: x.topk(2, dim=0, largest=False).values),
    ],
)
def test_selection_methods_match_torch(name, fn):
    check_op(fn, SAME, [draw((3, 4), seed=31)])


def _index(x, index):
    """An int64 index tensor of the library that ``x`` belongs to (torch or engine)."""
    return engine.tensor(index) if isinstance(x, Tensor) else _torch().tensor(index)


def test_sort_and_topk_indices_match_torch():
    torch = _torch()
    a = draw((4, 5), seed=32)
    for ours, theirs in (
        (Tensor(a).sort(1), torch.tensor(a).sort(1)),
        (Tensor(a).sort(0, descending=True), torch.tensor(a).sort(0, descending=True)),
        (Tensor(a).topk(3), torch.tensor(a).topk(3)),
        (engine.topk(a, 2, dim=0, largest=False), torch.topk(torch.tensor(a), 2, dim=0, largest=False)),
    ):
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    with pytest.raises(ValueError, match=r"topk: k=6 is out of range for dim -1 of size 5"):
        Tensor(a).topk(6)
    with pytest.raises(IndexError, match=r"gather: index 4 is out of bounds for dim 0 of size 4"):
        Tensor(a).gather(0, engine.tensor([[4]]))


def test_free_functions_follow_torch():
    torch = _torch()
    (a,) = [draw((3, 4), seed=33)]
    x, t = Tensor(a), torch.tensor(a)
    pairs = [
        (engine.max(x, 1).values, torch.max(t, 1).values),
        (engine.max(x, 1).indices, torch.max(t, 1).indices),
        (engine.min(x), torch.min(t)),
        (engine.max(x, Tensor(-a)), torch.max(t, torch.tensor(-a))),
        (engine.softmax(x, 1), torch.softmax(t, 1)),
        (engine.exp(x), torch.exp(t)),
        (engine.sum(x, 0), torch.sum(t, 0)),
        (engine.cumsum(x, 1), torch.cumsum(t, 1)),
        (engine.sqrt(engine.abs(x)), torch.sqrt(torch.abs(t))),
        (engine.tril(x), torch.tril(t)),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)

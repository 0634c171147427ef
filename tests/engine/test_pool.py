"""Pooling: max_pool2d (ties, overlapping windows, padding, indices), avg_pool2d, their modules."""

import numpy as np
import pytest
from oracle import check_against_torch, check_gradcheck, random_arrays, require_torch

import engine
import engine.functional as F
from engine import nn

# (input shape, keyword settings)
MAX_CASES = [
    ((2, 3, 8, 8), dict(kernel_size=2)),
    ((2, 3, 7, 9), dict(kernel_size=3, stride=1, padding=1)),  # overlapping windows
    ((2, 2, 9, 8), dict(kernel_size=3, stride=2, padding=1)),  # overlapping, stride 2
    ((1, 2, 7, 8), dict(kernel_size=(3, 2), stride=(2, 1))),  # non-square
    ((1, 2, 9, 9), dict(kernel_size=2, stride=2, dilation=2)),
    ((2, 1, 7, 6), dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1))),
]


@pytest.mark.parametrize("shape, kw", MAX_CASES)
def test_max_pool2d_matches_torch(shape, kw):
    torch = require_torch()
    (x,) = random_arrays(shape, seed=1)
    check_against_torch(lambda t: F.max_pool2d(t, **kw), lambda t: torch.nn.functional.max_pool2d(t, **kw), [x])


@pytest.mark.parametrize("shape, kw", MAX_CASES)
def test_max_pool2d_ties_match_torch(shape, kw):
    # values from {0, 1, 2}: most windows hold several maxima; the gradient must go to the same one
    torch = require_torch()
    x = np.random.default_rng(2).integers(0, 3, size=shape).astype(np.float64)
    check_against_torch(lambda t: F.max_pool2d(t, **kw), lambda t: torch.nn.functional.max_pool2d(t, **kw), [x])


def test_max_pool2d_tie_gradient_goes_to_the_first_maximum_of_each_window():
    x = engine.Tensor(np.ones((1, 1, 4, 4)), requires_grad=True)
    out = F.max_pool2d(x, 2)
    g = np.array([[[[1.0, 2.0], [3.0, 4.0]]]])
    out.backward(g)
    expected = np.zeros((4, 4))
    expected[0, 0], expected[0, 2], expected[2, 0], expected[2, 2] = 1, 2, 3, 4  # top-left of each window
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], expected)


def test_max_pool2d_overlapping_windows_add_their_gradients():
    # one large pixel in the centre wins all four overlapping 2x2 windows (stride 1)
    x = np.zeros((1, 1, 3, 3))
    x[0, 0, 1, 1] = 5.0
    t = engine.Tensor(x, requires_grad=True)
    F.max_pool2d(t, 2, stride=1).backward(np.array([[[[1.0, 10.0], [100.0, 1000.0]]]]))
    assert t.grad.numpy()[0, 0, 1, 1] == 1111.0 and t.grad.numpy().sum() == 1111.0


def test_max_pool2d_padding_never_wins():
    torch = require_torch()
    (x,) = random_arrays((1, 2, 5, 5), seed=3, low=-9.0, high=-1.0)  # all negative: zero padding would win
    out = F.max_pool2d(x, 3, stride=2, padding=1)
    assert out.data.max() < 0
    np.testing.assert_array_equal(out.data, torch.nn.functional.max_pool2d(torch.tensor(x), 3, 2, 1).numpy())


def test_max_pool2d_return_indices_match_torch():
    torch = require_torch()
    x = np.random.default_rng(4).integers(0, 3, size=(2, 2, 7, 6)).astype(np.float64)
    for kw in [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=2, dilation=2, stride=1),
    ]:
        out, idx = F.max_pool2d(x, return_indices=True, **kw)
        t_out, t_idx = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kw)
        np.testing.assert_array_equal(out.data, t_out.numpy())
        np.testing.assert_array_equal(idx.data, t_idx.numpy())


def test_max_pool2d_gradcheck():
    # distinct values: central differences are only defined away from ties
    x = np.random.default_rng(5).permutation(2 * 2 * 7 * 7).reshape(2, 2, 7, 7) / 10.0
    check_gradcheck(lambda t: F.max_pool2d(t, 3, stride=2, padding=1), [x])


def test_max_pool2d_nan_propagates_as_in_torch():
    torch = require_torch()
    (x,) = random_arrays((1, 1, 4, 4), seed=6)
    x[0, 0, 1, 1] = np.nan
    out = F.max_pool2d(x, 2)
    np.testing.assert_array_equal(out.data, torch.nn.functional.max_pool2d(torch.tensor(x), 2).numpy())


# ----------------------------------------------------------------------------- average
AVG_CASES = [
    ((2, 3, 8, 8), dict(kernel_size=2)),
    ((2, 2, 7, 9), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 2, 7, 9), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ((1, 2, 7, 8), dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 1), count_include_pad=False)),
    ((1, 2, 6, 6), dict(kernel_size=3, stride=1, padding=1, divisor_override=4)),
    ((2, 1, 5, 7), dict(kernel_size=(2, 3), stride=1)),
]


@pytest.mark.parametrize("shape, kw", AVG_CASES)
def test_avg_pool2d_matches_torch(shape, kw):
    torch = require_torch()
    (x,) = random_arrays(shape, seed=7)
    check_against_torch(lambda t: F.avg_pool2d(t, **kw), lambda t: torch.nn.functional.avg_pool2d(t, **kw), [x])


@pytest.mark.parametrize("shape, kw", [AVG_CASES[2], AVG_CASES[3]])
def test_avg_pool2d_gradcheck(shape, kw):
    check_gradcheck(lambda t: F.avg_pool2d(t, **kw), random_arrays(shape, seed=8))


def test_avg_pool2d_is_the_window_mean():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    out = F.avg_pool2d(x, 2).data[0, 0]
    np.testing.assert_array_equal(
        out, [[np.mean([0, 1, 4, 5]), np.mean([2, 3, 6, 7])], [np.mean([8, 9, 12, 13]), np.mean([10, 11, 14, 15])]]
    )


# ----------------------------------------------------------------------------- errors, modules
def test_pool_errors_name_the_numbers():
    x = engine.zeros(1, 1, 4, 4)
    with pytest.raises(ValueError, match=r"max_pool2d: padding \(2, 2\) must be at most half the kernel size \(3, 3\)"):
        F.max_pool2d(x, 3, padding=2)
    with pytest.raises(ValueError, match="max_pool2d.*kernel.*larger than the padded input"):
        F.max_pool2d(x, 5)
    with pytest.raises(ValueError, match="avg_pool2d: stride must be >= 1"):
        F.avg_pool2d(x, 2, stride=0)
    with pytest.raises(ValueError, match="max_pool2d: input must be 4-D"):
        F.max_pool2d(engine.zeros(4, 4), 2)
    with pytest.raises(ValueError, match="MaxPool2d: padding"):
        nn.MaxPool2d(2, padding=2)


def test_pool_modules_match_torch_modules():
    torch = require_torch()
    (x,) = random_arrays((2, 3, 9, 9), seed=9)
    pairs = [
        (nn.MaxPool2d(3, stride=2, padding=1), torch.nn.MaxPool2d(3, stride=2, padding=1)),
        (
            nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
            torch.nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
        ),
        (nn.MaxPool2d(2), torch.nn.MaxPool2d(2)),
    ]
    for mine, theirs in pairs:
        np.testing.assert_allclose(mine(engine.Tensor(x)).data, theirs(torch.tensor(x)).numpy(), rtol=1e-12)
        assert list(mine.parameters()) == []
    assert repr(nn.MaxPool2d(2)) == repr(torch.nn.MaxPool2d(2))


def test_unbatched_pooling_and_float32():
    x = np.random.default_rng(10).standard_normal((3, 6, 6)).astype(np.float32)
    out = F.max_pool2d(x, 2)
    assert out.shape == (3, 3, 3) and out.dtype == np.float32
    assert F.avg_pool2d(x, 3, stride=3).shape == (3, 2, 2)


# ----------------------------------------------------------------------------- ceil_mode (issue 27)
@pytest.mark.parametrize(
    "kw",
    [
        {"kernel_size": 2},
        {"kernel_size": 3, "stride": 2, "padding": 1},
        {"kernel_size": 3, "stride": 2},
        {"kernel_size": 2, "stride": 3, "padding": 1},
    ],
)
def test_ceil_mode_pools_match_torch(kw, torch):
    (x,) = random_arrays((2, 2, 5, 6), seed=51)
    check_against_torch(
        lambda t: F.max_pool2d(t, ceil_mode=True, **kw),
        lambda t: torch.nn.functional.max_pool2d(t, ceil_mode=True, **kw),
        [x],
    )
    for include in (True, False):
        check_against_torch(
            lambda t, c=include: nn.AvgPool2d(ceil_mode=True, count_include_pad=c, **kw)(t),
            lambda t, c=include: torch.nn.AvgPool2d(ceil_mode=True, count_include_pad=c, **kw)(t),
            [x],
        )
    check_gradcheck(lambda t: F.avg_pool2d(t, ceil_mode=True, **kw), [x])

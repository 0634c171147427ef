"""Convolution: im2col/col2im, conv2d, conv_transpose2d, the Conv2d/ConvTranspose2d modules, a small CNN."""

import math
import time

import numpy as np
import pytest
from conv_settings import conv_settings
from hypothesis import given, settings
from oracle import check_against_torch, check_gradcheck, random_arrays, require_torch

import engine
import engine.functional as F
from engine import nn, optim
from engine.ops.conv import col2im, im2col
from engine.shapes import conv2d_params, conv_output_size


# ----------------------------------------------------------------------------- im2col
def naive_im2col(x, k, s, p, d):
    """The definition, one element at a time: cols[n, c·kh·kw + i·kw + j, r·W_out + q]."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = k, s, p, d
    n, c, h, w = x.shape
    xp = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
    xp[:, :, ph : ph + h, pw : pw + w] = x
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    cols = np.zeros((n, c * kh * kw, ho * wo))
    for b in range(n):
        for ch in range(c):
            for i in range(kh):
                for j in range(kw):
                    for r in range(ho):
                        for q in range(wo):
                            cols[b, ch * kh * kw + i * kw + j, r * wo + q] = xp[b, ch, r * sh + i * dh, q * sw + j * dw]
    return cols


IM2COL_CASES = [
    ((3, 3), (1, 1), (0, 0), (1, 1)),
    ((3, 3), (1, 1), (1, 1), (1, 1)),
    ((2, 3), (2, 1), (1, 0), (1, 1)),
    ((3, 2), (2, 3), (0, 2), (2, 1)),
    ((1, 1), (3, 2), (0, 0), (1, 1)),
]


@pytest.mark.parametrize("k, s, p, d", IM2COL_CASES)
def test_im2col_matches_the_definition(k, s, p, d):
    (x,) = random_arrays((2, 3, 7, 8), seed=1)
    np.testing.assert_array_equal(im2col(x, k, s, p, d), naive_im2col(x, k, s, p, d))


@settings(max_examples=40)
@given(conv_settings(max_padding=2))
def test_im2col_and_conv2d_shapes_for_any_valid_setting(setting):
    (h, w), k, s, p, d = setting
    x = np.random.default_rng(h * 100 + w).standard_normal((1, 2, h, w))
    np.testing.assert_array_equal(im2col(x, k, s, p, d), naive_im2col(x, k, s, p, d))
    out = F.conv2d(x, np.ones((3, 2, *k)), stride=s, padding=p, dilation=d)
    assert out.shape == (1, 3, *conv_output_size((h, w), k, s, p, d))


def test_im2col_layout_is_torch_unfold():
    torch = require_torch()
    (x,) = random_arrays((2, 3, 6, 5), seed=2)
    expected = torch.nn.functional.unfold(torch.tensor(x), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    np.testing.assert_array_equal(im2col(x, (2, 3), (2, 1), 1, (1, 2)), expected.numpy())


def test_im2col_of_a_small_image_shows_each_window_as_a_column():
    x = np.arange(9.0).reshape(1, 1, 3, 3)  # 0 1 2 / 3 4 5 / 6 7 8
    cols = im2col(x, 2)
    # four 2x2 windows; column q lists the window's pixels row by row
    assert cols.shape == (1, 4, 4)
    np.testing.assert_array_equal(cols[0].T, [[0, 1, 3, 4], [1, 2, 4, 5], [3, 4, 6, 7], [4, 5, 7, 8]])
    assert im2col(x[0], 2).shape == (4, 4)  # unbatched input gives an unbatched matrix


@pytest.mark.parametrize("k, s, p, d", IM2COL_CASES)
def test_col2im_is_the_adjoint_of_im2col(k, s, p, d):
    # <im2col(x), c> = <x, col2im(c)> for every x, c: col2im adds each entry back where it came from
    (x,) = random_arrays((2, 3, 7, 8), seed=3)
    cols = im2col(x, k, s, p, d)
    (c,) = random_arrays(cols.shape, seed=4)
    back = col2im(c, (7, 8), k, s, p, d)
    assert back.shape == x.shape
    np.testing.assert_allclose(np.sum(cols * c), np.sum(x * back), rtol=1e-12)


def test_col2im_of_ones_counts_windows_per_pixel():
    counts = col2im(im2col(np.ones((1, 1, 4, 4)), 3), (4, 4), 3)[0, 0]
    # a 3x3 kernel over 4x4 has 2x2 placements; corners are in 1 window, the centre 2x2 in 4
    np.testing.assert_array_equal(counts, [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]])


def test_im2col_errors_name_the_numbers():
    with pytest.raises(ValueError, match="im2col.*kernel.*larger"):
        im2col(np.zeros((1, 1, 3, 3)), 5)
    with pytest.raises(ValueError, match="im2col: input must be"):
        im2col(np.zeros((3, 3)), 2)
    with pytest.raises(ValueError, match="col2im: cols has 5 columns"):
        col2im(np.zeros((1, 4, 5)), (3, 3), 2)


# ----------------------------------------------------------------------------- conv2d
# (input shape, weight shape, keyword settings, with bias)
CONV_CASES = [
    ((2, 3, 7, 7), (4, 3, 3, 3), {}, True),
    ((2, 3, 8, 7), (5, 3, 3, 3), dict(stride=2, padding=1), True),
    ((1, 2, 9, 8), (3, 2, 2, 3), dict(stride=(2, 1), padding=(1, 0)), False),  # non-square kernel
    ((2, 2, 9, 9), (3, 2, 3, 3), dict(dilation=2, padding=2), True),
    ((2, 3, 10, 9), (2, 3, 3, 2), dict(stride=(3, 2), padding=(2, 1), dilation=(1, 2)), False),
    ((2, 3, 6, 6), (4, 3, 1, 1), dict(stride=2), True),
    ((2, 4, 7, 6), (6, 2, 3, 3), dict(padding=1, groups=2), True),
    ((2, 3, 7, 6), (4, 3, 4, 3), dict(padding="same", dilation=(1, 2)), True),  # even kernel: asymmetric
    ((2, 3, 7, 6), (4, 3, 3, 3), dict(padding="valid"), False),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("x_shape, w_shape, kw, bias", CONV_CASES)
def test_conv2d_matches_torch_with_a_random_upstream_gradient(x_shape, w_shape, kw, bias):
    torch = require_torch()
    shapes = [x_shape, w_shape] + ([(w_shape[0],)] if bias else [])
    arrays = random_arrays(*shapes, seed=5)
    check_against_torch(lambda *t: F.conv2d(*t, **kw), lambda *t: torch.nn.functional.conv2d(*t, **kw), arrays)


@pytest.mark.parametrize("x_shape, w_shape, kw, bias", [CONV_CASES[1], CONV_CASES[4], CONV_CASES[6], CONV_CASES[7]])
def test_conv2d_gradcheck(x_shape, w_shape, kw, bias):
    shapes = [x_shape, w_shape] + ([(w_shape[0],)] if bias else [])
    check_gradcheck(lambda *t: F.conv2d(*t, **kw), random_arrays(*shapes, seed=6))


def test_conv2d_float32_stays_float32_and_unbatched_input_works():
    torch = require_torch()
    x, w, b = (a.astype(np.float32) for a in random_arrays((3, 6, 6), (2, 3, 3, 3), (2,), seed=7))
    out = F.conv2d(engine.Tensor(x), engine.Tensor(w), engine.Tensor(b), padding=1)
    assert out.dtype == np.float32 and out.shape == (2, 6, 6)
    expected = torch.nn.functional.conv2d(*(torch.tensor(a) for a in (x, w, b)), padding=1)
    np.testing.assert_allclose(out.data, expected.numpy(), atol=1e-5)


def test_conv2d_is_the_matrix_product_of_the_weight_and_im2col():
    x, w = random_arrays((2, 3, 6, 5), (4, 3, 3, 2), seed=8)
    out = F.conv2d(x, w, stride=(1, 2), padding=1)
    by_hand = (w.reshape(4, -1) @ im2col(x, (3, 2), (1, 2), 1)).reshape(out.shape)
    np.testing.assert_allclose(out.data, by_hand, rtol=1e-12)


def test_conv2d_errors_name_shapes_and_numbers():
    x = engine.zeros(2, 3, 8, 8)
    with pytest.raises(
        ValueError, match=r"conv2d: input of shape \(2, 3, 8, 8\) has 3 channels.*weight of shape \(4, 2, 3, 3\)"
    ):
        F.conv2d(x, engine.zeros(4, 2, 3, 3))
    with pytest.raises(ValueError, match=r"conv2d.*kernel.*10.*larger than the padded input.*8"):
        F.conv2d(x, engine.zeros(4, 3, 10, 10))
    with pytest.raises(ValueError, match="conv2d: stride must be >= 1"):
        F.conv2d(x, engine.zeros(4, 3, 3, 3), stride=0)
    with pytest.raises(ValueError, match="conv2d: padding='same' needs stride 1"):
        F.conv2d(x, engine.zeros(4, 3, 3, 3), stride=2, padding="same")
    with pytest.raises(ValueError, match=r"conv2d: bias must have shape \(4,\)"):
        F.conv2d(x, engine.zeros(4, 3, 3, 3), engine.zeros(3))
    with pytest.raises(ValueError, match="conv2d: input must be 4-D"):
        F.conv2d(engine.zeros(8, 8), engine.zeros(4, 3, 3, 3))
    with pytest.raises(TypeError, match="conv2d: padding must be an int or a pair"):
        F.conv2d(x, engine.zeros(4, 3, 3, 3), padding=1.5)
    with pytest.raises(ValueError, match="groups=2"):
        F.conv2d(engine.zeros(1, 4, 5, 5), engine.zeros(3, 2, 3, 3), groups=2)


def test_conv2d_of_extreme_inputs_is_finite():
    x = engine.Tensor(np.full((1, 1, 5, 5), 1e30, dtype=np.float32), requires_grad=True)
    out = F.conv2d(x, engine.Tensor(np.full((1, 1, 3, 3), 1e-30, dtype=np.float32)))
    out.backward(np.ones(out.shape, dtype=np.float32))
    assert np.all(np.isfinite(out.data)) and np.all(np.isfinite(x.grad.numpy()))


# ----------------------------------------------------------------------------- conv_transpose2d
# (input shape, weight shape [C_in, C_out/groups, kh, kw], keyword settings, with bias)
TRANSPOSE_CASES = [
    ((2, 3, 4, 4), (3, 2, 3, 3), {}, True),
    ((2, 3, 4, 5), (3, 2, 3, 3), dict(stride=2), True),
    ((2, 3, 4, 5), (3, 4, 3, 3), dict(stride=2, padding=1, output_padding=1), False),
    ((1, 2, 3, 4), (2, 3, 4, 2), dict(stride=(3, 2), padding=(1, 0), output_padding=(2, 1)), True),
    ((2, 2, 4, 4), (2, 2, 3, 3), dict(stride=2, dilation=2, padding=1, output_padding=1), True),
    ((2, 4, 3, 3), (4, 3, 3, 3), dict(stride=2, groups=2), True),
    ((1, 2, 4, 5), (2, 3, 3, 3), dict(dilation=3, padding=1, output_padding=2), False),  # op >= stride
]


@pytest.mark.parametrize("x_shape, w_shape, kw, bias", TRANSPOSE_CASES)
def test_conv_transpose2d_matches_torch(x_shape, w_shape, kw, bias):
    torch = require_torch()
    groups = kw.get("groups", 1)
    shapes = [x_shape, w_shape] + ([(w_shape[1] * groups,)] if bias else [])
    check_against_torch(
        lambda *t: F.conv_transpose2d(*t, **kw),
        lambda *t: torch.nn.functional.conv_transpose2d(*t, **kw),
        random_arrays(*shapes, seed=9),
    )


@pytest.mark.parametrize("x_shape, w_shape, kw, bias", [TRANSPOSE_CASES[2], TRANSPOSE_CASES[3], TRANSPOSE_CASES[5]])
def test_conv_transpose2d_gradcheck(x_shape, w_shape, kw, bias):
    groups = kw.get("groups", 1)
    shapes = [x_shape, w_shape] + ([(w_shape[1] * groups,)] if bias else [])
    check_gradcheck(lambda *t: F.conv_transpose2d(*t, **kw), random_arrays(*shapes, seed=10))


def test_conv_transpose2d_is_the_adjoint_of_conv2d():
    # <conv2d(x, W), y> = <x, conv_transpose2d(y, W)> with the same stride, padding and dilation
    x, w = random_arrays((2, 3, 9, 8), (4, 3, 3, 2), seed=11)
    settings = dict(stride=2, padding=1, dilation=(1, 2))
    out = F.conv2d(x, w, **settings)
    (y,) = random_arrays(out.shape, seed=12)
    back = F.conv_transpose2d(y, w, output_padding=(0, 1), **settings)
    assert back.shape == x.shape
    np.testing.assert_allclose(np.sum(out.data * y), np.sum(x * back.data), rtol=1e-12)


def test_conv_transpose2d_errors():
    with pytest.raises(
        ValueError, match=r"conv_transpose2d: input of shape \(1, 3, 4, 4\) has 3 channels.*\(2, 5, 3, 3\)"
    ):
        F.conv_transpose2d(engine.zeros(1, 3, 4, 4), engine.zeros(2, 5, 3, 3))
    with pytest.raises(ValueError, match="conv_transpose2d.*output_padding must be smaller"):
        F.conv_transpose2d(engine.zeros(1, 3, 4, 4), engine.zeros(3, 5, 3, 3), stride=2, output_padding=2)
    with pytest.raises(ValueError, match="conv_transpose2d.*below 1"):
        F.conv_transpose2d(engine.zeros(1, 3, 1, 1), engine.zeros(3, 5, 3, 3), padding=3)


# ----------------------------------------------------------------------------- modules
def _copy_into_torch(module, torch_module):
    torch = require_torch()
    with torch.no_grad():
        for (name, p), (tname, tp) in zip(module.named_parameters(), torch_module.named_parameters()):
            assert name == tname and p.shape == tuple(tp.shape)
            tp.copy_(torch.tensor(p.data))


def test_conv2d_module_matches_torch_module_including_parameter_gradients():
    torch = require_torch()
    engine.manual_seed(0)
    m = nn.Conv2d(3, 6, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2), groups=3, dtype="float64")
    tm = torch.nn.Conv2d(3, 6, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2), groups=3, dtype=torch.float64)
    _copy_into_torch(m, tm)
    (x,) = random_arrays((2, 3, 8, 9), seed=13)
    out, t_out = m(engine.Tensor(x)), tm(torch.tensor(x))
    np.testing.assert_allclose(out.data, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    (g,) = random_arrays(out.shape, seed=14)
    out.backward(g)
    t_out.backward(torch.tensor(g))
    for (name, p), (_, tp) in zip(m.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)


def test_conv_transpose2d_module_and_output_size():
    torch = require_torch()
    m = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, dtype="float64")
    tm = torch.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, dtype=torch.float64)
    _copy_into_torch(m, tm)
    (x,) = random_arrays((1, 4, 5, 5), seed=15)
    for size in [(9, 9), (10, 10), (9, 10)]:
        out = m(engine.Tensor(x), output_size=size)
        assert out.shape == (1, 2, *size)
        np.testing.assert_allclose(out.data, tm(torch.tensor(x), output_size=size).detach().numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="output_size"):
        m(engine.Tensor(x), output_size=(12, 12))


@pytest.mark.parametrize(
    "cls, args", [(nn.Conv2d, (6, 8, (3, 5))), (nn.ConvTranspose2d, (6, 8, (3, 5))), (nn.Conv2d, (6, 8, 3, 1, 0, 1, 2))]
)
def test_conv_modules_use_pytorch_default_initialisation(cls, args):
    engine.manual_seed(1)
    m = cls(*args)
    fan_in = m.weight.shape[1] * m.weight.shape[2] * m.weight.shape[3]
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=√5): √3·√(2/(1+5))/√fan_in = 1/√fan_in
    for p in (m.weight, m.bias):
        assert p.dtype == np.float32
        assert np.abs(p.data).max() <= bound and np.abs(p.data).max() > 0.8 * bound
    # uniform on [-b, b] has variance b²/3
    assert abs(m.weight.data.var() - bound**2 / 3) < 0.25 * bound**2 / 3
    groups = args[6] if len(args) > 6 else 1
    assert sum(p.data.size for p in m.parameters()) == conv2d_params(6, 8, args[2], groups=groups)


def test_conv_module_settings_are_checked_at_construction():
    with pytest.raises(ValueError, match="in_channels=6 and out_channels=8 must both be divisible by groups=4"):
        nn.Conv2d(6, 8, 3, groups=4)
    with pytest.raises(ValueError, match="Conv2d: kernel_size must be >= 1"):
        nn.Conv2d(1, 2, 0)
    with pytest.raises(ValueError, match="output_padding must be smaller"):
        nn.ConvTranspose2d(1, 2, 3, stride=2, output_padding=2)
    assert "padding=(1, 1)" in repr(nn.Conv2d(1, 2, 3, padding=1))


# ----------------------------------------------------------------------------- a small CNN
def test_small_cnn_learns_the_shapes_images():
    """Conv→ReLU→MaxPool→Conv→ReLU→MaxPool→Flatten→Linear on 16x16 shapes: >= 95% held out."""
    from engine.data import make_shapes

    start = time.perf_counter()
    engine.manual_seed(0)
    X, y = make_shapes(2000, size=16, seed=1)
    X_test, y_test = make_shapes(600, size=16, seed=2)
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 4),
    )
    opt = optim.Adam(model.parameters(), lr=3e-3)
    rng = np.random.default_rng(0)
    first_loss = None
    for _ in range(15):
        order = rng.permutation(len(X))
        for i in range(0, len(X), 64):
            batch = order[i : i + 64]
            loss = F.cross_entropy(model(engine.Tensor(X[batch])), y[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            first_loss = float(loss.data) if first_loss is None else first_loss
    model.eval()
    with engine.no_grad():
        accuracy = float(np.mean(model(engine.Tensor(X_test)).data.argmax(axis=1) == y_test))
    print(f"small CNN: held-out accuracy {accuracy:.3f} in {time.perf_counter() - start:.1f} s")
    assert first_loss > 1.0  # it started from chance (ln 4 = 1.39)
    assert accuracy >= 0.95

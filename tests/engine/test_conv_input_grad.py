"""conv2d's input gradient at stride 1: the one-pass fast path equals the general col2im path.

``Conv2d.backward`` computes ∂L/∂x = col2im(W₂ᵀ g) with ``_input_grad_stride1`` when the stride
is 1 (a sum over a strided view of W₂ᵀ g laid on the padded image's flat grid) and with
``_product_col2im`` (kh·kw slice additions) otherwise. The general path is the reference here;
both are also checked against PyTorch and finite differences in test_conv.py.
"""

from __future__ import annotations

import numpy as np
from conv_settings import conv_settings
from hypothesis import given
from hypothesis import strategies as st
from oracle import check_against_torch, check_gradcheck, random_arrays, require_torch

import engine.functional as F
from engine import shapes
from engine.ops.conv import _input_grad_stride1, _product_col2im, _widths


def both_paths(n, c_in, c_out, groups, h, w, kernel, padding, dilation, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    widths = _widths(padding, kernel, (1, 1), dilation, "test")
    (top, bottom), (left, right) = widths
    ho = shapes.conv_output_size(h + top + bottom, kernel[0], 1, 0, dilation[0])
    wo = shapes.conv_output_size(w + left + right, kernel[1], 1, 0, dilation[1])
    weight = rng.standard_normal((c_out, c_in // groups, *kernel)).astype(dtype)
    g = rng.standard_normal((n, c_out, ho, wo)).astype(dtype)
    k = c_in // groups * kernel[0] * kernel[1]
    w2t = weight.reshape(groups, c_out // groups, k).transpose(0, 2, 1)
    x_shape = (n, c_in, h, w)
    fast = _input_grad_stride1(w2t, g, x_shape, kernel, widths, dilation)
    general = _product_col2im(
        w2t, g.reshape(n, groups, c_out // groups, ho * wo), x_shape, kernel, (1, 1), widths, dilation, (ho, wo)
    )
    return fast, general


@given(
    n=st.integers(1, 3),
    c_group=st.integers(1, 3),
    groups=st.integers(1, 3),
    out_per_group=st.integers(1, 3),
    setting=conv_settings(max_padding=3, strided=False, same=True),  # 'same' pads asymmetrically for an even kernel
)
def test_the_stride1_path_equals_the_general_path_for_any_setting(n, c_group, groups, out_per_group, setting):
    (h, w), kernel, _, padding, dilation = setting
    fast, general = both_paths(n, c_group * groups, out_per_group * groups, groups, h, w, kernel, padding, dilation)
    assert fast.shape == general.shape == (n, c_group * groups, h, w)
    np.testing.assert_allclose(fast, general, rtol=1e-12, atol=1e-12)


def test_batches_larger_than_one_chunk_and_a_partial_last_chunk():
    # 0.4 MB of W₂ᵀg per item: chunks of 2 items over 5, the last one partial; then 0.6 MB: 1 item
    fast, general = both_paths(5, 12, 6, 1, 20, 18, (3, 3), 1, (1, 1))
    np.testing.assert_allclose(fast, general, rtol=1e-12, atol=1e-12)
    fast, general = both_paths(7, 16, 8, 2, 19, 21, (3, 5), (2, 1), (2, 1), dtype=np.float32)
    assert fast.dtype == np.float32
    np.testing.assert_allclose(fast, general, rtol=1e-5, atol=1e-5)


def test_stride1_conv2d_with_several_chunks_matches_torch_and_finite_differences():
    torch = require_torch()
    x, w, b = random_arrays((5, 12, 14, 13), (6, 12, 3, 3), (6,), seed=11)  # chunks of 4 items
    check_against_torch(
        lambda *t: F.conv2d(*t, padding=1, dilation=(1, 2)),
        lambda *t: torch.nn.functional.conv2d(*t, padding=1, dilation=(1, 2)),
        [x, w, b],
    )
    small = random_arrays((2, 2, 5, 4), (3, 2, 2, 3), (3,), seed=12)
    check_gradcheck(lambda *t: F.conv2d(*t, padding=(1, 0)), small)

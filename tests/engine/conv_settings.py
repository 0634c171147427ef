"""A Hypothesis strategy for the settings of a 2-D convolution, shared by the conv property tests
(test_conv.py, test_conv_input_grad.py). It lives beside them, not in tests/support, because only
they use it; pytest puts this folder on sys.path, so ``from conv_settings import ...`` works."""

from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st


def pair(low: int, high: int):
    """(height, width) values, each drawn from low..high."""
    return st.tuples(st.integers(low, high), st.integers(low, high))


@st.composite
def conv_settings(draw, max_padding: int, strided: bool = True, same: bool = False):
    """``(h, w), kernel, stride, padding, dilation`` of a convolution whose dilated kernel fits the
    padded input: sizes 1..9, kernels 1..4, strides 1..3 (1 unless ``strided``), paddings
    0..max_padding, dilations 1..3; with ``same``, half the draws pad ``'same'`` instead (which
    always fits at stride 1)."""
    size, kernel = draw(pair(1, 9)), draw(pair(1, 4))
    stride = draw(pair(1, 3)) if strided else (1, 1)
    padding, dilation = draw(pair(0, max_padding)), draw(pair(1, 3))
    if same and draw(st.booleans()):
        return size, kernel, stride, "same", dilation
    assume(all(d * (k - 1) + 1 <= n + 2 * p for n, k, p, d in zip(size, kernel, padding, dilation)))
    return size, kernel, stride, padding, dilation

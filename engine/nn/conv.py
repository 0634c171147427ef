"""Convolution and pooling layers, as ``torch.nn.Conv2d``, ``ConvTranspose2d``, ``MaxPool2d``, ``AvgPool2d``.

The arithmetic and its gradients live in :mod:`engine.ops.conv` (im2col / col2im primitives);
these modules hold the weights and the settings. Initialisation follows PyTorch:
W ~ U(−b, b) with b = 1/√fan_in (``kaiming_uniform_`` with a = √5), bias ~ U(−1/√fan_in, 1/√fan_in),
where fan_in = weight.shape[1]·kh·kw (C_in/groups·kh·kw for Conv2d, C_out/groups·kh·kw for
ConvTranspose2d, exactly as PyTorch computes it).
"""

from __future__ import annotations

import math

import numpy as np

from .. import shapes
from .._checks import int_pair, positive_int
from ..ops import conv as C
from . import init
from .module import Module, Parameter

__all__ = ["Conv2d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d"]


class _ConvNd(Module):
    """Shared parts of Conv2d and ConvTranspose2d: settings, parameters, initialisation, repr.

    The constructor is Conv2d's; ConvTranspose2d orders PyTorch's arguments its own way, passes
    these on and adds output_padding.
    """

    transposed = False  # the weight's first two axes: [C_out, C_in/groups], or [C_in, C_out/groups]

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        dtype=None,
    ):
        super().__init__()
        op = type(self).__name__
        self.in_channels = positive_int(op, "in_channels", in_channels)
        self.out_channels = positive_int(op, "out_channels", out_channels)
        self.groups = positive_int(op, "groups", groups)
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(
                f"{op}: in_channels={self.in_channels} and out_channels={self.out_channels} must both "
                f"be divisible by groups={self.groups}"
            )
        if padding_mode != "zeros":
            raise NotImplementedError(f"{op}: only padding_mode='zeros' is implemented, got {padding_mode!r}")
        self.kernel_size = int_pair(op, "kernel_size", kernel_size, 1)
        self.stride = int_pair(op, "stride", stride, 1)
        self.dilation = int_pair(op, "dilation", dilation, 1)
        if isinstance(padding, str):
            C._widths(padding, self.kernel_size, self.stride, self.dilation, op)  # validates
            self.padding = padding
        else:
            self.padding = int_pair(op, "padding", padding, 0)
        self.output_padding = (0, 0)
        self.padding_mode = padding_mode
        dtype = np.dtype(np.float32 if dtype is None else dtype)
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        self.weight = Parameter(np.empty(shape, dtype=dtype))
        self.bias = Parameter(np.empty(self.out_channels, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * self.kernel_size[0] * self.kernel_size[1]
            bound = 1.0 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0, 0):
            text += f", padding={self.padding!r}" if isinstance(self.padding, str) else f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.output_padding != (0, 0):
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


class Conv2d(_ConvNd):
    """2-D convolution (cross-correlation) over [N, C_in, H, W] -> [N, C_out, H_out, W_out].

    ``Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
    bias=True, padding_mode='zeros', dtype=None)``, as PyTorch.
    weight [C_out, C_in/groups, kh, kw], bias [C_out]; H_out = ⌊(H + 2P − D(kh − 1) − 1)/S⌋ + 1.
    Parameter count C_out·(C_in/groups)·kh·kw + C_out (``engine.shapes.conv2d_params``).
    """

    def forward(self, input):
        return C.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose2d(_ConvNd):
    """Transposed convolution [N, C_in, H, W] -> [N, C_out, H_out, W_out]: the gradient of a Conv2d
    with the same settings, often used to upsample.

    weight [C_in, C_out/groups, kh, kw], bias [C_out];
    H_out = (H − 1)S − 2P + D(kh − 1) + output_padding + 1. ``forward(x, output_size=(H, W))``
    picks output_padding so that the output has that size (as PyTorch).
    """

    transposed = True

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        dtype=None,
    ):
        if isinstance(padding, str):
            raise ValueError(f"ConvTranspose2d: padding must be an int or a pair, got {padding!r}")
        output_padding = int_pair("ConvTranspose2d", "output_padding", output_padding, 0)
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode, dtype
        )
        self.output_padding = output_padding
        shapes.conv_transpose_output_size(
            1, self.kernel_size, self.stride, (0, 0), self.output_padding, self.dilation
        )  # output_padding < max(stride, dilation)

    def forward(self, input, output_size=None):
        output_padding = self.output_padding
        if output_padding is not None and output_size is not None:
            output_padding = self._output_padding_for(input, output_size)
        return C.conv_transpose2d(
            input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation
        )

    def _output_padding_for(self, input, output_size) -> tuple[int, int]:
        """The output_padding that makes the output [..., H, W] = output_size."""
        size = tuple(int(s) for s in tuple(output_size)[-2:])
        pads = []
        for n, want, k, s, p, d in zip(
            input.shape[-2:], size, self.kernel_size, self.stride, self.padding, self.dilation
        ):
            smallest = (n - 1) * s - 2 * p + d * (k - 1) + 1
            extra = want - smallest
            if not 0 <= extra < max(s, d):
                raise ValueError(
                    f"ConvTranspose2d: output_size {size} is unreachable from input shape "
                    f"{tuple(input.shape)}: each size must lie in [{smallest}, {smallest + max(s, d) - 1}]"
                )
            pads.append(extra)
        return tuple(pads)


class MaxPool2d(Module):
    """Maximum over each kernel_size window (stride defaults to kernel_size); no parameters.

    The gradient flows to one element per window (its first maximum), as PyTorch.
    """

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode
        C._pool_settings("MaxPool2d", _Probe, kernel_size, stride, padding, dilation, ceil_mode)

    def forward(self, input):
        return C.max_pool2d(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class AvgPool2d(Module):
    """Mean over each kernel_size window (stride defaults to kernel_size); no parameters."""

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override
        C._pool_settings("AvgPool2d", _Probe, kernel_size, stride, padding, 1, ceil_mode)

    def forward(self, input):
        return C.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _Probe:
    """A stand-in input large enough for any window, so settings are validated at construction."""

    shape = (1, 1, 1 << 20, 1 << 20)

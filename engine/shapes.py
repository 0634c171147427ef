"""Shape arithmetic of convolutions, receptive fields, parameter counts and attention shapes.

Everything here is integer arithmetic on sizes; nothing touches a tensor. One spatial dimension at
a time, as in the conv-arithmetic guide (Dumoulin & Visin, 2016); a pair such as ``(H, W)`` is
handled one entry at a time and gives a pair back.

Convolution (input size W, kernel K, stride S, padding P, dilation D)::

    K_eff = K + (K - 1)(D - 1) = D(K - 1) + 1          # a dilated kernel's span
    O     = floor((W + 2P - K_eff) / S) + 1            # the count of kernel placements

Transposed convolution (the gradient of a convolution with the same settings)::

    O = (W - 1)S - 2P + D(K - 1) + output_padding + 1

``output_padding`` picks one of the S sizes that a stride-S convolution maps to the same W.

Receptive field of a stack of layers l = 1..L (sizes in input pixels), starting from
r_0 = 1, j_0 = 1, p_0 = 0::

    r_l = r_{l-1} + (K_eff_l - 1) j_{l-1}              # receptive field size
    j_l = j_{l-1} s_l                                  # jump: the input-pixel distance between
                                                       # neighbouring outputs (effective stride)
    p_l = p_{l-1} + pad_l j_{l-1}                      # effective padding

Output ``i`` of layer l sees input pixels ``[i j_l - p_l, i j_l - p_l + r_l - 1]``.
"""

from __future__ import annotations

import numbers
from collections import namedtuple
from collections.abc import Sequence

__all__ = [
    "RECEPTIVE_FIELD_PRESETS",
    "AttentionShapes",
    "ReceptiveField",
    "attention_shapes",
    "conv2d_params",
    "conv_output_size",
    "conv_transpose_output_size",
    "effective_kernel_size",
    "linear_params",
    "multihead_attention_params",
    "receptive_field",
]

ReceptiveField = namedtuple("ReceptiveField", ["size", "jump", "padding"])
ReceptiveField.__doc__ = """Receptive field after one layer, in input pixels.

size: how many input pixels (per dimension) one output value depends on;
jump: the distance in input pixels between two neighbouring outputs (the product of strides);
padding: how far the first output's field starts before input pixel 0 (effective padding)."""

AttentionShapes = namedtuple("AttentionShapes", ["d_k", "shapes", "params"])
AttentionShapes.__doc__ = """Shapes through multi-head attention.

d_k: the width of one head, d_model / H;
shapes: an ordered dict, stage name -> shape tuple;
params: an ordered dict, weight name -> parameter count, with "total" last."""


# ----------------------------------------------------------------------------- validation
def _int(op: str, name: str, value, minimum: int) -> int:
    """``value`` as a Python int >= ``minimum``, or a ValueError/TypeError naming op and value."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{op}: {name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{op}: {name} must be >= {minimum}, got {name}={value}")
    return value


def _conv_args(op: str, size, kernel, stride, padding, dilation) -> tuple[int, int, int, int, int]:
    """(W, K, S, P, D) of one dimension, checked: all >= 1 except padding >= 0."""
    return (
        _int(op, "size", size, 1),
        _int(op, "kernel", kernel, 1),
        _int(op, "stride", stride, 1),
        _int(op, "padding", padding, 0),
        _int(op, "dilation", dilation, 1),
    )


def _per_dim(op: str, args: dict) -> list[dict] | None:
    """Split pair-valued arguments into one dict of ints per spatial dimension.

    Returns None when every argument is a plain number (the one-dimensional case).
    """
    lengths = {len(v) for v in args.values() if isinstance(v, (tuple, list))}
    if not lengths:
        return None
    if len(lengths) > 1:
        given = {k: v for k, v in args.items() if isinstance(v, (tuple, list))}
        raise ValueError(f"{op}: tuple arguments have different lengths: {given}")
    (n,) = lengths
    return [{k: (v[i] if isinstance(v, (tuple, list)) else v) for k, v in args.items()} for i in range(n)]


# ----------------------------------------------------------------------------- convolution sizes
def effective_kernel_size(kernel, dilation=1):
    """The span of a dilated kernel: K_eff = K + (K - 1)(D - 1) = D(K - 1) + 1.

    A 3-wide kernel with dilation 2 touches pixels 0, 2, 4: it spans 5 pixels.
    Ints or pairs, e.g. ``effective_kernel_size((3, 5), 2) == (5, 9)``.
    """
    dims = _per_dim("effective_kernel_size", {"kernel": kernel, "dilation": dilation})
    if dims is not None:
        return tuple(effective_kernel_size(**d) for d in dims)
    k = _int("effective_kernel_size", "kernel", kernel, 1)
    d = _int("effective_kernel_size", "dilation", dilation, 1)
    return k + (k - 1) * (d - 1)


def conv_output_size(size, kernel, stride=1, padding=0, dilation=1):
    """Output size of a convolution or pooling layer along one dimension (or a pair of them).

        O = floor((W + 2P - D(K - 1) - 1) / S) + 1 = floor((W + 2P - K_eff) / S) + 1

    the number of positions where the (dilated) kernel fits inside the padded input when it moves
    S pixels at a time. Same result as PyTorch's Conv2d/MaxPool2d (ceil_mode=False).
    Raises ValueError when the kernel is larger than the padded input (no placement at all),
    or for a stride < 1, padding < 0, dilation < 1, size < 1 or kernel < 1.
    """
    op = "conv_output_size"
    dims = _per_dim(op, dict(size=size, kernel=kernel, stride=stride, padding=padding, dilation=dilation))
    if dims is not None:
        return tuple(conv_output_size(**d) for d in dims)
    w, k, s, p, d = _conv_args(op, size, kernel, stride, padding, dilation)
    k_eff = k + (k - 1) * (d - 1)
    padded = w + 2 * p
    if k_eff > padded:
        raise ValueError(
            f"{op}: the kernel (effective size {k_eff} = kernel {k} with dilation {d}) is larger "
            f"than the padded input (size {w} + 2*padding {p} = {padded}): output size would be < 1"
        )
    return (padded - k_eff) // s + 1


def conv_transpose_output_size(size, kernel, stride=1, padding=0, output_padding=0, dilation=1):
    """Output size of a transposed convolution along one dimension (or a pair of them).

        O = (W - 1)S - 2P + D(K - 1) + output_padding + 1

    It undoes ``conv_output_size``'s shape: a stride-S convolution maps S different input sizes
    to the same output, and ``output_padding`` (0 <= output_padding < max(S, D), as PyTorch
    requires) chooses which one to return to. Raises ValueError naming the numbers when the
    result would be below 1 or output_padding is out of range.
    """
    op = "conv_transpose_output_size"
    dims = _per_dim(
        op,
        dict(
            size=size, kernel=kernel, stride=stride, padding=padding, output_padding=output_padding, dilation=dilation
        ),
    )
    if dims is not None:
        return tuple(conv_transpose_output_size(**d) for d in dims)
    w, k, s, p, d = _conv_args(op, size, kernel, stride, padding, dilation)
    op_ = _int(op, "output_padding", output_padding, 0)
    if op_ >= s and op_ >= d:
        raise ValueError(
            f"{op}: output_padding must be smaller than stride or dilation, got "
            f"output_padding={op_}, stride={s}, dilation={d}"
        )
    out = (w - 1) * s - 2 * p + d * (k - 1) + op_ + 1
    if out < 1:
        raise ValueError(
            f"{op}: output size (size {w} - 1)*stride {s} - 2*padding {p} + dilation {d}*(kernel "
            f"{k} - 1) + output_padding {op_} + 1 = {out} is below 1 (padding too large)"
        )
    return out


# ----------------------------------------------------------------------------- parameter counts
def linear_params(n_in, n_out, bias=True):
    """Parameters of ``nn.Linear(n_in, n_out)``: n_in·n_out weights + n_out biases."""
    n_in = _int("linear_params", "n_in", n_in, 1)
    n_out = _int("linear_params", "n_out", n_out, 1)
    return n_in * n_out + (n_out if bias else 0)


def conv2d_params(c_in, c_out, kernel, bias=True, groups=1):
    """Parameters of ``nn.Conv2d(c_in, c_out, kernel, groups=groups)``.

        C_out · (C_in / groups) · K_h · K_w  (+ C_out biases)

    With groups=1 this is C_out(C_in·K_h·K_w + 1). ``kernel`` is an int or a pair (K_h, K_w).
    ``nn.ConvTranspose2d`` with the same arguments has the same count.
    """
    op = "conv2d_params"
    c_in = _int(op, "c_in", c_in, 1)
    c_out = _int(op, "c_out", c_out, 1)
    groups = _int(op, "groups", groups, 1)
    kh, kw = (kernel, kernel) if not isinstance(kernel, (tuple, list)) else tuple(kernel)
    kh, kw = _int(op, "kernel", kh, 1), _int(op, "kernel", kw, 1)
    if c_in % groups or c_out % groups:
        raise ValueError(f"{op}: c_in={c_in} and c_out={c_out} must both be divisible by groups={groups}")
    return c_out * (c_in // groups) * kh * kw + (c_out if bias else 0)


def multihead_attention_params(d_model, bias=True):
    """Parameters of ``nn.MultiheadAttention(d_model, H)``: four d_model x d_model projections
    (W_q, W_k, W_v, W_o) with biases, 4(d_model² + d_model), whatever the number of heads."""
    d = _int("multihead_attention_params", "d_model", d_model, 1)
    return 4 * (d * d + (d if bias else 0))


def attention_shapes(B, L, d_model, H):
    """Tensor shapes through multi-head self-attention, and its parameter counts.

    [B, L, d_model] --W_q, W_k, W_v--> q, k, v [B, L, d_model] --split heads--> [B, H, L, d_k]
    --q k^T / sqrt(d_k)--> scores [B, H, L, L] --softmax--> weights [B, H, L, L]
    --weights v--> [B, H, L, d_k] --merge heads--> [B, L, d_model] --W_o--> [B, L, d_model],
    with d_k = d_model / H. Raises ValueError when H does not divide d_model.
    """
    op = "attention_shapes"
    B = _int(op, "B", B, 1)
    L = _int(op, "L", L, 1)
    d_model = _int(op, "d_model", d_model, 1)
    H = _int(op, "H", H, 1)
    if d_model % H:
        raise ValueError(f"{op}: d_model={d_model} is not divisible by H={H} heads")
    d_k = d_model // H
    shapes = {
        "input": (B, L, d_model),
        "q, k, v (projected)": (B, L, d_model),
        "q, k, v (per head)": (B, H, L, d_k),
        "scores": (B, H, L, L),
        "weights": (B, H, L, L),
        "heads output": (B, H, L, d_k),
        "concatenated": (B, L, d_model),
        "output": (B, L, d_model),
    }
    one = d_model * d_model + d_model
    params = {"W_q": one, "W_k": one, "W_v": one, "W_o": one, "total": multihead_attention_params(d_model)}
    return AttentionShapes(d_k, shapes, params)


# ----------------------------------------------------------------------------- receptive fields
def _layer_settings(op: str, index: int, layer) -> tuple[int, int, int, int]:
    """(kernel, stride, padding, dilation) of one layer given as (k, s, p) or (k, s, p, d),
    optionally named: ("conv1", (k, s, p))."""
    if isinstance(layer, (tuple, list)) and len(layer) == 2 and isinstance(layer[0], str):
        layer = layer[1]
    if not isinstance(layer, (tuple, list)) or len(layer) not in (3, 4):
        raise ValueError(
            f"{op}: layer {index} must be (kernel, stride, padding) or "
            f"(kernel, stride, padding, dilation), got {layer!r}"
        )
    k, s, p, *rest = layer
    d = rest[0] if rest else 1
    return (
        _int(op, f"layer {index} kernel", k, 1),
        _int(op, f"layer {index} stride", s, 1),
        _int(op, f"layer {index} padding", p, 0),
        _int(op, f"layer {index} dilation", d, 1),
    )


def receptive_field(layers: Sequence) -> list[ReceptiveField]:
    """Receptive field, jump and effective padding after each layer of a single-path stack.

    ``layers``: a sequence of ``(kernel, stride, padding)`` or ``(kernel, stride, padding,
    dilation)``, each optionally named as ``(name, (kernel, stride, padding[, dilation]))``
    (the form of ``RECEPTIVE_FIELD_PRESETS``). Returns one ``ReceptiveField(size, jump, padding)``
    per layer; the last is the whole stack's. Recurrence (r_0 = j_0 = 1, p_0 = 0)::

        r_l = r_{l-1} + (K_eff_l - 1) j_{l-1},   j_l = j_{l-1} s_l,   p_l = p_{l-1} + pad_l j_{l-1}
    """
    op = "receptive_field"
    if isinstance(layers, str) or not isinstance(layers, Sequence) or len(layers) == 0:
        raise ValueError(f"{op}: layers must be a non-empty sequence of layer tuples, got {layers!r}")
    size, jump, padding = 1, 1, 0
    fields = []
    for index, layer in enumerate(layers):
        k, s, p, d = _layer_settings(op, index, layer)
        k_eff = k + (k - 1) * (d - 1)
        size, jump, padding = size + (k_eff - 1) * jump, jump * s, padding + p * jump
        fields.append(ReceptiveField(size, jump, padding))
    return fields


def _resnet50_layers(stride_on_3x3: bool) -> list[tuple[str, tuple[int, ...]]]:
    """Main path of ResNet-50 (stem, then 3, 4, 6, 3 bottleneck blocks of 1x1, 3x3, 1x1 convs).

    The first block of stages 3-5 halves the resolution: on its first 1x1 conv in the original
    paper (He et al., 2016, "v1"), on its 3x3 conv in torchvision's "v1.5". Shortcuts do not
    widen the field (their 1x1 convs see less than the main path), so the main path decides it.
    """
    layers = [("conv1", (7, 2, 3)), ("pool1", (3, 2, 1))]
    for stage, blocks in zip((2, 3, 4, 5), (3, 4, 6, 3)):
        for block in range(1, blocks + 1):
            stride = 2 if (stage > 2 and block == 1) else 1
            s1, s3 = (1, stride) if stride_on_3x3 else (stride, 1)
            name = f"conv{stage}_{block}"
            layers += [(f"{name}a 1x1", (1, s1, 0)), (f"{name}b 3x3", (3, s3, 1)), (f"{name}c 1x1", (1, 1, 0))]
    return layers


def _vgg16_layers() -> list[tuple[str, tuple[int, ...]]]:
    """VGG-16 up to pool5: 3x3 convs (stride 1, padding 1) in blocks of 2, 2, 3, 3, 3, each
    block closed by a 2x2 max-pool with stride 2 (Simonyan & Zisserman, 2015)."""
    layers = []
    for block, convs in enumerate((2, 2, 3, 3, 3), start=1):
        layers += [(f"conv{block}_{i}", (3, 1, 1)) for i in range(1, convs + 1)]
        layers.append((f"pool{block}", (2, 2, 0)))
    return layers


# Named layer lists for ``receptive_field``: (name, (kernel, stride, padding[, dilation])).
RECEPTIVE_FIELD_PRESETS: dict[str, list[tuple[str, tuple[int, ...]]]] = {
    # Krizhevsky et al. (2012), 227x227 input: conv1 11x11/4 without padding; overlapping 3x3/2
    # max-pools. (torchvision's AlexNet pads conv1 by 2: same sizes and jumps, padding + 2.)
    "AlexNet": [
        ("conv1", (11, 4, 0)),
        ("pool1", (3, 2, 0)),
        ("conv2", (5, 1, 2)),
        ("pool2", (3, 2, 0)),
        ("conv3", (3, 1, 1)),
        ("conv4", (3, 1, 1)),
        ("conv5", (3, 1, 1)),
        ("pool5", (3, 2, 0)),
    ],
    "VGG-16": _vgg16_layers(),
    "ResNet-50": _resnet50_layers(stride_on_3x3=False),
    "ResNet-50 (torchvision v1.5)": _resnet50_layers(stride_on_3x3=True),
}

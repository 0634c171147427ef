"""engine.shapes: published conv-arithmetic values, receptive fields, brute force, PyTorch."""

import numpy as np
import pytest
from assertions import assert_raises_naming
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import require_torch

from engine.shapes import (
    RECEPTIVE_FIELD_PRESETS,
    ReceptiveField,
    attention_shapes,
    conv2d_params,
    conv_output_size,
    conv_transpose_output_size,
    effective_kernel_size,
    linear_params,
    multihead_attention_params,
    receptive_field,
)

# ----------------------------------------------------------------------------- published values
# Dumoulin & Visin (2016), "A guide to convolution arithmetic for deep learning", the figures of
# sections 2 and 5: (input i, kernel k, stride s, padding p, dilation d) -> output o.
GUIDE_CONV = [
    ((4, 3, 1, 0, 1), 2),  # fig 2.1: no padding, unit strides
    ((5, 3, 1, 0, 1), 3),  # same setting on a 5x5 input
    ((5, 4, 1, 2, 1), 6),  # fig 2.2: arbitrary padding
    ((5, 3, 1, 1, 1), 5),  # fig 2.3: half ("same") padding
    ((5, 3, 1, 2, 1), 7),  # fig 2.4: full padding
    ((5, 3, 2, 0, 1), 2),  # fig 2.5: no padding, stride 2
    ((5, 3, 2, 1, 1), 3),  # fig 2.6: padding and stride 2
    ((6, 3, 2, 1, 1), 3),  # fig 2.7: same, input one larger: the floor drops the remainder
    ((7, 3, 1, 0, 2), 3),  # fig 5.1: dilation 2 makes the 3x3 kernel span 5 pixels
]


@pytest.mark.parametrize("args, expected", GUIDE_CONV)
def test_conv_output_size_matches_the_conv_arithmetic_guide(args, expected):
    i, k, s, p, d = args
    assert conv_output_size(i, k, stride=s, padding=p, dilation=d) == expected


# The guide's transposed convolutions (section 4): each undoes the shape of the convolution above;
# (conv input i, k, s, p, output_padding a) and the transposed conv maps o back to i.
GUIDE_TRANSPOSED = [
    (4, 3, 1, 0, 0),  # fig 4.1: 2 -> 4
    (5, 4, 1, 2, 0),  # fig 4.2: 6 -> 5
    (5, 3, 1, 1, 0),  # fig 4.3: 5 -> 5
    (5, 3, 1, 2, 0),  # fig 4.4: 7 -> 5
    (5, 3, 2, 0, 0),  # fig 4.5: 2 -> 5
    (5, 3, 2, 1, 0),  # fig 4.6: 3 -> 5
    (6, 3, 2, 1, 1),  # fig 4.7: 3 -> 6, the extra row/column is the output padding a = 1
]


@pytest.mark.parametrize("i, k, s, p, a", GUIDE_TRANSPOSED)
def test_conv_transpose_output_size_matches_the_guide(i, k, s, p, a):
    o = conv_output_size(i, k, stride=s, padding=p)
    assert conv_transpose_output_size(o, k, stride=s, padding=p, output_padding=a) == i


def test_transposed_worked_example():
    # (W - 1)S - 2P + D(K - 1) + output_padding + 1 = 3*2 - 2 + 2*2 + 1 + 1 = 10
    assert conv_transpose_output_size(4, 3, stride=2, padding=1, output_padding=1, dilation=2) == 10


def test_effective_kernel_size():
    assert effective_kernel_size(3, 1) == 3
    assert effective_kernel_size(3, 2) == 5  # taps at 0, 2, 4
    assert effective_kernel_size(3, 4) == 9  # taps at 0, 4, 8
    assert effective_kernel_size(1, 7) == 1  # a 1x1 kernel has nothing to spread
    assert effective_kernel_size((3, 5), 2) == (5, 9)


def test_pairs_are_handled_per_dimension():
    assert conv_output_size((28, 20), 3, stride=(1, 2), padding=1) == (28, 10)
    assert conv_transpose_output_size((14, 7), (4, 3), stride=2, padding=1) == (28, 13)
    with pytest.raises(ValueError, match="different lengths"):
        conv_output_size((28, 20), (3, 3, 3))


# ----------------------------------------------------------------------------- brute force
def _placements(size, kernel, stride, padding, dilation):
    """Count kernel positions by walking the padded input: the kernel starts every `stride`
    pixels and fits when its last tap lands inside."""
    padded = size + 2 * padding
    last_tap = (kernel - 1) * dilation
    return sum(1 for start in range(0, padded, stride) if start + last_tap < padded)


conv_settings = st.tuples(
    st.integers(1, 40), st.integers(1, 7), st.integers(1, 5), st.integers(0, 4), st.integers(1, 4)
)


@settings(max_examples=300, deadline=None)
@given(conv_settings)
def test_conv_output_size_counts_kernel_placements(cfg):
    size, kernel, stride, padding, dilation = cfg
    count = _placements(size, kernel, stride, padding, dilation)
    if count == 0:
        with pytest.raises(ValueError):
            conv_output_size(size, kernel, stride, padding, dilation)
    else:
        assert conv_output_size(size, kernel, stride, padding, dilation) == count


@settings(max_examples=300, deadline=None)
@given(conv_settings)
def test_transposed_size_inverts_conv_size(cfg):
    size, kernel, stride, padding, dilation = cfg
    if _placements(size, kernel, stride, padding, dilation) == 0:
        return
    out = conv_output_size(size, kernel, stride, padding, dilation)
    # A stride-S conv forgets (W + 2P - K_eff) mod S pixels; output_padding gives them back.
    remainder = (size + 2 * padding - effective_kernel_size(kernel, dilation)) % stride
    back = conv_transpose_output_size(out, kernel, stride, padding, remainder, dilation)
    assert back == size


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: conv_output_size(3, 5), ["5", "3"]),  # kernel larger than the input
        (lambda: conv_output_size(3, 3, dilation=2), ["5", "3"]),  # dilated span 5 > 3
        (lambda: conv_output_size(8, 3, stride=0), ["stride", "0"]),
        (lambda: conv_output_size(8, 3, padding=-1), ["padding", "-1"]),
        (lambda: conv_output_size(0, 3), ["size", "0"]),
        (lambda: conv_transpose_output_size(4, 3, stride=2, output_padding=2), ["output_padding"]),
        (lambda: conv_transpose_output_size(1, 1, padding=1), ["-1"]),
        (lambda: attention_shapes(2, 5, 10, 3), ["10", "3"]),
        (lambda: conv2d_params(6, 4, 3, groups=4), ["groups=4"]),
        (lambda: receptive_field([]), ["non-empty"]),
        (lambda: receptive_field([(3, 1)]), ["layer 0"]),
        (lambda: receptive_field([(3, 1, 1), (3, 0, 1)]), ["layer 1 stride"]),
    ],
)
def test_impossible_configurations_raise_value_error_naming_the_numbers(call, words):
    assert_raises_naming(call, words)


def test_output_padding_below_dilation_is_allowed():
    # PyTorch accepts output_padding < stride OR < dilation: stride 1, dilation 3, padding 2.
    # (4 - 1)*1 - 0 + 3*(3 - 1) + 2 + 1 = 12
    assert conv_transpose_output_size(4, 3, stride=1, output_padding=2, dilation=3) == 12


@pytest.mark.parametrize("bad", [2.0, True, "3", None])
def test_non_integers_raise_type_error(bad):
    with pytest.raises(TypeError, match="conv_output_size"):
        conv_output_size(8, bad)


# ----------------------------------------------------------------------------- parameter counts
def test_parameter_counts_by_hand():
    assert linear_params(784, 10) == 7850  # 784*10 weights + 10 biases
    assert linear_params(784, 10, bias=False) == 7840
    assert conv2d_params(3, 64, 3) == 1792  # 64 * (3*3*3 + 1)
    assert conv2d_params(3, 64, (3, 5), bias=False) == 2880  # 64 * 3 * 15
    assert conv2d_params(8, 16, 3, groups=4) == 304  # 16 * (8/4) * 9 + 16
    assert multihead_attention_params(512) == 1050624  # 4 * (512**2 + 512)


def test_attention_shapes():
    result = attention_shapes(2, 10, 64, 8)
    assert result.d_k == 8
    assert result.shapes["input"] == (2, 10, 64)
    assert result.shapes["q, k, v (per head)"] == (2, 8, 10, 8)
    assert result.shapes["scores"] == (2, 8, 10, 10)
    assert result.shapes["output"] == (2, 10, 64)
    assert result.params["total"] == 4 * (64 * 64 + 64) == sum(v for k, v in result.params.items() if k != "total")


# ----------------------------------------------------------------------------- receptive fields
def test_receptive_field_by_hand():
    # Two 3x3 convs see 5 pixels, three see 7: VGG's argument for stacking small kernels.
    assert receptive_field([(3, 1, 1)] * 3) == [(3, 1, 1), (5, 1, 2), (7, 1, 3)]
    # conv 3/1 -> pool 2/2 -> conv 3/1: 3, then 3 + 1*1 = 4 (jump 2), then 4 + 2*2 = 8.
    fields = receptive_field([(3, 1, 0), (2, 2, 0), (3, 1, 0)])
    assert [f.size for f in fields] == [3, 4, 8]
    assert [f.jump for f in fields] == [1, 2, 2]
    assert isinstance(fields[-1], ReceptiveField)


def test_dilated_stack_grows_exponentially():
    # Yu & Koltun (2016): 3x3 convs with dilations 1, 2, 4 give fields 3, 7, 15 (2^(i+2) - 1).
    fields = receptive_field([(3, 1, 1, 1), (3, 1, 2, 2), (3, 1, 4, 4)])
    assert [f.size for f in fields] == [3, 7, 15]
    assert fields[-1].padding == 7  # "same" padding: the field is centred on the output pixel


def _named_fields(name):
    layers = RECEPTIVE_FIELD_PRESETS[name]
    return dict(zip([n for n, _ in layers], receptive_field(layers)))


def test_vgg16_receptive_field():
    # Worked per block: each 3x3 conv adds 2 * jump, each 2x2/2 pool adds 1 * jump then doubles
    # the jump. Block 1 (jump 1): 1 + 2 + 2 = 5, pool -> 6, jump 2. Block 2: 6 + 4 + 4 = 14,
    # pool -> 16, jump 4. Block 3: 16 + 3*8 = 40, pool -> 44, jump 8. Block 4: 44 + 3*16 = 92,
    # pool -> 100, jump 16. Block 5: 100 + 3*32 = 196, pool -> 212, jump 32. Padding: the convs'
    # 1 * jump: 2*1 + 2*2 + 3*4 + 3*8 + 3*16 = 90. (Also Araujo et al., Distill 2019: 212, 32, 90.)
    fields = _named_fields("VGG-16")
    assert fields["conv1_2"] == (5, 1, 2)
    assert fields["pool2"] == (16, 4, 6)
    assert fields["conv5_3"] == (196, 16, 90)
    assert fields["pool5"] == (212, 32, 90)


def test_alexnet_receptive_field():
    # conv1 11/4 -> 11, jump 4; pool1 3/2 -> 11 + 2*4 = 19, jump 8; conv2 5 -> 19 + 4*8 = 51;
    # pool2 -> 51 + 2*8 = 67, jump 16; conv3, conv4, conv5 (3x3) add 2*16 each -> 99, 131, 163;
    # pool5 -> 163 + 2*16 = 195, jump 32. Padding: conv2 2*8 + conv3..5 3 * 1*16 = 64.
    fields = _named_fields("AlexNet")
    assert fields["pool1"] == (19, 8, 0)
    assert fields["conv5"] == (163, 16, 64)
    assert fields["pool5"] == (195, 32, 64)


def test_resnet50_receptive_field():
    # Stem: conv 7/2 -> 7 (jump 2), pool 3/2 -> 11 (jump 4), padding 3 + 1*2 = 5. Only the 3x3
    # convs widen the field, by 2 * jump each. Original ResNet (stride on the first 1x1 of
    # stages 3-5): 3 of them at jump 4, 4 at 8, 6 at 16, 3 at 32 ->
    # 11 + 2*(12 + 32 + 96 + 96) = 483, padding 5 + (12 + 32 + 96 + 96) = 241.
    assert receptive_field(RECEPTIVE_FIELD_PRESETS["ResNet-50"])[-1] == (483, 32, 241)
    # torchvision v1.5 strides in the 3x3, so each stage's first 3x3 still runs at the old jump:
    # 4 at jump 4, 4 at 8, 6 at 16, 2 at 32 -> 11 + 2*(16 + 32 + 96 + 64) = 427, padding 213.
    assert receptive_field(RECEPTIVE_FIELD_PRESETS["ResNet-50 (torchvision v1.5)"])[-1] == (427, 32, 213)
    assert len(RECEPTIVE_FIELD_PRESETS["ResNet-50"]) == 2 + 3 * 16


def _input_pixels_seen(layers, output_index):
    """Brute force: walk down the stack from one output, collecting every input index each tap
    reads (negative indices and indices past the end are padding)."""
    seen = {output_index}
    for k, s, p, d in reversed(layers):
        seen = {i * s - p + t * d for i in seen for t in range(k)}
    return seen


layer_strategy = st.tuples(st.integers(1, 5), st.integers(1, 3), st.integers(0, 2), st.integers(1, 3))


@settings(max_examples=200, deadline=None)
@given(st.lists(layer_strategy, min_size=1, max_size=4))
def test_receptive_field_matches_brute_force(layers):
    field = receptive_field(layers)[-1]
    first, second = _input_pixels_seen(layers, 0), _input_pixels_seen(layers, 1)
    assert max(first) - min(first) + 1 == field.size
    assert min(first) == -field.padding  # output 0's field starts `padding` pixels early
    assert min(second) - min(first) == field.jump


# ----------------------------------------------------------------------------- PyTorch oracle
@pytest.mark.oracle
def test_sizes_match_pytorch_layers():
    torch = require_torch()
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(40):
        size, k, s, p, d = (
            int(rng.integers(1, 12)),
            int(rng.integers(1, 5)),
            int(rng.integers(1, 4)),
            int(rng.integers(0, 3)),
            int(rng.integers(1, 3)),
        )
        x = torch.zeros(1, 1, size, size)
        w = torch.zeros(1, 1, k, k)
        if _placements(size, k, s, p, d) == 0:
            with pytest.raises(RuntimeError):
                torch.nn.functional.conv2d(x, w, stride=s, padding=p, dilation=d)
            with pytest.raises(ValueError):
                conv_output_size(size, k, s, p, d)
            continue
        out = torch.nn.functional.conv2d(x, w, stride=s, padding=p, dilation=d)
        assert out.shape[-1] == conv_output_size(size, k, s, p, d)
        a = int(rng.integers(0, max(s, d)))
        expected = (size - 1) * s - 2 * p + d * (k - 1) + a + 1
        if expected >= 1:
            t = torch.nn.functional.conv_transpose2d(x, w, stride=s, padding=p, output_padding=a, dilation=d)
            assert t.shape[-1] == conv_transpose_output_size(size, k, s, p, a, d)
        checked += 1
    assert checked > 20


@pytest.mark.oracle
def test_parameter_counts_match_pytorch_modules():
    torch = require_torch()

    def count(module):
        return sum(p.numel() for p in module.parameters())

    assert count(torch.nn.Linear(13, 7)) == linear_params(13, 7)
    assert count(torch.nn.Linear(13, 7, bias=False)) == linear_params(13, 7, bias=False)
    assert count(torch.nn.Conv2d(6, 12, (3, 5), groups=3)) == conv2d_params(6, 12, (3, 5), groups=3)
    assert count(torch.nn.ConvTranspose2d(4, 8, 3)) == conv2d_params(4, 8, 3)
    mha = torch.nn.MultiheadAttention(48, 6, batch_first=True)
    assert count(mha) == multihead_attention_params(48)
    assert count(mha) == attention_shapes(1, 1, 48, 6).params["total"]

"""Attention: scaled_dot_product_attention, masks, positions (sinusoidal, RoPE), MultiheadAttention."""

import math

import numpy as np
import pytest
from oracle import check_against_torch, check_gradcheck, random_arrays, require_torch

import engine
import engine.functional as F
from engine import nn
from engine.attention import (
    apply_rope,
    attention_weights,
    causal_mask,
    padding_mask,
    rope_frequencies,
    sinusoidal_positions,
    sliding_window_mask,
)
from engine.shapes import multihead_attention_params


def sdpa_torch(torch):
    return torch.nn.functional.scaled_dot_product_attention


# ----------------------------------------------------------------------------- SDPA vs torch
def test_sdpa_no_mask_batched_heads():
    torch = require_torch()
    q, k, v = random_arrays((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4), seed=1)
    check_against_torch(F.scaled_dot_product_attention, sdpa_torch(torch), [q, k, v])


def test_sdpa_queries_and_keys_of_different_lengths_and_value_width():
    torch = require_torch()
    q, k, v = random_arrays((2, 3, 4, 6), (2, 3, 7, 6), (2, 3, 7, 5), seed=2)
    check_against_torch(F.scaled_dot_product_attention, sdpa_torch(torch), [q, k, v])


@pytest.mark.parametrize("L, S", [(6, 6), (4, 7), (7, 4)])
def test_sdpa_causal(L, S):
    torch = require_torch()
    q, k, v = random_arrays((2, 2, L, 4), (2, 2, S, 4), (2, 2, S, 3), seed=3)
    check_against_torch(
        lambda *t: F.scaled_dot_product_attention(*t, is_causal=True),
        lambda *t: sdpa_torch(torch)(*t, is_causal=True),
        [q, k, v],
    )


@pytest.mark.parametrize("mask_shape", [(5, 7), (2, 1, 5, 7), (2, 3, 5, 7), (2, 1, 1, 7)])
def test_sdpa_boolean_mask_true_means_attend(mask_shape):
    torch = require_torch()
    q, k, v = random_arrays((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 4), seed=4)
    mask = np.random.default_rng(5).random(mask_shape) > 0.4
    mask[..., 0] = True  # every query keeps at least one key (torch's math kernel would give NaN)
    check_against_torch(
        lambda *t: F.scaled_dot_product_attention(*t, attn_mask=mask),
        lambda *t: sdpa_torch(torch)(*t, attn_mask=torch.tensor(mask)),
        [q, k, v],
    )


def test_sdpa_additive_float_mask_and_its_gradient():
    torch = require_torch()
    q, k, v, bias = random_arrays((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4), (3, 5, 6), seed=6)
    bias[0, 1, 2] = -np.inf  # a blocked entry inside a float mask
    check_against_torch(
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        lambda q, k, v, m: sdpa_torch(torch)(q, k, v, attn_mask=m),
        [q, k, v, bias],
    )


def test_sdpa_custom_scale_and_unbatched():
    torch = require_torch()
    q, k, v = random_arrays((5, 4), (6, 4), (6, 2), seed=7)
    check_against_torch(
        lambda *t: F.scaled_dot_product_attention(*t, scale=0.3),
        lambda *t: sdpa_torch(torch)(*t, scale=0.3),
        [q, k, v],
    )


def test_sdpa_fully_masked_row_gives_zeros_not_nan():
    torch = require_torch()
    q, k, v = random_arrays((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4), seed=8)
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False  # query 1 may attend to nothing
    tq, tk, tv = (engine.Tensor(a, requires_grad=True) for a in (q, k, v))
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask)
    np.testing.assert_array_equal(out.data[:, :, 1], 0.0)
    out.backward(np.ones(out.shape))
    for t in (tq, tk, tv):
        assert np.all(np.isfinite(t.grad.numpy()))
    # torch 2.x returns the same zeros for a fully masked row
    expected = sdpa_torch(torch)(*(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(mask))
    np.testing.assert_allclose(out.data, expected.numpy(), atol=1e-12)


def test_sdpa_gradcheck_with_masks():
    q, k, v, bias = random_arrays((2, 3, 4), (2, 5, 4), (2, 5, 3), (3, 5), seed=9)
    check_gradcheck(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), [q, k, v, bias])
    check_gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [q, k, v])
    keep = np.random.default_rng(10).random((3, 5)) > 0.5
    keep[:, 0] = True
    check_gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=keep), [q, k, v])


def test_sdpa_extreme_scores_stay_finite():
    q = np.full((1, 3, 4), 1e4, dtype=np.float32)
    k = np.random.default_rng(11).standard_normal((1, 6, 4)).astype(np.float32) * 1e4
    v = np.random.default_rng(12).standard_normal((1, 6, 2)).astype(np.float32)
    out = F.scaled_dot_product_attention(q, k, v)
    assert out.dtype == np.float32 and np.all(np.isfinite(out.data))


def test_attention_weights_rows_sum_to_one_and_respect_the_mask():
    q, k = random_arrays((2, 5, 4), (2, 5, 4), seed=13)
    w = attention_weights(q, k, is_causal=True).data
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)
    assert np.all(w[:, ~causal_mask(5)] == 0)
    # the definition softmax(q kᵀ / √d) on an unmasked case
    scores = q @ np.swapaxes(k, -1, -2) / 2.0
    expected = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    np.testing.assert_allclose(attention_weights(q, k).data, expected, rtol=1e-12)


def test_sdpa_dropout():
    q, k, v = (a.astype(np.float32) for a in random_arrays((2, 4, 8), (2, 4, 8), (2, 4, 8), seed=14))
    engine.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).data
    engine.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).data
    np.testing.assert_array_equal(a, b)  # reproducible under manual_seed
    assert not np.allclose(a, F.scaled_dot_product_attention(q, k, v).data)
    np.testing.assert_array_equal(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).data, 0.0)


def test_sdpa_errors():
    q = engine.zeros(2, 4, 8)
    with pytest.raises(ValueError, match=r"query \(2, 4, 8\) and key \(2, 4, 6\) must have the same last dim"):
        F.scaled_dot_product_attention(q, engine.zeros(2, 4, 6), engine.zeros(2, 4, 6))
    with pytest.raises(ValueError, match=r"key \(2, 5, 8\) and value \(2, 4, 8\) must have the same length"):
        F.scaled_dot_product_attention(q, engine.zeros(2, 5, 8), engine.zeros(2, 4, 8))
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=np.ones((4, 4), bool), is_causal=True)
    with pytest.raises(ValueError, match="pass is_causal by name"):
        F.scaled_dot_product_attention(q, q, q, None, True)
    with pytest.raises(ValueError, match="attn_mask"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=np.ones((3, 4), bool))
    with pytest.raises(TypeError, match="boolean.*or float"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=np.ones((4, 4), int))


# ----------------------------------------------------------------------------- masks
def test_causal_mask_is_the_lower_triangle():
    m = causal_mask(4)
    assert m.dtype == bool and m.shape == (4, 4)
    for i in range(4):
        for j in range(4):
            assert m[i, j] == (j <= i)
    assert causal_mask(2, 3).tolist() == [[True, False, False], [True, True, False]]


@pytest.mark.parametrize("causal", [True, False])
def test_sliding_window_mask_by_definition(causal):
    L, window = 7, 3
    m = sliding_window_mask(L, window, causal=causal)
    for i in range(L):
        for j in range(L):
            expected = (0 <= i - j < window) if causal else (abs(i - j) < window)
            assert m[i, j] == expected
    assert np.all(m.sum(axis=1) <= (window if causal else 2 * window - 1))


def test_padding_mask_marks_real_tokens():
    m = padding_mask(np.array([2, 0, 4]), L=4)
    assert m.tolist() == [[True, True, False, False], [False] * 4, [True] * 4]
    assert padding_mask([3, 1]).shape == (2, 3)  # L defaults to the longest length
    with pytest.raises(ValueError, match="exceeds the sequence length L=2"):
        padding_mask(np.array([3]), L=2)


def test_mask_helpers_plug_into_sdpa():
    torch = require_torch()
    q, k, v = random_arrays((2, 2, 6, 4), (2, 2, 6, 4), (2, 2, 6, 4), seed=15)
    keys = padding_mask(np.array([6, 4]))[:, None, None, :]  # [B, 1, 1, S]
    mask = keys & sliding_window_mask(6, 2)
    ours = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).data
    theirs = sdpa_torch(torch)(*(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(mask)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- positions
@pytest.mark.parametrize("L, d", [(10, 8), (5, 7), (1, 2)])
def test_sinusoidal_positions_follow_the_formula(L, d):
    pe = sinusoidal_positions(L, d)
    assert pe.shape == (L, d) and pe.dtype == np.float32
    for pos in range(L):
        for i in range(0, d, 2):
            angle = pos / 10000 ** (i / d)
            assert pe.data[pos, i] == pytest.approx(math.sin(angle), abs=1e-6)
            if i + 1 < d:
                assert pe.data[pos, i + 1] == pytest.approx(math.cos(angle), abs=1e-6)


def test_rope_rotates_each_pair_by_position_times_frequency():
    (x,) = random_arrays((5, 6), seed=16)
    out = apply_rope(x).data
    for m in range(5):
        for i in range(3):
            a = m * 10000 ** (-2 * i / 6)
            assert out[m, 2 * i] == pytest.approx(x[m, 2 * i] * math.cos(a) - x[m, 2 * i + 1] * math.sin(a))
            assert out[m, 2 * i + 1] == pytest.approx(x[m, 2 * i] * math.sin(a) + x[m, 2 * i + 1] * math.cos(a))
    np.testing.assert_allclose(rope_frequencies(6), [1.0, 10000 ** (-1 / 3), 10000 ** (-2 / 3)])
    np.testing.assert_array_equal(out[0], x[0])  # position 0 is not rotated
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12)


def test_rope_scores_depend_only_on_the_offset():
    q, k = random_arrays((8,), (8,), seed=17)
    rotated_q = lambda m: apply_rope(q[None], positions=np.array([m])).data[0]  # noqa: E731
    rotated_k = lambda n: apply_rope(k[None], positions=np.array([n])).data[0]  # noqa: E731
    for m, n in [(0, 3), (5, 2), (7, 7), (1, 10)]:
        base = rotated_q(m) @ rotated_k(n)
        for shift in (1, 4, 37):
            assert rotated_q(m + shift) @ rotated_k(n + shift) == pytest.approx(base, rel=1e-9, abs=1e-12)
    # and the score does change with the offset (the test could fail)
    assert abs(rotated_q(0) @ rotated_k(1) - rotated_q(0) @ rotated_k(3)) > 1e-3


def test_rope_on_batched_heads_and_gradcheck():
    (x,) = random_arrays((2, 3, 5, 4), seed=18)
    out = apply_rope(x)
    # every (batch, head) row at position m gets the same rotation as a single [L, d] sequence
    np.testing.assert_allclose(out.data[1, 2], apply_rope(x[1, 2]).data, rtol=1e-12)
    check_gradcheck(lambda t: apply_rope(t, positions=np.array([3, 0, 1, 7, 2])), [x])
    with pytest.raises(ValueError, match="d must be even"):
        apply_rope(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="positions of shape"):
        apply_rope(np.zeros((3, 4)), positions=np.arange(5))


# ----------------------------------------------------------------------------- MultiheadAttention
def _pair(torch, E, H, batch_first=True):
    """The same layer in both libraries; batch_first=None leaves each library's default."""
    engine.manual_seed(0)
    kw = {} if batch_first is None else {"batch_first": batch_first}
    mine = nn.MultiheadAttention(E, H, dtype="float64", **kw)
    theirs = torch.nn.MultiheadAttention(E, H, dtype=torch.float64, **kw)
    with torch.no_grad():
        for (name, p), (tname, tp) in zip(mine.named_parameters(), theirs.named_parameters()):
            assert name == tname and p.shape == tuple(tp.shape)
            tp.copy_(torch.tensor(p.data))
    return mine, theirs


def _compare_mha(torch, mine, theirs, q, k, v, self_attention=False, **kw):
    """Outputs, weights and the gradients of inputs and every parameter, for a loss on both outputs."""
    eq, ek, ev = (engine.Tensor(a, requires_grad=True) for a in (q, k, v))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    if self_attention:
        ek = ev = eq
        tk = tv = tq
    torch_kw = {key: (torch.tensor(val) if isinstance(val, np.ndarray) else val) for key, val in kw.items()}
    out, w = mine(eq, ek, ev, **kw)
    t_out, t_w = theirs(tq, tk, tv, **torch_kw)
    np.testing.assert_allclose(out.data, t_out.detach().numpy(), rtol=1e-9, atol=1e-12)
    loss_grads = random_arrays(t_out.shape, seed=19)
    loss = (out * loss_grads[0]).sum()
    t_loss = (t_out * torch.tensor(loss_grads[0])).sum()
    if t_w is not None:
        np.testing.assert_allclose(w.data, t_w.detach().numpy(), rtol=1e-9, atol=1e-12)
        (gw,) = random_arrays(t_w.shape, seed=20)
        loss = loss + (w * gw).sum()
        t_loss = t_loss + (t_w * torch.tensor(gw)).sum()
    else:
        assert w is None
    loss.backward()
    t_loss.backward()
    for (name, p), (_, tp) in zip(mine.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-8, atol=1e-11, err_msg=name)
    for name, e, t in (("query", eq, tq), ("key", ek, tk), ("value", ev, tv)):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-11, err_msg=name)


@pytest.mark.parametrize("batch_first", [True, False])
def test_mha_self_attention_matches_torch(batch_first):
    torch = require_torch()
    mine, theirs = _pair(torch, 8, 2, batch_first=batch_first)
    shape = (3, 5, 8) if batch_first else (5, 3, 8)
    (x,) = random_arrays(shape, seed=21)
    _compare_mha(torch, mine, theirs, x, x, x, self_attention=True)


def test_mha_cross_attention_with_masks_matches_torch():
    torch = require_torch()
    mine, theirs = _pair(torch, 12, 3)
    q, k, v = random_arrays((2, 4, 12), (2, 6, 12), (2, 6, 12), seed=22)
    blocked = np.random.default_rng(23).random((4, 6)) > 0.6
    blocked[:, 0] = False
    padded = np.zeros((2, 6), dtype=bool)
    padded[1, 4:] = True
    _compare_mha(torch, mine, theirs, q, k, v, attn_mask=blocked, key_padding_mask=padded, average_attn_weights=False)


def test_mha_default_layout_is_sequence_first_as_torch(torch):
    mine, theirs = _pair(torch, 12, 3, batch_first=None)
    assert mine.batch_first is False and theirs.batch_first is False
    q, k, v = random_arrays((4, 2, 12), (6, 2, 12), (6, 2, 12), seed=28)  # [L, B, E], [S, B, E]
    blocked = np.random.default_rng(29).random((4, 6)) > 0.6
    blocked[:, 0] = False
    padded = np.zeros((2, 6), dtype=bool)  # [B, S] in either layout
    padded[1, 4:] = True
    _compare_mha(torch, mine, theirs, q, k, v, attn_mask=blocked, key_padding_mask=padded)
    out, weights = mine(q, k, v)
    assert out.shape == (4, 2, 12) and weights.shape == (2, 4, 6)


def test_mha_float_mask_per_head_and_causal():
    torch = require_torch()
    mine, theirs = _pair(torch, 8, 2)
    (x,) = random_arrays((2, 5, 8), seed=24)
    (bias,) = random_arrays((4, 5, 5), seed=25)  # [B·H, L, S]
    _compare_mha(torch, mine, theirs, x, x, x, self_attention=True, attn_mask=bias)
    upper = ~causal_mask(5)  # True = blocked for MultiheadAttention
    _compare_mha(torch, mine, theirs, x, x, x, self_attention=True, attn_mask=upper, is_causal=True)
    # is_causal alone builds the same mask here (torch insists on being given it)
    a, _ = mine(x, x, x, is_causal=True)
    b, _ = mine(x, x, x, attn_mask=upper)
    np.testing.assert_allclose(a.data, b.data, rtol=1e-12)


def test_mha_need_weights_false_and_unbatched():
    torch = require_torch()
    mine, theirs = _pair(torch, 8, 4)
    q, k = random_arrays((5, 8), (3, 8), seed=26)
    _compare_mha(torch, mine, theirs, q, k, k, need_weights=False)
    _compare_mha(torch, mine, theirs, q, k, k)


def test_mha_gradcheck():
    engine.manual_seed(1)
    mha = nn.MultiheadAttention(4, 2, dtype="float64", batch_first=True)
    (x,) = random_arrays((2, 3, 4), seed=27)
    check_gradcheck(lambda t: mha(t, t, t, attn_mask=~causal_mask(3))[0], [x])

    def with_parameters(w_in, b_in, w_out, b_out):
        # gradcheck differentiates its own float64 tensors: put them in the module's place
        for module, name, value in (
            (mha, "in_proj_weight", w_in),
            (mha, "in_proj_bias", b_in),
            (mha.out_proj, "weight", w_out),
            (mha.out_proj, "bias", b_out),
        ):
            if isinstance(getattr(module, name), nn.Parameter):
                delattr(module, name)  # as in PyTorch: a Parameter's attribute takes only a Parameter
            setattr(module, name, value)
        return mha(x, x, x)[0]

    check_gradcheck(with_parameters, [p.data.copy() for p in mha.parameters()])


def test_mha_init_and_parameter_count():
    engine.manual_seed(2)
    m = nn.MultiheadAttention(16, 4)
    assert [n for n, _ in m.named_parameters()] == [
        "in_proj_weight",
        "in_proj_bias",
        "out_proj.weight",
        "out_proj.bias",
    ]
    assert sum(p.data.size for p in m.parameters()) == multihead_attention_params(16)
    bound = math.sqrt(6 / (16 + 48))  # Xavier-uniform on [3E, E]
    assert np.abs(m.in_proj_weight.data).max() <= bound and np.abs(m.in_proj_weight.data).max() > 0.9 * bound
    assert not m.in_proj_bias.data.any() and not m.out_proj.bias.data.any()
    assert np.abs(m.out_proj.weight.data).max() <= 1 / 4  # Linear's U(−1/√E, 1/√E)
    assert m.in_proj_weight.dtype == np.float32


def test_mha_errors():
    with pytest.raises(ValueError, match="embed_dim=10 must be divisible by num_heads=3"):
        nn.MultiheadAttention(10, 3)
    m = nn.MultiheadAttention(8, 2, batch_first=True)
    x = engine.zeros(2, 5, 8)
    with pytest.raises(ValueError, match=r"E = embed_dim = 8.*key of shape \(2, 5, 6\)"):
        m(x, engine.zeros(2, 5, 6), engine.zeros(2, 5, 6))
    with pytest.raises(ValueError, match=r"attn_mask must have shape \(5, 5\) or \(4, 5, 5\)"):
        m(x, x, x, attn_mask=np.zeros((2, 5, 5), bool))
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(2, 5\)"):
        m(x, x, x, key_padding_mask=np.zeros((5,), bool))

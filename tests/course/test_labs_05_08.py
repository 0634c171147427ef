"""The notebook labs of 05-08 (engine.course.labs: convolution, attention, diffusion, vae).

Each value a notebook shows is checked here against an independent computation: brute-force
loops over placements and patches, NumPy written out by hand, closed forms, or PyTorch.
"""

import math

import numpy as np
import pytest

import engine
from engine import shapes
from engine.course.labs import convolution as conv_lab


# ============================================================================= 05 convolution
def _brute_output_size(w, k, s, p, d):
    """Count kernel placements by walking the padded input one start at a time."""
    span = d * (k - 1) + 1
    return sum(1 for start in range(0, w + 2 * p) if start % s == 0 and start + span <= w + 2 * p)


@pytest.mark.parametrize("w", [1, 2, 5, 7, 12])
@pytest.mark.parametrize("k, s, p, d", [(1, 1, 0, 1), (3, 1, 1, 1), (3, 2, 0, 1), (4, 3, 2, 1),
                                        (3, 2, 1, 2), (5, 1, 0, 3), (2, 4, 3, 1)])
def test_conv_report_counts_placements(w, k, s, p, d):
    report = conv_lab.conv_report(w, k, s, p, d)
    expected = _brute_output_size(w, k, s, p, d)
    if expected == 0:
        assert not report.ok and report.output_size is None
        assert "Impossible" in report.message and str(d * (k - 1) + 1) in report.message
    else:
        assert report.ok and report.output_size == expected
        assert report.effective_kernel == d * (k - 1) + 1
        assert str(expected) in report.message


def test_conv_report_notes_and_params():
    # 6 + 2 - 3 = 5 is odd: at stride 2 the last padded pixel is never reached
    r = conv_lab.conv_report(6, 3, 2, 1)
    assert r.ok and any("never reached" in n for n in r.notes)
    assert conv_lab.conv_report(5, 3, 1, 1).notes == ("'Same' size: the output is as wide as the input.",)
    assert any("padding only" in n for n in conv_lab.conv_report(4, 3, 1, 3).notes)
    # C_out (C_in K^2 + 1): counted by hand for Conv2d(3, 16, 5)
    assert conv_lab.conv_report(32, 5, c_in=3, c_out=16).params == 16 * 3 * 25 + 16


def test_conv_report_rejects_bad_settings():
    with pytest.raises(ValueError, match="stride"):
        conv_lab.conv_report(5, 3, stride=0)
    with pytest.raises(TypeError, match="kernel"):
        conv_lab.conv_report(5, 2.5)


def test_conv_placements_taps_match_the_definition():
    w, k, s, p, d = 7, 3, 2, 1, 2
    data = conv_lab.conv_placements(w, k, s, p, d)
    out = _brute_output_size(w, k, s, p, d)
    taps = data["taps"]
    assert taps.shape == (out, k)
    for o in range(out):
        assert list(taps[o]) == [o * s + j * d for j in range(k)]
    kind = data["kind"].reshape(out, w + 2 * p)
    for o in range(out):
        for x in range(w + 2 * p):
            pad = x < p or x >= p + w
            tap = x in taps[o]
            expected = ("tap on padding" if pad else "tap") if tap else ("padding" if pad else "input")
            assert kind[o, x] == expected
    empty = conv_lab.conv_placements(2, 5)
    assert not empty["report"].ok and len(empty["kind"]) == 0


def test_conv_grid_lights_the_selected_window():
    g = conv_lab.conv_grid(5, 3, 2, 1, 1, out_row=1, out_col=2)
    n = 7
    kind = g["kind"].reshape(n, n)
    lit = np.argwhere(np.isin(kind, ["tap", "tap on padding"]))
    expected = [(r, c) for r in (2, 3, 4) for c in (4, 5, 6)]
    assert sorted(map(tuple, lit)) == expected
    assert kind[2, 6] == "tap on padding" and kind[0, 0] == "padding"
    assert g["selected"].sum() == 1
    # out-of-range selections are clipped into the output grid
    assert conv_lab.conv_grid(5, 3, 2, 1, 1, 99, -4)["out_row"] == 2


def test_conv_transpose_report_and_coverage(torch):
    for w, k, s, p, a, d in [(3, 3, 2, 1, 1, 1), (4, 4, 2, 1, 0, 1), (2, 3, 3, 0, 2, 1),
                             (5, 3, 1, 2, 0, 2), (3, 2, 2, 0, 1, 1)]:
        r = conv_lab.conv_transpose_report(w, k, s, p, a, d)
        x = torch.ones(1, 1, w, dtype=torch.float64)
        weight = torch.ones(1, 1, k, dtype=torch.float64)
        y = torch.nn.functional.conv_transpose1d(x, weight, stride=s, padding=p,
                                                 output_padding=a, dilation=d)
        assert r.ok and r.output_size == y.shape[-1]
        cov = conv_lab.conv_transpose_placements(w, k, s, p, a, d)["coverage"]
        np.testing.assert_array_equal(cov, y[0, 0].numpy())


def test_conv_transpose_report_impossible():
    r = conv_lab.conv_transpose_report(3, 3, 2, 0, output_padding=2)
    assert not r.ok and "output_padding" in r.message
    r = conv_lab.conv_transpose_report(1, 1, 1, 3)
    assert not r.ok and "< 1" in r.message
    assert len(conv_lab.conv_transpose_placements(1, 1, 1, 3)["coverage"]) == 0


def test_round_trip_output_padding():
    for w, k, s, p in [(7, 3, 2, 1), (8, 3, 2, 1), (28, 5, 3, 2), (10, 4, 4, 0)]:
        o = shapes.conv_output_size(w, k, s, p)
        a = conv_lab.round_trip_output_padding(w, k, s, p)
        assert shapes.conv_transpose_output_size(o, k, s, p, a) == w


def test_receptive_field_table_by_brute_force():
    # three 3x3 stride-1 convolutions see 7x7 (the VGG argument); fmap from conv_output_size
    rows = conv_lab.receptive_field_table(conv_lab.uniform_stack(3, 3, 1), input_size=10)
    assert [r["rf"] for r in rows] == [3, 5, 7]
    assert [r["fmap"] for r in rows] == [10, 10, 10]
    # brute force: which input pixels can reach output pixel 0 of a stack? Propagate intervals.
    layers = [(5, 2, 2, 1), (3, 2, 1, 2), (3, 1, 0, 1)]
    lo, hi = 0, 0
    for k, s, p, d in reversed(layers):
        lo, hi = lo * s - p, hi * s - p + d * (k - 1)
    rows = conv_lab.receptive_field_table(layers, input_size=40)
    assert rows[-1]["rf"] == hi - lo + 1 and rows[-1]["start"] == -lo
    size = 40
    for row, (k, s, p, d) in zip(rows, layers):
        size = _brute_output_size(size, k, s, p, d)
        assert row["fmap"] == size


def test_receptive_field_table_collapse_and_presets():
    rows = conv_lab.receptive_field_table(conv_lab.uniform_stack(6, 3, 2, 1, 0), input_size=8)
    fmaps = [r["fmap"] for r in rows]
    assert fmaps[:4] == [4, 2, 1, 1] or fmaps[:3] == [4, 2, 1]
    rows = conv_lab.receptive_field_table(conv_lab.uniform_stack(4, 5, 1), input_size=3)
    assert rows[0]["fmap"] == 3  # 'same' padding keeps it
    rows = conv_lab.receptive_field_table([(7, 1, 0)], input_size=3)
    assert rows[0]["fmap"] is None and "cannot" in rows[0]["note"]
    vgg = conv_lab.receptive_field_table(shapes.RECEPTIVE_FIELD_PRESETS["VGG-16"], 224)
    assert vgg[-1]["rf"] == 212 and vgg[-1]["fmap"] == 7 and vgg[-1]["jump"] == 32


def test_uniform_stack_pools():
    layers = conv_lab.uniform_stack(4, 3, 1, 2, pool_every=2)
    names = [n for n, _ in layers]
    assert names == ["conv1", "conv2", "pool1", "conv3", "conv4", "pool2"]
    assert layers[0][1] == (3, 1, 2, 2)  # 'same' padding D(K-1)/2
    with pytest.raises(ValueError, match="pool_every"):
        conv_lab.uniform_stack(2, pool_every=-1)


# ----------------------------------------------------------------------------- im2col
def _naive_patch(x_pad, k, s, d, row, col):
    """The values output (row, col) reads, channel by channel, tap by tap (loops on purpose)."""
    values = []
    for c in range(x_pad.shape[0]):
        for i in range(k):
            for j in range(k):
                values.append(x_pad[c, row * s + i * d, col * s + j * d])
    return np.array(values)


@pytest.mark.parametrize("c, h, k, s, p, d", [(1, 5, 3, 1, 1, 1), (2, 6, 3, 2, 0, 1),
                                              (1, 7, 2, 3, 2, 1), (2, 7, 3, 1, 1, 2)])
def test_im2col_view_row_is_the_naive_patch(c, h, k, s, p, d):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(c, h, h))
    w = rng.normal(size=(3, c, k, k))
    x_pad = np.pad(x, ((0, 0), (p, p), (p, p)))
    out = _brute_output_size(h, k, s, p, d)
    for row, col in [(0, 0), (out - 1, out - 1), (out // 2, 0)]:
        v = conv_lab.im2col_view(x, w, s, p, d, row, col)
        patch = _naive_patch(x_pad, k, s, d, row, col)
        np.testing.assert_allclose(v["row_values"], patch)
        np.testing.assert_allclose(v["rows"][row * out + col], patch)
        np.testing.assert_allclose(v["weights"], w[0].ravel())
        assert v["value"] == pytest.approx(float(patch @ w[0].ravel()))
        assert v["patch"].sum() == c * k * k
        np.testing.assert_allclose(np.sort(x_pad[v["patch"]]), np.sort(patch))
        np.testing.assert_allclose(v["output"], v["conv2d"], atol=1e-9)
        assert v["output"][row, col] == pytest.approx(v["value"])


def test_im2col_view_against_torch(torch):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 6, 6))
    w = rng.normal(size=(1, 2, 3, 3))
    v = conv_lab.im2col_view(x, w, 2, 1, 1)
    ref = torch.nn.functional.conv2d(torch.tensor(x[None]), torch.tensor(w), stride=2, padding=1)
    np.testing.assert_allclose(v["output"], ref[0, 0].numpy(), atol=1e-10)
    cols = torch.nn.functional.unfold(torch.tensor(x[None]), 3, stride=2, padding=1)[0].numpy()
    np.testing.assert_allclose(v["rows"], cols.T)


def test_im2col_view_impossible_setting_is_a_message():
    v = conv_lab.im2col_view(np.zeros((1, 3, 3)), np.zeros((1, 1, 5, 5)))
    assert not v["ok"] and "Impossible" in v["message"]


def test_im2col_backward_matches_autograd_and_counts_windows():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 6, 6))
    w = rng.normal(size=(3, 2, 3, 3))
    g = rng.normal(size=(3, 3, 3))
    b = conv_lab.im2col_backward(x, w, g, stride=2, padding=1)
    np.testing.assert_allclose(b["grad_weight"], b["autograd_weight"], atol=1e-10)
    np.testing.assert_allclose(b["grad_input"], b["autograd_input"], atol=1e-10)
    # windows per pixel by brute force
    count = np.zeros((8, 8))
    for r in range(3):
        for c in range(3):
            count[2 * r:2 * r + 3, 2 * c:2 * c + 3] += 1
    np.testing.assert_array_equal(b["window_count"], count[1:7, 1:7])


# ----------------------------------------------------------------------------- filters
def _naive_correlate(image, kernel):
    k = kernel.shape[0]
    padded = np.pad(image, k // 2)
    out = np.zeros_like(image)
    for i in range(k):
        for j in range(k):
            out += kernel[i, j] * padded[i:i + image.shape[0], j:j + image.shape[1]]
    return out


@pytest.mark.parametrize("name", sorted(conv_lab.CLASSIC_FILTERS))
def test_apply_filter_is_cross_correlation(name):
    img = conv_lab.sample_image(24, noise=0.05, seed=3)
    kernel = conv_lab.CLASSIC_FILTERS[name]
    np.testing.assert_allclose(conv_lab.apply_filter(img, name), _naive_correlate(img, kernel),
                               atol=1e-12)


def test_filters_sum_and_special_cases():
    img = conv_lab.sample_image(32)
    np.testing.assert_array_equal(conv_lab.apply_filter(img, "identity"), img)
    for name in ("box blur", "Gaussian blur", "sharpen", "identity"):
        assert conv_lab.CLASSIC_FILTERS[name].sum() == pytest.approx(1.0)
    for name in ("vertical edges (Sobel x)", "horizontal edges (Sobel y)", "Laplacian"):
        assert conv_lab.CLASSIC_FILTERS[name].sum() == pytest.approx(0.0)
    gx = _naive_correlate(img, conv_lab.CLASSIC_FILTERS["vertical edges (Sobel x)"])
    gy = _naive_correlate(img, conv_lab.CLASSIC_FILTERS["horizontal edges (Sobel y)"])
    np.testing.assert_allclose(conv_lab.apply_filter(img, "edge magnitude"), np.hypot(gx, gy),
                               atol=1e-12)
    twice = conv_lab.apply_filter(img, "box blur", repeat=2)
    k = conv_lab.CLASSIC_FILTERS["box blur"]
    np.testing.assert_allclose(twice, _naive_correlate(_naive_correlate(img, k), k), atol=1e-12)
    strided = conv_lab.apply_filter(img, "sharpen", stride=3)
    np.testing.assert_allclose(strided, _naive_correlate(img, conv_lab.CLASSIC_FILTERS["sharpen"])[::3, ::3],
                               atol=1e-12)
    with pytest.raises(ValueError, match="unknown filter"):
        conv_lab.apply_filter(img, "blurry")


def test_sample_image():
    a = conv_lab.sample_image(40, noise=0.2, seed=1)
    assert a.shape == (40, 40) and a.min() >= 0 and a.max() <= 1
    np.testing.assert_array_equal(a, conv_lab.sample_image(40, noise=0.2, seed=1))
    with pytest.raises(ValueError, match="size"):
        conv_lab.sample_image(4)


# ----------------------------------------------------------------------------- small CNN
def test_cnn_learns_the_shapes():
    X, y = engine.data.make_shapes(384, size=16, seed=0)
    Xt, yt = engine.data.make_shapes(128, size=16, seed=1)
    model = conv_lab.make_cnn(n_filters=4, kernel_size=5, seed=0)
    seen = []
    history = conv_lab.train_cnn(model, X, y, Xt, yt, epochs=4, lr=2e-2, seed=0,
                                 on_epoch=lambda e, h: seen.append(e))
    assert seen == [1, 2, 3, 4] and len(history["loss"]) == 4
    assert history["loss"][-1] < history["loss"][0]
    assert history["test_acc"][-1] > 0.6  # chance is 0.25
    # the accuracy reported is the share of argmax hits, recomputed here
    with engine.no_grad():
        logits = model(engine.Tensor(Xt)).data
    assert history["test_acc"][-1] == pytest.approx(float((logits.argmax(1) == yt).mean()))
    maps = conv_lab.feature_maps(model, Xt[0])
    assert maps["conv1"].shape == (4, 16, 16) and maps["pool2"].shape == (8, 4, 4)
    np.testing.assert_allclose(maps["logits"], logits[0], rtol=1e-5, atol=1e-6)
    assert maps["probs"].sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(conv_lab.learned_filters(model), model[0].weight.data[:, 0])
    # conv1's map is the engine conv of the image with the learned filters, plus bias
    ref = engine.functional.conv2d(Xt[:1], model[0].weight.data, model[0].bias.data, padding=2).data[0]
    np.testing.assert_allclose(maps["conv1"], ref, rtol=1e-5, atol=1e-6)


def test_make_cnn_rejects_bad_sizes():
    with pytest.raises(ValueError, match="multiple of 4"):
        conv_lab.make_cnn(image_size=18)
    with pytest.raises(ValueError, match="odd"):
        conv_lab.make_cnn(kernel_size=4)


def test_check_number():
    from engine.course.exercises import check_number, parse_number

    assert check_number("7", 7, "h") == (True, "Right: 7.")
    ok, msg = check_number(6, 7, "count the taps")
    assert ok is False and "count the taps" in msg and "too small" in msg
    assert check_number("", 7, "h")[0] is None
    assert check_number(None, 7, "h")[0] is None
    assert check_number("abc", 7, "h")[0] is None
    assert check_number("x" * 200, 7, "h")[0] is None
    assert check_number("nan", 7, "h")[0] is None
    assert check_number("0.49", 0.5, "h", abs_tol=0.02)[0] is True
    assert check_number("0.45", 0.5, "h", abs_tol=0.02)[0] is False
    assert check_number("1/4", 0.25, "h")[0] is True
    assert check_number("1,5", 1.5, "h")[0] is True
    assert parse_number("1/0") is None and parse_number(True) is None


# ============================================================================= 06 attention
from engine.course.labs import attention as attention_lab  # noqa: E402


def test_toy_qkv_projects_the_embeddings():
    t = attention_lab.toy_qkv("a b a c", d_model=6, d_k=3, seed=1)
    assert t["tokens"] == ["a", "b", "a", "c"]
    np.testing.assert_array_equal(t["X"][0], t["X"][2])  # the same word, the same embedding
    for name in "QKV":
        np.testing.assert_allclose(t[name], t["X"] @ t[f"W_{name.lower()}"])
    assert t["Q"].shape == (4, 3)
    with pytest.raises(ValueError, match="at least one token"):
        attention_lab.toy_qkv("")


def test_make_mask_definitions():
    L = 7
    i, j = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    assert attention_lab.make_mask("none", L) is None
    np.testing.assert_array_equal(attention_lab.make_mask("causal", L), j <= i)
    np.testing.assert_array_equal(attention_lab.make_mask("padding", L, n_pad=2), j < L - 2)
    np.testing.assert_array_equal(attention_lab.make_mask("sliding window", L, window=2),
                                  np.abs(i - j) < 2)
    np.testing.assert_array_equal(attention_lab.make_mask("causal sliding window", L, window=3),
                                  (j <= i) & (i - j < 3))
    assert not attention_lab.make_mask("padding", L, n_pad=9).any()
    with pytest.raises(ValueError, match="kind"):
        attention_lab.make_mask("diagonal", L)


def test_attention_maps_against_numpy():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    mask = attention_lab.make_mask("causal", 5)
    r = attention_lab.attention_maps(Q, K, V, "sqrt", 0.5, mask)
    s = Q @ K.T / 2.0 / 0.5
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(r["weights"], p, atol=1e-12)
    np.testing.assert_allclose(r["output"], p @ V, atol=1e-12)
    logp = np.log(np.where(p > 0, p, 1.0))
    np.testing.assert_allclose(r["entropy"], -(p * logp).sum(1), atol=1e-12)
    assert r["entropy"][0] == 0.0  # the first query sees one key only
    assert np.isnan(r["scores"][0, 1]) and r["scale"] == pytest.approx(1.0)
    empty = attention_lab.attention_maps(Q, K, V, mask=np.zeros((5, 5), bool))
    assert list(empty["empty_rows"]) == [0, 1, 2, 3, 4] and np.all(empty["output"] == 0)
    with pytest.raises(ValueError, match="temperature"):
        attention_lab.attention_maps(Q, K, V, temperature=0)
    with pytest.raises(ValueError, match="scale"):
        attention_lab.attention_maps(Q, K, V, scale="cubic")


def test_dot_product_variance_is_d_k():
    for d in (1, 16, 256):
        v = attention_lab.dot_product_variance(d, n=20000, seed=3)
        assert v["var_raw"] == pytest.approx(d, rel=0.06)
        assert v["var_scaled"] == pytest.approx(1.0, rel=0.06)
        np.testing.assert_allclose(v["scaled"] * np.sqrt(d), v["raw"])
    s = attention_lab.scaling_sweep(dims=(1, 16, 256), L=8, n=500)
    assert np.all(np.diff(s["max_raw"]) > 0)  # saturation grows with d_k without scaling
    assert np.ptp(s["max_scaled"]) < 0.1  # and stays put with it
    np.testing.assert_allclose(s["var_raw"] / s["d_k"], 1.0, rtol=0.15)


def test_mha_shapes_against_torch(torch):
    info = attention_lab.mha_shapes(2, 5, 12, 3)
    layer = torch.nn.MultiheadAttention(12, 3, batch_first=True)
    assert info["module_params"] == sum(p.numel() for p in layer.parameters()) == info["params"]["total"]
    x = torch.zeros(2, 5, 12)
    out, w = layer(x, x, x, average_attn_weights=False)
    assert info["output_shape"] == tuple(out.shape) and info["weights_shape"] == tuple(w.shape)
    assert dict(info["rows"])["q, k, v (per head)"] == (2, 3, 5, 4)
    bad = attention_lab.mha_shapes(2, 5, 12, 5)
    assert not bad["ok"] and "12" in bad["message"] and "5" in bad["message"]


def test_rope_pair_trajectory_is_a_rotation():
    d, base = 8, 10000.0
    t = attention_lab.rope_pair_trajectory(d, pair=1, positions=20, base=base)
    theta = base ** (-2 / d)
    assert t["theta"] == pytest.approx(theta)
    np.testing.assert_allclose(np.hypot(*t["xy"].T), np.sqrt(2))  # rotations keep the length
    angles = np.unwrap(np.arctan2(t["xy"][:, 1], t["xy"][:, 0]))
    np.testing.assert_allclose(np.diff(angles), theta)
    with pytest.raises(ValueError, match="pair"):
        attention_lab.rope_pair_trajectory(8, pair=4)


def test_rope_shift_check_and_distance():
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=16), rng.normal(size=16)
    c = attention_lab.rope_shift_check(q, k, 3, 9, 100)
    assert c["rope"] == pytest.approx(c["rope_shifted"], abs=1e-10)
    assert abs(c["absolute"] - c["absolute_shifted"]) > 1e-3
    # score by hand: rotate each pair of q by 3θ_i and of k by 9θ_i
    theta = 10000.0 ** (-np.arange(0, 16, 2) / 16)

    def rot(x, m):
        a, b = x[0::2], x[1::2]
        out = np.empty_like(x)
        out[0::2] = a * np.cos(m * theta) - b * np.sin(m * theta)
        out[1::2] = a * np.sin(m * theta) + b * np.cos(m * theta)
        return out

    assert c["rope"] == pytest.approx(float(rot(q, 3) @ rot(k, 9)), abs=1e-10)
    r = attention_lab.rope_score_vs_distance(d=32, max_distance=100)
    np.testing.assert_allclose(r["ones"], r["closed_form"], atol=1e-9)
    assert r["ones"][0] == pytest.approx(32)
    assert r["ones"][1:].max() < 32


def test_sinusoidal_similarity_depends_on_offset():
    s = attention_lab.sinusoidal_similarity(L=40, d=16)
    sim = s["similarity"]
    np.testing.assert_allclose(sim[:-5, :-5], sim[5:, 5:], atol=1e-5)  # Toeplitz: m − n only
    np.testing.assert_allclose(np.diag(sim), 8.0, atol=1e-5)  # Σ sin² + cos² over 8 pairs


def test_make_sequence_task():
    x, y = attention_lab.make_sequence_task("reverse", 20, 5, 7, seed=0)
    np.testing.assert_array_equal(y, x[:, ::-1])
    assert x.max() < 7 and x.min() >= 0
    x, y = attention_lab.make_sequence_task("sort", 20, 5, 7, seed=0)
    assert np.all(np.diff(y, axis=1) >= 0) and np.all(np.sort(x, 1) == y)
    x, y = attention_lab.make_sequence_task("rotate by 1", 20, 5, 7, seed=0)
    np.testing.assert_array_equal(y[:, :-1], x[:, 1:])
    np.testing.assert_array_equal(y[:, -1], x[:, 0])
    with pytest.raises(ValueError, match="task"):
        attention_lab.make_sequence_task("shuffle")


def test_tiny_attention_learns_to_reverse():
    calls = []
    r = attention_lab.train_tiny_attention("reverse", steps=150, lr=1e-2, length=5,
                                           on_step=calls.append)
    assert calls == list(range(1, 151))
    assert r["history"]["accuracy"][-1] > 0.9
    np.testing.assert_allclose(r["weights"].sum(1), 1.0, rtol=1e-5)
    assert list(r["weights"].argmax(1)) == [4, 3, 2, 1, 0]
    # the weights returned are softmax(q kᵀ/√d) of the model's own projections
    m = r["model"]
    with engine.no_grad():
        h = m.token(r["example"][None]) + m.position(np.arange(5))
        q, k = m.q(h).data[0], m.k(h).data[0]
    s = q @ k.T / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(1, keepdims=True))
    np.testing.assert_allclose(r["weights"], p / p.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)


# ============================================================================= 07 diffusion
from engine import diffusion  # noqa: E402
from engine.course.labs import diffusion as diffusion_lab  # noqa: E402


@pytest.mark.parametrize("name", diffusion_lab.DATASETS_2D)
def test_toy_data_2d_is_standardised(name):
    X = diffusion_lab.toy_data_2d(name, n=500, seed=1)
    assert X.shape == (500, 2)
    np.testing.assert_allclose(X.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(X.std(0), 1, atol=1e-12)
    with pytest.raises(ValueError, match="name"):
        diffusion_lab.toy_data_2d("spiral galaxy")


def test_make_schedule_linear_scale():
    for T in (10, 20, 21, 50, 1000):
        s = diffusion_lab.make_schedule("linear", T)
        scale = min(1000 / T, 0.999 / 0.02)
        np.testing.assert_allclose(s.betas, np.linspace(1e-4, 0.02, T) * scale)
        assert s.betas.max() < 1
        assert s.alpha_bars[-1] < (1e-2 if T < 21 else 1e-4)
    np.testing.assert_allclose(diffusion_lab.make_schedule("linear (fixed bounds)", 100).betas,
                               np.linspace(1e-4, 0.02, 100))
    np.testing.assert_allclose(diffusion_lab.make_schedule("cosine", 64).alpha_bars,
                               diffusion.cosine_beta_schedule(64).alpha_bars)
    with pytest.raises(ValueError, match="kind"):
        diffusion_lab.make_schedule("quadratic")


def test_forward_snapshot_is_the_closed_form():
    X = diffusion_lab.toy_data_2d("moons", 200)
    s = diffusion_lab.make_schedule("linear", 50)
    xt = diffusion_lab.forward_snapshot(X, s, 20, seed=4)
    eps = np.random.default_rng(4).standard_normal(X.shape)
    ab = np.prod(1 - s.betas[:21])
    np.testing.assert_allclose(xt, np.sqrt(ab) * X + np.sqrt(1 - ab) * eps, rtol=1e-10)


def test_chain_vs_closed_form_constant_beta():
    s = diffusion.Schedule.from_betas(np.full(30, 0.05))
    c = diffusion_lab.chain_vs_closed_form([2.0], s, 29, n=20000, seed=0)
    ab = 0.95 ** 30
    assert c["closed_mean"][0] == pytest.approx(np.sqrt(ab) * 2.0)
    assert c["closed_var"] == pytest.approx(1 - ab)
    assert c["mean"][0] == pytest.approx(np.sqrt(ab) * 2.0, abs=5 * np.sqrt((1 - ab) / 20000))
    assert c["var"][0] == pytest.approx(1 - ab, rel=0.05)
    with pytest.raises(ValueError, match="t must be"):
        diffusion_lab.chain_vs_closed_form([0.0], s, 30)


def test_train_ddpm_tracked_improves_and_is_reproducible():
    X = diffusion_lab.toy_data_2d("8 Gaussians", 1400, seed=0)
    s = diffusion_lab.make_schedule("linear", 20)
    ticks = []
    a = diffusion_lab.train_ddpm_tracked(X, s, steps=400, n_checkpoints=4, n_eval=300, on_step=ticks.append)
    b = diffusion_lab.train_ddpm_tracked(X, s, steps=400, n_checkpoints=4, n_eval=300)
    assert ticks == list(range(1, 401))
    np.testing.assert_array_equal(a["losses"], b["losses"])
    assert list(a["checkpoints"]) == [100, 200, 300, 400] and len(a["quality"]) == 4
    assert a["losses"][-50:].mean() < a["losses"][:10].mean()
    assert a["quality"][-1] < a["noise_quality"]
    assert a["floor"] < a["quality"][-1] + 0.05
    # the quality number is the engine's energy distance (recomputed on the held-out rows)
    np.testing.assert_array_equal(a["held_out"], X[-300:].astype(np.float32).astype(np.float64))
    with pytest.raises(ValueError, match="n_eval"):
        diffusion_lab.train_ddpm_tracked(X[:100], s, n_eval=300)


def test_reverse_trajectory_and_sampling_agree():
    X = diffusion_lab.toy_data_2d("moons", 1000, seed=0)
    s = diffusion_lab.make_schedule("linear", 10)
    run = diffusion_lab.train_ddpm_tracked(X, s, steps=50, n_checkpoints=1, n_eval=200)
    traj = diffusion_lab.reverse_trajectory(run["model"], s, n=64, seed=5)
    assert traj["message"] == "" and traj["states"].shape == (11, 64, 2)
    engine.manual_seed(5)
    final = diffusion.sample(run["model"], s, 64, 2, variance="posterior")
    np.testing.assert_allclose(traj["states"][-1], final)


def test_exact_reverse_1d_reproduces_the_mixture():
    m = diffusion_lab.mixture_1d(3.0, 0.3, 0.25)
    assert m.weights[0] == pytest.approx(0.25) and list(m.means[:, 0]) == [-1.5, 1.5]
    x = diffusion_lab.exact_reverse_1d(m, diffusion_lab.make_schedule("linear", 1000), n=4000, variance="beta")
    assert np.mean(x < 0) == pytest.approx(0.25, abs=0.03)
    mean = 0.25 * -1.5 + 0.75 * 1.5
    assert x.mean() == pytest.approx(mean, abs=0.06)
    with pytest.raises(ValueError, match="weight_left"):
        diffusion_lab.mixture_1d(weight_left=1.0)


def test_epsilon_curves_exact_formula_and_learned_model():
    m = diffusion_lab.mixture_1d(2.0, 0.5, 0.5)
    s = diffusion_lab.make_schedule("linear", 20)
    run = diffusion_lab.train_denoiser_1d(m, s, steps=100, n=500)
    assert run["samples"].shape == (500,)
    c = diffusion_lab.epsilon_curves(m, s, 5, model=run["model"], grid=np.linspace(-3, 3, 7))
    ab = s.alpha_bars[5]
    # score of the noised mixture written out: Σ r_k (μ_k' − x)/v with μ_k' = √ᾱ μ_k, v = ᾱσ² + 1 − ᾱ
    x = c["x"]
    mu = np.sqrt(ab) * np.array([-1.0, 1.0])
    v = ab * 0.25 + 1 - ab
    dens = np.exp(-(x[:, None] - mu) ** 2 / (2 * v))
    r = dens / dens.sum(1, keepdims=True)
    score = (r * (mu - x[:, None]) / v).sum(1)
    np.testing.assert_allclose(c["exact"], -np.sqrt(1 - ab) * score, atol=1e-12)
    np.testing.assert_allclose(c["density"], dens.sum(1) / 2 / np.sqrt(2 * np.pi * v), atol=1e-12)
    assert c["learned"].shape == (7,)


# ============================================================================= 08 VAE
from engine import vae  # noqa: E402
from engine.course.labs import vae as vae_lab  # noqa: E402


def test_reparam_gradients_are_the_pathwise_derivatives():
    r = vae_lab.reparam_gradients(1.5, 0.5, n=5000, seed=3)
    eps = np.random.default_rng(3).standard_normal(5000)
    z = 1.5 + 0.5 * eps
    assert r["estimate"] == pytest.approx(np.mean(z**2))
    assert r["grad_mu"] == pytest.approx(np.mean(2 * z))
    assert r["grad_sigma"] == pytest.approx(np.mean(2 * z * eps))
    assert r["grad_mu"] == pytest.approx(3.0, abs=0.05) and r["grad_sigma"] == pytest.approx(1.0, abs=0.1)
    with pytest.raises(ValueError, match="sigma"):
        vae_lab.reparam_gradients(0.0, 0.0)


def test_kl_check_closed_form_monte_carlo_and_torch(torch):
    for mu, sigma in [(0.0, 1.0), (1.0, 1.0), (-2.0, 0.3), (0.5, 2.5)]:
        k = vae_lab.kl_check(mu, sigma, n_samples=20000, seed=1)
        ref = torch.distributions.kl_divergence(torch.distributions.Normal(mu, sigma),
                                                torch.distributions.Normal(0.0, 1.0))
        assert k["closed"] == pytest.approx(float(ref), rel=1e-6, abs=1e-7)  # torch: float32
        assert abs(k["mc"] - k["closed"]) < 5 * k["mc_se"] + 1e-12
        dx = k["x"][1] - k["x"][0]
        if sigma <= 1:  # the grid [−6, 6] holds all the mass
            assert k["q"].sum() * dx == pytest.approx(1.0, abs=1e-3)


def test_estimator_comparison_exact_gradients():
    for name in vae_lab.ESTIMATOR_FUNCTIONS:
        e = vae_lab.estimator_comparison(0.7, 0.8, name, n_samples=20, n=3000, seed=4)
        for key in ("score_function", "reparameterized"):
            v = e[key]
            assert v.mean() == pytest.approx(e["exact"], abs=5 * v.std() / np.sqrt(len(v)))
    e = vae_lab.estimator_comparison(2.0, 1.0, "exp z", n_samples=1, n=2000, seed=0)
    assert e["exact"] == pytest.approx(np.exp(2.5))
    assert e["score_var"] > 3 * e["reparam_var"]
    with pytest.raises(ValueError, match="f_name"):
        vae_lab.estimator_comparison(f_name="tan z")


def test_train_vae_2d_budget_and_collapse():
    X = vae_lab.toy_data_2d("moons", 1500, seed=0)
    low = vae_lab.train_vae_2d(X, beta=0.1, latent_dim=3, steps=400, n_eval=300)
    high = vae_lab.train_vae_2d(X, beta=100.0, latent_dim=3, steps=400, n_eval=300)
    for r in (low, high):
        assert r["kl"] == pytest.approx(r["kl_per_dim"].sum(), rel=1e-5)
        assert r["elbo"] == pytest.approx(-(r["recon"] + r["kl"]), rel=1e-5)
        assert r["reconstructions"].shape == (300, 2) and r["samples"].shape == (300, 2)
    assert (low["kl_per_dim"] > 0.05).sum() >= 1
    assert high["kl_per_dim"].max() < 0.05  # collapsed
    assert high["recon"] > low["recon"]
    # the recon term is the Gaussian negative log-likelihood of the model's loss on held-out rows
    engine.manual_seed(1)
    again = low["model"].loss(low["held_out"], beta=0.1)
    assert again.recon == pytest.approx(low["recon"], rel=1e-6)


def test_beta_sweep_switches_dimensions_off():
    X = vae_lab.toy_data_2d("8 Gaussians", 1200, seed=0)
    ticks = []
    s = vae_lab.beta_sweep(X, betas=(0.1, 100.0), latent_dim=2, steps=300, on_step=ticks.append)
    assert ticks[-1] == 600 and len(ticks) == 600
    assert s["active"][0] >= 1 and s["active"][1] == 0
    np.testing.assert_allclose(s["kl"], s["kl_per_dim"].sum(1))


def test_image_vae_latents_grid_and_decoder():
    imgs, labels = engine.data.make_shapes(200, 16, seed=0)
    r = vae_lab.train_image_vae(imgs, labels, steps=30, n_eval=40)
    assert r["latents"].shape == (40, 2) and list(r["labels"]) == list(labels[-40:])
    g = vae_lab.latent_grid(r["model"], n=3, limit=2.0)
    assert g["images"].shape == (3, 3, 16, 16)
    # top-left tile is z = (−2, 2): decode it directly
    direct = vae_lab.decode_point(r["model"], -2.0, 2.0)
    np.testing.assert_allclose(g["images"][0, 0], direct, rtol=1e-5, atol=1e-6)  # float32 batch
    with engine.no_grad():
        logits = r["model"].decode(np.array([[-2.0, 2.0]], np.float32)).data[0, 0]
    np.testing.assert_allclose(direct, 1 / (1 + np.exp(-logits)), rtol=1e-5)


def test_toy_data_2d_labels_and_vae_latents():
    X, y = vae_lab.toy_data_2d("moons", 600, seed=2, return_labels=True)
    X0, y0 = engine.data.make_moons(600, noise=0.05, seed=2)
    np.testing.assert_array_equal(y, y0)
    X0 = X0.astype(np.float64)
    np.testing.assert_allclose(X, (X0 - X0.mean(0)) / X0.std(0), rtol=1e-12)
    r = vae_lab.train_vae_2d(X, latent_dim=2, steps=50, n_eval=100)
    with engine.no_grad():
        mu = r["model"].encode(X[-100:].astype(np.float32))[0].data
    np.testing.assert_allclose(r["latents"], mu, rtol=1e-5, atol=1e-6)  # float32 BLAS

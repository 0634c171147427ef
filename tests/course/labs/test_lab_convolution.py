"""The notebook labs of 05-08 (engine.course.labs: convolution, attention, diffusion, vae).

Each value a notebook shows is checked here against an independent computation: brute-force
loops over placements and patches, NumPy written out by hand, closed forms, or PyTorch.
"""

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
@pytest.mark.parametrize(
    "k, s, p, d", [(1, 1, 0, 1), (3, 1, 1, 1), (3, 2, 0, 1), (4, 3, 2, 1), (3, 2, 1, 2), (5, 1, 0, 3), (2, 4, 3, 1)]
)
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
    taps = data.taps
    assert taps.shape == (out, k)
    for o in range(out):
        assert list(taps[o]) == [o * s + j * d for j in range(k)]
    kind = data.kind.reshape(out, w + 2 * p)
    for o in range(out):
        for x in range(w + 2 * p):
            pad = x < p or x >= p + w
            tap = x in taps[o]
            expected = ("tap on padding" if pad else "tap") if tap else ("padding" if pad else "input")
            assert kind[o, x] == expected
    empty = conv_lab.conv_placements(2, 5)
    assert not empty.report.ok and len(empty.kind) == 0


def test_conv_grid_lights_the_selected_window():
    g = conv_lab.conv_grid(5, 3, 2, 1, 1, out_row=1, out_col=2)
    n = 7
    kind = g.kind.reshape(n, n)
    lit = np.argwhere(np.isin(kind, ["tap", "tap on padding"]))
    expected = [(r, c) for r in (2, 3, 4) for c in (4, 5, 6)]
    assert sorted(map(tuple, lit)) == expected
    assert kind[2, 6] == "tap on padding" and kind[0, 0] == "padding"
    assert g.selected.sum() == 1
    # out-of-range selections are clipped into the output grid
    assert conv_lab.conv_grid(5, 3, 2, 1, 1, 99, -4).out_row == 2


def test_conv_transpose_report_and_coverage(torch):
    for w, k, s, p, a, d in [
        (3, 3, 2, 1, 1, 1),
        (4, 4, 2, 1, 0, 1),
        (2, 3, 3, 0, 2, 1),
        (5, 3, 1, 2, 0, 2),
        (3, 2, 2, 0, 1, 1),
    ]:
        r = conv_lab.conv_transpose_report(w, k, s, p, a, d)
        x = torch.ones(1, 1, w, dtype=torch.float64)
        weight = torch.ones(1, 1, k, dtype=torch.float64)
        y = torch.nn.functional.conv_transpose1d(x, weight, stride=s, padding=p, output_padding=a, dilation=d)
        assert r.ok and r.output_size == y.shape[-1]
        cov = conv_lab.conv_transpose_placements(w, k, s, p, a, d).coverage
        np.testing.assert_array_equal(cov, y[0, 0].numpy())


@pytest.mark.parametrize("w, k, s, p, a, d", [(3, 3, 2, 1, 1, 1), (4, 2, 3, 0, 0, 1), (2, 3, 1, 2, 0, 2)])
def test_transpose_cells_by_a_loop_over_stamps(w, k, s, p, a, d):
    placed = conv_lab.conv_transpose_placements(w, k, s, p, a, d)
    out = placed.report.output_size
    cells = conv_lab.transpose_cells(placed)
    assert cells["kind"].shape == (w, (w - 1) * s + (k - 1) * d + 1)
    for i in range(w):
        for u in range(cells["kind"].shape[1]):
            stamped = u - i * s >= 0 and (u - i * s) % d == 0 and (u - i * s) // d < k
            kept = stamped and 0 <= u - p < out
            assert cells["kind"][i, u] == ("kept" if kept else "cropped" if stamped else "empty")
            assert cells["text"][i, u] == (str(u - p) if kept else "×" if stamped else "")


def test_conv_transpose_report_impossible():
    r = conv_lab.conv_transpose_report(3, 3, 2, 0, output_padding=2)
    assert not r.ok and "output_padding" in r.message
    r = conv_lab.conv_transpose_report(1, 1, 1, 3)
    assert not r.ok and "< 1" in r.message
    assert len(conv_lab.conv_transpose_placements(1, 1, 1, 3).coverage) == 0


def test_round_trip_output_padding():
    for w, k, s, p in [(7, 3, 2, 1), (8, 3, 2, 1), (28, 5, 3, 2), (10, 4, 4, 0)]:
        o = shapes.conv_output_size(w, k, s, p)
        a = conv_lab.round_trip_output_padding(w, k, s, p)
        assert shapes.conv_transpose_output_size(o, k, s, p, a) == w


def test_receptive_field_table_by_brute_force():
    # three 3x3 stride-1 convolutions see 7x7 (the VGG argument); fmap from conv_output_size
    rows = conv_lab.receptive_field_table(conv_lab.uniform_stack(3, 3, 1), input_size=10)
    assert [r.rf for r in rows] == [3, 5, 7]
    assert [r.fmap for r in rows] == [10, 10, 10]
    # brute force: which input pixels can reach output pixel 0 of a stack? Propagate intervals.
    layers = [(5, 2, 2, 1), (3, 2, 1, 2), (3, 1, 0, 1)]
    lo, hi = 0, 0
    for k, s, p, d in reversed(layers):
        lo, hi = lo * s - p, hi * s - p + d * (k - 1)
    rows = conv_lab.receptive_field_table(layers, input_size=40)
    assert rows[-1].rf == hi - lo + 1 and rows[-1].start == -lo
    size = 40
    for row, (k, s, p, d) in zip(rows, layers):
        size = _brute_output_size(size, k, s, p, d)
        assert row.fmap == size


def test_receptive_field_table_collapse_and_presets():
    rows = conv_lab.receptive_field_table(conv_lab.uniform_stack(6, 3, 2, 1, 0), input_size=8)
    fmaps = [r.fmap for r in rows]
    assert fmaps[:4] == [4, 2, 1, 1] or fmaps[:3] == [4, 2, 1]
    rows = conv_lab.receptive_field_table(conv_lab.uniform_stack(4, 5, 1), input_size=3)
    assert rows[0].fmap == 3  # 'same' padding keeps it
    rows = conv_lab.receptive_field_table([(7, 1, 0)], input_size=3)
    assert rows[0].fmap is None and "cannot" in rows[0].note
    vgg = conv_lab.receptive_field_table(shapes.RECEPTIVE_FIELD_PRESETS["VGG-16"], 224)
    assert vgg[-1].rf == 212 and vgg[-1].fmap == 7 and vgg[-1].jump == 32


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


@pytest.mark.parametrize(
    "c, h, k, s, p, d", [(1, 5, 3, 1, 1, 1), (2, 6, 3, 2, 0, 1), (1, 7, 2, 3, 2, 1), (2, 7, 3, 1, 1, 2)]
)
def test_im2col_view_row_is_the_naive_patch(c, h, k, s, p, d):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(c, h, h))
    w = rng.normal(size=(3, c, k, k))
    x_pad = np.pad(x, ((0, 0), (p, p), (p, p)))
    out = _brute_output_size(h, k, s, p, d)
    for row, col in [(0, 0), (out - 1, out - 1), (out // 2, 0)]:
        v = conv_lab.im2col_view(x, w, s, p, d, row, col)
        patch = _naive_patch(x_pad, k, s, d, row, col)
        np.testing.assert_allclose(v.row_values, patch)
        np.testing.assert_allclose(v.rows[row * out + col], patch)
        np.testing.assert_allclose(v.weights, w[0].ravel())
        assert v.value == pytest.approx(float(patch @ w[0].ravel()))
        assert v.patch.sum() == c * k * k
        np.testing.assert_allclose(np.sort(x_pad[v.patch]), np.sort(patch))
        np.testing.assert_allclose(v.output, v.conv2d, atol=1e-9)
        assert v.output[row, col] == pytest.approx(v.value)


def test_im2col_view_against_torch(torch):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 6, 6))
    w = rng.normal(size=(1, 2, 3, 3))
    v = conv_lab.im2col_view(x, w, 2, 1, 1)
    ref = torch.nn.functional.conv2d(torch.tensor(x[None]), torch.tensor(w), stride=2, padding=1)
    np.testing.assert_allclose(v.output, ref[0, 0].numpy(), atol=1e-10)
    cols = torch.nn.functional.unfold(torch.tensor(x[None]), 3, stride=2, padding=1)[0].numpy()
    np.testing.assert_allclose(v.rows, cols.T)


def test_im2col_view_impossible_setting_is_a_message():
    with pytest.raises(ValueError, match="im2col_view: Impossible"):
        conv_lab.im2col_view(np.zeros((1, 3, 3)), np.zeros((1, 1, 5, 5)))


def test_im2col_backward_matches_autograd_and_counts_windows():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 6, 6))
    w = rng.normal(size=(3, 2, 3, 3))
    g = rng.normal(size=(3, 3, 3))
    b = conv_lab.im2col_backward(x, w, g, stride=2, padding=1)
    np.testing.assert_allclose(b.grad_weight, b.autograd_weight, atol=1e-10)
    np.testing.assert_allclose(b.grad_input, b.autograd_input, atol=1e-10)
    # windows per pixel by brute force
    count = np.zeros((8, 8))
    for r in range(3):
        for c in range(3):
            count[2 * r : 2 * r + 3, 2 * c : 2 * c + 3] += 1
    np.testing.assert_array_equal(b.window_count, count[1:7, 1:7])


@pytest.mark.parametrize("c, size, k, s, p, r", [(1, 5, 3, 1, 1, 7), (2, 4, 2, 2, 1, 3)])
def test_im2col_cells_light_the_window_row_and_weights(c, size, k, s, p, r):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 10, size=(c, size, size)).astype(float)
    w = rng.integers(-1, 3, size=(1, c, k, k)).astype(float)
    o = shapes.conv_output_size(size, k, s, p)
    view = conv_lab.im2col_view(x, w, s, p, 1, r // o, r % o)
    cells = conv_lab.im2col_cells(view, p, text_limit=0)
    assert list(cells) == [f"input {ch}" for ch in range(c)] + ["cols", "weights"]
    n = size + 2 * p
    for ch in range(c):
        g = cells[f"input {ch}"]
        # the window of output (r // o, r % o) by hand: rows/cols i·S .. i·S + K − 1 of the padded grid
        lit = np.zeros((n, n), bool)
        lit[(r // o) * s : (r // o) * s + k, (r % o) * s : (r % o) * s + k] = True
        border = np.ones((n, n), bool)
        border[p : p + size, p : p + size] = False
        expected = np.where(lit, np.where(border, "tap on padding", "tap"), np.where(border, "padding", "input"))
        np.testing.assert_array_equal(g["kind"], expected)
        assert list(g["text"][g["text"] != ""]) == [f"{v:g}" for v in view.x_pad[ch][lit]]  # lit only
    cols = cells["cols"]
    assert cols["kind"].shape == view.rows.shape
    assert np.flatnonzero((cols["kind"] == "selected").all(axis=1)).tolist() == [view.row]
    assert list(cols["text"][view.row]) == [f"{v:g}" for v in view.row_values]
    assert (np.delete(cols["text"], view.row, axis=0) == "").all()
    assert list(cells["weights"]["text"][0]) == [f"{v:g}" for v in w[0].ravel()]
    assert (conv_lab.im2col_cells(view, p)["cols"]["text"] != "").all()  # small: every value written


# ----------------------------------------------------------------------------- filters
def _naive_correlate(image, kernel):
    k = kernel.shape[0]
    padded = np.pad(image, k // 2)
    out = np.zeros_like(image)
    for i in range(k):
        for j in range(k):
            out += kernel[i, j] * padded[i : i + image.shape[0], j : j + image.shape[1]]
    return out


@pytest.mark.parametrize("name", sorted(conv_lab.CLASSIC_FILTERS))
def test_apply_filter_is_cross_correlation(name):
    img = conv_lab.sample_image(24, noise=0.05, seed=3)
    kernel = conv_lab.CLASSIC_FILTERS[name]
    np.testing.assert_allclose(conv_lab.apply_filter(img, name), _naive_correlate(img, kernel), atol=1e-12)


def test_filters_sum_and_special_cases():
    img = conv_lab.sample_image(32)
    np.testing.assert_array_equal(conv_lab.apply_filter(img, "identity"), img)
    for name in ("box blur", "Gaussian blur", "sharpen", "identity"):
        assert conv_lab.CLASSIC_FILTERS[name].sum() == pytest.approx(1.0)
    for name in ("vertical edges (Sobel x)", "horizontal edges (Sobel y)", "Laplacian"):
        assert conv_lab.CLASSIC_FILTERS[name].sum() == pytest.approx(0.0)
    gx = _naive_correlate(img, conv_lab.CLASSIC_FILTERS["vertical edges (Sobel x)"])
    gy = _naive_correlate(img, conv_lab.CLASSIC_FILTERS["horizontal edges (Sobel y)"])
    np.testing.assert_allclose(conv_lab.apply_filter(img, "edge magnitude"), np.hypot(gx, gy), atol=1e-12)
    twice = conv_lab.apply_filter(img, "box blur", repeat=2)
    k = conv_lab.CLASSIC_FILTERS["box blur"]
    np.testing.assert_allclose(twice, _naive_correlate(_naive_correlate(img, k), k), atol=1e-12)
    strided = conv_lab.apply_filter(img, "sharpen", stride=3)
    np.testing.assert_allclose(
        strided, _naive_correlate(img, conv_lab.CLASSIC_FILTERS["sharpen"])[::3, ::3], atol=1e-12
    )
    with pytest.raises(ValueError, match="unknown filter"):
        conv_lab.apply_filter(img, "blurry")


def test_sample_image():
    a = conv_lab.sample_image(40, noise=0.2, seed=1)
    assert a.shape == (40, 40) and a.min() >= 0 and a.max() <= 1
    np.testing.assert_array_equal(a, conv_lab.sample_image(40, noise=0.2, seed=1))
    with pytest.raises(ValueError, match="size"):
        conv_lab.sample_image(4)


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


def test_compose_kernels_is_the_pair_of_cross_correlations():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(3, 3)), rng.normal(size=(2, 4))
    x = rng.normal(size=(12, 13))
    c = conv_lab.compose_kernels(a, b)
    assert c.shape == (4, 6)
    np.testing.assert_allclose(_naive_valid(_naive_valid(x, a), b), _naive_valid(x, c), atol=1e-12)
    with pytest.raises(ValueError, match="compose_kernels"):
        conv_lab.compose_kernels(np.ones(3), a)


def _naive_valid(x, k):
    out = np.zeros((x.shape[0] - k.shape[0] + 1, x.shape[1] - k.shape[1] + 1))
    for i, j in np.ndindex(out.shape):
        out[i, j] = (x[i : i + k.shape[0], j : j + k.shape[1]] * k).sum()
    return out


def test_two_convolutions_gaps():
    img = conv_lab.sample_image(24)
    t = conv_lab.two_convolutions(img, "vertical edges (Sobel x)", "box blur")
    hidden = _naive_valid(img, conv_lab.CLASSIC_FILTERS["vertical edges (Sobel x)"])
    relu = _naive_valid(np.maximum(hidden, 0), conv_lab.CLASSIC_FILTERS["box blur"])
    once = _naive_valid(img, t.composed)
    assert t.gap_linear < 1e-12
    assert t.gap_relu == pytest.approx(np.abs(relu - once).max())
    assert t.relu_changed == pytest.approx((hidden < 0).mean())
    # a blur first never goes negative: then the ReLU changes nothing and the pair still collapses
    assert conv_lab.two_convolutions(img, "box blur", "Laplacian").gap_relu < 1e-12


def test_shift_equivariance_against_torch(torch):
    img = engine.data.load_digits("test")[0][5]
    for k, stride, pool in [(0, 1, 1), (3, 1, 1), (3, 2, 1), (2, 2, 1), (4, 2, 2)]:
        e = conv_lab.shift_equivariance(img, k, stride, pool, seed=1)
        kernel = torch.tensor(np.random.default_rng(1).standard_normal((1, 1, 3, 3)))
        for x, shown in ((e.image, e.conv_map), (e.shifted, e.conv_map_shifted)):
            y = torch.nn.functional.conv2d(torch.tensor(x)[None, None], kernel, padding=1, stride=stride)
            if pool > 1:
                y = torch.nn.functional.max_pool2d(y, pool)
            np.testing.assert_allclose(shown, y[0, 0].numpy(), atol=1e-10)
        np.testing.assert_array_equal(e.shifted[:, k:], e.image[:, : 24 - k])
    with pytest.raises(ValueError, match="shift must be in 0..6"):
        conv_lab.shift_equivariance(img, 7)
    with pytest.raises(ValueError, match="8x8"):
        conv_lab.shift_equivariance(np.zeros((4, 4)))


class _TinyCNN(engine.nn.Module):
    """A stand-in for the page's CNN (the lab evaluates whatever model it is given)."""

    def __init__(self):
        super().__init__()
        self.conv1 = engine.nn.Conv2d(1, 2, 3, padding=1)
        self.fc = engine.nn.Linear(2 * 64, 10)

    def first_layer(self, x):
        return engine.functional.relu(self.conv1(x))

    def forward(self, x):
        return self.fc(self.first_layer(x).flatten(1))


def test_confusion_counts_argmax_predictions():
    X, y = engine.data.load_digits("test", channel_dim=True)
    with engine.random.fork_rng(1):
        model = _TinyCNN()
    c = conv_lab.confusion(model, X[:50], y[:50])
    with engine.no_grad():
        pred = model(engine.Tensor(X[:50])).data.argmax(1)
    brute = np.zeros((10, 10), int)
    for t, p in zip(y[:50], pred):
        brute[t, p] += 1
    np.testing.assert_array_equal(c, brute)


def test_heldout_predictions_are_the_models_on_the_heldout_digits_remembered_per_model():
    X, _ = engine.data.load_digits("test", channel_dim=True)
    with engine.random.fork_rng(1):
        model, other = _TinyCNN(), _TinyCNN()
    found = conv_lab.heldout_predictions(model)
    np.testing.assert_array_equal(found, conv_lab.predictions(model, X))
    assert conv_lab.heldout_predictions(model) is found  # the page's re-runs do not run the model again
    assert not np.array_equal(conv_lab.heldout_predictions(other), found)


def test_separable_check_against_torch(torch):
    s = conv_lab.separable_check(4, 6, 5, seed=2)
    assert s.gap < 1e-5 and s.separable_params == 4 * 25 + 6 * 4 and s.standard_params == 6 * 4 * 25
    with pytest.raises(ValueError, match="must divide"):
        conv_lab.conv_costs(c_in=6, c_out=8, groups=4)


def test_feature_maps_and_filters_are_the_models():
    X, y = engine.data.load_digits("test", channel_dim=True)
    with engine.random.fork_rng(2):
        model = _TinyCNN()
    maps = conv_lab.feature_maps(model, X[0])
    with engine.no_grad():
        logits = model(engine.Tensor(X[:1])).data[0]
    ref = engine.functional.conv2d(X[:1], model.conv1.weight.data, model.conv1.bias.data, padding=1).data[0]
    np.testing.assert_allclose(maps["relu1"], np.maximum(ref, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(maps["logits"], logits, rtol=1e-5, atol=1e-6)
    assert maps["probs"].sum() == pytest.approx(1.0) and np.argmax(maps["probs"]) == np.argmax(logits)
    np.testing.assert_array_equal(conv_lab.learned_filters(model), model.conv1.weight.data[:, 0])
    assert conv_lab.cnn_accuracy(model, X, y) == pytest.approx(float((logits_all(model, X).argmax(1) == y).mean()))


def logits_all(model, X):
    with engine.no_grad():
        return model(engine.Tensor(X)).data


def test_shipped_cnn_says_in_one_line_when_the_code_differs():
    """The checkpoint is declared as made by the notebook's lesson cells; code that is not theirs
    gets the reason instead of a model (the page's own code: tests/notebooks/test_05_convolution.py)."""
    from engine.course import checkpoints

    declared = conv_lab.CHECKPOINTS["convolution_cnn"]
    assert isinstance(declared, checkpoints.FromNotebook)
    assert (declared.notebook, declared.function, declared.code) == (
        "05_convolution",
        "default_cnn_state",
        ("CNN", "train_cnn", "train_digits_cnn"),
    )
    model, reason = conv_lab.shipped_cnn(_TinyCNN, test_feature_maps_and_filters_are_the_models)
    assert model is None and reason.startswith("the shipped model was trained with other code")
    assert "\n" not in reason


def test_block_gradients_through_identity_and_halving_blocks():
    """A block that passes its input on keeps the gradient's norm; one that halves it halves it
    at every block."""
    from engine import nn

    class Passing(nn.Module):
        def __init__(self, channels, skip):
            super().__init__()
            self.skip = skip

        def forward(self, x):
            return x if self.skip else 0.5 * x

    r = conv_lab.block_gradients(Passing, depth=3, seeds=(0, 1))
    np.testing.assert_allclose(r.ratio["residual"], 1, rtol=1e-6)
    np.testing.assert_allclose(r.ratio["plain"], [[0.5, 0.25, 0.125]] * 2, rtol=1e-6)
    np.testing.assert_array_equal(r.blocks, [1, 2, 3])

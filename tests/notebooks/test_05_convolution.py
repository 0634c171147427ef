"""Notebook 05_convolution: the values it shows are the engine's, and its claims hold on them."""

import math

import numpy as np
import pytest
from notebook_driver import assert_no_error_outputs, load_app, load_module, notebook_text, output_text, run_app

import engine
from engine import shapes
from engine.course.labs import convolution as conv_lab

# ============================================================================= 05 convolution
NB05 = "notebooks/05_convolution.py"


@pytest.mark.parametrize(
    "w, k, p, s, d", [(7, 3, 1, 2, 1), (16, 7, 0, 1, 3), (1, 1, 0, 4, 1), (2, 7, 0, 1, 3), (16, 3, 4, 4, 2)]
)
def test_05_calculator_agrees_with_engine_shapes(w, k, p, s, d):
    outputs, defs = run_app(load_app(NB05), size_w=w, kernel_k=k, padding_p=p, stride_s=s, dilation_d=d)
    assert_no_error_outputs(outputs)
    report = defs["conv_setting"]
    k_eff = shapes.effective_kernel_size(k, d)
    assert report.effective_kernel == k_eff
    if k_eff > w + 2 * p:
        assert not report.ok and "Impossible" in output_text(outputs)
        with pytest.raises(ValueError):
            shapes.conv_output_size(w, k, s, p, d)
    else:
        out = shapes.conv_output_size(w, k, s, p, d)
        assert report.output_size == out
        assert f"= {out}" in output_text(outputs)


def test_05_transposed_and_params_agree_with_torch_shapes(torch):
    outputs, defs = run_app(
        load_app(NB05),
        transpose_w=4,
        kernel_k=4,
        stride_s=2,
        padding_p=1,
        output_padding=1,
        channels_in=64,
        channels_out=1,
    )
    assert_no_error_outputs(outputs)
    y = torch.nn.functional.conv_transpose1d(
        torch.ones(1, 1, 4), torch.ones(1, 1, 4), stride=2, padding=1, output_padding=1
    )
    assert defs["transposed"].report.output_size == y.shape[-1]
    np.testing.assert_array_equal(defs["transposed"].coverage, y[0, 0].numpy())
    conv = torch.nn.Conv2d(64, 1, 4)
    assert defs["conv_setting"].params == sum(p.numel() for p in conv.parameters())


@pytest.mark.parametrize("preset", ["AlexNet", "VGG-16", "ResNet-50"])
def test_05_receptive_field_presets(preset):
    outputs, defs = run_app(load_app(NB05), rf_preset=preset)
    assert_no_error_outputs(outputs)
    expected = shapes.receptive_field(shapes.RECEPTIVE_FIELD_PRESETS[preset])[-1].size
    assert defs["rf_final"] == expected
    assert str(expected) in output_text(outputs)


def test_05_receptive_field_custom_collapse_is_a_warning():
    outputs, defs = run_app(
        load_app(NB05), rf_preset="custom stack", rf_layers=12, rf_stride=3, rf_kernel=7, rf_input=8
    )
    assert_no_error_outputs(outputs)
    assert "cannot go on" in output_text(outputs)


def test_05_exercises_graded_by_the_engine():
    app = load_app(NB05)
    _, defs = run_app(app)
    truths = {  # (the section's exercises, the exercise): its truth
        ("shapes", "size"): shapes.conv_output_size(28, 5, 2, 0),
        ("shapes", "params"): shapes.conv2d_params(3, 16, 5),
        ("field", "rf"): shapes.receptive_field([(3, 2, 1), (3, 2, 1), (3, 1, 1)])[-1].size,
    }
    assert tuple(defs[f"exercises_{section}"][n].truth for section, n in truths) == tuple(truths.values())
    assert tuple(truths.values()) == (12, 1216, 15)
    for (section, name), truth in truths.items():
        text = output_text(run_app(app, **{f"answers_{section}": {name: str(truth)}})[0])
        assert f"Right: {truth}" in text
        text = output_text(run_app(app, **{f"answers_{section}": {name: str(truth + 1)}})[0])
        assert "Not quite" in text and "Hint" in text


@pytest.mark.parametrize("size, k, s, p, r", [(5, 3, 1, 1, 7), (8, 4, 3, 2, 63), (3, 4, 1, 0, 0), (6, 2, 2, 0, 5)])
def test_05_im2col_view_agrees_with_conv2d(size, k, s, p, r):
    outputs, defs = run_app(load_app(NB05), im_size=size, im_kernel=k, im_stride=s, im_padding=p, im_pixel=r)
    assert_no_error_outputs(outputs)
    view = defs["view"]
    report = conv_lab.conv_report(size, k, s, p)
    assert (view is not None) == report.ok
    if not report.ok:
        assert "cannot be computed" in output_text(outputs) and "Impossible" in output_text(outputs)
        return
    ref = engine.functional.conv2d(defs["im_x"][None], defs["im_w"], stride=s, padding=p).data[0, 0]
    np.testing.assert_allclose(view.output, ref)
    o = report.output_size
    assert view.row == min(r, o * o - 1)
    assert view.value == pytest.approx(ref[view.out_row, view.out_col])
    assert f"**{view.value:g}**" not in output_text(outputs)  # rendered bold, not raw markdown
    assert f"{view.value:g}" in output_text(outputs)
    assert defs["backward_gap"] < 1e-9
    # the backward pass draws the same x and W as the figure above it
    g = np.random.default_rng(6).normal(size=(1, o, o))
    by_hand = conv_lab.im2col_backward(defs["im_x"], defs["im_w"], g, s, p)
    np.testing.assert_array_equal(defs["backward"].grad_input, by_hand.grad_input)
    np.testing.assert_array_equal(defs["backward"].grad_weight, by_hand.grad_weight)


def test_05_output_pixel_beyond_the_output_shows_the_last():
    # W = 5, K = 3, no padding, stride 2: a 2×2 output, while the sliders reach 23
    outputs, defs = run_app(
        load_app(NB05), size_w=5, kernel_k=3, padding_p=0, stride_s=2, out_pixel_row=23, out_pixel_col=1
    )
    assert_no_error_outputs(outputs)
    assert (defs["grid"].out_row, defs["grid"].out_col) == (1, 1)
    assert "the taps of output (1, 1) (the output has 2 rows and columns: the last is shown)" in output_text(outputs)
    outputs, defs = run_app(load_app(NB05), out_pixel_row=1, out_pixel_col=2)
    assert (defs["grid"].out_row, defs["grid"].out_col) == (1, 2) and "the last is shown" not in output_text(outputs)


def test_05_filters_agree_with_engine():
    for name in ["Gaussian blur", "edge magnitude", "Laplacian"]:
        outputs, defs = run_app(load_app(NB05), filter_name=name, filter_stride=2, filter_repeat=2)
        assert_no_error_outputs(outputs)
        np.testing.assert_allclose(defs["filtered"], conv_lab.apply_filter(conv_lab.sample_image(48), name, 2, 2))
    # the noise reaches each figure that draws the image: the filter, your kernel, the composition
    outputs, defs = run_app(load_app(NB05), filter_noise=0.3)
    noisy = conv_lab.sample_image(48, noise=0.3, seed=0)
    np.testing.assert_allclose(defs["filtered"], conv_lab.apply_filter(noisy, "vertical edges (Sobel x)", 1, 1))
    own = defs["own_kernel"]
    np.testing.assert_allclose(
        defs["own_filtered"], defs["conv2d_loops"](noisy[None], own[None, None], padding=own.shape[0] // 2)[0]
    )
    ref = conv_lab.two_convolutions(noisy, "vertical edges (Sobel x)", "box blur")
    assert defs["composition"].gap_relu == ref.gap_relu


def test_05_cnn_on_open_is_the_shipped_default_and_the_button_retrains():
    """Issue 16: the page opens on the CNN of the shipped checkpoint (the default settings, no
    training), says where it comes from, and the button retrains with the learner's settings."""
    app = load_app(NB05)
    outputs, defs = run_app(app)
    text = output_text(outputs)
    nb = load_module(NB05)
    default, reason = conv_lab.shipped_cnn(nb.CNN, nb.train_cnn, nb.train_digits_cnn)
    assert reason == "" and default.shipped and isinstance(default.model, nb.CNN)
    assert default.settings == conv_lab.CNN_DEFAULTS and defs["trained_cnn"].shipped
    # the page's own lesson objects get the same (cached) model on every run
    assert conv_lab.shipped_cnn(defs["CNN"], defs["train_cnn"], defs["train_digits_cnn"])[0] is defs["trained_cnn"]
    for name, value in default.model.state_dict().items():
        np.testing.assert_array_equal(value.data, defs["cnn"].state_dict()[name].data)
    assert [defs[n].value for n in ("cnn_filters", "cnn_epochs")] == [12, 12]
    assert (defs["cnn_kernel"].value, defs["cnn_lr"].value) == (3, 3e-3)  # the controls' defaults
    assert "trained with the default settings" in text and "ships with the course" in text
    assert "Press" not in text
    assert len(defs["cnn_history"].loss) == 12
    outputs, defs = run_app(app, cnn_train=True, cnn_epochs=2, cnn_filters=2, cnn_image=359)
    assert_no_error_outputs(outputs)
    history = defs["cnn_history"]
    assert len(history.loss) == 2 and defs["trained_cnn"] is not default
    assert defs["trained_cnn"].settings == {"n_filters": 2, "kernel_size": 3, "epochs": 2, "lr": 3e-3}
    assert defs["cnn"].conv1.weight.shape == (2, 1, 3, 3) and not defs["trained_cnn"].shipped
    X, y = defs["digits_heldout"]
    assert len(X) == 360 and len(defs["digits_train"][0]) == 1437
    assert history.test_acc[-1] == pytest.approx(conv_lab.cnn_accuracy(defs["cnn"], X, y))
    text = output_text(outputs)
    assert f"{history.test_acc[-1]:.1%}" in text and "trained just now with your settings" in text
    # issue 14: 'edge and blob detectors appear' was asserted, never measured: the claim is gone
    assert "blob" not in text


def test_05_training_with_a_huge_learning_rate_says_so():
    outputs, defs = run_app(load_app(NB05), cnn_train=True, cnn_epochs=1, cnn_lr=1e-1)
    assert_no_error_outputs(outputs)
    assert math.isfinite(defs["cnn_history"].loss[0]) or "non-finite" in output_text(outputs)


def test_05_two_convolutions_collapse_only_without_a_nonlinearity():
    """Issue 14: 'two convolutions in a row are one convolution' holds only with nothing between
    them. The notebook shows both gaps; the composed kernel is checked against a brute-force loop."""
    text, defs = notebook_text("05_convolution")
    c = defs["composition"]
    a = conv_lab.CLASSIC_FILTERS["vertical edges (Sobel x)"]
    b = conv_lab.CLASSIC_FILTERS["box blur"]
    brute = np.zeros((5, 5))
    for u in np.ndindex(3, 3):
        for v in np.ndindex(3, 3):
            brute[u[0] + v[0], u[1] + v[1]] += a[u] * b[v]
    np.testing.assert_allclose(c.composed, brute)
    assert c.gap_linear < 1e-12 and c.gap_relu > 0.1
    assert f"{c.gap_linear:.1e}" in text and f"{c.gap_relu:.3g}" in text
    assert "what a CNN's stacked layers exploit" not in text
    assert "Right: 7" in notebook_text("05_convolution", answers_kernels={"compose": "7"})[0]


def test_05_sobel_and_im2col_words_match_the_formulas():
    """Issue 14: Sobel x smooths down each column (across rows), and im2col has one column per
    window (cols ∈ R^{C·K²×L}) in the text and the slider label alike."""
    text, defs = notebook_text("05_convolution")
    gx = conv_lab.CLASSIC_FILTERS["vertical edges (Sobel x)"]
    np.testing.assert_array_equal(gx, np.outer([1, 2, 1], [-1, 0, 1]))  # smoothing varies by row
    assert "smoothed along rows" not in text and "one row per window" not in text
    assert "output pixel r (column r of cols)" in text
    assert defs["view"].rows.shape[1] == defs["im_w"][0].size  # colsᵀ drawn: one row per window


@pytest.mark.parametrize("k, stride, pool", [(2, 1, 1), (3, 2, 1), (4, 2, 1), (5, 1, 2), (6, 1, 2), (4, 2, 2)])
def test_05_translation_equivariance_claims_hold_on_the_shown_values(k, stride, pool):
    """Issue 14's figure: the equivariance error of conv vs dense. Each sentence of the section
    is checked on what the notebook shows: exact for stride·pool | k, broken otherwise; dense
    never; the global average of a stride-1 map does not move."""
    text, defs = notebook_text("05_convolution", equi_shift=k, equi_stride=stride, equi_pool=pool)
    e = defs["equivariance"]
    assert f"{e.conv_error:.2g}" in text and f"{e.dense_error:.2g}" in text
    assert e.dense_error > 0.5
    if k % (stride * pool) == 0:
        assert e.conv_error < 1e-12 and e.out_shift == k // (stride * pool)
    else:
        assert e.conv_error > 0.1
    if stride == pool == 1:
        assert e.conv_pooled < 1e-12
    # the conv map by a loop over windows, independent of the engine
    padded = np.pad(e.shifted, 1)
    kernel = np.random.default_rng(0).standard_normal((1, 1, 3, 3))[0, 0]
    full = np.array([[(padded[i : i + 3, j : j + 3] * kernel).sum() for j in range(24)] for i in range(24)])
    full = full[::stride, ::stride]
    if pool > 1:
        n = full.shape[0] // pool
        full = full[: n * pool, : n * pool].reshape(n, pool, n, pool).max(axis=(1, 3))
    np.testing.assert_allclose(e.conv_map_shifted, full, atol=1e-12)


def test_05_equivariance_exercise_is_the_measured_shift():
    text, defs = notebook_text("05_convolution", answer_equivariance="1")
    assert defs["exercise_equivariance"].truth == 1 and "Right: 1" in text


def test_05_cnn_reads_the_real_digits():
    """Issue 15: the default CNN (shown on open) reaches >= 97% on the 360 held-out UCI digits;
    the confusion matrix shown is engine.metrics.confusion_matrix of its predictions, and its
    diagonal is the accuracy shown."""
    text, defs = notebook_text("05_convolution")
    acc = defs["cnn_history"].test_acc[-1]
    assert acc >= 0.97, acc
    X, y = defs["digits_heldout"]
    with engine.no_grad():
        pred = defs["cnn"](engine.Tensor(X)).data.argmax(1)
    np.testing.assert_array_equal(defs["cnn_confusion"], engine.metrics.confusion_matrix(y, pred, num_classes=10))
    assert np.trace(defs["cnn_confusion"]) / 360 == pytest.approx(acc)
    assert f"{acc:.1%}" in text and f"{int(np.trace(defs['cnn_confusion']))} of 360 digits" in text


@pytest.mark.parametrize("cin, cout, k, g", [(64, 128, 3, 4), (512, 512, 7, 32), (1, 1, 1, 1)])
def test_05_cheaper_convolutions_counted(torch, cin, cout, k, g):
    """The table's weights against torch modules; the separable share is exactly 1/C_out + 1/K²."""
    text, defs = notebook_text(
        "05_convolution", cost_cin=cin, cost_cout=cout, cost_kernel=k, cost_groups=g, cost_size=7
    )
    rows = defs["conv_cost_rows"]
    count = lambda *ms: sum(p.numel() for m in ms for p in m.parameters())  # noqa: E731
    assert rows[0].params == count(torch.nn.Conv2d(cin, cout, k))
    assert rows[1].params == count(torch.nn.Conv2d(cin, cout, 1))
    assert rows[2].params == count(torch.nn.Conv2d(cin, cout, k, groups=g))
    assert rows[3].params == count(torch.nn.Conv2d(cin, cin, k, groups=cin), torch.nn.Conv2d(cin, cout, 1))
    assert rows[0].macs == 49 * cout * cin * k * k
    assert rows[3].macs / rows[0].macs == pytest.approx(1 / cout + 1 / k**2)
    for r in rows:
        assert f"{r.params:,}" in text and f"{r.macs / rows[0].macs:.3f}" in text


def test_05_groups_that_do_not_divide_are_a_clear_message():
    text, defs = notebook_text("05_convolution", cost_cin=3, cost_groups=2)
    assert defs["conv_cost_rows"] is None
    assert "cannot be computed" in text and "groups = 2 must divide both C_in = 3" in text


def test_05_separable_pair_is_one_constrained_convolution():
    text, defs = notebook_text("05_convolution", answers_kernels={"separable": "8768"})
    s = defs["separable"]
    assert s.gap < 1e-5 and f"{s.gap:.1e}" in text
    assert (s.separable_params, s.standard_params) == (8 * 9 + 16 * 8, 16 * 8 * 9)
    assert defs["exercises_kernels"]["separable"].truth == 64 * 9 + 128 * 64 and "Right: 8768" in text


@pytest.mark.parametrize("relu", [True, False])
def test_05_effective_receptive_field_claims(relu):
    """Issue 14 (Luo et al. 2016): the input-gradient map of the centre unit, by the engine, next to
    the theoretical field; 'concentrated near the centre' and 'the share std / width falls with
    depth' are checked on the values shown."""
    text, defs = notebook_text("05_convolution", erf_layers=16, erf_relu=relu)
    erf, sweep = defs["erf"], defs["erf_sweep"]
    assert erf.theoretical == shapes.receptive_field([(3, 1, 1)] * 16)[-1].size == 33
    m = erf.grad_map
    centre = m.shape[0] // 2
    outside = np.ones(m.shape, bool)
    outside[centre - 16 : centre + 17, centre - 16 : centre + 17] = False
    assert m[outside].max() == 0.0  # nothing beyond the theoretical field
    assert m.sum() == pytest.approx(1.0)
    inner = m[centre - 8 : centre + 9, centre - 8 : centre + 9].sum()  # half the width: 17 of 33
    assert inner == pytest.approx(erf.central_share) and inner > 0.8
    assert f"{inner:.0%} of the gradient" in text
    assert m[centre, centre + 16] < 1e-3 * m.max()  # fades well before the edge
    # Issue 26: like with like. The std of a field uniform over the 2n + 1 pixels, √(n(n + 1)/3)
    # (the discrete uniform's), against the effective std: the first grows like n, the second like
    # √n (Luo et al.), so their ratio falls with depth while effective / √n stays nearly constant.
    n = np.array([e.layers for e in sweep])
    uniform = np.sqrt(n * (n + 1) / 3)
    offsets = np.arange(-n[0], n[0] + 1)
    assert uniform[0] == pytest.approx(np.sqrt((offsets**2).mean()))
    effective = np.array([e.std for e in sweep])
    shares, per_root = effective / uniform, effective / np.sqrt(n)
    assert all(b < a for a, b in zip(shares, shares[1:])) and np.all(shares < 1)
    assert per_root.max() / per_root.min() < 1.35 < (uniform / np.sqrt(n)).max() / (uniform / np.sqrt(n)).min()
    assert f"{erf.std:.2f}" in text and all(
        f"{u:.2f} {e:.2f} {s:.3f} {r:.2f}" in text for u, e, s, r in zip(uniform, effective, shares, per_root)
    )
    assert f"its ratio to √n stays between {per_root.min():.2f} and {per_root.max():.2f}" in text
    assert_effective_field_sentence(text, erf)


def assert_effective_field_sentence(text, erf):
    """The sentence beside the map, on the map shown: its central square (the one central_share
    sums), the share an even field would put there, and the gradient at the field's edge."""
    n, m = erf.layers, erf.grad_map
    c, side = m.shape[0] // 2, 2 * (n // 2) + 1
    share = m[c - n // 2 : c + n // 2 + 1, c - n // 2 : c + n // 2 + 1].sum()
    even, edge = side**2 / (2 * n + 1) ** 2, m[c, c + n] / m.max()
    assert share == pytest.approx(erf.central_share)
    assert (
        f"The central {side}×{side} square holds {share:.0%} of the gradient, where a field spread evenly "
        f"would put {even:.0%}; at the field's edge, {n} pixel{'s' * (n > 1)} out, the gradient is "
        f"{edge:.2g} of its peak."
    ) in text
    return share, even, edge


@pytest.mark.parametrize("n, relu", [(1, True), (6, True), (6, False)])
def test_05_effective_receptive_field_sentence_at_the_slider_ends(n, relu):
    """Issue 26 (audit item 10): the sentence beside the map at the default n = 6 and the low end
    n = 1 (n = 16 in the test above). With one layer every pixel of the 3×3 field has one path, so
    the map is no more central than an even field, as the prose says; at n = 6 it is concentrated
    and fades towards the edge."""
    text, defs = notebook_text("05_convolution", erf_layers=n, erf_relu=relu)
    share, even, edge = assert_effective_field_sentence(text, defs["erf"])
    if n == 1:
        assert share == pytest.approx(even, abs=0.02) and edge > 0.3
    else:
        assert share > 2 * even and edge < 0.15


def test_05_effective_field_gradient_against_torch(torch):
    """The map is |∂y/∂x| summed over channels: the same gradient from torch, one trial."""
    e = conv_lab.effective_receptive_field(3, relu=True, channels=2, trials=1, seed=5)
    rng = np.random.default_rng(5)
    side, c = 2 * 3 + 9, 2
    x = torch.tensor(rng.standard_normal((1, c, side, side)), requires_grad=True)
    h = x
    for i in range(3):
        w = torch.tensor(rng.standard_normal((c, c, 3, 3)) * np.sqrt(2.0 / (9 * c)))
        h = torch.nn.functional.conv2d(h, w, padding=1)
        if i < 2:
            h = torch.relu(h)
    h[0, :, side // 2, side // 2].sum().backward()
    g = x.grad[0].abs().sum(0).numpy()
    np.testing.assert_allclose(e.grad_map, g / g.sum(), atol=1e-12)


def test_05_erf_exercise():
    text, defs = notebook_text("05_convolution", answers_field={"erf": "17"})
    assert defs["exercises_field"]["erf"].truth == 17 and "Right: 17" in text
    assert f"{defs['erf_sweep'][2].std:.1f} pixels" in text


def test_05_own_kernel_matrix_drives_the_result():
    """Issue 15: the kernel as an editable matrix; the result (the page's conv2d_loops) is the
    engine's conv of the image."""
    k = [[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]]
    text, defs = notebook_text("05_convolution", kernel_edit=k)
    np.testing.assert_allclose(
        defs["own_filtered"], conv_lab.apply_filter(conv_lab.sample_image(48), np.array(k)), atol=1e-12
    )
    assert "answers to change only" in text


def test_05_drawn_digit_is_classified_by_the_trained_cnn():
    """A held-out digit put on the canvas comes back as the same 8×8 and gets the CNN's verdict
    on that digit; an empty canvas is a message."""
    text, defs = notebook_text("05_convolution", draw_start=3)
    X, _ = defs["digits_heldout"]
    np.testing.assert_allclose(defs["drawn_digit"], X[3, 0], atol=1 / 255 + 1e-6)
    p = conv_lab.feature_maps(defs["cnn"], defs["drawn_digit"])["probs"]
    assert f"The CNN reads a {int(np.argmax(p))}" in text
    assert "Its first-layer feature maps after ReLU" in text  # issue 15: the drawing's feature maps
    text, _ = notebook_text("05_convolution", draw_start=-1)
    assert "The canvas is empty" in text


@pytest.mark.parametrize("index", [0, 359])
def test_05_held_out_digit_reading_is_the_cnns(index):
    """The held-out digit's verdict and its six feature maps, on open, are the default CNN's."""
    text, defs = notebook_text("05_convolution", cnn_image=index)
    X, y = defs["digits_heldout"]
    maps = conv_lab.feature_maps(defs["cnn"], X[index])
    with engine.no_grad():
        logits = defs["cnn"](engine.Tensor(X[index : index + 1])).data[0]
    assert int(np.argmax(maps["probs"])) == int(np.argmax(logits))
    assert (
        f"Held-out digit #{index}: true {int(y[index])}, the CNN reads a "
        f"{int(np.argmax(logits))} (probability {maps['probs'].max():.0%})"
    ) in text
    assert all(f"conv1 · {i}" in text for i in range(6)) and "filter 11" in text


def test_05_confusion_cell_shows_the_digits_of_the_cnns_most_frequent_mistake_until_one_is_clicked():
    """Issue 23: the confusion matrix is a control (a click picks a cell); at open it shows the
    largest off-diagonal cell, whose count the text gives, and the chart holds the matrix."""
    text, defs = notebook_text("05_convolution")
    matrix = defs["cnn_confusion"]
    mistakes = matrix - np.diag(np.diag(matrix))
    actual, predicted = np.unravel_index(int(np.argmax(mistakes)), matrix.shape)
    assert f"{matrix[actual, predicted]} held-out {actual}s misread as {predicted}" in text
    chart = defs["confusion_chart"]
    assert chart.selections == {} and chart.test_values == []


# ----------------------------------------------------------------------------- the lesson cells
@pytest.mark.parametrize("stride, padding, dilation", [(1, 0, 1), (2, 1, 1), (3, 2, 2), (1, 1, 3)])
def test_05_conv2d_loops_is_the_engines_conv2d(torch, stride, padding, dilation):
    """The teaching copy against engine.functional.conv2d and torch's, channels and bias included."""
    conv2d_loops = load_module(NB05).conv2d_loops
    rng = np.random.default_rng(stride + padding)
    x, w, b = rng.normal(size=(2, 11, 10)), rng.normal(size=(3, 2, 3, 3)), rng.normal(size=3)
    y = conv2d_loops(x, w, b, stride, padding, dilation)
    np.testing.assert_allclose(
        y,
        engine.functional.conv2d(x[None], w, b, stride=stride, padding=padding, dilation=dilation).data[0],
        atol=1e-12,
    )
    ref = torch.nn.functional.conv2d(
        torch.tensor(x[None]), torch.tensor(w), torch.tensor(b), stride=stride, padding=padding, dilation=dilation
    )[0].numpy()
    np.testing.assert_allclose(y, ref, atol=1e-12)


@pytest.mark.parametrize("k, stride, padding, dilation", [(3, 1, 0, 1), (2, 2, 1, 1), (3, 3, 2, 2)])
def test_05_im2col_is_the_engines_and_draws_section_4(k, stride, padding, dilation):
    """The teaching im2col against engine.ops.conv.im2col; the section's column matrix is the page's."""
    nb = load_module(NB05)
    x = np.random.default_rng(k).normal(size=(2, 9, 8))
    np.testing.assert_array_equal(
        nb.im2col(x, k, stride, padding, dilation), engine.ops.conv.im2col(x, k, stride, padding, dilation)
    )
    _, defs = run_app(load_app(NB05), im2col=lambda *a: nb.im2col(*a) + 1.0)  # an edited im2col
    np.testing.assert_allclose(defs["view"].rows, run_app(load_app(NB05))[1]["view"].rows + 1.0)


def test_05_flipping_the_kernel_in_conv2d_loops_turns_your_kernels_result_over():
    """Section 1's prompt, swapped in through run_app: the gap to F.conv2d grows to the outputs'
    size, and section 5's own-kernel result (Sobel x on open) changes sign."""
    app, nb = load_app(NB05), load_module(NB05)
    outputs, defs = run_app(app)
    assert defs["loops_gap"] < 1e-12 and f"{defs['loops_gap']:.1e}" in output_text(outputs)
    before = defs["own_filtered"]
    np.testing.assert_allclose(
        before, conv_lab.apply_filter(conv_lab.sample_image(48), "vertical edges (Sobel x)"), atol=1e-12
    )

    def conv2d_loops(x, w, b=None, stride=1, padding=0, dilation=1):
        return nb.conv2d_loops(x, w[:, :, ::-1, ::-1], b, stride, padding, dilation)

    outputs, defs = run_app(app, conv2d_loops=conv2d_loops)
    assert_no_error_outputs(outputs)
    assert defs["loops_gap"] > 1.0
    np.testing.assert_allclose(defs["own_filtered"], -before, atol=1e-12)
    assert np.abs(before).max() > 0.5


def test_05_an_edited_cnn_is_not_given_the_shipped_weights_and_trains_with_the_button():
    """Section 7's prompt (tanh in CNN.first_layer), swapped in through run_app: one line says the
    shipped CNN was trained with other code, no traceback; Train the CNN trains the edited class,
    whose first-layer maps go negative where ReLU's never do."""
    app, nb = load_app(NB05), load_module(NB05)

    class CNN(nb.CNN):
        def first_layer(self, x):
            return engine.functional.tanh(self.conv1(x))

    outputs, defs = run_app(app, CNN=CNN)
    assert_no_error_outputs(outputs)
    text = output_text(outputs)
    assert "The shipped model was trained with other code than this page's CNN" in text and "not loaded" in text
    assert defs["trained_cnn"] is None and "ships with the course" not in text
    assert "Train the CNN" in text.split("The shipped model was trained with other code")[0][-400:]  # the button, above
    outputs, defs = run_app(app, CNN=CNN, cnn_train=True, cnn_epochs=1, cnn_filters=2)
    assert_no_error_outputs(outputs)
    assert isinstance(defs["cnn"], CNN) and len(defs["cnn_history"].loss) == 1
    maps = conv_lab.feature_maps(defs["cnn"], defs["digits_heldout"][0][0])["relu1"]
    assert maps.min() < 0
    assert "trained just now with your settings" in output_text(outputs)

    def train_cnn(model, X, y, X_test, y_test, epochs=12, lr=3e-3, batch_size=32, seed=0, on_epoch=None):
        return nb.train_cnn(model, X, y[:10], X_test, y_test, epochs, lr, batch_size, seed, on_epoch)

    outputs, defs = run_app(app, train_cnn=train_cnn, cnn_train=True, cnn_epochs=1)  # an edit that breaks
    assert_no_error_outputs(outputs)
    assert defs["trained_cnn"] is None and "Training with this page's code failed" in output_text(outputs)


def test_05_training_loop_learns_and_the_default_is_the_shipped_run():
    """train_cnn (backward() and Adam's step() in a lesson cell) lowers the loss of a CNN on
    engine.data.make_shapes; train_digits_cnn uses the settings given; the shipped checkpoint's
    history is what its rebuilt model scores."""
    nb = load_module(NB05)
    X, y = engine.data.make_shapes(384, size=16, seed=0)
    Xt, yt = engine.data.make_shapes(128, size=16, seed=1)
    with engine.random.fork_rng(0):
        model = nb.CNN(4, 5, n_classes=4, image_size=16)
    seen = []
    history = nb.train_cnn(model, X, y, Xt, yt, epochs=4, lr=2e-2, seed=0, on_epoch=lambda e, h: seen.append(e))
    assert seen == [1, 2, 3, 4] and history.loss[-1] < history.loss[0] and history.test_acc[-1] > 0.6
    trained = nb.train_digits_cnn(n_filters=2, kernel_size=5, epochs=1, lr=1e-3)
    assert trained.settings == {"n_filters": 2, "kernel_size": 5, "epochs": 1, "lr": 1e-3}
    assert trained.model.conv1.weight.shape == (2, 1, 5, 5) and len(trained.history.loss) == 1
    shipped, _ = conv_lab.shipped_cnn(nb.CNN, nb.train_cnn, nb.train_digits_cnn)
    Xh, yh = engine.data.load_digits("test", channel_dim=True)
    assert shipped.history.test_acc[-1] == pytest.approx(conv_lab.cnn_accuracy(shipped.model, Xh, yh))
    assert len(shipped.history.loss) == conv_lab.CNN_DEFAULTS["epochs"]
    assert np.trace(shipped.confusion) / 360 == pytest.approx(shipped.history.test_acc[-1])


def _baselines_and_cnn(defs):
    """The three models section 8 compares, by the names its table uses."""
    return {**defs["baselines"].models, "CNN": defs["trained_cnn"].model}


@pytest.mark.parametrize("right, down", [(1, 0), (-2, 0), (2, 0), (1, -2), (1, 2)])
def test_05_dense_baselines_and_moved_digits(right, down):
    """Section 8 at its defaults and each shift slider's two ends: the table's accuracies are the
    models' on the held-out digits moved as drawn; the model said to keep the most keeps the most;
    the gains quoted are the table's; the shipped baselines open with the page."""
    text, defs = notebook_text("05_convolution", shift_right=right, shift_down=down)
    assert defs["baselines"].shipped and defs["baselines_note"] == ""
    models = _baselines_and_cnn(defs)
    images, labels = engine.data.load_digits("test", channel_dim=True)
    rows = {r["model"]: r for r in defs["baseline_rows"]}
    for name, model in models.items():
        assert rows[name]["centred"] == conv_lab.cnn_accuracy(model, images, labels)
        assert rows[name]["moved"] == conv_lab.cnn_accuracy(model, conv_lab.shift_digits(images, right, down), labels)
        assert rows[name]["parameters"] == sum(p.data.size for p in model.parameters())
        assert f"{name} {rows[name]['parameters']:,} {rows[name]['centred']:.1%}" in text
    right_count = {n: round(r["centred"] * 360) for n, r in rows.items()}
    assert (
        f"the CNN reads {right_count['CNN'] - right_count['softmax regression']} more" in text
        and f"{right_count['CNN'] - right_count['MLP']} more than the MLP" in text
    )
    assert right_count["CNN"] > right_count["MLP"] > right_count["softmax regression"]  # "come close", the CNN ahead
    assert rows["MLP"]["parameters"] > rows["CNN"]["parameters"]
    keeps = max(rows, key=lambda n: rows[n]["moved"])
    assert f"the model that keeps the most here is the {keeps} ." in text
    assert conv_lab.shift_digits(images[0, 0], right, down).sum() <= images[0, 0].sum()


def test_05_moved_digits_claims_hold_over_five_seeds():
    """The prose of section 8 over the five shipped trainings of each model: its numbers are the
    runs'; moved sideways only (right ±1, ±2) the CNN keeps the most for every seed; moved up or
    down, no model keeps two thirds of its centred accuracy; centred, the CNN reads more digits
    right than both baselines for every seed; seed 0 is the shipped models of the table above;
    the top and bottom rows hold far more ink than the outer columns; and shifting the pixels and
    the dense weights alike leaves the baselines' logits unchanged."""
    nb = load_module(NB05)
    baselines, _ = conv_lab.shipped_baselines(nb.SoftmaxRegression, nb.MLP, nb.train_cnn, nb.train_digits_baselines)
    cnn, _ = conv_lab.shipped_cnn(nb.CNN, nb.train_cnn, nb.train_digits_cnn)
    models = {**baselines.models, "CNN": cnn.model}
    text, defs = notebook_text("05_convolution")
    runs = defs["seed_shifts"]
    acc = runs.accuracy
    assert runs.shipped and acc.shape == (3, 5, 9)
    for i, name in enumerate(conv_lab.SEED_MODELS):  # seed 0: the shipped models, scored as the table scores them
        shipped = [conv_lab.shifted_accuracy(models[name], r, d) for r, d in conv_lab.SEED_SHIFTS]
        np.testing.assert_allclose(acc[i, 0], shipped, atol=1.5 / 360)
    assert (acc[:, :, 1:5].argmax(axis=0) == 0).all()  # the CNN is model 0
    assert runs.sideways_cnn_best == runs.sideways_runs == 20
    kept = acc[:, :, 5:] / acc[:, :, :1]
    assert runs.vertical_kept == kept.max() < 2 / 3
    right = np.round(acc[:, :, 0] * 360).astype(int)
    lead = runs.centred_lead
    for i, name in ((1, "softmax regression"), (2, "MLP")):
        assert lead[name] == ((right[0] - right[i]).min(), (right[0] - right[i]).max()) and lead[name][0] > 0
    assert "keeps the most at each of the four shifts, for every seed" in text
    assert f"no model keeps more than {runs.vertical_kept:.0%} of its centred" in text
    assert (
        f"reads {lead['softmax regression'][0]} to {lead['softmax regression'][1]} more held-out digits" in text
        and f"{lead['MLP'][0]} to {lead['MLP'][1]} more than the MLP" in text
    )
    rows, cols = conv_lab.ink_share(rows=(0, -1)), conv_lab.ink_share(rows=(), cols=(0, -1))
    train = engine.data.load_digits("train")[0].astype(float)
    assert rows == pytest.approx((train[:, [0, -1], :].sum()) / train.sum())
    assert rows > 0.2 and cols < 0.01
    assert f"hold {rows:.0%} of the training digits'" in text and f"columns {cols:.1%}" in text
    # Neither dense model knows which pixels are neighbours: a permutation of the pixels and of
    # the first weight matrix's columns gives the same logits.
    x = engine.data.load_digits("test", channel_dim=True)[0][:50]
    perm = np.random.default_rng(0).permutation(64)
    for name, layer in (("softmax regression", "fc"), ("MLP", "fc1")):
        model = baselines.models[name]
        before = model(engine.Tensor(x)).data
        weight = getattr(model, layer).weight
        original = weight.data.copy()
        weight.data[...] = original[:, perm]
        shuffled = x.reshape(50, 64)[:, perm].reshape(x.shape)
        try:
            np.testing.assert_allclose(model(engine.Tensor(shuffled)).data, before, atol=1e-5)
        finally:
            weight.data[...] = original


def test_05_baselines_train_with_the_button_and_an_edit_is_not_given_the_shipped_weights():
    """Train the baselines runs the page's train_digits_baselines with section 7's epochs and
    learning rate; an edited MLP is not given the shipped weights (one line, no traceback)."""
    app, nb = load_app(NB05), load_module(NB05)
    outputs, defs = run_app(app, baselines_train=True, cnn_epochs=1, cnn_lr=1e-2)
    assert_no_error_outputs(outputs)
    b = defs["baselines"]
    assert not b.shipped and b.settings == {"epochs": 1, "lr": 1e-2}
    assert all(len(h.loss) == 1 for h in b.histories.values())
    assert isinstance(b.models["MLP"], defs["MLP"])
    assert isinstance(b.models["softmax regression"], defs["SoftmaxRegression"])

    class MLP(nb.MLP):
        def __init__(self, hidden=32, n_classes=10, image_size=8):
            super().__init__(hidden, n_classes, image_size)

    outputs, defs = run_app(app, MLP=MLP)
    assert_no_error_outputs(outputs)
    assert defs["baselines"] is None
    assert "The shipped model was trained with other code than this page's SoftmaxRegression , MLP ," in output_text(
        outputs
    )
    trained = nb.train_digits_baselines(epochs=1, lr=1e-3)
    assert set(trained) == set(conv_lab.BASELINE_NAMES) and all(len(h.loss) == 1 for _, h in trained.values())


@pytest.mark.parametrize("digit, target", [(0, -1), (359, 0), (7, 9)])
def test_05_saliency_maps_are_gradients_of_the_class_score(digit, target):
    """The saliency maps shown are ∂score/∂x: against central differences for the CNN and the MLP,
    exactly the weight row W_c for softmax regression (whatever the digit); the CNN's map changes
    with the digit. At the ends of the digit slider and of the class menu."""
    text, defs = notebook_text("05_convolution", saliency_digit=digit, saliency_class=target)
    images, labels = defs["digits_heldout"]
    c = int(labels[digit]) if target < 0 else target
    assert f"The score of class {c} ;" in text
    maps = defs["saliency_maps"]
    models = _baselines_and_cnn(defs)
    weight = models["softmax regression"].fc.weight.data
    np.testing.assert_allclose(maps["softmax regression"], weight[c].reshape(8, 8), atol=1e-6)
    image = images[digit, 0].astype(np.float64)
    for name in ("CNN", "MLP"):
        eps, numeric = 1e-3, np.zeros((8, 8))
        for i in range(8):
            for j in range(8):
                up, down = image.copy(), image.copy()
                up[i, j] += eps
                down[i, j] -= eps
                batch = engine.Tensor(np.stack([up, down])[:, None].astype(np.float32))
                with engine.no_grad():
                    z = models[name](batch).data[:, c].astype(np.float64)
                numeric[i, j] = (z[0] - z[1]) / (2 * eps)
        np.testing.assert_allclose(maps[name], numeric, atol=2e-2 * np.abs(numeric).max())
    other = defs["saliency"](models["CNN"], images[(digit + 1) % 360, 0], c)
    assert np.abs(other - maps["CNN"]).max() > 0.1


def test_05_saliency_prompt_gradient_times_input():
    """Section 8's prompt: saliency returning gradient × input zeroes the blank paper in every map,
    and softmax regression's map then changes with the digit."""
    app, nb = load_app(NB05), load_module(NB05)

    def saliency(model, image, target):
        return nb.saliency(model, image, target) * image

    maps = {}
    for digit in (0, 1):
        outputs, defs = run_app(app, saliency=saliency, saliency_digit=digit)
        assert_no_error_outputs(outputs)
        image = defs["digits_heldout"][0][digit, 0]
        for m in defs["saliency_maps"].values():
            assert np.all(m[image == 0] == 0)
        maps[digit] = defs["saliency_maps"]["softmax regression"]
    assert np.abs(maps[0] - maps[1]).max() > 0.1


def test_05_residual_blocks_keep_the_gradient_that_plain_blocks_lose():
    """Section 9 over the five seeds it draws: every plain block shrinks the gradient, to under
    1e-9 of its norm below 12 blocks; residual blocks keep it within [1, 1.3); the numbers quoted
    are the figure's; and the prompt's edit (x + 5 f) makes the residual curves climb."""
    text, defs = notebook_text("05_convolution")
    r = defs["residual"]
    plain, res = r.ratio["plain"], r.ratio["residual"]
    assert r.seeds == (0, 1, 2, 3, 4) and plain.shape == res.shape == (5, 12)
    assert (np.diff(np.log(plain), axis=1) < 0).all() and plain[:, -1].max() < 1e-9
    assert 1 <= res.min() and res.max() < 1.3
    per_block = plain[:, -1] ** (-1 / 12)
    for said in (
        f"{plain[:, 0].min():.2f} to {plain[:, 0].max():.2f}",
        f"at most {plain[:, -1].max():.0e}",
        f"{per_block.min():.0f} to {per_block.max():.0f}",
        f"between {res.min():.2f} and {res.max():.2f}",
    ):
        assert said in text, said

    class Scaled(defs["ResidualBlock"]):
        def forward(self, x):
            f = self.conv2(engine.functional.relu(self.conv1(engine.functional.relu(x))))
            return x + 5 * f if self.skip else f

    climbed = conv_lab.block_gradients(Scaled).ratio["residual"]
    assert (climbed[:, -1] > 5).all() and (climbed[:, -1] > climbed[:, 0]).all()


@pytest.mark.slow
def test_05_seed_runs_are_what_train_over_seeds_trains():
    """The shipped comparison over seeds is what the page's train_over_seeds makes: seed 1 retrained
    (the three models, about 2.5 s) scores as shipped, within one digit per shift."""
    nb = load_module(NB05)
    runs, _ = conv_lab.shipped_seed_shifts(*(getattr(nb, n) for n in conv_lab.SEED_CODE))
    made = conv_lab.seed_shift_accuracy(nb.train_over_seeds(seeds=(1,)))
    np.testing.assert_allclose(made[:, 0], runs.accuracy[:, 1], atol=1.5 / 360)


@pytest.mark.slow
def test_05_seed_button_trains_and_an_edit_is_not_given_the_shipped_runs():
    """An edited train_over_seeds (here: one seed, one epoch, so the button is quick) is not given
    the shipped runs; its button trains it and the prose speaks of what it trained."""
    nb = load_module(NB05)

    def train_over_seeds(seeds=(0,), epochs=1, lr=3e-3, on_run=None):
        return nb.train_over_seeds(seeds, epochs, lr, on_run)

    outputs, defs = run_app(load_app(NB05), train_over_seeds=train_over_seeds)
    assert_no_error_outputs(outputs)
    assert defs["seed_shifts"] is None
    outputs, defs = run_app(load_app(NB05), train_over_seeds=train_over_seeds, seeds_train=True)
    text = output_text(outputs)
    assert not defs["seed_shifts"].shipped and defs["seed_shifts"].accuracy.shape == (3, 1, 9)
    assert "trained by the button with this page's code" in text

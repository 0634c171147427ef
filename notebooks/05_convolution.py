import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="05 · Convolution")

with app.setup:
    import functools

    import altair as alt
    import marimo as mo
    import numpy as np

    import engine
    import engine.functional as F
    from engine import data, nn, optim, shapes
    from engine.course import exercises, metadata, plot, toc, ui, widgets
    from engine.course.labs import convolution as lab

    METADATA = metadata("05_convolution")


@app.function
@functools.lru_cache(maxsize=8)
def cnn_summary(trained):
    """Loss and accuracy per epoch, the held-out accuracy, and where the
    model comes from (the shipped checkpoint or the learner's own training)."""
    history, matrix, settings = trained.history, trained.confusion, trained.settings
    _described = (
        f"{settings['n_filters']} filters of {settings['kernel_size']}×"
        f"{settings['kernel_size']}, {settings['epochs']} epochs, learning rate "
        f"{settings['lr']:g}"
    )
    if trained.shipped:
        source = (
            f"The CNN below was trained with the default settings ({_described}) "
            "by this page's `CNN` and `train_cnn` and ships with the course, so it is here "
            "on open; **Train the CNN** retrains it with the settings above."
        )
    else:
        source = (
            f"The CNN below was trained just now with your settings ({_described}), "
            "by the `CNN` and `train_cnn` cells as they are now."
        )
    curves = plot.loss_curves(
        {"train": history.train_acc, "held-out": history.test_acc},
        y_title="accuracy",
        title="accuracy per epoch (chance: 0.1)",
    )
    loss = plot.loss_curves({"train": history.loss}, y_title="cross-entropy", title="training loss per epoch")
    stopped = mo.callout(mo.md(history.stopped), kind="warn") if history.stopped else mo.md("")
    final = history.test_acc[-1] if history.test_acc else float("nan")
    return mo.vstack(
        [
            mo.md(source),
            stopped,
            mo.hstack([loss, curves], widths="equal"),
            mo.md(
                f"Held-out accuracy after {len(history.loss)} epochs: **{final:.1%}** "
                f"({int(np.trace(matrix))} of {int(matrix.sum())} digits)."
            ),
        ]
    )


@app.function
def cnn_verdict(trained, pixels):
    """The CNN's reading of a drawn 8×8 digit (``pixels``: its float64 bytes, a hashable key):
    its verdict, probabilities and first-layer feature maps."""
    digit = np.frombuffer(pixels, dtype=float).reshape(8, 8)
    if not digit.any():
        return mo.callout(mo.md("The canvas is empty: draw a digit."), kind="warn")
    maps = lab.feature_maps(trained.model, digit)
    probs = maps["probs"]
    return mo.vstack(
        [
            mo.md(f"The CNN reads a **{int(np.argmax(probs))}** (probability {probs.max():.0%})."),
            plot.value_table(
                probs[None],
                "the CNN's probability of each digit (column) for your drawing",
                cmap="Purples",
                symmetric=False,
            ),
            mo.md("Its first-layer feature maps after ReLU (the first six channels):"),
            plot.image_tiles({f"conv1 · {i}": m for i, m in enumerate(maps["relu1"][:6])}, width=96),
        ]
    )


@app.function
@functools.lru_cache(maxsize=8)
def cnn_kernels_figure(trained):
    """The first layer's learned kernels, one panel each."""
    kernels = lab.learned_filters(trained.model)
    names = [f"filter {i}" for i in range(len(kernels))]
    return mo.vstack(
        [
            mo.md("**Learned first-layer kernels** (red positive, blue negative)."),
            plot.image_tiles(dict(zip(names, kernels)), symmetric=tuple(names), width=72),
        ]
    )


@app.function
def cnn_reading(trained, index):
    """Held-out digit ``index``, its first-layer feature maps and the CNN's probabilities."""
    images, labels = data.load_digits("test", channel_dim=True)
    image, label = images[index], int(labels[index])
    maps = lab.feature_maps(trained.model, image)
    predicted = int(np.argmax(maps["probs"]))
    return mo.vstack(
        [
            mo.md(
                f"Held-out digit #{index}: true {label}, the CNN reads a **{predicted}** "
                f"(probability {maps['probs'].max():.0%}). The digit and its first-layer feature "
                "maps after ReLU (the first six channels):"
            ),
            plot.image_tiles(
                {"input": image[0], **{f"conv1 · {i}": m for i, m in enumerate(maps["relu1"][:6])}}, width=96
            ),
            plot.value_table(
                maps["probs"][None],
                f"the CNN's probability of each digit (column) · true: {label} · predicted: {predicted}",
                cmap="Purples",
                symmetric=False,
            ),
        ]
    )


@app.function
@functools.lru_cache(maxsize=8)
def confusion_heatmap(trained):
    """The held-out confusion matrix (rows: the true digit, columns: the CNN's reading), its
    counts written in; a click on a cell selects that pair of digits (``cell_pick``)."""
    digits = np.array([str(d) for d in range(10)], dtype=object)
    cells = plot.data(actual=np.repeat(digits, 10), predicted=np.tile(digits, 10), images=trained.confusion.ravel())
    pick = alt.selection_point(name="cell_pick", fields=["actual", "predicted"], on="click")
    grid = alt.Chart(cells, width="container", height=300, title="held-out confusion matrix · click a cell").encode(
        alt.X("predicted:O", sort=list(digits), title="predicted digit", axis=alt.Axis(labelAngle=0)),
        alt.Y("actual:O", sort=list(digits), title="true digit"),
    )
    return grid.mark_rect().encode(
        alt.Color("images:Q", scale=alt.Scale(scheme="purples"), title="images"),
        alt.OpacityValue(0.4, condition={"param": "cell_pick", "value": 1.0}),
    ).add_params(pick) + grid.mark_text(fontSize=11).encode(alt.Text("images:Q"))


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        r"""
    A convolution slides one small set of weights over an image. This notebook makes every part of
    that sentence something you can move:

    - **size arithmetic**: predict the output size of any convolution or transposed convolution,
      and see why some settings are impossible;
    - **receptive fields**: how far a deep unit sees, layer by layer, in AlexNet, VGG-16 and
      ResNet-50, and how unevenly it sees that far (the effective receptive field);
    - **im2col**: the trick that turns a convolution into one matrix product, forward and backward;
    - **filters**: what hand-made kernels (and your own) do to an image, when two convolutions are
      one, and what 1×1, grouped and depthwise-separable layers save;
    - **translation equivariance**, the reason convolutions suit images, and how stride and
      pooling bend it;
    - **a CNN on real handwritten digits**: its held-out accuracy, its confusion matrix, its
      filters, and its reading of a digit you draw;
    - **what the convolutions add**: two dense models on the same digits, centred and moved, and
      the saliency maps of all three.

    The convolution itself, the CNN and its training loop are code cells of this page: open it
    in `marimo edit`, change them, and the figures that use them follow.
    """,
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1. One output value

    A 2-D convolution layer with weights $W \in \mathbb{R}^{C_{out}\times C_{in}\times K\times K}$
    computes each output value as a weighted sum over a $K\times K$ window of every input channel:

    $$
    y[o, p, q] = b[o] + \sum_{c=1}^{C_{in}} \sum_{i=0}^{K-1} \sum_{j=0}^{K-1}
    W[o, c, i, j]\; x_{\text{pad}}[c,\; pS + iD,\; qS + jD]
    $$

    $S$ is the **stride** (how far the window jumps), $P$ the zero **padding** added around the
    input, $D$ the **dilation** (the gap between the kernel's taps). The same $W$ is used at every
    position $(p, q)$: this **weight sharing** is why a convolution has so few parameters,

    $$
    \#\text{params} = C_{out}\,(C_{in} K^2 + 1),
    $$

    whatever the image size. (Deep-learning libraries compute this cross-correlation and call it
    convolution: the kernel is not flipped.) Here is the formula as code, one loop per kernel tap
    $(i, j)$: each tap multiplies the whole strided, shifted input by its weights and adds it in.
    """)
    return


@app.function
def conv2d_loops(x, w, b=None, stride=1, padding=0, dilation=1):
    """A convolution layer (cross-correlation, as `F.conv2d` computes it) as loops over its taps:

        y[o, p, q] = b[o] + Σ_c Σ_i Σ_j W[o, c, i, j] · x_pad[c, pS + iD, qS + jD]

    x: [C_in, H, W], w: [C_out, C_in, K, K], b: [C_out] or None; returns y [C_out, H_out, W_out]."""
    c_out, _, k, _ = w.shape
    x_pad = np.pad(x, ((0, 0), (padding, padding), (padding, padding)))
    h_out = (x_pad.shape[1] - dilation * (k - 1) - 1) // stride + 1
    w_out = (x_pad.shape[2] - dilation * (k - 1) - 1) // stride + 1
    y = np.zeros((c_out, h_out, w_out))
    for i in range(k):
        for j in range(k):
            # what tap (i, j) reads for every output pixel (p, q) at once
            window = x_pad[
                :,
                i * dilation : i * dilation + stride * h_out : stride,
                j * dilation : j * dilation + stride * w_out : stride,
            ]
            y += np.tensordot(w[:, :, i, j], window, axes=1)  # Σ_c W[o, c, i, j] · window[c]
    return y if b is None else y + np.asarray(b)[:, None, None]


@app.cell
def _():
    _rng = np.random.default_rng(0)
    _x, _w, _b = _rng.normal(size=(3, 9, 9)), _rng.normal(size=(4, 3, 3, 3)), _rng.normal(size=4)
    loops_gap = float(
        np.abs(
            conv2d_loops(_x, _w, _b, stride=2, padding=1) - F.conv2d(_x[None], _w, _b, stride=2, padding=1).data[0]
        ).max()
    )
    mo.md(f"""
    `conv2d_loops` against the engine's `F.conv2d` on a random 3-channel 9×9 input, four 3×3
    filters, stride 2, padding 1: largest difference **{loops_gap:.1e}**. The engine computes the
    same numbers with one matrix product (section 4); section 5's *your own kernel* runs
    `conv2d_loops`.

    **Change this cell:** make `conv2d_loops` flip the kernel first (`w = w[:, :, ::-1, ::-1]`),
    the convolution of signal processing. The difference above grows to the size of the outputs
    (these random kernels are not symmetric), and in section 5 your own kernel's result changes
    sign wherever the kernel is antisymmetric, as Sobel $x$, its starting value, is.
    """)
    return (loops_gap,)


@app.cell
def _():
    size_w = mo.ui.slider(1, 16, value=7, label="input size W", show_value=True)
    kernel_k = mo.ui.slider(1, 7, value=3, label="kernel K", show_value=True)
    padding_p = mo.ui.slider(0, 4, value=1, label="padding P", show_value=True)
    stride_s = mo.ui.slider(1, 4, value=2, label="stride S", show_value=True)
    dilation_d = mo.ui.slider(1, 3, value=1, label="dilation D", show_value=True)
    channels_in = mo.ui.slider(1, 64, value=3, label="C_in", show_value=True)
    channels_out = mo.ui.slider(1, 64, value=16, label="C_out", show_value=True)
    # up to the largest output these sliders allow (W + 2P = 24 starts); the grid clips to the output
    out_pixel_row = mo.ui.slider(0, 23, value=1, label="output row p", show_value=True)
    out_pixel_col = mo.ui.slider(0, 23, value=0, label="output column q", show_value=True)
    mo.vstack(
        [
            mo.md(r"""
    ## 2. Size arithmetic

    A kernel with dilation $D$ spans $K_{\text{eff}} = D(K-1) + 1$ pixels. It fits into the padded
    input $W + 2P$ at starts $0, S, 2S, \dots$, so the output size is the number of starts:

    $$
    O = \left\lfloor \frac{W + 2P - K_{\text{eff}}}{S} \right\rfloor + 1 .
    $$

    Move the sliders: the strip shows, for each output $o$ (one row each), which input pixels its
    kernel reads. The grid below it shows the same for a 2-D output pixel.
    """),
            mo.hstack([size_w, kernel_k, padding_p, stride_s, dilation_d], wrap=True),
            mo.hstack([channels_in, channels_out], justify="start"),
            mo.hstack([out_pixel_row, out_pixel_col], justify="start"),
        ]
    )
    return (
        channels_in,
        channels_out,
        dilation_d,
        kernel_k,
        out_pixel_col,
        out_pixel_row,
        padding_p,
        size_w,
        stride_s,
    )


@app.cell
def _(
    channels_in,
    channels_out,
    dilation_d,
    kernel_k,
    out_pixel_col,
    out_pixel_row,
    padding_p,
    size_w,
    stride_s,
):
    conv_setting = lab.conv_report(
        size_w.value,
        kernel_k.value,
        stride_s.value,
        padding_p.value,
        dilation_d.value,
        channels_in.value,
        channels_out.value,
    )
    _lines = [
        f"**K_eff** = {conv_setting.effective_kernel} · **padded input** = "
        f"{conv_setting.padded_size} · **parameters** of Conv2d({channels_in.value}, "
        f"{channels_out.value}, {kernel_k.value}) = {conv_setting.params:,}",
        "",
        conv_setting.message,
    ] + [f"- {n}" for n in conv_setting.notes]
    _shown = [mo.callout(mo.md("\n".join(_lines)), kind="info" if conv_setting.ok else "warn")]
    if conv_setting.ok:
        _strip = lab.conv_placements(size_w.value, kernel_k.value, stride_s.value, padding_p.value, dilation_d.value)
        _side = conv_setting.output_size
        grid = lab.conv_grid(
            size_w.value,
            kernel_k.value,
            stride_s.value,
            padding_p.value,
            dilation_d.value,
            min(out_pixel_row.value, _side - 1),
            min(out_pixel_col.value, _side - 1),
        )
        _clipped = (
            f" (the output has {_side} rows and columns: the last is shown)"
            if max(out_pixel_row.value, out_pixel_col.value) >= _side
            else ""
        )
        _shown += [
            plot.cell_table(
                _strip.kind.reshape(len(_strip.taps), -1),
                title="Each row: the pixels one output's kernel reads",
                row_title="output o",
                col_title="padded input position",
                legend=True,
            ),
            mo.hstack(
                [
                    plot.cell_table(
                        grid.kind.reshape(conv_setting.padded_size, -1),
                        legend=True,
                        title=f"padded input: the taps of output ({grid.out_row}, {grid.out_col}){_clipped}",
                    ),
                    plot.cell_table(
                        np.where(grid.selected, "selected", "output").reshape(_side, _side),
                        title=f"output {_side}×{_side}",
                    ),
                ],
                justify="start",
                gap=2,
            ),
        ]
    else:
        grid = None
        _shown.append(mo.md("*No placement fits: nothing to draw.*"))
    mo.vstack(_shown)
    return conv_setting, grid


@app.cell
def _():
    transpose_w = mo.ui.slider(1, 10, value=3, label="input size W", show_value=True)
    output_padding = mo.ui.slider(0, 3, value=1, label="output_padding", show_value=True)
    mo.vstack(
        [
            mo.md(r"""
    ### Transposed convolution

    A transposed convolution runs the picture backwards: each **input** pixel stamps a copy of the
    kernel, scaled by its value, onto the output at position $iS$, and overlapping copies add up.
    It is exactly the gradient of a convolution with respect to its input, so it maps sizes back:

    $$
    O = (W - 1)S - 2P + D(K - 1) + \text{output\_padding} + 1 .
    $$

    Here $P$ **crops** the full output on both sides. A stride-$S$ convolution sends $S$ different
    input sizes to the same output size (the floor above), so `output_padding` $\in [0, S)$ picks
    which one to return to. It uses the K, S, P and D sliders above, with its own input size.
    """),
            mo.hstack([transpose_w, output_padding], justify="start"),
        ]
    )
    return output_padding, transpose_w


@app.cell
def _(
    dilation_d,
    kernel_k,
    output_padding,
    padding_p,
    stride_s,
    transpose_w,
):
    transposed = lab.conv_transpose_placements(
        transpose_w.value, kernel_k.value, stride_s.value, padding_p.value, output_padding.value, dilation_d.value
    )
    _r = transposed.report
    _text = "\n".join([_r.message] + [f"- {n}" for n in _r.notes])
    if not _r.ok:
        _view = mo.callout(mo.md(_text), kind="warn")
    else:
        _stamps = plot.cell_table(
            **lab.transpose_cells(transposed),
            legend=True,
            row_title="input pixel i",
            col_title="full (uncropped) output position u = iS + kD",
            title="Each row: where one input pixel's kernel copy lands (number = output index, × = cropped by P)",
        )
        _coverage = plot.value_table(
            transposed.coverage[None],
            "kernel copies reaching each output pixel (column: output pixel)",
            cmap="Purples",
            symmetric=False,
            fmt="{:.0f}",
        )
        _view = mo.vstack([mo.callout(mo.md(_text), kind="info"), _stamps, _coverage])
    _view
    return (transposed,)


@app.cell
def _():
    exercises_shapes = {
        "size": exercises.NumberExercise(
            question="**Exercise 1.** A 28 × 28 image goes through "
            "`Conv2d(1, 8, kernel_size=5, stride=2)` with no padding. How many pixels wide is the output?",
            truth=shapes.conv_output_size(28, 5, stride=2, padding=0),
            hint="count the starts 0, 2, 4, … at which a 5-wide window still fits in 28 pixels: ⌊(28 − 5)/2⌋ + 1.",
            placeholder="output width",
        ),
        "params": exercises.NumberExercise(
            question="**Exercise 2.** How many parameters (weights and biases) does "
            "`Conv2d(3, 16, kernel_size=5)` have? Does the answer depend on the image size?",
            truth=shapes.conv2d_params(3, 16, 5),
            hint="each of the 16 filters has 3 × 5 × 5 weights and one bias; the image size never enters.",
            placeholder="parameter count",
        ),
    }
    answers_shapes = ui.answer_boxes(exercises_shapes)
    return answers_shapes, exercises_shapes


@app.cell
def _(answers_shapes, exercises_shapes):
    ui.exercise_list(
        r"""
    Uneven coverage (bars of different heights inside the output) is the source of the
    **checkerboard artefacts** of generators built from transposed convolutions: it appears when
    $K_{\text{eff}}$ is not a multiple of $S$. Try $K=3, S=2$, then $K=4, S=2$.

    ### Check yourself
    """,
        exercises_shapes,
        answers_shapes,
    )
    return


@app.cell
def _():
    rf_preset = mo.ui.dropdown(
        options=["AlexNet", "VGG-16", "ResNet-50", "custom stack"], value="VGG-16", label="network"
    )
    rf_layers = mo.ui.slider(1, 12, value=6, label="custom: layers", show_value=True)
    rf_kernel = mo.ui.slider(1, 7, value=3, label="custom: kernel", show_value=True)
    rf_stride = mo.ui.slider(1, 3, value=1, label="custom: stride", show_value=True)
    rf_dilation = mo.ui.slider(1, 4, value=1, label="custom: dilation", show_value=True)
    rf_pool = mo.ui.slider(0, 4, value=2, label="custom: 2×2 pool every n convs (0: none)", show_value=True)
    rf_input = mo.ui.slider(8, 512, step=8, value=224, label="input size", show_value=True)
    mo.vstack(
        [
            mo.md(r"""
    ## 3. Receptive fields

    A unit deep in the network depends on a window of the input, its **receptive field**. With
    $r_0 = 1$ and the **jump** $j_0 = 1$ (the distance, in input pixels, between neighbouring units),
    each layer $l$ with kernel $K_l$, stride $s_l$ and dilation $D_l$ grows them:

    $$
    r_l = r_{l-1} + \big(K_{\text{eff},l} - 1\big)\, j_{l-1}, \qquad j_l = j_{l-1}\, s_l .
    $$

    A kernel adds $K-1$ units of the previous layer, and each of those is $j_{l-1}$ input pixels
    apart: strides early in the network make every later layer see much further. Pick a classic
    network or build your own stack of 'same'-padded convolutions.
    """),
            mo.hstack([rf_preset, rf_input], justify="start"),
        ]
    )
    return rf_dilation, rf_input, rf_kernel, rf_layers, rf_pool, rf_preset, rf_stride


@app.cell
def _(
    rf_dilation,
    rf_input,
    rf_kernel,
    rf_layers,
    rf_pool,
    rf_preset,
    rf_stride,
):
    if rf_preset.value == "custom stack":
        _layers = lab.uniform_stack(rf_layers.value, rf_kernel.value, rf_stride.value, rf_dilation.value, rf_pool.value)
    else:
        _layers = shapes.RECEPTIVE_FIELD_PRESETS[rf_preset.value]
    rf_rows = lab.receptive_field_table(_layers, input_size=rf_input.value)
    rf_final = rf_rows[-1].rf
    _chart = ui.chart(
        plot.curves(
            np.arange(1, len(rf_rows) + 1),
            {
                "receptive field r (input pixels)": np.array([r.rf for r in rf_rows], float),
                "jump j (input pixels)": np.array([r.jump for r in rf_rows], float),
            },
            x_title="layer l",
            y_title="input pixels",
            colors={"receptive field r (input pixels)": "model", "jump j (input pixels)": "reference"},
            title=f"{rf_preset.value}: the field grows to {rf_final} pixels",
        )
    )
    _collapsed = [r for r in rf_rows if r.note]
    _warn = (
        mo.callout(
            mo.md(
                f"At **{_collapsed[0].name}** {_collapsed[0].note} "
                f"(input {rf_input.value} px). Enlarge the input or use fewer strides."
            ),
            kind="warn",
        )
        if _collapsed
        else mo.md("")
    )
    # plain HTML: a markdown table of up to 20 rows costs the slider about 10 ms to parse
    _cells = [
        (
            r.name,
            r.kernel,
            r.stride,
            r.padding,
            r.dilation,
            r.rf,
            r.jump,
            "—" if r.fmap is None else f"{r.fmap}×{r.fmap}",
        )
        for r in rf_rows
    ]
    _table = mo.Html(
        "<table><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in ("layer", "K", "S", "P", "D", "field r", "jump j", "feature map"))
        + "</tr></thead><tbody>"
        + "".join("<tr>" + "".join(f"<td>{v}</td>" for v in row) + "</tr>" for row in _cells)
        + "</tbody></table>"
    )
    mo.vstack(
        [
            mo.hstack([rf_layers, rf_kernel, rf_stride, rf_dilation, rf_pool], wrap=True)
            if rf_preset.value == "custom stack"
            else mo.md(""),
            _warn,
            mo.md(
                f"One unit after the last layer sees **{rf_final}** input pixels per side; neighbouring "
                f"units are **{rf_rows[-1].jump}** pixels apart."
            ),
            _chart,
            _table,
        ]
    )
    return rf_final, rf_rows


@app.cell
def _():
    erf_layers = mo.ui.slider(1, 16, value=6, label="layers n", show_value=True)
    erf_relu = mo.ui.checkbox(value=True, label="ReLU between layers")
    mo.vstack(
        [
            mo.md(r"""
    VGG's argument is in the first rows of its table: two stacked $3\times3$ convolutions see
    $5\times5$ pixels and three see $7\times7$, like one $7\times7$ kernel, with
    $3\cdot 9C^2 = 27C^2$ weights instead of $49C^2$ and two more non-linearities in between.
    Dilation grows the field without pooling (try the custom stack with dilation 2).

    ### The effective receptive field

    The formula says which pixels a unit *can* depend on, not how much. Luo et al. (2016)
    measure the **effective** receptive field: the gradient $|\partial y / \partial x|$ of one
    centre output unit with respect to every input pixel. Each path from a pixel to the unit
    multiplies weights along the way. With one layer every pixel of the 3×3 field has one path;
    stack more and a pixel near the centre has many more paths than one at the border of the
    field, so the map concentrates near the centre and fades well before the theoretical edge.

    Below, the engine's autograd computes that map for a stack of $n$ random 3×3 convolutions
    (4 channels, Kaiming-normal weights, 'same' padding), averaged over 8 initialisations and
    inputs; its standard deviation along one axis measures the effective radius.
    """),
            mo.hstack([erf_layers, erf_relu], justify="start"),
        ]
    )
    return erf_layers, erf_relu


@app.cell
def _(erf_layers, erf_relu):
    erf_sweep = [lab.effective_receptive_field(n, erf_relu.value, seed=0) for n in (2, 4, 8, 16)]
    erf = lab.effective_receptive_field(erf_layers.value, erf_relu.value, seed=0)
    # Like with like: a field that weighted all 2n + 1 pixels equally has the std √(n(n + 1)/3).
    _uniform = [np.sqrt(e.layers * (e.layers + 1) / 3) for e in erf_sweep]
    _per_root = [e.std / np.sqrt(e.layers) for e in erf_sweep]
    _side, _c = 2 * (erf.layers // 2) + 1, erf.grad_map.shape[0] // 2  # the square central_share sums
    _edge = erf.grad_map[_c, _c + erf.layers] / erf.grad_map.max()
    _rows = [
        "| layers n | theoretical width 2n + 1 | std if uniform over it | effective std | "
        "effective / uniform | effective / √n |",
        "|---|---|---|---|---|---|",
    ] + [
        f"| {e.layers} | {e.theoretical} | {u:.2f} | {e.std:.2f} | {e.std / u:.3f} | {r:.2f} |"
        for e, u, r in zip(erf_sweep, _uniform, _per_root)
    ]
    mo.vstack(
        [
            mo.hstack(
                [
                    plot.image_tiles(
                        {f"|∂y/∂x|, n = {erf.layers}": erf.grad_map},
                        width=240,
                        cmaps={f"|∂y/∂x|, n = {erf.layers}": "Purples"},
                    ),
                    mo.md(
                        f"Theoretical field: **{erf.theoretical}** pixels wide (the whole picture but "
                        f"a margin of 4); effective std: **{erf.std:.2f}** pixels. The central "
                        f"{_side}×{_side} square holds **{erf.central_share:.0%}** of the gradient, where "
                        f"a field spread evenly would put {_side**2 / erf.theoretical**2:.0%}; at the "
                        f"field's edge, {erf.layers} pixel{'s' * (erf.layers > 1)} out, the gradient is {_edge:.2g} of its peak."
                        f"\n\n" + "\n".join(_rows) + "\n\nBoth stds are in pixels from the centre. A "
                        "uniform field's std grows like n, the effective one like √n, as Luo et al. (2016) "
                        f"predict: its ratio to √n stays between {min(_per_root):.2f} and {max(_per_root):.2f} "
                        "while n grows eightfold, so the share effective / uniform falls with depth."
                    ),
                ],
                justify="start",
            ),
        ]
    )
    return erf, erf_sweep


@app.cell
def _():
    _eight = lab.effective_receptive_field(8, True, seed=0)
    exercises_field = {
        "rf": exercises.NumberExercise(
            question="**Exercise 3.** Three 3 × 3 convolutions: the first two with stride 2, the last "
            "with stride 1. How many input pixels wide is the receptive field of one output unit?",
            truth=shapes.receptive_field([(3, 2, 1), (3, 2, 1), (3, 1, 1)])[-1].size,
            hint="layer by layer, r grows by (K − 1)·j with j the product of the strides before it: "
            "1 + 2·1, then + 2·2, then + 2·4.",
            placeholder="receptive field",
        ),
        "erf": exercises.NumberExercise(
            question="**Exercise 4.** Eight stacked 3×3 convolutions with stride 1: how many pixels "
            "wide is the theoretical receptive field of one unit?",
            truth=shapes.receptive_field([(3, 1, 1)] * 8)[-1].size,
            hint="each layer adds K − 1 = 2 pixels to a field that starts at 1.",
            explanation=f"Its effective field is much narrower: a standard deviation of "
            f"{_eight.std:.1f} pixels with ReLU between the layers (the table above).",
            placeholder="pixels",
        ),
    }
    answers_field = ui.answer_boxes(exercises_field)
    return answers_field, exercises_field


@app.cell
def _(answers_field, exercises_field):
    ui.exercise_list("", exercises_field, answers_field)
    return


@app.cell
def _():
    im_size = mo.ui.slider(3, 8, value=5, label="input H = W", show_value=True)
    im_channels = mo.ui.slider(1, 2, value=1, label="channels", show_value=True)
    im_kernel = mo.ui.slider(1, 4, value=3, label="kernel K", show_value=True)
    im_stride = mo.ui.slider(1, 3, value=1, label="stride S", show_value=True)
    im_padding = mo.ui.slider(0, 2, value=1, label="padding P", show_value=True)
    im_pixel = mo.ui.slider(0, 63, value=7, label="output pixel r (column r of cols)", show_value=True)
    mo.vstack(
        [
            mo.md(r"""
    ## 4. im2col: a convolution is a matrix product

    Copy every window of the padded input into one **column** of a matrix, the column matrix
    (`torch.nn.functional.unfold` returns it in this layout). The convolution is then one product
    with the weights flattened to $W_2 \in \mathbb{R}^{C_{out}\times C_{in}K^2}$:

    $$
    \text{cols} = \operatorname{im2col}(x) \in \mathbb{R}^{C_{in}K^2 \times L}, \qquad
    Y = W_2\,\text{cols} \;(+\, b), \qquad L = H_{out}W_{out} .
    $$

    Column $r$ of cols holds the window of output pixel $r = p\,W_{out} + q$. Pick $r$: its
    window is lit on the input, and so is column $r$ of cols (drawn lying down, as row $r$ of
    $\text{cols}^\top$, so that it reads left to right like the weights, which sit below it tap
    for tap). The output value is their dot product. The matrix drawn here is the page's
    `im2col` (the code cell above: one loop per tap, as in `conv2d_loops`).
    """),
            mo.hstack([im_size, im_channels, im_kernel, im_stride, im_padding], wrap=True),
            im_pixel,
        ]
    )
    return (im_channels, im_kernel, im_padding, im_pixel, im_size, im_stride)


@app.function
def im2col(x, k, stride=1, padding=0, dilation=1):
    """Every K×K window of the padded input as one column, the layout of `torch.nn.functional.unfold`:

        cols[c·K² + i·K + j, p·W_out + q] = x_pad[c, pS + iD, qS + jD],    cols ∈ R^{C·K² × L}

    so that the convolution is one matrix product, Y = W.reshape(C_out, C·K²) @ cols."""
    x_pad = np.pad(x, ((0, 0), (padding, padding), (padding, padding)))
    h_out = (x_pad.shape[1] - dilation * (k - 1) - 1) // stride + 1
    w_out = (x_pad.shape[2] - dilation * (k - 1) - 1) // stride + 1
    cols = np.empty((x.shape[0], k, k, h_out, w_out))
    for i in range(k):
        for j in range(k):
            cols[:, i, j] = x_pad[
                :,
                i * dilation : i * dilation + stride * h_out : stride,
                j * dilation : j * dilation + stride * w_out : stride,
            ]
    return cols.reshape(x.shape[0] * k * k, h_out * w_out)


@app.cell
def _(im_channels, im_kernel, im_padding, im_pixel, im_size, im_stride):
    # Small integers, so every product can be checked by hand (the backward pass below draws the same).
    im_x, im_w = lab.im2col_example(im_channels.value, im_size.value, im_kernel.value)
    try:
        _w_out = lab.conv_report(im_size.value, im_kernel.value, im_stride.value, im_padding.value).output_size or 1
        _r = min(im_pixel.value, _w_out * _w_out - 1)
        view = lab.im2col_view(
            im_x, im_w, im_stride.value, im_padding.value, 1, _r // _w_out, _r % _w_out, unfold=im2col
        )
    except ValueError as _err:
        view = None
        _shown = ui.problem(_err)
    else:
        _terms = " + ".join(
            f"{a:g}·{b:g}" if b >= 0 else f"{a:g}·({b:g})" for a, b in zip(view.row_values, view.weights)
        )
        _clipped = f" (the output has only {_w_out * _w_out} pixels: showing the last)" if im_pixel.value != _r else ""
        _cells = lab.im2col_cells(view, im_padding.value)
        _inputs = [
            plot.cell_table(
                _c["kind"], _c["text"], title=f"padded input, channel {_name.split()[-1]}: the window of r = {view.row}"
            )
            for _name, _c in _cells.items()
            if _name.startswith("input")
        ]
        _cols = plot.cell_table(
            _cells["cols"]["kind"],
            _cells["cols"]["text"],
            title="colsᵀ: one row per output pixel",
            row_title="output pixel r",
            col_title="tap t = (c, i, j)",
        )
        _weights = plot.cell_table(
            _cells["weights"]["kind"],
            _cells["weights"]["text"],
            title="the weights W₂[0] that row r meets",
            row_title="output channel 0",
            col_title="tap t (as in colsᵀ)",
        )
        _shown = mo.vstack(
            [
                mo.hstack([mo.vstack(_inputs), mo.vstack([_cols, _weights])], justify="start", gap=2),
                mo.md(
                    f"Output pixel r = {view.row} is (p, q) = ({view.out_row}, "
                    f"{view.out_col}){_clipped}. Column r of cols times the weights:\n\n"
                    f"{_terms} = **{view.value:g}**\n\n"
                    f"`conv2d` gives {view.conv2d[view.out_row, view.out_col]:g} at the same "
                    f"pixel; the whole matrix product equals `conv2d` everywhere: "
                    f"{bool(np.allclose(view.output, view.conv2d))}."
                ),
            ]
        )
    _shown
    return im_w, im_x, view


@app.cell(hide_code=True)
def _():
    # its own cell: the sliders below re-run the figure, not this prose and its formulas
    mo.md(r"""
    ### The backward pass is two transposed products

    Given the upstream gradient $G = \partial L/\partial Y \in \mathbb{R}^{C_{out}\times L}$, the
    chain rule through $Y = W_2\,\text{cols}$ gives

    $$
    \frac{\partial L}{\partial W_2} = G\,\text{cols}^\top, \qquad
    \frac{\partial L}{\partial\,\text{cols}} = W_2^\top G, \qquad
    \frac{\partial L}{\partial x} = \operatorname{col2im}\!\Big(W_2^\top G\Big).
    $$

    `col2im` adds each entry of the column matrix back onto the pixel it was copied from, so a
    pixel inside several windows collects several gradient terms. The map on the left counts them;
    on the right, the gradients computed by hand from these formulas and by the engine's autograd.
    """)
    return


@app.cell
def _(im_channels, im_kernel, im_padding, im_size, im_stride):
    _report = lab.conv_report(im_size.value, im_kernel.value, im_stride.value, im_padding.value)
    mo.stop(not _report.ok, mo.md("*No valid convolution with these settings.*"))
    _x, _w = lab.im2col_example(im_channels.value, im_size.value, im_kernel.value)  # the x and W above
    _g = np.random.default_rng(6).normal(size=(1, _report.output_size, _report.output_size))
    backward = lab.im2col_backward(_x, _w, _g, im_stride.value, im_padding.value)
    backward_gap = backward.largest_gap
    mo.vstack(
        [
            mo.hstack(
                [
                    plot.value_table(
                        backward.window_count, "windows per pixel", cmap="Purples", symmetric=False, fmt="{:.0f}"
                    ),
                    plot.image_tiles(
                        {"∂L/∂x by col2im": backward.grad_input[0], "∂L/∂x by autograd": backward.autograd_input[0]},
                        symmetric=("∂L/∂x by col2im", "∂L/∂x by autograd"),
                        width=170,
                    ),
                ],
                widths=[1, 2],
            ),
            mo.md(
                f"Largest difference between the hand-written backward pass and autograd, over "
                f"∂L/∂x and ∂L/∂W: **{backward_gap:.1e}**."
            ),
        ]
    )
    return backward, backward_gap


@app.cell
def _():
    filter_name = mo.ui.dropdown(
        options=list(lab.CLASSIC_FILTERS) + ["edge magnitude"], value="vertical edges (Sobel x)", label="filter"
    )
    filter_noise = mo.ui.slider(0.0, 0.5, step=0.05, value=0.0, label="image noise σ", show_value=True)
    filter_repeat = mo.ui.slider(1, 8, value=1, label="apply n times", show_value=True)
    filter_stride = mo.ui.slider(1, 4, value=1, label="stride", show_value=True)
    mo.vstack(
        [
            mo.md(r"""
    ## 5. Classic filters

    Before learning, people designed kernels by hand. A kernel whose weights sum to 1 keeps the
    brightness (blur, sharpen); one whose weights sum to 0 answers only to change (edges, the
    Laplacian). Sobel's $x$ kernel is the outer product of a vertical smoothing and a horizontal
    derivative: it differentiates along each row (across columns, so it answers to vertical
    edges) and averages three neighbouring rows with weights $1, 2, 1$ (down each column):

    $$
    G_x = \begin{pmatrix} 1 \\ 2 \\ 1 \end{pmatrix}\begin{pmatrix} -1 & 0 & 1 \end{pmatrix}
    = \begin{pmatrix} -1 & 0 & 1 \\ -2 & 0 & 2 \\ -1 & 0 & 1 \end{pmatrix}, \qquad
    \lVert \nabla x \rVert \approx \sqrt{(G_x \star x)^2 + (G_y \star x)^2}.
    $$

    Each result below is `engine.functional.conv2d` with padding $K//2$.
    """),
            mo.hstack([filter_name, filter_noise, filter_repeat, filter_stride], wrap=True),
        ]
    )
    return filter_name, filter_noise, filter_repeat, filter_stride


@app.cell
def _(filter_name, filter_noise, filter_repeat, filter_stride):
    # The image is drawn again in each figure that shows it (a seeded draw, under a millisecond), so
    # that the noise re-runs only these figures and the filter controls only theirs.
    _image = lab.sample_image(48, noise=filter_noise.value, seed=0)
    filtered = lab.apply_filter(_image, filter_name.value, filter_stride.value, filter_repeat.value)
    _kernel = (
        lab.CLASSIC_FILTERS["vertical edges (Sobel x)"]
        if filter_name.value == "edge magnitude"
        else lab.CLASSIC_FILTERS[filter_name.value]
    )
    _signed = filter_name.value in (
        "vertical edges (Sobel x)",
        "horizontal edges (Sobel y)",
        "Laplacian",
        "emboss",
        "sharpen",
    )
    _result = f"result {filtered.shape[0]}×{filtered.shape[1]}"
    _kernel_title = "kernel" + (" (Sobel x, with y)" if filter_name.value == "edge magnitude" else "")
    mo.vstack(
        [
            mo.hstack(
                [
                    plot.image_tiles({"image": _image}, width=240),
                    plot.value_table(_kernel, _kernel_title),
                    plot.image_tiles({_result: filtered}, symmetric=(_result,) if _signed else (), width=240),
                ],
                widths=[1, 1, 1],
            ),
            mo.md(
                f"Kernel weights sum to **{_kernel.sum():.3g}**; result range "
                f"[{filtered.min():.2f}, {filtered.max():.2f}]. Red is positive, blue negative."
            ),
        ]
    )
    return (filtered,)


@app.cell
def _(filter_name):
    kernel_edit = widgets.matrix(
        lab.CLASSIC_FILTERS.get(filter_name.value, lab.CLASSIC_FILTERS["vertical edges (Sobel x)"]),
        min_value=-5.0,
        max_value=5.0,
        step=0.1,
        label="kernel (cross-correlation weights)",
    )
    mo.vstack(
        [
            mo.md(r"""
    **Your own kernel.** The matrix below starts as the filter chosen above (Sobel $x$ for the
    edge magnitude); drag an entry or select it and type a value. The result is section 1's
    `conv2d_loops` of the image with your kernel, padding $K//2$: edit that cell and this result
    follows.
    """),
            kernel_edit,
        ]
    )
    return (kernel_edit,)


@app.cell
def _(filter_noise, kernel_edit):
    own_kernel = widgets.as_array(kernel_edit.value)
    _image = lab.sample_image(48, noise=filter_noise.value, seed=0)  # the image above
    own_filtered = conv2d_loops(_image[None], own_kernel[None, None], padding=own_kernel.shape[0] // 2)[0]
    mo.vstack(
        [
            mo.hstack(
                [
                    plot.image_tiles({"image": _image}, width=240),
                    plot.value_table(own_kernel, "your kernel"),
                    plot.image_tiles(
                        {f"result {own_filtered.shape[0]}×{own_filtered.shape[1]}": own_filtered}, width=240
                    ),
                ],
                widths=[1, 1, 1],
            ),
            mo.md(
                f"Your kernel's weights sum to **{own_kernel.sum():.3g}**: "
                + (
                    "it keeps the brightness of flat regions."
                    if abs(own_kernel.sum() - 1) < 1e-9
                    else "flat regions map to zero: it answers to change only."
                    if abs(own_kernel.sum()) < 1e-9
                    else f"flat regions are scaled by {own_kernel.sum():.3g}."
                )
            ),
        ]
    )
    return (own_filtered,)


@app.cell
def _():
    compose_first = mo.ui.dropdown(
        options=list(lab.CLASSIC_FILTERS), value="vertical edges (Sobel x)", label="first kernel a"
    )
    compose_second = mo.ui.dropdown(options=list(lab.CLASSIC_FILTERS), value="box blur", label="then kernel b")
    mo.vstack(
        [
            mo.md(r"""
    ### Two convolutions in a row

    Cross-correlating with $a$ and then with $b$ reads $x[i+u+v]$ with weight $a[u]\,b[v]$, so it
    is **one** cross-correlation with the kernel $c[t] = \sum_{u+v=t} a[u]\,b[v]$, which is
    $(K_a + K_b - 1)$ pixels wide. This holds only while nothing sits between the two layers. A
    CNN puts a nonlinearity there (a ReLU), and then no single kernel reproduces the pair: the
    network stays a deeper function (notebook 01: without nonlinearities, depth adds nothing).
    What composes in every case is the **receptive field** of section 3: the pair still reads a
    $(K_a + K_b - 1)$-wide window.

    Below, both routes on the image above, without padding so that no border effect interferes.
    """),
            mo.hstack([compose_first, compose_second], justify="start"),
        ]
    )
    return compose_first, compose_second


@app.cell
def _(compose_first, compose_second, filter_noise):
    composition = lab.two_convolutions(
        lab.sample_image(48, noise=filter_noise.value, seed=0), compose_first.value, compose_second.value
    )
    mo.vstack(
        [
            mo.hstack(
                [
                    plot.image_tiles(
                        {
                            f"one {composition.composed.shape[0]}×{composition.composed.shape[1]} "
                            "kernel c": composition.composed
                        },
                        width=180,
                        symmetric=(f"one {composition.composed.shape[0]}×{composition.composed.shape[1]} kernel c",),
                    ),
                    mo.md(
                        f"- b ⋆ (a ⋆ x) against c ⋆ x, largest difference: "
                        f"**{composition.gap_linear:.1e}** (rounding only)\n"
                        f"- b ⋆ ReLU(a ⋆ x) against c ⋆ x: **{composition.gap_relu:.3g}** "
                        f"(the ReLU zeroed {composition.relu_changed:.0%} of a ⋆ x)"
                    ),
                ],
                justify="start",
            ),
        ]
    )
    return (composition,)


@app.cell
def _():
    cost_cin = mo.ui.slider(steps=[1, 3, 8, 16, 32, 64, 128, 256, 512], value=64, label="C_in", show_value=True)
    cost_cout = mo.ui.slider(steps=[1, 8, 16, 32, 64, 128, 256, 512], value=128, label="C_out", show_value=True)
    cost_kernel = mo.ui.slider(1, 7, step=2, value=3, label="kernel K", show_value=True)
    cost_size = mo.ui.slider(steps=[1, 7, 14, 28, 56, 112, 224], value=56, label="output H = W", show_value=True)
    cost_groups = mo.ui.slider(steps=[1, 2, 4, 8, 16, 32], value=4, label="groups g", show_value=True)
    mo.vstack(
        [
            mo.md(r"""
    ### Cheaper convolutions: 1×1, grouped, depthwise-separable

    A standard $K\times K$ layer connects every output channel to every input channel at every
    tap. Three ways to spend less:

    - a **1×1** convolution mixes channels at each pixel and nothing else ($K = 1$);
    - a **grouped** convolution splits the channels into $g$ groups that never meet: weights and
      work divided by $g$ (`groups=g`);
    - a **depthwise-separable** pair (MobileNet, Xception) filters each channel alone with a
      $K\times K$ **depthwise** convolution (`groups=C_in`), then mixes channels with a 1×1
      **pointwise** one. Its multiply-adds are $HW(C_{in}K^2 + C_{in}C_{out})$, a fraction
      $\frac{1}{C_{out}} + \frac{1}{K^2}$ of the standard layer's.

    The pair is a standard convolution whose kernel is constrained: $W[o, c] = P[o, c]\,D[c]$,
    every output channel mixing the same $C_{in}$ spatial filters.
    """),
            mo.hstack([cost_cin, cost_cout, cost_kernel, cost_size, cost_groups], wrap=True),
        ]
    )
    return cost_cin, cost_cout, cost_groups, cost_kernel, cost_size


@app.cell
def _(cost_cin, cost_cout, cost_groups, cost_kernel, cost_size):
    try:
        conv_cost_rows = lab.conv_costs(
            cost_cin.value, cost_cout.value, cost_kernel.value, cost_size.value, cost_groups.value
        )
    except ValueError as _err:
        conv_cost_rows = None
        _shown = ui.problem(_err)
    else:
        _base = conv_cost_rows[0].macs
        _shown = mo.md(
            "\n".join(
                ["| layer | weights | multiply-adds | share of standard |", "|---|---|---|---|"]
                + [f"| {c.name} | {c.params:,} | {c.macs:,} | {c.macs / _base:.3f} |" for c in conv_cost_rows]
            )
        )
    _shown
    return (conv_cost_rows,)


@app.cell
def _():
    separable = lab.separable_check(c_in=8, c_out=16, kernel=3, seed=0)
    mo.md(
        f"A depthwise `Conv2d(8, 8, 3, groups=8)` then a pointwise `Conv2d(8, 16, 1)` against "
        f"one `conv2d` with the kernel P[o, c]·D[c]: largest difference "
        f"**{separable.gap:.1e}** (float32 rounding). Weights: **{separable.separable_params}** "
        f"for the pair, **{separable.standard_params}** for a free standard 3×3 layer."
    )
    return (separable,)


@app.cell
def _():
    exercises_kernels = {
        "compose": exercises.NumberExercise(
            question="**Exercise 5.** A 3 × 3 blur followed by a 5 × 5 kernel, nothing in between: "
            "how many pixels wide is the one kernel that does both?",
            truth=lab.compose_kernels(np.ones((3, 3)), np.ones((5, 5))).shape[0],
            hint="c[t] sums a[u]·b[v] over u + v = t, with u from 0 to 2 and v from 0 to 4.",
            placeholder="kernel width",
        ),
        "separable": exercises.NumberExercise(
            question="**Exercise 6.** A depthwise-separable 3×3 layer from 64 to 128 channels, "
            "without biases: how many weights?",
            truth=lab.separable_check(64, 128, 3).separable_params,
            hint="depthwise: one 3×3 filter per input channel; pointwise: a 128 × 64 matrix.",
            placeholder="weights",
        ),
    }
    answers_kernels = ui.answer_boxes(exercises_kernels)
    return answers_kernels, exercises_kernels


@app.cell
def _(answers_kernels, exercises_kernels):
    ui.exercise_list("", exercises_kernels, answers_kernels)
    return


@app.cell
def _():
    equi_shift = mo.ui.slider(0, 6, value=2, label="shift k (pixels)", show_value=True)
    equi_stride = mo.ui.slider(1, 2, value=1, label="conv stride S", show_value=True)
    equi_pool = mo.ui.dropdown(options={"none": 1, "2×2 max-pool": 2}, value="none", label="pooling")
    equi_digit = mo.ui.slider(0, 359, value=0, label="test digit #", show_value=True)
    mo.vstack(
        [
            mo.md(r"""
    ## 6. Translation equivariance

    Weight sharing has a consequence that is the reason convolutions suit images: shift the input
    by $k$ pixels and a stride-1 convolution's output shifts by exactly $k$ pixels,
    $F(T_k x) = T_k F(x)$. A dense layer, with one weight per (input pixel, output unit) pair, has
    no such structure: the output of a shifted digit is unrelated to the shifted output.

    A stride $S$ or a $p\times p$ pool puts the output on a grid $S\cdot p$ times coarser. A shift
    by a multiple of $S\cdot p$ moves the output by $k/(S\cdot p)$ cells, exactly; any other shift
    lands between output cells, and no output shift matches. Averaging the whole map of a stride-1
    convolution (as a classifier head does) turns equivariance into invariance: the average does
    not move at all.

    Below, an 8×8 test digit sits in a 24×24 canvas; F is a random 3×3 convolution (padding 1)
    with the chosen stride and pooling, and the error is $\lVert F(T_k x) - T_{k'} F(x)\rVert /
    \lVert F(x)\rVert$ for the output shift $k'$ that fits best.
    """),
            mo.hstack([equi_shift, equi_stride, equi_pool, equi_digit], wrap=True),
        ]
    )
    return equi_digit, equi_pool, equi_shift, equi_stride


@app.cell
def _(
    digits_heldout,
    equi_digit,
    equi_pool,
    equi_shift,
    equi_stride,
):
    equivariance = lab.shift_equivariance(
        digits_heldout[0][equi_digit.value, 0], equi_shift.value, equi_stride.value, equi_pool.value, seed=0
    )
    _e = equivariance
    mo.vstack(
        [
            plot.image_tiles(
                {
                    "x": _e.image,
                    f"T_{_e.shift} x": _e.shifted,
                    "conv F(x)": _e.conv_map,
                    f"conv F(T_{_e.shift} x)": _e.conv_map_shifted,
                    "dense D(x)": _e.dense_map,
                    f"dense D(T_{_e.shift} x)": _e.dense_map_shifted,
                },
                width=130,
            ),
            mo.md(
                f"- convolution: relative error **{_e.conv_error:.2g}** against the output shifted "
                f"by k' = {_e.out_shift}\n"
                f"- dense layer: relative error **{_e.dense_error:.2g}** against the output shifted "
                f"by k = {_e.shift}\n"
                f"- change of the conv map's global average: **{_e.conv_pooled:.2g}** of its size"
            ),
        ]
    )
    return (equivariance,)


@app.cell
def _(digits_heldout):
    _probe = lab.shift_equivariance(digits_heldout[0][0, 0], 4, stride=2, pool=2)
    exercise_equivariance = exercises.NumberExercise(
        question="**Exercise 7.** A stride-2 convolution followed by a 2×2 max-pool. Shift the "
        "input 4 pixels to the right: by how many cells does the output move?",
        truth=_probe.out_shift,
        hint="each output cell covers stride × pool = 4 input pixels.",
        explanation=f"(Measured: relative error {_probe.conv_error:.1g} at that shift.)",
    )
    answer_equivariance = ui.answer_box(exercise_equivariance, placeholder="cells")
    return answer_equivariance, exercise_equivariance


@app.cell
def _(answer_equivariance, exercise_equivariance):
    ui.exercise(exercise_equivariance, answer_equivariance)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 7. A small CNN reads handwritten digits

    Two convolution blocks (conv with 'same' padding, ReLU, $2\times2$ max-pool) and a linear
    layer classify the 1,797 real $8\times8$ digits of the UCI set (`engine.data.load_digits`).
    This is the network, `CNN`, written with the engine's layers:
    """)
    return


@app.class_definition
class CNN(nn.Module):
    """conv(1→C, K×K, 'same') → ReLU → 2×2 max-pool → conv(C→2C, 3×3, 'same') → ReLU → 2×2 max-pool
    → linear(2C·(S/4)² → 10): for an S×S image, logits = CNN(x) [N, 10]."""

    def __init__(self, n_filters=12, kernel_size=3, n_classes=10, image_size=8):
        super().__init__()
        c, k = n_filters, kernel_size
        self.conv1 = nn.Conv2d(1, c, k, padding=k // 2)
        self.conv2 = nn.Conv2d(c, 2 * c, 3, padding=1)
        self.fc = nn.Linear(2 * c * (image_size // 4) ** 2, n_classes)

    def first_layer(self, x):
        """The first block's feature maps, ReLU(conv1(x)): [N, C, S, S], drawn below."""
        return F.relu(self.conv1(x))

    def forward(self, x):
        h = F.max_pool2d(self.first_layer(x), 2)  # [N, C, S/2, S/2]
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)  # [N, 2C, S/4, S/4]
        return self.fc(h.flatten(1))  # [N, 10]


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    It learns by mini-batch Adam on the cross-entropy of its logits, epoch after epoch over the
    fixed 1,437 training images, scored after each epoch on those and on the 360 held-out ones:
    """)
    return


@app.function
def train_cnn(model, X, y, X_test, y_test, epochs=12, lr=3e-3, batch_size=32, seed=0, on_epoch=None):
    """Mini-batch Adam on the cross-entropy of the logits f_θ(x):

        L(θ) = −(1/B) Σ_b log softmax(f_θ(x_b))[y_b],    θ ← Adam(θ, ∇_θ L)

    One entry per epoch in the returned history: mean loss, training and held-out accuracy."""
    opt = optim.Adam(model.parameters(), lr=lr)
    batches = data.DataLoader(
        np.asarray(X, np.float32), np.asarray(y, np.int64), batch_size=batch_size, shuffle=True, seed=seed
    )
    history = lab.CNNHistory()
    for epoch in range(1, epochs + 1):
        model.train()
        losses = []
        for xb, yb in batches:
            loss = F.cross_entropy(model(engine.Tensor(xb)), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.data))
        history.loss.append(float(np.mean(losses)))
        if not np.isfinite(history.loss[-1]):
            history.stopped = f"the loss became non-finite at epoch {epoch}: lower the learning rate"
            break
        model.eval()
        history.train_acc.append(lab.cnn_accuracy(model, X, y))
        history.test_acc.append(lab.cnn_accuracy(model, X_test, y_test))
        if on_epoch is not None:
            on_epoch(epoch, history)
    model.eval()
    return history


@app.function
def train_digits_cnn(n_filters=12, kernel_size=3, epochs=12, lr=3e-3, on_epoch=None):
    """`CNN` (initial weights from seed 0) trained by `train_cnn` (shuffled with seed 0) on the
    1,437 training digits; its held-out confusion matrix on the 360 others."""
    X, y = data.load_digits("train", channel_dim=True)
    X_test, y_test = data.load_digits("test", channel_dim=True)
    with engine.random.fork_rng(0):
        model = CNN(n_filters, kernel_size)
    history = train_cnn(model, X, y, X_test, y_test, epochs=epochs, lr=lr, seed=0, on_epoch=on_epoch)
    settings = {"n_filters": n_filters, "kernel_size": kernel_size, "epochs": epochs, "lr": lr}
    return lab.DigitsCNN(model, history, lab.confusion(model, X_test, y_test), settings)


@app.function
def default_cnn_state():
    """The CNN of the section's default settings (`lab.CNN_DEFAULTS`), as the page opens on it:
    its parameters by name and its history."""
    trained = train_digits_cnn(**lab.CNN_DEFAULTS)
    h = trained.history
    return {
        "settings": dict(lab.CNN_DEFAULTS),
        "parameters": {k: np.asarray(v.data) for k, v in trained.model.state_dict().items()},
        "history": {
            "loss": np.asarray(h.loss),
            "train_acc": np.asarray(h.train_acc),
            "test_acc": np.asarray(h.test_acc),
        },
    }


@app.cell(hide_code=True)
def _():
    cnn_filters = mo.ui.slider(2, 16, value=12, label="filters in layer 1", show_value=True)
    cnn_kernel = mo.ui.dropdown(options={"3×3": 3, "5×5": 5, "7×7": 7}, value="3×3", label="kernel")
    cnn_epochs = mo.ui.slider(1, 15, value=12, label="epochs", show_value=True)
    cnn_lr = mo.ui.dropdown(
        options={"1e-4": 1e-4, "1e-3": 1e-3, "3e-3": 3e-3, "1e-2": 1e-2, "1e-1": 1e-1},
        value="3e-3",
        label="learning rate",
    )
    cnn_train = mo.ui.run_button(label="Train the CNN")
    digits_train = data.load_digits("train", channel_dim=True)
    digits_heldout = data.load_digits("test", channel_dim=True)
    # what the Train buttons trained, with the settings and lesson code they trained with
    cnn_run, set_cnn_run = mo.state(None)
    baselines_run, set_baselines_run = mo.state(None)
    mo.vstack(
        [
            mo.md(r"""
    The page opens on `CNN` trained by `train_cnn` with the default settings, shipped with the
    course; the **Train the CNN** button runs `train_cnn` on your settings. The confusion matrix
    counts, for each true digit (row), the predicted digit (column); the first layer's kernels
    and one test digit's feature maps show what the network computes.

    **Change this cell:** in `CNN.first_layer`, put `F.tanh` in place of `F.relu`. The page then
    says in one line that the shipped CNN was trained with other code and does not load it;
    **Train the CNN** trains yours, and its first-layer feature maps, which ReLU kept at zero
    wherever `conv1` was negative, now go negative too.
    """),
            mo.hstack([cnn_filters, cnn_kernel, cnn_epochs, cnn_lr], wrap=True),
            cnn_train,
        ]
    )
    return (
        baselines_run,
        cnn_epochs,
        cnn_filters,
        cnn_kernel,
        cnn_lr,
        cnn_run,
        cnn_train,
        digits_heldout,
        digits_train,
        set_baselines_run,
        set_cnn_run,
    )


@app.cell
def _(cnn_epochs, cnn_filters, cnn_kernel, cnn_lr, cnn_run, cnn_train, set_cnn_run):
    cnn_params = (
        shapes.conv2d_params(1, cnn_filters.value, cnn_kernel.value)
        + shapes.conv2d_params(cnn_filters.value, 2 * cnn_filters.value, 3)
        + shapes.linear_params(2 * cnn_filters.value * 2 * 2, 10)
    )
    # The button trains with the settings above; its CNN stays shown until they or the lesson
    # cells change, then the shipped one returns.
    _key = (CNN, train_cnn, train_digits_cnn, cnn_filters.value, cnn_kernel.value, cnn_epochs.value, cnn_lr.value)
    if cnn_train.value:
        with mo.status.progress_bar(total=cnn_epochs.value, title="training", remove_on_exit=True) as _bar:
            try:
                _run = train_digits_cnn(*_key[3:], on_epoch=lambda e, h: _bar.update())
                set_cnn_run((_key, _run, ""))
            except Exception as _err:  # noqa: BLE001  (an edited CNN or loop may raise anything: one line, not a traceback)
                set_cnn_run((_key, None, f"Training with this page's code failed: {_err}"))
    elif cnn_run() is not None and cnn_run()[0] != _key:
        set_cnn_run(None)
    mo.md(f"{cnn_params:,} parameters · 1,437 training digits, 360 held-out digits")
    return (cnn_params,)


@app.cell
def _(cnn_run):
    # The page opens on the default CNN as the course ships it, when the page's CNN and loop are
    # the code that trained it.
    if cnn_run() is None:
        trained_cnn, cnn_note = lab.shipped_cnn(CNN, train_cnn, train_digits_cnn)
    else:
        trained_cnn, cnn_note = cnn_run()[1:]
    mo.stop(trained_cnn is None, mo.callout(mo.md(cnn_note[:1].upper() + cnn_note[1:] + "."), kind="warn"))
    cnn, cnn_history, cnn_confusion = (trained_cnn.model, trained_cnn.history, trained_cnn.confusion)
    mo.vstack([cnn_summary(trained_cnn), cnn_kernels_figure(trained_cnn)])
    return cnn, cnn_confusion, cnn_history, trained_cnn


@app.cell
def _(trained_cnn):
    # A click on a cell of the confusion matrix picks its pair of digits, whose images the next
    # cell shows.
    confusion_chart = ui.chart_control(confusion_heatmap(trained_cnn))
    return (confusion_chart,)


@app.cell
def _(cnn, cnn_confusion, confusion_chart, digits_heldout):
    # The digits of the clicked cell; until a cell is clicked, the CNN's most frequent mistake.
    _images, _labels = digits_heldout
    _mistakes = cnn_confusion - np.diag(np.diag(cnn_confusion))
    _worst = np.unravel_index(int(np.argmax(_mistakes)), _mistakes.shape)
    _actual = int(ui.selected(confusion_chart, "cell_pick", "actual", default=[_worst[0]])[0])
    _predicted = int(ui.selected(confusion_chart, "cell_pick", "predicted", default=[_worst[1]])[0])
    _which = np.flatnonzero((_labels == _actual) & (lab.heldout_predictions(cnn) == _predicted))
    _kind = "read correctly" if _actual == _predicted else "misread"
    _shown = (
        plot.image_tiles({f"#{i}": _images[i, 0] for i in _which[:12]}, width=64)
        if _which.size
        else mo.md("*No held-out digit falls in this cell.*")
    )
    mo.hstack(
        [
            confusion_chart,
            mo.vstack(
                [
                    mo.md(
                        f"**{_which.size}** held-out {_actual}s {_kind} as **{_predicted}**"
                        + (f" (the first {min(12, _which.size)}):" if _which.size else ".")
                    ),
                    _shown,
                ]
            ),
        ],
        widths=[3, 2],
    )
    return


@app.cell
def _():
    # the digit slider is made in a cell of its own, so that moving it re-sends only the reading below
    cnn_image = mo.ui.slider(0, 359, value=0, label="held-out digit #", show_value=True)
    cnn_image
    return (cnn_image,)


@app.cell
def _(cnn_image, trained_cnn):
    cnn_reading(trained_cnn, cnn_image.value)
    return


@app.cell
def _():
    # made and shown here: a choice re-creates the canvas below, not this menu and its prose
    draw_start = mo.ui.dropdown(
        options={"blank": -1, **{f"held-out #{i}": i for i in range(10)}}, value="held-out #0", label="start from"
    )
    mo.vstack(
        [
            mo.md("""
    **Draw a digit.** Draw on the canvas (or start from a held-out digit with the menu): the
    drawing is reduced to 8×8 the way the UCI scans were (a 32×32 scan, then the mean of each
    4×4 block) and classified by the CNN trained above.
    """),
            draw_start,
        ]
    )
    return (draw_start,)


@app.cell
def _(digits_heldout, draw_start):
    digit_canvas = widgets.canvas(
        size=192, start=None if draw_start.value < 0 else digits_heldout[0][draw_start.value, 0]
    )
    digit_canvas
    return (digit_canvas,)


@app.cell
def _(digit_canvas, draw_start, trained_cnn):
    # A held-out digit enlarged on the canvas comes back unchanged without fitting; a drawing
    # from blank is cropped and centred first, as the scans' digits were.
    drawn_digit = widgets.to_digit(widgets.ink(digit_canvas.value), fit=draw_start.value < 0)
    mo.hstack(
        [
            plot.image_tiles({"your drawing as 8×8": drawn_digit}, width=180),
            cnn_verdict(trained_cnn, np.asarray(drawn_digit, dtype=float).tobytes()),
        ],
        justify="start",
    )
    return (drawn_digit,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 8. What the convolutions add

    Is the CNN's accuracy owed to its convolutions? Two dense models answer, trained by the same
    `train_cnn` (Adam, the same learning rate, batches of 32, the same epochs) on the same 1,437
    digits, each pixel its own input:

    - **softmax regression**, one linear layer: $p(y \mid x) = \operatorname{softmax}(Wx + b)_y$,
      $W \in \mathbb{R}^{10\times 64}$;
    - an **MLP** with one hidden layer of 64 ReLU units:
      $\operatorname{softmax}\big(W_2 \operatorname{ReLU}(W_1 x + b_1) + b_2\big)$.

    Neither knows which pixels are neighbours: shuffle the 64 pixels of every image the same way,
    shuffle the columns of $W$ (or $W_1$) to match, and the logits are the same (up to float
    rounding), so anything one of them can learn from the digits it can learn from the shuffled
    digits too. The CNN's first layer reads 3×3 neighbourhoods, with one set of weights at every
    position.
    """)
    return


@app.class_definition
class SoftmaxRegression(nn.Module):
    """Softmax regression on the S² pixels: logits = W x + b [N, 10], p(y | x) = softmax(logits)_y."""

    def __init__(self, n_classes=10, image_size=8):
        super().__init__()
        self.fc = nn.Linear(image_size**2, n_classes)

    def forward(self, x):
        return self.fc(x.flatten(1))  # [N, 10]


@app.class_definition
class MLP(nn.Module):
    """One hidden layer of H ReLU units on the S² pixels: logits = W₂ ReLU(W₁ x + b₁) + b₂ [N, 10]."""

    def __init__(self, hidden=64, n_classes=10, image_size=8):
        super().__init__()
        self.fc1 = nn.Linear(image_size**2, hidden)
        self.fc2 = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))  # [N, 10]


@app.function
def train_digits_baselines(epochs=12, lr=3e-3, on_epoch=None):
    """`SoftmaxRegression` and `MLP` (initial weights from seed 0), each trained by `train_cnn`
    (shuffled with seed 0) on the 1,437 training digits, exactly as `train_digits_cnn` trains the
    CNN: {name: (model, history)}."""
    X, y = data.load_digits("train", channel_dim=True)
    X_test, y_test = data.load_digits("test", channel_dim=True)
    trained = {}
    for name, make in zip(lab.BASELINE_NAMES, (SoftmaxRegression, MLP)):
        with engine.random.fork_rng(0):
            model = make()
        trained[name] = (model, train_cnn(model, X, y, X_test, y_test, epochs=epochs, lr=lr, seed=0, on_epoch=on_epoch))
    return trained


@app.function
def default_baselines_state():
    """The two baselines with the CNN's default epochs and learning rate (`lab.CNN_DEFAULTS`), as
    the page opens on them: per model its parameters by name and its history."""
    settings = {"epochs": lab.CNN_DEFAULTS["epochs"], "lr": lab.CNN_DEFAULTS["lr"]}
    return {
        "settings": settings,
        **{
            name: {
                "parameters": {k: np.asarray(v.data) for k, v in model.state_dict().items()},
                "history": {
                    "loss": np.asarray(h.loss),
                    "train_acc": np.asarray(h.train_acc),
                    "test_acc": np.asarray(h.test_acc),
                },
            }
            for name, (model, h) in train_digits_baselines(**settings).items()
        },
    }


@app.function
def train_over_seeds(seeds=lab.SEEDS, epochs=12, lr=3e-3, on_run=None):
    """`CNN`, `SoftmaxRegression` and `MLP`, each trained by `train_cnn` as above once per seed
    (the seed of its initial weights and of its batch order): {name: [model per seed]}."""
    X, y = data.load_digits("train", channel_dim=True)
    X_test, y_test = data.load_digits("test", channel_dim=True)
    runs = {name: [] for name in lab.SEED_MODELS}
    for seed in seeds:
        for name, make in zip(lab.SEED_MODELS, (CNN, SoftmaxRegression, MLP)):
            with engine.random.fork_rng(seed):
                model = make()
            train_cnn(model, X, y, X_test, y_test, epochs=epochs, lr=lr, seed=seed)
            runs[name].append(model)
            if on_run is not None:
                on_run(seed, name)
    return runs


@app.function
def seeds_state():
    """The comparison over seeds the page opens on: `train_over_seeds` at its defaults, each model
    scored on the held-out digits moved one axis at a time (`lab.seed_shift_accuracy`)."""
    return {"accuracy": lab.seed_shift_accuracy(train_over_seeds())}


@app.cell
def _():
    baselines_train = mo.ui.run_button(label="Train the baselines")
    seeds_train = mo.ui.run_button(label="Train the three models with seeds 0 to 4")
    shift_right = mo.ui.slider(-2, 2, value=1, label="shift right (pixels)", show_value=True)
    shift_down = mo.ui.slider(-2, 2, value=0, label="shift down (pixels)", show_value=True)
    mo.vstack(
        [
            mo.md(r"""
    The page opens on both baselines trained with the CNN's default settings, shipped with the
    course; **Train the baselines** trains them with the epochs and learning rate of section 7.

    **Moved digits.** Every model here saw centred digits only. Move the 360 held-out digits
    (blank paper fills in behind them) and score the models again. A convolution is equivariant
    (section 6), and a 2×2 max-pool absorbs part of a one-pixel move; but the CNN's last layer is
    dense over a 2×2 map, so it is not invariant either.
    """),
            baselines_train,
            mo.hstack([shift_right, shift_down], justify="start"),
        ]
    )
    return baselines_train, seeds_train, shift_down, shift_right


@app.cell
def _(baselines_run, baselines_train, cnn_epochs, cnn_lr, set_baselines_run):
    # The button trains the baselines with section 7's epochs and learning rate; they stay shown
    # until those or the lesson cells change.
    _key = (SoftmaxRegression, MLP, train_cnn, train_digits_baselines, cnn_epochs.value, cnn_lr.value)
    if baselines_train.value:
        with mo.status.progress_bar(
            total=2 * cnn_epochs.value, title="training the baselines", remove_on_exit=True
        ) as _bar:
            try:
                _runs = train_digits_baselines(cnn_epochs.value, cnn_lr.value, on_epoch=lambda e, h: _bar.update())
                _trained = lab.DigitsBaselines(
                    {_n: _m for _n, (_m, _h) in _runs.items()},
                    {_n: _h for _n, (_m, _h) in _runs.items()},
                    {"epochs": cnn_epochs.value, "lr": cnn_lr.value},
                )
                set_baselines_run((_key, _trained, ""))
            except Exception as _err:  # noqa: BLE001  (an edited model or loop may raise anything: one line, not a traceback)
                set_baselines_run((_key, None, f"Training with this page's code failed: {_err}"))
    elif baselines_run() is not None and baselines_run()[0] != _key:
        set_baselines_run(None)
    return


@app.cell
def _(baselines_run):
    # The page opens on the shipped baselines when the page's classes and loop are the code that
    # trained them.
    if baselines_run() is None:
        baselines, baselines_note = lab.shipped_baselines(SoftmaxRegression, MLP, train_cnn, train_digits_baselines)
    else:
        baselines, baselines_note = baselines_run()[1:]
    return baselines, baselines_note


@app.cell
def _(baselines, baselines_note, digits_heldout, shift_down, shift_right, trained_cnn):
    mo.stop(baselines is None, mo.callout(mo.md(baselines_note[:1].upper() + baselines_note[1:] + "."), kind="warn"))
    _models = {**baselines.models, "CNN": trained_cnn.model}
    _moved = f"moved ({shift_right.value:+d}, {shift_down.value:+d})"
    baseline_rows = [
        {
            "model": _name,
            "parameters": sum(int(_p.data.size) for _p in _m.parameters()),
            "centred": lab.shifted_accuracy(_m),
            "moved": lab.shifted_accuracy(_m, shift_right.value, shift_down.value),
        }
        for _name, _m in _models.items()
    ]
    _chart = ui.chart(
        plot.grouped_bars(
            [r["model"] for r in baseline_rows],
            {"centred": [r["centred"] for r in baseline_rows], _moved: [r["moved"] for r in baseline_rows]},
            y_title="held-out accuracy",
            y_domain=(0, 1),
            colors={"centred": "validation", _moved: "model"},
            title=f"360 held-out digits, centred and {_moved} (right, down)",
        )
    )
    _example = digits_heldout[0][0, 0]
    _table = "\n".join(
        ["| model | parameters | held-out accuracy, centred | " + _moved + " |", "|---|---|---|---|"]
        + [
            f"| {r['model']} | {r['parameters']:,} | {r['centred']:.1%} ({round(r['centred'] * 360)} of 360) | "
            f"{r['moved']:.1%} |"
            for r in baseline_rows
        ]
    )
    _keeps = max(baseline_rows, key=lambda r: r["moved"])["model"]
    _right = {r["model"]: round(r["centred"] * 360) for r in baseline_rows}
    _size = {r["model"]: r["parameters"] for r in baseline_rows}

    def _more(n):
        return f"**{abs(n)}** {'more' if n >= 0 else 'fewer'}"

    _said = mo.md(f"""
    Centred, the dense models come close: the CNN reads {_more(_right["CNN"] - _right["softmax regression"])}
    of the 360 held-out digits right than softmax regression and
    {_more(_right["CNN"] - _right["MLP"])} than the MLP, which has
    {_size["MLP"] / _size["CNN"]:.1f} times its parameters. These digits are small, centred and
    scaled to one size, so where a pixel sits already says much of what it means.

    Moved, the model that keeps the most here is the **{_keeps}**. Below, the same comparison
    over five trainings of each model.
    """)
    mo.vstack(
        [
            mo.hstack(
                [
                    mo.vstack([mo.md(_table), _said]),
                    plot.image_tiles(
                        {
                            "held-out #0": _example,
                            _moved: lab.shift_digits(_example, shift_right.value, shift_down.value),
                        },
                        width=110,
                    ),
                ],
                justify="start",
                gap=2,
            ),
            _chart,
        ]
    )
    return (baseline_rows,)


@app.cell
def _(seeds_train):
    # The page opens on the shipped runs when the page's models and loop are the code that trained
    # them; the button trains all fifteen (about 12 s; once per process for the same code).
    if seeds_train.value:
        with mo.status.progress_bar(total=15, title="training over seeds", remove_on_exit=True) as _bar:
            try:
                seed_shifts = lab.remembered_seed_shifts(
                    CNN, SoftmaxRegression, MLP, train_cnn, train_over_seeds, on_run=lambda seed, name: _bar.update()
                )
                _note = ""
            except Exception as _err:  # noqa: BLE001  (an edited model or loop may raise anything: one line, not a traceback)
                seed_shifts, _note = None, f"Training with this page's code failed: {_err}"
    else:
        seed_shifts, _note = lab.shipped_seed_shifts(CNN, SoftmaxRegression, MLP, train_cnn, train_over_seeds)
    mo.stop(
        seed_shifts is None,
        mo.vstack([mo.callout(mo.md(_note[:1].upper() + _note[1:] + "."), kind="warn"), seeds_train]),
    )
    _labels = ["centred", "←2", "←1", "→1", "→2", "↑2", "↑1", "↓1", "↓2"]
    _acc = seed_shifts.accuracy
    _m, _s, _k = _acc.shape
    _chart = (
        alt.Chart(
            plot.data(
                shift=np.tile(_labels, _m * _s),
                accuracy=_acc.ravel(),
                model=np.repeat(lab.SEED_MODELS, _s * _k),
            )
        )
        .mark_point(filled=True, opacity=0.75)
        .encode(
            alt.X("shift:N", sort=_labels, title="held-out digits moved (pixels)"),
            alt.XOffset("model:N", sort=list(lab.SEED_MODELS)),
            alt.Y("accuracy:Q", scale=alt.Scale(domain=(0, 1)), title="held-out accuracy"),
            alt.Color(
                "model:N",
                sort=list(lab.SEED_MODELS),
                scale=alt.Scale(range=[plot.color("model"), plot.color("data"), plot.color("target")]),
                title=None,
            ),
        )
        .properties(width="container", height=220, title="each model trained with seeds 0 to 4: one dot per run")
    )
    _best, _runs_n, _lead = seed_shifts.sideways_cnn_best, seed_shifts.sideways_runs, seed_shifts.centred_lead
    _sideways = (
        "at each of the four shifts, for every seed"
        if _best == _runs_n
        else f"in {_best} of the {_runs_n} pairs of seed and shift"
    )
    _ink_rows, _ink_cols = lab.ink_share(rows=(0, -1)), lab.ink_share(rows=(), cols=(0, -1))

    def _between(pair):
        return f"{pair[0]}" if pair[0] == pair[1] else f"{pair[0]} to {pair[1]}"

    mo.vstack(
        [
            ui.chart(_chart),
            mo.md(f"""
    Over the five seeds ({"shipped with the course" if seed_shifts.shipped else "trained by the button with this page's code"}),
    moved sideways by one or two pixels the CNN keeps the most {_sideways}; moved up
    or down, no model keeps more than **{seed_shifts.vertical_kept:.0%}** of its centred accuracy.
    Centred, the CNN reads {_between(_lead["softmax regression"])} more held-out digits right than
    softmax regression and {_between(_lead["MLP"])} more than the MLP, seed for seed. The digits
    were scaled to fill their frame's height: the top and bottom rows hold {_ink_rows:.0%} of the
    training digits' ink, the left and right columns {_ink_cols:.1%}, so a vertical move cuts off
    strokes that no model can read back.
    """),
            seeds_train,
        ]
    )
    return (seed_shifts,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### Where a model looks: saliency maps

    Which pixels does a model's verdict depend on, for one digit? The **saliency map** of
    Simonyan et al. (2014) is the gradient of a class's score (its logit, before the softmax)
    with respect to every input pixel: the backward pass that training runs, stopped at the
    input instead of the weights.
    """)
    return


@app.function
def saliency(model, image, target):
    """The gradient of class ``target``'s score (its logit) with respect to every input pixel:

        S[i, j] = ∂ f_θ(x)[target] / ∂ x[i, j]

    image: [H, W]; returns S [H, W]. Red pixels raise the score when they get brighter, blue
    ones lower it."""
    x = engine.Tensor(np.asarray(image, dtype=np.float32)[None, None], requires_grad=True)
    model(x)[0, target].backward()
    model.zero_grad()  # the parameters' gradients are not wanted here
    return x.grad.numpy()[0, 0]


@app.cell
def _():
    saliency_digit = mo.ui.slider(0, 359, value=0, label="held-out digit #", show_value=True)
    saliency_class = mo.ui.dropdown(
        options={"its true digit": -1, **{str(d): d for d in range(10)}},
        value="its true digit",
        label="score of the class",
    )
    mo.vstack(
        [
            mo.md(r"""
    For softmax regression the score is $W_c x + b_c$, so its map is the weight row $W_c$ itself,
    the same for every digit. The MLP's and the CNN's maps change with the digit: a ReLU passes a
    gradient only where it is active, and a max-pool only through the pixel it picked.

    **Change this cell:** make `saliency` return `x.grad.numpy()[0, 0] * image`, the
    *gradient × input* map. Blank paper then drops out of every map (it is 0), and softmax
    regression's map now changes with the digit.
    """),
            mo.hstack([saliency_digit, saliency_class], justify="start"),
        ]
    )
    return saliency_class, saliency_digit


@app.cell
def _(baselines, digits_heldout, saliency_class, saliency_digit, trained_cnn):
    _image = digits_heldout[0][saliency_digit.value, 0]
    _label = int(digits_heldout[1][saliency_digit.value])
    _target = _label if saliency_class.value < 0 else saliency_class.value
    _models = {"CNN": trained_cnn.model, **(baselines.models if baselines is not None else {})}
    saliency_maps = {_name: saliency(_m, _image, _target) for _name, _m in _models.items()}
    _panels = {
        f"held-out #{saliency_digit.value} (a {_label})": _image,
        **{f"{_name}: ∂score[{_target}]/∂x": _s for _name, _s in saliency_maps.items()},
    }
    mo.vstack(
        [
            plot.image_tiles(_panels, symmetric=tuple(_panels)[1:], width=130),
            mo.md(
                f"The score of class **{_target}**; red pixels raise it when they get "
                "brighter, blue ones lower it (each map on its own scale)."
            ),
        ]
    )
    return (saliency_maps,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 9. Residual blocks

    A deeper stack could always do at least as well as a shallow one: its extra layers would only
    have to pass their input on. Yet He et al. (2016) found plain deep stacks training worse than
    shallow ones, and made passing the input on the default. A **residual block** adds its input
    to what its layers compute, and the chain rule gives the gradient below it:

    $$
    y = x + F(x), \qquad
    \frac{\partial L}{\partial x} = \frac{\partial L}{\partial y}\Big(I + \frac{\partial F}{\partial x}\Big).
    $$

    The identity carries the gradient that reaches a block's output down to its input unchanged,
    and $F$ only adds to it. Without the skip, $y = F(x)$, every block multiplies the gradient by
    $\partial F/\partial x$, and a product of many small factors vanishes. Here $F$ is
    conv → ReLU → conv with a ReLU in front (the "pre-activation" block of He et al.'s second
    paper), so the path from $x$ to $y$ holds nothing but the addition.
    """)
    return


@app.class_definition
class ResidualBlock(nn.Module):
    """y = x + F(x), F(x) = conv₂(ReLU(conv₁(ReLU(x)))) with two 3×3 'same' convolutions of C
    channels; skip=False gives the plain block y = F(x)."""

    def __init__(self, channels=8, skip=True):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.skip = skip

    def forward(self, x):
        f = self.conv2(F.relu(self.conv1(F.relu(x))))
        return x + f if self.skip else f


@app.cell
def _():
    residual = lab.block_gradients(ResidualBlock)
    _kinds = {"plain, y = F(x)": residual.ratio["plain"], "residual, y = x + F(x)": residual.ratio["residual"]}
    _n, _k = len(residual.seeds), len(residual.blocks)
    _chart = (
        alt.Chart(
            plot.data(
                k=np.tile(residual.blocks, 2 * _n),
                ratio=np.concatenate([r.ravel() for r in _kinds.values()]),
                block=np.repeat(list(_kinds), _n * _k),
                seed=np.tile(np.repeat(residual.seeds, _k), 2),
            )
        )
        .mark_line(point=True, opacity=0.7)
        .encode(
            alt.X("k:Q", title="blocks between the output and this input, k"),
            alt.Y("ratio:Q", scale=alt.Scale(type="log"), title="‖∂L/∂x‖ / ‖∂L/∂y‖"),
            alt.Color(
                "block:N",
                scale=alt.Scale(domain=list(_kinds), range=[plot.color("reference"), plot.color("model")]),
                title=None,
            ),
            alt.Detail("seed:N"),
        )
        .properties(width="container", height=220, title="the gradient below k blocks, 5 seeds per kind")
    )
    _plain, _res = residual.ratio["plain"], residual.ratio["residual"]
    _per_block = _plain[:, -1] ** (-1 / _k)  # the geometric mean of the per-block factors, inverted
    mo.vstack(
        [
            ui.chart(_chart),
            mo.md(f"""
    A stem convolution and {_k} blocks of 8 channels at their default initialisation (PyTorch's),
    built with seeds 0 to 4 and run on 8 held-out digits; a random gradient $\\partial L/\\partial y$
    enters at the top (`lab.block_gradients` runs it). Below one plain block
    **{_plain[:, 0].min():.2f} to {_plain[:, 0].max():.2f}** of the gradient's norm is left, below
    {_k} of them at most **{_plain[:, -1].max():.0e}**: on average each block divides it by
    **{_per_block.min():.0f} to {_per_block.max():.0f}** (per seed). Below
    residual blocks it stays between **{_res.min():.2f} and {_res.max():.2f}** of its norm at every
    depth, for every seed.

    **Change this cell:** make `ResidualBlock.forward` return `x + 5 * f`. The residual curves then
    climb with depth (the factors $I + 5\\,\\partial F/\\partial x$ no longer stay near $I$): the
    identity keeps the gradient's size only while $F$ is small next to it, which is why ResNets
    start training with $F$ near zero (Goyal et al., 2017, set the last scale of each block to 0).
    """),
        ]
    )
    return (residual,)


@app.cell
def _():
    def _script():
        import engine
        import engine.functional as F
        from engine import nn

        x = engine.randn(8, 3, 32, 32)  # a batch of 8 RGB images
        conv = nn.Conv2d(3, 16, kernel_size=5, stride=2, padding=2)
        y = F.max_pool2d(F.relu(conv(x)), 2)  # [8, 16, 8, 8]
        n_params = sum(p.data.size for p in conv.parameters())
        size = engine.shapes.conv_output_size(32, 5, stride=2, padding=2)
        field = engine.shapes.receptive_field([(5, 2, 2), (2, 2, 0)])[-1].size
        y.sum().backward()  # gradients reach conv.weight
        return (
            f"`y.shape` = {y.shape} · parameters = {n_params} · conv output size = {size} · "
            f"receptive field = {field} · `conv.weight.grad.shape` = {conv.weight.grad.shape}"
        )

    mo.md(
        "## The same in your own script\n\nEverything above is a few lines with the engine; "
        "the names and arguments are PyTorch's.\n\n" + _script() + "\n\n---\n\n**Where next.** "
        "Convolutions share weights across positions; attention lets every position choose which "
        "others to read. " + toc.nav_md(METADATA["id"])
    )
    return


if __name__ == "__main__":
    app.run()

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="06 · Attention")

with app.setup:
    import marimo as mo
    import numpy as np

    import engine
    from engine import shapes
    from engine.course import check_number, plot, throttled, toc, verdict
    from engine.course.labs import attention as lab


@app.cell(hide_code=True)
def _():
    METADATA = {
        "id": "06_attention",
        "name": "Attention",
        "summary": "Scaled dot-product attention, masks, multi-head shapes, RoPE and sinusoidal "
        "positions, and a tiny attention model.",
        "topics": ["attention", "transformers", "positional_encoding"],
    }
    mo.md(f"""
    # {METADATA["name"]}

    In attention every position of a sequence decides, from the data, which other positions to
    read. By the end of this notebook you will be able to:

    - compute queries, keys, values, the score matrix and the attention weights of a sentence;
    - explain why the scores are divided by $\\sqrt{{d_k}}$, and what temperature does;
    - build causal, padding and sliding-window masks and read their effect on the weights;
    - follow the tensor shapes through multi-head attention and count its parameters;
    - show by experiment that rotary embeddings (RoPE) make scores depend on relative position only;
    - train a tiny attention model and read the rule it found in its attention map.
    """)
    return (METADATA,)


@app.cell(hide_code=True)
def _():
    mo.md(toc.nav_md("06_attention"))
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1. Queries, keys and values

    Each token's embedding $x_i \in \mathbb{R}^{d_{model}}$ is projected three ways: a **query**
    (what it looks for), a **key** (what it offers to be found by) and a **value** (what it passes
    on). Stacking the $L$ tokens as rows:

    $$
    Q = XW_Q, \qquad K = XW_K, \qquad V = XW_V, \qquad W_Q, W_K, W_V \in \mathbb{R}^{d_{model}\times d_k}.
    $$

    The score of query $i$ against key $j$ is a dot product; a softmax over the keys turns each
    row into weights that sum to one, and the output mixes the values with those weights:

    $$
    \operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V .
    $$

    The weights below are random (a trained model learns them), so the pattern is arbitrary; what
    matters is how the scale, the temperature and the mask reshape it.
    """)
    return


@app.cell
def _():
    qkv_dk = mo.ui.slider(1, 64, value=4, label="d_k", show_value=True)
    return (qkv_dk,)


@app.cell
def _():
    qkv_seed = mo.ui.slider(0, 20, value=0, label="random weights #", show_value=True)
    return (qkv_seed,)


@app.cell
def _():
    qkv_scale = mo.ui.dropdown(options=lab.SCALES, value="1/√d_k (standard)",
                               label="scale")
    return (qkv_scale,)


@app.cell
def _():
    qkv_temperature = mo.ui.slider(steps=[0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 20.0], value=1.0,
                                   label="temperature τ", show_value=True)
    return (qkv_temperature,)


@app.cell
def _():
    mask_kind = mo.ui.dropdown(options=list(lab.MASK_KINDS), value="none", label="mask")
    return (mask_kind,)


@app.cell
def _():
    mask_window = mo.ui.slider(1, 10, value=2, label="window", show_value=True)
    return (mask_window,)


@app.cell
def _():
    mask_pad = mo.ui.slider(0, 10, value=3, label="padding tokens at the end", show_value=True)
    return (mask_pad,)


@app.cell
def _(mask_kind, mask_pad, mask_window, qkv_dk, qkv_scale, qkv_seed, qkv_temperature):
    qkv = lab.toy_qkv(d_model=16, d_k=qkv_dk.value, seed=qkv_seed.value)
    _L = len(qkv["tokens"])
    mask = lab.make_mask(mask_kind.value, _L, mask_window.value, mask_pad.value)
    maps = lab.attention_maps(qkv["Q"], qkv["K"], qkv["V"], qkv_scale.value,
                              qkv_temperature.value, mask)
    _labels = [f"{i}:{w}" for i, w in enumerate(qkv["tokens"])]
    _small = qkv_dk.value <= 16
    _scores = plot.heatmap(maps["scores"], x_labels=_labels, y_labels=_labels, x_title="key j",
                           y_title="query i", color_title="score", scheme="blueorange",
                           annotate=True, fmt=".1f", title="scores q·k · scale / τ (blank: masked)")
    _weights = plot.heatmap(maps["weights"], x_labels=_labels, y_labels=_labels,
                            x_title="key j", y_title="query i", color_title="weight",
                            scheme="purples", domain=(0, 1), annotate=True, fmt=".2f",
                            title="attention weights (each row sums to 1)")
    _notes = [f"scale × 1/τ = **{maps['scale']:.3g}** · mean row entropy "
              f"**{maps['entropy'].mean():.2f}** nats (uniform over {_L} keys: {np.log(_L):.2f}) · "
              f"largest weight **{np.nanmax(maps['weights']):.2f}**"]
    if len(maps["empty_rows"]):
        _notes.append(f"Queries {list(maps['empty_rows'])} may attend to no key at all: their "
                      "weights are all zero and their output is zero (the engine never returns NaN).")
    mo.vstack([
        mo.hstack([qkv_dk, qkv_seed, qkv_scale, qkv_temperature], wrap=True),
        mo.hstack([mask_kind, mask_window, mask_pad], wrap=True),
        mo.md("\n\n".join(_notes)),
        mo.hstack([_scores, _weights], widths="equal"),
    ])
    return mask, maps, qkv


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Temperature** divides the scores before the softmax, $\operatorname{softmax}(s/\tau)$: small
    $\tau$ sharpens every row toward its largest score (one key takes everything), large $\tau$
    flattens it toward uniform. The $1/\sqrt{d_k}$ scale is a fixed temperature chosen so that the
    softmax starts in its useful range, as the next section shows.

    **Masks** remove keys before the softmax (their score becomes $-\infty$, their weight $0$):

    - **causal**: query $i$ sees keys $j \le i$ only, so a language model cannot peek at the future;
    - **padding**: sequences in a batch are padded to one length, and nobody may attend to the padding;
    - **sliding window**: each query sees its neighbours within a window, so the cost grows as
      $L \cdot w$ instead of $L^2$.

    ## 2. Why divide by $\sqrt{d_k}$?

    If the entries of $q$ and $k$ are independent with mean 0 and variance 1, each product
    $q_i k_i$ has variance 1, and the sum of $d_k$ of them has variance $d_k$:

    $$
    \operatorname{Var}(q\cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) = d_k,
    \qquad \operatorname{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) = 1 .
    $$

    Scores with a standard deviation of $\sqrt{512} \approx 23$ put almost all the weight on one
    key: the softmax saturates and its gradient to every other key vanishes.
    """)
    return


@app.cell
def _():
    variance_dk = mo.ui.slider(steps=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512], value=64,
                               label="d_k", show_value=True)
    return (variance_dk,)


@app.cell
def _(variance_dk):
    variance = lab.dot_product_variance(variance_dk.value, n=4000, seed=0)
    sweep = lab.scaling_sweep(L=16, n=300, seed=0)
    _lim = max(4.0, 4 * np.sqrt(variance_dk.value))
    _hist = plot.histogram_grid({"q·k (raw)": variance["raw"], "q·k / √d_k": variance["scaled"]},
                                bins=40, x_title="score (same axis for both)", columns=2,
                                range_=(-_lim, _lim),
                                panel_width=260, panel_height=120,
                                flags={"q·k (raw)": f"variance {variance['var_raw']:.1f}",
                                       "q·k / √d_k": f"variance {variance['var_scaled']:.2f}"})
    _var = plot.curves(np.log2(sweep["d_k"]), {"raw": sweep["var_raw"],
                                               "divided by √d_k": sweep["var_scaled"]},
                       x_title="log₂ d_k", y_title="Var(score)", log_y=True,
                       colors={"raw": "error", "divided by √d_k": "model"},
                       title="score variance: d_k raw, 1 when scaled")
    _max = plot.curves(np.log2(sweep["d_k"]), {"raw": sweep["max_raw"],
                                               "divided by √d_k": sweep["max_scaled"]},
                       x_title="log₂ d_k", y_title="largest weight", y_domain=(0, 1),
                       colors={"raw": "error", "divided by √d_k": "model"},
                       title="average largest softmax weight over 16 keys")
    mo.vstack([variance_dk, _hist,
               mo.md(f"For d_k = {variance_dk.value}: sample variance of q·k = "
                     f"**{variance['var_raw']:.1f}** (theory {variance_dk.value}), after dividing by "
                     f"√d_k = **{variance['var_scaled']:.2f}** (theory 1)."),
               mo.hstack([_var, _max], widths="equal")])
    return sweep, variance


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### Check yourself

    **Exercise 1.** Queries and keys have independent entries of variance 1 and $d_k = 256$.
    What is the variance of a raw score $q\cdot k$ (before scaling)?
    """)
    return


@app.cell
def _():
    answer_variance = mo.ui.text(placeholder="variance", label="your answer")
    return (answer_variance,)


@app.cell
def _(answer_variance):
    _sample = lab.dot_product_variance(256, n=20000, seed=1)["var_raw"]
    truth_variance = 256.0  # Var(q·k) = d_k; the engine's sample above agrees within a few %
    mo.vstack([answer_variance, verdict(check_number(
        answer_variance.value, truth_variance,
        "each q_i k_i has variance 1·1 and the d_k products are independent: variances add.",
        rel_tol=0.02)),
        mo.md(f"<small>(A sample of 20 000 pairs gives {_sample:.1f}.)</small>")])
    return (truth_variance,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Exercise 2.** A causal mask over a sequence of $L = 6$ tokens: how many (query, key) pairs
    are allowed to attend?
    """)
    return


@app.cell
def _():
    answer_causal = mo.ui.text(placeholder="allowed pairs", label="your answer")
    return (answer_causal,)


@app.cell
def _(answer_causal):
    truth_causal = int(lab.make_mask("causal", 6).sum())
    mo.vstack([answer_causal, verdict(check_number(
        answer_causal.value, truth_causal,
        "query i sees keys 0 … i, that is i + 1 of them; add 1 + 2 + … + 6."))])
    return (truth_causal,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 3. Multi-head attention: shapes and parameters

    Instead of one attention of width $d_{model}$, multi-head attention runs $H$ smaller ones of
    width $d_k = d_{model}/H$ in parallel, each free to attend to something different, then
    concatenates them and mixes them with $W_O$:

    $$
    \text{head}_h = \operatorname{Attention}(XW_Q^h, XW_K^h, XW_V^h), \qquad
    \operatorname{MHA}(X) = [\text{head}_1; \dots; \text{head}_H]\,W_O .
    $$

    The four projections are $d_{model}\times d_{model}$ whatever $H$, so the parameter count is
    $4(d_{model}^2 + d_{model})$: more heads cost nothing extra, only a larger score tensor
    $[B, H, L, L]$. The table is computed by `engine.shapes` and checked by running
    `nn.MultiheadAttention` on a random batch.
    """)
    return


@app.cell
def _():
    mha_batch = mo.ui.slider(1, 64, value=2, label="batch B", show_value=True)
    return (mha_batch,)


@app.cell
def _():
    mha_length = mo.ui.slider(1, 128, value=10, label="length L", show_value=True)
    return (mha_length,)


@app.cell
def _():
    mha_dmodel = mo.ui.slider(8, 256, step=8, value=64, label="d_model", show_value=True)
    return (mha_dmodel,)


@app.cell
def _():
    mha_heads = mo.ui.slider(1, 16, value=8, label="heads H", show_value=True)
    return (mha_heads,)


@app.cell
def _(mha_batch, mha_dmodel, mha_heads, mha_length):
    mha = lab.mha_shapes(mha_batch.value, mha_length.value, mha_dmodel.value,
                         mha_heads.value)
    _controls = mo.hstack([mha_batch, mha_length, mha_dmodel, mha_heads], wrap=True)
    if not mha["ok"]:
        _shown = mo.callout(mo.md(f"{mha['message']}: each head gets d_model / H columns, so H "
                                  f"must divide d_model. Try H = "
                                  f"{', '.join(str(h) for h in range(1, 17) if mha_dmodel.value % h == 0)}."),
                            kind="warn")
    else:
        _table = ["| stage | shape |", "|---|---|"] + [
            f"| {stage} | `{list(shape)}` |" for stage, shape in mha["rows"]]
        _shown = mo.md("\n".join(_table) + (
            f"\n\nd_k = d_model / H = **{mha['d_k']}** · parameters by formula 4(d² + d) = "
            f"**{mha['params']['total']:,}** · counted on `nn.MultiheadAttention`: "
            f"**{mha['module_params']:,}** · its output {list(mha['output_shape'])}, its "
            f"per-head weights {list(mha['weights_shape'])}"))
    mo.vstack([_controls, _shown])
    return (mha,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Exercise 3.** How many parameters (weights and biases) has `nn.MultiheadAttention(512, 8)`?
    """)
    return


@app.cell
def _():
    answer_mha = mo.ui.text(placeholder="parameter count", label="your answer")
    return (answer_mha,)


@app.cell
def _(answer_mha):
    truth_mha = shapes.multihead_attention_params(512)
    mo.vstack([answer_mha, verdict(check_number(
        answer_mha.value, truth_mha,
        "four d_model × d_model projections (Q, K, V, output), each with d_model biases; "
        "the number of heads does not matter."))])
    return (truth_mha,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 4. Where is each token? Positions

    Attention itself ignores order: permute the tokens and each output is permuted the same way.
    Order comes from position information.

    **Sinusoidal (absolute) positions** add a fixed vector to each embedding, pairs of sines and
    cosines of geometrically spaced frequencies $\omega_i = 10000^{-2i/d}$:

    $$
    PE_{m,2i} = \sin(m\,\omega_i), \qquad PE_{m,2i+1} = \cos(m\,\omega_i) .
    $$

    **Rotary embeddings (RoPE)** rotate instead of add: each pair $(x_{2i}, x_{2i+1})$ of a query
    or key at position $m$ turns by the angle $m\theta_i$, $\theta_i = \text{base}^{-2i/d}$:

    $$
    \begin{pmatrix} x'_{2i} \\ x'_{2i+1} \end{pmatrix} =
    \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i \\ \sin m\theta_i & \cos m\theta_i \end{pmatrix}
    \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}.
    $$

    Rotations compose, $R_m^\top R_n = R_{n-m}$, so $\langle R_m q, R_n k\rangle = \langle q, R_{n-m}k\rangle$:
    the score depends on the positions only through their **offset**. Check it below.
    """)
    return


@app.cell
def _():
    rope_dim = mo.ui.slider(steps=[2, 4, 8, 16, 32, 64, 128], value=16, label="d", show_value=True)
    return (rope_dim,)


@app.cell
def _():
    rope_base = mo.ui.dropdown(options={"100": 100.0, "10 000": 10000.0, "1 000 000": 1e6},
                               value="10 000", label="base")
    return (rope_base,)


@app.cell
def _():
    rope_m = mo.ui.slider(0, 50, value=3, label="query position m", show_value=True)
    return (rope_m,)


@app.cell
def _():
    rope_n = mo.ui.slider(0, 50, value=7, label="key position n", show_value=True)
    return (rope_n,)


@app.cell
def _():
    rope_shift = mo.ui.slider(0, 200, value=40, label="shift both by s", show_value=True)
    return (rope_shift,)


@app.cell
def _(rope_base, rope_dim, rope_m, rope_n, rope_shift):
    _rng = np.random.default_rng(3)
    rope_q = _rng.standard_normal(rope_dim.value)
    rope_k = _rng.standard_normal(rope_dim.value)
    shift_check = lab.rope_shift_check(rope_q, rope_k, rope_m.value, rope_n.value,
                                       rope_shift.value, rope_base.value)
    _pairs = {}
    for _i in sorted({0, rope_dim.value // 4, rope_dim.value // 2 - 1}):
        _t = lab.rope_pair_trajectory(rope_dim.value, _i, 32, rope_base.value)
        _pairs[f"pair {_i} (θ = {_t['theta']:.3g} rad per position)"] = (
            _t["xy"][:, 0], _t["xy"][:, 1], _t["positions"])
    _circle = plot.paths_2d(_pairs, x_title="x₂ᵢ (rotated)", y_title="x₂ᵢ₊₁ (rotated)", height=340,
                            title="a vector of ones at positions 0…31: each pair turns at its own speed")
    mo.vstack([
        mo.hstack([rope_dim, rope_base], justify="start"),
        mo.hstack([rope_m, rope_n, rope_shift], wrap=True),
        mo.md("\n".join([
            "| positions | RoPE score ⟨R_m q, R_n k⟩ | absolute: (q + PE_m)·(k + PE_n) |",
            "|---|---|---|",
            f"| m = {rope_m.value}, n = {rope_n.value} | {shift_check['rope']:.6f} | "
            f"{shift_check['absolute']:.6f} |",
            f"| m = {rope_m.value + rope_shift.value}, n = {rope_n.value + rope_shift.value} | "
            f"{shift_check['rope_shifted']:.6f} | {shift_check['absolute_shifted']:.6f} |",
            "",
            f"Shifting both positions by {rope_shift.value} changes the RoPE score by "
            f"**{abs(shift_check['rope_shifted'] - shift_check['rope']):.1e}** (rounding only) "
            f"and the absolute one by "
            f"**{abs(shift_check['absolute_shifted'] - shift_check['absolute']):.3f}**.",
        ])),
        _circle,
    ])
    return rope_k, rope_q, shift_check


@app.cell
def _(rope_base, rope_dim):
    rope_distance = lab.rope_score_vs_distance(rope_dim.value, rope_base.value, 256)
    sinusoid = lab.sinusoidal_similarity(64, rope_dim.value, rope_base.value)
    _decay = plot.curves(rope_distance["distance"],
                         {"q = k = ones": rope_distance["ones"],
                          "random q, k": rope_distance["random"]},
                         x_title="distance n − m", y_title="score",
                         colors={"q = k = ones": "model", "random q, k": "data"},
                         title="RoPE score against distance: the long-range decay")
    _pe = plot.heatmap(sinusoid["pe"][:32].T, x_title="position m", y_title="dimension",
                       color_title="PE", scheme="blueorange", domain=(-1, 1),
                       title="sinusoidal positions PE (dimensions × positions)")
    _sim = plot.curves(np.arange(64), {"PE₀ · PEₙ": sinusoid["similarity"][0]},
                       x_title="distance n", y_title="dot product", colors={"PE₀ · PEₙ": "function"},
                       title="sinusoidal: similarity of two positions falls with distance")
    mo.vstack([_decay, mo.hstack([_pe, _sim], widths="equal")])
    return rope_distance, sinusoid


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    With $q = k = \mathbf 1$ the RoPE score is $2\sum_i \cos(\Delta\,\theta_i)$: $d$ at distance 0,
    then decaying with ripples, because the fast pairs average out while the slow ones still agree.
    A larger base slows every pair down, which stretches the decay over longer distances (the
    trick behind extending a model's context).

    **Exercise 4.** With the random $q$, $k$ above (d and base as set), the RoPE score at positions
    $m = 3$, $n = 7$ is shown in the table when the sliders are at 3 and 7. Without moving them:
    what is the score at positions $m = 103$, $n = 107$? (Three decimals suffice.)
    """)
    return


@app.cell
def _():
    answer_rope = mo.ui.text(placeholder="score", label="your answer")
    return (answer_rope,)


@app.cell
def _(answer_rope, rope_base, rope_k, rope_q):
    truth_rope = lab.rope_shift_check(rope_q, rope_k, 103, 107, 0, rope_base.value)["rope"]
    mo.vstack([answer_rope, verdict(check_number(
        answer_rope.value, truth_rope,
        "both positions moved by the same 100: only the offset n − m = 4 enters the score. "
        "Set m = 3, n = 7 and read the table.", abs_tol=1e-3))])
    return (truth_rope,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 5. A tiny attention model learns a rule

    A one-head attention layer with learned token and position embeddings, and no residual
    connection, so that each output position can only answer through what it attends to:

    $$
    h = E[x] + P, \qquad A = \operatorname{softmax}\!\left(\frac{hW_Q (hW_K)^\top}{\sqrt d}\right),
    \qquad \text{logits} = A\,hW_V\,W_O .
    $$

    It is trained with Adam on random sequences of digits. To **reverse** a sequence, output $i$
    must read input $L-1-i$: the attention map should become an anti-diagonal. To **rotate**, a
    shifted diagonal. **Sorting** needs content, not only positions: the map then depends on the
    example.
    """)
    return


@app.cell
def _():
    tiny_task = mo.ui.dropdown(options=list(lab.TASKS), value="reverse", label="task")
    return (tiny_task,)


@app.cell
def _():
    tiny_length = mo.ui.slider(2, 12, value=6, label="sequence length", show_value=True)
    return (tiny_length,)


@app.cell
def _():
    tiny_steps = mo.ui.slider(25, 1000, step=25, value=300, label="training steps",
                              show_value=True)
    return (tiny_steps,)


@app.cell
def _():
    tiny_lr = mo.ui.dropdown(options={"1e-4": 1e-4, "1e-3": 1e-3, "1e-2": 1e-2, "1e-1": 1e-1,
                                      "1": 1.0}, value="1e-2", label="learning rate")
    return (tiny_lr,)


@app.cell
def _():
    tiny_train = mo.ui.run_button(label="Train the attention model")
    return (tiny_train,)


@app.cell
def _(tiny_length, tiny_lr, tiny_steps, tiny_task, tiny_train):
    mo.vstack([mo.hstack([tiny_task, tiny_length, tiny_steps, tiny_lr], wrap=True), tiny_train])
    return


@app.cell
def _(tiny_length, tiny_lr, tiny_steps, tiny_task, tiny_train):
    mo.stop(not tiny_train.value, mo.md("*Press **Train the attention model** (about a second).*"))
    with mo.status.progress_bar(total=tiny_steps.value, title="training",
                                remove_on_exit=True) as _bar:
        tiny = lab.train_tiny_attention(tiny_task.value, steps=tiny_steps.value,
                                        lr=tiny_lr.value, length=tiny_length.value,
                                        seed=0, on_step=throttled(_bar, tiny_steps.value))
    _h = tiny["history"]
    _labels_in = [f"{i}:{t}" for i, t in enumerate(tiny["example"])]
    _labels_out = [f"{i}→{p}" for i, p in enumerate(tiny["prediction"])]
    _map = plot.heatmap(tiny["weights"], x_labels=_labels_in, y_labels=_labels_out,
                        x_title="input position : token", y_title="output position → predicted",
                        color_title="weight", scheme="purples", domain=(0, 1), annotate=True,
                        fmt=".2f", title="learned attention map for one held-out sequence")
    _acc = plot.curves(_h["step"], {"validation": _h["accuracy"]}, x_title="training step",
                       y_title="token accuracy", y_domain=(0, 1), title="held-out accuracy")
    tiny_accuracy = float(_h["accuracy"][-1]) if len(_h["accuracy"]) else float("nan")
    mo.vstack([
        mo.callout(mo.md(tiny["stopped"]), kind="warn") if tiny["stopped"] else mo.md(""),
        mo.md(f"input `{tiny['example'].tolist()}` · target `{tiny['target'].tolist()}` · "
              f"predicted `{tiny['prediction'].tolist()}` · held-out token accuracy "
              f"**{tiny_accuracy:.1%}**"),
        mo.hstack([_map, _acc], widths="equal"),
    ])
    return tiny, tiny_accuracy


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## The same in your own script

    The engine's attention functions take PyTorch's arguments (a boolean mask is True where
    attention is allowed).
    """)
    return


@app.cell
def _():
    import engine.functional as F
    from engine import nn
    from engine.attention import apply_rope, causal_mask

    engine.manual_seed(0)
    q = engine.randn(2, 4, 10, 16)                 # [B, H, L, d_k]
    k, v = engine.randn(2, 4, 10, 16), engine.randn(2, 4, 10, 16)
    out = F.scaled_dot_product_attention(apply_rope(q), apply_rope(k), v,
                                         attn_mask=causal_mask(10))
    mha_layer = nn.MultiheadAttention(64, num_heads=4, batch_first=True)
    x = engine.randn(2, 10, 64)
    y, w = mha_layer(x, x, x)                      # self-attention, weights averaged over heads
    mo.show_code(mo.md(f"`out.shape` = {out.shape} · `y.shape` = {y.shape} · "
                       f"`w.shape` = {w.shape}"))
    return


@app.cell(hide_code=True)
def _():
    mo.md(
        "---\n\n**Where next.** Attention mixes information across positions; generative models "
        "learn whole distributions. " + toc.nav_md("06_attention")
    )
    return


if __name__ == "__main__":
    app.run()

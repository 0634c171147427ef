import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="06 · Attention")

with app.setup:
    import math

    import altair as alt
    import marimo as mo
    import numpy as np

    import engine
    import engine.functional as F
    from engine import nn, shapes
    from engine.course import exercises, metadata, plot, throttled, toc, ui, widgets
    from engine.course.labs import attention as lab

    METADATA = metadata("06_attention")


@app.cell(hide_code=True)
def _():
    _header = ui.page_header(
        METADATA,
        r"""
    In attention every position of a sequence decides, from the data, which other positions to
    read. By the end of this notebook you will be able to:

    - compute queries, keys, values, the score matrix and the attention weights of a sentence,
      and steer a query to the key you want;
    - explain why the scores are divided by $\sqrt{d_k}$, and what temperature does;
    - build causal, padding and sliding-window masks, read their effect on the weights and count
      what a dense mask still computes;
    - follow the tensor shapes through multi-head attention, count its parameters, its memory and
      its KV cache;
    - show by experiment that rotary embeddings (RoPE) make scores depend on relative position only;
    - use cross-attention, where queries and keys come from two sequences;
    - train a tiny attention model and read its rule, then a tiny Transformer that learns a text:
      measure it against counting models, take out one part at a time, and read what each head
      attends to on a prompt you type.

    The lesson's pieces (attention with its mask, the multi-head split, the Transformer block,
    the tiny models, their training loop and the sampler) are code cells on this page. Open it
    with `marimo edit`, change one, and every figure that uses it runs again: the prompts marked
    **Change this cell** suggest where to start.
    """,
    )
    _section = mo.md(r"""
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

    In code, with a mask $M$ that is True where query $i$ may read key $j$ (a blocked score
    becomes $-\infty$, so its weight is $e^{-\infty} = 0$):
    """)
    mo.vstack([_header, _section])
    return


@app.function
def attention(q, k, v, mask=None, scale=None):
    """Scaled dot-product attention: A = softmax(q kᵀ · s, blocked → −∞), out = A v, s = 1/√d_k.

    q [..., L, d_k], k [..., S, d_k], v [..., S, d_v]; mask [L, S] (or broadcastable), True where
    query i may attend to key j. Returns (out [..., L, d_v], A [..., L, S]). A query allowed no
    key at all gets zero weights (a softmax over nothing but −∞ would be 0/0)."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale
    if mask is None:
        weights = scores.softmax(-1)
    else:
        blocked = ~np.asarray(mask)
        empty = blocked.all(axis=-1, keepdims=True)  # queries with no key to read
        weights = scores.masked_fill(blocked & ~empty, -math.inf).softmax(-1)
        weights = weights.masked_fill(empty, 0.0)
    return weights @ v, weights


@app.cell(hide_code=True)
def _():
    _intro = mo.md(r"""
    Every map on this page, and every model below, calls this one function. The weights below are
    random (a trained model learns them), so the pattern is arbitrary; what matters is how the
    scale, the temperature and the mask reshape it.

    **Change this cell:** delete `* scale` from the scores line, so that nothing divides the
    scores by $\sqrt{d_k}$ (and the scale and temperature controls below stop acting). With
    $d_k = 64$ the rows of the map sharpen: the mean row entropy falls from about 2.0 nats to
    about 0.6, and most rows give one key most of their weight, as section 2 predicts. The models
    of sections 5 and 6 were trained with the function as it is now: they then say so, and their
    Train buttons show what your version does to learning.
    """)
    qkv_dk = mo.ui.slider(1, 64, value=4, label="d_k", show_value=True)
    qkv_seed = mo.ui.slider(0, 20, value=0, label="random weights #", show_value=True)
    qkv_scale = mo.ui.dropdown(options=lab.SCALES, value="1/√d_k (standard)", label="scale")
    qkv_temperature = mo.ui.slider(
        steps=[0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 20.0], value=1.0, label="temperature τ", show_value=True
    )
    mask_kind = mo.ui.dropdown(options=list(lab.MASK_KINDS), value="none", label="mask")
    mask_window = mo.ui.slider(1, 10, value=2, label="window", show_value=True)
    mask_pad = mo.ui.slider(0, 10, value=3, label="padding tokens at the end", show_value=True)
    retrieval_scale = mo.ui.slider(
        steps=[0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0],
        value=1.0,
        label="multiplier c of the scores",
        show_value=True,
    )
    query_edit = widgets.matrix([[2.0, 0.0, 0.0, 0.0]], min_value=-5.0, max_value=5.0, step=0.5, label="query q")
    # The two maps below without their data (the controls change only the data, the positions
    # i, j and one value per cell, which the browser names "i:token"): its value in the tooltip.
    # A click on a cell of the attention map picks its query, whose weights the bars below show.
    _labels = [f"{i}:{w}" for i, w in enumerate(lab.SENTENCE.split())]
    _names = f"{_labels}"
    _axes = (alt.X("key:O", sort=_labels, title="key j"), alt.Y("query:O", sort=_labels, title="query i"))
    _tooltip = [alt.Tooltip("query:O"), alt.Tooltip("key:O")]
    qkv_scores_chart = (
        alt.Chart(width="container", height=260, title="scores q·k · scale / τ (blank: masked)")
        .transform_calculate(query=f"{_names}[datum.i]", key=f"{_names}[datum.j]")
        .mark_rect()
        .encode(
            *_axes,
            alt.Color("score:Q", scale=alt.Scale(scheme="blueorange"), title="score"),
            [*_tooltip, alt.Tooltip("score:Q", format=".4g")],
        )
    )
    _pick = alt.selection_point(name="query_pick", fields=["query"], on="click")
    qkv_map_chart = (
        alt.Chart(width="container", height=260, title="attention weights (each row sums to 1) · click a row")
        .transform_calculate(query=f"{_names}[datum.i]", key=f"{_names}[datum.j]")
        .mark_rect()
        .encode(
            *_axes,
            alt.Color("weight:Q", scale=alt.Scale(scheme="purples", domain=[0, 1]), title="weight"),
            [*_tooltip, alt.Tooltip("weight:Q", format=".3f")],
            alt.OpacityValue(0.35, condition={"param": "query_pick", "value": 1.0}),
        )
        .add_params(_pick)
    )
    qkv_row_chart = (
        alt.Chart(width="container", height=160)
        .mark_bar(color=plot.color("model"))
        .encode(
            alt.X("key:N", sort=_labels, title="key j", axis=alt.Axis(labelAngle=0)),
            alt.Y("weight:Q", title="weight", scale=alt.Scale(domain=[0, 1])),
            alt.Tooltip("weight:Q", format=".3f"),
        )
    )
    mo.vstack(
        [
            _intro,
            mo.hstack([qkv_dk, qkv_seed, qkv_scale, qkv_temperature], wrap=True),
            mo.hstack([mask_kind, mask_window, mask_pad], wrap=True),
        ]
    )
    return (
        mask_kind,
        mask_pad,
        mask_window,
        qkv_dk,
        qkv_map_chart,
        qkv_row_chart,
        qkv_scale,
        qkv_scores_chart,
        qkv_seed,
        qkv_temperature,
        query_edit,
        retrieval_scale,
    )


@app.cell
def _(mask_kind, mask_pad, mask_window, qkv, qkv_map_chart, qkv_scale, qkv_scores_chart, qkv_temperature):
    _L = len(qkv.tokens)
    mask = lab.make_mask(mask_kind.value, _L, mask_window.value, mask_pad.value)
    maps = lab.attention_maps(attention, qkv.Q, qkv.K, qkv.V, qkv_scale.value, qkv_temperature.value, mask)
    mask_counts = lab.mask_cost(mask, _L)
    _i, _j = np.repeat(np.arange(_L), _L), np.tile(np.arange(_L), _L)
    _scores = ui.chart(qkv_scores_chart.properties(data=plot.data(i=_i, j=_j, score=maps.scores.ravel(), digits=3)))
    attention_map = ui.chart_control(
        qkv_map_chart.properties(data=plot.data(i=_i, j=_j, weight=maps.weights.ravel(), digits=3))
    )
    _notes = [
        f"scale × 1/τ = **{maps.scale:.3g}** · mean row entropy "
        f"**{maps.entropy.mean():.2f}** nats (uniform over {_L} keys: {np.log(_L):.2f}) · "
        f"largest weight **{np.nanmax(maps.weights):.2f}**",
        f"Scores computed: **{mask_counts.computed}** (all L² = {_L}², the mask is applied "
        f"afterwards) · scores the mask keeps: **{mask_counts.used}**.",
    ]
    if len(maps.empty_rows):
        _notes.append(
            f"Queries {list(maps.empty_rows)} may attend to no key at all. The engine "
            "gives them all-zero weights and a zero output, as PyTorch's "
            "`F.scaled_dot_product_attention` does (since 2.5); a plain softmax over "
            "all −∞ scores, and `nn.MultiheadAttention` with every key padded, give NaN."
        )
    mo.vstack([mo.md("\n\n".join(_notes)), mo.hstack([_scores, attention_map], widths="equal")])
    return attention_map, mask, mask_counts, maps


@app.cell
def _(attention_map, maps, qkv, qkv_row_chart):
    # The row clicked in the map above (the last query until one is clicked): what it attends to.
    _labels = [f"{i}:{w}" for i, w in enumerate(qkv.tokens)]
    _query = ui.selected(attention_map, "query_pick", "query", default=[_labels[-1]])[0]
    _query = _query if _query in _labels else _labels[-1]  # a click on the map of other tokens
    _row = np.nan_to_num(maps.weights[_labels.index(_query)])
    _top = int(np.argmax(_row))
    _bars = qkv_row_chart.properties(
        data=plot.data(key=np.array(_labels, dtype=object), weight=_row), title=f"what query {_query} attends to"
    )
    mo.vstack(
        [
            mo.md(
                f"Query **{_query}** gives its largest weight, **{_row[_top]:.2f}**, to key **{_labels[_top]}**; "
                f"its output is the mix Σⱼ wⱼ vⱼ of the values with these weights"
                + (" (every key is masked: its weights are all zero)." if _row.sum() == 0 else ".")
            ),
            ui.chart(_bars),
        ]
    )
    return


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
    - **sliding window**: each query sees its neighbours within a window. Only $\approx L\,(2w-1)$
      scores are used instead of $L^2$, but a dense mask, as here, still computes all $L^2$ and
      discards the rest: the saving in time and memory needs a banded kernel that never forms
      the blocked scores (the line above the heatmaps counts both).

    **Order.** Without positions and masks, attention treats its input as a set: reorder the
    tokens and every output is reordered the same way, $\operatorname{Attention}(PX) =
    P\operatorname{Attention}(X)$ for a permutation matrix $P$, because
    $\operatorname{softmax}(PSP^\top) = P\operatorname{softmax}(S)P^\top$. Add a position
    vector to each slot before the projections and the equality fails, provided the reordering
    happens before the positions are added; reorder after, and each token brings its position
    with it. The largest differences below are measured on the sentence above, for one random
    reordering.
    """)
    return


@app.cell
def _(qkv_dk, qkv_seed):
    # The sentence's queries, keys and values (the maps above): they change with d_k and the
    # weights only, so the scale, temperature and mask controls do not re-run this check.
    qkv = lab.toy_qkv(d_model=16, d_k=qkv_dk.value, seed=qkv_seed.value)
    permutation = lab.permutation_check(attention, qkv, seed=0)
    mo.md(
        f"Reordering the tokens as {permutation.order.tolist()}: largest |Attention(PX) − "
        f"P·Attention(X)| = **{permutation.gap_plain:.1e}** without positions (rounding); "
        f"**{permutation.gap_positions:.3f}** when the tokens are reordered before sinusoidal "
        f"positions are added (each slot keeps its position); "
        f"**{permutation.gap_after:.1e}** when they are reordered after (each token carries "
        f"its position along, and the model cannot tell)."
    )
    return permutation, qkv


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### A designed lookup

    Random weights give an arbitrary pattern. Build one on purpose: eight random keys, and a
    query equal to key 3. Its score against key 3 is $|k_3|^2/\sqrt{d_k} \approx \sqrt{d_k}$,
    against the others about $\mathcal N(0, 1)$. Multiplying every score by $c$ (an inverse
    temperature) moves the weights from uniform ($c \to 0$) to all on key 3 ($c \to \infty$):
    attention is a soft dictionary lookup whose sharpness the scale sets.
    """)
    return


@app.cell
def _(retrieval_scale):
    retrieval = lab.designed_retrieval(L=8, d_k=16, target=3, multipliers=(retrieval_scale.value,), seed=0)
    mo.vstack(
        [
            retrieval_scale,
            ui.chart(
                plot.bars(
                    [f"key {j}" for j in range(8)],
                    retrieval.weights[0],
                    y_title="weight",
                    y_domain=(0, 1),
                    title=f"c = {retrieval_scale.value:g}: weight on key 3 = {retrieval.on_target[0]:.3f}",
                )
            ),
            mo.md(
                f"Scores q·k_j/√d_k: {', '.join(f'{v:.2f}' for v in retrieval.scores)}. Weight on "
                f"the matching key: **{retrieval.on_target[0]:.3f}** (uniform: {1 / 8:.3f})."
            ),
        ]
    )
    return (retrieval,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Steer a query yourself.** Four keys point along the four axes, $k_j = 2e_j$ in
    $d_k = 4$, so the scaled score of key $j$ is $q\cdot k_j/\sqrt{4} = q_j$ and the weights are
    $\operatorname{softmax}(q)$. Edit the query (drag an entry, or select it and type).
    """)
    return


@app.cell
def _(query_edit):
    _q = widgets.as_array(query_edit.value)[:1, :4]
    steered = lab.attention_maps(attention, _q, 2.0 * np.eye(4), 2.0 * np.eye(4))
    mo.vstack(
        [
            query_edit,
            ui.chart(
                plot.bars(
                    [f"key {j}" for j in range(4)],
                    steered.weights[0],
                    y_title="weight",
                    y_domain=(0, 1),
                    title="weights of your query over the four keys",
                )
            ),
            mo.md(f"Weights: {', '.join(f'{w:.3f}' for w in steered.weights[0])}."),
        ]
    )
    return (steered,)


@app.cell
def _():
    # The exercises of sections 1, 2, 3 and 6, built once in one cell; each is graded where it is asked.
    exercise_lookup = exercises.NumberExercise(
        question="**Exercise 1.** A query scores 4 against its matching key and 0 against each of "
        "7 other keys. What weight does the softmax give the matching key? (Two decimals.)",
        truth=float(np.exp(4) / (np.exp(4) + 7)),
        hint="softmax: e⁴ / (e⁴ + 7·e⁰).",
        abs_tol=0.01,
    )
    answer_lookup = ui.answer_box(exercise_lookup, placeholder="weight")
    # The sample is drawn once, here, not on every keystroke in the answer box.
    _sample = lab.dot_product_variance(256, n=20000, seed=1).var_raw
    exercises_scaling = {
        "variance": exercises.NumberExercise(
            question="**Exercise 2.** Queries and keys have independent entries of variance 1 and "
            "$d_k = 256$. What is the variance of a raw score $q\\cdot k$ (before scaling)?",
            truth=256.0,
            hint="each q_i k_i has variance 1·1 and the d_k products are independent: variances add.",
            rel_tol=0.02,
            explanation=f"(A sample of 20 000 pairs gives {_sample:.1f}.)",
            placeholder="variance",
        ),
        "causal": exercises.NumberExercise(
            question="**Exercise 3.** A causal mask over a sequence of $L = 6$ tokens: how many "
            "(query, key) pairs are allowed to attend?",
            truth=int(lab.make_mask("causal", 6).sum()),
            hint="query i sees keys 0 … i, that is i + 1 of them; add 1 + 2 + … + 6.",
            placeholder="allowed pairs",
        ),
    }
    answers_scaling = ui.answer_boxes(exercises_scaling)
    exercises_heads = {
        "mha": exercises.NumberExercise(
            question="**Exercise 4.** How many parameters (weights and biases) has `nn.MultiheadAttention(512, 8)`?",
            truth=shapes.multihead_attention_params(512),
            hint="four d_model × d_model projections (Q, K, V, output), each with d_model biases; "
            "the number of heads does not matter.",
            placeholder="parameter count",
        ),
        "kv": exercises.NumberExercise(
            question="**Exercise 5.** GPT-2 small: 12 layers, d_model = 768, a context of 1,024 tokens "
            "stored in float32. How many MiB (2²⁰ bytes) is its KV cache for one sequence?",
            truth=lab.attention_memory(1024, 768, 12, 12, 4).kv_cache_bytes / 2**20,
            hint="2 (K and V) × layers × L × d_model numbers, 4 bytes each.",
            rel_tol=0.01,
            placeholder="MiB",
        ),
    }
    answers_heads = ui.answer_boxes(exercises_heads)
    exercise_block = exercises.NumberExercise(
        question="**Exercise 8.** How many parameters has one pre-norm block with d = 768 "
        "(12 heads, MLP width 4d, biases everywhere, two LayerNorms)?",
        truth=lab.block_parameters(768, 12),
        hint="attention: four d × d projections with biases; MLP: d × 4d + 4d and 4d × d + d; each LayerNorm: 2d.",
    )
    answer_block = ui.answer_box(exercise_block, placeholder="parameter count")
    return (
        answer_block,
        answer_lookup,
        answers_heads,
        answers_scaling,
        exercise_block,
        exercise_lookup,
        exercises_heads,
        exercises_scaling,
    )


@app.cell
def _(answer_lookup, exercise_lookup):
    ui.exercise(exercise_lookup, answer_lookup)
    return


@app.cell(hide_code=True)
def _():
    variance_dk = mo.ui.slider(steps=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512], value=64, label="d_k", show_value=True)
    mo.md(r"""
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
    return (variance_dk,)


@app.cell
def _(variance_dk):
    variance = lab.dot_product_variance(variance_dk.value, n=4000, seed=0)
    _lim = max(4.0, 4 * np.sqrt(variance_dk.value))
    _hist = ui.chart(
        plot.histogram_grid(
            {"q·k (raw)": variance.raw, "q·k / √d_k": variance.scaled},
            bins=40,
            x_title="score (same axis for both)",
            columns=2,
            range_=(-_lim, _lim),
            panel_width=260,
            panel_height=120,
            flags={
                "q·k (raw)": f"variance {variance.var_raw:.1f}",
                "q·k / √d_k": f"variance {variance.var_scaled:.2f}",
            },
        )
    )
    mo.vstack(
        [
            variance_dk,
            _hist,
            mo.md(
                f"For d_k = {variance_dk.value}: sample variance of q·k = "
                f"**{variance.var_raw:.1f}** (theory {variance_dk.value}), after dividing by "
                f"√d_k = **{variance.var_scaled:.2f}** (theory 1)."
            ),
        ]
    )
    return (variance,)


@app.cell
def _():
    # Does not depend on the d_k slider: its own cell, computed once.
    sweep = lab.scaling_sweep(L=16, n=300, seed=0)
    _var = ui.chart(
        plot.curves(
            np.log2(sweep.d_k),
            {"raw": sweep.var_raw, "divided by √d_k": sweep.var_scaled},
            x_title="log₂ d_k",
            y_title="Var(score)",
            log_y=True,
            colors={"raw": "error", "divided by √d_k": "model"},
            title="score variance: d_k raw, 1 when scaled",
        )
    )
    _max = ui.chart(
        plot.curves(
            np.log2(sweep.d_k),
            {"raw": sweep.max_raw, "divided by √d_k": sweep.max_scaled},
            x_title="log₂ d_k",
            y_title="largest weight",
            y_domain=(0, 1),
            colors={"raw": "error", "divided by √d_k": "model"},
            title="average largest softmax weight over 16 keys",
        )
    )
    mo.hstack([_var, _max], widths="equal")
    return (sweep,)


@app.cell
def _(answers_scaling, exercises_scaling):
    ui.exercise_list("", exercises_scaling, answers_scaling)
    return


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

    The heads are not separate layers: one projection makes all the queries, and a reshape hands
    each head its own slice of $d_k$ columns.
    """)
    return


@app.function
def split_heads(x, heads):
    """[B, L, d] → [B, H, L, d_k], d_k = d / H: head h gets columns h·d_k … (h+1)·d_k − 1."""
    B, L, d = x.shape
    return x.reshape(B, L, heads, d // heads).transpose(1, 2)


@app.function
def merge_heads(x):
    """[B, H, L, d_k] → [B, L, H·d_k]: the heads' outputs side by side, [head_1; …; head_H]."""
    B, H, L, d_k = x.shape
    return x.transpose(1, 2).reshape(B, L, H * d_k)


@app.class_definition
class MultiHeadAttention(nn.Module):
    """MHA(X) = [head_1; …; head_H] W_O,  head_h = attention(X W_Q^h, X W_K^h, X W_V^h).

    W_Q, W_K, W_V are stacked in one [3d, d] matrix with its bias, and W_O is a Linear(d, d), as
    PyTorch's nn.MultiheadAttention lays them out and initialises them. forward(x [B, L, d], mask)
    gives the output [B, L, d] and each head's weights [B, H, L, L]."""

    def __init__(self, d_model, heads):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"heads ({heads}) must divide d_model ({d_model})")
        self.heads = heads
        self.in_proj_weight = nn.Parameter(np.empty((3 * d_model, d_model), np.float32))
        self.in_proj_bias = nn.Parameter(np.zeros(3 * d_model, np.float32))
        self.out_proj = nn.Linear(d_model, d_model)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, x, mask=None):
        d = x.shape[-1]
        qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)  # [X W_Q, X W_K, X W_V]
        q, k, v = (split_heads(qkv[..., i * d : (i + 1) * d], self.heads) for i in range(3))
        out, weights = attention(q, k, v, mask)
        return self.out_proj(merge_heads(out)), weights


@app.cell(hide_code=True)
def _():
    # Debounced: a drag sends only the value where it ends.
    mha_batch = mo.ui.slider(1, 64, value=2, label="batch B", show_value=True, debounce=True)
    mha_length = mo.ui.slider(1, 128, value=10, label="length L", show_value=True, debounce=True)
    mha_dmodel = mo.ui.slider(8, 256, step=8, value=64, label="d_model", show_value=True, debounce=True)
    mha_heads = mo.ui.slider(1, 16, value=8, label="heads H", show_value=True, debounce=True)
    mo.md(r"""
    The four projections are $d_{model}\times d_{model}$ whatever $H$, so the parameter count is
    $4(d_{model}^2 + d_{model})$: more heads cost nothing extra, only a larger score tensor
    $[B, H, L, L]$. The table is computed by `engine.shapes` and checked by running the
    `MultiHeadAttention` above on a random batch (it computes what `nn.MultiheadAttention` does).
    """)
    return mha_batch, mha_dmodel, mha_heads, mha_length


@app.cell
def _(mha_batch, mha_dmodel, mha_heads, mha_length):
    _controls = mo.hstack([mha_batch, mha_length, mha_dmodel, mha_heads], wrap=True)
    try:
        mha = lab.mha_shapes(MultiHeadAttention, mha_batch.value, mha_length.value, mha_dmodel.value, mha_heads.value)
    except ValueError as _err:
        mha = None
        _shown = ui.problem(_err)
    else:
        _table = ["| stage | shape |", "|---|---|"] + [f"| {stage} | `{list(shape)}` |" for stage, shape in mha.rows]
        _shown = mo.md(
            "\n".join(_table)
            + (
                f"\n\nd_k = d_model / H = **{mha.d_k}** · parameters by formula 4(d² + d) = "
                f"**{mha.params['total']:,}** · counted on `MultiHeadAttention`: "
                f"**{mha.module_params:,}** · its output {list(mha.output_shape)}, its "
                f"per-head weights {list(mha.weights_shape)}"
            )
        )
    mo.vstack([_controls, _shown])
    return (mha,)


@app.cell(hide_code=True)
def _():
    kv_length = mo.ui.slider(
        steps=[128, 512, 1024, 2048, 4096, 8192, 32768, 131072], value=1024, label="length L", show_value=True
    )
    kv_dmodel = mo.ui.slider(steps=[256, 512, 768, 1024, 2048, 4096], value=768, label="d_model", show_value=True)
    kv_layers = mo.ui.slider(1, 96, value=12, label="layers", show_value=True)
    kv_heads = mo.ui.slider(1, 64, value=12, label="heads H", show_value=True)
    kv_precision = mo.ui.dropdown(
        options={"float32 (4 bytes)": 4, "bfloat16 (2 bytes)": 2}, value="float32 (4 bytes)", label="numbers stored as"
    )
    mo.md(r"""
    ### Memory: the score tensor and the KV cache

    A kernel that forms the scores holds $H \cdot L^2$ numbers per layer: memory **quadratic** in
    the length. Kernels such as FlashAttention avoid storing them by computing the softmax block
    by block; the $O(L^2)$ arithmetic remains.

    A decoder generates one token at a time. Token $t$'s query must meet the keys and values of
    tokens $0 \dots t$, which do not change once computed (the mask is causal), so they are kept:
    the **KV cache**, $2 \cdot \text{layers} \cdot L \cdot d_{model}$ numbers, **linear** in
    the length. Each step then projects one new row instead of the whole prefix.
    """)
    return kv_dmodel, kv_heads, kv_layers, kv_length, kv_precision


@app.cell
def _(kv_dmodel, kv_heads, kv_layers, kv_length, kv_precision):
    _args = (kv_dmodel.value, kv_layers.value, kv_heads.value, kv_precision.value)
    kv_memory = lab.attention_memory(kv_length.value, *_args)
    kv_sweep = [lab.attention_memory(n, *_args) for n in kv_length.steps]
    _mib = 2.0**20
    _chart = ui.chart(
        plot.curves(
            np.log2(kv_length.steps),
            {
                "scores of one layer": [m.scores_bytes / _mib for m in kv_sweep],
                "KV cache, all layers": [m.kv_cache_bytes / _mib for m in kv_sweep],
            },
            x_title="log₂ L",
            y_title="MiB (log scale)",
            log_y=True,
            title="memory against length: L² for the scores, L for the cache",
        )
    )
    mo.vstack(
        [
            mo.hstack([kv_length, kv_dmodel, kv_layers, kv_heads, kv_precision], wrap=True),
            mo.md(
                f"At L = {kv_length.value:,}: scores of one layer **{kv_memory.scores_bytes / _mib:,.1f} "
                f"MiB** · KV cache of {kv_layers.value} layers **{kv_memory.kv_cache_bytes / _mib:,.1f} "
                f"MiB**. Doubling L multiplies the first by 4 and the second by 2."
            ),
            _chart,
        ]
    )
    return kv_memory, kv_sweep


@app.cell
def _():
    kv_check = lab.kv_cache_decode(length=12, d_model=8, seed=0)
    mo.md(
        f"Twelve tokens decoded one at a time with a cache through one single-head attention "
        f"layer, against one causal-masked pass: largest difference **{kv_check.max_gap:.1e}**. "
        f"Rows of K and V projected in this layer: **{kv_check.projected_cached}** with the cache, "
        f"**{kv_check.projected_uncached}** without (every prefix again); query-key products: "
        f"{kv_check.scores} either way. A model repeats every count in each of its layers and heads: "
        f"with 12 layers, {12 * kv_check.projected_cached} rows against {12 * kv_check.projected_uncached}, "
        f"and {12 * kv_check.scores} products per head either way."
    )
    return (kv_check,)


@app.cell
def _(answers_heads, exercises_heads):
    ui.exercise_list("", exercises_heads, answers_heads)
    return


@app.cell(hide_code=True)
def _():
    rope_dim = mo.ui.slider(steps=[2, 4, 8, 16, 32, 64, 128], value=16, label="d", show_value=True)
    rope_base = mo.ui.dropdown(
        options={"100": 100.0, "10 000": 10000.0, "1 000 000": 1e6}, value="10 000", label="base"
    )
    rope_m = mo.ui.slider(0, 50, value=3, label="query position m", show_value=True)
    rope_n = mo.ui.slider(0, 50, value=7, label="key position n", show_value=True)
    rope_shift = mo.ui.slider(0, 200, value=40, label="shift both by s", show_value=True)
    # The three charts of d and the base without their data (the two controls change only the data).
    # the data one row per distance, a column per series (folded into rows in the browser); the
    # legend's long names from labelExpr
    _bound, _aligned = "bound", "aligned"
    _legend = "datum.label == 'bound' ? \"Su et al.'s bound 2 Σⱼ|Sⱼ| / d\" : 'score of aligned q = k = 1, over d'"
    rope_decay_chart = (
        alt.Chart(width="container", height=plot.HEIGHT)
        .transform_fold([_bound, _aligned], as_=["series", "value"])
        .mark_line(clip=True)
        .encode(
            alt.X("distance:Q", title="distance Δ = n − m"),
            alt.Y("value:Q", title="over the aligned score at distance 0"),
            alt.Color(
                "series:N",
                title="",
                sort=[_bound, _aligned],
                legend=alt.Legend(orient="bottom", labelExpr=_legend),
                scale=alt.Scale(domain=[_bound, _aligned], range=[plot.color("reference"), plot.color("model")]),
            ),
            [alt.Tooltip("series:N"), alt.Tooltip("distance:Q"), alt.Tooltip("value:Q", format=".6g")],
        )
        .properties(title="RoPE's long-range decay: the aligned score stays under Su et al.'s bound")
    )
    # the PE table as one image (lab.blue_orange_url) stretched over positions × dimensions
    rope_pe_chart = (
        alt.Chart(width="container", height=plot.HEIGHT)
        .mark_image(aspect=False)
        .encode(
            alt.X("x:Q", title="position m", scale=alt.Scale(domain=[-0.5, 31.5], nice=False, zero=False)),
            alt.X2("x2"),
            alt.Y("y:Q", title="dimension", scale=alt.Scale(reverse=True, nice=False, zero=False)),
            alt.Y2("y2"),
            alt.Url("url:N"),
        )
    )
    rope_similarity_chart = (
        alt.Chart(width="container", height=plot.HEIGHT)
        .mark_line(clip=True, color=plot.color("function"))
        .encode(
            alt.X("distance:Q", title="distance n"),
            alt.Y("similarity:Q", title="dot product PE₀ · PEₙ"),
            [alt.Tooltip("distance:Q"), alt.Tooltip("similarity:Q", title="PE₀ · PEₙ", format=".6g")],
        )
        .properties(title="sinusoidal: similarity of two positions against their distance")
    )
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
    return (
        rope_base,
        rope_decay_chart,
        rope_dim,
        rope_m,
        rope_n,
        rope_pe_chart,
        rope_shift,
        rope_similarity_chart,
    )


@app.cell
def _(rope_base, rope_dim, rope_k, rope_m, rope_n, rope_q, rope_shift):
    shift_check = lab.rope_shift_check(rope_q, rope_k, rope_m.value, rope_n.value, rope_shift.value, rope_base.value)
    mo.vstack(
        [
            mo.hstack([rope_dim, rope_base], justify="start"),
            mo.hstack([rope_m, rope_n, rope_shift], wrap=True),
            mo.md(
                "\n".join(
                    [
                        "| positions | RoPE score ⟨R_m q, R_n k⟩ | absolute: (q + PE_m)·(k + PE_n) |",
                        "|---|---|---|",
                        f"| m = {rope_m.value}, n = {rope_n.value} | {shift_check.rope:.6f} | "
                        f"{shift_check.absolute:.6f} |",
                        f"| m = {rope_m.value + rope_shift.value}, n = {rope_n.value + rope_shift.value} | "
                        f"{shift_check.rope_shifted:.6f} | {shift_check.absolute_shifted:.6f} |",
                        "",
                        f"Shifting both positions by {rope_shift.value} changes the RoPE score by "
                        f"**{abs(shift_check.rope_shifted - shift_check.rope):.1e}** (rounding only) "
                        f"and the absolute one by "
                        f"**{abs(shift_check.absolute_shifted - shift_check.absolute):.3f}**.",
                    ]
                )
            ),
        ]
    )
    return (shift_check,)


@app.cell
def _(rope_base, rope_decay_chart, rope_dim, rope_pe_chart, rope_similarity_chart):
    # Its own cell: moving m, n or s does not redraw these charts, nor draw new q and k (the table above).
    _rng = np.random.default_rng(3)
    rope_q = _rng.standard_normal(rope_dim.value)
    rope_k = _rng.standard_normal(rope_dim.value)
    # Exercise 6 (asked below) is about these q and k, so it is built with them.
    exercise_rope = exercises.NumberExercise(
        question="**Exercise 6.** With the random $q$, $k$ above (d and base as set), the RoPE "
        "score at positions $m = 3$, $n = 7$ is shown in the table when the sliders are at 3 and 7. "
        "Without moving them: what is the score at positions $m = 103$, $n = 107$? "
        "(Three decimals suffice.)",
        truth=lab.rope_shift_check(rope_q, rope_k, 103, 107, 0, rope_base.value).rope,
        hint="both positions moved by the same 100: only the offset n − m = 4 enters the score. "
        "Set m = 3, n = 7 and read the table.",
        abs_tol=1e-3,
    )
    answer_rope = ui.answer_box(exercise_rope, placeholder="score")
    _pairs = {}
    for _i in sorted({0, rope_dim.value // 4, rope_dim.value // 2 - 1}):
        _t = lab.rope_pair_trajectory(rope_dim.value, _i, 32, rope_base.value)
        _pairs[f"pair {_i} (θ = {_t.theta:.3g} rad per position)"] = (_t.xy[:, 0], _t.xy[:, 1], _t.positions)
    _turns = ui.chart(
        lab.compact_chart(  # fewer digits and coded series names: less to send at every move of d or base
            plot.paths_2d(
                _pairs,
                x_title="x₂ᵢ (rotated)",
                y_title="x₂ᵢ₊₁ (rotated)",
                height=340,
                title="a vector of ones at positions 0…31: each pair turns at its own speed",
            )
        )
    )
    rope_distance = lab.rope_score_vs_distance(rope_dim.value, rope_base.value, 256)
    sinusoid = lab.sinusoidal_similarity(64, rope_dim.value, rope_base.value)
    # Both over the aligned score at distance 0 (d): the bound on |score| is 2 Σⱼ|Sⱼ| for q = k = 1.
    _decay = ui.chart(
        rope_decay_chart.properties(
            data=plot.data(
                distance=rope_distance.distance,
                bound=rope_distance.bound,
                aligned=rope_distance.aligned_relative,
                digits=3,
            )
        )
    )
    _dims = lab.shown_dimensions(rope_dim.value)  # at most 32 rows: every k-th pair beyond
    _every = "" if len(_dims) == rope_dim.value else f", one pair in {_dims[2] // 2}"
    _pe = rope_pe_chart.properties(
        # each drawn row stretched over the pairs it stands for: the rows span dimensions 0 to d
        data=plot.data(
            x=[-0.5],
            x2=[31.5],
            y=[0.0],
            y2=[float(rope_dim.value)],
            url=[lab.blue_orange_url(sinusoid.pe[:32, _dims].T)],
        ),
        title=f"sinusoidal positions PE (dimensions × positions{_every}): blue −1, orange +1",
        width=430,
    )
    _sim = rope_similarity_chart.properties(
        data=plot.data(distance=np.arange(64), similarity=sinusoid.similarity[0], digits=4), width=430
    )
    _sim0 = sinusoid.similarity[0]
    _rise = int(np.argmax(np.diff(_sim0) > 0)) + 1  # the first distance where it goes up again
    _near, _far = _sim0[1:32].mean(), _sim0[32:].mean()
    mo.vstack(
        [
            _turns,
            _decay,
            mo.md(
                f"At distances 200 to 256 the bound is at most "
                f"**{rope_distance.bound_relative[200:].max():.2f}** of its value at 0 "
                f"(d = {rope_dim.value}). The more pairs, the deeper the decay: with d = 2 "
                f"a single pair turns forever and nothing decays. The sinusoidal similarity "
                f"(right) {'falls only on average' if _near > _far else 'does not even fall on average'} "
                f"(mean {_near:.2f} over distances 1 to 31, {_far:.2f} over 32 to 63): it ripples, "
                f"and already at distance {_rise} it rises again, from {_sim0[_rise - 1]:.2f} to "
                f"{_sim0[_rise]:.2f}."
            ),
            ui.chart(alt.hconcat(_pe, _sim)),  # side by side in one view
        ]
    )
    return answer_rope, exercise_rope, rope_distance, rope_k, rope_q, sinusoid


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Writing each pair as a complex number, the RoPE score is
    $\operatorname{Re}\sum_i h_i e^{\mathrm i\Delta\theta_i}$ with $h_i = \overline{q_{[i]}}\,k_{[i]}$
    and $\Delta = n - m$ (the key's position minus the query's): rotating by $m\theta_i$ multiplies
    a pair by $e^{\mathrm i m\theta_i}$, and $\langle a, b\rangle = \operatorname{Re}\,\overline{a}\,b$. Su et al. (2021, §3.4.3) bound its size by summation by parts:
    $\big|\sum_i h_i e^{\mathrm i\Delta\theta_i}\big| \le \max_i |h_{i+1} - h_i|
    \sum_j |S_j|$, $S_j = \sum_{i<j} e^{\mathrm i\Delta\theta_i}$. The second factor,
    $\frac{1}{d/2}\sum_j |S_j|$, decays with $\Delta$ (the chart). It constrains pairs of vectors
    whose $h_i$ vary slowly, such as aligned ones: with $q = k = \mathbf 1$ the score is
    $2\sum_i \cos(\Delta\,\theta_i)$, $d$ at distance 0, then falling with ripples, since the
    fast pairs average out while the slow ones still agree. There every $h_i = 2$ (and
    $h_{d/2+1} = 0$ past the last pair), so the bound is $2\sum_j |S_j|$: the chart divides both
    by $d$, the score at distance 0, and the aligned curve stays under the bound, which is loose
    at short distances. Two random vectors have no such
    decay: their $h_i$ jump around and the bound's first factor is large. A larger base slows
    every pair down, which stretches the decay over longer distances (the trick behind extending
    a model's context).
    """)
    return


@app.cell
def _(answer_rope, exercise_rope):
    ui.exercise(exercise_rope, answer_rope)
    return


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


@app.class_definition
class TinyAttention(nn.Module):
    """One head of self-attention between embeddings and a read-out, no residual connection:

        h = E[x] + P[pos],   (out, A) = attention(h W_Q, h W_K, h W_V),   logits = out W_O

    token ids x [B, L] → logits [B, L, vocab]; attend(x) also gives the weights A [B, L, L]."""

    def __init__(self, vocab=8, length=6, d_model=32):
        super().__init__()
        self.token = nn.Embedding(vocab, d_model)
        self.position = nn.Embedding(length, d_model)
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.out = nn.Linear(d_model, vocab)

    def attend(self, x):
        x = np.asarray(x)
        h = self.token(x) + self.position(np.arange(x.shape[-1]))
        out, weights = attention(self.q(h), self.k(h), self.v(h))
        return self.out(out), weights

    def forward(self, x):
        return self.attend(x)[0]


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Both models of this page learn the same way: at every position, the cross-entropy of the
    token that should come out, averaged over the batch and the positions, and one Adam step on
    its gradient.
    """)
    return


@app.function
def next_token_loss(logits, targets):
    """Cross-entropy at every position: ℓ = −(1/BL) Σ_{b,i} log softmax(logits[b, i])[targets[b, i]].

    logits [B, L, vocab], targets [B, L] (token ids)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), np.asarray(targets).reshape(-1))


@app.function
def train_step(model, optimizer, x, y):
    """One step: the loss of model(x) against y, its gradient by backpropagation, the update."""
    loss = next_token_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


@app.function
def train_tiny_attention(
    task="reverse",
    steps=300,
    lr=1e-2,
    length=6,
    d_model=32,
    vocab=8,
    batch_size=64,
    seed=0,
    eval_every=25,
    on_step=None,
):
    """Adam on fresh random batches of the task; every eval_every steps, the mean training loss
    and the per-token accuracy on a fixed held-out set. Returns the lab's TinyRun."""
    with engine.random.fork_rng(seed):
        model = TinyAttention(vocab, length, d_model)
    optimizer = engine.optim.Adam(model.parameters(), lr=lr)
    x_test, y_test = lab.tiny_heldout(task, length, vocab, seed)
    rng = np.random.default_rng(seed)
    history, losses, stopped = {"step": [], "loss": [], "accuracy": []}, [], ""
    for step in range(1, steps + 1):
        x, y = lab.make_sequence_task(task, batch_size, length, vocab, seed=rng)
        losses.append(train_step(model, optimizer, x, y))
        if not math.isfinite(losses[-1]):
            stopped = f"the loss became non-finite at step {step}: lower the learning rate"
            break
        if step % eval_every == 0 or step == steps:
            with engine.no_grad():
                accuracy = (model(x_test).data.argmax(-1) == y_test).mean()
            history["step"].append(step)
            history["loss"].append(float(np.mean(losses[-eval_every:])))
            history["accuracy"].append(float(accuracy))
        if on_step is not None:
            on_step(step)
    return lab.tiny_run(model, history, stopped, x_test, y_test)


@app.function
def default_tiny_attention():
    """The model this section opens on: train_tiny_attention at the page's default settings, as
    its parameters and history (the course ships them, trained by the cells above)."""
    run = train_tiny_attention(**lab.TINY_DEFAULTS)
    return {
        "settings": dict(lab.TINY_DEFAULTS),
        "parameters": {name: p.data for name, p in run.model.state_dict().items()},
        "history": {"step": run.history.step, "loss": run.history.loss, "accuracy": run.history.accuracy},
    }


@app.cell
def _():
    # The training settings and the button in one form: moving a setting runs nothing; the form's
    # value is None until it is submitted, then the settings the training cell below uses.
    tiny_train = mo.ui.batch(
        mo.md("{task} {length} {steps} {lr}"),
        {
            "task": mo.ui.dropdown(options=list(lab.TASKS), value=lab.TINY_DEFAULTS["task"], label="task"),
            "length": mo.ui.slider(2, 12, value=lab.TINY_DEFAULTS["length"], label="sequence length", show_value=True),
            "steps": mo.ui.slider(
                25, 1000, step=25, value=lab.TINY_DEFAULTS["steps"], label="training steps", show_value=True
            ),
            "lr": mo.ui.dropdown(
                options={"1e-4": 1e-4, "1e-3": 1e-3, "1e-2": 1e-2, "1e-1": 1e-1, "1": 1.0},
                value="1e-2",
                label="learning rate",
            ),
        },
    ).form(submit_button_label="Train the attention model")
    cross_noise = mo.ui.slider(0.0, 4.0, step=0.5, value=0.5, label="noise on the copies", show_value=True)
    # The default model the cells above trained, loaded only if they are still the code that trained it.
    tiny_shipped, tiny_problem = lab.shipped_tiny_attention(
        code=(attention, next_token_loss, train_step, train_tiny_attention, default_tiny_attention),
        classes=(TinyAttention,),
    )
    return cross_noise, tiny_problem, tiny_shipped, tiny_train


@app.cell
def _(tiny_problem, tiny_shipped, tiny_train):
    if tiny_train.value:
        _set = tiny_train.value
        with mo.status.progress_bar(total=_set["steps"], title="training", remove_on_exit=True) as _bar:
            tiny = train_tiny_attention(
                _set["task"],
                steps=_set["steps"],
                lr=_set["lr"],
                length=_set["length"],
                seed=0,
                on_step=throttled(_bar, _set["steps"]),
            )
        _caption = (
            f"Trained just now by the cells above, as they are on this page, with your "
            f"settings ({_set['task']}, length {_set['length']}, "
            f"{_set['steps']} steps, learning rate {_set['lr']:g})."
        )
    else:
        tiny = tiny_shipped
        _d = lab.TINY_DEFAULTS
        _caption = (
            f"The map and the accuracy curve below are the default model's "
            f"({_d['task']}, length {_d['length']}, {_d['steps']} steps, learning "
            f"rate {_d['lr']:g}), trained in advance by the cells above and shipped "
            "with the course; **Train the attention model** runs those cells as they "
            "are now, with the settings above."
            if tiny is not None
            else f"{tiny_problem[0].upper()}{tiny_problem[1:]}."
        )
    # The model shown (the shipped one until the button is pressed): its map and accuracy curve.
    if tiny is None:
        tiny_accuracy = float("nan")
        _shown = mo.callout(mo.md(_caption), kind="info")
    else:
        _h = tiny.history
        _labels_in = [f"{i}:{t}" for i, t in enumerate(tiny.example)]
        _labels_out = [f"{i}→{p}" for i, p in enumerate(tiny.prediction)]
        _map = ui.chart(
            plot.heatmap(
                tiny.weights,
                x_labels=_labels_in,
                y_labels=_labels_out,
                x_title="input position : token",
                y_title="output position → predicted",
                color_title="weight",
                scheme="purples",
                domain=(0, 1),
                annotate=True,
                fmt=".2f",
                title="learned attention map for one held-out sequence",
            )
        )
        _acc = ui.chart(
            plot.curves(
                _h.step,
                {"validation": _h.accuracy},
                x_title="training step",
                y_title="token accuracy",
                y_domain=(0, 1),
                title="held-out accuracy",
            )
        )
        tiny_accuracy = float(_h.accuracy[-1]) if len(_h.accuracy) else float("nan")
        _shown = mo.vstack(
            [
                mo.callout(mo.md(tiny.stopped), kind="warn") if tiny.stopped else mo.md(""),
                mo.md(
                    f"{_caption}\n\ninput `{tiny.example.tolist()}` · target "
                    f"`{tiny.target.tolist()}` · predicted `{tiny.prediction.tolist()}` · held-out "
                    f"token accuracy **{tiny_accuracy:.1%}**"
                ),
                mo.hstack([_map, _acc], widths="equal"),
            ]
        )
    mo.vstack([tiny_train, _shown])
    return tiny, tiny_accuracy


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### Cross-attention

    So far queries, keys and values came from one sequence (**self**-attention). In
    **cross**-attention (the encoder-decoder Transformer's second attention, a text-to-image
    model reading its prompt) the queries come from one sequence and the keys and values from
    another: $\operatorname{softmax}(Q_{tgt}K_{src}^\top/\sqrt d)\,V_{src}$. The weight matrix is
    $L_{tgt}\times L_{src}$, not square, and each output row is a mix of source values.

    Below, each of the 4 target tokens is a noisy copy of one source word's embedding (identity
    projections). With little noise each query puts its largest weight on the word it copies.
    """)
    return


@app.cell
def _(cross_noise):
    cross = lab.cross_attention(cross_noise.value, seed=0)
    _found = int((cross.weights.argmax(axis=1) == cross.aligned).sum())
    mo.vstack(
        [
            cross_noise,
            ui.chart(
                plot.heatmap(
                    cross.weights,
                    x_labels=[f"{j}:{w}" for j, w in enumerate(cross.source)],
                    y_labels=[f"copy of {w}" for w in cross.target],
                    x_title="source key",
                    y_title="target query",
                    color_title="weight",
                    scheme="purples",
                    domain=(0, 1),
                    annotate=True,
                    fmt=".2f",
                    title=f"cross-attention weights {cross.weights.shape[0]}×{cross.weights.shape[1]}",
                )
            ),
            mo.md(
                f"Queries whose largest weight is on the word they copy: **{_found} of "
                f"{len(cross.target)}** · output shape {list(cross.output.shape)}."
            ),
        ]
    )
    return (cross,)


@app.cell
def _():
    exercise_cross = exercises.NumberExercise(
        question="**Exercise 7.** Cross-attention with queries from a 7-token sequence and keys "
        "and values from a 12-token one, one head: how many attention weights are there?",
        truth=lab.attention_maps(attention, np.zeros((7, 4)), np.zeros((12, 4)), np.zeros((12, 4))).weights.size,
        hint="one weight per (query, key) pair: L_tgt × L_src.",
    )
    answer_cross = ui.answer_box(exercise_cross, placeholder="weights")
    return answer_cross, exercise_cross


@app.cell
def _(answer_cross, exercise_cross):
    ui.exercise(exercise_cross, answer_cross)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 6. Attention inside a Transformer

    A decoder-only Transformer (GPT's layout) stacks **blocks** on a **residual stream**
    $x \in \mathbb{R}^{L\times d}$. Each block normalises before each sub-layer (pre-norm) and adds
    the sub-layer's output back to the stream:

    $$
    x \leftarrow x + \operatorname{CausalSelfAttention}(\operatorname{LN}(x)), \qquad
    x \leftarrow x + \operatorname{MLP}(\operatorname{LN}(x)), \qquad
    \operatorname{MLP}(h) = W_2\,\operatorname{GELU}(W_1 h).
    $$

    Attention is the only place where positions exchange information; the MLP acts on each
    position alone. $\operatorname{LN}$ rescales each position's vector to mean 0 and variance 1
    (then a learned scale and shift). Token and position embeddings enter at the bottom, a final
    LayerNorm and a linear read-out give next-token logits at the top.

    Below, one block with $d = 32$ and two heads learns to continue a short text that the course
    wrote for this purpose (about 2,100 characters; the last tenth is held out), one character
    at a time. The baselines are counting models of the training text: the **unigram** predicts
    each character by its frequency, whatever came before (what a model that ignores context
    scores); the **bigram** and the **trigram** by its frequency after the one or two characters
    before it (each count plus 0.1, so that no character gets probability 0).

    **Change the `TransformerBlock` cell below:** set `causal = None`, so that every position may
    also read the characters after it, then press **Train the tiny Transformer**. Both losses fall
    far below the page's (to about 0.1 nats per character): the model copies the answer from the
    next position instead of predicting it. Its samples turn to nonsense, because when it writes
    there is no next character to copy.
    """)
    return


@app.class_definition
class TransformerBlock(nn.Module):
    """A pre-norm decoder block (GPT-2's layout), on the residual stream x [B, L, d]:

        x ← x + MultiHeadAttention(LN(x), causal mask)
        x ← x + MLP(LN(x)),     MLP = Linear(d, 4d) → GELU → Linear(4d, d)

    residual=False drops the two "x +" (each sub-layer's output replaces the stream). The last
    forward pass's attention weights [B, H, L, L] are kept in self.weights, to be drawn."""

    def __init__(self, d_model=32, heads=2, residual=True):
        super().__init__()
        self.residual = residual
        self.norm_attention = nn.LayerNorm(d_model)
        self.attention = MultiHeadAttention(d_model, heads)
        self.norm_mlp = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.weights = None

    def forward(self, x):
        causal = engine.attention.causal_mask(x.shape[1])  # key j <= query i
        attended, self.weights = self.attention(self.norm_attention(x), causal)
        x = x + attended if self.residual else attended
        out = self.mlp(self.norm_mlp(x))
        return x + out if self.residual else out


@app.class_definition
class TinyGPT(nn.Module):
    """logits = W_out LN(blocks(E[x] + P[pos])): token and learned position embeddings, `layers`
    TransformerBlocks, a final LayerNorm and a linear read-out; ids [B, L] → logits [B, L, vocab].
    positions=False leaves out P (the blocks see E[x] only); residual is passed to every block."""

    def __init__(self, vocab, context=16, d_model=32, heads=2, layers=1, positions=True, residual=True):
        super().__init__()
        self.context = context
        self.token = nn.Embedding(vocab, d_model)
        self.position = nn.Embedding(context, d_model) if positions else None
        self.blocks = nn.ModuleList([TransformerBlock(d_model, heads, residual) for _ in range(layers)])
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, ids):
        ids = np.asarray(ids)
        x = self.token(ids)
        if self.position is not None:
            x = x + self.position(np.arange(ids.shape[-1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


@app.function
def heldout_loss(model, ids, context):
    """The next-character loss (nats per character) over every non-overlapping held-out window."""
    x, y = lab.heldout_windows(ids, context)
    with engine.no_grad():
        return next_token_loss(model(x), y).item()


@app.function
def train_tiny_gpt(
    steps=400,
    lr=3e-3,
    layers=1,
    d_model=32,
    heads=2,
    context=16,
    batch_size=32,
    seed=0,
    eval_every=50,
    on_step=None,
    positions=True,
    residual=True,
):
    """The language model's loop: Adam (train_step) on random windows of the text, each predicting
    the next character at every position; every eval_every steps, the mean training loss and the
    held-out loss. Returns the lab's GPTRun."""
    data = lab.char_data()
    with engine.random.fork_rng(seed):
        model = TinyGPT(len(data.chars), context, d_model, heads, layers, positions, residual)
        optimizer = engine.optim.Adam(model.parameters(), lr=lr)
        rng = np.random.default_rng(seed)
        log, recent, stopped = {"steps": [], "train": [], "heldout": []}, [], ""
        for step in range(1, steps + 1):
            x, y = lab.random_windows(data.train, context, batch_size, rng)
            recent.append(train_step(model, optimizer, x, y))
            if not math.isfinite(recent[-1]):
                stopped = f"the loss became non-finite at step {step}: lower the learning rate"
                break
            if step % eval_every == 0 or step == steps:
                log["steps"].append(step)
                log["train"].append(float(np.mean(recent)))
                log["heldout"].append(heldout_loss(model, data.heldout, context))
                recent = []
            if on_step is not None:
                on_step(step)
    return lab.GPTRun(
        model,
        data,
        np.asarray(log["steps"]),
        np.asarray(log["train"]),
        np.asarray(log["heldout"]),
        data.unigram,
        stopped,
    )


@app.function
def default_tiny_gpt():
    """The Transformer this section opens on: train_tiny_gpt at the page's default settings, as
    its parameters and loss curves (the course ships them, trained by the cells above)."""
    run = train_tiny_gpt(**lab.GPT_DEFAULTS)
    return {
        "settings": dict(lab.GPT_DEFAULTS),
        "parameters": {name: p.data for name, p in run.model.state_dict().items()},
        "steps": run.steps,
        "train_loss": run.train_loss,
        "heldout_loss": run.heldout_loss,
    }


@app.function
def ablate_tiny_gpt(on_step=None):
    """The default Transformer (lab.GPT_DEFAULTS) trained again with one part taken out at a time
    (lab.GPT_ABLATIONS: the position embedding, the second head, the residual path), from the same
    seed on the same batches: each model's loss curves, by name."""
    runs, steps = {}, lab.GPT_DEFAULTS["steps"]
    for k, (name, change) in enumerate(lab.GPT_ABLATIONS.items()):
        run = train_tiny_gpt(
            **{**lab.GPT_DEFAULTS, **change}, on_step=None if on_step is None else lambda s, k=k: on_step(k * steps + s)
        )
        runs[name] = {"steps": run.steps, "train_loss": run.train_loss, "heldout_loss": run.heldout_loss}
    return runs


@app.function
def default_gpt_ablations():
    """What the ablations open on: ablate_tiny_gpt at the default settings, and the held-out loss
    curves of the full model and of the one without positions for seeds 0 to 4, one row per seed
    (how far the seed alone moves them)."""
    runs, seeds = ablate_tiny_gpt(), {}
    for name in ("full model", "no position embedding"):
        change = {**lab.GPT_DEFAULTS, **lab.GPT_ABLATIONS[name]}
        seeds[name] = np.array(
            [runs[name]["heldout_loss"]]
            + [train_tiny_gpt(**{**change, "seed": seed}).heldout_loss for seed in range(1, 5)]
        )
    return {"runs": runs, "seed_heldout": seeds}


@app.cell
def _(answer_block, exercise_block):
    ui.exercise(exercise_block, answer_block)
    return


@app.cell
def _():
    # The training settings and the button in one form: moving a setting runs nothing; the form's
    # value is None until it is submitted, then the settings the training cell below uses.
    gpt_train = mo.ui.batch(
        mo.md("{steps} {blocks} {lr}"),
        {
            "steps": mo.ui.slider(
                50, 600, step=50, value=lab.GPT_DEFAULTS["steps"], label="training steps", show_value=True
            ),
            "blocks": mo.ui.slider(1, 2, value=lab.GPT_DEFAULTS["layers"], label="blocks", show_value=True),
            "lr": mo.ui.dropdown(
                options={"1e-4": 1e-4, "1e-3": 1e-3, "3e-3": 3e-3, "1e-2": 1e-2, "1": 1.0},
                value="3e-3",
                label="learning rate",
            ),
        },
    ).form(submit_button_label="Train the tiny Transformer")
    gpt_temperature = mo.ui.dropdown(
        options={"0.2": 0.2, "0.5": 0.5, "0.8": 0.8, "1": 1.0, "1.5": 1.5}, value="0.8", label="sampling temperature T"
    )
    # The default Transformer the cells above trained, loaded only if they are still the code that trained it.
    gpt_shipped, gpt_problem = lab.shipped_tiny_gpt(
        code=(
            attention,
            split_heads,
            merge_heads,
            next_token_loss,
            train_step,
            heldout_loss,
            train_tiny_gpt,
            default_tiny_gpt,
        ),
        classes=(MultiHeadAttention, TransformerBlock, TinyGPT),
    )
    return gpt_problem, gpt_shipped, gpt_temperature, gpt_train


@app.cell
def _(ablations_seeds, gpt_problem, gpt_shipped, gpt_train):
    if gpt_train.value:
        _set = gpt_train.value
        with mo.status.progress_bar(total=_set["steps"], title="training", remove_on_exit=True) as _bar:
            gpt = train_tiny_gpt(
                steps=_set["steps"],
                lr=_set["lr"],
                layers=_set["blocks"],
                seed=0,
                on_step=throttled(_bar, _set["steps"]),
            )
        _caption = (
            f"Trained just now by the cells above, as they are on this page, with your "
            f"settings ({_set['steps']} steps, {_set['blocks']} "
            f"block{'s' * (_set['blocks'] > 1)}, learning rate {_set['lr']:g})."
        )
    else:
        gpt = gpt_shipped
        _d = lab.GPT_DEFAULTS
        _caption = (
            f"The loss curves below are the default model's ({_d['steps']} steps, "
            f"{_d['layers']} block, learning rate {_d['lr']:g}), trained in advance by "
            "the cells above and shipped with the course; the text is sampled from it "
            "by the `sample` cell as it is on this page. **Train the tiny Transformer** "
            "runs the training cells as they are now, with the settings above."
            if gpt is not None
            else f"{gpt_problem[0].upper()}{gpt_problem[1:]}."
        )
    # The model shown (the shipped one until the button is pressed): its loss curves against the baselines.
    if gpt is None:
        _shown = mo.callout(mo.md(_caption), kind="info")
    elif gpt.stopped:
        _shown = mo.vstack([mo.md(_caption), mo.callout(mo.md(gpt.stopped), kind="warn")])
    else:
        _ladder = {"unigram baseline": gpt.unigram, "bigram": lab.ngram_loss(2), "trigram": lab.ngram_loss(3)}
        _last, _best = gpt.heldout_loss[-1], int(np.argmin(gpt.heldout_loss))
        _over_seeds = ""
        if gpt is gpt_shipped and ablations_seeds is not None:
            # the same model trained from seeds 0 to 4 (shipped with the ablations below; seed 0 is this run)
            _curves = ablations_seeds["full model"]
            _ends, _lead = _curves[:, -1], _ladder["trigram"] - _curves[:, -1]
            _beat, _rise = int(np.sum(_lead > 0)), _ends - _curves.min(axis=1)
            _risen = int(np.sum(_rise > 0))
            _over_seeds = (
                f"\n\nOne run is one seed. Trained from seeds 0 to 4, the same model ends between "
                f"**{_ends.min():.2f}** and **{_ends.max():.2f}**: its lead over the trigram ranges from "
                f"{_lead.min():.3f} to {_lead.max():.3f} nats, and {_beat} of the 5 runs beat it. "
                + (
                    f"In every run the last held-out loss is above the run's lowest, by {_rise.min():.3f} "
                    f"to {_rise.max():.3f} nats."
                    if _risen == 5
                    else f"In {_risen} of the 5 runs the last held-out loss is above the run's lowest "
                    f"(by up to {_rise.max():.3f} nats); in the others it is the lowest."
                )
            )
        _shown = mo.vstack(
            [
                mo.md(_caption),
                ui.chart(
                    plot.curves(
                        gpt.steps,
                        {
                            "train": gpt.train_loss,
                            "held-out": gpt.heldout_loss,
                            **{k: np.full(len(gpt.steps), v) for k, v in _ladder.items()},
                        },
                        x_title="training step",
                        y_title="nats per character",
                        dashed=tuple(_ladder),
                        title="next-character cross-entropy",
                    )
                ),
                mo.md(
                    f"Held-out loss **{_last:.2f}** nats per character against **{gpt.unigram:.2f}** for "
                    f"the unigram baseline, **{_ladder['bigram']:.2f}** for the bigram and "
                    f"**{_ladder['trigram']:.2f}** for the trigram. "
                    + (
                        f"This run beats the trigram by only {_ladder['trigram'] - _last:.2f} nats: "
                        f"on {len(gpt.data.train):,} characters of training text, two characters of context "
                        "already tell most of what it learns."
                        if _last < _ladder["trigram"]
                        else f"This run does not beat the trigram: on {len(gpt.data.train):,} characters of "
                        "training text, two characters of context tell as much as its sixteen."
                    )
                    + (
                        f" Its held-out loss was lowest at step {gpt.steps[_best]} ({gpt.heldout_loss[_best]:.2f}) "
                        "and has risen since, while the training loss kept falling: it begins to memorise "
                        "the training text."
                        if _best < len(gpt.steps) - 1
                        else ""
                    )
                    + _over_seeds
                ),
            ]
        )
    mo.vstack([gpt_train, _shown])
    return (gpt,)


@app.cell(hide_code=True)
def _():
    gpt_ablate = mo.ui.run_button(label="Retrain the ablations")
    # The shipped ablations, loaded only if the cells above are still the code that trained them.
    ablation_code = (
        attention,
        split_heads,
        merge_heads,
        next_token_loss,
        train_step,
        heldout_loss,
        train_tiny_gpt,
        ablate_tiny_gpt,
        default_gpt_ablations,
    )
    ablation_classes = (MultiHeadAttention, TransformerBlock, TinyGPT)
    ablations_shipped, ablations_seeds, ablations_problem = lab.shipped_gpt_ablations(
        code=ablation_code, classes=ablation_classes
    )
    mo.md(r"""
    ### Ablations: what each part is worth

    Take one part out of the default model at a time, train again from the same seed on the same
    batches, and compare the held-out losses: `TinyGPT(positions=False)` adds no position
    embedding, so attention sees the earlier characters as a set (section 1's permutation check);
    `heads=1` gives the block one head of width 32 instead of two of 16; `residual=False` drops
    the two "x +" of `TransformerBlock`, so each sub-layer's output replaces the stream. This is
    one run of each, and the seed alone moves a held-out loss too (the lines under the table say
    by how much): below, a gap counts as clear only above 0.15 nats.
    """)
    return (
        ablation_classes,
        ablation_code,
        ablations_problem,
        ablations_seeds,
        ablations_shipped,
        gpt_ablate,
    )


@app.cell
def _(
    ablation_classes,
    ablation_code,
    ablations_problem,
    ablations_seeds,
    ablations_shipped,
    gpt_ablate,
):
    if gpt_ablate.value:
        _total = len(lab.GPT_ABLATIONS) * lab.GPT_DEFAULTS["steps"]
        with mo.status.progress_bar(total=_total, title="training the four models", remove_on_exit=True) as _bar:
            ablations = lab.remembered_ablations(
                ablation_code, ablation_classes, lambda: ablate_tiny_gpt(on_step=throttled(_bar, _total))
            )
        _caption = "Trained by the button with the cells above, as they are on this page, at the default settings."
    else:
        ablations = ablations_shipped
        _caption = (
            "The four runs below were trained in advance by the cells above, at the default settings, "
            "and ship with the course; **Retrain the ablations** runs those cells as they are now."
            if ablations is not None
            else f"{ablations_problem[0].upper()}{ablations_problem[1:]}."
        )
    if ablations is None:
        _shown = mo.callout(mo.md(_caption), kind="info")
    else:
        _full = ablations["full model"]
        _ladder = {"bigram": lab.ngram_loss(2), "trigram": lab.ngram_loss(3)}
        _chart = ui.chart(
            plot.curves(
                _full.steps,
                {
                    **{name: run.heldout_loss for name, run in ablations.items()},
                    **{k: np.full(len(_full.steps), v) for k, v in _ladder.items()},
                },
                x_title="training step",
                y_title="held-out nats per character",
                dashed=tuple(_ladder),
                title="held-out loss with one part taken out",
            )
        )
        _rows = ["| model | training loss | held-out loss | held-out − full model's |", "|---|---|---|---|"] + [
            f"| {name} | {run.final_train:.2f} | {run.final_heldout:.2f} | "
            f"{run.final_heldout - _full.final_heldout:+.2f} |"
            for name, run in ablations.items()
        ]
        _gaps = {
            name: run.final_heldout - _full.final_heldout for name, run in ablations.items() if name != "full model"
        }
        _clear = [name for name, gap in _gaps.items() if gap > 0.15]
        _close = [name for name, gap in _gaps.items() if abs(gap) <= 0.15]
        _said = []
        if _clear:
            _said.append(f"Clearly worse: **{', '.join(_clear)}**.")
        if _close:
            _said.append(f"Within 0.15 nats of the full model: **{', '.join(_close)}**.")
        _nopos = ablations["no position embedding"].final_heldout
        if "no position embedding" in _clear and _nopos < _ladder["bigram"]:
            _said.append(
                f"Without positions the model still beats the bigram ({_nopos:.2f} against "
                f"{_ladder['bigram']:.2f}): the character at the query arrives through the residual "
                "stream, and the set of characters before it still says something."
            )
        _nores = ablations["no residual path"]
        if "no residual path" in _close and _nores.final_train < _full.final_train - 0.1:
            _said.append(
                f"On this seed, without the residual path the training loss even ends lower ({_nores.final_train:.2f} "
                f"against {_full.final_train:.2f}), and the held-out loss does not follow: a single block "
                "learns this text without the residual path."
            )
        if ablations_seeds is not None:
            _f, _n = ablations_seeds["full model"][:, -1], ablations_seeds["no position embedding"][:, -1]
            _spread = _f.max() - _f.min()
            _said.append(
                f"\n\nFor scale, trained from seeds 0 to 4: the full model's final held-out loss ranges "
                f"from {_f.min():.2f} to {_f.max():.2f} ({_spread:.2f} nats); without the "
                f"position embedding it is higher {'for every seed' if np.all(_n > _f) else 'for only some seeds'}, "
                f"by {(_n - _f).min():.2f} to {(_n - _f).max():.2f} nats."
            )
            _inside = [name for name in _close if abs(_gaps[name]) < _spread]
            if _inside:
                _said.append(
                    f"{' and '.join(_inside).capitalize()} were trained from seed 0 only: they differ from the full model by "
                    + " and ".join(f"{_gaps[name]:+.3f}" for name in _inside)
                    + f" nats, within the {_spread:.2f} nats the seed alone moves the "
                    f"full model, so one run cannot tell {'it' if len(_inside) == 1 else 'them'} from it."
                )
        _shown = mo.vstack([mo.md(_caption), _chart, mo.md("\n".join(_rows) + "\n\n" + " ".join(_said))])
    mo.vstack([gpt_ablate, _shown])
    return (ablations,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### Generating text

    The model gives, at every position, a distribution over the next character. To write, feed it
    a prompt, draw the next character from the distribution at the last position, append it, and
    feed the result back in (only the last `context` characters fit). The **temperature** $T$
    divides the logits first, $p = \operatorname{softmax}(z/T)$, as in section 1: below 1 it
    favours the likeliest characters, above 1 it flattens the choice.

    **Change this cell:** replace the draw `rng.choice(len(p), p=p / p.sum())` by the likeliest
    character, `p.argmax()` (greedy decoding). The text below then stops varying with the
    temperature, and soon repeats one phrase over and over: the model's favourite path through the
    text, with no chance to leave it.
    """)
    return


@app.function
def sample(model, chars, prompt="a query ", length=120, temperature=0.8, seed=0):
    """Autoregressive sampling: p = softmax(z / T), z the logits at the last position of the last
    `context` characters; draw the next character from p, append it, repeat `length` times."""
    rng = np.random.default_rng(seed)
    ids = [chars.index(c) for c in prompt if c in chars]
    with engine.no_grad():
        for _ in range(length):
            logits = model(np.array([ids[-model.context :]])).data[0, -1] / temperature
            p = np.exp(logits - logits.max())
            ids.append(int(rng.choice(len(p), p=p / p.sum())))
    return "".join(chars[i] for i in ids)


@app.cell
def _(gpt, gpt_temperature):
    mo.stop(gpt is None or bool(gpt.stopped))
    gpt_sample = lab.sampled_text(sample, gpt.model, gpt.data.chars, "a query ", 120, gpt_temperature.value, seed=0)
    mo.vstack(
        [
            gpt_temperature,
            mo.md(f"Sampled by the model above after the prompt *a query* (temperature {gpt_temperature.value:g}):"),
            mo.plain_text(gpt_sample),
        ]
    )
    return (gpt_sample,)


@app.cell(hide_code=True)
def _():
    gpt_prompt = mo.ui.text(value="the next token", label="prompt", max_length=200)
    mo.md(r"""
    ### What each head reads

    `TransformerBlock` keeps the weights its attention computed on its last input
    (`self.weights`, one $L\times L$ map per head). Type a prompt: the model reads its last 16
    characters (lower-cased; characters it never saw are left out), and each map shows, for every
    query position $i$, the weight it gives each key position $j \le i$ (the causal mask blanks
    the rest). The first chart averages the same weights over the whole held-out text, by how far
    back the key sits.
    """)
    return (gpt_prompt,)


@app.cell
def _(gpt):
    mo.stop(gpt is None or bool(gpt.stopped))
    # How far back each head reads, over the held-out text: once per model (remembered by the lab).
    try:
        reach = lab.head_reach(gpt.model, gpt.data.heldout)
    except ValueError as _err:
        reach, _shown = None, ui.problem(_err)
    else:
        _blocks, _heads, _L = reach.weight.shape
        _far = min(_L, 8)
        _series = {
            f"block {b + 1}, head {h + 1}": reach.weight[b, h, :_far] for b in range(_blocks) for h in range(_heads)
        }
        _chart = ui.chart(
            plot.curves(
                np.arange(_far),
                _series,
                x_title="distance back i − j",
                y_title="mean weight",
                y_domain=(0, 1),
                title="how far back each head reads (held-out text)",
            )
        )
        _share = ", ".join(
            f"{s} {reach.weight[b, h, 1]:.0%}"
            for s, (b, h) in zip(_series, [(b, h) for b in range(_blocks) for h in range(_heads)])
        )
        _previous = bool(np.all(reach.favourite[0] == 1))
        _shown = mo.vstack(
            [
                _chart,
                mo.md(
                    f"Weight on the character just before the query, on average: {_share}. "
                    + (
                        "Every head of the first block gives that one character more weight than any other. "
                        "The character at the query itself reaches the read-out through the residual stream, "
                        "so what the model mostly reads is the last two characters, the context a trigram "
                        "counts, which fits a loss so close to the trigram's."
                        if _previous
                        else "Not every head of the first block reads mostly the character before."
                    )
                ),
            ]
        )
    _shown
    return (reach,)


@app.cell
def _(gpt, gpt_prompt):
    mo.stop(gpt is None or bool(gpt.stopped))
    try:
        head_view = lab.head_maps(gpt.model, gpt.data.chars, gpt_prompt.value)
    except ValueError as _err:
        head_view, _shown = None, ui.problem(_err)
    else:
        _w = head_view.window
        _labels = [f"{i}:{'␣' if c == ' ' else c}" for i, c in enumerate(_w.text)]
        # every head's map in one chart, a panel each (one element to send, one view to redraw)
        _blocks, _heads, _L = head_view.weights.shape[:3]
        _weights = np.where(np.tri(_L, dtype=bool), head_view.weights, np.nan)  # the causal mask blanks j > i
        _query, _key = np.meshgrid(np.arange(_L), np.arange(_L), indexing="ij")
        _names = [f"block {b + 1}, head {h + 1}" for b in range(_blocks) for h in range(_heads)]
        _maps = ui.chart(
            alt.Chart(
                plot.data(
                    query=np.tile(np.asarray(_labels, dtype=object)[_query.ravel()], len(_names)),
                    key=np.tile(np.asarray(_labels, dtype=object)[_key.ravel()], len(_names)),
                    weight=_weights.reshape(-1),
                    head=np.repeat(np.arange(len(_names)), _L * _L),
                    digits=3,
                ),
                width=260,
                height=260,
            )
            .mark_rect()
            .encode(
                alt.X("key:O", sort=_labels, title="key j"),
                alt.Y("query:O", sort=_labels, title="query i"),
                alt.Color("weight:Q", title="weight", scale=alt.Scale(scheme="purples", domain=[0, 1])),
                [alt.Tooltip("query:O"), alt.Tooltip("key:O"), alt.Tooltip("weight:Q", format=".3f")],
            )
            .facet(
                alt.Facet(
                    "head:O",
                    title=None,
                    header=alt.Header(
                        labelExpr="".join(f"datum.value == {i} ? {lab.vega_text(n)} : " for i, n in enumerate(_names))
                        + "''"
                    ),
                ),
                columns=2,
            )
        )
        _top = np.argsort(head_view.next_p)[::-1][:3]
        _next = ", ".join(
            f"“{'␣' if gpt.data.chars[k] == ' ' else gpt.data.chars[k]}” {head_view.next_p[k]:.2f}" for k in _top
        )
        _shown = mo.vstack(
            [
                mo.md(
                    f"The model reads **“{_w.text}”**"
                    + (f" (left out: {', '.join(repr(c) for c in _w.dropped)})" if _w.dropped else "")
                    + f"; its likeliest next characters: {_next}."
                ),
                _maps,
            ]
        )
    mo.vstack([gpt_prompt, _shown])
    return (head_view,)


@app.cell
def _():
    def _script():
        import engine
        import engine.functional as F
        from engine import nn
        from engine.attention import apply_rope, causal_mask

        q = engine.randn(2, 4, 10, 16)  # [B, H, L, d_k]
        k, v = engine.randn(2, 4, 10, 16), engine.randn(2, 4, 10, 16)
        out = F.scaled_dot_product_attention(apply_rope(q), apply_rope(k), v, attn_mask=causal_mask(10))
        mha_layer = nn.MultiheadAttention(64, num_heads=4, batch_first=True)
        x = engine.randn(2, 10, 64)
        y, w = mha_layer(x, x, x)  # self-attention, weights averaged over heads
        return f"`out.shape` = {out.shape} · `y.shape` = {y.shape} · `w.shape` = {w.shape}"

    mo.md(
        "## The same in your own script\n\nThe engine's attention functions take PyTorch's arguments "
        "(a boolean mask is True where attention is allowed).\n\n" + _script() + "\n\n---\n\n"
        "**Where next.** Attention mixes information across positions; generative models learn "
        "whole distributions. " + toc.nav_md(METADATA["id"])
    )
    return


if __name__ == "__main__":
    app.run()

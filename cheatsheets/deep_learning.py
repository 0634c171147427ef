import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full", app_title="Cheat sheet · Deep learning essential formulas")

with app.setup:
    import marimo as mo

    from engine import data
    from engine.course import formulas, metadata, render, toc, ui
    from engine.course.formulas import deep_learning as hub
    from engine.course.labs import losses as lab

    METADATA = metadata("deep_learning")


@app.function
def show_section(key: str, query: str, prose: str = ""):
    """A hub section (heading, links, prose, rows matching ``query``), or nothing when the query
    matches none of its rows."""
    text = render.hub_section_md(key, query, prose, from_id=METADATA["id"])
    return ui.cached_md(text) if text else None


@app.function
def sections_shown(sections):
    """The hub sections a query leaves (:func:`show_section` gives None for the others), one under
    the other."""
    return mo.vstack([s for s in sections if s is not None], gap=1.5)


@app.function
def page_index_md() -> str:
    """Every notebook and cheat sheet of the course, with its link and summary."""
    lines = []
    for kind, heading in (("notebook", "Notebooks"), ("cheatsheet", "Cheat sheets")):
        lines.append(f"**{heading}**\n")
        for e in toc.entries(kind):
            if e.id != METADATA["id"]:
                lines.append(f"- [{e.title}]({toc.link(e.id, from_id=METADATA['id'])}): {e.summary}")
        lines.append("")
    return "\n".join(lines)


@app.function
def check_every_row(rows):
    """Run every row's NumPy and engine snippets; returns (number that agree, [(id, error)])."""
    failures = []
    for row in mo.status.progress_bar(rows, title="checking formulas", remove_on_exit=True):
        try:
            formulas.check_row(row, backends=["numpy", "engine"])
        except Exception as error:  # reported in the page, never a traceback
            failures.append((row.id, f"{type(error).__name__}: {error}"))
    return len(rows) - len(failures), failures


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        r"""
    From one neuron to diffusion models, on one page. Each row pairs a formula with the same
    computation written three ways: NumPy, the course's own engine, and PyTorch. The test suite
    runs every one of those snippets on random inputs and checks that the three agree, so code
    copied from here computes what the formula says. Sections follow the order of a training
    step; each names the notebook where its formulas are derived and explored.
    """,
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## The training path

    $$
    \boxed{
    \text{input } \mathbf x
    \xrightarrow{\ \text{layers}\ } \text{logits } \mathbf z
    \xrightarrow{\ \text{output function}\ } \hat{\mathbf y}
    \xrightarrow{\ \text{loss}\ } \mathcal L
    \xrightarrow{\ \text{backpropagation}\ } \nabla_\theta \mathcal L
    \xrightarrow{\ \text{optimizer}\ } \theta_{t+1}
    }
    $$

    One optimisation step runs this chain once on a mini-batch: the forward pass ends in a
    number, the loss; the backward pass returns that number's gradient for every parameter; the
    optimizer uses the gradient to change the parameters a little. Sections 1–3 are the forward pass, 4 the backward pass,
    5–7 and 10 how the step is taken and kept stable, 12–13 how to run and debug the whole loop.
    """)
    return


@app.cell
def _():
    query = mo.ui.text(placeholder="relu, adam, conv, kl …", label="Filter the formulas by name", full_width=True)
    return (query,)


@app.cell(hide_code=True)
def _(query):
    # the filter, its summary and sections 1-12 in one cell: a filter query re-runs one cell here, not thirteen
    sections_shown(
        [
            mo.vstack(
                [
                    query,
                    ui.cached_md(render.search_md(query.value, from_id=METADATA["id"])),
                    ui.cached_md(render.LEGEND),
                ]
            ),
            show_section(
                "neuron",
                query.value,
                r"""
        A neuron weighs its inputs, adds a bias and bends the sum with an activation $\phi$; a dense
        layer does this for $n_{out}$ neurons at once with one matrix product. The course writes it
        as PyTorch stores it: $W \in \mathbb R^{n_{out} \times n_{in}}$ (row $j$ holds the weights of
        output $j$) and a batch $X$ of shape $(B, n_{in})$, one sample per row, so $Z = X W^\top + \mathbf b$.
        Take the activations away and any stack of layers is one matrix product.
        """,
            ),
            show_section(
                "activations",
                query.value,
                r"""
        ReLU is the default in hidden layers; GELU and SiLU are its smooth versions in Transformers;
        sigmoid and tanh saturate, which shrinks gradients in deep stacks. Their derivatives are on
        the activation sheet.
        """,
            ),
            show_section(
                "outputs",
                query.value,
                r"""
        The output function and the loss go together. Regression: identity output and MSE. Binary
        classification: a sigmoid and the log loss, whose gradient with respect to the logit is
        simply $\hat p - y$. Multiclass: a softmax and cross-entropy, with gradient $p - \text{onehot}(y)$.
        Pass logits to the fused losses: they stay finite and accurate where $\log(\text{softmax})$
        computed in two steps would overflow or round to $\log 0$.
        """,
            ),
            show_section(
                "backprop",
                query.value,
                r"""
        Backpropagation applies the chain rule from the loss back to every parameter. For a dense
        layer $Z = X W^\top + \mathbf b$, the error signal $\boldsymbol\delta = \partial L / \partial \mathbf z$
        gives the weight gradient as an outer product, $\boldsymbol\delta^\top \mathbf a$, and travels to
        the previous layer through $W$ and $\phi'$. The derivatives sheet lists every primitive's gradient.
        """,
            ),
            show_section(
                "updates",
                query.value,
                r"""
        Gradient descent steps against the gradient, $\theta_{t+1} = \theta_t - \eta\,\nabla_\theta L$;
        near a minimum it converges only while $\eta < 2/\lambda_{\max}$ of the loss's Hessian.
        Momentum keeps an exponentially decaying sum of past gradients; RMSprop and Adam give each
        parameter its own step size (Adam's bias correction makes its first step about $\eta$ in every
        coordinate); AdamW decays the weights apart from the gradient. Clipping the global gradient
        norm keeps one bad batch from throwing the weights far away.
        """,
            ),
            show_section(
                "init",
                query.value,
                r"""
        Initialise so that the activations' variance neither grows nor shrinks from layer to layer
        (He for ReLU, Xavier for tanh). Regularise by penalising large weights (L2 or weight decay,
        the same for plain SGD, not for Adam) or by dropping units at random during training.
        """,
            ),
            show_section(
                "norm",
                query.value,
                r"""
        Normalisation rescales activations to zero mean and unit variance, then lets the network
        choose its own scale $\gamma$ and shift $\beta$. BatchNorm computes the statistics per feature
        across the batch, which suits CNNs; LayerNorm per sample across its features, which suits
        Transformers and works at any batch size; RMSNorm drops LayerNorm's mean and shift. A residual
        connection adds a layer's input to its output, $\mathbf y = \mathbf x + F(\mathbf x)$, so the
        gradient reaches $\mathbf x$ through the identity whatever $F$ does.
        """,
            ),
            show_section(
                "conv",
                query.value,
                r"""
        A convolution slides one small kernel over the input (weight sharing), so its parameter count
        does not depend on the image size. Its output size, the size of its transpose, the span of a
        dilated kernel and the receptive field of a stack are all integer arithmetic.
        """,
            ),
            show_section(
                "attention",
                query.value,
                r"""
        Each query scores every key by a dot product; a softmax turns one query's scores into
        weights, and its output is the weighted average of the values. With $H$ heads, $d_{model}$
        splits into heads of width $d_k = d_{model}/H$, and the scores form a $[B, H, L, L]$ tensor.
        The two $L \times L$ products cost $4 B L^2 d_{model}$ FLOPs, and backward keeps the
        $B H L^2$ weights. A Transformer block wraps attention and an MLP in two residual sub-layers,
        each reading a LayerNorm of the residual stream (pre-norm). RoPE marks positions by turning
        each coordinate pair of a query or key through an angle proportional to the token's position,
        so position enters a score only through the offset $m - n$ between the two tokens (their
        content sets the rest).
        """,
            ),
            show_section(
                "schedules",
                query.value,
                r"""
        The learning rate rarely stays constant: warm it up while Adam's statistics settle, then
        decay it in steps, along a cosine, in one cycle, or when the validation loss stops improving.
        """,
            ),
            show_section(
                "metrics",
                query.value,
                r"""
        Report what matters for the task: accuracy only when classes are balanced, precision and
        recall (and their F1) otherwise, ROC-AUC for rankings, R² for regression, perplexity for
        language models.
        """,
            ),
            show_section(
                "tips",
                query.value,
                r"""
        - **Normalise the inputs** with the training set's mean and standard deviation.
        - **Check the initial loss**: with $K$ balanced classes an untrained model should score near
          $\ln K$. If the loss turns into NaN, lower the learning rate or clip the gradients.
        - **Overfit one batch** first: a working model drives the loss on one small batch to almost
          zero; if it cannot, look for a bug before tuning anything.
        - **`model.train()` / `model.eval()`** switch dropout and BatchNorm between their two modes.
        - **When the validation loss climbs while the training loss keeps falling**, the model is
          memorising: add dropout or weight decay, get more data, or stop earlier.
        - **Check gradients** by central differences in float64 (`engine.gradcheck`).
        - **No gradient** for evaluation and frozen parts: `with engine.no_grad():`.
        """,
            ),
        ]
    )
    return


@app.cell
def _():
    n_classes = mo.ui.slider(2, 1000, value=10, label="classes K", debounce=True)
    logit_scale = mo.ui.slider(0.0, 10.0, step=0.1, value=0.1, label="std of the initial logits", debounce=True)
    return logit_scale, n_classes


@app.cell(hide_code=True)
def _(logit_scale, n_classes):
    initial, ln_k = lab.initial_loss(n_classes.value, logit_scale.value)
    _verdict = (
        "close to ln K: the model starts out undecided, as it should"
        if abs(initial - ln_k) < 0.1 * ln_k
        else "far above ln K: the initial logits are too large, so the model starts out confidently wrong"
    )
    mo.vstack(
        [
            mo.md(
                "**Try the initial-loss check.** Random logits for 512 samples with random labels; "
                "the engine computes their mean cross-entropy."
            ),
            mo.hstack([n_classes, logit_scale], justify="start", gap=2),
            mo.md(f"initial loss **{initial:.3f}** vs $\\ln K$ = **{ln_k:.3f}**: {_verdict}."),
        ]
    )
    return (initial,)


@app.cell
def _():
    loop_button = mo.ui.run_button(label="Run the NumPy and engine loops on two moons")
    return (loop_button,)


@app.cell(hide_code=True)
def _(loop_button, query):
    _md = render.hub_section_md(
        "loop",
        query.value,
        r"""
    The whole path in a few lines: a two-layer network trained with cross-entropy, first in NumPy
    with the backward pass written by hand (the gradients of sections 3 and 4), then with the
    engine, where `loss.backward()` does that work. The PyTorch loop is the engine loop with
    other imports. The tests run all three and require a low loss on the two-moons data.
    """,
        from_id=METADATA["id"],
    )
    mo.vstack(
        [
            ui.cached_md(_md),
            mo.ui.tabs(
                {
                    "NumPy": ui.cached_md(f"```python\n{hub.NUMPY_TRAINING_LOOP}```"),
                    "engine": ui.cached_md(f"```python\n{hub.ENGINE_TRAINING_LOOP}```"),
                    "PyTorch": ui.cached_md(f"```python\n{hub.torch_training_loop()}```"),
                }
            ),
            loop_button,
        ]
    ) if _md else None
    return


@app.cell(hide_code=True)
def _(loop_button):
    mo.stop(not loop_button.value)
    _X, _y = data.make_moons(200, noise=0.1, seed=0)
    with mo.status.spinner(title="training…"):
        loop_results = {b: hub.run_training_loop(b, _X, _y) for b in ("numpy", "engine")}
    mo.md(
        "\n".join(
            f"- **{b}**: final loss {r['loss']:.4f}, training accuracy {r['accuracy']:.1%}"
            for b, r in loop_results.items()
        )
    )
    return (loop_results,)


@app.cell(hide_code=True)
def _(query):
    # sections 14-15 in one cell (after the loop's, which holds its button)
    sections_shown(
        [
            show_section(
                "diffusion",
                query.value,
                r"""
        A diffusion model learns to undo noise. The forward process adds Gaussian noise over $T$
        steps with a schedule $\beta_t$; in closed form, $x_t$ is a mix of $x_0$ and fresh noise that
        can be drawn for any $t$ in one step. A network $\epsilon_\theta$ learns to predict that noise
        (the DDPM loss); sampling runs the chain backwards, in $T$ ancestral steps with fresh noise or
        in a few deterministic DDIM steps. Tweedie's formula says why predicting the noise is enough:
        it gives the score, and the score gives the best estimate of $x_0$.
        """,
            ),
            show_section(
                "vae",
                query.value,
                r"""
        A variational autoencoder maximises a lower bound on $\log p(x)$: the reconstruction term
        minus the KL divergence from the encoder's Gaussian to the prior, which has a closed form.
        Averaging $K$ importance weights inside the log gives a tighter bound, between the ELBO
        ($K = 1$) and $\log p(x)$.
        """,
            ),
        ]
    )
    return


@app.cell
def _():
    check_button = mo.ui.run_button(label="Check every formula of every sheet (NumPy vs engine)")
    return (check_button,)


@app.cell(hide_code=True)
def _(check_button):
    mo.vstack(
        [
            mo.md(
                f"## Check it yourself\n\nThe sheets hold **{len(formulas.ROWS)}** formula rows. Run "
                "them all here: every NumPy snippet against its engine snippet, on fresh random inputs."
            ),
            check_button,
        ]
    )
    return


@app.cell(hide_code=True)
def _(check_button):
    mo.stop(not check_button.value)
    rows_agreeing, rows_failing = check_every_row(formulas.ROWS)
    (
        mo.callout(mo.md(f"All **{rows_agreeing}** rows agree."), kind="success")
        if not rows_failing
        else mo.callout(
            mo.md(
                f"{rows_agreeing} rows agree; these do not:\n\n" + "\n".join(f"- `{i}`: {e}" for i, e in rows_failing)
            ),
            kind="danger",
        )
    )
    return rows_agreeing, rows_failing


@app.cell(hide_code=True)
def _():
    mo.md("## Every page of the course\n\n" + page_index_md())
    return


if __name__ == "__main__":
    app.run()

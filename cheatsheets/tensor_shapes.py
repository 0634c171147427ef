import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full", app_title="Cheat sheet · Tensor shapes")

with app.setup:
    import marimo as mo

    from engine import shapes
    from engine.course import formulas, metadata, ui

    METADATA = metadata("tensor_shapes")


@app.function
def conv_report(W: int, K: int, S: int, P: int, D: int, P_out: int):
    """Output sizes of a convolution and of its transpose, from ``engine.shapes``, as markdown."""
    lines = [f"- effective kernel $K_{{eff}} = K + (K - 1)(D - 1)$ = **{shapes.effective_kernel_size(K, D)}**"]
    problems = []
    try:
        lines.append(f"- convolution output $O$ = **{shapes.conv_output_size(W, K, S, P, D)}**")
    except ValueError as error:
        problems.append(str(error))
    try:
        lines.append(f"- transposed convolution output = **{shapes.conv_transpose_output_size(W, K, S, P, P_out, D)}**")
    except ValueError as error:
        problems.append(str(error))
    out = [mo.md("\n".join(lines))]
    out += [mo.callout(mo.md(p), kind="warn") for p in problems]
    return mo.vstack(out)


@app.function
def attention_report(B: int, L: int, d_model: int, H: int):
    """The shapes through multi-head self-attention, from ``engine.shapes``, as a markdown table."""
    try:
        result = shapes.attention_shapes(B, L, d_model, H)
    except ValueError as error:
        return mo.callout(mo.md(f"{error}: pick a number of heads that divides d_model."), kind="warn")
    rows = "\n".join(f"| {stage} | {list(shape)} |" for stage, shape in result.shapes.items())
    return mo.md(
        f"$d_k = d_{{model}} / H$ = **{result.d_k}**; parameters: "
        f"**{result.params['total']:,}**\n\n| stage | shape |\n|---|---|\n{rows}"
    )


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        r"""
    The size rules of dense, convolution and attention layers. Each rule is checked three ways:
    the arithmetic in NumPy, `engine.shapes` (or an engine layer run on zeros), and a real PyTorch
    layer run on zeros, with sizes drawn at random.
    """,
    )
    return


@app.cell
def _():
    conv_w = mo.ui.slider(1, 64, value=32, label="input size W", show_value=True)
    conv_k = mo.ui.slider(1, 11, value=3, label="kernel K", show_value=True)
    conv_s = mo.ui.slider(1, 4, value=2, label="stride S", show_value=True)
    conv_p = mo.ui.slider(0, 5, value=1, label="padding P", show_value=True)
    conv_d = mo.ui.slider(1, 4, value=1, label="dilation D", show_value=True)
    conv_out_pad = mo.ui.slider(0, 3, value=1, label="output padding (transposed)", show_value=True)
    return conv_d, conv_k, conv_out_pad, conv_p, conv_s, conv_w


@app.cell(hide_code=True)
def _(conv_d, conv_k, conv_out_pad, conv_p, conv_s, conv_w):
    ui.try_it(
        "**Convolution calculator.** One spatial dimension; the transposed convolution "
        "maps size O back to W when its output padding is right.",
        [[conv_w, conv_k, conv_s], [conv_p, conv_d, conv_out_pad]],
        conv_report(conv_w.value, conv_k.value, conv_s.value, conv_p.value, conv_d.value, conv_out_pad.value),
    )
    return


@app.cell(hide_code=True)
def _(att_b, att_d, att_h, att_l):
    ui.try_it(
        "**Attention shapes.** Self-attention of a batch of sequences; the scores grow as L².",
        [att_b, att_l, att_d, att_h],
        attention_report(att_b.value, att_l.value, att_d.value, att_h.value),
    )
    return


@app.cell
def _():
    att_b = mo.ui.slider(1, 64, value=8, label="batch B", show_value=True)
    att_l = mo.ui.slider(1, 512, value=128, label="sequence length L", show_value=True)
    att_d = mo.ui.slider(8, 1024, step=8, value=512, label="d_model", show_value=True)
    att_h = mo.ui.slider(1, 16, value=8, label="heads H", show_value=True)
    formulas.tables(METADATA["id"])  # the sheet's tables, under the panel: no control re-runs this cell
    return att_b, att_d, att_h, att_l


if __name__ == "__main__":
    app.run()

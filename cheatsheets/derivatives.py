import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full", app_title="Cheat sheet · Derivatives and gradients")

with app.setup:
    import marimo as mo
    import numpy as np

    from engine.course import formulas, metadata, render, ui

    METADATA = metadata("derivatives")

    # Every row this sheet shows, by id, for the "check a row" picker.
    SHEET_ROWS = {r.name: r.id for _, rows in render.sheet_sections(METADATA["id"]) for r in rows}


@app.function
def summarize(value) -> str:
    """A short description of a result: its shape and first values."""
    if isinstance(value, tuple):
        return " ; ".join(summarize(v) for v in value)
    a = np.asarray(value)
    if a.ndim == 0:
        return f"{a.item():.6g}"
    flat = ", ".join(f"{v:.4g}" for v in a.ravel()[:4])
    return f"shape {a.shape}: [{flat}{', …' if a.size > 4 else ''}]"


@app.function
def max_difference(a, b) -> float:
    """The largest absolute difference between two results (tuples element by element)."""
    if isinstance(a, tuple):
        return max(max_difference(x, y) for x, y in zip(a, b))
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float)), initial=0.0))


@app.function
def run_snippets(row_id: str, seed: int, with_torch: bool) -> dict:
    """Run one row's snippets on inputs drawn with ``seed``, as the tests do.

    Returns {"row", "results" (backend -> result, in the order run), "failed" (backend, error) for
    a snippet that raised, "disagreement" (the comparison's message) and "agree"}.
    """
    row = formulas.row(row_id)
    backends = ["numpy", "engine"] + (["torch"] if with_torch and row.torch is not None else [])
    runs = backends
    if "torch" in backends:  # the first PyTorch run imports torch (~1 s): show that it is under way
        runs = mo.status.progress_bar(
            backends,
            title="running the snippets",
            subtitle="the first PyTorch run imports torch (about 1 s)",
            remove_on_exit=True,
        )
    check = {"row": row, "results": {}, "failed": None, "disagreement": None, "agree": False}
    for backend in runs:
        try:
            check["results"][backend] = formulas.evaluate(row, backend, seed)
        except Exception as error:  # shown to the reader, never a traceback
            check["failed"] = (backend, f"{type(error).__name__}: {error}")
            return check
    try:
        for backend in backends[1:]:
            formulas.assert_close(check["results"][backend], check["results"]["numpy"], row.rtol, row.atol, backend)
        check["agree"] = True
    except AssertionError as error:
        check["disagreement"] = str(error)
    return check


@app.function
def check_report(check: dict):
    """What :func:`run_snippets` found, as the page shows it: the formula, each snippet with its
    result and its largest difference from NumPy, and the verdict."""
    row, results = check["row"], check["results"]
    if check["failed"]:
        backend, error = check["failed"]
        return mo.callout(mo.md(f"The {backend} snippet failed: `{error}`"), kind="danger")
    lines = []
    for backend, result in results.items():
        line = f"- **{backend}** `{getattr(row, backend)}` → {summarize(result)}"
        if backend != "numpy":
            line += f" (largest difference from NumPy: {max_difference(result, results['numpy']):.2e})"
        lines.append(line)
    verdict = (
        mo.callout(mo.md(f"All {len(results)} agree (rtol {row.rtol:g})."), kind="success")
        if check["agree"]
        else mo.callout(mo.md(f"Disagreement: {check['disagreement']}"), kind="danger")
    )
    return mo.vstack([mo.md(f"${row.latex}$"), mo.md("\n".join(lines)), verdict])


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        r"""
    What backpropagation needs from each operation: its forward function and its gradient. A
    gradient row is a vector-Jacobian product: given the upstream gradient $g = \partial L / \partial r$,
    it gives $\partial L / \partial(\text{input})$. The NumPy column is the formula; the engine and
    PyTorch columns ask autograd (`r.backward(g)`, then `.grad`). Two classic slips are corrected
    here: $\partial(a/b)/\partial b = -a/b^2$ and $\partial \log_\beta x / \partial\beta =
    -\ln x / (\beta \ln^2 \beta)$, both with a minus sign.
    """,
    )
    return


@app.cell(hide_code=True)
def _(picked, seed, torch_button):
    row_check = run_snippets(picked.value, seed.value, torch_button.value)
    ui.try_it(
        "**Check a row.** Pick a row, draw new random inputs, and run its snippets: the tests do this "
        "for every row of every sheet.",
        [picked, seed, torch_button],
        check_report(row_check),
    )
    return (row_check,)


@app.cell
def _():
    picked = mo.ui.dropdown(options=SHEET_ROWS, value="Division gradient", label="row")
    seed = mo.ui.slider(0, 99, value=0, label="random inputs (seed)", show_value=True)
    # a button, not a switch: the first PyTorch run imports torch (~1 s), which no control should wait for;
    # without PyTorch the button says what is missing and how to add it
    torch_button = mo.ui.run_button(
        label=(
            "also run PyTorch (the first run imports it: about 1 s)"
            if formulas.torch_available()
            else "PyTorch is not installed: pip install torch==2.13.0 adds its column"
        ),
        disabled=not formulas.torch_available(),
    )
    formulas.tables(METADATA["id"])  # the sheet's tables, under the panel: no control re-runs this cell
    return picked, seed, torch_button


if __name__ == "__main__":
    app.run()

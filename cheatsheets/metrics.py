import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full", app_title="Cheat sheet · Metrics")

with app.setup:
    import marimo as mo
    import numpy as np

    from engine import metrics
    from engine.course import formulas, metadata, plot, ui

    METADATA = metadata("metrics")


@app.function
def scored_examples(n: int = 200, separation: float = 1.5, seed: int = 0):
    """A binary task: labels y (a quarter positive) and a classifier's scores s, higher for y = 1."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.25).astype(np.int64)
    s = separation * y + rng.standard_normal(n)
    return y, s


@app.function
def threshold_report(y, s, threshold: float) -> dict:
    """Every metric of the sheet for the predictions s ≥ threshold, from ``engine.metrics``."""
    y_pred = (s >= threshold).astype(np.int64)
    return {
        "confusion": metrics.confusion_matrix(y, y_pred, num_classes=2),
        "accuracy": metrics.accuracy(y, y_pred),
        "precision": metrics.precision(y, y_pred),
        "recall": metrics.recall(y, y_pred),
        "F1": metrics.f1_score(y, y_pred),
        "ROC-AUC": metrics.roc_auc(y, s),
        "predicted positives": int(y_pred.sum()),
    }


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        r"""
    How good is a model? Classification metrics count the four outcomes, true and false
    positives and negatives (TP, FP, TN, FN); ROC-AUC ranks scores without a threshold; R² and
    perplexity measure regression and language models. PyTorch has no metrics of its own (the
    `torchmetrics` package does), so its column spells the formula with tensor operations.
    """,
    )
    return


@app.cell(hide_code=True)
def _(threshold):
    _y, _s = scored_examples()
    shown_metrics = threshold_report(_y, _s, threshold.value)
    _warning = (
        mo.callout(
            mo.md(
                "No example is predicted positive at this threshold: precision "
                "is 0/0 and shown as 0 (`zero_division=0`)."
            ),
            kind="warn",
        )
        if shown_metrics["predicted positives"] == 0
        else mo.md("")
    )
    ui.try_it(
        "**Move the threshold.** 200 examples, a quarter of them positive. Raising the "
        "threshold trades recall for precision; accuracy looks fine even when every example "
        "is called negative. ROC-AUC does not depend on the threshold.",
        [threshold],
        mo.hstack(
            [
                ui.chart(
                    plot.heatmap(
                        shown_metrics["confusion"],
                        x_labels=["pred 0", "pred 1"],
                        y_labels=["true 0", "true 1"],
                        x_title="predicted",
                        y_title="true",
                        annotate=True,
                        fmt=".0f",
                        title="confusion matrix",
                        height=180,
                    )
                ),
                mo.md(
                    "\n".join(
                        f"- **{k}**: {shown_metrics[k]:.3f}"
                        for k in ("accuracy", "precision", "recall", "F1", "ROC-AUC")
                    )
                ),
            ],
            widths=[2, 1],
        ),
        _warning,
    )
    return (shown_metrics,)


@app.cell
def _():
    threshold = mo.ui.slider(-3.0, 4.5, step=0.1, value=0.8, label="decision threshold on the score", show_value=True)
    formulas.tables(METADATA["id"])  # the sheet's tables, under the panel: no control re-runs this cell
    return (threshold,)


if __name__ == "__main__":
    app.run()

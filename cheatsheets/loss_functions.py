import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full", app_title="Cheat sheet · Loss functions")

with app.setup:
    import marimo as mo
    import numpy as np

    import engine
    import engine.functional as F
    from engine.course import formulas, metadata, plot, ui

    METADATA = metadata("loss_functions")


@app.function
def regression_losses(e, delta):
    """Per-residual losses and their autograd derivatives for residuals e = ŷ − y (target 0).

    Returns two dicts, name -> values over e: the losses, and ∂loss/∂ŷ from ``backward()``.
    """
    makers = {
        "MSE": lambda p, t: F.mse_loss(p, t, reduction="none"),
        "MAE": lambda p, t: F.l1_loss(p, t, reduction="none"),
        f"Huber (δ = {delta:g})": lambda p, t: F.huber_loss(p, t, reduction="none", delta=delta),
        f"pseudo-Huber (δ = {delta:g})": lambda p, t: F.pseudo_huber_loss(p, t, reduction="none", delta=delta),
    }
    losses, grads = {}, {}
    target = np.zeros_like(e)
    for name, make in makers.items():
        y_hat = engine.tensor(e, requires_grad=True)
        out = make(y_hat, target)
        out.sum().backward()
        losses[name], grads[name] = out.numpy(), y_hat.grad.numpy()
    return losses, grads


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        r"""
    Losses by task, each with its gradient, in NumPy, the course's engine and PyTorch.
    Give classification losses the raw **logits**: `cross_entropy` and
    `binary_cross_entropy_with_logits` fold the softmax or sigmoid into the loss, which keeps
    them finite where a separate softmax followed by a log would overflow.
    """,
    )
    return


@app.cell(hide_code=True)
def _(delta, e_range):
    _e = np.linspace(-e_range.value, e_range.value, 201)
    _losses, _grads = regression_losses(_e, delta.value)
    ui.try_it(
        "**Robust or not.** Beyond δ, Huber grows linearly like MAE, so an outlier pulls with a "
        "bounded force; MSE's pull grows with the residual. Gradients come from the engine's "
        "`backward()`.",
        [delta, e_range],
        mo.hstack(
            [
                ui.chart(plot.curves(_e, _losses, x_title="residual e = ŷ − y", y_title="loss", title="loss")),
                ui.chart(
                    plot.curves(
                        _e, _grads, x_title="residual e = ŷ − y", y_title="∂loss/∂ŷ", title="gradient (autograd)"
                    )
                ),
            ],
            widths="equal",
        ),
    )
    return


@app.cell
def _():
    delta = mo.ui.slider(0.1, 3.0, step=0.1, value=1.0, label="δ (Huber)", show_value=True)
    e_range = mo.ui.slider(0.5, 10.0, step=0.5, value=3.0, label="residual from −r to r", show_value=True)
    formulas.tables(METADATA["id"])  # the sheet's tables, under the panel: no control re-runs this cell
    return delta, e_range


if __name__ == "__main__":
    app.run()

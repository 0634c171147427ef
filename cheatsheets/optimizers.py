import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full", app_title="Cheat sheet · Optimizers and schedules")

with app.setup:
    import marimo as mo
    import numpy as np

    from engine.course import formulas, metadata, plot, ui

    METADATA = metadata("optimizers")

    SCHEDULES = ("sched.step", "sched.cosine", "sched.warmup", "sched.one_cycle", "sched.plateau")


@app.function
def schedule_inputs(row_id: str, steps: int, lr: float) -> dict:
    """The inputs of a schedule row, rescaled to a horizon of ``steps`` steps and a peak rate ``lr``."""
    row = formulas.row(row_id)
    values = row.inputs(np.random.default_rng(0))
    values["lr"] = lr
    rescale = {
        "sched.step": {"s": max(1, steps // 5)},
        "sched.cosine": {"T": steps - 1},
        "sched.warmup": {"n": max(1, steps // 4)},
        "sched.one_cycle": {"T": steps, "max_lr": lr},
        "sched.plateau": {"patience": max(1, steps // 10), "metric": np.ones(steps)},
    }
    values.update(rescale[row_id])
    return values


@app.function
def schedule_curves(steps: int, lr: float):
    """η_t of every schedule row: the closed form (NumPy) and the engine's scheduler."""
    formula, scheduler = {}, {}
    for row_id in SCHEDULES:
        row = formulas.row(row_id)
        values = schedule_inputs(row_id, steps, lr)
        formula[row.name] = formulas.evaluate_with(row, "numpy", values, steps=steps)
        scheduler[row.name + " (engine)"] = formulas.evaluate_with(row, "engine", values, steps=steps)
    return formula, scheduler


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        r"""
    Update rules with $g = \nabla_\theta L$ and learning rate $\eta$, gradient clipping, and the
    learning-rate schedules. The NumPy column is one step of the rule; the tests run five steps of
    it against the engine's and PyTorch's optimizers, with a new random gradient at each step.
    AdamW's decay uses the weights **before** the step, as PyTorch does.
    """,
    )
    return


@app.cell(hide_code=True)
def _(horizon, peak):
    _formula, _scheduler = schedule_curves(horizon.value, peak.value)
    ui.try_it(
        "**Schedules side by side.** Lines are the closed forms from the table; dots are the "
        "engine's schedulers stepped once per step (plateau: a validation loss that never improves).",
        [horizon, peak],
        ui.chart(
            plot.curves(
                np.arange(horizon.value),
                _formula,
                dots=_scheduler,
                n_dots=30,
                x_title="step t",
                y_title="learning rate η_t",
                title="learning-rate schedules",
            )
        ),
    )
    return


@app.cell
def _():
    horizon = mo.ui.slider(10, 200, step=10, value=60, label="steps", show_value=True)
    peak = mo.ui.slider(0.01, 1.0, step=0.01, value=0.1, label="η (peak learning rate)", show_value=True)
    formulas.tables(METADATA["id"])  # the sheet's tables, under the panel: no control re-runs this cell
    return horizon, peak


if __name__ == "__main__":
    app.run()

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full", app_title="Cheat sheet · Activation functions")

with app.setup:
    import marimo as mo
    import numpy as np

    from engine.course import formulas, metadata, plot, ui

    METADATA = metadata("activation_functions")

    # Activations drawn by the live chart: (forward row, derivative row), both from this sheet.
    CURVES = {
        "ReLU": ("act.relu", "act.relu.grad"),
        "Leaky ReLU": ("act.leaky_relu", "act.leaky_relu.grad"),
        "Sigmoid": ("act.sigmoid", "act.sigmoid.grad"),
        "Tanh": ("act.tanh", "act.tanh.grad"),
        "GELU": ("act.gelu", "act.gelu.grad"),
        "SiLU / Swish": ("act.silu", "act.silu.grad"),
    }


@app.function
def activation_curves(name, x, slope):
    """φ(x) and φ'(x) from the rows' NumPy formulas, and φ'(x) from the engine's autograd.

    The derivative rows compute g·φ'(x); with g = 1 they give φ'(x) itself.
    """
    forward, derivative = (formulas.row(i) for i in CURVES[name])
    values = {"x": x, "g": np.ones_like(x), "a": slope}
    f = formulas.evaluate_with(forward, "numpy", values)
    df = formulas.evaluate_with(derivative, "numpy", values)
    df_autograd = formulas.evaluate_with(derivative, "engine", values)
    return f, df, df_autograd


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        r"""
    Every activation of the course with its derivative: the formula, then the same function in
    NumPy, in the course's engine and in PyTorch. The engine and PyTorch columns are often the
    same line, because the engine uses PyTorch's names.
    """,
    )
    return


@app.cell(hide_code=True)
def _(choice, slope, x_range):
    _x = np.linspace(-x_range.value, x_range.value, 201)
    _f, _df, _autograd = activation_curves(choice.value, _x, slope.value)
    ui.try_it(
        "**Try it.** The line is the formula from the table below; the dark dots are the engine's "
        "autograd, which must sit on the derivative's line.",
        [choice, x_range, slope],
        ui.chart(
            plot.function_and_derivative(
                _x, _f, _df, _autograd, name="φ", var="x", title=f"{choice.value} and its derivative"
            )
        ),
    )
    return


@app.cell
def _():
    choice = mo.ui.dropdown(options=list(CURVES), value="GELU", label="activation φ")
    x_range = mo.ui.slider(1.0, 10.0, step=0.5, value=4.0, label="x from −r to r", show_value=True)
    slope = mo.ui.slider(0.0, 0.5, step=0.01, value=0.1, label="α (Leaky ReLU)", show_value=True)
    formulas.tables(METADATA["id"])  # the sheet's tables, under the panel: no control re-runs this cell
    return choice, slope, x_range


if __name__ == "__main__":
    app.run()

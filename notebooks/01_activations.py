import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="01 · Activation functions")

with app.setup:
    import marimo as mo
    import numpy as np

    import engine
    from engine.course import check_number, plot, toc, verdict
    from engine.course.labs import activations as lab

    METADATA = {
        "id": "01_activations",
        "name": "Activation functions",
        "summary": "ReLU to SwiGLU with their derivatives and ranges, softmax with temperature, "
        "and a depth lab where gradients vanish or explode.",
        "topics": ["activations", "initialisation", "softmax", "vanishing_gradients"],
    }


@app.cell(hide_code=True)
def _():
    mo.md(f"""
    # {METADATA["name"]}

    A neural network is a stack of linear maps, and a linear map of a linear map is still linear:
    without something bent in between, a hundred layers compute no more than one. The activation
    function is that bend. In this notebook you will

    - draw every common activation with its derivative, the derivative computed by the engine's
      **autograd** and laid over the textbook formula;
    - find the output range of each one, including the small negative dips of GELU and SiLU;
    - turn logits into probabilities with a **softmax** and a temperature;
    - stack up to fifty layers and watch the signal and the gradient **vanish or explode**, and
      see which initialisation keeps them alive.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(toc.nav_md(METADATA["id"]))
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1. One neuron, one bend

    A neuron adds up its weighted inputs and passes the sum $z$ through an activation $\phi$:

    $$
    z = \mathbf{w}^\top \mathbf{x} + b, \qquad a = \phi(z).
    $$

    Backpropagation multiplies the incoming gradient by $\phi'(z)$ at every unit, so the
    **derivative matters as much as the function**: where $\phi'$ is zero, nothing is learned.
    Pick an activation below. The blue line is $\phi$, the orange line the derivative's formula,
    and the dark dots are $\phi'$ computed by the engine's autograd (a forward pass, then
    `backward()`), which must sit on the orange line.
    """)
    return


@app.cell
def _():
    act_choice = mo.ui.dropdown(
        options={spec["label"]: name for name, spec in lab.ACTIVATIONS.items()},
        value="GELU (exact)",
        label="activation φ",
    )
    return (act_choice,)


@app.cell
def _():
    leaky_slope = mo.ui.slider(0.0, 0.5, step=0.01, value=0.1, label="leaky ReLU slope α", show_value=True)
    return (leaky_slope,)


@app.cell
def _():
    elu_alpha = mo.ui.slider(0.1, 3.0, step=0.1, value=1.0, label="ELU α", show_value=True)
    return (elu_alpha,)


@app.cell
def _():
    x_span = mo.ui.slider(1, 20, step=1, value=5, label="x range ±", show_value=True)
    return (x_span,)


@app.cell
def _(act_choice, elu_alpha, leaky_slope, x_span):
    act_name = act_choice.value
    act_params = {"slope": leaky_slope.value, "alpha": elu_alpha.value}
    act_curves = lab.evaluate(act_name, np.linspace(-x_span.value, x_span.value, 401), **act_params)
    act_range = lab.output_range(act_name, **act_params)
    act_gap = act_curves.max_derivative_gap
    _spec = lab.ACTIVATIONS[act_name]
    _chart = plot.function_and_derivative(
        act_curves.x, act_curves.f, act_curves.df_formula, act_curves.df_autograd,
        name="φ", var="z", title=_spec["label"],
    )
    _text = mo.md(rf"""
    $$
    \phi(z) = {_spec["formula"]}, \qquad \phi'(z) = {_spec["derivative"]}
    $$

    **Output range (found numerically): {act_range.text()}** · largest gap between autograd
    and the formula on this plot: **{act_gap:.1e}** · {_spec["note"]}.
    """)
    mo.vstack([mo.hstack([act_choice, leaky_slope, elu_alpha, x_span], wrap=True), _chart, _text])
    return act_curves, act_gap, act_name, act_range


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 2. The whole family and their ranges

    The table is computed, not copied: the engine evaluates each function on $[-60, 60]$; a bound
    is *approached* when the curve has flattened onto it (sigmoid never quite reaches 0 or 1),
    *unbounded* when the curve still climbs, and the interior minimum of a non-monotonic
    activation is found by bisection on its autograd derivative, where $\phi'(z) = 0$.
    """)
    return


@app.cell
def _(elu_alpha, leaky_slope):
    family_rows = []
    for _name, _spec in lab.ACTIVATIONS.items():
        _params = {"slope": leaky_slope.value, "alpha": elu_alpha.value}
        _rng = lab.output_range(_name, **_params)
        _min = lab.activation_minimum(_name, **_params)
        _peak = lab.derivative_peak(_name, **_params)
        family_rows.append({
            "activation": _spec["label"],
            "range": _rng.text(),
            "minimum": "—" if _min is None else f"{_min[1]:.4f} at z = {_min[0]:.4f}",
            "steepest slope": f"{_peak:.4f}" if np.isfinite(_peak) else "unbounded",
        })
    mo.ui.table(family_rows, selection=None, pagination=False, label="Ranges and slopes (α from the sliders above)")
    return (family_rows,)


@app.cell
def _():
    gelu_min = lab.activation_minimum("gelu")
    silu_min = lab.activation_minimum("silu")
    _x = np.linspace(-6, 6, 601)
    gelu_error = lab.gelu_approximation_error(_x)
    gelu_error_max = float(np.max(np.abs(gelu_error)))
    _chart = plot.curves(_x, {"tanh approximation − exact GELU": gelu_error}, x_title="z",
                         y_title="difference", colors={"tanh approximation − exact GELU": "error"},
                         title="GELU: the tanh approximation's error", height=200)
    mo.vstack([
        mo.md(rf"""
    **The dips.** GELU and SiLU dip below zero before rising: the engine finds GELU's minimum
    **{gelu_min[1]:.4f}** at $z = {gelu_min[0]:.4f}$ and SiLU's minimum **{silu_min[1]:.4f}**
    at $z = {silu_min[0]:.4f}$ (the tables you may have seen round them to −0.17 and −0.28).

    **Exact versus approximate GELU.** The exact GELU needs the normal CDF $\Phi$; GPT-2 and
    many kernels use $\tfrac12 z\,(1+\tanh(\sqrt{{2/\pi}}\,(z+0.044715z^3)))$ instead. The
    largest difference on $[-6, 6]$ is **{gelu_error_max:.2e}**, far below what training notices.
    """),
        _chart,
    ])
    return gelu_error_max, gelu_min, silu_min


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 3. Softmax and temperature

    An output layer for $K$ classes produces $K$ logits $z_k$; the softmax turns them into
    probabilities, and a temperature $T$ sharpens ($T<1$) or flattens ($T>1$) them:

    $$
    p_k = \frac{e^{z_k/T}}{\sum_j e^{z_j/T}}, \qquad H(p) = -\sum_k p_k \ln p_k \le \ln K .
    $$

    Adding the same constant to every logit changes nothing, which is how the engine stays
    finite: it subtracts the largest logit before exponentiating. Edit the logits (comma
    separated) and move the temperature.
    """)
    return


@app.cell
def _():
    logits_text = mo.ui.text(value="2.0, 1.0, 0.1, -1.0", label="logits z", full_width=True)
    return (logits_text,)


@app.cell
def _():
    temperature = mo.ui.slider(
        steps=[0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0],
        value=1.0, label="temperature T", show_value=True,
    )
    return (temperature,)


@app.cell
def _(logits_text, temperature):
    softmax_result = None
    try:
        _z = lab.parse_numbers(logits_text.value, name="logits")
    except ValueError as _err:
        _out = mo.callout(mo.md(f"**Cannot read the logits.** {_err}"), kind="warn")
    else:
        softmax_result = lab.softmax_with_temperature(_z, temperature.value)
        _chart = plot.bars([f"class {k}" for k in range(len(_z))], softmax_result.probs,
                           y_title="probability p", y_domain=(0, 1), color_name="model",
                           title=f"softmax(z / {temperature.value:g})")
        _out = mo.vstack([_chart, mo.md(
            f"Entropy **H = {softmax_result.entropy:.4f} nats** of at most ln K = "
            f"{softmax_result.max_entropy:.4f} ({100 * softmax_result.entropy_share:.0f} %). "
            "As T → 0 the softmax becomes an arg-max (H → 0); as T grows every class tends to 1/K."
        )])
    mo.vstack([mo.hstack([logits_text, temperature], widths=[2, 1]), _out])
    return (softmax_result,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 4. The depth lab: vanishing and exploding gradients

    Stack $L$ layers $\mathbf z^{(l)} = W^{(l)}\mathbf a^{(l-1)}$, $\mathbf a^{(l)} = \phi(\mathbf z^{(l)})$
    of width $n$, feed a batch of standard normal inputs and backpropagate a random gradient.
    Going down one layer multiplies the error signal by $W^\top$ and by $\phi'$:

    $$
    \boldsymbol\delta^{(l-1)} = \big(W^{(l)\top}\boldsymbol\delta^{(l)}\big)\odot\phi'(\mathbf z^{(l-1)}),
    \qquad
    \frac{\lVert\boldsymbol\delta^{(l-1)}\rVert}{\lVert\boldsymbol\delta^{(l)}\rVert}
    \approx \sigma_W\sqrt{n}\;\operatorname{rms}\phi'(\mathbf z^{(l-1)}).
    $$

    Over $L$ layers these factors **multiply**: slightly below one and the gradient vanishes,
    slightly above and it explodes. Initialisations choose $\sigma_W$ to keep the product near one:
    **He** $\sigma_W^2 = 2/n_{in}$ for ReLU (which zeroes half its inputs), **Xavier**
    $\sigma_W^2 = 2/(n_{in}+n_{out})$ for tanh-like functions, or your own $\sigma_W = s/\sqrt{n_{in}}$.
    A unit is counted **flat** where $\phi'(z)$ is below 5 % of its peak (ReLU's negative side,
    the saturated ends of tanh and sigmoid), and **dead** when it is flat for every example.
    """)
    return


@app.cell
def _():
    depth = mo.ui.slider(1, 50, step=1, value=20, label="depth L", show_value=True, debounce=True)
    return (depth,)


@app.cell
def _():
    width = mo.ui.slider(8, 256, step=8, value=64, label="width n", show_value=True, debounce=True)
    return (width,)


@app.cell
def _():
    depth_act = mo.ui.dropdown(
        options={lab.ACTIVATIONS[n]["label"]: n for n in lab.DEPTH_ACTIVATIONS},
        value="Tanh", label="activation",
    )
    return (depth_act,)


@app.cell
def _():
    init = mo.ui.radio(options={"He": "he", "Xavier": "xavier", "custom σ_W = s/√n": "custom"},
                       value="Xavier", label="initialisation", inline=True)
    return (init,)


@app.cell
def _():
    init_scale = mo.ui.slider(0.1, 3.0, step=0.05, value=1.0, label="custom scale s", show_value=True,
                              debounce=True)
    return (init_scale,)


@app.cell
def _(depth, depth_act, init, init_scale, width):
    depth_report = lab.depth_lab(depth=depth.value, width=width.value, activation=depth_act.value,
                                 init=init.value, scale=init_scale.value, n_samples=128, seed=0)
    mo.hstack([depth, width, depth_act, init, init_scale], wrap=True)
    return (depth_report,)


@app.cell
def _(depth_report):
    _r = depth_report
    _layers = np.arange(1, _r.depth + 1)
    _show = sorted(set(np.linspace(0, _r.depth - 1, min(_r.depth, 8)).round().astype(int)))
    _panels = {f"layer {i + 1}": _r.z_samples[i] for i in _show}
    _flags = {f"layer {i + 1}": f"{100 * _r.flat_share[i]:.0f}% flat" for i in _show}
    _hist = plot.histogram_grid(_panels, bins=30, x_title="pre-activation z", flags=_flags,
                                title="Pre-activations, layer by layer")
    _shares = plot.curves(_layers, {"flat share": _r.flat_share, "dead units": _r.dead_share},
                          x_title="layer l", y_title="share", y_domain=(0, 1), height=180,
                          colors={"flat share": "reference", "dead units": "error"},
                          title="Units with (almost) no slope")
    _grads = plot.curves(_layers, {"product of factors σ_W√n·rms φ′": _r.predicted_grad_norm},
                         dots={"autograd ‖∂L/∂z‖": _r.grad_norm}, n_dots=60,
                         x_title="layer l", y_title="‖∂L/∂z‖", log_y=True, height=180,
                         colors={"product of factors σ_W√n·rms φ′": "analytic"},
                         title="Gradient norm per layer")
    _msg = [mo.callout(mo.md(f"**{_r.message}**"), kind="warn")] if _r.message else []
    _fate = {"vanish": "vanishes", "explode": "explodes", "stable": "stays in range", "broken": "is lost"}
    _summary = mo.md(
        f"σ_W = **{_r.weight_std:.4f}** · first-layer gradient / last-layer gradient = "
        f"**{_r.gradient_ratio:.3g}** → the gradient **{_fate[_r.verdict()]}** "
        f"over {_r.depth} layers · std of z in the last layer: **{_r.z_std[-1]:.3g}**"
    )
    mo.vstack(_msg + [_summary, _hist, mo.hstack([_shares, _grads], widths=[1, 1])])
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Things to try: **sigmoid** with any initialisation (its slope is at most ¼, so the gradient
    shrinks by about 4× per layer); **ReLU with Xavier** (the signal halves every layer) against
    **ReLU with He**; **tanh** with a custom scale of 0.5, 1 and 2 (vanishing, about right,
    saturated and flat); then a custom scale of 3 with ReLU to see an explosion.

    ## 5. Check yourself
    """)
    return


@app.cell
def _():
    answer_sigmoid = mo.ui.text(placeholder="e.g. 0.5", label="σ′(0) =")
    return (answer_sigmoid,)


@app.cell
def _(answer_sigmoid):
    sigmoid_slope_truth = float(lab.engine_derivative("sigmoid", np.array([0.0]))[1][0])
    mo.vstack([
        mo.md("**1.** What is the sigmoid's slope at $z = 0$, its steepest point? (A fraction is fine.)"),
        answer_sigmoid,
        verdict(check_number(answer_sigmoid.value, sigmoid_slope_truth, rel_tol=0.01,
                             hint="σ(0) = ½ and σ′ = σ(1 − σ).")),
    ])
    return (sigmoid_slope_truth,)


@app.cell
def _():
    answer_depth = mo.ui.radio(
        options={"much smaller (it vanishes)": "vanish", "about the same": "stable",
                 "much larger (it explodes)": "explode"},
        value=None, label="",
    )
    return (answer_depth,)


@app.cell
def _(answer_depth):
    depth_truth = lab.depth_lab(depth=30, width=64, activation="sigmoid", init="xavier", n_samples=64, seed=1)
    if answer_depth.value is None:
        _fb = (None, "Choose an answer; the engine then runs the network.")
    elif answer_depth.value == depth_truth.verdict():
        _fb = (True, f"Right: the first layer's gradient is **{depth_truth.gradient_ratio:.1e}** times the last "
                     "layer's. σ′ ≤ ¼ costs a factor of about 4 per layer.")
    else:
        _fb = (False, "Not this one. Think of the largest possible slope of a sigmoid, then multiply it 30 times.")
    mo.vstack([
        mo.md("**2.** A 30-layer network of **sigmoid** units with Xavier initialisation. Compared with "
              "the last layer, the gradient that reaches the first layer is…"),
        answer_depth,
        verdict(_fb),
    ])
    return (depth_truth,)


@app.cell
def _():
    answer_softmax = mo.ui.text(placeholder="e.g. 0.33", label="p₀ =")
    return (answer_softmax,)


@app.cell
def _(answer_softmax):
    softmax_truth = float(lab.softmax_with_temperature([2.0, 0.0, 0.0], 1.0).probs[0])
    mo.vstack([
        mo.md("**3.** Logits $z = (2, 0, 0)$ at $T = 1$: what probability does the softmax give the first class? "
              "(Two decimals are enough.)"),
        answer_softmax,
        verdict(check_number(answer_softmax.value, softmax_truth, abs_tol=0.006,
                             hint="p₀ = e² / (e² + e⁰ + e⁰), with e² ≈ 7.39.")),
    ])
    return (softmax_truth,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 6. The same in your own script

    ```python
    import numpy as np
    import engine
    import engine.functional as F

    z = engine.tensor(np.linspace(-4, 4, 9), requires_grad=True)
    a = F.gelu(z)                  # or F.relu, F.silu, F.leaky_relu(z, 0.1), F.elu, ...
    a.backward(engine.ones_like(a))  # d a_i / d z_i for every element at once
    print(a.data, z.grad)

    p = F.softmax(engine.tensor([2.0, 1.0, 0.1]) / 0.5, dim=-1)   # temperature 0.5

    from engine import nn
    layer = nn.Linear(256, 256)
    nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")    # He: Var(W) = 2 / n_in
    ```

    The depth lab is `engine.course.labs.activations.depth_lab(depth=20, width=64, activation="tanh",
    init="xavier")`; its report holds every number drawn above.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(toc.nav_md(METADATA["id"]))
    return


if __name__ == "__main__":
    app.run()

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="01 · Activation functions")

with app.setup:
    import altair as alt  # noqa: F401  (the page's charts, built by the course layer: imported once, here)
    import marimo as mo
    import numpy as np

    import engine
    import engine.functional as F
    from engine import nn
    from engine.course import exercises, metadata, plot, toc, ui
    from engine.course.labs import activations as lab

    METADATA = metadata("01_activations")


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
    - stack up to fifty layers and watch the gradient **vanish or explode**, see which
      initialisation keeps it alive, and why the same number decides the forward variance;
    - add a **residual path** and **LayerNorm**, each of which alone lets the gradient of fifty
      ReLU layers explode, keep it in range with both, and train fifty layers that way;
    - count the **linear pieces** a small ReLU network cuts the plane into, and what they buy;
    - train it at learning rates from 0.001 to 1 and count the **dead ReLUs** each leaves behind.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(toc.nav_md(METADATA["id"]))
    return


@app.cell(hide_code=True)
def _():
    act_choice = mo.ui.dropdown(
        options={**{spec["label"]: name for name, spec in lab.ACTIVATIONS.items()}, "yours: my_activation": "mine"},
        value="GELU (exact)",
        label="activation φ",
    )
    leaky_slope = mo.ui.slider(0.0, 0.5, step=0.01, value=0.1, label="leaky ReLU slope α", show_value=True)
    elu_alpha = mo.ui.slider(0.1, 3.0, step=0.1, value=1.0, label="ELU α", show_value=True)
    x_span = mo.ui.slider(1, 20, step=1, value=5, label="x range ±", show_value=True)
    mo.md(r"""
    ## 1. One neuron, one bend

    A neuron adds up its weighted inputs and passes the sum $z$ through an activation $\phi$.
    With an example written as a row $\mathbf x$ and the neuron's weights as a row $\mathbf w$
    (one row of a layer's weight matrix $W$, stored (out, in) as `nn.Linear` does):

    $$
    z = \mathbf{x}\,\mathbf{w}^\top + b, \qquad a = \phi(z).
    $$

    Backpropagation multiplies the incoming gradient by $\phi'(z)$ at every unit, so the
    **derivative matters as much as the function**: where $\phi'$ is zero, nothing is learned.
    Pick an activation below. The blue line is $\phi$, the orange line the derivative's formula,
    and the dark dots are $\phi'$ computed by the engine's autograd (a forward pass, then
    `backward()`), which must sit on the orange line. The last entry of the menu is your own
    activation, the cell `my_activation` of section 4: it has no formula on file, so its orange
    line is the central difference $(\phi(z+h) - \phi(z-h))/2h$ with $h = 10^{-5}$.
    """)
    return act_choice, elu_alpha, leaky_slope, x_span


@app.cell
def _(act_choice, elu_alpha, leaky_slope, x_span):
    act_name = act_choice.value
    act_params = {"slope": leaky_slope.value, "alpha": elu_alpha.value}
    if act_name == "mine":  # your own φ: autograd's φ′ as dots over the central difference
        act_range = lab.output_range(my_activation)
        act_curves, _chart = lab.own_activation_view(my_activation, x_span.value)
        act_gap = act_curves.max_derivative_gap
        _text = mo.md(f"""
    **Output range (found numerically): {act_range.text()}** · largest gap between autograd
    and the central difference on this plot: **{act_gap:.1e}** · your `my_activation`, from section 4.
    """)
    else:
        act_range = lab.output_range(act_name, **act_params)
        # φ and its derivative from the formula as lines, the engine's autograd φ′ as dots over the formula.
        act_curves, _chart = lab.activation_view(act_name, x_span.value, **act_params)
        act_gap = act_curves.max_derivative_gap
        _spec = lab.ACTIVATIONS[act_name]
        _text = mo.md(rf"""
    $$
    \phi(z) = {_spec["formula"]}, \qquad \phi'(z) = {_spec["derivative"]}
    $$

    **Output range (found numerically): {act_range.text()}** · largest gap between autograd
    and the formula on this plot: **{act_gap:.1e}** · {_spec["note"]}.
    """)
    mo.vstack([mo.hstack([act_choice, leaky_slope, elu_alpha, x_span], wrap=True), ui.chart(_chart), _text])
    return act_curves, act_gap, act_name, act_params, act_range


@app.cell(hide_code=True)
def _():
    fixed_family_rows = {
        _name: lab.family_row(_name) for _name, _spec in lab.ACTIVATIONS.items() if not _spec["params"]
    }
    mo.md(r"""
    ## 2. The whole family and their ranges

    The table is computed, not copied: the engine evaluates each function on $[-60, 60]$; a bound
    is *approached* when the curve has flattened onto it (sigmoid never quite reaches 0 or 1),
    *unbounded* when the curve still climbs, and the interior minimum of a non-monotonic
    activation is found by bisection on its autograd derivative, where $\phi'(z) = 0$.
    """)
    return (fixed_family_rows,)


@app.cell
def _(elu_alpha, fixed_family_rows, leaky_slope):
    _params = {"leaky_relu": {"slope": leaky_slope.value}, "elu": {"alpha": elu_alpha.value}}
    family_rows = [
        fixed_family_rows[_name] if _name in fixed_family_rows else lab.family_row(_name, **_params[_name])
        for _name in lab.ACTIVATIONS
    ]
    mo.ui.table(family_rows, selection=None, pagination=False, label="Ranges and slopes (α from the sliders above)")
    return (family_rows,)


@app.cell
def _():
    gelu_min = lab.activation_minimum("gelu")
    silu_min = lab.activation_minimum("silu")
    _x = np.linspace(-6, 6, 601)
    gelu_error = lab.gelu_approximation_error(_x)
    gelu_error_max = float(np.max(np.abs(gelu_error)))
    _chart = plot.curves(
        _x[::4],
        {"tanh approximation − exact GELU": gelu_error[::4]},
        x_title="z",
        y_title="difference",
        colors={"tanh approximation − exact GELU": "error"},
        title="GELU: the tanh approximation's error",
        height=200,
    )
    mo.vstack(
        [
            mo.md(rf"""
    **The dips.** GELU and SiLU dip below zero before rising: the engine finds GELU's minimum
    **{gelu_min[1]:.4f}** at $z = {gelu_min[0]:.4f}$ and SiLU's minimum **{silu_min[1]:.4f}**
    at $z = {silu_min[0]:.4f}$ (the tables you may have seen round them to −0.17 and −0.28).
    SwiGLU's slice $z^2\sigma(z)$ is never negative: it rises to a small local maximum near
    $z \approx -2.2$, falls back to its minimum 0 at $z = 0$, and its range is $[0, \infty)$.

    **Exact versus approximate GELU.** The exact GELU needs the normal CDF $\Phi$; GPT-2 and
    many kernels use $\tfrac12 z\,(1+\tanh(\sqrt{{2/\pi}}\,(z+0.044715z^3)))$ instead. The
    largest difference on $[-6, 6]$ is **{gelu_error_max:.2e}**, far below what training notices.
    """),
            _chart,
        ]
    )
    return gelu_error_max, gelu_min, silu_min


@app.cell(hide_code=True)
def _():
    logits_text = mo.ui.text(value="2.0, 1.0, 0.1, -1.0", label="logits z", full_width=True)
    temperature = mo.ui.slider(
        steps=[0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0],
        value=1.0,
        label="temperature T",
        show_value=True,
    )
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
    return logits_text, temperature


@app.cell
def _(logits_text, temperature):
    softmax_result = None
    try:
        _z = lab.parse_numbers(logits_text.value, name="logits")
    except ValueError as _err:
        _out = ui.problem(_err, "The softmax")
    else:
        softmax_result = lab.softmax_with_temperature(_z, temperature.value)
        _out = mo.vstack(
            [
                ui.chart(lab.softmax_figure(softmax_result, temperature.value)),
                mo.md(
                    f"Entropy **H = {softmax_result.entropy:.4f} nats** of at most ln K = "
                    f"{softmax_result.max_entropy:.4f} ({100 * softmax_result.entropy_share:.0f} %). "
                    "As T → 0 the softmax becomes an arg-max (H → 0); as T grows every class tends to 1/K."
                ),
            ]
        )
    mo.vstack([mo.hstack([logits_text, temperature], widths=[2, 1]), _out])
    return (softmax_result,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 4. The depth lab: vanishing and exploding gradients

    Stack $L$ layers of width $n$. A batch is a matrix whose rows are examples, and each layer's
    weights are stored (out, in), as `nn.Linear` stores them:
    $Z^{(l)} = A^{(l-1)}\,W^{(l)\top}$, $A^{(l)} = \phi(Z^{(l)})$. Feed a batch of standard normal inputs
    (128 examples; fewer above width 64, so that every layer holds about 8,192 values) and
    backpropagate a random upstream gradient. Going down one layer multiplies each row of the error
    signal by $W$ and by $\phi'$:

    $$
    \Delta^{(l-1)} = \big(\Delta^{(l)}\,W^{(l)}\big)\odot\phi'(Z^{(l-1)}),
    \qquad
    \frac{\lVert\Delta^{(l-1)}\rVert}{\lVert\Delta^{(l)}\rVert}
    \approx \sigma_W\sqrt{n}\;\operatorname{rms}\phi'(Z^{(l-1)}).
    $$

    Over $L$ layers these factors **multiply**: slightly below one and the gradient vanishes,
    slightly above and it explodes. Initialisations choose $\sigma_W$ to keep the product near one:
    **He** $\sigma_W^2 = 2/n_{in}$ for ReLU (which zeroes half its inputs), **Xavier**
    $\sigma_W^2 = 2/(n_{in}+n_{out})$ for tanh-like functions, or your own $\sigma_W = s/\sqrt{n_{in}}$.
    A unit is counted **flat** where $|\phi'(z)|$ is below 5 % of its peak (ReLU's negative side,
    the saturated ends of tanh and sigmoid), and **dead** when it is flat for every example.

    The cells below are the whole experiment: the initialisation scales, the forward pass whose
    pre-activations and gradients the figures plot (each layer is the `block` of section 5), and
    an activation of your own, the last entry of the activation menu.
    """)
    return


@app.function
def init_std(init, fan_in, fan_out, scale=1.0, leaky_slope=0.0):
    """The weights' standard deviation σ_W for an initialisation:
    He σ_W² = 2 / ((1 + α²) n_in) (α the leaky ReLU's slope, 0 for ReLU),
    Xavier σ_W² = 2 / (n_in + n_out), custom σ_W = s / √n_in."""
    if init == "he":
        return np.sqrt(2 / ((1 + leaky_slope**2) * fan_in))
    if init == "xavier":
        return np.sqrt(2 / (fan_in + fan_out))
    if init == "custom":
        return scale / np.sqrt(fan_in)
    raise ValueError(f"init_std: no initialisation called {init!r}; choose he, xavier or custom")


@app.function
def deep_forward(x, weights, phi, residual=False, pre_norm=False):
    """The deep forward pass: A⁽⁰⁾ = X, then (Z⁽ˡ⁾, A⁽ˡ⁾) = block(A⁽ˡ⁻¹⁾, W⁽ˡ⁾) for l = 1 … L.
    Returns A⁽ᴸ⁾ and the pre-activations Z⁽¹⁾ … Z⁽ᴸ⁾, each keeping ∂L/∂Z⁽ˡ⁾ after backward()."""
    a, zs = x, []
    for w in weights:
        z, a = block(a, w, phi, residual, pre_norm)
        zs.append(z.retain_grad())
    return a, zs


@app.function
def my_activation(z):
    """Your own φ, to edit (engine operations, so that autograd gives φ′): it starts as LeCun's
    scaled tanh (1998), φ(z) = 1.7159 · tanh(2z/3), scaled so that φ(±1) = ±1."""
    return 1.7159 * F.tanh(2 * z / 3)


@app.cell(hide_code=True)
def _():
    depth = mo.ui.slider(1, 50, step=1, value=20, label="depth L", show_value=True, debounce=True)
    width = mo.ui.slider(8, 256, step=8, value=64, label="width n", show_value=True, debounce=True)
    depth_act = mo.ui.dropdown(
        options={**{lab.ACTIVATIONS[n]["label"]: n for n in lab.DEPTH_ACTIVATIONS}, "yours: my_activation": "mine"},
        value="Tanh",
        label="activation",
    )
    init = mo.ui.radio(
        options={"He": "he", "Xavier": "xavier", "custom σ_W = s/√n": "custom"},
        value="Xavier",
        label="initialisation",
        inline=True,
    )
    depth_residual = mo.ui.switch(value=False, label="residual path a + φ(z)")
    depth_norm = mo.ui.switch(value=False, label="pre-norm: LayerNorm before each layer")
    mo.vstack(
        [
            mo.md(r"""
    The figures below, and section 5's table and training, are computed by these cells, with your
    code: edit one in `marimo edit` and they follow. **Change `init_std`:** give He's formula a 1
    instead of its 2 (LeCun's $\sigma_W^2 = 1/n_{in}$), then pick ReLU with He: the variance of
    $z$ now halves at every layer and the gradient vanishes, as it does with Xavier.
    **Change `my_activation`** to `z.abs()` and pick *yours* in the menu: with Xavier the gradient
    keeps its size through any depth, and with He it explodes, the opposite of ReLU. $|z|$ has a
    slope of ±1 everywhere, so $\mathbb E[\phi'(z)^2] = 1$ where ReLU's is ½, and its weight-scale
    sweep crosses 1 at $s \approx 1$, not at $\sqrt2$.
    """),
            mo.hstack([depth, width, depth_act, init], wrap=True),
            mo.hstack([depth_residual, depth_norm], justify="start"),
        ]
    )
    return depth, depth_act, depth_norm, depth_residual, init, width


@app.cell(hide_code=True)
def _(init):
    # only the custom initialisation reads s: its slider is live when that one is chosen
    init_scale = mo.ui.slider(
        0.1,
        3.0,
        step=0.05,
        value=1.0,
        label="custom scale s",
        show_value=True,
        debounce=True,
        disabled=init.value != "custom",
    )
    init_scale
    return (init_scale,)


@app.cell
def _(depth_act):
    depth_phi = my_activation if depth_act.value == "mine" else depth_act.value
    depth_label = "my_activation" if depth_act.value == "mine" else lab.ACTIVATIONS[depth_act.value]["label"]
    return depth_label, depth_phi


@app.cell
def _(depth_act, init, init_scale, width):
    weight_std = init_std(
        init.value,
        width.value,
        width.value,
        init_scale.value,
        leaky_slope=0.01 if depth_act.value == "leaky_relu" else 0.0,
    )
    return (weight_std,)


@app.cell
def _(depth, depth_norm, depth_phi, depth_residual, weight_std, width):
    depth_report = lab.depth_lab(
        deep_forward,
        weight_std,
        depth=depth.value,
        width=width.value,
        activation=depth_phi,
        seed=0,
        n_samples=lab.samples_for_width(width.value),
        residual=depth_residual.value,
        norm=depth_norm.value,
    )
    _r = depth_report
    _hist, _shares, _grads = lab.depth_figures(_r)
    _msg = [mo.callout(mo.md(f"**{_r.message}**"), kind="warn")] if _r.message else []
    _summary = mo.md(
        f"σ_W = **{_r.weight_std:.4f}** · first-layer gradient / last-layer gradient = "
        f"**{_r.gradient_ratio:.3g}** → the gradient **{_r.fate()}** "
        f"over {_r.depth} layers · per layer, the gradient norm is multiplied by "
        f"**{_r.per_layer_factor:.3f}** and the variance of z by **{_r.variance_factor:.3f}** "
        f"(geometric means) · std of z in the last layer: **{_r.z_std[-1]:.3g}**"
    )
    mo.vstack(_msg + [_summary, ui.chart(_hist), ui.chart_row(_shares, _grads)])
    return (depth_report,)


@app.cell(hide_code=True)
def _():
    selu_input_std = mo.ui.slider(
        steps=list(lab.SELF_NORM_INPUT_STDS),
        value=lab.SELF_NORM_DEFAULT["input_std"],
        label="input std",
        show_value=True,
    )
    mo.vstack(
        [
            mo.md(r"""
    Things to try:

    - **sigmoid with Xavier**: here $\sigma_W\sqrt n = 1$ and $\sigma' \le \tfrac14$, so the
      gradient shrinks by about 4× per layer; with **He**, $\sigma_W\sqrt n = \sqrt2$ and it
      shrinks by about 3×. It vanishes either way.
    - **ReLU with Xavier** against **ReLU with He**: ReLU zeroes half of the pre-activations, so
      with Xavier the *variance* of $z$ halves at every layer (its standard deviation falls by
      $\sqrt2$); He's factor 2 in $\sigma_W^2$ gives that half back.
    - **tanh** with a custom scale of 0.5, 1, 2 and 3, then a custom scale of 3 with ReLU.

    **Ordered and chaotic.** With $\sigma_W = s/\sqrt n$, the squared backward factor of one
    layer is $\chi = s^2\,\mathbb E[\phi'(z)^2]$, the expectation over that layer's
    pre-activations. The forward pass has its own map,
    $\operatorname{Var}(z_l) = s^2\,\mathbb E[\phi(z_{l-1})^2]$, and near $z = 0$ tanh is the
    identity, so both maps start with the same slope $s^2$. At $s = 0.5$ the variance shrinks
    toward 0, every unit sits in tanh's linear middle, and the variance and the squared gradient
    shrink by the same factor per layer: the *ordered* phase, where gradients vanish. Above
    $s = 1$ the variance stops shrinking and settles where part of the units saturate, yet the
    gradient **grows**: at $s = 2$ (depth 20, width 64) by about 1.17× per layer, at $s = 3$ by
    several hundred over the stack. Saturation does not kill the gradient here; $\chi > 1$ makes
    it explode. This is the *chaotic* phase of Poole et al. (2016) and Schoenholz et al. (2017),
    who show that the same $\chi$ is the rate at which two nearby inputs are pushed apart layer
    after layer; $\chi = 1$ is the *edge of chaos* an initialisation aims for.

    **Self-normalising networks.** He's initialisation keeps the size of $z$ from layer to layer,
    but it does not correct a size that is wrong to begin with: ReLU is positively homogeneous,
    $\operatorname{relu}(cz) = c\,\operatorname{relu}(z)$ for $c > 0$, so inputs $c$ times larger
    give activations exactly $c$ times larger in every layer, and its outputs, all $\ge 0$, have a
    positive mean. Klambauer et al. (2017) built an activation whose layer map has an
    **attracting fixed point**, the scaled exponential linear unit

    $$
    \operatorname{selu}(z) = \lambda\begin{cases} z & z > 0\\ \alpha\,(e^{z} - 1) & z \le 0\end{cases},
    \qquad \lambda \approx 1.0507,\quad \alpha \approx 1.6733,
    $$

    used with LeCun's initialisation $\sigma_W^2 = 1/n_{in}$ (a custom scale $s = 1$ above). For
    $z \sim \mathcal N(0, 1)$ these constants give $\operatorname{selu}(z)$ mean 0 and variance 1,
    which the next layer's weights turn into $z$ of mean 0 and variance 1 again; and a mean or a
    variance off that point is pulled back toward it, layer after layer. Below, 50 plain layers of
    width 64 (`deep_forward`) from inputs of the standard deviation you choose: with SELU the
    activations of layer 50 have a mean within 0.2 of 0 and a variance within 0.2 of 1 from every
    input scale, in each of five draws of the weights (the draw shown stays within 0.1 of 0), while
    ReLU with He keeps the scale it was given.
    """),
            selu_input_std,
        ]
    )
    return (selu_input_std,)


@app.function
def selu(z):
    """SELU (Klambauer et al., 2017): φ(z) = λz for z > 0, λα(e^z − 1) for z ≤ 0, with
    λ = 1.0507… and α = 1.6733… (e^z taken of min(z, 0), so that it never overflows)."""
    lam, alpha = 1.0507009873554805, 1.6732632423543772
    return lam * (F.relu(z) + alpha * ((-F.relu(-z)).exp() - 1))


@app.cell
def _(selu_input_std):
    selu_runs = {
        "SELU, LeCun σ_W² = 1/n": lab.self_normalisation(
            deep_forward, selu, init_std("custom", 64, 64, 1.0), selu_input_std.value
        ),
        "ReLU, He σ_W² = 2/n": lab.self_normalisation(
            deep_forward, "relu", init_std("he", 64, 64), selu_input_std.value
        ),
    }
    _var, _mean = lab.self_normalisation_figures(selu_runs)
    _selu, _relu = selu_runs.values()
    mo.vstack(
        [
            ui.chart_row(_var, _mean),
            mo.md(
                f"Layer 50, inputs of std {selu_input_std.value:g}: SELU mean **{_selu.a_mean[-1]:.3f}**, variance "
                f"**{_selu.a_var[-1]:.3f}** · ReLU with He mean **{_relu.a_mean[-1]:.3f}**, variance "
                f"**{_relu.a_var[-1]:.3g}**."
            ),
        ]
    )
    return (selu_runs,)


@app.function
def default_sweeps():
    """The weight-scale sweeps the page opens on: for every activation of the depth lab, the
    per-layer gradient factor (‖∂L/∂Z⁽¹⁾‖ / ‖∂L/∂Z⁽ᴸ⁾‖)^(1/(L−1)) of a plain stack run by
    `deep_forward` (depth 20, width 64) at σ_W = s/√n for 20 scales s from 0.25 to 5."""
    return lab.default_sweeps(deep_forward)


@app.function
def default_variants():
    """The table of section 5 as the page opens it, for every activation of the depth lab with He's
    and Xavier's σ_W (`init_std`, width 64): the same 50-layer stack run by `deep_forward` plain,
    with a residual path, with pre-norm and with both."""
    return lab.default_variants(deep_forward, init_std)


@app.cell
def _():
    # the shipped sweeps and 50-layer runs load only when this page's code made them
    shipped_sweeps, sweeps_misfit = lab.shipped_sweeps(block, deep_forward)
    shipped_variants = lab.shipped_variants(block, deep_forward, init_std)
    return shipped_sweeps, shipped_variants, sweeps_misfit


@app.cell
def _():
    sweep_run = mo.ui.run_button(label="run the sweep with your code")
    return (sweep_run,)


@app.cell
def _(depth_label, depth_phi, shipped_sweeps, sweep_run, sweeps_misfit):
    weight_sweep = None
    if sweep_run.value or callable(depth_phi):  # your own activation has no shipped sweep
        with mo.status.progress_bar(total=1, title="running the sweep", remove_on_exit=True) as _bar:
            weight_sweep = lab.scale_sweep(deep_forward, depth_phi)
            _bar.update()
        _source = "computed just now with your code"
    elif shipped_sweeps is not None:
        weight_sweep = lab.scale_sweep(deep_forward, depth_phi, shipped=shipped_sweeps)
        _source = "shipped with the course, made by this page's `deep_forward` and `block`"
    mo.stop(weight_sweep is None, mo.vstack([mo.md(f"**The weight-scale sweep:** {sweeps_misfit}."), sweep_run]))
    _name = depth_label
    _chart = lab.sweep_figure(weight_sweep, _name)
    _where = (
        f"the factor crosses 1 at s ≈ **{weight_sweep.crossing:.2f}**"
        if weight_sweep.crossing is not None
        else f"the factor stays below 1 for every s up to {weight_sweep.scales[-1]:g}"
    )
    mo.vstack(
        [
            ui.chart(_chart),
            mo.md(
                f"**The weight-scale sweep** ({_name}, the activation chosen above; "
                f"{_source}): {_where}. "
                "Below the line the gradient vanishes with depth, above it explodes."
            ),
            sweep_run,
        ]
    )
    return (weight_sweep,)


@app.function
def mean_field(phi, scales, depth, nodes=40):
    """Mean-field theory of the plain stack at σ_W = s/√n, width n → ∞ (Poole et al., 2016):
    q₁ = s², q_{l+1} = s² E[φ(√q_l ξ)²] and χ_l = s² E[φ′(√q_l ξ)²], ξ ~ N(0, 1), each E a
    Gauss–Hermite sum (an even count of nodes: none on a kink at 0), φ′ by autograd. Returns the
    per-layer gradient factor (χ₁ ⋯ χ_{L−1})^(1/(2(L−1))) for L = 2 … depth (rows) at each s (columns)."""
    xi, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    s2 = np.asarray(scales, dtype=np.float64) ** 2
    q, log_chi = s2, []
    for _ in range(depth - 1):
        z = engine.Tensor(np.sqrt(q)[:, None] * xi, requires_grad=True)
        a = phi(z)
        a.backward(engine.ones_like(a))
        log_chi.append(np.log(s2 * (z.grad.numpy() ** 2 @ w)))
        q = s2 * (a.data**2 @ w)
    return np.exp(np.cumsum(log_chi, axis=0) / (2 * np.arange(1, depth)[:, None]))


@app.function
def default_transient():
    """Where tanh's per-layer gradient factor crosses 1, against depth: by `mean_field` for
    L = 5 … 1000, and by the plain stacks of `deep_forward` (width 64) at L = 10, 20 and 50."""
    return lab.transient(mean_field, deep_forward, "tanh")


@app.cell(hide_code=True)
def _():
    shipped_transient, _misfit = lab.shipped_transient(block, deep_forward, mean_field)
    if shipped_transient is None:
        _shown = mo.md(f"**Why tanh crosses 1 above s = 1:** {_misfit}.")
    else:
        _t = shipped_transient
        _at = {int(_d): float(_c) for _d, _c in zip(_t["depths"], _t["theory"])}
        _measured = ", ".join(f"{_c:.2f} at L = {_d}" for _d, _c in zip(_t["measured_depths"], _t["measured"]))
        _shown = mo.vstack(
            [
                mo.md(rf"""
    **Why tanh's sweep crosses 1 near $s = 1.25$, not at the edge of chaos $s = 1$.** The rule
    $\chi = 1$ at $s = 1$ holds where the variance of $z$ has settled, after many layers. At $s = 1$
    tanh's variance does shrink toward 0, but slowly: $\tanh x \approx x - x^3/3$ takes little
    from a small variance, $q_{{l+1}} \approx q_l - 2q_l^2$, so $q_l \approx 1/(2l)$. While $q_l > 0$,
    part of the units sit off tanh's linear middle, $\mathbb E[\phi'(z)^2] \approx 1 - 2q_l < 1$,
    and the gradient shrinks at every layer, by a factor that reaches 1 only as the variance
    reaches 0. In a stack of finite depth this transient has to be paid for by a larger $s$.
    `mean_field` follows the variance layer by layer for an infinitely wide stack and gives the
    per-layer factor at every depth $L$; the line is where it crosses 1: **{_at[20]:.2f}** at
    L = 20, **{_at[100]:.2f}** at L = 100, **{_at[1000]:.3f}** at L = 1000. It falls toward 1
    as the stack deepens, but slowly. The dots are the engine's stacks of width 64: {_measured}.
    """),
                ui.chart(lab.transient_figure(_t)),
            ]
        )
    _shown
    return (shipped_transient,)


@app.cell(hide_code=True)
def _(shipped_variants):
    # the section's opening contrast, at a setting no control changes: ReLU with Xavier's σ_W
    contrast_runs = lab.depth_variants(
        deep_forward, init_std("xavier", 64, 64), depth=50, width=64, activation="relu", shipped=shipped_variants
    )
    _ratio = {name: (r.gradient_ratio, r.fate()) for name, r in contrast_runs.items()}
    _chart = plot.curves(
        np.arange(1, 51),
        {name: r.grad_norm / r.grad_norm[-1] for name, r in contrast_runs.items()},
        x_title="layer l",
        y_title="‖∂L/∂z⁽ˡ⁾‖ / ‖∂L/∂z⁽⁵⁰⁾‖",
        log_y=True,
        height=220,
        colors={"plain": "reference", "residual": "error", "pre-norm": "derivative", "residual + pre-norm": "model"},
        title="ReLU, Xavier's σ_W, 50 layers of width 64: the gradient, layer by layer",
    )
    mo.vstack(
        [
            mo.md(r"""
    ## 5. Why deep nets train: residual paths and normalisation

    Modern deep networks do not rely on the initialisation alone. A **residual path**
    (He et al., 2016) adds the layer's input to its output, $A^{(l)} = A^{(l-1)} + \phi(Z^{(l)})$,
    so the backward pass has an identity term,
    $\partial L/\partial A^{(l-1)} = \partial L/\partial A^{(l)}\,(I + J_l)$, that no product of
    small factors can remove. But each layer also adds its output's variance to the stream, so on
    its own the residual path lets the forward variance grow layer after layer, and with ReLU it
    explodes. **Pre-norm** (as in GPT-2's blocks) feeds each layer
    $\operatorname{LayerNorm}(A^{(l-1)})$, which rescales every row to mean 0 and variance 1: each
    layer then sees inputs of the same scale, however large the stream has grown. Below, a ReLU
    stack with Xavier's $\sigma_W$, run four ways; each curve is a layer's gradient norm over the
    last layer's, so the first layer's value is how much the gradient grew on its way down.
    """),
            ui.chart(_chart),
            mo.md(
                f"Plain, the gradient **{_ratio['plain'][1]}** (the first layer gets {_ratio['plain'][0]:.1e} "
                f"of the last layer's); with the residual path alone it **{_ratio['residual'][1]}** "
                f"({_ratio['residual'][0]:.1e}), with pre-norm alone it **{_ratio['pre-norm'][1]}** too "
                f"({_ratio['pre-norm'][0]:.1e}); with **both** it **{_ratio['residual + pre-norm'][1]}** "
                f"({_ratio['residual + pre-norm'][0]:.2g}). The switches above add either to the depth lab; the "
                "table below runs all four at **50 layers** with the activation, width and initialisation chosen "
                "there. One layer of the stack, with both options:"
            ),
        ]
    )
    return (contrast_runs,)


@app.function
def block(a, w, phi, residual=False, pre_norm=False):
    """One layer of the deep stack: H = LayerNorm(A) with pre-norm (else H = A), Z = H Wᵀ,
    and A' = A + φ(Z) with a residual path (else A' = φ(Z)). Returns (Z, A')."""
    h = F.layer_norm(a, (a.shape[-1],)) if pre_norm else a
    z = h @ w.T
    out = phi(z)
    return z, (a + out if residual else out)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Change `block`:** scale the residual branch, `a + 0.2 * out`, then pick ReLU with He. The
    table's *residual* row stops exploding: the variance of $z$ grows by about 1.2× per layer
    instead of almost 3×, and the first layer's gradient is some twenty times the last layer's
    instead of ten billion. A small branch keeps the stream near the identity map; scaled-residual
    initialisations (Fixup, ReZero, GPT-2's $1/\sqrt{2L}$ on its residual projections) use the same idea.
    """)
    return


@app.cell
def _(depth_phi, shipped_variants, weight_std, width):
    depth_variants = lab.depth_variants(
        deep_forward, weight_std, depth=50, width=width.value, activation=depth_phi, shipped=shipped_variants
    )
    _rows = "\n".join(
        f"| {name} | {r.gradient_ratio:.3g} | {r.fate()} | ×{r.variance_factor:.3g} |"
        for name, r in depth_variants.items()
    )
    _source = (
        "runs shipped with the course, made by this page's `deep_forward`, `block` and `init_std`"
        if lab.variants_are_shipped(shipped_variants, depth_phi, weight_std, width.value)
        else "run just now by this page's `deep_forward` and `block`"
    )
    mo.md(
        "| 50 layers | first / last gradient | the gradient | variance of z, per layer |\n|---|---|---|---|\n"
        + _rows
        + f"\n\n<small>The four stacks: {_source}.</small>"
    )
    return (depth_variants,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    What the table shows, at width 64: the plain stack's gradient vanishes with sigmoid
    (Xavier or He) and with ReLU + Xavier, and explodes with tanh at a custom scale of 2. The
    residual path alone explodes a ReLU stack: every layer adds at least the stream's own variance,
    so the variance of $z$ more than doubles per layer (last column). **Pre-norm alone** explodes it
    too, with He's $\sigma_W$ as with Xavier's (the first layer's gradient about $1.4\cdot10^4$
    times the last layer's in the draw shown, 1.4 to $2.9\cdot10^4$ over five draws of the
    weights): LayerNorm divides each row by its standard deviation, and ReLU's
    output, never negative, has a standard deviation of only $\sqrt{1/2 - 1/(2\pi)} \approx 0.58$
    times the scale $\sqrt v$ of its input $z$, while its slope passes on $1/\sqrt2 \approx 0.71$ of
    the gradient. So every layer multiplies the gradient by about $0.71/0.58 \approx 1.21$,
    whatever $\sigma_W$, and $1.21^{49} \approx 10^4$. **Both together** keep the
    first layer's gradient within about 10× of the last layer's in every one of these cases: the
    recipe of the pre-norm Transformer block.
    """)
    return


@app.function
def deep_net(width, depth, weight_std):
    """A classifier 2 → n → … → 1 around the stack: Linear(2, n) into the stream, ``depth`` weight
    matrices W⁽ˡ⁾ ~ N(0, σ_W²) of shape (n, n) for the blocks, Linear(n, 1) out to the logit."""
    layers = [nn.Linear(2, width)] + [nn.Linear(width, width, bias=False) for _ in range(depth)]
    for layer in layers[1:]:
        nn.init.normal_(layer.weight, 0.0, weight_std)
    return nn.ModuleList(layers + [nn.Linear(width, 1)])


@app.function
def train_deep(net, X, y, phi, residual, pre_norm, steps=100, lr=0.01, on_step=None):
    """Full-batch Adam on the binary cross-entropy of the logit s = A⁽ᴸ⁾ w_outᵀ + b_out, where
    A⁽ᴸ⁾ = deep_forward(X W_inᵀ + b_in, W⁽¹⁾ … W⁽ᴸ⁾): L = −mean[y ln σ(s) + (1 − y) ln(1 − σ(s))].
    Trains ``net`` in place; returns the loss before each step."""
    optimizer = engine.optim.Adam(net.parameters(), lr=lr)
    x, target, losses = engine.Tensor(X), y.astype(np.float64), []
    for step in range(steps):
        optimizer.zero_grad()
        a, _ = deep_forward(net[0](x), [layer.weight for layer in net[1:-1]], phi, residual, pre_norm)
        loss = F.binary_cross_entropy_with_logits(net[-1](a).reshape(-1), target)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.data))
        if on_step is not None:
            on_step(step)
    return np.array(losses)


@app.function
def default_deep_training():
    """The runs section 5 opens on: `deep_net` (ReLU, Xavier's σ_W from `init_std`, width 32,
    50 layers, seed 0) trained by `train_deep` on the moons for 100 steps, plain and with both."""
    return lab.deep_training(deep_net, train_deep, init_std)


@app.cell(hide_code=True)
def _():
    deep_train = mo.ui.run_button(label="train both again with your code")
    deep_act = mo.ui.dropdown(
        options={**{lab.ACTIVATIONS[n]["label"]: n for n in lab.DEPTH_ACTIVATIONS}, "yours: my_activation": "mine"},
        value="ReLU",
        label="activation the button trains",
    )
    shipped_deep_runs, deep_runs_misfit = lab.shipped_deep_training(block, deep_forward, init_std, deep_net, train_deep)
    mo.md(r"""
    **Does a fifty-layer stack train?** The gradient ratios above are measured at initialisation.
    Here the stack is trained: `deep_net` puts a layer $2 \to 32$ before 50 ReLU blocks of width
    32 (Xavier's $\sigma_W$, the setting of the figure that opens this section) and a layer
    $32 \to 1$ after them, and `train_deep` runs full-batch Adam ($\eta = 0.01$) on the binary
    cross-entropy of the 200 half-moon points of section 6, once plain and once with the residual
    path and pre-norm, from the same initial weights. The dashed line is $\ln 2$, the loss of
    predicting $p = \tfrac12$ for every point. The page opens on ReLU's runs; the menu by the button
    picks the activation it trains both stacks with, your `my_activation` of section 4 included.
    """)
    return deep_act, deep_runs_misfit, deep_train, shipped_deep_runs


@app.cell
def _(deep_act, deep_runs_misfit, deep_train, shipped_deep_runs):
    deep_runs, deep_runs_act = shipped_deep_runs, "relu"
    if deep_train.value:
        deep_runs_act = deep_act.value
        _steps = 2 * lab.DEEP_TRAINING["steps"]
        with mo.status.progress_bar(total=_steps // 10, title="training 2 × 50 layers", remove_on_exit=True) as _bar:
            deep_runs = lab.deep_training(
                deep_net,
                train_deep,
                init_std,
                activation=my_activation if deep_runs_act == "mine" else deep_runs_act,
                on_step=lambda _i: _bar.update() if _i % 10 == 9 else None,
            )
    _controls = mo.hstack([deep_act, deep_train], justify="start")
    mo.stop(deep_runs is None, mo.vstack([mo.md(f"**Fifty layers, trained:** {deep_runs_misfit}."), _controls]))
    _plain, _both = (deep_runs[_name] for _name in lab.DEEP_TRAINING_VARIANTS)
    _label = "my_activation" if deep_runs_act == "mine" else lab.ACTIVATIONS[deep_runs_act]["label"]
    _source = (
        f"trained just now by your code with {_label}"
        if deep_train.value
        else "shipped with the course, made by this page's code"
    )
    _below = np.flatnonzero(_both < 0.05)
    _fall = f"falls below 0.05 within **{_below[0] + 1}** steps" if _below.size else "stays above 0.05"
    _why = (
        f"where ln 2 = {np.log(2):.3f}: it predicts about ½ for every point and has learned nothing, since "
        "its forward variance halves at every layer and the gradient that reaches its first layers vanishes."
        if deep_runs_act == "relu"
        else f"against ln 2 = {np.log(2):.3f} for predicting ½ at every point."
    )
    mo.vstack(
        [
            ui.chart(lab.deep_training_figure(deep_runs, _label)),
            mo.md(
                f"After {len(_plain)} steps ({_source}) the plain stack's loss is **{_plain[-1]:.3f}**, {_why} "
                f"With the residual path and pre-norm the loss {_fall} and ends at **{_both[-1]:.1e}**."
            ),
            _controls,
        ]
    )
    return deep_runs, deep_runs_act


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 6. What the bend buys

    A ReLU network is **piecewise linear**: each hidden unit is on or off, and inside one on/off
    pattern the whole network is a single affine map. With one hidden layer, unit $j$ switches
    along the line $\mathbf x\,\mathbf w_j^\top + b_j = 0$, and $n$ lines cut the plane into at
    most $1 + n + \binom n2$ pieces; deeper layers fold those pieces again. Without a hidden layer
    (depth 0) the network is one affine map, and its decision boundary a straight line.

    Below, a network 2 → width (× depth) → 1 on 200 points of two interleaved half-moons, and
    the loop that trains it:
    """)
    return


@app.function
def moon_net(width=8, depth=1):
    """The network 2 → n (× depth) → 1 as its layers: Linear(2, n), Linear(n, n) …, Linear(n, 1)."""
    sizes = [2] + [width] * depth + [1]
    return nn.ModuleList([nn.Linear(n_in, n_out) for n_in, n_out in zip(sizes[:-1], sizes[1:])])


@app.function
def moon_forward(net, x):
    """Z⁽ˡ⁾ = H⁽ˡ⁻¹⁾ W⁽ˡ⁾ᵀ + b⁽ˡ⁾ and H⁽ˡ⁾ = max(0, Z⁽ˡ⁾) through the hidden layers (H⁽⁰⁾ = X),
    then the logit s = H wᵀ + b. Returns s and the hidden Z⁽ˡ⁾, whose signs are the on/off pattern."""
    h, zs = x, []
    for layer in net[:-1]:
        z = layer(h)
        zs.append(z)
        h = F.relu(z)
    return net[-1](h).reshape(-1), zs


@app.function
def train_moons(net, X, y, steps=400, lr=0.02, on_step=None):
    """Full-batch Adam on the binary cross-entropy of the logits s (labels y ∈ {0, 1}):
    L = −mean[y ln σ(s) + (1 − y) ln(1 − σ(s))]. Trains ``net`` in place and returns it."""
    optimizer = engine.optim.Adam(net.parameters(), lr=lr)
    x, target = engine.Tensor(X), y.astype(np.float64)
    for step in range(steps):
        optimizer.zero_grad()
        logit, _ = moon_forward(net, x)
        loss = F.binary_cross_entropy_with_logits(logit, target)
        loss.backward()
        optimizer.step()
        if on_step is not None:
            on_step(step)
    return net


@app.cell
def _():
    moons_X, moons_y = lab.moons(seed=0)
    with engine.random.fork_rng(0):
        _net = moon_net(**lab.BEND_DEFAULT)
    train_moons(_net, moons_X, moons_y, steps=lab.BEND_STEPS)
    default_bend = lab.bend_report(moon_forward, _net, moons_X, moons_y, steps=lab.BEND_STEPS)
    bend_width = mo.ui.slider(
        1, 32, step=1, value=lab.BEND_DEFAULT["width"], label="width n", show_value=True, debounce=True
    )
    bend_depth = mo.ui.slider(
        0, 4, step=1, value=lab.BEND_DEFAULT["depth"], label="hidden layers", show_value=True, debounce=True
    )
    bend_train = mo.ui.run_button(label=f"train {lab.BEND_STEPS} steps")
    mo.md(r"""
    The left panel gives every linear piece its own colour (counted on a 150 × 150 grid, so a
    lower bound); the black line is the decision boundary. Both panels show what your
    `moon_net`, `moon_forward` and `train_moons` make: the default network, width 8 with one hidden
    layer, is trained when the page opens; another width or depth shows its network at
    initialisation until the button trains it too. **Change `train_moons`:** replace Adam by plain
    gradient descent, `engine.optim.SGD(net.parameters(), lr=lr)`. After the same 400 steps at the
    same rate the default network classifies only about 84 % of the points where Adam reached
    98 %; plain descent needs a rate about 25 times larger to come close.
    """)
    return bend_depth, bend_train, bend_width, default_bend, moons_X, moons_y


@app.cell
def _(bend_depth, bend_train, bend_width, default_bend, moons_X, moons_y):
    bend_is_default = lab.is_default_bend({"width": bend_width.value, "depth": bend_depth.value})
    _steps = lab.BEND_STEPS if bend_train.value or bend_is_default else 0
    with engine.random.fork_rng(0):
        _net = moon_net(bend_width.value, bend_depth.value)
    if bend_train.value:
        with mo.status.progress_bar(total=_steps // 40, title="training", remove_on_exit=True) as _bar:
            train_moons(
                _net, moons_X, moons_y, steps=_steps, on_step=lambda _i: _bar.update() if _i % 40 == 39 else None
            )
        bend_report = lab.bend_report(moon_forward, _net, moons_X, moons_y, steps=_steps)
    elif bend_is_default:
        bend_report = default_bend  # trained when the page opened
    else:
        bend_report = lab.bend_report(moon_forward, _net, moons_X, moons_y, steps=0)
    _state = (
        f"trained {_steps} steps" + ("" if bend_train.value else " when the page opened (the default network)")
        if _steps
        else "at initialisation (the button trains it)"
    )
    _bound = (
        f" (one hidden layer of {bend_report.width} units makes at most **{bend_report.one_layer_bound}**)"
        if bend_report.one_layer_bound is not None
        else ""
    )
    mo.vstack(
        [
            mo.hstack([bend_width, bend_depth, bend_train], justify="start"),
            mo.hstack([ui.chart(_panel) for _panel in lab.bend_figure(bend_report)], justify="start"),
            mo.md(
                f"Network {_state}: **{bend_report.pieces}** linear pieces in the box{_bound} · training accuracy "
                f"**{100 * bend_report.accuracy:.1f} %**."
            ),
        ]
    )
    return bend_is_default, bend_report


@app.cell
def _(shipped_sweeps, shipped_variants):
    _depth_truth = lab.depth_lab(
        deep_forward,
        init_std("xavier", 64, 64),
        depth=30,
        width=64,
        activation="sigmoid",
        n_samples=64,
        seed=1,
        slopes=False,
    )
    _edge_sweep = lab.scale_sweep(deep_forward, "relu", shipped=shipped_sweeps)
    _residual_truth = lab.depth_variants(
        deep_forward, init_std("he", 64, 64), depth=50, width=64, activation="relu", shipped=shipped_variants
    )["residual"]
    exercises_check = {
        "sigmoid": exercises.NumberExercise(
            question="**1.** What is the sigmoid's slope at $z = 0$, its steepest point? (A fraction is fine.)",
            truth=float(lab.engine_derivative("sigmoid", np.array([0.0]))[1][0]),
            hint="σ(0) = ½ and σ′ = σ(1 − σ).",
            rel_tol=0.01,
            placeholder="e.g. 0.5",
            label="σ′(0) =",
        ),
        "depth": exercises.ChoiceExercise(
            question="**2.** A 30-layer network of **sigmoid** units with Xavier initialisation. Compared with "
            "the last layer, the gradient that reaches the first layer is…",
            options=lab.GRADIENT_FATES,
            truth=_depth_truth.verdict(),
            hint="think of the largest possible slope of a sigmoid, then multiply it 30 times.",
            explanation=f"The first layer's gradient is **{_depth_truth.gradient_ratio:.1e}** times the last layer's: "
            f"a factor of **{_depth_truth.per_layer_factor:.2f}** per layer, since σ′ ≤ ¼ and σ_W√n = 1.",
        ),
        "softmax": exercises.NumberExercise(
            question="**3.** Logits $z = (2, 0, 0)$ at $T = 1$: what probability does the softmax give the first "
            "class? (Two decimals are enough.)",
            truth=float(lab.softmax_with_temperature([2.0, 0.0, 0.0], 1.0).probs[0]),
            hint="p₀ = e² / (e² + e⁰ + e⁰), with e² ≈ 7.39.",
            abs_tol=0.006,
            placeholder="e.g. 0.33",
            label="p₀ =",
        ),
        "edge": exercises.NumberExercise(
            question="**4.** A plain ReLU stack with σ_W = s/√n: at which scale s is the per-layer gradient factor "
            "exactly 1? (Two decimals; the sweep above measures it.)",
            truth=_edge_sweep.crossing,
            hint="ReLU's slope is 1 on half of the inputs and 0 on the other half, so rms φ′ = 1/√2.",
            rel_tol=0.03,
            explanation="s = √2 ≈ 1.41 is He's initialisation: σ_W² = 2/n.",
            placeholder="e.g. 1.0",
            label="s =",
        ),
        "residual": exercises.ChoiceExercise(
            question="**5.** A 50-layer ReLU stack with He initialisation gets a residual path, but no normalisation. "
            "Compared with the last layer, the gradient that reaches the first layer is…",
            options=lab.GRADIENT_FATES,
            truth=_residual_truth.verdict(),
            hint="each layer adds φ(z), of about the stream's own variance, to the stream.",
            explanation=f"The ratio is **{_residual_truth.gradient_ratio:.2g}**: the forward variance doubles at every layer, "
            "and the gradient grows with it. Pre-norm fixes it.",
        ),
        "pieces": exercises.NumberExercise(
            question="**6.** A network with one hidden layer of **3** ReLU units on 2-D inputs: into how many linear "
            "pieces at most can it cut the plane?",
            truth=lab.max_pieces_one_layer(3),
            hint="each unit switches along a line; three lines in general position…",
            explanation="1 + 3 + 3: three lines, each pair crossing once, make 7 regions.",
            placeholder="e.g. 4",
            label="pieces =",
        ),
    }
    answers_check = ui.answer_boxes(exercises_check)
    mo.md(r"""
    Trained, the straight line of depth 0 stops below 90 % on the moons, while 16 units in two
    hidden layers bend around them and reach 99 % or more. At initialisation, width 16, two hidden
    layers already show more pieces than one: each layer folds the pieces of the one before.
    """)
    return answers_check, exercises_check


@app.function
def dead_units(net, X):
    """The share of each hidden layer's ReLUs dead on the data X: z_j ≤ 0 for every example, so
    ReLU′(z_j) = 0 on all of them and no gradient reaches the unit's weights or bias."""
    with engine.no_grad():
        _, zs = moon_forward(net, engine.Tensor(X))
    return np.array([float(np.mean(np.all(z.data <= 0, axis=0))) for z in zs])


@app.function
def default_dead_relus():
    """The sweep the section opens on: `moon_net` (two hidden layers of 32, seeds 0 … 4) trained by
    `train_moons` for 400 steps at each η from 0.001 to 1, its dead units counted by `dead_units`."""
    return lab.dead_relu_sweep(moon_net, moon_forward, train_moons, dead_units)


@app.cell(hide_code=True)
def _():
    dead_lr = mo.ui.slider(steps=list(lab.DEAD_RELU["lrs"]), value=0.3, label="learning rate η", show_value=True)
    dead_train = mo.ui.run_button(label="run the 35 trainings again with your code")
    shipped_dead, dead_misfit = lab.shipped_dead_relus(moon_net, moon_forward, train_moons, dead_units)
    mo.md(r"""
    ### Dead units: a learning rate too large switches ReLUs off for good

    A ReLU unit is **dead** on a data set when its pre-activation is at most 0 for every example:
    $\operatorname{relu}'$ is 0 on all of them, so its weights and bias get no gradient and gradient
    descent cannot bring it back (a unit of the second layer can still revive when the layer below
    it changes). One large step can push a unit there, and Adam moves every parameter by about
    $\eta$ per step whatever the gradient's size, so $\eta$ sets how far one step throws a bias.
    Below, the network of this section with two hidden layers of 32 units, trained by `train_moons`
    for 400 steps at seven learning rates, five seeds each; `dead_units` counts the dead units on
    the 200 training points.
    """)
    return dead_lr, dead_misfit, dead_train, shipped_dead


@app.cell
def _(dead_misfit, dead_train, shipped_dead):
    dead_sweep = shipped_dead
    if dead_train.value:
        _runs = len(lab.DEAD_RELU["lrs"]) * lab.DEAD_RELU["seeds"]
        with mo.status.progress_bar(total=_runs, title="training 35 networks", remove_on_exit=True) as _bar:
            dead_sweep = lab.dead_relu_sweep(
                moon_net, moon_forward, train_moons, dead_units, on_run=lambda _i: _bar.update()
            )
    mo.stop(dead_sweep is None, mo.vstack([mo.md(f"**Dead units:** {dead_misfit}."), dead_train]))
    _lrs, _mean = dead_sweep["lrs"], dead_sweep["dead"].mean(axis=1)
    _low, _high = _mean[_lrs <= 0.03].max(), _mean[_lrs >= 0.3].min()
    _acc = dead_sweep["accuracy"]
    _source = (
        "trained just now by your code" if dead_train.value else "shipped with the course, made by this page's code"
    )
    mo.vstack(
        [
            ui.chart(lab.dead_relu_figure(dead_sweep)),
            mo.md(
                f"Before any step **{dead_sweep['dead_init'].mean():.0%}** of the units are already dead "
                f"(mean of the 5 seeds; {_source}). Trained at η ≤ 0.03, at most **{_low:.0%}** are dead on "
                f"average; at η ≥ 0.3 at least **{_high:.0%}**, {_high / _low:.1f} times as many. The survivors "
                f"still fit the moons up to η = 0.3 (lowest accuracy of any seed "
                f"**{_acc[_lrs <= 0.3].min():.0%}**), but at η = 1 every seed ends below 95 % (at best "
                f"**{_acc[_lrs == 1.0].max():.0%}**) with no more dead units than at η = 0.3: there the steps "
                "themselves are too large to settle in a minimum."
            ),
            dead_train,
        ]
    )
    return (dead_sweep,)


@app.cell
def _(dead_lr, dead_sweep):
    _k = int(np.argmin(np.abs(dead_sweep["lrs"] - dead_lr.value)))
    _dead, _acc = dead_sweep["dead"][_k], dead_sweep["accuracy"][_k]
    mo.vstack(
        [
            dead_lr,
            mo.md(
                f"At η = {dead_lr.value:g}, the five seeds: dead shares "
                + ", ".join(f"{d:.0%}" for d in _dead)
                + f" (mean **{_dead.mean():.0%}**) · training accuracy "
                + ", ".join(f"{a:.0%}" for a in _acc)
            ),
        ]
    )
    return


@app.cell
def _(answers_check, exercises_check):
    ui.exercise_list("## 7. Check yourself", exercises_check, answers_check)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 8. The same in your own script

    The cell below is what you would write in a script (it runs here, in a private function).
    """)
    return


@app.cell
def _():
    def _script():
        import numpy as np

        import engine
        import engine.functional as F
        from engine import nn

        z = engine.tensor(np.linspace(-4, 4, 9), requires_grad=True)
        a = F.gelu(z)  # or F.relu, F.silu, F.leaky_relu(z, 0.1), F.elu, ...
        a.backward(engine.ones_like(a))  # z.grad holds d a_i / d z_i for every element at once

        p = F.softmax(engine.tensor([2.0, 1.0, 0.1]) / 0.5, dim=-1)  # temperature 0.5

        layer = nn.Linear(256, 256)  # weight stored (out, in); layer(x) = x @ W.T + b
        nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")  # He: Var(W) = 2 / n_in
        return (
            f"GELU′ on z = −4, −3, …, 4: {np.round(z.grad, 3)}\n"
            f"softmax([2, 1, 0.1] / 0.5) = {np.round(p.data, 4)}\n"
            f"He-initialised weight {layer.weight.shape}: std {layer.weight.data.std():.4f}, "
            f"√(2/256) = {np.sqrt(2 / 256):.4f}"
        )

    mo.plain_text(_script())
    return


@app.cell(hide_code=True)
def _():
    mo.md(toc.nav_md(METADATA["id"]))
    return


if __name__ == "__main__":
    app.run()

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="02 · Loss functions")

with app.setup:
    import altair as alt
    import marimo as mo
    import numpy as np

    from engine.course import exercises, metadata, plot, toc, ui, widgets
    from engine.course.labs import losses as lab

    METADATA = metadata("02_losses")


@app.cell(hide_code=True)
def _():
    mo.md(f"""
    # {METADATA["name"]}

    A loss turns "how wrong is the model?" into one number, and its **gradient** is the only thing
    the optimizer ever sees. Choosing a loss is choosing which mistakes matter. In this notebook you will

    - compare MSE, MAE, Huber and pseudo-Huber as functions of the residual, with their gradients
      computed by the engine's autograd over the formulas;
    - fit a line under each of them while you drag outliers around;
    - read each loss as a **likelihood**: the mean, the median and a quantile, each the answer
      of one loss;
    - compute cross-entropy from logits, with label smoothing, and watch the naive
      `log(softmax)` break where the fused version does not;
    - see that KL divergence is not symmetric, and why MSE on a sigmoid learns slowly;
    - learn the first check of any classifier: the initial loss should be $\\ln K$;
    - score several labels at once, and a class that is rare.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(toc.nav_md(METADATA["id"]))
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1. Regression losses and their gradients

    With a prediction $\hat y$ and a target $y$, write the residual $e = \hat y - y$. The mean
    over $n$ examples of a per-example loss $\ell(e)$ is the training objective:

    $$
    \text{MSE} = \frac1n\sum_i e_i^2, \qquad \text{MAE} = \frac1n\sum_i |e_i|, \qquad
    \text{Huber}_\delta(e) = \begin{cases}\tfrac12 e^2 & |e|\le\delta\\ \delta\,(|e|-\tfrac12\delta) & |e|>\delta\end{cases}
    $$

    The gradient tells the story: MSE's $2e$ grows without bound, so one far-away point can
    dominate a whole batch; MAE's $\operatorname{sign}(e)$ treats every error alike; Huber is
    quadratic near zero and linear beyond $\delta$, and pseudo-Huber
    $\delta^2(\sqrt{1+(e/\delta)^2}-1)$ is its smooth twin. As $\delta \to \infty$ Huber is
    $\tfrac12 e^2$ everywhere: **half the MSE** (note the factor ½ in Huber's convention, so its
    gradient is $e$ where MSE's is $2e$); MSE and Huber are drawn together below, and at
    $\delta \ge 4$ one is exactly half the other.
    """)
    return


@app.cell
def _():
    reg_loss = mo.ui.dropdown(options={spec["label"]: name for name, spec in lab.REGRESSION_LOSSES.items()},
                              value="Huber", label="loss ℓ")
    # live while dragged: a change of δ redraws two curves and refits two lines (~1 ms each)
    delta = mo.ui.slider(lab.LINE_DELTAS[0], lab.LINE_DELTAS[-1], step=0.1, value=lab.LINE_DEFAULT["delta"],
                         label="δ (Huber, pseudo-Huber)", show_value=True)
    return delta, reg_loss


@app.cell
def _(delta):
    # the four curves do not depend on the loss picked for the detail: changing it skips this cell
    reg_residuals = np.linspace(-4, 4, 161)  # steps of 0.05: every δ step (0.1) is a grid point, so each kink is drawn
    reg_overview = {spec["label"]: lab.regression_curves(name, reg_residuals, delta.value).f
                    for name, spec in lab.REGRESSION_LOSSES.items()}
    # δ beyond every residual drawn: Huber is ½e² on the whole plot, half the MSE curve beside it
    huber_is_half_mse = bool(np.allclose(reg_overview["Huber"], 0.5 * reg_overview["MSE (L2)"], rtol=1e-12))
    reg_overview_chart = plot.curves(reg_residuals, reg_overview, x_title="residual e = ŷ − y", y_title="loss ℓ(e)",
                                     y_domain=(0, 8), height=240, title=f"The four losses (δ = {delta.value:g})",
                                     colors={spec["label"]: name for name, spec in lab.REGRESSION_LOSSES.items()})
    return huber_is_half_mse, reg_overview, reg_overview_chart, reg_residuals


@app.cell
def _(delta, huber_is_half_mse, reg_loss, reg_overview_chart, reg_residuals):
    _e = reg_residuals
    reg_curves = lab.regression_curves(reg_loss.value, _e, delta.value)
    reg_gap = reg_curves.max_derivative_gap
    _spec = lab.REGRESSION_LOSSES[reg_loss.value]
    _half = ("Here δ exceeds every residual drawn (|e| ≤ 4), so the Huber curve is exactly half the MSE curve."
             if huber_is_half_mse else "")
    _lo = max(-8.0, float(min(reg_curves.f.min(), reg_curves.df_formula.min())) - 0.5)
    _hi = min(8.0, float(max(reg_curves.f.max(), reg_curves.df_formula.max())) + 0.5)
    _detail = plot.function_and_derivative(_e, reg_curves.f, reg_curves.df_formula, reg_curves.df_autograd,
                                           name="ℓ", var="e", title=_spec["label"], y_domain=(_lo, _hi), height=240)
    mo.vstack([
        mo.hstack([reg_loss, delta]),
        mo.hstack([ui.chart(reg_overview_chart), ui.chart(_detail)], widths=[1, 1]),
        mo.md(rf"""
    $$
    \ell(e) = {_spec["formula"]}, \qquad \frac{{\partial \ell}}{{\partial \hat y}} = {_spec["grad"]}
    $$

    Largest gap between the autograd dots and the formula: **{reg_gap:.1e}**. {_half}
    """),
    ])
    return reg_curves, reg_gap


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 2. The outlier lab

    Thirty points lie near a line. Move some of the right-most points away (the *outliers*) with
    the sliders, then drag them anywhere on the left chart, and the line $\hat y = wx + b$ that
    minimises each loss is refitted at once: least squares for MSE; for MAE the best of the lines
    through two of the points (an L1 fit always has an optimum there); for Huber and pseudo-Huber
    *iteratively reweighted* least squares, a few least-squares fits in which each point's weight
    $\ell'(e)/e$ shrinks as its residual grows. The engine's Adam (300 steps, cosine-annealed)
    reaches the same lines to about $10^{-3}$; these solvers take a millisecond. MSE follows the
    outliers, because their squared errors outweigh everything else; MAE barely moves; Huber sits
    in between, closer to MAE the smaller $\delta$.
    """)
    return


@app.cell
def _():
    n_outliers = mo.ui.slider(0, 10, step=1, value=lab.LINE_DEFAULT["n_outliers"], label="outliers", show_value=True,
                              debounce=True)
    outlier_shift = mo.ui.slider(-20, 20, step=1, value=lab.LINE_DEFAULT["outlier_shift"], label="outlier shift",
                                 show_value=True, debounce=True)
    return n_outliers, outlier_shift


@app.cell
def _(n_outliers):
    # the chart under the pucks: the inliers, which only the number of outliers changes
    outlier_background = lab.outlier_background(n_outliers.value)
    return (outlier_background,)


@app.cell
def _(n_outliers, outlier_background, outlier_shift):
    # the sliders are the keyboard path: they place the outliers, and the pucks start there
    line_base = lab.make_line_data(n=30, n_outliers=n_outliers.value, outlier_shift=float(outlier_shift.value),
                                   seed=0)
    _x, _y, _out = line_base
    outlier_pucks = widgets.draggable_points(outlier_background, _x[_out], _y[_out]) if _out.any() else None
    return line_base, outlier_pucks


@app.cell
def _(line_base, outlier_pucks):
    _dragged = widgets.puck_points(outlier_pucks.value) if outlier_pucks is not None else np.empty((0, 2))
    line_x, line_y, line_out = lab.with_dragged_outliers(*line_base, _dragged)
    # MSE and MAE do not read δ: fitted here, so moving δ refits only Huber and pseudo-Huber
    line_fits_free = lab.line_fits(line_x, line_y, ("mse", "mae"))
    return line_fits_free, line_out, line_x, line_y


@app.cell
def _(delta, line_fits_free, line_out, line_x, line_y, n_outliers, outlier_pucks, outlier_shift):
    line_fits = {**line_fits_free, **lab.line_fits(line_x, line_y, ("huber", "pseudo_huber"), delta=delta.value)}
    line_fits = {name: line_fits[name] for name in lab.LINE_LOSSES}
    _xs = np.array([-3.2, 3.2])
    _labels = {name: lab.REGRESSION_LOSSES[name]["label"] for name in lab.LINE_LOSSES}
    _chart = (plot.curves(_xs, {_labels[n]: w * _xs + b for n, (w, b) in line_fits.items()}, x_title="x",
                          y_title="y", colors={_labels[n]: n for n in line_fits}, height=280,
                          title="Fitted lines under each loss (true line: slope 1.5, intercept 0.5)")
              + plot.points(line_x[~line_out], line_y[~line_out], color_name="data")
              + plot.points(line_x[line_out], line_y[line_out], color_name="outlier", size=70))
    _rows = "\n".join(f"| {_labels[n]} | {w:.3f} | {b:.3f} |" for n, (w, b) in line_fits.items())
    mo.vstack([
        mo.hstack([n_outliers, outlier_shift, delta]),
        mo.hstack([outlier_pucks, ui.chart(_chart)], widths=[1, 1]) if outlier_pucks is not None else ui.chart(_chart),
        mo.md("| loss | slope w | intercept b |\n|---|---|---|\n" + _rows),
    ])
    return (line_fits,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 3. Losses are likelihoods

    Each loss is the negative log-likelihood of a noise model, and the noise model decides what
    the prediction estimates. Take the simplest model, a constant $c$ fitted to targets $y_i$:

    - **MSE** is $-\ln$ of a Gaussian, $\mathcal N(y \mid c, \sigma^2)$, up to a scale and a
      constant: $\frac{(y-c)^2}{2\sigma^2} + \text{const}$. Its minimiser is the **mean** of $y$.
    - **MAE** is $-\ln$ of a Laplace density, $\frac{|y-c|}{b} + \text{const}$. Its minimiser
      is the **median**.
    - The **pinball** loss $\rho_\tau(e) = \max(\tau e, (\tau - 1) e)$ with $e = y - c$ is $-\ln$
      of an asymmetric Laplace density. Its minimiser is the **τ-quantile**: at the optimum a
      share τ of the targets lies below $c$.
    - **Cross-entropy** is $-\ln$ of a categorical distribution; fitted with constant logits,
      its softmax is the **class frequencies**.

    Below, the engine fits a constant under each loss (Adam, cosine-annealed learning rate) to
    2,000 targets. On skewed (Gamma) noise the three answers differ, and each matches the
    statistic its likelihood estimates; on symmetric Gaussian noise the mean and the median agree.
    """)
    return


@app.cell
def _():
    lik_noise = mo.ui.radio(options={"Gamma(2, 1): skewed": "gamma", "Gaussian N(2, 1): symmetric": "gaussian"},
                            value="Gamma(2, 1): skewed", label="noise", inline=True)
    lik_tau = mo.ui.slider(0.05, 0.95, step=0.05, value=lab.LIKELIHOOD_DEFAULT["tau"], label="pinball quantile τ",
                           show_value=True,
                           debounce=True)
    return lik_noise, lik_tau


@app.cell
def _(lik_noise):
    lik_y = lab.skewed_targets(lik_noise.value, n=2000, seed=0)
    # MSE and MAE do not depend on τ: fitted here, so moving τ refits only the pinball loss
    lik_fits_free = [lab.likelihood_fit(lik_y, "mse", tau=0.5), lab.likelihood_fit(lik_y, "mae", tau=0.5)]
    return lik_fits_free, lik_y


@app.cell
def _(lik_fits_free, lik_noise, lik_tau, lik_y):
    lik_fits = lik_fits_free + [lab.likelihood_fit(lik_y, "pinball", tau=lik_tau.value)]
    _centres, _density = lab.target_density(lik_y)
    _chart = plot.curves(_centres, {"density of the targets": _density}, x_title="y", y_title="density",
                         colors={"density of the targets": "data"}, height=220,
                         title="Targets, and the best constant under MSE (blue), MAE (brown), pinball (violet)")
    for _fit, _color in zip(lik_fits, ("mse", "mae", "model")):
        _chart = _chart + plot.rule(_fit.fitted, orient="x", color_name=_color)
    _names = {"mse": "MSE ↔ Gaussian", "mae": "MAE ↔ Laplace", "pinball": f"pinball τ = {lik_tau.value:g} ↔ asymmetric Laplace"}
    _span = lambda f: (f"{f.minimisers[0]:.4f}" if f.minimisers[0] == f.minimisers[1]  # noqa: E731
                       else f"[{f.minimisers[0]:.4f}, {f.minimisers[1]:.4f}]")
    _rows = "\n".join(f"| {_names[f.loss]} | {f.fitted:.4f} | {f.statistic_name} | {f.statistic:.4f} | {_span(f)} |"
                      for f in lik_fits)
    mo.vstack([
        mo.hstack([lik_noise, lik_tau], justify="start"),
        ui.chart(_chart),
        mo.md("| loss ↔ likelihood | best constant (engine) | statistic | its value (NumPy) | every minimiser |\n"
              "|---|---|---|---|---|\n" + _rows),
        mo.md("With an even count of targets (2,000 here), MAE's loss is flat between the two middle values, "
              "and pinball's between two neighbouring values when 2,000·τ is whole: any point there is a "
              "median or a τ-quantile, so the engine's constant and NumPy's interpolated value can differ "
              "in the third decimal while both minimise the loss."),
    ])
    return (lik_fits,)


@app.cell
def _():
    _labels = lab.default_class_labels()
    class_frequencies = np.bincount(_labels, minlength=3) / len(_labels)
    class_fit = lab.class_probabilities(_labels, 3)
    _show = lambda v: "(" + ", ".join(f"{x:.3f}" for x in v) + ")"  # noqa: E731
    mo.md(f"**Cross-entropy ↔ categorical.** 500 labels drawn with probabilities (0.6, 0.3, 0.1) have "
          f"frequencies **{_show(class_frequencies)}**; constant logits fitted by cross-entropy give the "
          f"softmax **{_show(class_fit)}**: the frequencies, the categorical maximum-likelihood estimate.")
    return class_fit, class_frequencies


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 4. Classification: cross-entropy from logits

    For two classes the model outputs one logit $z$ and $\hat p = \sigma(z)$; for $K$ classes, $K$
    logits and $p = \operatorname{softmax}(z)$. The loss is the negative log-probability of the
    right answer; **label smoothing** $\varepsilon$ replaces the one-hot target by
    $q = (1-\varepsilon)\,\text{onehot}(y) + \varepsilon/K$, so the model is never asked for
    certainty:

    $$
    L = -\sum_k q_k \ln p_k, \qquad \frac{\partial L}{\partial z_k} = p_k - q_k .
    $$

    That gradient is why the output function and the loss belong together: the softmax's
    Jacobian and the logarithm's $1/p$ cancel into a plain difference (for two classes,
    $\partial L/\partial z = \hat p - y$). Below, the bars are the formula $p - q$ and the dark
    dots autograd's $\partial L/\partial z$.
    """)
    return


@app.cell
def _():
    ce_logits = mo.ui.text(value="2.0, 0.5, -1.0, 0.0", label="logits z", full_width=True)
    ce_target = mo.ui.slider(0, 11, step=1, value=1, label="true class y", show_value=True)
    smoothing = mo.ui.slider(0.0, 0.5, step=0.01, value=0.1, label="label smoothing ε", show_value=True)
    return ce_logits, ce_target, smoothing


@app.cell
def _(ce_logits, ce_target, smoothing):
    ce_report = None
    try:
        _z = lab.parse_numbers(ce_logits.value, name="logits")
        ce_report = lab.cross_entropy_report(_z, int(ce_target.value), smoothing.value)
    except ValueError as _err:
        _out = ui.problem(_err, "The cross-entropy")
    else:
        _classes = [f"class {k}" for k in range(len(_z))]
        _probs = plot.grouped_bars(_classes, {"predicted p": ce_report.probs, "target q": ce_report.target},
                                   y_title="probability", y_domain=(0, 1),
                                   colors={"predicted p": "model", "target q": "target"},
                                   title="Prediction and (smoothed) target")
        _grad = plot.bars(_classes, ce_report.grad_formula, bar_label="p − q (formula)",
                          color_name="derivative", dots={"autograd ∂L/∂z": ce_report.grad_autograd},
                          y_title="∂L/∂z_k", title="Gradient with respect to the logits")
        _out = mo.vstack([
            mo.hstack([_probs, _grad], widths=[1, 1]),
            mo.md(f"Cross-entropy **L = {ce_report.loss:.4f}** (engine `F.cross_entropy(z, y, "
                  f"label_smoothing={smoothing.value:g})`); largest |autograd − (p − q)| = "
                  f"**{np.abs(ce_report.grad_autograd - ce_report.grad_formula).max():.1e}**. "
                  "With ε > 0 the loss cannot reach 0: the best the model can do is p = q."),
        ])
    mo.vstack([ce_logits, mo.hstack([ce_target, smoothing]), _out])
    return (ce_report,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 5. Why losses take logits

    Written naively, cross-entropy is `-log(exp(z[y]) / exp(z).sum())`, and it fails in two
    ways. In float32, $e^{z}$ overflows to `inf` past $z \approx 88.7$: if the target is the
    **most likely** class, the ratio becomes `inf/inf = nan`. If the target is the **least
    likely** class, its probability $e^{z_y}/\sum_j e^{z_j}$ underflows to 0 long before that,
    and $-\ln 0 = +\infty$. The fused loss never forms those numbers:

    $$
    -\ln \operatorname{softmax}(z)_y = -z_y + \ln\sum_j e^{z_j}
    = -z_y + m + \ln\sum_j e^{z_j - m}, \qquad m = \max_j z_j .
    $$

    Every $e^{z_j - m}$ lies in $(0, 1]$ and the sum is at least 1, so nothing overflows and
    the logarithm never sees 0: the computation is **numerically stable** (it still rounds like
    any float computation). This is why `F.cross_entropy` and
    `F.binary_cross_entropy_with_logits` (like their PyTorch namesakes) take **logits**, not
    probabilities. Below: logits $s\cdot(1, 0, -1)$ and a target class you choose; class 2's true
    loss is $2s + \ln(1 + e^{-s} + e^{-2s})$, about $2s$, and class 0's is
    $\ln(1 + e^{-s} + e^{-2s})$, about $e^{-s}$.
    """)
    return


@app.cell
def _():
    logit_scale = mo.ui.slider(steps=[1, 2, 5, 10, 20, 30, 50, 80, 100, 200, 500, 1000], value=50,
                               label="logit scale s", show_value=True)
    precision = mo.ui.radio(options=["float32", "float64"], value="float32", label="precision", inline=True)
    naive_target = mo.ui.radio(options={"class 0 (the most likely)": 0, "class 1": 1,
                                        "class 2 (the least likely)": 2},
                               value="class 2 (the least likely)", label="target class y", inline=True)
    return logit_scale, naive_target, precision


@app.cell
def _(naive_target, precision):
    # the whole curve depends on precision and target only; moving s just moves the rule
    naive_scales = np.geomspace(1, 1000, 61)
    naive_curve, fused_curve = lab.naive_vs_fused(naive_scales, precision.value, naive_target.value)
    naive_break = lab.naive_breakdown(precision.value, naive_target.value)
    naive_breaks_at = naive_break.scale
    return fused_curve, naive_break, naive_breaks_at, naive_curve, naive_scales


@app.cell
def _(fused_curve, logit_scale, naive_break, naive_curve, naive_scales, naive_target, precision):
    naive_now, fused_now = (float(v[0]) for v in lab.naive_vs_fused([logit_scale.value], precision.value,
                                                                      naive_target.value))
    _fused64 = float(lab.naive_vs_fused([logit_scale.value], "float64", naive_target.value)[1][0])
    _chart = plot.curves(naive_scales, {"fused cross_entropy": fused_curve, "naive log(softmax)": naive_curve},
                         x_title="logit scale s", y_title="loss", log_y=True, log_x=True,
                         colors={"naive log(softmax)": "error", "fused cross_entropy": "target"},
                         dashed=["naive log(softmax)"], title=f"Cross-entropy in {precision.value}", height=240)
    _chart = _chart + plot.rule(logit_scale.value, orient="x")
    _shown = "nan" if np.isnan(naive_now) else ("inf" if np.isinf(naive_now) else f"{naive_now:.4g}")
    _how = {"NaN": "**NaN** (exp overflowed: inf/inf)", "+∞": "**+∞** (the probability underflowed to 0)"}
    _where = (f"In {precision.value}, with target class {naive_target.value}, the naive formula first gives "
              f"{_how[naive_break.kind]} at s ≈ **{naive_break.scale:.1f}**; there the red curve stops."
              if naive_break.scale is not None
              else f"In {precision.value} the naive formula stays finite up to s = 1000.")
    mo.vstack([
        mo.hstack([logit_scale, precision]),
        naive_target,
        ui.chart(_chart),
        mo.md(f"At s = {logit_scale.value:g}: naive **{_shown}**, fused **{fused_now:.4g}** "
              f"(fused in float64: {_fused64:.4g}). {_where}"),
    ])
    return fused_now, naive_now


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 6. KL divergence is not a distance

    $$
    D_{\mathrm{KL}}(p\,\|\,q) = \sum_x p(x)\ln\frac{p(x)}{q(x)} \;\ge 0,
    \qquad D_{\mathrm{KL}}(p\,\|\,q) \ne D_{\mathrm{KL}}(q\,\|\,p).
    $$

    Cross-entropy equals $D_{\mathrm{KL}}(p\|q)$ plus the entropy of $p$, so minimising one
    minimises the other. Here $p$ is a two-bump distribution and $q$ a single Gaussian you can
    move. $D_{\mathrm{KL}}(p\|q)$ explodes where $q$ misses mass that $p$ has; $D_{\mathrm{KL}}(q\|p)$
    explodes where $q$ puts mass that $p$ lacks. The dashed curves are $q$ fitted by the engine
    each way (Adam, 300 steps) from $\mu = 1$, $\sigma = 1$: forward KL **covers** both bumps,
    reverse KL **picks** one (the behaviour behind variational inference's over-confident
    posteriors). The button fits again from where you put $q$.

    Now put $q$ at $\mu = 0$, with the bumps well apart, and fit again. By symmetry the gradient
    of $D_{\mathrm{KL}}(q\|p)$ in $\mu$ is exactly zero there, so gradient descent never leaves
    $\mu = 0$: it only widens $q$ over both bumps and stops at a **symmetric stationary point**.
    At the default separation of 5 that point is a local minimum, and a worse one than either
    bump (its $D_{\mathrm{KL}}(q\|p)$ is about twice as large). The objective is not convex in
    $(\mu, \sigma)$: where you start decides where you end.
    """)
    return


@app.cell
def _():
    kl_separation = mo.ui.slider(0.0, 8.0, step=0.5, value=lab.KL_DEFAULT["separation"], label="bump separation",
                                 show_value=True)
    q_mu = mo.ui.slider(-4.0, 4.0, step=0.1, value=lab.KL_DEFAULT["mu0"], label="q: mean μ", show_value=True)
    q_sigma = mo.ui.slider(0.2, 4.0, step=0.1, value=lab.KL_DEFAULT["sigma0"], label="q: std σ", show_value=True)
    kl_fit_button = mo.ui.run_button(label="fit q both ways")
    return kl_fit_button, kl_separation, q_mu, q_sigma


@app.cell
def _(kl_fit_button, kl_separation, q_mu, q_sigma):
    kl_grid = lab.KL_GRID
    kl_p = lab.bimodal_on_grid(kl_grid, separation=kl_separation.value)
    kl_q = lab.gaussian_on_grid(kl_grid, q_mu.value, q_sigma.value)
    kl_forward, kl_reverse = lab.kl_both_ways(kl_p, kl_q)
    _settings = {"separation": kl_separation.value, "mu0": q_mu.value, "sigma0": q_sigma.value}
    kl_fits_shipped = not kl_fit_button.value and lab.is_default_kl(_settings)
    kl_fits = {}
    if kl_fit_button.value:
        with mo.status.progress_bar(total=1, title="fitting q both ways", remove_on_exit=True) as _bar:
            kl_fits = lab.fit_q_both_ways(**_settings)
            _bar.update()
    elif kl_fits_shipped:  # the default fits, from the checkpoint the course ships: no training on open
        kl_fits = lab.default_kl_fits()
    _curves = {"p (target)": kl_p, "q (yours)": kl_q}
    _colors = {"p (target)": "data", "q (yours)": "model"}
    for _direction, (_mu, _sig, _) in kl_fits.items():
        _name = f"q fitted by {'KL(p‖q)' if _direction == 'forward' else 'KL(q‖p)'}"
        _curves[_name] = lab.gaussian_on_grid(kl_grid, _mu, _sig)
        _colors[_name] = "kl_" + _direction
    _chart = plot.curves(kl_grid, _curves, x_title="x", y_title="probability", colors=_colors, height=240,
                         dashed=[n for n in _curves if "fitted" in n], title="p and q on a grid of 281 points")
    _fit_text = "".join(
        f" · {'KL(p‖q)' if d == 'forward' else 'KL(q‖p)'} fit: μ = {m:.2f}, σ = {s:.2f}, "
        f"final {'KL(p‖q)' if d == 'forward' else 'KL(q‖p)'} = {h[-1]:.3f}"
        for d, (m, s, h) in kl_fits.items())
    _source = ("Fits: trained in advance from the default start and shipped with the course; the "
               "button refits from your settings." if kl_fits_shipped else
               "Fits: from your settings." if kl_fits else
               "Not fitted from these settings yet: the button fits q both ways from here (about 0.1 s).")
    mo.vstack([
        mo.hstack([kl_separation, q_mu, q_sigma, kl_fit_button], wrap=True),
        ui.chart(_chart),
        mo.md(f"KL(p‖q) = **{kl_forward:.4f}** · KL(q‖p) = **{kl_reverse:.4f}**{_fit_text}"),
        mo.md(f"<small>{_source}</small>"),
    ])
    return kl_fits, kl_fits_shipped, kl_forward, kl_reverse


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 7. MSE on a sigmoid learns slowly when it is badly wrong

    Take a positive example ($y=1$) and let its logit $z$ range from very wrong ($z \ll 0$) to
    very right. With cross-entropy, $\partial L/\partial z = \sigma(z) - 1 \to -1$: the worse the
    mistake, the stronger the push. With MSE on the probability,

    $$
    \frac{\partial}{\partial z}\,(\sigma(z) - 1)^2 = 2(\sigma(z)-1)\,\sigma(z)\,(1-\sigma(z)) \;\to\; 0
    \quad (z \to -\infty),
    $$

    because the sigmoid has flattened: a confident mistake gets almost no gradient. On the right,
    a logistic regression starts from a wrong weight $w_0$ and trains with each loss.
    """)
    return


@app.cell
def _():
    w0 = mo.ui.slider(-6.0, 6.0, step=0.5, value=-4.0, label="initial weight w₀", show_value=True)
    clf_lr = mo.ui.slider(steps=[0.01, 0.03, 0.1, 0.3, 1.0, 3.0], value=0.3, label="learning rate η", show_value=True)
    return clf_lr, w0


@app.cell
def _():
    # no control moves this chart: drawn once
    margin_grads = lab.margin_gradients(np.linspace(-10, 10, 201))
    margin_chart = plot.curves(
        margin_grads.margins, {"CE formula": margin_grads.ce_formula, "MSE formula": margin_grads.mse_formula},
        dots={"CE autograd": margin_grads.ce_autograd, "MSE autograd": margin_grads.mse_autograd}, n_dots=21,
        colors={"CE formula": "cross_entropy", "MSE formula": "mse", "MSE autograd": "#475569"},
        x_title="logit z of a positive example (margin)", y_title="|∂L/∂z|", height=240,
        title="Gradient against margin")
    return margin_chart, margin_grads


@app.cell
def _(clf_lr, margin_chart, w0):
    _x, _y = lab.sigmoid_classifier_data(100, seed=0)
    clf_runs = {name: lab.train_sigmoid_classifier(_x, _y, name, w0=w0.value, lr=clf_lr.value, steps=100)
                for name in ("cross_entropy", "mse")}
    # The training accuracy of both runs, step by step: the chart this section is about.
    _names = ["cross-entropy", "MSE on σ(z)"]
    _steps = np.arange(1, len(clf_runs["cross_entropy"].accuracy) + 1)
    _curves = plot.data(step=np.tile(_steps, 2), name=np.repeat(np.array(_names, dtype=object), len(_steps)),
                        accuracy=np.concatenate([clf_runs["cross_entropy"].accuracy, clf_runs["mse"].accuracy]))
    _acc = alt.Chart(_curves, width="container", height=240, title=f"Training from w₀ = {w0.value:g}").mark_line().encode(
        alt.X("step:Q", title="step"), alt.Y("accuracy:Q", title="training accuracy"),
        alt.Color("name:N", title="", legend=alt.Legend(orient="bottom"),
                  scale=alt.Scale(domain=_names, range=[plot.color("cross_entropy"), plot.color("mse")])),
        alt.Tooltip("accuracy:Q", format=".2f"))
    _say = " · ".join(f"{'cross-entropy' if n == 'cross_entropy' else 'MSE'}: "
                      + (f"95 % accuracy after **{r.steps_to(0.95)}** steps" if r.steps_to(0.95) is not None
                         else "**not** at 95 % after 100 steps")
                      for n, r in clf_runs.items())
    mo.vstack([mo.hstack([w0, clf_lr]), mo.hstack([ui.chart(margin_chart), ui.chart(_acc)], widths=[1, 1]),
               mo.md(_say)])
    return (clf_runs,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 8. The initial-loss check

    Before training, a classifier's logits should be small, so every class gets about $1/K$ and
    the cross-entropy is about $-\ln(1/K) = \ln K$: 0.693 for two classes, 2.303 for ten. If the
    first loss you print is far above $\ln K$, the initialisation is making confident guesses (or
    the labels and logits do not match); if it is NaN, look for a log of zero. Random logits
    $z \sim \mathcal N(0, s^2)$ against random labels:
    """)
    return


@app.cell
def _():
    n_classes = mo.ui.slider(steps=[2, 3, 5, 10, 20, 50, 100, 1000], value=10, label="classes K", show_value=True)
    init_logit_scale = mo.ui.slider(steps=[0.001, 0.01, 0.1, 0.3, 1.0, 3.0, 10.0], value=0.01,
                                    label="logit scale s", show_value=True)
    return init_logit_scale, n_classes


@app.cell
def _(init_logit_scale, n_classes):
    initial, ln_k = lab.initial_loss(n_classes.value, init_logit_scale.value, n_samples=512, seed=0)
    _ratio = initial / ln_k
    _kind = "success" if abs(_ratio - 1) < 0.05 else "warn"
    mo.vstack([
        mo.hstack([n_classes, init_logit_scale]),
        mo.callout(mo.md(f"Initial cross-entropy **{initial:.4f}** against ln K = **{ln_k:.4f}** "
                         f"(ratio {_ratio:.2f}). " + ("Healthy start." if _kind == "success" else
                                                     "Too far from ln K: shrink the initial logits.")), kind=_kind),
    ])
    return initial, ln_k


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 9. Many labels, and rare ones

    **Multi-label.** A photo can show a dog *and* grass. Softmax cross-entropy spreads one unit of
    probability over the labels, so with two true labels its target is $q = (\tfrac12, \tfrac12)$
    on them, and its loss can never fall below the entropy of $q$, $\ln 2$. Multi-label
    classification instead gives every label its own sigmoid and sums binary cross-entropies,
    $\sum_k \text{BCE}(\sigma(z_k), t_k)$: each label is a separate yes/no question, each
    probability can reach 1, and the gradient $\sigma(z_k) - t_k$ of one label does not depend
    on the others' logits.
    """)
    return


@app.cell
def _():
    ml_logits = mo.ui.text(value="2.0, -1.0, 1.5, -3.0", label="logits z (one per label)", full_width=True)
    ml_labels = mo.ui.multiselect(options={f"label {k}": k for k in range(6)}, value=["label 0", "label 2"],
                                  label="true labels")
    return ml_labels, ml_logits


@app.cell
def _(ml_labels, ml_logits):
    ml_report = None
    try:
        _z = lab.parse_numbers(ml_logits.value, name="logits", max_count=6)
        ml_report = lab.multilabel_report(_z, ml_labels.value)
    except ValueError as _err:
        _out = ui.problem(_err, "This example")
    else:
        _names = [f"label {k}" for k in range(len(_z))]
        _chart = plot.grouped_bars(_names, {"sigmoid σ(z_k) (multi-label)": ml_report.sigmoid_probs,
                                            "softmax p_k": ml_report.softmax_probs},
                                   y_title="probability", y_domain=(0, 1),
                                   colors={"sigmoid σ(z_k) (multi-label)": "model", "softmax p_k": "cross_entropy"},
                                   title="The same logits, read two ways")
        _out = mo.vstack([_chart, mo.md(
            f"Sigmoids sum to **{ml_report.sigmoid_probs.sum():.3f}**, the softmax to "
            f"**{ml_report.softmax_probs.sum():.3f}**. Multi-label BCE **{ml_report.bce:.4f}** (it can reach 0) · "
            f"softmax cross-entropy **{ml_report.softmax_ce:.4f}**, never below "
            f"ln {len(ml_labels.value)} = **{ml_report.softmax_floor:.4f}**.")])
    mo.vstack([mo.hstack([ml_logits, ml_labels], widths=[2, 1]), _out])
    return (ml_report,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Imbalance.** When one class is rare, the loss is dominated by the common one. Below, a
    logistic regression $z = \mathbf x\,\mathbf w^\top + b$ separates two overlapping 2-D Gaussian
    classes of 1,000 points, the positives a minority, trained (Adam, 200 steps) three ways:
    plain BCE; BCE with each positive weighted by $n_{neg}/n_{pos}$ (`pos_weight`, as in
    PyTorch); and the **focal loss** of Lin et al. (2017), $-(1-p_t)^\gamma \ln p_t$, which
    down-weights the examples the model already gets right. Recall is the share of the
    positives found, precision the share of the predicted positives that are right (threshold ½).
    """)
    return


@app.cell
def _():
    imb_share = mo.ui.slider(steps=[0.01, 0.02, 0.05, 0.1, 0.2, 0.5], value=lab.IMBALANCE_DEFAULT["minority_share"],
                             label="minority share",
                             show_value=True, debounce=True)
    focal_gamma = mo.ui.slider(0.0, 5.0, step=0.5, value=lab.IMBALANCE_DEFAULT["gamma"], label="focal γ",
                               show_value=True, debounce=True)
    return focal_gamma, imb_share


@app.cell
def _(imb_share):
    imb_data = lab.imbalanced_data(n=1000, minority_share=imb_share.value, seed=0)
    # plain and weighted BCE do not read γ: trained here, so moving γ retrains only the focal loss
    imb_runs_free = {m: lab.imbalance_run(*imb_data, m, gamma=0.0) for m in ("plain", "weighted")}
    return imb_data, imb_runs_free


@app.cell
def _(focal_gamma, imb_data, imb_runs_free, imb_share):
    imb_runs = {**imb_runs_free, "focal": lab.imbalance_run(*imb_data, "focal", gamma=focal_gamma.value)}
    _label = {"plain": "plain BCE", "weighted": "BCE, pos_weight = n_neg/n_pos", "focal": f"focal, γ = {focal_gamma.value:g}"}
    _pct = lambda v: "—" if not np.isfinite(v) else f"{100 * v:.0f} %"  # noqa: E731
    _rows = "\n".join(f"| {_label[m]} | {_pct(r.accuracy)} | {_pct(r.recall)} | {_pct(r.precision)} |"
                      for m, r in imb_runs.items())
    mo.vstack([mo.hstack([imb_share, focal_gamma], justify="start"),
               mo.md("| loss | accuracy | minority recall | minority precision |\n|---|---|---|---|\n" + _rows)])
    return (imb_runs,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    At a minority share of 1 %, plain BCE reaches 99 % accuracy by never predicting the rare
    class: its recall is 0, and accuracy says nothing. Weighting the positives moves the boundary
    toward the common class: recall jumps (above 80 % here), paid for in precision. On this
    linear problem the focal loss changes recall far less than the class weight does; it was
    designed for detectors facing a flood of easy negatives, and it is not a class weight.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 10. Check yourself
    """)
    return


@app.cell
def _():
    exercise_ln10 = exercises.NumberExercise(
        question="**1.** A freshly initialised 10-class classifier outputs all-zero logits. What cross-entropy "
                 "does it start from? (Three decimals.)",
        truth=lab.cross_entropy_report(np.zeros(10), 3).loss,
        hint="Every class gets 1/10.",
        abs_tol=0.002,
    )
    answer_ln10 = ui.answer_box(exercise_ln10, placeholder="e.g. 1.0", label="L₀ =")
    return answer_ln10, exercise_ln10


@app.cell
def _(answer_ln10, exercise_ln10):
    ui.exercise(exercise_ln10, answer_ln10)
    return


@app.cell
def _():
    exercise_huber = exercises.NumberExercise(
        question="**2.** Huber loss with δ = 1 for a residual e = 3?",
        truth=float(lab.regression_curves("huber", np.array([3.0]), delta=1.0).f[0]),
        hint="|e| > δ, so the linear branch δ(|e| − δ/2) applies.",
        abs_tol=1e-3,
    )
    answer_huber = ui.answer_box(exercise_huber, placeholder="e.g. 4.5", label="Huber(e = 3) =")
    return answer_huber, exercise_huber


@app.cell
def _(answer_huber, exercise_huber):
    ui.exercise(exercise_huber, answer_huber)
    return


@app.cell
def _():
    exercise_bce = exercises.NumberExercise(
        question="**3.** A binary classifier gives a positive example (y = 1) the probability p̂ = 0.8. "
                 "What is ∂L/∂z of the cross-entropy with respect to its logit?",
        # margin_gradients holds |∂L/∂z| for y = 1, where ∂L/∂z = σ(z) − 1 is negative
        truth=-float(lab.margin_gradients([np.log(0.8 / 0.2)]).ce_autograd[0]),
        hint="∂L/∂z = p̂ − y; mind the sign.",
        abs_tol=1e-3,
    )
    answer_bce = ui.answer_box(exercise_bce, placeholder="e.g. 0.5", label="∂L/∂z =")
    return answer_bce, exercise_bce


@app.cell
def _(answer_bce, exercise_bce):
    ui.exercise(exercise_bce, answer_bce)
    return


@app.cell
def _():
    exercise_median = exercises.NumberExercise(
        question="**4.** Three targets, 1, 2 and 10. What is the best constant prediction under **MAE**? "
                 "(And under MSE?)",
        truth=lab.quantile_interval([1.0, 2.0, 10.0], 0.5)[0],  # MAE's minimisers: the medians (one here)
        hint="MAE is the Laplace likelihood; which statistic does it estimate?",
        abs_tol=0.01,
        explanation="MAE's minimiser is the median, 2; MSE's is the mean, 13/3 ≈ 4.33, pulled up by the 10.",
    )
    answer_median = ui.answer_box(exercise_median, placeholder="e.g. 4", label="ĉ =")
    return answer_median, exercise_median


@app.cell
def _(answer_median, exercise_median):
    ui.exercise(exercise_median, answer_median)
    return


@app.cell
def _():
    exercise_floor = exercises.NumberExercise(
        question="**5.** An image has **three** true labels out of ten. Trained with softmax cross-entropy and "
                 "the target spread evenly over them, what is the lowest loss the model can reach? (Three decimals.)",
        truth=lab.multilabel_report(np.zeros(10), [1, 4, 7]).softmax_floor,
        hint="the best the model can do is p = q; the loss is then the entropy of q.",
        abs_tol=0.002,
        explanation="ln 3: the softmax must share its probability, while three sigmoids could each reach 1.",
    )
    answer_floor = ui.answer_box(exercise_floor, placeholder="e.g. 0.5", label="lowest L =")
    return answer_floor, exercise_floor


@app.cell
def _(answer_floor, exercise_floor):
    ui.exercise(exercise_floor, answer_floor)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 11. The same in your own script

    The cell below is what you would write in a script (it runs here, in a private function).
    """)
    return


@app.cell
def _():
    def _script():
        import numpy as np

        import engine
        import engine.functional as F

        pred = engine.tensor(np.array([0.5, 2.0, -3.0]), requires_grad=True)
        target = np.zeros(3)
        lines = []
        for name, loss_fn in (("MSE", F.mse_loss), ("MAE", F.l1_loss),
                              ("Huber", lambda p, t: F.huber_loss(p, t, delta=1.0))):
            pred.grad = None
            loss = loss_fn(pred, target)
            loss.backward()
            lines.append(f"{name}: loss {float(loss.data):.4f}, gradient {np.round(pred.grad, 4)}")

        logits = engine.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
        loss = F.cross_entropy(logits, np.array([1]), label_smoothing=0.1)  # logits in, never softmax first
        loss.backward()  # logits.grad = p − q (mean over the batch)
        lines.append(f"cross-entropy {float(loss.data):.4f}, ∂L/∂z = {np.round(logits.grad, 4)}")

        z = engine.tensor([1000.0])
        lines.append(f"BCE with logits at z = 1000, y = 0: {float(F.binary_cross_entropy_with_logits(z, engine.tensor([0.0])).data):.1f}")
        return "\n".join(lines)

    mo.plain_text(_script())
    return


@app.cell(hide_code=True)
def _():
    mo.md(toc.nav_md(METADATA["id"]))
    return


if __name__ == "__main__":
    app.run()

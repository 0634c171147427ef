import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="02 · Loss functions")

with app.setup:
    import altair as alt
    import marimo as mo
    import numpy as np

    import engine
    import engine.functional as F
    from engine.course import exercises, metadata, plot, toc, ui, widgets
    from engine.course.labs import losses as lab
    from engine.optim import SGD, Adam
    from engine.optim.lr_scheduler import CosineAnnealingLR

    METADATA = metadata("02_losses")


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        r"""
    A loss turns "how wrong is the model?" into one number, and its **gradient** is the only thing
    the optimizer ever sees. Choosing a loss is choosing which mistakes matter. In this notebook you will

    - compare MSE, MAE, Huber and pseudo-Huber as functions of the residual, each written out in a
      cell you can edit, with their gradients computed by the engine's autograd;
    - fit a line under each of them while you drag outliers around, with exact solvers and with
      the fitting loop behind this page's other fits;
    - read each loss as a **likelihood**: the mean, the median and a quantile, each the answer
      of one loss;
    - compute cross-entropy from logits, with label smoothing, and watch the naive
      `log(softmax)` break where the fused version does not;
    - see that KL divergence is not symmetric, and why MSE on a sigmoid learns slowly;
    - learn the first check of any classifier: the initial loss should be $\ln K$;
    - score several labels at once, and a class that is rare.
    """,
    )
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

    Here they are, written out per example with the engine's tensors; the mean of each over a
    batch is the library's loss named in its docstring. Every chart and fit on this page calls
    these cells, and the dots on the right are autograd's gradient through them.

    **Change this cell:** in `huber`, drop the ½ of the quadratic branch (`e * e` instead of
    `0.5 * e * e`). The curve then jumps at $|e| = \delta$, the autograd dots leave the formula's
    line inside $\pm\delta$ (slope $2e$ instead of $e$), and the largest gap printed under the
    charts grows from about $10^{-16}$ to $\delta$.
    """)
    return


@app.function
def mse(pred, target):
    """Squared error per example: ℓ = e², e = ŷ − y. Its mean is F.mse_loss(pred, target)."""
    e = pred - target
    return e * e


@app.function
def mae(pred, target):
    """Absolute error per example: ℓ = |e|. Its mean is F.l1_loss(pred, target)."""
    return (pred - target).abs()


@app.function
def huber(pred, target, delta=1.0):
    """Huber per example: ℓ = ½e² where |e| ≤ δ, δ(|e| − ½δ) beyond.
    Its mean is F.huber_loss(pred, target, delta=delta)."""
    e = pred - target
    a = e.abs()
    return engine.where(a <= delta, 0.5 * e * e, delta * (a - 0.5 * delta))


@app.function
def pseudo_huber(pred, target, delta=1.0):
    """Pseudo-Huber per example, Huber made smooth: ℓ = δ²(√(1 + (e/δ)²) − 1).
    Its mean is F.pseudo_huber_loss(pred, target, delta=delta)."""
    e = pred - target
    return delta**2 * ((1 + (e / delta) ** 2).sqrt() - 1)


@app.function
def per_example_loss(name, delta=1.0, tau=0.5):
    """The per-example loss ℓ(ŷ, y) this page calls ``name``, its δ (Huber) or τ (pinball) bound."""
    return {
        "mse": mse,
        "mae": mae,
        "huber": lambda pred, target: huber(pred, target, delta),
        "pseudo_huber": lambda pred, target: pseudo_huber(pred, target, delta),
        "pinball": lambda pred, target: pinball(pred, target, tau),
    }[name]


@app.cell
def _():
    reg_loss = mo.ui.dropdown(
        options={spec["label"]: name for name, spec in lab.REGRESSION_LOSSES.items()}, value="Huber", label="loss ℓ"
    )
    # live while dragged: a change of δ redraws two curves and refits two lines
    delta = mo.ui.slider(
        lab.LINE_DELTAS[0],
        lab.LINE_DELTAS[-1],
        step=0.1,
        value=lab.LINE_DEFAULT["delta"],
        label="δ (Huber, pseudo-Huber)",
        show_value=True,
    )
    # shown here, above the charts: the cell they re-run sends its charts, not the controls again
    mo.hstack([reg_loss, delta])
    return delta, reg_loss


@app.cell
def _(delta, reg_loss):
    reg_residuals = np.linspace(-4, 4, 81)  # steps of 0.1: every δ step (0.1) is a grid point, so each kink is drawn

    def _overview():
        _curves = {
            spec["label"]: lab.regression_curves(
                per_example_loss(name, delta.value), name, reg_residuals, delta.value
            ).f
            for name, spec in lab.REGRESSION_LOSSES.items()
        }
        return _curves, lab.compact_chart(
            plot.curves(
                reg_residuals,
                _curves,
                x_title="residual e = ŷ − y",
                y_title="loss ℓ(e)",
                y_domain=(0, 8),
                height=240,
                title=f"The four losses (δ = {delta.value:g})",
                colors={spec["label"]: name for name, spec in lab.REGRESSION_LOSSES.items()},
            )
        )

    # the four curves do not depend on the loss picked for the detail: drawn once for each δ (and the code
    # of this cell and of its lesson cells) and kept, so picking another loss reuses them
    reg_overview, reg_overview_chart = lab.remembered(
        lab.code_key(_overview, delta.value, reg_residuals.tobytes(), per_example_loss, mse, mae, huber, pseudo_huber),
        _overview,
    )
    # δ beyond every residual drawn: Huber is ½e² on the whole plot, half the MSE curve beside it
    huber_is_half_mse = bool(np.allclose(reg_overview["Huber"], 0.5 * reg_overview["MSE (L2)"], rtol=1e-12))
    _e = reg_residuals
    reg_curves = lab.regression_curves(per_example_loss(reg_loss.value, delta.value), reg_loss.value, _e, delta.value)
    reg_gap = reg_curves.max_derivative_gap
    _spec = lab.REGRESSION_LOSSES[reg_loss.value]
    _half = (
        "Here δ exceeds every residual drawn (|e| ≤ 4), so the Huber curve is exactly half the MSE curve."
        if huber_is_half_mse
        else ""
    )

    def _detail():
        _lo = max(-8.0, float(min(reg_curves.f.min(), reg_curves.df_formula.min())) - 0.5)
        _hi = min(8.0, float(max(reg_curves.f.max(), reg_curves.df_formula.max())) + 0.5)
        return lab.compact_chart(
            plot.function_and_derivative(
                _e,
                reg_curves.f,
                reg_curves.df_formula,
                reg_curves.df_autograd,
                name="ℓ",
                var="e",
                title=_spec["label"],
                y_domain=(_lo, _hi),
                height=240,
            )
        )

    # the detail chart of one loss at one δ, drawn once and kept (its values, the page's code, are the key)
    _detail_chart = lab.remembered(
        (
            "detail",
            reg_loss.value,
            *(a.tobytes() for a in (_e, reg_curves.f, reg_curves.df_formula, reg_curves.df_autograd)),
        ),
        _detail,
    )
    mo.vstack(
        [
            ui.chart_row(reg_overview_chart, _detail_chart),
            mo.md(rf"""
    $$
    \ell(e) = {_spec["formula"]}, \qquad \frac{{\partial \ell}}{{\partial \hat y}} = {_spec["grad"]}
    $$

    Largest gap between the autograd dots and the formula: **{reg_gap:.1e}**. {_half}
    """),
        ]
    )
    return huber_is_half_mse, reg_curves, reg_gap, reg_overview, reg_overview_chart, reg_residuals


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 2. The outlier lab

    Thirty points lie near a line. Move some of the right-most points away (the *outliers*) with
    the sliders, then drag them anywhere on the left chart, and the line $\hat y = wx + b$ that
    minimises each loss is refitted at once: least squares for MSE; for MAE the best of the lines
    through two of the points (an L1 fit always has an optimum there); for Huber and pseudo-Huber
    *iteratively reweighted* least squares, a few least-squares fits in which each point's weight
    $\ell'(e)/e$ shrinks as its residual grows. MSE follows the outliers, because their squared
    errors outweigh everything else; MAE barely moves; Huber sits in between, closer to MAE the
    smaller $\delta$.

    A network has no such solver: it is trained by a loop. `fit` below is the loop behind the
    fits of sections 2, 3, 6 and 9: compute the loss, `backward()` for its gradient, one
    optimizer step, with Adam's learning rate annealed to 0 by a cosine schedule,
    $\eta_t = \tfrac12\eta\,(1 + \cos(\pi t / T))$, so that MAE's gradients, which keep their size
    all the way to the minimum, still settle. `fit_line` runs it on the line's two parameters.
    The engine's Adam (300 steps, cosine-annealed) reaches the solvers' lines to about $10^{-3}$:
    compare Adam's columns of the table with the solvers'.
    """)
    return


@app.function
def fit(loss_fn, params, steps=300, lr=0.1, anneal=True):
    """The fitting loop: for t = 0 … T−1, L = loss_fn(), ∇L by backward(), one Adam step on params,
    with η_t = ½η(1 + cos(πt/T)) when anneal (else a constant η). Returns L at every step."""
    optimizer = Adam(params, lr=lr)
    schedule = CosineAnnealingLR(optimizer, T_max=steps) if anneal else None
    history = np.empty(steps)
    for t in range(steps):
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        optimizer.step()
        if schedule is not None:
            schedule.step()
        history[t] = float(loss.data)
    return history


@app.function
def fit_line(x, y, loss, steps=300, lr=0.2):
    """The line ŷ = w·x + b minimising the mean of a per-example loss(ŷ, y), by fit from w = b = 0."""
    w = engine.tensor(np.array(0.0), requires_grad=True)
    b = engine.tensor(np.array(0.0), requires_grad=True)
    x, y = engine.tensor(np.asarray(x, dtype=np.float64)), engine.tensor(np.asarray(y, dtype=np.float64))
    fit(lambda: loss(w * x + b, y).mean(), [w, b], steps, lr)
    return float(w.data), float(b.data)


@app.cell
def _():
    n_outliers = mo.ui.slider(
        0, 10, step=1, value=lab.LINE_DEFAULT["n_outliers"], label="outliers", show_value=True, debounce=True
    )
    outlier_shift = mo.ui.slider(
        -20, 20, step=1, value=lab.LINE_DEFAULT["outlier_shift"], label="outlier shift", show_value=True, debounce=True
    )
    line_adam_button = mo.ui.run_button(label="fit these points with fit_line")
    return line_adam_button, n_outliers, outlier_shift


@app.function
def shipped_line_fits():
    """Adam's columns as the page opens them (the checkpoint losses_line_fits): `fit_line` under
    each loss on the points the outlier lab opens with, at its default δ."""
    return lab.line_fits_state(lambda x, y, name, delta: fit_line(x, y, per_example_loss(name, delta)))


@app.cell
def _(n_outliers, outlier_shift):
    # the sliders are the keyboard path: they place the outliers, and the pucks start there, over the
    # inliers' chart (drawn once for each number of outliers)
    line_base = lab.make_line_data(n=30, n_outliers=n_outliers.value, outlier_shift=float(outlier_shift.value), seed=0)
    _x, _y, _out = line_base
    outlier_pucks = lab.outlier_pucks(n_outliers.value, _x[_out], _y[_out]) if _out.any() else None
    return line_base, outlier_pucks


@app.cell
def _(delta, line_adam_button, line_adam_default, line_base, n_outliers, outlier_pucks, outlier_shift):
    _dragged = widgets.puck_points(outlier_pucks.value) if outlier_pucks is not None else np.empty((0, 2))
    line_x, line_y, line_out = lab.with_dragged_outliers(*line_base, _dragged)
    line_fits = lab.line_fits(line_x, line_y, lab.LINE_LOSSES, delta=delta.value)  # exact solvers: about 1 ms each
    _opened = lab.default_line_data()
    line_adam = None
    if line_adam_button.value:
        with mo.status.progress_bar(
            total=len(lab.LINE_LOSSES), title="fit_line under each loss", remove_on_exit=True
        ) as _bar:
            line_adam = {}
            for _name in lab.LINE_LOSSES:
                line_adam[_name] = fit_line(line_x, line_y, per_example_loss(_name, delta.value))
                _bar.update()
        _adam_source = "Adam's columns: `fit_line` just now, on these points."
    elif (
        line_adam_default is not None
        and delta.value == lab.LINE_DEFAULT["delta"]
        and np.array_equal(line_x, _opened[0])
        and np.array_equal(line_y, _opened[1])
    ):
        line_adam = line_adam_default
        _adam_source = (
            "Adam's columns: this page's `fit_line`, on the points as the page opens "
            "(fitted in advance and shipped with the course)."
        )
    else:
        _adam_source = "Adam's columns: the button runs this page's `fit_line` on these points."
    _xs = np.array([-3.2, 3.2])
    _labels = {name: lab.REGRESSION_LOSSES[name]["label"] for name in lab.LINE_LOSSES}

    def _fits_chart():
        # the points in one layer: grey data, larger red outliers (their colours and sizes are the data's own)
        _points = (
            alt.Chart(
                plot.data(
                    x=line_x,
                    y=line_y,
                    fill=np.where(line_out, plot.color("outlier"), plot.color("data")),
                    size=np.where(line_out, 70, 40),
                )
            )
            .mark_point(filled=True, opacity=1)
            .encode(alt.X("x:Q"), alt.Y("y:Q"), alt.Fill("fill:N", scale=None), alt.Size("size:Q", scale=None))
        )
        return (
            plot.curves(
                _xs,
                {_labels[n]: w * _xs + b for n, (w, b) in line_fits.items()},
                x_title="x",
                y_title="y",
                colors={_labels[n]: n for n in line_fits},
                height=280,
                title="Fitted lines under each loss (true line: slope 1.5, intercept 0.5)",
            )
            + _points
        )

    # drawn once for each set of points and lines (moving a slider back, or δ with no effect on the fits)
    _chart = lab.remembered(
        ("line fits", line_x.tobytes(), line_y.tobytes(), line_out.tobytes(), tuple(line_fits.items())), _fits_chart
    )
    _adam = lambda n: "— | —" if line_adam is None else f"{line_adam[n][0]:.3f} | {line_adam[n][1]:.3f}"  # noqa: E731
    _rows = "\n".join(f"| {_labels[n]} | {w:.3f} | {b:.3f} | {_adam(n)} |" for n, (w, b) in line_fits.items())
    mo.vstack(
        [
            mo.hstack([n_outliers, outlier_shift, delta, line_adam_button], wrap=True),
            mo.hstack([outlier_pucks, ui.chart(_chart)], widths=[1, 1])
            if outlier_pucks is not None
            else ui.chart(_chart),
            mo.md("| loss | slope w | intercept b | Adam: w | Adam: b |\n|---|---|---|---|---|\n" + _rows),
            mo.md(f"<small>Lines and the first two columns: the exact solvers. {_adam_source}</small>"),
        ]
    )
    return line_adam, line_fits, line_out, line_x, line_y


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

    Below, `fit_constant` runs the fitting loop of section 2 (Adam, cosine-annealed learning rate)
    on one parameter, the constant, under each loss, for 2,000 targets. On skewed (Gamma) noise
    the three answers differ, and each matches the statistic its likelihood estimates; on
    symmetric Gaussian noise the mean and the median agree.

    **Change this cell:** in `pinball`, swap the two weights (`(1 - tau) * F.relu(e) + tau *
    F.relu(-e)`). The page's shipped fits no longer match its code, so the table offers to fit
    again; press the button, and at τ = 0.9 the violet constant drops from the 0.9-quantile to the
    0.1-quantile, about 0.5 instead of 3.9: the loss now weighs over-predictions nine times more.
    """)
    return


@app.function
def pinball(pred, target, tau):
    """Pinball (quantile) loss per example, with e = y − ŷ: ρ_τ(e) = τ·e for e ≥ 0, (τ − 1)·e for
    e < 0, that is τ·max(e, 0) + (1 − τ)·max(−e, 0). The best constant under it is the τ-quantile."""
    e = target - pred
    return tau * F.relu(e) + (1 - tau) * F.relu(-e)


@app.function
def fit_constant(y, loss, steps=400, lr=0.1):
    """The best constant prediction ĉ = argmin_c (1/n) Σ_i ℓ(c, y_i), by fit from c = 0."""
    c = engine.tensor(np.zeros(1), requires_grad=True)
    targets = engine.tensor(np.asarray(y, dtype=np.float64))
    fit(lambda: loss(c, targets).mean(), [c], steps, lr)
    return float(c.data[0])


@app.cell
def _():
    lik_noise = mo.ui.radio(
        options={"Gamma(2, 1): skewed": "gamma", "Gaussian N(2, 1): symmetric": "gaussian"},
        value="Gamma(2, 1): skewed",
        label="noise",
        inline=True,
    )
    lik_tau = mo.ui.slider(
        0.05,
        0.95,
        step=0.05,
        value=lab.LIKELIHOOD_DEFAULT["tau"],
        label="pinball quantile τ",
        show_value=True,
        debounce=True,
    )
    lik_train = mo.ui.run_button(label="fit with this page's code")
    return lik_noise, lik_tau, lik_train


@app.cell
def _():
    # the fits of sections 2, 3, 6 and 9 as the course ships them, each if this page's code is the code that made it
    default_fits, default_fits_problem = lab.load_if_fits(
        lab.DEFAULT_FITS_CHECKPOINT,
        fit,
        mse,
        mae,
        pinball,
        per_example_loss,
        fit_constant,
        cross_entropy,
        fit_class_probabilities,
        bce_with_logits,
        focal_loss,
        imbalance_loss,
        train_logistic,
        shipped_default_fits,
    )
    kl_state, kl_problem = lab.load_if_fits(lab.KL_CHECKPOINT, fit, kl_divergence, fit_gaussian, shipped_kl_fits)
    calibration_state, calibration_problem = lab.load_if_fits(
        lab.CALIBRATION_CHECKPOINT, fit, cross_entropy, train_softmax, fit_temperature, shipped_calibration
    )
    noise_state, noise_problem = lab.load_if_fits(
        lab.NOISE_CHECKPOINT, fit, gaussian_nll, noise_model, fit_noise_model, shipped_noise_fits
    )
    # fit_line's lines on the points the outlier lab opens with, shipped when this page's code made them
    line_adam_default = lab.shipped_line_fits(
        fit, fit_line, mse, mae, huber, pseudo_huber, per_example_loss, shipped_line_fits
    )
    return (
        calibration_problem,
        calibration_state,
        default_fits,
        default_fits_problem,
        kl_problem,
        kl_state,
        line_adam_default,
        noise_problem,
        noise_state,
    )


@app.cell
def _(default_fits, lik_noise, lik_train):
    lik_y = lab.skewed_targets(lik_noise.value, n=2000, seed=0)
    # MSE and MAE do not depend on τ: looked up (or fitted) here, so moving τ reads only the pinball loss
    lik_fits_free = []
    for _name in ("mse", "mae"):
        _c = lab.shipped_constant(default_fits, lik_y, _name, 0.5)
        if _c is None and lik_train.value:
            _c = fit_constant(lik_y, per_example_loss(_name))
        lik_fits_free.append(lab.constant_fit(lik_y, _name, 0.5, _c))
    lik_density = lab.target_density(lik_y)  # (bin centres, density): τ does not change it either
    return lik_density, lik_fits_free, lik_y


@app.cell
def _(default_fits, default_fits_problem, lik_density, lik_fits_free, lik_noise, lik_tau, lik_train, lik_y):
    _c = lab.shipped_constant(default_fits, lik_y, "pinball", lik_tau.value)
    if _c is None and lik_train.value:
        with mo.status.progress_bar(total=1, title="fit_constant under the pinball loss", remove_on_exit=True) as _bar:
            _c = fit_constant(lik_y, per_example_loss("pinball", tau=lik_tau.value))
            _bar.update()
    lik_fits = lik_fits_free + [lab.constant_fit(lik_y, "pinball", lik_tau.value, _c)]
    # the three best constants as dashed vertical lines over the density, series of the same chart
    _top = float(lik_density[1].max())
    _rules = {
        f"best constant: {n}": ((f.fitted, f.fitted), (0.0, _top)) for n, f in zip(("MSE", "MAE", "pinball"), lik_fits)
    }
    _chart = plot.curves(
        lik_density[0],
        {"density of the targets": lik_density[1], **_rules},
        x_title="y",
        y_title="density",
        height=220,
        dashed=list(_rules),
        colors={"density of the targets": "data", **dict(zip(_rules, ("mse", "mae", "model")))},
        title="Targets, and the best constant under MSE (blue), MAE (brown), pinball (violet)",
    )
    _names = {
        "mse": "MSE ↔ Gaussian",
        "mae": "MAE ↔ Laplace",
        "pinball": f"pinball τ = {lik_tau.value:g} ↔ asymmetric Laplace",
    }

    def _span(f):
        lo, hi = f.minimisers
        return f"{lo:.4f}" if lo == hi else f"[{lo:.4f}, {hi:.4f}]"

    _rows = "\n".join(
        f"| {_names[f.loss]} | {'—' if np.isnan(f.fitted) else f'{f.fitted:.4f}'} | {f.statistic_name} "
        f"| {f.statistic:.4f} | {_span(f)} |"
        for f in lik_fits
    )
    _source = (
        "Best constants: fitted in advance by this page's `fit_constant` and shipped with the course."
        if default_fits is not None
        else f"Best constants: {'fitted just now by your code' if lik_train.value else '—'}; {default_fits_problem}."
    )
    mo.vstack(
        [
            mo.hstack([lik_noise, lik_tau, lik_train], justify="start"),
            ui.chart(_chart),
            mo.md(
                "| loss ↔ likelihood | best constant (engine) | statistic | its value (NumPy) | every minimiser |\n"
                "|---|---|---|---|---|\n" + _rows
            ),
            mo.md(
                "With an even count of targets (2,000 here), MAE's loss is flat between the two middle values, "
                "and pinball's between two neighbouring values when 2,000·τ is whole: any point there is a "
                "median or a τ-quantile, so the engine's constant and NumPy's interpolated value can differ "
                "in the third decimal while both minimise the loss."
            ),
            mo.md(f"<small>{_source}</small>"),
        ]
    )
    return (lik_fits,)


@app.function
def fit_class_probabilities(labels, n_classes, steps=300, lr=0.1):
    """Constant logits z fitted by cross-entropy to ``labels`` with fit (constant η): softmax(z),
    which is the categorical maximum-likelihood estimate, the class frequencies."""
    z = engine.tensor(np.zeros(n_classes), requires_grad=True)
    batch = engine.tensor(np.zeros((len(labels), n_classes)))  # z broadcast to every example
    fit(lambda: cross_entropy(z + batch, np.asarray(labels)), [z], steps, lr, anneal=False)
    return F.softmax(z.detach(), dim=-1).numpy()


@app.cell
def _(default_fits, lik_train):
    _labels = lab.default_class_labels()
    class_frequencies = np.bincount(_labels, minlength=3) / len(_labels)
    class_fit = lab.shipped_class_probabilities(default_fits, _labels, 3)
    if class_fit is None and lik_train.value:
        class_fit = fit_class_probabilities(_labels, 3)
    _show = lambda v: "(" + ", ".join(f"{x:.3f}" for x in v) + ")"  # noqa: E731
    mo.md(
        f"**Cross-entropy ↔ categorical.** 500 labels drawn with probabilities (0.6, 0.3, 0.1) have "
        f"frequencies **{_show(class_frequencies)}**; constant logits fitted by `cross_entropy` (section 4) "
        + (
            f"give the softmax **{_show(class_fit)}**: the frequencies, the categorical maximum-likelihood estimate."
            if class_fit is not None
            else "are fitted by `fit_class_probabilities` when you press the button above."
        )
    )
    return class_fit, class_frequencies


@app.cell(hide_code=True)
def _():
    noise_growth = mo.ui.slider(
        steps=list(lab.NOISE_GROWTHS), value=lab.NOISE_DEFAULT["growth"], label="noise growth g", show_value=True
    )
    noise_step = mo.ui.slider(
        0,
        lab.NOISE_STEPS,
        step=lab.NOISE_EVERY,
        value=lab.NOISE_DEFAULT["step"],
        label="training step t",
        show_value=True,
    )
    noise_train = mo.ui.run_button(label="fit with this page's fit_noise_model")
    mo.vstack(
        [
            mo.md(r"""
    **Learning the noise, too.** MSE is the Gaussian likelihood with **one** variance for every
    input. When the noise grows with $x$ (*heteroscedastic* noise), let the model predict both a
    mean $\mu(x)$ and a variance $\sigma^2(x)$, as Nix and Weigend (1994) proposed, and train
    it on the Gaussian negative log-likelihood. It predicts the log-variance
    $s(x) = \ln\sigma^2(x)$, which needs no constraint to keep $\sigma^2 > 0$ (as in Kendall and
    Gal, 2017):

    $$
    \ell = -\ln \mathcal N\big(y \mid \mu(x), \sigma^2(x)\big)
    = \tfrac12\Big(\ln\sigma^2(x) + \frac{(y-\mu(x))^2}{\sigma^2(x)}\Big) + \tfrac12\ln 2\pi .
    $$

    A point far from the mean can be explained by moving $\mu$ or by widening $\sigma^2$, and the
    $\ln\sigma^2$ term charges for widening: for one point, $\ell$ is least at
    $\sigma^2 = (y-\mu)^2$. For a fixed $\sigma^2(x)$ the loss in $\mu$ is a squared error
    weighted by $1/\sigma^2(x)$: the quiet points count more.

    Below, 400 points $y = 1.5x + 0.5 + \sigma(x)\,\varepsilon$ with
    $\sigma(x) = 0.15\,e^{g x}$. `noise_model` makes $\mu$ and $s$ lines in $x$, and
    `fit_noise_model` runs the loop of section 2 on `gaussian_nll` from $\theta = 0$
    ($\mu = 0$, $\sigma^2 = 1$ everywhere). Move the training step to watch the band close in
    on the noise. By the last step, on the draw of 400 points shown, the learned $\sigma(x)$ is
    within about 1 % of the true one at every growth $g$; that close is luck of the draw: on four
    other draws (seeds 1 to 4) it is 6 to 15 % off at the worst $x$, since 400 noisy points pin
    the line $\ln\sigma^2(x)$ only so far, least well at the ends of $[0, 2]$. What holds on all five draws: the band
    $\mu \pm 2\sigma$ holds 94 to 98 % of the points on each side (a Gaussian puts 95.4 % within
    $2\sigma$), and the line $\mu(x)$ is the weighted least-squares line with weights
    $1/\sigma^2(x_i)$. The **one-variance** fit (MSE's line, $\sigma^2$ its
    mean squared residual) draws a band of constant width: from $g = 0.5$ on it holds 99 % or
    more of the quiet points and at most 92 % of the noisy ones.
    """),
            mo.hstack([noise_growth, noise_step, noise_train], justify="start"),
        ]
    )
    return noise_growth, noise_step, noise_train


@app.function
def gaussian_nll(mean, log_var, target):
    """Gaussian negative log-likelihood per example, the model predicting a mean μ and a
    log-variance s = ln σ²: ℓ = ½(s + (y − μ)²·e^{−s}), that is −ln N(y | μ, σ²) − ½ ln 2π.
    Its mean is PyTorch's gaussian_nll_loss(μ, y, σ²) (full=False)."""
    return 0.5 * (log_var + (target - mean) ** 2 * (-log_var).exp())


@app.function
def noise_model(theta, x):
    """The mean and the log-variance at x, each a line in x: μ(x) = w·x + b, s(x) = ln σ²(x) = u·x + c,
    with θ = (w, b, u, c)."""
    return theta[0] * x + theta[1], theta[2] * x + theta[3]


@app.function
def fit_noise_model(x, y, steps=lab.NOISE_STEPS, lr=0.2):
    """θ from zeros (μ = 0, σ² = 1) minimising the mean gaussian_nll by fit. Returns θ before each
    step and after the last: steps + 1 rows."""
    theta = engine.tensor(np.zeros(4), requires_grad=True)
    x, y = engine.tensor(np.asarray(x, dtype=np.float64)), engine.tensor(np.asarray(y, dtype=np.float64))
    trail = []

    def loss():
        trail.append(theta.data.copy())
        mean, log_var = noise_model(theta, x)
        return gaussian_nll(mean, log_var, y).mean()

    fit(loss, [theta], steps, lr)
    return np.array(trail + [theta.data.copy()])


@app.function
def shipped_noise_fits():
    """The fits the noise example opens on (the checkpoint losses_noise_fits): fit_noise_model on
    the data of every growth g the slider reaches."""
    return lab.noise_fits_state(fit_noise_model)


@app.cell
def _(noise_growth, noise_problem, noise_state, noise_train):
    noise_x, noise_y = lab.noisy_line(noise_growth.value)
    if noise_train.value:
        with mo.status.progress_bar(total=1, title="fit_noise_model", remove_on_exit=True) as _bar:
            noise_trail = fit_noise_model(noise_x, noise_y)[:: lab.NOISE_EVERY]
            _bar.update()
        noise_source = "Fits: by this page's `fit_noise_model` just now."
    else:
        noise_trail = lab.shipped_noise_trail(noise_state, noise_growth.value)
        noise_source = (
            "Fits: made in advance by this page's `fit_noise_model` and shipped with the course; the button fits again."
            if noise_trail is not None
            else f"Not fitted: {noise_problem}."
        )
    # what the training step does not change: the true noise and the one-variance fit on the grid drawn,
    # and the data as a layer of points
    noise_grid = np.linspace(0.0, 2.0, 41)
    noise_true_sigma = lab.noise_sigma(noise_growth.value, noise_grid)
    noise_constant = lab.constant_noise_fit(noise_x, noise_y)  # (w, b, σ): MSE's line and its one σ
    noise_constant_coverage = lab.band_coverage(
        noise_x, noise_y, noise_constant[0] * noise_x + noise_constant[1], noise_constant[2]
    )
    noise_points = plot.points(noise_x, noise_y, size=12)
    return (
        noise_constant,
        noise_constant_coverage,
        noise_grid,
        noise_points,
        noise_source,
        noise_trail,
        noise_true_sigma,
        noise_x,
        noise_y,
    )


@app.cell
def _(
    noise_constant,
    noise_constant_coverage,
    noise_grid,
    noise_points,
    noise_source,
    noise_step,
    noise_trail,
    noise_true_sigma,
    noise_x,
    noise_y,
):
    _grid, _true = noise_grid, noise_true_sigma
    _w, _b, _s = noise_constant
    _lines = {
        "true μ ± 2σ": [(1.5 * _grid + 0.5) + k * 2 * _true for k in (-1, 1)],
        "one variance: μ ± 2σ": [_w * _grid + _b + k * 2 * _s for k in (-1, 1)],
    }
    _sigmas = {"true σ(x)": _true, "one variance σ": np.full_like(_grid, _s)}
    noise_fit = None
    if noise_trail is not None:
        _theta = engine.tensor(noise_trail[noise_step.value // lab.NOISE_EVERY])
        _mean, _log_var = (v.numpy() for v in noise_model(_theta, engine.tensor(_grid)))
        _at_x = [v.numpy() for v in noise_model(_theta, engine.tensor(np.asarray(noise_x)))]
        _sigma = np.exp(0.5 * _log_var)
        noise_fit = {
            "theta": _theta.numpy(),
            "sigma": _sigma,
            "true_sigma": _true,
            "nll": float(gaussian_nll(*(engine.tensor(v) for v in _at_x), engine.tensor(noise_y)).mean().data),
            "coverage": lab.band_coverage(noise_x, noise_y, _at_x[0], np.exp(0.5 * _at_x[1])),
        }
        _lines["learned μ(x) ± 2σ(x)"] = [_mean - 2 * _sigma, _mean + 2 * _sigma]
        _lines["learned μ(x)"] = [_mean]
        _sigmas["learned σ(x)"] = _sigma
    _names = list(_lines)
    _rows = [(n, k, band) for n in _names for k, band in enumerate(_lines[n])]
    _colors = {
        "true μ ± 2σ": "target",
        "one variance: μ ± 2σ": "mse",
        "learned μ(x) ± 2σ(x)": "model",
        "learned μ(x)": "model",
    }
    _band = (
        alt.Chart(
            plot.data(
                x=np.tile(_grid, len(_rows)),
                y=np.concatenate([r[2] for r in _rows]),
                # each row's series as its index (short, on every row), named in the legend by labelExpr
                series=np.repeat(np.array([_names.index(r[0]) for r in _rows]), len(_grid)).astype(str).astype(object),
                edge=np.repeat(np.array([f"{_names.index(r[0])}{r[1]}" for r in _rows], dtype=object), len(_grid)),
            ),
            width="container",
            height=260,
            title=f"Data and the bands μ ± 2σ (step {noise_step.value})",
        )
        .mark_line()
        .encode(
            alt.X("x:Q", title="x"),
            alt.Y("y:Q", title="y"),
            alt.Detail("edge:N"),
            alt.Color(
                "series:N",
                title="",
                legend=alt.Legend(
                    orient="bottom",
                    labelExpr=" : ".join(f"datum.label == '{i}' ? '{n}'" for i, n in enumerate(_names)) + " : ''",
                ),
                scale=alt.Scale(
                    domain=[str(i) for i in range(len(_names))], range=[plot.color(_colors[n]) for n in _names]
                ),
            ),
            alt.StrokeDash(
                "series:N",
                legend=None,
                scale=alt.Scale(
                    domain=[str(i) for i in range(len(_names))],
                    range=[[5, 4] if "learned" not in n else [1, 0] for n in _names],
                ),
            ),
        )
    )
    _band = _band + noise_points
    _sigma_chart = plot.curves(
        _grid,
        _sigmas,
        x_title="x",
        y_title="noise std σ(x)",
        height=260,
        colors={"true σ(x)": "target", "one variance σ": "mse", "learned σ(x)": "model"},
        dashed=["true σ(x)", "one variance σ"],
        title="The noise, and what each fit makes of it",
    )
    _pct = lambda v: f"{100 * v:.0f} %"  # noqa: E731
    _learned = (
        ""
        if noise_fit is None
        else f"| learned σ(x) | {_pct(noise_fit['coverage'][0])} | {_pct(noise_fit['coverage'][1])} |\n"
    )
    _say = (
        ""
        if noise_fit is None
        else f"At step {noise_step.value}: mean `gaussian_nll` **{noise_fit['nll']:.3f}**; the learned σ(x) is "
        f"within **{100 * np.max(np.abs(noise_fit['sigma'] / _true - 1)):.0f} %** of the true one over x ∈ [0, 2]."
    )
    mo.vstack(
        [
            ui.chart_row(_band, _sigma_chart),
            mo.md(
                f"{_say}\n\n| points inside μ ± 2σ | x < 1 (quiet) | x ≥ 1 (noisy) |\n|---|---|---|\n{_learned}"
                f"| one variance | {_pct(noise_constant_coverage[0])} | {_pct(noise_constant_coverage[1])} |"
            ),
            mo.md(f"<small>{noise_source}</small>"),
        ]
    )
    return (noise_fit,)


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
    dots autograd's $\partial L/\partial z$ through `cross_entropy`, written out here with the
    log-sum-exp of section 5, and `bce_with_logits`, its two-class form on one logit.
    """)
    return


@app.function
def cross_entropy(logits, target, label_smoothing=0.0):
    """Cross-entropy from logits, mean over the batch: L = −Σ_k q_k ln softmax(z)_k with
    q = (1 − ε)·onehot(y) + ε/K and ln softmax(z)_k = z_k − m − ln Σ_j e^{z_j − m}, m = max_j z_j.
    Equals F.cross_entropy(logits, target, label_smoothing=ε)."""
    n, k = logits.shape
    q = np.full((n, k), label_smoothing / k)
    q[np.arange(n), np.asarray(target)] += 1 - label_smoothing
    shifted = logits - logits.max(dim=-1, keepdim=True).values.detach()
    log_p = shifted - shifted.exp().sum(dim=-1, keepdim=True).log()
    return -(log_p * q).sum(dim=-1).mean()


@app.function
def bce_with_logits(logits, target, pos_weight=1.0):
    """Binary cross-entropy per example from a logit z, p̂ = σ(z), with the positives weighted by
    w: ℓ = −[w·y ln σ(z) + (1 − y) ln(1 − σ(z))], where ln(1 − σ(z)) = ln σ(−z).
    Its mean is F.binary_cross_entropy_with_logits(logits, target, pos_weight=w)."""
    return -(pos_weight * target * F.logsigmoid(logits) + (1 - target) * F.logsigmoid(-logits))


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
        ce_report = lab.cross_entropy_report(cross_entropy, _z, int(ce_target.value), smoothing.value)
    except ValueError as _err:
        _out = ui.problem(_err, "The cross-entropy")
    else:
        _classes = [f"class {k}" for k in range(len(_z))]
        _probs = plot.grouped_bars(
            _classes,
            {"predicted p": ce_report.probs, "target q": ce_report.target},
            y_title="probability",
            y_domain=(0, 1),
            colors={"predicted p": "model", "target q": "target"},
            title="Prediction and (smoothed) target",
        )
        _grad = plot.bars(
            _classes,
            ce_report.grad_formula,
            bar_label="p − q (formula)",
            color_name="derivative",
            dots={"autograd ∂L/∂z": ce_report.grad_autograd},
            y_title="∂L/∂z_k",
            title="Gradient with respect to the logits",
        )
        _out = mo.vstack(
            [
                ui.chart_row(_probs, _grad),
                mo.md(
                    f"Cross-entropy **L = {ce_report.loss:.4f}** (`cross_entropy(z, y, "
                    f"label_smoothing={smoothing.value:g})`); largest |autograd − (p − q)| = "
                    f"**{np.abs(ce_report.grad_autograd - ce_report.grad_formula).max():.1e}**. "
                    "With ε > 0 the loss cannot reach 0: the best the model can do is p = q."
                ),
            ]
        )
    mo.vstack([ce_logits, mo.hstack([ce_target, smoothing]), _out])
    return (ce_report,)


@app.cell(hide_code=True)
def _():
    calib_noise_dims = mo.ui.slider(
        steps=list(lab.CALIBRATION_NOISE_DIMS),
        value=lab.CALIBRATION_DEFAULT["noise_dims"],
        label="features without signal",
        show_value=True,
    )
    calib_bins = mo.ui.slider(5, 20, step=1, value=lab.CALIBRATION_DEFAULT["n_bins"], label="bins M", show_value=True)
    calib_train = mo.ui.run_button(label="train with this page's code")
    mo.vstack(
        [
            mo.md(r"""
    **Are the probabilities right? Calibration.** A classifier is *calibrated* when, of the
    predictions it makes with confidence 0.8, 80 % are right. Guo et al. (2017) found modern
    networks over-confident, and measured it with a **reliability diagram** and the **expected
    calibration error**: sort the $n$ test predictions by their confidence
    $\hat p_i = \max_k p_{ik}$ into $M$ equal bins $B_1, \dots, B_M$ of $[0, 1]$ and compare, in
    each, the accuracy with the mean confidence,

    $$
    \text{ECE} = \sum_{m=1}^{M} \frac{|B_m|}{n}\,\big|\operatorname{acc}(B_m) - \operatorname{conf}(B_m)\big| .
    $$

    Their remedy is **temperature scaling**: divide every logit by one number $T > 0$,
    $p = \operatorname{softmax}(z / T)$, with $T$ fitted by cross-entropy on **validation** data
    (the training data were fitted already). $T > 1$ softens over-confident predictions; the
    arg-max, so the accuracy, does not change.

    Below, a softmax regression $z = x W + b$ is trained (`train_softmax`, the loop of section 2)
    on 100 points of three classes told apart by two features, plus features that carry no
    signal. Fitting the noise, the model grows over-confident (Sur and Candès, 2019, describe
    this for logistic regression when features are many for the data): from 10 such features
    on, its test ECE is above 0.08, and the $T$ fitted on 500 validation points is above 1.5 and
    brings the ECE down, in each of 5 random draws of the data. With no such feature the model
    is close to calibrated already.
    """),
            mo.hstack([calib_noise_dims, calib_bins, calib_train], justify="start"),
        ]
    )
    return calib_bins, calib_noise_dims, calib_train


@app.function
def train_softmax(x, y, steps=500, lr=0.1):
    """Softmax regression z = x W + b from zeros, minimising cross_entropy(z, y) by fit. Returns (W, b)."""
    weights = engine.tensor(np.zeros((x.shape[1], int(np.max(y)) + 1)), requires_grad=True)
    bias = engine.tensor(np.zeros(int(np.max(y)) + 1), requires_grad=True)
    inputs = engine.tensor(np.asarray(x, dtype=np.float64))
    fit(lambda: cross_entropy(inputs @ weights + bias, y), [weights, bias], steps, lr)
    return weights.data.copy(), bias.data.copy()


@app.function
def fit_temperature(logits, labels, steps=300, lr=0.3):
    """Temperature scaling (Guo et al., 2017): T = e^τ minimising cross_entropy(z / T, y) on held-out
    logits z, by fit from T = 1."""
    tau = engine.tensor(np.zeros(1), requires_grad=True)
    z = engine.tensor(np.asarray(logits, dtype=np.float64))
    fit(lambda: cross_entropy(z / tau.exp(), labels), [tau], steps, lr)
    return float(np.exp(tau.data[0]))


@app.function
def calibration_bins(probs, labels, n_bins=10):
    """The reliability diagram's bins: confidence p̂_i = max_k p_ik in M equal bins of [0, 1]
    (p̂ = 1 in the last); per bin its count |B_m|, mean confidence conf(B_m) and accuracy acc(B_m)
    (NaN for an empty bin)."""
    confidence = probs.max(axis=1)
    correct = probs.argmax(axis=1) == labels
    which = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    count = np.bincount(which, minlength=n_bins)
    with np.errstate(invalid="ignore"):
        conf = np.bincount(which, weights=confidence, minlength=n_bins) / count
        acc = np.bincount(which, weights=correct, minlength=n_bins) / count
    return count, conf, acc


@app.function
def expected_calibration_error(probs, labels, n_bins=10):
    """ECE = Σ_m |B_m|/n · |acc(B_m) − conf(B_m)| over the bins of calibration_bins."""
    count, conf, acc = calibration_bins(probs, labels, n_bins)
    filled = count > 0
    return float(np.sum(count[filled] / len(labels) * np.abs(acc[filled] - conf[filled])))


@app.function
def shipped_calibration():
    """The models the calibration example opens on (the checkpoint losses_calibration): train_softmax
    and fit_temperature at every number of features without signal the slider reaches."""
    return lab.calibration_state(train_softmax, fit_temperature)


@app.cell
def _(calib_noise_dims, calib_train, calibration_problem, calibration_state):
    calib_data = lab.calibration_data(calib_noise_dims.value)
    calib_model = lab.shipped_calibration(calibration_state, calib_noise_dims.value)
    calib_source = (
        "Model and T: trained in advance by this page's `train_softmax` and `fit_temperature` "
        "and shipped with the course; the button trains again."
    )
    if calib_train.value:
        with mo.status.progress_bar(total=2, title="train_softmax, then fit_temperature", remove_on_exit=True) as _bar:
            _w, _b = train_softmax(*calib_data["train"])
            _bar.update()
            _x_val, _y_val = calib_data["validation"]
            calib_model = (_w, _b, fit_temperature(_x_val @ _w + _b, _y_val))
            _bar.update()
        calib_source = "Model and T: trained just now by this page's code."
    elif calib_model is None:
        calib_source = f"Not trained: {calibration_problem}."
    return calib_data, calib_model, calib_source


@app.cell
def _(calib_bins, calib_data, calib_model, calib_source):
    calib_report = None
    if calib_model is None:
        _out = mo.md(f"<small>{calib_source}</small>")
    else:
        _w, _b, _t = calib_model
        _x, _y = calib_data["test"]
        _z = _x @ _w + _b
        _rows = {}
        for _name, _temp in (("before (T = 1)", 1.0), (f"after (T = {_t:.2f})", _t)):
            _p = lab.softmax_probabilities(_z, _temp)
            _count, _conf, _acc = calibration_bins(_p, _y, calib_bins.value)
            _rows[_name] = {
                "ece": expected_calibration_error(_p, _y, calib_bins.value),
                "accuracy": float(np.mean(_p.argmax(axis=1) == _y)),
                "nll": float(-np.mean(np.log(_p[np.arange(len(_y)), _y]))),
                "conf": _conf,
                "acc": _acc,
                "count": _count,
            }
        calib_report = {"T": _t, **{("before" if k.startswith("before") else "after"): v for k, v in _rows.items()}}
        _diagonal = np.array([0.0, 1.0])
        _chart = plot.curves(
            _diagonal,
            {
                "perfect calibration": _diagonal,
                **{f"{k}: accuracy per bin": (v["conf"], v["acc"]) for k, v in _rows.items()},
            },
            colors={
                "perfect calibration": "reference",
                **dict(zip((f"{k}: accuracy per bin" for k in _rows), ("error", "model"))),
            },
            dashed=["perfect calibration"],
            x_title="mean confidence conf(B_m)",
            y_title="accuracy acc(B_m)",
            y_domain=(0, 1),
            height=260,
            title=f"Reliability diagram, {len(_y):,} test points, M = {calib_bins.value}",
        )
        _table = "\n".join(
            f"| {k} | {v['ece']:.3f} | {v['nll']:.3f} | {100 * v['accuracy']:.1f} % |" for k, v in _rows.items()
        )
        _out = mo.vstack(
            [
                ui.chart(_chart),
                mo.md("| test data | ECE | cross-entropy | accuracy |\n|---|---|---|---|\n" + _table),
                mo.md(f"<small>{calib_source}</small>"),
            ]
        )
    _out
    return (calib_report,)


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
    $\ln(1 + e^{-s} + e^{-2s})$, about $e^{-s}$. The red curve is `naive_cross_entropy`, the
    formula as written; the other is the library's fused `F.cross_entropy`.

    **Change this cell:** in `naive_cross_entropy`, subtract each row's largest logit first
    (`z = z - z.max(axis=-1, keepdims=True)` as its first line). With target class 0 the NaN is
    gone: the red curve now follows the fused one all the way to $s = 1000$. With class 2 it
    still breaks at $s \approx 52$ in float32, because the ratio $e^{-2s}/\dots$ still underflows
    to 0: only taking the logarithm before dividing, $-(z_y - m) + \ln\sum_j e^{z_j - m}$, fixes both.
    """)
    return


@app.function
def naive_cross_entropy(z, y):
    """Cross-entropy as written, −ln(e^{z_y} / Σ_j e^{z_j}), in NumPy and in z's own precision
    (one row of logits per example, y the target classes)."""
    e = np.exp(z)
    return -np.log(e[np.arange(len(z)), y] / e.sum(axis=-1))


@app.cell
def _():
    logit_scale = mo.ui.slider(
        steps=[1, 2, 5, 10, 20, 30, 50, 80, 100, 200, 500, 1000], value=50, label="logit scale s", show_value=True
    )
    precision = mo.ui.radio(options=["float32", "float64"], value="float32", label="precision", inline=True)
    naive_target = mo.ui.radio(
        options={"class 0 (the most likely)": 0, "class 1": 1, "class 2 (the least likely)": 2},
        value="class 2 (the least likely)",
        label="target class y",
        inline=True,
    )
    # shown here, above the chart: the cell they re-run sends its chart, not the controls again
    mo.vstack([mo.hstack([logit_scale, precision]), naive_target])
    return logit_scale, naive_target, precision


@app.cell
def _(logit_scale, naive_target, precision):
    # the curves and where the naive formula breaks depend on precision and target only (computed once
    # for each): moving s just moves the rule
    naive_scales, naive_curve, fused_curve, naive_break = lab.naive_curves(
        naive_cross_entropy, precision.value, naive_target.value
    )
    naive_breaks_at = naive_break.scale
    naive_now, fused_now = (
        float(v[0])
        for v in lab.naive_vs_fused(naive_cross_entropy, [logit_scale.value], precision.value, naive_target.value)
    )
    _fused64 = float(lab.naive_vs_fused(naive_cross_entropy, [logit_scale.value], "float64", naive_target.value)[1][0])
    # the scale s as a dashed vertical line across the curves, a series of the same chart
    _drawn = np.concatenate([fused_curve, naive_curve])
    _drawn = _drawn[np.isfinite(_drawn) & (_drawn > 0)]
    _chart = plot.curves(
        naive_scales,
        {
            "fused cross_entropy": fused_curve,
            "naive log(softmax)": naive_curve,
            "logit scale s": ((logit_scale.value,) * 2, (_drawn.min(), _drawn.max())),
        },
        x_title="logit scale s",
        y_title="loss",
        log_y=True,
        log_x=True,
        colors={"naive log(softmax)": "error", "fused cross_entropy": "target", "logit scale s": "reference"},
        dashed=["naive log(softmax)", "logit scale s"],
        title=f"Cross-entropy in {precision.value}",
        height=240,
    )
    _shown = "nan" if np.isnan(naive_now) else ("inf" if np.isinf(naive_now) else f"{naive_now:.4g}")
    _how = {"NaN": "**NaN** (exp overflowed: inf/inf)", "+∞": "**+∞** (the probability underflowed to 0)"}
    _where = (
        f"In {precision.value}, with target class {naive_target.value}, the naive formula first gives "
        f"{_how[naive_break.kind]} at s ≈ **{naive_break.scale:.1f}**; there the red curve stops."
        if naive_break.scale is not None
        else f"In {precision.value} the naive formula stays finite up to s = 1000."
    )
    mo.vstack(
        [
            ui.chart(plot.compact_chart(_chart)),
            mo.md(
                f"At s = {logit_scale.value:g}: naive **{_shown}**, fused **{fused_now:.4g}** "
                f"(fused in float64: {_fused64:.4g}). {_where}"
            ),
        ]
    )
    return fused_curve, fused_now, naive_break, naive_breaks_at, naive_curve, naive_now, naive_scales


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

    `kl_divergence` is the divergence written out; `fit_gaussian` fits $q$ with the loop of
    section 2 (a constant learning rate here), one direction or the other.

    **Change this cell:** in `fit_gaussian`, make the forward fit minimise
    `kl_divergence(log_q, log_p)` too (swap the arguments of the first call). Both dashed curves
    then sit on one bump: mode-covering is a property of the direction, not of the fitting. The
    shipped fits are no longer what the page's code makes, so the page says so and its button
    fits with your version.
    """)
    return


@app.function
def kl_divergence(log_p, log_q):
    """KL(p‖q) = Σ_x p(x) (ln p(x) − ln q(x)) ≥ 0, from log-probabilities on a grid.
    Equals F.kl_div(log_q, p, reduction="sum")."""
    return (log_p.exp() * (log_p - log_q)).sum()


@app.function
def fit_gaussian(p, grid, direction, mu0, sigma0, steps=300, lr=0.05):
    """q = N(μ, σ²) on the grid (a softmax over −½((x − μ)/σ)²) fitted to p by fit on KL(p‖q)
    ('forward') or KL(q‖p) ('reverse'), from (μ₀, σ₀), with σ = e^{log σ}. Returns (μ, σ, losses)."""
    mu = engine.tensor(np.array(mu0, dtype=np.float64), requires_grad=True)
    log_sigma = engine.tensor(np.array(np.log(sigma0), dtype=np.float64), requires_grad=True)
    x = engine.tensor(np.asarray(grid, dtype=np.float64))
    log_p = engine.tensor(np.log(np.maximum(p, 1e-300)))

    def loss():
        log_q = F.log_softmax(-0.5 * ((x - mu) / log_sigma.exp()) ** 2, dim=-1)
        return kl_divergence(log_p, log_q) if direction == "forward" else kl_divergence(log_q, log_p)

    losses = fit(loss, [mu, log_sigma], steps, lr, anneal=False)
    return float(mu.data), float(np.exp(log_sigma.data)), losses


@app.function
def shipped_kl_fits():
    """The fits the page opens on (the checkpoint losses_kl_fits): q fitted each way to the default
    p from the default start, by this page's fit_gaussian."""
    d = lab.KL_DEFAULT
    p = lab.bimodal_on_grid(lab.KL_GRID, separation=d["separation"])
    return {
        direction: dict(
            zip(
                ("mu", "sigma", "losses"),
                fit_gaussian(p, lab.KL_GRID, direction, d["mu0"], d["sigma0"], steps=lab.KL_STEPS),
            )
        )
        for direction in ("forward", "reverse")
    }


@app.cell
def _():
    kl_separation = mo.ui.slider(
        0.0, 8.0, step=0.5, value=lab.KL_DEFAULT["separation"], label="bump separation", show_value=True
    )
    q_mu = mo.ui.slider(-4.0, 4.0, step=0.1, value=lab.KL_DEFAULT["mu0"], label="q: mean μ", show_value=True)
    q_sigma = mo.ui.slider(0.2, 4.0, step=0.1, value=lab.KL_DEFAULT["sigma0"], label="q: std σ", show_value=True)
    kl_fit_button = mo.ui.run_button(label="fit q both ways")
    return kl_fit_button, kl_separation, q_mu, q_sigma


@app.cell
def _(kl_fit_button, kl_problem, kl_separation, kl_state, q_mu, q_sigma):
    kl_grid = lab.KL_GRID
    kl_p = lab.bimodal_on_grid(kl_grid, separation=kl_separation.value)
    kl_q = lab.gaussian_on_grid(kl_grid, q_mu.value, q_sigma.value)
    kl_forward, kl_reverse = lab.kl_both_ways(kl_divergence, kl_p, kl_q)
    _settings = {"separation": kl_separation.value, "mu0": q_mu.value, "sigma0": q_sigma.value}
    _default = lab.is_default_kl(_settings)
    kl_fits_shipped = not kl_fit_button.value and _default and kl_state is not None
    kl_fits = {}
    if kl_fit_button.value:
        with mo.status.progress_bar(total=2, title="fit_gaussian both ways", remove_on_exit=True) as _bar:
            for _direction in ("forward", "reverse"):
                kl_fits[_direction] = fit_gaussian(
                    kl_p, kl_grid, _direction, q_mu.value, q_sigma.value, steps=lab.KL_STEPS
                )
                _bar.update()
    elif kl_fits_shipped:  # the default fits, made in advance by this page's code
        kl_fits = lab.kl_fits(kl_state)
    _curves = {"p (target)": kl_p, "q (yours)": kl_q}
    _colors = {"p (target)": "data", "q (yours)": "model"}
    for _direction, (_mu, _sig, _) in kl_fits.items():
        _name = f"q fitted by {'KL(p‖q)' if _direction == 'forward' else 'KL(q‖p)'}"
        _curves[_name] = lab.gaussian_on_grid(kl_grid, _mu, _sig)
        _colors[_name] = "kl_" + _direction
    _chart = plot.curves(  # every second grid point drawn (the KLs sum over all 281), to 10⁻⁵: less to send
        kl_grid[::2],
        {_n: np.round(_c[::2], 5) for _n, _c in _curves.items()},
        x_title="x",
        y_title="probability",
        colors=_colors,
        height=240,
        dashed=[n for n in _curves if "fitted" in n],
        title="p and q on a grid of 281 points (every second one drawn)",
    )
    _fit_text = "".join(
        f" · {'KL(p‖q)' if d == 'forward' else 'KL(q‖p)'} fit: μ = {m:.2f}, σ = {s:.2f}, "
        f"final {'KL(p‖q)' if d == 'forward' else 'KL(q‖p)'} = {h[-1]:.3f}"
        for d, (m, s, h) in kl_fits.items()
    )
    _source = (
        "Fits: made in advance by this page's `fit_gaussian` from the default start and shipped with the "
        "course; the button refits from your settings."
        if kl_fits_shipped
        else "Fits: by your code, from your settings."
        if kl_fits
        else f"Not fitted: {kl_problem}."
        if _default and kl_state is None
        else "Not fitted from these settings yet: the button fits q both ways from here."
    )
    mo.vstack(
        [
            mo.hstack([kl_separation, q_mu, q_sigma, kl_fit_button], wrap=True),
            ui.chart(plot.compact_chart(_chart)),
            mo.md(f"KL(p‖q) = **{kl_forward:.4f}** · KL(q‖p) = **{kl_reverse:.4f}**{_fit_text}"),
            mo.md(f"<small>{_source}</small>"),
        ]
    )
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
    a logistic regression starts from a wrong weight $w_0$ and trains with each loss: the loop
    below, plain gradient descent on $z = wx + b$, with `bce_with_logits` or `mse` on $\sigma(z)$.
    """)
    return


@app.function
def train_classifier(x, y, loss, w0, lr, steps=100):
    """Logistic regression p̂ = σ(w·x + b) from (w₀, 0) by full-batch gradient descent (SGD):
    z = w·x + b, L = loss(z, y), θ ← θ − η ∇L, recording L, the accuracy and w at every step."""
    w = engine.tensor(np.array(w0, dtype=np.float64), requires_grad=True)
    b = engine.tensor(np.array(0.0), requires_grad=True)
    optimizer = SGD([w, b], lr=lr)
    x, labels = engine.tensor(np.asarray(x, dtype=np.float64)), np.asarray(y, dtype=np.float64)
    history = {"loss": [], "accuracy": [], "w": []}
    for step in range(steps + 1):
        z = w * x + b
        value = loss(z, engine.tensor(labels))
        history["loss"].append(float(value.data))
        history["accuracy"].append(float(np.mean((z.data > 0) == (labels == 1))))
        history["w"].append(float(w.data))
        if step == steps:
            break
        optimizer.zero_grad()
        value.backward()
        optimizer.step()
    return lab.ClassifierRun(*(np.array(history[k]) for k in ("loss", "accuracy", "w")))


@app.cell
def _():
    # each change trains two classifiers 100 steps: on release, not at every step of a drag
    w0 = mo.ui.slider(-6.0, 6.0, step=0.5, value=-4.0, label="initial weight w₀", show_value=True, debounce=True)
    clf_lr = mo.ui.slider(
        steps=[0.01, 0.03, 0.1, 0.3, 1.0, 3.0], value=0.3, label="learning rate η", show_value=True, debounce=True
    )
    return clf_lr, w0


@app.cell
def _():
    def _draw():
        _grads = lab.margin_gradients(bce_with_logits, mse, np.linspace(-10, 10, 201))
        return _grads, plot.curves(
            _grads.margins,
            {"CE formula": _grads.ce_formula, "MSE formula": _grads.mse_formula},
            dots={"CE autograd": _grads.ce_autograd, "MSE autograd": _grads.mse_autograd},
            n_dots=21,
            colors={"CE formula": "cross_entropy", "MSE formula": "mse", "MSE autograd": "#475569"},
            x_title="logit z of a positive example (margin)",
            y_title="|∂L/∂z|",
            height=240,
            title="Gradient against margin",
        )

    # no control moves this chart: drawn once for the code of this cell and of its lesson cells, and kept
    margin_grads, margin_chart = lab.remembered(lab.code_key(_draw, bce_with_logits, mse), _draw)
    margin_view = mo.vstack([ui.chart(margin_chart)])  # built once: the training cell shows this same view
    return margin_chart, margin_grads, margin_view


@app.cell
def _(clf_lr, margin_view, w0):
    def _train():
        _x, _y = lab.sigmoid_classifier_data(100, seed=0)
        _losses = {
            "cross_entropy": lambda z, y: bce_with_logits(z, y).mean(),
            "mse": lambda z, y: mse(F.sigmoid(z), y).mean(),
        }
        return {
            name: train_classifier(_x, _y, _loss, w0=w0.value, lr=clf_lr.value, steps=100)
            for name, _loss in _losses.items()
        }

    # both runs for one (w₀, η): trained once for the code of this cell and of its lesson cells, and kept
    clf_runs = lab.remembered(
        lab.code_key(_train, w0.value, clf_lr.value, train_classifier, bce_with_logits, mse), _train
    )
    # The training accuracy of both runs, step by step: the chart this section is about.
    _names = ["cross-entropy", "MSE on σ(z)"]
    _steps = np.arange(1, len(clf_runs["cross_entropy"].accuracy) + 1)
    _curves = plot.data(
        step=np.tile(_steps, 2),
        name=np.repeat(np.array(_names, dtype=object), len(_steps)),
        accuracy=np.concatenate([clf_runs["cross_entropy"].accuracy, clf_runs["mse"].accuracy]),
    )
    _acc = (
        alt.Chart(_curves, width="container", height=240, title=f"Training from w₀ = {w0.value:g}")
        .mark_line()
        .encode(
            alt.X("step:Q", title="step"),
            alt.Y("accuracy:Q", title="training accuracy"),
            alt.Color(
                "name:N",
                title="",
                legend=alt.Legend(orient="bottom"),
                scale=alt.Scale(domain=_names, range=[plot.color("cross_entropy"), plot.color("mse")]),
            ),
            alt.Tooltip("accuracy:Q", format=".2f"),
        )
    )
    _say = " · ".join(
        f"{'cross-entropy' if n == 'cross_entropy' else 'MSE'}: "
        + (
            f"95 % accuracy after **{r.steps_to(0.95)}** steps"
            if r.steps_to(0.95) is not None
            else "**not** at 95 % after 100 steps"
        )
        for n, r in clf_runs.items()
    )
    mo.vstack([mo.hstack([w0, clf_lr]), mo.hstack([margin_view, ui.chart(_acc)], widths=[1, 1]), mo.md(_say)])
    return (clf_runs,)


@app.cell(hide_code=True)
def _():
    point_margin = mo.ui.slider(-3.0, 6.0, step=0.25, value=4.0, label="margin m of one point", show_value=True)
    mo.vstack(
        [
            mo.md(r"""
    **Hinge beside logistic.** Write the label as $t = 2y - 1 \in \{-1, +1\}$ and the
    **margin** of a point as $m = t\,z$: positive on the right side of the boundary, large far
    on it. Cross-entropy on one logit is the **logistic loss** $\ln(1 + e^{-m})$; the
    support-vector machine (Cortes and Vapnik, 1995) minimises the **hinge loss**
    $\max(0,\, 1 - m)$. Both lie above the 0-1 loss $[m \le 0]$ that counts mistakes (the
    logistic one measured in bits, divided by $\ln 2$), and both are convex, so gradient descent
    can minimise them where it cannot minimise the count. They differ on the points already
    classified right:

    $$
    \frac{\partial}{\partial m}\max(0, 1 - m) = \begin{cases}-1 & m < 1\\ 0 & m > 1\end{cases},
    \qquad \frac{\partial}{\partial m}\ln(1 + e^{-m}) = -\frac{1}{1 + e^{m}} .
    $$

    A point beyond the margin $m = 1$ gets **exactly zero** gradient from the hinge: it no longer
    pulls on the boundary, and only the points inside the margin (the *support vectors*) shape
    it. The logistic gradient shrinks like $e^{-m}$ but is never zero, so every point keeps
    pulling a little. Below, `hinge` is the loss written out; the dots are autograd's
    $\partial\ell/\partial m$ through it and through `bce_with_logits` (a positive example, so
    $m = z$).
    """),
            point_margin,
        ]
    )
    return (point_margin,)


@app.function
def hinge(logits, target):
    """Hinge loss per example (the SVM's): ℓ = max(0, 1 − t·z) with t = 2y − 1 ∈ {−1, +1}.
    Equals 2·F.multi_margin_loss of PyTorch on the two logits (0, z)."""
    return F.relu(1 - (2 * target - 1) * logits)


@app.cell
def _():
    def _draw():
        _losses = lab.margin_losses(hinge, bce_with_logits, np.linspace(-3, 6, 46))  # steps of 0.2: m = 0 and 1 on it
        _names = {
            "hinge max(0, 1 − m)": "#4d7c0f",
            "logistic ln(1 + e^{−m}) / ln 2": plot.color("cross_entropy"),
            "0-1 loss [m ≤ 0]": plot.color("reference"),
        }
        _curves = dict(zip(_names, (_losses.hinge, _losses.logistic / np.log(2), _losses.zero_one)))
        _grad_chart = plot.curves(
            _losses.margins,
            {"hinge formula": _losses.hinge_formula, "logistic formula": _losses.logistic_formula},
            dots={"hinge autograd": _losses.hinge_autograd, "logistic autograd": _losses.logistic_autograd},
            n_dots=19,
            colors={"hinge formula": "#4d7c0f", "logistic formula": "cross_entropy"},
            x_title="margin m = t·z",
            y_title="∂ℓ/∂m",
            height=240,
            title="What each loss pushes with",
        )
        return _losses, _curves, _names, plot.compact_chart(_grad_chart)

    # no control moves these curves (the margin slider only moves a line over them): made once for the
    # code of this cell and of its lesson cells, and kept
    margin_losses, margin_loss_curves, margin_loss_colors, margin_grad_chart = lab.remembered(
        lab.code_key(_draw, hinge, bce_with_logits), _draw
    )
    return margin_grad_chart, margin_loss_colors, margin_loss_curves, margin_losses


@app.cell
def _(margin_grad_chart, margin_loss_colors, margin_loss_curves, margin_losses, point_margin):
    point_losses = lab.margin_losses(hinge, bce_with_logits, [point_margin.value])
    _m = point_margin.value
    # the point's margin: a dashed vertical line, on the left a series of the losses' chart itself (one
    # layer: a layered chart costs Altair a copy of every layer at each move)
    _loss_chart = plot.curves(
        margin_losses.margins,
        {**margin_loss_curves, "margin m of the point": ((_m, _m), (0, 4.5))},
        colors={**margin_loss_colors, "margin m of the point": "reference"},
        dashed=["0-1 loss [m ≤ 0]", "margin m of the point"],
        x_title="margin m = t·z",
        y_title="loss ℓ(m)",
        y_domain=(0, 4.5),
        height=240,
        title="Two bounds on the 0-1 loss",
    )
    mo.vstack(
        [
            ui.chart_row(_loss_chart, margin_grad_chart + plot.rule(_m, orient="x")),
            # + 0.0 shows autograd's −0.0 (the hinge's −1 times a zero slope) as 0
            mo.md(
                f"At m = {point_margin.value:g}: hinge ℓ = **{point_losses.hinge[0]:.4f}**, "
                f"∂ℓ/∂m = **{point_losses.hinge_autograd[0] + 0.0:.4f}** · logistic ℓ = "
                f"**{point_losses.logistic[0]:.4f}**, ∂ℓ/∂m = **{point_losses.logistic_autograd[0]:.4f}** (autograd)."
            ),
        ]
    )
    return (point_losses,)


@app.cell(hide_code=True)
def _():
    n_classes = mo.ui.slider(steps=[2, 3, 5, 10, 20, 50, 100, 1000], value=10, label="classes K", show_value=True)
    init_logit_scale = mo.ui.slider(
        steps=[0.001, 0.01, 0.1, 0.3, 1.0, 3.0, 10.0], value=0.01, label="logit scale s", show_value=True
    )
    mo.md(r"""
    ## 8. The initial-loss check

    Before training, a classifier's logits should be small, so every class gets about $1/K$ and
    the cross-entropy is about $-\ln(1/K) = \ln K$: 0.693 for two classes, 2.303 for ten. If the
    first loss you print is far above $\ln K$, the initialisation is making confident guesses (or
    the labels and logits do not match); if it is NaN, look for a log of zero. Random logits
    $z \sim \mathcal N(0, s^2)$ against random labels:
    """)
    return init_logit_scale, n_classes


@app.cell
def _(init_logit_scale, n_classes):
    initial, ln_k = lab.initial_loss(n_classes.value, init_logit_scale.value, n_samples=512, seed=0, loss=cross_entropy)
    _ratio = initial / ln_k
    _kind = "success" if abs(_ratio - 1) < 0.05 else "warn"
    mo.vstack(
        [
            mo.hstack([n_classes, init_logit_scale]),
            mo.callout(
                mo.md(
                    f"Initial cross-entropy **{initial:.4f}** against ln K = **{ln_k:.4f}** "
                    f"(ratio {_ratio:.2f}). "
                    + ("Healthy start." if _kind == "success" else "Too far from ln K: shrink the initial logits.")
                ),
                kind=_kind,
            ),
        ]
    )
    return initial, ln_k


@app.cell(hide_code=True)
def _():
    ml_logits = mo.ui.text(value="2.0, -1.0, 1.5, -3.0", label="logits z (one per label)", full_width=True)
    ml_labels = mo.ui.multiselect(
        options={f"label {k}": k for k in range(6)}, value=["label 0", "label 2"], label="true labels"
    )
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
        _chart = plot.grouped_bars(
            _names,
            {"sigmoid σ(z_k) (multi-label)": ml_report.sigmoid_probs, "softmax p_k": ml_report.softmax_probs},
            y_title="probability",
            y_domain=(0, 1),
            colors={"sigmoid σ(z_k) (multi-label)": "model", "softmax p_k": "cross_entropy"},
            title="The same logits, read two ways",
        )
        _out = mo.vstack(
            [
                ui.chart(_chart),
                mo.md(
                    f"Sigmoids sum to **{ml_report.sigmoid_probs.sum():.3f}**, the softmax to "
                    f"**{ml_report.softmax_probs.sum():.3f}**. Multi-label BCE **{ml_report.bce:.4f}** (it can reach 0) · "
                    f"softmax cross-entropy **{ml_report.softmax_ce:.4f}**, never below "
                    f"ln {len(ml_labels.value)} = **{ml_report.softmax_floor:.4f}**."
                ),
            ]
        )
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

    At a minority share of 1 %, plain BCE reaches 99 % accuracy by never predicting the rare
    class: its recall is 0, and accuracy says nothing. Weighting the positives moves the boundary
    toward the common class: recall jumps (above 80 % here), paid for in precision. On this
    linear problem the focal loss changes recall far less than the class weight does; it was
    designed for detectors facing a flood of easy negatives, and it is not a class weight.
    """)
    return


@app.function
def focal_loss(logits, target, gamma=2.0):
    """Focal loss per example (Lin et al., 2017): ℓ = −(1 − p_t)^γ ln p_t, with p_t = σ(z) for a
    positive and 1 − σ(z) = σ(−z) for a negative; γ = 0 is plain BCE."""
    log_pt = F.logsigmoid(logits * (2 * target - 1))
    return -((1 - log_pt.exp()) ** gamma) * log_pt


@app.function
def imbalance_loss(method, y, gamma=2.0):
    """The per-example loss ℓ(z, y) of each way to train on labels y: 'plain' BCE, 'weighted' BCE
    (each positive counted n_neg/n_pos times) or 'focal'."""
    if method == "focal":
        return lambda z, t: focal_loss(z, t, gamma)
    weight = float((y == 0).sum() / max((y == 1).sum(), 1)) if method == "weighted" else 1.0
    return lambda z, t: bce_with_logits(z, t, pos_weight=weight)


@app.function
def train_logistic(x, y, loss, steps=200, lr=0.1):
    """Logistic regression z = x wᵀ + b from zeros, minimising the mean of loss(z, y) by fit
    (constant η). Returns (w, b)."""
    w = engine.tensor(np.zeros((1, x.shape[1])), requires_grad=True)
    b = engine.tensor(np.zeros(1), requires_grad=True)
    x, labels = engine.tensor(np.asarray(x, dtype=np.float64)), engine.tensor(np.asarray(y, dtype=np.float64))
    fit(lambda: loss((x @ w.T + b).reshape(-1), labels).mean(), [w, b], steps, lr, anneal=False)
    return w.data.copy(), float(b.data[0])


@app.function
def shipped_default_fits():
    """The fits sections 3 and 9 open on (the checkpoint losses_default_fits), made by this page's
    code at every setting their controls reach."""
    return lab.default_fits_state(
        constant=lambda y, name, tau: fit_constant(y, per_example_loss(name, tau=tau)),
        class_probabilities=fit_class_probabilities,
        classifier=lambda x, y, method, gamma: train_logistic(x, y, imbalance_loss(method, y, gamma)),
    )


@app.cell
def _():
    imb_share = mo.ui.slider(
        steps=[0.01, 0.02, 0.05, 0.1, 0.2, 0.5],
        value=lab.IMBALANCE_DEFAULT["minority_share"],
        label="minority share",
        show_value=True,
        debounce=True,
    )
    focal_gamma = mo.ui.slider(
        0.0, 5.0, step=0.5, value=lab.IMBALANCE_DEFAULT["gamma"], label="focal γ", show_value=True, debounce=True
    )
    imb_train = mo.ui.run_button(label="train with this page's code")
    return focal_gamma, imb_share, imb_train


@app.cell
def _(default_fits, imb_share, imb_train):
    imb_data = lab.imbalanced_data(n=1000, minority_share=imb_share.value, seed=0)
    # plain and weighted BCE do not read γ: looked up (or trained) here, so moving γ reads only the focal loss
    imb_runs_free = {}
    for _method in ("plain", "weighted"):
        _run = lab.shipped_imbalance_run(default_fits, *imb_data, _method, 0.0)
        if _run is None and imb_train.value:
            _w, _b = train_logistic(*imb_data, imbalance_loss(_method, imb_data[1]))
            _run = lab.score_imbalanced(*imb_data, _method, _w, _b)
        imb_runs_free[_method] = _run
    return imb_data, imb_runs_free


@app.cell
def _(default_fits, default_fits_problem, focal_gamma, imb_data, imb_runs_free, imb_share, imb_train):
    _run = lab.shipped_imbalance_run(default_fits, *imb_data, "focal", focal_gamma.value)
    if _run is None and imb_train.value:
        with mo.status.progress_bar(total=1, title="train_logistic under the focal loss", remove_on_exit=True) as _bar:
            _w, _b = train_logistic(*imb_data, imbalance_loss("focal", imb_data[1], focal_gamma.value))
            _run = lab.score_imbalanced(*imb_data, "focal", _w, _b)
            _bar.update()
    imb_runs = {**imb_runs_free, "focal": _run}
    _label = {
        "plain": "plain BCE",
        "weighted": "BCE, pos_weight = n_neg/n_pos",
        "focal": f"focal, γ = {focal_gamma.value:g}",
    }
    _pct = lambda v: "—" if not np.isfinite(v) else f"{100 * v:.0f} %"  # noqa: E731
    _rows = "\n".join(
        f"| {_label[m]} | — | — | — |"
        if r is None
        else f"| {_label[m]} | {_pct(r.accuracy)} | {_pct(r.recall)} | {_pct(r.precision)} |"
        for m, r in imb_runs.items()
    )
    _source = (
        "Runs: trained in advance by this page's `train_logistic` and shipped with the course."
        if default_fits is not None
        else f"Runs: {'trained just now by your code' if imb_train.value else '—'}; {default_fits_problem}."
    )
    mo.vstack(
        [
            mo.hstack([imb_share, focal_gamma, imb_train], justify="start"),
            mo.md("| loss | accuracy | minority recall | minority precision |\n|---|---|---|---|\n" + _rows),
            mo.md(f"<small>{_source}</small>"),
        ]
    )
    return (imb_runs,)


@app.cell
def _():
    exercises_check = {
        "ln10": exercises.NumberExercise(
            question="**1.** A freshly initialised 10-class classifier outputs all-zero logits. What cross-entropy "
            "does it start from? (Three decimals.)",
            truth=float(F.cross_entropy(engine.tensor(np.zeros((1, 10))), np.array([3])).data),
            hint="Every class gets 1/10.",
            abs_tol=0.002,
            placeholder="e.g. 1.0",
            label="L₀ =",
        ),
        "huber": exercises.NumberExercise(
            question="**2.** Huber loss with δ = 1 for a residual e = 3?",
            truth=float(F.huber_loss(engine.tensor([3.0]), engine.tensor([0.0]), delta=1.0).data),
            hint="|e| > δ, so the linear branch δ(|e| − δ/2) applies.",
            abs_tol=1e-3,
            placeholder="e.g. 4.5",
            label="Huber(e = 3) =",
        ),
        "bce": exercises.NumberExercise(
            question="**3.** A binary classifier gives a positive example (y = 1) the probability p̂ = 0.8. "
            "What is ∂L/∂z of the cross-entropy with respect to its logit?",
            # margin_gradients holds |∂L/∂z| for y = 1, where ∂L/∂z = σ(z) − 1 is negative
            truth=-float(lab.margin_gradients(bce_with_logits, mse, [np.log(0.8 / 0.2)]).ce_autograd[0]),
            hint="∂L/∂z = p̂ − y; mind the sign.",
            abs_tol=1e-3,
            placeholder="e.g. 0.5",
            label="∂L/∂z =",
        ),
        "median": exercises.NumberExercise(
            question="**4.** Three targets, 1, 2 and 10. What is the best constant prediction under **MAE**? "
            "(And under MSE?)",
            truth=lab.quantile_interval([1.0, 2.0, 10.0], 0.5)[0],  # MAE's minimisers: the medians (one here)
            hint="MAE is the Laplace likelihood; which statistic does it estimate?",
            abs_tol=0.01,
            explanation="MAE's minimiser is the median, 2; MSE's is the mean, 13/3 ≈ 4.33, pulled up by the 10.",
            placeholder="e.g. 4",
            label="ĉ =",
        ),
        "floor": exercises.NumberExercise(
            question="**5.** An image has **three** true labels out of ten. Trained with softmax cross-entropy and "
            "the target spread evenly over them, what is the lowest loss the model can reach? (Three decimals.)",
            truth=lab.multilabel_report(np.zeros(10), [1, 4, 7]).softmax_floor,
            hint="the best the model can do is p = q; the loss is then the entropy of q.",
            abs_tol=0.002,
            explanation="ln 3: the softmax must share its probability, while three sigmoids could each reach 1.",
            placeholder="e.g. 0.5",
            label="lowest L =",
        ),
    }
    answers_check = ui.answer_boxes(exercises_check)
    return answers_check, exercises_check


@app.cell
def _(answers_check, exercises_check):
    ui.exercise_list("## 10. Check yourself", exercises_check, answers_check)
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
        for name, loss_fn in (
            ("MSE", F.mse_loss),
            ("MAE", F.l1_loss),
            ("Huber", lambda p, t: F.huber_loss(p, t, delta=1.0)),
        ):
            pred.grad = None
            loss = loss_fn(pred, target)
            loss.backward()
            lines.append(f"{name}: loss {float(loss.data):.4f}, gradient {np.round(pred.grad, 4)}")

        logits = engine.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
        loss = F.cross_entropy(logits, np.array([1]), label_smoothing=0.1)  # logits in, never softmax first
        loss.backward()  # logits.grad = p − q (mean over the batch)
        lines.append(f"cross-entropy {float(loss.data):.4f}, ∂L/∂z = {np.round(logits.grad, 4)}")

        z = engine.tensor([1000.0])
        lines.append(
            f"BCE with logits at z = 1000, y = 0: {float(F.binary_cross_entropy_with_logits(z, engine.tensor([0.0])).data):.1f}"
        )
        return "\n".join(lines)

    mo.vstack(
        [
            mo.md(
                "## 11. The same in your own script\n\nIn a script you would call the library's losses, "
                "which the cells of this page equal; this cell's code runs here, in a private function."
            ),
            mo.plain_text(_script()),
            mo.md(toc.nav_md(METADATA["id"])),
        ]
    )
    return


if __name__ == "__main__":
    app.run()

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="04 · Optimizers")

with app.setup:
    import altair as alt  # noqa: F401  (the page's charts, built by the course layer: imported once, here)
    import marimo as mo
    import numpy as np

    import engine
    from engine.course import exercises, metadata, plot, toc, ui, widgets
    from engine.course.labs import optimizers as lab

    METADATA = metadata("04_optimizers")

    LR_STEPS = [1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.018, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0]


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        """
    Backpropagation gives the gradient; the optimizer decides what to do with it. Plain gradient
    descent steps straight downhill, which is slow in long narrow valleys and stalls near saddle
    points; the optimizers used in practice add **momentum** (remember the past direction),
    **adaptive step sizes** (one per parameter) or both. In this notebook you will

    - write SGD, momentum, Nesterov, RMSprop and Adam(W) as a few lines each, and race them on
      four 2-D loss surfaces, with their hyper-parameters and a learning-rate schedule under your
      control; then change one and watch the race change;
    - measure how the condition number sets the speed of gradient descent and of momentum, and map
      which pairs (η, μ) converge against the theory's stability line;
    - see what Adam's bias correction does to its first steps;
    - plot the common learning-rate schedules, see the noise floor of mini-batch gradients that
      decay breaks through, and find a learning rate with a range test;
    - scale η with the batch size, and find where the linear scaling rule breaks;
    - watch full-batch descent drive a network's sharpness to 2/η and hold it there;
    - find where Adam with an L2 penalty and AdamW's decoupled weight decay part ways;
    - clip gradients by their global norm and rescue a diverging run.
    """,
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1. The update rules

    An update rule turns the gradient $g_t = \nabla_\theta \mathcal L(\theta_t)$ into a step. Each
    rule below is a few lines of NumPy: it takes the parameters `theta`, their gradient `g`, a dict
    `state` where it keeps what it remembers between steps, and the learning rate $\eta$, and
    returns the new parameters. The race of section 2 and the charts after it call these very
    functions, so when you edit one, every figure that uses it runs again. They are PyTorch's
    forms, and `engine.optim` takes exactly the same steps.

    **Gradient descent** steps straight downhill, by $\eta$ times the slope:

    $$
    \theta_{t+1} = \theta_t - \eta\, g_t
    $$
    """)
    return


@app.function
def sgd(theta, g, state, lr):
    """Gradient descent: θ_{t+1} = θ_t − η g_t (it remembers nothing)."""
    return theta - lr * g


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Momentum** keeps a running sum $b$ of past gradients and steps along it: where the gradient
    keeps its sign the steps build up speed, where it flips from step to step they cancel out.
    **Nesterov** steps along the gradient plus the buffer's next push, a look-ahead (below). The
    buffer starts at the first gradient, $b_1 = g_1$:

    $$
    b_t = \mu\, b_{t-1} + g_t, \qquad
    \text{momentum: } \theta_{t+1} = \theta_t - \eta\, b_t, \qquad
    \text{Nesterov: } \theta_{t+1} = \theta_t - \eta\,(g_t + \mu\, b_t)
    $$
    """)
    return


@app.function
def momentum(theta, g, state, lr, mu=0.9):
    """Heavy-ball momentum: b_t = μ b_{t−1} + g_t (b_1 = g_1), θ_{t+1} = θ_t − η b_t."""
    state["b"] = mu * state["b"] + g if "b" in state else g
    return theta - lr * state["b"]


@app.function
def nesterov(theta, g, state, lr, mu=0.9):
    """Nesterov momentum: b_t = μ b_{t−1} + g_t (b_1 = g_1), θ_{t+1} = θ_t − η (g_t + μ b_t)."""
    state["b"] = mu * state["b"] + g if "b" in state else g
    return theta - lr * (g + mu * state["b"])


@app.cell(hide_code=True)
def _():
    _prose = mo.md(r"""
    **Nesterov's look-ahead.** Momentum carries $\theta$ a step $\mu v$ before the gradient has any
    say. Nesterov's idea, in the form of Sutskever et al. (2013), is to take the gradient *there*:
    $v_{t+1} = \mu v_t - \eta\,\nabla f(\theta_t + \mu v_t)$, $\theta_{t+1} = \theta_t + v_{t+1}$.
    If momentum is about to overshoot a valley floor, the gradient at the look-ahead point already
    points back, and the step brakes early. PyTorch's rule, `nesterov` above, takes the gradient at
    its own parameters, yet it is the same algorithm: its parameters **are** the look-ahead points
    $\varphi_t = \theta_t + \mu v_t$ (substitute and the update becomes
    $\varphi_{t+1} = \varphi_t + \mu^2 v_t - (1+\mu)\,\eta\,\nabla f(\varphi_t)$ in both forms).
    """)
    lookahead = lab.nesterov_lookahead(race, nesterov, "quadratic", lr=0.01, momentum=0.9, steps=50)
    _check = mo.md(
        f"Checked on the ill-conditioned quadratic below (η = 0.01, μ = 0.9, 50 steps): the look-ahead "
        f"points of the textbook form and the parameters of `nesterov` (raced by `race`) differ by "
        f"at most **{lookahead.max_difference:.1e}**, while the textbook θ_t themselves sit up to "
        f"**{np.max(np.abs(lookahead.theta - lookahead.engine)):.2f}** away."
    )
    mo.vstack([_prose, _check])
    return (lookahead,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Adaptive step sizes.** RMSprop divides each parameter's step by a running root mean
    square of its own gradients, so a steep direction and a flat one move at similar speeds.
    Adam does the same to a running *mean* of the gradients (momentum), and divides both running
    averages by $1-\beta^t$ (the **bias correction** of section 3). AdamW also shrinks the
    parameters by $\eta\lambda\theta_t$ each step, outside the adaptive step (section 5):

    $$
    \begin{aligned}
    \text{RMSprop:}\quad & s_t = \alpha\, s_{t-1} + (1-\alpha)\, g_t^2, \qquad \theta_{t+1} = \theta_t - \eta\, \frac{g_t}{\sqrt{s_t} + \varepsilon} \\
    \text{Adam:}\quad & m_t = \beta_1 m_{t-1} + (1-\beta_1) g_t, \quad v_t = \beta_2 v_{t-1} + (1-\beta_2) g_t^2, \quad
    \hat m_t = \frac{m_t}{1-\beta_1^t}, \quad \hat v_t = \frac{v_t}{1-\beta_2^t} \\
    \text{AdamW:}\quad & \theta_{t+1} = \theta_t - \eta\lambda\,\theta_t - \eta\, \frac{\hat m_t}{\sqrt{\hat v_t} + \varepsilon}
    \quad (\lambda = 0\text{: Adam})
    \end{aligned}
    $$
    """)
    return


@app.function
def rmsprop(theta, g, state, lr, alpha=0.99, eps=1e-8):
    """RMSprop: s_t = α s_{t−1} + (1 − α) g_t², θ_{t+1} = θ_t − η g_t / (√s_t + ε)."""
    state["s"] = alpha * state.get("s", 0.0) + (1 - alpha) * g * g
    return theta - lr * g / (np.sqrt(state["s"]) + eps)


@app.function
def adam(theta, g, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, bias_correction=True):
    """Adam, and AdamW when weight_decay λ > 0:
    m_t = β₁ m_{t−1} + (1 − β₁) g_t,  v_t = β₂ v_{t−1} + (1 − β₂) g_t²,
    m̂_t = m_t / (1 − β₁ᵗ),  v̂_t = v_t / (1 − β₂ᵗ)  (without bias correction: m̂ = m, v̂ = v),
    θ_{t+1} = θ_t − ηλ θ_t − η m̂_t / (√v̂_t + ε)."""
    beta1, beta2 = betas
    t = state["t"] = state.get("t", 0) + 1
    state["m"] = beta1 * state.get("m", 0.0) + (1 - beta1) * g
    state["v"] = beta2 * state.get("v", 0.0) + (1 - beta2) * g * g
    m_hat, v_hat = state["m"], state["v"]
    if bias_correction:
        m_hat, v_hat = m_hat / (1 - beta1**t), v_hat / (1 - beta2**t)
    return theta - lr * weight_decay * theta - lr * m_hat / (np.sqrt(v_hat) + eps)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 2. Four surfaces, six optimizers

    Each surface is a function of $\theta = (\theta_1, \theta_2)$ built from engine operations, so
    the optimizers get their gradients from autograd, exactly as they would in a network. The
    learning rates start at values that suit each surface; move them (they and the start's two
    sliders are folded under the race's controls, with each rule's own settings), drag the start
    point, switch on a schedule. AdamW joins the race when you pick it and give it a decay
    $\lambda > 0$: with $\lambda = 0$ it is Adam.

    The race opens on **Rosenbrock's** curved valley, 200 steps from $(-1.2, 1)$, and tells one
    story: in a long, narrow, bending valley, velocity pays. Each gradient points mostly across
    the valley, so a plain step makes little progress along its floor; momentum adds up the small
    along-floor parts of many steps. In the table below momentum and Nesterov end nearest the
    minimum ($f \approx 0.035$ and $0.053$), Adam reaches about 1, RMSprop about 2, and plain SGD
    stays above 3. The other surfaces tell other stories: SGD zig-zags across the
    **ill-conditioned** quadratic (one direction 100× steeper than the other; at η = 0.02 the
    zig-zag never dies down, above it explodes) while momentum and Adam cut through; at the
    **saddle** the gradient is almost zero and plain SGD waits; **Beale** has flat plateaus and
    steep walls.

    The race itself is the loop below: the rules of section 1 in a dict, one gradient for each,
    one step each, and a record of where each went. It is the loop of every training run, with a
    network's loss in place of $f$.

    **Change this cell:** in `momentum` (section 1), average the gradients instead of summing
    them, `state["b"] = mu * state.get("b", 0.0) + (1 - mu) * g` (the form many textbooks write).
    The buffer is then $(1-\mu)$ times PyTorch's, so every step is ten times shorter at
    $\mu = 0.9$: on Rosenbrock's valley momentum's final $f(\theta)$ in the table below rises from
    about 0.035 to about 3.4, no better than SGD. Move its $\eta$ from 0.001 to 0.01 and the old
    path comes back exactly: the two forms differ only in what $\eta$ means.
    """)
    return


@app.function
def race(f, rules, start, steps, schedules, clip=None):
    """Race update rules on the surface f from one start, all in step. Each step one autograd
    pass gives f and ∇f at every racer's θ (racer j is column j: the surfaces act elementwise),
    the gradient is rescaled to norm c if it is longer (clipping, section 6), and each racer's
    rule steps its own θ with the learning rate its schedule gives:

        g_t = ∇f(θ_t),   g_t ← g_t · c/‖g_t‖ if ‖g_t‖ > c,   θ_{t+1} = rule(θ_t, g_t, state, η_t).

    A racer that leaves |θ| ≤ 10⁶ (or turns NaN) stops there: it diverged."""
    theta = {name: np.array(start, dtype=np.float64) for name in rules}
    state = {name: {} for name in rules}
    log = {name: {"path": [theta[name]], "losses": [], "lrs": [], "norms": []} for name in rules}
    running = list(rules)
    for _ in range(steps):
        if not running:
            break
        x = engine.tensor(np.stack([theta[name] for name in running], axis=1), requires_grad=True)
        loss = f(x)
        loss.sum().backward()  # column j of x.grad is ∇f at racer j's θ alone
        for name, g, f_value in zip(running, x.grad.numpy().T, loss.data.tolist()):
            norm = float(np.sqrt(g @ g))
            if clip is not None and norm > clip:
                g = g * (clip / (norm + 1e-6))
            lr = schedules[name].lr
            theta[name] = rules[name](theta[name], g, state[name], lr)
            schedules[name].step(f_value)  # a plateau schedule reads the loss
            log[name]["path"].append(theta[name])
            log[name]["losses"].append(f_value)
            log[name]["lrs"].append(lr)
            log[name]["norms"].append(norm)
        running = [name for name in running if np.abs(theta[name]).max() <= 1e6]
    return log


@app.cell
def _():
    surface = mo.ui.dropdown(
        options={spec["label"]: name for name, spec in lab.SURFACES.items()},
        value="Rosenbrock's valley",
        label="surface",
    )
    n_steps = mo.ui.slider(10, 1000, step=10, value=200, label="steps", show_value=True, debounce=True)
    # AdamW joins when asked: at its default λ = 0 it is Adam, step for step
    shown_opts = mo.ui.multiselect(
        options={lab.LABELS[n]: n for n in lab.OPTIMIZERS},
        value=[lab.LABELS[n] for n in lab.OPTIMIZERS if n != "adamw"],
        label="optimizers",
    )
    momentum_beta = mo.ui.slider(0.0, 0.99, step=0.01, value=0.9, label="momentum μ", show_value=True, debounce=True)
    rms_alpha = mo.ui.slider(0.5, 0.999, step=0.001, value=0.99, label="RMSprop α", show_value=True, debounce=True)
    adam_beta1 = mo.ui.slider(0.0, 0.99, step=0.01, value=0.9, label="Adam β₁", show_value=True, debounce=True)
    adam_beta2 = mo.ui.slider(
        steps=[0.9, 0.95, 0.99, 0.995, 0.999, 0.9999], value=0.999, label="Adam β₂", show_value=True, debounce=True
    )
    adamw_decay = mo.ui.slider(0.0, 0.5, step=0.01, value=0.0, label="AdamW λ", show_value=True, debounce=True)
    traj_schedule = mo.ui.dropdown(
        options={
            "constant": "constant",
            "step decay": "step",
            "cosine": "cosine",
            "warm-up + cosine": "warmup_cosine",
            "one-cycle": "onecycle",
            "reduce on plateau": "plateau",
        },
        value="constant",
        label="schedule",
    )
    mo.vstack(
        [
            mo.hstack([surface, n_steps, traj_schedule], justify="start"),
            shown_opts,
            mo.accordion(
                {
                    "the rules' settings: momentum μ, RMSprop α, Adam β₁ and β₂, AdamW λ": mo.hstack(
                        [momentum_beta, rms_alpha, adam_beta1, adam_beta2, adamw_decay], wrap=True
                    )
                }
            ),
        ]
    )
    return adam_beta1, adam_beta2, adamw_decay, momentum_beta, n_steps, rms_alpha, shown_opts, surface, traj_schedule


@app.cell
def _(surface):
    # ranges and defaults that depend on the surface
    _spec = lab.SURFACES[surface.value]
    start_x = mo.ui.slider(
        *_spec["box"][0], step=0.1, value=_spec["start"][0], label="start θ₁", show_value=True, debounce=True
    )
    start_y = mo.ui.slider(
        *_spec["box"][1], step=0.05, value=_spec["start"][1], label="start θ₂", show_value=True, debounce=True
    )
    lrs = mo.ui.dictionary(
        {
            name: mo.ui.slider(
                steps=LR_STEPS, value=_spec["lr"][name], label=f"η {lab.LABELS[name]}", show_value=True, debounce=True
            )
            for name in lab.OPTIMIZERS
        }
    )
    mo.accordion(
        {
            "the learning rates η, and the start θ as two sliders": mo.vstack(
                [mo.hstack(list(lrs.elements.values()), wrap=True), mo.hstack([start_x, start_y], justify="start")]
            )
        }
    )
    return lrs, start_x, start_y


@app.cell
def _(start_x, start_y, surface):
    # drag the start; the two sliders are its keyboard path (moving one re-creates the point there)
    start_point = widgets.point_2d(
        start_x.value,
        start_y.value,
        x_bounds=lab.SURFACES[surface.value]["box"][0],
        y_bounds=lab.SURFACES[surface.value]["box"][1],
        size=220,
    )
    mo.hstack([mo.md("**start θ** (drag)"), start_point], justify="start")
    return (start_point,)


@app.cell
def _(
    adam_beta1,
    adam_beta2,
    adamw_decay,
    lrs,
    momentum_beta,
    n_steps,
    rms_alpha,
    shown_opts,
    start_point,
    surface,
    traj_schedule,
):
    _rules = {"sgd": sgd, "momentum": momentum, "nesterov": nesterov, "rmsprop": rmsprop, "adam": adam, "adamw": adam}
    _race = lab.run_race(
        race,
        _rules,
        surface.value,
        shown_opts.value,
        start=widgets.point(start_point.value),
        steps=n_steps.value,
        lrs=lrs.value,
        schedule=traj_schedule.value,
        momentum=momentum_beta.value,
        alpha=rms_alpha.value,
        betas=(adam_beta1.value, adam_beta2.value),
        weight_decay=adamw_decay.value,
    )
    trajectories, trajectory_problems = _race.trajectories, _race.problems
    # what the race shows: its map, the distance to the minimum value, its table
    _spec = lab.SURFACES[surface.value]
    _problems = (
        [
            mo.callout(
                mo.md("  \n".join(f"**{lab.LABELS[n]} not run**: {m}" for n, m in trajectory_problems.items())),
                kind="warn",
            )
        ]
        if trajectory_problems
        else []
    )
    if not trajectories:
        _out = mo.callout(mo.md("**No optimizer selected.** Pick at least one in the list above."), kind="warn")
    else:
        _paths = {lab.LABELS[n]: t.path for n, t in trajectories.items()}
        _colors = {lab.LABELS[n]: n for n in trajectories}
        _first = next(iter(trajectories.values())).path[0]
        _fig = lab.surface_map(
            surface.value,
            _paths,
            _colors,
            start=_first,
            title=f"{_spec['label']} (darker is lower; ◆ the minimum, ■ the start)",
        )
        # how far each optimizer's f(θ_t) is from the minimum, on a log axis: the race's result
        _curve = lab.gap_chart(surface.value, {lab.LABELS[n]: t for n, t in trajectories.items()}, _colors)
        _rows = []
        for _n, _t in trajectories.items():
            _dist = float(np.linalg.norm(_t.path[-1] - np.array(_spec["minimum"])))
            _state = f"diverged at step {len(_t.path) - 1}" if _t.diverged else f"{_t.final_loss:.3g}"
            _rows.append(f"| {lab.LABELS[_n]} | {_t.lrs[0]:.3g} | {_state} | {_dist:.3g} |")
        _diverged = [lab.LABELS[n] for n, t in trajectories.items() if t.diverged]
        _warn = (
            [
                mo.callout(
                    mo.md(
                        f"**{', '.join(_diverged)} diverged**: the step overshoots the valley and "
                        "grows each time. Lower its learning rate."
                    ),
                    kind="warn",
                )
            ]
            if _diverged
            else []
        )
        _decay = (
            [
                ui.cached_md(
                    f"AdamW runs with λ = {adamw_decay.value:g}: each step also shrinks θ toward 0 by "
                    "ηλθ, so it settles where that shrinkage balances its adaptive step, not at θ*. Its distance to θ* "
                    "measures that bias, not a slower optimizer; with λ = 0 AdamW is Adam."
                )
            ]
            if adamw_decay.value > 0 and "adamw" in trajectories
            else [
                ui.cached_md(
                    "AdamW runs with λ = 0, so it is Adam step for step and its path lies under Adam's: raise "
                    "λ in the rules' settings to see the decay."
                )
            ]
            if "adamw" in trajectories
            else []
        )
        _out = mo.vstack(
            _warn
            + [
                ui.cached_md(rf"$${_spec['latex']}$$"),
                ui.chart(_fig),
                ui.chart(_curve),
                ui.cached_md(
                    "| optimizer | η at step 0 | final f(θ) | distance to θ* |\n|---|---|---|---|\n" + "\n".join(_rows)
                ),
            ]
            + _decay
        )
    mo.vstack(_problems + [_out])
    return trajectories, trajectory_problems


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### How fast, in theory and measured: the condition number

    On a quadratic $f(\theta) = \tfrac12(\theta_1^2 + \kappa\,\theta_2^2)$ the Hessian's eigenvalues
    are $\mu = 1$ and $L = \kappa$, and $\kappa = L/\mu$ is the **condition number**. Gradient descent
    with its best constant step $\eta = 2/(L+\mu)$ shrinks the error by the factor
    $(\kappa-1)/(\kappa+1)$ every step; heavy-ball momentum with its best
    $\eta = \bigl(2/(\sqrt L+\sqrt\mu)\bigr)^2$ and
    $\mu_m = \bigl((\sqrt\kappa-1)/(\sqrt\kappa+1)\bigr)^2$ shrinks it by
    $(\sqrt\kappa-1)/(\sqrt\kappa+1)$ (Polyak 1964; Goh, *Why Momentum Really Works*, Distill 2017).
    Since $1 - r \approx 2/\kappa$ for GD and $2/\sqrt\kappa$ for momentum, momentum needs about
    $\sqrt\kappa$ times fewer steps. Below, `race` runs `sgd` and `momentum` from $\theta_0 = (1, 1)$
    for 300 steps; the measured rate is $(\lVert\theta_T\rVert/\lVert\theta_{T/2}\rVert)^{2/T}$.
    """)
    return


@app.cell
def _():
    cond_kappa = mo.ui.slider(
        steps=[2, 4, 10, 30, 100, 300, 1000], value=100, label="condition number κ", show_value=True
    )
    return (cond_kappa,)


@app.cell
def _(cond_kappa):
    cond = lab.condition_rates(race, sgd, momentum, float(cond_kappa.value), steps=300)
    _names = {"gd": "gradient descent", "momentum": "momentum"}
    _chart = lab.condition_chart(cond)  # ‖θ_t − θ*‖ of both runs on a log axis, with the theory's rᵗ dashed
    _rows = "\n".join(
        f"| {_names[k]} | {cond.settings[k][0]:.4g} | {cond.settings[k][1]:.4g} | "
        f"{cond.theory[k]:.4f} | {cond.measured[k]:.4f} |"
        for k in ("gd", "momentum")
    )
    ui.try_it(
        "",
        [cond_kappa],
        ui.chart(_chart),
        mo.md("| method | η | μ | theory rate | measured rate |\n|---|---|---|---|---|\n" + _rows),
        mo.md(
            f"Measured against theory: GD **{cond.measured['gd'] / cond.theory['gd']:.4f}**, momentum "
            f"**{cond.measured['momentum'] / cond.theory['momentum']:.4f}** (momentum's slowest and "
            "fastest directions decay as t·rᵗ at this setting, which lifts the measured rate a little)."
        ),
    )
    return (cond,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### Momentum's phase diagram: which (η, μ) converge

    The two rows of that table are two points of a plane. Below, every pair $(\eta, \mu)$ of a
    grid runs `momentum` of section 1 on the same quadratic, with curvatures $1$ and
    $\lambda_{\max} = \kappa$, for $T$ steps from $\theta_0 = (1, 1)$; the colour is how much of the
    loss is left, $f(\theta_T)/f(\theta_0)$ on a log scale (blue fell, red grew). Along an
    eigen-direction of curvature $\lambda$ the buffer's update unrolls to a two-term recurrence,
    $\theta_{t+1} = (1 + \mu - \eta\lambda)\,\theta_t - \mu\,\theta_{t-1}$, whose error shrinks by
    the larger root $|z|$ of $z^2 - (1 + \mu - \eta\lambda)\,z + \mu = 0$ each step. Both roots lie
    inside the unit circle exactly when

    $$
    0 < \eta\,\lambda_{\max} < 2\,(1 + \mu), \qquad 0 \le \mu < 1 ,
    $$

    the dashed line. At $\mu = 0$ it is gradient descent's limit $\eta < 2/\lambda_{\max}$ (the
    range test of section 4 meets it again); momentum stretches the stable range to almost twice
    that. Where the roots are complex the error rings and shrinks by $\sqrt\mu$ a step whatever
    $\eta$ is; the diamond is the best setting $(\eta^*, \mu^*)$ of the table above, where both
    directions ring at the same rate $\sqrt{\mu^*}$. The grid is one call of `momentum_grid`
    below: `momentum` works elementwise, so it steps every cell of the grid at once.

    What to look for: every cell right of the line grew. A few left of it grew too, near the
    line or at $\mu$ close to 1, where the rate is above 0.85 and $T$ steps have not yet undone
    the first swings; lengthen the run and they turn blue. With 100 steps or more the lowest
    cell sits in (or next to) the row of $\mu^*$: the worse the conditioning, the more momentum the
    fastest run needs, from $\mu^* = 0$ at $\kappa = 1$ to about 0.88 at $\kappa = 1000$.

    **Change this cell:** in the cell under the two sliders below, pass `nesterov` in place of
    `momentum` to `lab.phase_diagram`. Nesterov's look-ahead brakes harder, and its own limit is
    $\eta\lambda_{\max} < 2(1 + \mu)/(1 + 2\mu)$, about 1.36 at $\mu = 0.9$: the whole band
    between that curve and the dashed line turns red, and the count of cells left of the line that
    grew jumps from 8 to 328 (at κ = 100, T = 100).
    """)
    return


@app.function
def momentum_grid(rule, curvatures, lrs, mus, steps):
    """The momentum `rule` on f(θ) = ½ Σᵢ λᵢ θᵢ² at every (η, μ) of a grid at once, from θ₀ = (1, …, 1):
    the gradient is g = λ ⊙ θ, and each cell keeps its own buffer b_t = μ b_{t−1} + g_t. Returns
    f(θ_T)/f(θ₀) with a row per μ and a column per η."""
    lam = np.asarray(curvatures, dtype=np.float64)
    eta, mu = np.meshgrid(lrs, mus)  # [len(mus), len(lrs)]
    theta, state = np.ones(eta.shape + lam.shape), {}
    for _ in range(steps):
        theta = rule(theta, lam * theta, state, eta[..., None], mu=mu[..., None])
    return np.sum(lam * theta**2, axis=-1) / np.sum(lam)


@app.cell
def _():
    # debounced: a new (κ, T) runs the whole grid of momentum runs (up to 0.3 s at T = 200)
    phase_kappa = mo.ui.slider(
        steps=[1, 3, 10, 30, 100, 300, 1000], value=100, label="condition number κ", show_value=True, debounce=True
    )
    phase_steps = mo.ui.slider(steps=[10, 20, 50, 100, 200], value=100, label="steps T", show_value=True, debounce=True)
    return phase_kappa, phase_steps


@app.cell
def _(phase_kappa, phase_steps):
    phase = lab.phase_diagram(momentum_grid, momentum, float(phase_kappa.value), phase_steps.value)
    _grew_right, _right = int(np.sum(phase.grew & ~phase.stable)), int(np.sum(~phase.stable))
    _grew_left, _left = int(np.sum(phase.grew & phase.stable)), int(np.sum(phase.stable))
    _readout = (
        f"Lowest f(θ_T)/f(θ₀) = **{phase.ratio.min():.2e}** at ηλ_max = **{phase.best[0]:.2f}**, "
        f"μ = **{phase.best[1]:.2f}**; the theory's best: ηλ_max = **{phase.optimum[0]:.2f}**, "
        f"μ* = **{phase.optimum[1]:.2f}** (rate √μ* = {np.sqrt(phase.optimum[1]):.3f} a step). Cells right of the "
        f"line that grew: **{_grew_right} of {_right}**; left of it: **{_grew_left} of {_left}**."
    )
    # each cell's f(θ_T)/f(θ₀), the line ηλ_max = 2(1 + μ) and the diamond at (η*, μ*)
    ui.try_it("", [phase_kappa, phase_steps], ui.chart(lab.phase_chart(phase)), mo.md(_readout))
    return (phase,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 3. Adam's bias correction

    $m$ and $v$ start at zero, so for the first steps they are averages of too few gradients and
    are pulled toward zero; $v$ more so because $\beta_2 = 0.999$ remembers about 1000 steps
    against $\beta_1$'s 10. Dividing by $1-\beta^t$ undoes exactly that pull: for a constant
    gradient $g$, $\hat m_t = g$ and $\hat v_t = g^2$ from the very first step, which is then
    $\eta$. Without the correction the first step is

    $$
    \eta\,\frac{(1-\beta_1)\,g}{\sqrt{(1-\beta_2)\,g^2}} = \eta\,\frac{1-\beta_1}{\sqrt{1-\beta_2}} \approx 3.2\,\eta ,
    $$

    and it keeps growing for a while: a burst of oversized steps just when the parameters are
    least trained. The solid line is the steps of `adam` from section 1, the dashed line the same
    function with `bias_correction=False`; the dots are the library's `engine.optim.Adam`, fed the
    same gradients. β₁ and β₂ are the sliders of section 2.

    **Change this cell:** in `adam`, correct only the first moment (drop `v_hat / (1 - beta2**t)`
    and keep `v_hat` as it is). The solid line then starts at $\eta/\sqrt{1-\beta_2} \approx 31.6\,\eta$,
    ten times the uncorrected first step, and joins the dashed line, far above the dots, within
    a few dozen steps: correcting half of Adam is worse than correcting none.
    """)
    return


@app.cell
def _():
    bc_steps = mo.ui.slider(5, 300, step=5, value=60, label="steps shown", show_value=True)
    bc_noise = mo.ui.slider(0.0, 3.0, step=0.1, value=0.0, label="gradient noise", show_value=True)
    return bc_noise, bc_steps


@app.cell
def _(adam_beta1, adam_beta2, bc_noise, bc_steps):
    _betas = (adam_beta1.value, adam_beta2.value)
    _g = lab.noisy_gradients(bc_steps.value, mean=1.0, noise=bc_noise.value, seed=0)
    bc_with = lab.rule_updates(adam, _g, lr=1.0, betas=_betas)
    bc_without = lab.rule_updates(adam, _g, lr=1.0, betas=_betas, bias_correction=False)
    bc_engine = lab.engine_adam_updates(_g, lr=1.0, betas=_betas)
    _chart = lab.bias_correction_chart(bc_with, bc_without, bc_engine, _betas)  # |Δθ_t|/η of the three, step by step
    ui.try_it(
        "",
        [bc_steps, bc_noise, adam_beta1, adam_beta2],
        ui.chart(_chart),
        ui.cached_md(
            f"First step: **{abs(bc_with[0]):.3f} η** with the correction, "
            f"**{abs(bc_without[0]):.3f} η** without; largest step without: "
            f"**{np.abs(bc_without).max():.3f} η**."
        ),
    )
    return bc_engine, bc_with, bc_without


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 4. Learning-rate schedules

    A schedule changes $\eta$ during training: large early to travel, small late to settle.
    **Step decay** multiplies it by $\gamma$ every few epochs; **cosine annealing** follows
    $\eta_t = \eta_{\min} + \tfrac12(\eta_{\max}-\eta_{\min})(1+\cos(\pi t/T))$; **warm-up then
    cosine** ramps up linearly first (Adam's early estimates are noisy, and large models are
    fragile at the start); **one-cycle** warms up to a peak and anneals far below the start;
    **reduce-on-plateau** cuts the rate by a factor whenever a validation loss (here a synthetic
    one that stalls) has not improved for `patience` steps. Every curve is read from the engine's
    `lr_scheduler` classes, which match PyTorch's values.
    """)
    return


@app.cell
def _():
    sched_steps = mo.ui.slider(10, 500, step=10, value=100, label="total steps", show_value=True)
    sched_lr = mo.ui.slider(steps=[0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0], value=0.1, label="base η", show_value=True)
    sched_step_size = mo.ui.slider(1, 100, step=1, value=25, label="step size", show_value=True)
    sched_gamma = mo.ui.slider(0.1, 0.9, step=0.05, value=0.5, label="step γ", show_value=True)
    sched_warmup = mo.ui.slider(1, 100, step=1, value=10, label="warm-up steps", show_value=True)
    sched_pct = mo.ui.slider(0.05, 0.9, step=0.05, value=0.3, label="one-cycle rise share", show_value=True)
    plateau_patience = mo.ui.slider(1, 30, step=1, value=5, label="plateau patience", show_value=True)
    return plateau_patience, sched_gamma, sched_lr, sched_pct, sched_step_size, sched_steps, sched_warmup


@app.cell
def _(plateau_patience, sched_gamma, sched_lr, sched_pct, sched_step_size, sched_steps, sched_warmup):
    schedules = lab.schedule_curves(
        steps=sched_steps.value,
        lr=sched_lr.value,
        step_size=sched_step_size.value,
        gamma=sched_gamma.value,
        warmup=sched_warmup.value,
        pct_start=sched_pct.value,
        factor=0.5,
        patience=plateau_patience.value,
    )
    _names = {
        "step": "step decay",
        "cosine": "cosine",
        "warmup_cosine": "warm-up + cosine",
        "onecycle": "one-cycle",
        "plateau": "reduce on plateau",
    }
    _chart = plot.compact_chart(  # each curve's corners only, 4 digits: a fraction of the bytes
        plot.curves(
            None,
            lab.drawn_curves(np.arange(sched_steps.value), {_names[k]: v for k, v in schedules.items()}),
            x_title="step t",
            y_title="learning rate η_t",
            height=260,
            title="Schedules",
        )
    )
    _note = (
        ""
        if sched_warmup.value < sched_steps.value
        else f" (The warm-up of {sched_warmup.value} steps is longer than the run, so it is cut to "
        f"{sched_steps.value - 1}.)"
    )
    mo.vstack(
        [
            mo.hstack([sched_steps, sched_lr, sched_step_size, sched_gamma], wrap=True),
            mo.hstack([sched_warmup, sched_pct, plateau_patience], wrap=True),
            ui.chart(_chart),
            ui.cached_md(
                "Final rates: " + " · ".join(f"{_names[k]} **{v[-1]:.3g}**" for k, v in schedules.items()) + "." + _note
            ),
        ]
    )
    return (schedules,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### Why decay at all: the noise floor of stochastic gradients

    Every run above used the exact gradient. Training uses a **mini-batch** gradient: the mean of
    $B$ examples' gradients, an unbiased estimate of the full one whose variance is about $1/B$
    of a single example's. As in training, the batches are drawn without replacement: each epoch
    shuffles the points and cuts them into batches of $B$, so every point is used once per epoch
    and $B = n$ is the full batch. Here $L(\theta) = \lVert X\theta - y\rVert^2/2n$ on $n = 512$ points
    whose labels carry noise, so no $\theta$ fits every point and the per-example gradients
    disagree even at the minimum $\hat\theta$. With a constant $\eta$, SGD stops improving at a
    **floor** where the noise it injects each step balances the pull toward $\hat\theta$: the
    smaller the batch (or the larger $\eta$), the higher the floor. Decaying $\eta$ (here the
    cosine schedule of this section, to 0) averages the noise out and goes below it, provided the
    run reaches the floor before $\eta$ gets small. Full-batch gradient descent has no noise and
    no floor (at $B = n$ the constant run is full-batch descent, and decay only slows it). All
    three runs start at $\theta = 0$ and take 400 steps; the constant and decayed runs see the
    same batches. The loop is below; the step is `sgd` of section 1 (pass another rule and it
    trains with that one). The gradient is written out: for this loss autograd would give the
    same numbers.
    """)
    return


@app.function
def minibatch_descent(rule, X, y, batches, lrs):
    """Mini-batch training on L(θ) = ‖Xθ − y‖²/2n from θ₀ = 0. At step t the batch B_t (indices
    into the data) gives g_t = X_Bᵀ(X_B θ_t − y_B)/|B|, an unbiased but noisy estimate of ∇L, and
    θ_{t+1} = rule(θ_t, g_t, state, η_t). Returns θ₀, θ₁, … as rows."""
    theta, state = np.zeros(X.shape[1]), {}
    path = [theta]
    for batch, lr in zip(batches, lrs):
        X_b, y_b = X[batch], y[batch]
        g = X_b.T @ (X_b @ theta - y_b) / len(X_b)
        theta = rule(theta, g, state, lr)
        path.append(theta)
    return np.array(path)


@app.cell
def _():
    noise_batch = mo.ui.slider(
        steps=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512], value=8, label="batch size B", show_value=True
    )
    noise_lr = mo.ui.slider(steps=[0.03, 0.1, 0.3], value=0.3, label="η", show_value=True)
    return noise_batch, noise_lr


@app.cell
def _(noise_batch, noise_lr):
    noisy = lab.sgd_noise(minibatch_descent, sgd, noise_batch.value, lr=noise_lr.value, steps=400, seed=0)
    _chart = lab.noise_chart(noisy)  # the excess loss of the three runs, step by step, on a log axis
    _ratio = noisy.floor["constant"] / max(noisy.floor["decayed"], 1e-300)
    ui.try_it(
        "",
        [noise_batch, noise_lr],
        ui.chart(_chart),
        ui.cached_md(
            "Mean excess loss over the last 40 steps: "
            + " · ".join(f"{k} **{v:.2e}**" for k, v in noisy.floor.items())
            + f". The decayed run ends **{_ratio:.3g}×** "
            + ("below" if _ratio > 1 else "above")
            + f" the constant one. Gradient noise at θ̂, E‖g_B − ∇L‖²: **{noisy.gradient_noise:.3g}**."
        ),
    )
    return (noisy,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### Finding η: the learning-rate range test

    Before a long run, a short one can find the usable range of $\eta$ (Smith, *Cyclical Learning
    Rates*, 2017; fastai's `lr_find`): start tiny, multiply $\eta$ by a constant factor every
    mini-batch step, record the loss, and stop when it blows up. The loss first falls faster as
    $\eta$ grows, bottoms out, then explodes. On this least-squares problem we know why: gradient
    descent diverges once $\eta > 2/\lambda_{\max}$, with $\lambda_{\max}$ the Hessian's largest
    eigenvalue (the vertical line). Past the line the error along the steepest direction is
    multiplied by $|1 - \eta\lambda_{\max}| > 1$ each step, but the test sees it only once the loss
    has grown 4-fold, and how soon that happens depends on how much error is left along that
    direction. Full-batch gradient descent has shrunk it for the whole ramp, so its blow-up comes
    far past the line: the theory below multiplies the factors out, and the run with $B = n$ (the
    full batch) matches it, except on the slow 400-step ramp, where rounding errors of about
    $10^{-16}$ seed that direction and it blows up sooner. Mini-batch noise keeps every direction's
    error alive, so with batches of 32 or 128 the blow-up comes soon after the line; with a batch
    of one it can come before it, since one example's curvature can far exceed the average. The
    loss can even keep falling past the line for a few steps (with the full batch its lowest point
    lies there): the bottom of the curve is a rate that worked briefly, not a stable one, which is
    why the usual choice is a rate well below it. The run goes from $\eta = 10^{-4}$ to at most 30.
    """)
    return


@app.cell
def _():
    range_batch = mo.ui.slider(steps=[1, 8, 32, 128, 512], value=32, label="batch size B", show_value=True)
    range_steps = mo.ui.slider(steps=[60, 120, 400], value=120, label="ramp length (steps)", show_value=True)
    return range_batch, range_steps


@app.cell
def _(range_batch, range_steps):
    lr_range = lab.lr_range_test(minibatch_descent, sgd, range_batch.value, steps=range_steps.value, seed=0)
    _chart = lab.range_chart(lr_range, range_batch.value)  # the loss against η, and a line at 2/λ_max
    _blow = (
        f"it blew up at η = **{lr_range.blowup_lr:.3g}**, {lr_range.blowup_lr / lr_range.stable_limit:.2f}× the limit"
        if np.isfinite(lr_range.blowup_lr)
        else "it did not blow up within the range"
    )
    _theory = lr_range.full_batch_blowup_lr  # where full-batch GD on the same ramp blows up (lab.full_batch_losses)
    _text = (
        f"Lowest loss at η = **{lr_range.best_lr:.3g}**; 2/λ_max = **{lr_range.stable_limit:.3g}**; {_blow}. "
        f"Full-batch gradient descent on the same ramp blows up, in theory, at η = **{_theory:.3g}** "
        f"({_theory / lr_range.stable_limit:.2f}× the limit)."
    )
    ui.try_it("", [range_batch, range_steps], ui.chart(_chart), mo.md(_text))
    return (lr_range,)


@app.function
def default_batch_scaling():
    """The sweep the linear-scaling section opens on: `minibatch_descent` with `sgd` for 4 epochs at
    every batch size B from 1 to 512, at η = η₁·B and at η = η₁, for four base rates η₁, 5 shuffles."""
    return lab.batch_scaling(minibatch_descent, sgd)


@app.cell(hide_code=True)
def _():
    scaling_lr = mo.ui.slider(
        steps=list(lab.SCALING["base_lrs"]), value=0.01, label="base rate η₁ (at B = 1)", show_value=True
    )
    scaling_train = mo.ui.run_button(label="run the sweep again with your code")
    shipped_scaling, scaling_misfit = lab.shipped_batch_scaling(minibatch_descent, sgd)
    mo.md(r"""
    ### Batch size and learning rate: the linear scaling rule

    A larger batch averages more examples, so why not train with it at the same $\eta$? Because an
    epoch then takes $B$ times fewer steps, and each step moves $\theta$ no further. The **linear
    scaling rule** (Goyal et al., 2017, who trained ImageNet in an hour with it) multiplies $\eta$
    by $B$ as well: $B$ small steps of $\eta_1$ on $B$ examples then move $\theta$ about as far as one
    step of $\eta_1 B$ on all of them, and the gradient noise an epoch adds is the same too. Along a
    direction of curvature $\lambda$ the small steps multiply the error by
    $(1 - \eta_1\lambda)^B \approx 1 - \eta_1 B\lambda$, the large one by exactly
    $1 - \eta_1 B\lambda$: the two agree while $\eta_1 B\lambda \ll 1$, and part ways as
    $\eta_1 B\lambda_{\max}$ nears 1; past $\eta_1 B = 2/\lambda_{\max}$ (the dashed line) the large
    step diverges. Below, the least-squares problem of this section, 4 epochs of `minibatch_descent`
    at every batch size, the mean of 5 shuffles (a geometric mean: the losses span decades).
    """)
    return scaling_lr, scaling_misfit, scaling_train, shipped_scaling


@app.cell
def _(scaling_train, shipped_scaling):
    batch_scaling = shipped_scaling
    if scaling_train.value:
        with mo.status.progress_bar(
            total=len(lab.SCALING["base_lrs"]), title="4 base rates", remove_on_exit=True
        ) as _bar:
            batch_scaling = lab.batch_scaling(minibatch_descent, sgd, on_run=lambda _i: _bar.update())
    return (batch_scaling,)


@app.cell
def _(batch_scaling, scaling_lr, scaling_misfit, scaling_train):
    mo.stop(
        batch_scaling is None,
        mo.vstack([mo.md(f"**The linear scaling rule:** {scaling_misfit}."), scaling_train]),
    )
    _r = list(batch_scaling["base_lrs"]).index(scaling_lr.value)
    _sizes = batch_scaling["batch_sizes"]
    _scaled, _fixed = (np.exp(np.log(batch_scaling[_k][_r]).mean(axis=1)) for _k in ("scaled", "fixed"))
    _lam = float(batch_scaling["lambda_max"][0])
    _held = _sizes * scaling_lr.value * _lam <= 1
    _spread = _scaled[_held].max() / _scaled[_held].min()
    _past = _sizes * scaling_lr.value > 2 / _lam
    _broke = (
        f" Past the dashed line (B > {2 / _lam / scaling_lr.value:.0f}) the scaled run diverges: its final loss is "
        f"**{_scaled[_past].min():.3g}** or more, above the **{batch_scaling['start'][0]:.3g}** it started from."
        if _past.any()
        else f" At this η₁ even B = {_sizes[-1]:.0f} stays below the dashed line."
    )
    ui.try_it(
        "",
        [scaling_lr, scaling_train],
        ui.chart(lab.scaling_chart(batch_scaling, scaling_lr.value)),
        mo.md(
            f"With η = η₁·B the loss after 4 epochs stays within a factor **{_spread:.2f}** across every B with "
            f"η₁Bλ_max ≤ 1 (λ_max = {_lam:.3f}, so B ≤ {1 / _lam / scaling_lr.value:.0f}); with η = η₁ held fixed "
            f"it grows from **{_fixed[0]:.3g}** at B = 1 to **{_fixed[-1]:.3g}** at B = {_sizes[-1]:.0f}, "
            f"{_fixed[-1] / _fixed[0]:.0f} times as high, since 4 epochs of large batches are too few steps." + _broke
        ),
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ### The edge of stability

    On a quadratic, gradient descent diverges once $\eta > 2/\lambda_{\max}$: the range test above
    showed it. A network's loss is not a quadratic, and its **sharpness**, the Hessian's top
    eigenvalue $\lambda_{\max}(\nabla^2 L(\theta))$, changes as $\theta$ moves. Cohen et al. (2021)
    found that full-batch gradient descent drives it to the limit: the sharpness rises during
    training (*progressive sharpening*) until it reaches $2/\eta$, and then **hovers there**, while
    the loss keeps falling, though no longer at every step. The sharpness can overshoot $2/\eta$
    for a while, but it comes back; where it starts above $2/\eta$, it falls to it. Below, a network $2 \to 32 \to 32 \to 1$ with tanh between (`loss_grad`, its
    weights one flat vector) fits the moons' labels by squared error, by full-batch descent
    (`gd_with_sharpness`), and `sharpness` measures $\lambda_{\max}$ every 50 steps by power
    iteration. The engine's autograd gives gradients, not Hessians, so the Hessian-vector product
    comes from two gradients:

    $$
    H v \approx \frac{\nabla L(\theta + \varepsilon v) - \nabla L(\theta - \varepsilon v)}{2\varepsilon},
    \qquad v \leftarrow \frac{Hv}{\lVert Hv\rVert}, \qquad \lambda_{\max} \approx v^\top H v .
    $$
    """)
    return


@app.function
def loss_grad(theta, X, y, width):
    """The squared error L(θ) = mean (f_θ(x) − y)² of the network f_θ: 2 → n → n → 1 with tanh
    between, its weights the flat vector θ (W₁, b₁, W₂, b₂, W₃, b₃, each W stored (out, in)), and
    ∇L by autograd. Returns (L, ∇L)."""
    t = engine.tensor(theta, requires_grad=True)
    shapes = [(width, 2), (width,), (width, width), (width,), (1, width), (1,)]
    params, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        params.append(t[start : start + size].reshape(shape))
        start += size
    h = engine.tensor(X)
    for k in (0, 2, 4):
        h = h @ params[k].T + params[k + 1]
        h = h.tanh() if k < 4 else h
    loss = ((h.reshape(-1) - engine.tensor(y)) ** 2).mean()
    loss.backward()
    return float(loss.data), t.grad.numpy()


@app.function
def sharpness(loss_grad, theta, v, iters=5, eps=1e-4):
    """The sharpness λ_max(∇²L(θ)) by power iteration, v ← Hv/‖Hv‖, with the Hessian-vector product
    from two gradients, Hv ≈ (∇L(θ + εv) − ∇L(θ − εv))/2ε. Returns (vᵀHv, v): pass v back in to
    start the next measurement where this one ended."""
    lam = 0.0
    for _ in range(iters):
        v = v / np.linalg.norm(v)
        hv = (loss_grad(theta + eps * v)[1] - loss_grad(theta - eps * v)[1]) / (2 * eps)
        lam, v = float(v @ hv), hv
    return lam, v


@app.function
def gd_with_sharpness(loss_grad, theta, lr, steps, every=50):
    """Full-batch gradient descent θ_{t+1} = θ_t − η∇L(θ_t), the sharpness measured every ``every``
    steps (20 power iterations the first time, then 5 from the last v). Returns the steps measured,
    the sharpness and the loss at each."""
    v = np.random.default_rng(0).standard_normal(theta.shape)
    at, sharp, losses = [], [], []
    for t in range(steps + 1):
        loss, g = loss_grad(theta)
        if t % every == 0:
            lam, v = sharpness(loss_grad, theta, v, iters=20 if t == 0 else 5)
            at.append(t)
            sharp.append(lam)
            losses.append(loss)
        theta = theta - lr * g
    return np.array(at), np.array(sharp), np.array(losses)


@app.function
def default_edge():
    """The runs the section opens on: `gd_with_sharpness` on `loss_grad` for 1,000 steps at η = 0.2
    and η = 0.3, from the initial weights of seeds 0 … 4."""
    return lab.edge_runs(loss_grad, gd_with_sharpness, sharpness)


@app.cell
def _():
    edge_lr = mo.ui.slider(steps=list(lab.EDGE["lrs"]), value=0.2, label="learning rate η", show_value=True)
    edge_train = mo.ui.run_button(label="run the 10 trainings again with your code")
    shipped_edge_runs, edge_misfit = lab.shipped_edge(loss_grad, sharpness, gd_with_sharpness)
    return edge_lr, edge_misfit, edge_train, shipped_edge_runs


@app.cell
def _(edge_train, shipped_edge_runs):
    edge_runs = shipped_edge_runs
    if edge_train.value:
        _total = len(lab.EDGE["lrs"]) * lab.EDGE["seeds"]
        with mo.status.progress_bar(total=_total, title="full-batch descent", remove_on_exit=True) as _bar:
            edge_runs = lab.edge_runs(loss_grad, gd_with_sharpness, sharpness, on_run=lambda _i: _bar.update())
    return (edge_runs,)


@app.cell
def _(edge_lr, edge_misfit, edge_runs, edge_train):
    mo.stop(edge_runs is None, mo.vstack([mo.md(f"**The edge of stability:** {edge_misfit}."), edge_train]))
    _r = list(edge_runs["lrs"]).index(edge_lr.value)
    _sharp, _loss, _steps = edge_runs["sharpness"][_r], edge_runs["loss"][_r], edge_runs["steps"]
    _late = _steps >= _steps[-1] / 2
    _gap = np.abs(_sharp[:, _late].mean(axis=1) * edge_lr.value / 2 - 1).max()
    _ups = int(np.sum(np.diff(_loss[:, _late], axis=1) > 0))
    ui.try_it(
        "",
        [edge_lr, edge_train],
        ui.chart(lab.edge_chart(edge_runs, edge_lr.value)),
        mo.md(
            f"At η = {edge_lr.value:g} the sharpness starts at **{_sharp[:, 0].min():.2f}–{_sharp[:, 0].max():.2f}**; "
            f"over the second half of the runs its mean is within **{100 * _gap:.1f} %** of 2/η = "
            f"{2 / edge_lr.value:.3g} for every seed. The loss there falls from "
            f"**{_loss[:, _late][:, 0].mean():.4f}** to **{_loss[:, -1].mean():.4f}** (mean of the seeds), "
            f"yet it rose over {_ups} of the {_loss[:, _late].size - len(_loss)} intervals between two "
            "measurements (all seeds): gradient descent at the quadratic theory's limit, stable all the same."
        ),
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 5. L2 penalty or decoupled weight decay?

    For plain SGD, adding $\tfrac{\lambda}{2}\lVert\theta\rVert^2$ to the loss and shrinking the
    weights by $\eta\lambda\theta$ each step are the same thing. For Adam they are not: an L2
    term enters the gradient, $g + \lambda\theta$, and is then **divided by** $\sqrt{\hat v}$ like
    the rest. Where the loss gradient is large, the decay is drowned out; where it is zero, the
    normalised step is about $\eta\,\operatorname{sign}(\theta)$, whatever $\lambda$ is. AdamW
    applies $\theta \leftarrow \theta - \eta\lambda\theta$ outside the adaptive step, so every
    weight decays at the same relative rate. Here $f(\theta) = 5(\theta_1-2)^2$: $\theta_2$ plays no
    role in the loss, so only the decay moves it. Both runs are `adam` of section 1 in `race`: once
    on $f + \tfrac{\lambda}{2}\lVert\theta\rVert^2$, once with `weight_decay` $= \lambda$ on $f$.
    """)
    return


@app.cell
def _():
    wd_lambda = mo.ui.slider(0.0, 1.0, step=0.01, value=0.1, label="λ", show_value=True)
    wd_lr = mo.ui.slider(steps=[0.001, 0.003, 0.01, 0.03, 0.05, 0.1, 0.3], value=0.05, label="η", show_value=True)
    return wd_lambda, wd_lr


@app.cell
def _(wd_lambda, wd_lr):
    wd_paths = lab.l2_vs_decoupled(race, adam, weight_decay=wd_lambda.value, lr=wd_lr.value, steps=200)
    _chart2, _chart1 = lab.weight_decay_charts(wd_paths)  # θ₂ and θ₁ of both runs, step by step
    ui.try_it(
        "",
        [wd_lambda, wd_lr],
        ui.chart_row(_chart2, _chart1),
        mo.md(
            f"After 200 steps: Adam + L2 θ = ({wd_paths.adam_l2[-1, 0]:.3f}, {wd_paths.adam_l2[-1, 1]:.3f}), "
            f"AdamW θ = ({wd_paths.adamw[-1, 0]:.3f}, {wd_paths.adamw[-1, 1]:.3f}). AdamW's θ₂ follows "
            f"2·(1 − ηλ)ᵗ = {2 * (1 - wd_lr.value * wd_lambda.value) ** 200:.3f} at t = 200."
        ),
    )
    return (wd_paths,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 6. Gradient clipping by global norm

    One bad batch or a steep wall can produce a gradient a thousand times larger than usual, and
    one SGD step then throws the parameters far away. Clipping rescales **all** gradients together
    when their global norm exceeds a threshold $c$, keeping the direction:

    $$
    \lVert g\rVert = \sqrt{\textstyle\sum_{\text{params}}\sum_i g_i^2}, \qquad
    g \leftarrow g\cdot\frac{c}{\lVert g\rVert} \quad\text{if } \lVert g\rVert > c .
    $$

    (Note the square root: the norm is a length, not a sum of squares.) Below, SGD on
    Rosenbrock's valley with a learning rate too large for its steep walls, with and without the
    clipping line of `race` (the rescaling `nn.utils.clip_grad_norm_` does in a script).

    **Change this cell:** in `race`, clip each coordinate on its own instead of the length,
    `g = np.clip(g, -clip, clip)` in place of the two clipping lines. That keeps the size of the
    step in check but not its direction: at c = 3 and η = 0.01 the clipped run below stalls near
    its start with $f \approx 4.5$, where clipping the length reaches about 0.27.
    """)
    return


@app.cell
def _():
    clip_norm = mo.ui.slider(
        steps=[0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0], value=3.0, label="max norm c", show_value=True, debounce=True
    )
    clip_lr = mo.ui.slider(
        steps=[0.001, 0.003, 0.005, 0.01, 0.02, 0.05], value=0.01, label="SGD η", show_value=True, debounce=True
    )
    return clip_lr, clip_norm


@app.cell
def _(clip_lr, clip_norm):
    clip_runs = {
        "no clipping": lab.run_one(race, sgd, "rosenbrock", "sgd", steps=300, lrs={"sgd": clip_lr.value}),
        f"clipped at {clip_norm.value:g}": lab.run_one(
            race, sgd, "rosenbrock", "sgd", steps=300, lrs={"sgd": clip_lr.value}, clip=clip_norm.value
        ),
    }
    _fig = lab.surface_map(
        "rosenbrock",
        {k: r.path for k, r in clip_runs.items()},
        {"no clipping": "error", f"clipped at {clip_norm.value:g}": "sgd"},
        start=lab.SURFACES["rosenbrock"]["start"],
        title="SGD on Rosenbrock (darker is lower)",
        height=320,
    )
    _lines = []
    for _k, _r in clip_runs.items():
        _fate = f"diverged at step {len(_r.path) - 1}" if _r.diverged else f"final f = {_r.final_loss:.3g}"
        _lines.append(f"**{_k}**: largest gradient norm {np.max(_r.grad_norms):.3g}, {_fate}")
    ui.try_it("", [clip_norm, clip_lr], ui.chart(_fig), ui.cached_md(" · ".join(_lines)))
    return (clip_runs,)


@app.cell
def _():
    _clipped, _before, _after = lab.clip_by_global_norm([np.array([3.0]), np.array([4.0])], max_norm=1.0)
    _small, _large = (
        lab.sgd_noise(minibatch_descent, sgd, b, lr=0.3, steps=400, seed=0, only=("constant",)).floor["constant"]
        for b in (4, 64)
    )
    exercises_check = {
        "adam": exercises.NumberExercise(
            question="**1.** Adam (η = 0.01, default betas) takes its first step on a parameter whose gradient is 0.3. "
            "How far does the parameter move?",
            truth=float(abs(lab.engine_adam_updates([0.3], lr=0.01)[0])),
            hint="After bias correction m̂₁ = g and v̂₁ = g².",
            rel_tol=0.01,
            placeholder="e.g. 0.003",
            label="|Δθ₁| =",
        ),
        "cosine": exercises.NumberExercise(
            question="**2.** Cosine annealing from η = 0.1 to 0 over T = 100 steps: what is the learning rate at step 50?",
            truth=float(lab.schedule_curves(steps=100, lr=0.1)["cosine"][50]),
            hint="cos(π/2) = 0.",
            rel_tol=0.01,
            placeholder="e.g. 0.1",
            label="η₅₀ =",
        ),
        "clip": exercises.NumberExercise(
            question="**3.** Two parameters have gradients g₁ = 3 and g₂ = 4. After "
            "`clip_grad_norm_(params, max_norm=1)`, what is g₁? (Two decimals.)",
            truth=float(_clipped[0][0]),
            hint="The global norm is √(3² + 4²); both are scaled by the same factor.",
            abs_tol=0.005,
            placeholder="e.g. 1.5",
            label="clipped g₁ =",
        ),
        "rate": exercises.NumberExercise(
            question="**4.** A quadratic valley has condition number κ = 100. By what factor does best-tuned "
            "heavy-ball momentum shrink the error per step? (Three decimals.)",
            truth=lab.condition_rates(race, sgd, momentum, 100.0, steps=300).theory["momentum"],
            hint="(√κ − 1)/(√κ + 1); gradient descent's (κ − 1)/(κ + 1) would be 0.980.",
            abs_tol=0.002,
            explanation="Gradient descent's is 99/101 ≈ 0.980: momentum needs about 10 = √κ times fewer steps.",
            placeholder="e.g. 0.9",
            label="rate per step =",
        ),
        "floor": exercises.ChoiceExercise(
            question="**5.** SGD with a constant η = 0.3 on the least-squares problem of section 4: the batch grows "
            "from 4 to 64. What happens to the loss floor?",
            options={"it rises": "rises", "it falls": "falls", "it stays the same": "same"},
            truth="falls" if _large < _small else "rises",
            hint="The variance of a mean of B gradients is about 1/B of one gradient's.",
            explanation=f"Measured: {_small:.2e} at B = 4, {_large:.2e} at B = 64.",
        ),
        "lookahead": exercises.NumberExercise(
            question="**6.** Nesterov momentum with μ = 0.9 is at θ = 0 with velocity v = 2 (one parameter). "
            "At which θ does the look-ahead form evaluate the gradient?",
            truth=float(lab.lookahead_point(0.0, 2.0, momentum=0.9)),
            hint="Where momentum alone would carry θ: θ + μv.",
            rel_tol=1e-6,
            placeholder="e.g. 1",
            label="θ + μv =",
        ),
        "limit": exercises.NumberExercise(
            question="**7.** Plain gradient descent on a quadratic whose Hessian is diag(0.5, 0.1): above which "
            "learning rate does it diverge?",
            truth=lab.gd_stability_limit(np.diag([0.5, 0.1])),
            hint="Along the steepest direction the error is multiplied by 1 − ηλ_max each step.",
            rel_tol=0.01,
            placeholder="e.g. 1",
            label="η limit =",
        ),
    }
    answers_check = ui.answer_boxes(exercises_check)
    return answers_check, exercises_check


@app.cell
def _(answers_check, exercises_check):
    ui.exercise_list("## 7. Check yourself", exercises_check, answers_check)
    return


@app.cell
def _():
    def _script():
        import numpy as np

        from engine import nn, optim
        from engine.optim import lr_scheduler

        theta = nn.Parameter(np.array([-1.2, 1.0]))
        opt = optim.AdamW([theta], lr=0.1, betas=(0.9, 0.999), weight_decay=0.0)
        sched = lr_scheduler.CosineAnnealingLR(opt, T_max=300)
        for step in range(300):
            loss = (1 - theta[0]) ** 2 + 100 * (theta[1] - theta[0] ** 2) ** 2  # Rosenbrock
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_([theta], max_norm=10.0)
            opt.step()
            sched.step()
        return f"θ after 300 steps = {np.round(theta.data, 4)}, last loss {float(loss.data):.3g}, η now {sched.get_last_lr()[0]:.3g}"

    mo.vstack(
        [
            mo.md(r"""
    ## 8. The same in your own script

    AdamW with a cosine schedule and gradient clipping on Rosenbrock's valley. Other choices:
    `optim.SGD(params, lr, momentum=0.9, nesterov=True)`, `optim.RMSprop(params, lr, alpha=0.99)`,
    `optim.Adam(params, lr, weight_decay=λ)` (that one is the coupled L2 penalty).
    """),
            mo.md(f"`{_script()}`"),
            mo.md(toc.nav_md(METADATA["id"])),
        ]
    )
    return


if __name__ == "__main__":
    app.run()

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="07 · Diffusion models")

with app.setup:
    import altair as alt
    import marimo as mo
    import numpy as np

    import engine
    import engine.functional as F
    from engine import diffusion
    from engine.course import exercises, metadata, plot, throttled, toc, ui, widgets
    from engine.course.labs import diffusion as lab
    from engine.optim import Adam
    from engine.optim.lr_scheduler import CosineAnnealingLR

    METADATA = metadata("07_diffusion")


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        r"""
    A diffusion model learns to undo noise. Data is destroyed step by step until it is pure
    Gaussian noise; a network learns to predict the noise at every step; running the process
    backwards then turns fresh noise into new data. In this notebook you will:

    - compare the **linear** and **cosine** noise schedules through $\beta_t$, $\bar\alpha_t$ and
      the signal-to-noise ratio;
    - watch the **forward process** destroy a 2-D data set and check its **closed form**
      $q(x_t \mid x_0)$ against the step-by-step chain;
    - train a small **DDPM** and step through its **reverse process** as the samples sharpen, with a
      sample-quality number against training steps, and lay its learned **score field** over the
      true one;
    - see, on a 1-D mixture whose score is known exactly, the **exact reverse process** next to the
      learned one;
    - sample in a few steps with **DDIM**, next to ancestral DDPM at the same step counts and over
      five seeds, and move from one to the other with **η**;
    - steer samples to a class with **classifier-free guidance**, and train on points you draw.

    Each of these is a short function on this page (the schedules, `q_sample`, `ddpm_loss`,
    `train_ddpm`, `ddpm_step`, `learned_score`, `ddim_step`, `guided_epsilon`, ...). Open the page with
    `marimo edit` to change one: every figure that uses it follows your edit.
    """,
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1. The noise schedule

    The forward process adds a little Gaussian noise at each of $T$ steps, with variances
    $\beta_1, \dots, \beta_T$:

    $$
    q(x_t \mid x_{t-1}) = \mathcal N\!\big(\sqrt{1-\beta_t}\,x_{t-1},\; \beta_t I\big),
    \qquad \alpha_t = 1 - \beta_t, \qquad \bar\alpha_t = \prod_{s=1}^{t} \alpha_s .
    $$

    $\bar\alpha_t$ is the share of the data's variance that survives to step $t$, and the
    **signal-to-noise ratio** is $\mathrm{SNR}(t) = \bar\alpha_t/(1-\bar\alpha_t)$. DDPM's linear
    schedule spaces $\beta_t$ evenly from $10^{-4}$ to $0.02$ over $T = 1000$ steps; with fewer steps
    the same bounds leave part of the data at the end, so they are rescaled by $1000/T$ (capped at
    50 for $T < 21$, where $\beta_T$ would reach 1). The cosine schedule chooses $\bar\alpha_t$
    directly, $\bar\alpha_t = f(t)/f(0)$ with
    $f(t) = \cos^2\!\big(\tfrac{t/T + s}{1+s}\cdot\tfrac{\pi}{2}\big)$, so that it falls gently at
    both ends. The three functions below are the schedules every section of this page uses.

    **Change this cell:** in `linear_schedule`, space $\sqrt{\beta_t}$ evenly instead of $\beta_t$,
    `betas = np.linspace(beta_start ** 0.5, beta_end ** 0.5, T) ** 2` (the "scaled linear" schedule
    of Stable Diffusion). At $T = 100$ the linear curve of $\bar\alpha_t$ below then keeps about a
    third of the data's variance halfway through instead of 7 %, and ends at $\bar\alpha_T \approx
    5\cdot10^{-4}$ instead of $2\cdot10^{-5}$. The models shipped for the later sections were
    trained on the schedule as written, so those sections then ask you to train on yours.
    """)
    return


@app.function
def linear_schedule(T, beta_start=1e-4, beta_end=0.02):
    """DDPM's linear schedule: β_t evenly spaced from β_1 = beta_start to β_T = beta_end.

    `Schedule.from_betas` derives the rest: α_t = 1 − β_t, ᾱ_t = ∏_{s ≤ t} α_s, SNR = ᾱ/(1 − ᾱ)."""
    betas = np.linspace(beta_start, beta_end, T)
    return diffusion.Schedule.from_betas(betas, name="linear")


@app.function
def cosine_schedule(T, s=0.008):
    """Nichol & Dhariwal's cosine schedule: ᾱ_t = f(t)/f(0), f(t) = cos²((t/T + s)/(1 + s) · π/2),
    β_t = 1 − ᾱ_t/ᾱ_{t−1}, clipped at 0.999 (f(T) = 0 would make β_T = 1)."""
    f = np.cos((np.arange(T + 1) / T + s) / (1 + s) * np.pi / 2) ** 2
    alpha_bars = f / f[0]
    betas = np.clip(1 - alpha_bars[1:] / alpha_bars[:-1], 1e-12, 0.999)
    return diffusion.Schedule.from_betas(betas, name="cosine")


@app.function
def noise_schedule(kind, T):
    """The page's schedules by name: "cosine"; "linear", DDPM's bounds 10⁻⁴ … 0.02 times
    1000/T (at most 50), so that any T ends near pure noise; "linear (fixed bounds)"."""
    if kind == "cosine":
        return cosine_schedule(T)
    scale = lab.linear_scale(T) if kind == "linear" else 1.0
    return linear_schedule(T, 1e-4 * scale, 0.02 * scale)


@app.cell
def _():
    schedule_T = mo.ui.slider(steps=[10, 20, 50, 100, 200, 500, 1000], value=100, label="steps T", show_value=True)
    schedule_rescale = mo.ui.switch(value=True, label="rescale the linear bounds with T")
    mo.hstack([schedule_T, schedule_rescale], justify="start")
    return schedule_T, schedule_rescale


@app.cell
def _(schedule_T, schedule_rescale):
    schedules = {
        "linear": noise_schedule("linear" if schedule_rescale.value else "linear (fixed bounds)", schedule_T.value),
        "cosine": noise_schedule("cosine", schedule_T.value),
    }
    _T = schedules["cosine"].T
    _shown = np.unique(np.linspace(0, _T - 1, min(_T, 40)).round().astype(int))  # ≤ 40 points a line (smooth curves)
    _x = (_shown + 1) / _T
    _panels = {  # each panel's curve of a schedule; log β on a linear axis keeps the three in one chart
        "ᾱ_t: the share of the data's variance left": lambda s: s.alpha_bars,
        "log₁₀ β_t": lambda s: np.log10(s.betas),
        "log SNR(t) = log ᾱ/(1 − ᾱ)": lambda s: np.log(s.snr),
    }

    def _charts():  # one chart, three panels: one view to send and redraw
        _lines = [(k, i, f(s)[_shown]) for i, f in enumerate(_panels.values()) for k, s in schedules.items()]
        _label = "".join(f"datum.value == {i} ? {lab.vega_text(n)} : " for i, n in enumerate(_panels))
        _chart = (
            alt.Chart(
                plot.data(
                    t=np.tile(_x, len(_lines)),
                    value=np.concatenate([v for *_, v in _lines]),
                    series=np.repeat(np.array([k for k, *_ in _lines], dtype=object), len(_x)),
                    panel=np.repeat([i for _, i, _ in _lines], len(_x)),
                ),
                width=250,
                height=180,
            )
            .mark_line()
            .encode(
                alt.X("t:Q", title="t / T"),
                alt.Y("value:Q", title=None, scale=alt.Scale(zero=False)),
                alt.Color(
                    "series:N",
                    title=None,
                    sort=list(schedules),
                    scale=alt.Scale(domain=list(schedules), range=[plot.color("function"), plot.color("derivative")]),
                    legend=alt.Legend(orient="bottom"),
                ),
                [alt.Tooltip("series:N"), alt.Tooltip("t:Q", format=".3g"), alt.Tooltip("value:Q", format=".4g")],
            )
            .facet(alt.Column("panel:O", title=None, header=alt.Header(labelExpr=_label + "''")))
            .resolve_scale(y="independent")
        )
        return lab.packed_chart(_chart)

    # drawn once for each pair of schedules (their β: an edited schedule function is another key)
    _key = tuple(s.betas.tobytes() for s in schedules.values())
    _chart = lab.remembered(("schedule charts", *_key), _charts)
    _end = " · ".join(f"{k}: ᾱ_T = {s.alpha_bars[-1]:.2g}" for k, s in schedules.items())
    _warn = (
        mo.callout(
            mo.md(
                f"With fixed bounds and T = {_T}, the linear schedule "
                f"ends at ᾱ_T = {schedules['linear'].alpha_bars[-1]:.2f}: the last step "
                "is far from pure noise, so sampling from N(0, I) would start in the "
                "wrong place."
            ),
            kind="warn",
        )
        if schedules["linear"].alpha_bars[-1] > 0.01
        else mo.md("")
    )
    mo.vstack([mo.md(_end), _warn, ui.chart(_chart)])
    return (schedules,)


@app.cell
def _():
    exercise_alpha_bar = exercises.NumberExercise(
        question=r"**Exercise 1.** A schedule keeps $\beta_t = 0.02$ at every step. What is "
        r"$\bar\alpha_t$ after $t = 50$ steps? (Three decimals.)",
        truth=float(diffusion.Schedule.from_betas(np.full(50, 0.02)).alpha_bars[-1]),
        hint="ᾱ is a product: fifty factors α = 1 − β = 0.98.",
        abs_tol=0.0015,
    )
    answer_alpha_bar = ui.answer_box(exercise_alpha_bar, placeholder="ᾱ after 50 steps")
    return answer_alpha_bar, exercise_alpha_bar


@app.cell
def _(answer_alpha_bar, exercise_alpha_bar):
    ui.exercise(exercise_alpha_bar, answer_alpha_bar)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 2. The forward process, in one jump

    Each step is linear in $x_{t-1}$ plus independent Gaussian noise, and linear-Gaussian steps
    compose: $\sqrt{\alpha_2}\big(\sqrt{\alpha_1}\,x_0 + \sqrt{\beta_1}\,\varepsilon_1\big) +
    \sqrt{\beta_2}\,\varepsilon_2$ is $\sqrt{\alpha_1\alpha_2}\,x_0$ plus one Gaussian of variance
    $\alpha_2\beta_1 + \beta_2 = 1 - \alpha_1\alpha_2$ (the variances of independent Gaussians
    add). So $t$ noising steps collapse into one:

    $$
    q(x_t \mid x_0) = \mathcal N\!\big(\sqrt{\bar\alpha_t}\,x_0,\; (1-\bar\alpha_t) I\big),
    \qquad x_t = \sqrt{\bar\alpha_t}\,x_0 + \sqrt{1-\bar\alpha_t}\,\varepsilon,\quad \varepsilon\sim\mathcal N(0, I).
    $$

    Training never runs the chain: it draws a random $t$ and jumps there. Move $t$ to watch a data
    set dissolve (the same $\varepsilon$ for every $t$, so the points drift smoothly). The data is
    standardised, so that its scale matches the noise it ends in. The number of steps $T$ is the
    one chosen in section 1.
    """)
    return


@app.function
def q_sample(x0, t, noise, schedule):
    """Jump from the data to step t in one draw from q(x_t | x_0):
    x_t = √ᾱ_t x_0 + √(1 − ᾱ_t) ε.

    x0, noise: arrays [N, D]; t: one step for every row, or one step per row."""
    t = np.asarray(t).reshape(-1, 1)  # a column: row i is scaled by its own step's coefficients
    x_t = schedule.sqrt_alpha_bars[t] * x0 + schedule.sqrt_one_minus_alpha_bars[t] * noise
    return x_t.astype(x0.dtype)


@app.cell
def _():
    forward_data = mo.ui.dropdown(options=list(lab.DATASETS_2D), value="moons", label="data")
    forward_kind = mo.ui.dropdown(options=["linear", "cosine"], value="linear", label="schedule")
    forward_t = mo.ui.slider(0.0, 1.0, step=0.01, value=0.3, label="t / T", show_value=True)
    mo.hstack([forward_data, forward_kind, forward_t], justify="start")
    return forward_data, forward_kind, forward_t


@app.cell
def _(data_2d, forward_data, forward_schedule, forward_step):
    # the same ε for every t (seed 1), so moving t morphs one picture into the other; 300 a layer
    forward_xt = q_sample(
        data_2d[:300], forward_step, np.random.default_rng(1).standard_normal((300, 2)), forward_schedule
    )
    _ab = forward_schedule.alpha_bars[forward_step]
    _chart = lab.remembered(  # built once per picture: moving t back and forth redraws, not rebuilds
        ("forward", forward_data.value, forward_step, forward_schedule.T, forward_xt.tobytes()),
        lambda: lab.point_chart(  # x, y in hundredths: 0.01 of 8 units, under a pixel
            {"x_0 (data)": (data_2d[:300], "data"), f"x_t, t = {forward_step + 1}": (forward_xt, "model")},
            domain=(-4, 4),
            height=380,
            title=f"{forward_data.value}: the data and its noised version at "
            f"t = {forward_step + 1} of {forward_schedule.T}",
        ),
    )
    mo.vstack(
        [
            mo.md(
                f"ᾱ_t = **{_ab:.3f}** · data factor √ᾱ_t = **{np.sqrt(_ab):.3f}** · noise std "
                f"√(1 − ᾱ_t) = **{np.sqrt(1 - _ab):.3f}** · SNR = **{_ab / (1 - _ab):.3g}**"
            ),
            ui.chart(_chart),
        ]
    )
    return (forward_xt,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **The closed form is the chain.** Start 4000 copies of one point $x_0$ and run the chain one
    step at a time, $x_s = \sqrt{\alpha_s}\,x_{s-1} + \sqrt{\beta_s}\,\varepsilon_s$, up to the
    chosen $t$. Their mean and variance match $\sqrt{\bar\alpha_t}\,x_0$ and $1-\bar\alpha_t$:
    """)
    return


@app.cell
def _(forward_kind, forward_t, schedules):
    forward_schedule = schedules[forward_kind.value]  # the step t shown here and in the figure above
    forward_step = lab.step_at(forward_t.value, forward_schedule.T)
    chain = lab.chain_vs_closed_form([1.5, -1.0], forward_schedule, forward_step, n=4000, seed=2)
    _grid = np.linspace(-4, 4, 81)
    _density = np.exp(-((_grid - chain.closed_mean[0]) ** 2) / (2 * chain.closed_var)) / np.sqrt(
        2 * np.pi * chain.closed_var
    )
    _counts, _edges = np.histogram(chain.samples[:, 0], bins=50, range=(-4, 4), density=True)
    _hist = lab.remembered(
        ("chain", _counts.tobytes(), _density.tobytes()),
        lambda: lab.packed_chart(
            plot.curves(
                None,
                {
                    "chain, step by step (histogram)": (0.5 * (_edges[1:] + _edges[:-1]), _counts),
                    "closed form q(x_t | x_0)": (_grid, _density),
                },
                x_title="first coordinate of x_t",
                y_title="density",
                colors={"chain, step by step (histogram)": "data", "closed form q(x_t | x_0)": "analytic"},
                title="4000 chains from x₀ = (1.5, −1) against the closed form",
            )
        ),
    )
    mo.vstack(
        [
            mo.md(
                "| | mean (coordinate 1, 2) | variance (1, 2) |\n|---|---|---|\n"
                f"| chain, step by step | {chain.mean[0]:.3f}, {chain.mean[1]:.3f} | "
                f"{chain.var[0]:.3f}, {chain.var[1]:.3f} |\n"
                f"| closed form | {chain.closed_mean[0]:.3f}, {chain.closed_mean[1]:.3f} | "
                f"{chain.closed_var:.3f} |"
            ),
            ui.chart(_hist),
        ]
    )
    return chain, forward_schedule, forward_step


@app.cell
def _():
    _one_step = diffusion.Schedule.from_betas([0.64])
    _mean, _var = diffusion.q_mean_var(np.array([2.0]), 0, _one_step)
    exercises_noising = {
        "mean": exercises.NumberExercise(
            question=r"**Exercise 2.** One coordinate of $x_0$ equals $2$ and $\bar\alpha_t = 0.36$. "
            r"What is the mean of that coordinate of $x_t$?",
            truth=float(_mean[0]),
            hint="the mean is the data factor √ᾱ_t times x_0.",
            abs_tol=1e-3,
            placeholder="mean of x_t",
        ),
        "std": exercises.NumberExercise(
            question="**Exercise 3.** And its standard deviation?",
            truth=float(np.sqrt(_var)),
            hint="the variance is 1 − ᾱ_t; take its square root.",
            abs_tol=1e-3,
            placeholder="std of x_t",
        ),
    }
    answers_noising = ui.answer_boxes(exercises_noising)
    return answers_noising, exercises_noising


@app.cell
def _(answers_noising, exercises_noising):
    ui.exercise_list("", exercises_noising, answers_noising)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 3. Learning to denoise: a small DDPM

    A network $\varepsilon_\theta(x_t, t)$ (here an MLP that also receives an embedding of $t$) is
    trained to recognise the noise that was added:

    $$
    \mathcal L(\theta) = \mathbb E_{t,\,x_0,\,\varepsilon}\,
    \big\lVert \varepsilon - \varepsilon_\theta\big(\sqrt{\bar\alpha_t}\,x_0 + \sqrt{1-\bar\alpha_t}\,\varepsilon,\; t\big)\big\rVert^2 .
    $$

    Each training step draws a step $t$ and a noise $\varepsilon$ for every point of a mini-batch,
    jumps there with `q_sample`, and asks the network which noise it was:
    """)
    return


@app.function
def ddpm_loss(model, x0, schedule):
    """The ε-prediction loss, one Monte Carlo draw per row of the batch x0 [N, D]:
    L = mean ‖ε − ε_θ(√ᾱ_t x_0 + √(1 − ᾱ_t) ε, t)‖²,  t ~ U{0, …, T − 1},  ε ~ N(0, I)."""
    rng = engine.random.generator()
    t = rng.integers(0, schedule.T, size=len(x0))
    noise = rng.standard_normal(x0.shape).astype(x0.dtype)
    x_t = q_sample(x0, t, noise, schedule)
    return F.mse_loss(model(engine.Tensor(x_t), t), engine.Tensor(noise))


@app.function
def train_ddpm(model, X, schedule, steps, lr, batch_size=256, on_step=None):
    """Adam on `ddpm_loss` over random mini-batches of X, the learning rate decaying along a
    cosine from lr to lr/100. Returns the loss of every step; stops at a non-finite one."""
    optimizer = Adam(model.parameters(), lr=lr)
    decay = CosineAnnealingLR(optimizer, steps, eta_min=lr / 100)
    losses = []
    for step in range(1, steps + 1):
        batch = X[engine.random.generator().integers(0, len(X), size=batch_size)]
        loss = ddpm_loss(model, batch, schedule)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        decay.step()
        losses.append(loss.item())
        if not np.isfinite(losses[-1]):
            break
        if on_step is not None:
            on_step(step)
    return np.array(losses)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Sampling starts from $x_T \sim \mathcal N(0, I)$ and walks back, removing the predicted noise
    and adding a little fresh noise at every step except the last:

    $$
    x_{t-1} = \frac{1}{\sqrt{\alpha_t}}\Big(x_t - \frac{\beta_t}{\sqrt{1-\bar\alpha_t}}\,
    \varepsilon_\theta(x_t, t)\Big) + \sigma_t z, \qquad
    \sigma_t^2 = \tilde\beta_t = \frac{1-\bar\alpha_{t-1}}{1-\bar\alpha_t}\,\beta_t .
    $$

    The training uses the data set and schedule chosen in section 2, with its own number of steps
    $T$. The section opens on the model these functions trained with the default settings,
    shipped with the course; change a setting, or the code of this section, and train to see
    yours. Quality is measured with the **energy distance** between fresh samples and held-out
    data (0 when the two distributions agree); pure noise and a second draw of the real data
    bracket it.

    **Change this cell:** in `ddpm_step`, leave out the fresh noise (`return mean.astype(x_t.dtype)`
    at every step) and train again. The samples then collapse onto almost a single point, and
    their energy distance becomes worse than pure noise's: without $\sigma_t z$, each step moves
    to the mean of $p(x_{t-1} \mid x_t)$ instead of drawing from it, and step after step the
    means pull every sample to the same place.
    """)
    return


@app.function
def ddpm_step(model, x_t, t, schedule, variance="posterior"):
    """One reverse step from x_t to x_{t−1}, z ~ N(0, I) (none at the last step, t = 0):
    x_{t−1} = (x_t − β_t/√(1 − ᾱ_t) · ε_θ(x_t, t)) / √α_t + σ_t z,
    σ_t² = β̃_t = β_t (1 − ᾱ_{t−1})/(1 − ᾱ_t) ("posterior") or β_t ("beta")."""
    with engine.no_grad():
        eps = model(engine.Tensor(x_t), np.full(len(x_t), t)).numpy()
    mean = (x_t - schedule.betas[t] / schedule.sqrt_one_minus_alpha_bars[t] * eps) / np.sqrt(schedule.alphas[t])
    if t == 0:
        return mean.astype(x_t.dtype)
    sigma2 = schedule.posterior_variance[t] if variance == "posterior" else schedule.betas[t]
    z = engine.random.generator().standard_normal(x_t.shape)
    return (mean + np.sqrt(sigma2) * z).astype(x_t.dtype)


@app.function
def ddpm_sample(model, schedule, n, dim=2, variance="posterior", trajectory=False):
    """Ancestral sampling: x_T ~ N(0, I), then `ddpm_step` for t = T, …, 1. With `trajectory`,
    every state [T + 1, n, dim] (index k: after k reverse steps), else the samples [n, dim]."""
    x = engine.random.generator().standard_normal((n, dim)).astype(np.float32)
    states = [x]
    for t in reversed(range(schedule.T)):
        x = ddpm_step(model, x, t, schedule, variance)
        states.append(x)
    return np.stack(states) if trajectory else x


@app.cell
def _():
    ddpm_steps = mo.ui.slider(100, 8000, step=100, value=2000, label="training steps", show_value=True)
    ddpm_T = mo.ui.dropdown(options={"20": 20, "50": 50, "100": 100, "200": 200}, value="50", label="diffusion steps T")
    ddpm_hidden = mo.ui.dropdown(options={"32": 32, "64": 64, "128": 128}, value="64", label="hidden width")
    ddpm_lr = mo.ui.dropdown(
        options={"1e-3": 1e-3, "3e-3": 3e-3, "1e-2": 1e-2, "3e-2": 3e-2, "1": 1.0}, value="1e-2", label="learning rate"
    )
    ddpm_train = mo.ui.run_button(label="Train the DDPM")
    mo.vstack(
        [
            mo.hstack([ddpm_steps, ddpm_T, ddpm_hidden, ddpm_lr], wrap=True),
            mo.hstack([ddpm_train, mo.md("trains with these settings and the code above")], justify="start"),
        ]
    )
    return ddpm_T, ddpm_hidden, ddpm_lr, ddpm_steps, ddpm_train


@app.cell
def _(data_2d, ddpm_T, ddpm_hidden, ddpm_lr, ddpm_steps, ddpm_train, forward_data, forward_kind):
    ddpm_schedule = noise_schedule(forward_kind.value, ddpm_T.value)
    ddpm_settings = {
        "data": forward_data.value,
        "kind": forward_kind.value,
        "T": ddpm_T.value,
        "steps": ddpm_steps.value,
        "hidden": ddpm_hidden.value,
        "lr": ddpm_lr.value,
    }
    ddpm, ddpm_unfit = None, ""  # None: other settings or other code, not trained yet
    if not ddpm_train.value and lab.is_default(ddpm_settings, lab.DDPM_DEFAULT):
        ddpm, ddpm_unfit = lab.shipped_ddpm(
            noise_schedule, linear_schedule, q_sample, ddpm_loss, train_ddpm, ddpm_step, ddpm_sample
        )
    ddpm_shipped = ddpm is not None
    if ddpm_train.value:
        with mo.status.progress_bar(total=ddpm_steps.value, title="training", remove_on_exit=True) as _bar:
            ddpm = lab.train_ddpm_tracked(
                data_2d,
                ddpm_schedule,
                train_ddpm,
                ddpm_sample,
                steps=ddpm_steps.value,
                hidden=ddpm_hidden.value,
                lr=ddpm_lr.value,
                seed=0,
                on_step=throttled(_bar, ddpm_steps.value),
            )
    trajectory, _shown = None, None
    if ddpm is not None and not ddpm.stopped:
        try:  # 300 samples a chart, as in section 2
            trajectory = lab.run_trajectory(ddpm, ddpm_sample, ddpm_schedule, 300, seed=3)
        except ValueError as _err:
            _shown = ui.problem(_err, "Sampling")
    _shown
    return ddpm, ddpm_schedule, ddpm_shipped, ddpm_unfit, trajectory


@app.cell
def _(ddpm, ddpm_shipped, ddpm_unfit):
    mo.stop(
        ddpm is None,
        mo.md(
            f"*{ddpm_unfit[:1].upper()}{ddpm_unfit[1:]}.*"
            if ddpm_unfit
            else f"*These settings differ from the shipped default model's "
            f"({lab.DDPM_DEFAULT_TEXT}): **Train the DDPM** trains one with yours.*"
        ),
    )
    _window = max(1, len(ddpm.losses) // 50)
    _smooth = np.convolve(ddpm.losses, np.ones(_window) / _window, mode="valid")

    def _draw():
        _every = max(1, len(_smooth) // 200)  # 200 points are enough for a smooth line
        # The denoiser's training loss, a moving average: the curve of this section, written here.
        _loss = (
            alt.Chart(
                plot.data(step=np.arange(len(_smooth))[::_every] + _window, loss=_smooth[::_every]),
                width="container",
                height=260,
                title=f"training loss (moving average of {_window} steps)",
            )
            .mark_line(color=plot.color("train"))
            .encode(
                alt.X("step:Q", title="training step"),
                alt.Y("loss:Q", title="loss ‖ε − ε_θ‖²"),
                [alt.Tooltip("step:Q"), alt.Tooltip("loss:Q", format=".4f")],
            )
        )
        _levels = np.ones(len(ddpm.checkpoints))  # the two references as flat lines: one chart, no layers
        _quality = plot.curves(
            ddpm.checkpoints,
            {
                "model samples": ddpm.quality,
                "pure noise": ddpm.noise_quality * _levels,
                "a second draw of the data": ddpm.floor * _levels,
            },
            x_title="training step",
            y_title="energy distance to held-out data",
            colors={"model samples": "model", "pure noise": "error", "a second draw of the data": "target"},
            log_y=True,
            dashed=("pure noise", "a second draw of the data"),
            title="sample quality (lower is better)",
        )
        _loss, _quality = lab.packed_chart(_loss), lab.packed_chart(_quality)
        return _loss, _quality

    _loss, _quality = lab.remembered(  # built once per model
        (
            "ddpm curves",
            len(ddpm.losses),
            _smooth.tobytes(),
            np.asarray(ddpm.checkpoints).tobytes(),
            np.asarray(ddpm.quality).tobytes(),
            ddpm.noise_quality,
            ddpm.floor,
        ),
        _draw,
    )
    ddpm_final = float(ddpm.quality[-1]) if len(ddpm.quality) else float("nan")
    _source = (
        f"*The default model ({lab.DDPM_DEFAULT_TEXT}), trained by the code above and "
        "shipped with the course: its loss, its quality and the samples below. The button "
        "trains one here with your settings and your code.*"
        if ddpm_shipped
        else "*Trained just now by the code above, with your settings.*"
    )
    mo.vstack(
        [
            mo.callout(mo.md(ddpm.stopped), kind="warn") if ddpm.stopped else mo.md(_source),
            mo.md(
                f"Energy distance after {len(ddpm.losses)} steps: **{ddpm_final:.4f}** · pure "
                f"noise (red line): {ddpm.noise_quality:.4f} · a second draw of the data (green "
                f"line): {ddpm.floor:.4f}"
            ),
            ui.chart_row(_loss, _quality),
        ]
    )
    return (ddpm_final,)


@app.cell
def _(ddpm_T):
    reverse_k = mo.ui.slider(
        0, ddpm_T.value, value=ddpm_T.value, label="reverse steps taken (0: pure noise, T: samples)", show_value=True
    )
    return (reverse_k,)


@app.cell
def _(data_2d, ddpm_schedule, reverse_k, trajectory):
    mo.stop(trajectory is None)
    _k = min(reverse_k.value, len(trajectory) - 1)
    _t = ddpm_schedule.T - _k
    _chart = lab.remembered(
        ("reverse", data_2d[-300:].tobytes(), trajectory[_k].tobytes(), _k, ddpm_schedule.T),
        lambda: lab.point_chart(
            {
                "held-out data": (data_2d[-300:], "data"),
                f"samples after {_k} reverse steps": (trajectory[_k], "model"),
            },
            domain=(-4, 4),
            height=400,
            title=f"after {_k} of {ddpm_schedule.T} reverse steps (now at t = {_t})",
        ),
    )
    mo.vstack([reverse_k, ui.chart(_chart)])
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **What the network learned: a score field.** By Tweedie's formula (section 4) a noise
    prediction is a rescaled score, so the trained denoiser defines a vector field at every step:

    $$
    s_\theta(x, t) = -\frac{\varepsilon_\theta(x, t)}{\sqrt{1-\bar\alpha_t}} \;\approx\; \nabla_x \log q_t(x).
    $$

    For the moons no formula gives $q_t$, but the training points do: noised to step $t$ they are a
    mixture of one Gaussian per point, $\frac1N\sum_i \mathcal N(\sqrt{\bar\alpha_t}\,x_i,
    (1-\bar\alpha_t) I)$, whose score is exact, and a network that drove the loss to its minimum on
    these points would predict exactly that. The arrows below compare the two at step $t$; the
    number is their cosine averaged over the grid with weights $q_t$, so it counts where the noised
    data lies.

    From $t/T = 0.15$ on the two fields point the same way wherever the noised data lies (a mean
    cosine above 0.9). Move $t$ to 0 and they part: there the true field of the 2500 training
    points is a fine-grained pull towards each single point, and the network has learned a smooth
    field around the two moons instead.
    """)
    return


@app.function
def learned_score(model, x, t, schedule):
    """The score a noise predictor implies (Tweedie): s_θ(x, t) = −ε_θ(x, t) / √(1 − ᾱ_t)."""
    with engine.no_grad():
        eps = model(engine.Tensor(x), np.full(len(x), t)).numpy()
    return -eps / schedule.sqrt_one_minus_alpha_bars[t]


@app.cell
def _():
    field_t = mo.ui.slider(0.0, 1.0, step=0.05, value=0.3, label="t / T for the score field", show_value=True)
    return (field_t,)


@app.cell
def _(data_2d, ddpm, ddpm_schedule, field_t):
    mo.stop(ddpm is None or ddpm.stopped)
    field_step = lab.step_at(field_t.value, ddpm_schedule.T)
    field = lab.run_score_field(ddpm, learned_score, data_2d[:-500], ddpm_schedule, field_step)  # its training rows

    def _draw():
        # both fields scaled alike, so that lengths compare; an arrow is capped at the grid's spacing
        _spacing = 6.0 / 14
        _scale = 0.9 * _spacing / max(np.percentile(np.linalg.norm(field.true, axis=1), 95), 1e-12)
        # short names in the data (one per arrow), the legend's long ones from labelExpr
        _names = ("true", "learned")
        _legend = "datum.label == 'true' ? 'true score of the noised training points' : 'learned s_θ = −ε_θ/√(1 − ᾱ_t)'"
        _x, _y, _x2, _y2, _series = [], [], [], [], []
        for _name, _v in zip(_names, (field.true, field.learned)):
            _length = np.linalg.norm(_v, axis=1, keepdims=True) * _scale
            _v = _v * _scale * np.minimum(1.0, _spacing / np.maximum(_length, 1e-12))
            _x.append(field.points[:, 0])
            _y.append(field.points[:, 1])
            _x2.append(field.points[:, 0] + _v[:, 0])
            _y2.append(field.points[:, 1] + _v[:, 1])
            _series += [_name] * len(_v)
        _base = lab.packed_chart(  # each field's arrows as arrays of hundredths: a third of the bytes
            alt.Chart(
                plot.data(
                    x=np.concatenate(_x),
                    y=np.concatenate(_y),
                    x2=np.concatenate(_x2),
                    y2=np.concatenate(_y2),
                    field=np.array(_series),
                ),
                width="container",
                height=400,
                title=f"the score field at t = {field_step + 1} of {ddpm_schedule.T}: arrows end in a dot",
            ),
            per_unit={"x": 100, "y": 100, "x2": 100, "y2": 100},
        )
        _scale_xy = alt.Scale(domain=[-3.3, 3.3])
        _color = alt.Color(
            "field:N",
            title="",
            sort=list(_names),
            legend=alt.Legend(orient="bottom", labelExpr=_legend),
            scale=alt.Scale(domain=list(_names), range=[plot.color("analytic"), plot.color("model")]),
        )
        _arrows = _base.mark_rule(strokeWidth=1.5, opacity=0.8).encode(
            alt.X("x:Q", title="x₁", scale=_scale_xy),
            alt.Y("y:Q", title="x₂", scale=_scale_xy),
            alt.X2("x2:Q"),
            alt.Y2("y2:Q"),
            _color,
        )
        _heads = _base.mark_circle(size=14, opacity=0.9).encode(
            alt.X("x2:Q", scale=_scale_xy), alt.Y("y2:Q", scale=_scale_xy), _color
        )
        return _arrows + _heads

    # built once per field: moving t back to a value it had redraws without building
    _field_chart = lab.remembered(
        ("field", field.points.tobytes(), field.true.tobytes(), field.learned.tobytes(), field_step, ddpm_schedule.T),
        _draw,
    )
    mo.vstack(
        [
            field_t,
            mo.md(
                f"At t = {field_step + 1} of {ddpm_schedule.T}, the two fields agree with a "
                f"q_t-weighted mean cosine of **{field.agreement:.3f}** (1: the same directions "
                "everywhere the noised data lies)."
            ),
            ui.chart(_field_chart),
        ]
    )
    return field, field_step


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Your own data.** Spray points on the canvas (it starts with 300 points of the data set chosen
    in section 2, which is its keyboard path: pick another set there to start over), then train a
    DDPM ($T = 50$, 1500 steps) on three quarters of those points and sample 500 new ones; the
    other quarter is held out, to score the samples on points the model never saw. The canvas spans
    $[-3, 3]^2$, the scale of the $\mathcal N(0, I)$ noise the process ends in. Until you train,
    the chart shows the model of the moons the canvas starts with, shipped with the course.
    """)
    return


@app.cell
def _(forward_data):
    data_2d = lab.toy_data_2d(forward_data.value, n=3000, seed=0)  # section 2's data set, for every section
    draw_canvas = widgets.scatter(
        n_classes=1,
        bounds=((-3.0, 3.0), (-3.0, 3.0)),
        size=(360, 360),
        start=(data_2d[:300], np.zeros(300, dtype=np.int64)),
    )
    draw_train = mo.ui.run_button(label="Train on my drawing")
    mo.vstack([draw_canvas, draw_train])
    return data_2d, draw_canvas, draw_train


@app.cell
def _(draw_canvas, draw_train):
    drawn = widgets.scatter_data(
        draw_canvas.value, bounds=((-3.0, 3.0), (-3.0, 3.0)), min_points=lab.MIN_DRAWN_POINTS, min_classes=1
    )
    drawn_run, _source = None, ""
    if drawn.problem:
        _shown = mo.callout(mo.md(drawn.problem), kind="warn")
    elif draw_train.value:
        with mo.status.progress_bar(total=1500, title="training", remove_on_exit=True) as _bar:
            drawn_run = lab.train_on_points(
                drawn.X,
                noise_schedule("linear", 50),
                train_ddpm,
                ddpm_sample,
                steps=1500,
                seed=0,
                on_step=throttled(_bar, 1500),
            )
        _source = "trained just now by the code above, on your drawing"
    else:  # the canvas as it starts (moons): its model is shipped
        drawn_run, _unfit = lab.shipped_drawing_run(
            drawn.X, noise_schedule, linear_schedule, q_sample, ddpm_loss, train_ddpm, ddpm_step, ddpm_sample
        )
        _source = (
            "the canvas's starting points, trained by the code above and shipped with the "
            "course; draw, then train on your drawing"
        )
        _shown = mo.md(
            f"*{_unfit[:1].upper()}{_unfit[1:]}.*" if _unfit else "*Train on my drawing fits a DDPM to these points.*"
        )
    if drawn_run is not None and drawn_run.stopped:
        _shown = mo.callout(mo.md(drawn_run.stopped), kind="warn")
    elif drawn_run is not None:
        _shown = mo.vstack(
            [
                mo.md(
                    f"{len(drawn.X)} drawn points, {len(drawn.X) - lab.drawing_held_out(len(drawn.X))} "
                    f"trained on ({_source}) · energy distance of the samples to the "
                    f"{lab.drawing_held_out(len(drawn.X))} held out: **{drawn_run.quality[-1]:.4f}** (pure noise: "
                    f"{drawn_run.noise_quality:.4f})"
                ),
                ui.chart(
                    lab.remembered(
                        ("drawing", drawn.X.tobytes(), drawn_run.samples.tobytes()),
                        lambda: lab.point_chart(
                            {
                                "your points": (drawn.X, "data"),
                                "500 samples of the DDPM": (drawn_run.samples, "model"),
                            },
                            domain=(-3, 3),
                            height=360,
                            size=8,
                            title="what the DDPM learned from your drawing",
                        ),
                    )
                ),
            ]
        )
    _shown
    return drawn, drawn_run


@app.cell
def _():
    mix_separation = mo.ui.slider(0.0, 5.0, step=0.25, value=3.0, label="distance between modes", show_value=True)
    mix_std = mo.ui.slider(0.05, 1.0, step=0.05, value=0.3, label="std of each mode", show_value=True)
    mix_weight = mo.ui.slider(0.05, 0.95, step=0.05, value=0.3, label="weight of the left mode", show_value=True)
    mix_T = mo.ui.dropdown(options={"10": 10, "50": 50, "200": 200, "1000": 1000}, value="50", label="steps T")
    mix_variance = mo.ui.dropdown(
        options={"σ²_t = β_t": "beta", "σ²_t = β̃_t (posterior)": "posterior"},
        value="σ²_t = β_t",
        label="reverse-step noise",
    )
    mix_train = mo.ui.run_button(label="Train a 1-D denoiser")
    mix_t = mo.ui.slider(0.0, 1.0, step=0.02, value=0.2, label="t / T for ε*", show_value=True)
    mo.vstack(
        [
            mo.md(r"""
    ## 4. The exact reverse process, in 1-D

    Why does predicting noise work? For a given $x_t$, the best possible prediction in squared
    error is the average noise that could have produced it, and that is the **score** of the
    noised data, rescaled (Tweedie's formula):

    $$
    \varepsilon^*(x_t, t) = \mathbb E[\varepsilon \mid x_t] = -\sqrt{1-\bar\alpha_t}\;\nabla_{x}\log q_t(x_t).
    $$

    For a Gaussian mixture, every $q_t$ is again a mixture (means $\sqrt{\bar\alpha_t}\mu_k$,
    variances $\bar\alpha_t\sigma_k^2 + 1 - \bar\alpha_t$), so $\varepsilon^*$ is known exactly and the
    reverse process can run with it: the best any network could do. Below, a two-component mixture
    in 1-D: the exact reverse process (no training), and a network trained on samples of it.
    """),
            mo.hstack([mix_separation, mix_std, mix_weight], wrap=True),
            mo.hstack([mix_T, mix_variance, mix_train], justify="start"),
        ]
    )
    return (mix_T, mix_separation, mix_std, mix_t, mix_train, mix_variance, mix_weight)


@app.cell
def _(mix_T, mix_separation, mix_std, mix_variance, mix_weight):
    mixture = lab.mixture_1d(mix_separation.value, mix_std.value, mix_weight.value)
    mix_schedule = noise_schedule("linear", mix_T.value)
    # one run of the exact reverse process: its samples here, its states for the coarse-to-fine chart
    exact_study = lab.exact_reverse_study_1d(
        noise_schedule,
        mix_separation.value,
        mix_std.value,
        mix_weight.value,
        mix_T.value,
        mix_variance.value,
        n=4000,
        seed=0,
    )
    exact_samples = exact_study.samples
    return exact_samples, exact_study, mix_schedule, mixture


@app.cell
def _(exact_samples, mix_T, mix_schedule, mix_separation, mix_std, mix_train, mix_variance, mix_weight, mixture):
    _settings = {
        "separation": mix_separation.value,
        "std": mix_std.value,
        "weight_left": mix_weight.value,
        "T": mix_T.value,
        "variance": mix_variance.value,
        "steps": 1500,
    }
    learned_1d, learned_1d_unfit = None, ""
    if not mix_train.value and lab.is_default(_settings, lab.MIX_DEFAULT):
        learned_1d, learned_1d_unfit = lab.shipped_denoiser_1d(
            noise_schedule, linear_schedule, q_sample, ddpm_loss, train_ddpm, ddpm_step, ddpm_sample
        )
    learned_1d_shipped = learned_1d is not None
    if mix_train.value:
        with mo.status.progress_bar(total=1500, title="training", remove_on_exit=True) as _bar:
            learned_1d = lab.train_denoiser_1d(
                mixture,
                mix_schedule,
                train_ddpm,
                ddpm_sample,
                steps=1500,
                seed=0,
                variance=mix_variance.value,
                on_step=throttled(_bar, 1500),
            )
    # its samples next to the exact reverse process's and the data's density
    _grid = np.linspace(-4, 4, 81)
    _edges = np.linspace(-4, 4, 41)
    _centres = 0.5 * (_edges[1:] + _edges[:-1])
    _hists = {
        "true density": (_grid, mixture.prob(_grid)),
        "exact reverse process": (_centres, np.histogram(exact_samples, _edges, density=True)[0]),
    }
    if learned_1d is not None:
        _hists["learned ε_θ"] = (_centres, np.histogram(learned_1d.samples, _edges, density=True)[0])
    _samples = lab.remembered(  # built once per set of histograms
        ("mixture samples", *(v.tobytes() for _xy in _hists.values() for v in _xy)),
        lambda: lab.packed_chart(
            plot.curves(
                None,
                _hists,
                x_title="x",
                y_title="density",
                colors={"true density": "target", "exact reverse process": "analytic", "learned ε_θ": "model"},
                title="samples of the reverse process (histograms) and the data density",
            )
        ),
    )
    mix_moments = {
        "data (exact)": lab.mixture_moments(mixture),
        "exact reverse process": lab.sample_moments(exact_samples),
    }
    if learned_1d is not None:
        mix_moments["learned reverse process"] = lab.sample_moments(learned_1d.samples)
    _rows = ["| | mean | variance | share left of 0 |", "|---|---|---|---|"] + [
        f"| {_name} | {_m.mean:.3f} | {_m.var:.3f} | {_m.share_left:.1%} |" for _name, _m in mix_moments.items()
    ]
    mo.vstack(
        [
            mo.md(
                "\n".join(_rows)
                + "\n\n"
                + (
                    "*The learned ε_θ of the default mixture, trained (1500 steps) by the code of section 3 "
                    "and shipped with the course; the button trains one on the mixture you set.*"
                    if learned_1d_shipped
                    else "*Learned ε_θ trained just now by the code of section 3, on this mixture.*"
                    if learned_1d is not None
                    else f"*{learned_1d_unfit[:1].upper()}{learned_1d_unfit[1:]}.*"
                    if learned_1d_unfit
                    else "*Train a 1-D denoiser to compare a network trained on samples of this mixture.*"
                )
            ),
            ui.chart(_samples),
        ]
    )
    return learned_1d, learned_1d_shipped, learned_1d_unfit, mix_moments


@app.cell
def _(learned_1d, mix_schedule, mix_t, mixture):
    mix_step = lab.step_at(mix_t.value, mix_schedule.T)
    mix_curves = lab.epsilon_curves(
        mixture,
        mix_schedule,
        mix_step,
        grid=np.linspace(-4, 4, 101),
        model=None if learned_1d is None else learned_1d.model,
    )

    def _draw():  # one chart, two panels (the noise predictions, the density they act on): one view
        _lines = {"ε*(x, t), exact": (0, mix_curves.exact), "q_t(x)": (1, mix_curves.density)}
        if mix_curves.learned is not None:
            _lines["ε_θ(x, t), learned"] = (0, mix_curves.learned)
        _names, _n = list(_lines), len(mix_curves.x)
        _colors = {"ε*(x, t), exact": "analytic", "q_t(x)": "data", "ε_θ(x, t), learned": "model"}
        _titles = (
            f"the noise prediction at t = {mix_step + 1} of {mix_schedule.T}",
            f"the noised density q_t at t = {mix_step + 1}",
        )
        _chart = (
            alt.Chart(
                plot.data(
                    x=np.tile(mix_curves.x, len(_lines)),
                    y=np.concatenate([v for _, v in _lines.values()]),
                    series=np.repeat(np.array(_names, dtype=object), _n),
                    panel=np.repeat([p for p, _ in _lines.values()], _n),
                ),
                width=400,
                height=220,
            )
            .mark_line()
            .encode(
                alt.X("x:Q", title="x_t"),
                alt.Y("y:Q", title=None),
                alt.Color(
                    "series:N",
                    title=None,
                    sort=_names,
                    scale=alt.Scale(domain=_names, range=[plot.color(_colors[k]) for k in _names]),
                    legend=alt.Legend(orient="bottom"),
                ),
                [alt.Tooltip("series:N"), alt.Tooltip("x:Q", format=".3g"), alt.Tooltip("y:Q", format=".4g")],
            )
            .facet(
                alt.Column(
                    "panel:O",
                    title=None,
                    header=alt.Header(
                        labelExpr=f"datum.value == 0 ? {lab.vega_text(_titles[0])} : {lab.vega_text(_titles[1])}"
                    ),
                )
            )
            .resolve_scale(y="independent")
        )
        return lab.packed_chart(_chart)

    _eps_charts = lab.remembered(  # built once per ε curves: t moved back redraws, not rebuilds
        (
            "mixture eps",
            mix_step,
            mix_schedule.T,
            *(np.asarray(v).tobytes() for v in (mix_curves.x, mix_curves.exact, mix_curves.density)),
            None if mix_curves.learned is None else mix_curves.learned.tobytes(),
        ),
        _draw,
    )
    mo.vstack([mix_t, ui.chart(_eps_charts)])
    return mix_curves, mix_step


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Even the exact reverse process is not perfect: it takes $T$ finite steps, each a Gaussian
    of variance $\sigma_t^2$. For standard-normal data the right choice is $\sigma_t^2 = \beta_t$
    (try separation 0, std 1), while $\tilde\beta_t$ suits data concentrated on points; with
    $T = 1000$ both become exact. Try $T = 10$.

    Near $t = 0$ (move $t/T$ to 0) the exact $\varepsilon^*$ is a **sawtooth**: inside each mode it
    rises in a straight line, $\varepsilon^* \approx \sqrt{1-\bar\alpha_t}\,(x - \sqrt{\bar\alpha_t}\mu_k)/
    (\bar\alpha_t\sigma^2 + 1 - \bar\alpha_t)$, and in the valley between the modes it drops steeply
    as the responsibility passes from one mode to the other. Late in the process (large $t$) the
    noised density is one broad bump and $\varepsilon^*$ is almost a straight line.

    **Coarse to fine, with no network at all.** The exact reverse process already builds the
    coarse structure first: the large-$t$ steps, where $q_t$ is one bump slowly splitting in two,
    settle which mode a sample joins; the small-$t$ steps only place it inside its mode. The chart
    follows the 4000 samples of the exact reverse process above and counts, after each step, those
    already on the side of the valley where they end.
    """)
    return


@app.cell
def _(exact_study):
    commitment = exact_study.commitment
    _k = np.unique(np.linspace(0, len(commitment) - 1, 51).round().astype(int))  # ≤ 51 points
    commitment_half = float(commitment[len(commitment) // 2])
    commitment_late = float(commitment[int(0.9 * (len(commitment) - 1))])
    _chart = lab.remembered(
        ("commitment", commitment.tobytes()),
        lambda: lab.packed_chart(
            plot.curves(
                _k / (len(commitment) - 1),
                {"on their final side": commitment[_k]},
                x_title="share of the reverse steps taken",
                y_title="share of samples",
                colors={"on their final side": "analytic"},
                y_domain=(0, 1),
                height=220,
                title="the exact reverse process: when each sample picks its mode",
            )
        ),
    )
    mo.vstack(
        [
            mo.md(
                f"After half the reverse steps **{commitment_half:.0%}** of the samples are on the "
                f"side of the valley where they end; after 90 % of them, **{commitment_late:.0%}**."
            ),
            ui.chart(_chart),
        ]
    )
    return commitment, commitment_half, commitment_late


@app.cell
def _():
    exercise_sawtooth = exercises.ChoiceExercise(
        question="**Exercise 4.** Near t = 0, what does the exact ε*(x, t) of a two-mode mixture "
        "do in the valley between the modes?",
        options={"it rises steeply": "up", "it drops steeply": "down", "it is flat": "flat"},
        truth="down",
        hint="inside a mode ε* grows with x − μ_k; crossing the valley, x switches from being far "
        "right of the left mode to far left of the right one.",
        explanation="The responsibility passes from one mode to the other, so the predicted noise "
        "jumps from large positive to large negative: the tooth of the saw.",
    )
    answer_sawtooth = ui.answer_box(exercise_sawtooth)
    return answer_sawtooth, exercise_sawtooth


@app.cell
def _(answer_sawtooth, exercise_sawtooth):
    ui.exercise(exercise_sawtooth, answer_sawtooth)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 5. Fewer steps: DDIM

    Ancestral sampling takes all $T$ steps. Two ways to take fewer, on evenly spaced steps
    $\tau_1 < \dots < \tau_S$ of the same schedule:

    - **respaced DDPM** (Nichol & Dhariwal 2021) keeps the ancestral update with
      $\beta'_i = 1 - \bar\alpha_{\tau_i}/\bar\alpha_{\tau_{i-1}}$, so that each visited step has its
      original marginal $q(x_{\tau_i}\mid x_0)$, and adds fresh noise at each step;
    - **DDIM** (Song, Meng & Ermon 2021, with $\eta = 0$) predicts the clean point and moves it to
      the next noise level along the same predicted noise, adding none:

    $$
    \hat x_0 = \frac{x_{\tau_i} - \sqrt{1-\bar\alpha_{\tau_i}}\,\hat\varepsilon}{\sqrt{\bar\alpha_{\tau_i}}},
    \qquad
    x_{\tau_{i-1}} = \sqrt{\bar\alpha_{\tau_{i-1}}}\,\hat x_0 + \sqrt{1-\bar\alpha_{\tau_{i-1}}}\,\hat\varepsilon .
    $$

    Respaced DDPM needs no new code: `ddpm_sample` runs on the schedule of the visited steps.
    Once $x_T$ is drawn, DDIM is deterministic. To judge the samplers alone, both use the exact
    $\varepsilon^*$ of eight 2-D Gaussians on a circle (a $T = 1000$ linear schedule), so no error
    comes from a network; both start from the same $x_T$. Quality is the energy distance to fresh
    data; a second draw of the data gives the floor.
    """)
    return


@app.function
def ddim_step(model, x, t, t_next, schedule, eta=0.0):
    """One DDIM step from step t to the earlier step t_next (−1: the data, ᾱ = 1), z ~ N(0, I):
    x̂_0 = (x_t − √(1 − ᾱ_t) ε̂) / √ᾱ_t,
    x_{t_next} = √ᾱ_{t_next} x̂_0 + √(1 − ᾱ_{t_next} − σ²) ε̂ + σ z,
    σ = η √((1 − ᾱ_{t_next})/(1 − ᾱ_t)) √(1 − ᾱ_t/ᾱ_{t_next}): η = 0 adds no noise."""
    with engine.no_grad():
        eps = model(engine.Tensor(x), np.full(len(x), t)).numpy().astype(np.float64)
    ab = schedule.alpha_bars[t]
    ab_next = schedule.alpha_bars[t_next] if t_next >= 0 else 1.0
    x0 = (x - np.sqrt(1 - ab) * eps) / np.sqrt(ab)
    sigma = eta * np.sqrt((1 - ab_next) / (1 - ab) * (1 - ab / ab_next))
    x_next = np.sqrt(ab_next) * x0 + np.sqrt(1 - ab_next - sigma**2) * eps
    if sigma > 0:
        x_next = x_next + sigma * engine.random.generator().standard_normal(x.shape)
    return x_next.astype(np.float32)


@app.function
def ddim_sample(model, schedule, steps, n, dim=2, eta=0.0):
    """DDIM from x_T ~ N(0, I) through `steps` evenly spaced steps τ_S > … > τ_1 of the schedule.
    With η = 0 no noise is added after x_T, so the samples are a function of x_T."""
    taus = lab.sampling_steps(schedule, steps)
    x = engine.random.generator().standard_normal((n, dim)).astype(np.float32)
    for i in reversed(range(len(taus))):
        x = ddim_step(model, x, taus[i], taus[i - 1] if i > 0 else -1, schedule, eta)
    return x


@app.cell
def _():
    sampler_steps = mo.ui.slider(
        steps=list(lab.SAMPLER_STEP_COUNTS), value=10, label="sampling steps S", show_value=True
    )
    sampler_compare = mo.ui.run_button(label="Sample at every step count")
    mo.hstack([sampler_steps, sampler_compare], justify="start")
    return sampler_compare, sampler_steps


@app.cell
def _(sampler_compare):
    sampler_mixture = lab.ring_mixture()
    sampler_schedule = noise_schedule("linear", 1000)
    sampler_data = sampler_mixture.sample(1000, seed=100)[0]
    sampler_floors = lab.sampler_floor_range()  # ten other draws of the data against the same held-out draw
    sampler_gallery, sampler_unfit = None, ""  # every slider stop, drawn ahead of time
    sampler_spread, sampler_etas = None, None  # five seeds, and DDIM's η from 0 to 1
    if not sampler_compare.value:
        sampler_gallery, sampler_unfit = lab.shipped_sampler_gallery(
            noise_schedule, linear_schedule, ddpm_step, ddpm_sample, ddim_step, ddim_sample
        )
        sampler_spread, sampler_etas, _ = lab.shipped_sampler_spread(
            noise_schedule, linear_schedule, ddpm_step, ddpm_sample, ddim_step, ddim_sample
        )
    else:
        _counts = len(lab.SAMPLER_STEP_COUNTS)
        _total = _counts + 2 * lab.SPREAD_SEEDS
        with mo.status.progress_bar(total=_total, title="sampling", remove_on_exit=True) as _bar:
            _tick = throttled(_bar, _total)
            sampler_gallery = lab.sampler_gallery(
                sampler_mixture, sampler_schedule, ddpm_sample, ddim_sample, on_step=_tick
            )
            sampler_spread = lab.sampler_spread(
                sampler_mixture, sampler_schedule, ddpm_sample, ddim_sample, on_step=lambda _k: _tick(_counts + _k)
            )
            sampler_etas = lab.eta_sweep(
                sampler_mixture,
                sampler_schedule,
                ddim_sample,
                on_step=lambda _k: _tick(_counts + lab.SPREAD_SEEDS + _k),
            )
    return sampler_data, sampler_etas, sampler_floors, sampler_gallery, sampler_spread, sampler_unfit


@app.cell
def _(sampler_compare, sampler_data, sampler_floors, sampler_gallery, sampler_steps, sampler_unfit):
    mo.stop(sampler_gallery is None, mo.md(f"*{sampler_unfit[:1].upper()}{sampler_unfit[1:]}.*"))
    _row = sampler_gallery.at(sampler_steps.value)
    sampler_runs = {"DDPM (respaced)": sampler_gallery.ddpm_samples[_row], "DDIM": sampler_gallery.ddim_samples[_row]}
    sampler_scores = {"DDPM (respaced)": float(sampler_gallery.ddpm[_row]), "DDIM": float(sampler_gallery.ddim[_row])}
    sampler_table = sampler_gallery.table((10, 50, 1000))  # the table below the charts
    _source = "" if sampler_compare.value else "*The button draws them again here and gets the same numbers.*"
    _rows = ["| steps | DDPM (respaced) | DDIM |", "|---|---|---|"] + [
        f"| {_s} | {_a:.4f} | {_b:.4f} |"
        for _s, _a, _b in zip(sampler_table.steps, sampler_table.ddpm, sampler_table.ddim)
    ]
    # 300 points a layer: two charts that every move of the slider sends again
    _charts = [
        lab.point_chart(
            {"data": (sampler_data[:300], "data"), _k: (_x[:300], "model")},
            domain=(-3, 3),
            height=300,
            size=8,
            title=f"{_k}, {sampler_steps.value} steps: energy distance {sampler_scores[_k]:.4f}",
        )
        for _k, _x in sampler_runs.items()
    ]
    mo.vstack(
        [
            mo.md(
                f"{sampler_steps.value} steps, energy distance to the data: "
                + " · ".join(f"{_k} **{_v:.4f}**" for _k, _v in sampler_scores.items())
            ),
            ui.chart_row(*_charts),
            mo.md(
                (
                    "*Drawn just now by the code above, "
                    if sampler_compare.value
                    else "*Drawn by the code above and shipped with the course, "
                )
                + "for every step count of the slider (1000 samples each, seed 0): the scores "
                "use all 1000 samples, the charts show 300 of them and 300 data points.*"
            ),
            mo.md(
                "\n".join(_rows) + f"\n\nA second draw of the data scores {sampler_table.floor:.4f}; "
                f"ten other draws score from {sampler_floors[0]:.4f} to {sampler_floors[1]:.4f}. " + _source
            ),
        ]
    )
    return sampler_runs, sampler_scores, sampler_table


@app.cell
def _(sampler_floors, sampler_spread):
    mo.stop(sampler_spread is None)
    spread_n = len(sampler_spread.seeds)
    spread_lower = sampler_spread.ddim_lower()
    spread_gaps = sampler_spread.ddpm - sampler_spread.ddim  # [seeds, steps]: DDIM's lead, per seed
    _rows = [
        f"| steps | DDPM (respaced), {spread_n} seeds | DDIM, {spread_n} seeds | DDIM lower | DDIM's lead |",
        "|---|---|---|---|---|",
    ] + [
        f"| {_s} | {sampler_spread.ddpm[:, _i].min():.4f} to {sampler_spread.ddpm[:, _i].max():.4f} | "
        f"{sampler_spread.ddim[:, _i].min():.4f} to {sampler_spread.ddim[:, _i].max():.4f} | "
        f"{spread_lower[_i]} of {spread_n} | {spread_gaps[:, _i].min():+.4f} to {spread_gaps[:, _i].max():+.4f} |"
        for _i, _s in enumerate(sampler_spread.steps)
    ]
    mo.md(
        f"**Over {spread_n} seeds.** The table above is one seed. Each seed draws its own $x_T$, its "
        "own noise and its own 1000 data points to score against (seed 0 is the table above); "
        "DDIM's lead is DDPM's score minus DDIM's, seed by seed, from the same $x_T$. A second "
        f"draw of the data scores from {sampler_spread.floor.min():.4f} to "
        f"{sampler_spread.floor.max():.4f} over these seeds, and from {sampler_floors[0]:.4f} to "
        f"{sampler_floors[1]:.4f} over the ten draws above: a spread of "
        f"{sampler_floors[1] - sampler_floors[0]:.4f}.\n\n" + "\n".join(_rows)
    )
    return spread_gaps, spread_lower, spread_n


@app.cell
def _():
    exercise_ddim = exercises.NumberExercise(
        question="**Exercise 5.** DDIM with S = 20 steps on a T = 1000 schedule: how many times is "
        "the network evaluated per sample?",
        truth=len(lab.sampling_steps(noise_schedule("linear", 1000), 20)),
        hint="one prediction ε̂ per visited step τ_i.",
        explanation="Fifty times fewer than ancestral sampling on all 1000 steps.",
    )
    answer_ddim = ui.answer_box(exercise_ddim, placeholder="evaluations")
    mo.md(r"""
    With 5 steps DDIM lands closer to the data than respaced DDPM for every seed, by far more
    than the floor's spread: each ancestral step adds fresh noise, and with few, large steps the
    one prediction per step cannot remove all of it again. With 10 steps DDIM is still lower for
    most seeds, but the two ranges overlap: one seed's table can show a clear lead or none. From
    50 steps on, every lead, either way, is smaller than the spread of the floor itself: ties.

    **Why DDPM can score worse with 1000 steps than with 50.** Each score is one draw of 1000
    samples against one draw of 1000 data points, and so is itself random, as the floor's range
    shows. Ancestral sampling adds fresh noise at every step, so each step count gives a new
    draw: seed 0's 1000 steps score worse than its 50, while at other seeds 1000 steps score better.
    DDIM adds no noise after $x_T$; as its steps shrink it follows one deterministic path from each
    $x_T$ (the probability-flow ODE), and from 50 steps on its score hardly moves.
    """)
    return answer_ddim, exercise_ddim


@app.cell
def _(answer_ddim, exercise_ddim):
    ui.exercise(exercise_ddim, answer_ddim)
    return


@app.cell(hide_code=True)
def _():
    mo.md(
        r"""
    **From DDIM to DDPM: η.** The two samplers are the ends of one family. Song et al. keep the
    marginals $q(x_\tau \mid x_0)$ of the visited steps and choose how much of the step's
    variance is fresh noise:

    $$
    x_{\tau_{i-1}} = \sqrt{\bar\alpha_{\tau_{i-1}}}\,\hat x_0 + \sqrt{1-\bar\alpha_{\tau_{i-1}}-\sigma^2}\;\hat\varepsilon + \sigma z,
    \qquad
    \sigma = \eta\,\sqrt{\frac{1-\bar\alpha_{\tau_{i-1}}}{1-\bar\alpha_{\tau_i}}}\,\sqrt{1-\frac{\bar\alpha_{\tau_i}}{\bar\alpha_{\tau_{i-1}}}} .
    $$

    $\eta = 0$ is DDIM. At $\eta = 1$, $\sigma^2$ is the posterior variance $\tilde\beta$ of the
    respaced schedule and the step is the respaced DDPM step (its mean is the same
    $\hat x_0$-and-$\hat\varepsilon$ combination, written the other way), so with the same $x_T$ and
    the same draws it scores what the DDPM column scores. `ddim_step` above takes `eta`; here it
    runs with {steps} steps, from each seed's $x_T$.
    """.replace("{steps}", str(lab.ETA_STEPS))
    )
    return


@app.cell
def _():
    sampler_eta = mo.ui.slider(steps=list(lab.ETAS), value=0.0, label="η (0: DDIM, 1: DDPM)", show_value=True)
    return (sampler_eta,)


@app.cell
def _(sampler_etas, sampler_floors):
    mo.stop(sampler_etas is None)
    eta_mean = sampler_etas.scores.mean(axis=0)  # per η, over the seeds
    _levels = np.ones(len(sampler_etas.etas))
    eta_curve = plot.curves(
        sampler_etas.etas,
        {
            "seed 0": sampler_etas.scores[0],
            f"mean of {len(sampler_etas.scores)} seeds": eta_mean,
            "a second draw of the data (largest of ten)": sampler_floors[1] * _levels,
        },
        x_title="η",
        y_title="energy distance to the data",
        colors={
            "seed 0": "model",
            f"mean of {len(sampler_etas.scores)} seeds": "function",
            "a second draw of the data (largest of ten)": "target",
        },
        dashed=("a second draw of the data (largest of ten)",),
        height=260,
        title=f"DDIM with η, {sampler_etas.steps} steps: fresh noise costs accuracy",
    )
    return eta_curve, eta_mean


@app.cell
def _(eta_curve, eta_mean, sampler_data, sampler_eta, sampler_etas):
    mo.stop(sampler_etas is None)
    _row = int(np.flatnonzero(np.isclose(sampler_etas.etas, sampler_eta.value))[0])
    _x = sampler_etas.samples[_row]
    _points = lab.point_chart(
        {"data": (sampler_data[:300], "data"), f"η = {sampler_eta.value:g}": (_x, "model")},
        domain=(-3, 3),
        height=300,
        size=8,
        title=f"η = {sampler_eta.value:g}, seed 0: energy distance {sampler_etas.scores[0, _row]:.4f}",
    )
    mo.vstack(
        [
            sampler_eta,
            ui.chart_row(_points, eta_curve),
            mo.md(
                f"At η = {sampler_eta.value:g} the {len(sampler_etas.scores)} seeds score "
                f"{sampler_etas.scores[:, _row].min():.4f} to {sampler_etas.scores[:, _row].max():.4f} "
                f"(mean {eta_mean[_row]:.4f})."
            ),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **The paths themselves.** Follow twelve samples from the same $x_T$ through the 10 steps, with
    the exact $\varepsilon^*$ of the ring: DDIM ($\eta = 0$) on the left, DDPM ($\eta = 1$) on the
    right. With no fresh noise, DDIM's steps follow the probability-flow ODE, one smooth path from
    each $x_T$ to its mode; DDPM's jump about with the noise each step adds. The crosses are the
    clean point $\hat x_0$ each step predicts on the way: early ones sit near the middle of the
    ring (the average of the modes a still-noisy point could become), later ones on a mode.
    """)
    return


@app.function
def ddim_path(model, schedule, steps, x_T, eta=0.0):
    """`ddim_sample` from a given x_T, keeping every state x_τ [S + 1, n, dim] and the clean
    point each step predicts, x̂_0 = (x_τ − √(1 − ᾱ_τ) ε̂) / √ᾱ_τ [S, n, dim]."""
    taus = lab.sampling_steps(schedule, steps)
    x, states, predictions = x_T, [x_T], []
    for i in reversed(range(len(taus))):
        with engine.no_grad():
            eps = model(engine.Tensor(x), np.full(len(x), taus[i])).numpy().astype(np.float64)
        ab = schedule.alpha_bars[taus[i]]
        predictions.append((x - np.sqrt(1 - ab) * eps) / np.sqrt(ab))
        x = ddim_step(model, x, taus[i], taus[i - 1] if i > 0 else -1, schedule, eta)
        states.append(x)
    return np.stack(states), np.stack(predictions)


@app.cell
def _():
    _schedule = noise_schedule("linear", 1000)  # section 5's schedule and ring
    _model = lab.ExactEpsilon(lab.ring_mixture(), _schedule)
    _x_T = np.random.default_rng(4).standard_normal((12, 2)).astype(np.float32)  # the same x_T for both
    sampler_paths = {}
    for _eta in (0.0, 1.0):
        with engine.random.fork_rng(4):  # the same fresh noise at every run
            sampler_paths[_eta] = ddim_path(_model, _schedule, lab.ETA_STEPS, _x_T, _eta)
    path_lengths = {
        _eta: float(np.linalg.norm(np.diff(_s, axis=0), axis=2).sum(0).mean())
        for _eta, (_s, _) in sampler_paths.items()
    }
    _scale = alt.Scale(domain=[-3, 3])
    _charts = []
    for _eta, (_states, _x0) in sampler_paths.items():
        _k = np.arange(len(_states))
        _rows = plot.data(
            x=_states[:, :, 0].T.ravel(),
            y=_states[:, :, 1].T.ravel(),
            path=np.repeat(np.arange(_states.shape[1]), len(_k)),
            order=np.tile(_k, _states.shape[1]),
        )
        _preds = plot.data(
            x=_x0[:, :, 0].ravel(), y=_x0[:, :, 1].ravel(), step=np.repeat(np.arange(1, len(_x0) + 1), _x0.shape[1])
        )
        _lines = (
            alt.Chart(_rows)
            .mark_line(point=alt.OverlayMarkDef(size=12), strokeWidth=1, color=plot.color("model"))
            .encode(
                alt.X("x:Q", title="x₁", scale=_scale),
                alt.Y("y:Q", title="x₂", scale=_scale),
                alt.Detail("path:N"),
                alt.Order("order:Q"),
            )
        )
        _crosses = (
            alt.Chart(_preds)
            .mark_point(shape="cross", size=30, color=plot.color("target"), clip=True)
            .encode(
                alt.X("x:Q", scale=_scale),
                alt.Y("y:Q", scale=_scale),
                alt.Opacity("step:Q", legend=None),
                [
                    alt.Tooltip("step:Q", title="step"),
                    alt.Tooltip("x:Q", format=".3g"),
                    alt.Tooltip("y:Q", format=".3g"),
                ],
            )
        )
        _name = "DDIM (η = 0)" if _eta == 0 else "DDPM (η = 1)"
        _charts.append(
            ui.chart(
                (_lines + _crosses).properties(
                    width="container",
                    height=300,
                    title=f"{_name}: mean path length {path_lengths[_eta]:.2f}; crosses x̂₀, darker later",
                )
            )
        )
    mo.vstack(
        [
            mo.hstack(_charts, widths="equal"),
            mo.md(
                f"A DDIM path is **{path_lengths[0.0]:.2f}** long on average, a DDPM path "
                f"**{path_lengths[1.0]:.2f}**: the noise DDPM adds and then removes again is most of "
                "its travel."
            ),
        ]
    )
    return path_lengths, sampler_paths


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 6. Classifier-free guidance

    To sample one class of a labelled data set, train $\varepsilon_\theta(x_t, t, y)$ with the label
    as an extra input, and replace it by a null label $\varnothing$ on a random 20 % of each batch
    (Ho & Salimans 2022): one network then predicts the noise with and without the label.

    Sampling extrapolates from the unconditional prediction towards the conditional one with a
    **guidance scale** $w \ge 0$:

    $$
    \tilde\varepsilon(x_t, t, y) = (1 + w)\,\varepsilon_\theta(x_t, t, y) - w\,\varepsilon_\theta(x_t, t, \varnothing).
    $$

    Since $\varepsilon \propto -\nabla\log q_t$, this is the score of $q_t(x\mid y)\,q_t(y\mid x)^{w}$: the
    label's likelihood raised to a power. It pushes samples to where the label is most certain,
    away from the other classes, not to where the class is most typical. On the two moons
    ($T = 50$), **fidelity** is the share of samples whose nearest training point carries the
    requested label; **spread** is the samples' total variance over that moon's own; **mean y**
    is the average height of the samples shown (the upper moon spans y from −0.7 to 1.7, the
    lower one from −1.8 to 0.7).

    **Change this cell:** in `train_conditional`, never drop the label (`p_drop=0.0`) and train
    again. The network then never learns $\varepsilon_\theta(x_t, t, \varnothing)$, and guidance
    extrapolates away from a prediction that means nothing: at $w = 0$ (the conditional prediction
    alone) the samples are as before, but as $w$ grows they are pushed off the moons, and at
    $w = 8$ their mean lies more than 4 units from the origin, where the data ends within about 2.
    """)
    return


@app.function
def conditional_denoiser(dim, n_classes, T, hidden=128):
    """ε_θ(x_t, t, y): section 3's denoiser with the label y added to its first layer through a
    learned vector per class (a linear map of the one-hot label; label n_classes is ∅):
    h = SiLU(W_x x + W_t emb(t) + W_y onehot(y) + b), then the denoiser's other layers."""

    class ConditionalDenoiser(diffusion.Denoiser):
        def __init__(self):
            super().__init__(dim, hidden, T=T)
            self.n_classes = n_classes
            self.label = engine.nn.Linear(n_classes + 1, hidden, bias=False)

        def forward(self, x, t, y=None):
            y = np.full(len(x), self.n_classes) if y is None else np.asarray(y)
            onehot = np.eye(self.n_classes + 1, dtype=np.float32)[y]
            embedding = diffusion.timestep_embedding(np.asarray(t) * (1000.0 / self.T), self.time_embedding_dim)
            h = F.silu(self.input(x) + self.time(engine.Tensor(embedding)) + self.label(engine.Tensor(onehot)))
            for layer in self.hidden:
                h = F.silu(layer(h))
            return self.output(h)

    return ConditionalDenoiser()


@app.function
def train_conditional(model, X, y, schedule, steps, p_drop=0.2, lr=3e-3, batch_size=256, on_step=None):
    """`train_ddpm` with the label as an input, replaced by ∅ on a random share p_drop of each
    batch: L = mean ‖ε − ε_θ(x_t, t, y or ∅)‖², so one network learns both predictions."""
    optimizer = Adam(model.parameters(), lr=lr)
    decay = CosineAnnealingLR(optimizer, steps, eta_min=lr / 100)
    rng = engine.random.generator()
    losses = []
    for step in range(1, steps + 1):
        rows = rng.integers(0, len(X), size=batch_size)
        t = rng.integers(0, schedule.T, size=batch_size)
        noise = rng.standard_normal((batch_size, X.shape[1])).astype(np.float32)
        labels = np.where(rng.random(batch_size) < p_drop, model.n_classes, y[rows])
        x_t = q_sample(X[rows], t, noise, schedule)
        loss = F.mse_loss(model(engine.Tensor(x_t), t, labels), engine.Tensor(noise))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        decay.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step)
    return np.array(losses)


@app.function
def guided_epsilon(model, x, t, label, w):
    """Classifier-free guidance: ε̃(x_t, t, y) = (1 + w) ε_θ(x_t, t, y) − w ε_θ(x_t, t, ∅)."""
    with engine.no_grad():
        conditional = model(x, t, np.full(len(t), label)).numpy()
        unconditional = model(x, t, None).numpy()
    return engine.Tensor((1 + w) * conditional - w * unconditional)


@app.function
def guided_sample(model, schedule, label, w, n, dim=2):
    """Ancestral sampling, `ddpm_sample`, with the guided ε̃ in place of ε_θ."""
    return ddpm_sample(lambda x, t: guided_epsilon(model, x, t, label, w), schedule, n, dim)


@app.cell
def _():
    guide_train = mo.ui.run_button(label="Train the conditional denoiser")
    guide_label = mo.ui.dropdown(
        options={"upper moon (0)": 0, "lower moon (1)": 1}, value="upper moon (0)", label="label y"
    )
    guide_scale = mo.ui.slider(steps=list(lab.GUIDANCE_SCALES), value=2.0, label="guidance scale w", show_value=True)
    mo.hstack([guide_train, guide_label, guide_scale], justify="start")
    return guide_label, guide_scale, guide_train


@app.cell
def _(guide_train):
    guide_study, guide_unfit, guide_seeds = None, "", None
    if not guide_train.value:
        _code = (
            noise_schedule,
            linear_schedule,
            q_sample,
            conditional_denoiser,
            train_conditional,
            guided_epsilon,
            guided_sample,
            ddpm_step,
            ddpm_sample,
        )
        guide_study, guide_unfit = lab.shipped_guidance(*_code)
        # the same model trained from seeds 0 to 4 (seed 0 is the study above), if it is still this code
        guide_seeds = lab.shipped_guidance_seeds(*_code)[0]
    else:
        _total = 1500 + 2 * len(lab.GUIDANCE_SCALES)  # training steps, then each label and scale
        with mo.status.progress_bar(total=_total, title="training, then sampling", remove_on_exit=True) as _bar:
            guide_study = lab.guidance_study(
                conditional_denoiser,
                train_conditional,
                guided_sample,
                noise_schedule("linear", 50),
                steps=1500,
                on_step=throttled(_bar, _total),
            )
    guide_seeds_text = ""
    if guide_seeds is not None:  # every seed and label: [10, W] arrays, w = 0 first, w = 8 last
        _f, _s, _h = (
            np.concatenate(list(_p.values())) for _p in (guide_seeds.fidelity, guide_seeds.spread, guide_seeds.height)
        )
        _ratio, _rise = _s[:, -1] / _s[:, 0], _h[:, -1] - _h[:, 0]
        guide_seeds_text = (
            f"**Over {len(guide_seeds.seeds)} trained models** (seeds 0 to {guide_seeds.seeds[-1]}; each range "
            f"spans both labels): at w = 0 fidelity is {_f[:, 0].min():.1%} to {_f[:, 0].max():.1%} and spread "
            f"{_s[:, 0].min():.2f} to {_s[:, 0].max():.2f}. From w = 0 to 2 every one's fidelity rises to 100 %, "
            "its spread falls and its mean outward height (y on the upper moon, −y on the lower) rises. At w = 8 "
            f"fidelity is {_f[:, -1].min():.1%} to {_f[:, -1].max():.1%}, the spread is {_ratio.min():.2f} to "
            f"{_ratio.max():.2f} of its w = 0 value (at most half in {(_ratio <= 0.5).sum()} of the "
            f"{len(_ratio)} model-label pairs) and the mean outward height {_rise.min():.2f} to "
            f"{_rise.max():.2f} above it."
        )
    return guide_seeds, guide_seeds_text, guide_study, guide_unfit


@app.cell
def _(guide_label, guide_seeds_text, guide_study, guide_train, guide_unfit):
    mo.stop(guide_study is None, mo.md(f"*{guide_unfit[:1].upper()}{guide_unfit[1:]}.*"))
    guide_trade = guide_study.trades[guide_label.value]
    _trade = plot.curves(
        guide_trade.scales,
        {"fidelity": guide_trade.fidelity, "spread": guide_trade.spread},
        x_title="guidance scale w",
        y_title="share / ratio",
        colors={"fidelity": "target", "spread": "model"},
        height=260,
        title="fidelity rises, spread falls",
    )
    guide_heights = guide_study.samples[guide_label.value][:, :, 1].mean(axis=1)  # per w, the samples shown
    _rows = ["| w | fidelity | spread | mean y |", "|---|---|---|---|"] + [
        f"| {_w:g} | {_f:.1%} | {_s:.2f} | {_h:.2f} |"
        for _w, _f, _s, _h in zip(guide_trade.scales, guide_trade.fidelity, guide_trade.spread, guide_heights)
    ]
    _source = (
        "*Trained and sampled just now by the code above.*"
        if guide_train.value
        else "*The conditional denoiser (1500 steps) and its 1000 samples per label and scale "
        "were made by the code above and shipped with the course; the button trains and "
        "samples again here.*"
    )
    mo.vstack(
        [mo.hstack([mo.md("\n".join(_rows)), ui.chart(_trade)], widths=[1, 2]), mo.md(_source), mo.md(guide_seeds_text)]
    )
    return guide_heights, guide_trade


@app.cell
def _(guide_label, guide_scale, guide_study):
    mo.stop(guide_study is None)
    _row = list(guide_study.scales).index(guide_scale.value)
    _x = guide_study.samples[guide_label.value][_row]
    ui.chart(
        lab.point_chart(
            {"data": (guide_study.X[:300], "data"), f"samples, w = {guide_scale.value:g}": (_x, "model")},
            domain=(-3, 3),
            height=340,
            size=8,
            title=f"guided samples at w = {guide_scale.value:g} ({len(_x)} of 1000 shown)",
        )
    )
    return


@app.cell
def _():
    exercise_guidance = exercises.NumberExercise(
        question="**Exercise 6.** With guidance scale w = 3, the conditional prediction is "
        "ε_c = 0.5 and the unconditional one ε_u = 0.2. What is the guided ε̃?",
        truth=(1 + 3) * 0.5 - 3 * 0.2,
        hint="ε̃ = (1 + w) ε_c − w ε_u.",
        abs_tol=1e-6,
        explanation="Guidance extrapolates past the conditional prediction, away from the unconditional one.",
    )
    answer_guidance = ui.answer_box(exercise_guidance, placeholder="ε̃")
    mo.md(r"""
    Without guidance ($w = 0$) the conditional model already puts almost every sample on the
    right moon, spread over all of it. As $w$ grows to 2 the samples stay on the moon but are
    pushed away from the other moon, towards the outer apex of their arc (the top of the upper
    moon, the bottom of the lower one), and crowd there: their mean height moves from the middle
    of the moon towards its apex, fidelity reaches 100 % and the spread falls. Larger $w$ pushes
    further on most trained models (on seed 0's, in the table, the spread at $w = 8$ is several
    times smaller than at $w = 0$), but not on every one: the five models under the table agree
    up to $w = 2$, and at $w = 8$ only in that the spread is smaller and the mean height nearer
    the apex than at $w = 0$. This is the trade image models make with $w$: samples unmistakably
    of their class, for less variety.
    """)
    return answer_guidance, exercise_guidance


@app.cell
def _(answer_guidance, exercise_guidance):
    ui.exercise(exercise_guidance, answer_guidance)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## Where the opening figures come from

    Each section opens on figures these functions made with its default settings, from seed 0:
    the code of this page, run as its buttons run it. They are shipped with the course, and a
    section shows them only while its code is the code that made them; once you change that code,
    the section says so and its button trains with yours.
    """)
    return


@app.function
def default_ddpm():
    """Section 3's DDPM: `train_ddpm` on the moons with lab.DDPM_DEFAULT, quality measured with
    `ddpm_sample` on the way."""
    d = lab.DDPM_DEFAULT
    X = lab.toy_data_2d(d["data"], n=3000, seed=0)
    run = lab.train_ddpm_tracked(
        X,
        noise_schedule(d["kind"], d["T"]),
        train_ddpm,
        ddpm_sample,
        steps=d["steps"],
        hidden=d["hidden"],
        lr=d["lr"],
        seed=0,
    )
    return lab.run_state(run)


@app.function
def default_drawing():
    """The DDPM of the drawing the canvas starts with (section 3, your own data)."""
    d = lab.DRAW_DEFAULT
    points = lab.drawing_start()
    run = lab.train_on_points(
        points, noise_schedule("linear", d["T"]), train_ddpm, ddpm_sample, steps=d["steps"], seed=0
    )
    return {"points": points, "run": lab.run_state(run)}


@app.function
def default_denoiser_1d():
    """Section 4's learned ε_θ of the mixture of lab.MIX_DEFAULT."""
    d = lab.MIX_DEFAULT
    mixture = lab.mixture_1d(d["separation"], d["std"], d["weight_left"])
    run = lab.train_denoiser_1d(
        mixture,
        noise_schedule("linear", d["T"]),
        train_ddpm,
        ddpm_sample,
        steps=d["steps"],
        seed=0,
        variance=d["variance"],
    )
    return lab.run_state(run)


@app.function
def default_sampler_gallery():
    """Section 5's samples: respaced DDPM and DDIM at every step count of its slider."""
    gallery = lab.sampler_gallery(lab.ring_mixture(), noise_schedule("linear", 1000), ddpm_sample, ddim_sample)
    return lab.gallery_state(gallery)


@app.function
def default_sampler_spread():
    """Section 5's scores over five seeds: respaced DDPM and DDIM at lab.SPREAD_STEPS, and DDIM
    at every η of lab.ETAS with lab.ETA_STEPS steps."""
    mixture, schedule = lab.ring_mixture(), noise_schedule("linear", 1000)
    return lab.spread_state(
        lab.sampler_spread(mixture, schedule, ddpm_sample, ddim_sample), lab.eta_sweep(mixture, schedule, ddim_sample)
    )


@app.function
def default_guidance():
    """Section 6's conditional denoiser (1500 steps) and its guided samples, scored."""
    study = lab.guidance_study(
        conditional_denoiser, train_conditional, guided_sample, noise_schedule("linear", 50), steps=1500
    )
    return lab.guidance_state(study)


@app.function
def default_guidance_seeds():
    """Section 6's study again at seeds 1 to 4 (seed 0 is `default_guidance`): per seed and label,
    only the fidelity, spread and mean outward height at each guidance scale."""
    schedule = noise_schedule("linear", 50)
    return lab.guidance_seeds_state(
        [
            lab.guidance_study(conditional_denoiser, train_conditional, guided_sample, schedule, steps=1500, seed=s)
            for s in lab.GUIDANCE_SEEDS
        ]
    )


@app.cell
def _():
    def _script():
        import engine
        from engine import data, diffusion

        with engine.random.fork_rng(0):
            X, _ = data.make_moons(2000, noise=0.05)
            X = (X - X.mean(0)) / X.std(0)
            schedule = diffusion.linear_beta_schedule(50, rescale=True)  # β_t, ᾱ_t, SNR, ...
            x_t = diffusion.q_sample(X[:5], t=25, schedule=schedule)  # jump to step 25
            model = diffusion.Denoiser(dim=2, hidden=64, T=50)
            # a few steps to show the calls (section 3's model takes 2000)
            losses = diffusion.train_ddpm(model, X, schedule, steps=5, batch_size=256, lr=1e-2)
            samples = diffusion.sample(model, schedule, n=100, dim=2, variance="posterior")
        return f"x_t.shape = {x_t.shape} · last loss {losses[-1]:.3f} · samples.shape = {samples.shape}"

    mo.md(f"## The same in your own script\n\n`{_script()}`")
    return


@app.cell(hide_code=True)
def _():
    mo.md(
        "---\n\n**Where next.** Diffusion learns to reverse a fixed noising process; a variational "
        "autoencoder learns the encoder too. " + toc.nav_md(METADATA["id"])
    )
    return


if __name__ == "__main__":
    app.run()

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="07 · Diffusion models")

with app.setup:
    import marimo as mo
    import numpy as np

    import engine
    from engine import diffusion
    from engine.course import check_number, plot, throttled, toc, verdict
    from engine.course.labs import diffusion as lab


@app.function
def step_index(fraction, T):
    """The time step t ∈ {0, …, T − 1} at a fraction of the way through the process."""
    return int(round(float(fraction) * (T - 1)))


@app.cell(hide_code=True)
def _():
    METADATA = {
        "id": "07_diffusion",
        "name": "Diffusion models",
        "summary": "Noise schedules, the forward process in closed form, and a small DDPM trained "
        "on 2-D data next to the exact reverse process.",
        "topics": ["diffusion", "generative_models", "ddpm"],
    }
    mo.md(f"""
    # {METADATA["name"]}

    A diffusion model learns to undo noise. Data is destroyed step by step until it is pure
    Gaussian noise; a network learns to predict the noise at every step; running the process
    backwards then turns fresh noise into new data. In this notebook you will:

    - compare the **linear** and **cosine** noise schedules through $\\beta_t$, $\\bar\\alpha_t$ and
      the signal-to-noise ratio;
    - watch the **forward process** destroy a 2-D data set and check its **closed form**
      $q(x_t \\mid x_0)$ against the step-by-step chain;
    - train a small **DDPM** and step through its **reverse process** as the samples sharpen, with a
      sample-quality number against training steps;
    - see, on a 1-D mixture whose score is known exactly, the **exact reverse process** next to the
      learned one.
    """)
    return (METADATA,)


@app.cell(hide_code=True)
def _():
    mo.md(toc.nav_md("07_diffusion"))
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

    $\bar\alpha_t$ is the share of the signal's variance that survives to step $t$, and the
    **signal-to-noise ratio** is $\mathrm{SNR}(t) = \bar\alpha_t/(1-\bar\alpha_t)$. DDPM's linear
    schedule spaces $\beta_t$ evenly from $10^{-4}$ to $0.02$ over $T = 1000$ steps; with fewer steps
    the same bounds leave signal at the end, so they are rescaled by $1000/T$ (capped at 50 for
    $T < 21$, where $\beta_T$ would reach 1). The cosine schedule
    chooses $\bar\alpha_t$ directly,
    $\bar\alpha_t = f(t)/f(0)$ with $f(t) = \cos^2\!\big(\tfrac{t/T + s}{1+s}\cdot\tfrac{\pi}{2}\big)$,
    so that it falls gently at both ends.
    """)
    return


@app.cell
def _():
    schedule_T = mo.ui.slider(steps=[10, 20, 50, 100, 200, 500, 1000], value=100, label="steps T",
                              show_value=True)
    return (schedule_T,)


@app.cell
def _():
    schedule_rescale = mo.ui.switch(value=True, label="rescale the linear bounds with T")
    return (schedule_rescale,)


@app.cell
def _(schedule_T, schedule_rescale):
    schedules = {
        "linear": lab.make_schedule(
            "linear" if schedule_rescale.value else "linear (fixed bounds)", schedule_T.value),
        "cosine": lab.make_schedule("cosine", schedule_T.value),
    }
    _x = (np.arange(schedule_T.value) + 1) / schedule_T.value
    _colors = {"linear": "function", "cosine": "derivative"}
    _alpha = plot.curves(_x, {k: s.alpha_bars for k, s in schedules.items()}, x_title="t / T",
                         y_title="ᾱ_t", colors=_colors, y_domain=(0, 1),
                         title="ᾱ_t: the signal that survives", height=220)
    _beta = plot.curves(_x, {k: s.betas for k, s in schedules.items()}, x_title="t / T",
                        y_title="β_t", colors=_colors, log_y=True, title="β_t (log scale)",
                        height=220)
    _snr = plot.curves(_x, {k: np.log(s.snr) for k, s in schedules.items()}, x_title="t / T",
                       y_title="log SNR", colors=_colors, title="log SNR(t) = log ᾱ/(1 − ᾱ)",
                       height=220)
    _end = " · ".join(f"{k}: ᾱ_T = {s.alpha_bars[-1]:.2g}" for k, s in schedules.items())
    _warn = (mo.callout(mo.md(f"With fixed bounds and T = {schedule_T.value}, the linear schedule "
                              f"ends at ᾱ_T = {schedules['linear'].alpha_bars[-1]:.2f}: the last step "
                              "is far from pure noise, so sampling from N(0, I) would start in the "
                              "wrong place."), kind="warn")
             if schedules["linear"].alpha_bars[-1] > 0.01 else mo.md(""))
    mo.vstack([mo.hstack([schedule_T, schedule_rescale], justify="start"), mo.md(_end), _warn,
               mo.hstack([_alpha, _beta, _snr], widths="equal")])
    return (schedules,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Exercise 1.** A schedule keeps $\beta_t = 0.02$ at every step. What is $\bar\alpha_t$ after
    $t = 50$ steps? (Three decimals.)
    """)
    return


@app.cell
def _():
    answer_alpha_bar = mo.ui.text(placeholder="ᾱ after 50 steps", label="your answer")
    return (answer_alpha_bar,)


@app.cell
def _(answer_alpha_bar):
    truth_alpha_bar = float(diffusion.Schedule.from_betas(np.full(50, 0.02)).alpha_bars[-1])
    mo.vstack([answer_alpha_bar, verdict(check_number(
        answer_alpha_bar.value, truth_alpha_bar,
        "ᾱ is a product: fifty factors α = 1 − β = 0.98.", abs_tol=0.0015))])
    return (truth_alpha_bar,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 2. The forward process, in one jump

    Products of Gaussians stay Gaussian, so $t$ noising steps collapse into one:

    $$
    q(x_t \mid x_0) = \mathcal N\!\big(\sqrt{\bar\alpha_t}\,x_0,\; (1-\bar\alpha_t) I\big),
    \qquad x_t = \sqrt{\bar\alpha_t}\,x_0 + \sqrt{1-\bar\alpha_t}\,\varepsilon,\quad \varepsilon\sim\mathcal N(0, I).
    $$

    Training never runs the chain: it draws a random $t$ and jumps there. Move $t$ to watch a data
    set dissolve (the same $\varepsilon$ for every $t$, so the points drift smoothly). The data is
    standardised, so that its scale matches the noise it ends in.
    """)
    return


@app.cell
def _():
    forward_data = mo.ui.dropdown(options=list(lab.DATASETS_2D), value="moons",
                                  label="data")
    return (forward_data,)


@app.cell
def _():
    forward_kind = mo.ui.dropdown(options=["linear", "cosine"], value="linear", label="schedule")
    return (forward_kind,)


@app.cell
def _():
    forward_t = mo.ui.slider(0.0, 1.0, step=0.01, value=0.3, label="t / T", show_value=True)
    return (forward_t,)


@app.cell
def _(forward_data):
    data_2d = lab.toy_data_2d(forward_data.value, n=3000, seed=0)
    return (data_2d,)


@app.cell
def _(data_2d, forward_data, forward_kind, forward_t, schedule_T, schedules):
    forward_schedule = schedules[forward_kind.value]
    forward_step = step_index(forward_t.value, schedule_T.value)
    _xt = lab.forward_snapshot(data_2d[:1000], forward_schedule, forward_step, seed=1)
    _ab = forward_schedule.alpha_bars[forward_step]
    _chart = plot.point_layers({"x_0 (data)": (data_2d[:1000], "data"),
                                f"x_t, t = {forward_step + 1}": (_xt, "model")},
                               domain=(-4, 4), height=380,
                               title=f"{forward_data.value}: the data and its noised version at "
                                     f"t = {forward_step + 1} of {schedule_T.value}")
    mo.vstack([
        mo.hstack([forward_data, forward_kind, forward_t], justify="start"),
        mo.md(f"ᾱ_t = **{_ab:.3f}** · signal factor √ᾱ_t = **{np.sqrt(_ab):.3f}** · noise std "
              f"√(1 − ᾱ_t) = **{np.sqrt(1 - _ab):.3f}** · SNR = **{_ab / (1 - _ab):.3g}**"),
        _chart,
    ])
    return forward_schedule, forward_step


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **The closed form is the chain.** Start 4000 copies of one point $x_0$ and run the chain one
    step at a time, $x_s = \sqrt{\alpha_s}\,x_{s-1} + \sqrt{\beta_s}\,\varepsilon_s$, up to the
    chosen $t$. Their mean and variance match $\sqrt{\bar\alpha_t}\,x_0$ and $1-\bar\alpha_t$:
    """)
    return


@app.cell
def _(forward_schedule, forward_step):
    chain = lab.chain_vs_closed_form([1.5, -1.0], forward_schedule, forward_step,
                                     n=4000, seed=2)
    _grid = np.linspace(-4, 4, 161)
    _density = np.exp(-(_grid - chain["closed_mean"][0]) ** 2 / (2 * chain["closed_var"])) / np.sqrt(
        2 * np.pi * chain["closed_var"])
    _counts, _edges = np.histogram(chain["samples"][:, 0], bins=50, range=(-4, 4), density=True)
    _hist = plot.curves(None, {"chain, step by step (histogram)": (0.5 * (_edges[1:] + _edges[:-1]), _counts),
                               "closed form q(x_t | x_0)": (_grid, _density)},
                        x_title="first coordinate of x_t", y_title="density",
                        colors={"chain, step by step (histogram)": "data",
                                "closed form q(x_t | x_0)": "analytic"},
                        title="4000 chains from x₀ = (1.5, −1) against the closed form")
    mo.vstack([
        mo.md("| | mean (coordinate 1, 2) | variance (1, 2) |\n|---|---|---|\n"
              f"| chain, step by step | {chain['mean'][0]:.3f}, {chain['mean'][1]:.3f} | "
              f"{chain['var'][0]:.3f}, {chain['var'][1]:.3f} |\n"
              f"| closed form | {chain['closed_mean'][0]:.3f}, {chain['closed_mean'][1]:.3f} | "
              f"{chain['closed_var']:.3f} |"),
        _hist,
    ])
    return (chain,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Exercise 2.** One coordinate of $x_0$ equals $2$ and $\bar\alpha_t = 0.36$. What is the mean
    of that coordinate of $x_t$?

    **Exercise 3.** And its standard deviation?
    """)
    return


@app.cell
def _():
    answer_mean = mo.ui.text(placeholder="mean of x_t", label="exercise 2")
    return (answer_mean,)


@app.cell
def _():
    answer_std = mo.ui.text(placeholder="std of x_t", label="exercise 3")
    return (answer_std,)


@app.cell
def _(answer_mean, answer_std):
    _one_step = diffusion.Schedule.from_betas([0.64])  # ᾱ = 1 − 0.64 = 0.36 after one step
    _mean, _var = diffusion.q_mean_var(np.array([2.0]), 0, _one_step)
    truth_mean, truth_std = float(_mean[0]), float(np.sqrt(_var))
    mo.vstack([
        answer_mean,
        verdict(check_number(answer_mean.value, truth_mean,
                             "the mean is the signal factor √ᾱ_t times x_0.", abs_tol=1e-3)),
        answer_std,
        verdict(check_number(answer_std.value, truth_std,
                             "the variance is 1 − ᾱ_t; take its square root.", abs_tol=1e-3)),
    ])
    return truth_mean, truth_std


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

    Sampling starts from $x_T \sim \mathcal N(0, I)$ and walks back, removing the predicted noise
    and adding a little fresh noise at every step except the last:

    $$
    x_{t-1} = \frac{1}{\sqrt{\alpha_t}}\Big(x_t - \frac{\beta_t}{\sqrt{1-\bar\alpha_t}}\,
    \varepsilon_\theta(x_t, t)\Big) + \sigma_t z, \qquad
    \sigma_t^2 = \tilde\beta_t = \frac{1-\bar\alpha_{t-1}}{1-\bar\alpha_t}\,\beta_t .
    $$

    The training uses the data set and schedule chosen in section 2, with its own number of steps
    $T$. Quality is measured with the **energy distance** between fresh samples and held-out data
    (0 when the two distributions agree); pure noise and a second draw of the real data bracket it.
    """)
    return


@app.cell
def _():
    ddpm_steps = mo.ui.slider(100, 8000, step=100, value=2000, label="training steps",
                              show_value=True)
    return (ddpm_steps,)


@app.cell
def _():
    ddpm_T = mo.ui.dropdown(options={"20": 20, "50": 50, "100": 100, "200": 200}, value="50",
                            label="diffusion steps T")
    return (ddpm_T,)


@app.cell
def _():
    ddpm_hidden = mo.ui.dropdown(options={"32": 32, "64": 64, "128": 128}, value="64",
                                 label="hidden width")
    return (ddpm_hidden,)


@app.cell
def _():
    ddpm_lr = mo.ui.dropdown(options={"1e-3": 1e-3, "3e-3": 3e-3, "1e-2": 1e-2, "3e-2": 3e-2,
                                      "1": 1.0}, value="1e-2", label="learning rate")
    return (ddpm_lr,)


@app.cell
def _():
    ddpm_train = mo.ui.run_button(label="Train the DDPM")
    return (ddpm_train,)


@app.cell
def _(ddpm_T, ddpm_hidden, ddpm_lr, ddpm_steps, ddpm_train):
    mo.vstack([mo.hstack([ddpm_steps, ddpm_T, ddpm_hidden, ddpm_lr], wrap=True),
               mo.hstack([ddpm_train, mo.md("about 2 s for 2000 steps here; slower in the browser")],
                         justify="start")])
    return


@app.cell
def _(data_2d, ddpm_T, ddpm_hidden, ddpm_lr, ddpm_steps, ddpm_train, forward_kind):
    mo.stop(not ddpm_train.value, mo.md("*Press **Train the DDPM** to train it.*"))
    ddpm_schedule = lab.make_schedule(forward_kind.value, ddpm_T.value)
    with mo.status.progress_bar(total=ddpm_steps.value, title="training",
                                remove_on_exit=True) as _bar:
        ddpm = lab.train_ddpm_tracked(data_2d, ddpm_schedule, steps=ddpm_steps.value,
                                      hidden=ddpm_hidden.value, lr=ddpm_lr.value,
                                      seed=0, on_step=throttled(_bar, ddpm_steps.value))
    _window = max(1, len(ddpm["losses"]) // 50)
    _smooth = np.convolve(ddpm["losses"], np.ones(_window) / _window, mode="valid")
    _loss = plot.curves(np.arange(len(_smooth)) + _window, {"train": _smooth},
                        x_title="training step", y_title="loss ‖ε − ε_θ‖²", colors={"train": "train"},
                        title=f"training loss (moving average of {_window} steps)")
    _quality = plot.curves(ddpm["checkpoints"], {"model samples": ddpm["quality"]},
                           x_title="training step", y_title="energy distance to held-out data",
                           colors={"model samples": "model"}, log_y=True,
                           title="sample quality (lower is better)")
    _quality = (_quality + plot.rule(ddpm["noise_quality"], color_name="error")
                + plot.rule(ddpm["floor"], color_name="target"))
    ddpm_final = float(ddpm["quality"][-1]) if len(ddpm["quality"]) else float("nan")
    mo.vstack([
        mo.callout(mo.md(ddpm["stopped"]), kind="warn") if ddpm["stopped"] else mo.md(""),
        mo.md(f"Energy distance after {len(ddpm['losses'])} steps: **{ddpm_final:.4f}** · pure "
              f"noise (red line): {ddpm['noise_quality']:.4f} · a second draw of the data (green "
              f"line): {ddpm['floor']:.4f}"),
        mo.hstack([_loss, _quality], widths="equal"),
    ])
    return ddpm, ddpm_final, ddpm_schedule


@app.cell
def _(ddpm, ddpm_schedule):
    mo.stop(ddpm["stopped"] != "", mo.md("*Training stopped early: lower the learning rate.*"))
    _run = lab.reverse_trajectory(ddpm["model"], ddpm_schedule, 1000, seed=3)
    mo.stop(_run["states"] is None,
            mo.callout(mo.md(f"Sampling failed: {_run['message']}. Lower the learning rate."), kind="warn"))
    trajectory = _run["states"]
    return (trajectory,)


@app.cell
def _(ddpm_T):
    reverse_k = mo.ui.slider(0, ddpm_T.value, value=ddpm_T.value,
                             label="reverse steps taken (0: pure noise, T: samples)", show_value=True)
    return (reverse_k,)


@app.cell
def _(data_2d, ddpm_schedule, reverse_k, trajectory):
    _k = min(reverse_k.value, len(trajectory) - 1)
    _x = trajectory[_k]
    _t = ddpm_schedule.T - _k
    _chart = plot.point_layers({"held-out data": (data_2d[-1000:], "data"),
                                f"samples after {_k} reverse steps": (_x, "model")},
                               domain=(-4, 4), height=400,
                               title=f"after {_k} of {ddpm_schedule.T} reverse steps (now at t = {_t})")
    mo.vstack([reverse_k, _chart])
    return


@app.cell(hide_code=True)
def _():
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
    """)
    return


@app.cell
def _():
    mix_separation = mo.ui.slider(0.0, 5.0, step=0.25, value=3.0, label="distance between modes",
                                  show_value=True)
    return (mix_separation,)


@app.cell
def _():
    mix_std = mo.ui.slider(0.05, 1.0, step=0.05, value=0.3, label="std of each mode",
                           show_value=True)
    return (mix_std,)


@app.cell
def _():
    mix_weight = mo.ui.slider(0.05, 0.95, step=0.05, value=0.3, label="weight of the left mode",
                              show_value=True)
    return (mix_weight,)


@app.cell
def _():
    mix_t = mo.ui.slider(0.0, 1.0, step=0.02, value=0.2, label="t / T for ε*", show_value=True)
    return (mix_t,)


@app.cell
def _():
    mix_T = mo.ui.dropdown(options={"10": 10, "50": 50, "200": 200, "1000": 1000}, value="50",
                           label="steps T")
    return (mix_T,)


@app.cell
def _():
    mix_variance = mo.ui.dropdown(options={"σ²_t = β_t": "beta", "σ²_t = β̃_t (posterior)": "posterior"},
                                  value="σ²_t = β_t", label="reverse-step noise")
    return (mix_variance,)


@app.cell
def _():
    mix_train = mo.ui.run_button(label="Train a 1-D denoiser")
    return (mix_train,)


@app.cell
def _(mix_T, mix_separation, mix_std, mix_variance, mix_weight):
    mixture = lab.mixture_1d(mix_separation.value, mix_std.value, mix_weight.value)
    mix_schedule = lab.make_schedule("linear", mix_T.value)
    exact_samples = lab.exact_reverse_1d(mixture, mix_schedule, n=4000, seed=0,
                                         variance=mix_variance.value)
    return exact_samples, mix_schedule, mixture


@app.cell
def _(mix_schedule, mix_train, mix_variance, mixture):
    if mix_train.value:
        with mo.status.progress_bar(total=1500, title="training", remove_on_exit=True) as _bar:
            learned_1d = lab.train_denoiser_1d(mixture, mix_schedule, steps=1500, seed=0,
                                               variance=mix_variance.value,
                                               on_step=throttled(_bar, 1500))
    else:
        learned_1d = None
    return (learned_1d,)


@app.cell
def _(
    exact_samples,
    learned_1d,
    mix_schedule,
    mix_separation,
    mix_std,
    mix_t,
    mix_train,
    mix_weight,
    mixture,
):
    _grid = np.linspace(-4, 4, 161)
    _edges = np.linspace(-4, 4, 61)
    _centres = 0.5 * (_edges[1:] + _edges[:-1])
    _hists = {"true density": (_grid, mixture.prob(_grid)),
              "exact reverse process": (_centres, np.histogram(exact_samples, _edges, density=True)[0])}
    if learned_1d is not None:
        _hists["learned ε_θ"] = (_centres, np.histogram(learned_1d["samples"], _edges, density=True)[0])
    _samples = plot.curves(None, _hists, x_title="x", y_title="density",
                           colors={"true density": "target", "exact reverse process": "analytic",
                                   "learned ε_θ": "model"},
                           title="samples of the reverse process (histograms) and the data density")
    _t = step_index(mix_t.value, mix_schedule.T)
    mix_curves = lab.epsilon_curves(
        mixture, mix_schedule, _t, model=None if learned_1d is None else learned_1d["model"])
    _eps = {"ε*(x, t), exact": mix_curves["exact"]}
    if "learned" in mix_curves:
        _eps["ε_θ(x, t), learned"] = mix_curves["learned"]
    _eps_chart = plot.curves(mix_curves["x"], _eps, x_title="x_t", y_title="predicted noise",
                             colors={"ε*(x, t), exact": "analytic", "ε_θ(x, t), learned": "model"},
                             title=f"the noise prediction at t = {_t + 1} of {mix_schedule.T}")
    _q = plot.curves(mix_curves["x"], {"q_t(x)": mix_curves["density"]}, x_title="x_t",
                     y_title="density", colors={"q_t(x)": "data"},
                     title=f"the noised density q_t at t = {_t + 1}", height=160)
    mix_moments = {"true": (float(mixture.means[:, 0] @ mixture.weights),
                            float(mixture.weights @ (mixture.stds**2 + mixture.means[:, 0] ** 2))
                            - float(mixture.means[:, 0] @ mixture.weights) ** 2),
                   "exact": (float(exact_samples.mean()), float(exact_samples.var()))}
    _rows = ["| | mean | variance | share left of 0 |", "|---|---|---|---|",
             f"| data (exact) | {mix_moments['true'][0]:.3f} | {mix_moments['true'][1]:.3f} | "
             f"{float(mixture.weights[0]) if mix_separation.value > 0 else 0.5:.1%} |",
             f"| exact reverse process | {mix_moments['exact'][0]:.3f} | {mix_moments['exact'][1]:.3f} | "
             f"{np.mean(exact_samples < 0):.1%} |"]
    if learned_1d is not None:
        _rows.append(f"| learned reverse process | {np.mean(learned_1d['samples']):.3f} | "
                     f"{np.var(learned_1d['samples']):.3f} | {np.mean(learned_1d['samples'] < 0):.1%} |")
    mo.vstack([
        mo.hstack([mix_separation, mix_std, mix_weight], wrap=True),
        mo.hstack([mix_T, mix_variance], justify="start"),
        mo.md("\n".join(_rows) + ("" if learned_1d is not None else
                                  "\n\nPress the button to train a network on samples of this "
                                  "mixture and compare.")),
        mix_train,
        _samples,
        mix_t,
        mo.hstack([_eps_chart, _q], widths=[2, 1]),
    ])
    return mix_curves, mix_moments


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Even the exact reverse process is not perfect: it takes $T$ finite steps, each a Gaussian
    of variance $\sigma_t^2$. For standard-normal data the right choice is $\sigma_t^2 = \beta_t$
    (try separation 0, std 1), while $\tilde\beta_t$ suits data concentrated on points; with
    $T = 1000$ both become exact. Try $T = 10$.

    Near $t = 0$ the exact $\varepsilon^*$ is a steep staircase: each mode pulls its neighbourhood
    in, and the two disagree sharply in the valley between them. Late in the process (large $t$)
    the noised density is one broad bump and $\varepsilon^*$ is almost a straight line. A network
    fits the gentle late curves easily and the steep early ones last: that is why samples first
    find the right overall shape and then sharpen.

    ## The same in your own script
    """)
    return


@app.cell
def _():
    from engine import data

    engine.manual_seed(0)
    X, _ = data.make_moons(2000, noise=0.05)
    X = (X - X.mean(0)) / X.std(0)
    schedule = diffusion.linear_beta_schedule(50, rescale=True)   # β_t, ᾱ_t, SNR, ...
    x_t = diffusion.q_sample(X[:5], t=25, schedule=schedule)      # jump to step 25
    model = diffusion.Denoiser(dim=2, hidden=64, T=50)
    losses = diffusion.train_ddpm(model, X, schedule, steps=200, batch_size=256, lr=1e-2)
    samples = diffusion.sample(model, schedule, n=500, dim=2, variance="posterior")
    mo.show_code(mo.md(f"`x_t.shape` = {x_t.shape} · last loss {losses[-1]:.3f} · "
                       f"`samples.shape` = {samples.shape}"))
    return


@app.cell(hide_code=True)
def _():
    mo.md(
        "---\n\n**Where next.** Diffusion learns to reverse a fixed noising process; a variational "
        "autoencoder learns the encoder too. " + toc.nav_md("07_diffusion")
    )
    return


if __name__ == "__main__":
    app.run()

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="08 · Variational autoencoders")

with app.setup:
    import functools
    import math

    import altair as alt
    import marimo as mo
    import numpy as np

    import engine
    from engine import data, nn, vae
    from engine.course import exercises, metadata, plot, throttled, toc, ui, widgets
    from engine.course.labs import vae as lab

    METADATA = metadata("08_vae")


@app.function
def source_caption(shipped, button, settings, what="the model"):
    """Where the figures above come from: the shipped default models or the learner's training."""
    if shipped:
        return lab.shipped_caption(button, settings, what)
    return "*Shown: trained just now by this page's cells, with your settings.*"


@app.function
@functools.lru_cache(maxsize=4)
def vae_view(run, shipped):
    """The 2-D VAE's held-out budget, KL per dimension, reconstructions, samples and codes."""
    latent_dim = len(run.kl_per_dim)
    bars = plot.bars(
        [f"z{j + 1}" for j in range(latent_dim)],
        run.kl_per_dim,
        y_title="KL (nats)",
        color_name="model",
        title="KL per latent dimension",
        text_format=".2f",
    )
    # the budget uses all 500 held-out points; the chart draws 250 of each set, to 0.01 (less to send and render)
    points = plot.point_layers(
        {
            "data": (np.round(run.held_out[:250], 2), "data"),
            "reconstructions": (np.round(run.reconstructions[:250], 2), "model"),
            "decoded samples z ~ N(0, I)": (np.round(run.samples[:250], 2), "target"),
        },
        domain=(-3, 3),
        height=360,
        size=8,
        title="held-out data, their reconstructions, and new samples",
    )
    # the two most informative latent dimensions (largest KL), coloured by the data's classes
    order = np.argsort(-run.kl_per_dim)
    shown = np.round(
        np.stack(
            [run.latents[:, order[0]], run.latents[:, order[1]] if latent_dim > 1 else np.zeros(len(run.latents))],
            axis=1,
        ),
        2,
    )
    codes = plot.scatter_classes(
        shown,
        run.labels,
        height=300,
        x_title=f"μ of z{order[0] + 1} (KL {run.kl_per_dim[order[0]]:.2f})",
        y_title=(
            f"μ of z{order[1] + 1} (KL {run.kl_per_dim[order[1]]:.2f})" if latent_dim > 1 else "(one latent dimension)"
        ),
        title="held-out points placed at their codes, coloured by class",
    )
    defaults = lab.TOY_DEFAULTS
    return mo.vstack(
        [
            mo.md(
                f"Held-out budget at β = {run.beta:g}: reconstruction **{run.recon:.3f}** "
                f"nats + KL **{run.kl:.3f}** nats; ELBO (β = 1) = **{run.elbo:.3f}** · "
                f"active dimensions (KL > 0.05): **{int((run.kl_per_dim > 0.05).sum())}** of {latent_dim}"
            ),
            mo.hstack([ui.chart(bars), ui.chart(points)], widths=[1, 2]),
            ui.chart(codes),
            mo.md(
                source_caption(
                    shipped,
                    "Train the VAE",
                    f"{lab.TOY_DEFAULTS_TEXT}, β = {defaults['beta']:g}, {defaults['steps']} steps",
                )
            ),
        ]
    )


@app.function
@functools.lru_cache(maxsize=4)
def sweep_view(sweep, shipped):
    """KL per dimension and the budget against β, and the active dimensions."""
    x = np.log10(sweep.betas)
    ranks = ["largest", "2nd largest", "3rd largest"] + [f"{j + 1}th largest" for j in range(3, 6)]
    # each model numbers its dimensions its own way: compared across β, they are ranked by KL
    kl = plot.curves(
        x,
        {f"{ranks[j]} KL": sweep.kl_ranked[:, j] for j in range(sweep.kl_ranked.shape[1])},
        x_title="log₁₀ β",
        y_title="KL (nats)",
        title="KL per dimension against β, ranked: dimensions switch off one by one",
    )
    recon = plot.curves(
        x,
        {"reconstruction": sweep.recon, "total KL": sweep.kl},
        x_title="log₁₀ β",
        y_title="nats",
        colors={"reconstruction": "error", "total KL": "model"},
        title="the budget: reconstruction cost rises as KL is squeezed out",
    )
    return mo.vstack(
        [
            ui.chart_row(kl, recon),
            mo.md("active dimensions: " + " · ".join(f"β = {b:g}: **{a}**" for b, a in zip(sweep.betas, sweep.active))),
            mo.md(
                source_caption(
                    shipped,
                    "Sweep β from 0.1 to 100",
                    f"{lab.TOY_DEFAULTS_TEXT}, {lab.SWEEP_STEPS} steps per β",
                    "the six models",
                )
            ),
        ]
    )


@app.function
@functools.lru_cache(maxsize=4)
def aggregate_view(aggregate, shipped):
    """The codes over the prior at each β, and the two energy distances."""
    # the distances use all 500 codes; the charts draw 160 of each set, to 0.01 (less to send and render)
    prior = np.round(np.random.default_rng(5).standard_normal((160, 2)), 2)
    charts = [
        plot.point_layers(
            {"prior N(0, I)": (prior, "reference"), "codes z ~ q(z | x)": (np.round(z[:160], 2), "model")},
            domain=(-4, 4),
            height=230,
            size=6,
            title=f"β = {b:g}",
        )
        for b, z in zip(aggregate.betas, aggregate.codes)
    ]
    rows = ["| β | codes to prior | decoded prior samples to data |", "|---|---|---|"] + [
        f"| {b:g} | {p:.3f} | {d:.3f} |"
        for b, p, d in zip(aggregate.betas, aggregate.to_prior, aggregate.samples_to_data)
    ]
    defaults = lab.TOY_DEFAULTS
    return mo.vstack(
        [
            ui.chart_row(*charts),
            mo.md("\n".join(rows)),
            mo.md(
                source_caption(
                    shipped,
                    "Train at β = 0, 0.1, 1, 10",
                    f"{defaults['data']}, σ²ₓ = {defaults['obs_var']:g}, {lab.AGGREGATE_STEPS} steps per β",
                    "the four models",
                )
            ),
        ]
    )


@app.function
def digit_image(image, title, scale=20):
    """A grey picture (0 black, 1 white) under its title."""
    return mo.vstack([mo.md(f"*{title}*"), mo.image(plot.grey_png(image, scale=scale), alt=title)])


@app.function
@functools.lru_cache(maxsize=64)
def decoded_map(run, z1, z2):
    """What the decoder of ``run`` makes of the code (z1, z2), drawn once per code."""
    decoded = lab.decode_point(lesson_cells(), run.model, z1, z2).reshape(run.image_shape)
    return digit_image(decoded, f"decoder(z = ({z1:.1f}, {z2:.1f}))", scale=24)


@app.function
@functools.lru_cache(maxsize=4)
def digits_view(run, shipped):
    """The digit VAE: held-out codes by digit, decoded grid, reconstructions, held-out ELBO."""
    scatter = plot.scatter_classes(
        np.round(run.latents, 2),
        run.labels,
        x_title="z₁ = μ₁(x)",
        y_title="z₂ = μ₂(x)",
        class_names=[str(d) for d in range(10)],
        title="held-out digits placed at their codes",
        height=360,
    )
    # each figure is one picture of tiles, white lines between them
    grid = lab.latent_grid(lesson_cells(), run.model, run.image_shape, n=8, limit=2.5).images.reshape(
        (-1,) + run.image_shape
    )
    tiles = digit_image(
        plot.tile_images(grid, ncols=8),
        "decoded codes on a grid: z₁ from −2.5 (left) to 2.5, z₂ from 2.5 (top) to −2.5",
        scale=4,
    )
    pairs = np.concatenate([run.images[:8], run.reconstructions[:8], run.images[8:16], run.reconstructions[8:16]])
    recon = digit_image(
        plot.tile_images(pairs, ncols=8), "held-out digits (rows 1, 3) and their reconstructions (rows 2, 4)", scale=5
    )
    defaults = lab.IMAGE_DEFAULTS
    return mo.vstack(
        [
            mo.md(
                f"Held-out ELBO: **{run.elbo:.1f}** nats per image, a lower bound on the log "
                "density log p(x) of its 64 pixel values."
            ),
            mo.hstack([ui.chart(scatter), tiles], widths="equal"),
            recon,
            mo.md(
                source_caption(
                    shipped, "Train the digit VAE", f"{defaults['steps']} steps, σ²ₓ = {defaults['obs_var']:g}"
                )
            ),
        ]
    )


@app.cell(hide_code=True)
def _():
    ui.page_header(
        METADATA,
        r"""
    A variational autoencoder compresses each input into a small random code $z$ and learns to
    rebuild the input from it; because the codes are pushed to look like samples of $\mathcal N(0, I)$,
    decoding fresh noise produces new data. In this notebook you will:

    - see why writing $z = \mu + \sigma\varepsilon$ lets gradients reach $\mu$ and $\sigma$, and how
      much less variance that gradient has than the score-function alternative;
    - compute the KL divergence of $\mathcal N(\mu, \sigma^2)$ to $\mathcal N(0, 1)$ in closed form and
      check it by Monte Carlo;
    - read the ELBO as a budget between reconstruction and KL, and watch latent dimensions
      collapse as its weight $\beta$ grows;
    - see where the codes go (the aggregate posterior against the prior) and two remedies for
      collapse, KL annealing and free bits;
    - train a VAE on real handwritten digits, explore its latent space, encode a digit you draw,
      and measure how far its ELBO is from $\log p(x)$ with the importance-weighted bound.

    The VAE itself, its loss, its training loop and the bound are the code cells of this page:
    open it with `marimo edit` to change them, and every figure that uses them follows.
    """,
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 1. The model and its objective

    An **encoder** maps $x$ to a Gaussian over codes, $q_\phi(z\mid x) = \mathcal N\big(\mu_\phi(x),
    \operatorname{diag}\sigma_\phi^2(x)\big)$; a **decoder** gives $p_\theta(x\mid z)$. Both are
    trained by maximising the **evidence lower bound**:

    $$
    \log p_\theta(x) \;\ge\; \operatorname{ELBO}(x) =
    \underbrace{\mathbb E_{z\sim q_\phi(z\mid x)}\big[\log p_\theta(x\mid z)\big]}_{\text{reconstruction}}
    \;-\; \underbrace{D_{\mathrm{KL}}\big(q_\phi(z\mid x)\,\Vert\,\mathcal N(0, I)\big)}_{\text{price of the code}} .
    $$

    Here both are small MLPs. The encoder ends in two heads, $\mu(x)$ and $\log\sigma^2(x)$ (a log,
    so that any real output is a valid variance); the decoder's output $\hat x(z)$ is the mean of a
    Gaussian $p_\theta(x\mid z) = \mathcal N(\hat x(z), \sigma_x^2 I)$. Every model on this page, from
    the 2-D points of section 5 to the digits of section 6, is made by `vae_model` and run by
    `encode` and `decode`.
    """)
    return


@app.function
def vae_model(input_dim, hidden, latent_dim, obs_var=0.05):
    """The layers of the encoder (x → h → μ, log σ²) and of the decoder (z → x̂), and the decoder
    variance σ²ₓ: a module whose parameters an optimizer trains."""
    model = nn.Module()
    model.encoder = nn.Sequential(nn.Linear(input_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
    model.to_mu = nn.Linear(hidden, latent_dim)
    model.to_logvar = nn.Linear(hidden, latent_dim)
    model.decoder = nn.Sequential(
        nn.Linear(latent_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, input_dim)
    )
    model.input_dim, model.latent_dim, model.obs_var = input_dim, latent_dim, obs_var
    return model


@app.function
def encode(model, x):
    """The encoder, q(z | x) = N(μ(x), diag σ²(x)) for a batch x [N, D]:

    h = SiLU(W₂ SiLU(W₁ x + b₁) + b₂),   μ(x) = W_μ h + b_μ,   log σ²(x) = W_σ h + b_σ.
    """
    h = model.encoder(x)
    return model.to_mu(h), model.to_logvar(h)


@app.function
def decode(model, z):
    """The decoder, the mean of p(x | z) = N(x̂(z), σ²ₓ I) for codes z [N, latent_dim]:

    x̂(z) = W₅ SiLU(W₄ SiLU(W₃ z + b₃) + b₄) + b₅.
    """
    return model.decoder(z)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 2. The reparameterisation trick

    The reconstruction term is an expectation over $z \sim q_\phi$, estimated with a sample. A
    sample is not differentiable in $\mu$ and $\sigma$, but it can be written as one:

    $$
    z = \mu + \sigma\,\varepsilon, \qquad \varepsilon \sim \mathcal N(0, 1), \qquad
    \frac{\partial z}{\partial \mu} = 1, \quad \frac{\partial z}{\partial \sigma} = \varepsilon .
    $$

    The randomness now sits in $\varepsilon$, which needs no gradient, and backpropagation runs
    straight through $z$. The encoder gives $\log\sigma^2$, so the cell below takes it and
    computes $\sigma = \exp(\tfrac12\log\sigma^2)$ itself.
    """)
    return


@app.function
def reparameterize(mu, logvar, eps=None):
    """A draw of q(z | x) as a function of its parameters:

    z = μ + σ ⊙ ε,  σ = exp(½ log σ²),  ε ~ N(0, I)  (drawn here unless given),
    so ∂z/∂μ = 1 and ∂z/∂σ = ε: the gradient reaches μ and σ, the randomness stays in ε.
    """
    if eps is None:
        eps = engine.randn(*mu.shape)
    return mu + (0.5 * logvar).exp() * eps


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Below, $f(z) = z^2$, whose expectation $\mu^2 + \sigma^2$ is known: the engine's autograd
    through `reparameterize` estimates $\partial/\partial\mu = 2\mu$ and
    $\partial/\partial\sigma = 2\sigma$ (the table is computed by the cell above).

    **Change this cell:** return `mu + eps`, a sample that forgets $\sigma$. The table's
    $\partial/\partial\sigma$ drops to 0, since no path from $\sigma$ to $z$ is left; every trained
    model below then says that the model shipped with the page was trained with other code, and
    offers its Train button.
    """)
    return


@app.cell
def _():
    q_mu = mo.ui.slider(-3.0, 3.0, step=0.1, value=1.0, label="μ", show_value=True)
    q_sigma = mo.ui.slider(0.05, 3.0, step=0.05, value=0.5, label="σ", show_value=True)
    q_samples = mo.ui.slider(
        steps=[10, 30, 100, 300, 1000, 3000, 10000], value=1000, label="samples of ε", show_value=True
    )
    mo.hstack([q_mu, q_sigma, q_samples], wrap=True)
    return q_mu, q_samples, q_sigma


@app.cell
def _(q_mu, q_samples, q_sigma):
    reparam = lab.reparam_gradients(reparameterize, q_mu.value, q_sigma.value, n=q_samples.value, seed=0)
    _edges = np.linspace(-6, 6, 61)
    _centres = 0.5 * (_edges[1:] + _edges[:-1])
    _hist = plot.curves(
        None,
        {
            "ε ~ N(0, 1)": (_centres, np.histogram(reparam.eps, _edges, density=True)[0]),
            "z = μ + σε": (_centres, np.histogram(reparam.z, _edges, density=True)[0]),
        },
        x_title="value",
        y_title="density",
        colors={"ε ~ N(0, 1)": "data", "z = μ + σε": "model"},
        title="the same draws ε, shifted by μ and stretched by σ",
    )
    _rows = [
        ("", "estimate (autograd through z)", "exact"),
        ("E[z²]", f"{reparam.estimate:.4f}", f"μ² + σ² = {reparam.value:.4f}"),
        ("∂/∂μ", f"{reparam.grad_mu:.4f}", f"2μ = {reparam.exact_grad_mu:.4f}"),
        ("∂/∂σ", f"{reparam.grad_sigma:.4f}", f"2σ = {reparam.exact_grad_sigma:.4f}"),
    ]
    # plain HTML, not markdown: μ and σ re-run this cell, and parsing a markdown table costs more
    _table = mo.Html(
        "<table>" + "".join("<tr>" + "".join(f"<td>{v}</td>" for v in row) + "</tr>" for row in _rows) + "</table>"
    )
    mo.vstack([_table, ui.chart(_hist)])
    return (reparam,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    With more samples of $\varepsilon$ the estimates close in on the exact values: the gradient is
    **unbiased**, and its spread shrinks like $1/\sqrt{n}$.

    ## 3. The price of the code: KL to the prior

    For one latent dimension, the KL of $q = \mathcal N(\mu, \sigma^2)$ to $p = \mathcal N(0, 1)$
    has a closed form; for $J$ independent dimensions the terms add up:

    $$
    D_{\mathrm{KL}}(q\,\Vert\,p) = \mathbb E_{z\sim q}\big[\log q(z) - \log p(z)\big]
    = -\tfrac12\big(1 + \log\sigma^2 - \mu^2 - \sigma^2\big),
    \qquad D_{\mathrm{KL}} = -\tfrac12 \sum_{j=1}^{J}\big(1 + \log\sigma_j^2 - \mu_j^2 - \sigma_j^2\big).
    $$

    It is zero only for $\mu = 0, \sigma = 1$: moving the code away from $0$ costs $\mu^2/2$, and
    making it precise (small $\sigma$) costs $-\log\sigma$, without limit. The closed form below is
    checked against a Monte-Carlo average of $\log q(z) - \log p(z)$ over samples $z \sim q$ (it uses
    the μ, σ and sample sliders above).
    """)
    return


@app.function
def kl_to_prior(mu, logvar):
    """The price of the code, per latent dimension j:

    KL(N(μ_j, σ_j²) ‖ N(0, 1)) = −½ (1 + log σ_j² − μ_j² − σ_j²).
    """
    return -0.5 * (1 + logvar - mu**2 - logvar.exp())


@app.cell
def _(q_mu, q_samples, q_sigma):
    kl = lab.kl_check(kl_to_prior, q_mu.value, q_sigma.value, n_samples=max(2, q_samples.value), seed=1)
    mo.md(
        f"Closed form: **{kl.closed:.4f}** nats · Monte Carlo over {max(2, q_samples.value)} "
        f"samples: **{kl.mc:.4f} ± {kl.mc_se:.4f}** (one standard error). The histograms of "
        "section 2 show the two densities: z is drawn from q, ε from the prior p."
    )
    return (kl,)


@app.cell
def _():
    # kl_to_prior over a grid of (μ, σ), one latent dimension each
    _mus = np.linspace(-3, 3, 25)
    _sigmas = np.linspace(0.1, 3, 30)
    _surface = kl_to_prior(
        engine.tensor(np.repeat(_mus[None, :], 30, axis=0)),
        engine.tensor(np.log(np.repeat(_sigmas[:, None], 25, axis=1) ** 2)),
    ).numpy()
    ui.chart(
        plot.heatmap(
            np.log10(_surface[::-1] + 1e-3),
            x_labels=[f"{m:.1f}" for m in _mus],
            y_labels=[f"{s:.1f}" for s in _sigmas[::-1]],
            x_title="μ",
            y_title="σ",
            color_title="log₁₀ KL",
            scheme="purples",
            title="KL over (μ, σ): zero only at μ = 0, σ = 1",
        )
    )
    return


@app.cell
def _():
    exercises_kl = {
        "shift": exercises.NumberExercise(
            question=r"**Exercise 1.** What is $D_{\mathrm{KL}}\big(\mathcal N(1, 1)\,\Vert\,\mathcal N(0, 1)\big)$ in nats?",
            truth=float(vae.gaussian_kl(np.array([1.0]), np.array([0.0])).data),
            hint="with σ = 1 the terms 1 + log σ² − σ² cancel: only −½(−μ²) remains.",
            abs_tol=1e-3,
            placeholder="KL in nats",
        ),
        "narrow": exercises.NumberExercise(
            question=r"**Exercise 2.** And $D_{\mathrm{KL}}\big(\mathcal N(0, 0.5^2)\,\Vert\,\mathcal N(0, 1)\big)$? (Three decimals.)",
            truth=float(vae.gaussian_kl(np.array([0.0]), np.log(np.array([0.25]))).data),
            hint="put μ = 0 and σ² = 0.25 into −½(1 + log σ² − μ² − σ²); log 0.25 ≈ −1.386.",
            abs_tol=1.5e-3,
            placeholder="KL in nats",
        ),
    }
    answers_kl = ui.answer_boxes(exercises_kl)
    return answers_kl, exercises_kl


@app.cell
def _(answers_kl, exercises_kl):
    ui.exercise_list("### Check yourself", exercises_kl, answers_kl)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 4. Why not differentiate the density instead?

    Without the trick, the gradient of an expectation can still be estimated, by differentiating
    the density rather than the sample (the **score-function** or REINFORCE estimator):

    $$
    \nabla_\mu\,\mathbb E_{q_\mu}[f(z)] = \mathbb E_{q_\mu}\big[f(z)\,\nabla_\mu \log q_\mu(z)\big]
    \quad\text{vs.}\quad
    \nabla_\mu\,\mathbb E_{\varepsilon}[f(\mu + \sigma\varepsilon)] = \mathbb E_\varepsilon\big[f'(\mu+\sigma\varepsilon)\big].
    $$

    Both are unbiased. The score function only sees the values of $f$, and multiplies them by a
    random factor; the pathwise gradient uses $f$'s slope. Because
    $\mathbb E_{q_\mu}[\nabla_\mu \log q_\mu(z)] = 0$, any **baseline** $b$ that does not depend on
    $z$ can be subtracted from $f(z)$ without changing the mean,
    $\mathbb E\big[(f(z) - b)\,\nabla_\mu \log q_\mu(z)\big]$; a $b$ close to $f(z)$ (here $b = f(\mu)$) is a
    **control variate** that removes part of the variance. Each histogram below holds 2000
    independent estimates, each averaging the chosen number of samples, all three on the same
    draws and computed by the engine's autograd: the score function by the cell below (with
    $b = 0$, then $b = f(\mu)$), the pathwise gradient through `reparameterize`.

    **Change this cell:** weigh the samples by `f(z)` alone, forgetting the baseline. The middle
    histogram then becomes the first, and the variance ratio score/baseline falls to 1.
    """)
    return


@app.function
def score_function_gradient(f, mu, sigma, eps, baseline=0.0):
    """The score-function (REINFORCE) estimate of ∂/∂μ E_{z~N(μ, σ²)}[f(z)], one per row of the
    draws eps [n, S], each averaging its S samples z_s = μ + σ ε_s:

    ĝ = mean_s (f(z_s) − b) · ∂/∂μ log q_μ(z_s),   log q_μ(z) = −(z − μ)²/(2σ²) + const,

    with z held fixed: f only weighs the samples, autograd differentiates log q in μ, whose
    derivative (z − μ)/σ² has mean 0, so the baseline b leaves the estimate unbiased."""
    z = engine.tensor(mu + sigma * eps)
    with engine.no_grad():
        weights = f(z) - baseline
    mu_rows = engine.tensor(np.full((len(eps), 1), float(mu)), requires_grad=True)
    log_q = -((z - mu_rows) ** 2) / (2 * sigma**2)
    (log_q * weights).mean(dim=1).sum().backward()
    return mu_rows.grad.numpy()[:, 0]


@app.cell
def _():
    est_function = mo.ui.dropdown(options=list(lab.ESTIMATOR_FUNCTIONS), value="z²", label="f(z)")
    est_samples = mo.ui.slider(steps=[1, 2, 5, 10, 50, 100], value=1, label="samples per estimate", show_value=True)
    mo.hstack([est_function, est_samples], justify="start")
    return est_function, est_samples


@app.cell
def _(est_function, est_samples, q_mu, q_sigma):
    estimates = lab.estimator_comparison(
        score_function_gradient,
        reparameterize,
        q_mu.value,
        q_sigma.value,
        est_function.value,
        n_samples=est_samples.value,
        n=2000,
        seed=2,
    )
    _panels = {
        "score function (REINFORCE)": estimates.score_function,
        "score function, baseline f(μ)": estimates.baseline,
        "reparameterised (pathwise)": estimates.reparameterized,
    }
    _vars = dict(zip(_panels, (estimates.score_var, estimates.baseline_var, estimates.reparam_var)))
    _all = np.concatenate(list(_panels.values()))
    _lo, _hi = np.percentile(_all, [1, 99])
    _pad = max(1e-3, 0.1 * (_hi - _lo))
    _hist = plot.histogram_grid(
        _panels,
        bins=40,
        columns=3,
        range_=(_lo - _pad, _hi + _pad),
        x_title="estimate of ∂/∂μ E[f(z)]",
        panel_width=220,
        panel_height=120,
        flags={k: f"variance {v:.3g}" for k, v in _vars.items()},
    )
    variance_ratio = estimates.score_var / max(estimates.reparam_var, 1e-300)
    baseline_ratio = estimates.score_var / max(estimates.baseline_var, 1e-300)
    mo.vstack(
        [
            mo.md(
                f"exact gradient **{estimates.exact:.4f}** · means: score function "
                f"{estimates.score_function.mean():.4f}, with baseline {estimates.baseline.mean():.4f}, "
                f"pathwise {estimates.reparameterized.mean():.4f} · variance ratio score/pathwise: "
                f"**{variance_ratio:.3g}**, score/baseline: **{baseline_ratio:.3g}** (μ and σ from "
                "section 2)"
            ),
            ui.chart(_hist),
        ]
    )
    return baseline_ratio, estimates, variance_ratio


@app.cell
def _():
    exercise_gradient = exercises.NumberExercise(
        question=r"**Exercise 3.** For $z \sim \mathcal N(\mu, \sigma^2)$ with $\mu = 1.5$ and "
        r"$\sigma = 0.5$: what is the exact $\partial/\partial\mu\; \mathbb E[z^2]$?",
        truth=lab.reparam_gradients(reparameterize, 1.5, 0.5, n=10).exact_grad_mu,
        hint="E[z²] = μ² + σ²; differentiate in μ.",
        abs_tol=1e-3,
    )
    exercise_baseline = exercises.ChoiceExercise(
        question="**Exercise 4.** Subtracting a baseline b from f(z) in the score-function estimator changes…",
        options={"its mean": "mean", "its variance, not its mean": "variance", "both": "both"},
        truth="variance",
        hint="E[∇_μ log q(z)] = 0, so E[b·∇_μ log q(z)] = 0 for any b that does not depend on z.",
        explanation="The baseline is a control variate: unbiased, and as good as it is close to f(z).",
    )
    answer_gradient = ui.answer_box(exercise_gradient, placeholder="gradient")
    answer_baseline = ui.answer_box(exercise_baseline)
    # The questions and boxes are shown here, so an answer re-runs only the verdicts below them
    # (re-showing the radio it came from costs the page more than the grading).
    _exercises = mo.vstack(
        [
            mo.md(exercise_gradient.question),
            answer_gradient,
            mo.md(exercise_baseline.question),
            answer_baseline,
        ]
    )
    _said = mo.md(r"""
    At the default setting the baseline narrows the score-function histogram for all three
    functions, and the pathwise estimates are the tightest by far: for $f = z^2$ or $e^z$ the
    score function multiplies large values of $f$ by noise. Neither estimator always wins. The
    score function's factor $(z - \mu)/\sigma^2 = \varepsilon/\sigma$ shrinks as $\sigma$ grows,
    so for a bounded $f$ its variance falls like $1/\sigma^2$, while the pathwise estimate
    $f'(z)$ keeps the spread of the slope: for $f = \sin z$ with $\mu = 0$, $\sigma = 2$ the
    score function's variance is about a quarter of the pathwise one. A baseline helps only when
    it is close to $f(z)$: at $\mu = 1$, $\sigma = 2$, $b = \sin 1 \approx 0.84$ is far from most
    values of $\sin z$ and multiplies the variance by about 4. VAEs use the pathwise gradient,
    whose variance follows the decoder's slope; the score function, with a baseline, remains for
    discrete $z$, where there is no path to differentiate.
    """)
    mo.vstack([_said, _exercises])
    return answer_baseline, answer_gradient, exercise_baseline, exercise_gradient


@app.cell
def _(answer_baseline, answer_gradient, exercise_baseline, exercise_gradient):
    mo.vstack(
        [
            mo.md("Exercise 3:"),
            ui.verdict(exercise_gradient.check(answer_gradient.value)),
            mo.md("Exercise 4:"),
            ui.verdict(exercise_baseline.check(answer_baseline.value)),
        ]
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 5. The ELBO as a budget, and posterior collapse

    Weight the KL by $\beta$ and minimise

    $$
    \mathcal L_\beta = \underbrace{-\mathbb E_q[\log p_\theta(x\mid z)]}_{\text{reconstruction}} +
    \beta \sum_{j} D_{\mathrm{KL}}\big(q(z_j\mid x)\,\Vert\,\mathcal N(0,1)\big).
    $$

    Every nat of information a latent dimension carries about $x$ is paid for in KL. With small
    $\beta$ the code is cheap and reconstructions are sharp; as $\beta$ grows, dimensions whose
    information is not worth their price are switched off: their $q(z_j\mid x)$ becomes the prior
    for every $x$ and their KL drops to zero. This is **posterior collapse**; at large $\beta$ every
    dimension collapses and the decoder outputs the same average point whatever the input.

    A VAE with a few latent dimensions is trained on the 2-D data below, with a Gaussian decoder
    $p_\theta(x\mid z) = \mathcal N\big(\hat x_\theta(z), \sigma_x^2 I\big)$. Its reconstruction term is
    $\lVert x - \hat x\rVert^2/(2\sigma_x^2) + \tfrac D2\log(2\pi\sigma_x^2)$, so the **decoder variance**
    $\sigma_x^2$ is the same knob as $\beta$: multiplying the loss by $\sigma_x^2/\sigma_0^2$ (which does
    not change Adam's steps) turns $(\sigma_x^2, \beta)$ into $(\sigma_0^2,\ \beta\,\sigma_x^2/\sigma_0^2)$.
    A larger $\sigma_x^2$ makes reconstruction errors cheap, exactly as a larger $\beta$ makes the
    code dear. The two cells below are the whole objective and the whole training loop; every model
    on this page is trained by them.

    **Change this cell:** in `negative_elbo`, return `recon` alone as the loss, the ELBO without its
    KL term. The sections below then say that their shipped models were trained with other code;
    press **Train the VAE**. Nothing ties the codes to $\mathcal N(0, I)$ any more: the KL per
    dimension climbs to several nats, and the decoded samples $z \sim \mathcal N(0, I)$ no longer
    land on the data.
    """)
    return


@app.function
def negative_elbo(model, x, beta=1.0, free_bits=0.0):
    """The loss a VAE minimises on a batch x [N, D], one draw z = μ + σε per row:

    −ELBO_β = E_q[−log p(x | z)] + β Σ_j KL_j,   −log p(x | z) = ‖x − x̂(z)‖² / (2σ²ₓ) + (D/2) log(2πσ²ₓ),

    each term averaged over the batch; free bits λ charge each dimension max(KL_j, λ).
    Returns (loss, reconstruction term, KL per dimension).
    """
    x = engine.tensor(x)
    mu, logvar = encode(model, x)
    x_hat = decode(model, reparameterize(mu, logvar))
    recon = ((x - x_hat) ** 2).sum(dim=1).mean() / (2 * model.obs_var) + 0.5 * x.shape[1] * math.log(
        2 * math.pi * model.obs_var
    )
    kl = kl_to_prior(mu, logvar).mean(dim=0)
    charged = kl.clamp(min=free_bits) if free_bits > 0 else kl
    return recon + beta * charged.sum(), recon, kl


@app.function
def train_vae(model, X, steps, lr=3e-3, beta=1.0, batch_size=128, free_bits=0.0, anneal=False, on_step=None):
    """Minimise negative_elbo with Adam, one mini-batch of the rows of X per step, reshuffled
    every epoch: θ ← Adam(θ, ∇_θ −ELBO_β(batch)). With ``anneal`` the KL weight at step t of T
    is β·min(1, 2t/T)."""
    optimizer = engine.optim.Adam(model.parameters(), lr=lr)
    per_epoch = math.ceil(len(X) / batch_size)
    for step in range(steps):
        if step % per_epoch == 0:
            order = engine.random.generator().permutation(len(X))
        start = step % per_epoch * batch_size
        weight = beta * min(1.0, 2 * (step + 1) / steps) if anneal else beta
        loss, _, _ = negative_elbo(model, X[order[start : start + batch_size]], weight, free_bits)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"the loss became {loss.item()} at step {step + 1}; lower the learning rate")
        if on_step is not None:
            on_step(step + 1)
    return model


@app.function
def lesson_cells():
    """The lesson cells of this page, as they stand, for the lab's training runs."""
    return lab.Lesson(vae_model, encode, decode, negative_elbo, train_vae, parts=(reparameterize, kl_to_prior))


@app.cell
def _():
    # the defaults are the settings of the models the page opens on (shipped checkpoints)
    vae_data = mo.ui.dropdown(options=list(lab.DATASETS_2D), value=lab.TOY_DEFAULTS["data"], label="data")
    vae_beta = mo.ui.slider(
        steps=[0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0],
        value=lab.TOY_DEFAULTS["beta"],
        label="β",
        show_value=True,
    )
    vae_obs_var = mo.ui.slider(
        steps=[0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0],
        value=lab.TOY_DEFAULTS["obs_var"],
        label="decoder variance σ²ₓ",
        show_value=True,
    )
    vae_latent = mo.ui.slider(1, 6, value=lab.TOY_DEFAULTS["latent_dim"], label="latent dimensions", show_value=True)
    vae_steps = mo.ui.slider(
        100, 4000, step=100, value=lab.TOY_DEFAULTS["steps"], label="training steps", show_value=True
    )
    vae_train = mo.ui.run_button(label="Train the VAE")
    vae_sweep = mo.ui.run_button(label="Sweep β from 0.1 to 100")
    mo.vstack(
        [
            mo.hstack([vae_data, vae_beta, vae_obs_var, vae_latent, vae_steps], wrap=True),
            mo.hstack([vae_train, vae_sweep], justify="start"),
        ]
    )
    return vae_beta, vae_data, vae_latent, vae_obs_var, vae_steps, vae_sweep, vae_train


@app.cell
def _():
    # what the Train buttons trained, each with the settings and lesson code it was trained with
    trained_vae, set_trained_vae = mo.state(None)
    trained_sweep, set_trained_sweep = mo.state(None)
    trained_aggregate, set_trained_aggregate = mo.state(None)
    trained_remedies, set_trained_remedies = mo.state(None)
    trained_digits, set_trained_digits = mo.state(None)
    return (
        set_trained_aggregate,
        set_trained_digits,
        set_trained_remedies,
        set_trained_sweep,
        set_trained_vae,
        trained_aggregate,
        trained_digits,
        trained_remedies,
        trained_sweep,
        trained_vae,
    )


@app.cell
def _(
    set_trained_sweep,
    set_trained_vae,
    trained_sweep,
    trained_vae,
    vae_beta,
    vae_data,
    vae_latent,
    vae_obs_var,
    vae_steps,
    vae_sweep,
    vae_train,
):
    # a button trains with the settings above; a model stays shown until they or the lesson cells change
    _lesson = lesson_cells()
    _toy = (_lesson, vae_data.value, vae_beta.value, vae_obs_var.value, vae_latent.value, vae_steps.value)
    _sweep = (_lesson, vae_data.value, vae_latent.value, vae_obs_var.value)
    if vae_train.value:
        _points, _labels = lab.toy_points(vae_data.value)
        with mo.status.progress_bar(total=vae_steps.value, title="training", remove_on_exit=True) as _bar:
            set_trained_vae(
                (
                    _toy,
                    lab.train_vae_2d(
                        _lesson,
                        _points,
                        beta=vae_beta.value,
                        latent_dim=vae_latent.value,
                        steps=vae_steps.value,
                        obs_var=vae_obs_var.value,
                        seed=0,
                        on_step=throttled(_bar, vae_steps.value),
                        labels=_labels,
                    ),
                )
            )
    elif trained_vae() is not None and trained_vae()[0] != _toy:
        set_trained_vae(None)
    if vae_sweep.value:
        _total = lab.SWEEP_STEPS * len(lab.SWEEP_BETAS)
        with mo.status.progress_bar(total=_total, title="sweep", remove_on_exit=True) as _bar:
            set_trained_sweep(
                (
                    _sweep,
                    lab.beta_sweep(
                        _lesson,
                        lab.toy_points(vae_data.value)[0],
                        lab.SWEEP_BETAS,
                        latent_dim=vae_latent.value,
                        steps=lab.SWEEP_STEPS,
                        obs_var=vae_obs_var.value,
                        seed=0,
                        on_step=throttled(_bar, _total),
                    ),
                )
            )
    elif trained_sweep() is not None and trained_sweep()[0] != _sweep:
        set_trained_sweep(None)
    vae_equivalent = lab.equivalent_beta(vae_beta.value, vae_obs_var.value, reference_var=0.05)
    mo.md(
        f"β = {vae_beta.value:g} with σ²ₓ = {vae_obs_var.value:g} trains the same model as "
        f"β = **{vae_equivalent:.3g}** with σ²ₓ = 0.05."
    )
    return (vae_equivalent,)


@app.cell
def _(trained_vae):
    _shipped = trained_vae() is None
    if _shipped:
        try:
            vae_run = lab.default_vae_2d(lesson_cells())
        except ValueError as _err:
            mo.stop(True, ui.not_loaded(_err))
    else:
        vae_run = trained_vae()[1]
    mo.stop(bool(vae_run.stopped), mo.callout(mo.md(vae_run.stopped), kind="warn"))
    vae_active = int((vae_run.kl_per_dim > 0.05).sum())
    vae_view(vae_run, _shipped)
    return vae_active, vae_run


@app.cell
def _(trained_sweep):
    if trained_sweep() is None:
        try:
            sweep = lab.default_beta_sweep(lesson_cells())
        except ValueError as _err:
            mo.stop(True, ui.not_loaded(_err))
    else:
        sweep = trained_sweep()[1]
    sweep_view(sweep, trained_sweep() is None)
    return (sweep,)


@app.cell
def _():
    aggregate_run = mo.ui.run_button(label="Train at β = 0, 0.1, 1, 10")
    mo.vstack(
        [
            mo.md(r"""
    **Where the codes go.** Decoding $z \sim \mathcal N(0, I)$ produces data only if the codes
    the encoder actually uses, the **aggregate posterior** $q(z) = \frac1N\sum_n q(z\mid x_n)$,
    fill the prior. Below, a VAE with a 2-D code is trained at four values of $\beta$ (the page
    opens on the default data; the button trains on the data chosen above), $\beta = 0$ being a
    plain autoencoder whose codes are merely noisy, and each draws one
    $z \sim q(z\mid x)$ per held-out point over draws of the prior. Two energy distances score it:
    codes to prior, and decoded prior samples to the data.
    """),
            aggregate_run,
        ]
    )
    return (aggregate_run,)


@app.cell
def _(aggregate_run, set_trained_aggregate, trained_aggregate, vae_data, vae_obs_var):
    _key = (lesson_cells(), vae_data.value, vae_obs_var.value)
    if aggregate_run.value:
        _total = lab.AGGREGATE_STEPS * len(lab.AGGREGATE_BETAS)
        try:
            with mo.status.progress_bar(total=_total, title="training", remove_on_exit=True) as _bar:
                set_trained_aggregate(
                    (
                        _key,
                        lab.aggregate_posterior(
                            _key[0],
                            lab.toy_points(vae_data.value)[0],
                            betas=lab.AGGREGATE_BETAS,
                            steps=lab.AGGREGATE_STEPS,
                            obs_var=vae_obs_var.value,
                            seed=0,
                            on_step=throttled(_bar, _total),
                        ),
                    )
                )
        except ValueError as _err:
            set_trained_aggregate(None)
            mo.stop(True, ui.problem(_err, "This training"))
    elif trained_aggregate() is not None and trained_aggregate()[0] != _key:
        set_trained_aggregate(None)
    return


@app.cell
def _(trained_aggregate):
    if trained_aggregate() is None:
        try:
            aggregate = lab.default_aggregate_posterior(lesson_cells())
        except ValueError as _err:
            mo.stop(True, ui.not_loaded(_err))
    else:
        aggregate = trained_aggregate()[1]
    aggregate_view(aggregate, trained_aggregate() is None)
    return (aggregate,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    At $\beta = 0$ nothing ties the codes to the prior: they spread where the decoder finds them
    convenient, the prior puts mass on regions no code visits (the holes), and decoded prior
    samples land far from the data. At $\beta = 1$ the codes fill the prior and the samples come
    closest to the data. At $\beta = 10$ the codes match the prior best of all, but by carrying
    little information: the samples get worse again.

    **Remedies for collapse.** Two common fixes change the training loss, not the model:
    **KL annealing** (Bowman et al. 2016) raises the KL weight from 0 to $\beta$ over the first half
    of training, so the decoder learns to use the code while it is cheap; **free bits** (Kingma et
    al. 2016) charge each dimension $\max(\overline{\mathrm{KL}}_j, \lambda)$, where
    $\overline{\mathrm{KL}}_j$ is that dimension's KL averaged over the batch, so no gradient pushes
    a dimension's batch average below $\lambda$ nats (single examples may still fall below it).
    Kingma et al. floor groups of latent dimensions; here each group is one dimension. Three VAEs with three latent dimensions are trained, one per
    remedy (the page opens on the default settings; the button trains with the β and λ below on
    the data chosen above), and each is measured on held-out points without the remedy (the true
    KL and the $\beta = 1$ ELBO).
    """)
    return


@app.cell
def _():
    remedy_beta = mo.ui.slider(
        steps=[1.0, 3.0, 10.0, 30.0], value=lab.REMEDY_DEFAULTS["beta"], label="β", show_value=True
    )
    remedy_bits = mo.ui.slider(
        steps=[0.1, 0.25, 0.5, 1.0], value=lab.REMEDY_DEFAULTS["free_bits"], label="free bits λ (nats)", show_value=True
    )
    remedy_run = mo.ui.run_button(label="Train with each remedy")
    mo.hstack([remedy_beta, remedy_bits, remedy_run], justify="start")
    return remedy_beta, remedy_bits, remedy_run


@app.cell
def _(remedy_beta, remedy_bits, remedy_run, set_trained_remedies, trained_remedies, vae_data, vae_obs_var):
    _d = lab.REMEDY_DEFAULTS
    _key = (lesson_cells(), remedy_beta.value, remedy_bits.value, vae_data.value, vae_obs_var.value)
    if remedy_run.value:
        _total = len(lab.COLLAPSE_REMEDIES) * _d["steps"]
        with mo.status.progress_bar(total=_total, title="training", remove_on_exit=True) as _bar:
            set_trained_remedies(
                (
                    _key,
                    lab.train_remedies(
                        _key[0],
                        lab.toy_points(vae_data.value)[0],
                        beta=remedy_beta.value,
                        free_bits=remedy_bits.value,
                        latent_dim=_d["latent_dim"],
                        steps=_d["steps"],
                        obs_var=vae_obs_var.value,
                        seed=0,
                        on_step=throttled(_bar, _total),
                    ),
                )
            )
    elif trained_remedies() is not None and trained_remedies()[0] != _key:
        set_trained_remedies(None)
    return


@app.cell
def _(trained_remedies):
    _d = lab.REMEDY_DEFAULTS
    if trained_remedies() is None:
        try:
            remedies = lab.default_remedies(lesson_cells())
        except ValueError as _err:
            mo.stop(True, ui.not_loaded(_err))
    else:
        remedies = trained_remedies()[1]
    _caption = source_caption(
        trained_remedies() is None,
        "Train with each remedy",
        f"{lab.TOY_DEFAULTS['data']}, β = {_d['beta']:g}, λ = {_d['free_bits']:g} nats, "
        f"σ²ₓ = {lab.TOY_DEFAULTS['obs_var']:g}, {_d['steps']} steps",
        "the three models",
    )
    _rows = ["| remedy | KL per dimension (nats) | active | reconstruction | ELBO (β = 1) |", "|---|---|---|---|---|"]
    for _name, _r in remedies.items():
        if _r.stopped:
            _rows.append(f"| {_name} | {_r.stopped} | | | |")
        else:
            _rows.append(
                f"| {_name} | {', '.join(f'{_k:.2f}' for _k in _r.kl_per_dim)} | "
                f"{int((_r.kl_per_dim > 0.05).sum())} | {_r.recon:.3f} | {_r.elbo:.3f} |"
            )
    mo.md("\n".join(_rows) + "\n\n" + _caption)
    return (remedies,)


@app.cell
def _():
    # the same three trainings at the defaults with five seeds: what one run shows, and what holds
    try:
        remedy_seeds = lab.default_remedy_seeds(lesson_cells())
    except ValueError:
        mo.stop(True, mo.md("*The runs with seeds 1 to 4 are shipped too, for the page's own cells only.*"))
    _free = remedy_seeds.kl_per_dim["free bits"]
    _rows = [
        "| remedy | dimensions in use (KL > 0.05), seeds 0–4 | held-out ELBO (β = 1), seeds 0–4 |",
        "|---|---|---|",
    ] + [
        f"| {_name} | {', '.join(str(_a) for _a in remedy_seeds.active[_name])} | "
        f"{', '.join(f'{_e:.2f}' for _e in remedy_seeds.elbo[_name])} |"
        for _name in lab.COLLAPSE_REMEDIES
    ]
    mo.md(
        "**Five seeds** at the defaults (β = 10, λ = 0.5; seed 0 is the run above):\n\n"
        + "\n".join(_rows)
        + f"\n\nWith free bits, the KL of each of the 15 dimensions (3 per run) lies between "
        f"**{_free.min():.2f}** and **{_free.max():.2f}** nats.\n\n*Shown: the fifteen models shipped "
        "with the course, trained by this page's cells with the default settings; the button above "
        "trains seed 0 with yours.*"
    )
    return (remedy_seeds,)


@app.cell
def _():
    exercises_collapse = {
        "free_bits": exercises.NumberExercise(
            question="**Exercise 5.** Free bits with λ = 0.5 nats and three latent dimensions: what is "
            "the smallest KL term (in nats, before β) the loss can charge?",
            truth=3 * 0.5,
            hint="each dimension counts as max(KL_j, λ), never less than λ.",
            abs_tol=1e-6,
            placeholder="nats",
        ),
        "knob": exercises.NumberExercise(
            question="**Exercise 6.** A VAE trains with decoder variance σ²ₓ = 0.2 and β = 1. With "
            "σ²ₓ = 0.05, which β trains the same model?",
            truth=lab.equivalent_beta(1.0, 0.2, reference_var=0.05),
            hint="multiply the loss ‖x − x̂‖²/(2σ²ₓ) + β·KL by σ²ₓ/0.05.",
            rel_tol=1e-3,
            placeholder="β",
        ),
    }
    answers_collapse = ui.answer_boxes(exercises_collapse)
    mo.md(r"""
    Over the five seeds at the defaults ($\beta = 10$, $\lambda = 0.5$), the plain run keeps one
    dimension in use and switches the other two off, every time. Free bits keep all three in use in
    every run, each within 0.06 nats of $\lambda$, and their held-out ELBO is 3 to 4 nats better
    than the plain run's. KL annealing does not move the optimum: at the end of training the weight
    is $\beta$ again, it keeps one dimension as the plain run does, and its held-out ELBO stays
    within 0.75 nats of the plain run's, below it in four seeds of five. Annealing helps when
    collapse comes from the early dynamics (a strong decoder that learns to ignore $z$ before the
    encoder is useful), which this small model does not show.
    """)
    return answers_collapse, exercises_collapse


@app.cell
def _(answers_collapse, exercises_collapse):
    ui.exercise_list("", exercises_collapse, answers_collapse)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## 6. A VAE on images: the latent space

    Now real handwritten digits: the 1,797 $8\times8$ UCI digits (`engine.data.load_digits`,
    1,437 to train on, 360 held out), with a **two**-dimensional code, so that the whole latent
    space fits on the screen. A grey pixel is an intensity in $[0, 1]$, not the outcome of a coin
    flip, so the decoder is Gaussian, $p_\theta(x\mid z) = \mathcal N(\hat x_\theta(z), \sigma_x^2 I)$: a
    normalised density on the 64 pixel values, which makes the held-out ELBO a lower bound on
    $\log p_\theta(x)$, a log **density** (it can be positive). A Bernoulli likelihood on grey values
    is not normalised over $[0, 1]$, and its "ELBO" bounds nothing. Each held-out image is placed
    at its code $\mu(x)$, coloured by its digit (never shown to the model); the grid decodes evenly
    spaced codes; the point below decodes any code you choose.
    """)
    return


@app.cell
def _():
    image_steps = mo.ui.slider(
        50, 2000, step=50, value=lab.IMAGE_DEFAULTS["steps"], label="training steps", show_value=True
    )
    image_obs_var = mo.ui.slider(
        steps=[0.01, 0.02, 0.05, 0.1, 0.2],
        value=lab.IMAGE_DEFAULTS["obs_var"],
        label="decoder variance σ²ₓ",
        show_value=True,
    )
    image_train = mo.ui.run_button(label="Train the digit VAE")
    iwae_K = mo.ui.slider(steps=list(lab.IWAE_KS), value=30, label="importance samples K", show_value=True)
    latent_z1 = mo.ui.slider(-3.0, 3.0, step=0.1, value=0.0, label="z₁", show_value=True)
    latent_z2 = mo.ui.slider(-3.0, 3.0, step=0.1, value=0.0, label="z₂", show_value=True)
    mo.hstack([image_steps, image_obs_var, image_train], justify="start")
    return image_obs_var, image_steps, image_train, iwae_K, latent_z1, latent_z2


@app.cell
def _():
    digits_train, _ = data.load_digits("train")
    digits_test, digit_labels = data.load_digits("test")
    return digit_labels, digits_test, digits_train


@app.cell
def _(
    digit_labels, digits_test, digits_train, image_obs_var, image_steps, image_train, set_trained_digits, trained_digits
):
    # the button trains with the settings above; the model stays shown until they or the lesson cells change
    _key = (lesson_cells(), image_steps.value, image_obs_var.value)
    if image_train.value:
        with mo.status.progress_bar(total=image_steps.value, title="training", remove_on_exit=True) as _bar:
            set_trained_digits(
                (
                    _key,
                    lab.train_image_vae(
                        _key[0],
                        digits_train,
                        digits_test,
                        digit_labels,
                        steps=image_steps.value,
                        obs_var=image_obs_var.value,
                        seed=0,
                        on_step=throttled(_bar, image_steps.value),
                    ),
                )
            )
    elif trained_digits() is not None and trained_digits()[0] != _key:
        set_trained_digits(None)
    return


@app.cell
def _(trained_digits):
    image_shipped = trained_digits() is None
    if image_shipped:
        try:
            image_vae = lab.default_image_vae(lesson_cells(), iwae_bound)
        except ValueError as _err:
            mo.stop(True, ui.not_loaded(_err))
    else:
        image_vae = trained_digits()[1]
    return image_shipped, image_vae


@app.cell
def _(image_shipped, image_vae):
    mo.stop(bool(image_vae.stopped), mo.callout(mo.md(image_vae.stopped), kind="warn"))
    digits_view(image_vae, image_shipped)
    return


@app.cell
def _(image_vae):
    mo.stop(bool(image_vae.stopped))
    # Every held-out digit at its code μ(x), coloured by digit; a click picks one (read in the next cell).
    _digits = [str(d) for d in range(10)]
    _codes = plot.data(
        index=np.arange(len(image_vae.latents)),
        z1=image_vae.latents[:, 0],
        z2=image_vae.latents[:, 1],
        digit=np.array(_digits, dtype=object)[image_vae.labels],
    )
    _pick = alt.selection_point(name="code_pick", fields=["index"], on="click")
    latent_scatter = ui.chart_control(
        alt.Chart(_codes, width="container", height=320, title="held-out digits at their codes · click one")
        .mark_circle(size=30)
        .encode(
            alt.X("z1:Q", title="z₁ = μ₁(x)"),
            alt.Y("z2:Q", title="z₂ = μ₂(x)"),
            alt.Color("digit:N", sort=_digits, scale=alt.Scale(domain=_digits, range=list(plot.CLASS_COLORS))),
            alt.Tooltip("digit:N"),
            opacity=alt.condition(_pick, alt.value(0.9), alt.value(0.25)),
        )
        .add_params(_pick)
    )
    return (latent_scatter,)


@app.cell
def _(image_vae, latent_scatter):
    mo.stop(bool(image_vae.stopped))
    # The digit clicked above (the first held-out digit until one is): the image, and what the
    # decoder makes of its code μ(x), the reconstruction the ELBO's first term scores.
    _i = int(ui.selected(latent_scatter, "code_pick", "index", default=[0])[0])
    _z1, _z2 = (float(v) for v in image_vae.latents[_i])
    mo.hstack(
        [
            latent_scatter,
            mo.vstack(
                [
                    mo.md(f"Held-out digit **{image_vae.labels[_i]}** (#{_i}), code μ(x) = ({_z1:.2f}, {_z2:.2f})"),
                    mo.hstack(
                        [
                            digit_image(image_vae.images[_i], "the digit", scale=16),
                            digit_image(image_vae.reconstructions[_i], "decoded from μ(x)", scale=16),
                        ],
                        justify="start",
                    ),
                ]
            ),
        ],
        widths=[3, 2],
    )
    return


@app.cell
def _(latent_z1, latent_z2):
    # drag the point; the two sliders above are the keyboard path to the same code
    latent_point = widgets.point_2d(
        x=latent_z1.value, y=latent_z2.value, x_bounds=(-3.0, 3.0), y_bounds=(-3.0, 3.0), size=220
    )
    return (latent_point,)


@app.cell
def _(image_vae, latent_point, latent_z1, latent_z2):
    mo.stop(bool(image_vae.stopped))
    latent_code = widgets.point(latent_point.value)
    decoded = lab.decode_point(lesson_cells(), image_vae.model, *latent_code).reshape(image_vae.image_shape)
    mo.vstack(
        [
            mo.md(
                "**Latent explorer**: drag the point (or use the sliders) to choose a code, and see "
                "what the decoder makes of it."
            ),
            mo.hstack(
                [mo.vstack([latent_point, latent_z1, latent_z2]), decoded_map(image_vae, *latent_code)], justify="start"
            ),
        ]
    )
    return decoded, latent_code


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Walking between two digits.** Pick two held-out digits $x_a$ and $x_b$. The first row decodes
    codes on the straight line between their codes,

    $$
    z(t) = (1 - t)\,\mu(x_a) + t\,\mu(x_b), \qquad t = 0, \tfrac1{n-1}, \dots, 1,
    $$

    and the second row applies the same line to the pixels, $(1 - t)\,x_a + t\,x_b$. The pixel path
    fades one image into the other, a double exposure; the latent path stays on what the decoder
    makes of a code, so it moves through shapes it learned. Each midpoint ($t = \tfrac12$) is scored by its distance to the nearest
    held-out digit other than the two ends: for the model the page opens on, the latent midpoint
    is the closer for most pairs, not all (the count below).
    """)
    return


@app.function
def interpolate_codes(u, v, steps):
    """``steps`` points on the straight line from u to v, ends included (rows of the result):
    (1 − t)·u + t·v,  t = 0, 1/(steps − 1), …, 1."""
    t = np.linspace(0.0, 1.0, steps)[:, None]
    return (1 - t) * np.asarray(u, dtype=np.float64)[None, :] + t * np.asarray(v, dtype=np.float64)[None, :]


@app.cell
def _(digit_labels):
    _firsts = {f"the first held-out {_d}": int(np.flatnonzero(digit_labels == _d)[0]) for _d in range(10)}
    walk_from = mo.ui.dropdown(options=_firsts, value="the first held-out 0", label="from")
    walk_to = mo.ui.dropdown(options=_firsts, value="the first held-out 7", label="to")
    walk_steps = mo.ui.slider(3, 12, value=8, label="images n", show_value=True)
    walk_firsts = list(_firsts.values())
    mo.hstack([walk_from, walk_to, walk_steps], justify="start")
    return walk_firsts, walk_from, walk_steps, walk_to


@app.cell
def _(image_vae, walk_from, walk_steps, walk_to):
    mo.stop(bool(image_vae.stopped))
    if walk_from.value == walk_to.value:
        walk = None
        _shown = mo.md("*Pick two different digits: from a digit to itself, both paths stand still.*")
    else:
        walk = lab.interpolation(
            lesson_cells(), interpolate_codes, image_vae, walk_from.value, walk_to.value, steps=walk_steps.value
        )
        _shown = mo.vstack(
            [
                digit_image(
                    plot.tile_images(np.concatenate([walk.latent_path, walk.pixel_path]), ncols=walk_steps.value),
                    "row 1: decoded codes z(t) from μ(x_a) to μ(x_b); row 2: the pixels (1 − t)x_a + t x_b",
                    scale=5,
                ),
                mo.md(
                    f"Distance of each midpoint to the nearest other held-out digit (RMS per pixel): "
                    f"latent path **{walk.latent_distance:.3f}**, pixel path **{walk.pixel_distance:.3f}**."
                ),
            ]
        )
    _shown
    return (walk,)


@app.cell
def _(image_vae, walk_firsts):
    mo.stop(bool(image_vae.stopped))
    # every pair of the menu's ten digits, scored as above
    walk_pairs = lab.midpoints_to_data(lesson_cells(), interpolate_codes, image_vae, walk_firsts)
    _closer = walk_pairs[:, 0] < walk_pairs[:, 1]
    mo.md(
        f"Over the {len(walk_pairs)} pairs of the menu's digits, the latent midpoint is the "
        f"closer to a held-out digit for **{int(_closer.sum())}**; the median ratio latent/pixel "
        f"distance is **{np.median(walk_pairs[:, 0] / walk_pairs[:, 1]):.2f}**."
    )
    return (walk_pairs,)


@app.cell
def _(digit_labels):
    draw_start = mo.ui.dropdown(
        options={"blank": -1, **{f"a held-out {_d}": int(np.flatnonzero(digit_labels == _d)[0]) for _d in range(10)}},
        value="a held-out 3",
        label="start from",
    )
    mo.vstack(
        [
            mo.md(r"""
    **Draw a digit.** Draw on the canvas (it starts with a held-out digit; the menu is the
    keyboard path to another one, or to a blank canvas). The drawing is scanned as the UCI digits
    were (`widgets.to_digit`: fitted to the frame, then 32×32 cells and 4×4 blocks; a held-out
    digit left as it starts is already fitted, and is scanned as it is) and encoded: its
    $q(z\mid x)$ appears as a 2σ ellipse among the codes of the held-out digits, next to what the
    decoder makes of its mean.
    """),
            draw_start,
        ]
    )
    return (draw_start,)


@app.cell
def _(digits_test, draw_start):
    digit_canvas = widgets.canvas(size=192, start=None if draw_start.value < 0 else digits_test[draw_start.value])
    digit_canvas
    return (digit_canvas,)


@app.cell
def _(digit_canvas, digits_test, draw_start, image_vae):
    mo.stop(bool(image_vae.stopped), mo.md("*The digit VAE above did not train: nothing to encode with.*"))
    # a held-out digit left as the canvas starts is already size-normalised: scanned as it is;
    # a drawing is first fitted to the frame, as the UCI digits were
    _ink = widgets.ink(digit_canvas.value)
    _as_is = widgets.to_digit(_ink, fit=False)
    _untouched = draw_start.value >= 0 and np.allclose(_as_is, digits_test[draw_start.value], atol=0.005)
    drawn_digit = _as_is if _untouched else widgets.to_digit(_ink)
    drawn_code = lab.encode_image(lesson_cells(), image_vae.model, drawn_digit)
    # one mark for both sets, told apart by a one-letter column that the legend spells out: the
    # 360 codes are re-sent at each drawing, about 6 KB instead of 25 with their names on every row
    _points = np.round(np.concatenate([image_vae.latents, drawn_code.ellipse]), 2)
    _sets = np.repeat(np.array(["c", "q"], dtype=object), [len(image_vae.latents), len(drawn_code.ellipse)])
    _scale = alt.Scale(domain=[-4, 4])
    _map = (
        alt.Chart(
            plot.data(z1=_points[:, 0], z2=_points[:, 1], set=_sets),
            width="container",
            height=320,
            title="where your drawing lands in the latent space",
        )
        .mark_circle(size=8, opacity=0.7, clip=True)
        .encode(
            alt.X("z1:Q", title="z₁", scale=_scale),
            alt.Y("z2:Q", title="z₂", scale=_scale),
            alt.Color(
                "set:N",
                title="",
                scale=alt.Scale(domain=["c", "q"], range=[plot.color("data"), plot.color("model")]),
                legend=alt.Legend(
                    orient="bottom",
                    labelExpr="datum.label == 'c' ? 'held-out digits’ codes μ(x)' : 'your drawing: 2σ ellipse of q(z | x)'",
                ),
            ),
            [alt.Tooltip("z1:Q", format=".2f"), alt.Tooltip("z2:Q", format=".2f")],
        )
    )
    _images = mo.hstack(
        [
            digit_image(drawn_digit, "as the model sees it (8×8)", scale=16),
            digit_image(drawn_code.reconstruction, "decoded from μ", scale=16),
        ],
        justify="start",
    )
    mo.vstack(
        [
            mo.md(
                f"μ = ({drawn_code.mean[0]:.2f}, {drawn_code.mean[1]:.2f}) · σ = "
                f"({drawn_code.std[0]:.2f}, {drawn_code.std[1]:.2f})"
                + (" · the canvas is blank: draw a digit." if not drawn_digit.any() else "")
            ),
            mo.hstack([ui.chart(_map), _images], widths=[3, 2]),
        ]
    )
    return drawn_code, drawn_digit


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    The grid and the sliders decode codes no digit was encoded to: the KL term pulls every
    $q(z\mid x)$ towards $\mathcal N(0, I)$, so the region the grid covers is the region the
    decoder was trained on.

    ## 7. How far is the ELBO from log p(x)?

    For any $q(z\mid x)$, Bayes' rule $p_\theta(z\mid x) = p_\theta(x\mid z)\,p(z)/p_\theta(x)$ gives

    $$
    \log p_\theta(x) = \mathbb E_{q}\Big[\log \frac{p_\theta(x\mid z)\,p(z)}{q(z\mid x)}\Big]
    + \mathbb E_{q}\Big[\log \frac{q(z\mid x)}{p_\theta(z\mid x)}\Big]
    = \operatorname{ELBO}(x) + D_{\mathrm{KL}}\big(q(z\mid x)\,\Vert\,p_\theta(z\mid x)\big),
    $$

    so the ELBO falls short of $\log p_\theta(x)$ by exactly how far the encoder's Gaussian is from
    the true posterior. That gap can be measured: with $K$ samples $z_k \sim q(z\mid x)$, the
    **importance-weighted bound** (Burda, Grosse & Salakhutdinov 2016)

    $$
    \operatorname{IWAE}_K(x) = \mathbb E\Big[\log \frac1K \sum_{k=1}^{K}
    \frac{p_\theta(x\mid z_k)\,p(z_k)}{q(z_k\mid x)}\Big]
    $$

    is the ELBO at $K = 1$, never decreases as $K$ grows, and tends to $\log p_\theta(x)$. Its rise
    above the ELBO is a lower estimate of the KL gap. The cell below computes it in NumPy, with the
    log-sum-exp written out so that no weight overflows; the table applies it to the 360 held-out
    digits of the model shown above.

    **Change this cell:** average the log-weights instead of the weights, `return log_w.mean(0)`.
    That is $\mathbb E[\log w]$, the ELBO itself, for every $K$: the column IWAE_K − ELBO falls to
    about zero (what is left is the noise of different draws), and the bound stops rising with
    $K$. The order of $\log$ and the average is the whole IWAE.
    """)
    return


@app.function
def iwae_bound(model, x, K, rng):
    """IWAE_K(x) = log (1/K) Σ_k p(x | z_k) p(z_k) / q(z_k | x),  z_k ~ q(z | x), for each row of x
    [N, D] (float64 NumPy), the K draws from the generator ``rng``; K = 1 gives the ELBO."""
    with engine.no_grad():
        mu, logvar = (t.numpy().astype(np.float64) for t in encode(model, engine.tensor(x.astype(np.float32))))
        std = np.exp(0.5 * logvar)
        z = mu + std * rng.standard_normal((K,) + mu.shape)  # [K, N, latent_dim]
        x_hat = decode(model, engine.tensor(z.reshape(-1, mu.shape[1]).astype(np.float32)))
    x_hat = x_hat.numpy().astype(np.float64).reshape(K, len(x), -1)

    def log_normal(v, mean, var):
        return -0.5 * (((v - mean) ** 2) / var + np.log(2 * np.pi * var)).sum(-1)

    log_w = log_normal(x, x_hat, model.obs_var) + log_normal(z, 0.0, 1.0) - log_normal(z, mu, std**2)  # [K, N]
    top = log_w.max(0)
    return top + np.log(np.exp(log_w - top).mean(0))


@app.cell
def _(image_vae, iwae_K):
    mo.stop(bool(image_vae.stopped), mo.md("*The digit VAE above did not train: no gap to measure.*"))
    # one row per K, in order; every gap is measured from the K = 1 row, the ELBO by the same estimator
    iwae = lab.image_iwae(iwae_bound, image_vae, Ks=sorted({1, 10, 100, iwae_K.value}))
    iwae_gap = iwae.bound - iwae.bound[0]
    _mine = list(iwae.K).index(iwae_K.value)
    _rows = ["| K | IWAE_K (nats per image) | IWAE_K − ELBO |", "|---|---|---|"] + [
        f"| {_k} | {_b:.3f} ± {_se:.2f} | {_g:.3f}" + (f" ± {_gse:.3f} |" if _k > 1 else " |")
        for _k, _b, _se, _g, _gse in zip(iwae.K, iwae.bound, iwae.standard_error, iwae_gap, iwae.gap_standard_error)
    ]
    mo.vstack(
        [
            mo.md(
                f"ELBO (IWAE_1, the row K = 1): **{iwae.bound[0]:.3f}** nats per image. With your "
                f"K = {iwae_K.value}: IWAE = **{iwae.bound[_mine]:.3f}**, "
                f"**{iwae_gap[_mine]:.3f}** nats above the ELBO."
            ),
            iwae_K,
            mo.md(
                "\n".join(_rows) + "\n\n(Each row draws its own z. On IWAE_K, ± is one standard error of "
                "the average over the 360 images, whose log p(x) differ widely. On the gap, ± is the "
                "standard error of the average per-image difference from the K = 1 row: the same "
                "images on both sides, so their spread cancels, and every gap stands more than five "
                "of its standard errors above zero.)"
            ),
        ]
    )
    return iwae, iwae_gap


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    **Where the gap comes from.** The encoder is one network for every image: its $q(z\mid x)$ is
    an **amortised** guess, not the best Gaussian for each image. The gap
    $\log p_\theta(x) - \operatorname{ELBO}(x)$ splits in two (Cremer, Li & Duvenaud 2018):

    $$
    \underbrace{\log p_\theta(x) - \operatorname{ELBO}(q^*)}_{\text{approximation gap}}
    \;+\; \underbrace{\operatorname{ELBO}(q^*) - \operatorname{ELBO}(q_\phi)}_{\text{amortisation gap}},
    \qquad q^* = \arg\max_{q = \mathcal N(\mu, \operatorname{diag}\sigma^2)} \operatorname{ELBO}(q),
    $$

    the first the price of a Gaussian $q$, the second of sharing one encoder. The cell below finds
    $q^*$ for each held-out digit: it starts from the encoder's $(\mu, \log\sigma^2)$ and takes Adam
    steps on that image's ELBO alone, the decoder fixed. Both $q$ are then scored on 300 draws
    each, and $\operatorname{IWAE}_{300}$ with $q^*$ as proposal gives the tightest bound on
    $\log p_\theta(x)$ the page computes. On the model the page opens on, the amortisation gap
    is most of the gap.
    """)
    return


@app.function
def fit_posterior(model, x, steps, lr=0.05, on_step=None):
    """q(z | x) = N(μ, diag σ²) optimised for each row of x [N, D] on its own, the decoder fixed:
    from the encoder's (μ, log σ²), Adam steps on Σ_n −ELBO_n with one draw z = μ + σε per row,

    −ELBO_n = ‖x_n − x̂(z_n)‖² / (2σ²ₓ) + KL(q_n ‖ N(0, I)) + const.

    Each image's loss involves only its own (μ_n, log σ²_n), so the sum optimises each q on its own."""
    with engine.no_grad():
        start = encode(model, engine.tensor(x))
    mu, logvar = (engine.tensor(t.numpy(), requires_grad=True) for t in start)
    optimizer = engine.optim.Adam([mu, logvar], lr=lr)
    x = engine.tensor(x)
    for step in range(steps):
        x_hat = decode(model, reparameterize(mu, logvar))
        loss = (((x - x_hat) ** 2).sum(dim=1) / (2 * model.obs_var) + kl_to_prior(mu, logvar).sum(dim=1)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if on_step is not None:
            on_step(step + 1)
    return mu.numpy(), logvar.numpy()


@app.cell
def _():
    amortise_steps = mo.ui.slider(
        steps=[10, 25, 50, 100, 200, 400, 800],
        value=lab.AMORTISATION_STEPS,
        label="Adam steps per image",
        show_value=True,
    )
    amortise_run = mo.ui.run_button(label="Optimise q for each image")
    mo.hstack([amortise_steps, amortise_run], justify="start")
    return amortise_run, amortise_steps


@app.cell
def _(amortise_run, amortise_steps, image_shipped, image_vae):
    mo.stop(bool(image_vae.stopped))
    if amortise_run.value:
        with mo.status.progress_bar(total=amortise_steps.value, title="optimising", remove_on_exit=True) as _bar:
            amortisation = lab.amortisation_gap(
                lesson_cells(),
                fit_posterior,
                image_vae,
                steps=amortise_steps.value,
                on_step=throttled(_bar, amortise_steps.value),
            )
    else:
        mo.stop(not image_shipped, mo.md("*Press **Optimise q for each image** to measure the model trained above.*"))
        try:
            amortisation = lab.default_amortisation(lesson_cells(), fit_posterior)
        except ValueError as _err:
            mo.stop(True, ui.not_loaded(_err))
    _a = amortisation
    _rows = [
        "| q(z \\| x) | ELBO (nats per image, 300 draws) |",
        "|---|---|",
        f"| the encoder's, amortised | {_a.encoder_elbo.mean():.3f} |",
        f"| optimised for each image ({_a.steps} Adam steps) | {_a.fitted_elbo.mean():.3f} |",
        f"| the same, IWAE₃₀₀ | {_a.fitted_iwae.mean():.3f} |",
    ]
    _hist = plot.histogram_grid(
        {"ELBO(q*) − ELBO(encoder's q)": _a.fitted_elbo - _a.encoder_elbo},
        bins=40,
        columns=1,
        x_title="amortisation gap of one image (nats)",
        panel_width=420,
        panel_height=120,
    )
    mo.vstack(
        [
            mo.md(
                "\n".join(_rows) + f"\n\nAmortisation gap **{_a.amortisation:.3f}** nats, "
                f"**{100 * _a.amortisation / _a.total:.0f} %** of the **{_a.total:.3f}** nats between the "
                f"encoder's ELBO and IWAE₃₀₀ with q*; the ELBO rose for "
                f"**{100 * (_a.fitted_elbo > _a.encoder_elbo).mean():.0f} %** of the 360 images."
            ),
            ui.chart(_hist),
            mo.md(
                "*Shown: computed just now by this page's cells.*"
                if amortise_run.value
                else lab.shipped_caption(
                    "Optimise q for each image", f"{lab.AMORTISATION_STEPS} steps", "the optimised q"
                )
            ),
        ]
    )
    return (amortisation,)


@app.cell
def _():
    exercise_iwae = exercises.ChoiceExercise(
        question="**Exercise 7.** As K grows, IWAE_K − ELBO approaches…",
        options={
            "0": "zero",
            "KL(q(z|x) ‖ p(z|x)), averaged over the data": "posterior kl",
            "KL(q(z|x) ‖ N(0, I))": "prior kl",
        },
        truth="posterior kl",
        hint="log p(x) = ELBO + KL(q(z|x) ‖ p(z|x)), and IWAE_K tends to log p(x).",
        explanation="The gap is the distance from the encoder's Gaussian to the true posterior, "
        "not the KL term of the ELBO.",
    )
    answer_iwae = ui.answer_box(exercise_iwae)
    return answer_iwae, exercise_iwae


@app.cell
def _(answer_iwae, exercise_iwae):
    ui.exercise(exercise_iwae, answer_iwae)
    return


@app.cell(hide_code=True)
def _():
    vs_train = mo.ui.run_button(label="Train both with seeds 0 to 4")
    mo.md(r"""
    ## 8. A VAE against a diffusion model

    Notebook 07's DDPM learns what this page's VAE learns, a way to draw new points like the data,
    by another route. The VAE draws $z \sim \mathcal N(0, I)$ and decodes it in one step (its
    samples are the decoder's means $\hat x(z)$); the DDPM also starts from noise, and removes it
    in $T = 50$ small steps, a network predicting the noise at each. Below, both learn the same
    2,000 points of the moons: section 5's VAE (the cells above), and `engine.diffusion`'s small
    `Denoiser` trained by `engine.diffusion.train_ddpm` (notebook 07's, here for 1,500 steps).
    Each draws 2,000 samples, scored
    by the **energy distance** to the same 500 held-out points,

    $$
    D_E(P, Q) = 2\,\mathbb E\lVert X - Y\rVert - \mathbb E\lVert X - X'\rVert - \mathbb E\lVert Y - Y'\rVert
    \qquad (X, X' \sim P,\; Y, Y' \sim Q),
    $$

    zero only when $P = Q$. Estimated from finite samples it does not reach zero even for the data
    itself: the training points' own distance is what sampling noise alone leaves.
    """)
    return (vs_train,)


@app.cell
def _(vs_train):
    # The page opens on the shipped runs while the lesson cells are the code that trained them;
    # the button trains all ten models again (about 15 s; once per process for the same code).
    if vs_train.value:
        _total = len(lab.VS_DDPM["seeds"]) * (lab.TOY_DEFAULTS["steps"] + lab.VS_DDPM["steps"])
        with mo.status.progress_bar(total=_total, title="training", remove_on_exit=True) as _bar:
            try:
                vs_ddpm = lab.remembered_vae_against_ddpm(lesson_cells(), throttled(_bar, _total))
            except ValueError as _err:
                mo.stop(True, mo.vstack([ui.problem(_err, "This training"), vs_train]))
    else:
        try:
            vs_ddpm = lab.default_vae_against_ddpm(lesson_cells())
        except ValueError as _err:
            mo.stop(True, mo.vstack([ui.not_loaded(_err), vs_train]))
    _panels = {  # 300 points of each are enough to see the shapes
        "held-out data": vs_ddpm.held_out[:300],
        "VAE samples": vs_ddpm.vae_samples[:300],
        "DDPM samples": vs_ddpm.ddpm_samples[:300],
    }
    _chart = (
        alt.Chart(
            plot.data(
                digits=3,
                x=np.concatenate([p[:, 0] for p in _panels.values()]),
                y=np.concatenate([p[:, 1] for p in _panels.values()]),
                panel=np.repeat(list(_panels), [len(p) for p in _panels.values()]),
            )
        )
        .mark_circle(size=8, opacity=0.6)
        .encode(
            alt.X("x:Q", title="x₁", scale=alt.Scale(domain=(-2.5, 2.5))),
            alt.Y("y:Q", title="x₂", scale=alt.Scale(domain=(-2.5, 2.5))),
            alt.Color(
                "panel:N",
                sort=list(_panels),
                scale=alt.Scale(range=[plot.color("data"), plot.color("model"), plot.color("model")]),
                legend=None,
            ),
        )
        .properties(width=200, height=200)
        .facet(column=alt.Column("panel:N", sort=list(_panels), title=None))
        .properties(title="seed 0: 300 points of each")
    )
    _vae, _ddpm = vs_ddpm.vae, vs_ddpm.ddpm
    _closer = int((_ddpm < _vae).sum())
    _fewer = int((vs_ddpm.ddpm_off < vs_ddpm.vae_off).sum())

    def _span(values, fmt="{:.4f}"):
        return f"{fmt.format(values.min())} to {fmt.format(values.max())}"

    def _count(k):
        return "every seed" if k == len(_vae) else f"{k} of {len(_vae)} seeds"

    mo.vstack(
        [
            ui.chart(_chart),
            mo.md(f"""
    | 2,000 samples, seeds 0 to 4 | energy distance to the held-out points | share off the data |
    |---|---|---|
    | VAE | {_span(_vae)} | {_span(vs_ddpm.vae_off, "{:.1%}")} |
    | DDPM | {_span(_ddpm)} | {_span(vs_ddpm.ddpm_off, "{:.1%}")} |
    | the data (2,000 training points; the held-out points) | {vs_ddpm.floor:.4f} | {vs_ddpm.floor_off:.1%} |

    A sample lies *off the data* when no training point is within {lab.OFF_DATA} of it. By energy distance neither model wins every time: the DDPM's samples
    are closer for {_count(_closer)}, and the two ranges overlap. Both put a share of their samples
    off the arcs, where the held-out points never lie; the DDPM fewer, for {_count(_fewer)}.
    ({"Shipped with the course" if vs_ddpm.shipped else "Trained by the button with this page's code"}.) At this size (a small
    denoiser trained for 1,500 steps, the VAE for 800, on 2-D points) the DDPM's 50 sampling steps
    buy no clear gain in distance over the VAE's one.
    """),
            vs_train,
        ]
    )
    return (vs_ddpm,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    ## The models the page opens on

    Each section opened on models trained by the functions below, with this page's cells and the
    section's default settings. A section shows them only while `vae_model`, `encode`, `decode`,
    `reparameterize`, `kl_to_prior`, `negative_elbo` and `train_vae` are the code they were trained
    with; after an edit it says so and waits for its Train button. Section 7's table is read from
    `shipped_iwae` while `iwae_bound` is unchanged too, and computed by your `iwae_bound` otherwise;
    its amortisation gap is read from `shipped_amortisation` while `fit_posterior` is unchanged,
    and waits for its button otherwise.
    """)
    return


@app.function
def shipped_toy():
    """Section 5's VAE: β = 1, three latent dimensions, 800 steps on the moons."""
    return lab.toy_state(lesson_cells())


@app.function
def shipped_sweep():
    """Section 5's β sweep: one VAE per β from 0.1 to 100, 500 steps each."""
    return lab.sweep_state(lesson_cells())


@app.function
def shipped_aggregate():
    """Section 5's aggregate posteriors: a 2-D code at β = 0, 0.1, 1, 10."""
    return lab.aggregate_state(lesson_cells())


@app.function
def shipped_remedies():
    """Section 5's remedies for collapse at β = 10: none, KL annealing, free bits (λ = 0.5)."""
    return lab.remedies_state(lesson_cells())


@app.function
def shipped_remedy_seeds():
    """Section 5's remedies at β = 10 again, with seeds 1 to 4 (seed 0 is shipped_remedies)."""
    return lab.remedy_seeds_state(lesson_cells())


@app.function
def shipped_digits():
    """Section 6's digit VAE: a 2-D code, 400 steps, σ²ₓ = 0.05."""
    return lab.digits_state(lesson_cells())


@app.function
def shipped_amortisation():
    """Section 7's amortisation gap: fit_posterior on the shipped digit VAE, 200 steps."""
    return lab.amortisation_state(lesson_cells(), fit_posterior)


@app.function
def shipped_iwae():
    """Section 7's table: iwae_bound on that model, K from 1 to 300."""
    return lab.iwae_state(lesson_cells(), iwae_bound)


@app.function
def shipped_vae_ddpm():
    """Section 8's comparison: section 5's VAE and engine.diffusion's DDPM, seeds 0 to 4."""
    return lab.vae_ddpm_state(lesson_cells())


@app.cell
def _():
    def _script():
        import engine
        import engine.functional as F
        from engine import data, vae

        with engine.random.fork_rng(0):
            mu = engine.zeros(4, 2, requires_grad=True)
            logvar = engine.zeros(4, 2, requires_grad=True)
            z = vae.reparameterize(mu, logvar)  # z = μ + σ·ε, differentiable
            kl_terms = vae.gaussian_kl(mu, logvar)  # −½ Σ (1 + log σ² − μ² − σ²), per sample
            (F.mse_loss(z, engine.ones(4, 2)) + kl_terms.mean()).backward()
            model = vae.VAE(input_dim=2, hidden=64, latent_dim=2, obs_var=0.05)  # Gaussian decoder
            X, _ = data.make_moons(500, noise=0.05)
            # a few steps to show the calls (section 5's model takes 800)
            history = vae.train_vae(model, X, steps=5, lr=3e-3, beta=1.0)
            generated = model.generate(3)
        return (
            f"mu.grad.shape = {mu.grad.shape} · last ELBO {history.elbo[-1]:.2f} · "
            f"model.generate(3).shape = {generated.shape}"
        )

    mo.md(f"## The same in your own script\n\n`{_script()}`")
    return


@app.cell(hide_code=True)
def _():
    mo.md("---\n\n**The end of the course.** Back to the start, or to the formulas: " + toc.nav_md(METADATA["id"]))
    return


if __name__ == "__main__":
    app.run()

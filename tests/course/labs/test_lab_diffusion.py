"""The notebook labs of 05-08 (engine.course.labs: convolution, attention, diffusion, vae).

Each value a notebook shows is checked here against an independent computation: brute-force
loops over placements and patches, NumPy written out by hand, closed forms, or PyTorch.
"""

import numpy as np
import pytest
from notebook_driver import load_module

import engine
from engine import diffusion
from engine.course import checkpoints
from engine.course.labs import diffusion as diffusion_lab

# ============================================================================= 07 diffusion
# The lesson's code (schedules, training loop, samplers, the conditional denoiser) is the
# notebook's: the lab's helpers take it as arguments, and these tests pass the page's own.
NB = load_module("notebooks/07_diffusion.py")


def schedule(kind, T):
    return NB.noise_schedule(kind, T)


@pytest.mark.parametrize("name", diffusion_lab.DATASETS_2D)
def test_toy_data_2d_is_standardised(name):
    X = diffusion_lab.toy_data_2d(name, n=500, seed=1)
    assert X.shape == (500, 2)
    np.testing.assert_allclose(X.mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(X.std(0), 1, atol=1e-12)
    with pytest.raises(ValueError, match="name"):
        diffusion_lab.toy_data_2d("spiral galaxy")
    X[:] = 0  # each call gets its own copy of the kept draw
    assert diffusion_lab.toy_data_2d(name, n=500, seed=1).std() > 0.5


def test_compact_chart_keeps_the_values_and_the_series_names():
    """Fewer digits, and the series names as codes that the chart turns back into the names."""
    from engine.course import plot

    x = np.linspace(0, 1, 5)
    chart = plot.curves(x, {"ε*, it's exact": np.pi * x, "learned": -x}, dashed=("learned",))
    shown = diffusion_lab.compact_chart(chart, digits=3)
    assert shown is chart
    head, *rows = [line.split(",") for line in chart.data.values.split("\n")]
    assert head == ["x", "y", "series_code", "dash"] and rows[4] == ["1", "3.14", "0", "false"]
    (calc,) = chart.to_dict()["transform"]
    assert calc == {"calculate": "datum.series_code == '0' ? 'ε*, it\\'s exact' : 'learned'", "as": "series"}


def test_packed_chart_sends_each_series_as_arrays_that_the_chart_turns_back_into_its_rows():
    """Flattening the arrays and dividing the whole steps back (as the chart's transforms do in the
    browser) gives every row: x, y within half a hundredth, other numbers to 4 digits, each
    series' name and dash flag once per series."""
    from engine.course import plot

    rng = np.random.default_rng(0)
    x = np.linspace(-3.0, 3.0, 50)
    ys = {"ε*, it's exact": np.exp(x), "learned": rng.normal(size=50)}
    chart = diffusion_lab.packed_chart(plot.curves(x, ys, dashed=("learned",)), per_unit={"x": 100})
    spec = chart.to_dict()
    (values,) = spec["datasets"].values()
    flatten, divide = spec["transform"][:2]
    assert flatten == {"flatten": ["x_q", "y"]} and divide == {"calculate": "datum.x_q / 100", "as": "x"}
    assert [(g["series"], g["dash"]) for g in values] == [("ε*, it's exact", False), ("learned", True)]
    for group, y in zip(values, ys.values()):
        assert np.abs(np.array(group["x_q"]) / 100 - x).max() <= 0.005 + 1e-12
        np.testing.assert_allclose(group["y"], y, rtol=5e-4)
    points = diffusion_lab.point_chart({"data": (np.stack([x, -x], 1), "data")}, domain=(-4, 4))
    (values,) = points.to_dict()["datasets"].values()
    assert values[0]["series"] == "data" and values[0]["y_q"][:2] == [300, 288]


def test_linear_scale_keeps_the_last_beta_below_one():
    for T in (10, 20, 21, 50, 1000):
        assert diffusion_lab.linear_scale(T) == min(1000 / T, 0.999 / 0.02)
        assert 0.02 * diffusion_lab.linear_scale(T) < 1
        assert schedule("linear", T).alpha_bars[-1] < (1e-2 if T < 21 else 1e-4)


def test_chain_vs_closed_form_constant_beta():
    s = diffusion.Schedule.from_betas(np.full(30, 0.05))
    c = diffusion_lab.chain_vs_closed_form([2.0], s, 29, n=20000, seed=0)
    ab = 0.95**30
    assert c.closed_mean[0] == pytest.approx(np.sqrt(ab) * 2.0)
    assert c.closed_var == pytest.approx(1 - ab)
    assert c.mean[0] == pytest.approx(np.sqrt(ab) * 2.0, abs=5 * np.sqrt((1 - ab) / 20000))
    assert c.var[0] == pytest.approx(1 - ab, rel=0.05)
    with pytest.raises(ValueError, match="t must be"):
        diffusion_lab.chain_vs_closed_form([0.0], s, 30)


def test_train_ddpm_tracked_improves_and_is_reproducible():
    X = diffusion_lab.toy_data_2d("8 Gaussians", 1400, seed=0)
    s = schedule("linear", 20)
    ticks = []
    a = diffusion_lab.train_ddpm_tracked(
        X, s, NB.train_ddpm, NB.ddpm_sample, steps=400, n_checkpoints=4, n_eval=300, on_step=ticks.append
    )
    b = diffusion_lab.train_ddpm_tracked(X, s, NB.train_ddpm, NB.ddpm_sample, steps=400, n_checkpoints=4, n_eval=300)
    assert ticks == list(range(1, 401))
    np.testing.assert_array_equal(a.losses, b.losses)
    assert list(a.checkpoints) == [100, 200, 300, 400] and len(a.quality) == 4
    assert a.losses[-50:].mean() < a.losses[:10].mean()
    assert a.quality[-1] < a.noise_quality
    assert a.floor < a.quality[-1] + 0.05
    # the quality number is the engine's energy distance (recomputed on the held-out rows)
    np.testing.assert_array_equal(a.held_out, X[-300:].astype(np.float32).astype(np.float64))
    with pytest.raises(ValueError, match="n_eval"):
        diffusion_lab.train_ddpm_tracked(X[:100], s, NB.train_ddpm, NB.ddpm_sample, n_eval=300)


def test_a_diverging_run_stops_and_says_why():
    X = diffusion_lab.toy_data_2d("moons", 1000, seed=0)
    run = diffusion_lab.train_ddpm_tracked(
        X, schedule("linear", 10), NB.train_ddpm, NB.ddpm_sample, steps=300, lr=1e4, n_checkpoints=1, n_eval=200
    )
    assert not np.isfinite(run.losses[-1]) and "non-finite" in run.stopped and len(run.losses) < 300


def test_reverse_trajectory_is_the_engines_ancestral_sampler():
    X = diffusion_lab.toy_data_2d("moons", 1000, seed=0)
    s = schedule("linear", 10)
    run = diffusion_lab.train_ddpm_tracked(X, s, NB.train_ddpm, NB.ddpm_sample, steps=50, n_checkpoints=1, n_eval=200)
    traj = diffusion_lab.reverse_trajectory(NB.ddpm_sample, run.model, s, n=64, seed=5)
    assert traj.shape == (11, 64, 2)
    engine.manual_seed(5)
    final = diffusion.sample(run.model, s, 64, 2, variance="posterior")
    np.testing.assert_allclose(traj[-1], final, rtol=1e-5, atol=1e-6)
    kept = diffusion_lab.run_trajectory(run, NB.ddpm_sample, s, n=64, seed=5)  # drawn once, then read
    np.testing.assert_array_equal(kept, traj)
    assert diffusion_lab.run_trajectory(run, NB.ddpm_sample, s, n=64, seed=5) is kept and not kept.flags.writeable
    assert diffusion_lab.run_trajectory(run, NB.ddpm_sample, s, n=64, seed=6) is not kept


def test_reverse_trajectory_of_a_diverged_model_is_a_clear_error():
    X = diffusion_lab.toy_data_2d("moons", 1000, seed=0)
    s = schedule("linear", 10)
    run = diffusion_lab.train_ddpm_tracked(X, s, NB.train_ddpm, NB.ddpm_sample, steps=5, n_checkpoints=1, n_eval=200)
    for p in run.model.parameters():
        p.data[...] = 1e30  # predictions overflow: the states cannot stay finite
    with (
        np.errstate(over="ignore", invalid="ignore"),
        pytest.raises(ValueError, match="reverse_trajectory: .*lower the learning rate"),
    ):
        diffusion_lab.reverse_trajectory(NB.ddpm_sample, run.model, s, n=8)


def test_exact_reverse_1d_reproduces_the_mixture():
    m = diffusion_lab.mixture_1d(3.0, 0.3, 0.25)
    assert m.weights[0] == pytest.approx(0.25) and list(m.means[:, 0]) == [-1.5, 1.5]
    x = diffusion_lab.exact_reverse_1d(m, schedule("linear", 1000), n=4000, variance="beta")
    assert np.mean(x < 0) == pytest.approx(0.25, abs=0.03)
    mean = 0.25 * -1.5 + 0.75 * 1.5
    assert x.mean() == pytest.approx(mean, abs=0.06)
    with pytest.raises(ValueError, match="weight_left"):
        diffusion_lab.mixture_1d(weight_left=1.0)


@pytest.mark.parametrize("variance", ["beta", "posterior"])
@pytest.mark.parametrize("components", [2, 3])  # two: the page's mixtures (a logistic responsibility)
def test_exact_reverse_1d_is_the_engines_exact_sampler(variance, components):
    from engine import data

    m = data.GaussianMixture(np.array([[-2.0], [0.5], [2.5]]), np.array([0.2, 0.6, 0.3]), np.array([1.0, 2.0, 1.0]))
    if components == 2:
        m = diffusion_lab.mixture_1d(3.0, 0.3, 0.3)
    s = schedule("cosine", 40)
    engine.manual_seed(4)
    expected = diffusion.exact_sample(m, s, 300, variance=variance)[:, 0]
    np.testing.assert_allclose(
        diffusion_lab.exact_reverse_1d(m, s, n=300, seed=4, variance=variance), expected, rtol=1e-5, atol=1e-5
    )
    with pytest.raises(ValueError, match="variance must be one of"):
        diffusion_lab.exact_reverse_1d(m, s, n=10, variance="fixed")


def test_epsilon_curves_exact_formula_and_learned_model():
    m = diffusion_lab.mixture_1d(2.0, 0.5, 0.5)
    s = schedule("linear", 20)
    run = diffusion_lab.train_denoiser_1d(m, s, NB.train_ddpm, NB.ddpm_sample, steps=100, n=500)
    assert run.samples.shape == (500,)
    c = diffusion_lab.epsilon_curves(m, s, 5, model=run.model, grid=np.linspace(-3, 3, 7))
    ab = s.alpha_bars[5]
    # score of the noised mixture written out: Σ r_k (μ_k' − x)/v with μ_k' = √ᾱ μ_k, v = ᾱσ² + 1 − ᾱ
    x = c.x
    mu = np.sqrt(ab) * np.array([-1.0, 1.0])
    v = ab * 0.25 + 1 - ab
    dens = np.exp(-((x[:, None] - mu) ** 2) / (2 * v))
    r = dens / dens.sum(1, keepdims=True)
    score = (r * (mu - x[:, None]) / v).sum(1)
    np.testing.assert_allclose(c.exact, -np.sqrt(1 - ab) * score, atol=1e-12)
    np.testing.assert_allclose(c.density, dens.sum(1) / 2 / np.sqrt(2 * np.pi * v), atol=1e-12)
    assert c.learned.shape == (7,)


def test_step_at_and_moments():
    assert [diffusion_lab.step_at(f, 50) for f in (0.0, 0.5, 1.0)] == [0, 24, 49]
    m = diffusion_lab.mixture_1d(2.0, 0.5, 0.2)
    x = m.sample(200000, seed=3)[0][:, 0]
    exact = diffusion_lab.mixture_moments(m)
    assert exact.mean == pytest.approx(0.2 * -1 + 0.8 * 1)
    assert exact.var == pytest.approx(0.25 + 1 - 0.6**2)
    drawn = diffusion_lab.sample_moments(x)
    assert drawn.share_left == pytest.approx(exact.share_left, abs=0.005)  # Monte Carlo vs Φ
    assert drawn.mean == pytest.approx(x.mean()) and drawn.var == pytest.approx(x.var())


def test_mode_commitment_counts_samples_on_their_final_side():
    m = diffusion_lab.mixture_1d(3.0, 0.3, 0.5)
    s = schedule("linear", 20)
    c = diffusion_lab.mode_commitment(m, s, n=500, seed=2)
    # recomputed from the same trajectory, drawn on the same seed
    engine.manual_seed(2)
    states = diffusion.exact_sample(m, s, 500, return_trajectory=True, variance="posterior")[..., 0]
    side = states > 0  # symmetric modes: the valley is at 0 for every t
    np.testing.assert_allclose(c, (side == side[-1]).mean(1))
    assert c[-1] == 1.0 and c.shape == (21,)
    states = diffusion_lab.exact_reverse_1d(m, s, n=500, seed=2, return_trajectory=True)
    np.testing.assert_array_equal(diffusion_lab.mode_commitment(m, s, states=states), c)
    np.testing.assert_array_equal(states[-1], diffusion_lab.exact_reverse_1d(m, s, n=500, seed=2))
    with pytest.raises(ValueError, match="states must be"):
        diffusion_lab.mode_commitment(m, s, states=states[1:])


def test_sampling_steps_and_respaced_marginals():
    s = schedule("linear", 1000)
    taus = diffusion_lab.sampling_steps(s, 10)
    assert taus[0] == 0 and taus[-1] == 999 and len(taus) == 10
    respaced = diffusion_lab._respaced(s, taus)
    np.testing.assert_allclose(respaced.alpha_bars, s.alpha_bars[taus], rtol=1e-10)
    with pytest.raises(ValueError, match="steps must be <= T"):
        diffusion_lab.sampling_steps(s, 1001)


def test_ddpm_on_every_step_is_ancestral_sampling():
    m = diffusion_lab.ring_mixture()
    s = schedule("linear", 30)
    model = diffusion.OptimalDenoiser(m, s)
    mine = diffusion_lab.sample_ddpm_steps(NB.ddpm_sample, model, s, 30, n=50, seed=4)
    engine.manual_seed(4)
    np.testing.assert_allclose(mine, diffusion.sample(model, s, 50, 2, variance="posterior"), rtol=1e-6)


def test_compare_samplers_ddim_wins_with_few_steps():
    m = diffusion_lab.ring_mixture()
    s = schedule("linear", 1000)
    c = diffusion_lab.compare_samplers(m, s, NB.ddpm_sample, NB.ddim_sample, steps=(5,), n=600, seed=1)
    assert c.ddim[0] < 0.9 * c.ddpm[0]  # 5 steps: a gap far above the estimate's noise
    held = m.sample(600, seed=101)[0]
    with engine.random.fork_rng(1):
        x = NB.ddim_sample(diffusion.OptimalDenoiser(m, s), s, 5, 600)
    assert c.ddim[0] == pytest.approx(diffusion_lab.energy_distance(x, held))


def test_guidance_trade_by_hand():
    X, y = diffusion_lab.toy_data_2d("moons", 400, seed=0, return_labels=True)
    real = X[y == 0]
    samples = {0.0: real[:50] + 0.01, 1.0: X[y == 1][:50]}
    g = diffusion_lab.guidance_trade(X, y, 0, samples)
    assert list(g.fidelity) == [1.0, 0.0]
    assert g.spread[0] == pytest.approx(real[:50].var(0).sum() / real.var(0).sum())


def test_train_on_points_splits_a_shuffled_quarter():
    X = diffusion_lab.toy_data_2d("moons", 120, seed=0)
    s = schedule("linear", 10)
    run = diffusion_lab.train_on_points(X, s, NB.train_ddpm, NB.ddpm_sample, steps=40, seed=2)
    shuffled = X[np.random.default_rng(2).permutation(120)]
    np.testing.assert_allclose(run.held_out, shuffled[-29:].astype(np.float32))  # (120 − 2)//4 = 29
    assert run.samples.shape == (500, 2)
    with pytest.raises(ValueError, match="at least 20 points"):
        diffusion_lab.train_on_points(X[:19], s, NB.train_ddpm, NB.ddpm_sample)


# ----------------------------------------------------------------------------- 07's shipped defaults
def test_is_default_tolerates_round_off_only():
    default = diffusion_lab.MIX_DEFAULT
    assert diffusion_lab.is_default(dict(default, std=0.1 + 0.2), default)  # 0.30000000000000004
    assert not diffusion_lab.is_default(dict(default, std=0.35), default)
    assert not diffusion_lab.is_default(dict(default, variance="posterior"), default)
    assert not diffusion_lab.is_default({k: v for k, v in default.items() if k != "T"}, default)


def test_sampler_gallery_is_compare_samplers_with_the_samples_kept():
    m = diffusion_lab.ring_mixture()
    s = schedule("linear", 100)
    g = diffusion_lab.sampler_gallery(m, s, NB.ddpm_sample, NB.ddim_sample, steps=(5, 20), n=300, shown=40, seed=3)
    c = diffusion_lab.compare_samplers(m, s, NB.ddpm_sample, NB.ddim_sample, steps=(20, 5), n=300, seed=3)
    table = g.table((20, 5))
    np.testing.assert_allclose(table.ddpm, c.ddpm, rtol=1e-12)
    np.testing.assert_allclose(table.ddim, c.ddim, rtol=1e-12)
    assert table.floor == c.floor and g.ddim_samples.shape == (2, 40, 2)
    with engine.random.fork_rng(3):
        x = NB.ddim_sample(diffusion.OptimalDenoiser(m, s), s, 5, 300)
    np.testing.assert_array_equal(g.ddim_samples[g.at(5)], x[:40])
    with pytest.raises(ValueError, match="no run at 7 steps"):
        g.at(7)


def test_guidance_study_keeps_the_scored_samples():
    ticks = []
    s = schedule("linear", 50)
    engine.manual_seed(9)
    stream = engine.random.generator().bit_generator.state
    g = diffusion_lab.guidance_study(
        NB.conditional_denoiser,
        NB.train_conditional,
        NB.guided_sample,
        s,
        steps=20,
        n=60,
        shown=10,
        seed=1,
        on_step=ticks.append,
    )
    assert engine.random.generator().bit_generator.state == stream  # seeded on forked streams only
    assert ticks == list(range(1, 20 + 2 * 6 + 1))  # the training steps, then each label and scale
    assert list(g.scales) == list(diffusion_lab.GUIDANCE_SCALES) and sorted(g.samples) == [0, 1]
    assert g.samples[1].shape == (len(g.scales), 10, 2)
    # train the same way: the samples at w = 4 are guided_sample's, and the trade scores all 60
    X, y = diffusion_lab.toy_data_2d("moons", n=3000, seed=1, return_labels=True)
    X = X.astype(np.float32)
    with engine.random.fork_rng(1):
        model = NB.conditional_denoiser(2, 2, 50)
        NB.train_conditional(model, X, y, s, 20)
    with engine.random.fork_rng(2):
        x = NB.guided_sample(model, s, 1, 4.0, 60)
    np.testing.assert_allclose(g.samples[1][4], x[:10], rtol=1e-5, atol=1e-6)
    trade = diffusion_lab.guidance_trade(X, y, 1, {4.0: x})
    assert g.trades[1].spread[4] == pytest.approx(trade.spread[0], rel=1e-5)


def test_shipped_defaults_load_at_the_pages_code_and_only_there():
    code = [getattr(NB, name) for name in diffusion_lab.DDPM_CODE]
    ddpm, reason = diffusion_lab.shipped_ddpm(*code)
    d = diffusion_lab.DDPM_DEFAULT
    assert reason == "" and ddpm.model.T == d["T"] and len(ddpm.losses) == d["steps"] and not ddpm.stopped
    assert ddpm.quality[-1] < 0.5 * ddpm.noise_quality
    shipped = checkpoints.load_named("diffusion_ddpm")["model"]
    for name, value in ddpm.model.state_dict().items():
        np.testing.assert_array_equal(value.data, shipped[name])
    one_d, _ = diffusion_lab.shipped_denoiser_1d(*code)
    assert one_d.samples.shape == (4000,) and one_d.model.dim == 1
    # the drawing's model answers only for the canvas's starting points
    start = diffusion_lab.drawing_start()
    np.testing.assert_array_equal(
        start, diffusion_lab.canvas_start(diffusion_lab.toy_data_2d("moons", 3000, seed=0)[:300])
    )
    assert diffusion_lab.shipped_drawing_run(start, *code)[0].samples.shape == (500, 2)
    assert diffusion_lab.shipped_drawing_run(start[:299], *code) == (None, "")
    assert diffusion_lab.shipped_drawing_run(start + 0.01, *code) == (None, "")
    np.testing.assert_array_equal(diffusion_lab.canvas_start([[4.0, -5.0]]), [[3.0, -3.0]])
    gallery, _ = diffusion_lab.shipped_sampler_gallery(*(getattr(NB, n) for n in diffusion_lab.SAMPLER_CODE))
    assert gallery.ddim_samples.shape == (8, 500, 2)
    guidance, _ = diffusion_lab.shipped_guidance(*(getattr(NB, n) for n in diffusion_lab.GUIDANCE_CODE))
    assert guidance.samples[0].shape == (6, 500, 2)
    # other code (here: the cells in another order) is not the code that made them
    for shipped_function in (diffusion_lab.shipped_ddpm, diffusion_lab.shipped_denoiser_1d):
        state, reason = shipped_function(*code[::-1])
        assert state is None and "not loaded" in reason and "`ddpm_loss`" in reason
    assert diffusion_lab.shipped_drawing_run(start, *code[::-1])[0] is None


def test_exact_reverse_study_1d_is_one_run_kept_per_setting():
    study = diffusion_lab.exact_reverse_study_1d(NB.noise_schedule, 2.0, 0.4, 0.6, 20, "beta", n=300, seed=1)
    m, s = diffusion_lab.mixture_1d(2.0, 0.4, 0.6), schedule("linear", 20)
    np.testing.assert_array_equal(study.samples, diffusion_lab.exact_reverse_1d(m, s, 300, seed=1, variance="beta"))
    np.testing.assert_array_equal(study.commitment, diffusion_lab.mode_commitment(m, s, 300, seed=1, variance="beta"))
    assert diffusion_lab.exact_reverse_study_1d(NB.noise_schedule, 2.0, 0.4, 0.6, 20, "beta", n=300, seed=1) is study
    assert not study.samples.flags.writeable and not study.commitment.flags.writeable


def test_sampler_floor_range_stored_is_a_fresh_draw():
    """The page's floor range is stored ahead of time: drawn again here, it is the same."""
    held = diffusion_lab.ring_mixture().sample(1000, seed=100)[0]
    values = [
        diffusion_lab.energy_distance(diffusion_lab.ring_mixture().sample(1000, seed=300 + k)[0], held)
        for k in range(10)
    ]
    assert diffusion_lab.sampler_floor_range() == (
        pytest.approx(min(values), rel=1e-9),
        pytest.approx(max(values), rel=1e-9),
    )
    # other arguments are drawn, not looked up
    low, high = diffusion_lab.sampler_floor_range(n=200, draws=3)
    assert 0 < low <= high and (low, high) != diffusion_lab.sampler_floor_range()


def test_chain_vs_closed_form_resumed_is_the_chain_from_the_start():
    """A kept run resumed at another t gives the draws of a chain run from the start."""
    import math

    s = schedule("linear", 200)

    def from_start(t):
        rng = np.random.default_rng(5)
        x = np.broadcast_to(np.array([1.0, -2.0]), (300, 2)).copy()
        for step in range(t + 1):
            x = math.sqrt(s.alphas[step]) * x + math.sqrt(s.betas[step]) * rng.standard_normal(x.shape)
        return x

    for t in (60, 199, 0, 17, 60, 120):
        c = diffusion_lab.chain_vs_closed_form([1.0, -2.0], s, t, n=300, seed=5)
        np.testing.assert_array_equal(c.samples, from_start(t))
        c.samples[:] = 0.0  # the caller's copy: the kept states are not touched

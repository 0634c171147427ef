"""engine.diffusion: schedules (published values), the forward process, the posterior, the reverse
step, the exact reverse process of a Gaussian mixture, the denoiser, and a trained DDPM's samples."""

import math

import numpy as np
import pytest
from oracle import check_against_torch, check_gradcheck, require_torch

import engine
from engine import data
from engine import diffusion as D
from engine.distances import energy_distance


# ----------------------------------------------------------------------------- schedules
def test_linear_schedule_published_values():
    """DDPM (Ho et al. 2020): β from 1e-4 to 0.02 over T = 1000 gives ᾱ_1 = 0.9999, ᾱ_T ≈ 4.04e-5."""
    s = D.linear_beta_schedule(1000)
    assert s.T == 1000 and s.betas[0] == pytest.approx(1e-4) and s.betas[-1] == pytest.approx(0.02)
    assert s.alpha_bars[0] == pytest.approx(0.9999, rel=1e-12)
    assert s.alpha_bars[-1] == pytest.approx(4.0358e-5, rel=1e-4)
    # the same product computed another way: exp(Σ log(1 − β))
    betas = 1e-4 + (0.02 - 1e-4) * np.arange(1000) / 999
    assert s.alpha_bars[-1] == pytest.approx(math.exp(sum(math.log1p(-b) for b in betas)), rel=1e-9)
    # SNR(T) = ᾱ_T/(1 − ᾱ_T)
    assert s.snr[-1] == pytest.approx(4.0358e-5 / (1 - 4.0358e-5), rel=1e-4)


def test_linear_schedule_rescaled_for_a_small_T():
    short = D.linear_beta_schedule(100)
    assert short.alpha_bars[-1] == pytest.approx(math.exp(sum(math.log1p(-b) for b in np.linspace(1e-4, 0.02, 100))))
    assert short.alpha_bars[-1] > 0.3  # the unscaled bounds leave a lot of signal at T = 100
    rescaled = D.linear_beta_schedule(100, rescale=True)
    assert rescaled.betas[0] == pytest.approx(1e-3) and rescaled.betas[-1] == pytest.approx(0.2)
    assert rescaled.alpha_bars[-1] < 1e-4
    with pytest.raises(ValueError, match="rescaling"):
        D.linear_beta_schedule(10, rescale=True)  # β_end would be 2


def _cosine_f(t, T, s=0.008):
    return math.cos((t / T + s) / (1 + s) * math.pi / 2) ** 2


@pytest.mark.parametrize("T", [10, 100, 1000])
def test_cosine_schedule_matches_nichol_dhariwal(T):
    s = D.cosine_beta_schedule(T)
    assert np.all(s.betas <= 0.999) and np.all(s.betas > 0)
    assert np.all(np.diff(s.alpha_bars) < 0), "ᾱ must decrease"
    assert np.all(np.diff(s.snr) < 0), "the SNR must decrease"
    # before the clipping acts, ᾱ_t = f(t)/f(0) exactly
    unclipped = np.flatnonzero(s.betas < 0.999)
    unclipped = unclipped[unclipped == np.arange(len(unclipped))]  # the leading run
    for t in unclipped[:: max(1, len(unclipped) // 20)]:
        assert s.alpha_bars[t] == pytest.approx(_cosine_f(t + 1, T) / _cosine_f(0, T), rel=1e-9)
    assert s.betas[-1] == pytest.approx(0.999)  # f(T) = 0 gives β_T = 1, clipped


@pytest.mark.parametrize("make", [D.linear_beta_schedule, D.cosine_beta_schedule])
def test_schedule_derived_quantities(make):
    s = make(50)
    np.testing.assert_allclose(s.alphas, 1 - s.betas)
    np.testing.assert_allclose(s.alpha_bars, np.cumprod(1 - s.betas))
    np.testing.assert_allclose(s.alpha_bars_prev[1:], s.alpha_bars[:-1])
    assert s.alpha_bars_prev[0] == 1.0
    np.testing.assert_allclose(s.sqrt_alpha_bars**2 + s.sqrt_one_minus_alpha_bars**2, 1.0)
    np.testing.assert_allclose(s.snr, s.alpha_bars / (1 - s.alpha_bars))
    np.testing.assert_allclose(s.posterior_variance, s.betas * (1 - s.alpha_bars_prev) / (1 - s.alpha_bars))
    assert s.posterior_variance[0] == 0.0 and np.all(s.posterior_variance <= s.betas)
    with pytest.raises(ValueError):
        s.betas[0] = 0.5  # read-only: schedules are shared


@pytest.mark.parametrize(
    "call",
    [
        lambda: D.linear_beta_schedule(0),
        lambda: D.linear_beta_schedule(2.5),
        lambda: D.linear_beta_schedule(10, beta_start=0.0),
        lambda: D.linear_beta_schedule(10, beta_end=1.5),
        lambda: D.cosine_beta_schedule(0),
        lambda: D.cosine_beta_schedule(10, s=-1.0),
        lambda: D.Schedule.from_betas([0.1, np.nan]),
        lambda: D.Schedule.from_betas([]),
    ],
)
def test_bad_schedules_are_clear_errors(call):
    with pytest.raises(ValueError, match="T must|beta|s must|betas"):
        call()


# ----------------------------------------------------------------------------- forward process
def test_q_sample_formula_per_sample_steps_and_dtype():
    s = D.linear_beta_schedule(100, rescale=True)
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(4, 3)).astype(np.float32)
    noise = rng.normal(size=(4, 3)).astype(np.float32)
    t = np.array([0, 10, 50, 99])
    x_t = D.q_sample(x0, t, noise, s)
    assert isinstance(x_t, np.ndarray) and x_t.dtype == np.float32
    for i, step in enumerate(t):
        expected = math.sqrt(s.alpha_bars[step]) * x0[i] + math.sqrt(1 - s.alpha_bars[step]) * noise[i]
        np.testing.assert_allclose(x_t[i], expected, rtol=1e-6)
    # a single int applies to the whole batch; images broadcast over their pixels
    images = rng.normal(size=(2, 1, 4, 4))
    out = D.q_sample(images, 7, np.zeros_like(images), s)
    np.testing.assert_allclose(out, math.sqrt(s.alpha_bars[7]) * images)
    out = D.q_sample(images, np.array([3, 9]), np.zeros_like(images), s)
    np.testing.assert_allclose(out[1], math.sqrt(s.alpha_bars[9]) * images[1])


def test_q_sample_statistics_match_q_mean_var():
    s = D.cosine_beta_schedule(100)
    x0 = np.array([[1.5, -2.0]])
    engine.manual_seed(0)
    draws = np.concatenate([D.q_sample(np.repeat(x0, 20000, axis=0), 40, schedule=s)])
    mean, var = D.q_mean_var(x0, 40, s)
    n = len(draws)
    assert np.all(np.abs(draws.mean(0) - mean[0]) < 5 * np.sqrt(var / n))
    np.testing.assert_allclose(draws.var(0), np.broadcast_to(var, (2,)), rtol=0.05)


def test_q_sample_gradients_gradcheck_and_torch():
    s = D.linear_beta_schedule(20)
    t = np.array([0, 5, 19])
    rng = np.random.default_rng(1)
    x0, noise = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    check_gradcheck(lambda a, e: D.q_sample(a, t, e, s), [x0, noise])
    a = s.sqrt_alpha_bars[t][:, None]
    b = s.sqrt_one_minus_alpha_bars[t][:, None]
    torch = require_torch()
    check_against_torch(
        lambda x, e: D.q_sample(x, t, e, s), lambda x, e: x * torch.from_numpy(a) + e * torch.from_numpy(b), [x0, noise]
    )


def test_posterior_is_the_bayes_update():
    """q(x_{t−1} | x_t, x_0) ∝ N(x_{t−1}; √ᾱ_{t−1} x_0, 1 − ᾱ_{t−1}) · N(x_t; √α_t x_{t−1}, β_t):
    precisions add, and the mean is the precision-weighted average."""
    s = D.cosine_beta_schedule(30)
    rng = np.random.default_rng(2)
    x0, x_t = rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    for t in (1, 7, 29):
        prior_var = 1 - s.alpha_bars_prev[t]
        precision = 1 / prior_var + s.alphas[t] / s.betas[t]
        mean = (
            math.sqrt(s.alpha_bars_prev[t]) * x0 / prior_var + math.sqrt(s.alphas[t]) * x_t / s.betas[t]
        ) / precision
        got_mean, got_var = D.q_posterior_mean_var(x0, x_t, t, s)
        np.testing.assert_allclose(got_mean, mean, rtol=1e-10)
        assert float(got_var) == pytest.approx(1 / precision, rel=1e-10)


def test_reverse_step_with_the_true_noise_gives_the_posterior_mean():
    """If ε_θ returned the very ε that made x_t, the DDPM mean would be μ̃(x_0, x_t)."""
    s = D.linear_beta_schedule(50, rescale=True)
    rng = np.random.default_rng(3)
    x0, eps = rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
    for t in (1, 25, 49):
        x_t = D.q_sample(x0, t, eps, s)
        stepped = D.reverse_step(x_t, eps, t, s, noise=np.zeros_like(x_t))
        np.testing.assert_allclose(stepped, D.q_posterior_mean_var(x0, x_t, t, s)[0], rtol=1e-9, atol=1e-12)
        # noise enters with σ_t = √β_t or √β̃_t
        z = rng.normal(size=x_t.shape)
        for variance, values in (("beta", s.betas), ("posterior", s.posterior_variance)):
            noisy = D.reverse_step(x_t, eps, t, s, noise=z, variance=variance)
            np.testing.assert_allclose(noisy - stepped, math.sqrt(values[t]) * z, atol=1e-12)
    # the last step (t = 0) adds no noise and recovers x_0 exactly
    x_1 = D.q_sample(x0, 0, eps, s)
    np.testing.assert_allclose(D.reverse_step(x_1, eps, 0, s), x0, atol=1e-12)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda s: D.q_sample(np.zeros((3, 2)), 100, None, s), ValueError, "0..99"),
        (lambda s: D.q_sample(np.zeros((3, 2)), -1, None, s), ValueError, "0..99"),
        (lambda s: D.q_sample(np.zeros((3, 2)), 1.5, None, s), TypeError, "integer"),
        (lambda s: D.q_sample(np.zeros((3, 2)), np.array([1, 2]), None, s), ValueError, "one step per sample"),
        (lambda s: D.q_sample(np.zeros((3, 2)), 1, np.zeros((3, 3)), s), ValueError, "noise has shape"),
        (lambda s: D.q_sample(np.zeros((3, 2)), 1, None, "linear"), TypeError, "Schedule"),
        (lambda s: D.reverse_step(np.zeros((3, 2)), np.zeros((3, 2)), 100, s), ValueError, "0..99"),
        (lambda s: D.reverse_step(np.zeros((3, 2)), np.zeros((3, 2)), 5, s, variance="fixed"), ValueError, "variance"),
        (lambda s: D.sample(lambda x, t: x, s, 0, 2), ValueError, "n must"),
        (lambda s: D.sample(lambda x, t: x, s, 4, 2, x_T=np.zeros((3, 2))), ValueError, "x_T"),
    ],
)
def test_bad_arguments_are_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(D.linear_beta_schedule(100))


# ----------------------------------------------------------------------------- sampler
def test_sampler_trajectory_progress_and_last_step():
    s = D.cosine_beta_schedule(15)
    calls = []
    engine.manual_seed(0)
    trajectory = D.sample(
        lambda x, t: x * 0.1, s, 8, 3, return_trajectory=True, progress=lambda done, total: calls.append((done, total))
    )
    assert trajectory.shape == (16, 8, 3) and trajectory.dtype == np.float32
    assert calls == [(i, 15) for i in range(1, 16)]
    # with T = 1 the only step is the last one: no noise, so the result ignores the seed
    one = D.Schedule.from_betas([0.3])
    x_T = np.ones((4, 2), dtype=np.float32)
    results = []
    for seed in (1, 2):
        engine.manual_seed(seed)
        results.append(D.sample(lambda x, t: x * 0.5, one, 4, 2, x_T=x_T))
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], (1 - 0.3 / math.sqrt(0.3) * 0.5) / math.sqrt(0.7), rtol=1e-6)


def test_sampler_refuses_an_exploding_model():
    with pytest.raises(FloatingPointError, match="NaN or infinite"):
        D.sample(lambda x, t: np.full(x.shape, np.inf), D.linear_beta_schedule(100), 4, 2)


# ----------------------------------------------------------------------------- exact mixture
def test_noised_mixture_score_and_optimal_epsilon():
    _, _, mixture = data.make_gaussian_mixture(10, dim=1, seed=0)
    s = D.linear_beta_schedule(100, rescale=True)
    t = 30
    noised = D.noised_mixture(mixture, t, s)
    ab = s.alpha_bars[t]
    np.testing.assert_allclose(noised.means, math.sqrt(ab) * mixture.means)
    np.testing.assert_allclose(noised.stds**2, ab * mixture.stds**2 + 1 - ab)
    x = np.linspace(-3, 3, 13)[:, None]
    h = 1e-5
    numeric = (noised.log_prob(x + h) - noised.log_prob(x - h)) / (2 * h)
    np.testing.assert_allclose(D.exact_score(mixture, x, t, s)[:, 0], numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(D.exact_epsilon(mixture, x, t, s), -math.sqrt(1 - ab) * D.exact_score(mixture, x, t, s))
    # at the last step the noised law is almost N(0, 1)
    last = D.noised_mixture(mixture, s.T - 1, s)
    assert np.all(np.abs(last.means) < 0.02) and np.allclose(last.stds, 1, atol=1e-4)


def test_optimal_epsilon_for_one_gaussian_is_the_posterior_mean_of_the_noise():
    """x_0 ~ N(μ, σ²): E[ε | x_t] = √(1 − ᾱ)(x_t − √ᾱ μ)/(ᾱ σ² + 1 − ᾱ) (Gaussian conditioning)."""
    mixture = data.GaussianMixture(np.array([[0.7]]), 0.4, 1.0)
    s = D.cosine_beta_schedule(40)
    x = np.linspace(-2, 2, 9)[:, None]
    for t in (0, 10, 39):
        ab = s.alpha_bars[t]
        expected = math.sqrt(1 - ab) * (x - math.sqrt(ab) * 0.7) / (ab * 0.16 + 1 - ab)
        np.testing.assert_allclose(D.exact_epsilon(mixture, x, t, s), expected, rtol=1e-9)


def test_the_optimal_denoiser_has_a_lower_ddpm_loss_than_zero():
    X, _, mixture = data.make_gaussian_mixture(4000, dim=1, seed=1)
    s = D.cosine_beta_schedule(50)
    engine.manual_seed(0)
    optimal = D.ddpm_loss(D.OptimalDenoiser(mixture, s), X, s).item()
    engine.manual_seed(0)
    zero = D.ddpm_loss(lambda x, t: x * 0.0, X, s).item()
    assert zero == pytest.approx(1.0, abs=0.05)  # E ε² = 1
    assert optimal < 0.7 * zero


@pytest.mark.parametrize("schedule", [D.cosine_beta_schedule(100), D.linear_beta_schedule(100, rescale=True)])
def test_exact_reverse_process_recovers_the_mixture(schedule):
    X, _, mixture = data.make_gaussian_mixture(1500, dim=1, seed=2)
    reference, _ = mixture.sample(1500, seed=3)
    engine.manual_seed(4)
    samples = D.exact_sample(mixture, schedule, 1500)
    noise = np.random.default_rng(5).normal(size=(1500, 1))
    assert samples.shape == (1500, 1)
    baseline = energy_distance(X, reference)  # two honest samples of the same law
    assert energy_distance(samples, reference) < 5 * baseline + 2e-3
    assert energy_distance(samples, reference) < 0.02 * energy_distance(noise, reference)
    # one exact step is the sampler's step
    x_t = np.linspace(-2, 2, 5)[:, None]
    z = np.ones_like(x_t)
    np.testing.assert_allclose(
        D.exact_reverse_step(mixture, x_t, 20, schedule, noise=z),
        D.reverse_step(x_t, D.exact_epsilon(mixture, x_t, 20, schedule), 20, schedule, noise=z),
    )


# ----------------------------------------------------------------------------- denoiser and training
def test_timestep_embedding():
    emb = D.timestep_embedding(np.array([0, 1, 10]), 8)
    assert emb.shape == (3, 8) and emb.dtype == np.float32
    np.testing.assert_array_equal(emb[0], [0, 0, 0, 0, 1, 1, 1, 1])
    freqs = 10000.0 ** (-np.arange(4) / 4)
    np.testing.assert_allclose(emb[2], np.concatenate([np.sin(10 * freqs), np.cos(10 * freqs)]), rtol=1e-6)
    with pytest.raises(ValueError, match="even"):
        D.timestep_embedding(np.array([1]), 7)


def test_denoiser_shapes_gradients_and_errors():
    engine.manual_seed(0)
    model = D.Denoiser(dim=2, hidden=16, time_embedding_dim=8, T=50)
    x = np.random.default_rng(0).normal(size=(5, 2)).astype(np.float32)
    out = model(engine.Tensor(x), np.array([0, 1, 2, 3, 49]))
    assert out.shape == (5, 2) and out.dtype == np.float32
    # the time step changes the output
    assert not np.allclose(model(engine.Tensor(x), 0).data, model(engine.Tensor(x), 40).data)
    loss = D.ddpm_loss(model, x, D.cosine_beta_schedule(50))
    loss.backward()
    assert all(p.grad is not None and np.any(p.grad.numpy()) for p in model.parameters())
    with pytest.raises(ValueError, match="0..49"):
        model(engine.Tensor(x), 50)
    with pytest.raises(ValueError, match=r"\[N, 2\]"):
        model(engine.Tensor(np.zeros((5, 3), np.float32)), 0)
    with pytest.raises(ValueError, match="time_embedding_dim"):
        D.Denoiser(time_embedding_dim=5)


def test_ddpm_loss_is_reproducible_with_the_seed():
    model = D.Denoiser(hidden=8, time_embedding_dim=4, T=10)
    X = np.random.default_rng(0).normal(size=(32, 2))
    values = []
    for _ in range(2):
        engine.manual_seed(7)
        values.append(D.ddpm_loss(model, X, D.cosine_beta_schedule(10)).item())
    assert values[0] == values[1]


def test_train_ddpm_on_two_moons_beats_noise_by_far():
    """A small DDPM trained for a bounded number of steps: its samples' energy distance to
    held-out moons is far below that of the N(0, I) noise it starts from."""
    engine.manual_seed(0)
    X, _ = data.make_moons(3000, noise=0.05, seed=0)
    train, held_out = X[:2000], X[2000:]
    schedule = D.linear_beta_schedule(100, rescale=True)
    model = D.Denoiser(dim=2, hidden=64, time_embedding_dim=16, T=100)
    ticks = []
    losses = D.train_ddpm(
        model, train, schedule, steps=1500, batch_size=128, lr=3e-3, progress=lambda done, total: ticks.append(done)
    )
    assert len(losses) == 1500 and ticks[-1] == 1500
    assert losses[-200:].mean() < 0.8 * losses[:50].mean()
    quality = D.sample_quality(model, schedule, held_out)
    print(f"energy distance: samples {quality.model:.4f}, noise {quality.noise:.4f}, ratio {quality.ratio:.3f}")
    assert quality.ratio < 0.2, quality

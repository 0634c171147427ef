"""engine.vae: the KL closed form (published values, Monte Carlo, torch.distributions), the
reparameterisation gradient, the log-likelihoods, the models, training, and the two gradient
estimators (unbiased, with the variances their closed forms predict)."""

import math

import numpy as np
import pytest
from oracle import check_against_torch, check_gradcheck, require_torch

import engine
from engine import data
from engine import vae as V


def _mu_logvar(shape=(4, 3), seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape), rng.uniform(-2, 1.5, size=shape)


# ----------------------------------------------------------------------------- KL
def test_gaussian_kl_published_values():
    """KL(N(μ, 1) ‖ N(0, 1)) = μ²/2; KL(N(0, σ²) ‖ N(0, 1)) = ½(σ² − 1 − ln σ²); KL(p ‖ p) = 0."""
    kl = V.gaussian_kl(np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, math.log(4.0), 0.0]]))
    assert kl.shape == (1,)
    assert kl.item() == pytest.approx(0.5 + 0.5 * (4 - 1 - math.log(4)), rel=1e-12)
    assert V.gaussian_kl(np.zeros((2, 5)), np.zeros((2, 5))).data == pytest.approx([0.0, 0.0])
    per_dim = V.gaussian_kl_per_dim(np.array([[1.0, 0.0]]), np.array([[0.0, math.log(4.0)]]))
    np.testing.assert_allclose(per_dim.data, [[0.5, 0.5 * (3 - math.log(4))]])


def test_gaussian_kl_is_never_negative_and_sums_the_last_dim():
    mu, logvar = _mu_logvar((6, 5, 3))
    kl = V.gaussian_kl(mu, logvar)
    assert kl.shape == (6, 5) and np.all(kl.data >= 0)
    np.testing.assert_allclose(kl.data, V.gaussian_kl_per_dim(mu, logvar).data.sum(-1))


def test_gaussian_kl_matches_a_monte_carlo_estimate():
    mu, logvar = _mu_logvar((5, 2), seed=1)
    closed = V.gaussian_kl(mu, logvar).data
    estimate, stderr = V.gaussian_kl_monte_carlo(mu, logvar, n_samples=20000, seed=0)
    assert np.all(np.abs(estimate - closed) < 4.5 * stderr), (estimate, closed, stderr)
    # and the estimator is honest: with few samples it misses by about its standard error
    rough, rough_err = V.gaussian_kl_monte_carlo(mu, logvar, n_samples=50, seed=1)
    assert np.all(rough_err > stderr)


def test_gaussian_kl_against_torch_distributions():
    torch = require_torch()
    mu, logvar = _mu_logvar((4, 3), seed=2)
    normal = torch.distributions.Normal

    def torch_kl(m, lv):
        return torch.distributions.kl_divergence(normal(m, torch.exp(0.5 * lv)), normal(0.0, 1.0)).sum(-1)

    check_against_torch(V.gaussian_kl, torch_kl, [mu, logvar], atol=1e-10, rtol=1e-9)
    check_gradcheck(V.gaussian_kl, [mu, logvar])


# ----------------------------------------------------------------------------- reparameterisation
def test_reparameterize_gradient_with_a_fixed_eps():
    mu, logvar = _mu_logvar((3, 2), seed=3)
    eps = np.random.default_rng(4).normal(size=(3, 2))
    check_gradcheck(lambda m, lv: V.reparameterize(m, lv, eps), [mu, logvar])
    torch = require_torch()
    check_against_torch(
        lambda m, lv: V.reparameterize(m, lv, eps),
        lambda m, lv: m + torch.exp(0.5 * lv) * torch.from_numpy(eps),
        [mu, logvar],
    )
    # ∂z/∂μ = 1 and ∂z/∂(log σ²) = ½ σ ε, read off directly
    m = engine.Tensor(mu, requires_grad=True)
    lv = engine.Tensor(logvar, requires_grad=True)
    V.reparameterize(m, lv, eps).sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), 1.0)
    np.testing.assert_allclose(lv.grad.numpy(), 0.5 * np.exp(0.5 * logvar) * eps)


def test_reparameterize_draws_have_the_right_law_and_follow_the_seed():
    mu = np.full((20000, 2), [1.0, -2.0])
    logvar = np.full((20000, 2), [math.log(0.25), math.log(4.0)])
    engine.manual_seed(0)
    z = V.reparameterize(mu, logvar).data
    engine.manual_seed(0)
    np.testing.assert_array_equal(z, V.reparameterize(mu, logvar).data)
    assert np.all(np.abs(z.mean(0) - [1.0, -2.0]) < 5 * np.array([0.5, 2.0]) / math.sqrt(20000))
    np.testing.assert_allclose(z.std(0), [0.5, 2.0], rtol=0.03)


# ----------------------------------------------------------------------------- likelihoods and ELBO
def test_log_likelihoods_against_torch_distributions():
    torch = require_torch()
    rng = np.random.default_rng(5)
    logits, x = rng.normal(size=(3, 4, 2)), rng.uniform(size=(3, 4, 2))
    check_against_torch(
        V.bernoulli_log_likelihood,
        lambda z, t: torch.distributions.Bernoulli(logits=z, validate_args=False).log_prob(t).sum((1, 2)),
        [logits, x],
        grad=[True, False],
    )
    check_gradcheck(V.bernoulli_log_likelihood, [logits, x], grad=[True, False])
    x_hat, target = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    check_against_torch(
        lambda a, b: V.gaussian_log_likelihood(a, b, var=0.3),
        lambda a, b: torch.distributions.Normal(a, math.sqrt(0.3)).log_prob(b).sum(-1),
        [x_hat, target],
        atol=1e-9,
    )
    check_gradcheck(lambda a, b: V.gaussian_log_likelihood(a, b, var=0.3), [x_hat, target])


def test_extreme_logits_give_finite_log_likelihoods():
    logits = np.array([[1000.0, -1000.0, 0.0]])
    value = V.bernoulli_log_likelihood(logits, np.array([[0.0, 1.0, 1.0]])).item()
    assert value == pytest.approx(-2000.0 - math.log(2.0))


def test_elbo_weights_the_kl():
    assert V.elbo(-3.0, 2.0) == -5.0
    assert V.elbo(-3.0, 2.0, beta=0.5) == -4.0
    recon = engine.Tensor(np.array([-1.0, -2.0]))
    np.testing.assert_allclose(V.elbo(recon, np.array([0.5, 1.0]), beta=2.0).data, [-2.0, -4.0])
    with pytest.raises(ValueError, match="beta"):
        V.elbo(-3.0, 2.0, beta=-1.0)


# ----------------------------------------------------------------------------- models
def test_vae_shapes_loss_parts_and_gradients():
    engine.manual_seed(0)
    model = V.VAE(input_dim=3, hidden=16, latent_dim=2)
    x = np.random.default_rng(6).normal(size=(10, 3)).astype(np.float32)
    out, mu, logvar = model(x)
    assert out.shape == (10, 3) and mu.shape == (10, 2) and logvar.shape == (10, 2)
    eps = np.random.default_rng(7).normal(size=(10, 2)).astype(np.float32)
    parts = model.loss(x, beta=2.5, eps=eps)
    assert parts.loss.item() == pytest.approx(parts.recon + 2.5 * parts.kl, rel=1e-5)
    assert parts.elbo == pytest.approx(-(parts.recon + parts.kl))
    assert parts.kl_per_dim.shape == (2,) and parts.kl_per_dim.sum() == pytest.approx(parts.kl, rel=1e-5)
    # the parts, recomputed from the pieces
    mu, logvar = model.encode(x)
    decoded = model.decode(V.reparameterize(mu, logvar, eps))
    recon = -V.gaussian_log_likelihood(decoded, x, var=model.obs_var).data.mean()
    assert parts.recon == pytest.approx(float(recon), rel=1e-5)
    assert parts.kl == pytest.approx(float(V.gaussian_kl(mu, logvar).data.mean()), rel=1e-5)
    parts.loss.backward()
    assert all(p.grad is not None and np.any(p.grad.numpy()) for p in model.parameters())
    assert model.generate(4).shape == (4, 3) and model.reconstruct(x).shape == (10, 3)


def test_image_vae_round_trip_shapes_and_pixel_probabilities():
    engine.manual_seed(1)
    images, _ = data.make_shapes(8, seed=0)
    model = V.ImageVAE((1, 16, 16), hidden=32, latent_dim=3)
    logits, mu, _ = model(images)
    assert logits.shape == (8, 1, 16, 16) and mu.shape == (8, 3)
    probabilities = model.generate(z=np.zeros((2, 3), np.float32))
    assert probabilities.shape == (2, 1, 16, 16) and np.all((probabilities > 0) & (probabilities < 1))
    assert np.isfinite(model.loss(images).loss.item())


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: V.gaussian_kl(np.zeros((2, 3)), np.zeros((2, 2))), "same shape"),
        (lambda: V.reparameterize(np.zeros((2, 3)), np.zeros((2, 3)), eps=np.zeros((3, 2))), "eps"),
        (lambda: V.VAE(likelihood="poisson"), "likelihood"),
        (lambda: V.VAE(latent_dim=0), "latent_dim"),
        (lambda: V.VAE(input_dim=2)(np.zeros((4, 3))), r"\[N, 2\]"),
        (lambda: V.ImageVAE((1, 16, 16))(np.zeros((4, 1, 8, 8))), "1, 16, 16"),
        (lambda: V.gaussian_log_likelihood(np.zeros(3), np.zeros(3), var=0.0), "var"),
        (lambda: V.train_vae(V.VAE(), np.zeros((8, 2)), epochs=1, steps=3), "not both"),
        (lambda: V.score_function_vs_reparam_variance(sigma=0.0), "sigma"),
    ],
)
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ----------------------------------------------------------------------------- training
def test_elbo_rises_during_training_on_two_moons():
    engine.manual_seed(0)
    X, _ = data.make_moons(1000, noise=0.05, seed=0)
    model = V.VAE(input_dim=2, hidden=32, latent_dim=2)
    ticks = []
    history = V.train_vae(
        model, X, epochs=15, batch_size=100, lr=3e-3, progress=lambda done, total: ticks.append((done, total))
    )
    assert len(history.elbo) == 150 and ticks[-1] == (150, 150)
    per_epoch = history.per_epoch("elbo")
    assert per_epoch.shape == (15,)
    print(f"mean ELBO per sample: first epoch {per_epoch[0]:.3f}, last epoch {per_epoch[-1]:.3f}")
    assert per_epoch[-1] > per_epoch[0] + 2.0
    assert np.all(history.kl >= 0)
    assert history.per_epoch("kl_per_dim").shape == (15, 2)


def test_a_large_beta_buys_a_smaller_kl():
    X, _ = data.make_moons(600, noise=0.05, seed=1)
    final_kl = {}
    for beta in (0.5, 8.0):
        engine.manual_seed(2)
        model = V.VAE(input_dim=2, hidden=32, latent_dim=2)
        history = V.train_vae(model, X, steps=120, batch_size=100, lr=3e-3, beta=beta)
        assert len(history.loss) == 120
        final_kl[beta] = history.per_epoch("kl")[-1]
    assert final_kl[8.0] < 0.5 * final_kl[0.5], final_kl


# ----------------------------------------------------------------------------- gradient estimators
@pytest.mark.parametrize("mu, sigma", [(1.0, 1.0), (-0.5, 2.0)])
def test_both_estimators_are_unbiased_and_reparam_has_lower_variance(mu, sigma):
    """f(z) = z²: the true gradient is 2μ. Pathwise estimates 2(μ + σε) have variance 4σ²;
    score-function estimates (μ + σε)² ε/σ have variance (μ⁴ + 18μ²σ² + 15σ⁴)/σ² − 4μ²."""
    n = 100_000
    result = V.score_function_vs_reparam_variance(mu=mu, sigma=sigma, n=n, seed=0)
    assert result.true_gradient == 2 * mu
    for mean, var in ((result.score_mean, result.score_var), (result.reparam_mean, result.reparam_var)):
        assert abs(mean - 2 * mu) < 5 * math.sqrt(var / n)
    assert result.reparam_var == pytest.approx(4 * sigma**2, rel=0.02)
    expected_score_var = (mu**4 + 18 * mu**2 * sigma**2 + 15 * sigma**4) / sigma**2 - 4 * mu**2
    assert result.score_var == pytest.approx(expected_score_var, rel=0.1)
    assert result.reparam_var < result.score_var
    assert result.score_function.shape == (n,) and result.reparameterized.shape == (n,)


def test_estimators_with_a_custom_function_and_several_samples():
    """f = sin: ∇_μ E[sin z] = cos(μ)·exp(−σ²/2). Averaging K draws divides the variance by K."""
    mu, sigma, n = 0.3, 0.8, 20000
    exact = math.cos(mu) * math.exp(-(sigma**2) / 2)
    one = V.score_function_vs_reparam_variance(mu, sigma, n=n, f=lambda z: z.sin(), seed=1)
    four = V.score_function_vs_reparam_variance(mu, sigma, n=n, f=lambda z: z.sin(), n_samples=4, seed=2)
    assert one.true_gradient is None
    for r in (one, four):
        assert abs(r.reparam_mean - exact) < 5 * math.sqrt(r.reparam_var / n)
        assert abs(r.score_mean - exact) < 5 * math.sqrt(r.score_var / n)
    assert four.score_var == pytest.approx(one.score_var / 4, rel=0.1)
    assert four.reparam_var == pytest.approx(one.reparam_var / 4, rel=0.1)

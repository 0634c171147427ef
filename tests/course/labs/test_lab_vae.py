"""The notebook labs of 05-08 (engine.course.labs: convolution, attention, diffusion, vae).

Each value a notebook shows is checked here against an independent computation: brute-force
loops over placements and patches, NumPy written out by hand, closed forms, or PyTorch.
"""

import numpy as np
import pytest
from notebook_driver import load_module

import engine
from engine.course import ui
from engine.course.labs import vae as vae_lab

# ============================================================================= 08 VAE
NB = load_module("notebooks/08_vae.py")  # the lesson cells the lab runs: the notebook's own
L = NB.lesson_cells()
ESTIMATORS = (NB.score_function_gradient, NB.reparameterize)  # section 4's two estimators


def encoded(model, x):
    """(μ, log σ²) by the notebook's encoder, float64 arrays."""
    with engine.no_grad():
        return tuple(t.data.astype(np.float64) for t in NB.encode(model, engine.tensor(np.asarray(x, np.float32))))


def decoded(model, z):
    """x̂(z) by the notebook's decoder, float64."""
    with engine.no_grad():
        return NB.decode(model, engine.tensor(np.asarray(z, np.float32))).data.astype(np.float64)


def recon_and_elbo(model, x, beta=1.0):
    """The notebook's loss on rows x: (reconstruction, β = 1 ELBO)."""
    _, recon, kl = NB.negative_elbo(model, np.asarray(x, np.float32), beta)
    return recon.item(), -(recon.item() + float(kl.data.astype(np.float64).sum()))


def test_reparam_gradients_are_the_pathwise_derivatives():
    r = vae_lab.reparam_gradients(NB.reparameterize, 1.5, 0.5, n=5000, seed=3)
    eps = np.random.default_rng(3).standard_normal(5000)
    z = 1.5 + 0.5 * eps
    assert r.estimate == pytest.approx(np.mean(z**2))
    assert r.grad_mu == pytest.approx(np.mean(2 * z))
    assert r.grad_sigma == pytest.approx(np.mean(2 * z * eps))
    assert r.grad_mu == pytest.approx(3.0, abs=0.05) and r.grad_sigma == pytest.approx(1.0, abs=0.1)
    with pytest.raises(ValueError, match="sigma"):
        vae_lab.reparam_gradients(NB.reparameterize, 0.0, 0.0)


def test_kl_check_closed_form_monte_carlo_and_torch(torch):
    for mu, sigma in [(0.0, 1.0), (1.0, 1.0), (-2.0, 0.3), (0.5, 2.5), (2.9, 0.05)]:
        k = vae_lab.kl_check(NB.kl_to_prior, mu, sigma, n_samples=20000, seed=1)
        ref = torch.distributions.kl_divergence(
            torch.distributions.Normal(mu, sigma), torch.distributions.Normal(0.0, 1.0)
        )
        assert k.closed == pytest.approx(float(ref), rel=1e-6, abs=1e-7)  # torch: float32
        assert abs(k.mc - k.closed) < 5 * k.mc_se + 1e-12
        assert np.all(np.diff(k.x) > 0) and len(k.x) <= 182  # sorted, and few points to draw
        if sigma <= 1:  # the grid [−6, 6] holds all the mass, and resolves q's peak
            assert np.trapezoid(k.q, k.x) == pytest.approx(1.0, abs=1e-3)


def test_estimator_comparison_exact_gradients():
    for name in vae_lab.ESTIMATOR_FUNCTIONS:
        e = vae_lab.estimator_comparison(*ESTIMATORS, 0.7, 0.8, name, n_samples=20, n=3000, seed=4)
        for key in ("score_function", "baseline", "reparameterized"):
            v = getattr(e, key)
            assert v.mean() == pytest.approx(e.exact, abs=5 * v.std() / np.sqrt(len(v)))
    e = vae_lab.estimator_comparison(*ESTIMATORS, 2.0, 1.0, "exp z", n_samples=1, n=2000, seed=0)
    assert e.exact == pytest.approx(np.exp(2.5))
    assert e.score_var > 3 * e.reparam_var
    with pytest.raises(ValueError, match="f_name"):
        vae_lab.estimator_comparison(*ESTIMATORS, f_name="tan z")


def test_train_vae_2d_budget_and_collapse():
    X = vae_lab.toy_data_2d("moons", 1500, seed=0)
    low = vae_lab.train_vae_2d(L, X, beta=0.1, latent_dim=3, steps=400, n_eval=300)
    high = vae_lab.train_vae_2d(L, X, beta=100.0, latent_dim=3, steps=400, n_eval=300)
    for r in (low, high):
        assert r.kl == pytest.approx(r.kl_per_dim.sum(), rel=1e-5)
        assert r.elbo == pytest.approx(-(r.recon + r.kl), rel=1e-5)
        assert r.reconstructions.shape == (300, 2) and r.samples.shape == (300, 2)
    assert (low.kl_per_dim > 0.05).sum() >= 1
    assert high.kl_per_dim.max() < 0.05  # collapsed
    assert high.recon > low.recon
    # the recon term is the Gaussian negative log-likelihood of the model's loss on held-out rows
    with engine.random.fork_rng(1):
        again = recon_and_elbo(low.model, low.held_out, beta=0.1)
    assert again[0] == pytest.approx(low.recon, rel=1e-6)


def test_beta_sweep_switches_dimensions_off():
    X = vae_lab.toy_data_2d("8 Gaussians", 1200, seed=0)
    ticks = []
    s = vae_lab.beta_sweep(L, X, betas=(0.1, 100.0), latent_dim=2, steps=300, on_step=ticks.append)
    assert ticks[-1] == 600 and len(ticks) == 600
    assert s.active[0] >= 1 and s.active[1] == 0
    np.testing.assert_allclose(s.kl, s.kl_per_dim.sum(1))


def test_image_vae_latents_grid_and_decoder():
    train, _ = engine.data.load_digits("train")
    test, labels = engine.data.load_digits("test")
    r = vae_lab.train_image_vae(L, train[:300], test[:40], labels[:40], steps=30, obs_var=0.1)
    assert r.model.obs_var == 0.1 and r.image_shape == (8, 8)
    assert r.latents.shape == (40, 2) and list(r.labels) == list(labels[:40])
    assert r.reconstructions.shape == (40, 8, 8) and np.isfinite(r.elbo)
    g = vae_lab.latent_grid(L, r.model, r.image_shape, n=3, limit=2.0)
    assert g.images.shape == (3, 3, 8, 8)
    # top-left tile is z = (−2, 2): decode it directly; a Gaussian decoder's mean is its output
    direct = vae_lab.decode_point(L, r.model, -2.0, 2.0)
    np.testing.assert_allclose(g.images[0, 0].ravel(), direct, rtol=1e-5, atol=1e-6)  # float32 batch
    np.testing.assert_allclose(direct, decoded(r.model, [[-2.0, 2.0]])[0], rtol=1e-6)
    with pytest.raises(ValueError, match="images must be"):
        vae_lab.train_image_vae(L, train[:10].reshape(10, 64), test[:5], labels[:5])


@pytest.mark.parametrize("name", vae_lab.ESTIMATOR_FUNCTIONS)
def test_the_pages_estimators_are_the_librarys(name):
    """The page's score_function_gradient and the pathwise gradient through its reparameterize
    give engine.vae.score_function_vs_reparam_variance's estimates on the same draws."""
    e = vae_lab.estimator_comparison(*ESTIMATORS, 0.4, 1.3, name, n_samples=4, n=300, seed=8)
    ref = engine.vae.score_function_vs_reparam_variance(
        0.4, 1.3, n=300, f=vae_lab._FUNCTIONS[name], n_samples=4, seed=8
    )
    np.testing.assert_allclose(e.score_function, ref.score_function, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(e.reparameterized, ref.reparameterized, rtol=1e-9, atol=1e-12)


def test_score_function_baseline_is_the_control_variate_by_hand():
    e = vae_lab.estimator_comparison(*ESTIMATORS, 1.5, 0.7, "z²", n_samples=3, n=500, seed=5)
    eps = np.random.default_rng(5).standard_normal((500, 3))
    z = 1.5 + 0.7 * eps
    by_hand = ((z**2 - 1.5**2) * (z - 1.5) / 0.7**2).mean(1)
    np.testing.assert_allclose(e.baseline, by_hand, rtol=1e-10)
    bare = (z**2 * (z - 1.5) / 0.7**2).mean(1)
    np.testing.assert_allclose(e.score_function, bare, rtol=1e-10)  # the same draws


def test_decoder_variance_and_beta_are_one_knob():
    assert vae_lab.equivalent_beta(1.0, 0.2, reference_var=0.05) == pytest.approx(4.0)
    X = vae_lab.toy_data_2d("moons", 1000, seed=0)
    a = vae_lab.train_vae_2d(L, X, beta=0.5, latent_dim=2, steps=150, obs_var=0.5, n_eval=200)
    b = vae_lab.train_vae_2d(L, X, beta=5.0, latent_dim=2, steps=150, obs_var=0.05, n_eval=200)
    c = vae_lab.train_vae_2d(L, X, beta=0.5, latent_dim=2, steps=150, obs_var=0.05, n_eval=200)
    np.testing.assert_allclose(a.kl_per_dim, b.kl_per_dim, rtol=1e-3, atol=1e-4)
    assert np.abs(a.kl_per_dim - c.kl_per_dim).max() > 0.05  # the variance alone does change it
    with pytest.raises(ValueError, match="obs_var"):
        vae_lab.train_vae_2d(L, X, obs_var=0.0)


def test_toy_data_2d_labels_and_vae_latents():
    X, y = vae_lab.toy_data_2d("moons", 600, seed=2, return_labels=True)
    X0, y0 = engine.data.make_moons(600, noise=0.05, seed=2)
    np.testing.assert_array_equal(y, y0)
    X0 = X0.astype(np.float64)
    np.testing.assert_allclose(X, (X0 - X0.mean(0)) / X0.std(0), rtol=1e-12)
    r = vae_lab.train_vae_2d(L, X, latent_dim=2, steps=50, n_eval=100)
    np.testing.assert_allclose(r.latents, encoded(r.model, X[-100:])[0], rtol=1e-5, atol=1e-6)  # float32 BLAS


def test_iwae_bounds_rise_towards_log_p_x():
    train, _ = engine.data.load_digits("train")
    test, labels = engine.data.load_digits("test")
    r = vae_lab.train_image_vae(L, train, test, labels, steps=200)
    x = test[:30].reshape(30, 64).astype(np.float64)
    b = vae_lab.iwae_bounds(NB.iwae_bound, r.model, test[:30], Ks=(1, 10, 100), seed=3)
    assert b.bound[0] == pytest.approx(b.elbo, abs=4 * b.standard_error[0])  # IWAE_1 is the ELBO
    assert b.bound[0] < b.bound[1] < b.bound[2]
    np.testing.assert_allclose(b.gap, b.bound - b.elbo)
    # log p(x) by plain Monte Carlo over the 2-D prior, independent of the encoder
    z = np.random.default_rng(0).standard_normal((20000, 2))
    x_hat = decoded(r.model, z)
    log_lik = -0.5 * (((x[:, None] - x_hat[None]) ** 2) / 0.05 + np.log(2 * np.pi * 0.05)).sum(-1)
    top = log_lik.max(1, keepdims=True)
    log_px = (top[:, 0] + np.log(np.exp(log_lik - top).mean(1))).mean()
    assert b.bound[2] <= log_px + 0.3  # a lower bound (up to Monte Carlo error)
    assert log_px - b.bound[2] < log_px - b.elbo  # K = 100 closes part of the gap
    with pytest.raises(ValueError, match="K must be"):
        vae_lab.iwae_bounds(NB.iwae_bound, r.model, test[:2], Ks=(0,))


def test_aggregate_posterior_codes_are_draws_of_q():
    X = vae_lab.toy_data_2d("moons", 900, seed=0)
    a = vae_lab.aggregate_posterior(L, X, betas=(0.0, 1.0), steps=150, n_eval=200, seed=1)
    run = vae_lab.train_vae_2d(L, X, beta=1.0, latent_dim=2, steps=150, n_eval=200, seed=1)
    codes = a.codes[1]
    # standardised by q's own mean and std, the codes are N(0, I) draws
    logvar = encoded(run.model, run.held_out)[1]
    u = (codes - run.latents) / np.exp(0.5 * logvar)
    assert abs(u.mean()) < 0.15 and u.std() == pytest.approx(1.0, abs=0.1)
    assert a.to_prior.shape == (2,) and (a.to_prior >= 0).all()


def test_train_vae_remedy_free_bits_floor_and_checks():
    X = vae_lab.toy_data_2d("moons", 1200, seed=0)
    free = vae_lab.train_vae_remedy(
        L, X, beta=30.0, remedy="free bits", free_bits=0.5, latent_dim=2, steps=300, n_eval=300
    )
    plain = vae_lab.train_vae_remedy(L, X, beta=30.0, remedy="none", latent_dim=2, steps=300, n_eval=300)
    assert free.kl_per_dim.min() > 0.3 and plain.kl_per_dim.min() < 0.05
    # the held-out numbers are the model's own β = 1 loss on the held-out rows
    with engine.random.fork_rng(1):
        again = recon_and_elbo(free.model, free.held_out)
    assert again[1] == pytest.approx(free.elbo, rel=1e-6)
    with pytest.raises(ValueError, match="remedy"):
        vae_lab.train_vae_remedy(L, X, remedy="dropout")


def test_encode_image_checks_its_size():
    train, _ = engine.data.load_digits("train")
    test, labels = engine.data.load_digits("test")
    r = vae_lab.train_image_vae(L, train[:200], test[:20], labels[:20], steps=10)
    p = vae_lab.encode_image(L, r.model, test[0])
    assert p.mean.shape == (2,) and p.reconstruction.shape == (8, 8) and p.ellipse.shape == (64, 2)
    np.testing.assert_allclose(p.reconstruction.ravel(), vae_lab.decode_point(L, r.model, *p.mean), rtol=1e-5)
    with pytest.raises(ValueError, match="64"):
        vae_lab.encode_image(L, r.model, np.zeros((4, 4)))


def test_iwae_rows_have_their_own_streams_and_image_iwae_keeps_them():
    """Each K draws from its own stream, so one row is the same whichever rows are asked for;
    image_iwae reads the rows it already has (the shipped table) and they equal a new call."""
    train, _ = engine.data.load_digits("train")
    test, labels = engine.data.load_digits("test")
    r = vae_lab.train_image_vae(L, train[:300], test[:30], labels[:30], steps=20)
    bound = NB.iwae_bound
    full = vae_lab.iwae_bounds(bound, r.model, r.images, Ks=(1, 10, 30), seed=0)
    alone = vae_lab.iwae_bounds(bound, r.model, r.images, Ks=(30,), seed=0)
    assert alone.bound[0] == full.bound[2] and alone.elbo == full.elbo
    assert r.iwae_tables == {}
    first = vae_lab.image_iwae(bound, r, Ks=(10, 3))
    assert list(first.K) == [10, 3] and first.bound[0] == full.bound[1]
    assert sorted(r.iwae_tables[vae_lab.code_key(bound)].K) == [3, 10]  # kept on the run, per bound function
    again = vae_lab.image_iwae(bound, r, Ks=(1, 3, 10, 30))  # 1 and 30 computed, 3 and 10 read
    np.testing.assert_array_equal(again.bound, vae_lab.iwae_bounds(bound, r.model, r.images, Ks=(1, 3, 10, 30)).bound)
    assert again.elbo == full.elbo
    elbo_only = vae_lab.image_iwae(lambda model, x, K, rng: NB.iwae_bound(model, x, 1, rng), r, Ks=(30,))
    assert elbo_only.bound[0] != again.bound[3]  # another bound function: computed, not read
    with pytest.raises(ValueError, match="K must be"):
        vae_lab.image_iwae(bound, r, Ks=(0,))


def test_train_remedies_is_one_run_per_remedy():
    X = vae_lab.toy_data_2d("moons", 800, seed=0)
    ticks = []
    runs = vae_lab.train_remedies(L, X, beta=10.0, free_bits=0.5, latent_dim=2, steps=20, seed=3, on_step=ticks.append)
    assert list(runs) == list(vae_lab.COLLAPSE_REMEDIES) and ticks[-1] == 60 and len(ticks) == 60
    alone = vae_lab.train_vae_remedy(L, X, beta=10.0, remedy="free bits", free_bits=0.5, latent_dim=2, steps=20, seed=3)
    np.testing.assert_array_equal(runs["free bits"].kl_per_dim, alone.kl_per_dim)
    assert runs["none"].beta == 10.0


def test_remedies_over_seeds_is_train_remedies_per_seed_and_the_shipped_table_starts_at_seed_0():
    X = vae_lab.toy_data_2d("moons", 800, seed=0)
    ticks = []
    table = vae_lab.remedies_over_seeds(L, X, seeds=(3, 4), latent_dim=2, steps=10, on_step=ticks.append)
    assert ticks[-1] == 60 and len(ticks) == 60 and list(table.seeds) == [3, 4]
    alone = vae_lab.train_remedies(L, X, latent_dim=2, steps=10, seed=4)
    for name, run in alone.items():
        np.testing.assert_array_equal(table.kl_per_dim[name][1], run.kl_per_dim)
        assert table.elbo[name][1] == run.elbo
        np.testing.assert_array_equal(table.active[name], (table.kl_per_dim[name] > 0.05).sum(1))
    shipped, first = vae_lab.default_remedy_seeds(L), vae_lab.default_remedies(L)
    assert list(shipped.seeds) == list(vae_lab.REMEDY_SEEDS)
    for name, run in first.items():
        assert shipped.kl_per_dim[name].shape == (5, 3) and shipped.elbo[name][0] == run.elbo


def test_interpolation_paths_midpoints_and_checks():
    """The two paths between held-out images, and their midpoints' distances by brute force."""
    run = vae_lab.default_image_vae(L)
    walk = vae_lab.interpolation(L, NB.interpolate_codes, run, 3, 5, steps=5)
    flat = run.images.reshape(360, -1).astype(np.float64)
    np.testing.assert_allclose(walk.codes[2], run.latents[[3, 5]].mean(0))
    np.testing.assert_allclose(walk.pixel_path[2].ravel(), flat[[3, 5]].mean(0))
    others = np.delete(flat, [3, 5], axis=0)
    for middle, distance in (
        (decoded(run.model, walk.codes[2:3])[0], walk.latent_distance),
        (flat[[3, 5]].mean(0), walk.pixel_distance),
    ):
        assert distance == pytest.approx(np.sqrt(((others - middle) ** 2).mean(1)).min(), rel=1e-5)
    table = vae_lab.midpoints_to_data(L, NB.interpolate_codes, run, [5, 3, 9])  # pairs (5, 3), (5, 9), (3, 9)
    assert table.shape == (3, 2) and table[0] == pytest.approx([walk.latent_distance, walk.pixel_distance], rel=1e-5)
    with pytest.raises(ValueError, match="held-out images"):
        vae_lab.interpolation(L, NB.interpolate_codes, run, 0, 360)
    with pytest.raises(ValueError, match=r"interpolate\(u, v, 4\) must give"):
        vae_lab.interpolation(L, lambda u, v, n: np.stack([u, v]), run, 0, 1, steps=4)


def test_amortisation_gap_scores_both_q_and_checks_the_fit():
    run = vae_lab.default_image_vae(L)
    engine.manual_seed(3)
    before = engine.random.generator().bit_generator.state
    ticks = []
    gap = vae_lab.amortisation_gap(L, NB.fit_posterior, run, steps=3, K=20, on_step=ticks.append)
    assert engine.random.generator().bit_generator.state == before and ticks == [1, 2, 3]
    assert gap.steps == 3 and gap.fitted_elbo.shape == gap.encoder_elbo.shape == (360,)
    assert (gap.fitted_iwae >= gap.fitted_elbo - 1e-9).all()  # log of the mean ≥ mean of the log
    assert gap.amortisation == pytest.approx(gap.fitted_elbo.mean() - gap.encoder_elbo.mean())
    with pytest.raises(ValueError, match="fit must return"):
        vae_lab.amortisation_gap(L, lambda model, x, steps, on_step=None: (x, x), run, steps=1)
    with pytest.raises(ValueError, match="not loaded"):
        vae_lab.default_amortisation(L, lambda model, x, steps, on_step=None: NB.fit_posterior(model, x, steps))


def test_shipped_defaults_rebuild_their_models_and_leave_the_global_stream():
    """The default loaders rebuild the shipped models (parameters round-trip exactly), measure
    them as the training functions do, and draw nothing from the global streams."""
    for loader in (
        vae_lab.default_vae_2d,
        vae_lab.default_beta_sweep,
        vae_lab.default_aggregate_posterior,
        vae_lab.default_remedies,
        vae_lab.default_image_vae,
    ):
        loader.cache_clear()
    engine.manual_seed(7)
    before = engine.random.generator().bit_generator.state
    toy, digits = vae_lab.default_vae_2d(L), vae_lab.default_image_vae(L)
    sweep, remedies = vae_lab.default_beta_sweep(L), vae_lab.default_remedies(L)
    aggregate = vae_lab.default_aggregate_posterior(L)
    assert engine.random.generator().bit_generator.state == before
    assert vae_lab.default_vae_2d(NB.lesson_cells()) is toy  # loaded once per session
    rebuilt = vae_lab._model_from_state(L, vae_lab._model_state(toy.model))
    z = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_array_equal(decoded(rebuilt, z), decoded(toy.model, z))
    assert toy.model.obs_var == vae_lab.TOY_DEFAULTS["obs_var"] and toy.model.latent_dim == 3
    # the budget is the lesson's loss on the held-out rows (seed + 1), as train_vae_2d measures it
    with engine.random.fork_rng(1):
        again = recon_and_elbo(toy.model, toy.held_out)
    assert again[0] == pytest.approx(toy.recon, rel=1e-6) and toy.elbo == pytest.approx(-(toy.recon + toy.kl))
    assert digits.latents.shape == (360, 2) and digits.iwae_tables == {}
    # section 7's table is shipped for the page's own iwae_bound, and only for it
    with_table = vae_lab.default_image_vae(L, NB.iwae_bound)
    assert list(with_table.iwae_tables[vae_lab.code_key(NB.iwae_bound)].K) == list(vae_lab.IWAE_KS)
    assert vae_lab.default_image_vae(L, lambda model, x, K, rng: NB.iwae_bound(model, x, K, rng)).iwae_tables == {}
    np.testing.assert_allclose(sweep.kl, sweep.kl_per_dim.sum(1))
    assert list(remedies) == list(vae_lab.COLLAPSE_REMEDIES)
    for run in remedies.values():
        assert run.elbo == pytest.approx(-(run.recon + run.kl), rel=1e-6)
    assert len(aggregate.codes) == len(vae_lab.AGGREGATE_BETAS) and aggregate.codes[0].shape == (500, 2)
    caption = vae_lab.shipped_caption("Train", "moons")
    assert "this page's cells" in caption and "press **Train**" in caption and "make checkpoints" not in caption


def test_a_shipped_model_that_does_not_fit_the_page_is_refused_in_one_sentence():
    """The default loaders give the shipped models only to the code they were trained with: an
    edited lesson cell (another fingerprint) or a model whose parameters differ in names or shapes
    is refused with a ValueError the page shows in one line."""
    import dataclasses

    def wider(input_dim, hidden, latent_dim, obs_var=0.05):
        return NB.vae_model(input_dim, hidden + 1, latent_dim, obs_var)

    edited = dataclasses.replace(L, model=wider)
    for loader in (
        vae_lab.default_vae_2d,
        vae_lab.default_beta_sweep,
        vae_lab.default_aggregate_posterior,
        vae_lab.default_remedies,
        vae_lab.default_remedy_seeds,
        vae_lab.default_image_vae,
    ):
        with pytest.raises(ValueError, match="not loaded: train with the button"):
            loader(edited)
    state = vae_lab._model_state(vae_lab.default_vae_2d(L).model)  # the fingerprint passes, the shapes do not
    with pytest.raises(ValueError, match="shipped parameters do not fit this page's `wider`"):
        vae_lab._model_from_state(edited, state)
    assert "Train with the button." in ui.not_loaded(ValueError("train with the button")).text


def _compiled(source, name):
    """A function compiled from ``source``, as a new session of a page defines its cells anew."""
    namespace = {}
    exec(compile(source, "<cell>", "exec"), namespace)
    return namespace[name]


def test_code_key_is_equal_for_the_same_code_and_differs_for_an_edit():
    from engine.course.labs._generative import code_key

    source = "def kl(mu, logvar, scale=0.5):\n    return -scale * (1 + logvar - mu**2 - logvar.exp())\n"
    first, again = _compiled(source, "kl"), _compiled(source, "kl")
    assert first is not again and code_key(first) == code_key(again)
    assert code_key(_compiled(source.replace("1 +", "2 +"), "kl")) != code_key(first)  # the body
    assert code_key(_compiled(source.replace("0.5", "0.25"), "kl")) != code_key(first)  # a default
    model = engine.nn.Linear(2, 2)
    assert code_key(model) is model  # no code of its own: itself


def test_a_page_opened_again_finds_its_shipped_models_cached():
    """Each session defines the lesson cells anew: equal code, so an equal Lesson, and the shipped
    model loaded for the first session is the one the next gets (no second load); edited cells
    are another Lesson."""
    from notebook_driver import run_app

    first, second = (run_app(NB.app)[1]["lesson_cells"]() for _ in range(2))  # two sessions of the page
    assert second.loss is not first.loss
    assert second == first and hash(second) == hash(first)
    assert vae_lab.default_vae_2d(second) is vae_lab.default_vae_2d(first)
    edited = _compiled("def negative_elbo(model, x, beta=1.0, free_bits=0.0):\n    return None\n", "negative_elbo")
    assert vae_lab.Lesson(L.model, L.encode, L.decode, edited, L.train, L.parts) != L


def test_off_data_share_against_brute_force():
    """The share of points farther than the radius from every reference point, by a double loop."""
    rng = np.random.default_rng(0)
    points, reference = rng.normal(size=(40, 2)), rng.normal(size=(30, 2))
    far = [all(np.hypot(*(p - q)) > 0.3 for q in reference) for p in points]
    assert vae_lab.off_data_share(points, reference, radius=0.3) == pytest.approx(np.mean(far))
    assert vae_lab.off_data_share(reference, reference) == 0.0

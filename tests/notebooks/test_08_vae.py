"""Notebook 08_vae: the values it shows are the engine's, and its claims hold on them.
"""

import math
import re

import numpy as np
import pytest
import engine
from engine import diffusion, shapes, vae
from engine.course.labs import attention as attention_lab
from engine.course.labs import convolution as conv_lab
from engine.course.labs import vae as vae_lab
from notebook_driver import (ROOT, assert_no_error_outputs, control_values, default_defs, load_app, load_module,
                             notebook_text, output_text, run_app)


# ============================================================================= 08 VAE
NB08 = "notebooks/08_vae.py"


@pytest.mark.parametrize("mu, sigma, n", [(-3.0, 0.05, 10), (3.0, 3.0, 10000), (1.0, 0.5, 1000)])
def test_08_reparameterisation_and_kl_agree_with_engine(mu, sigma, n):
    outputs, defs = run_app(load_app(NB08), q_mu=mu, q_sigma=sigma, q_samples=n)
    assert_no_error_outputs(outputs)
    r = defs["reparam"]
    eps = np.random.default_rng(0).standard_normal(n)
    z = mu + sigma * eps
    # autograd through z = μ + σε equals the hand-written pathwise gradients of mean(z²)
    assert r["grad_mu"] == pytest.approx(np.mean(2 * z))
    assert r["grad_sigma"] == pytest.approx(np.mean(2 * z * eps))
    assert r["exact_grad_mu"] == 2 * mu and r["exact_grad_sigma"] == pytest.approx(2 * sigma)
    kl = defs["kl"]
    assert kl["closed"] == pytest.approx(-0.5 * (1 + np.log(sigma**2) - mu**2 - sigma**2))
    if n >= 1000:
        assert abs(kl["mc"] - kl["closed"]) < 5 * kl["mc_se"] + 1e-9
    text = output_text(outputs)
    assert f"{kl['closed']:.4f}" in text and f"{r['grad_mu']:.4f}" in text


def test_08_kl_against_torch(torch):
    _, defs = run_app(load_app(NB08), q_mu=2.0, q_sigma=0.3)
    q = torch.distributions.Normal(2.0, 0.3)
    p = torch.distributions.Normal(0.0, 1.0)
    assert defs["kl"]["closed"] == pytest.approx(float(torch.distributions.kl_divergence(q, p)), rel=1e-6)


@pytest.mark.parametrize("f", vae_lab.ESTIMATOR_FUNCTIONS)
def test_08_estimators_are_unbiased_and_compared(f):
    outputs, defs = run_app(load_app(NB08), est_function=f, est_samples=10)
    assert_no_error_outputs(outputs)
    e = defs["estimates"]
    for name in ("score_function", "reparameterized"):
        values = e[name]
        assert values.mean() == pytest.approx(e["exact"], abs=5 * values.std() / np.sqrt(len(values)))
    assert defs["variance_ratio"] == pytest.approx(e["score_var"] / e["reparam_var"])
    if f == "z²":
        assert defs["variance_ratio"] > 2  # the pathwise gradient is much tighter here


def test_08_exercises_graded_by_the_engine():
    app = load_app(NB08)
    _, defs = run_app(app)
    assert defs["truth_kl_shift"] == pytest.approx(0.5)
    assert defs["truth_kl_narrow"] == pytest.approx(-0.5 * (1 + np.log(0.25) - 0.25))
    assert defs["truth_gradient"] == pytest.approx(3.0)
    for name, truth in [("answer_kl_shift", "0.5"), ("answer_kl_narrow", "0.318"),
                        ("answer_gradient", "3")]:
        assert "Right" in output_text(run_app(app, **{name: truth})[0])
        assert "Not quite" in output_text(run_app(app, **{name: "7"})[0])


def test_08_vae_budget_and_collapse():
    app = load_app(NB08)
    outputs, defs = run_app(app, vae_train=True)
    assert_no_error_outputs(outputs)
    run = defs["vae_run"]
    assert run["kl"] == pytest.approx(run["kl_per_dim"].sum(), rel=1e-5)
    assert run["elbo"] == pytest.approx(-(run["recon"] + run["kl"]), rel=1e-5)
    assert defs["vae_active"] == int((run["kl_per_dim"] > 0.05).sum())
    assert run["latents"].shape == (500, 3)
    assert "active dimensions (KL > 0.05)" in output_text(outputs)
    assert f"{run['recon']:.3f}" in output_text(outputs)
    outputs, defs = run_app(app, vae_train=True, vae_beta=100.0)
    assert_no_error_outputs(outputs)
    assert defs["vae_active"] == 0  # every dimension collapsed at β = 100
    outputs, defs = run_app(app, vae_sweep=True)
    assert_no_error_outputs(outputs)
    sweep = defs["sweep"]
    assert sweep["active"][0] >= 1 and sweep["active"][-1] == 0
    assert sweep["recon"][-1] > sweep["recon"][0]  # collapse costs reconstruction


def test_08_vae_extremes_never_raise():
    app = load_app(NB08)
    for kwargs in [dict(vae_beta=0.01, vae_latent=1, vae_steps=100, vae_data="swiss roll"),
                   dict(vae_beta=0.01, vae_latent=6, vae_steps=100, vae_data="8 Gaussians")]:
        outputs, _ = run_app(app, vae_train=True, **kwargs)
        assert_no_error_outputs(outputs)


def test_08_image_vae_latent_space_and_explorer():
    app = load_app(NB08)
    outputs, defs = run_app(app, image_train=True, image_steps=50, latent_z1=-3.0, latent_z2=3.0)
    assert_no_error_outputs(outputs)
    image_vae = defs["image_vae"]
    assert image_vae["latents"].shape == (256, 2)
    z = np.array([[-3.0, 3.0]], dtype=np.float32)
    expected = image_vae["model"].generate(z=z)[0, 0]
    np.testing.assert_allclose(defs["decoded"], expected, rtol=1e-6)
    assert defs["decoded"].min() >= 0 and defs["decoded"].max() <= 1
    with engine.no_grad():
        mu, _ = image_vae["model"].encode(defs["shape_images"][-256:])
    np.testing.assert_allclose(image_vae["latents"], mu.data, rtol=1e-6)

"""The engine modules behind notebooks 01-04: activations_lab, graph, optim_lab, backprop_lab.

Each expected value is computed independently here (closed forms with math/NumPy, published
constants), never by the function under test.
"""

import math
import numpy as np
import pytest
import engine
from engine.course.labs import activations as act
from engine.course.labs import backprop as backprop_lab
from engine.course.labs import losses
from engine.course import graph as graphs
from engine.course.labs import optimizers as olab


# ============================================================================ optim_lab


@pytest.mark.parametrize("name", list(olab.SURFACES))
def test_surface_gradients_by_autograd_match_central_differences(name):
    rng = np.random.default_rng(0)
    (x0, x1), (y0, y1) = olab.SURFACES[name]["box"]
    for _ in range(5):
        th = np.array([rng.uniform(x0, x1), rng.uniform(y0, y1)])
        g = olab.surface_gradient(name, th)
        for i in range(2):
            e = np.zeros(2)
            e[i] = 1e-6
            numeric = (olab.surface_value(name, th + e) - olab.surface_value(name, th - e)) / 2e-6
            assert g[i] == pytest.approx(numeric, rel=1e-5, abs=1e-5)
    xx, yy, zz = olab.surface_grid(name, 30)
    assert zz[3, 7] == pytest.approx(olab.surface_value(name, [xx[3, 7], yy[3, 7]]))
    minimum = olab.SURFACES[name]["minimum"]
    np.testing.assert_allclose(olab.surface_gradient(name, minimum), 0.0, atol=1e-12)


def test_sgd_trajectory_is_theta_minus_lr_times_gradient():
    t = olab.run_optimizer("quadratic", "sgd", start=(-2.0, 1.0), steps=5, lr=0.005)
    th = np.array([-2.0, 1.0])
    for k in range(5):
        th = th - 0.005 * np.array([th[0], 100.0 * th[1]])
        np.testing.assert_allclose(t.path[k + 1], th, rtol=1e-12)
    assert t.losses[0] == pytest.approx(0.5 * (4 + 100))


def test_momentum_and_adam_beat_sgd_on_the_ill_conditioned_quadratic():
    final = {n: olab.run_optimizer("quadratic", n, steps=100).final_loss for n in ("sgd", "momentum", "adam")}
    assert final["momentum"] < final["sgd"] / 10 and final["adam"] < final["sgd"] / 10
    edge = olab.run_optimizer("quadratic", "sgd", start=(0.0, 1.0), steps=50, lr=0.02)  # 1 − ηκ = −1
    np.testing.assert_allclose(np.abs(edge.path[:, 1]), 1.0, rtol=1e-12)


def test_saddle_and_divergence():
    for n in olab.OPTIMIZERS:
        t = olab.run_optimizer("saddle", n, steps=300)
        assert t.final_loss == pytest.approx(-0.25, abs=1e-3), n  # escaped to a minimum f = −1/4
    bad = olab.run_optimizer("rosenbrock", "sgd", steps=100, lr=0.05)
    assert bad.diverged and len(bad.path) < 101 and math.isnan(bad.final_loss)
    with pytest.raises(ValueError, match="learning rate must be positive"):
        olab.run_optimizer("rosenbrock", "sgd", lr=0.0)
    with pytest.raises(ValueError, match="unknown surface"):
        olab.run_optimizer("himmelblau", "sgd")


def test_schedules_inside_trajectories_use_the_engine_schedulers():
    t = olab.run_optimizer("beale", "adam", steps=100, schedule="cosine", lr=0.1)
    expected = 0.1 * 0.5 * (1 + np.cos(np.pi * np.arange(100) / 100))
    np.testing.assert_allclose(t.lrs, expected, atol=1e-12)
    for s in olab.SCHEDULES:
        r = olab.run_optimizer("rosenbrock", "adam", steps=50, schedule=s)
        assert len(r.lrs) == 50 and np.all(r.lrs > 0) and not r.diverged


def test_adam_bias_correction_formulas_and_engine_agree():
    g = olab.noisy_gradients(30, mean=0.5, noise=1.0, seed=3)
    corrected = olab.adam_first_steps(g, lr=0.01)
    np.testing.assert_allclose(corrected.update, olab.engine_adam_updates(g, lr=0.01), rtol=1e-10, atol=1e-15)
    plain = olab.adam_first_steps(np.ones(3), lr=1.0, bias_correction=False)
    assert abs(plain.update[0]) == pytest.approx(0.1 / math.sqrt(0.001), rel=1e-6)
    np.testing.assert_allclose(olab.adam_first_steps(np.ones(3), lr=1.0).update, -1.0, rtol=1e-7)


def test_schedule_curves_closed_forms():
    c = olab.schedule_curves(steps=100, lr=0.1, step_size=25, gamma=0.5, warmup=10, pct_start=0.3)
    t = np.arange(100)
    np.testing.assert_allclose(c["step"], 0.1 * 0.5 ** (t // 25), rtol=1e-12)
    np.testing.assert_allclose(c["cosine"], 0.05 * (1 + np.cos(np.pi * t / 100)), atol=1e-12)
    assert c["warmup_cosine"][0] < c["warmup_cosine"][10] == pytest.approx(0.1)
    assert np.argmax(c["onecycle"]) == pytest.approx(29, abs=1) and c["onecycle"].max() == pytest.approx(0.1)
    drops = np.flatnonzero(np.diff(c["plateau"]) < 0)
    assert len(drops) >= 1 and np.all(np.isin(np.round(c["plateau"] / 0.1, 12), 0.5 ** np.arange(20)))
    with pytest.raises(ValueError, match="steps must be"):
        olab.schedule_curves(steps=1)


def test_l2_penalty_and_decoupled_decay_differ_as_described():
    p = olab.l2_vs_decoupled(weight_decay=0.1, lr=0.05, steps=200)
    t = np.arange(201)
    np.testing.assert_allclose(p.adamw[:, 1], 2.0 * (1 - 0.05 * 0.1) ** t, rtol=1e-9)  # θ₂ ← (1 − ηλ)θ₂
    assert abs(p.adam_l2[-1, 1]) < 0.05  # normalised: ~η per step, gone after ~40 steps
    assert abs(p.adam_l2[40, 1]) < 0.5 < p.adamw[40, 1]
    assert abs(p.adam_l2[-1, 0] - 2.0) < abs(p.adamw[-1, 0] - 2.0)  # decay drowned out on θ₁


def test_clip_by_global_norm_uses_the_square_root():
    clipped, before, after = olab.clip_by_global_norm([np.array([3.0]), np.array([4.0])], 1.0)
    assert before == pytest.approx(5.0) and after == pytest.approx(1.0, rel=1e-5)
    assert clipped[0][0] == pytest.approx(0.6, rel=1e-5) and clipped[1][0] == pytest.approx(0.8, rel=1e-5)
    same, before, after = olab.clip_by_global_norm([np.array([0.3, 0.4])], 1.0)
    np.testing.assert_array_equal(same[0], [0.3, 0.4])
    free = olab.run_optimizer("rosenbrock", "sgd", steps=300, lr=0.01)
    held = olab.run_optimizer("rosenbrock", "sgd", steps=300, lr=0.01, clip=3.0)
    assert free.diverged and not held.diverged and held.final_loss < 1.0


def test_the_race_caches_each_run_on_the_settings_its_optimizer_reads():
    hyper = dict(momentum=0.9, alpha=0.99, betas=(0.9, 0.999), weight_decay=0.0)
    first = olab.race("beale", olab.OPTIMIZERS, steps=40, **hyper)
    moved = olab.race("beale", olab.OPTIMIZERS, steps=40, **{**hyper, "momentum": 0.5})
    for name in olab.OPTIMIZERS:  # μ is read by momentum and Nesterov only
        same = moved.trajectories[name] is first.trajectories[name]
        assert same == (name not in ("momentum", "nesterov")), name
        fresh = olab.run_optimizer("beale", name, steps=40, **{**hyper, "momentum": 0.5})
        np.testing.assert_array_equal(moved.trajectories[name].path, fresh.path)
    refused = olab.race("beale", ["sgd", "nesterov"], steps=10, momentum=0.0)
    assert list(refused.trajectories) == ["sgd"] and "μ > 0" in refused.problems["nesterov"]


def test_the_race_runs_its_optimizers_together_as_if_alone():
    """One autograd pass per step serves all six (a column each); each must follow the path it
    follows alone, the plain loop below, including one that diverges early."""
    lrs = {**olab.SURFACES["rosenbrock"]["lr"], "sgd": 0.05}  # SGD blows up on the walls
    start, hyper = (-1.0, 1.5), dict(momentum=0.8, alpha=0.9, betas=(0.8, 0.99), weight_decay=0.1)
    together = olab.race("rosenbrock", olab.OPTIMIZERS, start=start, steps=60, lrs=lrs, **hyper).trajectories
    assert together["sgd"].diverged and not together["adam"].diverged
    for name in olab.OPTIMIZERS:
        theta = engine.nn.Parameter(np.array(start))
        opt = olab.surface_optimizer(name, [theta], lrs[name], **hyper)
        path = [theta.data.copy()]
        for _ in range(60):
            opt.zero_grad()
            olab.SURFACES["rosenbrock"]["fn"](theta).backward()
            opt.step()
            path.append(theta.data.copy())
            if not np.all(np.abs(theta.data) <= 1e6):
                break
        np.testing.assert_allclose(together[name].path, np.array(path), rtol=1e-12, err_msg=name)


def test_loss_gap_is_the_distance_to_the_minimum_value_thinned_for_a_chart():
    run = olab.run_optimizer("rosenbrock", "adam", steps=1000)
    steps, gap = olab.loss_gap("rosenbrock", run, max_points=200)
    assert len(steps) == 200 and steps[0] == 0 and steps[-1] == 1000
    np.testing.assert_allclose(gap, np.maximum(run.losses[steps] - 0.0, 1e-16))  # f(θ*) = 0 at (1, 1)
    short = olab.run_optimizer("rosenbrock", "adam", steps=50)
    assert list(olab.loss_gap("rosenbrock", short)[0]) == list(range(51))  # short runs keep every step


@pytest.mark.parametrize("kappa", [4.0, 100.0, 1000.0])
def test_condition_rates_match_polyak_and_goh(kappa):
    r = olab.condition_rates(kappa, steps=300)
    root = math.sqrt(kappa)
    assert r.theory == pytest.approx({"gd": (kappa - 1) / (kappa + 1), "momentum": (root - 1) / (root + 1)})
    assert r.measured["gd"] == pytest.approx(r.theory["gd"], rel=1e-9)  # both directions contract by r exactly
    assert r.theory["momentum"] <= r.measured["momentum"] <= 1.01 * r.theory["momentum"]
    # the heavy ball by hand, θ_{t+1} = θ_t − η∇f + μ(θ_t − θ_{t−1}), is what engine.optim.SGD ran
    lr, mu = r.settings["momentum"]
    prev = theta = np.ones(2)
    for t in range(1, 21):
        prev, theta = theta, theta - lr * np.array([1.0, kappa]) * theta + mu * (theta - prev)
        assert np.linalg.norm(theta) == pytest.approx(r.norms["momentum"][t], rel=1e-9)
    with pytest.raises(ValueError, match="κ must be"):
        olab.condition_rates(1.0)


def test_sgd_noise_floor_falls_with_the_batch_and_decay_breaks_through():
    runs = {b: olab.sgd_noise(b, lr=0.3, steps=400, seed=0) for b in (1, 8, 64)}
    floors = [runs[b].floor["constant"] for b in (1, 8, 64)]
    assert floors[0] > floors[1] > floors[2]
    for r in runs.values():
        assert r.floor["decayed"] < r.floor["constant"] / 5  # decay goes below the floor
        assert r.floor["full batch"] < 1e-8  # exact gradients: no floor
    # the noise a step sees: variance of a mean of B per-example gradients, ≈ 1/B of one's
    assert 30 < runs[1].gradient_noise / runs[64].gradient_noise < 130
    # the excess is measured against the least-squares optimum, computed independently here
    X, y = olab._least_squares_data(512, 0)
    best = np.linalg.solve(X.T @ X, X.T @ y)
    assert runs[8].excess["constant"][0] == pytest.approx(0.5 * np.mean(y ** 2) - 0.5 * np.mean((X @ best - y) ** 2))
    with pytest.raises(ValueError, match="batch size must be"):
        olab.sgd_noise(0)
    with pytest.raises(ValueError, match="η must be"):
        olab.sgd_noise(8, lr=2.0)


def test_least_squares_gradient_is_autograds_and_sgd_noise_steps_engine_sgd():
    X, y = olab._least_squares_data(512, 0)
    rng = np.random.default_rng(3)
    theta, idx = rng.standard_normal(2), rng.integers(0, 512, 8)
    t = engine.tensor(theta.copy(), requires_grad=True)
    residual = engine.tensor(X[idx]) @ t - engine.tensor(y[idx])
    (0.5 * (residual * residual).mean()).backward()
    np.testing.assert_allclose(olab.least_squares_gradient(theta, X, y, idx), t.grad, rtol=1e-12)
    # the first steps of the constant run, replayed with engine.optim.SGD and autograd gradients
    run = olab.sgd_noise(8, lr=0.3, steps=10, seed=0)
    batches, p = np.random.default_rng(1), engine.nn.Parameter(np.zeros(2))
    opt, best = engine.optim.SGD([p], lr=0.3), np.linalg.lstsq(X, y, rcond=None)[0]
    for step in range(10):
        b = batches.integers(0, 512, 8)
        r = engine.tensor(X[b]) @ p - engine.tensor(y[b])
        opt.zero_grad()
        (0.5 * (r * r).mean()).backward()
        opt.step()
        excess = 0.5 * np.mean((X @ p.data - y) ** 2) - 0.5 * np.mean((X @ best - y) ** 2)
        assert run.excess["constant"][step + 1] == pytest.approx(max(excess, 0.0), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("surface", ["quadratic", "rosenbrock"])
def test_pytorch_nesterov_parameters_are_the_lookahead_points(surface):
    lr, mu = olab.SURFACES[surface]["lr"]["nesterov"], 0.9
    r = olab.nesterov_lookahead(surface, lr=lr, momentum=mu, steps=40)
    # the textbook form by hand, with the gradient by autograd at θ + μv
    theta, v = np.array(olab.SURFACES[surface]["start"]), np.zeros(2)
    for t in range(1, 41):
        v = mu * v - lr * olab.surface_gradient(surface, theta + mu * v)
        theta = theta + v
        np.testing.assert_allclose(r.theta[t], theta, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(r.engine[t], theta + mu * v, rtol=1e-10, atol=1e-12)
    assert r.max_difference < 1e-12 and np.max(np.abs(r.theta - r.engine)) > 0.1  # different variables
    assert olab.lookahead_point(0.0, 2.0, 0.9) == pytest.approx(1.8)


def test_lr_range_test_blows_up_past_the_gd_limit():
    X, y = olab._least_squares_data(512, 0)
    limit = 2 / np.linalg.eigvalsh(X.T @ X / 512).max()
    r = olab.lr_range_test(512, steps=120, seed=0)
    assert r.stable_limit == pytest.approx(limit)
    growth = (30.0 / 1e-4) ** (1 / 120)
    np.testing.assert_allclose(r.lrs, 1e-4 * growth ** np.arange(len(r.lrs)), rtol=1e-12)
    best = int(np.argmin(r.losses))
    assert 0 < best < len(r.losses) - 1 and r.best_lr == r.lrs[best]
    assert r.losses[-1] > 4 * r.losses[best] and r.blowup_lr == r.lrs[-1]  # stopped at the blow-up
    assert limit <= r.blowup_lr <= 2.5 * limit
    assert olab.gd_stability_limit(np.diag([0.5, 0.1])) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="batch size must be"):
        olab.lr_range_test(0)

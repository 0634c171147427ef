"""The engine modules behind notebooks 01-04: activations_lab, graph, optim_lab, backprop_lab.

Each expected value is computed independently here (closed forms with math/NumPy, published
constants), never by the function under test.
"""

import math

import numpy as np
import pytest
from notebook_driver import load_module

import engine
from engine.course.labs import optimizers as olab

# The lab runs the notebook's lesson cells (its race loop and update rules), passed in as the page does.
NB = load_module("notebooks/04_optimizers.py")


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
    p = olab.l2_vs_decoupled(NB.race, NB.adam, weight_decay=0.1, lr=0.05, steps=200)
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


@pytest.mark.parametrize("kappa", [4.0, 100.0, 1000.0])
def test_condition_rates_match_polyak_and_goh(kappa):
    r = olab.condition_rates(NB.race, NB.sgd, NB.momentum, kappa, steps=300)
    root = math.sqrt(kappa)
    assert r.theory == pytest.approx({"gd": (kappa - 1) / (kappa + 1), "momentum": (root - 1) / (root + 1)})
    assert r.measured["gd"] == pytest.approx(r.theory["gd"], rel=1e-9)  # both directions contract by r exactly
    assert r.theory["momentum"] <= r.measured["momentum"] <= 1.01 * r.theory["momentum"]
    # the heavy ball by hand, θ_{t+1} = θ_t − η∇f + μ(θ_t − θ_{t−1}), is what the momentum rule ran
    lr, mu = r.settings["momentum"]
    prev = theta = np.ones(2)
    for t in range(1, 21):
        prev, theta = theta, theta - lr * np.array([1.0, kappa]) * theta + mu * (theta - prev)
        assert np.linalg.norm(theta) == pytest.approx(r.norms["momentum"][t], rel=1e-9)
    with pytest.raises(ValueError, match="κ must be"):
        olab.condition_rates(NB.race, NB.sgd, NB.momentum, 1.0)


def test_sgd_noise_floor_falls_with_the_batch_and_decay_breaks_through():
    runs = {b: olab.sgd_noise(NB.minibatch_descent, NB.sgd, b, lr=0.3, steps=400, seed=0) for b in (1, 8, 64)}
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
    assert runs[8].excess["constant"][0] == pytest.approx(0.5 * np.mean(y**2) - 0.5 * np.mean((X @ best - y) ** 2))
    with pytest.raises(ValueError, match="batch size must be"):
        olab.sgd_noise(NB.minibatch_descent, NB.sgd, 0)
    with pytest.raises(ValueError, match="η must be"):
        olab.sgd_noise(NB.minibatch_descent, NB.sgd, 8, lr=2.0)


def test_sgd_noise_steps_as_engine_sgd_with_autograd_gradients():
    """The lesson's mini-batch loop writes the gradient out: the first steps of the constant run,
    replayed with engine.optim.SGD and autograd on the same batches."""
    X, y = olab._least_squares_data(512, 0)
    run = olab.sgd_noise(NB.minibatch_descent, NB.sgd, 8, lr=0.3, steps=10, seed=0)
    order, p = np.random.default_rng(1).permutation(512), engine.nn.Parameter(np.zeros(2))  # epoch 1's shuffle
    opt, best = engine.optim.SGD([p], lr=0.3), np.linalg.lstsq(X, y, rcond=None)[0]
    for step in range(10):
        b = order[8 * step : 8 * step + 8]
        r = engine.tensor(X[b]) @ p - engine.tensor(y[b])
        opt.zero_grad()
        (0.5 * (r * r).mean()).backward()
        opt.step()
        excess = 0.5 * np.mean((X @ p.data - y) ** 2) - 0.5 * np.mean((X @ best - y) ** 2)
        assert run.excess["constant"][step + 1] == pytest.approx(max(excess, 0.0), rel=1e-9, abs=1e-15)


def test_epoch_batches_draw_without_replacement():
    """Each epoch a shuffle cut into n // B batches: a point once per epoch, B = n the full batch (issue 25)."""
    batches = olab.epoch_batches(12, 4, 7, np.random.default_rng(0))
    assert len(batches) == 7 and all(len(b) == 4 for b in batches)
    for epoch in (batches[0:3], batches[3:6]):
        assert sorted(np.concatenate(epoch)) == list(range(12))
    first, second = olab.epoch_batches(512, 512, 2, np.random.default_rng(0))
    assert sorted(first) == sorted(second) == list(range(512)) and list(first) != list(second)
    full = olab.sgd_noise(NB.minibatch_descent, NB.sgd, 512, lr=0.3, steps=50, seed=0)
    np.testing.assert_allclose(full.excess["constant"], full.excess["full batch"], rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("surface", ["quadratic", "rosenbrock"])
def test_pytorch_nesterov_parameters_are_the_lookahead_points(surface):
    lr, mu = olab.SURFACES[surface]["lr"]["nesterov"], 0.9
    r = olab.nesterov_lookahead(NB.race, NB.nesterov, surface, lr=lr, momentum=mu, steps=40)
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
    r = olab.lr_range_test(NB.minibatch_descent, NB.sgd, 512, steps=120, seed=0)
    assert r.stable_limit == pytest.approx(limit)
    growth = (30.0 / 1e-4) ** (1 / 120)
    np.testing.assert_allclose(r.lrs, 1e-4 * growth ** np.arange(len(r.lrs)), rtol=1e-12)
    best = int(np.argmin(r.losses))
    assert 0 < best < len(r.losses) - 1 and r.best_lr == r.lrs[best]
    assert r.losses[-1] > 4 * r.losses[best] and r.blowup_lr == r.lrs[-1]  # stopped at the blow-up
    # the full batch (B = n, without replacement) is gradient descent: its blow-up is where the
    # closed form puts it, far past 2/λ_max, and the lowest loss lies past the limit too
    assert r.blowup_lr == pytest.approx(r.full_batch_blowup_lr, rel=1e-12) and r.blowup_lr > 3 * limit
    assert r.best_lr > limit
    # the closed form against a plain full-batch GD run in NumPy
    rates = 1e-4 * growth ** np.arange(30)
    theta, want = np.zeros(2), []
    for lr in rates:
        theta = theta - lr * X.T @ (X @ theta - y) / 512
        want.append(0.5 * np.mean((X @ theta - y) ** 2))
    np.testing.assert_allclose(olab.full_batch_losses(X, y, rates), want, rtol=1e-10)
    assert olab.gd_stability_limit(np.diag([0.5, 0.1])) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="batch size must be"):
        olab.lr_range_test(NB.minibatch_descent, NB.sgd, 0)


# The race's loop and update rules are notebook 04's lesson cells; the lab only runs them. These
# tests give it stand-ins: a loop that records what it was asked to run, and rules in closed form.


def _sgd(theta, g, state, lr):
    return theta - lr * g


def _heavy_ball(theta, g, state, lr, mu=0.9):
    state["b"] = mu * state["b"] + g if "b" in state else g
    return theta - lr * state["b"]


def _recording_loop(calls):
    """A race loop that takes one plain step per racer (θ − η_0·∇f at the start, then stops) and
    records which racers and settings it was given."""

    def loop(f, rules, start, steps, schedules, clip=None):
        calls.append(sorted(rules))
        logs = {}
        for name, rule in rules.items():
            theta = np.array(start, dtype=np.float64)
            t = engine.tensor(theta.copy(), requires_grad=True)
            f(t).backward()
            g = t.grad.numpy()
            lr = schedules[name].lr
            new = rule(theta, g, {}, lr)
            logs[name] = {
                "path": [theta, new],
                "losses": [float(f(engine.tensor(theta)).data)],
                "lrs": [lr],
                "norms": [float(np.linalg.norm(g))],
            }
        return logs

    return loop


def test_run_race_gives_each_racer_its_hyper_parameters_and_caches_what_it_reads():
    calls = []
    loop = _recording_loop(calls)
    rules = {n: _heavy_ball if n in ("momentum", "nesterov") else _sgd for n in ("sgd", "momentum", "nesterov")}
    seen = {}

    def spy(theta, g, state, lr, mu):
        seen["mu"] = mu
        return theta

    rules["nesterov"] = spy
    first = olab.run_race(loop, rules, "beale", ["sgd", "momentum", "nesterov"], steps=5, momentum=0.7)
    assert calls == [["momentum", "nesterov", "sgd"]] and seen["mu"] == 0.7
    theta0 = np.array(olab.SURFACES["beale"]["start"])
    step = olab.SURFACES["beale"]["lr"]["sgd"] * olab.surface_gradient("beale", theta0)  # η from the surface
    np.testing.assert_allclose(first.trajectories["sgd"].path[1], theta0 - step, rtol=1e-12)
    assert first.trajectories["sgd"].final_loss == pytest.approx(olab.surface_value("beale", theta0 - step))
    # μ is read by momentum and Nesterov only: moving it runs those two again, sgd comes from the cache
    moved = olab.run_race(loop, rules, "beale", ["sgd", "momentum", "nesterov"], steps=5, momentum=0.5)
    assert calls[-1] == ["momentum", "nesterov"] and moved.trajectories["sgd"] is first.trajectories["sgd"]
    # an edited rule (a new function) runs again; nothing else does
    rules["sgd"] = lambda theta, g, state, lr: theta - 2 * lr * g
    olab.run_race(loop, rules, "beale", ["sgd", "momentum", "nesterov"], steps=5, momentum=0.5)
    assert calls[-1] == ["sgd"]
    refused = olab.run_race(loop, rules, "beale", ["sgd", "nesterov"], steps=3, momentum=0.0, lrs={"sgd": -1.0})
    assert refused.trajectories == {} and "μ > 0" in refused.problems["nesterov"]
    assert "must be positive" in refused.problems["sgd"]
    with pytest.raises(ValueError, match="unknown surface"):
        olab.run_race(loop, rules, "himmelblau", ["sgd"])
    with pytest.raises(ValueError, match="μ > 0"):
        olab.run_one(loop, spy, "beale", "nesterov", momentum=0.0)


def test_rule_keywords_name_what_each_racer_reads():
    hyper = {"momentum": 0.8, "alpha": 0.9, "betas": (0.8, 0.99), "weight_decay": 0.1}
    assert olab.rule_keywords("sgd", **hyper) == {}
    assert olab.rule_keywords("nesterov", **hyper) == {"mu": 0.8}
    assert olab.rule_keywords("rmsprop", **hyper) == {"alpha": 0.9}
    assert olab.rule_keywords("adam", **hyper) == {"betas": (0.8, 0.99)}  # Adam runs without decay
    assert olab.rule_keywords("adamw", **hyper) == {"betas": (0.8, 0.99), "weight_decay": 0.1}
    with pytest.raises(ValueError, match="optimizer must be one of"):
        olab.rule_keywords("lion")


def test_schedule_gives_the_engine_schedulers_rates_step_by_step():
    cosine = olab.Schedule("cosine", 0.1, 100)
    rates = []
    for _ in range(100):
        rates.append(cosine.lr)
        cosine.step(1.0)
    np.testing.assert_allclose(rates, 0.05 * (1 + np.cos(np.pi * np.arange(100) / 100)), atol=1e-12)
    constant, plateau = olab.Schedule("constant", 0.3, 10), olab.Schedule("plateau", 0.3, 100)
    for _ in range(30):
        constant.step(1.0)
        plateau.step(1.0)  # a loss that never improves: cut by half after `patience` (10) steps
    assert constant.lr == 0.3 and plateau.lr == pytest.approx(0.3 * 0.5**2)
    with pytest.raises(ValueError, match="schedule must be one of"):
        olab.Schedule("exponential", 0.1, 10)


def test_rule_updates_feed_a_rule_the_gradients_in_turn():
    g = olab.noisy_gradients(30, mean=0.5, noise=1.0, seed=3)
    heavy = olab.rule_updates(_heavy_ball, g, lr=0.1, mu=0.5)
    b = np.zeros(1)
    for t, gt in enumerate(g):
        b = gt if t == 0 else 0.5 * b + gt
        assert heavy[t] == pytest.approx(-0.1 * b, rel=1e-12)
    p = engine.nn.Parameter(np.zeros(1))  # engine_adam_updates is the library's Adam, step by step
    opt = engine.optim.Adam([p], lr=0.01)
    for gt, update in zip(g, olab.engine_adam_updates(g, lr=0.01)):
        before = float(p.data[0])
        p.grad = np.array([gt])
        opt.step()
        assert float(p.data[0]) - before == pytest.approx(update, rel=1e-12)
    np.testing.assert_allclose(g, 0.5 + np.random.default_rng(3).standard_normal(30))


def test_loss_gap_is_the_distance_to_the_minimum_value_thinned_for_a_chart():
    losses = np.linspace(5.0, 0.0, 1001)
    run = olab.Trajectory(np.zeros((1001, 2)), losses, np.zeros(1000), False, np.zeros(1000))
    steps, gap = olab.loss_gap("rosenbrock", run, max_points=200)
    assert len(steps) == 200 and steps[0] == 0 and steps[-1] == 1000
    np.testing.assert_allclose(gap, np.maximum(losses[steps] - 0.0, 1e-16))  # f(θ*) = 0 at (1, 1)
    short = olab.Trajectory(np.zeros((51, 2)), losses[:51], np.zeros(50), False, np.zeros(50))
    assert list(olab.loss_gap("rosenbrock", short)[0]) == list(range(51))  # short runs keep every step


def test_simplify_path_keeps_ends_and_corners_and_drops_nothing_farther_than_the_tolerance():
    """Every dropped point lies within the tolerance of the kept polyline (brute force over its
    segments); a decaying zig-zag keeps its corners, a straight line only its ends."""
    rng = np.random.default_rng(0)
    t = np.arange(200)
    zigzag = np.stack([t / 200, 0.5 + 0.4 * (-1.0) ** t * 0.97**t], 1)
    walk = np.cumsum(rng.normal(0, 0.01, (300, 2)), 0)
    for path, tol in ((zigzag, 0.003), (walk, 0.003), (walk, 0.02)):
        keep = olab.simplify_path(path, tol)
        assert keep[0] == 0 and keep[-1] == len(path) - 1 and np.all(np.diff(keep) > 0)
        a, b = path[keep[:-1]], path[keep[1:]]
        d = b - a
        for p in path:
            u = np.clip(np.einsum("ij,ij->i", p - a, d) / np.maximum(np.einsum("ij,ij->i", d, d), 1e-300), 0, 1)
            assert np.min(np.linalg.norm(p - a - u[:, None] * d, axis=1)) <= tol + 1e-12
    assert len(olab.simplify_path(zigzag, 0.003)) > 100  # corners larger than the tolerance stay
    together = olab.simplify_paths([zigzag, walk, walk[:1]], 0.003)  # one pass for several paths, as alone
    assert [k.tolist() for k in together] == [olab.simplify_path(p, 0.003).tolist() for p in (zigzag, walk)] + [[0]]
    assert list(olab.simplify_path(np.stack([t, 2.0 * t], 1) / 200, 0.003)) == [0, 199]
    decay = {"decay": np.exp(-t / 20), "flat": np.ones(200)}
    on_log = olab.drawn_curves(t, decay, log_y=True)
    assert [len(x) for x, _ in on_log.values()] == [2, 2]  # straight lines on a log axis
    curve = olab.drawn_curves(t, decay)["decay"]
    assert 5 < len(curve[0]) < 40 and np.allclose(curve[1], np.exp(-curve[0] / 20))


def test_momentum_rate_is_the_largest_root_and_one_on_the_line():
    """|z| of z² − (1 + μ − ηλ)z + μ = 0, against np.roots; below 1 exactly left of ηλ = 2(1 + μ)."""
    rng = np.random.default_rng(0)
    for x, mu in zip(rng.uniform(0.01, 4.5, 200), rng.uniform(0, 0.99, 200)):
        brute = max(abs(np.roots([1.0, -(1 + mu - x), mu])))
        assert olab.momentum_rate(x, mu) == pytest.approx(brute, rel=1e-9)
        assert (olab.momentum_rate(x, mu) < 1) == (x < 2 * (1 + mu))
    assert olab.momentum_rate(2 * (1 + 0.5), 0.5) == pytest.approx(1.0)
    root = math.sqrt(100.0)  # at Polyak's best setting both extreme curvatures ring at √μ*
    lr, mu = (2 / (root + 1)) ** 2, ((root - 1) / (root + 1)) ** 2
    for lam in (1.0, 100.0):
        assert olab.momentum_rate(lr * lam, mu) == pytest.approx(math.sqrt(mu), rel=1e-6)
    with pytest.raises(ValueError, match="κ must be"):
        olab.phase_diagram(NB.momentum_grid, NB.momentum, 0.5, 10)
    with pytest.raises(ValueError, match="returned shape"):
        olab.phase_diagram(lambda *a: np.zeros(3), NB.momentum, 10.0, 10)
